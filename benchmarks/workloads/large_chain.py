"""W3: a 10-op chain on a large array, against a hand-written numpy forward + backward.

[sin, x * 1.01, tanh, x + 0.5] twice, then [sin, tanh] (10 ops, values stay bounded) on
10 million float64 elements, then sum. Reported in ms and as a ratio to a hand-written
numpy forward + backward that keeps the intermediates its backward needs
(:func:`bounded_chain_numpy_grad`, checked against nodegrad's at startup).
Target: nodegrad <= 1.10x numpy. JAX runs jitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .chains import mixed_chain
from .libraries import GRADIENT_STEPS, ArrayOps, Step, library_ops, max_relative_error
from .timing import Case, Sizes


def bounded_chain(x: Any, ops: ArrayOps) -> Any:
    """[sin, x * 1.01, tanh, x + 0.5] twice, then [sin, tanh]: 10 ops, values stay in [-1, 2]."""
    x = mixed_chain(x, ops, 2)
    return ops.tanh(ops.sin(x))


def bounded_chain_numpy_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
    """Hand-written forward and backward of :func:`bounded_chain` followed by a sum.

    The forward keeps only what the backward reads (sin needs its input, tanh its
    output); the backward multiplies by one derivative factor per op.
    """
    t1 = np.tanh(np.sin(x) * 1.01)
    u1 = t1 + 0.5
    t2 = np.tanh(np.sin(u1) * 1.01)
    u2 = t2 + 0.5
    t3 = np.tanh(np.sin(u2))
    total = t3.sum()
    g = 1.0 - t3 * t3  # d total / d t3 is 1
    g = g * np.cos(u2)
    g = g * (1.0 - t2 * t2)
    g = g * 1.01
    g = g * np.cos(u1)
    g = g * (1.0 - t1 * t1)
    g = g * 1.01
    g = g * np.cos(x)
    return total, g


def bounded_chain_steps(libraries: Sequence[str], n: int, jit: bool) -> dict[str, Callable[[], Step]]:
    """A step builder per library (the hand-written numpy one first) for the large chain."""
    x0 = np.random.default_rng(0).standard_normal(n)

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            if name == "numpy":
                return lambda: bounded_chain_numpy_grad(x0)[1]
            ops = library_ops(name)
            return GRADIENT_STEPS[name](lambda x: ops.total(bounded_chain(x, ops)), [x0], jit)

        return build

    names = ["numpy", *(name for name in libraries if name in GRADIENT_STEPS)]
    return {name: builder(name) for name in names}


def w3_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    steps = bounded_chain_steps(libraries, sizes.big_n, jit=True)
    title = f"W3 10-op chain on {sizes.big_n:,} float64"
    return [Case("W3", title, "numpy", "ms", 1, 1.10, *sizes.timing("W3"), steps, 1e-9, jit=True)]


def check_hand_written(sizes: Sizes) -> None:
    """Assert that the hand-written chain gradient equals nodegrad's (on 1,000 elements, whatever the sizes)."""
    import nodegrad as ng

    x0 = np.random.default_rng(1).standard_normal(1000)
    ops = library_ops("nodegrad")
    grads = ng.grad(lambda x: ops.total(bounded_chain(x, ops)))(x0)
    error = max_relative_error(grads, bounded_chain_numpy_grad(x0)[1])
    assert error <= 1e-12, f"hand-written chain gradient differs from nodegrad's: {error:.2e}"
