"""Write the generated documentation pages from the code, so they cannot drift.

``python docs/generate.py`` rewrites ``docs/ops.md`` (from the op registry) and
``docs/api.md`` (from the public names' docstrings); the test suite fails when the
committed pages differ from what this produces.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import nodegrad
from nodegrad.ops import REGISTRY

DOCS = Path(__file__).parent


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def ops_page() -> str:
    lines = [
        "# Ops",
        "",
        "Generated from the op registry by `docs/generate.py`. Each op is one registry entry",
        "holding its forward and one VJP rule per input; *differentiable inputs* lists the",
        "input positions that have a rule. All ops keep float32 as float32 and support float64.",
        "",
        "| op | family | what it computes | differentiable inputs | broadcasts |",
        "|---|---|---|---|---|",
    ]
    for op in sorted(REGISTRY.values(), key=lambda o: (o.family, o.name)):
        if isinstance(op.vjps, tuple):
            inputs = ", ".join(str(k) for k, rule in enumerate(op.vjps) if rule is not None) or "none"
        else:
            inputs = "every element input"
        lines.append(f"| `{op.name}` | {op.family} | {op.doc} | {inputs} | {'yes' if op.broadcasts else 'no'} |")
    return "\n".join(lines) + "\n"


def api_page() -> str:
    lines = ["# API reference", "", "Generated from the docstrings by `docs/generate.py`.", ""]
    for name in sorted(nodegrad.__all__, key=str.lower):
        obj = getattr(nodegrad, name)
        kind = "module" if inspect.ismodule(obj) else "class" if inspect.isclass(obj) else "function"
        lines.append(f"- `nodegrad.{name}` ({kind}): {_summary(obj)}")
    for module in (nodegrad.tree, nodegrad.optim):
        lines += ["", f"## `{module.__name__}`", ""]
        lines += [f"- `{name}`: {_summary(getattr(module, name))}" for name in sorted(module.__all__)]
    return "\n".join(lines) + "\n"


PAGES = {"ops.md": ops_page, "api.md": api_page}


def main() -> int:
    for name, build in PAGES.items():
        (DOCS / name).write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
