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
from hypothesis import given

import nodegrad as ng
from nodegrad.errors import NoGradientError
from nodegrad.ops import REGISTRY
from nodegrad.ops.registry import Op
from nodegrad.testing import check_grads
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
    x = data.draw(float_arrays(shapes(max_dims=2, max_side=3), domain), label="x")
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


vectors = float_arrays((3,), floats(-1.5, 1.5))


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


# -- rules that cannot be differentiated again --------------------------------------------------------

NOT_TWICE = [
    pytest.param("cumprod", lambda y: ng.cumprod(y), id="cumprod"),
    pytest.param("ssm_scan", lambda y: ng.ssm_scan(y, 1.0, y), id="ssm_scan"),
    pytest.param("gelu", lambda y: ng.gelu(y, approximate=False), id="gelu-exact"),
]


@pytest.mark.parametrize(("name", "f"), NOT_TWICE)
def test_a_rule_that_cannot_be_differentiated_again_names_its_op(name: str, f: Callable[[Any], Any]) -> None:
    x = np.array([0.3, 0.6, 0.9])
    first = ng.grad(lambda y: ng.sum(f(y)))
    first(x)  # the first derivative is fine
    check_grads(f, x)
    with pytest.raises(NoGradientError, match=f"'{name}'.*cannot be differentiated again"):
        ng.grad(lambda z: ng.sum(first(z)))(x)
    with pytest.raises(NoGradientError, match=f"'{name}'"):
        ng.hessian(lambda y: ng.sum(f(y)))(x)
    arena = ng.Arena()
    p = arena.param(x)
    with pytest.raises(NoGradientError, match=f"'{name}'"):
        arena.backward(ng.sum(f(p)), wrt=p, create_graph=True)
    # The arena is still usable, for first derivatives at least.
    np.testing.assert_allclose(arena.backward(ng.sum(p * p), wrt=p), 2 * x)
