"""The arena: a flat, append-only store of op nodes, and the handles user code holds.

A node is the tuple ``(op, parents, argnums, args, value)``:

- ``op`` -- the :class:`~nodegrad.ops.registry.Op` that produced it (leaves have the
  ``param`` / ``input`` pseudo-ops);
- ``parents`` -- integer indices of the nodes it read, always lower than its own index,
  so index order *is* a topological order;
- ``argnums`` -- for each parent, the argument position it was passed at;
- ``args`` -- the forward arguments with traced values replaced by their values (this is
  all a VJP rule needs, so no separate residuals are stored);
- ``value`` -- the forward output.

Nodes are plain tuples in one list because per-node cost is a product feature: appending
one tuple is the cheapest record there is. :class:`Node` is the read-only view users see.

A :class:`Traced` is a handle ``(arena, index, value)`` that supports the numpy-style
operators and methods, each recording one node.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import attrs
import numpy as np

from nodegrad.errors import ArenaError, DtypeError, NodegradError, ShapeError, StructureError, user_location

if TYPE_CHECKING:
    from nodegrad.ops.registry import Op

__all__ = ["Arena", "Node", "Traced", "call_atomically", "composite", "current_arena", "record"]

F = TypeVar("F", bound=Callable[..., Any])

_ARG0 = (0,)
_ARG1 = (1,)
_ARG01 = (0, 1)


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
        ``file:line`` of the user code that recorded it; noted only while the arena checks
        for NaNs (:func:`nodegrad.debug_nans`, ``check_finite=True``), ``""`` otherwise.
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
        from nodegrad.display import node_html

        return node_html(self)


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: list[Arena] = []


_state = _State()


def current_arena() -> Arena | None:
    """The innermost arena entered with ``with`` in this thread, or ``None``."""
    stack = _state.stack
    return stack[-1] if stack else None


class Arena:
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
        checking = CHECKING.on if check_finite is None else check_finite
        # A checking arena's node list notes source lines and checks values as they come:
        # an arena that does not check pays nothing for it.
        self._nodes: list[tuple[Op, tuple[int, ...], tuple[int, ...], tuple[Any, ...], Any]] = (
            CheckedNodes(self) if checking else []
        )
        #: How many nodes the most recent backward sweep visited (pruned nodes excluded).
        self.last_visited = 0
        # Key paths of nodes that hold a part of a structured value, for messages.
        self._paths: dict[int, str] = {}
        self._released = False
        # The cotangents of the last backward's requested nodes, for display.
        self._last_gradients: dict[int, Any] = {}

    # -- recording ---------------------------------------------------------------------
    def param(self, value: Any, *, name: str = "") -> Any:
        """Add a differentiable leaf holding ``value``.

        Parameters
        ----------
        value : array_like or structure
            A float array or Python float; or a record (attrs class, dataclass, named
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
            If an array ``value`` is not floating point.

        Examples
        --------
        >>> import numpy as np
        >>> import nodegrad as ng
        >>> a = ng.Arena()
        >>> p = a.param({"w": np.ones(2), "tag": "layer"})
        >>> type(p["w"]).__name__, p["tag"], [n.op for n in a]
        ('Traced', 'layer', ['param', 'map_lookup'])
        """
        if handler_for(value) is None:
            value = _as_float_array(value, name or "Arena.param")
        else:
            try:
                if any(type(leaf) is Traced for leaf in leaves(value)):
                    path = next(p for p, leaf in flatten_with_paths(value, name) if type(leaf) is Traced)
                    msg = f"Arena.param: {path} is already traced; pass plain values"
                    raise ArenaError(msg)
            except RecursionError:
                raise too_deep("Arena.param", name) from None
        index = len(self._nodes)
        if name:
            self._paths[index] = name  # before the push: a checking arena names the leaf
        try:
            handle = self._push(PARAM, (), (), (), value)
        except NodegradError:
            self._paths.pop(index, None)
            raise
        try:
            return view(handle)
        except RecursionError:
            self._truncate(index)
            raise too_deep("Arena.param", name) from None

    def input(self, value: Any) -> Traced:
        """Add a leaf holding data (any dtype: ops on it say what they cannot use); it is
        differentiable only if floating."""
        try:
            array = np.asarray(value)
        except ValueError as exc:  # ragged nested lists, say
            msg = f"Arena.input: {exc}"
            raise DtypeError(msg) from exc
        return self._push(INPUT, (), (), (), array)

    def _push(
        self, op: Op, parents: tuple[int, ...], argnums: tuple[int, ...], args: tuple[Any, ...], value: Any
    ) -> Traced:
        nodes = self._nodes
        nodes.append((op, parents, argnums, args, value))
        return Traced(self, len(nodes) - 1, value)

    # -- differentiation ---------------------------------------------------------------
    @property
    def check_finite(self) -> bool:
        """Whether this arena checks forward values and gradients for NaN and Inf."""
        return isinstance(self._nodes, CheckedNodes)

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
            msg = f"wrt must hold traced values of this arena (from param, or ops on them), got {_describe(wrt)}"
            raise ArenaError(msg)
        if check_finite:
            self._start_checking()
        if self._released:
            msg = "this arena's forward values were released by backward(retain=False): record the computation again"
            raise ArenaError(msg)
        with quiet_while_checking(self.check_finite):
            result = gradients(self, output, wrt, seed, options, create_graph=create_graph, retain=retain)
        if not retain:
            self._release()
        return result

    def _start_checking(self) -> None:
        """Turn NaN/Inf checking on for this arena from now on, after checking the forward
        values recorded so far (whose source lines were not noted)."""
        if isinstance(self._nodes, CheckedNodes):
            return
        checked = CheckedNodes(self)
        checked.check_all(self._nodes, None, "this arena")
        for node in self._nodes:
            checked.adopt(node, "an unknown line: recorded before checking was turned on")
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
        if isinstance(self._nodes, CheckedNodes):
            self._nodes.check_all(other._nodes, locations, "the merged arena")  # before anything is appended
        for i, (op, parents, argnums, args, value) in enumerate(list(other._nodes)):
            node = (op, tuple(p + offset for p in parents), argnums, args, value)
            if isinstance(self._nodes, CheckedNodes):
                # Checked where it was recorded (or not at all): keep its own source line.
                self._nodes.adopt(node, locations[i] if locations else "recorded in a merged arena")
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

    def _truncate(self, size: int) -> None:
        """Drop the nodes from ``size`` on: only for undoing a call that failed midway."""
        del self._nodes[size:]
        for index in [i for i in self._paths if i >= size]:
            del self._paths[index]

    def _handle(self, index: int) -> Traced:
        return Traced(self, index, self._nodes[index][4])

    def __repr__(self) -> str:
        return f"<Arena with {len(self._nodes)} nodes>"

    def _repr_html_(self) -> str:
        from nodegrad.display import arena_html

        return arena_html(self)

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
        from nodegrad.display import arena_svg

        return arena_svg(self, limit)

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def __enter__(self) -> Arena:
        _state.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _state.stack.remove(self)


_NOT_QUIET = contextlib.nullcontext()


def quiet_while_checking(checking: bool) -> Any:
    """While nodegrad checks for NaNs itself, numpy's floating-point warnings only repeat,
    less precisely, what the check reports: silence them then."""
    return np.errstate(all="ignore") if checking else _NOT_QUIET


def too_deep(where: str, name: str) -> StructureError:
    """The error for a structure nested deeper than Python's recursion limit allows."""
    msg = (
        f"{where}: {name or 'the value'} is nested deeper than Python's recursion limit ({sys.getrecursionlimit()}) "
        "allows; flatten it, or raise the limit with sys.setrecursionlimit"
    )
    return StructureError(msg)


def _holds_traced_or_nothing(value: Any) -> bool:
    found = list(leaves(value))
    return not found or any(type(leaf) is Traced for leaf in found)


def _as_float_array(value: Any, where: str) -> Any:
    if type(value) is float:
        # Kept a Python float: like a Python scalar in numpy, it is weakly typed, so
        # float32 arrays it meets stay float32. Its gradient is a float64 scalar.
        return value
    array = np.asarray(value)
    if array.dtype.kind != "f":
        hint = " (write 3.0 instead of 3, or cast with .astype(float))" if array.dtype.kind in "biu" else ""
        msg = f"{where}: only floating-point values are differentiable, got dtype {array.dtype}{hint}"
        raise DtypeError(msg)
    return array


# -- recording ops ---------------------------------------------------------------------------


def _forward(op: Op, args: tuple[Any, ...], inputs: tuple[Any, ...] = ()) -> Any:
    """Run ``op``'s forward; a failure becomes an error naming the op (see :func:`_failed`)."""
    try:
        return op.forward(*args)
    except Exception as exc:
        _failed(op, args, inputs, exc)


def _failed(op: Op, args: tuple[Any, ...], inputs: tuple[Any, ...], exc: Exception) -> NoReturn:
    """Re-raise a forward failure as an error naming the op, the shapes, the key paths of
    structured inputs (``inputs`` are the traced arguments) and the user's line.
    """
    if isinstance(exc, NodegradError) or not isinstance(exc, ValueError | TypeError | IndexError):
        raise exc
    shapes = ", ".join(_describe(a) for a in args)
    paths = [t.arena._paths[t.index] for t in inputs if t.index in t.arena._paths]
    where = f" (inputs from {', '.join(paths)})" if paths else ""
    msg = f"{op.name}: inputs do not fit ({shapes}){where}: {exc} [recorded at {user_location()}]"
    raise _error_like(exc)(msg) from exc


def _error_like(exc: Exception) -> type[Exception]:
    from nodegrad.errors import OpIndexError

    if isinstance(exc, IndexError):
        return OpIndexError
    if isinstance(exc, TypeError):
        return DtypeError
    return ShapeError


def _describe(arg: Any) -> str:
    if isinstance(arg, np.ndarray | np.generic):
        return f"{arg.dtype}{list(arg.shape)}"
    if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, np.ndarray | np.generic) for a in arg):
        return "[" + ", ".join(_describe(a) for a in arg) + "]"
    return repr(arg) if len(repr(arg)) < 40 else type(arg).__name__


def _mixed_arenas(op: Op) -> ArenaError:
    msg = f"{op.name}: inputs belong to different arenas [recorded at {user_location()}]"
    return ArenaError(msg)


def record1(op: Op, x: Any, *static: Any) -> Any:
    """Apply an op whose only differentiable input is the first argument."""
    if type(x) is not Traced:
        return _forward(op, (x, *static))
    args = (x.value, *static)
    try:
        out = op.forward(*args)
    except Exception as exc:
        _failed(op, args, (x,), exc)
    # _push, inlined: this is the commonest path of all.
    arena = x.arena
    nodes = arena._nodes
    nodes.append((op, (x.index,), _ARG0, args, out))
    return Traced(arena, len(nodes) - 1, out)


def record2(op: Op, x: Any, y: Any, *static: Any) -> Any:
    """Apply an op whose first two arguments are differentiable."""
    if type(x) is Traced:
        arena = x.arena
        if type(y) is Traced:
            if y.arena is not arena:
                raise _mixed_arenas(op)
            args = (x.value, y.value, *static)
            parents: tuple[int, ...] = (x.index, y.index)
            argnums: tuple[int, ...] = _ARG01
        else:
            args = (x.value, y, *static)
            parents, argnums = (x.index,), _ARG0
    elif type(y) is Traced:
        arena = y.arena
        args = (x, y.value, *static)
        parents, argnums = (y.index,), _ARG1
    else:
        return _forward(op, (x, y, *static))
    try:
        out = op.forward(*args)
    except Exception as exc:
        _failed(op, args, tuple(a for a in (x, y) if type(a) is Traced), exc)
    nodes = arena._nodes
    nodes.append((op, parents, argnums, args, out))
    return Traced(arena, len(nodes) - 1, out)


def record(op: Op, *args: Any) -> Any:
    """Apply any op: traced arguments at positions with a VJP rule become parents."""
    arena = None
    parents: list[int] = []
    argnums: list[int] = []
    values = list(args)
    rules = op.vjps
    for k, a in enumerate(args):
        if type(a) is Traced:
            values[k] = a.value
            if k < len(rules) and rules[k] is not None:
                if arena is None:
                    arena = a.arena
                elif a.arena is not arena:
                    raise _mixed_arenas(op)
                parents.append(a.index)
                argnums.append(k)
    frozen = tuple(values)
    out = _forward(op, frozen, tuple(a for a in args if type(a) is Traced))
    if arena is None:
        return out
    return arena._push(op, tuple(parents), tuple(argnums), frozen, out)


def _arenas_in(values: Any) -> list[Arena]:
    found: dict[int, Arena] = {}
    for v in values:
        for item in v if isinstance(v, (list, tuple)) else (v,):
            if type(item) is Traced:
                found[id(item.arena)] = item.arena
    return list(found.values())


def composite(fn: F) -> F:
    """Make ``fn``, which records several nodes, all-or-nothing: when it raises, the nodes
    it appended are removed again, so a failed call leaves every arena as it was.
    """

    @functools.wraps(fn)
    def all_or_nothing(*args: Any, **kwargs: Any) -> Any:
        return call_atomically(fn, args, kwargs)

    return all_or_nothing  # type: ignore[return-value]


def call_atomically(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)``, removing the nodes it appended to the arguments' arenas if
    it raises."""
    arenas = _arenas_in((*args, *kwargs.values()))
    sizes = [len(a._nodes) for a in arenas]
    try:
        return fn(*args, **kwargs)
    except BaseException:
        for arena, size in zip(arenas, sizes, strict=True):
            arena._truncate(size)
        raise


def unwrap(value: Any) -> Any:
    """The forward value of a traced handle; anything else unchanged."""
    return value.value if type(value) is Traced else value


class Traced:
    """A handle to one node of an arena: what user code holds while being differentiated.

    It behaves like the numpy array it stands for: arithmetic operators with numpy
    broadcasting, ``@``, comparisons (which give plain boolean masks), ``.shape``,
    ``.dtype``, ``.T``, ``.reshape``, ``.sum``, ``.mean``, ``.max``, ``.min``, indexing,
    and numpy functions and ufuncs that have a registered op. Each operation records one
    node in the arena.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = ng.Arena()
    >>> x = a.param(np.ones((2, 3)))
    >>> (x.T @ x).shape
    (3, 3)
    """

    __slots__ = ("arena", "index", "value")
    __array_priority__ = 1000
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays

    def __init__(self, arena: Arena, index: int, value: Any) -> None:
        self.arena = arena
        self.index = index
        self.value = value

    # -- array attributes -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the value."""
        return np.shape(self.value)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the value (float64 for a leaf made from a Python float)."""
        value = self.value
        return value.dtype if type(value) is not float else np.dtype(np.float64)

    @property
    def ndim(self) -> int:
        """Number of dimensions of the value."""
        return np.ndim(self.value)

    @property
    def size(self) -> int:
        """Number of elements of the value."""
        return np.size(self.value)

    @property
    def T(self) -> Any:  # noqa: N802  (numpy's name)
        """The transpose, recorded as a node."""
        return _ops.transpose(self)

    @property
    def mT(self) -> Any:  # noqa: N802  (numpy's name)
        """The transpose of the last two axes (a stack of matrices), recorded as a node."""
        return _ops.swapaxes(self, -1, -2)

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        return (
            f"Traced(node {self.index}, {_describe(self.value)}: "
            f"{np.array2string(np.asarray(self.value), threshold=6)})"
        )

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        # float(x) and math.* would hand back a plain number and silently cut the gradient.
        msg = (
            f"float() of a traced value (node {self.index}, {_describe(self.value)}) would silently drop its "
            "gradient: use nodegrad ops (ng.exp, not math.exp); call float(x.value) or "
            "float(nodegrad.stop_gradient(x)) to read the number on purpose."
        )
        raise ArenaError(msg)

    def __format__(self, spec: str) -> str:
        # Formatting is for reading (logging a loss inside a traced function), not computing.
        return format(self.value, spec) if spec else repr(self)

    def item(self) -> Any:
        """The value as a Python number, for reading only: the result carries no gradient."""
        return self.value.item() if isinstance(self.value, np.ndarray | np.generic) else self.value

    def tolist(self) -> Any:
        """The value as nested Python lists, for reading only: the result carries no gradient."""
        return np.asarray(self.value).tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        msg = (
            f"a traced value (node {self.index}, {_describe(self.value)}) cannot become a plain numpy "
            "array: that would silently drop its gradient. Use a nodegrad op or a numpy function "
            "with a registered op; call nodegrad.stop_gradient(x) or read x.value to detach on purpose."
        )
        raise ArenaError(msg)

    # -- methods ------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Any:
        """Reshape, as ``ndarray.reshape``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops.reshape(self, shape)

    def transpose(self, *axes: Any) -> Any:
        """Permute axes, as ``ndarray.transpose``."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops.transpose(self, axes or None)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Sum over ``axis``, as ``ndarray.sum``."""
        return _ops.sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Mean over ``axis``, as ``ndarray.mean``."""
        return _ops.mean(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Maximum over ``axis``; tied maxima share the gradient evenly."""
        return _ops.max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Minimum over ``axis``; tied minima share the gradient evenly."""
        return _ops.min(self, axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Product over ``axis``, as ``ndarray.prod``."""
        return _ops.prod(self, axis, keepdims)

    def var(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """Variance over ``axis``, as ``ndarray.var``."""
        return _ops.var(self, axis, ddof, keepdims)

    def std(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """Standard deviation over ``axis``, as ``ndarray.std``."""
        return _ops.std(self, axis, ddof, keepdims)

    def cumsum(self, axis: Any = None) -> Any:
        """Cumulative sum, as ``ndarray.cumsum``."""
        return _ops.cumsum(self, axis)

    def cumprod(self, axis: Any = None) -> Any:
        """Cumulative product, as ``ndarray.cumprod``."""
        return _ops.cumprod(self, axis)

    def ravel(self) -> Any:
        """The flattened array, as ``ndarray.ravel``."""
        return _ops.ravel(self)

    def flatten(self) -> Any:
        """The flattened array, as ``ndarray.flatten`` (values are never written in place,
        so a copy and a view are the same thing here)."""
        return _ops.ravel(self)

    def squeeze(self, axis: Any = None) -> Any:
        """Drop axes of length one, as ``ndarray.squeeze``."""
        return _ops.squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """Swap two axes, as ``ndarray.swapaxes``."""
        return _ops.swapaxes(self, axis1, axis2)

    def dot(self, other: Any) -> Any:
        """Dot product, as ``ndarray.dot``."""
        return _ops.dot(self, other)

    def clip(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002  (numpy's names)
        """Limit the values to ``[min, max]``, as ``ndarray.clip``."""
        return _ops.clamp(self, min, max)

    def copy(self) -> Any:
        """The value itself: recorded values are never written in place."""
        return self

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """Cast, as ``ndarray.astype``: to another float dtype the gradient follows (cast
        back); to an integer or bool dtype the result is plain data with no gradient.
        ``copy`` is accepted for numpy's signature: recorded values are never written."""
        return _ops.astype(self, dtype)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """The diagonal, as ``ndarray.diagonal``."""
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """The sum of the diagonal, as ``ndarray.trace``."""
        return np.trace(self, offset, axis1, axis2)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        """Each entry repeated, as ``ndarray.repeat``."""
        return np.repeat(self, repeats, axis)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether any entry is nonzero (plain booleans: no gradient)."""
        return np.any(self.value, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether every entry is nonzero (plain booleans: no gradient)."""
        return np.all(self.value, axis=axis, keepdims=keepdims)

    def nonzero(self) -> Any:
        """Indices of the nonzero entries (plain integers: no gradient)."""
        return np.nonzero(self.value)

    def argmax(self, axis: Any = None) -> Any:
        """Index of the maximum (plain integers: no gradient)."""
        return np.argmax(self.value, axis=axis)

    def argmin(self, axis: Any = None) -> Any:
        """Index of the minimum (plain integers: no gradient)."""
        return np.argmin(self.value, axis=axis)

    def argsort(self, axis: int = -1) -> Any:
        """Indices that sort the values (plain integers: no gradient)."""
        return np.argsort(self.value, axis=axis)

    def __getitem__(self, index: Any) -> Any:
        return _ops.getitem(self, index)

    # -- operators ------------------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        return record2(_elementwise.ADD, self, other)

    def __radd__(self, other: Any) -> Any:
        return record2(_elementwise.ADD, other, self)

    def __sub__(self, other: Any) -> Any:
        return record2(_elementwise.SUBTRACT, self, other)

    def __rsub__(self, other: Any) -> Any:
        return record2(_elementwise.SUBTRACT, other, self)

    def __mul__(self, other: Any) -> Any:
        return record2(_elementwise.MULTIPLY, self, other)

    def __rmul__(self, other: Any) -> Any:
        return record2(_elementwise.MULTIPLY, other, self)

    def __truediv__(self, other: Any) -> Any:
        return record2(_elementwise.DIVIDE, self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return record2(_elementwise.DIVIDE, other, self)

    def __pow__(self, other: Any) -> Any:
        return _ops.power(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _ops.power(other, self)

    def __matmul__(self, other: Any) -> Any:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _ops.matmul(other, self)

    def __mod__(self, other: Any) -> Any:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return _ops.remainder(other, self)

    # Floor division is piecewise constant: plain values, no gradient (as np.floor_divide).
    def __floordiv__(self, other: Any) -> Any:
        return self.value // unwrap(other)

    def __rfloordiv__(self, other: Any) -> Any:
        return unwrap(other) // self.value

    def __neg__(self) -> Any:
        return record1(_elementwise.NEGATIVE, self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return record1(_elementwise.ABS, self)

    # Comparisons give plain boolean masks: they have no gradient.
    def __lt__(self, other: Any) -> Any:
        return self.value < unwrap(other)

    def __le__(self, other: Any) -> Any:
        return self.value <= unwrap(other)

    def __gt__(self, other: Any) -> Any:
        return self.value > unwrap(other)

    def __ge__(self, other: Any) -> Any:
        return self.value >= unwrap(other)

    def __eq__(self, other: object) -> Any:
        return self.value == unwrap(other)

    def __ne__(self, other: object) -> Any:
        return self.value != unwrap(other)

    # -- numpy dispatch ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from nodegrad.numpy_api import dispatch_ufunc

        return dispatch_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from nodegrad.numpy_api import dispatch_function

        return dispatch_function(func, args, kwargs)


# The ops record into the arena, and the handle's operators call the ops: importing the
# ops package last breaks that cycle.
from nodegrad import ops as _ops  # noqa: E402
from nodegrad.debug import CHECKING, CheckedNodes  # noqa: E402
from nodegrad.ops import elementwise as _elementwise  # noqa: E402
from nodegrad.ops.registry import INPUT, PARAM  # noqa: E402
from nodegrad.ops.structured import view  # noqa: E402
from nodegrad.structure import flatten_with_paths, handler_for, leaves, map_with_paths  # noqa: E402
from nodegrad.sweep import gradients  # noqa: E402

_RELEASED = None  # what a released node holds instead of its value
