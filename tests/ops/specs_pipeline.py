"""Specs for the pipeline family: segment_sum, segment_max, take_along_axis, cumsum, cumprod,
ssm_scan and logsumexp; the composites segment_mean, scatter_add, sort, masked_sum,
masked_mean and one_hot.

Segment ids are drawn with repeats and with empty segments. Outputs that are not finite
by definition (``-inf`` for an empty segment's max, NaN for an empty masked mean) are
replaced by 0 through ``where``, so finite differences apply; ``test_behaviours.py``
pins down the values and gradients there.
"""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import DtypeError, OpIndexError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask, draw_operand
from tests.strategies import axes, float_arrays, floats, separated_arrays, shapes, stretchable_to

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS", "ssm_ref"]

# -- references: second implementations, written as loops where numpy has no function ----------


def _segment_ref(data: Any, ids: np.ndarray, num: int, reduce: str) -> Any:
    out = np.zeros((num, *np.shape(data)[1:]), dtype=np.result_type(data))
    if reduce == "sum":
        np.add.at(out, ids, data)
        return out
    for s in range(num):  # max and mean, one segment at a time
        rows = data[ids == s]
        if len(rows):
            out[s] = np.max(rows, axis=0) if reduce == "max" else np.mean(rows, axis=0)
        elif reduce == "max":
            out[s] = -np.inf
    return out


def ssm_ref(a: Any, b: Any, x: Any) -> Any:
    """``h[t] = a[t] * h[t-1] + b[t] * x[t]``, one step at a time."""
    a, u = np.broadcast_arrays(a, np.multiply(b, x))
    h, out = np.zeros_like(u[0]), []
    for t in range(u.shape[0]):
        h = a[t] * h + u[t]
        out.append(h)
    return np.stack(out)


# -- segments ------------------------------------------------------------------------------------


@st.composite
def _segment_cases(draw: st.DrawFn, name: str) -> Case:
    rows = draw(st.integers(1, 6))
    num = draw(st.integers(1, 5))
    ids = draw(hnp.arrays(draw(st.sampled_from([np.int64, np.int32])), (rows,), elements=st.integers(0, num - 1)))
    given = num if ids.max() + 1 < num or draw(st.booleans()) else None  # max + 1 is the default
    shape = (rows, *draw(shapes(max_dims=2, max_side=3)))
    data = draw(separated_arrays(shape, step=0.02) if name == "segment_max" else float_arrays(shape))
    nonempty = (np.bincount(ids, minlength=num) > 0).reshape((num,) + (1,) * (len(shape) - 1))
    reduce = name.partition("_")[2]  # sum, max or mean

    # An empty segment's max is -inf: it is kept out of the sums finite differences take.
    def fn(data: Any) -> Any:
        out = getattr(ng, name)(data, ids, given)
        return ng.where(nonempty, out, 0.0) if reduce == "max" else out

    def ref(data: Any) -> Any:
        out = _segment_ref(data, ids, num, reduce)
        return np.where(nonempty, out, 0.0) if reduce == "max" else out

    return Case(fn, ref, (data,), (True,), static=(ids,), desc=f"{name} ids={ids.tolist()} num_segments={given}")


@st.composite
def _shape_and_axis(draw: st.DrawFn) -> tuple[tuple[int, ...], int]:
    shape = draw(shapes(min_dims=1))
    return shape, draw(axes(len(shape), single=True))


@st.composite
def _take_along_axis_cases(draw: st.DrawFn) -> Case:
    # Indices repeat and count from the end; their other axes equal x's or are 1 (broadcast).
    shape, axis = draw(_shape_and_axis())
    n = shape[axis]
    idx_shape = list(shape)
    for k, m in enumerate(shape):
        idx_shape[k] = draw(st.integers(1, 4)) if k == axis % len(shape) else draw(st.sampled_from([1, m]))
    indices = draw(hnp.arrays(np.int64, tuple(idx_shape), elements=st.integers(-n, n - 1)))
    x = draw(float_arrays(shape))
    return Case(
        lambda x: ng.take_along_axis(x, indices, axis=axis),
        lambda x: np.take_along_axis(x, indices, axis=axis),
        (x,),
        (True,),
        static=(indices,),
        desc=f"take_along_axis axis={axis} indices {indices.shape}",
    )


@st.composite
def _scan_cases(draw: st.DrawFn, name: str) -> Case:
    shape = draw(shapes(max_side=3 if name == "cumprod" else 4))
    axis = draw(st.one_of(st.none(), axes(len(shape), single=True))) if shape else None
    if name == "cumprod":  # up to two exact zeros; small entries, as for prod
        x = draw(float_arrays(shape, elements=floats(-1.2, 1.2)))
        for _ in range(draw(st.integers(0, 2))):
            x.flat[draw(st.integers(0, x.size - 1))] = 0.0
    else:
        x = draw_operand(draw, shape, floats())
    fn, ref = getattr(ng, name), getattr(np, name)
    return Case(lambda x: fn(x, axis=axis), lambda x: ref(x, axis=axis), (x,), (True,), desc=f"{name} axis={axis}")


@st.composite
def _ssm_scan_cases(draw: st.DrawFn, broadcast: bool = False) -> Case:
    # a, b and x broadcast to (T, ...): one of them has the full shape, the others are
    # suffixes of it with some sides 1 (so a constant over time when it lacks axis 0).
    full = (draw(st.integers(1, 5)), *draw(shapes(max_dims=2, max_side=3)))
    which = draw(st.integers(0, 2))
    shapes_ = [full if k == which else draw(stretchable_to(full)) for k in range(3)]
    if broadcast and all(s == full for s in shapes_):
        shapes_[(which + 1) % 3] = full[1:]
    elements = (floats(-1.2, 1.2), floats(), floats())
    values = tuple(draw_operand(draw, s, e) for s, e in zip(shapes_, elements, strict=True))
    diff = (True,) * 3 if broadcast else draw(diff_mask(3))
    return Case(ng.ssm_scan, ssm_ref, values, diff, desc=f"ssm_scan {[np.shape(v) for v in values]}")


@st.composite
def _logsumexp_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes())
    axis, keepdims = draw(axes(len(shape))), draw(st.booleans())
    x = draw_operand(draw, shape, floats())
    return Case(
        lambda x: ng.logsumexp(x, axis=axis, keepdims=keepdims),
        lambda x: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
        (x,),
        (True,),
        desc=f"logsumexp axis={axis} keepdims={keepdims}",
    )


# -- composites ------------------------------------------------------------------------------------


@st.composite
def _scatter_add_cases(draw: st.DrawFn) -> Case:
    shape, axis = draw(_shape_and_axis())
    n = shape[axis]
    indices = draw(hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-n, n - 1)))
    selected = np.take(np.empty(shape), indices, axis=axis).shape
    x, updates = draw(float_arrays(shape)), draw(float_arrays(draw(stretchable_to(selected))))
    where = (slice(None),) * (axis % len(shape)) + (indices,)

    def ref(x: Any, updates: Any) -> Any:
        out = np.array(x, dtype=np.result_type(x, updates), copy=True)
        np.add.at(out, where, np.broadcast_to(updates, selected).copy())  # in full: engine bug 9
        return out

    return Case(
        lambda x, u: ng.scatter_add(x, indices, u, axis=axis),
        ref,
        (x, updates),
        draw(diff_mask(2)),
        static=(indices,),
        desc=f"scatter_add axis={axis} indices {indices.shape} updates {updates.shape}",
    )


@st.composite
def _sort_cases(draw: st.DrawFn) -> Case:
    shape, axis = draw(_shape_and_axis())
    x = draw(separated_arrays(shape))  # no ties: sort is differentiable
    return Case(lambda x: ng.sort(x, axis=axis), lambda x: np.sort(x, axis=axis), (x,), (True,), desc=f"sort {axis}")


@st.composite
def _masked_cases(draw: st.DrawFn, name: str) -> Case:
    shape = draw(shapes())
    axis, keepdims = draw(axes(len(shape))), draw(st.booleans())
    mask = draw(hnp.arrays(np.bool_, draw(stretchable_to(shape))))
    x = draw(float_arrays(shape))
    count = np.sum(np.broadcast_to(mask, shape), axis=axis, keepdims=keepdims)
    total = lambda x: np.sum(np.where(mask, x, 0.0), axis=axis, keepdims=keepdims)
    if name == "masked_sum":
        fn, ref = (lambda x: ng.masked_sum(x, mask, axis=axis, keepdims=keepdims)), total
    else:  # an empty group's mean is NaN: keep it out of the sums
        fn = lambda x: ng.where(count > 0, ng.masked_mean(x, mask, axis=axis, keepdims=keepdims), 0.0)
        ref = lambda x: np.where(count > 0, total(x) / np.maximum(count, 1), 0.0)
    return Case(fn, ref, (x,), (True,), static=(mask,), desc=f"{name} mask {mask.shape} axis={axis}")


@st.composite
def _one_hot_cases(draw: st.DrawFn) -> Case:
    classes, batch = draw(st.integers(1, 4)), draw(shapes(max_dims=2))
    indices = draw(hnp.arrays(np.int64, batch, elements=st.integers(0, classes - 1)))
    x = draw(float_arrays((*batch, classes)))
    return Case(
        lambda x: ng.one_hot(indices, classes, dtype=x.dtype) * x,
        lambda x: (indices[..., None] == np.arange(classes)).astype(x.dtype) * x,
        (x,),
        (True,),
        static=(indices,),
        desc=f"one_hot {indices.shape} classes={classes}",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "segment_sum": _segment_cases("segment_sum"),
    "segment_max": _segment_cases("segment_max"),
    "take_along_axis": _take_along_axis_cases(),
    "cumsum": _scan_cases("cumsum"),
    "cumprod": _scan_cases("cumprod"),
    "ssm_scan": _ssm_scan_cases(),
    "logsumexp": _logsumexp_cases(),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "segment_mean": _segment_cases("segment_mean"),
    "scatter_add": _scatter_add_cases(),
    "sort": _sort_cases(),
    "masked_sum": _masked_cases("masked_sum"),
    "masked_mean": _masked_cases("masked_mean"),
    "one_hot": _one_hot_cases(),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {"ssm_scan": _ssm_scan_cases(broadcast=True)}
# segment_max and sort order complex values by real part, then imaginary part (their specs
# keep the real parts apart); the others are holomorphic.
COMPLEX: dict[str, ComplexSpec] = {
    **{name: ComplexSpec(spec, holomorphic=True) for name, spec in {**SPECS, **COMPOSITES}.items()},
    "segment_max": ComplexSpec(SPECS["segment_max"]),
    "sort": ComplexSpec(COMPOSITES["sort"]),
    "cumprod": ComplexSpec(SPECS["cumprod"], holomorphic=True, keep_zeros=True),
}

_M23, _IDS = np.ones((2, 3)), np.array([0, 1])

BAD_CALLS = [
    BadCall("segment_sum", (_M23,), lambda d: ng.segment_sum(d, np.array([0.0, 1.0])), OpIndexError, ("1-D integer",)),
    BadCall("segment_sum", (_M23,), lambda d: ng.segment_sum(d, np.array([0, 1, 1])), ShapeError, ("3 entries",)),
    BadCall("segment_sum", (_M23,), lambda d: ng.segment_sum(d, _IDS, 1), OpIndexError, ("[0, 1)",)),
    BadCall("segment_max", (_M23,), lambda d: ng.segment_max(d, np.array([0, -1])), OpIndexError, ("-1",)),
    BadCall("segment_max", (np.array(1.0),), lambda d: ng.segment_max(d, _IDS), ShapeError, ("no rows",)),
    BadCall("segment_mean", (_M23,), lambda d: ng.segment_mean(d, np.array([[0, 1]])), OpIndexError, ("1-D",)),
    BadCall("take_along_axis", (_M23,), lambda x: ng.take_along_axis(x, np.array([[3]]), 1), OpIndexError, ("3",)),
    BadCall("take_along_axis", (_M23,), lambda x: ng.take_along_axis(x, np.array([0]), 1), ShapeError, ("2 dim",)),
    BadCall("take_along_axis", (_M23,), lambda x: ng.take_along_axis(x, np.zeros((3, 1), int)), ShapeError,
            ("(3, 1)",)),
    BadCall("take_along_axis", (_M23,), lambda x: ng.take_along_axis(x, np.array([[0.0]])), OpIndexError, ("float64",)),
    BadCall("cumsum", (_M23,), lambda x: ng.cumsum(x, axis=2), ShapeError, ("axis 2",)),
    BadCall("cumprod", (_M23,), lambda x: ng.cumprod(x, axis=-3), ShapeError, ("axis -3",)),
    BadCall("ssm_scan", (_M23, np.ones(2), _M23), ng.ssm_scan, ShapeError, ("(2, 3)", "(2,)")),
    BadCall("ssm_scan", (np.array(0.5), np.array(1.0), np.array(2.0)), ng.ssm_scan, ShapeError, ("time axis",)),
    BadCall("logsumexp", (_M23,), lambda x: ng.logsumexp(x, axis=2), ShapeError, ("axis 2",)),
    BadCall("logsumexp", (_M23,), lambda x: ng.logsumexp(x, axis=(0, -2)), ShapeError, ("repeated",)),
    BadCall("scatter_add", (_M23, np.ones(3)), lambda x, u: ng.scatter_add(x, np.array([2]), u), OpIndexError, ("2",)),
    BadCall("sort", (_M23,), lambda x: ng.sort(x, axis=2), ShapeError, ("axis 2",)),
    BadCall("masked_sum", (_M23,), lambda x: ng.masked_sum(x, np.ones((2, 3))), DtypeError, ("boolean",)),
    BadCall("masked_mean", (_M23,), lambda x: ng.masked_mean(x, np.ones(2, bool)), ShapeError, ("(2,)", "(2, 3)")),
    BadCall("one_hot", (_M23,), lambda x: ng.one_hot(np.array([3]), 3) * x, OpIndexError, ("[0, 3)",)),
]  # fmt: skip
