"""Porting gaps found running HIPS autograd code on nodegrad, each compared with autograd's
own answer where it is installed: the gradient of ``np.std`` where one value is reduced,
``np.real_if_close`` of a Python complex, integer casts (``np.int64(x)``) of traced values
with plain numpy too, integer array arguments under every transform, and a call that does
not fit a function's signature."""

from __future__ import annotations

import warnings
from typing import Any

import hypothesis.strategies as st
import numpy
import pytest
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.errors import ArenaError, DtypeError
from tests.strategies import float_arrays

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402  (after the importorskip above)


def close(got: Any, expected: Any) -> None:
    numpy.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_std_and_var_gradients_are_autograds_where_one_value_is_reduced(data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, 3))
    x = data.draw(float_arrays((rows, 1)))  # axis 1 reduces one value; axis 0 (and None) rows
    axis = data.draw(st.sampled_from([None, 0, 1]))
    ddof = data.draw(st.sampled_from([0, 1]))
    for name in ("std", "var"):

        def f(np_: Any, name: str = name) -> Any:
            return lambda x: np_.sum(getattr(np_, name)(x, axis=axis, ddof=ddof) * 1.5)

        with numpy.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Degrees of freedom <= 0"
            ours, theirs = ng.grad(f(np))(x), autograd.grad(f(anp))(x)
            value = getattr(np, name)(x, axis=axis, ddof=ddof)
            expected = getattr(numpy, name)(x, axis=axis, ddof=ddof)
        numpy.testing.assert_array_equal(value, expected)
        # autograd's std has gradient 0 when one value is reduced; its var NaN (0 / 0) at ddof 1,
        # as ours; where each row reduces several values, the two are the same derivative.
        numpy.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14, equal_nan=True)


def test_std_of_one_value_has_gradient_zero_in_every_mode() -> None:
    one = numpy.array([2.0])
    assert ng.grad(np.std)(one).tolist() == [0.0]
    assert ng.grad(lambda x: x.std(ddof=1))(one).tolist() == [0.0]
    assert ng.hessian(np.std)(one).tolist() == [[0.0]]
    assert ng.jvp(np.std, (one,), (numpy.ones(1),))[1] == 0.0
    close(ng.vmap(np.std)(numpy.array([[2.0], [3.0]])), [0.0, 0.0])
    close(ng.grad(lambda x: np.std(x))(numpy.array([1.0, 3.0])), [-0.5, 0.5])  # two values: as before
    assert ng.grad(np.std)(numpy.array([1.0 + 2.0j])).tolist() == [0j]
    assert np.std(numpy.array([2.0], numpy.float32)).dtype == numpy.float32


def test_real_if_close_of_a_python_complex() -> None:
    def f(z: Any, np_: Any) -> Any:
        return np_.abs(np_.real_if_close(z * z))

    for z in (1.5 + 0j, 1.5 + 1e-20j, 1.5 + 1j):
        close(ng.grad(lambda z: f(z, np))(z), autograd.grad(lambda z: f(z, anp))(z))
        close(ng.vjp(np.real_if_close, z)[0], numpy.real_if_close(z))


def test_integer_casts_are_constants_with_plain_numpy_too() -> None:
    x = numpy.array([1.7, -2.3, 3.5])
    for cast in (numpy.int64, numpy.int32, numpy.uint16, numpy.bool_):
        close(ng.elementwise_grad(lambda v, c=cast: c(v) * v)(x), cast(x).astype(float))
        close(ng.grad(lambda v, c=cast: c(v[0]) * v[1])(x), [0.0, float(cast(x[0])), 0.0])
    close(ng.grad(lambda v: numpy.asarray(v, dtype=int) * 1.0 + v)(1.5), 1.0)
    with pytest.raises(ArenaError, match=r"x\.astype\(np\.float64\)"):
        ng.grad(lambda v: numpy.float64(v) * 2.0)(numpy.array([1.5, 2.5]))
    with pytest.raises(ArenaError, match=r"x\.astype\(np\.complex128\)"):
        ng.grad(lambda v: numpy.asarray(v, dtype=complex).real)(1.5)


def test_integer_arrays_are_differentiated_as_floats_by_every_transform() -> None:
    t = numpy.arange(4)

    def survival(t: Any) -> Any:
        return np.exp(-t * 0.5)

    expected = -0.5 * numpy.exp(-t * 0.5)
    close(ng.elementwise_grad(survival)(t), expected)
    close(ng.grad(lambda t: np.sum(survival(t)))(t), expected)
    close(ng.jacobian(survival, mode="fwd")(t), numpy.diag(expected))
    close(ng.jacrev(survival)(t), numpy.diag(expected))
    close(ng.hvp(lambda t: np.sum(survival(t)), t, numpy.ones(4)), 0.25 * numpy.exp(-t * 0.5))
    close(ng.linearize(survival, t)[1](numpy.ones(4)), expected)
    close(ng.grad(lambda t, s: np.sum(t * s), argnums=1)(numpy.ones(4), t), numpy.ones(4))
    out = numpy.zeros(4)
    assert ng.value_and_grad(lambda t: np.sum(survival(t)), out=out)(t)[1] is out
    close(out, expected)
    assert t.dtype.kind == "i"  # the argument itself is left as it was
    with pytest.raises(DtypeError, match=r"3\.0 instead of 3"):  # a number is refused, as autograd does
        ng.grad(lambda t: t * 2.0)(numpy.int64(3))
    with pytest.raises(DtypeError, match="integer array is differentiated as float64, but not inside"):
        ng.jacobian(lambda p: p["t"] * 2.0)({"t": t})


def test_a_call_that_does_not_fit_the_signature_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"sum: sum\(\) got an unexpected keyword argument 'axes'") as info:
        ng.sum(numpy.ones(3), axes=0)
    assert type(info.value) is TypeError
    with pytest.raises(DtypeError):  # a call that fits but cannot work stays the nodegrad error
        ng.sum(numpy.array(["a"]))
