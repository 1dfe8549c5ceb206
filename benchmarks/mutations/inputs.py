"""Inputs for the catalogue's functions: the shipped strategies, and a reproducible draw.

Every argument comes from :mod:`nodegrad.testing.strategies` (``float_arrays``,
``complex_arrays``, ``segment_ids``), mapped where a function needs a domain (positive
values, a well-conditioned matrix) or a tie (a copy of an argument). Examples are drawn
by a small ``@given`` run with a fixed seed and ``derandomize=True``, so a score is the
same on every run of the same code.
"""

from __future__ import annotations

import inspect
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from nodegrad.testing import strategies as kit

__all__ = [
    "KINK_AVOIDANCE",
    "args",
    "arrays",
    "complex_arrays",
    "draw_examples",
    "ids",
    "matrices",
    "positive",
    "spd_matrices",
    "tied",
    "weights",
]

#: How kink-free arguments are drawn: the kit's ``avoid_kinks`` keyword where
#: ``float_arrays`` has it, else distinct values on a grid kept off zero.
KINK_AVOIDANCE = (
    "float_arrays(avoid_kinks=True)"
    if "avoid_kinks" in inspect.signature(kit.float_arrays).parameters
    else "float_arrays(elements=<grid off zero>, unique=True)"
)

# Distinct grid points 0.1 apart, none within 0.05 of zero or of each other: a kink (abs,
# relu, max, sort) is then never within the finite-difference step of a drawn value.
_GRID = st.integers(-29, 29).map(lambda k: k / 10 + 0.05)


def arrays(shape: tuple[int, ...], *, kink_free: bool = False, bound: float = 3.0) -> st.SearchStrategy[Any]:
    """Float64 arrays of ``shape``: any the kit draws (zeros, tiny and repeated values
    included), or with ``kink_free`` values kept off zero and apart from each other."""
    if not kink_free:
        return kit.float_arrays(shape, bound=bound)
    if KINK_AVOIDANCE.startswith("float_arrays(avoid_kinks"):
        return kit.float_arrays(shape, bound=bound, avoid_kinks=True)  # type: ignore[call-arg]
    return kit.float_arrays(shape, elements=_GRID.map(lambda v: v * bound / 3), unique=True)


def positive(shape: tuple[int, ...], low: float = 0.3, high: float = 3.0) -> st.SearchStrategy[Any]:
    """Arrays with entries in ``[low, high]`` (the domain of log, sqrt, a power)."""
    return kit.float_arrays(shape, elements=st.floats(low, high, allow_nan=False, allow_infinity=False))


def complex_arrays(shape: tuple[int, ...], away_from_zero: float = 0.3) -> st.SearchStrategy[Any]:
    """Complex128 arrays of ``shape`` with ``|z| >= away_from_zero`` (abs, angle, 1/z)."""
    return kit.complex_arrays(shape, bound=2.0, away_from_zero=away_from_zero)


def matrices(n: int, batch: tuple[int, ...] = (), dtype: Any = np.float64) -> st.SearchStrategy[Any]:
    """Well-conditioned ``n x n`` matrices (entries in [-1, 1] plus ``4 I``: every
    eigenvalue's real part at least 1), as inverses, solves and determinants need."""
    if np.dtype(dtype).kind == "c":
        drawn = kit.complex_arrays((*batch, n, n), bound=0.7)
    else:
        drawn = kit.float_arrays((*batch, n, n), bound=1.0)
    return drawn.map(lambda a: a + 4 * np.eye(n))


def spd_matrices(n: int) -> st.SearchStrategy[Any]:
    """Symmetric positive-definite ``n x n`` matrices (``a a^T + I``), for Cholesky."""
    return kit.float_arrays((n, n), bound=1.0).map(lambda a: a @ a.T + np.eye(n))


def ids(rows: int, num_segments: int) -> st.SearchStrategy[Any]:
    """Segment ids for ``rows`` rows (the kit's ``segment_ids``: repeats and empty groups)."""
    return kit.segment_ids(rows, num_segments)


def tied(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, Any]]:
    """An array and an exact copy of it: two arguments tied at every entry (a maximum's
    or minimum's gradient must be split between them)."""
    return strategy.map(lambda x: (x, x.copy()))


def args(*strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    """A tuple of arguments, one drawn from each strategy."""
    return st.tuples(*strategies)


def weights(shape: tuple[int, ...], offset: float = 0.0) -> np.ndarray:
    """Fixed, distinct, non-zero weights of ``shape``: a composite's constant cotangent
    direction, so that no output entry is summed with the same weight as another."""
    size = int(np.prod(shape))
    return np.linspace(-1.3, 1.1, size).reshape(shape) + 0.37 + offset


def draw_examples(strategy: st.SearchStrategy[Any], count: int, seed_value: int) -> list[Any]:
    """The first ``count`` examples a derandomized ``@given`` run draws from ``strategy``
    with seed ``seed_value`` (hypothesis' own first example, its simplest, included)."""
    drawn: list[Any] = []

    @seed(seed_value)
    @settings(
        derandomize=True,
        database=None,
        max_examples=count,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn[:count]
