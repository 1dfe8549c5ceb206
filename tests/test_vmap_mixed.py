"""Functions that read the values of one argument (bins, indices, segment ids, sample
points) and differentiate another, under ``vmap`` of a transform where the read argument
is batched and the differentiated one is not: every example has its own gradient, equal
to a Python loop of the unbatched transform (not the sum of all the examples' gradients).

The differentiated value is an argument ``vmap`` does not batch (``in_axes=None``) or a
plain array the batched function closes over; the transforms are ``grad``, ``hessian``,
``jacrev``, ``jacfwd`` and ``grad`` chunked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nodegrad as ng

BATCH, SIZE, BINS = 4, 5, 3
W = np.random.default_rng(0).normal(size=SIZE)
INDICES = np.random.default_rng(1).integers(0, BINS, size=(BATCH, SIZE))
POINTS = np.random.default_rng(2).uniform(0.0, 1.0, size=(BATCH, SIZE))
EDGES = np.linspace(0.0, 1.0, SIZE + 1)[1:-1]  # SIZE - 1 sorted interior edges: SIZE buckets

# Each a function of the differentiated w (SIZE entries) and a batched value it reads:
# integer indices in [0, BINS) for the first kind, points in [0, 1) for the second.
READERS: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "bincount": (lambda w, i: np.bincount(i, weights=w, minlength=BINS), INDICES),
    "interp": (lambda w, x: np.interp(x, np.linspace(0.0, 1.0, SIZE), w), POINTS),
    "searchsorted_take": (lambda w, x: w[np.searchsorted(EDGES, x)], POINTS),
    "digitize_take": (lambda w, x: np.take(w, np.digitize(x, EDGES)), POINTS),
    "take": (lambda w, i: np.take(w, i), INDICES),
    "getitem": (lambda w, i: w[i] * w[(i + 1) % SIZE], INDICES),
    "segment_sum": (lambda w, i: ng.segment_sum(w, i, num_segments=BINS), INDICES),
}


def _scalar(read: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    # Non-linear in what the reader gives, so that the Hessian is not zero.
    return lambda w, x: np.sum(np.sin(read(w, x)) * np.arange(1.0, 1.0 + np.size(read(w, x))))


TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "grad": ng.grad,
    "hessian": ng.hessian,
    "jacrev": ng.jacrev,
    "jacfwd": ng.jacfwd,
    "grad_chunked": ng.grad,
}


def _transformed(name: str, transform: str, differentiated: str) -> Any:
    """``vmap`` of ``transform`` of the reader ``name``'s scalar function, in the unbatched ``W``."""
    read, batched = READERS[name]
    f = _scalar(read)
    chunk = {"chunk_size": 2} if transform == "grad_chunked" else {}
    if differentiated == "unbatched_argument":
        return ng.vmap(TRANSFORMS[transform](f), in_axes=(None, 0), **chunk)(W, batched)
    return ng.vmap(lambda x: TRANSFORMS[transform](lambda w: f(w, x))(W), **chunk)(batched)


@pytest.mark.parametrize("differentiated", ["unbatched_argument", "closure"])
@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("name", list(READERS))
def test_vmap_of_a_transform_in_an_unbatched_value_is_the_loop(name: str, transform: str, differentiated: str) -> None:
    got = _transformed(name, transform, differentiated)
    of = TRANSFORMS[transform](_scalar(READERS[name][0]))
    batched = READERS[name][1]
    expected = np.stack([np.asarray(of(W, batched[b])) for b in range(BATCH)])
    assert type(got) is np.ndarray, f"{name} under vmap({transform}): a {type(got).__name__}"
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(READERS))
def test_vmap_grad_in_an_unbatched_value_is_finite_differences(name: str) -> None:
    # An oracle sharing no code with the library: central differences of plain numpy.
    read, batched = READERS[name]
    f = _scalar(read)
    got = ng.vmap(ng.grad(f), in_axes=(None, 0))(W, batched)
    step = 1e-6
    expected = np.zeros((BATCH, SIZE))
    for b in range(BATCH):
        for k in range(SIZE):
            e = np.zeros(SIZE)
            e[k] = step
            expected[b, k] = (float(f(W + e, batched[b])) - float(f(W - e, batched[b]))) / (2 * step)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
