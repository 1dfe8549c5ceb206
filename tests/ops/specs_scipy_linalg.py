"""Specs for the scipy.linalg family: solve_triangular, solve_banded, solve_sylvester,
lu_factor, expm, sqrtm and logm (the ops :mod:`nodegrad.scipy.linalg` registers).

Matrices are drawn well conditioned, where each function is smooth: triangular ones with a
diagonal of magnitude 1 to 2 and smaller entries above (or below) it; LU factors with
multipliers of magnitude at most 1/2, so partial pivoting picks the drawn row order with a
margin; banded ones in band storage with a diagonal of magnitude 2 to 3 and entries of
magnitude at most 1/2 beside it (diagonally dominant: at most four off-diagonals are
drawn), the unread corners of the storage holding entries too; and ``Q diag(s) Q^T``
with ``s`` in [0.5, 2] plus a small non-symmetric part for the Sylvester equation and
the square root and logarithm (every eigenvalue then has a real part above 0.3, away
from the negative real axis)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import scipy.linalg

import nodegrad.scipy.linalg as sla
from nodegrad.errors import ArgumentError, NoGradientError, NonFiniteError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask
from tests.strategies import float_arrays, floats, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS", "positive_spectrum", "triangular"]


def _orthogonal(draw: st.DrawFn, n: int) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q


def positive_spectrum(draw: st.DrawFn, shape: tuple[int, ...], skew: float = 0.2) -> np.ndarray:
    """``Q diag(s) Q^T + E`` for each matrix of ``shape``: ``s`` in [0.5, 2], ``|E|_2 <= skew``."""
    *batch, n, _ = shape
    out = np.empty(shape)
    for index in np.ndindex(*batch):
        q = _orthogonal(draw, n)
        s = draw(float_arrays((n,), elements=floats(0.5, 2.0)))
        out[index] = (q * s) @ q.T + draw(float_arrays((n, n), elements=floats(-skew, skew))) / n
    return out


def triangular(draw: st.DrawFn, shape: tuple[int, ...], lower: bool) -> np.ndarray:
    """Triangular matrices (the other triangle holds entries too, which must not be read)
    with a diagonal of magnitude 1 to 2 and entries of magnitude at most 1/2 beside it."""
    n = shape[-1]
    full = draw(float_arrays(shape, elements=floats(-0.5, 0.5)))
    diagonal = draw(float_arrays((*shape[:-1],), elements=floats(1.0, 2.0))) * draw(
        float_arrays((*shape[:-1],), elements=st.sampled_from([-1.0, 1.0]))
    )
    full[..., np.arange(n), np.arange(n)] = diagonal
    unread = ~(np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool)))
    full[..., unread] = draw(float_arrays((int(unread.sum()),), elements=floats()))
    return full


@st.composite
def _solve_triangular_cases(draw: st.DrawFn, broadcast: bool = False, conjugate: bool = True) -> Case:
    n = draw(st.integers(1, 4))
    lower, unit_diagonal = draw(st.booleans()), draw(st.booleans())
    trans = draw(st.sampled_from([0, 1, 2, "N", "T", "C"] if conjugate else [0, 1, "N", "T"]))
    batch_a = draw(shapes(max_dims=1, max_side=3))
    vector = draw(st.booleans())
    batch_b = batch_a if vector else draw(st.sampled_from([batch_a, ()]))
    if broadcast:  # one side's batch axes stretched or extended
        batch_a, batch_b, vector = draw(st.sampled_from([((2,), (), False), ((), (2,), False), ((2,), (1,), False)]))
    a = triangular(draw, (*batch_a, n, n), lower)
    b = draw(float_arrays((n,) if vector else (*batch_b, n, draw(st.integers(1, 3)))))
    options = {"trans": trans, "lower": lower, "unit_diagonal": unit_diagonal}
    return Case(
        lambda a, b: sla.solve_triangular(a, b, **options),
        lambda a, b: scipy.linalg.solve_triangular(a, b, **options),
        (a, b),
        (True, True) if broadcast else draw(diff_mask(2)),
        desc=f"solve_triangular {a.shape} {b.shape} {options}",
    )


def banded(draw: st.DrawFn, shape: tuple[int, ...], upper: int) -> np.ndarray:
    """Band storage ``(..., l + u + 1, n)`` of diagonally dominant matrices (see above)."""
    ab = draw(float_arrays(shape, elements=floats(-0.5, 0.5)))
    diagonal = draw(float_arrays((*shape[:-2], shape[-1]), elements=floats(2.0, 3.0)))
    ab[..., upper, :] = diagonal * draw(float_arrays(diagonal.shape, elements=st.sampled_from([-1.0, 1.0])))
    return ab


@st.composite
def _solve_banded_cases(draw: st.DrawFn, broadcast: bool = False) -> Case:
    lower, upper, n = draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(1, 5))
    vector = draw(st.booleans()) and not broadcast
    stacks = [((), ()), ((2,), (2,)), ((2,), ()), ((), (2,))]
    batch_ab, batch_b = ((), ()) if vector else draw(st.sampled_from(stacks))
    ab = banded(draw, (*batch_ab, lower + upper + 1, n), upper)
    b = draw(float_arrays((n,) if vector else (*batch_b, n, draw(st.integers(1, 3)))))
    return Case(
        lambda ab, b: sla.solve_banded((lower, upper), ab, b),
        lambda ab, b: _banded_in_one_dtype((lower, upper), ab, b),
        (ab, b),
        (True, True) if broadcast else draw(diff_mask(2)),
        desc=f"solve_banded ({lower}, {upper}) {ab.shape} {b.shape}",
    )


def _banded_in_one_dtype(l_and_u: tuple[int, int], ab: Any, b: Any) -> Any:
    # scipy 1.17 divides a real b in place by a complex ab when M is 1, and fails: the
    # reference takes the two in their common dtype.
    common = np.result_type(ab, b, np.float32)
    return scipy.linalg.solve_banded(l_and_u, np.asarray(ab, common), np.asarray(b, common))


@st.composite
def _solve_sylvester_cases(draw: st.DrawFn) -> Case:
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    a, b = positive_spectrum(draw, (m, m)), positive_spectrum(draw, (n, n))
    q = draw(float_arrays((m, n)))
    return Case(sla.solve_sylvester, _sylvester_in_one_dtype, (a, b, q), draw(diff_mask(3)), desc=f"sylvester {m}x{n}")


def _sylvester_in_one_dtype(a: Any, b: Any, q: Any) -> Any:
    # scipy 1.17 solves a real matrix with a complex other wrongly when the real one has
    # complex eigenvalues: the reference takes the three in their common dtype.
    common = np.result_type(a, b, q, np.float32)
    return scipy.linalg.solve_sylvester(*(np.asarray(x, common) for x in (a, b, q)))


@st.composite
def _lu_factor_cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(1, 4))
    order = draw(st.permutations(range(n)))
    unit_lower = np.tril(draw(float_arrays((n, n), elements=floats(-0.5, 0.5))), -1) + np.eye(n)
    upper = triangular(draw, (n, n), lower=False) * np.triu(np.ones((n, n)))
    a = (unit_lower @ upper)[np.argsort(order)]
    return Case(
        lambda a: sla.lu_factor(a)[0], lambda a: scipy.linalg.lu_factor(a)[0], (a,), (True,), desc=f"lu_factor {n}"
    )


@st.composite
def _expm_cases(draw: st.DrawFn) -> Case:
    shape = (*draw(shapes(max_dims=1, max_side=3)), *(2 * (draw(st.integers(1, 4)),)))
    a = draw(float_arrays(shape, elements=floats(-1.0, 1.0)))
    return Case(sla.expm, scipy.linalg.expm, (a,), (True,), desc=f"expm {shape}")


@st.composite
def _positive_spectrum_cases(draw: st.DrawFn, name: str) -> Case:
    shape = (*draw(shapes(max_dims=1, max_side=2)), *(2 * (draw(st.integers(1, 3)),)))
    a = positive_spectrum(draw, shape)
    return Case(getattr(sla, name), getattr(scipy.linalg, name), (a,), (True,), desc=f"{name} {shape}")


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "solve_triangular": _solve_triangular_cases(),
    "solve_banded": _solve_banded_cases(),
    "solve_sylvester": _solve_sylvester_cases(),
    "lu_factor": _lu_factor_cases(),
    "expm": _expm_cases(),
    "sqrtm": _positive_spectrum_cases("sqrtm"),
    "logm": _positive_spectrum_cases("logm"),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {}  # the composites are tested in tests/test_scipy_linalg.py
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    "solve_triangular": _solve_triangular_cases(broadcast=True),
    "solve_banded": _solve_banded_cases(broadcast=True),
}
# Every op is holomorphic (solve_triangular with a conjugate transpose, trans=2, is not:
# tests/test_scipy_linalg.py checks it along real and imaginary directions). The imaginary
# parts are small where the drawn spectrum or pivoting must stay as drawn.
COMPLEX: dict[str, ComplexSpec] = {
    "solve_triangular": ComplexSpec(_solve_triangular_cases(conjugate=False), imag=floats(-0.3, 0.3), holomorphic=True),
    "solve_banded": ComplexSpec(_solve_banded_cases(), imag=floats(-0.3, 0.3), holomorphic=True),
    "solve_sylvester": ComplexSpec(_solve_sylvester_cases(), imag=floats(-0.05, 0.05), holomorphic=True),
    "lu_factor": ComplexSpec(_lu_factor_cases(), imag=floats(-0.05, 0.05), holomorphic=True),
    "expm": ComplexSpec(_expm_cases(), holomorphic=True),
    "sqrtm": ComplexSpec(_positive_spectrum_cases("sqrtm"), imag=floats(-0.05, 0.05), holomorphic=True),
    "logm": ComplexSpec(_positive_spectrum_cases("logm"), imag=floats(-0.05, 0.05), holomorphic=True),
}


def _nan(shape: tuple[int, ...]) -> Any:
    return np.full(shape, np.nan)


_M23 = np.ones((2, 3))
BAD_CALLS = [
    BadCall("solve_triangular", (_M23, np.ones(2)), sla.solve_triangular, ShapeError, ("square", "(2, 3)")),
    BadCall("solve_triangular", (np.eye(2), np.ones(3)), sla.solve_triangular, ShapeError, ("float64[3]",)),
    BadCall(
        "solve_triangular",
        (np.eye(2), np.ones(2)),
        lambda a, b: sla.solve_triangular(a, b, trans="X"),
        ArgumentError,
        ("trans", "'X'"),
    ),
    BadCall("solve_triangular", (_nan((2, 2)), np.ones(2)), sla.solve_triangular, NonFiniteError, ("NaN",)),
    BadCall(
        "solve_banded",
        (np.ones((3, 4)), np.ones(4)),
        lambda ab, b: sla.solve_banded((1, 0), ab, b),
        ShapeError,
        ("l + u + 1 = 2 rows", "(3, 4)"),
    ),
    BadCall(
        "solve_banded",
        (np.ones((3, 4)), np.ones(3)),
        lambda ab, b: sla.solve_banded((1, 1), ab, b),
        ShapeError,
        ("M = 4 rows", "(3,)"),
    ),
    BadCall(
        "solve_banded",
        (np.ones((3, 4)), np.ones(4)),
        lambda ab, b: sla.solve_banded((1, -1), ab, b),
        ArgumentError,
        ("non-negative", "(1, -1)"),
    ),
    BadCall(
        "solve_banded",
        (_nan((3, 4)), np.ones(4)),
        lambda ab, b: sla.solve_banded((1, 1), ab, b),
        NonFiniteError,
        ("NaN",),
    ),
    BadCall("solve_sylvester", (np.eye(2), _M23, _M23), sla.solve_sylvester, ShapeError, ("square", "(2, 3)")),
    BadCall("solve_sylvester", (np.eye(2), np.eye(2), _M23), sla.solve_sylvester, ShapeError, ("float64[2, 3]",)),
    BadCall("lu_factor", (np.ones(3),), sla.lu_factor, ShapeError, ("matrix", "(3,)")),
    BadCall("lu_factor", (_M23,), sla.lu_factor, NoGradientError, ("square", "(2, 3)")),
    BadCall("lu_factor", (_nan((2, 2)),), sla.lu_factor, NonFiniteError, ("NaN",)),
    BadCall("expm", (_M23,), sla.expm, ShapeError, ("square", "(2, 3)")),
    BadCall("expm", (_nan((2, 2)),), sla.expm, NonFiniteError, ("NaN",)),
    BadCall("sqrtm", (np.diag([1.0, -4.0]),), sla.sqrtm, ArgumentError, ("negative real axis", "-4")),
    BadCall("sqrtm", (np.ones(3),), sla.sqrtm, ShapeError, ("square", "(3,)")),
    BadCall("logm", (np.diag([1.0, 0.0]),), sla.logm, ArgumentError, ("negative real axis", "0")),
]
