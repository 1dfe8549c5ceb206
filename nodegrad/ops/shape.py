"""Shape ops: reshape, transpose, concatenation and stacking."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.arena import record, record1, unwrap
from nodegrad.errors import ShapeError, user_location
from nodegrad.ops.registry import defop, same_rule_for_all

__all__ = ["cat", "reshape", "stack", "transpose"]

_F = "shape"


def _inverse_permutation(axes: Any, ndim: int) -> Any:
    return None if axes is None else tuple(np.argsort(axes))


RESHAPE = defop(
    "reshape",
    lambda x, shape: np.reshape(x, shape),
    lambda g, ans, x, shape: np.reshape(g, np.shape(x)),
    family=_F,
    doc="same data, new shape",
)
TRANSPOSE = defop(
    "transpose",
    lambda x, axes: np.transpose(x, axes),
    lambda g, ans, x, axes: np.transpose(g, _inverse_permutation(axes, np.ndim(x))),
    family=_F,
    doc="permute axes (reverse them by default)",
)


def _cat_rule(k: int, g: Any, ans: Any, axis: int, *xs: Any) -> Any:
    # Input k (position 0 is the axis) owns the slice of g between its neighbours' extents.
    start = sum(np.shape(x)[axis] for x in xs[: k - 1])
    stop = start + np.shape(xs[k - 1])[axis]
    return g[(slice(None),) * axis + (slice(start, stop),)]


def _stack_rule(k: int, g: Any, ans: Any, axis: int, *xs: Any) -> Any:
    return g[(slice(None),) * axis + (k - 1,)]


CAT = defop(
    "cat",
    lambda axis, *xs: np.concatenate(xs, axis=axis),
    same_rule_for_all(_cat_rule),
    family=_F,
    doc="join arrays along an existing axis",
)
STACK = defop(
    "stack",
    lambda axis, *xs: np.stack(xs, axis=axis),
    same_rule_for_all(_stack_rule),
    family=_F,
    doc="join arrays along a new axis",
)


def reshape(x: Any, shape: Any) -> Any:
    """Give ``x`` a new shape with the same number of elements (``-1`` infers one axis).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.reshape(x, (2, 2))[0].sum())(np.ones(4))
    array([1., 1., 0., 0.])
    """
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    return record1(RESHAPE, x, shape)


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
        given = tuple(int(a) for a in axes)
        axes = tuple(a % ndim for a in given if -ndim <= a < ndim)
        if len(axes) != len(given) or sorted(axes) != list(range(ndim)):
            msg = (
                f"transpose: axes {given} are not a permutation of the {ndim} axes of shape {np.shape(unwrap(x))} "
                f"[called at {user_location()}]"
            )
            raise ShapeError(msg)
    return record1(TRANSPOSE, x, axes)


def _joined(op_name: str, xs: Any, axis: int, new_axis: bool) -> tuple[list[Any], int]:
    xs = list(xs)
    if not xs:
        msg = f"{op_name}: needs at least one array [called at {user_location()}]"
        raise ShapeError(msg)
    ndim = np.ndim(unwrap(xs[0])) + (1 if new_axis else 0)
    if ndim == 0 or not -ndim <= axis < ndim:
        msg = (
            f"{op_name}: axis {axis} is out of range for arrays of shape {np.shape(unwrap(xs[0]))} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    return xs, int(axis) % ndim


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
