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
import nodegrad.testing
from nodegrad.ops import REGISTRY

DOCS = Path(__file__).parent


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
    sections = {
        "Transforms": ["grad", "value_and_grad", "vjp", "jvp", "hvp", "jacobian", "hessian", "GradOptions"],
        "Arena": ["Arena", "Node", "Traced"],
        "Structured values": ["field", "dataclass_field", "register_container", "replace"],
        "Custom gradients": ["custom_vjp", "checkpoint", "stop_gradient"],
        "Debugging": ["debug_nans"],
    }
    listed = {name for names in sections.values() for name in names}
    sections["Ops"] = sorted((n for n in nodegrad.ops.__all__ if n not in listed), key=str.lower)
    for title, names in sections.items():
        lines += [f"## {title}", ""]
        for name in names:
            obj = getattr(nodegrad, name)
            directive = "autoclass" if inspect.isclass(obj) else "autofunction"
            options = "\n:members:" if directive == "autoclass" else ""
            lines += [f"```{{{directive}}} nodegrad.{name}{options}", "```", ""]
    for module in (nodegrad.tree, nodegrad.optim, nodegrad.testing, nodegrad.display):
        lines += [f"## `{module.__name__}`", "", f"```{{automodule}} {module.__name__}", ":members:", "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def notebook_page(path: Path) -> str:
    """A jupytext percent notebook as a Markdown page: its prose, and its code in blocks."""
    cells = path.read_text(encoding="utf-8").split("\n# %%")[1:]
    out = []
    for cell in cells:
        header, _, body = cell.partition("\n")
        if header.strip() == "[markdown]":
            out.append("\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines()))
        elif body.strip():
            out.append("```python\n" + body.strip() + "\n```")
    note = f"*This page is the notebook `notebooks/{path.name}`; the test suite runs it.*"
    return "\n\n".join([*out[:1], note, *out[1:]]).strip() + "\n"


NOTEBOOKS = sorted((DOCS.parent / "notebooks").glob("*.py"))


PAGES = {"ops.md": ops_page, "api.md": api_page} | {
    f"notebooks/{path.stem}.md": (lambda path=path: notebook_page(path)) for path in NOTEBOOKS
}


def main() -> int:
    (DOCS / "notebooks").mkdir(exist_ok=True)
    for name, build in PAGES.items():
        (DOCS / name).write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
