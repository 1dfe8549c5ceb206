"""``numpy.fft``, as numpy has it (its functions take traced values through numpy's
dispatch, and lists holding them through :mod:`nodegrad.numpy.lists`): importable as
``nodegrad.numpy.fft``."""

from typing import Any

import numpy.fft as _fft

from nodegrad.numpy.lists import with_lists

globals().update(with_lists(_fft, list(_fft.__all__), "fft"))

__all__ = list(_fft.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_fft, name)
