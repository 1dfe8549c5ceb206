"""What the archives ship, read from pyproject.toml (building them is too slow for a test):
the licence text, and a source archive without the CI script."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).parent.parent


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_file_is_mit_and_names_the_docs_copyright_holder() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the nodegrad developers" in text
    assert project()["project"]["license"] == "MIT"
    assert '"2026, the nodegrad developers"' in (ROOT / "docs" / "conf.py").read_text()


def test_the_sdist_takes_the_license_and_leaves_out_ci() -> None:
    sdist = project()["tool"]["hatch"]["build"]["targets"]["sdist"]
    assert "/LICENSE" in sdist["include"]
    assert "/.ci" in sdist["exclude"]
    assert not any(path.startswith("/.ci") for path in sdist["include"])


def test_the_metadata_says_what_the_package_is() -> None:
    meta = project()["project"]
    assert "Typing :: Typed" in meta["classifiers"]
    assert (ROOT / "nodegrad" / "py.typed").exists()
    # A licence expression and a licence classifier together are refused by PEP 639 tools.
    assert not any(c.startswith("License ::") for c in meta["classifiers"])
