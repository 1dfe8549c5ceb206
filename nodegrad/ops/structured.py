"""Structured ops: reading one entry of a record, map or sequence node, and building one.

A node's value may be a record (attrs class, dataclass, named tuple), a map (dict) or a
sequence (list, tuple), nested to any depth. Reading entry ``i`` of ``n`` records a read
node whose VJP sends the cotangent to exactly slot ``i``: the other slots stay symbolic
zeros (:class:`~nodegrad.engine.structure.StructCotangent`) and cost nothing. A constructor node
builds a container from element nodes; its VJP hands each element its slot.

:func:`view` turns a structured node into what user code works with: an instance of the
user's own class (or a real dict / list / tuple) whose differentiable leaves are traced
read nodes, so attribute access, the class's methods and properties, ``d[k]``, ``in``,
``len``, ``items()``, iteration and unpacking all work as on the plain value.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Hashable
from typing import Any

import numpy as np

from nodegrad.engine.cotangents import StructCotangent
from nodegrad.engine.guards import guarded, guarded_structure
from nodegrad.engine.levels import DIFFERENTIATING, Interpreted
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import defop, same_rule_for_all
from nodegrad.engine.structure import (
    LEAF,
    TreeDef,
    container_kind,
    entry,
    flatten,
    format_key,
    is_differentiable_leaf,
    rebuild,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import StructureError, user_location
from nodegrad.ops.batching import made_of_ops

__all__ = ["leaf_view", "map_lookup", "pack", "replace", "seq_index", "struct_field", "view"]

_F = "structured"


def _read(parent: Any, index: int, total: int, key: Hashable) -> Any:
    # A Python float field stays a Python float: weakly typed, as numpy treats Python
    # scalars, so a float32 array it meets stays float32.
    return entry(parent, key)


def _read_rule(g: Any, ans: Any, parent: Any, index: int, total: int, key: Hashable) -> StructCotangent:
    return StructCotangent(total, {index: g})


# Batched by their forward as it is (made_of_ops): a constructor given batched values builds the
# structure of them, whose batched leaves are each every example's; a read takes such a leaf.
def _defread(name: str, doc: str) -> Any:
    return defop(name, _read, _read_rule, None, None, None, family=_F, doc=doc, batch=made_of_ops)


STRUCT_FIELD = _defread("struct_field", "one field of a record node; the other fields get symbolic zeros")
MAP_LOOKUP = _defread("map_lookup", "one entry of a map node, keys in insertion order; the rest get symbolic zeros")
SEQ_INDEX = _defread("seq_index", "one item of a list or tuple node; the rest get symbolic zeros")
_READ_OPS = {"record": STRUCT_FIELD, "map": MAP_LOOKUP, "sequence": SEQ_INDEX}


def _build(template: Any, *children: Any) -> Any:
    return rebuild(template, list(children))


def _build_rule(k: int, g: Any, ans: Any, template: Any, *children: Any) -> Any:
    # Position 0 is the template; element k sits in slot k - 1. A missing slot is a zero.
    return g.slots.get(k - 1)


def _defmake(name: str, doc: str) -> Any:
    return defop(name, _build, same_rule_for_all(_build_rule), family=_F, doc=doc, batch=made_of_ops)


MAKE_RECORD = _defmake("make_record", "a record node from field nodes")
MAKE_MAP = _defmake("make_map", "a map node from entry nodes")
MAKE_SEQUENCE = _defmake("make_sequence", "a list or tuple node from item nodes")
_MAKE_OPS = {"record": MAKE_RECORD, "map": MAKE_MAP, "sequence": MAKE_SEQUENCE}


def _read_entry(parent: Interpreted, kind: str, expected_kind: str | None, index: int, total: int) -> Interpreted:
    if type(parent) not in DIFFERENTIATING:
        msg = (
            f"{kind}: needs the handle of a structured node (from nodegrad.pack), got {type(parent).__name__} "
            f"[called at {user_location()}]"
        )
        raise StructureError(msg)
    value = unwrap(parent.value)
    found_kind = container_kind(value)
    path = parent.arena.path_of(parent.index)
    if found_kind is None or (expected_kind is not None and found_kind != expected_kind):
        msg = (
            f"{kind}: node {parent.index}{' ' + path if path else ''} holds a {type(value).__name__}, not a "
            f"{expected_kind} [called at {user_location()}]"
        )
        raise StructureError(msg)
    keys = flatten(value)[1].keys
    if total != len(keys) or not 0 <= index < total:
        msg = (
            f"{kind}: entry {index} of {total} requested, but {path or 'the value'} has {len(keys)} entries [called "
            f"at {user_location()}]"
        )
        raise StructureError(msg)
    return _read_node(parent, found_kind, index, total, keys[index], path)


def _read_node(parent: Interpreted, kind: str, index: int, total: int, key: Hashable, path: str) -> Interpreted:
    handle: Interpreted = record1(_READ_OPS[kind], parent, index, total, key)
    handle.arena.name_node(handle.index, path + format_key(kind, key))
    return handle


@guarded
def struct_field(parent: Interpreted, field_index: int, total_fields: int) -> Interpreted:
    """Read field ``field_index`` of a record node that has ``total_fields`` fields.

    Its VJP sends the cotangent to that field alone; the other fields get a symbolic zero
    that costs nothing in the sweep. Attribute access on a traced record records this op.

    Examples
    --------
    >>> import collections, numpy as np
    >>> import nodegrad as ng
    >>> P = collections.namedtuple("P", "w b")
    >>> a = ng.Arena()
    >>> w, b = a.param(np.ones(2)), a.param(np.zeros(3))
    >>> node = ng.pack(P(w, b))  # a record node built in the graph
    >>> field = ng.struct_field(node, 1, 2)
    >>> a[field.index].op, field.shape
    ('struct_field', (3,))
    >>> a.backward(ng.sum(field * 2.0), wrt=[w, b])
    [array([0., 0.]), array([2., 2., 2.])]
    """
    return _read_entry(parent, "struct_field", "record", field_index, total_fields)


@guarded
def map_lookup(map_node: Interpreted, key_index: int, total_keys: int) -> Interpreted:
    """Read entry ``key_index`` (keys in insertion order) of a map node with ``total_keys`` keys.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = ng.Arena()
    >>> x = a.param(np.ones(3))
    >>> node = ng.pack({"w": x * 2.0, 7: x})  # keys of any hashable type
    >>> ng.map_lookup(node, 1, 2).shape
    (3,)
    """
    return _read_entry(map_node, "map_lookup", "map", key_index, total_keys)


@guarded
def seq_index(seq_node: Interpreted, index: int, total: int) -> Interpreted:
    """Read item ``index`` of a list or tuple node with ``total`` items.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = ng.Arena()
    >>> x = a.param(np.ones(2))
    >>> node = ng.pack([x, ng.cat([x, x])])
    >>> ng.seq_index(node, 1, 2).shape
    (4,)
    """
    return _read_entry(seq_node, "seq_index", "sequence", index, total)


@guarded
def view(node: Interpreted) -> Any:
    """The traced view of a node: the node itself for an array, else an instance of the
    value's own container type whose differentiable leaves are traced read nodes.

    Entries that are static (marked so, or holding no floats) are the plain values. The
    structure is read under every level of handles (a node of a nested transform holds
    its enclosing transform's handle of the structure).
    """
    value = unwrap(node.value)
    found, treedef = flatten(value)
    if treedef is LEAF:
        return node
    return _view(node, treedef, iter(found), node.arena.path_of(node.index))


def _view(node: Interpreted, treedef: TreeDef, found: Any, path: str) -> Any:
    """The view of ``node``, whose value has ``treedef``; ``found`` yields its leaves."""
    total = len(treedef.keys)
    children = []
    for i, (key, static, child) in enumerate(zip(treedef.keys, treedef.static, treedef.children, strict=True)):
        part = [next(found) for _ in range(child.num_leaves)]
        step = path + treedef.step(key)
        if static or not _any_differentiable(child, part):
            children.append(child.unflatten(part))
        elif child is LEAF:
            children.append(_read_node(node, treedef.kind, i, total, key, path))
        else:
            children.append(_view(_read_node(node, treedef.kind, i, total, key, path), child, iter(part), step))
    return treedef.build(children)


def _any_differentiable(treedef: TreeDef, found: list[Any]) -> bool:
    if treedef is LEAF:
        return is_differentiable_leaf(found[0])
    return any(not s and is_differentiable_leaf(leaf) for leaf, s in zip(found, treedef.static_leaves(), strict=True))


def leaf_view(arena: Any, value: Any, name: str, leaves: list[Interpreted], layouts: list[Any] | None = None) -> Any:
    """``value`` with each differentiable leaf made a leaf node of ``arena`` of its own,
    appended to ``leaves`` in order: a structure's view without the node holding the
    whole structure and the read nodes under it, for a transform that differentiates with
    respect to the leaves and rebuilds the gradient itself (a third of the nodes for a
    dict of arrays). Static entries and leaves holding no floats stay the plain values,
    as in :func:`view`.

    With ``layouts``, appends how ``value`` was taken apart, ``(leaves, treedef, chosen)``
    (``chosen`` flags the leaves made nodes), or ``None`` for a value that is one leaf:
    what the transform rebuilds the gradient by (see
    :func:`nodegrad.transforms.common.gradient_like`), without walking ``value`` again."""
    if type(value) is np.ndarray or type(value) in DIFFERENTIATING:  # the commonest case first: one array
        if layouts is not None:
            layouts.append(None)
        leaf = arena.param(value, name=name)
        leaves.append(leaf)
        return leaf
    paths: list[str] = []
    found, treedef = flatten(value, paths, name)
    if treedef is LEAF:
        if layouts is not None:
            layouts.append(None)
        leaf = arena.param(value, name=name)
        leaves.append(leaf)
        return leaf
    if not treedef.has_static and _float_arrays(found):
        # Float arrays only, the commonest argument: made leaves in one call.
        chosen = [True] * len(found)
        made = arena.array_params(found, paths)
        leaves.extend(made)
    else:
        statics = treedef.static_leaves() if treedef.has_static else _NONE_STATIC
        chosen = [
            not static and ((type(leaf) is np.ndarray and leaf.dtype.kind in "fc") or is_differentiable_leaf(leaf))
            for leaf, static in zip(found, statics)  # noqa: B905  (_NONE_STATIC repeats)
        ]
        made = []
        for leaf, path, take in zip(found, paths, chosen):  # noqa: B905
            if take:
                handle = arena.param(leaf, name=path)
                leaves.append(handle)
                made.append(handle)
            else:
                made.append(leaf)
    if layouts is not None:
        layouts.append((found, treedef, chosen))
    return treedef.unflatten(made)


_NONE_STATIC = itertools.repeat(False)  # no entry marked static: the commonest case


def _float_arrays(found: list[Any]) -> bool:
    """Whether every leaf is a float or complex array (a loop: no generator to set up)."""
    for leaf in found:  # noqa: SIM110
        if type(leaf) is not np.ndarray or leaf.dtype.kind not in "fc":
            return False
    return True


@guarded_structure
def pack(value: Any) -> Any:
    """Record a constructor node for a structure holding traced values, bottom-up.

    Returns the handle of the outermost node (plain values come back unchanged).
    Use it to make a record or dict built inside the graph a node of its own.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.ops.structured import pack, view
    >>> a = ng.Arena()
    >>> x = a.param(np.array([1.0, 2.0]))
    >>> d = pack({"double": x * 2.0, "label": "k"})
    >>> a[d.index].op, d.value["label"]
    ('make_map', 'k')
    >>> y = ng.sum(view(d)["double"])
    >>> a.backward(y, wrt=x)
    array([2., 2.])
    """
    found, treedef = flatten(value)
    if treedef is LEAF or not any(type(leaf) in DIFFERENTIATING for leaf in found):
        return value
    return _packed(treedef, iter(found))


def _packed(treedef: TreeDef, found: Any) -> Any:
    """The constructor node of the container ``treedef`` (its leaves from ``found``), or
    the plain container where none of its leaves is traced."""
    children = [next(found) if child is LEAF else _packed(child, found) for child in treedef.children]
    if not any(type(c) in DIFFERENTIATING for c in children):
        return treedef.build(children)
    return record(_MAKE_OPS[treedef.kind], treedef.template, *children)


def replace(value: Any, changes: dict[Hashable, Any] | None = None, /, **named: Any) -> Any:
    """A copy of a record or map with some entries replaced (``attrs.evolve`` /
    ``dataclasses.replace`` / ``{**d, k: v}``), built without running the class's
    validators or converters, so it works on traced records. Untouched entries keep
    their values, and so their gradient paths.

    Examples
    --------
    >>> import dataclasses
    >>> import nodegrad as ng
    >>> @dataclasses.dataclass
    ... class P:
    ...     w: float
    ...     b: float
    >>> ng.grad(lambda p: (lambda q: q.w * q.b)(ng.replace(p, w=p.w * 3.0)))(P(1.0, 2.0))
    P(w=6.0, b=3.0)
    """
    kind = container_kind(value)
    updates: dict[Hashable, Any] = dict(changes or {})
    updates.update(named)
    if kind is None or kind == "sequence":
        msg = f"replace: expected a record or a map, got {type(value).__name__} [called at {user_location()}]"
        raise StructureError(msg)
    keys = flatten(value)[1].keys
    unknown = [k for k in updates if k not in keys]
    if unknown and kind == "record":
        msg = (
            f"replace: {type(value).__name__} has no field(s) {unknown}; fields are {keys} [called at "
            f"{user_location()}]"
        )
        raise StructureError(msg)
    if kind == "map":
        updated = copy.copy(value)  # keeps the dict subclass and, e.g., a default_factory
        updated.update(updates)
        return updated
    return rebuild(value, [updates[k] if k in updates else entry(value, k) for k in keys])


# Arena.param returns a structured parameter as its view; the engine reaches it through its socket.
PLUGINS.view = view
