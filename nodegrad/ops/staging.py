"""The replay interpreter: how an op runs on staged values (while ``replay`` records).

An op given a :class:`~nodegrad.engine.staged.Staged` value is handed here by the
recording path (:func:`nodegrad.engine.record.register_interpreter`): its forward runs on
the values now and is appended to the tape, one call, which a replay makes again. An op
whose forward is made of other ops (a ``custom_vjp``, a record constructor: batched by
:func:`~nodegrad.ops.batching.made_of_ops`) runs on the staged values themselves, so the
ops inside are appended one by one. A failing forward is reported as on the recording path.
"""

from __future__ import annotations

from typing import Any

from nodegrad.engine.levels import find_top
from nodegrad.engine.record import forward_failed, register_interpreter
from nodegrad.engine.registry import ELEMENTWISE, MADE_OF_OPS, Op
from nodegrad.engine.staged import Staged
from nodegrad.engine.tape import Tape
from nodegrad.errors import rerun_reporting_warnings

__all__ = ["interpret"]


def _tape_of(args: tuple[Any, ...]) -> Tape:
    found = find_top(args, _STAGED)
    assert found is not None, "interpret: no staged argument"
    tape: Tape = found.level
    return tape


_STAGED = frozenset({Staged})


def interpret(op: Op, args: tuple[Any, ...]) -> Any:
    """Run ``op`` on ``args``, some staged: its forward on their values, appended to their
    tape; the result staged."""
    if MADE_OF_OPS in op.traits:
        return op.forward(*args)
    tape = _tape_of(args)
    forward = op.forward
    static = ELEMENTWISE in op.traits  # its result has the broadcast shape of its arguments
    try:
        return tape.call(forward, args, {}, op.name, static=static)
    except Warning:  # raised by the filter of nodegrad.errors: issued again from the user's line
        return rerun_reporting_warnings(tape.call, forward, args, {}, op.name, static=static)
    except Exception as exc:
        return forward_failed(op, tape._raw(args), (), exc)


register_interpreter(Staged, interpret)
