"""Row-sparse gradients: what a lookup table read at a few rows gets back.

A table of 1,000,000 rows read at 1,000 of them has a gradient that is zero in every
other row. Written densely that is a 1,000,000-row array to allocate, fill and add per
step; :class:`RowSparse` holds the touched rows only. The sweep makes one when asked
(``grad(..., sparse_rows=True)``) for a leaf whose every use is a row gather: an op with
:attr:`~nodegrad.engine.registry.Op.rows`, which says which rows of its input 0 it reads.
Such a node's rule is swapped for one that hands back :class:`RowParts` (the rows read and
the cotangent of each), which the sweep adds as it adds any cotangent (here: by keeping
both lists), and :func:`coalesced` sums them into one :class:`RowSparse` at the leaf.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from nodegrad.engine.containers import ARRAY_TYPES
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.staged import Staged, Unreplayable
from nodegrad.errors import ArgumentError, ShapeError

__all__ = ["RowParts", "RowSparse", "coalesced", "overlapping", "sparse_nodes"]


class RowSparse:
    """A gradient that is zero outside a few rows: ``values[k]`` is row ``indices[k]``.

    What :func:`nodegrad.grad` returns with ``sparse_rows=True`` for an array argument
    whose every use is a row gather (``x[idx]``, ``np.take(x, idx, axis=0)``,
    :func:`nodegrad.gather`, a slice or mask of rows, a table merge). ``indices`` are
    unique and sorted; a row read twice holds the sum of its cotangents.

    ``np.asarray(rs)`` (or :meth:`todense`) gives the dense array. ``+`` with another
    RowSparse of the same shape gives a RowSparse, with an array a dense array; ``*`` and
    ``/`` by a number and unary ``-`` scale the values. :mod:`nodegrad.tree` utilities and
    :func:`nodegrad.optim.sgd`/:func:`~nodegrad.optim.adam` take it as a leaf (the steps
    are lazy: they move only these rows).

    Parameters
    ----------
    indices : array of int
        Row positions, unique and increasing, each in ``range(shape[0])``.
    values : array
        The rows, of shape ``(len(indices), *shape[1:])``.
    shape : tuple of int
        The dense array's shape (at least one dimension).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> table = np.ones((1000, 2))
    >>> g = ng.grad(lambda t: (t[np.array([3, 7, 3])] ** 2).sum(), sparse_rows=True)(table)
    >>> g
    RowSparse(2 of 1000 rows, shape (1000, 2), dtype float64)
    >>> g.indices, g.values
    (array([3, 7]), array([[4., 4.],
           [2., 2.]]))
    >>> np.asarray(g)[[3, 7]].tolist()
    [[4.0, 4.0], [2.0, 2.0]]
    """

    __slots__ = ("indices", "shape", "values")
    __array_priority__ = 20.0  # ndarray + RowSparse asks RowSparse first

    def __init__(self, indices: Any, values: Any, shape: tuple[int, ...]) -> None:
        shape = tuple(int(n) for n in shape)
        indices = np.asarray(indices)
        values = np.asarray(values)
        if not shape:
            msg = "RowSparse: the dense shape needs at least one dimension (rows)"
            raise ShapeError(msg)
        if indices.ndim != 1 or (indices.size and indices.dtype.kind not in "iu"):
            msg = f"RowSparse: indices must be a 1-d integer array, got shape {indices.shape} of {indices.dtype}"
            raise ArgumentError(msg)
        if values.shape != (len(indices), *shape[1:]):
            msg = f"RowSparse: values of shape {values.shape} for {len(indices)} rows of shape {shape}"
            raise ShapeError(msg)
        if indices.size and (indices[0] < 0 or indices[-1] >= shape[0] or np.any(np.diff(indices) <= 0)):
            msg = f"RowSparse: indices must be unique, increasing and in range({shape[0]})"
            raise ArgumentError(msg)
        self.indices = indices.astype(np.intp, copy=False)
        self.values = values
        self.shape = shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' dtype (the dense array's)."""
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """The memory the rows and their indices take."""
        return int(self.indices.nbytes + self.values.nbytes)

    def todense(self) -> np.ndarray:
        """The dense array: zeros with these rows written in."""
        dense = np.zeros(self.shape, self.dtype)
        dense[self.indices] = self.values
        return dense

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        dense = self.todense()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"RowSparse({len(self.indices)} of {self.shape[0]} rows, shape {self.shape}, dtype {self.dtype})"

    @classmethod
    def _trusted(cls, indices: Any, values: Any, shape: tuple[int, ...]) -> RowSparse:
        """One made of parts already known to fit (no checks: a sweep's own sums)."""
        made = object.__new__(cls)
        made.indices, made.values, made.shape = indices, values, shape
        return made

    def _with(self, values: Any) -> RowSparse:
        return RowSparse._trusted(self.indices, values, self.shape)

    def __add__(self, other: Any) -> Any:
        if isinstance(other, RowSparse):
            if other.shape != self.shape:
                msg = f"RowSparse: cannot add shapes {self.shape} and {other.shape}"
                raise ShapeError(msg)
            parts = RowParts([(self.indices, self.values), (other.indices, other.values)])
            return coalesced(parts, np.zeros((0,), np.result_type(self.dtype, other.dtype)), self.shape)
        dense = np.array(other, dtype=np.result_type(self.dtype, other), copy=True)
        if dense.shape != self.shape:
            msg = f"RowSparse: cannot add shapes {self.shape} and {dense.shape} (no broadcasting)"
            raise ShapeError(msg)
        dense[self.indices] += self.values
        return dense

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self + (-other)

    def __rsub__(self, other: Any) -> Any:
        return (-self) + other

    def __mul__(self, factor: Any) -> RowSparse:
        if np.ndim(factor) != 0:
            return NotImplemented
        return self._with(self.values * factor)

    __rmul__ = __mul__

    def __truediv__(self, factor: Any) -> RowSparse:
        if np.ndim(factor) != 0:
            return NotImplemented
        return self._with(self.values / factor)

    def __neg__(self) -> RowSparse:
        return self._with(-self.values)

    def conjugate(self) -> RowSparse:
        return self._with(np.conjugate(self.values))


ARRAY_TYPES.add(RowSparse)  # a leaf of a structure, as an array is


class RowParts:
    """The sweep's cotangent of a leaf read by row gathers only: the ``(rows, cotangents)``
    pairs of each gather, summed into a :class:`RowSparse` only at the leaf (adding two is
    joining their lists: nothing dense is made on the way)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[tuple[Any, Any]]) -> None:
        self.parts = parts

    def __add__(self, other: Any) -> RowParts:
        if not isinstance(other, RowParts):
            msg = f"a row-sparse cotangent met a dense one ({type(other).__name__}): this leaf has another use"
            raise TypeError(msg)
        return RowParts(self.parts + other.parts)


def coalesced(g: RowParts, like: Any, shape: tuple[int, ...] | None = None) -> RowSparse:
    """The :class:`RowSparse` sum of the parts of ``g``, in ``like``'s dtype (a real leaf
    keeps the real part, as a dense cotangent is cut back).

    The sums are the dense sweep's, in its order, so the rows equal its gradient bit for
    bit: there each gather scatter-adds its cotangent into zeros (``np.add.at``: a row read
    twice gets its reads added in the order read), and the sweep adds those arrays into the
    leaf's cotangent one gather after another, in the order they reached it. So each part
    is summed on its own first, and the parts' sums are then added in the parts' order.
    """
    shape = np.shape(like) if shape is None else shape
    held = {type(x) for part in g.parts for x in part} & set(INTERPRETED)
    if Staged in held:
        # How many rows the gradient holds depends on the index values.
        raise Unreplayable("a RowSparse gradient (sparse_rows=True): its number of rows depends on the indices")
    if held:
        msg = (
            "sparse_rows=True inside another transform (grad, vmap, jvp of this gradient): a RowSparse gradient "
            "cannot be differentiated or batched again; use the dense gradient there"
        )
        raise ArgumentError(msg)
    dtype = np.result_type(like)
    parts = [(r, v.reshape(len(r), *shape[1:])) for r, v in g.parts]
    if dtype.kind != "c":
        parts = [(r, np.real(v) if np.iscomplexobj(v) else v) for r, v in parts]
    sums = [_summed_in_order(r, v) for r, v in parts]
    if len(sums) == 1:
        rows, summed = sums[0]
    elif len({v.dtype for _, v in sums}) == 1:
        # Every part's rows are unique: summing the parts' rows in the order read adds
        # each row's part sums one part after another.
        rows, summed = _summed_in_order(np.concatenate([r for r, _ in sums]), np.concatenate([v for _, v in sums]))
    else:
        # Parts of different dtypes: the sweep widens its sum where a wider part is added,
        # so the parts are added pairwise, each pair in the dtype numpy gives it.
        rows, summed = sums[0]
        for more_rows, more in sums[1:]:
            rows, summed = _summed_in_order(np.concatenate([rows, more_rows]), np.concatenate([summed, more]))
    if len(rows) == 0:
        return RowSparse(rows.astype(np.intp), np.zeros((0, *shape[1:]), dtype), shape)
    return RowSparse._trusted(rows.astype(np.intp, copy=False), summed.astype(dtype, copy=False), shape)


def _summed_in_order(rows: Any, values: Any) -> tuple[Any, Any]:
    """The unique ``rows``, increasing, and the sum of the ``values`` read at each, added
    in the order read (``np.add.at`` into zeros, bit for bit, at the cost of the repeats
    only)."""
    if len(rows) == 0:
        return rows, values
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))  # the first read of each row
    summed = np.take(values, order[first], axis=0)  # one gather of the rows; repeats are added below
    if not first.all():
        again = ~first
        np.add.at(summed, np.cumsum(first)[again] - 1, np.take(values, order[again], axis=0))
    return ordered[first], summed


def overlapping(arrays: list[np.ndarray]) -> set[int]:
    """The ids of the ``arrays`` that may share memory with another of them (one array twice,
    or views of one buffer: grouped by their buffer, then compared within a group). The lazy
    steps of :mod:`nodegrad.optim` write a RowSparse gradient's rows into its parameter in
    place; a parameter found here (tied weights) is stepped in a copy instead."""
    groups: dict[int, list[np.ndarray]] = {}
    for a in arrays:
        groups.setdefault(id(_buffer(a)), []).append(a)
    pairs = [(a, b) for group in groups.values() for i, a in enumerate(group) for b in group[i + 1 :]]
    return {id(x) for a, b in pairs if a is b or np.may_share_memory(a, b) for x in (a, b)}


def _buffer(a: Any) -> Any:
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


# -- the sweep's view: row gathers of the chosen leaves hand back RowParts --------------------


def sparse_nodes(view: Any, nodes: Any, wrt: list[int], lo: int, out: int) -> Any:
    """``view`` (how the sweep reads the arena's ``nodes``) as it should read them for
    row-sparse gradients: each leaf of ``wrt`` whose every use in ``lo..out`` is a row
    gather of it (its input 0) gets :class:`RowParts` from those gathers. Other leaves are
    left as they are."""
    chosen = set(wrt)
    gathers: dict[int, Any] = {}  # node -> the rows it reads (found once, used by its rule)
    for i in range(lo + 1, out + 1):
        op, parents, argnums, args = nodes[i][:4]
        for p, k in zip(parents, argnums, strict=True):
            if p not in chosen:
                continue
            rows = op.rows(*args) if k == 0 and op.rows is not None else None
            if rows is None:
                chosen.discard(p)
            else:
                gathers[i] = rows
    swapped = {i: _row_op(nodes[i][0], rows) for i, rows in gathers.items() if nodes[i][1][0] in chosen}
    return _SparseNodes(view, swapped) if swapped else view


@attrs.frozen
class _SparseNodes:
    view: Any  # what the sweep read before (the arena's nodes, or a checking view of them)
    swapped: dict[int, Any]  # node -> its op with the rows rule

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        node = self.view[i]
        op = self.swapped.get(i)
        return node if op is None else (op, *node[1:])

    def __setitem__(self, i: int, node: tuple[Any, ...]) -> None:
        self.view[i] = (self.view[i][0], *node[1:])  # released: the node keeps its own op


def _row_op(op: Any, rows: Any) -> Any:
    """``op`` with its input 0's rule handing back the ``rows`` read and their cotangents."""

    def rows_rule(g: Any, ans: Any, *args: Any) -> RowParts:
        return RowParts([(rows, g)])

    return attrs.evolve(op, vjps=(rows_rule, *op.vjps[1:]), joint=None)
