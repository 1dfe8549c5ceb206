"""An SVG picture of an arena, laid out top to bottom by our own code (no graphviz).

The picture is built from *boxes*: a node, a chain of elementwise ops collapsed into one
box with a count, or the elided middle of a long arena. A structured value and the reads
of its entries (and, nested, the reads of those) form a dashed *cluster* that holds only
its own boxes. Clusters and free boxes sit in layers by depth (the longest path from a
leaf), in index order along a layer; a layer wider than the maximum width wraps onto
further rows. Runs of narrow rows taller than a screen are set in columns side by side.
The arena's output is always drawn, and drawn bold.

A loop's iterations are *folded*: its body is drawn once, in a stacked frame with the
number of iterations, edges carried from one iteration to the next marked "↻"
(:mod:`nodegrad.display.folds` finds them; :func:`nodegrad.display.graph` shows the
folded picture with the unfolded one a click away).
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from nodegrad.display.folds import Fold, find_folds
from nodegrad.engine.structure import is_container

__all__ = ["arena_svg"]

_W, _H = 124, 34  # a box
_GX, _GY = 14, 34  # gaps between boxes in a row and between rows
_PAD = 16  # around the picture
_CPAD = 8  # inside a cluster
_MAX_WIDTH = 1200  # the picture's width never exceeds this
_COLUMN_HEIGHT = 900  # a taller graph is set in columns side by side
_CGAP = 48  # between columns
_LONG = 3 * (_H + _GY)  # a longer edge is drawn as a labelled stub into its target
_MAX_INPUTS = 4  # edges drawn into one box; more sources share one stub
_MIN_CHAIN = 3  # shorter runs of elementwise ops are drawn node by node
_READS = {"struct_field", "map_lookup", "seq_index"}
_COLORS = {"leaf": "#dbeafe", "structured": "#fef3c7", "other": "#f3f4f6", "chain": "#e0e7ff"}
_HEADER = 32  # a fold's title line, and room for the stubs into its first row
_STACK = 6  # how far a fold's frame shows the frames stacked behind it


class _Unit:
    """A box (``node``, ``chain``, ``elided``) or a ``cluster`` of units."""

    __slots__ = ("column", "fold", "height", "kind", "members", "nodes", "width", "x", "y")

    def __init__(self, kind: str, nodes: list[int], members: list[_Unit] | None = None) -> None:
        self.kind = kind
        self.nodes = nodes
        self.members = members or []
        self.width, self.height = float(_W), float(_H)
        self.x = self.y = 0.0
        self.column = 0
        self.fold: Fold | None = None  # the loop whose body this box or frame draws

    def set_column(self, column: int) -> None:
        self.column = column
        for m in self.members:
            m.set_column(column)

    def all_nodes(self) -> list[int]:
        if not self.members:
            return self.nodes
        return [i for m in self.members for i in m.all_nodes()]

    def span(self) -> list[int]:
        """Every node the unit stands for: a fold's frame stands for all its iterations."""
        if self.kind == "fold" and self.fold is not None:
            return list(range(self.fold.start, self.fold.stop))
        return self.all_nodes()

    def boxes(self) -> list[_Unit]:
        return [b for m in self.members for b in m.boxes()] if self.members else [self]

    def frames(self) -> list[_Unit]:
        """The clusters and folds, outer ones first."""
        return [self, *(c for m in self.members for c in m.frames())] if self.members else []

    def set_fold(self, fold: Fold) -> None:
        self.fold = fold
        for m in self.members:
            m.set_fold(fold)

    def place(self, x: float, y: float) -> None:
        dx, dy = x - self.x, y - self.y
        self.x, self.y = x, y
        for m in self.members:
            m.place(m.x + dx, m.y + dy)


def _label(op: Any, value: Any) -> tuple[str, str]:
    if value is None:
        return op.name, "released"
    if is_container(value):
        return op.name, type(value).__name__
    return op.name, "x".join(map(str, np.shape(value))) or "scalar"


def _kind(op: Any, value: Any) -> str:
    if op.family == "leaf":
        return "leaf"
    if op.family == "structured" or is_container(value):
        return "structured"
    return "other"


def _flow(units: list[_Unit], max_width: float) -> list[list[_Unit]]:
    """Split ``units`` into rows no wider than ``max_width`` (at least one unit a row)."""
    rows: list[list[_Unit]] = [[]]
    used = 0.0
    for u in units:
        if rows[-1] and used + _GX + u.width > max_width:
            rows.append([])
            used = 0.0
        used += u.width + (_GX if rows[-1] else 0)
        rows[-1].append(u)
    return [r for r in rows if r]


def _stack(rows: list[list[_Unit]], x0: float, y0: float, width: float) -> float:
    """Place rows top to bottom from ``(x0, y0)``, each centred in ``width``; the bottom."""
    y = y0
    for row in rows:
        row_width = sum(u.width for u in row) + _GX * (len(row) - 1)
        x = x0 + (width - row_width) / 2
        for u in row:
            u.place(x, y)
            x += u.width + _GX
        y += max(u.height for u in row) + _GY
    return y - _GY


def _row_width(row: list[_Unit]) -> float:
    return sum(u.width for u in row) + _GX * (len(row) - 1)


def _bands(rows: list[list[_Unit]]) -> tuple[float, float]:
    """Place the rows top to bottom: runs of wide rows (a cluster of parameters, a wide
    layer) across the picture, runs of narrow rows in columns side by side, so a long,
    narrow graph fills the width instead of running down one column; the width and the
    height taken."""
    if not rows:
        return 0.0, float(_PAD)
    wide = [_row_width(r) > (_MAX_WIDTH - 2 * _PAD) / 3 for r in rows]
    y, width, column = float(_PAD), 0.0, 0
    start = 0
    for k in range(1, len(rows) + 1):
        if k < len(rows) and wide[k] == wide[start]:
            continue
        run = rows[start:k]
        if wide[start]:
            run_width = max(_row_width(r) for r in run)
            bottom = _stack(run, _PAD, y, run_width)
            for unit in (u for r in run for u in r):
                unit.set_column(-1)
        else:
            run_width, bottom, column = _columns(run, y, column)
        width, y, start = max(width, run_width), bottom + _GY, k
    return width, y - _GY


def _columns(rows: list[list[_Unit]], top: float, first: int) -> tuple[float, float, int]:
    """Place narrow rows in balanced columns from ``top``, each about ``_COLUMN_HEIGHT``
    tall; the width, the bottom and the next column number."""
    heights = [max(u.height for u in row) + _GY for row in rows]
    count = max(1, math.ceil(sum(heights) / _COLUMN_HEIGHT))
    while True:
        # Balanced columns: a row goes to the next column once its middle would pass the
        # column's share of the height.
        share = max(sum(heights) / count, *heights)
        groups: list[list[int]] = [[]]
        used = 0.0
        for k, h in enumerate(heights):
            if groups[-1] and used + h / 2 > share:
                groups.append([])
                used = 0.0
            groups[-1].append(k)
            used += h
        widths = [max(_row_width(rows[k]) for k in g) for g in groups]
        if sum(widths) + _CGAP * (len(groups) - 1) <= _MAX_WIDTH - 2 * _PAD or count == 1:
            break
        count -= 1
    x, bottom = float(_PAD), top
    for column, (group, width) in enumerate(zip(groups, widths, strict=True), first):
        bottom = max(bottom, _stack([rows[k] for k in group], x, top, width))
        for k in group:
            for unit in rows[k]:
                unit.set_column(column)
        x += width + _CGAP
    return x - _CGAP - _PAD, bottom, first + len(groups)


def _cluster(root: int, reads: dict[int, list[int]], max_width: float) -> _Unit:
    """The cluster of a structured node: the node on top, the reads of its entries below."""
    inner = max(max_width - 2 * _CPAD, _W)
    members = [_cluster(r, reads, inner) if r in reads else _Unit("node", [r]) for r in reads[root]]
    head = _Unit("node", [root])
    rows = [[head], *_flow(members, inner)]
    width = max(_row_width(r) for r in rows)
    bottom = _stack(rows, _CPAD, _CPAD, width)
    unit = _Unit("cluster", [root], [head, *members])
    unit.width, unit.height = width + 2 * _CPAD, bottom + _CPAD
    return unit


def _plan(n: int, folds: list[Fold], limit: int) -> tuple[list[int], list[Fold], range]:
    """What is drawn: the nodes outside folds, the folds (each as much as its body) and
    the elided middle, so that about ``limit`` boxes are drawn, the first and the last;
    the output is always among them."""
    items: list[int | Fold] = []
    by_start = {f.start: f for f in folds}
    k = 0
    while k < n:
        fold = by_start.get(k)
        items.append(k if fold is None else fold)
        k = k + 1 if fold is None else fold.stop
    weight = [1 if isinstance(item, int) else item.period for item in items]
    head = tail = len(items)
    if sum(weight) > limit:
        used, budget = 0, max(limit // 2, 1)
        while tail > 0 and (tail == len(items) or used + weight[tail - 1] <= budget):
            tail -= 1
            used += weight[tail]
        head, budget = 0, limit - used
        while head < tail and weight[head] <= budget:
            budget -= weight[head]
            head += 1
    kept = items[:head] + items[tail:]

    def first(k: int) -> int:
        item = items[k]
        return item if isinstance(item, int) else item.start

    elided = range(first(head), first(tail) if tail < len(items) else n) if head < tail else range(0)
    return [i for i in kept if isinstance(i, int)], [f for f in kept if isinstance(f, Fold)], elided


def _units(nodes: Any, limit: int, folds: list[Fold]) -> list[_Unit]:
    """The top-level units in index order: clusters, chains, nodes, folds and the elided middle."""
    plain, kept_folds, elided = _plan(len(nodes), folds, limit)
    top = [(u.all_nodes()[0], u) for u in _group(nodes, plain)]
    top += [(f.start, _fold_unit(nodes, f, _MAX_WIDTH - 2 * _PAD)) for f in kept_folds]
    if elided:
        top.append((elided.start, _Unit("elided", list(elided))))
    return [u for _, u in sorted(top, key=lambda t: t[0])]


def _group(nodes: Any, indices: list[int]) -> list[_Unit]:
    """Units for ``indices``: a structured value with the reads of its entries as a
    cluster, runs of elementwise ops as chains, the rest node by node."""
    is_in = set(indices)
    children: dict[int, list[int]] = {}
    for i in indices:
        for p in nodes[i].parents:
            children.setdefault(p, []).append(i)
    reads: dict[int, list[int]] = {}
    for i in indices:
        op, parents = nodes[i].op, nodes[i].parents
        if op.name in _READS and parents and parents[0] in is_in:
            reads.setdefault(parents[0], []).append(i)
    read_nodes = {r for rs in reads.values() for r in rs}
    placed: set[int] = set()
    units: list[_Unit] = []
    for i in indices:
        if i in placed or i in read_nodes:
            continue
        if i in reads:
            unit = _cluster(i, reads, _MAX_WIDTH - 2 * _PAD)
        else:
            chain = _chain(nodes, i, children, read_nodes)
            unit = _Unit("chain", chain) if len(chain) >= _MIN_CHAIN else _Unit("node", [i])
        placed.update(unit.all_nodes())
        units.append(unit)
    return units


def _fold_unit(nodes: Any, fold: Fold, max_width: float) -> _Unit:
    """The frame of a fold: its body laid out in layers inside, under a title line."""
    members = _group(nodes, list(fold.body()))
    inner = max(max_width - 2 * _CPAD - _STACK, _W)
    rows = [row for layer in _layers(members, nodes) for row in _flow(layer, inner)]
    width = max(max(_row_width(r) for r in rows), 2 * _W)
    bottom = _stack(rows, _CPAD, _CPAD + _HEADER, width)
    unit = _Unit("fold", list(fold.body()), members)
    unit.set_fold(fold)
    unit.width, unit.height = width + 2 * _CPAD + _STACK, bottom + _CPAD + _STACK
    return unit


def _chain(nodes: Any, start: int, children: dict[int, list[int]], taken: set[int]) -> list[int]:
    """The run of elementwise ops from ``start`` where each feeds only the next."""
    chain = [start]
    if nodes[start].op.family != "elementwise":
        return chain
    i = start
    while len(children.get(i, ())) == 1:
        (j,) = children[i]
        op, parents = nodes[j].op, nodes[j].parents
        if op.family != "elementwise" or set(parents) != {i} or j in taken:
            break
        chain.append(j)
        i = j
    return chain


def _layers(units: list[_Unit], nodes: Any) -> list[list[_Unit]]:
    """Units grouped by depth over the graph of units, each layer in index order."""
    owner: dict[int, int] = {}
    for k, u in enumerate(units):
        for i in u.span():
            owner[i] = k
    depth: dict[int, int] = {}
    for k, u in enumerate(units):
        parents = {owner.get(p) for i in u.span() for p in nodes[i].parents}
        depth[k] = 1 + max((depth[q] for q in parents if q in depth and q != k), default=-1)
    layers: dict[int, list[_Unit]] = {}
    for k, u in enumerate(units):
        layers.setdefault(depth[k], []).append(u)
    return [layers[d] for d in sorted(layers)]


def arena_svg(arena: Any, limit: int = 200, fold: bool = True) -> str:
    """The arena's graph as an SVG document: a loop's iterations folded into one drawing
    of its body (unless ``fold`` is false); of what remains, the first and last nodes up
    to ``limit`` in all, the middle of a longer arena drawn as one elided box where it sits."""
    nodes = arena.nodes
    n = len(nodes)
    folds = find_folds(nodes) if fold else []
    units = _units(nodes, limit, folds)
    rows = [row for layer in _layers(units, nodes) for row in _flow(layer, _MAX_WIDTH - 2 * _PAD)]
    width, bottom = _bands(rows)
    total_w, total_h = int(width + 2 * _PAD), int(bottom + _PAD)
    boxes = [b for u in units for b in u.boxes()]
    box_of = {i: b for b in boxes for i in b.nodes}
    for frame in (u for u in units if u.kind == "fold" and u.fold is not None):
        f = frame.fold
        box_of.update((i, box_of[f.first(i)]) for i in range(f.start + f.period, f.stop))  # type: ignore[union-attr]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
        f'viewBox="0 0 {total_w} {total_h}" font-family="monospace" font-size="11">',
        f"<title>nodegrad arena: {n} nodes</title>",
        '<defs><marker id="ng-arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" '
        'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#9ca3af"/></marker></defs>',
    ]
    for frame in [c for u in units for c in u.frames()]:
        parts.append(_fold_svg(frame) if frame.kind == "fold" else _cluster_svg(frame))
    for box in boxes:
        parts += _edges(box, box_of, nodes, boxes)
    for box in boxes:
        parts.append(_box_svg(box, nodes, n - 1 if box_of.get(n - 1) is box else -1))
    parts.append("</svg>")
    return "".join(parts)


def _edges(box: _Unit, box_of: dict[int, _Unit], nodes: Any, boxes: list[_Unit]) -> list[str]:
    """Edges into ``box`` from the boxes holding its nodes' parents (one per box), entering
    along its top edge. An edge that is long, goes up, reaches far into another column or
    would cross another box is a short stub labelled with its source: a fan of lines
    across the picture reads as nothing. Past ``_MAX_INPUTS`` sources, the rest share
    one stub labelled with their count. A box in a loop's body also shows what its nodes
    take from the previous iteration: "↻" on a stub, or a loop on its side for its own."""
    sources: dict[int, _Unit] = {}
    fold = box.fold
    # In a fold, the nodes' repeats in the second iteration show what is carried over.
    again = [i + fold.period for i in box.nodes] if fold is not None else []
    carried: set[int] = set()  # boxes only the previous iteration's values come from
    same: set[int] = set()
    second = fold.start + fold.period if fold is not None else 0
    for i in [*box.nodes, *again]:
        for p in nodes[i].parents:
            src = box_of[p]
            # A node of the second iteration reading one of the first: carried over.
            previous = fold is not None and i >= second and fold.start <= p < second
            (carried if previous else same).add(id(src))
            sources.setdefault(id(src), src)
    loop = id(box) in carried
    sources.pop(id(box), None)
    shown = list(sources.values())
    rest = shown[_MAX_INPUTS:] if len(shown) > _MAX_INPUTS + 1 else []
    shown = shown[: len(shown) - len(rest)]
    slots = len(shown) + bool(rest)
    out = [_self_loop(box)] if loop else []
    for k, src in enumerate(shown):
        x1, y1 = box.x + box.width * (k + 1) / (slots + 1), box.y
        x0, y0 = src.x + src.width / 2, src.y + src.height
        if id(src) in carried and id(src) not in same:
            out.append(_stub(x1, y1, f"\u21bb{_name(src)}", f"from {_name(src)} of the previous iteration", k % 2 == 1))
            continue
        bend = max(abs(y1 - y0) / 2, 12)
        curve = ((x0, y0), (x0, y0 + bend), (x1, y1 - bend), (x1, y1))
        far = y1 - y0 > _LONG or y1 < y0 or (src.column != box.column and abs(x1 - x0) > _W)
        if far or _crosses(curve, boxes, (src, box)):
            out.append(_stub(x1, y1, _name(src), f"from {_name(src)}", k % 2 == 1))
            continue
        out.append(
            f'<path class="ng-edge" data-edge="{_name(src)}>{_name(box)}" '
            f'd="M{x0:.1f},{y0:.1f} C{x0:.1f},{y0 + bend:.1f} {x1:.1f},{y1 - bend:.1f} {x1:.1f},{y1:.1f}" '
            'fill="none" stroke="#9ca3af" stroke-width="1" marker-end="url(#ng-arrow)"/>'
        )
    if rest:
        x1 = box.x + box.width * slots / (slots + 1)
        out.append(_stub(x1, box.y, f"+{len(rest)}", "from " + ", ".join(_name(src) for src in rest), slots % 2 == 0))
    return out


def _name(box: _Unit) -> str:
    return str(box.nodes[0]) if box.kind == "node" else f"{box.nodes[0]}-{box.nodes[-1]}"


def _self_loop(box: _Unit) -> str:
    """A loop on the right of ``box``: its node takes its own value from the previous iteration."""
    x, y = box.x + _W, box.y + _H / 2
    return (
        f'<path class="ng-carried" d="M{x:.1f},{y - 8:.1f} C{x + 12:.1f},{y - 12:.1f} {x + 12:.1f},{y + 12:.1f} '
        f'{x + 1:.1f},{y + 8:.1f}" fill="none" stroke="#6366f1" stroke-width="1" marker-end="url(#ng-arrow)">'
        f"<title>{_name(box)} takes its own value from the previous iteration</title></path>"
    )


def _stub(x: float, y: float, label: str, title: str, high: bool = False) -> str:
    """A short arrow into ``(x, y)`` labelled with its source; ``high`` ones are longer, so
    the labels of neighbouring stubs stand apart."""
    length = 24 if high else 14
    return (
        f'<path class="ng-stub" d="M{x:.1f},{y - length:.1f} L{x:.1f},{y:.1f}" fill="none" stroke="#9ca3af" '
        f'stroke-width="1" marker-end="url(#ng-arrow)"><title>{html.escape(title)}</title></path>'
        f'<text x="{x + 2:.1f}" y="{y - length + 7:.1f}" font-size="9" fill="#6b7280">{html.escape(label)}</text>'
    )


def _crosses(curve: tuple[tuple[float, float], ...], boxes: list[_Unit], ends: tuple[_Unit, _Unit]) -> bool:
    """Whether the cubic Bezier ``curve`` passes through a box other than its two ends."""
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = curve
    near = [b for b in boxes if b not in ends and b.y < dy and b.y + b.height > ay]
    for k in range(1, 12):
        t = k / 12
        u = 1 - t
        x = u**3 * ax + 3 * u * u * t * bx + 3 * u * t * t * cx + t**3 * dx
        y = u**3 * ay + 3 * u * u * t * by + 3 * u * t * t * cy + t**3 * dy
        if any(b.x - 2 <= x <= b.x + b.width + 2 and b.y - 2 <= y <= b.y + b.height + 2 for b in near):
            return True
    return False


def _cluster_svg(cluster: _Unit) -> str:
    members = " ".join(map(str, cluster.all_nodes()))
    return (
        f'<rect class="ng-cluster" data-nodes="{members}" x="{cluster.x:.1f}" y="{cluster.y:.1f}" '
        f'width="{cluster.width:.1f}" height="{cluster.height:.1f}" rx="8" fill="#fffbeb" fill-opacity="0.6" '
        'stroke="#f59e0b" stroke-dasharray="4 3"/>'
    )


def _fold_svg(frame: _Unit) -> str:
    """A fold's frame: stacked, with the number of iterations and the nodes they span."""
    f = frame.fold
    assert f is not None
    x, y, w, h = frame.x, frame.y, frame.width - _STACK, frame.height - _STACK
    title = (
        f"nodes {f.start} to {f.stop - 1}: {f.count} iterations of the {f.period} nodes drawn here "
        f"({f.start} to {f.start + f.period - 1}); ng.display.graph(arena) unfolds them"
    )
    behind = "".join(
        f'<rect x="{x + d:.1f}" y="{y + d:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" fill="#eef2ff" '
        'stroke="#a5b4fc"/>'
        for d in (_STACK, _STACK / 2)
    )
    return (
        f'{behind}<rect class="ng-fold" data-nodes="{f.start}-{f.stop - 1}" data-period="{f.period}" '
        f'data-count="{f.count}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" fill="#f5f7ff" '
        f'stroke="#6366f1" stroke-width="1.5"><title>{html.escape(title)}</title></rect>'
        f'<text x="{x + 8:.1f}" y="{y + 15:.1f}" font-weight="bold" font-size="12" fill="#4338ca">'
        f"\u00d7{f.count}</text>"
        f'<text x="{x + 48:.1f}" y="{y + 15:.1f}" fill="#4338ca">'
        f"{html.escape(_clip(f'loop: nodes {f.start}-{f.stop - 1}', max(int((w - 56) / 6.6), 8)))}</text>"
    )


def _clip(text: str, size: int = 18) -> str:
    """``text`` cut to fit a box, with an ellipsis when cut (the box's title has it all)."""
    return text if len(text) <= size else text[: size - 1] + "\u2026"


def _box_svg(box: _Unit, nodes: Any, output: int) -> str:
    x, y = box.x, box.y
    if box.kind == "elided":
        first, last = box.nodes[0], box.nodes[-1]
        title = f"nodes {first} to {last}: {len(box.nodes)} nodes not drawn"
        lines, fill = (f"... {len(box.nodes):,} nodes", f"{first}-{last} elided"), "#ffffff"
        stroke = ' stroke-dasharray="3 3"'
    elif box.kind == "chain":
        first, last = box.nodes[0], box.nodes[-1]
        ops = [nodes[i].op.name for i in box.nodes]
        names = sorted(set(ops), key=ops.index)
        _, shape = _label(nodes[last].op, nodes[last].value)
        title = f"nodes {first} to {last}: {len(ops)} elementwise ops ({', '.join(names)}) {shape}"
        lines = (_clip(f"{len(ops)}x {','.join(names)}"), _clip(f"{first}-{last} {shape}"))
        fill, stroke = _COLORS["chain"], ""
    else:
        (i,) = box.nodes
        op, value = nodes[i].op, nodes[i].value
        name, shape = _label(op, value)
        title = f"node {i}: {name} {shape}"
        if box.fold is not None:
            last = box.fold.first(i) + box.fold.period * (box.fold.count - 1)
            title = f"node {i}, repeated every {box.fold.period} nodes to {last}: {name} {shape}"
        lines, fill = (_clip(f"{i}: {name}"), _clip(shape)), _COLORS[_kind(op, value)]
        stroke = ""
    if box.kind != "elided" and output >= 0:
        title += " (output)" if output in box.nodes else f" (output: node {output}, in the last iteration)"
        stroke = ' stroke-width="2.5"'
    return (
        f'<g class="ng-{box.kind}"><title>{html.escape(title)}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{_W}" height="{_H}" rx="6" fill="{fill}" stroke="#6b7280"{stroke}/>'
        f'<text x="{x + 6:.1f}" y="{y + 14:.1f}">{html.escape(lines[0])}</text>'
        f'<text x="{x + 6:.1f}" y="{y + 27:.1f}" fill="#4b5563">{html.escape(lines[1])}</text></g>'
    )
