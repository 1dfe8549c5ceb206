"""``logsumexp`` as scipy has it: weights ``b`` (zeros and negatives included), a sign,
any axes, complex values.

One op, ``weighted_logsumexp``, whose forward is ``scipy.special.logsumexp`` itself, so
its values are scipy's to the last bit (scipy separates the largest term and sums the
rest with ``log1p``). Its rules are the softmax weights, written with numpy functions so
they differentiate again: ``d/da_i = b_i exp(a_i - ans)`` and ``d/db_i = exp(a_i - ans)``,
times the sign of the sum when the magnitude ``log|sum|`` is asked for (``return_sign``);
complex values are holomorphic (the ``2 pi i`` scipy takes off the imaginary part is a
constant). Where the result is not finite: a slice whose weighted sum is 0 (``-inf``)
gets gradient 0, as :func:`nodegrad.logsumexp` gives an all ``-inf`` slice; a ``+inf``
result shares the gradient among the ``+inf`` entries in proportion to their weights
(the softmax's limit); a NaN result gets NaN. An entry with ``b == 0`` adds nothing, as
in scipy, even where ``a`` is infinite, and its gradient in ``a`` is 0 (in ``b``, still
``exp(a_i - ans)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import PER_EXAMPLE
from nodegrad.engine.record import record
from nodegrad.engine.registry import defbatch, defop
from nodegrad.engine.staged import asarray, call_on, now
from nodegrad.engine.traced import unwrap
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.batching import example_ndim, shift_axis, value_function
from nodegrad.ops.elementwise import exp, imag, real
from nodegrad.ops.elementwise.arithmetic import all_values, plain_map
from nodegrad.ops.shape import squeeze
from nodegrad.ops.special.base import FAMILY, sc

__all__ = ["logsumexp"]


def _forward(a: Any, b: Any, axes: tuple[int, ...], signed: bool) -> Any:
    out = sc.logsumexp(a, axis=axes, b=b, keepdims=True, return_sign=signed)
    return out[0] if signed else out


def _exp_minus(a: Any, ans: Any) -> Any:
    """``exp(a - ans)`` where ``ans`` is finite, 0 where it is not (no ``inf - inf``)."""
    finite = np.isfinite(ans)
    if np.all(all_values(finite)):  # under vmap: in every example
        return np.exp(a - ans)
    return np.exp(np.where(finite, a - np.where(finite, ans, 0), -np.inf))


def _sign(b: Any, e: Any, axes: tuple[int, ...], signed: bool) -> Any:
    """The sign of the weighted sum (a constant), when ``ans`` is its magnitude's log:
    ``sum(b exp(a - ans))`` is then the sign itself."""
    if not signed:
        return 1
    weights = unwrap(e) if b is None else unwrap(b) * unwrap(e)
    return plain_map(np.sign, np.sum(weights, axis=axes, keepdims=True))


def _limits(w: Any, a: Any, b: Any, ans: Any, axes: tuple[int, ...], ones: bool) -> Any:
    """``w`` with the conventions where ``ans`` is not finite: NaN where it is NaN, and at
    ``+inf`` each ``+inf`` entry's share (``b_i / B``, or ``1 / B`` when ``ones``, ``B``
    the sum of the ``b`` of the ``+inf`` entries)."""
    values = unwrap(ans)
    if np.all(np.isfinite(all_values(values))):  # under vmap: in every example
        return w
    if np.iscomplexobj(values):
        return np.where(np.isnan(values), np.nan, w)
    av, bv = unwrap(a), np.ones((), values.dtype) if b is None else unwrap(b)
    top = np.logical_and(np.logical_and(av == np.inf, bv != 0), values == np.inf)
    total = np.sum(np.where(top, bv, 0), axis=axes, keepdims=True)
    share = np.where(top, (1 if ones else bv) / np.where(total == 0, 1, total), 0).astype(values.dtype)
    return np.where(np.isnan(values), np.nan, np.where(values == np.inf, share, w))


def _rule_a(g: Any, ans: Any, a: Any, b: Any, axes: tuple[int, ...], signed: bool) -> Any:
    e = _exp_minus(a, ans)
    w = e if b is None else b * e
    if b is not None and np.any(np.isinf(all_values(e))):
        w = np.where(b == 0, 0, w)  # b == 0 adds nothing, even at a == inf
    return g * (_limits(w, a, b, ans, axes, ones=False) * _sign(b, e, axes, signed))


def _rule_b(g: Any, ans: Any, a: Any, b: Any, axes: tuple[int, ...], signed: bool) -> Any:
    e = _exp_minus(a, ans)
    return g * (_limits(e, a, b, ans, axes, ones=True) * _sign(b, e, axes, signed))


WEIGHTED_LOGSUMEXP = defop(
    "weighted_logsumexp",
    _forward,
    _rule_a,
    _rule_b,
    None,
    None,
    family=FAMILY,
    broadcasts=True,
    doc="scipy.special.logsumexp: log(sum(b exp(a))) over axes (kept), or log abs(...) (gradient: the softmax weights)",
)


def _batch(op: Any, batched: tuple[bool, ...], size: int, a: Any, b: Any, axes: tuple[int, ...], signed: bool) -> Any:
    # a and b broadcast together, and the axes are the broadcast example's (a 0-d one read
    # as 1-d, as scipy reads it): the examples' axes lined up, the summed axes moved on.
    ndim = max(example_ndim(a, batched[0]), 0 if b is None else example_ndim(b, batched[1]), 1)
    lined = [v if v is None or not k else np.expand_dims(v, tuple(range(1, 1 + ndim - example_ndim(v, True))))
             for v, k in zip((a, b), batched[:2], strict=True)]  # fmt: skip
    return record(op, *lined, shift_axis(op.name, axes, ndim), signed)


defbatch(WEIGHTED_LOGSUMEXP, _batch)


@guarded
def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis``, computed without overflow:
    ``scipy.special.logsumexp``, with its values, differentiable in ``a`` and ``b``.

    Parameters
    ----------
    a : array_like
        Real or complex values.
    axis : None or int or tuple of ints, optional
        The axes summed over; all of them by default.
    b : array_like, optional
        Weights, broadcast against ``a``; zeros and negative values allowed (an entry
        with ``b == 0`` adds nothing, even where ``a`` is infinite).
    keepdims : bool, default False
        Keep the summed axes, with length 1.
    return_sign : bool, default False
        Return ``(log|sum|, sign(sum))`` (the sign carries no gradient; of complex
        values it is the phase ``exp(i angle(sum))``, which does). Without it, a negative
        real sum gives NaN.

    Returns
    -------
    res : array or (array, array)
        The logarithm, and with ``return_sign`` the sign.

    Notes
    -----
    The gradient is the softmax weights ``b exp(a - res)`` (``exp(a - res)`` for ``b``);
    see :mod:`nodegrad.ops.special.sums` for its values where ``res`` is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import logsumexp
    >>> ng.grad(lambda b: logsumexp(np.zeros(2), b=b))(np.array([1.0, 3.0]))
    array([0.25, 0.25])
    >>> logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -1.0]), return_sign=True)
    (np.float64(1.5413248546129181), np.float64(-1.0))
    """
    av, bv = _operand(a), None if b is None else _operand(b)
    shape = np.shape(av) if bv is None else np.broadcast_shapes(np.shape(av), np.shape(bv))
    ndim = max(len(shape), 1)  # scipy reads a 0-d a as 1-d
    axes = tuple(range(ndim)) if axis is None else normalize_axis("logsumexp", axis, ndim) or ()
    complex_values = np.iscomplexobj(av) or (bv is not None and np.iscomplexobj(bv))
    out = record(WEIGHTED_LOGSUMEXP, a, b, axes, return_sign and not complex_values)
    sign: Any = None
    if return_sign and complex_values:  # scipy's sign is the phase, and its result the real part
        sign, out = exp(1j * imag(out)), real(out)
    elif return_sign:
        sign = _sign_of_sum(av, bv, axes)
    if not keepdims:
        out = squeeze(out, axes)
        sign = None if sign is None else squeeze(sign, axes)
    out, sign = _scalar(out), _scalar(sign)
    return (out, sign) if return_sign else out


def _operand(value: Any) -> Any:
    value = unwrap(value)
    return value if type(value) in PER_EXAMPLE else asarray(value)


def _sign_of_sum(av: Any, bv: Any, axes: tuple[int, ...]) -> Any:
    """scipy's sign of the weighted sum (a plain value); of batched operands, each example's."""

    if type(av) in PER_EXAMPLE or type(bv) in PER_EXAMPLE:
        # scipy's own, example by example (level by level under nested vmaps): its sign of
        # a sum that rounds to about 0 is its own
        return value_function(lambda av, bv: _sign_of_sum(unwrap(av), unwrap(bv), axes), (av, bv), {})
    return call_on(_scipy_sign, av, bv, axes)  # (staged by replay: the call is recorded)


def _scipy_sign(av: Any, bv: Any, axes: tuple[int, ...]) -> Any:
    return sc.logsumexp(av, axis=axes, b=bv, keepdims=True, return_sign=True)[1]


def _scalar(value: Any) -> Any:
    """A 0-d plain array as scipy returns it, a numpy scalar; anything else unchanged."""
    plain = now(value)  # (staged by replay: what it holds now; the indexing is recorded)
    return value[()] if isinstance(plain, np.ndarray) and plain.ndim == 0 else value
