"""``numpy.linalg``, as numpy has it (its functions take traced values through numpy's
dispatch): importable as ``nodegrad.numpy.linalg``."""

from typing import Any

import numpy.linalg as _linalg

globals().update({name: getattr(_linalg, name) for name in _linalg.__all__})

__all__ = list(_linalg.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_linalg, name)
