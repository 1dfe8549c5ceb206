"""numpy's dispatch protocols onto the op registry.

``np.exp(traced)`` reaches :func:`dispatch_ufunc` through ``__array_ufunc__`` and
``np.sum(traced)`` reaches :func:`dispatch_function` through ``__array_function__``, so
unmodified numpy code records nodes. Three tables say what happens:

- :data:`UFUNCS` and :data:`FUNCTIONS`: differentiable, mapped onto nodegrad ops;
- :data:`VALUE_UFUNCS` and :data:`VALUE_FUNCTIONS`: results with no gradient (masks,
  indices, integers, piecewise-constant values), computed on the forward values;
- anything else raises :class:`NoGradientError` naming the function: a silent
  conversion to a plain array would drop the gradient.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.record import call_atomically
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError, user_location
from nodegrad.ops.arguments import normalize_axis

__all__ = ["FUNCTIONS", "UFUNCS", "VALUE_FUNCTIONS", "VALUE_UFUNCS", "dispatch_function", "dispatch_ufunc"]


def _nan_ignoring(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    """``np.fmax`` / ``np.fmin``: as maximum / minimum, except that a NaN loses to a number
    (the number is chosen, and gets the gradient)."""

    def fn(x: Any, y: Any) -> Any:
        nan_x, nan_y = np.isnan(unwrap(x)), np.isnan(unwrap(y))
        if not (nan_x.any() or nan_y.any()):
            return pick(x, y)
        return ops.where(nan_y, x, ops.where(nan_x, y, pick(x, y)))

    fn.__name__ = name
    return fn


def _conjugate(x: Any) -> Any:
    """``np.conjugate`` / ``np.conj``: the value itself, for the real values nodegrad
    differentiates."""
    if np.iscomplexobj(unwrap(x)):
        msg = (
            f"np.conjugate: complex values have no gradient rule (nodegrad differentiates real values, whose "
            f"conjugate is the value itself) [called at {user_location()}]"
        )
        raise DtypeError(msg)
    return ops.positive(x)


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
    if type(y) is Traced:  # the result still depends on y, with a zero gradient
        out = ops.where(np.zeros(np.shape(negative), bool), y, out)
    return out


def _float_power(x: Any, y: Any) -> Any:
    """``np.float_power``: ``x ** y`` computed in float64."""
    return ops.power(ops.astype(x, np.float64), ops.astype(y, np.float64))


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
    broadcasting over the other axes."""
    axis = kw.pop("axis", -1)
    _no_extras("vecdot", **kw)
    a, b = _core_last("vecdot", x1, axis, "x1"), _core_last("vecdot", x2, axis, "x2")
    n, m = np.shape(unwrap(a))[-1], np.shape(unwrap(b))[-1]
    if n != m:
        msg = f"np.vecdot: the vectors have {n} and {m} entries [called at {user_location()}]"
        raise ShapeError(msg)
    return ops.sum(ops.multiply(a, b), -1)


def _matvec(x1: Any, x2: Any) -> Any:
    """``np.matvec``: matrices ``(..., m, n)`` times vectors ``(..., n)``."""
    _at_least("matvec", x1, 2, x2, 1)
    return ops.squeeze(ops.matmul(x1, ops.expand_dims(x2, -1)), -1)


def _vecmat(x1: Any, x2: Any) -> Any:
    """``np.vecmat``: vectors ``(..., n)`` times matrices ``(..., n, m)``."""
    _at_least("vecmat", x1, 1, x2, 2)
    return ops.squeeze(ops.matmul(ops.expand_dims(x1, -2), x2), -2)


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
    np.fabs: ops.abs,
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
    np.radians: ops.deg2rad,
    np.degrees: ops.rad2deg,
    np.maximum: ops.maximum,
    np.minimum: ops.minimum,
    np.fmax: _nan_ignoring("fmax", ops.maximum),
    np.fmin: _nan_ignoring("fmin", ops.minimum),
    np.remainder: ops.remainder,
    np.fmod: ops.fmod,
    np.matmul: ops.matmul,
    np.conjugate: _conjugate,
    np.ldexp: _ldexp,
    np.copysign: _copysign,
    np.float_power: _float_power,
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
    np.isfinite, np.isnan, np.isinf, np.signbit, np.sign,
    np.floor, np.ceil, np.rint, np.trunc, np.floor_divide,
    np.heaviside, np.spacing, np.nextafter,
}  # fmt: skip


def _no_extras(name: str, **extras: Any) -> None:
    given = sorted(k for k, v in extras.items() if v is not None and v is not np._NoValue)
    if given:
        msg = f"np.{name}: the argument(s) {given} are not supported on traced values [called at {user_location()}]"
        raise NoGradientError(msg)


def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    where = kw.pop("where", None)
    _no_extras("sum", dtype=dtype, out=out, **kw)
    return ops.sum(a, axis, keepdims) if where is None else ops.masked_sum(a, where, axis, keepdims)


def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    where = kw.pop("where", None)
    _no_extras("mean", dtype=dtype, out=out, **kw)
    return ops.mean(a, axis, keepdims) if where is None else ops.masked_mean(a, where, axis, keepdims)


def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        _no_extras(name, out=out, **kw)
        return fn(a, axis, keepdims)

    return reduce


def _var(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # numpy's signature: (a, axis, dtype, out, ddof, keepdims, *, where, mean, correction).
    def spread(
        a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, **kw: Any
    ) -> Any:
        correction = kw.pop("correction", np._NoValue)
        if correction is not np._NoValue:
            if ddof != 0:
                msg = f"np.{name}: ddof and correction can't be provided simultaneously [called at {user_location()}]"
                raise ArgumentError(msg)
            ddof = correction
        _no_extras(name, dtype=dtype, out=out, **kw)
        return fn(a, axis, ddof, _keepdims(keepdims))

    return spread


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, **kw: Any) -> Any:
    _no_extras("concatenate", out=out, **kw)
    if axis is None:
        return ops.cat([ops.ravel(a) for a in arrays], 0)
    return ops.cat(arrays, axis)


def _stack(arrays: Any, axis: int = 0, out: Any = None, **kw: Any) -> Any:
    _no_extras("stack", out=out, **kw)
    return ops.stack(arrays, axis)


def _where(condition: Any, *branches: Any) -> Any:
    if not branches:
        return np.nonzero(unwrap(condition))
    if len(branches) != 2:
        msg = f"np.where: either both or neither of x and y should be given [called at {user_location()}]"
        raise ShapeError(msg)
    # numpy reads any nonzero condition as true (ng.where itself insists on masks).
    return ops.where(np.asarray(unwrap(condition)).astype(bool, copy=False), *branches)


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    _no_extras("take", out=out, mode=None if mode == "raise" else mode)
    # np.take without an axis indexes the flattened array.
    return ops.gather(ops.ravel(a), indices, 0) if axis is None else ops.gather(a, indices, axis)


def _einsum(subscripts: Any, *operands: Any, optimize: Any = False, **kw: Any) -> Any:
    _no_extras("einsum", **kw)  # `optimize` only changes the order of the contraction
    if not isinstance(subscripts, str):  # the interleaved form: a, [0, 1], b, [1, 2], [0, 2]
        subscripts, operands = _from_sublists((subscripts, *operands))
    return ops.einsum(subscripts, *operands)


def _from_sublists(args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """numpy's interleaved einsum arguments as a subscripts string and the operands."""

    def letters(sublist: Any) -> str:
        try:
            return "".join("..." if i is Ellipsis else string.ascii_letters[i] for i in sublist)
        except (TypeError, IndexError):
            msg = f"np.einsum: {sublist!r} is not a list of axis labels 0-51 [called at {user_location()}]"
            raise ShapeError(msg) from None

    output = letters(args[-1]) if len(args) % 2 else None
    pairs = args[: len(args) - len(args) % 2]
    subscripts = ",".join(letters(sub) for sub in pairs[1::2])
    return (subscripts if output is None else f"{subscripts}->{output}"), tuple(pairs[0::2])


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    if compute_uv:
        msg = (
            "np.linalg.svd with compute_uv=True has no gradient rule for traced values (only the singular values "
            f"have one); pass compute_uv=False for them [called at {user_location()}]"
        )
        raise NoGradientError(msg)
    return ops.svdvals(a)


# -- numpy functions built from the ops (their gradients come from the ops' rules) ----------------


def _atleast(ndim: int) -> Callable[..., Any]:
    # numpy's placement of the added axes: 1-D (n,) -> (1, n) -> (1, n, 1); 0-D -> all ones.
    def atleast(*arys: Any) -> Any:
        out = []
        for a in arys:
            shape = np.shape(unwrap(a))
            if len(shape) >= ndim:
                out.append(a)
                continue
            if len(shape) == 0:
                target: tuple[int, ...] = (1,) * ndim
            elif len(shape) == 1:
                target = {1: shape, 2: (1, *shape), 3: (1, *shape, 1)}[ndim]
            else:  # 2-D to 3-D
                target = (*shape, 1)
            out.append(ops.reshape(a, target))
        return out[0] if len(out) == 1 else out

    return atleast


_ATLEAST_1D, _ATLEAST_2D, _ATLEAST_3D = _atleast(1), _atleast(2), _atleast(3)


def _hstack(tup: Any, **kw: Any) -> Any:
    _no_extras("hstack", **kw)
    arrays = [_ATLEAST_1D(a) for a in tup]
    return ops.cat(arrays, 0 if np.ndim(unwrap(arrays[0])) == 1 else 1)


def _vstack(tup: Any, **kw: Any) -> Any:
    _no_extras("vstack", **kw)
    return ops.cat([_ATLEAST_2D(a) for a in tup], 0)


def _neighbours(name: str, a: Any, axis: int) -> tuple[int, tuple[slice, ...], tuple[slice, ...]]:
    """The axis as a non-negative int, and the indices of every entry but the last and of
    every entry but the first along it (each entry's left and right neighbours)."""
    ndim = np.ndim(unwrap(a))
    if ndim == 0:
        msg = f"np.{name}: needs at least one dimension [called at {user_location()}]"
        raise ShapeError(msg)
    axis = normalize_axis(name, axis, ndim)[0]  # type: ignore[index]
    left, right = [slice(None)] * ndim, [slice(None)] * ndim
    left[axis], right[axis] = slice(None, -1), slice(1, None)
    return axis, tuple(left), tuple(right)


def _keepdims(value: Any) -> bool:
    """numpy's keepdims argument, which may be left as np._NoValue."""
    return False if value is np._NoValue else bool(value)


def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Any:
    _no_extras("diff", prepend=prepend, append=append)
    _, left, right = _neighbours("diff", a, axis)
    for _ in range(n):
        a = ops.getitem(a, right) - ops.getitem(a, left)
    return a


def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    if axis is None:
        return ops.reshape(_roll(ops.ravel(a), shift, 0), np.shape(unwrap(a)))
    shape = np.shape(unwrap(a))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    for k, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist(), strict=True):
        ax = normalize_axis("roll", ax, len(shape))[0]  # type: ignore[index]
        n = shape[ax]
        if n:
            a = ops.gather(a, (np.arange(n) - k) % n, ax)
    return a


def _repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    if axis is None:
        a, axis = ops.ravel(a), 0
    axis = normalize_axis("repeat", axis, np.ndim(unwrap(a)))[0]  # type: ignore[index]
    n = np.shape(unwrap(a))[axis]
    return ops.gather(a, np.repeat(np.arange(n), repeats), axis)


def _tile(a: Any, reps: Any) -> Any:
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(unwrap(a))
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    # Each axis of length n becomes (r, n), broadcast, then merged: r copies in a row.
    spread = ops.reshape(a, tuple(x for n in shape for x in (1, n)))
    wide = ops.broadcast_to(spread, tuple(x for r, n in zip(reps, shape, strict=True) for x in (r, n)))
    return ops.reshape(wide, tuple(r * n for r, n in zip(reps, shape, strict=True)))


def _triangle(name: str, keep: Callable[..., Any]) -> Callable[..., Any]:
    def triangle(m: Any, k: int = 0) -> Any:
        shape = np.shape(unwrap(m))
        if len(shape) < 2:
            msg = f"np.{name}: needs at least two dimensions, got shape {shape} [called at {user_location()}]"
            raise ShapeError(msg)
        # where, not a product with a 0/1 mask: numpy's zeros are exact even over inf/nan.
        return ops.where(keep(np.ones(shape[-2:], bool), k), m, 0.0)

    return triangle


def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    ndim = np.ndim(unwrap(a))
    if ndim < 2:
        msg = f"np.diagonal: needs at least two dimensions [called at {user_location()}]"
        raise ShapeError(msg)
    moved = ops.moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = np.shape(unwrap(moved))[-2:]
    start_row, start_col = max(-offset, 0), max(offset, 0)
    count = max(min(rows - start_row, cols - start_col), 0)
    index = np.arange(count)
    return ops.getitem(moved, (Ellipsis, start_row + index, start_col + index))


def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    _no_extras("trace", dtype=dtype, out=out)
    return ops.sum(_diagonal(a, offset, axis1, axis2), -1)


def _diag(v: Any, k: int = 0) -> Any:
    shape = np.shape(unwrap(v))
    if len(shape) == 2:
        return _diagonal(v, k)
    if len(shape) != 1:
        msg = f"np.diag: needs a 1-D or 2-D array, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    n = shape[0] + abs(k)
    index = np.arange(shape[0])
    rows, cols = index + max(-k, 0), index + max(k, 0)
    return ops.index_set(np.zeros((n, n), np.result_type(unwrap(v))), v, (rows, cols))


def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: Any = False) -> Any:
    keepdims = _keepdims(keepdims)
    if weights is None:
        value = ops.mean(a, axis, keepdims)
        count = np.size(unwrap(a)) // max(np.size(unwrap(value)), 1)
        total: Any = np.full(np.shape(unwrap(value)), float(count))
    else:
        w_shape, a_shape = np.shape(unwrap(weights)), np.shape(unwrap(a))
        if w_shape != a_shape:
            if axis is None or len(w_shape) != 1 or isinstance(axis, (tuple, list)):
                msg = (
                    f"np.average: weights of shape {w_shape} need axis= and one entry per element along it, for an "
                    f"array of shape {a_shape} [called at {user_location()}]"
                )
                raise ShapeError(msg)
            ax = normalize_axis("average", axis, len(a_shape))[0]  # type: ignore[index]
            weights = ops.reshape(weights, tuple(-1 if i == ax else 1 for i in range(len(a_shape))))
        total = ops.sum(ops.broadcast_to(weights, a_shape), axis, keepdims)
        value = ops.sum(a * weights, axis, keepdims) / total
    return (value, total) if returned else value


def _inner(a: Any, b: Any) -> Any:
    if np.ndim(unwrap(a)) == 0 or np.ndim(unwrap(b)) == 0:
        return ops.multiply(a, b)
    return ops.tensordot(a, b, axes=([-1], [-1]))


def _nan_free(a: Any) -> Any:
    # NaN entries become 0: they then add nothing, and get a zero gradient.
    return ops.where(np.isnan(unwrap(a)), 0.0, a)


def _nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    _no_extras("nansum", dtype=dtype, out=out, **kw)
    return ops.sum(_nan_free(a), axis, _keepdims(keepdims))


def _nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    _no_extras("nanmean", dtype=dtype, out=out, **kw)
    keep = _keepdims(keepdims)
    count = np.sum(~np.isnan(unwrap(a)), axis=axis, keepdims=keep)
    return ops.sum(_nan_free(a), axis, keep) / count


def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False) -> Any:
    _no_extras("ptp", out=out)
    keep = _keepdims(keepdims)
    return ops.max(a, axis, keep) - ops.min(a, axis, keep)


def _trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    ndim = np.ndim(unwrap(y))
    axis, left, right = _neighbours("trapezoid", y, axis)
    mean_heights = (ops.getitem(y, right) + ops.getitem(y, left)) * 0.5
    if x is None:
        return ops.sum(mean_heights, axis) * dx
    widths = _diff(x, axis=-1 if np.ndim(unwrap(x)) == 1 else axis)
    if np.ndim(unwrap(x)) == 1 and ndim > 1:  # a 1-D x runs along the axis
        widths = ops.reshape(widths, tuple(-1 if a == axis else 1 for a in range(ndim)))
    return ops.sum(mean_heights * widths, axis)


def _kron(a: Any, b: Any) -> Any:
    a_shape, b_shape = np.shape(unwrap(a)), np.shape(unwrap(b))
    ndim = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (ndim - len(a_shape)) + a_shape
    b_shape = (1,) * (ndim - len(b_shape)) + b_shape
    # Interleave the axes: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); the product
    # merged pairwise is the block matrix a[i, j] * b.
    spread_a = ops.reshape(a, tuple(x for n in a_shape for x in (n, 1)))
    spread_b = ops.reshape(b, tuple(x for n in b_shape for x in (1, n)))
    return ops.reshape(spread_a * spread_b, tuple(m * n for m, n in zip(a_shape, b_shape, strict=True)))


def _polyval(p: Any, x: Any) -> Any:
    # Horner's rule from zeros, p[0] the highest power: numpy's own steps, so the same values.
    coefficients = p if type(p) is Traced else np.asarray(p)
    y: Any = np.zeros_like(unwrap(x))
    for k in range(np.shape(unwrap(coefficients))[0]):
        y = y * x + coefficients[k]
    return y


def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    n, m = np.size(unwrap(a)), np.size(unwrap(v))
    if np.ndim(unwrap(a)) != 1 or np.ndim(unwrap(v)) != 1 or not n or not m:
        msg = (
            f"np.convolve: needs two non-empty 1-D arrays, got shapes {np.shape(unwrap(a))} and "
            f"{np.shape(unwrap(v))} [called at {user_location()}]"
        )
        raise ShapeError(msg)
    if m > n:  # numpy swaps them: the longer one slides under the shorter
        a, v, n, m = v, a, m, n
    # full[k] = sum_j a[k - j] v[j]: gather a into a (n + m - 1, m) matrix, then a matmul.
    k, j = np.arange(n + m - 1)[:, None], np.arange(m)[None, :]
    inside = (k - j >= 0) & (k - j < n)
    windows = ops.where(inside, ops.getitem(a, np.clip(k - j, 0, n - 1)), 0.0)
    full = ops.matmul(windows, v)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return ops.getitem(full, slice(start, start + n))
    if mode == "valid":
        return ops.getitem(full, slice(m - 1, n))
    msg = f"np.convolve: mode must be 'full', 'same' or 'valid', got {mode!r} [called at {user_location()}]"
    raise ArgumentError(msg)


def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    # The axes (all by default) are read as one flat vector, however many there are.
    shape = np.shape(unwrap(x))
    picked = normalize_axis("vector_norm", axis, len(shape))
    picked = tuple(range(len(shape))) if picked is None else picked
    rest = [a for a in range(len(shape)) if a not in picked]
    flat = ops.reshape(ops.transpose(x, (*rest, *picked)), (*(shape[a] for a in rest), -1))
    value = ops.norm(flat, ord, -1)
    if keepdims:
        value = ops.reshape(value, tuple(1 if a in picked else n for a, n in enumerate(shape)))
    return value


def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    return ops.norm(x, ord, (-2, -1), keepdims)


def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Any:
    _no_extras("sort", order=order, **kw)
    return ops.sort(ops.ravel(a), 0) if axis is None else ops.sort(a, axis)


def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    # axis=None: numpy treats the array as flattened first.
    return ops.take_along_axis(ops.ravel(arr), indices, 0) if axis is None else ops.take_along_axis(arr, indices, axis)


def _reshape(a: Any, shape: Any = None, order: str = "C", **kw: Any) -> Any:
    shape = kw.pop("newshape", shape)
    _no_extras("reshape", copy=kw.pop("copy", None), **kw)
    if order == "F":  # column-major: reverse the axes, reshape, reverse back
        target = (shape,) if isinstance(shape, int) else tuple(shape)
        return ops.transpose(ops.reshape(ops.transpose(a), target[::-1]))
    _no_extras("reshape", order=None if order in ("C", "A") else order)
    return ops.reshape(a, shape)


def _ravel(a: Any, order: str = "C") -> Any:
    return _reshape(a, -1, order=order)


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kw: Any) -> Any:
    _no_extras("clip", out=out, **kw)
    return ops.clamp(a, a_min, a_max)


def _cumulative(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def scan(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        _no_extras(name, dtype=dtype, out=out)
        return fn(a, axis)

    return scan


FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: _sum,
    np.mean: _mean,
    np.max: _reduction("max", ops.max),
    np.amax: _reduction("amax", ops.max),
    np.min: _reduction("min", ops.min),
    np.amin: _reduction("amin", ops.min),
    np.prod: lambda a, axis=None, dtype=None, out=None, keepdims=False, **kw: _reduction("prod", ops.prod)(
        a, axis, out, keepdims, dtype=dtype, **kw
    ),
    np.var: _var("var", ops.var),
    np.std: _var("std", ops.std),
    np.linalg.norm: ops.norm,
    np.cumsum: _cumulative("cumsum", ops.cumsum),
    np.cumprod: _cumulative("cumprod", ops.cumprod),
    np.dot: ops.dot,
    np.outer: ops.outer,
    np.matmul: ops.matmul,
    np.einsum: _einsum,
    np.tensordot: ops.tensordot,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.split: ops.split,
    np.where: _where,
    np.clip: _clip,
    np.take: _take,
    np.take_along_axis: _take_along_axis,
    np.sort: _sort,
    np.reshape: _reshape,
    np.transpose: ops.transpose,
    np.ravel: _ravel,
    np.moveaxis: ops.moveaxis,
    np.swapaxes: ops.swapaxes,
    np.expand_dims: ops.expand_dims,
    np.squeeze: ops.squeeze,
    np.broadcast_to: lambda array, shape, subok=False: ops.broadcast_to(array, shape),
    np.pad: ops.pad,
    np.flip: ops.flip,
    np.copy: lambda a, **kw: a,  # values are never written in place: a copy is the value itself
    np.linalg.svd: _svd,
    np.atleast_1d: _ATLEAST_1D,
    np.atleast_2d: _ATLEAST_2D,
    np.atleast_3d: _ATLEAST_3D,
    np.hstack: _hstack,
    np.vstack: _vstack,
    np.diff: _diff,
    np.roll: _roll,
    np.repeat: _repeat,
    np.tile: _tile,
    np.tril: _triangle("tril", np.tril),
    np.triu: _triangle("triu", np.triu),
    np.diagonal: _diagonal,
    np.trace: _trace,
    np.diag: _diag,
    np.average: _average,
    np.inner: _inner,
    np.nansum: _nansum,
    np.nanmean: _nanmean,
    np.ptp: _ptp,
    np.kron: _kron,
    np.polyval: _polyval,
    np.convolve: _convolve,
    np.linalg.inv: ops.inv,
    np.linalg.cholesky: ops.cholesky,
    np.linalg.eigvalsh: ops.eigvalsh,
    np.linalg.solve: ops.solve,
    np.linalg.det: ops.det,
    np.linalg.slogdet: ops.slogdet,
}
# Added in numpy 2.0: mapped where this numpy has them.
_NUMPY_2_FUNCTIONS = {
    "trapezoid": _trapezoid,
    "svdvals": ops.svdvals,
    "vector_norm": _vector_norm,
    "matrix_norm": _matrix_norm,
    "matrix_transpose": lambda x: ops.swapaxes(x, -1, -2),
}
FUNCTIONS.update(
    {
        f: impl
        for name, impl in _NUMPY_2_FUNCTIONS.items()
        if (f := getattr(np.linalg, name, None) or getattr(np, name, None)) is not None
    }
)

# Functions whose results carry no gradient: computed on the forward values.
VALUE_FUNCTIONS = {
    np.shape, np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.nonzero, np.count_nonzero,
    np.isclose, np.allclose, np.array_equal, np.zeros_like, np.ones_like, np.empty_like, np.full_like,
    np.round, np.around, np.isfinite, np.isnan, np.isinf, np.result_type, np.sign,
}  # fmt: skip


def _values(args: Any) -> Any:
    """``args`` with traced values (also inside lists and tuples) replaced by their values."""
    if isinstance(args, (list, tuple)):
        return type(args)(_values(a) for a in args)
    if isinstance(args, dict):
        return {k: _values(v) for k, v in args.items()}
    return unwrap(args)


def dispatch_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``ufunc`` on inputs of which at least one is traced."""
    if method == "__call__" and ufunc in VALUE_UFUNCS:
        return ufunc(*_values(inputs), **_values(kwargs))
    if method == "__call__" and not kwargs:
        op = UFUNCS.get(ufunc)
        if op is not None:
            return op(*inputs)
    if method == "__call__" and ufunc in _KEYWORD_UFUNCS:
        return call_atomically(UFUNCS[ufunc], inputs, kwargs)
    what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    extra = f" with keyword arguments {sorted(kwargs)}" if kwargs else ""
    msg = f"{what}{extra} has no gradient rule for traced values [called at {user_location()}]"
    raise NoGradientError(msg)


def dispatch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the numpy function ``func`` on arguments of which at least one is traced."""
    if func in VALUE_FUNCTIONS:
        return func(*_values(args), **_values(kwargs))
    impl = FUNCTIONS.get(func)
    if impl is None:
        name = f"{getattr(func, '__module__', 'numpy').replace('numpy', 'np', 1)}.{func.__name__}"
        msg = f"{name} has no gradient rule for traced values [called at {user_location()}]"
        raise NoGradientError(msg)
    return call_atomically(impl, args, kwargs)


def _array_ufunc(self: Traced, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    return dispatch_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self: Traced, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    return dispatch_function(func, args, kwargs)


# numpy's protocols, attached to the engine's handle from here: np.exp(x) and np.sum(x) of a
# traced x come to this module.
Traced.__array_ufunc__ = _array_ufunc  # type: ignore[attr-defined]
Traced.__array_function__ = _array_function  # type: ignore[attr-defined]
