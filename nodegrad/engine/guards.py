"""Guards of public functions: nodegrad's errors only, tables as operands, all-or-nothing recording.

A public function reads its arguments (axes, shapes, index lists, options) before it
records; :func:`guarded` makes what escapes it a nodegrad error naming it and the user's
line, hands a value of a layer above (a table's column) to it as what it stands for
(:data:`OPERANDS`), and lets an interpreter whose value it could not read run it its own
way (:data:`RERUNS`). :func:`composite` makes a function that records several nodes
all-or-nothing: a failed call leaves every arena as it was.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from nodegrad.engine.structure import UnwalkableError
from nodegrad.engine.traced import Traced
from nodegrad.errors import StructureError, error_like, rerun_reporting_warnings, user_location

__all__ = ["OPERANDS", "RERUNS", "call_atomically", "composite", "guarded", "guarded_structure"]

F = TypeVar("F", bound=Callable[..., Any])


def _arenas_in(values: Any) -> list[Any]:
    found: dict[int, Any] = {}
    for v in values:
        for item in v if isinstance(v, (list, tuple)) else (v,):
            if type(item) is Traced:
                found[id(item.arena)] = item.arena
    return list(found.values())


#: How a guarded function that read the value of an interpreter's handle runs instead, by
#: the type of the error the handle raised: ``rerun(fn, args, kwargs, error)`` (the
#: batching interpreter runs it once per example). It re-raises ``error`` where it cannot.
RERUNS: dict[type[BaseException], Callable[..., Any]] = {}


#: How a value of a layer above reaches an op as an operand, by its type: a table's column
#: as its values. Filled when the first such value is made, so that until then a guarded
#: call pays one test of an empty dict.
OPERANDS: dict[type, Callable[[Any], Any]] = {}


def _as_operands(values: Any) -> Any:
    """``values`` (arguments, or a list or tuple of them) with each value of an
    :data:`OPERANDS` type replaced by what it stands for; ``None`` where none is."""
    found = False
    made = []
    for v in values:
        kind = type(v)
        if kind in OPERANDS:
            v, found = OPERANDS[kind](v), True
        elif (kind is list or kind is tuple) and any(type(u) in OPERANDS for u in v):  # (one level: ng.stack)
            v, found = kind(OPERANDS[type(u)](u) if type(u) in OPERANDS else u for u in v), True
        made.append(v)
    return made if found else None


def guarded(fn: F) -> F:
    """Make ``fn``, a public function that reads its arguments before it records (axes,
    shapes, index lists, options), raise nodegrad errors only: a builtin exception that
    escapes it becomes the nodegrad error of its kind naming ``fn`` and the user's line,
    with the original as its ``__cause__``; a structure too deep (or cyclic) to walk
    raises the walker's StructureError, naming ``fn``. Its arguments of an
    :data:`OPERANDS` type reach it as what they stand for, unless it is a function of
    structures (:func:`guarded_structure`), which takes a table as a table."""
    name = fn.__name__

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if OPERANDS and fn not in _OF_STRUCTURES:
            found = _as_operands(args)
            if found is not None:
                args = tuple(found)
        try:
            return fn(*args, **kwargs)
        except UnwalkableError as exc:
            # Still the walker's error, for a function further out that names the argument
            # (custom_vjp's, say); this one names the op and the line.
            exc.args = (f"{name}: {exc} [called at {user_location()}]",)
            raise
        except RecursionError as exc:
            msg = f"{name}: an argument is nested too deeply, or contains itself [called at {user_location()}]"
            raise StructureError(msg) from exc
        except Exception as exc:
            if isinstance(exc, TypeError) and not _fits(fn, args, kwargs):
                # A call that does not fit the signature is Python's TypeError, as for any function.
                msg = f"{name}: {exc} [called at {user_location()}]"
                raise TypeError(msg) from None
            rerun = RERUNS.get(type(exc))
            if rerun is not None:  # it read an interpreter's value: that interpreter runs it its own way
                return rerun(checked, args, kwargs, exc)
            if isinstance(exc, Warning):  # see nodegrad.errors.rerun_reporting_warnings
                return rerun_reporting_warnings(fn, *args, **kwargs)
            kind = error_like(exc)
            if kind is None:
                raise
            msg = f"{name}: {exc} [called at {user_location()}]"
            raise kind(msg) from exc

    checked.guarded = True  # type: ignore[attr-defined]
    return checked  # type: ignore[return-value]


#: The guarded functions of structures, to which a table is a table, not an operand.
_OF_STRUCTURES: set[Callable[..., Any]] = set()


def _fits(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``fn(*args, **kwargs)`` fits ``fn``'s signature (asked only once it raised)."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin)
        return True
    return True


def guarded_structure(fn: F) -> F:
    """:func:`guarded` for a function of structures: a table reaches it as a table."""
    _OF_STRUCTURES.add(fn)
    return guarded(fn)


def composite(fn: F) -> F:
    """Make ``fn``, which records several nodes, all-or-nothing: when it raises, the nodes
    it appended are removed again, so a failed call leaves every arena as it was.
    """

    @functools.wraps(fn)
    def all_or_nothing(*args: Any, **kwargs: Any) -> Any:
        return call_atomically(fn, args, kwargs)

    return all_or_nothing  # type: ignore[return-value]


def call_atomically(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)``, removing the nodes it appended to the arguments' arenas if
    it raises."""
    if not kwargs and len(args) == 1 and type(args[0]) is Traced:  # the common case: one traced argument
        arena = args[0].arena
        size = len(arena._nodes)
        try:
            return fn(*args)
        except BaseException:
            arena.truncate(size)
            raise
    arenas = _arenas_in((*args, *kwargs.values()))
    sizes = [len(a._nodes) for a in arenas]
    try:
        return fn(*args, **kwargs)
    except BaseException:
        for arena, size in zip(arenas, sizes, strict=True):
            arena.truncate(size)
        raise
