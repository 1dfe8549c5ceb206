"""scipy.sparse matrices through nodegrad's transforms: vmap, replay, jvp, hvp, hessian,
spsolve, the optimisers' steps and row-sparse gradients.

Every transformed result is checked against an independent computation: vmap against a
Python loop of the eager calls, replay against the eager call bit for bit (and, called
again with another pattern or another closed-over matrix, against that one's eager answer),
jvp and hvp against float64 central differences, Hessians against numpy's closed forms,
spsolve's gradients against central differences and against ``np.linalg.solve`` on the
dense matrix, and the optimisers' steps against their formulas on ``.data``.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.sparse as ss
import scipy.sparse.linalg as ssl
from hypothesis import HealthCheck, assume, given, settings

import nodegrad as ng
import nodegrad.scipy.sparse as sp
from nodegrad.scipy.sparse.linalg import spsolve
from tests.finite_differences import central_difference
from tests.test_sparse import (
    assert_same_pattern,
    coordinates,
    scipy_answer,
    snapshot,
    sparse_matrices,
    with_data,
)

SOME = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def builder(X: Any) -> tuple[Any, tuple]:
    """The nodegrad.scipy.sparse constructor of ``X``'s class and the pattern part of its
    arguments: ``build((values, *where), shape=X.shape)`` is ``X`` holding ``values``."""
    build = getattr(sp, type(X).__name__)
    if X.format == "coo":
        return build, ((X.row, X.col),)
    return build, (X.indices, X.indptr)


# -- vmap --------------------------------------------------------------------------------------------

# functions of a sparse matrix and a dense vector w of length n (and the shape it needs)
WITH_DENSE = {
    "X @ w": lambda X, w: X @ w,
    "X.T @ (X @ w)": lambda X, w: X.T @ np.tanh(X @ w),
    "w @ X.T": lambda X, w: w @ X.T,
    "X.dot(w) * 2": lambda X, w: X.dot(w) * 2.0,
    "sum((X @ w) ** 2)": lambda X, w: np.sum((X @ w) ** 2),
}


@pytest.mark.parametrize("name", sorted(WITH_DENSE))
@FEW
@given(X=sparse_matrices(), batch=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_vmap_over_the_dense_side_equals_a_loop(name: str, X: Any, batch: int, seed: int) -> None:
    fun = WITH_DENSE[name]
    W = np.random.default_rng(seed).normal(size=(batch, X.shape[1]))
    loop = np.stack([np.asarray(scipy_answer(fun, X, w)) for w in W])  # scipy's own, eagerly
    shared = ng.vmap(fun, in_axes=(None, 0))(X, W)  # the matrix an argument, not batched
    np.testing.assert_allclose(shared, loop, rtol=1e-12, atol=1e-12)
    if name.startswith("X.dot") and X.format == "coo":
        return  # (a closed-over COO's .dot is refused: a test of test_sparse.py)
    closed = ng.vmap(lambda w: fun(X, w))(W)  # the matrix closed over
    np.testing.assert_allclose(closed, loop, rtol=1e-12, atol=1e-12)


@FEW
@given(X=sparse_matrices(), batch=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_per_example_gradients_of_the_dense_side_equal_a_loop(X: Any, batch: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    W, y = rng.normal(size=(batch, X.shape[1])), rng.normal(size=X.shape[0])

    def loss(X: Any, w: np.ndarray) -> Any:
        return ng.sum((np.tanh(X @ w) - y) ** 2)

    per_example = ng.vmap(ng.grad(loss, argnums=1), in_axes=(None, 0))(X, W)
    loop = np.stack([ng.grad(loss, argnums=1)(X, w) for w in W])
    np.testing.assert_allclose(per_example, loop, rtol=1e-12, atol=1e-13)
    # closed form: X.T @ (2 (t - y) (1 - t^2)), t = tanh(X w)
    D = X.toarray()
    for w, g in zip(W, per_example, strict=True):
        t = np.tanh(D @ w)
        np.testing.assert_allclose(g, D.T @ (2 * (t - y) * (1 - t**2)), rtol=1e-10, atol=1e-12)


# functions of one sparse matrix (built from batched values) and a dense vector w
OF_VALUES = {
    "X @ w": lambda X, w: X @ w,
    "X.T @ (X @ w)": lambda X, w: X.T @ (X @ w),
    "w @ X.T": lambda X, w: w @ X.T,
    "X.toarray()": lambda X, w: X.toarray(),
    "X.diagonal()": lambda X, w: X.diagonal(),
    "X.sum(axis=0)": lambda X, w: X.sum(axis=0),  # (an spmatrix's: 2-d)
    "X.mean(axis=1)": lambda X, w: X.mean(axis=1),
    "X.tocsc() @ w": lambda X, w: X.tocsc() @ w,
    "X.tocsr() @ w": lambda X, w: X.tocsr() @ w,
    "X.multiply(w) @ w": lambda X, w: X.multiply(w).tocsr() @ w,  # (scipy's multiply gives a coo_array)
    "X.sin() @ w": lambda X, w: X.sin() @ w,
    "X[rows] @ w": lambda X, w: X[[X.shape[0] - 1, 0, X.shape[0] - 1]] @ w,
}
# (those that move the values to another pattern: under vmap, also for a matrix storing nothing)
MOVING = {"X.toarray()", "X.diagonal()", "X.tocsc() @ w", "X.tocsr() @ w", "X.multiply(w) @ w", "X[rows] @ w"}


@pytest.mark.parametrize("name", sorted(OF_VALUES))
@FEW
@given(X=sparse_matrices(), batch=st.integers(1, 4), seed=st.integers(0, 2**32 - 1), both=st.booleans())
def test_vmap_over_values_on_one_pattern_equals_a_loop(name: str, X: Any, batch: int, seed: int, both: bool) -> None:
    assume(not (name.startswith("X[") and isinstance(X, ss.coo_matrix)))  # (scipy's coo_matrix: not subscriptable)
    fun = OF_VALUES[name]
    build, where = builder(X)
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(batch, X.nnz))
    W = rng.normal(size=(batch, X.shape[1]))
    w0 = W[0]

    def example(v: np.ndarray, w: np.ndarray) -> Any:
        return fun(build((v, *where), shape=X.shape), w)

    if both:  # the values and the dense side batched together
        got = ng.vmap(example)(V, W)
        loop = np.stack([np.asarray(scipy_answer(fun, with_data(X, v), w)) for v, w in zip(V, W, strict=True)])
    else:
        got = ng.vmap(example, in_axes=(0, None))(V, w0)
        loop = np.stack([np.asarray(scipy_answer(fun, with_data(X, v), w0)) for v in V])
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12)


@FEW
@given(X=sparse_matrices(), batch=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_per_example_gradients_of_values_equal_a_loop_and_central_differences(X: Any, batch: int, seed: int) -> None:
    build, where = builder(X)
    rng = np.random.default_rng(seed)
    V, w = rng.normal(size=(batch, X.nnz)), rng.normal(size=X.shape[1])

    def loss(v: np.ndarray) -> Any:
        A = build((v, *where), shape=X.shape)
        return ng.sum(np.sin(A @ w) ** 2) + A.power(2).sum()

    per_example = ng.vmap(ng.grad(loss))(V)
    for v, g in zip(V, per_example, strict=True):
        np.testing.assert_allclose(g, ng.grad(loss)(v), rtol=1e-12, atol=1e-13)
        # (scipy's power sums an entry's duplicates first, as nodegrad's)
        plain = lambda v: float(np.sum(np.sin(with_data(X, v) @ w) ** 2) + with_data(X, v).power(2).sum())
        np.testing.assert_allclose(g, central_difference(plain, v), rtol=1e-5, atol=1e-6)


# -- replay ------------------------------------------------------------------------------------------


def _loss(X: Any, w: np.ndarray) -> Any:
    return ng.sum(np.tanh(X @ w)) + ng.sum((X.T @ np.ones(X.shape[0])) * w) + X.multiply(X).sum() * 0.5


@SOME
@given(X=sparse_matrices(), Y=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_replay_is_the_eager_call_bit_for_bit_and_records_a_new_pattern_anew(X: Any, Y: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    f = ng.value_and_grad(_loss, argnums=(0, 1))
    fast = ng.replay(f)
    for M in (X, Y, with_data(X, rng.normal(size=X.nnz)), X):
        w = rng.normal(size=M.shape[1])
        before = snapshot(M)
        (value, (gM, gw)), (value_e, (gM_e, gw_e)) = fast(M, w), f(M, w)
        assert np.array_equal(value, value_e) and np.array_equal(gw, gw_e)
        assert_same_pattern(gM, M)
        assert np.array_equal(gM.data, gM_e.data)
        # and the eager value is the plain computation's
        # (X.multiply(X): of the entries, duplicates summed, as scipy's)
        plain = np.sum(np.tanh(M.toarray() @ w)) + np.sum(M.toarray().sum(axis=0) * w) + 0.5 * np.sum(M.toarray() ** 2)
        assert float(value) == pytest.approx(plain, rel=1e-12, abs=1e-12)
        for now, then in zip(snapshot(M), before, strict=True):
            np.testing.assert_array_equal(now, then)
    patterns = {(type(M).__name__, M.shape, tuple(np.concatenate(snapshot(M)[1:]))) for M in (X, Y)}
    assert len(fast.traces) == len(patterns)  # one recording per pattern, not per values


def test_replay_of_a_new_pattern_with_as_many_values_gives_the_new_answer() -> None:
    f = ng.replay(lambda X, w: X @ w)
    w = np.array([1.0, 10.0, 100.0])
    X = ss.csr_array((np.array([1.0, 2.0]), np.array([0, 2]), np.array([0, 1, 2])), shape=(2, 3))
    Y = ss.csr_array((np.array([1.0, 2.0]), np.array([1, 0]), np.array([0, 1, 2])), shape=(2, 3))
    Z = ss.csr_array((np.array([1.0, 2.0]), np.array([0, 2]), np.array([0, 2, 2])), shape=(2, 3))
    assert np.array_equal(f(X, w), [1.0, 200.0])
    assert np.array_equal(f(Y, w), [10.0, 2.0])  # same nnz and shape, another pattern: not X's answer
    assert np.array_equal(f(Z, w), [201.0, 0.0])  # same indices, another indptr
    assert np.array_equal(f(ss.csc_array(X), w), [1.0, 200.0])  # another class
    assert np.array_equal(f(ss.csr_matrix(X), w), [1.0, 200.0])
    assert len(f.traces) == 5
    assert np.array_equal(f(with_data(Y, np.array([3.0, 4.0])), w), [30.0, 4.0])  # Y's recording, new values
    assert len(f.traces) == 5


def test_replay_sees_a_changed_closed_over_matrix() -> None:
    model = {"X": ss.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))}
    f = ng.replay(lambda w: model["X"] @ w)
    g = ng.replay(ng.grad(lambda w: ng.sum(np.sin(model["X"] @ w))))
    w = np.array([1.0, 2.0, 3.0])
    assert np.array_equal(f(w), [7.0, 6.0])
    assert np.array_equal(g(w), ng.grad(lambda w: ng.sum(np.sin(model["X"] @ w)))(w))
    model["X"] = ss.csr_array(np.array([[0.0, 5.0, 0.0], [1.0, 0.0, 1.0]]))  # another matrix, another pattern
    assert np.array_equal(f(w), [10.0, 4.0])
    expected = model["X"].T @ np.cos(model["X"] @ w)
    np.testing.assert_allclose(g(w), expected, rtol=1e-14)
    model["X"].data[:] = [2.0, 3.0, 4.0]  # the same matrix, its values changed in place
    assert np.array_equal(f(w), [4.0, 15.0])
    expected = model["X"].T @ np.cos(model["X"] @ w)
    np.testing.assert_allclose(g(w), expected, rtol=1e-14)


# -- jvp, hvp, higher order ----------------------------------------------------------------------------


@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_jvp_with_respect_to_the_values_equals_central_differences(X: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, t = rng.normal(size=X.shape[1]), rng.normal(size=X.nnz)
    T = with_data(X, t)  # the tangent: a matrix on X's pattern

    def f(X: Any) -> Any:
        return np.tanh(X @ w) + np.reshape(X.sum(axis=1), (-1,)) * 0.5

    value, tangent = ng.jvp(f, (X,), (T,))
    plain = lambda d: np.tanh(with_data(X, d) @ w) + 0.5 * np.asarray(with_data(X, d).sum(axis=1)).reshape(-1)
    np.testing.assert_allclose(value, plain(X.data.copy()), rtol=1e-13, atol=1e-13)
    numeric = central_difference(lambda s: plain(X.data + s * t), np.array(0.0))
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-7)


@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_jvp_with_respect_to_the_dense_side(X: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, t = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[1])
    value, tangent = ng.jvp(lambda w: np.sin(X @ w), (w,), (t,))
    D = X.toarray()
    np.testing.assert_allclose(value, np.sin(D @ w), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(tangent, np.cos(D @ w) * (D @ t), rtol=1e-12, atol=1e-12)


@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_hvp_with_respect_to_the_values_equals_differences_of_gradients(X: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, v = rng.normal(size=X.shape[1]), rng.normal(size=X.nnz)

    def f(X: Any) -> Any:
        return ng.sum(np.tanh(X @ w) ** 2) + X.sin().sum()

    V = with_data(X, v)
    hv = ng.hvp(f, X, V)
    assert_same_pattern(hv, X)
    grad = ng.grad(f)
    numeric = central_difference(lambda s: grad(with_data(X, X.data + s * v)).data, np.array(0.0), h=1e-5)
    np.testing.assert_allclose(hv.data, numeric, rtol=1e-5, atol=1e-6)


@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_hessian_and_grad_of_grad_with_respect_to_dense_weights(X: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, v = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[1])

    def f(w: np.ndarray) -> Any:
        return ng.sum(np.tanh(X @ w))

    D = X.toarray()
    t = np.tanh(D @ w)
    expected = D.T @ np.diag(-2 * t * (1 - t**2)) @ D  # numpy's closed form
    np.testing.assert_allclose(ng.hessian(f)(w), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ng.hvp(f, w, v), expected @ v, rtol=1e-10, atol=1e-12)
    gg = ng.grad(lambda w: ng.sum(ng.grad(f)(w) * v))(w)
    np.testing.assert_allclose(gg, expected @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ng.jacobian(lambda w: X @ w)(w), D, rtol=0, atol=0)


@FEW
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_hessian_with_respect_to_values_building_the_matrix(X: Any, seed: int) -> None:
    build, where = builder(X)
    w = np.random.default_rng(seed).normal(size=X.shape[1])

    def f(v: np.ndarray) -> Any:
        return ng.sum((build((v, *where), shape=X.shape) @ w) ** 2)

    # f = |J v|^2 with J[i, k] = w[c_k] where r_k == i: the Hessian is 2 J^T J
    rows, cols = coordinates(X)
    J = np.zeros((X.shape[0], X.nnz))
    J[rows, np.arange(X.nnz)] = w[cols]
    np.testing.assert_allclose(ng.hessian(f)(X.data.copy()), 2 * J.T @ J, rtol=1e-12, atol=1e-12)


# -- spsolve -----------------------------------------------------------------------------------------


@st.composite
def systems(draw: st.DrawFn) -> Any:
    """A nonsingular square sparse matrix: a drawn one plus a dominant diagonal (stored in the
    same format and class, so its pattern holds the diagonal); for a COO one, at times stored
    apart, after the drawn values: duplicates of the diagonal entries it stores."""
    X = draw(sparse_matrices(square=True, max_side=6))
    n = X.shape[0]
    if X.format == "coo" and draw(st.booleans()):
        rows, cols = coordinates(X)
        size = 1.0 + 2.0 * np.bincount(rows, weights=np.abs(X.data), minlength=n).max()  # each row's, bounded
        data = np.concatenate([X.data, np.full(n, size)])
        rows, cols = np.concatenate([rows, np.arange(n)]), np.concatenate([cols, np.arange(n)])
        return type(X)((data, (rows, cols)), shape=(n, n))
    dominant = ss.coo_array((np.full(n, 3.0 * n), (np.arange(n), np.arange(n))), shape=(n, n))
    return type(X)((X + dominant).asformat(X.format))


@SOME
@given(A=systems(), seed=st.integers(0, 2**32 - 1), columns=st.sampled_from([None, 1, 3]))
def test_spsolve_gradients_equal_central_differences_and_dense_solves(A: Any, seed: int, columns: int | None) -> None:
    n = A.shape[0]
    rng = np.random.default_rng(seed)
    shape = (n,) if columns is None else (n, columns)
    b, C = rng.normal(size=shape), rng.normal(size=shape)

    def loss(A: Any, b: np.ndarray) -> Any:
        return ng.sum(spsolve(A, b) * C)

    value, (gA, gb) = ng.value_and_grad(loss, argnums=(0, 1))(A, b)
    D = A.toarray()
    x = np.linalg.solve(D, b)
    assert float(value) == pytest.approx(float(np.sum(x * C)), rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(
        ng.replay(lambda A, b: spsolve(A, b))(A, b), ssl.spsolve(A.tocsc(), b).reshape(shape), rtol=1e-10, atol=1e-12
    )
    lam = np.linalg.solve(D.T, C)  # the adjoint solve, densely
    np.testing.assert_allclose(gb, lam, rtol=1e-9, atol=1e-12)
    rows, cols = coordinates(A)
    expected = -np.sum(np.reshape(lam[rows] * x[cols], (A.nnz, -1)), axis=1)
    assert_same_pattern(gA, A)
    np.testing.assert_allclose(gA.data, expected, rtol=1e-9, atol=1e-12)
    plain = lambda d: float(np.sum(np.linalg.solve(with_data(A, d).toarray(), b) * C))
    np.testing.assert_allclose(gA.data, central_difference(plain, A.data.copy()), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        gb, central_difference(lambda b: float(np.sum(np.linalg.solve(D, b) * C)), b), rtol=1e-6, atol=1e-8
    )


def test_spsolve_of_a_coo_matrix_with_duplicates() -> None:
    A = ss.coo_array((np.array([2.0, 1.0, 4.0, 1.0]), (np.array([0, 0, 1, 1]), np.array([0, 0, 1, 0]))), shape=(2, 2))
    b = np.array([1.0, 2.0])
    gA = ng.grad(lambda A: ng.sum(spsolve(A, b)))(A)
    D = A.toarray()  # [[3, 0], [1, 4]]
    x, lam = np.linalg.solve(D, b), np.linalg.solve(D.T, np.ones(2))
    np.testing.assert_allclose(gA.data, [-lam[0] * x[0], -lam[0] * x[0], -lam[1] * x[1], -lam[1] * x[0]], rtol=1e-12)


@FEW
@given(A=systems(), batch=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_spsolve_under_vmap_equals_a_loop(A: Any, batch: int, seed: int) -> None:
    n = A.shape[0]
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(batch, n))
    loop = np.stack([ssl.spsolve(A.tocsc(), b) for b in B]).reshape(batch, n)
    np.testing.assert_allclose(ng.vmap(lambda b: spsolve(A, b))(B), loop, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ng.vmap(spsolve, in_axes=(None, 0))(A, B), loop, rtol=1e-10, atol=1e-12)
    grads = ng.vmap(ng.grad(lambda b: ng.sum(spsolve(A, b) ** 2)))(B)
    D = A.toarray()
    for b, g in zip(B, grads, strict=True):
        np.testing.assert_allclose(g, np.linalg.solve(D.T, 2 * np.linalg.solve(D, b)), rtol=1e-9, atol=1e-12)
    # the matrix's values batched: one system per example, on one pattern
    build, where = builder(A)
    V = A.data[None, :] * (1.0 + 0.1 * rng.random(size=(batch, A.nnz)))
    got = ng.vmap(lambda v, b: spsolve(build((v, *where), shape=A.shape), b))(V, B)
    loop = np.stack([np.linalg.solve(with_data(A, v).toarray(), b) for v, b in zip(V, B, strict=True)])
    np.testing.assert_allclose(got, loop, rtol=1e-9, atol=1e-12)


# -- the optimisers' steps ----------------------------------------------------------------------------


def _model() -> dict[str, Any]:
    X = ss.coo_array((np.array([1.0, 2.0, -3.0, 0.5]), (np.array([0, 0, 1, 2]), np.array([0, 0, 2, 1]))), shape=(3, 3))
    return {"X": X, "w": np.array([1.0, -2.0, 0.5])}


def _objective(p: dict[str, Any]) -> Any:
    return ng.sum(np.tanh(p["X"] @ p["w"]) ** 2) + 0.1 * ng.sum(p["w"] ** 2)


def test_sgd_step_on_a_sparse_parameter() -> None:
    params = _model()
    grads = ng.grad(_objective)(params)
    before = snapshot(params["X"])
    new = ng.optim.sgd(params, grads, lr=0.1)
    assert_same_pattern(new["X"], params["X"])
    np.testing.assert_allclose(new["X"].data, params["X"].data - 0.1 * grads["X"].data, rtol=1e-15)
    np.testing.assert_allclose(new["w"], params["w"] - 0.1 * grads["w"], rtol=1e-15)
    for now, then in zip(snapshot(params["X"]), before, strict=True):  # a dense step leaves the old one alone
        np.testing.assert_array_equal(now, then)
    assert _objective(new) < _objective(params)


def test_adam_steps_on_a_sparse_parameter() -> None:
    params, state = _model(), None
    lr, b1, b2, eps = 0.05, 0.9, 0.999, 1e-8
    m = v = np.zeros(params["X"].nnz)
    x = params["X"].data.copy()
    for step in (1, 2, 3):
        grads = ng.grad(_objective)(params)
        params, state = ng.optim.adam(params, grads, state, lr=lr)
        g = grads["X"].data
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        x = x - lr * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
        assert type(params["X"]) is ss.coo_array and state.step == step
        assert_same_pattern(params["X"], _model()["X"])
        np.testing.assert_allclose(params["X"].data, x, rtol=1e-13)
        np.testing.assert_allclose(np.asarray(state.mu["X"].data), m, rtol=1e-13)


@pytest.mark.parametrize("cls", [ss.csr_array, ss.csr_matrix, ss.csc_array, ss.coo_array])
def test_sparse_rows_gradient_of_a_sparse_parameter_keeps_its_pattern(cls: type) -> None:
    X = cls(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]))
    ids = np.array([3, 0, 3, 2])
    w = np.array([0.5, -1.0, 2.0])

    def loss(X: Any) -> Any:
        return ng.sum(np.sin(X[ids] @ w))

    sparse = ng.grad(loss, sparse_rows=True)(X)
    dense = ng.grad(loss)(X)
    assert_same_pattern(sparse, X)
    np.testing.assert_allclose(sparse.data, dense.data, rtol=1e-15)
    D = X.toarray()
    G = np.zeros_like(D)
    for i in ids:  # a Python loop over the rows read
        G[i] += np.cos(D[i] @ w) * w
    rows, cols = coordinates(X)
    np.testing.assert_allclose(sparse.data, G[rows, cols], rtol=1e-13)
    moved = ng.optim.sgd({"X": X}, {"X": sparse}, lr=0.5)["X"]
    np.testing.assert_allclose(moved.data, X.data - 0.5 * G[rows, cols], rtol=1e-13)


@pytest.mark.parametrize("cls", [ss.coo_matrix, ss.coo_array])
def test_vmap_over_values_of_a_one_row_coo_matrix(cls: type) -> None:
    X = cls(np.array([[2.0, 0.0, 1.0]]))
    build, where = builder(X)
    V, w = np.array([[0.5, 3.0]]), np.array([1.0, 10.0, 100.0])
    got = ng.vmap(lambda v: build((v, *where), shape=X.shape) @ w)(V)
    assert np.shape(got) == (1, 1)
    np.testing.assert_array_equal(got, [[300.5]])
    V = np.array([[0.5, 3.0], [1.0, -2.0]])  # two examples
    np.testing.assert_array_equal(ng.vmap(lambda v: build((v, *where), shape=X.shape) @ w)(V), [[300.5], [-199.0]])
    sums = ng.vmap(lambda v: build((v, *where), shape=X.shape).sum(axis=1))(V)
    np.testing.assert_array_equal(np.reshape(sums, (2, -1)), [[3.5], [-1.0]])
    grads = ng.vmap(ng.grad(lambda v: ng.sum(build((v, *where), shape=X.shape) @ w)))(V)
    np.testing.assert_array_equal(grads, [[1.0, 100.0], [1.0, 100.0]])


def test_methods_of_a_sparse_argument_that_is_not_followed() -> None:
    X = ss.csr_array(np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]))
    w = np.array([1.0, 2.0, 3.0])
    seen = []

    def f(X: Any, w: np.ndarray) -> Any:
        seen.append(sp.issparse(X) and not ss.issparse(X))  # a SparseMatrix inside, not the scipy matrix
        return X.multiply(w).sum()

    g = ng.grad(f, argnums=1)(X, w)
    np.testing.assert_array_equal(g, [2.0, 3.0, 1.0])  # the column sums
    assert seen == [True]
    W = np.stack([w, 2 * w])
    got = ng.vmap(lambda X, w: X.multiply(w).sum(axis=1), in_axes=(None, 0))(X, W)
    np.testing.assert_array_equal(got, [[5.0, 6.0], [10.0, 12.0]])


@pytest.mark.parametrize("kind", ["coo_matrix", "coo_array"])
def test_hessian_of_values_of_a_one_by_one_coo_matrix(kind: str) -> None:
    r, c = np.array([0]), np.array([0])
    build = getattr(sp, kind)

    def f(v: np.ndarray) -> Any:
        return ng.sum((build((v, (r, c)), shape=(1, 1)) @ np.array([2.0])) ** 2)

    np.testing.assert_array_equal(ng.grad(f)(np.array([3.0])), [24.0])
    np.testing.assert_array_equal(ng.hessian(f)(np.array([3.0])), [[8.0]])


@pytest.mark.parametrize("name", sorted(MOVING))
def test_vmap_over_values_of_a_matrix_storing_nothing(name: str) -> None:
    X = ss.coo_array((2, 3))  # (a COO: each of those moves its values, none is the identity)
    build, where = builder(X)
    fun = OF_VALUES[name]
    w = np.array([1.0, 2.0, 3.0])
    got = ng.vmap(lambda v: fun(build((v, *where), shape=X.shape), w))(np.zeros((2, 0)))
    expected = np.asarray(fun(X, w))  # zeros, scipy's shape
    np.testing.assert_array_equal(got, np.stack([expected, expected]))
