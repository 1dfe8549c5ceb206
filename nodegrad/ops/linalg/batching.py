"""How the linear algebra ops run inside ``vmap``.

Almost every forward here (numpy's and scipy's) already takes stacks of matrices, so a
batching rule only has to make the examples one more leading stack axis
(:func:`stacked`): operands repeated where they are not batched, and given size-1 axes so
that the stack axes of every operand line up. The VJP rules are written for stacks too:
run on batched values (a ``grad`` inside ``vmap``) they take the examples as a stack as
well (:func:`on_stacks`), so that what they test in the values (repeated eigenvalues, a
singular factor) is read in plain arrays. The engine's ``all_values`` and ``plain_map``
give the plain values of every example, for the checks and plain data (signs, pivots) of
the public functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nodegrad.engine.batched import BatchLevel
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, PER_EXAMPLE
from nodegrad.engine.record import record
from nodegrad.engine.registry import Op
from nodegrad.ops.batching import example_ndim, examples_batched, examples_stacked, newest_level, to_batched

__all__ = ["batched_in", "on_stacks", "per_example_rule", "stacked"]

_PLAIN_ARRAYS = (np.ndarray, np.generic)


def batched_in(*args: Any) -> bool:
    """Whether any of ``args`` is a batched value (a rule run inside ``vmap``)."""
    return any(type(a) in PER_EXAMPLE for a in args)


def _batched(out: Any, level: BatchLevel) -> Any:
    """A rule's result on stacks (``None``, an array or a tuple of them) as one example's."""
    if out is None:
        return None
    if type(out) is tuple:
        return tuple(_batched(o, level) for o in out)
    return examples_batched(out, level)


def on_stacks(rule: Callable[..., Any], *args: Any) -> Any:
    """``rule(*args)`` of a VJP rule written for stacks of matrices, where some of ``args``
    are batched: the examples of the innermost level become a leading stack axis (arrays not
    batched there repeated), level by level, and the results are batched again. The rule
    then reads plain values where it tests them, as it does for any stack. A value traced by
    a transform inside the level (forward mode's cotangent) is stacked and batched again in
    that transform's arena (:func:`~nodegrad.ops.batching.examples_stacked`)."""
    level = newest_level(args)
    if level is None:
        return rule(*args)
    found = [
        examples_stacked(a, level) if isinstance(a, _PLAIN_ARRAYS) or type(a) in INTERPRETED else a for a in args
    ]  # else an option
    return _batched(on_stacks(rule, *found), level)


def per_example_rule(rule: Callable[..., Any], *args: Any) -> Any:
    """``rule(*args)`` once per example of the innermost level of ``args``, the results
    stacked: for a VJP rule that takes one operand, not a stack (``roots``)."""
    level = newest_level(args)
    if level is None:
        return rule(*args)
    # Traced ones too: a value traced inside the level must cross it (its cotangent is one per
    # example), and one traced outside it gets the same in every example.
    holding = [type(a) in PER_EXAMPLE or type(a) in DIFFERENTIATING for a in args]
    stacks = [examples_stacked(a, level) if held else a for a, held in zip(args, holding, strict=True)]
    results = []
    for b in range(level.size):
        example = [s[b] if held else s for s, held in zip(stacks, holding, strict=True)]
        results.append(per_example_rule(rule, *example))
    first = results[0] if results else None
    if first is None:
        return None
    if type(first) is tuple:
        return tuple(_batched(np.stack([r[k] for r in results]), level) for k in range(len(first)))
    return _batched(np.stack(results), level)


def stacked(cores: Mapping[int, int], vector: int | None = None) -> Callable[..., Any]:
    """The batching rule of an op whose forward takes stacks (the leading axes) of its
    operands at the positions of ``cores``, each with that many core axes (2 for a
    matrix, 0 for a number per matrix such as a tolerance), their stacks broadcast against
    each other. The examples become one more leading stack axis: an operand with core
    axes is repeated where it is not batched; batched operands get size-1 axes after the
    examples' so that the stack axes of all line up. ``vector`` is the position of an
    operand that is a vector where it is 1-D (``solve``'s ``b``): such a one is made a
    column, and the result's last axis dropped again."""

    def rule(op: Op, batched: tuple[bool, ...], size: int, *args: Any) -> Any:
        found = list(args)
        column = vector is not None and example_ndim(args[vector], batched[vector]) == 1
        core = dict(cores)
        if column:
            found[vector] = np.expand_dims(found[vector], -1)  # type: ignore[index]
        present = [k for k in core if found[k] is not None and (batched[k] or core[k] > 0)]
        for k in present:
            if not batched[k]:
                found[k] = to_batched(found[k], False, size)
        depth = max(np.ndim(found[k]) - 1 - core[k] for k in present)
        for k in present:
            missing = depth - (np.ndim(found[k]) - 1 - core[k])
            if missing > 0:
                found[k] = np.expand_dims(found[k], tuple(range(1, 1 + missing)))
        out = record(op, *found)
        return out[..., 0] if column else out

    return rule


#: The rule of an op of one matrix (or stack of them) followed by options.
ONE_MATRIX = stacked({0: 2})
