"""The Poisson distribution, ``scipy.stats.poisson``: ``logpmf``, ``pmf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the rate ``mu`` (the counts ``k`` and
``loc`` carry no gradient: the probabilities are piecewise constant in them).

The CDF is ``gammaincc(floor(k) + 1, mu)`` (scipy's ``pdtr``), whose derivative in
``mu`` is minus the probability of ``floor(k)``.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import poisson
>>> float(ng.grad(poisson.logpmf, argnums=1)(3, 2.0))  # k / mu - 1
0.5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import gammainc, gammaincc, gammaln, xlogy
from nodegrad.scipy.stats._shared import Discrete, discrete

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]

_POISSON = Discrete(upper=lambda: np.inf, check=lambda mu: mu >= 0, valid=(1.0,))


def _logpmf(k: Any, mu: Any) -> Any:
    return xlogy(k, mu) - gammaln(k + 1) - mu


@guarded
def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Log of the probability of ``k``: ``k log(mu) - log(k!) - mu``."""
    return discrete(_POISSON, "logpmf", _logpmf, k, loc, (mu,), ())


@guarded
def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The probability of ``k``."""
    return discrete(_POISSON, "pmf", lambda k, mu: np.exp(_logpmf(k, mu)), k, loc, (mu,), ())


@guarded
def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The probability of at most ``k``."""
    return discrete(_POISSON, "cdf", lambda k, mu: gammaincc(np.floor(k) + 1, mu), k, loc, (mu,), ())


@guarded
def logcdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Log of the CDF."""
    return discrete(_POISSON, "logcdf", lambda k, mu: np.log(gammaincc(np.floor(k) + 1, mu)), k, loc, (mu,), ())


@guarded
def sf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The probability of more than ``k``."""
    return discrete(_POISSON, "sf", lambda k, mu: gammainc(np.floor(k) + 1, mu), k, loc, (mu,), ())


@guarded
def logsf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Log of the survival function."""
    return discrete(_POISSON, "logsf", lambda k, mu: np.log(gammainc(np.floor(k) + 1, mu)), k, loc, (mu,), ())
