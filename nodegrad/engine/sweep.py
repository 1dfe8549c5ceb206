"""The reverse sweep: one iterative loop over the arena from the outputs down.

1. Mark every node that depends on a requested input (one forward pass over indices).
2. Walk indices from the highest output down to the lowest requested input. A node with
   no pending cotangent is skipped: it is not on a path to an output. Each marked parent
   of a visited node receives its cotangent from the op's VJP rule, accumulated with
   ``+`` so that fan-out sums; a cotangent is dropped as soon as its node is processed.
3. Cotangents of ops that broadcast are reduced to each input's shape and dtype in one
   place, :func:`fit_cotangent`.

Nodes that do not depend on any requested input never get a cotangent, and a rule may
return ``None`` for "zero" (a structured node's untouched entries): zeros are symbolic
and cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.cotangents import Cotangent, StructCotangent
from nodegrad.engine.rule_errors import reported
from nodegrad.errors import (
    rerun_reporting_warnings,
)

__all__ = ["fit_cotangent", "sweep", "unbroadcast"]


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` over the axes that broadcasting added or stretched, to get ``shape``."""
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if stretched:
        g = g.sum(axis=stretched, keepdims=True)
    return g


_FLOAT64, _COMPLEX128 = np.dtype(np.float64), np.dtype(np.complex128)


def fit_cotangent(g: Any, like: Any) -> Any:
    """Reduce a broadcast cotangent to the shape of ``like`` and cast it to its dtype
    (``like`` may be a Python number: a weakly typed leaf, whose cotangent is 64-bit).

    A complex cotangent reaching a real value keeps its real part: that is the transpose
    of a real number's inclusion in the complex numbers (``x`` met ``1j`` in an op).
    """
    if type(like) is float or type(like) is complex:
        g = unbroadcast(g, ()) if np.ndim(g) else g
        return _cast(g, _FLOAT64 if type(like) is float else _COMPLEX128)
    if g.shape != like.shape:
        g = unbroadcast(g, like.shape)
    if g.dtype != like.dtype:
        return _cast(g, like.dtype)
    return g


def _cast(g: Any, dtype: np.dtype[Any]) -> Any:
    """``g`` in ``dtype``: a complex ``g`` loses its imaginary part only for a real
    ``dtype``; a real ``g`` of a complex value is left as it is (the sum is complex)."""
    if dtype.kind == "f":
        if g.dtype.kind == "c":
            g = np.real(g)
        return g if g.dtype == dtype else g.astype(dtype)
    if dtype.kind == "c" and g.dtype.kind == "c" and g.dtype != dtype:
        return g.astype(dtype)
    return g


def _fits_in_place(total: Any, g: Any) -> bool:
    """True when ``total += g`` gives what ``total + g`` would: same shape and dtype, and the
    same memory layout, since ``total + g`` lays its result out after both operands (a
    transposed total plus a C-ordered cotangent comes out C-ordered). A rule that reads the
    sum (a product's, through BLAS or einsum) may round differently on another layout, and a
    recorded sweep, which never adds in place, must compute bit for bit as this one does."""
    return (
        type(total) is np.ndarray
        and type(g) is np.ndarray
        and total.shape == g.shape
        and total.dtype == g.dtype
        and total.strides == g.strides
    )


def _marks(nodes: list[Any], wrt: list[int], lo: int, out: int, wrt_is_every_leaf: bool) -> bytearray:
    """2 for a requested node, 1 for a node that depends on one, 0 for the nodes that get
    no cotangent (one forward pass over the indices in between)."""
    top = max(out, *wrt) + 1  # a requested node may come after the output
    if wrt_is_every_leaf:
        mark = bytearray(b"\x01") * top
        for w in wrt:
            mark[w] = 2
        return mark
    mark = bytearray(top)
    for w in wrt:
        mark[w] = 2
    for i in range(lo + 1, out + 1):
        if not mark[i]:
            for p in nodes[i][1]:
                if mark[p]:
                    mark[i] = 1
                    break
    return mark


def sweep(
    nodes: list[Any],
    seeds: dict[int, Cotangent],
    wrt: list[int],
    release: bool = False,
    wrt_is_every_leaf: bool = False,
    rules_of: Callable[[Any, Any, Any, Any], Any] | None = None,
) -> tuple[dict[int, Cotangent], int]:
    """Propagate the ``seeds`` (node index -> cotangent) back to the nodes in ``wrt``.

    ``seeds`` is consumed: each seed is dropped as soon as its node is processed, as every
    other cotangent is, so a large seed does not outlive its use.

    Returns the cotangent reaching each ``wrt`` index (absent: no path) and the number of
    nodes visited. With ``release``, each non-leaf node loses its forward value and
    arguments as soon as its rules have run: nothing later in the sweep reads them again
    (a rule reads its own node's value and arguments, and those are earlier nodes' values).
    ``wrt_is_every_leaf`` says that the arena's leaves are exactly the ``wrt`` nodes, so
    every node depends on one of them and the marking pass has nothing to find.
    ``rules_of(op, g, value, args)``, where given, is the op whose rules a node's
    cotangent takes (an interpreter running around the sweep gives its own: a replay
    records each rule whole).
    """
    if not seeds or not wrt:
        return {}, 0
    lo, out = min(wrt), max(seeds)
    if out < lo:
        return {}, 0
    mark = _marks(nodes, wrt, lo, out, wrt_is_every_leaf)

    grads: dict[int, Any] = {}
    pending = {i: g for i, g in seeds.items() if i >= lo and mark[i]}
    seeds.clear()
    # Sums this sweep made and no rule has seen yet (ids): only pending refers to them, so
    # a further cotangent may be added in place. Whatever a rule returns may alias its
    # input or a forward value, so a first cotangent is never written to.
    owned: set[int] = set()
    visited = 0
    for i in range(out, lo - 1, -1):
        g = pending.pop(i, None)
        if g is None:
            continue
        if owned:
            owned.discard(id(g))
        visited += 1
        if mark[i] == 2:
            # Structured cotangents are merged in place later on: keep a copy.
            grads[i] = g.copy() if isinstance(g, StructCotangent) else g
        op, parents, argnums, args, value = nodes[i]
        if rules_of is not None:
            op = rules_of(op, g, value, args)
        rules = op.vjps if op.joint is None else _joint_answers(op, mark, parents, argnums, g, value, args)
        for p, k in zip(parents, argnums):  # noqa: B905  (equal by construction; hot loop)
            if mark[p]:
                try:
                    gp = rules[k](g, value, *args)
                except Warning:  # see nodegrad.errors.rerun_reporting_warnings
                    gp = rerun_reporting_warnings(rules[k], g, value, *args)
                except Exception as exc:
                    raise reported(op, g, value, args, exc) from exc
                if gp is None:
                    continue
                if op.broadcasts:
                    gp = fit_cotangent(gp, nodes[p][4])
                prev = pending.get(p)
                if prev is None:
                    pending[p] = gp
                elif id(prev) in owned and _fits_in_place(prev, gp):
                    np.add(prev, gp, out=prev)
                else:
                    # The sum replaces prev, which may die now: its id must leave owned with
                    # it, or an array made later at its address would be written into.
                    owned.discard(id(prev))
                    pending[p] = total = prev + gp
                    owned.add(id(total))
        if release and parents:
            nodes[i] = (op, parents, argnums, (), None)
    return grads, visited


def _joint_answers(
    op: Any, mark: Any, parents: tuple[int, ...], argnums: tuple[int, ...], g: Any, value: Any, args: tuple[Any, ...]
) -> dict[int, Callable[..., Any]]:
    """The cotangents of a joint-rule op's inputs the sweep needs at this node, from one
    call of its rule, each as a rule that hands it back (by position, as ``op.vjps``): the
    sweep's loop then calls every rule alike and pays nothing per input for joint rules."""
    wanted = tuple(k for p, k in zip(parents, argnums, strict=True) if mark[p])
    try:
        answers = op.joint(wanted, g, value, *args)
    except Warning:  # see nodegrad.errors.rerun_reporting_warnings
        answers = rerun_reporting_warnings(op.joint, wanted, g, value, *args)
    except Exception as exc:
        raise reported(op, g, value, args, exc) from exc
    return {k: _answered(a) for k, a in zip(wanted, answers, strict=True)}


def _answered(cotangent: Any) -> Callable[..., Any]:
    return lambda *_: cotangent


# -- from user structures to the sweep and back -------------------------------------------
