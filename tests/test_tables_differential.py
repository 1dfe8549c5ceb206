"""A fixed budget of the tables' differential tester (``tests/fuzz/tables/``): random pandas
pipelines run by ``ng.vjp``, ``ng.value_and_grad``, ``ng.vmap`` and ``ng.replay`` give pandas'
own answers and gradients equal to central differences of pandas' loss.

``python -m tests.fuzz.tables --programs N`` is the long run; ``--families`` narrows it to the
kinds of step a failure here names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nodegrad.errors import NoGradientError, StructureError
from tests.fuzz.tables import checks
from tests.fuzz.tables.compare import compare
from tests.fuzz.tables.drawing import random_program
from tests.fuzz.tables.hunt import hunt, program_seeds, report
from tests.fuzz.tables.outcomes import Outcome, classify_error
from tests.fuzz.tables.programs import FAMILIES
from tests.fuzz.tables.shrink import repro

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261210
PARTS = 2
PROGRAMS_PER_PART = 20  # 40 programs, every check: about 10 s a part, more while shrinking what disagrees


@pytest.mark.parametrize("part", range(PARTS))
def test_random_table_programs_agree_with_pandas(part: int) -> None:
    seeds = program_seeds(PROGRAMS_PER_PART, SEED + part)
    result = hunt(seeds, shrink_budget=10, shrink_per_class=1)
    assert result.defects == [], report(result, title=f"# seeds of part {part}: {seeds}\n")


def test_a_program_is_drawn_again_from_its_seed() -> None:
    for seed in program_seeds(4, SEED):
        assert random_program(seed).source() == random_program(seed).source()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_switched_off_is_never_drawn(family: str) -> None:
    families = set(FAMILIES) - {family}
    for seed in program_seeds(6, SEED):
        program = random_program(seed, families)
        assert family not in program.families, program.source()


def test_a_family_alone_is_what_is_drawn() -> None:
    for seed in program_seeds(6, SEED):
        program = random_program(seed, {"sort"})
        assert program.families <= {"sort"}, program.source()
        assert all(step.line.startswith("t.sort_values(") for step in program.steps), program.source()


def frame() -> pd.DataFrame:
    index = pd.MultiIndex.from_arrays([["a", "a", "b"], [1, 2, 1]], names=["g", "n"])
    return pd.DataFrame({"x": [1.0, np.nan, 3.0], "k": ["u", "v", "u"]}, index=index)


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (lambda f: f.iloc[::-1], "row order"),
        (lambda f: f.assign(x=f["x"] * (1 + 1e-9)), "column values"),
        (lambda f: f.assign(x=f["x"] * (1 + 1e-14)), None),
        (lambda f: f.assign(x=f["x"].fillna(0.0)), "column NaN placement"),
        (lambda f: f.assign(k=f["k"].astype(object)), "column dtype"),
        (lambda f: f.rename_axis(["g", None]), "index names"),
        (lambda f: f.reset_index(drop=True), "index type"),
        (lambda f: f[["k", "x"]], "columns"),
        (lambda f: f.iloc[:2], "row count"),
        (lambda f: f["x"], "type"),
    ],
)
def test_compare_names_what_differs(change: Any, kind: str | None) -> None:
    found = compare(change(frame()), frame())
    assert (found and found[0]) == kind, found


def test_compare_reads_series_and_numbers() -> None:
    s = frame()["x"]
    assert compare(s.rename("y"), s) == ("Series name", "'y' vs 'x'")
    assert compare(np.float64(2.0), np.float64(2.0)) is None
    assert compare(np.array(2.0), np.float64(2.0))[0] == "type"  # type: ignore[index]
    assert compare(np.int64(2), np.float64(2.0))[0] == "scalar type"  # type: ignore[index]


def test_errors_are_classed_as_refusals_foreign_or_unexplained() -> None:
    refusal = NoGradientError("Frame.pivot_table: not one of the DataFrame methods a Frame has: use f.to_numpy()")
    assert classify_error("vjp", refusal) == Outcome(
        "vjp", "refused", "Frame.pivot_table (NoGradientError)", f"NoGradientError: {refusal}"
    )
    assert classify_error("vjp", StructureError("Frame: no column 'z'")).verdict == "unexplained"
    try:
        {}["z"]
    except KeyError as error:
        outcome = classify_error("grad", error)
    assert outcome.verdict == "foreign" and outcome.what.startswith("KeyError at ")


def test_the_tester_catches_a_transform_that_reorders_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    class Reordering:  # a vjp whose output is pandas' own, its rows reversed
        @staticmethod
        def vjp(fun: Any, *args: Any) -> Any:
            return fun(*args).iloc[::-1], None

    program = next(
        p
        for p in map(random_program, program_seeds(50, SEED))
        if isinstance(p.namespace()["pipeline"](p.namespace()["df"]), pd.DataFrame)
        and len(set(p.namespace()["pipeline"](p.namespace()["df"]).index)) > 1
    )
    monkeypatch.setattr(checks, "ng", Reordering)
    outcome = checks.check_vjp(program)
    assert outcome.verdict == "differs" and outcome.what == "row order", outcome
    script = repro(program, outcome)
    assert script.startswith("import numpy as np") and "def pipeline(t):" in script and "ng.vjp(pipeline" in script
    compile(script, "<repro>", "exec")


def test_the_tester_catches_a_gradient_of_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    class Zeros:  # pandas' loss, and a gradient of zeros in df's shape
        @staticmethod
        def value_and_grad(fun: Any) -> Any:
            def run(df: pd.DataFrame) -> Any:
                floats = [c for c in df.columns if df[c].dtype.kind == "f"]
                return fun(df), pd.DataFrame(0.0, index=df.index, columns=floats)

            return run

    monkeypatch.setattr(checks, "ng", Zeros)
    programs = [p for p in map(random_program, program_seeds(12, SEED)) if p.loss is not None]
    outcomes = [checks.check_grad(p) for p in programs]
    assert {o.verdict for o in outcomes} <= {"agree", "differs"}
    caught = [o for o in outcomes if o.verdict == "differs"]
    assert caught and all(o.what == "gradient" and o.entry is not None for o in caught), outcomes


def test_the_command_line_writes_a_report(tmp_path: Path) -> None:
    report_file = tmp_path / "report.md"
    command = [sys.executable, "-m", "tests.fuzz.tables", "--programs", "2", "--checks", "vjp", "--no-shrink"]
    done = subprocess.run([*command, "--report", str(report_file)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    assert "2 programs" in report_file.read_text()
