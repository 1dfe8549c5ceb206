"""Second derivatives of every linalg op with a decomposition, generated from the registry,
in reverse and forward mode, on real and complex matrices; and the gradients of the ops
that read one triangle, against central differences of numpy's own call on matrices that
are not symmetric.

An op of the linalg family has a decomposition unless it is one of the products (matmul,
einsum and those built on them, in ``nodegrad/ops/linalg/products.py``): LU (inv, solve,
det, slogdet), Cholesky, QR, the SVD, eigendecompositions, the pseudo-inverse, roots. Each
is drawn by its specs (tests/ops/specs_linalg.py) and checked with
``check_grads(order=2)`` in both modes, complex eigenvectors and singular vectors
included (through functions of them that do not depend on their arbitrary phases,
``|v|^2``, ``V diag(c) V^H``).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import assume, given, settings

import nodegrad as ng
from nodegrad.engine.registry import REGISTRY
from nodegrad.errors import NoGradientError
from nodegrad.testing import check_grads
from tests.ops import specs_linalg
from tests.ops.harness import Case

_PRODUCTS = "nodegrad.ops.linalg.products"

#: The linalg ops with a decomposition (and the triangle some of them read): every one
#: outside the products' module.
DECOMPOSITIONS = sorted(
    name
    for name, op in REGISTRY.items()
    if op.family == "linalg" and getattr(op.forward, "__module__", "") != _PRODUCTS
)


def _described(key: str, *fragments: str) -> st.SearchStrategy[Any]:
    """The complex cases of ``COMPLEX_CASES[key]`` whose description holds one of ``fragments``."""
    return specs_linalg.COMPLEX_CASES[key].filter(lambda drawn: any(f in drawn[0].desc for f in fragments))


#: For each op, its complex cases (and the modes check_grads can check): the public
#: function's cases that reach the op.
COMPLEX_BY_OP: dict[str, st.SearchStrategy[Any]] = {
    "inv": specs_linalg.COMPLEX_CASES["inv"],
    "solve": specs_linalg.COMPLEX_CASES["solve"],
    "det": specs_linalg.COMPLEX_CASES["det"],
    "logabsdet": specs_linalg.COMPLEX_CASES["slogdet"],
    "signdet": specs_linalg.COMPLEX_CASES["slogdet"],
    "cholesky": specs_linalg.COMPLEX_CASES["cholesky"],
    "pinv": specs_linalg.COMPLEX_CASES["pinv"],
    "svdvals": specs_linalg.COMPLEX_CASES["svdvals"],
    "svd_u": _described("svd", "u moduli", "pairs"),
    "svd_vh": _described("svd", "vh moduli", "pairs"),
    "eigvalsh": specs_linalg.COMPLEX_CASES["eigvalsh"],
    "eigh_vectors": _described("eigh", "moduli", "projectors"),
    "eigvals": _described("eig", "values"),
    "eig_vectors": _described("eig", "moduli", "function"),
    "qr_q": _described("qr", " 0"),
    "qr_r": _described("qr", " 1", "qr r"),
    "roots": specs_linalg.COMPLEX_CASES["roots"],
    "read_triangle": specs_linalg.COMPLEX_CASES["read_triangle"],
}


def test_every_decomposition_has_real_and_complex_cases() -> None:
    assert {"qr_q", "cholesky", "eigh_vectors", "eigvalsh", "svd_u", "svdvals", "eig_vectors", "eigvals"} <= set(
        DECOMPOSITIONS
    )
    assert set(DECOMPOSITIONS) <= set(specs_linalg.SPECS), sorted(set(DECOMPOSITIONS) - set(specs_linalg.SPECS))
    assert set(DECOMPOSITIONS) <= set(COMPLEX_BY_OP), sorted(set(DECOMPOSITIONS) - set(COMPLEX_BY_OP))
    assert not any(REGISTRY[name].first_order for name in DECOMPOSITIONS)


@pytest.mark.parametrize("name", DECOMPOSITIONS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_second_derivatives_of_a_real_matrix(name: str, data: st.DataObject) -> None:
    case: Case = data.draw(specs_linalg.SPECS[name], label="case")
    check_grads(case.fn, *case.values, argnums=case.argnums, order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("name", DECOMPOSITIONS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_second_derivatives_of_a_complex_matrix(name: str, data: st.DataObject) -> None:
    case, modes = data.draw(COMPLEX_BY_OP[name], label="case")
    # The test for the phases of complex vectors reads the cotangent's value: where the
    # function is constant (weights drawn equal or zero: V diag(c) V^H = c I) the cotangents
    # of its derivative are rounding alone, which the test cannot tell from a dependence,
    # so those functions would be refused.
    out, back = ng.vjp(case.of_args(), *case.args)
    cotangent = np.random.default_rng(0).standard_normal(np.shape(out)).astype(np.result_type(out))
    assume(all(np.max(np.abs(g), initial=0.0) > 1e-8 for g in back(cotangent)))
    assert modes == ("rev", "fwd")
    check_grads(case.fn, *case.values, argnums=case.argnums, order=2, modes=modes)


# -- degenerate spectra: an error, never a NaN -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fn", "x"),
    [
        ("svdvals", lambda a: np.linalg.norm(a, "nuc") ** 2, np.diag([2.0, 2.0, 1.0])),
        ("svdvals", lambda a: ng.sum(ng.svdvals(a) ** 3), np.diag([2.0, -2.0, 1.0])),
        ("eigvalsh", lambda a: ng.sum(ng.eigvalsh(a) ** 3), np.diag([1.0, 1.0, 2.0])),
        ("eigvals", lambda a: ng.real(ng.sum(ng.eigvals(a) ** 3)), np.diag([1.0, 1.0, 2.0])),
        ("svd", lambda a: ng.sum(ng.svd(a)[0][:, 2] ** 2 * np.arange(3.0)), np.diag([2.0, 2.0, 1.0])),
        ("eigh", lambda a: ng.sum(ng.eigh(a)[1][:, 2] ** 2 * np.arange(3.0)), np.diag([1.0, 1.0, 2.0])),
        ("eig", lambda a: ng.sum(ng.abs(ng.eig(a)[1][:, 2]) * np.arange(3.0)), np.diag([1.0, 1.0, 2.0])),
    ],
)
def test_second_derivatives_at_repeated_values_raise(name: str, fn: Any, x: np.ndarray) -> None:
    # The first derivative exists (a symmetric function of the values, or the vector of a
    # simple value); the second would need the vectors of the repeated pair, which are any
    # basis of their space. A NoGradientError naming the op, never a NaN.
    assert np.all(np.isfinite(ng.grad(fn)(x)))
    with pytest.raises(NoGradientError, match=rf"{name}: .*repeated"):
        ng.hessian(fn)(x)
    if name != "eig":  # numpy's eig orders the eigenvalues of a perturbed matrix as it finds them
        with pytest.raises(NoGradientError, match=rf"{name}: .*repeated"):
            check_grads(fn, x, order=2, modes=("rev",))


def test_a_second_derivative_that_does_not_see_repeated_values_is_exact() -> None:
    # The trace as the sum of the eigenvalues (its Hessian is 0), and the sum of the
    # singular values of a matrix with distinct ones beside a repeated eigenvalue elsewhere.
    x = np.diag([1.0, 1.0, 2.0])
    np.testing.assert_array_equal(ng.hessian(lambda a: ng.sum(ng.eigvalsh(a)))(x), np.zeros((3, 3, 3, 3)))
    np.testing.assert_allclose(ng.hessian(lambda a: ng.real(ng.sum(ng.eigvals(a))))(x), np.zeros((3, 3, 3, 3)))


# -- ops that read one triangle: the derivative of numpy's call ---------------------------------------


def _numeric_gradient(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the real function ``f`` in each real (and imaginary) part, as
    nodegrad's gradient of a real function of complex values: ``df/dRe - 1j df/dIm`` (the
    transpose of the derivative for the pairing ``Re(sum(u * v))``)."""
    out = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        for unit in (1.0, 1j) if np.iscomplexobj(x) else (1.0,):
            step = np.zeros_like(x)
            step[index] = eps * unit
            out[index] += np.conj(unit) * (f(x + step) - f(x - step)) / (2 * eps)
    return out


def _matrix(complex_: bool, definite: bool) -> np.ndarray:
    """A symmetric (Hermitian) matrix, made non-symmetric: both triangles differ, and a
    complex diagonal has imaginary parts."""
    rng = np.random.default_rng(7)
    z = rng.standard_normal((3, 3)) + (1j * rng.standard_normal((3, 3)) if complex_ else 0)
    h = z @ z.conj().T + (3 * np.eye(3) if definite else np.diag([-2.0, 0.5, 3.0]))
    noise = rng.standard_normal((3, 3)) + (1j * rng.standard_normal((3, 3)) if complex_ else 0)
    return h + 0.4 * noise


_WEIGHTS = np.array([[1.0, -0.5, 2.0], [0.3, 1.5, -1.0], [0.7, 0.2, -0.4]])


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize(
    ("what", "ng_fn", "np_fn"),
    [
        ("eigvalsh", lambda a, uplo: ng.eigvalsh(a, uplo), lambda a, uplo: np.linalg.eigvalsh(a, uplo)),
        (
            "eigh values",
            lambda a, uplo: ng.eigh(a, UPLO=uplo).eigenvalues,
            lambda a, uplo: np.linalg.eigh(a, UPLO=uplo).eigenvalues,
        ),
        (
            "eigh |v|^2",
            lambda a, uplo: ng.abs(ng.eigh(a, UPLO=uplo).eigenvectors) ** 2,
            lambda a, uplo: np.abs(np.linalg.eigh(a, UPLO=uplo).eigenvectors) ** 2,
        ),
        (
            "cholesky",
            lambda a, uplo: ng.cholesky(a, upper=uplo == "U"),
            lambda a, uplo: np.linalg.cholesky(a, upper=uplo == "U"),
        ),
    ],
)
def test_one_triangle_is_read_and_differentiated(what: str, ng_fn: Any, np_fn: Any, uplo: str, complex_: bool) -> None:
    a = _matrix(complex_, definite=what == "cholesky")
    weights = _WEIGHTS[: len(np_fn(a, uplo))] if what.startswith(("eigvalsh", "eigh values")) else _WEIGHTS
    weights = weights[0] if np.ndim(np_fn(a, uplo)) == 1 else weights
    np.testing.assert_allclose(ng_fn(a, uplo), np_fn(a, uplo), rtol=1e-12, atol=1e-14)  # numpy's values

    def loss(a: Any) -> Any:
        return ng.sum(ng.real(ng_fn(a, uplo)) * weights)

    g = ng.grad(loss)(a)
    numeric = _numeric_gradient(lambda a: np.sum(np.real(np_fn(a, uplo)) * weights), a)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    unread = np.triu(g, 1) if uplo == "L" else np.tril(g, -1)
    assert np.all(unread == 0), "the triangle numpy does not read has no gradient"
    if complex_:
        assert np.all(np.imag(np.diag(g)) == 0), "nor the imaginary part of the diagonal"
    # Second order: the derivative of the gradient along a direction (forward mode through
    # the recorded backward sweep) against differences of the gradient; check_grads then
    # tests both modes of both orders against differences of the function.
    rng = np.random.default_rng(8)
    t = rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape) if complex_ else 0)
    eps = 1e-5
    grad = ng.grad(loss)
    np.testing.assert_allclose(
        ng.jvp(grad, (a,), (t,))[1], (grad(a + eps * t) - grad(a - eps * t)) / (2 * eps), rtol=1e-5, atol=1e-7
    )
    check_grads(lambda a: ng_fn(a, uplo), a, order=2, modes=("rev", "fwd"))
