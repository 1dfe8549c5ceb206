"""Central differences in float64, shared by the tests that check a gradient against them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def central_difference(f: Callable[[Any], Any], x: Any, h: float = 1e-6) -> np.ndarray:
    """``d f / d x`` by float64 central differences, shaped ``f(x).shape + x.shape``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(np.shape(f(x)) + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        out[(..., *i)] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * h)
    return out
