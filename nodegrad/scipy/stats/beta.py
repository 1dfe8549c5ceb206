"""The beta distribution, ``scipy.stats.beta``: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``,
``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``, and (the density)
in ``a`` and ``b``. The CDFs are the incomplete beta function, whose derivatives in
``a`` and ``b`` have no closed form: differentiating them there raises
:class:`~nodegrad.errors.NoGradientError`.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import beta
>>> float(ng.grad(beta.logpdf)(0.5, 2.0, 2.0))  # the density 6x(1 - x) peaks at 1/2
0.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import betainc, betaincc, betaln, xlog1py, xlogy
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_BETA = Continuous(lower=0.0, upper=1.0, inside=0.5, valid=(1.0, 1.0))


def _standard_logpdf(z: Any, a: Any, b: Any) -> Any:
    return xlog1py(b - 1.0, -z) + xlogy(a - 1.0, z) - betaln(a, b)


@guarded
def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the beta density ``x**(a - 1) (1 - x)**(b - 1) / B(a, b)``."""
    return continuous(_BETA, "logpdf", lambda z, a, b, s: _standard_logpdf(z, a, b) - np.log(s), x, (a, b), loc, scale)


@guarded
def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The beta density."""
    return continuous(_BETA, "pdf", lambda z, a, b, s: _standard_pdf(z, a, b) / s, x, (a, b), loc, scale)


def _standard_pdf(z: Any, a: Any, b: Any) -> Any:
    # The density is infinite at 0 for a < 1 and at 1 for b < 1, whatever the other
    # parameter: so says scipy too, where the log-density of an infinite parameter is NaN.
    pole = ((z == 0) & (a < 1)) | ((z == 1) & (b < 1))
    return np.where(pole, np.inf, np.exp(_standard_logpdf(z, a, b)))


@guarded
def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The beta CDF, ``betainc(a, b, z)`` (no gradient in ``a``, ``b``)."""
    return continuous(_BETA, "cdf", lambda z, a, b, s: betainc(a, b, z), x, (a, b), loc, scale)


@guarded
def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the beta CDF."""
    return continuous(_BETA, "logcdf", lambda z, a, b, s: np.log(betainc(a, b, z)), x, (a, b), loc, scale)


@guarded
def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``betaincc(a, b, z)``."""
    return continuous(_BETA, "sf", lambda z, a, b, s: betaincc(a, b, z), x, (a, b), loc, scale)


@guarded
def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_BETA, "logsf", lambda z, a, b, s: np.log(betaincc(a, b, z)), x, (a, b), loc, scale)
