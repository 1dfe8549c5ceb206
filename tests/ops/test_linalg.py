"""What the linalg specs cannot draw: repeated and zero eigenvalues and singular values,
rank-deficient matrices, refused QR modes, np.linalg.eig, second derivatives through the
functions built from other ops, and the result types numpy users unpack."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.errors import NoGradientError, NonFiniteError
from nodegrad.testing import check_grads
from tests.ops import specs_linalg
from tests.ops.harness import Case

_W3 = np.arange(9.0).reshape(3, 3) - 4.0
_REPEATED = np.diag([1.0, 1.0, 2.0])  # eigenvalues and singular values: 1 twice


# -- repeated and zero values ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_vectors_of_a_repeated_eigenvalue_raise_when_the_function_depends_on_them(dtype: Any) -> None:
    a = _REPEATED.astype(dtype)
    with pytest.raises(NoGradientError, match=r"eigh: .*repeated eigenvalues"):
        ng.grad(lambda a: ng.sum(ng.eigh(a)[1] * _W3.astype(dtype)))(a)
    with pytest.raises(NoGradientError, match=r"eigh: .*repeated eigenvalues"):
        ng.grad(lambda a: ng.sum(ng.eigh(a)[1] * _W3))(np.zeros((3, 3)))  # every eigenvalue 0


def test_eigh_projector_onto_a_repeated_eigenvalues_subspace_has_its_gradient() -> None:
    # The projector onto the eigenvectors of the repeated eigenvalue is smooth there.
    def projector(a: Any) -> Any:
        v = ng.eigh(a)[1][:, :2]
        return v @ v.T

    g = ng.grad(lambda a: ng.sum(projector(a) * _W3))(_REPEATED)
    assert np.all(np.isfinite(g))
    check_grads(lambda a: projector(_sym(a)), _REPEATED)
    # A simple eigenvalue is fine whatever else repeats, in both modes; so is the sum of the
    # repeated ones; one of them alone is refused in both.
    check_grads(lambda a: ng.eigh(_sym(a))[0][2], _REPEATED)
    check_grads(lambda a: ng.sum(ng.eigh(_sym(a))[0][:2]), _REPEATED)
    for differentiate in (ng.grad, lambda f: lambda a: ng.jvp(f, (a,), (_W3,))):
        with pytest.raises(NoGradientError, match=r"eigvalsh: repeated eigenvalues .*tells them apart"):
            differentiate(lambda a: ng.eigh(a)[0][0])(_REPEATED)


def test_eigh_forward_mode_refuses_the_vectors_of_repeated_eigenvalues() -> None:
    with pytest.raises(NoGradientError, match=r"eigh: .*repeated eigenvalues"):
        ng.jvp(lambda a: ng.eigh(a)[1], (_REPEATED,), (_W3,))


def test_svd_vectors_of_repeated_singular_values_raise_when_the_function_depends_on_them() -> None:
    for part in (0, 2):
        with pytest.raises(NoGradientError, match=r"svd: .*repeated singular values"):
            ng.grad(lambda a, part=part: ng.sum(ng.svd(a)[part] * _W3))(_REPEATED)

    # The projector onto the left singular vectors of the repeated value is smooth.
    def projector(a: Any) -> Any:
        u = ng.svd(a)[0][:, 1:]  # singular values 2, 1, 1
        return u @ u.T

    check_grads(projector, _REPEATED)
    with pytest.raises(NoGradientError, match=r"svd: .*repeated singular values"):
        ng.jvp(lambda a: ng.svd(a)[0], (_REPEATED,), (_W3,))


def test_svd_vectors_of_zero_singular_values_of_a_rectangular_matrix() -> None:
    a = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # singular values 1 and 0
    with pytest.raises(NoGradientError, match=r"svd: .*left singular vectors of zero singular values"):
        ng.grad(lambda a: ng.sum(ng.svd(a, full_matrices=False)[0] * _W3[:, :2]))(a)
    with pytest.raises(NoGradientError, match=r"svd: .*right singular vectors of zero singular values"):
        ng.grad(lambda a: ng.sum(ng.svd(a, full_matrices=False)[2] * _W3[:2]))(a.T)
    # The vector of the nonzero singular value is unique: u_0 = a v_0 / s_0.
    g = ng.grad(lambda a: ng.svd(a, full_matrices=False)[0][:, 0] @ np.array([0.0, 1.0, 2.0]))(a)
    np.testing.assert_allclose(g, [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], atol=1e-12)


def test_svd_full_matrices_extra_vectors_have_no_gradient() -> None:
    a = _tall()
    with pytest.raises(NoGradientError, match=r"svd: with full_matrices=True the columns of U"):
        ng.grad(lambda a: ng.sum(ng.svd(a)[0] ** 2 * np.arange(16.0).reshape(4, 4)))(a)
    with pytest.raises(NoGradientError, match=r"svd: with full_matrices=True the rows of Vh"):
        ng.grad(lambda a: ng.sum(ng.svd(a)[2] ** 2 * np.arange(16.0).reshape(4, 4)))(a.T)
    # The first min(m, n) vectors are those of full_matrices=False.
    weights = np.arange(8.0).reshape(4, 2)
    g_full = ng.grad(lambda a: ng.sum(ng.svd(a)[0][:, :2] ** 2 * weights))(a)
    g_reduced = ng.grad(lambda a: ng.sum(ng.svd(a, full_matrices=False)[0] ** 2 * weights))(a)
    np.testing.assert_allclose(g_full, g_reduced, rtol=1e-12, atol=1e-12)
    check_grads(lambda a: ng.svd(a)[0][:, :2] ** 2, a)
    with pytest.raises(NoGradientError, match=r"svd: with full_matrices=True the columns of U"):
        ng.jvp(lambda a: ng.svd(a)[0] ** 2, (a,), (a,))


def _tall() -> np.ndarray:
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((4, 2)))
    return q * np.array([2.0, 0.7])


def _sym(a: Any) -> Any:
    """numpy's eigh reads one triangle, the gradient is the symmetric one: finite
    differences must see a symmetric matrix too."""
    return 0.5 * (a + np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("fn", [lambda a: ng.eigh(_sym(a))[1], lambda a: ng.svd(a)[0], lambda a: ng.svd(a)[2]])
def test_vectors_differentiate_twice(fn: Any) -> None:
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, -1.0]])
    check_grads(lambda a: fn(a) ** 2, a, order=2)
    h = ng.hessian(lambda a: ng.sum(fn(a) ** 2 * _W3))(a)
    assert h.shape == (3, 3, 3, 3) and np.all(np.isfinite(h))


# -- rank-deficient matrices -------------------------------------------------------------------------


def test_pinv_and_lstsq_at_rank_deficient_matrices() -> None:
    rng = np.random.default_rng(0)
    left, right = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))  # a = left @ right has rank 2
    a = left @ right
    np.testing.assert_allclose(ng.pinv(a), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    g = ng.grad(lambda a: ng.sum(ng.pinv(a) * rng.standard_normal((3, 4))))(a)
    assert np.all(np.isfinite(g))
    # The gradient along matrices of the same rank: through the factors, to second order.
    check_grads(lambda p, q: ng.pinv(p @ q), left, right, order=2)
    b = rng.standard_normal(4)
    x, residuals, rank, s = ng.lstsq(a, b)
    x0, residuals0, rank0, s0 = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, x0, rtol=1e-10, atol=1e-12)
    assert rank == rank0 == 2 and residuals.shape == residuals0.shape == (0,)
    np.testing.assert_allclose(s, s0, rtol=1e-10, atol=1e-12)
    check_grads(lambda p, q, b: ng.lstsq(p @ q, b)[0], left, right, b, order=2)
    # A singular square matrix: no error, the least-norm solution and a finite gradient.
    singular = np.ones((2, 2))
    np.testing.assert_allclose(ng.lstsq(singular, np.ones(2))[0], [0.5, 0.5])
    assert np.all(np.isfinite(ng.grad(lambda a: ng.sum(ng.lstsq(a, np.ones(2))[0]))(singular)))
    assert np.all(np.isfinite(ng.grad(lambda a: ng.sum(ng.pinv(a)))(singular)))


def test_qr_of_a_rank_deficient_matrix_has_no_gradient() -> None:
    with pytest.raises(NoGradientError, match=r"qr: .*full column rank"):
        ng.grad(lambda a: ng.sum(ng.qr(a)[0]))(np.ones((3, 2)))
    with pytest.raises(NoGradientError, match=r"qr: .*full column rank"):
        ng.grad(lambda a: ng.sum(ng.qr(a)[1]))(np.ones((3, 2)))


# -- refused modes, eig -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "mode", "fragment"),
    [((2, 3), "reduced", "m < n"), ((4, 2), "complete", "'complete'"), ((3, 3), "raw", "'raw'")],
)
def test_qr_refuses_to_differentiate_other_modes_and_shapes(shape: Any, mode: str, fragment: str) -> None:
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape) ** 1.5
    with pytest.raises(NoGradientError, match=rf"qr: no gradient for .*{fragment}") as info:
        ng.grad(lambda a: ng.sum(np.linalg.qr(a, mode=mode)[0]))(a)
    assert "test_linalg.py" in str(info.value)
    # On plain values both give numpy's result.
    for got, want in zip(ng.qr(a, mode), np.linalg.qr(a, mode), strict=True):
        np.testing.assert_array_equal(got, want)


def test_eig_works_on_plain_values_and_inside_a_differentiated_function() -> None:
    a = np.array([[1.0, 2.0], [-2.0, 1.0]])  # eigenvalues 1 +- 2i
    w, v = ng.eig(a)
    np.testing.assert_allclose(np.sort_complex(w), [1 - 2j, 1 + 2j])
    np.testing.assert_allclose(a @ v, v * w, atol=1e-12)
    # A plain matrix inside a differentiated function is a constant: eig works on it.
    g = ng.grad(lambda x: ng.sum(x * np.linalg.eig(a)[0].real))(np.ones(2))
    np.testing.assert_allclose(g, [1.0, 1.0])


# -- results numpy users unpack, dtypes ---------------------------------------------------------------


def test_results_have_numpys_types_on_traced_values() -> None:
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    with ng.Arena() as arena:
        x = arena.param(a)
        for got, want in [
            (np.linalg.eigh(x), np.linalg.eigh(a)),
            (np.linalg.svd(x), np.linalg.svd(a)),
            (np.linalg.qr(x), np.linalg.qr(a)),
            (np.linalg.eig(x), np.linalg.eig(a)),
            (np.linalg.slogdet(x + 0j), np.linalg.slogdet(a + 0j)),
        ]:
            assert type(got) is type(want)
            assert got._fields == want._fields  # type: ignore[attr-defined]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g.value, w, rtol=1e-12)
    w, v = ng.eigh(a)
    u, s, vh = ng.svd(a)
    q, r = ng.qr(a)
    np.testing.assert_allclose(v * w @ v.T, a, atol=1e-12)
    np.testing.assert_allclose(u * s @ vh, a, atol=1e-12)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: ng.eigh(_sym(a))[1] ** 2,
        lambda a: ng.eigh(_sym(a))[0],
        lambda a: ng.svd(a)[0] ** 2,
        lambda a: ng.svd(a)[2] ** 2,
        lambda a: ng.qr(a)[0],
        lambda a: ng.qr(a)[1],
        ng.pinv,
        lambda a: ng.lstsq(a, np.ones(3, np.float32))[0],
        lambda a: ng.matrix_power(a, -2),
    ],
)
def test_float32_stays_float32(fn: Any) -> None:
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, -1.0]], dtype=np.float32)
    out, back = ng.vjp(fn, a)
    assert out.dtype == np.float32
    (g,) = back(np.ones_like(out))
    assert g.dtype == np.float32
    check_grads(fn, a)


def test_matrix_power_zero_is_the_identity_with_a_zero_gradient() -> None:
    a = np.array([[[2.0, 1.0], [0.0, 3.0]]], dtype=np.float32)
    out, back = ng.vjp(lambda a: ng.matrix_power(a, 0), a)
    np.testing.assert_array_equal(out, np.linalg.matrix_power(a, 0))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(back(np.ones_like(out))[0], np.zeros_like(a))


# -- second derivatives of what is built from other ops ---------------------------------------------------


@pytest.mark.parametrize("name", ["qr", "pinv", "lstsq", "matrix_power", "tensorsolve", "tensorinv"])
@given(data=st.data())
def test_second_derivatives(name: str, data: st.DataObject) -> None:
    spec = {**specs_linalg.SPECS, **specs_linalg.COMPOSITES}[name]
    case = data.draw(spec, label="case")
    check_grads(case.fn, *case.values, argnums=case.argnums, order=2)


_NON_FINITE = {"inf": np.array([[1.0, np.inf], [0.5, 2.0]]), "nan": np.array([[1.0, np.nan], [0.5, 2.0]])}


@pytest.mark.parametrize("entry", ["inf", "nan"])
@pytest.mark.parametrize(
    ("name", "fun"),
    [
        ("det", lambda m: ng.det(m)),
        ("svdvals", lambda m: ng.sum(ng.svdvals(m))),
        ("svdvals", lambda m: np.linalg.norm(m, 2)),
        ("svdvals", lambda m: np.linalg.norm(m, "nuc")),
        ("svd", lambda m: ng.sum(ng.svd(m)[0] ** 2.0)),
        ("eig", lambda m: ng.sum(ng.eigh(m)[1] ** 2.0)),
        ("eigvalsh", lambda m: ng.sum(ng.eigvalsh(m))),
        ("pinv", lambda m: ng.sum(ng.pinv(m))),
        ("eig", lambda m: ng.sum(ng.abs(ng.eig(m)[1]))),
        ("eigvals", lambda m: ng.sum(ng.abs(np.linalg.eigvals(m)))),
    ],
)
def test_a_non_finite_matrix_never_reaches_lapack_in_a_gradient(name: str, fun: Any, entry: str) -> None:
    # An SVD or eigendecomposition of such a matrix may never return (OpenBLAS), or fail
    # with a bare LinAlgError: the op says what is wrong first.
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError, match=f"{name}.*NaN or Inf"):  # det's LU warns
        ng.grad(fun)(_NON_FINITE[entry])


def test_the_gradient_of_slogdet_at_a_singular_matrix_is_a_nodegrad_error() -> None:
    with pytest.raises(NonFiniteError, match="'logabsdet': its gradient is not defined at this input") as info:
        ng.grad(lambda m: ng.slogdet(m)[1])(np.zeros((2, 2)))
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)


# -- complex matrices ---------------------------------------------------------------------------------


def _assert_like_numpy(got: Any, expected: Any) -> None:
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(specs_linalg.COMPLEX_CASES))
@settings(max_examples=25)
@given(data=st.data())
def test_complex_forward_matches_numpy_and_gradients_match_finite_differences(name: str, data: st.DataObject) -> None:
    case, modes = data.draw(specs_linalg.COMPLEX_CASES[name], label="case")
    out, _ = ng.vjp(case.of_args(), *case.args)
    _assert_like_numpy(out, case.ref(*case.values))
    check_grads(case.fn, *case.values, argnums=case.argnums, modes=modes)


def _single(value: Any) -> Any:
    """complex128 as complex64, float64 as float32 (Python numbers stay: weakly typed)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.astype({"c": np.complex64, "f": np.float32}.get(value.dtype.kind, value.dtype))
    return value


@pytest.mark.parametrize("name", sorted(specs_linalg.COMPLEX_CASES))
@settings(max_examples=10)
@given(data=st.data())
def test_complex64_stays_complex64(name: str, data: st.DataObject) -> None:
    case, modes = data.draw(specs_linalg.COMPLEX_CASES[name], label="case")
    values = tuple(_single(v) for v in case.values)
    single = Case(case.fn, case.ref, values, case.diff, desc=case.desc)
    out, back = ng.vjp(single.of_args(), *single.args)
    if all(isinstance(v, np.ndarray) for v in values):  # Python numbers are weakly typed in nodegrad
        assert np.asarray(out).dtype == np.asarray(case.ref(*values)).dtype
    for g, x in zip(back(np.ones_like(out)), single.args, strict=True):
        assert np.asarray(g).dtype == np.asarray(x).dtype
    check_grads(single.fn, *values, argnums=single.argnums, modes=modes)


@pytest.mark.parametrize("name", ["inv", "solve", "det", "slogdet", "matrix_power", "pinv", "qr", "cholesky", "roots"])
@settings(max_examples=6)
@given(data=st.data())
def test_complex_second_derivatives(name: str, data: st.DataObject) -> None:
    case, modes = data.draw(specs_linalg.COMPLEX_CASES[name], label="case")
    check_grads(case.fn, *case.values, argnums=case.argnums, modes=modes, order=2)


def _complex(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_complex_inverse_and_solve_agree() -> None:
    rng = np.random.default_rng(1)
    a, b, w = _complex(rng, 3, 3) + 3 * np.eye(3), _complex(rng, 3, 2), _complex(rng, 3, 2)
    by_inverse = ng.grad(lambda a, b: ng.real(ng.sum(w * (ng.inv(a) @ b))), argnums=(0, 1))(a, b)
    by_solve = ng.grad(lambda a, b: ng.real(ng.sum(w * ng.solve(a, b))), argnums=(0, 1))(a, b)
    for g, h in zip(by_inverse, by_solve, strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


def test_det_is_the_product_of_the_eigenvalues() -> None:
    rng = np.random.default_rng(2)
    a = _complex(rng, 3, 3)
    through_det = ng.grad(ng.det, holomorphic=True)(a)
    through_eigvals = ng.grad(lambda a: ng.prod(ng.eigvals(a)), holomorphic=True)(a)
    np.testing.assert_allclose(through_det, through_eigvals, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(through_det, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)
    # slogdet: the sign times exp(logabsdet) is det again.
    rebuilt = ng.grad(lambda a: ng.slogdet(a).sign * ng.exp(ng.slogdet(a).logabsdet), holomorphic=True)(a)
    np.testing.assert_allclose(rebuilt, through_det, rtol=1e-10, atol=1e-12)


def test_eig_of_a_hermitian_matrix_agrees_with_eigh() -> None:
    rng = np.random.default_rng(3)
    z = _complex(rng, 3, 3)
    h = z + z.conj().T
    c = np.array([0.5, -1.0, 2.0])

    def by_eig(h: Any) -> Any:  # the real parts, in eigh's ascending order
        return ng.sum(c * np.sort(ng.real(ng.eigvals(h))))

    g_eig = ng.grad(by_eig)(h)
    g_eigh = ng.grad(lambda h: ng.sum(c * ng.eigvalsh(0.5 * (h + ng.conj(h.T)))))(h)
    # eig differentiates along every direction, eigh along Hermitian ones: they agree there.
    np.testing.assert_allclose(0.5 * (g_eig + g_eig.conj().T), g_eigh, rtol=1e-9, atol=1e-12)
    # eigvalsh's own gradient is zero in the triangle numpy does not read, and holds the rest.
    g_lower = ng.grad(lambda h: ng.sum(c * ng.eigvalsh(h)))(h)
    np.testing.assert_allclose(g_lower, np.tril(2 * g_eigh, -1) + np.diag(np.diag(g_eigh)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(h).real), ng.eigvalsh(h), rtol=1e-10)


def test_svdvals_are_the_square_roots_of_the_eigenvalues_of_a_h_a() -> None:
    rng = np.random.default_rng(4)
    a, c = _complex(rng, 4, 3), np.array([1.0, -0.5, 2.0])
    g_svd = ng.grad(lambda a: ng.sum(c * ng.svdvals(a)))(a)
    g_eig = ng.grad(lambda a: ng.sum(c * ng.sqrt(ng.eigvalsh(ng.conj(a.T) @ a)[::-1])))(a)
    np.testing.assert_allclose(g_svd, g_eig, rtol=1e-8, atol=1e-10)


def test_roots_agree_with_the_eigenvalues_of_the_companion_matrix() -> None:
    p = np.array([2.0, 1.0 + 1j, -3.0, 0.5j])
    c = np.array([1.0, 2.0 - 1j, -0.5])

    def companion(p: Any) -> Any:
        top = ng.reshape(-p[1:] / p[0], (1, 3))
        return ng.cat([top, np.eye(2, 3)], 0)

    by_roots = ng.grad(lambda p: ng.real(ng.sum(c * np.sort_complex(np.roots(p)))))(p)
    by_eigvals = ng.grad(lambda p: ng.real(ng.sum(c * np.sort_complex(ng.eigvals(companion(p))))))(p)
    np.testing.assert_allclose(by_roots, by_eigvals, rtol=1e-9, atol=1e-12)


def test_a_real_matrix_gets_a_real_gradient_through_complex_eigenvalues() -> None:
    a = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.5], [0.0, 0.3, 3.0]])
    g = ng.grad(lambda a: ng.sum(ng.abs(ng.eig(a)[0]) ** 2) + ng.sum(ng.abs(ng.eig(a)[1])))(a)
    assert g.dtype == np.float64
    check_grads(lambda a: ng.abs(ng.eig(a)[1]), a)
    check_grads(lambda a: ng.imag(ng.eigvals(a)), a)


# -- what complex vectors refuse ------------------------------------------------------------------------


_Z = np.array([[1.0 + 1j, 0.5, 0.2j], [0.3, 2.0 - 1j, 1.0], [0.0, 0.5j, -1.0]])


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("eigh", lambda z: ng.eigh(z + ng.conj(z.T))[1]),
        ("svd", lambda z: ng.svd(z)[0]),
        ("svd", lambda z: ng.svd(z)[2]),
        ("eig", lambda z: ng.eig(z)[1]),
    ],
)
def test_complex_vectors_have_no_gradient_where_the_function_depends_on_their_phases(name: str, fn: Any) -> None:
    weights = np.arange(9.0).reshape(3, 3) - 4.0
    with pytest.raises(NoGradientError, match=rf"{name}: the phase of each complex .* depends on it"):
        ng.grad(lambda z: ng.real(ng.sum(fn(z) * weights)))(_Z)
    with pytest.raises(NoGradientError, match=rf"{name}: the phase of each complex .* depends on it"):
        ng.jvp(lambda z: ng.real(ng.sum(fn(z) * weights)), (_Z,), (_Z,))
    # Functions that do not depend on the phases have one, in both modes and to second order.
    check_grads(lambda z: ng.abs(fn(z)), _Z, order=2)


def test_svd_pairs_share_their_phase() -> None:
    # u_k v_k^H does not depend on the common phase of the pair, though U and Vh each do.
    def rank_one(z: Any) -> Any:
        u, _, vh = ng.svd(z)
        return ng.outer(u[:, 1], vh[1])

    check_grads(rank_one, _Z)
    check_grads(lambda z: ng.svd(z)[1], _Z)  # the singular values, in both modes


def test_repeated_eigenvalues_of_eig() -> None:
    eye, jordan = np.eye(3), np.array([[2.0, 1.0], [0.0, 2.0]])
    # A sum over a cluster of repeated eigenvalues has a gradient where the matrix is diagonalizable.
    np.testing.assert_allclose(ng.grad(lambda a: ng.real(ng.sum(ng.eigvals(a))))(eye), eye)
    with pytest.raises(NoGradientError, match=r"eigvals: repeated eigenvalues .* one by one"):
        ng.grad(lambda a: ng.real(ng.eigvals(a)[0]))(eye)
    with pytest.raises(NoGradientError, match=r"eigvals: the matrix is defective"):
        ng.grad(lambda a: ng.real(ng.sum(ng.eigvals(a))))(jordan)
    with pytest.raises(NoGradientError, match=r"eig: .*eigenvectors of repeated eigenvalues"):
        ng.grad(lambda a: ng.sum(ng.eig(a)[1] * np.arange(9.0).reshape(3, 3)))(np.diag([1.0, 1.0, 2.0]))
    with pytest.raises(NoGradientError, match=r"eig: repeated eigenvalues .*tells them apart"):
        ng.jvp(lambda a: ng.eig(a)[0], (eye,), (eye,))
    # Forward mode sees what reverse mode sees: the sum of the cluster has its derivative.
    _, tangent = ng.jvp(lambda a: ng.real(ng.sum(ng.eigvals(a))), (eye,), (np.arange(9.0).reshape(3, 3),))
    np.testing.assert_allclose(tangent, 12.0)


def test_roots_differentiate_in_the_zero_coefficients_numpy_sets_aside() -> None:
    # p = 0 x^3 + x^2 - 3x + 2: numpy drops the leading zero, but the roots 2 and 1 move with
    # it: dr = -r^3 dp_0 / p'(r). Against a central difference that follows each root.
    p = np.array([0.0, 1.0, -3.0, 2.0])
    for k, root in enumerate(np.roots(p)):
        g = ng.grad(lambda p, k=k: ng.real(np.roots(p)[k]))(p)
        for j in range(4):
            step = np.zeros(4)
            step[j] = 1e-7
            nearest = [min(np.roots(p + s * step), key=lambda r, root=root: abs(r - root)) for s in (1, -1)]
            np.testing.assert_allclose(g[j], np.real(nearest[0] - nearest[1]) / 2e-7, rtol=1e-5, atol=1e-6)
    # A trailing zero: the root 0 is simple, and moves with it.
    check_grads(lambda p: ng.sum(np.roots(p) ** 2), np.array([1.0, -3.0, 2.0, 0.0]))
    with pytest.raises(NoGradientError, match=r"roots: repeated roots"):
        ng.grad(lambda p: ng.sum(np.roots(p)))(np.array([1.0, -2.0, 1.0]))
    np.testing.assert_allclose(  # two trailing zeros: a double root at 0, unused here
        ng.grad(lambda p: np.roots(p)[0])(np.array([1.0, -2.0, 0.0, 0.0])), [-2.0, -1.0, -0.5, -0.25]
    )
