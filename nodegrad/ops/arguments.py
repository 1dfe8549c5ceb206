"""Checking op arguments that are not arrays: axes and tuples of ints.

Every family reads ``axis=``, shapes and counts the same way, and says which op refused
what, so these live below all of them.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from nodegrad.errors import ShapeError, user_location

__all__ = ["as_ints", "axes_of", "normalize_axis"]


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


def normalize_axis(op_name: str, axis: Any, ndim: int) -> tuple[int, ...] | None:
    """Turn ``axis`` (None, int or sequence) into a sorted tuple of non-negative axes.

    Raises a :class:`ShapeError` naming the op when an axis is out of range or repeated.
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
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < max(ndim, 1):
            msg = (
                f"{op_name}: axis {axis!r} is out of range for an array of {ndim} dimensions [called at "
                f"{user_location()}]"
            )
            raise ShapeError(msg)
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        msg = f"{op_name}: repeated axis in {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return tuple(sorted(out))


def axes_of(op_name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """:func:`normalize_axis` for ops whose ``axis`` is given: the axes as a sorted tuple."""
    return normalize_axis(op_name, axis, ndim) or ()
