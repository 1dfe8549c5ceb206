"""Recording: applying an op appends one node to the arena its traced inputs belong to.

:func:`record1`, :func:`record2` and :func:`record` run an op's forward on the inputs'
values and, when any input is traced, append ``(op, parents, argnums, args, value)`` and
return the new node's handle; on plain inputs they return the plain result, so every op
works on numpy values too. A forward that fails is reported naming the op, the shapes and
the user's line. (Guarding a public function that records, and recording all-or-nothing,
are :mod:`nodegrad.engine.guards`.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED, find_top, inside, leaked_error
from nodegrad.engine.registry import ANS, Op
from nodegrad.engine.traced import Traced, describe
from nodegrad.errors import (
    ArenaError,
    DtypeError,
    LinAlgError,
    error_like,
    rerun_reporting_warnings,
    user_location,
)

#: An arena (nodegrad.engine.arena, which records through this module: it is defined above it).
Arena = Any

__all__ = [
    "INTERPRETERS",
    "LEAN_BYTES",
    "SealedNodes",
    "append_leaves",
    "append_node",
    "as_float_leaf",
    "forward_failed",
    "inner_arena",
    "interpreters_running",
    "interpreting",
    "is_array_subclass",
    "lean_node",
    "record",
    "record1",
    "record2",
    "refuse_array_subclass",
    "register_interpreter",
    "stand_in",
]

_ARG0 = (0,)
_ARG1 = (1,)
_ARG01 = (0, 1)


class SealedNodes(list[Any]):
    """The node list of an arena whose transform has returned. Its handles are leaked
    tracers: an op on one fails here, where it would append, so recording pays nothing
    for the check. (Sweeps still read it: a vjp's backward runs after its transform.)"""

    __slots__ = ("finished_by", "open_for_sweep")

    def __init__(self, nodes: list[Any], finished_by: str) -> None:
        super().__init__(nodes)
        self.finished_by = finished_by
        self.open_for_sweep = False  # see nodegrad.engine.backward.gradients

    def append(self, node: Any) -> None:
        if self.open_for_sweep:
            super().append(node)
            return
        raise leaked_error(f"{node[0].name}: an input", Traced.noun, Traced.leaked, self.finished_by)


def _forward(op: Op, args: tuple[Any, ...], inputs: tuple[Any, ...] = ()) -> Any:
    """Run ``op``'s forward on values no arena traces at this level; a failure becomes an
    error naming the op (see :func:`forward_failed`). An argument that another interpreter traces
    (see :data:`INTERPRETERS`) hands the op to that interpreter instead."""
    if INTERPRETERS:  # (not gated by _running: a leaked value must reach its interpreter to be refused)
        found = find_top(args, INTERPRETERS)  # the innermost level's value (of a batching and a replay, the later)
        if found is not None:
            return INTERPRETERS[type(found)](op, args)
    try:
        return op.forward(*args)
    except Exception as exc:
        return forward_failed(op, args, inputs, exc)


#: The interpreters of ops beside recording, by the type of the value they trace: an op
#: given such a value (at any position, at this level) is handed to ``interpret(op, args)``,
#: which returns the op's result in its own terms. This is the hook that batching and
#: replay plug into; levels nest as they do for arenas: an interpreter runs the op on its
#: values by calling :func:`record` again, so an arena's handle inside them records, and a
#: handle whose values are another interpreter's values passes the op on to it.
INTERPRETERS: dict[type, Callable[[Op, tuple[Any, ...]], Any]] = {}

#: How many levels of interpreters are running (vmap calls, say): while none is, no op
#: can meet an interpreter's value, and recording pays nothing to look for one.
_running = 0


def interpreting(entering: bool) -> None:
    """Note that a level of an interpreter starts (``True``) or ends (``False``): how an
    interpreter's transform tells the recording path (and the sweep) to look for its values."""
    global _running  # one counter, for the hot path to read
    _running += 1 if entering else -1


def interpreters_running() -> bool:
    """Whether a level of an interpreter (a vmap, a replay's recording) is running."""
    return _running > 0


def register_interpreter(kind: type, interpret: Callable[[Op, tuple[Any, ...]], Any]) -> None:
    """Hand every op given a value of type ``kind`` to ``interpret(op, args)`` (see
    :data:`INTERPRETERS`): how an interpreter plugs in."""
    INTERPRETERS[kind] = interpret


def forward_failed(op: Op, args: tuple[Any, ...], inputs: tuple[Any, ...], exc: Exception) -> Any:
    """Re-raise a forward failure as an error naming the op, the shapes, the key paths of
    structured inputs (``inputs`` are the traced arguments) and the user's line. A warning
    is not a failure: the forward runs again and its value is returned, the warning issued
    from the user's line (see :func:`~nodegrad.errors.rerun_reporting_warnings`).
    """
    if isinstance(exc, Warning):
        return rerun_reporting_warnings(op.forward, *args)
    kind = error_like(exc)
    if kind is None:
        raise exc
    shapes = ", ".join(describe(a) for a in args)
    paths = [t.arena.path_of(t.index) for t in inputs if t.arena.path_of(t.index)]
    where = f" (inputs from {', '.join(paths)})" if paths else ""
    if kind is LinAlgError:  # the shapes fit; the values have no answer (a singular matrix, say)
        msg = f"{op.name}: {exc} (inputs {shapes}){where} [recorded at {user_location()}]"
    else:
        msg = f"{op.name}: inputs do not fit ({shapes}){where}: {exc} [recorded at {user_location()}]"
    raise kind(msg) from exc


def append_node(
    arena: Arena,
    op: Op,
    parents: tuple[int, ...],
    argnums: tuple[int, ...],
    args: tuple[Any, ...],
    out: Any,
) -> Traced:
    """Append the node ``(op, parents, argnums, args, out)`` to ``arena`` and return its
    handle: how :func:`record` and the arena's leaves append, and the only function that
    does (:func:`record1` and :func:`record2`, its fast paths, write it out). A lean arena
    keeps only what the node's rules read of large arrays (see :func:`lean_node`); the
    fast paths look only at the output, whose size almost always decides, as looking at
    every argument would cost every op."""
    nodes = arena._nodes
    if parents and arena._lean:
        nodes.append(lean_node(op, parents, argnums, args, out))
    else:
        nodes.append((op, parents, argnums, args, out))
    return Traced(arena, len(nodes) - 1, out)


def append_leaves(arena: Arena, op: Op, values: list[Any]) -> list[Traced]:
    """Append a leaf node ``(op, (), (), (), value)`` per value to ``arena``, whose node list
    is a plain list (no checks to run), and return their handles: many leaves in one call
    (a structured argument's arrays), where :func:`append_node` takes one."""
    nodes = arena._nodes
    handles = []
    for value in values:
        handles.append(Traced(arena, len(nodes), value))
        nodes.append((op, (), (), (), value))
    return handles


def inner_arena(where: str, a: Arena, b: Arena) -> Arena:
    """Of two arenas whose handles meet in one op, the one nested inside the other: the op
    is recorded there, and the other's handles are constants at that level (their own
    arena records what is computed from them). Unrelated arenas are an error."""
    for arena in (a, b):
        if not arena.alive():
            raise leaked_error(f"{where}: an input", Traced.noun, Traced.leaked, arena.describe())
    if a in b._enclosing:
        return b
    if b in a._enclosing:
        return a
    msg = f"{where}: inputs belong to different arenas [recorded at {user_location()}]"
    raise ArenaError(msg)


# -- the recording path --------------------------------------------------------------------------


def record(op: Op, *args: Any) -> Any:
    """Apply ``op`` to ``args``: the recording path every op takes.

    The level the op records at is the innermost arena among its traced arguments that
    have a VJP rule (:func:`inner_arena` decides between two): their handles become the
    node's parents, the handles of enclosing arenas are constants at this level (their
    own arenas record what is computed from them, as the forward runs on them), and a
    handle at a position with no rule passes its value. The forward runs on those values,
    recorded first by the enclosing levels when they are handles too. On plain arguments
    the op runs on them and returns the plain result (or an interpreter's, see
    :data:`INTERPRETERS`).

    :func:`record1` and :func:`record2` are this path for ops whose differentiable
    arguments are the first one or two, with the common case (every traced argument of
    one arena) written out: per-op cost is what a deep graph pays per node.
    """
    arena = None
    rules = op.vjps
    for k, a in enumerate(args):
        if type(a) is Traced and k < len(rules) and rules[k] is not None:
            arena = a.arena if arena is None or a.arena is arena else inner_arena(op.name, arena, a.arena)
        elif type(a) is not Traced and type(a) is not _NDARRAY and isinstance(a, _NDARRAY):
            refuse_array_subclass(a, f"{op.name}: a constant [recorded at {user_location()}]")
    if _running:
        top = find_top(args, INTERPRETERS)
        if top is not None and (arena is None or inside(top, arena)):
            # An interpreter's value (batched, say) from a level inside the arena's: that
            # level runs the op first, and records it here through this path again.
            return _forward(op, args)
    values = list(args)
    parents: list[int] = []
    argnums: list[int] = []
    nested = False
    for k, a in enumerate(args):
        if type(a) is not Traced:
            continue
        if a.arena is arena and rules[k] is not None:
            parents.append(a.index)
            argnums.append(k)
        elif a.arena is not arena and k < len(rules) and rules[k] is not None:
            nested = True  # a handle of an enclosing arena: a constant at this level
            continue
        value = values[k] = a.value
        nested = nested or type(value) in INTERPRETED
    frozen = tuple(values)
    # Traced at two levels (nested transforms): the enclosing one records first.
    out = record(op, *frozen) if nested else _forward(op, frozen, tuple(a for a in args if type(a) is Traced))
    if arena is None:
        return out
    return append_node(arena, op, tuple(parents), tuple(argnums), frozen, out)


def record1(op: Op, x: Any, *static: Any) -> Any:
    """:func:`record` for an op whose only differentiable input is the first argument."""
    if type(x) is not Traced:
        return _forward(op, (x, *static))
    if _running:
        for a in static:
            if type(a) in INTERPRETERS:  # a batched static argument: the general path orders the levels
                return record(op, x, *static)
    args = (x.value, *static)
    if type(args[0]) is not _NDARRAY and type(args[0]) in INTERPRETED:
        out = record1(op, *args)  # traced at two levels (nested transforms), or batched: the enclosing one first
    else:
        try:
            out = op.forward(*args)
        except Exception as exc:
            out = forward_failed(op, args, (x,), exc)
    # append_node, inlined: this is the commonest path of all (W1 pays it per op).
    arena = x.arena
    nodes = arena._nodes
    if type(out) is _NDARRAY and out.nbytes >= LEAN_BYTES and arena._lean:
        nodes.append(lean_node(op, (x.index,), _ARG0, args, out))
    else:
        nodes.append((op, (x.index,), _ARG0, args, out))
    return Traced(arena, len(nodes) - 1, out)


def record2(op: Op, x: Any, y: Any, *static: Any) -> Any:
    """:func:`record` for an op whose first two arguments are differentiable."""
    if _running:
        for a in static:
            if type(a) in INTERPRETERS:  # a batched static argument: the general path orders the levels
                return record(op, x, y, *static)
    if type(x) is Traced:
        arena = x.arena
        if type(y) is Traced:
            if y.arena is not arena:
                return record(op, x, y, *static)  # two levels meet: the general path decides
            args = (x.value, y.value, *static)
            parents: tuple[int, ...] = (x.index, y.index)
            argnums: tuple[int, ...] = _ARG01
            nested = type(args[0]) in INTERPRETED or type(args[1]) in INTERPRETED
        else:
            if type(y) is not float and type(y) is not _NDARRAY:
                if isinstance(y, _NDARRAY):
                    refuse_array_subclass(y, f"{op.name}: a constant [recorded at {user_location()}]")
                if type(y) in INTERPRETERS:  # a batched constant: the general path orders the levels
                    return record(op, x, y, *static)
            args = (x.value, y, *static)
            parents, argnums = (x.index,), _ARG0
            nested = type(args[0]) is not _NDARRAY and type(args[0]) in INTERPRETED
    elif type(y) is Traced:
        if type(x) is not float and type(x) is not _NDARRAY:
            if isinstance(x, _NDARRAY):
                refuse_array_subclass(x, f"{op.name}: a constant [recorded at {user_location()}]")
            if type(x) in INTERPRETERS:  # a batched constant: the general path orders the levels
                return record(op, x, y, *static)
        arena = y.arena
        args = (x, y.value, *static)
        parents, argnums = (y.index,), _ARG1
        nested = type(args[1]) is not _NDARRAY and type(args[1]) in INTERPRETED
    else:
        return _forward(op, (x, y, *static))
    if nested:  # traced at two levels (nested transforms): the enclosing one first
        out = record2(op, *args)
    else:
        try:
            out = op.forward(*args)
        except Exception as exc:
            out = forward_failed(op, args, tuple(a for a in (x, y) if type(a) is Traced), exc)
    nodes = arena._nodes  # append_node, inlined (as in record1)
    if type(out) is _NDARRAY and out.nbytes >= LEAN_BYTES and arena._lean:
        nodes.append(lean_node(op, parents, argnums, args, out))
    else:
        nodes.append((op, parents, argnums, args, out))
    return Traced(arena, len(nodes) - 1, out)


_NDARRAY = np.ndarray  # read on every recorded op: one global lookup, not two

#: Arrays of at least this many bytes that no rule reads are not kept by a lean arena.
#: (Smaller ones are not worth the stand-in; the tests set it to 0 to try every op.)
LEAN_BYTES = 1 << 16


def lean_node(op: Op, parents: tuple[int, ...], argnums: tuple[int, ...], args: tuple[Any, ...], out: Any) -> Any:
    """The node ``(op, parents, argnums, args, out)`` as a lean arena keeps it: a float
    array that no rule of the node reads (:attr:`Op.reads`) is replaced by a stand-in of
    its shape and dtype, so that it can be freed as soon as user code lets go of it.

    The stand-in is a read-only, zero-stride array of NaN: shape and dtype (all that
    cotangents are fitted to) are right, and a rule that read its values after all would
    give NaN, not a plausible wrong number.
    """
    reads = op.reads
    if reads is None:
        return op, parents, argnums, args, out
    read: set[int] = set()
    for k in argnums:
        read |= reads[k]
    if ANS not in read:
        out = stand_in(out)
    kept = list(args)
    for k in argnums:
        if k not in read:
            kept[k] = stand_in(kept[k])
    return op, parents, argnums, tuple(kept), out


_NAN: dict[np.dtype[Any], np.ndarray] = {}


def stand_in(value: Any) -> Any:
    """A read-only array of NaN shaped and typed like the float or complex array
    ``value``, holding no memory of its own; any other value as it is."""
    if type(value) is not np.ndarray or value.dtype.kind not in "fc" or value.nbytes < LEAN_BYTES:
        return value
    nan = _NAN.get(value.dtype)
    if nan is None:
        nan = _NAN[value.dtype] = np.full((), np.nan, value.dtype)
        nan.flags.writeable = False
    return np.ndarray(value.shape, value.dtype, nan, 0, (0,) * value.ndim)


def refuse_array_subclass(value: Any, where: str) -> None:
    """Refuse ``value`` if it is an array whose type changes what numpy computes: a masked
    array (reductions skip its masked entries, which hold hidden values) or an
    ``np.matrix`` (``*`` is a matrix product). Computed as a plain array it would give other
    values, and gradients in which a masked entry's hidden value takes part, without a word."""
    masked = sys.modules.get("numpy.ma")  # a masked array exists only once numpy.ma is imported
    if masked is not None and isinstance(value, masked.MaskedArray):
        msg = (
            f"{where} is a numpy masked array (np.ma.MaskedArray): nodegrad does not differentiate numpy.ma's "
            "semantics, and computing with its data would let the hidden values of masked entries into values and "
            "gradients. Pass x.filled(fill) for an array of the same shape with the masked entries set to fill, or "
            "x.compressed() for the unmasked entries only, and keep the mask as a boolean array (np.where(mask, ...))"
        )
        raise DtypeError(msg)
    if isinstance(value, np.matrix):
        msg = (
            f"{where} is an np.matrix, for which * is a matrix product and every result stays 2-D: nodegrad computes "
            "with plain arrays, whose results differ. Pass np.asarray(m) and write @ for the matrix product"
        )
        raise DtypeError(msg)


def is_array_subclass(value: Any) -> bool:
    """An ndarray subclass (a masked array, a matrix): refused as a leaf or a constant."""
    return type(value) is not np.ndarray and isinstance(value, np.ndarray)


def as_float_leaf(value: Any, where: str) -> Any:
    """``value`` as a differentiable leaf holds it: a float or complex array (a Python
    number kept as it is); anything else refused, naming ``where``."""
    if type(value) is float or type(value) is complex:
        # Kept a Python number: like a Python scalar in numpy, it is weakly typed, so
        # float32 arrays it meets stay float32. Its gradient is a 64-bit scalar.
        return value
    if is_array_subclass(value):
        refuse_array_subclass(value, where)
    array = np.asarray(value)
    if array.dtype.kind not in "fc":
        hint = " (write 3.0 instead of 3, or cast with .astype(float))" if array.dtype.kind in "biu" else ""
        msg = f"{where}: only floating-point and complex values are differentiable, got dtype {array.dtype}{hint}"
        raise DtypeError(msg)
    return array
