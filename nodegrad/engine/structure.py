"""Structured values: records, maps and sequences, taken apart and rebuilt.

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
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar, overload

import attrs
import numpy as np

from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import DtypeError, StructureError

__all__ = [
    "STATIC",
    "StructCotangent",
    "check_seed_dtype",
    "dataclass_field",
    "differentiable_leaves",
    "field",
    "flatten_with_paths",
    "format_key",
    "handler_for",
    "integer_leaves",
    "is_differentiable_leaf",
    "leaves",
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
    if isinstance(value, np.ndarray | np.inexact) or type(value) is Traced:
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
    ) -> None:
        self.kind = kind
        self.keys = keys
        self.get = get
        self.build = build
        self._static = static

    def static_mask(self, value: Any) -> list[bool]:
        """Which entries are marked static by the class itself."""
        return self._static(value) if self._static else [False] * len(self.keys(value))

    def children(self, value: Any) -> list[Any]:
        return [self.get(value, k) for k in self.keys(value)]


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
    mask = [bool(f.metadata.get("nodegrad.static")) for f in fields]
    return Handler(
        "record",
        lambda v: names,
        _get_field,
        lambda t, c: _build_instance(t, c, names),
        lambda v: mask,
    )


def _namedtuple_handler(cls: type) -> Handler:
    names: list[Hashable] = list(cls._fields)  # type: ignore[attr-defined]
    return Handler("record", lambda v: names, _get_field, lambda t, c: type(t)._make(c))


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


_DICT = Handler("map", lambda v: list(v.keys()), lambda v, k: v[k], _build_dict)
_SEQUENCE = Handler("sequence", lambda v: list(range(len(v))), lambda v, k: v[k], _build_sequence)

_REGISTERED: dict[type, Handler] = {}
_CACHE: dict[type, Handler | None] = {}


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

    _REGISTERED[cls] = Handler("record", keys, get, unflatten)
    _CACHE.pop(cls, None)


def handler_for(value: Any) -> Handler | None:
    """The handler of ``value``'s container type, or ``None`` for a leaf."""
    cls = type(value)
    try:
        return _CACHE[cls]
    except KeyError:
        pass
    handler: Handler | None
    if cls in _REGISTERED:
        handler = _REGISTERED[cls]
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
    return handler


def has_differentiable_leaf(value: Any) -> bool:
    """True when some leaf of ``value`` (not marked static) is differentiable."""
    handler = handler_for(value)
    if handler is None:
        return is_differentiable_leaf(value)
    mask = handler.static_mask(value)
    return any(not s and has_differentiable_leaf(c) for s, c in zip(mask, handler.children(value), strict=True))


def flatten_with_paths(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(key_path, leaf)`` for every leaf of ``value``, static ones included.

    Examples
    --------
    >>> from nodegrad.engine.structure import flatten_with_paths
    >>> list(flatten_with_paths({"w": [1.0, 2.0], "name": "x"}))
    [("['w'][0]", 1.0), ("['w'][1]", 2.0), ("['name']", 'x')]
    """
    handler = handler_for(value)
    if handler is None:
        yield path, value
        return
    for key in handler.keys(value):
        yield from flatten_with_paths(handler.get(value, key), path + format_key(handler.kind, key))


def leaves(value: Any) -> Iterator[Any]:
    """Yield every leaf of ``value``, static ones included, without building key paths
    (for checks that need a path only when they fail: build it then).

    Examples
    --------
    >>> from nodegrad.engine.structure import leaves
    >>> list(leaves({"w": [1.0, 2.0], "name": "x"}))
    [1.0, 2.0, 'x']
    """
    handler = handler_for(value)
    if handler is None:
        yield value
        return
    for key in handler.keys(value):
        yield from leaves(handler.get(value, key))


def differentiable_leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(key_path, leaf)`` for the differentiable leaves of ``value`` only: float
    leaves that are not inside a field marked static.
    """
    handler = handler_for(value)
    if handler is None:
        if is_differentiable_leaf(value):
            yield path, value
        return
    for key, static in zip(handler.keys(value), handler.static_mask(value), strict=True):
        if not static:
            yield from differentiable_leaves(handler.get(value, key), path + format_key(handler.kind, key))


def integer_leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(key_path, leaf)`` for the integer numbers of ``value`` (Python ints and numpy
    integer scalars, not bools) outside fields marked static.

    Such a leaf is static, so it gets no gradient and no optimiser moves it; beside float
    leaves it is almost always a parameter written ``0`` for ``0.0``, which the strict
    gradient options and the optimisers name.

    Examples
    --------
    >>> from nodegrad.engine.structure import integer_leaves
    >>> list(integer_leaves({"w": 1.0, "b": 0, "on": True}))
    [("['b']", 0)]
    """
    handler = handler_for(value)
    if handler is None:
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            yield path, value
        return
    for key, static in zip(handler.keys(value), handler.static_mask(value), strict=True):
        if not static:
            yield from integer_leaves(handler.get(value, key), path + format_key(handler.kind, key))


class StructCotangent:
    """The cotangent of a structured node: a cotangent per entry slot, where a missing
    slot is a symbolic zero that costs nothing.

    Only the sweep creates and adds these; it owns every one it holds, so ``+`` merges
    the right operand into the left one in place instead of copying a 1,000-entry dict
    for each of 1,000 field reads.
    """

    __slots__ = ("slots", "total")

    def __init__(self, total: int, slots: dict[int, Any] | None = None) -> None:
        self.total = total
        self.slots: dict[int, Any] = {} if slots is None else slots

    def __add__(self, other: Any) -> StructCotangent:
        if not isinstance(other, StructCotangent) or other.total != self.total:
            msg = f"cannot add a structured cotangent of {self.total} entries and {other!r}"
            raise StructureError(msg)
        slots = self.slots
        for k, g in other.slots.items():
            prev = slots.get(k)
            slots[k] = g if prev is None else prev + g
        return self

    def copy(self) -> StructCotangent:
        """A deep copy of the slot structure (array cotangents are shared: never mutated)."""
        return StructCotangent(
            self.total, {k: g.copy() if isinstance(g, StructCotangent) else g for k, g in self.slots.items()}
        )

    def __repr__(self) -> str:
        return f"StructCotangent({len(self.slots)}/{self.total} slots)"


def map_with_paths(fn: Callable[[str, Any], Any], value: Any, path: str = "") -> Any:
    """Rebuild ``value`` with every leaf replaced by ``fn(key_path, leaf)``.

    Containers are rebuilt as their own type, without running validators.
    """
    handler = handler_for(value)
    if handler is None:
        return fn(path, value)
    return handler.build(
        value,
        [map_with_paths(fn, handler.get(value, k), path + format_key(handler.kind, k)) for k in handler.keys(value)],
    )


def map_unless_static(fn: Callable[[Any], Any], value: Any) -> Any:
    """Rebuild ``value`` with ``fn(leaf)`` at every leaf and ``None`` for fields marked static."""
    handler = handler_for(value)
    if handler is None:
        return fn(value)
    children = [
        None if static else map_unless_static(fn, handler.get(value, key))
        for key, static in zip(handler.keys(value), handler.static_mask(value), strict=True)
    ]
    return handler.build(value, children)


def _same_keys(kind: str, keys: list[Hashable], other: list[Hashable]) -> bool:
    # Maps pair entries by key, whatever their order ({'b', 'a'} against {'a', 'b'}).
    return other == keys or (kind == "map" and len(other) == len(keys) and set(other) == set(keys))


def zip_leaves(value: Any, other: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Walk two values of one structure together, yielding ``(key_path, leaf, other_leaf)``
    in ``value``'s order.

    ``other`` may hold ``None`` in place of a whole subtree; maps are paired by key.
    Raises a :class:`StructureError` naming the key path where they differ.
    """
    handler = handler_for(value)
    if handler is None or other is None:
        # ``None`` stands for a whole subtree with nothing in it (a static slot).
        yield path, value, other
        return
    other_handler = handler_for(other)
    keys = handler.keys(value)
    if (
        other_handler is None
        or type(other) is not type(value)
        or not _same_keys(handler.kind, keys, other_handler.keys(other))
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
    for key in keys:
        step = path + format_key(handler.kind, key)
        yield from zip_leaves(handler.get(value, key), other_handler.get(other, key), step)


def materialize(
    cotangent: Any,
    value: Any,
    path: str,
    missing: list[str],
    zero_missing: bool,
    finish: Callable[[Any, Any], Any] = lambda g, like: g,
) -> Any:
    """Turn a node's cotangent into a gradient shaped like its ``value``.

    Records come back as instances of their class, maps with the same keys in the same
    order, sequences as the same type, Python floats as floats. Static entries get
    ``None``; differentiable entries with no cotangent get zeros (``zero_missing``) or
    ``None``, and their key paths are appended to ``missing``. ``finish(g, leaf)``
    post-processes each array cotangent.
    """
    handler = handler_for(value)
    if handler is None:
        if not is_differentiable_leaf(value):
            return None
        if cotangent is None:
            missing.append(path)
            g = np.zeros_like(value) if zero_missing else None
        else:
            g = finish(cotangent, value)
        if g is None or type(g) is Traced or not isinstance(value, float | complex | np.inexact):
            return g  # a traced cotangent (forward mode, a recorded sweep) stays traced
        return type(value)(g)
    slots = cotangent.slots if isinstance(cotangent, StructCotangent) else {}
    mask = handler.static_mask(value)
    children = []
    for i, key in enumerate(handler.keys(value)):
        child = handler.get(value, key)
        step = path + format_key(handler.kind, key)
        children.append(None if mask[i] else materialize(slots.get(i), child, step, missing, zero_missing, finish))
    return handler.build(value, children)


def check_seed_dtype(seed_dtype: np.dtype[Any], dtype: np.dtype[Any], path: str) -> None:
    """A seed must be numeric, and complex only for a complex output: the imaginary part
    of a real output's cotangent would be cut off, and the answer silently wrong."""
    where = f" at {path}" if path else ""
    if seed_dtype.kind not in "biufc":
        msg = f"the seed{where} must be numeric, got dtype {seed_dtype}"
        raise DtypeError(msg)
    if seed_dtype.kind == "c" and dtype.kind != "c":
        msg = f"the seed{where} is complex ({seed_dtype}) but the output is real ({dtype}): pass a real seed"
        raise DtypeError(msg)


def cotangent_for(seed: Any, value: Any, path: str) -> Any:
    """Turn a user's seed shaped like a structured ``value`` into a :class:`StructCotangent`."""
    handler = handler_for(value)
    if handler is None:
        if seed is None or not is_differentiable_leaf(value):
            return None
        # A traced seed (a recorded sweep, differentiated again) stays traced.
        seed_array = seed if type(seed) is Traced else np.asarray(seed)
        if seed_array.shape != np.shape(value):
            msg = (
                f"the seed at {path or 'the top level'} has shape {seed_array.shape}, the output has {np.shape(value)}"
            )
            raise StructureError(msg)
        dtype = np.result_type(unwrap(value))
        check_seed_dtype(seed_array.dtype, dtype, path)
        if type(seed_array) is Traced:
            return seed_array if seed_array.dtype == dtype else seed_array.astype(dtype)
        return np.array(seed_array, dtype=dtype)  # a copy the sweep owns, as for an array seed
    list(zip_leaves(value, seed, path))  # validates the whole structure first
    slots = {}
    for i, key in enumerate(handler.keys(value)):
        part = cotangent_for(handler.get(seed, key), handler.get(value, key), path + format_key(handler.kind, key))
        if part is not None:
            slots[i] = part
    return StructCotangent(len(handler.keys(value)), slots)
