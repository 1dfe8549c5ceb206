"""What an arena holds: :class:`GradOp` nodes, and the :class:`Node` view users see.

A node is a :class:`GradOp`, ``(op, parents, argnums, args, value)``:

- ``op`` -- the :class:`~nodegrad.engine.registry.Op` that produced it (leaves have the
  ``param`` / ``input`` pseudo-ops);
- ``parents`` -- integer indices of the nodes it read, always lower than its own index,
  so index order *is* a topological order;
- ``argnums`` -- for each parent, the argument position it was passed at;
- ``args`` -- the forward arguments with traced values replaced by their values (this is
  all a VJP rule needs, so no separate residuals are stored);
- ``value`` -- the forward output.

The arena stores each node as a plain tuple of those five, the cheapest record there is
(making a named tuple instead costs W1 a tenth of its time per op: per-node cost is a
product feature), and the engine unpacks it where a loop reads all five. Every other
reader gets named fields: :class:`GradOps`, the arena's ``nodes``, hands out each node as
a :class:`GradOp` (the same tuple, seen through its names). :class:`Node` is the
read-only view of one node that ``arena[i]`` gives, for users.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

import attrs
import numpy as np

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.registry import Op

__all__ = ["GradOp", "GradOps", "Node"]


class GradOp(NamedTuple):
    """One node of an arena (see the module's documentation for the fields)."""

    op: Op
    parents: tuple[int, ...]
    argnums: tuple[int, ...]
    args: tuple[Any, ...]
    value: Any


class GradOps(Sequence[GradOp]):
    """An arena's node list seen with named fields: ``nodes[i].value``, ``nodes[i].parents``.
    Read-only; it follows the arena as nodes are appended."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: Sequence[tuple[Any, ...]]) -> None:
        self._nodes = nodes

    @overload
    def __getitem__(self, index: int) -> GradOp: ...
    @overload
    def __getitem__(self, index: slice) -> list[GradOp]: ...
    def __getitem__(self, index: int | slice) -> GradOp | list[GradOp]:
        if isinstance(index, slice):
            return [_named(GradOp, node) for node in self._nodes[index]]
        return _named(GradOp, self._nodes[index])

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[GradOp]:
        return (_named(GradOp, node) for node in self._nodes)


_named = tuple.__new__  # the stored tuple's entries, as a GradOp


@attrs.frozen
class Node:
    """A read-only view of one arena node.

    Attributes
    ----------
    index : int
        Position in the arena.
    op : str
        Name of the op that produced it (``"param"`` or ``"input"`` for leaves).
    parents : tuple of int
        Indices of the nodes it read.
    value : Any
        Its forward value.
    path : str
        The key path of the structured input it reads or holds (``args[0]['w']``), or ``""``.
    source : str
        ``file:line`` of the user code that recorded it; noted while the arena checks for NaNs
        (:func:`nodegrad.debug_nans`, ``check_finite=True``) and for an arena made in IPython or
        Jupyter (for its table), ``""`` otherwise.
    gradient : Any
        Its gradient from the last ``backward`` if it was one of the requested inputs, else
        ``None``.
    """

    index: int
    op: str
    parents: tuple[int, ...]
    value: Any = attrs.field(repr=False)
    path: str = attrs.field(default="", repr=False)
    source: str = attrs.field(default="", repr=False)
    gradient: Any = attrs.field(default=None, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the forward value."""
        return tuple(np.shape(self.value))

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the forward value."""
        return np.asarray(self.value).dtype

    def _repr_html_(self) -> str:
        return PLUGINS.node_html(self)
