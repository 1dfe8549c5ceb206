"""The staged value: what user code holds while ``replay`` records a function.

A :class:`Staged` is ``(level, slot, now)``: slot ``slot`` of the :class:`Tape` ``level``
(one recording), whose value in this run is the plain array (or number) ``now``. It
behaves as ``now`` would: every operator, array method and numpy function given one runs
numpy's own code on ``now`` and appends that call to the tape, so the tape is the
straight-line program of numpy calls the function made, and running it again on new
arguments makes the same calls in the same order (the same numbers, bit for bit). An op of
the registry given one is handed to the replay interpreter (:mod:`nodegrad.ops.staging`)
through :data:`nodegrad.engine.record.INTERPRETERS`, which appends the op's forward.

Nothing reads ``now`` behind the tape's back: a conversion to a Python value (``bool`` in
an ``if``, ``int``, ``float``, an index) gives the value and appends a **guard** (a
replay whose guard comes out differently is a miss, and the function is recorded again for
that path); a call that would turn it into a plain array outside numpy's protocols
(``np.asarray`` by a library that cannot see it) makes the recording unreplayable. The
shape and dtype are the arguments' signature's, so reading them appends nothing, and a
call whose result's shape could depend on values appends a shape check.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.traced import ArrayFace, Traced, next_stamp
from nodegrad.errors import ArenaError, LeakedTracerError, user_location

__all__ = [
    "FOREIGN",
    "RECORDING",
    "Instruction",
    "Miss",
    "Staged",
    "Tape",
    "Unreplayable",
    "array",
    "asarray",
    "call_on",
    "now",
    "only_staged",
]


#: The types of the values of other transforms (traced, batched: their modules add theirs):
#: an operation meeting one hands it the operation first, and a recording that reads one
#: of a transform around the replay cannot be replayed.
FOREIGN: set[type] = {Traced}


class Miss(BaseException):
    """A replay's guard or shape check came out differently than when it was recorded.
    (A BaseException: the user's ``except Exception`` must not swallow it mid-program.)"""


class Unreplayable(BaseException):
    """The function did something a tape cannot repeat (``np.asarray`` of a staged value by
    code numpy cannot reach, a write into an array the tape does not hold, a value traced
    by an enclosing transform): it runs eagerly instead, for this signature. ``reason``
    says what, and where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
GUARDS: dict[str, Callable[[Any], Any]] = {
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
}

#: Operators written as Python syntax in a compiled tape (the same call as the function,
#: one step faster than calling ``operator.mul``).
_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.and_: "&",
    operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
}  # fmt: skip
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
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


class Tape:
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
        watch = self.watch
        if watch is not None:
            watch(True)
        out = fn(*raw_args, **raw_kwargs)
        if watch is not None:
            watch(False)
        return self._outputs(fn, name, args, kwargs, out, static or fn in _SHAPE_STATIC or type(fn) is np.ufunc)

    def whole(self, fn: Any, args: tuple[Any, ...], name: str) -> Any:
        """``fn(*args)`` appended as one call on the values now (a rule of the sweep, say,
        whose plain path then runs as it does eagerly); where its result is not one a tape
        holds (a structure), ``fn`` runs on the staged values instead, each numpy call it
        makes appended. ``fn`` must not change anything but its result."""
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

    def guard(self, x: Staged, kind: str, *extra: Any) -> Any:
        """``x`` converted to a Python value (``kind``, one of :data:`GUARDS`; ``extra`` its
        further arguments), with a guard appended that checks the conversion gives the same
        on replay."""
        self._check(x)
        value = GUARDS[kind](x.now, *extra)
        self.instructions.append(Instruction(kind, kind, GUARDS[kind], (x, *extra), {}, expected=_exact(value)))
        return value

    # -- reading the staged values ----------------------------------------------------------
    def _check(self, x: Staged) -> None:
        if x.level is not self or not self.active:
            msg = (
                f"a staged value of {x.level.name}, which has already returned or belongs to another recording, "
                f"reached a numpy call (a leaked staged value): return what you need instead [at {user_location()}]"
            )
            raise LeakedTracerError(msg)

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
        if fn in _WRITES and args:
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


def _described(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def _stageable_items(value: Any) -> bool:
    return isinstance(value, tuple | list) and all(o is None or _stageable(o) for o in value)


def _stageable(value: Any) -> bool:
    kind = type(value)
    return kind is np.ndarray or isinstance(value, np.generic) or kind in (bool, int, float, complex)


def _exact(value: Any) -> Any:
    """A key equal for two conversions' results exactly when they are the same value (a
    float's sign of zero and NaN included), for guards."""
    if type(value) is float or type(value) is complex:
        return (type(value), repr(value))
    if type(value) is list:
        return (list, repr(value))
    return (type(value), value)


def exact_key(value: Any) -> Any:
    """The key :class:`Instruction` guards compare (see :func:`_exact`)."""
    return _exact(value)


class Staged(ArrayFace):
    """A value being recorded by ``replay``: it computes as its plain value ``now`` would,
    and every computation is appended to its tape (see the module's docstring).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> fast = ng.replay(lambda x: np.sin(x) * 2.0)
    >>> fast(np.zeros(2)), len(fast.traces[0].instructions)
    (array([0., 0.]), 2)
    """

    __slots__ = ("level", "now", "slot")
    __array_priority__ = 1000
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays

    def __init__(self, level: Tape, slot: int, now: Any) -> None:
        self.level = level
        self.slot = slot
        self.now = now

    # -- what the signature fixes: read without a trace ---------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the value."""
        return np.shape(self.now)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the value."""
        now = self.now
        return now.dtype if hasattr(now, "dtype") else np.asarray(now).dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return np.ndim(self.now)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.size(self.now))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the value."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return len(self.now)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Staged(slot {self.slot} of {self.level.name}: {self.now!r})"

    def __format__(self, spec: str) -> str:
        return format(self.now, spec)  # reading, for a log line: printed when recorded only

    # -- numpy's protocols: numpy's own code on the values, appended --------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _foreign(inputs) or _foreign(kwargs.get("out", ())):
            return NotImplemented  # a traced or batched value: its transform runs first
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        return self.level.call(fn, inputs, kwargs, name, static=method in ("__call__", "reduce", "accumulate"))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if any(t in FOREIGN for t in types):
            return NotImplemented
        if func in _ABOUT_SHAPES:
            return func(*self.level._raw(args), **self.level._raw(kwargs))
        return self.level.call(func, args, kwargs, f"np.{func.__name__}")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self.level._check(self)
        msg = (
            f"np.asarray() of a staged value ({self.dtype}{list(self.shape)}), by code that numpy's protocols "
            f"do not reach [at {user_location()}]"
        )
        raise Unreplayable(msg)

    # -- conversions to Python values: guarded ------------------------------------------------
    def __bool__(self) -> bool:
        return self.level.guard(self, "bool")

    def __int__(self) -> int:
        return self.level.guard(self, "int")

    def __index__(self) -> int:
        return self.level.guard(self, "index")

    def __float__(self) -> float:
        return self.level.guard(self, "float")

    def __complex__(self) -> complex:
        return self.level.guard(self, "complex")

    def __round__(self, ndigits: Any = None) -> Any:
        if ndigits is not None:
            return self.level.call(round, (self, ndigits), {}, "round")
        return self.level.guard(self, "round")

    def __trunc__(self) -> Any:
        return self.level.guard(self, "trunc")

    def __floor__(self) -> Any:
        return self.level.guard(self, "floor")

    def __ceil__(self) -> Any:
        return self.level.guard(self, "ceil")

    def item(self, *args: Any) -> Any:
        """The value (or entry ``args``) as a Python number (guarded: a replay checks it is
        the same)."""
        return self.level.guard(self, "item", *args)

    def tolist(self) -> Any:
        """The value as nested Python lists (guarded: a replay checks they are the same)."""
        return self.level.guard(self, "tolist")

    def __contains__(self, item: Any) -> bool:
        return bool(self.level.call(operator.contains, (self, item), {}, "in"))

    def __reduce__(self) -> Any:
        msg = "a staged value cannot be pickled: it exists only while replay records the function"
        raise ArenaError(msg)

    def __copy__(self) -> Any:
        return self.level.call(np.ndarray.copy, (self,), {}, "copy", static=True)

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()


def _foreign(values: Any) -> bool:
    for v in values if type(values) is tuple else (values,):
        kind = type(v)
        if kind in FOREIGN:
            return True
    return False


#: numpy functions that read only shapes and dtypes (fixed by the signature): answered
#: without a trace.
_ABOUT_SHAPES = {np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.result_type}


def _operator(fn: Callable[..., Any], name: str, reflected: bool = False) -> Callable[..., Any]:
    if reflected:

        def reflected_op(self: Staged, other: Any) -> Any:
            if _foreign(other):
                return NotImplemented
            return self.level.call(fn, (other, self), {}, name)

        return reflected_op

    def op(self: Staged, other: Any) -> Any:
        if _foreign(other):
            return NotImplemented
        return self.level.call(fn, (self, other), {}, name)

    return op


def _unary(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def op(self: Staged) -> Any:
        return self.level.call(fn, (self,), {}, name)

    return op


def _method(name: str) -> Callable[..., Any]:
    def method(self: Staged, *args: Any, **kwargs: Any) -> Any:
        return self.level.call(_bound(name), (self, *args), kwargs, f"x.{name}")

    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}``, recorded."
    return method


_BOUND: dict[str, Callable[..., Any]] = {}


def _bound(name: str) -> Callable[..., Any]:
    """A function calling method ``name`` of its first argument (one per name, so tapes
    can tell them apart and compile them as method calls)."""
    fn = _BOUND.get(name)
    if fn is None:
        fn = _BOUND[name] = _caller(name)
    return fn


def _caller(name: str) -> Callable[..., Any]:
    def call(value: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(value, name)(*args, **kwargs)

    call.__name__ = f"x.{name}"
    call.method = name  # type: ignore[attr-defined]
    return call


class _Reader:
    """Reads attribute ``attribute`` of its argument (compiled as ``v.T``)."""

    __slots__ = ("attribute",)

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __call__(self, value: Any) -> Any:
        return getattr(value, self.attribute)


def _attribute(name: str) -> property:
    reader = _Reader(name)

    def read(self: Staged) -> Any:
        return self.level.call(reader, (self,), {}, f"x.{name}", static=True)

    return property(read, doc=f"``ndarray.{name}``, recorded.")


def _face() -> None:
    """Give :class:`Staged` the operators and methods of an array, each recorded."""
    names = {
        "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
        "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
        "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
        "rshift": operator.rshift,
    }  # fmt: skip
    for name, fn in names.items():
        setattr(Staged, f"__{name}__", _operator(fn, f"x {_BINARY[fn]} y"))
        setattr(Staged, f"__r{name}__", _operator(fn, f"y {_BINARY[fn]} x", reflected=True))
        inplace = getattr(operator, f"i{name}")
        setattr(Staged, f"__i{name}__", _operator(inplace, f"x {_BINARY[fn]}= y"))
    for name, fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
        setattr(Staged, f"__{name}__", _operator(fn, f"x {_BINARY[fn]} y"))
    Staged.__eq__ = _operator(operator.eq, "x == y")  # type: ignore[method-assign]
    Staged.__ne__ = _operator(operator.ne, "x != y")  # type: ignore[method-assign]
    Staged.__hash__ = None  # type: ignore[assignment]
    unary: dict[str, Callable[..., Any]] = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}
    for name, one in {**unary, "abs": abs}.items():
        setattr(Staged, f"__{name}__", _unary(one, name))
    Staged.__getitem__ = _operator(operator.getitem, "x[i]")  # type: ignore[method-assign]

    def setitem(self: Staged, index: Any, value: Any) -> None:
        self.level.call(operator.setitem, (self, index, value), {}, "x[i] = v")

    setattr(Staged, "__setitem__", setitem)  # noqa: B010  (a method defined here, not a name known to type checkers)
    for name in ("T", "mT", "real", "imag"):
        setattr(Staged, name, _attribute(name))
    own = set(vars(Staged))
    for name in dir(np.ndarray):
        if name.startswith("_") or name in own or not callable(getattr(np.ndarray, name)):
            continue
        setattr(Staged, name, _method(name))
        if name in _WRITING_METHODS:
            _WRITES.add(_bound(name))
        if name in _SHAPE_STATIC_METHODS:
            _SHAPE_STATIC.add(_bound(name))


#: Array methods that write into the array.
_WRITING_METHODS = {"fill", "sort", "put", "partition", "resize", "setfield", "itemset", "setflags", "byteswap"}

#: Array methods whose result's shape follows from the arguments' shapes.
_SHAPE_STATIC_METHODS = {
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "conjugate", "copy", "cumprod", "cumsum",
    "dot", "flatten", "max", "mean", "min", "prod", "ravel", "reshape", "round", "sort", "squeeze", "std", "sum",
    "swapaxes", "transpose", "var", "view",
}  # fmt: skip


_face()


def call_on(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, appended to the tape when an argument is staged (or a tuple
    or list argument holds one): for code that computes with plain values through calls
    numpy's protocols cannot reach (``np.asarray``, ``np.float64(x)``, a scipy function),
    so that under ``replay`` it makes the same call. ``fn``'s result has the shape its
    arguments' shapes give it (no shape check on replay)."""
    for a in args:
        for item in a if type(a) is tuple or type(a) is list else (a,):
            if type(item) is Staged:
                return item.level.call(fn, args, kwargs, getattr(fn, "__name__", "call"), static=True)
    return fn(*args, **kwargs)


def only_staged(values: Any) -> Tape | None:
    """The tape of the staged values in ``values`` (a tuple of arguments, searched through
    tuples, lists and dicts) when there are some and no value of another transform (traced,
    batched) is among them: a call on them can be recorded whole. ``None`` otherwise."""
    found: Tape | None = None
    todo = [values]
    while todo:
        value = todo.pop()
        kind = type(value)
        if kind is Staged:
            found = value.level
        elif kind in FOREIGN:
            return None
        elif kind is tuple or kind is list:
            todo.extend(value)
        elif kind is dict:
            todo.extend(value.values())
    return found


#: How many recordings are running: while none is, the sweep looks for no staged value.
RECORDING = [0]


def asarray(value: Any, dtype: Any = None) -> Any:
    """``np.asarray(value, dtype)``, appended to its tape when ``value`` is staged (see
    :func:`call_on`)."""
    if type(value) is Staged:
        return call_on(np.asarray, value) if dtype is None else call_on(np.asarray, value, dtype=dtype)
    return np.asarray(value, dtype=dtype)


def array(value: Any, dtype: Any = None) -> Any:
    """``np.array(value, dtype)`` (a copy), appended to its tape when ``value`` is staged."""
    if type(value) is Staged:
        return call_on(np.array, value) if dtype is None else call_on(np.array, value, dtype=dtype)
    return np.array(value, dtype=dtype)


def now(value: Any) -> Any:
    """The plain value of a staged ``value`` in this recording, for reading what its
    signature fixes (its type, shape, dtype, whether it is a view): never for computing,
    which would freeze it. Anything else as it is."""
    return value.now if type(value) is Staged else value
