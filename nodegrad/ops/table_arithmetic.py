"""Arithmetic of whole tables: ``f * 2``, ``f[["x", "y"]] - g``, ``-f``, as pandas has it.

A :class:`~nodegrad.ops.tables.Frame` combined with a number applies the operator to each
column; with another Frame, column by column, where both have the same column labels in
the same order and the same row labels (pandas would align mismatched labels into NaN
rows and columns; here that is refused, naming what differs). Every column must be
numeric: pandas' string columns do not add.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from nodegrad.engine.traced import unwrap
from nodegrad.errors import ShapeError, StructureError, user_location

__all__ = ["TableArithmetic"]


class TableArithmetic:
    """The operators of a table whose columns live in ``_columns`` and whose row labels are
    ``_index``; ``_with_columns(columns)`` builds the result with the same rows."""

    __slots__ = ()
    _columns: dict[Hashable, Any]
    _index: Any

    def _with_columns(self, columns: dict[Hashable, Any]) -> Any:
        raise NotImplementedError

    def _combined(self, other: Any, op: Callable[[Any, Any], Any], symbol: str, swap: bool = False) -> Any:
        numeric = self._numeric(symbol)
        if isinstance(other, TableArithmetic):
            theirs = other._numeric(symbol)
            _check_alike(self, other, symbol)
            pairs = {label: (value, theirs[label]) for label, value in numeric.items()}
        elif np.ndim(unwrap(other)) == 0:
            pairs = {label: (value, other) for label, value in numeric.items()}
        else:
            msg = (
                f"Frame {symbol} {type(other).__name__} of shape {np.shape(unwrap(other))}: a Frame combines with a "
                f"number or another Frame; for an array per column write f['x'] {symbol} values [at {user_location()}]"
            )
            raise ShapeError(msg)
        return self._with_columns({label: op(b, a) if swap else op(a, b) for label, (a, b) in pairs.items()})

    def _numeric(self, symbol: str) -> dict[Hashable, Any]:
        for label, value in self._columns.items():
            dtype = getattr(unwrap(value), "dtype", None)
            if not isinstance(dtype, np.dtype) or dtype.kind not in "biufc":
                msg = (
                    f"Frame {symbol}: the column {label!r} is not numeric ({dtype}); select the numeric columns "
                    f"first, f[['x', 'y']] {symbol} ... [at {user_location()}]"
                )
                raise StructureError(msg)
        return self._columns

    def __add__(self, other: Any) -> Any:
        return self._combined(other, operator.add, "+")

    def __radd__(self, other: Any) -> Any:
        return self._combined(other, operator.add, "+", swap=True)

    def __sub__(self, other: Any) -> Any:
        return self._combined(other, operator.sub, "-")

    def __rsub__(self, other: Any) -> Any:
        return self._combined(other, operator.sub, "-", swap=True)

    def __mul__(self, other: Any) -> Any:
        return self._combined(other, operator.mul, "*")

    def __rmul__(self, other: Any) -> Any:
        return self._combined(other, operator.mul, "*", swap=True)

    def __truediv__(self, other: Any) -> Any:
        return self._combined(other, operator.truediv, "/")

    def __rtruediv__(self, other: Any) -> Any:
        return self._combined(other, operator.truediv, "/", swap=True)

    def __pow__(self, other: Any) -> Any:
        return self._combined(other, operator.pow, "**")

    def __rpow__(self, other: Any) -> Any:
        return self._combined(other, operator.pow, "**", swap=True)

    def __neg__(self) -> Any:
        return self._with_columns({label: -value for label, value in self._numeric("-").items()})

    def __abs__(self) -> Any:
        return self._with_columns({label: abs(value) for label, value in self._numeric("abs").items()})


def _check_alike(left: TableArithmetic, right: TableArithmetic, symbol: str) -> None:
    if list(left._columns) != list(right._columns):
        msg = (
            f"Frame {symbol} Frame: the columns differ ({list(left._columns)} and {list(right._columns)}); pandas "
            f"would align them into NaN columns: select the same columns in the same order [at {user_location()}]"
        )
        raise StructureError(msg)
    if not left._index.equals(right._index):
        msg = (
            f"Frame {symbol} Frame: the row labels differ; pandas would align them into NaN rows: reset or select "
            f"the rows first [at {user_location()}]"
        )
        raise StructureError(msg)
