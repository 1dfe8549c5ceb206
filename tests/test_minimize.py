"""``ng.optim.minimize`` and ``ng.optim.covariance``: scipy's minimiser over structured
parameters, its answer differentiable in the fit's arguments by the implicit function
theorem, and the inverse Hessian at a fit by key path.

Answers are checked against ``scipy.optimize.minimize`` run by hand on the flat vector
(with a hand-written numpy gradient) and against closed forms; implicit gradients against
closed forms and float64 central differences of the re-solved fit."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.engine.structure import differentiable_leaves
from nodegrad.errors import ArgumentError, DtypeError, LinAlgError, ShapeError, StructureError
from tests.finite_differences import central_difference

pd = pytest.importorskip("pandas")

FEW = settings(max_examples=15, deadline=None)
SOME = settings(max_examples=20, deadline=None)
TIGHT = {"method": "BFGS", "options": {"gtol": 1e-12}}
# Newton steps with the exact Hessian: a quadratic's minimum to rounding (BFGS's line search
# on function values stops near sqrt(eps) ~ 1e-8 relative), so fits can be compared to 1e-8
# and re-solved for central differences.
EXACT = {"method": "trust-exact", "options": {"gtol": 1e-13}}

seeds = st.integers(0, 2**32 - 1)


def quadratic(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``A = M M^T + I`` (well conditioned) and ``b``: ``0.5 x^T A x - b^T x`` is minimal at ``A^-1 b``."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n)) / np.sqrt(n)
    return m @ m.T + np.eye(n), rng.normal(size=n)


def scipy_on_the_flat_problem(a: np.ndarray, b: np.ndarray, method: str = "BFGS", **options: Any) -> np.ndarray:
    """scipy's own answer, with a hand-written gradient (and Hessian where the method wants one)."""
    extra: dict[str, Any] = {}
    if method in {"Newton-CG", "trust-krylov", "trust-ncg"}:
        extra["hessp"] = lambda x, p: a @ p
    if method in {"trust-exact", "dogleg"}:
        extra["hess"] = lambda x: a
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (BFGS's "precision loss" at gtol 1e-12)
        found = scipy.optimize.minimize(
            lambda x: 0.5 * x @ a @ x - b @ x,
            np.zeros(b.size),
            jac=lambda x: a @ x - b,
            method=method,
            options=options or {"gtol": 1e-12},
            **extra,
        )
    return np.asarray(found.x)


def quiet_minimize(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's OptimizeWarning / precision loss at very tight tolerances
        return ng.optim.minimize(*args, **kwargs)


@attrs.define
class Record:
    """Parameters with a static int field, never optimised."""

    w: np.ndarray
    b: float
    steps: int


# -- random convex quadratics over structured parameters ------------------------------------------


def layout(kind: str, sizes: list[int]) -> tuple[Any, Callable[[Any], Any], Callable[[np.ndarray], Any]]:
    """``(params0, flat_of, structured)``: a starting point of ``kind``, a map from the
    parameters to the vector the quadratic is written on (with nodegrad-traceable ops), and
    its inverse for plain vectors (to build the expected answer)."""
    s = sizes
    if kind == "dict":
        params0 = {"a": np.zeros(s[0]), "b": np.zeros((s[1], s[2]))}

        def flat_of(p: Any) -> Any:
            return np.concatenate([p["a"], np.reshape(p["b"], (-1,))])

        def structured(x: np.ndarray) -> Any:
            return {"a": x[: s[0]], "b": x[s[0] :].reshape(s[1], s[2])}

    elif kind == "record":
        params0 = Record(np.zeros(s[0]), 0.0, 7)

        def flat_of(p: Any) -> Any:
            assert p.steps == 7 and type(p.steps) is int
            return np.concatenate([p.w, np.reshape(p.b, (1,))])

        def structured(x: np.ndarray) -> Any:
            return Record(x[: s[0]], float(x[s[0]]), 7)

    elif kind == "nested":
        params0 = {
            "layers": [{"w": np.zeros(s[0])}, {"w": np.zeros((s[1], 2))}],
            "head": Record(np.zeros(s[2]), 0.0, 3),
            "count": 5,
        }

        def flat_of(p: Any) -> Any:
            layers, head = p["layers"], p["head"]
            parts = [layers[0]["w"], np.reshape(layers[1]["w"], (-1,)), head.w, np.reshape(head.b, (1,))]
            return np.concatenate(parts)

        def structured(x: np.ndarray) -> Any:
            k1, k2 = s[0], s[0] + 2 * s[1]
            head = Record(x[k2 : k2 + s[2]], float(x[k2 + s[2]]), 3)
            return {"layers": [{"w": x[:k1]}, {"w": x[k1:k2].reshape(s[1], 2)}], "head": head, "count": 5}

    else:  # a DataFrame of float columns, with its own index
        rows, columns = s[0], [f"c{j}" for j in range(s[1])]
        params0 = pd.DataFrame(np.zeros((rows, s[1])), columns=columns, index=[10 * k + 1 for k in range(rows)])

        def flat_of(p: Any) -> Any:
            return np.concatenate([p[c] for c in columns])

        def structured(x: np.ndarray) -> Any:
            return pd.DataFrame(x.reshape(s[1], rows).T, columns=columns, index=params0.index)

    return params0, flat_of, structured


def assert_same_structure(found: Any, expected: Any, **tolerance: Any) -> None:
    if isinstance(expected, pd.DataFrame):
        assert isinstance(found, pd.DataFrame)
        pd.testing.assert_index_equal(found.index, expected.index)
        pd.testing.assert_index_equal(found.columns, expected.columns)
        np.testing.assert_allclose(found.to_numpy(), expected.to_numpy(), **tolerance)
        return
    assert type(found) is type(expected)
    if isinstance(expected, dict):
        assert list(found) == list(expected)
        for key in expected:
            assert_same_structure(found[key], expected[key], **tolerance)
    elif isinstance(expected, list):
        assert len(found) == len(expected)
        for f, e in zip(found, expected, strict=True):
            assert_same_structure(f, e, **tolerance)
    elif isinstance(expected, Record):
        assert found.steps == expected.steps
        assert_same_structure(found.w, expected.w, **tolerance)
        assert float(found.b) == pytest.approx(expected.b, **_approx(tolerance))
    elif isinstance(expected, int):
        assert found == expected
    else:
        np.testing.assert_allclose(found, expected, **tolerance)


def _approx(tolerance: dict[str, Any]) -> dict[str, Any]:
    return {"rel": tolerance.get("rtol", 1e-7), "abs": tolerance.get("atol", 0.0)}


@pytest.mark.parametrize("kind", ["dict", "record", "nested", "frame"])
@SOME
@given(seed=seeds, sizes=st.lists(st.integers(1, 3), min_size=3, max_size=3))
def test_minimize_reaches_scipys_answer_on_the_flat_problem(kind: str, seed: int, sizes: list[int]) -> None:
    params0, flat_of, structured = layout(kind, sizes)
    n = int(np.asarray(flat_of(params0)).size)
    a, b = quadratic(seed, n)
    fit = quiet_minimize(lambda p: 0.5 * flat_of(p) @ a @ flat_of(p) - b @ flat_of(p), params0, **EXACT)
    reference = scipy_on_the_flat_problem(a, b, EXACT["method"], **EXACT["options"])
    closed = np.linalg.solve(a, b)
    np.testing.assert_allclose(reference, closed, rtol=0, atol=1e-10)  # (the reference itself is right)
    assert_same_structure(fit.x, structured(reference), rtol=0, atol=1e-8)
    assert_same_structure(fit.x, structured(closed), rtol=0, atol=1e-8)
    assert_same_structure(fit.jac, structured(np.zeros(n)), rtol=0, atol=1e-8)
    # BFGS (scipy's own accuracy, limited by its line search) lands on the same answer
    bfgs = quiet_minimize(lambda p: 0.5 * flat_of(p) @ a @ flat_of(p) - b @ flat_of(p), params0, **TIGHT)
    assert_same_structure(bfgs.x, structured(closed), rtol=0, atol=1e-6)


METHODS = {
    "L-BFGS-B": {"ftol": 1e-15, "gtol": 1e-12},
    "BFGS": {"gtol": 1e-12},
    "CG": {"gtol": 1e-12},
    "Newton-CG": {"xtol": 1e-13},
    "trust-exact": {"gtol": 1e-12},
    "trust-krylov": {"gtol": 1e-12},
    "trust-ncg": {"gtol": 1e-12},
    "dogleg": {"gtol": 1e-12},
    "TNC": {"gtol": 1e-12, "ftol": 1e-15, "xtol": 1e-15},
    "SLSQP": {"ftol": 1e-15},
}


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_reaches_scipys_answer(method: str) -> None:
    a, b = quadratic(123, 7)
    params0 = Record(np.zeros(6), 0.0, 2)
    fit = quiet_minimize(
        lambda p: 0.5 * _flat(p) @ a @ _flat(p) - b @ _flat(p), params0, method=method, options=METHODS[method]
    )
    found = np.append(fit.x.w, fit.x.b)
    np.testing.assert_allclose(found, scipy_on_the_flat_problem(a, b, method, **METHODS[method]), rtol=0, atol=1e-8)
    np.testing.assert_allclose(found, np.linalg.solve(a, b), rtol=0, atol=1e-8)
    assert fit.x.steps == 2


def _flat(p: Record) -> Any:
    return np.concatenate([p.w, np.reshape(p.b, (1,))])


@pytest.mark.parametrize("method", ["Nelder-Mead", "Powell", "trust-constr"])
def test_gradient_free_and_trust_constr_methods(method: str) -> None:
    target = {"w": np.array([1.5, -0.5]), "b": 0.25}
    options = {"xatol": 1e-10, "fatol": 1e-14} if method == "Nelder-Mead" else {}
    fit = quiet_minimize(
        lambda p: np.sum((p["w"] - target["w"]) ** 2) + (p["b"] - target["b"]) ** 2,
        {"w": np.zeros(2), "b": 0.0},
        method=method,
        options=options,
    )
    np.testing.assert_allclose(fit.x["w"], target["w"], atol=1e-6)
    assert fit.x["b"] == pytest.approx(target["b"], abs=1e-6)


# -- the parameters' own types --------------------------------------------------------------------


def test_float32_leaves_stay_float32_and_static_leaves_are_never_optimised() -> None:
    calls: list[Any] = []

    def loss(p: dict[str, Any]) -> Any:
        calls.append(p["steps"])
        return np.sum((p["w"] - 3.0) ** 2) + (p["b"] + 1.0) ** 2 + p["steps"] * 0.0

    params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0), "steps": 4, "name": "fit"}
    fit = ng.optim.minimize(loss, params)
    assert fit.x["w"].dtype == np.float32
    assert np.asarray(fit.x["b"]).dtype == np.float32
    np.testing.assert_allclose(fit.x["w"], 3.0, atol=1e-5)
    assert float(fit.x["b"]) == pytest.approx(-1.0, abs=1e-5)
    assert fit.x["steps"] == 4 and fit.x["name"] == "fit"
    assert set(map(type, calls)) == {int} and set(calls) == {4}
    assert params["w"].dtype == np.float32 and np.all(params["w"] == 0)  # the start is not overwritten


def test_the_result_jacobian_is_structured_and_zero_at_the_optimum() -> None:
    fit = ng.optim.minimize(
        lambda p: np.sum((p.w - np.array([1.0, 2.0])) ** 2) * p.steps + (p.b - 3.0) ** 2,
        Record(np.zeros(2), 0.0, 3),
        method="BFGS",
        options={"gtol": 1e-10},
    )
    assert isinstance(fit.x, Record) and isinstance(fit.jac, Record)
    assert fit.x.steps == 3
    np.testing.assert_allclose(fit.jac.w, 0.0, atol=1e-8)
    assert abs(fit.jac.b) < 1e-8
    assert fit.success


def test_callback_gets_the_parameters_in_their_structure() -> None:
    seen: list[Any] = []
    fit = ng.optim.minimize(
        lambda p: np.sum((p.w - 1.0) ** 2) + (p.b - 2.0) ** 4, Record(np.zeros(2), 0.0, 9), callback=seen.append
    )
    assert seen and len(seen) == fit.nit
    assert all(isinstance(p, Record) and p.steps == 9 and np.shape(p.w) == (2,) for p in seen)
    np.testing.assert_allclose(seen[-1].w, fit.x.w)


# -- bounds and constraints -------------------------------------------------------------------------


@FEW
@given(seed=seeds, n=st.integers(1, 4), open_sides=st.lists(st.booleans(), min_size=3, max_size=3))
def test_structured_bounds_clip_a_separable_quadratic(seed: int, n: int, open_sides: list[bool]) -> None:
    rng = np.random.default_rng(seed)
    centre_w, centre_b = 3 * rng.normal(size=n), float(3 * rng.normal())
    weight = rng.uniform(0.5, 2.0, size=n)
    low_w = rng.uniform(-2.0, 0.0, size=n)
    high_w = low_w + rng.uniform(0.1, 2.0, size=n)
    bounds: dict[str, Any] = {
        "w": (None if open_sides[0] else low_w, high_w),
        "b": None if open_sides[1] else (-1.0, None if open_sides[2] else 1.0),
        "steps": None,
    }

    def loss(p: dict[str, Any]) -> Any:
        return np.sum(weight * (p["w"] - centre_w) ** 2) + (p["b"] - centre_b) ** 2

    fit = quiet_minimize(
        loss, {"w": np.zeros(n), "b": 0.0, "steps": 2}, bounds=bounds, options={"ftol": 1e-15, "gtol": 1e-12}
    )
    expected_w = np.clip(centre_w, None if open_sides[0] else low_w, high_w)
    expected_b = centre_b if open_sides[1] else np.clip(centre_b, -1.0, None if open_sides[2] else 1.0)
    np.testing.assert_allclose(fit.x["w"], expected_w, rtol=0, atol=1e-8)
    assert fit.x["b"] == pytest.approx(expected_b, abs=1e-8)
    assert np.all(fit.x["w"] <= high_w) and (open_sides[0] or np.all(fit.x["w"] >= low_w))
    assert fit.x["steps"] == 2


def test_scipy_bounds_act_on_the_flat_vector_and_bad_bounds_are_structure_errors() -> None:
    fit = ng.optim.minimize(lambda p: np.sum(p**2), np.ones(3), bounds=scipy.optimize.Bounds([0.5, -1, -1], [1, 1, 1]))
    np.testing.assert_allclose(fit.x, [0.5, 0.0, 0.0], atol=1e-8)
    loss = lambda p: np.sum(p["w"] ** 2)
    with pytest.raises(StructureError, match=r"bounds\['w'\] must be a \(low, high\) pair"):
        ng.optim.minimize(loss, {"w": np.ones(2)}, bounds={"w": (0.0,)})
    with pytest.raises(StructureError, match=r"bounds\['w'\] has shape \(3,\), the parameter \(2,\)"):
        ng.optim.minimize(loss, {"w": np.ones(2)}, bounds={"w": (np.zeros(3), None)})


def test_slsqp_constraints_with_structured_functions() -> None:
    """min ||w - c||^2 + (b - 4)^2 subject to sum(w) + b = 1, w[0] >= 3.5 and b <= 3 (a dict)."""
    centre = np.array([3.0, -2.0, 0.5])

    def loss(p: dict[str, Any]) -> Any:
        return np.sum((p["w"] - centre) ** 2) + (p["b"] - 4.0) ** 2

    constraints = [
        {"type": "eq", "fun": lambda p: np.sum(p["w"]) + p["b"] - 1.0},
        {"type": "ineq", "fun": lambda p, top: {"first": p["w"][0] - 3.5, "b": top - p["b"]}, "args": (3.0,)},
    ]
    fit = ng.optim.minimize(
        loss, {"w": np.zeros(3), "b": 0.0}, method="SLSQP", constraints=constraints, options={"ftol": 1e-14}
    )
    w, b = fit.x["w"], fit.x["b"]
    assert fit.success
    assert np.sum(w) + b == pytest.approx(1.0, abs=1e-9)
    assert w[0] >= 3.5 - 1e-9 and b <= 3.0 + 1e-9
    reference = scipy.optimize.minimize(
        lambda x: np.sum((x[:3] - centre) ** 2) + (x[3] - 4.0) ** 2,
        np.zeros(4),
        jac=lambda x: np.append(2 * (x[:3] - centre), 2 * (x[3] - 4.0)),
        method="SLSQP",
        constraints=[
            {"type": "eq", "fun": lambda x: np.sum(x) - 1.0, "jac": lambda x: np.ones((1, 4))},
            {"type": "ineq", "fun": lambda x: np.array([x[0] - 3.5, 3.0 - x[3]])},
        ],
        options={"ftol": 1e-14},
    )
    np.testing.assert_allclose(np.append(w, b), reference.x, atol=1e-8)
    # a single dict is a constraint too, and one without "type" is an ArgumentError
    one = ng.optim.minimize(
        loss, {"w": np.zeros(3), "b": 0.0}, method="SLSQP", constraints={"type": "eq", "fun": lambda p: p["b"]}
    )
    assert abs(one.x["b"]) < 1e-8
    with pytest.raises(ArgumentError, match=r"constraints\[0\] needs 'type' and 'fun'"):
        ng.optim.minimize(loss, {"w": np.zeros(3), "b": 0.0}, method="SLSQP", constraints={"fun": lambda p: p["b"]})


# -- bad inputs ----------------------------------------------------------------------------------


def test_a_fun_that_is_not_callable_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError, match="needs a function fun"):
        ng.optim.minimize(3.0, np.zeros(2))
    with pytest.raises(ArgumentError, match="method must be a scipy method name"):
        ng.optim.minimize(lambda p: np.sum(p**2), np.zeros(2), method=3)
    with pytest.raises(DtypeError, match="real parameters"):
        ng.optim.minimize(lambda p: np.sum(np.abs(p) ** 2), np.ones(2, complex))


@pytest.mark.parametrize("method", ["Nelder-Mead", "L-BFGS-B", "BFGS", "trust-exact"])
def test_a_non_scalar_fun_is_a_shape_error_naming_minimize(method: str) -> None:
    with pytest.raises(ShapeError, match=r"optim.minimize: fun must return a scalar, got shape \(2,\)"):
        ng.optim.minimize(lambda p: p**2, np.ones(2), method=method)


# -- the fit's implicit gradient: ridge regression ------------------------------------------------


def ridge_problem(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=n)


@SOME
@given(seed=seeds, n=st.integers(1, 8), d=st.integers(1, 4), lam=st.floats(0.1, 5.0))
def test_minimize_is_differentiable_in_the_penalty(seed: int, n: int, d: int, lam: float) -> None:
    """w*(lam) = (X^T X + lam I)^-1 X^T y, dw*/dlam = -K^-1 w*, d2w*/dlam2 = 2 K^-2 w*."""
    x_design, y = ridge_problem(seed, n, d)

    def ridge(w: Any, lam: Any) -> Any:
        return 0.5 * np.sum((x_design @ w - y) ** 2) + 0.5 * lam * np.sum(w**2)

    k = x_design.T @ x_design + lam * np.eye(d)
    w_star = np.linalg.solve(k, x_design.T @ y)
    dw = -np.linalg.solve(k, w_star)
    v = np.random.default_rng(seed + 1).normal(size=d)
    fit = lambda lam: ng.optim.minimize(ridge, np.zeros(d), lam, **EXACT).x
    loss = lambda lam: v @ fit(lam)

    np.testing.assert_allclose(fit(lam), w_star, rtol=1e-9, atol=1e-11)
    assert ng.grad(loss)(lam) == pytest.approx(v @ dw, rel=1e-7, abs=1e-10)
    assert ng.grad(loss)(lam) == pytest.approx(float(central_difference(loss, lam)), rel=1e-5, abs=1e-8)
    np.testing.assert_allclose(ng.jacobian(fit)(lam), dw, rtol=1e-7, atol=1e-10)
    _, tangent = ng.jvp(fit, (lam,), (2.0,))
    np.testing.assert_allclose(tangent, 2 * dw, rtol=1e-7, atol=1e-10)
    second = float(ng.hessian(loss)(lam))
    assert second == pytest.approx(2 * v @ np.linalg.solve(k, np.linalg.solve(k, w_star)), rel=1e-6, abs=1e-9)
    assert second == pytest.approx(float(central_difference(ng.grad(loss), lam)), rel=1e-4, abs=1e-7)


@FEW
@given(seed=seeds, d=st.integers(1, 3), lams=st.lists(st.floats(0.1, 5.0), min_size=1, max_size=3))
def test_minimize_under_vmap_over_the_penalty(seed: int, d: int, lams: list[float]) -> None:
    x_design, y = ridge_problem(seed, 6, d)

    def ridge(w: Any, lam: Any) -> Any:
        return 0.5 * np.sum((x_design @ w - y) ** 2) + 0.5 * lam * np.sum(w**2)

    batch = np.array(lams)
    fits = ng.vmap(lambda lam: ng.optim.minimize(ridge, np.zeros(d), lam, **EXACT).x)(batch)
    grads = ng.vmap(ng.grad(lambda lam: np.sum(ng.optim.minimize(ridge, np.zeros(d), lam, **EXACT).x)))(batch)
    for lam, w, g in zip(lams, fits, grads, strict=True):
        k = x_design.T @ x_design + lam * np.eye(d)
        w_star = np.linalg.solve(k, x_design.T @ y)
        np.testing.assert_allclose(w, w_star, rtol=1e-9, atol=1e-11)
        assert g == pytest.approx(-np.sum(np.linalg.solve(k, w_star)), rel=1e-7, abs=1e-10)


def test_a_vmapped_fit_reports_one_entry_per_example() -> None:
    def loss(w: Any, centre: Any) -> Any:
        return np.sum((w - centre) ** 2)

    results: list[Any] = []

    def fitted(centre: Any) -> Any:
        results.append(ng.optim.minimize(loss, np.zeros(2), centre))
        return results[-1].x

    centres = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(ng.vmap(fitted)(centres), centres, atol=1e-6)
    assert isinstance(results[-1].success, list) and len(results[-1].success) == 3


@SOME
@given(seed=seeds, n=st.integers(3, 8), d=st.integers(1, 3), lam=st.floats(0.1, 5.0))
def test_structured_parameters_and_hyperparameters(seed: int, n: int, d: int, lam: float) -> None:
    """Ridge with an unpenalised intercept, params {"w", "b"}, hyperparameters {"lam", "y"}:
    theta* = K^-1 Z^T y (Z = [X, 1], K = Z^T Z + lam D), d theta*/d lam = -K^-1 D theta*,
    d (v . theta*)/d y = Z K^-1 v."""
    x_design, y = ridge_problem(seed, n, d)
    z = np.column_stack([x_design, np.ones(n)])
    penalised = np.append(np.ones(d), 0.0)

    def loss(p: dict[str, Any], hp: dict[str, Any]) -> Any:
        r = x_design @ p["w"] + p["b"] - hp["y"]
        return 0.5 * np.sum(r**2) + 0.5 * hp["lam"] * np.sum(p["w"] ** 2)

    v = np.random.default_rng(seed + 5).normal(size=d + 1)

    def objective(hp: dict[str, Any]) -> Any:
        fit = ng.optim.minimize(loss, {"w": np.zeros(d), "b": np.array(0.0)}, hp, **EXACT).x
        return v[:d] @ fit["w"] + v[d] * fit["b"]

    k = z.T @ z + lam * np.diag(penalised)
    theta = np.linalg.solve(k, z.T @ y)
    u = np.linalg.solve(k, v)
    g = ng.grad(objective)({"lam": lam, "y": y})
    assert set(g) == {"lam", "y"}
    assert g["lam"] == pytest.approx(-u @ (penalised * theta), rel=1e-7, abs=1e-10)
    np.testing.assert_allclose(g["y"], z @ u, rtol=1e-7, atol=1e-10)
    fd = central_difference(lambda y: objective({"lam": lam, "y": y}), y)
    np.testing.assert_allclose(g["y"], fd, rtol=1e-5, atol=1e-8)
    # the Jacobian of the whole answer, in the parameters' structure
    params0 = {"w": np.zeros(d), "b": np.array(0.0)}
    jac = ng.jacobian(lambda lam: ng.optim.minimize(loss, params0, {"lam": lam, "y": y}, **EXACT).x)(lam)
    dtheta = -np.linalg.solve(k, penalised * theta)
    np.testing.assert_allclose(jac["w"], dtheta[:d], rtol=1e-7, atol=1e-10)
    assert float(jac["b"]) == pytest.approx(dtheta[d], rel=1e-7, abs=1e-10)


def test_jacobian_of_a_fit_with_a_python_float_parameter() -> None:
    def loss(p: dict[str, Any], lam: Any) -> Any:
        return np.sum((p["w"] - 1.0) ** 2) + (p["b"] - lam) ** 2

    jac = ng.jacobian(lambda lam: ng.optim.minimize(loss, {"w": np.zeros(2), "b": 0.0}, lam).x)(2.0)
    assert float(jac["b"]) == pytest.approx(1.0)


def test_a_hyperparameter_closed_over_through_the_fit() -> None:
    x_design, y = ridge_problem(3, 7, 2)

    def ridge(w: Any, lam: Any) -> Any:
        return 0.5 * np.sum((x_design @ w - y) ** 2) + 0.5 * lam * np.sum(w**2)

    def validation(scale: Any) -> Any:
        def fitted(base: float) -> Any:  # scale reaches the fit's args only through this closure
            return ng.optim.minimize(ridge, np.zeros(2), scale * base, **EXACT).x

        return np.sum(fitted(2.0) ** 2)

    lam = 2.0 * 0.6
    k = x_design.T @ x_design + lam * np.eye(2)
    w_star = np.linalg.solve(k, x_design.T @ y)
    expected = 2 * w_star @ (-np.linalg.solve(k, w_star)) * 2.0
    assert ng.grad(validation)(0.6) == pytest.approx(expected, rel=1e-7)
    assert ng.grad(validation)(0.6) == pytest.approx(float(central_difference(validation, 0.6)), rel=1e-5)


# -- covariance -------------------------------------------------------------------------------------


@SOME
@given(seed=seeds, n=st.integers(2, 200), rate=st.floats(0.1, 10.0))
def test_covariance_of_an_exponential_log_rate_is_one_over_n(seed: int, n: int, rate: float) -> None:
    times = np.random.default_rng(seed).exponential(1 / rate, size=n)

    def nll(p: dict[str, Any], times: np.ndarray) -> Any:
        return -np.sum(p["log_rate"] - np.exp(p["log_rate"]) * times)

    fit = ng.optim.minimize(nll, {"log_rate": 0.0}, times, **TIGHT)
    assert fit.x["log_rate"] == pytest.approx(-np.log(np.mean(times)), abs=1e-8)
    cov = ng.optim.covariance(nll, fit.x, times)
    assert cov.paths == ["['log_rate']"]
    assert float(cov.standard_errors()["log_rate"]) == pytest.approx(1 / np.sqrt(n), rel=1e-7)
    exact = ng.optim.covariance(nll, {"log_rate": -np.log(np.mean(times))}, times)
    assert float(exact.matrix[0, 0]) == pytest.approx(1 / n, rel=1e-12)
    assert float(exact["['log_rate']", "['log_rate']"]) == pytest.approx(1 / n, rel=1e-12)


@SOME
@given(seed=seeds, n=st.integers(4, 30), d=st.integers(2, 4), sigma=st.floats(0.1, 3.0))
def test_covariance_of_a_gaussian_regression_is_sigma_squared_xtx_inverse(
    seed: int, n: int, d: int, sigma: float
) -> None:
    rng = np.random.default_rng(seed)
    x_design = rng.normal(size=(n, d))
    y = x_design @ rng.normal(size=d) + sigma * rng.normal(size=n)

    def nll(p: dict[str, Any]) -> Any:
        r = y - x_design[:, : d - 1] @ p["w"] - x_design[:, d - 1] * p["c"]["z"]
        return 0.5 * np.sum(r**2) / sigma**2 + n * np.log(sigma)

    params = {"w": np.zeros(d - 1), "c": {"z": 0.0}, "label": "ols"}
    fit = ng.optim.minimize(nll, params, **TIGHT)
    cov = ng.optim.covariance(nll, fit.x)
    expected = sigma**2 * np.linalg.inv(x_design.T @ x_design)
    np.testing.assert_allclose(cov.matrix, expected, rtol=1e-8, atol=1e-12)
    assert cov.paths == [path for path, _ in differentiable_leaves(params)] == ["['w']", "['c']['z']"]
    assert cov["['w']", "['w']"].shape == (d - 1, d - 1)
    assert cov["['w']", "['c']['z']"].shape == (d - 1,)
    assert cov["['c']['z']", "['w']"].shape == (d - 1,)
    assert cov["['c']['z']", "['c']['z']"].shape == ()
    np.testing.assert_allclose(cov["['w']", "['c']['z']"], expected[: d - 1, d - 1], rtol=1e-8, atol=1e-12)
    errors = cov.standard_errors()
    np.testing.assert_allclose(errors["w"], np.sqrt(np.diag(expected))[: d - 1], rtol=1e-8)
    assert float(errors["c"]["z"]) == pytest.approx(np.sqrt(expected[-1, -1]), rel=1e-8)
    assert errors["label"] == "ols"


def test_covariance_paths_of_a_record_and_bad_indices() -> None:
    def nll(p: Record) -> Any:
        return 0.5 * np.sum(p.w**2) * p.steps + 2.0 * p.b**2

    cov = ng.optim.covariance(nll, Record(np.zeros(3), 0.0, 4))
    assert cov.paths == [".w", ".b"]
    np.testing.assert_allclose(cov[".w", ".w"], np.eye(3) / 4)
    assert float(cov[".b", ".b"]) == pytest.approx(0.25)
    np.testing.assert_allclose(cov[".w", ".b"], np.zeros(3))
    se = cov.standard_errors()
    assert isinstance(se, Record) and se.steps == 4
    np.testing.assert_allclose(se.w, 0.5)
    with pytest.raises(KeyError, match=r"no float leaf at '\.steps'.*\.w.*\.b"):
        cov[".steps", ".w"]
    with pytest.raises(KeyError, match=r"paths are \['\.w', '\.b'\]"):
        cov["w", ".w"]
    with pytest.raises(KeyError, match="two key paths"):
        cov[".w"]
    with pytest.raises(LinAlgError, match="singular"):
        ng.optim.covariance(lambda p: np.sum(p["w"]) ** 2, {"w": np.zeros(2)})


def test_the_objective_is_recorded_once_and_replayed_for_every_evaluation() -> None:
    # A Python float leaf must not become a constant of the recording (one recording per
    # evaluation would make every evaluation slower than an eager one).
    calls = []

    def loss(p: dict[str, Any]) -> Any:
        calls.append(1)
        return np.sum((p["w"] - np.array([1.0, -2.0])) ** 4) + (p["b"] - 0.5) ** 2

    fit = ng.optim.minimize(loss, {"w": np.zeros(2), "b": 0.0}, method="BFGS")
    assert fit.success and fit.nfev > 10
    assert isinstance(fit.x["b"], float)
    assert len(calls) <= 2, f"the loss ran in Python {len(calls)} times for {fit.nfev} evaluations"
