"""Side-by-side benchmarks: nodegrad against the autodiff libraries that are installed.

Run from the repository root::

    python benchmarks/run.py                  # every workload, about 2-3 minutes on 2 cores
    python benchmarks/run.py --quick          # tiny sizes, one timed run: a smoke test
    python benchmarks/run.py --only W1,W3     # a subset
    python benchmarks/run.py --json out.json  # also write the results as JSON
    python benchmarks/run.py --threads 2      # BLAS/OpenMP/torch threads (default 1)

Every workload computes a scalar and its gradient (forward + backward) and returns the
gradient as arrays; every library runs exactly the same computation.

W0  Fixed cost of one call. ``grad`` of ``sum(x * 2.0)`` per leaf on a 4-element array, a
    dict of three small arrays and an attrs record of them, and ``value_and_grad`` of the
    array case; nodegrad differentiates the numpy-written function. In µs per call, as a
    ratio to hand-written numpy (forward + ``np.full_like(x, 2.0)`` per leaf). Targets:
    nodegrad <= 2x numpy and <= 0.5x PyTorch; its replay <= 0.30x PyTorch.
W1  Per-op overhead. 250 repeats of [sin(x), x * 1.01, tanh(x), x + 0.5] on a 4-element
    float64 array (1,000 ops), then sum. Reported in µs per op (time / 1,000) and as a
    ratio to PyTorch. Target: nodegrad <= 0.8x PyTorch; its replay <= 0.35x PyTorch.
W2  MLP 784-256-256-10, tanh hidden activations, softmax cross-entropy with integer
    labels (mean over the batch), batch 64, once in float32 and once in float64; gradient
    of all 6 parameters. Reported in ms per step and as a ratio to a hand-written numpy
    forward + backward, whose gradients are checked against nodegrad's at startup.
    Target: nodegrad <= 1.3x numpy; its replay no slower than nodegrad (<= 1.0x).
W3  Large arrays. [sin, x * 1.01, tanh, x + 0.5] twice, then [sin, tanh] (10 ops, values
    stay bounded) on 10 million float64 elements, then sum. Reported in ms and as a ratio
    to a hand-written numpy forward + backward that keeps the intermediates its backward
    needs. Target: nodegrad <= 1.10x numpy.
W4  Structured parameters. A dict of 200 (8, 8) float64 matrices; the loss is the sum over
    keys of sum(tanh(W_k @ x)), the gradient a dict. Reported in µs per parameter and as
    a ratio to PyTorch. Target: nodegrad <= 1.0x PyTorch; its replay no slower than
    nodegrad (<= 1.0x).
W5  Deep graph. The W1 op mix repeated to 100,000 ops. Reported in µs per op and as a
    ratio to PyTorch; a library that fails (a recursion limit, say) is reported as failed.
W6  A sampled batch from a dict of columns, written in plain numpy (``gather_loss``):
    from cols = {"x": (10000, 16), "y": (10000,)} float64, gather 4,096 rows by a fixed
    index array drawn with ``rng.integers`` (repeats included, as a sampler's),
    ``xb = cols["x"][idx]``, ``h = np.where(xb > 0, xb, 0.1 * xb)``,
    ``z = np.concatenate([xb, h], axis=1)`` (4096, 32), ``pred = z @ w`` with w (32, 1),
    loss ``np.mean((pred[:, 0] - cols["y"][idx]) ** 2)``. nodegrad differentiates that very
    function (numpy dispatches the calls on traced values to nodegrad ops); each peer has
    its own equivalent, side by side. Two cases: the gradient w.r.t. w only (the columns
    stay plain arrays, so only the tail from ``z @ w`` on is traced), and w.r.t. w and the
    columns, written as a user would, ``ng.grad(gather_loss, argnums=(0, 1))(w, cols, idx)``:
    the dict itself is differentiated and its gradient is a dict holding "x" and "y", so
    every library and the baseline compute the "y" gradient too (a 4,096-entry scatter,
    about 5 µs by hand). Reported in ms and as a ratio to a hand-written numpy forward +
    backward, checked against nodegrad's at startup: its forward makes ``gather_loss``'s own
    numpy calls; its backward avoids ``np.where`` and scatter-adds the rows' gradient the
    fastest correct plain-numpy way measured (``workloads/gather.py`` has the details).
    Target: nodegrad <= 1.10x numpy in both cases, and its replay too. With respect to w
    alone, the table also times the "shared prefix": the gather, where and concatenate that
    run on plain arrays in every library and in the baseline alike (about 87% of the
    baseline's time; why that case's ratio cannot reach 1.0x is in ``workloads/gather.py``).
W7  Peak memory of one gradient step (forward + backward): W3's chain on 10 million
    float64, and the W2 MLP in float32 and float64, for the hand-written numpy, nodegrad
    and each peer (JAX jitted). Not timed: each library and case runs in fresh child
    processes (two, the minimum kept) under glibc's default malloc settings, not the
    timing ones below (so that an 80 MB buffer is a mmap of its own and the resident set
    follows live memory). After a warm-up step, one step is measured by the rise of the
    resident set's high-water mark (reset through ``/proc/self/clear_refs``), another by
    tracemalloc's peak (n/a for PyTorch and JAX, whose allocators bypass it). Reported in
    MiB and as a multiple of the input (the chain's array; the MLP's parameters + batch),
    and as a ratio of RSS peaks to PyTorch. Target: nodegrad <= 1.00x PyTorch. The replay
    row is recorded in its child before the warm-up, so both measured steps are replays,
    and its warm-up's gradient is checked against eager nodegrad's in the same child (the
    "check" column). Target: its RSS peak <= 1.00x eager nodegrad's.
W8  Higher order on a 5-element function: ``ng.hvp`` against autograd's
    ``hessian_vector_product`` and PyTorch's double backward, and ``check_grads(order=2)``
    in forward and reverse mode against autograd's. In µs per call, as a ratio to autograd.
    Target: nodegrad <= 1.0x autograd in both.
W9  Per-example gradients: ``ng.vmap(ng.grad(loss), in_axes=(None, 0, 0))(params, x,
    labels)`` of the W2 MLP in float64 over 1,000 examples (one input row and its label
    each, the loss the cross-entropy of that row), against a Python loop of ``ng.grad``
    over the rows, ``np.stack``-ed (the baseline), a hand-written numpy batch backward that
    keeps each example's outer products (the floor: the result is 2.15 GB) and
    ``torch.func.vmap(torch.func.grad(loss))``; every row's gradients checked against the
    loop's. In ms, as a ratio to the loop. Target: nodegrad <= 1.10x PyTorch in the same
    run; where torch does not import, its row says so and the target is nodegrad <= 1.10x
    the hand-written numpy floor.
W10 ``ng.jacobian`` of ``tanh(W @ x) + x * x``, 100 -> 100 (one sweep of batched
    cotangents), against the loop it replaced (one ``ng.vjp`` back call per row of the
    identity, ``np.stack``-ed) and ``torch.func.jacrev``. In ms, as a ratio to the loop.
    Targets: nodegrad <= 0.2x the loop and <= 1.0x PyTorch.
W11 The memory of ``vmap``'s ``chunk_size`` against the unchunked call, in three cases:
    on 10,000 examples of a smaller MLP (64-32-32-10; W2's would make the result 21.5 GB)
    with ``chunk_size=100``, W9's per-example gradients (the result dominates) and the
    squared norm of each example's gradient (the work dominates); and each example's
    ``np.outer(np.tanh(x), x)`` on 400 x 300 with ``chunk_size=100`` (the result
    dominates, 275 MiB). Not timed: tracemalloc's peak of one call in this process (after
    a warm-up call that checks the chunked result against the unchunked one), in MiB, as
    a multiple of the result, and the peak above the result (the working memory) as a
    ratio to the unchunked call's. Target: the chunked peak above the result <= the
    chunk's share (chunk_size / examples) of the unchunked peak above the result plus
    that share of the result (the chunk's own, alive while it is written into the
    whole), plus 1 MiB for what does not shrink with the chunk; the bound is printed in
    MiB, and worked out under the table.
W12 Row-sparse gradients of a lookup table: one training step (forward, gradient, SGD step,
    learning rate 0.1) of params = {"table": (1,000,000, 64), "mlp": {"w1": (64, 32), "b1",
    "w2": (32, 1), "b2"}} float64 on 1,000 row ids drawn with a fixed seed (repeats
    allowed) and float targets, the loss the mean squared error of ``tanh(table[ids] @ w1 +
    b1) @ w2 + b2`` (``table_loss``, plain numpy). Rows: "nodegrad (dense)", ``ng.grad``
    then ``ng.optim.sgd`` (the baseline: a dense 512 MB table gradient and a new table);
    "nodegrad (sparse_rows)", ``ng.grad(..., sparse_rows=True)`` then ``ng.optim.sgd``
    (an ``ng.RowSparse`` gradient, its rows subtracted from the table in place);
    PyTorch's ``Embedding(sparse=True)`` with the same MLP in ``Linear`` layers,
    ``zero_grad()`` (set_to_none), ``backward()`` and ``torch.optim.SGD``; and, for
    reference, ``Embedding(sparse=False)``. Each row steps its own copy of the same start
    and keeps stepping it from run to run (copying the table per run would cost more than
    the sparse step); the check column compares the parameters after the warm-up, the
    first step from the start, with nodegrad's dense step's. In ms, as a ratio to the
    dense step. Target: the sparse step <= 0.01x the dense one; its ratio to PyTorch's
    sparse step is shown beside it, not judged. A second block, not timed, gives the
    memory of the table's gradient from one call: ``RowSparse.nbytes`` (rows and
    indices), the dense array's ``nbytes``, PyTorch's sparse gradient's values and indices
    after ``coalesce()``; each is checked, densified, against the dense gradient. Target:
    the sparse gradient <= 1 MiB.
W13 scipy.sparse matrices (``workloads/sparse_matrices.py``). A logistic regression's
    gradient on a ``csr_array`` X of 100,000 x 50,000 with 5,000,000 stored values (0.1%;
    random distinct coordinates, int32 indices: 60.4 MB with its data), labels in {-1, +1},
    loss ``np.mean(np.logaddexp(0.0, -y * (X @ w)))``, in two cases: (a) with respect to the
    dense weights w, ``ng.grad(logistic_loss)(w, X, y)`` (X not differentiated), against a
    hand-written scipy step (``z = X @ w``, the loss's cotangent r, ``X.T @ r``); (b) with
    respect to X's stored values, ``ng.grad(logistic_loss, argnums=1)(w, X, y)``, a
    ``csr_array`` gradient on X's pattern, against the same forward and ``w[X.indices] *
    np.repeat(r, np.diff(X.indptr))``. PyTorch: ``torch.sparse_csr_tensor`` built once from
    the same arrays; (a) ``X @ w`` with w requiring grad, (b) the CSR tensor a leaf requiring
    grad, ``torch.sparse.mm(X, w[:, None])`` (a CSR gradient on the pattern); and three more
    ways of (b), each run only where its backward does not form the dense m x n gradient (a
    probe under ``torch.profiler`` at 3,000 x 2,000 decides, and the row names the op that
    allocated it): ``X @ w`` with a 1-D w, the values requiring grad through
    ``sparse_csr_tensor`` per call, and a COO leaf. In ms, as a ratio to the hand-written
    step. Targets: nodegrad <= 1.20x the hand-written step and <= 1.00x PyTorch's CSR path
    in both cases. Then the memory of one step of each case, tracemalloc's peak in this
    process above what existed before it (the gradient returned counts), for the
    hand-written step and nodegrad, in MiB and as a multiple of the matrix's bytes (data +
    indices + indptr). Target: nodegrad <= 2.00x the matrix's bytes. W13s, same key:
    ``spsolve``'s gradient on the 2-D Poisson problem of a 100 x 100 grid (10,000 unknowns,
    5-point Laplacian as CSC), loss ``0.5 * ||spsolve(A, b) - t||^2`` with
    ``nodegrad.scipy.sparse.linalg.spsolve``, with respect to b and to A's stored values,
    against the forward solve alone (``scipy.sparse.linalg.spsolve(A, b)``), beside a
    hand-written ``splu`` + solve + adjoint solve; nodegrad's kept factorizations are
    dropped before each judged call ("fresh factorization"), and shown kept in a row of
    their own. ``torch.sparse.spsolve`` has no CPU kernel (its row says so). Target:
    nodegrad (fresh factorization) <= 3.0x the forward solve.
W14 A table pipeline's gradient, written in pandas (``pipeline_loss``): a sales table of
    100,000 rows (float price and cost, each with 1% NaN; a string store key among 200
    stores; int units) and params = {"effect": a DataFrame of 200 rows (store, effect),
    "slope": a float}; ``joined = sales.merge(params["effect"], on="store", how="left")``,
    ``resid = joined["cost"] - (joined["effect"] * joined["units"] + params["slope"] *
    joined["price"])``, loss ``((resid - resid.groupby(joined["store"]).transform("mean"))
    ** 2).mean()``, NaN skipped as pandas skips it (an effect added without ``units`` would
    be removed by the per-store demeaning, its gradient zero). Rows: nodegrad,
    ``ng.value_and_grad(pipeline_loss)(params, sales)`` (the parameters differentiated, the
    table not); its replay; a hand-written numpy forward + backward given the same two
    DataFrames, which factorizes the store column and looks its stores up in the effect
    table on every step (what a user handed tables each step does; ``workloads/
    table_pipeline.py`` says why it is not hoisted), checked against nodegrad's value and
    gradient at startup; and "pandas (forward only)", the loss on plain pandas, for scale.
    No peer row: PyTorch, HIPS autograd, MyGrad and JAX take no DataFrames. In ms, as a
    ratio to the numpy baseline. Target: nodegrad <= 2.0x the pandas forward in the same
    run (the ratio beside it): pandas chooses the rows (its merge alone is about two numpy
    steps), so nodegrad's floor, that merge and pandas' groups plus the numpy step's
    arithmetic, is about the pandas forward's time. The replay row fails: a merge on a
    string key of a table argument makes ``ng.replay`` run eagerly (a ``ReplayWarning``);
    were it to replay, its target is eager nodegrad's time.
W15 One L-BFGS fit of a logistic regression, the whole fit timed: 10,000 rows of 1,000
    float64 features (a fixed seed; the columns' scales spread from 0.1 to 3.0), labels in
    {-1, +1}, loss ``mean(logaddexp(0, -y * (X @ w + b))) + 0.5e-3 * ||w||^2`` (the L2 term
    makes the optimum unique), parameters an attrs record ``Logistic(w, b)``. Every row but
    one runs ``scipy.optimize.minimize(..., method="L-BFGS-B")`` from zero with ``maxiter``
    100, ``gtol`` 1e-20 and ``ftol`` 0, so that each makes exactly 100 iterations: the
    baseline with ``jac=True`` and a hand-written numpy loss and gradient (checked against
    nodegrad's at startup); ``ng.optim.minimize(loss, Logistic(np.zeros(1000), 0.0), X, y,
    method="L-BFGS-B", options=...)`` on the record; autograd's ``value_and_grad`` and
    PyTorch's gradients on the flat vector (autograd cannot take an attrs record); JAX
    jitted, where it imports. The other is ``torch.optim.LBFGS`` (100 iterations, history
    10, strong Wolfe line search), whose line search is its own. The PyTorch rows are
    always listed ("not run: ..." where torch does not import). In ms per fit, as a ratio
    to the numpy baseline; the check column compares each row's final loss with the
    baseline's (1e-6 relative) and shows its ``nit`` and ``nfev``, flagging a scipy-driven
    row whose count differs from the baseline's. Targets: nodegrad <= 1.10x numpy and no
    slower than the fastest of the autograd and PyTorch rows that ran (named in the target
    column).

Peers, each skipped with a note when it cannot be imported: PyTorch (CPU), HIPS autograd,
MyGrad and JAX (eager for W1/W4/W5, where per-op cost is the point; jitted for W2/W3/W6/W7/W15);
none in W14; in W13 and W15 PyTorch (and in W15 autograd and JAX).

Replay rows (W0, W1, W2, W4, W6, W7, W14), "nodegrad (replay)": ``ng.replay`` of the very
gradient function the nodegrad row calls, on the same arguments. Building the step records
it and replays it once, so the warm-up and every timed run are replays; if ``ng.replay``
gives up on the function (a ``ReplayWarning``, after which it runs eagerly) or records a
second program for the same arguments, the row shows that as its failure instead of timing
eager nodegrad under the replay's name. Its check cell adds the comparison with eager
nodegrad's gradient: "= eager" is bit for bit, what ``ng.replay`` promises. A target
against another row than the baseline (W0's PyTorch, eager nodegrad) names that row in the
target column, and the ratio to it is shown in parentheses beside the ratio to the baseline.

Method (the timed workloads, all but W7, W11 and the memory blocks of W12 and W13): each library runs
each case once as a warm-up (its gradient is compared with the baseline's: the "check"
column). Then the libraries are timed with ``time.perf_counter`` in interleaved rounds
(W0: 10 rounds of 20 runs of 20 calls each; W1/W2/W6/W10: 10 rounds of 10 back-to-back
runs each; W3: 7 rounds of 1; W4: 10 rounds of 5; W5: 3 rounds of 1; W9: 5 rounds of 1;
W12: 10 rounds of 5; W13: 7 rounds of 2, W13s: 10 rounds of 3; W14: 10 rounds of 10; W15: 10 rounds of 1), so
that load from other processes on a shared
machine hits all of them alike. Ratios use the minimum over all runs; the median is shown
beside it. The garbage collector stays enabled (it is part of what a user pays);
``gc.collect()`` runs once before the first round.

Environment: fresh large allocations are page-fault bound on these machines, so every
library runs under the same glibc malloc settings (W7's child processes excepted), and
under the same thread settings. Both are read only at process start, so unless they
already have the wanted values the script re-executes itself with them set. ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` default to 16 GiB (glibc 2.36 accepts values above 32 MiB when
they are set explicitly; the 32 MiB cap applies only to the dynamic threshold), which
keeps freed 80 MB buffers in the heap for reuse (the header shows a page-fault check).
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``torch.set_num_threads`` get the same value for every library: ``--threads N``, else the
caller's ``OMP_NUM_THREADS``, else 1. One thread is the default because these machines
are shared: with two BLAS threads on two cores, any other busy process makes each
OpenBLAS matmul wait for scheduler ticks, and a 0.4 ms W2 step was measured at 84-96 ms.
Single-threaded numbers also isolate what the autodiff layer costs. The header records
all of it.

Code: this file parses the command line, sets up the environment, runs the cases and
prints the table. The package ``workloads/`` next to it holds one module per workload
(``chains`` for W1 and W5, ``mlp``, ``large_chain``, ``dict_params``, ``gather``,
``memory`` for W7 with ``memory_child``, its child processes' entry point,
``higher_order``, ``batching`` for W9 to W11, ``sparse_rows`` for W12, ``sparse_matrices``
for W13 (which this file adds to the package's table, with its timing rounds), ``table_pipeline``
for W14, ``fitting`` for W15), each with its own docstring, and the shared ``environment``, ``libraries`` and
``timing``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from workloads import WORKLOADS as PACKAGE_WORKLOADS
from workloads import sparse_matrices, verify_hand_written_references
from workloads.batching import (
    TracedMemoryCase,
    TracedMemoryRow,
    measure_traced_memory_case,
    traced_memory_notes,
)
from workloads.environment import environment_report, refault_count, relaunch_with_environment
from workloads.fitting import FitCase, run_fit_case
from workloads.libraries import PEERS, available_libraries, display_name
from workloads.memory import MIB, MemoryCase, MemoryRow, measure_memory_case, memory_notes
from workloads.sparse_matrices import (
    SparseMemoryCase,
    SparseMemoryRow,
    measure_sparse_memory_case,
    sparse_memory_notes,
    with_w13,
    with_w13_timing,
)
from workloads.sparse_rows import (
    GradientMemoryCase,
    GradientMemoryRow,
    LabelledCase,
    gradient_memory_notes,
    measure_gradient_memory_case,
    run_labelled_case,
)
from workloads.timing import QUICK, Case, Row, Sizes, run_case

# The workloads in table order: the package's, with W13 (workloads/sparse_matrices.py) in its place.
WORKLOADS = with_w13(PACKAGE_WORKLOADS)

AnyRow = Row | MemoryRow | TracedMemoryRow | GradientMemoryRow | SparseMemoryRow

# -- report ---------------------------------------------------------------------------------------


def print_header(env: dict[str, Any]) -> None:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    print(f"nodegrad benchmarks, {env['date']}")
    print(f"machine: {env['cpu']}, {env['cores']} cores; {env['platform']}; Python {env['python']}")
    print(f"libraries: {versions}; numpy BLAS: {env['numpy_blas']}")
    for name, reason in env["skipped"].items():
        print(f"skipped: {name} ({reason})")
    by = f" (set by this script: {', '.join(env['set_by_script'])})" if env["set_by_script"] else " (as given)"
    malloc = " ".join(f"{k}={v}" for k, v in env["malloc"].items())
    reuse = "yes" if env["refaults_80MB"] < 10 else "NO"
    print(f"malloc: {malloc}; freed 80 MB buffer reused: {reuse} ({env['refaults_80MB']} page faults refilling it)")
    threads = " ".join(f"{k}={v}" for k, v in env["threads"].items())
    print(f"threads: {threads}{by}")
    rounds = ", ".join(f"{k} {n}x{env['runs_per_round'][k]}" for k, n in env["rounds"].items())
    print(f"timing: {env['timing']}; rounds x runs per round: {rounds}")


def times(ratio: float) -> str:
    """A ratio as "1.23x"; below 0.1 with two significant digits ("0.014x"), so that a
    ratio judged against 0.01x does not read as 0.01x when it is 0.014x."""
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def ratio_cell(ratio: float | None, peer_target: tuple[str, float] | None, peer_ratio: float | None) -> str:
    """The ratio to the baseline, and beside it the ratio to the row a second target names."""
    cell = times(ratio) if ratio is not None else "n/a"
    if peer_target is not None and peer_ratio is not None:
        cell += f" ({times(peer_ratio)} {display_name(peer_target[0])})"
    return cell


def format_row(row: Row) -> list[str]:
    """The table cells of a row that has times."""
    return [
        display_name(row.library, row.variant),
        f"{row.value:,.3f}",
        f"{row.median_value:,.3f}",
        row.unit,
        ratio_cell(row.ratio, row.peer_target, row.peer_ratio),
        *target_cells(row.target, row.met, row.peer_target),
        row.check,
    ]


def format_memory_row(row: MemoryRow) -> list[str]:
    """The table cells of a row that has peak memory (W7)."""

    def mib_and_multiple(n_bytes: int | None) -> list[str]:
        if n_bytes is None:
            return ["n/a", "n/a"]
        return [f"{n_bytes / MIB:,.2f}", f"{n_bytes / row.input_bytes:.2f}x"]

    return [
        display_name(row.library, row.variant),
        *mib_and_multiple(row.rss_peak_bytes),
        *mib_and_multiple(row.traced_peak_bytes),
        ratio_cell(row.ratio, row.peer_target, row.peer_ratio),
        *target_cells(row.target, row.met, row.peer_target),
        row.check,
    ]


def format_traced_memory_row(row: TracedMemoryRow) -> list[str]:
    """The table cells of a row that has a traced peak (W11)."""

    def mib(n_bytes: int | None) -> str:
        return f"{n_bytes / MIB:,.2f}" if n_bytes is not None else "n/a"

    multiple = f"{row.peak_bytes / row.result_bytes:.2f}x" if row.peak_bytes and row.result_bytes else "n/a"
    ratio = times(row.ratio) if row.ratio is not None else "n/a"
    bound = f"<= {mib(row.bound_bytes)} MiB above" if row.bound_bytes is not None else ""
    return [
        display_name(row.library, row.variant),
        mib(row.peak_bytes),
        multiple,
        mib(row.above_result_bytes),
        ratio,
        bound,
        {None: "n/a" if bound else "", True: "yes", False: "NO"}[row.met],
        row.check,
    ]


def format_gradient_memory_row(row: GradientMemoryRow) -> list[str]:
    """The table cells of a row that has the bytes of a gradient (W12); its target is in MiB."""
    limit = f"<= {row.target_bytes / MIB:.2f} MiB" if row.target_bytes is not None else ""
    return [
        display_name(row.library, row.variant),
        f"{row.gradient_bytes / MIB:,.3f}" if row.gradient_bytes is not None else "n/a",
        f"{row.rows_held:,}" if row.rows_held is not None else "n/a",
        times(row.ratio) if row.ratio is not None else "n/a",
        limit,
        {None: "n/a" if limit else "", True: "yes", False: "NO"}[row.met],
        row.check,
    ]


def format_sparse_memory_row(row: SparseMemoryRow) -> list[str]:
    """The table cells of a row that has the traced peak of one step (W13), judged as a
    multiple of the matrix's bytes."""
    limit = f"<= {row.target:.2f}x matrix" if row.target is not None else ""
    return [
        display_name(row.library, row.variant),
        f"{row.peak_bytes / MIB:,.2f}" if row.peak_bytes is not None else "n/a",
        f"{row.multiple:.4f}x" if row.multiple is not None else "n/a",
        times(row.ratio) if row.ratio is not None else "n/a",
        limit,
        {None: "n/a" if limit else "", True: "yes", False: "NO"}[row.met],
        row.check,
    ]


def target_cells(target: float | None, met: bool | None, peer_target: tuple[str, float] | None = None) -> list[str]:
    """The "target" and "met?" cells: empty on rows without a target, n/a where it is not judged.

    A target against another row than the baseline (W0's PyTorch, a replay's eager
    nodegrad) names that row: "<= 2.00x and <= 0.50x pytorch (cpu)", "<= 1.00x nodegrad".
    An infinite one is no target: that row's ratio is only shown beside (W12's PyTorch).
    """
    limits = [f"<= {target:.2f}x"] if target is not None else []
    if peer_target is not None and math.isfinite(peer_target[1]):
        limits.append(f"<= {peer_target[1]:.2f}x {display_name(peer_target[0])}")
    met_cell = {None: "n/a" if limits else "", True: "yes", False: "NO"}[met]
    return [" and ".join(limits), met_cell]


@dataclass(frozen=True)
class TableLayout:
    """The columns of one kind of row."""

    headers: tuple[str, ...]
    left_aligned: tuple[int, ...]
    cells: Callable[[Any], list[str]]


LAYOUTS: dict[type, TableLayout] = {
    Row: TableLayout(("library", "min", "median", "unit", "ratio", "target", "met?", "check"), (0, 3, 7), format_row),
    MemoryRow: TableLayout(
        ("library", "RSS MiB", "x input", "traced MiB", "x input", "ratio", "target", "met?", "check"),
        (0, 8),
        format_memory_row,
    ),
    TracedMemoryRow: TableLayout(
        ("library", "traced MiB", "x result", "above result MiB", "ratio", "target", "met?", "check"),
        (0, 7),
        format_traced_memory_row,
    ),
    GradientMemoryRow: TableLayout(
        ("library", "table grad MiB", "rows", "ratio", "target", "met?", "check"),
        (0, 6),
        format_gradient_memory_row,
    ),
    SparseMemoryRow: TableLayout(
        ("library", "traced MiB", "x matrix", "ratio", "target", "met?", "check"), (0, 6), format_sparse_memory_row
    ),
}


def table_line(cells: Sequence[str], widths: Sequence[int], left_aligned: Sequence[int]) -> str:
    padded = (
        c.ljust(w) if i in left_aligned else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )
    return "  " + "  ".join(padded).rstrip()


def column_widths(rows: Sequence[AnyRow], layout: TableLayout, name_width: int) -> list[int]:
    cells = [layout.cells(r) for r in rows if not r.error]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(layout.headers)]
    widths[0] = max(widths[0], name_width)
    return widths


def print_table(rows: Sequence[AnyRow]) -> None:
    """One block per case: a title line naming the baseline, then a line per library.

    Timed rows and memory rows have their own columns; the library names align across both.
    """
    name_width = max((len(display_name(r.library, r.variant)) for r in rows), default=0)
    widths = {
        kind: column_widths([r for r in rows if type(r) is kind], layout, name_width)
        for kind, layout in LAYOUTS.items()
    }
    case = None
    for row in rows:
        layout, kind_widths = LAYOUTS[type(row)], widths[type(row)]
        if row.case != case:
            case = row.case
            print(f"\n{case}: ratio to {display_name(row.baseline)}")
            print(table_line(layout.headers, kind_widths, layout.left_aligned))
        if row.error:
            print(f"  {display_name(row.library, row.variant).ljust(kind_widths[0])}  {row.error}")
        else:
            print(table_line(layout.cells(row), kind_widths, layout.left_aligned))


def run_any_case(
    case: Case | MemoryCase | TracedMemoryCase | GradientMemoryCase | SparseMemoryCase, judge_targets: bool
) -> Sequence[AnyRow]:
    """Time a case, or measure its peak memory (W7 in child processes, W11 and W13 in this
    one), or the bytes of a gradient (W12); W15's fits also report their iterations and evaluations."""
    if isinstance(case, SparseMemoryCase):
        return measure_sparse_memory_case(case, judge_targets)
    if isinstance(case, MemoryCase):
        return measure_memory_case(case, judge_targets)
    if isinstance(case, TracedMemoryCase):
        return measure_traced_memory_case(case, judge_targets)
    if isinstance(case, GradientMemoryCase):
        return measure_gradient_memory_case(case, judge_targets)
    if isinstance(case, LabelledCase):
        return run_labelled_case(case, judge_targets)
    if isinstance(case, FitCase):
        return run_fit_case(case, judge_targets)
    return run_case(case, judge_targets)


# -- main ---------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and one timed run (smoke test)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--json", metavar="PATH", help="also write the environment and results as JSON")
    parser.add_argument("--rounds", type=int, help="timing rounds for every workload (see Sizes)")
    parser.add_argument(
        "--threads", type=int, help="BLAS/OpenMP/torch threads for every library (default: $OMP_NUM_THREADS or 1)"
    )
    args = parser.parse_args(argv)
    args.only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    unknown = args.only - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workload(s) {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    for name in ("rounds", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (in dicts, lists and tuples) made ``None``."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    relaunch_with_environment(args.threads)
    sizes = with_w13_timing(QUICK if args.quick else Sizes())
    if args.rounds:
        sizes = replace(sizes, rounds=dict.fromkeys(sizes.rounds, args.rounds))
    refaults = refault_count()
    versions, skipped = available_libraries(int(os.environ["OMP_NUM_THREADS"]))
    env = environment_report(versions, skipped, sizes, refaults)
    print_header(env)
    verify_hand_written_references(sizes)
    sparse_matrices.check_hand_written(sizes)
    print(
        "check: hand-written numpy gradients equal nodegrad's (MLP float32/float64, W3 chain, W6 both variants, "
        "W13 sparse logistic regression and spsolve, W14 table pipeline, W15 logistic regression)"
    )
    libraries = ["nodegrad", *(name for name in PEERS if name in versions)]
    rows: list[AnyRow] = []
    for key, make_cases in WORKLOADS.items():
        if key in args.only:
            for case in make_cases(sizes, libraries):
                rows.extend(run_any_case(case, sizes.judge_targets))
    print_table(rows)
    notes = memory_notes([r for r in rows if isinstance(r, MemoryRow)])
    notes += traced_memory_notes([r for r in rows if isinstance(r, TracedMemoryRow)])
    notes += gradient_memory_notes([r for r in rows if isinstance(r, GradientMemoryRow)])
    notes += sparse_memory_notes([r for r in rows if isinstance(r, SparseMemoryRow)])
    if notes:
        print("\n" + "\n".join(notes))
    if not sizes.judge_targets:
        print("\n(--quick: sizes differ from the targets' definitions, so met? is n/a)")
    if args.json:
        with open(args.json, "w") as f:
            # strict JSON: a limit that is never missed (inf, a ratio shown beside) is written null
            results = _finite({"environment": env, "results": [asdict(r) for r in rows]})
            json.dump(results, f, indent=2, allow_nan=False)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
