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

A GradOp is a named tuple: read by name where it is read once, unpacked where a loop
reads all five, and appended as cheaply as a plain tuple (per-node cost is a product
feature). :class:`Node` is the read-only view of one node that ``arena[i]`` gives.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import numpy as np

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.registry import Op

__all__ = ["GradOp", "Node"]


class GradOp(NamedTuple):
    """One node of an arena (see the module's documentation for the fields)."""

    op: Op
    parents: tuple[int, ...]
    argnums: tuple[int, ...]
    args: tuple[Any, ...]
    value: Any


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
