"""Wrong rules of the ops on whole arrays: reductions, softmax and cross-entropy, layer and
batch norm, indexing, gathers, scatters and segments, ``where``, and the shape ops."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import nodegrad as ng
from nodegrad.ops.index import getitem, index_add, index_set, scatter
from nodegrad.ops.nn import _normalized
from nodegrad.ops.pipeline.segments import _along_axis_index
from nodegrad.ops.reduce import _expand

from .core import Mutation, broadcast_flag, joint_rule, joint_without, negate, rules, use
from .inputs import args, arrays, positive, weights

__all__ = ["INDEXING", "NORMS", "REDUCTIONS", "SHAPES", "SOFTMAX", "WHERE"]

W4, W6, W22, W33 = weights((4,)), weights((6,)), weights((2, 2)), weights((3, 3))
W34, W44, W222, W432 = weights((3, 4)), weights((4, 4)), weights((2, 2, 2)), weights((4, 3, 2))
IDX = np.array([0, 2, 0, 1, 2])  # repeats: their cotangents must add up
IDS = np.array([0, 1, 0, 2, 1])  # segment ids with repeats
MASK = np.array([True, False, True, False])
TARGETS = np.array([0, 2, 1, 2])


def _loss(y: Any, w: Any) -> Any:
    return ng.sum(ng.tanh(y) * w)


def _tied_rows(shape: tuple[int, ...]) -> Any:
    """Arrays whose two halves along axis 0 are equal: every column's extremum is a tie."""
    return arrays((1, *shape[1:])).map(lambda a: np.concatenate([a] * shape[0]))


# -- reductions --------------------------------------------------------------------------------


def _not_split(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    return _expand(g, x, axis, keepdims) * (x == _expand(ans, x, axis, keepdims))


def _to_first(g: Any, ans: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    hit = x == _expand(ans, x, axis, keepdims)
    first = hit & (np.cumsum(hit, axis=axis[0]) == 1)
    return _expand(g, x, axis, keepdims) * first


_reduce = functools.partial(Mutation, family="reduce")
REDUCTIONS = (
    _reduce(
        id="sum-keepdims",
        op="sum",
        kind="broadcast",
        description="a reduced cotangent spread without its reduced axis put back",
        patch=rules(use(lambda g, ans, x, axis, keepdims: np.broadcast_to(g, np.shape(x)))),
        function=lambda x: _loss(ng.sum(x, axis=1) * 0.5, W4),
        inputs=args(arrays((4, 4))),
    ),
    _reduce(
        id="mean-factor",
        op="mean",
        kind="factor",
        description="d mean = 1 (the 1/n forgotten)",
        patch=rules(lambda rule, _k: lambda g, ans, x, *a: rule(g, ans, x, *a) * (np.size(x) / np.size(ans))),
        function=lambda x: _loss(ng.mean(x, axis=0) * 2.0, W4),
        inputs=args(arrays((3, 4))),
    ),
    _reduce(
        id="max-tie",
        op="max",
        kind="tie",
        description="tied maxima each get the whole gradient (not split)",
        patch=rules(use(_not_split)),
        function=lambda x: _loss(ng.max(x * 1.5, axis=0), W4),
        inputs=args(_tied_rows((2, 4))),
    ),
    _reduce(
        id="min-tie",
        op="min",
        kind="tie",
        description="the first of tied minima gets the whole gradient",
        patch=rules(use(_to_first)),
        function=lambda x: ng.sum(ng.sin(ng.min(x, axis=0)) * W4),
        inputs=args(_tied_rows((2, 4))),
    ),
    _reduce(
        id="logsumexp-factor",
        op="logsumexp",
        kind="factor",
        description="d logsumexp = exp(x) (not normalised by the sum)",
        patch=rules(lambda rule, _k: lambda g, ans, x, *a: rule(g, ans, x, *a) * np.exp(ans), [0]),
        function=lambda x: ng.tanh(ng.logsumexp(x * 0.5) - 1.0) * 2.0,
        inputs=args(arrays((4,))),
    ),
    _reduce(
        id="cumsum-direction",
        op="cumsum",
        kind="index",
        description="the cotangent of a running sum accumulated forwards (not in reverse)",
        patch=rules(use(lambda g, ans, x, axis: np.cumsum(g, axis=axis)), [0]),
        function=lambda x: _loss(ng.cumsum(x, axis=0) * 0.5, W4),
        inputs=args(arrays((4,))),
    ),
)


# -- softmax and cross-entropy ------------------------------------------------------------------


def _ce_probs_without_mass(g: Any, ans: Any, logits: Any, targets: Any) -> Any:
    rows = np.size(logits) // np.shape(logits)[-1]
    return (ng.softmax(logits, -1) - targets) * (g / rows)


_nn = functools.partial(Mutation, family="nn")
SOFTMAX = (
    _nn(
        id="softmax-dropped",
        op="softmax",
        kind="dropped-term",
        description="softmax's Jacobian without its - s s^T part",
        patch=rules(use(lambda g, ans, x, axis: ans * g), [0]),
        function=lambda x: _loss(ng.softmax(x * 2.0, axis=-1), W34),
        inputs=args(arrays((3, 4))),
    ),
    _nn(
        id="softmax-axis",
        op="softmax",
        kind="broadcast",
        description="softmax's rule reducing over the wrong axis",
        patch=rules(use(lambda g, ans, x, axis: ans * (g - np.sum(g * ans, axis=0, keepdims=True))), [0]),
        function=lambda x: _loss(ng.softmax(x, axis=-1) * 3.0, W33),
        inputs=args(arrays((3, 3))),
    ),
    _nn(
        id="log_softmax-sign",
        op="log_softmax",
        kind="sign",
        description="log_softmax's rule adding the softmax term instead of subtracting it",
        patch=rules(use(lambda g, ans, x, axis: g + np.exp(ans) * np.sum(g, axis=axis, keepdims=True)), [0]),
        function=lambda x: _loss(ng.log_softmax(x, axis=-1) * 0.5, W34),
        inputs=args(arrays((3, 4))),
    ),
    _nn(
        id="log_softmax-dropped",
        op="log_softmax",
        kind="dropped-term",
        description="log_softmax's rule as if it were x - constant",
        patch=rules(use(lambda g, ans, x, axis: g), [0]),
        function=lambda x: _loss(ng.log_softmax(x, axis=0) * 0.5, W34),
        inputs=args(arrays((3, 4))),
    ),
    _nn(
        id="cross_entropy-factor",
        op="cross_entropy",
        kind="factor",
        description="the gradient of the batch's sum for that of its mean",
        patch=rules(lambda rule, _k: lambda g, ans, z, t: rule(g, ans, z, t) * np.shape(z)[0], [0]),
        function=lambda z: ng.tanh(ng.cross_entropy(z * 1.5, TARGETS)) * 2.0,
        inputs=args(arrays((4, 3))),
    ),
    _nn(
        id="cross_entropy-sign",
        op="cross_entropy",
        kind="sign",
        description="one_hot - softmax for softmax - one_hot",
        patch=rules(negate, [0]),
        function=lambda z: ng.tanh(ng.cross_entropy(ng.sin(z), TARGETS)),
        inputs=args(arrays((4, 3))),
    ),
    _nn(
        id="cross_entropy_probs-dropped",
        op="cross_entropy_probs",
        kind="dropped-term",
        description="softmax - t, right only when each row of t sums to 1",
        patch=rules(use(_ce_probs_without_mass), [0]),
        function=lambda z, t: ng.tanh(ng.cross_entropy(z, t) * 0.5),
        inputs=args(arrays((4, 3)), positive((4, 3), 0.1, 1.0)),
    ),
)


# -- layer and batch norm -------------------------------------------------------------------------


def _layer_norm_without_projection(g: Any, ans: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    g_hat = g if weight is None else g * weight
    rstd = _normalized(x, -1, eps)[1]
    return rstd * (g_hat - np.mean(g_hat, axis=-1, keepdims=True))


def _layer_norm_unbiased(g: Any, ans: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    g_hat = g if weight is None else g * weight
    n = np.shape(x)[-1]
    centred = x - np.mean(x, axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(np.sum(centred * centred, axis=-1, keepdims=True) / (n - 1) + eps)
    xhat = centred * rstd
    return rstd * (
        g_hat - np.mean(g_hat, axis=-1, keepdims=True) - xhat * np.mean(g_hat * xhat, axis=-1, keepdims=True)
    )


def _batch_norm_without_mean(g: Any, ans: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    axes = (0, *range(2, np.ndim(x)))
    g_hat = g * np.reshape(weight, (1, -1) + (1,) * (np.ndim(x) - 2))
    xhat, rstd = _normalized(x, axes, eps)
    return rstd * (g_hat - xhat * np.mean(g_hat * xhat, axis=axes, keepdims=True))


_GAIN4, _SHIFT4, _GAIN3 = weights((4,), 0.8), weights((4,), -0.2), weights((3,), 0.9)
_norm = functools.partial(Mutation, family="norm")
NORMS = (
    _norm(
        id="layer_norm-dropped",
        op="layer_norm",
        kind="dropped-term",
        description="layer norm's rule without the xhat mean(g xhat) term (the variance's dependence)",
        patch=rules(use(_layer_norm_without_projection), [0]),
        function=lambda x: _loss(ng.layer_norm(x, _GAIN4, _SHIFT4), W34),
        inputs=args(arrays((3, 4), kink_free=True)),
    ),
    _norm(
        id="layer_norm-factor",
        op="layer_norm",
        kind="factor",
        description="layer norm's rule with the unbiased variance (n - 1) the forward does not use",
        patch=rules(use(_layer_norm_unbiased), [0]),
        function=lambda x: _loss(ng.layer_norm(x), W34),
        inputs=args(arrays((3, 4), kink_free=True)),
    ),
    _norm(
        id="layer_norm-weight-broadcast",
        op="layer_norm",
        kind="broadcast",
        description="the weight's cotangent left per row (not reduced to the weight's shape)",
        patch=broadcast_flag(False),
        function=lambda x, w: _loss(ng.layer_norm(x, w, _SHIFT4), W34),
        inputs=args(arrays((3, 4), kink_free=True), arrays((4,))),
    ),
    _norm(
        id="layer_norm-bias-sign",
        op="layer_norm",
        kind="sign",
        description="the bias's cotangent negated",
        patch=rules(negate, [2]),
        function=lambda x, b: _loss(ng.layer_norm(x, _GAIN4, b), W34),
        inputs=args(arrays((3, 4), kink_free=True), arrays((4,))),
    ),
    _norm(
        id="batch_norm-dropped",
        op="batch_norm",
        kind="dropped-term",
        description="batch norm's rule without the - mean(g) term (the mean's dependence)",
        patch=rules(use(_batch_norm_without_mean), [0]),
        function=lambda x: _loss(ng.batch_norm(x, _GAIN3, None), W432),
        inputs=args(arrays((4, 3, 2), kink_free=True)),
    ),
    _norm(
        id="batch_norm-bias-broadcast",
        op="batch_norm",
        kind="broadcast",
        description="the bias's cotangent summed over the batch axis only (not the spatial ones)",
        patch=rules(use(lambda g, ans, x, w, b, eps: np.sum(g, axis=0)), [2]),
        function=lambda x, b: _loss(ng.batch_norm(x, _GAIN3, b), W432),
        inputs=args(arrays((4, 3, 2), kink_free=True), arrays((3,))),
    ),
)


# -- indexing, gathers, scatters, segments ----------------------------------------------------------


def _assigned(g: Any, ans: Any, x: Any, index: Any) -> Any:
    """x[index]'s cotangent written with assignment: of repeated indices, the last only."""
    last = np.array([k for k, i in enumerate(index) if i not in index[k + 1 :]])
    return index_set(np.zeros(np.shape(x)), getitem(g, last), index[last])


def _segment_mean(g: Any, ans: Any, data: Any, ids: Any, num: int) -> Any:
    counts = np.maximum(np.bincount(ids, minlength=num), 1).reshape((num,) + (1,) * (np.ndim(data) - 1))
    return getitem(g / counts, ids)


def _segment_max_not_split(g: Any, ans: Any, data: Any, ids: Any, num: int) -> Any:
    return getitem(g, ids) * (data == getitem(ans, ids))


def _along_other_axis(g: Any, ans: Any, x: Any, indices: Any, axis: int) -> Any:
    return index_add(np.zeros(np.shape(x)), g, _along_axis_index(indices, 1 - axis))


_index = functools.partial(Mutation, family="index")
INDEXING = (
    _index(
        id="getitem-repeats",
        op="getitem",
        kind="index",
        description="x[idx]'s cotangent assigned, not added: a repeated index keeps one share",
        patch=rules(use(_assigned), [0]),
        function=lambda x: ng.sum(ng.tanh(x[IDX] * 1.5) * weights((5,))),
        inputs=args(arrays((3,))),
    ),
    _index(
        id="gather-axis",
        op="gather",
        kind="index",
        description="np.take's cotangent scattered along axis 0 whatever the axis",
        patch=rules(use(lambda g, ans, x, indices, axis: scatter(g, indices, np.shape(x))), [0]),
        function=lambda x: _loss(ng.gather(x, np.array([3, 0, 2, 0]), axis=1), W44),
        inputs=args(arrays((4, 4))),
    ),
    _index(
        id="sort-axis",
        op="take_along_axis",
        kind="index",
        description="sort's cotangent sent back along the other axis",
        patch=rules(use(_along_other_axis), [0]),
        function=lambda x: _loss(ng.sort(x, axis=0), W33),
        inputs=args(arrays((3, 3), kink_free=True)),
    ),
    _index(
        id="segment_sum-factor",
        op="segment_sum",
        kind="factor",
        description="a segment sum's cotangent divided by the segment's size (a mean's)",
        patch=rules(use(_segment_mean), [0]),
        function=lambda d: _loss(ng.segment_sum(d * 0.5, IDS, 3), W34[:, :2]),
        inputs=args(arrays((5, 2))),
    ),
    _index(
        id="segment_max-tie",
        op="segment_max",
        kind="tie",
        description="rows tied for a segment's maximum each get the whole gradient",
        patch=rules(use(_segment_max_not_split), [0]),
        function=lambda d: _loss(ng.segment_max(d, np.array([0, 1, 0, 1]), 2), W22),
        inputs=args(_tied_rows((2, 2)).map(lambda d: np.concatenate([d[:1], d[:1] + 1.5, d[1:], d[1:] - 1.5]))),
    ),
    _index(
        id="index_set-overwritten",
        op="index_set",
        kind="index",
        description="overwritten entries keep their cotangent (x[idx] = v: x's rule g)",
        patch=rules(use(lambda g, ans, x, v, index: g), [0]),
        function=lambda x, v: _loss(ng.index_set(x * 1.2, v, np.array([1, 3])), W4),
        inputs=args(arrays((4,)), arrays((2,))),
    ),
)


# -- where and the shape ops -------------------------------------------------------------------------


def _where_swapped(wanted: tuple[int, ...], g: Any, ans: Any, mask: Any, a: Any, b: Any, keep: Any) -> tuple[Any, ...]:
    return tuple(np.where(mask, 0, g) if k == 1 else np.where(mask, g, 0) for k in wanted)


_where = functools.partial(Mutation, family="where")
WHERE = (
    _where(
        id="where-swapped",
        op="where",
        kind="index",
        description="where's cotangent sent to the branch not taken",
        patch=joint_rule(lambda _joint: _where_swapped),
        function=lambda x, y: _loss(ng.where(MASK, x, y * 2.0), W4),
        inputs=args(arrays((4,)), arrays((4,))),
    ),
    _where(
        id="where-broadcast",
        op="where",
        kind="broadcast",
        description="a broadcast branch's cotangent not reduced to its shape",
        patch=broadcast_flag(False),
        function=lambda x, b: _loss(ng.where(MASK, ng.sin(x), b), W4),
        inputs=args(arrays((4,)), arrays((1,))),
    ),
    _where(
        id="where-dropped",
        op="where",
        kind="dropped-term",
        description="no cotangent for the second branch",
        patch=joint_without(2),
        function=lambda x: _loss(ng.where(MASK, x, ng.cos(x)), W4),
        inputs=args(arrays((4,))),
    ),
)


def _first_piece(_rule: Any, k: int) -> Any:
    def rule(g: Any, ans: Any, axis: int, *xs: Any) -> Any:
        return g[(slice(None),) * axis + (slice(0, np.shape(xs[k - 1])[axis]),)]

    return rule


_shape = functools.partial(Mutation, family="shape")
SHAPES = (
    _shape(
        id="transpose-permutation",
        op="transpose",
        kind="transpose",
        description="the cotangent permuted by the axes, not by their inverse",
        patch=rules(use(lambda g, ans, x, axes: np.transpose(g, axes))),
        function=lambda x: _loss(ng.transpose(x, (1, 2, 0)) * 0.5, W222),
        inputs=args(arrays((2, 2, 2))),
    ),
    _shape(
        id="reshape-order",
        op="reshape",
        kind="transpose",
        description="the cotangent reshaped in Fortran order (a transpose in disguise)",
        patch=rules(use(lambda g, ans, x, shape: np.reshape(g, np.shape(x), order="F"))),
        function=lambda x: _loss(ng.reshape(ng.sin(x), (3, 2)), weights((3, 2))),
        inputs=args(arrays((2, 3))),
    ),
    _shape(
        id="cat-offset",
        op="cat",
        kind="index",
        description="every joined input gets the first piece of the cotangent",
        patch=rules(_first_piece),
        function=lambda a, b: _loss(ng.cat([a, b * 2.0]), W6),
        inputs=args(arrays((3,)), arrays((3,))),
    ),
    _shape(
        id="stack-axis",
        op="stack",
        kind="index",
        description="the cotangent of a stack along axis 1 split along axis 0",
        patch=rules(lambda _rule, k: lambda g, ans, axis, *xs: g[k - 1]),
        function=lambda a, b: _loss(ng.stack([a, ng.exp(b)], axis=1), W22),
        inputs=args(arrays((2,)), arrays((2,))),
    ),
    _shape(
        id="broadcast_to-broadcast",
        op="broadcast_to",
        kind="broadcast",
        description="broadcast_to's cotangent not reduced to the input's shape",
        patch=broadcast_flag(False),
        function=lambda x: _loss(ng.broadcast_to(ng.sin(x), (3, 4)), W34),
        inputs=args(arrays((4,))),
    ),
    _shape(
        id="pad-widths",
        op="pad",
        kind="index",
        description="the cotangent cut out with the widths of the wrong side",
        patch=rules(use(lambda g, ans, x, widths, value: g[widths[0][1] : widths[0][1] + np.shape(x)[0]]), [0]),
        function=lambda x: _loss(ng.pad(x * 1.5, ((1, 2),)), W6),
        inputs=args(arrays((3,))),
    ),
)
