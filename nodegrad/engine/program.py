"""A recorded tape, compiled: one Python function making the tape's numpy calls in order.

:func:`compile_tape` writes the tape of a :class:`~nodegrad.engine.staged.Tape` as the
source of a straight-line function, ``def program(v0, v1, ...)``, one line per call
(``v7 = f3(v2, c1, axis=0)``; operators as Python's own syntax, ``v8 = v7 * v2``), and
compiles it. Slots are local variables: reading one is the cheapest thing Python does, and
``del v2`` after a slot's last use frees its array as soon as eager code would. Guards and
shape checks are ``if`` lines that raise :class:`~nodegrad.engine.staged.Miss`. The
callables and constants the calls take are the function's globals, the very objects the
recording used, so a replay makes the same calls on the same constants: the same numbers,
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.staged import _BINARY, _UNARY, Miss, Staged
from nodegrad.engine.tape import Instruction, Tape, exact_key

__all__ = ["NonFinite", "Program", "compile_tape"]


class NonFinite(BaseException):
    """A step of a program compiled with ``check_finite`` made NaN or Inf."""


def _finite(value: Any) -> bool:
    return bool(np.isfinite(value).all())


class Program:
    """A compiled tape: ``run(*leaves)`` returns the output slots' values (a tuple), or
    raises :class:`~nodegrad.engine.staged.Miss`; ``source`` is its text."""

    __slots__ = ("run", "source")

    def __init__(self, run: Callable[..., tuple[Any, ...]], source: str) -> None:
        self.run = run
        self.source = source


class _Writer:
    """The names of the constants and callables a program's source refers to."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {
            # numpy's warnings in a program are this module's: raised as errors (see
            # nodegrad.errors), the program is run again, and they are issued from the user's line.
            "__name__": __name__,
            "MISS": Miss,
            "NONFINITE": NonFinite,
            "_key": exact_key,
            "_finite": _finite,
            "slice": slice,
        }
        self._by_id: dict[int, str] = {}

    def constant(self, value: Any, prefix: str = "c") -> str:
        name = self._by_id.get(id(value))
        if name is None:
            name = self._by_id[id(value)] = f"{prefix}{len(self._by_id)}"
            self.names[name] = value
        return name

    def expr(self, value: Any) -> str:
        """Python source reading ``value``: a slot, a literal, a container of them, or a
        constant's name."""
        kind = type(value)
        if kind is Staged:
            return f"v{value.slot}"
        if value is None or kind is bool or kind is int or kind is str:
            return repr(value)
        if kind is tuple:
            inner = ", ".join(self.expr(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if kind is list:
            return "[" + ", ".join(self.expr(v) for v in value) + "]"
        if kind is dict and all(type(k) is str for k in value):
            return "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in value.items()) + "}"
        if kind is slice:
            return f"slice({self.expr(value.start)}, {self.expr(value.stop)}, {self.expr(value.step)})"
        return self.constant(value)

    def call(self, step: Instruction) -> str:
        args = [self.expr(a) for a in step.args]
        syntax = step.syntax
        if syntax is not None and not step.kwargs:
            if syntax == "[]":
                return f"{args[0]}[{args[1]}]"
            if syntax == "[]=":
                return f"{args[0]}[{args[1]}] = {args[2]}"
            if step.fn in _UNARY:
                return f"{syntax}{args[0]}"
            if step.fn in _BINARY:
                return f"{args[0]} {syntax} {args[1]}"
        args += [f"{k}={self.expr(v)}" for k, v in step.kwargs.items()]
        attribute = getattr(step.fn, "attribute", None)
        if attribute is not None:
            return f"{args[0]}.{attribute}"
        method = getattr(step.fn, "method", None)
        if method is not None and args:
            return f"{args[0]}.{method}({', '.join(args[1:])})"
        return f"{self.constant(step.fn, 'f')}({', '.join(args)})"


def _slots_read(value: Any, found: list[int]) -> None:
    kind = type(value)
    if kind is Staged:
        found.append(value.slot)
    elif kind is tuple or kind is list:
        for v in value:
            _slots_read(v, found)
    elif kind is dict:
        for v in value.values():
            _slots_read(v, found)
    elif kind is slice:
        _slots_read((value.start, value.stop, value.step), found)


def _reads(step: Instruction) -> list[int]:
    found: list[int] = []
    _slots_read(step.args, found)
    _slots_read(step.kwargs, found)
    return found


def compile_tape(tape: Tape, outputs: list[Any], name: str, *, check_finite: bool = False) -> Program:
    """Compile ``tape`` into a :class:`Program` whose ``run`` takes the argument leaves (one
    per input slot) and returns ``outputs``: a staged value's slot, anything else as it is.
    With ``check_finite``, a float or complex array holding NaN or Inf made by any step
    raises :class:`NonFinite` (for ``debug_nans``: the call is then made eagerly, and the
    op named)."""
    writer = _Writer()
    last: dict[int, int] = {}
    reads = [_reads(step) for step in tape.instructions]
    for k, slots in enumerate(reads):
        for s in slots:
            last[s] = k
    kept = {o.slot for o in outputs if type(o) is Staged}
    lines = [f"def program({', '.join(f'v{s}' for s in range(tape.arguments))}):"]
    for k, step in enumerate(tape.instructions):
        lines.extend(_lines(writer, step, k))
        if check_finite:
            lines += [
                f"    if not _finite(v{slot}): raise NONFINITE"
                for slot, held in zip(step.outs, step.values, strict=False)
                if held.startswith(("float", "complex"))
            ]
        dead = [s for s in dict.fromkeys(reads[k]) if last[s] == k and s not in kept]
        if dead:
            lines.append(f"    del {', '.join(f'v{s}' for s in dead)}")
    # An array made outside the recorded calls is a constant of the program: each call
    # returns a copy of it, as each eager call returns an array of its own.
    returned = ", ".join(writer.expr(o) + (".copy()" if type(o) is np.ndarray else "") for o in outputs)
    lines.append(f"    return ({returned}{',' if len(outputs) == 1 else ''})")
    source = "\n".join(lines)
    namespace = dict(writer.names)
    exec(compile(source, f"<replay of {name}>", "exec"), namespace)
    return Program(namespace["program"], source)


def _lines(writer: _Writer, step: Instruction, k: int) -> list[str]:
    if step.kind != "call":
        x = writer.expr(step.args[0])
        if step.kind == "bool":
            return [f"    if {'not ' if step.expected[1] else ''}{x}: raise MISS"]
        convert = writer.constant(step.fn, "g")
        extra = "".join(f", {writer.expr(a)}" for a in step.args[1:])
        extra += "".join(f", {k}={writer.expr(v)}" for k, v in step.kwargs.items())
        return [f"    if _key({convert}({x}{extra})) != {writer.constant(step.expected, 'e')}: raise MISS"]
    call = writer.call(step)
    if not step.outs:
        return [f"    {call}"]
    if step.unpack is None:
        lines = [f"    v{step.outs[0]} = {call}"]
    else:
        lines = [f"    _t = {call}"]
        lines += [f"    v{slot} = _t[{p}]" for slot, p in zip(step.outs, step.unpack, strict=True)]
    for slot, shape in zip(step.outs, step.shapes, strict=True):
        if shape is not None:
            lines.append(f"    if v{slot}.shape != {shape!r}: raise MISS")
    return lines
