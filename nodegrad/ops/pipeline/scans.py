"""Data-pipeline ops along an axis: scans (running sums and products, a linear
recurrence) and reductions (log-sum-exp, masked sums and means).

Scans run along an axis without a Python loop per step: ``cumsum``/``cumprod`` use
numpy's own, and the linear recurrence of :func:`ssm_scan` uses a doubling scan
(``log2(T)`` vectorised steps).

Every rule here also runs on traced values (higher-order derivatives, ``jvp``). The
backward of ``cumprod`` and ``ssm_scan`` is a reverse linear recurrence: on arrays it is
the in-place doubling scan, on traced values it is recorded as an ``ssm_scan`` node of
its own (see :func:`_scan`), whose rules are again scans, so both are differentiable to
any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, PER_EXAMPLE, has_values
from nodegrad.engine.record import record, record1
from nodegrad.engine.registry import defbatch, defjoint, defop
from nodegrad.engine.staged import array, call_on
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, ShapeError, user_location
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.batching import aligned, along_axis, example_ndim, reduction
from nodegrad.ops.elementwise import divide, where
from nodegrad.ops.elementwise.arithmetic import all_values
from nodegrad.ops.index import getitem
from nodegrad.ops.reduce import sum as reduce_sum
from nodegrad.ops.shape import reshape

__all__ = ["cumprod", "cumsum", "logsumexp", "masked_mean", "masked_sum", "ssm_scan"]

_F = "pipeline"


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
    batch=along_axis(1),
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
    a = array(a)
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
    """:func:`_linear_scan` of arrays; of traced (or batched) values, the same recurrence
    recorded as an ``ssm_scan`` node (``b = 1``), so a rule written with it can be
    differentiated again (and batched).

    ``a`` and ``u`` have the same shape.
    """
    if not any(type(v) in DIFFERENTIATING or type(v) in PER_EXAMPLE for v in (a, u)):
        return call_on(_linear_scan, a, u, reverse)  # (staged by replay: one call, recorded)
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
    batch=along_axis(1),
)


def _scan_axis(op_name: str, x: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return reshape(x, (-1,)), 0
    if np.ndim(unwrap(x)) == 0:  # numpy scans a 0-d value as one of length 1 (axis 0 or -1)
        return reshape(x, (1,)), normalize_axis(op_name, axis, 1)[0]  # type: ignore[index]
    return x, normalize_axis(op_name, axis, np.ndim(unwrap(x)))[0]  # type: ignore[index]


@guarded
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


@guarded
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

    All three inputs' cotangents are made from it: the op's joint rule computes it once.
    """
    full = np.broadcast_to(a, np.shape(g))
    after = np.concatenate([full[1:], np.zeros_like(full[:1])])
    return _scan(after, g, reverse=True)


def _previous(h: Any) -> Any:
    return np.concatenate([np.zeros_like(h[:1]), h[:-1]])


def _ssm_rule(wanted: tuple[int, ...], g: Any, ans: Any, a: Any, b: Any, x: Any) -> tuple[Any, ...]:
    """lam * h[t-1] for a, lam * x for b, lam * b for x: one adjoint scan lam for all three"""
    lam = _ssm_adjoint(g, a, b, x)
    return tuple(lam * _previous(ans) if k == 0 else lam * x if k == 1 else lam * b for k in wanted)


SSM_SCAN = defjoint(
    "ssm_scan",
    _ssm,
    _ssm_rule,
    (0, 1, 2),
    family=_F,
    broadcasts=True,
    doc="linear recurrence h[t] = a[t] * h[t-1] + b[t] * x[t] along axis 0",
)


def _ssm_batch(op: Any, batched: tuple[bool, ...], size: int, a: Any, b: Any, x: Any) -> Any:
    # Each example's recurrence runs along its own axis 0: the examples move to axis 1 of
    # the broadcast (T, ...) shape, every operand lined up with it first (an unbatched one
    # with a time axis of its own gets a length-1 axis there).
    ndim = max(example_ndim(v, k) for v, k in zip((a, b, x), batched, strict=True))
    moved = [
        np.moveaxis(v, 0, 1) if k else np.expand_dims(v, 1) if np.ndim(v) == ndim else v
        for v, k in zip(aligned(batched, (a, b, x)), batched, strict=True)
    ]
    return np.moveaxis(record(op, *moved), 1, 0)


defbatch(SSM_SCAN, _ssm_batch)


def _dtype(value: Any) -> np.dtype[Any]:
    """The dtype of ``value``: an array, a number, a list, a traced or batched value."""
    value = unwrap(value)
    return value.dtype if type(value) in INTERPRETED else np.asarray(value).dtype


@guarded
def ssm_scan(a: Any, b: Any, x: Any) -> Any:
    """The linear recurrence ``h[t] = a[t] * h[t-1] + b[t] * x[t]`` along axis 0, ``h[-1] = 0``.

    ``a``, ``b`` and ``x`` broadcast together to ``(T, ...)``; all three are
    differentiable. Forward and backward are each one vectorised scan (``log2(T)`` numpy
    steps), not a Python loop over time; the backward computes the adjoint scan once for
    all three inputs. The result is the step-by-step recurrence's also where products of
    ``a`` over long windows overflow (``|a| > 1`` for many steps): such a scan is redone
    with exact zeros, or in the rare case that terms cancel after an overflow, one step
    at a time. Integer inputs are scanned in the result's dtype (float with a float ``a``);
    complex inputs make a complex recurrence (holomorphic in all three).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.ssm_scan(np.full(3, 0.5), 1.0, np.array([1.0, 0.0, 0.0]))
    array([1.  , 0.5 , 0.25])
    """
    for name, v in (("a", a), ("b", b), ("x", x)):
        dtype = _dtype(v)
        if dtype.kind not in "biufc":
            msg = f"ssm_scan: {name} must be numeric, got {dtype} [called at {user_location()}]"
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
    # Shifted by the largest real part: for complex x the log is then the principal one.
    top = np.max(np.real(x), axis=axis, keepdims=True)
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
    if not has_values(finite) or np.all(all_values(finite)):  # under vmap: every example's
        return g * np.exp(x - ans)
    finite = np.broadcast_to(finite, np.shape(x))
    top = np.where(finite, x, 0) - np.where(finite, ans, 0)
    big = np.equal(x, np.inf)
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
    batch=reduction,
)


@guarded
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x), axis))`` computed without overflow; its gradient is the softmax.
    Of complex values it is holomorphic, with the principal logarithm (as scipy's).

    At infinities: a slice of only ``-inf`` gives ``-inf`` with gradient 0; a slice
    holding ``+inf`` gives ``+inf``, its gradient shared evenly by the ``+inf`` entries
    (the limit of the softmax).

    The gradient of an all ``-inf`` slice has no value of its own (the softmax's limit
    depends on the direction: ``(-t, -t)`` gives halves, ``(-t, -2t)`` gives ``(1, 0)``),
    and JAX and PyTorch give NaN. nodegrad gives 0 on purpose: a fully masked row whose
    result is not used would otherwise make the whole gradient NaN (``0 * NaN``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> float(ng.logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    """
    axes = normalize_axis("logsumexp", axis, np.ndim(unwrap(x)))
    return record1(LOGSUMEXP, x, axes, bool(keepdims))


def _mask(op_name: str, x: Any, mask: Any) -> Any:
    m = unwrap(mask)
    m = m if type(m) in PER_EXAMPLE else np.asarray(m)
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


@guarded
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


@guarded
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
