"""A fixed budget of the differential fuzzer (``tests/fuzz``): random programs under every
transform stack agree with a Python loop of the unbatched transform and with the eager
call, and replayed programs never give a stale result.

The pairs listed in ``tests/fuzz/known.py`` are skipped here (and counted); the long run,
``python -m tests.fuzz --programs N``, ignores that list unless given ``--skip-known``.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.fuzz import hunt, known
from tests.fuzz.__main__ import main
from tests.fuzz.ops import Step
from tests.fuzz.programs import Program, random_program, without_step
from tests.fuzz.runner import check_program
from tests.fuzz.stacks import STACKS, Stack, compare
from tests.fuzz.stale import CASES, run

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261202
PARTS = 4
PROGRAMS_PER_PART = 8  # 32 programs, each stack in one of its modes: a few seconds


@pytest.mark.parametrize("part", range(PARTS))
def test_random_programs_agree_with_their_oracles(part: int) -> None:
    result = hunt(PROGRAMS_PER_PART, seed=SEED + part, skip_known=True, every_mode=False)
    assert result.findings == [], result.text


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_replay_gives_no_stale_result(case: object) -> None:
    reason = known.skipped(f"stale:{case.name}", set())  # type: ignore[attr-defined]
    if reason:
        pytest.skip(f"known: {reason}")
    for seed in range(2):
        assert run(case, SEED + seed) is None  # type: ignore[arg-type]


def wrong_by(factor: float) -> Stack:
    """A stack whose transform is wrong in one entry: what every check must catch."""
    return Stack(
        "broken vmap",
        f"(lambda y: y + ({factor} - 1.0) * (y == y.flat[0]) * y)(ng.vmap(fn)(X, I))",
        "stack([fn(X[b], I[b]) for b in range(B)])",
        modes=("closure",),
    )


def a_program() -> Program:
    steps = (
        Step("sin", "np.sin({0})", ("x",), (4,)),
        Step("multiply", "{0} * {1}", ("v0", "w"), (4,)),
        Step("tanh", "np.tanh({0})", ("v1",), (4,)),
        Step("add", "{0} + {1}", ("v2", "x"), (4,)),
    )
    return Program("dict", "float64", steps)


def test_the_fuzzer_catches_a_wrong_transform_and_shrinks_its_program() -> None:
    program = a_program()
    findings = check_program(program, SEED, False, [wrong_by(1.001)])
    assert len(findings) == 1
    finding = findings[0]
    assert finding.problem.startswith("values"), finding.problem
    assert len(finding.ops) < len(program.ops())  # shrunk: any one step shows it
    printed = subprocess.run(
        [sys.executable, "-c", finding.repro], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert printed.startswith("values"), printed  # the repro runs on its own and shows it
    assert check_program(program, SEED, False, [wrong_by(1.0)]) == []  # and a right one passes


def test_a_rounding_error_is_not_a_disagreement_but_a_wrong_digit_is() -> None:
    x = np.linspace(0.5, 2.0, 6)
    assert compare(x * (1 + 1e-15), x, exact=False, rtol=1e-12) is None
    assert compare(x * (1 + 1e-9), x, exact=False, rtol=1e-12) is not None
    assert compare(x.astype(np.float32), x, exact=False, rtol=1e-4) == "dtype float32 vs float64 at out"
    assert compare(np.float64(0.0), np.array(-0.0), exact=True, rtol=0.0) == "type float64 vs ndarray at out"
    assert compare(np.array(0.0), np.array(-0.0), exact=True, rtol=0.0) == "values (bits) at out"


def test_dropping_a_step_keeps_the_program_well_defined() -> None:
    rng = np.random.default_rng(SEED)
    for _ in range(20):
        program = random_program(rng)
        for n in range(len(program.steps)):
            smaller = without_step(program, n)
            if smaller is not None:
                assert len(smaller.steps) == len(program.steps) - 1
                smaller.compile()  # every register it reads is defined before


def test_every_known_pair_names_a_stack_and_gives_a_reason() -> None:
    names = {s.name for s in STACKS} | {f"stale:{case.name}" for case in CASES}
    for (stack, op), reason in known.KNOWN.items():
        assert stack in names, stack
        assert op and reason


def test_the_command_prints_its_count_last(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--programs", "2", "--stacks", "vmap", "--skip-known"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("2 programs, ") and last.endswith(" disagreements")
    assert status == (0 if last == "2 programs, 0 disagreements" else 1)


def test_a_lookup_in_a_table_the_function_closes_over_is_a_documented_refusal_and_nothing_else() -> None:
    steps = (
        Step("index", "{0}[{1}]", ("m", "i"), (2, 3)),
        Step("sum", "np.sum({0}, axis=0)", ("v0",), (3,)),
    )
    program = Program("dict", "float64", steps)
    vmap_stack = next(s for s in STACKS if s.name == "vmap(grad)")
    refused: Counter[str] = Counter()
    # The parameters as an argument (in_axes None) and per example: both batch the lookup.
    assert check_program(program, SEED, False, [vmap_stack], refused=refused) == []
    assert refused == {"vmap(grad)": 1}  # the closure mode alone refuses, as docs/vmap.md says
    assert "ng.gather" in (ROOT / "docs" / "vmap.md").read_text()
