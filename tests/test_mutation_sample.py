"""The testing kit against a fixed sample of wrong gradient rules (benchmarks/mutation.py):
every one is caught, no check fails on the correct rules, and the registry is left as it was."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))

import mutation
from mutations import CATALOG, KINDS, SAMPLE, by_id
from mutations.checks import Examined
from mutations.core import applied, changed_since, op_object, registry_snapshot

import nodegrad as ng


@pytest.fixture(scope="module")
def sample_run() -> tuple[list[Examined], list[str]]:
    before = registry_snapshot()
    results = mutation.run(by_id(SAMPLE), seed=0)
    return results, changed_since(before)


def test_the_sample_spans_the_kinds_and_families() -> None:
    sample = by_id(SAMPLE)
    assert len(sample) == 10
    assert {m.kind for m in sample} == set(KINDS)
    assert len({m.family for m in sample}) >= 8


def test_the_catalogue_covers_each_kind_several_times() -> None:
    assert len(CATALOG) >= 60
    assert len({m.id for m in CATALOG}) == len(CATALOG)
    for kind in KINDS:
        assert sum(m.kind == kind for m in CATALOG) >= 3, kind


def test_every_sampled_mutation_is_caught(sample_run: tuple[list[Examined], list[str]]) -> None:
    results, _ = sample_run
    missed = [(r.mutation.id, {c: o.status for c, o in r.outcomes.items()}) for r in results if not r.caught]
    assert missed == []


def test_no_check_fails_on_the_correct_rules(sample_run: tuple[list[Examined], list[str]]) -> None:
    results, _ = sample_run
    assert {r.mutation.id: r.false_positives for r in results if r.false_positives} == {}
    # ... and the default check ran (and passed) without the mutation at some example of each
    assert [r.mutation.id for r in results if not r.passed_before["central"]] == []


def test_each_sampled_mutation_is_wrong_at_its_examples(sample_run: tuple[list[Examined], list[str]]) -> None:
    results, _ = sample_run
    assert [r.mutation.id for r in results if not r.wrong_at_examples] == []


def test_the_registry_is_restored(sample_run: tuple[list[Examined], list[str]]) -> None:
    _, changed = sample_run
    assert changed == []


def test_a_mutation_is_in_place_inside_its_block_and_undone_after_an_error() -> None:
    wrong = by_id(["cos-sign"])[0]
    op = op_object(wrong.op)
    original = op.vjps
    before = registry_snapshot()
    right = ng.grad(ng.cos)(0.7)
    seen: list[Any] = []

    def fail_inside() -> None:
        with applied(wrong):
            seen.extend([op.vjps, ng.grad(ng.cos)(0.7)])
            raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fail_inside()
    assert seen[0] is not original
    assert seen[1] == pytest.approx(-right)
    assert op.vjps is original
    assert changed_since(before) == []
    assert ng.grad(ng.cos)(0.7) == right


def test_the_script_ends_with_the_score(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation.main(["--sample", "2", "--seed", "3", "--examples", "2"]) == 0
    last = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(r"mutation score: caught [0-2]/2, named [0-2]/2", last)
