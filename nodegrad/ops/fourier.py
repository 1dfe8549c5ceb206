"""The discrete Fourier transforms of ``numpy.fft``, with exact gradients.

``fft``, ``ifft``, ``rfft`` and ``irfft`` along one axis are ops; ``hfft`` and ``ihfft``
and the 2-D and n-D transforms are built from them as numpy builds them, so their values
are numpy's and their gradients follow. numpy's own functions come here on traced values
(``np.fft.rfft(x)``, ``nodegrad.numpy.fft.rfft(x)``), through the function table.

Each rule is the transpose of its op for the pairing ``<u, v> = Re(sum(u * v))`` (see
:mod:`nodegrad.ops.elementwise.parts`) and is made of these ops again, so it
differentiates too (forward mode, higher orders):

- ``fft`` and ``ifft``: the DFT matrix is symmetric, so the transpose of ``fft(x, n)`` is
  ``fft(g)`` with the same ``norm``, cut or zero-padded back to the length of ``x`` (the
  transpose of padding is cutting, and the other way round); a real ``x`` gets the real part.
- ``rfft``: the first ``n // 2 + 1`` rows of the DFT, of a real ``x``: ``g`` zero-padded to
  ``n``, transformed, and its real part.
- ``irfft``: numpy reads a half spectrum ``h`` as ``y_j = 1/n sum_k c_k Re(h_k e^(2 pi i jk/n))``
  with ``c_k = 1`` at the zero frequency and (``n`` even) the Nyquist frequency, whose
  imaginary parts it ignores, and ``c_k = 2`` elsewhere; the transpose is ``c_k ifft(g)_k``
  (``ihfft`` of the real ``g``), which is real at those two entries: their imaginary parts
  get no gradient, exactly.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.record import record1
from nodegrad.engine.registry import Op, defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import (
    ArgumentError,
    AxisError,
    DtypeError,
    NodegradError,
    ShapeError,
    user_location,
    user_stacklevel,
)
from nodegrad.ops.arguments import axis_index
from nodegrad.ops.batching import along_axis
from nodegrad.ops.elementwise import conj, multiply, real
from nodegrad.ops.index import getitem
from nodegrad.ops.shape import astype, pad

__all__ = [
    "fft",
    "fft2",
    "fftn",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftn",
]

_F = "fourier"
_NORMS = ("backward", "ortho", "forward")
# hfft and ihfft are irfft and rfft of the conjugate with the normalisation the other way round.
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _shape(x: Any) -> tuple[int, ...]:
    return np.shape(unwrap(x))


def _resized(x: Any, length: int, axis: int) -> Any:
    """``x`` cut or zero-padded to ``length`` along ``axis``, as numpy treats the input of a
    transform given ``n``; each is the other's transpose."""
    shape = _shape(x)
    have = shape[axis]
    if have > length:
        return getitem(x, (slice(None),) * axis + (slice(0, length),))
    if have < length:
        widths = [(0, 0)] * len(shape)
        widths[axis] = (0, length - have)
        return pad(x, widths)
    return x


def _cotangent_of(g: Any, x: Any) -> Any:
    """``g`` as the cotangent of ``x``: a real ``x`` takes the real part, and either is cast
    to ``x``'s own dtype (a float16 ``x`` is transformed in complex64)."""
    dtype = np.result_type(unwrap(x))
    if dtype.kind != "c":
        g = real(g)
    return g if np.result_type(unwrap(g)) == dtype else astype(g, dtype)


def _cut_back(g: Any, x: Any, axis: int) -> Any:
    """A transformed cotangent ``g`` as the cotangent of ``x``: cut or zero-padded back to
    its length along ``axis`` (the transpose of what the forward did to ``x``)."""
    return _cotangent_of(_resized(g, _shape(x)[axis], axis), x)


def _fft_rule(g: Any, ans: Any, x: Any, n: int, axis: int, norm: str) -> Any:
    # The DFT matrix is symmetric: the transform is its own transpose. For rfft, fft(g, n)
    # pads the half spectrum g with zeros to n points first, the transpose of keeping half.
    return _cut_back(record1(FFT, g, n, axis, norm), x, axis)


def _ifft_rule(g: Any, ans: Any, x: Any, n: int, axis: int, norm: str) -> Any:
    return _cut_back(record1(IFFT, g, n, axis, norm), x, axis)


def _irfft_rule(g: Any, ans: Any, h: Any, n: int, axis: int, norm: str) -> Any:
    # c_k ifft(g)_k for the first n // 2 + 1 entries. For a real g that is ihfft(g): the
    # conjugate of rfft with the normalisation swapped, whose zero-frequency and Nyquist
    # entries rfft makes real exactly (an ifft would leave rounding in their imaginary parts).
    if np.iscomplexobj(unwrap(g)):
        g = real(g)  # only the real part of a cotangent pairs with a real output
    half = n // 2 + 1
    spectrum = conj(record1(RFFT, g, n, axis, _SWAPPED[norm]))
    weights = np.full(half, 2.0, dtype=np.result_type(unwrap(ans)))
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0  # the Nyquist entry, which stands for itself only
    shape = [1] * len(_shape(h))
    shape[axis] = half
    return _cut_back(multiply(spectrum, weights.reshape(shape)), h, axis)


#: Each transform's axis (its argument 2) moved past the examples' axis.
_ALONG_AXIS = along_axis(2)

FFT = defop(
    "fft",
    lambda x, n, axis, norm: np.fft.fft(x, n, axis, norm),
    _fft_rule,
    family=_F,
    doc="the discrete Fourier transform along one axis, of n points (x cut or zero-padded)",
    batch=_ALONG_AXIS,
)
IFFT = defop(
    "ifft",
    lambda x, n, axis, norm: np.fft.ifft(x, n, axis, norm),
    _ifft_rule,
    family=_F,
    doc="the inverse discrete Fourier transform along one axis, of n points",
    batch=_ALONG_AXIS,
)
RFFT = defop(
    "rfft",
    lambda x, n, axis, norm: np.fft.rfft(x, n, axis, norm),
    _fft_rule,
    family=_F,
    doc="the n // 2 + 1 non-negative frequencies of the transform of real values",
    batch=_ALONG_AXIS,
)
IRFFT = defop(
    "irfft",
    lambda h, n, axis, norm: np.fft.irfft(h, n, axis, norm),
    _irfft_rule,
    family=_F,
    doc="the n real values whose rfft is the half spectrum h (imaginary parts at 0 and n/2 ignored)",
    batch=_ALONG_AXIS,
)


# -- checking numpy's arguments ---------------------------------------------------------------------


def _fail(kind: type[NodegradError], name: str, what: str) -> NodegradError:
    return kind(f"np.fft.{name}: {what} [called at {user_location()}]")


def _int(name: str, what: str, value: Any) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise _fail(ShapeError, name, f"{what} must be an int, got {value!r}") from None


def _axis(name: str, shape: tuple[int, ...], axis: Any) -> int:
    k = _int(name, "axis", axis)
    if not shape:
        raise _fail(AxisError, name, f"axis {k} is out of range for an array of shape {shape}")
    return axis_index(f"np.fft.{name}", k, len(shape), f"an array of shape {shape},")


def _points(name: str, n: Any, default: int) -> int:
    n = default if n is None else _int(name, "n", n)
    if n < 1:
        raise _fail(ShapeError, name, f"invalid number of FFT data points ({n}): the transform needs at least 1")
    return n


def _norm(name: str, norm: Any) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _NORMS:
        raise _fail(ArgumentError, name, f'norm must be "backward", "ortho", "forward" or None, got {norm!r}')
    return norm


def _real_input(name: str, x: Any) -> None:
    if np.iscomplexobj(unwrap(x)):
        what = f"the input must be real, got {np.result_type(unwrap(x))}: take np.real(x) first, or use np.fft.fft"
        raise _fail(DtypeError, name, what)


def _transform(op: Op, name: str, x: Any, n: Any, axis: Any, norm: str, default: Callable[[int], int]) -> Any:
    """``op`` of ``x`` along ``axis``, with numpy's checks; ``default(m)`` is ``n`` for an axis of length m."""
    shape = _shape(x)
    axis = _axis(name, shape, axis)
    return record1(op, x, _points(name, n, default(shape[axis])), axis, norm)


def _same(m: int) -> int:
    return m


def _full_length(m: int) -> int:
    return 2 * (m - 1)


# -- one axis ----------------------------------------------------------------------------------------


@guarded
def fft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The discrete Fourier transform along ``axis``, as ``np.fft.fft``: ``x`` is cut or
    zero-padded to ``n`` points first; ``norm`` is ``"backward"`` (None), ``"ortho"`` or
    ``"forward"``. Real or complex ``x``; a real one gets a real gradient.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: np.real(np.fft.fft(x))[1])(np.zeros(4))
    array([ 1.,  0., -1.,  0.])
    """
    return _transform(FFT, "fft", x, n, axis, _norm("fft", norm), _same)


@guarded
def ifft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The inverse discrete Fourier transform along ``axis``, as ``np.fft.ifft``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: np.real(np.fft.ifft(x, n=2))[0])(np.zeros(3))
    array([0.5, 0.5, 0. ])
    """
    return _transform(IFFT, "ifft", x, n, axis, _norm("ifft", norm), _same)


@guarded
def rfft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The transform of real ``x`` at its ``n // 2 + 1`` non-negative frequencies, as
    ``np.fft.rfft``; complex ``x`` is refused (:class:`~nodegrad.errors.DtypeError`).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> x = np.array([1.0, 2.0, 0.0, -1.0])
    >>> ng.grad(lambda x: np.sum(np.abs(np.fft.rfft(x)) ** 2))(x)  # half a spectrum: not 8 * x
    array([ 6., 10.,  2., -2.])
    """
    _real_input("rfft", x)
    return _transform(RFFT, "rfft", x, n, axis, _norm("rfft", norm), _same)


@guarded
def irfft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The ``n`` real values (``2 * (m - 1)`` for ``m`` given entries by default) whose
    ``rfft`` is the half spectrum ``x``, as ``np.fft.irfft``. numpy ignores the imaginary
    parts of the zero-frequency entry and, for an even ``n``, of the Nyquist entry: they
    get no gradient.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> g = ng.grad(lambda h: np.fft.irfft(h)[1])(np.zeros(3, complex))
    >>> g.real, g.imag == 0  # no gradient to the imaginary parts numpy ignores
    (array([ 0.25,  0.  , -0.25]), array([ True, False,  True]))
    """
    return _transform(IRFFT, "irfft", x, n, axis, _norm("irfft", norm), _full_length)


@guarded
@composite
def hfft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The real transform of a Hermitian-symmetric signal given by its first half, as
    ``np.fft.hfft``: ``irfft`` of the conjugate, with the normalisation swapped.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda h: np.fft.hfft(h)[0])(np.zeros(3, complex))
    array([1.-0.j, 2.-0.j, 1.-0.j])
    """
    swapped = _SWAPPED[_norm("hfft", norm)]
    axis = _axis("hfft", _shape(x), axis)
    n = _points("hfft", n, _full_length(_shape(x)[axis]))
    return _transform(IRFFT, "hfft", conj(x), n, axis, swapped, _full_length)


@guarded
@composite
def ihfft(x: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Any:
    """The inverse of :func:`hfft` for real ``x``, as ``np.fft.ihfft``: the conjugate of
    ``rfft`` with the normalisation swapped.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: np.imag(np.fft.ihfft(x))[1])(np.zeros(4))
    array([ 0.  ,  0.25,  0.  , -0.25])
    """
    _real_input("ihfft", x)
    return conj(_transform(RFFT, "ihfft", x, n, axis, _SWAPPED[_norm("ihfft", norm)], _same))


# -- several axes ------------------------------------------------------------------------------------


_S_WITHOUT_AXES = (
    "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future version of NumPy, "
    "this will raise an error and `s[i]` will correspond to the size along the transformed axis specified by "
    "`axes[i]`. To retain current behaviour, pass a sequence [0, ..., k-1] to `axes` for an array of dimension k."
)
_NONE_IN_S = (
    "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will raise an error in a "
    "future version of NumPy. To use the default behaviour of the corresponding 1-D transform, pass the value "
    "matching the default for its `n` parameter. To use the default behaviour for every axis, the `s` argument "
    "can be omitted."
)


def _sequence(name: str, what: str, value: Any, none_ok: bool) -> list[Any]:
    if not isinstance(value, (tuple, list, np.ndarray)) or np.ndim(value) != 1:
        raise _fail(ShapeError, name, f"{what} must be a sequence of ints, got {value!r}")
    items = value.tolist() if isinstance(value, np.ndarray) else list(value)
    return [None if v is None and none_ok else _int(name, what, v) for v in items]


def _sizes_and_axes(name: str, x: Any, s: Any, axes: Any, inverse_real: bool) -> tuple[list[Any], list[int]]:
    """numpy's reading of ``s`` and ``axes`` (``_cook_nd_args``): the points and the axes
    of each 1-D transform, the axes counted from 0. With ``s`` and no ``axes``, the last
    ``len(s)`` axes (deprecated by numpy, which warns); -1 in ``s`` is the whole axis, None
    the 1-D default (deprecated too)."""
    shape = _shape(x)
    given = None if axes is None else [_axis(name, shape, a) for a in _sequence(name, "axes", axes, False)]
    sizes = None if s is None else _sequence(name, "s", s, True)
    if given is None:
        count = len(shape) if sizes is None else len(sizes)
        if count > len(shape):
            raise _fail(ShapeError, name, f"s has {count} entries, for an array of shape {shape}")
        given = list(range(len(shape) - count, len(shape)))
        if sizes is not None:
            warnings.warn(_S_WITHOUT_AXES, DeprecationWarning, stacklevel=user_stacklevel())
    if sizes is None:
        sizes = [shape[a] for a in given]
        if inverse_real and given:
            sizes[-1] = _full_length(shape[given[-1]])
    elif len(sizes) != len(given):
        raise _fail(ShapeError, name, f"s {s!r} and axes {axes!r} have different lengths")
    if None in sizes:
        warnings.warn(_NONE_IN_S, DeprecationWarning, stacklevel=user_stacklevel())
    return [shape[a] if m == -1 else m for m, a in zip(sizes, given, strict=True)], given


def _last_axis(name: str, axes: list[int]) -> None:
    if not axes:
        raise _fail(ShapeError, name, "needs at least one axis to transform")


@composite
def _each_axis(name: str, op: Op, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    """``op`` along each axis, the last first, as numpy's ``fftn`` and ``ifftn`` do."""
    norm = _norm(name, norm)
    sizes, axes = _sizes_and_axes(name, x, s, axes, False)
    for n, axis in reversed(list(zip(sizes, axes, strict=True))):
        x = _transform(op, name, x, n, axis, norm, _same)
    return x


@guarded
def fftn(x: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
    """The n-dimensional transform over ``axes`` (all by default), of ``s`` points along
    each, as ``np.fft.fftn``: :func:`fft` along each axis.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: np.real(np.fft.fftn(x))[0, 0])(np.zeros((2, 2)))
    array([[1., 1.],
           [1., 1.]])
    """
    return _each_axis("fftn", FFT, x, s, axes, norm)


@guarded
def ifftn(x: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
    """The n-dimensional inverse transform, as ``np.fft.ifftn``: :func:`ifft` along each axis.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: np.real(np.fft.ifftn(x))[0, 0])(np.zeros((2, 2)))
    array([[0.25, 0.25],
           [0.25, 0.25]])
    """
    return _each_axis("ifftn", IFFT, x, s, axes, norm)


@guarded
def fft2(x: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None) -> Any:
    """The transform over the last two axes, as ``np.fft.fft2``: :func:`fftn` with other defaults.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.fft2(np.ones((2, 2))).real
    array([[4., 0.],
           [0., 0.]])
    """
    return _each_axis("fft2", FFT, x, s, axes, norm)


@guarded
def ifft2(x: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None) -> Any:
    """The inverse transform over the last two axes, as ``np.fft.ifft2``.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.ifft2(np.ones((2, 2))).real
    array([[1., 0.],
           [0., 0.]])
    """
    return _each_axis("ifft2", IFFT, x, s, axes, norm)


@composite
def _real_forward(name: str, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    """``rfft`` along the last axis, then ``fft`` along the others, the last first (numpy's ``rfftn``)."""
    _real_input(name, x)
    norm = _norm(name, norm)
    sizes, axes = _sizes_and_axes(name, x, s, axes, False)
    _last_axis(name, axes)
    x = _transform(RFFT, name, x, sizes[-1], axes[-1], norm, _same)
    for n, axis in reversed(list(zip(sizes[:-1], axes[:-1], strict=True))):
        x = _transform(FFT, name, x, n, axis, norm, _same)
    return x


@composite
def _real_inverse(name: str, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    """``ifft`` along all axes but the last, in order, then ``irfft`` along it (numpy's ``irfftn``)."""
    norm = _norm(name, norm)
    sizes, axes = _sizes_and_axes(name, x, s, axes, True)
    _last_axis(name, axes)
    for n, axis in zip(sizes[:-1], axes[:-1], strict=True):
        x = _transform(IFFT, name, x, n, axis, norm, _same)
    return _transform(IRFFT, name, x, sizes[-1], axes[-1], norm, _full_length)


@guarded
def rfftn(x: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
    """The n-dimensional transform of real ``x``, half a spectrum along the last of
    ``axes``, as ``np.fft.rfftn``.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.rfftn(np.ones((2, 4))).shape
    (2, 3)
    """
    return _real_forward("rfftn", x, s, axes, norm)


@guarded
def irfftn(x: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
    """The inverse of :func:`rfftn`, as ``np.fft.irfftn``: real values, ``2 * (m - 1)``
    along the last axis by default.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.irfftn(np.ones((2, 3))).shape
    (2, 4)
    """
    return _real_inverse("irfftn", x, s, axes, norm)


@guarded
def rfft2(x: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None) -> Any:
    """:func:`rfftn` over the last two axes, as ``np.fft.rfft2``.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.rfft2(np.ones((3, 2, 4))).shape
    (3, 2, 3)
    """
    return _real_forward("rfft2", x, s, axes, norm)


@guarded
def irfft2(x: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None) -> Any:
    """:func:`irfftn` over the last two axes, as ``np.fft.irfft2``.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops import fourier
    >>> fourier.irfft2(np.ones((2, 3)), s=(2, 5)).shape
    (2, 5)
    """
    return _real_inverse("irfft2", x, s, axes, norm)
