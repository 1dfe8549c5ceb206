"""A table's arithmetic, numpy protocols, reductions and column-by-column methods.

Each is written column by column through :class:`~nodegrad.ops.tables.series.Series`, so a
plain column gets pandas' own answer and a differentiated one nodegrad's, and the two
tables (or the table and a Series) are first aligned as pandas aligns them: rows by label,
columns by label (a Series' labels are matched with the columns), NaN where a side has no
entry. Where no column is differentiated, the whole step is pandas' own.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from nodegrad.errors import NodegradError, StructureError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    NUMPY_METHODS,
    aligned,
    as_index,
    dtype_carrier,
    from_pandas,
    is_handle,
    length,
    no_gradient,
    pandas,
    pandas_step,
    take_rows,
    to_pandas,
    to_values,
)
from nodegrad.ops.tables.reductions import REDUCTIONS, reduce_values
from nodegrad.ops.tables.series import Series
from nodegrad.ops.tables.spelling import Operators

__all__ = ["FrameArithmetic"]


class FrameArithmetic(Operators):
    """What a table does column by column; the class :class:`~nodegrad.ops.tables.frame.Frame`
    builds on (its ``_columns``, ``_index``, ``_rows``, ``_plain`` and ``_pandas``)."""

    __slots__ = ()
    _columns: dict[Hashable, Any]
    _index: Any

    @property
    def _rows(self) -> int:
        return len(self._index)

    def _plain(self) -> bool:
        raise NotImplementedError

    def _pandas(self) -> Any:
        raise NotImplementedError

    def _series(self) -> dict[Hashable, Series]:
        return {label: Series(v, index=self._index, name=label) for label, v in self._columns.items()}

    def _made(self, columns: dict[Hashable, Any], index: Any = None) -> Any:
        made = {label: (c._values if isinstance(c, Series) else c) for label, c in columns.items()}
        return MAKERS["Frame"](made, index=self._index if index is None else index)

    # -- operators --------------------------------------------------------------------------------
    def _binary(self, other: Any, op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Any:
        other = from_pandas(other)
        plain_other = not (isinstance(other, Series | FrameArithmetic) and not other._plain()) and not is_handle(other)
        if self._plain() and plain_other:
            left, right = self._pandas(), to_pandas(other)
            return from_pandas(pandas_step(f"Frame {name}", lambda: op(right, left) if reflected else op(left, right)))
        mine = self._series()

        def pair(a: Any, b: Any) -> Any:
            try:
                return op(b, a) if reflected else op(a, b)
            except NodegradError as exc:  # a plain column pandas refuses: say which
                label = a.name if isinstance(a, Series) else None
                raise type(exc)(f"Frame {name}: the column {label!r}: {exc}") from None

        if isinstance(other, FrameArithmetic):
            return self._with_frame(other, pair, name)
        if isinstance(other, Series):
            return self._with_labels(list(mine), other, pair, name)
        shape = np.shape(dtype_carrier(other))
        if len(shape) == 1 and shape[0] == len(mine):  # one value per column, as pandas reads it
            return self._made({label: pair(s, other[k]) for k, (label, s) in enumerate(mine.items())})
        if len(shape) == 2 and shape == (self._rows, len(mine)):
            return self._made({label: pair(s, other[:, k]) for k, (label, s) in enumerate(mine.items())})
        if shape:
            msg = (
                f"Frame {name} {type(other).__name__} of shape {shape}: pandas reads an array as one value per column "
                f"({len(mine)}) or a table of the same shape {(self._rows, len(mine))} [at {user_location()}]"
            )
            raise StructureError(msg)
        return self._made({label: pair(s, other) for label, s in mine.items()})

    def _with_frame(self, other: Any, pair: Callable[[Any, Any], Any], name: str) -> Any:
        rows = aligned(self._index, other._index)
        columns = aligned(_labels(self), _labels(other))
        if (rows is not None or columns is not None) and name in ("eq", "ne", "lt", "le", "gt", "ge"):
            msg = (
                f"Frame {name} Frame: can only compare tables with the same row and column labels "
                f"[at {user_location()}]"
            )
            raise StructureError(msg)
        index = self._index if rows is None else rows[2]
        left, right = _placed(self, rows, 0), _placed(other, rows, 1)
        if columns is None:
            return self._made({label: pair(left[label], right[label]) for label in left}, index)
        labels, ours, theirs = columns[2], columns[0], columns[1]
        missing = Series(np.full(len(index), np.nan), index=index)
        found = {}
        for label, a, b in zip(labels, ours, theirs, strict=True):
            found[label] = pair(
                left[_labels(self)[a]] if a >= 0 else missing, right[_labels(other)[b]] if b >= 0 else missing
            )
        return self._made(found, index)

    def _with_labels(self, labels: list[Hashable], series: Series, pair: Callable[[Any, Any], Any], name: str) -> Any:
        """A table with a Series whose labels are matched with the columns (pandas' axis=1)."""
        mine = self._series()
        columns = aligned(_labels(self), series._index)
        if columns is None:
            return self._made({label: pair(mine[label], series._values[k]) for k, label in enumerate(labels)})
        found = {}
        for label, a, b in zip(columns[2], columns[0], columns[1], strict=True):
            left = mine[labels[a]] if a >= 0 else Series(np.full(self._rows, np.nan), index=self._index)
            found[label] = pair(left, series._values[b] if b >= 0 else np.nan)
        return self._made(found)

    def _binary_with(
        self,
        other: Any,
        op: Callable[[Any, Any], Any],
        name: str,
        reflected: bool,
        fill_value: Any,
        args: Any,
        kwargs: Any,
    ) -> Any:
        """The named form with pandas' options: pandas' own on plain tables."""
        if not self._plain() or _differentiated(other):
            raise no_gradient("Frame", name, "write the operator, f + g, or fill the missing values first")
        method = getattr(self._pandas(), f"r{name}" if reflected else name)
        return from_pandas(method(to_pandas(other), *args, fill_value=fill_value, **kwargs))

    def __neg__(self) -> Any:
        return self._columnwise(operator.neg)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return self._columnwise(operator.abs)

    def __invert__(self) -> Any:
        return self._columnwise(operator.invert)

    def __matmul__(self, other: Any) -> Any:
        return self.to_numpy() @ to_values(other)  # type: ignore[attr-defined]

    # -- numpy's protocols ---------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.to_numpy(), dtype=dtype)  # type: ignore[attr-defined]

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if self._plain() and not any(_differentiated(i) for i in (*inputs, *kwargs.values())):
            return from_pandas(getattr(ufunc, method)(*to_pandas(inputs), **to_pandas(kwargs)))
        if method != "__call__" or kwargs.get("out") is not None:
            raise no_gradient("Frame", f"np.{ufunc.__name__}.{method}", "call the ufunc on f.to_numpy()")
        if len(inputs) == 1:
            return self._columnwise(lambda s: ufunc(s, **kwargs))
        if len(inputs) == 2:
            a, b = inputs
            if a is self:
                return self._binary(b, lambda x, y: ufunc(x, y, **kwargs), ufunc.__name__)
            return self._binary(a, lambda x, y: ufunc(x, y, **kwargs), ufunc.__name__, reflected=True)
        raise no_gradient("Frame", f"np.{ufunc.__name__}", "call it on the columns")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        method = NUMPY_METHODS.get(func)
        if method is not None and args and args[0] is self and hasattr(pandas().DataFrame, method):
            passed = {k: v for k, v in kwargs.items() if v is not None and v is not np._NoValue}
            if method in REDUCTIONS and "axis" not in passed:
                passed["axis"] = None  # numpy reduces over every entry; pandas' default is by column
            if method in ("std", "var"):
                passed.setdefault("ddof", 0)  # numpy's default, which numpy passes to pandas' method
            return getattr(self, method)(*args[1:], **passed)
        return func(*to_values(args), **to_values(kwargs))  # as numpy reads a DataFrame: its values

    # -- reductions ------------------------------------------------------------------------------------
    def _reduce(self, name: str, axis: Any, skipna: bool, numeric_only: bool, **options: Any) -> Any:
        if self._plain():
            return from_pandas(
                getattr(self._pandas(), name)(axis=axis, skipna=skipna, numeric_only=numeric_only, **options)
            )
        columns = self._series()
        if numeric_only:
            columns = {k: s for k, s in columns.items() if s.dtype.kind in "biufc"}
        for label, s in columns.items():
            if s.dtype.kind not in "biufc":
                raise no_gradient("Frame", name, f"the column {label!r} is not numeric: numeric_only=True")
        if axis in (1, "columns"):
            table = np.stack([_as_float(s._values) for s in columns.values()], axis=1)
            return Series(reduce_values(name, table, skipna, axis=1, **options), index=self._index)
        found = [getattr(s, name)(skipna=skipna, **options) for s in columns.values()]
        labels = pandas().Index(list(columns), tupleize_cols=False)
        if axis is None:
            return reduce_values(
                name, np.concatenate([_as_float(s._values) for s in columns.values()]), skipna, **options
            )
        return Series(np.stack(found) if found else np.zeros(0), index=labels)

    def sum(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False, min_count: int = 0, **kw: Any) -> Any:
        """Each column's sum (a Series by column; ``axis=1``: each row's), NaN skipped."""
        return self._reduce("sum", axis, skipna, numeric_only, min_count=min_count)

    def prod(
        self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False, min_count: int = 0, **kw: Any
    ) -> Any:
        """Each column's product, NaN skipped."""
        return self._reduce("prod", axis, skipna, numeric_only, min_count=min_count)

    def mean(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False, **kw: Any) -> Any:
        """Each column's mean of the values present."""
        return self._reduce("mean", axis, skipna, numeric_only)

    def std(self, axis: Any = 0, skipna: bool = True, ddof: int = 1, numeric_only: bool = False, **kw: Any) -> Any:
        """Each column's standard deviation (``ddof=1``)."""
        return self._reduce("std", axis, skipna, numeric_only, ddof=ddof)

    def var(self, axis: Any = 0, skipna: bool = True, ddof: int = 1, numeric_only: bool = False, **kw: Any) -> Any:
        """Each column's variance (``ddof=1``)."""
        return self._reduce("var", axis, skipna, numeric_only, ddof=ddof)

    def min(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False, **kw: Any) -> Any:
        """Each column's smallest value present."""
        return self._reduce("min", axis, skipna, numeric_only)

    def max(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False, **kw: Any) -> Any:
        """Each column's largest value present."""
        return self._reduce("max", axis, skipna, numeric_only)

    def count(self, axis: Any = 0, numeric_only: bool = False) -> Any:
        """Each column's number of values present."""
        if self._plain():
            return from_pandas(self._pandas().count(axis=axis, numeric_only=numeric_only))
        counts = [s.count() for s in self._series().values()]
        return Series(np.asarray(counts, dtype=np.int64), index=_labels(self))

    # -- column by column -------------------------------------------------------------------------------
    def _columnwise(self, step: Callable[[Series], Any]) -> Any:
        return self._made({label: step(s) for label, s in self._series().items()})

    def _each(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._plain():
            return from_pandas(getattr(self._pandas(), name)(*to_pandas(args), **to_pandas(kwargs)))
        return self._columnwise(lambda s: getattr(s, name)(*args, **kwargs))

    def abs(self) -> Any:
        """The absolute values."""
        return self._each("abs")

    def round(self, decimals: int = 0) -> Any:
        """The values rounded (no gradient flows through rounding)."""
        return self._each("round", decimals)

    def clip(self, lower: Any = None, upper: Any = None, **kwargs: Any) -> Any:
        """The values limited to ``[lower, upper]``."""
        return self._each("clip", lower, upper, **kwargs)

    def shift(self, periods: int = 1, fill_value: Any = None) -> Any:
        """Each column's values moved down ``periods`` rows."""
        return self._each("shift", periods, fill_value=fill_value)

    def diff(self, periods: int = 1) -> Any:
        """Each value minus the one ``periods`` rows before."""
        return self._each("diff", periods)

    def cumsum(self, axis: Any = None, skipna: bool = True) -> Any:
        """Each column's running sum."""
        return self._each("cumsum", skipna=skipna)

    def cumprod(self, axis: Any = None, skipna: bool = True) -> Any:
        """Each column's running product."""
        return self._each("cumprod", skipna=skipna)

    def fillna(self, value: Any = None, **kwargs: Any) -> Any:
        """Missing values replaced by ``value`` (a number, or a dict by column)."""
        if isinstance(value, dict) and not self._plain():
            return self._made({k: s.fillna(value[k]) if k in value else s for k, s in self._series().items()})
        return self._each("fillna", value, **kwargs)

    def isna(self) -> Any:
        """Whether each value is missing."""
        return self._each("isna")

    isnull = isna

    def notna(self) -> Any:
        """Whether each value is present."""
        return self._each("notna")

    notnull = notna

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        """The columns as ``dtype`` (a dict: by column)."""
        if isinstance(dtype, dict):
            return self._made({k: s.astype(dtype[k], **kwargs) if k in dtype else s for k, s in self._series().items()})
        return self._each("astype", dtype, **kwargs)

    def where(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """The values where ``cond`` holds (a boolean table or Series of rows), ``other`` elsewhere."""
        cond = cond(self) if callable(cond) else from_pandas(cond)
        if self._plain() and not _differentiated(other):
            return from_pandas(self._pandas().where(to_pandas(cond, "a condition"), to_pandas(other), **kwargs))
        if isinstance(cond, FrameArithmetic):
            conditions = cond._series()
            return self._made({k: s.where(conditions[k], other) for k, s in self._series().items()})
        return self._columnwise(lambda s: s.where(cond, other))

    def mask(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Any:
        """``other`` where ``cond`` holds, the values elsewhere."""
        cond = cond(self) if callable(cond) else from_pandas(cond)
        return self.where(~cond, other, **kwargs)

    def rolling(self, window: int, min_periods: int | None = None, center: bool = False) -> _Rolling:
        """Windows of ``window`` rows of each column (see ``Series.rolling``)."""
        return _Rolling(self, window, min_periods, center)

    def apply(self, func: Any, axis: Any = 0, **kwargs: Any) -> Any:
        """``func`` of each column (a Series): pandas' own for plain tables."""
        if self._plain():
            return from_pandas(self._pandas().apply(func, axis=axis, **kwargs))
        if axis in (0, "index") and not kwargs:
            found = {label: func(s) for label, s in self._series().items()}
            if all(isinstance(v, Series) for v in found.values()):
                return self._made(found)
        raise no_gradient("Frame", "apply", "call the function on the columns, f['x'] ...")


class _Rolling:
    __slots__ = ("_center", "_frame", "_min_periods", "_window")

    def __init__(self, frame: FrameArithmetic, window: int, min_periods: int | None, center: bool) -> None:
        self._frame, self._window, self._min_periods, self._center = frame, window, min_periods, center

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in REDUCTIONS:
            raise AttributeError(name)

        def aggregate(*args: Any, **kwargs: Any) -> Any:
            def step(s: Series) -> Any:
                windows = s.rolling(self._window, min_periods=self._min_periods, center=self._center)
                return getattr(windows, name)(*args, **kwargs)

            return self._frame._columnwise(step)

        return aggregate


def _labels(table: FrameArithmetic) -> Any:
    return pandas().Index(list(table._columns), tupleize_cols=False)


def _placed(table: FrameArithmetic, rows: Any, side: int) -> dict[Hashable, Series]:
    """A table's columns on the aligned rows (``rows`` from :func:`aligned`; None: as they are)."""
    if rows is None:
        return table._series()
    index = as_index(rows[2])
    return {label: Series(take_rows(v, rows[side]), index=index, name=label) for label, v in table._columns.items()}


def _differentiated(value: Any) -> bool:
    if isinstance(value, Series | FrameArithmetic):
        return not value._plain()
    if isinstance(value, list | tuple):
        return any(_differentiated(v) for v in value)
    return is_handle(value)


def _as_float(values: Any) -> Any:
    if is_handle(values):
        return values
    return np.asarray(values, dtype=np.float64) if length(values) else np.zeros(0)
