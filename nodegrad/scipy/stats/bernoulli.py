"""The Bernoulli distribution, ``scipy.stats.bernoulli``: ``logpmf``, ``pmf``, ``cdf``,
``logcdf``, ``sf``, ``logsf``, differentiable in ``p``; the binomial distribution with
one trial, as scipy computes it.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import bernoulli
>>> float(ng.grad(bernoulli.logpmf, argnums=1)(1, 0.25))  # 1 / p
4.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.scipy.stats._shared import Discrete, discrete
from nodegrad.scipy.stats.binom import cdf_formula, logpmf_formula, sf_formula

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]

_BERNOULLI = Discrete(upper=lambda: 1.0, check=lambda p: (p >= 0) & (p <= 1), valid=(0.5,))


def _one_trial(formula: Any, log: bool = False) -> Any:
    def of_one_trial(k: Any, p: Any) -> Any:
        out = formula(k, p, 1.0)
        return np.log(out) if log else out

    return of_one_trial


@guarded
def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the probability of ``k`` (1 with probability ``p``, 0 otherwise)."""
    return discrete(_BERNOULLI, "logpmf", _one_trial(logpmf_formula), k, loc, (p,), ())


@guarded
def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of ``k``."""
    return discrete(_BERNOULLI, "pmf", lambda k, p: np.exp(logpmf_formula(k, p, 1.0)), k, loc, (p,), ())


@guarded
def cdf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of at most ``k``: ``1 - p`` for ``0 <= k < 1``."""
    return discrete(_BERNOULLI, "cdf", _one_trial(cdf_formula), k, loc, (p,), ())


@guarded
def logcdf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the CDF."""
    return discrete(_BERNOULLI, "logcdf", _one_trial(cdf_formula, log=True), k, loc, (p,), ())


@guarded
def sf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability of more than ``k``: ``p`` for ``0 <= k < 1``."""
    return discrete(_BERNOULLI, "sf", _one_trial(sf_formula), k, loc, (p,), ())


@guarded
def logsf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Log of the survival function."""
    return discrete(_BERNOULLI, "logsf", _one_trial(sf_formula, log=True), k, loc, (p,), ())
