"""W2: an MLP with softmax cross-entropy, against a hand-written numpy forward + backward.

MLP 784-256-256-10, tanh hidden activations, softmax cross-entropy with integer labels
(mean over the batch), batch 64, once in float32 and once in float64; gradient of all 6
parameters. Reported in ms per step and as a ratio to a hand-written numpy forward +
backward (:func:`mlp_numpy_loss_and_grads`), whose gradients are checked against
nodegrad's at startup (:func:`check_hand_written`). Target: nodegrad <= 1.3x numpy.
JAX runs jitted. A replay row calls nodegrad's gradient function through ``ng.replay``
(recorded when it is built). Target: no slower than eager nodegrad (<= 1.0x its time).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .libraries import (
    GRADIENT_STEPS,
    NOT_ABOVE_EAGER,
    REPLAY,
    ArrayOps,
    Loss,
    Step,
    all_positions,
    library_ops,
    max_relative_error,
    with_replay,
)
from .timing import Case, Sizes


def mlp_inputs(layers: Sequence[int], batch: int, dtype: Any) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Parameters [w1, b1, w2, b2, w3, b3], a batch of inputs and integer labels."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in itertools.pairwise(layers):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(dtype))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(dtype))
    x = rng.standard_normal((batch, layers[0])).astype(dtype)
    labels = rng.integers(0, layers[-1], size=batch)
    return params, x, labels


def mlp_logits(params: Sequence[Any], x: Any, ops: ArrayOps) -> Any:
    """tanh hidden layers, linear output layer."""
    h = x
    n_layers = len(params) // 2
    for k in range(n_layers):
        h = ops.matmul(h, params[2 * k]) + params[2 * k + 1]
        if k < n_layers - 1:
            h = ops.tanh(h)
    return h


def mlp_numpy_loss_and_grads(params: Sequence[np.ndarray], x: np.ndarray, labels: np.ndarray) -> tuple[Any, ...]:
    """Hand-written forward and backward of the 3-layer MLP; returns (loss, grads)."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    logits = h2 @ w3 + b3
    batch, rows = len(labels), np.arange(len(labels))
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    norm = exp.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(norm[:, 0]) - shifted[rows, labels])
    d_logits = (exp / norm - (np.arange(logits.shape[1]) == labels[:, None])) / batch
    d_w3, d_b3 = h2.T @ d_logits, d_logits.sum(axis=0)
    d_a2 = (d_logits @ w3.T) * (1 - h2 * h2)
    d_w2, d_b2 = h1.T @ d_a2, d_a2.sum(axis=0)
    d_a1 = (d_a2 @ w2.T) * (1 - h1 * h1)
    d_w1, d_b1 = x.T @ d_a1, d_a1.sum(axis=0)
    return loss, (d_w1, d_b1, d_w2, d_b2, d_w3, d_b3)


def mlp_loss_nodegrad(x: np.ndarray, labels: np.ndarray) -> Loss:
    import nodegrad as ng

    ops = library_ops("nodegrad")
    return lambda *params: ng.cross_entropy(mlp_logits(params, x, ops), labels)


def mlp_loss_torch(x: np.ndarray, labels: np.ndarray) -> Loss:
    import torch

    ops, x_t, labels_t = library_ops("torch"), torch.from_numpy(x), torch.from_numpy(labels)
    return lambda *params: torch.nn.functional.cross_entropy(mlp_logits(params, x_t, ops), labels_t)


def mlp_loss_autograd(x: np.ndarray, labels: np.ndarray) -> Loss:
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    ops, rows = library_ops("autograd"), np.arange(len(labels))

    def loss(*params: Any) -> Any:
        logits = mlp_logits(params, x, ops)
        log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(log_probs[rows, labels])

    return loss


def mlp_loss_mygrad(x: np.ndarray, labels: np.ndarray) -> Loss:
    from mygrad.nnet.losses import softmax_crossentropy

    ops = library_ops("mygrad")
    return lambda *params: softmax_crossentropy(mlp_logits(params, x, ops), labels)


def mlp_loss_jax(x: np.ndarray, labels: np.ndarray) -> Loss:
    import jax
    import jax.numpy as jnp

    ops, x_j, labels_j = library_ops("jax"), jnp.asarray(x), jnp.asarray(labels)

    def loss(*params: Any) -> Any:
        log_probs = jax.nn.log_softmax(mlp_logits(params, x_j, ops), axis=1)
        return -jnp.mean(jnp.take_along_axis(log_probs, labels_j[:, None], axis=1))

    return loss


MLP_LOSSES: dict[str, Callable[[np.ndarray, np.ndarray], Loss]] = {
    "nodegrad": mlp_loss_nodegrad,
    REPLAY: mlp_loss_nodegrad,  # the same loss, its gradient replayed
    "torch": mlp_loss_torch,
    "autograd": mlp_loss_autograd,
    "mygrad": mlp_loss_mygrad,
    "jax": mlp_loss_jax,
}


def mlp_steps(
    libraries: Sequence[str], layers: Sequence[int], batch: int, dtype: Any, jit: bool
) -> dict[str, Callable[[], Step]]:
    """A step builder per library (the hand-written numpy one first) for one MLP step."""
    params, x, labels = mlp_inputs(layers, batch, dtype)

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            if name == "numpy":
                return lambda: mlp_numpy_loss_and_grads(params, x, labels)[1]
            return GRADIENT_STEPS[name](MLP_LOSSES[name](x, labels), params, jit)

        return build

    names = ["numpy", *(name for name in libraries if name in MLP_LOSSES)]
    return {name: builder(name) for name in names}


def w2_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    layers = "-".join(map(str, sizes.layers))
    cases = []
    for dtype, tolerance in ((np.float32, 1e-4), (np.float64, 1e-9)):
        steps = mlp_steps(with_replay(libraries), sizes.layers, sizes.batch, dtype, jit=True)
        title = f"W2 MLP {layers}, batch {sizes.batch}, {np.dtype(dtype).name}"
        timing = sizes.timing("W2")
        case = Case(
            "W2", title, "numpy", "ms", 1, 1.3, *timing, steps, tolerance, jit=True, replay_peer_target=NOT_ABOVE_EAGER
        )
        cases.append(case)
    return cases


def check_hand_written(sizes: Sizes) -> None:
    """Assert that the hand-written MLP gradients equal nodegrad's, in float32 and float64."""
    import nodegrad as ng

    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        params, x, labels = mlp_inputs(sizes.layers, sizes.batch, dtype)
        loss = mlp_loss_nodegrad(x, labels)
        value, grads = ng.value_and_grad(loss, argnums=all_positions(params))(*params)
        hand_value, hand_grads = mlp_numpy_loss_and_grads(params, x, labels)
        error = max(max_relative_error(grads, hand_grads), abs(float(value) - float(hand_value)) / abs(float(value)))
        assert all(g.dtype == dtype for g in hand_grads), "hand-written MLP gradients changed dtype"
        assert error <= tol, f"hand-written MLP gradients ({np.dtype(dtype)}) differ from nodegrad's: {error:.2e}"
