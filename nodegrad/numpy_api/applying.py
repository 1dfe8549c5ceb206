"""numpy's functions that apply a user's function to parts of an array, for traced arrays.

``np.apply_along_axis`` calls a function on every 1-D slice along an axis and
``np.apply_over_axes`` calls one repeatedly on the whole array, an axis at a time. numpy
collects the results into a plain buffer, which would drop their gradients; these versions
call the function on traced slices (nodegrad ops record them) and stack its results with
nodegrad ops, so the result is differentiable whenever the applied function is, with
numpy's output shapes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.numpy_api.arguments import refusal
from nodegrad.ops.arguments import normalize_axis

__all__ = ["apply_along_axis", "apply_over_axes"]


def _as_result(value: Any) -> Any:
    return value if type(value) in INTERPRETED else np.asanyarray(value)


def apply_along_axis(func1d: Callable[..., Any], axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    shape = np.shape(unwrap(arr))
    axis = normalize_axis("np.apply_along_axis", axis, len(shape))[0]  # type: ignore[index]
    # arr with the axis last: each result is func1d of one row of it
    rest = [a for a in range(len(shape)) if a != axis]
    moved = ops.transpose(arr, (*rest, axis))
    outer = tuple(shape[a] for a in rest)
    if 0 in outer:
        raise refusal("apply_along_axis", "Cannot apply_along_axis when any iteration dimensions are 0")
    results = [
        _as_result(func1d(ops.getitem(moved, (*index, Ellipsis)), *args, **kwargs))
        for index in itertools.product(*map(range, outer))
    ]
    shapes = {np.shape(unwrap(r)) for r in results}
    if len(shapes) > 1:
        raise refusal("apply_along_axis", f"the function returned results of different shapes {sorted(shapes)}")
    result_ndim = len(shapes.pop())
    if not any(type(r) in INTERPRETED for r in results):
        stacked: Any = np.stack(results)
    else:
        stacked = ops.stack(results, 0)
    stacked = ops.reshape(stacked, (*outer, *np.shape(unwrap(results[0]))))
    # the result's own axes take the place of the axis
    dims = list(range(len(outer) + result_ndim))
    permutation = dims[:axis] + dims[len(outer) :] + dims[axis : len(outer)]
    return ops.transpose(stacked, tuple(permutation))


def apply_over_axes(func: Callable[..., Any], a: Any, axes: Any) -> Any:
    value = a
    ndim = np.ndim(unwrap(a))
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = axis + ndim if axis < 0 else axis
        result = _as_result(func(value, axis))
        if np.ndim(unwrap(result)) != np.ndim(unwrap(value)):
            result = ops.expand_dims(result, axis)
            if np.ndim(unwrap(result)) != np.ndim(unwrap(value)):
                raise refusal("apply_over_axes", "function is not returning an array of the correct shape")
        value = result
    return value
