"""The gamma distribution, ``scipy.stats.gamma``: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``,
``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``, and (the density)
in the shape ``a``. The CDFs are the incomplete gamma function, whose derivative in
``a`` has no closed form: differentiating them there raises
:class:`~nodegrad.errors.NoGradientError`.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import gamma
>>> float(ng.grad(gamma.logpdf)(1.0, 2.0))  # (a - 1) / x - 1
0.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import gammainc, gammaincc, gammaln, xlogy
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_GAMMA = Continuous(lower=0.0, inside=1.0, valid=(1.0,))


def _standard_logpdf(z: Any, a: Any) -> Any:
    return xlogy(a - 1.0, z) - z - gammaln(a)


@guarded
def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the gamma density ``x**(a - 1) exp(-x) / Gamma(a)``."""
    return continuous(_GAMMA, "logpdf", lambda z, a, s: _standard_logpdf(z, a) - np.log(s), x, (a,), loc, scale)


@guarded
def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The gamma density."""
    return continuous(_GAMMA, "pdf", lambda z, a, s: np.exp(_standard_logpdf(z, a)) / s, x, (a,), loc, scale)


@guarded
def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The gamma CDF, ``gammainc(a, z)`` (no gradient in ``a``)."""
    return continuous(_GAMMA, "cdf", lambda z, a, s: gammainc(a, z), x, (a,), loc, scale)


@guarded
def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the gamma CDF."""
    return continuous(_GAMMA, "logcdf", lambda z, a, s: np.log(gammainc(a, z)), x, (a,), loc, scale)


@guarded
def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``gammaincc(a, z)``."""
    return continuous(_GAMMA, "sf", lambda z, a, s: gammaincc(a, z), x, (a,), loc, scale)


@guarded
def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_GAMMA, "logsf", lambda z, a, s: np.log(gammaincc(a, z)), x, (a,), loc, scale)
