"""The exponential distribution, ``scipy.stats.expon``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import expon
>>> ng.grad(expon.logpdf, argnums=(0, 2))(2.0, 0.0, 1.0)  # d/dscale: z - 1
(-1.0, 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_EXPON = Continuous(lower=0.0, inside=1.0)


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the exponential density, ``-z - log(scale)`` for ``z >= 0``."""
    return continuous(_EXPON, "logpdf", lambda z, s: -z - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The exponential density ``exp(-z) / scale``."""
    return continuous(_EXPON, "pdf", lambda z, s: np.exp(-z) / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The exponential CDF, ``-expm1(-z)``."""
    return continuous(_EXPON, "cdf", lambda z, s: -np.expm1(-z), x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the exponential CDF."""
    return continuous(_EXPON, "logcdf", lambda z, s: np.log(-np.expm1(-z)), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``exp(-z)``."""
    return continuous(_EXPON, "sf", lambda z, s: np.exp(-z), x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function, ``-z``."""
    return continuous(_EXPON, "logsf", lambda z, s: -z, x, (), loc, scale)
