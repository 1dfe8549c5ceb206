"""The reverse sweep: one iterative loop over the arena from the output down.

1. Mark every node that depends on a requested input (one forward pass over indices).
2. Walk indices from the output down to the lowest requested input. A node with no
   pending cotangent is skipped: it is not on a path to the output. Each marked parent
   of a visited node receives its cotangent from the op's VJP rule, accumulated with
   ``+`` so that fan-out sums; a cotangent is dropped as soon as its node is processed.
3. Cotangents of ops that broadcast are reduced to each input's shape and dtype in one
   place, :func:`fit_cotangent`.

Nodes that do not depend on any requested input never get a cotangent (symbolic zero),
so unused parts of the graph cost nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.errors import ArenaError, DtypeError, ShapeError

__all__ = ["fit_cotangent", "run_backward", "sweep", "unbroadcast"]


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` over the axes that broadcasting added or stretched, to get ``shape``."""
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if stretched:
        g = g.sum(axis=stretched, keepdims=True)
    return g


def fit_cotangent(g: Any, like: Any) -> Any:
    """Reduce a broadcast cotangent to the shape of ``like`` and cast it to its dtype."""
    if g.shape != like.shape:
        g = unbroadcast(g, like.shape)
    if g.dtype != like.dtype and like.dtype.kind == "f":
        g = g.astype(like.dtype)
    return g


def sweep(nodes: list[Any], out: int, seed: Any, wrt: list[int]) -> tuple[dict[int, Any], int]:
    """Propagate ``seed`` from node ``out`` back to the nodes in ``wrt``.

    Returns the cotangent reaching each ``wrt`` index (absent: no path) and the number of
    nodes the sweep visited.
    """
    lo = min(wrt)
    if out < lo:
        return {}, 0
    # 2 marks a requested node, 1 a node that depends on one; 0 nodes get no cotangent.
    mark = bytearray(out + 1)
    for w in wrt:
        mark[w] = 2
    for i in range(lo + 1, out + 1):
        if not mark[i]:
            for p in nodes[i][1]:
                if mark[p]:
                    mark[i] = 1
                    break
    if not mark[out]:
        return {}, 0

    grads: dict[int, Any] = {}
    pending: dict[int, Any] = {out: seed}
    visited = 0
    for i in range(out, lo - 1, -1):
        g = pending.pop(i, None)
        if g is None:
            continue
        visited += 1
        if mark[i] == 2:
            grads[i] = g
        op, parents, argnums, args, value = nodes[i]
        rules = op.vjps
        for p, k in zip(parents, argnums, strict=True):
            if mark[p]:
                gp = rules[k](g, value, *args)
                if op.broadcasts:
                    gp = fit_cotangent(gp, nodes[p][4])
                prev = pending.get(p)
                pending[p] = gp if prev is None else prev + gp
    return grads, visited


def _seed_for(value: Any, seed: Any) -> Any:
    if np.asarray(value).dtype.kind not in "fc":
        msg = f"cannot differentiate an output of dtype {np.asarray(value).dtype}: only floating outputs have gradients"
        raise DtypeError(msg)
    if seed is None:
        if np.size(value) != 1:
            msg = f"the output has shape {np.shape(value)}; pass seed= (an array of that shape) to differentiate a non-scalar output"
            raise ArenaError(msg)
        return np.ones_like(value)
    if type(seed).__name__ == "Traced":
        return seed
    seed_array = np.asarray(seed)
    if seed_array.shape != np.shape(value):
        msg = f"the seed has shape {seed_array.shape} but the output has shape {np.shape(value)}"
        raise ShapeError(msg)
    if seed_array.dtype != np.asarray(value).dtype:
        seed_array = seed_array.astype(np.asarray(value).dtype)
    return seed_array


def _owned(g: Any, like: Any, taken: set[int], seed: Any) -> Any:
    """Give the caller an array nobody else holds, shaped and typed like ``like``."""
    shared = g is seed or id(g) in taken or not isinstance(g, np.ndarray) or g.base is not None
    if shared or g.dtype != like.dtype:
        g = np.array(g, dtype=like.dtype)
    taken.add(id(g))
    return g


def run_backward(arena: Any, output: Any, wrt: list[Any], seed: Any) -> list[Any]:
    """Differentiate ``output`` with respect to each handle in ``wrt``; see ``Arena.backward``."""
    from nodegrad.arena import Traced

    for k, w in enumerate(wrt):
        if type(w) is not Traced or w.arena is not arena:
            msg = f"wrt[{k}] is not a node of this arena (got {type(w).__name__})"
            raise ArenaError(msg)
        if np.asarray(w.value).dtype.kind != "f":
            msg = f"wrt[{k}] (node {w.index}) has dtype {np.asarray(w.value).dtype}; only floating values are differentiable"
            raise DtypeError(msg)
    found: dict[int, Any] = {}
    if type(output) is Traced:
        if output.arena is not arena:
            msg = "the output belongs to another arena"
            raise ArenaError(msg)
        seed_value = _seed_for(output.value, seed)
        if wrt:
            found, visited = sweep(arena._nodes, output.index, seed_value, [w.index for w in wrt])
            arena.last_visited = visited
    else:
        seed_value = _seed_for(output, seed)
    taken: set[int] = set()
    grads = []
    for w in wrt:
        g = found.get(w.index)
        grads.append(np.zeros_like(w.value) if g is None else _owned(g, w.value, taken, seed_value))
    return grads
