"""One directional derivative of one function against central differences of it, robust
at kinks: the test each recorded op gets when :func:`~nodegrad.testing.check_grads` looks
for the op to blame.

Central differences are unreliable where the function is not smooth within a step (``abs``
at 0, ``max`` with ties, ``clip`` at its bound, ``round``): there they average two one-sided
derivatives, or jump. Blaming an op there would blame an innocent one, so before a
disagreement counts, the difference must be stable: the same at two step sizes, and the
two one-sided differences must not jump apart as the step shrinks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from nodegrad.engine.structure import differentiable_leaves
from nodegrad.testing._leaves import absolute, pair

__all__ = ["AGREES", "DISAGREES", "UNRELIABLE", "Probe", "kinks_split_evenly", "probe", "tolerances_for"]

AGREES, DISAGREES, UNRELIABLE = "agrees", "disagrees", "unreliable"

# The steps along the (already scaled) direction: small enough for truncation to vanish
# below the tolerance, large enough for float64 rounding to stay below it; the second one
# shows whether the first is on a smooth stretch.
_STEP, _WIDER = 1e-6, 1e-5

# (rtol, floor) by the narrowest float dtype of an op's inputs and output: the rule runs in
# that dtype, the central differences in float64 where the forward allows it. Both relative.
_TOLERANCES = {"float16": (3e-2, 1e-2), "float32": (2e-3, 1e-4), "float64": (1e-5, 1e-7)}


@attrs.frozen
class Probe:
    """The outcome of one directional test: the verdict and the numbers behind it."""

    verdict: str
    analytic: float
    numeric: float
    tolerance: float

    def lines(self, formula: str, numeric: str) -> str:
        """The numbers, as the lines of a report."""
        return (
            f"    analytic {formula} = {self.analytic!r}\n"
            f"    numeric  ({numeric}) = {self.numeric!r}\n"
            f"    |difference| = {abs(self.analytic - self.numeric):.3g} > tolerance {self.tolerance:.3g}"
        )


def tolerances_for(*values: Any) -> tuple[float, float]:
    """The (rtol, atol) of the narrowest float dtype among the leaves of ``values``."""
    dtypes = [np.finfo(np.result_type(leaf)).dtype for value in values for _, leaf in differentiable_leaves(value)]
    narrowest = min(dtypes, key=lambda d: d.itemsize, default=np.dtype(float))
    return _TOLERANCES.get(narrowest.name, _TOLERANCES["float64"])


def probe(
    moved: Callable[[float], Any],
    v: Any,
    analytic: float,
    terms: float,
    rtol: float,
    atol: float,
    even_kinks: bool = False,
) -> Probe:
    """Compare ``analytic``, the derivative of ``t -> <v, moved(t)>`` at 0 (``moved(t)`` is
    the function's output at the point moved by ``t`` along the direction), with central
    differences of it; ``terms`` is the sum of the absolute values of the terms of
    ``analytic``, which scales the tolerance. ``even_kinks`` says that every kink at the
    point is an exact two-way one whose rule takes the mean of the one-sided derivatives
    (see :func:`kinks_split_evenly`): there a steady central difference is that mean, and
    a disagreement counts."""
    outputs = {t: moved(t) for t in (-_WIDER, -_STEP, 0.0, _STEP, _WIDER)}
    value = {t: pair(v, out) for t, out in outputs.items()}
    size = {t: pair(absolute(v), absolute(out)) for t, out in outputs.items()}
    unit = max((_unit_roundoff(out) for out in outputs.values()), default=float(np.finfo(np.float64).eps))

    def central(h: float) -> float:
        return (value[h] - value[-h]) / (2 * h)

    def jump(h: float) -> float:
        # The one-sided differences' gap: h times the curvature on a smooth stretch, a
        # constant (the kink's) at a kink.
        return (value[h] - 2 * value[0.0] + value[-h]) / h

    def noise(h: float, middle: float = 0.0) -> float:
        # What rounding of the evaluations alone can put into a difference over 2h.
        return 4 * unit * (size[h] + size[-h] + middle) / (2 * h)

    numeric = central(_STEP)
    size_ = max(abs(numeric), terms)
    tolerance = rtol * size_ + noise(_STEP)
    if abs(analytic - numeric) <= tolerance:  # a NaN fails this comparison too
        return Probe(AGREES, analytic, numeric, tolerance)
    wider = central(_WIDER)
    # Before it counts: the floor, relative to the size of what is compared (never an
    # absolute one, which would pass a wrong rule wherever the derivative is small), and the
    # central difference's truncation, measured: over a ten times wider step it is a hundred
    # times larger (ten times across a kink), so the two differences' gap is at least 9 of it.
    truncation = abs(wider - numeric) / 9 if np.isfinite(wider - numeric) else 0.0
    tolerance += atol * size_ + truncation
    if abs(analytic - numeric) <= tolerance:
        return Probe(AGREES, analytic, numeric, tolerance)
    at_kink = abs(jump(_STEP)) > tolerance + noise(_STEP, 2 * size[0.0]) and abs(jump(_WIDER)) < 5 * abs(jump(_STEP))
    unsteady = not abs(numeric - wider) <= tolerance + noise(_WIDER)  # NaN: unsteady
    verdict = UNRELIABLE if (at_kink and not even_kinks) or unsteady else DISAGREES
    return Probe(verdict, analytic, numeric, tolerance)


def kinks_split_evenly(name: str, args: tuple[Any, ...]) -> bool:
    """Whether the op ``name`` at ``args`` has kinks only where exactly two values tie (or
    ``abs`` meets 0), with none merely close: there its rule splits the gradient evenly
    (takes the mean of the one-sided derivatives), which is what a central difference across
    an exact two-way kink gives, so a wrong tie split can be told. Three tied values, or
    two a rounding apart, are not: the difference across them is no mean of anything."""
    try:
        if name in ("maximum", "minimum"):
            return _two_sided(np.subtract(args[0], args[1]), np.maximum(np.abs(args[0]), np.abs(args[1])))
        if name == "abs":
            return _two_sided(args[0], 0.0)
        if name in ("max", "min"):
            x = np.asarray(args[0])
            extreme = (np.max if name == "max" else np.min)(x, axis=args[1], keepdims=True)
            ties = np.sum(x == extreme, axis=args[1])
            return bool(np.all(ties <= 2)) and _two_sided(np.where(x == extreme, 0.0, x - extreme), x)
        if name == "segment_max":
            data, ids, num = np.asarray(args[0]), np.asarray(args[1]), int(args[2])
            extreme = np.full((num, *data.shape[1:]), -np.inf)
            np.maximum.at(extreme, ids, data)
            tied = data == extreme[ids]
            counts = np.zeros(extreme.shape, int)
            np.add.at(counts, ids, tied.astype(int))
            return bool(np.all(counts <= 2)) and _two_sided(np.where(tied, 0.0, data - extreme[ids]), data)
    except (TypeError, ValueError, IndexError):
        return False
    return False


def _two_sided(gaps: Any, values: Any) -> bool:
    """Every gap (a distance to a kink) exactly 0 or clear of the steps the probes take
    (about ``1e-5`` times the values' size, at least 1): no kink half crossed."""
    size = np.maximum(1.0, np.abs(values))
    return bool(np.all((np.asarray(gaps) == 0) | (np.abs(gaps) > 1e-3 * size)))


def _unit_roundoff(value: Any) -> float:
    """The machine epsilon of the narrowest float leaf of ``value`` (float64's if none)."""
    found = [np.finfo(np.result_type(leaf)).eps for _, leaf in differentiable_leaves(value)]
    return float(max(found, default=np.finfo(np.float64).eps))
