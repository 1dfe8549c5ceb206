"""Tables: pandas DataFrames and Series as differentiable values, and :class:`Frame`.

A DataFrame is a structured value like a dict, with no registration: its columns are its
entries, keyed by their labels (key paths read ``args[0]['price']``), its float and complex
columns are differentiable leaves and every other column (ints, bools, strings,
categoricals, datetimes) a static one; its index is part of its structure. The gradient of a
DataFrame argument is a DataFrame with the same index holding the differentiable columns
in their order; a Series' is a Series with the same index and name.

Inside a differentiated function (or a ``vmap``, or a ``replay``) a DataFrame argument is a
:class:`Frame`: pandas' own spelling for the steps of a pipeline, its columns traced arrays.
A Frame returned from a transform's function comes back a pandas DataFrame. Inside, a
Series argument is its values (a traced array).

pandas stays optional: nothing here imports it until a pandas object meets a transform (the
container handlers are asked for through :data:`nodegrad.engine.plugins.PLUGINS`, by the
class's library), or a :class:`Frame` is made.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import numpy as np

from nodegrad.engine.batched import HANDLES
from nodegrad.engine.containers import Handler, register_handler
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.rows import RowSparse
from nodegrad.engine.staged import Staged, Unreplayable, now
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError, StructureError, user_location
from nodegrad.ops.pipeline.segments import segment_max as _segment_max
from nodegrad.ops.pipeline.segments import segment_sum as _segment_sum
from nodegrad.ops.sealed import Sealed, index_key
from nodegrad.ops.table_arithmetic import TableArithmetic

__all__ = ["Frame"]


def _pandas() -> Any:
    try:
        return importlib.import_module("pandas")
    except ImportError:  # pragma: no cover - the extra is installed in every test environment
        msg = "nodegrad.Frame needs pandas: python -m pip install 'nodegrad[pandas]'"
        raise ArgumentError(msg) from None


def _length(value: Any) -> int:
    shape = np.shape(now(unwrap(value)))
    if not shape:
        msg = f"a column of a Frame must have one entry per row, got a 0-d value [at {user_location()}]"
        raise ShapeError(msg)
    return int(shape[0])


def _values(value: Any, what: str) -> Any:
    """The plain values under ``value``'s traced levels, for deciding which rows go where
    (a choice with no gradient). A value staged by ``replay`` cannot be read so: the choice
    would be frozen into the program, so the recording is given up (the call runs eagerly)."""
    plain = unwrap(value)
    if type(plain) is Staged:
        msg = f"Frame: {what} depends on the values of a column [at {user_location()}]"
        raise Unreplayable(msg)
    return plain


def _has_handles(children: list[Any]) -> bool:
    return any(type(c) in HANDLES for c in children)


class Frame(TableArithmetic):
    """A table of columns inside a differentiated function: what a pandas DataFrame argument
    is there, with pandas' spelling for the common steps of a pipeline.

    ``f["x"]`` and ``f.x`` (a column: an array, traced where it is differentiated),
    ``f[["x", "y"]]`` (a Frame of those columns), ``f[mask]`` (the rows where a boolean mask
    is true), ``f.iloc[rows]`` and ``f.loc[labels]``, ``f.assign(z=...)``, ``len(f)``,
    ``f.index``, ``f.columns``, ``f.shape``, ``f.to_numpy()``, ``f.groupby(by)`` with its
    aggregations, ``f.merge(other, on, how)`` and ``f.sort_values(by)``. Any other DataFrame method
    raises an error naming it. A Frame returned from a transform's function is a DataFrame
    again.

    Parameters
    ----------
    data : mapping
        Column label -> values, one entry per row (arrays, traced values, lists).
    index : pandas Index or sequence, optional
        The row labels; a RangeIndex by default.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import nodegrad as ng
    >>> sales = pd.DataFrame({"price": [2.0, 3.0, 5.0], "units": [1, 4, 2]}, index=["a", "b", "c"])
    >>> def revenue(f):  # f is an ng.Frame inside
    ...     return np.sum(f["price"] * f["units"])
    >>> ng.grad(revenue)(sales)  # a DataFrame: the same index, the float columns
       price
    a    1.0
    b    4.0
    c    2.0
    """

    __slots__ = ("_columns", "_index", "_rows")

    def __init__(self, data: Mapping[Hashable, Any] | Frame | Any, index: Any = None) -> None:
        if isinstance(data, Frame) or _is_data_frame(data):  # a table already: its columns and index
            table: Any = data
            index = table.index if index is None else index
            read = _frame_column if _is_data_frame(table) else Frame.__getitem__
            data = {label: read(table, label) for label in table.columns}
        # Lists become arrays; arrays, traced values and pandas' own arrays (a categorical,
        # which keeps its categories' order for groupby) stay as they are.
        columns = {label: np.asarray(v) if isinstance(v, list | tuple) else v for label, v in data.items()}
        lengths = {_length(v) for v in columns.values()}
        if len(lengths) > 1:
            msg = f"Frame: the columns have different lengths {sorted(lengths)} [at {user_location()}]"
            raise ShapeError(msg)
        pd = _pandas()
        rows = lengths.pop() if lengths else (0 if index is None else len(index))
        self._index = pd.RangeIndex(rows) if index is None else pd.Index(index)
        if len(self._index) != rows:
            msg = f"Frame: an index of {len(self._index)} labels for {rows} rows [at {user_location()}]"
            raise ShapeError(msg)
        self._columns = columns
        self._rows = rows

    # -- what it is ------------------------------------------------------------------------
    @property
    def index(self) -> Any:
        """The row labels (a pandas Index)."""
        return self._index

    @property
    def columns(self) -> Any:
        """The column labels (a pandas Index), in order."""
        return _pandas().Index(list(self._columns))

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return (self._rows, len(self._columns))

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._columns)

    def __contains__(self, label: object) -> bool:
        return label in self._columns

    def __repr__(self) -> str:
        shown = ", ".join(f"{label!r}: {_describe(v)}" for label, v in self._columns.items())
        return f"Frame({self._rows} rows; {shown})"

    # -- columns and rows ---------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, list):
            return Frame({label: self._column(label) for label in key}, index=self._index)
        if isinstance(key, Hashable) and not isinstance(key, tuple) and key in self._columns:
            return self._columns[key]
        mask = now(unwrap(key))
        if isinstance(mask, np.ndarray) and mask.dtype == bool:
            if mask.shape != (self._rows,):
                msg = f"Frame: a row mask of shape {mask.shape} for {self._rows} rows [at {user_location()}]"
                raise ShapeError(msg)
            return self._rows_at(np.flatnonzero(key))
        return self._column(key)

    def __getattr__(self, name: str) -> Any:
        columns = object.__getattribute__(self, "_columns")
        if name in columns:
            return columns[name]
        if not name.startswith("_") and hasattr(_pandas().DataFrame, name):
            msg = (
                f"Frame.{name}: not one of the DataFrame methods a Frame has (columns, masks, iloc, loc, assign, "
                f"groupby, merge, sort_values, to_numpy; see the tables guide): take the columns' values with "
                f"f.to_numpy() or f['column'] [at {user_location()}]"
            )
            raise NoGradientError(msg)
        raise AttributeError(name)

    def _with_columns(self, columns: dict[Hashable, Any]) -> Frame:
        return Frame(columns, index=self._index)

    def _column(self, label: Any) -> Any:
        try:
            return self._columns[label]
        except (KeyError, TypeError):
            msg = f"Frame: no column {label!r}; the columns are {list(self._columns)} [at {user_location()}]"
            raise StructureError(msg) from None

    def _rows_at(self, rows: Any) -> Frame:
        """The Frame of rows at positions ``rows`` (an integer array), in that order."""
        taken = {label: value[rows] for label, value in self._columns.items()}
        return Frame(taken, index=self._index[_values(rows, "the labels of the rows taken")])

    @property
    def iloc(self) -> _Rows:
        """Rows by position: ``f.iloc[rows]`` (an int, a slice or an integer array)."""
        return _Rows(self, by_label=False)

    @property
    def loc(self) -> _Rows:
        """Rows by label: ``f.loc[labels]`` (a label or a list of labels)."""
        return _Rows(self, by_label=True)

    def assign(self, **columns: Any) -> Frame:
        """A new Frame with ``columns`` added (or replaced): arrays of one entry per row,
        numbers (repeated), or functions of the Frame, as in ``DataFrame.assign``."""
        found = dict(self._columns)
        for label, value in columns.items():
            value = value(self) if callable(value) else value
            if np.ndim(now(unwrap(value))) == 0:
                value = np.broadcast_to(value, (self._rows,))
            found[label] = value
        return Frame(found, index=self._index)

    def groupby(self, by: Any, sort: bool = True, dropna: bool = True) -> _GroupBy:
        """Rows grouped by the values of the column(s) ``by`` (static columns: strings,
        ints, categoricals), in pandas' group order; aggregate with ``.sum()``, ``.mean()``,
        ``.max()``, ``.min()``, ``.count()``, ``.agg({column: name})`` or spread back over
        the rows with ``.transform(name)``. A float column aggregates differentiably, NaN
        entries skipped as pandas skips them."""
        return _GroupBy(self, [by] if not isinstance(by, list) else list(by), sort, dropna)

    def merge(self, right: Any, on: Any, how: str = "inner", suffixes: tuple[str, str] = ("_x", "_y")) -> Frame:
        """The rows of this Frame joined to those of ``right`` (a Frame or a DataFrame) whose
        static key column(s) ``on`` hold the same values, in pandas' order and with its
        suffixes; ``how="left"`` keeps every row here, with NaN in ``right``'s columns where no
        row matches, as pandas gives. Each side's columns are gathered, so gradients flow to
        both."""
        if how not in ("inner", "left"):
            msg = f"Frame.merge: how={how!r}; a Frame joins 'inner' or 'left' [at {user_location()}]"
            raise ArgumentError(msg)
        other = right if isinstance(right, Frame) else _as_frame(right)
        keys = [on] if not isinstance(on, list) else list(on)
        pd = _pandas()
        pairs = pd.merge(_positions(self, keys, "__left"), _positions(other, keys, "__right"), on=keys, how=how)
        left_rows = pairs["__left"].to_numpy()
        right_rows = pairs["__right"].to_numpy(dtype=float, na_value=np.nan)
        matched = ~np.isnan(right_rows)
        found: dict[Hashable, Any] = {}
        for label, value in self._columns.items():
            clash = label not in keys and label in other._columns
            found[f"{label}{suffixes[0]}" if clash else label] = value[left_rows]
        for label, value in other._columns.items():
            if label in keys:
                continue
            taken = _scatter_rows(value[right_rows[matched].astype(np.int64)], np.flatnonzero(matched), len(pairs))
            found[f"{label}{suffixes[1]}" if label in self._columns else label] = taken
        return Frame(found, index=pd.RangeIndex(len(pairs)))

    def sort_values(self, by: Any, ascending: bool = True) -> Frame:
        """The rows in the order of the column(s) ``by`` (pandas' stable order, NaN last);
        the order itself carries no gradient, the values moved do."""
        labels = [by] if not isinstance(by, list) else list(by)
        keys = {label: _values(self._column(label), "sort_values' order") for label in labels}
        order = _pandas().DataFrame(keys).reset_index(drop=True)
        rows = order.sort_values(labels, ascending=ascending, kind="stable").index.to_numpy()
        return self._rows_at(rows)

    def to_numpy(self) -> Any:
        """The columns side by side, one row per row: a (rows, columns) array, traced where
        a column is. Every column must be numeric."""
        values = list(self._columns.values())
        for label, value in self._columns.items():
            if np.result_type(now(unwrap(value))).kind not in "biufc":
                msg = f"Frame.to_numpy: column {label!r} is not numeric [at {user_location()}]"
                raise ArgumentError(msg)
        return np.stack(values, axis=1) if values else np.zeros((self._rows, 0))


class _Rows:
    """``Frame.iloc`` and ``Frame.loc``."""

    __slots__ = ("_by_label", "_frame")

    def __init__(self, frame: Frame, by_label: bool) -> None:
        self._frame = frame
        self._by_label = by_label

    def __getitem__(self, key: Any) -> Frame:
        frame = self._frame
        positions = np.arange(len(frame))
        if self._by_label:
            keys = key if isinstance(key, list | np.ndarray) else [key]
            found = frame.index.get_indexer(keys)
            if (found < 0).any():
                missing = [k for k, f in zip(keys, found, strict=True) if f < 0]
                msg = f"Frame.loc: no rows labelled {missing} [at {user_location()}]"
                raise StructureError(msg)
            return frame._rows_at(found)
        return frame._rows_at(np.atleast_1d(positions[key]))


_AGGREGATIONS = ("sum", "mean", "max", "min", "count")


class _GroupBy:
    """``Frame.groupby(by)``: the rows' group codes and the groups' labels, read by pandas
    from the static key columns (so groups and their order are pandas' own), and the
    aggregations of the other columns over them."""

    def __init__(self, frame: Frame, by: list[Hashable], sort: bool, dropna: bool) -> None:
        pd = _pandas()
        keys = _static_keys(frame, by, "groupby")
        grouped = pd.DataFrame(keys, index=frame.index).groupby(by, sort=sort, dropna=dropna, observed=True)
        codes = grouped.ngroup().to_numpy(dtype=float, na_value=np.nan)  # NaN: a row without a group
        self._codes = np.where(np.isnan(codes), -1, codes).astype(np.int64)
        self._groups = grouped.size().index  # the groups' labels, in pandas' order
        self._frame = frame
        self._by = by
        self._columns = [label for label in frame._columns if label not in by]

    def __getitem__(self, key: Any) -> _GroupBy:
        labels = key if isinstance(key, list) else [key]
        for label in labels:
            self._frame._column(label)
        selected = object.__new__(_GroupBy)
        selected.__dict__.update(self.__dict__)
        selected._columns = labels
        return selected

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and hasattr(_pandas().core.groupby.DataFrameGroupBy, name):
            msg = (
                f"Frame.groupby(...).{name}: not one of the aggregations a Frame's groups have "
                f"({', '.join(_AGGREGATIONS)}, agg, transform) [at {user_location()}]"
            )
            raise NoGradientError(msg)
        raise AttributeError(name)

    def sum(self) -> Frame:
        """The sum of each column per group (NaN skipped; a group of NaN only sums to 0)."""
        return self.agg(dict.fromkeys(self._columns, "sum"))

    def mean(self) -> Frame:
        """The mean of each column per group, over its non-NaN entries."""
        return self.agg(dict.fromkeys(self._columns, "mean"))

    def max(self) -> Frame:
        """The maximum of each column per group (NaN skipped; NaN for a group of NaN only)."""
        return self.agg(dict.fromkeys(self._columns, "max"))

    def min(self) -> Frame:
        """The minimum of each column per group (NaN skipped; NaN for a group of NaN only)."""
        return self.agg(dict.fromkeys(self._columns, "min"))

    def count(self) -> Frame:
        """The number of non-NaN entries of each column per group."""
        return self.agg(dict.fromkeys(self._columns, "count"))

    def agg(self, how: Mapping[Hashable, str]) -> Frame:
        """``{column: name}``: each column aggregated by its name (one of sum, mean, max,
        min, count), a Frame indexed by the groups."""
        return Frame({label: self._aggregate(label, name) for label, name in how.items()}, index=self._groups)

    def transform(self, name: str) -> Frame:
        """Each column's aggregate ``name`` of its row's group, one per row (NaN for a row
        whose key is NaN), indexed as the Frame."""
        rows = np.flatnonzero(self._codes >= 0)
        found = {}
        for label in self._columns:
            per_group = self._aggregate(label, name)
            spread = per_group[self._codes[rows]]
            if len(rows) < len(self._codes):  # rows without a group: NaN, as pandas gives
                spread = _scatter_rows(spread, rows, len(self._codes))
            found[label] = spread
        return Frame(found, index=self._frame.index)

    def _aggregate(self, label: Hashable, name: str) -> Any:
        if name not in _AGGREGATIONS:
            msg = f"Frame.groupby: no aggregation {name!r}; one of {', '.join(_AGGREGATIONS)} [at {user_location()}]"
            raise ArgumentError(msg)
        values = self._frame._column(label)
        dtype = getattr(now(unwrap(values)), "dtype", None)  # (a batched value has the examples' dtype)
        rows = np.flatnonzero(self._codes >= 0)
        codes, groups = self._codes[rows], len(self._groups)
        if not groups:  # every key missing: no group, nothing to aggregate
            return np.zeros(0, np.int64 if name == "count" else float)
        if not isinstance(dtype, np.dtype) or dtype.kind not in "fc":  # a static column: pandas' own answer
            series = _pandas().Series(np.asarray(_values(values, "a static column's aggregate"))[rows])
            series = series.groupby(codes, sort=True)
            return getattr(series, name)().reindex(range(groups)).to_numpy()
        values = values[rows]
        # Which entries a group skips (NaN) is a mask made of numpy calls on the values, not
        # read from them: under replay it is recomputed each run, under vmap per example.
        present = ~np.isnan(values)
        counts = _segment_sum(np.where(present, 1.0, 0.0), codes, groups)
        if name == "count":
            return counts.astype(np.int64)
        if name in ("sum", "mean"):
            total = _segment_sum(np.where(present, values, 0.0), codes, groups)
            return total if name == "sum" else total / np.where(counts > 0, counts, np.nan)
        sign = 1.0 if name == "max" else -1.0
        extreme = sign * _segment_max(np.where(present, sign * values, -np.inf), codes, groups)
        return np.where(counts > 0, extreme, np.nan)


def _as_frame(table: Any) -> Frame:
    """A plain DataFrame as a Frame of its columns (a merge's constant right side)."""
    labels, values = _frame_entries(table)
    return Frame(dict(zip(labels, values, strict=True)), index=table.index)


def _positions(frame: Frame, keys: list[Hashable], name: str) -> Any:
    """A plain DataFrame of ``frame``'s static key columns and each row's position (what
    pandas pairs rows by, in a merge)."""
    found = _static_keys(frame, keys, "merge")
    found[name] = np.arange(len(frame))
    return _pandas().DataFrame(found)


def _static_keys(frame: Frame, labels: list[Hashable], where: str) -> dict[Hashable, Any]:
    """The key columns ``labels`` of ``frame``, refused where one is differentiated: rows are
    grouped and paired by their values, which carry no gradient."""
    found = {}
    for label in labels:
        column = frame._column(label)
        if type(column) in HANDLES and type(column) is not Staged:
            msg = (
                f"Frame.{where}: the key column {label!r} is differentiated; use static key columns "
                f"[at {user_location()}]"
            )
            raise ArgumentError(msg)
        found[label] = _values(column, f"{where}'s pairing of rows")
    return found


def _scatter_rows(values: Any, rows: np.ndarray, total: int) -> Any:
    """``values`` at positions ``rows`` of a column of ``total`` rows, NaN elsewhere."""
    where = np.full(total, -1)
    where[rows] = np.arange(len(rows))
    padded = np.concatenate([values, np.full(1, np.nan)])
    return padded[np.where(where >= 0, where, len(rows))]


def _describe(value: Any) -> str:
    plain = now(unwrap(value))
    return f"{np.asarray(plain).dtype}[{np.shape(plain)[0]}]"


# -- pandas objects and Frames as structured values ---------------------------------------------


def _frame_labels(frame: Any) -> list[Hashable]:
    labels = list(frame.columns)
    if len(set(labels)) != len(labels):
        msg = f"a DataFrame with repeated column labels {labels} cannot be taken apart by label"
        raise StructureError(msg)
    return labels


def _frame_column(frame: Any, label: Hashable) -> Any:
    # A float column's values are a leaf to differentiate, any other column a static leaf (a
    # categorical keeps its categories' order: pandas' group order).
    return _column_values(frame[label])


def _frame_entries(frame: Any) -> tuple[list[Hashable], list[Any]]:
    labels = _frame_labels(frame)
    return labels, [_frame_column(frame, label) for label in labels]


def _is_data_frame(value: Any) -> bool:
    pd = sys.modules.get("pandas")  # not imported: no DataFrame can exist
    return pd is not None and isinstance(value, pd.DataFrame)


def _column_values(series: Any) -> Any:
    """A column's values: a numpy array for a numpy dtype, pandas' own array for one of its
    extension dtypes (a categorical, a nullable integer, a datetime with a time zone)."""
    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array


def _frame_build(template: Any, children: list[Any]) -> Any:
    """A DataFrame of ``children`` with the template's index (its columns left out where a
    child is None: a gradient's static entries; None where every child is); a
    :class:`Frame` where a child is traced."""
    labels = list(template.columns)
    if _staged_only(children):
        return Sealed(template, labels, children)  # a replayed function's argument: see nodegrad.ops.sealed
    if _has_handles(children):  # a gradient's static columns (None) left out
        return Frame({k: v for k, v in zip(labels, children, strict=True) if v is not None}, index=template.index)
    # A column read by row gathers only has a RowSparse gradient (sparse_rows=True): a
    # table's gradient is a table, so it is written out.
    data = {label: _dense(child) for label, child in zip(labels, children, strict=True) if child is not None}
    _check_columns(data)
    if not data and labels:
        return None  # a gradient of a table holding no floats: None, as for any such entry
    return _pandas().DataFrame(data, index=template.index, columns=[label for label in labels if label in data])


def _ours_labels(frame: Frame) -> list[Hashable]:
    return list(frame._columns)


def _ours_column(frame: Frame, label: Hashable) -> Any:
    return frame._columns[label]


def _series_labels(series: Any) -> list[Hashable]:
    return [series.name]


def _series_column(series: Any, label: Hashable) -> Any:
    return series.to_numpy()


def _series_build(template: Any, children: list[Any]) -> Any:
    (child,) = children
    if _staged_only(children):
        return Sealed(template, [template.name], children)  # a replayed function's argument
    if child is None or type(child) in HANDLES:
        return child  # inside a function, a Series is its values
    return _pandas().Series(_dense(child), index=template.index, name=template.name)


def _staged_only(children: list[Any]) -> bool:
    """Whether the values in ``children`` that stand for arrays are all staged by replay (so
    the pandas object is an argument the recording hands the function), and some are."""
    kinds = {type(c) for c in children if type(c) in HANDLES}
    return kinds == {Staged}


def _check_columns(data: dict[Hashable, Any]) -> None:
    """A DataFrame's columns are 1-d: what ``vmap`` stacks (one table per example) is not one."""
    for label, column in data.items():
        if np.ndim(column) != 1:
            msg = (
                f"a table's column {label!r} has shape {np.shape(column)}; under vmap each example's table is its "
                "own, and a DataFrame cannot stack them: return the columns, {c: f[c] for c in f.columns}"
            )
            raise ShapeError(msg)


def _dense(column: Any) -> Any:
    return column.todense() if type(column) is RowSparse else column


def _handler_for(cls: type) -> Handler | None:
    """The container handler of a pandas class: DataFrame and Series (and their
    subclasses); ``None`` (a leaf) for any other."""
    pd = importlib.import_module("pandas")
    if issubclass(cls, pd.DataFrame):
        handler = _map_handler(_frame_labels, _frame_column, _frame_build)
    elif issubclass(cls, pd.Series):
        handler = _map_handler(_series_labels, _series_column, _series_build, family=None)
    else:
        return None
    handler.meta = index_key  # the rows' labels: a replay's signature holds them
    return handler


def _map_handler(labels: Any, column: Any, build: Any, family: str | None = "table") -> Handler:
    """A handler taking values apart as maps of their columns (``labels(value)``,
    ``column(value, label)``); a DataFrame and a Frame are one family (one stands for the
    other where structures are matched)."""

    def get(value: Any, key: Hashable) -> Any:
        return column(value, key) if key in labels(value) else None  # a gradient has no static columns

    def entries(value: Any) -> tuple[list[Hashable], list[Any]]:
        found = labels(value)
        return found, [column(value, label) for label in found]

    handler = Handler("map", labels, get, build, None, entries)
    handler.family = family
    return handler


register_handler(Frame, _map_handler(_ours_labels, _ours_column, _frame_build))
PLUGINS.library_containers["pandas"] = _handler_for
