"""Structures that the recursive walkers of :mod:`nodegrad.engine.structure` cannot finish:
a container that holds itself, or nesting deeper than Python's recursion limit.

The walkers stay recursive and pay nothing for this: a walk that fails with a
``RecursionError`` asks :func:`unwalkable` for the error to raise instead, which names the
key path where the structure contains itself (found by an iterative walk), or says it is
too deep.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

from nodegrad.engine.structure import format_key, handler_for
from nodegrad.errors import StructureError

__all__ = ["cycle_in", "depth_of", "reports_unwalkable", "unwalkable"]

F = TypeVar("F", bound=Callable[..., Any])


def cycle_in(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(inner, outer)`` key paths where a container of ``value`` holds itself (``inner``
    is the place, ``outer`` the container it is), or ``None`` for a tree.

    Walked iteratively, so it answers for a value too deep or too cyclic for the recursive
    walkers: the errors of those call it only once they have failed.

    Examples
    --------
    >>> from nodegrad.engine.cycles import cycle_in
    >>> loop = [1.0, {"a": 2.0}]
    >>> loop[1]["self"] = loop
    >>> cycle_in(loop, "params")
    ("params[1]['self']", 'params')
    >>> cycle_in([[1.0], [2.0]]) is None
    True
    """
    on_path: dict[int, str] = {}
    stack: list[tuple[Any, str, Iterator[Hashable] | None]] = [(value, path, None)]
    while stack:
        node, where, keys = stack.pop()
        handler = handler_for(node)
        if handler is None:
            continue
        if keys is None:  # entering the container
            if id(node) in on_path:
                return where, on_path[id(node)]
            on_path[id(node)] = where
            keys = iter(handler.keys(node))
        key = next(keys, _DONE)
        if key is _DONE:
            del on_path[id(node)]
            continue
        stack.append((node, where, keys))
        stack.append((handler.get(node, key), where + format_key(handler.kind, key), None))
    return None


_DONE = object()


def unwalkable(where: str, name: str, value: Any) -> StructureError:
    """The error for a value that a structure walk could not finish within Python's
    recursion limit: a container that holds itself (named by its key path), or nesting
    too deep."""
    cycle = cycle_in(value, name)
    if cycle is not None:
        inner, outer = cycle
        msg = (
            f"{where}: {inner} is {outer or 'the value'} itself, so the structure contains itself: a structure to "
            "differentiate or to walk must be a tree; hold a copy there, or keep the back-reference out of it"
        )
        return StructureError(msg)
    msg = (
        f"{where}: {name or 'the value'} is nested deeper than Python's recursion limit ({sys.getrecursionlimit()}) "
        "allows; flatten it, or raise the limit with sys.setrecursionlimit"
    )
    return StructureError(msg)


def depth_of(value: Any) -> int:
    """How many containers deep ``value`` nests (0 for a leaf), walked iteratively; for a
    tree (see :func:`cycle_in`)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        handler = handler_for(node)
        if handler is not None:
            deepest = max(deepest, depth + 1)
            stack.extend((handler.get(node, key), depth + 1) for key in handler.keys(node))
    return deepest


def reports_unwalkable(where: str) -> Callable[[F], F]:
    """Make the public function ``fn`` raise :func:`unwalkable`'s StructureError, naming the
    argument and the place, when a ``RecursionError`` escapes it because an argument holds
    itself or nests too deep for the walkers; any other ``RecursionError`` (one of a user's
    own function, called on the leaves) is left as it is."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def walk(*args: Any, **kwargs: Any) -> Any:
            _calls.depth = depth = getattr(_calls, "depth", 0) + 1
            try:
                return fn(*args, **kwargs)
            except RecursionError as exc:
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
                    raise
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
    trees = [(name, value) for name, value in named if handler_for(value) is not None]
    for name, value in trees:
        if cycle_in(value) is not None:
            return unwalkable(where, name, value)
    for name, value in trees:
        if depth_of(value) > sys.getrecursionlimit() // 4:  # the walkers spend frames per level
            return unwalkable(where, name, value)
    return None
