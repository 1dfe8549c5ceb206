"""The process the benchmarks run in: malloc and thread settings, and what the header reports.

Fresh large allocations are page-fault bound on these machines, so every library runs under
the same glibc malloc settings, and under the same thread settings. Both are read only at
process start, so unless they already have the wanted values the script re-executes itself
with them set (:func:`relaunch_with_environment`); ``run.py``'s docstring gives the values
and why. :func:`refault_count` checks that freed large buffers are reused, and
:func:`environment_report` collects everything the header prints and the JSON records.
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .timing import Sizes

HEAP_BYTES = str(16 * 2**30)  # buffers below this size come from (and return to) the heap
RELAUNCH_MARK = "NODEGRAD_BENCH_RELAUNCHED"
MALLOC_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def core_count() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def wanted_environment(threads: int | None) -> dict[str, str]:
    """The variables every library must see from process start.

    Unset malloc variables get :data:`HEAP_BYTES`. Every thread variable gets ``threads``
    when it is given, else the caller's ``OMP_NUM_THREADS``, else 1 (``run.py``'s docstring
    says why 1).
    """
    wanted = {k: os.environ.get(k, HEAP_BYTES) for k in MALLOC_VARS}
    count = str(threads) if threads is not None else os.environ.get("OMP_NUM_THREADS", "1")
    wanted.update(dict.fromkeys(THREAD_VARS, count))
    return wanted


def relaunch_with_environment(threads: int | None) -> None:
    """Re-execute this script unless its malloc and thread variables already have the
    wanted values.

    glibc reads the malloc variables and BLAS libraries read the thread variables only
    when the process starts, so setting ``os.environ`` here would be too late.
    """
    changed = {k: v for k, v in wanted_environment(threads).items() if os.environ.get(k) != v}
    if not changed or os.environ.get(RELAUNCH_MARK):
        return
    env = {**os.environ, **changed, RELAUNCH_MARK: ",".join(changed)}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def refault_count(n_bytes: int = 80_000_000) -> int:
    """Minor page faults while filling a buffer of ``n_bytes`` right after freeing one.

    Zero when malloc hands the freed buffer back (heap reuse); about a hundred or more when
    every large allocation is a fresh mmap (how many depends on how many huge pages the
    kernel has free at that moment). Measured before the peers are imported.
    """
    np.ones(n_bytes // 8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(n_bytes // 8)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def environment_report(
    versions: dict[str, str], skipped: dict[str, str], sizes: Sizes, refaults: int
) -> dict[str, Any]:
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    relaunched = os.environ.get(RELAUNCH_MARK, "")
    torch_threads = None
    if "torch" in versions:
        import torch

        torch_threads = torch.get_num_threads()
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": core_count(),
        "numpy_blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "versions": versions,
        "skipped": skipped,
        "malloc": {k: os.environ.get(k) for k in MALLOC_VARS},
        "threads": {**{k: os.environ.get(k) for k in THREAD_VARS}, "torch.get_num_threads": torch_threads},
        "set_by_script": relaunched.split(",") if relaunched else [],
        "refaults_80MB": refaults,
        "rounds": sizes.rounds,
        "runs_per_round": sizes.runs_per_round,
        "timing": "time.perf_counter; 1 warm-up run, then libraries interleaved in rounds; min (ratios) and "
        "median of all runs; gc enabled, gc.collect() once before the rounds",
    }
