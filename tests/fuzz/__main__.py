"""``python -m tests.fuzz --programs N [--seed S] [--stacks NAME ...] [--skip-known]``.

Prints each class of disagreement once with a minimal repro, then
``N programs, K disagreements``; exits 1 when K > 0.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from tests.fuzz import hunt
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
    args = parser.parse_args(argv)
    unknown = set(args.stacks or ()) - set(STACK_NAMES) - set(CASE_NAMES)
    if unknown:
        parser.error(f"no stack or stale case named {sorted(unknown)}")
    start = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, stop)  # `timeout` ends a long run with a report of what ran
    try:
        result = hunt(
            args.programs,
            seed=args.seed,
            only=args.stacks,
            skip_known=args.skip_known,
            report_to=args.report,
            progress=args.progress,
            title=f"# python -m tests.fuzz {' '.join(sys.argv[1:] if argv is None else argv)}\n",
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    print(result.text, flush=True)  # its last line is the count, after everything else
    return 1 if result.findings else 0


if __name__ == "__main__":
    sys.exit(main())
