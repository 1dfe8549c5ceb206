"""Rows and columns selected: ``X[idx]``, ``X[a:b]``, ``X[mask]``, ``X[:, cols]``.

The values a selection keeps are a linear map of the old ones (:mod:`.structure`): for a
minibatch of a CSR matrix's rows it is worked out from the rows' runs of values, at the
cost of the values taken; any other selection scipy makes on probe values, and the number
of values it must keep is counted here, so that scipy summing any is caught.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from nodegrad.ops.sparse import structure
from nodegrad.ops.sparse.pattern import Pattern

__all__ = ["is_int", "selected"]


def selected(p: Pattern, key: Any, rows: Any, cols: Any) -> structure.LinearMap:
    """The map to ``X[key]`` (``key`` read as ``X[rows, cols]``) for ``X`` on ``p``."""
    taken = _row_positions(p, rows, cols)
    if taken is not None:  # a minibatch of a CSR matrix's rows
        return structure.rows_taken(p, taken)
    return structure.by_probe(p, lambda m: m[key], _kept_count(p, rows, cols))


def is_int(key: Any) -> bool:
    """Whether ``key`` is one integer index (not a bool)."""
    return isinstance(key, numbers.Integral | np.integer) and not isinstance(key, bool)


def _row_positions(p: Pattern, rows: Any, cols: Any) -> np.ndarray | None:
    """The rows ``X[rows, cols]`` takes whole, where ``X`` is CSR and ``cols`` all of them:
    an integer array, list, slice or mask (``None`` otherwise, or for one int)."""
    if p.format != "csr" or not (isinstance(cols, slice) and cols == slice(None)) or is_int(rows):
        return None
    m = p.shape[0]
    if isinstance(rows, slice):
        return np.arange(m)[rows]
    try:
        taken = np.asarray(rows)
    except (TypeError, ValueError):  # (what numpy cannot read as indices: scipy's to judge)
        return None
    if taken.ndim != 1:
        return None
    if taken.dtype == bool:
        return np.flatnonzero(taken) if taken.size == m else None
    if taken.dtype.kind not in "iu" and taken.size:
        return None
    taken = taken.astype(np.int64)
    if taken.size and (taken.min() < -m or taken.max() >= m):
        msg = f"row index out of range for a sparse matrix of {m} rows"
        raise IndexError(msg)
    return taken % m if taken.size else taken


def _kept_count(p: Pattern, rows: Any, cols: Any) -> int | None:
    """How many stored values ``X[rows, cols]`` keeps, counted here (so that scipy summing
    any is caught): rows and columns each a slice, an integer list or a mask."""
    try:
        rows_hit = _hits(p.shape[0], rows)
        cols_hit = _hits(p.shape[1], cols)
    except (TypeError, ValueError, IndexError):
        return None
    return int(np.sum(rows_hit[p.rows] * cols_hit[p.cols]))


def _hits(size: int, key: Any) -> np.ndarray:
    """How many times ``key`` reads each position in ``range(size)``."""
    if isinstance(key, slice):
        counts = np.zeros(size, np.int64)
        counts[key] = 1
        return counts
    if is_int(key):
        key = [key]
    key = np.asarray(key)
    if key.dtype == bool:
        return key.astype(np.int64)
    return np.bincount(np.asarray(key, np.int64) % size, minlength=size)
