"""numpy functions that work along an axis, built from the ops: ``np.linspace`` (samples
along a new axis), ``np.gradient`` (finite differences along each axis) and
``np.partition`` (order statistics along an axis).

Each follows numpy's own steps on traced values, so it gives numpy's values and its
gradient comes from the ops' rules: the samples of ``linspace`` depend on traced ``start``
and ``stop``, ``gradient``'s differences on traced values and traced coordinates, and
``partition`` moves each value to its place, as ``sort`` does, so the gradient goes back
to the entry each output came from.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from nodegrad import ops
from nodegrad.engine.batched import plain_map
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, AxisError, DtypeError, ShapeError, user_location
from nodegrad.numpy_api.arguments import refusal
from nodegrad.numpy_api.composed import diff

__all__ = ["gradient", "linspace", "partition"]


def _weak(value: Any) -> Any:
    """``value`` as ``np.result_type`` should see it: Python numbers stay weak."""
    value = unwrap(value)
    return value if type(value) in (bool, int, float, complex) else np.asarray(value)


# -- linspace ------------------------------------------------------------------------------------


def linspace(
    start: Any,
    stop: Any,
    num: Any = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: Any = 0,
    *,
    device: Any = None,
) -> Any:
    if device not in (None, "cpu"):
        msg = f"np.linspace: device must be None or 'cpu', got {device!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    try:
        num = operator.index(num)
    except TypeError:
        msg = f"np.linspace: num must be an integer, got {num!r} [called at {user_location()}]"
        raise ArgumentError(msg) from None
    if num < 0:
        raise ArgumentError(
            f"np.linspace: Number of samples, {num}, must be non-negative. [called at {user_location()}]"
        )
    div = num - 1 if endpoint else num
    common = np.result_type(_weak(start), _weak(stop))
    dt = common if common.kind in "fc" else np.dtype(np.float64)
    target = dt if dtype is None else np.dtype(dtype)
    if dt.kind == "c" and target.kind != "c":
        msg = (
            f"np.linspace: complex samples cast to {target} would lose their imaginary parts (numpy casts them with "
            f"a ComplexWarning); take np.real of start and stop first [called at {user_location()}]"
        )
        raise DtypeError(msg)
    start = start if type(start) in INTERPRETED else np.asarray(start, dt)
    stop = stop if type(stop) in INTERPRETED else np.asarray(stop, dt)
    delta = stop - start
    if np.result_type(unwrap(delta)) != dt:
        delta = ops.astype(delta, dt)
    y: Any = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * np.ndim(unwrap(delta)))
    if div > 0:
        step = delta / div
        # numpy's guard for steps that underflow to 0: scale by delta after dividing.
        y = y / div * delta if np.any(unwrap(step) == 0) else y * step
    else:  # no samples, or one with endpoint=True: the step is undefined
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:  # the last sample is stop itself
        last = ops.broadcast_to(ops.astype(stop, dt), np.shape(unwrap(y))[1:])
        y = ops.cat([ops.getitem(y, slice(None, -1)), ops.expand_dims(last, 0)], 0)
    if axis != 0:
        y = ops.moveaxis(y, 0, axis)
    if target.kind in "iu":  # numpy rounds towards -inf: plain data, as astype gives it
        y = np.floor(unwrap(y)).astype(target)
    elif target != dt:
        y = ops.astype(y, target)
    return (y, step) if retstep else y


# -- gradient ----------------------------------------------------------------------------------


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """numpy's normalize_axis_tuple: in the order given, each once."""
    given = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in given:
        try:
            a = operator.index(a)
        except TypeError:
            raise refusal("gradient", f"axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise refusal("gradient", f"axis {a} is out of bounds for an array of dimension {ndim}", AxisError)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise refusal("gradient", f"repeated axis in {axis!r}")
    return tuple(out)


def _spacings(varargs: tuple[Any, ...], shape: tuple[int, ...], axes: tuple[int, ...]) -> list[Any]:
    """Per axis, a scalar step or the 1-D steps between coordinates, as numpy reads them."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(unwrap(varargs[0])) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        msg = (
            f"np.gradient: invalid number of arguments: {len(varargs)} spacings for {len(axes)} axes "
            f"[called at {user_location()}]"
        )
        raise ArgumentError(msg)
    out = []
    for distances, ax in zip(varargs, axes, strict=True):
        ndim = np.ndim(unwrap(distances))
        if ndim == 0:
            out.append(distances)
            continue
        if ndim != 1:
            raise refusal("gradient", "distances must be either scalars or 1d")
        if np.shape(unwrap(distances))[0] != shape[ax]:
            raise refusal("gradient", "when 1d, distances must match the length of the corresponding dimension")
        if type(distances) in DIFFERENTIATING:  # always the general steps: exact gradients for the coordinates
            out.append(diff(distances))
            continue
        distances = np.asanyarray(distances)
        if np.issubdtype(distances.dtype, np.integer):
            distances = distances.astype(np.float64)
        steps = np.diff(distances)
        out.append(steps[0] if steps.size and (steps == steps[0]).all() else steps)
    return out


def _take(v: Any, index: Any) -> Any:
    return ops.getitem(v, index) if type(v) in INTERPRETED else np.asarray(v)[index]


def _along(f: Any, spacing: Any, axis: int, edge_order: int) -> Any:
    """numpy's second-order central differences inside, one-sided ones at the two ends."""
    ndim = len(np.shape(unwrap(f)))

    def at(s: Any) -> Any:
        return ops.getitem(f, (slice(None),) * axis + (s,))

    def linear(coefficients: tuple[Any, Any, Any], slices: tuple[Any, Any, Any]) -> Any:
        a, b, c = coefficients
        return a * at(slices[0]) + b * at(slices[1]) + c * at(slices[2])

    first, second, third = slice(0, 1), slice(1, 2), slice(2, 3)
    last3, last2, last = slice(-3, -2), slice(-2, -1), slice(-1, None)
    if np.ndim(unwrap(spacing)) == 0:
        dx = spacing
        inside = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
        if edge_order == 1:
            start, end = (at(second) - at(first)) / dx, (at(last) - at(last2)) / dx
        else:
            start = linear((-1.5 / dx, 2.0 / dx, -0.5 / dx), (first, second, third))
            end = linear((0.5 / dx, -2.0 / dx, 1.5 / dx), (last3, last2, last))
    else:
        along = tuple(-1 if k == axis else 1 for k in range(ndim))
        dx1, dx2 = _take(spacing, slice(0, -1)), _take(spacing, slice(1, None))
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        weights = (ops.reshape(a, along), ops.reshape(b, along), ops.reshape(c, along))
        inside = linear(weights, (slice(None, -2), slice(1, -1), slice(2, None)))
        if edge_order == 1:
            start = (at(second) - at(first)) / _take(spacing, 0)
            end = (at(last) - at(last2)) / _take(spacing, -1)
        else:
            dx1, dx2 = _take(spacing, 0), _take(spacing, 1)
            start = linear(
                (-(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2)), (dx1 + dx2) / (dx1 * dx2), -dx1 / (dx2 * (dx1 + dx2))),
                (first, second, third),
            )
            dx1, dx2 = _take(spacing, -2), _take(spacing, -1)
            end = linear(
                (dx2 / (dx1 * (dx1 + dx2)), -(dx2 + dx1) / (dx1 * dx2), (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))),
                (last3, last2, last),
            )
    return ops.cat([start, inside, end], axis)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: Any = 1) -> Any:
    shape = np.shape(unwrap(f))
    axes = tuple(range(len(shape))) if axis is None else _axes(axis, len(shape))
    if edge_order not in (1, 2):
        msg = f"np.gradient: edge_order must be 1 or 2, got {edge_order!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    spacings = _spacings(varargs, shape, axes)
    dtype = np.result_type(unwrap(f))
    if dtype.kind != "c" and any(np.iscomplexobj(unwrap(v)) for v in varargs):
        msg = (
            "np.gradient: complex spacings make complex derivatives, which numpy casts to the real dtype of f with a "
            f"ComplexWarning; pass a complex f [called at {user_location()}]"
        )
        raise DtypeError(msg)
    if dtype.kind not in "fc":
        f, dtype = ops.astype(f, np.float64), np.dtype(np.float64)
    out = []
    for ax, spacing in zip(axes, spacings, strict=True):
        if shape[ax] < edge_order + 1:
            raise refusal(
                "gradient",
                "Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements "
                "are required.",
            )
        derivative = _along(f, spacing, ax, edge_order)
        out.append(derivative if np.result_type(unwrap(derivative)) == dtype else ops.astype(derivative, dtype))
    return out[0] if len(axes) == 1 else tuple(out)


# -- partition ---------------------------------------------------------------------------------


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    if order is not None:
        msg = (
            "np.partition: order= (fields of a structured array) is not supported on traced values "
            f"[called at {user_location()}]"
        )
        raise ArgumentError(msg)
    if axis is None:
        a, axis = ops.ravel(a), -1
    shape = np.shape(unwrap(a))
    try:  # numpy's checks of axis and kth, made on one line of the axis's length (no values read)
        ax = normalize_axis_index(axis, len(shape))
        line = np.zeros([n if k == ax else 1 for k, n in enumerate(shape)])
        np.partition(line, kth, axis=ax, kind=kind)  # type: ignore[call-overload]
    except (ValueError, TypeError, IndexError) as exc:
        raise ShapeError(f"np.partition: {exc} [called at {user_location()}]") from None
    kth = np.asarray(kth, np.intp) % max(shape[ax], 1)  # (checked: each in range)
    # numpy's arrangement, as a permutation of the values (of every example at once under
    # vmap, along a negative axis; by shape alone under eval_shape), carrying no gradient.
    permutation = plain_map(lambda value: _permutation(value, kth, ax - len(shape), kind), a)
    return ops.take_along_axis(a, permutation, axis)


def _permutation(value: Any, kth: Any, axis: int, kind: Any) -> Any:
    """numpy's partition of ``value`` as a permutation of it: the j-th smallest of the
    result is the j-th smallest of ``value`` (ties and NaNs matched in order), so each
    output reads its entry. (``kth`` is clipped to the line's length, which changes nothing
    for the checked arguments, so that a shorter stand-in line works too.)"""
    parted = np.partition(value, np.minimum(kth, value.shape[axis] - 1), axis=axis, kind=kind)
    into = np.argsort(parted, axis=axis, kind="stable")
    source = np.argsort(value, axis=axis, kind="stable")
    permutation = np.empty_like(source)
    np.put_along_axis(permutation, into, source, axis)
    return permutation
