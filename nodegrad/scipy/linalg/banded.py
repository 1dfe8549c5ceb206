"""The banded solve, ``scipy.linalg.solve_banded``, an op whose rule solves again with the
same op: the transposed matrix is banded too, with ``l`` and ``u`` swapped, and its band
storage is a gather of the original's. So it differentiates to any order, and the
gradient costs what the solve costs, ``O((l + u) n)`` per column, never a dense matrix.

In band storage (scipy's), ``ab[u + i - j, j] = a[i, j]`` for the entries of the band;
the other entries of ``ab`` (the corners above the first and below the last column) are
not read, and their gradient is zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from nodegrad import ops
from nodegrad.engine.guards import guarded
from nodegrad.engine.record import record
from nodegrad.engine.registry import defjoint
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ShapeError, user_location
from nodegrad.ops.linalg.batching import stacked
from nodegrad.scipy.linalg._common import FAMILY, as_operand, refuse_nonfinite

__all__ = ["solve_banded"]


def _banded_forward(ab: Any, b: Any, lower: int, upper: int) -> Any:
    # In one dtype: scipy (1.17) divides a real b in place by a complex ab when M is 1.
    common = np.result_type(ab, b, np.float32)
    return scipy.linalg.solve_banded((lower, upper), ab.astype(common), b.astype(common), check_finite=False)


def _solve_banded(ab: Any, b: Any, lower: int, upper: int) -> Any:
    return record(SOLVE_BANDED, ab, b, lower, upper)


def _shifted(x: Any, axis: int, rows: int, n: int, offset: int) -> Any:
    """``out[..., k, j, ...]`` = ``x[..., j + k - offset, ...]`` along ``axis`` (of ``n``
    entries), for ``k < rows``, and 0 where ``j + k - offset`` is outside ``[0, n)``."""
    index = np.arange(n)[None, :] + np.arange(rows)[:, None] - offset
    inside = (index >= 0) & (index < n)
    taken = ops.gather(x, np.clip(index, 0, n - 1), axis=axis)
    shape = [1] * np.ndim(unwrap(taken))
    at = axis % np.ndim(unwrap(x))
    shape[at], shape[at + 1] = rows, n
    return ops.multiply(taken, inside.reshape(shape))


def band_transpose(ab: Any, lower: int, upper: int) -> Any:
    """The band storage of ``a.T`` (``upper`` subdiagonals, ``lower`` superdiagonals), from
    ``ab``, that of ``a``: row ``k`` is row ``lower + upper - k`` of ``ab``, shifted by
    ``k - lower`` columns."""
    flipped = ops.flip(ab, -2)  # row k is row lower + upper - k of ab
    rows, n = np.shape(unwrap(ab))[-2:]
    index = np.arange(n)[None, :] + np.arange(rows)[:, None] - lower
    inside = (index >= 0) & (index < n)
    flat = ops.reshape(flipped, (*np.shape(unwrap(ab))[:-2], rows * n))
    positions = np.arange(rows)[:, None] * n + np.clip(index, 0, n - 1)
    return ops.multiply(ops.gather(flat, positions, axis=-1), inside)


def _banded_rule(wanted: tuple[int, ...], g: Any, ans: Any, ab: Any, b: Any, lower: int, upper: int) -> tuple[Any, ...]:
    """z = a^-T g for b, a banded solve with the transposed band; for ab, -z x^T on the
    band, in band storage: both from one solve"""
    # b -> a^-1 b is linear; its transpose b -> a^-T b solves with a.T, banded with (upper, lower).
    z = _solve_banded(band_transpose(ab, lower, upper), g, upper, lower)
    if 0 not in wanted:
        return (z,)
    rows, n = np.shape(unwrap(ab))[-2:]
    if np.ndim(unwrap(b)) == 1:
        outer = ops.multiply(_shifted(z, -1, rows, n, upper), ans)  # (rows, n): z[j + k - u] x[j]
    else:  # (..., rows, n, K), summed over the K columns
        outer = ops.sum(ops.multiply(_shifted(z, -2, rows, n, upper), ops.expand_dims(ans, -3)), -1)
    g_ab = 0.0 - outer  # 0 - (...): the unread corners are +0.0, not -0.0
    return tuple(g_ab if k == 0 else z for k in wanted)


SOLVE_BANDED = defjoint(
    "solve_banded",
    _banded_forward,
    _banded_rule,
    (0, 1),
    family=FAMILY,
    broadcasts=True,
    doc="x with a @ x = b for a banded a given in band storage ab, as scipy.linalg.solve_banded",
    batch=stacked({0: 2, 1: 2}, vector=1),
)


def _bandwidths(l_and_u: Any) -> tuple[int, int]:
    try:
        lower, upper = l_and_u
        pair = (int(lower), int(upper))
    except (TypeError, ValueError):
        pair = (-1, -1)
    if pair[0] < 0 or pair[1] < 0 or pair != tuple(l_and_u):
        msg = (
            f"solve_banded: (l, u) must be two non-negative ints, the numbers of sub- and superdiagonals, got "
            f"{l_and_u!r} [called at {user_location()}]"
        )
        raise ArgumentError(msg)
    return pair


@guarded
def solve_banded(
    l_and_u: tuple[int, int],
    ab: Any,
    b: Any,
    overwrite_ab: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """Solve ``a @ x = b`` for a banded ``a`` given in band storage, as
    ``scipy.linalg.solve_banded``.

    ``ab[u + i - j, j]`` holds ``a[i, j]``; the corners of ``ab`` outside the matrix are not
    read. Differentiable in ``ab`` and ``b`` to any order: with ``z`` solving the
    transposed system ``a.T @ z = g`` (banded too, ``l`` and ``u`` swapped) for the
    cotangent ``g`` of ``x``, the cotangents are ``z`` for ``b`` and ``-z x^T`` on the band,
    in band storage, for ``ab`` (zero at the corners). Stacks of systems broadcast, as in
    scipy.

    Parameters
    ----------
    l_and_u : (int, int)
        The numbers of nonzero lower and upper diagonals.
    ab : array_like, shape (..., l + u + 1, M)
        The band of ``a``.
    b : array_like, shape (M,) or (..., M, K)
        The right-hand side: a vector, or columns.
    overwrite_ab, overwrite_b : bool, default False
        Accepted for scipy's signature; nothing is overwritten.
    check_finite : bool, default True
        Refuse NaN and Inf in ``ab`` and ``b`` with a :class:`~nodegrad.errors.NonFiniteError`.

    Returns
    -------
    x : ndarray or Traced
        Shaped like ``b`` (with the broadcast stack axes).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.linalg as sla
    >>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])  # tridiagonal
    >>> sla.solve_banded((1, 1), ab, np.array([5.0, 6.0, 5.0]))
    array([1., 1., 1.])
    >>> ng.grad(lambda b: ng.sum(sla.solve_banded((1, 1), ab, b)))(np.array([5.0, 6.0, 5.0]))
    array([0.21428571, 0.14285714, 0.21428571])
    """
    lower, upper = _bandwidths(l_and_u)
    ab, b = as_operand(ab), as_operand(b)
    shape_ab, shape_b = np.shape(unwrap(ab)), np.shape(unwrap(b))
    if len(shape_ab) < 2 or shape_ab[-2] != lower + upper + 1:
        msg = (
            f"solve_banded: ab must have l + u + 1 = {lower + upper + 1} rows for (l, u) = ({lower}, {upper}), "
            f"got shape {shape_ab} [called at {user_location()}]"
        )
        raise ShapeError(msg)
    rows_b = shape_b[0] if len(shape_b) == 1 else (shape_b[-2] if len(shape_b) > 1 else None)
    if rows_b != shape_ab[-1]:
        msg = (
            f"solve_banded: b {shape_b} must have M = {shape_ab[-1]} rows, the columns of ab {shape_ab} "
            f"[called at {user_location()}]"
        )
        raise ShapeError(msg)
    if check_finite:
        refuse_nonfinite("solve_banded", ab, b)
    return _solve_banded(ab, b, lower, upper)
