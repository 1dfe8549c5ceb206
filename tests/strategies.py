"""Hypothesis strategies for the op tests, beside the shipped ones.

Shapes, float and complex arrays, broadcastable shapes, axes and index expressions are
:mod:`nodegrad.testing.strategies` itself, re-exported here: the tests draw what users
get. Their values are bounded (``[-3, 3]`` by default, each part of a complex number) so
that every op and its finite differences stay well conditioned. Keeping away from the
points where an op is not differentiable (0 for relu/abs, ties for max/min, bounds for
clamp) is each op spec's job; the helpers for it, which draw the entries the shipped
arrays take (``float_arrays(shape, elements=...)``), are here: :func:`floats`,
:func:`away_from_zero` and :func:`grid`, whose lattices never meet when their offsets
differ by half a step.
"""

from __future__ import annotations

import math

import hypothesis.strategies as st
import numpy as np

from nodegrad.testing.strategies import (
    axes,
    broadcastable_shapes,
    complex_arrays,
    float_arrays,
    index_expressions,
    shapes,
    stretchable_to,
)

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
    "stretchable_to",
]

BOUND = 3.0


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


def complexes(
    real: st.SearchStrategy[float] | None = None, imag: st.SearchStrategy[float] | None = None
) -> st.SearchStrategy[complex]:
    """Python complex numbers whose real and imaginary parts are drawn from ``real`` and
    ``imag`` (bounded floats, :func:`floats`, by default)."""
    return st.builds(complex, floats() if real is None else real, floats() if imag is None else imag)


def separated_arrays(
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]], step: float = 0.01, offset: float = 0.0
) -> st.SearchStrategy[np.ndarray]:
    """Arrays whose entries are pairwise at least ``step`` apart: no (near-)ties anywhere.

    Also keeps variances away from 0 (normalisation ops) when the array has two or more
    entries. The shape must have at most ``6 / step + 1`` entries.
    """
    return float_arrays(shape, elements=grid(step=step, offset=offset), unique=True)
