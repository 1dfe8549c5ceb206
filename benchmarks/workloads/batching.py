"""W9-W11: ``ng.vmap``, against the loops it replaces and PyTorch's ``torch.func``.

W9   Per-example gradients of the W2 MLP (``Sizes.layers``, tanh hidden layers, float64)
     over 1,000 examples, one example being one input row and its integer label, its loss
     the softmax cross-entropy of that row: ``ng.vmap(ng.grad(loss), in_axes=(None, 0,
     0))(params, x, labels)``, one list of 6 arrays with the examples along axis 0. The
     baseline is a Python loop of ``ng.grad`` over the rows, its gradients ``np.stack``-ed
     into the same arrays (:data:`.libraries.LOOP`); the peer is ``torch.func.vmap(
     torch.func.grad(loss))``. A hand-written numpy row (:func:`per_example_numpy_grads`)
     shows the floor: the result is 2.15 GB (1,000 x 269,322 parameters), and writing its
     per-example outer products is most of every library's time (the workload is
     memory-bound). Every library's per-example gradients are checked against the loop's.
     Reported in ms and as a ratio to the loop. Target: nodegrad <= 1.10x PyTorch in the
     same run. PyTorch's row is always listed: where torch does not import, it says so
     ("not run: ...") and the target is judged against the numpy floor instead, at the
     same 1.10x: the floor writes the same 2.15 GB with nothing around it, the least
     time any library can take on this machine.
W10  The Jacobian of ``f(x) = tanh(W @ x) + x * x`` from 100 entries to 100 (W a fixed
     (100, 100) matrix): ``ng.jacobian(f)(x)``, every row in one sweep of batched
     cotangents, against the algorithm it replaced, one ``ng.vjp`` back call per row of the
     identity, ``np.stack``-ed (:data:`.libraries.VJP_LOOP`), and ``torch.func.jacrev``.
     Checked against the loop's Jacobian. Reported in ms and as a ratio to the loop.
     Targets: nodegrad <= 0.2x the loop and <= 1.0x PyTorch.
W11  The memory of ``chunk_size``: ``ng.vmap(..., chunk_size=...)`` against the same call
     without it, in three cases. On 10,000 examples of a smaller MLP than W9's
     (``Sizes.chunked_layers``, 64-32-32-10, 3,466 parameters: the W2 MLP's 269,322 would
     make W9's result alone 21.5 GB at 10,000 examples), with ``chunk_size=100``, ``in_axes=
     (None, 0, 0)``: (a) W9's per-example gradients, ``ng.grad(loss)``, whose result (264
     MiB) is as large as anything computed on the way to it; (b) the squared norm of each
     example's gradient (:func:`per_example_squared_norms_nodegrad`, what per-example
     clipping needs), a result of 10,000 numbers from intermediates as large as (a)'s
     result: the work dominates. (c) Each example's ``np.outer(np.tanh(x), x)`` on 400 x
     300 (:func:`per_example_outer_products`, ``chunk_size=100``): the result (275 MiB)
     dominates and each chunk's is a quarter of it. Not timed: each call's peak is
     measured in this process by tracemalloc (numpy reports its buffers to it; it sees
     nothing allocated before it started), after a warm-up call that also checks the
     chunked result against the unchunked one. The result must exist whatever the
     chunking, so what ``chunk_size`` can bound is the peak above the result. Target
     (:func:`chunked_bound`): the chunked peak above the result <= the chunk's share
     (chunk_size / examples) of the unchunked peak above the result (one chunk's work)
     plus that share of the result (the chunk's own result, alive while it is written into
     the whole one), plus 1 MiB (:data:`W11_SLACK_BYTES`) for what does not shrink with the
     chunk. The table shows the bound in MiB, the whole peak, its multiple of the result,
     and the peak above the result as a ratio to the unchunked call's; the notes under it
     work each bound out.

The W11 rows are :class:`TracedMemoryRow` (own columns, printed by ``run.py``), made by
:func:`measure_traced_memory_case` from a :class:`TracedMemoryCase`.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .libraries import (
    LOOP,
    UNCHUNKED,
    VJP_LOOP,
    Step,
    as_array_tuple,
    display_name,
    library_ops,
    max_relative_error,
)
from .mlp import mlp_inputs, mlp_logits
from .timing import Case, PeerUnavailableError, Sizes, short_error

W10_TARGET = 0.2
PEER_TARGET = ("torch", 1.0)
#: W9: nodegrad at most 1.10x ``torch.func.vmap(grad)`` in the same run (the numpy floor's
#: time where torch does not import).
W9_PEER_TARGET = ("torch", 1.10)
#: W11: what the chunked peak above the result may exceed one chunk's share of the
#: unchunked peak above the result plus the chunk's own result by (see w11_cases).
W11_SLACK_BYTES = 1 << 20


# -- W9: per-example gradients ------------------------------------------------------------------


def example_loss_nodegrad() -> Callable[..., Any]:
    """The cross-entropy of one example: ``x`` one input row, ``label`` its class."""
    import nodegrad as ng

    ops = library_ops("nodegrad")
    return lambda params, x, label: ng.cross_entropy(mlp_logits(params, x, ops), label)


def per_example_grads_nodegrad(chunk_size: int | None = None) -> Callable[..., Any]:
    import nodegrad as ng

    return ng.vmap(ng.grad(example_loss_nodegrad()), in_axes=(None, 0, 0), chunk_size=chunk_size)


def per_example_numpy_grads(params: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    """Hand-written per-example gradients: the batch's forward and backward, with each weight's
    gradient kept per example (an outer product per row) instead of summed over the batch.

    Writing those outer products (2.15 GB for W9) is most of the time of every library.
    """
    n_layers = len(params) // 2
    inputs = [x]  # the input of each layer, then the logits
    for k in range(n_layers):
        a = inputs[-1] @ params[2 * k] + params[2 * k + 1]
        inputs.append(np.tanh(a) if k < n_layers - 1 else a)
    logits = inputs.pop()
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    d = exp / exp.sum(axis=1, keepdims=True)  # d loss / d logits of each example: softmax - one-hot
    d[np.arange(len(labels)), labels] -= 1.0
    grads: list[np.ndarray] = [d] * len(params)
    for k in reversed(range(n_layers)):
        grads[2 * k], grads[2 * k + 1] = inputs[k][:, :, None] * d[:, None, :], d
        if k:
            d = (d @ params[2 * k].T) * (1.0 - inputs[k] * inputs[k])
    return grads


def per_example_step(name: str, params: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> Step:
    if name == "numpy":
        return lambda: per_example_numpy_grads(params, x, labels)
    if name == LOOP:
        import nodegrad as ng

        grad = ng.grad(example_loss_nodegrad())

        def loop() -> list[np.ndarray]:
            rows = [grad(params, x[i], labels[i]) for i in range(len(x))]
            return [np.stack(column) for column in zip(*rows, strict=True)]

        return loop
    if name == "nodegrad":
        per_example = per_example_grads_nodegrad()
        return lambda: per_example(params, x, labels)
    if name == "torch":
        try:
            import torch
            from torch.func import grad, vmap
        except ImportError as exc:
            msg = f"torch does not import here ({exc}); W9's target is judged against {display_name('numpy')}"
            raise PeerUnavailableError(msg) from exc

        ops = library_ops("torch")

        def loss(p: Any, x_row: Any, label: Any) -> Any:
            # One example as a batch of one, the form of PyTorch's per-sample-gradient recipe.
            logits = mlp_logits(p, x_row.unsqueeze(0), ops)
            return torch.nn.functional.cross_entropy(logits, label.unsqueeze(0))

        per_example_t = vmap(grad(loss), in_dims=(None, 0, 0))  # torch.func names in_axes in_dims
        params_t = tuple(torch.from_numpy(p) for p in params)
        x_t, labels_t = torch.from_numpy(x), torch.from_numpy(labels)
        return lambda: per_example_t(params_t, x_t, labels_t)
    raise KeyError(name)


def w9_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    params, x, labels = mlp_inputs(sizes.layers, sizes.per_example, np.float64)
    # PyTorch's row is always there: where torch does not import it says so, and nodegrad's
    # target is judged against the numpy floor instead (Case.peer_fallback).
    names = [LOOP, "numpy", *(n for n in ("nodegrad",) if n in libraries), "torch"]
    builders = {name: (lambda name=name: per_example_step(name, params, x, labels)) for name in names}
    layers = "-".join(map(str, sizes.layers))
    title = f"W9 per-example gradients, MLP {layers}, {sizes.per_example:,} examples, float64"
    rounds, runs = sizes.timing("W9")
    return [
        Case(
            "W9", title, LOOP, "ms", 1, None, rounds, runs, builders, 1e-9, False, W9_PEER_TARGET, peer_fallback="numpy"
        )
    ]


# -- W10: a Jacobian ----------------------------------------------------------------------------


def jacobian_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)


def jacobian_step(name: str, w: np.ndarray, x: np.ndarray) -> Step:
    def f(v: Any) -> Any:  # nodegrad differentiates it through numpy's dispatch
        return np.tanh(w @ v) + v * v

    if name == VJP_LOOP:
        import nodegrad as ng

        def rows() -> np.ndarray:
            out, back = ng.vjp(f, x)
            return np.stack([back(seed)[0] for seed in np.eye(np.size(out))])  # back returns a tuple

        return rows
    if name == "nodegrad":
        import nodegrad as ng

        jacobian = ng.jacobian(f)
        return lambda: jacobian(x)
    if name == "torch":
        import torch
        from torch.func import jacrev

        w_t, x_t = torch.from_numpy(w), torch.from_numpy(x)
        jacobian_t = jacrev(lambda v: torch.tanh(w_t @ v) + v * v)
        return lambda: jacobian_t(x_t)
    raise KeyError(name)


def w10_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    n = sizes.jacobian_size
    w, x = jacobian_inputs(n)
    names = [VJP_LOOP, *(name for name in ("nodegrad", "torch") if name in libraries)]
    builders = {name: (lambda name=name: jacobian_step(name, w, x)) for name in names}
    title = f"W10 jacobian of tanh(W @ x) + x * x, {n} -> {n}, float64"
    rounds, runs = sizes.timing("W10")
    return [Case("W10", title, VJP_LOOP, "ms", 1, W10_TARGET, rounds, runs, builders, 1e-9, False, PEER_TARGET)]


# -- W11: the memory of chunk_size --------------------------------------------------------------


@dataclass(frozen=True)
class TracedMemoryCase:
    """One block measured by tracemalloc in this process: a step per row, the baseline first."""

    key: str
    title: str
    baseline: str
    # The row named by ``judged`` computes ``chunk_share`` of the baseline's examples at a
    # time (chunk_size / examples): its peak above the result is judged against that share
    # of the baseline's peak above the result and of its result, plus W11_SLACK_BYTES.
    chunk_share: float | None
    judged: str
    variants: dict[str, str]  # row name -> variant shown beside it
    builders: dict[str, Callable[[], Step]]
    tolerance: float  # for the check column, against the baseline's result
    runs: int  # measured calls per row, the minimum kept
    what: str = ""  # the computation, named in the note working out the bound


@dataclass
class TracedMemoryRow:
    """The traced peaks of one row (bytes): the whole peak and the part above the result."""

    case: str
    library: str
    variant: str = ""
    peak_bytes: int | None = None  # the minimum over the runs
    result_bytes: int | None = None
    above_result_bytes: int | None = None
    runs_bytes: list[int] = field(default_factory=list)  # every run's whole peak
    what: str = ""  # the case's computation, see TracedMemoryCase.what
    ratio: float | None = None  # above-result peak over the baseline's
    baseline: str = ""
    bound_bytes: int | None = None  # the largest peak above the result that meets the target
    met: bool | None = None
    check: str = ""
    error: str = ""


def traced_peak(step: Step) -> tuple[int, int]:
    """The traced peak of one call of ``step`` and the bytes of its result's arrays."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        result = step()
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return peak, sum(a.nbytes for a in as_array_tuple(result))


def warmed_step(build: Callable[[], Step], reference: Any, tolerance: float) -> tuple[Step, Any, str]:
    """A row's step, built and run once (a warm-up): the step, the reference results (this
    call's, where there are none yet) and the row's check cell against them."""
    step = build()
    result = as_array_tuple(step())
    if reference is None:
        return step, result, "reference"
    error = max_relative_error(result, reference)
    return step, reference, "ok" if error <= tolerance else f"MISMATCH {error:.1e}"


def measure_traced_memory_case(case: TracedMemoryCase, judge_targets: bool) -> list[TracedMemoryRow]:
    """Every row of the case: a warm-up call (checked against the baseline's), then ``case.runs`` measured."""
    rows, reference = [], None
    for name, build in case.builders.items():
        print(f"  {case.title}: {display_name(name, case.variants.get(name, ''))} ...", file=sys.stderr, flush=True)
        row = TracedMemoryRow(case.title, name, case.variants.get(name, ""), baseline=case.baseline, what=case.what)
        rows.append(row)
        try:
            step, reference, row.check = warmed_step(build, reference, case.tolerance)
            measured = [traced_peak(step) for _ in range(case.runs)]
        except Exception as exc:  # a failing row is a result, not a crash
            row.error = short_error(exc)
            continue
        row.runs_bytes = [peak for peak, _ in measured]
        row.peak_bytes, row.result_bytes = min(row.runs_bytes), measured[0][1]
        row.above_result_bytes = max(0, row.peak_bytes - row.result_bytes)
    del reference
    gc.collect()
    base = next((r for r in rows if r.library == case.baseline and r.above_result_bytes), None)
    for row in rows:
        if base is not None and base.above_result_bytes and row.above_result_bytes is not None:
            row.ratio = row.above_result_bytes / base.above_result_bytes
        if row.library == case.judged and case.chunk_share is not None and base is not None:
            row.bound_bytes = chunked_bound(base, case.chunk_share)
            above = row.above_result_bytes
            row.met = None if above is None or not judge_targets else above <= row.bound_bytes
    return rows


def chunked_bound(unchunked: TracedMemoryRow, share: float) -> int:
    """W11's target: the largest peak above the result a call computing ``share`` of the
    examples at a time may have, given the unchunked call's row: that share of the
    unchunked peak above the result (one chunk's work) and of the result (the chunk's own
    result, alive while it is written into the whole one), plus W11_SLACK_BYTES for what
    does not shrink with the chunk (the tape's Python objects, arrays the size of the
    parameters, and the interpreter's free lists, which tracemalloc counts and which fill
    by about 1 KB per chunk until a full collection empties them)."""
    assert unchunked.above_result_bytes is not None and unchunked.result_bytes is not None
    return round(share * (unchunked.above_result_bytes + unchunked.result_bytes)) + W11_SLACK_BYTES


def per_example_squared_norms_nodegrad(chunk_size: int | None = None) -> Callable[..., Any]:
    """The squared norm of each example's whole gradient (what per-example clipping needs):
    a result of one number per example, from intermediates as large as W9's result."""
    import nodegrad as ng

    grad = ng.grad(example_loss_nodegrad())

    def squared_norm(params: Any, x: Any, label: Any) -> Any:
        return sum(np.sum(g * g) for g in grad(params, x, label))

    return ng.vmap(squared_norm, in_axes=(None, 0, 0), chunk_size=chunk_size)


def w11_cases(sizes: Sizes, libraries: Sequence[str]) -> list[TracedMemoryCase]:
    params, x, labels = mlp_inputs(sizes.chunked_layers, sizes.chunked_examples, np.float64)
    chunk = sizes.chunk_size
    layers = "-".join(map(str, sizes.chunked_layers))
    problem = f"MLP {layers} (smaller than W9's), {sizes.chunked_examples:,} examples, float64, chunk_size={chunk}"
    rows, features = sizes.outer_examples, sizes.outer_features
    outer_x = np.random.default_rng(0).standard_normal((rows, features))

    def case(
        what: str, make: Callable[[int | None], Callable[..., Any]], args: tuple[Any, ...], n: int, c: int
    ) -> TracedMemoryCase:
        def build(chunk_size: int | None) -> Callable[[], Step]:
            def step() -> Step:
                per_example = make(chunk_size)
                return lambda: per_example(*args)

            return step

        return TracedMemoryCase(
            "W11",
            f"W11 peak memory above the result, {what}",
            UNCHUNKED,
            min(c, n) / n,
            "nodegrad",
            {"nodegrad": f"chunk_size={c}"},
            {UNCHUNKED: build(None), "nodegrad": build(c)},
            1e-9,
            sizes.memory_runs,
            what.split(",", 1)[0],
        )

    n = sizes.chunked_examples
    mlp = (params, x, labels)
    return [
        case(f"per-example gradients, {problem}", per_example_grads_nodegrad, mlp, n, chunk),
        case(f"per-example squared gradient norms, {problem}", per_example_squared_norms_nodegrad, mlp, n, chunk),
        case(
            f"per-example outer products, np.outer(np.tanh(x), x) of {rows:,} x {features} float64, "
            f"chunk_size={sizes.outer_chunk}",
            per_example_outer_products,
            (outer_x,),
            rows,
            sizes.outer_chunk,
        ),
    ]


def per_example_outer_products(chunk_size: int | None = None) -> Callable[..., Any]:
    """A result that dominates: each example's outer product (the result is ``features``
    times the argument, and nothing computed on the way is larger than one example's)."""
    import nodegrad as ng

    return ng.vmap(lambda x: np.outer(np.tanh(x), x), chunk_size=chunk_size)


def traced_memory_notes(rows: Sequence[TracedMemoryRow]) -> list[str]:
    """The lines printed under the W11 tables: how the peaks were measured, and each
    judged row's bound worked out."""
    if not rows:
        return []
    runs = max((len(r.runs_bytes) for r in rows), default=0)
    notes = [
        f"W11: tracemalloc peak of one call in this process, minimum of {runs}; above result: the peak minus the "
        "bytes of the returned arrays; x result: the peak as a multiple of them; target: chunked above result <= "
        "chunk share x (unchunked above result + result) + 1 MiB"
    ]
    mib = 1 << 20
    for row in rows:
        base = next((r for r in rows if r.case == row.case and r.library == row.baseline), None)
        if row.bound_bytes is None or base is None or base.above_result_bytes is None or base.result_bytes is None:
            continue
        share = (row.bound_bytes - W11_SLACK_BYTES) / (base.above_result_bytes + base.result_bytes)
        verdict = {None: "not judged", True: "met", False: "NOT met"}[row.met]
        notes.append(
            f"  {row.what}: {share:.3g} x ({base.above_result_bytes / mib:,.2f} + "
            f"{base.result_bytes / mib:,.2f}) + 1 = {row.bound_bytes / mib:,.2f} MiB; chunked "
            f"{(row.above_result_bytes or 0) / mib:,.2f} MiB: {verdict}"
        )
    return notes
