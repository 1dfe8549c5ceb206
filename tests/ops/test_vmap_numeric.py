"""``ng.vmap`` of the numeric families (nn, pipeline, fourier, selection and activations,
special functions) against a Python loop over the examples.

Each op spec of those families (see :mod:`tests.ops.harness`) is drawn, its float operands
batched along an axis drawn from ``0, 1, -1, None`` (``1`` and ``-1`` only where an example
has an axis), ``B`` examples in ``{1, 3}``, and compared to 1e-12 with stacking the results
of a loop: the forward, ``vmap(grad)`` against a loop of ``grad``, ``grad(vmap)`` against
the gradient of the loop, and a closure (a batched value reaching the op from an enclosing
``vmap`` through a nested one). The ops with batching rules of their own must not run once
per example. Batched integer operands (class targets, segment ids, masks, orders, indices)
are tested one by one below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import nodegrad as ng
import nodegrad.scipy.special as special
from nodegrad.errors import ShapeError
from nodegrad.ops import REGISTRY, batching
from tests.ops import specs_elementwise, specs_fourier, specs_nn, specs_pipeline, specs_special
from tests.ops.harness import Case
from tests.ops.vmap_harness import (
    check_closure,
    check_forward,
    check_grad_of_vmap,
    check_vmap_of_grad,
    loop_and_vmap,
    per_example_spy,
    shrinking,
    spec_test,
    weighted_sum,
)

#: The ops given batching rules here: none may run once per example.
RULED = {
    *("softmax", "log_softmax", "cross_entropy", "cross_entropy_probs", "layer_norm", "batch_norm"),
    *("cumsum", "cumprod", "ssm_scan", "logsumexp", "segment_sum", "segment_max", "take_along_axis"),
    *("fft", "ifft", "rfft", "irfft", "gelu", "clamp", "where"),
    *("jn", "yn", "iv", "ive", "polygamma", "weighted_logsumexp"),
}
_SELECTION = ("gelu", "clamp", "where", "maximum", "minimum", "relu", "sigmoid", "silu")
SPECS: dict[str, st.SearchStrategy[Case]] = {
    **specs_nn.SPECS,
    **specs_pipeline.SPECS,
    **specs_pipeline.COMPOSITES,
    **specs_fourier.SPECS,
    **specs_fourier.COMPOSITES,
    **specs_special.SPECS,
    **{name: specs_elementwise.SPECS[name] for name in _SELECTION},
    **{f"{name} (broadcast)": spec for name, spec in specs_elementwise.BROADCASTING.items() if name in _SELECTION},
    **{f"{name} (broadcast)": spec for name, spec in specs_pipeline.BROADCASTING.items()},
    **{f"{name} (broadcast)": spec for name, spec in specs_special.BROADCASTING.items()},
}
#: Every example scaled alike (the specs' orders and gaps kept), every operand perhaps unbatched.
DRAW = {"factor": shrinking, "unbatched": True}
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _ruled_ops_never_loop() -> Iterator[None]:
    with per_example_spy(RULED):
        yield


test_vmap_matches_a_loop = spec_test(check_forward, SPECS, FAST, **DRAW)
test_vmap_of_grad_matches_a_loop = spec_test(check_vmap_of_grad, SPECS, FAST, **DRAW)
test_grad_of_vmap_matches_the_loop = spec_test(check_grad_of_vmap, SPECS, FAST, **DRAW)
test_a_batched_value_reaching_the_op_from_an_enclosing_vmap = spec_test(check_closure, SPECS, FAST, **DRAW)


# -- batched operands that carry no gradient -------------------------------------------------------


RNG = np.random.default_rng(7)
LOGITS = RNG.normal(size=(3, 4, 5))


def test_cross_entropy_with_batched_class_targets() -> None:
    targets = RNG.integers(0, 5, size=(3, 4))
    loop_and_vmap(ng.cross_entropy, LOGITS, targets)
    loop_and_vmap(ng.cross_entropy, LOGITS[0], targets, in_axes=(None, 0))
    loop_and_vmap(ng.grad(ng.cross_entropy), LOGITS, targets)


def test_segment_ops_with_batched_ids() -> None:
    ids = np.array([[0, 1, 1, 2], [2, 2, 0, 1], [1, 0, 0, 2]])
    for f in (ng.segment_sum, ng.segment_max, ng.segment_mean):
        loop_and_vmap(lambda x, i, f=f: f(x, i, num_segments=4), LOGITS, ids)
        loop_and_vmap(lambda x, i, f=f: f(x, i), LOGITS[0], ids, in_axes=(None, 0))
        loop_and_vmap(ng.grad(lambda x, i, f=f: weighted_sum(f(x, i, 3))), LOGITS, ids)


def test_segment_ids_calling_for_different_numbers_of_segments_are_refused() -> None:
    ids = np.array([[0, 1, 1, 2], [0, 0, 0, 1], [1, 0, 0, 2]])
    with pytest.raises(ShapeError, match="num_segments"):
        ng.vmap(ng.segment_sum)(LOGITS, ids)


def test_take_along_axis_and_sort_with_batched_indices() -> None:
    idx = RNG.integers(-5, 5, size=(3, 4, 2))
    loop_and_vmap(lambda x, i: ng.take_along_axis(x, i, axis=1), LOGITS, idx)
    loop_and_vmap(lambda x, i: ng.take_along_axis(x, i, axis=-1), LOGITS[0], idx, in_axes=(None, 0))
    loop_and_vmap(ng.grad(lambda x, i: weighted_sum(ng.take_along_axis(x, i, axis=1))), LOGITS, idx)
    loop_and_vmap(lambda x: ng.sort(x, axis=0), LOGITS)


@pytest.mark.parametrize("kind", [bool, np.int64])
def test_where_with_a_batched_mask(kind: Any) -> None:
    mask = (RNG.normal(size=(3, 4, 5)) > 0).astype(kind)
    loop_and_vmap(ng.where, mask, LOGITS, -LOGITS)
    loop_and_vmap(ng.where, mask, LOGITS[0], 2.0, in_axes=(0, None, None))
    loop_and_vmap(ng.grad(lambda m, a, b: weighted_sum(ng.where(m, a, b)), argnums=(1, 2)), mask, LOGITS, -LOGITS)
    loop_and_vmap(lambda m, x: ng.masked_sum(x, np.not_equal(m, 0), axis=1), mask, LOGITS)


def test_special_functions_with_batched_orders() -> None:
    x = np.abs(LOGITS) + 0.5
    orders = RNG.integers(0, 3, size=(3, 1, 5))
    for f in (special.jn, special.yn, special.iv, special.ive, special.polygamma):
        loop_and_vmap(f, orders, x)
        loop_and_vmap(f, orders, x[0], in_axes=(0, None))
        loop_and_vmap(ng.grad(lambda n, x, f=f: weighted_sum(f(n, x)), argnums=1), orders, x)
    loop_and_vmap(special.gammasgn, LOGITS)


def test_scipy_logsumexp_with_batched_weights_and_sign() -> None:
    b = RNG.normal(size=(3, 4, 5))
    loop_and_vmap(lambda a, b: special.logsumexp(a, axis=1, b=b, return_sign=True), LOGITS, b)
    loop_and_vmap(lambda a, b: special.logsumexp(a, b=b, return_sign=True), LOGITS[0], b, in_axes=(None, 0))
    loop_and_vmap(lambda a: special.logsumexp(a), RNG.normal(size=3))
    loop_and_vmap(
        ng.grad(lambda a, b: weighted_sum(special.logsumexp(a, axis=0, b=b)), argnums=(0, 1)), LOGITS, np.abs(b)
    )


COMPOSITES = [
    np.var,
    np.std,
    lambda x: np.var(x, axis=0, ddof=1),
    np.linalg.norm,
    lambda x: np.linalg.norm(x, axis=1),
    lambda x: np.linalg.norm(x, ord=1, axis=0),
]


@pytest.mark.parametrize("fun", COMPOSITES)
@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_reduction_composites(fun: Any, in_axes: int) -> None:
    loop_and_vmap(fun, LOGITS, in_axes=in_axes)
    loop_and_vmap(ng.grad(lambda x: weighted_sum(fun(x))), LOGITS, in_axes=in_axes)


def test_every_ruled_op_is_registered_with_its_rule() -> None:
    for name in RULED:
        assert batching.rule_of(REGISTRY[name]) is not None, name
