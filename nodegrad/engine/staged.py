"""The staged value: what user code holds while ``replay`` records a function.

A :class:`Staged` is ``(level, slot, now)``: slot ``slot`` of the
:class:`~nodegrad.engine.tape.Tape` ``level``
(one recording), whose value in this run is the plain array (or number) ``now``. It
behaves as ``now`` would: every operator, array method and numpy function given one runs
numpy's own code on ``now`` and appends that call to the tape, so the tape is the
straight-line program of numpy calls the function made, and running it again on new
arguments makes the same calls in the same order (the same numbers, bit for bit). An op of
the registry given one is handed to the replay interpreter (:mod:`nodegrad.ops.staging`)
through :data:`nodegrad.engine.record.INTERPRETERS`, which appends the op's forward.

Nothing reads ``now`` behind the tape's back: a conversion to a Python value (``bool`` in
an ``if``, ``int``, ``float``, an index, a text) gives the value and appends a **guard** (a
replay whose guard comes out differently is a miss, and the function is recorded again for
that path); a call that would turn it into a plain array outside numpy's protocols
(``np.asarray`` by a library that cannot see it) makes the recording unreplayable. The
shape and dtype are the arguments' signature's, so reading them appends nothing, and a
call whose result's shape could depend on values appends a shape check. Which of these each
attribute and protocol of an array is, is decided in one table,
:data:`nodegrad.engine.face.FACE`; ``isinstance`` sees the type of the value it stands for.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.levels import ABSTRACT, CALLS_AT_LEVEL, FOREIGN, Interpreted
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.traced import READERS, foreign_operand
from nodegrad.errors import user_location

#: A replay's recording (nodegrad.engine.tape, which stages values: it is defined above this module).
Tape = Any

__all__ = [
    "Miss",
    "Staged",
    "Unreplayable",
    "array",
    "asarray",
    "call_on",
    "method_caller",
    "now",
    "only_staged",
]

#: nodegrad's ``getitem`` (set by :mod:`nodegrad.ops.index`): ``x[i]`` of a staged ``x``
#: by a foreign index (a batched one, say) is its op, which the index's interpreter runs;
#: ``__getitem__`` has no reflected form to hand it over as operators do.
FOREIGN_INDEXING: list[Any] = []


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


#: Operators written as Python syntax in a compiled tape (the same call as the function,
#: one step faster than calling ``operator.mul``).
_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.and_: "&",
    operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
}  # fmt: skip
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


class Staged(Interpreted):
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
    noun = "staged"
    leaked = "a leaked staged value"
    calls_at_level = True
    recording = True

    def __init__(self, level: Tape, slot: int, now: Any) -> None:
        self.level = level
        self.slot = slot
        self.now = now

    def below(self) -> Any:
        """Its value in this recording (one level down): for reading what the signature
        fixes, never for computing (see :func:`now`)."""
        return self.now

    def call_plain(self, fn: Any, args: Any, kwargs: Any) -> Any:
        """The call appended to the tape (see :func:`call_on`)."""
        return self.level.call(fn, args, kwargs, getattr(fn, "__name__", "call"), static=True)

    def map_plain(self, fn: Any) -> Any:
        """``fn`` of its values, appended to the tape (see :func:`call_on`)."""
        return call_on(fn, self)

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

    def __len__(self) -> int:
        return len(self.now)

    @property  # type: ignore[misc]  # isinstance() asks __class__ when type() does not answer
    def __class__(self) -> type:
        # The type the value has eagerly (an ndarray, a np.float64): part of the signature,
        # so isinstance(x, float) takes the branch it takes eagerly. Not to a library's
        # operator that gives way (scipy.sparse's X @ x tells arrays by their class).
        gives_way = PLUGINS.gives_way
        if gives_way is not None and gives_way(sys._getframe(1)):
            return Staged
        return type(self.now)

    def __getattr__(self, name: str) -> Any:
        # Only names that the face (nodegrad.engine.face) does not give a staged value arrive
        # here: a name its value has is one nothing decided about, so it is not read.
        try:
            now = object.__getattribute__(self, "now")
        except AttributeError:
            now = None
        if name.startswith("__") or not hasattr(now, name):
            msg = f"{type(now).__name__!r} object has no attribute {name!r}"
            raise AttributeError(msg)
        msg = f"x.{name} of a staged value, an attribute replay does not know [at {user_location()}]"
        raise Unreplayable(msg)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

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
        handle = next((v for v in (*args, *kwargs.values()) if type(v) in FOREIGN), None)
        if handle is not None:  # where numpy does not dispatch on it (np.take's indices): as if it did
            return handle.__array_function__(func, (*types, type(handle)), args, kwargs)
        if func in _ABOUT_SHAPES:
            return func(*self.level._raw(args), **self.level._raw(kwargs))
        return self.level.call(func, args, kwargs, f"np.{func.__name__}")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self.level._check(self)
        operand = foreign_operand(self)
        if operand is not None:
            return operand
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


READERS[Staged] = lambda staged, fn: staged.level.guard(staged, "apply", fn)  # (see nodegrad.engine.traced.read)


def _foreign(values: Any) -> bool:
    for v in values if type(values) is tuple else (values,):
        kind = type(v)
        if kind in FOREIGN:
            return True
    return False


#: numpy functions that read only shapes and dtypes (fixed by the signature): answered
#: without a trace.
_ABOUT_SHAPES = {np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.result_type}


_BOUND: dict[str, Callable[..., Any]] = {}


def method_caller(name: str) -> Callable[..., Any]:
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


def call_on(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, appended to the tape when an argument is staged (or a tuple
    or list argument holds one): for code that computes with plain values through calls
    numpy's protocols cannot reach (``np.asarray``, ``np.float64(x)``, a scipy function),
    so that under ``replay`` it makes the same call. ``fn``'s result has the shape its
    arguments' shapes give it (no shape check on replay)."""
    for a in args:
        for item in a if type(a) is tuple or type(a) is list else (a,):
            if type(item) in CALLS_AT_LEVEL:  # staged: appended to the tape; shaped: answered by shape
                return item.call_plain(fn, args, kwargs)
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


def asarray(value: Any, dtype: Any = None) -> Any:
    """``np.asarray(value, dtype)``, appended to its tape when ``value`` is staged (see
    :func:`call_on`)."""
    if type(value) is Staged:
        return call_on(np.asarray, value) if dtype is None else call_on(np.asarray, value, dtype=dtype)
    if type(value) in ABSTRACT:  # an array of its own level (a shape only, say)
        return value.map_plain(lambda v: np.asarray(v, dtype=dtype))
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
