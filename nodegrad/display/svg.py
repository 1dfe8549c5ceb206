"""An SVG picture of an arena, laid out in layers by our own code (no graphviz).

Each node sits in the column of its depth (the longest path from a leaf), in index order
down the column; edges run from parents to children. Nodes are labelled with their op and
shape; a structured node and the reads of its entries share a shaded group box.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from nodegrad.engine.structure import handler_for

__all__ = ["arena_svg"]

_W, _H = 118, 34  # node box
_DX, _DY = 160, 48  # spacing between columns and rows
_PAD = 16
_READS = {"struct_field", "map_lookup", "seq_index"}
_COLORS = {"leaf": "#dbeafe", "structured": "#fef3c7", "other": "#f3f4f6"}


def _depths(nodes: list[Any]) -> list[int]:
    depth = [0] * len(nodes)
    for i, (_, parents, *_rest) in enumerate(nodes):
        if parents:
            depth[i] = 1 + max(depth[p] for p in parents)
    return depth


def _label(op: Any, value: Any) -> tuple[str, str]:
    if value is None:
        return op.name, "released"
    if handler_for(value) is not None:
        return op.name, type(value).__name__
    return op.name, "x".join(map(str, np.shape(value))) or "scalar"


def _kind(op: Any, value: Any) -> str:
    if op.family == "leaf":
        return "leaf"
    if op.family == "structured" or handler_for(value) is not None:
        return "structured"
    return "other"


def arena_svg(arena: Any, limit: int = 200) -> str:
    """The arena's graph as an SVG document (the first ``limit`` nodes)."""
    nodes = arena._nodes[:limit]
    depth = _depths(nodes)
    groups = _members(nodes)
    rows: dict[int, int] = {}
    position = []
    for i, d in enumerate(depth):
        row = rows.get(d, 0)
        # A structured node takes as many rows as it has reads, so its group box holds
        # only its own reads and not the neighbours of its column.
        rows[d] = row + max(1, len(groups.get(i, ())) - 1)
        position.append((_PAD + d * _DX, _PAD + row * _DY))
    width = _PAD * 2 + (max(depth, default=0) + 1) * _DX
    height = _PAD * 2 + max(rows.values(), default=1) * _DY
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
        "<title>nodegrad arena</title>",
    ]
    parts += _group_boxes(groups, position)
    for i, (_, parents, *_rest) in enumerate(nodes):
        x, y = position[i]
        for p in parents:
            px, py = position[p]
            parts.append(
                f'<path d="M{px + _W},{py + _H / 2} C{px + _W + 20},{py + _H / 2} '
                f'{x - 20},{y + _H / 2} {x},{y + _H / 2}" fill="none" stroke="#9ca3af" stroke-width="1"/>'
            )
    for i, (op, _, _, _, value) in enumerate(nodes):
        x, y = position[i]
        name, shape = _label(op, value)
        parts.append(
            f"<g><title>node {i}: {html.escape(name)} {html.escape(shape)}</title>"
            f'<rect x="{x}" y="{y}" width="{_W}" height="{_H}" rx="6" '
            f'fill="{_COLORS[_kind(op, value)]}" stroke="#6b7280"/>'
            f'<text x="{x + 6}" y="{y + 14}">{i}: {html.escape(name[:14])}</text>'
            f'<text x="{x + 6}" y="{y + 27}" fill="#4b5563">{html.escape(shape[:16])}</text></g>'
        )
    if len(arena._nodes) > limit:
        parts.append(f'<text x="{_PAD}" y="{height - 4}">... {len(arena._nodes) - limit} more nodes</text>')
    parts.append("</svg>")
    return "".join(parts)


def _members(nodes: list[Any]) -> dict[int, list[int]]:
    """Each structured node that is read, with the nodes reading its entries."""
    members: dict[int, list[int]] = {}
    for i, (op, parents, *_rest) in enumerate(nodes):
        if op.name in _READS and parents:
            members.setdefault(parents[0], [parents[0]]).append(i)
    return members


def _group_boxes(members: dict[int, list[int]], position: list[tuple[int, int]]) -> list[str]:
    """A shaded box around each structured node and the reads of its entries."""
    boxes = []
    for group in members.values():
        xs = [position[i][0] for i in group]
        ys = [position[i][1] for i in group]
        x0, y0 = min(xs) - 6, min(ys) - 6
        x1, y1 = max(xs) + _W + 6, max(ys) + _H + 6
        boxes.append(
            f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" rx="8" fill="#fffbeb" '
            'stroke="#f59e0b" stroke-dasharray="4 3"/>'
        )
    return boxes
