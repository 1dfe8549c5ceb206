"""``nodegrad.scipy.signal.convolve``: scipy's values, gradients against finite differences
(every mode, several dimensions, both orders of size, both modes of differentiation, to
second order), closures, complex values, and autograd's convolve on what both accept."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.signal

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, ShapeError
from nodegrad.testing import check_grads

signal = pytest.importorskip("nodegrad.scipy.signal")

RNG = np.random.default_rng(7)
SHAPES = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)), ((3, 4, 2), (2, 2, 2))]


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize(("shape1", "shape2"), SHAPES)
def test_values_are_scipys_and_gradients_are_checked(
    mode: str, shape1: tuple[int, ...], shape2: tuple[int, ...]
) -> None:
    a, b = RNG.normal(size=shape1), RNG.normal(size=shape2)
    np.testing.assert_allclose(signal.convolve(a, b, mode), scipy.signal.convolve(a, b, mode), rtol=1e-13)
    out, _ = ng.vjp(lambda a, b: signal.convolve(a, b, mode), a, b)
    np.testing.assert_allclose(out, scipy.signal.convolve(a, b, mode), rtol=1e-13)
    check_grads(lambda a, b: signal.convolve(a, b, mode), a, b, order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_the_method_reaches_scipy(method: str) -> None:
    a, b = RNG.normal(size=(6, 5)), RNG.normal(size=(3, 3))
    np.testing.assert_allclose(signal.convolve(a, b, "same", method), scipy.signal.convolve(a, b, "same", method))
    check_grads(lambda a, b: signal.convolve(a, b, "same", method), a, b)


def test_a_gradient_by_hand() -> None:
    # d/dk of sum(valid(a * k)**2) = 2 * out * flip(a), for a single valid output
    a = np.array([1.0, 2.0, 3.0])
    grad = ng.grad(lambda k: ng.sum(signal.convolve(a, k, "valid") ** 2))(np.ones(3))
    np.testing.assert_array_equal(grad, 2 * 6.0 * a[::-1])


def test_closures_and_one_constant_input() -> None:
    a0, b = RNG.normal(size=(7,)), RNG.normal(size=(3,))

    def f(a: Any) -> Any:
        inner = ng.grad(lambda s: ng.sum(signal.convolve(a * s, b, "same") ** 2))(1.5)
        return inner * ng.sum(a) + ng.sum(ng.sin(signal.convolve(b, a)))

    check_grads(f, a0, order=2, modes=("rev", "fwd"))
    grad = ng.grad(lambda a: ng.sum(signal.convolve(a, b) * np.arange(9.0)))(a0)
    np.testing.assert_allclose(grad, np.correlate(np.arange(9.0), b, "valid"), rtol=1e-13)


def test_complex_values() -> None:
    a = RNG.normal(size=(4, 3)) + 1j * RNG.normal(size=(4, 3))
    b = RNG.normal(size=(2, 2)) + 1j * RNG.normal(size=(2, 2))
    np.testing.assert_allclose(signal.convolve(a, b, "same"), scipy.signal.convolve(a, b, "same"), rtol=1e-13)
    check_grads(lambda a, b: signal.convolve(a, b, "same"), a, b, order=2, holomorphic=True)
    check_grads(lambda a, b: ng.sum(ng.abs(signal.convolve(a, b)) ** 2), a, b)


def test_scalars_and_empty_arrays_as_scipy_has_them() -> None:
    assert signal.convolve(np.array(2.0), np.array(3.0)) == scipy.signal.convolve(np.array(2.0), np.array(3.0))
    assert ng.grad(lambda x: signal.convolve(x, np.array(3.0)))(np.array(2.0)) == 3.0
    with pytest.raises(ValueError, match="empty"):
        scipy.signal.convolve(np.zeros(0), np.ones(3))
    with pytest.raises(ShapeError, match=r"convolve: .*empty"):  # a ValueError too, naming the function
        signal.convolve(np.zeros(0), np.ones(3))


def test_bad_calls_name_the_function_and_the_shapes() -> None:
    with pytest.raises(ShapeError, match=r"convolve: in1 \(3,\) and in2 \(2, 2\) must have the same number"):
        signal.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ShapeError, match=r"mode 'valid', one of in1 \(3, 1\) and in2 \(1, 3\)"):
        signal.convolve(np.ones((3, 1)), np.ones((1, 3)), "valid")
    with pytest.raises(ArgumentError, match=r"mode must be one of .*'circular'"):
        signal.convolve(np.ones(3), np.ones(3), "circular")
    with pytest.raises(ArgumentError, match=r"method must be one of"):
        signal.convolve(np.ones(3), np.ones(3), method="slow")
    with pytest.raises(DtypeError, match=r"in2 must be numeric"):
        signal.convolve(np.ones(3), np.array(["a", "b"]))


def test_autograds_convolve_gives_the_same_numbers() -> None:
    autograd = pytest.importorskip("autograd")
    asig = pytest.importorskip("autograd.scipy.signal")
    a, b = RNG.normal(size=(5, 4)), RNG.normal(size=(3, 2))
    for mode in ("full", "valid", "same"):
        weights = RNG.normal(size=scipy.signal.convolve(a, b, mode).shape)
        ours = ng.grad(lambda a, b, m=mode, w=weights: ng.sum(signal.convolve(a, b, m) * w), argnums=(0, 1))(a, b)
        theirs = (
            autograd.grad(
                lambda a, b, m=mode, w=weights: autograd.numpy.sum(asig.convolve(a, b, mode=m) * w), argnum=0
            )(a, b),
            autograd.grad(
                lambda a, b, m=mode, w=weights: autograd.numpy.sum(asig.convolve(a, b, mode=m) * w), argnum=1
            )(a, b),
        )
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, err_msg=mode)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, err_msg=mode)
