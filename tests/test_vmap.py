"""``ng.vmap`` itself: axes, structures, options, errors and nesting, against a Python loop.

Every batched result here is compared with the same function run once per example in a
plain Python loop (:func:`_loop`), the examples taken from the batched arguments along
their ``in_axes`` and the results stacked along their ``out_axes``, in float64 to 1e-12.
The op families' batching rules are tested op by op in ``tests/ops/test_vmap_registry.py``;
the functions here use a few common ops and are about the transform.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple
from unittest import mock

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.errors import ArgumentError, BatchingError, LeakedTracerError, NodegradError, ShapeError, StructureError
from nodegrad.ops import batching

TOLERANCE = {"rtol": 1e-12, "atol": 1e-12}
RNG = np.random.default_rng(20240611)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# -- the reference: a loop over examples --------------------------------------------------------


def _is_number_or_array(leaf: Any) -> bool:
    return isinstance(leaf, np.ndarray | np.generic | float | int | complex) and not isinstance(leaf, bool)


def _stacked(results: list[Any], out_axes: Any = 0) -> Any:
    """Per-example results stacked leaf by leaf, each leaf along its axis of ``out_axes``
    (an int, or a structure prefix of the result given as a function of the key path);
    static leaves, strings and ``None`` are the same in every example and kept as they are."""
    paths: list[str] = []
    first, treedef = flatten(results[0], paths, "")
    rows = [flatten(r)[0] for r in results]
    statics = treedef.static_leaves()
    stacked = []
    for k, (leaf, path, static) in enumerate(zip(first, paths, statics, strict=True)):
        axis = out_axes(path) if callable(out_axes) else out_axes
        if static or not _is_number_or_array(leaf) or axis is None:
            for row in rows:
                assert _equal(row[k], leaf), (
                    f"the loop's results differ at {path}, which should not depend on the example"
                )
            stacked.append(leaf)
        else:
            stacked.append(np.stack([np.asarray(row[k]) for row in rows], axis=axis))
    return stacked[0] if treedef is LEAF else treedef.unflatten(stacked)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return bool(a == b)


def _example(value: Any, axis: int | None, b: int) -> Any:
    return value if axis is None else np.take(value, b, axis=axis)


def _loop(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    in_axes: tuple[Any, ...],
    size: int,
    out_axes: Any = 0,
    **kwargs: Any,
) -> Any:
    """``fun`` run once per example. ``in_axes`` has one entry per argument: an int or
    ``None`` for an array, or a function ``(value, b) -> example b of value`` for a
    structured argument; keyword arguments are taken along axis 0."""
    results = []
    for b in range(size):
        example = [
            axis(a, b) if callable(axis) else _example(a, axis, b) for a, axis in zip(args, in_axes, strict=True)
        ]
        results.append(fun(*example, **{key: _example(v, 0, b) for key, v in kwargs.items()}))
    return _stacked(results, out_axes)


def assert_same(got: Any, expected: Any, tolerance: dict[str, float] | None = None) -> None:
    """The same structure (types, key paths, key order), the same static leaves, and
    array leaves of the same shape and dtype, equal to ``tolerance`` (1e-12 by default;
    ``{}`` for bit for bit)."""
    tolerance = TOLERANCE if tolerance is None else tolerance
    got_paths: list[str] = []
    expected_paths: list[str] = []
    got_leaves, _ = flatten(got, got_paths)
    expected_leaves, _ = flatten(expected, expected_paths)
    assert type(got) is type(expected), f"a {type(got).__name__}, the loop's is a {type(expected).__name__}"
    assert got_paths == expected_paths, f"{got_paths} against {expected_paths}"
    for path, g, e in zip(got_paths, got_leaves, expected_leaves, strict=True):
        assert type(g) is not ng.Traced, f"{path} is still traced"
        assert "Batched" not in type(g).__name__, f"{path} is a batched value, returned from vmap"
        if _is_number_or_array(e):
            assert np.shape(g) == np.shape(e), f"{path}: shape {np.shape(g)}, the loop's {np.shape(e)}"
            assert np.result_type(g) == np.result_type(e), (
                f"{path}: {np.result_type(g)}, the loop's {np.result_type(e)}"
            )
            if tolerance:
                np.testing.assert_allclose(g, e, **tolerance, err_msg=path)
            else:
                np.testing.assert_array_equal(g, e, err_msg=path)
        else:
            assert _equal(g, e), f"{path}: {g!r}, the loop's {e!r}"


# -- in_axes and out_axes as ints, None, negative, tuples ------------------------------------------

M = _normal(5, 4)


def _mixing(x: Any) -> Any:
    """A function of one example of shape (5,) or (k, 5): not elementwise, so an axis
    taken wrongly shows."""
    return np.tanh(x) @ M + np.sum(x**2) * 0.5


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_in_axes_int_and_negative(axis: int) -> None:
    x = _normal(3, 2, 5) if axis in (0, -3) else _normal(2, 3, 5) if axis in (1, -2) else _normal(2, 5, 3)
    got = ng.vmap(_mixing, in_axes=axis)(x)
    assert_same(got, _loop(_mixing, (x,), (axis,), 3))


def test_one_int_in_axes_applies_to_every_argument() -> None:
    x, y = _normal(5, 4), _normal(2, 4)
    f = lambda x, y: np.outer(np.sin(x), y) + np.sum(x) * y[0]
    assert_same(ng.vmap(f, in_axes=1)(x, y), _loop(f, (x, y), (1, 1), 4))


def test_in_axes_tuple_with_none_and_negative_entries() -> None:
    x, w, z = _normal(5, 3), _normal(5, 4), _normal(4, 3)

    def f(x: Any, w: Any, z: Any) -> Any:
        return np.exp(0.1 * x) @ w * z + np.sum(w) * z

    got = ng.vmap(f, in_axes=(1, None, -1))(x, w, z)
    assert_same(got, _loop(f, (x, w, z), (1, None, -1), 3))


@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -2, -3])
def test_out_axes_int_and_negative(out_axes: int) -> None:
    x = _normal(3, 5)
    f = lambda x: np.outer(np.sin(x), x[:2]) * np.cos(x[0])  # (5, 2) per example
    got = ng.vmap(f, out_axes=out_axes)(x)
    assert got.shape == np.moveaxis(np.zeros((3, 5, 2)), 0, out_axes).shape
    assert_same(got, _loop(f, (x,), (0,), 3, out_axes=out_axes))


def test_out_axes_tuple_with_none_for_a_result_the_same_in_every_example() -> None:
    x, w = _normal(4, 3), _normal(3, 2)

    def f(x: Any, w: Any) -> Any:
        return np.sin(x) @ w, np.sum(w**2), x * 2.0

    got = ng.vmap(f, in_axes=(0, None), out_axes=(1, None, -1))(x, w)
    assert_same(got, _loop(f, (x, w), (0, None), 4, out_axes=lambda p: {"[0]": 1, "[1]": None, "[2]": -1}[p]))
    assert np.shape(got[1]) == ()  # not repeated


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_a_result_the_same_in_every_example_is_repeated_along_its_out_axis(out_axes: int) -> None:
    w, x = _normal(2, 3), _normal(4)
    got = ng.vmap(lambda x, w: (np.cos(w), 2.5, x), in_axes=(0, None), out_axes=(out_axes, 0, 0))(x, w)
    np.testing.assert_array_equal(got[0], np.stack([np.cos(w)] * 4, axis=out_axes))
    np.testing.assert_array_equal(got[1], np.full(4, 2.5))
    np.testing.assert_array_equal(got[2], x)


# -- structure prefixes ---------------------------------------------------------------------------


def test_dict_prefix_with_mixed_key_types_in_insertion_order() -> None:
    arg = {"w": _normal(5, 2), 7: _normal(5, 4), ("k", 2): _normal(4, 3)}
    in_axes = ({7: 1, "w": None, ("k", 2): 0},)  # the prefix's own order does not matter

    def f(p: Any) -> Any:
        return {("k", 2): p[("k", 2)] * np.sum(p[7]), "w": np.sin(p[7]) @ p["w"], 0: p["w"][0] + p[7][0]}

    got = ng.vmap(f, in_axes=in_axes, out_axes={0: 0, "w": -1, ("k", 2): 1})(arg)
    assert list(got) == [("k", 2), "w", 0], "the result's keys are not in the function's insertion order"

    def example(p: Any, b: int) -> Any:
        return {"w": p["w"], 7: p[7][:, b], ("k", 2): p[("k", 2)][b]}

    axes = {"[('k', 2)]": 1, "['w']": -1, "[0]": 0}
    assert_same(got, _loop(f, (arg,), (example,), 4, out_axes=axes.__getitem__))


@attrs.frozen
class Model:
    w: np.ndarray
    b: np.ndarray
    name: str = ng.field(static=True, default="model")
    scale: np.ndarray = ng.field(static=True, factory=lambda: np.array([2.0, -1.0]))


def _model_fn(m: Model, x: Any) -> Any:
    assert m.name == "model" and m.scale.shape == (2,), "a static field was batched"
    return np.tanh(x @ m.w + m.b) * m.scale


def test_attrs_record_batched_whole_leaves_its_static_fields_alone() -> None:
    m = Model(_normal(3, 3, 2), _normal(3, 2))
    x = _normal(3)
    got = ng.vmap(_model_fn, in_axes=(0, None))(m, x)
    expected = _loop(_model_fn, (m, x), (lambda m, b: Model(m.w[b], m.b[b]), None), 3)
    assert_same(got, expected)


def test_attrs_record_prefix_with_none_in_its_static_fields() -> None:
    m = Model(_normal(3, 2), _normal(4, 2))
    x = _normal(4, 3)
    in_axes = (Model(None, 0, None, None), 0)  # type: ignore[arg-type]
    got = ng.vmap(_model_fn, in_axes=in_axes)(m, x)
    assert_same(got, _loop(_model_fn, (m, x), (lambda m, b: Model(m.w, m.b[b]), 0), 4))


def test_attrs_record_prefix_keeping_its_static_fields() -> None:
    # The natural prefix: the record made with its static fields at their defaults. Those
    # fields are part of the structure, not axes (they are never batched).
    m = Model(_normal(3, 2), _normal(4, 2))
    x = _normal(4, 3)
    got = ng.vmap(_model_fn, in_axes=(Model(None, 0), 0))(m, x)  # type: ignore[arg-type]
    assert_same(got, _loop(_model_fn, (m, x), (lambda m, b: Model(m.w, m.b[b]), 0), 4))


def test_a_returned_record_keeps_its_static_fields() -> None:
    x = _normal(3, 2)
    f = lambda x: Model(np.sin(x), x * 2.0)
    got = ng.vmap(f)(x)
    assert got.name == "model" and got.scale.shape == (2,), f"the result's static fields were batched: {got}"
    assert_same(got, _loop(f, (x,), (0,), 3))


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    width: int
    bias: float
    mask: np.ndarray = ng.dataclass_field(static=True, default_factory=lambda: np.array([1.0, 0.0, 1.0]))


class Pair(NamedTuple):
    u: Any
    v: Any


def test_dataclass_named_tuple_list_and_nested_prefixes() -> None:
    layer = Layer(_normal(2, 4, 3), width=3, bias=0.5)
    pair = Pair(_normal(4, 2), [_normal(3), {"q": _normal(3, 4), "r": "tag"}])
    lst = [_normal(4), 1.5, None]

    def f(layer: Layer, pair: Pair, lst: list[Any]) -> Any:
        assert layer.width == 3 and type(layer.width) is int and pair.v[1]["r"] == "tag" and lst[2] is None
        hidden = np.sin(pair.u @ layer.w * layer.mask) + layer.bias
        return Pair(hidden * pair.v[1]["q"] + lst[0], [np.sum(pair.v[0]) * lst[1], "done"])

    in_axes = (Layer(w=1, width=None, bias=None, mask=None), Pair(0, [None, {"q": 1, "r": None}]), [0, None, None])  # type: ignore[arg-type]
    got = ng.vmap(f, in_axes=in_axes)(layer, pair, lst)

    def examples(b: int) -> tuple[Any, ...]:
        return (
            Layer(layer.w[:, b], 3, 0.5),
            Pair(pair.u[b], [pair.v[0], {"q": pair.v[1]["q"][:, b], "r": "tag"}]),
            [lst[0][b], 1.5, None],
        )

    expected = _stacked([f(*examples(b)) for b in range(4)])
    assert_same(got, expected)
    assert got.v[1] == "done"


def test_leaves_that_are_not_arrays_and_static_fields_pass_through() -> None:
    arg = {"x": _normal(3, 2), "n": 4, "flag": True, "tag": "t", "none": None, "layer": Layer(_normal(3, 2), 2, 0.25)}
    seen: list[Any] = []

    def f(p: Any) -> Any:
        seen.append((p["n"], p["flag"], p["tag"], p["none"], p["layer"].width, p["layer"].mask))
        return p["x"] * p["n"] + p["layer"].w * p["layer"].mask[:2]

    in_axes = ({"x": 0, "n": 0, "flag": 0, "tag": 0, "none": 0, "layer": Layer(0, None, None, None)},)  # type: ignore[arg-type]
    got = ng.vmap(f, in_axes=in_axes)(arg)
    n, flag, tag, none, width, mask = seen[0]
    assert (n, flag, tag, none, width) == (4, True, "t", None, 2) and type(n) is int
    np.testing.assert_array_equal(mask, [1.0, 0.0, 1.0])
    expected = np.stack([arg["x"][b] * 4 + arg["layer"].w[b] * np.array([1.0, 0.0]) for b in range(3)])
    assert_same(got, expected)


# -- keyword arguments, Python scalars, axis_size ---------------------------------------------------


def test_keyword_arguments_are_batched_along_axis_0() -> None:
    x, scale, shift = _normal(5, 3), _normal(3, 5), {"a": _normal(3), "b": _normal(3, 2)}

    def f(x: Any, *, scale: Any, shift: Any) -> Any:
        return np.sin(x) * scale + shift["a"] + np.sum(shift["b"])

    got = ng.vmap(f, in_axes=(1,))(x, scale=scale, shift=shift)
    expected = np.stack([f(x[:, b], scale=scale[b], shift={"a": shift["a"][b], "b": shift["b"][b]}) for b in range(3)])
    assert_same(got, expected)


def test_python_scalars_as_arguments_and_results() -> None:
    x = _normal(4, 3)
    f = lambda x, c, k: (np.sum(x * c) ** k, 1.5, c)
    got = ng.vmap(f, in_axes=(0, None, None))(x, 0.25, 2)
    assert_same(got, _loop(f, (x, 0.25, 2), (0, None, None), 4))


def test_a_python_number_given_a_batch_axis_is_an_error_naming_it() -> None:
    with pytest.raises(ShapeError, match=r"args\[1\] is a number \(0\.25\).*in_axes None"):
        ng.vmap(lambda x, c: x * c)(_normal(4, 3), 0.25)


def test_axis_size_without_a_batched_argument_repeats_the_result() -> None:
    w = _normal(3)
    f = lambda w: {"a": np.sin(w), "b": np.sum(w)}
    got = ng.vmap(f, in_axes=None, axis_size=4, out_axes={"a": 1, "b": 0})(w)
    assert_same(got, _loop(f, (w,), (None,), 4, out_axes=lambda p: {"['a']": 1, "['b']": 0}[p]))
    got_kw = ng.vmap(lambda: np.cos(w), in_axes=(), axis_size=2)()
    np.testing.assert_array_equal(got_kw, np.stack([np.cos(w)] * 2))


def test_axis_size_agreeing_with_the_batched_arguments() -> None:
    x = _normal(4, 3)
    assert_same(ng.vmap(_mixing_small, axis_size=4)(x), _loop(_mixing_small, (x,), (0,), 4))


def _mixing_small(x: Any) -> Any:
    return np.sin(x) * np.sum(x**2)


# -- chunk_size ------------------------------------------------------------------------------------


def _structured(p: Any, x: Any, w: Any, *, k: Any) -> Any:
    h = np.tanh(x * p["scale"] + w) * k
    return {"h": h, "norm": np.sqrt(np.sum(h**2)), "w": np.exp(w), "tag": "out"}


_STRUCTURED_OUT = {"h": 1, "norm": 0, "w": None, "tag": None}


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 6, 7, 100])
def test_chunk_size_gives_the_unchunked_result(chunk_size: int) -> None:
    p = {"scale": _normal(7, 3), "name": "p"}
    x, w, k = _normal(3, 7), _normal(3), _normal(7)
    args = (p, x, w)
    in_axes = ({"scale": 0, "name": None}, 1, None)
    unchunked = ng.vmap(_structured, in_axes=in_axes, out_axes=_STRUCTURED_OUT)(*args, k=k)
    chunked = ng.vmap(_structured, in_axes=in_axes, out_axes=_STRUCTURED_OUT, chunk_size=chunk_size)(*args, k=k)
    assert_same(chunked, unchunked, {})  # bit for bit
    expected = [_structured({"scale": p["scale"][b], "name": "p"}, x[:, b], w, k=k[b]) for b in range(7)]
    axes = {"['h']": 1, "['norm']": 0, "['w']": None, "['tag']": None}
    assert_same(chunked, _stacked(expected, axes.__getitem__))


@pytest.mark.parametrize("chunk_size", [1, 2, 4, 5])
def test_chunk_size_of_per_example_gradients(chunk_size: int) -> None:
    m = Model(_normal(3, 2), _normal(2))
    x, y = _normal(5, 3), _normal(5, 2)
    loss = lambda m, x, y: np.sum((_model_fn(m, x) - y) ** 2)
    per_example = ng.vmap(ng.grad(loss), in_axes=(None, 0, 0), chunk_size=chunk_size)(m, x, y)
    assert_same(per_example, ng.vmap(ng.grad(loss), in_axes=(None, 0, 0))(m, x, y))
    assert_same(per_example, _loop(ng.grad(loss), (m, x, y), (None, 0, 0), 5))


# -- errors ----------------------------------------------------------------------------------------


def test_differing_batch_sizes_name_every_batched_path_and_size() -> None:
    f = lambda x, p, **kw: x
    with pytest.raises(ShapeError) as info:
        ng.vmap(f, in_axes=(0, {"a": 1, "b": 0}))(_normal(3, 2), {"a": _normal(2, 3), "b": _normal(4)}, k=_normal(3))
    message = str(info.value)
    for fragment in ("args[0]: 3", "args[1]['a']: 3", "args[1]['b']: 4", "kwargs['k']: 3", "different numbers"):
        assert fragment in message, f"{fragment!r} missing from: {message}"
    with pytest.raises(ShapeError, match=r"axis_size: 5.*args\[0\]: 3"):
        ng.vmap(lambda x: x, axis_size=5)(_normal(3, 2))


def test_in_axes_not_matching_the_structure() -> None:
    arg = {"a": _normal(3), "b": _normal(3)}
    with pytest.raises(StructureError, match=r"args\[0\]\['b'\]"):
        ng.vmap(lambda p: p["a"], in_axes=({"a": 0},))(arg)
    with pytest.raises(StructureError, match=r"args\[0\]\['c'\]"):
        ng.vmap(lambda p: p["a"], in_axes=({"a": 0, "b": 0, "c": 0},))(arg)
    with pytest.raises(StructureError, match=r"2 entries for 1 positional"):
        ng.vmap(lambda p: p["a"], in_axes=(0, 0))(arg)
    with pytest.raises(StructureError, match=r"the result\['y'\]"):
        ng.vmap(lambda p: {"x": p["a"], "y": p["b"]}, out_axes={"x": 0})(arg)
    with pytest.raises(ArgumentError, match="got a list"):
        ng.vmap(lambda p: p["a"], in_axes=[0])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="in_axes holds 'x'"):
        ng.vmap(lambda p: p["a"], in_axes=({"a": "x", "b": 0},))


def test_an_axis_out_of_range() -> None:
    with pytest.raises(ShapeError, match=r"in_axes 2 is out of range for args\[0\]\['w'\], of shape \(3, 4\)"):
        ng.vmap(lambda p: p["w"], in_axes=({"w": 2},))({"w": _normal(3, 4)})
    with pytest.raises(ShapeError, match=r"in_axes -3 is out of range for args\[1\]"):
        ng.vmap(lambda x, y: x + y, in_axes=(0, -3))(_normal(4, 2), _normal(2, 4))
    with pytest.raises(ShapeError, match=r"out_axes 3 is out of range for the result\['k'\].*\(2,\)"):
        ng.vmap(lambda x: {"k": x}, out_axes={"k": 3})(_normal(3, 2))


def test_out_axes_none_on_a_batched_result() -> None:
    with pytest.raises(StructureError, match=r"out_axes is None at the result\[1\].*differs from example to example"):
        ng.vmap(lambda x: (np.sum(x), x * 2), out_axes=(0, None))(_normal(3, 2))


@pytest.mark.parametrize(
    "use",
    [
        lambda x: x if x[0] > 0 else -x,
        lambda x: float(x[0]),
        lambda x: int(x[0]),
        lambda x: np.asarray(x),
        lambda x: x.item(),
        lambda x: range(x[0]),
    ],
    ids=["if", "float", "int", "asarray", "item", "index"],
)
def test_a_python_value_of_a_batched_value_is_a_batching_error(use: Callable[[Any], Any]) -> None:
    with pytest.raises(BatchingError, match=r"3 examples of .*inside ng\.vmap") as info:
        ng.vmap(use)(_normal(3, 2))
    assert isinstance(info.value, NodegradError)


def test_a_leaked_batched_value_used_after_vmap_returned() -> None:
    kept: list[Any] = []

    def keeps(x: Any) -> Any:
        kept.append(x * 2.0)
        return np.sum(x)

    x = _normal(3, 2)
    ng.vmap(keeps)(x)
    leaked = kept[0]
    for use in (np.sin, lambda t: t * 3.0, lambda t: t[0], ng.sum, bool, float):
        with pytest.raises(LeakedTracerError, match="has already returned"):
            use(leaked)
    with pytest.raises(LeakedTracerError, match="has already returned"):
        ng.vmap(lambda y: y + leaked)(x)  # closed over by a new vmap
    with pytest.raises(LeakedTracerError, match="has already returned"):
        ng.grad(lambda y: np.sum(y * leaked))(x[0])  # closed over by grad


def test_a_leaked_batched_value_given_to_a_new_vmap_is_an_error() -> None:
    kept: list[Any] = []
    ng.vmap(lambda x: kept.append(x) or np.sum(x))(_normal(3, 2))
    with pytest.raises(LeakedTracerError, match="has already returned"):
        ng.vmap(lambda y: y)(kept[0])


# -- nesting with vmap and every other transform -------------------------------------------------


def test_vmap_of_vmap() -> None:
    x, y = _normal(4, 3), _normal(2, 4, 5)

    def f(x: Any, y: Any) -> Any:
        return np.sin(x) * np.sum(y) + x[0] * y[:3]

    inner = ng.vmap(f, in_axes=(None, 0), out_axes=1)  # over y's axis 0 (of an example)
    got = ng.vmap(inner, in_axes=(0, 1), out_axes=-1)(x, y)  # outer: x along 0, y along 1
    expected = np.stack(
        [np.stack([f(x[i], y[j, i]) for j in range(2)], axis=1) for i in range(4)],
        axis=-1,
    )
    assert_same(got, expected)


def test_vmap_inside_vmap_closing_over_the_outer_batched_value() -> None:
    x, y = _normal(4, 3), _normal(5, 3)
    got = ng.vmap(lambda x: ng.vmap(lambda y: np.exp(x * y) @ x)(y))(x)
    expected = np.array([[np.exp(xi * yj) @ xi for yj in y] for xi in x])
    assert_same(got, expected)


def _loss(p: Any, x: Any) -> Any:
    return np.sum(np.tanh(x @ p["w"]) ** 2) + np.sum(p["b"] * x[:2]) ** 2


P = {"w": _normal(3, 2), "b": _normal(2)}
XS = _normal(5, 3)


def test_vmap_of_grad() -> None:
    got = ng.vmap(ng.grad(_loss), in_axes=(None, 0))(P, XS)
    assert_same(got, _loop(ng.grad(_loss), (P, XS), (None, 0), 5))
    both = ng.vmap(ng.grad(_loss, argnums=(0, 1)), in_axes=(None, 0))(P, XS)
    assert_same(both, _loop(ng.grad(_loss, argnums=(0, 1)), (P, XS), (None, 0), 5))


def test_grad_of_vmap() -> None:
    got = ng.grad(lambda p: np.sum(ng.vmap(_loss, in_axes=(None, 0))(p, XS) ** 2))(P)
    expected = ng.grad(lambda p: sum(_loss(p, x) ** 2 for x in XS))(P)
    assert_same(got, expected)
    by_example = ng.grad(lambda xs: np.sum(np.sin(ng.vmap(_loss, in_axes=(None, 0))(P, xs))))(XS)
    assert_same(by_example, np.stack([ng.grad(lambda x: np.sin(_loss(P, x)))(x) for x in XS]))


def test_vmap_of_jvp() -> None:
    tangents = _normal(5, 3)
    f = lambda x, t: ng.jvp(lambda x: np.sin(x) * np.sum(x**2), (x,), (t,))
    assert_same(ng.vmap(f)(XS, tangents), _loop(f, (XS, tangents), (0, 0), 5))
    g = lambda p, x, t: ng.jvp(lambda p: _loss(p, x), (p,), (t,))[1]  # the tangent the same for every example
    assert_same(ng.vmap(g, in_axes=(None, 0, None))(P, XS, P), _loop(g, (P, XS, P), (None, 0, None), 5))


def test_vmap_of_vjp_and_vjp_of_vmap() -> None:
    cotangents = _normal(5, 3)

    def f(x: Any, c: Any) -> Any:
        out, back = ng.vjp(lambda x: np.sin(x) * np.sum(x**2), x)
        return out, back(c)[0]

    assert_same(ng.vmap(f)(XS, cotangents), _loop(f, (XS, cotangents), (0, 0), 5))

    g = ng.vmap(lambda x: np.cos(x) * x[0], in_axes=1, out_axes=1)
    out, back = ng.vjp(g, XS.T)
    (got,) = back(cotangents.T)
    assert_same(out, np.stack([np.cos(x) * x[0] for x in XS], axis=1))
    expected = np.stack([ng.vjp(lambda x: np.cos(x) * x[0], x)[1](c)[0] for x, c in zip(XS, cotangents, strict=True)])
    assert_same(got, expected.T)


def test_vmap_of_hessian() -> None:
    f = lambda x: np.sum(np.sin(x) * x) * np.sum(x**2)
    assert_same(ng.vmap(ng.hessian(f))(XS), _loop(ng.hessian(f), (XS,), (0,), 5))
    h = ng.hessian(_loss)
    assert_same(ng.vmap(h, in_axes=(None, 0))(P, XS), _loop(h, (P, XS), (None, 0), 5))


def test_vmap_of_checkpoint() -> None:
    f = ng.checkpoint(lambda p, x: np.tanh(x @ p["w"]) * np.sum(p["b"]))
    assert_same(ng.vmap(f, in_axes=(None, 0))(P, XS), _loop(f, (P, XS), (None, 0), 5))
    g = ng.grad(lambda p, x: np.sum(f(p, x) ** 2))
    assert_same(ng.vmap(g, in_axes=(None, 0))(P, XS), _loop(g, (P, XS), (None, 0), 5))


def _custom() -> Any:
    """``sin`` with a rule that is not its derivative (3 g cos x, not g cos x), computed from
    residuals with ops: the per-example gradient shows whether the user rule ran, batched."""

    @ng.custom_vjp
    def f(x: Any) -> Any:
        return np.sin(x)

    def fwd(x: Any) -> tuple[Any, Any]:
        return np.sin(x), (np.cos(x), x)

    def bwd(residuals: Any, g: Any) -> tuple[Any]:
        cos, x = residuals
        return (3.0 * g * cos + 0.0 * x,)

    f.defvjp(fwd, bwd)
    return f


def _refuse_per_example(op: Any, *args: Any, **kwargs: Any) -> Any:
    msg = f"{op.name} ran once per example"
    raise AssertionError(msg)


def test_vmap_of_a_custom_vjp_function() -> None:
    f = _custom()
    g = ng.grad(lambda x: np.sum(f(x) * x[::-1]))
    with mock.patch.object(batching, "per_example", _refuse_per_example):  # batched through its own ops
        assert_same(ng.vmap(f)(XS), np.sin(XS))
        got = ng.vmap(g)(XS)
    assert_same(got, _loop(g, (XS,), (0,), 5))
    np.testing.assert_allclose(got, 3.0 * np.cos(XS) * XS[:, ::-1] + np.sin(XS)[:, ::-1], **TOLERANCE)


def test_vmap_of_a_custom_vjp_function_of_a_dict() -> None:
    @ng.custom_vjp
    def f(p: Any) -> Any:
        return np.sin(p["a"]) * p["b"]

    def fwd(p: Any) -> tuple[Any, Any]:
        return f(p), p

    def bwd(p: Any, g: Any) -> tuple[Any]:
        return ({"a": 2.0 * g * np.cos(p["a"]) * p["b"], "b": np.sum(g * np.sin(p["a"]))},)

    f.defvjp(fwd, bwd)
    p = {"a": _normal(5, 3), "b": _normal(5)}
    assert_same(ng.vmap(f)(p), np.sin(p["a"]) * p["b"][:, None])
    g = ng.grad(lambda p: np.sum(f(p) ** 2))
    examples = lambda p, b: {"a": p["a"][b], "b": p["b"][b]}
    assert_same(ng.vmap(g)(p), _loop(g, (p,), (examples,), 5))


def test_jacobian_of_a_vmapped_function() -> None:
    f = lambda x: np.sin(x) * np.sum(x**2)
    blocks = [ng.jacobian(f)(x) for x in XS]
    expected = np.zeros((5, 3, 5, 3))
    for i, block in enumerate(blocks):
        expected[i, :, i, :] = block
    for mode in ("rev", "fwd"):
        assert_same(ng.jacobian(ng.vmap(f), mode=mode)(XS), expected)
    assert_same(ng.vmap(ng.jacobian(f))(XS), np.stack(blocks))


def test_closure_over_a_batched_value() -> None:
    def f(x: Any) -> Any:
        def inner(y: Any) -> Any:  # x reaches inner from the enclosing function
            return np.sin(x) * y

        slope = ng.grad(lambda y: np.sum(x * y**2))(np.ones(3))  # and an inner grad
        tangent = ng.jvp(lambda y: np.exp(x * y), (np.ones(3),), (np.ones(3),))[1]
        return inner(2.0) + slope + tangent

    assert_same(ng.vmap(f)(XS), _loop(f, (XS,), (0,), 5))


def test_closure_over_a_traced_value() -> None:
    def total(p: Any) -> Any:
        return np.sum(ng.vmap(lambda x: _loss(p, x))(XS) ** 2)  # p reaches vmap's function by closure

    expected = ng.grad(lambda p: sum(_loss(p, x) ** 2 for x in XS))(P)
    assert_same(ng.grad(total)(P), expected)
    t = {"w": _normal(3, 2), "b": _normal(2)}
    got = ng.jvp(total, (P,), (t,))
    assert_same(got, ng.jvp(lambda p: sum(_loss(p, x) ** 2 for x in XS), (P,), (t,)))


def test_stop_gradient_inside_vmap() -> None:
    f = lambda x: np.sum(np.sin(x) * ng.stop_gradient(np.cos(x) * x))
    expected = np.stack([np.cos(x) * (np.cos(x) * x) for x in XS])  # the stopped factor is a constant
    assert_same(ng.vmap(ng.grad(f))(XS), expected)
    assert_same(ng.grad(lambda xs: np.sum(ng.vmap(f)(xs)))(XS), expected)  # traced outside vmap, batched inside


@attrs.frozen
class MLP:
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float
    activation: str = ng.field(static=True, default="tanh")


def test_per_example_gradients_of_a_record_model() -> None:
    model = MLP(_normal(4, 6), _normal(6), _normal(6, 3), 0.1)
    x, y = _normal(8, 4), RNG.integers(0, 3, size=8)

    def loss(m: MLP, x: Any, y: Any) -> Any:
        assert m.activation == "tanh"
        logits = np.tanh(x @ m.w1 + m.b1) @ m.w2 + m.b2
        return ng.logsumexp(logits) - np.sum(logits * (np.arange(3) == y))

    per_example = ng.vmap(ng.grad(loss), in_axes=(None, 0, 0))(model, x, y)
    assert type(per_example) is MLP and per_example.w1.shape == (8, 4, 6)
    assert_same(per_example, _loop(ng.grad(loss), (model, x, y), (None, 0, 0), 8))
    mean = ng.grad(lambda m: np.mean(ng.vmap(loss, in_axes=(None, 0, 0))(m, x, y)))(model)
    np.testing.assert_allclose(mean.w1, per_example.w1.mean(axis=0), **TOLERANCE)
    np.testing.assert_allclose(mean.b2, per_example.b2.mean(axis=0), **TOLERANCE)


def test_an_extend_primitive_runs_once_per_example_in_every_order() -> None:
    # A primitive's body may be another library's code (scipy's convolution here), which
    # cannot see batched values: it runs once per example, and its rules are batched.
    import nodegrad.scipy.signal as signal

    kernel = np.array([1.0, -2.0, 0.5])
    f = lambda x: signal.convolve(x, kernel)
    loss = lambda x: np.sum(f(x) ** 2)
    xs = _normal(3, 5)
    assert_same(ng.vmap(f)(xs), np.stack([f(x) for x in xs]))
    looped = np.stack([ng.grad(loss)(x) for x in xs])
    assert_same(ng.vmap(ng.grad(loss))(xs), looped)
    assert_same(ng.grad(lambda a: np.sum(ng.vmap(f)(a) ** 2))(xs), looped)
    pairs = ng.vmap(lambda x, k: signal.convolve(x, k))(xs, xs[:, :2])
    assert_same(pairs, np.stack([signal.convolve(x, k) for x, k in zip(xs, xs[:, :2], strict=True)]))


def test_masks_combine_and_ufunc_at_is_refused() -> None:
    xs = np.array([[3.0, 1.0, -2.0], [-1.0, 0.5, 4.0]])
    got = ng.vmap(lambda x: np.where((x > 0) & ~(x > 2) | (x < -1.5), x, 0.0))(xs)
    assert_same(got, np.where((xs > 0) & ~(xs > 2) | (xs < -1.5), xs, 0.0))
    with pytest.raises(BatchingError, match=r"np\.add\.at"):
        ng.vmap(lambda x: np.add.at(np.zeros(3), np.array([0, 1]), x[:2]))(xs)


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.sum(np.linalg.eigvalsh(a + a.T) ** 3),
        lambda a: np.sum(np.linalg.eigh(a + a.T)[1][:, 0] ** 4),
        lambda a: np.sum(np.linalg.svd(a)[1] ** 3),
        lambda a: np.sum(np.linalg.svd(a)[0][:, 0] ** 4),
        lambda a: np.sum(np.linalg.qr(a)[1] ** 3),
        lambda a: np.sum(np.abs(np.linalg.eigvals(a)) ** 2),
        lambda a: np.linalg.det(a) ** 2,
    ],
    ids=["eigvalsh", "eigh", "svdvals", "svd_u", "qr_r", "eigvals", "det"],
)
def test_hessians_through_decompositions_per_example(f: Callable[[Any], Any]) -> None:
    # The rules' checks of repeated values read every example's values at once.
    a = _normal(3, 3, 3)
    assert_same(ng.vmap(ng.hessian(f))(a), np.stack([ng.hessian(f)(m) for m in a]), {"rtol": 1e-10, "atol": 1e-12})


def test_a_custom_rule_is_used_in_both_orders() -> None:
    # The rule (twice the cotangent, not the true derivative 3x^2) must answer for every
    # example, whether vmap runs inside the gradient or the gradient inside vmap.
    @ng.custom_vjp
    def cube(x: Any) -> Any:
        return x**3

    cube.defvjp(lambda x: (cube(x), None), lambda _, g: (2.0 * g,))
    xs = _normal(4, 3)
    expected = np.full_like(xs, 2.0)
    assert_same(ng.vmap(ng.grad(lambda x: np.sum(cube(x))))(xs), expected)
    assert_same(ng.grad(lambda a: np.sum(ng.vmap(cube)(a)))(xs), expected)
    assert_same(ng.vmap(cube)(xs), xs**3)
