"""W0: the fixed cost of one gradient call on tiny inputs, where nothing but overhead is left.

W0  ``grad`` of ``sum(x * 2.0)`` per leaf, on three kinds of argument: a 4-element float64
    array; a dict of three arrays of 4, 3 and 2 elements (the loss sums the three terms);
    an attrs record with the same three fields. A fourth case takes ``value_and_grad`` of
    the array case. nodegrad differentiates the function written with numpy itself
    (``np.sum(x * 2.0)``, through numpy's dispatch), as a data pipeline calls it; each peer
    runs its own ops on its own tensors, made from the numpy inputs inside the timed call
    (a pipeline hands every library numpy arrays). Reported in µs per call and as a ratio
    to hand-written numpy: the forward plus the gradient ``np.full_like(x, 2.0)`` per leaf,
    in the argument's own structure. Targets for nodegrad: at most 2x hand-written numpy
    and at most 0.5x PyTorch. A replay row calls the same ``grad`` (``value_and_grad``)
    through ``ng.replay``, recorded when it is built; its target: at most 0.30x PyTorch.

A peer that cannot take the argument as it is (autograd and an attrs record) is reported
as failed with its own error: that is what its user meets. JAX runs jitted (its
eager ``grad`` retraces on every call); the record is registered as a pytree for it.
Each timed run is ``CALLS`` back-to-back calls, so the timer's own cost is spread thin.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .libraries import REPLAY, Step, replayed_step, with_replay
from .timing import Case, Sizes

CALLS = 20  # calls per timed run


@attrs.frozen
class Params:
    """The record argument: three float arrays, as a small model's parameters."""

    w: Any
    b: Any
    s: Any


ARRAY = np.array([0.1, 0.2, 0.3, 0.4])
PARAMS = {"w": np.array([0.1, 0.2, 0.3, 0.4]), "b": np.array([0.5, 0.6, 0.7]), "s": np.array([0.8, 0.9])}
RECORD = Params(**PARAMS)
KINDS = {"array": ARRAY, "dict": PARAMS, "record": RECORD}


def leaves_of(p: Any) -> list[Any]:
    """The leaves of any of the three argument kinds, in field order."""
    if isinstance(p, dict):
        return list(p.values())
    if isinstance(p, Params):
        return [p.w, p.b, p.s]
    return [p]


def rebuilt(like: Any, leaves: Sequence[Any]) -> Any:
    """``leaves`` in the structure of ``like``: the gradient in the argument's own shape."""
    if isinstance(like, dict):
        return dict(zip(like, leaves, strict=True))
    if isinstance(like, Params):
        return Params(*leaves)
    return leaves[0]


def loss_with(total: Callable[[Any], Any], like: Any) -> Callable[[Any], Any]:
    """``sum(leaf * 2.0)`` over the leaves of an argument shaped like ``like``, with one
    library's sum (chosen by the numpy argument: a library may hand the loss its own box)."""
    if isinstance(like, dict):
        return lambda p: total(p["w"] * 2.0) + total(p["b"] * 2.0) + total(p["s"] * 2.0)
    if isinstance(like, Params):
        return lambda p: total(p.w * 2.0) + total(p.b * 2.0) + total(p.s * 2.0)
    return lambda p: total(p * 2.0)


def by_hand(p: Any, loss: Callable[[Any], Any], with_value: bool) -> Any:
    """The forward and the gradient written out: ``2.0`` at every entry of every leaf."""
    value = loss(p)
    grads = rebuilt(p, [np.full_like(leaf, 2.0) for leaf in leaves_of(p)])
    return (value, grads) if with_value else grads


def call_for(name: str, p: Any, with_value: bool) -> Callable[[], Any]:
    """One gradient call of library ``name`` on the numpy argument ``p``."""
    if name == "numpy":
        loss = loss_with(np.sum, p)
        return lambda: by_hand(p, loss, with_value)
    if name in ("nodegrad", REPLAY):
        import nodegrad as ng

        transform = ng.value_and_grad if with_value else ng.grad
        fn = transform(loss_with(np.sum, p))
        return replayed_step(fn, [p]) if name == REPLAY else lambda: fn(p)
    if name == "torch":
        return torch_call(p, with_value)
    if name == "autograd":
        import autograd
        import autograd.numpy as anp

        fn = (autograd.value_and_grad if with_value else autograd.grad)(loss_with(anp.sum, p))
        return lambda: fn(p)
    if name == "mygrad":
        return mygrad_call(p, with_value)
    if name == "jax":
        return jax_call(p, with_value)
    raise KeyError(name)


def torch_call(p: Any, with_value: bool) -> Callable[[], Any]:
    import torch

    loss = loss_with(torch.sum, p)

    def call() -> Any:
        leaves = [torch.from_numpy(leaf).requires_grad_() for leaf in leaves_of(p)]
        value = loss(rebuilt(p, leaves))
        grads = rebuilt(p, torch.autograd.grad(value, leaves))
        return (value.detach(), grads) if with_value else grads

    return call


def mygrad_call(p: Any, with_value: bool) -> Callable[[], Any]:
    import mygrad as mg

    loss = loss_with(mg.sum, p)

    def call() -> Any:
        leaves = [mg.Tensor(leaf, copy=False) for leaf in leaves_of(p)]
        value = loss(rebuilt(p, leaves))
        value.backward()
        grads = rebuilt(p, [leaf.grad for leaf in leaves])
        return (value.item(), grads) if with_value else grads

    return call


def jax_call(p: Any, with_value: bool) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    if isinstance(p, Params):
        with contextlib.suppress(ValueError):  # registered by an earlier case
            jax.tree_util.register_pytree_node(Params, lambda r: ((r.w, r.b, r.s), None), lambda _, c: Params(*c))
    fn = jax.jit((jax.value_and_grad if with_value else jax.grad)(loss_with(jnp.sum, p)))
    return lambda: jax.block_until_ready(fn(p))


def as_gradient(result: Any, with_value: bool) -> Any:
    """The gradient part of a call's result, as leaves the check column compares."""
    grads = result[1] if with_value else result
    return tuple(leaves_of(grads))


def steps_for(libraries: Sequence[str], p: Any, with_value: bool) -> dict[str, Callable[[], Step]]:
    """A step builder per library (hand-written numpy first): ``CALLS`` calls per run."""

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            call = call_for(name, p, with_value)

            def step() -> Any:
                for _ in range(CALLS - 1):
                    call()
                return as_gradient(call(), with_value)

            return step

        return build

    known = ("nodegrad", REPLAY, "torch", "autograd", "mygrad", "jax")
    names = ["numpy", *(name for name in with_replay(libraries) if name in known)]
    return {name: builder(name) for name in names}


def w0_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    rounds, runs = sizes.timing("W0")

    def case(title: str, p: Any, with_value: bool) -> Case:
        steps = steps_for(libraries, p, with_value)
        return Case(
            "W0",
            title,
            "numpy",
            "µs/call",
            CALLS,
            2.0,
            rounds,
            runs,
            steps,
            1e-12,
            True,
            ("torch", 0.5),
            replay_peer_target=("torch", 0.30),
        )

    cases = [case(f"W0 fixed cost of grad, {kind} argument", p, False) for kind, p in KINDS.items()]
    cases.append(case("W0 fixed cost of value_and_grad, array argument", ARRAY, True))
    return cases
