"""The op registry: one entry per op, holding its forward and its VJP rules side by side.

A VJP rule for input ``k`` of an op is a function ``rule(g, ans, *args)`` returning the
cotangent for that input: ``g`` is the cotangent of the op's output, ``ans`` its forward
value and ``args`` exactly the arguments the forward received (static ones included).
A rule of ``None`` means the input carries no gradient (indices, masks, static
parameters). A rule may return a cotangent whose shape is the *broadcast* shape; ops
flagged ``broadcasts=True`` have their cotangents reduced back to each input's shape in
one central place (:func:`nodegrad.engine.sweep.fit_cotangent`), so no rule unbroadcasts by hand.

Rules are written with numpy functions and operators only, so that they also run on
traced values when the sweep records itself (higher-order derivatives).
"""

from __future__ import annotations

import dis
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from nodegrad.engine.traced import Traced
from nodegrad.errors import NoGradientError

__all__ = [
    "ANS",
    "BATCH_RULES",
    "ELEMENTWISE",
    "INPUT",
    "MADE_OF_OPS",
    "PARAM",
    "REGISTRY",
    "RULE_TRAITS",
    "Op",
    "Rule",
    "defbatch",
    "defjoint",
    "defop",
    "defrows",
    "rule_reads",
    "same_rule_for_all",
]

Rule = Callable[..., Any]

#: The traits an op may have: what an interpreter needs to know of it besides its rules.
#: ``ELEMENTWISE``: applied entry by entry with numpy broadcasting (its result has the
#: broadcast shape of its arguments, and the dtype its forward gives on one entry of each);
#: ``MADE_OF_OPS``: its forward is made of other ops, which an interpreter runs one by one
#: (a user's ``custom_vjp``, a record's field).
ELEMENTWISE = "elementwise"
MADE_OF_OPS = "made of ops"

#: The batching interpreter's rules (:mod:`nodegrad.ops.batching`), by op name:
#: ``rule(op, batched, size, *args)``, given where the op is defined (``defop(batch=...)``,
#: :func:`defbatch`). An op with none runs once per example.
BATCH_RULES: dict[str, Callable[..., Any]] = {}

#: The batching rules that an op given them has a trait for (the rule of every elementwise
#: op, say): ``defop(batch=rule)`` gives the op the trait too. Filled by the batching layer.
RULE_TRAITS: dict[Callable[..., Any], str] = {}


@attrs.frozen(slots=True, repr=False)
class Op:
    """One op kind: its name, forward function and one VJP rule per input position.

    ``first_order`` marks rules that are linear in the cotangent but read the inputs only
    as numbers (a decomposition numpy computes, say): forward mode (``jvp``) runs them on
    the recorded values, and a second derivative raises an error naming the op.
    """

    name: str
    forward: Callable[..., Any]
    vjps: Sequence[Rule | None]
    family: str
    broadcasts: bool = False
    doc: str = ""
    first_order: bool = False
    #: For each rule, what it may read of its node: :data:`ANS` and the argument positions
    #: (``None``: anything). A value no rule of its node reads need not be kept for the
    #: sweep (:func:`nodegrad.engine.record.lean_node`); its shape and dtype always are.
    reads: tuple[frozenset[int], ...] | None = None
    #: One rule for the inputs that share backward work (see :func:`defjoint`), or ``None``.
    #: The sweep calls it once per node; ``vjps`` then holds its per-input views.
    joint: Callable[..., tuple[Any, ...]] | None = None
    #: What interpreters need to know of the op (:data:`ELEMENTWISE`, :data:`MADE_OF_OPS`);
    #: their rules for it are in their own tables (:data:`BATCH_RULES`, eval_shape's).
    traits: frozenset[str] = frozenset()
    #: For a row gather (an op whose output is rows of its input 0): ``rows(*args)``, the
    #: flat positions of the rows it reads, or ``None`` where these arguments make it
    #: something else. Row-sparse gradients are built from it (:mod:`nodegrad.engine.rows`).
    rows: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


REGISTRY: dict[str, Op] = {}

#: In :attr:`Op.reads`, the position that stands for the rule's ``ans``.
ANS = -1


def rule_reads(rule: Rule | None, leading: int = 2) -> frozenset[int] | None:
    """What ``rule(g, ans, *args)`` may read: :data:`ANS` and the positions of the
    arguments whose names its code loads, or ``None`` (anything) when that cannot be seen
    from its code (``*args``, a closure over a parameter, a wrapped or builtin callable).

    Read from the bytecode, so it cannot go stale: a parameter the code never loads is
    not read, whatever the rule calls. A parameter passed on to a helper counts as read,
    even if the helper uses only its shape. ``leading`` counts the parameters before the
    arguments, ``ans`` last among them (3 for a joint rule's ``wanted, g, ans``).
    """
    if rule is None:
        return frozenset()
    if not inspect.isfunction(rule) or hasattr(rule, "__wrapped__"):
        return None  # a bound method, a partial, a builtin, a wrapper: its code does not show
    code = rule.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    params = code.co_varnames[: code.co_argcount]
    if len(params) < leading or any(p in code.co_cellvars for p in params):
        return None
    loaded: set[str] = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname.startswith("LOAD_FAST"):
            argval = instruction.argval
            loaded.update(argval if isinstance(argval, tuple) else (argval,))
    read = {k for k, p in enumerate(params[leading:]) if p in loaded}
    if params[leading - 1] in loaded:
        read.add(ANS)
    return frozenset(read)


def _reads_of(rules: Sequence[Rule | None]) -> tuple[frozenset[int], ...] | None:
    if isinstance(rules, _AllPositions):
        return None
    found = [rule_reads(rule) for rule in rules]
    if any(r is None for r in found):
        return None
    return tuple(r for r in found if r is not None)


# Leaves are nodes too; their pseudo-ops have no inputs and so no rules.
PARAM = Op("param", lambda v: v, (), "leaf", doc="a differentiable leaf: a parameter")
INPUT = Op("input", lambda v: v, (), "leaf", doc="a leaf holding data")


def defop(
    name: str,
    forward: Callable[..., Any],
    *vjps: Rule | None,
    family: str,
    broadcasts: bool = False,
    doc: str = "",
    first_order: bool = False,
    batch: Callable[..., Any] | None = None,
) -> Op:
    """Register an op and return it. Names are unique across all families. ``batch`` is
    its batching rule (see :mod:`nodegrad.ops.batching`), kept in :data:`BATCH_RULES`."""
    if name in REGISTRY:
        msg = f"op {name!r} is already registered"
        raise ValueError(msg)
    if len(vjps) == 1 and isinstance(vjps[0], _AllPositions):
        rules: Sequence[Rule | None] = vjps[0]
    else:
        rules = tuple(vjps)
    reads = _reads_of(rules)
    if first_order:
        rules = tuple(_first_order_only(name, rule) for rule in rules)
    op = Op(name, forward, rules, family, broadcasts, doc, first_order, reads, None, _traits_and_rule(name, batch))
    REGISTRY[name] = op
    return op


def _traits_and_rule(name: str, batch: Callable[..., Any] | None) -> frozenset[str]:
    """Keep the batching rule of the op ``name`` in :data:`BATCH_RULES`; the op's traits
    (that of its rule, where the rule is a trait's: :data:`RULE_TRAITS`)."""
    if batch is None:
        return frozenset()
    BATCH_RULES[name] = batch
    trait = RULE_TRAITS.get(batch)
    return frozenset() if trait is None else frozenset({trait})


def defbatch(op: Op, rule: Callable[..., Any]) -> Op:
    """Give the registered ``op`` its batching rule (for an op defined before its rule
    can be written, or by a helper that registers a family of ops); returns ``op``."""
    BATCH_RULES[op.name] = rule
    return op


def defrows(op: Op, rows: Callable[..., Any]) -> Op:
    """Mark the registered ``op`` as a row gather: ``rows(*args)`` gives the flat
    positions of the rows of its input 0 it reads (``None`` for arguments that make it
    something else). Returns ``op``."""
    object.__setattr__(op, "rows", rows)
    return op


def _first_order_only(op_name: str, rule: Rule | None) -> Rule | None:
    """``rule``, refusing to run on traced inputs: a first-order rule reads them only as
    numbers, so differentiating it again would silently treat its decomposition as
    constant. A traced cotangent alone is fine (forward mode): the rule is linear in it."""
    if rule is None:
        return None

    @functools.wraps(rule)
    def first_order_rule(g: Any, ans: Any, *args: Any) -> Any:
        if type(ans) is Traced or any(type(a) is Traced for a in args):
            msg = (
                f"op {op_name!r} has a gradient for first derivatives only: forward mode (jvp) works through it, "
                "a second derivative does not"
            )
            raise NoGradientError(msg)
        return rule(g, ans, *args)

    return first_order_rule


class _AllPositions(Sequence[Rule]):
    """The VJP rules of a variadic op: ``rule(k, g, ans, *args)`` serves every position."""

    def __init__(self, rule: Callable[..., Any]) -> None:
        self._rule = rule
        self._cache: dict[int, Rule] = {}

    def __getitem__(self, k: Any) -> Any:
        bound = self._cache.get(k)
        if bound is None:
            rule = self._rule

            def bound(g: Any, ans: Any, *args: Any) -> Any:
                return rule(k, g, ans, *args)

            self._cache[k] = bound
        return bound

    def __len__(self) -> int:
        # Variadic: any position may be differentiable.
        return 1 << 30


def same_rule_for_all(rule: Callable[..., Any]) -> Any:
    """Wrap ``rule(k, g, ans, *args)`` as the VJP of every input of a variadic op."""
    return _AllPositions(rule)


def defjoint(
    name: str,
    forward: Callable[..., Any],
    rule: Callable[..., tuple[Any, ...]],
    positions: Sequence[int] | None,
    *,
    family: str,
    broadcasts: bool = False,
    doc: str = "",
    batch: Callable[..., Any] | None = None,
) -> Op:
    """Register an op whose inputs share backward work, with one rule for all of them.

    ``rule(wanted, g, ans, *args)`` returns a tuple holding the cotangent (or ``None``) of
    each argument position in ``wanted``, in that order: the positions the sweep needs at
    that node, so work for the others is never done, and work they share is done once
    (a solve shared by both inputs of ``solve``, say). ``positions`` lists the
    differentiable argument positions; ``None`` means every one (a variadic op).
    """
    if name in REGISTRY:
        msg = f"op {name!r} is already registered"
        raise ValueError(msg)
    rules: Sequence[Rule | None]
    if positions is None:
        rules = _AllPositions(lambda k, g, ans, *args: rule((k,), g, ans, *args)[0])
    else:
        rules = tuple(_one_of(rule, k) if k in positions else None for k in range(max(positions, default=-1) + 1))
    reads = rule_reads(rule, leading=3)
    every = None if reads is None or positions is None else tuple(reads for _ in rules)
    op = Op(name, forward, rules, family, broadcasts, doc, False, every, rule, _traits_and_rule(name, batch))
    REGISTRY[name] = op
    return op


def _one_of(rule: Callable[..., tuple[Any, ...]], k: int) -> Rule:
    """The rule of position ``k`` alone, out of a joint rule: for the code that asks one
    input at a time (the checks of nodegrad.debug, a test of one rule)."""

    def one(g: Any, ans: Any, *args: Any) -> Any:
        return rule((k,), g, ans, *args)[0]

    return one
