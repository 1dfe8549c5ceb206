"""Specs for the fourier family: fft, ifft, rfft and irfft; the composites hfft, ihfft,
rfftn and irfftn; complex operands for fft, ifft, irfft and hfft (``COMPLEX``).

The generic checks want real outputs (float32 in, float32 out), so a complex result is
checked as its real and imaginary parts stacked; a complex input is drawn as two real
operands, ``re + 1j * im``, so that each part is differentiated (and cast to float32).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError
from nodegrad.ops import fourier
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask
from tests.strategies import axes, float_arrays, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]

NORMS = st.sampled_from([None, "backward", "ortho", "forward"])


def _parts(y: Any) -> Any:
    """A complex result as real values: its real and imaginary parts, stacked."""
    return ng.stack([ng.real(y), ng.imag(y)])


def _np_parts(y: np.ndarray) -> np.ndarray:
    return np.stack([y.real, y.imag])


@st.composite
def _operands(draw: st.DrawFn, shape: tuple[int, ...], complex_ok: bool) -> tuple[tuple[Any, ...], bool]:
    """One real operand, or (when ``complex_ok``, sometimes) the real and imaginary parts of a complex one."""
    if complex_ok and draw(st.booleans()):
        return (draw(float_arrays(shape)), draw(float_arrays(shape))), True
    return (draw(float_arrays(shape)),), False


def _joined(values: tuple[Any, ...]) -> Any:
    return values[0] + 1j * values[1] if len(values) == 2 else values[0]


@st.composite
def _one_axis_cases(
    draw: st.DrawFn,
    name: str,
    complex_in: bool,
    complex_out: bool,
    default: Callable[[int], int] = lambda m: m,
    as_is: bool = False,
) -> Case:
    shape = draw(shapes(min_dims=1, max_side=5))
    axis = draw(axes(len(shape), single=True))
    n = draw(st.one_of(st.none(), st.integers(1, 7)))
    if n is None and default(shape[axis]) < 1:
        n = draw(st.integers(1, 7))  # irfft of one entry: no default length
    norm = draw(NORMS)
    values, is_complex = draw(_operands(shape, complex_in and not as_is))
    ours, theirs = getattr(fourier, name), getattr(np.fft, name)
    out, np_out = (_parts, _np_parts) if complex_out and not as_is else ((lambda y: y), (lambda y: y))

    def fn(*values: Any) -> Any:
        return out(ours(_joined(values), n, axis, norm))

    def ref(*values: Any) -> Any:
        return np_out(theirs(_joined(values), n, axis, norm))

    kind = "complex" if is_complex else "real"
    desc = f"{name}({kind} {shape}, n={n}, axis={axis}, norm={norm})"
    return Case(fn, ref, values, draw(diff_mask(len(values))), desc=desc)


@st.composite
def _many_axes_cases(draw: st.DrawFn, name: str, complex_in: bool, complex_out: bool) -> Case:
    shape = draw(shapes(min_dims=1, max_side=4))
    count = draw(st.integers(1, len(shape)))
    axes = tuple(draw(st.permutations(range(-len(shape), 0)))[:count])
    sizes = st.lists(st.integers(2, 6), min_size=count, max_size=count)
    s = draw(st.one_of(st.none(), sizes))
    if s is None and name == "irfftn" and shape[axes[-1]] == 1:
        s = draw(sizes)  # irfft of one entry: no default length
    norm = draw(NORMS)
    values, is_complex = draw(_operands(shape, complex_in))
    ours, theirs = getattr(fourier, name), getattr(np.fft, name)
    out, np_out = (_parts, _np_parts) if complex_out else ((lambda y: y), (lambda y: y))

    def fn(*values: Any) -> Any:
        return out(ours(_joined(values), s, axes, norm))

    def ref(*values: Any) -> Any:
        return np_out(theirs(_joined(values), s, axes, norm))

    kind = "complex" if is_complex else "real"
    desc = f"{name}({kind} {shape}, s={s}, axes={axes}, norm={norm})"
    return Case(fn, ref, values, draw(diff_mask(len(values))), desc=desc)


def _full(m: int) -> int:
    return 2 * (m - 1)


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "fft": _one_axis_cases("fft", complex_in=True, complex_out=True),
    "ifft": _one_axis_cases("ifft", complex_in=True, complex_out=True),
    "rfft": _one_axis_cases("rfft", complex_in=False, complex_out=True),
    "irfft": _one_axis_cases("irfft", complex_in=True, complex_out=False, default=_full),
}

COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "hfft": _one_axis_cases("hfft", complex_in=True, complex_out=False, default=_full),
    "ihfft": _one_axis_cases("ihfft", complex_in=False, complex_out=True),
    "rfftn": _many_axes_cases("rfftn", complex_in=False, complex_out=True),
    "irfftn": _many_axes_cases("irfftn", complex_in=True, complex_out=False),
}

BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}

# With complex operands: one operand, the transform's own (complex) output. rfft and ihfft
# refuse complex values (their BadCalls).
COMPLEX: dict[str, ComplexSpec] = {
    "fft": ComplexSpec(_one_axis_cases("fft", True, True, as_is=True), holomorphic=True),
    "ifft": ComplexSpec(_one_axis_cases("ifft", True, True, as_is=True), holomorphic=True),
    "irfft": ComplexSpec(_one_axis_cases("irfft", True, False, default=_full, as_is=True)),
    "hfft": ComplexSpec(_one_axis_cases("hfft", True, False, default=_full, as_is=True)),
}

_V4 = np.array([0.5, -1.0, 2.0, 0.25])
_M23 = np.arange(6.0).reshape(2, 3)


def _complex(x: Any) -> tuple[Any]:
    return (x * 1j,)


BAD_CALLS = [
    BadCall("fft", (_V4,), lambda x: fourier.fft(x, n=0), ShapeError, ("(0)", "at least 1")),
    BadCall("fft", (_V4,), lambda x: fourier.fft(x, axis=1), ShapeError, ("axis 1", "(4,)")),
    BadCall("fft", (_V4,), lambda x: fourier.fft(x, n=2.5), ShapeError, ("n must be an int",)),
    BadCall("fft", (_V4,), lambda x: np.fft.fft(x, out=np.empty(4, complex)), NoGradientError, ("out",),
            "np.fft.fft"),
    BadCall("fft", (_M23,), lambda x: fourier.fftn(x, axes=0), ShapeError, ("axes must be a sequence",),
            "np.fft.fftn"),
    BadCall("fft", (_M23,), lambda x: np.fft.fft2(x, s=(2, 0)), ShapeError, ("(0)",), "np.fft.fft2"),
    BadCall("ifft", (_V4,), lambda x: fourier.ifft(x, norm="unitary"), ArgumentError, ("norm", "'unitary'")),
    BadCall("ifft", (_M23,), lambda x: np.fft.ifftn(x, s=(3,), axes=(0, 1)), ShapeError, ("different lengths",),
            "np.fft.ifftn"),
    BadCall("rfft", (_V4,), lambda x: fourier.rfft(x), DtypeError, ("must be real", "complex128"), prepare=_complex),
    BadCall("rfft", (_V4,), lambda x: np.fft.ihfft(x), DtypeError, ("must be real",), "np.fft.ihfft",
            prepare=_complex),
    BadCall("rfft", (_M23,), lambda x: np.fft.rfftn(x, axes=()), ShapeError, ("at least one axis",), "np.fft.rfftn"),
    BadCall("irfft", (np.array([1.5]),), lambda h: fourier.irfft(h), ShapeError, ("(0)",)),
    BadCall("irfft", (_V4,), lambda h: fourier.hfft(h, norm=1), ArgumentError, ("norm",), "np.fft.hfft"),
    # The ifft along axis 0 is recorded before irfft along axis 1 fails: the arena is left as it was.
    BadCall("irfft", (_M23,), lambda h: np.fft.irfftn(h, s=(2, 0), axes=(0, 1)), ShapeError, ("(0)",),
            "np.fft.irfftn"),
]  # fmt: skip
