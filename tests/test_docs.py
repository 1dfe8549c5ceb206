"""The generated documentation pages match the code."""

from __future__ import annotations

import doctest
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).parent.parent / "docs"


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


def test_the_ops_page_names_no_private_helper() -> None:
    # A rule's private helper (``_gelu_rule``, ``_inside``) means nothing to a reader: an op
    # whose rule is not a public formula gets one in docs/generate.py's VJP_TEXT.
    text = (DOCS / "ops.md").read_text(encoding="utf-8")
    assert not re.findall(r"(?<![\w\\])_[A-Za-z]\w*", text)


@pytest.mark.parametrize(("page", "examples"), [("higher-order.md", 30), ("complex.md", 12), ("debugging.md", 13)])
def test_the_examples_of_the_page_run_as_doctests(page: str, examples: int) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(DOCS / page), module_relative=False, optionflags=flags, report=False)
    assert result.failed == 0
    assert result.attempted >= examples  # the examples are there to be run
