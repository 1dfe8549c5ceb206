"""Logarithms weighted by their arguments, and the information measures made of them:
``xlogy``, ``xlog1py``, ``entr``, ``rel_entr`` and ``kl_div``, differentiable in every
argument.

Conventions at the edges of the domains, as scipy's values have them:

- ``xlogy(x, y)`` and ``xlog1py(x, y)`` are 0 at ``x == 0`` whatever ``y`` is (unless
  ``y`` is NaN), so their derivatives in ``y`` are 0 there too (and no ``0 / 0`` is ever
  computed); in ``x`` they are ``log(y)`` and ``log1p(y)``, ``-inf`` at ``y == 0``.
  Both take complex values, and are holomorphic.
- ``entr(x)`` is ``-x log x`` for ``x > 0``, 0 at 0 and ``-inf`` below: its derivative is
  ``-(log x + 1)`` inside, ``+inf`` at 0 (the one-sided limit) and 0 below, where the
  value is a constant.
- ``rel_entr(x, y) = x log(x / y)`` and ``kl_div(x, y) = x log(x / y) - x + y`` for
  ``x, y > 0``; at ``x == 0, y >= 0`` they are 0 and ``y``, with derivatives ``-inf`` in
  ``x`` (the one-sided limit) and 0 and 1 in ``y``; elsewhere (``+inf``) the derivatives
  are 0. The logarithms only ever see positive arguments, so no order of derivative meets
  a NaN from a branch that was not taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import record1, record2
from nodegrad.ops.special.base import binary, float_like, sc, unary, xdivy

__all__ = ["entr", "kl_div", "rel_entr", "xlog1py", "xlogy"]


def _in_precision(ufunc: Any) -> Any:
    """``ufunc`` with its result in its operands' precision: scipy's loop order picks the
    complex128 loop for complex64 meeting float32."""
    return lambda x, y: float_like(ufunc(x, y), x, y)


XLOGY = binary(
    "xlogy",
    _in_precision(sc.xlogy),
    lambda g, ans, x, y: g * np.log(y),
    lambda g, ans, x, y: g * xdivy(x, y),
    "x * log(y), 0 at x == 0",
    complex_ok=True,
)


XLOG1PY = binary(
    "xlog1py",
    _in_precision(sc.xlog1py),
    lambda g, ans, x, y: g * np.log1p(y),
    lambda g, ans, x, y: g * xdivy(x, 1 + y),
    "x * log1p(y), 0 at x == 0",
    complex_ok=True,
)


def _entr_rule(g: Any, ans: Any, x: Any) -> Any:
    inside = x > 0
    inner = -(np.log(np.where(inside, x, 1)) + 1)
    return g * np.where(inside, inner, np.where(x == 0, np.inf, 0))


ENTR = unary("entr", sc.entr, _entr_rule, "-x log x for x > 0, 0 at 0, -inf below (gradient +inf at 0)")


def _masks(x: Any, y: Any) -> tuple[Any, Any, Any, Any]:
    """Where both are positive, where ``x == 0 <= y``, and ``x``, ``y`` made safe (1)
    outside the first."""
    inside = np.logical_and(x > 0, y > 0)
    at_zero = np.logical_and(x == 0, y >= 0)
    return inside, at_zero, np.where(inside, x, 1), np.where(inside, y, 1)


def _rel_entr_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    inside, at_zero, sx, sy = _masks(x, y)
    return g * np.where(inside, np.log(sx / sy) + 1, np.where(at_zero, -np.inf, 0))


def _rel_entr_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    inside, _, sx, sy = _masks(x, y)
    return g * np.where(inside, -sx / sy, 0)


def _kl_div_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    inside, at_zero, sx, sy = _masks(x, y)
    return g * np.where(inside, np.log(sx / sy), np.where(at_zero, -np.inf, 0))


def _kl_div_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    inside, at_zero, sx, sy = _masks(x, y)
    return g * np.where(inside, 1 - sx / sy, np.where(at_zero, 1, 0))


REL_ENTR = binary(
    "rel_entr", sc.rel_entr, _rel_entr_x, _rel_entr_y, "x log(x / y) for x, y > 0; 0 at x == 0 <= y; else inf"
)


KL_DIV = binary(
    "kl_div", sc.kl_div, _kl_div_x, _kl_div_y, "x log(x / y) - x + y for x, y > 0; y at x == 0 <= y; else inf"
)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x == 0``, ``scipy.special.xlogy``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import xlogy
    >>> [round(float(d), 6) for d in ng.grad(xlogy, argnums=(0, 1))(0.0, 2.0)]  # log 2, and 0 at x == 0
    [0.693147, 0.0]
    """
    return record2(XLOGY, x, y)


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x == 0``, ``scipy.special.xlog1py``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import xlog1py
    >>> [float(d) for d in ng.grad(xlog1py, argnums=(0, 1))(2.0, 0.0)]
    [0.0, 2.0]
    """
    return record2(XLOG1PY, x, y)


def entr(x: Any) -> Any:
    """The elementwise entropy ``-x log x`` (0 at 0, ``-inf`` below), ``scipy.special.entr``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import entr
    >>> float(ng.grad(entr)(1.0))
    -1.0
    """
    return record1(ENTR, x)


def rel_entr(x: Any, y: Any) -> Any:
    """The elementwise relative entropy ``x log(x / y)``, ``scipy.special.rel_entr``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import rel_entr
    >>> [float(d) for d in ng.grad(rel_entr, argnums=(0, 1))(1.0, 1.0)]
    [1.0, -1.0]
    """
    return record2(REL_ENTR, x, y)


def kl_div(x: Any, y: Any) -> Any:
    """The elementwise Kullback-Leibler term ``x log(x / y) - x + y``,
    ``scipy.special.kl_div``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import kl_div
    >>> [float(d) for d in ng.grad(kl_div, argnums=(0, 1))(1.0, 2.0)]
    [-0.6931471805599453, 0.5]
    """
    return record2(KL_DIV, x, y)
