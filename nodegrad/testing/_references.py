"""The numeric side of :func:`~nodegrad.testing.check_grads`' dot-product test: central
differences, or the complex step.

The complex step takes a directional derivative with no subtraction:
``Im(f(x + i h u)) / h = f'(x) u + O(h**2)``, exact to rounding for ``h = 1e-20`` when ``f``
is real-analytic, so it has neither a step-size trade-off nor the rounding error of a
difference of two large values. It needs ``f`` analytic: ``abs``, the real and imaginary
parts, ``conj``, comparisons of complex values, casts to real dtypes are not the analytic
continuation of their real selves, and give a wrong answer without complaint. So before it
is trusted the function is recorded once at a complex point and those ops looked for;
what raises on complex values, or drops an imaginary part, is caught as it happens; and a
failure it reports is checked against central differences. Whatever breaks it, the check
falls back to central differences, once, with a ``UserWarning`` saying why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.traced import unwrap
from nodegrad.errors import user_stacklevel
from nodegrad.testing._leaves import absolute, as_float64, pair
from nodegrad.testing._recording import record_call
from nodegrad.tree import add, map_floats, scale

__all__ = ["COMPLEX_STEP", "NON_ANALYTIC", "REFERENCES", "ComplexStep", "NotAnalyticError", "Numeric", "OneArgument"]

REFERENCES = ("central_difference", "complex_step")

#: The complex step ``h``: tiny enough that ``O(h**2)`` vanishes in float64, and far above
#: the smallest normal number, so ``h * u`` keeps its digits.
COMPLEX_STEP = 1e-20

#: Ops whose value at a complex point is not the analytic continuation of their real
#: values: a modulus, a part, a conjugate, an order (``max`` picks by the real part, then
#: the imaginary one: at a tie by the step itself), and the decompositions LAPACK computes
#: with conjugates and norms (a Hermitian matrix read from one triangle, unit eigenvectors,
#: a Schur form), whose imaginary parts of 1e-20 do not survive; ``sign``, ``var`` and
#: ``norm`` are built of ``abs``. Casts to a real dtype and real-valued results (``angle``,
#: ``svdvals``) show as an op that turns a complex value real. Found by comparing the
#: complex step with central differences on every registered op's test cases.
NON_ANALYTIC = frozenset(
    {
        "abs",
        "real",
        "imag",
        "conj",
        "angle",
        "maximum",
        "minimum",
        "clamp",
        "relu",
        "max",
        "min",
        "segment_max",
        "read_triangle",
        "cholesky",
        "eigh_vectors",
        "eigvalsh",
        "eig_vectors",
        "svd_u",
        "svd_vh",
        "svdvals",
        "pinv",
        "qr_q",
        "qr_r",
        "signdet",
        "logabsdet",
        "solve_sylvester",
        "layer_norm",
        "batch_norm",
    }
)

_COMPLEX_WARNING: type[Warning] = getattr(getattr(np, "exceptions", np), "ComplexWarning", RuntimeWarning)


class NotAnalyticError(Exception):
    """``f`` is not analytic at the point: complex step cannot give its derivative."""


class ComplexStep:
    """Whether the complex step still serves one ``check_grads`` call: once something
    breaks it, every later check falls back to central differences (warned once)."""

    def __init__(self) -> None:
        self.broken: str | None = None
        self._scanned: list[Callable[..., Any]] = []

    def give_up(self, header: str, why: str) -> None:
        if self.broken is not None:
            return
        self.broken = why
        msg = (
            f"{header}: reference='complex_step' needs f analytic at the point, but {why}; "
            "falling back to central differences"
        )
        warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())

    def scan(self, f64: Callable[..., Any], point: list[Any], us: list[Any], header: str) -> None:
        """Record ``f64`` once at ``point + i h us`` and give up if it meets what is not
        analytic (each function once: its derivative functions are scanned in turn)."""
        if self.broken is not None or any(f is f64 for f in self._scanned):
            return
        self._scanned.append(f64)
        why = _not_analytic(f64, point, us)
        if why is not None:
            self.give_up(header, why)


class Numeric:
    """The numeric directional derivatives of one check: ``<v, f'(x) u>`` for the
    direction ``us`` of the arguments, by complex step (``state`` given and not broken) or
    by central differences of ``f64`` (``f`` with its fixed arguments in float64)."""

    def __init__(
        self, f64: Callable[..., Any], point: list[Any], eps: float, state: ComplexStep | None, header: str
    ) -> None:
        self.f64, self.point, self.eps, self.state, self.header = f64, point, eps, state, header
        # Caches by id(us), holding on to ``us`` so that the id cannot be reused.
        self._moved: dict[tuple[Any, ...], tuple[list[Any], Any]] = {}

    @property
    def complex_step(self) -> bool:
        return self.state is not None and self.state.broken is None

    def estimate(self, v: Any, us: list[Any]) -> tuple[float, str]:
        """``(value, label)``: the derivative, and what computed it, for the message."""
        if self.complex_step:
            try:
                return self.by_complex_step(v, us), f"complex step, h={COMPLEX_STEP:g}"
            except NotAnalyticError as exc:
                assert self.state is not None
                self.state.give_up(self.header, str(exc))
        return self.central(v, us), f"central difference, eps={self.eps:g}"

    def noise(self, v: Any, us: list[Any]) -> float:
        """What rounding alone can put into the estimate (none into the complex step's)."""
        return 0.0 if self.complex_step else self.rounding(v, us)

    def central(self, v: Any, us: list[Any]) -> float:
        return (pair(v, self._side(us, 1.0)) - pair(v, self._side(us, -1.0))) / (2 * self.eps)

    def truncation(self, v: Any, us: list[Any]) -> float:
        """What the estimate's own error can be, measured: twice the gap between it and the
        estimate over a ten times wider step. Truncation is a hundred times larger there
        (the step squared times the third derivative), or ten times at a kink (the step
        times the two sides' curvatures' gap), so the gap is at least 9 of it; rounding
        that cancels inside ``f`` (its terms larger than its value) is ten times smaller
        there, so the gap is about all of it. 0 where ``f`` cannot be evaluated that far.
        (The complex step's truncation is tiny, ``1e-40`` times the third derivative, but
        not nothing next to a derivative that is 0.)"""
        if not self.complex_step:
            return self._truncation(v, us)
        try:
            gap = 2 * abs(self.by_complex_step(v, us, 10 * COMPLEX_STEP) - self.by_complex_step(v, us))
        except NotAnalyticError:
            return 0.0
        return gap if np.isfinite(gap) else 0.0

    def _truncation(self, v: Any, us: list[Any]) -> float:
        # The wider step alone can miss: its truncation and the rounding at this step can
        # cancel by chance where the derivative is 0 (kl_div(x, x), whose terms cancel).
        # A ten times narrower step has ten times the rounding and almost no truncation, so
        # its gap measures the rounding whatever the sign of the truncation.
        central = self.central(v, us)
        gaps = [2 * abs(self._at_step(v, us, scale) - central) for scale in (10.0, 0.1)]
        return max((gap for gap in gaps if np.isfinite(gap)), default=0.0)

    def _at_step(self, v: Any, us: list[Any], scale: float) -> float:
        try:
            return (pair(v, self._side(us, scale)) - pair(v, self._side(us, -scale))) / (2 * scale * self.eps)
        except Exception:  # outside f's domain at that step: no estimate
            return float("nan")

    def rounding(self, v: Any, us: list[Any]) -> float:
        # What float64 rounding of the two evaluations alone can put into the central
        # difference: a large value (f + 1e6) loses digits its derivative does not have.
        size = pair(absolute(v), absolute(self._side(us, 1.0))) + pair(absolute(v), absolute(self._side(us, -1.0)))
        return 4 * float(np.finfo(np.float64).eps) * size / (2 * self.eps)

    def by_complex_step(self, v: Any, us: list[Any], h: float = COMPLEX_STEP) -> float:
        key = (id(us), "complex", h)
        if key not in self._moved:
            stepped = [_stepped(p, u, h) for p, u in zip(self.point, us, strict=True)]
            with warnings.catch_warnings():
                warnings.simplefilter("error", _COMPLEX_WARNING)
                try:
                    out = self.f64(*stepped)
                except _COMPLEX_WARNING as exc:
                    msg = f"numpy dropped an imaginary part ({exc})"
                    raise NotAnalyticError(msg) from None
                except Exception as exc:
                    msg = f"f raised {type(exc).__name__} on complex arguments ({exc})"
                    raise NotAnalyticError(msg) from None
            self._moved[key] = us, out
        return pair(v, map_floats(np.imag, self._moved[key][1])) / h

    def explains(self, v: Any, us: list[Any], analytic: float, terms: float, rtol: float, atol: float) -> bool:
        """After the complex step disagreed with ``analytic``: whether central differences
        agree with it instead and not with the complex step, which then is what is wrong
        (``f`` is not analytic there); the check falls back to central differences."""
        stepped, central = self.by_complex_step(v, us), self.central(v, us)
        tolerance = atol + rtol * max(abs(central), terms) + self.rounding(v, us) + self._truncation(v, us)
        if abs(analytic - central) <= tolerance < abs(stepped - central):
            assert self.state is not None
            why = f"its complex-step derivative ({stepped!r}) disagrees with central differences ({central!r})"
            self.state.give_up(self.header, why)
            return True
        return False

    def _side(self, us: list[Any], sign: float) -> Any:
        key = (id(us), sign)
        if key not in self._moved:
            moved = [_moved(p, u, sign * self.eps) for p, u in zip(self.point, us, strict=True)]
            self._moved[key] = us, self.f64(*moved)
        return self._moved[key][1]


def _moved(point: Any, direction: Any, step: float) -> Any:
    """``point + step * direction``, in float64 (leaf by leaf for structures)."""
    if type(point) is np.ndarray and type(direction) is np.ndarray and point.dtype.kind == "f":
        return point + step * direction.astype(np.float64, copy=False)  # an array: the common case
    return add(point, scale(map_floats(as_float64, direction), step))


class OneArgument:
    """Central differences of ``f64`` (``f`` with its fixed arguments in float64) as its
    argument ``k`` moves from ``point`` along a direction, and what rounding of the two
    evaluations and the difference's own error (measured at a ten times wider step, as
    :meth:`Numeric.truncation`) can put into them, entry by entry: the numeric side of
    check_grads' Cauchy-Riemann test."""

    def __init__(self, f64: Callable[..., Any], point: list[Any], k: int, eps: float) -> None:
        self.f64, self.point, self.k, self.eps = f64, point, k, eps

    def at(self, direction: Any, step: float) -> Any:
        moved = add(self.point[self.k], scale(map_floats(as_float64, direction), step))
        return self.f64(*(moved if j == self.k else p for j, p in enumerate(self.point)))

    def derivative(self, direction: Any, wider: float = 1.0) -> Any:
        h = wider * self.eps
        return scale(add(self.at(direction, h), scale(self.at(direction, -h), -1.0)), 1 / (2 * h))

    def allowance(self, direction: Any) -> Any:
        unit = 4 * float(np.finfo(np.float64).eps) / (2 * self.eps)
        ends = self.at(direction, self.eps), self.at(direction, -self.eps)
        rounding = map_floats(lambda p, q: unit * (np.abs(p) + np.abs(q)), *ends)
        gap = map_floats(lambda p, q: 2 * np.abs(p - q), self.derivative(direction, 10.0), self.derivative(direction))
        return add(rounding, gap)


def _stepped(point: Any, direction: Any, h: float = COMPLEX_STEP) -> Any:
    """``point + i h direction``, in complex128."""
    imaginary = map_floats(lambda d: as_float64(d) * (h * 1j), direction)
    return add(map_floats(_as_complex128, point), imaginary)


def _as_complex128(leaf: Any) -> Any:
    return complex(leaf) if isinstance(leaf, float) else np.asarray(leaf, dtype=np.complex128)


def _not_analytic(f64: Callable[..., Any], point: list[Any], us: list[Any]) -> str | None:
    """What makes ``f64`` not analytic at ``point + i h us``, from one recording of it there:
    an op of :data:`NON_ANALYTIC`, one that turns a complex value real, an imaginary part
    numpy drops, an error; ``None`` if nothing does."""
    stepped = [_stepped(p, u) for p, u in zip(point, us, strict=True)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            recording = record_call(f64, dict(enumerate(stepped)), range(len(stepped)))
        except Exception as exc:
            return f"f raised {type(exc).__name__} on complex arguments ({exc})"
    for warning in caught:
        if issubclass(warning.category, _COMPLEX_WARNING):
            return f"numpy dropped an imaginary part ({warning.message})"
    for i, node in enumerate(recording.nodes):
        if node.op.name in NON_ANALYTIC:
            return f"'{node.op.name}' {recording.where(i)} is not analytic"
        if _turns_real(node):
            return f"'{node.op.name}' {recording.where(i)} turns a complex value real"
    return None


def _turns_real(node: Any) -> bool:
    """Whether ``node`` makes a real array or number of a complex one."""
    return _kind(node.value) == "f" and any(_kind(node.args[k]) == "c" for k in node.argnums)


def _kind(value: Any) -> str:
    value = unwrap(value)
    return np.result_type(value).kind if isinstance(value, np.ndarray | np.generic | float | complex) else ""
