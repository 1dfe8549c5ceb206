"""W13: scipy.sparse matrices: a logistic regression's gradient on a CSR matrix, and ``spsolve``.

The logistic regression (:func:`logistic_inputs`, a fixed seed): a ``scipy.sparse.csr_array``
``X`` of 100,000 rows and 50,000 columns holding exactly 5,000,000 stored values (0.1%
density; standard normal values at distinct random coordinates, drawn as sorted linear
positions, so the matrix is built in well under a second: ``scipy.sparse.random`` would
allocate 40 GB), int32 ``indices`` and ``indptr`` (60.4 MB in all, data 40 MB), labels
``y`` in {-1, +1} drawn from a logistic model, and the point ``w`` (50,000 weights) the
gradient is taken at. The loss (:func:`logistic_loss`, nodegrad differentiates this very
function) is::

    np.mean(np.logaddexp(0.0, -y * (X @ w)))

Two timed cases, in ms per step (forward + backward, the gradient returned) and as a ratio
to the hand-written numpy/scipy step:

(a) with respect to the dense weights ``w``, ``X`` a non-differentiated argument:
    ``ng.grad(logistic_loss)(w, X, y)``. Baseline (:func:`numpy_weights_grad`): ``z = X @ w``,
    ``r = dloss/dz`` by ``np.logaddexp`` (the sigmoid from it, without overflow), ``X.T @ r``.
    PyTorch: ``torch.sparse_csr_tensor`` built once from the same three arrays (int32
    indices, shared with scipy's), ``w`` requiring grad, ``X @ w`` and
    ``torch.autograd.grad``. (``torch.sparse.mm(X, w[:, None])`` takes the same time: its
    backward transposes the CSR matrix on every call, about 0.5 s here.)
(b) with respect to the matrix's stored values, ``X`` the differentiated argument:
    ``ng.grad(logistic_loss, argnums=1)(w, X, y)``, whose gradient is a ``csr_array`` on
    ``X``'s pattern (checked once when the step is built; the step returns its ``.data``).
    Baseline (:func:`numpy_values_grad`): the same forward, then ``g[k] = r[row_k] *
    w[col_k]`` as ``np.take(w, X.indices)`` times ``np.repeat(r, np.diff(X.indptr))`` in
    place, in a ``csr_array`` sharing ``X``'s index arrays. The gather comes first:
    ``np.take`` casts the int32 indices to an int64 copy (40 MB) for as long as it runs;
    taken first, that copy is gone before the repeat is made, so the step peaks at two
    entry-sized arrays (80 MB), not three. (``w[X.indices]`` casts in buffered chunks and
    peaks the same, but was about 1 ms slower under the runner's malloc settings.)
    PyTorch's CSR path is a leaf ``torch.sparse_csr_tensor(...,
    requires_grad=True)`` with ``torch.sparse.mm(X, w[:, None])``: its backward is a sampled
    product on the pattern, and the gradient a CSR tensor on the same pattern (checked
    once). Three more ways of writing it in PyTorch are rows too, run only where their
    backward does not form the dense 100,000 x 50,000 gradient (40 GB): ``X @ w`` with a
    1-D ``w`` on the CSR leaf, the values requiring grad through
    ``torch.sparse_csr_tensor(crow, col, values)`` on every call, and a coalesced COO leaf
    (``torch.sparse_coo_tensor``, PyTorch's older sparse path) with ``torch.sparse.mm``.
    Whether one does is found by a probe (:func:`dense_gradient_probe`): the same code on
    a 3,000 x 2,000 matrix of 3,000 values, once under ``torch.profiler`` with
    ``profile_memory``; an op allocating at least half the dense matrix's bytes at once
    densifies. Such a row says so ("not run: ...") wherever the dense gradient would pass
    1 GiB, and runs (``--quick``) where it would not.

Targets, both cases: nodegrad <= 1.20x the hand-written step and faster than PyTorch's CSR
path (<= 1.00x the "pytorch (cpu)" row, shown beside the ratio; where torch does not
import, its row says so and that target is left out).

Memory (:class:`SparseMemoryCase`, not timed): tracemalloc's peak during one step of each
case, in this process (numpy reports its buffers to tracemalloc; PyTorch's allocator does
not, so PyTorch is not measured), above what was traced when it started: the matrix, ``w``
and ``y`` exist before it and do not count; the gradient returned does. The minimum of
``Sizes.memory_runs`` measured steps, after a warm-up whose gradient is checked against the
baseline's. Target: nodegrad's peak <= 2x the matrix's own bytes (data + indices +
indptr), the O(nnz) the sparse gradient needs; the numpy row is shown for scale and the
ratio column is nodegrad's peak over it.

W13s, ``spsolve`` (:func:`poisson_inputs`): the 2-D Poisson problem on a 100 x 100 grid,
10,000 unknowns, its 5-point Laplacian a ``csc_array`` (49,600 stored values), ``b`` and a
target ``t`` standard normal; the loss (:func:`solve_loss`) is ``0.5 * sum((x - t)**2)``
for ``x = spsolve(A, b)`` (nodegrad's, ``nodegrad.scipy.sparse.linalg.spsolve``). Two
cases, the gradient with respect to ``b`` (``ng.grad(lambda b: solve_loss(A, b, t))(b)``)
and with respect to ``A``'s stored values (``ng.grad(lambda A: solve_loss(A, b, t))(A)``,
a ``csc_array``). The baseline is the forward solve alone, ``scipy.sparse.linalg.spsolve(A,
b)`` (SuperLU, COLAMD ordering: the factorization is nearly all of it). Rows:

- "scipy splu + adjoint solve (by hand)": ``splu(A)``, ``x = lu.solve(b)``, ``lam =
  lu.solve(x - t, trans="T")``; ``lam`` is ``b``'s gradient and ``-lam[row_k] * x[col_k]``
  that of stored value ``k``. The reference of the check column.
- "nodegrad (fresh factorization)", the judged row: nodegrad keeps the LU factorizations
  of its last few solves (``nodegrad.ops.sparse.solve._FACTORS``, keyed by the identity of
  the values and of the pattern object, and checked against the values), and the adjoint
  solve of a call reuses its forward's. A later call may find one too, if it meets the
  same objects. This row empties that cache before each call (the row fails, saying so,
  if it is gone), so every call factors once and solves twice, as a gradient for a new
  ``A`` does: the cost the target is about.
- "nodegrad (factorization kept)": the same calls with the cache left alone, as a loop
  with a fixed ``A`` gets them (the closed-over ``A``'s values are the same array on every
  call). Shown, not judged: a call that reuses a factorization costs a fraction of a
  forward that factors (1.3 ms against 25 ms, 0.05x, in a run while ``pattern_of`` kept one
  pattern per matrix); where ``pattern_of`` makes a new pattern for every call, the key
  misses and this row takes the fresh row's time. Its first run in each round cannot
  reuse anything, the judged row having emptied the cache; the minimum does not show that.
- "pytorch (cpu)": ``torch.sparse.spsolve`` on the CSR Laplacian, which has no CPU kernel
  in the PyTorch installed here (the row says so; it would be timed if it had one).

Target: nodegrad (fresh factorization) <= 3.0x the forward solve.

``--quick`` sizes (:data:`QUICK_SPARSE`): 2,000 x 1,000 with 20,000 stored values (1%),
and a 10 x 10 grid; targets not judged.

The sizes are this module's own (:func:`sparse_sizes`: the full ones where the run judges
targets, else the quick ones), and so are its timing rounds (:func:`with_w13_timing`:
``Sizes.rounds`` keys "W13" and "W13s", added by ``run.py`` unless given).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from .batching import traced_peak, warmed_step
from .libraries import NO_GRADIENT, Step, display_name
from .memory import MIB
from .sparse_rows import LabelledCase
from .timing import Case, PeerUnavailableError, Sizes, short_error

WEIGHTS_TARGET = 1.20  # nodegrad's time over the hand-written step's, both logistic cases
VALUES_TARGET = 1.20
PEER_LIMIT = 1.0  # nodegrad's time over PyTorch's CSR path
MEMORY_LIMIT = 2.0  # nodegrad's traced peak over the matrix's own bytes
SOLVE_TARGET = 3.0  # nodegrad's spsolve gradient over the forward solve
DENSE_RUN_LIMIT = 1 << 30  # a PyTorch way that forms the dense gradient runs only below this many bytes of it
PROBE_SHAPE = (3000, 2000)  # the densification probe's matrix, and its stored values
PROBE_NNZ = 3000

# Row names. Keys other than "numpy", "nodegrad" and "torch" are their own display names.
TORCH_CSR_MATVEC = "pytorch CSR leaf, X @ w (1-D)"
TORCH_CSR_VALUES = "pytorch CSR values.requires_grad_()"
TORCH_COO = "pytorch COO leaf, torch.sparse.mm"
TORCH_VARIANT = {"torch": "CSR leaf, torch.sparse.mm"}
FORWARD_SOLVE = "scipy spsolve (forward only)"
HAND_SOLVE = "scipy splu + adjoint solve (by hand)"
KEPT_SOLVE = "nodegrad (factorization kept)"
FRESH_VARIANT = "fresh factorization"
# The forward solve computes no gradient: its check cell says so, and the check column's
# reference is the next row's (timing.prepare_library reads this table).
NO_GRADIENT.setdefault(FORWARD_SOLVE, "forward only")

# Timing rounds x runs per round (with_w13_timing): the PyTorch row of case (a) takes about
# 0.5 s a run, the others 15-60 ms.
ROUNDS = {"W13": 7, "W13s": 10}
RUNS_PER_ROUND = {"W13": 2, "W13s": 3}


@dataclass(frozen=True)
class SparseSizes:
    """W13's problem sizes: the CSR matrix, and the side of the Poisson grid (W13s)."""

    rows: int
    cols: int
    nnz: int
    grid: int


FULL_SPARSE = SparseSizes(rows=100_000, cols=50_000, nnz=5_000_000, grid=100)
QUICK_SPARSE = SparseSizes(rows=2_000, cols=1_000, nnz=20_000, grid=10)


def sparse_sizes(sizes: Sizes) -> SparseSizes:
    """The full sizes where the run judges targets (they are defined for those), else ``--quick``'s."""
    return FULL_SPARSE if sizes.judge_targets else QUICK_SPARSE


def with_w13_timing(sizes: Sizes) -> Sizes:
    """``sizes`` with W13's rounds and runs per round (one each under ``--quick``), unless given."""
    quick = not sizes.judge_targets
    rounds = _in_place(sizes.rounds, dict.fromkeys(ROUNDS, 1) if quick else ROUNDS)
    runs = _in_place(sizes.runs_per_round, dict.fromkeys(RUNS_PER_ROUND, 1) if quick else RUNS_PER_ROUND)
    return replace(sizes, rounds=rounds, runs_per_round=runs)


def _in_place(given: dict[str, int], ours: dict[str, int]) -> dict[str, int]:
    """``given`` with ``ours`` added before "W14" (the header lists them in table order), or
    at the end; where ``given`` has a key already, its value stays."""
    table: dict[str, int] = {}
    for key, value in given.items():
        if key == "W14":
            table.update({k: v for k, v in ours.items() if k not in given})
        table[key] = value
    table.update({k: v for k, v in ours.items() if k not in table})
    return table


def with_w13(workloads: dict[str, Any]) -> dict[str, Any]:
    """The workload table with W13 in its place, between W12 and W14."""
    table: dict[str, Any] = {}
    for key, make in workloads.items():
        if key == "W14" and "W13" not in table:
            table["W13"] = w13_cases
        table[key] = make
    table.setdefault("W13", w13_cases)
    return table


def matrix_bytes(x: Any) -> int:
    """A compressed matrix's own bytes: data, indices and indptr."""
    return int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)


# -- the logistic regression -------------------------------------------------------------------


def random_csr(rows: int, cols: int, nnz: int, rng: np.random.Generator) -> Any:
    """A ``csr_array`` of exactly ``nnz`` standard normal values at distinct random
    coordinates, int32 index arrays, canonical (sorted, no duplicates): drawn as sorted
    linear positions, duplicates dropped and a random surplus removed. No dense or
    rows x cols array is ever made (``scipy.sparse.random`` makes one of 40 GB here)."""
    import scipy.sparse as sp

    cells = rows * cols
    if nnz > cells // 2 or max(rows, cols, nnz) >= 2**31:
        msg = f"random_csr is for sparse matrices with int32 indices, not {nnz:,} values in {rows:,} x {cols:,}"
        raise ValueError(msg)
    margin = nnz // 100 + 100
    while True:
        linear = np.sort(rng.integers(0, cells, size=nnz + margin))
        distinct = np.empty(linear.shape, dtype=bool)
        distinct[0] = True
        np.not_equal(linear[1:], linear[:-1], out=distinct[1:])
        linear = linear[distinct]
        if len(linear) >= nnz:
            break
        margin *= 4
    linear = np.delete(linear, rng.choice(len(linear), len(linear) - nnz, replace=False))
    row_of, col_of = np.divmod(linear, cols)
    indptr = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(row_of, minlength=rows), out=indptr[1:])
    return sp.csr_array((rng.standard_normal(nnz), col_of.astype(np.int32), indptr), shape=(rows, cols))


def logistic_inputs(size: SparseSizes) -> tuple[Any, np.ndarray, np.ndarray]:
    """The CSR matrix, the point ``w`` the gradient is taken at, and labels in {-1, +1}."""
    rng = np.random.default_rng(13)
    x = random_csr(size.rows, size.cols, size.nnz, rng)
    per_row = size.nnz / size.rows
    w_true = rng.standard_normal(size.cols) / np.sqrt(per_row)
    p = 1.0 / (1.0 + np.exp(-(x @ w_true)))
    y = np.where(rng.random(size.rows) < p, 1.0, -1.0)
    w = rng.standard_normal(size.cols) * 0.1
    return x, w, y


def logistic_loss(w: Any, x: Any, y: np.ndarray) -> Any:
    """W13's loss, the mean log-loss, in numpy: nodegrad differentiates this very function."""
    return np.mean(np.logaddexp(0.0, -y * (x @ w)))


def _loss_cotangent(x: Any, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    """dloss/dz for z = X @ w: -y * sigmoid(-y z) / m, the sigmoid from the log-sigmoid."""
    margin = x @ w
    margin *= -y
    log_terms = np.logaddexp(0.0, margin)
    d_z = np.exp(margin - log_terms)
    d_z *= -y
    d_z /= len(y)
    return d_z


def numpy_weights_grad(w: np.ndarray, x: Any, y: np.ndarray) -> np.ndarray:
    """Case (a) by hand: the gradient with respect to ``w``."""
    return x.T @ _loss_cotangent(x, w, y)


def numpy_values_grad(w: np.ndarray, x: Any, y: np.ndarray) -> Any:
    """Case (b) by hand: the gradient with respect to ``X``'s stored values, a matrix of
    ``X``'s class sharing its index arrays: ``r[row_k] * w[col_k]`` for stored value ``k``."""
    d_z = _loss_cotangent(x, w, y)
    values = np.take(w, x.indices)  # first: its int64 copy of the int32 indices is freed before the repeat
    values *= np.repeat(d_z, np.diff(x.indptr))
    return type(x)((values, x.indices, x.indptr), shape=x.shape)


def _same_pattern(gradient: Any, x: Any, who: str) -> None:
    """Raise unless ``gradient`` is a scipy matrix of ``x``'s class on ``x``'s pattern."""
    same = (
        type(gradient) is type(x)
        and gradient.shape == x.shape
        and np.array_equal(gradient.indptr, x.indptr)
        and np.array_equal(gradient.indices, x.indices)
    )
    if not same:
        msg = f"{who}'s gradient is not a {type(x).__name__} on the matrix's pattern: {type(gradient).__name__}"
        raise RuntimeError(msg)


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """PyTorch's warning that its sparse CSR support is in beta, once per call site, kept out of the table."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*beta.*")
        yield


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        msg = f"torch does not import here ({exc})"
        raise PeerUnavailableError(msg) from exc
    return torch


def _torch_csr(torch: Any, x: Any, requires_grad: bool = False) -> Any:
    """``x`` as a ``torch.sparse_csr_tensor`` on the same three arrays (no copy)."""
    crow, col, values = (torch.from_numpy(a) for a in (x.indptr, x.indices, x.data))
    with _quiet_torch():
        return torch.sparse_csr_tensor(crow, col, values, size=x.shape, requires_grad=requires_grad)


def _torch_loss(torch: Any, z: Any, y_t: Any) -> Any:
    return torch.logaddexp(torch.zeros_like(z), -y_t * z).mean()


def torch_values_way(torch: Any, name: str, x: Any, w: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    """PyTorch's way ``name`` of taking the gradient with respect to the stored values: a
    call returning the values' gradient in ``x``'s order, the matrix built once, outside it."""
    y_t, w_t = torch.from_numpy(y), torch.from_numpy(w)
    col = torch.from_numpy(x.indices)

    def loss_of_product(matrix: Any) -> Any:
        return _torch_loss(torch, torch.sparse.mm(matrix, w_t[:, None])[:, 0], y_t)

    if name == "torch":
        csr = _torch_csr(torch, x, requires_grad=True)
        (grad,) = torch.autograd.grad(loss_of_product(csr), csr)  # its pattern checked once, here
        same = grad.layout == torch.sparse_csr and torch.equal(grad.col_indices(), col)
        if not same or not torch.equal(grad.crow_indices(), torch.from_numpy(x.indptr)):
            msg = f"PyTorch's gradient is not on the matrix's pattern (layout {grad.layout})"
            raise RuntimeError(msg)
        del grad
        return lambda: torch.autograd.grad(loss_of_product(csr), csr)[0].values()
    if name == TORCH_CSR_MATVEC:
        csr = _torch_csr(torch, x, requires_grad=True)
        rows = torch.from_numpy(np.repeat(np.arange(x.shape[0]), np.diff(x.indptr)))

        def csr_matvec() -> Any:
            (grad,) = torch.autograd.grad(_torch_loss(torch, csr @ w_t, y_t), csr)
            return grad.values() if grad.layout == torch.sparse_csr else grad[rows, col.long()]

        return csr_matvec
    if name == TORCH_CSR_VALUES:
        crow = torch.from_numpy(x.indptr)
        values = torch.from_numpy(x.data).clone().requires_grad_()

        def csr_values() -> Any:
            with _quiet_torch():
                matrix = torch.sparse_csr_tensor(crow, col, values, size=x.shape)
            return torch.autograd.grad(loss_of_product(matrix), values)[0]

        return csr_values
    if name == TORCH_COO:
        rows = torch.from_numpy(np.repeat(np.arange(x.shape[0]), np.diff(x.indptr)))
        coo = torch.sparse_coo_tensor(torch.stack([rows, col.long()]), torch.from_numpy(x.data), x.shape)
        coo = coo.coalesce().requires_grad_()  # (canonical CSR order is coalesced COO order)

        def coo_mm() -> Any:
            (grad,) = torch.autograd.grad(loss_of_product(coo), coo)
            return grad.coalesce().values()

        return coo_mm
    raise KeyError(name)


def dense_gradient_probe(name: str) -> tuple[int, str, int] | None:
    """Whether PyTorch way ``name`` forms the dense gradient: run on a small matrix
    (:data:`PROBE_SHAPE`) under ``torch.profiler`` with ``profile_memory``, the largest
    allocation one op made by itself, that op, and the dense matrix's bytes; ``None`` if
    no op allocated half of those at once."""
    torch = _import_torch()
    from torch.profiler import ProfilerActivity, profile

    rows, cols = PROBE_SHAPE
    rng = np.random.default_rng(130)
    x = random_csr(rows, cols, PROBE_NNZ, rng)
    way = torch_values_way(torch, name, x, rng.standard_normal(cols), np.where(rng.random(rows) < 0.5, 1.0, -1.0))
    way()
    with _quiet_torch(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        way()
    largest = max(prof.events(), key=lambda event: event.self_cpu_memory_usage, default=None)
    dense = rows * cols * 8
    if largest is None or largest.self_cpu_memory_usage < dense // 2:
        return None
    return int(largest.self_cpu_memory_usage), str(largest.name), dense


def torch_values_step(name: str, x: Any, w: np.ndarray, y: np.ndarray) -> Step:
    """One of PyTorch's ways for case (b), or "not run" where its backward would form a
    dense gradient larger than :data:`DENSE_RUN_LIMIT` (found by :func:`dense_gradient_probe`)."""
    torch = _import_torch()
    if name != "torch":
        try:
            found = dense_gradient_probe(name)
        except PeerUnavailableError:
            raise
        except Exception as exc:  # a probe that cannot run must not let a 40 GB backward run
            msg = f"the probe for a dense gradient failed ({short_error(exc)}), so it is not run at full size"
            raise PeerUnavailableError(msg) from exc
        dense = x.shape[0] * x.shape[1] * x.dtype.itemsize
        if found is not None and dense > DENSE_RUN_LIMIT:
            allocated, op, probe_dense = found
            msg = (
                f"its backward forms the dense {x.shape[0]:,} x {x.shape[1]:,} gradient ({dense / 1e9:.1f} GB): "
                f"on a {PROBE_SHAPE[0]:,} x {PROBE_SHAPE[1]:,} probe {op} allocated {allocated / 1e6:.1f} MB at "
                f"once, the dense matrix being {probe_dense / 1e6:.1f} MB"
            )
            raise PeerUnavailableError(msg)
    return torch_values_way(torch, name, x, w, y)


def torch_weights_step(x: Any, w: np.ndarray, y: np.ndarray) -> Step:
    """Case (a) in PyTorch: the CSR tensor built once, ``X @ w`` with ``w`` requiring grad."""
    torch = _import_torch()
    csr = _torch_csr(torch, x)
    w_t, y_t = torch.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(y)
    return lambda: torch.autograd.grad(_torch_loss(torch, csr @ w_t, y_t), w_t)[0]


def nodegrad_values_step(x: Any, w: np.ndarray, y: np.ndarray) -> Step:
    """Case (b) in nodegrad; the gradient's pattern checked once, the step returning its values."""
    import nodegrad as ng

    grad = ng.grad(logistic_loss, argnums=1)
    _same_pattern(grad(w, x, y), x, "nodegrad")
    return lambda: grad(w, x, y).data


def numpy_values_step(x: Any, w: np.ndarray, y: np.ndarray) -> Step:
    _same_pattern(numpy_values_grad(w, x, y), x, "the hand-written step")
    return lambda: numpy_values_grad(w, x, y).data


def logistic_step(case: str, name: str, x: Any, w: np.ndarray, y: np.ndarray) -> Step:
    """Row ``name``'s step of case ``case`` ("weights" or "values")."""
    if case == "weights":
        if name == "numpy":
            return lambda: numpy_weights_grad(w, x, y)
        if name == "nodegrad":
            import nodegrad as ng

            grad = ng.grad(logistic_loss)
            return lambda: grad(w, x, y)
        if name == "torch":
            return torch_weights_step(x, w, y)
    else:
        if name == "numpy":
            return numpy_values_step(x, w, y)
        if name == "nodegrad":
            return nodegrad_values_step(x, w, y)
        return torch_values_step(name, x, w, y)
    raise KeyError(name)


# -- the memory of one step ---------------------------------------------------------------------


@dataclass(frozen=True)
class SparseMemoryCase:
    """One block measured by tracemalloc in this process: a step per row, the baseline first."""

    key: str
    title: str
    baseline: str
    judged: str  # the row held to ``limit`` times the matrix's bytes
    matrix_bytes: int
    limit: float
    builders: dict[str, Callable[[], Step]]
    tolerance: float  # for the check column, against the baseline's gradient
    runs: int  # measured steps per row, the minimum kept


@dataclass
class SparseMemoryRow:
    """The traced peak of one row's step (bytes) and its multiple of the matrix's bytes."""

    case: str
    library: str
    variant: str = ""
    peak_bytes: int | None = None  # the minimum over the runs
    runs_bytes: list[int] = field(default_factory=list)
    matrix_bytes: int = 0
    multiple: float | None = None  # peak over the matrix's bytes
    ratio: float | None = None  # peak over the baseline's peak
    baseline: str = ""
    target: float | None = None  # the largest multiple allowed
    met: bool | None = None
    check: str = ""
    error: str = ""


def measure_sparse_memory_case(case: SparseMemoryCase, judge_targets: bool) -> list[SparseMemoryRow]:
    """Every row: a warm-up step (checked against the baseline's), then ``case.runs`` measured."""
    rows, reference = [], None
    for name, build in case.builders.items():
        print(f"  {case.title}: {display_name(name)} ...", file=sys.stderr, flush=True)
        row = SparseMemoryRow(case.title, name, baseline=case.baseline, matrix_bytes=case.matrix_bytes)
        rows.append(row)
        try:
            step, reference, row.check = warmed_step(build, reference, case.tolerance)
            row.runs_bytes = [traced_peak(step)[0] for _ in range(case.runs)]
        except Exception as exc:  # a failing row is a result, not a crash
            row.error = short_error(exc)
            continue
        row.peak_bytes = min(row.runs_bytes)
        row.multiple = row.peak_bytes / case.matrix_bytes
    del reference
    gc.collect()
    base = next((r for r in rows if r.library == case.baseline and r.peak_bytes), None)
    for row in rows:
        if base is not None and base.peak_bytes and row.peak_bytes is not None:
            row.ratio = row.peak_bytes / base.peak_bytes
        if row.library == case.judged:
            row.target = case.limit
            row.met = None if row.multiple is None or not judge_targets else row.multiple <= case.limit
    return rows


def sparse_memory_notes(rows: Sequence[SparseMemoryRow]) -> list[str]:
    """The line printed under the W13 memory tables."""
    if not rows:
        return []
    runs = max((len(r.runs_bytes) for r in rows), default=0)
    matrix = rows[0].matrix_bytes
    return [
        f"W13: traced MiB: tracemalloc's peak during one step in this process (minimum of {runs}), above what was "
        f"traced when it started (the matrix, w and y are not counted; the gradient returned is); x matrix: over "
        f"the matrix's data + indices + indptr ({matrix / MIB:,.2f} MiB); PyTorch not measured (its allocator does "
        "not report to tracemalloc)"
    ]


# -- spsolve (W13s) -----------------------------------------------------------------------------


def poisson_inputs(grid: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The 5-point Laplacian of a ``grid`` x ``grid`` mesh (Dirichlet boundary) as a
    ``csc_array``, a right-hand side and a target, both standard normal."""
    import scipy.sparse as sp

    ones = np.ones(grid)
    second = sp.diags_array([-ones[1:], 2.0 * ones, -ones[1:]], offsets=[-1, 0, 1])
    eye = sp.eye_array(grid)
    a = (sp.kron(eye, second) + sp.kron(second, eye)).tocsc()
    a.sort_indices()
    rng = np.random.default_rng(131)
    return a, rng.standard_normal(grid * grid), rng.standard_normal(grid * grid)


def solve_loss(a: Any, b: Any, target: np.ndarray) -> Any:
    """W13s's loss: ``0.5 * ||spsolve(A, b) - t||^2`` with nodegrad's ``spsolve``."""
    from nodegrad.scipy.sparse.linalg import spsolve

    return 0.5 * np.sum((spsolve(a, b) - target) ** 2)


def numpy_solve_grads(a: Any, b: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """By hand: one factorization, the solve and the adjoint solve; the gradients with
    respect to ``b`` and to ``A``'s stored values (CSC: ``indices`` are the rows)."""
    from scipy.sparse.linalg import splu

    lu = splu(a)
    x = lu.solve(b)
    lam = lu.solve(x - target, trans="T")
    return lam, -lam[a.indices] * np.repeat(x, np.diff(a.indptr))


def _emptying_factor_cache(call: Callable[[], Any]) -> Step:
    """``call``, nodegrad's kept LU factorizations dropped before each call (see the module's docstring)."""
    try:
        from nodegrad.ops.sparse import solve as solve_module

        factors = solve_module._FACTORS
        factors.clear()
    except (ImportError, AttributeError) as exc:
        msg = (
            "cannot empty nodegrad's factorization cache (nodegrad.ops.sparse.solve._FACTORS), so the fresh "
            f"factorization cannot be timed: update workloads/sparse_matrices.py ({exc})"
        )
        raise RuntimeError(msg) from exc

    def step() -> Any:
        factors.clear()
        return call()

    return step


def solve_step(case: str, name: str, a: Any, b: np.ndarray, target: np.ndarray) -> Step:
    """Row ``name``'s step of W13s case ``case`` ("b" or "A")."""
    if name == FORWARD_SOLVE:
        from scipy.sparse.linalg import spsolve

        return lambda: spsolve(a, b)
    if name == HAND_SOLVE:
        part = 0 if case == "b" else 1
        return lambda: numpy_solve_grads(a, b, target)[part]
    if name in ("nodegrad", KEPT_SOLVE):
        import nodegrad as ng

        if case == "b":
            grad_b = ng.grad(lambda b: solve_loss(a, b, target))
            call: Callable[[], Any] = lambda: grad_b(b)
        else:
            grad_a = ng.grad(lambda a: solve_loss(a, b, target))
            _same_pattern(grad_a(a), a, "nodegrad")
            call = lambda: grad_a(a).data
        return _emptying_factor_cache(call) if name == "nodegrad" else call
    if name == "torch":
        return torch_solve_step(case, a, b, target)
    raise KeyError(name)


def torch_solve_step(case: str, a: Any, b: np.ndarray, target: np.ndarray) -> Step:
    """``torch.sparse.spsolve`` on the CSR Laplacian, where PyTorch has a CPU kernel for it."""
    torch = _import_torch()
    csr = a.tocsr()
    matrix = _torch_csr(torch, csr, requires_grad=case == "A")
    b_t, t_t = torch.from_numpy(b.copy()).requires_grad_(case == "b"), torch.from_numpy(target)

    def step() -> Any:
        loss = 0.5 * ((torch.sparse.spsolve(matrix, b_t) - t_t) ** 2).sum()
        (grad,) = torch.autograd.grad(loss, b_t if case == "b" else matrix)
        return grad if case == "b" else torch.from_numpy(grad.to_sparse_csc().values().numpy())

    try:
        with _quiet_torch():
            torch.sparse.spsolve(matrix.detach(), b_t.detach())
    except NotImplementedError as exc:
        first = str(exc).split(". ", 1)[0]
        msg = f"torch.sparse.spsolve has no CPU kernel in PyTorch {torch.__version__} ({first})"
        raise PeerUnavailableError(msg) from exc
    return step


# -- the cases -------------------------------------------------------------------------------------


def w13_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case | SparseMemoryCase]:
    sizes = with_w13_timing(sizes)  # (run.py has added W13's rounds already; a caller's Sizes() has not)
    size = sparse_sizes(sizes)
    x, w, y = logistic_inputs(size)
    # PyTorch's rows are always listed: "not run: ..." where torch does not import.
    weights_rows = ["numpy", *(n for n in ("nodegrad",) if n in libraries), "torch"]
    # PyTorch's other ways of writing case (b), where torch imports.
    values_rows = [*weights_rows, *((TORCH_CSR_MATVEC, TORCH_CSR_VALUES, TORCH_COO) if "torch" in libraries else ())]
    problem = (
        f"logistic regression, CSR {size.rows:,} x {size.cols:,}, {size.nnz:,} stored values "
        f"({size.nnz / (size.rows * size.cols):.1%}), float64"
    )
    rounds, runs = sizes.timing("W13")

    def builders(case: str, names: Sequence[str]) -> dict[str, Callable[[], Step]]:
        return {name: partial(logistic_step, case, name, x, w, y) for name in names}

    has_torch = "torch" in libraries
    weights = LabelledCase(
        "W13",
        f"W13 (a) gradient w.r.t. the weights w, {problem}",
        "numpy",
        "ms",
        1,
        WEIGHTS_TARGET,
        rounds,
        runs,
        builders("weights", weights_rows),
        1e-10,
        jit=False,
        peer_target=("torch", PEER_LIMIT) if has_torch else None,
        variants={"torch": "X @ w"},
    )
    values = LabelledCase(
        "W13",
        f"W13 (b) gradient w.r.t. the matrix's stored values, {problem}",
        "numpy",
        "ms",
        1,
        VALUES_TARGET,
        rounds,
        runs,
        builders("values", values_rows),
        1e-10,
        jit=False,
        peer_target=("torch", PEER_LIMIT) if has_torch else None,
        variants=TORCH_VARIANT,
    )
    memory_rows = ["numpy", *(n for n in ("nodegrad",) if n in libraries)]
    memory = [
        SparseMemoryCase(
            "W13",
            f"W13 ({label}) peak memory of one step, {problem}",
            "numpy",
            "nodegrad",
            matrix_bytes(x),
            MEMORY_LIMIT,
            builders(case, memory_rows),
            1e-10,
            sizes.memory_runs,
        )
        for label, case in (("a", "weights"), ("b", "values"))
    ]
    a, b, target = poisson_inputs(size.grid)
    solve_rows = [FORWARD_SOLVE, HAND_SOLVE, *(n for n in ("nodegrad", KEPT_SOLVE) if "nodegrad" in libraries), "torch"]
    poisson = (
        f"2-D Poisson {size.grid} x {size.grid} ({size.grid**2:,} unknowns, 5-point Laplacian, CSC, "
        f"{a.nnz:,} stored values)"
    )
    solve_rounds, solve_runs = sizes.timing("W13s")
    solves = [
        LabelledCase(
            "W13",
            f"W13s spsolve gradient w.r.t. {what}, {poisson}",
            FORWARD_SOLVE,
            "ms",
            1,
            SOLVE_TARGET,
            solve_rounds,
            solve_runs,
            {name: partial(solve_step, case, name, a, b, target) for name in solve_rows},
            1e-9,
            jit=False,
            variants={"nodegrad": FRESH_VARIANT},
        )
        for what, case in (("b", "b"), ("A's stored values", "A"))
    ]
    return [weights, values, *memory, *solves]


def check_hand_written(sizes: Sizes) -> None:
    """Assert that the hand-written gradients (both logistic cases, both spsolve cases) equal
    nodegrad's, on the ``--quick`` problem (the algebra does not depend on the size; the
    check column compares them again at the run's size)."""
    import nodegrad as ng

    x, w, y = logistic_inputs(QUICK_SPARSE)
    np.testing.assert_allclose(numpy_weights_grad(w, x, y), ng.grad(logistic_loss)(w, x, y), rtol=1e-10, atol=1e-17)
    by_hand, ours = numpy_values_grad(w, x, y), ng.grad(logistic_loss, argnums=1)(w, x, y)
    _same_pattern(ours, x, "nodegrad")
    np.testing.assert_allclose(by_hand.data, ours.data, rtol=1e-10, atol=1e-17)
    a, b, target = poisson_inputs(QUICK_SPARSE.grid)
    grad_b, grad_a = numpy_solve_grads(a, b, target)
    np.testing.assert_allclose(grad_b, ng.grad(lambda b: solve_loss(a, b, target))(b), rtol=1e-10, atol=1e-14)
    ours_a = ng.grad(lambda a: solve_loss(a, b, target))(a)
    np.testing.assert_allclose(grad_a, ours_a.data, rtol=1e-10, atol=1e-14)
