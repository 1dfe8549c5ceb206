"""The benchmark script keeps running: a smoke test at tiny sizes (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "run.py"


def test_quick_benchmark_runs_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for workload in ("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "W13", "W14"):
        assert f"\n{workload} " in done.stdout
    assert "\nW13s spsolve" in done.stdout
    assert "nodegrad" in done.stdout
    assert out.stat().st_size > 0


def test_quick_parallel_benchmark_runs() -> None:
    script = SCRIPT.parent / "parallel.py"
    done = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for row in ("whole batch", "blocks, sync", "threads"):
        assert row in done.stdout
