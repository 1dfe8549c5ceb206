"""HTML tables for arenas, nodes and structured gradients."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from nodegrad.engine.structure import StructCotangent, flatten_with_paths, handler_for, materialize

__all__ = ["Summary", "arena_html", "describe_value", "gradient_html", "node_html", "summary"]

_STYLE = (
    "<style>.ng-table{border-collapse:collapse;font-family:monospace;font-size:12px}"
    ".ng-table td,.ng-table th{border:1px solid #ccc;padding:2px 6px;text-align:left;"
    "white-space:nowrap;vertical-align:top}"
    ".ng-table th{background:#f3f3f3}.ng-elided{color:#888;text-align:center}</style>"
)
_GRADIENT_LINES = 12  # a gradient with more leaves shows its first ones in a table cell


def describe_value(value: Any, limit: int = 4) -> str:
    """A short text for a value: its first entries and, for arrays, its range."""
    if value is None:
        return "released"
    handler = handler_for(value)
    if handler is not None:
        return f"{type(value).__name__} of {len(handler.keys(value))} entries"
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
    if handler_for(value) is not None:
        return type(value).__name__
    return str(tuple(np.shape(value)))


def _dtype(value: Any) -> str:
    if handler_for(value) is not None or value is None:
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
    shows that entry's part of it. Other nodes show nothing: their cotangents were
    released during the sweep.
    """
    grads = arena._last_gradients
    if i in grads:
        return _gradient_lines(grads[i], arena._nodes[i][4], "")
    op, parents, *_ = arena._nodes[i]
    root, path = i, arena._paths.get(i, "")
    while parents and root not in grads and op.family == "structured":
        root = parents[0]
        op, parents, *_ = arena._nodes[root]
    if root == i or root not in grads or not path:
        return ""
    base = arena._paths.get(root, "")
    if not path.startswith(base):
        return ""
    return _gradient_lines(grads[root], arena._nodes[root][4], base, select=path)


def _gradient_lines(cotangent: Any, value: Any, base: str, select: str | None = None) -> str:
    if value is None:
        return "released"
    if handler_for(value) is None and not isinstance(cotangent, StructCotangent):
        return "" if select else _leaf_gradient("", cotangent)
    gradient = materialize(cotangent, value, base, [], zero_missing=False)
    lines = [
        _leaf_gradient(path[len(select) :] if select else path[len(base) :], leaf)
        for path, leaf in flatten_with_paths(gradient, base)
        if (select is None or path.startswith(select)) and leaf is not None
    ]
    if len(lines) > _GRADIENT_LINES:
        more = len(lines) - _GRADIENT_LINES + 1
        lines = [*lines[: _GRADIENT_LINES - 1], f"... {more} more (ng.display.summary lists them all)"]
    return "<br>".join(lines) or "none"


def _row(arena: Any, i: int) -> str:
    op, parents, _, _, value = arena._nodes[i]
    location = arena._nodes.locations[i] if hasattr(arena._nodes, "locations") else ""
    cells = [
        str(i),
        op.name,
        ", ".join(map(str, parents)),
        _shape(value),
        _dtype(value),
        html.escape(arena._paths.get(i, "")),
        html.escape(location.rsplit("/", 1)[-1]),
        describe_value(value),
        gradient_html(arena, i),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def arena_html(arena: Any, limit: int = 40) -> str:
    """An HTML table of the arena's nodes; a long arena shows its first and last
    ``limit // 2`` nodes with the middle elided."""
    n = len(arena._nodes)
    headers = ["index", "op", "parents", "shape", "dtype", "key path", "source", "value", "gradient"]
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in headers) + "</tr>"
    if n <= limit:
        rows = [_row(arena, i) for i in range(n)]
    else:
        half = limit // 2
        elided = f'<tr><td class="ng-elided" colspan="{len(headers)}">... {n - 2 * half} nodes ...</td></tr>'
        rows = [_row(arena, i) for i in range(half)] + [elided] + [_row(arena, i) for i in range(n - half, n)]
    requested = ", ".join(map(str, arena._last_gradients))
    note = f"; gradients of nodes {requested} from the last backward" if requested else ""
    caption = f"<caption>Arena: {n} nodes, {arena.nbytes:,} bytes of arrays{note}</caption>"
    return f'{_STYLE}<table class="ng-table">{caption}{head}{"".join(rows)}</table>'


def node_html(node: Any) -> str:
    """An HTML table of one node's fields."""
    fields = {
        "index": node.index,
        "op": node.op,
        "parents": ", ".join(map(str, node.parents)) or "(leaf)",
        "shape": _shape(node.value),
        "dtype": _dtype(node.value),
        "key path": html.escape(node.path),
        "source": html.escape(node.source),
        "value": describe_value(node.value, limit=8),
        "gradient": "" if node.gradient is None else describe_value(node.gradient, limit=8),
    }
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in fields.items())
    return f'{_STYLE}<table class="ng-table">{rows}</table>'


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
        return f'{_STYLE}<table class="ng-table">{head}{body}</table>'

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
