"""The rules of a sweep over staged values, each recorded whole by ``replay``.

While ``replay`` records a function, the sweep of a transform inside it meets nodes whose
values, arguments and cotangents are staged (:mod:`nodegrad.engine.staged`) and traced by
no other transform. Each rule of such a node is appended to the tape as one call on the
plain values (:meth:`~nodegrad.engine.tape.Tape.whole`): the rule takes the plain path it
takes eagerly (its fast paths, its in-place work), and a replay makes that one call again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.registry import ANS
from nodegrad.engine.staged import now

__all__ = ["RecordedWhole"]


class RecordedWhole:
    """An op whose rules a replay's tape records whole (see :meth:`Tape.whole`): as the op
    for the sweep's loop, with its rules wrapped. A large array a rule does not read
    (:attr:`Op.reads`) is given to it as a stand-in, as a lean arena keeps it, so the
    program lets go of it as early as eager code does."""

    def __init__(self, op: Any, tape: Any) -> None:
        self.name = op.name
        self.broadcasts = op.broadcasts
        self.vjps = self  # rules by position, made as the sweep asks (a variadic op has no last one)
        self._op = op
        self._tape = tape
        # A joint rule may read what any of its inputs' rules reads.
        self.joint = None if op.joint is None else _whole(op.joint, tape, op.name, None, 1)

    def __getitem__(self, k: int) -> Any:
        op = self._op
        rule = op.vjps[k]
        if rule is None:
            return None
        return _whole(rule, self._tape, op.name, None if op.reads is None else op.reads[k], 0)


def _whole(
    rule: Callable[..., Any], tape: Any, name: str, read: frozenset[int] | None, lead: int
) -> Callable[..., Any]:
    """``rule``, recorded whole on ``tape``; the values it does not read (``read``: :data:`ANS`
    and argument positions, ``None`` for all) as stand-ins. ``lead`` arguments come before
    ``g`` (a joint rule's ``wanted``)."""

    def recorded(*given: Any) -> Any:
        if read is not None:
            head, (g, ans, *args) = given[:lead], given[lead:]
            ans = ans if ANS in read else _unread(ans)
            args = [a if k in read else _unread(a) for k, a in enumerate(args)]
            given = (*head, g, ans, *args)
        return tape.whole(rule, given, f"{name} rule")

    return recorded


def _unread(value: Any) -> Any:
    """A value a rule does not read: a float array's stand-in of its shape and dtype (a
    constant of the program, holding no memory; its NaN would show a rule that reads it
    after all), anything else as it is. A rule left with no staged value to read is
    computed once, when recorded (see :meth:`~nodegrad.engine.tape.Tape.whole`)."""
    plain = now(value)
    if type(plain) is not np.ndarray or plain.dtype.kind not in "fc":
        return value
    nan = np.full((), np.nan, plain.dtype)
    return np.ndarray(plain.shape, plain.dtype, nan, 0, (0,) * plain.ndim)
