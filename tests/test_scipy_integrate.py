"""nodegrad.scipy.integrate: odeint and solve_ivp, with adjoint gradients.

Linear systems ``dy/dt = A y`` are checked against their closed form ``y(t) = expm(A (t -
t0)) y0``, whose gradients in ``A``, ``y0`` and the times come exactly from
:func:`nodegrad.scipy.linalg.expm`; nonlinear ones (Lotka-Volterra with its parameters in a
dict, a damped pendulum, a forced decay) against central differences. The solves use
``rtol = atol = 1e-10``, and the tolerances of the checks follow from them: the closed
form agrees to about 1e-8, central differences with a step of 1e-4 to about 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.integrate
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.scipy.linalg as sla
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError
from nodegrad.scipy.integrate import odeint, solve_ivp
from nodegrad.testing import check_grads
from tests.strategies import float_arrays, floats

TOL = {"rtol": 1e-10, "atol": 1e-10}
#: central differences of solves accurate to ~1e-10: a step of 1e-4 keeps the noise ~1e-6
NUMERIC = {"eps": 1e-4, "rtol": 1e-5, "atol": 1e-7}
EXAMPLES = settings(max_examples=10, deadline=None)


def linear(y: Any, t: Any, a: Any) -> Any:
    return a @ y


def closed_form(a: Any, y0: Any, t: Any) -> Any:
    return ng.stack([sla.expm(a * (t[i] - t[0])) @ y0 for i in range(len(t))])


@st.composite
def linear_problems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 3))
    a = draw(float_arrays((n, n), elements=floats(-1.0, 1.0)))
    y0 = draw(float_arrays((n,), elements=floats(-2.0, 2.0)))
    steps = draw(float_arrays((draw(st.integers(1, 4)),), elements=floats(0.1, 0.8)))
    t = draw(floats(-1.0, 1.0)) + np.concatenate([[0.0], np.cumsum(steps)])
    return a, y0, t[::-1].copy() if draw(st.booleans()) else t  # backwards in time too


def _vjps(fn: Callable[..., Any], args: tuple[Any, ...], g: np.ndarray) -> tuple[Any, ...]:
    return ng.vjp(fn, *args)[1](g)


# -- linear systems against their closed form -----------------------------------------------------------------


@EXAMPLES
@given(problem=linear_problems(), data=st.data())
def test_odeint_of_a_linear_system_matches_its_closed_form(problem: Any, data: st.DataObject) -> None:
    a, y0, t = problem
    solved = lambda a, y0, t: odeint(linear, y0, t, args=(a,), **TOL)
    expected = closed_form(a, y0, t)
    # The solver's error in a component near 0 is set by the solution's size, not its own.
    np.testing.assert_allclose(solved(a, y0, t), expected, rtol=1e-8, atol=1e-9 * max(1.0, np.abs(expected).max()))
    g = data.draw(float_arrays((len(t), len(y0))))
    for got, expected in zip(_vjps(solved, (a, y0, t), g), _vjps(closed_form, (a, y0, t), g), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "LSODA"])
@settings(max_examples=5, deadline=None)
@given(problem=linear_problems(), data=st.data())
def test_solve_ivp_of_a_linear_system_matches_its_closed_form(method: str, problem: Any, data: st.DataObject) -> None:
    a, y0, t = problem

    def solved(a: Any, y0: Any, t: Any) -> Any:
        # the answer at t[1:], from t[0]: the closed form's rows 1 onwards
        fun = lambda s, y, a: a @ y
        return solve_ivp(fun, (t[0], t[-1]), y0, method=method, t_eval=t[1:], args=(a,), **TOL).y.T

    closed = lambda a, y0, t: closed_form(a, y0, t)[1:]
    if len(t) == 1:
        return
    np.testing.assert_allclose(solved(a, y0, t), closed(a, y0, t), rtol=1e-7, atol=1e-8)
    g = data.draw(float_arrays((len(t) - 1, len(y0))))
    for got, expected in zip(_vjps(solved, (a, y0, t), g), _vjps(closed, (a, y0, t), g), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_the_values_are_scipys_own() -> None:
    a, y0, t = np.array([[-0.5, 1.0], [-1.0, -0.2]]), np.array([1.0, 0.0]), np.linspace(0.0, 2.0, 5)
    traced = ng.vjp(lambda a: odeint(linear, y0, t, args=(a,), rtol=1e-6, atol=1e-8), a)[0]
    np.testing.assert_array_equal(traced, scipy.integrate.odeint(linear, y0, t, args=(a,), rtol=1e-6, atol=1e-8))
    result = ng.vjp(lambda y0: solve_ivp(lambda s, y: a @ y, (0.0, 3.0), y0, t_eval=t).y, y0)[0]
    np.testing.assert_array_equal(result, scipy.integrate.solve_ivp(lambda s, y: a @ y, (0.0, 3.0), y0, t_eval=t).y)


# -- nonlinear systems against central differences --------------------------------------------------------


def lotka_volterra(y: Any, t: Any, p: dict[str, Any]) -> Any:
    prey, predators = y[0], y[1]
    return np.stack([p["a"] * prey - p["b"] * prey * predators, p["c"] * prey * predators - p["d"] * predators])


@settings(max_examples=5, deadline=None)  # an adjoint solve per example, at tight tolerances
@given(data=st.data())
def test_lotka_volterra_gradients_in_every_argument(data: st.DataObject) -> None:
    y0 = data.draw(float_arrays((2,), elements=floats(0.5, 2.0)))
    t = np.concatenate([[0.0], np.cumsum(data.draw(float_arrays((3,), elements=floats(0.2, 1.0))))])
    params = {"a": data.draw(floats(0.5, 1.5)), "b": 0.4, "c": np.array(0.3), "d": 0.8, "label": "lv"}
    check_grads(lambda y0, t, p: odeint(lotka_volterra, y0, t, args=(p,), **TOL), y0, t, params, **NUMERIC)


@attrs.frozen
class Pendulum:
    damping: float
    length: np.ndarray
    gravity: float = ng.field(static=True, default=9.81)


def pendulum(t: Any, y: Any, p: Pendulum) -> Any:  # tfirst, as solve_ivp
    return np.stack([y[1], -p.gravity / p.length * np.sin(y[0]) - p.damping * y[1]])


def test_a_damped_pendulum_with_tfirst_and_a_record_of_parameters() -> None:
    p, y0, t = Pendulum(0.3, np.array(1.5)), np.array([1.0, 0.0]), np.array([0.0, 0.4, 1.1, 2.0])
    check_grads(lambda y0, t, p: odeint(pendulum, y0, t, args=(p,), tfirst=True, **TOL), y0, t, p, **NUMERIC)
    t_eval = t[1:]
    check_grads(
        lambda y0, t, p: solve_ivp(pendulum, (0.0, 2.5), y0, t_eval=t, args=(p,), **TOL).y, y0, t_eval, p, **NUMERIC
    )
    grads = ng.grad(lambda p: odeint(pendulum, y0, t, args=(p,), tfirst=True, **TOL)[-1, 0])(p)
    assert isinstance(grads, Pendulum) and isinstance(grads.damping, float) and grads.gravity is None


def forced(y: Any, t: Any, k: Any) -> Any:
    return -k * y + np.sin(3.0 * t) * y[::-1]


def test_times_of_a_time_dependent_system_including_the_first() -> None:
    # d/dt_0 is -a(t_0) . f(y_0, t_0), not minus the sum of the other times' cotangents
    y0, t = np.array([1.0, -0.5]), np.array([0.2, 0.7, 1.5])
    check_grads(lambda t: odeint(forced, y0, t, args=(0.8,), **TOL), t, **NUMERIC)
    check_grads(
        lambda t0, te: solve_ivp(lambda s, y: forced(y, s, 0.8), (t0, 2.0), y0, t_eval=te, **TOL).y,
        0.2,
        t[1:],
        **NUMERIC,
    )


def test_a_repeated_time_is_a_segment_of_length_zero() -> None:
    y0, g = np.array([1.0, -0.5]), np.array([[0.5, 1.0], [-1.0, 0.25], [2.0, 0.0], [1.0, 1.0]])
    once = ng.vjp(lambda y0, t: odeint(forced, y0, t, args=(0.8,), **TOL), y0, np.array([0.2, 0.7, 1.5]))[1]
    twice = ng.vjp(lambda y0, t: odeint(forced, y0, t, args=(0.8,), **TOL), y0, np.array([0.2, 0.7, 0.7, 1.5]))[1]
    g_once = np.stack([g[0], g[1] + g[2], g[3]])  # the two rows at 0.7 are one output twice
    (y0_once, t_once), (y0_twice, t_twice) = once(g_once), twice(g)
    np.testing.assert_allclose(y0_twice, y0_once, rtol=1e-12)
    np.testing.assert_allclose([t_twice[0], t_twice[1] + t_twice[2], t_twice[3]], t_once, rtol=1e-12)


def test_one_time_point_is_the_initial_state() -> None:
    ys, back = ng.vjp(lambda y0, t: odeint(forced, y0, t, args=(0.8,)), np.array([1.0, 2.0]), np.array([0.5]))
    np.testing.assert_array_equal(ys, [[1.0, 2.0]])
    g_y0, g_t = back(np.array([[3.0, 4.0]]))
    np.testing.assert_array_equal(g_y0, [3.0, 4.0])
    np.testing.assert_array_equal(g_t, [0.0])


def test_a_scalar_initial_state_and_a_float_parameter() -> None:
    decay = lambda y, t, k: -k * y
    value, grad = ng.value_and_grad(
        lambda y0, k: odeint(decay, y0, [0.0, 2.0], args=(k,), **TOL)[-1, 0], argnums=(0, 1)
    )(3.0, 0.25)
    np.testing.assert_allclose(value, 3.0 * np.exp(-0.5), rtol=1e-8)
    np.testing.assert_allclose(grad, (np.exp(-0.5), -2.0 * 3.0 * np.exp(-0.5)), rtol=1e-7)
    assert isinstance(grad[0], float) and isinstance(grad[1], float)


# -- higher order, forward mode --------------------------------------------------------------------------


def test_second_derivatives_of_a_decay_match_the_closed_form() -> None:
    # F = y0 exp(-k (t1 - t0)): every second derivative in (k, y0, t) at once
    decay = lambda y, t, k: -k * y
    k, y0, t = 0.7, np.array([2.0]), np.array([0.0, 1.5])
    hessian = ng.hessian(lambda k, y0, t: odeint(decay, y0, t, args=(k,), **TOL)[-1, 0], argnums=(0, 1, 2))(k, y0, t)
    e, tau = np.exp(-k * 1.5), 1.5
    np.testing.assert_allclose(hessian[0][0], tau**2 * 2.0 * e, rtol=1e-7)
    np.testing.assert_allclose(hessian[0][1], [-tau * e], rtol=1e-7)
    np.testing.assert_allclose(hessian[0][2], [2.0 * e * (1 - k * tau), -2.0 * e * (1 - k * tau)], rtol=1e-6)
    np.testing.assert_allclose(hessian[2][2], 2.0 * k * k * e * np.array([[1.0, -1.0], [-1.0, 1.0]]), rtol=1e-6)
    np.testing.assert_allclose(hessian[1][1], [[0.0]], atol=1e-12)


def test_second_derivatives_of_a_nonlinear_system() -> None:
    y0, t = np.array([1.5, 1.0]), np.array([0.0, 0.6, 1.2])
    params = {"a": 1.0, "b": 0.4, "c": 0.3, "d": 0.8}
    fn = lambda y0, p: odeint(lotka_volterra, y0, t, args=(p,), **TOL)
    check_grads(fn, y0, params, order=2, modes=("rev",), eps=1e-4, rtol=1e-4, atol=1e-6)
    ivp = lambda y0, p: (
        solve_ivp(lambda s, y, p: lotka_volterra(y, s, p), (0.0, 1.2), y0, t_eval=t[1:], args=(p,), **TOL).y
    )
    check_grads(ivp, y0, params, order=2, modes=("rev",), eps=1e-4, rtol=1e-4, atol=1e-6)


def test_forward_mode() -> None:
    y0, t = np.array([1.5, 1.0]), np.array([0.0, 0.6, 1.2])
    params = {"a": 1.0, "b": 0.4, "c": 0.3, "d": 0.8}
    check_grads(lambda y0, p: odeint(lotka_volterra, y0, t, args=(p,), **TOL), y0, params, modes=("fwd",), **NUMERIC)


# -- the rest of the interface, and what is refused --------------------------------------------------------


def test_full_output_and_the_result_object() -> None:
    with ng.Arena() as arena:
        ys, info = odeint(forced, arena.param(np.array([1.0, 0.5])), [0.0, 1.0], args=(0.8,), full_output=True)
        assert info["message"] == "Integration successful." and ys.shape == (2, 2)
        t_eval = arena.param(np.array([0.5, 1.0]))
        result = solve_ivp(lambda s, y: -y, (0.0, 1.0), np.array([1.0, 0.5]), t_eval=t_eval)
        assert result.success and result.nfev > 0 and result.t is t_eval and result.y.shape == (2, 2)


def test_without_traced_inputs_it_is_scipy() -> None:
    result = solve_ivp(lambda s, y: -y, (0.0, 1.0), [1.0], dense_output=True)
    assert result.sol is not None and result.y.shape[0] == 1
    expected = scipy.integrate.odeint(forced, [1.0, 0.0], [0.0, 1.0], args=(0.8,))
    np.testing.assert_array_equal(odeint(forced, [1.0, 0.0], [0.0, 1.0], args=(0.8,)), expected)


def _minus(*args: Any) -> Any:
    return -args[1]  # dy/dt = -y, for solve_ivp's (t, y, ...) and odeint's (y, t, ...) alike


def _ivp(**options: Any) -> Callable[[Any], Any]:
    return lambda y0: solve_ivp(_minus, (0.0, 1.0), y0, **options)


def _ode(**options: Any) -> Callable[[Any], Any]:
    return lambda y0: odeint(lambda y, t, *args: -y, options.pop("y0", y0), options.pop("t", [0.0, 1.0]), **options)


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (_ivp(), NoGradientError, "solve_ivp: the solver's own steps"),
        (_ivp(t_eval=[1.0], events=lambda s, y: y[0]), NoGradientError, "solve_ivp: events"),
        (_ivp(t_eval=[1.0], dense_output=True), NoGradientError, "solve_ivp: dense_output"),
        (_ivp(t_eval=[1.0], args=0.5), ArgumentError, "solve_ivp: args must be a tuple"),
        (lambda y0: _ivp(t_eval=[1.0])(y0 * 1j), DtypeError, "solve_ivp: gradients of complex"),
        (_ivp(t_eval=[2.0]), ShapeError, "solve_ivp: "),
        (_ode(args=0.5), ArgumentError, "odeint: args must be a tuple"),
        (lambda y0: _ode()(y0.reshape(1, 2)), ShapeError, "odeint: y0 must be one-dimensional"),
        (_ode(t=[[0.0, 1.0]]), ShapeError, "odeint: the times must be a non-empty 1-D"),
        (lambda y0: odeint(lambda y, t: -y * y0[0], np.ones(2), [0.0, 1.0]), ArgumentError, "odeint: func closes over"),
    ],
)
def test_bad_calls_raise_nodegrad_errors_naming_the_function(call: Any, error: type, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        ng.grad(lambda y0: ng.sum(_output(call(y0))))(np.array([1.0, 2.0]))


def _output(result: Any) -> Any:
    return result.y if hasattr(result, "y") else result
