"""Structured values: records, maps and sequences as differentiable values."""

from __future__ import annotations

import collections
import dataclasses
import math
import sys
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.engine.structure import (
    differentiable_leaves,
    flatten_with_paths,
    handler_for,
    is_differentiable_leaf,
    map_with_paths,
)
from nodegrad.errors import ArgumentError, NoGradientError, StructureError
from nodegrad.ops.structured import map_lookup, pack, seq_index, struct_field, view
from nodegrad.testing.strategies import Box, Marked, Pair, Tagged, structures

NT = collections.namedtuple("NT", "u v")


def _is_static_slot(template: Any, path: str) -> bool:
    """True when the leaf at ``path`` sits in a field marked static somewhere above it."""
    static_paths = []

    def walk(value: Any, prefix: str) -> None:
        handler = handler_for(value)
        if handler is None:
            return
        for key, static in zip(handler.keys(value), handler.static_mask(value), strict=True):
            step = prefix + (f".{key}" if handler.kind == "record" else f"[{key!r}]")
            if static:
                static_paths.append(step)
            else:
                walk(handler.get(value, key), step)

    walk(template, "")
    return any(path == s or path.startswith(s + ".") or path.startswith(s + "[") for s in static_paths)


def _weights(tree: Any) -> dict[str, float]:
    # A fixed weight per leaf path: every leaf contributes differently to the loss.
    return {path: 0.5 + 0.25 * (i % 5) for i, (path, _) in enumerate(flatten_with_paths(tree))}


def _loss(tree: Any, weights: dict[str, float], used: set[str]) -> Any:
    total: Any = 0.0
    for path, leaf in flatten_with_paths(tree):
        if isinstance(leaf, ng.Traced) and path in used:
            total = total + ng.sum(ng.sin(leaf) * weights[path])
    return total


def assert_same_structure(grad: Any, value: Any, path: str = "") -> None:
    handler = handler_for(value)
    if handler is None:
        return
    assert type(grad) is type(value), path
    g_handler = handler_for(grad)
    assert g_handler is not None
    assert g_handler.keys(grad) == handler.keys(value), path
    for key in handler.keys(value):
        assert_same_structure(g_handler.get(grad, key), handler.get(value, key), f"{path}/{key!r}")


@given(structures(), st.data())
def test_gradients_of_nested_structures(tree: Any, data: st.DataObject) -> None:
    weights = _weights(tree)
    differentiable = [
        p for p, leaf in flatten_with_paths(tree) if is_differentiable_leaf(leaf) and not _is_static_slot(tree, p)
    ]
    used = set(data.draw(st.lists(st.sampled_from(differentiable), unique=True)) if differentiable else [])
    g = ng.grad(lambda t: _loss(t, weights, used))(tree)

    assert_same_structure(g, tree)
    grads = dict(flatten_with_paths(g))
    for path, leaf in flatten_with_paths(tree):
        got = grads.get(path)
        if path not in differentiable:
            assert got is None, path
            continue
        assert type(got) is type(leaf), path
        if isinstance(leaf, np.ndarray):
            assert got.shape == leaf.shape and got.dtype == leaf.dtype, path
        expected = weights[path] * np.cos(leaf) if path in used else np.zeros_like(leaf)
        tol = 1e-5 if np.result_type(leaf) == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=path)


@given(structures())
def test_gradients_match_finite_differences(tree: Any) -> None:
    weights = _weights(tree)
    used = {p for p, leaf in flatten_with_paths(tree) if is_differentiable_leaf(leaf)}
    as64 = map_with_paths(
        lambda p, x: x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x, tree
    )
    g = ng.grad(lambda t: _loss(t, weights, used))(as64)
    grads = dict(flatten_with_paths(g))
    rng = np.random.default_rng(0)
    direction = {p: rng.standard_normal(np.shape(x)) for p, x in flatten_with_paths(as64) if grads.get(p) is not None}
    eps = 1e-6

    def shifted(sign: float) -> Any:
        return map_with_paths(lambda p, x: x + sign * eps * direction[p] if p in direction else x, as64)

    def plain_loss(t: Any) -> float:
        return sum(float(np.sum(np.sin(x) * weights[p])) for p, x in flatten_with_paths(t) if p in direction)

    numeric = (plain_loss(shifted(1.0)) - plain_loss(shifted(-1.0))) / (2 * eps)
    analytic = sum(float(np.sum(np.asarray(grads[p]) * d)) for p, d in direction.items())
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-6)


@attrs.frozen
class Linear:
    w: np.ndarray = attrs.field(converter=np.asarray, validator=attrs.validators.instance_of(np.ndarray))
    b: float = attrs.field(validator=attrs.validators.gt(0))
    name: str = "linear"

    def predict(self, x: Any) -> Any:
        return x @ self.w + self.b

    @property
    def penalty(self) -> Any:
        return ng.sum(self.w * self.w)


def test_record_methods_and_properties_work_on_traced_records() -> None:
    model = Linear(np.array([1.0, -2.0]), 0.5)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])

    def loss(m: Linear) -> Any:
        assert isinstance(m, Linear)
        assert m.name == "linear"
        return ng.sum(m.predict(x) ** 2.0) + m.penalty

    g = ng.grad(loss)(model)
    assert type(g) is Linear
    pred = x @ model.w + model.b
    np.testing.assert_allclose(g.w, 2 * x.T @ pred + 2 * model.w)
    # The gradient of b is negative: built without running the validator (b > 0).
    assert g.b == pytest.approx(2 * pred.sum())
    assert g.b < 0
    assert g.name is None


def test_traced_dicts_support_the_mapping_protocol() -> None:
    params = {"w": np.array([1.0, 2.0]), 3: 2.0, ("k", 1): np.array(0.5), "label": "x"}

    def loss(p: dict[Any, Any]) -> Any:
        assert isinstance(p, dict)
        assert len(p) == 4 and "w" in p and 3 in p and "nope" not in p
        assert list(p.keys()) == ["w", 3, ("k", 1), "label"]
        total = ng.sum(p["w"]) * p[3]
        for key, value in p.items():
            if key == ("k", 1):
                total = total + value * 4.0
        assert [type(v).__name__ for v in p.values()] == ["Traced", "Traced", "Traced", "str"]
        assert list(iter(p)) == list(params)
        return total

    g = ng.grad(loss)(params)
    assert list(g) == list(params)
    np.testing.assert_array_equal(g["w"], [2.0, 2.0])
    assert g[3] == 3.0 and type(g[3]) is float
    assert g[("k", 1)] == 4.0
    assert g["label"] is None


def test_traced_sequences_support_indexing_len_iteration_unpacking() -> None:
    def loss(seq: list[Any]) -> Any:
        a, b, c = seq
        assert len(seq) == 3
        total = sum((ng.sum(item) for item in seq[:2]), start=0.0)
        return total + a * ng.sum(b) * c[1]

    g = ng.grad(loss)([1.0, np.array([1.0, 2.0]), (7, 2.0)])
    assert g[0] == pytest.approx(1 + 3 * 2)
    np.testing.assert_allclose(g[1], [1 + 2, 1 + 2])
    assert g[2] == (None, 3.0)


def test_static_fields_pass_through() -> None:
    tagged = Tagged(np.array([1.0, 2.0]), tag=np.array([0.5]))  # a float array marked static
    marked = Marked(np.array([3.0]))
    seen = {}

    def loss(t: Tagged, m: Marked) -> Any:
        seen["tag"] = t.tag
        seen["note"] = m.note
        return ng.sum(t.w * t.tag) + ng.sum(m.v * m.note)

    gt, gm = ng.grad(loss, argnums=(0, 1))(tagged, marked)
    assert type(seen["tag"]) is np.ndarray and seen["note"] == 1.5
    np.testing.assert_array_equal(gt.w, [0.5, 0.5])
    assert gt.tag is None and gm.note is None
    np.testing.assert_array_equal(gm.v, [1.5])


def test_strict_names_every_input_without_a_gradient_path() -> None:
    params = {"params": {"w": np.ones(2), "b": np.ones(2)}, "layers": [Box(1.0, 2.0), Box(3.0, 4.0), Box(5.0, 6.0)]}

    def loss(p: dict[str, Any]) -> Any:
        return ng.sum(p["params"]["b"]) + p["layers"][0].p * p["layers"][1].q

    with pytest.raises(NoGradientError) as info:
        ng.grad(loss, options=ng.GradOptions.STRICT)(params)
    message = str(info.value)
    for path in ["['params']['w']", "['layers'][0].q", "['layers'][1].p", "['layers'][2].p", "['layers'][2].q"]:
        assert f"args[0]{path}" in message
    assert "['params']['b']" not in message
    training = ng.grad(loss, options=ng.GradOptions.TRAINING)(params)
    np.testing.assert_array_equal(training["params"]["w"], np.zeros(2))
    assert training["layers"][2] == Box(0.0, 0.0)


@attrs.frozen
class _Affine:
    w: np.ndarray
    b: Any
    steps: int = ng.field(static=True, default=10)  # marked: a constant, never named


def test_strict_names_an_int_leaf_beside_float_ones_and_training_passes_it_through() -> None:
    x = np.array([0.5, 0.1])
    loss = lambda p, x: ng.sum(p["w"] * x) + p["b"] + ng.sum(p["layer"].w * p["layer"].b)
    params = {"w": np.array([1.0, 2.0]), "b": 0, "layer": _Affine(np.ones(2), 3)}
    with pytest.raises(NoGradientError) as info:
        ng.grad(loss, options=ng.GradOptions.STRICT)(params, x)
    message = str(info.value)
    assert "args[0]['b'] (the int 0: ints get no gradient; write 0.0)" in message
    assert "args[0]['layer'].b (the int 3: ints get no gradient; write 3.0)" in message
    assert "steps" not in message and "args[1]" not in message
    # value_and_grad and an arena's own backward say the same
    with pytest.raises(NoGradientError, match=r"\['b'\] \(the int 0"):
        ng.value_and_grad(loss, options=ng.GradOptions.STRICT)(params, x)
    arena = ng.Arena()
    p = arena.param(params)
    with pytest.raises(NoGradientError, match=r"\['b'\] \(the int 0"):
        arena.backward(loss(p, x), wrt=p, options=ng.GradOptions.STRICT)
    # Written as floats, STRICT is satisfied; by default the ints pass through with None.
    fixed = {"w": np.array([1.0, 2.0]), "b": 0.0, "layer": _Affine(np.ones(2), 3.0)}
    assert ng.grad(loss, options=ng.GradOptions.STRICT)(fixed, x)["b"] == 1.0
    assert ng.grad(loss)(params, x)["b"] is None


def test_unused_fields_of_a_1000_field_record_add_no_work() -> None:
    big_class = attrs.make_class("Big", [f"f{i}" for i in range(1000)])
    record = big_class(*[np.full(3, float(i)) for i in range(1000)])
    a = ng.Arena()
    view_ = a.param(record)
    y = ng.sum(view_.f7 * view_.f993)
    g = a.backward(y, wrt=view_)
    # The two reads, the multiply and the sum: the other 998 fields never enter the sweep.
    assert a.last_visited == 4
    np.testing.assert_array_equal(g.f7, np.full(3, 993.0))
    np.testing.assert_array_equal(g.f0, np.zeros(3))
    # Differentiating with respect to the record node itself runs the struct_field VJPs.
    record_node = a._handle(0)
    g_node = a.backward(y, wrt=record_node)
    assert a.last_visited == 5
    assert type(g_node) is big_class
    np.testing.assert_array_equal(g_node.f993, np.full(3, 7.0))
    np.testing.assert_array_equal(g_node.f500, np.zeros(3))


def test_preallocated_buffers_are_overwritten_or_accumulated() -> None:
    params = {"w": np.array([1.0, 2.0]), "b": np.array(0.5), "tag": "t"}
    buffers = {"w": np.full(2, 9.0), "b": np.array(9.0), "tag": None}
    w_buffer, b_buffer = buffers["w"], buffers["b"]

    def loss(p: dict[str, Any]) -> Any:
        return ng.sum(p["w"] * p["w"]) * 0.5

    f = ng.value_and_grad(loss, out=buffers)
    _, g = f(params)
    assert g is buffers and g["w"] is w_buffer and g["b"] is b_buffer
    np.testing.assert_array_equal(g["w"], [1.0, 2.0])
    assert g["b"] == 0.0  # no path: overwritten with zero
    acc = ng.value_and_grad(loss, out=buffers, accumulate=True)
    acc(params)
    acc(params)
    np.testing.assert_array_equal(buffers["w"], [3.0, 6.0])
    with pytest.raises(StructureError, match=r"out\['w'\] must be a writeable array of shape \(2,\)"):
        ng.value_and_grad(loss, out={"w": np.zeros(3), "b": np.zeros(()), "tag": None})(params)


def test_replace_keeps_the_untouched_fields_gradient_paths() -> None:
    @dataclasses.dataclass
    class Params:
        w: Any
        b: Any

    def loss(p: Params, d: dict[str, Any]) -> Any:
        q = ng.replace(p, w=p.w * 2.0)
        e = ng.replace(d, {"new": d["a"] * 3.0})
        return ng.sum(q.w * q.b) + e["new"] + e["a"]

    gp, gd = ng.grad(loss, argnums=(0, 1))(Params(np.array([1.0]), np.array([5.0])), {"a": 1.0})
    np.testing.assert_array_equal(gp.w, [10.0])
    np.testing.assert_array_equal(gp.b, [2.0])
    assert gd == {"a": 4.0}
    with pytest.raises(StructureError, match="no field"):
        ng.replace(Params(1.0, 2.0), z=3.0)


def test_records_built_inside_the_graph_flow_through_constructor_nodes() -> None:
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    y = a.param(3.0)
    packed = pack(Pair(x * 2.0, {"k": y, "s": "static"}))
    assert a[packed.index].op == "make_record"
    assert [a[p].op for p in a[packed.index].parents] == ["multiply", "make_map"]
    again = view(packed)
    out = ng.sum(again.x) * again.y["k"]
    gx, gy = a.backward(out, wrt=(x, y))
    np.testing.assert_array_equal(gx, [6.0, 6.0])
    assert gy == 6.0


def test_functions_can_return_records_and_dicts() -> None:
    def f(x: Any) -> Any:
        return Pair(x * 2.0, {"sq": x * x, "name": "n"})

    out, back = ng.vjp(f, np.array([1.0, 3.0]))
    assert type(out) is Pair and out.y["name"] == "n"
    np.testing.assert_array_equal(out.y["sq"], [1.0, 9.0])
    (g,) = back(Pair(np.array([1.0, 1.0]), {"sq": np.array([1.0, 0.0]), "name": None}))
    np.testing.assert_array_equal(g, [2.0 + 2.0, 2.0])
    with pytest.raises(StructureError, match=r"structure mismatch at \.y"):
        back(Pair(np.ones(2), {"sq": np.ones(2)}))


def test_read_ops_validate_their_slot_and_name_the_key_path() -> None:
    a = ng.Arena()
    p = a.param({"layer": NT(np.ones(2), [np.ones(1), 2.0])}, name="params")
    layer_node = a._handle(1)  # the map_lookup of 'layer'
    assert a[1].op == "map_lookup"
    assert struct_field(layer_node, 0, 2).shape == (2,)
    with pytest.raises(StructureError, match=r"params\['layer'\] has 2 entries"):
        struct_field(layer_node, 0, 3)
    with pytest.raises(StructureError, match="not a map"):
        map_lookup(layer_node, 0, 2)
    items = struct_field(layer_node, 1, 2)
    assert seq_index(items, 1, 2).shape == ()
    assert isinstance(p["layer"].v[0], ng.Traced)


def test_op_errors_name_the_key_path_and_the_users_line() -> None:
    def loss(p: dict[str, Any]) -> Any:
        return ng.sum(p["layers"][1].w @ p["x"])

    params = {"layers": [Tagged(np.ones(2), 0), Tagged(np.ones((2, 3)), 1)], "x": np.ones(4)}
    with pytest.raises(ng.errors.ShapeError, match=r"args\[0\]\['layers'\]\[1\]\.w.*test_structured_values\.py:\d+"):
        ng.grad(loss)(params)


def test_register_container_opts_a_class_in() -> None:
    class Bag:
        def __init__(self, items: dict[str, Any]) -> None:
            self.items = items

    ng.register_container(
        Bag, lambda b: (list(b.items), list(b.items.values())), lambda t, c: Bag(dict(zip(t.items, c, strict=True)))
    )
    g = ng.grad(lambda b: b.items["a"] * b.items["b"])(Bag({"a": 2.0, "b": 3.0}))
    assert type(g) is Bag and g.items == {"a": 3.0, "b": 2.0}


def test_named_tuples_and_defaultdicts_keep_their_types() -> None:
    value = NT(1.0, collections.defaultdict(list, {"z": 2.0, "a": 3.0}))
    g = ng.grad(lambda t: t.u * t.v["z"] * t.v["a"])(value)
    assert type(g) is NT and type(g.v) is collections.defaultdict
    assert g.v.default_factory is list and list(g.v) == ["z", "a"]
    assert g == NT(6.0, {"z": 3.0, "a": 2.0})


def test_gradient_utilities_reject_bad_arguments() -> None:
    with pytest.raises(ArgumentError, match="finite"):
        ng.tree.scale({"a": 1.0}, float("inf"))
    with pytest.raises(ArgumentError, match="positive"):
        ng.tree.clip_by_global_norm({"a": 1.0}, 0.0)
    with pytest.raises(ArgumentError, match=r"\['b'\] holds NaN"):
        ng.tree.clip_by_global_norm({"a": 1.0, "b": np.array([np.nan])}, 1.0)
    with pytest.raises(StructureError, match=r"\['b'\]"):
        ng.tree.add({"a": 1.0, "b": [1.0]}, {"a": 1.0, "b": (1.0,)})


@given(st.lists(structures(), min_size=1, max_size=3))
def test_global_norm_matches_numpy(trees: list[Any]) -> None:
    leaves = [np.ravel(np.asarray(x, dtype=np.float64)) for _, x in differentiable_leaves(trees)]
    expected = math.hypot(*np.concatenate(leaves)) if leaves else 0.0
    assert ng.tree.global_norm(trees) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    clipped, norm = ng.tree.clip_by_global_norm(trees, 0.5)
    assert norm == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert ng.tree.global_norm(clipped) <= 0.5 * (1 + 1e-6)


def test_global_norm_neither_overflows_nor_underflows() -> None:
    assert ng.tree.global_norm([np.array([3e200]), 4e200]) == pytest.approx(5e200)
    assert ng.tree.global_norm({"a": np.array([3e-200, 4e-200])}) == pytest.approx(5e-200)


def test_sgd_and_adam_step_structured_parameters() -> None:
    params = Pair(np.array([2.0, -1.0]), {"b": 1.0, "name": "m"})

    def loss(p: Pair) -> Any:
        return ng.sum(p.x * p.x) + p.y["b"] * p.y["b"]

    first = float(ng.value_and_grad(loss)(params)[0])
    state = None
    adam_params = params
    for _ in range(50):
        g = ng.grad(loss)(adam_params)
        adam_params, state = ng.optim.adam(adam_params, g, state, lr=0.1)
        params = ng.optim.sgd(params, ng.grad(loss)(params), lr=0.1)
    assert type(adam_params) is Pair and adam_params.y["name"] == "m" and type(adam_params.y["b"]) is float
    assert float(ng.value_and_grad(loss)(params)[0]) < 1e-6 * first
    assert float(ng.value_and_grad(loss)(adam_params)[0]) < 0.05 * first
    assert state is not None and state.step == 50


def test_a_structure_nested_past_the_recursion_limit_is_a_structure_error() -> None:
    deep: Any = {"x": np.ones(2)}
    for _ in range(5 * sys.getrecursionlimit()):
        deep = {"a": deep}
    for call in (lambda: ng.grad(lambda d: 1.0)(deep), lambda: ng.vjp(lambda d: 1.0, deep)):
        with pytest.raises(StructureError, match="recursion limit"):
            call()
    arena = ng.Arena()
    with pytest.raises(StructureError, match="recursion limit"):
        arena.param(deep)
    assert len(arena) == 0


def _self_referential() -> dict[str, Any]:
    made: dict[str, list[Any]] = {}
    looped: list[Any] = [np.ones(2), {"w": 1.0}]
    looped[1]["back"] = looped  # looped[1]['back'] is looped itself
    made["list"] = looped
    dict_loop: dict[str, Any] = {"w": np.ones(2)}
    dict_loop["me"] = dict_loop
    made["dict"] = [dict_loop]
    return made


_CUSTOM = ng.custom_vjp(lambda x, data: x)
_CUSTOM.defvjp(lambda x, data: (x, None), lambda _, g: (g, None))

#: Every transform and structure utility, given ``v`` where it walks a structure.
_WALKERS: dict[str, Callable[[Any], Any]] = {
    "grad": lambda v: ng.grad(lambda p: 1.0)(v),
    "value_and_grad": lambda v: ng.value_and_grad(lambda p: 1.0)(v),
    "vjp": lambda v: ng.vjp(lambda p: 1.0, v),
    "jvp": lambda v: ng.jvp(lambda p: 1.0, (v,), (v,)),
    "linearize": lambda v: ng.linearize(lambda p: 1.0, v),
    "jacobian": lambda v: ng.jacobian(lambda p: 1.0)(v),
    "hessian": lambda v: ng.hessian(lambda p: 1.0)(v),
    "hvp": lambda v: ng.hvp(lambda p: 1.0, (v,), (v,)),
    "elementwise_grad": lambda v: ng.elementwise_grad(lambda p: 1.0)(v),
    "checkpoint": lambda v: ng.grad(lambda x: ng.checkpoint(lambda y, data: y)(x, v))(1.0),
    "custom_vjp": lambda v: ng.grad(lambda x: _CUSTOM(x, v))(1.0),
    "stop_gradient": lambda v: ng.stop_gradient(v),
    "check_grads": lambda v: ng.testing.check_grads(lambda p: 1.0, v),
    "tree.tree_map": lambda v: ng.tree.tree_map(lambda x: x, v),
    "tree.map_floats": lambda v: ng.tree.map_floats(lambda x: x, v),
    "tree.tree_leaves_with_path": ng.tree.tree_leaves_with_path,
    "tree.zeros_like": ng.tree.zeros_like,
    "tree.add": lambda v: ng.tree.add(v, v),
    "tree.vdot": lambda v: ng.tree.vdot(v, v),
    "tree.scale": lambda v: ng.tree.scale(v, 2.0),
    "tree.global_norm": ng.tree.global_norm,
    "tree.clip_by_global_norm": lambda v: ng.tree.clip_by_global_norm(v, 1.0),
    "tree.ravel": ng.tree.ravel,
    "optim.sgd": lambda v: ng.optim.sgd(v, v, 0.1),
    "optim.adam": lambda v: ng.optim.adam(v, v, lr=0.1),
}


@pytest.mark.parametrize("kind", ["list", "dict"])
@pytest.mark.parametrize("name", sorted(_WALKERS))
def test_a_structure_that_contains_itself_is_a_structure_error_naming_the_place(name: str, kind: str) -> None:
    value = _self_referential()[kind]
    place = r"\[1\]\['back'\] is .* itself" if kind == "list" else r"\[0\]\['me'\] is .*\[0\] itself"
    with pytest.raises(StructureError, match=place + ", so the structure contains itself"):
        _WALKERS[name](value)


@pytest.mark.parametrize("name", sorted(_WALKERS))
def test_a_structure_nested_past_the_walkers_reach_is_a_structure_error(name: str) -> None:
    deep: Any = np.ones(2)
    for _ in range(500):  # half the recursion limit: the walkers spend more than a frame a level
        deep = [deep]
    message = None  # it may work: a walker that needs fewer frames than the limit is no defect
    try:
        _WALKERS[name](deep)
    except StructureError as exc:  # never a raw RecursionError
        message = str(exc)
    assert message is None or "recursion limit" in message


def test_a_recursion_of_the_users_own_is_not_called_a_structure_error() -> None:
    def forever(*args: Any) -> Any:
        return forever(*args)

    with pytest.raises(RecursionError):
        ng.tree.tree_map(forever, [1.0, {"a": 2.0}])
    with pytest.raises(RecursionError):
        ng.grad(lambda x: ng.custom_vjp(forever)(x, [1.0]))(1.0)


def test_a_structure_nested_a_hundred_deep_differentiates() -> None:
    deep: Any = {"x": np.ones(2)}
    for _ in range(100):
        deep = {"a": deep}

    def innermost(d: Any) -> Any:
        for _ in range(100):
            d = d["a"]
        return d

    g = ng.grad(lambda d: ng.sum(innermost(d)["x"] * 3.0))(deep)
    np.testing.assert_array_equal(innermost(g)["x"], [3.0, 3.0])


def test_tree_add_reads_none_as_a_zero_gradient() -> None:
    got = ng.tree.add({"a": None, "b": 1.0, "c": None, "tag": "x"}, {"a": 2.0, "b": None, "c": None, "tag": "x"})
    assert got == {"a": 2.0, "b": 1.0, "c": None, "tag": "x"}


@pytest.mark.parametrize("order", [0, 1])
def test_global_norm_is_nan_when_any_entry_is_nan(order: int) -> None:
    leaves = [np.array([np.inf, 1.0]), np.array([np.nan])]
    assert math.isnan(ng.tree.global_norm(leaves[::-1] if order else leaves))


class _Scaled(dict):  # a dict subclass whose constructor takes other arguments
    def __init__(self, scale: float, **entries: Any) -> None:
        super().__init__(**entries)
        self.scale = scale


class _Repeated(list):  # a list subclass whose constructor takes a count
    def __init__(self, n: int) -> None:
        super().__init__([np.full(2, float(k)) for k in range(n)])


class _Pair(tuple):  # a plain tuple subclass (not a named tuple)
    __slots__ = ()


@pytest.mark.parametrize(
    "value",
    [
        collections.Counter(a=1.0, b=2.0),
        _Scaled(3.0, w=np.ones(2), v=0.5),
        _Repeated(2),
        _Pair((np.ones(2), 2.0)),
        collections.defaultdict(float, w=np.ones(2)),
    ],
    ids=["Counter", "dict-subclass", "list-subclass", "tuple-subclass", "defaultdict"],
)
def test_container_subclasses_keep_their_type_attributes_and_entries(value: Any) -> None:
    # Rebuilt without calling their constructors (Counter's would count traced values, the
    # others take other arguments): the view inside and the gradient are the same type.
    seen: list[Any] = []

    def loss(p: Any) -> Any:
        seen.append(p)
        entries = p.values() if isinstance(p, dict) else p
        return sum((ng.sum(x * x) for x in entries), 0.0)

    g = ng.grad(loss)(value)
    assert type(seen[0]) is type(value) and type(g) is type(value)
    if isinstance(value, _Scaled):
        assert seen[0].scale == 3.0 and g.scale == 3.0
    if isinstance(value, collections.defaultdict):
        assert g.default_factory is float
    pairs = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    for key, entry in pairs:
        np.testing.assert_allclose(g[key], 2.0 * np.asarray(entry))
