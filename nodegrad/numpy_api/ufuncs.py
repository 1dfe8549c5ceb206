"""numpy's ufuncs on traced values: the ufunc tables and :func:`dispatch_ufunc`.

:data:`UFUNCS` maps each differentiable ufunc onto an op, directly (``np.exp`` to
``ops.exp``) or through a small adapter written here from the ops (``np.fmax``,
``np.ldexp``, ``np.copysign``, ``np.vecdot``, ...). :data:`VALUE_UFUNCS` are computed
on the forward values: masks, integers and piecewise-constant results carry no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.guards import call_atomically
from nodegrad.engine.levels import DIFFERENTIATING, has_values
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, NoGradientError, ShapeError, user_location
from nodegrad.numpy_api.arguments import forward_values, no_extras
from nodegrad.numpy_api.elementwise import divmod_, frexp, modf, sign
from nodegrad.numpy_api.special import scipy_ufuncs, ufunc_name
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.elementwise.arithmetic import real_numbers_only

__all__ = ["UFUNCS", "VALUE_UFUNCS", "dispatch_ufunc"]


def _nan_ignoring(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    """``np.fmax`` / ``np.fmin``: as maximum / minimum, except that a NaN loses to a number
    (the number is chosen, and gets the gradient)."""

    def fn(x: Any, y: Any) -> Any:
        nan_x, nan_y = np.isnan(unwrap(x)), np.isnan(unwrap(y))
        if has_values(nan_x) and has_values(nan_y) and not (nan_x.any() or nan_y.any()):
            return pick(x, y)
        return ops.where(nan_y, x, ops.where(nan_x, y, pick(x, y)))

    fn.__name__ = name
    return fn


def _ldexp(x: Any, n: Any) -> Any:
    """``np.ldexp``: ``x * 2**n`` for integer ``n``; differentiable in ``x`` only."""
    exponent = np.asarray(unwrap(n))
    if exponent.dtype.kind not in "iu":
        msg = f"np.ldexp: the exponent must be integers, got dtype {exponent.dtype} [called at {user_location()}]"
        raise DtypeError(msg)
    dtype = np.ldexp(np.ones((), np.result_type(unwrap(x))), np.zeros((), exponent.dtype)).dtype
    with np.errstate(over="ignore"):  # checked next
        factor = np.ldexp(np.ones(exponent.shape, dtype), exponent)
    if np.all(np.isfinite(factor) & (factor != 0)):
        return ops.multiply(x, factor)  # a power of two: the product is exact, as ldexp's
    # 2**n itself overflows or underflows where x * 2**n need not: two exact halves.
    half = exponent // 2
    return ops.multiply(
        ops.multiply(x, np.ldexp(np.ones(half.shape, dtype), half)),
        np.ldexp(np.ones(half.shape, dtype), exponent - half),
    )


def _copysign(x: Any, y: Any) -> Any:
    """``np.copysign``: ``|x|`` with the sign bit of ``y``. Differentiable in ``x``; the
    gradient of ``y`` is 0 (only its sign is read)."""
    negative = np.signbit(unwrap(y))
    size = ops.astype(ops.abs(x), np.result_type(unwrap(x), unwrap(y)))
    out = ops.where(negative, ops.negative(size), size)
    if type(y) in DIFFERENTIATING:  # the result still depends on y, with a zero gradient
        out = ops.where(np.zeros(np.shape(negative), bool), y, out)
    return out


def _float_power(x: Any, y: Any) -> Any:
    """``np.float_power``: ``x ** y`` computed in float64 (complex128 for complex values)."""
    wide = np.complex128 if np.iscomplexobj(unwrap(x)) or np.iscomplexobj(unwrap(y)) else np.float64
    return ops.power(ops.astype(x, wide), ops.astype(y, wide))


def _core_last(name: str, x: Any, axis: Any, what: str) -> Any:
    """``x`` with its core axis ``axis`` moved last, or a ShapeError naming ``name``."""
    ndim = np.ndim(unwrap(x))
    if ndim == 0:
        msg = f"np.{name}: {what} needs at least one dimension, got a scalar [called at {user_location()}]"
        raise ShapeError(msg)
    axis = normalize_axis(name, axis, ndim)[0]  # type: ignore[index]
    return x if axis == ndim - 1 else ops.moveaxis(x, axis, -1)


def _vecdot(x1: Any, x2: Any, **kw: Any) -> Any:
    """``np.vecdot``: the dot product of vectors along ``axis`` (last by default), with
    broadcasting over the other axes; complex ``x1`` is conjugated, as numpy does."""
    axis = kw.pop("axis", -1)
    no_extras("vecdot", **kw)
    a, b = _core_last("vecdot", x1, axis, "x1"), _core_last("vecdot", x2, axis, "x2")
    n, m = np.shape(unwrap(a))[-1], np.shape(unwrap(b))[-1]
    if n != m:
        msg = f"np.vecdot: the vectors have {n} and {m} entries [called at {user_location()}]"
        raise ShapeError(msg)
    return ops.sum(ops.multiply(_conjugated(a), b), -1)


def _conjugated(x: Any) -> Any:
    """``x``, conjugated if complex: the vector of ``np.vecdot`` and ``np.vecmat``."""
    return ops.conj(x) if np.iscomplexobj(unwrap(x)) else x


def _matvec(x1: Any, x2: Any) -> Any:
    """``np.matvec``: matrices ``(..., m, n)`` times vectors ``(..., n)``."""
    _at_least("matvec", x1, 2, x2, 1)
    return ops.squeeze(ops.matmul(x1, ops.expand_dims(x2, -1)), -1)


def _vecmat(x1: Any, x2: Any) -> Any:
    """``np.vecmat``: vectors ``(..., n)`` (conjugated if complex) times matrices ``(..., n, m)``."""
    _at_least("vecmat", x1, 1, x2, 2)
    return ops.squeeze(ops.matmul(ops.expand_dims(_conjugated(x1), -2), x2), -2)


def _at_least(name: str, x1: Any, d1: int, x2: Any, d2: int) -> None:
    for which, x, d in (("x1", x1, d1), ("x2", x2, d2)):
        if np.ndim(unwrap(x)) < d:
            msg = (
                f"np.{name}: {which} needs at least {d} dimension(s), got shape {np.shape(unwrap(x))} [called at "
                f"{user_location()}]"
            )
            raise ShapeError(msg)


UFUNCS: dict[np.ufunc, Callable[..., Any]] = {
    np.add: ops.add,
    np.subtract: ops.subtract,
    np.multiply: ops.multiply,
    np.divide: ops.divide,
    np.negative: ops.negative,
    np.positive: ops.positive,
    np.power: ops.power,
    np.square: ops.square,
    np.sqrt: ops.sqrt,
    np.cbrt: ops.cbrt,
    np.reciprocal: ops.reciprocal,
    np.absolute: ops.abs,
    np.fabs: real_numbers_only("np.fabs", ops.abs),
    np.exp: ops.exp,
    np.exp2: ops.exp2,
    np.expm1: ops.expm1,
    np.log: ops.log,
    np.log2: ops.log2,
    np.log10: ops.log10,
    np.log1p: ops.log1p,
    np.logaddexp: ops.logaddexp,
    np.logaddexp2: ops.logaddexp2,
    np.sin: ops.sin,
    np.cos: ops.cos,
    np.tan: ops.tan,
    np.arcsin: ops.arcsin,
    np.arccos: ops.arccos,
    np.arctan: ops.arctan,
    np.arctan2: ops.arctan2,
    np.hypot: ops.hypot,
    np.sinh: ops.sinh,
    np.cosh: ops.cosh,
    np.tanh: ops.tanh,
    np.arcsinh: ops.arcsinh,
    np.arccosh: ops.arccosh,
    np.arctanh: ops.arctanh,
    np.deg2rad: ops.deg2rad,
    np.rad2deg: ops.rad2deg,
    np.radians: real_numbers_only("np.radians", ops.deg2rad),
    np.degrees: real_numbers_only("np.degrees", ops.rad2deg),
    np.maximum: ops.maximum,
    np.minimum: ops.minimum,
    np.fmax: _nan_ignoring("fmax", ops.maximum),
    np.fmin: _nan_ignoring("fmin", ops.minimum),
    np.remainder: ops.remainder,
    np.fmod: ops.fmod,
    np.matmul: ops.matmul,
    np.conjugate: ops.conj,
    np.sign: sign,
    np.ldexp: real_numbers_only("np.ldexp", _ldexp),
    np.copysign: real_numbers_only("np.copysign", _copysign),
    np.float_power: _float_power,
    np.modf: modf,
    np.divmod: divmod_,
    np.frexp: frexp,
}
# Added in numpy 2.0 (vecdot) and 2.2 (matvec, vecmat): mapped where this numpy has them.
_NEWER_UFUNCS = {"vecdot": _vecdot, "matvec": _matvec, "vecmat": _vecmat}
UFUNCS.update({u: impl for name, impl in _NEWER_UFUNCS.items() if isinstance(u := getattr(np, name, None), np.ufunc)})

# Ufuncs whose entry takes numpy's keyword arguments itself (and refuses those it cannot honour).
_KEYWORD_UFUNCS = {u for u in (getattr(np, "vecdot", None),) if isinstance(u, np.ufunc)}

# Ufuncs whose results are masks or integers, or are piecewise constant (zero derivative
# almost everywhere): computed on the values, never differentiated.
VALUE_UFUNCS = {
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.isfinite, np.isnan, np.isinf, np.signbit,
    np.floor, np.ceil, np.rint, np.trunc, np.floor_divide,
    np.heaviside, np.spacing, np.nextafter,
}  # fmt: skip


def _scipy_ufunc(ufunc: np.ufunc) -> Callable[..., Any] | None:
    """The op of one of scipy.special's ufuncs, mapped into :data:`UFUNCS` when the first
    ufunc unknown to it arrives (scipy is imported by then: its ufunc was called)."""
    UFUNCS.update(scipy_ufuncs())
    return UFUNCS.get(ufunc)


def dispatch_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``ufunc`` on inputs of which at least one is traced."""
    if method == "__call__" and ufunc in VALUE_UFUNCS:
        try:
            return ufunc(*forward_values(inputs), **forward_values(kwargs))
        except TypeError as exc:  # complex values for np.floor, say: numpy has no loop for them
            msg = f"np.{ufunc.__name__}: {exc} [called at {user_location()}]"
            raise DtypeError(msg) from exc
    if method == "__call__" and not kwargs:
        op = UFUNCS.get(ufunc) or _scipy_ufunc(ufunc)
        if op is not None:
            return op(*inputs)
    if method == "__call__" and ufunc in _KEYWORD_UFUNCS:
        return call_atomically(UFUNCS[ufunc], inputs, kwargs)
    what = ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
    extra = f" with keyword arguments {sorted(kwargs)}" if kwargs else ""
    msg = f"{what}{extra} has no gradient rule for traced values [called at {user_location()}]"
    raise NoGradientError(msg)
