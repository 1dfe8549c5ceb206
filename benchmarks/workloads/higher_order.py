"""W8: nested transforms on a small function, where the fixed cost of each level is the point.

W8  Higher order on a 5-element function ``sum(tanh(x)**2 * exp(0.3 x)) + sum(sin(x) x**3)``:
    (a) a Hessian-vector product, ``ng.hvp`` against autograd's ``hessian_vector_product``
        and PyTorch's ``torch.autograd.functional.hvp`` (double backward);
    (b) the gradient checker at order 2 in both modes: ``nodegrad.testing.check_grads(f, x,
        order=2)`` against ``autograd.test_util.check_grads(f, modes=["fwd", "rev"], order=2)``.
        Both check first and second derivatives in forward and reverse mode against
        central differences; each raises if a check fails, so a run that completes passed.
    Reported in µs per call and as a ratio to autograd. Target: nodegrad <= 1.0x autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .libraries import Step
from .timing import Case, Sizes

X = np.array([0.3, -0.7, 1.1, 0.25, -1.4])
V = np.array([1.0, -0.5, 0.25, 2.0, -1.0])


def small_function(np_like: Any) -> Callable[[Any], Any]:
    """The W8 function written with one library's numpy namespace."""

    def f(x: Any) -> Any:
        return np_like.sum(np_like.tanh(x) ** 2 * np_like.exp(0.3 * x)) + np_like.sum(np_like.sin(x) * x**3)

    return f


def hvp_step(name: str) -> Step:
    if name == "nodegrad":
        import nodegrad as ng

        f = small_function(np)
        return lambda: ng.hvp(f, X, V)
    if name == "autograd":
        import autograd
        import autograd.numpy as anp

        product = autograd.hessian_vector_product(small_function(anp))
        return lambda: product(X, V)
    if name == "torch":
        import torch

        f = small_function(torch)
        x, v = torch.tensor(X), torch.tensor(V)
        return lambda: torch.autograd.functional.hvp(f, x, v)[1].numpy()
    raise KeyError(name)


def check_grads_step(name: str) -> Step:
    # The step returns a marker: a checker raises when a check fails, so returning passed.
    if name == "nodegrad":
        from nodegrad.testing import check_grads

        f = small_function(np)
        return lambda: (check_grads(f, X, order=2), np.zeros(1))[1]
    if name == "autograd":
        import autograd.numpy as anp
        from autograd.test_util import check_grads as autograd_check_grads

        f = small_function(anp)
        return lambda: (autograd_check_grads(f, modes=["fwd", "rev"], order=2)(X), np.zeros(1))[1]
    raise KeyError(name)


def _builders(make: Callable[[str], Step], names: Sequence[str]) -> dict[str, Callable[[], Step]]:
    return {name: (lambda name=name: make(name)) for name in names}


def w8_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    rounds, runs = sizes.timing("W8")
    hvp_libraries = [n for n in ("autograd", "nodegrad", "torch") if n in libraries]
    check_libraries = [n for n in ("autograd", "nodegrad") if n in libraries]
    return [
        Case(
            "W8",
            "W8 hvp of a 5-element function",
            "autograd",
            "µs/call",
            1,
            1.0,
            rounds,
            runs,
            _builders(hvp_step, hvp_libraries),
            1e-9,
            jit=False,
        ),
        Case(
            "W8",
            "W8 check_grads(order=2), forward and reverse mode, of a 5-element function",
            "autograd",
            "µs/call",
            1,
            1.0,
            rounds,
            max(1, runs // 10),
            _builders(check_grads_step, check_libraries),
            0.0,
            jit=False,
        ),
    ]
