"""W1 and W5: chains of cheap elementwise ops on a 4-element array, where per-op cost is the point.

W1  Per-op overhead. 250 repeats of [sin(x), x * 1.01, tanh(x), x + 0.5] on a 4-element
    float64 array (1,000 ops), then sum. Reported in µs per op (time / 1,000) and as a
    ratio to PyTorch. Target: nodegrad <= 0.8x PyTorch. A replay row calls nodegrad's
    ``grad`` of the chain through ``ng.replay`` (recorded when it is built): its 1,000 ops
    and their backward as one straight-line function. Target: <= 0.35x PyTorch.
W5  Deep graph. The W1 op mix repeated to 100,000 ops. Reported in µs per op and as a
    ratio to PyTorch; a library that fails (a recursion limit, say) is reported as failed.

JAX runs both eagerly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .libraries import GRADIENT_STEPS, ArrayOps, Step, library_ops, with_replay
from .timing import Case, Sizes


def mixed_chain(x: Any, ops: ArrayOps, blocks: int) -> Any:
    """``blocks`` repeats of [sin(x), x * 1.01, tanh(x), x + 0.5]: 4 ops each."""
    for _ in range(blocks):
        x = ops.sin(x)
        x = x * 1.01
        x = ops.tanh(x)
        x = x + 0.5
    return x


def chain_steps(libraries: Sequence[str], blocks: int, jit: bool) -> dict[str, Callable[[], Step]]:
    """A step builder per library for the chain of ``4 * blocks`` ops on 4 elements."""
    x0 = np.array([0.1, 0.2, 0.3, 0.4])

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            ops = library_ops(name)
            loss = lambda x: ops.total(mixed_chain(x, ops, blocks))
            return GRADIENT_STEPS[name](loss, [x0], jit)

        return build

    return {name: builder(name) for name in libraries if name in GRADIENT_STEPS}


def w1_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    ops = 4 * sizes.chain_blocks
    steps = chain_steps(with_replay(libraries), sizes.chain_blocks, jit=False)
    title = f"W1 per-op overhead, {ops:,}-op chain on 4 float64"
    timing = sizes.timing("W1")
    return [Case("W1", title, "torch", "µs/op", ops, 0.8, *timing, steps, 1e-9, jit=False, replay_target=0.35)]


def w5_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    ops = 4 * sizes.deep_blocks
    steps = chain_steps(libraries, sizes.deep_blocks, jit=False)
    title = f"W5 deep graph, {ops:,}-op chain on 4 float64"
    return [Case("W5", title, "torch", "µs/op", ops, None, *sizes.timing("W5"), steps, 1e-9, jit=False)]
