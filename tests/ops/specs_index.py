"""Specs for the index family: getitem, gather, index_add, index_set and scatter; the
functional updates ``at(x)[i].set(v)`` and ``at(x)[i].add(v)`` (composites)."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import OpIndexError, ShapeError
from nodegrad.ops import getitem, index_add, index_set
from nodegrad.ops.index import scatter
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask, draw_operand, int_index, unique_index
from tests.strategies import axes, float_arrays, floats, shapes, stretchable_to

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]


@st.composite
def _getitem_cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(["basic", "integer arrays", "boolean mask", "slice + integer array", "int list"]))
    index: Any
    if kind == "basic":
        shape = draw(shapes())
        index = draw(hnp.basic_indices(shape, allow_newaxis=True))
    elif kind == "integer arrays":  # one array per axis, repeats and negative indices included
        shape = draw(shapes(min_dims=1))
        index = draw(hnp.integer_array_indices(shape, result_shape=shapes(max_dims=2, max_side=3)))
    elif kind == "boolean mask":
        shape = draw(shapes(min_dims=1))
        index = draw(hnp.arrays(np.bool_, shape[: draw(st.integers(1, len(shape)))]))
    elif kind == "slice + integer array":
        shape = draw(shapes(min_dims=2))
        n = shape[1]
        positions = draw(hnp.arrays(np.int64, shapes(max_dims=2, max_side=3), elements=st.integers(-n, n - 1)))
        index = (draw(st.slices(shape[0])), positions)
    else:
        shape = draw(shapes(min_dims=1))
        index = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5))
    x = draw(float_arrays(shape))
    return Case(
        lambda x: getitem(x, index),
        lambda x: x[index],
        (x,),
        (True,),
        static=(index,),
        desc=f"getitem, {kind}",
    )


@st.composite
def _gather_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes(min_dims=1))
    axis = draw(st.one_of(axes(len(shape), single=True), st.none()))  # None: from the flattened array
    n = int(np.prod(shape)) if axis is None else shape[axis]
    indices = draw(hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-n, n - 1)))
    x = draw(float_arrays(shape))
    return Case(
        lambda x: ng.gather(x, indices, axis=axis),
        lambda x: np.take(x, indices, axis=axis),
        (x,),
        (True,),
        static=(indices,),
        desc=f"gather axis={axis}",
    )


@st.composite
def _any_index(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[str, Any]:
    """An index for ``shape`` that may select an element several times (integer arrays)."""
    if shape and draw(st.booleans()):
        return "integer arrays with repeats", draw(int_index(shape))
    return draw(unique_index(shape))


def _add_at(x: Any, v: Any, index: Any) -> Any:
    """The numpy reference of index_add and scatter: a copy of x, np.add.at semantics."""
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(p, np.ndarray) for p in parts):
        # v spelled out in full: numpy 2.4's add.at misreads values that broadcast along
        # a multi-dimensional index (see test_behaviours.py, engine bug 9).
        np.add.at(out, index, np.broadcast_to(v, out[index].shape).copy())
    else:  # a basic index selects each element once
        out[index] += v
    return out


def _set_at(x: Any, v: Any, index: Any) -> Any:
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    out[index] = v
    return out


@st.composite
def _update_cases(draw: st.DrawFn, name: str, all_diff: bool = False, broadcast: bool = False) -> Case:
    """index_add / index_set and their ``at`` spellings: v has the selected shape, or
    broadcasts to it (``broadcast``: strictly smaller)."""
    shape = draw(shapes())
    kind, index = draw(unique_index(shape) if name.endswith("set") else _any_index(shape))
    selected = np.empty(shape)[index].shape
    v_shape = draw(stretchable_to(selected)) if broadcast or draw(st.booleans()) else selected
    if broadcast and v_shape == selected:
        v_shape = selected[1:]
    x, v = draw(float_arrays(shape)), draw_operand(draw, v_shape, floats())
    fn = {
        "index_add": lambda x, v: index_add(x, v, index),
        "index_set": lambda x, v: index_set(x, v, index),
        "at.add": lambda x, v: ng.at(x)[index].add(v),
        "at.set": lambda x, v: ng.at(x)[index].set(v),
    }[name]
    ref = (lambda x, v: _set_at(x, v, index)) if name.endswith("set") else (lambda x, v: _add_at(x, v, index))
    diff = (True, True) if all_diff else draw(diff_mask(2))
    return Case(fn, ref, (x, v), diff, static=(index,), desc=f"{name}, {kind}, v {np.shape(v)} into {selected}")


@st.composite
def _scatter_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes())
    kind, index = draw(_any_index(shape))
    selected = np.empty(shape)[index].shape
    v = draw_operand(draw, draw(stretchable_to(selected)) if draw(st.booleans()) else selected, floats())
    return Case(
        lambda v: scatter(v, index, shape),
        lambda v: _add_at(np.zeros(shape), v, index),
        (v,),
        (True,),
        static=(index,),
        desc=f"scatter into {shape}, {kind}, v {np.shape(v)}",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "getitem": _getitem_cases(),
    "gather": _gather_cases(),
    "index_add": _update_cases("index_add"),
    "index_set": _update_cases("index_set"),
    "scatter": _scatter_cases(),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "at.add": _update_cases("at.add"),
    "at.set": _update_cases("at.set"),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    "index_add": _update_cases("index_add", all_diff=True, broadcast=True),
    "index_set": _update_cases("index_set", all_diff=True, broadcast=True),
}
# Linear maps: holomorphic. Complex values written into, or added to, a real x give a
# complex result (x's real part gets its gradient, as any real value meeting complex ones).
COMPLEX: dict[str, ComplexSpec] = {
    name: ComplexSpec(spec, holomorphic=True) for name, spec in {**SPECS, **COMPOSITES}.items()
}

_M23 = np.ones((2, 3))
_TWICE = np.array([0, 0])

BAD_CALLS = [
    BadCall("getitem", (_M23,), lambda x: x[2], OpIndexError, ("out of bounds",)),
    BadCall("getitem", (_M23,), lambda x: x[np.array([0, -3])], OpIndexError, ("-3",)),
    BadCall("getitem", (_M23,), lambda x: x[np.array([0.5])], OpIndexError, ("float64",)),
    BadCall("getitem", (_M23,), lambda x: x[0, 0, 0], OpIndexError, ("indices",)),
    BadCall("gather", (_M23, np.array([0, 2])), ng.gather, OpIndexError, ("index 2", "size 2")),
    BadCall("gather", (_M23, np.array([-3])), lambda x, i: ng.gather(x, i, axis=0), OpIndexError, ("-3",)),
    BadCall("gather", (_M23,), lambda x: ng.gather(x, np.array([0.0])), OpIndexError, ("float64",)),
    BadCall("gather", (_M23,), lambda x: ng.gather(x, np.array([0]), axis=2), ShapeError, ("axis 2",)),
    BadCall("index_add", (_M23, np.ones(3)), lambda x, v: index_add(x, v, np.array([2])), OpIndexError, ("2",)),
    BadCall("index_add", (_M23, np.ones(2)), lambda x, v: index_add(x, v, 0), ShapeError, ("[2]", "[2, 3]")),
    BadCall("index_add", (_M23, np.ones(3)), lambda x, v: index_add(x, v, np.array([0.5])), OpIndexError, ("float64",)),
    BadCall("index_set", (_M23, np.ones(3)), lambda x, v: index_set(x, v, _TWICE), OpIndexError, ("more than once",)),
    BadCall("index_set", (_M23, np.ones(3)), lambda x, v: index_set(x, v, np.array([5])), OpIndexError, ("5",)),
    BadCall("index_set", (_M23, np.ones(4)), lambda x, v: index_set(x, v, 1), ShapeError, ("[4]", "[2, 3]")),
    BadCall("scatter", (np.ones(2),), lambda v: scatter(v, np.array([0, 3]), (3,)), OpIndexError, ("3",)),
    BadCall("scatter", (np.ones(2),), lambda v: scatter(v, np.array([0, 1, 2]), (3,)), ShapeError, ("[2]",)),
    BadCall("at.set", (_M23, np.ones(3)), lambda x, v: ng.at(x)[_TWICE].set(v), OpIndexError, ("more than once",),
            "index_set"),
    BadCall("at.add", (_M23, np.ones(3)), lambda x, v: ng.at(x)[np.array([4])].add(v), OpIndexError, ("4",),
            "index_add"),
]  # fmt: skip
