"""Reductions over axes: sum, mean, max and min (``axis`` and ``keepdims`` as in numpy)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from nodegrad.arena import composite, record1, unwrap
from nodegrad.errors import NoGradientError, ShapeError, user_location
from nodegrad.ops.registry import defop

__all__ = ["max", "mean", "min", "norm", "prod", "std", "sum", "var"]

_F = "reduce"


def normalize_axis(op_name: str, axis: Any, ndim: int) -> tuple[int, ...] | None:
    """Turn ``axis`` (None, int or sequence) into a sorted tuple of non-negative axes.

    Raises a :class:`ShapeError` naming the op when an axis is out of range or repeated.
    """
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        msg = f"{op_name}: axis must be an int or a tuple of ints, got {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    if ndim == 0 and all(isinstance(a, (int, np.integer)) and a in (0, -1) for a in axes):
        return ()  # numpy lets a 0-d array be reduced over "axis 0": nothing to reduce
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < builtins.max(ndim, 1):
            msg = (
                f"{op_name}: axis {axis!r} is out of range for an array of {ndim} dimensions [called at "
                f"{user_location()}]"
            )
            raise ShapeError(msg)
        out.append(int(a) % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        msg = f"{op_name}: repeated axis in {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return tuple(sorted(out))


def _expand(g: Any, x: Any, axis: tuple[int, ...] | None, keepdims: bool) -> Any:
    """Give a reduced cotangent back the reduced axes, as size-1 dimensions."""
    if axis is not None and not keepdims:
        g = g.reshape(tuple(1 if i in axis else n for i, n in enumerate(np.shape(x))))
    return g


def _spread(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    return broadcast_view(_expand(g, x, axis, keepdims), np.shape(x))


def broadcast_view(g: Any, shape: tuple[int, ...]) -> Any:
    """``np.broadcast_to(g, shape)``: a read-only view, no copy.

    A cotangent of a full reduction is a scalar, and spreading it is the commonest VJP
    step; building the zero-stride view directly costs a tenth of ``np.broadcast_to``.
    """
    if (type(g) is np.ndarray and g.ndim == 0) or isinstance(g, np.generic):
        view = np.ndarray(shape, g.dtype, np.asarray(g), 0, (0,) * len(shape))
        view.flags.writeable = False
        return view
    return np.broadcast_to(g, shape)


def _count(x: Any, axis: tuple[int, ...] | None) -> int:
    shape = np.shape(x)
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in axis)


def _extremum_rule(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # Every position equal to the extremum shares the gradient evenly.
    hit = x == _expand(ans, x, axis, keepdims)
    share = (hit / np.sum(hit, axis=axis, keepdims=True)).astype(x.dtype)
    return _expand(g, x, axis, keepdims) * share


SUM = defop(
    "sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), _spread, family=_F, doc="sum over axes"
)
MEAN = defop(
    "mean",
    lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
    lambda g, ans, x, axis, keepdims: _spread(g / _count(x, axis), ans, x, axis, keepdims),
    family=_F,
    doc="arithmetic mean over axes",
)
MAX = defop(
    "max",
    lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    _extremum_rule,
    family=_F,
    doc="maximum over axes; ties share the gradient evenly",
)
MIN = defop(
    "min",
    lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
    _extremum_rule,
    family=_F,
    doc="minimum over axes; ties share the gradient evenly",
)


def _reduce(op: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    axes = None if axis is None else normalize_axis(op.name, axis, np.ndim(unwrap(x)))
    return record1(op, x, axes, bool(keepdims))


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001  (numpy's name)
    """Sum of elements over ``axis`` (all axes by default).

    Parameters
    ----------
    x : array_like
        Input.
    axis : int or tuple of int, optional
        Axes to reduce.
    keepdims : bool, default False
        Keep reduced axes as size-1 dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.sum(x * x))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    return _reduce(SUM, x, axis, keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis`` (all axes by default).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.mean)(np.array([1.0, 2.0, 3.0, 4.0]))
    array([0.25, 0.25, 0.25, 0.25])
    """
    return _reduce(MEAN, x, axis, keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001  (numpy's name)
    """Maximum over ``axis``; positions tied for the maximum share the gradient evenly.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.max)(np.array([1.0, 3.0, 3.0]))
    array([0. , 0.5, 0.5])
    """
    return _reduce(MAX, x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001  (numpy's name)
    """Minimum over ``axis``; positions tied for the minimum share the gradient evenly.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.min)(np.array([1.0, 3.0, 1.0]))
    array([0.5, 0. , 0.5])
    """
    return _reduce(MIN, x, axis, keepdims)


def _prod_rule(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # d prod / d x_i = product of all the other entries: exclusive products from the left
    # and from the right, so zeros in x give exact gradients (no division by x).
    ndim = np.ndim(x)
    reduced = tuple(range(ndim)) if axis is None else axis
    kept = [a for a in range(ndim) if a not in reduced]
    order = kept + list(reduced)
    moved = np.transpose(x, order)
    flat = moved.reshape((*moved.shape[: len(kept)], -1))
    ones = np.ones_like(flat[..., :1])
    left = np.concatenate([ones, np.cumprod(flat, axis=-1)[..., :-1]], axis=-1)
    right = np.concatenate([np.cumprod(flat[..., ::-1], axis=-1)[..., :-1][..., ::-1], ones], axis=-1)
    others = np.transpose((left * right).reshape(moved.shape), np.argsort(order))
    return _expand(g, x, axis, keepdims) * others


PROD = defop(
    "prod",
    lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    _prod_rule,
    family=_F,
    doc="product over axes (gradient exact with zeros)",
)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Product of elements over ``axis``; the gradient is exact where ``x`` has zeros.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.prod)(np.array([2.0, 0.0, 3.0]))
    array([0., 6., 0.])
    """
    return _reduce(PROD, x, axis, keepdims)


@composite
def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom, as ``np.var``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> float(ng.var(np.array([1.0, 2.0, 3.0, 4.0])))
    1.25
    """
    axes = normalize_axis("var", axis, np.ndim(unwrap(x)))
    centred = x - mean(x, axes, keepdims=True)
    n = _count(unwrap(x), axes)
    return sum(centred * centred, axes, keepdims) / builtins.max(n - ddof, 0)


@composite
def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Standard deviation over ``axis``, as ``np.std``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> float(ng.std(np.array([1.0, 3.0])))
    1.0
    """
    from nodegrad.ops.elementwise import sqrt

    return sqrt(var(x, axis, ddof, keepdims))


@composite
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002  (numpy's name)
    """Vector norms and the Frobenius norm, as ``np.linalg.norm``.

    Supported: ``ord`` None/2 (Euclidean; Frobenius over two axes), ``'fro'``, 1, ``inf``,
    ``-inf`` and any other number ``p`` for vectors (``sum(|x|**p)**(1/p)``). Matrix
    norms other than Frobenius (spectral, nuclear, induced 1/inf) have no gradient rule.
    The gradient of a Euclidean norm at the zero vector is not defined (NaN).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.norm)(np.array([3.0, 4.0]))
    array([0.6, 0.8])
    """
    from nodegrad.ops.elementwise import abs as absolute
    from nodegrad.ops.elementwise import power, sqrt

    ndim = np.ndim(unwrap(x))
    axes = normalize_axis("norm", axis, ndim)
    vector = (axes is not None and len(axes) == 1) or (axes is None and ndim == 1)
    if ord is None or (ord == "fro" and not vector) or (ord == 2 and vector):
        return sqrt(sum(x * x, axes, keepdims))
    if vector and isinstance(ord, (int, float)) and ord != 0:
        if ord == np.inf:
            return max(absolute(x), axes, keepdims)
        if ord == -np.inf:
            return min(absolute(x), axes, keepdims)
        if ord == 1:
            return sum(absolute(x), axes, keepdims)
        return power(sum(power(absolute(x), float(ord)), axes, keepdims), 1.0 / ord)
    msg = (
        f"norm: ord={ord!r} over {'a vector' if vector else 'a matrix'} has no gradient rule [called at "
        f"{user_location()}]"
    )
    raise NoGradientError(msg)
