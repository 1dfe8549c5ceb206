"""numpy's selections, rearrangements, sequences and sliding products, built from the ops.

``np.delete``, ``np.insert``, ``np.compress``, ``np.extract``, ``np.resize``,
``np.choose`` and ``np.block`` let numpy itself arrange *entry numbers* (an array of ids
standing for the entries of the operands), so every argument numpy takes, every error it
raises and every shape it gives is numpy's own; the traced entries are then read at those
ids with ``ops.getitem``, and the gradient of each output goes back to the entry it came
from (an entry read twice gets both gradients). ``np.correlate`` is ``np.convolve`` with
the reversed kernel, ``np.interp`` the line through the two samples either side
(differentiable in ``x``, ``xp`` and ``fp``), ``np.unwrap`` adds numpy's multiples of the
period (piecewise constant: the gradient passes through), ``np.logspace`` and
``np.geomspace`` are powers of ``np.linspace``'s samples, and ``np.piecewise`` calls the
chosen functions on the traced entries each condition selects.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.batched import plain, plain_map
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, has_values
from nodegrad.engine.traced import describe
from nodegrad.engine.traced import unwrap as _value
from nodegrad.errors import ArgumentError, AxisError, DtypeError, ShapeError, error_like, user_location
from nodegrad.numpy_api.along_axis import linspace
from nodegrad.numpy_api.arguments import as_operand, refusal
from nodegrad.numpy_api.composed import convolve, diag

__all__ = [
    "SEQUENCES",
    "astype",
    "block",
    "broadcast_arrays",
    "choose",
    "compress",
    "correlate",
    "cumulative_prod",
    "cumulative_sum",
    "delete",
    "diagflat",
    "ediff1d",
    "extract",
    "geomspace",
    "insert",
    "interp",
    "logspace",
    "meshgrid",
    "piecewise",
    "resize",
    "trim_zeros",
    "unstack",
    "unwrap",
    "vdot",
]


def _fail(name: str, exc: Exception) -> Exception:
    """numpy's own complaint, naming the function and the caller's line, as the nodegrad
    error of its kind (numpy's AxisError as :class:`~nodegrad.errors.AxisError`, ...)."""
    return refusal(name, str(exc), error_like(exc) or ShapeError)


def _ids(a: Any, first: int = 0) -> np.ndarray:
    """Entry numbers shaped like ``a``, counting from ``first``."""
    shape = np.shape(_value(a))
    return np.arange(first, first + math.prod(shape), dtype=np.intp).reshape(shape)


def _read(flat: Any, ids: np.ndarray) -> Any:
    return ops.getitem(flat, ids)


# -- selections and rearrangements -------------------------------------------------------------


def delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    arr = as_operand(arr)
    try:
        ids = np.delete(_ids(arr), obj, axis)
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("delete", exc) from None
    return _read(ops.ravel(arr), ids)


def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    arr, values = as_operand(arr), as_operand(values)
    n = math.prod(np.shape(_value(arr)))
    try:  # values' entries numbered after arr's: numpy broadcasts and places them
        ids = np.insert(_ids(arr), obj, _ids(values, n), axis)
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("insert", exc) from None
    dtype = np.result_type(_value(arr))
    if np.result_type(_value(values)) != dtype:  # numpy casts the values to arr's dtype
        if np.iscomplexobj(_value(values)) and dtype.kind != "c":
            msg = (
                f"np.insert: complex values into a {dtype} array would lose their imaginary parts (numpy only "
                f"warns); insert into arr.astype(complex) [called at {user_location()}]"
            )
            raise DtypeError(msg)
        values = ops.astype(values, dtype) if type(values) in INTERPRETED else np.asarray(values).astype(dtype)
    return _read(ops.cat([ops.ravel(arr), ops.ravel(values)], 0), ids)


def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    if out is not None:
        raise ArgumentError(f"np.compress: out= is not supported on traced values [called at {user_location()}]")
    a = as_operand(a)
    try:
        ids = np.compress(np.asarray(_value(condition)), _ids(a), axis)
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("compress", exc) from None
    return _read(ops.ravel(a), ids)


def extract(condition: Any, arr: Any) -> Any:
    arr = as_operand(arr)
    try:
        ids = np.extract(np.asarray(_value(condition)), _ids(arr))
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("extract", exc) from None
    return _read(ops.ravel(arr), ids)


def resize(a: Any, new_shape: Any) -> Any:
    a = as_operand(a)
    try:
        ids = np.resize(_ids(a), new_shape)
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("resize", exc) from None
    if np.size(_value(a)) == 0:  # numpy fills with zeros
        return np.zeros(ids.shape, np.result_type(_value(a)))
    return _read(ops.ravel(a), ids)


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    if out is not None:
        raise ArgumentError(f"np.choose: out= is not supported on traced values [called at {user_location()}]")
    if type(a) in DIFFERENTIATING:
        raise DtypeError(f"np.choose: a must hold integer indices, not traced values [called at {user_location()}]")
    picks = [as_operand(c) for c in choices]
    try:
        shape = np.broadcast_shapes(np.shape(a), *(np.shape(_value(c)) for c in picks))
        size = math.prod(shape)
        numbered = [np.arange(k * size, (k + 1) * size, dtype=np.intp).reshape(shape) for k in range(len(picks))]
        ids = np.choose(a, numbered, mode=mode)  # type: ignore[call-overload]
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("choose", exc) from None
    flat = ops.cat([ops.ravel(ops.broadcast_to(c, shape)) for c in picks], 0)
    return _read(flat, ids)


def _nesting(arrays: Any, first: list[int]) -> Any:
    """``arrays`` with each leaf replaced by its entry numbers (counted in ``first``)."""
    if isinstance(arrays, list):
        return [_nesting(x, first) for x in arrays]
    if isinstance(arrays, tuple):
        return arrays  # numpy refuses tuples: let it say so
    ids = _ids(arrays, first[0])
    first[0] += ids.size
    return ids


def _leaves(arrays: Any) -> list[Any]:
    if isinstance(arrays, list):
        return [leaf for x in arrays for leaf in _leaves(x)]
    return [as_operand(arrays)]


def block(arrays: Any) -> Any:
    leaves = _leaves(arrays)
    try:
        ids = np.block(_nesting(arrays, [0]))
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("block", exc) from None
    dtype = np.result_type(*(_value(x) for x in leaves))
    flat = ops.cat([ops.ravel(x) for x in leaves], 0)
    if np.result_type(_value(flat)) != dtype:
        flat = ops.astype(flat, dtype)
    return _read(flat, np.asarray(ids, np.intp))


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    value = np.asarray(_value(filt))
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ArgumentError(f"np.trim_zeros: unexpected character(s) in `trim`: {trim!r} [called at {user_location()}]")
    if axis is None:
        picked: tuple[int, ...] = tuple(range(value.ndim))
    else:
        given = axis if isinstance(axis, (tuple, list)) else (axis,)
        try:
            picked = tuple(operator.index(ax) % value.ndim for ax in given if -value.ndim <= operator.index(ax))
        except (TypeError, ZeroDivisionError):
            raise ArgumentError(f"np.trim_zeros: invalid axis {axis!r} [called at {user_location()}]") from None
        if len(picked) != len(given) or any(operator.index(ax) >= value.ndim for ax in given):
            raise AxisError(f"np.trim_zeros: axis {axis!r} is out of bounds [called at {user_location()}]")
    if not picked:
        return filt
    nonzero = np.argwhere(value)
    if nonzero.size == 0:
        start: Any = np.zeros(value.ndim, np.intp)
        stop: Any = start
    else:
        start, stop = nonzero.min(axis=0), nonzero.max(axis=0) + 1
        start = start if "f" in trim else (None,) * value.ndim
        stop = stop if "b" in trim else (None,) * value.ndim
    index = tuple(slice(start[ax], stop[ax]) if ax in picked else slice(None) for ax in range(value.ndim))
    return ops.getitem(filt, index)


# -- stacking and broadcasting -----------------------------------------------------------------


def unstack(x: Any, /, *, axis: int = 0) -> Any:
    shape = np.shape(_value(x))
    if not shape:
        raise ShapeError(f"np.unstack: Input array must be at least 1-d. [called at {user_location()}]")
    moved = ops.moveaxis(x, axis, 0)
    return tuple(ops.getitem(moved, k) for k in range(np.shape(_value(moved))[0]))


def broadcast_arrays(*args: Any, subok: bool = False) -> Any:
    try:
        shape = np.broadcast_shapes(*(np.shape(_value(a)) for a in args))
    except ValueError as exc:
        raise _fail("broadcast_arrays", exc) from None
    return tuple(
        ops.broadcast_to(a, shape) if type(a) in INTERPRETED else np.broadcast_to(np.asarray(a), shape) for a in args
    )


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    if indexing not in ("xy", "ij"):
        raise ArgumentError(
            f"np.meshgrid: Valid values for `indexing` are 'xy' and 'ij'. [called at {user_location()}]"
        )
    ndim = len(xi)
    ones = (1,) * ndim
    out = [ops.reshape(as_operand(x), (*ones[:i], -1, *ones[i + 1 :])) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = ops.reshape(out[0], (1, -1, *ones[2:]))
        out[1] = ops.reshape(out[1], (-1, 1, *ones[2:]))
    return tuple(broadcast_arrays(*out) if not sparse else out)


# -- products, differences and scans -----------------------------------------------------------


def vdot(a: Any, b: Any, /) -> Any:
    if np.size(_value(a)) != np.size(_value(b)):
        msg = f"np.vdot: vectors have different lengths {np.size(_value(a))} and {np.size(_value(b))}"
        raise ShapeError(f"{msg} [called at {user_location()}]")
    a = as_operand(a)
    if np.iscomplexobj(_value(a)):  # numpy conjugates the first vector
        a = ops.conj(a)
    return ops.dot(ops.ravel(a), ops.ravel(as_operand(b)))


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    # sum_n a[n + k] conj(v[n]): the convolution with v reversed and conjugated, cut as
    # numpy cuts it.
    a, v = as_operand(a), as_operand(v)
    if np.iscomplexobj(_value(v)):
        v = ops.conj(v)
    n, m = np.size(_value(a)), np.size(_value(v))
    if np.ndim(_value(a)) != 1 or np.ndim(_value(v)) != 1 or not n or not m:
        msg = f"needs two non-empty 1-D arrays, got shapes {np.shape(_value(a))} and {np.shape(_value(v))}"
        raise ShapeError(f"np.correlate: {msg} [called at {user_location()}]")
    full = convolve(a, ops.flip(v, 0), "full")
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2 if n >= m else n // 2
        return ops.getitem(full, slice(start, start + max(n, m)))
    if mode == "valid":
        start = min(n, m) - 1
        return ops.getitem(full, slice(start, start + abs(n - m) + 1))
    msg = f"mode must be 'full', 'same' or 'valid', got {mode!r}"
    raise ArgumentError(f"np.correlate: {msg} [called at {user_location()}]")


def diagflat(v: Any, k: int = 0) -> Any:
    return diag(ops.ravel(as_operand(v)), k)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    flat = ops.ravel(as_operand(ary))
    dtype = np.result_type(_value(flat))
    parts = [ops.getitem(flat, slice(1, None)) - ops.getitem(flat, slice(None, -1))]
    for extra, front in ((to_begin, True), (to_end, False)):
        if extra is None:
            continue
        if not np.can_cast(np.result_type(_value(extra)), dtype, "same_kind"):
            msg = f"np.ediff1d: dtype of `{'to_begin' if front else 'to_end'}` must be compatible with input `ary`"
            raise DtypeError(f"{msg} under the `same_kind` rule. [called at {user_location()}]")
        piece = ops.ravel(as_operand(extra))
        if np.result_type(_value(piece)) != dtype:
            piece = ops.astype(piece, dtype)
        parts.insert(0, piece) if front else parts.append(piece)
    return ops.cat(parts, 0)


def _cumulative(name: str, scan: Callable[..., Any], start: float) -> Callable[..., Any]:
    def cumulative(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                   include_initial: bool = False) -> Any:  # fmt: skip
        if out is not None or dtype is not None:
            given = [k for k, v in (("dtype", dtype), ("out", out)) if v is not None]
            raise ArgumentError(f"np.{name}: {given} not supported on traced values [called at {user_location()}]")
        shape = np.shape(_value(x))
        if axis is None:
            if len(shape) > 1:
                msg = "For arrays which have more than one dimension ``axis`` argument is required."
                raise ShapeError(f"np.{name}: {msg} [called at {user_location()}]")
            axis = 0
        if not shape:
            raise ShapeError(f"np.{name}: the input must have at least one dimension [called at {user_location()}]")
        axis = operator.index(axis)
        if not -len(shape) <= axis < len(shape):
            raise AxisError(f"np.{name}: axis {axis} is out of bounds [called at {user_location()}]")
        result = scan(x, axis)
        if include_initial:
            ax = axis % len(shape)
            first = np.full((*shape[:ax], 1, *shape[ax + 1 :]), start, np.result_type(_value(result)))
            result = ops.cat([first, result], axis)
        return result

    return cumulative


cumulative_sum = _cumulative("cumulative_sum", ops.cumsum, 0.0)
cumulative_prod = _cumulative("cumulative_prod", ops.cumprod, 1.0)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    if device not in (None, "cpu"):
        raise ArgumentError(f"np.astype: device must be None or 'cpu', got {device!r} [called at {user_location()}]")
    target = np.dtype(dtype)
    if np.iscomplexobj(_value(x)) and target.kind != "c":
        msg = f"np.astype: casting complex values to {target} would discard their imaginary parts"
        raise DtypeError(f"{msg}; take np.real(x) first [called at {user_location()}]")
    return x if np.result_type(_value(x)) == target else ops.astype(x, target)


# -- sequences and curves ----------------------------------------------------------------------


def logspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None,
             axis: int = 0) -> Any:  # fmt: skip
    if type(base) not in DIFFERENTIATING and not isinstance(base, (float, int)) and np.ndim(base):
        ndmax = np.broadcast(_value(start), _value(stop), np.asarray(base)).ndim
        start, stop = (ops.reshape(a, (1,) * (ndmax - np.ndim(_value(a))) + np.shape(_value(a))) for a in (
            as_operand(start), as_operand(stop)))  # fmt: skip
        base = np.expand_dims(np.asarray(base).reshape((1,) * (ndmax - np.ndim(base)) + np.shape(base)), axis)
    elif type(base) in DIFFERENTIATING and np.ndim(_value(base)):
        raise ArgumentError(f"np.logspace: a traced base must be a scalar [called at {user_location()}]")
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    result = ops.power(base, y) if type(base) in INTERPRETED or type(y) in INTERPRETED else np.power(base, y)
    if dtype is None or np.result_type(_value(result)) == np.dtype(dtype):
        return result
    return ops.astype(result, dtype)


def geomspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    start_value, stop_value = np.asanyarray(_value(start)), np.asanyarray(_value(stop))
    if np.any(start_value == 0) or np.any(stop_value == 0):
        raise ArgumentError(f"np.geomspace: Geometric sequence cannot include zero [called at {user_location()}]")
    dt = np.result_type(start_value, stop_value, float(num), np.zeros((), dtype))
    if dt.kind == "c":
        raise DtypeError(f"np.geomspace: complex values are not supported yet [called at {user_location()}]")
    start = ops.astype(as_operand(start), dt) if np.result_type(start_value) != dt else as_operand(start)
    stop = ops.astype(as_operand(stop), dt) if np.result_type(stop_value) != dt else as_operand(stop)
    sign = np.sign(start_value).astype(dt)  # piecewise constant: no gradient
    start, stop = start / sign, stop / sign
    result = logspace(ops.log10(start), ops.log10(stop), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    n = np.shape(_value(result))[0]
    if n > 0:  # the endpoints are start and stop themselves, as numpy writes them
        pieces = [ops.expand_dims(ops.broadcast_to(start, np.shape(_value(result))[1:]), 0)]
        last = n - 1 if n > 1 and endpoint else n
        pieces.append(ops.getitem(result, slice(1, last)))
        if last < n:
            pieces.append(ops.expand_dims(ops.broadcast_to(stop, np.shape(_value(result))[1:]), 0))
        result = ops.cat(pieces, 0)
    result = result * sign
    if axis != 0:
        result = ops.moveaxis(result, 0, axis)
    target = dt if dtype is None else np.dtype(dtype)
    return result if target == dt else ops.astype(result, target)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    if period is not None:
        raise ArgumentError(f"np.interp: period= is not supported on traced values [called at {user_location()}]")
    for name, given, kinds in (("x", x, "biuf"), ("xp", xp, "biuf"), ("fp", fp, "biufc")):
        dtype = _dtype(given)
        if dtype.kind not in kinds:
            what = "real numbers, as in numpy" if kinds == "biuf" else "numbers"
            msg = f"np.interp: {name} must be {what}, got {describe(given)} (dtype {dtype})"
            raise DtypeError(f"{msg} [called at {user_location()}]")
    # The samples are read (the search needs their positions; a batched sample runs once per example).
    xps, fps = np.asarray(_value(xp), np.float64), np.asarray(_value(fp))
    wide = np.dtype(np.complex128 if fps.dtype.kind == "c" else np.float64)  # numpy's: complex fp, complex values
    if xps.ndim != 1 or fps.ndim != 1 or xps.shape != fps.shape or not xps.size:
        msg = f"fp and xp are not of the same length, or not 1-D and non-empty: {xps.shape} and {fps.shape}"
        raise ShapeError(f"np.interp: {msg} [called at {user_location()}]")
    x, xp, fp = as_operand(x), as_operand(xp), as_operand(fp)
    if fps.dtype != wide:
        fp = ops.astype(fp, wide) if type(fp) in INTERPRETED else fps.astype(wide)
    if x.dtype != np.float64:
        x = ops.astype(x, np.float64) if type(x) in INTERPRETED else x.astype(np.float64)
    n = xps.size
    # x's values without a gradient, at their own level (every example's under vmap, a shape
    # only under eval_shape): the segment [xp[j], xp[j + 1]) holding each x (numpy's binary
    # search), the last one closed; outside the samples, left and right.
    xs = plain(x)
    j = plain_map(lambda v: np.clip(np.searchsorted(xps, v, side="right") - 1, 0, max(n - 2, 0)), xs)
    shape = np.shape(xs)
    if n == 1:
        inside: Any = ops.broadcast_to(ops.getitem(fp, 0), shape)
    else:
        x0, x1 = ops.getitem(xp, j), ops.getitem(xp, j + 1)
        y0, y1 = ops.getitem(fp, j), ops.getitem(fp, j + 1)
        slope = (y1 - y0) / (x1 - x0)
        inside = slope * (x - x0) + y0
        inside = ops.where(xs == xps[-1], ops.broadcast_to(ops.getitem(fp, n - 1), shape), inside)
    low = ops.getitem(fp, 0) if left is None else as_operand(left)
    high = ops.getitem(fp, n - 1) if right is None else as_operand(right)
    # Through x even where x picks no slope (one sample, outside): a zero gradient, still traced.
    # A NaN x gives NaN, as numpy's search does, but fp[0] of one sample, as numpy's own branch for it.
    passed = np.isnan(xs) if n > 1 else np.zeros(shape, bool)
    result = ops.where(xs < xps[0], low, ops.where(xs > xps[-1], high, ops.where(passed, x, inside)))
    return result if np.shape(_value(result)) == shape else ops.broadcast_to(result, shape)


def _dtype(value: Any) -> np.dtype[Any]:
    """The dtype of an argument, read without its values."""
    return value.dtype if type(value) in INTERPRETED else np.asarray(value).dtype


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: Any = 2 * np.pi) -> Any:
    value = np.asarray(_value(p))
    try:  # numpy's correction, on the values: whole periods, piecewise constant (no gradient)
        unwrapped = np.unwrap(value, discont, axis, period=period)
    except (IndexError, ValueError, TypeError) as exc:
        raise _fail("unwrap", exc) from None
    p = as_operand(p)
    if np.result_type(_value(p)) != unwrapped.dtype:
        p = ops.astype(p, unwrapped.dtype)
    return p + (unwrapped - value)


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """numpy's steps: each function (or constant) fills the entries its condition selects,
    later conditions over earlier ones; entries no condition selects are 0. The gradient
    reaches x through the functions called on the selected entries."""
    x = as_operand(x)
    shape, dtype = np.shape(_value(x)), x.dtype
    n2 = len(funclist)
    if np.isscalar(condlist) or (not _array_like(condlist[0]) and len(shape) != 0):
        condlist = [condlist]
    if not all(has_values(c) for c in condlist):  # masks known by their shape only
        return _piecewise_by_where(x, list(condlist), funclist, args, kw)
    value = np.zeros(shape, dtype)
    conditions = np.asarray(_value(condlist), dtype=bool)
    n = len(conditions)
    if n == n2 - 1:  # the otherwise case
        conditions = np.concatenate([conditions, ~np.any(conditions, axis=0, keepdims=True)], axis=0)
        n += 1
    elif n != n2:
        msg = f"with {n} condition(s), either {n} or {n + 1} functions are expected"
        raise ShapeError(f"np.piecewise: {msg} [called at {user_location()}]")
    y: Any = value
    for cond, func in zip(conditions, funclist, strict=True):
        cond = np.broadcast_to(cond, value.shape)
        if not callable(func):
            if type(func) in INTERPRETED or type(y) in INTERPRETED:
                y = ops.where(cond, as_operand(func), y)
            else:
                y = np.where(cond, func, y)
            y = y if y.dtype == value.dtype else ops.astype(y, value.dtype)  # written into x's dtype, as numpy's
            continue
        if not cond.any():
            continue
        vals = func(ops.getitem(x, cond) if value.ndim else x, *args, **kw)
        if value.ndim:
            base = y if type(y) in INTERPRETED else np.asarray(y, value.dtype)
            y = ops.index_set(base, ops.astype(vals, value.dtype) if np.result_type(_value(vals)) != value.dtype
                              else vals, cond)  # fmt: skip
        else:
            y = vals
    return y


def _array_like(condition: Any) -> bool:
    """Whether a condition is an array of conditions (numpy's test: a list or an array, not an
    entry of one)."""
    return isinstance(condition, list | np.ndarray) or (type(condition) in INTERPRETED and condition.ndim > 0)


def _piecewise_by_where(x: Any, condlist: list[Any], funclist: Any, args: Any, kw: Any) -> Any:
    """``np.piecewise`` where the conditions are known only by their shapes (under
    ``eval_shape``): which entries each selects is unknown, so each function is called on the
    whole of x and placed by ``where``. The result has x's shape and dtype, as numpy's, whose
    functions fill an array like x."""
    shape, dtype = np.shape(_value(x)), x.dtype
    conditions = [c if type(c) in INTERPRETED else np.asarray(c, bool) for c in condlist]
    conditions = [c if c.dtype == np.bool_ else c != 0 for c in conditions]
    if len(conditions) == len(funclist) - 1:  # the otherwise case
        conditions.append(~functools.reduce(operator.or_, conditions))
    elif len(conditions) != len(funclist):
        n = len(conditions)
        msg = f"with {n} condition(s), either {n} or {n + 1} functions are expected"
        raise ShapeError(f"np.piecewise: {msg} [called at {user_location()}]")
    y: Any = np.zeros(shape, dtype)
    for cond, func in zip(conditions, funclist, strict=True):
        piece = func(x, *args, **kw) if callable(func) else as_operand(func)
        y = ops.where(cond, piece, y)
    y = y if np.shape(_value(y)) == shape else ops.broadcast_to(y, shape)
    return y if y.dtype == dtype else ops.astype(y, dtype)


#: numpy's functions this module gives rules for, as the function table takes them.
SEQUENCES: dict[Callable[..., Any], Callable[..., Any]] = {
    np.delete: delete,
    np.insert: insert,
    np.compress: compress,
    np.extract: extract,
    np.resize: resize,
    np.choose: choose,
    np.block: block,
    np.trim_zeros: trim_zeros,
    np.broadcast_arrays: broadcast_arrays,
    np.meshgrid: meshgrid,
    np.vdot: vdot,
    np.correlate: correlate,
    np.diagflat: diagflat,
    np.ediff1d: ediff1d,
    np.logspace: logspace,
    np.geomspace: geomspace,
    np.interp: interp,
    np.unwrap: unwrap,
    np.piecewise: piecewise,
}
# Added in numpy 2.0 and 2.1: mapped where this numpy has them.
_NEWER = {"unstack": unstack, "astype": astype, "cumulative_sum": cumulative_sum, "cumulative_prod": cumulative_prod}
SEQUENCES.update({f: impl for name, impl in _NEWER.items() if (f := getattr(np, name, None)) is not None})
