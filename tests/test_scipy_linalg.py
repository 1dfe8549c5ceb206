"""nodegrad.scipy.linalg: scipy's values, and gradients checked against central differences.

The ops (solve_triangular, solve_sylvester, lu_factor, expm, sqrtm, logm) also run through
the generic op checks of ``tests/ops/test_ops.py`` (specs in ``specs_scipy_linalg.py``);
here are the functions built from them and from nodegrad's own linalg ops, second
derivatives, complex matrices, and what is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.scipy.linalg as sla
from nodegrad.errors import ArgumentError, NonFiniteError, ShapeError
from nodegrad.testing import check_grads
from tests.ops.specs_scipy_linalg import positive_spectrum, triangular
from tests.strategies import float_arrays, floats

EXAMPLES = settings(max_examples=20, deadline=None)
FEW = settings(max_examples=8, deadline=None)


def _symmetric(m: Any) -> Any:
    """Both sides read one triangle of a symmetric matrix; the gradient is the symmetric
    one, so the functions checked symmetrize first and central differences agree."""
    return 0.5 * (m + np.swapaxes(m, -1, -2))


def _positive_definite(draw: st.DrawFn, n: int) -> np.ndarray:
    return positive_spectrum(draw, (n, n), skew=0.0)


def _lu_friendly(draw: st.DrawFn, n: int) -> np.ndarray:
    """P L U with multipliers of magnitude at most 1/2: the pivots are clear-cut."""
    order = draw(st.permutations(range(n)))
    unit_lower = np.tril(draw(float_arrays((n, n), elements=floats(-0.5, 0.5))), -1) + np.eye(n)
    upper = np.triu(triangular(draw, (n, n), lower=False))
    return (unit_lower @ upper)[np.argsort(order)]


@st.composite
def _system(draw: st.DrawFn, kind: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 4))
    a = _positive_definite(draw, n) if kind in ("sym", "her", "pos") else positive_spectrum(draw, (n, n))
    b = draw(float_arrays((n,) if draw(st.booleans()) else (n, draw(st.integers(1, 3)))))
    return a, b


# -- values: scipy's, plain and traced -----------------------------------------------------------------


def _same(got: Any, expected: Any) -> None:
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def _both_ways(fn: Callable[..., Any], *args: Any) -> list[Any]:
    """``fn``'s value on plain arguments and on traced ones."""
    with ng.Arena() as arena:
        traced = fn(*(arena.param(a) for a in args))
    return [fn(*args), traced.value]


ASSUME_A = [
    None,
    "gen",
    "sym",
    "her",
    "pos",
    "diagonal",
    "tridiagonal",
    "banded",
    "upper triangular",
    "lower triangular",
]


@pytest.mark.parametrize("assume_a", ASSUME_A)
@EXAMPLES
@given(data=st.data())
def test_solve_reads_what_scipy_reads(assume_a: str | None, data: st.DataObject) -> None:
    a, b = data.draw(_system(assume_a))
    if assume_a not in ("sym", "her", "pos", None, "gen"):  # entries scipy must not read
        a = a + np.triu(data.draw(float_arrays(a.shape, elements=floats(-0.3, 0.3))), 2)
    lower, transposed = data.draw(st.booleans()), data.draw(st.booleans())
    options = {"lower": lower, "assume_a": assume_a, "transposed": transposed and assume_a in (None, "gen")}
    expected = scipy.linalg.solve(a, b, **options)
    for got in _both_ways(lambda a, b: sla.solve(a, b, **options), a, b):
        _same(got, expected)


@pytest.mark.parametrize("assume_a", [None, "gen", "sym", "her", "pos", "upper triangular", "lower triangular"])
@EXAMPLES
@given(data=st.data())
def test_inv_matches_scipy(assume_a: str | None, data: st.DataObject) -> None:
    a, _ = data.draw(_system(assume_a))
    lower = data.draw(st.booleans())
    expected = scipy.linalg.inv(a, assume_a=assume_a, lower=lower)
    for got in _both_ways(lambda a: sla.inv(a, assume_a=assume_a, lower=lower), a):
        _same(got, expected)


def test_inv_of_a_diagonal_reads_the_diagonal_alone() -> None:
    # As scipy documents; scipy 1.17 itself passes the other entries through unchanged.
    a = np.array([[2.0, 5.0], [7.0, 4.0]])
    _same(sla.inv(a, assume_a="diagonal"), np.diag([0.5, 0.25]))
    np.testing.assert_allclose(ng.grad(lambda a: ng.sum(sla.inv(a, assume_a="diagonal")))(a), np.diag([-0.25, -0.0625]))


@EXAMPLES
@given(data=st.data())
def test_factorisations_and_their_solves_match_scipy(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    a, lower = _positive_definite(data.draw, n), data.draw(st.booleans())
    skew = data.draw(float_arrays((n, n), elements=floats(-0.1, 0.1)))
    a = a + np.tril(skew, -1)  # not symmetric: one triangle is read
    b = data.draw(float_arrays((n, 2)))
    read = a if lower else a.T
    _same(sla.cholesky(a, lower=lower), scipy.linalg.cholesky(read if lower else read.T, lower=lower))
    for got in _both_ways(lambda a: sla.cho_factor(a, lower=lower)[0], a):
        _same(got, scipy.linalg.cho_factor(a, lower=lower)[0])
    for got in _both_ways(lambda a, b: sla.cho_solve(sla.cho_factor(a, lower=lower), b), a, b):
        _same(got, scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=lower), b))
    m, trans = _lu_friendly(data.draw, n), data.draw(st.sampled_from([0, 1, 2]))
    lu, piv = scipy.linalg.lu_factor(m)
    np.testing.assert_array_equal(sla.lu_factor(m)[1], piv)
    for got in _both_ways(lambda m, b: sla.lu_solve(sla.lu_factor(m), b, trans=trans), m, b):
        _same(got, scipy.linalg.lu_solve((lu, piv), b, trans=trans))
    for got in _both_ways(sla.det, m):
        _same(got, scipy.linalg.det(m))


@EXAMPLES
@given(data=st.data())
def test_block_diag_matches_scipy(data: st.DataObject) -> None:
    shapes = data.draw(
        st.lists(st.sampled_from([(), (1,), (3,), (2, 2), (1, 3), (3, 1), (2, 0)]), min_size=1, max_size=4)
    )
    blocks = [data.draw(float_arrays(shape)) for shape in shapes]
    expected = scipy.linalg.block_diag(*blocks)
    for got in _both_ways(sla.block_diag, *blocks):
        _same(got, expected)
    check_grads(sla.block_diag, *blocks)


# -- gradients of the composites --------------------------------------------------------------------------


@pytest.mark.parametrize("assume_a", ASSUME_A)
@EXAMPLES
@given(data=st.data())
def test_solve_gradients(assume_a: str | None, data: st.DataObject) -> None:
    a, b = data.draw(_system(assume_a))
    lower = data.draw(st.booleans())
    prepare = _symmetric if assume_a in ("sym", "her", "pos") else (lambda m: m)
    check_grads(lambda a, b: sla.solve(prepare(a), b, lower=lower, assume_a=assume_a), a, b)


@pytest.mark.parametrize("assume_a", ["gen", "sym", "pos", "diagonal", "upper triangular", "lower triangular"])
@FEW
@given(data=st.data())
def test_inv_gradients(assume_a: str, data: st.DataObject) -> None:
    a, _ = data.draw(_system(assume_a))
    prepare = _symmetric if assume_a in ("sym", "pos") else (lambda m: m)
    check_grads(lambda a: sla.inv(prepare(a), assume_a=assume_a), a)


@FEW
@given(data=st.data())
def test_factorisation_gradients(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    a, b, lower = _positive_definite(data.draw, n), data.draw(float_arrays((n, 2))), data.draw(st.booleans())
    check_grads(lambda a: sla.cholesky(_symmetric(a), lower=lower), a)
    check_grads(lambda a, b: sla.cho_solve(sla.cho_factor(_symmetric(a), lower=lower), b), a, b)
    m, trans = _lu_friendly(data.draw, n), data.draw(st.sampled_from([0, 1, 2]))
    check_grads(lambda m, b: sla.lu_solve(sla.lu_factor(m), b, trans=trans), m, b)
    check_grads(sla.det, m)


def test_a_matrix_read_from_one_triangle_gets_the_gradient_of_what_scipy_reads() -> None:
    # Not symmetric: scipy reads one triangle, the gradient is zero in the other and agrees
    # with central differences of scipy's own call.
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]) + np.array(
        [[0.0, 0.3, -0.2], [0.1, 0.0, 0.25], [-0.15, 0.05, 0.0]]
    )
    b = np.array([1.0, -2.0, 0.5])
    for lower, fn, ref in (
        (False, lambda a: ng.sum(sla.cholesky(a)), lambda a: np.sum(scipy.linalg.cholesky(a))),
        (True, lambda a: ng.sum(sla.cholesky(a, lower=True)), lambda a: np.sum(scipy.linalg.cholesky(a, lower=True))),
        (
            False,
            lambda a: ng.sum(sla.solve(a, b, assume_a="sym")),
            lambda a: np.sum(scipy.linalg.solve(a, b, assume_a="sym")),
        ),
        (
            True,
            lambda a: ng.sum(sla.solve(a, b, assume_a="pos", lower=True)),
            lambda a: np.sum(scipy.linalg.solve(a, b, assume_a="pos", lower=True)),
        ),
        (False, lambda a: ng.sum(sla.inv(a, assume_a="pos")), lambda a: np.sum(scipy.linalg.inv(a, assume_a="pos"))),
    ):
        g = ng.grad(fn)(a)
        unread = np.triu(g, 1) if lower else np.tril(g, -1)
        assert np.all(unread == 0.0)
        numeric = np.zeros_like(a)
        for i, j in np.ndindex(*a.shape):
            step = np.zeros_like(a)
            step[i, j] = 1e-6
            numeric[i, j] = (ref(a + step) - ref(a - step)) / 2e-6
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_solve_triangular_gives_nothing_to_the_triangle_it_does_not_read() -> None:
    a = np.array([[2.0, 9.0, 9.0], [0.5, 3.0, 9.0], [0.25, -1.0, 4.0]])
    g = ng.grad(lambda a: ng.sum(sla.solve_triangular(a, np.ones(3), lower=True, unit_diagonal=True)))(a)
    assert np.all(np.triu(g) == 0.0) and np.all(g[np.tril_indices(3, -1)] != 0.0)


# -- matrix functions: accuracy, second order, complex ---------------------------------------------------


@EXAMPLES
@given(data=st.data())
def test_the_expm_gradient_is_scipys_frechet_derivative(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 5))
    a, g = data.draw(float_arrays((n, n), elements=floats(-1.5, 1.5))), data.draw(float_arrays((n, n)))
    _, back = ng.vjp(sla.expm, a)
    (grad,) = back(g)
    # Two algorithms (the block expm against scipy's own Frechet recurrence): they agree to
    # about 1e-12 relative to the matrix's size (an entry much smaller than the others
    # carries the others' rounding: 2.3e-12 was seen on an entry of 6e-3 beside ones of 9).
    expected = scipy.linalg.expm_frechet(a.T, g, compute_expm=False)
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-11 * max(1.0, np.abs(expected).max()))


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
@EXAMPLES
@given(data=st.data())
def test_sqrtm_and_logm_gradients_match_central_differences_closely(name: str, data: st.DataObject) -> None:
    a = positive_spectrum(data.draw, (3, 3))
    check_grads(getattr(sla, name), a, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("expm", lambda draw: (draw(float_arrays((3, 3), elements=floats(-1.0, 1.0))),)),
        ("sqrtm", lambda draw: (positive_spectrum(draw, (2, 2)),)),
        pytest.param(
            "logm",
            lambda draw: (positive_spectrum(draw, (2, 2)),),
            # At order 2 scipy takes logm of the nested Frechet blocks (32 x 32) and may warn
            # that its estimate of the error is 1e-12: no news next to check_grads' tolerance.
            marks=pytest.mark.filterwarnings("ignore:logm result may be inaccurate:RuntimeWarning"),
        ),
        (
            "solve_sylvester",
            lambda draw: (*(positive_spectrum(draw, (2, 2)) for _ in range(2)), draw(float_arrays((2, 2)))),
        ),
        ("solve_triangular", lambda draw: (triangular(draw, (3, 3), lower=True), draw(float_arrays((3, 2))))),
        ("lu_factor", lambda draw: (_lu_friendly(draw, 3),)),
    ],
)
@FEW
@given(data=st.data())
def test_second_derivatives(name: str, make: Callable[[st.DrawFn], tuple[Any, ...]], data: st.DataObject) -> None:
    fn = {
        "lu_factor": lambda a: sla.lu_factor(a)[0],
        "solve_triangular": lambda a, b: sla.solve_triangular(a, b, 1, True),
    }
    check_grads(fn.get(name, getattr(sla, name)), *make(data.draw), order=2)


def _complex(draw: st.DrawFn, a: np.ndarray, scale: float = 0.2) -> np.ndarray:
    return a + 1j * draw(float_arrays(a.shape, elements=floats(-scale, scale)))


@pytest.mark.parametrize("name", ["expm", "sqrtm", "logm", "solve_sylvester", "solve_triangular", "lu_factor", "solve"])
@FEW
@given(data=st.data())
def test_complex_matrices(name: str, data: st.DataObject) -> None:
    draw, n = data.draw, data.draw(st.integers(1, 3))
    b = _complex(draw, draw(float_arrays((n, 2))), 1.0)
    trans = draw(st.sampled_from([0, 1, 2]))
    cases: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
        "expm": (
            sla.expm,
            scipy.linalg.expm,
            (_complex(draw, draw(float_arrays((n, n), elements=floats(-1.0, 1.0)))),),
        ),
        "sqrtm": (sla.sqrtm, scipy.linalg.sqrtm, (_complex(draw, positive_spectrum(draw, (n, n))),)),
        "logm": (sla.logm, scipy.linalg.logm, (_complex(draw, positive_spectrum(draw, (n, n))),)),
        "solve_sylvester": (
            sla.solve_sylvester,
            # scipy solves a real b with complex eigenvalues beside a complex a wrongly: the
            # reference gets every operand in one complex dtype, as sla.solve_sylvester does.
            lambda a, b, q: scipy.linalg.solve_sylvester(a, b.astype(complex), q),
            (_complex(draw, positive_spectrum(draw, (n, n))), positive_spectrum(draw, (2, 2)), b),
        ),
        "solve_triangular": (
            lambda a, b: sla.solve_triangular(a, b, trans, lower=True),
            lambda a, b: scipy.linalg.solve_triangular(a, b, trans, lower=True),
            (_complex(draw, triangular(draw, (n, n), lower=True)), b),
        ),
        "lu_factor": (
            lambda a: sla.lu_factor(a)[0],
            lambda a: scipy.linalg.lu_factor(a)[0],
            (_complex(draw, _lu_friendly(draw, n), 0.05),),
        ),
        "solve": (
            lambda a, b: sla.solve(0.5 * (a + a.conj().T), b, assume_a="her"),
            lambda a, b: scipy.linalg.solve(0.5 * (a + a.conj().T), b, assume_a="her"),
            (_complex(draw, _positive_definite(draw, n), 0.1), b),
        ),
    }
    fn, ref, args = cases[name]
    for got in _both_ways(fn, *args):
        _same(got, ref(*args))
    check_grads(fn, *args)


def test_structured_arguments_get_structured_gradients() -> None:
    params = {"generator": np.array([[0.0, 1.0], [-1.0, 0.0]]), "time": 0.5}
    g = ng.grad(lambda p: ng.sum(sla.expm(p["generator"] * p["time"])))(params)
    assert set(g) == {"generator", "time"} and isinstance(g["time"], float)
    check_grads(lambda p: sla.expm(p["generator"] * p["time"]), params, order=2)


# -- what is refused ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
@pytest.mark.parametrize("eigenvalues", [[2.0, -1.0], [1.0, 0.0], [-3.0, -0.5]])
def test_sqrtm_and_logm_refuse_the_negative_real_axis_by_name(name: str, eigenvalues: list[float]) -> None:
    q = np.array([[0.6, 0.8], [-0.8, 0.6]])
    a = (q * eigenvalues) @ q.T
    with pytest.raises(ArgumentError, match=f"{name}: .*closed negative real axis"):
        ng.grad(lambda a: ng.sum(getattr(sla, name)(a)))(a)
    if 0.0 not in eigenvalues:  # plain values get scipy's (complex) answer; scipy warns at 0
        _same(getattr(sla, name)(a), getattr(scipy.linalg, name)(a))


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda a: sla.solve(a, np.ones(2), assume_a="nonsense"), ArgumentError, "solve: assume_a"),
        (lambda a: sla.inv(a, assume_a="tridiagonal"), ArgumentError, "inv: assume_a"),
        (lambda a: sla.lu_solve(a, np.ones(2)), ArgumentError, "lu_solve: needs the pair"),
        (lambda a: sla.lu_solve((a, np.array([0.5, 1.0])), np.ones(2)), ArgumentError, "lu_solve: piv"),
        (lambda a: sla.lu_solve(sla.lu_factor(a), np.ones(2), trans=3), ArgumentError, "lu_solve: trans"),
        (lambda a: sla.cho_solve(a, np.ones(2)), ArgumentError, "cho_solve: needs the pair"),
        (lambda a: sla.cho_factor(np.stack([a, a])), ShapeError, "cho_factor: needs a square matrix"),
        (lambda a: sla.det(a * np.inf), NonFiniteError, "det: the array must not contain infs or NaNs"),
        (lambda a: sla.block_diag(a, np.ones((1, 1, 1))), ShapeError, "block_diag: blocks must be at most 2-D"),
        (lambda a: sla.cholesky(-a), np.linalg.LinAlgError, "cholesky"),  # numpy's, as scipy raises
    ],
)
def test_bad_calls_raise_nodegrad_errors_naming_the_function(call: Any, error: type, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        ng.grad(lambda a: ng.sum(call(a)))(np.array([[2.0, 0.5], [0.5, 1.0]]))


def test_solve_sylvester_solves_a_real_matrix_with_a_complex_one() -> None:
    # scipy 1.17 gets this wrong (a residual of about 1.9): the three are taken in one dtype
    a, b, q = np.array([[1.0, -2.0], [2.0, 1.0]]), np.array([[1.0 + 0.5j]]), np.array([[1.0], [1.0]])
    x = sla.solve_sylvester(a, b, q)
    np.testing.assert_allclose(a @ x + x @ b, q, atol=1e-14)
    check_grads(sla.solve_sylvester, a, b, q)


@pytest.mark.parametrize(("dtype", "tiny"), [(np.float64, 1.97e-311), (np.float32, 1e-44)])
def test_matrix_function_gradients_along_a_subnormal_direction(dtype: Any, tiny: float) -> None:
    # The direction is scaled to the matrix's norm before the block is formed: a subnormal
    # one needs a scale past the dtype's range, which is kept finite (and as exact).
    a = np.array([[0.5]], dtype)
    (grad,) = ng.vjp(sla.expm, a)[1](np.array([[tiny]], dtype))
    assert grad.dtype == dtype
    expected = np.exp(0.5) * np.array([[tiny]], dtype)  # to the subnormals' few bits
    np.testing.assert_allclose(grad, expected, rtol=1e-3, atol=2 * np.finfo(dtype).smallest_subnormal)


# -- solve_banded ------------------------------------------------------------------------------------


def _dense(ab: np.ndarray, lower: int, upper: int) -> np.ndarray:
    """The matrix whose band storage is ``ab``, built entry by entry from scipy's definition."""
    n = ab.shape[-1]
    a = np.zeros((n, n), ab.dtype)
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            a[i, j] = ab[upper + i - j, j]
    return a


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_solve_banded_is_the_dense_solve_and_its_gradients_are_checked(data: st.DataObject) -> None:
    from tests.ops.specs_scipy_linalg import banded

    lower, upper, n = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)), data.draw(st.integers(1, 6))
    ab = banded(data.draw, (lower + upper + 1, n), upper)
    b = data.draw(float_arrays(data.draw(st.sampled_from([(n,), (n, 1), (n, 3)]))))
    x = sla.solve_banded((lower, upper), ab, b)
    np.testing.assert_allclose(x, scipy.linalg.solve_banded((lower, upper), ab, b), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_dense(ab, lower, upper) @ x, b, rtol=1e-10, atol=1e-12)
    check_grads(lambda ab, b: sla.solve_banded((lower, upper), ab, b), ab, b, order=2, modes=("rev", "fwd"))
    # The corners of the storage that hold no entry of the matrix are not read: no gradient there.
    g = ng.grad(lambda ab: ng.sum(sla.solve_banded((lower, upper), ab, b) ** 2))(ab)
    rows, columns = np.indices(ab.shape)
    unread = (columns + rows - upper < 0) | (columns + rows - upper >= n)
    assert np.all(g[unread] == 0.0)


def test_solve_banded_matches_hips_autograd_and_a_dense_solve() -> None:
    autograd = pytest.importorskip("autograd")
    alg = pytest.importorskip("autograd.scipy.linalg")
    rng = np.random.default_rng(3)
    for lower, upper in ((1, 1), (0, 2), (2, 0), (2, 1)):
        ab = rng.normal(size=(lower + upper + 1, 5)) * 0.3
        ab[upper] += 2.0
        b = rng.normal(size=5)

        def f(mod: Any, np_: Any, lu: tuple[int, int] = (lower, upper)) -> Callable[..., Any]:
            return lambda band, rhs: np_.sum(np_.sin(mod.solve_banded(lu, band, rhs)))

        ours = ng.grad(f(sla, ng), argnums=(0, 1))(ab, b)
        theirs = [autograd.grad(f(alg, autograd.numpy), k)(ab, b) for k in (0, 1)]
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10)
        matrix = _dense(ab, lower, upper)
        dense = ng.grad(lambda b, m=matrix: ng.sum(ng.sin(ng.solve(m, b))))(b)
        np.testing.assert_allclose(ours[1], dense, rtol=1e-10)


def test_solve_banded_stacks_vmap_and_complex() -> None:
    rng = np.random.default_rng(4)
    ab = rng.normal(size=(3, 3, 4)) * 0.3
    ab[:, 1] += 2.0
    b = rng.normal(size=(3, 4, 2))
    np.testing.assert_allclose(sla.solve_banded((1, 1), ab, b), scipy.linalg.solve_banded((1, 1), ab, b), rtol=1e-12)
    check_grads(lambda ab, b: sla.solve_banded((1, 1), ab, b), ab, b)
    per_example = ng.vmap(lambda ab, b: sla.solve_banded((1, 1), ab, b))(ab, b[..., 0])
    np.testing.assert_allclose(per_example, scipy.linalg.solve_banded((1, 1), ab, b)[..., 0], rtol=1e-12)
    complex_ab = ab[0] + 0.2j * rng.normal(size=(3, 4))
    check_grads(lambda ab: sla.solve_banded((1, 1), ab, b[0]), complex_ab, holomorphic=True)
