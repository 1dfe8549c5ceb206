"""Jupyter display: HTML tables and the SVG graph."""

from __future__ import annotations

import builtins
import html
import importlib
import io
import re
import runpy
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad import errors
from nodegrad.display import sources
from nodegrad.engine.arena import current_arena

SVG_NS = "{http://www.w3.org/2000/svg}"
progress_module = importlib.import_module("nodegrad.display.progress")  # the package exports the function


def _thirty_node_arena() -> tuple[ng.Arena, Any]:
    a = ng.Arena()
    params = a.param({"w": np.full((3, 3), 0.1), "b": np.zeros(3), "name": "layer"}, name="params")
    h = a.param(np.ones((2, 3)))
    for _ in range(8):  # 4 leaves and reads, then 3 nodes a layer
        h = ng.tanh(h @ params["w"] + params["b"])
    y = ng.sum(h) * 2.0
    return a, y


def test_svg_of_a_30_node_arena_is_valid_svg() -> None:
    a, _ = _thirty_node_arena()
    assert len(a) == 30
    root = ET.fromstring(ng.display.arena_svg(a, fold=False))
    assert root.tag == f"{SVG_NS}svg"
    nodes = root.findall(f"{SVG_NS}g")
    assert len(nodes) == 30
    labels = [node.find(f"{SVG_NS}title").text for node in nodes]  # type: ignore[union-attr]
    assert labels[0] == "node 0: param dict"
    assert "node 28: sum scalar" in labels
    assert "node 29: multiply scalar (output)" in labels
    edges = root.findall(f"{SVG_NS}path")
    assert len(edges) == sum(len(n.parents) for n in a)
    # The dict parameter and the reads of its entries share one dashed cluster box.
    groups = root.findall(f"{SVG_NS}rect[@class='ng-cluster']")
    assert [g.get("data-nodes") for g in groups] == ["0 1 2"]
    assert a._repr_svg_() == a.to_svg()
    # Folded, the eight layers are one body of three nodes drawn once.
    (fold,) = ET.fromstring(a.to_svg()).findall(f"{SVG_NS}rect[@class='ng-fold']")
    assert (fold.get("data-nodes"), fold.get("data-period"), fold.get("data-count")) == ("4-27", "3", "8")


def test_svg_layers_run_top_to_bottom() -> None:
    a = ng.Arena()
    x = a.param(np.ones(2))
    y = ng.exp(ng.sin(x))
    boxes = _boxes(ET.fromstring(a.to_svg()))
    assert boxes[0][2] < boxes[1][2] < boxes[2][2]
    assert y.index == 2


Box = tuple[str, float, float, float, float]  # title, x0, y0, x1, y1


def _boxes(root: ET.Element) -> list[Box]:
    out = []
    for g in root.findall(f"{SVG_NS}g"):
        rect, title = g.find(f"{SVG_NS}rect"), g.find(f"{SVG_NS}title")
        assert rect is not None and title is not None and title.text is not None
        x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
        out.append((title.text, x, y, x + float(rect.get("width", 0)), y + float(rect.get("height", 0))))
    return out


def _clusters(root: ET.Element) -> list[tuple[set[int], Box]]:
    out = []
    for r in root.findall(f"{SVG_NS}rect[@class='ng-cluster']"):
        x, y = float(r.get("x", 0)), float(r.get("y", 0))
        members = {int(i) for i in r.get("data-nodes", "").split()}
        out.append((members, ("", x, y, x + float(r.get("width", 0)), y + float(r.get("height", 0)))))
    return out


def _inside(inner: Box, outer: Box) -> bool:
    return outer[1] <= inner[1] and outer[2] <= inner[2] and inner[3] <= outer[3] and inner[4] <= outer[4]


def _disjoint(a: Box, b: Box) -> bool:
    return a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]


def _layered_arena(layers: int) -> tuple[ng.Arena, Any]:
    """A network whose parameters are a nested dict: clusters inside clusters."""
    a = ng.Arena()
    params = a.param(
        {"w": np.full((3, 3), 0.1), "b": np.zeros(3), "inner": {"u": np.ones(3), "v": {"z": np.ones(3)}}},
        name="params",
    )
    h = a.param(np.ones((2, 3)), name="x")
    for _ in range(layers):
        h = ng.tanh(h @ params["w"] + params["b"]) * params["inner"]["u"] + params["inner"]["v"]["z"]
    y = ng.sum(ng.exp(ng.sin(ng.cos(h * 2.0))))
    return a, y


@pytest.mark.parametrize(("layers", "size"), [(4, 30), (58, 300), (598, 3000)])
def test_svg_reads_at_any_size(layers: int, size: int) -> None:
    a, _ = _layered_arena(layers)
    assert abs(len(a) - size) < 10
    root = ET.fromstring(a.to_svg())
    # Long runs of narrow layers are set in columns side by side, not in one tall column.
    assert float(root.get("width", 0)) <= 1200 and float(root.get("height", 0)) <= 2400
    boxes = _boxes(root)
    titles = [b[0] for b in boxes]
    # The output is drawn, bold; the layers are one loop body drawn once with its count,
    # so even 3,000 nodes need no elided middle.
    assert titles[-1] == f"node {len(a) - 1}: sum scalar (output)" or any(
        t.endswith("(output)") and f" to {len(a) - 1}:" in t for t in titles
    )
    assert not any("not drawn" in t for t in titles)
    (fold,) = root.findall(f"{SVG_NS}rect[@class='ng-fold']")
    assert fold.get("data-count") == str(layers) and fold.get("data-period") == "5"
    clusters = _clusters(root)
    assert clusters and {0, 1, 2, 3, 4, 5, 6} == clusters[0][0]
    for k, (members, box) in enumerate(clusters):
        for other_members, other in clusters[k + 1 :]:
            # Two clusters are apart, or one holds the other and all of its nodes.
            if other_members <= members:
                assert _inside(other, box)
            else:
                assert not other_members & members and _disjoint(box, other)
    for node in boxes:
        index = int(node[0].split()[1].rstrip(":,"))
        for members, box in clusters:
            assert _inside(node, box) if index in members else _disjoint(node, box), (node, members)
    # Boxes never overlap one another.
    for k, b in enumerate(boxes):
        assert all(_disjoint(b, c) for c in boxes[k + 1 :])


def test_an_empty_arena_is_an_empty_picture() -> None:
    root = ET.fromstring(ng.Arena().to_svg())
    assert float(root.get("width", -1)) >= 0 and float(root.get("height", -1)) >= 0
    assert root.findall(f"{SVG_NS}g") == []


def test_runs_of_elementwise_ops_are_one_box() -> None:
    a = ng.Arena()
    x = a.param(np.ones(2))
    for _ in range(50):
        x = ng.sin(x) * 1.0
    root = ET.fromstring(a.to_svg())
    (chain,) = [b[0] for b in _boxes(root) if b[0].startswith("nodes")]
    assert chain == "nodes 1 to 100: 100 elementwise ops (sin, multiply) 2 (output)"
    assert len(root.findall(f"{SVG_NS}path")) == 1


def test_arena_table_lists_nodes_and_gradients() -> None:
    a, y = _thirty_node_arena()
    a.backward(y, wrt=a._handle(0))
    table = a._repr_html_()
    assert table.count("<tr>") == 31  # a header and 30 nodes
    assert "map_lookup" in table and "params[&#x27;w&#x27;]" in table
    assert "Arena: 30 nodes" in table


def test_the_table_shows_gradients_per_key_path() -> None:
    a, y = _layered_arena(2)
    a.backward(y, wrt=a._handle(0))
    table = a._repr_html_()
    assert "Cotangent" not in table and "slots" not in table
    assert "gradients of nodes 0 from the last backward" in table
    rows = [_cells(row) for row in table.split("<tr>")[2:]]
    gradient = _HEADERS.index("gradient")
    assert rows[0][gradient].count('<div class="ng-line">') == 4  # four differentiable leaves
    assert "[&#x27;inner&#x27;][&#x27;v&#x27;][&#x27;z&#x27;]: (3,) norm " in rows[0][gradient]
    # A read of an entry shows that entry's part, with the key path below it.
    assert rows[5][gradient].startswith('<div class="ng-line">[&#x27;z&#x27;]: (3,) norm ')
    assert rows[1][gradient].startswith('<div class="ng-line">(3, 3) norm ')
    assert rows[7][gradient] == ""  # the input x was not requested


_HEADERS = ["index", "op", "parents", "shape, dtype", "gradient", "value", "key path"]


def _cells(row: str) -> list[str]:
    return [cell.split("</td>")[0] for cell in row.split("<td>")[1:]]


def test_long_arenas_are_elided_in_the_middle() -> None:
    a = ng.Arena()
    x = a.param(np.ones(2))
    for _ in range(100):
        x = x * 1.0
    table = a._repr_html_()
    assert "... 61 nodes ..." in table
    assert table.count("<tr>") == 1 + 40 + 1


def test_node_and_summary_render() -> None:
    a = ng.Arena()
    x = a.param(np.arange(3.0))
    node_table = a[x.index]._repr_html_()
    assert "param" in node_table and "(3,)" in node_table
    summary = ng.display.summary({"w": np.array([3.0, 4.0]), "tag": None})
    assert summary.rows() == [("['w']", "(2,)", "float64", "5"), ("['tag']", "", "", "None")]
    assert "<table" in summary._repr_html_()


def test_checking_arenas_show_source_lines() -> None:
    a = ng.Arena(check_finite=True)
    x = a.param(np.ones(2))
    ng.exp(x)
    assert "test_display.py:" in a._repr_html_()


def _without_tqdm(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_tqdm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)


def test_without_tqdm_progress_counts_in_text_and_says_how_to_get_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_tqdm(monkeypatch)
    monkeypatch.setattr(progress_module, "_hinted", [False])
    log = io.StringIO()  # not a terminal: a line every tenth of the way
    assert list(ng.display.progress(range(20), desc="train", file=log)) == list(range(20))
    lines = log.getvalue().splitlines()
    assert "pip install 'nodegrad[display]'" in lines[0]
    assert [line.split()[1] for line in lines[1:]] == [f"{k}/20" for k in range(2, 21, 2)]
    assert lines[-1].startswith("train: 20/20 100% ")
    again = io.StringIO()
    assert list(ng.display.progress(iter("ab"), file=again)) == ["a", "b"]
    assert "pip install" not in again.getvalue() and again.getvalue().startswith("2 ")  # no total: a count
    assert list(ng.display.progress(range(3), disable=True, file=again)) == [0, 1, 2]


def test_with_tqdm_progress_is_tqdm_auto() -> None:
    pytest.importorskip("tqdm")
    out = io.StringIO()
    bar = ng.display.progress(range(3), file=out, desc="train", mininterval=0)
    assert list(bar) == [0, 1, 2]
    assert "train: 100%" in out.getvalue() and "3/3" in out.getvalue()
    assert "pip install" not in out.getvalue()


class _Terminal(io.StringIO):
    """What a terminal shows of the text both standard streams write to it: a carriage
    return goes back to the start of the line, and what follows overwrites it."""

    def isatty(self) -> bool:
        return True

    def screen(self) -> list[str]:
        lines: list[list[str]] = [[]]
        column = 0
        for char in self.getvalue():
            if char == "\r":
                column = 0
            elif char == "\n":
                lines.append([])
                column = 0
            else:
                line = lines[-1]
                line.extend(" " * (column + 1 - len(line)))
                line[column] = char
                column += 1
        return ["".join(line).rstrip() for line in lines if "".join(line).strip()]


def _steps_beside_a_bar(monkeypatch: pytest.MonkeyPatch, **options: Any) -> list[str]:
    """The screen of a loop that prints a line each step through its bar."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = ng.display.progress(range(4), desc="train", **options)
    for k in bar:
        bar.write(f"step {k}")
    return terminal.screen()


def test_lines_written_through_the_text_count_do_not_share_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_tqdm(monkeypatch)
    monkeypatch.setattr(progress_module, "_hinted", [True])
    screen = _steps_beside_a_bar(monkeypatch)
    assert screen[:4] == ["step 0", "step 1", "step 2", "step 3"]
    assert len(screen) == 5 and screen[4].startswith("train: 4/4 100% ")


def test_lines_written_through_the_tqdm_bar_do_not_share_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tqdm")
    screen = _steps_beside_a_bar(monkeypatch, mininterval=0)
    assert screen[:4] == ["step 0", "step 1", "step 2", "step 3"]
    assert len(screen) == 5 and screen[4].startswith("train: 100%")


def test_a_node_shows_its_key_path_source_line_and_gradient() -> None:
    with ng.debug_nans():
        arena = ng.Arena()
        p = arena.param({"w": np.ones(2)}, name="p")
        y = ng.sum(p["w"] * 2.0)  # node-line
        arena.backward(y, wrt=p)
    read = arena[1]
    assert read.path == "p['w']" and read.source.endswith("test_display.py:" + str(_line_of("node-line") - 1))
    np.testing.assert_array_equal(read.gradient, [2.0, 2.0])
    assert arena[2].gradient is None and arena[2].source.endswith(f"test_display.py:{_line_of('node-line')}")
    page = read._repr_html_()
    assert "p[&#x27;w&#x27;]" in page and "gradient" in page and "[2, 2]" in page


def _line_of(marker: str) -> int:
    from pathlib import Path

    lines = Path(__file__).read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


# -- an arena of 300 nodes, as a notebook shows it ------------------------------------------


@attrs.define
class _Params:
    w: np.ndarray
    b: np.ndarray
    scale: dict[str, np.ndarray]


def _training_loop(steps: int = 30) -> tuple[ng.Arena, Any]:
    """A recurrent loop over a record of parameters: 7 nodes, then 10 a step (307 for 30)."""
    rng = np.random.default_rng(0)
    a = ng.Arena()
    p = a.param(_Params(rng.normal(size=(4, 4)), np.zeros(4), {"gain": np.ones(4), "bias": np.zeros(4)}), name="p")
    h = a.input(rng.normal(size=(2, 4)))
    loss: Any = 0.0
    for t in range(steps):
        h = ng.tanh(h @ p.w + p.b) * p.scale["gain"] + p.scale["bias"]  # loop-line
        loss = loss + 0.5 * ng.mean((h - t) ** 2)
    a.backward(loss, wrt=p)
    return a, loss


def _specificity(selector: str) -> tuple[int, int, int]:
    """(ids, classes, elements) of a CSS selector of the simple kinds compared here; a
    ``:not(x)`` counts as its argument, as CSS counts it."""
    selector = re.sub(r":not\(([^)]*)\)", r"\1", selector)
    classes = len(re.findall(r"[.\[]|:(?!:)", selector))
    elements = len(re.findall(r"(?:^|[\s>+~])[a-z][a-z0-9]*", selector))
    return selector.count("#"), classes, elements


def _rules(style: str) -> list[tuple[list[str], str]]:
    """The style's rules: their selectors and their declarations."""
    return [(sel.split(","), body) for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", style)]


def _declarations(table: str) -> dict[str, str]:
    """What the style of ``table`` declares for each selector, its rules' bodies joined."""
    out: dict[str, str] = {}
    for selectors, body in _rules(table.split("<style>")[1].split("</style>")[0]):
        for selector in selectors:
            out[selector] = out.get(selector, "") + body + ";"
    return out


# JupyterLab's rule for a cell of any HTML output (its rendermime CSS): right-aligned.
JUPYTERLAB_CELLS = ":not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td"


def test_the_arena_table_keeps_its_alignment_under_jupyterlabs_rules() -> None:
    a, _ = _training_loop()
    table = a._repr_html_()
    assert table.startswith('<div class="ng-view"><style>') and table.endswith("</table></div>")
    style = table[: table.index("</style>")]
    aligned = [sel for sels, body in _rules(style) if "text-align:left" in body for sel in sels if "td" in sel]
    assert aligned and all(_specificity(sel) > _specificity(JUPYTERLAB_CELLS) for sel in aligned)
    # Every rule is scoped to the view, so a notebook's other tables keep their own look.
    assert all(sel.startswith("div.ng-view") for sels, _ in _rules(style.split("<style>")[1]) for sel in sels)


def test_the_arena_table_breaks_no_word_and_scrolls_when_narrow() -> None:
    a, _ = _training_loop()
    table = a._repr_html_()
    rules = _declarations(table)
    assert "overflow-x:auto" in rules["div.ng-view"]
    assert "table-layout:auto" in rules["div.ng-view table.ng-table"]  # JupyterLab fixes the layout
    assert "white-space:nowrap" in rules["div.ng-view table.ng-table td"]  # headers, op names, shapes
    assert "<colgroup>" not in table  # no share of the width to squeeze a header into
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert headers == _HEADERS  # no source lines noted outside a notebook: no source column
    assert headers.index("gradient") < min(headers.index(h) for h in ("value", "key path"))
    rows = [_cells(row) for row in table.split("<tr>")[2:]]
    assert rows[5][1] == "map_lookup" and rows[5][3] == "(4,) float64"  # whole words: the cells do not wrap
    # Values and gradients wrap between their words, in columns of bounded width.
    assert rows[5][_HEADERS.index("value")].startswith('<div class="ng-text">[')
    wrapping = rules["div.ng-view .ng-text"]
    assert "white-space:normal" in wrapping and "max-width:30ch" in wrapping


def test_a_source_line_shows_whole_up_to_64_characters(tmp_path: Path) -> None:
    code = _declarations(ng.Arena()._repr_html_())["div.ng-view code.ng-code"]
    # At least 30 characters, whole up to 64, then an ellipsis after the last whole word.
    assert "min-width:30ch" in code and "max-width:64ch" in code and "-webkit-line-clamp:1" in code
    line = "loss = ng.mean(h * h) + 0.001 * ng.sum(p['w'] * p['w'])  # with a regulariser, a long line"
    (tmp_path / "train.py").write_text(line + "\n")
    shown = sources.source_html(f"{tmp_path / 'train.py'}:1")
    assert f'title="{html.escape(line)}">{html.escape(line)}</code>' in shown  # and whole in its tooltip


def test_a_record_parameter_row_shows_its_gradient_one_line_per_key_path() -> None:
    a, _ = _training_loop()
    rows = [_cells(row) for row in a._repr_html_().split("<tr>")[2:]]
    gradient = rows[0][_HEADERS.index("gradient")]
    lines = re.findall(r'<div class="ng-line">(.*?)</div>', gradient)
    keys = [".w", ".b", ".scale[&#x27;gain&#x27;]", ".scale[&#x27;bias&#x27;]"]
    assert [line.split(":")[0] for line in lines] == keys
    assert all(" norm " in line for line in lines)
    # The dict inside the record shows its two entries; the reads of leaves their own.
    assert len(re.findall("ng-line", rows[3][_HEADERS.index("gradient")])) == 2
    assert rows[1][_HEADERS.index("gradient")].startswith('<div class="ng-line">(4, 4) norm ')


def test_a_300_node_loop_is_drawn_once_with_its_count_in_under_two_screens() -> None:
    a, _ = _training_loop()
    assert len(a) == 307
    root = ET.fromstring(a.to_svg())
    assert float(root.get("width", 0)) <= 1280 and float(root.get("height", 0)) <= 2000
    (fold,) = root.findall(f"{SVG_NS}rect[@class='ng-fold']")
    # The first step adds to 0.0, a constant: the other 29 repeat one another.
    assert (fold.get("data-nodes"), fold.get("data-period"), fold.get("data-count")) == ("17-306", "10", "29")
    assert "\u00d729" in [t.text for t in root.iter(f"{SVG_NS}text")]
    titles = [b[0] for b in _boxes(root)]
    assert len(titles) < 40
    assert "node 17, repeated every 10 nodes to 297: matmul 2x4" in titles
    assert any(t.endswith("(output: node 306, in the last iteration)") for t in titles)
    # The running loss takes its own value from the previous iteration: a loop on its box.
    assert len(root.findall(f"{SVG_NS}path[@class='ng-carried']")) == 1


def test_edges_between_neighbouring_boxes_are_lines() -> None:
    a, _ = _training_loop()
    root = ET.fromstring(a.to_svg())
    drawn = {
        int(t.split()[1].rstrip(":,")): (x0, y0, x1, y1) for t, x0, y0, x1, y1 in _boxes(root) if t.startswith("node ")
    }
    edges = {p.get("data-edge") for p in root.findall(f"{SVG_NS}path[@class='ng-edge']")}
    neighbours = 0
    for i, (x0, y0, _, _) in drawn.items():
        for p in a[i].parents:
            if p in drawn and x0 == drawn[p][0] and 0 < y0 - drawn[p][3] <= 40:  # right below it
                neighbours += 1
                assert f"{p}>{i}" in edges, (p, i)
    assert neighbours >= 10
    # The long ones, from the parameters far above, are stubs labelled with their source.
    stubs = root.findall(f"{SVG_NS}path[@class='ng-stub']")
    assert stubs and all(s.find(f"{SVG_NS}title") is not None for s in stubs)


def test_a_fold_unfolds_in_the_notebook_view() -> None:
    a, _ = _training_loop()
    page = ng.display.graph(a)._repr_html_()
    folded, unfolded = page.split("<details", 1)
    assert 'class="ng-fold"' in folded and "<summary" in unfolded
    assert "29 \u00d7 10 nodes from node 17" in unfolded
    assert 'class="ng-fold"' not in unfolded and "node 297: matmul" in unfolded
    assert "<script" not in page


def test_an_arena_that_cannot_fold_still_elides_its_middle() -> None:
    a = ng.Arena()
    for k in range(1, 120):  # no two steps alike: every shape differs
        ng.exp(a.param(np.ones(k)))
    titles = [b[0] for b in _boxes(ET.fromstring(a.to_svg()))]
    assert any(t == "nodes 100 to 137: 38 nodes not drawn" for t in titles)


def _cell_name(path: str) -> tuple[str, str] | None:
    return ("Cell", "In[7]") if path.endswith("cell7.py") else None


# What the display asks of IPython's shell: the name of the cell a code file holds.
_FAKE_SHELL = types.SimpleNamespace(compile=types.SimpleNamespace(format_code_name=_cell_name))


def test_an_arena_made_in_a_notebook_shows_its_source_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    assert type(ng.Arena()._nodes) is list  # outside IPython: nothing noted, nothing paid
    monkeypatch.setattr(sources, "_shell", lambda: _FAKE_SHELL)
    a, _ = _training_loop(3)
    table = a._repr_html_()
    assert re.findall(r"<th>(.*?)</th>", table)[-1] == "source"
    line = _line_of("loop-line")
    assert f"test_display.py:{line}</span>" in table
    assert "h = ng.tanh(h @ p.w + p.b) * p.scale[&quot;gain&quot;]" in table
    assert a[20].source.endswith(f"test_display.py:{line}")
    # A notebook cell is named as IPython's tracebacks name it, and the temporary file the
    # kernel compiled it into is not shown, not even in a tooltip.
    cell = sources.source_html("/tmp/ipykernel_1/cell7.py:3")
    assert cell.startswith("<span>In[7] line 3</span>") and "ipykernel" not in cell
    # A transform's arena notes nothing, in a notebook too.
    seen = []
    ng.grad(lambda x: seen.append(type(current_arena()._nodes)) or ng.sum(x * x))(np.ones(2))
    assert seen == [list]


def test_a_location_in_a_notebook_cell_names_the_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    # Outside the kernel that ran it (a message read later), a kernel's cell is still a cell.
    assert errors.shown_location("/tmp/ipykernel_12345/123456.py", 9) == "cell line 9"
    assert errors.shown_location("C:\\Temp\\ipykernel_8\\42.py", 9) == "cell line 9"
    assert errors.shown_location("/home/me/train.py", 12) == "/home/me/train.py:12"  # a script's, as it was
    monkeypatch.setattr(errors, "ipython_shell", lambda: _FAKE_SHELL)
    assert errors.shown_location("/tmp/ipykernel_1/cell7.py", 3) == "In[7] line 3"
    # An error raised by code run in a cell names the cell's line.
    code = compile("ng.exp(ng.Arena().param(np.ones(2))) @ np.ones(3)", "/tmp/ipykernel_1/cell7.py", "exec")
    with pytest.raises(ValueError, match=r"\[recorded at In\[7\] line 1\]"):
        exec(code, {"ng": ng, "np": np})


def test_the_arena_tour_shows_the_users_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sources, "_shell", lambda: _FAKE_SHELL)
    monkeypatch.chdir(tmp_path)
    tour = Path(__file__).parent.parent / "notebooks" / "arena_tour.py"
    arena = runpy.run_path(str(tour), run_name="__main__")["arena"]
    line = next(n for n, text in enumerate(tour.read_text().splitlines(), 1) if text.startswith("hidden = "))
    assert f"arena_tour.py:{line}</span>" in arena._repr_html_()
