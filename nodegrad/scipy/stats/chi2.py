"""The chi-squared distribution, ``scipy.stats.chi2``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``, and (the
density) in the degrees of freedom ``df``. It is the gamma distribution of shape ``df / 2``
and scale 2: the CDFs are the incomplete gamma function, whose derivative in ``df`` has
no closed form (differentiating them there raises
:class:`~nodegrad.errors.NoGradientError`).

HIPS autograd's ``autograd.scipy.stats.chi2`` has ``logpdf``, ``pdf`` and ``cdf``,
differentiable in ``x`` only; its gradient of ``logpdf`` and ``pdf`` is 0 where ``df`` is
not an integer, where this one is the derivative, ``(df - 2 - x) / (2 x)`` for ``logpdf``.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import chi2
>>> float(ng.grad(chi2.logpdf)(2.0, 3.0))  # (df - 2 - x) / (2 x)
-0.25
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import gammainc, gammaincc, gammaln, xlogy
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_CHI2 = Continuous(lower=0.0, inside=1.0, valid=(2.0,))
_LOG2 = math.log(2.0)


def _standard_logpdf(z: Any, df: Any) -> Any:
    half = df / 2.0
    return xlogy(half - 1.0, z) - z / 2.0 - gammaln(half) - half * _LOG2


@guarded
def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the chi-squared density ``x**(df/2 - 1) exp(-x/2) / (2**(df/2) Gamma(df/2))``."""
    return continuous(_CHI2, "logpdf", lambda z, df, s: _standard_logpdf(z, df) - np.log(s), x, (df,), loc, scale)


@guarded
def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The chi-squared density."""
    return continuous(_CHI2, "pdf", lambda z, df, s: np.exp(_standard_logpdf(z, df)) / s, x, (df,), loc, scale)


@guarded
def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The chi-squared CDF, ``gammainc(df / 2, x / 2)`` (no gradient in ``df``)."""
    return continuous(_CHI2, "cdf", lambda z, df, s: gammainc(df / 2.0, z / 2.0), x, (df,), loc, scale)


@guarded
def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the chi-squared CDF."""
    return continuous(_CHI2, "logcdf", lambda z, df, s: np.log(gammainc(df / 2.0, z / 2.0)), x, (df,), loc, scale)


@guarded
def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``gammaincc(df / 2, x / 2)``."""
    return continuous(_CHI2, "sf", lambda z, df, s: gammaincc(df / 2.0, z / 2.0), x, (df,), loc, scale)


@guarded
def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_CHI2, "logsf", lambda z, df, s: np.log(gammaincc(df / 2.0, z / 2.0)), x, (df,), loc, scale)
