"""The graph of an arena for a notebook: the folded picture, with every iteration of its
loops one click away (an HTML ``<details>``: no JavaScript)."""

from __future__ import annotations

from typing import Any

from nodegrad.display.folds import find_folds
from nodegrad.display.svg import arena_svg

__all__ = ["Graph", "graph"]


class Graph:
    """An arena's graph as Jupyter shows it: its SVG picture, loops folded, and below it a
    disclosure that draws every iteration."""

    def __init__(self, arena: Any, limit: int = 200) -> None:
        self.arena, self.limit = arena, limit

    def _repr_svg_(self) -> str:
        return arena_svg(self.arena, self.limit)

    def _repr_html_(self) -> str:
        folded = arena_svg(self.arena, self.limit)
        folds = find_folds(self.arena.nodes)
        if not folds:
            return f'<div class="ng-graph">{folded}</div>'
        loops = ", ".join(f"{f.count} \u00d7 {f.period} nodes from node {f.start}" for f in folds)
        summary = f"Draw every iteration ({loops})"
        unfolded = arena_svg(self.arena, self.limit, fold=False)
        return (
            f'<div class="ng-graph">{folded}<details class="ng-unfold">'
            f'<summary style="cursor:pointer;font-family:monospace;font-size:12px">{summary}</summary>'
            f"{unfolded}</details></div>"
        )


def graph(arena: Any, limit: int = 200) -> Graph:
    """The arena's graph for a notebook cell: loops drawn once with their count, and a
    disclosure below that draws every iteration.

    Parameters
    ----------
    arena : Arena
        The arena to draw.
    limit : int, default 200
        About how many boxes each picture draws; the middle of a longer one is elided.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = ng.Arena()
    >>> w, h = a.param(np.eye(2)), a.param(np.ones(2))
    >>> for _ in range(5):
    ...     h = ng.tanh(w @ h) + h
    >>> page = ng.display.graph(a)._repr_html_()
    >>> "\u00d75" in page and "<details" in page
    True
    """
    return Graph(arena, limit)
