"""The generated documentation pages match the code."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


def _generator() -> ModuleType:  # docs/ is not a package: load the script by path
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGES = sorted(_generator().PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_generated_page_is_up_to_date(page: str) -> None:
    expected = _generator().PAGES[page]()
    assert (DOCS / page).read_text(encoding="utf-8") == expected, f"run: python docs/generate.py ({page} is stale)"


def test_every_registered_op_is_in_the_ops_page() -> None:
    from nodegrad.ops import REGISTRY

    text = (DOCS / "ops.md").read_text(encoding="utf-8")
    missing = [name for name in REGISTRY if f"| `{name}` |" not in text]
    assert not missing


def _documented(text: str) -> list[str]:
    """The names an API page documents: the targets of its autodoc and py:data directives
    (a module's docstring shown without its members documents no name)."""
    pattern = r"^\.\. (?:auto(?:function|class|exception|module)|py:data):: (\S+)\n(?!   :no-members:)"
    return re.findall(pattern, text, re.MULTILINE)


def _api_pages() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted((DOCS / "api").glob("*.md"))}


def test_every_public_name_is_documented_on_exactly_one_api_page() -> None:
    import inspect

    import nodegrad

    pages = {name: _documented(text) for name, text in _api_pages().items()}
    everywhere = [name for names in pages.values() for name in names]
    public = [f"nodegrad.{n}" for n in nodegrad.__all__ if not inspect.ismodule(getattr(nodegrad, n))]
    assert not [name for name in public if name not in everywhere]
    duplicated = sorted({name for name in everywhere if everywhere.count(name) > 1})
    assert not duplicated, "documented twice (Sphinx would warn of a duplicate description)"


def test_every_public_module_has_its_names_on_an_api_page() -> None:
    generator = _generator()
    documented = {name for text in _api_pages().values() for name in _documented(text)}
    for module in ["nodegrad.tree", "nodegrad.optim", "nodegrad.errors", "nodegrad.scipy.special", "nodegrad.testing"]:
        names = {f"{module}.{name}" for name in importlib.import_module(module).__all__}
        assert names <= documented, module
    assert {page.slug for page in generator.api_pages()} == {name[: -len(".md")] for name in _api_pages()} - {"index"}


def test_the_api_index_summarises_every_documented_name_once() -> None:
    pages = _api_pages()
    summarised = re.findall(r"^\| \{py:obj\}`~(\S+)` \| \S", pages.pop("index.md"), re.MULTILINE)
    documented = [name for text in pages.values() for name in _documented(text)]
    assert sorted(summarised) == sorted(documented)
    assert len(summarised) == len(set(summarised))


def test_the_generator_runs_without_sphinx() -> None:
    # The test suite imports it; it reads docstrings and ``#:`` comments with the standard library.
    assert not re.search(r"^\s*(import|from) sphinx", (DOCS / "generate.py").read_text(encoding="utf-8"), re.M)


def test_the_ops_page_names_no_private_helper() -> None:
    # A rule's private helper (``_gelu_rule``, ``_inside``) means nothing to a reader: an op
    # whose rule is not a public formula gets one in docs/generate.py's VJP_TEXT.
    text = (DOCS / "ops.md").read_text(encoding="utf-8")
    assert not re.findall(r"(?<![\w\\])_[A-Za-z]\w*", text)
    assert "record1" not in text  # the engine's way to record an op, not a formula


@pytest.mark.parametrize(
    ("page", "examples"),
    [
        ("higher-order.md", 30),
        ("complex.md", 12),
        ("debugging.md", 13),
        ("vmap.md", 20),
        ("replay.md", 10),
        ("eval-shape.md", 12),
        ("fitting.md", 50),
        ("internals.md", 18),
        ("tables.md", 25),
        ("row-sparse.md", 6),
        ("sparse.md", 40),
        ("parallel.md", 16),
    ],
)
def test_the_examples_of_the_page_run_as_doctests(page: str, examples: int) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(DOCS / page), module_relative=False, optionflags=flags, report=False)
    assert result.failed == 0
    assert result.attempted >= examples  # the examples are there to be run


# What a reader must never see: reST that reached the page as text instead of being rendered.
RAW_REST = (".. py:", ".. auto", ".. rubric::", ":param ", ":returns:", ":raises ", "{eval-rst}", "{autofunction}")


@pytest.fixture(scope="module")
def built_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML build: CI's (docs/_build/html) when it is newer than every source, else a fresh one."""
    built = DOCS / "_build" / "html"
    sources = [
        *DOCS.rglob("*.md"),
        DOCS / "conf.py",
        *(DOCS / "_static").glob("*"),
        *(ROOT / "notebooks").glob("*.py"),
        *(ROOT / "nodegrad").rglob("*.py"),
    ]
    outputs = [path for path in built.rglob("*") if path.is_file()] if (built / "index.html").exists() else []
    if outputs and max(p.stat().st_mtime for p in outputs) > max(p.stat().st_mtime for p in sources):
        return built
    out = tmp_path_factory.mktemp("html")
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(DOCS), str(out)], check=True, capture_output=True
    )
    return out


def _page_text(path: Path) -> str:
    """The text a reader sees in the page's article (markup and the theme's chrome dropped)."""
    html = path.read_text(encoding="utf-8")
    article = html.split("<article", 1)[-1].split("</article>", 1)[0]
    return re.sub(r"<[^>]+>", "", article)


def test_no_page_shows_raw_rest(built_html: Path) -> None:
    pages = [path for path in built_html.rglob("*.html") if not {"_modules", "_sources"} & set(path.parts)]
    assert (built_html / "api" / "index.html") in pages
    shown = {
        str(path.relative_to(built_html)): [marker for marker in RAW_REST if marker in _page_text(path)]
        for path in pages
    }
    assert not {page: markers for page, markers in shown.items() if markers}


@pytest.mark.parametrize("notebook", sorted(path.stem for path in (ROOT / "notebooks").glob("*.py")))
def test_every_notebook_page_shows_outputs(built_html: Path, notebook: str) -> None:
    html = (built_html / "notebooks" / f"{notebook}.html").read_text(encoding="utf-8")
    assert html.count('class="cell_output') >= 2, "the notebook was not executed at build time"


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_landing_page_runs_the_readme_example() -> None:
    cells = re.findall(r"```\{code-cell\} python\n(.*?)```", (DOCS / "index.md").read_text(encoding="utf-8"), re.DOTALL)
    # The same code; the README states the printed output in a comment, the page prints it.
    assert cells == [re.sub(r"print\(g\)\s+# .*", "print(g)", _readme_example())]


def test_the_landing_page_shows_the_readme_example_output(built_html: Path) -> None:
    claimed = re.search(r"print\(g\)\s+# (.*)", _readme_example())
    assert claimed is not None
    html = (built_html / "index.html").read_text(encoding="utf-8")
    output = html.split('class="cell_output', 1)[-1]
    assert claimed.group(1).strip() in output


def test_the_arena_page_shows_an_arena_as_a_table_and_a_picture(built_html: Path) -> None:
    article = (built_html / "arena.html").read_text(encoding="utf-8").split("<article", 1)[1]
    outputs = article.split('class="cell_output')[1:]
    assert any("<table" in output for output in outputs)  # Arena._repr_html_
    assert any("<svg" in output for output in outputs)  # Arena.to_svg()
