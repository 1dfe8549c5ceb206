"""Write the generated documentation pages from the code, so they cannot drift.

``python docs/generate.py`` rewrites ``docs/ops.md`` (from the op registry) and the API
reference ``docs/api/`` (from the public names' docstrings: an index of every name, one
page per module); the test suite fails when the committed pages differ from what this
produces. It needs nodegrad and its optional dependencies, not Sphinx.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import itertools
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

import nodegrad
import nodegrad.data
import nodegrad.numpy
import nodegrad.numpy.construct
import nodegrad.scipy  # registers the scipy.linalg ops
import nodegrad.scipy.sparse
import nodegrad.scipy.stats
import nodegrad.testing
import nodegrad.testing.pytest_plugin
import nodegrad.testing.strategies
from nodegrad.numpy_api import catalog
from nodegrad.ops import REGISTRY

DOCS = Path(__file__).parent

# The VJP of each op whose rule is a named function or calls private helpers, as a formula
# a reader can check (g is the output's cotangent, ans the output; conj only for complex).
VJP_TEXT = {
    "abs": "x: g sign(x) (0 at 0); complex z: g conj(z) / |z|",
    "angle": "z: g (-Im z + i Re z) / |z|^2 (real x: 0)",
    "arccosh": "x: g / sqrt(x^2 - 1)",
    "clamp": "x: g where lo <= x <= hi (at a bound, to x); lo: g where x < lo; hi: g where x > hi",
    "exp2": "x: g ans ln 2",
    "gelu": "x: g (Φ(x) + x φ(x)), or the derivative of the tanh approximation",
    "imag": "z: -i g (a complex cotangent)",
    "real": "z: g (as a complex cotangent)",
    "log10": "x: g / (x ln 10)",
    "log2": "x: g / (x ln 2)",
    "logaddexp": "x: g exp(x - ans); y: g exp(y - ans)",
    "logaddexp2": "x: g 2^(x - ans); y: g 2^(y - ans)",
    "maximum": "x: g where x > y, g/2 at ties; y: likewise",
    "minimum": "x: g where x < y, g/2 at ties; y: likewise",
    "power": "x: g y x^(y - 1); y: g ans log x (0 where x == 0)",
    "silu": "x: g s (1 + x (1 - s)), s = sigmoid(x)",
    "where": "a: g where mask, else 0; b: g where not mask, else 0",
    "fft": "x: the unnormalised transform of g taken back (n·ifft(g)), cut or zero-padded to x's length",
    "rfft": "x: as fft, the half spectrum's missing conjugate half counted twice",
    "ifft": "x: fft(g) / n, cut or zero-padded to x's length",
    "irfft": "h: rfft(g) / n, the inner frequencies counted twice",
    "gather": "x: g scattered back (added) at the indices, zeros elsewhere",
    "cholesky": "a: L^-T Φ(L^T g) L^-1 symmetrised, Φ taking the lower triangle with a halved diagonal",
    "det": "x: g ans x^-T",
    "signdet": "x: Im(conj(ans) g) of i ans x^-H (the phase's derivative)",
    "eigvalsh": "x: V diag(g) V^T",
    "einsum": "each operand: the einsum of g with the other operands, into that operand's subscripts",
    "inv": "x: -ans^T g ans^T",
    "logabsdet": "x: g x^-T",
    "matmul": "x: g y^T; y: x^T g (1-D and batch axes as numpy's matmul)",
    "solve": "a: -z x^T; b: z, with z = a^-T g",
    "sparse_matmul": "data: sampled(g, b) (g[r] . b[c] per stored entry); b: X.T @ g",
    "sparse_rmatmul": "data: sampled(b, g) (b[r] . g[c] per stored entry); b: X @ g",
    "sparse_sampled": "a: G @ b; b: G.T @ a, with G the sparse matrix of values g",
    "sparse_solve": "data: -z[r] . x[c] per stored entry; b: z, with z = A^-T g (the forward's LU factorization)",
    "svdvals": "x: U diag(g) Vh",
    "batch_norm": "x: through the batch's mean and variance; weight: sum of g x̂ over the batch; bias: sum of g over it",
    "layer_norm": "x: (w g - mean(w g) - x̂ mean(w g x̂)) / std over the last axis; weight: g x̂; bias: g",
    "cross_entropy": "logits: (softmax(logits) - onehot(targets)) g / batch size",
    "cross_entropy_probs": "logits: (softmax(logits) sum(p) - p) g / batch; probs: -log_softmax(logits) g / batch",
    "cumprod": "x: the reversed running sum of g ans, divided by x (zeros handled exactly)",
    "cumsum": "x: the reversed running sum of g along the axis",
    "logsumexp": "x: g exp(x - ans), broadcast over the reduced axes",
    "segment_max": "data: g of its segment at the rows holding the maximum, shared at ties",
    "ssm_scan": "a: λ[t] h[t-1]; b: λ[t] x[t]; x: λ[t] b[t], with λ the adjoint recurrence λ[t] = g[t] + a[t+1] λ[t+1]",
    "take_along_axis": "x: g added back at the picked positions",
    "max": "x: g spread over the reduced axes onto the maxima, shared at ties",
    "min": "x: g spread over the reduced axes onto the minima, shared at ties",
    "mean": "x: g / count, spread over the reduced axes",
    "prod": "x: g ans / x spread over the reduced axes (zeros handled exactly)",
    "sum": "x: g spread over the reduced axes",
    "expm": "a: the top-right block of expm([[a^T, g], [0, a^T]])",
    "logm": "a: the top-right block of logm([[a^T, g], [0, a^T]])",
    "lu_factor": "a: L^-T (tril(L^T g_L, -1) + triu(g_U U^T)) U^-T, rows put back in a's order",
    "solve_banded": "ab: -z x^T on the band, in band storage; b: z = a^-T g, solved with the transposed band",
    "solve_sylvester": "a: -s x^T; b: -x^T s; q: s, with s solving a^T s + s b^T = g",
    "solve_triangular": "a: -z x^T on the triangle read (transposed or conjugated with trans); b: z = op(a)^-T g",
    "astype": "x: g cast back to x's dtype (the real part for a real x)",
    "cat": "each input: its slice of g along the axis",
    "pad": "x: g with the padding cut off",
    "stack": "each input: its index of g along the new axis",
    "transpose": "x: g with the axes permuted back",
    "betainc": "x: g x^(a-1) (1-x)^(b-1) / B(a, b); a, b: none (no closed form)",
    "betaincc": "x: -g x^(a-1) (1-x)^(b-1) / B(a, b); a, b: none (no closed form)",
    "betaln": "a: g (ψ(a) - ψ(a + b)); b: g (ψ(b) - ψ(a + b))",
    "beta": "a: g ans (ψ(a) - ψ(a + b)); b: g ans (ψ(b) - ψ(a + b))",
    "rgamma": "x: -g ans digamma(x)",
    "j0": "x: -g j1(x)",
    "j1": "x: g (j0(x) - jn(2, x)) / 2",
    "jn": "x: g (jn(n - 1, x) - jn(n + 1, x)) / 2; n: none (no closed form)",
    "y0": "x: -g y1(x)",
    "y1": "x: g (y0(x) - yn(2, x)) / 2",
    "yn": "x: g (yn(n - 1, x) - yn(n + 1, x)) / 2; n: none",
    "iv": "x: g (iv(v - 1, x) + iv(v + 1, x)) / 2; v: none (no closed form)",
    "ive": "x: g ((ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) ans); v: none (no closed form)",
    "digamma": "x: g polygamma(1, x)",
    "entr": "x: -g (log x + 1)",
    "erf": "x: g (2 / sqrt(π)) exp(-x^2)",
    "erfc": "x: -g (2 / sqrt(π)) exp(-x^2)",
    "erfcinv": "x: -g (sqrt(π) / 2) exp(ans^2)",
    "erfcx": "x: g (2 x ans - 2 / sqrt(π))",
    "erfinv": "x: g (sqrt(π) / 2) exp(ans^2)",
    "gammainc": "x: g x^(a-1) exp(-x) / Γ(a); a: none (no closed form)",
    "gammaincc": "x: -g x^(a-1) exp(-x) / Γ(a); a: none (no closed form)",
    "gammaln": "x: g digamma(x)",
    "gamma": "x: g ans digamma(x)",
    "log_expit": "x: g expit(-x)",
    "i0": "x: g i1(x)",
    "i0e": "x: g (i1e(x) - sign(x) ans)",
    "i1": "x: g (i0(x) - ans / x)",
    "i1e": "x: g (i0e(x) - ans / x - sign(x) ans)",
    "kl_div": "x: g log(x / y); y: g (1 - x / y)",
    "log_ndtr": "x: g sqrt(2 / π) / erfcx(-x / sqrt(2))",
    "ndtr": "x: g exp(-x^2 / 2) / sqrt(2π)",
    "ndtri": "x: g sqrt(2π) exp(ans^2 / 2)",
    "polygamma": "x: g polygamma(n + 1, x); n: none",
    "rel_entr": "x: g (log(x / y) + 1); y: -g x / y",
    "stdtr": "t: g times Student's t density at t; df: none (no closed form)",
    "weighted_logsumexp": "a: g b exp(a - ans); b: g exp(a - ans)",
    "make_map": "each entry: its entry of g (zeros when g has none)",
    "make_record": "each field: its field of g",
    "make_sequence": "each item: its item of g",
    "map_lookup": "the map: g at that key, symbolic zeros elsewhere",
    "seq_index": "the sequence: g at that item, symbolic zeros elsewhere",
    "svd_vh": "a: the rule of U for a^H = V S U^H, with g^H for U's g, conjugate-transposed",
    "struct_field": "the record: g at that field, symbolic zeros elsewhere",
}


def ops_page() -> str:
    lines = [
        "# Ops",
        "",
        "Generated from the op registry by `docs/generate.py`, one table per family. Each op is",
        "one registry entry holding its forward and one VJP rule per input; the *VJP* column gives",
        "each input's rule as a formula, `g` being the output's cotangent and `ans` the output",
        "(code spans are the rule as written). Inputs not listed carry no gradient (indices,",
        "masks, static parameters).",
        "",
        "Every op keeps float32 as float32 and supports float64; float16 works where numpy's own",
        "kernels do. An op marked *broadcasts* takes inputs of broadcast-compatible shapes: the",
        "cotangent is summed back to each input's shape in one central place, the sweep. A rule",
        "marked *first order only* reads its inputs as numbers (a decomposition numpy computes):",
        "forward mode (`jvp`) works through it, and a second derivative raises an error naming",
        "the op.",
        "",
    ]
    ops = sorted(REGISTRY.values(), key=lambda o: (o.family, o.name))
    for family in sorted({op.family for op in ops}):
        lines += [f"## {family}", "", "| op | what it computes | VJP |", "|---|---|---|"]
        for op in (op for op in ops if op.family == family):
            doc = _escape(op.doc) + (" *(broadcasts)*" if op.broadcasts else "")
            vjp = _vjp_summary(op) + ("<br>*first order only*" if op.first_order else "")
            lines.append(f"| `{op.name}` | {doc} | {vjp} |")
        lines.append("")
    return "\n".join([*lines, *_namespace_section()]) + "\n"


def _escape(text: str) -> str:
    """Plain text in a Markdown table cell: ``**`` is not bold, ``|`` does not end the cell."""
    for char in "\\`*_[]<>|":
        text = text.replace(char, "\\" + char)
    return text


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
    if op.name in VJP_TEXT:
        return "<br>".join(_escape(part.strip()) for part in VJP_TEXT[op.name].split(";"))
    if not isinstance(op.vjps, tuple):  # a variadic op: one rule serves every input
        return f"every input: {_rule_text(op.vjps._rule)}"
    names = _input_names(op)
    parts = [f"{names[k]}: {_rule_text(rule)}" for k, rule in enumerate(op.vjps) if rule is not None]
    return "<br>".join(parts) or "none"


def _input_names(op: Any) -> list[str]:
    """The inputs' names as the rules write them, else the forward's, else ``input k``."""
    for rule in op.vjps:
        if getattr(rule, "__name__", "") == "<lambda>":
            names = list(inspect.signature(rule).parameters)[2:]  # after (g, ans)
            if len(names) == len(op.vjps) and "args" not in names:
                return names
    params = inspect.signature(op.forward).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return [f"input {k}" for k in range(len(op.vjps))]
    return [p.name for p in params]


def _rule_text(rule: Any) -> str:
    """A lambda rule's body as written; a named rule's formula from its docstring's first paragraph."""
    if getattr(rule, "__name__", "") != "<lambda>":
        doc = (inspect.getdoc(rule) or "").split("\n\n")[0].replace("\n", " ")
        return _escape(doc.rstrip(".")) if doc else "a rule without a description"
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


# The API reference: one page per public module (the top level in two, the transforms and
# the ops), each opening with a table of its names and their one-line summaries, and an
# index page holding every page's table.


class Section(NamedTuple):
    """Part of an API page: a module's docstring (when ``module`` is given), then a table
    of ``names`` (qualified) and the documentation of each."""

    title: str | None
    module: str | None
    names: tuple[str, ...]


class ApiPage(NamedTuple):
    slug: str  # the page is docs/api/<slug>.md
    title: str
    about: str  # one line, for the index
    sections: tuple[Section, ...]

    @property
    def names(self) -> list[str]:
        return [name for section in self.sections for name in section.names]


def _module_names(module: str) -> tuple[str, ...]:
    return tuple(f"{module}.{name}" for name in importlib.import_module(module).__all__)


def _module_section(module: str, heading: bool = True) -> Section:
    """A module's docstring and names; under its name as a heading when a page shows several."""
    return Section(f"`{module}`" if heading else None, module, _module_names(module))


_TOP_LEVEL = {
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
        "eval_shape",
        "ShapeDtype",
        "GradOptions",
    ],
    "Custom gradients": ["custom_vjp", "checkpoint", "stop_gradient"],
    "The arena": ["Arena", "Node", "Traced"],
    "Structured values": [
        "field",
        "dataclass_field",
        "STATIC",
        "register_container",
        "replace",
        "is_differentiable_leaf",
        "pack",
        "view",
        "struct_field",
        "map_lookup",
        "seq_index",
    ],
    "Debugging": ["debug_nans"],
}

# The op families (the package under nodegrad.ops defining each op), in reading order.
_OP_FAMILIES = {
    "elementwise": "Elementwise arithmetic and math",
    "shape": "Shapes",
    "index": "Indexing",
    "reduce": "Reductions",
    "linalg": "Linear algebra",
    "nn": "Neural-network layers",
    "pipeline": "Data-pipeline ops: segments, scans, sorting",
}


def _top_level_sections() -> tuple[Section, ...]:
    listed = {name for names in _TOP_LEVEL.values() for name in names}
    sections = [Section(None, "nodegrad", ())]
    sections += [Section(title, None, tuple(f"nodegrad.{n}" for n in names)) for title, names in _TOP_LEVEL.items()]
    ops = set(nodegrad.ops.__all__)
    others = [n for n in nodegrad.__all__ if n not in listed | ops and not inspect.ismodule(getattr(nodegrad, n))]
    if others:  # a new public name is documented before it is given a section
        sections.append(Section("Other names", None, tuple(f"nodegrad.{n}" for n in others)))
    return tuple(sections)


def _op_sections() -> tuple[Section, ...]:
    listed = {name for names in _TOP_LEVEL.values() for name in names}
    by_family: dict[str, list[str]] = {}
    for name in sorted(set(nodegrad.ops.__all__) - listed, key=str.lower):
        module = getattr(nodegrad, name).__module__.split(".")
        family = module[2] if len(module) > 2 and module[:2] == ["nodegrad", "ops"] else ""
        by_family.setdefault(family if family in _OP_FAMILIES else "", []).append(f"nodegrad.{name}")
    titles = {**_OP_FAMILIES, "": "Other ops"}
    return tuple(Section(titles[f], None, tuple(by_family[f])) for f in titles if f in by_family)


def api_pages() -> list[ApiPage]:
    """The API pages in reading order."""
    stats = "nodegrad.scipy.stats"
    return [
        ApiPage(
            "nodegrad",
            "`nodegrad`: transforms, the arena, structured values",
            "The transforms (`grad`, `vjp`, `jvp`, `jacobian`, ...), custom gradients, the arena "
            "and its nodes, the helpers of structured values, and NaN debugging.",
            _top_level_sections(),
        ),
        ApiPage(
            "ops",
            "`nodegrad`: the ops",
            "The differentiable functions (`ng.exp`, `ng.sum`, `ng.matmul`, `ng.softmax`, ...), by family; "
            "their gradient rules are on the [ops page](../ops.md).",
            _op_sections(),
        ),
        ApiPage(
            "tree",
            "`nodegrad.tree`: gradient utilities",
            "Maps, sums, norms, clipping and flattening over structures of arrays.",
            (_module_section("nodegrad.tree", heading=False),),
        ),
        ApiPage(
            "optim",
            "`nodegrad.optim`: optimisers",
            "SGD and Adam steps over structured parameters, and autograd-style training loops.",
            (_module_section("nodegrad.optim", heading=False),),
        ),
        ApiPage(
            "misc",
            "`nodegrad.misc`: autograd's flatten",
            "`flatten` and `flatten_func` as `autograd.misc` has them: dict entries in sorted-key order.",
            (_module_section("nodegrad.misc", heading=False),),
        ),
        ApiPage(
            "builtins",
            "`nodegrad.builtins`: autograd's builtins",
            "`tuple`, `list`, `dict`, `isinstance` and `type` as `autograd.builtins` has them, for a port that "
            "changes only its imports.",
            (_module_section("nodegrad.builtins", heading=False),),
        ),
        ApiPage(
            "extend",
            "`nodegrad.extend`: autograd's extension API",
            "`primitive`, `defvjp`, `defvjp_argnums`, `defjvp`, ...: primitives with their own gradient rules, "
            "in autograd's calling conventions.",
            (_module_section("nodegrad.extend", heading=False),),
        ),
        ApiPage(
            "numpy",
            "`nodegrad.numpy`: numpy's namespace",
            "`import nodegrad.numpy as np`: numpy's functions, with the constructors that take traced values.",
            (Section(None, "nodegrad.numpy", ()), _module_section("nodegrad.numpy.construct")),
        ),
        ApiPage(
            "scipy",
            "`nodegrad.scipy`: special functions, linear algebra, ODEs, convolution",
            "`scipy.special`, `scipy.linalg`, `scipy.integrate` and `scipy.signal.convolve` with gradients "
            "(the `scipy` extra).",
            tuple(_module_section(f"nodegrad.scipy.{m}") for m in ("special", "linalg", "integrate", "signal")),
        ),
        ApiPage(
            "scipy-sparse",
            "`nodegrad.scipy.sparse`: sparse matrices",
            "scipy.sparse CSR, CSC and COO matrices as differentiable values: constructors from traced values, "
            "stacking, diagonals and `spsolve` (see [sparse matrices](../sparse.md)).",
            (_module_section("nodegrad.scipy.sparse"), _module_section("nodegrad.scipy.sparse.linalg")),
        ),
        ApiPage(
            "scipy-stats",
            "`nodegrad.scipy.stats`: distributions",
            "Densities, log-densities and CDFs of scipy's distributions, differentiable in data and parameters.",
            (Section(None, stats, tuple(f"{stats}.{name}" for name in nodegrad.scipy.stats.__all__)),),
        ),
        ApiPage(
            "testing",
            "`nodegrad.testing`: checking gradients",
            "`check_grads`, hypothesis strategies for arrays and structures, and the pytest plugin.",
            tuple(_module_section(m) for m in _TESTING_MODULES),
        ),
        ApiPage(
            "display",
            "`nodegrad.display`: tables and pictures",
            "HTML tables and SVG graphs of arenas for Jupyter, summaries of gradients, progress bars.",
            (_module_section("nodegrad.display", heading=False),),
        ),
        ApiPage(
            "parallel",
            "`nodegrad.parallel`: data-parallel gradients",
            "Value and gradient of a loss over row blocks of Dask arrays (the `dask` extra).",
            (_module_section("nodegrad.parallel", heading=False),),
        ),
        ApiPage(
            "data",
            "`nodegrad.data`: datasets",
            "The iris data, shipped for the demo and the notebooks.",
            (_module_section("nodegrad.data", heading=False),),
        ),
        ApiPage(
            "errors",
            "`nodegrad.errors`: exceptions",
            "The exception hierarchy: every error nodegrad raises derives from `NodegradError`.",
            (_module_section("nodegrad.errors", heading=False),),
        ),
    ]


_TESTING_MODULES = ("nodegrad.testing", "nodegrad.testing.strategies", "nodegrad.testing.pytest_plugin")


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _directives(name: str) -> list[str]:
    obj = _resolve(name)
    if inspect.ismodule(obj):  # a scipy.stats distribution: a module of functions
        return [f".. automodule:: {name}", "   :members:", ""]
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return [f".. autoexception:: {name}", "   :show-inheritance:", ""]
    if inspect.isclass(obj):
        return [f".. autoclass:: {name}", "   :members:", ""]
    if callable(obj):
        return [f".. autofunction:: {name}", ""]
    doc = [f"   {line}".rstrip() for line in _data_doc(name)]  # a constant: its ``#:`` comment
    return [f".. py:data:: {name}", f"   :value: {obj!r}", "", *doc, ""]


def _summary_table(names: tuple[str, ...] | list[str]) -> list[str]:
    rows = [f"| {{py:obj}}`~{name}` | {_summary(name)} |" for name in names]
    return ["| name | what it is |", "|---|---|", *rows, ""] if rows else []


def _summary(name: str) -> str:
    """The first sentence of the name's documentation, as Markdown for a table cell."""
    obj = _resolve(name)
    if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
        doc = inspect.getdoc(obj) or ""
    else:
        doc = "\n".join(_data_doc(name))
    module = name.rpartition(".")[0] if not inspect.ismodule(obj) else name
    return _markdown(_first_sentence(doc), module)


def _first_sentence(doc: str) -> str:
    paragraph = " ".join(doc.split("\n\n")[0].split())
    for end in re.finditer(r"[.!?](?=\s+[A-Z(`:]|$)", paragraph):
        head = paragraph[: end.end()]
        if head.count("`") % 2 == 0 and not re.search(r"\b(e\.g|i\.e)\.$", head):
            return head
    return paragraph


def _markdown(text: str, module: str) -> str:
    """reST inline markup as MyST: ``code`` as `code`, :role:`target` as {py:role}`target`,
    a bare target qualified by the module it is written in."""

    def role(match: re.Match[str]) -> str:
        kind, target = match.group(1), match.group(2)
        tilde, bare = ("~", target[1:]) if target.startswith("~") else ("", target)
        if "." not in bare and "<" not in bare:
            tilde, bare = "~", f"{module}.{bare}"
        return f"{{py:{kind}}}`{tilde}{bare}`"

    text = re.sub(r"``(.+?)``", r"`\1`", text)
    text = re.sub(r":(?:py:)?(func|class|data|mod|meth|attr|exc|obj):`([^`]+)`", role, text)
    return text.replace("|", "\\|")


def api_page(page: ApiPage) -> str:
    lines = [f"# {page.title}", ""]
    if page.slug == "ops":
        lines += ["```{eval-rst}", ".. py:currentmodule:: nodegrad", "```", ""]
    if page.sections[0].module is None:  # no module docstring to open the page with
        lines += [page.about, ""]
    for section in page.sections:
        if section.title is not None:
            lines += [f"## {section.title}", ""]
        if section.module is not None:
            lines += _rst([f".. automodule:: {section.module}", "   :no-members:"])
        lines += _summary_table(section.names)
        lines += _documentation(section.names, nested=section.title is not None)
    return "\n".join(lines).rstrip() + "\n"


def _documentation(names: tuple[str, ...], nested: bool) -> list[str]:
    """The directives documenting ``names``; a module (a scipy.stats distribution) under a
    heading of its own."""
    lines: list[str] = []
    for is_module, group in itertools.groupby(names, key=lambda name: inspect.ismodule(_resolve(name))):
        if not is_module:
            lines += _rst([line for name in group for line in _directives(name)])
            continue
        for name in group:
            lines += ["#" * (3 if nested else 2) + f" `{name.rpartition('.')[2]}`", "", *_rst(_directives(name))]
    return lines


def api_index() -> str:
    lines = [
        "# API reference",
        "",
        "Every public name, one page per module; each table gives a name's first line. "
        "Generated from the docstrings by `docs/generate.py`.",
        "",
        "```{toctree}",
        ":hidden:",
        "",
        *(page.slug for page in api_pages()),
        "```",
        "",
    ]
    for page in api_pages():
        lines += [f"## [{page.title}]({page.slug}.md)", "", page.about, "", *_summary_table(page.names)]
    return "\n".join(lines).rstrip() + "\n"


def _data_doc(name: str) -> list[str]:
    """The ``#:`` comment above a constant, where it is assigned (the module ``nodegrad``
    imports it from, for a top-level name)."""
    module, _, attr = name.rpartition(".")
    if module == "nodegrad":
        tree = ast.parse(Path(nodegrad.__file__).read_text(encoding="utf-8"))
        found = [
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == attr for a in node.names)
        ]
        module = found[0] if found else module
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return []
    source = Path(spec.origin).read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and attr in _assigned(node):
            above = reversed(source.splitlines()[: node.lineno - 1])
            comment = itertools.takewhile(lambda line: line.lstrip().startswith("#:"), above)
            return [line.lstrip()[2:].strip() for line in reversed(list(comment))]
    return []


def _assigned(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _rst(directives: list[str]) -> list[str]:
    """Autodoc directives in an ``{eval-rst}`` block: autodoc writes reST, which MyST would read as Markdown."""
    while directives and not directives[-1]:
        directives = directives[:-1]
    return ["```{eval-rst}", *directives, "```", ""]


PAGES = {
    "ops.md": ops_page,
    "api/index.md": api_index,
    **{f"api/{page.slug}.md": functools.partial(api_page, page) for page in api_pages()},
}


def main() -> int:
    for name, build in PAGES.items():
        (DOCS / name).parent.mkdir(exist_ok=True)
        (DOCS / name).write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
