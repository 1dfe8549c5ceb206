"""Indexing traced values against numpy's own semantics, and the functional updates ``at``.

For hypothesis-drawn ``(shape, index)`` pairs (:func:`tests.strategies.index_expressions`:
ints, slices with any steps, ``None``, ``...``, integer arrays with repeats and negatives,
boolean masks, and the mixtures numpy allows): ``traced[index]`` equals ``x[index]``; its
VJP for a drawn seed equals ``np.add.at(np.zeros_like(x), index, seed)`` (repeated
positions accumulate); out-of-bounds positions and wrongly shaped masks raise
:class:`OpIndexError` and leave the arena unchanged. ``nodegrad.at(x)[index].set(v)`` and
``.add(v)`` are compared with numpy's copy-then-assign and ``np.add.at``, and
differentiated in both ``x`` and ``v``.
"""

from __future__ import annotations

import copy
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, note

import nodegrad as ng
from nodegrad.engine.traced import Traced
from nodegrad.errors import OpIndexError
from nodegrad.testing import check_grads
from tests.strategies import float_arrays, floats, index_expressions, shapes, stretchable_to

_SHAPES = shapes(min_dims=1, max_dims=4)


def _scatter(shape: tuple[int, ...], index: Any, seed: Any) -> np.ndarray:
    """numpy's reference VJP of ``x[index]``: ``np.add.at`` into zeros."""
    out = np.zeros(shape)
    np.add.at(out, index, seed)
    return out


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``g`` down to ``shape``, which broadcasts to ``g.shape``."""
    g = np.sum(g, axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    return np.sum(g, axis=tuple(k for k, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)


def _check_getitem(x: np.ndarray, index: Any, seed: np.ndarray) -> None:
    index_before = copy.deepcopy(index)
    x_before = x.copy()
    expected = x[index]
    recorded: list[Any] = []

    def f(x: Any) -> Any:
        out = x[index]
        recorded.append(out)
        return out

    out, back = ng.vjp(f, x)
    assert type(recorded[0]) is Traced
    assert np.shape(out) == np.shape(expected)
    assert np.asarray(out).dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
    (g,) = back(seed)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, _scatter(x.shape, index, seed), rtol=1e-13, atol=0)
    np.testing.assert_array_equal(x, x_before)
    for part, before in zip(_parts(index), _parts(index_before), strict=True):
        if isinstance(part, np.ndarray):
            np.testing.assert_array_equal(part, before)
    check_grads(f, x)


def _parts(index: Any) -> tuple[Any, ...]:
    return index if isinstance(index, tuple) else (index,)


# -- getitem: forward and VJP against numpy --------------------------------------------------------


@given(data=st.data())
def test_getitem_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(_SHAPES, label="shape")
    index = data.draw(index_expressions(shape), label="index")
    x = data.draw(float_arrays(shape), label="x")
    seed = data.draw(float_arrays(np.shape(x[index])), label="seed")
    _check_getitem(x, index, seed)


@st.composite
def _separated_advanced(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """Two advanced parts (arrays or ints) with a slice or ``None`` between them: numpy puts
    the broadcast advanced dimensions first in the result."""
    shape = draw(shapes(min_dims=3, max_dims=4))
    first = draw(st.integers(0, len(shape) - 3))
    second = draw(st.integers(first + 2, len(shape) - 1))
    broadcast = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))

    def advanced(n: int) -> Any:
        if draw(st.integers(0, 3)) == 0:
            return draw(st.integers(-n, n - 1))
        return draw(hnp.arrays(np.intp, draw(stretchable_to(broadcast)), elements=st.integers(-n, n - 1)))

    index: list[Any] = [slice(None)] * first + [advanced(shape[first])]
    index += [draw(st.sampled_from([slice(None), slice(None, None, -1), slice(1, None)]))] * (second - first - 1)
    if draw(st.booleans()):
        index.insert(first + 1, None)
    index.append(advanced(shape[second]))
    if not any(isinstance(p, np.ndarray) for p in index):
        index[first] = np.asarray(index[first])
    return shape, tuple(index)


@given(data=st.data())
def test_advanced_indices_separated_by_a_slice_go_first(data: st.DataObject) -> None:
    shape, index = data.draw(_separated_advanced(), label="shape, index")
    x = data.draw(float_arrays(shape), label="x")
    expected = x[index]
    arrays = [p for p in index if isinstance(p, (np.ndarray, int))]
    broadcast = np.broadcast_shapes(*(np.shape(p) for p in arrays))
    assert expected.shape[: len(broadcast)] == broadcast  # numpy's rule, which the test relies on
    seed = data.draw(float_arrays(expected.shape), label="seed")
    _check_getitem(x, index, seed)


_M = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])

# Hand-picked corners of numpy's rules: (shape, index, the expected result shape).
CORNERS: list[tuple[str, tuple[int, ...], Any, tuple[int, ...]]] = [
    ("array-in-the-middle-stays", (3, 4, 5), (slice(None), [0, 2, 2], slice(None)), (3, 3, 5)),
    ("arrays-split-by-slice-go-first", (3, 4, 5, 2), ([0, 1], slice(None), [2, -1]), (2, 4, 2)),
    ("int-and-array-split-by-slice", (3, 4, 5), (0, slice(None), [1, 2, 1]), (3, 4)),
    ("int-and-array-adjacent", (3, 4, 5), (slice(None), 1, [4, 0]), (3, 2)),
    ("arrays-split-by-newaxis", (3, 4, 5), ([0, 2], None, [1, 3]), (2, 1, 5)),
    ("broadcast-2d-arrays", (3, 4), (np.array([[0, 1], [2, 2]]), np.array([[1], [-1]])), (2, 2)),
    ("ellipsis-then-repeats", (3, 4, 5), (Ellipsis, [1, 1, 0, -1]), (3, 4, 4)),
    ("newaxes-and-negative-step", (3, 4, 5), (None, [0, 0], None, slice(None, None, -2)), (1, 2, 1, 2, 5)),
    ("negative-steps-both-axes", (3, 4), (slice(None, None, -1), slice(3, 0, -2)), (3, 2)),
    ("steps-past-the-ends", (5,), (slice(10, -10, -3),), (2,)),
    ("empty-slice", (3, 4), (slice(2, 1), slice(None)), (0, 4)),
    ("mask-full-shape", (3, 4), _M, (6,)),
    ("mask-leading-axes", (3, 4, 2), (_M, slice(None, None, -1)), (6, 2)),
    ("mask-after-ellipsis", (2, 3, 4), (Ellipsis, _M), (2, 6)),
    ("mask-with-array", (3, 4, 5), (slice(None), _M[0], [0, 4]), (3, 2)),
    ("mask-split-from-array", (4, 3, 5), (_M[0], slice(None), [2, -2]), (2, 3)),
    ("mask-all-false", (3, 4), np.zeros((3, 4), bool), (0,)),
    ("python-true", (3, 4), True, (1, 3, 4)),
    ("python-false", (3, 4), False, (0, 3, 4)),
    ("true-after-ellipsis", (3, 4), (Ellipsis, True), (3, 4, 1)),
    ("numpy-bool-scalar", (3, 4), (np.True_, 1), (1, 4)),
    ("zero-d-int-array", (3, 4), np.array(-1), (4,)),
    ("numpy-int-scalars", (3, 4), (np.int64(2), np.uint8(3)), ()),
    ("empty-int-array", (3, 4), np.array([], dtype=np.intp), (0, 4)),
    ("every-axis-an-int", (3, 4, 5), (-1, 0, 4), ()),
    ("list-index", (3, 4), [2, 0, 2, -3], (4, 4)),
    ("repeats-of-one-element", (3, 4), ([1, 1, 1], [2, 2, 2]), (3,)),
    ("empty-tuple", (3, 4), (), (3, 4)),
]


@pytest.mark.parametrize(("shape", "index", "result_shape"), [c[1:] for c in CORNERS], ids=[c[0] for c in CORNERS])
def test_getitem_corner_cases(shape: tuple[int, ...], index: Any, result_shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(0).normal(size=shape)
    assert x[index].shape == result_shape  # documents numpy's rule
    seed = np.random.default_rng(1).normal(size=result_shape)
    _check_getitem(x, index, seed)


@pytest.mark.parametrize("index", [(), Ellipsis, None, (None, Ellipsis), True], ids=repr)
def test_getitem_of_a_0d_value(index: Any) -> None:
    x = np.array(1.5)
    seed = np.full(np.shape(x[index]), 2.0)
    _check_getitem(x, index, seed)


@pytest.mark.parametrize(
    ("index", "result_shape"),
    [([], (0, 3)), ((slice(None), []), (2, 0)), ([[], []], (2, 0, 3)), ((1, []), (0,))],
    ids=["empty-list", "empty-list-after-slice", "nested-empty-lists", "int-and-empty-list"],
)
def test_empty_list_index(index: Any, result_shape: tuple[int, ...]) -> None:
    # numpy reads an empty list as an empty *integer* index; np.asarray([]) is float64.
    x = np.arange(6.0).reshape(2, 3)
    assert x[index].shape == result_shape
    _check_getitem(x, index, np.zeros(result_shape))
    np.testing.assert_array_equal(ng.at(x)[index].add(1.0), x)
    np.testing.assert_array_equal(ng.at(x)[index].set(1.0), x)


def test_repeated_positions_accumulate() -> None:
    g = ng.grad(lambda x: np.sum(x[np.array([0, 2, 0, 0, -1])] * np.array([1.0, 2.0, 3.0, 4.0, 5.0])))(np.ones(3))
    np.testing.assert_array_equal(g, [8.0, 0.0, 7.0])


# -- errors leave the arena unchanged ------------------------------------------------------------


@st.composite
def _out_of_bounds(draw: st.DrawFn) -> tuple[tuple[int, ...], Any]:
    """An index with one position outside its axis (an int, or a value in an array)."""
    shape = draw(_SHAPES)
    axis = draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    bad = draw(st.one_of(st.integers(n, n + 5), st.integers(-n - 5, -n - 1)))
    if draw(st.booleans()):
        part: Any = bad
    else:
        good = draw(hnp.arrays(np.intp, draw(st.integers(0, 3)), elements=st.integers(-n, n - 1)))
        part = np.insert(good, draw(st.integers(0, len(good))), bad)
    lead = [draw(st.sampled_from([slice(None), slice(None, None, -1), 0])) for _ in range(axis)]
    tail = [draw(st.sampled_from([slice(None), Ellipsis]))] if axis < len(shape) - 1 and draw(st.booleans()) else []
    return shape, tuple([*lead, part, *tail])


def _assert_refused(x0: np.ndarray, call: Any, fragment: str) -> None:
    """``call(y, s)``, ``y`` a traced copy of ``x0`` and ``s`` a traced scalar, raises an
    OpIndexError with ``fragment`` in its message and records nothing."""
    with ng.Arena() as arena:
        x = arena.param(x0)
        y = x * 1.0  # a node before the failing call
        s = arena.param(np.array(2.0))
        size = len(arena)
        with pytest.raises(OpIndexError) as info:
            call(y, s)
        assert len(arena) == size, f"the failed call left nodes: {[n.op for n in arena][size:]}"
        np.testing.assert_array_equal(arena.backward(ng.sum(y), wrt=x), np.ones_like(x0))
    assert fragment in str(info.value), str(info.value)
    assert "test_indexing.py" in str(info.value), f"the message does not point at the calling line: {info.value}"


@given(data=st.data())
def test_out_of_bounds_index_raises(data: st.DataObject) -> None:
    shape, index = data.draw(_out_of_bounds(), label="shape, index")
    x0 = data.draw(float_arrays(shape), label="x")
    with pytest.raises(IndexError):
        x0[index]  # numpy agrees
    _assert_refused(x0, lambda y, s: y[index], "getitem")
    _assert_refused(x0, lambda y, s: ng.at(y)[index].add(1.0), "index_add")
    _assert_refused(x0, lambda y, s: ng.at(y)[index].set(1.0), "index_set")
    _assert_refused(x0, lambda y, s: ng.at(np.zeros(shape))[index].add(s), "index_add")


@given(data=st.data())
def test_wrongly_shaped_mask_raises(data: st.DataObject) -> None:
    shape = data.draw(_SHAPES, label="shape")
    width = data.draw(st.integers(1, len(shape)), label="mask axes")
    mask_shape = list(shape[:width])
    wrong = data.draw(st.integers(0, width - 1), label="wrong axis")
    # (numpy lets an empty mask axis stand against an axis of size 1: not drawn.)
    mask_shape[wrong] += data.draw(st.sampled_from([-1, 1]).filter(lambda d: mask_shape[wrong] + d >= 1), label="by")
    mask = data.draw(hnp.arrays(bool, tuple(mask_shape)), label="mask")
    x0 = data.draw(float_arrays(shape), label="x")
    with pytest.raises(IndexError):
        x0[mask]  # numpy agrees
    _assert_refused(x0, lambda y, s: y[mask], "getitem")
    _assert_refused(x0, lambda y, s: y[(mask, Ellipsis)], "getitem")


@pytest.mark.parametrize(
    "index",
    [np.array([0.0, 1.0]), (slice(None), np.array([1.5])), [0.5]],
    ids=["float-array", "float-array-in-tuple", "float-list"],
)
def test_float_index_array_raises(index: Any) -> None:
    _assert_refused(np.ones((3, 2)), lambda y, s: y[index], "integers or booleans")


# -- at(x)[index].set(v) / .add(v) ---------------------------------------------------------------


def _hits(shape: tuple[int, ...], index: Any) -> np.ndarray:
    hits = np.zeros(shape, dtype=np.intp)
    np.add.at(hits, index, 1)
    return hits


@st.composite
def _update_cases(draw: st.DrawFn) -> tuple[np.ndarray, Any, Any]:
    shape = draw(_SHAPES)
    index = draw(index_expressions(shape))
    x = draw(float_arrays(shape))
    selected = np.shape(x[index])
    v_shape = draw(stretchable_to(selected))
    v = draw(floats()) if v_shape == () and draw(st.booleans()) else draw(float_arrays(v_shape))
    return x, index, v


def _v_grad(seed: np.ndarray, index: Any, v: Any) -> Any:
    return _unbroadcast(np.asarray(seed[index]), np.shape(v))


@given(data=st.data())
def test_at_add_matches_np_add_at(data: st.DataObject) -> None:
    x, index, v = data.draw(_update_cases(), label="x, index, v")
    expected = x.copy()
    np.add.at(expected, index, v)
    np.testing.assert_allclose(ng.at(x)[index].add(v), expected, rtol=1e-14)  # plain values: no recording
    out, back = ng.vjp(lambda x, v: ng.at(x)[index].add(v), x, v)
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    seed = data.draw(float_arrays(x.shape), label="seed")
    g_x, g_v = back(seed)
    np.testing.assert_array_equal(g_x, seed)
    np.testing.assert_allclose(g_v, _v_grad(seed, index, v), rtol=1e-13)
    assert np.shape(g_v) == np.shape(v)
    check_grads(lambda x, v: ng.at(x)[index].add(v), x, v)
    check_grads(lambda v: ng.at(x)[index].add(v), v)  # x plain, v traced


@given(data=st.data())
def test_at_set_matches_numpy_assignment(data: st.DataObject) -> None:
    x, index, v = data.draw(_update_cases(), label="x, index, v")
    if _hits(x.shape, index).max(initial=0) > 1:
        note("the index selects an element twice")
        _assert_refused(x, lambda y, s: ng.at(y)[index].set(v), "more than once")
        with pytest.raises(OpIndexError, match="more than once"):
            ng.at(x)[index].set(v)
        return
    expected = x.copy()
    expected[index] = v
    np.testing.assert_array_equal(ng.at(x)[index].set(v), expected)
    out, back = ng.vjp(lambda x, v: ng.at(x)[index].set(v), x, v)
    np.testing.assert_array_equal(out, expected)
    seed = data.draw(float_arrays(x.shape), label="seed")
    g_x, g_v = back(seed)
    overwritten = _hits(x.shape, index) > 0
    np.testing.assert_array_equal(g_x, np.where(overwritten, 0.0, seed))
    np.testing.assert_allclose(g_v, _v_grad(seed, index, v), rtol=1e-13)
    assert np.shape(g_v) == np.shape(v)
    check_grads(lambda x, v: ng.at(x)[index].set(v), x, v)
    check_grads(lambda x: ng.at(x)[index].set(v), x)  # v plain, x traced


def test_at_leaves_its_input_alone() -> None:
    x = np.arange(4.0)
    y = ng.at(x)[1:3].set(7.0)
    z = ng.at(x)[np.array([0, 0])].add(1.0)
    np.testing.assert_array_equal(x, np.arange(4.0))
    np.testing.assert_array_equal(y, [0.0, 7.0, 7.0, 3.0])
    np.testing.assert_array_equal(z, [2.0, 1.0, 2.0, 3.0])


def test_at_v_broadcasts() -> None:
    x = np.zeros((3, 4))
    v = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ng.at(x)[[0, 2]].set(v), [[1, 2, 3, 4], [0, 0, 0, 0], [1, 2, 3, 4]])
    np.testing.assert_array_equal(ng.at(x)[[0, 0]].add(v), [[2, 4, 6, 8], [0, 0, 0, 0], [0, 0, 0, 0]])
    g = ng.grad(lambda v: np.sum(ng.at(x)[[0, 0]].add(v) * np.arange(12.0).reshape(3, 4)))(v)
    np.testing.assert_array_equal(g, 2 * np.arange(4.0))
    g = ng.grad(lambda v: np.sum(ng.at(x)[:, 1:3].set(v[:, None]) ** 2), argnums=0)(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [4.0, 8.0, 12.0])


@pytest.mark.parametrize(
    "index",
    [
        np.array([0, 0]),
        np.array([1, -2]),  # the same element, once negative
        ([0, 1, 0], [2, 1, 2]),
        (slice(None), [3, 3]),
        (np.array([[0], [0]]), np.array([1, 2])),  # repeats through broadcasting
        [2, 0, 2],
    ],
    ids=["repeat", "negative-alias", "pairs", "after-slice", "broadcast", "list"],
)
def test_at_set_refuses_an_index_selecting_an_element_twice(index: Any) -> None:
    x0 = np.arange(12.0).reshape(3, 4)
    with pytest.raises(OpIndexError, match="more than once"):
        ng.at(x0)[index].set(1.0)
    _assert_refused(x0, lambda y, s: ng.at(y)[index].set(1.0), "more than once")
    _assert_refused(x0, lambda y, s: ng.at(np.zeros((3, 4)))[index].set(s), "more than once")
    # .add is the operation for repeats.
    expected = x0.copy()
    np.add.at(expected, index, 1.0)
    np.testing.assert_array_equal(ng.at(x0)[index].add(1.0), expected)
