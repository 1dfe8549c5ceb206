"""A differential fuzzer: random programs under every transform stack, against oracles
that share no code with what they test (a Python loop of the unbatched transform, the
eager call), and a hunt for stale replayed results.

``python -m tests.fuzz --programs N`` runs it (see ``docs/testing.md``);
``tests/test_differential.py`` runs a fixed budget of it in the default suite.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs

from tests.fuzz import known
from tests.fuzz.runner import Finding, check_program, programs, report, save
from tests.fuzz.stacks import STACKS
from tests.fuzz.stale import CASES, repro, run

__all__ = ["Finding", "HuntResult", "hunt"]


@attrs.frozen
class HuntResult:
    count: int
    findings: list[Finding]
    skipped: int  # (program, stack) pairs left out as known
    refused: int  # runs that raised a refusal docs/vmap.md lists
    text: str


def hunt(
    count: int,
    *,
    seed: int = 0,
    only: Sequence[str] | None = None,
    skip_known: bool = False,
    report_to: str | None = None,
    progress: bool = False,
    title: str = "",
    every_mode: bool = True,
) -> HuntResult:
    """Run ``count`` programs (every eighth a stale-result case) and report what disagrees;
    ``only`` names the stacks and stale cases to run (all by default)."""
    chosen = [s for s in STACKS if only is None or s.name in only]
    cases = [c for c in CASES if only is None or f"stale:{c.name}" in only]
    findings: list[Finding] = []
    skipped = 0
    shrunk: Counter[tuple[str, str]] = Counter()
    refused: Counter[str] = Counter()
    done = 0
    try:
        for n, (program_seed, program) in enumerate(programs(count, seed)):
            if program is None:
                if cases:
                    case = cases[program_seed % len(cases)]
                    reason = skip_known and known.skipped(f"stale:{case.name}", set())
                    skipped += bool(reason)
                    problem = None if reason else run(case, program_seed)
                    if problem:
                        findings.append(
                            Finding(f"stale:{case.name}", "replay", problem, repro(case, program_seed, problem), ())
                        )
            else:
                skipped += sum(1 for s in chosen if skip_known and known.skipped(s.name, program.ops()))
                findings += check_program(program, program_seed, skip_known, chosen, every_mode, shrunk, refused)
            if report_to and (n + 1) % 25 == 0:
                Path(report_to).write_text(report(findings, n + 1, title=title, refused=refused.total()) + "\n")
                save(findings, report_to + ".json")
            if progress and (n + 1) % 50 == 0:
                print(f"{n + 1} programs, {len(findings)} disagreements", file=sys.stderr, flush=True)
            done = n + 1
    except KeyboardInterrupt:  # a time limit (SIGTERM, Ctrl-C): report what ran
        pass
    text = report(findings, done, refused=refused.total())
    if report_to:
        Path(report_to).write_text(report(findings, done, title=title, refused=refused.total()) + "\n")
        save(findings, report_to + ".json")
    return HuntResult(done, findings, skipped, refused.total(), text)
