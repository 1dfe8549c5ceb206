"""Modified Bessel functions of the first kind, orders 0 and 1: ``i0``, ``i1`` and their
exponentially scaled forms ``i0e = exp(-|x|) i0``, ``i1e = exp(-|x|) i1``.

``i0' = i1`` and ``i1' = i0 - i1 / x``. Near ``x == 0`` (``|x| < 0.1``) the quotient
``i1(x) / x`` is its Taylor polynomial,
``1/2 + x**2/16 + x**4/384 + x**6/18432 + x**8/1474560``, exact to rounding there: no
``0 / 0`` at 0, no quotient of two subnormal numbers in float32, and its derivatives at 0
are the quotient's, so the derivatives of ``i1`` at 0 are right to the ninth order (a
plain constant 1/2 at 0 would make the third one wrong). The scaled forms add
``-sign(x)`` times themselves (their kink at 0 gets the subgradient ``sign(0) = 0``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import record1
from nodegrad.ops.elementwise.arithmetic import all_values, plain_map
from nodegrad.ops.special.base import sc, unary

__all__ = ["i0", "i0e", "i1", "i1e"]


def _i1_over_x(x: Any, i1x: Any, scaled: bool = False) -> Any:
    """``i1x / x`` where ``i1x`` is ``i1(x)`` (``i1e(x)`` when ``scaled``), and for
    ``|x| < 0.1`` the Taylor polynomial of ``i1(x) / x`` in ``t = x**2 / 4``,
    ``sum t**k / (2 k! (k + 1)!)`` (times ``exp(-|x|)`` when scaled): exact to rounding
    there (the next term is below ``1e-18``), and no quotient of two tiny numbers."""
    small = np.abs(x) < 0.1
    if not np.any(all_values(small)):  # under vmap: in no example
        return i1x / x
    t = x * x / 4
    series = 0.5 + t * (1 / 4 + t * (1 / 24 + t * (1 / 288 + t * (1 / 5760))))
    if scaled:
        series = series * np.exp(-np.abs(x))
    return np.where(small, series, i1x / np.where(small, 1, x))


def _i0_rule(g: Any, ans: Any, x: Any) -> Any:
    return g * record1(I1, x)


def _i0e_rule(g: Any, ans: Any, x: Any) -> Any:
    return g * (record1(I1E, x) - plain_map(np.sign, x) * ans)


I0 = unary("i0", sc.i0, _i0_rule, "modified Bessel function of order 0 (real values)")


I1 = unary(
    "i1",
    sc.i1,
    lambda g, ans, x: g * (record1(I0, x) - _i1_over_x(x, ans)),
    "modified Bessel function of order 1 (real values; gradient i0 - i1/x, 1/2 at 0)",
)


I0E = unary(
    "i0e",
    sc.i0e,
    _i0e_rule,
    "exp(-abs(x)) i0(x) (real values)",
)


I1E = unary(
    "i1e",
    sc.i1e,
    lambda g, ans, x: g * (record1(I0E, x) - _i1_over_x(x, ans, scaled=True) - plain_map(np.sign, x) * ans),
    "exp(-abs(x)) i1(x) (real values)",
)


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 0, ``scipy.special.i0``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import i0
    >>> float(ng.grad(i0)(0.0))
    0.0
    """
    return record1(I0, x)


def i1(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 1, ``scipy.special.i1``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import i1
    >>> float(ng.grad(i1)(0.0))
    0.5
    """
    return record1(I1, x)


def i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function ``exp(-|x|) i0(x)``,
    ``scipy.special.i0e``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import i0e
    >>> round(float(ng.grad(i0e)(1.0)), 6)
    -0.257849
    """
    return record1(I0E, x)


def i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function ``exp(-|x|) i1(x)``,
    ``scipy.special.i1e``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import i1e
    >>> float(ng.grad(i1e)(0.0))
    0.5
    """
    return record1(I1E, x)
