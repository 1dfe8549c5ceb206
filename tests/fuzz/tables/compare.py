"""What differs between nodegrad's answer and pandas': a kind (row order, index names, a
column's dtype, values, ...) and its figures. Floats agree to 1e-12 relative; everything
else exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tests.fuzz.tables.outcomes import first_line

RTOL = 1e-12


def close_enough(got: np.ndarray, want: np.ndarray) -> bool:
    scale = max(1.0, float(np.nanmax(np.abs(want)))) if np.isfinite(want).any() else 1.0
    return bool(np.all(np.abs(got - want) <= RTOL * scale + RTOL * np.abs(want)))


def compare(got: Any, want: Any) -> tuple[str, str] | None:
    """What differs between nodegrad's ``got`` and pandas' ``want`` -- (a kind, its
    figures) -- or None. Floats agree to 1e-12 relative; everything else exactly."""
    if isinstance(want, pd.DataFrame):
        if not isinstance(got, pd.DataFrame):
            return "type", f"a {type(got).__name__} where pandas gives a DataFrame"
        return _compare_frames(got, want)
    if isinstance(want, pd.Series):
        if not isinstance(got, pd.Series):
            return "type", f"a {type(got).__name__} where pandas gives a Series"
        if not _same_label(got.name, want.name):
            return "Series name", f"{got.name!r} vs {want.name!r}"
        if len(got) != len(want):
            return "row count", f"{len(got)} vs {len(want)}"
        found = _compare_index(got.index, want.index) or _compare_values(got, want)
        return found if found is None else (found[0], found[1])
    return compare_scalars(got, want)


def compare_scalars(got: Any, want: Any) -> tuple[str, str] | None:
    if isinstance(got, pd.Series | pd.DataFrame | np.ndarray) or np.ndim(got) != 0:
        return "type", f"a {type(got).__name__} of shape {np.shape(got)} where pandas gives a {type(want).__name__}"
    kinds = {k: np.asarray(v).dtype.kind for k, v in (("got", got), ("want", want))}
    if (kinds["got"] == "f") != (kinds["want"] == "f") or (kinds["got"] == "b") != (kinds["want"] == "b"):
        return "scalar type", f"{type(got).__name__} vs {type(want).__name__}"
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if np.isnan(g) != np.isnan(w):
        return "NaN placement", f"{got!r} vs {want!r}"
    if not np.isnan(w) and not close_enough(g, w):
        return "values", f"{got!r} vs {want!r}"
    return None


def _compare_frames(got: pd.DataFrame, want: pd.DataFrame) -> tuple[str, str] | None:
    if list(got.columns) != list(want.columns):
        return "columns", f"{list(got.columns)} vs {list(want.columns)}"
    if type(got.columns) is not type(want.columns) or got.columns.dtype != want.columns.dtype:
        what = (
            f"{type(got.columns).__name__}({got.columns.dtype})",
            f"{type(want.columns).__name__}({want.columns.dtype})",
        )
        return "columns' Index type", " vs ".join(what)
    if len(got) != len(want):
        return "row count", f"{len(got)} vs {len(want)}"
    found = _compare_index(got.index, want.index)
    if found:
        return found
    want = want.copy()
    for j, label in enumerate(want.columns):
        if _numbers_as_objects(got.iloc[:, j], want.iloc[:, j]):
            want.isetitem(j, want.iloc[:, j].astype(np.float64))
        found = _compare_values(got.iloc[:, j], want.iloc[:, j])
        if found:
            return f"column {found[0]}", f"{label!r}: {found[1]}"
    try:
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=RTOL, atol=RTOL)
    except AssertionError as error:
        return "other", first_line(error)
    return None


def _compare_index(got: pd.Index, want: pd.Index) -> tuple[str, str] | None:
    if isinstance(got, pd.MultiIndex) != isinstance(want, pd.MultiIndex):
        return "index type", f"{type(got).__name__} vs {type(want).__name__}"
    if list(got.names) != list(want.names):
        return "index names", f"{list(got.names)} vs {list(want.names)}"
    if not got.equals(want):
        same = sorted(map(repr, got.tolist())) == sorted(map(repr, want.tolist()))
        kind = "row order" if same else "index labels"
        return kind, f"{got.tolist()[:8]} vs {want.tolist()[:8]}"
    levels = [(got, want)] if not isinstance(want, pd.MultiIndex) else list(zip(got.levels, want.levels, strict=True))
    for g, w in levels:
        ranges = {type(g), type(w)} <= {pd.RangeIndex, pd.Index} and g.dtype.kind == w.dtype.kind == "i"
        if g.dtype != w.dtype and not ranges:
            return "index dtype", f"{g.dtype} vs {w.dtype}"
    return None


def _same_label(a: Any, b: Any) -> bool:
    """Labels equal, NaN matching NaN (a group of missing keys is named NaN)."""
    missing = {isinstance(v, float) and v != v for v in (a, b)}
    return missing == {True} or (missing == {False} and a == b)


def _numbers_as_objects(got: pd.Series, want: pd.Series) -> bool:
    """pandas' object column of numbers (arithmetic with a mask pandas shifted or clipped)
    against nodegrad's float64 of the same numbers: the documented difference."""
    return (
        got.dtype == np.float64
        and want.dtype == object
        and all(isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) for v in want)
    )


def _compare_values(got: pd.Series, want: pd.Series) -> tuple[str, str] | None:
    if _numbers_as_objects(got, want):
        want = want.astype(np.float64)
    if got.dtype != want.dtype:
        return "dtype", f"{got.dtype} vs {want.dtype}"
    if isinstance(want.dtype, pd.CategoricalDtype) and list(got.cat.categories) != list(want.cat.categories):
        return "categories", f"{list(got.cat.categories)} vs {list(want.cat.categories)}"
    g, w = got.reset_index(drop=True), want.reset_index(drop=True)
    if want.dtype.kind in "fc":
        gv, wv = g.to_numpy(), w.to_numpy()
        if (np.isnan(gv) != np.isnan(wv)).any():
            return "NaN placement", f"{gv.tolist()[:8]} vs {wv.tolist()[:8]}"
        present = ~np.isnan(wv)
        if close_enough(gv[present], wv[present]):
            return None
        permuted = np.array_equal(np.sort(gv[present]), np.sort(wv[present]))
        error = float(np.max(np.abs(gv[present] - wv[present])))
        detail = f"max error {error:.3g}: {gv.tolist()[:6]} vs {wv.tolist()[:6]}"
        return ("values permuted" if permuted else "values"), detail
    if not g.equals(w):
        permuted = sorted(map(repr, g.tolist())) == sorted(map(repr, w.tolist()))
        return ("values permuted" if permuted else "values"), f"{g.tolist()[:6]} vs {w.tolist()[:6]}"
    return None
