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

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
import nodegrad.scipy.special as special
from nodegrad.errors import ShapeError
from nodegrad.ops import REGISTRY, batching
from tests.ops import specs_elementwise, specs_fourier, specs_nn, specs_pipeline, specs_special
from tests.ops.harness import Case

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
NAMES = sorted(SPECS)
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def close(actual: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            close(a, e)
        return
    assert np.shape(actual) == np.shape(expected)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def stacked(results: list[Any], axis: int = 0) -> Any:
    if isinstance(results[0], tuple):
        return tuple(stacked([r[k] for r in results], axis) for k in range(len(results[0])))
    return np.stack([np.asarray(r) for r in results], axis=axis)


def scalar(out: Any) -> Any:
    """A weighted sum of a result: weights that differ entry by entry, so that a gradient
    is not blind to a permutation (the plain sum of a softmax is 1 whatever its input)."""
    if isinstance(out, tuple):
        return sum(scalar(o) for o in out)
    shape = np.shape(out)
    weights = np.cos(np.arange(math.prod(shape))).reshape(shape) + 0.5
    return np.sum(np.real(out) * weights)


@contextmanager
def looped_ops() -> Iterator[set[str]]:
    """The names of the ops that run once per example while inside."""
    seen: set[str] = set()
    original = batching.per_example

    def spy(op: Any, *args: Any, **kwargs: Any) -> Any:
        seen.add(op.name)
        return original(op, *args, **kwargs)

    with mock.patch.object(batching, "per_example", spy):
        yield seen


@st.composite
def batched_cases(
    draw: st.DrawFn, name: str
) -> tuple[Case, int, tuple[Any, ...], list[tuple[Any, ...]], tuple[Any, ...]]:
    """A case, B, the vmap in_axes per operand, the examples' operands and the batched ones."""
    case = draw(SPECS[name])
    size = draw(st.sampled_from([1, 3]))
    axes: list[Any] = []
    for v in case.values:
        choices = [0, None] + ([1, -1] if np.ndim(v) >= 1 else [])
        axes.append(draw(st.sampled_from(choices)))
    # Each example scaled a little differently: the signs, zeros and order the spec keeps
    # stay as they are, and a mixed-up example shows.
    examples = [
        tuple(v if a is None else v * (1 - 0.07 * k) for v, a in zip(case.values, axes, strict=True))
        for k in range(size)
    ]
    batched = tuple(
        v if a is None else np.stack([np.asarray(e[j]) for e in examples], axis=a)
        for j, (v, a) in enumerate(zip(case.values, axes, strict=True))
    )
    return case, size, tuple(axes), examples, batched


def run_vmap(fun: Callable[..., Any], axes: tuple[Any, ...], size: int, batched: tuple[Any, ...]) -> Any:
    return ng.vmap(fun, in_axes=axes, axis_size=size if all(a is None for a in axes) else None)(*batched)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_vmap_matches_a_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    with looped_ops() as seen:
        out = run_vmap(case.fn, axes, size, batched)
    close(out, stacked([case.fn(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_vmap_of_grad_matches_a_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    gradient = ng.grad(lambda *v: scalar(case.fn(*v)), argnums=case.argnums)
    with looped_ops() as seen:
        out = run_vmap(gradient, axes, size, batched)
    close(out, stacked([gradient(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_grad_of_vmap_matches_the_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))

    def each(*v: Any) -> Any:
        return scalar(case.fn(*v))

    total = ng.grad(lambda *v: np.sum(run_vmap(each, axes, size, v)), argnums=case.argnums)(*batched)
    per_example = ng.grad(each, argnums=case.argnums)
    grads = [per_example(*e) for e in examples]
    for k, j in enumerate(case.argnums):
        mine = total[k] if isinstance(total, tuple) else total
        theirs = [g[k] if isinstance(g, tuple) else g for g in grads]
        expected = sum(theirs[1:], theirs[0]) if axes[j] is None else stacked(theirs, axes[j])
        close(mine, expected)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_a_batched_value_reaching_the_op_from_an_enclosing_vmap(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    scales = np.array([1.0, 0.9])
    first = next((j for j, a in enumerate(axes) if a is not None), 0)

    def scaled_call(values: tuple[Any, ...], c: Any) -> Any:
        return case.fn(*(v * c if j == first else v for j, v in enumerate(values)))

    def inner(*values: Any) -> Any:
        # The outer example's operands are closed over; the inner vmap scales one of them.
        return ng.vmap(lambda c: scaled_call(values, c))(scales)

    out = run_vmap(inner, axes, size, batched)
    close(out, stacked([stacked([scaled_call(e, c) for c in scales]) for e in examples]))


# -- batched operands that carry no gradient -------------------------------------------------------


RNG = np.random.default_rng(7)
LOGITS = RNG.normal(size=(3, 4, 5))


def loop_and_vmap(fun: Callable[..., Any], *args: Any, in_axes: Any = 0) -> None:
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    examples = [
        tuple(a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes, strict=True))
        for b in range(size)
    ]
    with looped_ops() as seen:
        out = ng.vmap(fun, in_axes=in_axes)(*args)
    close(out, stacked([fun(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


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
        loop_and_vmap(ng.grad(lambda x, i, f=f: scalar(f(x, i, 3))), LOGITS, ids)


def test_segment_ids_calling_for_different_numbers_of_segments_are_refused() -> None:
    ids = np.array([[0, 1, 1, 2], [0, 0, 0, 1], [1, 0, 0, 2]])
    with pytest.raises(ShapeError, match="num_segments"):
        ng.vmap(ng.segment_sum)(LOGITS, ids)


def test_take_along_axis_and_sort_with_batched_indices() -> None:
    idx = RNG.integers(-5, 5, size=(3, 4, 2))
    loop_and_vmap(lambda x, i: ng.take_along_axis(x, i, axis=1), LOGITS, idx)
    loop_and_vmap(lambda x, i: ng.take_along_axis(x, i, axis=-1), LOGITS[0], idx, in_axes=(None, 0))
    loop_and_vmap(ng.grad(lambda x, i: scalar(ng.take_along_axis(x, i, axis=1))), LOGITS, idx)
    loop_and_vmap(lambda x: ng.sort(x, axis=0), LOGITS)


@pytest.mark.parametrize("kind", [bool, np.int64])
def test_where_with_a_batched_mask(kind: Any) -> None:
    mask = (RNG.normal(size=(3, 4, 5)) > 0).astype(kind)
    loop_and_vmap(ng.where, mask, LOGITS, -LOGITS)
    loop_and_vmap(ng.where, mask, LOGITS[0], 2.0, in_axes=(0, None, None))
    loop_and_vmap(ng.grad(lambda m, a, b: scalar(ng.where(m, a, b)), argnums=(1, 2)), mask, LOGITS, -LOGITS)
    loop_and_vmap(lambda m, x: ng.masked_sum(x, np.not_equal(m, 0), axis=1), mask, LOGITS)


def test_special_functions_with_batched_orders() -> None:
    x = np.abs(LOGITS) + 0.5
    orders = RNG.integers(0, 3, size=(3, 1, 5))
    for f in (special.jn, special.yn, special.iv, special.ive, special.polygamma):
        loop_and_vmap(f, orders, x)
        loop_and_vmap(f, orders, x[0], in_axes=(0, None))
        loop_and_vmap(ng.grad(lambda n, x, f=f: scalar(f(n, x)), argnums=1), orders, x)
    loop_and_vmap(special.gammasgn, LOGITS)


def test_scipy_logsumexp_with_batched_weights_and_sign() -> None:
    b = RNG.normal(size=(3, 4, 5))
    loop_and_vmap(lambda a, b: special.logsumexp(a, axis=1, b=b, return_sign=True), LOGITS, b)
    loop_and_vmap(lambda a, b: special.logsumexp(a, b=b, return_sign=True), LOGITS[0], b, in_axes=(None, 0))
    loop_and_vmap(lambda a: special.logsumexp(a), RNG.normal(size=3))
    loop_and_vmap(ng.grad(lambda a, b: scalar(special.logsumexp(a, axis=0, b=b)), argnums=(0, 1)), LOGITS, np.abs(b))


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
    loop_and_vmap(ng.grad(lambda x: scalar(fun(x))), LOGITS, in_axes=in_axes)


def test_every_ruled_op_is_registered_with_its_rule() -> None:
    for name in RULED:
        assert REGISTRY[name].batch is not None, name
