"""``import nodegrad.numpy as np``: numpy's whole namespace, with traced list elements too.

Three small programs in the spirit of autograd's examples, written against
``nodegrad.numpy`` alone (an LSTM, a stencil loop with ``np.roll``, a Gaussian-process
marginal likelihood with ``np.linalg``), are differentiated and checked against central
differences.
"""

from __future__ import annotations

import importlib
import pickle
from typing import Any

import hypothesis.strategies as st
import numpy
import pytest
from hypothesis import given

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.errors import ArgumentError, DtypeError, ShapeError
from nodegrad.numpy_api import catalog
from nodegrad.testing import check_grads
from tests.strategies import float_arrays, floats

# -- the namespace ------------------------------------------------------------------------------


def _passes_through(ours: Any, numpys: Any) -> bool:
    """numpy's own object, or numpy's function taking lists of traced values too (a
    function numpy dispatches, wrapped: it runs as numpy's own)."""
    if ours is numpys:
        return True
    wraps_numpys = getattr(ours, "__wrapped__", None) is numpys
    return catalog.is_dispatched(numpys) and not isinstance(numpys, numpy.ufunc) and wraps_numpys


def test_every_public_numpy_name_is_there_and_is_numpys_own_unless_replaced() -> None:
    missing = [name for name in numpy.__all__ if not hasattr(np, name)]
    assert missing == []
    assert set(np.__all__) == set(numpy.__all__)
    replaced = sorted(name for name in numpy.__all__ if not _passes_through(getattr(np, name), getattr(numpy, name)))
    assert replaced == sorted(np.REPLACED | np.SUBMODULES.keys())
    assert set(numpy.__all__) >= np.REPLACED  # every replacement stands for a numpy name
    assert np.exp is numpy.exp and np.sum is not numpy.sum  # ufuncs stay numpy's objects


@pytest.mark.parametrize("name", ["linalg", "fft", "random"])
def test_the_submodules_import_and_pass_numpys_names_through(name: str) -> None:
    module = importlib.import_module(f"nodegrad.numpy.{name}")
    original = getattr(numpy, name)
    assert getattr(np, name) is module
    assert set(module.__all__) == set(original.__all__)
    assert all(_passes_through(getattr(module, n), getattr(original, n)) for n in original.__all__)


@pytest.mark.parametrize("name", ["sum", "linalg.norm", "fft.fft", "concatenate"])
def test_a_wrapped_function_keeps_numpys_name_and_docs_and_pickles_by_name(name: str) -> None:
    ours, numpys = np, numpy
    for part in name.split("."):
        ours, numpys = getattr(ours, part), getattr(numpys, part)
    assert ours.__name__ == numpys.__name__ and ours.__doc__ == numpys.__doc__
    assert pickle.loads(pickle.dumps(ours)) is ours


def test_constants_dtypes_and_index_tricks_pass_through() -> None:
    assert np.pi == numpy.pi and np.float32 is numpy.float32 and np.newaxis is None
    assert numpy.array_equal(np.r_[1:4, 7], numpy.r_[1:4, 7])
    assert np.s_[1:2] == slice(1, 2)


nested_numbers = st.recursive(
    st.one_of(floats(-10.0, 10.0), st.integers(-5, 5)),
    lambda inner: st.lists(inner, min_size=1, max_size=3),
    max_leaves=8,
).filter(lambda obj: _regular(obj))


def _regular(obj: Any) -> bool:
    try:
        numpy.array(obj)
    except ValueError:
        return False
    return True


@given(nested_numbers, st.sampled_from([None, numpy.float32, numpy.float64, numpy.int64]), st.integers(0, 3))
def test_array_of_plain_values_is_numpys_to_the_letter(obj: Any, dtype: Any, ndmin: int) -> None:
    for build in (np.array, np.asarray, np.asanyarray):
        got = build(obj, dtype=dtype, ndmin=ndmin) if build is np.array else build(obj, dtype=dtype)
        want = numpy.array(obj, dtype=dtype, ndmin=ndmin) if build is np.array else numpy.asarray(obj, dtype=dtype)
        assert type(got) is type(want) and got.dtype == want.dtype
        numpy.testing.assert_array_equal(got, want)


# -- traced elements ----------------------------------------------------------------------------


@given(float_arrays((3,), elements=floats(-2.0, 2.0)), st.integers(0, 2))
def test_array_of_traced_scalars_and_arrays_differentiates(x: numpy.ndarray, ndmin: int) -> None:
    def f(x: Any) -> Any:
        rows = np.array([[x[0], x[1] * x[2], 3.0], [np.sin(x[1]), 1, x[2] ** 2.0]], ndmin=ndmin)
        stacked = np.array((x, x * 2.0))
        return np.sum(rows**2.0) + np.sum(np.tanh(stacked))

    check_grads(f, x, order=2)
    with ng.Arena() as arena:
        value = f(arena.param(x))
    numpy.testing.assert_allclose(value.value, f(x))


def test_array_keeps_numpys_dtype_rules_for_traced_elements() -> None:
    with ng.Arena() as arena:
        x32 = arena.param(numpy.float32(1.5) * numpy.ones(2, numpy.float32))
        assert np.array([x32[0], 2.0]).dtype == numpy.float32  # a Python float is weak
        assert np.array([x32[0], numpy.float64(2.0)]).dtype == numpy.float64
        assert np.array([x32[0], 2.0], dtype=numpy.float64).dtype == numpy.float64
        cast = np.array([x32[0], 2.5], dtype=numpy.int64)
        assert type(cast) is numpy.ndarray and cast.tolist() == [1, 2]  # integers: plain data


def test_a_ragged_list_of_traced_values_is_a_shape_error_naming_np_array() -> None:
    with ng.Arena() as arena:
        x = arena.param(numpy.ones(2))
        with pytest.raises(ShapeError, match=r"np\.array: .*different shapes"):
            np.array([x, 1.0])
    assert len(arena) == 1  # nothing recorded


def test_strings_beside_traced_values_are_a_dtype_error_naming_the_entry() -> None:
    # numpy would make a string array (np.array([2.0, "abc"])), which carries no gradient.
    for obj, entry in (
        (lambda t: [t, "abc"], r"entry \[1\] is 'abc' \(dtype <U3\)"),
        (lambda t: [[t, 1.0], [2.0, "f8"]], r"entry \[1\]\[1\] is 'f8'"),  # not read as a dtype's name
        (lambda t: (t, None), r"entry \[1\] is None \(dtype object\)"),
    ):
        with pytest.raises(DtypeError, match=r"np\.array: " + entry + ".*numbers only"):
            ng.grad(lambda t, obj=obj: np.sum(np.array(obj(t))))(3.0)
    w = numpy.array([1.0, 2.0])  # closed over, at the outer level of a nested transform
    with pytest.raises(DtypeError, match=r"entry \[1\] is 'w'"):
        ng.grad(lambda s: ng.grad(lambda t: np.sum(np.array([t * s, "w"])))(1.0))(2.0)
    assert ng.grad(lambda t: np.sum(np.array([t, 1, True, numpy.float32(2.0)]) * w[0]))(3.0) == 1.0


@pytest.mark.parametrize("build", [lambda t: numpy.array([t, 2.0 * t]), lambda t: numpy.full(3, t)])
def test_plain_numpys_constructors_of_traced_values_name_the_nodegrad_numpy_import(build: Any) -> None:
    with pytest.raises(ng.errors.ArenaError, match=r"import nodegrad\.numpy as np instead of import numpy as np"):
        ng.grad(lambda t: numpy.sum(build(t)))(1.0)
    with pytest.raises(ng.errors.ArenaError, match=r"import nodegrad\.numpy as np"):  # closed over
        ng.grad(lambda s: ng.grad(lambda t: numpy.sum(build(s)) * t)(1.0))(1.0)


@given(float_arrays((2,), elements=floats(-2.0, 2.0)))
def test_full_and_full_like_with_a_traced_fill_value(fill: numpy.ndarray) -> None:
    check_grads(lambda s: np.sum(np.full((3, 2), s) ** 2.0), fill)
    check_grads(lambda s: np.sum(np.full((4,), s[0] * s[1]) * numpy.arange(4.0)), fill)
    check_grads(lambda s: np.sum(np.full_like(numpy.zeros((2, 2)), s) ** 3.0), fill)
    # Through plain numpy with a traced template: the fill value's gradient is kept.
    check_grads(lambda s: numpy.sum(numpy.full_like(s, s[0] * 2.0) * s), fill)
    assert np.full((2,), 1.5).tolist() == [1.5, 1.5]
    with ng.Arena() as arena:  # a plain fill value: plain data, for any template
        template = arena.param(fill)
        for full_like in (np.full_like, numpy.full_like):
            plain = full_like(template, 2.5)
            assert type(plain) is numpy.ndarray and plain.tolist() == [2.5, 2.5]


# -- three programs, one changed import line each --------------------------------------------------


def lstm_loss(params: dict[str, Any], inputs: Any, targets: Any) -> Any:
    """A one-layer LSTM over a short sequence, predicting the next value."""
    sigmoid = lambda z: 0.5 * (np.tanh(0.5 * z) + 1.0)
    hidden = np.zeros(params["w_out"].shape[0])
    cell = np.zeros(params["w_out"].shape[0])
    loss = 0.0
    for t in range(inputs.shape[0]):
        z = np.dot(params["w"], np.concatenate([np.array([inputs[t], 1.0]), hidden]))
        i, f, o, g = np.split(z, 4)
        cell = sigmoid(f) * cell + sigmoid(i) * np.tanh(g)
        hidden = sigmoid(o) * np.tanh(cell)
        loss = loss + (np.dot(params["w_out"], hidden) - targets[t]) ** 2
    return loss / inputs.shape[0]


def stencil_loss(density: Any, steps: int = 4) -> Any:
    """A diffusion-advection loop on a periodic grid, written with np.roll."""
    for _ in range(steps):
        laplacian = np.roll(density, 1, axis=0) + np.roll(density, -1, axis=0)
        laplacian = laplacian + np.roll(density, 1, axis=1) + np.roll(density, -1, axis=1) - 4.0 * density
        density = density + 0.1 * laplacian - 0.05 * (np.roll(density, 1, axis=1) - density)
    target = np.full(density.shape, 0.5)
    return np.mean((density - target) ** 2)


def gp_log_marginal_likelihood(log_params: Any, x: Any, y: Any) -> Any:
    """The log marginal likelihood of a Gaussian process with a squared-exponential kernel."""
    amplitude, length, noise = np.exp(log_params[0]), np.exp(log_params[1]), np.exp(log_params[2])
    sqdist = (x[:, None] - x[None, :]) ** 2
    kernel = amplitude * np.exp(-0.5 * sqdist / length**2) + (noise + 1e-6) * np.eye(x.shape[0])
    chol = np.linalg.cholesky(kernel)
    alpha = np.linalg.solve(kernel, y)
    return -0.5 * np.dot(y, alpha) - np.sum(np.log(np.diag(chol))) - 0.5 * x.shape[0] * np.log(2 * np.pi)


def test_an_lstm_ported_with_one_import_line() -> None:
    rng = numpy.random.default_rng(0)
    params = {"w": 0.5 * rng.standard_normal((12, 5)), "w_out": 0.5 * rng.standard_normal(3)}
    inputs = numpy.sin(numpy.linspace(0.0, 3.0, 6))
    targets = numpy.roll(inputs, -1)
    g = ng.grad(lstm_loss)(params, inputs, targets)
    assert set(g) == {"w", "w_out"} and g["w"].shape == (12, 5)
    check_grads(lambda p: lstm_loss(p, inputs, targets), params)


def test_a_stencil_loop_ported_with_one_import_line() -> None:
    density = numpy.random.default_rng(1).uniform(0.0, 1.0, (5, 6))
    check_grads(stencil_loss, density)
    assert ng.grad(stencil_loss)(density).shape == (5, 6)


def test_a_gaussian_process_likelihood_ported_with_one_import_line() -> None:
    rng = numpy.random.default_rng(2)
    x = numpy.sort(rng.uniform(-2.0, 2.0, 7))
    y = numpy.sin(2 * x) + 0.1 * rng.standard_normal(7)
    log_params = numpy.array([0.1, -0.3, -2.0])
    check_grads(lambda p: gp_log_marginal_likelihood(p, x, y), log_params)
    # Hyperparameters built inside with np.array of traced scalars, as autograd programs do.
    packed = lambda a, b: gp_log_marginal_likelihood(np.array([a, b, -2.0]), x, y)
    check_grads(packed, 0.1, -0.3)


def test_require_and_asarray_chkfinite_keep_the_gradient_and_numpy_s_checks() -> None:
    x0 = numpy.array([0.5, -1.5])
    for call in (
        lambda x: np.require(x, requirements=["C", "OWNDATA"]),
        lambda x: np.require([x, x * 2.0], None, "FAE"),
        lambda x: np.asarray_chkfinite(x),
        lambda x: np.asarray_chkfinite((x[0], 3.0)),
    ):
        out, _ = ng.vjp(call, x0)
        numpy.testing.assert_array_equal(out, call(x0))
        check_grads(call, x0, order=2)
    for call in (lambda x: np.require(x, numpy.float32), lambda x: np.asarray_chkfinite([x], dtype=numpy.float32)):
        out, _ = ng.vjp(call, x0)
        assert out.dtype == call(x0).dtype == numpy.float32
        numpy.testing.assert_array_equal(out, call(x0))
    with pytest.raises(ShapeError, match=r"np\.asarray_chkfinite: array must not contain infs or NaNs") as info:
        ng.grad(lambda x: np.sum(np.asarray_chkfinite(x)))(numpy.array([1.0, numpy.inf]))
    assert isinstance(info.value, ValueError)  # numpy's contract
    with pytest.raises(ArgumentError, match=r"np\.require: a writeable array"):
        ng.grad(lambda x: np.sum(np.require(x, requirements="W")))(x0)
    with pytest.raises(ArgumentError, match=r'np\.require: Cannot specify both "C" and "F" order'):
        ng.grad(lambda x: np.sum(np.require(x, requirements="CF")))(x0)
    with pytest.raises(ArgumentError, match=r"np\.require: unknown requirement 'Q'"):
        ng.grad(lambda x: np.sum(np.require(x, requirements="Q")))(x0)
