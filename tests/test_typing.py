"""What a user's type checker sees: mypy on a typed script that uses nodegrad finds
nothing, and on calls that are wrong reports each one (tests/typecheck/)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

HERE = Path(__file__).parent / "typecheck"
ROOT = Path(__file__).parent.parent


def run_mypy(path: Path) -> subprocess.CompletedProcess[str]:
    # The project's own settings (pyproject.toml), on one file instead of the package.
    command = [sys.executable, "-m", "mypy", "--no-error-summary", "--show-error-codes", str(path)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_typed_user_script_passes() -> None:
    result = run_mypy(HERE / "user_script.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_wrong_calls_are_reported() -> None:
    path = HERE / "negative.py"
    marked = {n for n, line in enumerate(path.read_text().splitlines(), 1) if "  # error:" in line}
    result = run_mypy(path)
    assert result.returncode == 1, result.stdout + result.stderr
    reported = {int(m.group(1)) for m in re.finditer(r"negative\.py:(\d+): error", result.stdout)}
    assert reported == marked, result.stdout
