"""The batching interpreter: how an op runs on batched values (inside ``vmap``).

An op given a :class:`~nodegrad.engine.batched.Batched` value is handed here by the
recording path (:func:`nodegrad.engine.record.register_interpreter`). The innermost batch
level among its arguments runs it: each argument batched at that level gives its value,
every example stacked along axis 0, and the op's **batching rule**
``rule(op, batched, size, *args)`` computes the op for every example at once from those
values (``batched[k]`` says whether argument ``k`` is one; ``size`` is the number of
examples), returning one result with the examples along axis 0. Rules are written with
numpy functions and :func:`~nodegrad.engine.record.record`, so values batched by an
enclosing level, or traced by an enclosing transform, go on to their own interpreter or
arena: levels nest to any depth.

Most ops need one of the rules here: :func:`elementwise` (align the examples' axes and
broadcast), :func:`reduction` (an ``axis`` moved past the batch axis), :func:`along_axis`.
An op without a rule runs once per example (:func:`per_example`, exact, listed in the
docs). Functions that give plain values (masks, indices, shapes) are batched here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.batched import Batched, BatchingError, BatchLevel
from nodegrad.engine.levels import INTERPRETED, find_top, inside
from nodegrad.engine.record import append_node, record, register_interpreter
from nodegrad.engine.registry import BATCH_RULES, ELEMENTWISE, MADE_OF_OPS, RULE_TRAITS, Op
from nodegrad.engine.traced import DEFERS_TO, Traced, unwrap
from nodegrad.errors import ShapeError, user_location
from nodegrad.ops.arguments import axis_index

__all__ = [
    "BatchRule",
    "along_axis",
    "check_same_shapes",
    "elementwise",
    "example_ndim",
    "examples_batched",
    "examples_stacked",
    "innermost",
    "interpret",
    "made_of_ops",
    "newest_level",
    "per_example",
    "reduction",
    "rule_of",
    "shift_axis",
    "to_batched",
]

#: A batching rule: ``rule(op, batched, size, *args) -> result`` (examples along axis 0).
BatchRule = Callable[..., Any]


# -- the interpreter --------------------------------------------------------------------------


_BATCHED_VALUES = frozenset({Batched})


def innermost(args: Sequence[Any]) -> BatchLevel | None:
    """The innermost batch level among ``args`` (and inside tuple or list arguments)."""
    found = find_top(args, _BATCHED_VALUES, alive_for="an op")  # a leaked one, even of an outer level, is refused
    if found is None:
        return None
    level: BatchLevel = found.level
    return level


def interpret(op: Op, args: tuple[Any, ...]) -> Any:
    """Run ``op`` on ``args``, some batched: at the innermost level, by the op's batching
    rule, or once per example where it has none. Returns the result batched at that level."""
    level = innermost(args)
    assert level is not None
    if MADE_OF_OPS in op.traits:
        return op.forward(*args)  # its ops, run on the batched values themselves, batch it
    values: list[Any] = []
    batched: list[bool] = []
    for a in args:
        if type(a) is Batched and a.level is level:
            values.append(a.value)
            batched.append(True)
        elif (type(a) is tuple or type(a) is list) and any(type(i) is Batched and i.level is level for i in a):
            values.append(a)  # an index or a list of operands holding batched values: the rule reads them
            batched.append(True)
        else:
            values.append(_base_array(a))
            batched.append(False)
    rule = rule_of(op)
    if rule is None:
        out = per_example(op, tuple(batched), level.size, *values, level=level)
    else:
        out = rule(op, tuple(batched), level.size, *values)
    return wrap(out, level)


def rule_of(op: Op) -> BatchRule | None:
    """The batching rule of ``op`` (:data:`~nodegrad.engine.registry.BATCH_RULES`, or the
    rule of its trait), or ``None``: it runs once per example."""
    rule = BATCH_RULES.get(op.name)
    if rule is None and ELEMENTWISE in op.traits:
        return elementwise
    return rule


def wrap(out: Any, level: BatchLevel) -> Any:
    """The result of an op run for every example, as batched values of ``level``."""
    if type(out) is tuple:
        return tuple(Batched(_base_array(o), level) for o in out)
    return Batched(_base_array(out), level)


def _base_array(value: Any) -> Any:
    # An ndarray subclass (vmap's view of a shared table, nodegrad.engine.shared) is
    # computed with, and batched, as the plain array it views: its class stays outside.
    return value.view(np.ndarray) if isinstance(value, np.ndarray) and type(value) is not np.ndarray else value


def per_example(op: Op, batched: tuple[bool, ...], size: int, *args: Any, level: BatchLevel | None = None) -> Any:
    """The exact batching of any op: run it once per example and stack the results (the
    fallback for an op with no rule of its own)."""
    results = [record(op, *_example_args(args, batched, b, level)) for b in range(size)]
    return _stacked(op.name, results)


def _example_args(args: Sequence[Any], batched: Sequence[bool], b: int, level: BatchLevel | None) -> list[Any]:
    """Example ``b`` of each argument: batched values taken at ``b`` (inside tuples and
    lists too, those of ``level`` alone when given), the others as they are."""
    found = []
    for a, is_batched in zip(args, batched, strict=True):
        if not is_batched:
            found.append(a)
        elif type(a) is tuple or type(a) is list:
            found.append(type(a)(_at(item, b, level) for item in a))
        else:
            found.append(a[b])
    return found


def _at(item: Any, b: int, level: BatchLevel | None) -> Any:
    if type(item) is Batched and (level is None or item.level is level):
        return item.value[b]
    return item


def _stacked(name: str, results: list[Any]) -> Any:
    if results and type(results[0]) is tuple:
        return tuple(_stacked(name, [r[k] for r in results]) for k in range(len(results[0])))
    check_same_shapes(name, results)
    return np.stack(results)


def check_same_shapes(name: str, results: list[Any]) -> None:
    """Refuse the results of one call per example that differ in shape (or are none),
    naming the function that gave them."""
    shapes = {np.shape(r) for r in results}
    if len(shapes) > 1:
        msg = (
            f"{name}: under vmap the examples give results of different shapes "
            f"({', '.join(map(str, sorted(shapes)))}): "
            f"a value-dependent shape cannot be batched [at {user_location()}]"
        )
        raise ShapeError(msg)
    if not results:
        msg = f"{name}: vmap over zero examples cannot tell the shape of a result computed once per example"
        raise ShapeError(msg)


# -- helpers for rules ------------------------------------------------------------------------


def example_ndim(value: Any, is_batched: bool) -> int:
    """The number of dimensions one example of ``value`` has."""
    ndim = value.ndim if type(value) is np.ndarray else np.ndim(value)  # the commonest first
    return ndim - 1 if is_batched else ndim


def shift_axis(op_name: str, axis: Any, ndim: int) -> Any:
    """An example's ``axis`` (an int, a tuple of them or ``None`` for all) as an axis of
    the batched value, whose axis 0 holds the examples: every axis one further on. Checked
    against the example's ``ndim`` (:func:`~nodegrad.ops.arguments.axis_index`): an axis
    out of range raises where numpy would, rather than reaching the batch axis."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple | list):
        return tuple(axis_index(op_name, a, ndim, "an example") + 1 for a in axis)
    return axis_index(op_name, axis, ndim, "an example") + 1


def to_batched(value: Any, is_batched: bool, size: int) -> Any:
    """``value`` with the examples along axis 0: as it is when batched, else repeated
    (a broadcast view, no copy of a plain array)."""
    if is_batched:
        return value
    return np.broadcast_to(value, (size, *np.shape(value)))


# -- crossing a level: code written for stacks, run on values a newer transform traces ------------
# A rule written for stacks of plain values (see nodegrad.ops.linalg.batching.on_stacks) runs
# on the stacked examples of a level; an argument traced by a transform that began inside that
# level (forward mode's cotangent, under ``vmap(jvp)``) holds the level's values *under* its
# handle, and the result must too, or that transform's sweep never sees it. These two ops move
# a value across the level inside every such transform's arena, each the other's transpose: in
# the stack form every example reads only its own block, so a cotangent of the stack is the
# stack of the examples' cotangents.


def newest_level(args: Sequence[Any]) -> BatchLevel | None:
    """The innermost batch level among ``args`` at any depth (under traced handles and other
    batch levels too, and inside tuple or list arguments)."""
    found = []
    for a in args:
        for item in a if type(a) is tuple or type(a) is list else (a,):
            while type(item) is Traced or type(item) is Batched:
                if type(item) is Batched:
                    found.append(item)
                item = item.value
    top = find_top(found)
    return None if top is None else top.level


def _inside(x: Any, level: BatchLevel) -> bool:
    """Whether ``x`` is a handle of a transform (an arena, a batch level) that began inside
    ``level``."""
    return (type(x) is Traced or type(x) is Batched) and inside(x, level)


def examples_stacked(x: Any, level: BatchLevel, axis: int = 0) -> Any:
    """``x``, a value of one example of ``level``, as the stack of every example's along
    ``axis``: recorded in each arena that began inside the level, so that it
    differentiates, and batched by each level that did."""
    if _inside(x, level):
        inner = examples_stacked(x.value, level, axis + (type(x) is Batched))
        if type(x) is Batched:
            return Batched(inner, x.level)
        return append_node(x.arena, _STACKED, (x.index,), (0,), (x.value, level, axis), inner)
    if type(x) is Batched and x.level is level:
        return x.value if axis == 0 else np.moveaxis(x.value, 0, axis)
    shape = np.shape(x)
    return np.broadcast_to(np.expand_dims(x, axis), (*shape[:axis], level.size, *shape[axis:]))


def examples_batched(x: Any, level: BatchLevel, axis: int = 0) -> Any:
    """A stack of every example's value of ``level`` along ``axis``, as the value of one
    example: the inverse of :func:`examples_stacked`."""
    if _inside(x, level):
        inner = examples_batched(x.value, level, axis + (type(x) is Batched))
        if type(x) is Batched:
            return Batched(inner, x.level)
        return append_node(x.arena, _BATCHED, (x.index,), (0,), (x.value, level, axis), inner)
    if type(x) is Batched and x.level is level:  # a stack that differs by example: each takes its own block
        return Batched(np.moveaxis(np.diagonal(x.value, 0, 0, axis + 1), -1, 0), level)
    return Batched(x if axis == 0 else np.moveaxis(x, axis, 0), level)


_STACKED = Op(
    "examples_stacked",
    examples_stacked,
    (lambda g, ans, x, level, axis: examples_batched(g, level, axis), None, None),
    "batching",
    doc="a value of one example of a vmap, as the stack of every example's",
)
_BATCHED = Op(
    "examples_batched",
    examples_batched,
    (lambda g, ans, x, level, axis: examples_stacked(g, level, axis), None, None),
    "batching",
    doc="a stack of every example's value of a vmap, as one example's",
)


_PLAIN_OPERANDS = (np.ndarray, np.generic, float, int, complex, bool)


def aligned(batched: Sequence[bool], args: Sequence[Any]) -> list[Any]:
    """``args`` of an op that broadcasts its operands, the batched ones given size-1 axes
    after the batch axis so that every example's axes line up with the unbatched ones."""
    ndims = [
        example_ndim(a, k) if isinstance(a, _PLAIN_OPERANDS) or type(a) in INTERPRETED else -1
        for a, k in zip(args, batched, strict=True)
    ]
    ndim = max(ndims, default=0)
    if all(n == ndim for n, k in zip(ndims, batched, strict=True) if k):
        return list(args)  # every batched operand's examples have the most axes: nothing to line up
    found = []
    for a, is_batched, n in zip(args, batched, ndims, strict=True):
        missing = ndim - n if is_batched else 0
        found.append(np.expand_dims(a, tuple(range(1, 1 + missing))) if missing > 0 else a)
    return found


# -- the common rules -------------------------------------------------------------------------


def elementwise(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
    """The rule of an op applied entry by entry with numpy broadcasting: the examples'
    axes aligned, the op runs once on every example."""
    return record(op, *aligned(batched, args))


def reduction(op: Op, batched: tuple[bool, ...], size: int, x: Any, axis: Any, *rest: Any) -> Any:
    """The rule of an op ``f(x, axis, ...)`` that works along ``axis`` (``None``: all)."""
    return record(op, x, shift_axis(op.name, axis, np.ndim(x) - 1), *rest)


def along_axis(position: int, data: Sequence[int] = (0,)) -> BatchRule:
    """The rule of an op whose argument ``position`` is an axis (``None``: all) of its data
    arguments ``data`` (batched ones as they are, unbatched ones repeated for every example)."""

    def rule(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
        found = list(args)
        ndim = example_ndim(args[data[0]], batched[data[0]])
        for k in data:
            found[k] = to_batched(args[k], batched[k], size)
        found[position] = shift_axis(op.name, args[position], ndim)
        return record(op, *found)

    return rule


def made_of_ops(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
    """The rule of an op whose forward is made of other ops (a user's ``custom_vjp``, say):
    the interpreter runs the forward on the batched values as they are, so each op inside
    is batched by its own rule, and whatever the forward keeps for the backward pass (its
    residuals) is batched too. Running such an op once per example would keep only the
    last example's residuals."""
    msg = f"{op.name}: made_of_ops is run by the interpreter itself"
    raise AssertionError(msg)


RULE_TRAITS[elementwise] = ELEMENTWISE  # an op given these rules has their trait
RULE_TRAITS[made_of_ops] = MADE_OF_OPS


def loop(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
    """The rule of an op batched by running once per example, on purpose (listed in the
    docs with the others that have no rule of their own)."""
    return per_example(op, batched, size, *args)


# -- plain values of batched values: masks, indices, shapes -----------------------------------

#: numpy functions that read only an example's shape and dtype: one answer for all.
_EXAMPLE_FUNCTIONS = {
    np.shape,
    np.ndim,
    np.size,
    np.result_type,
    np.iscomplexobj,
    np.isrealobj,
    np.zeros_like,
    np.ones_like,
    np.empty_like,
}
#: numpy functions of plain values that work entry by entry with broadcasting.
_ELEMENTWISE_VALUES = {np.isfinite, np.isinf, np.isnan, np.iscomplex, np.isreal, np.around, np.round, np.isclose}
#: numpy functions of plain values along an ``axis`` keyword (or second argument).
_AXIS_VALUES = {np.argmax, np.argmin, np.argsort, np.count_nonzero}


def _examples(value: Any) -> Any:
    """A stand-in of one example of ``value`` (its shape and dtype), inside lists too."""
    if type(value) is Batched:
        return value.like_example()
    if type(value) is tuple or type(value) is list:
        return type(value)(_examples(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """``value`` without its traced levels (a plain value carries no gradient)."""
    return unwrap(value)


def _untraced(values: Any) -> Any:
    """``values`` (a tuple of arguments) with every traced level taken off, inside tuple
    and list arguments too. A function of plain values reads no gradient, and a traced
    value may hold a batched one: ``mask > w`` where ``w`` is differentiated inside vmap
    must see ``w``'s examples as batched, not as one value to compare every example with."""
    return tuple(type(v)(unwrap(i) for i in v) if type(v) is tuple or type(v) is list else unwrap(v) for v in values)


def value_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A numpy function of batched values that gives plain values (a mask, an index, a
    shape), batched: one answer for all where it reads only shapes, else one per example."""
    args = _untraced(args)
    kwargs = dict(zip(kwargs, _untraced(tuple(kwargs.values())), strict=True))
    if func in _EXAMPLE_FUNCTIONS:
        return func(*_examples(args), **{k: _examples(v) for k, v in kwargs.items()})
    level = innermost((*args, *kwargs.values()))
    assert level is not None
    if func in _ELEMENTWISE_VALUES:
        return _elementwise_values(func, level, args, kwargs)
    if func in _AXIS_VALUES and len(args) == 1 and type(args[0]) is Batched and args[0].level is level:
        axis, x = kwargs.get("axis"), args[0]
        if axis is not None and x.ndim > 0:  # (numpy reads a 0-d array's axis 0 its own way: once per example)
            moved = shift_axis(f"np.{func.__name__}", axis, x.ndim)
            return Batched(func(_plain(x.value), **{**kwargs, "axis": moved}), level)
    return _values_per_example(func, level, args, kwargs)


def _holds_level(a: Any, level: BatchLevel) -> bool:
    """Whether ``a`` is batched at ``level``, or is a tuple or list holding such a value."""
    if type(a) is Batched:
        return a.level is level
    return (type(a) is tuple or type(a) is list) and any(type(i) is Batched and i.level is level for i in a)


def value_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc that gives plain values (a comparison, ``np.sign``), of batched values."""
    inputs = _untraced(inputs)
    level = innermost(inputs)
    assert level is not None
    if method == "__call__":
        return _elementwise_values(ufunc, level, inputs, kwargs)
    if method == "at":
        # In place, into one array: every example would write into the same one.
        msg = (
            f"np.{ufunc.__name__}.at of batched values writes in place into one array, which every example "
            f"would share: use ng.at(x)[index].add(v) (or a segment sum), which gives each example its own "
            f"[at {user_location()}]"
        )
        raise BatchingError(msg)
    return _values_per_example(getattr(ufunc, method), level, inputs, kwargs)


def _elementwise_values(func: Any, level: BatchLevel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    batched = [type(a) is Batched and a.level is level for a in args]
    values = [_plain(a.value) if k else a for a, k in zip(args, batched, strict=True)]
    return Batched(func(*aligned(batched, values), **kwargs), level)


def _values_per_example(func: Any, level: BatchLevel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    names = list(kwargs)
    flat = (*args, *kwargs.values())
    batched = [_holds_level(a, level) for a in flat]
    plain = [_plain(a.value) if type(a) is Batched and a.level is level else a for a in flat]
    results = []
    for b in range(level.size):
        example = _example_args(plain, batched, b, level)
        results.append(func(*example[: len(args)], **dict(zip(names, example[len(args) :], strict=True))))
    name = f"np.{getattr(func, '__name__', repr(func))}"
    if results and isinstance(results[0], tuple):
        # np.nonzero's index arrays, say: stacked position by position, where the examples
        # have as many entries (np.stack of the loop's results would refuse them otherwise).
        parts = [Batched(_stacked(name, [r[k] for r in results]), level) for k in range(len(results[0]))]
        return type(results[0])(*parts) if hasattr(results[0], "_fields") else tuple(parts)
    return Batched(_stacked(name, results), level)


_MIRRORED: dict[Any, str] = {
    np.less: "__gt__", np.less_equal: "__ge__", np.greater: "__lt__", np.greater_equal: "__le__",
    np.equal: "__eq__", np.not_equal: "__ne__", np.bitwise_and: "__rand__", np.bitwise_or: "__ror__",
    np.bitwise_xor: "__rxor__",
}  # fmt: skip


def comparison(ufunc: np.ufunc) -> Callable[[Any, Any], Any]:
    """A comparison operator of a batched value (a batched mask)."""
    mirrored = _MIRRORED[ufunc]

    def compare(self: Any, other: Any) -> Any:
        if type(other) in DEFERS_TO:  # a table's column answers, keeping its labels
            return getattr(DEFERS_TO[type(other)](other), mirrored)(self)
        return value_ufunc(ufunc, "__call__", (self, other), {})

    return compare


register_interpreter(Batched, interpret)
