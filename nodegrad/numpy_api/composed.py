"""numpy functions built from the ops: their gradients come from the ops' own rules.

Each is numpy's function of the same name, written as a composition of nodegrad ops
(reshapes, gathers, sums, ``where``, matmuls) that gives numpy's values, so that
``np.diff``, ``np.tile``, ``np.trace``, ``np.convolve``, ``np.linalg.vector_norm`` and
the others record nodes on traced values with no rule of their own. The function table
(:mod:`nodegrad.numpy_api.functions`) maps numpy's functions onto these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, user_location
from nodegrad.numpy_api.arguments import no_extras, read_keepdims
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.linalg import products

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "average",
    "convolve",
    "diag",
    "diagonal",
    "diff",
    "fftshift",
    "filled",
    "full_like",
    "hstack",
    "ifftshift",
    "inner",
    "kron",
    "matrix_norm",
    "nanmean",
    "nansum",
    "polyval",
    "ptp",
    "repeat",
    "roll",
    "tile",
    "trace",
    "trapezoid",
    "tril",
    "triu",
    "vector_norm",
    "vstack",
]


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


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _cast_for_joining(name: str, arrays: list[Any], dtype: Any, casting: Any) -> list[Any]:
    """``arrays`` cast to ``dtype`` (by default their common dtype), each cast allowed by
    ``casting`` as numpy's ``concatenate`` checks it; to a non-float dtype the values are
    plain data, as ``astype`` gives them."""
    if casting not in _CASTINGS:
        msg = f"np.{name}: casting must be one of {_CASTINGS}, got {casting!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    dtypes = [np.result_type(unwrap(a)) for a in arrays]
    try:
        target = np.result_type(*dtypes) if dtype is None else np.dtype(dtype)
    except TypeError as exc:
        raise DtypeError(f"np.{name}: {exc} [called at {user_location()}]") from None
    for d in dtypes:
        if not np.can_cast(d, target, casting):
            msg = (
                f"np.{name}: cannot cast array data from {d} to {target} according to the rule {casting!r} "
                f"[called at {user_location()}]"
            )
            raise DtypeError(msg)
    return [a if d == target else ops.astype(a, target) for a, d in zip(arrays, dtypes, strict=True)]


def hstack(tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    arrays = _cast_for_joining("hstack", [atleast_1d(a) for a in tup], dtype, casting)
    return ops.cat(arrays, 0 if np.ndim(unwrap(arrays[0])) == 1 else 1)


def vstack(tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    return ops.cat(_cast_for_joining("vstack", [atleast_2d(a) for a in tup], dtype, casting), 0)


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


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Any:
    no_extras("diff", prepend=prepend, append=append)
    _, left, right = _neighbours("diff", a, axis)
    for _ in range(n):
        a = ops.getitem(a, right) - ops.getitem(a, left)
    return a


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    if axis is None:
        return ops.reshape(roll(ops.ravel(a), shift, 0), np.shape(unwrap(a)))
    shape = np.shape(unwrap(a))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    for k, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist(), strict=True):
        ax = normalize_axis("roll", ax, len(shape))[0]  # type: ignore[index]
        n = shape[ax]
        if n:
            a = ops.gather(a, (np.arange(n) - k) % n, ax)
    return a


def _shifted_halves(name: str, x: Any, axes: Any, sign: int) -> Any:
    """``np.fft.fftshift`` (sign 1) and ``ifftshift`` (sign -1): a roll by half of each axis."""
    ndim = np.ndim(unwrap(x))
    chosen = tuple(range(ndim)) if axes is None else normalize_axis(name, axes, ndim) or ()
    if isinstance(axes, (int, np.integer)):
        chosen = (int(axes) % max(ndim, 1),)
    shape = np.shape(unwrap(x))
    return roll(x, [sign * (shape[a] // 2) for a in chosen], list(chosen)) if chosen else x


def fftshift(x: Any, axes: Any = None) -> Any:
    """``np.fft.fftshift``: the zero-frequency entry moved to the centre (a roll)."""
    return _shifted_halves("np.fft.fftshift", x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """``np.fft.ifftshift``: the inverse of :func:`fftshift` (a roll the other way)."""
    return _shifted_halves("np.fft.ifftshift", x, axes, -1)


def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    if axis is None or np.ndim(unwrap(a)) == 0:  # numpy reads a 0-d value as one of length 1
        a, axis = ops.ravel(a), 0 if axis is None else axis
    axis = normalize_axis("repeat", axis, np.ndim(unwrap(a)))[0]  # type: ignore[index]
    n = np.shape(unwrap(a))[axis]
    return ops.gather(a, np.repeat(np.arange(n), repeats), axis)


def tile(a: Any, reps: Any) -> Any:
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


tril, triu = _triangle("tril", np.tril), _triangle("triu", np.triu)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
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


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    no_extras("trace", dtype=dtype, out=out)
    return ops.sum(diagonal(a, offset, axis1, axis2), -1)


def diag(v: Any, k: int = 0) -> Any:
    shape = np.shape(unwrap(v))
    if len(shape) == 2:
        return diagonal(v, k)
    if len(shape) != 1:
        msg = f"np.diag: needs a 1-D or 2-D array, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    n = shape[0] + abs(k)
    index = np.arange(shape[0])
    rows, cols = index + max(-k, 0), index + max(k, 0)
    return ops.index_set(np.zeros((n, n), np.result_type(unwrap(v))), v, (rows, cols))


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: Any = False) -> Any:
    keepdims = read_keepdims(keepdims)
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


def inner(a: Any, b: Any) -> Any:
    if np.ndim(unwrap(a)) == 0 or np.ndim(unwrap(b)) == 0:
        return ops.multiply(a, b)
    return ops.tensordot(a, b, axes=([-1], [-1]))


def _nan_free(a: Any) -> Any:
    # NaN entries become 0: they then add nothing, and get a zero gradient.
    return ops.where(np.isnan(unwrap(a)), 0.0, a)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    no_extras("nansum", dtype=dtype, out=out, **kw)
    return ops.sum(_nan_free(a), axis, read_keepdims(keepdims))


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    no_extras("nanmean", dtype=dtype, out=out, **kw)
    keep = read_keepdims(keepdims)
    count = np.sum(~np.isnan(unwrap(a)), axis=axis, keepdims=keep)
    return ops.sum(_nan_free(a), axis, keep) / count


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False) -> Any:
    no_extras("ptp", out=out)
    keep = read_keepdims(keepdims)
    return ops.max(a, axis, keep) - ops.min(a, axis, keep)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    ndim = np.ndim(unwrap(y))
    axis, left, right = _neighbours("trapezoid", y, axis)
    mean_heights = (ops.getitem(y, right) + ops.getitem(y, left)) * 0.5
    if x is None:
        return ops.sum(mean_heights, axis) * dx
    widths = diff(x, axis=-1 if np.ndim(unwrap(x)) == 1 else axis)
    if np.ndim(unwrap(x)) == 1 and ndim > 1:  # a 1-D x runs along the axis
        widths = ops.reshape(widths, tuple(-1 if a == axis else 1 for a in range(ndim)))
    return ops.sum(mean_heights * widths, axis)


def kron(a: Any, b: Any) -> Any:
    a_shape, b_shape = np.shape(unwrap(a)), np.shape(unwrap(b))
    ndim = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (ndim - len(a_shape)) + a_shape
    b_shape = (1,) * (ndim - len(b_shape)) + b_shape
    # Interleave the axes: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); the product
    # merged pairwise is the block matrix a[i, j] * b.
    spread_a = ops.reshape(a, tuple(x for n in a_shape for x in (n, 1)))
    spread_b = ops.reshape(b, tuple(x for n in b_shape for x in (1, n)))
    return ops.reshape(spread_a * spread_b, tuple(m * n for m, n in zip(a_shape, b_shape, strict=True)))


def polyval(p: Any, x: Any) -> Any:
    # Horner's rule from zeros, p[0] the highest power: numpy's own steps, so the same values.
    coefficients = p if type(p) in INTERPRETED else np.asarray(p)
    y: Any = np.zeros_like(unwrap(x))
    for k in range(np.shape(unwrap(coefficients))[0]):
        y = y * x + coefficients[k]
    return y


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    n, m = np.size(unwrap(a)), np.size(unwrap(v))
    if np.ndim(unwrap(a)) != 1 or np.ndim(unwrap(v)) != 1 or not n or not m:
        msg = (
            f"np.convolve: needs two non-empty 1-D arrays, got shapes {np.shape(unwrap(a))} and "
            f"{np.shape(unwrap(v))} [called at {user_location()}]"
        )
        raise ShapeError(msg)
    if mode not in ("full", "same", "valid"):
        msg = f"np.convolve: mode must be 'full', 'same' or 'valid', got {mode!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    full = products.convolve(a, v)  # one op: its gradients are convolutions too, O(n + m) memory
    if mode == "full":
        return full
    n, m = max(n, m), min(n, m)  # numpy cuts around the longer one
    start = (m - 1) // 2 if mode == "same" else m - 1
    return ops.getitem(full, slice(start, start + (n if mode == "same" else n - m + 1)))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
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


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    return ops.norm(x, ord, (-2, -1), keepdims)


def filled(shape: Any, fill_value: Any, dtype: Any = None, name: str = "full") -> Any:
    """An array of ``shape`` holding the traced ``fill_value`` (broadcast to it) everywhere,
    cast to ``dtype`` (to an integer dtype: plain data, no gradient). A complex value for a
    real dtype is refused naming ``np.{name}`` (numpy casts it with a ComplexWarning)."""
    if dtype is not None and fill_value.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        msg = (
            f"np.{name}: a complex fill_value in an array of {np.dtype(dtype)} would lose its imaginary part; pass "
            f"a complex dtype [called at {user_location()}]"
        )
        raise DtypeError(msg)
    if dtype is not None and np.dtype(dtype) != fill_value.dtype:
        fill_value = ops.astype(fill_value, dtype)
    return ops.broadcast_to(fill_value, tuple(shape) if isinstance(shape, (tuple, list)) else (shape,))


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None,
              **kw: Any) -> Any:  # fmt: skip
    """``np.full_like``: ``a`` gives only the shape and the default dtype (it carries no
    gradient); a traced ``fill_value`` carries its gradient to every entry."""
    target = np.shape(a) if shape is None else shape  # an example's shape, inside vmap
    if type(fill_value) not in INTERPRETED:
        no_extras("full_like", **kw)
        return np.full(target, fill_value, dtype=np.result_type(a) if dtype is None else dtype)
    return filled(target, fill_value, np.result_type(unwrap(a)) if dtype is None else dtype, "full_like")
