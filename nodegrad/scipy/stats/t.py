"""Student's t distribution, ``scipy.stats.t``: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``,
``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``, and (the density)
in ``df``.

The log-normalizer ``log(poch(df / 2, 1 / 2)) = gammaln((df + 1) / 2) - gammaln(df / 2)`` is
computed as ``0.5 log(pi) - betaln(df / 2, 1 / 2)``, which stays accurate for large
``df``; ``df = inf`` is the normal distribution, as in scipy. The CDFs are ``stdtr``,
whose derivative in ``df`` has no closed form: differentiating them in ``df`` raises
:class:`~nodegrad.errors.NoGradientError`.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import t
>>> round(float(ng.grad(t.logpdf)(1.0, 1.0)), 6)  # Cauchy: -2x / (1 + x**2)
-1.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import betaln, stdtr
from nodegrad.scipy.stats._shared import Continuous, continuous, plain

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_T = Continuous(valid=(1.0,))
_HALF_LOG_PI = 0.5 * math.log(math.pi)
_NORMAL_LOG_C = 0.5 * math.log(2 * math.pi)


def _standard_logpdf(z: Any, df: Any) -> Any:
    infinite = plain(df) == np.inf
    finite_df = np.where(infinite, 1.0, df) if np.any(infinite) else df
    log_poch = _HALF_LOG_PI - betaln(0.5 * finite_df, 0.5)
    out = log_poch - 0.5 * (np.log(finite_df) + math.log(math.pi)) - (finite_df + 1) / 2 * np.log1p(z * z / finite_df)
    return np.where(infinite, -(z**2) / 2.0 - _NORMAL_LOG_C, out) if np.any(infinite) else out


@guarded
def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the t density with ``df`` degrees of freedom."""
    return continuous(_T, "logpdf", lambda z, df, s: _standard_logpdf(z, df) - np.log(s), x, (df,), loc, scale)


@guarded
def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The t density."""
    return continuous(_T, "pdf", lambda z, df, s: np.exp(_standard_logpdf(z, df)) / s, x, (df,), loc, scale)


@guarded
def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The t CDF, ``stdtr(df, z)`` (no gradient in ``df``)."""
    return continuous(_T, "cdf", lambda z, df, s: stdtr(df, z), x, (df,), loc, scale)


@guarded
def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the t CDF."""
    return continuous(_T, "logcdf", lambda z, df, s: np.log(stdtr(df, z)), x, (df,), loc, scale)


@guarded
def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``stdtr(df, -z)``."""
    return continuous(_T, "sf", lambda z, df, s: stdtr(df, -z), x, (df,), loc, scale)


@guarded
def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_T, "logsf", lambda z, df, s: np.log(stdtr(df, -z)), x, (df,), loc, scale)
