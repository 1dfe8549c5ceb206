"""The testing kit run against one mutation: each check before the mutation and with it.

Three checks, each feature-detected, since the kit grows: ``check_grads`` with its default
reference (central differences), ``check_grads(..., reference="complex_step")`` and
``check_consistency``. A check that fails on the correct op at an example (a false
positive) or cannot run there (an error of its own, such as complex arguments for the
complex step) is not asked about the mutation at that example.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import nodegrad as ng
import nodegrad.testing
from nodegrad.engine.structure import differentiable_leaves

from .core import Mutation, applied

__all__ = ["CHECKS", "Examined", "Kit", "Outcome", "examine"]

CHECKS = ("central", "complex_step", "consistency")

PASS, CAUGHT, CRASH, NOT_APPLICABLE, ABSENT = "pass", "caught", "crash", "n/a", "absent"


@dataclass(frozen=True)
class Outcome:
    """What one check made of a function: ``status`` (pass, caught, crash -- an error that
    does not name the op --, n/a or absent), whether the error ``named`` the op, and its
    first line (or why the check did not apply)."""

    status: str
    named: bool = False
    detail: str = ""
    culprit: str | None = None
    assertion: bool = False  # raised an AssertionError (a check's failure, not an error of its own)
    example: int | None = None  # the example it was found at
    mention: str = ""  # a later line of the error naming the op (why it was not blamed, say)


@dataclass
class Examined:
    """One mutation's results: per check, its outcome with the mutation in, and the false
    positives it gave and the examples it passed without; how far the mutated derivatives
    are from the true ones at each example (``None``: they could not be compared); the
    time taken."""

    mutation: Mutation
    outcomes: dict[str, Outcome]
    false_positives: dict[str, list[str]] = field(default_factory=dict)
    differences: list[float | None] = field(default_factory=list)
    seconds: float = 0.0
    #: Per check, the examples at which it passed on the correct op.
    passed_before: dict[str, list[int]] = field(default_factory=dict)

    @property
    def caught(self) -> bool:
        return any(o.status == CAUGHT for o in self.outcomes.values())

    @property
    def named(self) -> bool:
        return any(o.named for o in self.outcomes.values())

    @property
    def crashed(self) -> bool:
        return not self.caught and any(o.status == CRASH for o in self.outcomes.values())

    @property
    def first_example(self) -> int | None:
        """The first example at which some check caught the mutation."""
        found = [o.example for o in self.outcomes.values() if o.status == CAUGHT and o.example is not None]
        return min(found, default=None)

    @property
    def wrong_at_examples(self) -> bool | None:
        """Whether the mutated derivatives differ from the true ones at some example."""
        known = [d for d in self.differences if d is not None]
        if not known:
            return None
        return max(known) > 1e-9


class Kit:
    """The checks this version of nodegrad.testing has, found once."""

    def __init__(self) -> None:
        testing = nodegrad.testing
        self.check_grads = testing.check_grads
        self.complex_step = "reference" in inspect.signature(testing.check_grads).parameters
        self.check_consistency: Callable[..., Any] | None = getattr(testing, "check_consistency", None)
        self.gradient_error: type | None = getattr(testing, "GradientCheckError", None)
        self.consistency_error: type | None = getattr(testing, "ConsistencyError", None)

    def absent(self) -> dict[str, str]:
        """The checks this kit lacks, each with the reason."""
        missing = {}
        if not self.complex_step:
            missing["complex_step"] = "check_grads has no reference= keyword"
        if self.check_consistency is None:
            missing["consistency"] = "nodegrad.testing has no check_consistency"
        return missing

    def run(self, check: str, function: Callable[..., Any], example: tuple[Any, ...], order: int) -> None:
        """Run one check of ``function`` at ``example``; raises what the check raises."""
        if check == "central":
            self.check_grads(function, *example, order=order)
        elif check == "complex_step":
            self.check_grads(function, *example, order=order, reference="complex_step")
        elif self.check_consistency is not None:
            self.check_consistency(function, *example)

    def outcome(
        self, check: str, function: Callable[..., Any], example: tuple[Any, ...], mutation: Mutation
    ) -> Outcome:
        """The check's outcome on ``function`` at ``example``, judged for ``mutation``'s op."""
        with warnings.catch_warnings(record=True) as caught_warnings:
            warnings.simplefilter("always")
            with np.errstate(all="ignore"):
                try:
                    self.run(check, function, example, mutation.order)
                except Exception as exc:  # every error is an outcome here
                    return self.judged(exc, mutation.op)
        fallback = [str(w.message) for w in caught_warnings if issubclass(w.category, UserWarning)]
        return Outcome(PASS, detail=_first_line(fallback[0]) if fallback else "")

    def judged(self, exc: Exception, op: str) -> Outcome:
        """Caught (an AssertionError, or another error naming the op), named (the kit's
        own errors blaming the op), or a crash."""
        line = f"{type(exc).__name__}: {_first_line(str(exc))}"
        culprit = getattr(exc, "culprit", None)
        mention = next((m.strip() for m in str(exc).splitlines()[1:] if _names(m, op)), "")
        if isinstance(exc, AssertionError):
            named = (self.gradient_error is not None and isinstance(exc, self.gradient_error) and _is(culprit, op)) or (
                self.consistency_error is not None and isinstance(exc, self.consistency_error) and _names(str(exc), op)
            )
            return Outcome(CAUGHT, named, line, culprit, assertion=True, mention=_first_line(mention))
        return Outcome(CAUGHT if _names(str(exc), op) else CRASH, False, line, culprit, mention=_first_line(mention))


def _aliases(op: str) -> tuple[str, ...]:
    """How an error may call the op: a custom_vjp function by its op's name or its own."""
    return (op, op.split(":", 1)[1]) if op.startswith("custom_vjp:") else (op,)


def _is(culprit: Any, op: str) -> bool:
    return isinstance(culprit, str) and culprit in _aliases(op)


def _names(message: str, op: str) -> bool:
    """Whether ``message`` names ``op`` as nodegrad's messages do: quoted."""
    return any(f"'{name}'" in message or f'"{name}"' in message for name in _aliases(op))


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 160 else line[:157] + "..."


# -- is the mutation wrong at the drawn points? ---------------------------------------------------


def _flat(values: Any) -> np.ndarray:
    parts = [np.ravel(np.asarray(leaf, dtype=complex)) for _, leaf in differentiable_leaves(values)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _derivatives(function: Callable[..., Any], example: tuple[Any, ...], order: int) -> np.ndarray:
    """The gradient of ``function`` at ``example`` (every argument) and, for ``order=2``,
    a Hessian-vector product along a fixed direction."""
    argnums = tuple(range(len(example)))
    gradient = ng.grad(function, argnums=argnums)
    first = _flat(gradient(*example))
    if order == 1:
        return first
    direction = [np.cos(np.arange(np.size(x)) + 1.0).reshape(np.shape(x)) for x in example]

    def along(*xs: Any) -> Any:
        gs = gradient(*xs)
        return sum(ng.sum(ng.real(g * d)) for g, d in zip(gs, direction, strict=True))

    return np.concatenate([first, _flat(ng.grad(along, argnums=argnums)(*example))])


def _difference(true: np.ndarray | None, mutated: np.ndarray | None) -> float | None:
    """How far the mutated derivatives are from the true ones, relative to their size
    (infinite when the mutated ones fail or are not finite; ``None``: no true ones)."""
    if true is None or not np.all(np.isfinite(true)):
        return None
    if mutated is None or mutated.shape != true.shape or not np.all(np.isfinite(mutated)):
        return float("inf")
    return float(np.max(np.abs(mutated - true), initial=0.0) / (1.0 + np.max(np.abs(true), initial=0.0)))


def _try_derivatives(function: Callable[..., Any], example: tuple[Any, ...], order: int) -> np.ndarray | None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return _derivatives(function, example, order)
        except Exception:  # a mutated rule may fail in any way: it is then wrong there
            return None


# -- one mutation ------------------------------------------------------------------------------


def examine(mutation: Mutation, examples: list[tuple[Any, ...]], kit: Kit) -> Examined:
    """Run every check at every example without the mutation (the false positives and the
    examples each check can run at), then with it, until a check catches it."""
    start = time.perf_counter()
    absent = kit.absent()
    checks = [c for c in CHECKS if c not in absent]
    usable: dict[str, list[int]] = {c: [] for c in checks}
    false_positives: dict[str, list[str]] = {}
    not_applicable: dict[str, str] = {}
    for check in checks:
        for i, example in enumerate(examples):
            before = kit.outcome(check, mutation.function, example, mutation)
            if before.status == PASS:
                usable[check].append(i)
            elif before.assertion:
                false_positives.setdefault(check, []).append(f"example {i}: {before.detail}")
            else:
                not_applicable.setdefault(check, before.detail)
    true = [_try_derivatives(mutation.function, x, mutation.order) for x in examples]

    outcomes = {c: Outcome(ABSENT, detail=why) for c, why in absent.items()}
    with applied(mutation):
        mutated = [_try_derivatives(mutation.function, x, mutation.order) for x in examples]
        for check in checks:
            outcomes[check] = _mutated_outcome(kit, check, mutation, examples, usable[check], not_applicable)
    return Examined(
        mutation,
        {c: outcomes[c] for c in CHECKS},
        false_positives,
        [_difference(t, m) for t, m in zip(true, mutated, strict=True)],
        time.perf_counter() - start,
        usable,
    )


def _mutated_outcome(
    kit: Kit, check: str, mutation: Mutation, examples: list[Any], usable: list[int], not_applicable: dict[str, str]
) -> Outcome:
    """The check's outcome on the mutated op: the first example that catches it, else the
    first crash, else a pass (n/a when no example could be checked)."""
    if not usable:
        why = not_applicable.get(check, "every example failed without the mutation")
        return Outcome(NOT_APPLICABLE, detail=why)
    first_crash = None
    for i in usable:
        found = dataclasses.replace(kit.outcome(check, mutation.function, examples[i], mutation), example=i)
        if found.status == CAUGHT:
            return found
        if found.status == CRASH and first_crash is None:
            first_crash = found
    return first_crash or Outcome(PASS)
