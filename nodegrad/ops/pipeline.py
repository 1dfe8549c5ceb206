"""Data-pipeline ops: group-by reductions, scatter, scans, sorting, masked reductions.

Segment ops reduce the rows of ``data`` (axis 0) into ``num_segments`` groups named by an
integer ``segment_ids`` array. Scans run along an axis without a Python loop per step:
``cumsum``/``cumprod`` use numpy's own, and the linear recurrence of :func:`ssm_scan`
uses a doubling scan (``log2(T)`` vectorised steps).

Every rule here also runs on traced values (higher-order derivatives, ``jvp``). The
backward of ``cumprod`` and ``ssm_scan`` is a reverse linear recurrence: on arrays it is
the in-place doubling scan, on traced values it is recorded as an ``ssm_scan`` node of
its own (see :func:`_scan`), whose rules are again scans, so both are differentiable to
any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import composite, record, record1
from nodegrad.engine.registry import PerCotangent, defop
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import DtypeError, OpIndexError, ShapeError, user_location
from nodegrad.ops.arguments import as_ints, normalize_axis
from nodegrad.ops.elementwise import divide, where
from nodegrad.ops.index import getitem, index_add
from nodegrad.ops.reduce import sum as reduce_sum
from nodegrad.ops.shape import broadcast_to, reshape

__all__ = [
    "cumprod",
    "cumsum",
    "logsumexp",
    "masked_mean",
    "masked_sum",
    "one_hot",
    "scatter_add",
    "segment_max",
    "segment_mean",
    "segment_sum",
    "sort",
    "ssm_scan",
    "take_along_axis",
]

_F = "pipeline"


# -- segments ------------------------------------------------------------------------------------


def _segment_ids(op_name: str, data: Any, segment_ids: Any, num_segments: int | None) -> tuple[np.ndarray, int]:
    """Validate ``segment_ids`` against ``data`` and settle the number of segments."""
    ids = np.asarray(unwrap(segment_ids))
    rows = np.shape(unwrap(data))[:1]
    if ids.dtype.kind not in "iu" or ids.ndim != 1:
        msg = (
            f"{op_name}: segment_ids must be a 1-D integer array, got {ids.dtype}{list(ids.shape)} [called at "
            f"{user_location()}]"
        )
        raise OpIndexError(msg)
    if not rows or ids.shape[0] != rows[0]:
        msg = (
            f"{op_name}: segment_ids has {ids.shape[0]} entries but data of shape {np.shape(unwrap(data))} "
            f"has {rows[0] if rows else 'no'} rows [called at {user_location()}]"
        )
        raise ShapeError(msg)
    given = None if num_segments is None else as_ints(op_name, "num_segments", num_segments)[0]
    num = (int(ids.max()) + 1 if ids.size else 0) if given is None else given
    if ids.size and (ids.min() < 0 or ids.max() >= num):
        msg = (
            f"{op_name}: segment ids must lie in [0, {num}), got values from {ids.min()} to {ids.max()} "
            f"[called at {user_location()}]"
        )
        raise OpIndexError(msg)
    return ids, num


def _segment_sum(data: Any, ids: np.ndarray, num: int) -> Any:
    out = np.zeros((num, *np.shape(data)[1:]), dtype=np.result_type(data))
    np.add.at(out, ids, data)
    return out


def _lowest(dtype: np.dtype) -> Any:
    """The identity of a maximum in ``dtype``: -inf, the least integer, or False."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return -np.inf


def _segment_max(data: Any, ids: np.ndarray, num: int) -> Any:
    dtype = np.result_type(data)
    out = np.full((num, *np.shape(data)[1:]), _lowest(dtype), dtype=dtype)
    np.maximum.at(out, ids, data)
    return out


def _segment_max_rule(g: Any, ans: Any, data: Any, ids: np.ndarray, num: int) -> Any:
    # Rows tied for their segment's maximum share its gradient evenly.
    hit = data == ans[ids]
    ties = _segment_sum(hit.astype(np.result_type(data)), ids, num)
    return (g / np.where(ties == 0, 1, ties))[ids] * hit


SEGMENT_SUM = defop(
    "segment_sum",
    _segment_sum,
    lambda g, ans, data, ids, num: getitem(g, ids),
    None,
    None,
    family=_F,
    doc="sum the rows of data that share a segment id",
)
SEGMENT_MAX = defop(
    "segment_max",
    _segment_max,
    _segment_max_rule,
    None,
    None,
    family=_F,
    doc="maximum over the rows of each segment (-inf when empty, or the integer minimum); ties share the gradient",
)


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Sum the rows of ``data`` (axis 0) by group: ``out[s] = sum(data[segment_ids == s])``.

    Parameters
    ----------
    data : array_like, shape (N, ...)
        Rows to reduce.
    segment_ids : array_like of int, shape (N,)
        The segment of each row, in ``[0, num_segments)``; need not be sorted.
    num_segments : int, optional
        Number of segments; ``max(segment_ids) + 1`` by default. Empty segments are 0.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_sum(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]))
    array([4., 2.])
    """
    ids, num = _segment_ids("segment_sum", data, segment_ids, num_segments)
    return record1(SEGMENT_SUM, data, ids, num)


def segment_mean(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Mean of the rows of ``data`` by group; an empty segment's mean is 0.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_mean(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]), num_segments=3)
    array([2., 2., 0.])
    """
    ids, num = _segment_ids("segment_mean", data, segment_ids, num_segments)
    counts = np.bincount(ids, minlength=num).reshape((num,) + (1,) * (np.ndim(unwrap(data)) - 1))
    # Counts in the data's own dtype: an int64 divisor would make float32 data float64.
    return divide(record1(SEGMENT_SUM, data, ids, num), np.maximum(counts, 1).astype(np.result_type(unwrap(data))))


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None) -> Any:
    """Maximum of the rows of ``data`` by group; an empty segment gives ``-inf``.

    For integer data (no gradient) an empty segment gives the dtype's minimum
    (``np.iinfo(dtype).min``, 0 for unsigned), and for booleans False: the value a
    maximum starts from.

    Rows tied for a segment's maximum share its gradient evenly.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.segment_max(np.array([1.0, 5.0, 3.0]), np.array([0, 1, 0]))
    array([3., 5.])
    """
    ids, num = _segment_ids("segment_max", data, segment_ids, num_segments)
    return record1(SEGMENT_MAX, data, ids, num)


# -- scatter and take-along-axis -----------------------------------------------------------------


def _check_indices(op_name: str, indices: Any, size: int) -> np.ndarray:
    idx = np.asarray(unwrap(indices))
    if idx.dtype.kind not in "iu":
        msg = f"{op_name}: indices must be integers, got dtype {idx.dtype} [called at {user_location()}]"
        raise OpIndexError(msg)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        msg = (
            f"{op_name}: index {idx.max() if idx.max() >= size else idx.min()} is out of bounds for an axis of "
            f"size {size} [called at {user_location()}]"
        )
        raise OpIndexError(msg)
    return idx


@composite
def scatter_add(x: Any, indices: Any, updates: Any, axis: int = 0) -> Any:
    """A copy of ``x`` with ``updates`` added at ``indices`` along ``axis``; the inverse of
    :func:`nodegrad.gather`. Repeated indices accumulate.

    ``updates`` has the shape ``gather(x, indices, axis)`` would have (or broadcasts to it).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.scatter_add(np.zeros(3), np.array([2, 0, 2]), np.array([1.0, 2.0, 3.0]))
    array([2., 0., 4.])
    """
    shape = np.shape(unwrap(x))
    axis = normalize_axis("scatter_add", axis, len(shape))[0]  # type: ignore[index]
    idx = _check_indices("scatter_add", indices, shape[axis])
    return index_add(x, updates, (slice(None),) * axis + (idx,))


def _along_axis_index(indices: np.ndarray, axis: int) -> tuple[Any, ...]:
    """The full index tuple that ``np.take_along_axis(x, indices, axis)`` reads."""
    grids = np.ogrid[tuple(slice(n) for n in indices.shape)]
    return tuple(indices if k == axis else grid for k, grid in enumerate(grids))


def _take_along_rule(g: Any, ans: Any, x: Any, indices: np.ndarray, axis: int) -> Any:
    return index_add(np.zeros(np.shape(x), dtype=np.result_type(g)), g, _along_axis_index(indices, axis))


TAKE_ALONG_AXIS = defop(
    "take_along_axis",
    lambda x, indices, axis: np.take_along_axis(x, indices, axis=axis),
    _take_along_rule,
    None,
    None,
    family=_F,
    doc="pick entries along an axis with an index array of matching shape (np.take_along_axis)",
)


@composite
def take_along_axis(x: Any, indices: Any, axis: int = -1) -> Any:
    """``np.take_along_axis``: entries of ``x`` picked along ``axis`` by ``indices``, which
    has ``x``'s number of dimensions (other axes broadcast). Repeats accumulate gradients.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> x = np.array([[10.0, 30.0, 20.0]])
    >>> ng.take_along_axis(x, np.array([[1, 1]]), axis=1)
    array([[30., 30.]])
    """
    shape = np.shape(unwrap(x))
    axis = normalize_axis("take_along_axis", axis, len(shape))[0]  # type: ignore[index]
    idx = _check_indices("take_along_axis", indices, shape[axis] if shape else 0)
    if idx.ndim == len(shape):
        # x broadcasts against the indices on the other axes too: do that first, as a node
        # of its own, so that the gradient's scatter sees x at its full size.
        wide = tuple(n if k == axis else max(n, m) for k, (n, m) in enumerate(zip(shape, idx.shape, strict=True)))
        if wide != shape and all(n in (1, w) for n, w in zip(shape, wide, strict=True)):
            x, shape = broadcast_to(x, wide), wide
    if idx.ndim != len(shape):
        msg = (
            f"take_along_axis: indices need {len(shape)} dimensions like x, got {idx.ndim} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    # Every axis but ``axis`` broadcasts between x and the indices: spell the indices out
    # in full so the gradient's scatter sees each position it reads.
    full = tuple(idx.shape[k] if k == axis else n for k, n in enumerate(shape))
    try:
        idx = np.broadcast_to(np.where(idx < 0, idx + shape[axis], idx), np.broadcast_shapes(idx.shape, full))
    except ValueError as exc:
        msg = (
            f"take_along_axis: indices of shape {idx.shape} do not fit x of shape {shape} [called at {user_location()}]"
        )
        raise ShapeError(msg) from exc
    return record1(TAKE_ALONG_AXIS, x, idx, axis)


def sort(x: Any, axis: int = -1) -> Any:
    """Sort along ``axis`` (stable); the gradient flows back through the permutation.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.sort(x)[0] * 10.0 + ng.sort(x)[2])(np.array([3.0, 1.0, 2.0]))
    array([ 1., 10.,  0.])
    """
    axis = normalize_axis("sort", axis, np.ndim(unwrap(x)))[0]  # type: ignore[index]
    order = np.argsort(unwrap(x), axis=axis, kind="stable")
    return take_along_axis(x, order, axis)


def one_hot(indices: Any, num_classes: int, dtype: Any = np.float64) -> np.ndarray:
    """One-hot rows for integer ``indices``: shape ``indices.shape + (num_classes,)``.

    A plain (non-differentiable) array; out-of-range indices raise.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.one_hot(np.array([2, 0]), 3)
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    idx = np.asarray(unwrap(indices))
    num_classes = as_ints("one_hot", "num_classes", num_classes)[0]
    if idx.dtype.kind not in "iu" or (idx.size and (idx.min() < 0 or idx.max() >= num_classes)):
        msg = f"one_hot: indices must be integers in [0, {num_classes}) [called at {user_location()}]"
        raise OpIndexError(msg)
    return (idx[..., None] == np.arange(num_classes)).astype(dtype)


# -- scans ---------------------------------------------------------------------------------------------


def _flip(x: Any, axis: int) -> Any:
    return getitem(x, (slice(None),) * axis + (slice(None, None, -1),))


CUMSUM = defop(
    "cumsum",
    lambda x, axis: np.cumsum(x, axis=axis),
    lambda g, ans, x, axis: _flip(cumsum(_flip(g, axis), axis), axis),
    None,
    family=_F,
    doc="running sum along an axis",
)


def _linear_scan(a: np.ndarray, u: np.ndarray, reverse: bool = False) -> np.ndarray:
    """``h[t] = a[t] * h[t-1] + u[t]`` along axis 0 with ``h[-1] = 0`` (``reverse``: ``h[t+1]``).

    A doubling scan: after the step with offset ``d`` every ``h[t]`` holds the recurrence
    over the ``2d`` steps ending at ``t``, so ``log2(T)`` vectorised steps do it all, with
    no division (stable for any ``a``, zeros included).

    The scan multiplies ``a`` over windows of up to ``T`` steps, and such a product can
    overflow where the recurrence itself stays finite (``a = 2`` for 1100 steps with
    ``u = 0`` until the last one: ``inf * 0`` is NaN). So when the result is not finite
    although ``a`` and ``u`` are, the scan is run again treating a zero factor as an exact
    zero (``0 * inf = 0``: the product it meets is finite in exact arithmetic), and should
    that still not be finite (terms cancelling after an overflow), one step at a time,
    vectorised over the other axes: the result is then the step-by-step recurrence's.
    """
    if reverse:
        return _linear_scan(a[::-1], u[::-1])[::-1]
    with np.errstate(over="ignore", invalid="ignore"):
        h = _doubling_scan(a, u, exact_zeros=False)
    if np.isfinite(h).all() or not (np.isfinite(a).all() and np.isfinite(u).all()):
        return h
    with np.errstate(over="ignore", invalid="ignore"):
        h = _doubling_scan(a, u, exact_zeros=True)
    if np.isfinite(h).all():
        return h
    return _stepwise_scan(a, u)


def _doubling_scan(a: np.ndarray, u: np.ndarray, exact_zeros: bool) -> np.ndarray:
    h = np.array(u, copy=True)
    a = np.array(a, copy=True)
    n, d = h.shape[0], 1
    while d < n:
        if exact_zeros:
            carried = a[d:] * h[:-d]
            carried[h[:-d] == 0] = 0
            h[d:] += carried
        else:
            h[d:] += a[d:] * h[:-d]
        # h[t] for t < 2d is final after this step: the window products a[d:2d] that no
        # later step reads are not formed.
        if 2 * d < n:
            window = a[2 * d :] * a[d:-d]
            if exact_zeros:
                window[(a[2 * d :] == 0) | (a[d:-d] == 0)] = 0
            a[2 * d :] = window
        d *= 2
    return h


def _stepwise_scan(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The recurrence one step at a time (a Python loop over axis 0 only)."""
    h = np.array(u, copy=True)
    for t in range(1, h.shape[0]):
        h[t] = a[t] * h[t - 1] + h[t]
    return h


def _scan(a: Any, u: Any, reverse: bool = False) -> Any:
    """:func:`_linear_scan` of arrays; of traced values, the same recurrence recorded as an
    ``ssm_scan`` node (``b = 1``), so a rule written with it can be differentiated again.

    ``a`` and ``u`` have the same shape.
    """
    if type(a) is not Traced and type(u) is not Traced:
        return _linear_scan(a, u, reverse)
    if reverse:
        return record(SSM_SCAN, a[::-1], 1.0, u[::-1])[::-1]
    return record(SSM_SCAN, a, 1.0, u)


def _cumprod_rule(g: Any, ans: Any, x: Any, axis: int) -> Any:
    # d/dx_i of sum_j g_j prod_{k<=j} x_k = (prod_{k<i} x_k) * S_i with S_i = g_i + x_{i+1} S_{i+1}:
    # exact with zeros in x, unlike the usual revcumsum(g * ans) / x. No division anywhere,
    # so the derivatives of this rule (traced: ans is a cumprod node, S an ssm_scan node)
    # are exact with zeros too.
    xs, gs, prods = np.moveaxis(x, axis, 0), np.moveaxis(g, axis, 0), np.moveaxis(ans, axis, 0)
    before = np.concatenate([np.ones_like(xs[:1]), prods[:-1]])
    after = np.concatenate([xs[1:], np.zeros_like(xs[:1])])
    return np.moveaxis(before * _scan(after, gs, reverse=True), 0, axis)


CUMPROD = defop(
    "cumprod",
    lambda x, axis: np.cumprod(x, axis=axis),
    _cumprod_rule,
    None,
    family=_F,
    doc="running product along an axis (gradient exact with zeros)",
)


def _scan_axis(op_name: str, x: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return reshape(x, (-1,)), 0
    return x, normalize_axis(op_name, axis, np.ndim(unwrap(x)))[0]  # type: ignore[index]


@composite
def cumsum(x: Any, axis: int | None = None) -> Any:
    """Running sum along ``axis`` (the flattened array when ``axis`` is None), as ``np.cumsum``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.cumsum(x)[1])(np.ones(3))
    array([1., 1., 0.])
    """
    x, axis = _scan_axis("cumsum", x, axis)
    return record1(CUMSUM, x, axis)


@composite
def cumprod(x: Any, axis: int | None = None) -> Any:
    """Running product along ``axis`` (flattened when None), as ``np.cumprod``; the
    gradient is exact where ``x`` has zeros.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.cumprod(x)[2])(np.array([2.0, 0.0, 3.0]))
    array([0., 6., 0.])
    """
    x, axis = _scan_axis("cumprod", x, axis)
    return record1(CUMPROD, x, axis)


def _ssm(a: Any, b: Any, x: Any) -> Any:
    # The scan runs in the dtype of the result (integer x with a fractional a is float).
    a, u = np.broadcast_arrays(a, np.asarray(b * x, dtype=np.result_type(a, b, x)))
    return _linear_scan(a, u)


def _ssm_adjoint(g: Any, a: Any, b: Any, x: Any) -> Any:
    """``lam[t] = g[t] + a[t+1] * lam[t+1]``: the cotangent of each hidden state, a scan
    backwards in time (an ``ssm_scan`` node itself when ``g`` or ``a`` is traced).

    The sweep calls the rules of one node one after another with the same cotangent
    object, and all three need ``lam``: on arrays it is computed once and kept for as long
    as that cotangent lives (see :class:`~nodegrad.engine.registry.PerCotangent`).
    """
    lam = _SHARED_ADJOINT.get(g, a)  # kept only for a plain-array g
    if lam is None:
        full = np.broadcast_to(a, np.shape(g))
        after = np.concatenate([full[1:], np.zeros_like(full[:1])])
        lam = _scan(after, g, reverse=True)
        _SHARED_ADJOINT.put(g, a, lam)
    return lam


_SHARED_ADJOINT = PerCotangent()


def _previous(h: Any) -> Any:
    return np.concatenate([np.zeros_like(h[:1]), h[:-1]])


SSM_SCAN = defop(
    "ssm_scan",
    _ssm,
    lambda g, ans, a, b, x: _ssm_adjoint(g, a, b, x) * _previous(ans),
    lambda g, ans, a, b, x: _ssm_adjoint(g, a, b, x) * x,
    lambda g, ans, a, b, x: _ssm_adjoint(g, a, b, x) * b,
    family=_F,
    broadcasts=True,
    doc="linear recurrence h[t] = a[t] * h[t-1] + b[t] * x[t] along axis 0",
)


def ssm_scan(a: Any, b: Any, x: Any) -> Any:
    """The linear recurrence ``h[t] = a[t] * h[t-1] + b[t] * x[t]`` along axis 0, ``h[-1] = 0``.

    ``a``, ``b`` and ``x`` broadcast together to ``(T, ...)``; all three are
    differentiable. Forward and backward are each one vectorised scan (``log2(T)`` numpy
    steps), not a Python loop over time; the backward computes the adjoint scan once for
    all three inputs. The result is the step-by-step recurrence's also where products of
    ``a`` over long windows overflow (``|a| > 1`` for many steps): such a scan is redone
    with exact zeros, or in the rare case that terms cancel after an overflow, one step
    at a time. Integer inputs are scanned in the result's dtype (float with a float ``a``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.ssm_scan(np.full(3, 0.5), 1.0, np.array([1.0, 0.0, 0.0]))
    array([1.  , 0.5 , 0.25])
    """
    for name, v in (("a", a), ("b", b), ("x", x)):
        if np.asarray(unwrap(v)).dtype.kind not in "biuf":
            msg = f"ssm_scan: {name} must be numeric, got {np.asarray(unwrap(v)).dtype} [called at {user_location()}]"
            raise DtypeError(msg)
    shapes = [np.shape(unwrap(v)) for v in (a, b, x)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as exc:
        msg = f"ssm_scan: a, b and x do not broadcast together: {shapes} [called at {user_location()}]"
        raise ShapeError(msg) from exc
    if not shape:
        msg = f"ssm_scan: needs a time axis (axis 0), got scalars [called at {user_location()}]"
        raise ShapeError(msg)
    return record(SSM_SCAN, a, b, x)


# -- reductions ------------------------------------------------------------------------------------


def _logsumexp(x: Any, axis: Any, keepdims: bool) -> Any:
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):  # log(0) = -inf: every entry is -inf (or none)
        out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _logsumexp_rule(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # The softmax exp(x - ans), where ans is finite. Where it is not: 0 for a -inf result
    # (every entry -inf); for +inf, the limit of the softmax, an even share among the +inf
    # entries; NaN for NaN. Those weights are constants (their own derivative is 0), and
    # the exponent is masked before exp, so neither order of derivative sees inf - inf.
    if not keepdims and axis is not None:
        g, ans = np.expand_dims(g, axis), np.expand_dims(ans, axis)
    finite = np.isfinite(ans)
    if np.all(finite):
        return g * np.exp(x - ans)
    finite = np.broadcast_to(finite, np.shape(x))
    top = np.where(finite, x, 0) - np.where(finite, ans, 0)
    big = np.asarray(x == np.inf)
    share = big / np.maximum(np.sum(big, axis=axis, keepdims=True), 1)
    share = np.where(np.isnan(unwrap(ans)), np.nan, share).astype(np.result_type(unwrap(x)))
    return g * np.where(finite, np.exp(top), share)


LOGSUMEXP = defop(
    "logsumexp",
    _logsumexp,
    _logsumexp_rule,
    None,
    None,
    family=_F,
    doc="log(sum(exp(x))) over axes, without overflow",
)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x), axis))`` computed without overflow; its gradient is the softmax.

    At infinities: a slice of only ``-inf`` gives ``-inf`` with gradient 0; a slice
    holding ``+inf`` gives ``+inf``, its gradient shared evenly by the ``+inf`` entries
    (the limit of the softmax).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> float(ng.logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    """
    axes = normalize_axis("logsumexp", axis, np.ndim(unwrap(x)))
    return record1(LOGSUMEXP, x, axes, bool(keepdims))


def _mask(op_name: str, x: Any, mask: Any) -> np.ndarray:
    m = np.asarray(unwrap(mask))
    if m.dtype != bool:
        msg = f"{op_name}: the mask must be boolean, got dtype {m.dtype} [called at {user_location()}]"
        raise DtypeError(msg)
    try:
        return np.broadcast_to(m, np.shape(unwrap(x)))
    except ValueError as exc:
        msg = (
            f"{op_name}: mask of shape {m.shape} does not broadcast to {np.shape(unwrap(x))} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg) from exc


@composite
def masked_sum(x: Any, mask: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Sum of the entries of ``x`` where ``mask`` is true; masked-out entries get no gradient.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.masked_sum(np.array([1.0, 2.0, 3.0]), np.array([True, False, True]))
    np.float64(4.0)
    """
    m = _mask("masked_sum", x, mask)
    return reduce_sum(where(m, x, 0), axis, keepdims)


@composite
def masked_mean(x: Any, mask: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Mean of the entries of ``x`` where ``mask`` is true; NaN where nothing is selected
    (as ``np.mean(x, where=mask)``), with zero gradient there.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.masked_mean(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[True, False], [False, False]]), axis=1)
    array([ 1., nan])
    """
    m = _mask("masked_mean", x, mask)
    count = np.sum(m, axis=axis, keepdims=keepdims)
    dtype = np.result_type(unwrap(x))
    total = divide(reduce_sum(where(m, x, 0), axis, keepdims), np.maximum(count, 1).astype(dtype))
    return where(count > 0, total, np.nan)
