"""The singular value decomposition: ``np.linalg.svdvals`` and ``np.linalg.svd``, of a
matrix or of each matrix of a stack (the last two axes), real or complex.

Each factor is an op of its own, so a loss that reads one factor sweeps that factor's rule
alone; the rules of the three add up to the usual formula of the whole decomposition.
With ``a = U diag(s) Vh``: ``ds = Re(diag(U^H da V))``, whose transpose is
``conj(U) diag(g) conj(Vh)`` (``U diag(g) Vh`` for a real ``a``); the vectors' rules are in
:func:`_left_vectors_rule`. Each rule is written with recorded operations, the
decomposition it needs included (the other factors' ops): differentiated again, it
differentiates through them, to any order. Where the vectors are not unique (repeated or
zero values, the signs and phases of the vectors) the rules refuse what depends on the
choice: see :mod:`~nodegrad.ops.linalg.refusals`.

A complex singular pair ``(u_k, v_k)`` may take any common phase
``(u_k e^{i phi}, v_k e^{i phi})``. The relative phase is the matrix's
(``Im(u_k^H dA v_k) / s_k``); these rules give it to ``V``, and ``U``'s rule judges the
common phase for both factors: ``Vh``'s rule passes its share of it on to ``U``, which
``Vh``'s op takes as an input for that alone (for complex matrices). So ``U @ Vh``, which
does not depend on the common phase, has a gradient; ``U`` or ``Vh`` alone must not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import MatrixShapeError, NoGradientError, user_location
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks, stacked
from nodegrad.ops.linalg.decompositions import lapack_ready
from nodegrad.ops.linalg.refusals import (
    inverse_gaps,
    reciprocal,
    refuse_again_at_repeated,
    refuse_phase_dependence,
    refuse_split_values,
    refuse_undefined,
    repeated_pairs,
    tolerance,
)

__all__ = ["svd", "svdvals"]

_SVDResult = type(np.linalg.svd(np.eye(1)))


def _is_complex(x: Any) -> bool:
    return np.iscomplexobj(unwrap(x))


def _adjoint(x: Any) -> Any:
    return np.conjugate(transposed(x)) if _is_complex(x) else transposed(x)


def _factors(x: Any, full: bool, u: Any = None, s: Any = None, vh: Any = None) -> tuple[Any, Any, Any]:
    """The SVD of ``x`` for a rule, cut to the ``k = min(m, n)`` singular pairs: numpy's on a
    plain matrix (the forward's own call, so the same signs), the ops' on a traced one
    (those given, the rule's own ``ans`` or inputs, reused). New vectors of both sides come
    from the rule of the singular values, whose use of them does not depend on the common
    phase of a pair (``u_k v_k^H``): they are recorded as such (no phase test)."""
    if type(x) not in DIFFERENTIATING:
        u, s, vh = np.linalg.svd(lapack_ready("svd", x), full_matrices=full)
    else:
        invariant = u is None and vh is None
        u = record(SVD_U, x, full, invariant) if u is None else u
        s = record(SVDVALS, x) if s is None else s
        vh = record(SVD_VH, x, u if _is_complex(x) else None, full, invariant) if vh is None else vh
    k = np.shape(s)[-1]
    return u[..., :, :k], s, vh[..., :k, :]


# -- singular values ----------------------------------------------------------------------------


def _svdvals_rule(g: Any, ans: Any, x: Any) -> Any:
    """conj(U) diag(g) conj(Vh): U diag(g) Vh for a real x"""
    # d(s_i) = Re(u_i^H dX v_i) for each simple singular value. The phases of a singular
    # pair cancel in u_i v_i^H.
    if batched_in(g, ans, x):  # a grad inside vmap: the examples as a stack
        return on_stacks(_svdvals_rule, g, ans, x)
    repeated = repeated_pairs(ans)
    refuse_split_values("svdvals", "singular values", repeated, g)
    refuse_again_at_repeated("svdvals", "singular values", repeated, g)
    u, _, vh = _factors(x, False, s=ans)
    if _is_complex(u):
        u, vh = np.conjugate(u), np.conjugate(vh)
    return np.matmul(u * np.expand_dims(g, -2), vh)


SVDVALS = defop(
    "svdvals",
    lambda x: np.linalg.svd(lapack_ready("svdvals", x), compute_uv=False),
    _svdvals_rule,
    family="linalg",
    doc="singular values of the last two axes, largest first",
    batch=ONE_MATRIX,
)


@guarded
def svdvals(x: Any) -> Any:
    """The singular values of a matrix, or of each matrix of a stack (the last two axes),
    largest first, as ``np.linalg.svdvals``.

    The gradient of each singular value ``s_i`` is ``u_i v_i^T`` (``conj(u_i v_i^H)`` for a
    complex matrix), exact where ``s_i`` is simple; for sums over repeated values (the
    nuclear norm) it is still the gradient; a function that tells repeated values apart
    (closer than ``sqrt(eps) * max(s)``) has none, and raises
    :class:`~nodegrad.errors.NoGradientError` naming the op. Differentiable to any order:
    the second derivative goes through the singular vectors, and so needs distinct
    singular values (where they repeat it raises).

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
        raise MatrixShapeError(msg)
    return record(SVDVALS, x)


# -- singular vectors ---------------------------------------------------------------------------------


def _without_extra(g: Any, k: int, axis: int, what: str) -> Any:
    """The cotangent of ``U`` (``axis=-1``) or ``Vh`` (``axis=-2``) for its first ``k``
    vectors. With ``full_matrices=True`` the others complete an orthonormal basis in an
    arbitrary way: a cotangent on them has no gradient."""
    if np.shape(g)[axis] == k:
        return g
    extra = g[..., :, k:] if axis == -1 else g[..., k:, :]
    if np.any(all_values(extra) != 0):
        msg = (
            f"svd: with full_matrices=True the {what} beyond the first min(m, n) are not unique (any orthonormal "
            "basis of the rest of the space is as good), so a function of them has no gradient"
            + "; pass full_matrices=False"
        )
        raise NoGradientError(msg)
    return g[..., :, :k] if axis == -1 else g[..., :k, :]


def _zero(s: Any) -> np.ndarray:
    return unwrap(s) <= tolerance(s)


def _left_vectors_rule(u: Any, s: Any, vh: Any, g: Any, side: str, relative_phase: bool) -> Any:
    """The cotangent of ``a = U diag(s) Vh`` from the cotangent ``g`` of ``U``, ``(m, k)``:
    ``conj(U) ((F * (J - J^H)) S) conj(Vh) + (g - conj(U) J) S^-1 conj(Vh)`` with ``J = U^T g``
    and ``F_ij = 1 / (s_j^2 - s_i^2)`` (the second term only when ``m > k``). With
    ``relative_phase`` it also carries the relative phase of each pair, ``1j Im(J_kk) / s_k``
    on the diagonal. Vh's rule is this one for ``a^H = V diag(s) U^H``."""
    complex_ = _is_complex(u)
    left, right = (np.conjugate(u), np.conjugate(vh)) if complex_ else (u, vh)
    j = np.matmul(transposed(u), g)
    skew = j - _adjoint(j)
    repeated = repeated_pairs(s)
    zero = _zero(s)
    k = np.shape(s)[-1]
    rest_used = np.shape(u)[-2] > k or (relative_phase and complex_)
    refuse_again_at_repeated("svd", "singular values", repeated, g, u, s, vh)
    refuse_again_at_repeated("svd", "zero singular values", zero if rest_used else np.zeros(1, bool), g, u, s, vh)
    refuse_undefined("svd", "singular vectors of repeated singular values", repeated, skew, g)
    # A single pair has no gaps: the first term is zero, and is left out (so that a rule
    # differentiated again does not depend on the other factor through a zero).
    inner = skew * (inverse_gaps(s * s, repeated) * np.expand_dims(s, -2)) if k > 1 else None
    if relative_phase and complex_:
        phase = np.imag(np.diagonal(j, 0, -2, -1))
        refuse_undefined("svd", f"{side} singular vectors of zero singular values", zero, phase, g)
        eye = np.eye(k, dtype=unwrap(s).dtype)
        relative = eye * np.expand_dims(1j * phase * reciprocal(s, zero), -2)
        inner = relative if inner is None else inner + relative
    grad = None if inner is None else np.matmul(np.matmul(left, inner), right)
    if np.shape(u)[-2] > k:  # the part of g outside U's columns, through S^-1
        rest = g - np.matmul(left, j)
        where = np.broadcast_to(zero[..., None, :], np.shape(rest))
        refuse_undefined("svd", f"{side} singular vectors of zero singular values", where, rest, g)
        outside = np.matmul(rest * np.expand_dims(reciprocal(s, zero), -2), right)
        grad = outside if grad is None else grad + outside
    if grad is None:  # one pair of a 1 x n matrix: its U is numpy's +-1
        shape = (*np.shape(u)[:-1], np.shape(vh)[-1])
        return np.zeros(shape, np.result_type(unwrap(u), unwrap(vh), unwrap(g)))
    return grad


def _svd_u_rule(g: Any, ans: Any, x: Any, full: Any, invariant: Any) -> Any:
    """conj(U) ((F * (J - J^H)) S) conj(Vh) + (g - conj(U) J) S^-1 conj(Vh), J = U^T g, F_ij = 1 / (s_j^2 - s_i^2)"""
    if batched_in(g, ans, x, full, invariant):  # a grad inside vmap: the examples as a stack
        return on_stacks(_svd_u_rule, g, ans, x, full, invariant)
    u, s, vh = _factors(x, full, u=ans)
    g = _without_extra(g, np.shape(s)[-1], -1, "columns of U")
    if _is_complex(u) and not invariant:  # the common phase of each pair, Vh's share of it included
        share = np.imag(np.diagonal(unwrap(np.matmul(transposed(u), g)), 0, -2, -1))
        refuse_phase_dependence("svd", "pair of singular vectors", share, g)
    return _left_vectors_rule(u, s, vh, g, "left", relative_phase=False)


def _svd_vh_rule(g: Any, ans: Any, x: Any, u_full: Any, full: Any, invariant: Any) -> Any:
    """the rule of U for a^H = V S U^H, with g^H for U's g, conjugate-transposed"""
    if batched_in(g, ans, x, u_full, full, invariant):  # a grad inside vmap: the examples as a stack
        return on_stacks(_svd_vh_rule, g, ans, x, u_full, full, invariant)
    u, s, vh = _factors(x, full, u=u_full, vh=ans)
    g = _without_extra(g, np.shape(s)[-1], -2, "rows of Vh")
    return _adjoint(_left_vectors_rule(_adjoint(vh), s, _adjoint(u), _adjoint(g), "right", relative_phase=True))


def _svd_vh_phase_rule(g: Any, ans: Any, x: Any, u_full: Any, full: Any, invariant: Any) -> Any:
    """Vh's share of the common phase of each singular pair, as a cotangent of U that U's
    rule reads for its test alone: conj(U) diag(-1j Im(g_k Vh_k^T))."""
    if batched_in(g, ans, x, u_full, full, invariant):  # a grad inside vmap: the examples as a stack
        return on_stacks(_svd_vh_phase_rule, g, ans, x, u_full, full, invariant)
    k = min(np.shape(x)[-2:])
    if invariant or not np.size(unwrap(g)):
        return None
    share = np.imag(np.sum(g[..., :k, :] * ans[..., :k, :], axis=-1))
    plain = unwrap(share)
    # Rounding alone is left out (a function of Vh alone that does not depend on the phases
    # would otherwise hand U's test a cotangent made of rounding, with nothing to measure
    # it against); anything above it goes on whole, as U's share of the same phase may
    # cancel it (a function of the pairs u_k v_k^H) however small it is beside Vh's scale.
    rounding = 8 * np.shape(g)[-1] * np.finfo(plain.dtype).eps * np.max(np.abs(unwrap(g)))
    significant = np.abs(plain) > rounding
    if not np.any(significant):
        return None
    if type(share) not in DIFFERENTIATING:
        share = np.where(significant, share, 0)
    # Differentiated again it is kept whole: U's rule gives it no weight, but only with the
    # U it was made of (a constant share would not cancel as U moves).
    columns = np.conjugate(u_full[..., :, :k]) * np.expand_dims(-1j * share, -2)
    extra = np.shape(u_full)[-1] - k
    if extra:
        columns = np.concatenate([columns, np.zeros((*np.shape(columns)[:-1], extra), columns.dtype)], axis=-1)
    return columns


SVD_U = defop(
    "svd_u",
    lambda x, full, invariant: np.linalg.svd(lapack_ready("svd", x), full_matrices=full)[0],
    _svd_u_rule,
    None,
    None,
    family="linalg",
    doc="the left singular vectors U of a = U @ diag(s) @ Vh: np.linalg.svd's first part",
    batch=ONE_MATRIX,
)
SVD_VH = defop(
    "svd_vh",
    lambda x, u, full, invariant: np.linalg.svd(lapack_ready("svd", x), full_matrices=full)[2],
    _svd_vh_rule,
    _svd_vh_phase_rule,
    None,
    None,
    family="linalg",
    doc="the right singular vectors Vh (the rows) of a = U @ diag(s) @ Vh: np.linalg.svd's third part (for a "
    "complex a, also of U: the common phase of each singular pair)",
    batch=stacked({0: 2, 1: 2}),  # U (a complex matrix's) is read by the rule alone
)


@guarded
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
    cotangent on them raises. Differentiable to any order (the rules differentiate again).

    Complex singular vectors take any common phase ``(u_k e^{i phi}, v_k e^{i phi})``:
    functions that do not depend on it (``abs(U)``, ``u_k v_k^H`` and so ``U @ diag(s) @
    Vh``) have a gradient, judged for ``U`` and ``Vh`` together; others raise, in both modes.

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
        raise MatrixShapeError(msg)
    full = bool(full_matrices)
    u = record(SVD_U, a, full, False)
    # A complex Vh depends on U too: its rule passes the common phases on (see above).
    vh = record(SVD_VH, a, u if np.iscomplexobj(unwrap(a)) else None, full, False)
    return _SVDResult(u, record(SVDVALS, a), vh)
