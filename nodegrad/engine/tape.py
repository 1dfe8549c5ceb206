"""The tape: what ``replay`` records while a function runs on staged values.

A :class:`Tape` is one recording: the :class:`Instruction` list the staged values
(:mod:`nodegrad.engine.staged`) append to, one per numpy call they make (``out =
fn(*args, **kwargs)``, the staged arguments standing for the slots they read) and one per
conversion to a Python value (a guard, checked on replay), how many slots they fill, and
what the recording wrote into its arguments. :mod:`nodegrad.engine.program` compiles a
finished tape into a function.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

import nodegrad.engine.face  # noqa: F401  (gives staged values their operators, methods and attributes)
from nodegrad.engine.levels import FOREIGN, Level, check_alive, next_stamp
from nodegrad.engine.staged import _BINARY, _UNARY, Staged, Unreplayable, method_caller, only_staged
from nodegrad.errors import ArenaError, user_location

__all__ = ["GUARDS", "Instruction", "Tape", "exact_key"]


class Instruction:
    """One step of a tape: ``out = fn(*args, **kwargs)`` (``kind`` ``"call"``), or a guard
    (``kind`` one of :data:`GUARDS`: ``fn`` converts slot ``args[0]`` to the Python value
    ``expected``). ``args`` and ``kwargs`` hold :class:`Staged` values where slots are read;
    ``outs`` are the slots the result (or its items, for a tuple) are written to, ``shape``
    the result's shapes when they must be checked on replay, ``name`` what displays show."""

    __slots__ = ("args", "expected", "fn", "kind", "kwargs", "name", "outs", "shapes", "syntax", "unpack", "values")

    def __init__(
        self,
        kind: str,
        name: str,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        outs: tuple[int, ...] = (),
        *,
        unpack: tuple[int, ...] | None = None,
        shapes: tuple[tuple[int, ...] | None, ...] = (),
        expected: Any = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.outs = outs
        self.unpack = unpack  # the positions of a tuple result's items written to outs
        self.shapes = shapes
        self.expected = expected
        self.syntax = _SYNTAX.get(fn) if kind == "call" else None
        #: What each output held when recorded (``float64[2, 3]``), for displays.
        self.values: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Instruction({self.kind}, {self.name}, outs={self.outs})"


#: Conversions to Python values, and how each is repeated on replay.
GUARDS: dict[str, Callable[..., Any]] = {
    "bool": bool,
    "int": int,
    "index": operator.index,
    "float": float,
    "complex": complex,
    "round": round,
    "trunc": math.trunc,
    "floor": math.floor,
    "ceil": math.ceil,
    "item": lambda v, *at: v.item(*at),
    "tolist": lambda v: v.tolist(),
    "format": format,
    "str": str,
    "repr": repr,
    "bytes": bytes,
    "hash": hash,
    "attribute": lambda v, name: getattr(v, name),
    "method": lambda v, name, *args, **kwargs: getattr(v, name)(*args, **kwargs),
    "apply": lambda v, fn: fn(v),
}

_SYNTAX: dict[Any, str] = {**_BINARY, **_UNARY, operator.getitem: "[]", operator.setitem: "[]="}

#: Calls whose result's shape follows from their arguments' shapes alone: no shape check.
_SHAPE_STATIC: set[Any] = {
    *_BINARY, *_UNARY, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor, np.matmul, np.dot,
    np.vdot, np.inner, np.outer, np.tensordot, np.einsum, np.sum, np.mean, np.prod, np.max, np.min, np.amax,
    np.amin, np.std, np.var, np.cumsum, np.cumprod, np.reshape, np.ravel, np.transpose, np.moveaxis, np.swapaxes,
    np.squeeze, np.expand_dims, np.broadcast_to, np.concatenate, np.stack, np.ones_like, np.zeros_like,
    np.full_like, np.empty_like, np.clip, np.real, np.imag, np.conj, np.copy, np.ascontiguousarray,
    np.take_along_axis, np.take, np.flip, np.roll, np.diagonal, np.trace, np.triu, np.tril, np.linalg.solve,
    np.linalg.inv, np.linalg.det, np.linalg.cholesky, np.linalg.norm, np.asarray, np.array,
}  # fmt: skip


class Tape(Level):
    """One recording of ``replay``: the instructions appended so far, how many slots they
    fill, the arguments' slots, and what made the recording unreplayable (if anything).
    It is the level of its :class:`Staged` values (``stamp``, ``active``: see
    :func:`nodegrad.engine.record._newest_interpreted`)."""

    __slots__ = (
        "_made",
        "active",
        "arguments",
        "inputs",
        "instructions",
        "mutates_input",
        "name",
        "saved",
        "slots",
        "stamp",
        "watch",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.instructions: list[Instruction] = []
        self.slots = 0
        self.inputs: list[Any] = []
        self.arguments = 0
        self.mutates_input = False
        #: The arguments the recorded calls wrote into, with copies of them as they were.
        self.saved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._made: list[Staged] = []
        self.active = True
        self.stamp = next_stamp()
        #: Called with ``True`` before and ``False`` after each recorded call runs: what a
        #: call does is repeated by a replay, what happens between calls is not.
        self.watch: Callable[[bool], None] | None = None

    def argument(self, value: Any) -> Staged:
        """A new slot holding the argument leaf ``value``."""
        self.inputs.append(value)
        self.arguments += 1
        return self._new(value)

    def _new(self, value: Any) -> Staged:
        self.slots += 1
        staged = Staged(self, self.slots - 1, value)
        self._made.append(staged)
        return staged

    def close(self) -> None:
        """End the recording: its staged values refuse to be used from now on, and let go of
        the arrays they held (the instructions keep only their slots)."""
        self.active = False
        self.inputs = []
        self.saved = {}
        for staged in self._made:
            staged.now = None
        self._made = []

    # -- appending ------------------------------------------------------------------------
    def call(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str, *, static: bool = False) -> Any:
        """``fn(*args, **kwargs)`` on the values of the staged arguments, appended: returns
        the result with each array (or number) in it staged. ``static``: its shape follows
        from its arguments' (no check on replay)."""
        raw_args = self._raw(args)
        raw_kwargs = {k: self._raw(v) for k, v in kwargs.items()} if kwargs else kwargs
        self._note_writes(fn, name, args, kwargs, raw_args, raw_kwargs)
        locked = _lock_constants((args, kwargs), name, [])
        watch = self.watch
        if watch is not None:
            watch(True)
        try:
            out = fn(*raw_args, **raw_kwargs)
        except ValueError as exc:
            if "read-only" not in str(exc):
                raise
            msg = (
                f"{name} writes into an array made outside the recorded calls (np.zeros(...) in the function, or "
                f"a view of one), which a replay would share between calls [at {user_location()}]"
            )
            raise Unreplayable(msg) from None  # (eagerly, a write into a read-only array fails as it does here)
        finally:
            for array in locked:
                array.flags.writeable = True
            if watch is not None:
                watch(False)
        if locked:
            out = _read_only_if_locked(out, locked)
        return self._outputs(fn, name, args, kwargs, out, static or fn in _SHAPE_STATIC or type(fn) is np.ufunc)

    def whole(self, fn: Any, args: tuple[Any, ...], name: str) -> Any:
        """``fn(*args)`` appended as one call on the values now (a rule of the sweep, say,
        whose plain path then runs as it does eagerly); where its result is not one a tape
        holds (a structure), ``fn`` runs on the staged values instead, each numpy call it
        makes appended. ``fn`` must not change anything but its result."""
        if only_staged(args) is None:  # nothing to read that a replay changes: computed once, here
            return fn(*args)
        raw = self._raw(args)
        watch = self.watch
        if watch is not None:
            watch(True)
        out = fn(*raw)
        if watch is not None:
            watch(False)
        if out is not None and not _stageable(out) and not _stageable_items(out):
            return fn(*args)
        return self._outputs(fn, name, args, {}, out, static=True)

    def _outputs(self, fn: Any, name: str, args: Any, kwargs: Any, out: Any, static: bool) -> Any:
        if out is None:
            self.instructions.append(Instruction("call", name, fn, args, kwargs))
            return None
        if _stageable(out):
            staged = self._new(out)
            shape = None if static or type(out) is not np.ndarray else out.shape
            step = Instruction("call", name, fn, args, kwargs, (staged.slot,), shapes=(shape,))
            step.values = (_described(out),)
            self.instructions.append(step)
            return staged
        if _stageable_items(out):
            positions = tuple(k for k, o in enumerate(out) if o is not None)
            items: list[Any] = list(out)
            for k in positions:
                items[k] = self._new(out[k])
            outs = tuple(items[k].slot for k in positions)
            shapes = tuple(None if static or type(out[k]) is not np.ndarray else out[k].shape for k in positions)
            step = Instruction("call", name, fn, args, kwargs, outs, unpack=positions, shapes=shapes)
            step.values = tuple(_described(out[k]) for k in positions)
            self.instructions.append(step)
            if type(out) is list:
                return items
            return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
        msg = f"{name} returned a {type(out).__name__}, which a replay cannot hold [at {user_location()}]"
        raise Unreplayable(msg)

    def guard(self, x: Staged, kind: str, *extra: Any, **options: Any) -> Any:
        """``x`` converted to a Python value (``kind``, one of :data:`GUARDS`; ``extra`` and
        ``options`` its further arguments), with a guard appended that checks the conversion
        gives the same on replay."""
        self._check(x)
        value = GUARDS[kind](x.now, *self._raw(extra), **self._raw(options))
        step = Instruction(kind, kind, GUARDS[kind], (x, *extra), options, expected=exact_key(value))
        self.instructions.append(step)
        return value

    # -- reading the staged values ----------------------------------------------------------
    def alive(self) -> bool:
        return self.active

    def describe(self) -> str:
        return self.name

    def _check(self, x: Staged) -> None:
        check_alive(x, "a numpy call")
        if x.level is not self:
            msg = (
                f"a staged value of {x.level.name}, another recording, reached a numpy call of {self.name}: return "
                f"what you need instead [at {user_location()}]"
            )
            raise ArenaError(msg)

    def _raw(self, value: Any) -> Any:
        """``value`` with each staged value replaced by its value now (inside tuples, lists,
        dicts and slices too)."""
        kind = type(value)
        if kind is Staged:
            self._check(value)
            return value.now
        if kind is tuple or kind is list:
            return kind(self._raw(v) for v in value)
        if kind is dict:
            return {k: self._raw(v) for k, v in value.items()}
        if kind is slice:
            return slice(self._raw(value.start), self._raw(value.stop), self._raw(value.step))
        if kind in FOREIGN:
            msg = (
                "the function reads a value traced or batched by a transform around the replay (a closure over it, "
                f"say) [at {user_location()}]"
            )
            raise Unreplayable(msg)
        return value

    def _note_writes(self, fn: Any, name: str, args: Any, kwargs: Any, raw_args: Any, raw_kwargs: Any) -> None:
        """Check a call that writes into an array: it must be one the tape holds (a staged
        one), and a write into an argument is noted (a replay that misses after it would
        see the argument changed, so such a recording is not replayed past a check)."""
        targets: list[tuple[Any, Any]] = []
        out = kwargs.get("out") if kwargs else None
        if out is not None:
            outs = out if type(out) is tuple else (out,)
            raws = raw_kwargs["out"] if type(out) is tuple else (raw_kwargs["out"],)
            targets.extend(zip(outs, raws, strict=True))
        if (fn in _WRITES or _writes_at(fn) or (fn is _BYTESWAP and (args[1:] or kwargs.get("inplace")))) and args:
            targets.append((args[0], raw_args[0]))
        for staged, raw in targets:
            if raw is None:
                continue
            if type(staged) is not Staged:
                msg = (
                    f"{name} writes into an array made outside the recorded calls (np.zeros(...) in the function, "
                    f"say), which a replay would share between calls [at {user_location()}]"
                )
                raise Unreplayable(msg)
            for i in self.inputs:
                if isinstance(i, np.ndarray) and np.may_share_memory(raw, i):
                    self.mutates_input = True
                    self.saved.setdefault(id(i), (i, i.copy()))  # as it was: see restore_inputs

    def restore_inputs(self) -> None:
        """Put back what the recorded calls wrote into the arguments (before a recording
        that cannot be replayed is made again eagerly: the writes must happen once)."""
        for value, before in self.saved.values():
            np.copyto(value, before)
        self.saved = {}


#: Functions and methods that write into their first argument.
_WRITES: set[Any] = {
    operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, np.copyto, np.put, np.place, np.putmask, np.fill_diagonal,
    np.put_along_axis,
}  # fmt: skip


#: Array methods that write into the array.
_WRITING_METHODS = {"fill", "sort", "put", "partition", "resize", "setfield", "itemset", "setflags"}

#: ``x.byteswap(inplace=True)`` writes into ``x``; ``x.byteswap()`` makes a copy.
_BYTESWAP = method_caller("byteswap")

#: Array methods whose result's shape follows from the arguments' shapes.
_SHAPE_STATIC_METHODS = {
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "conjugate", "copy", "cumprod", "cumsum",
    "dot", "flatten", "byteswap", "max", "mean", "min", "prod", "ravel", "reshape", "round", "sort", "squeeze", "std",
    "sum", "swapaxes", "transpose", "var", "view",
}  # fmt: skip

_WRITES.update(method_caller(name) for name in _WRITING_METHODS)
_SHAPE_STATIC.update(method_caller(name) for name in _SHAPE_STATIC_METHODS)


def _writes_at(fn: Any) -> bool:
    """Whether ``fn`` is a ufunc's ``at`` method (``np.add.at``: unbuffered, in place)."""
    return getattr(fn, "__name__", None) == "at" and type(getattr(fn, "__self__", None)) is np.ufunc


def _read_only_if_locked(out: Any, locked: list[np.ndarray]) -> Any:
    """``out`` with each constant it hands back as it is (``np.atleast_1d(c, x)``) made a
    read-only view (views made during the call are read-only already): a write into it
    must not reach the constant."""
    if type(out) is tuple or type(out) is list:
        return type(out)(_read_only_if_locked(o, locked) for o in out)
    if type(out) is np.ndarray and any(out is a for a in locked):
        out = out.view()
        out.flags.writeable = False
    return out


def _lock_constants(value: Any, name: str, locked: list[np.ndarray]) -> list[np.ndarray]:
    """Make the writeable arrays among a call's arguments that the tape does not hold (its
    constants) read-only, for the call: a call writing into one would write into the same
    array on every replay (results piling up from call to call), so it fails, and the
    recording is given up. A stream (a file, a ``StringIO``) is refused for the same reason.
    Returns the arrays locked, to unlock after the call."""
    kind = type(value)
    if kind is tuple or kind is list:
        for v in value:
            _lock_constants(v, name, locked)
    elif kind is dict:
        for v in value.values():
            _lock_constants(v, name, locked)
    elif kind is np.ndarray:
        if value.flags.writeable:
            value.flags.writeable = False
            locked.append(value)
    elif kind is not Staged and hasattr(value, "write") and not isinstance(value, type):
        msg = (
            f"{name} is given a stream ({type(value).__name__}), which a replay would write to or read from again "
            f"as it is now, not as the function would make it [at {user_location()}]"
        )
        raise Unreplayable(msg)
    return locked


def _described(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def _stageable_items(value: Any) -> bool:
    return isinstance(value, tuple | list) and all(o is None or _stageable(o) for o in value)


def _stageable(value: Any) -> bool:
    kind = type(value)
    return kind is np.ndarray or isinstance(value, np.generic) or kind in (bool, int, float, complex)


def exact_key(value: Any) -> Any:
    """A key equal for two values exactly when they are the same value of the same type (a
    float's sign of zero and NaN's bits included; ``1``, ``1.0`` and ``True`` apart): what
    guards and signatures compare."""
    kind = type(value)
    if kind is float:
        return (float, _DOUBLE.pack(value))
    if kind is complex:
        return (complex, _DOUBLE.pack(value.real), _DOUBLE.pack(value.imag))
    if kind is tuple:
        return (tuple, *(exact_key(v) for v in value))
    if kind is list:
        return (list, repr(value))
    if isinstance(value, np.generic) and value.dtype.kind in "fc":
        return (kind, value.tobytes())
    return (kind, value)


_DOUBLE = struct.Struct("<d")
