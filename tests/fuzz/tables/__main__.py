"""``python -m tests.fuzz.tables --programs N [--seed S] [--jobs J] [--report F] [--families ...]
[--without ...] [--checks ...] [--one SEED] [--no-shrink]``: the tester's command line (see
the package's docstring)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from tests.fuzz import tables
from tests.fuzz.tables.checks import CHECKS, run_check
from tests.fuzz.tables.drawing import random_program
from tests.fuzz.tables.hunt import HuntResult, hunt, program_seeds, report
from tests.fuzz.tables.programs import FAMILIES, Program
from tests.fuzz.tables.shrink import SHRINK_BUDGET


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.tables", description=tables.__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=200, help="how many programs (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--report", default=None, help="write the report (markdown) to this file")
    parser.add_argument("--families", nargs="+", default=None, metavar="NAME", help=f"only these: {list(FAMILIES)}")
    parser.add_argument("--without", nargs="+", default=(), metavar="NAME", help="all families but these")
    parser.add_argument("--checks", nargs="+", default=list(CHECKS), choices=CHECKS, help="the checks to run")
    parser.add_argument("--jobs", type=int, default=1, help="processes to split the programs among")
    parser.add_argument("--no-shrink", action="store_true", help="report defects without shrinking them")
    parser.add_argument("--progress", action="store_true", help="a line per 20 programs on stderr")
    parser.add_argument("--one", type=int, default=None, metavar="SEED", help="print one program and its outcomes")
    args = parser.parse_args(argv)
    families = set(args.families or FAMILIES) - set(args.without)
    unknown = (set(args.families or ()) | set(args.without)) - set(FAMILIES)
    if unknown:
        parser.error(f"no family named {sorted(unknown)}")
    if args.one is not None:
        _print_one(random_program(args.one, families), args.checks)
        return 0
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    chosen = "" if families == set(FAMILIES) else f" --families {' '.join(sorted(families))}"
    title = (
        f"# python -m tests.fuzz.tables {argv_text}\n\nfamilies: {', '.join(sorted(families))}; checks: "
        f"{', '.join(args.checks)}\n\n`python -m tests.fuzz.tables --one SEED{chosen}` prints one program "
        "and its outcomes again.\n"
    )
    seeds = program_seeds(args.programs, args.seed)
    options = {"families": frozenset(families), "checks": tuple(args.checks), "progress": args.progress}
    options["shrink_budget"] = 0 if args.no_shrink else SHRINK_BUDGET
    start = time.perf_counter()
    if args.jobs > 1:
        result = _in_parts(seeds, args.jobs, options)
    else:
        result = hunt(seeds, **options, report_to=args.report, title=title)
    result.seconds = time.perf_counter() - start
    text = report(result, title=title)
    if args.report:
        Path(args.report).write_text(text)
    print(text)
    return 1 if result.findings else 0


def _print_one(program: Program, checks: Sequence[str]) -> None:
    print(program.source())
    for check in checks:
        outcome = run_check(program, check)
        print(f"# {check}: {outcome.verdict} {outcome.what} {outcome.detail}")


def _in_parts(seeds: list[int], jobs: int, options: dict[str, Any]) -> HuntResult:
    """The seeds dealt among ``jobs`` processes, each hunting its share; their results added."""
    parts = [seeds[k::jobs] for k in range(jobs)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(partial(hunt, **options), parts))
    result = HuntResult()
    for part in results:
        result.add(part)
    return result


if __name__ == "__main__":
    sys.exit(main())
