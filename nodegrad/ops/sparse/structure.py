"""Sparse ops that move stored values: a new pattern and a linear map from the old values.

Selecting rows, stacking, transposing into another format, reading the diagonal or
writing the matrix out densely each give values that are sums of the old ones (mostly
one each). That map is a constant sparse matrix ``S`` (one row per new value, a 1 at each
old value it sums), so every such op is ``S @ data`` (:func:`moved`): one
``sparse_matmul`` whose dense side is the values, with its VJP ``S.T @ g`` and its
batching rule, and nothing new to differentiate.

Where scipy computes the new pattern, it is asked with *probe* values (``1, 2, ...,
nnz``): the values it returns say where each new value came from. An op scipy might sum
duplicates in is worked out here instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.errors import ShapeError
from nodegrad.ops.sparse.pattern import Pattern, pattern_of, scipy_sparse
from nodegrad.ops.sparse.products import matmul

__all__ = [
    "LinearMap",
    "by_probe",
    "converted",
    "densified",
    "diagonal_map",
    "from_probe",
    "has_duplicates",
    "moved",
    "probe_values",
    "rows_taken",
    "summing",
]


class LinearMap:
    """A constant sparse ``S`` taking old values to new ones (``new = S @ old``), with the
    pattern the new values sit on."""

    __slots__ = ("pattern", "select")

    def __init__(self, select: Pattern, pattern: Pattern | None) -> None:
        self.select = select
        self.pattern = pattern


def moved(data: Any, linear: LinearMap) -> Any:
    """The new values ``S @ data`` (under vmap: each example's)."""
    ones = np.ones(linear.select.nnz)
    return matmul(ones, data, linear.select)


def summing(ids: np.ndarray, positions: np.ndarray, count: int, nnz: int) -> Pattern:
    """The pattern of ``S`` where new value ``ids[j]`` sums old value ``positions[j]``."""
    sparse = scipy_sparse()
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == count and np.all(ids == np.arange(count)):  # one old value each, in order: a gather
        indptr = np.arange(count + 1, dtype=np.int64)
        select = sparse.csr_array((np.ones(ids.size), np.asarray(positions, np.int64), indptr), shape=(count, nnz))
    else:
        select = sparse.csr_array((np.ones(ids.size), (ids, np.asarray(positions, np.int64))), shape=(count, nnz))
    return Pattern(select)


def by_probe(p: Pattern, operation: Any, expected: int | None = None) -> LinearMap:
    """Ask scipy for ``operation(matrix)`` on a matrix of pattern ``p`` holding the probe
    values ``1 .. nnz``: the result's pattern, and where each of its values came from
    (see :func:`from_probe`)."""
    return from_probe(operation(p.matrix(probe_values([p.nnz])[0])), p.nnz, expected)


def probe_values(sizes: list[int]) -> list[np.ndarray]:
    """Probe values for operands of ``sizes`` values: ``1 .. sum(sizes)``, in turn."""
    return np.split(np.arange(1, sum(sizes) + 1, dtype=np.float64), np.cumsum(sizes)[:-1])


def from_probe(result: Any, count: int, expected: int | None = None) -> LinearMap:
    """The map to scipy's ``result``, a matrix made of probe values ``1 .. count``: where
    each of its values came from, and its pattern. ``expected`` (the number of values the
    result must keep) catches an operation that summed values, which probes cannot tell
    apart from moves."""
    if result.format not in ("csr", "csc", "coo"):
        result = result.tocsr()
    values = np.asarray(result.data)
    positions = values.astype(np.int64) - 1
    if (expected is not None and values.size != expected) or np.any(positions + 1 != values):
        msg = "scipy summed stored values where nodegrad expected it to move them: convert each matrix with .tocsr()"
        raise ShapeError(msg)
    return LinearMap(summing(np.arange(values.size), positions, values.size, count), pattern_of(result))


def has_duplicates(p: Pattern) -> bool:
    """Whether two stored values of ``p`` sit at one entry."""
    if p.nnz < 2 or (p.format != "coo" and p.template.has_canonical_format):
        return False
    linear = p.rows.astype(np.int64) * p.shape[1] + p.cols.astype(np.int64)
    return bool(np.unique(linear).size < p.nnz)


def converted(p: Pattern, target: Any) -> LinearMap:
    """The map to the canonical matrix of class ``target`` (duplicates summed into one
    entry, sorted), as scipy's ``tocsr()``/``tocsc()`` of a COO matrix, or its
    ``sum_duplicates()`` (a COO target: row by row)."""
    m, n = p.shape
    rows, cols = p.rows.astype(np.int64), p.cols.astype(np.int64)
    column_major = target._format == "csc"
    linear = cols * m + rows if column_major else rows * n + cols
    unique, ids = np.unique(linear, return_inverse=True)
    new_rows, new_cols = (unique % m, unique // m) if column_major else (unique // n, unique % n)
    counts = np.bincount(new_cols if column_major else new_rows, minlength=n if column_major else m)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = new_rows if column_major else new_cols
    if target._format == "coo":
        template = target((np.ones(unique.size), (new_rows, new_cols)), shape=(m, n))
    else:
        template = target((np.ones(unique.size), indices, indptr), shape=(m, n))
    return LinearMap(summing(ids.ravel(), np.arange(p.nnz), unique.size, p.nnz), pattern_of(template))


def densified(p: Pattern) -> LinearMap:
    """The map to the dense matrix, raveled (duplicates summed)."""
    n = p.shape[1]
    linear = p.rows.astype(np.int64) * n + p.cols.astype(np.int64)
    return LinearMap(summing(linear, np.arange(p.nnz), p.shape[0] * n, p.nnz), None)


def diagonal_map(p: Pattern, k: int) -> LinearMap:
    """The map to diagonal ``k`` (scipy's ``diagonal(k)``: duplicates summed)."""
    m, n = p.shape
    length = max(0, min(m + min(k, 0), n - max(k, 0)))
    rows, cols = p.rows.astype(np.int64), p.cols.astype(np.int64)
    on = np.flatnonzero(cols - rows == k)
    return LinearMap(summing(rows[on] if k >= 0 else cols[on], on, length, p.nnz), None)


def rows_taken(p: Pattern, rows: np.ndarray) -> LinearMap:
    """The map to rows ``rows`` of a CSR matrix (a minibatch): worked out from the rows'
    runs of values, at the cost of the values taken, not of the whole matrix."""
    starts, stops = p.indptr[rows], p.indptr[rows + 1]
    counts = (stops - starts).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    positions = np.repeat(starts.astype(np.int64) - indptr[:-1], counts) + np.arange(indptr[-1])
    template = p.cls((np.ones(positions.size), p.indices[positions], indptr), shape=(rows.size, p.shape[1]))
    return LinearMap(summing(np.arange(positions.size), positions, positions.size, p.nnz), pattern_of(template))
