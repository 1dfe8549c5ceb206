"""The uniform distribution on ``[loc, loc + scale]``, ``scipy.stats.uniform``: ``logpdf``,
``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and
``scale`` (inside the support: the density is constant in the point).

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import uniform
>>> ng.grad(uniform.cdf, argnums=(0, 1, 2))(1.0, 0.0, 4.0)
(0.25, -0.25, -0.0625)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_UNIFORM = Continuous(lower=0.0, upper=1.0, inside=0.5)


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the uniform density, ``-log(scale)`` inside the support."""
    return continuous(_UNIFORM, "logpdf", lambda z, s: 0.0 * z - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The uniform density ``1 / scale`` inside the support."""
    return continuous(_UNIFORM, "pdf", lambda z, s: (0.0 * z + 1.0) / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The uniform CDF, ``z`` inside the support."""
    return continuous(_UNIFORM, "cdf", lambda z, s: z, x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the uniform CDF."""
    return continuous(_UNIFORM, "logcdf", lambda z, s: np.log(z), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - z``."""
    return continuous(_UNIFORM, "sf", lambda z, s: 1.0 - z, x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function."""
    return continuous(_UNIFORM, "logsf", lambda z, s: np.log(1.0 - z), x, (), loc, scale)
