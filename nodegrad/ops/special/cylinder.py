"""Bessel functions of the first and second kind, ``j0``, ``j1``, ``jn``, ``y0``, ``y1``,
``yn``, and the modified Bessel function of the first kind of any real order, ``iv``, with
its exponentially scaled form ``ive = exp(-|x|) iv``: the ones ``autograd.scipy.special``
has.

Each derivative in ``x`` is a combination of the neighbouring orders, so every order of
derivative is there: ``j0' = -j1``, ``Z_n' = (Z_{n-1} - Z_{n+1}) / 2`` for ``Z = j, y``
(``Z_1' = (Z_0 - Z_2) / 2``), ``iv' = (I_{v-1} + I_{v+1}) / 2``, and ``ive`` adds
``-sign(x)`` times itself (its kink at 0 gets the subgradient ``sign(0) = 0``). The order
is a constant: scipy's ``jn`` is ``jv`` and takes real orders, and the derivative in a
real order has no closed form, so differentiating in it raises naming the op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import Op, defop
from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops.batching import elementwise
from nodegrad.ops.elementwise.arithmetic import all_values
from nodegrad.ops.special.base import FAMILY, float_like, no_closed_form, plain_map, real_only, sc, unary

__all__ = ["iv", "ive", "j0", "j1", "jn", "y0", "y1", "yn"]


J0: Op = unary("j0", sc.j0, lambda g, ans, x: -g * record1(J1, x), "Bessel function of the first kind of order 0")
J1: Op = unary(
    "j1",
    sc.j1,
    lambda g, ans, x: g * (record1(J0, x) - record(JN, x, 2)) / 2,
    "Bessel function of the first kind of order 1",
)
Y0: Op = unary("y0", sc.y0, lambda g, ans, x: -g * record1(Y1, x), "Bessel function of the second kind of order 0")
Y1: Op = unary(
    "y1",
    sc.y1,
    lambda g, ans, x: g * (record1(Y0, x) - record(YN, x, 2)) / 2,
    "Bessel function of the second kind of order 1",
)


def _ordered(name: str, scipy_name: str) -> Any:
    """The forward of an op ``(x, order)``: scipy's ``f(order, x)``, in ``x``'s float dtype."""
    function = getattr(sc, scipy_name)

    def forward(x: Any, order: Any) -> Any:
        out = float_like(np.asarray(function(order, x)), x)
        return out[()] if out.ndim == 0 else out

    forward.__name__ = forward.__qualname__ = name
    return real_only(name, forward)


JN: Op = defop(
    "jn",
    _ordered("jn", "jv"),
    lambda g, ans, x, n: g * (record(JN, x, n - 1) - record(JN, x, n + 1)) / 2,
    no_closed_form("jn", "the order n"),
    family=FAMILY,
    broadcasts=True,
    batch=elementwise,
    doc="Bessel function of the first kind of order n (real n, a constant)",
)
YN: Op = defop(
    "yn",
    _ordered("yn", "yn"),
    lambda g, ans, x, n: g * (record(YN, x, n - 1) - record(YN, x, n + 1)) / 2,
    None,
    family=FAMILY,
    broadcasts=True,
    batch=elementwise,
    doc="Bessel function of the second kind of integer order n (no gradient in n)",
)
IV: Op = defop(
    "iv",
    _ordered("iv", "iv"),
    lambda g, ans, x, v: g * (record(IV, x, v - 1) + record(IV, x, v + 1)) / 2,
    no_closed_form("iv", "the order v"),
    family=FAMILY,
    broadcasts=True,
    batch=elementwise,
    doc="modified Bessel function of the first kind of real order v (a constant)",
)
IVE: Op = defop(
    "ive",
    _ordered("ive", "ive"),
    lambda g, ans, x, v: g * ((record(IVE, x, v - 1) + record(IVE, x, v + 1)) / 2 - plain_map(np.sign, x) * ans),
    no_closed_form("ive", "the order v"),
    family=FAMILY,
    broadcasts=True,
    batch=elementwise,
    doc="exp(-abs(x)) iv(v, x) (real order v, a constant)",
)


def j0(x: Any) -> Any:
    """The Bessel function of the first kind of order 0, ``scipy.special.j0``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import j0
    >>> round(float(ng.grad(j0)(1.0)), 6)  # -j1(1)
    -0.440051
    """
    return record1(J0, x)


def j1(x: Any) -> Any:
    """The Bessel function of the first kind of order 1, ``scipy.special.j1``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import j1
    >>> float(ng.grad(j1)(0.0))
    0.5
    """
    return record1(J1, x)


def y0(x: Any) -> Any:
    """The Bessel function of the second kind of order 0, ``scipy.special.y0``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import y0
    >>> round(float(ng.grad(y0)(1.0)), 6)  # -y1(1)
    0.781213
    """
    return record1(Y0, x)


def y1(x: Any) -> Any:
    """The Bessel function of the second kind of order 1, ``scipy.special.y1``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import y1
    >>> round(float(ng.grad(y1)(1.0)), 6)
    0.86947
    """
    return record1(Y1, x)


def _order(name: str, order: Any, whole: bool) -> Any:
    """The order as a plain number or array (whole numbers for ``yn``)."""
    value = all_values(order)  # every example's, under vmap
    value = np.asarray(value)
    if value.dtype.kind not in "iuf" or (whole and not bool(np.all(value == np.floor(value)))):
        kind = "integers" if whole else "real numbers"
        msg = f"{name}: the order must be {kind}, got {value!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    return order


@guarded
def jn(n: Any, x: Any) -> Any:
    """The Bessel function of the first kind of order ``n``, ``scipy.special.jn`` (which is
    ``jv``: real orders too); differentiable in ``x``.

    Parameters
    ----------
    n : float or array_like
        The order, broadcast against ``x``; a constant (differentiating in it raises).
    x : array_like
        Real values.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import jn
    >>> round(float(ng.grad(lambda x: jn(2, x))(1.0)), 6)  # (j1(1) - j3(1)) / 2
    0.210244
    """
    return record(JN, x, _order("jn", n, whole=False))


@guarded
def yn(n: Any, x: Any) -> Any:
    """The Bessel function of the second kind of integer order ``n``, ``scipy.special.yn``;
    differentiable in ``x``.

    Parameters
    ----------
    n : int or array_like of int
        The order, broadcast against ``x`` (no gradient).
    x : array_like
        Positive real values.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import yn
    >>> round(float(ng.grad(lambda x: yn(2, x))(1.0)), 6)
    2.520152
    """
    order = _order("yn", n, whole=True)
    return record(YN, x, plain_map(lambda v: np.asarray(v).astype(np.int64) if np.ndim(v) else int(v), order))


@guarded
def iv(v: Any, x: Any) -> Any:
    """The modified Bessel function of the first kind of real order ``v``,
    ``scipy.special.iv``; differentiable in ``x``.

    Parameters
    ----------
    v : float or array_like
        The order, broadcast against ``x``; a constant (differentiating in it raises).
    x : array_like
        Real values (positive ones for a non-integer order, as in scipy).

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import iv
    >>> round(float(ng.grad(lambda x: iv(0, x))(1.0)), 6)  # i1(1)
    0.565159
    """
    return record(IV, x, _order("iv", v, whole=False))


@guarded
def ive(v: Any, x: Any) -> Any:
    """The exponentially scaled modified Bessel function ``exp(-|x|) iv(v, x)``,
    ``scipy.special.ive``; differentiable in ``x``.

    Parameters
    ----------
    v : float or array_like
        The order, broadcast against ``x``; a constant (differentiating in it raises).
    x : array_like
        Real values.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import ive
    >>> round(float(ng.grad(lambda x: ive(0, x))(1.0)), 6)
    -0.257849
    """
    return record(IVE, x, _order("ive", v, whole=False))
