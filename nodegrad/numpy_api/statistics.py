"""numpy's statistics on traced values, built from the ops: quantiles, medians, the
NaN-ignoring reductions and scans, covariances and weighted counts.

``np.quantile``, ``np.percentile`` and ``np.median`` (and their ``nan`` twins) sort the
values along the reduced axes (``ops.sort``) and read the order statistics numpy reads
(for each of numpy's thirteen methods), mixing two neighbours with numpy's own weights,
so the gradient of each result goes to the one or two sorted entries it came from: the
median of an even count gives half to each middle value, and tied values take the
gradient in the order the stable sort put them (complex values are sorted as numpy sorts
them, by real part first; numpy's quantiles, unlike its medians, refuse them, and so do
these). ``np.nanmax`` and ``np.nanmin`` are ``max``/``min`` with NaNs replaced by
-inf/+inf: entries tied for the extremum share the gradient evenly, as ``ops.max`` does.
NaNs get a zero gradient everywhere. ``np.cov`` and ``np.corrcoef`` follow numpy's steps
(a weighted mean, a product of the deviations, conjugated for complex values; a complex
correlation clipped part by part); ``np.bincount`` is a sum of ``weights`` by bin.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, has_values
from nodegrad.engine.staged import asarray
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, error_like, rerun_reporting_warnings, user_location
from nodegrad.numpy_api.arguments import read_keepdims
from nodegrad.numpy_api.composed import average, diagonal
from nodegrad.ops.arguments import normalize_axis

__all__ = [
    "STATISTICS",
    "bincount",
    "corrcoef",
    "cov",
    "median",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nanvar",
    "percentile",
    "quantile",
]


def _refuse(name: str, **given: Any) -> None:
    """An ArgumentError naming ``np.{name}`` for the arguments of ``given`` that were passed."""
    passed = sorted(k for k, v in given.items() if v is not None and v is not np._NoValue)
    if passed:
        msg = f"np.{name}: the argument(s) {passed} are not supported on traced values [called at {user_location()}]"
        raise ArgumentError(msg)


# -- quantiles ---------------------------------------------------------------------------------

# numpy's virtual index of the quantile q among n sorted values, per method (its
# _QuantileMethods): an integer index for the discrete methods, a fractional one to
# interpolate for the others; the second entry fixes gamma as numpy's fix_gamma does.
_PLOTTING = {
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
_DISCRETE = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation")
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", *_PLOTTING, *_DISCRETE)


def _to_boundaries(index: Any, previous_where: Any) -> Any:
    """numpy's ``_discrete_interpolation_to_boundaries``: the index below where the
    condition holds, else the one above (an integer index: one order statistic)."""
    below = np.floor(index)
    res = np.where(previous_where(index - below, index), below, below + 1).astype(np.intp)
    return np.maximum(res, 0)


def _virtual_index(method: str, n: Any, q: Any) -> Any:
    if method == "linear":
        return (n - 1) * q
    if method == "lower":
        return np.floor((n - 1) * q).astype(np.intp)
    if method == "higher":
        return np.ceil((n - 1) * q).astype(np.intp)
    if method == "nearest":
        return np.around((n - 1) * q).astype(np.intp)
    if method == "midpoint":
        return 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    if method == "inverted_cdf":
        return _to_boundaries(n * q - 1, lambda gamma, _: gamma == 0)
    if method == "closest_observation":
        return _to_boundaries(n * q - 1 - 0.5, lambda gamma, index: (gamma == 0) & (np.floor(index) % 2 == 1))
    if method == "averaged_inverted_cdf":
        return n * q - 1
    alpha, beta = _PLOTTING[method]
    return n * q + (alpha + q * (1 - alpha - beta)) - 1


def _lerp(a: Any, b: Any, t: Any, weak: bool) -> Any:
    """numpy's ``_lerp``: from the nearer end, so t = 0 gives a and t = 1 gives b exactly.
    With ``weak`` (q a Python number) the weights are cast to the values' float dtype, as
    numpy's Python float weight is (float32 values give a float32 quantile)."""
    d = b - a
    up, down = t, 1 - t
    if weak:
        dtype = np.result_type(d.dtype, 1.0)
        up, down = up.astype(dtype), down.astype(dtype)
    return ops.where(t >= 0.5, b - d * down, a + d * up)


def _order_statistics(
    name: str, a: Any, q: Any, axis: Any, keepdims: bool, method: str, skip_nan: bool, weak: bool
) -> Any:
    """The q-th quantiles of ``a`` over ``axis``, shaped ``q.shape + rest`` as numpy's
    (``weak``: q was a Python number, whose promotion keeps the values' float dtype)."""
    if method not in _METHODS:
        msg = (
            f"np.{name}: method {method!r} is not supported on traced values (supported: {', '.join(_METHODS)}) "
            f"[called at {user_location()}]"
        )
        raise ArgumentError(msg)
    shape = np.shape(unwrap(a))
    picked = normalize_axis(name, axis, len(shape))
    picked = tuple(range(len(shape))) if picked is None else tuple(picked)
    rest = [k for k in range(len(shape)) if k not in picked]
    kept = tuple(1 if k in picked else n for k, n in enumerate(shape))
    lines = ops.reshape(ops.transpose(a, (*rest, *picked)), (*(shape[k] for k in rest), -1))
    n_all = np.shape(unwrap(lines))[-1]
    if n_all == 0:
        raise ShapeError(f"np.{name}: cannot take a quantile of an empty array [called at {user_location()}]")
    if skip_nan:  # the count of each line depends on its values (a mask of the level of a's values)
        holes = np.isnan(unwrap(lines))
        lines = ops.where(holes, np.inf, lines)
        count = np.sum(~holes, axis=-1, keepdims=True)
    else:  # on the shape alone
        count = np.full((*np.shape(unwrap(lines))[:-1], 1), n_all)
    ordered = ops.sort(lines, -1)
    flat_q = np.asarray(q, np.float64).reshape(-1)
    virtual = asarray(_virtual_index(method, count, flat_q))  # (rest..., k)
    if virtual.dtype.kind in "iu":
        picked_values = ops.take_along_axis(ordered, np.clip(virtual, 0, np.maximum(count - 1, 0)), -1)
    else:
        below = np.floor(virtual)
        gamma = virtual - below
        if method == "midpoint":
            gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
        elif method == "averaged_inverted_cdf":  # the mean of two neighbours on a step, else the upper
            gamma = np.where(gamma == 0, 0.5, 1.0)
        top = np.maximum(count - 1, 0)
        lo = np.clip(below, 0, top).astype(np.intp)
        hi = np.clip(below + 1, 0, top).astype(np.intp)
        lo = np.where(virtual >= count - 1, top, lo)
        picked_values = _lerp(ops.take_along_axis(ordered, lo, -1), ops.take_along_axis(ordered, hi, -1), gamma, weak)
    shape_picked = np.shape(unwrap(picked_values))
    if skip_nan and (not has_values(count) or np.any(count == 0)):  # an all-NaN slice: NaN, as numpy gives it
        picked_values = ops.where(np.broadcast_to(count == 0, shape_picked), np.nan, picked_values)
    elif not skip_nan and ordered.dtype.kind in "fc":  # a slice holding a NaN: NaN, as numpy gives it
        tainted = np.any(np.isnan(unwrap(lines)), axis=-1, keepdims=True)
        picked_values = ops.where(np.broadcast_to(tainted, shape_picked), np.nan, picked_values)
    out = ops.moveaxis(picked_values, -1, 0)
    target = np.shape(q) + (kept if keepdims else tuple(shape[k] for k in rest))
    return ops.reshape(out, target)


def _quantile_like(name: str, scale: float, skip_nan: bool) -> Callable[..., Any]:
    def quantile_fn(
        a: Any,
        q: Any,
        axis: Any = None,
        out: Any = None,
        overwrite_input: bool = False,
        method: str = "linear",
        keepdims: Any = False,
        *,
        weights: Any = None,
        interpolation: Any = None,
    ) -> Any:
        _refuse(name, out=out, weights=weights)
        if np.iscomplexobj(unwrap(a)):  # numpy's medians take them; its quantiles do not
            raise DtypeError(f"np.{name}: a must be an array of real numbers [called at {user_location()}]")
        if interpolation is not None:  # numpy's deprecated name of method
            method = interpolation
        weak = type(q) in (int, float)  # numpy's weak promotion of the result
        if type(q) in DIFFERENTIATING:
            msg = f"np.{name}: q must be plain values (no gradient in q) [called at {user_location()}]"
            raise ArgumentError(msg)
        q = np.true_divide(np.asanyarray(q), scale) if scale != 1 else np.asanyarray(q)
        if q.dtype.kind not in "fiub" or not (np.all(q >= 0) and np.all(q <= 1)):
            what = (
                "Percentiles must be in the range [0, 100]" if scale != 1 else "Quantiles must be in the range [0, 1]"
            )
            raise ArgumentError(f"np.{name}: {what} [called at {user_location()}]")
        return _order_statistics(name, a, q, axis, read_keepdims(keepdims), method, skip_nan, weak)

    return quantile_fn


quantile = _quantile_like("quantile", 1, False)
percentile = _quantile_like("percentile", 100, False)
nanquantile = _quantile_like("nanquantile", 1, True)
nanpercentile = _quantile_like("nanpercentile", 100, True)


def _median_like(name: str, skip_nan: bool) -> Callable[..., Any]:
    def median_fn(
        a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: Any = False
    ) -> Any:
        _refuse(name, out=out)
        return _order_statistics(name, a, np.asarray(0.5), axis, read_keepdims(keepdims), "linear", skip_nan, True)

    return median_fn


median = _median_like("median", False)
nanmedian = _median_like("nanmedian", True)


# -- NaN-ignoring reductions and scans ---------------------------------------------------------


def _nan_extremum(name: str, reduce: Callable[..., Any], fill: float) -> Callable[..., Any]:
    def extremum(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, initial: Any = np._NoValue,
                 where: Any = np._NoValue) -> Any:  # fmt: skip
        _refuse(name, out=out, initial=initial, where=where)
        keep = read_keepdims(keepdims)
        if a.dtype.kind not in "fc":  # no NaN to skip: numpy's max, in a's dtype
            return reduce(a, axis, keep)
        holes = np.isnan(unwrap(a))
        value = reduce(ops.where(holes, fill, a), axis, keep)
        empty = np.all(holes, axis=axis, keepdims=keep)
        return ops.where(empty, np.nan, value) if not has_values(empty) or np.any(empty) else value

    return extremum


nanmax = _nan_extremum("nanmax", ops.max, -np.inf)
nanmin = _nan_extremum("nanmin", ops.min, np.inf)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False,
            initial: Any = np._NoValue, where: Any = np._NoValue) -> Any:  # fmt: skip
    _refuse("nanprod", dtype=dtype, out=out, initial=initial, where=where)
    return ops.prod(ops.where(np.isnan(unwrap(a)), 1.0, a), axis, read_keepdims(keepdims))


def _nan_spread(name: str, root: bool) -> Callable[..., Any]:
    def spread(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False,
               *, where: Any = np._NoValue, mean: Any = np._NoValue, correction: Any = np._NoValue) -> Any:  # fmt: skip
        _refuse(name, dtype=dtype, out=out, where=where, mean=mean)
        if correction is not np._NoValue:
            if ddof != 0:
                msg = f"np.{name}: ddof and correction can't be provided simultaneously [called at {user_location()}]"
                raise ArgumentError(msg)
            ddof = correction
        keep = read_keepdims(keepdims)
        holes = np.isnan(unwrap(a))
        filled = ops.where(holes, 0.0, a)
        count = np.sum(~holes, axis=axis, keepdims=True)
        centre = ops.sum(filled, axis, True) / count
        deviation = ops.where(holes, 0.0, filled - centre)
        dof = np.sum(~holes, axis=axis, keepdims=keep) - ddof
        # |deviation| ** 2: a real variance of complex values too, as numpy's.
        squares = ops.real(deviation * ops.conj(deviation)) if np.iscomplexobj(unwrap(a)) else deviation * deviation
        value = ops.sum(squares, axis, keep) / np.maximum(dof, 0)
        return ops.sqrt(value) if root else value

    return spread


nanvar = _nan_spread("nanvar", False)
nanstd = _nan_spread("nanstd", True)


def _nan_scan(name: str, scan: Callable[..., Any], fill: float) -> Callable[..., Any]:
    def nan_scan(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        _refuse(name, dtype=dtype, out=out)
        return scan(ops.where(np.isnan(unwrap(a)), fill, a), axis)

    return nan_scan


nancumsum = _nan_scan("nancumsum", ops.cumsum, 0.0)
nancumprod = _nan_scan("nancumprod", ops.cumprod, 1.0)


# -- covariance --------------------------------------------------------------------------------


def _rows(a: Any, rowvar: bool, is_m: bool) -> Any:
    """numpy's ``array(m, ndmin=2)``, observations along the rows' axis 1."""
    ndim = np.ndim(unwrap(a))
    if ndim > 2:
        raise ShapeError(f"np.cov: m has more than 2 dimensions [called at {user_location()}]")
    if type(a) in INTERPRETED and type(a) not in DIFFERENTIATING:  # (a batched or a shape-only value, say)
        wide = np.result_type(a.dtype, np.float64)
        a = a if a.dtype == wide else ops.astype(a, wide)
    elif type(a) not in DIFFERENTIATING:
        a = np.asarray(a, np.result_type(np.asarray(a), np.float64))
    a = ops.reshape(a, (1, -1)) if ndim < 2 else a
    # A single row stays one variable (numpy 2.4 and later: only a 1-d m, which is read as one).
    kept = ndim < 2 if is_m and _TRANSPOSES_ONE_ROW else np.shape(unwrap(a))[0] == 1
    return a if rowvar or kept else ops.transpose(a)


# Whether numpy's cov reads an m of one row with rowvar=False as one observation of many
# variables (numpy 2.4 and later) rather than one variable (before).
_TRANSPOSES_ONE_ROW = np.cov(np.ones((1, 2)), rowvar=False, bias=True).shape == (2, 2)


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None, fweights: Any = None,
        aweights: Any = None, *, dtype: Any = None) -> Any:  # fmt: skip
    if dtype is not None and np.dtype(dtype) != np.float64:
        _refuse("cov", dtype=dtype)
    if ddof is not None and ddof != int(ddof):
        raise ArgumentError(f"np.cov: ddof must be integer [called at {user_location()}]")
    x = _rows(m, rowvar, True)
    if y is not None:
        x = ops.cat([x, _rows(y, rowvar, False)], 0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    w: Any = None
    if fweights is not None:
        fw = unwrap(fweights) if type(fweights) in INTERPRETED else np.asarray(fweights)
        if has_values(fw) and not np.all(fw == np.around(fw)):
            raise ArgumentError(f"np.cov: fweights must be integer [called at {user_location()}]")
        if has_values(fw) and np.any(fw < 0):
            raise ArgumentError(f"np.cov: fweights cannot be negative [called at {user_location()}]")
        w = fw.astype(np.float64)
    if aweights is not None:
        aweights = aweights if type(aweights) in INTERPRETED else np.asarray(aweights, np.float64)
        if has_values(aweights) and np.any(unwrap(aweights) < 0):
            raise ArgumentError(f"np.cov: aweights cannot be negative [called at {user_location()}]")
        w = aweights if w is None else w * aweights
    n = np.shape(unwrap(x))[1]
    if w is not None and np.shape(unwrap(w)) != (n,):
        raise ShapeError(f"np.cov: weights need one entry per observation ({n}) [called at {user_location()}]")
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    if w is None:
        fact: Any = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * ops.sum(w * aweights) / w_sum
    if has_values(fact) and np.any(np.asarray(unwrap(fact)) <= 0):  # one sample, say: numpy warns, then / 0
        rerun_reporting_warnings(warnings.warn, "Degrees of freedom <= 0 for slice", RuntimeWarning)
        scale: Any = ops.divide(1.0, np.float64(0.0))  # inf (nan where 0 / 0), and numpy's own warning
    else:
        scale = 1.0 / fact
    centred = x - ops.expand_dims(avg, 1)
    weighted = centred if w is None else centred * w
    if np.iscomplexobj(unwrap(weighted)):  # numpy's X . conj(X).T: Hermitian
        weighted = ops.conj(weighted)
    c = ops.matmul(centred, ops.transpose(weighted)) * scale
    return ops.squeeze(c) if 1 in np.shape(unwrap(c)) else c


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, bias: Any = np._NoValue, ddof: Any = np._NoValue, *,
             dtype: Any = None) -> Any:  # fmt: skip
    # bias and ddof are deprecated and have no effect in numpy: the ratio cancels them.
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(unwrap(c)) == 0:
        return c / c
    stddev = ops.sqrt(ops.real(diagonal(c)))
    c = c / ops.expand_dims(stddev, 1) / ops.expand_dims(stddev, 0)
    if not np.iscomplexobj(unwrap(c)):
        return ops.clamp(c, -1.0, 1.0)
    # numpy clips the real and the imaginary parts each to [-1, 1].
    return ops.clamp(ops.real(c), -1.0, 1.0) + 1j * ops.clamp(ops.imag(c), -1.0, 1.0)


# -- counts ------------------------------------------------------------------------------------


def bincount(x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    """The sum of ``weights`` in each bin ``x`` names (``x`` holds integers: no gradient)."""
    samples = np.asarray(unwrap(x))
    if weights is None or type(weights) not in INTERPRETED:
        return np.bincount(samples, None if weights is None else np.asarray(weights), minlength=minlength)
    try:
        counts = np.bincount(samples, minlength=operator.index(minlength))
    except (TypeError, ValueError) as exc:
        raise (error_like(exc) or ArgumentError)(f"np.bincount: {exc} [called at {user_location()}]") from None
    if np.shape(unwrap(weights)) != samples.shape:
        raise ShapeError(f"np.bincount: The weights and list don't have the same length. [called at {user_location()}]")
    if np.iscomplexobj(unwrap(weights)):
        msg = f"np.bincount: complex weights are not supported, as in numpy [called at {user_location()}]"
        raise DtypeError(msg)
    total = np.zeros(counts.shape[0], np.float64)
    w = weights if np.result_type(unwrap(weights)) == np.float64 else ops.astype(weights, np.float64)
    return ops.index_add(total, w, samples)


#: numpy's functions this module gives rules for, as the function table takes them.
STATISTICS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.percentile: percentile,
    np.quantile: quantile,
    np.median: median,
    np.nanpercentile: nanpercentile,
    np.nanquantile: nanquantile,
    np.nanmedian: nanmedian,
    np.nanmax: nanmax,
    np.nanmin: nanmin,
    np.nanprod: nanprod,
    np.nanvar: nanvar,
    np.nanstd: nanstd,
    np.nancumsum: nancumsum,
    np.nancumprod: nancumprod,
    np.cov: cov,
    np.corrcoef: corrcoef,
    np.bincount: bincount,
}
