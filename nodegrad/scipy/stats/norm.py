"""The normal distribution, ``scipy.stats.norm``: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``,
``sf``, ``logsf`` and ``ppf``, differentiable in the point and in ``loc`` and ``scale``.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import norm
>>> ng.grad(norm.logpdf, argnums=(0, 1, 2))(1.0, 0.0, 1.0)
(-1.0, 1.0, 0.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import log_ndtr, ndtr, ndtri
from nodegrad.scipy.stats._shared import Continuous, array_like, continuous, plain, select

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_NORMAL = Continuous()
_LOG_C = 0.5 * math.log(2 * math.pi)  # scipy's _norm_pdf_logC
_C = math.sqrt(2 * math.pi)


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal density: ``-z**2 / 2 - log(sqrt(2 pi)) - log(scale)``,
    ``z = (x - loc) / scale``."""
    return continuous(_NORMAL, "logpdf", lambda z, s: (-(z**2) / 2.0 - _LOG_C) - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal density."""
    return continuous(_NORMAL, "pdf", lambda z, s: np.exp(-(z**2) / 2.0) / _C / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal CDF, ``ndtr(z)``."""
    return continuous(_NORMAL, "cdf", lambda z, s: ndtr(z), x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal CDF, ``log_ndtr(z)``, accurate far into the lower tail."""
    return continuous(_NORMAL, "logcdf", lambda z, s: log_ndtr(z), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, as ``ndtr(-z)``."""
    return continuous(_NORMAL, "sf", lambda z, s: ndtr(-z), x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function, ``log_ndtr(-z)``."""
    return continuous(_NORMAL, "logsf", lambda z, s: log_ndtr(-z), x, (), loc, scale)


@guarded
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, ``loc + scale * ndtri(q)``: ``-inf`` at 0, ``inf`` at 1, NaN
    outside ``[0, 1]`` or for ``scale <= 0``."""
    q, loc, scale = array_like(q), array_like(loc), array_like(scale)
    qv, scale_value, loc_value = plain(q), plain(scale), plain(loc)
    with np.errstate(invalid="ignore"):
        valid = (scale_value > 0) & (loc_value == loc_value)
        cond = np.asarray(valid & (qv > 0) & (qv < 1))
    ends = np.where(qv == 0, -np.inf, np.where(qv == 1, np.inf, np.nan))
    fills = np.broadcast_to(np.where(valid, ends, np.nan), cond.shape).astype(np.result_type(qv, scale_value, 1.0))
    safe_scale = scale if valid.all() else np.where(scale_value > 0, scale, 1.0)
    return select(cond, lambda: ndtri(q if cond.all() else np.where(cond, q, 0.5)) * safe_scale + loc, fills)
