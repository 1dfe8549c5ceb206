"""The three products a sparse model is made of, closed under differentiation.

With ``X`` the sparse matrix of values ``data`` on pattern ``p`` (entry ``k`` at row
``r[k]``, column ``c[k]``):

- ``sparse_matmul(data, b, p)`` is ``X @ b``;
- ``sparse_rmatmul(data, b, p)`` is ``X.T @ b``;
- ``sparse_sampled(a, b, p)[k]`` is ``a[r[k]] . b[c[k]]``: the dense product ``a @ b.T``
  read at the stored entries only, never formed.

Each one's VJPs are the other two (the cotangent of ``data`` in ``X @ b`` is
``sampled(g, b)``; that of ``b`` is ``X.T @ g``), so their rules run on traced values too
(``hessian``, ``jvp`` through a sparse model), and no rule ever builds a dense matrix. The
dense operand is a vector or a matrix (``(n,)`` or ``(n, k)``). scipy's own kernels run the
products; ``sampled`` gathers the two factors of each entry.

Under ``vmap``, a batched dense operand becomes extra columns of one product; batched
values (one matrix per example, on one pattern) are one block-diagonal matrix of
``size`` blocks, its values the examples' values one after another.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.record import record
from nodegrad.engine.registry import Op, defop
from nodegrad.engine.shared import SharedArray, plain_result, shared_results
from nodegrad.ops.batching import to_batched
from nodegrad.ops.sparse.pattern import Pattern, scipy_sparse

__all__ = [
    "SAMPLED",
    "SPARSE_MATMUL",
    "SPARSE_RMATMUL",
    "as_columns",
    "block_pattern",
    "matmul",
    "rmatmul",
    "sampled",
]

_F = "sparse"


def _matmul(data: Any, b: Any, p: Pattern) -> Any:
    # (shaped here: scipy gives a COO matrix of one row times a vector a 0-d result)
    out = np.asarray(p.matrix(plain_result(data)) @ plain_result(b)).reshape(p.shape[0], *np.shape(b)[1:])
    return _shared_if(out, data, b)


def _rmatmul(data: Any, b: Any, p: Pattern) -> Any:
    out = np.asarray(p.matrix(plain_result(data)).T @ plain_result(b)).reshape(p.shape[1], *np.shape(b)[1:])
    return _shared_if(out, data, b)


def _shared_if(out: np.ndarray, *inputs: Any) -> Any:
    """``out`` as an array a vmap shares where an input is one (its examples' common
    value: indexing it by a batched index then batches), else as it is."""
    return shared_results(out) if any(isinstance(x, SharedArray) for x in inputs) else out


def _sampled(a: Any, b: Any, p: Pattern) -> Any:
    """``a[r[k]] . b[c[k]]`` for every stored entry ``k``. A row of a compressed matrix is
    one run of entries, so its factor is repeated rather than gathered, a block of rows at
    a time into the gathered factor: one array of ``nnz`` values at the peak, not three."""
    shared_inputs = (a, b)
    a, b = np.asarray(plain_result(a)), np.asarray(plain_result(b))
    if a.ndim == 0 or b.ndim == 0 or (a.shape[0], b.shape[0]) != p.shape or a.shape[1:] != b.shape[1:]:
        msg = f"a of shape {a.shape} and b of shape {b.shape} do not fit a pattern of shape {p.shape}"
        raise ValueError(msg)
    if p.format == "coo" or a.ndim > 1:
        left, right = np.take(a, p.rows, axis=0), np.take(b, p.cols, axis=0)
        product = left * right
        if product.ndim > 1:
            product = product.reshape(product.shape[0], math.prod(product.shape[1:])).sum(1)
        return _shared_if(product, *shared_inputs)
    gathered, runs = (b, a) if p.format == "csr" else (a, b)
    out = gathered[p.indices].astype(np.result_type(a, b), copy=False)  # (fresh: fancy indexing copies)
    indptr = p.indptr
    for first, last in _blocks(indptr):
        lo, hi = indptr[first], indptr[last]
        out[lo:hi] *= np.repeat(runs[first:last], np.diff(indptr[first : last + 1]))
    return _shared_if(out, *shared_inputs)


_BLOCK = 1 << 18  # stored values per block of rows (a block of repeats stays in cache)


def _blocks(indptr: np.ndarray) -> list[tuple[int, int]]:
    """Runs of rows of about :data:`_BLOCK` stored values each, as ``(first, last)``."""
    runs = len(indptr) - 1
    if indptr[-1] <= _BLOCK:
        return [(0, runs)]
    bounds = np.searchsorted(indptr, np.arange(_BLOCK, indptr[-1], _BLOCK))
    edges = np.unique(np.concatenate([[0], np.minimum(bounds, runs), [runs]]))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def matmul(data: Any, b: Any, p: Pattern) -> Any:
    """``X @ b`` for the matrix of values ``data`` on ``p``."""
    return record(SPARSE_MATMUL, data, b, p)


def rmatmul(data: Any, b: Any, p: Pattern) -> Any:
    """``X.T @ b`` for the matrix of values ``data`` on ``p``."""
    return record(SPARSE_RMATMUL, data, b, p)


def sampled(a: Any, b: Any, p: Pattern) -> Any:
    """``(a @ b.T)`` at the stored entries of ``p``, one value per entry."""
    return record(SAMPLED, a, b, p)


# -- batching --------------------------------------------------------------------------------------


_BLOCKS: dict[tuple[int, int], tuple[Pattern, Pattern]] = {}


def block_pattern(p: Pattern, size: int) -> Pattern:
    """The pattern of ``size`` copies of ``p`` on a block diagonal, in the same format, its
    stored values copy 0's, then copy 1's, and so on (how a batch of matrices on one
    pattern is one matrix)."""
    known = _BLOCKS.get((id(p), size))
    if known is not None and known[0] is p:
        return known[1]
    sparse = scipy_sparse()
    m, n = p.shape
    copies = np.arange(size, dtype=np.int64)[:, None]
    ones = np.ones(size * p.nnz)
    if p.format == "coo":
        rows = (p.indices[None, :] + copies * m).ravel()
        cols = (p.indptr[None, :] + copies * n).ravel()
        template = sparse.coo_array((ones, (rows, cols)), shape=(size * m, size * n))
    else:
        minor = n if p.format == "csr" else m
        indices = (p.indices[None, :] + copies * minor).ravel()
        indptr = np.concatenate([(p.indptr[:-1][None, :] + copies * p.nnz).ravel(), [size * p.nnz]])
        kind = sparse.csr_array if p.format == "csr" else sparse.csc_array
        template = kind((ones, indices, indptr), shape=(size * m, size * n))
    if len(_BLOCKS) > 64:
        _BLOCKS.clear()
    blocks = Pattern(template)
    _BLOCKS[(id(p), size)] = (p, blocks)
    return blocks


def _stacked(value: Any, is_batched: bool, size: int) -> Any:
    """Every example's dense operand, one after another along axis 0."""
    value = to_batched(value, is_batched, size)
    shape = np.shape(value)
    return np.reshape(value, (shape[0] * shape[1], *shape[2:]))


def as_columns(b: Any) -> tuple[Any, tuple[int, ...]]:
    """A batched dense operand ``(size, n, ...)`` as the columns of one ``(n, size * ...)``."""
    shape = np.shape(b)
    moved = np.moveaxis(b, 0, -1)
    return np.reshape(moved, (shape[1], math.prod(shape[2:]) * shape[0])), (*shape[2:], shape[0])


def _batch_product(op: Op, batched: tuple[bool, ...], size: int, data: Any, b: Any, p: Pattern) -> Any:
    if not batched[0]:  # one matrix: the examples' operands are more columns
        columns, trailing = as_columns(b)
        out = record(op, data, columns, p)
        return np.moveaxis(np.reshape(out, (np.shape(out)[0], *trailing)), -1, 0)
    blocks = block_pattern(p, size)
    out = record(op, np.reshape(data, (-1,)), _stacked(b, batched[1], size), blocks)
    shape = np.shape(out)
    return np.reshape(out, (size, shape[0] // size, *shape[1:]))


def _batch_sampled(op: Op, batched: tuple[bool, ...], size: int, a: Any, b: Any, p: Pattern) -> Any:
    blocks = block_pattern(p, size)
    out = record(op, _stacked(a, batched[0], size), _stacked(b, batched[1], size), blocks)
    return np.reshape(out, (size, p.nnz))


SPARSE_MATMUL = defop(
    "sparse_matmul",
    _matmul,
    lambda g, ans, data, b, p: sampled(g, b, p),
    lambda g, ans, data, b, p: rmatmul(data, g, p),
    None,
    family=_F,
    doc="X @ b for a sparse X (its stored values, a static pattern) and a dense vector or matrix b",
    batch=_batch_product,
)
SPARSE_RMATMUL = defop(
    "sparse_rmatmul",
    _rmatmul,
    lambda g, ans, data, b, p: sampled(b, g, p),
    lambda g, ans, data, b, p: matmul(data, g, p),
    None,
    family=_F,
    doc="X.T @ b for a sparse X (its stored values, a static pattern) and a dense vector or matrix b",
    batch=_batch_product,
)
SAMPLED = defop(
    "sparse_sampled",
    _sampled,
    lambda g, ans, a, b, p: matmul(g, b, p),
    lambda g, ans, a, b, p: rmatmul(g, a, p),
    None,
    family=_F,
    doc="a @ b.T read at a sparse pattern's stored entries only (never formed densely)",
    batch=_batch_sampled,
)
