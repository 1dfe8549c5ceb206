"""W7: the peak memory of one gradient step, each library in a fresh process.

Two computations, the steps the timing workloads run: W3's 10-op chain on 10 million
float64 (:func:`.large_chain.bounded_chain`; the hand-written baseline is
:func:`.large_chain.bounded_chain_numpy_grad`) and the W2 MLP in float32 and float64
(:func:`.mlp.mlp_steps`; the baseline is :func:`.mlp.mlp_numpy_loss_and_grads`), for the
hand-written numpy, nodegrad and every importable peer (JAX jitted, as in W2 and W3).

Each library and computation runs in a child process of its own
(:mod:`.memory_child`, whose docstring has the method), so that nothing another library
allocated or cached is counted or reused: it warms up, then measures one step with two
meters. The RSS peak is the rise of the kernel's high-water mark (``VmHWM``, reset through
``/proc/self/clear_refs``) above the resident set before the step; the tracemalloc peak is
the rise of the memory traced during another step, shown as "n/a" for PyTorch and JAX,
whose allocators do not report to tracemalloc (decided by library name,
:data:`.memory_child.UNTRACED`: what tracemalloc sees of them is a few kilobytes of Python
objects, which would read as if their arrays took no memory). Before each measured step
the child collects garbage and calls glibc's ``malloc_trim(0)``, so that the resident set
it starts from is live memory, not pages the warm-up freed and malloc kept. Both are given in MiB and as a multiple of
the input: the 76 MiB array of the chain, the parameters plus the batch of the MLP.

Malloc: ``run.py`` runs with ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` at
16 GiB, so that freed buffers stay in the heap for reuse (that makes the timing fair); the
children run without those two variables (:func:`child_environment`). Under glibc's
defaults an 80 MB array is a mmap of its own, handed back to the kernel when it is freed,
so the resident set follows live memory and its high-water mark is the step's peak; with
the timing settings a freed buffer stays resident and a library's peak would depend on
what happened to be free in the heap. The thread variables are kept.

Each measurement runs in ``Sizes.memory_children`` children (2; 1 with ``--quick``) and
the minimum is kept; every child's value is in the JSON. Repeated children agree to within
0.1 MB on the chain (of 530 to 1,700 MB) and to within a few pages on the MLP for the
numpy-based libraries, but PyTorch's float64 MLP step was seen anywhere from 3.08 to
3.34 MB (and nodegrad's from 3.25 to 3.33 MB): enough to move a ratio near the target, so
one child is not enough.

Target: nodegrad's RSS peak at most PyTorch's (ratio <= 1.00x), in each case.

Each case also has a replay row (:data:`.libraries.REPLAY`): nodegrad's gradient function
through ``ng.replay``, recorded in its child when the step is built, before the warm-up,
so that both measured steps are replays. The child compares the warm-up's gradient with
eager nodegrad's (the "check" column, which only this row has). Target: its peak at most
eager nodegrad's (<= 1.00x, shown beside the ratio to PyTorch), by tracemalloc, which
counts both runs' arrays to the byte (RSS moves by pages: see :func:`_replay_ratio`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .environment import MALLOC_VARS
from .libraries import GRADIENT_STEPS, NOT_ABOVE_EAGER, REPLAY, display_name, with_replay
from .mlp import mlp_inputs
from .timing import Sizes, short_error, verdict

BENCHMARKS_DIR = Path(__file__).resolve().parent.parent  # the child runs as ``-m workloads.memory_child`` from here
CHILD_MODULE = "workloads.memory_child"
CHILD_TIMEOUT_S = 600
MIB = 2**20
TARGET = 1.00  # nodegrad's RSS peak over PyTorch's


@dataclass(frozen=True)
class MemoryCase:
    """One block of the W7 table: one computation, measured in a child per library."""

    key: str
    title: str
    baseline: str  # the library the ratio column divides by
    target: float | None
    libraries: tuple[str, ...]  # the hand-written "numpy" first
    computation: dict[str, Any]  # what the child builds, as JSON (see memory_child)
    input_bytes: int
    children: int  # children per library; the minimum is kept
    replay_peer_target: tuple[str, float] | None = None  # the replay row's largest ratio to that row


@dataclass
class MemoryRow:
    """The peak memory of one library on one case (bytes; ``None`` where a meter does not apply)."""

    case: str
    library: str
    variant: str = ""  # "jit" for JAX
    input_bytes: int = 0
    rss_peak_bytes: int | None = None  # minimum over the children
    traced_peak_bytes: int | None = None
    rss_runs_bytes: list[int] = field(default_factory=list)  # every child's, in order
    traced_runs_bytes: list[int] = field(default_factory=list)
    rss_meter: str = ""
    ratio: float | None = None  # RSS peak over the baseline's
    baseline: str = ""
    target: float | None = None
    peer_target: tuple[str, float] | None = None  # the replay row's, see MemoryCase
    peer_ratio: float | None = None  # its RSS peak over that row's
    met: bool | None = None
    check: str = ""  # the replay row's gradient against eager nodegrad's, from its children
    error: str = ""


def memory_libraries(libraries: Sequence[str]) -> tuple[str, ...]:
    return ("numpy", *(name for name in with_replay(libraries) if name in GRADIENT_STEPS))


def mlp_input_bytes(layers: Sequence[int], batch: int, dtype: Any) -> int:
    params, x, labels = mlp_inputs(layers, batch, dtype)
    return sum(p.nbytes for p in params) + x.nbytes + labels.nbytes


def w7_cases(sizes: Sizes, libraries: Sequence[str]) -> list[MemoryCase]:
    names = memory_libraries(libraries)
    n, batch = sizes.big_n, sizes.batch
    chain_bytes = n * np.dtype(np.float64).itemsize
    cases = [
        MemoryCase(
            "W7",
            f"W7 peak memory, W3 chain on {n:,} float64 (input {chain_bytes / MIB:,.1f} MiB)",
            "torch",
            TARGET,
            names,
            {"computation": "chain", "n": n, "tolerance": 1e-9},
            chain_bytes,
            sizes.memory_children,
            NOT_ABOVE_EAGER,
        )
    ]
    layers = "-".join(map(str, sizes.layers))
    for dtype in ("float32", "float64"):
        mlp_bytes = mlp_input_bytes(sizes.layers, batch, dtype)
        cases.append(
            MemoryCase(
                "W7",
                f"W7 peak memory, W2 MLP {layers}, batch {batch}, {dtype} (input {mlp_bytes / MIB:,.2f} MiB)",
                "torch",
                TARGET,
                names,
                {
                    "computation": "mlp",
                    "layers": list(sizes.layers),
                    "batch": batch,
                    "dtype": dtype,
                    "tolerance": 1e-4 if dtype == "float32" else 1e-9,  # the replay's check, as W2's
                },
                mlp_bytes,
                sizes.memory_children,
                NOT_ABOVE_EAGER,
            )
        )
    return cases


# -- the children ---------------------------------------------------------------------------


def child_environment() -> dict[str, str]:
    """This process's environment without the malloc variables (glibc defaults; see the module docstring)."""
    return {k: v for k, v in os.environ.items() if k not in MALLOC_VARS}


def measure_in_child(library: str, computation: dict[str, Any]) -> dict[str, Any]:
    """Run one child for ``library`` on ``computation``; its JSON result (see memory_child)."""
    spec = {"library": library, "threads": int(os.environ.get("OMP_NUM_THREADS", "1")), **computation}
    completed = subprocess.run(
        [sys.executable, "-m", CHILD_MODULE, json.dumps(spec)],
        cwd=BENCHMARKS_DIR,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if completed.returncode != 0:
        last_lines = completed.stderr.strip().splitlines()[-1:] or [f"exit status {completed.returncode}"]
        msg = f"child process: {last_lines[0]}"
        raise RuntimeError(msg)
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def measure_library(case: MemoryCase, library: str) -> MemoryRow:
    """A library's row: ``case.children`` children, the minimum of each meter."""
    row = MemoryRow(case.title, library, "jit" if library == "jax" else "", case.input_bytes, baseline=case.baseline)
    try:
        results = [measure_in_child(library, case.computation) for _ in range(case.children)]
    except Exception as exc:  # a library failing a workload is a result, not a crash
        row.error = short_error(exc)
        return row
    row.rss_runs_bytes = [r["rss_peak_bytes"] for r in results]
    row.rss_peak_bytes = min(row.rss_runs_bytes)
    row.rss_meter = ", ".join(sorted({r["rss_meter"] for r in results}))
    row.traced_runs_bytes = [r["traced_peak_bytes"] for r in results if r["traced_peak_bytes"] is not None]
    row.traced_peak_bytes = min(row.traced_runs_bytes, default=None)
    row.check = ", ".join(sorted({r["check"] for r in results if r["check"]}))
    return row


def measure_memory_case(case: MemoryCase, judge_targets: bool) -> list[MemoryRow]:
    """Every library on one case, each in its own children; then the ratios to the baseline."""
    rows = []
    for library in case.libraries:
        print(f"  {case.title}: {display_name(library)} ...", file=sys.stderr, flush=True)
        rows.append(measure_library(case, library))
    by_name = {r.library: r for r in rows}
    base = by_name.get(case.baseline)
    for row in rows:
        if base is not None and base.rss_peak_bytes and row.rss_peak_bytes is not None:
            row.ratio = row.rss_peak_bytes / base.rss_peak_bytes
        if row.library == "nodegrad" and case.target is not None:
            row.target = case.target
            row.met = verdict([(row.ratio, case.target)], judge_targets)
        peer = by_name.get(case.replay_peer_target[0]) if case.replay_peer_target else None
        if row.library == REPLAY and case.replay_peer_target and peer is not None:
            row.peer_target, row.peer_ratio = case.replay_peer_target, _replay_ratio(row, peer)
            row.met = verdict([(row.peer_ratio, case.replay_peer_target[1])], judge_targets)
    return rows


def _replay_ratio(row: MemoryRow, eager: MemoryRow) -> float | None:
    """The replay's peak over eager nodegrad's: by tracemalloc where both have it (the same
    allocator, every array counted to the byte; RSS moves by pages and malloc's bookkeeping,
    some 10 KB either way, which decides nothing between two runs of the same arrays), else
    by RSS."""
    if row.traced_peak_bytes is not None and eager.traced_peak_bytes:
        return row.traced_peak_bytes / eager.traced_peak_bytes
    if row.rss_peak_bytes is not None and eager.rss_peak_bytes:
        return row.rss_peak_bytes / eager.rss_peak_bytes
    return None


def memory_notes(rows: Sequence[MemoryRow]) -> list[str]:
    """The lines printed under the W7 tables: how the peaks were measured."""
    if not rows:
        return []
    children = max(len(r.rss_runs_bytes) for r in rows)
    meters = " / ".join(sorted({r.rss_meter for r in rows if r.rss_meter})) or "none"
    notes = [
        f"W7: a fresh process per library, case and repetition, glibc malloc defaults, minimum of {children}; "
        f"RSS peak: {meters} minus VmRSS before the step",
        "W7: tracemalloc n/a for torch and jax (their allocators do not report to it); "
        "x input: multiple of the chain's array, of the MLP's parameters + batch",
    ]
    if "ru_maxrss" in meters:
        notes.append(
            "W7: /proc/self/clear_refs could not reset the high-water mark, so RSS peaks are the process's "
            "lifetime peak (warm-up and imports included) and may overstate the step's"
        )
    return notes
