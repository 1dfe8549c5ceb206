"""What a mutation is, and how one is put into the op registry and taken out again.

A mutation replaces rules of one op -- a registry entry (:data:`nodegrad.engine.registry.REGISTRY`)
or a ``custom_vjp`` function's op -- with wrong ones. The op is frozen, so its fields are
set with ``object.__setattr__`` and always restored in a ``finally``: the same objects go
back, so a run leaves the registry exactly as it found it (:func:`registry_snapshot`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st

from nodegrad.engine.registry import REGISTRY, Op

__all__ = [
    "KINDS",
    "Mutation",
    "applied",
    "broadcast_flag",
    "changed_since",
    "joint_rule",
    "joint_without",
    "negate",
    "op_object",
    "register_custom",
    "registry_snapshot",
    "rules",
    "scale",
    "use",
]

#: The kinds of wrong rule the catalogue covers, in the order the report lists them.
KINDS = (
    "sign",
    "transpose",
    "broadcast",
    "factor",
    "dropped-term",
    "tie",
    "conjugate",
    "index",
    "second-order",
)

#: The fields a mutation may set: each is saved before and restored after. ``reads`` says
#: which values a rule reads; a mutated rule may read others, so it is set to ``None``
#: ("anything") while the mutation is in.
_FIELDS = ("vjps", "joint", "broadcasts", "reads")

Patch = Callable[[Op], dict[str, Any]]
Transform = Callable[[Callable[..., Any], int], Callable[..., Any]]

# custom_vjp functions of the catalogue, by their op's name ("custom_vjp:softplus").
_CUSTOM: dict[str, Op] = {}


@dataclass(frozen=True)
class Mutation:
    """One wrong rule and the test that should catch it.

    ``function`` is a small composite (3-6 ops) around the op, and ``inputs`` draws a tuple
    of its arguments (from :mod:`nodegrad.testing.strategies`); ``order`` is the order of
    derivative ``check_grads`` is asked to check (2 for a bug only second derivatives see).
    """

    id: str
    op: str
    kind: str
    family: str
    description: str
    patch: Patch
    function: Callable[..., Any]
    inputs: st.SearchStrategy[tuple[Any, ...]]
    order: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            msg = f"mutation {self.id}: unknown kind {self.kind!r} (one of {', '.join(KINDS)})"
            raise ValueError(msg)
        if self.order not in (1, 2):
            msg = f"mutation {self.id}: order must be 1 or 2, got {self.order!r}"
            raise ValueError(msg)


def register_custom(made: Any) -> str:
    """Make the ``custom_vjp`` function ``made`` (its rule already set) mutable by name;
    returns its op's name."""
    op = made._op
    _CUSTOM[op.name] = op
    return str(op.name)


def op_object(name: str) -> Op:
    """The op called ``name``: a registry entry, or a catalogue ``custom_vjp`` function's op."""
    op = REGISTRY.get(name) or _CUSTOM.get(name)
    if op is None:
        msg = f"no op named {name!r} in the registry or among the catalogue's custom_vjp functions"
        raise KeyError(msg)
    return op


@contextlib.contextmanager
def applied(mutation: Mutation) -> Iterator[Op]:
    """The mutation in place for the duration of the ``with`` block, then undone whatever
    happens inside it (the original objects put back)."""
    op = op_object(mutation.op)
    saved = {name: getattr(op, name) for name in _FIELDS}
    try:
        for name, value in mutation.patch(op).items():
            if name not in _FIELDS:
                msg = f"mutation {mutation.id}: cannot set {name!r} (only {', '.join(_FIELDS)})"
                raise ValueError(msg)
            object.__setattr__(op, name, value)
        object.__setattr__(op, "reads", None)
        yield op
    finally:
        for name, value in saved.items():
            object.__setattr__(op, name, value)


def registry_snapshot() -> dict[str, tuple[Any, ...]]:
    """Every op's mutable fields (the objects themselves), to compare by identity with
    :func:`changed_since`."""
    ops = {**REGISTRY, **_CUSTOM}
    return {name: tuple(getattr(op, field) for field in _FIELDS) for name, op in ops.items()}


def changed_since(snapshot: dict[str, tuple[Any, ...]]) -> list[str]:
    """The ops of ``snapshot`` whose fields are no longer the same objects (or that are
    gone). Ops registered since (a family imported on first use) are not changes."""
    now = registry_snapshot()
    return [
        name
        for name, fields in snapshot.items()
        if name not in now or any(a is not b for a, b in zip(fields, now[name], strict=True))
    ]


class _ReplacedAt(Sequence[Any]):
    """An op's rules with some positions replaced: the others are the original's (which
    may be a variadic op's endless sequence)."""

    def __init__(self, original: Sequence[Any], replaced: dict[int, Any] | Transform) -> None:
        self._original = original
        self._replaced = replaced

    def __getitem__(self, k: Any) -> Any:
        rule = self._original[k]
        if callable(self._replaced):
            return None if rule is None else self._replaced(rule, k)
        return self._replaced.get(k, rule)

    def __len__(self) -> int:
        return len(self._original)


def rules(transform: Transform, positions: Sequence[int] | None = None) -> Patch:
    """A patch replacing the rule of each input in ``positions`` (every input when
    ``None``) by ``transform(original_rule, position)``; a ``None`` result drops the rule."""

    def patch(op: Op) -> dict[str, Any]:
        if op.joint is not None:
            msg = f"op {op.name!r} has a joint rule: mutate it with joint_rule"
            raise ValueError(msg)
        if positions is None:
            return {"vjps": _ReplacedAt(op.vjps, transform)}
        return {"vjps": _ReplacedAt(op.vjps, {k: transform(op.vjps[k], k) for k in positions})}

    return patch


def joint_rule(transform: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Patch:
    """A patch replacing a joint rule by ``transform(original)``, and the per-input views
    of it in ``vjps`` by views of the new one (the sweep calls the joint rule, the checks
    of one input at a time its views)."""

    def patch(op: Op) -> dict[str, Any]:
        if op.joint is None:
            msg = f"op {op.name!r} has no joint rule: mutate it with rules"
            raise ValueError(msg)
        new = transform(op.joint)
        return {"joint": new, "vjps": _ReplacedAt(op.vjps, lambda _rule, k: _view(new, k))}

    return patch


def joint_without(dropped: int) -> Patch:
    """A patch of a joint rule that gives input ``dropped`` no cotangent (a zero): a dropped
    term of the rule."""

    def transform(joint: Callable[..., Any]) -> Callable[..., Any]:
        def rule(wanted: tuple[int, ...], g: Any, *rest: Any) -> tuple[Any, ...]:
            answers = joint(wanted, g, *rest)
            return tuple(c * 0.0 if k == dropped else c for k, c in zip(wanted, answers, strict=True))

        return rule

    return joint_rule(transform)


def _view(joint: Callable[..., Any], k: int) -> Callable[..., Any]:
    def one(g: Any, ans: Any, *args: Any) -> Any:
        return joint((k,), g, ans, *args)[0]

    return one


def negate(rule: Callable[..., Any], _k: int) -> Callable[..., Any]:
    """A rule transform: the rule with its sign flipped."""
    return lambda g, ans, *args: -rule(g, ans, *args)


def scale(factor: float) -> Transform:
    """A rule transform: the rule times ``factor``."""
    return lambda rule, _k: lambda g, ans, *args: rule(g, ans, *args) * factor


def use(new_rule: Callable[..., Any]) -> Transform:
    """A rule transform: ``new_rule`` in place of the original."""
    return lambda _rule, _k: new_rule


def broadcast_flag(flag: bool, also: Patch | None = None) -> Patch:
    """A patch setting the op's ``broadcasts`` flag (``False``: the sweep no longer reduces
    its cotangents to the inputs' shapes), with another patch's changes when given."""

    def patch(op: Op) -> dict[str, Any]:
        return {"broadcasts": flag, **(also(op) if also is not None else {})}

    return patch
