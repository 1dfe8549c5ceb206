"""Finding where a NaN or an Inf comes from.

An arena made with ``check_finite=True`` (or while :func:`debug_nans` is active) keeps its
nodes in a :class:`CheckedNodes` list: appending a node also notes the user's source line
and checks the forward value. Its sweep runs over :class:`CheckedSweep`, which checks
every cotangent a rule returns. The first non-finite value raises :class:`NonFiniteError`
naming the op, the node, its input shapes, key paths and the line that recorded it.

Arenas made without checking use a plain list and the plain sweep: the check costs
nothing when it is off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.structure import differentiable_leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import NonFiniteError, user_location

__all__ = ["CheckedNodes", "CheckedSweep", "debug_nans"]


class _Flag:
    """Whether new arenas check for non-finite values (one flag per thread)."""

    def __init__(self) -> None:
        import threading

        self._local = threading.local()

    @property
    def on(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def enter(self) -> None:
        self._local.depth = getattr(self._local, "depth", 0) + 1

    def leave(self) -> None:
        self._local.depth -= 1


CHECKING = _Flag()


@contextlib.contextmanager
def debug_nans() -> Iterator[None]:
    """Check every forward value and cotangent for NaN and Inf while active.

    Arenas created inside the block (including those ``grad`` and ``value_and_grad``
    make) raise :class:`~nodegrad.errors.NonFiniteError` at the first node whose value or
    cotangent is not finite, naming the op, the node, the input shapes, key paths and the
    line of your code that recorded it.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> with ng.debug_nans():
    ...     ng.grad(lambda x: ng.sum(ng.log(x)))(np.array([1.0, -1.0]))
    Traceback (most recent call last):
    ...
    nodegrad.errors.NonFiniteError: log (node 1) produced a non-finite value ...
    """
    CHECKING.enter()
    try:
        # numpy's own floating-point warnings would only repeat, less precisely, what the
        # check reports.
        with np.errstate(all="ignore"):
            yield
    finally:
        CHECKING.leave()


def _finite(value: Any) -> bool:
    # Nested transforms: a value may be a handle of an enclosing arena; check what it holds.
    value = unwrap(value)
    if isinstance(value, np.ndarray | np.generic) and value.dtype.kind in "fc":
        return bool(np.isfinite(value).all())
    if isinstance(value, float | complex):
        return bool(np.isfinite(value))
    return True


def _part(value: Any) -> str:
    """Where a complex value is not finite: its real part, its imaginary part, or both."""
    value = np.asarray(unwrap(value))
    if value.dtype.kind != "c":
        return ""
    real, imag = not np.isfinite(value.real).all(), not np.isfinite(value.imag).all()
    return (
        " (in the real and imaginary parts)"
        if real and imag
        else " (in the real part)"
        if real
        else " (in the imaginary part)"
    )


def _constant_culprits(args: tuple[Any, ...], argnums: tuple[int, ...]) -> list[int]:
    """Positions of the op's inputs that are constants here (not traced) and not finite."""
    return [
        k
        for k, a in enumerate(args)
        if k not in argnums and isinstance(unwrap(a), np.ndarray | np.generic | float | complex) and not _finite(a)
    ]


def _shapes(args: tuple[Any, ...]) -> str:
    described = [f"{a.dtype}{list(a.shape)}" for a in args if isinstance(a, np.ndarray | np.generic)]
    return ", ".join(described) or "no array inputs"


# How many nodes a search for the key paths behind an error looks at, at most.
_ANCESTOR_LIMIT = 10_000

# Ops whose value is not finite outside a domain: the ones a where usually guards.
_DOMAIN_LIMITED = frozenset(
    {"log", "log2", "log10", "log1p", "sqrt", "power", "divide", "reciprocal", "arcsin", "arccos", "arctanh"}
)


class CheckedNodes(list):
    """An arena's node list that notes each node's source line and checks its value."""

    def __init__(self, arena: Any) -> None:
        super().__init__()
        self.arena = arena
        self.locations: list[str] = []

    def append(self, node: Any) -> None:
        self.locations.append(user_location())
        super().append(node)
        op, parents, argnums, args, value = node
        if not parents:
            self._check_leaf(value)
        elif not _finite(value):
            index = len(self) - 1
            constants = _constant_culprits(args, argnums)
            origin = (
                f"; its input {constants[0]} is not finite and is a constant here (not a differentiated argument: "
                f"an argument outside argnums, or an array the function closes over)"
                if constants
                else self.paths_of(parents)
            )
            msg = (
                f"{op.name} (node {index}) produced a non-finite value{_part(value)} in the forward pass; "
                f"inputs {_shapes(args)}{origin} [recorded at {self.locations[index]}]"
            )
            if op.name in _DOMAIN_LIMITED:
                msg += (
                    ". If a where discards these entries later, it is too late for the gradient: mask the "
                    "input instead, where(m, f(where(m, x, safe_value)), other)"
                )
            del self[index:]  # the arena stays as it was before the op
            raise NonFiniteError(msg)

    def _check_leaf(self, value: Any) -> None:
        """A leaf (parameter or input) that already holds a NaN is the origin itself: say so
        rather than blame the first op that reads it."""
        index = len(self) - 1
        root = self.arena.path_of(index)
        # Fields marked static are data the gradient never reaches: not checked.
        for path, leaf in differentiable_leaves(value):
            if not _finite(leaf):
                msg = (
                    f"the leaf {root}{path} (node {index}) holds a non-finite value{_part(leaf)} "
                    f"[recorded at {self.locations[index]}]"
                )
                del self[index:]
                raise NonFiniteError(msg)

    def check_all(self, nodes: Any, locations: Any, whose: str) -> None:
        """Check the values of nodes recorded without checking (merged in, or recorded before
        checking was turned on); raise at the first non-finite one, before any is added."""
        for i, (op, parents, _, args, value) in enumerate(nodes):
            if parents and not _finite(value):
                where = locations[i] if locations else "an arena that did not check"
                msg = (
                    f"{op.name} (node {i} of {whose}) holds a non-finite value; inputs {_shapes(args)} "
                    f"[recorded at {where}]"
                )
                raise NonFiniteError(msg)

    def adopt(self, node: Any, location: str) -> None:
        """Append a node recorded elsewhere (``Arena.merge``), keeping its source line."""
        self.locations.append(location)
        super().append(node)

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        del self.locations[len(self) :]

    def for_sweep(self) -> CheckedSweep:
        """These nodes as the sweep reads them: every cotangent a rule returns is checked."""
        return CheckedSweep(self)

    def paths_of(self, indices: Any) -> str:
        """The key paths the inputs ``indices`` were computed from: each input's own path,
        else the nearest named ancestors' (``sqrt(p.w * 2)`` still names ``.w``). Runs
        only when an error is being written."""
        paths = self.arena.key_paths
        found: list[str] = []
        seen: set[int] = set()
        frontier = list(indices)  # breadth first, so nearer inputs come first
        for i in frontier:
            if len(seen) >= _ANCESTOR_LIMIT:
                break
            if i in seen:
                continue
            seen.add(i)
            if i in paths:
                found.append(paths[i])
            else:
                frontier.extend(self[i][1])  # the node's parents
        unique = list(dict.fromkeys(found))
        return f" from {', '.join(unique)}" if unique else ""


class CheckedSweep:
    """The arena's nodes as the sweep sees them when it checks every cotangent."""

    def __init__(self, nodes: CheckedNodes) -> None:
        self._nodes = nodes

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        op, parents, argnums, args, value = self._nodes[i]
        if not parents:
            return op, parents, argnums, args, value
        return _CheckedRules(op, i, self._nodes), parents, argnums, args, value

    def __setitem__(self, i: int, node: tuple[Any, ...]) -> None:
        # The sweep releasing a node's values: the node keeps its own op, not the wrapper.
        self._nodes[i] = (self._nodes[i][0], *node[1:])


class _CheckedRules:
    def __init__(self, op: Any, index: int, nodes: CheckedNodes) -> None:
        self.name = op.name
        self.broadcasts = op.broadcasts
        self._op = op
        self._index = index
        self._nodes = nodes

    @property
    def vjps(self) -> _CheckedRules:
        return self

    @property
    def joint(self) -> Any:
        joint = self._op.joint
        if joint is None:
            return None

        def checked(wanted: tuple[int, ...], g: Any, ans: Any, *args: Any) -> Any:
            answers = joint(wanted, g, ans, *args)
            for k, out in zip(wanted, answers, strict=True):
                self._check(k, g, out)
            return answers

        return checked

    def __getitem__(self, k: int) -> Any:
        rule = self._op.vjps[k]

        def checked(g: Any, ans: Any, *args: Any) -> Any:
            out = rule(g, ans, *args)
            self._check(k, g, out)
            return out

        return checked

    def _check(self, k: int, g: Any, out: Any) -> None:
        """Raise for a non-finite cotangent ``out`` of input ``k`` made from a finite ``g``."""
        if out is not None and not _finite(out) and _finite(g):
            raise NonFiniteError(self._describe(k, g, out))

    def _describe(self, k: int, g: Any, out: Any) -> str:
        nodes, i = self._nodes, self._index
        _, parents, argnums, args, _ = nodes[i]
        parent = parents[argnums.index(k)]
        msg = (
            f"{self.name} (node {i}) produced a non-finite gradient{_part(out)} for its input {k} (node {parent}) "
            f"in the backward pass, from a finite cotangent; inputs {_shapes(args)}{nodes.paths_of(parents)} "
            f"[recorded at {nodes.locations[i]}]"
        )
        return msg + _where_hint(nodes, i, g, out)


def _where_hint(nodes: CheckedNodes, i: int, g: Any, out: Any) -> str:
    """Explain the double-where trap when node ``i``'s input is masked out further on.

    ``where(m, f(x), 0)`` sends a zero cotangent to ``f`` where ``m`` is false, but
    ``0 * f'(x)`` is still NaN where ``f'(x)`` is infinite (``sqrt``, ``log`` at 0). The
    symptom is a non-finite gradient exactly where the incoming cotangent is zero; the
    cause is usually a ``where`` downstream of node ``i``, found by a forward walk.
    """
    try:
        out, g = unwrap(out), unwrap(g)  # nested transforms: what the handles hold
        bad = ~np.isfinite(np.asarray(out)) & (np.broadcast_to(np.asarray(g), np.shape(out)) == 0)
    except ValueError:  # shapes that do not line up: no hint rather than a wrong one
        return ""
    if not bad.any():
        return ""
    fix = "Mask the input, not only the output: where(m, f(where(m, x, safe_value)), other)"
    downstream = {i}
    for j in range(i + 1, len(nodes)):
        op, parents, _, _, _ = nodes[j]
        if not any(p in downstream for p in parents):
            continue
        downstream.add(j)
        if op.name == "where":
            return (
                f". The cotangent reaching node {i} is zero where the gradient is not finite: node {i} feeds "
                f"the where at node {j} [recorded at {nodes.locations[j]}], which masks the output but not the "
                f"input, so the unchosen branch is still differentiated where its derivative is infinite. {fix}"
            )
    return (
        f". The cotangent reaching node {i} is zero where the gradient is not finite (0 times an infinite "
        f"derivative): the value is discarded further on, but its input lies where the derivative is "
        f"infinite. {fix}"
    )


# The engine creates arenas and runs sweeps; it reaches this module only through its sockets.
PLUGINS.checking = lambda: CHECKING.on
PLUGINS.checked_nodes = CheckedNodes
