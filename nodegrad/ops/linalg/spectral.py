"""Decompositions with vectors: the symmetric (Hermitian) eigendecomposition
(``np.linalg.eigh``), the singular value decomposition (``np.linalg.svd``) and the QR
factorisation (``np.linalg.qr``), of a matrix or of each matrix of a stack (the last two
axes), real or complex.

Each factor is an op of its own (the eigenvalues and the singular values are the
``eigvalsh`` and ``svdvals`` ops), so a loss that reads one factor sweeps that factor's
rule alone; the rules of several factors add up to the usual formula of the whole
decomposition. Where the vectors are not unique (repeated or zero values, the phases of
complex vectors) the rules refuse what depends on the choice: see
:mod:`~nodegrad.ops.linalg.refusals`.

Complex rules are the transposes of the derivatives for the pairing ``Re(sum(u * v))``:
the real formulas, with conjugates where a conjugate transpose enters the derivation
(``conj(V) (...) V^T`` where the real rule has ``V (...) V^T``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError, user_location
from nodegrad.ops.linalg.decompositions import EIGVALSH, SVDVALS, lapack_ready
from nodegrad.ops.linalg.refusals import (
    inverse_gaps,
    reciprocal,
    refuse_phase_dependence,
    refuse_undefined,
    repeated_pairs,
    tolerance,
)

__all__ = ["eigh", "qr", "svd"]

_EighResult = type(np.linalg.eigh(np.eye(1)))
_SVDResult = type(np.linalg.svd(np.eye(1)))
_QRResult = type(np.linalg.qr(np.eye(1)))


def _transposed(x: Any) -> Any:
    return np.swapaxes(x, -1, -2)


def _diagonal(x: Any) -> Any:
    return np.diagonal(x, axis1=-2, axis2=-1)


# -- eigh -------------------------------------------------------------------------------------------


def _eigh_vectors_rule(g: Any, ans: Any, x: Any, uplo: Any) -> Any:
    """conj(V) (F * skew(V^T g)) V^T, F_ij = 1 / (w_j - w_i) off the diagonal: Hermitian"""
    # With A V = V diag(w): dV = V (F * (V^H dA V)) (numpy's phases: see refusals). Only the
    # anti-Hermitian part skew(c) = (c - c^H) / 2 of V^T g reaches a Hermitian gradient
    # (F is antisymmetric); its diagonal, Im(v_k^T g_k), is the phases' share.
    w = np.linalg.eigvalsh(lapack_ready("eigh", x), UPLO=uplo)
    c = np.matmul(_transposed(ans), g)
    if np.iscomplexobj(ans):
        refuse_phase_dependence("eigh", "eigenvector", np.imag(_diagonal(unwrap(c))), g)
        skew, left = 0.5 * (c - np.conjugate(_transposed(c))), ans.conj()
    else:
        skew, left = 0.5 * (c - _transposed(c)), ans
    repeated = repeated_pairs(w)
    refuse_undefined("eigh", "eigenvectors of repeated eigenvalues", repeated, unwrap(skew), g)
    return np.matmul(np.matmul(left, skew * inverse_gaps(w, repeated)), _transposed(ans))


EIGH_VECTORS = defop(
    "eigh_vectors",
    lambda x, uplo: np.linalg.eigh(lapack_ready("eigh", x), UPLO=uplo)[1],
    _eigh_vectors_rule,
    None,
    family="linalg",
    doc="the eigenvectors of a symmetric (Hermitian) matrix (the columns), eigenvalues ascending: "
    "np.linalg.eigh's second part",
    first_order=True,
)


def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy's name)
    """The eigenvalues (ascending) and eigenvectors (the columns) of a symmetric (complex:
    Hermitian) matrix, or of each matrix of a stack, as ``np.linalg.eigh``, which reads the
    ``UPLO`` triangle only: an ``EighResult(eigenvalues, eigenvectors)``, so
    ``w, v = ng.eigh(a)`` works.

    Both are differentiable. As for :func:`eigvalsh` and :func:`cholesky`, the gradient
    treats ``a`` as symmetric (Hermitian) and is itself symmetric (Hermitian): the gradient
    with respect to such an argument. The eigenvectors' rule is
    ``conj(V) (F * skew(V^T g)) V^T`` with ``F_ij = 1 / (w_j - w_i)`` off the diagonal and
    ``skew(c) = (c - c^H) / 2`` (for a real ``a``, ``V (F * skew(V^T g)) V^T``).

    The sign of each eigenvector is arbitrary (for a complex ``a``, its phase), and where
    eigenvalues repeat (closer than ``sqrt(eps) * max|w|``) so is the basis of their
    eigenvectors: the gradient of a function of the vectors that depends on that choice is
    undefined and raises :class:`~nodegrad.errors.NoGradientError`; a function that does
    not (``abs(v)``, the projector ``v v^H`` onto their subspace) gets its gradient. In
    forward mode any repeated eigenvalue whose vectors are used raises, and so do complex
    eigenvectors. First order only: forward mode (``jvp``) works through it, a second
    derivative raises naming the op.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> w, v = ng.eigh(a)
    >>> w
    array([1., 3.])
    >>> np.abs(v)
    array([[0.70710678, 0.70710678],
           [0.70710678, 0.70710678]])
    >>> ng.grad(lambda a: ng.eigh(a).eigenvectors[0, 1] ** 2)(np.array([[1.0, 1.0], [1.0, 3.0]]))
    array([[ 0.08838835,  0.08838835],
           [ 0.08838835, -0.08838835]])

    A function of complex eigenvectors that does not depend on their phases:

    >>> h = np.array([[2.0, 1j], [-1j, 3.0]])
    >>> ng.grad(lambda h: ng.abs(ng.eigh(h).eigenvectors[0, 0]) ** 2)(h)
    array([[-0.17888544+0.j        ,  0.        +0.08944272j],
           [ 0.        -0.08944272j,  0.17888544+0.j        ]])
    """
    shape = np.shape(unwrap(a))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"eigh: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    if UPLO not in ("L", "U"):
        msg = f"eigh: UPLO must be 'L' or 'U', got {UPLO!r} [called at {user_location()}]"
        raise ShapeError(msg)
    return _EighResult(record(EIGVALSH, a, UPLO), record(EIGH_VECTORS, a, UPLO))


# -- svd --------------------------------------------------------------------------------------------
# A complex singular pair (u_k, v_k) may take any common phase: (u_k e^{i phi}, v_k e^{i phi}).
# The relative phase is the matrix's (Im(u_k^H dA v_k) / s_k); these rules give it to V, and
# U's rule judges the common phase for both factors: Vh's rule passes its share of it on
# to U, which Vh's op takes as an input for that alone (for complex matrices). So U @ Vh,
# which does not depend on the common phase, has a gradient; U or Vh alone must not.


def _reduced_svd(x: np.ndarray, full: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The SVD as the forward computed it (the same call, so the same signs), cut to the
    ``k = min(m, n)`` singular pairs."""
    u, s, vh = np.linalg.svd(lapack_ready("svd", x), full_matrices=full)
    k = s.shape[-1]
    return u[..., :, :k], s, vh[..., :k, :]


def _without_extra(g: Any, k: int, axis: int, what: str) -> Any:
    """The cotangent of ``U`` (``axis=-1``) or ``Vh`` (``axis=-2``) for its first ``k``
    vectors. With ``full_matrices=True`` the others complete an orthonormal basis in an
    arbitrary way: a cotangent on them has no gradient."""
    if np.shape(g)[axis] == k:
        return g
    extra = g[..., :, k:] if axis == -1 else g[..., k:, :]
    if type(g) is Traced or np.any(unwrap(extra) != 0):
        msg = (
            f"svd: with full_matrices=True the {what} beyond the first min(m, n) are not unique (any orthonormal "
            "basis of the rest of the space is as good), so a function of them has no gradient"
            + (" (forward mode cannot tell whether they are used)" if type(g) is Traced else "")
            + "; pass full_matrices=False"
        )
        raise NoGradientError(msg)
    return g[..., :, :k] if axis == -1 else g[..., :k, :]


def _zero(s: np.ndarray) -> np.ndarray:
    return s <= tolerance(s)


def _left_vectors_rule(u: Any, s: Any, vh: Any, g: Any, side: str, relative_phase: bool) -> Any:
    """The cotangent of ``a = U diag(s) Vh`` from the cotangent ``g`` of ``U``, ``(m, k)``:
    ``conj(U) ((F * (J - J^H)) S) conj(Vh) + (g - conj(U) J) S^-1 conj(Vh)`` with ``J = U^T g``
    and ``F_ij = 1 / (s_j^2 - s_i^2)`` (the second term only when ``m > k``). With
    ``relative_phase`` it also carries the relative phase of each pair, ``1j Im(J_kk) / s_k``
    on the diagonal. Vh's rule is this one for ``a^H = V diag(s) U^H``."""
    complex_ = np.iscomplexobj(u)
    left, right = (u.conj(), vh.conj()) if complex_ else (u, vh)
    j = np.matmul(_transposed(u), g)
    skew = j - (np.conjugate(_transposed(j)) if complex_ else _transposed(j))
    repeated = repeated_pairs(s)
    refuse_undefined("svd", "singular vectors of repeated singular values", repeated, unwrap(skew), g)
    inner = skew * (inverse_gaps(s * s, repeated) * s[..., None, :])
    zero = _zero(s)
    if relative_phase and complex_:
        phase = np.imag(_diagonal(j))
        refuse_undefined("svd", f"{side} singular vectors of zero singular values", zero, unwrap(phase), g)
        inner = inner + np.eye(s.shape[-1], dtype=s.dtype) * np.expand_dims(1j * phase * reciprocal(s, zero), -2)
    grad = np.matmul(np.matmul(left, inner), right)
    if u.shape[-2] > s.shape[-1]:  # the part of g outside U's columns, through S^-1
        rest = g - np.matmul(left, j)
        where = np.broadcast_to(zero[..., None, :], np.shape(rest))
        refuse_undefined("svd", f"{side} singular vectors of zero singular values", where, unwrap(rest), g)
        grad = grad + np.matmul(rest * reciprocal(s, zero)[..., None, :], right)
    return grad


def _svd_u_rule(g: Any, ans: Any, x: Any, full: Any) -> Any:
    """conj(U) ((F * (J - J^H)) S) conj(Vh) + (g - conj(U) J) S^-1 conj(Vh), J = U^T g, F_ij = 1 / (s_j^2 - s_i^2)"""
    u, s, vh = _reduced_svd(x, full)
    g = _without_extra(g, s.shape[-1], -1, "columns of U")
    if np.iscomplexobj(u):  # the common phase of each pair, Vh's share of it included
        refuse_phase_dependence("svd", "pair of singular vectors", np.imag(_diagonal(np.matmul(_transposed(u), g))), g)
    return _left_vectors_rule(u, s, vh, g, "left", relative_phase=False)


def _adjoint(x: Any) -> Any:
    return np.conjugate(_transposed(x)) if np.iscomplexobj(unwrap(x)) else _transposed(x)


def _svd_vh_rule(g: Any, ans: Any, x: Any, u_full: Any, full: Any) -> Any:
    """the rule of U for a^H = V S U^H, with g^H for U's g, conjugate-transposed"""
    u, s, vh = _reduced_svd(x, full)
    g = _without_extra(g, s.shape[-1], -2, "rows of Vh")
    if np.iscomplexobj(u) and type(g) is Traced:
        refuse_phase_dependence("svd", "pair of singular vectors", None, g)
    return _adjoint(_left_vectors_rule(_adjoint(vh), s, _adjoint(u), _adjoint(g), "right", relative_phase=True))


def _svd_vh_phase_rule(g: Any, ans: Any, x: Any, u_full: Any, full: Any) -> Any:
    """Vh's share of the common phase of each singular pair, as a cotangent of U that U's
    rule reads for its test alone: conj(U) diag(-1j Im(g_k Vh_k^T))."""
    k = min(np.shape(x)[-2:])
    if not np.size(g):
        return None
    share = np.imag(np.sum(unwrap(g)[..., :k, :] * ans[..., :k, :], axis=-1))
    share = np.where(np.abs(share) > np.sqrt(np.finfo(share.dtype).eps) * np.max(np.abs(g)), share, 0)
    if not np.any(share):  # none, or rounding alone
        return None
    columns = np.zeros((*share.shape[:-1], u_full.shape[-1]), dtype=share.dtype)
    columns[..., :k] = share
    return u_full.conj() * (-1j * columns)[..., None, :]


SVD_U = defop(
    "svd_u",
    lambda x, full: np.linalg.svd(lapack_ready("svd", x), full_matrices=full)[0],
    _svd_u_rule,
    None,
    family="linalg",
    doc="the left singular vectors U of a = U @ diag(s) @ Vh: np.linalg.svd's first part",
    first_order=True,
)
SVD_VH = defop(
    "svd_vh",
    lambda x, u, full: np.linalg.svd(lapack_ready("svd", x), full_matrices=full)[2],
    _svd_vh_rule,
    _svd_vh_phase_rule,
    None,
    family="linalg",
    doc="the right singular vectors Vh (the rows) of a = U @ diag(s) @ Vh: np.linalg.svd's third part (for a "
    "complex a, also of U: the common phase of each singular pair)",
    first_order=True,
)


def svd(a: Any, full_matrices: bool = True) -> Any:
    """The singular value decomposition ``a = U @ diag(S) @ Vh`` of a matrix, or of each
    matrix of a stack, as ``np.linalg.svd``: an ``SVDResult(U, S, Vh)``, singular values
    largest first, so ``u, s, vh = ng.svd(a)`` works (for the values alone, :func:`svdvals`).

    All three are differentiable (the standard rule: with ``F_ij = 1 / (s_j^2 - s_i^2)``
    off the diagonal, ``U ((F * skew(U^T gU)) S + S (F * skew(V^T gV)) + diag(gS)) Vh``,
    ``skew(c) = c - c^T``, plus for a non-square matrix the parts of the cotangents outside
    the span of ``U`` or ``V``, through ``S^-1``; for a complex matrix the same with
    ``skew(c) = c - c^H``, conjugates where the derivation has conjugate transposes, and
    the relative phase of each pair). The sign of each pair of singular
    vectors is arbitrary; where singular values repeat (closer than
    ``sqrt(eps) * max(s)``), or are zero where the non-square terms divide by them, the
    vectors are not unique: the gradient of a function of ``U`` (or of ``Vh``) that depends
    on the choice is undefined and raises :class:`~nodegrad.errors.NoGradientError`; one
    that does not gets its gradient. ``U`` and ``Vh`` are judged each on its own: a
    function unaffected only because the same rotation of both cancels (``U @ Vh``) raises
    there too. With ``full_matrices=True`` (numpy's default) and a
    non-square matrix, the vectors beyond the first ``min(m, n)`` are not unique either: a
    cotangent on them raises. First order only: forward mode (``jvp``) works through it,
    a second derivative raises naming the op.

    Complex singular vectors take any common phase ``(u_k e^{i phi}, v_k e^{i phi})``:
    functions that do not depend on it (``abs(U)``, ``u_k v_k^H`` and so ``U @ diag(s) @
    Vh``) have a gradient, judged for ``U`` and ``Vh`` together; others raise, and so does
    forward mode, which cannot tell.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> u, s, vh = ng.svd(np.array([[3.0, 0.0], [0.0, -2.0]]))
    >>> s
    array([3., 2.])
    >>> np.abs(u * vh.T)
    array([[1., 0.],
           [0., 1.]])
    >>> ng.grad(lambda a: ng.svd(a).U[0, 0] ** 2)(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([[ 0.25 ,  0.125],
           [-0.125, -0.25 ]])

    The first singular pair of a complex matrix, ``u_0 v_0^H``, whatever its phase:

    >>> def first_pair(z):
    ...     u, s, vh = ng.svd(z)
    ...     return ng.real(ng.sum(ng.outer(u[:, 0], vh[0])))
    >>> np.round(ng.grad(first_pair)(np.array([[1.0 + 1j, 0.5], [0.0, 2.0j]])), 4)
    array([[0.3093-0.05j  , 0.5642-0.3566j],
           [0.4758-0.6303j, 0.5267+0.3207j]])
    """
    if np.ndim(unwrap(a)) < 2:
        msg = (
            f"svd: needs a matrix or a stack of them, got an array of shape {np.shape(unwrap(a))} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    full = bool(full_matrices)
    u = record(SVD_U, a, full)
    # A complex Vh depends on U too: its rule passes the common phases on (see above).
    return _SVDResult(u, record(SVDVALS, a), record(SVD_VH, a, u if np.iscomplexobj(unwrap(a)) else None, full))


# -- qr ---------------------------------------------------------------------------------------------
# The rules are written with numpy calls that nodegrad records (matmul, swapaxes, solve,
# conj and products with constant masks), so they differentiate again. A complex R has a
# real diagonal (LAPACK's Householder reflections make it so), which fixes the phases of
# Q's columns: the factorisation is unique, and so is its derivative.


def _copy_upper(x: Any) -> Any:
    """The symmetric matrix with ``x``'s upper triangle; for a complex ``x`` the Hermitian
    one, with the real part of its diagonal."""
    n = np.shape(x)[-1]
    if np.iscomplexobj(unwrap(x)):
        real = np.finfo(unwrap(x).dtype).dtype
        upper = x * np.triu(np.ones((n, n), dtype=real), 1)
        return upper + np.conjugate(_transposed(upper)) + np.real(x) * np.eye(n, dtype=real)
    ones = np.ones((n, n), dtype=unwrap(x).dtype)
    return x * np.triu(ones) + _transposed(x * np.triu(ones, 1))


def _times_inverse_transposed(y: Any, r: Any) -> Any:
    """``y R^-T``."""
    return _transposed(np.linalg.solve(r, _transposed(y)))


def _full_column_rank(r: Any) -> None:
    diagonal = np.abs(np.diagonal(unwrap(r), axis1=-2, axis2=-1))
    if diagonal.size and np.any(
        diagonal <= np.finfo(diagonal.dtype).eps * max(np.shape(r)[-2:]) * np.max(diagonal, axis=-1, keepdims=True)
    ):
        msg = "qr: the gradient needs a matrix of full column rank (R is singular, so Q is not unique)"
        raise NoGradientError(msg)


def _qr_q_rule(g: Any, ans: Any, x: Any) -> Any:
    """(g - conj(Q) sym(Q^T g)) R^-T, sym() copying the upper triangle; R = Q^H a"""
    conj_q = np.conjugate(ans) if np.iscomplexobj(unwrap(ans)) else ans
    r = np.matmul(_transposed(conj_q), x)
    _full_column_rank(r)
    return _times_inverse_transposed(g - np.matmul(conj_q, _copy_upper(np.matmul(_transposed(ans), g))), r)


def _qr_r_rule(g: Any, ans: Any, x: Any) -> Any:
    """conj(Q) sym(g R^T) R^-T, sym() copying the upper triangle; Q = a R^-1"""
    _full_column_rank(ans)
    q = _transposed(np.linalg.solve(_transposed(ans), _transposed(x)))
    conj_q = np.conjugate(q) if np.iscomplexobj(unwrap(q)) else q
    return _times_inverse_transposed(np.matmul(conj_q, _copy_upper(np.matmul(g, _transposed(ans)))), ans)


QR_Q = defop(
    "qr_q",
    lambda x: np.linalg.qr(x)[0],
    _qr_q_rule,
    family="linalg",
    doc="Q of the reduced QR factorisation a = Q @ R (m >= n): orthonormal columns",
)
QR_R = defop(
    "qr_r",
    lambda x: np.linalg.qr(x)[1],
    _qr_r_rule,
    family="linalg",
    doc="R of the reduced QR factorisation a = Q @ R (m >= n): upper triangular",
)
_QR_MODES = ("reduced", "complete", "r", "raw")


def qr(a: Any, mode: str = "reduced") -> Any:
    """The QR factorisation ``a = Q @ R`` of a matrix, or of each matrix of a stack, as
    ``np.linalg.qr``: a ``QRResult(Q, R)`` (``mode="reduced"``, ``Q`` with orthonormal
    columns and ``R`` upper triangular), or ``R`` alone (``mode="r"``).

    Differentiable for ``m >= n`` (as many rows as columns, or more) at a matrix of full
    column rank, by the standard rule ``(gQ + Q sym(R gR^T - gQ^T Q)) R^-T`` (``sym``
    copying the lower triangle into a symmetric matrix), to any order. For a complex
    matrix (numpy's ``R`` has a real diagonal, which makes the factorisation unique) it is
    ``(gQ + conj(Q) herm(gR R^T - Q^T gQ)) R^-T``, ``herm`` copying the upper triangle into
    a Hermitian matrix with the real part of the diagonal. Where the
    factorisation is not unique it has no gradient: ``m < n``, ``mode="complete"`` with
    ``m > n`` (the extra columns of ``Q``), ``mode="raw"`` and a rank-deficient matrix
    raise :class:`~nodegrad.errors.NoGradientError` naming the op on traced values
    (on plain values they return numpy's result).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> q, r = ng.qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> np.abs(r)
    array([[5. , 2.2],
           [0. , 0.4]])
    >>> ng.grad(lambda a: ng.sum(ng.qr(a, mode="r") ** 2))(np.array([[3.0, 1.0], [4.0, 2.0]]))
    array([[6., 2.],
           [8., 4.]])
    """
    if mode not in _QR_MODES:
        msg = f"qr: mode must be one of {_QR_MODES}, got {mode!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    shape = np.shape(unwrap(a))
    if len(shape) < 2:
        msg = f"qr: needs a matrix or a stack of them, got an array of shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    m, n = shape[-2:]
    refused = (
        "m < n (fewer rows than columns)"
        if m < n
        else "mode='raw'"
        if mode == "raw"
        else "mode='complete' with m > n (the extra columns of Q are not unique)"
        if mode == "complete" and m > n
        else ""
    )
    if refused:
        if type(a) is Traced:
            msg = (
                f"qr: no gradient for {refused}; differentiable is mode='reduced' or 'r' with m >= n, got shape "
                f"{shape} [called at {user_location()}]"
            )
            raise NoGradientError(msg)
        return np.linalg.qr(a, mode=mode)  # type: ignore[call-overload]
    if mode == "r":
        return record(QR_R, a)
    return _QRResult(record(QR_Q, a), record(QR_R, a))
