"""Neural-network ops: softmax, log-softmax, cross-entropy, layer and batch normalisation.

Each is one node with a fused VJP. Rules recompute the normalised values from the
stored inputs rather than keeping extra residuals: one pass over the input is cheaper
than a second stored copy of it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import PER_EXAMPLE
from nodegrad.engine.record import record, record1, record2
from nodegrad.engine.registry import defbatch, defop
from nodegrad.engine.staged import asarray
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, OpIndexError, ShapeError, user_location
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.batching import along_axis, example_ndim, to_batched
from nodegrad.ops.elementwise.arithmetic import all_values

__all__ = ["batch_norm", "cross_entropy", "layer_norm", "log_softmax", "softmax"]

_F = "nn"


def _shifted(x: Any, axis: int) -> Any:
    # By the largest real part: for complex x a real shift leaves the phase of the sum of
    # exponentials alone, so its log is the principal one (as scipy's logsumexp takes it).
    return x - np.max(np.real(x), axis=axis, keepdims=True)


def _log_softmax(x: Any, axis: int) -> Any:
    shifted = _shifted(x, axis)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _softmax(x: Any, axis: int) -> Any:
    e = np.exp(_shifted(x, axis))
    return e / np.sum(e, axis=axis, keepdims=True)


SOFTMAX = defop(
    "softmax",
    _softmax,
    lambda g, ans, x, axis: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)),
    None,
    family=_F,
    doc="exp(x) / sum(exp(x)) along an axis, shifted by the max for stability",
    batch=along_axis(1),
)
LOG_SOFTMAX = defop(
    "log_softmax",
    _log_softmax,
    lambda g, ans, x, axis: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True),
    None,
    family=_F,
    doc="x - logsumexp(x) along an axis",
    batch=along_axis(1),
)


def _batch_size(logits: Any) -> int:
    return max(int(np.size(logits) // np.shape(logits)[-1]), 1)


def _ce_index(logits: Any, targets: Any) -> Any:
    picked = np.take_along_axis(_log_softmax(logits, -1), targets[..., None], axis=-1)
    return -np.sum(picked) / _batch_size(logits)


def _ce_index_rule(g: Any, ans: Any, logits: Any, targets: Any) -> Any:
    grad = _softmax(logits, -1)
    one_hot = np.arange(np.shape(logits)[-1]) == targets[..., None]
    return (grad - one_hot) * (g / _batch_size(logits))


def _ce_probs(logits: Any, targets: Any) -> Any:
    return -np.sum(targets * _log_softmax(logits, -1)) / _batch_size(logits)


def _ce_probs_rule_logits(g: Any, ans: Any, logits: Any, targets: Any) -> Any:
    mass = np.sum(targets, axis=-1, keepdims=True)
    return (_softmax(logits, -1) * mass - targets) * (g / _batch_size(logits))


CROSS_ENTROPY = defop(
    "cross_entropy",
    _ce_index,
    _ce_index_rule,
    None,
    family=_F,
    doc="mean negative log-likelihood of integer class targets under softmax(logits)",
)
CROSS_ENTROPY_PROBS = defop(
    "cross_entropy_probs",
    _ce_probs,
    _ce_probs_rule_logits,
    lambda g, ans, logits, targets: -_log_softmax(logits, -1) * (g / _batch_size(logits)),
    family=_F,
    broadcasts=True,
    doc="mean cross-entropy between probability targets and softmax(logits)",
)


def _cross_entropy_batch(op: Any, batched: tuple[bool, ...], size: int, logits: Any, targets: Any) -> Any:
    # The op's mean runs over every leading axis, which would mix the examples: each
    # example's mean is taken here from one log_softmax of all of them.
    logits = to_batched(logits, batched[0], size)
    last = np.ndim(logits) - 1
    log_p = record1(LOG_SOFTMAX, logits, last)
    if op is CROSS_ENTROPY:
        picked = np.take_along_axis(log_p, to_batched(targets, batched[1], size)[..., None], axis=last)
    else:
        picked = targets * log_p  # an unbatched target broadcasts: it has an example's shape
    rows = max(math.prod(np.shape(logits)[1:-1]), 1)
    return -np.sum(picked, axis=tuple(range(1, last + 1))) / rows


defbatch(CROSS_ENTROPY, _cross_entropy_batch)
defbatch(CROSS_ENTROPY_PROBS, _cross_entropy_batch)


def _normalized(x: Any, axes: Any, eps: float) -> tuple[Any, Any]:
    """Return ``(xhat, rstd)``: x centred and scaled to unit variance over ``axes``."""
    centred = x - np.mean(x, axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(np.mean(centred * centred, axis=axes, keepdims=True) + eps)
    return centred * rstd, rstd


def _normalize_rule(g_hat: Any, x: Any, axes: Any, eps: float) -> Any:
    # d/dx of xhat for cotangent g_hat: rstd * (g_hat - mean(g_hat) - xhat * mean(g_hat * xhat))
    xhat, rstd = _normalized(x, axes, eps)
    mean_g = np.mean(g_hat, axis=axes, keepdims=True)
    mean_gx = np.mean(g_hat * xhat, axis=axes, keepdims=True)
    return rstd * (g_hat - mean_g - xhat * mean_gx)


def _affine(xhat: Any, weight: Any, bias: Any, shape: tuple[int, ...]) -> Any:
    if weight is not None:
        xhat = xhat * np.reshape(weight, shape)
    if bias is not None:
        xhat = xhat + np.reshape(bias, shape)
    return xhat


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    return _affine(_normalized(x, -1, eps)[0], weight, bias, (-1,))


def _layer_norm_rule_x(g: Any, ans: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    return _normalize_rule(g if weight is None else g * weight, x, -1, eps)


LAYER_NORM = defop(
    "layer_norm",
    _layer_norm,
    _layer_norm_rule_x,
    lambda g, ans, x, weight, bias, eps: g * _normalized(x, -1, eps)[0],
    lambda g, ans, x, weight, bias, eps: g,
    None,
    family=_F,
    broadcasts=True,
    doc="normalise over the last axis, then scale by weight and shift by bias",
)


def _channel_shape(x: Any) -> tuple[int, ...]:
    return (1, -1) + (1,) * (np.ndim(x) - 2)


def _batch_axes(x: Any) -> tuple[int, ...]:
    return (0, *range(2, np.ndim(x)))


def _batch_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    xhat = _normalized(x, _batch_axes(x), eps)[0]
    return _affine(xhat, weight, bias, _channel_shape(x))


def _batch_norm_rule_x(g: Any, ans: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    g_hat = g if weight is None else g * np.reshape(weight, _channel_shape(x))
    return _normalize_rule(g_hat, x, _batch_axes(x), eps)


BATCH_NORM = defop(
    "batch_norm",
    _batch_norm,
    _batch_norm_rule_x,
    lambda g, ans, x, w, b, eps: np.sum(g * _normalized(x, _batch_axes(x), eps)[0], axis=_batch_axes(x)),
    lambda g, ans, x, w, b, eps: np.sum(g, axis=_batch_axes(x)),
    None,
    family=_F,
    doc="normalise each channel (axis 1) with the batch's statistics, then affine",
)


def _layer_norm_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    # Each example is normalised over its last axis, which stays the last: x runs as it
    # is. A batched weight (or a bias after one) applies after the op, lined up with the
    # examples' last axis.
    ndim = example_ndim(x, batched[0])

    def lined_up(p: Any) -> Any:
        return np.expand_dims(p, tuple(range(1, ndim))) if ndim > 1 else p

    late_bias = batched[1] or batched[2]
    out = record(op, x, None if batched[1] else weight, None if late_bias else bias, eps)
    if batched[1]:
        out = out * lined_up(weight)
    if late_bias and bias is not None:
        out = out + (lined_up(bias) if batched[2] else bias)
    return out


def _batch_norm_batch(op: Any, batched: tuple[bool, ...], size: int, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    # Each example's statistics are over its own batch axis (0) and spatial axes, channel by
    # channel (axis 1): the examples become more channels, (B, N, C, ...) -> (N, B * C, ...),
    # with a weight and a bias per channel of every example.
    x = to_batched(x, batched[0], size)
    shape = np.shape(x)
    folded = np.reshape(np.moveaxis(x, 0, 1), (shape[1], size * shape[2], *shape[3:]))
    weight, bias = (
        None if p is None else np.reshape(to_batched(p, k, size), (-1,))
        for p, k in zip((weight, bias), batched[1:3], strict=True)
    )
    out = record(op, folded, weight, bias, eps)
    return np.moveaxis(np.reshape(out, (shape[1], size, *shape[2:])), 1, 0)


defbatch(LAYER_NORM, _layer_norm_batch)
defbatch(BATCH_NORM, _batch_norm_batch)


def _refuse_complex(op_name: str, value: Any, what: str, why: str) -> None:
    if np.iscomplexobj(unwrap(value)):
        msg = f"{op_name}: complex {what} are not supported: {why} [called at {user_location()}]"
        raise DtypeError(msg)


_NO_PROBABILITIES = "the softmax of complex logits is no probability distribution, so there is no cross-entropy"
_NO_SPREAD = (
    "normalising complex values has no single convention (a variance of |x - mean|**2, or a whitening of the real "
    "and imaginary parts together); normalise np.real(x) and np.imag(x), or write the normalisation you mean"
)


def _single_axis(op_name: str, x: Any, axis: int) -> int:
    axes = normalize_axis(op_name, axis, np.ndim(unwrap(x)))
    if axes is None or len(axes) != 1:
        msg = f"{op_name}: axis must be a single int, got {axis!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return axes[0]


@guarded
def softmax(x: Any, axis: int = -1) -> Any:
    """Softmax along ``axis``, computed stably (shifted by the maximum; of complex values,
    the largest real part: the function is holomorphic, as ``jax.nn.softmax``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.softmax(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    return record1(SOFTMAX, x, _single_axis("softmax", x, axis))


@guarded
def log_softmax(x: Any, axis: int = -1) -> Any:
    """Logarithm of the softmax along ``axis``, computed stably; of complex values
    ``x - log(sum(exp(x)))`` with the principal logarithm.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> np.exp(ng.log_softmax(np.array([1.0, 1.0]))).tolist()
    [0.5, 0.5]
    """
    return record1(LOG_SOFTMAX, x, _single_axis("log_softmax", x, axis))


@guarded
def cross_entropy(logits: Any, targets: Any) -> Any:
    """Softmax cross-entropy, averaged over the batch (real logits and targets: complex
    ones raise :class:`~nodegrad.errors.DtypeError`).

    Parameters
    ----------
    logits : array_like, shape (..., C)
        Unnormalised class scores; the last axis holds the classes.
    targets : array_like
        Either integer class indices of shape ``(...)`` in ``[0, C)`` (not
        differentiable), or class probabilities of shape ``(..., C)`` (differentiable).

    Returns
    -------
    scalar
        ``-mean(sum(targets * log_softmax(logits)))`` over the leading axes.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> logits = np.zeros((2, 4))
    >>> round(float(ng.cross_entropy(logits, np.array([0, 3]))), 6)
    1.386294
    """
    logits_value = unwrap(logits)
    target_value = unwrap(targets)
    if type(target_value) not in PER_EXAMPLE:
        target_value = asarray(target_value)
    _refuse_complex("cross_entropy", logits_value, "logits", _NO_PROBABILITIES)
    _refuse_complex("cross_entropy", target_value, "targets", _NO_PROBABILITIES)
    lshape, tshape = np.shape(logits_value), np.shape(target_value)
    if len(lshape) == 0:
        msg = f"cross_entropy: logits must have a class axis, got shape {lshape} [called at {user_location()}]"
        raise ShapeError(msg)
    if math.prod(lshape[:-1]) == 0 or lshape[-1] == 0:
        msg = (
            f"cross_entropy: the mean over an empty batch is undefined (logits of shape {lshape}) "
            f"[called at {user_location()}]"
        )
        raise ShapeError(msg)
    if target_value.dtype.kind in "iu":
        if tshape != lshape[:-1]:
            msg = (
                f"cross_entropy: integer targets must have shape {lshape[:-1]} for logits of shape {lshape}, got "
                f"{tshape} [called at {user_location()}]"
            )
            raise ShapeError(msg)
        values = all_values(target_value)  # every example's, under vmap
        if values.size and (values.min() < 0 or values.max() >= lshape[-1]):
            msg = (
                f"cross_entropy: class targets must lie in [0, {lshape[-1]}), got values from {values.min()} to "
                f"{values.max()} [called at {user_location()}]"
            )
            raise OpIndexError(msg)
        if type(target_value) in PER_EXAMPLE:  # record1 would not see a batched constant
            return record(CROSS_ENTROPY, logits, target_value)
        return record1(CROSS_ENTROPY, logits, target_value)
    if tshape != lshape:
        msg = (
            f"cross_entropy: probability targets must have the logits' shape {lshape}, got {tshape} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    return record2(CROSS_ENTROPY_PROBS, logits, targets)


def _check_affine(op_name: str, x: Any, weight: Any, bias: Any, size: int) -> None:
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and np.shape(unwrap(p)) != (size,):
            msg = (
                f"{op_name}: {name} must have shape ({size},) for input of shape {np.shape(unwrap(x))}, got "
                f"{np.shape(unwrap(p))} [called at {user_location()}]"
            )
            raise ShapeError(msg)


@guarded
def layer_norm(x: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalise ``x`` over its last axis, then ``* weight + bias`` when given (real
    values: complex ones raise :class:`~nodegrad.errors.DtypeError`).

    Parameters
    ----------
    x : array_like, shape (..., D)
        Input.
    weight, bias : array_like, shape (D,), optional
        Affine parameters.
    eps : float
        Added to the variance.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> y = ng.layer_norm(np.array([[1.0, 2.0, 3.0]]))
    >>> np.round(y, 4).tolist()
    [[-1.2247, 0.0, 1.2247]]
    """
    shape = np.shape(unwrap(x))
    if len(shape) == 0:
        msg = f"layer_norm: input must have at least 1 dimension [called at {user_location()}]"
        raise ShapeError(msg)
    for name, value in (("inputs", x), ("weights", weight), ("biases", bias)):
        _refuse_complex("layer_norm", value, name, _NO_SPREAD)
    _check_affine("layer_norm", x, weight, bias, shape[-1])
    return record(LAYER_NORM, x, weight, bias, float(eps))


@guarded
def batch_norm(x: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Batch normalisation in training mode: each channel (axis 1) is normalised with the
    mean and variance over the batch and any spatial axes, then ``* weight + bias`` (real
    values: complex ones raise :class:`~nodegrad.errors.DtypeError`).

    Parameters
    ----------
    x : array_like, shape (N, C, ...)
        Input.
    weight, bias : array_like, shape (C,), optional
        Affine parameters.
    eps : float
        Added to the variance.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> y = ng.batch_norm(np.array([[1.0], [3.0]]))
    >>> np.round(y, 4).tolist()
    [[-1.0], [1.0]]
    """
    shape = np.shape(unwrap(x))
    if len(shape) < 2:
        msg = f"batch_norm: input must have shape (N, C, ...), got {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    for name, value in (("inputs", x), ("weights", weight), ("biases", bias)):
        _refuse_complex("batch_norm", value, name, _NO_SPREAD)
    _check_affine("batch_norm", x, weight, bias, shape[1])
    return record(BATCH_NORM, x, weight, bias, float(eps))
