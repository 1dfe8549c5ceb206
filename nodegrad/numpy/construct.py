"""Arrays built from Python lists and fill values that hold traced values.

numpy builds ``np.array([x, y])`` and ``np.full(shape, x)`` in C, from the elements'
numbers, without asking them: a traced element could only become a plain number and lose
its gradient (nodegrad refuses that). These versions look inside the nested lists and
tuples first: with no traced value there, they are numpy's own functions, to the letter;
with one, they stack the entries with nodegrad ops, so the gradient reaches every traced
element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, user_location
from nodegrad.numpy_api.composed import filled
from nodegrad.numpy_api.composed import full_like as composed_full_like

__all__ = [
    "array",
    "asanyarray",
    "asarray",
    "asarray_chkfinite",
    "ascontiguousarray",
    "asfortranarray",
    "full",
    "full_like",
    "require",
]


def _holds_traced(obj: Any) -> bool:
    if type(obj) in INTERPRETED:
        return True
    return isinstance(obj, (list, tuple)) and any(_holds_traced(item) for item in obj)


def _stacked(obj: Any, where: str) -> Any:
    """``obj`` (a traced value, a plain value, or nested lists and tuples of them) as one
    array, traced when it holds a traced value."""
    if not isinstance(obj, (list, tuple)) or not _holds_traced(obj):
        return obj if type(obj) in INTERPRETED else np.asarray(obj)
    parts = [_stacked(item, where) for item in obj]
    shapes = {np.shape(part) for part in parts}
    if len(shapes) > 1:
        msg = (
            f"{where}: the entries of a nested sequence have different shapes {sorted(shapes)} (a ragged list) "
            f"[called at {user_location()}]"
        )
        raise ShapeError(msg)
    return ops.stack(parts, 0)


def _dtype_of(obj: Any) -> np.dtype[Any]:
    """The dtype numpy would give ``np.array(obj)``, reading traced elements' values."""
    if isinstance(obj, (list, tuple)):
        leaves = [_dtype_of(item) if isinstance(item, (list, tuple)) else unwrap(item) for item in obj]
        return np.result_type(*leaves) if leaves else np.dtype(np.float64)
    return np.result_type(unwrap(obj))


def _non_numeric(obj: Any, path: str = "") -> tuple[str, Any] | None:
    """The index path and value of the first entry of ``obj`` that is not a number."""
    if isinstance(obj, (list, tuple)):
        for k, item in enumerate(obj):
            found = _non_numeric(item, f"{path}[{k}]")
            if found is not None:
                return found
        return None
    if type(obj) in _NUMBERS or np.asarray(obj).dtype.kind in "biufc":
        return None
    return path, obj


_NUMBERS = frozenset({*DIFFERENTIATING, float, int, bool, complex})


def _numeric_dtype_of(obj: Any, where: str) -> np.dtype[Any]:
    """:func:`_dtype_of` for a sequence holding traced values, which must make a numeric
    array: a string or object array carries no gradient."""
    bad = _non_numeric(obj)
    if bad is not None:
        path, entry = bad
        msg = (
            f"{where}: entry {path} is {entry!r} (dtype {np.asarray(entry).dtype}), in a sequence holding traced "
            f"values: such a sequence must hold numbers only, as a string or object array carries no gradient "
            f"[called at {user_location()}]"
        )
        raise DtypeError(msg)
    return _dtype_of(obj)


def _with_dtype(value: Any, dtype: Any, ndmin: int) -> Any:
    if dtype is not None and np.dtype(dtype) != value.dtype:
        value = ops.astype(value, dtype)  # to an integer dtype: plain data, no gradient
    missing = ndmin - np.ndim(unwrap(value))
    if missing > 0:
        value = ops.reshape(value, (1,) * missing + np.shape(unwrap(value)))
    return value


def array(obj: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K", subok: Any = False, ndmin: int = 0,
          like: Any = None) -> Any:  # fmt: skip
    """``np.array``, also for lists and tuples holding traced values: ``np.array([x, 2 * x, 3.0])``.

    Without a traced value inside, this is ``numpy.array`` itself. With one, the entries are
    stacked with nodegrad ops (their dtype as numpy would choose it; ``dtype=`` casts), so
    the result is traced and the gradient reaches every traced entry. ``copy``, ``order``
    and ``subok`` have no effect on traced values, whose values are never written in place.

    Examples
    --------
    >>> import numpy
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.array([x, x * 2.0, 3.0]) ** 2.0))(1.5)
    15.0
    >>> np.array([[1, 2], [3, 4]]).dtype == numpy.array([[1, 2], [3, 4]]).dtype
    True
    """
    if not _holds_traced(obj):
        if like is None:
            return np.array(obj, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
        return np.array(obj, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, like=like)
    natural = _numeric_dtype_of(obj, "np.array")
    value = _stacked(obj, "np.array")
    if value.dtype != natural:
        value = ops.astype(value, natural)
    return _with_dtype(value, dtype, ndmin)


def asarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    """``np.asarray``, also for lists and tuples holding traced values (see :func:`array`).

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.asarray((x, 1.0)) * np.asarray([2.0, 5.0])))(1.0)
    2.0
    """
    if not _holds_traced(a):
        return np.asarray(a, dtype=dtype, order=order, **kwargs)
    if type(a) in INTERPRETED:
        return _with_dtype(a, dtype, 0)
    return array(a, dtype=dtype)


def asanyarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    """``np.asanyarray``, also for lists and tuples holding traced values (see :func:`array`).

    Examples
    --------
    >>> import nodegrad.numpy as np
    >>> np.asanyarray([1.0, 2.0])
    array([1., 2.])
    """
    if not _holds_traced(a):
        return np.asanyarray(a, dtype=dtype, order=order, **kwargs)
    return asarray(a, dtype=dtype)


def ascontiguousarray(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """``np.ascontiguousarray``, also for traced values (memory layout does not apply to them).

    Examples
    --------
    >>> import nodegrad.numpy as np
    >>> np.ascontiguousarray([1.0, 2.0]).flags["C_CONTIGUOUS"]
    True
    """
    if not _holds_traced(a):
        return np.ascontiguousarray(a, dtype=dtype, **kwargs)
    return array(a, dtype=dtype, ndmin=1)


def asfortranarray(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """``np.asfortranarray``, also for traced values (memory layout does not apply to them).

    Examples
    --------
    >>> import nodegrad.numpy as np
    >>> np.asfortranarray([[1.0, 2.0]]).flags["F_CONTIGUOUS"]
    True
    """
    if not _holds_traced(a):
        return np.asfortranarray(a, dtype=dtype, **kwargs)
    return array(a, dtype=dtype, ndmin=1)


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    """``np.asarray_chkfinite``, also for traced values and lists holding them: the value
    itself (see :func:`asarray`) once no entry is infinite or NaN (else a
    :class:`~nodegrad.errors.ShapeError`, a ValueError as numpy's).

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.asarray_chkfinite([x, 2.0 * x])))(1.0)
    3.0
    """
    if not _holds_traced(a):
        return np.asarray_chkfinite(a, dtype=dtype, order=order)
    value = asarray(a, dtype=dtype)
    if value.dtype.char in np.typecodes["AllFloat"] and not np.isfinite(unwrap(value)).all():
        msg = f"np.asarray_chkfinite: array must not contain infs or NaNs [called at {user_location()}]"
        raise ShapeError(msg)
    return value


# numpy's names for the flags np.require takes, and the letter each stands for.
_FLAGS = {
    **dict.fromkeys(("C", "C_CONTIGUOUS", "CONTIGUOUS"), "C"),
    **dict.fromkeys(("F", "F_CONTIGUOUS", "FORTRAN"), "F"),
    **dict.fromkeys(("A", "ALIGNED"), "A"),
    **dict.fromkeys(("W", "WRITEABLE"), "W"),
    **dict.fromkeys(("O", "OWNDATA"), "O"),
    **dict.fromkeys(("E", "ENSUREARRAY"), "E"),
}


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    """``np.require``, also for traced values and lists holding them: the value (see
    :func:`asarray`) cast to ``dtype``. The memory layouts (C, F), alignment, own data and
    base-class requests hold for it trivially; a writeable array (W) is refused with an
    :class:`~nodegrad.errors.ArgumentError`: traced values are never written in place.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.require([x, x], requirements="C")))(1.0)
    2.0
    """
    if not _holds_traced(a):
        if like is None:
            return np.require(a, dtype=dtype, requirements=requirements)
        return np.require(a, dtype=dtype, requirements=requirements, like=like)
    flags = set()
    for flag in requirements or ():
        if flag.upper() not in _FLAGS:
            msg = f"np.require: unknown requirement {flag!r} [called at {user_location()}]"
            raise ArgumentError(msg)
        flags.add(_FLAGS[flag.upper()])
    if flags >= {"C", "F"}:
        raise ArgumentError(f'np.require: Cannot specify both "C" and "F" order [called at {user_location()}]')
    if "W" in flags:
        msg = (
            f"np.require: a writeable array (requirement 'W') is not available for traced values, which are "
            f"never written in place [called at {user_location()}]"
        )
        raise ArgumentError(msg)
    return asarray(a, dtype=dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: Any = "C", **kwargs: Any) -> Any:
    """``np.full``, also with a traced ``fill_value`` (a scalar or an array that broadcasts
    to ``shape``): every entry then carries the fill value's gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda s: np.sum(np.full((2, 3), s) * 2.0))(1.0)
    12.0
    """
    if not _holds_traced(fill_value):
        return np.full(shape, fill_value, dtype=dtype, order=order, **kwargs)
    return filled(shape, asarray(fill_value), dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None,
              **kwargs: Any) -> Any:  # fmt: skip
    """``np.full_like``, also with a traced ``fill_value`` (see :func:`full`), whether ``a``
    is traced or not; ``a`` gives only the shape and the default dtype.

    Examples
    --------
    >>> import numpy
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda s: np.sum(np.full_like(numpy.zeros(4), s)))(1.0)
    4.0
    """
    fill = asarray(fill_value) if _holds_traced(fill_value) else fill_value
    return composed_full_like(a, fill, dtype=dtype, order=order, subok=subok, shape=shape, **kwargs)
