"""``nodegrad.scipy.signal.convolve``: scipy's values, gradients against finite differences
(every mode, several dimensions, both orders of size, both modes of differentiation, to
second order), closures, complex values, and autograd's convolve on what both accept."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.signal
from hypothesis import given, settings

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


# -- autograd's axes= and dot_axes= ----------------------------------------------------------------------


@st.composite
def _tensor_convolution(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Two arrays, the axes to convolve and to contract (each input's in a shuffled order,
    with axes kept besides), and a mode that autograd accepts for their sizes."""
    n_conv, n_dot = draw(st.integers(1, 2)), draw(st.integers(0, 1))
    kept_a, kept_b = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    mode = draw(st.sampled_from(["full", "valid", "same"]))
    sizes_a = [draw(st.integers(1, 4)) for _ in range(n_conv)]
    if mode == "valid":  # one at least as large as the other along every convolved axis
        smaller = draw(st.booleans())
        sizes_b = [draw(st.integers(1, s)) if smaller else draw(st.integers(s, 4)) for s in sizes_a]
    else:
        sizes_b = [draw(st.integers(1, 4)) for _ in range(n_conv)]
    dots = [draw(st.integers(1, 3)) for _ in range(n_dot)]
    roles_a = draw(st.permutations(["c"] * n_conv + ["d"] * n_dot + ["k"] * kept_a))
    roles_b = draw(st.permutations(["c"] * n_conv + ["d"] * n_dot + ["k"] * kept_b))

    def layout(roles: list[str], conv_sizes: list[int]) -> tuple[tuple[int, ...], list[int], list[int]]:
        conv, dot, shape, c, d = [], [], [], iter(conv_sizes), iter(dots)
        for axis, role in enumerate(roles):
            conv += [axis] if role == "c" else []
            dot += [axis] if role == "d" else []
            shape.append(next(c) if role == "c" else next(d) if role == "d" else draw(st.integers(1, 3)))
        return tuple(shape), conv, dot

    shape_a, conv_a, dot_a = layout(roles_a, sizes_a)
    shape_b, conv_b, dot_b = layout(roles_b, sizes_b)
    a, b = RNG.normal(size=shape_a), RNG.normal(size=shape_b)
    return a, b, {"axes": (conv_a, conv_b), "dot_axes": (dot_a, dot_b), "mode": mode}


@settings(max_examples=40, deadline=None)
@given(case=_tensor_convolution())
def test_axes_and_dot_axes_are_autograds(case: tuple[np.ndarray, np.ndarray, dict[str, Any]]) -> None:
    a, b, options = case
    out = signal.convolve(a, b, **options)
    asig = pytest.importorskip("autograd.scipy.signal")
    np.testing.assert_allclose(out, asig.convolve(a, b, **options), rtol=1e-12, atol=1e-12)
    check_grads(lambda a, b: signal.convolve(a, b, **options), a, b, order=2, modes=("rev", "fwd"))


def test_autograds_convolutional_layer_and_its_gradients() -> None:
    autograd = pytest.importorskip("autograd")
    asig = pytest.importorskip("autograd.scipy.signal")
    images, filters = RNG.normal(size=(3, 2, 6, 5)), RNG.normal(size=(2, 4, 3, 2))
    layer = {"axes": ([2, 3], [2, 3]), "dot_axes": ([1], [0]), "mode": "valid"}
    out = signal.convolve(images, filters, **layer)
    assert out.shape == (3, 4, 4, 4)
    weights = RNG.normal(size=out.shape)
    ours = ng.grad(lambda i, f: ng.sum(signal.convolve(i, f, **layer) * weights), argnums=(0, 1))(images, filters)
    for k in (0, 1):
        theirs = autograd.grad(lambda i, f: autograd.numpy.sum(asig.convolve(i, f, **layer) * weights), k)(
            images, filters
        )
        np.testing.assert_allclose(ours[k], theirs, rtol=1e-12)


def test_bad_axes_and_keywords() -> None:
    a, b = np.ones((2, 3)), np.ones((2, 2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'") as info:
        signal.convolve(a, b, axis=([1], [1]))
    assert not isinstance(info.value, DtypeError)  # Python's error for a call that does not fit
    with pytest.raises(ArgumentError, match=r"axes= must be a pair"):
        signal.convolve(a, b, axes=[1])
    with pytest.raises(ArgumentError, match=r"axes= names axis 2 of in1, which has 2 dimensions"):
        signal.convolve(a, b, axes=([2], [1]))
    with pytest.raises(ArgumentError, match=r"an axis of in1 is named twice"):
        signal.convolve(a, b, axes=([1], [1]), dot_axes=([1], [0]))
    with pytest.raises(ShapeError, match=r"contracts axis 0 of in1 \(2, 3\) with axis 1 of in2 \(2, 3\)"):
        signal.convolve(a, np.ones((2, 3)), axes=([1], [0]), dot_axes=([0], [1]))
    with pytest.raises(ShapeError, match=r"mode 'valid'.*axes \(0, 1\) and \(0, 1\)"):
        signal.convolve(np.ones((3, 1)), np.ones((1, 3)), axes=([0, 1], [0, 1]), mode="valid")
