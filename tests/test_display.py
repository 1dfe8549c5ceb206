"""Jupyter display: HTML tables and the SVG graph."""

from __future__ import annotations

import builtins
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

import nodegrad as ng

SVG_NS = "{http://www.w3.org/2000/svg}"


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
    root = ET.fromstring(a.to_svg())
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
    # The output is drawn; a long arena's middle is one elided box between the drawn ends.
    assert titles[-1] == f"node {len(a) - 1}: sum scalar (output)" or any(
        t.endswith("(output)") and f" to {len(a) - 1}:" in t for t in titles
    )
    assert any("not drawn" in t for t in titles) == (len(a) > 200)
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
        index = int(node[0].split()[1].rstrip(":"))
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
    rows = table.split("<tr>")[2:]
    assert rows[0].count("<br>") == 3  # four differentiable leaves in the parameter's row
    assert "[&#x27;inner&#x27;][&#x27;v&#x27;][&#x27;z&#x27;]: (3,) norm " in rows[0]
    # A read of an entry shows that entry's part, with the key path below it.
    assert "<td>[&#x27;z&#x27;]: (3,) norm " in rows[5]
    assert "<td>(3, 3) norm " in rows[1]
    assert rows[7].endswith("<td></td></tr>")  # the input x was not requested


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


def test_progress_falls_back_to_plain_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_tqdm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    assert list(ng.display.progress(range(3))) == [0, 1, 2]


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
