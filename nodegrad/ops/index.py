"""Indexing ops: ``x[index]`` and ``gather`` (``np.take``).

Their VJPs scatter the cotangent back with ``np.add.at`` semantics, so an index that
repeats accumulates. Out-of-bounds indices raise when the op is recorded.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from nodegrad.arena import record1, unwrap
from nodegrad.errors import OpIndexError, ShapeError, user_location
from nodegrad.ops.registry import defop

__all__ = ["gather", "getitem"]

_F = "index"
_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _is_basic(index: Any) -> bool:
    """True when the index selects each element at most once (no arrays)."""
    parts = index if isinstance(index, tuple) else (index,)
    return builtins.all(isinstance(p, _BASIC) for p in parts)


def _scatter(g: Any, x: Any, index: Any) -> Any:
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    if _is_basic(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


GETITEM = defop(
    "getitem",
    lambda x, index: x[index],
    lambda g, ans, x, index: _scatter(g, x, index),
    None,
    family=_F,
    doc="x[index] with numpy's basic and advanced indexing",
)
GATHER = defop(
    "gather",
    lambda x, indices, axis: np.take(x, indices, axis=axis),
    lambda g, ans, x, indices, axis: _scatter(g, x, (slice(None),) * axis + (indices,)),
    None,
    None,
    family=_F,
    doc="take entries of x at integer indices along an axis (np.take)",
)


def _static_index(index: Any) -> Any:
    """Replace traced values inside an index by their values; lists become arrays."""
    if isinstance(index, tuple):
        return tuple(_static_index(p) for p in index)
    index = unwrap(index)
    if isinstance(index, list):
        index = np.asarray(index)
    if isinstance(index, np.ndarray) and index.dtype.kind not in "biu":
        msg = (
            f"getitem: index arrays must hold integers or booleans, got dtype {index.dtype} [called at "
            f"{user_location()}]"
        )
        raise OpIndexError(msg)
    return index


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: ints, slices, ``None``, ``...``, integer arrays and boolean masks.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: x[np.array([0, 0, 2])].sum())(np.ones(3))
    array([2., 0., 1.])
    """
    return record1(GETITEM, x, _static_index(index))


def gather(x: Any, indices: Any, axis: int = 0) -> Any:
    """Take entries of ``x`` at integer ``indices`` along ``axis``, as ``np.take``.

    The result has shape ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
    Negative indices count from the end; out-of-range indices raise. Repeated indices
    accumulate their gradients.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> x = np.arange(6.0).reshape(3, 2)
    >>> ng.gather(x, np.array([2, 0])).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    >>> ng.grad(lambda x: ng.gather(x, np.array([1, 1]), axis=1).sum())(x)
    array([[0., 2.],
           [0., 2.],
           [0., 2.]])
    """
    indices = np.asarray(unwrap(indices))
    if indices.dtype.kind not in "iu":
        msg = f"gather: indices must be integers, got dtype {indices.dtype} [called at {user_location()}]"
        raise OpIndexError(msg)
    ndim = np.ndim(unwrap(x))
    if not -ndim <= axis < ndim:
        msg = f"gather: axis {axis} is out of range for shape {np.shape(unwrap(x))} [called at {user_location()}]"
        raise ShapeError(msg)
    return record1(GATHER, x, indices, int(axis) % ndim)
