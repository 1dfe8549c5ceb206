"""The Laplace distribution, ``scipy.stats.laplace``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale`` (at
``x == loc``, where ``|z|`` has its kink, the subgradient ``sign(0) = 0``).

``logpdf`` is ``-|z| - log(2 scale)``, where scipy takes the logarithm of the density
(the same value, except where the density underflows, ``|z| > 745``: scipy gives
``-inf`` there).

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import laplace
>>> float(ng.grad(laplace.logpdf)(-2.0))
1.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_LAPLACE = Continuous()
_LOG_2 = math.log(2.0)


def _cdf(z: Any) -> Any:
    """``1 - exp(-z) / 2`` above 0, ``exp(z) / 2`` below, each exponent kept <= 0."""
    above = z > 0
    return np.where(above, 1.0 - 0.5 * np.exp(-np.where(above, z, 0)), 0.5 * np.exp(np.where(above, 0, z)))


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Laplace density, ``-|z| - log(2) - log(scale)``."""
    return continuous(_LAPLACE, "logpdf", lambda z, s: -np.abs(z) - _LOG_2 - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Laplace density ``exp(-|z|) / (2 scale)``."""
    return continuous(_LAPLACE, "pdf", lambda z, s: 0.5 * np.exp(-np.abs(z)) / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Laplace CDF."""
    return continuous(_LAPLACE, "cdf", lambda z, s: _cdf(z), x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Laplace CDF."""
    return continuous(_LAPLACE, "logcdf", lambda z, s: np.log(_cdf(z)), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``cdf(-z)`` by symmetry."""
    return continuous(_LAPLACE, "sf", lambda z, s: _cdf(-z), x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_LAPLACE, "logsf", lambda z, s: np.log(_cdf(-z)), x, (), loc, scale)
