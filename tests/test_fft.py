"""The Fourier transforms of ``np.fft`` on traced values (:mod:`nodegrad.ops.fourier`).

Values are numpy's own; gradients pass :func:`nodegrad.testing.check_grads` (reverse and
forward mode, second derivatives on some) over shapes, ``n`` shorter, equal to and longer
than the axis, ``s`` and ``axes``, the three normalisations, real and complex inputs, and
float32 / complex64 precision. The gradients also equal those of a second implementation,
a product with the explicit DFT matrix, and closed forms: Parseval for a spectral loss,
the half spectrum of ``rfft`` and the imaginary parts ``irfft`` ignores.
"""

from __future__ import annotations

import re
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.numpy as gnp
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError
from nodegrad.ops import fourier
from nodegrad.testing import check_grads
from tests.strategies import axes, float_arrays, shapes

SOME = settings(max_examples=25, deadline=None)
FEW = settings(max_examples=10, deadline=None)

NORMS = st.sampled_from([None, "backward", "ortho", "forward"])
ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
MANY_AXES = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "irfft2", "irfftn")
REAL_IN = {"rfft", "ihfft", "rfft2", "rfftn"}
HALF_IN = {"irfft", "hfft", "irfft2", "irfftn"}  # the default length of one entry is 0 points


@st.composite
def signals(draw: st.DrawFn, shape: tuple[int, ...], real: bool = False) -> np.ndarray:
    """Real arrays, or (unless ``real``, sometimes) complex ones."""
    x = draw(float_arrays(shape))
    return x if real or draw(st.booleans()) else x + 1j * draw(float_arrays(shape))


def assert_numpy_s(got: Any, expected: np.ndarray) -> None:
    assert np.shape(got) == expected.shape and np.asarray(got).dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-13)


def traced_value(f: Any, x: np.ndarray) -> Any:
    """``f(x)`` with ``x`` traced: the recorded forward value."""
    return ng.vjp(f, x)[0]


# -- values and gradients, one axis and several --------------------------------------------------------


@pytest.mark.parametrize("name", ONE_AXIS)
@SOME
@given(data=st.data())
def test_one_axis_transforms_give_numpy_s_values_and_check_grads(name: str, data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1, max_side=5), label="shape")
    axis = data.draw(axes(len(shape), single=True), label="axis")
    m = shape[axis]
    # n shorter than, equal to and longer than the axis; the default where there is one.
    n = data.draw(st.one_of(st.just(None), st.integers(max(1, m - 2), m + 3)), label="n")
    if n is None and name in HALF_IN and m == 1:
        n = 3
    norm = data.draw(NORMS, label="norm")
    x = data.draw(signals(shape, real=name in REAL_IN), label="x")
    fn = getattr(np.fft, name)

    def f(x: Any) -> Any:
        return fn(x, n, axis, norm)

    assert_numpy_s(traced_value(f, x), fn(x, n, axis, norm))
    check_grads(f, x)


@st.composite
def axes_and_sizes(draw: st.DrawFn, ndim: int, at_least_two: bool) -> tuple[tuple[int, ...], Any]:
    """Axes (any order, sometimes one repeated, as numpy allows) and ``s`` (None, sizes, or
    -1 for "the whole axis")."""
    order = draw(st.permutations(range(-ndim, 0)))
    axes = tuple(order[: draw(st.integers(1, ndim))])
    if draw(st.integers(0, 4)) == 0:
        axes = (*axes, axes[0])  # the same axis transformed twice
    sizes = st.one_of(st.integers(1 if not at_least_two else 2, 6), st.just(-1))
    s = draw(st.one_of(st.none(), st.lists(sizes, min_size=len(axes), max_size=len(axes)).map(tuple)))
    return axes, s


@pytest.mark.parametrize("name", MANY_AXES)
@SOME
@given(data=st.data())
def test_many_axes_transforms_give_numpy_s_values_and_check_grads(name: str, data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1, max_side=4, min_side=2 if name in HALF_IN else 1), label="shape")
    axes, s = data.draw(axes_and_sizes(len(shape), name in HALF_IN), label="axes, s")
    norm = data.draw(NORMS, label="norm")
    x = data.draw(signals(shape, real=name in REAL_IN), label="x")
    fn = getattr(np.fft, name)

    def f(x: Any) -> Any:
        return fn(x, s, axes, norm)

    assert_numpy_s(traced_value(f, x), fn(x, s, axes, norm))
    check_grads(f, x)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_2d_transforms_take_the_last_two_axes_by_default(name: str) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    x = x if name in REAL_IN else x + 0.5j * x[::-1]
    fn = getattr(np.fft, name)
    assert_numpy_s(traced_value(fn, x), fn(x))
    check_grads(fn, x)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "rfftn", "irfftn"])
@FEW
@given(data=st.data())
def test_second_derivatives(name: str, data: st.DataObject) -> None:
    x = data.draw(signals((2, 4), real=name in REAL_IN), label="x")
    n = data.draw(st.integers(2, 6), label="n")
    norm = data.draw(NORMS, label="norm")
    fn = getattr(np.fft, name)
    sizes = {"s": (3, n), "axes": (0, 1)} if name.endswith("n") else {"n": n}
    # A smooth nonlinear function of the transform, so that its second derivative is not zero.
    check_grads(lambda x: np.sum(np.real(fn(x, norm=norm, **sizes) ** 3)), x, order=2)


@pytest.mark.parametrize("name", ["fft", "ifft", "fft2", "ifftn"])
def test_complex_transforms_are_holomorphic(name: str) -> None:
    rng = np.random.default_rng(2)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    fn = getattr(np.fft, name)
    check_grads(lambda z: fn(z, norm="ortho"), z, holomorphic=True, order=2)
    if name in ONE_AXIS:  # its complex Jacobian is its matrix: the transform of the identity
        jacobian = ng.jacobian(lambda z: fn(z[0], 5), holomorphic=True)(z)[:, 0, :]
        np.testing.assert_allclose(jacobian, fn(np.eye(5), axis=0)[:, :4], atol=1e-12)


SINGLE = [
    (name, dtype) for name in ONE_AXIS for dtype in ("float32", "complex64") if name not in REAL_IN or dtype[0] == "f"
]


@pytest.mark.parametrize(("name", "dtype"), SINGLE)
def test_single_precision_stays_single(name: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6)) + (1j * rng.standard_normal((3, 6)) if dtype == "complex64" else 0)
    x = x.astype(dtype)
    fn = getattr(np.fft, name)
    out, back = ng.vjp(lambda x: fn(x, 5), x)
    expected = fn(x, 5)
    assert out.dtype == expected.dtype and out.dtype.itemsize in (4, 8)  # float32 or complex64
    np.testing.assert_allclose(out, fn(x.astype(np.complex128 if dtype == "complex64" else float), 5), atol=1e-5)
    seed = rng.standard_normal(out.shape).astype(out.dtype)
    (g,) = back(seed)
    assert g.dtype == x.dtype and g.shape == x.shape
    check_grads(lambda x: fn(x, 5), x)


def test_plain_values_give_numpy_s_results() -> None:
    x = np.arange(6)  # integers, not traced: numpy's own result
    assert_numpy_s(fourier.fft(x, 4), np.fft.fft(x, 4))
    assert_numpy_s(fourier.irfftn(np.ones((2, 3))), np.fft.irfftn(np.ones((2, 3))))
    assert_numpy_s(fourier.fftn(x, axes=()), np.fft.fftn(x, axes=()))


def test_the_numpy_namespace_transforms_traced_values() -> None:
    x = np.array([1.0, -2.0, 0.5, 3.0])
    g = ng.grad(lambda x: gnp.sum(gnp.real(gnp.fft.fft(x)) * np.arange(4.0)))(x)
    np.testing.assert_allclose(g, np.real(np.fft.fft(np.arange(4.0))), rtol=1e-12)


# -- a second implementation: the DFT matrix -----------------------------------------------------------


def dft_matrix(n: int, m: int, sign: float, scale: float) -> np.ndarray:
    """The ``n x m`` matrix of the ``n``-point transform of ``m`` entries: those past ``n``
    are cut (zero columns), missing ones are zeros (no columns)."""
    j, k = np.arange(n)[:, None], np.arange(m)[None, :]
    return np.where(k < n, np.exp(sign * 2j * np.pi * j * k / n) * scale, 0)


SCALES = {None: (1.0, "n"), "backward": (1.0, "n"), "ortho": ("sqrt", "sqrt"), "forward": ("n", 1.0)}


def _scale(norm: Any, n: int, inverse: bool) -> float:
    factor = SCALES[norm][1 if inverse else 0]
    return {1.0: 1.0, "n": 1.0 / n, "sqrt": 1.0 / np.sqrt(n)}[factor]


@SOME
@given(
    m=st.integers(1, 6),
    n=st.integers(1, 8),
    norm=NORMS,
    inverse=st.booleans(),
    real=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_fft_gradients_equal_those_of_the_dft_matrix(
    m: int, n: int, norm: Any, inverse: bool, real: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, 2)) + (0 if real else 1j * rng.standard_normal((m, 2)))
    cotangent = rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))
    matrix = dft_matrix(n, m, 1.0 if inverse else -1.0, _scale(norm, n, inverse))
    fn = np.fft.ifft if inverse else np.fft.fft
    out, back = ng.vjp(lambda x: fn(x, n, 0, norm).T, x)
    out_w, back_w = ng.vjp(lambda x: ng.matmul(matrix, x).T, x)
    np.testing.assert_allclose(out, out_w, atol=1e-12)
    np.testing.assert_allclose(back(cotangent)[0], back_w(cotangent)[0], atol=1e-12)


@SOME
@given(m=st.integers(1, 6), n=st.integers(1, 8), norm=NORMS, seed=st.integers(0, 2**32 - 1))
def test_rfft_and_irfft_gradients_equal_those_of_the_dft_matrix(m: int, n: int, norm: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    half = n // 2 + 1
    x = rng.standard_normal(m)
    forward = dft_matrix(n, m, -1.0, _scale(norm, n, False))[:half]
    v = rng.standard_normal(half) + 1j * rng.standard_normal(half)
    np.testing.assert_allclose(
        ng.vjp(lambda x: np.fft.rfft(x, n, norm=norm), x)[1](v)[0],
        ng.vjp(lambda x: ng.matmul(forward, x), x)[1](v)[0],
        atol=1e-12,
    )
    # irfft: y_j = Re(sum_k c_k h_k e^(2 pi i jk/n)) / n, c_k = 2 but at DC and Nyquist (1).
    h = rng.standard_normal(m) + 1j * rng.standard_normal(m)
    weights = np.where((np.arange(half) == 0) | (2 * np.arange(half) == n), 1.0, 2.0)
    inverse = dft_matrix(n, half, 1.0, _scale(norm, n, True)) * weights
    cut = np.eye(half, m)  # numpy reads the first n // 2 + 1 entries, zeros past the m given
    w = rng.standard_normal(n)
    np.testing.assert_allclose(
        ng.vjp(lambda h: np.fft.irfft(h, n, norm=norm), h)[1](w)[0],
        ng.vjp(lambda h: ng.real(ng.matmul(inverse @ cut, h)), h)[1](w)[0],
        atol=1e-12,
    )


# -- closed forms: the half spectrum, the ignored imaginary parts, Parseval ----------------------------------


@SOME
@given(batch=shapes(max_dims=2, max_side=3), n=st.integers(1, 9), data=st.data())
def test_spectral_loss_gradient_is_parseval_s(batch: tuple[int, ...], n: int, data: st.DataObject) -> None:
    x = data.draw(float_arrays((*batch, n)), label="x")

    def full(x: Any) -> Any:
        return np.sum(np.abs(np.fft.fft(x)) ** 2)

    def half(x: Any) -> Any:
        return np.sum(np.abs(np.fft.rfft(x)) ** 2)

    # The whole spectrum: sum |X_k|^2 = n sum x^2, so the gradient is 2 n x.
    np.testing.assert_allclose(ng.grad(full)(x), 2 * n * x, rtol=1e-10, atol=1e-10)
    # Half of it counts each X_k once and its mirror X_(n-k) not at all, but DC and Nyquist
    # have no mirror: sum = (n sum x^2 + X_0^2 + X_(n/2)^2) / 2, gradient n x + X_0 + X_(n/2) (-1)^j.
    dc = np.sum(x, axis=-1, keepdims=True)
    alternating = (-1.0) ** np.arange(n)
    nyquist = np.sum(x * alternating, axis=-1, keepdims=True) * alternating if n % 2 == 0 else 0.0
    np.testing.assert_allclose(ng.grad(half)(x), n * x + dc + nyquist, rtol=1e-10, atol=1e-10)
    # And its Hessian, n I + 1 1^T (+ a a^T with a = (-1)^j for an even n), written as y conj(y):
    # abs has no second derivative at 0.
    hessian = n * np.eye(n) + np.ones((n, n)) + (np.outer(alternating, alternating) if n % 2 == 0 else 0.0)
    smooth = ng.hessian(lambda x: np.sum(np.real(np.fft.rfft(x) * np.conj(np.fft.rfft(x)))))
    np.testing.assert_allclose(smooth(x.reshape(-1, n)[0]), hessian, rtol=1e-10, atol=1e-10)


@SOME
@given(m=st.integers(1, 6), n=st.integers(1, 10), norm=NORMS, seed=st.integers(0, 2**32 - 1))
def test_irfft_ignores_the_imaginary_parts_at_dc_and_nyquist_and_gives_them_no_gradient(
    m: int, n: int, norm: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(m) + 1j * rng.standard_normal(m)
    weights = rng.standard_normal(n)

    def loss(h: Any) -> Any:
        return np.sum(np.fft.irfft(h, n, norm=norm) ** 2 * weights)

    g = ng.grad(loss)(h)
    ignored = [0] + ([n // 2] if n % 2 == 0 and n // 2 < m else [])
    for k in ignored:  # numpy's value does not move with them, nor does the gradient
        moved = h.copy()
        moved[k] += 0.7j
        np.testing.assert_array_equal(np.fft.irfft(moved, n, norm=norm), np.fft.irfft(h, n, norm=norm))
        assert g[k].imag == 0.0
    # Entries past n // 2 are cut: no gradient at all. The others have imaginary parts that count.
    np.testing.assert_array_equal(g[n // 2 + 1 :], 0)
    used = [k for k in range(min(m, n // 2 + 1)) if k not in ignored]
    assert all(g[k].imag != 0 for k in used)
    check_grads(loss, h)


@pytest.mark.parametrize(("norm", "swapped"), [(None, "forward"), ("ortho", "ortho"), ("forward", "backward")])
def test_hfft_and_ihfft_follow_numpy_s_definition_through_irfft_and_rfft(norm: Any, swapped: str) -> None:
    rng = np.random.default_rng(3)
    h = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    x = rng.standard_normal(7)
    assert_numpy_s(traced_value(lambda h: np.fft.hfft(h, 6, norm=norm), h), np.fft.hfft(h, 6, norm=norm))
    gh = ng.vjp(lambda h: np.fft.hfft(h, 6, norm=norm), h)[1](np.arange(6.0))[0]
    gi = ng.vjp(lambda h: np.fft.irfft(np.conj(h), 6, norm=swapped), h)[1](np.arange(6.0))[0]
    np.testing.assert_allclose(gh, gi, rtol=1e-12)
    assert_numpy_s(traced_value(lambda x: np.fft.ihfft(x, norm=norm), x), np.fft.ihfft(x, norm=norm))


# -- numpy's arguments: defaults, deprecations and refusals -------------------------------------------------


def test_s_without_axes_takes_the_last_axes_and_warns_as_numpy_does() -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`") as caught:
        got = traced_value(lambda x: np.fft.fftn(x, s=(5, 2)), x)
    assert caught[0].filename == __file__  # points at the user's line
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        expected = np.fft.fftn(x, s=(5, 2))
    assert_numpy_s(got, expected)
    with pytest.warns(DeprecationWarning, match="containing `None`"):
        got = traced_value(lambda x: np.fft.irfftn(x, s=(None, 5), axes=(0, 2)), x + 0j)
    with pytest.warns(DeprecationWarning, match="containing `None`"):
        assert_numpy_s(got, np.fft.irfftn(x + 0j, s=(None, 5), axes=(0, 2)))


def test_no_axes_is_the_value_itself_as_in_numpy() -> None:
    x = np.array([1.0, 2.0])
    assert_numpy_s(traced_value(lambda x: np.fft.fftn(x, axes=()), x), np.fft.fftn(x, axes=()))
    np.testing.assert_array_equal(ng.grad(lambda x: np.sum(np.fft.fftn(x, axes=()) ** 2))(x), 2 * x)


REAL, COMPLEX = np.ones((2, 4)), np.ones((2, 4)) * (1 - 1j)
BAD = [
    (lambda x: np.fft.fft(x, out=np.empty(4, complex)), REAL, NoGradientError, "np.fft.fft", "out"),
    (lambda x: np.fft.rfft2(x, s=(2, 2), axes=(0,)), REAL, ShapeError, "np.fft.rfft2", "different lengths"),
    (lambda x: np.fft.fft(x, 0), REAL, ShapeError, "np.fft.fft", "(0)"),
    (lambda x: np.fft.ifft(x, axis=3), COMPLEX, ShapeError, "np.fft.ifft", "axis 3"),
    (lambda x: np.fft.irfft(x, norm="unit"), COMPLEX, ArgumentError, "np.fft.irfft", "norm"),
    (lambda x: np.fft.rfft(x), COMPLEX, DtypeError, "np.fft.rfft", "must be real"),
    (lambda x: np.fft.rfftn(x, axes=(0,)), COMPLEX, DtypeError, "np.fft.rfftn", "must be real"),
    (lambda x: np.fft.hfft(x, axis=0, n=-2), COMPLEX, ShapeError, "np.fft.hfft", "(-2)"),
    (lambda x: np.fft.fftn(x, axes=(0, 5)), REAL, ShapeError, "np.fft.fftn", "axis 5"),
    (lambda x: np.fft.fftn(x, s=(2, 3, 4)), REAL, ShapeError, "np.fft.fftn", "3 entries"),
    (lambda x: np.fft.ifftn(x, s=3, axes=(0,)), REAL, ShapeError, "np.fft.ifftn", "sequence"),
    (lambda x: np.fft.irfftn(x, s=(2, 0), axes=(0, 1)), COMPLEX, ShapeError, "np.fft.irfftn", "(0)"),
    (lambda x: np.fft.irfft2(x, axes=()), COMPLEX, ShapeError, "np.fft.irfft2", "at least one axis"),
]


@pytest.mark.parametrize(("call", "value", "error", "name", "fragment"), BAD)
def test_bad_arguments_raise_naming_the_function_and_leave_the_arena_usable(
    call: Any, value: np.ndarray, error: type[Exception], name: str, fragment: str
) -> None:
    with ng.Arena() as arena:
        x = arena.param(value)
        size = len(arena)
        with pytest.raises(error) as info:
            call(x)
        message = str(info.value)
        assert message.startswith(name) and fragment in message, message
        assert re.search(r"test_fft\.py:\d+\]$", message), message
        assert len(arena) == size, "the failed call left nodes in the arena"
        y = np.sum(np.abs(np.fft.rfft(np.real(x))) ** 2)
        np.testing.assert_allclose(arena.backward(y, wrt=x), np.full((2, 4), 8.0))
