"""pandas objects and nodegrad's tables as structured values.

A DataFrame is a map of its columns, keyed by their labels (key paths read
``args[0]['price']``); its float and complex columns are differentiable leaves and every
other column a static one; its index is part of its structure. A Series is a map of one
entry, its values, keyed by its name. Taken apart by a transform and rebuilt around traced
values, a DataFrame is a :class:`~nodegrad.ops.tables.frame.Frame` and a Series a
:class:`~nodegrad.ops.tables.series.Series`; rebuilt around plain values (a gradient, a
result), they are pandas' again, with the index (and name) of the value they stand for.

pandas stays optional: the container handlers of its classes are asked for through
:data:`nodegrad.engine.plugins.PLUGINS`, by the class's library, the first time one meets a
transform.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Hashable
from typing import Any

import numpy as np

from nodegrad.engine.containers import Handler, register_handler
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.rows import RowSparse
from nodegrad.engine.traced import DEFERS_TO, ON_PANDAS
from nodegrad.errors import ShapeError
from nodegrad.ops.tables.common import column_values, pandas
from nodegrad.ops.tables.frame import Frame, unique_labels
from nodegrad.ops.tables.series import Series
from nodegrad.ops.tables.signature import index_key

__all__ = ["table_of"]


def table_of(value: Any) -> Any:
    """A pandas DataFrame or Series as nodegrad's table type (``None`` for any other
    value): what a function sees of one passed to a transform and not differentiated, so it
    sees a table whichever arguments are differentiated."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(value, pd.DataFrame):
        return Frame(value)
    if isinstance(value, pd.Series):
        return Series(value)
    return None


# -- the handlers ---------------------------------------------------------------------------------


def _frame_column(frame: Any, label: Hashable) -> Any:
    return column_values(frame[label])


def _frame_build(template: Any, children: list[Any]) -> Any:
    """A DataFrame of ``children`` with the template's index (its columns left out where a
    child is None: a gradient's static entries; None where every child is); a Frame where a
    child is traced."""
    labels = list(template.columns)
    # Traced or batched columns, or a replayed function's argument (its columns staged); a
    # gradient's static columns (None) are left out.
    if _has_handles(children):
        return Frame({k: v for k, v in zip(labels, children, strict=True) if v is not None}, index=template.index)
    # A column read by row gathers only has a RowSparse gradient (sparse_rows=True): a
    # table's gradient is a table, so it is written out.
    data = {label: _dense(child) for label, child in zip(labels, children, strict=True) if child is not None}
    _check_columns(data)
    if not data and labels:
        return None  # a gradient of a table holding no floats: None, as for any such entry
    kept = [label for label in labels if label in data]
    return pandas().DataFrame(data, index=template.index, columns=pandas().Index(kept) if kept else template.columns)


def _ours_labels(frame: Frame) -> list[Hashable]:
    return list(frame._columns)


def _ours_column(frame: Frame, label: Hashable) -> Any:
    return frame._columns[label]


def _series_labels(series: Any) -> list[Hashable]:
    return [series.name]


def _series_column(series: Any, label: Hashable) -> Any:
    return column_values(series) if not isinstance(series, Series) else series._values


def _series_build(template: Any, children: list[Any]) -> Any:
    (child,) = children
    if child is None:
        return None
    if type(child) in INTERPRETED:
        return Series(child, index=template.index, name=template.name)
    _check_columns({template.name: child})
    return pandas().Series(_dense(child), index=template.index, name=template.name)


def _has_handles(children: list[Any]) -> bool:
    return any(type(c) in INTERPRETED for c in children)


def _check_columns(data: dict[Hashable, Any]) -> None:
    """A table's columns are 1-d: what ``vmap`` stacks (one table per example) is not one."""
    for label, column in data.items():
        if np.ndim(column) != 1:
            msg = (
                f"a table's column {label!r} has shape {np.shape(column)}; under vmap each example's table is its "
                "own, and a table cannot stack them: return the columns' values, "
                "{c: f[c].to_numpy() for c in f.columns}"
            )
            raise ShapeError(msg)


def _dense(column: Any) -> Any:
    return column.todense() if type(column) is RowSparse else column


def _handler_for(cls: type) -> Handler | None:
    """The container handler of a pandas class: DataFrame and Series (and their
    subclasses); ``None`` (a leaf) for any other."""
    pd = importlib.import_module("pandas")
    if issubclass(cls, pd.DataFrame):
        handler = _map_handler(unique_labels, _frame_column, _frame_build, "table")
    elif issubclass(cls, pd.Series):
        handler = _map_handler(_series_labels, _series_column, _series_build, "column")
    else:
        return None
    handler.meta = index_key  # the rows' labels: a replay's signature holds them
    return handler


def _map_handler(labels: Any, column: Any, build: Any, family: str) -> Handler:
    """A handler taking values apart as maps of their columns (``labels(value)``,
    ``column(value, label)``); pandas' class and nodegrad's are one family (one stands for
    the other where structures are matched)."""

    def get(value: Any, key: Hashable) -> Any:
        return column(value, key) if key in labels(value) else None  # a gradient has no static columns

    def entries(value: Any) -> tuple[list[Hashable], list[Any]]:
        found = labels(value)
        return found, [column(value, label) for label in found]

    handler = Handler("map", labels, get, build, None, entries)
    handler.family = family
    return handler


register_handler(Frame, _map_handler(_ours_labels, _ours_column, _frame_build, "table"))
register_handler(Series, _map_handler(_series_labels, _series_column, _series_build, "column"))
PLUGINS.library_containers["pandas"] = _handler_for


def _pandas_operands() -> None:
    """pandas' Series and DataFrame met with a traced value (a table closed over) answer as
    nodegrad's: ``series - x`` is a Series with the series' labels."""
    pd = pandas()
    DEFERS_TO[pd.Series] = Series
    DEFERS_TO[pd.DataFrame] = Frame


ON_PANDAS.append(_pandas_operands)
