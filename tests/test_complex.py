"""Complex values through the transforms, the structures, the tools and the optimisers.

The convention is JAX's: a VJP is the transpose of the derivative for the pairing
``<u, v> = Re(sum(u * v))``, so ``grad`` of a real-valued ``f(z)`` is
``df/dx - 1j df/dy`` and ``grad(f, holomorphic=True)`` of a holomorphic one is ``f'(z)``.
The op-by-op checks live with each op family's tests; these check the machinery.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import assume, given, settings

import nodegrad as ng
from nodegrad.errors import DtypeError, NonFiniteError
from nodegrad.testing import check_grads

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)
complex_scalars = st.builds(complex, finite, finite)


@pytest.fixture(autouse=True)
def _no_complex_warning() -> Iterator[None]:
    # A ComplexWarning means an imaginary part was dropped somewhere: always a failure.
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        yield


def _jax_gradient(f: Callable[[complex], float], z: complex, h: float = 1e-6) -> complex:
    """``df/dx - 1j df/dy`` by central differences: JAX's gradient of a real-valued f."""
    dx = (f(z + h) - f(z - h)) / (2 * h)
    dy = (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    return complex(dx, -dy)


# -- the convention ----------------------------------------------------------------------------


def test_the_gradient_of_a_squared_modulus_is_jaxs() -> None:
    # PyTorch returns the conjugate, 2 + 4j.
    assert ng.grad(lambda z: abs(z) ** 2)(1 + 2j) == pytest.approx(2 - 4j)


REAL_VALUED: dict[str, Callable[[Any], Any]] = {
    "modulus squared": lambda z: ng.real(z * ng.conj(z)),
    "real of a cube": lambda z: ng.real(z**3.0),
    "imaginary part of exp": lambda z: ng.imag(ng.exp(z)),
    "angle times modulus": lambda z: ng.angle(z + 4.0) * abs(z),
    "mixed": lambda z: ng.real(ng.sin(z) * ng.conj(z)) + ng.imag(z) ** 2.0,
}


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
@settings(max_examples=25, deadline=None)
@given(z=complex_scalars)
def test_grad_of_a_real_valued_function_is_df_dx_minus_i_df_dy(name: str, z: complex) -> None:
    f = REAL_VALUED[name]
    expected = _jax_gradient(lambda w: float(f(w)), z)
    assert ng.grad(f)(z) == pytest.approx(expected, rel=1e-6, abs=1e-6)
    # abs has a kink at 0: a central difference that steps across it measures neither side.
    assume(abs(z) > 1e-3)
    check_grads(f, np.array([z]))


HOLOMORPHIC: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "cube": (lambda z: z**3.0, lambda z: 3 * z**2),
    "exp times z": (lambda z: ng.exp(z) * z, lambda z: np.exp(z) * (z + 1)),
    "sin of a square": (lambda z: ng.sin(z * z), lambda z: np.cos(z * z) * 2 * z),
    "reciprocal": (lambda z: 1.0 / (z + 5.0), lambda z: -1 / (z + 5) ** 2),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
@settings(max_examples=25, deadline=None)
@given(z=complex_scalars)
def test_holomorphic_grad_is_the_complex_derivative(name: str, z: complex) -> None:
    f, derivative = HOLOMORPHIC[name]
    assert ng.grad(f, holomorphic=True)(z) == pytest.approx(derivative(z), rel=1e-9, abs=1e-9)
    check_grads(f, np.array([z]), holomorphic=True)


def test_holomorphic_refuses_real_arguments_and_real_outputs() -> None:
    with pytest.raises(DtypeError, match="holomorphic=True needs complex arguments"):
        ng.grad(lambda x: x * x, holomorphic=True)(1.0)
    with pytest.raises(DtypeError, match="complex scalar"):
        ng.grad(lambda z: abs(z), holomorphic=True)(1j)


def test_grad_refuses_a_complex_output_without_holomorphic() -> None:
    with pytest.raises(DtypeError, match="pass holomorphic=True"):
        ng.grad(lambda z: z * z)(1 + 1j)


def test_value_and_grad_holomorphic() -> None:
    z = np.array([1 + 2j, 0.5 - 1j])
    value, g = ng.value_and_grad(lambda z: ng.sum(z**2.0), holomorphic=True)(z)
    assert value == pytest.approx(np.sum(z**2))
    np.testing.assert_allclose(g, 2 * z)


# -- jacobians -----------------------------------------------------------------------------------


def test_holomorphic_jacobian_by_rows_and_by_columns() -> None:
    z = np.array([1 + 2j, 0.5 - 1j, -0.3j])
    f = lambda z: ng.exp(z) * z[0]
    expected = np.diag(np.exp(z) * z[0]).astype(complex)
    expected[:, 0] += np.exp(z)
    for mode in ("rev", "fwd"):
        np.testing.assert_allclose(ng.jacobian(f, mode=mode, holomorphic=True)(z), expected, rtol=1e-12)


def test_jacobian_of_a_complex_output_without_holomorphic_is_refused_as_in_jax() -> None:
    z = np.array([1 + 2j, 0.5 - 1j])
    with pytest.raises(DtypeError, match="needs real outputs"):
        ng.jacobian(lambda z: z * 1j)(z)
    with pytest.raises(DtypeError, match="needs real arguments"):
        ng.jacobian(lambda z: abs(z), mode="fwd")(z)


def test_jacobian_of_a_real_valued_function_holds_gradients() -> None:
    z = np.array([1 + 2j, 0.5 - 1j])
    np.testing.assert_allclose(ng.jacobian(lambda z: abs(z) ** 2.0)(z), np.diag(2 * np.conj(z)))


def test_forward_jacobian_of_a_real_argument_with_a_complex_output() -> None:
    x = np.array([0.0, 1.0])
    np.testing.assert_allclose(ng.jacobian(lambda x: ng.exp(1j * x), mode="fwd")(x), np.diag(1j * np.exp(1j * x)))


def test_holomorphic_hessian() -> None:
    z = np.array([1 + 2j, 0.5 - 1j])
    np.testing.assert_allclose(ng.hessian(lambda z: ng.sum(z**3.0), holomorphic=True)(z), np.diag(6 * z))


# -- seeds, cotangents and tangents -----------------------------------------------------------------


def test_a_complex_cotangent_of_a_complex_output() -> None:
    z = np.array([1 + 2j, 0.5 - 1j])
    _, back = ng.vjp(lambda z: z * z, z)
    ct = np.array([1j, 2.0 + 0j])
    np.testing.assert_allclose(back(ct)[0], ct * 2 * z)


def test_a_complex_seed_of_a_real_output_is_refused_not_truncated() -> None:
    _, back = ng.vjp(lambda x: x * 2.0, np.ones(2))
    with pytest.raises(DtypeError, match="seed is complex"):
        back(np.array([1j, 1.0]))
    arena = ng.Arena()
    x = arena.param(np.ones(2))
    with pytest.raises(DtypeError, match="seed is complex"):
        arena.backward(ng.sum(x * x), seed=1j)
    with pytest.raises(DtypeError, match=r"seed at \['y'\] is complex"):
        ng.vjp(lambda x: {"y": x * 2.0}, np.ones(2))[1]({"y": np.array([1j, 0])})


def test_a_complex_output_needs_an_explicit_seed() -> None:
    arena = ng.Arena()
    z = arena.param(1 + 1j)
    with pytest.raises(DtypeError, match="pass seed= explicitly"):
        arena.backward(z * z)
    assert arena.backward(z * z, seed=1.0)[0] == pytest.approx(2 + 2j)  # the arena is still usable


def test_a_complex_tangent_of_a_real_primal_is_refused() -> None:
    with pytest.raises(DtypeError, match="direction is complex but the point is real"):
        ng.jvp(lambda x: x * 2.0, (np.ones(2),), (np.array([1j, 1.0]),))


@settings(max_examples=20, deadline=None)
@given(z=complex_scalars, t=complex_scalars)
def test_jvp_of_a_holomorphic_function_is_complex_linear(z: complex, t: complex) -> None:
    f = lambda z: ng.exp(z) * ng.sin(z)
    _, along_t = ng.jvp(f, (np.array(z),), (np.array(t),))
    _, along_it = ng.jvp(f, (np.array(z),), (np.array(1j * t),))
    assert complex(along_it) == pytest.approx(1j * complex(along_t), rel=1e-9, abs=1e-12)
    derivative = np.exp(z) * (np.sin(z) + np.cos(z))
    assert complex(along_t) == pytest.approx(derivative * t, rel=1e-9, abs=1e-12)


# -- structures, precision and nesting ---------------------------------------------------------------


@attrs.frozen
class Filter:
    taps: np.ndarray
    gain: float
    label: str = ng.field(static=True, default="f")


def test_complex_leaves_in_records_and_dicts_get_gradients_even_strictly() -> None:
    params = {"z": np.array([1 + 2j, -1j]), "f": Filter(np.array([0.5 + 0.5j]), 2.0), "c": 1 + 1j}

    def loss(p: Any) -> Any:
        return ng.sum(abs(p["z"] * p["f"].taps) ** 2.0) * p["f"].gain + abs(p["c"]) ** 2.0

    g = ng.grad(loss, options=ng.GradOptions.STRICT)(params)
    assert isinstance(g["f"], Filter) and g["f"].label is None
    assert type(g["c"]) is complex and g["c"] == pytest.approx(2 - 2j)
    taps, z = params["f"].taps, params["z"]
    np.testing.assert_allclose(g["z"], 2 * 2.0 * np.conj(z) * abs(taps) ** 2)
    check_grads(loss, params)


def test_complex64_stays_complex64() -> None:
    z = np.array([1 + 2j, 0.5 - 1j], np.complex64)
    g = ng.grad(lambda z: ng.sum(abs(z) ** 2.0))(z)
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-6)


def test_a_real_argument_meeting_complex_values_gets_a_real_gradient() -> None:
    x = np.array([0.3, -1.2])
    g = ng.grad(lambda x: ng.sum(ng.real(ng.exp(1j * x) * (2 - 1j))))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.real(1j * np.exp(1j * x) * (2 - 1j)))
    g32 = ng.grad(lambda x: ng.sum(abs(x.astype(np.complex64) * 1j)))(x.astype(np.float32))
    assert g32.dtype == np.float32


def test_casting_complex_to_real_is_refused() -> None:
    with pytest.raises(DtypeError, match="imaginary part"):
        ng.grad(lambda z: ng.sum(z.astype(np.float64)))(np.array([1j]))


def test_nested_transforms_with_complex_values() -> None:
    def inner(x: Any) -> Any:
        return ng.real(ng.grad(lambda z: ng.real(z * z * x))(1 + 1j))  # 2 x Re(1 + 1j)

    assert ng.grad(inner)(3.0) == pytest.approx(2.0)
    check_grads(lambda z: ng.grad(lambda w: ng.real(w * w * z[0]), holomorphic=False)(z[1]), np.array([1j, 2.0 + 0j]))


def test_custom_vjp_with_complex_values() -> None:
    @ng.custom_vjp
    def twice(z: Any) -> Any:
        return z * 2.0

    twice.defvjp(lambda z: (z * 2.0, None), lambda _, g: (g * 2.0,))
    z = np.array([1 + 2j])
    np.testing.assert_allclose(ng.grad(lambda z: ng.sum(abs(twice(z)) ** 2.0))(z), 8 * np.conj(z))

    @ng.custom_vjp
    def scaled(x: Any) -> Any:
        return x * 2.0

    scaled.defvjp(lambda x: (x * 2.0, None), lambda _, g: (g * 2.0j,))  # a complex cotangent for a real x
    with pytest.raises(DtypeError, match="cotangent 0 is complex"):
        ng.grad(lambda x: ng.sum(scaled(x)))(np.ones(2))


# -- the tools --------------------------------------------------------------------------------------


def test_check_grads_catches_a_wrong_rule_along_imaginary_directions() -> None:
    @ng.custom_vjp
    def conj_wrong(z: Any) -> Any:
        return ng.conj(z)

    conj_wrong.defvjp(lambda z: (ng.conj(z), None), lambda _, g: (g,))  # should be conj(g)
    with pytest.raises(AssertionError, match="along imaginary directions"):
        check_grads(lambda z: conj_wrong(z) * 1.0, np.array([1 + 1j, 2 - 1j]), modes=("rev",))


def test_check_grads_holomorphic_refuses_a_conjugating_function() -> None:
    with pytest.raises(AssertionError, match="Cauchy-Riemann"):
        check_grads(lambda z: ng.conj(z) * z, np.array([1 + 1j]), holomorphic=True)


def test_tree_utilities_on_complex_leaves() -> None:
    a, b = {"z": np.array([1 + 2j]), "x": 1.0}, {"z": np.array([3 - 1j]), "x": 2.0}
    assert ng.tree.vdot(a, b) == pytest.approx(np.vdot([1 + 2j], [3 - 1j]) + 2.0)
    assert ng.tree.global_norm({"z": np.array([3 + 4j]), "x": 12.0}) == pytest.approx(13.0)
    flat, unravel = ng.tree.ravel({"z": np.array([1 + 2j]), "x": np.array([3.0]), "s": 4.0})
    assert flat.dtype == np.complex128
    back = unravel(flat)
    assert back["x"].dtype == np.float64 and type(back["s"]) is float and back["z"][0] == 1 + 2j


def test_optimisers_descend_on_complex_parameters() -> None:
    target = np.array([1 + 2j, -0.5j])
    g = ng.grad(lambda z: ng.sum(abs(z - target) ** 2.0))
    z = np.zeros(2, complex)
    for _ in range(200):
        z = ng.optim.sgd(z, g(z), lr=0.1)
    np.testing.assert_allclose(z, target, atol=1e-8)
    found = ng.optim.adam_loop(lambda z, i: g(z), np.zeros(2, complex), num_iters=600, step_size=0.05)
    np.testing.assert_allclose(found, target, atol=1e-4)


def test_debug_nans_names_the_part_that_is_not_finite() -> None:
    with ng.debug_nans(), pytest.raises(NonFiniteError, match=r"imaginary part"):
        ng.grad(lambda z: ng.sum(abs(z)))(np.array([complex(1.0, np.nan)]))
    with ng.debug_nans(), pytest.raises(NonFiniteError, match=r"multiply .*imaginary part.*input 1 .*constant"):
        ng.grad(lambda z: ng.sum(abs(z * np.array([complex(0.0, np.inf)]))))(np.ones(1, complex))


@attrs.frozen
class Tuned:
    taps: np.ndarray
    scale: float = ng.field(static=True)


def test_debug_nans_ignores_a_non_finite_static_field() -> None:
    with ng.debug_nans():
        g = ng.grad(lambda f: ng.sum(abs(f.taps) ** 2.0))(Tuned(np.array([1j]), float("nan")))
    np.testing.assert_allclose(g.taps, [-2j])
    assert g.scale is None
