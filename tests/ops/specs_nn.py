"""Specs for the nn family: softmax, log_softmax, cross_entropy (integer and probability
targets), layer_norm and batch_norm."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import DtypeError, OpIndexError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask
from tests.strategies import axes, float_arrays, floats, separated_arrays, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS", "log_softmax_ref"]


def log_softmax_ref(x: Any, axis: int) -> Any:
    if np.iscomplexobj(x):  # bounded values: no shift needed; the principal logarithm
        return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@st.composite
def _softmax_cases(draw: st.DrawFn, name: str) -> Case:
    shape = draw(shapes(min_dims=1))
    axis = draw(axes(len(shape), single=True))
    x = draw(float_arrays(shape))
    exp = np.exp if name == "softmax" else (lambda y: y)
    return Case(
        lambda x: getattr(ng, name)(x, axis=axis),
        lambda x: exp(log_softmax_ref(x, axis)),
        (x,),
        (True,),
        desc=f"{name} axis={axis}",
    )


@st.composite
def _cross_entropy_cases(draw: st.DrawFn) -> Case:
    batch, classes = draw(shapes(max_dims=2)), draw(st.integers(1, 5))
    logits = draw(float_arrays((*batch, classes)))
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8]))
    targets = draw(hnp.arrays(dtype, batch, elements=st.integers(0, classes - 1)))

    def ref(logits: Any) -> Any:
        picked = np.take_along_axis(log_softmax_ref(logits, -1), targets[..., None].astype(np.intp), axis=-1)
        return -np.sum(picked) / max(math.prod(batch), 1)

    return Case(
        lambda logits: ng.cross_entropy(logits, targets),
        ref,
        (logits,),
        (True,),
        static=(targets,),
        desc="cross_entropy, integer targets",
    )


@st.composite
def _cross_entropy_probs_cases(draw: st.DrawFn) -> Case:
    batch, classes = draw(shapes(max_dims=2)), draw(st.integers(1, 5))
    logits = draw(float_arrays((*batch, classes)))
    targets = draw(float_arrays((*batch, classes), elements=floats(0.0, 1.0)))
    normalized = draw(st.booleans())
    if normalized:  # proper distributions; unnormalised mass is allowed too
        targets = (targets + 0.1) / np.sum(targets + 0.1, axis=-1, keepdims=True)

    def ref(logits: Any, targets: Any) -> Any:
        return -np.sum(targets * log_softmax_ref(logits, -1)) / max(math.prod(batch), 1)

    return Case(
        ng.cross_entropy,
        ref,
        (logits, targets),
        draw(diff_mask(2)),
        desc=f"cross_entropy, probability targets, normalized={normalized}",
    )


def _normalize_ref(x: Any, axes: Any, eps: float) -> Any:
    centred = x - np.mean(x, axis=axes, keepdims=True)
    return centred / np.sqrt(np.mean(centred**2, axis=axes, keepdims=True) + eps)


@st.composite
def _norm_cases(draw: st.DrawFn, name: str) -> Case:
    # Entries pairwise >= 0.05 apart, so no normalised group has a near-zero variance.
    if name == "layer_norm":
        shape = (*draw(shapes(max_dims=2, max_side=3)), draw(st.integers(2, 5)))
        features, axes_, affine_shape = shape[-1], -1, (-1,)
    else:
        spatial = draw(shapes(max_dims=2, max_side=2))
        batch = draw(st.integers(1 if math.prod(spatial) > 1 else 2, 3))
        shape = (batch, draw(st.integers(1, 3)), *spatial)
        features, axes_, affine_shape = shape[1], (0, *range(2, len(shape))), (1, -1) + (1,) * len(spatial)
    x = draw(separated_arrays(shape, step=0.05))
    use_weight, use_bias = draw(st.booleans()), draw(st.booleans())
    weight = draw(float_arrays((features,))) if use_weight else None
    bias = draw(float_arrays((features,))) if use_bias else None
    eps = draw(st.sampled_from([1e-5, 1e-3]))
    values = (x, *(p for p in (weight, bias) if p is not None))

    def split(x: Any, *given: Any) -> tuple[Any, Any, Any]:
        it = iter(given)
        return x, next(it) if use_weight else None, next(it) if use_bias else None

    def ref(*v: Any) -> Any:
        x, w, b = split(*v)
        out = _normalize_ref(x, axes_, eps)
        out = out if w is None else out * np.reshape(w, affine_shape)
        return out if b is None else out + np.reshape(b, affine_shape)

    return Case(
        lambda *v: getattr(ng, name)(*split(*v), eps=eps),
        ref,
        values,
        draw(diff_mask(len(values))),
        desc=f"{name} weight={use_weight} bias={use_bias} eps={eps}",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "softmax": _softmax_cases("softmax"),
    "log_softmax": _softmax_cases("log_softmax"),
    "cross_entropy": _cross_entropy_cases(),
    "cross_entropy_probs": _cross_entropy_probs_cases(),
    "layer_norm": _norm_cases("layer_norm"),
    "batch_norm": _norm_cases("batch_norm"),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}
# softmax and log_softmax are holomorphic; the losses and normalisations refuse complex values.
COMPLEX: dict[str, ComplexSpec] = {
    name: ComplexSpec(SPECS[name], holomorphic=True) for name in ("softmax", "log_softmax")
}

_M23 = np.ones((2, 3))
_Z23 = np.full((2, 3), 1.0 + 0.5j)

BAD_CALLS = [
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=(0, 1)), ShapeError, ("single int",))
      for name in ("softmax", "log_softmax")),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=-3), ShapeError, ("-3",))
      for name in ("softmax", "log_softmax")),
    BadCall("cross_entropy", (np.zeros((0, 3)), np.zeros(0, int)), ng.cross_entropy, ShapeError, ("empty batch",)),
    BadCall("cross_entropy", (_M23, np.array([0, 3])), ng.cross_entropy, OpIndexError, ("[0, 3)",)),
    BadCall("cross_entropy", (_M23, np.array([-1, 0])), ng.cross_entropy, OpIndexError, ("-1",)),
    BadCall("cross_entropy", (_M23, np.array([0, 1, 2])), ng.cross_entropy, ShapeError, ("(2,)", "(3,)")),
    BadCall("cross_entropy_probs", (_M23, np.ones((2, 4))), ng.cross_entropy, ShapeError, ("(2, 4)",), "cross_entropy"),
    BadCall("cross_entropy_probs", (_M23, np.full((2, 3), "p")), ng.cross_entropy, DtypeError, ("<U1[2, 3]",)),
    BadCall("layer_norm", (_M23, np.ones(4)), ng.layer_norm, ShapeError, ("weight", "(3,)", "(4,)")),
    BadCall("layer_norm", (np.array(1.0),), ng.layer_norm, ShapeError, ("1 dimension",)),
    BadCall("batch_norm", (np.ones(3),), ng.batch_norm, ShapeError, ("(N, C, ...)", "(3,)")),
    BadCall("batch_norm", (_M23, np.ones(2)), lambda x, b: ng.batch_norm(x, None, b), ShapeError, ("bias", "(3,)")),
    BadCall("cross_entropy", (_Z23, np.array([0, 2])), ng.cross_entropy, DtypeError, ("complex logits",)),
    BadCall("cross_entropy_probs", (_M23, _Z23), ng.cross_entropy, DtypeError, ("complex targets",), "cross_entropy"),
    BadCall("cross_entropy_probs", (_Z23, np.ones((2, 3))), ng.cross_entropy, DtypeError, ("complex logits",),
            "cross_entropy"),
    BadCall("layer_norm", (_Z23,), ng.layer_norm, DtypeError, ("complex inputs", "np.real(x)")),
    BadCall("layer_norm", (_M23, np.ones(3) * 1j), ng.layer_norm, DtypeError, ("complex weights",)),
    BadCall("batch_norm", (_Z23,), ng.batch_norm, DtypeError, ("complex inputs",)),
    BadCall("batch_norm", (_M23, None, np.ones(3) * 1j), ng.batch_norm, DtypeError, ("complex biases",)),
]  # fmt: skip
