"""The QR factorisation (``np.linalg.qr``) of a matrix or of each matrix of a stack (the
last two axes), real or complex: ``Q`` and ``R`` are an op each.

The rules are written with numpy calls that nodegrad records (matmul, swapaxes, solve,
conj and products with constant masks), so they differentiate again. A complex R has a
real diagonal (LAPACK's Householder reflections make it so), which fixes the phases of
Q's columns: the factorisation is unique, and so is its derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import carries_gradient, has_values
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, MatrixShapeError, NoGradientError, user_location
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks

__all__ = ["qr"]

_QRResult = type(np.linalg.qr(np.eye(1)))


def _copy_upper(x: Any) -> Any:
    """The symmetric matrix with ``x``'s upper triangle; for a complex ``x`` the Hermitian
    one, with the real part of its diagonal."""
    n = np.shape(x)[-1]
    if np.iscomplexobj(unwrap(x)):
        real = np.finfo(unwrap(x).dtype).dtype
        upper = x * np.triu(np.ones((n, n), dtype=real), 1)
        return upper + np.conjugate(transposed(upper)) + np.real(x) * np.eye(n, dtype=real)
    ones = np.ones((n, n), dtype=unwrap(x).dtype)
    return x * np.triu(ones) + transposed(x * np.triu(ones, 1))


def _times_inverse_transposed(y: Any, r: Any) -> Any:
    """``y R^-T``."""
    return transposed(np.linalg.solve(r, transposed(y)))


def _full_column_rank(r: Any) -> None:
    if not has_values(r):
        return
    diagonal = np.abs(np.diagonal(all_values(r), axis1=-2, axis2=-1))  # every example's, under vmap
    if diagonal.size and np.any(
        diagonal <= np.finfo(diagonal.dtype).eps * max(np.shape(r)[-2:]) * np.max(diagonal, axis=-1, keepdims=True)
    ):
        msg = "qr: the gradient needs a matrix of full column rank (R is singular, so Q is not unique)"
        raise NoGradientError(msg)


def _qr_q_rule(g: Any, ans: Any, x: Any) -> Any:
    """(g - conj(Q) sym(Q^T g)) R^-T, sym() copying the upper triangle; R = Q^H a"""
    if batched_in(g, ans, x):  # a grad inside vmap: the examples as a stack
        return on_stacks(_qr_q_rule, g, ans, x)
    conj_q = np.conjugate(ans) if np.iscomplexobj(unwrap(ans)) else ans
    r = np.matmul(transposed(conj_q), x)
    _full_column_rank(r)
    return _times_inverse_transposed(g - np.matmul(conj_q, _copy_upper(np.matmul(transposed(ans), g))), r)


def _qr_r_rule(g: Any, ans: Any, x: Any) -> Any:
    """conj(Q) sym(g R^T) R^-T, sym() copying the upper triangle; Q = a R^-1"""
    if batched_in(g, ans, x):  # a grad inside vmap: the examples as a stack
        return on_stacks(_qr_r_rule, g, ans, x)
    _full_column_rank(ans)
    q = transposed(np.linalg.solve(transposed(ans), transposed(x)))
    conj_q = np.conjugate(q) if np.iscomplexobj(unwrap(q)) else q
    return _times_inverse_transposed(np.matmul(conj_q, _copy_upper(np.matmul(g, transposed(ans)))), ans)


QR_Q = defop(
    "qr_q",
    lambda x: np.linalg.qr(x)[0],
    _qr_q_rule,
    family="linalg",
    doc="Q of the reduced QR factorisation a = Q @ R (m >= n): orthonormal columns",
    batch=ONE_MATRIX,
)
QR_R = defop(
    "qr_r",
    lambda x: np.linalg.qr(x)[1],
    _qr_r_rule,
    family="linalg",
    doc="R of the reduced QR factorisation a = Q @ R (m >= n): upper triangular",
    batch=ONE_MATRIX,
)
_QR_MODES = ("reduced", "complete", "r", "raw")


@guarded
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
        raise MatrixShapeError(msg)
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
        if carries_gradient(a):
            msg = (
                f"qr: no gradient for {refused}; differentiable is mode='reduced' or 'r' with m >= n, got shape "
                f"{shape} [called at {user_location()}]"
            )
            raise NoGradientError(msg)
        # plain data, of every example inside vmap
        return plain_map(lambda v: np.linalg.qr(v, mode=mode), a)  # type: ignore[call-overload]
    if mode == "r":
        return record(QR_R, a)
    return _QRResult(record(QR_Q, a), record(QR_R, a))
