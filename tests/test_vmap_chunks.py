"""``ng.vmap(..., chunk_size=k)``: the unchunked call's result, bit for bit, whatever the chunks.

Every chunk size (1, one that divides the batch, ones that do not, the batch itself, more
than the batch) is crossed with every kind of axis (``in_axes`` and ``out_axes`` of 0, 1,
-1, ``None``, structure prefixes, a different axis per leaf) and every kind of result
(arrays, dicts, attrs records, tuples, Python numbers, 0-d arrays). The oracle is a Python
loop over the examples of the function run eagerly on plain numpy, its results stacked
with ``np.stack`` along each leaf's out axis by this file's own small tree walk (it shares
no code with nodegrad's structures); the chunked call must equal it and the unchunked call
bit for bit. Nesting, gradients inside and outside, and closures are covered too, and the
memory a chunked call needs is bounded by tracemalloc (numpy reports its buffers to it).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ShapeError, StructureError

SIZE = 6
CHUNKS = [1, 2, 3, 4, 5, 6, 10]  # one; dividing 6; not dividing; the batch; larger than it
RNG = np.random.default_rng(35)
W = RNG.standard_normal((3, 3))  # read by closures


@attrs.frozen
class Pair:
    a: Any
    b: Any
    tag: str = ng.field(static=True, default="pair")


# -- the oracle: a loop over examples, stacked by a tree walk of its own --------------------------


def _map(value: Any, spec: Any, leaf: Callable[[Any, Any], Any]) -> Any:
    """``leaf(value_leaf, axis)`` over ``value``, ``spec`` a prefix of it (an int or None
    standing for everything below it)."""
    if spec is None or isinstance(spec, int):
        if isinstance(value, dict):
            return {k: _map(v, spec, leaf) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return type(value)(_map(v, spec, leaf) for v in value)
        if isinstance(value, Pair):
            return Pair(_map(value.a, spec, leaf), _map(value.b, spec, leaf), value.tag)
        if isinstance(value, Scaled):
            return Scaled(_map(value.w, spec, leaf), leaf(value.scale, None))  # static: never stacked
        return leaf(value, spec)
    if isinstance(spec, dict):
        assert isinstance(value, dict) and value.keys() == spec.keys()
        return {k: _map(value[k], spec[k], leaf) for k in value}
    if isinstance(spec, Pair):
        return Pair(_map(value.a, spec.a, leaf), _map(value.b, spec.b, leaf), value.tag)
    assert isinstance(spec, tuple | list) and len(spec) == len(value)
    return type(value)(_map(v, s, leaf) for v, s in zip(value, spec, strict=True))


def _example(args: tuple[Any, ...], in_axes: tuple[Any, ...], b: int) -> tuple[Any, ...]:
    take = lambda leaf, axis: leaf if axis is None or not isinstance(leaf, np.ndarray) else np.take(leaf, b, axis)
    return tuple(_map(a, spec, take) for a, spec in zip(args, in_axes, strict=True))


def _loop(fun: Callable[..., Any], args: tuple[Any, ...], in_axes: tuple[Any, ...], out_axes: Any) -> Any:
    results = [fun(*_example(args, in_axes, b)) for b in range(SIZE)]
    flat = [_leaves(r) for r in results]
    column = iter(zip(*flat, strict=True))

    def stacked(first: Any, axis: Any) -> Any:
        values = next(column)
        if axis is None or isinstance(first, str):
            assert all(np.array_equal(v, first) for v in values), "the loop's unbatched result differs"
            return first
        return np.stack([np.asarray(v) for v in values], axis=axis)

    return _map(results[0], out_axes, stacked)


def _leaves(value: Any) -> list[Any]:
    found: list[Any] = []
    _map(value, 0, lambda leaf, _: found.append(leaf))
    return found


def _assert_identical(got: Any, expected: Any) -> None:
    """The same structure, and every leaf the same type, dtype, shape and bits."""
    assert type(got) is type(expected), (type(got), type(expected))
    got_leaves, expected_leaves = _leaves(got), _leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves, strict=True):
        assert type(g) is type(e), (type(g), type(e))
        if isinstance(e, np.ndarray):
            assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
            np.testing.assert_array_equal(g, e, strict=True)
        else:
            assert g == e


def _check(fun: Callable[..., Any], args: tuple[Any, ...], in_axes: tuple[Any, ...], out_axes: Any, chunk: int) -> None:
    chunked = ng.vmap(fun, in_axes=in_axes, out_axes=out_axes, chunk_size=chunk)(*args)
    unchunked = ng.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    _assert_identical(chunked, unchunked)
    _assert_identical(chunked, _loop(fun, args, in_axes, out_axes))


def _batch_of(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """A batch of ``SIZE`` examples of ``shape``, the examples along ``axis``."""
    return np.moveaxis(RNG.standard_normal((SIZE, *shape)), 0, axis)


# -- int axes: every in axis x every out axis x every chunk size ------------------------------------


def _outer(x: Any) -> Any:
    """A (3, 4) result per example of shape (4,), reading the closure ``W``."""
    return np.outer(np.tanh(W[:, 0] * x[0]), x) + 1.0


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("in_axis", [0, 1, -1])
@pytest.mark.parametrize("out_axis", [0, 1, 2, -1, -2, -3])
def test_int_axes(chunk: int, in_axis: int, out_axis: int) -> None:
    x = _batch_of((4, 5), in_axis) if in_axis else _batch_of((4,), 0)
    fun = (lambda x: _outer(x[:, 0])) if in_axis else _outer  # an example of shape (4, 5) along 1 or -1
    _check(fun, (x,), (in_axis,), out_axis, chunk)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("out_axis", [0, -1])
def test_zero_dimensional_and_python_number_results(chunk: int, out_axis: int) -> None:
    x = _batch_of((4,), 0)
    fun = lambda x, c: (np.sum(np.sin(x) * c), 1.5, np.float64(c), 3)
    _check(fun, (x, 0.25), (0, None), out_axis, chunk)
    _check(fun, (x, 0.25), (0, None), (out_axis, None, out_axis, None), chunk)


# -- structures: arguments, results and per-leaf axes ---------------------------------------------


def _dict_result(p: Any, x: Any) -> Any:
    h = np.tanh(p["w"] * x) + p["c"]
    return {"h": np.outer(h, x), "norm": np.sqrt(np.sum(h * h)), "c": np.exp(p["c"]), "name": "out"}


def _record_result(x: Any, y: Any) -> Any:
    return Pair(np.outer(x, y), (np.cos(x), np.sum(y)), "made")


def _tuple_result(x: Any, s: Any) -> Any:
    return x * s, np.sum(x), s, 2.5


@attrs.frozen
class Scaled:
    w: Any
    scale: Any = ng.field(static=True, factory=lambda: np.array([2.0, -1.0, 3.0]))  # an array, never batched


# name -> (function, argument shapes and axes, in_axes, out_axes)
STRUCTURED: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], tuple[Any, ...], Any]] = {
    "dict, per-leaf out axes": (
        _dict_result,
        lambda: ({"w": _batch_of((4,), 1), "c": RNG.standard_normal(4)}, _batch_of((4,), 0)),
        ({"w": 1, "c": None}, 0),
        {"h": -1, "norm": 0, "c": None, "name": None},
    ),
    "dict, one out axis": (
        _dict_result,
        lambda: ({"w": _batch_of((4,), -1), "c": RNG.standard_normal(4)}, _batch_of((4,), 0)),
        ({"w": -1, "c": None}, 0),
        {"h": 1, "norm": -1, "c": None, "name": None},
    ),
    "record, prefix out axes": (
        _record_result,
        lambda: (_batch_of((3,), 0), _batch_of((2,), 1)),
        (0, 1),
        Pair(-1, (1, 0)),
    ),
    "record, one out axis": (
        _record_result,
        lambda: (_batch_of((3,), 0), _batch_of((2,), -1)),
        (0, -1),
        -1,
    ),
    "record with a static array field": (
        lambda x: Scaled(np.sin(x) * 2),
        lambda: (_batch_of((3,), 0),),
        (0,),
        -1,
    ),
    "tuple, per-leaf out axes": (
        _tuple_result,
        lambda: (_batch_of((2, 3), 2), RNG.standard_normal(3)),
        (2, None),
        (1, 0, None, -1),
    ),
    "tuple, a prefix": (
        lambda p: ((p[0] * 2, np.sum(p[1])), p[1]),
        lambda: ((_batch_of((3, 2), 0), _batch_of((2,), -1)),),
        ((0, -1),),
        ((-1, 0), 1),
    ),
}


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("case", list(STRUCTURED))
def test_structured_arguments_and_results(chunk: int, case: str) -> None:
    fun, make_args, in_axes, out_axes = STRUCTURED[case]
    _check(fun, make_args(), in_axes, out_axes, chunk)


# -- nesting, gradients, closures -----------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 5])
@pytest.mark.parametrize("out_axis", [0, 1, -1])
def test_nested_vmap_with_chunks_and_a_closure_over_the_outer_example(chunk: int, out_axis: int) -> None:
    xs, ys = _batch_of((3,), 0), RNG.standard_normal((5, 3))

    def outer(x: Any) -> Any:
        inner = ng.vmap(lambda y: np.sin(x * y) + np.sum(x), out_axes=out_axis, chunk_size=2)  # closes over x
        return inner(ys)

    got = ng.vmap(outer, out_axes=-1, chunk_size=chunk)(xs)
    expected = np.stack([np.stack([np.sin(x * y) + np.sum(x) for y in ys], axis=out_axis) for x in xs], axis=-1)
    np.testing.assert_array_equal(got, expected, strict=True)
    np.testing.assert_array_equal(got, ng.vmap(outer, out_axes=-1)(xs), strict=True)


def _loss(p: Any, x: Any, y: Any) -> Any:
    return np.sum((np.tanh(x @ p["w"] + p["b"]) - y) ** 2)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("out_axes", [0, -1, {"w": 1, "b": -1}])
def test_per_example_gradients(chunk: int, out_axes: Any) -> None:
    p = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    x, y = _batch_of((3,), 0), _batch_of((2,), 1)
    per_example = ng.vmap(ng.grad(_loss), in_axes=(None, 0, 1), out_axes=out_axes, chunk_size=chunk)(p, x, y)
    unchunked = ng.vmap(ng.grad(_loss), in_axes=(None, 0, 1), out_axes=out_axes)(p, x, y)
    _assert_identical(per_example, unchunked)
    _assert_identical(per_example, _loop(ng.grad(_loss), (p, x, y), (None, 0, 1), out_axes))


@pytest.mark.parametrize("chunk", [1, 4, 6])
@pytest.mark.parametrize("out_axis", [0, 1, -1])
def test_gradient_through_a_chunked_vmap_with_a_closure_over_the_differentiated_value(
    chunk: int, out_axis: int
) -> None:
    xs = _batch_of((4,), 0)
    weights = RNG.standard_normal((3, 4))

    def total(w: Any, vmapped: Callable[..., Any]) -> Any:
        out = vmapped(lambda x: np.outer(np.tanh(w @ x), x))(xs)  # w reached by the closure
        return np.sum(out * np.arange(out.size).reshape(out.shape))  # sees where each example went

    def loop(w: Any) -> Any:
        out = np.stack([np.outer(np.tanh(w @ x), x) for x in xs], axis=out_axis)
        return np.sum(out * np.arange(out.size).reshape(out.shape))

    chunked = ng.grad(lambda w: total(w, lambda f: ng.vmap(f, out_axes=out_axis, chunk_size=chunk)))(weights)
    unchunked = ng.grad(lambda w: total(w, lambda f: ng.vmap(f, out_axes=out_axis)))(weights)
    # The gradient of ``w`` sums every example's part: chunk by chunk, then over the chunks,
    # which rounds differently from one sum over the batch (so not bit for bit).
    np.testing.assert_allclose(chunked, unchunked, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(chunked, ng.grad(loop)(weights), rtol=1e-12, atol=1e-12)


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4])
def test_an_out_axis_out_of_range_is_refused_as_unchunked(chunk: int) -> None:
    x = _batch_of((4,), 0)
    for options in ({}, {"chunk_size": chunk}):
        with pytest.raises(ShapeError, match="out_axes 2 is out of range"):
            ng.vmap(lambda x: x * 2, out_axes=2, **options)(x)
        with pytest.raises(StructureError, match="out_axes is None"):
            ng.vmap(lambda x: x * 2, out_axes=None, **options)(x)


# -- memory: each chunk is written into the result as it is made ---------------------------------


def _traced_peak(call: Callable[[], Any]) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, sum(leaf.nbytes for leaf in _leaves(result))


@pytest.mark.parametrize(
    "fun",
    [
        pytest.param(lambda x: np.outer(np.tanh(x), x), id="the result dominates"),
        pytest.param(lambda x: {"outer": np.outer(np.tanh(x), x), "x": x}, id="a dict result dominates"),
        pytest.param(lambda x: np.sum(np.outer(np.tanh(x), x) ** 2), id="the work dominates"),
    ],
)
def test_a_chunked_peak_is_the_result_and_one_chunks_work(fun: Callable[..., Any]) -> None:
    x, chunks = RNG.standard_normal((200, 100)), 4  # a 16 MB result where it dominates
    peak, result = _traced_peak(lambda: ng.vmap(fun)(x))
    chunked_peak, chunked_result = _traced_peak(lambda: ng.vmap(fun, chunk_size=len(x) // chunks)(x))
    assert chunked_result == result
    # One chunk's share of everything the unchunked call held (its result included), with
    # room for what does not shrink with the chunk (the tape's Python objects).
    bound = result + 1.25 * peak / chunks + 256 * 1024
    assert chunked_peak <= bound, f"peak {chunked_peak:,} B, bound {bound:,.0f} B (unchunked {peak:,} B)"


def test_chunks_of_different_dtypes_are_joined_as_concatenate_joins_them() -> None:
    # A function whose result type changes from call to call (it keeps state): no chunk is
    # cast into the first chunk's dtype.
    calls: list[int] = []

    def stateful(x: Any) -> Any:
        calls.append(1)
        return (x * 2).astype(np.float32) if len(calls) == 1 else x * 2

    x = _batch_of((3,), 0)
    got = ng.vmap(stateful, out_axes=-1, chunk_size=4)(x)
    expected = np.concatenate([(x[:4] * 2).astype(np.float32).T, (x[4:] * 2).T], axis=-1)
    np.testing.assert_array_equal(got, expected, strict=True)
