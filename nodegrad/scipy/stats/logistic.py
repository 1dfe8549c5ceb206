"""The logistic distribution, ``scipy.stats.logistic``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the point, ``loc`` and ``scale``.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import logistic
>>> float(ng.grad(logistic.cdf)(0.0))  # the density at 0
0.25
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import expit, log_expit
from nodegrad.scipy.stats._shared import Continuous, continuous

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_LOGISTIC = Continuous()


def _standard_logpdf(z: Any) -> Any:
    y = -np.abs(z)
    return y - 2.0 * np.log1p(np.exp(y))


@guarded
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the logistic density, ``-|z| - 2 log1p(exp(-|z|)) - log(scale)``."""
    return continuous(_LOGISTIC, "logpdf", lambda z, s: _standard_logpdf(z) - np.log(s), x, (), loc, scale)


@guarded
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The logistic density."""
    return continuous(_LOGISTIC, "pdf", lambda z, s: np.exp(_standard_logpdf(z)) / s, x, (), loc, scale)


@guarded
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The logistic CDF, ``expit(z)``."""
    return continuous(_LOGISTIC, "cdf", lambda z, s: expit(z), x, (), loc, scale)


@guarded
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the logistic CDF, ``log_expit(z)``."""
    return continuous(_LOGISTIC, "logcdf", lambda z, s: log_expit(z), x, (), loc, scale)


@guarded
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, ``expit(-z)``."""
    return continuous(_LOGISTIC, "sf", lambda z, s: expit(-z), x, (), loc, scale)


@guarded
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function, ``log_expit(-z)``."""
    return continuous(_LOGISTIC, "logsf", lambda z, s: log_expit(-z), x, (), loc, scale)
