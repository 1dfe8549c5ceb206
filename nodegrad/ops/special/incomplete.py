"""The regularized incomplete gamma and beta functions and Student's t CDF:
``gammainc``, ``gammaincc``, ``betainc``, ``betaincc`` and ``stdtr``, the CDFs of the
gamma, Poisson, beta, binomial and t distributions.

They are differentiable in the point ``x`` (``t``), where the derivative is a density
written with ops (so it differentiates again, in every argument):
``gammainc'(x) = exp((a - 1) log x - x - gammaln(a))``,
``betainc'(x) = exp((a - 1) log x + (b - 1) log1p(-x) - betaln(a, b))`` and ``stdtr'(t)``
the t density. Their derivatives in the shape parameters (``a``, ``b``, ``df``) have no
closed form: asking for them raises :class:`~nodegrad.errors.NoGradientError` naming
the op. Real values only, as scipy's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.record import record, record1, record2
from nodegrad.ops.special.base import binary, no_closed_form, sc, ternary
from nodegrad.ops.special.gamma_functions import BETALN, GAMMALN
from nodegrad.ops.special.information import XLOG1PY, XLOGY

__all__ = ["betainc", "betaincc", "gammainc", "gammaincc", "stdtr"]

_LOG_PI = math.log(math.pi)


def _gamma_density(a: Any, x: Any) -> Any:
    """``d/dx gammainc(a, x)``: the gamma(a) density at ``x``."""
    return np.exp(record2(XLOGY, a - 1, x) - x - record1(GAMMALN, a))


def _beta_pdf(a: Any, b: Any, x: Any) -> Any:
    """``d/dx betainc(a, b, x)``: the beta(a, b) density at ``x``."""
    return np.exp(record2(XLOGY, a - 1, x) + record2(XLOG1PY, b - 1, -x) - record2(BETALN, a, b))


def _t_density(df: Any, t: Any) -> Any:
    """``d/dt stdtr(df, t)``: Student's t density with ``df`` degrees of freedom at ``t``."""
    half = (df + 1) / 2
    log_norm = record1(GAMMALN, half) - record1(GAMMALN, df / 2) - 0.5 * (np.log(df) + _LOG_PI)
    return np.exp(log_norm - half * np.log1p(t * t / df))


GAMMAINC = binary(
    "gammainc",
    sc.gammainc,
    no_closed_form("gammainc", "a"),
    lambda g, ans, a, x: g * _gamma_density(a, x),
    "regularized lower incomplete gamma P(a, x) (gradient in x only)",
)


GAMMAINCC = binary(
    "gammaincc",
    sc.gammaincc,
    no_closed_form("gammaincc", "a"),
    lambda g, ans, a, x: -g * _gamma_density(a, x),
    "regularized upper incomplete gamma Q(a, x) = 1 - P(a, x) (gradient in x only)",
)


BETAINC = ternary(
    "betainc",
    sc.betainc,
    (no_closed_form("betainc", "a"), no_closed_form("betainc", "b"), lambda g, ans, a, b, x: g * _beta_pdf(a, b, x)),
    "regularized incomplete beta I_x(a, b) (gradient in x only)",
)


BETAINCC = ternary(
    "betaincc",
    sc.betaincc,
    (no_closed_form("betaincc", "a"), no_closed_form("betaincc", "b"), lambda g, ans, a, b, x: -g * _beta_pdf(a, b, x)),
    "1 - I_x(a, b), accurate where it is small (gradient in x only)",
)


STDTR = binary(
    "stdtr",
    sc.stdtr,
    no_closed_form("stdtr", "df"),
    lambda g, ans, df, t: g * _t_density(df, t),
    "Student's t CDF with df degrees of freedom (gradient in t only)",
)


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function ``P(a, x)``,
    ``scipy.special.gammainc``; differentiable in ``x`` only.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import gammainc
    >>> round(float(ng.grad(gammainc, argnums=1)(1.0, 0.0)), 6)  # the exponential density at 0
    1.0
    """
    return record2(GAMMAINC, a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``,
    ``scipy.special.gammaincc``; differentiable in ``x`` only.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import gammaincc
    >>> round(float(ng.grad(gammaincc, argnums=1)(1.0, 0.0)), 6)
    -1.0
    """
    return record2(GAMMAINCC, a, x)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)``, ``scipy.special.betainc``;
    differentiable in ``x`` only.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import betainc
    >>> float(ng.grad(betainc, argnums=2)(2.0, 1.0, 0.5))  # the beta(2, 1) density 2x
    1.0
    """
    return record(BETAINC, a, b, x)


def betaincc(a: Any, b: Any, x: Any) -> Any:
    """The complement ``1 - I_x(a, b)`` of :func:`betainc`, accurate where it is small,
    ``scipy.special.betaincc``; differentiable in ``x`` only.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import betaincc
    >>> float(ng.grad(betaincc, argnums=2)(2.0, 1.0, 0.5))
    -1.0
    """
    return record(BETAINCC, a, b, x)


def stdtr(df: Any, t: Any) -> Any:
    """Student's t cumulative distribution function, ``scipy.special.stdtr``;
    differentiable in ``t`` only.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import stdtr
    >>> round(float(ng.grad(stdtr, argnums=1)(1.0, 0.0)), 6)  # the Cauchy density at 0, 1 / pi
    0.31831
    """
    return record2(STDTR, df, t)
