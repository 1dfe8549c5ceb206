"""Reliability: where NaNs come from, malformed inputs, repeated sweeps, memory, threads.

- NaN/Inf origins through all three switches (``debug_nans``, ``grad(check_finite=True)``,
  ``Arena(check_finite=True)``), forward and backward, with op, node and source line.
- Malformed arguments to public functions raise a ``NodegradError`` subclass, never a raw
  numpy or Python error, and leave the arena usable.
- ``Arena.backward`` twice, ``retain=False``, ``nbytes``; two threads differentiating at once.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import Phase, given, settings

import nodegrad as ng
from nodegrad.engine.arena import current_arena
from nodegrad.engine.record import record1
from nodegrad.engine.registry import Op
from nodegrad.errors import ArenaError, ArgumentError, DtypeError, NodegradError, NonFiniteError
from tests.strategies import float_arrays, floats, shapes

HERE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    """The line of this file that holds ``marker`` in a comment (exactly one does)."""
    hits = [n for n, text in enumerate(HERE.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def recorded_at(marker: str) -> str:
    return f"{HERE.name}:{line_of(marker)}]"


# -- NaN/Inf origins ----------------------------------------------------------------------------


def forward_nan(x: Any) -> Any:
    y = x * 2.0
    z = ng.log(y)  # forward-nan
    return ng.sum(z)


def backward_nan(x: Any) -> Any:
    return ng.sum(ng.where(x > 0, ng.sqrt(x), 0.0))  # backward-nan


X_FORWARD = np.array([1.0, -1.0, 2.0])  # log(2 * -1) is NaN
X_BACKWARD = np.array([0.0, 4.0, 1.0])  # sqrt is fine at 0, its derivative is not


def _check_forward_message(message: str, node: int) -> None:
    assert message.startswith(f"log (node {node}) produced a non-finite value in the forward pass")
    assert "float64[3]" in message
    assert recorded_at("forward-nan") in message
    assert "mask the input instead" in message


def _check_backward_message(message: str, node: int, where_node: int) -> None:
    assert message.startswith(f"sqrt (node {node}) produced a non-finite gradient for its input 0")
    assert "in the backward pass, from a finite cotangent" in message
    assert recorded_at("backward-nan") in message
    # The double-where diagnosis: it names the where and says to mask the input.
    assert f"the where at node {where_node}" in message
    assert "Mask the input, not only the output" in message
    assert "where(m, f(where(m, x, safe_value)), other)" in message


def test_debug_nans_names_the_forward_op_its_node_and_line() -> None:
    with ng.debug_nans(), pytest.raises(NonFiniteError) as info:
        ng.grad(forward_nan)(X_FORWARD)
    _check_forward_message(str(info.value), node=2)  # param 0, multiply 1, log 2


def test_grad_check_finite_names_the_forward_op_its_node_and_line() -> None:
    with pytest.raises(NonFiniteError) as info:
        ng.grad(forward_nan, check_finite=True)(X_FORWARD)
    _check_forward_message(str(info.value), node=2)
    with pytest.raises(NonFiniteError) as info:
        ng.value_and_grad(forward_nan, check_finite=True)(X_FORWARD)
    _check_forward_message(str(info.value), node=2)


def test_checking_arena_names_the_forward_op_and_leaves_no_extra_node() -> None:
    arena = ng.Arena(check_finite=True)
    assert arena.check_finite
    x = arena.param(X_FORWARD)
    padding = ng.exp(x)
    size = len(arena)
    # An arena does not silence numpy's own warning the way debug_nans() does.
    with np.errstate(invalid="ignore"), pytest.raises(NonFiniteError) as info:
        forward_nan(x)
    _check_forward_message(str(info.value), node=3)  # param, exp, multiply, then log
    # The multiply before the log stays (it succeeded); the log itself was not kept.
    assert len(arena) == size + 1
    assert [node.op for node in arena] == ["param", "exp", "multiply"]
    # ... and the arena goes on working, still checking.
    y = ng.sum(padding * x)
    np.testing.assert_allclose(arena.backward(y, wrt=x), np.exp(X_FORWARD) * (1 + X_FORWARD))
    with np.errstate(divide="ignore"), pytest.raises(NonFiniteError, match=r"^log \(node 6\)"):
        ng.log(x * 0.0)


def test_failed_forward_check_keeps_the_source_lines_in_step() -> None:
    arena = ng.Arena(check_finite=True)
    x = arena.param(X_FORWARD)
    with np.errstate(invalid="ignore"), pytest.raises(NonFiniteError):
        ng.log(x)
    x2 = x * 3.0
    with np.errstate(invalid="ignore"), pytest.raises(NonFiniteError) as info:
        forward_nan(x2)
    # Node 1 is x * 3; the failed log did not shift the lines noted for later nodes.
    _check_forward_message(str(info.value), node=3)


def test_debug_nans_names_the_backward_op_and_the_where() -> None:
    with ng.debug_nans(), pytest.raises(NonFiniteError) as info:
        ng.grad(backward_nan)(X_BACKWARD)
    _check_backward_message(str(info.value), node=1, where_node=2)


def test_grad_check_finite_names_the_backward_op_and_the_where() -> None:
    with pytest.raises(NonFiniteError) as info:
        ng.grad(backward_nan, check_finite=True)(X_BACKWARD)
    _check_backward_message(str(info.value), node=1, where_node=2)


def test_checking_arena_names_the_backward_op_and_the_where() -> None:
    arena = ng.Arena(check_finite=True)
    x = arena.param(X_BACKWARD)
    y = backward_nan(x)
    with np.errstate(invalid="ignore", divide="ignore"), pytest.raises(NonFiniteError) as info:
        arena.backward(y, wrt=x)
    _check_backward_message(str(info.value), node=1, where_node=2)


def test_structured_inputs_are_named_by_key_path() -> None:
    params = {"scale": X_BACKWARD}
    with pytest.raises(NonFiniteError, match=r"from args\[0\]\['scale'\]"):
        ng.grad(lambda p: backward_nan(p["scale"]), check_finite=True)(params)


def test_masking_the_input_fixes_it() -> None:
    def fixed(x: Any) -> Any:
        m = x > 0
        return ng.sum(ng.where(m, ng.sqrt(ng.where(m, x, 1.0)), 0.0))

    g = ng.grad(fixed, check_finite=True)(X_BACKWARD)
    np.testing.assert_allclose(g, [0.0, 0.25, 0.5])


def test_without_checking_nothing_is_raised_and_nothing_is_paid() -> None:
    arena = ng.Arena()
    assert type(arena._nodes) is list  # not a subclass that notes lines: no cost
    assert not arena.check_finite
    seen: list[Any] = []

    def spy(x: Any) -> Any:
        seen.append(current_arena())
        return backward_nan(x)

    with np.errstate(invalid="ignore", divide="ignore"):
        g = ng.grad(spy)(X_BACKWARD)
    assert np.isnan(g[0]) and np.all(np.isfinite(g[1:]))
    assert not seen[0].check_finite and not hasattr(seen[0]._nodes, "for_sweep")  # plain (sealed on return)
    with ng.debug_nans():
        ng.grad(spy)(X_BACKWARD[1:])
        assert ng.Arena().check_finite
    assert type(seen[1]._nodes) is not list
    assert type(ng.Arena()._nodes) is list  # the switch is off again outside the block


def test_non_finite_seed_is_reported_when_checking() -> None:
    arena = ng.Arena(check_finite=True)
    x = arena.param(np.array([1.0, 2.0]))
    with pytest.raises(NonFiniteError, match="seed"):
        arena.backward(x * 2.0, wrt=x, seed=np.array([1.0, np.nan]))


# -- malformed inputs ---------------------------------------------------------------------------
#
# Each Call is one public function with a builder of valid arguments and, for each argument,
# the malformed versions of it. The call must succeed with the valid arguments and raise a
# NodegradError when any one argument is replaced by a malformed version.


@dataclasses.dataclass(frozen=True)
class Call:
    name: str
    run: Callable[..., Any]  # run(arena, **args)
    args: st.SearchStrategy[dict[str, Any]]  # valid arguments
    bad: dict[str, Callable[[dict[str, Any]], list[Any]]]  # argument -> malformed versions, from all valid args

    def __repr__(self) -> str:
        return f"Call({self.name})"


def not_float_arrays(value: Any) -> list[Any]:
    """Malformed differentiable arguments: other dtypes and non-array leaves."""
    v = np.asarray(value)
    return [
        v.astype(np.int64),
        v > 0,
        v.astype(str),
        np.full(v.shape, None, dtype=object),
        v.astype(object),
        "abc",
        None,
        object(),
    ]


def not_differentiable(value: Any) -> list[Any]:
    """Malformed differentiated arguments of a transform: other dtypes than numbers, non-array
    leaves, and integer *numbers* (an integer or boolean array is differentiated as floats,
    as HIPS autograd differentiates it; an integer number is refused, as autograd refuses it)."""
    v = np.asarray(value)
    return [v.astype(str), np.full(v.shape, None, dtype=object), v.astype(object), "abc", None, object(), 3, True]


def not_numbers(value: Any) -> list[Any]:
    """Malformed constant operands: strings, objects, containers."""
    shape = np.shape(value)
    return [np.full(shape, "a"), np.full(shape, None, dtype=object), "abc", None, {"a": 1.0}, object()]


def bad_axes(ndim: int) -> list[Any]:
    out: list[Any] = [ndim, -ndim - 1, ndim + 3, 1.5, "a", [0.5], np.float64(0.0)]
    if ndim >= 1:
        out.append((0, 0))
    return out


def bad_callables(_: Any = None) -> list[Any]:
    return [3, "f", None, np.ones(2)]


def bad_argnums(nargs: int) -> list[Any]:
    return ["a", 1.5, None, (0, 0), (), nargs, -nargs - 1, [0.5]]


def bad_seeds(value: Any) -> list[Any]:
    shape = np.shape(value)
    return [
        np.ones((*shape, 2)),
        np.ones((*shape[:-1], shape[-1] + 1)) if shape else np.ones(2),
        np.full(shape, "a"),
        np.full(shape, None, dtype=object),
        np.full(shape, object(), dtype=object),
        "abc",
        {"a": 1.0},
    ]


def with_shape(shape_strategy: Any = None, lo: float = -2.0, hi: float = 2.0) -> st.SearchStrategy[np.ndarray]:
    return float_arrays(
        shapes(min_dims=1, max_dims=2, max_side=3) if shape_strategy is None else shape_strategy,
        elements=floats(lo, hi),
    )


def scalar_out(arena: ng.Arena, out: Any, *wrt: Any) -> Any:
    """Differentiate ``sum(out)``: a call only counts as accepted if its backward works too."""
    return arena.backward(ng.sum(out), wrt=list(wrt))


@st.composite
def matmul_args(draw: st.DrawFn) -> dict[str, Any]:
    n, k, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return {"x": draw(with_shape((n, k))), "y": draw(with_shape((k, m)))}


@st.composite
def same_shape_args(draw: st.DrawFn) -> dict[str, Any]:
    shape = draw(shapes(min_dims=1, max_dims=2, min_side=2, max_side=3))
    return {"x": draw(with_shape(shape)), "y": draw(with_shape(shape))}


def x_and(**extra: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"x": with_shape(), **extra})


def _mismatched(shape: tuple[int, ...]) -> list[Any]:
    return [np.ones((*shape[:-1], shape[-1] + 1)), np.ones((*shape, 2, 5))]


#: Arrays of distinct entries, two or more: std and norm have gradients everywhere on them.
DISTINCT = float_arrays(shapes(min_dims=1, max_dims=2, min_side=2, max_side=3), elements=floats(0.0, 1.0)).map(
    lambda x: x + 2.0 * np.arange(x.size).reshape(x.shape)
)


def _reduce_call(name: str, fn: Callable[..., Any]) -> Call:
    return Call(
        name,
        lambda arena, x, axis: scalar_out(arena, fn(p := arena.param(x), axis=axis), p),
        st.fixed_dictionaries({"x": DISTINCT, "axis": st.none()}),
        {"axis": lambda a: bad_axes(a["x"].ndim)},
    )


def _axis_call(name: str, fn: Callable[..., Any], new_dims: int = 0) -> Call:
    """An op taking one (int) axis, of an array of ``x.ndim + new_dims`` dimensions."""
    return Call(
        name,
        lambda arena, x, axis: scalar_out(arena, fn(p := arena.param(x), axis), p),
        x_and(axis=st.just(0)),
        {"axis": lambda a: bad_axes(a["x"].ndim + new_dims)},
    )


STRUCT = st.tuples(with_shape(), floats(-2, 2)).map(lambda wb: {"w": wb[0], "b": wb[1], "tag": "t"})


def bad_structures(value: dict[str, Any]) -> list[Any]:
    return [
        {"w": value["w"]},  # a key missing
        {**value, "extra": 1.0},  # a key too many
        {"b": value["b"], "w": value["w"], "tag": "t", "x": 0.0},
        [value["w"], value["b"], "t"],  # a list for a dict
        {"w": np.ones((*np.shape(value["w"]), 3)), "b": value["b"], "tag": "t"},  # a leaf of another shape
        {"w": np.full(np.shape(value["w"]), "s"), "b": value["b"], "tag": "t"},  # a leaf of strings
        "abc",
    ]


def _out_buffers(value: dict[str, Any]) -> dict[str, Any]:
    return {"w": np.zeros_like(value["w"]), "b": np.zeros(()), "tag": None}


def bad_buffers(args: dict[str, Any]) -> list[Any]:
    value = args["p"]
    readonly = np.zeros_like(value["w"])
    readonly.flags.writeable = False
    return [
        *bad_structures(value),
        {"w": np.zeros(np.shape(value["w"]), dtype=np.int64), "b": np.zeros(()), "tag": None},  # int buffer
        {"w": np.zeros(np.shape(value["w"]), dtype=bool), "b": np.zeros(()), "tag": None},  # bool buffer
        {"w": readonly, "b": np.zeros(()), "tag": None},
        {"w": value["w"].tolist(), "b": np.zeros(()), "tag": None},  # not an array
    ]


def _loss(p: Any) -> Any:
    return ng.sum(ng.tanh(p["w"]) * p["b"])


CALLS: list[Call] = [
    # -- transforms --
    Call(
        "grad",
        lambda arena, fun, argnums, x: ng.grad(fun, argnums=argnums)(x),
        x_and(fun=st.just(lambda x: ng.sum(ng.tanh(x))), argnums=st.just(0)),
        {"fun": bad_callables, "argnums": lambda a: bad_argnums(1), "x": lambda a: not_differentiable(a["x"])},
    ),
    Call(
        "value_and_grad(out=)",
        lambda arena, p, out: ng.value_and_grad(_loss, out=out)(p),
        STRUCT.map(lambda p: {"p": p, "out": _out_buffers(p)}),
        {"out": bad_buffers},
    ),
    Call(
        "value_and_grad(argnums=)",
        lambda arena, argnums, x, y: ng.value_and_grad(lambda a, b: ng.sum(a * b), argnums=argnums)(x, y),
        same_shape_args().map(lambda a: {**a, "argnums": (0, 1)}),
        {"argnums": lambda a: bad_argnums(2), "y": lambda a: not_differentiable(a["y"])},
    ),
    Call(
        "vjp",
        lambda arena, fun, x, seed: ng.vjp(fun, x)[1](seed),
        x_and(fun=st.just(lambda x: {"a": x * 2.0, "b": [ng.sin(x)]})).map(
            lambda a: {**a, "seed": {"a": np.ones_like(a["x"]), "b": [np.ones_like(a["x"])]}}
        ),
        {
            "fun": bad_callables,
            "x": lambda a: not_differentiable(a["x"]),
            "seed": lambda a: (
                [{"a": s, "b": [np.ones_like(a["x"])]} for s in bad_seeds(a["x"])]
                + [{"a": np.ones_like(a["x"])}, {"a": np.ones_like(a["x"]), "b": np.ones_like(a["x"])}, [1.0, 2.0]]
            ),
        },
    ),
    Call(
        "Arena.backward(seed=)",
        lambda arena, x, seed: arena.backward((p := arena.param(x)) * 2.0, wrt=p, seed=seed),
        x_and().map(lambda a: {**a, "seed": np.ones_like(a["x"])}),
        {"seed": lambda a: bad_seeds(a["x"])},
    ),
    Call(
        "Arena.backward(structured seed)",
        lambda arena, p, seed: arena.backward(
            {"w": (q := arena.param(p))["w"] * 2.0, "b": q["b"] * 3.0}, wrt=q, seed=seed
        ),
        STRUCT.map(lambda p: {"p": p, "seed": {"w": np.ones_like(p["w"]), "b": 1.0}}),
        {
            "seed": lambda a: [
                {"w": np.ones_like(a["p"]["w"])},
                {"w": np.ones_like(a["p"]["w"]), "b": 1.0, "c": 1.0},
                {"w": np.ones((*a["p"]["w"].shape, 3)), "b": 1.0},
                {"w": np.full(a["p"]["w"].shape, "s"), "b": 1.0},
                {"w": np.ones_like(a["p"]["w"]), "b": "x"},
                [np.ones_like(a["p"]["w"]), 1.0],
                "abc",
            ]
        },
    ),
    Call(
        "jvp",
        lambda arena, fun, primals, tangents: ng.jvp(fun, primals, tangents),
        x_and().map(
            lambda a: {"fun": lambda x: ng.sin(x) * x, "primals": (a["x"],), "tangents": (np.ones_like(a["x"]),)}
        ),
        {
            "fun": bad_callables,
            "tangents": lambda a: [(s,) for s in bad_seeds(a["primals"][0])] + [(), (a["primals"][0],) * 2],
            "primals": lambda a: [(v,) for v in not_differentiable(a["primals"][0])] + [a["primals"][0]],
        },
    ),
    Call(
        "hvp",
        lambda arena, x, v: ng.hvp(lambda y: ng.sum(y**3.0), x, v),
        x_and().map(lambda a: {**a, "v": np.ones_like(a["x"])}),
        {"v": lambda a: bad_seeds(a["x"]), "x": lambda a: not_differentiable(a["x"])},
    ),
    Call(
        "jacobian",
        lambda arena, fun, argnums, x: ng.jacobian(fun, argnums=argnums)(x),
        x_and(fun=st.just(lambda x: ng.sin(x) * 2.0), argnums=st.just(0)),
        {"fun": bad_callables, "argnums": lambda a: bad_argnums(1), "x": lambda a: not_differentiable(a["x"])},
    ),
    Call(
        "hessian",
        lambda arena, fun, x: ng.hessian(fun)(x),
        x_and(fun=st.just(lambda x: ng.sum(ng.sin(x)))),
        {"fun": bad_callables, "x": lambda a: not_differentiable(a["x"])},
    ),
    Call(
        "checkpoint",
        lambda arena, fun, x: ng.grad(lambda y: ng.sum(ng.checkpoint(fun)(y)))(x),
        x_and(fun=st.just(lambda y: ng.tanh(y))),
        {"fun": bad_callables},
    ),
    Call(
        "custom_vjp",
        lambda arena, fun, x: ng.grad(lambda y: ng.sum(ng.custom_vjp(fun)(y)))(x),
        x_and(fun=st.just(lambda y: ng.tanh(y))),
        {"fun": bad_callables},
    ),
    # -- tree utilities --
    Call(
        "tree.tree_map",
        lambda arena, fn, a, b: ng.tree.tree_map(fn, a, b),
        STRUCT.map(lambda p: {"fn": lambda u, v: u, "a": p, "b": p}),
        {"fn": bad_callables, "b": lambda a: bad_structures(a["a"])[:4]},
    ),
    Call(
        "tree.add",
        lambda arena, a, b: ng.tree.add(a, b),
        STRUCT.map(lambda p: {"a": p, "b": p}),
        {"b": lambda a: bad_structures(a["a"])[:4]},
    ),
    Call(
        "tree.vdot",
        lambda arena, a, b: ng.tree.vdot(a, b),
        STRUCT.map(lambda p: {"a": p, "b": p}),
        {"b": lambda a: bad_structures(a["a"])[:4]},
    ),
    Call(
        "tree.scale",
        lambda arena, tree, factor: ng.tree.scale(tree, factor),
        STRUCT.map(lambda p: {"tree": p, "factor": 0.5}),
        {"factor": lambda a: ["a", None, np.nan, np.inf, np.ones(2), {"f": 1.0}]},
    ),
    Call(
        "tree.clip_by_global_norm",
        lambda arena, tree, max_norm: ng.tree.clip_by_global_norm(tree, max_norm),
        STRUCT.map(lambda p: {"tree": p, "max_norm": 1.0}),
        {"max_norm": lambda a: ["a", None, np.nan, -1.0, 0.0, np.ones(2)]},
    ),
    # -- the arena --
    Call(
        "Arena.param",
        lambda arena, x: scalar_out(arena, arena.param(x) * 1.0),
        x_and(),
        {"x": lambda a: not_float_arrays(a["x"])},
    ),
    Call(
        "Arena.input",
        lambda arena, x: arena.input(x),
        x_and(),
        {"x": lambda a: [[1.0, [2.0, 3.0]], [a["x"], np.ones((*a["x"].shape, 2))]]},
    ),
    Call(
        "Arena.__getitem__",
        lambda arena, x, index: (arena.param(x), arena[index]),
        x_and(index=st.just(0)),
        {"index": lambda a: [10**6, -(10**6), "a", 1.5, None, (0,)]},
    ),
    Call(
        "Arena.merge",
        lambda arena, other: arena.merge(other),
        st.just({"other": ng.Arena()}),
        {"other": lambda a: [None, 3, "arena", [ng.Arena()]]},
    ),
    Call(
        "Arena.backward(wrt=)",
        lambda arena, x, wrt: arena.backward(ng.sum(arena.param(x) * 2.0), wrt=wrt(arena)),
        x_and(wrt=st.just(lambda arena: arena.param(np.ones(2)))),
        {
            "wrt": lambda a: [
                lambda arena: ng.Arena().param(np.ones(2)),  # another arena's node
                lambda arena: arena.input(np.arange(3)),  # an integer node
                lambda arena: [arena.input(np.array(["a"]))],
            ]
        },
    ),
    # -- ops, recorded into the arena and differentiated --
    Call(
        "matmul",
        lambda arena, x, y: scalar_out(arena, ng.matmul(p := arena.param(x), y), p),
        matmul_args(),
        {"y": lambda a: [np.ones((a["y"].shape[0] + 1, a["y"].shape[1])), *not_numbers(a["y"])]},
    ),
    Call(
        "add",
        lambda arena, x, y: scalar_out(arena, ng.add(p := arena.param(x), y), p),
        same_shape_args(),
        {"y": lambda a: _mismatched(a["y"].shape) + not_numbers(a["y"])},
    ),
    Call(
        "multiply",
        lambda arena, x, y: scalar_out(arena, (p := arena.param(x)) * y, p),
        same_shape_args(),
        {"y": lambda a: _mismatched(a["y"].shape) + not_numbers(a["y"])},
    ),
    Call(
        "power",
        lambda arena, x, y: scalar_out(arena, ng.power(p := arena.param(np.abs(x) + 0.5), y), p),
        same_shape_args(),
        {"y": lambda a: _mismatched(a["y"].shape) + not_numbers(a["y"])},
    ),
    Call(
        "where",
        lambda arena, x, y, mask: scalar_out(arena, ng.where(mask, p := arena.param(x), y), p),
        same_shape_args().map(lambda a: {**a, "mask": a["x"] > 0}),
        {
            "mask": lambda a: [
                np.ones(_mismatched(a["x"].shape)[0].shape, bool),
                np.full(a["x"].shape, 0.5),
                "abc",
                None,
                {"m": 1},
            ],
            "y": lambda a: _mismatched(a["y"].shape) + not_numbers(a["y"]),
        },
    ),
    Call(
        "clamp",
        lambda arena, x, lo: scalar_out(arena, ng.clamp(p := arena.param(x), lo, 1.0), p),
        same_shape_args().map(lambda a: {"x": a["x"], "lo": -1.0}),
        {"lo": lambda a: [*not_numbers(a["x"])[:2], "abc", {"a": 1.0}, object(), *_mismatched(a["x"].shape)]},
    ),
    _reduce_call("sum", ng.sum),
    _reduce_call("mean", ng.mean),
    _reduce_call("max", ng.max),
    _reduce_call("min", ng.min),
    _reduce_call("prod", ng.prod),
    _reduce_call("var", ng.var),
    _reduce_call("std", ng.std),
    _reduce_call("norm", lambda x, axis: ng.norm(x, axis=axis)),
    _reduce_call("logsumexp", ng.logsumexp),
    _reduce_call("masked_sum", lambda x, axis: ng.masked_sum(x, np.ones(x.shape, bool), axis=axis)),
    _axis_call("softmax", ng.softmax),
    _axis_call("log_softmax", ng.log_softmax),
    _axis_call("cumsum", ng.cumsum),
    _axis_call("cumprod", ng.cumprod),
    _axis_call("sort", ng.sort),
    _axis_call("flip", ng.flip),
    _axis_call("expand_dims", ng.expand_dims, new_dims=1),
    _axis_call("squeeze", lambda x, axis: ng.squeeze(ng.expand_dims(x, 0), axis), new_dims=1),
    _axis_call("swapaxes", lambda x, axis: ng.swapaxes(x, axis, 0)),
    _axis_call("moveaxis", lambda x, axis: ng.moveaxis(x, axis, 0)),
    _axis_call("moveaxis destination", lambda x, axis: ng.moveaxis(x, 0, axis)),
    _axis_call("cat", lambda x, axis: ng.cat([x, x], axis)),
    _axis_call("stack", lambda x, axis: ng.stack([x, x], axis), new_dims=1),
    _axis_call("split", lambda x, axis: ng.split(x, 1, axis)[0]),
    _axis_call("gather", lambda x, axis: ng.gather(x, np.array([0]), axis)),
    _axis_call("take_along_axis", lambda x, axis: ng.take_along_axis(x, np.zeros(x.shape, np.intp), axis)),
    _axis_call("scatter_add", lambda x, axis: ng.scatter_add(x, np.array([0]), 1.0, axis)),
    Call(
        "tensordot",
        lambda arena, x, axes: scalar_out(arena, ng.tensordot(p := arena.param(x), x, axes), p),
        st.fixed_dictionaries({"x": with_shape(shapes(min_dims=1, max_dims=1)), "axes": st.just(1)}),
        {"axes": lambda a: ["ab", 1.5, None, ([0], [0, 1]), ([5], [0]), 3]},
    ),
    Call(
        "einsum",
        lambda arena, x, spec: scalar_out(arena, ng.einsum(spec, p := arena.param(x)), p),
        st.fixed_dictionaries({"x": with_shape((2, 3)), "spec": st.just("ij->j")}),
        {"spec": lambda a: ["ijk->i", "i->i", "ij->k", 3, None, "ij->jj", "ij,jk->ik"]},
    ),
    Call(
        "reshape",
        lambda arena, x, shape: scalar_out(arena, ng.reshape(p := arena.param(x), shape), p),
        x_and().map(lambda a: {**a, "shape": (-1,)}),
        {"shape": lambda a: [(a["x"].size + 1,), (-1, -1), "ab", (1.5,), None, ("a",)]},
    ),
    Call(
        "transpose",
        lambda arena, x, axes: scalar_out(arena, ng.transpose(p := arena.param(x), axes), p),
        x_and(axes=st.none()),
        {"axes": lambda a: [(0,) * (a["x"].ndim + 1), (5,) * a["x"].ndim, "ab", (1.5,) * a["x"].ndim]},
    ),
    Call(
        "broadcast_to",
        lambda arena, x, shape: scalar_out(arena, ng.broadcast_to(p := arena.param(x), shape), p),
        x_and().map(lambda a: {**a, "shape": (2, *a["x"].shape)}),
        {"shape": lambda a: [a["x"].shape[1:], "ab", (1.5,), (-1,)]},
    ),
    Call(
        "pad",
        lambda arena, x, width: scalar_out(arena, ng.pad(p := arena.param(x), width), p),
        x_and(width=st.just(1)),
        {"width": lambda a: [-1, "ab", 1.5, [(1, 2, 3)], None]},
    ),
    Call(
        "getitem",
        lambda arena, x, index: scalar_out(arena, (p := arena.param(x))[index], p),
        x_and(index=st.just(0)),
        {
            "index": lambda a: [
                a["x"].shape[0],
                np.array([0.5]),
                np.array([a["x"].shape[0] + 2]),
                np.ones(a["x"].shape[0] + 1, bool),
                "a",
                1.5,
                {"a": 0},
            ]
        },
    ),
    Call(
        "gather indices",
        lambda arena, x, indices: scalar_out(arena, ng.gather(p := arena.param(x), indices), p),
        x_and(indices=st.just(np.array([0]))),
        {"indices": lambda a: [np.array([0.5]), np.array([a["x"].shape[0]]), "a", None, np.array([True])]},
    ),
    Call(
        "index_add",
        lambda arena, x, v, index: scalar_out(arena, ng.index_add(p := arena.param(x), v, index), p),
        x_and(v=st.just(1.0), index=st.just(np.array([0]))),
        {
            "index": lambda a: [np.array([0.5]), np.array([a["x"].shape[0]]), "a"],
            "v": lambda a: [np.ones((*a["x"].shape[1:], 7)), *not_numbers(1.0)],
        },
    ),
    Call(
        "segment_sum",
        lambda arena, x, ids, num: scalar_out(arena, ng.segment_sum(p := arena.param(x), ids, num), p),
        x_and().map(lambda a: {**a, "ids": np.zeros(a["x"].shape[0], np.intp), "num": 2}),
        {
            "ids": lambda a: [
                np.zeros(a["x"].shape[0] + 1, np.intp),
                np.full(a["x"].shape[0], -1),
                np.zeros(a["x"].shape[0]),
                "a",
            ],
            "num": lambda a: [0, -1, "a", 1.5],
        },
    ),
    Call(
        "cross_entropy",
        lambda arena, x, targets: arena.backward(ng.cross_entropy(p := arena.param(x), targets), wrt=p),
        st.fixed_dictionaries({"x": with_shape((2, 3)), "targets": st.just(np.array([0, 2]))}),
        {"targets": lambda a: [np.array([0, 3]), np.array([0]), np.array([0.5, 1.0]), "ab", None, np.ones((2, 4))]},
    ),
    Call(
        "layer_norm",
        lambda arena, x, weight: scalar_out(arena, ng.layer_norm(p := arena.param(x), weight), p),
        st.fixed_dictionaries({"x": with_shape((2, 3)), "weight": with_shape((3,))}),
        {"weight": lambda a: [np.ones(4), np.ones((3, 3)), *(v for v in not_numbers(a["weight"]) if v is not None)]},
    ),
    Call(
        "ssm_scan",
        lambda arena, x, a: scalar_out(arena, ng.ssm_scan(a, 1.0, p := arena.param(x)), p),
        same_shape_args().map(lambda d: {"x": d["x"], "a": np.full(d["x"].shape, 0.5)}),
        {"a": lambda d: [np.ones((d["x"].shape[0] + 2, 5, 7)), *not_numbers(d["a"])]},
    ),
    Call(
        "one_hot",
        lambda arena, indices, num: ng.one_hot(indices, num),
        st.just({"indices": np.array([0, 2]), "num": 3}),
        {"indices": lambda a: [np.array([0.5]), np.array([3]), "a", None], "num": lambda a: ["a", None, 1.5]},
    ),
]

CALLS_BY_NAME = {call.name: call for call in CALLS}


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array({value.dtype}{list(value.shape)})"
    if callable(value) and getattr(value, "__name__", "") == "<lambda>":
        return "<lambda>"
    text = repr(value)
    return text if len(text) < 60 else type(value).__name__


def _assert_usable(arena: ng.Arena) -> None:
    """The arena records and differentiates as before."""
    x = arena.param(np.array([1.0, -2.0, 3.0]))
    y = ng.sum(ng.tanh(x) * x)
    np.testing.assert_allclose(arena.backward(y, wrt=x), np.tanh(x.value) + x.value * (1 - np.tanh(x.value) ** 2))


def _outcome(call: Call, args: dict[str, Any], name: str, bad: Any) -> str | None:
    """``None`` when the malformed call raises a NodegradError and the arena stays usable;
    else what went wrong."""
    arena = ng.Arena()
    try:
        call.run(arena, **{**args, name: bad})
    except NodegradError:
        pass
    except Exception as exc:  # the point of the test: nothing else may escape
        return f"{call.name}({name}={_describe(bad)}) raised a raw {type(exc).__name__}: {exc}"
    else:
        return f"{call.name}({name}={_describe(bad)}) raised nothing"
    try:
        _assert_usable(arena)
    except Exception as exc:
        return f"{call.name}({name}={_describe(bad)}) left the arena unusable: {type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
@given(data=st.data())
@settings(max_examples=10)
def test_valid_calls_succeed(call: Call, data: st.DataObject) -> None:
    """The builders' arguments are valid: an error below is the corruption's doing."""
    args = data.draw(call.args, label="args")
    arena = ng.Arena()
    call.run(arena, **args)  # numpy's warnings are errors under this project's pytest settings
    _assert_usable(arena)


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
@given(data=st.data())
@settings(max_examples=5, phases=[Phase.generate])  # no shrinking: every problem is listed as found
def test_every_malformed_argument_raises_a_nodegrad_error(call: Call, data: st.DataObject) -> None:
    """Each malformed version of each argument, on drawn valid arguments: all problems at once."""
    args = data.draw(call.args, label="args")
    problems = [
        problem
        for name, corrupt in call.bad.items()
        for bad in corrupt(args)
        if (problem := _outcome(call, args, name, bad)) is not None
    ]
    assert not problems, "\n".join(problems)


@st.composite
def malformed_calls(draw: st.DrawFn) -> tuple[Call, dict[str, Any], str, Any]:
    call = draw(st.sampled_from(CALLS))
    args = draw(call.args)
    name = draw(st.sampled_from(sorted(call.bad)))
    bad = draw(st.sampled_from(call.bad[name](args)))
    return call, args, name, bad


@given(malformed_calls())
@settings(max_examples=300, phases=[Phase.generate])
def test_a_random_public_call_with_one_argument_corrupted(drawn: tuple[Call, dict[str, Any], str, Any]) -> None:
    call, args, name, bad = drawn
    problem = _outcome(call, args, name, bad)
    assert problem is None, problem


_X = np.array([0.5, -1.0, 2.0])
_X1 = np.array([0.5])

#: One fixed reproducer per kind of malformed argument: the fuzzing above, pinned down.
MALFORMED_EXAMPLES = [
    pytest.param(lambda: ng.grad(3)(_X), id="grad-of-a-non-callable"),
    pytest.param(lambda: ng.vjp("f", _X), id="vjp-of-a-non-callable"),
    pytest.param(lambda: ng.jvp(None, (_X,), (_X,)), id="jvp-of-a-non-callable"),
    pytest.param(lambda: ng.jacobian(3)(_X), id="jacobian-of-a-non-callable"),
    pytest.param(lambda: ng.custom_vjp(3)(ng.Arena().param(_X)), id="custom_vjp-of-a-non-callable"),
    pytest.param(lambda: ng.tree.tree_map(3, {"a": 1.0}), id="tree_map-of-a-non-callable"),
    pytest.param(lambda: ng.grad(ng.sum, argnums="a")(_X), id="argnums-a-string"),
    pytest.param(lambda: ng.grad(ng.sum, argnums=1.5)(_X), id="argnums-a-float"),
    pytest.param(lambda: ng.grad(ng.sum, argnums=None)(_X), id="argnums-none"),
    pytest.param(lambda: ng.grad(ng.sum, argnums=[0.5])(_X), id="argnums-a-list-of-floats"),
    pytest.param(lambda: ng.jacobian(ng.sin, argnums="a")(_X), id="jacobian-argnums-a-string"),
    pytest.param(lambda: ng.sum(ng.Arena().param(_X), axis=1.5), id="axis-a-float"),
    pytest.param(lambda: ng.softmax(ng.Arena().param(_X), axis=np.float64(0.0)), id="axis-a-numpy-float"),
    pytest.param(lambda: ng.gather(ng.Arena().param(_X), np.array([0]), axis="a"), id="gather-axis-a-string"),
    pytest.param(lambda: ng.cat([_X, _X], axis=(0, 0)), id="cat-axis-a-tuple"),
    pytest.param(lambda: ng.stack([_X, _X], axis=1.5), id="stack-axis-a-float"),
    pytest.param(lambda: ng.moveaxis(ng.Arena().param(_X), 0, 3), id="moveaxis-out-of-range"),
    pytest.param(lambda: ng.sort(ng.Arena().param(_X), axis=1), id="sort-axis-out-of-range"),
    pytest.param(lambda: ng.tensordot(_X, _X, axes=([5], [0])), id="tensordot-axis-out-of-range"),
    pytest.param(lambda: ng.tensordot(_X, _X, axes="ab"), id="tensordot-axes-a-string"),
    pytest.param(lambda: ng.reshape(_X, "ab"), id="reshape-to-a-string"),
    pytest.param(lambda: ng.reshape(_X, (3.7,)), id="reshape-to-a-float"),
    pytest.param(lambda: ng.transpose(ng.Arena().param(np.ones((2, 2))), "ab"), id="transpose-axes-a-string"),
    pytest.param(lambda: ng.broadcast_to(_X, (2, 3.5)), id="broadcast_to-floats"),
    pytest.param(lambda: ng.pad(_X, 1.5), id="pad-width-a-float"),
    pytest.param(lambda: ng.pad(_X, None), id="pad-width-none"),
    pytest.param(lambda: ng.einsum(3, _X), id="einsum-subscripts-not-a-string"),
    pytest.param(lambda: ng.where(_X > 0, ng.Arena().param(_X), "abc"), id="where-branch-a-string"),
    pytest.param(lambda: ng.one_hot(np.array([0, 1]), "a"), id="one_hot-num_classes-a-string"),
    pytest.param(lambda: ng.segment_sum(_X, np.array([0, 0, 1]), "a"), id="segment_sum-num-a-string"),
    pytest.param(lambda: ng.segment_sum(_X, np.array([0, 0, 1]), 2.5), id="segment_sum-num-a-float"),
    pytest.param(lambda: ng.tree.scale({"a": 1.0}, "a"), id="tree-scale-by-a-string"),
    pytest.param(lambda: ng.tree.clip_by_global_norm({"a": 1.0}, None), id="clip-max_norm-none"),
    pytest.param(lambda: ng.Arena()["a"], id="arena-index-a-string"),
    pytest.param(lambda: ng.Arena().merge(3), id="merge-a-non-arena"),
    pytest.param(lambda: ng.Arena().input([1.0, [2.0, 3.0]]), id="input-ragged"),
    pytest.param(lambda: ng.vjp(lambda x: x * 2.0, _X)[1](np.full(3, "a")), id="vjp-seed-of-strings"),
    pytest.param(lambda: ng.vjp(lambda x: x * 2.0, _X)[1](np.full(3, None)), id="vjp-seed-of-nones"),
    pytest.param(
        lambda: ng.vjp(lambda x: {"a": x}, _X)[1]({"a": np.full(3, object())}), id="vjp-structured-seed-of-objects"
    ),
    pytest.param(lambda: ng.value_and_grad(ng.sum, out=np.zeros(3, dtype=np.int64))(_X), id="out-buffer-of-integers"),
    pytest.param(lambda: ng.hvp(lambda x: ng.sum(x**3.0), _X1, np.ones(3)), id="hvp-v-of-another-shape"),
    pytest.param(lambda: ng.jvp(lambda x: x * 2.0, (_X1,), (np.ones(3),)), id="jvp-tangent-of-another-shape"),
]


@pytest.mark.parametrize("call", MALFORMED_EXAMPLES)
def test_malformed_example_raises_a_nodegrad_error(call: Callable[[], Any]) -> None:
    try:
        call()
    except NodegradError:
        return
    except Exception as exc:
        pytest.fail(f"raised a raw {type(exc).__name__}: {exc}")
    pytest.fail("raised nothing")


def test_ssm_scan_checks_a_even_with_a_single_time_step() -> None:
    # With T = 1 the scan never multiplies by ``a``: a string slips through forward and backward.
    arena = ng.Arena()
    x = arena.param(np.ones(1))
    with pytest.raises(NodegradError):
        arena.backward(ng.sum(ng.ssm_scan("abc", 1.0, x)), wrt=x)
    _assert_usable(arena)


def test_errors_derive_from_the_builtin_a_caller_expects() -> None:
    with pytest.raises(TypeError):
        ng.grad(lambda x: ng.sum(x))(3)
    with pytest.raises(ValueError, match="seed"):
        ng.vjp(lambda x: x * 2.0, np.ones(3))[1](np.ones(2))
    assert issubclass(DtypeError, TypeError) and issubclass(ArenaError, RuntimeError)


# -- repeated sweeps, releasing, memory ---------------------------------------------------------------


def test_backward_twice_with_different_seeds_is_independent() -> None:
    arena = ng.Arena()
    x0 = np.array([0.5, -1.0, 2.0])
    x = arena.param(x0)
    y = ng.sin(x) * x
    d = np.cos(x0) * x0 + np.sin(x0)
    s1, s2 = np.array([1.0, 0.0, 2.0]), np.array([-3.0, 1.0, 0.5])
    s1_copy = s1.copy()
    g1 = arena.backward(y, wrt=x, seed=s1)
    g2 = arena.backward(y, wrt=x, seed=s2)
    g1_again = arena.backward(y, wrt=x, seed=s1)
    np.testing.assert_allclose(g1, d * s1)
    np.testing.assert_allclose(g2, d * s2)
    np.testing.assert_array_equal(g1_again, g1)  # nothing accumulated in between
    np.testing.assert_array_equal(s1, s1_copy)  # the seed was not written to
    assert g1 is not g1_again and not np.shares_memory(g1, g1_again)
    g1[:] = 99.0  # the caller owns its gradient: writing to it changes no later result
    np.testing.assert_allclose(arena.backward(y, wrt=x, seed=s1), d * s1)


def test_backward_of_a_structure_twice() -> None:
    arena = ng.Arena()
    p = arena.param({"w": np.array([1.0, 2.0]), "b": 3.0})
    out = {"u": p["w"] * p["b"], "v": p["b"] * 2.0}
    first = arena.backward(out, wrt=p, seed={"u": np.ones(2), "v": 1.0})
    second = arena.backward(out, wrt=p, seed={"u": np.zeros(2), "v": 1.0})
    np.testing.assert_allclose(first["w"], [3.0, 3.0])
    assert first["b"] == pytest.approx(3.0 + 2.0)
    np.testing.assert_allclose(second["w"], [0.0, 0.0])
    assert second["b"] == pytest.approx(2.0)


def test_retain_false_releases_values_and_forbids_another_backward() -> None:
    arena = ng.Arena()
    x = arena.param(np.ones(10_000))
    h = x
    for _ in range(5):
        h = ng.tanh(h * 1.5)
    y = ng.sum(h)
    held = arena.nbytes
    assert held >= 6 * 80_000
    g = arena.backward(y, wrt=x, retain=False)
    assert g.shape == (10_000,) and np.all(np.isfinite(g))
    assert arena.nbytes <= 80_000 + 16  # only the leaf is left
    assert arena.nbytes < held
    with pytest.raises(ArenaError, match="released"):
        arena.backward(y, wrt=x)
    # The leaf itself is kept: a new computation from it works in a fresh arena.
    np.testing.assert_array_equal(x.value, np.ones(10_000))


def test_retain_true_by_default_keeps_everything() -> None:
    arena = ng.Arena()
    x = arena.param(np.ones(100))
    y = ng.sum(ng.exp(x))
    held = arena.nbytes
    arena.backward(y, wrt=x)
    assert arena.nbytes == held
    arena.backward(y, wrt=x)


def test_nbytes_counts_each_array_once() -> None:
    arena = ng.Arena()
    assert arena.nbytes == 0
    x = arena.param(np.ones(1000))
    assert arena.nbytes == 8000
    y = x * 2.0  # its argument is x's own value: only y's value is new
    assert arena.nbytes == 16_000
    z = x + x  # x's value twice in the arguments, still once in the count
    assert arena.nbytes == 24_000
    ng.sum(y * z)  # a product of 8000 bytes, a sum of 8
    assert arena.nbytes == 32_008
    f32 = arena.param(np.ones(10, np.float32))
    assert arena.nbytes == 32_048
    arena.param({"a": f32.value, "b": np.ones(5)})  # a shared array in a structure: counted once
    assert arena.nbytes == 32_088


def test_nbytes_does_not_count_a_view_of_held_data_again() -> None:
    # nbytes is "bytes of array data the arena holds alive": a reshape or a transpose of a
    # held array is a view of the same data, and holds no new bytes alive.
    arena = ng.Arena()
    x = arena.param(np.ones((100, 10)))
    ng.reshape(x, (1000,))
    ng.transpose(x)
    assert arena.nbytes == 8000


# -- threads ----------------------------------------------------------------------------------------


def test_two_threads_differentiate_at_the_same_time() -> None:
    iterations = 150
    barrier = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, iterations, 4))

    def first(k: int) -> None:
        # first-order gradients, each inside an arena entered with `with`
        for x in xs[0]:
            with ng.Arena() as arena:
                assert current_arena() is arena
                p = arena.param(x)
                g = arena.backward(ng.sum(ng.tanh(p) * p), wrt=p)
                assert current_arena() is arena
            np.testing.assert_allclose(g, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-12)
            np.testing.assert_allclose(ng.grad(lambda z: ng.sum(ng.exp(z) * z))(x), np.exp(x) * (1 + x), rtol=1e-12)

    def second(k: int) -> None:
        # higher order, structured values and NaN checking, all at once
        for x in xs[1]:
            hv = ng.hvp(lambda z: ng.sum(ng.sin(z) * z), x, np.ones(4))
            np.testing.assert_allclose(hv, 2 * np.cos(x) - x * np.sin(x), rtol=1e-12, atol=1e-12)
            g = ng.grad(lambda p: ng.sum(p["a"] * p["b"]), check_finite=True)({"a": x, "b": 2.0})
            np.testing.assert_allclose(g["a"], 2.0)
            assert g["b"] == pytest.approx(float(np.sum(x)))

    def worker(job: Callable[[int], None], k: int) -> None:
        try:
            barrier.wait()
            job(k)
            barrier.wait()
        except BaseException as exc:
            barrier.abort()
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(job, k)) for k, job in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


def test_current_arena_and_nan_checking_are_per_thread() -> None:
    barrier = threading.Barrier(2, timeout=30)
    seen: dict[str, Any] = {}
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            with ng.Arena() as arena, ng.debug_nans():
                seen["holder"] = arena
                seen["holder_checks"] = ng.Arena().check_finite
                barrier.wait()  # 1: the other thread looks now
                barrier.wait()  # 2: it has looked
                seen["holder_still"] = current_arena() is arena
        except BaseException as exc:
            barrier.abort()
            errors.append(exc)

    def looker() -> None:
        try:
            barrier.wait()  # 1
            seen["looker"] = current_arena()
            seen["looker_checks"] = ng.Arena().check_finite
            with ng.Arena() as mine:
                seen["looker_own"] = current_arena() is mine
            barrier.wait()  # 2
        except BaseException as exc:
            barrier.abort()
            errors.append(exc)

    threads = [threading.Thread(target=holder), threading.Thread(target=looker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert seen["looker"] is None  # the holder's arena is not this thread's
    assert seen["looker_own"] and seen["holder_still"]
    assert seen["holder_checks"] and not seen["looker_checks"]
    assert current_arena() is None


# -- checking switched on late, nested, and in recorded sweeps ------------------------------------


def test_backward_check_finite_checks_an_arena_made_without_checking() -> None:
    arena = ng.Arena()
    x = arena.param(X_BACKWARD)
    y = backward_nan(x)
    assert not arena.check_finite
    with pytest.raises(NonFiniteError) as info:
        arena.backward(y, wrt=x, check_finite=True)
    assert str(info.value).startswith("sqrt (node 1) produced a non-finite gradient")
    assert "the where at node 2" in str(info.value)
    assert arena.check_finite  # from now on
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError, match=r"^log \(node"):
        ng.log(x - 1.0)


def test_backward_check_finite_reports_a_non_finite_value_recorded_before() -> None:
    arena = ng.Arena()
    x = arena.param(X_FORWARD)
    with np.errstate(invalid="ignore"):
        y = forward_nan(x)
    with pytest.raises(NonFiniteError, match=r"^log \(node 2 of this arena\) holds a non-finite value"):
        arena.backward(y, wrt=x, check_finite=True)


def test_a_nan_in_a_recorded_sweep_is_a_non_finite_error_naming_the_rule() -> None:
    f = lambda x: ng.sum(ng.sqrt(x))
    with ng.debug_nans(), pytest.raises(NonFiniteError, match="gradient rule of 'sqrt'"):
        ng.hvp(f, np.array([0.0, 1.0]), np.ones(2))


def test_check_finite_on_a_nested_grad_checks_the_enclosing_arena() -> None:
    inner = ng.grad(lambda y: ng.sum(ng.sqrt(y)), check_finite=True)
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError):
        ng.grad(lambda x: ng.sum(inner(x)))(np.array([0.0, 1.0]))


def test_the_where_hint_sees_through_ops_between_the_branch_and_the_where() -> None:
    with pytest.raises(NonFiniteError) as info:
        ng.grad(lambda x: ng.sum(ng.where(x > 0, ng.sqrt(x) * 2.0, 0.0)), check_finite=True)(X_BACKWARD)
    assert "the where at node 3" in str(info.value)
    assert "Mask the input, not only the output" in str(info.value)


def test_a_zero_cotangent_times_an_infinite_derivative_is_explained_without_a_where() -> None:
    mask = np.array([0.0, 1.0, 1.0])
    with pytest.raises(NonFiniteError) as info:
        ng.grad(lambda x: ng.sum(ng.sqrt(x) * mask), check_finite=True)(X_BACKWARD)
    assert "0 times an infinite derivative" in str(info.value)


def test_a_failed_recorded_sweep_leaves_no_nodes_behind() -> None:
    @ng.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    # np.asarray leaves nodegrad: this bwd cannot be recorded, so create_graph fails midway.
    square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * np.asarray(x) * g,))
    arena = ng.Arena()
    x = arena.param(np.array([1.0, 2.0]))
    y = ng.sum(ng.tanh(square(x)) * 3.0)
    size = len(arena)
    with pytest.raises(ng.errors.NoGradientError, match="custom"):
        arena.backward(y, wrt=x, create_graph=True)
    assert len(arena) == size
    np.testing.assert_allclose(arena.backward(y, wrt=x), 3.0 * (1 - np.tanh([1.0, 4.0]) ** 2) * [2.0, 4.0])


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(lambda: ng.grad(lambda x: "a")(1.0), DtypeError, id="string-output"),
        pytest.param(lambda: ng.grad(lambda x: None)(1.0), DtypeError, id="none-output"),
        pytest.param(lambda: ng.grad(lambda x: x * 1j)(1.0), DtypeError, id="complex-output"),
        pytest.param(lambda: ng.grad(lambda x: x, options="strict")(1.0), ng.errors.ArgumentError, id="options"),
        pytest.param(lambda: ng.GradOptions(zero_missing_wrt="x"), ng.errors.ArgumentError, id="grad-options"),
        pytest.param(lambda: ng.jvp(lambda x: x, np.ones(2), np.ones(2)), ng.errors.ArgumentError, id="jvp-primals"),
        pytest.param(lambda: ng.jvp(lambda x: "a", (1.0,), (1.0,)), DtypeError, id="jvp-string-output"),
    ],
)
def test_outputs_and_options_that_make_no_sense_are_refused(call: Callable[[], Any], error: type) -> None:
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("wrt", ["x", np.ones(2), {"w": 1.0}], ids=["string", "array", "plain-dict"])
def test_backward_wrt_without_traced_values_is_refused(wrt: Any) -> None:
    arena = ng.Arena()
    x = arena.param(np.ones(2))
    with pytest.raises(ArenaError, match="wrt must hold traced values"):
        arena.backward(ng.sum(x), wrt=wrt)
    assert arena.backward(ng.sum(x), wrt=[]) == []


def test_a_nan_names_the_key_paths_its_inputs_were_computed_from() -> None:
    params = {"w": np.array([0.0, 4.0]), "b": 1.0, "unused": np.ones(2)}
    with pytest.raises(NonFiniteError) as info:
        ng.grad(lambda p: ng.sum(ng.sqrt(p["w"] * p["b"] * 2.0)), check_finite=True)(params)
    message = str(info.value)
    assert "from args[0]['w'], args[0]['b']" in message
    assert "unused" not in message


@pytest.mark.parametrize("kind", ["custom_vjp", "where", "checkpoint"])
def test_a_cotangent_written_between_two_sweeps_gives_the_new_answer(kind: str) -> None:
    # Rules share work per cotangent object (custom_vjp's kept answer, where's split):
    # the caller's array, reused and written in place, must not bring back the old answer.
    mask = np.array([True, False, True])
    custom = ng.custom_vjp(lambda x: x * 2.0)
    custom.defvjp(lambda x: (x * 2.0, None), lambda residuals, g: (g * 2.0,))
    fun = {
        "custom_vjp": custom,
        "where": lambda x: ng.where(mask, x, -x),
        "checkpoint": ng.checkpoint(lambda x: ng.where(mask, x * 2.0, -x)),
    }[kind]
    x = np.ones(3)
    _, back = ng.vjp(fun, x)
    _, back_dict = ng.vjp(lambda x: {"out": fun(x)}, x)
    cotangent, in_dict = np.ones(3), {"out": np.ones(3)}
    first, first_dict = back(cotangent)[0], back_dict(in_dict)[0]
    cotangent[:] = 3.0
    in_dict["out"][:] = 3.0
    np.testing.assert_allclose(back(cotangent)[0], 3.0 * first)
    np.testing.assert_allclose(back_dict(in_dict)[0], 3.0 * first_dict)
    arena = ng.Arena()
    p = arena.param(x)
    y = fun(p)
    seed = np.ones(3)
    once = arena.backward(y, wrt=p, seed=seed)
    seed[:] = 3.0
    np.testing.assert_allclose(arena.backward(y, wrt=p, seed=seed), 3.0 * once)


def test_iterating_a_0d_traced_value_raises_as_numpy_does() -> None:
    # Python would otherwise iterate through __getitem__ and stop at the first IndexError:
    # a 0-d value gave no entries, and this gradient came out as 1.0 instead of raising.
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        ng.grad(lambda z: sum(list(z), 0.0) + z)(np.array(2.0))
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        list(np.array(2.0))  # the behaviour being matched
    g = ng.grad(lambda z: sum((row[0] * row[1] for row in z), 0.0))(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(g, [[2.0, 1.0], [4.0, 3.0]])


def test_leaving_an_arena_twice_or_from_another_thread_is_an_arena_error() -> None:
    arena = ng.Arena()
    with arena:
        pass
    with pytest.raises(ArenaError, match="not entered in this thread"):
        arena.__exit__(None, None, None)
    arena.__enter__()
    errors: list[BaseException] = []

    def leave_elsewhere() -> None:
        try:
            arena.__exit__(None, None, None)
        except BaseException as exc:  # the test inspects what was raised
            errors.append(exc)

    thread = threading.Thread(target=leave_elsewhere)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], ArenaError)
    arena.__exit__(None, None, None)  # this thread can still leave it
    assert current_arena() is None


def test_a_failed_sweep_that_releases_leaves_the_arena_released_as_a_whole() -> None:
    failing = ng.custom_vjp(lambda x: x * 2.0)

    def bwd(residuals: Any, g: Any) -> Any:
        msg = "bwd failed"
        raise RuntimeError(msg)

    failing.defvjp(lambda x: (x * 2.0, None), bwd)
    arena = ng.Arena()
    p = arena.param(np.ones(3))
    y = ng.sum(ng.exp(failing(ng.sin(p))))
    with pytest.raises(RuntimeError, match="bwd failed"):
        arena.backward(y, wrt=p, retain=False)
    with pytest.raises(ArenaError, match="released by backward"):
        arena.backward(y, wrt=p)


@pytest.mark.parametrize("alias", ["the argument", "a view of it"])
def test_an_out_buffer_that_is_the_argument_is_refused_and_the_argument_kept(alias: str) -> None:
    params = {"w": np.array([1.0, 2.0, 3.0]), "b": np.array([0.5])}
    buffers = params if alias == "the argument" else {"w": params["w"][:], "b": np.zeros(1)}
    f = ng.value_and_grad(lambda p: ng.sum(p["w"] ** 2.0) + ng.sum(p["b"]), out=buffers)
    with pytest.raises(ArgumentError, match=r"out\['w'\] shares memory with the argument"):
        f(params)
    np.testing.assert_array_equal(params["w"], [1.0, 2.0, 3.0])  # not overwritten
    separate = {"w": np.zeros(3), "b": np.zeros(1)}
    _, g = ng.value_and_grad(lambda p: ng.sum(p["w"] ** 2.0) + ng.sum(p["b"]), out=separate)(params)
    np.testing.assert_array_equal(g["w"], [2.0, 4.0, 6.0])


def _raises(exc: BaseException) -> Any:
    def fail(*args: Any) -> Any:
        raise exc

    return fail


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (OverflowError("math range error"), NonFiniteError),
        (ZeroDivisionError("division by zero"), NonFiniteError),
        (AttributeError("'object' has no attribute 'conjugate'"), DtypeError),
        (ValueError("bad value"), ng.errors.ShapeError),
    ],
)
def test_a_builtin_failure_in_a_forward_or_a_rule_is_a_nodegrad_error_naming_the_op(
    exc: BaseException, expected: type
) -> None:
    forward_fails = Op("test_failing_forward", _raises(exc), (lambda g, ans, x: g,), "test")
    rule_fails = Op("test_failing_rule", lambda x: x * 1.0, (_raises(exc),), "test")
    arena = ng.Arena()
    p = arena.param(np.ones(2))
    with pytest.raises(expected, match="test_failing_forward: inputs do not fit") as info:
        record1(forward_fails, p)
    assert info.value.__cause__ is exc and len(arena) == 1
    y = ng.sum(record1(rule_fails, p))
    with pytest.raises(expected, match=r"op 'test_failing_rule': its gradient rule failed on inputs \(float64\[2\]\)"):
        arena.backward(y, wrt=p)
    np.testing.assert_array_equal(arena.backward(ng.sum(p * 2.0), wrt=p), [2.0, 2.0])  # still usable


def test_a_users_own_exception_in_a_custom_rule_stays_the_users() -> None:
    class MineError(Exception):
        pass

    custom = ng.custom_vjp(lambda x: x * 2.0)
    custom.defvjp(lambda x: (x * 2.0, None), _raises(MineError("from bwd")))
    with pytest.raises(MineError, match="from bwd"):
        ng.grad(lambda x: ng.sum(custom(x)))(np.ones(2))


def _pickled_loss(x: Any) -> Any:
    return np.sum(np.sin(x) ** 2.0)


def _pickled_fwd(x: Any) -> Any:
    return np.sum(x * x), x


def _pickled_bwd(x: Any, g: Any) -> Any:
    return (2.0 * g * x,)


def test_transformed_module_level_functions_pickle_and_traced_values_refuse() -> None:
    # Process pools and Dask ship functions by pickling them.
    custom = ng.custom_vjp(_pickled_loss)
    custom.defvjp(_pickled_fwd, _pickled_bwd)
    x = np.array([0.3, 0.7])
    for fun in (
        ng.grad(_pickled_loss),
        ng.value_and_grad(_pickled_loss),
        ng.hessian(_pickled_loss),
        ng.jacfwd(_pickled_loss),
        ng.elementwise_grad(_pickled_loss),
        ng.checkpoint(_pickled_loss),
        custom,
    ):
        again = pickle.loads(pickle.dumps(fun))
        assert type(again) is type(fun) and again.__name__ == "_pickled_loss"
        np.testing.assert_allclose(np.asarray(again(x)[-1] if isinstance(again(x), tuple) else again(x)),
                                   np.asarray(fun(x)[-1] if isinstance(fun(x), tuple) else fun(x)))  # fmt: skip
    np.testing.assert_allclose(ng.grad(pickle.loads(pickle.dumps(custom)))(x), 2.0 * x)
    arena = ng.Arena()
    traced = arena.param(x)
    with pytest.raises(ArenaError, match=r"traced value .* cannot be pickled"):
        pickle.dumps({"w": traced})
    with pytest.raises(ArenaError, match="arena cannot be pickled"):
        pickle.dumps(arena)
    # A handle never changes: copying one, or a structure holding one, copies no arena.
    assert copy.deepcopy(traced) is traced and copy.copy(traced) is traced
    assert copy.deepcopy({"w": traced})["w"] is traced and len(arena) == 1


@ng.custom_vjp
def _decorated_custom(x: Any) -> Any:
    return x * 2.0


_decorated_custom.defvjp(lambda x: (x * 2.0, x), lambda x, g: (2.0 * g * np.cos(x),))  # a deliberate rule


@ng.checkpoint
def _decorated_checkpoint(x: Any) -> Any:
    return np.sum(np.sin(x) * x)


@ng.grad
def _decorated_grad(x: Any) -> Any:
    return np.sum(np.sin(x) * x)


def test_functions_decorated_at_module_level_pickle_by_their_name() -> None:
    # The module's name now means the wrapper, so the function inside cannot be pickled by
    # reference: the wrapper is, as a function would be (to a process pool or a Dask worker).
    x = np.array([0.3, -0.7])
    for fun in (_decorated_custom, _decorated_checkpoint, _decorated_grad):
        assert pickle.loads(pickle.dumps(fun)) is fun
    shipped = pickle.dumps((_decorated_custom, _decorated_checkpoint, _decorated_grad, x)).hex()
    code = (
        "import json, pickle, numpy as np, nodegrad as ng\n"
        f"custom, block, g, x = pickle.loads(bytes.fromhex({shipped!r}))\n"
        "grads = [ng.grad(lambda x: ng.sum(custom(x)))(x), ng.grad(block)(x), g(x)]\n"
        "print(json.dumps([v.tolist() for v in grads]))"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    expected = (2.0 * np.cos(x), np.sin(x) + x * np.cos(x), np.sin(x) + x * np.cos(x))
    np.testing.assert_allclose(np.array(json.loads(done.stdout)), np.array(expected), rtol=1e-13)
    # A function made inside another is not reachable by name: pickled as what makes it.
    local = ng.checkpoint(_pickled_loss)
    assert pickle.loads(pickle.dumps(local)) is not local


def test_debug_nans_sees_every_value_of_a_large_gradient_call() -> None:
    # A transform's arena keeps only the values its rules read (NaN stand-ins for the rest),
    # except when it checks values: under debug_nans every value is real and checked.
    x = np.linspace(0.0, 1.0, 20_000)  # 160 KB: large enough for stand-ins
    loss = lambda x: ng.sum(ng.tanh(ng.sin(x) * 1.01) + 0.5)
    with ng.debug_nans():
        g = ng.grad(loss)(x)
    np.testing.assert_allclose(g, ng.grad(loss)(x))
    np.testing.assert_allclose(g, (1.0 - np.tanh(np.sin(x) * 1.01) ** 2) * 1.01 * np.cos(x), rtol=1e-12)


# -- what a newcomer runs into: each error says what to write instead --------------------------


def test_item_assignment_on_a_traced_value_points_to_ng_at() -> None:
    def f(x: Any) -> Any:
        x[0] = 0.0
        return ng.sum(x)

    with pytest.raises(TypeError, match=r"cannot be assigned into.*ng\.at\(x\)\[index\]\.set\(value\)"):
        ng.grad(f)(np.ones(3))
    # what the message suggests gives the gradient of the array with that entry replaced
    g = ng.grad(lambda x: ng.sum(ng.at(x)[0].set(0.0) * 2.0))(np.ones(3))
    np.testing.assert_array_equal(g, [0.0, 2.0, 2.0])


def test_float_of_a_traced_value_names_the_function_the_user_called() -> None:
    import math

    with pytest.raises(ArenaError, match=r"math\.sin\(\) of a traced value .* use np\.sin\(x\)"):
        ng.grad(lambda x: math.sin(x))(1.0)
    with pytest.raises(ArenaError, match=r"math\.log1p\(\) of a traced value .* use np\.log1p\(x\)"):
        ng.grad(lambda x: math.log1p(x))(1.0)
    with pytest.raises(ArenaError, match=r"^float\(\) of a traced value .* keep it a traced value"):
        ng.grad(lambda x: float(x) * 2.0)(1.0)
    # a message that names one function never names another
    with pytest.raises(ArenaError) as info:
        ng.grad(lambda x: math.sqrt(x))(1.0)
    assert "math.sqrt()" in str(info.value) and "math.exp" not in str(info.value)


_WARNINGS_FROM_THE_USERS_LINE = """
import warnings
import numpy as np
import nodegrad as ng

def loss(x):
    return ng.sum(ng.log(x))  # line 7: log of a negative number

with warnings.catch_warnings(record=True) as caught:  # the filters as they are: Python's defaults
    ng.grad(loss)(np.array([-1.0, 1.0]))
    ng.grad(lambda x: ng.sum(np.sqrt(x)))(np.array([0.0, 1.0]))  # line 11: the rule divides by 0
    y = ng.log(np.array([-2.0]))  # line 12: a plain value through an op
for w in caught:
    print(w.category.__name__, w.filename.endswith("user.py"), w.lineno, w.message)
"""


def test_numpy_warnings_are_issued_from_the_users_line(tmp_path: Path) -> None:
    # In a fresh interpreter: pytest's own warning filters come before nodegrad's.
    script = tmp_path / "user.py"
    script.write_text(_WARNINGS_FROM_THE_USERS_LINE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "RuntimeWarning True 7 invalid value encountered in log",
        "RuntimeWarning True 11 divide by zero encountered in divide",
        "RuntimeWarning True 12 invalid value encountered in log",
    ]


def test_a_warning_from_code_given_with_python_c_is_issued_there() -> None:
    # `python -c` code has no source file: its line cannot be shown, but it is the line named.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    code = "import numpy as np, nodegrad as ng\nprint(ng.log(np.array([-1.0])))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[nan]"
    assert "<string>:2: RuntimeWarning: invalid value encountered in log" in done.stderr


def test_a_rule_giving_a_cotangent_of_another_shape_is_an_error_not_a_gradient() -> None:
    op = ng.ops.REGISTRY["sin"]
    right = op.vjps
    object.__setattr__(op, "vjps", (lambda g, ans, x: np.stack([g * np.cos(x)] * 2, axis=-1),))
    try:
        with pytest.raises(ng.errors.ShapeError, match=r"a gradient of shape \(3, 2\) reached an input of shape"):
            ng.grad(lambda x: ng.sum(ng.sin(x)))(np.ones(3))
    finally:
        object.__setattr__(op, "vjps", right)
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(ng.sin(x)))(np.ones(3)), np.cos(np.ones(3)))
