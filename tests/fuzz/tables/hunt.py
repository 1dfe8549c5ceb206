"""A run: the programs of many seeds under the checks, each defect shrunk and kept with a
repro, and the report of it all."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
import numpy as np

from tests.fuzz.tables.checks import CHECKS, run_check
from tests.fuzz.tables.drawing import random_program
from tests.fuzz.tables.outcomes import DEFECTS, Outcome
from tests.fuzz.tables.programs import ALL_FAMILIES, FAMILIES
from tests.fuzz.tables.shrink import SHRINK_BUDGET, repro, shrink

SHRINK_PER_CLASS = 3  # defects of one class shrunk; the others are counted only


@attrs.frozen
class Finding:
    seed: int
    check: str
    verdict: str
    what: str
    detail: str
    repro: str
    families: tuple[str, ...]  # of the (shrunk) program's steps
    shrunk: bool

    @property
    def key(self) -> tuple[str, str]:
        return Outcome(self.check, self.verdict, self.what).key


@attrs.define
class HuntResult:
    count: int = 0
    seconds: float = 0.0
    verdicts: Counter[tuple[str, str]] = attrs.Factory(Counter)  # (check, verdict) -> runs
    refusals: Counter[tuple[str, str]] = attrs.Factory(Counter)  # (method, check) -> runs
    refused_where_vjp_agrees: Counter[tuple[str, str]] = attrs.Factory(Counter)  # of those, on programs vjp runs
    refused_same_rows: Counter[tuple[str, str]] = attrs.Factory(Counter)  # of those, vmap's with one index
    refusal_texts: dict[str, str] = attrs.Factory(dict)  # method -> the first program's seed and message
    notes: Counter[str] = attrs.Factory(Counter)
    drawn: Counter[str] = attrs.Factory(Counter)  # family -> programs holding it
    defective: Counter[str] = attrs.Factory(Counter)  # family -> programs holding it with a defect
    findings: list[Finding] = attrs.Factory(list)

    @property
    def defects(self) -> list[Finding]:
        return self.findings

    def add(self, other: HuntResult) -> None:
        self.count += other.count
        self.seconds = max(self.seconds, other.seconds)
        self.verdicts.update(other.verdicts)
        self.refusals.update(other.refusals)
        self.refused_where_vjp_agrees.update(other.refused_where_vjp_agrees)
        self.refused_same_rows.update(other.refused_same_rows)
        self.notes.update(other.notes)
        self.drawn.update(other.drawn)
        self.defective.update(other.defective)
        self.refusal_texts = {**other.refusal_texts, **self.refusal_texts}
        self.findings += other.findings


def program_seeds(count: int, seed: int) -> list[int]:
    return [int(s) for s in np.random.default_rng(seed).integers(2**31, size=count)]


def hunt(
    seeds: Sequence[int],
    *,
    families: Iterable[str] = ALL_FAMILIES,
    checks: Sequence[str] = CHECKS,
    shrink_budget: int = SHRINK_BUDGET,
    shrink_per_class: int = SHRINK_PER_CLASS,
    progress: bool = False,
    report_to: str | None = None,
    title: str = "",
) -> HuntResult:
    """Draw the program of each seed and run ``checks`` on it; each defect found is shrunk
    (the first few of its class) and kept with a repro."""
    result = HuntResult()
    families = frozenset(families)
    shrunk: Counter[tuple[str, str]] = Counter()
    start = time.perf_counter()
    try:
        for n, seed in enumerate(seeds):
            program = random_program(seed, families)
            for family in program.families:
                result.drawn[family] += 1
            outcomes = [run_check(program, check) for check in checks]
            eager = [o.verdict for o in outcomes if o.check == "vjp"] == ["agree"]
            for outcome in outcomes:
                check = outcome.check
                result.verdicts[check, outcome.verdict] += 1
                result.notes.update(f"{check}: {note}" for note in outcome.notes)
                if outcome.verdict == "refused":
                    result.refusals[outcome.what, check] += 1
                    result.refused_where_vjp_agrees[outcome.what, check] += eager
                    result.refused_same_rows[outcome.what, check] += outcome.same_rows
                    result.refusal_texts.setdefault(outcome.what, f"seed {seed}: {outcome.detail}")
                if not outcome.defect:
                    continue
                small, found, shrinking = program, outcome, shrunk[outcome.key] < shrink_per_class
                if shrinking and shrink_budget > 0:
                    shrunk[outcome.key] += 1
                    small, found = shrink(program, outcome, shrink_budget)
                families_of = tuple(sorted(small.families))
                text = repro(small, found)
                result.findings.append(
                    Finding(seed, check, found.verdict, found.what, found.detail, text, families_of, shrinking)
                )
            if any(o.defect for o in outcomes):
                for family in program.families:
                    result.defective[family] += 1
            result.count = n + 1
            result.seconds = time.perf_counter() - start
            if progress and (n + 1) % 20 == 0:
                print(f"{n + 1} programs, {len(result.findings)} defects", file=sys.stderr, flush=True)
            if report_to and (n + 1) % 25 == 0:
                Path(report_to).write_text(report(result, title=title))
    except KeyboardInterrupt:  # a time limit: report what ran
        pass
    result.seconds = time.perf_counter() - start
    if report_to:
        Path(report_to).write_text(report(result, title=title))
    return result


def report(result: HuntResult, title: str = "", shown: int = 2) -> str:
    """Each class of defect once (its count, checks, the families of its shrunk programs and
    the shortest repros), then the refusals by method, the outcomes by check and family."""
    parts = [title] if title else []
    parts.append(f"{result.count} programs, {len(result.findings)} defects ({result.seconds:.0f} s)\n")
    parts.append("## Outcomes by check\n")
    parts.append("| check | agree | refused | foreign | unexplained | differs | skipped |")
    parts.append("|---|---|---|---|---|---|---|")
    for check in CHECKS:
        row = [str(result.verdicts[check, v]) for v in ("agree", "refused", *DEFECTS, "skipped")]
        if any(r != "0" for r in row):
            parts.append(f"| {check} | " + " | ".join(row) + " |")
    classes: dict[tuple[str, str], list[Finding]] = {}
    for finding in result.findings:
        classes.setdefault(finding.key, []).append(finding)
    parts.append(f"\n## Defect classes ({len(classes)})\n")
    for k, (key, members) in enumerate(sorted(classes.items(), key=lambda kv: -len(kv[1]))):
        checks = Counter(f.check for f in members)
        programs = len({f.seed for f in members})
        families = Counter(fam for f in members if f.shrunk for fam in f.families)
        parts.append(f"### {k + 1}. {(key[0] + ': ') if key[0] else ''}{key[1]}")
        parts.append(
            f"{len(members)} runs in {programs} programs; checks: "
            + ", ".join(f"{c} x{n}" for c, n in checks.most_common())
        )
        seeds = sorted({f.seed for f in members})
        parts.append(f"program seeds: {', '.join(map(str, seeds[:8]))}{' ...' if len(seeds) > 8 else ''}")
        parts.append(
            "families of the shrunk programs: "
            + (", ".join(f"{f} x{n}" for f, n in families.most_common()) or "none (a plain pipeline)")
        )
        for finding in sorted((f for f in members if f.shrunk), key=lambda f: len(f.repro))[:shown]:
            parts.append(f"\nseed {finding.seed}, {finding.check}: {finding.detail[:200]}")
            parts.append(f"```python\n{finding.repro}```")
        parts.append("")
    if result.refusals:
        parts.append("## Documented refusals (nodegrad errors naming what to do)\n")
        parts.append(
            "Runs on programs whose vjp agrees; vmap's where pandas' output has one index for every example.\n"
        )
        parts.append("| method | runs | checks | vjp agrees | one index | first program and message |")
        parts.append("|---|---|---|---|---|---|")
        methods: dict[str, Counter[str]] = {}
        for (method, check), n in result.refusals.items():
            methods.setdefault(method, Counter())[check] += n
        for method, checks in sorted(methods.items(), key=lambda kv: -kv[1].total()):
            text = result.refusal_texts.get(method, "").replace("|", "/")[:200]
            where = ", ".join(f"{c} x{n}" for c, n in checks.items())
            eager = sum(n for (m, _), n in result.refused_where_vjp_agrees.items() if m == method)
            same = sum(n for (m, _), n in result.refused_same_rows.items() if m == method)
            parts.append(f"| {method} | {checks.total()} | {where} | {eager} | {same} | {text} |")
        parts.append("")
    if result.notes:
        parts.append("## Notes\n")
        parts += [f"- {note} (x{n})" for note, n in result.notes.most_common(10)]
        parts.append("")
    parts.append("## Families\n")
    parts.append("| family | programs holding it | with a defect |")
    parts.append("|---|---|---|")
    for family in FAMILIES:
        if result.drawn[family]:
            parts.append(f"| {family} | {result.drawn[family]} | {result.defective[family]} |")
    parts.append(f"\n{result.count} programs, {len(result.findings)} defects")
    return "\n".join(parts) + "\n"
