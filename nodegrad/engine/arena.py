"""The arena: a flat, append-only store of op nodes (:class:`~nodegrad.engine.nodes.GradOp`).

Index order is a topological order, as a node's parents come before it. Ops append nodes
through :mod:`nodegrad.engine.record`, the one recording path; :meth:`Arena.backward` runs
the sweep of :mod:`nodegrad.engine.sweep`. Arenas nest by levels: a transform's arena is
one level inside every arena entered when it was made (:func:`nested_arena`). The layers
above read an arena through its public interface (``nodes``, ``path_of``, ``key_paths``,
``last_gradients``, ``enclosing``, ``seal``, ``truncate``), never its attributes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from nodegrad.engine.backward import gradients
from nodegrad.engine.cycles import unwalkable
from nodegrad.engine.levels import Level, check_alive, next_stamp
from nodegrad.engine.nodes import GradOp, GradOps, Node
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.record import (
    INTERPRETERS,
    SealedNodes,
    append_leaves,
    append_node,
    as_float_leaf,
    is_array_subclass,
    refuse_array_subclass,
)
from nodegrad.engine.registry import INPUT, PARAM
from nodegrad.engine.structure import UnwalkableError, flatten_with_paths, is_container, leaves, map_with_paths
from nodegrad.engine.traced import Traced, describe, meet_libraries
from nodegrad.errors import ArenaError, DtypeError, NodegradError

__all__ = ["Arena", "Node", "current_arena", "entered_arenas", "nested_arena", "quiet_while_checking"]


_RELEASED = None  # what a released node holds instead of its value


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: list[Arena] = []


_state = _State()


def current_arena() -> Arena | None:
    """The innermost arena entered with ``with`` in this thread, or ``None``."""
    stack = _state.stack
    return stack[-1] if stack else None


def entered_arenas() -> tuple[Arena, ...]:
    """Every arena entered in this thread, outermost first: those a function's closure can
    hold handles of."""
    return tuple(_state.stack)


class Arena(Level):
    """A flat, append-only store of op nodes: the graph of one computation.

    Use it directly to explore, or let :func:`nodegrad.grad` create one per call.
    Arenas are independent objects; each thread keeps its own stack of entered arenas.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> with ng.Arena() as a:
    ...     x = a.param(np.array([1.0, 2.0, 3.0]))
    ...     y = (x * x).sum()
    ...     g = a.backward(y, wrt=x)
    >>> g
    array([2., 4., 6.])
    >>> len(a), a[2].op
    (3, 'sum')
    """

    def __init__(self, *, check_finite: bool | None = None) -> None:
        self._setup(check_finite, PLUGINS.user_nodes)

    def _setup(self, check_finite: bool | None, new_nodes: Callable[[], Any]) -> None:
        meet_libraries()
        checking = PLUGINS.checking() if check_finite is None else check_finite
        # A checking arena's node list notes source lines and checks values as they come; an
        # arena the user makes in a notebook notes source lines for its table. A transform's
        # arena that does not check pays for neither.
        self._nodes: list[tuple[Any, ...]] = PLUGINS.checked_nodes(self) if checking else new_nodes()
        #: How many nodes the most recent backward sweep visited (pruned nodes excluded).
        self.last_visited = 0
        # Key paths of nodes that hold a part of a structured value, for messages.
        self._paths: dict[int, str] = {}
        self._released = False
        # The cotangents of the last backward's requested nodes, for display.
        self._last_gradients: dict[int, Any] = {}
        # For an arena a transform made (nested_arena): the arenas entered in this thread at
        # the time. Their handles may meet this arena's in an op (an inner transform's
        # function closing over an outer one's values), where they are constants.
        self._enclosing: tuple[Arena, ...] = ()
        #: When it was made, among arenas and batch levels: of two that meet in one op, the
        #: later one is nested inside the other (see nodegrad.engine.record.record).
        self.stamp = next_stamp()
        # Set by the transform that made this arena once it has returned: its handles are
        # leaked tracers from then on.
        self._finished_by = ""
        # Set by a transform that sweeps this arena once, without recording the sweep: its
        # nodes keep only the values a rule reads (see nodegrad.engine.record.lean_node).
        self._lean = False
        #: Set by forward mode on the arena whose one leaf is its stand-in cotangent, drawn at
        #: random (see nodegrad.transforms.forward): a rule reading a cotangent traced only
        #: there reads a random point of a linear map, which shows what the map does.
        self.cotangent_probe = False

    # -- recording ---------------------------------------------------------------------
    def param(self, value: Any, *, name: str = "") -> Any:
        """Add a differentiable leaf holding ``value``.

        Parameters
        ----------
        value : array_like or structure
            A float or complex array or Python number; or a record (attrs class, dataclass, named
            tuple), dict, list or tuple of them, nested to any depth. Static leaves
            (ints, strings, integer arrays, fields marked static, ...) pass through.
        name : str, optional
            Root of the key paths that errors and inspection use for this value.

        Returns
        -------
        Traced or structure
            For an array, the handle of the new leaf. For a structure, one node holds the
            whole value and the result is its *view*: an instance of the same type whose
            differentiable leaves are traced reads of that node.

        Raises
        ------
        DtypeError
            If an array ``value`` is neither floating point nor complex.

        Examples
        --------
        >>> import numpy as np
        >>> import nodegrad as ng
        >>> a = ng.Arena()
        >>> p = a.param({"w": np.ones(2), "tag": "layer"})
        >>> type(p["w"]).__name__, p["tag"], [n.op for n in a]
        ('Traced', 'layer', ['param', 'map_lookup'])
        """
        if type(value) is np.ndarray and value.dtype.kind in "fc":
            return self._array_param(value, name)  # the common case: no structure, nothing to convert
        if type(value) is Traced:
            self._check_enclosing(value, name)
            if value.dtype.kind not in "fc":
                msg = (
                    f"{name or 'Arena.param'}: only floating-point and complex values are differentiable, got dtype "
                    f"{value.dtype}"
                )
                raise DtypeError(msg)
        elif type(value) in INTERPRETERS:  # a value another interpreter holds (batched, say)
            if value.dtype.kind not in "fc":
                msg = (
                    f"{name or 'Arena.param'}: only floating-point and complex values are differentiable, got dtype "
                    f"{value.dtype}"
                )
                raise DtypeError(msg)
            return self._array_param(value, name)
        elif not is_container(value):
            value = as_float_leaf(value, name or "Arena.param")
        else:
            try:
                if any(type(leaf) is Traced or is_array_subclass(leaf) for leaf in leaves(value)):
                    for path, leaf in flatten_with_paths(value, name):
                        if type(leaf) is Traced:
                            self._check_enclosing(leaf, path)
                        elif is_array_subclass(leaf):
                            refuse_array_subclass(leaf, path or "Arena.param")
            except UnwalkableError:
                raise unwalkable("Arena.param", name, value) from None
        index = len(self._nodes)
        if name:
            self._paths[index] = name  # before the push: a checking arena names the leaf
        try:
            handle = append_node(self, PARAM, (), (), (), value)
        except NodegradError:
            self._paths.pop(index, None)
            raise
        try:
            return PLUGINS.view(handle)
        except UnwalkableError:
            self.truncate(index)
            raise unwalkable("Arena.param", name, value) from None
        except NodegradError:
            self.truncate(index)  # the arena stays as it was
            raise

    def array_params(self, values: list[np.ndarray], names: list[str]) -> list[Traced]:
        """:meth:`param` of each float or complex array in ``values`` (each named by the key
        path in ``names``), in one call: how a transform makes the differentiable leaves of
        a structured argument its leaf nodes."""
        nodes = self._nodes
        if type(nodes) is not list:  # a checking or sealed arena: one at a time, each checked
            return [self._array_param(value, name) for value, name in zip(values, names, strict=True)]
        paths = self._paths
        for index, name in enumerate(names, len(nodes)):
            paths[index] = name
        return append_leaves(self, PARAM, values)

    def _array_param(self, value: np.ndarray, name: str) -> Traced:
        """:meth:`param` of a float or complex array: its own leaf node, its own handle."""
        index = len(self._nodes)
        if name:
            self._paths[index] = name  # before the push: a checking arena names the leaf
        try:
            return append_node(self, PARAM, (), (), (), value)
        except NodegradError:
            self._paths.pop(index, None)
            raise

    def _check_enclosing(self, leaf: Traced, path: str) -> None:
        """A traced value can become a leaf of this arena only if an enclosing arena traced
        it: this arena is then one level deeper (a transform nested in another)."""
        if leaf.arena is self:
            msg = f"Arena.param: {path or 'the value'} is already traced in this arena; pass plain values"
            raise ArenaError(msg)
        check_alive(leaf, f"Arena.param: {path or 'the value'}")
        if leaf.arena not in self._enclosing:
            msg = f"Arena.param: {path or 'the value'} is traced in another arena, which does not enclose this one"
            raise ArenaError(msg)

    def alive(self) -> bool:  # (see nodegrad.engine.levels.Level)
        return not self._finished_by

    def describe(self) -> str:
        return self._finished_by or "an arena"

    def seal(self, by: str) -> None:
        """Mark the arena as done, for the transform ``by`` that made it has returned: an op
        on one of its handles (a leaked tracer) raises instead of recording. (For
        transforms, which seal the arenas they make.)"""
        self._finished_by = by
        if type(self._nodes) is list:
            self._nodes = SealedNodes(self._nodes, by)

    def input(self, value: Any) -> Traced:
        """Add a leaf holding data (any dtype: ops on it say what they cannot use); it is
        differentiable only if floating."""
        try:
            array = np.asarray(value)
        except ValueError as exc:  # ragged nested lists, say
            msg = f"Arena.input: {exc}"
            raise DtypeError(msg) from exc
        return append_node(self, INPUT, (), (), (), array)

    # -- differentiation ---------------------------------------------------------------
    @property
    def check_finite(self) -> bool:
        """Whether this arena checks forward values and gradients for NaN and Inf."""
        return type(self._nodes) is not list and hasattr(self._nodes, "for_sweep")  # a checking list (nodegrad.debug)

    def backward(
        self,
        output: Any,
        wrt: Any = None,
        seed: Any = None,
        *,
        options: Any = None,
        create_graph: bool = False,
        retain: bool = True,
        check_finite: bool = False,
    ) -> Any:
        """Differentiate ``output`` with respect to ``wrt`` by one reverse sweep.

        Parameters
        ----------
        output : Traced or structure of Traced
            Nodes of this arena: one value, or a record / dict / list of them.
        wrt : Traced or structure of Traced, optional
            What to differentiate with respect to: a handle, a view returned by
            :meth:`param`, or any structure of handles. Defaults to every ``param`` leaf
            node, returned as a list.
        seed : array_like or structure, optional
            The cotangent of ``output``, shaped like it. Defaults to ones when ``output``
            is a single value with one element; required otherwise. Never modified.
        options : GradOptions, optional
            Missing-gradient policy; :attr:`GradOptions.TRAINING` by default.
        create_graph : bool, default False
            Record the sweep itself into the arena: the gradients are traced values that
            can be differentiated again (second derivatives, Hessian-vector products).
        retain : bool, default True
            ``False`` releases the forward values of every non-leaf node: each as soon as
            the sweep has used it (so the sweep's peak memory falls too), the rest after it
            (see :attr:`nbytes`). A later ``backward`` on this arena then raises.
        check_finite : bool, default False
            Check from now on, as an arena made with ``check_finite=True`` does: the
            forward values already recorded, every cotangent of this sweep and every later
            node. The first NaN or Inf raises :class:`~nodegrad.errors.NonFiniteError`.

        Returns
        -------
        array or structure
            Gradients shaped like ``wrt`` (``None`` at its non-traced leaves). Calling again,
            with the same or another seed, gives fresh results: nothing accumulates.

        Examples
        --------
        >>> import numpy as np
        >>> import nodegrad as ng
        >>> a = ng.Arena()
        >>> x = a.param(np.array([1.0, 2.0]))
        >>> y = 3.0 * x
        >>> a.backward(y, wrt=x, seed=np.array([1.0, 10.0]))
        array([ 3., 30.])
        """
        if wrt is None:
            wrt = [self._handle(i) for i, n in enumerate(self._nodes) if n[0] is PARAM]
        elif type(wrt) is not Traced and not _holds_traced_or_nothing(wrt):
            msg = f"wrt must hold traced values of this arena (from param, or ops on them), got {describe(wrt)}"
            raise ArenaError(msg)
        if check_finite:
            self._start_checking()
        if self._released:
            msg = "this arena's forward values were released by backward(retain=False): record the computation again"
            raise ArenaError(msg)
        try:
            with quiet_while_checking(self.check_finite):
                result = gradients(self, output, wrt, seed, options, create_graph=create_graph, retain=retain)
        finally:
            if not retain:
                # All or nothing: a sweep that failed midway has dropped some values already,
                # so the rest go too, and the arena says so to a later backward.
                self._release()
        return result

    def _start_checking(self) -> None:
        """Turn NaN/Inf checking on for this arena from now on, after checking the forward
        values recorded so far (whose source lines were not noted)."""
        if self.check_finite:
            return
        checked = PLUGINS.checked_nodes(self)
        checked.check_all(self._nodes, None, "this arena")
        locations = getattr(self._nodes, "locations", None)
        for i, node in enumerate(self._nodes):
            checked.adopt(
                node, locations[i] if locations else "an unknown line: recorded before checking was turned on"
            )
        self._nodes = checked

    def _release(self) -> None:
        """Drop the forward values and arguments of every non-leaf node."""
        for i in range(len(self._nodes)):
            self._release_node(i)
        self._released = True

    def _release_node(self, i: int) -> None:
        op, parents, argnums, _, _ = self._nodes[i]
        if parents:
            self._nodes[i] = (op, parents, argnums, (), _RELEASED)

    @property
    def nbytes(self) -> int:
        """Bytes of array data the arena holds alive (forward values and arguments, each
        array counted once)."""
        seen: set[int] = set()
        total = 0
        for _, _, _, args, value in self._nodes:
            for item in (value, *args):
                for _, leaf in flatten_with_paths(item):
                    if not isinstance(leaf, np.ndarray | np.generic):
                        continue
                    while isinstance(leaf.base, np.ndarray):  # a view holds its base's data
                        leaf = leaf.base
                    if id(leaf) not in seen:
                        seen.add(id(leaf))
                        total += leaf.nbytes
        return total

    def merge(self, other: Arena) -> Callable[[Any], Any]:
        """Append every node of ``other`` to this arena, with its indices relocated.

        ``other`` is left as it was. Returns a function that maps values holding handles
        of ``other`` (a handle, or any record / dict / list of them) to the same values
        holding the corresponding handles of this arena.

        Examples
        --------
        >>> import numpy as np
        >>> import nodegrad as ng
        >>> a, b = ng.Arena(), ng.Arena()
        >>> x = a.param(np.array([1.0, 2.0]))
        >>> y = b.param(np.array([3.0, 4.0]))
        >>> z = y * y
        >>> moved = a.merge(b)
        >>> w = x * moved(z)
        >>> a.backward(ng.sum(w), wrt=[x, moved(y)])
        [array([ 9., 16.]), array([ 6., 16.])]
        """
        if other is self:
            msg = "an arena cannot be merged into itself"
            raise ArenaError(msg)
        if not isinstance(other, Arena):
            msg = f"merge needs another Arena, got {type(other).__name__}"
            raise ArenaError(msg)
        if other._released:
            msg = "the arena to merge had its forward values released by backward(retain=False)"
            raise ArenaError(msg)
        offset = len(self._nodes)
        locations = getattr(other._nodes, "locations", None)
        # A checking list (nodegrad.debug) checks them; it, or a list noting source lines, keeps theirs.
        checked: Any = self._nodes if self.check_finite else None
        adopt = getattr(self._nodes, "adopt", None)
        if checked is not None:
            checked.check_all(other._nodes, locations, "the merged arena")  # before anything is appended
        for i, (op, parents, argnums, args, value) in enumerate(list(other._nodes)):
            node = (op, tuple(p + offset for p in parents), argnums, args, value)
            if checked is not None:
                # Checked where it was recorded (or not at all): keep its own source line.
                checked.adopt(node, locations[i] if locations else "recorded in a merged arena")
            elif adopt is not None:
                adopt(node, locations[i] if locations else "")
            else:
                self._nodes.append(node)
        for index, path in other._paths.items():
            self._paths[index + offset] = path

        def relocate(value: Any) -> Any:
            def move(_: str, leaf: Any) -> Any:
                if type(leaf) is Traced and leaf.arena is other:
                    return Traced(self, leaf.index + offset, leaf.value)
                return leaf

            return map_with_paths(move, value)

        return relocate

    # -- inspection ----------------------------------------------------------------------
    @property
    def nodes(self) -> Sequence[GradOp]:
        """The nodes as the engine keeps them, in index order: ``(op, parents, argnums,
        args, value)``, the op itself, the indices of the nodes it read and at which of its
        arguments, its arguments (a parent's as its value) and its value. For the layers
        that read a whole graph (display, folding, checking); read them, never change
        them. :meth:`__getitem__` gives one as a :class:`Node`."""
        return GradOps(self._nodes)

    @property
    def source_locations(self) -> Sequence[str] | None:
        """``file:line`` of the user code that recorded each node, where the arena notes
        them (see :attr:`Node.source`), else ``None``."""
        return getattr(self._nodes, "locations", None)

    def path_of(self, index: int) -> str:
        """The key path node ``index`` holds or reads (``args[0]['w']``), or ``""``."""
        return self._paths.get(index, "")

    def name_node(self, index: int, path: str) -> None:
        """Note ``path`` as the key path of node ``index`` (a structured op's read of one
        entry), for messages, :attr:`Node.path` and the display."""
        self._paths[index] = path

    @property
    def key_paths(self) -> Mapping[int, str]:
        """Every named node's key path, by index (read-only)."""
        return MappingProxyType(self._paths)

    @property
    def last_gradients(self) -> Mapping[int, Any]:
        """The cotangents the last backward sweep gave its requested nodes, by index (read-only)."""
        return MappingProxyType(self._last_gradients)

    @property
    def enclosing(self) -> tuple[Arena, ...]:
        """For an arena a transform made: the arenas entered in this thread when it was
        made, whose handles may meet its own in an op (as constants at its level)."""
        return self._enclosing

    @property
    def lean(self) -> bool:
        """Whether the arena keeps only the values its rules read (large arrays no rule
        reads become stand-ins, see :func:`nodegrad.engine.record.lean_node`): for a
        transform's arena whose sweeps are never recorded."""
        return self._lean

    @lean.setter
    def lean(self, lean: bool) -> None:
        self._lean = bool(lean)

    def __len__(self) -> int:
        return len(self._nodes)

    def __getitem__(self, index: int) -> Node:
        i = self._check_index(index) % len(self._nodes)
        op, parents, _, _, value = self._nodes[i]
        locations = getattr(self._nodes, "locations", None)
        source = locations[i] if locations is not None else ""
        gradient = self._last_gradients.get(i)
        return Node(i, op.name, parents, value, self._paths.get(i, ""), source, gradient)

    def __iter__(self) -> Iterator[Node]:
        for i in range(len(self._nodes)):
            yield self[i]

    def _check_index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)) or not -len(self._nodes) <= index < len(self._nodes):
            msg = f"node index {index} is out of range for an arena of {len(self._nodes)} nodes"
            raise ArenaError(msg)
        return index

    def truncate(self, size: int) -> None:
        """Drop the nodes from ``size`` on, and their key paths: for undoing a call that
        failed midway, so that the arena is as it was before it."""
        del self._nodes[size:]
        for index in [i for i in self._paths if i >= size]:
            del self._paths[index]

    def _handle(self, index: int) -> Traced:
        return Traced(self, index, self._nodes[index][4])

    def __repr__(self) -> str:
        return f"<Arena with {len(self._nodes)} nodes>"

    def __reduce__(self) -> Any:
        msg = (
            "an arena cannot be pickled: it holds op functions and handles of a computation; pickle the values you need"
        )
        raise ArenaError(msg)

    def _repr_html_(self) -> str:
        return PLUGINS.arena_html(self)

    def to_svg(self, limit: int = 200) -> str:
        """The graph as an SVG document: nodes in layers by depth, labelled by op and
        shape, structured values grouped. No system binary is needed.

        Examples
        --------
        >>> import numpy as np
        >>> import nodegrad as ng
        >>> a = ng.Arena()
        >>> y = ng.sum(ng.exp(a.param(np.ones(3))))
        >>> a.to_svg().startswith("<svg")
        True
        """
        return PLUGINS.arena_svg(self, limit)

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def __enter__(self) -> Arena:
        _state.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _state.stack
        if stack and stack[-1] is self:
            stack.pop()  # the common case: left in the order entered
            return
        if not any(entered is self for entered in stack):
            msg = "leaving an arena that is not entered in this thread (left twice, or entered in another thread)"
            raise ArenaError(msg)
        stack.remove(self)


def nested_arena(check_finite: bool | None = None) -> Arena:
    """A new arena for one call of a transform: one level inside every arena entered in
    this thread now, so the values those arenas trace can become its leaves and can meet
    its handles in an op."""
    arena = Arena.__new__(Arena)
    arena._setup(check_finite, list)
    arena._enclosing = tuple(_state.stack)
    return arena


def arena_with_nodes(new_nodes: Callable[[], Any]) -> Arena:
    """A new arena (not entered) whose node list ``new_nodes()`` makes: one that notes the
    user's source line of each node without checking its value, say (the search for the op
    to blame in :func:`nodegrad.testing.check_grads` reads both the lines and NaN values)."""
    arena = Arena.__new__(Arena)
    arena._setup(False, new_nodes)
    return arena


_NOT_QUIET = contextlib.nullcontext()


def quiet_while_checking(checking: bool) -> Any:
    """While nodegrad checks for NaNs itself, numpy's floating-point warnings only repeat,
    less precisely, what the check reports: silence them then."""
    return np.errstate(all="ignore") if checking else _NOT_QUIET


def _holds_traced_or_nothing(value: Any) -> bool:
    found = list(leaves(value))
    return not found or any(type(leaf) is Traced for leaf in found)
