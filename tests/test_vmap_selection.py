"""Selection ops (``where``, ``select``, ``piecewise``, ``clip``, ``clamp``, ``maximum``,
``minimum``, ``fmax``, ``fmin``, ``abs``, ``relu``) under ``vmap`` of a transform, where the
mask compares the differentiated value with a batched one: the result is a plain array,
equal to a Python loop of the unbatched transform.

The other value reaches the function as a batched argument, as a batched value the
differentiated function closes over, or as a plain array it closes over; the transforms are
``grad``, ``jvp``, ``jacfwd``, ``hessian``, ``grad`` chunked, and ``replay`` of ``vmap(grad)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nodegrad as ng

BATCH, SIZE = 3, 4
W = np.random.default_rng(0).normal(size=(BATCH, SIZE))
X = np.random.default_rng(1).normal(size=(BATCH, SIZE))
X_PLAIN = np.random.default_rng(2).normal(size=SIZE)
TANGENT = np.random.default_rng(3).normal(size=SIZE)

# Each a function of the differentiated w and the other value x, cubed so that the
# Hessian is not zero; the mask of every one reads w as well as x.
SELECTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "where": lambda w, x: np.where(x > w, x * w, w),
    "where_mask_first": lambda w, x: np.where(w < x, w, 2.0 * x),
    "select": lambda w, x: np.select([x > w, x < -w], [w, x * w], default=x),
    "piecewise": lambda w, x: np.piecewise(w, [w < x], [lambda v: v * v, lambda v: 3.0 * v]),
    "clip": lambda w, x: np.clip(w, x - 0.5, x + 0.5),
    "clip_of_x": lambda w, x: np.clip(x, w - 0.5, w + 0.5),
    "clamp": lambda w, x: ng.clamp(w, x, None),
    "maximum": lambda w, x: np.maximum(x, w),
    "minimum": lambda w, x: np.minimum(w, x),
    "fmax": lambda w, x: np.fmax(x, w),
    "fmin": lambda w, x: np.fmin(w, x),
    "abs": lambda w, x: np.abs(w - x),
    "relu": lambda w, x: ng.relu(w - x),
}


def _scalar(select: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda w, x: np.sum(select(w, x) ** 3)


def _jvp(f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda w, x: ng.jvp(f, (w, x), (TANGENT, np.zeros(SIZE)))[1]


# Each takes the scalar function of (w, x) and gives its transform in w, of (w, x).
TRANSFORMS: dict[str, Callable[[Callable[[Any, Any], Any]], Callable[[Any, Any], Any]]] = {
    "grad": ng.grad,
    "jvp": _jvp,
    "jacfwd": ng.jacfwd,
    "hessian": ng.hessian,
}


def _batched(transform: str, per_example: Callable[..., Any]) -> Callable[..., Any]:
    """``vmap`` of ``per_example`` as ``transform`` names it: chunked, or replayed."""
    if transform == "grad_chunked":
        return ng.vmap(per_example, chunk_size=2)
    if transform == "replay_grad":
        return ng.replay(ng.vmap(per_example))
    return ng.vmap(per_example)


@pytest.mark.parametrize("other", ["argument", "batched_closure", "plain_closure"])
@pytest.mark.parametrize("transform", [*TRANSFORMS, "grad_chunked", "replay_grad"])
@pytest.mark.parametrize("name", list(SELECTIONS))
def test_vmap_of_a_transform_through_a_selection_is_the_loop(name: str, transform: str, other: str) -> None:
    f = _scalar(SELECTIONS[name])
    of = TRANSFORMS.get(transform, ng.grad)(f)
    if transform == "replay_grad" and name == "piecewise":
        # np.piecewise writes into a plain array of its own: replay says it runs eagerly.
        warnings.filterwarnings("ignore", category=ng.errors.ReplayWarning)
    if other == "argument":
        got = _batched(transform, of)(W, X)
        loop = [of(W[b], X[b]) for b in range(BATCH)]
    elif other == "batched_closure":
        # The differentiated function closes over x, which vmap batches (its own second
        # argument, plain, is unused).
        def closing(w: Any, x: Any) -> Any:
            return TRANSFORMS.get(transform, ng.grad)(lambda v, _: f(v, x))(w, X_PLAIN)

        got = _batched(transform, closing)(W, X)
        loop = [of(W[b], X[b]) for b in range(BATCH)]
    else:
        got = _batched(transform, lambda w: of(w, X_PLAIN))(W)
        loop = [of(W[b], X_PLAIN) for b in range(BATCH)]
    expected = np.stack([np.asarray(r) for r in loop])
    assert type(got) is np.ndarray, f"{name} under vmap({transform}): a {type(got).__name__}"
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_vmap_grad_through_a_selection_is_finite_differences(name: str) -> None:
    # An oracle sharing no code with the ops: central differences, per example.
    f = _scalar(SELECTIONS[name])
    got = ng.vmap(ng.grad(f))(W, X)
    step = 1e-6
    expected = np.zeros_like(W)
    for b in range(BATCH):
        for i in range(SIZE):
            e = np.zeros(SIZE)
            e[i] = step
            expected[b, i] = (float(f(W[b] + e, X[b])) - float(f(W[b] - e, X[b]))) / (2 * step)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
