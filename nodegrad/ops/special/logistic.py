"""The logistic function and its relatives: ``expit``, ``logit`` and ``log_expit``.

``expit' = expit (1 - expit)``, ``logit' = 1 / (x (1 - x))`` and
``log_expit' = expit(-x)``, each written with ops so every order is there. Real values
only, as scipy's.
"""

from __future__ import annotations

from typing import Any

from nodegrad.engine.record import record1
from nodegrad.ops.special.base import sc, unary

__all__ = ["expit", "log_expit", "logit"]


EXPIT = unary("expit", sc.expit, lambda g, ans, x: g * ans * (1 - ans), "the logistic function 1 / (1 + exp(-x))")


LOGIT = unary("logit", sc.logit, lambda g, ans, x: g / (x * (1 - x)), "log(p / (1 - p)), the inverse of expit")


LOG_EXPIT = unary(
    "log_expit", sc.log_expit, lambda g, ans, x: g * record1(EXPIT, -x), "log(expit(x)), accurate for large abs(x)"
)


def expit(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))``, ``scipy.special.expit``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import expit
    >>> float(ng.grad(expit)(0.0))
    0.25
    """
    return record1(EXPIT, x)


def logit(p: Any) -> Any:
    """The log-odds ``log(p / (1 - p))``, the inverse of :func:`expit`,
    ``scipy.special.logit``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import logit
    >>> float(ng.grad(logit)(0.5))
    4.0
    """
    return record1(LOGIT, p)


def log_expit(x: Any) -> Any:
    """``log(expit(x))``, accurate for large ``|x|``, ``scipy.special.log_expit``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import log_expit
    >>> float(ng.grad(log_expit)(0.0))
    0.5
    """
    return record1(LOG_EXPIT, x)
