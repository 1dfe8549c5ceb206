"""The notebooks (jupytext percent scripts) run top to bottom, so they cannot rot."""

from __future__ import annotations

import ast
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


# What a notebook may import from nodegrad: what the API reference documents.
PUBLIC_MODULES = {
    "nodegrad",
    "nodegrad.data",
    "nodegrad.display",
    "nodegrad.errors",
    "nodegrad.numpy",
    "nodegrad.optim",
    "nodegrad.parallel",
    "nodegrad.scipy",
    "nodegrad.scipy.integrate",
    "nodegrad.scipy.linalg",
    "nodegrad.scipy.special",
    "nodegrad.scipy.stats",
    "nodegrad.testing",
    "nodegrad.testing.strategies",
    "nodegrad.tree",
}


def _internal_uses(source: str) -> list[str]:
    """The imports of non-public nodegrad modules or underscored names, and the reads of
    ``ng.<name>`` (nodegrad imported under any alias) of names outside ``nodegrad.__all__``."""
    import nodegrad

    found, aliases = [], set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("nodegrad") and alias.name not in PUBLIC_MODULES:
                    found.append(f"import {alias.name}")
                if alias.name == "nodegrad":
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nodegrad"):
            names = [alias.name for alias in node.names]
            if node.module not in PUBLIC_MODULES or any(name.startswith("_") for name in names):
                found.append(f"from {node.module} import {', '.join(names)}")
    public = {*nodegrad.__all__, "numpy", "scipy", "testing", "data"}  # the last: submodules to import
    reads = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)]
    for node in reads:
        name = node.value.id if isinstance(node.value, ast.Name) else None
        if name in aliases and node.attr not in public:
            found.append(f"{name}.{node.attr}")
    return found


def test_the_reader_of_internal_uses_sees_every_form() -> None:
    source = "import nodegrad as ng\nimport nodegrad.engine\nfrom nodegrad.ops.shape import cat\n"
    source += "from nodegrad.tree import _map\nfrom nodegrad import grad\nng.grad, ng.ops.defop, ng.tree.add\n"
    assert _internal_uses(source) == [
        "import nodegrad.engine",
        "from nodegrad.ops.shape import cat",
        "from nodegrad.tree import _map",
        "ng.ops",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_uses_public_names_only(path: Path) -> None:
    # A notebook is what a user copies from: what it needs must be public.
    assert not _internal_uses(path.read_text(encoding="utf-8"))
