"""What a column computes: reductions, running values, conditions, and its rows.

The methods of :class:`~nodegrad.ops.tables.series.Series` beyond what it is and its
arithmetic, as a base class it builds on. Each runs pandas' own method where the values
are plain, and nodegrad's numpy code where they are differentiated; which rows a step
keeps, and in which order, is pandas' own choice on the plain values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from nodegrad.engine.levels import PER_EXAMPLE
from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    aligned,
    as_index,
    decided,
    from_pandas,
    holds_handles,
    missing_apart,
    no_gradient,
    pandas,
    plain_values,
    row_positions,
    take_rows,
    to_pandas,
    to_values,
)
from nodegrad.ops.tables.groupby import series_groupby
from nodegrad.ops.tables.reductions import REDUCTIONS, cumulative, reduce_values, windows
from nodegrad.ops.tables.spelling import Selection

__all__ = ["Rolling", "SeriesMethods"]


class SeriesMethods(Selection):
    """The methods of a column; :class:`~nodegrad.ops.tables.series.Series` builds on it (its
    ``_values``, ``_index``, ``_name``, ``_plain``, ``_pandas``, ``_like``, ``_pandas_call``)."""

    __slots__ = ()
    _values: Any
    _index: Any
    _name: Hashable

    def __len__(self) -> int:
        return len(self._index)

    def _plain(self) -> bool:
        raise NotImplementedError

    def _pandas(self) -> Any:
        raise NotImplementedError

    def _like(self, values: Any, index: Any = None, name: Any = ...) -> Any:
        raise NotImplementedError

    def _pandas_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _each_example(self) -> bool:
        raise NotImplementedError

    # -- reductions and running values ----------------------------------------------------------
    def _reduce(self, name: str, skipna: bool = True, **options: Any) -> Any:
        if self._plain():
            return getattr(self._pandas(), name)(skipna=skipna, **options)
        return reduce_values(name, self._values, skipna, **options)

    def sum(self, axis: Any = None, skipna: bool = True, min_count: int = 0, **kwargs: Any) -> Any:
        """The sum of the values, NaN skipped (NaN where fewer than ``min_count`` are present)."""
        return self._reduce("sum", skipna, min_count=min_count)

    def prod(self, axis: Any = None, skipna: bool = True, min_count: int = 0, **kwargs: Any) -> Any:
        """The product of the values, NaN skipped."""
        return self._reduce("prod", skipna, min_count=min_count)

    def mean(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Any:
        """The mean of the values present."""
        return self._reduce("mean", skipna)

    def std(self, axis: Any = None, skipna: bool = True, ddof: int = 1, **kwargs: Any) -> Any:
        """The standard deviation of the values present (``ddof=1`` as pandas)."""
        return self._reduce("std", skipna, ddof=ddof)

    def var(self, axis: Any = None, skipna: bool = True, ddof: int = 1, **kwargs: Any) -> Any:
        """The variance of the values present (``ddof=1`` as pandas)."""
        return self._reduce("var", skipna, ddof=ddof)

    def min(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Any:
        """The smallest value present."""
        return self._reduce("min", skipna)

    def max(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Any:
        """The largest value present."""
        return self._reduce("max", skipna)

    def count(self) -> Any:
        """The number of values present (not NaN)."""
        if self._plain():
            return self._pandas().count()
        return np.sum(~np.isnan(self._values)).astype(np.int64)

    def agg(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func`` by name (``"sum"``, ``"mean"``, ...) or a function of the Series."""
        if isinstance(func, str):
            return getattr(self, func)(*args, **kwargs)
        if callable(func):
            return func(self, *args, **kwargs)
        return self._pandas_call("agg", func, *args, **kwargs)

    aggregate = agg

    def cumsum(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Any:
        """The running sum, NaN where a value is NaN, skipped after."""
        return self._running("cumsum", skipna)

    def cumprod(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Any:
        """The running product, NaN where a value is NaN, skipped after."""
        return self._running("cumprod", skipna)

    def _running(self, name: str, skipna: bool) -> Any:
        if self._plain():
            return from_pandas(getattr(self._pandas(), name)(skipna=skipna))
        return self._like(cumulative(name, self._values, skipna))

    def groupby(
        self, by: Any = None, *, level: Any = None, sort: bool = True, dropna: bool = True, **kwargs: Any
    ) -> Any:
        """The values grouped by ``by`` (a Series or an array of static keys, aligned by label,
        or index levels), with pandas' own groups; aggregate as ``frame.groupby(k)["x"]``."""
        return series_groupby(self, by, level, {"sort": sort, "dropna": dropna, **kwargs})

    def rolling(self, window: int, min_periods: int | None = None, center: bool = False, **kwargs: Any) -> Rolling:
        """Windows of ``window`` rows, aggregated with ``.sum()``, ``.mean()``, ``.std()``,
        ``.var()``, ``.min()``, ``.max()`` or ``.count()`` as pandas' rolling windows."""
        if kwargs and not self._plain():
            raise no_gradient("Series", "rolling", f"the options {sorted(kwargs)}", self._values)
        return Rolling(self, window, min_periods, center, kwargs)

    # -- values ---------------------------------------------------------------------------------
    def shift(self, periods: int = 1, fill_value: Any = None, **kwargs: Any) -> Any:
        """The values moved down ``periods`` rows (up where negative), NaN (or
        ``fill_value``) where none arrives."""
        if self._plain() or kwargs or self._each_example():
            return self._pandas_call("shift", periods, fill_value=fill_value, **kwargs)
        moved = np.arange(len(self)) - periods
        moved = np.where((moved >= 0) & (moved < len(self)), moved, -1)
        values = take_rows(self._values, moved)
        if fill_value is not None:
            values = np.where(moved < 0, fill_value, values)
        return self._like(values)

    def diff(self, periods: int = 1) -> Any:
        """Each value minus the one ``periods`` rows before."""
        if self._plain() or self._each_example():
            return self._pandas_call("diff", periods)
        return self._like(missing_apart(np.subtract, self._values, self.shift(periods)._values))

    def abs(self) -> Any:
        """The absolute values."""
        return self._like(missing_apart(np.abs, self._values)) if not self._plain() else self._pandas_call("abs")

    def round(self, decimals: int = 0, *args: Any, **kwargs: Any) -> Any:
        """The values rounded (a step function: no gradient flows through it)."""
        return self._like(np.round(self._values, decimals))

    def clip(self, lower: Any = None, upper: Any = None, **kwargs: Any) -> Any:
        """The values limited to ``[lower, upper]`` (NaN stays NaN)."""
        if (self._plain() or self._each_example()) and not holds_handles([lower, upper]):
            return self._pandas_call("clip", lower, upper, **kwargs)
        low = -np.inf if lower is None else to_values(self._aligned_operand(lower, "clip"))
        high = np.inf if upper is None else to_values(self._aligned_operand(upper, "clip"))
        return self._like(np.clip(self._values, low, high))

    def where(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """The values where ``cond`` holds, ``other`` elsewhere (NaN by default)."""
        if callable(cond):
            cond = cond(self)
        if callable(other):
            other = other(self)
        if (self._plain() or self._each_example()) and not holds_handles(other):
            return self._pandas_call("where", cond, other, **kwargs)
        mask = self._condition(cond)
        return self._like(np.where(mask, self._values, to_values(self._aligned_operand(other, "where"))))

    def mask(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """``other`` (NaN by default) where ``cond`` holds, the values elsewhere."""
        if callable(cond):
            cond = cond(self)
        return self.where(~self._condition(cond), other, **kwargs)

    def fillna(self, value: Any = None, **kwargs: Any) -> Any:
        """NaN entries replaced by ``value``."""
        if self._plain() or kwargs or value is None or (self._each_example() and not holds_handles(value)):
            return self._pandas_call("fillna", value, **kwargs)
        return self._like(
            np.where(np.isnan(self._values), to_values(self._aligned_operand(value, "fillna")), self._values)
        )

    def isna(self) -> Any:
        """Whether each value is missing (NaN)."""
        if self._plain() or self._each_example():
            return self._pandas_call("isna")
        return self._like(np.isnan(self._values))

    isnull = isna

    def notna(self) -> Any:
        """Whether each value is present (not NaN)."""
        if self._plain() or self._each_example():
            return self._pandas_call("notna")
        return self._like(~np.isnan(self._values))

    notnull = notna

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        """The values as ``dtype``: a float dtype keeps the gradient; any other is a step
        (ints, strings, categories) and reads the plain values."""
        if self._plain() or self._each_example():
            return self._pandas_call("astype", dtype, **kwargs)
        kind = np.dtype(dtype).kind if not isinstance(dtype, str) or dtype in np.sctypeDict else "O"
        if kind in "fc":
            return self._like(self._values.astype(dtype))
        return from_pandas(self._plain_copy("Series.astype").astype(dtype, **kwargs))

    def copy(self, deep: bool = True) -> Any:
        """This Series (its values are never written in place)."""
        return self._like(self._values)

    def pipe(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``."""
        return func(self, *args, **kwargs)

    def apply(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func`` of each value: pandas' own for plain values; refused on differentiated
        values (call the function on the Series itself: ``np.exp(s)``, ``f(s)``)."""
        if not self._plain():
            raise no_gradient(
                "Series", "apply", "call the function on the Series itself, np.exp(s) or f(s)", self._values
            )
        return self._pandas_call("apply", func, *args, **kwargs)

    def map(self, arg: Any, na_action: Any = None) -> Any:
        """Each value mapped through a dict, a Series or a function (plain values only)."""
        if not self._plain():
            raise no_gradient("Series", "map", "map the static key column, then index or gather by it", self._values)
        return self._pandas_call("map", arg, na_action=na_action)

    def to_frame(self, name: Hashable = None) -> Any:
        """A one-column table of this Series."""
        label = name if name is not None else (0 if self._name is None else self._name)
        return MAKERS["Frame"]({label: self._values}, index=self._index)

    def rename(self, index: Any = None, **kwargs: Any) -> Any:
        """A new name (a hashable), or new row labels (a mapping or a function)."""
        if index is None or (isinstance(index, Hashable) and not callable(index)):
            return self._like(self._values, name=index)
        labels = pandas().Series(np.arange(len(self)), index=self._index).rename(index, **kwargs).index
        return self._like(self._values, index=labels)

    def reset_index(self, level: Any = None, drop: bool = False, name: Any = None, **kwargs: Any) -> Any:
        """The row labels as a RangeIndex (``drop=True``), or as columns of a table beside the values."""
        probe = pandas().Series(np.arange(len(self)), index=self._index, name="__rows")
        if drop:
            reset = probe.reset_index(level=level, drop=True, **kwargs)
            return self._like(self._values, index=reset.index)
        reset = probe.reset_index(level=level, **kwargs)
        label = name if name is not None else (0 if self._name is None else self._name)
        table = MAKERS["Frame"](reset.drop(columns="__rows"))
        table[label] = self._like(self._values, index=table.index)
        return table

    def set_axis(self, labels: Any, **kwargs: Any) -> Any:
        """The same values with the row labels ``labels``."""
        return self._like(self._values, index=as_index(labels))

    # -- rows -----------------------------------------------------------------------------------
    def _indexer(self, how: str) -> _Indexer:
        return _Indexer(self, how)

    def _rows(self, positions: Any, index: Any) -> Any:
        return self._like(take_rows(self._values, positions), index=index)

    def __getitem__(self, key: Any) -> Any:
        if callable(key):
            key = key(self)
        choose = lambda k: row_positions(self._index, to_pandas(k, "a row key"), "getitem", "Series")
        positions, index = decided(key, choose, "a row key")
        return self._values[positions] if index is None else self._rows(positions, index)

    def _ordered(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The rows pandas' method ``name`` keeps, in its order: pandas runs it on the plain
        values (labelled by position), and the values are moved as it moved them."""
        renumber = kwargs.pop("ignore_index", False)

        def choose(values: Any) -> Any:
            probe = pandas().Series(plain_values(values, f"Series.{name}"), index=pandas().RangeIndex(len(self)))
            return getattr(probe, name)(*args, **kwargs).index.to_numpy()

        positions = decided(self._values, choose, f"Series.{name}")
        return self._rows(positions, pandas().RangeIndex(len(positions)) if renumber else self._index[positions])

    def sort_values(
        self, *, ascending: bool = True, kind: str = "quicksort", na_position: str = "last", **kwargs: Any
    ) -> Any:
        """The rows in the order of their values, by pandas' own sort (the caller's ``kind``)."""
        if self._plain():
            return self._pandas_call("sort_values", ascending=ascending, kind=kind, na_position=na_position, **kwargs)
        return self._ordered("sort_values", ascending=ascending, kind=kind, na_position=na_position, **kwargs)

    def sort_index(self, **kwargs: Any) -> Any:
        """The rows in the order of their labels, by pandas' own sort."""
        ordered = pandas().Series(np.arange(len(self)), index=self._index).sort_index(**kwargs)
        return self._rows(ordered.to_numpy(), ordered.index)

    def nlargest(self, n: int = 5, keep: str = "first") -> Any:
        """The ``n`` largest values, in pandas' order."""
        return self._pandas_call("nlargest", n, keep) if self._plain() else self._ordered("nlargest", n, keep)

    def nsmallest(self, n: int = 5, keep: str = "first") -> Any:
        """The ``n`` smallest values, in pandas' order."""
        return self._pandas_call("nsmallest", n, keep) if self._plain() else self._ordered("nsmallest", n, keep)

    def dropna(self, **kwargs: Any) -> Any:
        """The rows whose value is present."""
        return self._pandas_call("dropna", **kwargs) if self._plain() else self._ordered("dropna", **kwargs)

    # -- helpers ----------------------------------------------------------------------------------
    def _condition(self, cond: Any) -> Any:
        cond = from_pandas(cond)
        if isinstance(cond, MAKERS["Series"]):
            pairing = aligned(self._index, cond._index, join="left")
            if pairing is None:
                cond = cond._values
            else:  # placed by label, as pandas places it: False for a label the condition lacks
                at = pairing[1]
                cond = np.where(at >= 0, cond._values[np.maximum(at, 0)], False)
        cond = np.asarray(cond) if isinstance(cond, list) else cond
        return cond if type(cond) in PER_EXAMPLE else plain_values(cond, "a condition")  # (a batched mask: per example)

    def _aligned_operand(self, other: Any, where: str) -> Any:
        other = from_pandas(other)
        if isinstance(other, MAKERS["Series"]) and not other._index.equals(self._index):
            pairing = aligned(self._index, other._index, join="left")
            assert pairing is not None
            return take_rows(other._values, pairing[1])
        return other

    def _plain_copy(self, what: str) -> Any:
        """A pandas Series of the plain values, for a choice with no gradient (``what``)."""
        return pandas().Series(plain_values(self._values, what), index=self._index, name=self._name)


class _Indexer:
    """``s.loc``, ``s.iloc``, ``s.at``, ``s.iat``: pandas' own choice of rows."""

    __slots__ = ("_how", "_series")

    def __init__(self, series: Any, how: str) -> None:
        self._series = series
        self._how = how

    def __getitem__(self, key: Any) -> Any:
        series = self._series
        if callable(key):
            key = key(series)
        how = self._how
        choose = lambda k: row_positions(series._index, to_pandas(k, "a row key"), how, "Series")
        positions, index = decided(key, choose, "a row key")
        return series._values[positions] if index is None else series._rows(positions, index)


class Rolling:
    """``s.rolling(window)``: each row's window of the ``window`` rows up to it (centred
    with ``center=True``), aggregated as pandas aggregates it (NaN skipped; NaN where
    fewer than ``min_periods`` values are present, ``window`` by default)."""

    __slots__ = ("_center", "_min_periods", "_options", "_series", "_window")

    def __init__(
        self, series: Any, window: int, min_periods: int | None, center: bool, options: dict[str, Any]
    ) -> None:
        if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 0:
            msg = f"Series.rolling: window must be a non-negative int, got {window!r} [at {user_location()}]"
            raise ArgumentError(msg)
        self._series = series
        self._window = int(window)
        self._min_periods = self._window if min_periods is None else int(min_periods)
        self._center = center
        self._options = options

    def _aggregate(self, name: str, **kwargs: Any) -> Any:
        series = self._series
        if series._plain():
            rolling = series._pandas().rolling(self._window, min_periods=self._min_periods, center=self._center)
            return from_pandas(getattr(rolling, name)(**kwargs))
        values = windows(series._values, self._window, self._center)
        return series._like(reduce_values(name, values, True, axis=1, min_count=self._min_periods, **kwargs))

    def sum(self) -> Any:
        """Each window's sum."""
        return self._aggregate("sum")

    def mean(self) -> Any:
        """Each window's mean."""
        return self._aggregate("mean")

    def std(self, ddof: int = 1) -> Any:
        """Each window's standard deviation."""
        return self._aggregate("std", ddof=ddof)

    def var(self, ddof: int = 1) -> Any:
        """Each window's variance."""
        return self._aggregate("var", ddof=ddof)

    def min(self) -> Any:
        """Each window's smallest value."""
        return self._aggregate("min")

    def max(self) -> Any:
        """Each window's largest value."""
        return self._aggregate("max")

    def count(self) -> Any:
        """The number of values present in each window."""
        return self._aggregate("count")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise no_gradient("Series.rolling(...)", name, f"one of {', '.join(sorted(REDUCTIONS))}")
