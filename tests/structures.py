"""Hypothesis strategies for nested structured values, and the record classes they use."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import attrs
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nodegrad as ng


@attrs.define
class Pair:
    x: Any
    y: Any


@attrs.frozen
class Tagged:
    w: Any
    tag: Any = ng.field(static=True)


@dataclasses.dataclass
class Box:
    p: Any
    q: Any


@dataclasses.dataclass(frozen=True)
class Marked:
    v: Any
    note: Any = ng.dataclass_field(static=True, default=1.5)


NT = collections.namedtuple("NT", "u v")

small_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)
finite = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


def float_leaves() -> st.SearchStrategy[Any]:
    arrays = hnp.arrays(st.sampled_from([np.float64, np.float32]), small_shapes, elements=st.floats(-2, 2, width=32))
    return st.one_of(arrays, finite)


def static_leaves() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(-5, 5),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
        hnp.arrays(np.int64, small_shapes, elements=st.integers(0, 9)),
        hnp.arrays(np.bool_, small_shapes),
    )


keys = st.one_of(st.text(max_size=2), st.integers(-3, 3), st.tuples(st.integers(0, 2), st.text(max_size=1)))


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=3),
        st.builds(Pair, children, children),
        st.builds(Tagged, children, static_leaves()),
        st.builds(Box, children, children),
        st.builds(Marked, children, finite),
        st.builds(NT, children, children),
    )


def structures() -> st.SearchStrategy[Any]:
    """Nested records of several kinds, dicts with mixed key types, lists, tuples, static leaves."""
    leaves = st.one_of(float_leaves(), float_leaves(), static_leaves())
    return _containers(st.recursive(leaves, _containers, max_leaves=6))
