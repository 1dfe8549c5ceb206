"""The benchmark workloads, one module each, and the helpers they share.

``fixed_cost``   W0: the fixed cost of one grad call on tiny inputs (array, dict, record)
``chains``       W1 (per-op overhead) and W5 (deep graph): chains of cheap elementwise ops
``mlp``          W2: an MLP with softmax cross-entropy, float32 and float64
``large_chain``  W3: a 10-op chain on 10 million elements
``dict_params``  W4: a dict of 200 small matrices, the gradient a dict
``gather``       W6: a sampled batch from a dict of columns, written in plain numpy
``memory``       W7: the peak memory of one W3 step and one W2 step, each library in a fresh
                 process (``memory_child`` is that process's entry point)
``higher_order`` W8: hvp and check_grads(order=2) of a small function: nested transforms
``batching``     W9 (per-example gradients), W10 (a Jacobian) and W11 (the memory of
                 ``chunk_size``): ``ng.vmap`` against the loops it replaces
``sparse_rows``  W12: a training step of a 1,000,000-row lookup table under a small MLP,
                 dense against row-sparse gradients (``grad(..., sparse_rows=True)``)
``table_pipeline`` W14: the gradient of a pandas pipeline (a merge, a groupby transform, NaN
                 skipped) on a 100,000-row sales table

Shared: ``environment`` (malloc and thread settings, the header's facts), ``libraries``
(the peers, their ops and gradient steps, gradient comparison) and ``timing`` (sizes,
cases, interleaved rounds, results). Each workload module has a function from
:class:`~.timing.Sizes` and the importable libraries to its :class:`~.timing.Case` list
(W7's to its :class:`~.memory.MemoryCase` list and W11's to its
:class:`~.batching.TracedMemoryCase` list: measured, not timed; W12's to a
:class:`~.sparse_rows.LabelledCase` and a :class:`~.sparse_rows.GradientMemoryCase`,
timed and measured); :data:`WORKLOADS`
maps the keys of ``--only`` to them, in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import fitting, gather, large_chain, mlp, table_pipeline
from .batching import TracedMemoryCase, w9_cases, w10_cases, w11_cases
from .chains import w1_case, w5_case
from .dict_params import w4_case
from .fitting import w15_cases
from .fixed_cost import w0_cases
from .gather import w6_cases
from .higher_order import w8_cases
from .large_chain import w3_case
from .memory import MemoryCase, w7_cases
from .mlp import w2_cases
from .sparse_rows import GradientMemoryCase, w12_cases
from .table_pipeline import w14_cases
from .timing import Case, Sizes

AnyCase = Case | MemoryCase | TracedMemoryCase | GradientMemoryCase

WORKLOADS: dict[str, Callable[[Sizes, Sequence[str]], Sequence[AnyCase]]] = {
    "W0": w0_cases,
    "W1": w1_case,
    "W2": w2_cases,
    "W3": w3_case,
    "W4": w4_case,
    "W5": w5_case,
    "W6": w6_cases,
    "W7": w7_cases,
    "W8": w8_cases,
    "W9": w9_cases,
    "W10": w10_cases,
    "W11": w11_cases,
    "W12": w12_cases,
    "W14": w14_cases,
    "W15": w15_cases,
}


def verify_hand_written_references(sizes: Sizes) -> None:
    """Assert that the hand-written numpy gradients (W2, W3, W6, W14, W15) equal nodegrad's (tight tolerance)."""
    for module in (mlp, large_chain, gather, table_pipeline, fitting):
        module.check_hand_written(sizes)
