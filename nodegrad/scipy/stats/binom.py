"""The binomial distribution, ``scipy.stats.binom``: ``logpmf``, ``pmf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in the probability ``p`` (the counts ``k``,
``loc`` and the integer ``n`` carry no gradient).

The CDF is ``betaincc(k + 1, n - k, p)`` and the survival function
``betainc(k + 1, n - k, p)`` (as Boost, which scipy calls, computes them), for
``k = floor(k)``; their derivatives in ``p`` are binomial probabilities.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import binom
>>> float(ng.grad(binom.logpmf, argnums=2)(3, 10, 0.5))  # k / p - (n - k) / (1 - p)
-8.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.special import betainc, betaincc, gammaln, xlog1py, xlogy
from nodegrad.scipy.stats._shared import Discrete, discrete

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]


def _check(p: Any, n: Any) -> Any:
    return (n >= 0) & (np.floor(n) == n) & (p >= 0) & (p <= 1)


_BINOM = Discrete(upper=lambda n: n, check=_check, valid=(0.5,))


def logpmf_formula(k: Any, p: Any, n: Any) -> Any:
    """``log(C(n, k)) + k log(p) + (n - k) log(1 - p)``, scipy's formula."""
    k = np.floor(k)
    combinations = gammaln(n + 1) - (gammaln(k + 1) + gammaln(n - k + 1))
    return combinations + xlogy(k, p) + xlog1py(n - k, -p)


def cdf_formula(k: Any, p: Any, n: Any) -> Any:
    """The probability of at most ``floor(k)`` successes, ``betaincc(k + 1, n - k, p)``."""
    k = np.floor(k)
    return betaincc(k + 1, n - k, p)


def sf_formula(k: Any, p: Any, n: Any) -> Any:
    """The probability of more than ``floor(k)`` successes, ``betainc(k + 1, n - k, p)``."""
    k = np.floor(k)
    return betainc(k + 1, n - k, p)


@guarded
def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the probability of ``k`` successes in ``n`` trials."""
    return discrete(_BINOM, "logpmf", logpmf_formula, k, loc, (p,), (n,))


@guarded
def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of ``k`` successes in ``n`` trials."""
    return discrete(_BINOM, "pmf", lambda k, p, n: np.exp(logpmf_formula(k, p, n)), k, loc, (p,), (n,))


@guarded
def cdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of at most ``k`` successes."""
    return discrete(_BINOM, "cdf", cdf_formula, k, loc, (p,), (n,))


@guarded
def logcdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the CDF."""
    return discrete(_BINOM, "logcdf", lambda k, p, n: np.log(cdf_formula(k, p, n)), k, loc, (p,), (n,))


@guarded
def sf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of more than ``k`` successes."""
    return discrete(_BINOM, "sf", sf_formula, k, loc, (p,), (n,))


@guarded
def logsf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the survival function."""
    return discrete(_BINOM, "logsf", lambda k, p, n: np.log(sf_formula(k, p, n)), k, loc, (p,), (n,))
