"""Indexing ops: ``x[index]`` and ``gather`` (``np.take``); ``flip`` and ``split``, built on them.

Their VJPs scatter the cotangent back with ``np.add.at`` semantics, so an index that
repeats accumulates. Out-of-bounds indices raise when the op is recorded.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import PER_EXAMPLE
from nodegrad.engine.record import record, record1, record2
from nodegrad.engine.registry import defop, defrows
from nodegrad.engine.staged import FOREIGN_INDEXING, asarray
from nodegrad.engine.traced import unwrap
from nodegrad.errors import AxisError, OpIndexError, ShapeError, error_like, user_location
from nodegrad.ops.arguments import Each, as_ints, axes_of, axis_index, batched_index, holds_batched, index_items
from nodegrad.ops.batching import per_example, to_batched
from nodegrad.ops.shape import RESHAPE, TRANSPOSE, ravel

__all__ = ["at", "flip", "gather", "getitem", "index_add", "index_set", "scatter", "split"]

_F = "index"
_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _is_basic(index: Any) -> bool:
    """True when the index selects each element at most once (no arrays)."""
    parts = index if isinstance(index, tuple) else (index,)
    return builtins.all(isinstance(p, _BASIC) for p in parts)


_PAIRS = {np.dtype(np.float64): np.complex128, np.dtype(np.float32): np.complex64}


def _scatter_rows(out: np.ndarray, index: np.ndarray, v: Any) -> None:
    """``np.add.at(out, index, v)`` for rows picked by one integer array.

    numpy's add.at is fast for 1-D targets and slow for rows of a 2-D one, so the rows
    are added column by column; viewing pairs of float columns as one complex column
    halves the number of passes (complex addition adds the two parts independently, so
    the result is bit for bit the same).
    """
    if out.ndim == 1 and type(v) is np.ndarray and v.shape == index.shape:
        np.add.at(out, index, v)  # 1-D: numpy's own fast path
        return
    rows, inner = out.shape[0], math.prod(out.shape[1:])
    flat_out = out.reshape(rows, inner)
    full = index.shape + out.shape[1:]
    if type(v) is not np.ndarray or v.shape != full:
        v = np.broadcast_to(v, full)
    flat_v = np.ascontiguousarray(v, dtype=out.dtype).reshape(index.size, inner)
    flat_index = index.reshape(-1)
    if index.size < 64:
        # Few rows: one call costs less than one per column (measured crossover ~75 rows).
        np.add.at(flat_out, flat_index, flat_v)
        return
    pair = _PAIRS.get(out.dtype)
    if pair is not None and flat_out.shape[1] % 2 == 0 and flat_out.shape[1] > 1:
        flat_out, flat_v = flat_out.view(pair), flat_v.view(pair)
    for column in range(flat_out.shape[1]):
        np.add.at(flat_out[:, column], flat_index, flat_v[:, column])


def _in_order_and_whole(shape: tuple[int, ...], index: Any, v: Any) -> bool:
    """A basic ``index`` that picks every element of ``shape`` once, in order (integers
    only on axes of length 1, slices without a negative step), with a ``v`` of that many
    entries: ``x[index]`` is then a reshape of ``x``, and scattering ``v`` a reshape of ``v``."""
    parts = index if isinstance(index, tuple) else (index,)
    if not builtins.all(isinstance(p, _BASIC) for p in parts) or sum(p is Ellipsis for p in parts) > 1:
        return False
    consumed = [p for p in parts if p is not None and p is not Ellipsis]
    if len(consumed) > len(shape):
        return False
    at = parts.index(Ellipsis) if Ellipsis in parts else len(parts)
    before = [p for p in parts[:at] if p is not None]
    after = [p for p in parts[at + 1 :] if p is not None]
    axes = before + [slice(None)] * (len(shape) - len(consumed)) + after
    picked = 1
    for part, n in zip(axes, shape, strict=True):
        if type(part) is slice:
            if part.step is not None and part.step < 0:
                return False
            picked *= len(range(*part.indices(n)))
        # an integer picks one entry of its axis: the whole axis only if it has one
    total = math.prod(shape)
    return picked == total and np.size(v) == total


def _scatter(shape: tuple[int, ...], index: Any, v: Any) -> Any:
    """Zeros of ``shape`` with ``v`` added at ``index`` (``np.add.at`` semantics)."""
    if _in_order_and_whole(shape, index, v):
        return np.reshape(v, shape)  # pred[:, 0] of a column: nothing to scatter
    out = np.zeros(shape, dtype=np.result_type(v))
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and shape:
        _scatter_rows(out, index, v)
    elif _is_basic(index):
        out[index] = v  # each element is selected at most once
    else:
        _add_at(out, index, v)
    return out


def _getitem(x: Any, index: Any) -> Any:
    # Rows picked by one integer array: np.take does the same (bounds checked, negative
    # indices counted from the end) several times faster than fancy indexing.
    if type(index) is np.ndarray and index.dtype.kind in "iu" and type(x) is np.ndarray and x.ndim:
        return np.take(x, index, axis=0)
    return x[index]


def _add_at(out: np.ndarray, index: Any, v: Any) -> None:
    # numpy 2.4's add.at misreads values that broadcast along a multi-dimensional index,
    # so spell the values out at the selected shape first.
    selected = np.broadcast_to(np.empty((), out.dtype), out.shape)[index].shape
    np.add.at(out, index, np.array(np.broadcast_to(v, selected)))


def _index_add(x: Any, v: Any, index: Any) -> Any:
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    if _is_basic(index):
        out[index] += v  # each element is selected at most once
    else:
        _add_at(out, index, v)
    return out


def _index_set(x: Any, v: Any, index: Any) -> Any:
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    out[index] = v
    return out


# -- batching rules (see nodegrad.ops.batching and nodegrad.ops.arguments.batched_index) ------


def _selection(op: Any, batched: tuple[bool, ...], size: int, x: Any, items: list[Any], *rest: Any) -> Any:
    """``x[items]`` (``op`` is getitem) for every example: one getitem and, where numpy's
    rules put the examples' axis elsewhere, one transpose."""
    found = batched_index("getitem", items, np.ndim(x) - batched[0], size)
    if found is None:
        return per_example(op, batched, size, x, *rest)
    index, perm, _ = found
    out = record(GETITEM, to_batched(x, batched[0], size), index)
    return out if perm is None else record(TRANSPOSE, out, perm)


def _getitem_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, index: Any) -> Any:
    return _selection(op, batched, size, x, index_items(index, batched[1]), index)


def _gather_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, indices: Any, axis: int) -> Any:
    if not batched[1]:
        return record(op, x, indices, axis + 1)
    # Indices of their own per example: np.take(x, i, axis) is x[:, ..., i] (negative indices
    # count from the end in both).
    return _selection(op, batched, size, x, [*(slice(None),) * axis, Each(indices)], indices, axis)


def _into_selection(v: Any, is_batched: bool, size: int, ndim: int, perm: tuple[int, ...] | None) -> Any:
    """``v`` (of one example, or of every example along axis 0) laid out as the batched
    selection ``x_batched[index]`` of :func:`~nodegrad.ops.arguments.batched_index` is:
    one example's axes aligned to the right of the selection's ``ndim``, then permuted."""
    if perm is None and not is_batched:
        return v  # broadcasts against every example's selection as it is
    shape = np.shape(v)
    lead, example = (shape[:1], shape[1:]) if is_batched else ((1,), shape)
    v = record(RESHAPE, v, (*lead, *(1,) * (ndim - len(example)), *example))
    return v if perm is None else record(TRANSPOSE, v, tuple(int(a) for a in np.argsort(perm)))


def _scatter_batch(op: Any, batched: tuple[bool, ...], size: int, v: Any, index: Any, shape: Any) -> Any:
    found = batched_index(op.name, index_items(index, batched[1]), len(shape), size)
    if found is None:
        return per_example(op, batched, size, v, index, shape)
    new, perm, ndim = found
    return record(op, _into_selection(v, batched[0], size, ndim, perm), new, (size, *shape))


def _update_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, v: Any, index: Any) -> Any:
    shape = np.shape(x)[1:] if batched[0] else np.shape(x)
    found = batched_index(op.name, index_items(index, batched[2]), len(shape), size)
    if found is None:
        return per_example(op, batched, size, x, v, index)
    new, perm, ndim = found
    if op is INDEX_SET and batched[2]:
        _check_once(new, (size, *shape))
    return record(op, to_batched(x, batched[0], size), _into_selection(v, batched[1], size, ndim, perm), new)


def _check_once(index: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    """index_set's check, for an index of its own per example: no element written twice."""
    if any(type(p) in PER_EXAMPLE for p in index):
        return  # batched by an enclosing vmap too: its rule checks the whole index
    hits = np.zeros(shape, dtype=np.intp)
    try:
        np.add.at(hits, index, 1)
    except IndexError:
        return  # out of range: the forward says so
    if hits.size and hits.max() > 1:
        msg = (
            "index_set: the index selects an element more than once, so which value is written would be "
            f"arbitrary; use .add, or make the index unique [called at {user_location()}]"
        )
        raise OpIndexError(msg)


# x[index] and the functional updates are each other's VJPs, so every rule below is again
# made of these ops and differentiates once more.
GETITEM = defop(
    "getitem",
    _getitem,
    lambda g, ans, x, index: scatter(g, index, np.shape(x)),
    None,
    family=_F,
    doc="x[index] with numpy's basic and advanced indexing",
    batch=_getitem_batch,
)
SCATTER = defop(
    "scatter",
    lambda v, index, shape: _scatter(shape, index, v),
    lambda g, ans, v, index, shape: getitem(g, index),
    None,
    None,
    family=_F,
    broadcasts=True,
    doc="zeros of a shape with v added at index: the VJP of x[index]",
    batch=_scatter_batch,
)
INDEX_ADD = defop(
    "index_add",
    _index_add,
    lambda g, ans, x, v, index: g,
    lambda g, ans, x, v, index: getitem(g, index),
    None,
    family=_F,
    broadcasts=True,
    doc="a copy of x with v added at index; repeated indices accumulate",
    batch=_update_batch,
)
INDEX_SET = defop(
    "index_set",
    _index_set,
    lambda g, ans, x, v, index: index_set(g, 0, index),
    lambda g, ans, x, v, index: getitem(g, index),
    None,
    family=_F,
    broadcasts=True,
    doc="a copy of x with v written at index (each element at most once)",
    batch=_update_batch,
)
GATHER = defop(
    "gather",
    lambda x, indices, axis: np.take(x, indices, axis=axis),
    lambda g, ans, x, indices, axis: scatter(g, indices if axis == 0 else _along(axis, indices), np.shape(x)),
    None,
    None,
    family=_F,
    doc="take entries of x at integer indices along an axis (np.take)",
    batch=_gather_batch,
)


def _rows_of(x: Any, index: Any) -> Any:
    """The flat positions of the rows of ``x`` that ``x[index]`` reads, when ``index``
    takes whole rows: an int, a slice, an integer array or a mask of rows, alone or followed
    by ``:`` and ``...``; else ``None``. (What makes ``x[index]`` a row gather for
    row-sparse gradients.)"""
    if type(index) is tuple:
        if not index or not builtins.all(p is Ellipsis or (type(p) is slice and p == slice(None)) for p in index[1:]):
            return None
        index = index[0]
    if np.ndim(x) == 0:
        return None
    n = np.shape(x)[0]
    if isinstance(index, int | np.integer) and not isinstance(index, bool | np.bool_):
        return np.array([int(index) % n], np.intp)
    if type(index) is slice:
        return np.arange(*index.indices(n))
    kind = getattr(getattr(index, "dtype", None), "kind", None)
    if kind == "b":
        return np.flatnonzero(index) if np.shape(index) == (n,) else None
    return _flat_rows(index, n) if kind in ("i", "u") else None


def _flat_rows(indices: Any, n: int) -> Any:
    """Integer ``indices`` into ``n`` rows, flat, each counted from the start."""
    flat = indices.ravel()
    return np.where(flat < 0, flat + n, flat) if flat.dtype.kind == "i" else flat


defrows(GETITEM, _rows_of)
defrows(GATHER, lambda x, indices, axis: _flat_rows(indices, np.shape(x)[0]) if axis == 0 else None)


def _along(axis: int, indices: Any) -> tuple[Any, ...]:
    """The index selecting ``indices`` along ``axis``, as ``np.take`` does."""
    return (slice(None),) * axis + (indices,)


def _static_index(index: Any, op_name: str = "getitem") -> Any:
    """Replace traced values inside an index by their values; lists become arrays."""
    if type(index) is tuple and builtins.all(isinstance(p, _BASIC) for p in index):
        return index  # ints and slices: the common case
    if isinstance(index, tuple):
        return tuple(_static_index(p, op_name) for p in index)
    index = unwrap(index)
    if isinstance(index, list):
        try:
            index = np.asarray(index)
        except ValueError as exc:  # ragged nested lists
            msg = f"{op_name}: the index list is ragged ({exc}) [called at {user_location()}]"
            raise OpIndexError(msg) from None
        if index.size == 0:
            index = index.astype(np.intp)  # numpy reads an empty list as an empty integer index
    if isinstance(index, np.ndarray) and index.dtype.kind not in "biu":
        msg = (
            f"{op_name}: index arrays must hold integers or booleans, got dtype {index.dtype} [called at "
            f"{user_location()}]"
        )
        raise OpIndexError(msg)
    return index


def scatter(v: Any, index: Any, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` with ``v`` added at ``index``; repeated indices accumulate. The
    VJP of ``x[index]``, and the other way round.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.index import scatter
    >>> scatter(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 0]), (3,))
    array([4., 0., 2.])
    """
    index = _static_index(index, "scatter")
    return (record if holds_batched(index) else record1)(SCATTER, v, index, tuple(shape))


@guarded
def index_add(x: Any, v: Any, index: Any) -> Any:
    """A copy of ``x`` with ``v`` added at ``index``; repeated indices accumulate.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.index import index_add
    >>> index_add(np.zeros(3), 1.0, np.array([0, 0, 2]))
    array([2., 0., 1.])
    """
    index = _static_index(index, "index_add")
    return (record if holds_batched(index) else record2)(INDEX_ADD, x, v, index)


@guarded
def index_set(x: Any, v: Any, index: Any) -> Any:
    """A copy of ``x`` with ``v`` written at ``index``; an element may be selected once only.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.index import index_set
    >>> index_set(np.zeros(3), 5.0, slice(1, None))
    array([0., 5., 5.])
    """
    index = _static_index(index, "index_set")
    if holds_batched(index):  # each example's index is checked by the batching rule
        return record(INDEX_SET, x, v, index)
    if not _is_basic(index):
        hits = np.zeros(np.shape(unwrap(x)), dtype=np.intp)
        try:
            np.add.at(hits, index, 1)
        except IndexError as exc:
            msg = f"index_set: {exc} [called at {user_location()}]"
            raise OpIndexError(msg) from exc
        if hits.size and hits.max() > 1:
            msg = (
                "index_set: the index selects an element more than once, so which value is written "
                f"would be arbitrary; use .add, or make the index unique [called at {user_location()}]"
            )
            raise OpIndexError(msg)
    return record2(INDEX_SET, x, v, index)


class _At:
    """``at(x)[index]``: the place a functional update writes to."""

    def __init__(self, x: Any) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> _AtIndex:
        return _AtIndex(self._x, index)


class _AtIndex:
    def __init__(self, x: Any, index: Any) -> None:
        self._x = x
        self._index = index

    def set(self, v: Any) -> Any:
        """A copy of the array with ``v`` written at the index (differentiable in both)."""
        return index_set(self._x, v, self._index)

    def add(self, v: Any) -> Any:
        """A copy of the array with ``v`` added at the index; repeats accumulate."""
        return index_add(self._x, v, self._index)


@guarded
def at(x: Any) -> _At:
    """Functional updates of an array: ``at(x)[index].set(v)`` and ``at(x)[index].add(v)``.

    Both return a new array and leave ``x`` alone; both are differentiable in ``x`` and
    ``v`` (``v`` broadcasts to the selected shape). ``add`` accumulates repeated indices as
    ``np.add.at`` does; ``set`` refuses an index that selects an element twice.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> x = np.zeros(4)
    >>> ng.at(x)[1:3].set(7.0)
    array([0., 7., 7., 0.])
    >>> ng.grad(lambda v: ng.sum(ng.at(x)[np.array([0, 0])].add(v) ** 2.0))(1.0)
    8.0
    """
    return _At(x)


@guarded
def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: ints, slices, ``None``, ``...``, integer arrays and boolean masks.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: x[np.array([0, 0, 2])].sum())(np.ones(3))
    array([2., 0., 1.])
    """
    index = _static_index(index)
    # An index holding batched values: the general path, which looks inside the index.
    return (record if holds_batched(index) else record1)(GETITEM, x, index)


@guarded
def gather(x: Any, indices: Any, axis: int | None = 0) -> Any:
    """Take entries of ``x`` at integer ``indices`` along ``axis``, as ``np.take``.

    The result has shape ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``;
    ``axis=None`` takes from the flattened ``x``.
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
    indices = unwrap(indices)
    if type(indices) not in PER_EXAMPLE:
        indices = asarray(indices)  # (a shaped one's is its own: eval_shape)
    if indices.dtype.kind not in "iu":
        msg = f"gather: indices must be integers, got dtype {indices.dtype} [called at {user_location()}]"
        raise OpIndexError(msg)
    if axis is None:
        return gather(ravel(x), indices, 0)
    ndim = np.ndim(unwrap(x))
    given = as_ints("gather", "axis", axis) if not isinstance(axis, (tuple, list)) else ()
    if len(given) != 1 or ndim == 0:
        msg = f"gather: axis {axis} is out of range for shape {np.shape(unwrap(x))} [called at {user_location()}]"
        raise (ShapeError if len(given) != 1 else AxisError)(msg)
    found = axis_index("gather", given[0], ndim, f"an array of shape {np.shape(unwrap(x))},")
    return (record if type(indices) in PER_EXAMPLE else record1)(GATHER, x, indices, found)


@guarded
def flip(x: Any, axis: Any = None) -> Any:
    """Reverse the order of entries along ``axis`` (all axes by default), as ``np.flip``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.flip(np.array([1.0, 2.0, 3.0]))
    array([3., 2., 1.])
    """
    ndim = np.ndim(unwrap(x))
    axes = range(ndim) if axis is None else axes_of("flip", axis, ndim)
    return getitem(x, tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(ndim)))


@guarded
@composite
def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Split into pieces along ``axis``, as ``np.split``: ``N`` equal pieces, or pieces
    between the given indices.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> [p.shape for p in ng.split(np.ones((4, 2)), [1, 3])]
    [(1, 2), (2, 2), (1, 2)]
    """
    shape = np.shape(unwrap(x))
    axis = axes_of("split", axis, len(shape))[0]
    sections = indices_or_sections
    if isinstance(sections, int | np.integer) and not isinstance(sections, bool) and sections <= 0:
        msg = f"split: the number of sections must be positive, got {sections} [called at {user_location()}]"
        raise ShapeError(msg)
    try:
        pieces = np.split(np.arange(shape[axis]), indices_or_sections)
    except (ValueError, TypeError) as exc:
        msg = f"split: {exc} (axis {axis} of shape {shape}) [called at {user_location()}]"
        raise (error_like(exc) or ShapeError)(msg) from exc
    # Each piece of the positions is a run start..end: that slice, whatever order (or sign)
    # the split points are given in.
    before = (slice(None),) * axis
    return [getitem(x, (*before, slice(int(p[0]), int(p[-1]) + 1) if p.size else slice(0, 0))) for p in pieces]


# x[i] of a value replay stages, by a batched or traced index: this op, which the index's
# interpreter runs (Staged.__getitem__ has no reflected form to hand the index over).
FOREIGN_INDEXING[:] = [getitem]
