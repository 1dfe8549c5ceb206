"""Hypothesis strategies for the op tests: shapes, well-conditioned float and complex arrays
and axes.

Values are bounded (``[-3, 3]`` by default, each part of a complex number) so that every op
and its finite differences stay well conditioned. Keeping away from the points where an op is not differentiable
(0 for relu/abs, ties for max/min, bounds for clamp) is each op spec's job; the helpers
for it are :func:`away_from_zero` and :func:`grid`, whose lattices never meet when their
offsets differ by half a step.
"""

from __future__ import annotations

import math
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

# The index strategies are the shipped ones: the tests exercise what users get.
from nodegrad.testing.strategies import index_expressions, stretchable_to

__all__ = [
    "BOUND",
    "away_from_zero",
    "axes",
    "broadcastable_shapes",
    "complex_arrays",
    "complexes",
    "float_arrays",
    "floats",
    "grid",
    "index_expressions",
    "separated_arrays",
    "shapes",
    "single_axis",
    "stretchable_to",
]

BOUND = 3.0


def shapes(
    *, min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes; small by default so that every example is cheap."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def floats(lo: float = -BOUND, hi: float = BOUND) -> st.SearchStrategy[float]:
    """Finite, normal (not subnormal) Python floats in ``[lo, hi]``."""
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def away_from_zero(gap: float = 0.1, bound: float = BOUND) -> st.SearchStrategy[float]:
    """Floats with ``gap <= |x| <= bound``: for ops with a kink at 0, or divisors."""
    return st.one_of(floats(-bound, -gap), floats(gap, bound))


def grid(lo: float = -BOUND, hi: float = BOUND, step: float = 0.01, offset: float = 0.0) -> st.SearchStrategy[float]:
    """Floats ``k * step + offset`` in ``[lo, hi]``: distinct values are at least ``step`` apart.

    Two grids whose offsets differ by ``step / 2`` never share a value, so values drawn
    from one are never tied with values drawn from the other.
    """
    first, last = math.ceil((lo - offset) / step - 1e-9), math.floor((hi - offset) / step + 1e-9)
    return st.integers(first, last).map(lambda k: round(k * step + offset, 10))


def float_arrays(
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]],
    elements: st.SearchStrategy[float] | None = None,
    *,
    dtype: Any = np.float64,
    unique: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays of ``shape`` (a shape or a strategy for one) with bounded ``elements``."""
    return hnp.arrays(dtype, shape, elements=floats() if elements is None else elements, unique=unique)


def complexes(
    real: st.SearchStrategy[float] | None = None, imag: st.SearchStrategy[float] | None = None
) -> st.SearchStrategy[complex]:
    """Python complex numbers whose real and imaginary parts are drawn from ``real`` and
    ``imag`` (bounded floats, :func:`floats`, by default)."""
    return st.builds(complex, floats() if real is None else real, floats() if imag is None else imag)


def complex_arrays(
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]],
    real: st.SearchStrategy[float] | None = None,
    imag: st.SearchStrategy[float] | None = None,
    *,
    dtype: Any = np.complex128,
) -> st.SearchStrategy[np.ndarray]:
    """Complex arrays of ``shape`` whose parts are drawn from ``real`` and ``imag`` (bounded
    floats by default): keeping ops away from their branch cuts and poles is the caller's
    choice of the two domains. ``complex64`` arrays are drawn in ``complex128`` and rounded."""
    drawn = hnp.arrays(np.complex128, shape, elements=complexes(real, imag))
    return drawn if np.dtype(dtype) == np.complex128 else drawn.map(lambda z: z.astype(dtype))


def separated_arrays(
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]], step: float = 0.01, offset: float = 0.0
) -> st.SearchStrategy[np.ndarray]:
    """Arrays whose entries are pairwise at least ``step`` apart: no (near-)ties anywhere.

    Also keeps variances away from 0 (normalisation ops) when the array has two or more
    entries. The shape must have at most ``6 / step + 1`` entries.
    """
    return float_arrays(shape, grid(step=step, offset=offset), unique=True)


def broadcastable_shapes(
    num_shapes: int = 2, *, min_dims: int = 0, max_dims: int = 3, max_side: int = 4
) -> st.SearchStrategy[hnp.BroadcastableShapes]:
    """``num_shapes`` shapes that broadcast together, with their result shape."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side
    )


def single_axis(ndim: int) -> st.SearchStrategy[int]:
    """One valid axis of an ``ndim``-dimensional array, negative ones included (``ndim >= 1``)."""
    return st.integers(-ndim, ndim - 1)


def axes(ndim: int) -> st.SearchStrategy[int | tuple[int, ...] | None]:
    """A valid ``axis`` argument for a reduction: None, one int, or a tuple of distinct axes
    (negative ones included)."""
    choices: list[st.SearchStrategy[Any]] = [st.none(), hnp.valid_tuple_axes(ndim)]
    if ndim:
        choices.append(single_axis(ndim))
    return st.one_of(choices)
