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
    assert "node 29: multiply scalar" in labels
    edges = root.findall(f"{SVG_NS}path")
    assert len(edges) == sum(len(n.parents) for n in a)
    # The dict parameter and the reads of its entries share one dashed group box.
    groups = [r for r in root.findall(f"{SVG_NS}rect") if r.get("stroke-dasharray")]
    assert len(groups) == 1
    assert a._repr_svg_() == a.to_svg()


def test_svg_positions_follow_depth() -> None:
    a = ng.Arena()
    x = a.param(np.ones(2))
    y = ng.exp(ng.sin(x))
    root = ET.fromstring(a.to_svg())
    xs = [float(g.find(f"{SVG_NS}rect").get("x")) for g in root.findall(f"{SVG_NS}g")]  # type: ignore[union-attr, arg-type]
    assert xs[0] < xs[1] < xs[2]
    assert y.index == 2


def test_arena_table_lists_nodes_and_gradients() -> None:
    a, y = _thirty_node_arena()
    a.backward(y, wrt=a._handle(0))
    table = a._repr_html_()
    assert table.count("<tr>") == 31  # a header and 30 nodes
    assert "map_lookup" in table and "params[&#x27;w&#x27;]" in table
    assert "Arena: 30 nodes" in table


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
