"""User-defined gradients: ``custom_vjp``, ``checkpoint`` and ``stop_gradient``.

A ``custom_vjp`` function becomes one node in the arena whose rule is the user's
``bwd``. Structured arguments are first packed into one node each (records, dicts and
lists are values like any other), and a structured result is returned as a view.
``checkpoint`` is a ``custom_vjp`` whose backward runs the function again: its
intermediate values are never stored.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.arena import Arena, entered_arenas
from nodegrad.engine.batched import plain
from nodegrad.engine.cotangents import StructCotangent, cotangent_for, materialize
from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, PER_EXAMPLE, Interpreted, carries_gradient, find_top
from nodegrad.engine.record import record
from nodegrad.engine.registry import MADE_OF_OPS, Op, same_rule_for_all
from nodegrad.engine.structure import is_container, leaves, map_with_paths
from nodegrad.engine.sweep import fit_cotangent, unbroadcast
from nodegrad.engine.traced import describe, unwrap
from nodegrad.errors import ArgumentError, DtypeError, LeakedTracerError, NoGradientError, ShapeError, StructureError
from nodegrad.ops.examples import per_example_call
from nodegrad.ops.structured import pack, view
from nodegrad.transforms import vjp
from nodegrad.transforms.common import lower, reachable_name, rebuild

__all__ = ["checkpoint", "custom_vjp", "stop_gradient"]


def _has_traced(value: Any) -> bool:
    """Whether a leaf of ``value`` is traced, also under a batched level (vmap inside grad)."""
    return any(carries_gradient(leaf) for leaf in leaves(value))


def _batched_inside(args: tuple[Any, ...]) -> bool:
    """Whether a batched value among ``args`` (at any key path) is of a vmap running inside
    every transform that traces one of them: the batching level comes first."""
    return type(find_top([leaf for a in args for leaf in leaves(a)], _TRACED_OR_BATCHED)) in PER_EXAMPLE


_TRACED_OR_BATCHED = frozenset(DIFFERENTIATING | PER_EXAMPLE)


def _arenas_of(values: tuple[Any, ...]) -> set[Arena]:
    return {leaf.arena for value in values for leaf in leaves(value) if type(leaf) in DIFFERENTIATING}


def _origin(found: Interpreted, mark: int) -> str:
    """What the closure held that led to ``found``: the first node before ``mark`` (the
    call's start) among its ancestors, with its key path when it has one."""
    nodes, paths = found.arena.nodes, found.arena.key_paths
    todo, seen = [found.index], set()
    while todo:
        i = todo.pop()
        if i < mark:
            where = f"{paths[i]}, " if i in paths else ""
            return f"{where}node {i} ({nodes[i].op.name}, {describe(nodes[i].value)})"
        if i not in seen:
            seen.add(i)
            todo.extend(nodes[i].parents)
    return f"node {found.index} ({describe(found.value)})"


def _captured(value: Any, arena: Arena) -> Interpreted | None:
    """A handle in ``value`` (a custom node's output or residuals, computed from its
    arguments' plain values) of ``arena`` or of an arena inside it: one the function's
    closure reached. Handles of the arenas enclosing ``arena`` are what nested levels
    legitimately carry."""
    outer = arena.enclosing
    for leaf in leaves(value):
        while type(leaf) in DIFFERENTIATING:  # through every level: an enclosing level's value may hold one
            if not any(leaf.arena is a for a in outer):
                return leaf
            leaf = leaf.value
        if is_container(leaf):
            found = _captured(leaf, arena)
            if found is not None:
                return found
    return None


def _fwd_result(name: str, result: Any) -> tuple[Any, Any]:
    if not (isinstance(result, tuple) and len(result) == 2):
        msg = f"custom_vjp {name}: fwd must return (output, residuals), got {type(result).__name__}"
        raise StructureError(msg)
    return result[0], result[1]


def _to_both(g: Any, ans: Any, rule_output: Any, closure_output: Any) -> Any:
    return g


def _to_both_again(g: Any, ans: Any, rule_output: Any, closure_output: Any) -> Any:
    # The sweep merges structured cotangents in place: each parent gets its own.
    return g.copy() if isinstance(g, StructCotangent) else g


# Where a custom function's two paths meet (see custom_vjp._through_closure): the value of
# the node its rule answers for, and the cotangent passed to that node and to the output
# of fwd's closed-over path alike.
_THROUGH_CLOSURE = Op(
    "custom_vjp_closure",
    lambda rule_output, closure_output: rule_output,
    (_to_both, _to_both_again),
    "custom",
    traits=frozenset({MADE_OF_OPS}),
)


def _holds(value: Any, arena: Arena) -> bool:
    """Whether a handle of ``arena`` is in ``value``, at any level."""
    for leaf in leaves(value):
        while type(leaf) in DIFFERENTIATING:
            if leaf.arena is arena:
                return True
            leaf = leaf.value
    return False


_CLOSED_OVER = (
    "custom_vjp {name}: its fwd or bwd closes over a traced value of the computation it is called in, and is "
    "differentiated again (forward mode, or a derivative of a gradient), which needs that value as an argument: "
    "pass it to {name} and return its cotangent from bwd (a bwd reading it from fwd's residuals works in forward "
    "mode too)"
)


def _own_level_lowered(name: str, level: Arena, traced_g: bool, cotangents: tuple[Any, ...]) -> tuple[Any, ...]:
    """``bwd``'s cotangents in a sweep that does not record the node's own arena ``level``.
    A bwd closing over values traced at that level computed with their handles: with a
    plain cotangent only their values count; with a traced one (forward mode, a derivative
    of the gradient) their handles would be carried out of the sweep, and are refused."""
    if not any(_holds(c, level) for c in cotangents):
        return cotangents
    if not traced_g:
        return tuple(lower(c, level) for c in cotangents)
    raise NoGradientError(_CLOSED_OVER.format(name=name))


class _Residuals:
    """Where a custom op's forward leaves its residuals for its backward (the node's
    argument 0, with no gradient of its own). The op's joint rule runs ``bwd`` once for all
    the inputs the sweep asks about."""

    __slots__ = ("given", "level", "value")

    def __init__(self, given: Any = None, value: Any = None) -> None:
        self.value: Any = value
        # An output fwd has already computed (see custom_vjp._through_closure), or None.
        self.given: Any = given
        # The arena the node is recorded in, once it is.
        self.level: Arena | None = None


def _fitted(name: str, k: int, ct: Any, value: Any) -> Any:
    """``bwd``'s cotangent for an array argument, checked against the argument: a
    broadcast cotangent is summed back to the argument's shape, anything else that does
    not fit is an error rather than a gradient of the wrong shape."""
    if type(ct) in INTERPRETED:  # traced by an enclosing transform, or batched
        ct_value, shape = unwrap(ct), np.shape(value)
    else:
        ct = ct_value = np.asarray(ct)
        shape = np.shape(value)
    if np.result_type(ct_value).kind not in "biufc":
        msg = f"custom_vjp {name}: bwd's cotangent {k} must be numeric, got dtype {np.result_type(ct_value)}"
        raise DtypeError(msg)
    if np.iscomplexobj(ct_value) and not np.iscomplexobj(value):
        msg = (
            f"custom_vjp {name}: bwd's cotangent {k} is complex ({np.result_type(ct_value)}) but its argument is real "
            f"({np.result_type(value)}): return the cotangent of a real argument as a real array"
        )
        raise DtypeError(msg)
    if np.shape(ct_value) == shape:
        return ct if type(ct) in INTERPRETED else fit_cotangent(ct, _array(value))
    try:
        broadcast = np.broadcast_shapes(np.shape(ct_value), shape) == np.shape(ct_value)
    except ValueError:
        broadcast = False
    if not broadcast:
        msg = f"custom_vjp {name}: bwd's cotangent {k} has shape {np.shape(ct_value)}, its argument {shape}"
        raise ShapeError(msg)  # (check_grads names the rule: see nodegrad.engine.rule_errors)
    fitted = unbroadcast(ct, shape)
    return fitted if type(fitted) in INTERPRETED else fit_cotangent(fitted, _array(value))


def _array(value: Any) -> Any:
    """``value`` as an array to fit a cotangent to (a batched value stands for its own)."""
    return value if type(value) in PER_EXAMPLE else np.asarray(value)


class custom_vjp:  # noqa: N801  (used as a decorator, like jax.custom_vjp)
    """Give a function a gradient rule of your own.

    Decorate ``f``, then call ``f.defvjp(fwd, bwd)``: ``fwd(*args)`` returns
    ``(output, residuals)``; ``bwd(residuals, g)`` returns a tuple with one cotangent per
    argument (``None`` for "no gradient"), each shaped like its argument -- records,
    dicts and lists included. ``f`` runs as a single node; its body is not traced.

    ``bwd`` runs once per sweep. When the sweep records itself (second derivatives,
    ``hvp``, ``hessian``), ``fwd`` runs again on the traced inputs, so a ``bwd`` written with
    nodegrad ops (or numpy calls on traced values) is differentiated again; one that leaves
    nodegrad (``np.asarray``, ``float()``) raises :class:`~nodegrad.errors.NoGradientError`.

    Parameters
    ----------
    fun : callable
        The function whose gradient rule you give; it computes the forward value.

    Returns
    -------
    callable
        Called like ``fun``, with a ``defvjp(fwd, bwd)`` method to set the rule (until
        then, ``fun``'s own body is differentiated).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> @ng.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (np.clip(g, -1.0, 1.0),))
    >>> ng.grad(lambda x: ng.sum(clip_gradient(x) * 5.0))(np.array([1.0, 2.0]))
    array([1., 1.])
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        if not callable(fun):
            msg = f"custom_vjp needs a function, got {type(fun).__name__}"
            raise ArgumentError(msg)
        self.fun = fun
        self._op: Op | None = None
        # How to make this object again when unpickled: its function and rules, or the
        # call that made it (checkpoint's rules are closures of its own).
        self._rules: tuple[Callable[..., Any], Callable[..., Any]] | None = None
        self._remake: tuple[Any, tuple[Any, ...], dict[str, Any]] | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward ``fwd(*args) -> (output, residuals)`` and the backward
        ``bwd(residuals, g) -> tuple of cotangents, one per argument``."""
        name = getattr(self.fun, "__qualname__", "custom_vjp")
        for role, given in (("fwd", fwd), ("bwd", bwd)):
            if not callable(given):
                msg = f"custom_vjp {name}: defvjp needs a function for {role}, got {type(given).__name__}"
                raise ArgumentError(msg)

        def forward(box: _Residuals, *values: Any) -> Any:
            if box.given is not None:
                out, box.given = box.given, None
                return out
            out, box.value = _fwd_result(name, fwd(*values))
            return out

        def backward(g: Any, ans: Any, box: _Residuals, values: tuple[Any, ...]) -> tuple[Any, ...]:
            recording = any(type(v) in DIFFERENTIATING for v in values)
            residuals = box.value
            out = unwrap(ans)
            shaped_g = materialize(g, out, "", [], True) if is_container(out) else g
            try:
                if recording:
                    # The sweep is recording itself (higher order): run fwd again on the traced
                    # inputs, so the residuals, and bwd's answer, depend on them as they should.
                    _, residuals = fwd(*(view(v) if type(v) in DIFFERENTIATING else v for v in values))
                cotangents = bwd(residuals, shaped_g)
            except LeakedTracerError as exc:  # a closure's handle, of a level that has returned
                raise NoGradientError(_CLOSED_OVER.format(name=name)) from exc
            if not isinstance(cotangents, tuple) or len(cotangents) != len(values):
                count = len(cotangents) if isinstance(cotangents, tuple) else type(cotangents).__name__
                msg = f"custom_vjp {name}: bwd must return a tuple of {len(values)} cotangents, got {count}"
                raise StructureError(msg)
            if box.level is not None and not any(type(v) in DIFFERENTIATING and v.arena is box.level for v in values):
                cotangents = _own_level_lowered(name, box.level, _has_traced(shaped_g), cotangents)
            return cotangents

        def fitted(k: int, ct: Any, values: tuple[Any, ...]) -> Any:
            if ct is None:
                return None
            value = unwrap(values[k - 1])
            if is_container(value):
                return cotangent_for(ct, value, f"{name} argument {k - 1}")
            return _fitted(name, k - 1, ct, value)

        def rule(wanted: tuple[int, ...], g: Any, ans: Any, box: _Residuals, *values: Any) -> tuple[Any, ...]:
            cotangents = backward(g, ans, box, values)  # bwd runs once for every input asked about
            return tuple(fitted(k, cotangents[k - 1], values) for k in wanted)

        def one(k: int, g: Any, ans: Any, *args: Any) -> Any:
            return rule((k,), g, ans, *args)[0]

        self._op = Op(
            f"custom_vjp:{name}", forward, same_rule_for_all(one), "custom", joint=rule, traits=frozenset({MADE_OF_OPS})
        )
        self._rules = (fwd, bwd)

    def __reduce__(self) -> Any:
        # Pickled by its name where its module holds it (decorated at module level), else as
        # what makes it (module-level functions pickle; the op, a closure, not).
        return reachable_name(self) or (rebuild, self._remake or (_with_rules, (self.fun, self._rules), {}))

    @reports_unwalkable("custom_vjp")
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = self._positional(args, kwargs)
        if self._op is None or not any(_has_traced(a) for a in args):
            return self.fun(*args)
        if _batched_inside(args):
            # A vmap inside the transforms that trace the arguments: each example is one
            # call, with a node (and residuals) of its own, so the rule answers for it.
            return per_example_call(self, args, {})
        packed = tuple(pack(a) for a in args)
        marks = [(arena, len(arena)) for arena in {*entered_arenas(), *_arenas_of(packed)}]
        box = _Residuals()
        node = record(self._op, box, *packed)
        if type(node) not in DIFFERENTIATING:
            return node
        box.level = node.arena
        captured = _captured(node.value, node.arena)
        if captured is None:
            captured = _captured(box.value, node.arena)
        if captured is None:
            return view(node)
        # The function closes over a value traced at its own level: computed from the
        # arguments' plain values, its output still depends on that value, which the rule
        # (of the arguments only) cannot answer for. The call is made again below.
        level = node.arena
        for arena, size in marks:  # what the first call recorded is undone
            arena.truncate(size)
        if self._remake is not None and self._remake[0] is checkpoint:
            return self.fun(*args)  # recorded as it is: right gradients, nothing rematerialised
        return self._through_closure(level, packed)

    def _through_closure(self, level: Arena, packed: tuple[Any, ...]) -> Any:
        """The call of a function closing over values traced at ``level``: the rule gives the
        arguments' cotangents, and the closed-over values are differentiated through
        ``fwd`` as written (run once on the arguments' values, so their paths are recorded
        with the arguments as constants); the two paths meet in one node."""
        assert self._op is not None and self._rules is not None
        name = getattr(self.fun, "__qualname__", "custom_vjp")
        out, residuals = _fwd_result(name, self._rules[0](*(lower(p, level) for p in packed)))
        box = _Residuals(given=lower(out, level), value=lower(residuals, level))
        node = record(self._op, box, *packed)
        box.level = level
        return view(record(_THROUGH_CLOSURE, node, pack(out)))

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Keyword arguments bound to their positions (as JAX does): ``fwd`` and ``bwd``
        see every argument by position, and each gets its cotangent there."""
        name = getattr(self.fun, "__qualname__", repr(self.fun))
        try:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            msg = f"custom_vjp {name}: {exc}"
            raise ArgumentError(msg) from exc
        bound.apply_defaults()
        if bound.kwargs:
            msg = f"custom_vjp {name}: keyword-only arguments {sorted(bound.kwargs)} cannot be passed by position"
            raise ArgumentError(msg)
        return tuple(bound.args)


def checkpoint(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``fun`` store nothing for the backward pass: its forward runs again when the
    gradient is needed (rematerialisation), trading compute for memory.

    The function is recorded as one node holding only its inputs and output.

    Parameters
    ----------
    fun : callable
        Any function of arrays or structures that nodegrad can differentiate.

    Returns
    -------
    callable
        Called like ``fun``, with the same value and gradients.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> block = ng.checkpoint(lambda x: ng.sum(ng.tanh(ng.tanh(x))))
    >>> g = ng.grad(block)(np.zeros(3))
    >>> g
    array([1., 1., 1.])
    """

    def fwd(*args: Any) -> tuple[Any, Any]:
        return fun(*args), args

    def bwd(args: tuple[Any, ...], g: Any) -> tuple[Any, ...]:
        # Arguments or cotangent traced by an enclosing transform (higher order, jvp) make
        # this vjp a nested one: its sweep records into that transform's arena.
        _, back = vjp(fun, *args)
        return back(g)

    wrapped = custom_vjp(fun)
    wrapped.defvjp(fwd, bwd)
    wrapped._remake = (checkpoint, (fun,), {})
    return wrapped


def stop_gradient(value: Any) -> Any:
    """``value`` with its gradient cut: traced values become their plain values (inside
    records, dicts and lists too), so nothing flows back through them, in any enclosing
    transform either.

    Parameters
    ----------
    value : any
        A traced or plain value, or any structure of them.

    Returns
    -------
    any
        ``value`` with every traced value replaced by its plain value.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: x * ng.stop_gradient(x))(3.0)
    3.0
    """
    return _plain_values(value)


@reports_unwalkable("stop_gradient")
def _plain_values(value: Any) -> Any:
    return map_with_paths(lambda _, leaf: plain(leaf), value)


def _with_rules(fun: Callable[..., Any], rules: tuple[Any, Any] | None) -> custom_vjp:
    """A ``custom_vjp`` of ``fun`` with the rules ``(fwd, bwd)``, if any: how one is unpickled."""
    made = custom_vjp(fun)
    if rules is not None:
        made.defvjp(*rules)
    return made
