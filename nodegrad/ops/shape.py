"""Shape ops: reshape, transpose, concatenation and stacking."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.batched import plain_map
from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import defop, same_rule_for_all
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, NoGradientError, ShapeError, user_location
from nodegrad.ops.arguments import as_ints, axes_of, axis_index
from nodegrad.ops.batching import to_batched

__all__ = [
    "astype",
    "broadcast_to",
    "cat",
    "expand_dims",
    "moveaxis",
    "pad",
    "ravel",
    "reshape",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
]

_F = "shape"


def _inverse_permutation(axes: Any, ndim: int) -> Any:
    return None if axes is None else tuple(np.argsort(axes))


# -- batching rules (see nodegrad.ops.batching): the examples sit along a new axis 0 ------------


def _example_shape(shape: tuple[int, ...], example: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with its ``-1`` worked out for one example of shape ``example`` (with the
    batch axis in front, numpy could not infer it for zero examples)."""
    if -1 not in shape:
        return shape
    known = math.prod(n for n in shape if n != -1)
    total = math.prod(example)
    return tuple(total // known if n == -1 and known and total % known == 0 else n for n in shape)


def _reshape_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, shape: Any) -> Any:
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return record(op, x, (size, *_example_shape(shape, np.shape(x)[1:])))


def _transpose_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, axes: Any) -> Any:
    ndim = np.ndim(x) - 1
    perm = range(ndim, 0, -1) if axes is None else (a % ndim + 1 for a in axes)
    return record(op, x, (0, *perm))


def _astype_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, dtype: Any) -> Any:
    return record(op, x, dtype)


def _join_batch(new_axis: bool) -> Any:
    """The rule of cat (``new_axis`` False) and stack: the examples' axis moves one on; an
    operand the same for every example is repeated (a broadcast view) to join them."""

    def rule(op: Any, batched: tuple[bool, ...], size: int, axis: int, *xs: Any) -> Any:
        ndim = next(np.ndim(x) - 1 for x, b in zip(xs, batched[1:], strict=True) if b) + new_axis
        return record(op, axis % ndim + 1, *(to_batched(x, b, size) for x, b in zip(xs, batched[1:], strict=True)))

    return rule


def _broadcast_to_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, shape: Any) -> Any:
    # The example's axes are aligned to the right of the target shape, so new axes go right
    # after the examples' axis.
    example = np.shape(x)[1:]
    x = record(RESHAPE, x, (size, *(1,) * (len(shape) - len(example)), *example))
    return record(op, x, (size, *shape))


def _pad_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, widths: Any, value: Any) -> Any:
    return record(op, x, ((0, 0), *widths), value)


RESHAPE = defop(
    "reshape",
    lambda x, shape: np.reshape(x, shape),
    lambda g, ans, x, shape: np.reshape(g, np.shape(x)),
    family=_F,
    doc="same data, new shape",
    batch=_reshape_batch,
)


def _cast_back(g: Any, x: Any) -> Any:
    """The cotangent in ``x``'s dtype: a real ``x`` cast to complex keeps the real part."""
    dtype = np.result_type(x)
    if dtype.kind == "f" and np.iscomplexobj(g):
        g = np.real(g)
    return g.astype(dtype)


ASTYPE = defop(
    "astype",
    lambda x, dtype: np.asarray(x).astype(dtype),
    lambda g, ans, x, dtype: _cast_back(g, x),
    family=_F,
    doc="the same values in another float or complex dtype; the gradient is cast back",
    batch=_astype_batch,
)
TRANSPOSE = defop(
    "transpose",
    lambda x, axes: np.transpose(x, axes),
    lambda g, ans, x, axes: np.transpose(g, _inverse_permutation(axes, np.ndim(x))),
    family=_F,
    doc="permute axes (reverse them by default)",
    batch=_transpose_batch,
)


def _part_of(g: Any, x: Any) -> Any:
    """A piece of a joined cotangent for input ``x``: its real part when real inputs were
    joined with complex ones (the transpose of their inclusion, as fit_cotangent does)."""
    dtype = getattr(x, "dtype", None)
    real = dtype.kind != "c" if dtype is not None else not isinstance(x, complex)
    return np.real(g) if real and g.dtype.kind == "c" else g


def _cat_rule(k: int, g: Any, ans: Any, axis: int, *xs: Any) -> Any:
    # Input k (position 0 is the axis) owns the slice of g between its neighbours' extents.
    start = sum(np.shape(x)[axis] for x in xs[: k - 1])
    stop = start + np.shape(xs[k - 1])[axis]
    return _part_of(g[(slice(None),) * axis + (slice(start, stop),)], xs[k - 1])


def _stack_rule(k: int, g: Any, ans: Any, axis: int, *xs: Any) -> Any:
    return _part_of(g[(slice(None),) * axis + (k - 1,)], xs[k - 1])


CAT = defop(
    "cat",
    lambda axis, *xs: np.concatenate(xs, axis=axis),
    same_rule_for_all(_cat_rule),
    family=_F,
    doc="join arrays along an existing axis",
    batch=_join_batch(new_axis=False),
)
STACK = defop(
    "stack",
    lambda axis, *xs: np.stack(xs, axis=axis),
    same_rule_for_all(_stack_rule),
    family=_F,
    doc="join arrays along a new axis",
    batch=_join_batch(new_axis=True),
)


@guarded
def reshape(x: Any, shape: Any) -> Any:
    """Give ``x`` a new shape with the same number of elements (``-1`` infers one axis).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.reshape(x, (2, 2))[0].sum())(np.ones(4))
    array([1., 1., 0., 0.])
    """
    return record1(RESHAPE, x, as_ints("reshape", "the shape", shape))


@guarded
def transpose(x: Any, axes: Any = None) -> Any:
    """Permute the axes of ``x``; by default reverse them.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    ndim = np.ndim(unwrap(x))
    if axes is not None:
        given = as_ints("transpose", "axes", axes)
        axes = tuple(a % ndim for a in given if -ndim <= a < ndim)
        if len(axes) != len(given) or sorted(axes) != list(range(ndim)):
            msg = (
                f"transpose: axes {given} are not a permutation of the {ndim} axes of shape {np.shape(unwrap(x))} "
                f"[called at {user_location()}]"
            )
            raise ShapeError(msg)
    return record1(TRANSPOSE, x, axes)


def _joined(op_name: str, xs: Any, axis: int, new_axis: bool) -> tuple[list[Any], int]:
    if isinstance(axis, (tuple, list)):
        msg = f"{op_name}: axis must be one int, got {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    axis = as_ints(op_name, "axis", axis)[0]
    xs = list(xs)
    if not xs:
        msg = f"{op_name}: needs at least one array [called at {user_location()}]"
        raise ShapeError(msg)
    ndim = np.ndim(unwrap(xs[0])) + (1 if new_axis else 0)
    if ndim == 0:  # numpy: 0-d arrays cannot be joined at all
        msg = f"{op_name}: arrays of shape () cannot be joined along an axis [called at {user_location()}]"
        raise ShapeError(msg)
    joined = f"{'the stack of ' if new_axis else ''}arrays of shape {np.shape(unwrap(xs[0]))},"
    return xs, axis_index(op_name, axis, ndim, joined)


@guarded
@composite  # reading a traced xs as its rows records nodes before the checks can fail
def cat(xs: Any, axis: int = 0) -> Any:
    """Concatenate arrays along an existing ``axis`` (``np.concatenate``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> f = lambda a, b: ng.sum(ng.cat([a, 2.0 * b]))
    >>> ng.grad(f, argnums=1)(np.ones(2), np.ones(3))
    array([2., 2., 2.])
    """
    items, axis = _joined("cat", xs, axis, new_axis=False)
    return record(CAT, axis, *items)


@guarded
@composite
def stack(xs: Any, axis: int = 0) -> Any:
    """Stack arrays of one shape along a new ``axis`` (``np.stack``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.stack([np.ones(3), np.zeros(3)], axis=1).shape
    (3, 2)
    """
    items, axis = _joined("stack", xs, axis, new_axis=True)
    return record(STACK, axis, *items)


# -- broadcasting, padding and the reshapes and permutations numpy names ----------------------------

BROADCAST_TO = defop(
    "broadcast_to",
    lambda x, shape: np.broadcast_to(x, shape),
    lambda g, ans, x, shape: g,
    None,
    family=_F,
    broadcasts=True,
    doc="repeat x along new or size-1 axes (a view)",
    batch=_broadcast_to_batch,
)


def _unpad(g: Any, ans: Any, x: Any, widths: tuple[tuple[int, int], ...], value: Any) -> Any:
    return g[tuple(slice(before, before + n) for (before, _), n in zip(widths, np.shape(x), strict=True))]


PAD = defop(
    "pad",
    lambda x, widths, value: np.pad(x, widths, mode="constant", constant_values=value),
    _unpad,
    None,
    None,
    family=_F,
    doc="surround x with a constant (np.pad, mode='constant')",
    batch=_pad_batch,
)


@guarded
def broadcast_to(x: Any, shape: Any) -> Any:
    """``x`` repeated to ``shape`` by numpy's broadcasting rules.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.sum(ng.broadcast_to(x, (3, 2))))(np.ones(2))
    array([3., 3.])
    """
    return record1(BROADCAST_TO, x, as_ints("broadcast_to", "the shape", shape))


@guarded
def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: float = 0) -> Any:
    """Pad with a constant, as ``np.pad(x, pad_width, mode="constant")``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.pad(np.array([1.0, 2.0]), (1, 2))
    array([0., 1., 2., 0., 0.])
    """
    ndim = np.ndim(unwrap(x))
    if mode != "constant":
        msg = f"pad: only mode='constant' is differentiable here, got mode={mode!r} [called at {user_location()}]"
        raise ShapeError(msg)
    flat = np.asarray(pad_width, dtype=object).ravel().tolist() if pad_width is not None else [None]
    as_ints("pad", "pad_width", flat)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (ndim, 2))
    except ValueError as exc:
        msg = f"pad: pad_width {pad_width!r} does not fit {ndim} axes [called at {user_location()}]"
        raise ShapeError(msg) from exc
    if (widths < 0).any():
        msg = f"pad: pad widths must be non-negative, got {pad_width!r} [called at {user_location()}]"
        raise ShapeError(msg)
    if type(constant_values) in DIFFERENTIATING:
        msg = f"pad: a traced constant_values has no gradient rule; pass a plain value [called at {user_location()}]"
        raise NoGradientError(msg)
    value = np.asarray(constant_values)
    if value.dtype.kind == "c" and not np.iscomplexobj(unwrap(x)):
        msg = (
            f"pad: complex constant_values would lose their imaginary part in the real array x (numpy casts them "
            f"with a ComplexWarning); cast x to complex first [called at {user_location()}]"
        )
        raise DtypeError(msg)
    # A number, or numpy's per-axis (before, after) pairs.
    return record1(PAD, x, tuple((int(a), int(b)) for a, b in widths), value.tolist())


@guarded
def expand_dims(x: Any, axis: Any) -> Any:
    """Insert size-1 axes at ``axis`` (an int or a tuple), as ``np.expand_dims``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.expand_dims(np.ones(3), (0, 2)).shape
    (1, 3, 1)
    """
    shape = np.shape(unwrap(x))
    count = len(as_ints("expand_dims", "axis", axis))
    new_axes = axes_of("expand_dims", axis, len(shape) + count)
    rest = iter(shape)
    return reshape(x, tuple(1 if k in new_axes else next(rest) for k in range(len(shape) + count)))


@guarded
def squeeze(x: Any, axis: Any = None) -> Any:
    """Remove size-1 axes (all of them, or those in ``axis``), as ``np.squeeze``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.squeeze(np.ones((1, 3, 1))).shape
    (3,)
    """
    shape = np.shape(unwrap(x))
    axes = tuple(k for k, n in enumerate(shape) if n == 1) if axis is None else axes_of("squeeze", axis, len(shape))
    if any(shape[k] != 1 for k in axes):
        msg = f"squeeze: axis {axis!r} of shape {shape} does not have size 1 [called at {user_location()}]"
        raise ShapeError(msg)
    return reshape(x, tuple(n for k, n in enumerate(shape) if k not in axes))


@guarded
def astype(x: Any, dtype: Any) -> Any:
    """``x`` cast to ``dtype``, as ``ndarray.astype``.

    To another floating or complex dtype the gradient follows (cast back to ``x``'s
    dtype; a real ``x`` cast to complex gets the real part). To an integer, bool or
    other dtype the result is plain data: it carries no gradient. A complex ``x`` cast to
    a real dtype is refused (:class:`~nodegrad.errors.DtypeError`): it would drop the
    imaginary part; take ``np.real`` explicitly.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> g = ng.grad(lambda x: ng.sum(ng.astype(x, np.float32) * 2.0))(np.ones(2))
    >>> g, g.dtype
    (array([2., 2.]), dtype('float64'))
    """
    try:
        target = np.dtype(dtype)
    except TypeError as exc:
        msg = f"astype: {dtype!r} is not a dtype [called at {user_location()}]"
        raise ShapeError(msg) from exc
    if np.iscomplexobj(unwrap(x)) and target.kind != "c":
        msg = (
            f"astype: casting complex values to {target} would discard their imaginary part; take np.real(x) "
            f"(or np.abs(x)) first [called at {user_location()}]"
        )
        raise DtypeError(msg)
    if target.kind not in "fc":
        return plain_map(lambda v: np.asarray(v).astype(target), x)  # plain data (batched, if x is)
    if type(x) in DIFFERENTIATING and x.dtype == target:
        return x
    return record1(ASTYPE, x, target)


@guarded
def ravel(x: Any) -> Any:
    """The flattened array, as ``np.ravel``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.ravel(np.ones((2, 3))).shape
    (6,)
    """
    return reshape(x, (-1,))


@guarded
def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    """Move axes to new positions, as ``np.moveaxis``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.moveaxis(np.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    ndim = np.ndim(unwrap(x))
    src_given, dst_given = as_ints("moveaxis", "source", source), as_ints("moveaxis", "destination", destination)
    for given in (src_given, dst_given):
        axes_of("moveaxis", list(given), ndim)  # out-of-range or repeated axes raise here
    src, dst = [a % ndim for a in src_given], [a % ndim for a in dst_given]
    if len(src) != len(dst):
        msg = f"moveaxis: {len(src)} source axes but {len(dst)} destinations [called at {user_location()}]"
        raise ShapeError(msg)
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(x, tuple(order))


@guarded
def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    """Exchange two axes, as ``np.swapaxes``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.swapaxes(np.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    order = list(range(np.ndim(unwrap(x))))
    a, b = axes_of("swapaxes", axis1, len(order))[0], axes_of("swapaxes", axis2, len(order))[0]
    order[a], order[b] = order[b], order[a]
    return transpose(x, tuple(order))
