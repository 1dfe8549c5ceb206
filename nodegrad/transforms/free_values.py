"""What a replayed function reads besides its arguments: its free values.

A replay runs the recorded program on new arguments. Values the function reaches any
other way (its closure's cells, the globals its code names, its defaults, what a function
it wraps or an object it is bound to holds, and the functions it calls, in turn) were
read when it was recorded: a Python decision made on one (``if scale > 0``, ``float(w[0])``)
and an array rebound to another would replay stale. :func:`free_key` sums them up as one
hashable key that is part of a call's signature, so a call after one of them changed is
recorded again rather than replayed.

Arrays are told apart by identity (the trace keeps them alive, so no other array can take
their ``id``), and small ones by their values too: a change in place to a large array is
seen by the recorded numpy calls, which read it by reference, but not by a Python decision
made on it. Numbers and strings are compared exactly. Modules and classes are not walked.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from nodegrad.engine.tape import exact_key
from nodegrad.transforms.common import Transformed

__all__ = ["changed_by_call", "filled", "free_key", "free_table", "library_function", "names_read"]

#: How far the walk goes from the function (each step: a cell, a global, an entry, an attribute).
_DEPTH = 6
#: How many entries of one container (a list, a dict, an object's attributes) are walked.
_WIDTH = 64
#: Arrays up to this many elements are keyed by their values as well as their identity.
_SMALL = 64


#: A path to a value from the function: its steps (a cell's index, a global's or an
#: attribute's name, an entry's key).
Path = tuple[Any, ...]


def free_key(fun: Any, mask: frozenset[Path] = frozenset()) -> tuple[tuple[Any, ...], list[np.ndarray]]:
    """``(key, held)``: a hashable key of what ``fun`` reads besides its arguments, but for
    the values at the paths in ``mask`` (see :func:`changed_by_call`), and the arrays the
    key names by identity (to keep alive while the key is in use)."""
    walk = _Walk(mask, None)
    walk.visit(fun, _DEPTH, ())
    return tuple(walk.parts), walk.held


def free_table(fun: Any) -> dict[Path, Any]:
    """What :func:`free_key` reads, by path: to compare before and after a call."""
    walk = _Walk(frozenset(), {})
    walk.visit(fun, _DEPTH, ())
    assert walk.table is not None
    return walk.table


def changed_by_call(before: dict[Path, Any], after: dict[Path, Any]) -> set[Path]:
    """The paths whose values a call changed (the shallowest of each change): the function's
    own state, a counter it increments, a log it appends to. Python side effects happen when
    a function is recorded, never when it is replayed, so a replay must not be told apart
    by them."""
    changed = {path for path in before.keys() | after.keys() if before.get(path, _GONE) != after.get(path, _GONE)}
    return {path for path in changed if not any(path[:k] in changed for k in range(len(path)))}


_GONE = object()
_MASKED = "(changed by the function itself)"


class _Walk:
    """One walk from a function through what it reads; see the module's docstring."""

    __slots__ = ("held", "mask", "parts", "seen", "table")

    def __init__(self, mask: frozenset[Path], table: dict[Path, Any] | None) -> None:
        self.mask = mask
        self.table = table
        self.parts: list[Any] = []
        self.held: list[np.ndarray] = []
        self.seen: set[int] = set()

    def visit(self, value: Any, depth: int, path: Path) -> None:
        # (Called on every replayed call: kept to a few dict lookups per value.)
        if self.mask and path in self.mask:
            self.parts.append(_MASKED)
            return
        kind = type(value)
        category = _CATEGORIES.get(kind)
        if category is None:
            category = _CATEGORIES[kind] = _category(kind)
        if category is _ARRAY:
            self.held.append(value)
            dtype = value.dtype
            small = value.tobytes() if value.size <= _SMALL and not dtype.hasobject else None
            part: Any = (id(value), value.shape, dtype, small)
        elif category is _NUMBER:
            part = exact_key(value)
        elif category is _CONTAINER:
            part = (kind, len(value))  # by what it holds: the same entries are the same reads
        else:
            part = id(value)
        self.parts.append(part)
        if self.table is not None:
            self.table[path] = part
        if category is _ARRAY or category is _NUMBER or category is _OPAQUE:
            return
        if depth == 0 or id(value) in self.seen:
            return
        self.seen.add(id(value))
        if kind is types.FunctionType:
            self.function(value, depth - 1, path)
            return
        for step, inner in _inside(value):
            self.visit(inner, depth - 1, (*path, step))

    def function(self, fn: Any, depth: int, path: Path) -> None:
        """A function's cells, the globals its code names, its defaults and what it wraps
        (a library's function: its cells alone, which may hold the user's function)."""
        self.parts.append(id(fn.__code__))
        for k, cell in enumerate(fn.__closure__ or ()):
            if filled(cell):
                self.visit(cell.cell_contents, depth, (*path, k))
        if library_function(fn):
            return
        spaces = fn.__globals__
        for name in _global_names(fn.__code__):
            if name in spaces:
                self.visit(spaces[name], depth, (*path, name))
        if fn.__defaults__ is not None:
            self.visit(fn.__defaults__, depth, (*path, "__defaults__"))
        if fn.__kwdefaults__ is not None:
            self.visit(fn.__kwdefaults__, depth, (*path, "__kwdefaults__"))
        wrapped = fn.__dict__.get("__wrapped__") if fn.__dict__ else None
        if wrapped is not None:
            self.visit(wrapped, depth, (*path, "__wrapped__"))


_ARRAY, _NUMBER, _CONTAINER, _OPAQUE, _OBJECT = range(5)
_CATEGORIES: dict[type, int] = {}


def _category(kind: type) -> int:
    if kind is np.ndarray:
        return _ARRAY
    if kind in (bool, int, float, complex, str, bytes, type(None)) or issubclass(kind, np.generic):
        return _NUMBER
    if kind in (tuple, list, dict):
        return _CONTAINER
    # Keyed by identity alone: what they hold cannot change, or is not the function's (a
    # library's own objects: numpy's function dispatchers, a DataFrame, nodegrad's values).
    if issubclass(kind, types.ModuleType | type | types.CodeType | types.BuiltinFunctionType | np.ufunc | np.dtype):
        return _OPAQUE
    if issubclass(kind, Transformed | functools.partial | types.MethodType | types.FunctionType):
        return _OBJECT  # walked: they hold the user's function
    module = getattr(kind, "__module__", None) or ""
    if module.startswith("scipy.sparse") and hasattr(kind, "_format"):
        return _OBJECT  # a sparse matrix: walked, its values and index arrays held by identity
    if module.partition(".")[0] in _LIBRARIES:
        return _OPAQUE
    return _OBJECT


def _inside(value: Any) -> list[tuple[Any, Any]]:
    """The values one step inside ``value`` that the walk follows, each with its step."""
    if isinstance(value, (list, tuple)):  # (a tuple of types: a union would be built on every call)
        return list(enumerate(value[:_WIDTH]))
    if isinstance(value, dict):
        return [(("key", k), k) for k in list(value)[:_WIDTH]] + list(value.items())[:_WIDTH]
    if isinstance(value, Transformed):
        return [("__wrapped__", value.__wrapped__)]  # type: ignore[attr-defined]  # (set by functools.update_wrapper)
    if isinstance(value, types.MethodType):
        return [("__func__", value.__func__), ("__self__", value.__self__)]
    if isinstance(value, functools.partial):
        return [("func", value.func), ("args", value.args), ("keywords", value.keywords)]
    if hasattr(type(value), "__array__"):
        return [("shape", getattr(value, "shape", None))]  # a DataFrame, a sparse matrix: by identity and shape
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return list(attributes.items())[:_WIDTH]
    slots = [name for cls in type(value).__mro__ for name in getattr(cls, "__slots__", ())]
    return [(name, getattr(value, name, None)) for name in slots[:_WIDTH]]


def library_function(fn: types.FunctionType) -> bool:
    """Whether ``fn`` is nodegrad's or a numerical library's: its globals and defaults are
    the library's state (registries, caches), not what the user's program reads."""
    return (fn.__module__ or "").partition(".")[0] in _LIBRARIES


_LIBRARIES = frozenset({"nodegrad", "numpy", "scipy", "pandas", "dask", "attrs", "attr", "functools", "typing"})


def filled(cell: Any) -> bool:
    """Whether a closure cell holds a value (an empty cell raises when read)."""
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    # By identity (hashing a code object hashes its bytecode); the code is held beside its
    # names, so its id cannot be another's.
    known = _GLOBAL_NAMES.get(id(code))
    if known is None or known[0] is not code:
        known = _GLOBAL_NAMES[id(code)] = (code, tuple(sorted(names_read(code))))
    return known[1]


_GLOBAL_NAMES: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}


def names_read(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions defined in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_read(const)
    return names
