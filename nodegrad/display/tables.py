"""HTML tables for arenas, nodes and structured gradients."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from nodegrad.display.sources import source_html
from nodegrad.engine.cotangents import StructCotangent, materialize
from nodegrad.engine.structure import flatten, flatten_with_paths, is_container

__all__ = ["Summary", "arena_html", "describe_value", "gradient_html", "node_html", "summary"]

# The tables sit in a view at most 1,000 px wide that scrolls sideways when they do not fit
# (a docs page's narrow column): headers, op names, shapes and key paths never break inside
# a word, values and gradients wrap between theirs, and a source line shows whole up to 64
# characters, then ends in an ellipsis with the whole line in its tooltip. Every rule is
# scoped to the view (div.ng-view table.ng-table td): a notebook's own rules for output
# tables (JupyterLab's right-aligned, fixed-layout cells) are less specific, so ours win.
_STYLE = (
    "<style>div.ng-view{max-width:1000px;overflow-x:auto}"
    "div.ng-view table.ng-table{border-collapse:collapse;table-layout:auto;width:auto;margin:0;"
    "font-family:monospace;font-size:12px}"
    "div.ng-view table.ng-table td,div.ng-view table.ng-table th{border:1px solid #ccc;padding:2px 5px;"
    "text-align:left;vertical-align:top;white-space:nowrap;line-height:1.35;max-width:none}"
    "div.ng-view table.ng-table th{background:#f3f3f3;font-weight:bold}"
    "div.ng-view table.ng-table caption{text-align:left;padding:2px 0;white-space:normal}"
    "div.ng-view table.ng-table td.ng-elided{color:#888;text-align:center}"
    "div.ng-view .ng-line,div.ng-view .ng-text{white-space:normal;overflow-wrap:break-word;"
    "min-width:12ch;max-width:30ch}div.ng-view .ng-text.ng-wide{max-width:64ch}"
    "div.ng-view .ng-line{padding-left:1.5em;text-indent:-1.5em}"
    "div.ng-view code.ng-code{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:1;overflow:hidden;"
    "white-space:pre-wrap;overflow-wrap:anywhere;min-width:30ch;max-width:64ch;"
    "color:#555;background:none;border:0;padding:0;font-size:inherit}"
    "</style>"
)
_GRADIENT_LINES = 12  # a gradient with more leaves shows its first ones in a table cell
# The arena table's columns; "source" only when lines were noted.
_COLUMNS = ("index", "op", "parents", "shape, dtype", "gradient", "value", "key path", "source")


def table_view(table: str) -> str:
    """``table`` in the scrolling view its style rules are scoped to."""
    return f'<div class="ng-view">{_STYLE}{table}</div>'


def _text(text: str) -> str:
    """A cell's text that wraps between words, in a column of bounded width."""
    return f'<div class="ng-text">{text}</div>' if text else ""


def describe_value(value: Any, limit: int = 4) -> str:
    """A short text for a value: its first entries and, for arrays, its range."""
    if value is None:
        return "released"
    if is_container(value):
        return f"{type(value).__name__} of {len(flatten(value)[1].keys)} entries"
    array = np.asarray(value)
    if array.dtype.kind not in "biufc":
        return html.escape(repr(value))[:60]
    flat = array.ravel()
    head = ", ".join(f"{v:.4g}" if array.dtype.kind in "fc" else str(v) for v in flat[:limit])
    more = ", ..." if flat.size > limit else ""
    if array.ndim == 0:
        return head
    span = f" (min {flat.min():.3g}, max {flat.max():.3g})" if flat.size and array.dtype.kind in "fiu" else ""
    return f"[{head}{more}]{span}"


def _shape(value: Any) -> str:
    if is_container(value):
        return type(value).__name__
    return str(tuple(np.shape(value)))


def _dtype(value: Any) -> str:
    if is_container(value) or value is None:
        return ""
    return str(np.asarray(value).dtype)


def _leaf_gradient(path: str, leaf: Any) -> str:
    """One leaf of a gradient: its key path, shape, L2 norm and first entries."""
    if leaf is None:
        return f"{html.escape(path)}: none" if path else "none"
    array = np.asarray(leaf)
    norm = f"{np.linalg.norm(array.ravel()):.4g}" if array.dtype.kind in "biufc" else "?"
    flat = array.ravel()
    head = ", ".join(f"{v:.4g}" for v in flat[:3]) + (", ..." if flat.size > 3 else "")
    text = f"{tuple(array.shape)} norm {norm} [{head}]"
    return f"{html.escape(path)}: {text}" if path else text


def gradient_html(arena: Any, i: int) -> str:
    """The gradient the last ``backward`` found for node ``i``, one line per key path.

    A requested input shows its own gradient; a read of an entry of a requested input
    shows that entry's part of it; a structured value whose entries' reads were requested
    (``backward(..., wrt=view)``) shows theirs. Other nodes show nothing: their cotangents
    were released during the sweep.
    """
    grads = arena.last_gradients
    if i in grads:
        lines = _gradient_lines(grads[i], arena.nodes[i].value, "")
    else:
        lines = _from_a_requested_input(arena, i) or _from_requested_reads(arena, i)
    if len(lines) > _GRADIENT_LINES:
        more = len(lines) - _GRADIENT_LINES + 1
        lines = [*lines[: _GRADIENT_LINES - 1], f"... {more} more (ng.display.summary lists them all)"]
    return "".join(f'<div class="ng-line">{line}</div>' for line in lines)


def _from_a_requested_input(arena: Any, i: int) -> list[str]:
    """The part of a requested structured input's gradient that node ``i`` reads."""
    grads = arena.last_gradients
    op, parents, *_ = arena.nodes[i]
    root, path = i, arena.path_of(i)
    while parents and root not in grads and op.family == "structured":
        root = parents[0]
        op, parents, *_ = arena.nodes[root]
    if root == i or root not in grads or not path:
        return []
    base = arena.path_of(root)
    if not path.startswith(base):
        return []
    return _gradient_lines(grads[root], arena.nodes[root].value, base, select=path)


def _from_requested_reads(arena: Any, i: int) -> list[str]:
    """For a structured node: the gradients of the requested reads of its entries (and of
    their entries), one line per key path, in the order they were read."""
    nodes = arena.nodes
    if not is_container(nodes[i].value):
        return []
    base = arena.path_of(i)
    lines = []
    for r in sorted(k for k in arena.last_gradients if k > i):
        ancestor = r
        while ancestor > i and nodes[ancestor].op.family == "structured" and nodes[ancestor].parents:
            ancestor = nodes[ancestor].parents[0]
        path = arena.path_of(r)
        if ancestor == i and path.startswith(base):
            lines += _gradient_lines(arena.last_gradients[r], nodes[r].value, "", prefix=path[len(base) :])
    return lines


def _gradient_lines(cotangent: Any, value: Any, base: str, select: str | None = None, prefix: str = "") -> list[str]:
    if value is None:
        return ["released"]
    if not is_container(value) and not isinstance(cotangent, StructCotangent):
        return [] if select else [_leaf_gradient(prefix, cotangent)]
    gradient = materialize(cotangent, value, base, [], zero_missing=False)
    lines = [
        _leaf_gradient(prefix + (path[len(select) :] if select else path[len(base) :]), leaf)
        for path, leaf in flatten_with_paths(gradient, base)
        if (select is None or path.startswith(select)) and leaf is not None
    ]
    return lines or ["none"]


def _row(arena: Any, i: int, locations: Any) -> str:
    op, parents, _, _, value = arena.nodes[i]
    dtype = _dtype(value)
    cells = [
        str(i),
        op.name,
        ", ".join(map(str, parents)),
        f"{_shape(value)} {dtype}" if dtype else _shape(value),
        gradient_html(arena, i),
        _text(describe_value(value, limit=3)),
        html.escape(arena.path_of(i)),
    ]
    if locations:
        previous = locations[i - 1] if i else ""
        cells.append(source_html(locations[i], previous) if locations[i] else "")
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def arena_html(arena: Any, limit: int = 40) -> str:
    """An HTML table of the arena's nodes, at most 1,000 px wide; a long arena shows its
    first and last ``limit // 2`` nodes with the middle elided."""
    n = len(arena.nodes)
    locations = arena.source_locations
    columns = [h for h in _COLUMNS if locations or h != "source"]
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in columns) + "</tr>"
    if n <= limit:
        rows = [_row(arena, i, locations) for i in range(n)]
    else:
        half = limit // 2
        elided = f'<tr><td class="ng-elided" colspan="{len(columns)}">... {n - 2 * half} nodes ...</td></tr>'
        rows = [
            *(_row(arena, i, locations) for i in range(half)),
            elided,
            *(_row(arena, i, locations) for i in range(n - half, n)),
        ]
    requested = ", ".join(map(str, sorted(arena.last_gradients)))
    note = f"; gradients of nodes {requested} from the last backward" if requested else ""
    caption = f"<caption>Arena: {n} nodes, {arena.nbytes:,} bytes of arrays{note}</caption>"
    return table_view(f'<table class="ng-table ng-arena">{caption}{head}{"".join(rows)}</table>')


def node_html(node: Any) -> str:
    """An HTML table of one node's fields."""
    fields = {
        "index": node.index,
        "op": node.op,
        "parents": ", ".join(map(str, node.parents)) or "(leaf)",
        "shape": _shape(node.value),
        "dtype": _dtype(node.value),
        "key path": html.escape(node.path),
        "source": source_html(node.source) if node.source else "",
        "value": _text(describe_value(node.value, limit=8)),
        "gradient": "" if node.gradient is None else _text(describe_value(node.gradient, limit=8)),
    }
    order = ["index", "op", "parents", "shape", "dtype", "gradient", "value", "key path", "source"]
    fields = {k: fields[k] for k in order}
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in fields.items())
    return table_view(f'<table class="ng-table">{rows}</table>')


class Summary:
    """A structured value shown as a table of its leaves: key path, shape, dtype, norm."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def rows(self) -> list[tuple[str, str, str, str]]:
        out = []
        for path, leaf in flatten_with_paths(self.value):
            if leaf is None or np.asarray(leaf).dtype.kind not in "fc":
                out.append((path or "(value)", "", "", "static" if leaf is not None else "None"))
                continue
            array = np.asarray(leaf)
            out.append((path or "(value)", str(array.shape), str(array.dtype), f"{np.linalg.norm(array.ravel()):.4g}"))
        return out

    def _repr_html_(self) -> str:
        head = "<tr><th>key path</th><th>shape</th><th>dtype</th><th>L2 norm</th></tr>"
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows())
        return table_view(f'<table class="ng-table">{head}{body}</table>')

    def __repr__(self) -> str:
        return "\n".join(f"{p:40s} {s:12s} {d:8s} {n}" for p, s, d, n in self.rows())


def summary(value: Any) -> Summary:
    """A displayable table of a structured value's leaves (key path, shape, dtype, norm),
    e.g. a gradient.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> print(ng.display.summary({"w": np.ones((2, 2)), "tag": None}))
    ['w']                                    (2, 2)       float64  2
    ['tag']                                                        None
    """
    return Summary(value)
