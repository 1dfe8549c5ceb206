"""A table inside a transform: :class:`Frame`, pandas' DataFrame over nodegrad's columns.

Inside a differentiated function (or a ``vmap``, or a ``replay``) a DataFrame argument is a
:class:`Frame`: a column is a :class:`~nodegrad.ops.tables.series.Series`, and pandas'
spelling for the steps of a pipeline gives pandas' answers. Which rows a step takes and in
which order is pandas' own choice on the plain values; the values moved are nodegrad's.
Where no column is differentiated, a method the Frame does not write out is pandas' own.
A Frame returned from a transform's function comes back a pandas DataFrame.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

import numpy as np

from nodegrad.engine.levels import FOREIGN
from nodegrad.engine.traced import DEFERS_TO
from nodegrad.errors import ArgumentError, ShapeError, StructureError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    as_index,
    column_values,
    decided,
    delegated,
    dtype_carrier,
    dtype_of,
    from_pandas,
    is_float,
    is_handle,
    length,
    no_gradient,
    pandas,
    row_positions,
    take_rows,
    to_pandas,
)
from nodegrad.ops.tables.frame_arithmetic import FrameArithmetic
from nodegrad.ops.tables.groupby import FrameGroupBy
from nodegrad.ops.tables.joins import merged
from nodegrad.ops.tables.series import Series
from nodegrad.ops.tables.spelling import Selection

__all__ = ["Frame"]


class Frame(Selection, FrameArithmetic):
    """A table of columns inside a transform: what a pandas DataFrame argument is there,
    with pandas' spelling and pandas' answers for the steps of a pipeline.

    ``f["x"]`` and ``f.x`` are a :class:`~nodegrad.Series` (traced where differentiated);
    ``f[["x", "y"]]``, masks, ``loc``/``iloc`` in their forms, ``assign`` (callables
    chained as pandas chains them), ``f["z"] = ...``, arithmetic aligned by labels,
    comparisons, numpy's ufuncs, reductions, ``groupby``, ``merge``, ``sort_values``,
    ``to_numpy``. A method a Frame cannot run on differentiated columns raises
    :class:`~nodegrad.errors.NoGradientError` naming it. Returned from a transform's
    function a Frame is a pandas DataFrame again.

    Parameters
    ----------
    data : mapping, DataFrame or Frame
        Column label -> values, one entry per row (arrays, traced values, Series, lists).
    index : pandas Index or sequence, optional
        The row labels; a RangeIndex by default (a Series' labels where one is given).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import nodegrad as ng
    >>> sales = pd.DataFrame({"price": [2.0, 3.0, 5.0], "units": [1, 4, 2]}, index=["a", "b", "c"])
    >>> def revenue(f):  # f is an ng.Frame inside
    ...     return (f["price"] * f["units"]).sum()
    >>> ng.grad(revenue)(sales)  # a DataFrame: the same index, the float columns
       price
    a    1.0
    b    4.0
    c    2.0
    """

    __slots__ = ("_columns", "_index", "_label_dtype")
    __pandas_priority__ = 5000  # pandas' own operators give way: dataframe + f is ours

    def __init__(self, data: Mapping[Hashable, Any] | Frame | Any = None, index: Any = None) -> None:
        pd = pandas()
        data = {} if data is None else data
        if isinstance(data, Frame):
            index = data._index if index is None else index
            data = dict(data._columns)
        elif isinstance(data, pd.DataFrame):
            index = data.index if index is None else index
            data = {label: column_values(data[label]) for label in unique_labels(data)}
        elif index is None:
            index = next((v.index for v in data.values() if isinstance(v, Series | pd.Series)), None)
        columns = {}
        for label, value in data.items():
            if isinstance(value, Series | pd.Series):
                value = _on_rows(from_pandas(value), index)
            elif isinstance(value, list | tuple):
                value = np.asarray(value)
            columns[label] = value
        lengths = {length(v) for v in columns.values()}
        if len(lengths) > 1:
            msg = f"Frame: the columns have different lengths {sorted(lengths)} [at {user_location()}]"
            raise ShapeError(msg)
        rows = lengths.pop() if lengths else (0 if index is None else len(index))
        self._index = pd.RangeIndex(rows) if index is None else as_index(index)
        if len(self._index) != rows:
            msg = f"Frame: an index of {len(self._index)} labels for {rows} rows [at {user_location()}]"
            raise ShapeError(msg)
        self._columns = columns
        self._label_dtype = None  # the column labels' dtype where no label says it (no columns)

    # -- what it is ---------------------------------------------------------------------------
    @property
    def index(self) -> Any:
        """The row labels (a pandas Index)."""
        return self._index

    @property
    def columns(self) -> Any:
        """The column labels (a pandas Index), in order."""
        if not self._columns and self._label_dtype is not None:
            return pandas().Index([], dtype=self._label_dtype)
        return pandas().Index(list(self._columns))  # labels that are all tuples: a MultiIndex, as pandas

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return (self._rows, len(self._columns))

    @property
    def dtypes(self) -> Any:
        """Each column's dtype (a pandas Series)."""
        return pandas().Series({label: Series(v).dtype for label, v in self._columns.items()}, dtype=object)

    @property
    def empty(self) -> bool:
        """Whether it has no rows or no columns."""
        return not self._rows or not self._columns

    @property
    def size(self) -> int:
        """rows x columns."""
        return self._rows * len(self._columns)

    ndim = 2

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._columns)

    def __contains__(self, label: object) -> bool:
        return label in self._columns

    def __bool__(self) -> bool:
        msg = f"the truth value of a Frame is ambiguous: use .empty [at {user_location()}]"
        raise ArgumentError(msg)

    def __repr__(self) -> str:
        if self._plain():
            return repr(self._pandas())
        shown = ", ".join(f"{label!r}: {Series(v).dtype}" for label, v in self._columns.items())
        return f"Frame({self._rows} rows; {shown})"

    def keys(self) -> Any:
        """The column labels."""
        return self.columns

    def items(self) -> Iterator[tuple[Hashable, Series]]:
        """(label, column) pairs, in order."""
        return ((label, self[label]) for label in self._columns)

    # -- pandas where no column is differentiated ---------------------------------------------
    def _plain(self) -> bool:
        return not any(is_handle(v) for v in self._columns.values())

    def _pandas(self) -> Any:
        """This table as a pandas DataFrame (its columns plain)."""
        pd = pandas()
        columns = {label: Series(v, index=self._index)._pandas() for label, v in self._columns.items()}
        return (
            pd.DataFrame(columns, index=self._index, columns=self.columns)
            if columns
            else pd.DataFrame(index=self._index)
        )

    def _handles(self) -> Any:
        return list(self._columns.values())

    def _pandas_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return delegated(self, "Frame", name)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        columns = object.__getattribute__(self, "_columns")
        if name in columns:
            return self[name]
        if name.startswith("_") or not hasattr(pandas().DataFrame, name):
            raise AttributeError(f"'Frame' object has no attribute {name!r}")
        return delegated(self, "Frame", name, "take the columns (f['x'], f.to_numpy()) and use their arithmetic")

    # -- columns --------------------------------------------------------------------------------
    def _column(self, label: Any) -> Any:
        try:
            return self._columns[label]
        except (KeyError, TypeError):
            msg = f"Frame: no column {label!r}; the columns are {list(self._columns)} [at {user_location()}]"
            raise StructureError(msg) from None

    def _with_columns(self, columns: dict[Hashable, Any], index: Any = None) -> Frame:
        made = Frame(columns, index=self._index if index is None else index)
        if not columns:  # no column left: pandas keeps the labels' dtype (df[[]].columns is a str Index)
            made._label_dtype = self.columns.dtype
        return made

    def __getitem__(self, key: Any) -> Any:
        if callable(key):
            key = key(self)
        if isinstance(key, Hashable) and not isinstance(key, tuple | slice) and key in self._columns:
            return Series(self._columns[key], index=self._index, name=key)
        if isinstance(key, list | pandas().Index) and all(k in self._columns for k in key) and _not_mask(key):
            return self._with_columns({label: self._columns[label] for label in key})
        if isinstance(key, Frame):
            return self.where(key)
        if isinstance(key, slice) or _is_mask(key):
            choose = lambda k: row_positions(self._index, to_pandas(k, "a row mask"), "getitem")
            return self._rows_at(*decided(key, choose, "a row mask"))
        if isinstance(key, list):
            missing = [k for k in key if k not in self._columns]
            msg = f"Frame: no columns {missing}; the columns are {list(self._columns)} [at {user_location()}]"
            raise StructureError(msg)
        return Series(self._column(key), index=self._index, name=key)

    def __setitem__(self, label: Hashable, value: Any) -> None:
        self._columns = {**self._columns, label: self._as_column(value)}

    def _as_column(self, value: Any) -> Any:
        """A value assigned to a column as pandas places it: a Series by its labels, a
        number repeated, an array one entry per row."""
        value = from_pandas(value)
        if isinstance(value, Series):
            return _on_rows(value, self._index)
        if isinstance(value, list | tuple):
            value = np.asarray(value)
        if np.ndim(dtype_carrier(value)) == 0:
            return np.full(self._rows, value) if not is_handle(value) else value * np.ones(self._rows)
        if length(value) != self._rows:
            msg = f"Frame: a column of {length(value)} values for {self._rows} rows [at {user_location()}]"
            raise ShapeError(msg)
        return value

    def assign(self, **columns: Any) -> Frame:
        """A new Frame with ``columns`` added (or replaced): Series (placed by label),
        arrays, numbers, or functions of the Frame so far (a later one sees the columns an
        earlier one made, as in ``DataFrame.assign``)."""
        made = Frame(self)
        for label, value in columns.items():
            made[label] = value(made) if callable(value) else value
        return made

    def drop(
        self, labels: Any = None, *, columns: Any = None, index: Any = None, axis: Any = 0, **kwargs: Any
    ) -> Frame:
        """The table without the columns ``columns`` (or the rows ``index``)."""
        if labels is not None:
            columns, index = (labels, None) if axis in (1, "columns") else (None, labels)
        made = self
        if columns is not None:
            names = [columns] if not isinstance(columns, list | tuple) else list(columns)
            for name in names:
                self._column(name)
            made = made._with_columns({k: v for k, v in made._columns.items() if k not in names})
        if index is not None:
            kept = pandas().Series(np.arange(made._rows), index=made._index).drop(index=index, **kwargs)
            made = made._rows_at(kept.to_numpy(), kept.index)
        return made

    def rename(self, mapper: Any = None, *, columns: Any = None, index: Any = None, **kwargs: Any) -> Frame:
        """Columns (``columns=``, or ``mapper``) or row labels (``index=``) renamed."""
        columns = mapper if columns is None and index is None else columns
        made = self
        if columns is not None:
            rename = columns if callable(columns) else (lambda k: columns.get(k, k))
            made = made._with_columns({rename(k): v for k, v in made._columns.items()})
        if index is not None:
            labels = pandas().Series(np.arange(made._rows), index=made._index).rename(index, **kwargs).index
            made = made._with_columns(made._columns, labels)
        return made

    def set_index(self, keys: Any, drop: bool = True, append: bool = False, **kwargs: Any) -> Frame:
        """Static column(s) as the row labels."""
        names = [keys] if not isinstance(keys, list) else list(keys)
        probe = (
            pandas()
            .DataFrame({k: to_pandas(self[k], "set_index's labels") for k in names}, index=self._index)
            .set_index(names, append=append, **kwargs)
        )
        kept = {k: v for k, v in self._columns.items() if not drop or k not in names}
        return self._with_columns(kept, probe.index)

    def reset_index(self, level: Any = None, drop: bool = False, **kwargs: Any) -> Frame:
        """The row labels as a RangeIndex, kept as columns unless ``drop``."""
        probe = pandas().DataFrame({"__rows": np.arange(self._rows)}, index=self._index)
        reset = probe.reset_index(level=level, drop=drop, **kwargs)
        made = {k: column_values(reset[k]) for k in reset.columns if k != "__rows"}
        return Frame({**made, **self._columns}, index=reset.index)

    def copy(self, deep: bool = True) -> Frame:
        """A Frame of the same columns (their values are never written in place)."""
        return Frame(self)

    def pipe(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``."""
        return func(self, *args, **kwargs)

    # -- rows -----------------------------------------------------------------------------------
    def _indexer(self, how: str) -> _Indexer:
        return _Indexer(self, how)

    def _rows_at(self, positions: Any, index: Any) -> Frame:
        """The rows at ``positions`` (an integer array; -1 gives a row of NaN), labelled ``index``."""
        return Frame({label: take_rows(v, positions) for label, v in self._columns.items()}, index=index)

    def _row(self, position: int, labels: list[Hashable]) -> Any:
        """One row as pandas gives it: a Series indexed by the column labels."""
        values = [self._columns[label][position] for label in labels]
        if all(not is_handle(v) for v in values):
            return from_pandas(self[labels]._pandas().iloc[position])
        for label in labels:
            if not is_float(self._columns[label]) and Series(self._columns[label]).dtype.kind not in "biu":
                raise no_gradient("Frame", "loc", f"a row of mixed columns ({label!r} is not numeric)")
        return Series(np.stack(values), index=pandas().Index(labels, tupleize_cols=False), name=self._index[position])

    def sort_values(self, by: Any, *, ascending: Any = True, kind: str = "quicksort", **kwargs: Any) -> Frame:
        """The rows in the order of the column(s) ``by``, by pandas' own sort of their plain
        values (the caller's ``kind``, ``na_position``, ``ignore_index``); the order carries
        no gradient, the values moved do."""
        labels = [by] if not isinstance(by, list) else list(by)
        renumber = kwargs.pop("ignore_index", False)

        def choose(keys: dict[Hashable, Any]) -> Any:
            plain = {label: Series(v)._plain_copy("sort_values' order") for label, v in keys.items()}
            probe = pandas().DataFrame(plain).reset_index(drop=True)
            return probe.sort_values(labels, ascending=ascending, kind=kind, **kwargs).index.to_numpy()

        positions = decided({label: self._column(label) for label in labels}, choose, "sort_values' order")
        index = pandas().RangeIndex(len(positions)) if renumber else self._index[positions]
        return self._rows_at(positions, index)

    def sort_index(self, **kwargs: Any) -> Frame:
        """The rows in the order of their labels, by pandas' own sort."""
        order = pandas().Series(np.arange(self._rows), index=self._index).sort_index(**kwargs)
        return self._rows_at(order.to_numpy(), order.index)

    def nlargest(self, n: int, columns: Any, keep: str = "first") -> Frame:
        """The ``n`` rows with the largest values of ``columns``, in pandas' order."""
        return self._chosen("nlargest", n, columns, keep)

    def nsmallest(self, n: int, columns: Any, keep: str = "first") -> Frame:
        """The ``n`` rows with the smallest values of ``columns``, in pandas' order."""
        return self._chosen("nsmallest", n, columns, keep)

    def dropna(self, *, subset: Any = None, how: str = "any", **kwargs: Any) -> Frame:
        """The rows with no missing value (in ``subset``), as pandas drops them."""
        return self._chosen("dropna", subset=subset, how=how, **kwargs)

    def drop_duplicates(self, subset: Any = None, **kwargs: Any) -> Frame:
        """The rows pandas keeps of repeated ones (compared on their plain values)."""
        return self._chosen("drop_duplicates", subset, **kwargs)

    def _chosen(self, name: str, *args: Any, **kwargs: Any) -> Frame:
        """The rows pandas' method ``name`` keeps, run on the plain values labelled by
        position, in its order."""
        renumber = kwargs.pop("ignore_index", False)

        def choose(columns: dict[Hashable, Any]) -> Any:
            plain = {label: Series(v)._plain_copy(name).to_numpy() for label, v in columns.items()}
            probe = pandas().DataFrame(plain, index=pandas().RangeIndex(self._rows), columns=self.columns)
            return getattr(probe, name)(*args, **kwargs).index.to_numpy()

        positions = decided(dict(self._columns), choose, f"Frame.{name}")
        index = pandas().RangeIndex(len(positions)) if renumber else self._index[positions]
        return self._rows_at(positions, index)

    # -- the table as numbers ---------------------------------------------------------------------
    def select_dtypes(self, include: Any = None, exclude: Any = None) -> Frame:
        """The columns whose dtypes ``include`` names (and ``exclude`` does not), as pandas picks them."""
        probe = pandas().DataFrame(
            {label: pandas().Series([], dtype=Series(v).dtype) for label, v in self._columns.items()}
        )
        picked = probe.select_dtypes(include=include, exclude=exclude).columns
        return self._with_columns({label: self._columns[label] for label in picked})

    def to_numpy(self, dtype: Any = None, copy: bool = False, na_value: Any = None) -> Any:
        """The columns side by side: a (rows, columns) array, traced where a column is."""
        if self._plain():
            kwargs = {} if na_value is None else {"na_value": na_value}
            return self._pandas().to_numpy(dtype=dtype, copy=copy, **kwargs)
        values = [Series(v).to_numpy(na_value=na_value) for v in self._columns.values()]
        for label, value in self._columns.items():
            if Series(value).dtype.kind not in "biufc":
                raise no_gradient("Frame", "to_numpy", f"the column {label!r} is not numeric; select numeric columns")
        found = np.stack(values, axis=1) if values else np.zeros((self._rows, 0))
        return found if dtype is None else found.astype(dtype)

    @property
    def values(self) -> Any:
        """``to_numpy()``."""
        return self.to_numpy()

    def groupby(
        self,
        by: Any = None,
        *,
        level: Any = None,
        as_index: bool = True,
        sort: bool = True,
        dropna: bool = True,
        observed: bool = True,
        **kwargs: Any,
    ) -> FrameGroupBy:
        """The rows grouped by the static column(s) ``by`` (or index ``level``), with
        pandas' own groups and order (``sort``, ``dropna``, ``observed``); aggregate with
        ``sum``, ``mean``, ``min``, ``max``, ``std``, ``var``, ``prod``, ``count``,
        ``size``, ``first``, ``last``, ``agg``, or spread back over the rows with
        ``transform``; ``as_index=False`` puts the keys in columns."""
        options = {"sort": sort, "dropna": dropna, "observed": observed, **kwargs}
        return FrameGroupBy(self, by, level, as_index, options)

    def merge(self, right: Any, how: str = "inner", on: Any = None, **kwargs: Any) -> Frame:
        """This table joined with ``right`` (a Frame or a DataFrame) as pandas joins them
        (every ``how``, ``on``, ``left_on``/``right_on``, ``left_index``/``right_index``,
        ``suffixes``, ``sort``): pandas pairs the rows on the static keys, and each side's
        differentiated columns are gathered (NaN where a row has no partner)."""
        return merged(self, from_pandas(right), how=how, on=on, **kwargs)

    def join(
        self, other: Any, on: Any = None, how: str = "left", lsuffix: str = "", rsuffix: str = "", **kwargs: Any
    ) -> Frame:
        """``merge`` on the row labels, as ``DataFrame.join``."""
        if on is not None:
            return self.merge(other, how=how, left_on=on, right_index=True, suffixes=(lsuffix, rsuffix), **kwargs)
        return self.merge(other, how=how, left_index=True, right_index=True, suffixes=(lsuffix, rsuffix), **kwargs)


class _Indexer:
    """``f.loc``, ``f.iloc``, ``f.at``, ``f.iat``: pandas' own choice of rows and columns."""

    __slots__ = ("_frame", "_how")

    def __init__(self, frame: Frame, how: str) -> None:
        self._frame = frame
        self._how = how

    def __getitem__(self, key: Any) -> Any:
        frame = self._frame
        rows, columns = (
            key if isinstance(key, tuple) and len(key) == 2 and not _is_row_label(frame, key) else (key, slice(None))
        )
        rows = rows(frame) if callable(rows) else rows
        columns = columns(frame) if callable(columns) else columns
        how = self._how
        choose = lambda k: row_positions(frame._index, to_pandas(k, "a row key"), how)
        positions, index = decided(rows, choose, "a row key")
        labels = list(frame._columns)
        chosen = pandas().Series(np.arange(len(labels)), index=pandas().Index(labels, tupleize_cols=False))
        chosen = getattr(chosen, self._how)[to_pandas(columns, "a column key")]
        if not isinstance(chosen, pandas().Series):  # one column
            label = labels[int(chosen)]
            values = frame._columns[label]
            return values[positions] if index is None else Series(take_rows(values, positions), index=index, name=label)
        picked = [labels[k] for k in chosen.to_numpy()]
        if index is None:
            return frame._row(positions, picked)
        made = Frame({label: take_rows(frame._columns[label], positions) for label in picked}, index=index)
        made._label_dtype = frame.columns.dtype
        return made


def _is_row_label(frame: Frame, key: tuple[Any, ...]) -> bool:
    """Whether a tuple key is one row label of a MultiIndex (not ``[rows, columns]``)."""
    try:
        return frame._index.nlevels > 1 and key in frame._index and not any(k in frame._columns for k in key[1:2])
    except TypeError:  # a list or a slice in it: rows and columns
        return False


def unique_labels(table: Any) -> list[Hashable]:
    """A DataFrame's column labels, refused where one repeats (a column is found by its label)."""
    labels = list(table.columns)
    if len(set(labels)) != len(labels):
        msg = f"a DataFrame with repeated column labels {labels} cannot be taken apart by label"
        raise StructureError(msg)
    return labels


def _on_rows(series: Series, index: Any) -> Any:
    """A Series' values placed on the rows ``index`` by label, as pandas places a Series
    assigned to a column (NaN for a label it lacks)."""
    if index is None or series._index.equals(index):
        return series._values
    if not series._index.is_unique:
        msg = f"a Series with repeated row labels cannot be placed on a table's rows by label [at {user_location()}]"
        raise StructureError(msg)
    return take_rows(series._values, series._index.get_indexer(index))


def _is_mask(key: Any) -> bool:
    if isinstance(key, Series):
        return key.dtype == np.bool_
    if isinstance(key, list):
        return bool(key) and all(isinstance(k, bool | np.bool_) for k in key)
    if is_handle(key):
        return dtype_of(key) == np.bool_
    return (isinstance(key, np.ndarray) and key.dtype == np.bool_) or _is_pandas_mask(key)


def _is_pandas_mask(key: Any) -> bool:
    pd = pandas()
    return isinstance(key, pd.Series | pd.Index) and key.dtype == np.bool_


def _not_mask(key: Any) -> bool:
    return not (isinstance(key, list) and key and all(isinstance(k, bool | np.bool_) for k in key))


MAKERS["Frame"] = Frame


def _itself(value: Any) -> Any:
    return value


DEFERS_TO[Frame] = _itself  # a traced value met with one gives way to its operators
FOREIGN.add(Frame)  # and a staged one
