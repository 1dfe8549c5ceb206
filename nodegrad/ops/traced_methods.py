"""The traced handle's operators and array methods, attached from the layer that owns the ops.

:class:`~nodegrad.engine.traced.Traced` is defined in the engine as a bare handle; the
engine knows no particular op. Here its numpy face is written once, as the body of
:class:`_ArrayMethods`, and :func:`_attach` copies every member onto ``Traced`` when this
module is imported (numpy's dispatch protocols are attached the same way by
:mod:`nodegrad.numpy_api`). The operators are the functions themselves, so ``x + y``
costs what it would if they were written in the class: one call to ``record2``.
"""

from __future__ import annotations

import math
from types import FunctionType
from typing import TYPE_CHECKING, Any

import numpy as np

from nodegrad.engine.batched import Batched
from nodegrad.engine.record import record1, record2
from nodegrad.engine.traced import DEFERS_TO, Traced, describe, meet_libraries, unwrap
from nodegrad.errors import DtypeError, user_location
from nodegrad.ops import reduce
from nodegrad.ops.batching import comparison, value_function, value_ufunc
from nodegrad.ops.elementwise import (
    ABS,
    ADD,
    DIVIDE,
    MULTIPLY,
    NEGATIVE,
    SUBTRACT,
    clamp,
    conj,
    imag,
    power,
    real,
    remainder,
)
from nodegrad.ops.index import getitem
from nodegrad.ops.linalg import dot, matmul
from nodegrad.ops.pipeline import cumprod, cumsum
from nodegrad.ops.shape import astype, ravel, reshape, squeeze, swapaxes, transpose

__all__ = ["give_array_face"]


class _ArrayMethods:
    """What ``Traced`` does beyond being a handle: each operation records one node, or
    (comparisons, argmax, ...) gives plain values, which carry no gradient."""

    # Only a template: its members are copied onto Traced and run on traced values.
    value: Any

    if TYPE_CHECKING:  # Traced's own refusal, declared so numpy's types accept the handle

        def __array__(self) -> np.ndarray: ...

    # -- array attributes that record ----------------------------------------------------
    @property
    def T(self) -> Any:  # noqa: N802  (numpy's name)
        """The transpose, recorded as a node."""
        return transpose(self)

    @property
    def mT(self) -> Any:  # noqa: N802  (numpy's name)
        """The transpose of the last two axes (a stack of matrices), recorded as a node."""
        return swapaxes(self, -1, -2)

    @property
    def real(self) -> Any:
        """The real part, recorded as a node (the value itself when real)."""
        return real(self)

    @property
    def imag(self) -> Any:
        """The imaginary part, recorded as a node (plain zeros when real)."""
        return imag(self)

    # -- methods ------------------------------------------------------------------------
    def conj(self) -> Any:
        """The complex conjugate, as ``ndarray.conj``."""
        return conj(self)

    def conjugate(self) -> Any:
        """The complex conjugate, as ``ndarray.conjugate``."""
        return conj(self)

    def reshape(self, *shape: Any, order: Any = "C") -> Any:
        """Reshape, as ``ndarray.reshape``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape) if order == "C" else np.reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> Any:
        """Permute axes, as ``ndarray.transpose``."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes or None)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Sum over ``axis``, as ``ndarray.sum``."""
        return reduce.sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Mean over ``axis``, as ``ndarray.mean``."""
        return reduce.mean(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Maximum over ``axis``; tied maxima share the gradient evenly."""
        return reduce.max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Minimum over ``axis``; tied minima share the gradient evenly."""
        return reduce.min(self, axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Product over ``axis``, as ``ndarray.prod``."""
        return reduce.prod(self, axis, keepdims)

    def var(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """Variance over ``axis``, as ``ndarray.var``."""
        return reduce.var(self, axis, ddof, keepdims)

    def std(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """Standard deviation over ``axis``, as ``ndarray.std``."""
        return reduce.std(self, axis, ddof, keepdims)

    def cumsum(self, axis: Any = None) -> Any:
        """Cumulative sum, as ``ndarray.cumsum``."""
        return cumsum(self, axis)

    def cumprod(self, axis: Any = None) -> Any:
        """Cumulative product, as ``ndarray.cumprod``."""
        return cumprod(self, axis)

    def ravel(self, order: Any = "C") -> Any:
        """The flattened array, as ``ndarray.ravel``."""
        return ravel(self) if order == "C" else np.ravel(self, order=order)

    def flatten(self, order: Any = "C") -> Any:
        """The flattened array, as ``ndarray.flatten`` (values are never written in place,
        so a copy and a view are the same thing here)."""
        return ravel(self) if order == "C" else np.ravel(self, order=order)

    def squeeze(self, axis: Any = None) -> Any:
        """Drop axes of length one, as ``ndarray.squeeze``."""
        return squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """Swap two axes, as ``ndarray.swapaxes``."""
        return swapaxes(self, axis1, axis2)

    def dot(self, other: Any) -> Any:
        """Dot product, as ``ndarray.dot``."""
        return dot(self, other)

    def clip(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002  (numpy's names)
        """Limit the values to ``[min, max]``, as ``ndarray.clip``."""
        return clamp(self, min, max)

    def copy(self) -> Any:
        """The value itself: recorded values are never written in place."""
        return self

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """Cast, as ``ndarray.astype``: to another float dtype the gradient follows (cast
        back); to an integer or bool dtype the result is plain data with no gradient.
        ``copy`` is accepted for numpy's signature: recorded values are never written."""
        return astype(self, dtype)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """The diagonal, as ``ndarray.diagonal``."""
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """The sum of the diagonal, as ``ndarray.trace``."""
        return np.trace(self, offset, axis1, axis2)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        """Each entry repeated, as ``ndarray.repeat``."""
        return np.repeat(self, repeats, axis)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether any entry is nonzero (plain booleans: no gradient)."""
        return np.any(self.value, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether every entry is nonzero (plain booleans: no gradient)."""
        return np.all(self.value, axis=axis, keepdims=keepdims)

    def nonzero(self) -> Any:
        """Indices of the nonzero entries (plain integers: no gradient)."""
        return np.nonzero(self.value)

    def argmax(self, axis: Any = None) -> Any:
        """Index of the maximum (plain integers: no gradient)."""
        return np.argmax(self.value, axis=axis)

    def argmin(self, axis: Any = None) -> Any:
        """Index of the minimum (plain integers: no gradient)."""
        return np.argmin(self.value, axis=axis)

    def argsort(self, axis: int = -1) -> Any:
        """Indices that sort the values (plain integers: no gradient)."""
        return np.argsort(self.value, axis=axis)

    def __getitem__(self, index: Any) -> Any:
        return getitem(self, index)

    def __iter__(self) -> Any:
        # Without this, Python would iterate through __getitem__ until an IndexError, and a
        # 0-d value would silently give no entries where numpy raises.
        if np.ndim(unwrap(self.value)) == 0:
            msg = f"iteration over a 0-d traced value (node {self.index}), as over a 0-d array"  # type: ignore[attr-defined]
            raise DtypeError(msg)
        return (getitem(self, k) for k in range(len(unwrap(self.value))))

    @property
    def __pandas_priority__(self) -> int:
        # Above a DataFrame's (4000): pandas' own operator gives way, and this value's
        # reflected one answers, as nodegrad's table (series - x keeps the Series' labels).
        meet_libraries()
        return 5000

    # -- operators ------------------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__radd__")
        return record2(ADD, self, other)

    def __radd__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__add__")
        return record2(ADD, other, self)

    def __sub__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rsub__")
        return record2(SUBTRACT, self, other)

    def __rsub__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__sub__")
        return record2(SUBTRACT, other, self)

    def __mul__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rmul__")
        return record2(MULTIPLY, self, other)

    def __rmul__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__mul__")
        return record2(MULTIPLY, other, self)

    def __truediv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rtruediv__")
        return record2(DIVIDE, self, other)

    def __rtruediv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__truediv__")
        return record2(DIVIDE, other, self)

    def __pow__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rpow__")
        return power(self, other)

    def __rpow__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__pow__")
        return power(other, self)

    def __matmul__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rmatmul__")
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__matmul__")
        return matmul(other, self)

    def __mod__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rmod__")
        return remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__mod__")
        return remainder(other, self)

    # Floor division is piecewise constant: plain values, no gradient (as np.floor_divide).
    def __floordiv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rfloordiv__")
        return self.value // unwrap(other)

    def __rfloordiv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__floordiv__")
        return unwrap(other) // self.value

    def __divmod__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rdivmod__")
        return self // other, self % other  # np.divmod's pair: a plain quotient, a traced remainder

    def __rdivmod__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__divmod__")
        return other // self, other % self

    # int(), round() and math.trunc/floor/ceil are step functions, whose derivative is zero
    # wherever it exists: a plain number drops no gradient (unlike float(), which refuses).
    def __int__(self) -> int:
        return _on_value(int, self)

    def __round__(self, ndigits: Any = None) -> Any:
        return _on_value(round, self, ndigits)

    def __trunc__(self) -> Any:
        return _on_value(math.trunc, self)

    def __floor__(self) -> Any:
        return _on_value(math.floor, self)

    def __ceil__(self) -> Any:
        return _on_value(math.ceil, self)

    def __neg__(self) -> Any:
        return record1(NEGATIVE, self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return record1(ABS, self)

    # Comparisons give plain boolean masks: they have no gradient.
    def __lt__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__gt__")
        return self.value < unwrap(other)

    def __le__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__ge__")
        return self.value <= unwrap(other)

    def __gt__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__lt__")
        return self.value > unwrap(other)

    def __ge__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__le__")
        return self.value >= unwrap(other)

    def __eq__(self, other: object) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__eq__")
        return self.value == unwrap(other)

    def __ne__(self, other: object) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__ne__")
        return self.value != unwrap(other)


def _deferred(self: Any, other: Any, mirrored: str) -> Any:
    """``self`` met with a table's column (or a table): the column's operator answers,
    keeping its labels (a pandas Series closed over is taken as nodegrad's first)."""
    return getattr(DEFERS_TO[type(other)](other), mirrored)(self)


def _on_value(fn: Any, x: Any, *args: Any) -> Any:
    """``fn`` of ``x``'s plain value, for Python's conversions that have no gradient; what
    the value refuses (``int`` of a vector, ``round`` of an array) raises naming ``fn``."""
    value = unwrap(x.value)
    try:
        return fn(value, *args)
    except TypeError as exc:
        name = {"trunc": "math.trunc", "floor": "math.floor", "ceil": "math.ceil"}.get(fn.__name__, fn.__name__)
        msg = (
            f"{name}() of a traced value (node {x.index}, {describe(value)}): {exc}; for arrays use the numpy "
            f"function (np.round, np.trunc, np.floor, np.ceil, x.astype(int)) [called at {user_location()}]"
        )
        raise DtypeError(msg) from None


def _attach(cls: type, methods: type, keep: tuple[str, ...] = ()) -> None:
    """Copy the methods and properties of ``methods`` onto ``cls`` (not the class machinery
    Python adds to every class body, nor ``__hash__``, which ``__eq__`` resets), except the
    names in ``keep``, which ``cls`` defines itself."""
    for name, member in vars(methods).items():
        if isinstance(member, FunctionType | property) and name not in keep:
            setattr(cls, name, member)


class _BatchedValues:
    """Where a batched value differs from a traced one: the methods that give plain values
    (masks, indices) give them batched, one per example (see :mod:`nodegrad.ops.batching`)."""

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether any entry is true, per example."""
        return value_function(np.any, (self,), {"axis": axis, "keepdims": keepdims})

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether every entry is true, per example."""
        return value_function(np.all, (self,), {"axis": axis, "keepdims": keepdims})

    def nonzero(self) -> Any:
        """Indices of the nonzero entries, per example, as ``np.nonzero`` (where every
        example has as many)."""
        return value_function(np.nonzero, (self,), {})

    def argmax(self, axis: Any = None) -> Any:
        """Index of the maximum, per example."""
        return value_function(np.argmax, (self,), {"axis": axis})

    def argmin(self, axis: Any = None) -> Any:
        """Index of the minimum, per example."""
        return value_function(np.argmin, (self,), {"axis": axis})

    def argsort(self, axis: int = -1) -> Any:
        """Indices that sort each example."""
        return value_function(np.argsort, (self,), {"axis": axis})

    def __floordiv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__rfloordiv__")
        return value_ufunc(np.floor_divide, "__call__", (self, other), {})

    def __rfloordiv__(self, other: Any) -> Any:
        if type(other) in DEFERS_TO:
            return _deferred(self, other, "__floordiv__")
        return value_ufunc(np.floor_divide, "__call__", (other, self), {})

    __and__ = comparison(np.bitwise_and)  # masks combined: plain values, batched
    __or__ = comparison(np.bitwise_or)
    __xor__ = comparison(np.bitwise_xor)
    __rand__ = comparison(np.bitwise_and)
    __ror__ = comparison(np.bitwise_or)
    __rxor__ = comparison(np.bitwise_xor)

    def __invert__(self) -> Any:
        return value_ufunc(np.invert, "__call__", (self,), {})

    __lt__ = comparison(np.less)
    __le__ = comparison(np.less_equal)
    __gt__ = comparison(np.greater)
    __ge__ = comparison(np.greater_equal)
    __eq__ = comparison(np.equal)
    __ne__ = comparison(np.not_equal)


def give_array_face(cls: type) -> None:
    """Give ``cls``, the class of an interpreter's values, a traced value's operators and
    array methods: each runs an op through the registry, which hands it to the interpreter
    of the innermost level among its arguments. What ``cls`` defines itself (its shape,
    iteration, the answers it gives where a traced value reads its values) stays its own."""
    _attach(cls, _ArrayMethods, keep=tuple(vars(cls)))


_attach(Traced, _ArrayMethods)
# What a batched value defines itself (its example's shape, iteration, and refusals to become
# one Python number where each example has its own) stays its own.
_attach(Batched, _BatchedValues)
give_array_face(Batched)
