"""W7's child process: the peak memory of one gradient step of one library, printed as JSON.

Run by :func:`.memory.measure_in_child` as ``python -m workloads.memory_child SPEC`` from
the ``benchmarks`` directory, once per library, computation and repetition, so that
nothing another library allocated, cached or left in the heap is in this process. SPEC is
a JSON object: ``library``, ``threads``, ``computation`` (``"chain"`` with ``n``, or
``"mlp"`` with ``layers``, ``batch`` and ``dtype``) and ``tolerance``. The step is the one
the timing workloads run (:func:`.large_chain.bounded_chain_steps`, :func:`.mlp.mlp_steps`).
For the replay row (:data:`.libraries.REPLAY`) building the step records nodegrad's
gradient function (:func:`.libraries.replayed_step`), so the warm-up and both measured
steps are replays; the warm-up's gradient is compared with eager nodegrad's, computed in
this child before anything is measured (:func:`check_replay`).

The child imports the library, builds the inputs and runs the step once as a warm-up
(imports, lazy initialisation and JAX's compilation are not what is measured), then
measures two more steps, each after ``gc.collect()`` and glibc's ``malloc_trim(0)`` (so
that memory the warm-up freed but malloc kept is handed back, and the resident set before
the step is live memory only):

1. RSS high-water (:func:`rss_peak`), first and without tracemalloc, which slows
   allocation and holds memory of its own.
2. tracemalloc (:func:`traced_peak`): the traced peak during the step minus the traced
   memory at its start. numpy reports its array buffers to tracemalloc; PyTorch's and
   JAX's allocators do not, so for those two (chosen by name, :data:`UNTRACED`) the value
   is ``null`` rather than the few kilobytes of Python objects it would show.

The last line of stdout is ``{"rss_peak_bytes", "rss_meter", "traced_peak_bytes", "check"}``
(``check`` empty but for the replay row).
"""

from __future__ import annotations

import ctypes
import gc
import json
import resource
import sys
import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np

from .large_chain import bounded_chain_steps
from .libraries import REPLAY, Step, import_library, replay_check
from .mlp import mlp_steps

UNTRACED = frozenset({"torch", "jax"})  # their buffers bypass tracemalloc
# After a reset the high-water mark must equal the resident set within this much (a read of
# /proc/self/status allocates a little); otherwise the reset is taken not to have worked.
RESET_SLACK_BYTES = 256 * 1024
CLEAR_REFS_METER = "VmHWM after clear_refs"
MAXRSS_METER = "ru_maxrss (lifetime peak)"


def build_step(spec: dict[str, Any]) -> Step:
    """The library's gradient step on the spec's computation, its inputs built."""
    library = spec["library"]
    if spec["computation"] == "chain":
        builders = bounded_chain_steps([library], spec["n"], jit=True)
    else:
        builders = mlp_steps([library], spec["layers"], spec["batch"], np.dtype(spec["dtype"]), jit=True)
    return builders[library]()


def check_replay(spec: dict[str, Any], replayed: Any) -> str:
    """The replay row's check cell: ``replayed`` (a replay's gradient) against the eager
    nodegrad step's on the same inputs, which is built, run and freed here."""
    eager = build_step({**spec, "library": "nodegrad"})()
    return replay_check(replayed, eager, spec["tolerance"])


def release_free_heap() -> None:
    """Collect garbage, then hand the heap's free pages back to the kernel (glibc only).

    Without this, buffers the warm-up freed below malloc's (dynamic) mmap threshold stay
    resident, and a step that reuses them would show a smaller peak than one that does not.
    """
    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.malloc_trim(0)


def status_bytes(field: str) -> int:
    """A ``kB`` line of ``/proc/self/status`` (VmRSS, VmHWM), in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    msg = f"no {field} in /proc/self/status"
    raise OSError(msg)


def reset_high_water_mark() -> bool:
    """Reset the kernel's peak resident set size to the current one; whether that worked."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return status_bytes("VmHWM") - status_bytes("VmRSS") <= RESET_SLACK_BYTES


def rss_peak(step: Step) -> tuple[int, str]:
    """How far the resident set rose above its level before the step, and the meter used.

    The meter is the high-water mark reset just before the step. Where the reset does not
    work, ``ru_maxrss`` stands in: the peak of the whole process, so it also counts the
    warm-up and the imports, and overstates the step's peak when those went higher.
    """
    release_free_heap()
    meter = CLEAR_REFS_METER if reset_high_water_mark() else MAXRSS_METER
    before = status_bytes("VmRSS")
    result = step()
    if meter == CLEAR_REFS_METER:
        peak = status_bytes("VmHWM")
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    del result
    return max(peak - before, 0), meter


def traced_peak(step: Step) -> int:
    """The peak of memory traced by tracemalloc during the step, above the traced memory at its start."""
    release_free_heap()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak - before


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Warm up, then the RSS peak of one step, then the traced peak of another (the replay
    row: record, warm up and check against eager nodegrad, then the same)."""
    if spec["library"] != "numpy":
        import_library("nodegrad" if spec["library"] == REPLAY else spec["library"], spec["threads"])
    step = build_step(spec)
    warm_up = step()
    check = check_replay(spec, warm_up) if spec["library"] == REPLAY else ""
    del warm_up
    rss, meter = rss_peak(step)
    traced = None if spec["library"] in UNTRACED else traced_peak(step)
    return {"rss_peak_bytes": rss, "rss_meter": meter, "traced_peak_bytes": traced, "check": check}


def main(argv: Sequence[str]) -> int:
    print(json.dumps(measure(json.loads(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
