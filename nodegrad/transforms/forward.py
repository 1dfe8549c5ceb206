"""Forward mode: ``jvp`` and ``linearize``, by transposing a reverse sweep.

A VJP is linear in its cotangent ``u``, so the gradient with respect to ``u`` of
``<vjp(u), tangents>`` is the JVP. ``jvp`` records ``fun`` once, sweeps it back with a
cotangent that is itself a leaf of a second arena (so every rule records, in that second
arena, how the cotangent flows), and sweeps that second arena once, seeded with the
tangents. No separate
forward-mode rules are kept in step with the VJPs: every op with a VJP has a JVP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nodegrad.engine.arena import nested_arena
from nodegrad.engine.backward import gradients
from nodegrad.engine.levels import Interpreted
from nodegrad.engine.structure import pair_leaves
from nodegrad.errors import ArgumentError, StructureError
from nodegrad.transforms.common import (
    as_differentiated,
    check_callable,
    leaf_params,
    like_argument,
    lower,
    name_of,
    probe_cotangent,
    same_shapes,
    traced_leaves,
    zero_tangent,
)

__all__ = ["jvp", "linearize"]


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Forward mode: ``fun(*primals)`` and its directional derivative along ``tangents``.

    Computed by transposing a VJP: a forward pass and two reverse sweeps. Primals,
    tangents and the output may be structured (dict tangents are matched to the primals by
    key); the output tangent has the output's structure (zeros at float leaves that do not
    depend on the primals, ``None`` at static leaves). Nested in other transforms, and
    around them, to any depth.

    Parameters
    ----------
    fun : callable
        A function of the primals returning an array or any structure of arrays.
    primals : sequence
        The point, one entry per argument of ``fun`` (arrays or structures).
    tangents : sequence
        One tangent per primal, of its structure, shapes and dtypes.

    Returns
    -------
    (out, out_tangent)
        ``fun(*primals)`` and its derivative along ``tangents``, both in the output's
        structure.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jvp(lambda x: x ** 2.0, (np.array([1.0, 3.0]),), (np.array([1.0, 1.0]),))
    (array([1., 9.]), array([2., 6.]))
    >>> ng.jvp(lambda p: {"y": p["w"] * 3.0}, ({"w": np.array([1.0])},), ({"w": np.array([2.0])},))
    ({'y': array([3.])}, {'y': array([6.])})
    """
    check_callable(fun, "jvp")
    for what, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            msg = f"jvp: {what} must be a tuple or list with one entry per argument, got {type(value).__name__}"
            raise ArgumentError(msg)
    primals, tangents = tuple(as_differentiated(p) for p in primals), tuple(tangents)
    if len(primals) != len(tangents):
        msg = f"jvp: {len(primals)} primals but {len(tangents)} tangents"
        raise StructureError(msg)
    for k, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        same_shapes(f"jvp tangents[{k}]", p, t)  # same structures and shapes, or an error naming the place
    value, push = _linearized(fun, primals, name_of("jvp", fun))
    return value, push(tangents)


def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``fun(*primals)`` and a function computing its JVP at ``primals`` along any tangents.

    ``fun`` is recorded once, and swept back once into a second arena that records how a
    cotangent flows through it; each call of the returned function is then one sweep of
    that second arena, with no further evaluation of ``fun``. Cheaper than :func:`jvp`
    when many tangents are pushed through one point.

    Parameters
    ----------
    fun : callable
        A function of the primals returning an array or any structure of arrays.
    *primals : any
        The point, one value per argument of ``fun``.

    Returns
    -------
    (out, f_jvp)
        ``fun(*primals)``, and ``f_jvp(*tangents)`` giving the JVP along ``tangents`` (one
        per primal), in the output's structure.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> y, f_jvp = ng.linearize(lambda x: np.sin(x) * x, np.array([0.0, 1.0]))
    >>> f_jvp(np.array([1.0, 0.0])), f_jvp(np.array([0.0, 1.0]))
    (array([0., 0.]), array([0.        , 1.38177329]))
    """
    check_callable(fun, "linearize")
    primals = tuple(as_differentiated(p) for p in primals)
    value, push = _linearized(fun, primals, name_of("linearize", fun))

    def jvp_at_primals(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            msg = f"linearize: {len(primals)} primals but {len(tangents)} tangents"
            raise StructureError(msg)
        for k, (p, t) in enumerate(zip(primals, tangents, strict=True)):
            same_shapes(f"linearize tangents[{k}]", p, t)
        return push(tangents)

    return value, jvp_at_primals


def _linearized(fun: Callable[..., Any], primals: tuple[Any, ...], name: str) -> tuple[Any, Callable[..., Any]]:
    """Record ``fun`` at ``primals`` and sweep it once into a second arena, whose leaf ``u``
    stands for the output's cotangent. Returns the output and ``push(tangents)``: the
    gradient of ``<vjp(u), tangents>`` with respect to ``u``, one sweep of the second arena
    seeded with the tangents, which is the JVP."""
    leaves: list[Interpreted] = []  # every differentiated leaf of the primals, in order, as grad makes them
    layouts: list[Any] = []
    with nested_arena() as arena:
        try:
            traced = tuple(leaf_params(arena, p, f"primals[{k}]", leaves, layouts, name) for k, p in enumerate(primals))
            out = fun(*traced)
            value = lower(out, arena)
            if not any(leaf.arena is arena for leaf in traced_leaves(out)):
                zeros = zero_tangent(value, name)
                return value, lambda tangents: zeros
            with nested_arena() as dual:
                dual.cotangent_probe = True
                try:
                    u = dual.param(probe_cotangent(value, name), name="cotangent")
                    pulled = gradients(arena, out, tuple(leaves), seed=u)
                finally:
                    dual.seal(name)
        finally:
            arena.seal(name)

    def push(tangents: tuple[Any, ...]) -> Any:
        # The tangent of each differentiated leaf, in the leaves' order (dicts by key).
        seeds = tuple(
            t
            for primal, tangent, layout in zip(primals, tangents, layouts, strict=True)
            for t in _leaf_tangents(primal, tangent, layout)
        )
        return like_argument(gradients(dual, pulled, u, seed=seeds), value)

    return value, push


def _leaf_tangents(primal: Any, tangent: Any, layout: Any) -> list[Any]:
    """``tangent``'s entries at the leaves of ``primal`` that were made leaf nodes (per
    ``layout``, as :func:`~nodegrad.ops.structured.leaf_view` took ``primal`` apart),
    paired by key path."""
    if layout is None:
        return [tangent]
    _, _, chosen = layout
    return [t for (_, _, t), take in zip(pair_leaves(primal, tangent), chosen, strict=True) if take]
