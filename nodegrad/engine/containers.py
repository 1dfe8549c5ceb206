"""What a container is: records, maps and sequences, and how each is taken apart one
level and rebuilt.

Supported with no registration: attrs classes, dataclasses and named tuples (records:
entries are fields, keyed by name), ``dict`` (maps: any hashable keys, insertion order
kept, mixed key types fine) and ``list`` / ``tuple`` (sequences). Other classes opt in
with :func:`register_container`.

A leaf is differentiable when it is a floating-point or complex array, numpy scalar of
those kinds, or Python ``float`` or ``complex``. Everything else -- ints, bools, strings, ``None``, integer and boolean
arrays, arbitrary objects, and fields marked ``static`` -- is *static*: it passes through
untouched and its slot in a gradient is ``None``.

Key paths name a place inside a value the way Python code would reach it:
``.params['w'][0]``.

This module says what a container is, one level at a time (:func:`handler_for`); the walk
through a whole value, to any depth, is :mod:`nodegrad.engine.structure`'s alone.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, overload

import attrs
import numpy as np

from nodegrad.engine.plugins import PLUGINS

__all__ = [
    "ARRAY_TYPES",
    "STATIC",
    "Handler",
    "dataclass_field",
    "field",
    "format_key",
    "handler_for",
    "is_differentiable_leaf",
    "register_container",
]

#: Field metadata marking a field static: ``attrs.field(metadata=STATIC)`` or
#: ``dataclasses.field(metadata=STATIC)``; :func:`field` and :func:`dataclass_field` add it.
STATIC = {"nodegrad.static": True}


T = TypeVar("T")


@overload
def field(*, static: bool = ..., default: None = ..., factory: None = ..., **kwargs: Any) -> Any: ...
@overload
def field(*, static: bool = ..., default: T, **kwargs: Any) -> T: ...
@overload
def field(*, static: bool = ..., factory: Callable[[], T], **kwargs: Any) -> T: ...
def field(*, static: bool = False, **kwargs: Any) -> Any:
    """An ``attrs.field`` that can be marked static (never differentiated).

    Parameters
    ----------
    static : bool, default False
        When true, the field passes through untouched and its gradient slot is ``None``,
        even if it holds floats.
    **kwargs
        Passed on to ``attrs.field``.

    Notes
    -----
    A type checker sees ``default`` and ``factory`` as ``attrs.field`` has them (a
    default of the wrong type is an error), but mypy's attrs plugin recognises only
    ``attrs.field`` and ``attr.ib`` themselves, not a function that calls them: to it an
    attribute assigned ``field(static=True)`` has a default, so it neither requires that
    attribute in ``__init__`` nor reports a mandatory attribute after one with a default
    (attrs refuses that class when it is made). Where that matters, write
    ``attrs.field(metadata=nodegrad.STATIC)``: the same static field, seen by the plugin.

    Examples
    --------
    >>> import attrs, numpy as np
    >>> import nodegrad as ng
    >>> @attrs.frozen
    ... class Scaled:
    ...     w: np.ndarray
    ...     scale: float = ng.field(static=True, default=2.0)
    >>> ng.grad(lambda p: ng.sum(p.w * p.scale))(Scaled(np.ones(2)))
    Scaled(w=array([2., 2.]), scale=None)
    """
    if static:
        kwargs["metadata"] = {**kwargs.get("metadata", {}), **STATIC}
    return attrs.field(**kwargs)


@overload
def dataclass_field(*, static: bool = ..., default: None = ..., default_factory: None = ..., **kwargs: Any) -> Any: ...
@overload
def dataclass_field(*, static: bool = ..., default: T, **kwargs: Any) -> T: ...
@overload
def dataclass_field(*, static: bool = ..., default_factory: Callable[[], T], **kwargs: Any) -> T: ...
def dataclass_field(*, static: bool = False, **kwargs: Any) -> Any:
    """A ``dataclasses.field`` that can be marked static; see :func:`field`.

    As with :func:`field`, mypy's dataclasses plugin does not see through this function:
    ``dataclasses.field(metadata=nodegrad.STATIC)`` is the same field, seen by it.

    Examples
    --------
    >>> import dataclasses
    >>> import nodegrad as ng
    >>> @dataclasses.dataclass
    ... class Layer:
    ...     w: float
    ...     name: str = ng.dataclass_field(static=True, default="dense")
    >>> ng.grad(lambda p: p.w * 3.0)(Layer(1.0))
    Layer(w=3.0, name=None)
    """
    if static:
        kwargs["metadata"] = {**kwargs.get("metadata", {}), **STATIC}
    return dataclasses.field(**kwargs)


#: The types beside numpy's that stand for an array (a leaf with a dtype, differentiable
#: where it is float or complex): each interpreter's values and the row-sparse gradient
#: register their types here as they are defined, so the tree library imports none of them.
ARRAY_TYPES: set[type] = set()


def is_differentiable_leaf(value: Any) -> bool:
    """Whether a leaf of a structure gets a gradient: a float or complex array, numpy scalar
    or Python number, or a traced value standing for one.

    Every other leaf is static: ints, bools, strings, ``None``, integer and boolean arrays
    pass through a transform unchanged and get ``None`` as their gradient. Use it to pick
    the leaves a loss should touch when walking a structure with
    :func:`nodegrad.tree.tree_leaves_with_path`.

    Parameters
    ----------
    value : object
        One leaf (not a record, dict, list or tuple).

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.is_differentiable_leaf(np.ones(3)), ng.is_differentiable_leaf(1.5), ng.is_differentiable_leaf(2j)
    (True, True, True)
    >>> ng.is_differentiable_leaf(np.arange(3)), ng.is_differentiable_leaf(3), ng.is_differentiable_leaf("w")
    (False, False, False)
    >>> tree = {"w": np.ones(2), "steps": 10, "name": "head"}
    >>> [path for path, leaf in ng.tree.tree_leaves_with_path(tree) if ng.is_differentiable_leaf(leaf)]
    ["['w']"]
    """
    if isinstance(value, np.ndarray | np.inexact) or type(value) in ARRAY_TYPES:
        return value.dtype.kind in "fc"
    return isinstance(value, float | complex)


class Handler:
    """How one container type is taken apart into entries and rebuilt from them."""

    def __init__(
        self,
        kind: str,
        keys: Callable[[Any], list[Hashable]],
        get: Callable[[Any, Hashable], Any],
        build: Callable[[Any, list[Any]], Any],
        static: Callable[[Any], list[bool]] | None = None,
        entries: Callable[[Any], tuple[list[Hashable], list[Any]]] | None = None,
    ) -> None:
        self.kind = kind
        self.keys = keys
        self.get = get
        self.build = build
        self._static = static
        self._entries = entries
        #: Classes whose handlers share a family stand for each other where a structure is
        #: matched (a pandas DataFrame and the Frame it is inside a function); None: none.
        self.family: str | None = None
        #: What a rebuilt copy takes from the template besides the entries (a pandas
        #: object's index), as a hashable key: part of a replay's signature. None: nothing.
        self.meta: Callable[[Any], Hashable] | None = None

    def static_mask(self, value: Any, count: int | None = None) -> list[bool]:
        """Which entries are marked static by the class itself (``count``: how many
        entries ``value`` has, when the caller knows)."""
        if self._static:
            return self._static(value)
        return [False] * (len(self.keys(value)) if count is None else count)

    def entries(self, value: Any) -> tuple[list[Hashable], list[Any]]:
        """The keys and the entries of ``value``, in order, in one call (the walker's read)."""
        if self._entries is not None:
            return self._entries(value)
        keys = self.keys(value)
        return keys, [self.get(value, k) for k in keys]


def format_key(kind: str, key: Hashable) -> str:
    """One step of a key path: ``.name`` for a record field, ``[key]`` otherwise."""
    return f".{key}" if kind == "record" else f"[{key!r}]"


# -- the built-in containers ---------------------------------------------------------------


def _build_instance(template: Any, children: list[Any], names: list[Hashable]) -> Any:
    # Gradients and traced views are instances of the user's class built without running
    # its __init__, validators or converters: those are written for data, not cotangents.
    instance = object.__new__(type(template))
    for name, child in zip(names, children, strict=True):
        object.__setattr__(instance, str(name), child)
    return instance


def _get_field(value: Any, name: Hashable) -> Any:
    return getattr(value, str(name))


def _fields_handler(fields: Any) -> Handler:
    """The handler of an attrs class or a dataclass, from its field definitions."""
    names: list[Hashable] = [f.name for f in fields]
    fetch = operator.attrgetter(*(str(n) for n in names)) if names else None  # every field in one call
    mask = [bool(f.metadata.get("nodegrad.static")) for f in fields]
    return Handler(
        "record",
        lambda v: names,
        _get_field,
        lambda t, c: _build_instance(t, c, names),
        lambda v: mask,
        lambda v: (names, list(fetch(v)) if len(names) > 1 else [fetch(v)] if names else []),  # type: ignore[misc]
    )


def _namedtuple_handler(cls: type) -> Handler:
    names: list[Hashable] = list(cls._fields)  # type: ignore[attr-defined]
    return Handler(
        "record", lambda v: names, _get_field, lambda t, c: type(t)._make(c), None, lambda v: (names, list(v))
    )


def _build_dict(template: dict[Any, Any], children: list[Any]) -> dict[Any, Any]:
    pairs = zip(template.keys(), children, strict=True)
    if type(template) is dict:
        return dict(pairs)
    # A subclass is rebuilt without calling its constructor, which may take other arguments
    # (or, as Counter's update does, count rather than store): a copy keeps its type, its
    # attributes and settings such as a default_factory, and dict's own methods refill it.
    rebuilt = copy.copy(template)
    dict.clear(rebuilt)
    dict.update(rebuilt, pairs)
    return rebuilt


def _build_sequence(template: Any, children: list[Any]) -> Any:
    if type(template) is list:
        return list(children)
    if type(template) is tuple:
        return tuple(children)
    if isinstance(template, list):  # a subclass: refilled as _build_dict refills a dict's
        rebuilt = copy.copy(template)
        list.clear(rebuilt)
        list.extend(rebuilt, children)
        return rebuilt
    rebuilt = tuple.__new__(type(template), children)  # a tuple subclass (not a named tuple)
    if hasattr(template, "__dict__"):
        rebuilt.__dict__.update(template.__dict__)
    return rebuilt


def _dict_entries(value: dict[Any, Any]) -> tuple[list[Hashable], list[Any]]:
    if type(value) is dict:
        return list(value), list(value.values())
    keys = list(value.keys())  # a subclass may read its entries its own way
    return keys, [value[k] for k in keys]


_DICT = Handler("map", lambda v: list(v.keys()), lambda v, k: v[k], _build_dict, None, _dict_entries)
_SEQUENCE = Handler(
    "sequence",
    lambda v: list(range(len(v))),
    lambda v, k: v[k],
    _build_sequence,
    None,
    lambda v: (list(range(len(v))), [v[k] for k in range(len(v))]),
)

_REGISTERED: dict[type, Handler] = {}
_CACHE: dict[type, Handler | None] = {}
#: The types handler_for has found to be leaves: a container whose entries' types are all
#: here is one level of leaves, which the walker tells at C speed.
_LEAF_TYPES: set[type] = set()


def register_container(
    cls: type,
    flatten: Callable[[Any], tuple[list[Hashable], list[Any]]],
    unflatten: Callable[[Any, list[Any]], Any],
) -> None:
    """Opt a container class in as a record.

    Parameters
    ----------
    cls : type
        The class.
    flatten : callable
        ``flatten(obj) -> (names, children)``: entry names (used in key paths) and
        values, in a fixed order.
    unflatten : callable
        ``unflatten(template, children) -> obj``: a new instance like ``template`` holding
        ``children`` (which may be gradients or traced values).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> ng.register_container(Pair, lambda p: (["a", "b"], [p.a, p.b]), lambda t, c: Pair(*c))
    >>> g = ng.grad(lambda p: p.a * p.b)(Pair(2.0, 5.0))
    >>> g.a, g.b
    (5.0, 2.0)
    """

    def keys(value: Any) -> list[Hashable]:
        return flatten(value)[0]

    def get(value: Any, key: Hashable) -> Any:
        names, children = flatten(value)
        return children[names.index(key)]

    def entries(value: Any) -> tuple[list[Hashable], list[Any]]:
        names, children = flatten(value)
        return list(names), list(children)

    _REGISTERED[cls] = Handler("record", keys, get, unflatten, None, entries)
    _CACHE.pop(cls, None)
    _LEAF_TYPES.discard(cls)


def register_handler(cls: type, handler: Handler) -> None:
    """Take ``cls`` apart with ``handler`` (how a layer above gives a class of its own a
    kind other than a record: a table is a map of columns)."""
    _REGISTERED[cls] = handler
    _CACHE.pop(cls, None)
    _LEAF_TYPES.discard(cls)


def handler_for(value: Any) -> Handler | None:
    """The handler of ``value``'s container type, or ``None`` for a leaf."""
    cls = type(value)
    try:
        return _CACHE[cls]
    except KeyError:
        pass
    handler: Handler | None
    library = cls.__module__.partition(".")[0]
    if cls in _REGISTERED:
        handler = _REGISTERED[cls]
    elif library in PLUGINS.library_containers:  # a table of pandas, say: its layer knows it
        handler = PLUGINS.library_containers[library](cls)
    elif attrs.has(cls):
        handler = _fields_handler(attrs.fields(cls))
    elif dataclasses.is_dataclass(cls):
        handler = _fields_handler(dataclasses.fields(cls))
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        handler = _namedtuple_handler(cls)
    elif issubclass(cls, dict):
        handler = _DICT
    elif issubclass(cls, list | tuple):
        handler = _SEQUENCE
    else:
        handler = None
    _CACHE[cls] = handler
    if handler is None:
        _LEAF_TYPES.add(cls)
    return handler
