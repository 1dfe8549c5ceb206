"""grad, value_and_grad and vjp."""

import dataclasses
import inspect
import re
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, NodegradError, ShapeError


def test_grad_of_a_python_float_is_a_python_float():
    g = ng.grad(lambda x: x * x * x)(2.0)
    assert type(g) is float
    assert g == 12.0


def test_grad_keeps_shape_and_dtype():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    g = ng.grad(lambda x: ng.sum(ng.tanh(x)))(x)
    assert g.shape == (2, 3)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-6)


def test_argnums_tuple_and_negative():
    f = lambda x, y, z: ng.sum(x * y + z)
    x, y, z = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    gx, gz = ng.grad(f, argnums=(0, -1))(x, y, z)
    np.testing.assert_array_equal(gx, y)
    np.testing.assert_array_equal(gz, np.ones(2))


def test_argnums_out_of_range():
    with pytest.raises(NodegradError, match="argnums 2 is out of range"):
        ng.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(NodegradError, match="distinct"):
        ng.grad(lambda x: x, argnums=(0, 0))


def test_value_and_grad_with_aux():
    def loss(w, x):
        pred = x @ w
        return ng.mean(pred * pred), {"pred": pred, "n": 3}

    w, x = np.array([1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 1.0]])
    (value, aux), g = ng.value_and_grad(loss, has_aux=True)(w, x)
    pred = x @ w
    assert value == pytest.approx(np.mean(pred**2))
    assert type(aux["pred"]) is np.ndarray
    np.testing.assert_array_equal(aux["pred"], pred)
    assert aux["n"] == 3
    np.testing.assert_allclose(g, x.T @ (2 * pred / 2))
    g2, aux2 = ng.grad(loss, has_aux=True)(w, x)
    np.testing.assert_array_equal(g, g2)
    assert aux2["n"] == 3


def test_has_aux_needs_a_pair():
    with pytest.raises(NodegradError, match="pair"):
        ng.grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_grad_needs_a_scalar_output():
    with pytest.raises(ShapeError, match=r"scalar output.*\(2,\)"):
        ng.grad(lambda x: x * 2.0)(np.ones(2))


def test_grad_of_an_integer_number_is_a_dtype_error_and_of_an_integer_array_a_float_gradient():
    # As HIPS autograd: an integer number is refused, an integer array differentiated as floats.
    with pytest.raises(DtypeError, match=r"args\[0\]"):
        ng.grad(lambda x: x * 2.0)(3)
    g = ng.grad(lambda x: ng.sum(x * x))(np.arange(3))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [0.0, 2.0, 4.0])


def test_function_not_using_its_argument_has_zero_gradient():
    g = ng.grad(lambda x, y: ng.sum(y * 2.0))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_python_control_flow_is_followed():
    def f(x):
        total = 0.0
        for k in range(1, 4):
            total = total + (x**k if k % 2 else ng.sin(x))
        return total

    g = ng.grad(f)(0.5)
    assert g == pytest.approx(1 + np.cos(0.5) + 3 * 0.25)


def test_vjp_returns_a_reusable_function():
    x = np.array([1.0, 2.0])
    y = np.array([3.0])
    out, back = ng.vjp(lambda x, y: ng.sin(x) * y, x, y)
    np.testing.assert_allclose(out, np.sin(x) * y)
    for v in (np.array([1.0, 0.0]), np.array([0.5, 2.0])):
        gx, gy = back(v)
        np.testing.assert_allclose(gx, v * np.cos(x) * y)
        np.testing.assert_allclose(gy, [np.sum(v * np.sin(x))])


def test_grad_is_wrapped_with_the_functions_name():
    def my_loss(x):
        """Docs."""
        return x * x

    assert ng.grad(my_loss).__name__ == "my_loss"
    assert ng.value_and_grad(my_loss).__doc__ == "Docs."


def test_a_function_that_replaces_entries_of_its_argument_gets_the_gradient_of_the_input() -> None:
    def halve_then_dot(d: Any) -> Any:
        d["x"] = d["x"] / 2.0  # a pipeline stage overwriting a batch entry
        return ng.sum(d["x"] * d["y"])

    batch = {"x": np.array([2.0, 4.0]), "y": np.ones(2)}
    g = ng.grad(halve_then_dot)(batch)
    np.testing.assert_array_equal(g["x"], [0.5, 0.5])
    np.testing.assert_array_equal(g["y"], [1.0, 2.0])
    assert batch["x"].tolist() == [2.0, 4.0]  # the caller's dict is untouched

    @dataclasses.dataclass
    class P:
        w: float
        b: float

    def scale_w(m: P) -> Any:
        m.w = m.w * 3.0
        return m.w * m.b

    assert ng.grad(scale_w)(P(1.0, 2.0)) == P(6.0, 3.0)
    _, back = ng.vjp(halve_then_dot, batch)
    np.testing.assert_array_equal(back(1.0)[0]["x"], [0.5, 0.5])


def test_a_python_float_argument_is_weakly_typed_like_numpy_scalars() -> None:
    # float32 arrays stay float32 when they meet a differentiated Python float, as they do
    # when they meet a plain one; the float's own gradient is a Python float.
    w32 = np.ones(3, np.float32)
    value, (g_s, g_w) = ng.value_and_grad(lambda s, w: ng.sum(w * s), argnums=(0, 1))(0.5, w32)
    assert value.dtype == np.float32 and g_w.dtype == np.float32
    assert type(g_s) is float and g_s == 3.0

    @dataclasses.dataclass(frozen=True)
    class Scaled:
        w: np.ndarray
        scale: float

    value, g = ng.value_and_grad(lambda m: ng.sum(ng.tanh(m.w * m.scale)))(Scaled(w32, 0.5))
    assert value.dtype == np.float32 and g.w.dtype == np.float32 and type(g.scale) is float


TRANSFORMS = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "elementwise_grad", "hvp",
    "jacobian", "jacrev", "jacfwd", "hessian", "custom_vjp", "checkpoint", "stop_gradient",
]  # fmt: skip


def _documented_parameters(doc: str) -> set[str]:
    """The names a numpydoc Parameters section describes (``a, b : int`` names two)."""
    section = doc.split("Parameters\n----------\n", 1)[1]
    section = re.split(r"\n\S[^\n]*\n-{3,}\n", section, maxsplit=1)[0]
    lines = [line for line in section.splitlines() if line and not line.startswith(" ")]
    return {name.strip().lstrip("*") for line in lines for name in line.split(" : ")[0].split(",")}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_public_transform_documents_each_of_its_parameters(name: str) -> None:
    fn = getattr(ng, name)
    doc = inspect.getdoc(fn) or ""
    assert "Parameters\n----------\n" in doc, f"help(ng.{name}) has no Parameters section"
    signature = inspect.signature(fn)
    assert set(signature.parameters) - {"self"} <= _documented_parameters(doc)
    assert "Examples\n--------\n>>> " in doc


@pytest.mark.parametrize("argnums", [(0, -2), (1, -1), (0, 0)])
def test_argnums_that_name_one_argument_twice_are_refused(argnums: tuple[int, ...]) -> None:
    # (0, -2) of two arguments is argument 0 twice: differentiated once, its first copy's
    # gradient would silently be zero.
    for transform in (ng.grad, ng.value_and_grad, ng.jacobian):
        with pytest.raises(ArgumentError, match=r"argnums .*(name one argument twice|distinct)"):
            transform(lambda x, y: x * y, argnums=argnums)(1.0, 2.0)
    with pytest.raises(ArgumentError, match="check_grads"):
        ng.testing.check_grads(lambda x, y: x * y, 1.0, 2.0, argnums=argnums)


def test_jacobian_and_hessian_leave_a_float_in_a_static_field_out() -> None:
    @attrs.frozen
    class Scaled:
        w: float
        scale: float = ng.field(static=True)

    model = Scaled(0.5, 1.5)
    f = lambda m: m.w**3.0 * m.scale
    for jac in (ng.jacobian, ng.jacrev, ng.jacfwd):
        got = jac(f)(model)
        assert got.scale is None and float(got.w) == pytest.approx(3 * 0.25 * 1.5)
    hess = ng.hessian(f)(model)
    assert float(hess.w.w) == pytest.approx(6 * 0.5 * 1.5) and hess.scale is None


def test_a_vjp_reads_its_arguments_as_they_were_when_it_was_made() -> None:
    x = np.array([1.0, 2.0])
    params = {"w": np.array([0.5, 1.5])}
    _, back = ng.vjp(lambda x, p: ng.sum(x**3.0 * p["w"]), x, params)
    x *= 2.0  # an optimiser's in-place step, after the vjp was taken
    params["w"] -= 1.0
    gx, gp = back(1.0)
    np.testing.assert_array_equal(gx, 3.0 * np.array([1.0, 4.0]) * np.array([0.5, 1.5]))
    np.testing.assert_array_equal(gp["w"], [1.0, 8.0])
