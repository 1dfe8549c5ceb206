"""W4: structured parameters, a dict of small matrices whose gradient is a dict.

A dict of 200 (8, 8) float64 matrices; the loss is the sum over keys of
sum(tanh(W_k @ x)), the gradient a dict, taken in each library's own way
(:func:`dict_step`). Reported in µs per parameter and as a ratio to PyTorch.
Target: nodegrad <= 1.0x PyTorch. JAX runs eagerly. A replay row calls nodegrad's
``grad`` through ``ng.replay`` (recorded when it is built). Target: no slower than eager
nodegrad (<= 1.0x its time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .libraries import (
    GRADIENT_STEPS,
    NOT_ABOVE_EAGER,
    REPLAY,
    ArrayOps,
    Step,
    library_ops,
    replayed_step,
    with_replay,
)
from .timing import Case, Sizes


def dict_inputs(count: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(4)
    return {f"w{k}": rng.standard_normal((8, 8)) for k in range(count)}, rng.standard_normal(8)


def dict_loss(params: dict[str, Any], x: Any, ops: ArrayOps) -> Any:
    """The sum over keys of ``sum(tanh(W_k @ x))``."""
    total = 0.0
    for w in params.values():
        total = total + ops.total(ops.tanh(ops.matmul(w, x)))
    return total


def dict_step(name: str, params: dict[str, np.ndarray], x: np.ndarray) -> Step:
    """The gradient of :func:`dict_loss` with respect to the dict, in each library's own way."""
    ops = library_ops(name)
    loss = lambda p: dict_loss(p, x, ops)
    if name in ("nodegrad", REPLAY):
        import nodegrad as ng

        grad = ng.grad(loss)
        return replayed_step(grad, [params]) if name == REPLAY else lambda: grad(params)
    if name == "torch":
        import torch

        leaves = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
        xt = torch.from_numpy(x)
        return lambda: dict(
            zip(leaves, torch.autograd.grad(dict_loss(leaves, xt, ops), list(leaves.values())), strict=True)
        )
    if name == "autograd":
        import autograd

        grad = autograd.grad(loss)
        return lambda: grad(params)
    if name == "mygrad":
        import mygrad as mg

        def step() -> dict[str, Any]:
            leaves = {k: mg.Tensor(v, copy=False) for k, v in params.items()}
            dict_loss(leaves, x, ops).backward()
            return {k: t.grad for k, t in leaves.items()}

        return step
    if name == "jax":
        import jax

        grad = jax.grad(loss)
        device_params = jax.device_put(params)
        return lambda: jax.block_until_ready(grad(device_params))
    msg = f"no W4 step for {name!r}"
    raise ValueError(msg)


def dict_steps(libraries: Sequence[str], count: int) -> dict[str, Callable[[], Step]]:
    params, x = dict_inputs(count)
    return {name: (lambda name=name: dict_step(name, params, x)) for name in libraries if name in GRADIENT_STEPS}


def w4_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    steps = dict_steps(with_replay(libraries), sizes.dict_params)
    title = f"W4 dict of {sizes.dict_params} (8, 8) parameters, gradient as a dict"
    n, timing = sizes.dict_params, sizes.timing("W4")
    case = Case(
        "W4", title, "torch", "µs/param", n, 1.0, *timing, steps, 1e-9, jit=False, replay_peer_target=NOT_ABOVE_EAGER
    )
    return [case]
