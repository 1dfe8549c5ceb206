"""Data-pipeline ops on groups and rows: segment reductions, scatter, take-along-axis,
sorting and one-hot rows.

Segment ops reduce the rows of ``data`` (axis 0) into ``num_segments`` groups named by an
integer ``segment_ids`` array. ``scatter_add`` adds rows back at integer indices (the
inverse of ``gather``), and ``take_along_axis`` picks entries along an axis with an index
array, which is also how ``sort`` is differentiated: through its permutation.

Every rule here also runs on traced values (higher-order derivatives, ``jvp``): their
backward passes are recorded indexing and scatter ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import PER_EXAMPLE, has_values
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import defbatch, defop
from nodegrad.engine.staged import asarray
from nodegrad.engine.traced import unwrap
from nodegrad.errors import OpIndexError, ShapeError, user_location
from nodegrad.ops.arguments import as_ints, normalize_axis
from nodegrad.ops.batching import along_axis, to_batched
from nodegrad.ops.elementwise import divide
from nodegrad.ops.elementwise.arithmetic import all_values
from nodegrad.ops.index import getitem, index_add
from nodegrad.ops.shape import broadcast_to

__all__ = ["one_hot", "scatter_add", "segment_max", "segment_mean", "segment_sum", "sort", "take_along_axis"]

_F = "pipeline"


# -- segments ------------------------------------------------------------------------------------


def _int_array(value: Any) -> Any:
    """An index argument as an array, or as it is when batched (by ``vmap``)."""
    value = unwrap(value)
    return value if type(value) in PER_EXAMPLE else asarray(value)


def _segment_ids(op_name: str, data: Any, segment_ids: Any, num_segments: int | None) -> tuple[Any, int]:
    """Validate ``segment_ids`` against ``data`` and settle the number of segments (under
    ``vmap``, batched ids must give every example the same number unless it is given)."""
    ids = _int_array(segment_ids)
    rows = np.shape(unwrap(data))[:1]
    if ids.dtype.kind not in "iu" or ids.ndim != 1:
        msg = (
            f"{op_name}: segment_ids must be a 1-D integer array, got {ids.dtype}{list(ids.shape)} [called at "
            f"{user_location()}]"
        )
        raise OpIndexError(msg)
    if not rows or ids.shape[0] != rows[0]:
        msg = (
            f"{op_name}: segment_ids has {ids.shape[0]} entries but data of shape {np.shape(unwrap(data))} "
            f"has {rows[0] if rows else 'no'} rows [called at {user_location()}]"
        )
        raise ShapeError(msg)
    given = None if num_segments is None else as_ints(op_name, "num_segments", num_segments)[0]
    values = all_values(ids)  # every example's, under vmap
    if given is None and type(ids) in PER_EXAMPLE and values.size:
        counts = np.unique(values.max(axis=-1))
        if counts.size > 1:
            msg = (
                f"{op_name}: under vmap the examples' segment ids call for different numbers of segments (from "
                f"{counts[0] + 1} to {counts[-1] + 1}): pass num_segments [called at {user_location()}]"
            )
            raise ShapeError(msg)
    num = (int(values.max()) + 1 if values.size else 0) if given is None else given
    if values.size and (values.min() < 0 or values.max() >= num):
        msg = (
            f"{op_name}: segment ids must lie in [0, {num}), got values from {values.min()} to {values.max()} "
            f"[called at {user_location()}]"
        )
        raise OpIndexError(msg)
    return ids, num


def _segment_sum(data: Any, ids: np.ndarray, num: int) -> Any:
    out = np.zeros((num, *np.shape(data)[1:]), dtype=np.result_type(data))
    np.add.at(out, ids, data)
    return out


def _lowest(dtype: np.dtype) -> Any:
    """The identity of a maximum in ``dtype``: -inf, the least integer, or False."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return -np.inf


def _segment_max(data: Any, ids: np.ndarray, num: int) -> Any:
    dtype = np.result_type(data)
    out = np.full((num, *np.shape(data)[1:]), _lowest(dtype), dtype=dtype)
    np.maximum.at(out, ids, data)
    return out


def _segment_max_rule(g: Any, ans: Any, data: Any, ids: np.ndarray, num: int) -> Any:
    # Rows tied for their segment's maximum share its gradient evenly.
    hit = data == getitem(ans, ids)
    # Counted by the op (np.add.at of batched ids would add every example into one array).
    ties = record(SEGMENT_SUM, hit.astype(np.result_type(data)), ids, num)
    return getitem(g / np.where(ties == 0, 1, ties), ids) * hit


SEGMENT_SUM = defop(
    "segment_sum",
    _segment_sum,
    lambda g, ans, data, ids, num: getitem(g, ids),
    None,
    None,
    family=_F,
    doc="sum the rows of data that share a segment id",
)
SEGMENT_MAX = defop(
    "segment_max",
    _segment_max,
    _segment_max_rule,
    None,
    None,
    family=_F,
    doc="maximum over the rows of each segment (-inf when empty, or the integer minimum); ties share the gradient",
)


def _segment_batch(op: Any, batched: tuple[bool, ...], size: int, data: Any, ids: Any, num: int) -> Any:
    # The examples' rows become one list of rows, example b's ids offset by b * num: one
    # reduction into size * num segments, whose first num are example 0's, and so on.
    data = to_batched(data, batched[0], size)
    rows = np.shape(data)[1]
    offsets = np.arange(size)[:, None] * num
    flat_ids = np.reshape(to_batched(ids, batched[1], size) + offsets, (size * rows,))
    flat = np.reshape(data, (size * rows, *np.shape(data)[2:]))
    return np.reshape(record(op, flat, flat_ids, size * num), (size, num, *np.shape(data)[2:]))


defbatch(SEGMENT_SUM, _segment_batch)
defbatch(SEGMENT_MAX, _segment_batch)


def _indexed(op: Any, x: Any, idx: Any, *rest: Any) -> Any:
    """``op(x, idx, ...)`` recorded: by the general path when the indices are batched
    (:func:`record1` reads its first argument's level only)."""
    return (record if type(idx) in PER_EXAMPLE else record1)(op, x, idx, *rest)


@guarded
def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Sum the rows of ``data`` (axis 0) by group: ``out[s] = sum(data[segment_ids == s])``.

    Parameters
    ----------
    data : array_like, shape (N, ...)
        Rows to reduce.
    segment_ids : array_like of int, shape (N,)
        The segment of each row, in ``[0, num_segments)``; need not be sorted.
    num_segments : int, optional
        Number of segments; ``max(segment_ids) + 1`` by default. Empty segments are 0.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_sum(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]))
    array([4., 2.])
    """
    ids, num = _segment_ids("segment_sum", data, segment_ids, num_segments)
    return _indexed(SEGMENT_SUM, data, ids, num)


@guarded
def segment_mean(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Mean of the rows of ``data`` by group; an empty segment's mean is 0.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_mean(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]), num_segments=3)
    array([2., 2., 0.])
    """
    ids, num = _segment_ids("segment_mean", data, segment_ids, num_segments)
    # Counts in the data's own dtype: an int64 divisor would make float32 data float64.
    dtype = np.result_type(unwrap(data))
    if type(ids) in PER_EXAMPLE:  # every example's counts, by the same segment sum as the data's
        counts = record(SEGMENT_SUM, np.ones(np.shape(unwrap(data))[:1], dtype), ids, num)
    else:
        counts = np.bincount(ids, minlength=num).astype(dtype)
    counts = np.reshape(counts, (num,) + (1,) * (np.ndim(unwrap(data)) - 1))
    return divide(_indexed(SEGMENT_SUM, data, ids, num), np.maximum(counts, 1))


@guarded
def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Maximum of the rows of ``data`` by group; an empty segment gives ``-inf``.

    For integer data (no gradient) an empty segment gives the dtype's minimum
    (``np.iinfo(dtype).min``, 0 for unsigned), and for booleans False: the value a
    maximum starts from.

    Rows tied for a segment's maximum share its gradient evenly.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_max(np.array([1.0, 5.0, 3.0]), np.array([0, 1, 0]))
    array([3., 5.])
    """
    ids, num = _segment_ids("segment_max", data, segment_ids, num_segments)
    return _indexed(SEGMENT_MAX, data, ids, num)


# -- scatter and take-along-axis -----------------------------------------------------------------


def _check_indices(op_name: str, indices: Any, size: int) -> Any:
    idx = _int_array(indices)
    if idx.dtype.kind not in "iu":
        msg = f"{op_name}: indices must be integers, got dtype {idx.dtype} [called at {user_location()}]"
        raise OpIndexError(msg)
    values = all_values(idx)  # every example's, under vmap
    if has_values(values) and values.size and (values.min() < -size or values.max() >= size):
        msg = (
            f"{op_name}: index {values.max() if values.max() >= size else values.min()} is out of bounds for an axis "
            f"of size {size} [called at {user_location()}]"
        )
        raise OpIndexError(msg)
    return idx


@guarded
@composite
def scatter_add(x: Any, indices: Any, updates: Any, axis: int = 0) -> Any:
    """A copy of ``x`` with ``updates`` added at ``indices`` along ``axis``; the inverse of
    :func:`nodegrad.gather`. Repeated indices accumulate.

    ``updates`` has the shape ``gather(x, indices, axis)`` would have (or broadcasts to it).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.scatter_add(np.zeros(3), np.array([2, 0, 2]), np.array([1.0, 2.0, 3.0]))
    array([2., 0., 4.])
    """
    shape = np.shape(unwrap(x))
    axis = normalize_axis("scatter_add", axis, len(shape))[0]  # type: ignore[index]
    idx = _check_indices("scatter_add", indices, shape[axis])
    return index_add(x, updates, (slice(None),) * axis + (idx,))


def _along_axis_index(indices: np.ndarray, axis: int) -> tuple[Any, ...]:
    """The full index tuple that ``np.take_along_axis(x, indices, axis)`` reads."""
    grids = np.ogrid[tuple(slice(n) for n in indices.shape)]
    return tuple(indices if k == axis else grid for k, grid in enumerate(grids))


def _take_along_rule(g: Any, ans: Any, x: Any, indices: np.ndarray, axis: int) -> Any:
    return index_add(np.zeros(np.shape(x), dtype=np.result_type(g)), g, _along_axis_index(indices, axis))


TAKE_ALONG_AXIS = defop(
    "take_along_axis",
    lambda x, indices, axis: np.take_along_axis(x, indices, axis=axis),
    _take_along_rule,
    None,
    None,
    family=_F,
    doc="pick entries along an axis with an index array of matching shape (np.take_along_axis)",
    batch=along_axis(2, data=(0, 1)),
)


@guarded
@composite
def take_along_axis(x: Any, indices: Any, axis: int = -1) -> Any:
    """``np.take_along_axis``: entries of ``x`` picked along ``axis`` by ``indices``, which
    has ``x``'s number of dimensions (other axes broadcast). Repeats accumulate gradients.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> x = np.array([[10.0, 30.0, 20.0]])
    >>> ng.take_along_axis(x, np.array([[1, 1]]), axis=1)
    array([[30., 30.]])
    """
    shape = np.shape(unwrap(x))
    axis = normalize_axis("take_along_axis", axis, len(shape))[0]  # type: ignore[index]
    idx = _check_indices("take_along_axis", indices, shape[axis] if shape else 0)
    if idx.ndim == len(shape):
        # x broadcasts against the indices on the other axes too: do that first, as a node
        # of its own, so that the gradient's scatter sees x at its full size.
        wide = tuple(n if k == axis else max(n, m) for k, (n, m) in enumerate(zip(shape, idx.shape, strict=True)))
        if wide != shape and all(n in (1, w) for n, w in zip(shape, wide, strict=True)):
            x, shape = broadcast_to(x, wide), wide
    if idx.ndim != len(shape):
        msg = (
            f"take_along_axis: indices need {len(shape)} dimensions like x, got {idx.ndim} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    # Every axis but ``axis`` broadcasts between x and the indices: spell the indices out
    # in full so the gradient's scatter sees each position it reads.
    full = tuple(idx.shape[k] if k == axis else n for k, n in enumerate(shape))
    try:
        # (a batched idx: by arithmetic, which batches entry by entry, where np.where would not)
        wrapped = (
            idx + (idx < 0) * shape[axis] if type(idx) in PER_EXAMPLE else np.where(idx < 0, idx + shape[axis], idx)
        )
        idx = np.broadcast_to(wrapped, np.broadcast_shapes(idx.shape, full))
    except ValueError as exc:
        msg = (
            f"take_along_axis: indices of shape {idx.shape} do not fit x of shape {shape} [called at {user_location()}]"
        )
        raise ShapeError(msg) from exc
    return _indexed(TAKE_ALONG_AXIS, x, idx, axis)


@guarded
def sort(x: Any, axis: int = -1) -> Any:
    """Sort along ``axis`` (stable); the gradient flows back through the permutation.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.sort(x)[0] * 10.0 + ng.sort(x)[2])(np.array([3.0, 1.0, 2.0]))
    array([ 1., 10.,  0.])
    """
    axis = normalize_axis("sort", axis, np.ndim(unwrap(x)))[0]  # type: ignore[index]
    order = np.argsort(unwrap(x), axis=axis, kind="stable")
    return take_along_axis(x, order, axis)


@guarded
def one_hot(indices: Any, num_classes: int, dtype: Any = np.float64) -> np.ndarray:
    """One-hot rows for integer ``indices``: shape ``indices.shape + (num_classes,)``.

    A plain (non-differentiable) array; out-of-range indices raise.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.one_hot(np.array([2, 0]), 3)
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    idx = _int_array(indices)
    num_classes = as_ints("one_hot", "num_classes", num_classes)[0]
    values = all_values(idx)  # every example's, under vmap
    if idx.dtype.kind not in "iu" or (values.size and (values.min() < 0 or values.max() >= num_classes)):
        msg = f"one_hot: indices must be integers in [0, {num_classes}) [called at {user_location()}]"
        raise OpIndexError(msg)
    return (idx[..., None] == np.arange(num_classes)).astype(dtype)
