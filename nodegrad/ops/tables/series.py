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

from nodegrad.engine.guards import OPERANDS
from nodegrad.engine.levels import FOREIGN, RECORDING
from nodegrad.engine.traced import DEFERS_TO
from nodegrad.errors import ArgumentError, ShapeError, StructureError, user_location
from nodegrad.ops.tables.common import (
    MAKERS,
    NUMPY_METHODS,
    aligned,
    as_index,
    as_numbers,
    batched_in,
    by_example,
    column_values,
    delegated,
    dtype_carrier,
    dtype_of,
    from_pandas,
    holds_handles,
    is_float,
    is_handle,
    length,
    missing_apart,
    no_gradient,
    pandas,
    pandas_step,
    per_example,
    plain_values,
    take_rows,
    to_pandas,
    to_values,
)
from nodegrad.ops.tables.series_methods import SeriesMethods
from nodegrad.ops.tables.spelling import Operators

__all__ = ["Series"]


_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}
_ARITHMETIC = {"add", "sub", "mul", "truediv", "pow", "mod"}
_SAME = object()


class Series(Operators, SeriesMethods):
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
        """Whether the values are plain (so pandas' own method answers). A static column a
        replay stages is read, so that pandas answers (the call runs eagerly)."""
        values = self._values
        if type(values) in RECORDING and values.dtype.kind not in "fc":
            plain_values(values, "a pandas method of a static column")
        return not is_handle(values)

    def _pandas(self) -> Any:
        """This Series as a pandas Series (its values plain)."""
        values = self._values
        if isinstance(values, np.ndarray) and type(values) is not np.ndarray:
            values = values.view(np.ndarray)  # a vmap's shared table: plain values for pandas
        return pandas().Series(values, index=self._index, name=self._name, copy=False)

    def _like(self, values: Any, index: Any = None, name: Any = _SAME) -> Series:
        return Series(values, index=self._index if index is None else index, name=self._name if name is _SAME else name)

    def _handles(self) -> Any:
        return self._values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(pandas().Series, name):
            raise AttributeError(f"'Series' object has no attribute {name!r}")
        return delegated(self, "Series", name, "compute it with the Series' arithmetic and numpy's functions")

    def _pandas_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._each_example():
            step = lambda inputs: getattr(inputs[0]._pandas(), name)(*to_pandas(inputs[1]), **to_pandas(inputs[2]))
            return per_example(step, (self, args, kwargs), f"Series.{name}")
        return delegated(self, "Series", name)(*args, **kwargs)

    def _each_example(self) -> bool:
        """Whether the values are a mask batched by vmap (a column with no gradient): pandas'
        own methods then run on each example's values, so its answers are pandas'."""
        return batched_in(self._values) is not None and not is_float(self._values)

    # -- arithmetic, aligned by label ----------------------------------------------------------
    def _binary(self, other: Any, op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Any:
        other = from_pandas(other)
        if isinstance(other, MAKERS["Frame"]):
            return NotImplemented  # the table aligns this Series with its columns
        if not is_handle(self._values) and not holds_handles(other):
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
        pair = (lambda a, b: op(b, a)) if reflected else op
        if name in _COMPARISONS and not (_numeric(mine) and _numeric(theirs)):
            return Series(_compared(pair, name, mine, theirs), index=index, name=label)
        mine, theirs = as_numbers(mine), as_numbers(theirs)
        if name in _ARITHMETIC and (is_float(mine) or is_float(theirs)):
            return Series(missing_apart(pair, mine, theirs), index=index, name=label)
        return Series(pair(mine, theirs), index=index, name=label)

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
        """The named form with pandas' options: ``fill_value`` stands for a value missing on one
        side only (after aligning the labels), as pandas fills it."""
        other = from_pandas(other)
        if self._plain() and not holds_handles(other):
            method = f"r{name}" if reflected else name
            return self._pandas_call(method, to_pandas(other), *args, fill_value=fill_value, **kwargs)
        if args or kwargs:
            raise no_gradient("Series", name, f"the options {sorted(kwargs)}", self._values)
        if not isinstance(other, Series):
            return self._like(_filled(self._values, other, fill_value))._binary(other, op, name, reflected)
        pairing = aligned(self._index, other._index)
        index = self._index if pairing is None else pairing[2]
        mine = self._values if pairing is None else take_rows(self._values, pairing[0])
        theirs = other._values if pairing is None else take_rows(other._values, pairing[1])
        left = Series(_filled(mine, theirs, fill_value), index=index, name=self._name)
        right = Series(_filled(theirs, mine, fill_value), index=index, name=other._name)
        return left._binary(right, op, name, reflected)

    def __matmul__(self, other: Any) -> Any:
        return self.dot(other)

    def __rmatmul__(self, other: Any) -> Any:
        return np.matmul(to_values(other), self._values)

    def __neg__(self) -> Series:
        if self._plain():
            return from_pandas(-self._pandas())
        return self._like(~self._values if self.dtype == np.bool_ else -self._values)  # (pandas' -mask is ~mask)

    def __pos__(self) -> Series:
        return self

    def __abs__(self) -> Series:
        return self._like(missing_apart(np.abs, self._values))

    def __invert__(self) -> Series:
        return self._like(~self._values)

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
        if not any(holds_handles(i) for i in (*inputs, *kwargs.values())):
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
        values = [as_numbers(to_values(i)) for i in inputs]
        if ufunc.nout == 1 and _gives_floats(ufunc, values):
            result = missing_apart(lambda *v: ufunc(*v, **kwargs), *values)
        else:
            result = ufunc(*values, **kwargs)
        name = names.pop() if len(names) == 1 else None
        if isinstance(result, tuple):
            return tuple(Series(r, index=first._index, name=name) for r in result)
        return Series(result, index=first._index, name=name)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        method = NUMPY_METHODS.get(func)
        if method is not None and args and args[0] is self:
            passed = {k: v for k, v in kwargs.items() if v is not None and v is not np._NoValue}
            passed.pop("axis", None)
            if method in ("std", "var"):
                passed.setdefault("ddof", 0)  # numpy's default, which numpy passes to pandas' method
            return getattr(self, method)(*args[1:], **passed)
        return func(*to_values(args), **to_values(kwargs))  # as numpy reads a pandas Series: its values


_BINARY_UFUNCS: dict[np.ufunc, Callable[[Any, Any], Any]] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul, np.true_divide: operator.truediv,
    np.power: operator.pow, np.floor_divide: operator.floordiv, np.remainder: operator.mod,
    np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt, np.greater_equal: operator.ge,
    np.equal: operator.eq, np.not_equal: operator.ne,
}  # fmt: skip


def _numeric(value: Any) -> bool:
    """Whether ``value`` (values or a scalar) holds numbers or bools, which numpy compares as
    pandas does."""
    dtype = dtype_of(value)
    if dtype is None:
        return isinstance(value, int | float | complex | np.number | np.bool_)
    return isinstance(dtype, np.dtype) and dtype.kind in "biufc"


def _compared(pair: Callable[[Any, Any], Any], name: str, mine: Any, theirs: Any) -> Any:
    """A comparison of values that are not both numbers (a mask with a string, a datetime),
    by pandas itself on the plain values: a comparison carries no gradient."""
    pd = pandas()

    def as_series(values: Any) -> Any:
        return pd.Series(values, copy=False) if np.ndim(values) == 1 and not isinstance(values, str) else values

    def compare(a: Any, b: Any) -> Any:
        return pandas_step(f"Series {name}", lambda: pair(as_series(a), as_series(b))).to_numpy()

    return by_example(compare, mine, theirs, what="a comparison")


def _filled(values: Any, other: Any, fill_value: Any) -> Any:
    """``values`` with ``fill_value`` where they are missing and ``other`` is not."""
    if not is_float(values):
        return values
    lonely = np.isnan(values) if not is_float(other) else np.isnan(values) & ~np.isnan(other)
    return np.where(lonely, fill_value, values)


def _gives_floats(ufunc: np.ufunc, values: list[Any]) -> bool:
    """Whether ``ufunc`` of ``values`` gives floats (not a mask: ``np.isnan``, a comparison)."""
    kinds = [np.zeros(0, dtype_of(v)) if isinstance(dtype_of(v), np.dtype) else v for v in values]
    try:
        return ufunc(*kinds).dtype.kind in "fc"
    except TypeError:
        return False


def _values_of(series: Series) -> Any:
    return series._values


def _table_values(table: Any) -> Any:
    return table.to_numpy()


def _same_name(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (a is not None and b is not None and a != a and b != b)
    except (TypeError, ValueError):
        return a is b


MAKERS["Series"] = Series


def _itself(value: Any) -> Any:
    return value


DEFERS_TO[Series] = _itself  # a traced value met with one gives way to its operators
FOREIGN.add(Series)  # and a staged one
