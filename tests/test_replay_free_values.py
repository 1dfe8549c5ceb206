"""What a replayed function reads besides its arguments (closures, globals, the functions
it calls, an object it is bound to, defaults): a call after one of them changed is
recorded again, never answered with the recording's values; what the function changes
itself (a counter, a log) is a side effect of recording and does not stop replays.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ReplayWarning

RNG = np.random.default_rng(0)
GLOBAL_SCALE = 2.0
GLOBAL_TABLE = np.ones(3)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    np.testing.assert_array_equal(got, want)


def _calls(fast: Any, eager: Any, change: Any, n: int = 4) -> None:
    for _ in range(n):
        change()
        x = RNG.normal(size=3)
        _same(fast(x), eager(x))


def test_a_rebound_closure_is_read_again() -> None:
    scale = np.ones(3)

    def f(x: Any) -> Any:
        return x * scale

    def change() -> None:
        nonlocal scale
        scale = RNG.normal(size=3)

    _calls(ng.replay(f), f, change)


def test_a_global_number_a_called_function_reads_is_read_again() -> None:
    def helper(x: Any) -> Any:
        return np.sin(x) * GLOBAL_SCALE

    f = lambda x: helper(x) + 1.0

    def change() -> None:
        global GLOBAL_SCALE
        GLOBAL_SCALE = float(RNG.normal())

    _calls(ng.replay(f), f, change)
    _calls(ng.replay(ng.grad(lambda x: np.sum(f(x)))), ng.grad(lambda x: np.sum(f(x))), change)


def test_a_global_array_rebound_or_a_small_one_changed_in_place_is_read_again() -> None:
    f = lambda x: x * GLOBAL_TABLE if GLOBAL_TABLE[0] > 0 else x - GLOBAL_TABLE

    def rebind() -> None:
        global GLOBAL_TABLE
        GLOBAL_TABLE = RNG.normal(size=3)

    def in_place() -> None:
        GLOBAL_TABLE[:] = RNG.normal(size=3)

    _calls(ng.replay(f), f, rebind)
    _calls(ng.replay(f), f, in_place)


def test_an_entry_of_a_closed_over_dict_and_an_attribute_of_a_bound_object_are_read_again() -> None:
    params = {"w": np.ones(3), "b": 0.5}

    def change_entry() -> None:
        params["w"] = RNG.normal(size=3)
        params["b"] = float(RNG.normal())

    f = lambda x: np.tanh(x * params["w"] + params["b"])
    _calls(ng.replay(f), f, change_entry)

    class Model:
        def __init__(self) -> None:
            self.scale = 1.0

        def apply(self, x: Any) -> Any:
            return x * self.scale

    model = Model()

    def change_attribute() -> None:
        model.scale = float(RNG.normal())

    _calls(ng.replay(model.apply), model.apply, change_attribute)


def test_a_large_closed_over_array_changed_in_place_is_read_by_the_recorded_calls() -> None:
    table = np.ones(1000)
    fast = ng.replay(lambda x: x @ table)
    x = RNG.normal(size=1000)
    fast(x)
    table[:] = 2.0
    assert fast(x) == x @ table
    assert len(fast.traces) == 1  # read by reference: no new recording


def test_state_the_function_changes_itself_does_not_stop_replays() -> None:
    log: list[float] = []
    counter = {"calls": 0}

    def f(x: Any) -> Any:
        log.append(1.0)
        counter["calls"] += 1
        return np.cos(x) * 2.0

    fast = ng.replay(f)
    for n in range(5):
        x = RNG.normal(size=3 + n % 2)  # two signatures
        _same(fast(x), np.cos(x) * 2.0)
    assert len(fast.traces) == 2
    assert len(log) == 2 and counter["calls"] == 2  # side effects happen when recording only


def test_a_closure_that_changes_on_every_call_ends_eager_with_advice() -> None:
    scale = 1.0

    def f(x: Any) -> Any:
        return x * scale

    fast = ng.replay(f, max_traces=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(4):
            scale = float(k)
            x = RNG.normal(size=3)
            _same(fast(x), x * scale)
    messages = [str(w.message) for w in caught if issubclass(w.category, ReplayWarning)]
    assert len(messages) == 1
    assert "closes over" in messages[0]


@pytest.mark.parametrize("kind", ["partial", "default", "wrapped_transform"])
def test_other_ways_to_reach_a_value_are_read_again(kind: str) -> None:
    import functools

    box = [np.ones(3)]

    def base(x: Any, w: Any) -> Any:
        return np.sum(x * w)

    if kind == "partial":
        f: Any = lambda x: functools.partial(base, w=box[0])(x)
    elif kind == "default":
        f = lambda x, b=box: base(x, b[0])
    else:
        f = ng.grad(lambda x: base(x, box[0]) ** 2)

    def change() -> None:
        box[0] = RNG.normal(size=3)

    _calls(ng.replay(f), f, change)
