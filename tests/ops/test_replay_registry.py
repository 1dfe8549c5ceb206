"""``ng.replay`` over every registered op, against the eager call, bit for bit.

For every op spec (the ``SPECS`` of ``tests/ops/specs_<family>.py``) a drawn
:class:`~tests.ops.harness.Case` is called through ``ng.replay`` three times: with the
drawn operands (recorded), with the same operands scaled by factors close to 1 (the same
signature: replayed), and with the drawn ones again. Each result equals the eager call's
exactly: the same structure, dtypes, shapes and bytes (NaN where NaN, the sign of zero).
The same for ``replay(grad(loss))``, the gradient of ``np.sum(case.fn(...) * w)`` with
respect to the spec's differentiated operands. A replay that is not replayed (no program
recorded, or a recording per call) is reported: the op's path makes the recording
unreplayable, or guards on values its signature fixes.
"""

from __future__ import annotations

import warnings
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.engine.structure import flatten
from nodegrad.errors import ReplayWarning
from tests.ops.harness import Case
from tests.ops.test_ops import SPECS

FEW = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_identical(got: Any, expected: Any, what: str) -> None:
    """The same structure and, leaf by leaf, the same type, dtype, shape and bytes."""
    got_leaves, got_def = flatten(got)
    expected_leaves, expected_def = flatten(expected)
    assert repr(got_def) == repr(expected_def), f"{what}: structure {got_def} != {expected_def}"
    for k, (a, b) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        assert type(a) is type(b), f"{what}: leaf {k} is a {type(a).__name__}, eagerly a {type(b).__name__}"
        if isinstance(a, np.ndarray | np.generic):
            assert a.dtype == b.dtype and np.shape(a) == np.shape(b), f"{what}: leaf {k} {a.dtype}{np.shape(a)}"
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), f"{what}: leaf {k}: {a} != {b} (eagerly)"
        else:
            assert repr(a) == repr(b), f"{what}: leaf {k}: {a!r} != {b!r}"


def scaled(args: tuple[Any, ...], factor: float) -> tuple[Any, ...]:
    """The operands scaled by ``factor`` (float arrays and numpy scalars: the signature's
    dynamic leaves), everything else as it is."""
    return tuple(
        (a * factor).astype(a.dtype) if isinstance(a, np.ndarray | np.generic) and a.dtype.kind in "fc" else a
        for a in args
    )


def check_replayed(fun: Any, args: tuple[Any, ...], what: str) -> None:
    """``replay(fun)`` equals ``fun`` exactly on ``args``, on them scaled, and on them again;
    and it replays: the calls after the first record nothing new."""
    fast = ng.replay(fun)
    calls = [args, scaled(args, 1.0 + 2.0**-8), args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        for k, call in enumerate(calls):
            # An op may draw from numpy's global generator inside (scipy's logm estimates a
            # norm at random): the eager call and the replay start from the same state.
            state = np.random.get_state()
            try:
                expected = fun(*call)
            except Exception as exc:  # the eager call fails (a domain error at the new values): so must the replay
                np.random.set_state(state)
                with pytest.raises(type(exc)):
                    fast(*call)
                continue
            np.random.set_state(state)
            assert_identical(fast(*call), expected, f"{what}, call {k}")
    assert 1 <= len(fast.traces) <= 2, f"{what}: {len(fast.traces)} recordings for one signature"


def weighted_loss(case: Case) -> Any:
    """``np.sum(case.fn(...) * w)`` as a function of the case's differentiated operands, with
    weights that differ entry by entry; ``None`` when the op's result has no gradient."""
    f = case.of_args()
    out = f(*case.args)
    if not isinstance(out, np.ndarray | np.generic) or np.result_type(out).kind != "f":
        return None
    weights = np.linspace(0.5, 1.5, np.size(out)).reshape(np.shape(out))

    def loss(*args: Any) -> Any:
        return np.sum(f(*args) * weights)

    return loss


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_replay_of_the_op_equals_the_eager_call(name: str, data: st.DataObject) -> None:
    case: Case = data.draw(SPECS[name], label="case")
    check_replayed(case.of_args(), case.args, name)


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_replay_of_the_ops_gradient_equals_the_eager_gradient(name: str, data: st.DataObject) -> None:
    case: Case = data.draw(SPECS[name], label="case")
    loss = weighted_loss(case)
    if loss is None:
        return  # no gradient to take
    check_replayed(ng.grad(loss, argnums=tuple(range(len(case.args)))), case.args, f"grad of {name}")


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_replay_of_the_ops_per_example_gradient_equals_the_eager_one(name: str, data: st.DataObject) -> None:
    case: Case = data.draw(SPECS[name], label="case")
    loss = weighted_loss(case)
    if loss is None:
        return  # no gradient to take
    batch = tuple(np.stack([a, *scaled((a,), 1.0 - 2.0**-7)]) for a in case.args)
    per_example = ng.vmap(ng.grad(loss, argnums=tuple(range(len(case.args)))))
    check_replayed(per_example, batch, f"vmap of grad of {name}")


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_replay_of_the_ops_hessian_vector_product_equals_the_eager_one(name: str, data: st.DataObject) -> None:
    case: Case = data.draw(SPECS[name], label="case")
    loss = weighted_loss(case)
    first, rest = case.args[0], case.args[1:]
    if loss is None or not isinstance(first, np.ndarray) or first.dtype.kind != "f":
        return  # no gradient to take, or no array for hvp to move

    def hessian_times(x: Any, v: Any) -> Any:
        return ng.hvp(lambda x: loss(x, *rest), x, v)

    direction = np.linspace(-1.0, 1.0, first.size).reshape(first.shape)
    check_replayed(hessian_times, (first, direction), f"hvp of {name}")
