"""The Cauchy distribution, ``scipy.stats.cauchy``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``.
``logpdf`` is computed as scipy computes it: ``-log(pi) - log1p(z**2)`` for ``|z| < 1``
and ``-log(pi) - 2 log|z| - log1p(1 / z**2)`` beyond, where ``z**2`` could overflow.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import cauchy
>>> float(ng.grad(cauchy.logpdf)(1.0))  # -2z / (1 + z**2)
-1.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_CAUCHY = Continuous()
_LOG_PI = math.log(math.pi)


def _standard_logpdf(z: Any) -> Any:
    size = np.abs(z)
    near = size < 1
    if np.all(near):
        return -_LOG_PI - np.log1p(size**2)
    far = np.where(near, 1.0, size)
    near_value = -_LOG_PI - np.log1p(np.where(near, size, 0.0) ** 2)
    return np.where(near, near_value, -_LOG_PI - (2 * np.log(far) + np.log1p((1 / far) ** 2)))


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Cauchy density ``1 / (pi scale (1 + z**2))``."""
    return continuous(_CAUCHY, "logpdf", lambda z, s: _standard_logpdf(z) - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Cauchy density."""
    return continuous(_CAUCHY, "pdf", lambda z, s: 1.0 / math.pi / (1.0 + z * z) / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Cauchy CDF, ``arctan2(1, -z) / pi``."""
    return continuous(_CAUCHY, "cdf", lambda z, s: np.arctan2(1.0, -z) / math.pi, x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Cauchy CDF."""
    return continuous(_CAUCHY, "logcdf", lambda z, s: np.log(np.arctan2(1.0, -z) / math.pi), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``arctan2(1, z) / pi``."""
    return continuous(_CAUCHY, "sf", lambda z, s: np.arctan2(1.0, z) / math.pi, x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_CAUCHY, "logsf", lambda z, s: np.log(np.arctan2(1.0, z) / math.pi), x, (), loc, scale)
