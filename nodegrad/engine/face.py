"""What a staged value shows of its array: every attribute and protocol, each decided once.

A :class:`~nodegrad.engine.staged.Staged` value stands for an array (or a numpy scalar)
while ``replay`` records a function, and nothing it holds may reach Python, numpy or the
user's program except through the tape or a guard. :data:`FACE` names every attribute an
``np.ndarray`` or a numpy number has, each with one of four kinds, and :func:`give_face`
makes each name behave as its kind says:

- ``RECORDED``: a numpy call appended to the tape (operators, array methods, ``x.T``,
  ``divmod``, indexing, writes): a replay makes it again on the new values.
- ``SIGNATURE``: answered from what the signature fixes (the shape, the dtype, the type) or
  by Python's machinery of the object itself: it reads no value.
- ``GUARDED``: the value read is handed out and a guard appended (``float(x)``,
  ``format(x, ".3f")``, ``str(x)``, ``bytes(x)``, ``x.strides``, ``x[0].is_integer()``): a
  replay checks it reads the same, and records the function again for a new reading.
- ``EAGER``: what no tape can repeat or check (a pointer, a buffer of the memory, a flags
  object written through, a file written, pickling): the signature runs eagerly, with a
  :class:`~nodegrad.errors.ReplayWarning` naming the attribute.

A name of an array that :data:`FACE` does not list (a newer numpy's) is ``EAGER`` by default,
and so is any other attribute of the value that is not an array's
(:meth:`Staged.__getattr__ <nodegrad.engine.staged.Staged.__getattr__>`): nothing leaks for
want of a decision. The test of the face checks every name of ``dir(np.ndarray)`` is listed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.staged import _BINARY, FOREIGN_INDEXING, Staged, Unreplayable, _foreign, method_caller
from nodegrad.engine.traced import DEFERS_TO, foreign_operand
from nodegrad.errors import user_location

__all__ = ["EAGER", "FACE", "GUARDED", "RECORDED", "SIGNATURE", "give_face", "names_to_decide"]

RECORDED = "recorded"
SIGNATURE = "signature"
GUARDED = "guarded"
EAGER = "eager"

#: The binary operators: ``x + y``, ``y + x`` and ``x += y`` of each are recorded.
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift,
}  # fmt: skip
_COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq}
_UNARY_OPS: dict[str, Callable[[Any], Any]] = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}

#: Array attributes read as a recorded call (``v3 = v2.T``).
_RECORDED_ATTRIBUTES = ("T", "mT", "real", "imag")

#: What a value of a number type has beyond an array's, all read from its value.
_NUMBER_METHODS = ("is_integer", "as_integer_ratio", "hex", "bit_count")
_NUMBER_ATTRIBUTES = ("numerator", "denominator")

#: Every attribute of an array and of a numpy number, with its kind (see the module's docstring).
FACE: dict[str, str] = {
    # Python's machinery of the object, and what the signature fixes
    **dict.fromkeys(
        (
            "__class__", "__doc__", "__init__", "__new__", "__init_subclass__", "__subclasshook__",
            "__class_getitem__", "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__array_priority__",
            "shape", "dtype", "ndim", "size", "itemsize", "nbytes", "__len__", "device", "__array_namespace__",
            "__getformat__", "fromhex",
        ),
        SIGNATURE,
    ),
    # numpy calls, appended to the tape
    **dict.fromkeys([f"__{n}__" for n in _OPERATORS], RECORDED),
    **dict.fromkeys([f"__r{n}__" for n in _OPERATORS], RECORDED),
    **dict.fromkeys([f"__i{n}__" for n in _OPERATORS], RECORDED),
    **dict.fromkeys([f"__{n}__" for n in (*_COMPARISONS, "ne")], RECORDED),
    **dict.fromkeys([f"__{n}__" for n in (*_UNARY_OPS, "abs")], RECORDED),
    **dict.fromkeys(
        (
            "__array_ufunc__", "__array_function__", "__getitem__", "__setitem__", "__delitem__", "__iter__",
            "__divmod__", "__rdivmod__", "__copy__", "__deepcopy__", *_RECORDED_ATTRIBUTES,
            "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "byteswap", "choose", "clip",
            "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "fill", "flatten",
            "getfield", "max", "mean", "min", "nonzero", "partition", "prod", "put", "ravel", "repeat", "reshape",
            "resize", "round", "searchsorted", "setfield", "sort", "squeeze", "std", "sum", "swapaxes", "take",
            "to_device", "trace", "transpose", "var", "view",
        ),
        RECORDED,
    ),
    # a value read, checked by the replay
    **dict.fromkeys(
        (
            "__bool__", "__int__", "__index__", "__float__", "__complex__", "__round__", "__trunc__", "__floor__",
            "__ceil__", "__format__", "__str__", "__repr__", "__bytes__", "__hash__", "__contains__", "item", "tolist",
            "tobytes", "dumps", "strides", *_NUMBER_METHODS, *_NUMBER_ATTRIBUTES,
        ),
        GUARDED,
    ),
    # the memory itself, its flags, files, pickling: no tape repeats them
    **dict.fromkeys(
        (
            "__array__", "__array_interface__", "__array_struct__", "__array_wrap__", "__array_finalize__",
            "__dlpack__", "__dlpack_device__", "__buffer__", "__reduce__", "__reduce_ex__", "__getstate__",
            "__setstate__", "__getnewargs__", "__sizeof__", "base", "data", "ctypes", "flags", "flat", "setflags",
            "tofile", "dump",
        ),
        EAGER,
    ),
}  # fmt: skip


def names_to_decide() -> set[str]:
    """Every attribute of an array and of numpy's number types: what :data:`FACE` must list."""
    found = set(dir(np.ndarray))
    for kind in (np.float64, np.float32, np.float16, np.longdouble, np.int64, np.uint8, np.complex128, np.bool_):
        found |= set(dir(kind))
    return found


# -- each kind's behaviour --------------------------------------------------------------------


def _binary(fn: Callable[..., Any], name: str, *, reflected: bool = False, mirror: str = "") -> Callable[..., Any]:
    def op(self: Staged, other: Any) -> Any:
        if _foreign(other):
            return NotImplemented  # a traced or batched value: its transform runs first
        deferred = DEFERS_TO.get(type(other))
        if deferred is not None and mirror and not hasattr(type(other), "__array_ufunc__"):
            # A value of a layer above that numpy's protocols do not reach (a scipy.sparse
            # matrix closed over, whose operator gave way): the layer's operator answers.
            return getattr(deferred(other), mirror)(self)
        return self.level.call(fn, (other, self) if reflected else (self, other), {}, name)

    return op


def _getitem(self: Staged, index: Any) -> Any:
    if _foreign(index):
        return FOREIGN_INDEXING[0](self, index)  # (NotImplemented would be the value: no reflection)
    return self.level.call(operator.getitem, (self, index), {}, "x[i]")


def _unary(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def op(self: Staged) -> Any:
        return self.level.call(fn, (self,), {}, name)

    return op


def _method(name: str) -> Callable[..., Any]:
    def method(self: Staged, *args: Any, **kwargs: Any) -> Any:
        return self.level.call(method_caller(name), (self, *args), kwargs, f"x.{name}")

    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}``, recorded."
    return method


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


def _guarded_method(name: str) -> Callable[..., Any]:
    def method(self: Staged, *args: Any, **kwargs: Any) -> Any:
        return self.level.guard(self, "method", name, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}``, read and guarded."
    return method


def _guarded_number_method(name: str) -> property:
    """A method of a number (``x[0].is_integer()``): an array has none, as eagerly."""

    def read(self: Staged) -> Any:
        if not hasattr(self.now, name):
            msg = f"{type(self.now).__name__!r} object has no attribute {name!r}"
            raise AttributeError(msg)
        return lambda *args: self.level.guard(self, "method", name, *args)

    return property(read, doc=f"``{name}`` of a number, read and guarded.")


def _guarded_attribute(name: str) -> property:
    def read(self: Staged) -> Any:
        if not hasattr(self.now, name):
            msg = f"{type(self.now).__name__!r} object has no attribute {name!r}"
            raise AttributeError(msg)
        return self.level.guard(self, "attribute", name)

    return property(read, doc=f"``{name}``, read and guarded.")


def _refused(name: str, *, attribute: bool) -> Any:
    def refuse(self: Staged, *args: Any, **kwargs: Any) -> Any:
        what = "its memory, flags, a file or a pickle"
        if name.startswith("__array"):  # numpy's probes for an array's memory: np.asarray(x), b[:] = x
            if attribute and foreign_operand(self) is not None:
                raise AttributeError(name)  # a library's operator that gives way: numpy asks __array__ next
            what = "np.asarray() of it, or a write of it into a plain array, by code numpy's protocols do not reach"
        msg = f"x.{name} of a staged value ({what}) [at {user_location()}]"
        raise Unreplayable(msg)

    refuse.__name__ = name
    return property(refuse) if attribute else refuse


def _signature(name: str) -> Any:
    if name == "device":
        return property(lambda self: getattr(self.now, "device", "cpu"), doc="``ndarray.device``.")
    if name == "__array_namespace__":
        return lambda self, *, api_version=None: np  # numpy's functions dispatch to the staged value's tape
    if name in ("__getformat__", "fromhex"):
        return property(lambda self: getattr(type(self.now), name))  # class methods: no value read
    return None  # Python's own, or defined in the class


def _guarded_dunder(name: str) -> Callable[..., Any] | None:
    guards: dict[str, Callable[..., Any]] = {
        "__format__": lambda self, spec: self.level.guard(self, "format", spec),
        "__str__": lambda self: self.level.guard(self, "str"),
        "__repr__": lambda self: self.level.guard(self, "repr"),
        "__bytes__": lambda self: self.level.guard(self, "bytes"),
        "__hash__": lambda self: self.level.guard(self, "hash"),  # an array's raises, as eagerly
        "__contains__": lambda self, item: bool(self.level.call(operator.contains, (self, item), {}, "in")),
    }
    return guards.get(name)


def _recorded_dunder(name: str) -> Callable[..., Any] | None:
    bare = name[2:-2]
    if bare in _OPERATORS:
        return _binary(_OPERATORS[bare], f"x {_BINARY[_OPERATORS[bare]]} y", mirror=f"__r{bare}__")
    if bare.startswith("r") and bare[1:] in _OPERATORS:
        fn = _OPERATORS[bare[1:]]
        return _binary(fn, f"y {_BINARY[fn]} x", reflected=True, mirror=f"__{bare[1:]}__")
    if bare.startswith("i") and bare[1:] in _OPERATORS:
        return _binary(getattr(operator, bare), f"x {_BINARY[_OPERATORS[bare[1:]]]}= y")
    if bare in _COMPARISONS or bare == "ne":
        fn = _COMPARISONS.get(bare, operator.ne)
        return _binary(fn, f"x {_BINARY[fn]} y")
    if bare in _UNARY_OPS or bare == "abs":
        return _unary(_UNARY_OPS.get(bare, abs), bare)
    others: dict[str, Callable[..., Any]] = {
        "__getitem__": _getitem,
        "__setitem__": lambda self, i, v: self.level.call(operator.setitem, (self, i, v), {}, "x[i] = v"),
        "__delitem__": lambda self, i: self.level.call(operator.delitem, (self, i), {}, "del x[i]"),
        "__divmod__": _binary(divmod, "divmod"),
        "__rdivmod__": _binary(divmod, "divmod", reflected=True),
        "__copy__": lambda self: self.level.call(np.ndarray.copy, (self,), {}, "copy", static=True),
        "__deepcopy__": lambda self, memo: self.level.call(np.ndarray.copy, (self,), {}, "copy", static=True),
    }
    return others.get(name)


def _behaviour(name: str, kind: str) -> Any:
    """What ``name`` of a staged value is, for its kind; ``None``: Python's own, or the class's."""
    dunder = name.startswith("__") and name.endswith("__")
    if kind == SIGNATURE:
        return _signature(name)
    if kind == RECORDED:
        if dunder:
            return _recorded_dunder(name)
        return _attribute(name) if name in _RECORDED_ATTRIBUTES else _method(name)
    if kind == GUARDED:
        if dunder:
            return _guarded_dunder(name)
        if name in _NUMBER_METHODS:
            return _guarded_number_method(name)
        if name in _NUMBER_ATTRIBUTES or not callable(getattr(np.ndarray, name, None)):
            return _guarded_attribute(name)
        return _guarded_method(name)
    return _refused(name, attribute=hasattr(np.ndarray, name) and not callable(getattr(np.ndarray, name)))


def give_face() -> None:
    """Give :class:`Staged` every attribute of :data:`FACE` (and any other name of an array,
    ``EAGER``), each behaving as its kind says; names the class defines itself stay."""
    own = set(vars(Staged))
    for name in sorted(names_to_decide() | set(FACE)):
        if name in own:
            continue
        behaviour = _behaviour(name, FACE.get(name, EAGER))
        if behaviour is not None:
            setattr(Staged, name, behaviour)


give_face()
