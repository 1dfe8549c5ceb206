"""Hypothesis strategies for property-based tests of differentiable code.

Importing this module needs ``hypothesis`` (``pip install nodegrad[test]``); the rest of
nodegrad does not.

- :func:`float_arrays` -- well-conditioned float arrays (bounded, optionally kept away
  from zero);
- :func:`broadcastable_shapes` -- shape tuples that broadcast together;
- :func:`axes` and :func:`reshape_targets` -- valid ``axis`` arguments and new shapes;
- :func:`index_expressions` -- valid ``x[index]`` expressions for a shape: ints, slices,
  ``None``, ``...``, integer arrays (with repeats) and boolean masks;
- :func:`segment_ids` -- integer group ids for the segment ops;
- :func:`structures` -- nested attrs records, dataclasses, named tuples, dicts with mixed
  key types, lists and tuples, built from any leaf strategy.

Examples
--------
>>> import numpy as np
>>> from hypothesis import given, settings
>>> import nodegrad as ng
>>> from nodegrad.testing import check_grads
>>> from nodegrad.testing.strategies import float_arrays
>>> @settings(max_examples=5, deadline=None)
... @given(float_arrays())
... def test_tanh(x):
...     check_grads(ng.tanh, x)
>>> test_tanh()
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any

import attrs
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from nodegrad.structure import dataclass_field, field

__all__ = [
    "Box",
    "Marked",
    "Pair",
    "Tagged",
    "Triple",
    "axes",
    "broadcastable_shapes",
    "float_arrays",
    "index_expressions",
    "reshape_targets",
    "segment_ids",
    "shapes",
    "structures",
]


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy[Any]:
    """Small array shapes."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def float_arrays(
    shape: Any = None,
    dtype: Any = np.float64,
    bound: float = 3.0,
    away_from_zero: float = 0.0,
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays with entries in ``[-bound, bound]`` (and ``|x| >= away_from_zero``).

    Bounded, finite entries keep ops and their finite differences well conditioned;
    ``away_from_zero`` keeps ``log``, ``sqrt``, ``1/x`` or ``abs`` clear of their kinks.
    """
    if np.dtype(dtype) == np.float32:
        values = st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=32)
    else:
        values = st.floats(-bound, bound, allow_nan=False, allow_infinity=False)
    if away_from_zero:
        values = values.filter(lambda v: abs(v) >= away_from_zero)
    return hnp.arrays(dtype, shapes() if shape is None else shape, elements=values)


def broadcastable_shapes(num_shapes: int = 2, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy[Any]:
    """Tuples of ``num_shapes`` shapes that broadcast together (some of them stretched)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, max_dims=max_dims, max_side=max_side).map(
        lambda drawn: drawn.input_shapes
    )


@st.composite
def axes(draw: st.DrawFn, ndim: int, single: bool = False) -> Any:
    """A valid ``axis`` for ``ndim`` dimensions: None, an int (maybe negative) or a tuple."""
    if ndim == 0:
        return None
    one = st.integers(-ndim, ndim - 1)
    if single:
        return draw(one)
    several = st.lists(st.integers(0, ndim - 1), unique=True, min_size=1, max_size=ndim).map(tuple)
    return draw(st.one_of(st.none(), one, several))


@st.composite
def reshape_targets(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A new shape with as many elements as ``shape``, possibly with one ``-1``."""
    size = math.prod(shape)
    factors = [p for p in range(2, size + 1) if size % p == 0 and all(p % q for q in range(2, p))]
    primes: list[int] = []
    rest = size
    while rest > 1:
        p = draw(st.sampled_from([f for f in factors if rest % f == 0]))
        primes.append(p)
        rest //= p
    ordered: list[int] = draw(st.permutations(primes)) if primes else []
    merged: list[int] = []
    for n in ordered:
        if merged and draw(st.booleans()):
            merged[-1] *= n
        else:
            merged.append(n)
    merged += [1] * draw(st.integers(0, 1))
    if merged and draw(st.booleans()):
        merged[draw(st.integers(0, len(merged) - 1))] = -1
    return tuple(merged)


@st.composite
def index_expressions(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """A valid index for an array of ``shape``: basic parts (ints, slices, ``None``,
    ``...``) mixed with integer arrays (repeats and negative values included) or a
    boolean mask, in the combinations numpy allows.
    """
    if shape and draw(st.integers(0, 5)) == 0:
        return draw(hnp.arrays(np.bool_, shape))  # a full boolean mask
    parts: list[Any] = []
    advanced = draw(st.booleans())
    ellipsis_at = draw(st.integers(-1, len(shape)))
    for axis, n in enumerate(shape):
        if axis == ellipsis_at:
            parts.append(Ellipsis)
            break
        if draw(st.integers(0, 4)) == 0:
            parts.append(None)
        kind = draw(st.sampled_from(["int", "slice", "array"] if advanced else ["int", "slice"]))
        if kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start, stop = draw(st.integers(-n, n)), draw(st.integers(-n, n))
            parts.append(slice(start, stop, draw(st.sampled_from([None, 1, 2, -1]))))
        else:
            parts.append(draw(hnp.arrays(np.intp, st.integers(1, 4), elements=st.integers(-n, n - 1))))
    return tuple(parts)


@st.composite
def segment_ids(draw: st.DrawFn, rows: int, num_segments: int | None = None) -> np.ndarray:
    """Group ids for ``rows`` rows in ``[0, num_segments)``: unsorted, with repeats and
    (when there are more segments than used) empty groups."""
    num = num_segments if num_segments is not None else draw(st.integers(1, max(rows, 1)))
    return draw(hnp.arrays(np.intp, rows, elements=st.integers(0, num - 1)))


@attrs.define
class Pair:
    """A record (attrs) of two entries, for :func:`structures`."""

    x: Any
    y: Any


@attrs.frozen
class Tagged:
    """A frozen record (attrs) with a field marked static."""

    w: Any
    tag: Any = field(static=True, default="tag")


@dataclasses.dataclass
class Box:
    """A dataclass of two entries."""

    p: Any
    q: Any


@dataclasses.dataclass(frozen=True)
class Marked:
    """A frozen dataclass with a float field marked static."""

    v: Any
    note: Any = dataclass_field(static=True, default=1.5)


Triple = collections.namedtuple("Triple", "a b c")

_KEYS = st.one_of(st.text(max_size=2), st.integers(-3, 3), st.tuples(st.integers(0, 2), st.text(max_size=1)))


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_KEYS, children, max_size=3),
        st.builds(Pair, children, children),
        st.builds(Tagged, children, st.integers()),
        st.builds(Box, children, children),
        st.builds(Marked, children, st.floats(-3, 3)),
        st.builds(Triple, children, children, children),
    )


def structures(leaves: st.SearchStrategy[Any] | None = None, max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Nested structured values around ``leaves`` (float arrays and floats by default,
    mixed with static leaves: ints, strings, ``None``, integer arrays)."""
    if leaves is None:
        statics = st.one_of(
            st.integers(-5, 5),
            st.booleans(),
            st.text(max_size=3),
            st.none(),
            hnp.arrays(np.intp, shapes(max_dims=1)),
            hnp.arrays(np.bool_, shapes(max_dims=1)),
        )
        arrays = st.sampled_from([np.float64, np.float32]).flatmap(lambda dt: float_arrays(shapes(max_dims=2), dt))
        leaves = st.one_of(arrays, st.floats(-3, 3), statics)
    return _containers(st.recursive(leaves, _containers, max_leaves=max_leaves))
