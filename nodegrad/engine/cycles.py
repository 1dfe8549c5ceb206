"""The errors for structures that the walker of :mod:`nodegrad.engine.structure` cannot
finish: a container that holds itself, or nesting deeper than its limit.

The walker finds them (:class:`~nodegrad.engine.structure.UnwalkableError`); a public function
that walks its arguments turns that into :func:`unwalkable`'s error, which names the
function, the argument and the key path where the structure contains itself, or says it is
too deep.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from nodegrad.engine.structure import UnwalkableError, cycle_in, depth_of, is_container, max_depth
from nodegrad.errors import StructureError

__all__ = ["reports_unwalkable", "unwalkable"]

F = TypeVar("F", bound=Callable[..., Any])


def unwalkable(where: str, name: str, value: Any) -> StructureError:
    """The error for a value that the structure walker could not finish: a container that
    holds itself (named by its key path), or nesting too deep."""
    cycle = cycle_in(value, name)
    if cycle is not None:
        inner, outer = cycle
        msg = (
            f"{where}: {inner} is {outer or 'the value'} itself, so the structure contains itself: a structure to "
            "differentiate or to walk must be a tree; hold a copy there, or keep the back-reference out of it"
        )
        return StructureError(msg)
    msg = (
        f"{where}: {name or 'the value'} is nested more than {max_depth()} levels deep, the structure walker's limit "
        f"(a quarter of Python's recursion limit, {sys.getrecursionlimit()}); flatten it, or raise the limit with "
        "sys.setrecursionlimit"
    )
    return StructureError(msg)


def reports_unwalkable(where: str) -> Callable[[F], F]:
    """Make the public function ``fn`` raise :func:`unwalkable`'s StructureError, naming the
    argument and the place, when the walker finds that an argument holds itself or nests
    too deep (a ``RecursionError`` of a user's own function, called on the leaves, is not
    the walker's and is left as it is)."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def walk(*args: Any, **kwargs: Any) -> Any:
            _calls.depth = depth = getattr(_calls, "depth", 0) + 1
            try:
                return fn(*args, **kwargs)
            except UnwalkableError as exc:
                # Reported by the outermost such call, naming the user's argument (optim.adam's
                # params, not the tree.zeros_like it calls); an inner call's report is kept
                # on the exception for when the outer one finds no culprit of its own.
                error = _unwalkable_argument(where, signature, args, kwargs)
                if depth > 1:
                    if error is not None and not hasattr(exc, "nodegrad_unwalkable"):
                        exc.nodegrad_unwalkable = error  # type: ignore[attr-defined]
                    raise
                error = error or getattr(exc, "nodegrad_unwalkable", None)
                if error is None:
                    error = unwalkable(where, "a value", exc.value)
            finally:
                _calls.depth = depth - 1
            raise error  # here, once the stack has unwound

        return walk  # type: ignore[return-value]

    return wrap


_calls = threading.local()  # how many functions made by reports_unwalkable are running


def _unwalkable_argument(
    where: str, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> StructureError | None:
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    named: list[tuple[str, Any]] = []
    for name, value in bound.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named.extend((f"{name}[{k}]", v) for k, v in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.extend((f"{name}[{k!r}]", v) for k, v in value.items())
        else:
            named.append((name, value))
    trees = [(name, value) for name, value in named if is_container(value)]
    for name, value in trees:
        if cycle_in(value) is not None:
            return unwalkable(where, name, value)
    for name, value in trees:
        if depth_of(value) > max_depth():
            return unwalkable(where, name, value)
    return None
