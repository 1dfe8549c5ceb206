"""``replay``: record a function's numpy calls once, run them again at numpy's own cost.

The first call with a new **signature** (the arguments' structure, each array's shape and
dtype, every other leaf's value, the static arguments) runs the function on staged values
(:mod:`nodegrad.engine.staged`): it computes as it would eagerly, and every numpy call it
makes, those of the transforms inside it included (their ops' forwards, their sweeps'
rules), is appended to a tape, which is compiled into one straight-line function
(:mod:`nodegrad.engine.program`). Later calls with that signature run the compiled tape on
the new arguments: no traced handles, no arena, no structure walks but flattening the
arguments and rebuilding the result. Where the function turned a value into a Python one
(an ``if``, ``int``, an index), the tape checks it comes out the same, and a replay where
it does not records the function again for the new path (up to ``max_traces``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ParamSpec

import numpy as np

from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.program import NonFinite, Program, compile_tape
from nodegrad.engine.record import interpreting
from nodegrad.engine.staged import Miss, Staged, Unreplayable
from nodegrad.engine.structure import LEAF, TreeDef, UnwalkableError, flatten
from nodegrad.engine.tape import Instruction, Tape, exact_key
from nodegrad.errors import ArgumentError, ReplayWarning, rerun_reporting_warnings, user_stacklevel
from nodegrad.ops import staging as staging  # the replay interpreter of ops, registered on import
from nodegrad.transforms.common import Transformed, check_callable, name_of, normalize_argnums
from nodegrad.transforms.free_values import changed_by_call, free_key, free_table
from nodegrad.transforms.randomness import refusing_draws

__all__ = ["Trace", "replay"]

P = ParamSpec("P")


class Trace:
    """One recorded program of a replayed function: the signature it was recorded for, its
    instructions (numpy calls, guards and shape checks), and the compiled function.

    ``repr`` lists the instructions, one per line, as the arena display lists nodes:
    slot, call, the slots it reads and the shapes it gives.
    """

    __slots__ = ("_checked", "_leaves", "_name", "_outputs", "_tape", "guards", "instructions", "program", "signature")

    def __init__(
        self, signature: str, tape: Tape, program: Program, outputs: TreeDef, leaves: list[Any], name: str
    ) -> None:
        self.signature = signature
        self.instructions = tape.instructions
        self.program = program
        self._outputs = outputs
        self._tape = tape
        self._leaves = leaves
        self._name = name
        self._checked: Program | None = None
        #: How many conversions to Python values (and shape checks) a replay checks.
        self.guards = sum(1 for s in self.instructions if s.kind != "call") + sum(
            1 for s in self.instructions for shape in s.shapes if shape is not None
        )

    def run(self, leaves: Sequence[Any]) -> Any:
        """The result for the dynamic argument leaves ``leaves``; raises
        :class:`~nodegrad.engine.staged.Miss` where a guard comes out differently."""
        try:
            out = self.program.run(*leaves)
        except Warning:  # raised by the filter of nodegrad.errors: issued again from the user's line
            out = rerun_reporting_warnings(self.program.run, *leaves)
        outputs = self._outputs
        return out[0] if outputs is LEAF else outputs.unflatten(list(out))

    def run_checked(self, leaves: Sequence[Any]) -> Any:
        """:meth:`run`, raising :class:`~nodegrad.engine.program.NonFinite` as soon as a
        step makes NaN or Inf (for ``debug_nans``)."""
        if self._checked is None:
            self._checked = compile_tape(self._tape, self._leaves, self._name, check_finite=True)
        out = self._checked.run(*leaves)
        return out[0] if self._outputs is LEAF else self._outputs.unflatten(list(out))

    def _repr_html_(self) -> str:
        return PLUGINS.trace_html(self)

    def __repr__(self) -> str:
        lines = [f"Trace({self.signature}: {len(self.instructions)} instructions, {self.guards} checks)"]
        for step in self.instructions:
            lines.append("  " + describe_instruction(step))
        return "\n".join(lines)


def describe_instruction(step: Instruction) -> str:
    """One line for an instruction: ``v7 = np.sin(v2)``, ``v8 = v7 * 2.0``, or a guard."""
    shown = [_show(a) for a in step.args]
    if step.kind != "call":
        return f"check {step.kind}({', '.join(shown)}) == {step.expected[1]!r}"
    syntax = step.syntax if not step.kwargs else None
    if syntax == "[]":
        text = f"{shown[0]}[{shown[1]}]"
    elif syntax == "[]=":
        text = f"{shown[0]}[{shown[1]}] = {shown[2]}"
    elif syntax is not None and len(shown) == 2:
        text = f"{shown[0]} {syntax} {shown[1]}"
    elif syntax is not None:
        text = f"{syntax}{shown[0]}"
    else:
        shown += [f"{k}={_show(v)}" for k, v in step.kwargs.items()]
        method = getattr(step.fn, "method", None)
        if hasattr(step.fn, "attribute"):
            text = f"{shown[0]}.{step.fn.attribute}"
        elif method:
            text = f"{shown[0]}.{method}({', '.join(shown[1:])})"
        else:
            text = f"{step.name}({', '.join(shown)})"
    outs = ", ".join(f"v{s}" for s in step.outs)
    checked = " (shape checked)" if any(shape is not None for shape in step.shapes) else ""
    held = f"    {', '.join(step.values)}{checked}" if step.values else ""
    return f"{outs + ' = ' if outs else ''}{text}{held}"


def _show(value: Any) -> str:
    if type(value) is Staged:
        return f"v{value.slot}"
    if isinstance(value, np.ndarray):
        return f"<{value.dtype}{list(value.shape)}>"
    if type(value) is tuple:
        return "(" + ", ".join(_show(v) for v in value) + (",)" if len(value) == 1 else ")")
    if type(value) is list:
        return "[" + ", ".join(_show(v) for v in value) + "]"
    text = repr(value)
    return text if len(text) < 30 else type(value).__name__


class _Eager:
    """A signature that runs eagerly: why."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Replayed(Transformed[P, Any]):
    """What :func:`replay` returns: called like the function, with ``traces``."""

    def __init__(
        self,
        fun: Callable[P, Any],
        static_argnums: tuple[int, ...],
        static_argnames: tuple[str, ...],
        max_traces: int,
    ) -> None:
        remake = (replay, (fun,), {"static_argnums": static_argnums, "static_argnames": static_argnames})
        super().__init__(self._call_replayed, fun, remake)
        self._fun = fun
        self._name = name_of("replay", fun)
        self._static_argnums = static_argnums
        self._static_argnames = static_argnames
        #: Whether a call of plain arrays may still hold a static argument (by position).
        self._plain_unsafe = bool(static_argnums)
        self._max_traces = max_traces
        self._signatures: dict[Hashable, list[Trace] | _Eager] = {}
        self._recorded: list[Trace] = []
        self._warned: set[str] = set()
        self._held: dict[Hashable, list[np.ndarray]] = {}
        self._mask: frozenset[Any] = frozenset()  # paths to state the function changes itself
        self._recorded_free: dict[Hashable, Hashable] = {}  # by the arguments' signature: the last one recorded
        #: Whether a signature was recorded again because a value read besides the arguments changed.
        self._free_changed = False

    @property
    def traces(self) -> list[Trace]:
        """The recorded programs, in the order they were recorded."""
        return list(self._recorded)

    # -- a call -------------------------------------------------------------------------------
    def _call_replayed(self, *args: Any, **kwargs: Any) -> Any:
        split = self._split_arrays(args) if not kwargs and not self._plain_unsafe else None
        if split is None:
            split = self._split(args, kwargs)
        if split is None:
            return self._fun(*args, **kwargs)  # inside a transform, or arguments no signature holds
        key, leaves, dynamic, treedef = split
        # What the function reads besides its arguments (closures, globals) is part of the
        # signature: a call after one changed is recorded again, never replayed stale.
        free, held = free_key(self._fun, self._mask)
        arguments_key, key = key, (key, free)
        entry = self._signatures.get(key)
        if isinstance(entry, _Eager):
            self._warn(entry.reason)
            return self._fun(*args, **kwargs)
        checking = PLUGINS.checking()
        if entry:
            values = leaves if treedef is None else [leaves[k] for k in dynamic]
            for k, trace in enumerate(entry):
                try:
                    out = trace.run_checked(values) if checking else trace.run(values)
                except Miss:
                    continue
                except NonFinite:
                    return self._fun(*args, **kwargs)  # again, eagerly: debug_nans names the op
                except Exception:
                    # A call that fails (a singular matrix, say) is made again eagerly: the
                    # error is then the eager call's, naming the op and the user's line.
                    return self._fun(*args, **kwargs)
                if k:  # the path taken most recently is tried first
                    entry.insert(0, entry.pop(k))
                return out
        if checking:
            return self._fun(*args, **kwargs)  # debug_nans' checks are not recorded
        if self._recorded_free.get(arguments_key, free) != free:
            self._free_changed = True  # (for the advice below)
        if len(self._recorded) >= self._max_traces:
            advice = (
                "pass what changes (a value it closes over or a global it reads) as an argument"
                if self._free_changed
                else "raise max_traces, or make the arguments' shapes and branches more alike"
            )
            self._warn(
                f"{self._name} has recorded max_traces={self._max_traces} programs and runs eagerly for new "
                f"signatures and paths ({advice})"
            )
            return self._fun(*args, **kwargs)
        before = free_table(self._fun)
        out = self._record(args, kwargs, key, leaves, dynamic, treedef)
        # What the function changed itself (a counter, a log it appends to) is a Python side
        # effect, which happens when recording only: from now on no key holds it.
        changed = changed_by_call(before, free_table(self._fun))
        if changed:
            self._mask = self._mask | changed
            entry = self._signatures.pop(key, None)
            free, held = free_key(self._fun, self._mask)
            key = (arguments_key, free)
            if entry is not None:
                self._signatures[key] = entry
        self._held[key] = held  # the arrays its key names by identity: none other can take their id
        self._recorded_free[arguments_key] = free
        return out

    def _split_arrays(self, args: tuple[Any, ...]) -> Any:
        """:meth:`_split` of a call whose arguments are all plain arrays (the commonest
        call: no structure to walk); ``None`` for any other call."""
        parts = []
        for a in args:
            if type(a) is not np.ndarray or a.dtype.hasobject:
                return None
            parts.append((a.shape, a.dtype))
        return tuple(parts), args, range(len(args)), None

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The signature of a call, its leaves, the positions of the dynamic ones and the
        layout to rebuild the dynamic arguments from the leaves (a TreeDef per argument,
        ``None`` for an array); ``None`` when the call must run eagerly (a traced, batched
        or staged argument, or one no signature can hold)."""
        # By value and exactly (0.0 and -0.0, 1 and 1.0 apart); the value itself must hash.
        static_pos = tuple((args[k], exact_key(args[k])) for k in self._static_argnums if k < len(args))
        static_kw = tuple((k, kwargs[k], exact_key(kwargs[k])) for k in self._static_argnames if k in kwargs)
        values = [a for k, a in enumerate(args) if k not in self._static_argnums]
        names = [k for k in kwargs if k not in self._static_argnames]
        values += [kwargs[k] for k in names]
        leaves: list[Any] = []
        parts: list[Any] = []
        dynamic: list[int] = []
        layout: list[TreeDef | None] = []
        for value in values:
            if type(value) is np.ndarray:  # the commonest argument: no structure to walk
                layout.append(None)
                found = [value]
                static = None
            else:
                try:
                    found, treedef = flatten(value)
                except UnwalkableError:
                    return None  # the function's own call reports it
                layout.append(treedef)
                parts.append(_structure(treedef))
                static = treedef.static_leaves() if treedef.has_static else None
            for k, leaf in enumerate(found):
                part = _leaf_key(leaf, static is not None and static[k])
                if part is None:
                    return None
                if part[0] is not _STATIC:
                    dynamic.append(len(leaves))
                leaves.append(leaf)
                parts.append(part)
        try:
            key = (tuple(parts), tuple(names), static_pos, static_kw)
            hash(key)
        except TypeError:
            self._warn(f"{self._name}: an argument is neither an array nor hashable, so calls cannot be told apart")
            return None
        return key, leaves, dynamic, (layout, names)

    # -- recording ----------------------------------------------------------------------------
    def _record(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        key: Hashable,
        leaves: list[Any],
        dynamic: list[int],
        treedef: Any,
    ) -> Any:
        tape = Tape(self._name)
        staged = list(leaves)
        for k in dynamic:
            staged[k] = tape.argument(leaves[k])
        dyn_args, dyn_kwargs = (tuple(staged), {}) if treedef is None else _rebuild(staged, *treedef)
        call_args, call_kwargs = self._merge(args, kwargs, dyn_args, dyn_kwargs)
        interpreting(True)
        try:
            with refusing_draws(self._name, self._fun, [*args, *kwargs.values()], tape):
                out = self._fun(*call_args, **call_kwargs)
        except Unreplayable as exc:
            tape.restore_inputs()  # the call is made again, eagerly: its writes must happen once
            tape.close()
            return self._give_up(key, exc.reason, args, kwargs)
        finally:
            interpreting(False)
            tape.active = False  # (closed below, once the result is read)
        out_leaves, out_treedef = flatten(out)
        for leaf in out_leaves:
            if type(leaf) in INTERPRETED and (type(leaf) is not Staged or leaf.level is not tape):
                tape.restore_inputs()
                tape.close()
                return self._give_up(key, "it returns a value traced by a transform around it", args, kwargs)
        # A recording call's result is the eager one: an array made outside the recorded
        # calls is handed out as a copy, as the program hands out copies of it later.
        result = out_treedef.unflatten(
            [
                leaf.now if type(leaf) is Staged else leaf.copy() if type(leaf) is np.ndarray else leaf
                for leaf in out_leaves
            ]
        )
        checks = any(s.kind != "call" or any(s.shapes) for s in tape.instructions)
        if tape.mutates_input and checks:
            tape.close()
            reason = "it writes into an argument before a check a replay makes (a branch on a value, a shape)"
            self._give_up(key, reason)
            return result
        program = compile_tape(tape, out_leaves, self._name)
        trace = Trace(_describe_signature(leaves, dynamic), tape, program, out_treedef, out_leaves, self._name)
        self._recorded.append(trace)
        entry = self._signatures.setdefault(key, [])
        assert type(entry) is list
        entry.insert(0, trace)
        tape.close()
        return result

    def _merge(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], dyn_args: tuple[Any, ...], dyn_kwargs: dict[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """The call's arguments with the dynamic ones replaced by ``dyn_args``, ``dyn_kwargs``."""
        dyn = iter(dyn_args)
        call_args = [a if k in self._static_argnums else next(dyn) for k, a in enumerate(args)]
        call_kwargs = {k: v if k in self._static_argnames else dyn_kwargs[k] for k, v in kwargs.items()}
        return call_args, call_kwargs

    def _give_up(self, key: Hashable, reason: str, args: Any = None, kwargs: Any = None) -> Any:
        """Run this signature eagerly from now on, saying why once; with ``args`` (and
        ``kwargs``), make this call so too."""
        eager = self._signatures[key] = _Eager(f"{self._name} runs eagerly for this signature: {reason}")
        self._warn(eager.reason)
        return None if args is None else self._fun(*args, **(kwargs or {}))

    def _warn(self, reason: str) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(reason, ReplayWarning, stacklevel=user_stacklevel())


def _handed_out(leaf: Any) -> Any:
    """A leaf of a recording call's result: a staged value's value now, a copy of an array
    made outside the recorded calls (a constant of the program), anything else as it is."""
    if type(leaf) is Staged:
        return leaf.now
    return leaf.copy() if type(leaf) is np.ndarray else leaf


#: The first entry of a static leaf's key.
_STATIC = object()


def _leaf_key(leaf: Any, static: bool) -> Any:
    """What the signature holds of a leaf: an array's shape and dtype (a dynamic leaf),
    anything else by value (a static leaf, keyed ``(_STATIC, ...)``); ``None`` for a leaf
    that makes the call run eagerly (a traced, batched or staged value, an array subclass,
    which the function's own call decides about)."""
    kind = type(leaf)
    if kind is np.ndarray and leaf.dtype.hasobject:
        return _content_key(leaf)  # strings, say: its bytes would be pointers
    if kind in INTERPRETED:
        return None  # a value of a transform around (a nested replay's recording, say): run eagerly
    if static:
        if isinstance(leaf, np.ndarray):
            return (_STATIC, leaf.shape, leaf.dtype, leaf.tobytes())
        return (_STATIC, exact_key(leaf))
    if kind is np.ndarray:
        return (leaf.shape, leaf.dtype)
    if isinstance(leaf, np.ndarray):
        return None
    if isinstance(leaf, np.generic):
        return (kind, leaf.dtype)
    if getattr(leaf, "__hash__", None) is None and hasattr(leaf, "dtype") and hasattr(leaf, "tolist"):
        return _content_key(leaf)  # another library's array (a pandas string or categorical column)
    return (_STATIC, exact_key(leaf))


def _content_key(leaf: Any) -> Any:
    """A static array of objects keyed by its values, its type and dtype (a categorical's
    dtype holds its categories, whose order is its groups' order); ``None`` (run eagerly)
    when its values cannot be hashed."""
    values = leaf.ravel().tolist() if isinstance(leaf, np.ndarray) else leaf.tolist()
    key = (_STATIC, type(leaf), repr(leaf.dtype), np.shape(leaf), tuple(values))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _rebuild(
    leaves: list[Any], layout: list[TreeDef | None], names: list[str]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The dynamic arguments (positional, keyword) from their leaves, as :meth:`Replayed._split` took them apart."""
    values = []
    at = 0
    for treedef in layout:
        if treedef is None:
            values.append(leaves[at])
            at += 1
        else:
            values.append(treedef.unflatten(leaves[at : at + treedef.num_leaves]))
            at += treedef.num_leaves
    positional = len(values) - len(names)
    return tuple(values[:positional]), dict(zip(names, values[positional:], strict=True))


def _structure(treedef: TreeDef) -> Any:
    """A hashable summary of ``treedef``: what two calls must share to share a program."""
    handler = treedef.handler
    if handler is None:
        return None
    meta = None if handler.meta is None else handler.meta(treedef.template)
    if not treedef.has_static and all(c is LEAF for c in treedef.children):  # the commonest container
        return (type(treedef.template), tuple(treedef.keys), meta)
    return (
        type(treedef.template),
        meta,
        tuple(treedef.keys),
        tuple(exact_key(v) for v in treedef.static),
        tuple(_structure(c) for c in treedef.children),
    )


def _describe_signature(leaves: list[Any], dynamic: list[int]) -> str:
    shown = [f"{leaves[k].dtype}{list(np.shape(leaves[k]))}" for k in dynamic]
    return ", ".join(shown) if shown else "no array arguments"


def replay(
    fun: Callable[P, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    max_traces: int = 8,
) -> Replayed[P]:
    """Make a function that gives exactly what ``fun`` gives, recording its numpy calls on
    the first call with each signature and replaying them on later calls.

    ``fun`` may compute with numpy and nodegrad and call any transform (``grad``, ``vjp``,
    ``jvp``, ``hessian``, ``vmap``, ...); a replay makes the same numpy calls in the same
    order, on the new arguments, without tracing anything: the same numbers, bit for bit,
    at the cost of the numpy calls themselves.

    Parameters
    ----------
    fun : callable
        The function. Its arguments may be arrays, numpy scalars, Python values, dicts,
        attrs records, dataclasses, named tuples, lists and tuples, nested.
    static_argnums : int or sequence of int, optional
        Positional arguments that are part of the signature by value (hashable), not
        recorded: sizes, flags, functions.
    static_argnames : str or sequence of str, optional
        Keyword arguments treated so.
    max_traces : int, optional
        How many programs to record in all (signatures, and paths through branches on
        values); past that, new ones run eagerly, with a :class:`~nodegrad.errors.ReplayWarning`.

    Returns
    -------
    callable
        Called like ``fun``. Its ``traces`` list the recorded programs.

    Raises
    ------
    RandomDrawError
        If ``fun`` draws random numbers while it is recorded: pass them in instead.

    Notes
    -----
    The signature is the structure of the arguments, each array's shape and dtype, and
    the value of every other leaf (a Python number is a constant of the program: pass an
    array for a number that changes). Values the function closes over are read when it is
    recorded, as in any ``jit``; so are its other side effects (printing, appending to a
    list), which happen when it is recorded only. Called with values traced by a transform
    around it, ``fun`` runs eagerly inside that transform, so ``grad(replay(f))`` is right.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> step = ng.replay(ng.grad(lambda w: np.sum(np.tanh(w) ** 2)))
    >>> step(np.zeros(3)), step(np.ones(3)).round(3)  # recorded, then replayed
    (array([0., 0., 0.]), array([0.64, 0.64, 0.64]))
    >>> len(step.traces)
    1

    A branch on a value is guarded: the other path is recorded when it is taken.

    >>> f = ng.replay(lambda x: x * 2 if np.sum(x) > 0 else -x)
    >>> f(np.ones(2)), f(-np.ones(2)), len(f.traces)
    (array([2., 2.]), array([1., 1.]), 2)
    """
    check_callable(fun, "replay")
    if not isinstance(max_traces, int) or isinstance(max_traces, bool) or max_traces < 0:
        msg = f"replay: max_traces must be a non-negative int, got {max_traces!r}"
        raise ArgumentError(msg)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    return Replayed(fun, normalize_argnums(static_argnums) if static_argnums != () else (), names, max_traces)
