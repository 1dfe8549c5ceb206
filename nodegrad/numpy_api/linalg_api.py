"""numpy.linalg's array-API functions, built from the ops.

``np.linalg.matmul``, ``outer``, ``tensordot``, ``trace``, ``diagonal``, ``cross``,
``vecdot`` and ``matrix_transpose`` are objects of their own, not numpy's top-level
functions: positional-only operands, keyword-only options, and the matrix axes always the
last two (``np.linalg.trace`` sums the diagonals of the last two axes, ``np.trace`` of the
first two). ``np.linalg.multi_dot`` chains matrix products and ``np.linalg.cond`` divides
singular values (or multiplies the norms of a matrix and of its inverse). Each is written
as a composition of nodegrad ops, so the gradients come from the ops' own rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, MatrixShapeError, NodegradError, ShapeError, user_location
from nodegrad.numpy_api.arguments import refusal
from nodegrad.numpy_api.composed import diagonal as composed_diagonal
from nodegrad.numpy_api.shaping import cross as shaping_cross
from nodegrad.ops.arguments import normalize_axis

__all__ = [
    "cond",
    "cross",
    "diagonal",
    "matmul",
    "matrix_transpose",
    "multi_dot",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
]


def _shape(x: Any) -> tuple[int, ...]:
    return np.shape(unwrap(x))


def _matrices(name: str, x: Any, kind: type[NodegradError] = ShapeError) -> None:
    if len(_shape(x)) < 2:
        raise refusal(name, f"needs at least two dimensions, got shape {_shape(x)}", kind)


def matmul(x1: Any, x2: Any, /) -> Any:
    return ops.matmul(x1, x2)


def outer(x1: Any, x2: Any, /) -> Any:
    if len(_shape(x1)) != 1 or len(_shape(x2)) != 1:
        ndims = f"x1.ndim={len(_shape(x1))} and x2.ndim={len(_shape(x2))}"
        raise refusal("linalg.outer", f"Input arrays must be one-dimensional, but they are {ndims}.")
    return ops.outer(x1, x2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return ops.tensordot(x1, x2, axes)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    _matrices("linalg.diagonal", x)
    return composed_diagonal(x, offset, -2, -1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    _matrices("linalg.trace", x)
    if dtype is not None and np.dtype(dtype) != np.result_type(unwrap(x)):
        if not np.issubdtype(np.dtype(dtype), np.floating):
            msg = f"np.linalg.trace: dtype={dtype!r} is not a float dtype [called at {user_location()}]"
            raise ArgumentError(msg)
        x = ops.astype(x, dtype)
    return ops.sum(composed_diagonal(x, offset, -2, -1), -1)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    for x in (x1, x2):
        if not _shape(x):
            raise refusal("linalg.cross", "At least one array has zero dimension")
        normalize_axis("np.linalg.cross", axis, len(_shape(x)))
    n1, n2 = _shape(x1)[axis], _shape(x2)[axis]
    if n1 != 3 or n2 != 3:
        what = f"but they are {n1} and {n2} dimensional instead."
        raise refusal("linalg.cross", f"Both input arrays must be (arrays of) 3-dimensional vectors, {what}")
    return shaping_cross(x1, x2, axis=axis)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    moved = []
    for x in (x1, x2):
        if not _shape(x):
            raise refusal("linalg.vecdot", "the operands need at least one dimension, got a scalar")
        ax = normalize_axis("np.linalg.vecdot", axis, len(_shape(x)))[0]  # type: ignore[index]
        moved.append(ops.moveaxis(x, ax, -1))
    n, m = _shape(moved[0])[-1], _shape(moved[1])[-1]
    if n != m:
        raise refusal("linalg.vecdot", f"the vectors have {n} and {m} entries")
    first = ops.conj(moved[0]) if np.iscomplexobj(unwrap(moved[0])) else moved[0]  # numpy conjugates x1
    return ops.sum(ops.multiply(first, moved[1]), -1)


def matrix_transpose(x: Any, /) -> Any:
    if len(_shape(x)) < 2:
        raise refusal("matrix_transpose", "Input array must be at least 2-dimensional")
    return ops.swapaxes(x, -1, -2)


def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    if out is not None:
        msg = f"np.linalg.multi_dot: out= is not supported on traced values [called at {user_location()}]"
        raise ArgumentError(msg)
    arrays = list(arrays)
    if len(arrays) < 2:
        raise refusal("linalg.multi_dot", "Expecting at least two arrays.")
    if len(arrays) == 2:
        return ops.dot(arrays[0], arrays[1])
    first, last = len(_shape(arrays[0])), len(_shape(arrays[-1]))
    if first == 1:
        arrays[0] = ops.reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = ops.reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if len(_shape(a)) != 2:
            what = f"{len(_shape(a))}-dimensional array given. Array must be two-dimensional"
            raise refusal("linalg.multi_dot", what)
    result = arrays[0]
    for a in arrays[1:]:
        result = ops.matmul(result, a)
    if first == 1 and last == 1:
        return ops.getitem(result, (0, 0))
    return ops.ravel(result) if first == 1 or last == 1 else result


def cond(x: Any, p: Any = None) -> Any:
    _matrices("linalg.cond", x, MatrixShapeError)  # numpy's LinAlgError, as numpy raises
    if 0 in _shape(x)[-2:]:
        raise refusal("linalg.cond", "cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = ops.svdvals(x)
        largest, smallest = ops.getitem(s, (Ellipsis, 0)), ops.getitem(s, (Ellipsis, -1))
        return smallest / largest if p == -2 else largest / smallest
    rows, cols = _shape(x)[-2:]
    if rows != cols:
        raise refusal("linalg.cond", "Last 2 dimensions of the array must be square", MatrixShapeError)
    return ops.norm(x, p, (-2, -1)) * ops.norm(ops.inv(x), p, (-2, -1))
