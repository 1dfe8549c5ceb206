"""Reductions over axes: sum, mean, max and min (``axis`` and ``keepdims`` as in numpy)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import DIFFERENTIATING, RECORDING
from nodegrad.engine.record import record1
from nodegrad.engine.registry import defop
from nodegrad.engine.staged import call_on
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ShapeError, user_location
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.batching import reduction
from nodegrad.ops.elementwise import abs as absolute
from nodegrad.ops.elementwise import conj, power, real, sqrt, where
from nodegrad.ops.linalg import svdvals
from nodegrad.ops.shape import expand_dims, moveaxis

__all__ = ["max", "mean", "min", "norm", "prod", "std", "sum", "var"]

_F = "reduce"


def _expand(g: Any, x: Any, axis: tuple[int, ...] | None, keepdims: bool) -> Any:
    """Give a reduced cotangent back the reduced axes, as size-1 dimensions."""
    if axis is not None and not keepdims:
        g = g.reshape(tuple(1 if i in axis else n for i, n in enumerate(np.shape(x))))
    return g


def _spread(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    shape = x.shape if type(x) is np.ndarray else np.shape(x)
    if axis is None:  # the commonest VJP step of all: a full reduction's scalar cotangent
        return broadcast_view(g, shape)
    return broadcast_view(_expand(g, x, axis, keepdims), shape)


def broadcast_view(g: Any, shape: tuple[int, ...]) -> Any:
    """``np.broadcast_to(g, shape)``: a read-only view, no copy.

    A cotangent of a full reduction is a scalar, and spreading it is the commonest VJP
    step; building the zero-stride view directly costs a tenth of ``np.broadcast_to``.
    """
    if type(g) in RECORDING:  # under replay: this function, on the plain value, is one recorded call
        return call_on(broadcast_view, g, shape)
    if type(g) is np.ndarray and g.ndim == 0:
        view = np.ndarray(shape, g.dtype, g, 0, (0,) * len(shape))
    elif isinstance(g, np.generic):
        view = np.ndarray(shape, g.dtype, np.asarray(g), 0, (0,) * len(shape))
    else:
        return np.broadcast_to(g, shape)
    view.flags.writeable = False
    return view


def _count(x: Any, axis: tuple[int, ...] | None) -> int:
    shape = np.shape(x)
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in axis)


def _extremum_rule(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # Every position equal to the extremum shares the gradient evenly.
    hit = x == _expand(ans, x, axis, keepdims)
    share = (hit / np.sum(hit, axis=axis, keepdims=True)).astype(np.result_type(x))
    return _expand(g, x, axis, keepdims) * share


_ADD_REDUCE: Any = np.add.reduce
# np.add.reduce is np.sum without its Python wrapper: the same loop and dtype rules, at
# half the cost on a small array.
SUM = defop(
    "sum",
    lambda x, axis, keepdims: _ADD_REDUCE(x, axis, None, None, keepdims),
    _spread,
    family=_F,
    doc="sum over axes",
    batch=reduction,
)
# numpy divides the sum by an np.intp count: in float64 and complex128 that is a division in
# the array's own dtype, in float32 a float64 division rounded twice.
_DIVIDED_IN_OWN_DTYPE = {np.dtype(np.float64), np.dtype(np.complex128)}


def _mean(x: Any, axis: tuple[int, ...] | None, keepdims: bool) -> Any:
    """``np.mean``: for float64 and complex128 arrays, its own sum and division without its
    Python wrapper (the same numbers)."""
    if type(x) is np.ndarray and x.dtype in _DIVIDED_IN_OWN_DTYPE:
        count = _count(x, axis)
        if count:
            return _ADD_REDUCE(x, axis, None, None, keepdims) / count
    return np.mean(x, axis=axis, keepdims=keepdims)


MEAN = defop(
    "mean",
    _mean,
    lambda g, ans, x, axis, keepdims: _spread(g / _count(x, axis), ans, x, axis, keepdims),
    family=_F,
    doc="arithmetic mean over axes",
    batch=reduction,
)
MAX = defop(
    "max",
    lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    _extremum_rule,
    family=_F,
    doc="maximum over axes; ties share the gradient evenly",
    batch=reduction,
)
MIN = defop(
    "min",
    lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
    _extremum_rule,
    family=_F,
    doc="minimum over axes; ties share the gradient evenly",
    batch=reduction,
)


def _reduce(op: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    axes = None if axis is None else normalize_axis(op.name, axis, np.ndim(unwrap(x)))
    return record1(op, x, axes, bool(keepdims))


@guarded
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


@guarded
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


@guarded
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


@guarded
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
    # the reduced axes as one, sized explicitly: -1 is ambiguous when a kept axis is empty
    flat = moved.reshape((*moved.shape[: len(kept)], math.prod(moved.shape[len(kept) :])))
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
    batch=reduction,
)


@guarded
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


def _squared_magnitude(x: Any) -> Any:
    """``|x| ** 2`` entrywise: ``x * x`` for real values, ``Re(x * conj(x))`` for complex
    ones (a real result, differentiable everywhere, 0 included)."""
    if np.iscomplexobj(unwrap(x)):
        return real(x * conj(x))
    return x * x


@guarded
@composite
def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom, as ``np.var``: of
    complex values the mean of ``|x - mean(x)| ** 2``, a real number.

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
    return sum(_squared_magnitude(centred), axes, keepdims) / builtins.max(n - ddof, 0)


@guarded
@composite
def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """Standard deviation over ``axis``, as ``np.std`` (real for complex values too).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> float(ng.std(np.array([1.0, 3.0])))
    1.0
    >>> ng.grad(ng.std)(np.array([2.0]))  # one value: 0, as HIPS autograd gives (not NaN)
    array([0.])
    """
    axes = normalize_axis("std", axis, np.ndim(unwrap(x)))
    n = _count(unwrap(x), axes)
    if n > 1:
        return sqrt(var(x, axes, ddof, keepdims))
    # One value (or none) per result: it is 0 (NaN with ddof >= n), where sqrt has no
    # derivative and the chain rule would give 0 * inf = NaN. Its gradient is 0, as HIPS
    # autograd gives it: the sum of squared deviations from the mean, 0 with a zero gradient.
    spread = sum(_squared_magnitude(x - mean(x, axes, keepdims=True)), axes, keepdims)
    return spread + (np.nan if n - ddof <= 0 else 0.0)


def _norm_axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    """``axis`` for :func:`norm`: validated, in the order given (a matrix norm's first axis
    holds the rows), and as a tuple."""
    axes = normalize_axis("norm", axis, ndim)
    if axes is None or not isinstance(axis, (tuple, list)):
        return axes
    return tuple(int(a) % builtins.max(ndim, 1) for a in axis)


def _is_number(ord: Any) -> bool:  # noqa: A002
    return isinstance(ord, (int, float, np.integer, np.floating)) and not isinstance(ord, (bool, np.bool_))


@guarded
@composite
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002  (numpy's name)
    """Vector and matrix norms, as ``np.linalg.norm``.

    Vectors (one axis, or a 1-D ``x``): ``ord`` None/2 (Euclidean), ``inf``, ``-inf``,
    0 (the number of nonzero entries: piecewise constant, so its gradient is 0) and any
    other number ``p`` (``sum(|x|**p)**(1/p)``). numpy integer and float scalars work as
    ``ord`` like Python numbers.

    Matrices (two axes, or a 2-D ``x``): ``ord`` None/``'fro'`` (Frobenius), 1 and -1
    (the largest / smallest column sum of ``|x|``), ``inf`` and ``-inf`` (the largest /
    smallest row sum), 2 and -2 (the largest / smallest singular value) and ``'nuc'``
    (their sum), the last three through :func:`~nodegrad.ops.linalg.svdvals` (first
    derivatives only).

    Gradients: at a tie for a max/min norm the tied entries share it evenly; the gradient
    of ``|x|`` at 0 is 0; the gradient of a Euclidean norm at the zero vector is not
    defined (NaN). Complex ``x`` has real norms of ``|x|``, as in numpy.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.norm)(np.array([3.0, 4.0]))
    array([0.6, 0.8])
    >>> ng.grad(lambda m: ng.norm(m, 1))(np.array([[1.0, -2.0], [3.0, 4.0]]))
    array([[ 0., -1.],
           [ 0.,  1.]])
    """
    ndim = np.ndim(unwrap(x))
    axes = _norm_axes(axis, ndim)
    vector = (axes is not None and len(axes) == 1) or (axes is None and ndim == 1)
    matrix = (axes is not None and len(axes) == 2) or (axes is None and ndim == 2)
    number = _is_number(ord)
    if not (vector or matrix) and (ord is not None or (axes is not None and len(axes) > 2)):
        msg = (
            f"norm: ord={ord!r} needs one axis (a vector norm) or two (a matrix norm), got {len(axes or ())} of an "
            f"array of {ndim} dimensions: pass axis= [called at {user_location()}]"
        )
        raise ShapeError(msg)
    if ord is None or (isinstance(ord, str) and ord == "fro" and not vector) or (number and ord == 2 and vector):
        reduced = None if axes is None else tuple(sorted(axes))
        return sqrt(sum(_squared_magnitude(x), reduced, keepdims))
    if vector and number:
        if ord == np.inf:
            return max(absolute(x), axes, keepdims)
        if ord == -np.inf:
            return min(absolute(x), axes, keepdims)
        if ord == 0:
            # The count of nonzeros, as a value recorded from x with a zero gradient.
            value = x if type(x) not in DIFFERENTIATING else x.value
            nonzero = np.asarray(value != 0).astype(np.result_type(np.real(value)))
            recorded = absolute(x) if np.iscomplexobj(value) else x  # real, as the count is
            return sum(where(np.zeros(np.shape(nonzero), bool), recorded, nonzero), axes, keepdims)
        if ord == 1:
            return sum(absolute(x), axes, keepdims)
        return power(sum(power(absolute(x), float(ord)), axes, keepdims), 1.0 / float(ord))
    if matrix and number and ord in (1, -1, np.inf, -np.inf):
        rows, cols = (0, 1) if axes is None else axes
        # ord 1: the sums down each column (over the rows), then their max; inf: the sums
        # along each row, then their max. Both axes are kept until the end.
        sums = sum(absolute(x), rows if ord in (1, -1) else cols, keepdims=True)
        pick = max if ord in (1, np.inf) else min
        return pick(sums, (rows, cols), keepdims)
    if matrix and (ord in ("nuc",) or (number and ord in (2, -2))):
        return _singular_value_norm(x, ord, (-2, -1) if axes is None else axes, keepdims)
    msg = f"norm: ord={ord!r} is not a {'vector' if vector else 'matrix'} norm [called at {user_location()}]"
    raise ArgumentError(msg)


def _singular_value_norm(x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:  # noqa: A002
    """The spectral (2), smallest-singular-value (-2) or nuclear ('nuc') norm over ``axes``."""
    ndim = np.ndim(unwrap(x))
    rows, cols = (a % ndim for a in axes)
    values = svdvals(moveaxis(x, (rows, cols), (-2, -1)))
    pick = sum if isinstance(ord, str) else (max if ord == 2 else min)
    out = pick(values, -1, False)
    return expand_dims(out, tuple(sorted((rows, cols)))) if keepdims else out
