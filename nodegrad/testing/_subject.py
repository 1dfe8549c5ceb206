"""What :func:`nodegrad.testing.check_consistency` checks and how it compares.

:class:`Subject` is the function under check at its point (the differentiated arguments,
its scalar form, the random draws every check shares); :func:`compare` compares two
structured results entry by entry and raises :class:`ConsistencyError` naming the pair,
the argument, the key path and the entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.structure import (
    TreeDef,
    differentiable_leaves,
    flatten,
    flatten_with_paths,
    is_differentiable_leaf,
    zip_leaves,
)
from nodegrad.errors import StructureError
from nodegrad.transforms import grad
from nodegrad.tree import map_floats

__all__ = [
    "ConsistencyError",
    "NotApplicable",
    "Subject",
    "compare",
    "describe_entry",
    "first_line",
    "float_leaves",
    "weighted_sum",
]

Function = Callable[..., Any]
#: Where an entry sits, for messages: ``describe(name, key_path, leaf, index) -> str``.
Describe = Callable[[str, str, Any, tuple[int, ...]], str]


class ConsistencyError(AssertionError):
    """Two ways of computing the same value disagree (raised by :func:`check_consistency`).

    Attributes
    ----------
    pair : tuple of str
        What disagrees, e.g. ``("grad(checkpoint(f))", "grad(f)")``: the route under test
        first, the one it is compared with second.
    """

    def __init__(self, message: str, pair: tuple[str, str]) -> None:
        super().__init__(message)
        self.pair = pair

    def __reduce__(self) -> Any:
        # Pickled with its pair (across processes: pytest-xdist, multiprocessing).
        return (type(self), (str(self), self.pair))


class NotApplicable(Exception):  # noqa: N818  (a signal between the checks and the report, never raised to users)
    """Raised by a check that does not apply to the function: why."""


class Subject:
    """The function under check, at its point: the differentiated arguments, the function
    of them alone, its scalar form for the gradient checks, and the random draws that
    every check shares (from one seeded generator, in a fixed order)."""

    def __init__(self, f: Function, args: tuple[Any, ...], nums: tuple[int, ...], seed: int) -> None:
        self.f, self.args, self.nums = f, args, nums
        self.names = [f"argument {k}" for k in nums]
        self.xs = [args[k] for k in nums]
        self.rng = np.random.default_rng(seed)
        self.out = f(*args)
        real_scalar = is_differentiable_leaf(self.out) and np.ndim(self.out) == 0 and not np.iscomplexobj(self.out)
        #: The fixed cotangent that makes a scalar of a non-scalar output (``None``: it is one).
        self.v = None if real_scalar else self.random(self.out)
        self.differentiable_output = bool(differentiable_leaves(self.out))
        self.rtol = 0.0
        self.atol: float | None = None
        self._grads: tuple[Any, ...] | None = None
        self._copies: list[tuple[Any, ...]] | None = None
        #: Values one check computes and another reuses (the Hessian), by name.
        self.cache: dict[str, Any] = {}

    # -- the functions the checks transform --------------------------------------------------
    def bound(self, *xs: Any) -> Any:
        """``f`` as a function of the differentiated arguments, the others as given."""
        full = list(self.args)
        for k, x in zip(self.nums, xs, strict=True):
            full[k] = x
        return self.f(*full)

    def scalar_of(self, g: Function) -> Function:
        """``g`` (a function of the differentiated arguments returning what ``f`` returns)
        made a real scalar: ``Re(sum(out * v))`` over the output's float leaves."""
        if self.v is None:
            return g
        v = self.v
        return lambda *xs: weighted_sum(g(*xs), v)

    def scalar(self, *xs: Any) -> Any:
        """The scalar the gradient checks differentiate: ``f`` itself, or ``<f, v>``."""
        return self.scalar_of(self.bound)(*xs)

    def scalar_of_all(self, *args: Any) -> Any:
        """The same scalar as a function of all of ``f``'s arguments (for ``replay``)."""
        out = self.f(*args)
        return out if self.v is None else weighted_sum(out, self.v)

    @property
    def every(self) -> tuple[int, ...]:
        """``argnums`` selecting every differentiated argument of :meth:`scalar`."""
        return tuple(range(len(self.xs)))

    def grads(self) -> tuple[Any, ...]:
        """``grad(scalar)`` at the point, one gradient per differentiated argument (computed once)."""
        if self._grads is None:
            self.need_gradients()
            self._grads = tuple(grad(self.scalar, argnums=self.every)(*self.xs))
        return self._grads

    def copies(self) -> list[tuple[Any, ...]]:
        """Three copies of the differentiated arguments: as given, then two moved by
        :meth:`perturbed` (drawn once)."""
        if self._copies is None:
            xs = tuple(self.xs)
            self._copies = [xs, self.perturbed(xs), self.perturbed(xs)]
        return self._copies

    def per_argument(self, got: Sequence[Any], expected: Sequence[Any]) -> list[tuple[str, Any, Any]]:
        """``(argument name, got, expected)`` for :func:`compare`, one per differentiated argument."""
        return list(zip(self.names, got, expected, strict=True))

    def need_gradients(self) -> None:
        """Refuse (as not applicable) a gradient check of a function with no float output."""
        if not self.differentiable_output:
            msg = "f's output holds no float values to differentiate"
            raise NotApplicable(msg)

    # -- draws ---------------------------------------------------------------------------
    def random(self, like: Any) -> Any:
        """Standard normal draws in the float leaves of ``like`` (complex ones for complex
        leaves), in their dtypes; Python numbers stay Python numbers."""

        def draw(leaf: Any) -> Any:
            values = self.rng.standard_normal(np.shape(leaf))
            if np.iscomplexobj(leaf):
                values = values + 1j * self.rng.standard_normal(np.shape(leaf))
            if isinstance(leaf, float | complex):
                return type(leaf)(values)
            return values.astype(np.result_type(leaf))

        return map_floats(draw, like)

    def perturbed(self, values: Any) -> Any:
        """``values`` with each float entry moved by about 1% of itself: its sign (and so
        the domain of a log or a sqrt) is kept."""
        noise = self.random(values)

        def moved(leaf: Any, n: Any) -> Any:
            result = leaf * (1 + 0.01 * n)
            return type(leaf)(result) if isinstance(leaf, float | complex) else np.asarray(result, np.result_type(leaf))

        return map_floats(moved, values, noise)

    def tolerance(self, *values: Any) -> float:
        """The absolute tolerance of a comparison: ``atol`` if given, else rtol times the
        largest magnitude among the compared values (entries near zero that cancel are
        rounded relative to the others)."""
        if self.atol is not None:
            return self.atol
        magnitudes = [float(np.max(np.abs(leaf), initial=0.0)) for v in values for _, leaf in float_leaves(v)]
        return self.rtol * max(magnitudes, default=0.0)


def holds_table(value: Any) -> bool:
    """Whether a pandas object (or an ``ng.Frame``) is among ``value``'s containers."""
    return _table_inside(flatten(value)[1])


def _table_inside(treedef: TreeDef) -> bool:
    if treedef.handler is None:
        return False
    module = type(treedef.template).__module__
    table = module.split(".")[0] == "pandas" or module.startswith("nodegrad.ops.tables.")
    return table or any(_table_inside(c) for c in treedef.children)


def first_line(exc: BaseException, width: int = 120) -> str:
    """The start of an exception's message, for a note in the report."""
    line = str(exc).split("\n", 1)[0]
    return line if len(line) <= width else line[:width].rsplit(" ", 1)[0] + " ..."


def weighted_sum(out: Any, v: Any) -> Any:
    """``Re(sum(out * v))`` over the float leaves of ``out``, recorded as ops; ``v``'s leaves
    are found by key path (a table's gradient holds its float columns alone)."""
    weights = dict(differentiable_leaves(v))
    total: Any = 0.0
    for path, leaf in differentiable_leaves(out):
        w = weights.get(path)
        if w is None:
            continue
        term = ops.sum(ops.multiply(leaf, w))
        total = total + (ops.real(term) if np.iscomplexobj(w) else term)
    return total


def float_leaves(value: Any) -> list[tuple[str, Any]]:
    """``(key path, leaf)`` for the float and complex leaves of ``value`` (``None`` skipped)."""
    return [(path, leaf) for path, leaf in differentiable_leaves(value) if leaf is not None]


# -- comparing ---------------------------------------------------------------------------------


def describe_entry(name: str, path: str, leaf: Any, index: tuple[int, ...]) -> str:
    """``argument 0['w'] (shape (3,), float64), entry (1,)``: where a number sits."""
    where = f"{name}{path} (shape {np.shape(leaf)}, {np.result_type(leaf)})"
    return f"{where}, entry {index}" if index else where


def compare(
    subject: Subject,
    check: str,
    pair: tuple[str, str],
    parts: Sequence[tuple[str, Any, Any]],
    *,
    exact: bool = False,
    scales: Sequence[Any] | None = None,
    describe: Describe | None = None,
) -> None:
    """Raise :class:`ConsistencyError` where ``got`` and ``expected`` differ, for each
    ``(name, got, expected)`` of ``parts`` (structures, compared leaf by leaf): beyond
    ``atol + rtol * max(|got|, |expected|, scale)`` entrywise, or at all with ``exact``.
    ``scales`` (one structure per part, or None) holds the size of the terms an entry
    adds up, when that is larger than the entry; ``describe`` says where an entry sits
    (default :func:`describe_entry`)."""
    for name, got, expected in parts:
        _refuse_handles(check, pair, name, got, expected)
    atol = 0.0 if exact else subject.tolerance(*(p[1] for p in parts), *(p[2] for p in parts))
    for k, (name, got, expected) in enumerate(parts):
        scale = scales[k] if scales is not None else None
        for path, want, have, size in _paired(check, pair, name, got, expected, scale):
            where = (name, path, describe or describe_entry)
            _compare_leaf(subject, check, pair, where, (have, want, size), atol, exact)


def _refuse_handles(check: str, pair: tuple[str, str], name: str, got: Any, expected: Any) -> None:
    """A transform's result holds plain values only: a traced one escaped a transform that
    has returned (a custom function's ``fwd`` storing a traced value where a later call
    reads it, say)."""
    for side, value in zip(pair, (got, expected), strict=True):
        for path, leaf in flatten_with_paths(value):
            if type(leaf) in INTERPRETED:
                msg = (
                    f"check_consistency ({check!r}): {side} gives a value still traced by a transform at "
                    f"{name}{path} (a leaked tracer: a custom function's fwd or bwd keeping a traced value where "
                    f"another call reads it?), so it cannot match {pair[1] if side == pair[0] else pair[0]}"
                )
                raise ConsistencyError(msg, pair)


def _paired(
    check: str, pair: tuple[str, str], name: str, got: Any, expected: Any, scale: Any
) -> list[tuple[str, Any, Any, Any]]:
    """The float leaves of ``expected`` with ``got``'s (and ``scale``'s) at the same key
    paths; a structure, shape or dtype that differs is itself a disagreement."""
    try:
        pairs = zip_leaves(expected, got)
    except StructureError as exc:
        msg = f"check_consistency ({check!r}): {pair[0]} and {pair[1]} have different structures for {name}: {exc}"
        raise ConsistencyError(msg, pair) from None
    sizes = dict(float_leaves(scale)) if scale is not None else {}
    found = []
    for path, want, have in pairs:
        if want is None or not is_differentiable_leaf(want):
            continue
        if have is None or np.shape(have) != np.shape(want) or np.result_type(have) != np.result_type(want):
            shown = "None" if have is None else f"shape {np.shape(have)}, dtype {np.result_type(have)}"
            msg = (
                f"check_consistency ({check!r}): {pair[0]} and {pair[1]} differ at {name}{path}: {pair[0]} has "
                f"{shown}, {pair[1]} shape {np.shape(want)}, dtype {np.result_type(want)}"
            )
            raise ConsistencyError(msg, pair)
        found.append((path, want, have, sizes.get(path)))
    return found


def _compare_leaf(
    subject: Subject,
    check: str,
    pair: tuple[str, str],
    where: tuple[str, str, Describe],
    values: tuple[Any, Any, Any],
    atol: float,
    exact: bool,
) -> None:
    """One leaf of :func:`compare`: ``values`` is ``(got, expected, scale or None)``."""
    have, want = np.asarray(values[0]), np.asarray(values[1])
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: told apart by ``same``
        difference = np.abs(have - want)
    same = (have == want) | (np.isnan(have) & np.isnan(want))  # infinities and NaN where both have them
    largest = np.maximum(np.abs(have), np.abs(want))
    if values[2] is not None:
        largest = np.maximum(largest, np.abs(np.asarray(values[2])))
    tolerance = np.zeros(np.shape(want)) if exact else atol + subject.rtol * largest
    bad = ~same if exact else ~((difference <= tolerance) | same)  # a NaN on one side alone fails
    if not np.any(bad):
        return
    index = _worst(bad, difference)
    name, path, describe = where
    shown = describe(name, path, want, index)
    if exact:
        rule = f"|difference| = {difference[index]:.3g}: not bit for bit"
    else:
        rule = (
            f"|difference| = {difference[index]:.3g} > tolerance {tolerance[index]:.3g} "
            f"(atol={atol:.3g} + rtol={subject.rtol:g} * {float(largest[index]):.3g})"
        )
    width = max(len(pair[0]), len(pair[1]))
    msg = (
        f"check_consistency ({check!r}): {pair[0]} and {pair[1]} disagree at {shown}:\n"
        f"  {pair[0]:<{width}} = {have[index].item()!r}\n"
        f"  {pair[1]:<{width}} = {want[index].item()!r}\n"
        f"  {rule}"
    )
    raise ConsistencyError(msg, pair)


def _worst(bad: np.ndarray, difference: np.ndarray) -> tuple[int, ...]:
    """The index of the largest failing difference (a NaN one first)."""
    scores = np.where(bad, np.nan_to_num(difference, nan=np.inf), -1.0)
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(scores)), np.shape(bad)))
