"""Write the generated documentation pages from the code, so they cannot drift.

``python docs/generate.py`` rewrites ``docs/ops.md`` (from the op registry) and
``docs/api.md`` (from the public names' docstrings); the test suite fails when the
committed pages differ from what this produces.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path
from typing import Any

import nodegrad
import nodegrad.numpy
import nodegrad.scipy  # registers the scipy.linalg ops
import nodegrad.scipy.stats
import nodegrad.testing
import nodegrad.testing.pytest_plugin
import nodegrad.testing.strategies
from nodegrad.numpy_api import catalog
from nodegrad.ops import REGISTRY

DOCS = Path(__file__).parent


def ops_page() -> str:
    lines = [
        "# Ops",
        "",
        "Generated from the op registry by `docs/generate.py`. Each op is one registry entry",
        "holding its forward and one VJP rule per input; *VJP* shows each input's rule as it is",
        "written in the code (`g` is the output's cotangent, `ans` the output), or the name of",
        "the function that holds it. Inputs without a rule carry no gradient (indices, masks).",
        "Every op keeps float32 as float32 and supports float64; float16 works where numpy's",
        "own kernels do. *Broadcasts*: the cotangent is summed back to each input's shape in",
        "one central place, the sweep. A rule marked *first order only* reads its inputs as",
        "numbers (a decomposition numpy computes): forward mode (`jvp`) works through it, and",
        "a second derivative raises an error naming the op.",
        "",
        "| op | family | what it computes | VJP | dtypes | broadcasts |",
        "|---|---|---|---|---|---|",
    ]
    for op in sorted(REGISTRY.values(), key=lambda o: (o.family, o.name)):
        vjp = _vjp_summary(op).replace("|", "\\|") + ("<br>*first order only*" if op.first_order else "")
        broadcasts = "yes" if op.broadcasts else "no"
        doc = op.doc.replace("|", "\\|")  # |x| in a doc would end the table's cell
        lines.append(f"| `{op.name}` | {op.family} | {doc} | {vjp} | float32, float64 | {broadcasts} |")
    return "\n".join([*lines, "", *_namespace_section()]) + "\n"


def _namespace_section() -> list[str]:
    """The counts of numpy's public callables by what they do with traced values."""
    found = catalog.classify(nodegrad.numpy.REPLACED)
    never, not_yet = found["not differentiable"], found["not yet"]

    def names(group: list[str]) -> str:
        return ", ".join(f"`{name}`" for name in group)

    return [
        "## numpy's namespace",
        "",
        "Every public callable of `numpy`, `numpy.linalg` and `numpy.fft` (and `numpy.random`,",
        "which draws plain data), classified in `nodegrad.numpy_api.catalog` by what it does",
        "with a traced value; a test fails when numpy gains one that is not classified.",
        "",
        f"- **differentiable: {len(found['differentiable'])}**, each with its gradient rule and a generated",
        "  hypothesis test (`tests/test_numpy_api.py`, `tests/test_numpy_catalog.py`);",
        f"- **plain by nature: {len(found['plain'])}**, computed on the values (indices, booleans, shapes,",
        "  rounding, arrays built from shapes and plain parameters);",
        f"- **refused: {len(never) + len(not_yet)}**, with an error (naming the function, for those numpy",
        "  dispatches):",
        f"  {len(never)} not differentiable (integer or index results, piecewise constant, in-place,",
        f"  I/O, set operations) and {len(not_yet)} differentiable in principle without a rule yet.",
        "",
        "<details><summary>The refused names</summary>",
        "",
        f"Not differentiable: {names(never)}.",
        "",
        f"Without a rule yet: {names(not_yet) or 'none'}.",
        "",
        "</details>",
    ]


def _vjp_summary(op: Any) -> str:
    if not isinstance(op.vjps, tuple):  # a variadic op: one rule serves every input
        return f"every input: {_rule_text(op.vjps._rule)}"
    parts = [f"input {k}: {_rule_text(rule)}" for k, rule in enumerate(op.vjps) if rule is not None]
    return "<br>".join(parts) or "none"


def _rule_text(rule: Any) -> str:
    """A lambda rule's body as written; a named rule's name and the first line of its docstring."""
    if getattr(rule, "__name__", "") != "<lambda>":
        doc = (inspect.getdoc(rule) or "").split("\n\n")[0].replace("\n", " ")
        return f"`{rule.__name__}`" + (f" ({doc.rstrip('.')})" if doc else "")
    body = _lambda_body(rule)
    return f"`{body}`" if body else "a lambda"


@functools.cache
def _module_tree(filename: str) -> ast.Module:
    return ast.parse(Path(filename).read_text(encoding="utf-8"))


def _lambda_body(rule: Any) -> str | None:
    """Find the lambda in its source file by the position of its first instruction."""
    filename = inspect.getsourcefile(rule)
    if filename is None:
        return None
    # Each instruction's (line, end line, column, end column); the empty spans are bookkeeping.
    spots = [(p[0], p[2]) for p in rule.__code__.co_positions() if None not in p and p[3] > p[2]]  # type: ignore[operator]
    spots = [spot for spot in spots if spot[0] >= rule.__code__.co_firstlineno]
    if not spots:
        return None
    first = min(spots)
    found = [
        node
        for node in ast.walk(_module_tree(filename))
        if isinstance(node, ast.Lambda)
        and (node.body.lineno, node.body.col_offset) <= first <= (node.body.end_lineno, node.body.end_col_offset)
    ]
    if not found:
        return None
    innermost = min(found, key=lambda n: (n.body.end_lineno or 0) - n.body.lineno)
    return ast.unparse(innermost.body)


def api_page() -> str:
    lines = ["# API reference", "", "Generated from the docstrings by `docs/generate.py`.", ""]
    sections = {
        "Transforms": [
            "grad",
            "value_and_grad",
            "vjp",
            "jvp",
            "linearize",
            "elementwise_grad",
            "jacobian",
            "jacrev",
            "jacfwd",
            "hessian",
            "hvp",
            "GradOptions",
        ],
        "Arena": ["Arena", "Node", "Traced"],
        "Structured values": ["field", "dataclass_field", "register_container", "replace"],
        "Custom gradients": ["custom_vjp", "checkpoint", "stop_gradient"],
        "Debugging": ["debug_nans"],
    }
    listed = {name for names in sections.values() for name in names}
    sections["Ops"] = sorted((n for n in nodegrad.ops.__all__ if n not in listed), key=str.lower)
    for title, names in sections.items():
        directives = []
        for name in names:
            obj = getattr(nodegrad, name)
            if inspect.isclass(obj):
                directives += [f".. autoclass:: nodegrad.{name}", "   :members:", ""]
            else:
                directives += [f".. autofunction:: nodegrad.{name}", ""]
        lines += [f"## {title}", "", *_rst(directives)]
    for module in _API_MODULES:
        # nodegrad.numpy's members are numpy's own objects, documented by numpy.
        members = "   :no-members:" if module == "nodegrad.numpy" else "   :members:"
        lines += [f"## `{module}`", "", *_rst([f".. automodule:: {module}", members])]
    return "\n".join(lines).rstrip() + "\n"


# The public modules besides the top level, in reading order. ``nodegrad.numpy`` holds
# numpy's own functions (documented by numpy); its page shows what nodegrad adds.
_API_MODULES = [
    "nodegrad.tree",
    "nodegrad.optim",
    "nodegrad.parallel",
    "nodegrad.errors",
    "nodegrad.numpy",
    "nodegrad.numpy.construct",
    "nodegrad.scipy.special",
    "nodegrad.scipy.linalg",
    "nodegrad.scipy.integrate",
    "nodegrad.scipy.stats",
    *(f"nodegrad.scipy.stats.{name}" for name in nodegrad.scipy.stats.__all__),
    "nodegrad.testing",
    "nodegrad.testing.strategies",
    "nodegrad.testing.pytest_plugin",
    "nodegrad.display",
]


def _rst(directives: list[str]) -> list[str]:
    """Autodoc directives in an ``{eval-rst}`` block: autodoc writes reST, which MyST would read as Markdown."""
    return ["```{eval-rst}", *directives, "```", ""]


PAGES = {"ops.md": ops_page, "api.md": api_page}


def main() -> int:
    for name, build in PAGES.items():
        (DOCS / name).write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
