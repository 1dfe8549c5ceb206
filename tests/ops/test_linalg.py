"""What the linalg specs cannot draw: repeated and zero eigenvalues and singular values,
rank-deficient matrices, refused QR modes, np.linalg.eig, second derivatives through the
functions built from other ops, and the result types numpy users unpack."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import nodegrad as ng
from nodegrad.errors import DtypeError, NoGradientError, NonFiniteError
from nodegrad.testing import check_grads
from tests.ops import specs_linalg

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
    check_grads(lambda a: projector(_sym(a)), _REPEATED, modes=("rev",))
    # Eigenvalues alone are fine whatever repeats.
    check_grads(lambda a: ng.eigh(_sym(a))[0][2], _REPEATED)


def test_eigh_forward_mode_refuses_repeated_eigenvalues() -> None:
    with pytest.raises(NoGradientError, match=r"eigh: .*forward mode"):
        ng.jvp(lambda a: ng.eigh(a)[1], (_REPEATED,), (_W3,))


def test_svd_vectors_of_repeated_singular_values_raise_when_the_function_depends_on_them() -> None:
    for part in (0, 2):
        with pytest.raises(NoGradientError, match=r"svd: .*repeated singular values"):
            ng.grad(lambda a, part=part: ng.sum(ng.svd(a)[part] * _W3))(_REPEATED)

    # The projector onto the left singular vectors of the repeated value is smooth.
    def projector(a: Any) -> Any:
        u = ng.svd(a)[0][:, 1:]  # singular values 2, 1, 1
        return u @ u.T

    check_grads(projector, _REPEATED, modes=("rev",))
    with pytest.raises(NoGradientError, match=r"svd: .*forward mode"):
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
    check_grads(lambda a: ng.svd(a)[0][:, :2] ** 2, a, modes=("rev",))


def _tall() -> np.ndarray:
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((4, 2)))
    return q * np.array([2.0, 0.7])


def _sym(a: Any) -> Any:
    """numpy's eigh reads one triangle, the gradient is the symmetric one: finite
    differences must see a symmetric matrix too."""
    return 0.5 * (a + np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("fn", [lambda a: ng.eigh(_sym(a))[1], lambda a: ng.svd(a)[0], lambda a: ng.svd(a)[2]])
def test_vectors_are_first_order_only(fn: Any) -> None:
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, -1.0]])
    check_grads(lambda a: fn(a) ** 2, a)
    with pytest.raises(NoGradientError, match=r"first derivatives only"):
        ng.hessian(lambda a: ng.sum(fn(a) ** 2 * _W3))(a)


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


def test_eig_refuses_differentiation_but_works_on_plain_values() -> None:
    a = np.array([[1.0, 2.0], [-2.0, 1.0]])  # eigenvalues 1 +- 2i
    with pytest.raises(DtypeError, match=r"np\.linalg\.eig: .*complex gradients are not supported yet"):
        ng.grad(lambda a: np.sum(np.abs(np.linalg.eig(a)[0])))(a)
    with ng.Arena() as arena:
        x = arena.param(a)
        size = len(arena)
        with pytest.raises(DtypeError, match=r"np\.linalg\.eig\b"):
            np.linalg.eig(x)
        assert len(arena) == size
    w, _ = np.linalg.eig(a)
    np.testing.assert_allclose(np.sort_complex(w), [1 - 2j, 1 + 2j])
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
