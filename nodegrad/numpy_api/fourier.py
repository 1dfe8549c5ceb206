"""numpy's Fourier transforms on traced values: :data:`TRANSFORMS`, taken into the function table.

Each ``np.fft`` transform maps onto its function in :mod:`nodegrad.ops.fourier`, with
numpy's signature; ``out=`` is refused by name (a traced result is a new value, never
written into an array).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.numpy_api.arguments import no_extras
from nodegrad.ops import fourier

__all__ = ["TRANSFORMS"]


def _along_one_axis(name: str) -> Callable[..., Any]:
    transform = getattr(fourier, name)

    def call(a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> Any:
        no_extras(f"fft.{name}", out=out)
        return transform(a, n, axis, norm)

    call.__name__ = call.__qualname__ = name
    return call


def _along_axes(name: str, default_axes: Any) -> Callable[..., Any]:
    transform = getattr(fourier, name)

    def call(a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None, out: Any = None) -> Any:
        no_extras(f"fft.{name}", out=out)
        return transform(a, s, axes, norm)

    call.__name__ = call.__qualname__ = name
    return call


_ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_N_AXES = ("fftn", "ifftn", "rfftn", "irfftn")
_TWO_AXES = ("fft2", "ifft2", "rfft2", "irfft2")

TRANSFORMS: dict[Callable[..., Any], Callable[..., Any]] = {
    **{getattr(np.fft, name): _along_one_axis(name) for name in _ONE_AXIS},
    **{getattr(np.fft, name): _along_axes(name, None) for name in _N_AXES},
    **{getattr(np.fft, name): _along_axes(name, (-2, -1)) for name in _TWO_AXES},
}
