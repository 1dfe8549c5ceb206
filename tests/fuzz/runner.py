"""Run programs under the stacks, shrink what disagrees, group it, print repros."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from tests.fuzz import known
from tests.fuzz.programs import HEADER, Program, literal, random_program, values, without_step
from tests.fuzz.stacks import BATCH, STACKS, Stack, compare, ex, setup_lines, shapes, stack, tsum

RTOL = {"float64": 1e-12, "float32": 1e-4}
SHRINK_BUDGET = 40  # runs of the stack while shrinking one disagreement
SHRINK_PER_CLASS = 12  # findings of one class shrunk; the others are counted only
VALUE_NAMES = ("P", "PB", "TP", "TPB", "X", "I", "TX", "XX", "II")
REFUSED = "refused as documented"  # what problem_of says of a refusal docs/vmap.md lists


@attrs.frozen
class Finding:
    stack: str
    mode: str
    problem: str  # what differs, with figures
    repro: str  # a runnable script that prints the difference
    ops: tuple[str, ...]  # the shrunk program's ops
    shrunk: bool = True  # False past SHRINK_PER_CLASS findings of its class: counted, not shrunk

    @property
    def key(self) -> tuple[str, str]:
        """One class of bug: an exception by its message, whichever stack raised it (one bug
        of an op breaks every stack built on vmap); a wrong value by its stack too."""
        kind = category(self.problem)
        return ("", kind) if "raised" in kind else (self.stack, kind)


def category(problem: str) -> str:
    """A problem without its figures: the kind of difference, the exception and its message."""
    problem = re.sub(r"plain leaf (\w+)[\s\S]* vs (\w+)[\s\S]*", r"plain leaf \1 vs \2", problem)
    problem = re.sub(r"\(max error.*\)|\([\d.e+-]+\)", "", problem)
    problem = re.sub(r" at out\S*|^call \d+: ", "", problem)
    problem = re.sub(r"\(.*?\)|\[.*?\]|'.*?'|\d+", "#", problem)
    return problem.strip()[:120]


def namespace(program: Program, seed: int, mode: str, code: str) -> dict[str, Any]:
    ns = program.compile()
    ns.update(values(program, seed, BATCH))
    ns.update(ex=ex, stack=stack, tsum=tsum, shapes=shapes, B=BATCH)
    for line in setup_lines(mode, code):
        exec(line, ns)
    return ns


def quietly(thunk: Callable[[], Any]) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return thunk()


def finite(value: Any) -> bool:
    from tests.fuzz.stacks import leaves, numeric

    return all(np.all(np.isfinite(v)) for _, v in leaves(value) if numeric(v))


def well_formed(program: Program, seed: int) -> bool:
    """The program runs eagerly on every example and gives finite values."""
    ns = namespace(program, seed, "args", "")
    try:
        outs = quietly(lambda: [ns["loss"](ns["P"], ns["X"][b], ns["I"][b]) for b in range(BATCH)])
    except Exception:
        return False
    return finite(outs) and all(abs(float(o)) < 1e8 for o in outs)


def problem_of(program: Program, seed: int, st: Stack, mode: str) -> str | None:
    """What ``st`` gets wrong on ``program`` in ``mode``, or None (also when the oracle
    cannot be computed, which the program's author avoids; an oracle raising where the
    eager program runs is a problem of the unbatched transform)."""
    ns = namespace(program, seed, mode, st.got + st.want)
    try:
        want = quietly(lambda: eval(st.want, ns))
    except Exception as error:  # a replay's oracle is an eager transform, tested by its own stack
        return None if st.exact else f"the oracle raised {type(error).__name__}: {first_line(error)}"
    if not finite(want):
        return None
    try:
        got = quietly(lambda: eval(st.got, ns))
    except Exception as error:
        if known.refused_as_documented(st.name, mode, program.ops(), error):
            return REFUSED
        return f"raised {type(error).__name__}: {first_line(error)}"
    try:
        return compare(got, want, exact=st.exact, rtol=RTOL[program.dtype])
    except Exception as error:  # what came back cannot even be compared
        return f"the result cannot be compared: {type(error).__name__}: {first_line(error)}"


def first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [""])[0][:300]


def shrink(program: Program, seed: int, st: Stack, mode: str, problem: str) -> tuple[Program, str]:
    """Drop steps while the same kind of problem remains."""
    target = category(problem)
    changed, budget = True, SHRINK_BUDGET
    while changed and budget > 0:
        changed = False
        for n in reversed(range(len(program.steps))):
            candidate = without_step(program, n)
            if candidate is None or not st.fits(candidate) or not well_formed(candidate, seed):
                continue
            budget -= 1
            found = problem_of(candidate, seed, st, mode)
            if found is not None and category(found) == target:
                program, problem, changed = candidate, found, True
                break
    return program, problem


def repro(program: Program, seed: int, st: Stack, mode: str, problem: str) -> str:
    code = st.got + " " + st.want
    setup = setup_lines(mode, code)
    used = set(re.findall(r"\w+", code + " ".join(setup)))
    vals = values(program, seed, BATCH)
    lines = [
        f"# {st.name} | {mode} | {program.dtype} | {problem}",
        HEADER.rstrip(),
        "from tests.fuzz.stacks import compare, ex, shapes, stack, tsum",
        "",
        "",
        program.source(),
        *(f"{name} = {literal(vals[name])}" for name in VALUE_NAMES if name in used),
        f"B = {BATCH}",
        *setup,
        f"got = {st.got}",
        f"want = {st.want}",
        f"print(compare(got, want, exact={st.exact}, rtol={RTOL[program.dtype]}))",
    ]
    return "\n".join(lines) + "\n"


def check_program(
    program: Program,
    seed: int,
    skip_known: bool,
    chosen: list[Stack] = STACKS,
    every_mode: bool = True,
    shrunk: Counter[tuple[str, str]] | None = None,
    refused: Counter[str] | None = None,
) -> list[Finding]:
    """What each stack gets wrong on ``program``, shrunk (the first SHRINK_PER_CLASS of
    each class in ``shrunk``'s count); in every mode, or in one drawn by the seed. A
    documented refusal is counted in ``refused`` by stack, not found."""
    shrunk = Counter() if shrunk is None else shrunk
    refused = Counter() if refused is None else refused
    findings = []
    for st in chosen:
        if not st.fits(program) or (skip_known and known.skipped(st.name, program.ops())):
            continue
        for mode in st.modes if every_mode else (st.modes[seed % len(st.modes)],):
            problem = problem_of(program, seed, st, mode)
            if problem == REFUSED:
                refused[st.name] += 1
                continue
            if problem is None:
                continue
            key = (st.name, category(problem))
            small, shrinking = program, shrunk[key] < SHRINK_PER_CLASS
            if shrinking:
                shrunk[key] += 1
                small, problem = shrink(program, seed, st, mode, problem)
            text = repro(small, seed, st, mode, problem)
            findings.append(Finding(st.name, mode, problem, text, tuple(sorted(small.ops())), shrinking))
            break  # one mode is enough to show a stack's bug on this program
    return findings


def programs(count: int, seed: int) -> Iterable[tuple[int, Program | None]]:
    """``count`` program seeds; every eighth is a stale-result case (None here)."""
    rng = np.random.default_rng(seed)
    for n in range(count):
        program_seed = int(rng.integers(2**31))
        if n % 8 == 7:
            yield program_seed, None
            continue
        while True:
            program = random_program(np.random.default_rng(program_seed))
            if well_formed(program, program_seed):
                break
            program_seed = int(rng.integers(2**31))
        yield program_seed, program


def report(findings: list[Finding], count: int, shown: int = 5, title: str = "", refused: int = 0) -> str:
    """Each class once: the stacks that show it, the smallest repros of up to ``shown`` of its
    sets of ops (the ops tell an op's bug from a stack's), the other sets listed."""
    classes: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        classes.setdefault(finding.key, []).append(finding)
    parts = [title] if title else []
    for (name, kind), members in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        by_ops: dict[tuple[str, ...], list[Finding]] = {}
        for finding in sorted(members, key=lambda f: len(f.repro)):
            if finding.shrunk:
                by_ops.setdefault(finding.ops, []).append(finding)
        stacks = Counter(f.stack for f in members)
        parts.append(f"## {name + ': ' if name else ''}{kind}")
        parts.append(f"{len(members)} disagreements; stacks: " + ", ".join(f"{s} x{n}" for s, n in stacks.items()))
        parts.append("modes: " + ", ".join(sorted({f.mode for f in members})) + "; minimal ops of the shrunk ones: ")
        parts.append("; ".join(f"[{', '.join(ops) or '-'}] x{len(group)}" for ops, group in by_ops.items()))
        more = sum(not f.shrunk for f in members)
        if more:
            parts.append(f"(and {more} more, counted but not shrunk)")
        for group in list(by_ops.values())[:shown]:
            parts.append(f"\n{group[0].problem}\n```python\n{group[0].repro}```")
        parts.append("")
    if refused:
        parts.append(f"({refused} runs refused as docs/vmap.md documents: tests/fuzz/known.py REFUSALS)")
    parts.append(f"{count} programs, {len(findings)} disagreements")
    return "\n".join(parts)


def save(findings: list[Finding], path: str) -> None:
    """The findings as JSON, to group or read again (``load``) without running anything."""
    Path(path).write_text(json.dumps([attrs.asdict(f) for f in findings]))


def load(path: str) -> list[Finding]:
    return [Finding(**{**d, "ops": tuple(d["ops"])}) for d in json.loads(Path(path).read_text())]
