"""Specs for the sparse family: the products of a sparse matrix's stored values on a static
pattern, and its solve.

A pattern is drawn in CSR, CSC or COO (COO with duplicate entries at times), at least one
stored value; the reference is numpy on the dense matrix the values make (duplicates
summed). ``sparse_solve`` draws a pattern holding the whole diagonal, its values
diagonally dominant, so every system drawn is well conditioned.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import scipy.sparse as ss

from nodegrad.errors import ShapeError
from nodegrad.ops.sparse import pattern_of
from nodegrad.ops.sparse.pattern import Pattern
from nodegrad.ops.sparse.products import matmul, rmatmul, sampled
from nodegrad.ops.sparse.solve import solve
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask
from tests.strategies import float_arrays, floats

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]


def _dense(data: Any, p: Pattern) -> np.ndarray:
    out = np.zeros(p.shape, np.result_type(data))
    np.add.at(out, (p.rows, p.cols), data)
    return out


@st.composite
def _patterns(draw: st.DrawFn, m: int | None = None, n: int | None = None, diagonal: bool = False) -> Pattern:
    m = draw(st.integers(1, 4)) if m is None else m
    n = draw(st.integers(1, 4)) if n is None else n
    cells = [(r, c) for r in range(m) for c in range(n)]
    chosen = draw(st.lists(st.sampled_from(cells), min_size=1, max_size=2 * m * n))
    fmt = draw(st.sampled_from(["csr", "csc", "coo"]))
    if fmt != "coo":
        chosen = sorted(set(chosen))
    if diagonal:  # (COO: the diagonal may be duplicated)
        diagonal_cells = [(k, k) for k in range(m)]
        chosen = [*chosen, *diagonal_cells] if fmt == "coo" else sorted({*chosen, *diagonal_cells})
    rows, cols = (np.array(v, dtype=np.int64) for v in zip(*chosen, strict=True))
    coo = ss.coo_array((np.ones(len(chosen)), (rows, cols)), shape=(m, n))
    return pattern_of(coo if fmt == "coo" else coo.asformat(fmt))


def _dense_side(draw: st.DrawFn, rows: int) -> np.ndarray:
    shape = (rows,) if draw(st.booleans()) else (rows, draw(st.integers(1, 3)))
    return draw(float_arrays(shape, elements=floats(-2.0, 2.0)))


@st.composite
def _product_cases(draw: st.DrawFn, transposed: bool) -> Case:
    p = draw(_patterns())
    data = draw(float_arrays((p.nnz,), elements=floats(-2.0, 2.0)))
    b = _dense_side(draw, p.shape[0] if transposed else p.shape[1])
    op = rmatmul if transposed else matmul

    def ref(data: Any, b: Any) -> Any:
        dense = _dense(data, p)
        return (dense.T if transposed else dense) @ b

    return Case(lambda data, b: op(data, b, p), ref, (data, b), draw(diff_mask(2)), desc=f"{p} b {b.shape}")


@st.composite
def _sampled_cases(draw: st.DrawFn) -> Case:
    p = draw(_patterns())
    k = draw(st.sampled_from([None, 1, 2]))
    a = draw(float_arrays((p.shape[0],) if k is None else (p.shape[0], k), elements=floats(-2.0, 2.0)))
    b = draw(float_arrays((p.shape[1],) if k is None else (p.shape[1], k), elements=floats(-2.0, 2.0)))

    def ref(a: Any, b: Any) -> Any:
        full = np.outer(a, b) if k is None else a @ b.T
        return full[p.rows, p.cols]

    return Case(lambda a, b: sampled(a, b, p), ref, (a, b), draw(diff_mask(2)), desc=f"{p} k={k}")


@st.composite
def _solve_cases(draw: st.DrawFn) -> Case:
    m = draw(st.integers(1, 4))
    p = draw(_patterns(m, m, diagonal=True))
    transposed = draw(st.booleans())
    on_diagonal = p.rows == p.cols
    data = draw(float_arrays((p.nnz,), elements=floats(-0.3, 0.3)))
    # Diagonally dominant: a row holds at most 2 * 4 * 4 off-diagonal values of at most 0.3.
    data = np.where(on_diagonal, 12.0 + data, data)
    b = _dense_side(draw, m)

    def ref(data: Any, b: Any) -> Any:
        dense = _dense(data, p)
        return np.linalg.solve(dense.T if transposed else dense, b)

    return Case(
        lambda data, b: solve(data, b, p, transposed),
        ref,
        (data, b),
        draw(diff_mask(2)),
        desc=f"{p} b {b.shape} transposed={transposed}",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "sparse_matmul": _product_cases(False),
    "sparse_rmatmul": _product_cases(True),
    "sparse_sampled": _sampled_cases(),
    "sparse_solve": _solve_cases(),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}

# Every product and the solve are holomorphic (bilinear, and x = A^-1 b).
COMPLEX: dict[str, ComplexSpec] = {name: ComplexSpec(spec, holomorphic=True) for name, spec in SPECS.items()}

_P = pattern_of(ss.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])))
_SQUARE = pattern_of(ss.csc_array(np.array([[2.0, 1.0], [0.0, 3.0]])))
_D = np.array([1.0, 2.0, 3.0])

BAD_CALLS = [
    BadCall("sparse_matmul", (_D, np.ones(2)), lambda d, b: matmul(d, b, _P), ShapeError, ("float64[2]", "(2, 3)")),
    BadCall("sparse_rmatmul", (_D, np.ones(3)), lambda d, b: rmatmul(d, b, _P), ShapeError, ("float64[3]", "(2, 3)")),
    BadCall("sparse_sampled", (np.ones(3), np.ones(3)), lambda a, b: sampled(a, b, _P), ShapeError,
            ("(3,)", "(2, 3)")),
    BadCall("sparse_solve", (_D, np.ones(3)), lambda d, b: solve(d, b, _SQUARE), ShapeError, ("float64[3]", "(2, 2)")),
]  # fmt: skip
