"""A function's computation recorded once into an arena of its own, with the line of user
code that recorded each op: what the search for the op to blame walks."""

from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Callable, Sequence
from typing import Any

from nodegrad.display.sources import SourcedNodes
from nodegrad.engine.arena import Arena, arena_with_nodes
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.nodes import GradOp
from nodegrad.engine.structure import leaves
from nodegrad.errors import shown_location

__all__ = ["Recording", "record_call"]


class Recording:
    """``f`` recorded at one point: its arena and its output (holding the arena's handles)."""

    def __init__(self, arena: Arena, output: Any) -> None:
        self.arena, self.output = arena, output
        nodes = arena.nodes
        #: For each node, whether it depends on a differentiated argument.
        self.dependent = [False] * len(nodes)
        for i, node in enumerate(nodes):
            self.dependent[i] = node.op.name == "param" or any(self.dependent[p] for p in node.parents)

    @property
    def nodes(self) -> Sequence[GradOp]:
        return self.arena.nodes

    def location(self, i: int) -> str | None:
        """``file:line`` of the user code that recorded node ``i``, where it was noted."""
        locations = self.arena.source_locations
        found = locations[i] if locations is not None else ""
        return found if found.rpartition(":")[2].isdigit() else None

    def where(self, i: int) -> str:
        """Where node ``i`` was recorded, for a message: ``recorded at file:line in function``."""
        location = self.location(i)
        if location is None:
            return "recorded at an unknown line"
        path, _, line = location.rpartition(":")
        function = _function_at(path, int(line))
        return f"recorded at {shown_location(path, int(line))}" + (f" in {function}" if function else "")

    def on_path(self) -> list[int]:
        """The op nodes between the differentiated arguments and the output, in order:
        the ones whose rules the gradient of the output goes through."""
        nodes = self.nodes
        reaches = [False] * len(nodes)
        for handle in leaves(self.output):
            if type(handle) in DIFFERENTIATING and handle.arena is self.arena:
                reaches[handle.index] = True
        for i in reversed(range(len(nodes))):
            if reaches[i]:
                for p in nodes[i].parents:
                    reaches[p] = True
        return [i for i, node in enumerate(nodes) if node.parents and self.dependent[i] and reaches[i]]

    def reads(self, i: int) -> str:
        """The key paths of the arguments node ``i`` is computed from (its nearest named
        ancestors, ``args[0]['w']``), or ``""``."""
        paths = self.arena.key_paths
        found: list[str] = []
        frontier, seen = list(self.nodes[i].parents), set[int]()
        for j in frontier:  # breadth first: nearer ancestors first
            if j in seen or len(seen) > 10_000:
                continue
            seen.add(j)
            if j in paths:
                found.append(paths[j])
            else:
                frontier.extend(self.nodes[j].parents)
        return ", ".join(dict.fromkeys(found))


def record_call(f: Callable[..., Any], args: dict[int, Any], positions: Sequence[int]) -> Recording:
    """Call ``f(*args.values())`` with the arguments at ``positions`` made the leaves of a
    fresh arena (named ``args[k]``), which notes the user's source line of every op (and,
    unlike a checking arena, records values that are NaN or Inf as they are)."""
    with arena_with_nodes(SourcedNodes) as arena:
        call = dict(args)
        for k in positions:
            call[k] = arena.param(args[k], name=f"args[{k}]")
        output = f(*call.values())
    return Recording(arena, output)


@functools.lru_cache(maxsize=64)
def _functions_in(path: str) -> tuple[tuple[int, int, str], ...]:
    """``(first line, last line, name)`` of every function and lambda in a source file."""
    try:
        tree = ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            name = "<lambda>" if isinstance(node, ast.Lambda) else node.name
            found.append((node.lineno, node.end_lineno or node.lineno, name))
    return tuple(found)


def _function_at(path: str, line: int) -> str:
    """The name of the innermost function of ``path`` whose body holds ``line``, or ``""``."""
    holding = [(last - first, name) for first, last, name in _functions_in(path) if first <= line <= last]
    return min(holding)[1] if holding else ""
