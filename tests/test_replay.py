"""``ng.replay`` against the eager call: the same results, bit for bit, and what it records.

Every replayed result here is compared with the function called eagerly on the same
arguments (:func:`assert_identical`): the same structure (types, keys, their order), and
leaf by leaf the same type, dtype, shape and bytes (the sign of zero, NaN where NaN).
Beside the results, the tests check what a replay records (``traces``: one program per
signature and per path through a branch, a guard where a value became a Python one, a
shape check where a shape depends on values), that calls with a recorded signature are
replayed (the function's own Python code does not run: :class:`Calls` counts its runs),
what a recording refuses (random draws: :class:`~nodegrad.errors.RandomDrawError`), what
makes a signature run eagerly (a write a tape cannot repeat, ``max_traces``:
:class:`~nodegrad.errors.ReplayWarning`, once, the results still right), and how replay
composes with the other transforms, around them and inside them. A replayable function
issues no ReplayWarning (:func:`no_replay_warnings`).

The properties at the end draw small programs (:func:`programs`): a few operations from a
menu (sin, tanh, a square, constants, another field, a sum, a max or a cumulative sum over
an axis, a matmul with a constant, a gather with an index array, a ``where`` whose mask
comes from the values, a concatenation, a reshape, a reversal) applied to the fields of a
dict or an attrs record of float64 arrays of drawn shapes. The replay of the program, of
the gradient of a scalar loss of it, of its per-example gradients (``vmap`` of ``grad``)
and of second-order derivatives (``hvp``, ``grad`` of a ``grad``-based scalar,
``hessian`` of a flat input) equal the eager calls on the first call and on values drawn
again with the same signature, recording one program; a program that branches on a value
records one program per path taken, and no more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import attrs
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
import nodegrad.numpy as gnp
from nodegrad.engine.structure import flatten
from nodegrad.errors import ArgumentError, NonFiniteError, RandomDrawError, ReplayWarning
from tests.strategies import float_arrays, shapes

RNG = np.random.default_rng(20240917)
SOME = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# -- the comparison ---------------------------------------------------------------------------------


def assert_identical(got: Any, expected: Any, what: str = "") -> None:
    """The same structure and, leaf by leaf, the same type, dtype, shape and bytes."""
    got_leaves, got_def = flatten(got)
    expected_leaves, expected_def = flatten(expected)
    assert type(got) is type(expected), f"{what}: a {type(got).__name__}, eagerly a {type(expected).__name__}"
    assert repr(got_def) == repr(expected_def), f"{what}: structure {got_def}, eagerly {expected_def}"
    for k, (a, b) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        assert type(a) is type(b), f"{what}: leaf {k} is a {type(a).__name__}, eagerly a {type(b).__name__}"
        if isinstance(b, np.ndarray | np.generic):
            assert a.dtype == b.dtype, f"{what}: leaf {k} is {a.dtype}, eagerly {b.dtype}"
            assert np.shape(a) == np.shape(b), f"{what}: leaf {k} has shape {np.shape(a)}, eagerly {np.shape(b)}"
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), f"{what}: leaf {k}: {a!r}, eagerly {b!r}"
        else:
            assert repr(a) == repr(b), f"{what}: leaf {k}: {a!r}, eagerly {b!r}"


@contextlib.contextmanager
def no_replay_warnings() -> Iterator[None]:
    """A ReplayWarning inside is an error: the function must be recorded and replayed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        yield


def check_calls(fast: Callable[..., Any], fun: Callable[..., Any], calls: list[tuple[Any, ...]], what: str) -> None:
    """``fast(*args)`` is identical to ``fun(*args)`` for each ``args`` of ``calls``."""
    for k, args in enumerate(calls):
        expected = fun(*args)
        assert_identical(fast(*args), expected, f"{what}, call {k}")


class Calls:
    """A function that counts the runs of its Python code: a recording runs it, an eager
    call runs it, a replay does not."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        self.fun = fun
        self.runs = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.fun(*args, **kwargs)


# -- structured values ------------------------------------------------------------------------------


@attrs.define
class Params:
    w: Any
    b: Any


@dataclasses.dataclass
class Box:
    w: Any
    b: Any


class Pair(NamedTuple):
    w: Any
    b: Any


def _as_dict(w: Any, b: Any) -> dict[str, Any]:
    return {"w": w, "b": b}


def _as_list(w: Any, b: Any) -> list[Any]:
    return [w, b]


KINDS: dict[str, Callable[[Any, Any], Any]] = {
    "dict": _as_dict,
    "attrs record": Params,
    "dataclass": Box,
    "named tuple": Pair,
    "list": _as_list,
}


def _fields(value: Any) -> tuple[Any, Any]:
    if isinstance(value, dict):
        return value["w"], value["b"]
    if isinstance(value, list):
        return value[0], value[1]
    return value.w, value.b


# -- recording once, replaying after ------------------------------------------------------------------


def _mixed(x: Any, y: Any) -> Any:
    return np.tanh(x) @ y + np.sin(np.sum(y, axis=0)) * 0.5


def test_the_first_call_records_and_later_calls_replay_bit_for_bit() -> None:
    fun = Calls(_mixed)
    fast = ng.replay(fun)
    calls = [(_normal(3), _normal(3, 4)) for _ in range(4)]
    with no_replay_warnings():
        for k, (x, y) in enumerate(calls):
            assert_identical(fast(x, y), _mixed(x, y), f"call {k}")
    assert len(fast.traces) == 1
    assert fun.runs == 1, f"the function ran {fun.runs} times: its later calls were not replayed"


def test_a_trace_lists_its_instructions_checks_and_program() -> None:
    fast = ng.replay(lambda x, y: np.sin(x) * 2.0 + np.sum(y))
    fast(np.zeros(3), np.ones((2, 3)))
    (trace,) = fast.traces
    assert trace.signature == "float64[3], float64[2, 3]"
    assert len(trace.instructions) == 4  # sin, *, sum, +
    assert trace.guards == 0
    assert trace.program.source.startswith("def program(v0, v1):")
    shown = repr(trace)
    assert shown.splitlines()[0] == "Trace(float64[3], float64[2, 3]: 4 instructions, 0 checks)"
    assert "sin" in shown and "sum" in shown
    assert len(shown.splitlines()) == 5


def test_a_replay_is_a_function_of_its_arguments_only_once_recorded() -> None:
    # Python side effects happen when the function is recorded, never when it is replayed.
    log: list[str] = []

    def fun(x: Any) -> Any:
        log.append("ran")
        return np.cos(x) - x

    fast = ng.replay(fun)
    for _ in range(3):
        x = _normal(2)
        assert_identical(fast(x), np.cos(x) - x, "cos")
    assert log == ["ran"]


# -- signatures ---------------------------------------------------------------------------------------


def test_each_signature_records_its_own_program_and_reuses_it() -> None:
    def fun(x: Any, scale: Any, mode: str) -> Any:
        return np.sin(x) * scale if mode == "sin" else np.cos(x) * scale

    counted = Calls(fun)
    fast = ng.replay(counted)
    signatures = [
        (_normal(3), 2.0, "sin"),
        (_normal(4), 2.0, "sin"),  # another shape
        (_normal(3).astype(np.float32), 2.0, "sin"),  # another dtype
        (_normal(3), 3.0, "sin"),  # a Python number is a constant: another value, another signature
        (_normal(3), 2.0, "cos"),  # a string: the same
        (_normal(2, 2), np.float64(2.0), "sin"),  # a numpy scalar is an array leaf
    ]
    with no_replay_warnings():
        check_calls(fast, fun, signatures, "first calls")
        assert len(fast.traces) == len(signatures)
        again = [(np.asarray(_normal(*np.shape(x))).astype(x.dtype), s, m) for x, s, m in signatures]
        check_calls(fast, fun, again, "again")
        check_calls(fast, fun, [(_normal(2, 2), np.float64(-0.5), "sin")], "a numpy scalar of another value")
    assert len(fast.traces) == len(signatures)
    assert counted.runs == len(signatures)
    assert fast(np.ones(3, np.float32), 2.0, "sin").dtype == np.float32


def test_the_structure_of_the_arguments_is_part_of_the_signature() -> None:
    fun = Calls(lambda d: sum(np.sum(np.tanh(v)) for v in d.values()))
    fast = ng.replay(fun)
    calls = [
        ({"a": _normal(2)},),
        ({"a": _normal(2), "b": _normal(2)},),
        ({"b": _normal(2), "a": _normal(2)},),  # another key order: another sum order
        ({"a": _normal(2)},),
        ({"b": _normal(2), "a": _normal(2)},),
    ]
    with no_replay_warnings():
        check_calls(fast, fun.fun, calls, "dicts")
    assert len(fast.traces) == 3
    assert fun.runs == 3


def test_static_argnums_are_part_of_the_signature_by_value() -> None:
    def fun(x: Any, n: int) -> Any:
        return np.concatenate([x, np.arange(n, dtype=x.dtype)]) * n

    counted = Calls(fun)
    fast = ng.replay(counted, static_argnums=1)
    calls = [(_normal(2), 2), (_normal(2), 3), (_normal(2), 2), (_normal(2), 3)]
    with no_replay_warnings():
        check_calls(fast, fun, calls, "static n")
    assert len(fast.traces) == 2
    assert counted.runs == 2
    assert [t.signature for t in fast.traces] == ["float64[2]", "float64[2]"]


def test_static_argnames_are_part_of_the_signature_by_value() -> None:
    def fun(x: Any, *, how: str, axis: int = 0) -> Any:
        reduce = np.max if how == "max" else np.min
        return reduce(x, axis=axis)

    counted = Calls(fun)
    fast = ng.replay(counted, static_argnames=("how", "axis"))
    x = _normal(3, 4)
    with no_replay_warnings():
        for how, axis in [("max", 0), ("min", 0), ("max", 1), ("max", 0), ("min", 0), ("max", 1)]:
            y = x * RNG.uniform(0.5, 2.0)
            assert_identical(fast(y, how=how, axis=axis), fun(y, how=how, axis=axis), f"{how}, axis {axis}")
    assert len(fast.traces) == 3
    assert counted.runs == 3


def test_a_static_argument_of_a_function_is_part_of_the_signature() -> None:
    fast = ng.replay(lambda f, x: f(x) + 1.0, static_argnums=0)
    with no_replay_warnings():
        for f in (np.sin, np.cos, np.sin):
            x = _normal(3)
            assert_identical(fast(f, x), f(x) + 1.0, f.__name__)
    assert len(fast.traces) == 2


def test_keyword_and_default_arguments_replay() -> None:
    def fun(x: Any, y: Any = 2.0, *, z: Any) -> Any:
        return x * y + np.cos(z)

    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        for k in range(3):
            x, y, z = _normal(2), _normal(2), _normal(2)
            assert_identical(fast(x, z=z), fun(x, z=z), f"y by default, call {k}")
            assert_identical(fast(x=x, y=y, z=z), fun(x=x, y=y, z=z), f"all by keyword, call {k}")
    assert len(fast.traces) == 2  # (x, z=) and (x=, y=, z=): two structures of arguments
    assert counted.runs == 2


def test_results_that_are_not_arrays_come_back_as_they_are() -> None:
    def fun(x: Any) -> Any:
        return {"y": np.sin(x), "total": np.sum(x), "tag": "loss", "none": None, "n": 3, "scale": 2.5, "on": True}

    fast = ng.replay(fun)
    with no_replay_warnings():
        check_calls(fast, fun, [(_normal(3),) for _ in range(3)], "mixed results")
    assert len(fast.traces) == 1
    assert type(fast(np.ones(3))["total"]) is np.float64


def test_a_replay_raises_what_the_function_raises() -> None:
    fun = lambda x, i: x[i] * 2.0
    fast = ng.replay(fun)
    x = np.arange(3.0)
    with no_replay_warnings():
        check_calls(fast, fun, [(x, np.array([0, 2])), (x * 2, np.array([1, 1]))], "gather")
        with pytest.raises(IndexError):
            fun(x, np.array([0, 5]))
        with pytest.raises(IndexError):
            fast(x, np.array([0, 5]))
        check_calls(fast, fun, [(x * 3, np.array([2, 0]))], "after the error")
    assert len(fast.traces) == 1


@pytest.mark.parametrize("bad", [-1, True, 1.5, "8"])
def test_max_traces_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ArgumentError, match="max_traces"):
        ng.replay(np.sin, max_traces=bad)


# -- guards: conversions to Python values ---------------------------------------------------------------

TABLE = [0.5, -1.5, 2.5, 4.0]


def _by_bool(x: Any) -> Any:
    if np.sum(x) > 0:
        return x * 2.0
    return -x


def _by_int(x: Any) -> Any:
    return x * int(np.argmax(x)) + np.arange(int(np.argmax(x)) + 1).sum()


def _by_float(x: Any) -> Any:
    return x * 3.0 if float(np.max(x)) > 1.0 else x - 1.0


def _by_index(x: Any) -> Any:
    return x * TABLE[np.argmax(x)]  # a list indexed by a value: __index__


def _by_item(x: Any) -> Any:
    return x * (1.0 + np.argmin(x).item())


def _by_tolist(x: Any) -> Any:
    return x * sum(1 for positive in (x > 0).tolist() if positive)


GUARDED: dict[str, tuple[Callable[[Any], Any], np.ndarray, np.ndarray, np.ndarray]] = {
    # kind: (function, a value, another value converted to the same Python value (the same
    # path), a value converted to another one)
    "bool": (_by_bool, np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.25, 3.0]), np.array([-1.0, -2.0, 0.5])),
    "int": (_by_int, np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.75, -3.0]), np.array([3.0, 2.0, -0.5])),
    "float": (_by_float, np.array([1.0, 2.0, -0.5]), np.array([2.0, -2.0, 0.5]), np.array([0.5, 0.25, -3.0])),
    "index": (_by_index, np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.75, -3.0]), np.array([-1.0, -2.0, 0.5])),
    "item": (_by_item, np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.75, -3.0]), np.array([-1.0, -2.0, 0.5])),
    "tolist": (_by_tolist, np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.75, -3.0]), np.array([-1.0, -2.0, 0.5])),
}


@pytest.mark.parametrize("kind", sorted(GUARDED))
def test_a_conversion_to_python_is_guarded_and_each_path_recorded_once(kind: str) -> None:
    fun, first, same_path, other_path = GUARDED[kind]
    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        check_calls(fast, fun, [(first,), (same_path,)], "the first path")
        assert len(fast.traces) == 1, "the same path was recorded again"
        assert fast.traces[0].guards >= 1
        assert re.search(rf"\b{kind}\(v\d+", repr(fast.traces[0])), repr(fast.traces[0])  # the guard, shown
        check_calls(fast, fun, [(other_path,)], "the other path")
        assert len(fast.traces) == 2, "a guard that came out differently did not record the other path"
        check_calls(fast, fun, [(first,), (other_path,), (same_path,), (other_path,)], "both paths again")
    assert len(fast.traces) == 2
    assert counted.runs == 2


def test_a_branch_inside_a_gradient_is_guarded() -> None:
    def loss(x: Any) -> Any:
        if np.sum(x) > 0:
            return np.sum(np.sin(x) * x)
        return np.sum(x**3)

    fast = ng.replay(ng.grad(loss))
    calls = [(np.array([1.0, 2.0]),), (np.array([-1.0, -2.0]),), (np.array([0.5, 0.25]),), (np.array([-3.0, 1.0]),)]
    with no_replay_warnings():
        check_calls(fast, ng.grad(loss), calls, "grad with a branch")
    assert len(fast.traces) == 2


@pytest.mark.parametrize(
    ("name", "fun"),
    [
        ("boolean mask", lambda x: x[x > 0] * 2.0),
        ("nonzero", lambda x: np.nonzero(x > 0)),
        ("flatnonzero", lambda x: np.flatnonzero(x > 0) * 1.5),
    ],
)
def test_a_shape_that_depends_on_values_is_checked(name: str, fun: Callable[[Any], Any]) -> None:
    counted = Calls(fun)
    fast = ng.replay(counted)
    two = np.array([1.0, -2.0, 3.0])  # two positive entries (two distinct rounded values)
    also_two = np.array([-1.0, 2.0, 3.4])
    one = np.array([-1.0, -2.0, 3.0])
    three = np.array([1.0, 2.0, 3.0])
    with no_replay_warnings():
        check_calls(fast, fun, [(two,), (also_two,)], name)
        assert len(fast.traces) == 1
        assert fast.traces[0].guards >= 1
        assert "shape checked" in repr(fast.traces[0])
        check_calls(fast, fun, [(one,), (three,), (two,), (one * 2,), (also_two,)], f"{name}, other shapes")
    assert len(fast.traces) == 3  # two, one and three entries
    assert counted.runs == len(fast.traces)


# -- max_traces -----------------------------------------------------------------------------------------


def _replay_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ReplayWarning)]


def test_past_max_traces_new_signatures_run_eagerly_with_one_warning() -> None:
    counted = Calls(lambda x: np.sin(x) * 2.0)
    fast = ng.replay(counted, max_traces=2)
    with no_replay_warnings():
        check_calls(fast, counted.fun, [(_normal(1),), (_normal(2),)], "recorded")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_calls(fast, counted.fun, [(_normal(3),), (_normal(4),), (_normal(3),), (_normal(5),)], "eager")
    reasons = _replay_warnings(caught)
    assert len(reasons) == 1, reasons
    assert "max_traces=2" in reasons[0]
    assert len(fast.traces) == 2
    assert counted.runs == 2 + 4  # each call past max_traces runs the function
    with no_replay_warnings():  # the recorded signatures still replay, silently
        check_calls(fast, counted.fun, [(_normal(1),), (_normal(2),)], "replayed")
    assert counted.runs == 6


def test_a_new_path_past_max_traces_runs_eagerly() -> None:
    counted = Calls(_by_bool)
    fast = ng.replay(counted, max_traces=1)
    positive, negative = np.array([1.0, 2.0]), np.array([-1.0, -2.0])
    with no_replay_warnings():
        check_calls(fast, _by_bool, [(positive,)], "recorded")
    with pytest.warns(ReplayWarning, match="max_traces=1"):
        check_calls(fast, _by_bool, [(negative,)], "past max_traces")
    with no_replay_warnings():  # warned once; the recorded path still replays
        check_calls(fast, _by_bool, [(negative * 3,), (positive * 3,)], "after")
    assert len(fast.traces) == 1
    assert counted.runs == 3


def test_max_traces_zero_always_runs_eagerly() -> None:
    counted = Calls(np.tanh)
    fast = ng.replay(counted, max_traces=0)
    with pytest.warns(ReplayWarning, match="max_traces=0"):
        check_calls(fast, np.tanh, [(_normal(3),)], "max_traces=0")
    check_calls(fast, np.tanh, [(_normal(3),)], "again")
    assert fast.traces == []
    assert counted.runs == 2


# -- random draws: refused --------------------------------------------------------------------------------


def _global_normal(x: Any) -> Any:
    return x + np.random.normal(size=x.shape)


def _global_through_nodegrad(x: Any) -> Any:
    return x + gnp.random.normal(size=x.shape)


def _global_uniform(x: Any) -> Any:
    return x * np.random.rand()


def _python_random(x: Any) -> Any:
    return x + random.random()


def _python_gauss(x: Any) -> Any:
    return x + random.gauss(0.0, 1.0)


def _unseeded(x: Any) -> Any:
    return x + np.random.default_rng().normal(size=x.shape)


def _unseeded_through_nodegrad(x: Any) -> Any:
    return x + gnp.random.default_rng().normal(size=x.shape)


def _from_argument(x: Any, gen: np.random.Generator) -> Any:
    return x + gen.normal(size=x.shape)


REFUSED: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], str]] = {
    # name: (function, its arguments, what the message says)
    "np.random.normal": (_global_normal, lambda: (np.ones(3),), r"np\.random\.normal\(\)"),
    "nodegrad.numpy.random.normal": (_global_through_nodegrad, lambda: (np.ones(3),), r"np\.random\.normal\(\)"),
    "np.random.rand": (_global_uniform, lambda: (np.ones(3),), r"np\.random\.rand\(\)"),
    "random.random": (_python_random, lambda: (np.ones(3),), "Python's random module"),
    "random.gauss": (_python_gauss, lambda: (np.ones(3),), "Python's random module"),
    "default_rng()": (_unseeded, lambda: (np.ones(3),), r"default_rng\(\) without a seed"),
    "nodegrad default_rng()": (_unseeded_through_nodegrad, lambda: (np.ones(3),), r"default_rng\(\) without a seed"),
    "a Generator argument": (
        _from_argument,
        lambda: (np.ones(3), np.random.default_rng(7)),
        r"generator an argument \(Generator\)",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_random_draw_while_recording_is_refused(name: str) -> None:
    fun, make_args, names = REFUSED[name]
    normal, default_rng, gnp_normal = np.random.normal, np.random.default_rng, gnp.random.normal
    fast = ng.replay(fun)
    with pytest.raises(RandomDrawError, match=names) as raised:
        fast(*make_args())
    assert "pass them in as an argument" in str(raised.value)
    assert fast.traces == []
    # numpy's functions are numpy's own again, and drawing works outside a recording
    assert np.random.normal is normal and np.random.default_rng is default_rng
    assert gnp.random.normal is gnp_normal
    assert np.shape(fun(*make_args())) == (3,)


def test_a_draw_from_a_closed_over_generator_is_refused() -> None:
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    fast = ng.replay(lambda x: x * gen.standard_normal(x.shape))
    with pytest.raises(RandomDrawError, match="generator gen") as raised:
        fast(np.ones(2))
    assert "pass them in as an argument" in str(raised.value)
    assert fast.traces == []
    assert gen.bit_generator.state != state  # the draw happened; it is the recording that is refused


def test_a_generator_passed_as_a_static_argument_is_refused_too() -> None:
    fast = ng.replay(_from_argument, static_argnums=1)
    with pytest.raises(RandomDrawError, match="Generator"):
        fast(np.ones(3), np.random.default_rng(1))


def test_random_values_passed_in_as_an_argument_replay() -> None:
    fast = ng.replay(lambda x, noise: x + 0.1 * noise)
    gen = np.random.default_rng(11)
    with no_replay_warnings():
        for _ in range(3):
            x, noise = _normal(3), gen.normal(size=3)
            assert_identical(fast(x, noise), x + 0.1 * noise, "noise as an argument")
    assert len(fast.traces) == 1


def test_a_seeded_generator_made_inside_is_deterministic_and_replays() -> None:
    def fun(x: Any) -> Any:
        return x + np.random.default_rng(0).normal(size=x.shape)

    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        check_calls(fast, fun, [(_normal(3),) for _ in range(3)], "seeded default_rng(0)")
    assert len(fast.traces) == 1
    assert counted.runs == 1


def test_a_draw_inside_a_library_function_the_tape_calls_once_is_allowed() -> None:
    # np.apply_along_axis is one recorded call: a replay calls it again, and it draws again.
    def fun(x: Any) -> Any:
        return np.apply_along_axis(lambda row: row + np.random.normal(size=row.shape), 0, x)

    fast = ng.replay(fun)
    x = _normal(2, 3)
    results = []
    saved = np.random.get_state()
    try:
        with no_replay_warnings():
            for _ in range(3):
                np.random.seed(5)
                results.append(fast(x))
        np.random.seed(5)
        expected = fun(x)
    finally:
        np.random.set_state(saved)
    for k, got in enumerate(results):
        assert_identical(got, expected, f"call {k}")
    assert len(fast.traces) == 1


# -- what a recording cannot repeat: eager, with a warning ------------------------------------------------


def _write_an_entry_into_a_plain_array(x: Any) -> Any:
    buf = np.zeros(3)
    buf[0] = x[0]
    return buf * x


def _write_a_slice_into_a_plain_array(x: Any) -> Any:
    buf = np.zeros(3)
    buf[:2] = x[:2]
    return buf * x


def _out_into_a_plain_array(x: Any) -> Any:
    buf = np.zeros(3)
    np.add(x, x, out=buf)
    return buf - 1.0


def _asarray(x: Any) -> Any:
    return np.asarray(x) * 2.0


UNREPLAYABLE: dict[str, Callable[[Any], Any]] = {
    "buf[:2] = x[:2]": _write_a_slice_into_a_plain_array,
    "np.add(x, x, out=buf)": _out_into_a_plain_array,
    "np.asarray(x)": _asarray,
}


def test_an_entry_written_into_a_plain_array_is_a_guard_on_its_value() -> None:
    """numpy reads one entry written into a plain array with float(): a Python value, so a
    guard (the same entry replays; another records the function again), not a refusal."""
    fast = ng.replay(_write_an_entry_into_a_plain_array)
    x = np.array([1.0, -2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        check_calls(fast, _write_an_entry_into_a_plain_array, [(x,), (x * [1.0, 2.0, 3.0],)], "same entry")
        assert len(fast.traces) == 1
        assert any(step.kind == "float" for step in fast.traces[0].instructions)
        check_calls(fast, _write_an_entry_into_a_plain_array, [(x * 2.0,)], "another entry")
        assert len(fast.traces) == 2


@pytest.mark.parametrize("name", sorted(UNREPLAYABLE))
def test_what_a_recording_cannot_repeat_runs_eagerly_with_a_warning(name: str) -> None:
    fun = UNREPLAYABLE[name]
    fast = ng.replay(fun)
    x = np.array([1.0, -2.0, 3.0])
    with pytest.warns(ReplayWarning, match="runs eagerly for this signature"):
        got = fast(x)
    assert_identical(got, fun(x), name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_calls(fast, fun, [(x * k,) for k in (2.0, -0.5, 3.0)], f"{name}, again")
    assert _replay_warnings(caught) == [], "the reason was given more than once"
    assert fast.traces == []


def _writes_its_argument_then_branches(x: Any) -> Any:
    x += 1.0
    if np.sum(x) > 0:
        return x * 2.0
    return x - 1.0


def _writes_its_argument(x: Any) -> Any:
    x *= 2.0
    return np.sin(x)


def _sets_an_entry_of_its_argument(x: Any) -> Any:
    x[0] = 0.5
    return np.sin(x)


@pytest.mark.parametrize(
    "fun", [_writes_its_argument_then_branches, _writes_its_argument, _sets_an_entry_of_its_argument]
)
def test_a_function_writing_into_its_argument_gives_the_eager_result(fun: Callable[[Any], Any]) -> None:
    fast = ng.replay(fun)
    for k, values in enumerate([[1.0, -2.0, 3.0], [-4.0, 0.5, 1.0], [2.0, 2.0, 2.0]]):
        mine, theirs = np.array(values), np.array(values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReplayWarning)
            got = fast(mine)
        assert_identical(got, fun(theirs), f"call {k}")
        assert_identical(mine, theirs, f"the argument after call {k}")


def test_a_write_into_an_argument_then_a_branch_warns() -> None:
    fast = ng.replay(_writes_its_argument_then_branches)
    with pytest.warns(ReplayWarning, match="writes into an argument"):
        fast(np.ones(3))


def test_writing_into_an_array_the_tape_holds_replays() -> None:
    def fun(x: Any) -> Any:
        y = x * 2.0
        y[0] = 0.0
        y += 1.0
        np.multiply(y, x, out=y)
        return y

    fast = ng.replay(fun)
    with no_replay_warnings():
        check_calls(fast, fun, [(_normal(3),) for _ in range(3)], "writes into its own arrays")
    assert len(fast.traces) == 1


# -- results are the caller's -------------------------------------------------------------------------------


CONSTANT = np.array([1.0, 2.0, 3.0])


def test_a_returned_array_that_does_not_depend_on_the_arguments_is_fresh_each_call() -> None:
    def fun(x: Any) -> Any:
        return np.ones(2), CONSTANT * 2.0, x + 1.0

    fast = ng.replay(fun)
    x = np.zeros(1)
    with no_replay_warnings():
        for k in range(4):
            got = fast(x)
            assert_identical(got, fun(x), f"call {k}")
            for leaf in got:
                leaf[...] = 99.0  # the caller's to change
    assert len(fast.traces) == 1
    np.testing.assert_array_equal(CONSTANT, [1.0, 2.0, 3.0])


def test_results_do_not_share_memory_with_each_other_across_calls() -> None:
    fast = ng.replay(lambda x: np.sin(x))
    first, second = fast(np.zeros(2)), fast(np.zeros(2))
    assert not np.shares_memory(first, second)


# -- debug_nans -------------------------------------------------------------------------------------------


def _log_loss(x: Any) -> Any:
    return ng.sum(ng.log(x))


def test_debug_nans_through_a_replay_names_the_op() -> None:
    fun = ng.value_and_grad(_log_loss)
    fast = ng.replay(fun)
    with no_replay_warnings():
        assert_identical(fast(np.array([1.0, 2.0])), fun(np.array([1.0, 2.0])), "recorded")
    with ng.debug_nans(), pytest.raises(NonFiniteError, match="log"):
        fun(np.array([1.0, -1.0]))  # eagerly
    with ng.debug_nans(), pytest.raises(NonFiniteError, match="log"):
        fast(np.array([1.0, -1.0]))  # replayed: the NaN reaches the value, so the call runs again eagerly
    with ng.debug_nans():
        assert_identical(fast(np.array([3.0, 0.5])), fun(np.array([3.0, 0.5])), "finite, inside debug_nans")
    assert len(fast.traces) == 1


def test_debug_nans_on_the_first_call_of_a_replay_names_the_op() -> None:
    fast = ng.replay(ng.grad(lambda x: ng.sum(ng.sqrt(x))))
    with ng.debug_nans(), pytest.raises(NonFiniteError, match="sqrt"):
        fast(np.array([4.0, -1.0]))
    assert fast.traces == []


def test_without_debug_nans_a_nan_is_replayed_as_a_nan() -> None:
    fun = ng.value_and_grad(_log_loss)
    fast = ng.replay(fun)
    fast(np.array([1.0, 2.0]))
    with np.errstate(invalid="ignore"):
        assert_identical(fast(np.array([1.0, -1.0])), fun(np.array([1.0, -1.0])), "NaN")


# -- composition: transforms inside a replay ------------------------------------------------------------------


def _loss(x: Any) -> Any:
    return np.sum(np.sin(x) * x**2) + np.sum(np.tanh(x)) ** 2


def _vjp_and_back(x: Any) -> Any:
    y, back = ng.vjp(lambda x: np.tanh(x) * x, x)
    return y, back(np.ones_like(y) * 0.5)


def _jvp(x: Any, v: Any) -> Any:
    return ng.jvp(lambda x: np.sin(x) * np.cos(x) ** 2, (x,), (v,))


def _hvp(x: Any, v: Any) -> Any:
    return ng.hvp(_loss, x, v)


COMPOSED: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]] = {
    "grad": (ng.grad(_loss), lambda: (_normal(3),)),
    "value_and_grad": (ng.value_and_grad(_loss), lambda: (_normal(3),)),
    "vjp and its backward": (_vjp_and_back, lambda: (_normal(4),)),
    "jvp": (_jvp, lambda: (_normal(3), _normal(3))),
    "hessian": (ng.hessian(_loss), lambda: (_normal(3),)),
    "hvp": (_hvp, lambda: (_normal(3), _normal(3))),
    "vmap of grad": (ng.vmap(ng.grad(_loss)), lambda: (_normal(4, 3),)),
    "vmap": (ng.vmap(lambda x: np.sin(x) * x**2), lambda: (_normal(4, 3),)),
    "grad of grad": (ng.grad(lambda x: np.sum(ng.grad(_loss)(x) ** 2)), lambda: (_normal(3),)),
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_a_replay_of_a_transform_equals_the_transform(name: str) -> None:
    fun, make_args = COMPOSED[name]
    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        check_calls(fast, fun, [make_args() for _ in range(4)], name)
    assert len(fast.traces) == 1
    assert counted.runs == 1


# -- composition: a replay inside a transform ---------------------------------------------------------------


def test_grad_of_a_replay_runs_the_function_eagerly_inside_grad() -> None:
    counted = Calls(_loss)
    fast = ng.replay(counted)
    with no_replay_warnings():
        for k in range(3):
            x = _normal(3)
            assert_identical(ng.grad(fast)(x), ng.grad(_loss)(x), f"grad {k}")
            assert_identical(ng.value_and_grad(fast)(x), ng.value_and_grad(_loss)(x), f"value_and_grad {k}")
        assert fast.traces == []
        x = _normal(3)
        assert_identical(fast(x), _loss(x), "recorded")  # a recording, then grad again: still eager inside
        assert_identical(ng.grad(fast)(x * 2), ng.grad(_loss)(x * 2), "grad after a recording")
    assert len(fast.traces) == 1


@pytest.mark.parametrize(
    ("name", "transform"),
    [
        ("vmap", lambda f: ng.vmap(f)),
        ("jvp", lambda f: lambda x: ng.jvp(f, (x,), (np.ones_like(x),))),
        ("hessian", lambda f: ng.hessian(lambda x: np.sum(f(x)))),
        ("jacobian", lambda f: ng.jacobian(f)),
    ],
)
def test_a_replay_inside_a_transform_equals_the_function_inside_it(name: str, transform: Callable[..., Any]) -> None:
    fun = lambda x: np.sin(x) * x + np.sum(x**2)
    fast = ng.replay(fun)
    with no_replay_warnings():
        for k in range(2):
            x = _normal(2, 3) if name == "vmap" else _normal(3)
            assert_identical(transform(fast)(x), transform(fun)(x), f"{name} {k}")
    assert fast.traces == []


def test_a_replay_inside_a_replay_of_grad() -> None:
    inner = ng.replay(_loss)
    fast = ng.replay(ng.grad(lambda x: inner(x) * 2.0))
    with no_replay_warnings():
        check_calls(fast, ng.grad(lambda x: _loss(x) * 2.0), [(_normal(3),) for _ in range(3)], "nested replays")
    assert len(fast.traces) == 1
    assert inner.traces == []  # called with traced values only: eagerly, inside the recording of grad


def test_a_replay_closing_over_a_value_traced_by_grad_gives_the_right_gradient() -> None:
    x0, y0 = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)  # it may run eagerly: what matters is the gradient
        got = ng.grad(lambda y: np.sum(ng.replay(lambda x: x * y)(x0)))(y0)
        value, grad = ng.value_and_grad(lambda y: np.sum(ng.replay(lambda x: np.sin(x * y))(x0)))(y0)
    assert_identical(got, ng.grad(lambda y: np.sum(x0 * y))(y0), "grad")
    np.testing.assert_array_equal(got, x0)
    assert_identical(value, np.sum(np.sin(x0 * y0)), "value")
    assert_identical(grad, ng.grad(lambda y: np.sum(np.sin(x0 * y)))(y0), "value_and_grad")


def test_a_replay_closing_over_a_value_batched_by_vmap_gives_the_loop() -> None:
    x0 = np.array([1.0, 2.0, 3.0])
    ys = _normal(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)
        got = ng.vmap(lambda y: ng.replay(lambda x: np.tanh(x * y))(x0))(ys)
    np.testing.assert_array_equal(got, np.stack([np.tanh(x0 * y) for y in ys]))


# -- structured values in and out ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_function_of_a_structure_returns_the_same_structure(kind: str) -> None:
    make = KINDS[kind]

    def fun(p: Any) -> Any:
        w, b = _fields(p)
        return make(np.tanh(w @ b), b * np.sum(w))

    fast = ng.replay(fun)
    calls = [(make(_normal(2, 3), _normal(3)),) for _ in range(3)]
    with no_replay_warnings():
        check_calls(fast, fun, calls, kind)
    assert len(fast.traces) == 1
    assert type(fast(*calls[0])) is type(calls[0][0])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_gradient_of_a_structure_comes_back_in_the_structure(kind: str) -> None:
    make = KINDS[kind]

    def loss(p: Any) -> Any:
        w, b = _fields(p)
        return np.sum(np.sin(w @ b)) + np.sum(b**2) * 0.5

    fun = ng.grad(loss)
    fast = ng.replay(fun)
    calls = [(make(_normal(2, 3), _normal(3)),) for _ in range(3)]
    with no_replay_warnings():
        check_calls(fast, fun, calls, f"grad over a {kind}")
    assert len(fast.traces) == 1
    assert type(fast(*calls[0])) is type(calls[0][0])


# -- properties over drawn programs ---------------------------------------------------------------------------

FIELDS = ("a", "b", "c")


@attrs.define
class Fields:
    a: Any
    b: Any
    c: Any


def _get(state: Any, name: str) -> Any:
    return state[name] if isinstance(state, dict) else getattr(state, name)


def _with(state: Any, name: str, value: Any) -> Any:
    if isinstance(state, dict):
        return {**state, name: value}
    return attrs.evolve(state, **{name: value})


def _other(t: Any, s: Any, k: int, f: float) -> Any:
    return t * s if np.shape(t) == np.shape(s) else t + np.sum(s) * f


def _sum_axis(t: Any, s: Any, k: int, f: float) -> Any:
    return np.sum(t, axis=k % t.ndim) if t.ndim else t * f


def _matmul(t: Any, s: Any, k: int, f: float) -> Any:
    if t.ndim == 0:
        return t * f
    n, m = t.shape[-1], 1 + k % 3
    return t @ (np.linspace(-1.0, 1.0, n * m).reshape(n, m) * f)


def _gather(t: Any, s: Any, k: int, f: float) -> Any:
    if t.ndim == 0:
        return t + f
    index = np.array([(k * (j + 3) + j) % t.shape[0] for j in range(1 + k % 4)])
    return t[index]


def _where(t: Any, s: Any, k: int, f: float) -> Any:
    return np.where(t > f, np.sin(t), 0.5 * t - f)


def _concatenate(t: Any, s: Any, k: int, f: float) -> Any:
    return np.concatenate([np.reshape(t, -1), np.reshape(s, -1) * f])


def _reshape(t: Any, s: Any, k: int, f: float) -> Any:
    return t.reshape(-1) if k % 2 else t.reshape(1, -1)


def _max_axis(t: Any, s: Any, k: int, f: float) -> Any:
    return np.max(t, axis=k % t.ndim) if t.ndim else np.maximum(t, f)


def _cumsum(t: Any, s: Any, k: int, f: float) -> Any:
    return np.cumsum(t, axis=k % t.ndim) if t.ndim else t - f


def _reverse(t: Any, s: Any, k: int, f: float) -> Any:
    return t[::-1] if t.ndim else -t


MENU: dict[str, Callable[[Any, Any, int, float], Any]] = {
    "sin": lambda t, s, k, f: np.sin(t),
    "tanh": lambda t, s, k, f: np.tanh(t),
    "square": lambda t, s, k, f: t**2,
    "scale": lambda t, s, k, f: t * f + 0.5,
    "other field": _other,
    "sum over an axis": _sum_axis,
    "matmul": _matmul,
    "gather": _gather,
    "where": _where,
    "concatenate": _concatenate,
    "reshape": _reshape,
    "max over an axis": _max_axis,
    "cumsum": _cumsum,
    "reverse": _reverse,
}

#: One step of a program: (operation, the field it writes, the field it reads besides, an
#: int parameter, a float parameter).
Step = tuple[str, str, str, int, float]


@st.composite
def steps(draw: st.DrawFn) -> Step:
    return (
        draw(st.sampled_from(sorted(MENU))),
        draw(st.sampled_from(FIELDS)),
        draw(st.sampled_from(FIELDS)),
        draw(st.integers(0, 11)),
        draw(st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)),
    )


def run_program(program: list[Step], state: Any) -> Any:
    """``program`` applied to the fields of ``state`` (a dict or a :class:`Fields`)."""
    for name, target, source, k, f in program:
        state = _with(state, target, MENU[name](_get(state, target), _get(state, source), k, f))
    return state


def scalar_loss(state: Any) -> Any:
    """A scalar of every field of ``state``."""
    total = 0.0
    for name in FIELDS:
        total = total + np.sum(np.tanh(_get(state, name)) * 0.75)
    return total


class Drawn(NamedTuple):
    program: list[Step]
    as_dict: bool
    shapes: dict[str, tuple[int, ...]]


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 5) -> Drawn:
    return Drawn(
        draw(st.lists(steps(), min_size=1, max_size=max_steps)),
        draw(st.booleans()),
        {name: draw(shapes(min_dims=0, max_dims=2, max_side=3), label=f"shape of {name}") for name in FIELDS},
    )


def draw_state(data: st.DataObject, drawn: Drawn) -> Any:
    """Values of the program's signature: float64 arrays of its shapes, bounded."""
    values = {name: data.draw(float_arrays(shape), label=name) for name, shape in drawn.shapes.items()}
    return values if drawn.as_dict else Fields(**values)


def check_replay_of(fun: Callable[..., Any], data: st.DataObject, drawn: Drawn, what: str, calls: int = 3) -> None:
    """``replay(fun)`` equals ``fun`` on a drawn state and on ``calls`` more drawn with the
    same signature, recording one program and issuing no ReplayWarning."""
    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        for k in range(1 + calls):
            state = draw_state(data, drawn)
            assert_identical(fast(state), fun(state), f"{what}, call {k}")
    assert len(fast.traces) == 1, f"{what}: {len(fast.traces)} recordings for one signature"
    assert counted.runs == 1


@SOME
@given(programs(), st.data())
def test_a_drawn_program_replays_bit_for_bit(drawn: Drawn, data: st.DataObject) -> None:
    check_replay_of(lambda state: run_program(drawn.program, state), data, drawn, "program")


@SOME
@given(programs(), st.data())
def test_the_gradient_of_a_drawn_program_replays_bit_for_bit(drawn: Drawn, data: st.DataObject) -> None:
    loss = lambda state: scalar_loss(run_program(drawn.program, state))
    check_replay_of(ng.grad(loss), data, drawn, "grad")
    check_replay_of(ng.value_and_grad(loss), data, drawn, "value_and_grad", calls=1)
    grad = ng.replay(ng.grad(loss))(draw_state(data, drawn))
    assert type(grad) is (dict if drawn.as_dict else Fields)


@FEW
@given(programs(max_steps=3), st.data())
def test_second_order_derivatives_of_a_drawn_program_replay_bit_for_bit(drawn: Drawn, data: st.DataObject) -> None:
    loss = lambda state: scalar_loss(run_program(drawn.program, state))

    def gradient_norm(state: Any) -> Any:
        g = ng.grad(loss)(state)
        return sum(np.sum(_get(g, name) ** 2) for name in FIELDS)

    check_replay_of(ng.grad(gradient_norm), data, drawn, "grad of grad", calls=2)
    direction = draw_state(data, drawn)
    check_replay_of(lambda state: ng.hvp(loss, state, direction), data, drawn, "hvp", calls=2)


@FEW
@given(programs(max_steps=3), st.integers(1, 4), st.data())
def test_the_hessian_of_a_drawn_program_of_a_flat_input_replays(drawn: Drawn, n: int, data: st.DataObject) -> None:
    def of_flat(x: Any) -> Any:
        state = {name: np.reshape(x[k % n], ()) * (1.0 + 0.5 * k) for k, name in enumerate(FIELDS)}
        state = {name: value + np.zeros(drawn.shapes[name]) for name, value in state.items()}
        return scalar_loss(run_program(drawn.program, state if drawn.as_dict else Fields(**state)))

    fun = ng.hessian(of_flat)
    counted = Calls(fun)
    fast = ng.replay(counted)
    with no_replay_warnings():
        for k in range(3):
            x = data.draw(float_arrays((n,)), label=f"x{k}")
            assert_identical(fast(x), fun(x), f"hessian, call {k}")
    assert len(fast.traces) == 1
    assert counted.runs == 1


@SOME
@given(programs(max_steps=3), programs(max_steps=3), st.data())
def test_a_drawn_program_branching_on_a_value_records_one_program_per_path(
    drawn: Drawn, other: Drawn, data: st.DataObject
) -> None:
    def fun(state: Any) -> Any:
        if np.sum(_get(state, "a")) > 0:
            return run_program(drawn.program, state)
        return run_program(other.program, state)

    def negated(state: Any) -> Any:  # arrays again (-x of a 0-d array is a numpy scalar: another signature)
        if isinstance(state, dict):
            return {name: np.asarray(-value) for name, value in state.items()}
        return Fields(*(np.asarray(-getattr(state, name)) for name in FIELDS))

    counted = Calls(fun)
    fast = ng.replay(counted)
    paths = set()
    with no_replay_warnings():
        for k in range(3):
            state = draw_state(data, drawn)
            for s in (state, negated(state)):
                paths.add(bool(np.sum(_get(s, "a")) > 0))
                assert_identical(fast(s), fun(s), f"call {k}")
    assert len(fast.traces) == len(paths) <= 2
    assert counted.runs == len(paths)
    grad = ng.grad(lambda state: scalar_loss(fun(state)))
    fast_grad = ng.replay(grad)
    with no_replay_warnings():
        state = draw_state(data, drawn)
        for s in (state, negated(state), state, negated(state)):
            assert_identical(fast_grad(s), grad(s), "grad through the branch")
    assert len(fast_grad.traces) <= 2


@FEW
@given(programs(max_steps=3), st.integers(1, 3), st.data())
def test_per_example_gradients_of_a_drawn_program_replay_bit_for_bit(
    drawn: Drawn, batch: int, data: st.DataObject
) -> None:
    loss = lambda state: scalar_loss(run_program(drawn.program, state))
    fun = ng.vmap(ng.grad(loss))
    stacked = Drawn(drawn.program, drawn.as_dict, {name: (batch, *shape) for name, shape in drawn.shapes.items()})
    check_replay_of(fun, data, stacked, "vmap of grad", calls=2)


# -- products whose cotangents arrive in several memory layouts ------------------------------
#
# A product's rules hand back transposed views, which the sweep sums with C-ordered ones; a
# rule that reads such a sum (einsum, BLAS) rounds after its layout. The recorded sweep must
# lay every sum out as the eager sweep does, or replay is an ulp off.

_CLOSED = np.random.default_rng(7).normal(size=(4, 3)).T  # a transposed view, read by closure

PRODUCTS: dict[str, Callable[[Any], Any]] = {
    "matmul": lambda m: (lambda v: v @ v)(m @ m.T),
    "tensordot": lambda m: (lambda v: v @ v)(np.tensordot(m, m, axes=1)),
    "einsum": lambda m: (lambda v: np.dot(v, v))(np.einsum("ij,jk->ik", m, m)),
    "dot": lambda m: (lambda v: np.dot(v, v.T))(np.dot(m.T, m)),
    "closure": lambda m: (lambda v: v @ v.T)(np.einsum("ij,kj->ik", m @ _CLOSED, _CLOSED)),
}


def _product_program(product: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(p: Any) -> Any:
        return product(p["m"]) * (1.0 + np.tanh(np.sum(p["w"])))

    return program


def _product_loss(product: Callable[[Any], Any]) -> Callable[[Any], Any]:
    program = _product_program(product)

    def loss(p: Any) -> Any:
        out = program(p)
        return np.sum(out * (1.5 + np.cos(1.3 * np.arange(out.size))).reshape(out.shape))

    return loss


PRODUCT_STACKS: dict[str, Callable[[Callable[[Any], Any]], Callable[[Any, Any], Any]]] = {
    "hvp": lambda product: lambda p, t: ng.hvp(_product_loss(product), p, t),
    "grad": lambda product: lambda p, t: ng.grad(_product_loss(product))(p),
    "jvp": lambda product: lambda p, t: ng.jvp(_product_program(product), (p,), (t,)),
}


def _product_params(rng: np.random.Generator, transposed: bool) -> dict[str, np.ndarray]:
    m = rng.normal(size=(3, 3))
    return {"m": m.T if transposed else m, "w": rng.normal(size=4)}


@pytest.mark.parametrize("stack", sorted(PRODUCT_STACKS))
@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_replay_of_products_is_bit_for_bit_eager(product: str, stack: str) -> None:
    fn = PRODUCT_STACKS[stack](PRODUCTS[product])
    fast = ng.replay(fn)
    rng = np.random.default_rng(5)
    with no_replay_warnings():
        for call in range(3):
            p, t = _product_params(rng, call == 1), _product_params(rng, call == 2)
            assert_identical(fast(p, t), fn(p, t), f"{product} under replay({stack}), call {call}")
    assert len(fast.traces) == 1
