"""``frame.merge(...)``: pandas pairs the rows, nodegrad gathers the differentiated columns.

pandas runs the merge itself on the plain columns of both sides, each side's rows'
positions carried along in a column of its own; a differentiated column is then gathered
from those positions (NaN where a row has no partner). Which label each output column has
(keys merged into one, suffixes on clashes, ``left_on``/``right_on`` both kept) is also
pandas' own: a second merge, of one row per side whose cells name their column, says where
each output column came from.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    check_key,
    dtype_of,
    is_handle,
    pandas,
    pandas_step,
    plain_values,
    take_rows,
)

__all__ = ["merged"]


#: The labels of the columns holding each side's row positions (pandas sorts and compares
#: column labels, so they are strings, ones no table has).
_LEFT, _RIGHT = "\x00nodegrad: left rows", "\x00nodegrad: right rows"


def merged(left: Any, right: Any, **options: Any) -> Any:
    """``left.merge(right, **options)`` as pandas merges, with differentiated columns gathered."""
    if not isinstance(right, MAKERS["Frame"]):
        msg = (
            f"Frame.merge: the other table is a {type(right).__name__}; pass a DataFrame or a Frame "
            f"[at {user_location()}]"
        )
        raise ArgumentError(msg)
    pd = pandas()
    options = _default_keys(left, right, options)
    keys = _key_labels(options)
    for table, names in ((left, keys[0]), (right, keys[1])):
        for label in names:
            if label in table._columns:
                check_key(table._columns[label], label, "merge")
    plain = (_plain(left, _LEFT, keys[0]), _plain(right, _RIGHT, keys[1]))
    joined = pandas_step("Frame.merge", lambda: pd.merge(*plain, **options))
    sources = _sources(left, right, options)
    columns: dict[Hashable, Any] = {}
    for label in joined.columns:
        if label in (_LEFT, _RIGHT):
            continue
        side, original = sources.get(label, ("left", None))  # (the indicator column: pandas' own)
        table = left if side == "left" else right
        if original is not None and is_handle(table._columns[original]):
            at = joined[_LEFT if side == "left" else _RIGHT].to_numpy(dtype=float, na_value=np.nan)
            columns[label] = take_rows(table._columns[original], np.where(np.isnan(at), -1, at).astype(np.int64))
        else:
            series = joined[label]
            columns[label] = series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array
    return MAKERS["Frame"](columns, index=joined.index)


def _plain(table: Any, rows: str, keys: list[Hashable]) -> Any:
    """The table for pandas: plain columns as they are, a key column's plain values (under
    vmap, those every example shares: see check_key), any other differentiated one by a
    column of zeros (only its label matters), and the rows' positions."""
    pd = pandas()
    data = {}
    for label, values in table._columns.items():
        if is_handle(values) and label in keys:
            data[label] = plain_values(values, "merge's keys")
        elif is_handle(values):
            data[label] = np.zeros(table._rows, dtype=dtype_of(values))
        elif isinstance(values, np.ndarray) and type(values) is not np.ndarray:
            data[label] = values.view(np.ndarray)
        else:
            data[label] = values
    data[rows] = np.arange(table._rows)
    return pd.DataFrame(data, index=table._index, columns=[*table._columns, rows])


def _sources(left: Any, right: Any, options: dict[str, Any]) -> dict[Hashable, tuple[str, Hashable | None]]:
    """Each output column's side and original label, from pandas merging one row per side
    whose cells are their own column's name (keys all equal, so the rows pair). They depend
    on the labels and the options only: found once for each."""
    key = (tuple(left._columns), tuple(right._columns), repr(sorted(options.items(), key=repr)))
    found = _SOURCES.get(key)
    if found is None:
        found = _SOURCES[key] = _probed_sources(left, right, options)
        if len(_SOURCES) > 256:
            _SOURCES.pop(next(iter(_SOURCES)))
    return found


#: The sources of the output columns, by the labels of both sides and the options.
_SOURCES: dict[Any, dict[Hashable, tuple[str, Hashable | None]]] = {}


def _probed_sources(left: Any, right: Any, options: dict[str, Any]) -> dict[Hashable, tuple[str, Hashable | None]]:
    pd = pandas()
    keys = _key_labels(options)
    probes = []
    for side, table, names in (("left", left, keys[0]), ("right", right, keys[1])):
        cells = {label: [0 if label in names else (side, label)] for label in table._columns}
        probes.append(pd.DataFrame(cells, index=[0], columns=list(table._columns), dtype=object))
    kept = {k: v for k, v in options.items() if k not in ("how", "validate", "indicator", "sort")}
    how = "cross" if options.get("how") == "cross" else "inner"
    probe = pd.merge(probes[0], probes[1], how=how, **kept)
    found: dict[Hashable, tuple[str, Hashable | None]] = {}
    for label in probe.columns:
        cell = probe[label].iloc[0]
        found[label] = cell if isinstance(cell, tuple) else ("left", None)
    return found


def _key_labels(options: dict[str, Any]) -> tuple[list[Hashable], list[Hashable]]:
    def listed(value: Any) -> list[Hashable]:
        return [] if value is None else (list(value) if isinstance(value, list | tuple) else [value])

    on = listed(options.get("on"))
    return on + listed(options.get("left_on")), on + listed(options.get("right_on"))


def _default_keys(left: Any, right: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The options with pandas' default keys written out: the labels both sides have, where
    no keys are given (pandas' rule)."""
    given = ("on", "left_on", "right_on", "left_index", "right_index")
    if options.get("how") == "cross" or any(options.get(k) not in (None, False) for k in given):
        return options
    return {**options, "on": [label for label in left._columns if label in right._columns]}
