"""``spsolve``: a sparse linear system, differentiated by its adjoint solve.

For ``A x = b`` with ``A``'s values ``data`` on a pattern, the cotangent ``g`` of ``x``
gives ``lam = A^-T g`` (one more sparse solve), then ``lam`` is ``b``'s cotangent and
``-lam[r[k]] * x[c[k]]`` that of stored value ``k``: the sampled product, on the pattern
only, never a dense inverse. The LU factorization of the forward solve is kept (for a few
matrices, checked against the values it was made of) and solves the adjoint system too,
transposed, so a gradient costs a triangular solve pair beyond the forward's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from nodegrad.engine.record import record
from nodegrad.engine.registry import Op, defjoint
from nodegrad.engine.shared import SharedArray, plain_result, shared_results
from nodegrad.ops.sparse.pattern import Pattern
from nodegrad.ops.sparse.products import as_columns, block_pattern, sampled

__all__ = ["SPARSE_SOLVE", "solve"]

#: Factorizations kept, by the identity of the values and the key of the pattern they
#: factor, each with a copy of the values it was made of (checked at every use).
_FACTORS: OrderedDict[tuple[int, Any], tuple[np.ndarray, Any]] = OrderedDict()
_KEPT = 4


def _factor(data: np.ndarray, p: Pattern) -> Any:
    """The LU factorization of the matrix of ``data`` on ``p`` (kept for the adjoint)."""
    key = (id(data), p.key())
    known = _FACTORS.get(key)
    if known is not None and known[0].dtype == data.dtype and np.array_equal(known[0], data):
        _FACTORS.move_to_end(key)
        return known[1]
    from scipy.sparse.linalg import splu

    matrix = p.matrix(data)
    lu = splu(matrix.tocsc() if matrix.format != "csc" else matrix)
    _FACTORS[key] = (np.array(data, copy=True), lu)
    while len(_FACTORS) > _KEPT:
        _FACTORS.popitem(last=False)
    return lu


def _solve(data: Any, b: Any, p: Pattern, transposed: bool) -> Any:
    values, rhs = np.asarray(plain_result(data)), np.asarray(plain_result(b))
    dtype = _solve_dtype(values, rhs)
    if dtype.kind == "c" and values.dtype.kind != "c":  # a real matrix, a complex right-hand side
        real_dtype = np.finfo(dtype).dtype
        return _solve(values, rhs.real.astype(real_dtype), p, transposed) + 1j * _solve(
            values, rhs.imag.astype(real_dtype), p, transposed
        )
    lu = _factor(values if values.dtype == dtype else values.astype(dtype), p)
    out = lu.solve(np.asarray(rhs, dtype=dtype), trans="T" if transposed else "N")
    return shared_results(out) if isinstance(data, SharedArray) or isinstance(b, SharedArray) else out


def _solve_dtype(data: Any, b: Any) -> np.dtype[Any]:
    """The values' and right-hand side's common type (float32 stays float32), or float64."""
    dtype = np.result_type(data, b)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def solve(data: Any, b: Any, p: Pattern, transposed: bool = False) -> Any:
    """``x`` with ``A x = b`` (``A.T x = b`` when ``transposed``) for ``A`` the matrix of
    values ``data`` on the square pattern ``p``; ``b`` a vector or a matrix."""
    return record(SPARSE_SOLVE, data, b, p, transposed)


def _solve_rule(wanted: tuple[int, ...], g: Any, ans: Any, data: Any, b: Any, p: Pattern, transposed: bool) -> Any:
    lam = solve(data, g, p, not transposed)
    found = []
    for k in wanted:
        if k == 1:
            found.append(lam)
        else:  # A x = b: -lam x^T on the pattern (A^T x = b: -x lam^T)
            found.append(-(sampled(ans, lam, p) if transposed else sampled(lam, ans, p)))
    return tuple(found)


def _batch_solve(op: Op, batched: tuple[bool, ...], size: int, data: Any, b: Any, p: Pattern, transposed: bool) -> Any:
    if not batched[0]:  # one matrix, the examples' right-hand sides as more columns
        columns, trailing = as_columns(b)
        out = record(op, data, columns, p, transposed)
        return np.moveaxis(np.reshape(out, (np.shape(out)[0], *trailing)), -1, 0)
    # one matrix per example: one block-diagonal system, factored as blocks
    blocks = block_pattern(p, size)
    stacked = np.broadcast_to(b, (size, *np.shape(b))) if not batched[1] else b
    shape = np.shape(stacked)
    rows = np.reshape(stacked, (shape[0] * shape[1], *shape[2:]))
    out = record(op, np.reshape(data, (-1,)), rows, blocks, transposed)
    return np.reshape(out, shape)


SPARSE_SOLVE = defjoint(
    "sparse_solve",
    _solve,
    _solve_rule,
    (0, 1),
    family="sparse",
    doc="x with A x = b for a sparse square A (its stored values, a static pattern), by an LU factorization",
    batch=_batch_solve,
)
