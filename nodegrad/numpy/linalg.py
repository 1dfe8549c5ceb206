"""``numpy.linalg``, as numpy has it (its functions take traced values through numpy's
dispatch, and lists holding them through :mod:`nodegrad.numpy.lists`): importable as
``nodegrad.numpy.linalg``."""

from typing import Any

import numpy.linalg as _linalg

from nodegrad.numpy.lists import with_lists

globals().update(with_lists(_linalg, list(_linalg.__all__), "linalg"))

__all__ = list(_linalg.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_linalg, name)
