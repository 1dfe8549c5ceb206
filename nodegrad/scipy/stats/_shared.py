"""What the distributions share: scipy's masks, written once.

scipy computes each method only on the entries inside the support whose parameters are
valid, and fills the others: ``-inf`` or 0 outside the support, 1 (or 0 for the
logarithms) past its end for the CDFs, NaN where a parameter is invalid or the point is
NaN. Here the same masks choose, entry by entry, between the method's formula and those
constant fills. The formula is evaluated on *safe* inputs (each masked entry replaced by
a point inside the support, each invalid parameter by a valid one), so the values are
scipy's and no NaN or warning from a branch that was not taken reaches a gradient.

:func:`continuous` serves the location-scale families (``z = (x - loc) / scale``);
:func:`discrete` the distributions on the integers, whose points ``k`` and ``loc`` carry
no gradient (the probabilities are piecewise constant in them), nor do integer
parameters such as ``binom``'s ``n``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.traced import unwrap
from nodegrad.ops import clamp

__all__ = ["Continuous", "Discrete", "array_like", "continuous", "discrete", "plain", "positive", "select"]

Formula = Callable[..., Any]


def array_like(value: Any) -> Any:
    """``value`` as scipy reads it: a list or tuple becomes an array; traced values,
    arrays and numbers stay as they are."""
    return np.asarray(value) if isinstance(value, list | tuple) else value


def plain(value: Any) -> np.ndarray:
    """The value under a traced handle, as an array (for masks: it carries no gradient)."""
    return np.asarray(unwrap(value))


def positive(*params: Any) -> Any:
    """scipy's default check of shape parameters: all of them positive."""
    out: Any = True
    for p in params:
        out = out & (p > 0)
    return out


@dataclasses.dataclass(frozen=True)
class Continuous:
    """A continuous family in standard form: its support ``[lower, upper]``, a point
    ``inside`` it, the check of its shape parameters and a valid value of each."""

    lower: float = -np.inf
    upper: float = np.inf
    inside: float = 0.0
    check: Callable[..., Any] = positive
    valid: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True)
class Discrete:
    """A family on the integers: its support ``(lower, upper(*integer parameters))``, the
    check of its parameters, and a valid value of each continuous one."""

    upper: Callable[..., Any]
    check: Callable[..., Any]
    valid: tuple[float, ...]
    lower: float = 0.0


def _scalar(out: Any) -> Any:
    """A 0-d plain array as scipy returns it: a numpy scalar."""
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def select(cond: np.ndarray, formula: Callable[[], Any], fills: np.ndarray) -> Any:
    """``formula()`` where ``cond`` holds, ``fills`` elsewhere (formula alone when it holds
    everywhere); a 0-d plain result as a numpy scalar, as scipy returns it."""
    # log(0) = -inf and inf - inf = NaN at the ends of a support, quietly, as scipy gives them.
    with np.errstate(divide="ignore", invalid="ignore"):
        value = formula()
    return _scalar(value if cond.all() else np.where(cond, value, fills))


def _float(*values: np.ndarray) -> np.dtype[Any]:
    return np.result_type(*values, 1.0)  # a float dtype; float32 stays float32


def continuous(
    family: Continuous, method: str, formula: Formula, x: Any, shapes: Sequence[Any], loc: Any, scale: Any
) -> Any:
    """``method`` (``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``) of the
    family at ``x``: ``formula(z, *shapes, scale)`` inside, scipy's fills outside."""
    x, loc, scale, shapes = array_like(x), array_like(loc), array_like(scale), [array_like(p) for p in shapes]
    scale_value, shape_values = plain(scale), [plain(p) for p in shapes]
    valid = np.asarray(family.check(*shape_values) & (scale_value > 0))
    if not valid.all():
        scale = np.where(scale_value > 0, scale, 1.0)
        shapes = [np.where(valid, p, v) for p, v in zip(shapes, family.valid, strict=True)]
    z = (x - loc) / scale
    zv = plain(z)
    # Python numbers in z's precision: a float32 point keeps float32 (np.log(1) would be float64).
    dtype = np.result_type(zv, *(p if isinstance(p, int | float) else plain(p) for p in shapes), 1.0)
    scale = np.asarray(scale, dtype) if isinstance(scale, int | float) else scale
    shapes = [np.asarray(p, dtype) if isinstance(p, int | float) else p for p in shapes]
    lo, hi = family.lower, family.upper
    with np.errstate(invalid="ignore"):
        inside = (lo <= zv) & (zv <= hi) if method in ("logpdf", "pdf") else (lo < zv) & (zv < hi)
    cond = np.asarray(valid & inside)
    fills = np.full(cond.shape, -np.inf if method.startswith("log") else 0.0, _float(zv, *shape_values))
    end = {"cdf": (zv >= hi, 1.0), "logcdf": (zv >= hi, 0.0), "sf": (zv <= lo, 1.0), "logsf": (zv <= lo, 0.0)}
    if method in end:
        past, value = end[method]
        fills[np.broadcast_to(past & valid, cond.shape)] = value
    fills[np.broadcast_to(~valid | np.isnan(zv), cond.shape)] = np.nan
    return select(cond, lambda: formula(z if cond.all() else np.where(cond, z, family.inside), *shapes, scale), fills)


def discrete(
    family: Discrete, method: str, formula: Formula, k: Any, loc: Any, params: Sequence[Any], fixed: Sequence[Any]
) -> Any:
    """``method`` (``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``) of the
    family at ``k - loc``: ``formula(k, *params, *fixed)`` inside, scipy's fills outside.
    ``params`` are differentiable, ``fixed`` (integers) and ``k`` and ``loc`` are read as
    values."""
    params = [array_like(p) for p in params]
    kv = plain(k) - plain(loc)
    kv = kv.astype(_float(kv), copy=False)
    param_values, fixed_values = [plain(p) for p in params], [plain(f) for f in fixed]
    valid = np.asarray(family.check(*param_values, *fixed_values))
    lo, hi = family.lower, family.upper(*fixed_values)
    with np.errstate(invalid="ignore"):
        if method in ("logpmf", "pmf"):
            inside = (kv >= lo) & (kv <= hi) & (np.floor(kv) == kv)
        else:
            inside = (kv >= lo) & (kv < hi) & (np.isfinite(kv) if method in ("cdf", "sf") else True)
    cond = np.asarray(valid & inside)
    shape = cond.shape
    fills = np.full(shape, -np.inf if method.startswith("log") else 0.0, _float(kv, *param_values))
    bad = np.broadcast_to(~valid | np.isnan(kv), shape)
    # In scipy's order: logcdf marks its upper end after the NaNs, and whatever the parameters.
    if method == "cdf":
        fills[np.broadcast_to(kv >= hi, shape)] = 1.0
    fills[bad] = np.nan
    if method == "logcdf":
        fills[np.broadcast_to(kv >= hi, shape)] = 0.0
    elif method in ("sf", "logsf"):
        below = (kv < lo) | (np.isneginf(kv) if method == "sf" else False)
        fills[np.broadcast_to(below & valid, shape)] = 1.0 if method == "sf" else 0.0
    if not valid.all():
        params = [np.where(valid, p, v) for p, v in zip(params, family.valid, strict=True)]
        fixed_values = [np.where(valid, f, 1) for f in fixed_values]
    safe_k = kv if cond.all() else np.where(cond, kv, lo)

    def value() -> Any:
        out = formula(safe_k, *params, *fixed_values)
        return clamp(out, 0.0, 1.0) if method in ("pmf", "cdf", "sf") else out

    return select(cond, value, fills)
