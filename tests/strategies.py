"""Hypothesis strategies for the op tests: shapes, well-conditioned float arrays and axes.

Values are bounded (``[-3, 3]`` by default) so that every op and its finite differences
stay well conditioned. Keeping away from the points where an op is not differentiable
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

__all__ = [
    "BOUND",
    "away_from_zero",
    "axes",
    "broadcastable_shapes",
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


# -- index expressions --------------------------------------------------------------------------


@st.composite
def stretchable_to(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape`` without growing it: a suffix of ``shape`` with
    some sides replaced by 1."""
    ndim = draw(st.integers(0, len(shape)))
    return tuple(n if draw(st.booleans()) else 1 for n in shape[len(shape) - ndim :])


def _index_array(draw: st.DrawFn, n: int, shape: tuple[int, ...]) -> Any:
    """Integer positions into an axis of size ``n`` (negative and repeated ones included);
    sometimes as a nested list, which numpy treats the same."""
    dtype = draw(st.sampled_from([np.intp, np.int32, np.int8, np.uint8]))
    lo = 0 if np.dtype(dtype).kind == "u" else -n
    positions = draw(hnp.arrays(dtype, shape, elements=st.integers(lo, n - 1)))
    # (An empty list is left an array: nodegrad refuses ``x[[]]``, see test_indexing.py.)
    return positions.tolist() if positions.size and draw(st.integers(0, 3)) == 0 else positions


def _slice(draw: st.DrawFn, n: int) -> slice:
    """A slice of an axis of size ``n``: bounds past either end and negative steps included."""
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def index_expressions(
    draw: st.DrawFn,
    shape: tuple[int, ...],
    *,
    allow_arrays: bool = True,
    allow_masks: bool = True,
    allow_newaxis: bool = True,
    allow_ellipsis: bool = True,
) -> Any:
    """An index valid for an array of ``shape``, as numpy accepts it in ``x[index]``.

    Parts: ints (negative ones too), slices (any bounds, negative steps), ``None``, one
    ``...``, integer arrays (repeats, negatives, several dtypes, sometimes as lists) and at
    most one boolean mask spanning one or more consecutive axes. The advanced parts
    (arrays, the mask) broadcast together; they may be adjacent or separated by a slice
    or ``None``, in which case numpy moves the advanced dimensions to the front. Explicit
    parts cover a prefix of the axes, or a prefix and a suffix around ``...``; a single
    part is sometimes given bare rather than in a tuple.
    """
    ndim = len(shape)
    explicit = ndim - draw(st.integers(0, ndim))  # usually most axes: the richer indices
    ellipsis = allow_ellipsis and draw(st.booleans())
    before = draw(st.integers(0, explicit)) if ellipsis else explicit
    groups = [list(range(before)), list(range(ndim - (explicit - before), ndim))]
    kinds = ["slice", "int", *(["array"] if allow_arrays else [])]
    parts: list[tuple[str, list[int]]] = []
    has_mask = False
    for g, dims in enumerate(groups):
        k = 0
        while k < len(dims):
            kind = draw(st.sampled_from([*kinds, *(["mask"] if allow_masks and not has_mask else [])]))
            width = draw(st.integers(1, len(dims) - k)) if kind == "mask" else 1
            parts.append((kind, dims[k : k + width]))
            has_mask = has_mask or kind == "mask"
            k += width
        if g == 0 and ellipsis:
            parts.append(("ellipsis", []))
    if allow_newaxis:
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            parts.insert(draw(st.integers(0, len(parts))), ("none", []))

    # A mask stands for its count of integer arrays: the others must broadcast with it.
    mask = None
    for kind, dims in parts:
        if kind == "mask":
            mask = draw(hnp.arrays(bool, tuple(shape[d] for d in dims)))
    if mask is not None:
        count = int(mask.sum())
        array_shapes: st.SearchStrategy[tuple[int, ...]] = st.sampled_from([(), (1,), (count,)])
    else:
        array_shapes = stretchable_to(draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)))

    index: list[Any] = []
    for kind, dims in parts:
        n = shape[dims[0]] if dims else 0
        if kind == "int":
            position = draw(st.integers(-n, n - 1))
            index.append(np.intp(position) if draw(st.integers(0, 3)) == 0 else position)
        elif kind == "slice":
            index.append(_slice(draw, n))
        elif kind == "array":
            index.append(_index_array(draw, n, draw(array_shapes)))
        elif kind == "mask":
            index.append(mask)
        else:
            index.append(None if kind == "none" else Ellipsis)
    if len(index) == 1 and draw(st.booleans()):
        return index[0]
    return tuple(index)
