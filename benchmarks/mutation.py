"""The mutation score of nodegrad's testing kit: how many wrong gradient rules it catches.

Each mutation of the catalogue (``benchmarks/mutations``) replaces one rule of one op --
a sign flipped, a matrix transposed, a broadcast not reduced, a factor off, a term of a
product rule dropped, a tie not split, a conjugate too many or too few, a wrong index, or
a second-order term lost -- and this script runs the kit against a small composite
function around the op, at a few examples drawn from ``nodegrad.testing.strategies``
with a fixed seed:

- ``check_grads`` with its default reference (central differences), at the mutation's
  order (2 for the bugs only second derivatives see);
- ``check_grads(..., reference="complex_step")``, where the kit has it;
- ``check_consistency``, where the kit has it.

A mutation is *caught* when a check raises an AssertionError on it (or another error
naming the op; other errors are crashes, counted apart), and *named* when the error is a
``GradientCheckError`` whose ``culprit`` is the mutated op, or a ``ConsistencyError``
naming it. Every check is first run on the correct op at the same examples: a failure
there is a false positive (reported), and an example a check cannot run at is not asked
about the mutation. Each mutation is put into the op registry and taken out again in a
``try``/``finally``; the script ends by checking that the registry holds its original
rules.

Usage: ``python benchmarks/mutation.py [--sample N] [--seed S] [--examples K]``. The
last line of the output is ``mutation score: caught N/M, named K/M``.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

# The catalogue lives beside this script (a package of the benchmarks, not of nodegrad).
sys.path.insert(0, str(Path(__file__).resolve().parent))

import hypothesis
import numpy as np
from mutations import CATALOG, KINDS, Mutation
from mutations.checks import ABSENT, CAUGHT, CHECKS, CRASH, NOT_APPLICABLE, PASS, Examined, Kit, examine
from mutations.core import changed_since, registry_snapshot
from mutations.inputs import KINK_AVOIDANCE, draw_examples

import nodegrad

#: Examples drawn per mutation (hypothesis' simplest one, all zeros for most, first).
EXAMPLES = 4

_CELLS = {PASS: ".", CRASH: "x", NOT_APPLICABLE: "n/a", ABSENT: "-"}
_HEADS = {"central": "central", "complex_step": "c-step", "consistency": "consist"}


def select(sample: int | None, seed: int) -> list[Mutation]:
    """The whole catalogue, or a deterministic sample of ``sample`` mutations of it (in
    the catalogue's order)."""
    if sample is None or sample >= len(CATALOG):
        return list(CATALOG)
    if sample < 1:
        msg = f"--sample must be at least 1, got {sample}"
        raise SystemExit(msg)
    picked = set(random.Random(seed).sample(range(len(CATALOG)), sample))
    return [m for k, m in enumerate(CATALOG) if k in picked]


def examples_for(mutation: Mutation, seed: int, count: int = EXAMPLES) -> list[tuple[object, ...]]:
    """The mutation's examples: a derandomized draw, seeded by ``seed`` and its id."""
    return draw_examples(mutation.inputs, count, zlib.crc32(f"{seed}:{mutation.id}".encode()))


def run(mutations: Sequence[Mutation], seed: int, count: int = EXAMPLES, kit: Kit | None = None) -> list[Examined]:
    """Examine each mutation in turn (see :func:`mutations.checks.examine`)."""
    kit = kit or Kit()
    return [examine(m, examples_for(m, seed, count), kit) for m in mutations]


def _cell(outcome_status: str, named: bool) -> str:
    if outcome_status == CAUGHT:
        return "N" if named else "C"
    return _CELLS[outcome_status]


def table(results: Sequence[Examined]) -> list[str]:
    """One row per mutation: its id, op, kind, family, order, each check's cell, and
    whether it was caught and named."""
    width = max(len(r.mutation.id) for r in results)
    op_width = max(len(r.mutation.op) for r in results)
    heads = " ".join(f"{_HEADS[c]:>8}" for c in CHECKS)
    lines = [f"{'mutation':<{width}}  {'op':<{op_width}}  {'kind':<12} {'family':<11} ord {heads}  caught named"]
    for r in results:
        m = r.mutation
        cells = " ".join(f"{_cell(r.outcomes[c].status, r.outcomes[c].named):>8}" for c in CHECKS)
        caught = "yes" if r.caught else ("crash" if r.crashed else "NO")
        lines.append(
            f"{m.id:<{width}}  {m.op:<{op_width}}  {m.kind:<12} {m.family:<11} {m.order:>3} {cells}  "
            f"{caught:>6} {'yes' if r.named else 'no':>5}"
        )
    return lines


def breakdown(results: Sequence[Examined]) -> list[str]:
    """Caught and named counts by kind and by family."""
    lines = []
    for label, key, order in (("kind", "kind", KINDS), ("family", "family", None)):
        groups: dict[str, list[Examined]] = {}
        for r in results:
            groups.setdefault(getattr(r.mutation, key), []).append(r)
        names = [k for k in (order or sorted(groups)) if k in groups]
        parts = [
            f"{k} {sum(r.caught for r in groups[k])}/{sum(r.named for r in groups[k])}/{len(groups[k])}" for k in names
        ]
        lines.append(f"by {label} (caught/named/total): " + ", ".join(parts))
    return lines


def first_examples(results: Sequence[Examined]) -> list[str]:
    """How many mutations were first caught at each example: the first is hypothesis'
    simplest (all zeros for most strategies), where many wrong rules agree with right ones."""
    counts: dict[int, int] = {}
    for r in results:
        if r.first_example is not None:
            counts[r.first_example] = counts.get(r.first_example, 0) + 1
    if not counts:
        return []
    parts = ", ".join(f"#{k} {counts[k]}" for k in sorted(counts))
    return [f"first example that caught each caught mutation (#0 is hypothesis' simplest): {parts}"]


def survivor_reason(r: Examined) -> str:
    """Why a mutation was not caught: not wrong at the examples, or wrong and missed."""
    wrong = r.wrong_at_examples
    if wrong is False:
        return "not wrong at the drawn examples: the mutated derivatives equal the true ones there (fix the inputs)"
    checks = "; ".join(f"{c}: {r.outcomes[c].status} {r.outcomes[c].detail}".rstrip() for c in CHECKS)
    if r.crashed:
        return f"only crashes that do not name the op -- {checks}"
    size = max((d for d in r.differences if d is not None), default=float("nan"))
    where = "wrong at the drawn examples" if wrong else "true derivatives not computable at the examples"
    return f"{where} (largest relative difference {size:.3g}) but no check failed -- {checks}"


def report(results: Sequence[Examined], kit: Kit, seed: int, count: int, seconds: float) -> list[str]:
    """The whole output, its last line the score."""
    total = len(results)
    caught = sum(r.caught for r in results)
    named = sum(r.named for r in results)
    crashed = sum(r.crashed for r in results)
    lines = [
        f"nodegrad {nodegrad.__version__}, numpy {np.__version__}, hypothesis {hypothesis.__version__}, "
        f"Python {platform.python_version()}",
        f"{total} mutations of {len(CATALOG)}, {count} examples each (seed {seed}; kink-free arguments: "
        f"{KINK_AVOIDANCE}), {seconds:.1f} s",
    ]
    for check, why in kit.absent().items():
        lines.append(f"skipped check {check}: {why}")
    if kit.gradient_error is None:
        lines.append("nodegrad.testing has no GradientCheckError: no check_grads failure can name its op")
    lines += ["", "cells: N caught and named, C caught, x crash not naming the op, . passed, n/a, - absent", ""]
    lines += table(results)
    lines += ["", *breakdown(results), *first_examples(results), ""]
    positives = [(r.mutation.id, c, fp) for r in results for c, fps in r.false_positives.items() for fp in fps]
    if positives:
        lines.append(f"false positives (a check failing on the correct op): {len(positives)}")
        lines += [f"  {i} [{c}] {fp}" for i, c, fp in positives]
    else:
        lines.append("false positives: none (every check passed on the correct op at every example it could run at)")
    unnamed = [r for r in results if r.caught and not r.named]
    if unnamed:
        lines.append(f"caught but not named: {len(unnamed)}")
        for r in unnamed:
            found = [o for o in r.outcomes.values() if o.status == CAUGHT]
            culprits = sorted({str(o.culprit) for o in found if o.culprit is not None})
            said = f"culprit {', '.join(culprits)}" if culprits else "no culprit given"
            mention = next((o.mention for o in found if o.mention), "")
            lines.append(
                f"  {r.mutation.id} ({r.mutation.op}): {said}" + (f"; the error says: {mention}" if mention else "")
            )
    by_error = [r.mutation.id for r in results if r.caught and not any(o.assertion for o in r.outcomes.values())]
    if by_error:
        lines.append(f"caught only by an error naming the op (its rule failing), not by a check: {', '.join(by_error)}")
    survivors = [r for r in results if not r.caught]
    lines.append(f"caught only by a crash not naming the op: {crashed}")
    lines.append(f"survivors: {len(survivors)}" + ("" if survivors else " (none)"))
    lines += [f"  {r.mutation.id} ({r.mutation.op}, {r.mutation.kind}): {survivor_reason(r)}" for r in survivors]
    lines.append(f"mutation score: caught {caught}/{total}, named {named}/{total}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="run a deterministic sample of N mutations")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and of the examples' draws")
    parser.add_argument("--examples", type=int, default=EXAMPLES, help="examples drawn per mutation")
    options = parser.parse_args(argv)
    before = registry_snapshot()
    start = time.perf_counter()
    kit = Kit()
    results = run(select(options.sample, options.seed), options.seed, options.examples, kit)
    lines = report(results, kit, options.seed, options.examples, time.perf_counter() - start)
    changed = changed_since(before)
    if changed:
        lines.insert(-1, f"ERROR: the op registry was not restored: {', '.join(changed)}")
    print("\n".join(lines))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
