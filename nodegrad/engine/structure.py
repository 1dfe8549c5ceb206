"""The structure walker: the one place that walks a structured value to any depth.

:func:`flatten` takes a value apart into its leaves, in order, and a :class:`TreeDef`
that says how to put them back (:meth:`TreeDef.unflatten`), names each leaf's key path
(:meth:`TreeDef.paths`) and knows which leaves sit in fields marked static
(:meth:`TreeDef.static_leaves`). What a container is, one level at a time, is
:mod:`nodegrad.engine.containers`' (:func:`~nodegrad.engine.containers.handler_for`);
no other module asks it: the transforms, tree utilities, custom rules, the sweep's
structured cotangents, ravel and check_grads all walk values through the functions here
(a test keeps it so). Records, dicts, sequences, named tuples and dataclasses need no
registration.

A structure must be a tree no deeper than :func:`max_depth` (a quarter of Python's
recursion limit): :func:`flatten` raises :class:`UnwalkableError` for a container that holds
itself or for deeper nesting, decided here once; :mod:`nodegrad.engine.cycles` words it
for the public function and the argument at hand.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeAlias

import numpy as np

from nodegrad.engine.containers import _CACHE as _HANDLERS
from nodegrad.engine.containers import (
    _LEAF_TYPES,
    STATIC,
    Handler,
    dataclass_field,
    field,
    format_key,
    handler_for,
    is_differentiable_leaf,
    register_container,
)
from nodegrad.errors import StructureError

__all__ = [
    "LEAF",
    "STATIC",
    "Tree",
    "TreeDef",
    "UnwalkableError",
    "container_kind",
    "cycle_in",
    "dataclass_field",
    "depth_of",
    "differentiable_leaves",
    "entry",
    "field",
    "flatten",
    "flatten_with_paths",
    "format_key",
    "integer_leaves",
    "is_container",
    "is_differentiable_leaf",
    "leaves",
    "map_unless_static",
    "map_with_paths",
    "max_depth",
    "pair_leaves",
    "rebuild",
    "register_container",
    "zip_leaves",
]


#: A structured value: a leaf (an array, a number, any object that is no container) or a
#: record, dict, list or tuple of them, nested to any depth.
Tree: TypeAlias = Any


class UnwalkableError(StructureError):
    """A value the walker cannot finish: a container that holds itself, or nesting deeper
    than :func:`max_depth`. ``value`` is the value given to the walk."""

    def __init__(self, value: Any) -> None:
        self.value = value
        cycle = cycle_in(value)
        if cycle is not None:
            inner, outer = cycle
            text = f"{inner} is {outer or 'the value'} itself, so the structure contains itself"
        else:
            text = f"the value is nested more than {max_depth()} levels deep"
        super().__init__(text)


def max_depth() -> int:
    """How many containers deep a structure may nest: a quarter of Python's recursion
    limit, so that every walk of one (and the user's code that reads it) has frames to
    spare."""
    return sys.getrecursionlimit() // 4


class TreeDef:
    """How a value is put together from its leaves: a leaf (:data:`LEAF`), or a container
    with its handler, the value itself as the template its rebuilt copies take their type
    and settings from, its keys, which entries are marked static, and a TreeDef per entry.
    """

    __slots__ = ("children", "flat", "handler", "has_static", "keys", "num_leaves", "static", "template")

    def __init__(
        self,
        handler: Handler | None,
        template: Any,
        keys: list[Hashable],
        static: list[bool],
        children: list[TreeDef],
        num_leaves: int,
        has_static: bool = False,
        flat: bool = False,
    ) -> None:
        self.handler = handler
        self.template = template
        self.keys = keys
        self.static = static
        self.children = children
        self.num_leaves = num_leaves
        #: Whether an entry anywhere inside is marked static (most values have none).
        self.has_static = has_static
        #: Whether every entry is a leaf (one level: the commonest container).
        self.flat = flat

    @property
    def kind(self) -> str:
        """``"leaf"``, or the container's kind: ``"record"``, ``"map"`` or ``"sequence"``."""
        return "leaf" if self.handler is None else self.handler.kind

    def unflatten(self, leaves: Iterable[Any], *, static_as_none: bool = False) -> Any:
        """The value rebuilt from ``leaves`` (one per leaf, in :func:`flatten`'s order),
        each container an instance of the template's type; with ``static_as_none`` an
        entry marked static is ``None`` as a whole (its leaves are still consumed)."""
        if self.flat and type(leaves) is list and not (static_as_none and self.has_static):
            # One level of leaves, the commonest container: built at once.
            return self.handler.build(self.template, leaves)  # type: ignore[union-attr]
        return self._build(iter(leaves), static_as_none)

    def _build(self, leaves: Iterator[Any], static_as_none: bool) -> Any:
        if self.handler is None:
            return next(leaves)
        children = [next(leaves) if c is LEAF else c._build(leaves, static_as_none) for c in self.children]
        if static_as_none and self.has_static:
            children = [None if s else c for s, c in zip(self.static, children, strict=True)]
        return self.handler.build(self.template, children)

    def build(self, children: list[Any]) -> Any:
        """This container rebuilt, one level, with ``children`` as its entries."""
        assert self.handler is not None
        return self.handler.build(self.template, children)

    def step(self, key: Hashable) -> str:
        """The key path step of entry ``key``: ``.name`` for a record, ``[key]`` otherwise."""
        return format_key(self.kind, key)

    def paths(self, prefix: str = "") -> list[str]:
        """The key path of each leaf, in order, each starting with ``prefix``."""
        found: list[str] = []
        self._paths(prefix, found)
        return found

    def _paths(self, prefix: str, found: list[str]) -> None:
        if self.handler is None:
            found.append(prefix)
            return
        record = self.handler.kind == "record"
        for key, child in zip(self.keys, self.children, strict=True):
            step = f"{prefix}.{key}" if record else f"{prefix}[{key!r}]"  # format_key, inlined
            if child is LEAF:
                found.append(step)
            else:
                child._paths(step, found)

    def static_leaves(self) -> list[bool]:
        """Whether each leaf sits inside an entry marked static."""
        if not self.has_static:
            return [False] * self.num_leaves
        found: list[bool] = []
        self._static(False, found)
        return found

    def _static(self, inside: bool, found: list[bool]) -> None:
        if self.handler is None:
            found.append(inside)
            return
        for static, child in zip(self.static, self.children, strict=True):
            child._static(inside or static, found)

    def __repr__(self) -> str:
        if self.handler is None:
            return "*"
        inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children, strict=True))
        return f"{type(self.template).__name__}({inner})"


#: The TreeDef of every leaf: one object, as a leaf has nothing of its own to keep.
LEAF = TreeDef(None, None, [], [], [], 1)


def flatten(value: Tree, paths: list[str] | None = None, prefix: str = "") -> tuple[list[Any], TreeDef]:
    """The leaves of ``value`` in order (static ones included) and its :class:`TreeDef`.

    With ``paths``, each leaf's key path (starting with ``prefix``) is appended to it on
    the way, as :meth:`TreeDef.paths` would give them, without a second walk.

    Raises :class:`UnwalkableError` for a container that holds itself or nesting deeper than
    :func:`max_depth`.

    Examples
    --------
    >>> from nodegrad.engine.structure import flatten
    >>> leaves, treedef = flatten({"w": [1.0, 2.0], "name": "x"})
    >>> leaves, treedef
    ([1.0, 2.0, 'x'], dict('w': list(0: *, 1: *), 'name': *))
    >>> treedef.unflatten([3.0, 4.0, "y"]), treedef.paths("p")
    ({'w': [3.0, 4.0], 'name': 'y'}, ["p['w'][0]", "p['w'][1]", "p['name']"])
    """
    handler = handler_for(value)
    if handler is None:
        if paths is not None:
            paths.append(prefix)
        return [value], LEAF
    found: list[Any] = []
    try:
        treedef = _flatten(value, handler, found, None, None, paths, prefix)  # depth: read when needed
    except _UnfinishedError:
        raise UnwalkableError(value) from None
    return found, treedef


class _UnfinishedError(Exception):
    """Raised inside :func:`_flatten` and turned into :class:`UnwalkableError` once, at the top,
    where the whole value is at hand to name the place."""


def _flatten(
    value: Any,
    handler: Handler,
    found: list[Any],
    depth: int | None,
    on_path: set[int] | None,
    paths: list[str] | None,
    prefix: str,
) -> TreeDef:
    """Walk ``value`` into ``found``; ``on_path`` holds the ids of the containers it is
    inside (made when the walk first goes deeper than one level)."""
    start = len(found)
    keys, entries = handler.entries(value)
    static = handler._static(value) if handler._static else [False] * len(keys)  # static_mask, inlined
    has_static = True in static
    if paths is None:
        steps: Any = keys  # unused
    elif handler.kind == "record":
        steps = [f"{prefix}.{key}" for key in keys]  # format_key, inlined
    else:
        steps = [f"{prefix}[{key!r}]" for key in keys]
    if _LEAF_TYPES.issuperset(map(type, entries)):  # every entry a leaf (the commonest container): no loop
        found.extend(entries)
        if paths is not None:
            paths.extend(steps)
        return TreeDef(handler, value, keys, static, [LEAF] * len(keys), len(keys), has_static, True)
    # Deeper than one level: the depth limit and the set of enclosing containers are kept
    # from here on (a flat container needs neither).
    if depth is None:  # not read yet: the walk only now goes deeper than one level
        depth = max_depth()
    if depth <= 0 or (on_path is not None and id(value) in on_path):
        raise _UnfinishedError
    if on_path is None:
        on_path = set()
    on_path.add(id(value))
    cache = _HANDLERS
    handlers = [cache.get(type(child), _UNKNOWN) for child in entries]
    children: list[TreeDef] = []
    for step, child, child_handler in zip(steps, entries, handlers):  # noqa: B905  (equal lengths by construction)
        if child_handler is _UNKNOWN:
            child_handler = handler_for(child)
        if child_handler is None:
            found.append(child)
            children.append(LEAF)
            if paths is not None:
                paths.append(step)
        else:
            made = _flatten(child, child_handler, found, depth - 1, on_path, paths, step)
            has_static = has_static or made.has_static
            children.append(made)
    on_path.discard(id(value))
    return TreeDef(handler, value, keys, static, children, len(found) - start, has_static)


_UNKNOWN: Any = object()  # a type handler_for has not been asked about yet


def is_container(value: Tree) -> bool:
    """Whether ``value`` is a record, map or sequence (not a leaf)."""
    return handler_for(value) is not None


def container_kind(value: Tree) -> str | None:
    """``"record"``, ``"map"`` or ``"sequence"`` for a container, ``None`` for a leaf."""
    handler = handler_for(value)
    return None if handler is None else handler.kind


def entry(container: Any, key: Hashable) -> Any:
    """Entry ``key`` of ``container``, one level down (a field's value, a dict's item)."""
    handler = handler_for(container)
    assert handler is not None
    return handler.get(container, key)


def rebuild(template: Any, children: list[Any]) -> Any:
    """A container like ``template``, one level, holding ``children`` as its entries."""
    handler = handler_for(template)
    assert handler is not None
    return handler.build(template, children)


# -- walks built on flatten -------------------------------------------------------------------


def leaves(value: Tree) -> list[Any]:
    """Every leaf of ``value``, static ones included, in order.

    Examples
    --------
    >>> from nodegrad.engine.structure import leaves
    >>> leaves({"w": [1.0, 2.0], "name": "x"})
    [1.0, 2.0, 'x']
    """
    return flatten(value)[0]


def flatten_with_paths(value: Tree, path: str = "") -> list[tuple[str, Any]]:
    """``(key_path, leaf)`` for every leaf of ``value``, static ones included.

    Examples
    --------
    >>> from nodegrad.engine.structure import flatten_with_paths
    >>> flatten_with_paths({"w": [1.0, 2.0], "name": "x"})
    [("['w'][0]", 1.0), ("['w'][1]", 2.0), ("['name']", 'x')]
    """
    found, treedef = flatten(value)
    return list(zip(treedef.paths(path), found, strict=True))


def differentiable_leaves(value: Tree, path: str = "") -> list[tuple[str, Any]]:
    """``(key_path, leaf)`` for the differentiable leaves of ``value`` only: float leaves
    that are not inside a field marked static."""
    found, treedef = flatten(value)
    pairs = zip(treedef.paths(path), found, treedef.static_leaves(), strict=True)
    return [(p, leaf) for p, leaf, static in pairs if not static and is_differentiable_leaf(leaf)]


def integer_leaves(value: Tree, path: str = "") -> list[tuple[str, Any]]:
    """``(key_path, leaf)`` for the integer numbers of ``value`` (Python ints and numpy
    integer scalars, not bools) outside fields marked static.

    Such a leaf is static, so it gets no gradient and no optimiser moves it; beside float
    leaves it is almost always a parameter written ``0`` for ``0.0``, which the strict
    gradient options and the optimisers name.

    Examples
    --------
    >>> from nodegrad.engine.structure import integer_leaves
    >>> integer_leaves({"w": 1.0, "b": 0, "on": True})
    [("['b']", 0)]
    """
    found, treedef = flatten(value)
    pairs = zip(treedef.paths(path), found, treedef.static_leaves(), strict=True)
    return [
        (p, leaf)
        for p, leaf, static in pairs
        if not static and isinstance(leaf, int | np.integer) and not isinstance(leaf, bool | np.bool_)
    ]


def map_with_paths(fn: Callable[[str, Any], Any], value: Tree, path: str = "") -> Any:
    """Rebuild ``value`` with every leaf replaced by ``fn(key_path, leaf)``.

    Containers are rebuilt as their own type, without running validators.
    """
    found, treedef = flatten(value)
    return treedef.unflatten([fn(p, leaf) for p, leaf in zip(treedef.paths(path), found, strict=True)])


def map_unless_static(fn: Callable[[Any], Any], value: Any) -> Any:
    """Rebuild ``value`` with ``fn(leaf)`` at every leaf and ``None`` for fields marked static."""
    found, treedef = flatten(value)
    if treedef is LEAF:
        return fn(value)
    static = treedef.static_leaves()
    return treedef.unflatten(
        [None if s else fn(leaf) for leaf, s in zip(found, static, strict=True)], static_as_none=True
    )


def zip_leaves(value: Tree, other: Tree, path: str = "") -> list[tuple[str, Any, Any]]:
    """Walk two values of one structure together: ``(key_path, leaf, other_leaf)`` in
    ``value``'s order.

    ``other`` may hold ``None`` in place of a whole subtree (a static slot): that subtree
    comes as one triple ``(key_path, subtree, None)``. Maps are paired by key, whatever
    their order. Raises a :class:`StructureError` naming the key path where they differ.
    """
    found: list[tuple[str, Any, Any]] = []
    _zip(flatten(value)[1], value, other, path, found)
    return found


def _zip(treedef: TreeDef, value: Any, other: Any, path: str, found: list[tuple[str, Any, Any]]) -> None:
    if treedef.handler is None or other is None:
        found.append((path, value, other))
        return
    handler = treedef.handler
    other_handler = handler_for(other)
    keys = treedef.keys
    if (
        other_handler is None
        or (type(other) is not type(value) and (handler.family is None or handler.family != other_handler.family))
        or not (
            _same_keys(handler.kind, keys, other_handler.keys(other), handler.family)
            or _static_extras(other_handler, other, keys, handler.family)
        )
    ):
        described = (
            type(other).__name__
            if other_handler is None
            else f"{type(other).__name__} with keys {other_handler.keys(other)}"
        )
        msg = (
            f"structure mismatch at {path or 'the top level'}: expected {type(value).__name__} with keys {keys}, got "
            f"{described}"
        )
        raise StructureError(msg)
    for key, child in zip(keys, treedef.children, strict=True):
        _zip(child, handler.get(value, key), other_handler.get(other, key), path + format_key(handler.kind, key), found)


def pair_leaves(value: Tree, other: Tree, absent: Any = None, path: str = "") -> list[tuple[str, Any, Any]]:
    """``(key_path, leaf, other_leaf)`` for every leaf of ``value``, in order; where
    ``other`` holds ``None`` for a whole subtree, each of its leaves is paired with
    ``absent``. Raises :func:`zip_leaves`' error where the structures differ."""
    paired: list[tuple[str, Any, Any]] = []
    for where, part, other_part in zip_leaves(value, other, path):
        if other_part is None and is_container(part):
            found, treedef = flatten(part)
            paired.extend((p, leaf, absent) for p, leaf in zip(treedef.paths(where), found, strict=True))
        else:
            paired.append((where, part, other_part))
    return paired


def _same_keys(kind: str, keys: list[Hashable], other: list[Hashable], family: str | None = None) -> bool:
    # Maps pair entries by key, whatever their order ({'b', 'a'} against {'a', 'b'}); a
    # family whose handler reads a missing entry as None (a table's gradient holds its float
    # columns only) pairs a part of the keys too.
    if other == keys or (kind == "map" and len(other) == len(keys) and set(other) == set(keys)):
        return True
    return family is not None and set(other) <= set(keys)


def _static_extras(handler: Any, value: Any, keys: list[Hashable], family: str | None) -> bool:
    """Whether ``value`` (of a family that reads missing entries as None) holds ``keys``
    and, besides them, static entries only: a table paired with its own gradient, whose
    int and string columns a gradient leaves out."""
    if family is None:
        return False
    extra = set(handler.keys(value)) - set(keys)
    return set(keys) <= set(handler.keys(value)) and not any(
        is_differentiable_leaf(handler.get(value, key)) for key in extra
    )


# -- values that are not trees, found without recursion (for the errors that name them) ---------


def cycle_in(value: Tree, path: str = "") -> tuple[str, str] | None:
    """``(inner, outer)`` key paths where a container of ``value`` holds itself (``inner``
    is the place, ``outer`` the container it is), or ``None`` for a tree.

    Walked iteratively, so it answers for any value, however deep or cyclic.

    Examples
    --------
    >>> from nodegrad.engine.structure import cycle_in
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


def depth_of(value: Tree) -> int:
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
