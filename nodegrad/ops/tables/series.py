"""A column of a table inside a transform: :class:`Series`, pandas' Series over nodegrad's values.

``frame["x"]``, a column's aggregate by group, and a pandas Series argument are a
:class:`Series` inside a transform: values (traced where differentiated), row labels and a
name. It does what a pandas Series does in a pipeline, with pandas' answers:

- arithmetic and comparisons align the rows by label as pandas aligns them (pandas itself
  pairs the labels), and keep the name pandas keeps;
- reductions skip NaN as pandas' do; numpy's functions on it answer as on a pandas Series
  (``np.sum(s)`` is ``s.sum()``, ``np.exp(s)`` a Series);
- which rows a step takes, and in which order (indexing, sorting, ``dropna``), is pandas'
  own choice, made on the plain values;
- where the values are plain (a column nothing differentiates), every method is pandas'
  own, run on a pandas Series; where they are traced, a method nodegrad cannot compute
  raises :class:`~nodegrad.errors.NoGradientError` naming it.

Returned from a transform's function it is a pandas Series with its index and name.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

from nodegrad.engine.record import OPERANDS
from nodegrad.engine.staged import FOREIGN
from nodegrad.engine.traced import DEFERS_TO
from nodegrad.errors import ArgumentError, ShapeError, StructureError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    aligned,
    as_index,
    dtype_of,
    from_pandas,
    is_handle,
    length,
    no_gradient,
    pandas,
    pandas_step,
    plain_values,
    row_positions,
    take_rows,
    to_pandas,
)
from nodegrad.ops.tables.reductions import REDUCTIONS, cumulative, reduce_values, windows

__all__ = ["Series"]

#: numpy functions pandas answers with the Series' own method (numpy calls ``s.sum(...)``).
_NUMPY_METHODS: dict[Any, str] = {
    np.sum: "sum", np.mean: "mean", np.std: "std", np.var: "var", np.min: "min", np.max: "max",
    np.amin: "min", np.amax: "max", np.prod: "prod", np.cumsum: "cumsum", np.cumprod: "cumprod",
    np.round: "round", np.around: "round", np.clip: "clip", np.argmax: "argmax", np.argmin: "argmin",
}  # fmt: skip

_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}
_SAME = object()


class Series:
    """A column of a table inside a transform: pandas' Series over nodegrad's values.

    What ``frame["x"]``, ``frame.groupby(k)["x"].sum()`` and a pandas Series argument are
    inside a transform. Arithmetic aligns rows by label as pandas does; reductions skip NaN;
    ``to_numpy()`` and ``values`` give the values (traced where differentiated); numpy's
    functions answer as on a pandas Series. Returned from a transform's function it is a
    pandas Series again.

    Parameters
    ----------
    data : array_like, Series or pandas Series
        One value per row (traced values included), or a number repeated over ``index``.
    index : pandas Index or sequence, optional
        The row labels; a RangeIndex by default.
    name : hashable, optional
        The Series' name.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import nodegrad as ng
    >>> price = pd.Series([2.0, np.nan, 5.0], index=["a", "b", "c"], name="price")
    >>> ng.grad(lambda s: (s * s).sum())(price)  # NaN skipped, as pandas' sum skips it
    a     4.0
    b     0.0
    c    10.0
    Name: price, dtype: float64
    """

    __slots__ = ("_index", "_name", "_values")
    __pandas_priority__ = 5000  # pandas' own operators give way: pandas_series + s is ours

    def __init__(self, data: Any, index: Any = None, name: Hashable = None) -> None:
        pd = pandas()
        if isinstance(data, Series):
            index = data._index if index is None else index
            name = data._name if name is None else name
            data = data._values
        elif isinstance(data, pd.Series):
            index = data.index if index is None else index
            name = data.name if name is None else name
            data = column_values(data)
        elif isinstance(data, list | tuple):
            data = np.asarray(data)
        if (np.ndim(data) == 0 and not is_handle(data)) or (is_handle(data) and np.ndim(dtype_carrier(data)) == 0):
            rows = 0 if index is None else len(index)
            data = np.broadcast_to(data, (rows,)) if not is_handle(data) else data * np.ones(rows)
        rows = length(data)
        self._index = pd.RangeIndex(rows) if index is None else as_index(index)
        if len(self._index) != rows:
            msg = f"Series: an index of {len(self._index)} labels for {rows} values [at {user_location()}]"
            raise ShapeError(msg)
        self._values = data
        self._name = name
        if not OPERANDS:  # from now on nodegrad's functions take a Series as its values
            OPERANDS[Series] = _values_of
            OPERANDS[MAKERS["Frame"]] = _table_values

    # -- what it is ---------------------------------------------------------------------------
    @property
    def index(self) -> Any:
        """The row labels (a pandas Index)."""
        return self._index

    @property
    def name(self) -> Hashable:
        """The Series' name (a column's label)."""
        return self._name

    @name.setter
    def name(self, value: Hashable) -> None:
        self._name = value

    @property
    def values(self) -> Any:
        """The values: an array, traced where differentiated."""
        return self._values

    @property
    def dtype(self) -> Any:
        """The values' dtype."""
        return dtype_of(self._values)

    @property
    def shape(self) -> tuple[int]:
        """``(rows,)``."""
        return (len(self._index),)

    @property
    def size(self) -> int:
        """The number of rows."""
        return len(self._index)

    ndim = 1

    @property
    def empty(self) -> bool:
        """Whether it has no rows."""
        return not len(self._index)

    @property
    def T(self) -> Series:  # noqa: N802  (pandas' name)
        """Itself, as pandas' ``Series.T``."""
        return self

    def to_numpy(self, dtype: Any = None, copy: bool = False, na_value: Any = None) -> Any:
        """The values (traced where differentiated), as ``pandas.Series.to_numpy``."""
        if self._plain():
            kwargs = {} if na_value is None else {"na_value": na_value}
            return self._pandas().to_numpy(dtype=dtype, copy=copy, **kwargs)
        values = self._values
        if na_value is not None:
            values = np.where(np.isnan(values), na_value, values)
        return values if dtype is None else values.astype(dtype)

    def __len__(self) -> int:
        return len(self._index)

    def __iter__(self) -> Iterator[Any]:
        if self._plain():
            return iter(self._pandas())
        return (self._values[k] for k in range(len(self)))

    def __contains__(self, label: object) -> bool:
        return label in self._index

    def __bool__(self) -> bool:
        msg = f"the truth value of a Series is ambiguous: use .any() or .all() [at {user_location()}]"
        raise ArgumentError(msg)

    def __repr__(self) -> str:
        if self._plain():
            return repr(self._pandas())
        return f"Series({len(self)} rows, name={self._name!r}, dtype {self.dtype}; differentiated)"

    # -- pandas where the values are plain ----------------------------------------------------
    def _plain(self) -> bool:
        return not is_handle(self._values)

    def _pandas(self) -> Any:
        """This Series as a pandas Series (its values plain)."""
        values = self._values
        if isinstance(values, np.ndarray) and type(values) is not np.ndarray:
            values = values.view(np.ndarray)  # a vmap's shared table: plain values for pandas
        return pandas().Series(values, index=self._index, name=self._name, copy=False)

    def _like(self, values: Any, index: Any = None, name: Any = _SAME) -> Series:
        return Series(values, index=self._index if index is None else index, name=self._name if name is _SAME else name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        pd = pandas()
        if not hasattr(pd.Series, name):
            raise AttributeError(f"'Series' object has no attribute {name!r}")
        if self._plain():
            return from_pandas(_delegated(getattr(self._pandas(), name)))
        raise no_gradient("Series", name, "compute it with the Series' arithmetic and numpy's functions")

    def _pandas_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if not self._plain():
            raise no_gradient("Series", name)
        return from_pandas(getattr(self._pandas(), name)(*to_pandas(args), **to_pandas(kwargs)))

    # -- arithmetic, aligned by label ----------------------------------------------------------
    def _binary(self, other: Any, op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Any:
        other = from_pandas(other)
        if isinstance(other, MAKERS["Frame"]):
            return NotImplemented  # the table aligns this Series with its columns
        if not is_handle(self._values) and not _holds_handles(other):
            left, right = self._pandas(), to_pandas(other)
            return from_pandas(pandas_step(f"Series {name}", lambda: op(right, left) if reflected else op(left, right)))
        if isinstance(other, Series):
            pairing = aligned(self._index, other._index)
            if pairing is None:
                mine, theirs, index = self._values, other._values, self._index
            elif name in _COMPARISONS:
                msg = f"Series {name} Series: can only compare Series with the same row labels [at {user_location()}]"
                raise StructureError(msg)
            else:
                mine, theirs, index = (
                    take_rows(self._values, pairing[0]),
                    take_rows(other._values, pairing[1]),
                    pairing[2],
                )
            label = self._name if _same_name(self._name, other._name) else None
        else:
            if np.ndim(dtype_carrier(other)) > 1 or (np.ndim(dtype_carrier(other)) == 1 and len(other) != len(self)):
                msg = (
                    f"Series {name} {type(other).__name__} of shape {np.shape(dtype_carrier(other))}: the lengths must "
                    f"match ({len(self)} rows) [at {user_location()}]"
                )
                raise ShapeError(msg)
            mine, theirs, index, label = self._values, other, self._index, self._name
        return Series(op(theirs, mine) if reflected else op(mine, theirs), index=index, name=label)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, operator.add, "add")

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, operator.add, "add", reflected=True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, operator.sub, "sub")

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, operator.sub, "sub", reflected=True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, operator.mul, "mul")

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, operator.mul, "mul", reflected=True)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, operator.truediv, "truediv")

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, operator.truediv, "truediv", reflected=True)

    def __floordiv__(self, other: Any) -> Any:
        return self._binary(other, operator.floordiv, "floordiv")

    def __rfloordiv__(self, other: Any) -> Any:
        return self._binary(other, operator.floordiv, "floordiv", reflected=True)

    def __mod__(self, other: Any) -> Any:
        return self._binary(other, operator.mod, "mod")

    def __rmod__(self, other: Any) -> Any:
        return self._binary(other, operator.mod, "mod", reflected=True)

    def __pow__(self, other: Any) -> Any:
        return self._binary(other, operator.pow, "pow")

    def __rpow__(self, other: Any) -> Any:
        return self._binary(other, operator.pow, "pow", reflected=True)

    def __and__(self, other: Any) -> Any:
        return self._binary(other, operator.and_, "and")

    def __rand__(self, other: Any) -> Any:
        return self._binary(other, operator.and_, "and", reflected=True)

    def __or__(self, other: Any) -> Any:
        return self._binary(other, operator.or_, "or")

    def __ror__(self, other: Any) -> Any:
        return self._binary(other, operator.or_, "or", reflected=True)

    def __xor__(self, other: Any) -> Any:
        return self._binary(other, operator.xor, "xor")

    def __lt__(self, other: Any) -> Any:
        return self._binary(other, operator.lt, "lt")

    def __le__(self, other: Any) -> Any:
        return self._binary(other, operator.le, "le")

    def __gt__(self, other: Any) -> Any:
        return self._binary(other, operator.gt, "gt")

    def __ge__(self, other: Any) -> Any:
        return self._binary(other, operator.ge, "ge")

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._binary(other, operator.eq, "eq")

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._binary(other, operator.ne, "ne")

    __hash__ = None  # type: ignore[assignment]

    def __matmul__(self, other: Any) -> Any:
        return self.dot(other)

    def __rmatmul__(self, other: Any) -> Any:
        return np.matmul(to_values(other), self._values)

    def __neg__(self) -> Series:
        return self._like(-self._values)

    def __pos__(self) -> Series:
        return self

    def __abs__(self) -> Series:
        return self._like(abs(self._values))

    def __invert__(self) -> Series:
        return self._like(~plain_values(self._values, "~"))

    def dot(self, other: Any) -> Any:
        """The sum of products with ``other`` (a Series, aligned by label, or an array)."""
        if isinstance(other, Series):
            pairing = aligned(self._index, other._index, join="inner")
            if pairing is not None:
                return np.dot(self._values[pairing[0]], other._values[pairing[1]])
        return np.dot(self._values, to_values(other))

    # -- numpy's protocols ----------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._values if is_handle(self._values) else self._pandas().to_numpy(), dtype=dtype)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if any(isinstance(i, MAKERS["Frame"]) for i in inputs):
            return NotImplemented
        if not any(_holds_handles(i) for i in (*inputs, *kwargs.values())):
            return from_pandas(getattr(ufunc, method)(*to_pandas(inputs), **to_pandas(kwargs)))
        if method != "__call__" or kwargs.get("out") is not None:
            raise no_gradient("Series", f"np.{ufunc.__name__}.{method}", "call the ufunc on s.to_numpy()")
        if len(inputs) == 2 and all(isinstance(i, Series) for i in inputs):
            op = _BINARY_UFUNCS.get(ufunc)  # pandas answers these with its operators: aligned
            if op is not None:
                return op(inputs[0], inputs[1])
        series = [i for i in inputs if isinstance(i, Series)]
        first = series[0]
        for other in series[1:]:
            if not other._index.equals(first._index):
                msg = f"np.{ufunc.__name__}: Series with different row labels: align them first [at {user_location()}]"
                raise StructureError(msg)
        names = {s._name for s in series}
        result = ufunc(*(to_values(i) for i in inputs), **kwargs)
        name = names.pop() if len(names) == 1 else None
        if isinstance(result, tuple):
            return tuple(Series(r, index=first._index, name=name) for r in result)
        return Series(result, index=first._index, name=name)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        method = _NUMPY_METHODS.get(func)
        if method is not None and args and args[0] is self:
            passed = {k: v for k, v in kwargs.items() if v is not None and v is not np._NoValue}
            passed.pop("axis", None)
            return getattr(self, method)(*args[1:], **passed)
        return func(*to_values(args), **to_values(kwargs))  # as numpy reads a pandas Series: its values

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
        return int(np.sum(~np.isnan(plain_values(self._values, "count"))))

    def agg(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func`` by name (``"sum"``, ``"mean"``, ...) or a function of the Series."""
        if isinstance(func, str):
            return getattr(self, func)(*args, **kwargs)
        if callable(func):
            return func(self, *args, **kwargs)
        return self._pandas_call("agg", func, *args, **kwargs)

    aggregate = agg

    def cumsum(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Series:
        """The running sum, NaN where a value is NaN, skipped after."""
        return self._running("cumsum", skipna)

    def cumprod(self, axis: Any = None, skipna: bool = True, **kwargs: Any) -> Series:
        """The running product, NaN where a value is NaN, skipped after."""
        return self._running("cumprod", skipna)

    def _running(self, name: str, skipna: bool) -> Series:
        if self._plain():
            return from_pandas(getattr(self._pandas(), name)(skipna=skipna))
        return self._like(cumulative(name, self._values, skipna))

    def rolling(self, window: int, min_periods: int | None = None, center: bool = False, **kwargs: Any) -> Rolling:
        """Windows of ``window`` rows, aggregated with ``.sum()``, ``.mean()``, ``.std()``,
        ``.var()``, ``.min()``, ``.max()`` or ``.count()`` as pandas' rolling windows."""
        if kwargs and not self._plain():
            raise no_gradient("Series", "rolling", f"the options {sorted(kwargs)}")
        return Rolling(self, window, min_periods, center, kwargs)

    # -- values ---------------------------------------------------------------------------------
    def shift(self, periods: int = 1, fill_value: Any = None, **kwargs: Any) -> Series:
        """The values moved down ``periods`` rows (up where negative), NaN (or
        ``fill_value``) where none arrives."""
        if self._plain() or kwargs:
            return self._pandas_call("shift", periods, fill_value=fill_value, **kwargs)
        moved = np.arange(len(self)) - periods
        moved = np.where((moved >= 0) & (moved < len(self)), moved, -1)
        values = take_rows(self._values, moved)
        if fill_value is not None:
            values = np.where(moved < 0, fill_value, values)
        return self._like(values)

    def diff(self, periods: int = 1) -> Series:
        """Each value minus the one ``periods`` rows before."""
        if self._plain():
            return self._pandas_call("diff", periods)
        return self._like(self._values - self.shift(periods)._values)

    def abs(self) -> Series:
        """The absolute values."""
        return abs(self)

    def round(self, decimals: int = 0, *args: Any, **kwargs: Any) -> Series:
        """The values rounded (a step function: no gradient flows through it)."""
        return self._like(np.round(self._values, decimals))

    def clip(self, lower: Any = None, upper: Any = None, **kwargs: Any) -> Series:
        """The values limited to ``[lower, upper]`` (NaN stays NaN)."""
        if self._plain():
            return self._pandas_call("clip", lower, upper, **kwargs)
        low = -np.inf if lower is None else to_values(self._aligned_operand(lower, "clip"))
        high = np.inf if upper is None else to_values(self._aligned_operand(upper, "clip"))
        return self._like(np.clip(self._values, low, high))

    def where(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Series:
        """The values where ``cond`` holds, ``other`` elsewhere (NaN by default)."""
        if callable(cond):
            cond = cond(self)
        if callable(other):
            other = other(self)
        if self._plain() and not _holds_handles(other):
            return self._pandas_call("where", cond, other, **kwargs)
        mask = self._condition(cond)
        return self._like(np.where(mask, self._values, to_values(self._aligned_operand(other, "where"))))

    def mask(self, cond: Any, other: Any = np.nan, **kwargs: Any) -> Series:
        """``other`` (NaN by default) where ``cond`` holds, the values elsewhere."""
        if callable(cond):
            cond = cond(self)
        return self.where(~self._condition(cond), other, **kwargs)

    def fillna(self, value: Any = None, **kwargs: Any) -> Series:
        """NaN entries replaced by ``value``."""
        if self._plain() or kwargs or value is None:
            return self._pandas_call("fillna", value, **kwargs)
        return self._like(
            np.where(np.isnan(self._values), to_values(self._aligned_operand(value, "fillna")), self._values)
        )

    def isna(self) -> Series:
        """Whether each value is missing (NaN)."""
        if self._plain():
            return from_pandas(self._pandas().isna())
        return self._like(np.isnan(self._values))

    isnull = isna

    def notna(self) -> Series:
        """Whether each value is present (not NaN)."""
        if self._plain():
            return from_pandas(self._pandas().notna())
        return self._like(~np.isnan(self._values))

    notnull = notna

    def astype(self, dtype: Any, **kwargs: Any) -> Series:
        """The values as ``dtype``: a float dtype keeps the gradient; any other is a step
        (ints, strings, categories) and reads the plain values."""
        if self._plain():
            return self._pandas_call("astype", dtype, **kwargs)
        kind = np.dtype(dtype).kind if not isinstance(dtype, str) or dtype in np.sctypeDict else "O"
        if kind in "fc":
            return self._like(self._values.astype(dtype))
        return from_pandas(self._plain_copy("astype").astype(dtype, **kwargs))

    def copy(self, deep: bool = True) -> Series:
        """This Series (its values are never written in place)."""
        return self._like(self._values)

    def pipe(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``."""
        return func(self, *args, **kwargs)

    def apply(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func`` of each value: pandas' own for plain values; refused on differentiated
        values (call the function on the Series itself: ``np.exp(s)``, ``f(s)``)."""
        if not self._plain():
            raise no_gradient("Series", "apply", "call the function on the Series itself, np.exp(s) or f(s)")
        return self._pandas_call("apply", func, *args, **kwargs)

    def map(self, arg: Any, na_action: Any = None) -> Series:
        """Each value mapped through a dict, a Series or a function (plain values only)."""
        if not self._plain():
            raise no_gradient("Series", "map", "map the static key column, then index or gather by it")
        return self._pandas_call("map", arg, na_action=na_action)

    def to_frame(self, name: Hashable = None) -> Any:
        """A one-column table of this Series."""
        label = name if name is not None else (0 if self._name is None else self._name)
        return MAKERS["Frame"]({label: self._values}, index=self._index)

    def rename(self, index: Any = None, **kwargs: Any) -> Series:
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
        table[label] = Series(self._values, index=table.index)
        return table

    def set_axis(self, labels: Any, **kwargs: Any) -> Series:
        """The same values with the row labels ``labels``."""
        return self._like(self._values, index=as_index(labels))

    # -- rows -----------------------------------------------------------------------------------
    def _rows(self, positions: Any, index: Any) -> Series:
        return self._like(take_rows(self._values, positions), index=index)

    def __getitem__(self, key: Any) -> Any:
        if callable(key):
            key = key(self)
        positions, index = row_positions(self._index, to_pandas(key, "a row key"), "getitem")
        return self._values[positions] if index is None else self._rows(positions, index)

    @property
    def loc(self) -> _Indexer:
        """Rows by label: a label, a list, a slice of labels, a boolean mask."""
        return _Indexer(self, "loc")

    @property
    def iloc(self) -> _Indexer:
        """Rows by position: an int, a list, a slice, a boolean mask."""
        return _Indexer(self, "iloc")

    @property
    def at(self) -> _Indexer:
        """One value by label."""
        return _Indexer(self, "loc")

    @property
    def iat(self) -> _Indexer:
        """One value by position."""
        return _Indexer(self, "iloc")

    def head(self, n: int = 5) -> Series:
        """The first ``n`` rows."""
        return self.iloc[:n]

    def tail(self, n: int = 5) -> Series:
        """The last ``n`` rows."""
        return self.iloc[max(len(self) - n, 0) :] if n >= 0 else self.iloc[-n:]

    def _ordered(self, name: str, *args: Any, **kwargs: Any) -> Series:
        """The rows pandas' method ``name`` keeps, in its order: pandas runs it on the plain
        values (labelled by position), and the values are moved as it moved them."""
        probe = pandas().Series(plain_values(self._values, f"Series.{name}"), index=pandas().RangeIndex(len(self)))
        renumber = kwargs.pop("ignore_index", False)
        positions = getattr(probe, name)(*args, **kwargs).index.to_numpy()
        return self._rows(positions, pandas().RangeIndex(len(positions)) if renumber else self._index[positions])

    def sort_values(
        self, *, ascending: bool = True, kind: str = "quicksort", na_position: str = "last", **kwargs: Any
    ) -> Series:
        """The rows in the order of their values, by pandas' own sort (the caller's ``kind``)."""
        if self._plain():
            return self._pandas_call("sort_values", ascending=ascending, kind=kind, na_position=na_position, **kwargs)
        return self._ordered("sort_values", ascending=ascending, kind=kind, na_position=na_position, **kwargs)

    def sort_index(self, **kwargs: Any) -> Series:
        """The rows in the order of their labels, by pandas' own sort."""
        ordered = pandas().Series(np.arange(len(self)), index=self._index).sort_index(**kwargs)
        return self._rows(ordered.to_numpy(), ordered.index)

    def nlargest(self, n: int = 5, keep: str = "first") -> Series:
        """The ``n`` largest values, in pandas' order."""
        return self._pandas_call("nlargest", n, keep) if self._plain() else self._ordered("nlargest", n, keep)

    def nsmallest(self, n: int = 5, keep: str = "first") -> Series:
        """The ``n`` smallest values, in pandas' order."""
        return self._pandas_call("nsmallest", n, keep) if self._plain() else self._ordered("nsmallest", n, keep)

    def dropna(self, **kwargs: Any) -> Series:
        """The rows whose value is present."""
        return self._pandas_call("dropna", **kwargs) if self._plain() else self._ordered("dropna", **kwargs)

    # -- helpers ----------------------------------------------------------------------------------
    def _condition(self, cond: Any) -> Any:
        cond = from_pandas(cond)
        if isinstance(cond, Series):
            if not cond._index.equals(self._index):
                cond = from_pandas(cond._pandas().reindex(self._index, fill_value=False))
            cond = cond._values
        return plain_values(np.asarray(cond) if isinstance(cond, list) else cond, "a condition")

    def _aligned_operand(self, other: Any, where: str) -> Any:
        other = from_pandas(other)
        if isinstance(other, Series) and not other._index.equals(self._index):
            pairing = aligned(self._index, other._index, join="left")
            assert pairing is not None
            return take_rows(other._values, pairing[1])
        return other

    def _plain_copy(self, where: str) -> Any:
        return pandas().Series(plain_values(self._values, f"Series.{where}"), index=self._index, name=self._name)


class _Indexer:
    """``s.loc``, ``s.iloc``, ``s.at``, ``s.iat``: pandas' own choice of rows."""

    __slots__ = ("_how", "_series")

    def __init__(self, series: Series, how: str) -> None:
        self._series = series
        self._how = how

    def __getitem__(self, key: Any) -> Any:
        series = self._series
        if callable(key):
            key = key(series)
        positions, index = row_positions(series._index, to_pandas(key, "a row key"), self._how)
        return series._values[positions] if index is None else series._rows(positions, index)


class Rolling:
    """``s.rolling(window)``: each row's window of the ``window`` rows up to it (centred
    with ``center=True``), aggregated as pandas aggregates it (NaN skipped; NaN where
    fewer than ``min_periods`` values are present, ``window`` by default)."""

    __slots__ = ("_center", "_min_periods", "_options", "_series", "_window")

    def __init__(
        self, series: Series, window: int, min_periods: int | None, center: bool, options: dict[str, Any]
    ) -> None:
        if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 0:
            msg = f"Series.rolling: window must be a non-negative int, got {window!r} [at {user_location()}]"
            raise ArgumentError(msg)
        self._series = series
        self._window = int(window)
        self._min_periods = self._window if min_periods is None else int(min_periods)
        self._center = center
        self._options = options

    def _aggregate(self, name: str, **kwargs: Any) -> Series:
        series = self._series
        if series._plain():
            rolling = series._pandas().rolling(self._window, min_periods=self._min_periods, center=self._center)
            return from_pandas(getattr(rolling, name)(**kwargs))
        values = windows(series._values, self._window, self._center)
        return series._like(reduce_values(name, values, True, axis=1, min_count=self._min_periods, **kwargs))

    def sum(self) -> Series:
        """Each window's sum."""
        return self._aggregate("sum")

    def mean(self) -> Series:
        """Each window's mean."""
        return self._aggregate("mean")

    def std(self, ddof: int = 1) -> Series:
        """Each window's standard deviation."""
        return self._aggregate("std", ddof=ddof)

    def var(self, ddof: int = 1) -> Series:
        """Each window's variance."""
        return self._aggregate("var", ddof=ddof)

    def min(self) -> Series:
        """Each window's smallest value."""
        return self._aggregate("min")

    def max(self) -> Series:
        """Each window's largest value."""
        return self._aggregate("max")

    def count(self) -> Series:
        """The number of values present in each window."""
        return self._aggregate("count")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise no_gradient("Series.rolling(...)", name, f"one of {', '.join(sorted(REDUCTIONS))}")


_BINARY_UFUNCS: dict[np.ufunc, Callable[[Any, Any], Any]] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul, np.true_divide: operator.truediv,
    np.power: operator.pow, np.floor_divide: operator.floordiv, np.remainder: operator.mod,
    np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt, np.greater_equal: operator.ge,
    np.equal: operator.eq, np.not_equal: operator.ne,
}  # fmt: skip


def _values_of(series: Series) -> Any:
    return series._values


def _table_values(table: Any) -> Any:
    return table.to_numpy()


def column_values(series: Any) -> Any:
    """A pandas Series' values: a numpy array for a numpy dtype, pandas' own array for one of
    its extension dtypes (a categorical, a string, a datetime with a time zone)."""
    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array


def dtype_carrier(value: Any) -> Any:
    """What numpy reads a shape from: the value itself, a plain array under a handle."""
    from nodegrad.engine.staged import now
    from nodegrad.engine.traced import unwrap

    return now(unwrap(value))


def to_values(value: Any) -> Any:
    """``value`` with every Series and table in it replaced by its values (as numpy reads
    pandas objects), through lists, tuples and dicts."""
    if isinstance(value, Series):
        return value._values
    if isinstance(value, MAKERS["Frame"]):
        return value.to_numpy()
    if isinstance(value, list | tuple):
        return type(value)(to_values(v) for v in value)
    if isinstance(value, dict):
        return {k: to_values(v) for k, v in value.items()}
    return value


def _holds_handles(value: Any) -> bool:
    if isinstance(value, Series):
        return is_handle(value._values)
    if isinstance(value, MAKERS["Frame"]):
        return any(is_handle(v) for v in value._columns.values())
    if isinstance(value, list | tuple):
        return any(_holds_handles(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_handles(v) for v in value.values())
    return is_handle(value)


def _same_name(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (a is not None and b is not None and a != a and b != b)
    except (TypeError, ValueError):
        return a is b


def _delegated(attribute: Any) -> Any:
    """A pandas method whose Series and table arguments and results are converted."""
    if not callable(attribute):
        return attribute

    def call(*args: Any, **kwargs: Any) -> Any:
        return from_pandas(attribute(*to_pandas(args), **to_pandas(kwargs)))

    return call


MAKERS["Series"] = Series
DEFERS_TO.add(Series)  # a traced value met with one gives way to its operators
FOREIGN.add(Series)  # and a staged one
