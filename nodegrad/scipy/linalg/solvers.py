"""Triangular and Sylvester solves, and the LU and Cholesky factorisations with the solves
that use them, as in ``scipy.linalg``.

``solve_triangular`` and ``solve_sylvester`` are ops whose rules solve again with the same
op (transposed), so they differentiate to any order; ``lu_factor`` is an op whose rule is
two triangular solves; ``lu_solve``, ``cho_solve``, ``cholesky`` and ``cho_factor`` are made
of those and of nodegrad's ``cholesky``. Complex matrices follow nodegrad's convention (a
rule is the transpose for the pairing ``Re(sum(u * v))``): the solves are holomorphic, so
their rules keep the real formulas with plain transposes, and a conjugate transpose in the
forward (``trans=2``) becomes a conjugate in the rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from nodegrad.engine.batched import plain_map
from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import carries_gradient
from nodegrad.engine.record import record
from nodegrad.engine.registry import defjoint, defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError, user_location
from nodegrad.ops import cholesky as _lower_cholesky
from nodegrad.ops import matmul, where
from nodegrad.ops.linalg.batching import batched_in, on_stacks, stacked
from nodegrad.scipy.linalg._common import (
    FAMILY,
    as_operand,
    is_traced,
    refuse_nonfinite,
    square,
    square_operand,
    transposed,
    triangle,
)

__all__ = ["cho_factor", "cho_solve", "cholesky", "lu_factor", "lu_solve", "solve_sylvester", "solve_triangular"]

# -- solve_triangular ------------------------------------------------------------------------------

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _triangular_forward(a: Any, b: Any, trans: int, lower: bool, unit_diagonal: bool) -> Any:
    return scipy.linalg.solve_triangular(
        a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False
    )


def _solve_triangular(a: Any, b: Any, trans: int, lower: bool, unit_diagonal: bool) -> Any:
    return record(SOLVE_TRIANGULAR, a, b, trans, lower, unit_diagonal)


def _triangular_rule(
    wanted: tuple[int, ...], g: Any, ans: Any, a: Any, b: Any, trans: int, lower: bool, unit_diagonal: bool
) -> tuple[Any, ...]:
    """z = op(a)^-T g for b, solved with the same triangle; for a, -z x^T (trans 0), -x z^T
    (1) or -conj(x z^T) (2) on the triangle read: both from one solve"""
    # b -> op(a)^-1 b is linear; its transpose is (op(a)^T)^-1: a^T, a, or conj(a) for
    # trans 0, 1 and 2.
    vector = np.ndim(unwrap(b)) == 1  # g is a stack of vectors when a is a stack
    columns = g[..., None] if vector else g
    if trans == 2 and np.iscomplexobj(unwrap(a)):
        z = np.conjugate(_solve_triangular(a, np.conjugate(columns), 0, lower, unit_diagonal))
    else:
        z = _solve_triangular(a, columns, 1 if trans == 0 else 0, lower, unit_diagonal)
    z = z[..., 0] if vector else z
    if 0 not in wanted:
        return (z,)
    left, right = (z, ans) if trans == 0 else (ans, z)
    vector = np.ndim(unwrap(b)) == 1
    outer = left[..., :, None] * right[..., None, :] if vector else matmul(left, transposed(right))
    if trans == 2 and np.iscomplexobj(unwrap(a)):
        outer = np.conjugate(outer)  # d(a^H) transposes to the conjugate
    # 0 - (...), not -(...): the entries off the triangle are +0.0, not -0.0.
    g_a = 0.0 - outer * triangle(np.shape(unwrap(a))[-1], lower, strict=unit_diagonal)
    return tuple(g_a if k == 0 else z for k in wanted)


SOLVE_TRIANGULAR = defjoint(
    "solve_triangular",
    _triangular_forward,
    _triangular_rule,
    (0, 1),
    family=FAMILY,
    broadcasts=True,
    doc="x with op(a) @ x = b for a triangular a (its other triangle unread), as scipy.linalg.solve_triangular",
    batch=stacked({0: 2, 1: 2}, vector=1),
)


@guarded
def solve_triangular(
    a: Any,
    b: Any,
    trans: int | str = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """Solve ``op(a) @ x = b`` for a triangular ``a``, as ``scipy.linalg.solve_triangular``.

    Only the ``lower`` (or upper) triangle of ``a`` is read, without its diagonal when
    ``unit_diagonal`` (taken as ones); the gradient with respect to ``a`` lives on the
    entries read, and is zero elsewhere. Differentiable in ``a`` and ``b`` to any order:
    the rule is a triangular solve with the transposed matrix. Batch axes broadcast.

    Parameters
    ----------
    a : array_like, shape (..., N, N)
        A triangular matrix, or a stack of them.
    b : array_like, shape (N,) or (..., N, K)
        The right-hand side: a vector, or columns.
    trans : {0, 1, 2, 'N', 'T', 'C'}, default 0
        ``op(a)`` is ``a``, ``a.T`` or ``a.conj().T``.
    lower : bool, default False
        Whether ``a`` is lower triangular (else upper).
    unit_diagonal : bool, default False
        Take the diagonal of ``a`` as ones, without reading it.
    overwrite_b : bool, default False
        Accepted for scipy's signature; ``b`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf in ``a`` and ``b`` with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    x : ndarray or Traced
        Shaped like ``b`` (with the broadcast batch axes).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a = np.array([[2.0, 1.0], [0.0, 4.0]])
    >>> sla.solve_triangular(a, np.array([3.0, 4.0]))
    array([1., 1.])
    >>> ng.grad(lambda a: ng.sum(sla.solve_triangular(a, np.array([3.0, 4.0]))))(a)
    array([[-0.5  , -0.5  ],
           [ 0.   , -0.125]])
    """
    if trans not in _TRANS:
        msg = f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    a, b = as_operand(a), as_operand(b)
    square("solve_triangular", a)
    if check_finite:
        refuse_nonfinite("solve_triangular", a, b)
    return _solve_triangular(a, b, _TRANS[trans], bool(lower), bool(unit_diagonal))


# -- solve_sylvester --------------------------------------------------------------------------------


def _sylvester(a: Any, b: Any, q: Any) -> Any:
    return record(SOLVE_SYLVESTER, a, b, q)


def _sylvester_rule(wanted: tuple[int, ...], g: Any, ans: Any, a: Any, b: Any, q: Any) -> tuple[Any, ...]:
    """s with a^T s + s b^T = g for q; -s x^T for a and -x^T s for b: one solve for all three"""
    # a x + x b = q is linear in q; the transpose of q -> x solves the transposed equation.
    s = _sylvester(transposed(a), transposed(b), g)
    shares = (lambda: -matmul(s, transposed(ans)), lambda: -matmul(transposed(ans), s), lambda: s)
    return tuple(shares[k]() for k in wanted)


def _sylvester_forward(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    # In one dtype: scipy (1.17) pairs the real Schur form of a real matrix, whose 2 by 2
    # blocks hold complex eigenvalues, with a complex solver that takes it as triangular,
    # and so solves a real a (or b) with a complex other wrongly.
    common = np.result_type(a, b, q, np.float32)
    return scipy.linalg.solve_sylvester(a.astype(common), b.astype(common), q.astype(common))


SOLVE_SYLVESTER = defjoint(
    "solve_sylvester",
    _sylvester_forward,
    _sylvester_rule,
    (0, 1, 2),
    family=FAMILY,
    broadcasts=True,
    doc="x with a @ x + x @ b = q, as scipy.linalg.solve_sylvester",
    batch=stacked({0: 2, 1: 2, 2: 2}),
)


@guarded
def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """Solve the Sylvester equation ``a @ x + x @ b = q``, as ``scipy.linalg.solve_sylvester``
    (Bartels-Stewart).

    Differentiable in ``a``, ``b`` and ``q`` to any order: with ``s`` solving the transposed
    equation ``a.T @ s + s @ b.T = g`` for the cotangent ``g`` of ``x``, the cotangents are
    ``-s @ x.T``, ``-x.T @ s`` and ``s``. The solution is unique when no eigenvalue of
    ``a`` is the negative of one of ``b``. The three are solved in their common dtype
    (scipy 1.17 solves a real ``a`` or ``b`` with a complex other wrongly when the real one
    has complex eigenvalues).

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    b : array_like, shape (..., N, N)
    q : array_like, shape (..., M, N)

    Returns
    -------
    x : ndarray or Traced, shape (..., M, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a, b = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[3.0]])
    >>> sla.solve_sylvester(a, b, np.array([[4.0], [10.0]]))
    array([[1.],
           [2.]])
    >>> ng.grad(lambda b: ng.sum(sla.solve_sylvester(a, b, np.array([[4.0], [10.0]]))))(b)
    array([[-0.65]])
    """
    a, b, q = as_operand(a), as_operand(b), as_operand(q)
    square("solve_sylvester", a)
    square("solve_sylvester", b)
    return _sylvester(a, b, q)


# -- LU --------------------------------------------------------------------------------------------


def _row_order(piv: np.ndarray) -> np.ndarray:
    """The rows of ``a`` in the order of ``L @ U``: LAPACK's pivots swap row ``i`` with row
    ``piv[i]``, one after another, so ``a[order] == L @ U``. Of each matrix of a stack for
    a stack of pivots (the last axis)."""
    piv = np.asarray(piv)
    order = np.broadcast_to(np.arange(piv.shape[-1]), piv.shape).copy()
    for i in range(piv.shape[-1]):
        p = piv[..., i : i + 1]
        there = np.take_along_axis(order, p, -1)
        np.put_along_axis(order, p, order[..., i : i + 1], -1)
        order[..., i : i + 1] = there
    return order


def _factored(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's ``lu_factor`` of a matrix, or of each of a stack (scipy's takes one matrix)."""
    if np.ndim(a) == 2:
        return scipy.linalg.lu_factor(a, check_finite=False)
    flat = np.reshape(a, (-1, *np.shape(a)[-2:]))
    pairs = [scipy.linalg.lu_factor(m, check_finite=False) for m in flat]
    if not pairs:
        return np.zeros(np.shape(a), np.result_type(a, np.float32)), np.zeros(np.shape(a)[:-1], np.int32)
    lu, piv = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    return lu.reshape(np.shape(a)), piv.reshape((*np.shape(a)[:-2], piv.shape[-1]))


def _lu_rule(g: Any, ans: Any, a: Any, order: np.ndarray) -> Any:
    """L^-T (tril(L^T g_L, -1) + triu(g_U U^T)) U^-T, rows put back in a's order"""
    if batched_in(g, ans, a, order):  # a grad inside vmap: the examples as a stack
        return on_stacks(_lu_rule, g, ans, a, order)
    # From a[order] = L U: L^-1 da' U^-1 = L^-1 dL + dU U^-1, whose strictly lower part is
    # L^-1 dL and upper part dU U^-1. Transposing those maps gives the rule; both
    # triangular solves read the packed factor itself (L with its unit diagonal, U).
    n = np.shape(unwrap(ans))[-1]
    strict_lower, upper = triangle(n, lower=True, strict=True), triangle(n, lower=False)
    unit_lower = ans * strict_lower + np.eye(n, dtype=unwrap(ans).dtype)
    middle = matmul(transposed(unit_lower), g * strict_lower) * strict_lower
    middle = middle + matmul(g * upper, transposed(ans * upper)) * upper
    left = _solve_triangular(ans, middle, 1, True, True)
    reordered = transposed(_solve_triangular(ans, transposed(left), 0, False, False))
    rows = np.broadcast_to(np.argsort(order, axis=-1)[..., :, None], np.shape(unwrap(ans)))
    return np.take_along_axis(reordered, rows, -2)


LU_FACTOR = defop(
    "lu_factor",
    lambda a, order: _factored(a)[0],
    _lu_rule,
    None,
    family=FAMILY,
    doc="the packed LU factors of a square matrix, L (unit diagonal) below U, as scipy.linalg.lu_factor",
    # scipy's lu_factor takes one matrix: the forward factors a stack matrix by matrix, one
    # node for all the examples (the rule takes stacks).
    batch=stacked({0: 2, 1: 1}),
)


@guarded
def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, np.ndarray]:
    """The LU factorisation with partial pivoting of a square matrix, as
    ``scipy.linalg.lu_factor``: ``(lu, piv)``, for :func:`lu_solve`.

    ``lu`` holds ``L`` (unit diagonal, not stored) below its diagonal and ``U`` on and above
    it; ``piv`` are LAPACK's row interchanges (row ``i`` swapped with row ``piv[i]``), plain
    integers. ``lu`` is differentiable in ``a`` to any order, for the pivoting chosen at
    ``a`` (it is piecewise smooth: the pivots change where two candidates tie). Square
    matrices only when differentiated.

    Parameters
    ----------
    a : array_like, shape (N, N)
    overwrite_a : bool, default False
        Accepted for scipy's signature; ``a`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    lu : ndarray or Traced, shape (N, N)
    piv : ndarray of int32, shape (N,)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lu, piv = sla.lu_factor(a)
    >>> lu, piv
    (array([[3.        , 4.        ],
           [0.33333333, 0.66666667]]), array([1, 1], dtype=int32))
    >>> ng.grad(lambda a: sla.lu_factor(a)[0][1, 1])(a)
    array([[-1.33333333,  1.        ],
           [ 0.44444444, -0.33333333]])
    """
    a = as_operand(a)
    if np.ndim(unwrap(a)) != 2:
        msg = f"lu_factor: needs a matrix, got shape {np.shape(unwrap(a))} [called at {user_location()}]"
        raise ShapeError(msg)
    if check_finite:
        refuse_nonfinite("lu_factor", a)
    if not carries_gradient(a):  # plain values (of every example, inside vmap)
        return plain_map(_factored, a)
    rows, columns = np.shape(unwrap(a))
    if rows != columns:
        msg = (
            f"lu_factor: differentiable for square matrices only, got shape {(rows, columns)} "
            f"[called at {user_location()}]"
        )
        raise NoGradientError(msg)
    piv = plain_map(lambda v: _factored(v)[1], a)
    return record(LU_FACTOR, a, plain_map(_row_order, piv)), piv


def _lu_and_piv(name: str, factors: Any) -> tuple[Any, np.ndarray]:
    if not (isinstance(factors, tuple | list) and len(factors) == 2):
        msg = f"{name}: needs the pair (lu, piv) that lu_factor returns [called at {user_location()}]"
        raise ArgumentError(msg)
    lu, piv = as_operand(factors[0]), as_operand(factors[1])
    square(name, lu, batched=False)
    if piv.shape != (np.shape(unwrap(lu))[-1],) or piv.dtype.kind not in "iu":
        msg = (
            f"{name}: piv must be lu_factor's integer pivots, got {piv.dtype} of shape {piv.shape} "
            f"[called at {user_location()}]"
        )
        raise ArgumentError(msg)
    return lu, piv


@guarded
@composite
def lu_solve(
    lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True
) -> Any:
    """Solve ``a @ x = b`` (``a.T``, ``a.conj().T`` for ``trans`` 1, 2) from ``lu_factor(a)``,
    as ``scipy.linalg.lu_solve``.

    Made of a row permutation and two triangular solves with the packed factor, so it is
    differentiable in ``lu`` and ``b`` to any order, and through ``lu_factor`` in ``a``.

    Parameters
    ----------
    lu_and_piv : (lu, piv)
        What :func:`lu_factor` returns.
    b : array_like, shape (N,) or (N, K)
    trans : {0, 1, 2}, default 0
    overwrite_b : bool, default False
        Accepted for scipy's signature; ``b`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    x : ndarray or Traced, shaped like ``b``

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> b = np.array([1.0, 1.0])
    >>> f = lambda a: ng.sum(sla.lu_solve(sla.lu_factor(a), b))
    >>> f(np.array([[2.0, 0.0], [0.0, 4.0]]))
    np.float64(0.75)
    >>> ng.grad(f)(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[-0.25  , -0.125 ],
           [-0.125 , -0.0625]])
    """
    lu, piv = _lu_and_piv("lu_solve", lu_and_piv)
    if trans not in (0, 1, 2):
        msg = f"lu_solve: trans must be 0, 1 or 2, got {trans!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    b = as_operand(b)
    if check_finite:
        refuse_nonfinite("lu_solve", lu, b)
    order = plain_map(_row_order, piv)  # of every example, inside vmap
    if trans == 0:
        y = _solve_triangular(lu, b[order], 0, True, True)
        return _solve_triangular(lu, y, 0, False, False)
    z = _solve_triangular(lu, b, trans, False, False)
    return _solve_triangular(lu, z, trans, True, True)[plain_map(lambda o: np.argsort(o, axis=-1), order)]


# -- Cholesky -----------------------------------------------------------------------------------------


@guarded
def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix, as
    ``scipy.linalg.cholesky``: upper triangular ``U`` with ``a = U.conj().T @ U``, or with
    ``lower=True`` lower triangular ``L`` with ``a = L @ L.conj().T``.

    Like scipy, it reads only the triangle it returns (and of a complex diagonal the real
    part). The gradient is that of :func:`nodegrad.cholesky`: the derivative of that
    function, zero in the other triangle. Differentiable to any order; stacks of matrices
    work too.

    Parameters
    ----------
    a : array_like, shape (..., N, N)
    lower : bool, default False
        Return the lower factor (reading the lower triangle), else the upper one.
    overwrite_a : bool, default False
        Accepted for scipy's signature; ``a`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    c : ndarray or Traced, shape (..., N, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> sla.cholesky(a)
    array([[2., 1.],
           [0., 2.]])
    >>> ng.grad(lambda a: ng.sum(sla.cholesky(a)))(a)  # the lower triangle is not read
    array([[0.1875, 0.25  ],
           [0.    , 0.25  ]])
    """
    a = square_operand("cholesky", a, check_finite)
    return _lower_cholesky(a, upper=not lower)


@guarded
def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, bool]:
    """The Cholesky factorisation for :func:`cho_solve`, as ``scipy.linalg.cho_factor``:
    ``(c, lower)``, where the triangle of ``c`` is :func:`cholesky`'s factor and the other
    triangle holds ``a``'s own entries there (scipy leaves them; :func:`cho_solve` does not
    read them).

    Differentiable in ``a`` to any order: through the factor (from the triangle read, as
    :func:`cholesky`) and through the entries passed on.

    Parameters
    ----------
    a : array_like, shape (N, N)
    lower : bool, default False
    overwrite_a : bool, default False
        Accepted for scipy's signature; ``a`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    c : ndarray or Traced, shape (N, N)
    lower : bool

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    (array([[2., 1.],
           [2., 2.]]), False)
    """
    a = as_operand(a)
    square("cho_factor", a, batched=False)
    factor = cholesky(a, lower=lower, check_finite=check_finite)
    mask = triangle(np.shape(unwrap(a))[-1], bool(lower))
    c = where(mask, factor, a) if is_traced(a) else np.where(mask, factor, a)
    return c, bool(lower)


@guarded
@composite
def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a @ x = b`` from ``cho_factor(a)``, as ``scipy.linalg.cho_solve``.

    Two triangular solves with the factor's triangle (the other is not read), so it is
    differentiable in ``c`` and ``b`` to any order, and through ``cho_factor`` in ``a``.

    Parameters
    ----------
    c_and_lower : (c, lower)
        What :func:`cho_factor` returns.
    b : array_like, shape (N,) or (N, K)
    overwrite_b : bool, default False
        Accepted for scipy's signature; ``b`` is never overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    x : ndarray or Traced, shaped like ``b``

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a, b = np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([2.0, 1.0])
    >>> sla.cho_solve(sla.cho_factor(a), b)
    array([0.5, 0. ])
    >>> ng.grad(lambda b: ng.sum(sla.cho_solve(sla.cho_factor(a), b)))(b)
    array([0.1875, 0.125 ])
    """
    if not (isinstance(c_and_lower, tuple | list) and len(c_and_lower) == 2):
        msg = f"cho_solve: needs the pair (c, lower) that cho_factor returns [called at {user_location()}]"
        raise ArgumentError(msg)
    c, lower = as_operand(c_and_lower[0]), bool(c_and_lower[1])
    b = as_operand(b)
    square("cho_solve", c)
    if check_finite:
        refuse_nonfinite("cho_solve", c, b)
    # a = L L^H (lower) or U^H U (upper): solve with the first factor, then the second.
    first, second = (0, 2) if lower else (2, 0)
    return _solve_triangular(c, _solve_triangular(c, b, first, lower, False), second, lower, False)
