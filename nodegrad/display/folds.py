"""Repeated structure in an arena: the iterations of a loop, found so a picture can draw
the loop's body once with its count.

Node ``j`` repeats node ``i`` one period ``p`` later when both have the same op, value
shape and number of parents, and each parent of ``j`` is either the same node as ``i``'s
(a parameter every iteration reads) or ``i``'s parent one period later (a value of the
same iteration, or one carried over from the previous one). A *fold* is a run of at
least three whole periods in which every node repeats the one a period before it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.structure import is_container

__all__ = ["Fold", "find_folds"]

_MIN_REPEATS = 3  # fewer iterations are drawn as they are
_MIN_NODES = 12  # nor is a fold of fewer nodes in all worth one
_MAX_PERIOD = 400  # a loop body longer than this is not looked for
_CANDIDATES = 4  # periods whose nodes repeat most often, checked in full


class Fold:
    """The nodes ``start`` to ``stop - 1``: ``count`` iterations of a body of ``period`` nodes."""

    __slots__ = ("count", "period", "start")

    def __init__(self, start: int, period: int, count: int) -> None:
        self.start, self.period, self.count = start, period, count

    @property
    def stop(self) -> int:
        return self.start + self.period * self.count

    def body(self) -> range:
        """The nodes of the first iteration, which stand for all the others."""
        return range(self.start, self.start + self.period)

    def first(self, i: int) -> int:
        """The node of the first iteration that node ``i`` of the fold repeats."""
        return self.start + (i - self.start) % self.period

    def __repr__(self) -> str:
        return f"Fold(start={self.start}, period={self.period}, count={self.count})"


def _codes(nodes: Any) -> np.ndarray:
    """One integer per node for its op, number of parents and value's shape."""
    seen: dict[tuple[Any, ...], int] = {}
    out = np.empty(len(nodes), dtype=np.int64)
    for i, (op, parents, _, _, value) in enumerate(nodes):
        shape = type(value).__name__ if is_container(value) else np.shape(value)
        out[i] = seen.setdefault((op.name, len(parents), shape), len(seen))
    return out


def find_folds(nodes: Any) -> list[Fold]:
    """The folds of ``nodes``, in index order and apart from one another.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.display.folds import find_folds
    >>> a = ng.Arena()
    >>> w, h = a.param(np.eye(2)), a.param(np.ones(2))
    >>> for _ in range(5):
    ...     h = ng.tanh(w @ h) + h
    >>> find_folds(a.nodes)
    [Fold(start=2, period=3, count=5)]
    """
    codes = _codes(nodes)
    found: list[Fold] = []
    spans = [(0, len(nodes))]
    while spans:
        lo, hi = spans.pop()
        fold = _best_fold(nodes, codes, lo, hi)
        if fold is not None:
            found.append(fold)
            spans += [(lo, fold.start), (fold.stop, hi)]
    return sorted(found, key=lambda f: f.start)


def _best_fold(nodes: Any, codes: np.ndarray, lo: int, hi: int) -> Fold | None:
    """The fold covering the most nodes of ``lo`` to ``hi - 1``, if there is one."""
    if hi - lo < _MIN_NODES:
        return None
    periods = range(1, min(_MAX_PERIOD, (hi - lo) // _MIN_REPEATS) + 1)
    agree = [int(np.count_nonzero(codes[lo : hi - p] == codes[lo + p : hi])) for p in periods]
    # The periods whose nodes agree most often with the node a period later; the shortest first among equals.
    ranked = sorted(periods, key=lambda p: (-agree[p - 1], p))[:_CANDIDATES]
    best = None
    for p in ranked:
        for fold in _runs(nodes, codes, lo, hi, p):
            if best is None or fold.period * fold.count > best.period * best.count:
                best = fold
    return best


def _runs(nodes: Any, codes: np.ndarray, lo: int, hi: int, p: int) -> list[Fold]:
    """The folds of period ``p`` within ``lo`` to ``hi - 1``."""
    out = []
    start = None
    for i in range(lo, hi - p + 1):
        if i < hi - p and _repeats(nodes, codes, i, p):
            if start is None:
                start = i
            continue
        if start is not None:
            count = (i - start + p) // p
            fold = Fold(start, p, count)
            if count >= _MIN_REPEATS and p * count >= _MIN_NODES and not _is_chain(nodes, fold):
                out.append(fold)
            start = None
    return out


def _repeats(nodes: Any, codes: np.ndarray, i: int, p: int) -> bool:
    """Whether node ``i + p`` repeats node ``i``."""
    j = i + p
    if codes[i] != codes[j] or nodes[i].op is not nodes[j].op:
        return False
    return all(b == a or b - a == p for a, b in zip(nodes[i].parents, nodes[j].parents, strict=True))


def _is_chain(nodes: Any, fold: Fold) -> bool:
    """Whether every node of the fold is an elementwise op of the one before it alone: a
    chain, which the picture draws as one box anyway."""
    return all(
        nodes[i].op.family == "elementwise" and set(nodes[i].parents) == {i - 1} for i in range(fold.start, fold.stop)
    )
