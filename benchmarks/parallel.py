"""Data-parallel gradients with Dask against one whole-batch gradient, in one run.

Run from the repository root::

    python benchmarks/parallel.py              # 400,000 rows in 8 blocks, 2 threads
    python benchmarks/parallel.py --quick      # tiny sizes: a smoke test

The loss is a tanh layer and a linear head over rows of 32 features, mean squared error
(``loss``). It is differentiated three ways with respect to the same parameters:
``nodegrad.value_and_grad`` on all rows at once (the baseline), and
``nodegrad.parallel.value_and_grad`` over the rows split into blocks, with Dask's
``"sync"`` scheduler (one block after another: what the splitting and Dask cost) and its
``"threads"`` scheduler (the blocks on as many threads as there are cores). The gradients
are checked against the baseline's first. Times are the minimum over interleaved rounds,
reported as ratios to the baseline; BLAS runs on one thread in every case, so that the
threads scheduler is what spreads the work. The malloc and thread settings are those of
``run.py`` (the script re-executes itself with them).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from workloads.environment import core_count, relaunch_with_environment


def loss(params: dict[str, Any], batch: dict[str, Any]) -> Any:
    """Mean squared error of a tanh layer and a linear head, over the rows of ``batch``."""
    hidden = np.tanh(batch["x"] @ params["w1"])
    return np.mean(((hidden @ params["w2"])[:, 0] - batch["y"]) ** 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    args = parser.parse_args(argv)
    relaunch_with_environment(1)
    import dask
    import dask.array as da

    import nodegrad as ng
    from nodegrad import parallel

    rows, blocks, rounds = (4_000, 4, 2) if args.quick else (400_000, 8, 7)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((rows, 32)), rng.standard_normal(rows)
    params = {"w1": rng.standard_normal((32, 64)) / 6, "w2": rng.standard_normal((64, 1)) / 8}
    chunk = rows // blocks
    columns = {"x": da.from_array(x, chunks=(chunk, 32)), "y": da.from_array(y, chunks=chunk)}
    steps: dict[str, Callable[[], Any]] = {
        "whole batch": lambda: ng.value_and_grad(loss)(params, {"x": x, "y": y}),
        "blocks, sync": lambda: parallel.value_and_grad(loss, scheduler="sync")(params, columns),
        f"blocks, {core_count()} threads": lambda: parallel.value_and_grad(loss, scheduler="threads")(params, columns),
    }
    reference = steps["whole batch"]()
    for name, step in steps.items():
        value, grad = step()
        assert np.isclose(value, reference[0], rtol=1e-10), name
        for k in params:
            assert np.allclose(grad[k], reference[1][k], rtol=1e-8, atol=1e-12), (name, k)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    base = min(times["whole batch"])
    print(f"{rows:,} rows x 32 features in {blocks} blocks; dask {dask.__version__}, {core_count()} cores")
    print(f"  {'how':<22} {'min ms':>8} {'ratio':>7}")
    for name, ts in times.items():
        print(f"  {name:<22} {min(ts) * 1e3:8.1f} {min(ts) / base:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
