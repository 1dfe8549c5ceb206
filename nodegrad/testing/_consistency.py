"""``check_consistency``: the transforms with code paths of their own, checked against the plain ones.

``checkpoint``, a closure, a ``custom_vjp``'s residuals, the Hessian, ``hvp``, ``vmap`` and
``replay`` each compute what a plain ``grad`` (or a plain call) computes, by a different
route. Where two routes disagree beyond rounding, one of them is wrong: there is no step
size and no truncation error, so the tolerances are tight. The checks are in
:mod:`nodegrad.testing._consistency_checks`, the comparisons in :mod:`nodegrad.testing._subject`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.structure import differentiable_leaves
from nodegrad.errors import ArgumentError
from nodegrad.testing._consistency_checks import CHECKS
from nodegrad.testing._leaves import real_number
from nodegrad.testing._subject import ConsistencyError, Function, NotApplicable, Subject, float_leaves
from nodegrad.transforms.common import normalize_argnums, resolve_argnums

__all__ = ["ConsistencyError", "check_consistency"]

# Default rtol by the narrowest float dtype among the differentiated arguments and the output:
# both sides compute the same maths in that dtype, so they differ by its rounding alone.
_RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-10}


def _check_arguments(f: Any, rtol: Any, atol: Any, seed: Any) -> None:
    problems = []
    if not callable(f):
        problems.append(f"f must be callable, got {type(f).__name__}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (real_number(value) and 0 <= value < np.inf):
            problems.append(f"{name} must be a finite number >= 0, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        problems.append(f"seed must be a non-negative int, got {seed!r}")
    if problems:
        msg = "check_consistency: " + "; ".join(problems)
        raise ArgumentError(msg)


def _selected(checks: Any, known: Sequence[str]) -> list[str]:
    """The names of the checks to run, in the order of ``known``."""
    if checks is None:
        return list(known)
    names = [checks] if isinstance(checks, str) else list(checks) if isinstance(checks, Iterable) else None
    if names is None or not all(isinstance(n, str) for n in names):
        msg = f"check_consistency: checks must be a sequence of check names, got {checks!r}"
        raise ArgumentError(msg)
    unknown = [n for n in names if n not in known]
    if unknown:
        msg = f"check_consistency: unknown checks {unknown}; the checks are {list(known)}"
        raise ArgumentError(msg)
    return [n for n in known if n in names]


def _positions(f: Function, args: tuple[Any, ...], argnums: Any) -> tuple[int, ...]:
    """The arguments to differentiate: ``argnums``, or every one holding a float value."""
    if argnums is None:
        nums = tuple(k for k, a in enumerate(args) if differentiable_leaves(a))
        if not nums:
            msg = "check_consistency: no argument holds a float value to differentiate"
            raise ArgumentError(msg)
        return nums
    try:
        return resolve_argnums(normalize_argnums(argnums), len(args), f)
    except ArgumentError as exc:
        msg = f"check_consistency: {exc}"
        raise ArgumentError(msg) from None


def _default_rtol(subject: Subject) -> float:
    """The rtol of the narrowest float dtype among the arguments and the output (a complex
    dtype as its parts')."""
    dtypes = [
        np.finfo(np.result_type(leaf)).dtype for value in [subject.out, *subject.xs] for _, leaf in float_leaves(value)
    ]
    narrowest = min(dtypes, key=lambda d: d.itemsize, default=np.dtype(np.float64))
    return _RTOL.get(narrowest.name, _RTOL["float64"])


@reports_unwalkable("check_consistency")
def check_consistency(
    f: Function,
    *args: Any,
    argnums: int | Sequence[int] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    checks: str | Sequence[str] | None = None,
    seed: int = 0,
) -> dict[str, str]:
    """Check that the transforms with code paths of their own agree with the plain ones on ``f``.

    Each check computes one value two ways that are the same maths, and compares them
    entry by entry with tight tolerances (rounding apart, no finite differences). The
    gradient checks differentiate ``f`` if it returns a real scalar, else ``<f(x), v>``
    (``Re(sum(out * v))`` over the output's float leaves) for a fixed random cotangent
    ``v``, which compares VJPs. Arguments and outputs may be arrays, Python numbers, dicts,
    attrs records, dataclasses, lists and tuples, nested.

    - ``"checkpoint"``: ``grad(checkpoint(f))`` against ``grad(f)``.
    - ``"custom_vjp"`` (when ``f`` calls a :class:`~nodegrad.custom_vjp` function, or
      ``checkpoint``): a ``bwd`` must read residuals that are still those its ``fwd``
      stored. ``grad(f)`` from the stored residuals against ``grad(f)`` with every ``fwd``
      run again right before its ``bwd`` (which a sweep that records itself does: the
      gradient taken inside ``vjp``); ``vjp(f)``'s backward run after another ``vjp`` of
      ``f`` at another point against ``vjp(checkpoint(f))``'s (whose backward runs the
      forward again); and the backward run twice against its first run (a ``bwd`` that
      changes its residuals in place). Forward mode is no reference here: ``jvp``
      transposes the sweep over the same stored residuals.
    - ``"closure"``: the same gradient when the arguments reach an inner transform through
      its function's closure: ``checkpoint`` of ``f`` with one argument closed over (each in
      turn), and with half of every argument read by closure, half as its argument
      (``0.5 * y + 0.5 * x`` is ``x`` exactly, so the two halves' gradients must add up to
      the whole); the value of an inner ``value_and_grad`` read so; and the gradient of
      ``<grad(f), w>`` with ``grad`` reading the arguments so, against the same without a
      closure (second order, where ``f`` has second derivatives).
    - ``"hessian_symmetric"``: ``hessian(f)`` (with respect to every differentiated
      argument, structured) against its transpose; complex arguments through their real
      and imaginary parts.
    - ``"hvp"``: ``hvp(f)(x, w)`` against ``hessian(f)(x) @ w`` for a random ``w``, in
      the structure of the arguments (:func:`nodegrad.tree.ravel` lays them end to end).
    - ``"vmap"``: ``vmap(f)`` over a batch of three copies of the arguments (the first
      as given, two with each entry moved by about 1% of itself) against ``f`` called on
      each, and ``vmap(grad(f))`` against ``grad(f)`` on each. Python numbers are not
      batched (numpy promotes them as weak scalars, a stacked batch of them is float64);
      a table argument makes the check not apply.
    - ``"replay"``: ``replay(f)`` against ``f``, bit for bit, on the call that records it,
      on a second call at the moved point and on a third at the first point again (both
      replayed); no result may change with a later call (a buffer handed out twice);
      the same for ``replay(grad(f))`` against ``grad(f)``. A replay that runs eagerly
      (with a :class:`~nodegrad.errors.ReplayWarning`) is noted, not a failure.

    Parameters
    ----------
    f : callable
        Takes the arguments, returns a float or complex array, a number, or a structure of them.
    *args
        The point at which to check.
    argnums : int or sequence of int, optional
        Which arguments to differentiate and move; by default every argument holding a
        float or complex value. The others are passed as given.
    rtol : float, optional
        Relative tolerance; default by the narrowest float dtype among the differentiated
        arguments and the output: ``1e-10`` for float64, ``1e-4`` for float32, ``1e-2``
        for float16 (complex dtypes as their parts).
    atol : float, optional
        Absolute tolerance; default ``rtol`` times the largest magnitude among the values
        a comparison compares.
    checks : str or sequence of str, optional
        The checks to run (names above); by default every one that applies.
    seed : int, default 0
        Seeds the generator of the cotangent, the directions and the moved copies.

    Returns
    -------
    dict of str to str
        For each check asked for, in the order above: ``"passed"``, ``"passed; "`` and a
        note (a ``replay`` that ran eagerly, a comparison that could not be made), or
        ``"not applicable: "`` and why (no ``custom_vjp`` in ``f``, no second derivatives).

    Raises
    ------
    ConsistencyError
        (an ``AssertionError``) at the first disagreement: its ``pair`` names the two
        sides; its message names the check, the argument, the key path and the entry, with
        both values and the tolerance, and where it can what to suspect: the custom
        functions ``f`` calls, the first op whose batching rule disagrees with its forward
        on each example, or the op ``check_grads(f, order=2)`` blames for an asymmetric
        Hessian. A nodegrad error raised by ``checkpoint`` (or a closure's route) where
        ``grad(f)`` gave a result is a disagreement too, chained to it.
    nodegrad.errors.ArgumentError
        For an ``f`` that is not callable, bad ``argnums``, unknown ``checks``, a negative
        or non-finite ``rtol``/``atol``, or a bad ``seed``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_consistency
    >>> loss = lambda p, x: ng.sum(ng.tanh(x @ p["w"] + p["b"]) ** 2.0)
    >>> p = {"w": np.array([[0.5, -1.0], [0.3, 0.8]]), "b": np.array([0.1, -0.2])}
    >>> report = check_consistency(loss, p, np.array([[1.0, 2.0], [0.5, -0.3]]), argnums=0)
    >>> report["checkpoint"], report["custom_vjp"]
    ('passed', 'not applicable: f calls no custom_vjp function')

    A batching rule that mixes up the examples:

    >>> from nodegrad.engine.registry import BATCH_RULES
    >>> rule = BATCH_RULES["tanh"]
    >>> BATCH_RULES["tanh"] = lambda op, batched, size, x: rule(op, batched, size, x)[::-1]
    >>> try:
    ...     check_consistency(loss, p, np.array([[1.0, 2.0], [0.5, -0.3]]), checks="vmap")
    ... except AssertionError as exc:
    ...     print(exc.pair)
    ... finally:
    ...     BATCH_RULES["tanh"] = rule
    ('vmap(f)', 'f on each example')
    """
    _check_arguments(f, rtol, atol, seed)
    names = _selected(checks, list(CHECKS))
    nums = _positions(f, args, argnums)
    subject = Subject(f, args, nums, seed)
    subject.rtol = _default_rtol(subject) if rtol is None else float(rtol)
    subject.atol = None if atol is None else float(atol)
    report: dict[str, str] = {}
    for name in names:
        try:
            notes = CHECKS[name](subject)
        except NotApplicable as exc:
            report[name] = f"not applicable: {exc}"
            continue
        report[name] = "passed" + "".join(f"; {note}" for note in notes)
    return report
