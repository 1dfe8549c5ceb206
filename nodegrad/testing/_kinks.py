"""Values clear of the kinks and ties of piecewise ops, for :mod:`nodegrad.testing.strategies`.

``abs``, ``relu`` and ``sign`` bend at 0; ``floor``, ``ceil`` and ``trunc`` jump at the
integers, ``round`` at the half-integers; ``max``, ``min``, ``sort`` and ``argmax`` change
their answer where two entries tie; ``clip`` and ``where`` bend at thresholds the caller
knows. A central difference across any of these points is not a derivative, so a gradient
check there fails without a bug. The values drawn here keep ``margin`` away from every
integer and half-integer (0 included), from the caller's ``kinks`` and from each other.

How: the allowed part of ``[-bound, bound]`` is a union of intervals. Laid end to end
they make one segment (the "compressed" coordinate), where ``n`` values are placed in
order, each ``margin`` past the previous one plus a drawn gap; mapped back, two values in
one interval keep their distance and two in different intervals move apart, so every
margin holds. The values are then shuffled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import hypothesis.strategies as st
import numpy as np

from nodegrad.errors import ArgumentError

__all__ = ["allowed_intervals", "check_kink_options", "check_room", "kink_free_values", "room"]


def check_kink_options(where: str, bound: float, margin: Any, kinks: Any) -> tuple[float, ...]:
    """``margin`` and ``kinks`` validated (an ArgumentError naming ``where`` otherwise);
    returns the kinks as floats."""
    if not isinstance(margin, int | float) or isinstance(margin, bool) or not 0 < margin < 0.25:
        msg = (
            f"{where}: margin must be a number in (0, 0.25), got {margin!r} (an integer and the next half-integer "
            "are 0.5 apart: a larger margin leaves no value between them)"
        )
        raise ArgumentError(msg)
    try:
        points = tuple(float(k) for k in kinks)
    except (TypeError, ValueError):
        msg = f"{where}: kinks must be a sequence of numbers, got {kinks!r}"
        raise ArgumentError(msg) from None
    if not all(math.isfinite(p) for p in points):
        msg = f"{where}: kinks must be finite numbers, got {kinks!r}"
        raise ArgumentError(msg)
    if not bound > 2 * margin:
        msg = f"{where}: bound must exceed 2 * margin, got bound={bound!r}, margin={margin!r}"
        raise ArgumentError(msg)
    return points


def allowed_intervals(
    bound: float, margin: float, kinks: Sequence[float], away_from_zero: float = 0.0
) -> list[tuple[float, float]]:
    """The parts of ``[-bound, bound]`` at least ``margin`` from every integer, half-integer
    and kink (and with ``|x| >= away_from_zero``), as sorted closed intervals."""
    top = math.ceil(bound) + 1
    points = [k / 2 for k in range(-2 * top, 2 * top + 1)] + list(kinks)
    removed = sorted((p - margin, p + margin) for p in points)
    if away_from_zero > 0:
        removed.append((-away_from_zero, away_from_zero))
        removed.sort()
    intervals = []
    start = -bound
    for low, high in removed:
        if low > start:
            intervals.append((start, min(low, bound)))
        start = max(start, high)
        if start >= bound:
            break
    if start < bound:
        intervals.append((start, bound))
    return [(a, b) for a, b in intervals if b > a]


def _layout(
    count: int, bound: float, margin: float, kinks: Sequence[float], away_from_zero: float, dtype: Any
) -> tuple[list[tuple[float, float]], float, float]:
    """``(intervals, spacing, free)``: where ``count`` values may go, how far apart they are
    placed, and the length left for the gaps between them; an ArgumentError if they do not fit."""
    # Placed a little further apart than asked, so that rounding to the dtype keeps the margins.
    slack = max(margin * 1e-3, 2 * float(np.finfo(dtype).eps) * bound)  # rounding moves a value by eps * bound / 2
    spacing = margin + slack
    intervals = allowed_intervals(bound, spacing, kinks, away_from_zero + slack if away_from_zero else 0.0)
    free = sum(b - a for a, b in intervals) - max(count - 1, 0) * spacing
    if count and (not intervals or free < 0):
        msg = (
            f"cannot place {count} values at least {margin} apart and from the kinks in [-{bound}, {bound}] "
            f"({np.dtype(dtype)}): draw smaller arrays, or pass a larger bound or a smaller margin"
        )
        raise ArgumentError(msg)
    return intervals, spacing, free


def room(bound: float, margin: float, kinks: Sequence[float], away_from_zero: float, dtype: Any) -> int:
    """How many values fit in ``[-bound, bound]`` with all their margins."""
    intervals, spacing, _ = _layout(0, bound, margin, kinks, away_from_zero, dtype)
    return math.floor(sum(b - a for a, b in intervals) / spacing) + 1 if intervals else 0


def check_room(
    shape: Any, bound: float, margin: float, kinks: Sequence[float], away_from_zero: float, dtype: Any
) -> None:
    """Refuse, when the strategy is made, a fixed ``shape`` whose entries cannot all keep
    their margins within the bound."""
    if isinstance(shape, int | np.integer) or (
        isinstance(shape, tuple) and all(isinstance(n, int | np.integer) for n in shape)
    ):
        _layout(
            math.prod((shape,) if isinstance(shape, int | np.integer) else shape),
            bound,
            margin,
            kinks,
            away_from_zero,
            dtype,
        )


@st.composite
def kink_free_values(
    draw: st.DrawFn, count: int, bound: float, margin: float, kinks: Sequence[float], away_from_zero: float, dtype: Any
) -> np.ndarray:
    """``count`` values of ``dtype`` in ``[-bound, bound]``, each at least ``margin`` from
    every integer, half-integer and kink, and from each other (see the module's docstring)."""
    intervals, spacing, free = _layout(count, bound, margin, kinks, away_from_zero, dtype)
    if not count:
        return np.zeros(0, dtype)
    weights = draw(st.lists(st.floats(0, 1), min_size=count + 1, max_size=count + 1))
    total = sum(weights)
    gaps = [w / total * free for w in weights] if total > 0 else [free / (count + 1)] * (count + 1)
    positions = np.cumsum(gaps[:count]) + spacing * np.arange(count)
    values = _expanded(positions, intervals, [b - a for a, b in intervals])
    order = draw(st.permutations(range(count)))
    return values[list(order)].astype(dtype)


def _expanded(positions: np.ndarray, intervals: list[tuple[float, float]], lengths: list[float]) -> np.ndarray:
    """Positions along the intervals laid end to end, mapped back onto the real line."""
    starts = np.concatenate([[0.0], np.cumsum(lengths)])
    which = np.clip(np.searchsorted(starts, positions, side="right") - 1, 0, len(intervals) - 1)
    lows = np.array([a for a, _ in intervals])[which]
    highs = np.array([b for _, b in intervals])[which]
    return np.clip(lows + (positions - starts[which]), lows, highs)
