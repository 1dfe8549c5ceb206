"""Matrix functions built on a factorisation (LAPACK through ``np.linalg``): inverses,
linear solves, determinants and Cholesky factors of a square matrix or of each matrix of a
stack (the last two axes); and what the decompositions share: the check that a matrix is
finite before LAPACK sees it, and the Hermitian matrix read from one triangle.

Complex matrices follow nodegrad's convention (a rule is the transpose of the derivative
for the pairing ``Re(sum(u * v))``): the holomorphic ones (``inv``, ``solve``, ``det``)
keep the real formulas with plain transposes; Cholesky factors and the sign of the
determinant are not holomorphic, and their rules conjugate where the derivation puts a
conjugate transpose."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import DIFFERENTIATING, PER_EXAMPLE, has_values
from nodegrad.engine.record import record, record2
from nodegrad.engine.registry import defjoint, defop
from nodegrad.engine.staged import now
from nodegrad.engine.traced import unwrap
from nodegrad.errors import MatrixShapeError, NonFiniteError, ShapeError, user_location
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks, stacked

__all__ = ["cholesky", "det", "inv", "slogdet", "solve"]

# -- what the decompositions share -------------------------------------------------------------------


def lapack_ready(op_name: str, x: Any) -> Any:
    """``x``, checked to be finite before LAPACK decomposes it: an SVD or eigendecomposition
    of a matrix holding NaN or Inf may never return (OpenBLAS), or fails with a bare
    ``LinAlgError``. Raises :class:`~nodegrad.errors.NonFiniteError` naming the op."""
    if has_values(x) and not np.all(np.isfinite(all_values(x))):  # every example's, inside vmap
        msg = (
            f"{op_name}: the matrix holds NaN or Inf, where its decomposition (and so its gradient) is not "
            f"defined [at {user_location()}]"
        )
        raise NonFiniteError(msg)
    return x


def check_uplo(name: str, uplo: Any) -> str:
    """``uplo``, checked to be ``'L'`` or ``'U'`` (numpy's ``UPLO``)."""
    if uplo not in ("L", "U"):
        msg = f"{name}: UPLO must be 'L' or 'U', got {uplo!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return str(uplo)


def _triangle_mask(n: int, lower: bool, dtype: Any) -> np.ndarray:
    """The strict ``lower`` (else upper) triangle of an ``n`` by ``n`` matrix, as 0.0 and 1.0."""
    ones = np.ones((n, n), dtype=dtype)
    return np.tril(ones, -1) if lower else np.triu(ones, 1)


def _read_triangle_forward(x: np.ndarray, lower: bool, hermitian: bool) -> np.ndarray:
    strict = np.tril(x, -1) if lower else np.triu(x, 1)
    conjugated = hermitian and np.iscomplexobj(x)
    mirrored = np.swapaxes(np.conjugate(strict) if conjugated else strict, -1, -2)
    diagonal = np.real(x) if conjugated else x
    return strict + mirrored + diagonal * np.eye(x.shape[-1], dtype=diagonal.dtype)


def _read_triangle_rule(g: Any, ans: Any, x: Any, lower: Any, hermitian: Any) -> Any:
    """tril(g + g^H, -1) + diag(Re(diag(g))): each entry read gets the cotangents of the
    entries it fills (conj(g_ji) for the mirrored one), the diagonal its real part"""
    conjugated = hermitian and np.iscomplexobj(unwrap(x))
    mirrored = np.swapaxes(np.conjugate(g) if conjugated else g, -1, -2)
    n = np.shape(g)[-1]
    real = np.finfo(np.result_type(unwrap(x))).dtype
    diagonal = np.real(g) if conjugated else g
    return (g + mirrored) * _triangle_mask(n, bool(lower), real) + diagonal * np.eye(n, dtype=real)


READ_TRIANGLE = defop(
    "read_triangle",
    _read_triangle_forward,
    _read_triangle_rule,
    None,
    None,
    family="linalg",
    doc="the symmetric (Hermitian) matrix LAPACK reads from one triangle of a matrix",
    batch=ONE_MATRIX,
)


def read_triangle(x: Any, lower: bool, hermitian: bool = True) -> Any:
    """The symmetric (``hermitian``: Hermitian) matrix that LAPACK reads from the ``lower``
    (else upper) triangle of ``x``, as an op, so that a decomposition of it differentiates
    as the function numpy evaluates: not at all in the other triangle, and with the
    cotangent of each entry read folded onto it (the off-diagonal cotangent of the
    symmetric matrix counts twice). A Hermitian matrix has a real diagonal: LAPACK takes
    the real part. A plain ``x`` is returned as it is (LAPACK reads it itself); on a traced
    one the values read are the same, bit for bit."""
    if type(x) not in DIFFERENTIATING and type(x) not in PER_EXAMPLE:  # a batched one may hold traced values
        return x
    return record(READ_TRIANGLE, x, bool(lower), bool(hermitian))


# -- inverse, solve and determinants ---------------------------------------------------------------
# Their rules are written with numpy calls that nodegrad records (matmul, swapaxes, solve,
# inv), so they differentiate again.


def _square(name: str, x: Any) -> None:
    shape = np.shape(unwrap(x))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"{name}: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise MatrixShapeError(msg)


INV = defop(
    "inv",
    np.linalg.inv,
    lambda g, ans, x: -np.matmul(np.matmul(transposed(ans), g), transposed(ans)),
    family="linalg",
    doc="the inverse of a square matrix (of each in a stack)",
    batch=ONE_MATRIX,
)


def _solve_rule(wanted: tuple[int, ...], g: Any, ans: Any, a: Any, b: Any) -> tuple[Any, ...]:
    """g_b = solve(a^T, g) (a vector, or columns like b); g_a = -g_b x^T: both need g_b, solved once"""
    vector = np.ndim(b) == 1
    g_b = np.linalg.solve(transposed(a), g[..., None] if vector else g)
    g_b = g_b[..., 0] if vector else g_b
    if 0 not in wanted:
        return (g_b,)
    g_a = -(g_b[..., :, None] * ans[..., None, :]) if vector else -np.matmul(g_b, transposed(ans))
    return tuple(g_a if k == 0 else g_b for k in wanted)


SOLVE = defjoint(
    "solve",
    np.linalg.solve,
    _solve_rule,
    (0, 1),
    family="linalg",
    broadcasts=True,
    doc="x with a @ x = b (b a vector when 1-D, else columns), batch axes broadcast",
    batch=stacked({0: 2, 1: 2}, vector=1),
)


def _cofactors(x: np.ndarray) -> np.ndarray:
    """The cofactor matrix of ``x`` (the gradient of its determinant, ``det(x) x^-T``), exact
    also where ``x`` is singular: with ``x = U S Vh``, it is ``det(U) det(Vh) conj(U) diag(p)
    conj(Vh)``, where ``p_i`` is the product of the singular values other than ``s_i`` (the
    conjugates are no-ops for a real ``x``)."""
    u, s, vh = np.linalg.svd(lapack_ready("det", x))
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh)
    if np.iscomplexobj(u):
        u, vh = u.conj(), vh.conj()
    return sign[..., None, None] * np.matmul(u * (before * after)[..., None, :], vh)


def _det_rule(g: Any, ans: Any, x: Any) -> Any:
    if batched_in(g, ans, x):  # a grad inside vmap: the examples as a stack
        return on_stacks(_det_rule, g, ans, x)
    if type(now(x)) is np.ndarray:  # (staged by replay: computed as eagerly, recorded)
        return g[..., None, None] * _cofactors(x)
    # Differentiated again: ans * inv(x)^T records itself (and needs x nonsingular).
    return (g * ans)[..., None, None] * transposed(np.linalg.inv(x))


DET = defop(
    "det",
    np.linalg.det,
    _det_rule,
    family="linalg",
    doc="the determinant of a square matrix (of each in a stack)",
    batch=ONE_MATRIX,
)
# d log|det x| = Re(tr(x^-1 dx)): the transpose is g x^-T, for complex x too (g is real).
LOGABSDET = defop(
    "logabsdet",
    lambda x: np.linalg.slogdet(x)[1],
    lambda g, ans, x: g[..., None, None] * transposed(np.linalg.inv(x)),
    family="linalg",
    doc="log |det x|: the second part of np.linalg.slogdet",
    batch=ONE_MATRIX,
)


def _sign_rule(g: Any, ans: Any, x: Any) -> Any:
    # sign = det / |det| = exp(1j * theta), d theta = Im(tr(x^-1 dx)), so d sign = 1j sign
    # Im(tr(x^-1 dx)); its transpose for Re(sum(u * v)) is 1j Im(g sign) x^-T.
    return np.expand_dims(1j * np.imag(g * ans), (-2, -1)) * transposed(np.linalg.inv(x))


SIGNDET = defop(
    "signdet",
    lambda x: np.linalg.slogdet(x)[0],
    _sign_rule,
    family="linalg",
    doc="det x / |det x| of a complex matrix: the first part of np.linalg.slogdet",
    batch=ONE_MATRIX,
)


def _phi(x: Any) -> Any:
    """The lower triangle of ``x`` with its diagonal halved (a constant mask, so that the
    product records itself)."""
    n = np.shape(x)[-1]
    return x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n))


def _adjoint(x: Any) -> Any:
    return np.conjugate(transposed(x)) if np.iscomplexobj(unwrap(x)) else transposed(x)


def _cholesky_rule(g: Any, ans: Any, x: Any, upper: Any) -> Any:
    # With a = L L^H, dL = L phi(L^-1 da L^-H) (phi: the lower triangle, the diagonal
    # halved; it is real, as L's is). Its transpose: s = L^-T phi(L^T g) conj(L^-1), made
    # Hermitian (symmetric for a real a): the cotangent of the Hermitian matrix the factor
    # is of (the triangle numpy reads is folded onto by read_triangle). The upper factor
    # U = L^H has the rule of L, with g^H for L's cotangent.
    if upper:
        ans, g = _adjoint(ans), _adjoint(g)
    inverse = np.linalg.inv(ans)
    right = np.conjugate(inverse) if np.iscomplexobj(unwrap(ans)) else inverse
    s = np.matmul(np.matmul(transposed(inverse), _phi(np.matmul(transposed(ans), g))), right)
    return 0.5 * (s + _adjoint(s))


def _cholesky_forward(x: np.ndarray, upper: bool) -> np.ndarray:
    if not upper:
        return np.linalg.cholesky(x)
    # numpy >= 2 has upper=True; the upper factor of the upper triangle is the adjoint of
    # the lower factor of the adjoint, which reads the same entries.
    return _adjoint(np.linalg.cholesky(_adjoint(x)))


CHOLESKY = defop(
    "cholesky",
    _cholesky_forward,
    _cholesky_rule,
    None,
    family="linalg",
    doc="the Cholesky factor of a symmetric positive-definite matrix: lower L with a = L @ L.T, reading the lower "
    "triangle (upper: U = L.T, reading the upper one)",
    batch=ONE_MATRIX,
)


@guarded
@composite
def cholesky(x: Any, upper: bool = False) -> Any:
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix, or of each
    in a stack, as ``np.linalg.cholesky``: lower triangular ``L`` with ``x = L @ L.T``
    (``L @ L.conj().T`` for a complex ``x``), or with ``upper=True`` upper triangular
    ``U = L.T`` (``L.conj().T``).

    Like numpy, it reads only the lower triangle of ``x`` (with ``upper=True`` the upper
    one), and a complex diagonal's real part; its gradient is the derivative of that
    function: zero in the triangle not read, the cotangent of each off-diagonal entry of
    the symmetric matrix counted twice on the entry read. (JAX and PyTorch give the
    symmetric gradient instead, ``(G + G.T) / 2``; the two agree along symmetric
    directions.) Differentiable to any order.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> ng.cholesky(a)
    array([[2.        , 0.        ],
           [1.        , 1.41421356]])
    >>> ng.grad(lambda a: ng.sum(ng.cholesky(a)[:, 0]))(a)
    array([[0.125, 0.   ],
           [0.5  , 0.   ]])
    """
    _square("cholesky", x)
    return record(CHOLESKY, read_triangle(x, lower=not upper), bool(upper))


@guarded
def inv(x: Any) -> Any:
    """The inverse of a square matrix, or of each matrix of a stack, as ``np.linalg.inv``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.sum(ng.inv(x)))(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[-0.25  , -0.125 ],
           [-0.125 , -0.0625]])
    """
    _square("inv", x)
    return record(INV, x)


@guarded
def solve(a: Any, b: Any) -> Any:
    """The solution ``x`` of ``a @ x = b``, as ``np.linalg.solve``: ``b`` is a vector when it
    is 1-D, otherwise a matrix of columns (or a stack of them); batch axes broadcast.
    Differentiable in both.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[2.0, 0.0], [0.0, 4.0]])
    >>> ng.grad(lambda b: ng.sum(ng.solve(a, b)))(np.array([1.0, 1.0]))
    array([0.5 , 0.25])
    """
    _square("solve", a)
    return record2(SOLVE, a, b)


@guarded
def det(x: Any) -> Any:
    """The determinant of a square matrix, or of each matrix of a stack, as
    ``np.linalg.det``. Its gradient is the cofactor matrix, exact also at singular
    matrices (computed from the SVD); differentiated again it needs ``x`` nonsingular.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(ng.det)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 4., -3.],
           [-2.,  1.]])
    """
    _square("det", x)
    return record(DET, x)


@guarded
def slogdet(x: Any) -> Any:
    """The sign and the log of the absolute value of the determinant, as
    ``np.linalg.slogdet`` (a ``(sign, logabsdet)`` pair): ``logabsdet`` is differentiable;
    ``sign`` is plain data for a real matrix (it is piecewise constant), and for a complex
    one the differentiable ``det / |det|`` (its gradient ``1j Im(g sign) x^-T``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.slogdet(x)[1])(np.array([[2.0, 1.0], [1.0, -3.0]]))
    array([[ 0.42857143,  0.14285714],
           [ 0.14285714, -0.28571429]])
    """
    _square("slogdet", x)
    # A real matrix's sign is plain data (of every example, inside vmap).
    sign = record(SIGNDET, x) if np.iscomplexobj(unwrap(x)) else plain_map(lambda v: np.linalg.slogdet(v)[0], x)
    return type(np.linalg.slogdet(np.eye(1)))(sign, record(LOGABSDET, x))
