"""The dot-product gradient check behind :func:`nodegrad.testing.check_grads`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.transforms import vjp

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
    computed in float64 (float32 arguments are cast up for this side). Each gradient must
    also have its argument's shape and dtype.

    Parameters
    ----------
    f : callable
        Takes float arrays / Python floats and returns an array or a scalar.
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
        Naming the argument, with the analytic and numeric values and the tolerances.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_grads
    >>> check_grads(lambda x, y: ng.sin(x) * y, np.array([0.5, 1.0]), 2.0)
    >>> check_grads(lambda x: ng.sum(x ** 2.0), np.ones(3, dtype=np.float32), rtol=1e-2)
    """
    nums = tuple(range(len(args))) if argnums is None else _normalize(argnums, len(args))
    eps = 1e-6 if eps is None else eps
    rng = np.random.default_rng(seed)

    def partial(*diff: Any) -> Any:
        return f(*(dict(enumerate(args)) | dict(zip(nums, diff, strict=True))).values())

    out, back = vjp(partial, *(args[k] for k in nums))
    dtypes = [np.asarray(a).dtype for a in (out, *(args[k] for k in nums))]
    narrowest = min((d for d in dtypes if d.kind == "f"), key=lambda d: d.itemsize, default=np.dtype(float))
    default_rtol, default_atol = _TOLERANCES.get(narrowest.name, _TOLERANCES["float64"])
    rtol, atol = default_rtol if rtol is None else rtol, default_atol if atol is None else atol
    v = rng.standard_normal(np.shape(out)).astype(np.asarray(out).dtype)
    grads, v64 = back(v), v.astype(np.float64)
    point = [
        np.asarray(a, np.float64) if isinstance(a, np.ndarray | np.floating) and a.dtype.kind == "f" else a
        for a in args
    ]

    def along(k: int, u: Any, sign: float) -> float:
        moved = list(point)
        moved[k] = point[k] + sign * eps * u
        moved[k] = float(moved[k]) if isinstance(args[k], float) else moved[k]  # keep Python floats
        return float(np.sum(v64 * np.asarray(f(*moved), dtype=np.float64)))

    for k, g in zip(nums, grads, strict=True):
        x = args[k]
        what = f"argument {k} (shape {np.shape(x)}, dtype {np.asarray(x).dtype})"
        if np.shape(g) != np.shape(x) or np.asarray(g).dtype != np.asarray(x).dtype:
            msg = f"check_grads: the gradient of {what} has shape {np.shape(g)} and dtype {np.asarray(g).dtype}"
            raise AssertionError(msg)
        u = rng.standard_normal(np.shape(x))
        terms = np.asarray(g, dtype=np.float64) * u
        analytic = float(np.sum(terms))
        numeric = (along(k, u, 1.0) - along(k, u, -1.0)) / (2 * eps)
        scale = max(abs(numeric), float(np.sum(np.abs(terms))))
        tolerance = atol + rtol * scale
        if not abs(analytic - numeric) <= tolerance:  # `not <=` also catches NaN
            msg = (
                f"check_grads: the gradient of {what} fails the dot-product test (seed={seed}):\n"
                f"  analytic <vjp(v), u> = {analytic!r}\n"
                f"  numeric  (central difference, eps={eps:g}) = {numeric!r}\n"
                f"  |difference| = {abs(analytic - numeric):.3g} > tolerance {tolerance:.3g} "
                f"(atol={atol:g} + rtol={rtol:g} * scale {scale:.3g})"
            )
            raise AssertionError(msg)


def _normalize(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    if not nums or any(not -nargs <= k < nargs for k in nums) or len({k % nargs for k in nums}) != len(nums):
        msg = f"check_grads: argnums {argnums!r} must be distinct positions among {nargs} argument(s)"
        raise ValueError(msg)
    return tuple(int(k) % nargs for k in nums)
