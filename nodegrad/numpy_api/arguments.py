"""numpy's own arguments as a traced call receives them.

numpy's functions take arguments nodegrad cannot honour on traced values (``out=``,
``dtype=``, ...): :func:`no_extras` refuses them by name rather than ignoring them.
:func:`read_keepdims` reads a ``keepdims`` numpy may leave as ``np._NoValue``, and
:func:`forward_values` gives the plain values a call with no gradient runs on.

Where numpy takes an array-like, a Python list or tuple may hold traced values
(``np.sum([x * 2, x ** 2])``): :func:`array_likes` turns each such argument into one traced
array (:func:`traced_array`), reading from the function's signature which of its
parameters are array-likes and which are sequences of them (``np.concatenate``'s
``arrays``), so every function receives what it would receive from numpy.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, NodegradError, NoGradientError, ShapeError, user_location

__all__ = [
    "array_likes",
    "as_operand",
    "forward_values",
    "has_sequence",
    "holds_traced",
    "no_extras",
    "public_name",
    "read_keepdims",
    "refusal",
    "traced_array",
]


def refusal(name: str, what: str, kind: type[NodegradError] = ShapeError) -> NodegradError:
    """The error to raise for ``np.{name}``: ``kind`` saying ``what``, at the caller's line."""
    return kind(f"np.{name}: {what} [called at {user_location()}]")


def as_operand(a: Any) -> Any:
    """A traced (or batched) value as it is; anything else (lists, scalars) as numpy reads it."""
    return a if type(a) in INTERPRETED else np.asarray(a)


def no_extras(name: str, **extras: Any) -> None:
    """Refuse, naming ``np.{name}``, the arguments of ``extras`` that were given."""
    for value in extras.values():
        if value is not None and value is not np._NoValue:
            break
    else:
        return  # the common case: none given
    given = sorted(k for k, v in extras.items() if v is not None and v is not np._NoValue)
    if given:
        msg = f"np.{name}: the argument(s) {given} are not supported on traced values [called at {user_location()}]"
        raise NoGradientError(msg)


def read_keepdims(value: Any) -> bool:
    """numpy's keepdims argument, which may be left as np._NoValue."""
    return False if value is np._NoValue else bool(value)


def forward_values(args: Any) -> Any:
    """``args`` with traced values (also inside lists and tuples) replaced by their values."""
    if isinstance(args, (list, tuple)):
        return type(args)(forward_values(a) for a in args)
    if isinstance(args, dict):
        return {k: forward_values(v) for k, v in args.items()}
    return unwrap(args)


def holds_traced(obj: Any) -> bool:
    """Whether ``obj`` is a traced (or batched) value or a list or tuple (nested or not)
    holding one."""
    kind = type(obj)
    if kind in INTERPRETED:
        return True
    if kind is list or kind is tuple:
        for item in obj:  # a loop, not any(...): this runs on shapes and axes of every call
            kind = type(item)
            if kind in INTERPRETED or ((kind is list or kind is tuple) and holds_traced(item)):
                return True
    return False


def traced_array(obj: Any, where: str) -> Any:
    """``obj``, a list or tuple (nested or not) holding traced values and plain ones, as one
    traced array: its entries stacked, in the dtype numpy would give ``np.array`` of their
    values. A ragged sequence is a :class:`~nodegrad.errors.ShapeError` naming ``where``."""
    value = _stacked(obj, where)
    dtype = np.result_type(*(_dtype_of(leaf) for leaf in _leaves(obj))) if obj else value.dtype
    if dtype.kind not in "biufc":
        msg = (
            f"{where}: a sequence holding traced values must hold numbers only, got dtype {dtype} "
            f"[called at {user_location()}]"
        )
        raise DtypeError(msg)
    return value if value.dtype == dtype else ops.astype(value, dtype)


def _dtype_of(leaf: Any) -> np.dtype[Any]:
    leaf = unwrap(leaf)
    return leaf.dtype if type(leaf) in INTERPRETED else np.asarray(leaf).dtype


def _leaves(obj: Any) -> Iterable[Any]:
    for item in obj:
        if type(item) is list or type(item) is tuple:
            yield from _leaves(item)
        else:
            yield item


def _stacked(obj: Any, where: str) -> Any:
    if not (type(obj) is list or type(obj) is tuple) or not holds_traced(obj):
        return obj if type(obj) in INTERPRETED else np.asarray(obj)
    parts = [_stacked(item, where) for item in obj]
    shapes = {np.shape(unwrap(part)) for part in parts}
    if len(shapes) > 1:
        msg = (
            f"{where}: the entries of a nested sequence holding traced values have different shapes "
            f"{sorted(shapes)} (a ragged list) [called at {user_location()}]"
        )
        raise ShapeError(msg)
    return ops.stack(parts, 0)


# How numpy reads an argument, by the name of its parameter: most are array-likes, a few
# sequences of array-likes; the arguments of a callable parameter go to that callable as
# they are, and np.block's nested lists are its layout (numpy finds the traced blocks).
_ARRAY, _SEQUENCE, _AS_IS = "array", "sequence", "as is"
_SEQUENCES = frozenset({"arrays", "tup", "condlist", "choicelist", "choices"})
_CALLABLES = frozenset({"func", "func1d", "funclist"})
_OWN_LAYOUT = frozenset({"block"})


@functools.cache
def _parameter_kinds(func: Callable[..., Any]) -> tuple[tuple[str, ...], str, dict[str, str]]:
    """How ``func`` reads its positional arguments, its ``*args`` and its keywords."""
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # no signature to read: every argument an array-like
        return (), _ARRAY, {}
    if getattr(func, "__name__", "") in _OWN_LAYOUT:
        return tuple(_AS_IS for _ in parameters), _AS_IS, {}
    takes_callable = any(p.name in _CALLABLES for p in parameters)

    def kind(p: inspect.Parameter) -> str:
        if p.name in _CALLABLES or p.kind is p.VAR_KEYWORD:
            return _AS_IS
        if p.kind is p.VAR_POSITIONAL:
            return _AS_IS if takes_callable else _ARRAY
        return _SEQUENCE if p.name in _SEQUENCES else _ARRAY

    positional = tuple(kind(p) for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    rest = next((kind(p) for p in parameters if p.kind is p.VAR_POSITIONAL), _AS_IS)
    keywords = {p.name: kind(p) for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return positional, rest, keywords


def public_name(func: Any) -> str:
    """``np.linalg.norm``: how messages name a numpy function."""
    return f"{getattr(func, '__module__', 'numpy').replace('numpy', 'np', 1)}.{func.__name__}"


def _converted(value: Any, kind: str, func: Any) -> Any:
    """``value``, a list or tuple holding traced values, read as ``kind``."""
    if kind is _AS_IS:
        return value
    if kind is _ARRAY:
        return traced_array(value, public_name(func))
    if _SEQUENCE_TYPES.isdisjoint(map(type, value)):
        return value  # a sequence of arrays and traced values (np.concatenate([x, y])): as it is
    items = [
        _converted(item, _ARRAY, func) if holds_traced(item) and type(item) not in INTERPRETED else item
        for item in value
    ]
    return type(value)(items)


_SEQUENCE_TYPES = frozenset({list, tuple})


def has_sequence(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a call's arguments include a list or a tuple: the cheap test (about 0.1 µs)
    that every dispatched call passes through, so a plain loop."""
    for value in args:
        if type(value) in _SEQUENCE_TYPES:
            return True
    if kwargs:
        for value in kwargs.values():
            if type(value) in _SEQUENCE_TYPES:
                return True
    return False


def array_likes(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` of a call of the numpy function ``func``, each list or tuple that
    holds traced values where ``func`` takes an array-like made one traced array (see
    :func:`traced_array`). Arguments with nothing to convert are returned as they are."""
    new_args: list[Any] | None = None
    for k, a in enumerate(args):
        if (type(a) is list or type(a) is tuple) and holds_traced(a):
            positional, rest, _ = _parameter_kinds(func)
            converted = _converted(a, positional[k] if k < len(positional) else rest, func)
            if converted is not a:
                new_args = new_args or list(args)
                new_args[k] = converted
    new_kwargs: dict[str, Any] | None = None
    for name, v in kwargs.items():
        if (type(v) is list or type(v) is tuple) and holds_traced(v):
            converted = _converted(v, _parameter_kinds(func)[2].get(name, _AS_IS), func)
            if converted is not v:
                new_kwargs = new_kwargs or dict(kwargs)
                new_kwargs[name] = converted
    return (args if new_args is None else tuple(new_args)), (kwargs if new_kwargs is None else new_kwargs)
