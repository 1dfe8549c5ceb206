"""The notebooks (jupytext percent scripts) run top to bottom, so they cannot rot."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.py"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Each notebook checks its own results with assert statements as it goes.
    assert "\nassert " in path.read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
