"""The dot-product gradient check behind :func:`nodegrad.testing.check_grads`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.structure import differentiable_leaves, is_differentiable_leaf, zip_leaves
from nodegrad.transforms import vjp
from nodegrad.tree import add, map_floats, scale, vdot

__all__ = ["check_grads"]

# Default (rtol, atol) by the narrowest float dtype among the differentiated arguments and the
# output (float64 otherwise): the numeric side is always float64, only the analytic side varies.
_TOLERANCES = {"float16": (3e-2, 1e-2), "float32": (2e-3, 1e-4), "float64": (1e-5, 1e-7)}


def check_grads(
    f: Callable[..., Any],
    *args: Any,
    argnums: int | Sequence[int] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = None,
    seed: int = 0,
) -> None:
    """Check ``f``'s reverse-mode gradients against central finite differences.

    The dot-product test: with a random cotangent ``v`` for the output and a random
    direction ``u_k`` for each differentiated argument ``x_k``, the analytic
    ``<vjp(v)_k, u_k>`` must match ``(<v, f(x_k + eps u_k)> - <v, f(x_k - eps u_k)>) / (2 eps)``,
    computed in float64 (float32 arguments are cast up for this side). Arguments and the
    output may be structured (records, dicts, lists, tuples); each gradient must have its
    argument's structure, and each gradient leaf its leaf's shape and dtype.

    Parameters
    ----------
    f : callable
        Takes float arrays, Python floats or structures of them; returns an array, a
        scalar or a structure of them.
    *args
        The point at which to check.
    argnums : int or sequence of int, optional
        Arguments to differentiate; all of them by default. The others are passed as given.
    rtol, atol : float, optional
        Pass when ``|analytic - numeric| <= atol + rtol * scale``, where ``scale`` is the
        larger of ``|numeric|`` and ``sum(|vjp(v)_k * u_k|)`` (the size of the terms the
        dot product adds up). Defaults depend on the narrowest float dtype involved.
    eps : float, optional
        Finite-difference step along ``u_k``; default ``1e-6``.
    seed : int, default 0
        Seeds the ``numpy.random.Generator`` that draws ``u`` and ``v``.

    Raises
    ------
    AssertionError
        Naming the argument and the key paths of the leaves whose gradients are wrong,
        with the analytic and numeric values and the tolerances.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_grads
    >>> check_grads(lambda x, y: ng.sin(x) * y, np.array([0.5, 1.0]), 2.0)
    >>> check_grads(lambda p: ng.sum(p["w"] ** 2.0) * p["s"], {"w": np.ones(3), "s": 2.0, "tag": "t"})
    """
    nums = tuple(range(len(args))) if argnums is None else _normalize(argnums, len(args))
    eps = 1e-6 if eps is None else eps
    rng = np.random.default_rng(seed)

    def partial(*diff: Any) -> Any:
        return f(*(dict(enumerate(args)) | dict(zip(nums, diff, strict=True))).values())

    out, back = vjp(partial, *(args[k] for k in nums))
    rtol, atol = _tolerances(rtol, atol, [out, *(args[k] for k in nums)])
    v = map_floats(lambda leaf: _random_like(rng, leaf), out)
    grads = back(v)
    point = [map_floats(_as_float64, a) for a in args]

    def along(k: int, u: Any, sign: float) -> float:
        moved = list(point)
        moved[k] = add(point[k], scale(u, sign * eps))
        return vdot(v, f(*moved))

    def failure(k: int, g: Any, u: Any) -> str | None:
        analytic = vdot(g, u)
        numeric = (along(k, u, 1.0) - along(k, u, -1.0)) / (2 * eps)
        size = max(abs(numeric), vdot(map_floats(np.abs, g), map_floats(np.abs, u)))
        tolerance = atol + rtol * size
        if abs(analytic - numeric) <= tolerance:  # a NaN fails this comparison too
            return None
        return (
            f"  analytic <vjp(v), u> = {analytic!r}\n"
            f"  numeric  (central difference, eps={eps:g}) = {numeric!r}\n"
            f"  |difference| = {abs(analytic - numeric):.3g} > tolerance {tolerance:.3g} "
            f"(atol={atol:g} + rtol={rtol:g} * scale {size:.3g})"
        )

    for k, g in zip(nums, grads, strict=True):
        _check_like(k, g, args[k])
        u = map_floats(lambda leaf: _random_like(rng, leaf), point[k])
        problem = failure(k, g, u)
        if problem is None:
            continue
        # Find the leaves to blame: the same test with the direction on one leaf at a time.
        paths = [p for p, _ in differentiable_leaves(args[k])]
        bad = [p for p in paths if len(paths) > 1 and failure(k, g, _only(u, p)) is not None]
        where = f" at {', '.join(bad)}" if bad else ""
        if is_differentiable_leaf(args[k]):
            where = f" (shape {np.shape(args[k])}, dtype {np.asarray(args[k]).dtype})"
        msg = f"check_grads: the gradient of argument {k}{where} fails the dot-product test (seed={seed}):\n{problem}"
        raise AssertionError(msg)


def _tolerances(rtol: float | None, atol: float | None, values: list[Any]) -> tuple[float, float]:
    dtypes = [np.asarray(leaf).dtype for value in values for _, leaf in differentiable_leaves(value)]
    narrowest = min(dtypes, key=lambda d: d.itemsize, default=np.dtype(float))
    default_rtol, default_atol = _TOLERANCES.get(narrowest.name, _TOLERANCES["float64"])
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def _random_like(rng: np.random.Generator, leaf: Any) -> Any:
    if isinstance(leaf, float):
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(leaf)).astype(np.asarray(leaf).dtype)


def _as_float64(leaf: Any) -> Any:
    return leaf if isinstance(leaf, float) else np.asarray(leaf, dtype=np.float64)


def _only(direction: Any, path: str) -> Any:
    """``direction`` with every leaf but the one at ``path`` set to zero."""
    flat = dict(differentiable_leaves(direction))
    return map_floats(lambda leaf: leaf if flat.get(path) is leaf else leaf * 0, direction)


def _check_like(k: int, g: Any, x: Any) -> None:
    try:
        pairs = list(zip_leaves(x, g))
    except Exception as exc:
        msg = f"check_grads: the gradient of argument {k} does not have its structure: {exc}"
        raise AssertionError(msg) from exc
    differentiable = {path for path, _ in differentiable_leaves(x)}  # fields marked static excluded
    for path, leaf, g_leaf in pairs:
        if path not in differentiable:
            continue
        same = np.shape(g_leaf) == np.shape(leaf) and np.asarray(g_leaf).dtype == np.asarray(leaf).dtype
        if g_leaf is None or not same:
            what = f"argument {k}{path} (shape {np.shape(leaf)}, dtype {np.asarray(leaf).dtype})"
            got = "None" if g_leaf is None else f"shape {np.shape(g_leaf)} and dtype {np.asarray(g_leaf).dtype}"
            msg = f"check_grads: the gradient of {what} has {got}"
            raise AssertionError(msg)


def _normalize(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    if not nums or any(not -nargs <= k < nargs for k in nums) or len({k % nargs for k in nums}) != len(nums):
        msg = f"check_grads: argnums {argnums!r} must be distinct positions among {nargs} argument(s)"
        raise ValueError(msg)
    return tuple(int(k) % nargs for k in nums)
