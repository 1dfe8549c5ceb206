"""Checking op arguments that are not arrays: axes, tuples of ints and indices.

Every family reads ``axis=``, shapes and counts the same way, and says which op refused
what, so these live below all of them. :func:`batched_index` reads an index the way numpy
does, to run ``x[index]`` for every example at once inside ``vmap``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED, PER_EXAMPLE, find_top
from nodegrad.errors import AxisError, BatchingError, OpIndexError, ShapeError, user_location

__all__ = [
    "Each",
    "as_ints",
    "axes_of",
    "axis_index",
    "batched_index",
    "holds_batched",
    "index_items",
    "normalize_axis",
]


def as_ints(op_name: str, what: str, value: Any) -> tuple[int, ...]:
    """``value`` (an int or a sequence of ints) as a tuple of ints, or a ShapeError naming
    the op: floats are not silently truncated, strings not taken apart."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        value = value.tolist()
    items = value if isinstance(value, (tuple, list)) else (value,)
    try:
        if isinstance(value, (str, bytes)) or any(isinstance(v, (bool, str)) for v in items):
            raise TypeError
        return tuple(operator.index(v) for v in items)
    except TypeError:
        msg = f"{op_name}: {what} must be an int or a sequence of ints, got {value!r} [called at {user_location()}]"
        raise ShapeError(msg) from None


def axis_index(op_name: str, axis: Any, ndim: int, what: str = "an array") -> int:
    """One ``axis`` of an array of ``ndim`` dimensions as a non-negative int (a 0-d array's
    axis 0 or -1 as 0, as numpy's reductions take it): the one place every op and every
    batching rule checks an axis. Raises :class:`~nodegrad.errors.AxisError` naming the op
    where numpy raises its ``AxisError``; ``what`` says what has the ``ndim`` dimensions."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        msg = f"{op_name}: axis must be an int or a tuple of ints, got {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        msg = f"{op_name}: axis {axis} is out of range for {what} of {ndim} dimensions [called at {user_location()}]"
        raise AxisError(msg)
    return int(axis) % max(ndim, 1)


def normalize_axis(op_name: str, axis: Any, ndim: int) -> tuple[int, ...] | None:
    """Turn ``axis`` (None, int or sequence) into a sorted tuple of non-negative axes.

    Raises :class:`~nodegrad.errors.AxisError` naming the op when an axis is out of range,
    a :class:`~nodegrad.errors.ShapeError` when one is repeated.
    """
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        msg = f"{op_name}: axis must be an int or a tuple of ints, got {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    if ndim == 0 and all(isinstance(a, (int, np.integer)) and a in (0, -1) for a in axes):
        return ()  # numpy lets a 0-d array be reduced over "axis 0": nothing to reduce
    out = [axis_index(op_name, a, ndim) for a in axes]
    if len(set(out)) != len(out):
        msg = f"{op_name}: repeated axis in {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return tuple(sorted(out))


def axes_of(op_name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """:func:`normalize_axis` for ops whose ``axis`` is given: the axes as a sorted tuple."""
    return normalize_axis(op_name, axis, ndim) or ()


# -- indices under vmap ----------------------------------------------------------------------


class Each:
    """An index array that differs from example to example: ``value`` holds every example's
    array stacked along axis 0 (the value of a batched index at the running level)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def holds_batched(index: Any) -> bool:
    """Whether ``index`` is a batched value or a tuple holding one: the op must then be
    recorded by the general path, which looks inside tuples for batched values."""
    return type(index) in PER_EXAMPLE or (type(index) is tuple and any(type(p) in PER_EXAMPLE for p in index))


def index_items(index: Any, is_batched: bool) -> list[Any]:
    """The items of an index as a batching rule receives it (``is_batched``: it is, or
    holds, a value batched at the running level), those batched at that level as
    :class:`Each`. Batched items of an enclosing level stay as they are: arrays the same
    for every example at this level."""
    if not is_batched:
        return list(index) if type(index) is tuple else [index]
    if type(index) is not tuple:
        return [Each(index)]  # the index itself, batched: the rule was given its value
    # The running level is the innermost among the op's arguments, and one of these items has it.
    top = find_top(index, PER_EXAMPLE)
    return [Each(p.value) if type(p) in PER_EXAMPLE and p.level is top.level else p for p in index]


def _is_array(p: Any) -> bool:
    return isinstance(p, np.ndarray) or type(p) in INTERPRETED or type(p) is Each


def _shape_of(p: Any) -> tuple[int, ...]:
    return tuple(np.shape(p.value)[1:]) if type(p) is Each else tuple(np.shape(p))


def _plain_items(op_name: str, items: list[Any]) -> list[Any] | None:
    """``items`` with boolean masks as the integer arrays they stand for, or ``None`` for a
    boolean scalar in the index (rare: run once per example). A mask that differs from example
    to example selects a different number of entries in each: refused."""
    found: list[Any] = []
    for p in items:
        dtype = getattr(p.value if type(p) is Each else p, "dtype", None)
        if (type(p) is Each or type(p) in PER_EXAMPLE) and dtype is not None and dtype.kind == "b":
            msg = (
                f"{op_name}: a boolean mask that differs from example to example selects a different number of "
                f"entries in each, so the result has no one shape under vmap; use np.where(mask, x, 0) (or a "
                f"product with the mask) instead [called at {user_location()}]"
            )
            raise BatchingError(msg)
        if type(p) is Each and dtype is not None and dtype.kind not in "iu":
            msg = f"{op_name}: index arrays must hold integers, got dtype {dtype} [called at {user_location()}]"
            raise OpIndexError(msg)
        if isinstance(p, bool | np.bool_) or (isinstance(p, np.ndarray) and p.dtype.kind == "b" and p.ndim == 0):
            return None
        if isinstance(p, np.ndarray) and p.dtype.kind == "b":
            found.extend(np.nonzero(p))  # what numpy reads a mask as: one integer array per axis it covers
        else:
            found.append(p)
    return found


def batched_index(
    op_name: str, items: list[Any], example_ndim: int, size: int
) -> tuple[tuple[Any, ...], tuple[int, ...] | None, int] | None:
    """The index that selects ``x[items]`` of every example from ``x`` batched along axis 0
    (``items`` from :func:`index_items`, an example of ``x`` having ``example_ndim`` axes):
    ``(index, perm, ndim)``, where the selection is ``transpose(x_batched[index], perm)``
    (``perm`` ``None``: as it is), and one example of it has ``ndim`` axes. ``None`` for
    an index better run once per example.

    numpy puts the axes of the advanced (array and, with them, integer) items where the
    first of them is when they are adjacent, else in front: with the examples' axis as one
    more item in front, those axes are moved back where one example's would be. An index
    array batched per example becomes, with ``arange(size)`` on the examples' axis, part
    of one advanced index that picks every example's entries at once.
    """
    parts = _plain_items(op_name, items)
    if parts is None:
        return None
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    spread = max(example_ndim - consumed, 0)  # the axes an Ellipsis (or the end) stands for

    def dims(p: Any) -> int:  # the axes of the selection a basic item gives
        return 1 if type(p) is slice or p is None else spread if p is Ellipsis else 0

    ellipsis = any(p is Ellipsis for p in parts)
    if not any(_is_array(p) for p in parts):
        return (slice(None), *parts), None, sum(dims(p) for p in parts) + (0 if ellipsis else spread)
    advanced = [k for k, p in enumerate(parts) if _is_array(p) or isinstance(p, int | np.integer)]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    try:
        common = np.broadcast_shapes(*(_shape_of(parts[k]) for k in advanced))
    except ValueError:
        shapes = ", ".join(str(_shape_of(parts[k])) for k in advanced)
        msg = f"{op_name}: index arrays of shapes {shapes} do not broadcast together [called at {user_location()}]"
        raise OpIndexError(msg) from None
    n = len(common)
    ndim = n + sum(dims(p) for p in parts) + (0 if ellipsis else spread)
    if not any(type(p) is Each for p in parts):
        # (examples, *items): adjacent advanced items keep the examples' axis in front of their
        # axes; apart, theirs come first, then the examples'.
        return (slice(None), *parts), None if adjacent else (n, *range(n), *range(n + 1, ndim + 1)), ndim
    fitted = [_aligned(p.value, n, size) if type(p) is Each else p for p in parts]
    index = (np.arange(size).reshape((size,) + (1,) * n), *fitted)
    # The examples' arange joins the advanced items, whose axes then come first (after the
    # examples'); adjacent ones belong after the basic items in front of them.
    before = sum(dims(p) for p in parts[: advanced[0]]) if adjacent else 0
    if not before:
        return index, None, ndim
    return index, (0, *range(1 + n, 1 + n + before), *range(1, 1 + n), *range(1 + n + before, ndim + 1)), ndim


def _aligned(value: Any, ndim: int, size: int) -> Any:
    """A batched index array's value with size-1 axes after the examples' axis, so that its
    example axes line up (from the right) with the other index arrays' ``ndim`` axes."""
    shape = np.shape(value)
    return np.reshape(value, (size, *(1,) * (ndim - len(shape) + 1), *shape[1:]))
