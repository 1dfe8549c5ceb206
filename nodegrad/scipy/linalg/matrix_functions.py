"""Matrix functions, as in ``scipy.linalg``: the exponential, the principal square root and
the principal logarithm of a square matrix (or of each in a stack).

Each is an op whose rule is written with these ops again, so they differentiate to any
order. The transpose of the Fréchet derivative ``L_f(A, E)`` of a primary matrix function
``f`` is ``L_f(A^T, G)``, and ``L_f(A, E)`` is the top-right block of ``f`` of the block
matrix ``[[A, E], [0, A]]`` (Higham, *Functions of Matrices*, theorem 3.6): ``expm`` and
``logm`` use that block; ``sqrtm`` solves the Sylvester equation ``X^T S + S X^T = G``
instead, from ``X X = A``. The rules keep plain transposes for complex matrices too: these
functions are holomorphic, and nodegrad's convention transposes for ``Re(sum(u * v))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg

from nodegrad.engine.batched import all_values
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import has_values
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops import cat
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks
from nodegrad.scipy.linalg._common import FAMILY, is_traced, square_operand, transposed
from nodegrad.scipy.linalg.solvers import solve_sylvester

__all__ = ["expm", "logm", "sqrtm"]


def frechet(f: Callable[[Any], Any], a: Any, e: Any) -> Any:
    """``L_f(a, e)``, the derivative of the primary matrix function ``f`` at ``a`` along
    ``e``: the top-right block of ``f([[a, e], [0, a]])``.

    It is linear in ``e``, so ``e`` is scaled to ``a``'s norm first (and the block scaled
    back): the block's norm, which sets how ``f`` is computed, is then ``a``'s own. The
    scale is a plain number, so the result stays linear in a traced ``e``.
    """
    a_value, e_value = unwrap(a), unwrap(e)
    n = np.shape(a_value)[-1]
    # The norms in double precision: a single-precision sum of entries near its largest
    # float overflows.
    a_norm = np.linalg.norm(a_value.astype(np.result_type(a_value, np.float64)), 1, axis=(-2, -1), keepdims=True)
    e_norm = np.linalg.norm(e_value.astype(np.result_type(e_value, np.float64)), 1, axis=(-2, -1), keepdims=True)
    safe = (e_norm > 0) & (a_norm > 0)
    dtype = np.real(e_value).dtype
    # Kept finite in e's precision: a subnormal e would need a scale past the dtype's range
    # (1 / 2e-311 overflows float64), and any finite scale is as exact.
    with np.errstate(over="ignore"):
        ratio = np.where(safe, a_norm.astype(np.float64) / np.where(safe, e_norm, 1.0).astype(np.float64), 1.0)
    finfo = np.finfo(dtype)
    scale = np.clip(ratio, finfo.tiny, finfo.max).astype(dtype)
    zeros = np.zeros(np.broadcast_shapes(np.shape(a_value), np.shape(e_value)), np.result_type(a_value, e_value))
    block = cat([cat([a, e * scale], -1), cat([zeros, a], -1)], -2)
    return f(block)[..., :n, n:] / scale


def _in_precision_of(result: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``result`` in ``a``'s precision: single precision stays single."""
    if np.asarray(a).dtype not in (np.float32, np.complex64):
        return result
    return result.astype(np.complex64 if np.iscomplexobj(result) else np.float32)


def _off_the_negative_axis(name: str, what: str, a: Any) -> None:
    """Refuse a matrix with an eigenvalue on the closed negative real axis: the principal
    square root and logarithm are not differentiable there (their branch cut; the logarithm
    is not defined at 0), and are complex for a real matrix."""
    value = all_values(a)  # every example's, inside vmap
    if not has_values(value):  # (shapes only: eval_shape)
        return
    w = np.linalg.eigvals(value.astype(np.result_type(value, np.float64)))
    size = np.max(np.abs(w), initial=1.0)
    on_axis = (np.abs(w.imag) <= 1e3 * np.finfo(value.dtype).eps * size) & (w.real <= 0)
    if np.any(on_axis):
        msg = (
            f"{name}: the matrix has an eigenvalue on the closed negative real axis ({w[on_axis][0]:.6g}), where the "
            f"principal {what} is not differentiable (nor real for a real matrix) [called at {user_location()}]"
        )
        raise ArgumentError(msg)


# -- expm -------------------------------------------------------------------------------------------


def _expm_rule(g: Any, ans: Any, a: Any) -> Any:
    """L_expm(a^T, g): the top-right block of expm([[a^T, g], [0, a^T]])"""
    if batched_in(g, a):  # a grad inside vmap: the examples as a stack (frechet scales each by plain norms)
        return on_stacks(_expm_rule, g, None, a)  # ans is not read
    return frechet(expm, transposed(a), g)


EXPM = defop(
    "expm",
    scipy.linalg.expm,
    _expm_rule,
    family=FAMILY,
    doc="the matrix exponential (of each matrix in a stack), as scipy.linalg.expm",
    batch=ONE_MATRIX,
)


@guarded
def expm(A: Any) -> Any:  # noqa: N803  (scipy's name)
    """The matrix exponential of a square matrix, or of each in a stack, as
    ``scipy.linalg.expm`` (Padé approximation with scaling and squaring).

    Differentiable to any order: the gradient is the Fréchet derivative at ``A.T`` applied
    to the cotangent, the top-right block of ``expm([[A.T, G], [0, A.T]])``.

    Parameters
    ----------
    A : array_like, shape (..., N, N)

    Returns
    -------
    ndarray or Traced, shape (..., N, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.expm(np.array([[0.0, 1.0], [0.0, 0.0]]))
    array([[1., 1.],
           [0., 1.]])
    >>> ng.grad(lambda a: ng.sum(sla.expm(a)))(np.zeros((2, 2)))
    array([[1., 1.],
           [1., 1.]])
    """
    return record(EXPM, square_operand("expm", A))


# -- sqrtm -------------------------------------------------------------------------------------------


def _sqrtm_forward(a: np.ndarray) -> np.ndarray:
    return _in_precision_of(scipy.linalg.sqrtm(a), a)


SQRTM = defop(
    "sqrtm",
    _sqrtm_forward,
    lambda g, ans, a: solve_sylvester(transposed(ans), transposed(ans), g),
    family=FAMILY,
    doc="the principal square root of a matrix (of each in a stack), as scipy.linalg.sqrtm",
    batch=ONE_MATRIX,
)


@guarded
def sqrtm(A: Any) -> Any:  # noqa: N803  (scipy's name)
    """The principal square root of a square matrix, or of each in a stack, as
    ``scipy.linalg.sqrtm`` (Schur method): ``X @ X == A`` with the eigenvalues of ``X`` in
    the right half plane.

    Differentiable to any order where ``A`` has no eigenvalue on the closed negative real
    axis: from ``X dX + dX X = dA``, the gradient ``S`` solves the Sylvester equation
    ``X.T @ S + S @ X.T = G`` (:func:`solve_sylvester`). A traced ``A`` with an eigenvalue
    there raises :class:`~nodegrad.errors.ArgumentError` naming ``sqrtm`` (the principal
    root is not differentiable on that branch cut, nor real for a real matrix); a plain
    one gets scipy's complex answer. Single precision stays single.

    Parameters
    ----------
    A : array_like, shape (..., N, N)

    Returns
    -------
    ndarray or Traced, shape (..., N, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> sla.sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[2., 0.],
           [0., 3.]])
    >>> ng.grad(lambda a: ng.sum(sla.sqrtm(a)))(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[0.25      , 0.2       ],
           [0.2       , 0.16666667]])
    """
    a = square_operand("sqrtm", A)
    if is_traced(a):
        _off_the_negative_axis("sqrtm", "square root", a)
    return record(SQRTM, a)


# -- logm --------------------------------------------------------------------------------------------


def _logm_forward(a: np.ndarray) -> np.ndarray:
    # scipy computes a single-precision logarithm in single precision and warns that it may
    # be inaccurate: it is computed in double precision and rounded once instead.
    return _in_precision_of(scipy.linalg.logm(a.astype(np.result_type(a, np.float64))), a)


def _logm_rule(g: Any, ans: Any, a: Any) -> Any:
    """L_logm(a^T, g): the top-right block of logm([[a^T, g], [0, a^T]])"""
    if batched_in(g, a):  # a grad inside vmap: the examples as a stack (frechet scales each by plain norms)
        return on_stacks(_logm_rule, g, None, a)  # ans is not read
    return frechet(_logm, transposed(a), g)


LOGM = defop(
    "logm",
    _logm_forward,
    _logm_rule,
    family=FAMILY,
    doc="the principal logarithm of a matrix (of each in a stack), as scipy.linalg.logm",
    batch=ONE_MATRIX,
)


def _logm(a: Any) -> Any:
    return record(LOGM, a)


@guarded
def logm(A: Any) -> Any:  # noqa: N803  (scipy's name)
    """The principal logarithm of a square matrix, or of each in a stack, as
    ``scipy.linalg.logm`` (inverse scaling and squaring): ``expm(logm(A)) == A`` with the
    eigenvalues' imaginary parts in ``(-pi, pi)``.

    Differentiable to any order where ``A`` has no eigenvalue on the closed negative real
    axis: the gradient is the Fréchet derivative of ``logm`` at ``A.T`` applied to the
    cotangent, the top-right block of ``logm([[A.T, G], [0, A.T]])``. A traced ``A`` with
    an eigenvalue there (or at 0) raises :class:`~nodegrad.errors.ArgumentError` naming
    ``logm``; a plain one gets scipy's answer. Single precision stays single (computed in
    double precision and rounded).

    Parameters
    ----------
    A : array_like, shape (..., N, N)

    Returns
    -------
    ndarray or Traced, shape (..., N, N)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> a = np.array([[np.e, 0.0], [0.0, 1.0]])
    >>> sla.logm(a)
    array([[1., 0.],
           [0., 0.]])
    >>> ng.grad(lambda a: ng.sum(sla.logm(a)))(a)
    array([[0.36787944, 0.58197671],
           [0.58197671, 1.        ]])
    """
    a = square_operand("logm", A)
    if is_traced(a):
        _off_the_negative_axis("logm", "logarithm", a)
    return _logm(a)
