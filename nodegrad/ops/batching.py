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

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.batched import HANDLES, Batched, BatchingError, BatchLevel, read_level
from nodegrad.engine.record import RERUNS, record, register_interpreter
from nodegrad.engine.registry import Op, same_rule_for_all
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import LeakedTracerError, ShapeError, user_location

__all__ = [
    "BatchRule",
    "along_axis",
    "elementwise",
    "example_ndim",
    "innermost",
    "interpret",
    "made_of_ops",
    "per_example",
    "per_example_call",
    "per_example_where_read",
    "reduction",
    "shift_axis",
    "to_batched",
]

#: A batching rule: ``rule(op, batched, size, *args) -> result`` (examples along axis 0).
BatchRule = Callable[..., Any]


# -- the interpreter --------------------------------------------------------------------------


def innermost(args: Sequence[Any]) -> BatchLevel | None:
    """The innermost batch level among ``args`` (and inside tuple or list arguments)."""
    found: BatchLevel | None = None
    for a in args:
        items = a if type(a) is tuple or type(a) is list else (a,)
        for item in items:
            if type(item) is Batched:
                level = item.level
                if not level.active:
                    msg = (
                        f"a batched value of {level.name}, which has already returned, reached an op (a leaked "
                        f"batched value): return what you need from the function instead [at {user_location()}]"
                    )
                    raise LeakedTracerError(msg)
                if found is None or level.stamp > found.stamp:
                    found = level
    return found


def interpret(op: Op, args: tuple[Any, ...]) -> Any:
    """Run ``op`` on ``args``, some batched: at the innermost level, by the op's batching
    rule, or once per example where it has none. Returns the result batched at that level."""
    level = innermost(args)
    assert level is not None
    if op.batch is made_of_ops:
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
            values.append(a)
            batched.append(False)
    rule = op.batch
    if rule is None:
        out = per_example(op, tuple(batched), level.size, *values, level=level)
    else:
        out = rule(op, tuple(batched), level.size, *values)
    return wrap(out, level)


def wrap(out: Any, level: BatchLevel) -> Any:
    """The result of an op run for every example, as batched values of ``level``."""
    if type(out) is tuple:
        return tuple(Batched(o, level) for o in out)
    return Batched(out, level)


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
    _check_same_shapes(name, results)
    return np.stack(results)


def _check_same_shapes(name: str, results: list[Any]) -> None:
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


def shift_axis(axis: Any, ndim: int) -> Any:
    """An example's ``axis`` (an int, a tuple of them or ``None`` for all) as an axis of
    the batched value, whose axis 0 holds the examples: every axis one further on."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple | list):
        return tuple(operator.index(a) % max(ndim, 1) + 1 for a in axis)
    return operator.index(axis) % max(ndim, 1) + 1


def to_batched(value: Any, is_batched: bool, size: int) -> Any:
    """``value`` with the examples along axis 0: as it is when batched, else repeated
    (a broadcast view, no copy of a plain array)."""
    if is_batched:
        return value
    return np.broadcast_to(value, (size, *np.shape(value)))


_OPERANDS = (np.ndarray, np.generic, float, int, complex, bool, *HANDLES)


def aligned(batched: Sequence[bool], args: Sequence[Any]) -> list[Any]:
    """``args`` of an op that broadcasts its operands, the batched ones given size-1 axes
    after the batch axis so that every example's axes line up with the unbatched ones."""
    ndims = [example_ndim(a, k) if isinstance(a, _OPERANDS) else -1 for a, k in zip(args, batched, strict=True)]
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
    return record(op, x, shift_axis(axis, np.ndim(x) - 1), *rest)


def along_axis(position: int, data: Sequence[int] = (0,)) -> BatchRule:
    """The rule of an op whose argument ``position`` is an axis (``None``: all) of its data
    arguments ``data`` (batched ones as they are, unbatched ones repeated for every example)."""

    def rule(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
        found = list(args)
        ndim = example_ndim(args[data[0]], batched[data[0]])
        for k in data:
            found[k] = to_batched(args[k], batched[k], size)
        found[position] = shift_axis(args[position], ndim)
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


def value_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A numpy function of batched values that gives plain values (a mask, an index, a
    shape), batched: one answer for all where it reads only shapes, else one per example."""
    if func in _EXAMPLE_FUNCTIONS:
        return func(*_examples(args), **{k: _examples(v) for k, v in kwargs.items()})
    level = innermost((*args, *kwargs.values()))
    assert level is not None
    if func in _ELEMENTWISE_VALUES:
        return _elementwise_values(func, level, args, kwargs)
    if func in _AXIS_VALUES and len(args) == 1 and type(args[0]) is Batched:
        axis = kwargs.get("axis")
        if axis is not None:
            x = args[0]
            return Batched(func(_plain(x.value), **{**kwargs, "axis": shift_axis(axis, x.ndim)}), level)
    return _values_per_example(func, level, args, kwargs)


def per_example_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``func``, a function of one example that cannot see batched values (a library's,
    say), run once per example of the innermost level among ``args`` (at any key path) and
    its results (any structure) stacked and batched again. Each example is taken from its
    batched value with an op, so values traced by an enclosing transform stay traced, and
    so do values traced by a transform inside the level (``vmap(grad(f))``), through
    :data:`EXAMPLE` and :data:`STACK_EXAMPLES`, whose rules carry their gradients."""
    found, treedef = flatten((args, kwargs))
    level = _innermost_below(found)
    assert level is not None
    mark = _mark(level)
    name = _name_of(func)
    results = []
    for b in range(level.size):
        example_args, example_kwargs = treedef.unflatten([_example_of(leaf, b, mark) for leaf in found])
        try:
            results.append(func(*example_args, **example_kwargs))
        except BatchingError as exc:
            if read_level(exc) is not level:
                raise
            msg = (
                f"{name} runs once per example inside {level.name} (it reads its arguments' values), but a value "
                f"batched by the same vmap reached it another way (a closure of a function given to it, say), "
                f"which no example can take its own part of: pass that value as an argument [at {user_location()}]"
            )
            raise BatchingError(msg) from exc
    return _stacked_structures(name, results, mark)


def _name_of(func: Any) -> str:
    """How a user spells ``func``: ``np.median``, ``logpdf``."""
    name = getattr(func, "__name__", repr(func))
    numpy = isinstance(func, np.ufunc) or str(getattr(func, "__module__", "")).startswith("numpy")
    return f"np.{name}" if numpy else name


def _batched_below(leaf: Any) -> Batched | None:
    """The batched value at the top of ``leaf`` or under its traced levels, if any."""
    while type(leaf) is Traced:
        leaf = leaf.value
    return leaf if type(leaf) is Batched else None


def _innermost_below(found: list[Any]) -> BatchLevel | None:
    """The innermost batch level among ``found``, under traced levels too."""
    batched = [b for b in map(_batched_below, found) if b is not None]
    return innermost(batched) if batched else None


def _example_of(leaf: Any, b: int, mark: Batched) -> Any:
    """Example ``b`` of ``leaf`` at ``mark``'s level: a batched value's entry, a traced
    one's through :data:`EXAMPLE` (so its gradient reaches the batched value), else ``leaf``."""
    if type(leaf) is Batched:
        return leaf.value[b] if leaf.level is mark.level else leaf
    if type(leaf) is Traced and (below := _batched_below(leaf)) is not None and below.level is mark.level:
        return record(EXAMPLE, leaf, b, mark)
    return leaf


def per_example_where_read(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], exc: BatchingError) -> Any:
    """``func``, which raised ``exc`` reading the value of a batched argument (a plain array,
    a ``bool``, an index), run once per example of the innermost level among its arguments:
    the result the loop over examples gives, for a function that reads values (a numpy
    function written here, a public op, a distribution). ``exc`` is raised again where the
    value read is none of the arguments' (a closure's, say): no loop over them would help."""
    level = read_level(exc)
    found, _ = flatten((args, kwargs))
    if level is None or not any((below := _batched_below(leaf)) is not None and below.level is level for leaf in found):
        raise exc
    return per_example_call(func, args, kwargs)


def _stacked_structures(name: str, results: list[Any], mark: Batched) -> Any:
    """The results of one call per example, as one result whose array leaves are batched
    (other leaves as they are where every example has the same: a label, ``None``)."""
    parts, treedef = flatten(results[0])
    columns = zip(*(flatten(r)[0] for r in results), strict=True)
    made = [
        _stacked_column(name, list(column), mark) if _is_array(first) else _same_or_stacked(name, list(column), mark)
        for first, column in zip(parts, columns, strict=True)
    ]
    return made[0] if treedef is LEAF else treedef.unflatten(made)


def _same_or_stacked(name: str, column: list[Any], mark: Batched) -> Any:
    """A leaf that is no array (a string, ``None``), as it is where every example gives the
    same, else stacked as ``np.stack`` of the loop's results stacks it (text, say)."""
    first = column[0]
    if all(v is first or (type(v) is type(first) and _equal(v, first)) for v in column):
        return first
    try:
        stacked = np.stack(column)
    except (TypeError, ValueError):
        stacked = None
    if stacked is None or stacked.dtype == object:
        msg = (
            f"{name}: under vmap the examples give {type(first).__name__} results that differ, which cannot be "
            f"stacked into an array [at {user_location()}]"
        )
        raise BatchingError(msg)
    return Batched(stacked, mark.level)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an object whose == is no truth value: compared by identity above
        return False


def _stacked_column(name: str, column: list[Any], mark: Batched) -> Any:
    """One result leaf of every example, batched at ``mark``'s level: traced by a transform
    inside the level, through :data:`STACK_EXAMPLES` (a node of that transform's arena)."""
    _check_same_shapes(name, column)
    if any(type(v) is Traced and v.arena.stamp > mark.level.stamp for v in column):
        return record(STACK_EXAMPLES, mark, *column)
    return Batched(np.stack(column), mark.level)  # (a traced value here is one of an enclosing arena)


# -- examples of a value traced inside the level: vmap(grad(f)) of a function that reads values --
# A value traced by a transform inside the level holds every example (its value is batched):
# EXAMPLE takes one out as a node of that arena, STACK_EXAMPLES puts them back, and the rule
# of each is the other (INTO_EXAMPLE places one example's cotangent, zeros elsewhere), so
# gradients of any order flow through the loop over examples. Each is given the level as a
# batched value of it (a ``mark``), so the recording path orders it among the arenas as any
# batched op: recorded by arenas inside the level, run by the level's interpreter before any
# arena outside it (whose nodes then hold its plain ops, never a value batched by the level).
# They run on the batched values themselves (made_of_ops), and are not in the registry: no
# user calls them.


def _mark(level: BatchLevel) -> Batched:
    """A batched value of ``level`` that stands for it among an op's arguments."""
    return Batched(np.zeros(level.size, bool), level)


def _example(x: Any, b: int, mark: Batched) -> Any:
    if type(x) is Batched:
        if x.level is mark.level:
            return x.value[b]
        if x.level.stamp > mark.level.stamp:  # batched inside the level too: each of its examples holds them all
            return Batched(record(EXAMPLE, x.value, b, mark), x.level)
    return x  # the same for every example


def _into_example(g: Any, b: int, mark: Batched) -> Batched:
    level = mark.level
    if type(g) is Batched and g.level.stamp > level.stamp:
        return Batched(record(INTO_EXAMPLE, g.value, b, mark), g.level)
    zero = np.zeros_like(g)
    return Batched(np.stack([g if k == b else zero for k in range(level.size)]), level)


def _stack_examples(mark: Batched, *examples: Any) -> Batched:
    level = mark.level
    inside = [e.level for e in examples if type(e) is Batched and e.level.stamp > level.stamp]
    if inside:  # batched inside the level too: stacked under that level's batch axis
        inner = max(inside, key=lambda found: found.stamp)
        values = [to_batched(e.value if _is_at(e, inner) else e, _is_at(e, inner), inner.size) for e in examples]
        return Batched(record(STACK_EXAMPLES, mark, *values), inner)
    return Batched(np.stack(examples), level)


def _is_at(x: Any, level: BatchLevel) -> bool:
    return type(x) is Batched and x.level is level


def _stack_rule(k: int, g: Any, ans: Any, mark: Batched, *examples: Any) -> Any:
    return record(EXAMPLE, g, k - 1, mark)


EXAMPLE: Op = Op(
    "example",
    _example,
    (lambda g, ans, x, b, mark: record(INTO_EXAMPLE, g, b, mark), None, None),
    "batching",
    doc="one example of a value traced inside a batch level",
    batch=made_of_ops,
)
INTO_EXAMPLE: Op = Op(
    "into_example",
    _into_example,
    (lambda g, ans, x, b, mark: record(EXAMPLE, g, b, mark), None, None),
    "batching",
    doc="one example's value placed in a batched value, zeros elsewhere",
    batch=made_of_ops,
)
STACK_EXAMPLES: Op = Op(
    "stack_examples",
    _stack_examples,
    same_rule_for_all(_stack_rule),
    "batching",
    doc="the examples of a value, batched",
    batch=made_of_ops,
)


def _is_array(value: Any) -> bool:
    # Python numbers too (a bool or an int, which np.stack of the loop's results stacks).
    return isinstance(value, np.ndarray | np.generic | float | complex | int) or type(value) is Traced


def _holds_level(a: Any, level: BatchLevel) -> bool:
    """Whether ``a`` is batched at ``level``, or is a tuple or list holding such a value."""
    if type(a) is Batched:
        return a.level is level
    return (type(a) is tuple or type(a) is list) and any(type(i) is Batched and i.level is level for i in a)


def value_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc that gives plain values (a comparison, ``np.sign``), of batched values."""
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


def comparison(ufunc: np.ufunc) -> Callable[[Any, Any], Any]:
    """A comparison operator of a batched value (a batched mask)."""

    def compare(self: Any, other: Any) -> Any:
        return value_ufunc(ufunc, "__call__", (self, other), {})

    return compare


register_interpreter(Batched, interpret)
RERUNS[BatchingError] = per_example_where_read
