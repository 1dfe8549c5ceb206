"""Each extra of pyproject.toml installs what its purpose imports.

The README's commands run in fresh environments where only that command has installed
anything, so an import the extra does not bring is a failure for a new user: ``test`` must
bring everything the test suite imports (it builds the docs and runs the notebooks),
``docs`` what the docs build executes, ``notebooks`` what the notebooks import plus a
kernel and a runner. Imports are read from the source (with :mod:`ast`), so a missing
package is caught here even where it happens to be installed.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
from packaging.requirements import Requirement  # noqa: E402  (pytest's own dependency)

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

# Import names whose distribution is named otherwise.
DISTRIBUTION = {"attr": "attrs", "IPython": "ipython", "yaml": "pyyaml", "sphinx_rtd_theme": "sphinx-rtd-theme"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(extra: str, project: dict = PROJECT) -> set[str]:
    """The distributions an extra installs: the project's dependencies, the extra's, and
    those of the extras it names (``nodegrad[dask,plot]``), to any depth."""
    found = {_normal(Requirement(r).name) for r in project["dependencies"]}
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in project["optional-dependencies"][name]:
            req = Requirement(line)
            if _normal(req.name) == "nodegrad":
                todo.extend(req.extras)
            else:
                found.add(_normal(req.name))
    return found


def _is_optional(node: ast.Try) -> bool:
    """A ``try: import x / except ImportError:`` block: the code works without x."""
    return any(
        isinstance(h.type, ast.Name) and h.type.id in {"ImportError", "ModuleNotFoundError"} for h in node.handlers
    )


def imported_modules(source: str) -> Iterator[str]:
    """Top-level names of the modules a file imports (``pytest.importorskip("x")`` counts;
    imports guarded by ``try/except ImportError`` and relative imports do not)."""
    stack: list[ast.AST] = [ast.parse(source)]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Try) and _is_optional(node):
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield str(node.args[0].value).split(".")[0]
        stack.extend(ast.iter_child_nodes(node))


def third_party(paths: Iterable[Path]) -> dict[str, list[str]]:
    """Each third-party distribution the files import, with the files that import it."""
    # the package, the suite, and the benchmarks' own modules (put on the path by the tests that run them)
    local = {
        "nodegrad",
        "tests",
        "workloads",
        "mutation",
        "mutations",
        "docs_generate",
        "conftest",
        "harness",
        "strategies",
    }
    found: dict[str, list[str]] = {}
    for path in paths:
        for module in set(imported_modules(path.read_text(encoding="utf-8"))):
            if module in sys.stdlib_module_names or module in local or module == "__future__":
                continue
            found.setdefault(_normal(DISTRIBUTION.get(module, module)), []).append(str(path.relative_to(ROOT)))
    return found


def missing(extra: str, paths: Iterable[Path], project: dict = PROJECT) -> dict[str, list[str]]:
    have = distributions(extra, project)
    return {dist: files for dist, files in third_party(paths).items() if dist not in have}


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


def test_the_reader_of_imports_sees_every_form() -> None:
    source = "import a.b\nfrom c import d\nfrom . import e\nimport pytest\npytest.importorskip('f.g')\n"
    source += "try:\n    import h\nexcept ImportError:\n    pass\n"
    assert sorted(imported_modules(source)) == ["a", "c", "f", "pytest"]


def test_an_extra_that_misses_a_package_is_named() -> None:
    assert distributions("plot") == {"numpy", "attrs", "matplotlib"}
    assert "dask" in distributions("test")  # through nodegrad[dask]
    notebook = ROOT / "notebooks" / "pipeline.py"  # it imports dask
    without_dask = {
        "dependencies": ["numpy", "attrs"],
        "optional-dependencies": {"nb": ["nodegrad[x]"], "x": ["matplotlib"]},
    }
    assert missing("nb", [notebook], without_dask) == {"dask": ["notebooks/pipeline.py"]}


def test_the_test_extra_brings_everything_the_suite_imports() -> None:
    suite = [*ROOT.glob("tests/**/*.py"), *NOTEBOOKS, ROOT / "docs" / "generate.py"]
    assert not missing("test", suite)


@pytest.mark.parametrize("extra", ["notebooks", "docs"])
def test_the_extra_brings_what_the_notebooks_import(extra: str) -> None:
    assert NOTEBOOKS
    assert not missing(extra, NOTEBOOKS)


def test_the_notebooks_extra_brings_a_kernel_and_a_runner() -> None:
    assert {"ipykernel", "jupytext", "nbconvert"} <= distributions("notebooks")


def test_the_docs_extra_brings_the_sphinx_extensions_and_what_autodoc_imports() -> None:
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    extensions = re.findall(r'^\s*"([a-z_]+)[."]', conf.split("extensions = [", 1)[1].split("]", 1)[0], re.MULTILINE)
    theme = re.search(r'html_theme = "(\w+)"', conf)
    assert extensions and theme is not None
    needed = {_normal(e) for e in extensions if e != "sphinx"} | {"sphinx", theme.group(1), "jupytext", "ipykernel"}
    # autodoc imports every documented module: nodegrad.scipy needs scipy, the plug-ins theirs.
    needed |= {"scipy", "dask", "pandas"}
    assert needed - distributions("docs") == set()
