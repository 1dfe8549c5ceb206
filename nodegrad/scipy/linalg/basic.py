"""``solve``, ``inv`` and ``det`` with scipy's signatures, built on nodegrad's own ops, and
``block_diag``.

scipy reads only what its ``assume_a`` says it may: one triangle for ``'sym'``, ``'her'``
and ``'pos'``, the diagonal for ``'diagonal'``, three diagonals for ``'tridiagonal'``. So do
these, and their values are scipy's; their gradients are the derivatives of what scipy
evaluates, zero where it does not read (of a matrix read from one triangle, the cotangent
of the symmetric matrix is folded onto the triangle read), as
:func:`nodegrad.scipy.linalg.cholesky` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ShapeError, user_location
from nodegrad.ops import det as _det
from nodegrad.ops import einsum, pad
from nodegrad.ops import inv as _inv
from nodegrad.ops import solve as _solve
from nodegrad.ops.linalg.decompositions import read_triangle
from nodegrad.scipy.linalg._common import (
    as_operand,
    is_traced,
    refuse_nonfinite,
    square,
    square_operand,
    triangle,
)
from nodegrad.scipy.linalg._common import transposed as _transposed
from nodegrad.scipy.linalg.solvers import cho_solve, cholesky, solve_triangular

__all__ = ["block_diag", "det", "inv", "solve"]

_KINDS = {
    None: "general",
    "gen": "general",
    "general": "general",
    "sym": "symmetric",
    "symmetric": "symmetric",
    "her": "hermitian",
    "hermitian": "hermitian",
    "pos": "positive definite",
    "positive definite": "positive definite",
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "banded": "general",  # scipy finds the band in the matrix itself: every entry counts
    "upper triangular": "upper triangular",
    "lower triangular": "lower triangular",
}
_INV_KINDS = (
    "general",
    "symmetric",
    "hermitian",
    "positive definite",
    "diagonal",
    "upper triangular",
    "lower triangular",
)


def _kind(name: str, assume_a: Any, allowed: tuple[str, ...]) -> str:
    kind = _KINDS.get(assume_a) if isinstance(assume_a, str | None) else None
    if kind is None or kind not in allowed:
        names = sorted(k for k, v in _KINDS.items() if k is not None and v in allowed)
        msg = f"{name}: assume_a must be None or one of {names}, got {assume_a!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    return kind


def _symmetric(a: Any, lower: bool, hermitian: bool) -> Any:
    """The symmetric (Hermitian) matrix scipy reads from one triangle of ``a``: recorded
    from that triangle alone for a traced ``a``."""
    if is_traced(a):
        return read_triangle(a, lower, hermitian)
    a_value = a
    n = np.shape(a_value)[-1]
    flip = np.conj if hermitian else (lambda x: x)
    kept = triangle(n, lower)
    read = np.where(kept, a_value, flip(np.swapaxes(a_value, -1, -2)))
    if hermitian and np.iscomplexobj(read):  # LAPACK takes the diagonal as real
        read = read - 1j * np.imag(read) * np.eye(n, dtype=bool)
    return read


def _band(a: Any) -> Any:
    n = np.shape(unwrap(a))[-1]
    return a * (np.tri(n, n, 1, dtype=bool) & ~np.tri(n, n, -2, dtype=bool))


def _diagonal(a: Any) -> Any:
    return einsum("...ii->...i", a) if is_traced(a) else np.diagonal(a, axis1=-2, axis2=-1)


@guarded
@composite
def solve(
    a: Any,
    b: Any,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    assume_a: str | None = None,
    transposed: bool = False,
) -> Any:
    """Solve ``a @ x = b`` (``a.T @ x = b`` when ``transposed``), as ``scipy.linalg.solve``.

    ``assume_a`` picks what is read of ``a`` as scipy does: everything for ``None``,
    ``'gen'`` and ``'banded'``; one triangle (``lower``) for ``'sym'``, ``'her'`` and
    ``'pos'`` (a Cholesky factorisation, which fails for a matrix that is not positive
    definite); the diagonal, the three central diagonals or one triangle for
    ``'diagonal'``, ``'tridiagonal'`` and ``'upper triangular'`` / ``'lower triangular'``.
    Differentiable in ``a`` and ``b`` to any order, through :func:`nodegrad.solve`,
    :func:`cholesky` or :func:`solve_triangular`; the gradient is zero where ``a`` is not
    read. Batch axes broadcast.

    Parameters
    ----------
    a : array_like, shape (..., N, N)
    b : array_like, shape (N,) or (..., N, K)
    lower : bool, default False
        Which triangle ``'sym'``, ``'her'`` and ``'pos'`` read.
    overwrite_a, overwrite_b : bool, default False
        Accepted for scipy's signature; nothing is overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.
    assume_a : str, optional
        The structure of ``a``, as above.
    transposed : bool, default False
        Solve with ``a.T`` (for complex ``a`` too, where scipy refuses).

    Returns
    -------
    x : ndarray or Traced, shaped like ``b`` (with the broadcast batch axes)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a, b = np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([9.0, 8.0])
    >>> sla.solve(a, b, assume_a="pos")
    array([2., 3.])
    >>> ng.grad(lambda b: ng.sum(sla.solve(a, b)))(b)
    array([0.2, 0.4])
    """
    kind = _kind("solve", assume_a, tuple(set(_KINDS.values())))
    a, b = as_operand(a), as_operand(b)
    square("solve", a)
    if check_finite:
        refuse_nonfinite("solve", a, b)
    if transposed:
        a = _transposed(a)
    if kind in ("upper triangular", "lower triangular"):
        return solve_triangular(a, b, lower=kind == "lower triangular", check_finite=False)
    if kind == "positive definite":
        return cho_solve((cholesky(a, lower=lower, check_finite=False), lower), b, check_finite=False)
    if kind == "diagonal":
        d = _diagonal(a)
        return b / d if np.ndim(unwrap(b)) == 1 else b / d[..., :, None]
    if kind in ("symmetric", "hermitian"):
        a = _symmetric(a, lower, kind == "hermitian")
    elif kind == "tridiagonal":
        a = _band(a)
    return _solve(a, b)


@guarded
@composite
def inv(
    a: Any, overwrite_a: bool = False, check_finite: bool = True, *, assume_a: str | None = None, lower: bool = False
) -> Any:
    """The inverse of a square matrix, or of each in a stack, as ``scipy.linalg.inv``.

    ``assume_a`` (``None``, ``'gen'``, ``'sym'``, ``'her'``, ``'pos'``, ``'diagonal'``,
    ``'upper triangular'``, ``'lower triangular'``) says what is read of ``a``, as for
    :func:`solve`; for ``'diagonal'`` that is the diagonal alone, as scipy documents (scipy
    1.17 returns the other entries of ``a`` unchanged beside the inverted diagonal).
    Differentiable to any order, through :func:`nodegrad.inv` (whose rule is
    ``-inv(a).T @ g @ inv(a).T``) or the structured solves.

    Parameters
    ----------
    a : array_like, shape (..., N, N)
    overwrite_a : bool, default False
        Accepted for scipy's signature; ``a`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.
    assume_a : str, optional
    lower : bool, default False
        Which triangle ``'sym'``, ``'her'`` and ``'pos'`` read.

    Returns
    -------
    ndarray or Traced, shape (..., N, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    >>> ng.grad(lambda a: ng.sum(sla.inv(a)))(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[-0.25  , -0.125 ],
           [-0.125 , -0.0625]])
    """
    kind = _kind("inv", assume_a, _INV_KINDS)
    a = square_operand("inv", a, check_finite)
    if kind == "general":
        return _inv(a)
    if kind in ("symmetric", "hermitian"):
        return _inv(_symmetric(a, lower, kind == "hermitian"))
    n = np.shape(unwrap(a))[-1]
    eye = np.eye(n, dtype=np.result_type(unwrap(a), np.float32))
    if kind == "diagonal":
        return eye * (1 / _diagonal(a))[..., None, :]
    eye = np.broadcast_to(eye, np.shape(unwrap(a)))
    if kind == "positive definite":
        return cho_solve((cholesky(a, lower=lower, check_finite=False), lower), eye, check_finite=False)
    return solve_triangular(a, eye, lower=kind == "lower triangular", check_finite=False)


@guarded
def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The determinant of a square matrix, or of each in a stack, as ``scipy.linalg.det``
    (through :func:`nodegrad.det`: the gradient is the cofactor matrix, exact also at
    singular matrices, and differentiable again where ``a`` is nonsingular).

    Parameters
    ----------
    a : array_like, shape (..., N, N)
    overwrite_a : bool, default False
        Accepted for scipy's signature; ``a`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    float, ndarray or Traced, shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.det(np.array([[2.0, 0.0], [0.0, 3.0]]))
    np.float64(6.0)
    >>> ng.grad(sla.det)(np.array([[2.0, 0.0], [0.0, 3.0]]))
    array([[3., 0.],
           [0., 2.]])
    """
    return _det(square_operand("det", a, check_finite))


@guarded
@composite
def block_diag(*arrs: Any) -> Any:
    """The block-diagonal matrix of ``arrs``, as ``scipy.linalg.block_diag``: a scalar is a
    1 by 1 block, a vector a row; the dtype is the arrays' common one.

    Differentiable in every block (each gradient is its block of the cotangent).

    Parameters
    ----------
    *arrs : array_like, at most 2-D

    Returns
    -------
    ndarray or Traced, shape (sum of the rows, sum of the columns)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.block_diag(np.array([[1.0, 2.0]]), 3.0)
    array([[1., 2., 0.],
           [0., 0., 3.]])
    >>> ng.grad(lambda x: ng.sum(sla.block_diag(x, x) * np.arange(4.0).reshape(2, 2)))(np.array([1.0]))
    array([3.])
    """
    deep = [k for k, x in enumerate(arrs) if np.ndim(unwrap(x)) > 2]
    if deep:
        msg = f"block_diag: blocks must be at most 2-D, those at positions {deep} are not [called at {user_location()}]"
        raise ShapeError(msg)
    if not is_traced(*arrs):
        return scipy.linalg.block_diag(*arrs)
    blocks = [x if np.ndim(unwrap(x)) == 2 else x.reshape(1, -1) for x in map(as_operand, arrs)]
    rows = [np.shape(unwrap(x))[0] for x in blocks]
    columns = [np.shape(unwrap(x))[1] for x in blocks]
    placed = [
        pad(block, ((sum(rows[:k]), sum(rows[k + 1 :])), (sum(columns[:k]), sum(columns[k + 1 :]))))
        for k, block in enumerate(blocks)
    ]
    return sum(placed[1:], start=placed[0])  # the blocks do not overlap: each sum adds zeros
