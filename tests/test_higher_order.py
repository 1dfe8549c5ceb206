"""Higher-order differentiation: grad of grad, hvp, jacobian, hessian, jvp, create_graph.

Second derivatives are checked two ways: against closed forms, and by central finite
differences *of the gradient* (``check_grads(grad(f), x)`` differentiates the recorded
backward sweep and compares it with the numeric derivative of the first-order gradient).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.engine.record import record1
from nodegrad.engine.registry import Op
from nodegrad.errors import NoGradientError, StructureError
from nodegrad.ops import REGISTRY, pipeline
from nodegrad.testing import check_grads
from tests.ops import specs_pipeline
from tests.ops.harness import Case
from tests.strategies import BOUND, away_from_zero, float_arrays, floats, shapes

# -- the unary elementwise ops, from the registry ----------------------------------------------


def _differentiable_inputs(op: Op) -> int:
    return sum(rule is not None for rule in op.vjps)


#: Every elementwise op with exactly one differentiable input, straight from the registry:
#: an op added later is picked up here, and fails below until it gets a domain and a closed form.
UNARY_OPS = sorted(
    name
    for name, op in REGISTRY.items()
    if op.family == "elementwise" and isinstance(op.vjps, tuple) and _differentiable_inputs(op) == 1
)


def _sigmoid(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu_second(x: Any) -> Any:
    # gelu(x) = x/2 (1 + tanh(u)), u = c (x + 0.044715 x^3)
    u = _GELU_C * (x + 0.044715 * x**3)
    du = _GELU_C * (1 + 3 * 0.044715 * x**2)
    ddu = _GELU_C * 6 * 0.044715 * x
    t = np.tanh(u)
    return (1 - t * t) * (du + 0.5 * x * (ddu - 2 * t * du * du))


def _silu_second(x: Any) -> Any:
    s = _sigmoid(x)
    return s * (1 - s) * (2 + x * (1 - 2 * s))


_POSITIVE = floats(0.2, BOUND)
_UNIT = floats(-0.8, 0.8)
_LN2, _LN10 = math.log(2.0), math.log(10.0)

# name -> (the op as a function of x, the domain of x, the closed-form second derivative)
UNARY: dict[str, tuple[Callable[[Any], Any], st.SearchStrategy[float], Callable[[Any], Any]]] = {
    "abs": (ng.abs, away_from_zero(), lambda x: 0 * x),
    "arccos": (ng.arccos, _UNIT, lambda x: -x / (1 - x * x) ** 1.5),
    "arccosh": (ng.arccosh, floats(1.2, BOUND), lambda x: -x / (x * x - 1) ** 1.5),
    "arcsin": (ng.arcsin, _UNIT, lambda x: x / (1 - x * x) ** 1.5),
    "arcsinh": (ng.arcsinh, floats(), lambda x: -x / (x * x + 1) ** 1.5),
    "arctan": (ng.arctan, floats(), lambda x: -2 * x / (1 + x * x) ** 2),
    "arctanh": (ng.arctanh, _UNIT, lambda x: 2 * x / (1 - x * x) ** 2),
    "cbrt": (ng.cbrt, away_from_zero(0.2), lambda x: -2 / 9 * np.cbrt(x) / (x * x)),
    "cos": (ng.cos, floats(), lambda x: -np.cos(x)),
    "cosh": (ng.cosh, floats(), np.cosh),
    "deg2rad": (ng.deg2rad, floats(), lambda x: 0 * x),
    "exp": (ng.exp, floats(), np.exp),
    "exp2": (ng.exp2, floats(), lambda x: np.exp2(x) * _LN2 * _LN2),
    "expm1": (ng.expm1, floats(), np.exp),
    "gelu": (lambda x: ng.gelu(x, approximate=True), floats(), _gelu_second),
    "log": (ng.log, _POSITIVE, lambda x: -1 / (x * x)),
    "log10": (ng.log10, _POSITIVE, lambda x: -1 / (x * x * _LN10)),
    "log1p": (ng.log1p, floats(-0.8, BOUND), lambda x: -1 / (1 + x) ** 2),
    "log2": (ng.log2, _POSITIVE, lambda x: -1 / (x * x * _LN2)),
    "negative": (ng.negative, floats(), lambda x: 0 * x),
    "positive": (ng.positive, floats(), lambda x: 0 * x),
    "rad2deg": (ng.rad2deg, floats(), lambda x: 0 * x),
    "reciprocal": (ng.reciprocal, away_from_zero(0.3), lambda x: 2 / x**3),
    "relu": (ng.relu, away_from_zero(), lambda x: 0 * x),
    "sigmoid": (ng.sigmoid, floats(), lambda x: _sigmoid(x) * (1 - _sigmoid(x)) * (1 - 2 * _sigmoid(x))),
    "silu": (ng.silu, floats(), _silu_second),
    "sin": (ng.sin, floats(), lambda x: -np.sin(x)),
    "sinh": (ng.sinh, floats(), np.sinh),
    "sqrt": (ng.sqrt, _POSITIVE, lambda x: -0.25 * x**-1.5),
    "square": (ng.square, floats(), lambda x: 2 + 0 * x),
    "tan": (ng.tan, floats(-1.2, 1.2), lambda x: 2 * np.tan(x) * (1 + np.tan(x) ** 2)),
    "tanh": (ng.tanh, floats(), lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    # The parts of complex numbers, on real values: the value itself (real, conj) or a
    # constant (imag, angle). Their second derivatives on complex values are checked in
    # tests/ops/test_complex.py.
    "real": (ng.real, floats(), lambda x: 0 * x),
    "imag": (ng.imag, floats(), lambda x: 0 * x),
    "conj": (ng.conj, floats(), lambda x: 0 * x),
    "angle": (ng.angle, floats(), lambda x: 0 * x),
}


def test_every_unary_elementwise_op_has_a_second_derivative_case() -> None:
    assert len(UNARY_OPS) >= 30  # the registry really was read
    assert "gelu" in UNARY_OPS  # its second input (approximate) is static
    assert sorted(UNARY) == UNARY_OPS, "add a domain and a closed-form second derivative for each new op"


def _first(op: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return ng.grad(lambda y: ng.sum(op(y)))


@pytest.mark.parametrize("name", UNARY_OPS)
@given(data=st.data())
def test_second_derivative_of_every_unary_op(name: str, data: st.DataObject) -> None:
    op, domain, second = UNARY[name]
    x = data.draw(float_arrays(shapes(max_dims=2, max_side=3), elements=domain), label="x")
    # The gradient's own VJP against central differences of the gradient ...
    check_grads(_first(op), x)
    # ... and, the Hessian of an elementwise op being diagonal, grad(sum(grad)) is f''(x).
    g2 = ng.grad(lambda z: ng.sum(_first(op)(z)))(x)
    assert g2.shape == x.shape and g2.dtype == x.dtype
    np.testing.assert_allclose(g2, second(x), rtol=1e-9, atol=1e-12)


# -- grad of grad on scalars, against closed forms ------------------------------------------------

SCALAR_CASES = [
    pytest.param(lambda x: x * x * x, lambda x: 6 * x, id="cube"),
    pytest.param(lambda x: x**4.0, lambda x: 12 * x**2, id="power"),
    pytest.param(ng.sin, lambda x: -math.sin(x), id="sin"),
    pytest.param(lambda x: ng.exp(2.0 * x), lambda x: 4 * math.exp(2 * x), id="exp-chain"),
    pytest.param(lambda x: 1.0 / x, lambda x: 2 / x**3, id="divide"),
    pytest.param(lambda x: x * ng.log(x), lambda x: 1 / x, id="x-log-x"),
    pytest.param(lambda x: ng.sin(x) * ng.cos(x), lambda x: -2 * math.sin(2 * x), id="product-rule"),
    pytest.param(lambda x: ng.sqrt(1.0 + x * x), lambda x: (1 + x * x) ** -1.5, id="sqrt-chain"),
    pytest.param(lambda x: ng.tanh(ng.tanh(x)), None, id="tanh-of-tanh"),
]


@pytest.mark.parametrize(("f", "f2"), SCALAR_CASES)
@pytest.mark.parametrize("x", [0.4, 1.3, 2.0])
def test_grad_of_grad_of_a_scalar_function(
    f: Callable[[Any], Any], f2: Callable[[float], float] | None, x: float
) -> None:
    result = ng.grad(ng.grad(f))(x)
    assert type(result) is float
    if f2 is None:  # tanh(tanh(x)): f'' from the chain rule by hand
        t = math.tanh(x)
        s = math.tanh(t)
        dt, d2t = 1 - t * t, -2 * t * (1 - t * t)
        ds, d2s = 1 - s * s, -2 * s * (1 - s * s)
        expected = d2s * dt * dt + ds * d2t
    else:
        expected = f2(x)
    assert result == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_third_and_fourth_derivatives_of_tanh() -> None:
    for x in (-1.5, -0.3, 0.0, 0.7, 2.0):
        t = math.tanh(x)
        third = ng.grad(ng.grad(ng.grad(ng.tanh)))(x)
        assert third == pytest.approx(-2 * (1 - t * t) * (1 - 3 * t * t), rel=1e-10, abs=1e-12)
        fourth = ng.grad(ng.grad(ng.grad(ng.grad(ng.tanh))))(x)
        assert fourth == pytest.approx(8 * t * (1 - t * t) * (2 - 3 * t * t), rel=1e-9, abs=1e-12)


def test_third_derivative_of_tanh_on_arrays_against_finite_differences() -> None:
    x = np.array([-1.2, 0.1, 0.8])
    second = ng.grad(lambda z: ng.sum(ng.grad(lambda y: ng.sum(ng.tanh(y)))(z)))
    check_grads(second, x)  # differentiates a sweep that records a sweep
    t = np.tanh(x)
    np.testing.assert_allclose(ng.grad(lambda z: ng.sum(second(z)))(x), -2 * (1 - t * t) * (1 - 3 * t * t), rtol=1e-10)


# -- nested grads closing over outer traced values --------------------------------------------------


def test_nested_grad_closing_over_the_outer_variable() -> None:
    # d/dx [x * d/dy (x * y)] evaluated at y = x: the inner derivative is x, so this is 2x.
    f = lambda x: x * ng.grad(lambda y: x * y)(x)
    for x in (-2.0, 0.5, 3.0):
        assert ng.grad(f)(x) == pytest.approx(2 * x)
    xs = np.array([1.0, -2.0, 0.25])
    g = ng.grad(lambda x: ng.sum(x * ng.grad(lambda y: ng.sum(x * y))(x)))(xs)
    np.testing.assert_allclose(g, 2 * xs)


def test_no_perturbation_confusion() -> None:
    # Siskind & Pearlmutter: D(x -> x * D(y -> x + y)(1))(1) is 1; confusing the two
    # perturbations gives 2.
    assert ng.grad(lambda x: x * ng.grad(lambda y: x + y)(1.0))(1.0) == pytest.approx(1.0)
    # The inner derivative at a plain point, depending on the outer variable: d/dx (4x) = 4.
    assert ng.grad(lambda x: ng.grad(lambda y: x * y * y)(2.0))(3.0) == pytest.approx(4.0)
    # Both arguments differentiated inside, only one outside.
    inner = ng.grad(lambda a, b: a * a * b, argnums=(0, 1))
    assert ng.grad(lambda x: sum(inner(x, 3.0)))(2.0) == pytest.approx(6.0 + 2 * 2.0)


def test_nested_value_and_grad_keeps_the_inner_value_traced() -> None:
    def outer(x: Any) -> Any:
        value, g = ng.value_and_grad(lambda y: ng.sum(ng.sin(y) * x))(x)
        return value + ng.sum(g)

    x = np.array([0.3, 1.1])
    # value = sum(sin(x) x), sum(g) = sum(cos(x) x): d/dx = sin + x cos + cos - x sin
    expected = np.sin(x) + x * np.cos(x) + np.cos(x) - x * np.sin(x)
    np.testing.assert_allclose(ng.grad(outer)(x), expected, rtol=1e-12)
    check_grads(outer, x)


# -- hvp, jacobian, hessian, jvp ----------------------------------------------------------------------


def _numeric_jacobian(f: Callable[[np.ndarray], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.asarray(f(x), dtype=float)
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))).ravel() / (2 * eps))
    return np.stack(columns, axis=-1).reshape(out.shape + x.shape)


A = np.array([[0.5, -1.0, 0.3], [0.2, 0.8, -0.6]])


def _scalar_fn(x: Any) -> Any:
    return ng.sum(ng.tanh(A @ x) ** 2.0) + ng.sum(ng.exp(0.3 * x) * x) + ng.prod(x)


def _vector_fn(x: Any) -> Any:
    return ng.sin(A @ x) * ng.sum(x * x) + A @ (x**3.0)


def _grad_of_scalar_fn(x: np.ndarray) -> np.ndarray:
    return ng.grad(_scalar_fn)(x)


vectors = float_arrays((3,), elements=floats(-1.5, 1.5))


@given(x=vectors, v=vectors)
def test_hvp_matches_the_hessian_and_finite_differences(x: np.ndarray, v: np.ndarray) -> None:
    hv = ng.hvp(_scalar_fn, x, v)
    assert hv.shape == x.shape and hv.dtype == x.dtype
    np.testing.assert_allclose(hv, ng.hessian(_scalar_fn)(x) @ v, rtol=1e-10, atol=1e-10)
    eps = 1e-6
    numeric = (_grad_of_scalar_fn(x + eps * v) - _grad_of_scalar_fn(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, numeric, rtol=1e-5, atol=1e-6)


def test_hvp_of_a_structured_argument() -> None:
    f = lambda p: ng.sum(p["w"] ** 3.0) * p["s"] + ng.sum(ng.sin(p["w"]))
    x = {"w": np.array([1.0, -2.0]), "s": 0.5}
    v = {"w": np.array([1.0, 1.0]), "s": 2.0}
    hv = ng.hvp(f, x, v)
    assert set(hv) == {"w", "s"} and type(hv["s"]) is float
    w, s = x["w"], x["s"]
    # H = [[6 w s - sin w (diag), 3 w^2], [3 w^2^T, 0]]
    expected_w = (6 * w * s - np.sin(w)) * v["w"] + 3 * w**2 * v["s"]
    expected_s = float(np.sum(3 * w**2 * v["w"]))
    np.testing.assert_allclose(hv["w"], expected_w, rtol=1e-12)
    assert hv["s"] == pytest.approx(expected_s)


@given(x=vectors)
def test_jacobian_matches_a_numerical_jacobian(x: np.ndarray) -> None:
    jac = ng.jacobian(_vector_fn)(x)
    assert jac.shape == (2, 3)
    np.testing.assert_allclose(jac, _numeric_jacobian(lambda z: _vector_fn(z), x), rtol=1e-6, atol=1e-7)


def test_jacobian_of_a_matrix_function_and_of_another_argument() -> None:
    x = np.array([[0.5, -1.0], [2.0, 0.1]])
    jac = ng.jacobian(lambda m: ng.tanh(m @ m))(x)
    assert jac.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(jac, _numeric_jacobian(lambda m: np.tanh(m @ m), x), rtol=1e-6, atol=1e-8)
    y = np.array([1.0, 2.0, -0.5])
    jac_y = ng.jacobian(lambda a, b: a @ ng.exp(b), argnums=1)(A, y)
    np.testing.assert_allclose(jac_y, A * np.exp(y), rtol=1e-12)


@given(x=vectors)
def test_hessian_matches_a_numerical_jacobian_of_the_gradient(x: np.ndarray) -> None:
    hess = ng.hessian(_scalar_fn)(x)
    assert hess.shape == (3, 3)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, _numeric_jacobian(_grad_of_scalar_fn, x), rtol=1e-5, atol=1e-6)


def test_hessian_closed_form() -> None:
    x = np.array([0.3, -0.7, 1.1])
    hess = ng.hessian(lambda z: ng.sum(ng.sin(z)) * ng.sum(z * z))(x)
    s, q = np.sum(np.sin(x)), np.sum(x * x)
    expected = np.diag(-np.sin(x) * q) + 2 * np.outer(np.cos(x), x) + 2 * np.outer(x, np.cos(x)) + 2 * s * np.eye(3)
    np.testing.assert_allclose(hess, expected, rtol=1e-12, atol=1e-12)


@given(x=vectors, t=vectors)
def test_jvp_matches_the_jacobian_times_the_tangent(x: np.ndarray, t: np.ndarray) -> None:
    out, tangent = ng.jvp(_vector_fn, (x,), (t,))
    np.testing.assert_allclose(out, np.sin(A @ x) * np.sum(x * x) + A @ x**3, rtol=1e-12)
    np.testing.assert_allclose(tangent, ng.jacobian(_vector_fn)(x) @ t, rtol=1e-9, atol=1e-10)


def test_jvp_of_several_primals() -> None:
    f = lambda a, b: ng.sin(a) * b + a * a
    a, b = np.array([0.5, 1.0]), np.array([2.0, -1.0])
    ta, tb = np.array([1.0, 0.5]), np.array([-1.0, 3.0])
    out, tangent = ng.jvp(f, (a, b), (ta, tb))
    np.testing.assert_allclose(out, np.sin(a) * b + a * a)
    jac_a = ng.jacobian(f, argnums=0)(a, b)
    jac_b = ng.jacobian(f, argnums=1)(a, b)
    np.testing.assert_allclose(tangent, jac_a @ ta + jac_b @ tb, rtol=1e-12)


# -- Arena.backward(create_graph=True) -------------------------------------------------------------


def test_backward_with_create_graph_then_backward_again() -> None:
    x0 = np.array([0.5, -1.0, 2.0])
    arena = ng.Arena()
    x = arena.param(x0)
    y = ng.sum(ng.sin(x) * x)
    g = arena.backward(y, wrt=x, create_graph=True)
    assert isinstance(g, ng.Traced) and g.arena is arena
    np.testing.assert_allclose(g.value, np.cos(x0) * x0 + np.sin(x0))
    # d/dx sum(g) = the diagonal Hessian: 2 cos x - x sin x
    h = arena.backward(ng.sum(g), wrt=x)
    assert type(h) is np.ndarray
    np.testing.assert_allclose(h, 2 * np.cos(x0) - x0 * np.sin(x0), rtol=1e-12)
    # The recorded gradient is a node like any other: seed it one row at a time.
    rows = [arena.backward(g, wrt=x, seed=np.eye(3)[k]) for k in range(3)]
    np.testing.assert_allclose(np.stack(rows), np.diag(2 * np.cos(x0) - x0 * np.sin(x0)), atol=1e-15)


def test_create_graph_with_a_structured_parameter() -> None:
    arena = ng.Arena()
    p = arena.param({"w": np.array([1.0, 2.0]), "b": 0.5})
    y = ng.sum(p["w"] ** 3.0) * p["b"]
    g = arena.backward(y, wrt=p, create_graph=True)
    assert isinstance(g["w"], ng.Traced) and isinstance(g["b"], ng.Traced)
    np.testing.assert_allclose(g["w"].value, 3 * np.array([1.0, 4.0]) * 0.5)
    second = arena.backward(ng.sum(g["w"]), wrt=p)
    np.testing.assert_allclose(second["w"], 6 * np.array([1.0, 2.0]) * 0.5)
    assert second["b"] == pytest.approx(3 * (1.0 + 4.0))


# -- the pipeline ops and exact gelu: rules written to run on traced values too ---------------------
#
# cumprod's and ssm_scan's backward is a reverse linear recurrence, recorded as an ssm_scan node
# of its own on traced values; exact gelu's records the normal CDF as a node. So second
# derivatives, hvp and jvp (a transposed VJP: it needs this even at first order) go through them.

#: Every pipeline op and composite, drawn by its gradient-test spec (tests/ops/specs_pipeline.py).
PIPELINE_SPECS: dict[str, st.SearchStrategy[Case]] = {
    **specs_pipeline.SPECS,
    **specs_pipeline.COMPOSITES,
    **{f"{name}-broadcast": spec for name, spec in specs_pipeline.BROADCASTING.items()},
}


def test_every_pipeline_op_has_a_higher_order_case() -> None:
    registered = {name for name, op in REGISTRY.items() if op.family == "pipeline"}
    assert registered <= set(PIPELINE_SPECS), sorted(registered - set(PIPELINE_SPECS))
    assert set(pipeline.__all__) <= set(PIPELINE_SPECS), sorted(set(pipeline.__all__) - set(PIPELINE_SPECS))


def _like(rng: np.random.Generator, value: Any) -> Any:
    """A random float64 array (or float) shaped like ``value``."""
    return rng.normal(size=np.shape(value)) if isinstance(value, np.ndarray) else float(rng.normal())


def _moved(args: tuple[Any, ...], tangents: tuple[Any, ...], step: float) -> tuple[Any, ...]:
    return tuple(a + step * t for a, t in zip(args, tangents, strict=True))


def _assert_jvp_matches_finite_differences(f: Callable[..., Any], args: tuple[Any, ...], seed: int = 0) -> None:
    """``jvp`` against central differences of ``f`` along a random tangent."""
    rng = np.random.default_rng(seed)
    tangents = tuple(_like(rng, a) for a in args)
    out, tangent_out = ng.jvp(f, args, tangents)
    np.testing.assert_allclose(out, f(*args), rtol=1e-12, atol=1e-12)
    eps = 1e-6
    numeric = (np.asarray(f(*_moved(args, tangents, eps))) - np.asarray(f(*_moved(args, tangents, -eps)))) / (2 * eps)
    assert np.shape(tangent_out) == np.shape(out)
    np.testing.assert_allclose(tangent_out, numeric, rtol=1e-5, atol=1e-6 * (1 + np.max(np.abs(out), initial=0)))


@pytest.mark.parametrize("name", sorted(PIPELINE_SPECS))
@settings(max_examples=15)  # 15 ops; tests/ops/test_ops.py draws many more at first order
@given(data=st.data())
def test_second_derivatives_and_jvp_of_every_pipeline_op(name: str, data: st.DataObject) -> None:
    case = data.draw(PIPELINE_SPECS[name], label="case")
    f, args = case.of_args(), case.args
    nums = tuple(range(len(args)))
    # sin makes the cotangent reaching the op depend on the inputs, so the rule's own
    # dependence on g, ans and the inputs is exercised, linear ops included.
    scalar = lambda *a: ng.sum(ng.sin(f(*a)))
    # The recorded backward sweep against central differences of the gradient ...
    check_grads(ng.grad(scalar, argnums=nums), *args)
    # ... and forward mode (a transposed recorded sweep) against differences of f.
    _assert_jvp_matches_finite_differences(f, args)


def _hvp_by_differences(f: Callable[[Any], Any], x: np.ndarray, v: np.ndarray, eps: float = 1e-4) -> np.ndarray:
    """Central differences of the gradient, Richardson-extrapolated: the eps**2 term of two
    steps cancels, so steep third derivatives (a scan growing by 1.2 per step) do not
    swamp the comparison."""
    g = ng.grad(f)

    def central(h: float) -> np.ndarray:
        return (g(x + h * v) - g(x - h * v)) / (2 * h)

    return (4.0 * central(eps / 2) - central(eps)) / 3.0


def _check_hvp(f: Callable[[Any], Any], x: np.ndarray, v: np.ndarray, rtol: float = 1e-6) -> np.ndarray:
    """``hvp`` against central differences of the gradient, and against forward over reverse."""
    hv = ng.hvp(f, x, v)
    assert hv.shape == x.shape and hv.dtype == x.dtype
    scale = 1 + np.max(np.abs(hv), initial=0)
    np.testing.assert_allclose(hv, _hvp_by_differences(f, x, v), rtol=rtol, atol=rtol * scale)
    # jvp of the gradient transposes a sweep over a recorded sweep: third-order machinery.
    _, forward_over_reverse = ng.jvp(ng.grad(f), (x,), (v,))
    np.testing.assert_allclose(forward_over_reverse, hv, rtol=1e-10, atol=1e-12 * scale)
    return hv


# -- cumprod, with zeros -----------------------------------------------------------------------------


def _cumprod_derivatives(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of ``sum(w * cumprod(x))`` for 1-D ``x``, from explicit products
    (no division: exact where x has zeros)."""
    n = x.size
    grad, hess = np.zeros(n), np.zeros((n, n))
    for k in range(n):  # d^2 (x_0 ... x_k) / dx_i dx_j = the product of the others (i != j <= k)
        for i in range(k + 1):
            grad[i] += w[k] * np.prod(np.delete(x[: k + 1], i))
            for j in range(k + 1):
                if i != j:
                    hess[i, j] += w[k] * np.prod(np.delete(x[: k + 1], [i, j]))
    return grad, hess


@st.composite
def _with_zeros(draw: st.DrawFn) -> np.ndarray:
    """1-D arrays with up to three entries set to exactly 0."""
    x = draw(float_arrays(st.integers(1, 6).map(lambda n: (n,)), elements=floats(-1.5, 1.5)))
    x[draw(st.lists(st.integers(0, x.size - 1), max_size=3))] = 0.0
    return x


@given(x=_with_zeros(), data=st.data())
def test_cumprod_second_derivatives_with_zeros(x: np.ndarray, data: st.DataObject) -> None:
    w = data.draw(float_arrays(x.shape), label="w")
    f = lambda y: ng.sum(w * ng.cumprod(y))
    grad, hess = _cumprod_derivatives(x, w)
    np.testing.assert_allclose(ng.grad(f)(x), grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ng.hessian(f)(x), hess, rtol=1e-12, atol=1e-12)
    v = data.draw(float_arrays(x.shape), label="v")
    np.testing.assert_allclose(_check_hvp(f, x, v), hess @ v, rtol=1e-10, atol=1e-12)
    _assert_jvp_matches_finite_differences(ng.cumprod, (x,))


@pytest.mark.parametrize(
    "x",
    [
        pytest.param(np.array([2.0, 0.0, 3.0, -0.5]), id="one-zero"),
        pytest.param(np.array([0.0, 1.5, 0.0, 2.0, 0.0]), id="several-zeros"),
        pytest.param(np.array([1.2, -0.7, 0.0, 0.0]), id="adjacent-zeros"),
        pytest.param(np.array([0.0]), id="only-a-zero"),
    ],
)
def test_cumprod_at_zeros_against_closed_forms(x: np.ndarray) -> None:
    w = np.linspace(1.0, 2.0, x.size)
    f = lambda y: ng.sum(w * ng.cumprod(y))
    grad, hess = _cumprod_derivatives(x, w)
    np.testing.assert_allclose(ng.grad(f)(x), grad, rtol=1e-14, atol=0)
    np.testing.assert_allclose(ng.hessian(f)(x), hess, rtol=1e-14, atol=0)
    # Third order: the hvp's own gradient against differences of the hvp.
    check_grads(lambda y: ng.hvp(f, y, np.ones_like(x)), x)
    # Along an axis of a 2-D array, and flattened.
    m = np.stack([x, x[::-1]], axis=1)
    check_grads(ng.grad(lambda y: ng.sum(ng.sin(ng.cumprod(y, axis=0)))), m)
    check_grads(ng.grad(lambda y: ng.sum(ng.sin(ng.cumprod(y)))), m)


def test_cumprod_of_a_float32_array_keeps_its_dtype_at_second_order() -> None:
    x = np.array([0.5, 0.0, 2.0, 1.5], dtype=np.float32)
    f = lambda y: ng.sum(ng.cumprod(y) ** 2.0)
    hv = ng.hvp(f, x, np.ones_like(x))
    assert hv.dtype == np.float32
    np.testing.assert_allclose(hv, ng.hvp(f, x.astype(np.float64), np.ones(4)), rtol=1e-5)


# -- ssm_scan: gradients for a, b and x, with broadcasting -------------------------------------------


@st.composite
def _ssm_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], ...]:
    """Shapes of a, b and x broadcasting to (T, ...): one is the full shape, the others
    suffixes of it with some sides set to 1 (constant over time when they lack axis 0)."""
    full = (draw(st.integers(1, 5)), *draw(shapes(max_dims=2, max_side=3)))

    def part() -> tuple[int, ...]:
        kept = full[len(full) - draw(st.integers(0, len(full))) :]
        return tuple(1 if draw(st.booleans()) else n for n in kept)

    which = draw(st.integers(0, 2))
    return tuple(full if k == which else part() for k in range(3))


def _unpack(theta: Any, sizes: tuple[tuple[int, ...], ...]) -> list[Any]:
    """Split a flat vector (traced or not) into arrays of the given shapes."""
    parts, start = [], 0
    for shape in sizes:
        n = math.prod(shape)
        parts.append(ng.reshape(theta[start : start + n], shape))
        start += n
    return parts


@given(sizes=_ssm_shapes(), data=st.data())
def test_ssm_scan_second_derivatives_for_a_b_and_x(sizes: tuple[tuple[int, ...], ...], data: st.DataObject) -> None:
    # a, b and x packed in one vector: the Hessian's cross terms between them are checked too.
    total, na = sum(math.prod(s) for s in sizes), math.prod(sizes[0])
    theta = data.draw(float_arrays((total,)), label="theta")
    theta[:na] *= 0.4  # a in [-1.2, 1.2]: growing and decaying steps, b and x in [-3, 3]
    v = data.draw(float_arrays((total,)), label="v")
    h = lambda t: ng.ssm_scan(*_unpack(t, sizes))
    f = lambda t: ng.sum(ng.sin(h(t)))
    _check_hvp(f, theta, v)
    check_grads(ng.grad(f), theta)
    _assert_jvp_matches_finite_differences(h, (theta,))


def test_ssm_scan_second_derivatives_for_each_input_alone() -> None:
    rng = np.random.default_rng(3)
    a, b, x = rng.uniform(-1, 1, (6, 1)), rng.normal(size=(3,)), rng.normal(size=(6, 3))
    # Each input traced alone, the other two plain constants: the rules' mixed paths.
    for k, value in enumerate((a, b, x)):

        def h(y: Any, k: int = k) -> Any:
            args: list[Any] = [a, b, x]
            args[k] = y
            return ng.ssm_scan(*args)

        _assert_jvp_matches_finite_differences(h, (value,), seed=k)
        _check_hvp(lambda y, h=h: ng.sum(h(y) ** 3.0), value, rng.normal(size=value.shape))
    # b a Python float, differentiated together with a and x.
    f = lambda a, b, x: ng.sum(ng.tanh(ng.ssm_scan(a, b, x)))
    check_grads(ng.grad(f, argnums=(0, 1, 2)), a, 0.7, x)


def test_ssm_scan_third_derivative() -> None:
    rng = np.random.default_rng(4)
    sizes = ((4, 1), (1,), (4, 2))
    theta, v = rng.normal(size=13), rng.normal(size=13)
    theta[:4] *= 0.4
    f = lambda t: ng.sum(ng.sin(ng.ssm_scan(*_unpack(t, sizes))))
    check_grads(lambda t: ng.hvp(f, t, v), theta)  # a sweep over a recorded sweep over a recorded sweep


# -- exact gelu -----------------------------------------------------------------------------------------

_erf = np.vectorize(math.erf)


def _normal_pdf(x: Any) -> Any:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_exact(x: Any) -> Any:
    return ng.gelu(x, approximate=False)


@given(x=float_arrays(shapes(max_dims=2, max_side=3)))
def test_exact_gelu_derivatives_against_closed_forms(x: np.ndarray) -> None:
    first = _first(_gelu_exact)
    second = lambda z: ng.grad(lambda y: ng.sum(first(y)))(z)
    # gelu' = Phi + x phi, gelu'' = phi (2 - x^2), gelu''' = phi x (x^2 - 4).
    np.testing.assert_allclose(first(x), 0.5 * (1 + _erf(x / math.sqrt(2))) + x * _normal_pdf(x), rtol=1e-12)
    np.testing.assert_allclose(second(x), _normal_pdf(x) * (2 - x * x), rtol=1e-9, atol=1e-12)
    third = ng.grad(lambda y: ng.sum(second(y)))(x)
    np.testing.assert_allclose(third, _normal_pdf(x) * x * (x * x - 4), rtol=1e-9, atol=1e-12)
    check_grads(first, x)
    _, tangent = ng.jvp(_gelu_exact, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, first(x), rtol=1e-12, atol=1e-15)


def test_exact_gelu_second_derivative_in_float32_and_at_zero() -> None:
    x = np.array([-2.0, 0.0, 0.5, 3.0], dtype=np.float32)
    g2 = ng.grad(lambda z: ng.sum(_first(_gelu_exact)(z)))(x)
    assert g2.dtype == np.float32
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(g2, _normal_pdf(x64) * (2 - x64 * x64), rtol=1e-5, atol=1e-7)
    assert ng.grad(ng.grad(_gelu_exact))(0.0) == pytest.approx(2 / math.sqrt(2 * math.pi), rel=1e-14)
    assert ng.grad(ng.grad(ng.gelu))(0.0) == pytest.approx(_GELU_C, rel=1e-12)  # the tanh form's


# -- a rule that cannot be differentiated again ------------------------------------------------------


def _inplace_rule(g: Any, ans: Any, x: Any) -> Any:
    out = np.zeros(np.shape(x))
    out[...] = g  # an in-place write: fine on arrays, impossible on traced values
    return out


#: Deliberately not registered (the registry holds only real ops): recorded directly.
_INPLACE = Op("test_inplace_identity", lambda x: np.array(x, copy=True), (_inplace_rule,), "test")


def test_a_rule_that_cannot_be_differentiated_again_names_its_op() -> None:
    name = _INPLACE.name
    f = lambda y: ng.sin(record1(_INPLACE, y))
    x = np.array([0.3, 0.6, 0.9])
    first = ng.grad(lambda y: ng.sum(f(y)))
    np.testing.assert_allclose(first(x), np.cos(x))  # the first derivative is fine
    with pytest.raises(NoGradientError, match=f"'{name}'.*cannot be differentiated again"):
        ng.grad(lambda z: ng.sum(first(z)))(x)
    with pytest.raises(NoGradientError, match=f"'{name}'"):
        ng.hessian(lambda y: ng.sum(f(y)))(x)
    with pytest.raises(NoGradientError, match=f"'{name}'"):
        ng.jvp(f, (x,), (np.ones(3),))  # forward mode transposes a recorded sweep
    arena = ng.Arena()
    p = arena.param(x)
    with pytest.raises(NoGradientError, match=f"'{name}'"):
        arena.backward(ng.sum(f(p)), wrt=p, create_graph=True)
    # The arena is still usable, for first derivatives at least.
    np.testing.assert_allclose(arena.backward(ng.sum(p * p), wrt=p), 2 * x)


def test_svdvals_and_the_norms_built_on_them_differentiate_twice() -> None:
    # The rule of the singular values is written with the singular vectors' ops, so a
    # second derivative goes through them (not treating them as constants).
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))

    def f(m: Any) -> Any:
        return np.linalg.norm(m, "nuc") + ng.svdvals(m)[0] ** 2.0 + np.linalg.norm(m, 2) * np.linalg.norm(m, -2)

    _, tangent = ng.jvp(f, (x,), (t,))
    eps = 1e-6
    np.testing.assert_allclose(tangent, (f(x + eps * t) - f(x - eps * t)) / (2 * eps), rtol=1e-6)
    grad = ng.grad(f)
    np.testing.assert_allclose(ng.hvp(f, x, t), (grad(x + eps * t) - grad(x - eps * t)) / (2 * eps), rtol=1e-5)
    check_grads(f, x, order=2)


@given(st.integers(1, 3), st.data())
def test_second_derivatives_of_inv_solve_det_slogdet_and_cholesky(n: int, data: st.DataObject) -> None:
    # Their rules are made of matmul, solve and inv, which record themselves.
    from tests.ops.harness import well_separated_matrices

    a = well_separated_matrices(data.draw, (n, n))
    b = data.draw(float_arrays((n,) if data.draw(st.booleans()) else (n, 2)))
    weights = np.linspace(0.5, 1.5, n * n).reshape(n, n)
    check_grads(lambda a: np.sum(np.linalg.inv(a) * weights), a, order=2)
    check_grads(lambda a: np.linalg.det(a) * 0.5, a, order=2)
    check_grads(lambda a: np.linalg.slogdet(a)[1], a, order=2)
    check_grads(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2.0), a, b, order=2)
    check_grads(lambda a: np.sum(np.linalg.cholesky(a @ a.T + np.eye(n)) * weights), a, order=2)


def test_eigvalsh_differentiates_twice() -> None:
    rng = np.random.default_rng(5)
    m, t = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))

    def f(m: Any) -> Any:
        return np.sum(np.linalg.eigvalsh(m @ m.T) ** 3.0)

    grad = ng.grad(f)
    eps = 1e-6
    np.testing.assert_allclose(ng.hvp(f, m, t), (grad(m + eps * t) - grad(m - eps * t)) / (2 * eps), rtol=1e-5)
    check_grads(f, m, order=2)


# -- linearize -----------------------------------------------------------------------------------


@given(
    float_arrays((3,), elements=floats(-1.5, 1.5)), float_arrays((3,), elements=floats(-1.0, 1.0)), st.floats(-1.0, 1.0)
)
def test_linearize_gives_jvp_for_every_tangent_and_records_fun_once(x: np.ndarray, t: np.ndarray, s: float) -> None:
    calls = []

    def f(p: Any) -> Any:
        calls.append(1)
        return {"y": ng.sin(A @ p["x"]) * p["s"], "z": ng.sum(p["x"] ** 3.0)}

    point, direction = {"x": x, "s": 0.7}, {"x": t, "s": s}
    value, f_jvp = ng.linearize(f, point)
    expected_value, expected = ng.jvp(f, (point,), (direction,))
    assert len(calls) == 2  # once for linearize, once for jvp
    for _ in range(2):  # the same linearization serves again, without running f
        got = f_jvp(direction)
        np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got["z"], expected["z"], rtol=1e-12, atol=1e-14)
    assert len(calls) == 2
    np.testing.assert_allclose(value["y"], expected_value["y"])
    eps = 1e-6
    plus = f({"x": x + eps * t, "s": 0.7 + eps * s})["y"]
    minus = f({"x": x - eps * t, "s": 0.7 - eps * s})["y"]
    np.testing.assert_allclose(f_jvp(direction)["y"], (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_linearize_nests_in_grad_and_takes_traced_tangents() -> None:
    x = np.array([0.3, 1.2])
    f = lambda x: ng.sin(x) * x[0]
    through_primal = ng.grad(lambda x: ng.sum(ng.linearize(f, x)[1](np.ones(2))))(x)
    np.testing.assert_allclose(through_primal, ng.grad(lambda x: ng.sum(ng.jvp(f, (x,), (np.ones(2),))[1]))(x))
    _, f_jvp = ng.linearize(f, x)
    through_tangent = ng.grad(lambda t: ng.sum(f_jvp(t)))(np.ones(2))  # linear in t: J^T 1
    np.testing.assert_allclose(through_tangent, ng.jacobian(f)(x).sum(axis=0))
    with pytest.raises(StructureError, match="1 primals but 2 tangents"):
        f_jvp(np.ones(2), np.ones(2))


def test_the_power_rules_mixed_second_derivative_at_a_zero_exponent() -> None:
    """d2(x**y)/dx dy at y == 0 is 1/x: the base rule keeps its dependence on y there (a
    constant 0 for the entries where y == 0 would make it 0)."""
    x, y = np.array([0.5, 2.0, 1.5]), np.array([0.0, 1.0, 0.0])
    mixed = ng.grad(lambda y: ng.sum(ng.grad(lambda x: ng.sum(ng.power(x, y)))(x)))(y)
    np.testing.assert_allclose(mixed, [1 / 0.5, 2.0**0 * (1 + np.log(2.0)), 1 / 1.5])
    check_grads(lambda x, y: ng.power(x, y), x, y, order=2)
    # at x == y == 0 the first derivative stays finite (0), as before
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.power(x, np.zeros(2))))(np.zeros(2)), [0.0, 0.0])
