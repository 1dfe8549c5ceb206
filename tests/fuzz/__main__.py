"""``python -m tests.fuzz --programs N [--seed S] [--jobs J] [--one-mode] [--stacks NAME ...] [--skip-known]``.

Prints each class of disagreement once with a minimal repro, then
``N programs, K disagreements``; exits 1 when K > 0. With ``--jobs J`` the programs are
split into J parts, each drawn from its own seed (``S * 1000 + part``) in a process of its
own.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tests.fuzz import HuntResult, hunt
from tests.fuzz.runner import report, save
from tests.fuzz.stacks import STACK_NAMES
from tests.fuzz.stale import CASE_NAMES


def stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--programs", type=int, default=200, help="how many programs (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument(
        "--stacks",
        nargs="+",
        default=None,
        metavar="NAME",
        help=f"only these stacks or stale cases: {STACK_NAMES + CASE_NAMES}",
    )
    parser.add_argument("--skip-known", action="store_true", help="skip the pairs in tests/fuzz/known.py")
    parser.add_argument("--report", default=None, help="also write the report to this file, as it grows")
    parser.add_argument("--progress", action="store_true", help="a line per 50 programs on stderr")
    parser.add_argument("--jobs", type=int, default=1, help="processes to split the programs among (default 1)")
    parser.add_argument(
        "--one-mode",
        action="store_true",
        help="each stack in one of its modes per program, drawn by the program's seed (as the suite runs it)",
    )
    args = parser.parse_args(argv)
    unknown = set(args.stacks or ()) - set(STACK_NAMES) - set(CASE_NAMES)
    if unknown:
        parser.error(f"no stack or stale case named {sorted(unknown)}")
    start = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, stop)  # `timeout` ends a long run with a report of what ran
    title = f"# python -m tests.fuzz {' '.join(sys.argv[1:] if argv is None else argv)}\n"
    options = {"only": args.stacks, "skip_known": args.skip_known, "progress": args.progress}
    options["every_mode"] = not args.one_mode
    try:
        if args.jobs > 1:
            result = _in_parts(args.programs, args.seed, args.jobs, args.report, title, options)
        else:
            result = hunt(args.programs, seed=args.seed, report_to=args.report, title=title, **options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    print(result.text, flush=True)  # its last line is the count, after everything else
    return 1 if result.findings else 0


def _part(count: int, seed: int, options: dict[str, Any], report_to: str | None) -> HuntResult:
    signal.signal(signal.SIGTERM, stop)
    return hunt(count, seed=seed, report_to=report_to, **options)


def _in_parts(
    count: int, seed: int, jobs: int, report_to: str | None, title: str, options: dict[str, Any]
) -> HuntResult:
    """The programs split into ``jobs`` parts, each in a process, drawn from its own seed."""
    sizes = [count // jobs + (k < count % jobs) for k in range(jobs)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        # Each part writes a report of its own as it grows (REPORT.partK): a long run can be
        # read, and a disagreement repeated, before it ends.
        seeds = [seed * 1000 + k for k in range(jobs)]
        reports = [f"{report_to}.part{k}" if report_to else None for k in range(jobs)]
        parts = list(pool.map(_part, sizes, seeds, [options] * jobs, reports))
    done = sum(p.count for p in parts)
    findings = [f for p in parts for f in p.findings]
    refused = sum(p.refused for p in parts)
    if report_to:
        with open(report_to, "w") as out:
            out.write(report(findings, done, title=title, refused=refused) + "\n")
        save(findings, report_to + ".json")
    text = report(findings, done, refused=refused)
    return HuntResult(done, findings, sum(p.skipped for p in parts), refused, text)


if __name__ == "__main__":
    sys.exit(main())
