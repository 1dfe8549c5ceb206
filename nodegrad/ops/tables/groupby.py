"""``frame.groupby(...)``: pandas' own groups, and each group's aggregate of a column.

pandas groups the rows: it reads the static keys (columns, Series, index levels) with the
caller's options (``sort``, ``dropna``, ``observed``, ``level``), numbers each row's group
and labels the groups (a MultiIndex for several keys, with their names). A plain column's
aggregate is then pandas' own; a differentiated one's is computed from the rows' group
numbers with nodegrad's segment sums, NaN skipped as pandas skips it. ``as_index=False``
puts the groups' keys in columns, as pandas does.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from nodegrad.engine.levels import RECORDING
from nodegrad.ops.pipeline.segments import segment_max, segment_sum
from nodegrad.ops.tables.common import (
    MAKERS,
    check_key,
    from_pandas,
    is_float,
    is_handle,
    no_gradient,
    pandas,
    plain_values,
    take_rows,
    to_pandas,
)
from nodegrad.ops.tables.reductions import ratio, root

__all__ = ["FrameGroupBy", "SeriesGroupBy", "series_groupby"]

#: The aggregations a differentiated column has by group.
DIFFERENTIABLE = ("sum", "mean", "min", "max", "std", "var", "count", "size", "first", "last")


class _Groups:
    """The rows' groups, as pandas forms them from the keys."""

    def __init__(self, frame: Any, by: Any, level: Any, options: dict[str, Any]) -> None:
        pd = pandas()
        keys = by if isinstance(by, list) else ([] if by is None else [by])
        self.key_labels = [k for k in keys if _is_label(k) and k in frame._columns]
        for label in self.key_labels:
            check_key(frame._columns[label], label, "groupby")
        plain = {label: v for label, v in frame._columns.items() if not is_handle(v) or label in self.key_labels}
        self.probe = pd.DataFrame(
            {label: _plain_series(v, frame._index) for label, v in plain.items()}, index=frame._index
        )
        spec = [k if _is_label(k) and k in frame._columns else to_pandas(k, "a group key") for k in keys]
        spec_by = spec if isinstance(by, list) else (spec[0] if spec else None)
        self.grouped = self.probe.groupby(spec_by, level=level, **options)
        self.labels = self.grouped.size().index  # the groups' labels, in pandas' order
        self.codes = _codes(self.grouped, self.labels, len(frame._index))
        self.rows = np.flatnonzero(self.codes >= 0)

    def aggregate(self, frame: Any, label: Hashable, name: str, **options: Any) -> Any:
        """Column ``label``'s aggregate ``name`` for each group, in the groups' order."""
        values = frame._columns[label]
        if type(values) in RECORDING and not is_float(values):  # a static column a replay stages: pandas'
            values = plain_values(values, f"groupby(...).{name} of a static column")
        if not is_handle(values):
            found = self.grouped[label].agg(name, **options) if name != "size" else self.grouped.size()
            return _values_of(found.reindex(self.labels) if len(found) != len(self.labels) else found)
        if name not in DIFFERENTIABLE:
            raise no_gradient(
                "Frame.groupby(...)", name, f"a differentiated column aggregates by {', '.join(DIFFERENTIABLE)}"
            )
        return self._differentiated(values, name, **options)

    def _differentiated(self, values: Any, name: str, ddof: int = 1) -> Any:
        groups = len(self.labels)
        if name == "size":
            return np.bincount(self.codes[self.rows], minlength=groups).astype(np.int64)
        codes = self.codes[self.rows]
        values = values[self.rows]
        present = ~np.isnan(values)
        counts = segment_sum(np.where(present, 1.0, 0.0), codes, groups)
        if name == "count":
            return counts.astype(np.int64)
        if name in ("first", "last"):
            return self._end(values, present, codes, groups, name)
        total = segment_sum(np.where(present, values, 0.0), codes, groups)
        if name == "sum":
            return total
        mean = ratio(total, counts)
        if name == "mean":
            return mean
        if name in ("var", "std"):
            centred = np.where(present, values - take_rows(np.where(np.isnan(mean), 0.0, mean), codes), 0.0)
            spread = ratio(segment_sum(centred * centred, codes, groups), counts - ddof)
            return spread if name == "var" else root(spread)
        sign = 1.0 if name == "max" else -1.0
        extreme = sign * segment_max(np.where(present, sign * values, -np.inf), codes, groups)
        return np.where(counts > 0, extreme, np.nan)

    def _end(self, values: Any, present: Any, codes: np.ndarray, groups: int, name: str) -> Any:
        """Each group's first (or last) value present, as pandas' ``first``/``last`` skip NaN."""
        found = plain_values(present, f"groupby(...).{name}")
        positions = np.full(groups, -1)
        order = range(len(codes)) if name == "last" else range(len(codes) - 1, -1, -1)
        for k in order:
            if found[k]:
                positions[codes[k]] = k
        return take_rows(values, positions)

    def spread(self, per_group: Any) -> Any:
        """Each row's group's value (NaN for a row in no group), as ``transform`` gives it."""
        at = np.where(self.codes >= 0, self.codes, -1)
        return take_rows(per_group, at)


class _Aggregations:
    """The aggregations by name, each one call of the class's ``_each(name, **options)``."""

    def _each(self, name: str, **options: Any) -> Any:
        raise NotImplementedError

    def sum(self, **options: Any) -> Any:
        """The sum per group (NaN skipped)."""
        return self._each("sum", **options)

    def mean(self, **options: Any) -> Any:
        """The mean per group, over the values present."""
        return self._each("mean", **options)

    def min(self, **options: Any) -> Any:
        """The smallest value per group."""
        return self._each("min", **options)

    def max(self, **options: Any) -> Any:
        """The largest value per group."""
        return self._each("max", **options)

    def std(self, ddof: int = 1) -> Any:
        """The standard deviation per group (``ddof=1``)."""
        return self._each("std", ddof=ddof)

    def var(self, ddof: int = 1) -> Any:
        """The variance per group (``ddof=1``)."""
        return self._each("var", ddof=ddof)

    def prod(self, **options: Any) -> Any:
        """The product per group (of plain columns)."""
        return self._each("prod", **options)

    def count(self) -> Any:
        """The number of values present per group."""
        return self._each("count")

    def size(self) -> Any:
        """Each group's number of rows."""
        return self._each("size")

    def first(self) -> Any:
        """The first value present per group."""
        return self._each("first")

    def last(self) -> Any:
        """The last value present per group."""
        return self._each("last")


class FrameGroupBy(_Aggregations):
    """``frame.groupby(by)``: aggregations of the columns other than the keys."""

    def __init__(
        self, frame: Any, by: Any, level: Any, as_index: bool, options: dict[str, Any], selected: Any = None
    ) -> None:
        self._frame = frame
        self._by, self._level, self._as_index, self._options = by, level, as_index, options
        self._groups = _Groups(frame, by, level, options)
        self._selected = selected

    def _columns(self) -> list[Hashable]:
        if self._selected is not None:
            return list(self._selected)
        return [label for label in self._frame._columns if label not in self._groups.key_labels]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, list | tuple):
            for label in key:
                self._frame._column(label)
            return FrameGroupBy(self._frame, self._by, self._level, self._as_index, self._options, list(key))
        self._frame._column(key)
        return SeriesGroupBy(self, key)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        frame = self.__dict__["_frame"]
        if name in frame._columns:
            return self[name]
        if not hasattr(pandas().core.groupby.DataFrameGroupBy, name):
            raise AttributeError(f"'FrameGroupBy' object has no attribute {name!r}")
        if all(not is_handle(frame._columns[c]) for c in self._columns()):
            method = getattr(self._pandas(), name)
            return lambda *a, **k: from_pandas(method(*to_pandas(a), **to_pandas(k))) if callable(method) else method
        raise no_gradient("Frame.groupby(...)", name, f"one of {', '.join(DIFFERENTIABLE)}, agg, transform")

    def _pandas(self) -> Any:
        grouped = self._frame._pandas().groupby(
            _pandas_keys(self._by), level=self._level, as_index=self._as_index, **self._options
        )
        return grouped[self._selected] if self._selected is not None else grouped

    def _result(self, columns: dict[Hashable, Any]) -> Any:
        groups = self._groups.labels
        if self._as_index:
            return MAKERS["Frame"](columns, index=groups)
        keys = groups.to_frame(index=False)
        made = {label: _values_of(keys[label]) for label in keys.columns if label not in columns}
        return MAKERS["Frame"]({**made, **columns}, index=pandas().RangeIndex(len(groups)))

    def _each(self, name: str, **options: Any) -> Any:
        if name == "size":
            size = self._groups.grouped.size()
            return from_pandas(size) if self._as_index else self._result({"size": _values_of(size)})
        found = {label: self._groups.aggregate(self._frame, label, name, **options) for label in self._columns()}
        return self._result(found)

    def agg(self, func: Any = None, **named: Any) -> Any:
        """Aggregations by name: one for every column (``"sum"``), several (a list: columns
        labelled ``(column, name)``), by column (a dict), or named (``total=("x", "sum")``)."""
        groups = self._groups
        found: dict[Hashable, Any]
        if named:
            found = {out: groups.aggregate(self._frame, column, how) for out, (column, how) in named.items()}
            return self._result(found)
        if isinstance(func, str):
            return self._each(func)
        if isinstance(func, list):
            found = {(c, how): groups.aggregate(self._frame, c, how) for c in self._columns() for how in func}
            return self._result(found)
        if isinstance(func, dict):
            found = {}
            for column, how in func.items():
                for one in how if isinstance(how, list) else [how]:
                    key = (column, one) if any(isinstance(h, list) for h in func.values()) else column
                    found[key] = groups.aggregate(self._frame, column, one)
            return self._result(found)
        if all(not is_handle(self._frame._columns[c]) for c in self._columns()):
            return from_pandas(self._pandas().agg(func))
        raise no_gradient("Frame.groupby(...)", "agg", "name the aggregations: 'sum', 'mean', ...")

    aggregate = agg

    def transform(self, func: Any, **options: Any) -> Any:
        """Each column's aggregate ``func`` (a name) of its row's group, one per row."""
        if not isinstance(func, str):
            if all(not is_handle(self._frame._columns[c]) for c in self._columns()):
                return from_pandas(self._pandas().transform(func, **options))
            raise no_gradient("Frame.groupby(...)", "transform", "name the aggregation: transform('mean')")
        found = {
            label: self._groups.spread(self._groups.aggregate(self._frame, label, func, **options))
            for label in self._columns()
        }
        return MAKERS["Frame"](found, index=self._frame._index)


class SeriesGroupBy(_Aggregations):
    """``frame.groupby(by)["x"]``: one column's aggregations by group, each a Series."""

    def __init__(self, parent: FrameGroupBy, label: Hashable, name: Hashable = ...) -> None:
        self._parent = parent
        self._label = label
        self._name = label if name is ... else name  # (a Series grouped by itself keeps its own name)

    def _series(self, values: Any, index: Any) -> Any:
        return MAKERS["Series"](values, index=index, name=self._name)

    def _each(self, name: str, **options: Any) -> Any:
        parent = self._parent
        if name == "size":
            return parent._each("size")
        found = parent._groups.aggregate(parent._frame, self._label, name, **options)
        if not parent._as_index:
            return parent._result({self._label: found})
        return self._series(found, parent._groups.labels)

    def agg(self, func: Any = None, **named: Any) -> Any:
        """An aggregation by name, or several (a list: a table with a column per name)."""
        if isinstance(func, str):
            return self._each(func)
        parent = self._parent
        if isinstance(func, list) or named:
            pairs = {how: how for how in func} if isinstance(func, list) else dict(named)
            found = {out: parent._groups.aggregate(parent._frame, self._label, how) for out, how in pairs.items()}
            return parent._result(found)
        if not is_handle(parent._frame._columns[self._label]):
            return from_pandas(parent._pandas()[self._label].agg(func))
        raise no_gradient("Frame.groupby(...)[column]", "agg", "name the aggregation: 'sum', 'mean', ...")

    aggregate = agg

    def transform(self, func: Any, **options: Any) -> Any:
        """The column's aggregate ``func`` (a name) of each row's group, one per row."""
        parent = self._parent
        if not isinstance(func, str):
            if not is_handle(parent._frame._columns[self._label]):
                return from_pandas(parent._pandas()[self._label].transform(func, **options))
            raise no_gradient("Frame.groupby(...)[column]", "transform", "name the aggregation: transform('mean')")
        per_group = parent._groups.aggregate(parent._frame, self._label, func, **options)
        return self._series(parent._groups.spread(per_group), parent._frame._index)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        parent = self.__dict__["_parent"]
        if not hasattr(pandas().core.groupby.SeriesGroupBy, name):
            raise AttributeError(f"'SeriesGroupBy' object has no attribute {name!r}")
        if not is_handle(parent._frame._columns[self.__dict__["_label"]]):
            method = getattr(parent._pandas()[self.__dict__["_label"]], name)
            return lambda *a, **k: from_pandas(method(*to_pandas(a), **to_pandas(k))) if callable(method) else method
        raise no_gradient("Frame.groupby(...)[column]", name, f"one of {', '.join(DIFFERENTIABLE)}, agg, transform")


class _Values:
    """The label of a grouped Series' values in the table it is grouped as."""

    def __repr__(self) -> str:
        return "<values>"


VALUES = _Values()


def series_groupby(series: Any, by: Any, level: Any, options: dict[str, Any]) -> SeriesGroupBy:
    """``series.groupby(by)``: the Series as a one-column table grouped by ``by`` (keys that
    are not its labels: a Series, an array, index levels)."""
    table = MAKERS["Frame"]({VALUES: series._values}, index=series._index)
    return SeriesGroupBy(FrameGroupBy(table, by, level, True, options), VALUES, series._name)


def _codes(grouped: Any, labels: Any, rows: int) -> np.ndarray:
    """Each row's group: its position among the groups' ``labels`` (-1 for a row in none).
    Read from the rows pandas puts in each group, not from ``ngroup``, whose numbers skip
    the unobserved categories ``observed=False`` lists among the groups."""
    numbers = grouped.ngroup().to_numpy(dtype=float, na_value=np.nan)
    if np.nanmax(numbers, initial=-1) + 1 == len(labels):  # every group has rows: ngroup is the order
        return np.where(np.isnan(numbers), -1, numbers).astype(np.int64)
    position = {_comparable(label): k for k, label in enumerate(labels)}
    codes = np.full(rows, -1, dtype=np.int64)
    for key, members in grouped.indices.items():
        if labels.nlevels == 1 and isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        codes[members] = position[_comparable(key)]
    return codes


class _Missing:
    """A missing key (NaN, None, NaT), which equals itself here as it does in a group's label."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _comparable(label: Any) -> Any:
    if isinstance(label, tuple):
        return tuple(_comparable(part) for part in label)
    return _MISSING if pandas().isna(label) is True else label


def _is_label(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return not isinstance(key, MAKERS["Series"] | np.ndarray)


def _pandas_keys(by: Any) -> Any:
    if isinstance(by, list):
        return [k if _is_label(k) else to_pandas(k, "a group key") for k in by]
    return by if by is None or _is_label(by) else to_pandas(by, "a group key")


def _plain_series(values: Any, index: Any) -> Any:
    values = plain_values(values, "a group key") if is_handle(values) else values
    if isinstance(values, np.ndarray) and type(values) is not np.ndarray:
        values = values.view(np.ndarray)
    return pandas().Series(values, index=index, copy=False)


def _values_of(series: Any) -> Any:
    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array
