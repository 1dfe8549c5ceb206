"""Source lines of an arena's nodes: noted where they are shown, and set out for a table.

An arena the user makes in IPython or Jupyter notes, for each node, the line of user code
that recorded it, so its table can show that line. Noting walks a few frames per node
(about 1 us, close to what recording a small op costs), so only there: an arena made in
a script or a test, and every arena a transform makes, keep the plain list and its cost.
"""

from __future__ import annotations

import html
import linecache
import os
import site
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from typing import Any

from nodegrad.errors import cell_name, ipython_shell

__all__ = ["SourcedNodes", "notebook_nodes", "source_html"]

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
_OURS, _LIBRARY, _USER = 0, 1, 2
_kinds: dict[str, int] = {}  # a code file's kind, decided once per file


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update(getattr(site, "getsitepackages", list)())
    return tuple(os.path.join(os.path.abspath(root), "") for root in roots)


_LIBRARIES = _library_roots()


def _kind(filename: str) -> int:
    path = os.path.abspath(filename)
    kind = _OURS if path.startswith(_PACKAGE) else _LIBRARY if path.startswith(_LIBRARIES) else _USER
    _kinds[filename] = kind
    return kind


def _user_line(frame: Any) -> tuple[str, int] | None:
    """``(file, line)`` of the innermost frame of user code from ``frame`` out: past
    nodegrad's frames and those of libraries (numpy, scipy) between it and the user's; the
    innermost frame outside nodegrad when no user code is found."""
    kinds = _kinds
    first = None
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = kinds.get(filename)
        if kind is None:
            kind = _kind(filename)
        if kind == _USER:
            return filename, frame.f_lineno
        if kind == _LIBRARY and first is None:
            first = (filename, frame.f_lineno)
        frame = frame.f_back
    return first


class _Locations(Sequence[str]):
    """The ``file:line`` strings of noted lines, made when read."""

    def __init__(self, lines: list[tuple[str, int] | None]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        line = self._lines[i]
        return "" if line is None else f"{line[0]}:{line[1]}"

    def __iter__(self) -> Iterator[str]:
        return (self[k] for k in range(len(self)))


class SourcedNodes(list[Any]):
    """An arena's node list that notes, for each node appended, the line of user code that
    recorded it (read back through ``locations``, as a checking list's)."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[tuple[str, int] | None] = []
        self.locations = _Locations(self._lines)

    def append(self, node: Any) -> None:
        self._lines.append(_user_line(sys._getframe(1)))
        super().append(node)

    def adopt(self, node: Any, location: str) -> None:
        """Append a node recorded elsewhere (``Arena.merge``), with its own source line."""
        path, _, line = location.rpartition(":")
        self._lines.append((path, int(line)) if line.isdigit() else None)
        super().append(node)

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        del self._lines[len(self) :]


_shell = ipython_shell  # looked up when called, so a test can stand a shell in for it


def notebook_nodes() -> list[Any]:
    """The node list of an arena the user makes: one that notes source lines in IPython or
    Jupyter, where its table is looked at; a plain list elsewhere."""
    return SourcedNodes() if _shell() is not None else []


def source_html(location: str, previous: str = "") -> str:
    """A table cell's text for a ``file:line`` location: the file's short name and line
    (its whole path in a tooltip), or a notebook cell's name and line, and the code on that
    line unless the row above showed the same one."""
    path, _, line = location.rpartition(":")
    if not line.isdigit():
        return html.escape(location)
    cell = cell_name(path, _shell())
    if cell:  # the temporary file the kernel compiled the cell into would tell the reader nothing
        where = f"<span>{html.escape(cell)} line {line}</span>"
    else:
        where = f'<span title="{html.escape(location)}">{html.escape(os.path.basename(path))}:{line}</span>'
    code = linecache.getline(path, int(line)).strip()
    if not code or location == previous:
        return where
    return f'{where}<br><code class="ng-code" title="{html.escape(code)}">{html.escape(code)}</code>'
