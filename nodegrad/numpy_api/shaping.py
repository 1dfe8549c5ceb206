"""numpy's splits, stacks, rotations and vector products, built from the ops.

``np.array_split``, ``np.hsplit``, ``np.column_stack``, ``np.dstack``, ``np.append``,
``np.select``, ``np.rot90``, ``np.fliplr``, ``np.cross``, ``np.rollaxis`` and the others
here are numpy's functions of the same name written as slices, concatenations, stacks,
transposes and ``where`` of nodegrad ops, following numpy's own steps so that they give
numpy's values. Their gradients are the ops' rules, so they differentiate to any order.
The function table (:mod:`nodegrad.numpy_api.functions`) maps numpy's functions onto these.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.batched import plain_map
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import AxisError, DtypeError, ShapeError, error_like, user_location, user_stacklevel
from nodegrad.numpy_api.arguments import as_operand, refusal
from nodegrad.numpy_api.composed import atleast_3d

__all__ = [
    "append",
    "array_split",
    "column_stack",
    "cross",
    "dsplit",
    "dstack",
    "fliplr",
    "flipud",
    "hsplit",
    "rollaxis",
    "rot90",
    "select",
    "vsplit",
]


def _shape(a: Any) -> tuple[int, ...]:
    return np.shape(unwrap(a))


def _axis(name: str, axis: Any, ndim: int, what: str = "axis") -> int:
    """``axis`` as a non-negative int below ``ndim``, or a ShapeError naming the function."""
    try:
        value = operator.index(axis)
    except TypeError:
        raise refusal(name, f"{what} must be an int, got {axis!r}") from None
    if not -ndim <= value < ndim:
        raise refusal(name, f"{what} {value} is out of bounds for an array of dimension {ndim}", AxisError)
    return value % ndim


# -- splits ------------------------------------------------------------------------------------


def _pieces(name: str, ary: Any, indices_or_sections: Any, axis: Any, equal: bool) -> list[Any]:
    """The pieces of ``ary`` along ``axis``: numpy splits the positions, each piece is a slice."""
    shape = _shape(ary)
    if not shape:
        raise refusal(name, "cannot split an array of dimension 0")
    axis = _axis(name, axis, len(shape))
    try:
        positions = (np.split if equal else np.array_split)(np.arange(shape[axis]), indices_or_sections)
    except (ValueError, TypeError) as exc:
        raise refusal(name, f"{exc} (axis {axis} of shape {shape})", error_like(exc) or ShapeError) from exc
    before = (slice(None),) * axis
    # A piece of the positions is a run start..end: that slice, whatever order the split points are in.
    return [ops.getitem(ary, (*before, slice(int(p[0]), int(p[-1]) + 1) if p.size else slice(0, 0))) for p in positions]


def array_split(ary: Any, indices_or_sections: Any, axis: Any = 0) -> list[Any]:
    return _pieces("array_split", ary, indices_or_sections, axis, equal=False)


def _split_along(name: str, min_ndim: int, axis_of: Any) -> Any:
    def split_along(ary: Any, indices_or_sections: Any) -> list[Any]:
        ndim = len(_shape(ary))
        if ndim < min_ndim:
            raise refusal(name, f"{name} only works on arrays of {min_ndim} or more dimensions")
        return _pieces(name, ary, indices_or_sections, axis_of(ndim), equal=True)

    return split_along


hsplit = _split_along("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0)
vsplit = _split_along("vsplit", 2, lambda ndim: 0)
dsplit = _split_along("dsplit", 3, lambda ndim: 2)


# -- stacks ------------------------------------------------------------------------------------


def column_stack(tup: Any) -> Any:
    # 0-D and 1-D arrays become columns, (n,) -> (n, 1); the others join as they are.
    arrays = [as_operand(v) for v in tup]
    columns = [ops.reshape(a, (-1, 1)) if len(_shape(a)) < 2 else a for a in arrays]
    return ops.cat(columns, 1)


def dstack(tup: Any) -> Any:
    return ops.cat([atleast_3d(as_operand(a)) for a in tup], 2)


def append(arr: Any, values: Any, axis: Any = None) -> Any:
    arr, values = as_operand(arr), as_operand(values)
    if axis is None:  # both flattened, joined end to end
        if len(_shape(arr)) != 1:
            arr = ops.ravel(arr)
        return ops.cat([arr, ops.ravel(values)], 0)
    return ops.cat([arr, values], axis)


def _weak(value: Any) -> Any:
    """``value`` as numpy's select reads it: Python numbers stay weak, traced values stay traced."""
    return value if type(value) in (int, float, complex) or type(value) in INTERPRETED else np.asarray(value)


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise refusal("select", "list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise refusal("select", "select with an empty condition list is not possible")
    choices = [_weak(c) for c in choicelist]
    fallback = _weak(default)
    try:
        dtype = np.result_type(*(unwrap(c) for c in (*choices, fallback)))
    except TypeError as exc:
        msg = f"np.select: choicelist and default value do not have a common dtype: {exc} [called at {user_location()}]"
        raise DtypeError(msg) from None
    conditions = [plain_map(np.asarray, c) for c in condlist]  # a batched mask stays batched
    for i, condition in enumerate(conditions):
        if condition.dtype != np.bool_:
            msg = f"np.select: invalid entry {i} in condlist: should be boolean ndarray [called at {user_location()}]"
            raise DtypeError(msg)
    try:
        shape = np.broadcast_shapes(
            *(c.shape for c in conditions), *(np.shape(unwrap(c)) for c in (*choices, fallback))
        )
    except ValueError as exc:
        raise refusal("select", str(exc)) from None
    if type(fallback) in INTERPRETED:
        result = ops.broadcast_to(ops.astype(fallback, dtype) if fallback.dtype != dtype else fallback, shape)
    else:
        result = np.full(shape, fallback, dtype)
    # The first true condition wins: lay the choices on from the last one back.
    for condition, choice in zip(conditions[::-1], choices[::-1], strict=True):
        result = ops.where(condition, choice, result)
    return result


# -- rotations and axes --------------------------------------------------------------------------


def rot90(m: Any, k: Any = 1, axes: Any = (0, 1)) -> Any:
    axes = tuple(axes)
    if len(axes) != 2:
        raise refusal("rot90", "len(axes) must be 2.")
    ndim = len(_shape(m))
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == ndim:
        raise refusal("rot90", "Axes must be different.")
    if not (-ndim <= axes[0] < ndim and -ndim <= axes[1] < ndim):
        raise refusal("rot90", f"Axes={axes} out of range for array of ndim={ndim}.", AxisError)
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return ops.flip(ops.flip(m, axes[0]), axes[1])
    order = list(range(ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return ops.transpose(ops.flip(m, axes[1]), tuple(order))
    return ops.flip(ops.transpose(m, tuple(order)), axes[1])


def fliplr(m: Any) -> Any:
    if len(_shape(m)) < 2:
        raise refusal("fliplr", "Input must be >= 2-d.")
    return ops.getitem(m, (slice(None), slice(None, None, -1)))


def flipud(m: Any) -> Any:
    if len(_shape(m)) < 1:
        raise refusal("flipud", "Input must be >= 1-d.")
    return ops.getitem(m, slice(None, None, -1))


def rollaxis(a: Any, axis: Any, start: Any = 0) -> Any:
    n = len(_shape(a))
    axis = _axis("rollaxis", axis, n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise refusal("rollaxis", f"'start' arg requires {-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = [k for k in range(n) if k != axis]
    order.insert(start, axis)
    return ops.transpose(a, tuple(order))


# -- the cross product -----------------------------------------------------------------------------


def cross(a: Any, b: Any, axisa: Any = -1, axisb: Any = -1, axisc: Any = -1, axis: Any = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = as_operand(a), as_operand(b)
    if not _shape(a) or not _shape(b):
        raise refusal("cross", "At least one array has zero dimension")
    a = ops.moveaxis(a, _axis("cross", axisa, len(_shape(a)), "axisa"), -1)
    b = ops.moveaxis(b, _axis("cross", axisb, len(_shape(b)), "axisb"), -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise refusal("cross", "incompatible dimensions for cross product (dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors instead. "
            "(deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
    dtype = np.promote_types(np.result_type(unwrap(a)), np.result_type(unwrap(b)))
    a, b = (ops.astype(v, dtype) if np.result_type(unwrap(v)) != dtype else v for v in (a, b))
    a0, a1, b0, b1 = (ops.getitem(v, (Ellipsis, i)) for v in (a, b) for i in (0, 1))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:  # the z component alone
        return z
    if na == 2:  # a2 = 0
        b2 = ops.getitem(b, (Ellipsis, 2))
        x, y = a1 * b2, -(a0 * b2)
    elif nb == 2:  # b2 = 0
        a2 = ops.getitem(a, (Ellipsis, 2))
        x, y = -(a2 * b1), a2 * b0
    else:
        a2, b2 = ops.getitem(a, (Ellipsis, 2)), ops.getitem(b, (Ellipsis, 2))
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    product = ops.stack([x, y, z], -1)
    return ops.moveaxis(product, -1, _axis("cross", axisc, len(_shape(product)), "axisc"))
