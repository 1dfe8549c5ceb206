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
from collections.abc import Hashable
from typing import Any

import numpy as np

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import defop, same_rule_for_all
from nodegrad.engine.structure import StructCotangent, format_key, handler_for, has_differentiable_leaf
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import StructureError, user_location

__all__ = ["leaf_view", "map_lookup", "pack", "replace", "seq_index", "struct_field", "view"]

_F = "structured"


def _read(parent: Any, index: int, total: int, key: Hashable) -> Any:
    # A Python float field stays a Python float: weakly typed, as numpy treats Python
    # scalars, so a float32 array it meets stays float32.
    return handler_for(parent).get(parent, key)  # type: ignore[union-attr]


def _read_rule(g: Any, ans: Any, parent: Any, index: int, total: int, key: Hashable) -> StructCotangent:
    return StructCotangent(total, {index: g})


def _defread(name: str, doc: str) -> Any:
    return defop(name, _read, _read_rule, None, None, None, family=_F, doc=doc)


STRUCT_FIELD = _defread("struct_field", "one field of a record node; the other fields get symbolic zeros")
MAP_LOOKUP = _defread("map_lookup", "one entry of a map node, keys in insertion order; the rest get symbolic zeros")
SEQ_INDEX = _defread("seq_index", "one item of a list or tuple node; the rest get symbolic zeros")
_READ_OPS = {"record": STRUCT_FIELD, "map": MAP_LOOKUP, "sequence": SEQ_INDEX}


def _build(template: Any, *children: Any) -> Any:
    return handler_for(template).build(template, list(children))  # type: ignore[union-attr]


def _build_rule(k: int, g: Any, ans: Any, template: Any, *children: Any) -> Any:
    # Position 0 is the template; element k sits in slot k - 1. A missing slot is a zero.
    return g.slots.get(k - 1)


MAKE_RECORD = defop(
    "make_record", _build, same_rule_for_all(_build_rule), family=_F, doc="a record node from field nodes"
)
MAKE_MAP = defop("make_map", _build, same_rule_for_all(_build_rule), family=_F, doc="a map node from entry nodes")
MAKE_SEQUENCE = defop(
    "make_sequence", _build, same_rule_for_all(_build_rule), family=_F, doc="a list or tuple node from item nodes"
)
_MAKE_OPS = {"record": MAKE_RECORD, "map": MAKE_MAP, "sequence": MAKE_SEQUENCE}


def _read_entry(parent: Traced, kind: str, expected_kind: str | None, index: int, total: int) -> Traced:
    if type(parent) is not Traced:
        msg = (
            f"{kind}: needs the handle of a structured node (from nodegrad.pack), got {type(parent).__name__} "
            f"[called at {user_location()}]"
        )
        raise StructureError(msg)
    value = unwrap(parent.value)
    handler = handler_for(value)
    path = parent.arena._paths.get(parent.index, "")
    if handler is None or (expected_kind is not None and handler.kind != expected_kind):
        msg = (
            f"{kind}: node {parent.index}{' ' + path if path else ''} holds a {type(value).__name__}, not a "
            f"{expected_kind} [called at {user_location()}]"
        )
        raise StructureError(msg)
    keys = handler.keys(value)
    if total != len(keys) or not 0 <= index < total:
        msg = (
            f"{kind}: entry {index} of {total} requested, but {path or 'the value'} has {len(keys)} entries [called "
            f"at {user_location()}]"
        )
        raise StructureError(msg)
    return _read_node(parent, handler.kind, index, total, keys[index], path)


def _read_node(parent: Traced, kind: str, index: int, total: int, key: Hashable, path: str) -> Traced:
    handle: Traced = record1(_READ_OPS[kind], parent, index, total, key)
    handle.arena._paths[handle.index] = path + format_key(kind, key)
    return handle


def struct_field(parent: Traced, field_index: int, total_fields: int) -> Traced:
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


def map_lookup(map_node: Traced, key_index: int, total_keys: int) -> Traced:
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


def seq_index(seq_node: Traced, index: int, total: int) -> Traced:
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


def _refuse_pandas(value: Any, path: str) -> None:
    """A pandas Series or DataFrame of floats inside a differentiated structure would
    otherwise be static, silently: its gradient would be None however it is used. (One
    of strings or integers is static, as an array of them is.)"""
    module = type(value).__module__
    if not (module == "pandas" or module.startswith("pandas.")) or not hasattr(value, "dtypes"):
        return
    dtypes = value.dtypes
    kinds = (
        [getattr(dtypes, "kind", "")] if not hasattr(dtypes, "__iter__") else [getattr(d, "kind", "") for d in dtypes]
    )
    if any(kind in ("f", "c") for kind in kinds):
        msg = (
            f"{path} is a pandas {type(value).__name__}: pandas objects inside a differentiated structure are not "
            f"differentiable leaves; pass its .to_numpy() (and rebuild a Series from the gradient with the index) "
            f"[called at {user_location()}]"
        )
        raise StructureError(msg)


def view(node: Traced) -> Any:
    """The traced view of a node: the node itself for an array, else an instance of the
    value's own container type whose differentiable leaves are traced read nodes.

    Entries that are static (marked so, or holding no floats) are the plain values. The
    structure is read under every level of handles (a node of a nested transform holds
    its enclosing transform's handle of the structure).
    """
    value = unwrap(node.value)
    handler = handler_for(value)
    if handler is None:
        return node
    path = node.arena._paths.get(node.index, "")
    keys = handler.keys(value)
    total = len(keys)
    mask = handler.static_mask(value)
    children = []
    for i, key in enumerate(keys):
        child = handler.get(value, key)
        if mask[i]:
            children.append(child)
        elif not has_differentiable_leaf(child):
            _refuse_pandas(child, path + format_key(handler.kind, key))
            children.append(child)
        else:
            children.append(view(_read_node(node, handler.kind, i, total, key, path)))
    return handler.build(value, children)


def leaf_view(arena: Any, value: Any, name: str, leaves: list[Traced]) -> Any:
    """``value`` with each differentiable leaf made a leaf node of ``arena`` of its own,
    appended to ``leaves`` in order: a structure's view without the node holding the
    whole structure and the read nodes under it, for a transform that differentiates with
    respect to the leaves and rebuilds the gradient itself (a third of the nodes for a
    dict of arrays). Static entries and entries holding no floats stay the plain values,
    as in :func:`view`."""
    handler = handler_for(value) if type(value) is not Traced else None
    if handler is None:
        leaf = arena.param(value, name=name)
        leaves.append(leaf)
        return leaf
    keys = handler.keys(value)
    mask = handler.static_mask(value)
    children = []
    for i, key in enumerate(keys):
        child = handler.get(value, key)
        path = name + format_key(handler.kind, key)
        if mask[i]:
            children.append(child)
        elif type(child) is np.ndarray and child.dtype.kind in "fc":  # the common case
            leaf = arena.param(child, name=path)
            leaves.append(leaf)
            children.append(leaf)
        elif not has_differentiable_leaf(child):
            _refuse_pandas(child, path)
            children.append(child)
        else:
            children.append(leaf_view(arena, child, path, leaves))
    return handler.build(value, children)


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
    handler = handler_for(value)
    if handler is None:
        return value
    children = [pack(c) for c in handler.children(value)]
    if not any(type(c) is Traced for c in children):
        return value
    return record(_MAKE_OPS[handler.kind], value, *children)


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
    handler = handler_for(value)
    updates: dict[Hashable, Any] = dict(changes or {})
    updates.update(named)
    if handler is None or handler.kind == "sequence":
        msg = f"replace: expected a record or a map, got {type(value).__name__} [called at {user_location()}]"
        raise StructureError(msg)
    keys = handler.keys(value)
    unknown = [k for k in updates if k not in keys]
    if unknown and handler.kind == "record":
        msg = (
            f"replace: {type(value).__name__} has no field(s) {unknown}; fields are {keys} [called at "
            f"{user_location()}]"
        )
        raise StructureError(msg)
    if handler.kind == "map":
        updated = copy.copy(value)  # keeps the dict subclass and, e.g., a default_factory
        updated.update(updates)
        return updated
    return handler.build(value, [updates.get(k, handler.get(value, k)) for k in keys])


# Arena.param returns a structured parameter as its view; the engine reaches it through its socket.
PLUGINS.view = view
