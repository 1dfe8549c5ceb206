"""``numpy.random``, as numpy has it (its functions take traced values through numpy's
dispatch): importable as ``nodegrad.numpy.random``."""

from typing import Any

import numpy.random as _random

globals().update({name: getattr(_random, name) for name in _random.__all__})

__all__ = list(_random.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_random, name)
