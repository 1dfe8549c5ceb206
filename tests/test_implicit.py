"""Implicit differentiation: ``ng.custom_root`` and ``ng.custom_fixed_point`` make a solver's
answer differentiable with respect to its arguments by the implicit function theorem.

Every derivative is checked against a closed form where one exists (cube root, square
root, ridge regression, a linear fixed point) and against float64 central differences of
the solved problem (the solver re-run at perturbed arguments), under ``grad``, ``jvp``,
``vmap``, ``hessian`` and ``jacobian``, for structured arguments and answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.errors import ArgumentError, ImplicitDiffError, NodegradError, ShapeError
from nodegrad.implicit import LINEAR_SOLVERS
from tests.finite_differences import central_difference

FEW = settings(max_examples=15, deadline=None)
SOME = settings(max_examples=20, deadline=None)

seeds = st.integers(0, 2**32 - 1)
positive = st.floats(0.2, 60.0, allow_nan=False, allow_infinity=False)


# -- solvers, run on plain values -----------------------------------------------------------


def newton_cube_root(x: Any, a: Any) -> np.ndarray:
    """Elementwise Newton for ``x**3 = a`` (a > 0), on plain arrays."""
    x = np.array(x, dtype=np.float64) * np.ones(np.shape(a))
    for _ in range(200):
        step = (x**3 - a) / (3 * x**2)
        x = x - step
        if np.all(np.abs(step) <= 1e-15 * np.abs(x)):
            break
    return x


cube_root = ng.custom_root(lambda x, a: x**3 - a)(newton_cube_root)


@ng.custom_fixed_point(lambda x, a: 0.5 * (x + a / x))
def square_root(x: Any, a: Any) -> float:
    """Heron's iteration with Python floats."""
    x, a = float(x), float(a)
    for _ in range(200):
        new = 0.5 * (x + a / x)
        if new == x:
            break
        x = new
    return x


def random_problem(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=n)


def ridge_solver(x_design: np.ndarray, y: np.ndarray, solve: Any = "auto") -> Callable[..., Any]:
    """``w*(lam) = (X^T X + lam I)^-1 X^T y`` as the root of the ridge objective's gradient."""
    d = x_design.shape[1]

    def stationary(w: Any, lam: Any) -> Any:
        return x_design.T @ (x_design @ w - y) + lam * w

    @ng.custom_root(stationary, solve=solve)
    def ridge(w0: Any, lam: Any) -> np.ndarray:
        return np.linalg.solve(x_design.T @ x_design + float(lam) * np.eye(d), x_design.T @ y)

    return ridge


def ridge_closed_form(x_design: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``w*`` and ``K = X^T X + lam I``."""
    k = x_design.T @ x_design + lam * np.eye(x_design.shape[1])
    return np.linalg.solve(k, x_design.T @ y), k


def contraction(seed: int, n: int, *, symmetric: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``M`` with spectral norm 0.6 and ``c``: ``x = M x + c`` has one fixed point."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n))
    if symmetric:
        m = m + m.T
    m = 0.6 * m / np.linalg.norm(m, 2)
    return m, rng.normal(size=n)


def linear_fixed_point(solve: Any = "auto") -> Callable[..., Any]:
    @ng.custom_fixed_point(lambda x, m, c: m @ x + c, solve=solve)
    def iterate(x: Any, m: Any, c: Any) -> np.ndarray:
        x = np.array(x, dtype=np.float64)
        for _ in range(2000):
            new = m @ x + c
            if np.max(np.abs(new - x)) <= 1e-15 * (1.0 + np.max(np.abs(x))):
                return new
            x = new
        return x

    return iterate


# -- scalar closed forms: cube root and square root -----------------------------------------


@SOME
@given(a=positive)
def test_cube_root_gradient_is_the_closed_form_and_the_finite_difference(a: float) -> None:
    g = ng.grad(lambda a: cube_root(1.0, a))(a)
    assert g == pytest.approx(a ** (-2 / 3) / 3, rel=1e-10)
    assert g == pytest.approx(float(central_difference(lambda a: cube_root(1.0, a), a)), rel=1e-6)


@FEW
@given(a=positive)
def test_cube_root_higher_derivatives_are_the_closed_forms(a: float) -> None:
    second = ng.hessian(lambda a: cube_root(1.0, a))(a)
    assert float(second) == pytest.approx(-2 / 9 * a ** (-5 / 3), rel=1e-9)
    first = ng.grad(lambda a: cube_root(1.0, a))
    assert float(second) == pytest.approx(float(central_difference(first, a)), rel=1e-5)
    third = ng.grad(ng.grad(ng.grad(lambda a: cube_root(1.0, a))))(a)
    assert float(third) == pytest.approx(10 / 27 * a ** (-8 / 3), rel=1e-8)


@SOME
@given(values=st.lists(positive, min_size=1, max_size=5))
def test_elementwise_cube_root_under_jacobian_jvp_and_vmap(values: list[float]) -> None:
    a = np.array(values)
    expected = a ** (-2 / 3) / 3
    jac = ng.jacobian(lambda a: cube_root(np.ones(a.shape), a))(a)
    np.testing.assert_allclose(jac, np.diag(expected), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(jac, central_difference(lambda a: cube_root(np.ones(a.shape), a), a), rtol=1e-6)
    tangent = np.linspace(-1.0, 1.0, a.size)
    primal, out = ng.jvp(lambda a: cube_root(np.ones(a.shape), a), (a,), (tangent,))
    np.testing.assert_allclose(primal, np.cbrt(a), rtol=1e-13)
    np.testing.assert_allclose(out, expected * tangent, rtol=1e-10, atol=1e-14)
    # vmap over the hyperparameter of a scalar solver, and vmap of its gradient
    np.testing.assert_allclose(ng.vmap(lambda a: cube_root(1.0, a))(a), np.cbrt(a), rtol=1e-13)
    np.testing.assert_allclose(ng.vmap(ng.grad(lambda a: cube_root(1.0, a)))(a), expected, rtol=1e-10)


@SOME
@given(a=positive)
def test_square_root_fixed_point_derivatives(a: float) -> None:
    f = lambda a: square_root(1.0, a)
    assert f(a) == pytest.approx(np.sqrt(a), rel=1e-14)
    assert ng.grad(f)(a) == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)
    assert ng.grad(f)(a) == pytest.approx(float(central_difference(f, a)), rel=1e-6)
    assert float(ng.hessian(f)(a)) == pytest.approx(-0.25 * a**-1.5, rel=1e-9)
    assert float(ng.hessian(f)(a)) == pytest.approx(float(central_difference(ng.grad(f), a)), rel=1e-5)
    _, tangent = ng.jvp(f, (a,), (2.0,))
    assert float(tangent) == pytest.approx(1.0 / np.sqrt(a), rel=1e-10)
    batch = np.array([a, 2 * a, 3 * a])
    np.testing.assert_allclose(ng.vmap(ng.grad(f))(batch), 0.5 / np.sqrt(batch), rtol=1e-10)


def test_the_solver_only_ever_sees_plain_values() -> None:
    seen: list[type] = []

    @ng.custom_fixed_point(lambda x, a: 0.5 * (x + a / x))
    def heron(x: Any, a: Any) -> float:
        seen.extend([type(x), type(a)])
        x, a = float(x), float(a)
        for _ in range(100):
            x = 0.5 * (x + a / x)
        return x

    f = lambda a: heron(1.0, a)
    ng.grad(f)(4.0)
    ng.hessian(f)(4.0)
    ng.jvp(f, (4.0,), (1.0,))
    ng.jacobian(f)(4.0)
    ng.vmap(f)(np.array([4.0, 9.0]))
    ng.vmap(ng.grad(f))(np.array([4.0, 9.0]))
    assert seen
    assert set(seen) <= {float, np.float64, np.ndarray}


def test_init_gets_no_gradient_and_keywords_bind_to_the_solver() -> None:
    assert ng.grad(lambda x0: cube_root(x0, 8.0))(1.5) == 0.0
    assert ng.grad(lambda a: cube_root(1.0, a=a))(8.0) == pytest.approx(1 / 12, rel=1e-12)
    assert cube_root.__name__ == "newton_cube_root"  # (the solver's name and docstring kept)


# -- ridge regression: w*(lam) = (X^T X + lam I)^-1 X^T y ---------------------------------------


@SOME
@given(seed=seeds, n=st.integers(1, 8), d=st.integers(1, 5), lam=st.floats(0.05, 10.0))
def test_ridge_derivatives_are_the_closed_forms(seed: int, n: int, d: int, lam: float) -> None:
    x_design, y = random_problem(seed, n, d)
    ridge = ridge_solver(x_design, y)
    w_star, k = ridge_closed_form(x_design, y, lam)
    dw = -np.linalg.solve(k, w_star)  # dw*/dlam
    d2w = 2 * np.linalg.solve(k, np.linalg.solve(k, w_star))
    v = np.random.default_rng(seed + 1).normal(size=d)
    fit = lambda lam: ridge(np.zeros(d), lam)
    loss = lambda lam: v @ fit(lam)

    np.testing.assert_allclose(fit(lam), w_star, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ng.jacobian(fit)(lam), dw, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ng.jacobian(fit)(lam), central_difference(fit, lam), rtol=1e-5, atol=1e-8)
    assert ng.grad(loss)(lam) == pytest.approx(v @ dw, rel=1e-8, abs=1e-12)
    _, tangent = ng.jvp(fit, (lam,), (0.5,))
    np.testing.assert_allclose(tangent, 0.5 * dw, rtol=1e-8, atol=1e-12)
    second = float(ng.hessian(loss)(lam))
    assert second == pytest.approx(v @ d2w, rel=1e-7, abs=1e-10)
    assert second == pytest.approx(float(central_difference(ng.grad(loss), lam)), rel=1e-4, abs=1e-7)


@FEW
@given(seed=seeds, d=st.integers(1, 4), lams=st.lists(st.floats(0.1, 5.0), min_size=1, max_size=4))
def test_ridge_under_vmap_over_the_penalty(seed: int, d: int, lams: list[float]) -> None:
    x_design, y = random_problem(seed, 6, d)
    ridge = ridge_solver(x_design, y)
    v = np.ones(d)
    batch = np.array(lams)
    fits = ng.vmap(lambda lam: ridge(np.zeros(d), lam))(batch)
    grads = ng.vmap(ng.grad(lambda lam: v @ ridge(np.zeros(d), lam)))(batch)
    for lam, w, g in zip(lams, fits, grads, strict=True):
        w_star, k = ridge_closed_form(x_design, y, lam)
        np.testing.assert_allclose(w, w_star, rtol=1e-9, atol=1e-12)
        assert g == pytest.approx(-v @ np.linalg.solve(k, w_star), rel=1e-8, abs=1e-12)


@SOME
@given(seed=seeds, n=st.integers(2, 8), d=st.integers(1, 4), lam=st.floats(0.1, 5.0))
def test_structured_hyperparameters_get_structured_gradients(seed: int, n: int, d: int, lam: float) -> None:
    x_design, y = random_problem(seed, n, d)

    def stationary(w: Any, hp: dict[str, Any]) -> Any:
        return x_design.T @ (x_design @ w - hp["y"]) + hp["lam"] * w

    @ng.custom_root(stationary)
    def ridge(w0: Any, hp: dict[str, Any]) -> np.ndarray:
        k = x_design.T @ x_design + float(hp["lam"]) * np.eye(d)
        return np.linalg.solve(k, x_design.T @ np.asarray(hp["y"]))

    v = np.random.default_rng(seed + 7).normal(size=d)
    hp = {"lam": lam, "y": y}
    g = ng.grad(lambda hp: v @ ridge(np.zeros(d), hp))(hp)
    assert set(g) == {"lam", "y"}
    w_star, k = ridge_closed_form(x_design, y, lam)
    u = np.linalg.solve(k, v)
    assert g["lam"] == pytest.approx(-u @ w_star, rel=1e-8, abs=1e-12)
    np.testing.assert_allclose(g["y"], x_design @ u, rtol=1e-8, atol=1e-12)
    fd_y = central_difference(lambda y: v @ ridge(np.zeros(d), {"lam": lam, "y": y}), y)
    np.testing.assert_allclose(g["y"], fd_y, rtol=1e-5, atol=1e-8)


@attrs.define
class Fit:
    """A structured answer: weights, an intercept and a static iteration count."""

    w: np.ndarray
    b: np.ndarray
    iterations: int


@pytest.mark.parametrize("kind", ["dict", "record"])
@SOME
@given(seed=seeds, n=st.integers(3, 9), d=st.integers(1, 4), lam=st.floats(0.1, 5.0))
def test_structured_answers(kind: str, seed: int, n: int, d: int, lam: float) -> None:
    """Ridge with an unpenalised intercept, the answer a dict or an attrs record: theta* =
    K^-1 Z^T y with Z = [X, 1], K = Z^T Z + lam D, D = diag(1, ..., 1, 0); dtheta*/dlam =
    -K^-1 D theta*."""
    x_design, y = random_problem(seed, n, d)
    z = np.column_stack([x_design, np.ones(n)])
    penalised = np.append(np.ones(d), 0.0)

    def pack(w: Any, b: Any) -> Any:
        return {"w": w, "b": b} if kind == "dict" else Fit(w, b, 0)

    def parts(p: Any) -> tuple[Any, Any]:
        return (p["w"], p["b"]) if kind == "dict" else (p.w, p.b)

    def stationary(p: Any, lam: Any) -> Any:
        w, b = parts(p)
        r = x_design @ w + b - y
        return pack(x_design.T @ r + lam * w, np.sum(r, keepdims=True))

    @ng.custom_root(stationary)
    def fit(p0: Any, lam: Any) -> Any:
        theta = np.linalg.solve(z.T @ z + float(lam) * np.diag(penalised), z.T @ y)
        out = pack(theta[:d], theta[d:])
        if kind == "record":
            out = attrs.evolve(out, iterations=1)
        return out

    k = z.T @ z + lam * np.diag(penalised)
    theta = np.linalg.solve(k, z.T @ y)
    dtheta = -np.linalg.solve(k, penalised * theta)
    init = pack(np.zeros(d), np.zeros(1))
    answer = fit(init, lam)
    if kind == "record":
        assert isinstance(answer, Fit) and answer.iterations == 1
    np.testing.assert_allclose(parts(answer)[0], theta[:d], rtol=1e-8, atol=1e-10)

    def loss(lam: Any) -> Any:
        w, b = parts(fit(init, lam))
        return np.sum(np.arange(1.0, d + 1) * w) + 3.0 * np.sum(b)

    expected = np.append(np.arange(1.0, d + 1), 3.0) @ dtheta
    assert ng.grad(loss)(lam) == pytest.approx(expected, rel=1e-7, abs=1e-10)
    assert ng.grad(loss)(lam) == pytest.approx(float(central_difference(loss, lam)), rel=1e-5, abs=1e-8)
    jac = ng.jacobian(lambda lam: fit(init, lam))(lam)
    np.testing.assert_allclose(parts(jac)[0], dtheta[:d], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(parts(jac)[1], dtheta[d:], rtol=1e-7, atol=1e-10)


# -- a linear fixed point: x = M x + c, x* = (I - M)^-1 c ---------------------------------------


@SOME
@given(seed=seeds, n=st.integers(1, 6))
def test_linear_fixed_point_derivatives_are_the_closed_forms(seed: int, n: int) -> None:
    m, c = contraction(seed, n)
    solver = linear_fixed_point()
    inverse = np.linalg.inv(np.eye(n) - m)
    x_star = inverse @ c
    np.testing.assert_allclose(solver(np.zeros(n), m, c), x_star, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ng.jacobian(lambda c: solver(np.zeros(n), m, c))(c), inverse, rtol=1e-9, atol=1e-12)
    v = np.random.default_rng(seed + 3).normal(size=n)
    gm, gc = ng.grad(lambda m, c: v @ solver(np.zeros(n), m, c), argnums=(0, 1))(m, c)
    u = inverse.T @ v
    np.testing.assert_allclose(gc, u, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gm, np.outer(u, x_star), rtol=1e-9, atol=1e-12)
    fd = central_difference(lambda m: v @ solver(np.zeros(n), m, c), m)
    np.testing.assert_allclose(gm, fd, rtol=1e-5, atol=1e-8)
    tangent = np.ones(n)
    _, out = ng.jvp(lambda c: solver(np.zeros(n), m, c), (c,), (tangent,))
    np.testing.assert_allclose(out, inverse @ tangent, rtol=1e-9, atol=1e-12)
    # vmap over the offsets c (one fixed point each)
    cs = np.stack([c, 2 * c, -c])
    np.testing.assert_allclose(ng.vmap(lambda c: solver(np.zeros(n), m, c))(cs), cs @ inverse.T, rtol=1e-9, atol=1e-12)


# -- the linear solvers ---------------------------------------------------------------------------


@pytest.mark.parametrize("solve", LINEAR_SOLVERS)
def test_every_linear_solver_gives_the_same_gradient_on_a_symmetric_system(solve: str) -> None:
    x_design, y = random_problem(11, 9, 4)
    lam = 0.3
    ridge = ridge_solver(x_design, y, solve=solve)
    w_star, k = ridge_closed_form(x_design, y, lam)
    v = np.arange(1.0, 5.0)
    g = ng.grad(lambda lam: v @ ridge(np.zeros(4), lam))(lam)
    assert g == pytest.approx(-v @ np.linalg.solve(k, w_star), rel=1e-7)
    # and I - M symmetric positive definite, by custom_fixed_point
    m, c = contraction(5, 5, symmetric=True)
    gc = ng.grad(lambda c: np.sum(linear_fixed_point(solve)(np.zeros(5), m, c)))(c)
    np.testing.assert_allclose(gc, np.linalg.solve(np.eye(5) - m, np.ones(5)), rtol=1e-7)


@pytest.mark.parametrize("solve", ["auto", "dense", "gmres", "bicgstab"])
def test_the_general_linear_solvers_on_a_nonsymmetric_system(solve: str) -> None:
    m, c = contraction(3, 6)
    v = np.linspace(-1.0, 2.0, 6)
    gc = ng.grad(lambda c: v @ linear_fixed_point(solve)(np.zeros(6), m, c))(c)
    np.testing.assert_allclose(gc, np.linalg.solve((np.eye(6) - m).T, v), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("solve", ["auto", "gmres", "cg"])
def test_a_system_larger_than_the_dense_limit(solve: str) -> None:
    """Past 64 unknowns "auto" goes matrix-free; the gradient is the same."""
    x_design, y = random_problem(2, 90, 70)
    ridge = ridge_solver(x_design, y, solve=solve)
    w_star, k = ridge_closed_form(x_design, y, 2.0)
    v = np.cos(np.arange(70.0))
    g = ng.grad(lambda lam: v @ ridge(np.zeros(70), lam))(2.0)
    assert g == pytest.approx(-v @ np.linalg.solve(k, w_star), rel=1e-6)


def test_a_callable_linear_solver_is_used() -> None:
    calls: list[tuple[int, ...]] = []

    def solve(matvec: Callable[[np.ndarray], np.ndarray], b: np.ndarray) -> np.ndarray:
        calls.append(b.shape)
        matrix = np.stack([matvec(e) for e in np.eye(b.size)], axis=1)
        return np.linalg.solve(matrix, b)

    x_design, y = random_problem(4, 7, 3)
    ridge = ridge_solver(x_design, y, solve=solve)
    w_star, k = ridge_closed_form(x_design, y, 1.5)
    g = ng.grad(lambda lam: np.sum(ridge(np.zeros(3), lam)))(1.5)
    assert calls == [(3,)]
    assert g == pytest.approx(-np.sum(np.linalg.solve(k, w_star)), rel=1e-9)

    # a deliberately wrong one shows up in the gradient: it is not bypassed
    halved = ridge_solver(x_design, y, solve=lambda matvec, b: 0.5 * solve(matvec, b))
    assert ng.grad(lambda lam: np.sum(halved(np.zeros(3), lam)))(1.5) == pytest.approx(0.5 * g, rel=1e-9)


# -- closures -----------------------------------------------------------------------------------


def test_a_hyperparameter_closed_over_by_the_differentiated_function() -> None:
    x_design, y = random_problem(8, 6, 3)
    ridge = ridge_solver(x_design, y)

    def outer(scale: Any) -> Any:
        def loss_of(lam: Any) -> Any:  # scale reaches the solver's args only through a closure
            return np.sum(ridge(np.zeros(3), scale * lam) ** 2)

        return loss_of(2.0)

    w_star, k = ridge_closed_form(x_design, y, 0.8)
    expected = 2 * w_star @ (-np.linalg.solve(k, w_star)) * 2.0
    assert ng.grad(outer)(0.4) == pytest.approx(expected, rel=1e-8)
    assert ng.grad(outer)(0.4) == pytest.approx(float(central_difference(outer, 0.4)), rel=1e-6)


def test_a_closure_inside_the_optimality_functions_args() -> None:
    """x = f(x) with f = lambda x: lam cos(x) passed as an argument, lam closed over: dx/dlam
    = cos(x) / (1 + lam sin(x))."""

    @ng.custom_fixed_point(lambda x, f: f(x))
    def iterate(x: Any, f: Callable[[Any], Any]) -> Any:
        for _ in range(500):
            x = f(x)
        return x

    def solved(lam: Any) -> Any:
        return iterate(0.0, lambda x: lam * np.cos(x))

    lam = 0.5
    x = float(solved(lam))
    assert x == pytest.approx(lam * np.cos(x), rel=1e-14)
    g = ng.grad(solved)(lam)
    assert g == pytest.approx(np.cos(x) / (1 + lam * np.sin(x)), rel=1e-10)
    assert g == pytest.approx(float(central_difference(solved, lam)), rel=1e-6)


def test_a_traced_value_inside_a_function_argument_is_refused_not_dropped() -> None:
    @ng.custom_fixed_point(lambda x, f: f(x))
    def iterate(x: Any, f: Callable[[Any], Any]) -> float:
        x = float(x)
        for _ in range(500):
            x = float(f(x))
        return x

    lam = 0.5
    x = iterate(0.0, lambda x: lam * np.cos(x))
    assert x == pytest.approx(lam * np.cos(x), rel=1e-14)
    # A traced value reaching the solver inside a function argument is not a differentiated
    # argument: the solver's float() of it is refused (never a silently wrong gradient).
    with pytest.raises(NodegradError):
        ng.grad(lambda lam: iterate(0.0, lambda x: lam * np.cos(x)))(lam)


def test_a_traced_value_closed_over_by_the_optimality_function_is_not_silently_dropped() -> None:
    def outer(a: Any) -> Any:
        root = ng.custom_root(lambda x: x**3 - a)(lambda x: newton_cube_root(x, ng.stop_gradient(a)))
        return root(1.0)

    try:
        g = ng.grad(outer)(8.0)
    except NodegradError:
        return  # refusing is as good as the right answer
    assert g == pytest.approx(1 / 12, rel=1e-10)


# -- errors -------------------------------------------------------------------------------------


def at_a(x: Any, a: Any) -> np.ndarray:
    return np.array(a, dtype=np.float64)


SINGULAR_SOLVERS = ["auto", "dense", "cg", "gmres", "bicgstab"]


@pytest.mark.parametrize("solve", SINGULAR_SOLVERS)
@pytest.mark.parametrize("transform", ["grad", "hessian", "jvp"])
def test_a_singular_system_is_an_implicit_diff_error_naming_the_solvers(solve: str, transform: str) -> None:
    """(x - a)**3 = 0 at x = a, where its x-Jacobian 3 (x - a)**2 is exactly zero."""
    exact_at_a = ng.custom_root(lambda x, a: (x - a) ** 3, solve=solve)(at_a)
    f = lambda a: np.sum(exact_at_a(np.zeros(2), a))
    if transform == "jvp":
        run = lambda: ng.jvp(ng.grad(f), (np.ones(2),), (np.ones(2),))
    else:
        run = lambda: getattr(ng, transform)(f)(np.ones(2))
    with pytest.raises(ImplicitDiffError) as info:
        run()
    message = str(info.value)
    assert "at_a" in message and "custom_root" in message
    # where the sweep is itself differentiated the system is solved densely, whatever was asked
    linear = "dense" if solve == "auto" or transform != "grad" else solve
    assert repr(linear) in message


def test_a_singular_fixed_point_names_its_decorator() -> None:
    # T(x) = x + (x - a)**3: T(x) - x has a zero x-Jacobian at x = a
    stuck = ng.custom_fixed_point(lambda x, a: x + (x - a) ** 3)(at_a)
    with pytest.raises(ImplicitDiffError, match=r"at_a \(custom_fixed_point\).*'dense'"):
        ng.grad(lambda a: stuck(0.0, a))(1.0)


def test_a_singular_system_is_reported_by_minres_too() -> None:
    exact_at_a = ng.custom_root(lambda x, a: (x - a) ** 3, solve="minres")(at_a)
    with pytest.raises(ImplicitDiffError, match="minres"):
        ng.grad(lambda a: np.sum(exact_at_a(np.zeros(2), a)))(np.ones(2))


def test_jacobian_of_a_structured_answer_with_a_float_leaf() -> None:
    @ng.custom_root(lambda p, a: {"b": p["b"] - a})
    def solver(p: Any, a: Any) -> dict[str, float]:
        return {"b": float(a)}

    assert ng.jacobian(lambda a: solver({"b": 0.0}, a))(2.0)["b"] == 1.0


@pytest.mark.parametrize("decorator", [ng.custom_root, ng.custom_fixed_point])
def test_bad_decorator_arguments_are_argument_errors(decorator: Callable[..., Any]) -> None:
    with pytest.raises(ArgumentError, match="needs a function"):
        decorator(3.0)
    with pytest.raises(ArgumentError, match=r"solve must be one of auto, dense, cg.*'lu'"):
        decorator(lambda x, a: x - a, solve="lu")
    with pytest.raises(ArgumentError, match="decorates a solver function"):
        decorator(lambda x, a: x - a)("not a function")


@pytest.mark.parametrize("transform", ["grad", "hessian"])
def test_a_nonsquare_system_is_a_shape_error(transform: str) -> None:
    @ng.custom_root(lambda x, a: np.concatenate([x - a, x]))
    def wide(x: Any, a: Any) -> np.ndarray:
        return np.array(a, dtype=np.float64)

    f = getattr(ng, transform)(lambda a: np.sum(wide(np.zeros(2), a) ** 2))
    with pytest.raises(ShapeError, match="optimality_fun has 4 entries where the answer has 2"):
        f(np.ones(2))

    @ng.custom_fixed_point(lambda x, a: np.concatenate([x, x]) * a)
    def doubled(x: Any, a: Any) -> np.ndarray:
        return np.zeros(2)

    with pytest.raises(ShapeError):
        getattr(ng, transform)(lambda a: np.sum(doubled(np.zeros(2), a) ** 2))(0.5)
