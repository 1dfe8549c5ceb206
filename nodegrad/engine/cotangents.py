"""Cotangents of structured values: the sweep's sparse form, and the user's structures.

A structured node's cotangent is a :class:`StructCotangent`, a cotangent per entry slot
where a missing slot is a symbolic zero. :func:`cotangent_for` makes one from a seed in
the output's own structure; :func:`materialize` turns one back into a gradient in the
input's structure. Both walk the value's :class:`~nodegrad.engine.structure.TreeDef`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np

from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.structure import Tree, TreeDef, flatten, is_differentiable_leaf, zip_leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, StructureError

__all__ = ["Cotangent", "StructCotangent", "check_seed_dtype", "cotangent_for", "materialize"]


#: What flows back through the sweep: an array (or number) shaped like the value it is the
#: cotangent of, a :class:`StructCotangent` for a structured value, a traced value when the
#: sweep is itself differentiated, or ``None`` for a symbolic zero.
Cotangent: TypeAlias = Any


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


def materialize(
    cotangent: Cotangent,
    value: Tree,
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
    found, treedef = flatten(value)
    grads: list[Any] = []
    _leaf_cotangents(treedef, cotangent, grads)
    if treedef.handler is None:
        return _finished(grads[0], value, path, missing, zero_missing, finish)
    out = []
    for p, leaf, g, static in zip(treedef.paths(path), found, grads, treedef.static_leaves(), strict=True):
        out.append(None if static else _finished(g, leaf, p, missing, zero_missing, finish))
    return treedef.unflatten(out, static_as_none=True)


def _leaf_cotangents(treedef: TreeDef, cotangent: Any, grads: list[Any]) -> None:
    """Each leaf's share of ``cotangent`` (``None`` where no slot holds one), in order."""
    if treedef.handler is None:
        grads.append(cotangent)
        return
    slots = cotangent.slots if isinstance(cotangent, StructCotangent) else {}
    for i, child in enumerate(treedef.children):
        _leaf_cotangents(child, slots.get(i), grads)


def _finished(
    g: Any, leaf: Any, path: str, missing: list[str], zero_missing: bool, finish: Callable[[Any, Any], Any]
) -> Any:
    if not is_differentiable_leaf(leaf):
        return None
    if g is None:
        missing.append(path)
        g = np.zeros_like(leaf) if zero_missing else None
    else:
        g = finish(g, leaf)
    if g is None or type(g) in INTERPRETED or not isinstance(leaf, float | complex | np.inexact):
        return g  # an interpreted cotangent (forward mode, a recorded sweep, a Jacobian's batch) stays so
    if type(leaf) is not leaf.__class__:
        return g  # a stand-in (replay's) for a number: its cotangent stays recorded
    return type(leaf)(g)


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


def cotangent_for(seed: Tree, value: Tree, path: str) -> Cotangent:
    """Turn a user's seed shaped like a structured ``value`` into a :class:`StructCotangent`."""
    found, treedef = flatten(value)
    seeds: list[Any] = []
    for _, part, other in zip_leaves(value, seed, path):  # validates the whole structure first
        # ``None`` may stand for a whole subtree of the seed: none of its leaves has one.
        seeds.extend([other] if other is not None else [None] * len(flatten(part)[0]))
    leaf_cotangents = [
        _leaf_cotangent(s, leaf, p) for s, leaf, p in zip(seeds, found, treedef.paths(path), strict=True)
    ]
    return _gathered(treedef, iter(leaf_cotangents))


def _leaf_cotangent(seed: Any, value: Any, path: str) -> Any:
    if seed is None or not is_differentiable_leaf(value):
        return None
    # A traced seed (a recorded sweep, differentiated again) stays traced, a batched one batched.
    handle = type(seed) in INTERPRETED
    seed_array = seed if handle else np.asarray(seed)
    if seed_array.shape != np.shape(value):
        msg = f"the seed at {path or 'the top level'} has shape {seed_array.shape}, the output has {np.shape(value)}"
        raise StructureError(msg)
    dtype = np.result_type(unwrap(value))
    check_seed_dtype(seed_array.dtype, dtype, path)
    if handle:
        return seed_array if seed_array.dtype == dtype else seed_array.astype(dtype)
    return np.array(seed_array, dtype=dtype)  # a copy the sweep owns, as for an array seed


def _gathered(treedef: TreeDef, leaf_cotangents: Any) -> Any:
    """The sweep's form of the leaves' cotangents: a StructCotangent per container, its
    empty slots left out."""
    if treedef.handler is None:
        return next(leaf_cotangents)
    slots = {}
    for i, child in enumerate(treedef.children):
        part = _gathered(child, leaf_cotangents)
        if part is not None:
            slots[i] = part
    return StructCotangent(len(treedef.keys), slots)
