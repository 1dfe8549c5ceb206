"""A column's reductions on differentiated values, NaN skipped as pandas skips it.

Each is written with nodegrad's numpy functions on the values, so it is traced, batched or
staged like any other numpy code: which entries are present is a mask computed from the
values (``~np.isnan(x)``), never read from them, and a count of zero gives NaN as pandas
does. ``axis=1`` reduces each row of a table of windows (``rolling``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.ops.tables.common import is_float, length, take_rows

__all__ = ["REDUCTIONS", "cumulative", "ratio", "reduce_values", "root", "windows"]


def _present(values: Any, skipna: bool) -> Any:
    return ~np.isnan(values) if skipna else np.ones(np.shape(values), dtype=bool)


def _count(present: Any, axis: Any) -> Any:
    return np.sum(np.where(present, 1.0, 0.0), axis=axis)


def _total(values: Any, present: Any, axis: Any) -> Any:
    return np.sum(np.where(present, values, 0.0), axis=axis)


def _or_nan(value: Any, keep: Any) -> Any:
    return np.where(keep, value, np.nan)


def ratio(numerator: Any, denominator: Any) -> Any:
    """``numerator / denominator``, NaN where the denominator is not positive (an empty
    group's mean), with no NaN in the gradient of the entries it does not divide: the
    division is by 1 there, and its result dropped."""
    defined = denominator > 0
    return np.where(defined, numerator / np.where(defined, denominator, 1.0), np.nan)


def root(value: Any) -> Any:
    """``sqrt(value)`` of a variance that may be NaN (a group too small for a deviation) or
    0 (equal values), with no NaN in the gradient of the entries it does not take part in:
    at 0, where the square root has no derivative, the gradient is 0 (equal values moved
    together keep a deviation of 0)."""
    positive = value > 0
    return np.where(positive, np.sqrt(np.where(positive, value, 1.0)), np.where(np.isnan(value), np.nan, 0.0))


def _mean(values: Any, present: Any, axis: Any) -> Any:
    return ratio(_total(values, present, axis), _count(present, axis))


def _var(values: Any, present: Any, axis: Any, ddof: int) -> Any:
    count = _count(present, axis)
    mean = _mean(values, present, axis)
    centred = np.where(present, values - np.where(np.isnan(mean), 0.0, mean if axis is None else mean[:, None]), 0.0)
    spread = np.sum(centred * centred, axis=axis)
    return ratio(spread, count - ddof)


def _extreme(values: Any, present: Any, axis: Any, sign: float) -> Any:
    count = _count(present, axis)
    found = sign * np.max(np.where(present, sign * values, -np.inf), axis=axis)
    return _or_nan(found, count > 0)


def reduce_values(name: str, values: Any, skipna: bool, axis: Any = None, min_count: int = 0, ddof: int = 1) -> Any:
    """The reduction ``name`` of ``values`` (over every entry, or each row with ``axis=1``):
    pandas' answer, with NaN entries skipped where ``skipna``; NaN where fewer than
    ``min_count`` entries are present (a rolling window's ``min_periods``)."""
    if axis is None and not length(values):  # no entries: pandas' answer for an empty column
        return np.float64(0.0 if name == "sum" else 1.0 if name == "prod" else np.nan) if name != "count" else 0
    present = _present(values, skipna)
    if name == "count":
        return _count(present, axis)
    if name == "sum":
        found = _total(values, present, axis)
    elif name == "prod":
        found = np.prod(np.where(present, values, 1.0), axis=axis)
    elif name == "mean":
        found = _mean(values, present, axis)
    elif name == "var":
        found = _var(values, present, axis, ddof)
    elif name == "std":
        found = root(_var(values, present, axis, ddof))
    else:
        found = _extreme(values, present, axis, 1.0 if name == "max" else -1.0)
    if min_count > 0:
        found = _or_nan(found, _count(present, axis) >= min_count)
    if not skipna and name in ("sum", "prod"):
        found = _or_nan(found, np.all(present, axis=axis))
    return found[()] if axis is None else found  # one number, as numpy's and pandas' reductions give it


REDUCTIONS = frozenset({"sum", "prod", "mean", "var", "std", "min", "max", "count"})


def cumulative(name: str, values: Any, skipna: bool) -> Any:
    """The running sum (``"cumsum"``) or product (``"cumprod"``): NaN where a value is
    NaN, which the running value skips (or, without ``skipna``, NaN from there on)."""
    missing = np.isnan(values)
    neutral = 0.0 if name == "cumsum" else 1.0
    running = getattr(np, name)(np.where(missing, neutral, values))
    if not skipna:
        return np.where(np.cumsum(missing) > 0, np.nan, running)
    return np.where(missing, np.nan, running)


def windows(values: Any, window: int, center: bool) -> Any:
    """A (rows, window) table of each row's window of ``values``, as pandas' fixed
    windows place it (ending at the row; centred with ``center``), NaN beyond the ends."""
    rows = length(values)
    if not is_float(values):  # pandas computes a window of bools or integers in float64
        values = values.astype(np.float64)
    offset = (window - 1) // 2 if center else 0
    ends = np.arange(rows) + offset
    at = ends[:, None] + np.arange(1 - window, 1)[None, :]
    at = np.where((at >= 0) & (at < rows), at, -1)
    return take_rows(values, at.ravel()).reshape(rows, window)
