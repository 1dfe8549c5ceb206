"""Running a function once per example of a batch level, where it cannot see batched values.

A function from another library (inside a :class:`nodegrad.extend.primitive`), a user's
``custom_vjp`` under enclosing transforms, or a function that reads its arguments' values
to decide what to compute (``np.median`` sorts, ``np.interp`` searches, a distribution
masks its support) runs once per example here: :func:`per_example_call` takes each
example's part of every argument, calls the function, and stacks the results, batched
again; :func:`per_example_where_read` is what a function that met a batched value's
refusal to give one value (see :func:`nodegrad.engine.batched.read_level`) does instead,
registered with the recording path's :data:`~nodegrad.engine.record.RERUNS` for every
guarded public function, and called by :mod:`nodegrad.numpy_api` for numpy's.

Values traced by a transform inside the level (``vmap(grad(f))``) hold every example: the
ops :data:`EXAMPLE` and :data:`STACK_EXAMPLES` take one out and put them back as nodes of
that transform's arena, so the loop keeps their gradients, of any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import Batched, BatchingError, BatchLevel, read_level
from nodegrad.engine.guards import RERUNS
from nodegrad.engine.levels import find_top, inside
from nodegrad.engine.record import record
from nodegrad.engine.registry import MADE_OF_OPS, Op, same_rule_for_all
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.engine.traced import Traced
from nodegrad.errors import user_location
from nodegrad.ops.batching import check_same_shapes, innermost, to_batched

__all__ = ["EXAMPLE", "INTO_EXAMPLE", "STACK_EXAMPLES", "per_example_call", "per_example_where_read"]


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
                f"{name} runs once per example inside {level.name} (it reads its arguments' values, or cannot see "
                f"batched ones), but a value "
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
    one's through :data:`EXAMPLE` (so its gradient reaches the batched value), else ``leaf``.
    A value traced inside the level is taken through :data:`EXAMPLE` even where its value is
    the same for every example (``vmap(grad(f), in_axes=(None, 0))``): its gradient is one
    per example, which each example's call must place at its own entry, not add to the
    others' (each example's call would otherwise give it the sum over all of them)."""
    if type(leaf) is Batched:
        return leaf.value[b] if leaf.level is mark.level else leaf
    if type(leaf) is Traced and (_traced_inside(leaf, mark.level) or _batched_at(leaf, mark.level)):
        return record(EXAMPLE, leaf, b, mark)
    return leaf


def _traced_inside(leaf: Traced, level: BatchLevel) -> bool:
    """Whether ``leaf`` is traced by a transform that began inside ``level`` (its outermost
    handle is the innermost transform's: the levels under it began earlier)."""
    return inside(leaf, level)


def _batched_at(leaf: Traced, level: BatchLevel) -> bool:
    return (below := _batched_below(leaf)) is not None and below.level is level


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
    if not results:
        check_same_shapes(name, results)  # vmap over no examples: refused, naming the function
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
    check_same_shapes(name, column)
    if any(type(v) is Traced and inside(v, mark.level) for v in column):
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
        if inside(x, mark.level):  # batched inside the level too: each of its examples holds them all
            return Batched(record(EXAMPLE, x.value, b, mark), x.level)
    return x  # the same for every example


def _into_example(g: Any, b: int, mark: Batched) -> Batched:
    level = mark.level
    if type(g) is Batched and inside(g, level):
        return Batched(record(INTO_EXAMPLE, g.value, b, mark), g.level)
    zero = np.zeros_like(g)
    return Batched(np.stack([g if k == b else zero for k in range(level.size)]), level)


def _stack_examples(mark: Batched, *examples: Any) -> Batched:
    level = mark.level
    top = find_top([e for e in examples if type(e) is Batched and inside(e, level)])
    if top is not None:  # batched inside the level too: stacked under that level's batch axis
        inner = top.level
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
    traits=frozenset({MADE_OF_OPS}),
)
INTO_EXAMPLE: Op = Op(
    "into_example",
    _into_example,
    (lambda g, ans, x, b, mark: record(EXAMPLE, g, b, mark), None, None),
    "batching",
    doc="one example's value placed in a batched value, zeros elsewhere",
    traits=frozenset({MADE_OF_OPS}),
)
STACK_EXAMPLES: Op = Op(
    "stack_examples",
    _stack_examples,
    same_rule_for_all(_stack_rule),
    "batching",
    doc="the examples of a value, batched",
    traits=frozenset({MADE_OF_OPS}),
)


def _is_array(value: Any) -> bool:
    # Python numbers too (a bool or an int, which np.stack of the loop's results stacks).
    return isinstance(value, np.ndarray | np.generic | float | complex | int) or type(value) is Traced


RERUNS[BatchingError] = per_example_where_read
