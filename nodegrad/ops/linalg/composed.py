"""Linear algebra built on the other ops: the pseudo-inverse (an op whose rule is made of
matrix products), least squares through it, integer matrix powers (products, and an
inverse for a negative power), ``np.linalg.tensorsolve`` and ``np.linalg.tensorinv``
(reshapes around ``solve`` and ``inv``). Their gradients are those ops' rules, so they
differentiate again, to any order."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, MatrixShapeError, ShapeError, user_location
from nodegrad.ops.elementwise import conj, real, where
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import stacked
from nodegrad.ops.linalg.decompositions import inv, lapack_ready, solve
from nodegrad.ops.linalg.products import matmul
from nodegrad.ops.linalg.singular import SVDVALS
from nodegrad.ops.shape import reshape, transpose

__all__ = ["lstsq", "matrix_power", "pinv", "tensorinv", "tensorsolve"]


# -- pinv ------------------------------------------------------------------------------------------


def _pinv_rule(g: Any, ans: Any, x: Any, rcond: Any, hermitian: Any) -> Any:
    """-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A), with P = pinv(A)"""
    # The derivative of P along matrices of A's rank (Golub and Pereyra):
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P.
    if np.iscomplexobj(unwrap(ans)):
        return _complex_pinv_rule(g, ans, x)
    p_t, g_t = transposed(ans), transposed(g)
    first = -np.matmul(np.matmul(p_t, g), p_t)
    left = np.matmul(g_t, np.matmul(ans, p_t))
    right = np.matmul(np.matmul(p_t, ans), g_t)
    return first + (left - np.matmul(x, np.matmul(ans, left))) + (right - np.matmul(np.matmul(right, ans), x))


def _complex_pinv_rule(g: Any, ans: Any, x: Any) -> Any:
    """-P^T g P^T + conj((I - A P) g^T P P^H + P^H P g^T (I - P A))"""
    # The first term of dP is holomorphic (plain transposes); the two in dA^H transpose, for
    # Re(sum(u * v)), to the conjugates of the real formula's terms with P^H for P^T.
    p_t, p_h = transposed(ans), np.conjugate(transposed(ans))
    g_t = transposed(g)
    first = -np.matmul(np.matmul(p_t, g), p_t)
    left = np.matmul(g_t, np.matmul(ans, p_h))
    right = np.matmul(np.matmul(p_h, ans), g_t)
    rest = (left - np.matmul(x, np.matmul(ans, left))) + (right - np.matmul(np.matmul(right, ans), x))
    return first + np.conjugate(rest)


PINV = defop(
    "pinv",
    lambda x, rcond, hermitian: np.linalg.pinv(lapack_ready("pinv", x), rcond=rcond, hermitian=hermitian),
    _pinv_rule,
    None,
    None,
    family="linalg",
    doc="the Moore-Penrose pseudo-inverse, singular values at most rcond * max(s) taken as zero",
    batch=stacked({0: 2, 1: 0}),  # rcond: a number per matrix, broadcast against the stack
)


@guarded
def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = np._NoValue) -> Any:
    """The Moore-Penrose pseudo-inverse of a matrix, or of each matrix of a stack, as
    ``np.linalg.pinv``: singular values at most ``rcond * max(s)`` (or ``rtol``, as numpy
    reads them) count as zero. ``hermitian=True`` takes ``a`` as symmetric.

    The gradient is that of the pseudo-inverse along matrices of the same rank (the
    Golub-Pereyra formula, made of matrix products, so it differentiates again): exact
    wherever ``a`` has full rank. At a rank-deficient matrix the pseudo-inverse is not
    continuous (a perturbation of any size raises the rank), and this is the gradient of
    its restriction to matrices of that rank.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.pinv(np.array([[2.0], [0.0]]))
    array([[0.5, 0. ]])
    >>> ng.grad(lambda a: ng.sum(ng.pinv(a)))(np.array([[2.0], [0.0]]))
    array([[-0.25],
           [ 0.25]])
    """
    shape = np.shape(unwrap(a))
    if len(shape) < 2:
        msg = f"pinv: needs a matrix or a stack of them, got an array of shape {shape} [called at {user_location()}]"
        raise MatrixShapeError(msg)
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(shape[-2:]) * np.finfo(np.result_type(unwrap(a), np.float32)).eps
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        msg = f"pinv: rtol and rcond can't both be given [called at {user_location()}]"
        raise ArgumentError(msg)
    return record(PINV, a, rcond, bool(hermitian))


# -- lstsq -----------------------------------------------------------------------------------------


@guarded
@composite
def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    """The least-squares solution ``x`` of ``a @ x = b`` (of least norm when ``a`` has
    deficient rank), as ``np.linalg.lstsq``: the tuple ``(x, residuals, rank, s)``.
    ``a`` is a matrix, ``b`` a vector or a matrix of columns; singular values of ``a`` at
    most ``rcond * max(s)`` count as zero (``rcond=None``: machine precision times the
    larger side, as numpy).

    ``x`` is ``pinv(a, rcond) @ b``, so its gradient is :func:`pinv`'s (exact at full rank,
    along matrices of the same rank otherwise) and differentiates again; the residuals
    (the squared norm of each column of ``b - a @ x``, when ``a`` has full column rank and
    more rows than columns, else empty) are differentiable too, the singular values ``s``
    as :func:`svdvals`; the rank is plain data.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> x, residuals, rank, s = ng.lstsq(a, np.array([1.0, 2.0, 2.0]))
    >>> x, residuals, int(rank)
    (array([1.16666667, 0.5       ]), array([0.16666667]), 2)
    >>> ng.grad(lambda b: ng.lstsq(a, b)[0][0])(np.array([1.0, 2.0, 2.0]))
    array([ 0.83333333,  0.33333333, -0.16666667])
    """
    a_value, b_value = unwrap(a), unwrap(b)
    if np.ndim(a_value) != 2 or np.ndim(b_value) not in (1, 2) or np.shape(b_value)[0] != np.shape(a_value)[0]:
        msg = (
            f"lstsq: needs a matrix a (m, n) and b of shape (m,) or (m, k), got shapes {np.shape(a_value)} and "
            f"{np.shape(b_value)} [called at {user_location()}]"
        )
        raise MatrixShapeError(msg)
    m, n = np.shape(a_value)
    if rcond is None:
        rcond = np.finfo(np.float64).eps * max(m, n)  # numpy's default: it solves in float64
    lapack_ready("lstsq", a_value)

    def ranks(v: np.ndarray) -> Any:  # of every example, inside vmap
        s = np.linalg.svd(v, compute_uv=False)
        return np.intc(np.sum(s > rcond * np.max(s, axis=-1, keepdims=True, initial=0), axis=-1))  # numpy's type

    rank = plain_map(ranks, a)
    full = np.asarray(all_values(rank)) == n
    if np.any(full) and not np.all(full):
        msg = (
            "lstsq: under vmap some examples have full column rank and others not, and their residuals differ in "
            f"shape (a value-dependent shape cannot be batched) [called at {user_location()}]"
        )
        raise ShapeError(msg)
    x = matmul(pinv(a, rcond), b)
    if np.all(full) and m > n:
        error = b - matmul(a, x)
        residuals = real(error * conj(error)) if np.iscomplexobj(unwrap(error)) else error**2
        residuals = np.sum(residuals, axis=0) if np.ndim(b_value) == 2 else reshape(np.sum(residuals), (1,))
    else:  # numpy's empty residuals are real, also for complex a and b
        residuals = np.empty((0,), dtype=np.finfo(np.result_type(a_value, b_value, np.float16)).dtype)
    return x, residuals, rank, record(SVDVALS, a)


# -- matrix_power, tensorsolve, tensorinv ---------------------------------------------------------------


@guarded
@composite
def matrix_power(a: Any, n: int) -> Any:
    """The integer power ``a ** n`` of a square matrix, or of each matrix of a stack, as
    ``np.linalg.matrix_power``: repeated squaring by matrix products, and for a negative
    ``n`` of :func:`inv` of ``a``; ``n = 0`` gives the identity (with a zero gradient).
    Differentiable to any order.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[2.0, 1.0], [0.0, 1.0]])
    >>> ng.matrix_power(a, -2)
    array([[ 0.25, -0.75],
           [ 0.  ,  1.  ]])
    >>> ng.grad(lambda a: ng.matrix_power(a, -2)[0, 1])(a)
    array([[ 0.5 , -0.75],
           [-0.75,  1.25]])
    """
    shape = np.shape(unwrap(a))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"matrix_power: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise MatrixShapeError(msg)
    try:
        if isinstance(n, bool):
            raise TypeError
        n = operator.index(n)
    except TypeError:
        msg = f"matrix_power: the exponent must be an integer, got {n!r} [called at {user_location()}]"
        raise DtypeError(msg) from None
    if n == 0:
        identity = np.broadcast_to(np.eye(shape[-1], dtype=unwrap(a).dtype), shape)
        return where(np.ones(shape, dtype=bool), identity, a)
    base = inv(a) if n < 0 else a
    n = abs(n)
    result = None
    while True:  # the binary digits of n, lowest first
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)


@composite
def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """The ``x`` with ``np.tensordot(a, x, x.ndim) == b``, as ``np.linalg.tensorsolve``:
    ``a``'s axes (after moving ``axes`` to the end) are those of ``b`` followed by those of
    ``x``, and the solve is of ``a`` reshaped to a square matrix. Differentiable in both,
    to any order (through :func:`solve`).

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.linalg import tensorsolve
    >>> a = np.eye(4).reshape(2, 2, 2, 2) * 2.0
    >>> tensorsolve(a, np.ones((2, 2)))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    a_shape, b_ndim = np.shape(unwrap(a)), np.ndim(unwrap(b))
    if axes is not None:
        moved = [k % len(a_shape) for k in (axes if isinstance(axes, (tuple, list)) else (axes,))]
        order = [k for k in range(len(a_shape)) if k not in moved] + moved
        a = transpose(a, tuple(order))
        a_shape = tuple(a_shape[k] for k in order)
    x_shape = a_shape[b_ndim:]
    size = int(np.prod(x_shape))
    if int(np.prod(a_shape)) != size * size or int(np.prod(a_shape[:b_ndim])) != size:
        msg = (
            f"tensorsolve: a's axes must be b's followed by x's, of as many elements, got a of shape {a_shape} "
            f"(after moving axes) and b of {b_ndim} axes [called at {user_location()}]"
        )
        raise MatrixShapeError(msg)
    return reshape(solve(reshape(a, (size, size)), reshape(b, (size,))), x_shape)


@composite
def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` read as a linear map from its last axes to its first ``ind``,
    as ``np.linalg.tensorinv``: ``np.tensordot(tensorinv(a, ind), a, ind)`` is the identity
    of the last axes. Differentiable to any order (through :func:`inv`).

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.linalg import tensorinv
    >>> tensorinv(np.eye(4).reshape(4, 2, 2) * 2.0, ind=1).shape
    (2, 2, 4)
    """
    shape = np.shape(unwrap(a))
    if not isinstance(ind, (int, np.integer)) or isinstance(ind, bool) or ind <= 0:
        msg = f"tensorinv: ind must be a positive integer, got {ind!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    rows, cols = int(np.prod(shape[:ind])), int(np.prod(shape[ind:]))
    if rows != cols:
        msg = (
            f"tensorinv: the first {ind} axes and the rest of shape {shape} must hold as many elements [called at "
            f"{user_location()}]"
        )
        raise MatrixShapeError(msg)
    return reshape(inv(reshape(a, (rows, cols))), (*shape[ind:], *shape[:ind]))
