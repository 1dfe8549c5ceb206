"""Matrix functions built on a factorisation (LAPACK through ``np.linalg``): singular
values, symmetric eigenvalues, Cholesky factors, inverses, linear solves and
determinants of a square matrix or of each matrix of a stack (the last two axes).

Complex matrices follow nodegrad's convention (a rule is the transpose of the derivative
for the pairing ``Re(sum(u * v))``): the holomorphic ones (``inv``, ``solve``, ``det``)
keep the real formulas with plain transposes; singular values, Hermitian eigenvalues,
Cholesky factors and the sign of the determinant are not holomorphic, and their rules
conjugate where the derivation puts a conjugate transpose."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import record, record2
from nodegrad.engine.registry import PerCotangent, defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import NonFiniteError, ShapeError, user_location

__all__ = ["cholesky", "det", "eigvalsh", "inv", "slogdet", "solve", "svdvals"]

# -- singular values ----------------------------------------------------------------------------


def lapack_ready(op_name: str, x: Any) -> Any:
    """``x``, checked to be finite before LAPACK decomposes it: an SVD or eigendecomposition
    of a matrix holding NaN or Inf may never return (OpenBLAS), or fails with a bare
    ``LinAlgError``. Raises :class:`~nodegrad.errors.NonFiniteError` naming the op."""
    if not np.all(np.isfinite(x)):
        msg = (
            f"{op_name}: the matrix holds NaN or Inf, where its decomposition (and so its gradient) is not "
            f"defined [at {user_location()}]"
        )
        raise NonFiniteError(msg)
    return x


def _svdvals_rule(g: Any, ans: Any, x: Any) -> Any:
    # d(s_i) = Re(u_i^H dX v_i) for each simple singular value, so the VJP is
    # conj(U diag(g) Vh) (U diag(g) V^T for real x). The phases of a singular pair cancel in
    # u_i v_i^H; the decomposition is redone here rather than kept from the forward, which
    # needs the values only.
    u, _, vh = np.linalg.svd(lapack_ready("svdvals", x), full_matrices=False)
    if np.iscomplexobj(u):
        u, vh = u.conj(), vh.conj()
    return np.matmul(u * g[..., None, :], vh)


SVDVALS = defop(
    "svdvals",
    lambda x: np.linalg.svd(lapack_ready("svdvals", x), compute_uv=False),
    _svdvals_rule,
    family="linalg",
    doc="singular values of the last two axes, largest first",
    first_order=True,
)


def svdvals(x: Any) -> Any:
    """The singular values of a matrix, or of each matrix of a stack (the last two axes),
    largest first, as ``np.linalg.svdvals``.

    The gradient of each singular value ``s_i`` is ``u_i v_i^T`` (``conj(u_i v_i^H)`` for a
    complex matrix), exact where ``s_i`` is simple; for sums over repeated values (the
    nuclear norm) it is still the gradient. It is first order only: forward mode (``jvp``)
    works through it, and a second derivative raises
    :class:`~nodegrad.errors.NoGradientError` naming the op.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.svdvals(np.diag([3.0, -4.0]))
    array([4., 3.])
    >>> ng.grad(lambda m: ng.svdvals(m)[0])(np.diag([3.0, -4.0]))
    array([[ 0.,  0.],
           [ 0., -1.]])
    """
    if np.ndim(unwrap(x)) < 2:
        msg = (
            f"svdvals: needs a matrix or a stack of them, got an array of shape {np.shape(unwrap(x))} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    return record(SVDVALS, x)


# -- inverse, solve and determinants ---------------------------------------------------------------
# Their rules are written with numpy calls that nodegrad records (matmul, swapaxes, solve,
# inv), so they differentiate again.


def _transposed(x: Any) -> Any:
    return np.swapaxes(x, -1, -2)


def _square(name: str, x: Any) -> None:
    shape = np.shape(unwrap(x))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"{name}: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)


INV = defop(
    "inv",
    np.linalg.inv,
    lambda g, ans, x: -np.matmul(np.matmul(_transposed(ans), g), _transposed(ans)),
    family="linalg",
    doc="the inverse of a square matrix (of each in a stack)",
)


_SOLVED = PerCotangent()


def _solve_for(a: Any, g: Any, vector: bool) -> Any:
    """``solve(a^T, g)``: the cotangent of ``b``, as a vector or as columns like ``b``. Both
    of solve's rules need it: it is solved once per sweep."""
    solved = _SOLVED.get(g, a)
    if solved is None:
        columns = g[..., None] if vector else g
        solved = np.linalg.solve(_transposed(a), columns)
        solved = solved[..., 0] if vector else solved
        _SOLVED.put(g, a, solved)
    return solved


def _solve_rule_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    g_b = _solve_for(a, g, np.ndim(b) == 1)
    if np.ndim(b) == 1:
        return -(g_b[..., :, None] * ans[..., None, :])
    return -np.matmul(g_b, _transposed(ans))


SOLVE = defop(
    "solve",
    np.linalg.solve,
    _solve_rule_a,
    lambda g, ans, a, b: _solve_for(a, g, np.ndim(b) == 1),
    family="linalg",
    broadcasts=True,
    doc="x with a @ x = b (b a vector when 1-D, else columns), batch axes broadcast",
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
    if type(x) is np.ndarray:
        return g[..., None, None] * _cofactors(x)
    # Differentiated again: ans * inv(x)^T records itself (and needs x nonsingular).
    return (g * ans)[..., None, None] * _transposed(np.linalg.inv(x))


DET = defop(
    "det",
    np.linalg.det,
    _det_rule,
    family="linalg",
    doc="the determinant of a square matrix (of each in a stack)",
)
# d log|det x| = Re(tr(x^-1 dx)): the transpose is g x^-T, for complex x too (g is real).
LOGABSDET = defop(
    "logabsdet",
    lambda x: np.linalg.slogdet(x)[1],
    lambda g, ans, x: g[..., None, None] * _transposed(np.linalg.inv(x)),
    family="linalg",
    doc="log |det x|: the second part of np.linalg.slogdet",
)


def _sign_rule(g: Any, ans: Any, x: Any) -> Any:
    # sign = det / |det| = exp(1j * theta), d theta = Im(tr(x^-1 dx)), so d sign = 1j sign
    # Im(tr(x^-1 dx)); its transpose for Re(sum(u * v)) is 1j Im(g sign) x^-T.
    return np.expand_dims(1j * np.imag(g * ans), (-2, -1)) * _transposed(np.linalg.inv(x))


SIGNDET = defop(
    "signdet",
    lambda x: np.linalg.slogdet(x)[0],
    _sign_rule,
    family="linalg",
    doc="det x / |det x| of a complex matrix: the first part of np.linalg.slogdet",
)


def _eigvalsh_rule(g: Any, ans: Any, x: Any, uplo: Any) -> Any:
    # d(w_i) = v_i^H dA v_i for each simple eigenvalue: conj(V) diag(g) V^T, Hermitian
    # (symmetric for a real x: numpy reads one triangle of a matrix it takes as Hermitian).
    _, v = np.linalg.eigh(lapack_ready("eigvalsh", x), UPLO=uplo)
    left = v.conj() if np.iscomplexobj(v) else v
    return np.matmul(left * g[..., None, :], _transposed(v))


EIGVALSH = defop(
    "eigvalsh",
    lambda x, uplo: np.linalg.eigvalsh(lapack_ready("eigvalsh", x), UPLO=uplo),
    _eigvalsh_rule,
    None,
    family="linalg",
    doc="eigenvalues of a symmetric matrix, ascending",
    first_order=True,
)


def eigvalsh(x: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy's name)
    """The eigenvalues of a symmetric matrix (of each in a stack), in ascending order, as
    ``np.linalg.eigvalsh``, which reads the ``UPLO`` triangle only.

    The gradient of each eigenvalue ``w_i`` is ``v_i v_i^T``: symmetric, the gradient with
    respect to a symmetric argument, exact where ``w_i`` is simple. A complex ``x`` is read
    as Hermitian (the imaginary part of its diagonal ignored, as LAPACK does), and the
    gradient ``conj(v_i v_i^H)`` is Hermitian. First order only: forward mode works through
    it, a second derivative raises naming the op.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1., 3.])
    >>> ng.grad(lambda a: ng.eigvalsh(a)[1])(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    _square("eigvalsh", x)
    if UPLO not in ("L", "U"):
        msg = f"eigvalsh: UPLO must be 'L' or 'U', got {UPLO!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return record(EIGVALSH, x, UPLO)


def _phi(x: Any) -> Any:
    """The lower triangle of ``x`` with its diagonal halved (a constant mask, so that the
    product records itself)."""
    n = np.shape(x)[-1]
    return x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n))


def _cholesky_rule(g: Any, ans: Any, x: Any) -> Any:
    # With a = L L^H, dL = L phi(L^-1 da L^-H) (phi: the lower triangle, the diagonal
    # halved; it is real, as L's is). Its transpose: s = L^-T phi(L^T g) conj(L^-1), made
    # Hermitian (symmetric for a real a), because a is read as Hermitian (numpy reads its
    # lower triangle only).
    inverse = np.linalg.inv(ans)
    right = np.conjugate(inverse) if np.iscomplexobj(unwrap(ans)) else inverse
    s = np.matmul(np.matmul(_transposed(inverse), _phi(np.matmul(_transposed(ans), g))), right)
    s_h = _transposed(np.conjugate(s)) if np.iscomplexobj(unwrap(ans)) else _transposed(s)
    return 0.5 * (s + s_h)


CHOLESKY = defop(
    "cholesky",
    np.linalg.cholesky,
    _cholesky_rule,
    family="linalg",
    doc="the lower Cholesky factor L of a symmetric positive-definite matrix, a = L @ L.T",
)


def cholesky(x: Any, upper: bool = False) -> Any:
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix, or of each
    in a stack, as ``np.linalg.cholesky``: lower triangular ``L`` with ``x = L @ L.T``
    (``L @ L.conj().T`` for a complex ``x``), or with ``upper=True`` its (conjugate)
    transpose.

    numpy reads only the lower triangle of ``x``; the gradient treats ``x`` as symmetric
    (Hermitian) and is itself symmetric (Hermitian), as in JAX and PyTorch, which is the
    gradient with respect to a symmetric (Hermitian) argument. Differentiable to any order.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> ng.cholesky(a)
    array([[2.        , 0.        ],
           [1.        , 1.41421356]])
    >>> ng.grad(lambda a: ng.sum(ng.cholesky(a)[:, 0]))(a)
    array([[0.125, 0.25 ],
           [0.25 , 0.   ]])
    """
    _square("cholesky", x)
    lower = record(CHOLESKY, x)
    if not upper:
        return lower
    return np.conjugate(_transposed(lower)) if np.iscomplexobj(unwrap(x)) else _transposed(lower)


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
    sign = record(SIGNDET, x) if np.iscomplexobj(unwrap(x)) else np.linalg.slogdet(unwrap(x))[0]
    return type(np.linalg.slogdet(np.eye(1)))(sign, record(LOGABSDET, x))
