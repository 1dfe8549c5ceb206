"""numpy's entrywise functions that are not ufuncs, built from the ops.

``np.sinc``, ``np.real_if_close``, ``np.nan_to_num`` and ``np.sign`` on traced values are
compositions of nodegrad ops (``where``, ``sin``, products) giving numpy's values, so their
gradients are the ops' rules and differentiate again (on complex values too: ``sinc`` is
holomorphic, ``sign`` is ``z / |z|``) (``np.real``, ``np.imag`` and
``np.angle`` are the ops themselves). The ufunc ``np.modf`` gives the fractional part as
``x - trunc(x)`` (gradient 1; 0 at the whole numbers, where it jumps) and the integral
part as plain values (piecewise constant). ``np.modf``, ``np.divmod`` and ``np.frexp``
refuse complex values, as numpy does, with a :class:`~nodegrad.errors.DtypeError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.batched import plain, plain_map
from nodegrad.engine.levels import INTERPRETED, has_values
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, user_location

__all__ = ["divmod_", "frexp", "modf", "nan_to_num", "real_if_close", "sign", "sinc"]

# sin(y) / y = sum_k (-1)^k y^(2k) / (2k + 1)!, highest power first. For |y| < 1/2 the
# terms left out are below 1e-19: the series gives the values, and its derivatives are
# exact where those of sin(y) / y cancel (the first is cos(y) / y - sin(y) / y^2).
_SINC_SERIES = tuple((-1) ** k / float(np.prod(np.arange(1.0, 2 * k + 2))) for k in range(8))[::-1]
_SINC_NEAR = 0.5


def _refuse_complex(name: str, value: Any) -> None:
    if np.iscomplexobj(unwrap(value)):
        msg = f"np.{name}: complex values are not supported, as in numpy [called at {user_location()}]"
        raise DtypeError(msg)


def sinc(x: Any) -> Any:
    """``sin(pi x) / (pi x)``, 1 at 0; for ``|pi x| < 1/2`` its Taylor series, which gives
    the same values and exact derivatives of every order (0 and 1 included)."""
    y = np.pi * x
    near = np.abs(unwrap(y)) < _SINC_NEAR
    # Each branch sees only its own entries (a constant elsewhere): the unused one stays finite.
    far = ops.where(near, 1.0, y)
    t = ops.where(near, y, 0.0) ** 2
    series: Any = _SINC_SERIES[0]
    for c in _SINC_SERIES[1:]:
        series = series * t + c
    return ops.where(near, series, ops.sin(far) / far)


def real_if_close(a: Any, tol: Any = 100) -> Any:
    """The real part when every imaginary part is within ``tol`` machine epsilons of zero
    (``tol`` above 1; below 1 an absolute bound), as numpy; otherwise ``a`` itself."""
    value = unwrap(a)
    if not np.iscomplexobj(value):
        return a
    # np.result_type, not value.dtype: a traced Python complex stays a Python complex.
    bound = tol * np.finfo(np.result_type(value)).eps if tol > 1 else tol
    return ops.real(a) if np.all(np.abs(np.imag(value)) < bound) else a


def sign(x: Any) -> Any:
    """``np.sign``: piecewise constant for real values (plain, no gradient); for complex
    ones ``z / |z|`` (0 at 0), which has a gradient."""
    value = unwrap(x)
    if not np.iscomplexobj(value):
        return plain_map(np.sign, value)  # a batched value's signs stay batched
    zero = value == 0
    safe = ops.where(zero, 1.0, x)
    return ops.where(zero, 0.0, safe / ops.abs(safe))


def _replacement(name: str, value: Any, default: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> Any:
    """The value written over non-finite entries, in ``x``'s dtype (a traced one keeps its
    gradient); it must broadcast to ``x``'s shape, as numpy's copy into ``x`` needs."""
    value = default if value is None else value
    if np.iscomplexobj(unwrap(value)):
        msg = (
            f"np.nan_to_num: {name}= must be real, as in numpy (of complex x each part is replaced on its own) "
            f"[called at {user_location()}]"
        )
        raise DtypeError(msg)
    try:
        fits = np.broadcast_shapes(np.shape(unwrap(value)), shape) == shape
    except ValueError:
        fits = False
    if not fits:
        msg = (
            f"np.nan_to_num: {name}= of shape {np.shape(unwrap(value))} does not broadcast to x's shape {shape} "
            f"[called at {user_location()}]"
        )
        raise ShapeError(msg)
    if type(value) in INTERPRETED:
        return value if value.dtype == dtype else ops.astype(value, dtype)
    return np.asarray(value).astype(dtype)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """NaN, +inf and -inf replaced (by 0, the largest and the most negative finite value by
    default); the gradient is 1 at the finite entries, 0 at the replaced ones (a traced
    replacement value gets those); of complex values, each part as numpy does it."""
    if not copy:
        msg = (
            "np.nan_to_num: copy=False replaces the entries of x in place, and a traced value is never written "
            f"in place; use the returned value (copy=True) [called at {user_location()}]"
        )
        raise ArgumentError(msg)
    # Its values at their own level: plain under grad, batched under vmap, a shape only under eval_shape.
    value = plain(x) if type(x) in INTERPRETED else np.asarray(x)
    if value.dtype.kind == "c":
        re, im = (nan_to_num(part, True, nan, posinf, neginf) for part in (ops.real(x), ops.imag(x)))
        return re + im * 1j
    if value.dtype.kind != "f":
        return x
    limits = np.finfo(value.dtype)
    out = x
    for mask, fill, default, what in (
        (np.isnan(value), nan, 0.0, "nan"),
        (np.isposinf(value), posinf, limits.max, "posinf"),
        (np.isneginf(value), neginf, limits.min, "neginf"),
    ):
        replacement = _replacement(what, fill, default, value.dtype, value.shape)
        if not has_values(mask) or mask.any() or type(replacement) in INTERPRETED:
            out = ops.where(mask, replacement, out)
    return out


def modf(x: Any) -> Any:
    """``np.modf``: the fractional part, differentiable, and the integral part, plain."""
    _refuse_complex("modf", x)
    value = np.asarray(unwrap(x))
    whole = np.trunc(value)
    exact = value == whole  # whole numbers and infinities: a zero signed as x, as numpy gives it
    return ops.where(exact, np.copysign(0.0, value), x - np.where(exact, 0.0, whole)), whole


def divmod_(x: Any, y: Any) -> Any:
    """``np.divmod``: the quotient, plain (piecewise constant), and the remainder,
    differentiable as ``np.remainder`` is."""
    _refuse_complex("divmod", x)
    _refuse_complex("divmod", y)
    return np.floor_divide(unwrap(x), unwrap(y)), ops.remainder(x, y)


def frexp(x: Any) -> Any:
    """``np.frexp``: the mantissa ``x * 2**-e``, differentiable (exactly so: scaling by a
    power of two rounds nothing), and the exponent ``e``, plain integers."""
    _refuse_complex("frexp", x)
    value = np.asarray(unwrap(x))
    _, exponent = np.frexp(value)
    return ops.multiply(x, np.ldexp(np.ones_like(value), -exponent)), exponent
