"""The checks of :func:`nodegrad.testing.check_consistency`, one function each.

A check takes the :class:`~nodegrad.testing._subject.Subject`, compares what two routes
compute (raising :class:`~nodegrad.testing._subject.ConsistencyError` where they differ),
and returns notes for the report; it raises
:class:`~nodegrad.testing._subject.NotApplicable` when it does not apply to the function.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from nodegrad.custom import checkpoint
from nodegrad.engine.arena import Arena
from nodegrad.engine.record import record
from nodegrad.engine.structure import is_differentiable_leaf
from nodegrad.errors import BatchingError, NodegradError, NoGradientError, RandomDrawError, ReplayWarning
from nodegrad.ops.batching import rule_of
from nodegrad.testing._check import check_grads
from nodegrad.testing._hessians import hessian_matrix, hvp_vector
from nodegrad.testing._subject import (
    ConsistencyError,
    NotApplicable,
    Subject,
    compare,
    first_line,
    holds_table,
    weighted_sum,
)
from nodegrad.transforms import grad, replay, value_and_grad, vjp, vmap
from nodegrad.tree import map_floats, tree_map

__all__ = ["CHECKS"]


# -- checkpoint and closures -------------------------------------------------------------------


def check_checkpoint(s: Subject) -> list[str]:
    """``grad(checkpoint(f))`` against ``grad(f)``."""
    expected = s.grads()
    pair = ("grad(checkpoint(f))", "grad(f)")
    with _raising_where_the_plain_route_did_not("checkpoint", pair):
        got = grad(s.scalar_of(checkpoint(s.bound)), argnums=s.every)(*s.xs)
    compare(s, "checkpoint", pair, s.per_argument(got, expected))
    return []


@contextlib.contextmanager
def _raising_where_the_plain_route_did_not(check: str, pair: tuple[str, str]) -> Iterator[None]:
    """An error of nodegrad's raised inside, by the route under test where the plain one
    gave a result, is a disagreement too (a refusal of second derivatives excepted: that
    route needs them, the plain one does not)."""
    try:
        yield
    except NoGradientError:
        raise
    except NodegradError as exc:
        raised = f"{type(exc).__name__}: {exc}"
        msg = f"check_consistency ({check!r}): {pair[0]} and {pair[1]} disagree: {pair[0]} raised {raised}"
        msg += f"\n  where {pair[1]} gave a result"
        raise ConsistencyError(msg, pair) from exc


def _halves(ys: tuple[Any, ...], xs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``0.5 * y + 0.5 * x`` at every float leaf: ``x`` itself, exactly, when ``y`` is ``x``
    (halving is exact), so half of each gradient flows through ``y`` and half through ``x``."""
    return tuple(map_floats(lambda y, x: 0.5 * y + 0.5 * x, y, x) for y, x in zip(ys, xs, strict=True))


def _closing_over(s: Subject, k: int) -> Callable[..., Any]:
    """``f`` through ``checkpoint`` of a function of every argument but ``k``, which it
    reads from its closure."""

    def through_checkpoint(*xs: Any) -> Any:
        def inner(*others: Any) -> Any:
            return s.bound(*others[:k], xs[k], *others[k:])

        return checkpoint(inner)(*xs[:k], *xs[k + 1 :])

    return s.scalar_of(through_checkpoint)


def _halves_through_checkpoint(s: Subject) -> Callable[..., Any]:
    """``f`` through ``checkpoint``, reading half of each argument as its argument and half by closure."""

    def through_checkpoint(*xs: Any) -> Any:
        return checkpoint(lambda *ys: s.bound(*_halves(ys, xs)))(*xs)

    return s.scalar_of(through_checkpoint)


def _value_by_closure(s: Subject) -> Callable[..., Any]:
    """The value an inner ``value_and_grad`` gives, its function reading half of each argument by closure."""

    def value(*xs: Any) -> Any:
        return value_and_grad(lambda *ys: s.scalar(*_halves(ys, xs)), argnums=s.every)(*xs)[0]

    return value


def check_closure(s: Subject) -> list[str]:
    """The gradient when the arguments reach an inner transform by closure (see
    :func:`~nodegrad.testing.check_consistency`)."""
    expected = s.grads()
    forms = []
    if len(s.xs) > 1:  # (with one argument, a checkpoint of the others would be one of no argument: a plain call)
        forms = [(f"grad(checkpoint(f)) closing over argument {s.nums[k]}", _closing_over(s, k)) for k in s.every]
    forms.append(("grad(checkpoint(f)) by closure", _halves_through_checkpoint(s)))
    forms.append(("grad(value_and_grad(f)[0]) by closure", _value_by_closure(s)))
    notes = []
    for name, form in forms:
        try:
            with _raising_where_the_plain_route_did_not("closure", (name, "grad(f)")):
                got = grad(form, argnums=s.every)(*s.xs)
        except NoGradientError as exc:
            # An inner gradient of values an outer transform traces records its sweep, which
            # needs the rules' own derivatives (value_and_grad's, though its value alone is used).
            notes.append(f"{name} not compared: f has no second derivatives ({first_line(exc)})")
            continue
        compare(s, "closure", (name, "grad(f)"), s.per_argument(got, expected))
    return notes + _check_nested_gradient_by_closure(s)


def _check_nested_gradient_by_closure(s: Subject) -> list[str]:
    """``grad(<grad(f), w>)`` with the inner ``grad`` reading half of each argument by
    closure (so its gradient is half of ``grad(f)``, and the outer one half the Hessian
    times ``w``) against the same without a closure."""
    w = s.random(tuple(s.xs))

    def plain(*xs: Any) -> Any:
        return weighted_sum(grad(s.scalar, argnums=s.every)(*xs), w)

    def by_closure(*xs: Any) -> Any:
        inner = grad(lambda *ys: s.scalar(*_halves(ys, xs)), argnums=s.every)(*xs)
        return weighted_sum(map_floats(lambda g: g * 2.0, inner), w)

    try:
        expected = grad(plain, argnums=s.every)(*s.xs)
        got = grad(by_closure, argnums=s.every)(*s.xs)
    except NoGradientError as exc:
        return [f"grad(<grad(f), w>) by closure not compared: f has no second derivatives ({first_line(exc)})"]
    compare(s, "closure", ("grad(<grad(f), w>) by closure", "grad(<grad(f), w>)"), s.per_argument(got, expected))
    return []


# -- custom_vjp residuals -----------------------------------------------------------------------


def _custom_functions(s: Subject) -> list[str]:
    """The names of the custom_vjp functions (checkpoints included) ``f`` calls at the point."""
    with Arena() as arena:
        s.scalar(*(arena.param(x) for x in s.xs))
    names = [node.op.name for node in arena.nodes if node.op.name.startswith("custom_vjp:")]
    return sorted({name.split(":", 1)[1] for name in names})


def check_custom_vjp(s: Subject) -> list[str]:
    """A ``bwd`` reads the residuals its ``fwd`` stored, unchanged (see
    :func:`~nodegrad.testing.check_consistency`)."""
    s.need_gradients()
    found = _custom_functions(s)
    if not found:
        msg = "f calls no custom_vjp function"
        raise NotApplicable(msg)
    with _naming(found):
        notes = _compare_residual_paths(s)
    return [f"custom functions: {', '.join(found)}", *notes]


@contextlib.contextmanager
def _naming(functions: list[str]) -> Iterator[None]:
    """A disagreement raised inside gets a line naming ``f``'s custom functions: one of
    them keeps its residuals wrong."""
    try:
        yield
    except ConsistencyError as exc:
        names = ", ".join(repr(name) for name in functions)
        raise ConsistencyError(f"{exc}\n  the custom functions f calls: {names}", exc.pair) from None


def _compare_residual_paths(s: Subject) -> list[str]:
    """The three comparisons of the custom_vjp check; returns notes."""
    notes = []
    expected = s.grads()
    try:
        # Inside vjp the sweep of grad(f) records itself: each fwd runs again before its bwd.
        fresh = vjp(grad(s.scalar, argnums=s.every), *s.xs)[0]
    except NoGradientError as exc:
        notes.append(f"grad(f) with fwd run again could not be taken ({first_line(exc)})")
    else:
        pair = ("grad(f) from stored residuals", "grad(f) with fwd run again")
        compare(s, "custom_vjp", pair, s.per_argument(expected, fresh))
    elsewhere = s.copies()[1]
    _, back = vjp(s.scalar, *s.xs)
    vjp(s.scalar, *elsewhere)
    stale = back(1.0)
    _, back_again = vjp(checkpoint(s.scalar), *s.xs)
    vjp(s.scalar, *elsewhere)
    pair = ("vjp(f) after another vjp(f)", "vjp(checkpoint(f)) after another vjp(f)")
    compare(s, "custom_vjp", pair, s.per_argument(stale, back_again(1.0)))
    pair = ("vjp(f)'s backward run twice", "vjp(f)'s backward run once")
    compare(s, "custom_vjp", pair, s.per_argument(back(1.0), stale))
    return notes


# -- second order ------------------------------------------------------------------------------


def check_hessian_symmetric(s: Subject) -> list[str]:
    """``hessian(f)`` against its transpose."""
    matrix, labels, note = hessian_matrix(s)

    def entry(name: str, path: str, leaf: Any, index: tuple[int, ...]) -> str:
        return f"the entry of {labels[index[0]]} and {labels[index[1]]}"

    pair = ("hessian(f)", "hessian(f) transposed")
    try:
        compare(s, "hessian_symmetric", pair, [("", matrix, matrix.T)], describe=entry)
    except ConsistencyError as exc:
        blamed = _blamed_at_order_2(s)
        if blamed is None:
            raise
        raise ConsistencyError(f"{exc}\n{blamed}", exc.pair) from None
    return [note] if note else []


def _blamed_at_order_2(s: Subject) -> str | None:
    """The op ``check_grads(f, order=2)`` blames, as a line for the message, if it blames
    one: an asymmetric Hessian comes from a gradient rule whose own derivative is wrong,
    which its culprit search finds."""
    try:
        check_grads(s.scalar, *s.xs, order=2, modes=("rev",))
    except AssertionError as exc:
        culprit, location = getattr(exc, "culprit", None), getattr(exc, "location", None)
        if culprit is not None:
            where = f" (recorded at {location})" if location else ""
            return f"  check_grads(f, order=2) blames op {culprit!r}{where}"
    except Exception:  # a search for a name only: the disagreement found is the news
        return None
    return None


def check_hvp(s: Subject) -> list[str]:
    """``hvp(f)(x, w)`` against ``hessian(f)(x) @ w``."""
    matrix, labels, note = hessian_matrix(s)
    got, w = hvp_vector(s)

    def entry(name: str, path: str, leaf: Any, index: tuple[int, ...]) -> str:
        return f"{labels[index[0]]}"

    pair = ("hvp(f)", "hessian(f) @ w")
    compare(s, "hvp", pair, [("", got, matrix @ w)], scales=[np.abs(matrix) @ np.abs(w)], describe=entry)
    return [note] if note else []


# -- vmap ---------------------------------------------------------------------------------------


def _stacked(values: list[Any], like: Any) -> Any:
    """The batch of ``values`` (each shaped like ``like``): batched leaves stacked along a new
    axis 0, the others as in ``like``."""

    def stack(given: Any, *leaves: Any) -> Any:
        return np.stack([np.asarray(leaf) for leaf in leaves]) if _batched(given) else given

    return map_floats(stack, like, *values)


def _example(value: Any, e: int) -> Any:
    """Example ``e`` of a batched result."""
    return map_floats(lambda leaf: leaf[e], value)


def _batched(leaf: Any) -> bool:
    """Whether ``vmap`` batches this leaf: a float array, not a Python number, which numpy
    promotes as a weak scalar (``float32 * 0.5`` is float32) and a stacked batch would not."""
    return is_differentiable_leaf(leaf) and not isinstance(leaf, float | complex)


def _batch_axes(x: Any) -> Any:
    """``in_axes`` for an argument: its float arrays are batched along axis 0, the rest not."""
    return tree_map(lambda leaf: 0 if _batched(leaf) else None, x)


def _examples(s: Subject) -> list[tuple[Any, ...]]:
    """:meth:`Subject.copies` with every Python number as given (not batched)."""
    xs = tuple(s.xs)
    return [map_floats(lambda moved, given: moved if _batched(given) else given, c, xs) for c in s.copies()]


def check_vmap(s: Subject) -> list[str]:
    """``vmap(f)`` and ``vmap(grad(f))`` over three copies against a loop."""
    if any(holds_table(x) for x in s.xs):
        msg = "a table's columns hold its rows, so a batch of tables is not a table of stacked columns"
        raise NotApplicable(msg)
    copies = _examples(s)
    batch = [_stacked([c[k] for c in copies], x) for k, x in enumerate(s.xs)]
    axes = tuple(_batch_axes(x) for x in s.xs)
    try:
        outputs = vmap(s.bound, in_axes=axes, axis_size=len(copies))(*batch)
    except BatchingError as exc:
        msg = f"vmap cannot batch f: {first_line(exc)}"
        raise NotApplicable(msg) from None
    with _blaming_a_batching_rule(s, through_grad=False):
        for e, c in enumerate(copies):
            got, expected = _example(outputs, e), s.bound(*c)
            compare(s, "vmap", ("vmap(f)", "f on each example"), [(f"example {e} of the output", got, expected)])
    if not s.differentiable_output:
        return ["f's output holds no float values: vmap(grad(f)) not compared"]
    try:
        gradients = vmap(grad(s.scalar, argnums=s.every), in_axes=axes, axis_size=len(copies))(*batch)
    except BatchingError as exc:
        return [f"vmap cannot batch grad(f): {first_line(exc)}"]
    with _blaming_a_batching_rule(s, through_grad=True):
        for e, c in enumerate(copies):
            got = [_example(g, e) for g in gradients]
            expected = grad(s.scalar, argnums=s.every)(*c)
            names = [f"example {e} of {name}" for name in s.names]
            pair = ("vmap(grad(f))", "grad(f) on each example")
            compare(s, "vmap", pair, list(zip(names, got, expected, strict=True)))
    return []


@contextlib.contextmanager
def _blaming_a_batching_rule(s: Subject, through_grad: bool) -> Iterator[None]:
    """A vmap disagreement raised inside gets a line naming the first op of ``f`` (or of
    ``grad(f)``'s sweep) whose batching rule disagrees with its forward run on each example."""
    try:
        yield
    except ConsistencyError as exc:
        blamed = _wrong_batching_rule(s, through_grad)
        if blamed is None:
            raise
        where = "grad(f)'s sweep" if through_grad else "f"
        line = f"  the first op of {where} whose batching rule disagrees with its forward on each example: {blamed!r}"
        raise ConsistencyError(f"{exc}\n{line}", exc.pair) from None


def _wrong_batching_rule(s: Subject, through_grad: bool) -> str | None:
    """The name of the first recorded op whose batching rule, on three moved copies of its
    recorded float inputs, disagrees with its forward on each copy; ``None`` if none does."""
    try:
        with Arena() as arena:
            params = [arena.param(x) for x in s.xs]
            grad(s.scalar, argnums=s.every)(*params) if through_grad else s.scalar(*params)
    except NoGradientError:
        return None
    for op, _, _, args, _ in arena.nodes:
        if rule_of(op) is not None and op.family not in {"leaf", "custom"} and _batching_disagrees(s, op, args):
            return str(op.name)
    return None


def _batching_disagrees(s: Subject, op: Any, args: tuple[Any, ...]) -> bool:
    moving = [k for k, a in enumerate(args) if type(a) is np.ndarray and a.dtype.kind in "fc" and a.size]
    if not moving:
        return False
    examples = [list(args)]
    for _ in range(2):
        examples.append([s.perturbed(a) if k in moving else a for k, a in enumerate(args)])
    stacked = [np.stack([e[k] for e in examples]) if k in moving else a for k, a in enumerate(args)]
    axes = tuple(0 if k in moving else None for k in range(len(args)))
    try:
        got = vmap(lambda *a: record(op, *a), in_axes=axes, axis_size=len(examples))(*stacked)
        for e, example in enumerate(examples):
            expected = np.asarray(op.forward(*example))
            rtol = max(s.rtol, 1e-10) * 10
            size = float(np.max(np.abs(expected), initial=0.0)) if expected.dtype.kind in "fc" else 0.0
            # relative to the values compared, as every comparison of the kit (not numpy's atol=1e-8)
            if not np.allclose(np.asarray(got)[e], expected, rtol=rtol, atol=rtol * size, equal_nan=True):
                return True
    except Exception:  # an op this simple batching cannot call (several outputs, list arguments): not blamed
        return False
    return False


# -- replay -------------------------------------------------------------------------------------


def _copied(value: Any) -> Any:
    """``value`` with its arrays copied: what a result was when it was returned."""
    return map_floats(lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray) else leaf, value)


def _check_replay_of(s: Subject, fun: Callable[..., Any], what: str, named: Callable[[Any], list[Any]]) -> None:
    """``replay(fun)`` against ``fun`` bit for bit: on the call that records it, a second
    call at the moved point and a third at the first point again (both replayed); no
    result may change with a later call. ``named(result)`` gives the ``(name, value)``
    pairs to compare."""
    replayed = replay(fun)
    moved = list(s.args)
    for k, x in zip(s.nums, s.copies()[1], strict=True):
        moved[k] = x
    pair = (f"replay({what})", what)
    results = []
    for call, args in (("the recording call", s.args), ("a second call", moved), ("a third call", s.args)):
        got = replayed(*args)
        compare(s, "replay", pair, _parts(named(got), named(fun(*args)), call), exact=True)
        results.append((call, got, _copied(got)))
    pair = (f"replay({what})'s result after later calls", "as it was returned")
    for call, got, kept in results[:-1]:
        compare(s, "replay", pair, _parts(named(got), named(kept), call), exact=True)


def _parts(got: list[Any], expected: list[Any], call: str) -> list[tuple[str, Any, Any]]:
    """``(name (call), got, expected)`` for :func:`compare`."""
    return [(f"{name} ({call})", g, e) for (name, g), (_, e) in zip(got, expected, strict=True)]


def check_replay(s: Subject) -> list[str]:
    """``replay(f)`` and ``replay(grad(f))`` against ``f`` and ``grad(f)``, bit for bit."""
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReplayWarning)
        try:
            _check_replay_of(s, s.f, "f", lambda out: [("the output", out)])
            if s.differentiable_output:
                gradient = grad(s.scalar_of_all, argnums=s.nums)
                _check_replay_of(s, gradient, "grad(f)", lambda gs: list(zip(s.names, gs, strict=True)))
            else:
                notes.append("f's output holds no float values: replay(grad(f)) not compared")
        except RandomDrawError as exc:
            msg = f"f draws random numbers, which replay refuses: {first_line(exc)}"
            raise NotApplicable(msg) from None
    for warning in caught:
        if issubclass(warning.category, ReplayWarning):
            notes.append(f"ran eagerly ({warning.message})")
        else:  # not ours to swallow
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return list(dict.fromkeys(notes))


#: The checks by name, in the order they run.
CHECKS: dict[str, Callable[[Subject], list[str]]] = {
    "checkpoint": check_checkpoint,
    # Before the closures: an inner transform runs a custom function's fwd again, where a
    # stale residual shows; this check names it for what it is.
    "custom_vjp": check_custom_vjp,
    "closure": check_closure,
    "hessian_symmetric": check_hessian_symmetric,
    "hvp": check_hvp,
    "vmap": check_vmap,
    "replay": check_replay,
}
