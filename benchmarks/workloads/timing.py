"""What is timed and how: problem sizes, one case per table block, interleaved rounds, results.

Each library runs each case once as a warm-up, its gradient checked against the baseline's
(:func:`prepare_library`); then the libraries are timed with ``time.perf_counter`` in
interleaved rounds (:func:`time_in_rounds`), and :func:`run_case` turns the times into
:class:`Row` results: minimum and median, in the case's unit, the ratio to the baseline,
and for the rows that have targets (nodegrad's and its replay's, :func:`row_targets`)
whether they meet them (:func:`judge_row`).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .libraries import NO_GRADIENT, REPLAY, Step, as_numpy, display_name, max_relative_error, replay_check


@dataclass(frozen=True)
class Sizes:
    """Problem sizes and timing rounds of one run."""

    chain_blocks: int = 250  # W1: 4 ops per block
    deep_blocks: int = 25_000  # W5
    layers: tuple[int, ...] = (784, 256, 256, 10)
    batch: int = 64
    big_n: int = 10_000_000  # W3
    dict_params: int = 200  # W4
    gather_rows: int = 10_000  # W6: rows of the columns, features of "x", rows sampled per step
    gather_features: int = 16
    gather_batch: int = 4096
    per_example: int = 1000  # W9: examples of the ``layers`` MLP, one row and label each
    jacobian_size: int = 100  # W10: entries of the function's argument and of its value
    chunked_layers: tuple[int, ...] = (64, 32, 32, 10)  # W11: the MLP, its examples and chunk_size
    chunked_examples: int = 10_000
    chunk_size: int = 100
    outer_examples: int = 400  # W11's result-dominated case: examples, features, chunk_size
    outer_features: int = 300
    outer_chunk: int = 100
    table_rows: int = 1_000_000  # W12: the lookup table, the MLP's hidden width, row ids per batch
    table_features: int = 64
    table_hidden: int = 32
    lookups: int = 1000
    sales_rows: int = 100_000  # W14: the sales table's rows and stores
    sales_stores: int = 200
    fit_rows: int = 10_000  # W15: the logistic regression's rows and features, L-BFGS iterations
    fit_features: int = 1000
    fit_iterations: int = 100
    # Timed runs: ``rounds`` rounds, each running every library ``runs_per_round`` times.
    rounds: dict[str, int] = field(
        default_factory=lambda: {
            "W0": 10,
            "W1": 10,
            "W2": 10,
            "W3": 7,
            "W4": 10,
            "W5": 3,
            "W6": 10,
            "W8": 10,
            "W9": 5,
            "W10": 10,
            "W12": 10,
            "W14": 10,
            "W15": 10,
        }
    )
    runs_per_round: dict[str, int] = field(
        default_factory=lambda: {
            "W0": 20,
            "W1": 10,
            "W2": 10,
            "W3": 1,
            "W4": 5,
            "W5": 1,
            "W6": 10,
            "W8": 20,
            "W9": 1,
            "W10": 10,
            "W12": 5,
            "W14": 10,
            "W15": 1,
        }
    )
    memory_children: int = 2  # W7: fresh processes per library and case, the minimum kept
    memory_runs: int = 2  # W11: measured calls per row, in this process, the minimum kept
    judge_targets: bool = True  # the targets are defined for these sizes only

    def timing(self, key: str) -> tuple[int, int]:
        """Rounds and runs per round of workload ``key``."""
        return self.rounds[key], self.runs_per_round[key]


QUICK = Sizes(
    chain_blocks=25,
    deep_blocks=250,
    layers=(64, 32, 32, 10),
    batch=8,
    big_n=100_000,
    dict_params=10,
    gather_rows=500,
    gather_batch=200,
    per_example=16,
    jacobian_size=12,
    chunked_layers=(16, 8, 8, 4),
    chunked_examples=400,
    chunk_size=40,
    outer_examples=40,
    outer_features=30,
    outer_chunk=10,
    table_rows=2000,
    table_features=8,
    table_hidden=4,
    lookups=50,
    sales_rows=2000,
    sales_stores=20,
    fit_rows=500,
    fit_features=20,
    fit_iterations=10,
    rounds=dict.fromkeys(("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W8", "W9", "W10", "W12", "W14", "W15"), 1),
    runs_per_round=dict.fromkeys(("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W8", "W9", "W10", "W12", "W14", "W15"), 1),
    memory_children=1,
    memory_runs=1,
    judge_targets=False,
)


@dataclass(frozen=True)
class Case:
    """One block of the table: the same computation in every library."""

    key: str  # what --only selects
    title: str
    baseline: str
    unit: str  # "µs/op", "µs/param" or "ms"
    ops_per_run: int  # time per run is divided by this for the "µs/..." units
    target: float | None  # nodegrad's ratio to the baseline should not exceed this
    rounds: int
    runs_per_round: int
    builders: dict[str, Callable[[], Step]]
    tolerance: float  # for the check column, see max_relative_error
    jit: bool  # whether JAX compiles the step (the others have no such switch)
    # A second target against a peer: (library, nodegrad's largest ratio to it), e.g. W0's
    # "at most 0.5x PyTorch" beside "at most 2x hand-written numpy".
    peer_target: tuple[str, float] | None = None
    # The replay row's targets (libraries.REPLAY), like nodegrad's: its largest ratio to the
    # baseline, and to another row, PyTorch's or eager nodegrad's (e.g. W2's "replaying is
    # no slower than tracing", ("nodegrad", 1.0)).
    replay_target: float | None = None
    replay_peer_target: tuple[str, float] | None = None
    # The row nodegrad's peer target falls back to where that peer did not run (not
    # installed, or failed), at the same largest ratio: W9's hand-written numpy floor for
    # PyTorch. Without one, a peer that did not run leaves its target out.
    peer_fallback: str | None = None


class PeerUnavailableError(Exception):
    """A row that cannot run here (a peer that does not import): shown as "not run: ..."."""


@dataclass
class Row:
    """The result of one library on one case (times in seconds)."""

    case: str
    library: str
    variant: str = ""  # "jit" or "eager" for JAX
    best_s: float | None = None
    median_s: float | None = None
    runs: int = 0
    value: float | None = None  # best time in the case's unit
    median_value: float | None = None
    unit: str = ""
    ratio: float | None = None
    baseline: str = ""
    target: float | None = None
    peer_target: tuple[str, float] | None = None  # see Case.peer_target and Case.replay_peer_target
    peer_ratio: float | None = None  # this row's ratio to that peer
    met: bool | None = None
    check: str = ""
    error: str = ""


# -- timing ---------------------------------------------------------------------------------


def time_runs(step: Step, runs: int) -> list[float]:
    """Seconds of each of ``runs`` back-to-back runs; a run's result is freed inside its timing."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, PeerUnavailableError):
        return f"not run: {text}"
    return f"failed: {type(exc).__name__}: {text[:100]}"


def prepare_library(case: Case, name: str, reference: Any) -> tuple[Row, Step | None, Any]:
    """Build the step and run it once (the warm-up), checking its gradient against ``reference``.

    Returns the row, the step (``None`` if it failed) and the gradient as numpy arrays.
    """
    variant = ("jit" if case.jit else "eager") if name == "jax" else ""
    row = Row(case.title, name, variant, unit=case.unit, baseline=case.baseline)
    try:
        step = case.builders[name]()
        grads = as_numpy(step())
    except Exception as exc:  # a library failing a workload is a result, not a crash
        row.error = short_error(exc)
        return row, None, None
    if name in NO_GRADIENT:
        row.check = NO_GRADIENT[name]
        return row, step, None
    if reference is None:
        row.check = "reference"
    else:
        error = max_relative_error(grads, reference)
        row.check = "ok" if error <= case.tolerance else f"MISMATCH {error:.1e}"
    return row, step, grads


def time_in_rounds(case: Case, steps: dict[str, Step], rows: dict[str, Row]) -> dict[str, list[float]]:
    """Time every step in interleaved rounds, so that a burst of load from another process
    hits all libraries alike instead of the one that happened to be running.

    The collector runs once before the first round, not before each run: a full collection
    walks every object of every imported library and evicts the caches, which would add
    about 0.2 ms to a sub-millisecond step.
    """
    times: dict[str, list[float]] = {name: [] for name in steps}
    gc.collect()
    for _ in range(case.rounds):
        for name, step in list(steps.items()):
            try:
                times[name].extend(time_runs(step, case.runs_per_round))
            except Exception as exc:  # e.g. memory running out on a later run
                rows[name].error = short_error(exc)
                del steps[name], times[name]
    return times


def run_case(case: Case, judge_targets: bool) -> list[Row]:
    """Every library on one case. The baseline is prepared first: its gradient is the check's
    reference. A replay row is also checked against eager nodegrad's gradient (prepared
    before it: :func:`.libraries.with_replay` puts it right after nodegrad)."""
    order = sorted(case.builders, key=lambda name: name != case.baseline)
    rows: dict[str, Row] = {}
    steps: dict[str, Step] = {}
    reference = eager = None
    for name in order:
        print(f"  {case.title}: {display_name(name)} ...", file=sys.stderr, flush=True)
        rows[name], step, grads = prepare_library(case, name, reference)
        if step is not None:
            steps[name] = step
            reference = grads if reference is None else reference
        if name == "nodegrad" and REPLAY in case.builders:
            eager = grads
        elif name == REPLAY and step is not None and eager is not None:
            rows[name].check += ", " + replay_check(grads, eager, case.tolerance)
        del grads
    print(f"  {case.title}: timing {case.rounds} x {case.runs_per_round} runs", file=sys.stderr, flush=True)
    scale = (1e6 / case.ops_per_run) if case.unit.startswith("µs/") else 1e3
    for name, times in time_in_rounds(case, steps, rows).items():
        row = rows[name]
        row.best_s, row.median_s, row.runs = min(times), statistics.median(times), len(times)
        row.value, row.median_value = row.best_s * scale, row.median_s * scale
    del steps, reference, eager
    gc.collect()
    base = rows.get(case.baseline)
    for row in rows.values():
        if base is not None and base.best_s and row.best_s is not None:
            row.ratio = row.best_s / base.best_s
        judge_row(row, rows, *row_targets(case, row.library, rows), judge_targets)
    return list(rows.values())


def row_targets(case: Case, name: str, rows: dict[str, Row]) -> tuple[float | None, tuple[str, float] | None]:
    """The targets of row ``name``: nodegrad's and its replay's are the case's; the others
    have none. nodegrad's peer target is against the case's fallback row where the peer
    did not run."""
    if name == "nodegrad":
        peer_target = case.peer_target
        if peer_target and case.peer_fallback and not _timed(rows.get(peer_target[0])):
            peer_target = (case.peer_fallback, peer_target[1])
        return case.target, peer_target
    if name == REPLAY:
        return case.replay_target, case.replay_peer_target
    return None, None


def _timed(row: Row | None) -> bool:
    return row is not None and bool(row.best_s)


def judge_row(
    row: Row, rows: dict[str, Row], target: float | None, peer_target: tuple[str, float] | None, judge: bool
) -> None:
    """Attach a row's targets and its ratio to the peer target's row, and whether it meets them all.

    A peer that did not run (not installed, or failed) leaves its target out, and the row is
    judged by the other alone; ``judge`` is False with ``--quick``.
    """
    limits: list[tuple[float | None, float]] = []
    if target is not None:
        row.target = target
        limits.append((row.ratio, target))
    peer = rows.get(peer_target[0]) if peer_target else None
    if peer_target and peer is not None and peer.best_s and row.best_s is not None:
        row.peer_target, row.peer_ratio = peer_target, row.best_s / peer.best_s
        limits.append((row.peer_ratio, peer_target[1]))
    row.met = verdict(limits, judge)


def verdict(limits: Sequence[tuple[float | None, float]], judge: bool) -> bool | None:
    """Whether every (ratio, largest allowed ratio) pair holds; ``None`` when the targets are
    not judged, there are none, or a ratio is missing (a row that failed)."""
    if not judge or not limits or any(ratio is None for ratio, _ in limits):
        return None
    return all(ratio is not None and ratio <= limit for ratio, limit in limits)
