"""Decompositions with vectors: the symmetric eigendecomposition (``np.linalg.eigh``), the
singular value decomposition (``np.linalg.svd``) and the QR factorisation
(``np.linalg.qr``), of a matrix or of each matrix of a stack (the last two axes).

Each factor is an op of its own (the eigenvalues and the singular values are the
``eigvalsh`` and ``svdvals`` ops), so a loss that reads one factor sweeps that factor's
rule alone; the rules of several factors add up to the usual formula of the whole
decomposition.

Eigenvectors and singular vectors are not unique where eigenvalues or singular values
repeat (any rotation of the vectors of a repeated value is as good), and their derivative
is undefined there. Their rules treat two values as repeated when they are closer than
``sqrt(eps) * max|value|`` (``eps`` of the dtype; a zero singular value likewise, where it
enters the rule): a cotangent whose share at such a pair is zero (a function of the vectors
that does not change under that rotation, such as the projector onto their subspace) gets
its gradient, with nothing from that pair; any other raises
:class:`~nodegrad.errors.NoGradientError` naming the op, never a NaN or an infinity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError, user_location
from nodegrad.ops.linalg.decompositions import EIGVALSH, SVDVALS, lapack_ready

__all__ = ["eigh", "qr", "svd"]

_EighResult = type(np.linalg.eigh(np.eye(1)))
_SVDResult = type(np.linalg.svd(np.eye(1)))
_QRResult = type(np.linalg.qr(np.eye(1)))


def _transposed(x: Any) -> Any:
    return np.swapaxes(x, -1, -2)


# -- what the rules of the vectors refuse ---------------------------------------------------------


def _tolerance(values: np.ndarray) -> np.ndarray:
    """How close two values (or a value and zero) must be to count as repeated, for each
    matrix of the stack: ``sqrt(eps) * max|value|``, shaped ``(..., 1)``."""
    scale = np.max(np.abs(values), axis=-1, keepdims=True) if values.shape[-1] else np.zeros((*values.shape[:-1], 1))
    return np.sqrt(np.finfo(values.dtype).eps) * scale


def _repeated_pairs(values: np.ndarray) -> np.ndarray:
    """The pairs ``(i, j)``, ``i != j``, of values closer than the tolerance."""
    n = values.shape[-1]
    gaps = np.abs(values[..., None, :] - values[..., :, None])
    return (gaps <= _tolerance(values)[..., None]) & ~np.eye(n, dtype=bool)


def _inverse_gaps(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``1 / (values_j - values_i)`` at ``(i, j)``, 0 on the diagonal and where ``skip`` is set."""
    skip = skip | np.eye(values.shape[-1], dtype=bool)
    return np.where(skip, 0, 1 / np.where(skip, 1, values[..., None, :] - values[..., :, None]))


def _reciprocal(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``1 / values``, 0 where ``skip`` is set."""
    return np.where(skip, 0, 1 / np.where(skip, 1, values))


def _refuse_undefined(name: str, what: str, where: np.ndarray, share: Any, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` has a nonzero ``share`` (an
    array shaped like ``where``) anywhere ``where`` flags a repeated (or zero) value.

    A traced ``g`` is the symbolic cotangent of forward mode: its values are not known, so
    any flagged place refuses."""
    if not np.any(where):
        return
    if type(g) is Traced:
        msg = (
            f"{name}: the derivative of the {what} is undefined (the vectors are not unique there); forward mode "
            "(jvp) cannot tell whether the function of them is unaffected, so it refuses"
        )
        raise NoGradientError(msg)
    share = np.broadcast_to(share, where.shape)
    scale = np.max(np.abs(g)) if np.size(g) else 0.0
    if np.any(np.abs(share[where]) > np.sqrt(np.finfo(share.dtype).eps) * scale):
        msg = (
            f"{name}: the gradient of the {what} is undefined (the vectors are not unique there, any rotation of "
            "them is as good) and the function differentiated depends on which were chosen; a function of them "
            "that does not (the projector onto their subspace, say) has a gradient"
        )
        raise NoGradientError(msg)


# -- eigh -------------------------------------------------------------------------------------------


def _eigh_vectors_rule(g: Any, ans: Any, x: Any, uplo: Any) -> Any:
    """V (F * skew(V^T g)) V^T, F_ij = 1 / (w_j - w_i) off the diagonal: symmetric"""
    # With A V = V diag(w): dV = V (F * (V^T dA V)). Only the antisymmetric part of V^T g
    # reaches a symmetric gradient (F is antisymmetric).
    w = np.linalg.eigvalsh(lapack_ready("eigh", x), UPLO=uplo)
    c = np.matmul(_transposed(ans), g)
    skew = 0.5 * (c - _transposed(c))
    repeated = _repeated_pairs(w)
    _refuse_undefined("eigh", "eigenvectors of repeated eigenvalues", repeated, unwrap(skew), g)
    inverse_gaps = _inverse_gaps(w, repeated)
    return np.matmul(np.matmul(ans, skew * inverse_gaps), _transposed(ans))


EIGH_VECTORS = defop(
    "eigh_vectors",
    lambda x, uplo: np.linalg.eigh(lapack_ready("eigh", x), UPLO=uplo)[1],
    _eigh_vectors_rule,
    None,
    family="linalg",
    doc="the eigenvectors of a symmetric matrix (the columns), eigenvalues ascending: np.linalg.eigh's second part",
    first_order=True,
)


def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy's name)
    """The eigenvalues (ascending) and eigenvectors (the columns) of a symmetric matrix, or
    of each matrix of a stack, as ``np.linalg.eigh``, which reads the ``UPLO`` triangle
    only: an ``EighResult(eigenvalues, eigenvectors)``, so ``w, v = ng.eigh(a)`` works.

    Both are differentiable. As for :func:`eigvalsh` and :func:`cholesky`, the gradient
    treats ``a`` as symmetric and is itself symmetric (the gradient with respect to a
    symmetric argument). The eigenvectors' rule is ``V (F * skew(V^T g)) V^T`` with
    ``F_ij = 1 / (w_j - w_i)`` off the diagonal and ``skew(c) = (c - c^T) / 2``.

    The sign of each eigenvector is arbitrary, and where eigenvalues repeat (closer than
    ``sqrt(eps) * max|w|``) so is the basis of their eigenvectors: the gradient of a
    function of the vectors that depends on that choice is undefined and raises
    :class:`~nodegrad.errors.NoGradientError`; a function that does not (the projector
    ``v v^T`` onto their subspace) gets its gradient. In forward mode any repeated
    eigenvalue whose vectors are used raises. First order only: forward mode (``jvp``)
    works through it, a second derivative raises naming the op.

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
    return s <= _tolerance(s)


def _svd_u_rule(g: Any, ans: Any, x: Any, full: Any) -> Any:
    """U ((F * skew(U^T g)) S) V^T + (I - U U^T) g S^-1 V^T, F_ij = 1 / (s_j^2 - s_i^2)"""
    u, s, vh = _reduced_svd(x, full)
    k = s.shape[-1]
    g = _without_extra(g, k, -1, "columns of U")
    j = np.matmul(_transposed(u), g)
    skew = j - _transposed(j)
    repeated = _repeated_pairs(s)
    _refuse_undefined("svd", "singular vectors of repeated singular values", repeated, unwrap(skew), g)
    inner = skew * (_inverse_gaps(s * s, repeated) * s[..., None, :])
    grad = np.matmul(np.matmul(u, inner), vh)
    if u.shape[-2] > k:  # the part of g outside U's columns, through S^-1
        rest = g - np.matmul(u, j)
        zero = _zero(s)
        where = np.broadcast_to(zero[..., None, :], np.shape(rest))
        _refuse_undefined("svd", "left singular vectors of zero singular values", where, unwrap(rest), g)
        grad = grad + np.matmul(rest * _reciprocal(s, zero)[..., None, :], vh)
    return grad


def _svd_vh_rule(g: Any, ans: Any, x: Any, full: Any) -> Any:
    """U (S (F * skew(Vh g^T))) V^T + U S^-1 g (I - V V^T), F_ij = 1 / (s_j^2 - s_i^2)"""
    u, s, vh = _reduced_svd(x, full)
    k = s.shape[-1]
    g = _without_extra(g, k, -2, "rows of Vh")
    j = np.matmul(vh, _transposed(g))
    skew = j - _transposed(j)
    repeated = _repeated_pairs(s)
    _refuse_undefined("svd", "singular vectors of repeated singular values", repeated, unwrap(skew), g)
    inner = skew * (_inverse_gaps(s * s, repeated) * s[..., :, None])
    grad = np.matmul(np.matmul(u, inner), vh)
    if vh.shape[-1] > k:  # the part of g outside Vh's rows, through S^-1
        rest = g - np.matmul(np.matmul(g, _transposed(vh)), vh)
        zero = _zero(s)
        where = np.broadcast_to(zero[..., :, None], np.shape(rest))
        _refuse_undefined("svd", "right singular vectors of zero singular values", where, unwrap(rest), g)
        grad = grad + np.matmul(u * _reciprocal(s, zero)[..., None, :], rest)
    return grad


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
    lambda x, full: np.linalg.svd(lapack_ready("svd", x), full_matrices=full)[2],
    _svd_vh_rule,
    None,
    family="linalg",
    doc="the right singular vectors Vh (the rows) of a = U @ diag(s) @ Vh: np.linalg.svd's third part",
    first_order=True,
)


def svd(a: Any, full_matrices: bool = True) -> Any:
    """The singular value decomposition ``a = U @ diag(S) @ Vh`` of a matrix, or of each
    matrix of a stack, as ``np.linalg.svd``: an ``SVDResult(U, S, Vh)``, singular values
    largest first, so ``u, s, vh = ng.svd(a)`` works (for the values alone, :func:`svdvals`).

    All three are differentiable (the standard rule: with ``F_ij = 1 / (s_j^2 - s_i^2)``
    off the diagonal, ``U ((F * skew(U^T gU)) S + S (F * skew(V^T gV)) + diag(gS)) Vh``,
    ``skew(c) = c - c^T``, plus for a non-square matrix the parts of the cotangents outside
    the span of ``U`` or ``V``, through ``S^-1``). The sign of each pair of singular
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
    """
    if np.ndim(unwrap(a)) < 2:
        msg = (
            f"svd: needs a matrix or a stack of them, got an array of shape {np.shape(unwrap(a))} [called at "
            f"{user_location()}]"
        )
        raise ShapeError(msg)
    full = bool(full_matrices)
    return _SVDResult(record(SVD_U, a, full), record(SVDVALS, a), record(SVD_VH, a, full))


# -- qr ---------------------------------------------------------------------------------------------
# The rules are written with numpy calls that nodegrad records (matmul, swapaxes, solve and
# products with constant masks), so they differentiate again.


def _copy_upper(x: Any) -> Any:
    """The symmetric matrix with ``x``'s upper triangle."""
    n = np.shape(x)[-1]
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
    """(g - Q sym(Q^T g)) R^-T, sym() copying the upper triangle; R = Q^T a"""
    r = np.matmul(_transposed(ans), x)
    _full_column_rank(r)
    return _times_inverse_transposed(g - np.matmul(ans, _copy_upper(np.matmul(_transposed(ans), g))), r)


def _qr_r_rule(g: Any, ans: Any, x: Any) -> Any:
    """Q sym(g R^T) R^-T, sym() copying the upper triangle; Q = a R^-1"""
    _full_column_rank(ans)
    q = _transposed(np.linalg.solve(_transposed(ans), _transposed(x)))
    return _times_inverse_transposed(np.matmul(q, _copy_upper(np.matmul(g, _transposed(ans)))), ans)


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
    copying the lower triangle into a symmetric matrix), to any order. Where the
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
