"""``numpy.fft``, as numpy has it (its functions take traced values through numpy's
dispatch): importable as ``nodegrad.numpy.fft``."""

from typing import Any

import numpy.fft as _fft

globals().update({name: getattr(_fft, name) for name in _fft.__all__})

__all__ = list(_fft.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_fft, name)
