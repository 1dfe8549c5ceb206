"""Sparse matrices under eval_shape (the shapes of the sparse ops, from the pattern alone),
and the sparse family of the differential fuzzer (its programs run under every stack)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as ss

import nodegrad as ng
import nodegrad.scipy.sparse as sp
from nodegrad.scipy.sparse.linalg import spsolve
from tests.fuzz.ops import SPARSE_A, Register, sparse
from tests.fuzz.programs import Program
from tests.fuzz.runner import check_program

X = ss.csr_array(np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0], [3.0, 4.0, 0.0, 5.0]]))
A = ss.csc_array(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]]))


@pytest.mark.parametrize(
    "fun",
    [
        lambda X, w: X @ w,
        lambda X, w: X @ np.stack([w, w], axis=1),
        lambda X, w: X.T @ (X @ w),
        lambda X, w: np.ones(3) @ X,
        lambda X, w: X.multiply(w).sum(axis=0),
        lambda X, w: X.toarray() * 2.0,
        lambda X, w: X.diagonal(),
        lambda X, w: X[[0, 2]] @ w,
        lambda X, w: spsolve(A, X @ w),
        lambda X, w: ng.grad(lambda w: np.sum(spsolve(A, X @ w) ** 2))(w),
        lambda X, w: sp.vstack([X, X]).sum(axis=1),
    ],
    ids=["X@w", "X@W", "X.T@(X@w)", "v@X", "multiply-sum", "toarray", "diagonal", "rows", "spsolve", "grad-spsolve",
         "vstack"],
)  # fmt: skip
def test_eval_shape_answers_as_the_call_does(fun: Any) -> None:
    w = np.array([1.0, -2.0, 0.5, 3.0])
    eager = np.asarray(fun(X, w))
    shaped = ng.eval_shape(fun, X, w)
    assert shaped.shape == eager.shape
    assert shaped.dtype == eager.dtype


def test_eval_shape_of_a_sparse_gradient_keeps_the_pattern() -> None:
    shaped = ng.eval_shape(lambda X: ng.grad(lambda X: np.sum(X @ np.ones(4)))(X), X)
    assert isinstance(shaped, sp.SparseMatrix)
    assert shaped.shape == X.shape and shaped.nnz == X.nnz


def test_the_fuzzers_sparse_family_draws_every_op_and_its_programs_agree() -> None:
    rng = np.random.default_rng(0)
    regs = [Register("w", (4,)), Register("v", (3,)), Register("m", (4, 2)), Register("r", (2, 3))]
    drawn = {sparse(rng, regs).op for _ in range(200)}  # type: ignore[union-attr]
    assert drawn == {"sparse_matmul", "sparse_rmatmul", "sparse_vecmat", "sparse_multiply", "sparse_built",
                     "sparse_built_sum"}  # fmt: skip
    for k in range(12):
        steps = []
        regs_now = [Register("w", (4,)), Register("x", (4,))]
        for n in range(3):
            step = sparse(np.random.default_rng(100 * k + n), regs_now)
            assert step is not None
            steps.append(step)
            regs_now.append(Register(f"v{n}", step.shape))
        program = Program("array", "float64", tuple(steps))
        findings = check_program(program, k, skip_known=False)
        assert findings == [], findings
    assert SPARSE_A.nnz == 5
