"""The op to blame when :func:`~nodegrad.testing.check_grads` fails.

The failing function is recorded once more, in float64, into an arena that notes the
user's source line of every op. Each op on the way from the differentiated arguments to
the output is then tested on its own recorded inputs: its VJP rule against central
differences of its own forward (a dot-product test per differentiable input, the others
held fixed). The first op that disagrees is the culprit. When the failure was of forward
mode or of second derivatives and every rule agrees with its forward, each rule is in turn
tested as a function, ``(x, g) -> rule(g, forward(x), x)``: its derivative, which those
checks differentiate, against central differences of the rule.

Structured ops (field reads, map lookups, constructors) are the engine's own and are not
tested; a ``custom_vjp`` is, structured arguments and outputs included. Entries that are
not finite (a NaN a ``where`` discards, the ``-inf`` of an empty segment's max) have no
derivative to compare: the tests leave them out.
"""

from __future__ import annotations

import copy
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.cotangents import cotangent_for, materialize
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.record import record
from nodegrad.engine.structure import differentiable_leaves, is_container
from nodegrad.engine.sweep import fit_cotangent
from nodegrad.engine.traced import unwrap
from nodegrad.errors import NoGradientError
from nodegrad.ops.structured import pack
from nodegrad.testing._errors import GradientCheckError
from nodegrad.testing._leaves import absolute, as_float64, draw_like, pair, parts, zeros
from nodegrad.testing._probe import DISAGREES, UNRELIABLE, Probe, kinks_split_evenly, probe, tolerances_for
from nodegrad.testing._recording import Recording, record_call
from nodegrad.transforms import vjp
from nodegrad.tree import add, map_floats, scale

__all__ = ["blamed"]

# Ops whose rule is not the derivative of their forward by design: where a custom function's
# two paths meet (see nodegrad.custom), the cotangent goes to both, the value from one.
_NOT_LOCAL = frozenset({"custom_vjp_closure"})

# Argument types an op's forward never changes in place: passed to it as they are.
_IMMUTABLE = (np.ndarray, np.generic, int, float, complex, bool, str, bytes, tuple, frozenset, slice, type(None))

_NONE_FOUND = "no single op disagrees with its own forward at this point; the whole function's check failed"
_STEP_NOTE = "eps=1e-06"

Found = tuple[str, str, str | None]  # the report's lines, the op's name, its location


def blamed(
    failure: GradientCheckError,
    f: Callable[..., Any],
    args: dict[int, Any],
    positions: Sequence[int],
    seed: int,
    deep: bool,
) -> GradientCheckError:
    """``failure`` with the op to blame: its name, input shapes and dtypes and the line that
    recorded it added to the message and set as ``culprit`` and ``location``.

    ``f`` takes ``args`` and is differentiated at ``positions``; it is recorded in float64
    (and, if no op is found there, with the arguments as given: a cast that is a no-op in
    float64 is an op in float32). ``deep`` also tests each rule's own derivative (for
    failures of forward mode or of order 2).
    """
    # What the ops say while they are tried one by one at moved points (a log of a negative
    # number, the user's own warnings again) is no news: the failure is the report.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        wide = {k: map_floats(as_float64, a) for k, a in args.items()}
        searches = []
        for point in [wide] + ([args] if _narrower(args, wide) else []):
            try:
                recording = record_call(f, point, positions)
            except Exception as exc:  # the report must not hide the failure it adds to
                note = "the search for the op to blame could not record the function again"
                return GradientCheckError(f"{failure}\n({note}: {type(exc).__name__}: {exc})")
            search = _Search(recording, np.random.default_rng(seed), seed)
            searches.append(search)
            found = search.first_wrong_rule()
            if found is None and deep:
                found = search.first_wrong_rule_derivative()
            if found is not None:
                report, culprit, location = found
                return GradientCheckError("\n".join([str(failure), report, *search.unchecked()]), culprit, location)
        none_found = _NONE_FOUND + (", nor does any rule's own derivative" if deep else "")
        return GradientCheckError("\n".join([str(failure), none_found, *searches[0].unchecked()]))


def _narrower(args: dict[int, Any], wide: dict[int, Any]) -> bool:
    """Whether some float leaf of ``args`` is not float64 (or complex128)."""
    return any(
        np.result_type(leaf) != np.result_type(other)
        for k in args
        for (_, leaf), (_, other) in zip(differentiable_leaves(args[k]), differentiable_leaves(wide[k]), strict=True)
    )


class _Search:
    """The walk over one recording's ops, and what it could not check."""

    def __init__(self, recording: Recording, rng: np.random.Generator, seed: int) -> None:
        self.recording, self.rng, self.seed = recording, rng, seed
        self.ops = [op for op in (_OpAt(recording, i) for i in recording.on_path()) if op.inputs]
        self.uncertain: dict[int, str] = {}  # node index -> why it could not be checked

    def first_wrong_rule(self) -> Found | None:
        head = "the first op that disagrees with its own forward"
        for op in self.ops:
            for k in op.inputs:
                for part in parts(op.args[k]):
                    wrong = self.rule_against_forward(op, k, part)
                    if isinstance(wrong, Probe):
                        along = f" along {part} directions" if part else ""
                        numbers = wrong.lines("<rule(v), u>", f"central difference of its forward, {_STEP_NOTE}")
                        detail = f"  its gradient rule for {op.input_name(k)}{along} (seed={self.seed}):\n{numbers}"
                        return self.found(op, head, detail)
                    if wrong is not None:
                        return self.found(op, head, wrong)
        return None

    def first_wrong_rule_derivative(self) -> Found | None:
        head = (
            "the first op whose gradient rule's derivative disagrees with central differences of the rule "
            "(every op's rule agrees with its own forward)"
        )
        for op in self.ops:
            for k in op.inputs:
                wrong = self.rule_derivative(op, k)
                if wrong is not None:
                    result, along = wrong
                    what = f"its gradient rule's derivative: the rule for {op.input_name(k)}, moved along {along}"
                    numbers = result.lines("<vjp(rule)(w), u>", f"central difference of the rule, {_STEP_NOTE}")
                    return self.found(op, head, f"  {what} (seed={self.seed}):\n{numbers}")
        return None

    def rule_against_forward(self, op: _OpAt, k: int, part: str) -> Probe | str | None:
        """The dot-product test of input ``k``'s rule: a probe that disagrees, a sentence
        saying what else is wrong with the rule, or ``None``."""
        x = op.args[k]
        u = _masked(self.direction(x, part, op.symmetric.get(k, "")), op.finite_inputs.get(k))
        v = _masked(draw_like(self.rng, op.value), op.finite_output)
        try:
            cotangent = _masked(op.cotangent(k, v, op.value, op.args), op.finite_inputs.get(k))
        except NoGradientError:
            self.note(op, "its rule has no gradient here")
            return None
        except Exception as exc:  # a rule must take its own op's recorded inputs
            return f"  its gradient rule for {op.input_name(k)} raised {type(exc).__name__}: {exc}"
        if not is_container(x) and np.shape(cotangent) != np.shape(x):
            return (
                f"  its gradient rule for {op.input_name(k)} returns a cotangent of shape {np.shape(cotangent)} "
                f"for an input of shape {np.shape(x)}"
            )
        x64, u64 = map_floats(as_float64, x), map_floats(as_float64, u)

        def moved(t: float) -> Any:
            return _masked(op.forward({k: add(x64, scale(u64, t))}), op.finite_output)

        even = kinks_split_evenly(op.name, op.args)
        return self.compare(op, moved, v, cotangent, u, tolerances_for(x, op.value), "its forward", even)

    def rule_derivative(self, op: _OpAt, k: int) -> tuple[Probe, str] | None:
        """The dot-product test of ``(x, g) -> rule_k(g, forward(x), x)``'s own VJP against
        central differences of it, along each of its inputs."""
        g = _masked(draw_like(self.rng, op.value), op.finite_output)
        for moving in (op.inputs, []):  # an op with first-order rules: along g alone
            names = [op.input_name(j) for j in moving] + ["its cotangent g"]
            points = [op.args[j] for j in moving] + [g]
            masks = [op.finite_inputs.get(j) for j in moving] + [op.finite_output]
            rule = op.rule_of(k, moving)
            try:
                out, back = vjp(rule, *points)
                finite = _finite_mask(out)
                w = _masked(draw_like(self.rng, out), finite)
                cotangents = back(w)
            except NoGradientError:
                continue
            except Exception as exc:
                self.note(op, f"its rule could not be differentiated ({type(exc).__name__})")
                return None
            for j, (name, point, cotangent) in enumerate(zip(names, points, cotangents, strict=True)):
                symmetry = op.symmetric.get(moving[j], "") if j < len(moving) else ""
                for part in parts(point):
                    u = _masked(self.direction(point, part, symmetry), masks[j])
                    moved = _along(rule, points, j, u, finite)
                    cotangent_ = _masked(cotangent, masks[j])
                    wrong = self.compare(op, moved, w, cotangent_, u, tolerances_for(point, out), "its rule")
                    if wrong is not None:
                        return wrong, name + (f" (along {part} directions)" if part else "")
            return None
        return None

    def compare(
        self,
        op: _OpAt,
        moved: Callable[[float], Any],
        v: Any,
        cotangent: Any,
        u: Any,
        tolerances: Any,
        what: str,
        even_kinks: bool = False,
    ) -> Probe | None:
        """The probe of ``<cotangent, u>`` against central differences of ``<v, moved(t)>``:
        returned if it disagrees; noted if it cannot tell."""
        try:
            terms = pair(absolute(cotangent), absolute(u))
            rtol, atol = tolerances
            result = probe(moved, v, pair(cotangent, u), terms, rtol, atol, even_kinks=even_kinks)
        except Exception as exc:  # a point within a step is outside the domain: cannot tell
            self.note(op, f"{what} raised {type(exc).__name__} within a step")
            return None
        if result.verdict == UNRELIABLE:
            self.note(op, f"{what} is not smooth within a step of its inputs")
        return result if result.verdict == DISAGREES else None

    def direction(self, x: Any, part: str, symmetry: str = "") -> Any:
        """A random direction for ``x``, each entry scaled to the entry's size (at least 1):
        a step relative to the value stays inside the domain of ``log`` and the like.
        ``symmetry`` (``"symmetric"``, ``"hermitian"``) keeps it in that space of matrices."""
        u = map_floats(lambda d, leaf: d * _size(leaf), draw_like(self.rng, x, part), x)
        if symmetry:
            transposed = np.swapaxes(u, -1, -2)
            u = (u + (np.conj(transposed) if symmetry == "hermitian" else transposed)) / 2
        return u

    def note(self, op: _OpAt, why: str) -> None:
        self.uncertain.setdefault(op.index, f"'{op.name}' {self.recording.where(op.index)} ({why})")

    def found(self, op: _OpAt, head: str, detail: str) -> Found:
        self.uncertain = {i: why for i, why in self.uncertain.items() if i < op.index}
        reads = self.recording.reads(op.index)
        reading = f", reading {reads}" if reads else ""
        line = f"{head}: {op.title()} {self.recording.where(op.index)}{reading}\n{detail}"
        return line, op.name, self.recording.location(op.index)

    def unchecked(self) -> list[str]:
        if not self.uncertain:
            return []
        return ["ops that could not be checked at this point:", *(f"  {why}" for why in self.uncertain.values())]


class _OpAt:
    """One recorded op as a function of its own inputs: its forward and its rules, run on
    the recorded arguments with some of them replaced."""

    def __init__(self, recording: Recording, index: int) -> None:
        nodes = recording.nodes
        node = nodes[index]
        self.index, self.op, self.args, self.value = index, node.op, node.args, node.value
        self.name = self.op.name
        custom = self.op.family == "custom"
        checkable = _checkable(self.value, custom) and self.name not in _NOT_LOCAL
        self.inputs: list[int] = sorted(
            {
                k
                for p, k in zip(node.parents, node.argnums, strict=True)
                if checkable and _has_rule(self.op, k) and _checkable(self.args[k], custom) and recording.dependent[p]
            }
        )
        # Where the values are finite (None: everywhere): the tests move and pair those alone.
        self.finite_output = _finite_mask(self.value)
        self.finite_inputs = {k: _finite_mask(self.args[k]) for k in self.inputs}
        # An input read from one triangle of a matrix (a decomposition's) is a symmetric
        # (Hermitian) matrix by construction: the op is defined on those alone, and its
        # rule answers for symmetric directions (read_triangle folds the rest).
        self.symmetric = {
            k: "hermitian" if nodes[p].args[2] else "symmetric"
            for p, k in zip(node.parents, node.argnums, strict=True)
            if nodes[p].op.name == "read_triangle"
        }

    def input_name(self, k: int) -> str:
        """How the reports call input ``k``: a custom function's argument (its residuals come
        first among the node's), or the op's input."""
        return f"argument {k - 1}" if self.name.startswith("custom_vjp:") else f"input {k}"

    def title(self) -> str:
        shapes = ", ".join(described for described in map(_shape_and_dtype, self.args) if described)
        if self.name.startswith("custom_vjp:"):
            return f"'{self.name}' (the custom_vjp function {self.name.partition(':')[2]}; inputs {shapes})"
        return f"'{self.name}' (inputs {shapes})"

    def forward(self, changes: dict[int, Any]) -> Any:
        args = [changes[k] if k in changes else _fresh(a) for k, a in enumerate(self.args)]
        return self.op.forward(*args)

    def cotangent(self, k: int, g: Any, ans: Any, args: Sequence[Any]) -> Any:
        """The cotangent input ``k``'s rule gives for the output cotangent ``g`` (shaped like the
        output), shaped like the input as the sweep would make it."""
        out, like = unwrap(ans), unwrap(args[k])
        given = cotangent_for(g, out, "") if is_container(out) else g
        joint = self.op.joint
        if joint is not None:
            found = joint((k,), given, ans, *args)[0]
        else:
            rule = self.op.vjps[k]
            found = None if rule is None else rule(given, ans, *args)
        if found is None:
            return zeros(self.args[k])
        if is_container(like):
            return materialize(found, like, "", [], True)
        if self.op.broadcasts:
            return fit_cotangent(found if type(found) in DIFFERENTIATING else np.asarray(found), _like(like))
        return found

    def rule_of(self, k: int, moving: Sequence[int]) -> Callable[..., Any]:
        """``(x_j for j in moving, g) -> rule_k(g, forward(x), x)``: the forward recorded
        (so its own rule differentiates ``ans`` where the arguments are traced), as the
        sweep runs a rule when it records itself."""

        def rule(*points: Any) -> Any:
            *xs, g = points
            args = [_fresh(a) for a in self.args]
            for j, x in zip(moving, xs, strict=True):
                args[j] = pack(x) if is_container(x) else x
            ans = record(self.op, *args)
            return self.cotangent(k, g, ans, args)

        return rule


def _along(rule: Callable[..., Any], points: list[Any], j: int, u: Any, finite: Any) -> Callable[[float], Any]:
    """``t -> rule(*points)`` with ``points[j]`` moved by ``t * u`` (in float64), its
    entries that are not finite at ``t = 0`` masked."""
    start, direction = map_floats(as_float64, points[j]), map_floats(as_float64, u)

    def moved(t: float) -> Any:
        return _masked(rule(*(add(start, scale(direction, t)) if i == j else p for i, p in enumerate(points))), finite)

    return moved


def _checkable(value: Any, structured: bool) -> bool:
    """Whether ``value`` is a float or complex array or number with a finite entry (or,
    with ``structured``, a structure of finite ones): what the tests can move and pair."""
    if type(value) in (np.ndarray, float, complex) or isinstance(value, np.inexact):
        return np.result_type(value).kind in "fc" and bool(np.any(np.isfinite(value)))
    if structured and is_container(value):
        found = differentiable_leaves(value)
        return bool(found) and all(_checkable(leaf, False) and _finite_mask(leaf) is None for _, leaf in found)
    return False


def _finite_mask(value: Any) -> Any:
    """Where a float array is finite, or ``None`` when it is everywhere (or not an array)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return None
    finite = np.isfinite(value)
    return None if finite.all() else finite


def _masked(value: Any, mask: Any) -> Any:
    """``value`` with zeros where ``mask`` is false (``value`` itself without a mask)."""
    if mask is None:
        return value
    plain = np.asarray(unwrap(value))
    return np.where(mask, plain, 0).astype(plain.dtype)


def _has_rule(op: Any, k: int) -> bool:
    return op.joint is not None or (k < len(op.vjps) and op.vjps[k] is not None)


def _size(leaf: Any) -> Any:
    size = np.maximum(np.abs(leaf), 1.0)
    return float(size) if isinstance(leaf, float | complex) else size


def _like(value: Any) -> Any:
    return value if type(value) in (float, complex) else np.asarray(value)


def _fresh(arg: Any) -> Any:
    """``arg`` as a forward may be given it again: a shallow copy of a mutable holder (a
    custom_vjp's residuals, which its forward overwrites), anything else itself."""
    if isinstance(arg, _IMMUTABLE) or callable(arg) or isinstance(arg, types.ModuleType):
        return arg
    try:
        return copy.copy(arg)
    except Exception:  # an object that cannot be copied is passed as it is
        return arg


def _shape_and_dtype(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        return f"{np.shape(value)} {value.dtype}"
    if type(value) in (float, complex):
        return type(value).__name__
    if type(value) in DIFFERENTIATING:
        return _shape_and_dtype(value.value)
    if is_container(value):
        return type(value).__name__
    return ""
