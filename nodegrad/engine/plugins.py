"""The engine's sockets: what the layers above plug in, so the engine can call them
without importing them.

The engine sits at the bottom of the package and imports nothing above it. Four things
it offers are implemented higher up, and each registers itself here when imported
(``import nodegrad`` imports them all, :mod:`nodegrad.scipy` aside):

- the structured view of a parameter (:mod:`nodegrad.ops.structured`): ``Arena.param``
  of a record or dict returns an instance of that type whose leaves are traced reads;
- NaN/Inf checking (:mod:`nodegrad.debug`): a node list that checks values as they are
  appended, and whether :func:`nodegrad.debug_nans` is active in this thread;
- display (:mod:`nodegrad.display`): the HTML tables and SVG graph Jupyter shows, and the
  node list that notes source lines for an arena made in a notebook;
- the way out an error names when a traced value is turned into a plain array, by the
  layer that knows the library doing it: numpy's (:mod:`nodegrad.numpy_api.conversions`),
  scipy's (:mod:`nodegrad.scipy`, once imported), pandas'
  (:mod:`nodegrad.ops.pandas_values`). The engine itself names no library.

A socket left empty says which module fills it, rather than failing obscurely.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import Any

from nodegrad.errors import ArenaError

__all__ = ["PLUGINS", "Plugins"]


def _missing(module: str) -> Callable[..., Any]:
    def unplugged(*args: Any, **kwargs: Any) -> Any:
        msg = f"this needs {module}, which registers itself when imported: import nodegrad"
        raise ArenaError(msg)

    return unplugged


class Plugins:
    """The functions the engine calls; each attribute is replaced by the module that owns it."""

    def __init__(self) -> None:
        #: ``view(handle)``: the structured view of a param node holding a record, map or sequence.
        self.view: Callable[[Any], Any] = _missing("nodegrad.ops.structured")
        #: ``checking()``: whether new arenas check values for NaN and Inf (debug_nans is on).
        self.checking: Callable[[], bool] = lambda: False
        #: ``checked_nodes(arena)``: an empty node list that checks each node it is given.
        self.checked_nodes: Callable[[Any], Any] = _missing("nodegrad.debug")
        #: ``user_nodes()``: the empty node list of an arena the user makes (a transform's is a
        #: plain list): plain, or one that notes source lines where they are shown (display).
        self.user_nodes: Callable[[], Any] = list
        #: ``arena_html(arena)``, ``node_html(node)``, ``arena_svg(arena, limit)``: Jupyter's views.
        self.arena_html: Callable[[Any], str] = _missing("nodegrad.display")
        self.node_html: Callable[[Any], str] = _missing("nodegrad.display")
        self.arena_svg: Callable[[Any, int], str] = _missing("nodegrad.display")
        #: ``trace_html(trace)``: Jupyter's view of a program recorded by ``replay``.
        self.trace_html: Callable[[Any], str] = _missing("nodegrad.display")
        #: ``library_advice[library](frame, function, what)``: the error when a function of
        #: ``library`` (a top-level package name: ``"numpy"``, ``"scipy"``) turns a traced
        #: value into a plain array; ``frame`` is that function's, ``function`` its full name,
        #: ``what`` says what was refused. A library left out gets a generic error.
        self.library_advice: dict[str, Callable[[FrameType, str, str], str]] = {}
        #: ``library_containers[library](cls)``: the container handler
        #: (:class:`nodegrad.engine.containers.Handler`) of a class of ``library`` (``"pandas"``:
        #: DataFrame and Series, by :mod:`nodegrad.ops.tables`), or ``None`` for a leaf; asked
        #: once per class, so the library is never imported by nodegrad itself.
        self.library_containers: dict[str, Callable[[type], Any]] = {}
        #: ``conversion_advice``: the way out the error names when the user's own code turns a
        #: traced value into a plain array (``np.asarray(x)``), besides nodegrad's ops.
        self.conversion_advice: str = ""
        #: ``gives_way(frame)``: whether the library function of ``frame``, turning a handle into
        #: a plain array, is an operator that gives way to the other operand's reflected one
        #: when it cannot read it (scipy.sparse's ``X @ w``): the handle then reads as a 0-d
        #: object array, so that the library answers ``NotImplemented`` and the handle's own
        #: operator runs. ``None``: no library's does.
        self.gives_way: Callable[[FrameType], bool] | None = None


PLUGINS = Plugins()
