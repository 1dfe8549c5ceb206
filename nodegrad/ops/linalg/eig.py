"""The general eigendecomposition (``np.linalg.eig`` and ``np.linalg.eigvals``) of a square
matrix, or of each matrix of a stack, and the roots of a polynomial (``np.roots``: the
eigenvalues of its companion matrix).

A real matrix has complex eigenvalues and eigenvectors in general (numpy returns real ones
when every eigenvalue is real); the rules are the transposes of the derivatives for the
pairing ``Re(sum(u * v))``, and a real matrix gets the real part of its cotangent. With
``A V = V diag(w)``, ``P = V^-1 dA V`` and ``F_ij = 1 / (w_j - w_i)`` off the diagonal:

- ``dw = diag(P)`` (holomorphic), whose transpose is ``V^-T diag(g) V^T``;
- ``dV = V (F * P) - V diag(Re(diag(V^H V (F * P))))``: numpy scales each eigenvector to
  unit 2-norm, and the second term keeps it there. The phase of a complex eigenvector is
  numpy's choice (see :mod:`~nodegrad.ops.linalg.refusals`): functions of the vectors that
  do not depend on it (``abs(v)``, ``v v^H``, ``V diag(f(w)) V^-1``) have a gradient,
  others raise. The transpose is ``V^-T (F * (V^T g - V^T conj(V) diag(r))) V^T`` with
  ``r = Re(diag(V^T g))``.

The rules were derived here. JAX differentiates ``eig``'s eigenvalues alone (by the same
formula) and raises for its eigenvectors; the eigenvector JVP proposed for it (jax#2748)
fixes the phases by ``Im(v^H dv) = 0`` instead of refusing, and agrees with these rules on
the functions that do not depend on them.
Where eigenvalues repeat (closer than ``sqrt(eps) * max|w|``) a single eigenvalue and the
vectors have no derivative: a cotangent that needs one raises
:class:`~nodegrad.errors.NoGradientError` naming the op.

Each rule is written with recorded operations, the decomposition it needs included (the
other factor's op): differentiated again, it differentiates through them, to any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.staged import asarray
from nodegrad.engine.traced import unwrap
from nodegrad.errors import MatrixShapeError, NoGradientError, ShapeError, user_location
from nodegrad.ops.batching import loop
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks, per_example_rule
from nodegrad.ops.linalg.decompositions import lapack_ready
from nodegrad.ops.linalg.refusals import (
    inverse_gaps,
    refuse_again_at_repeated,
    refuse_phase_dependence,
    refuse_undefined,
    repeated_pairs,
)

__all__ = ["eig", "eigvals", "roots"]

_EigResult = type(np.linalg.eig(np.eye(1)))


def _decomposition(name: str, x: Any, values: Any) -> tuple[Any, Any]:
    """The eigenpairs of ``x`` for a rule, in the order of ``values`` (the forward's own
    eigenvalues: ``np.linalg.eigvals`` may order them otherwise than ``np.linalg.eig``, in
    principle): numpy's on a plain matrix, the ops' on a traced one."""
    if type(x) in DIFFERENTIATING:
        w, v = record(EIGVALS, x, True), record(EIG_VECTORS, x, True)  # V^-T diag(g) V^T: any phases
    else:
        w, v = np.linalg.eig(lapack_ready(name, x))
    plain_w, plain_values = all_values(w), all_values(values)  # every example's, under vmap
    if np.shape(plain_w) == np.shape(plain_values) and np.array_equal(plain_w, plain_values):
        return w, v
    order = plain_map(lambda ws: np.argmin(np.abs(all_values(values)[..., :, None] - ws[..., None, :]), axis=-1), w)
    return np.take_along_axis(w, order, -1), np.take_along_axis(v, order[..., None, :], -1)


def _real_if_real(grad: Any, x: Any) -> Any:
    """A real matrix's cotangent: the real part (the transpose of its inclusion in the
    complex matrices)."""
    return grad if np.iscomplexobj(unwrap(x)) else np.real(grad)


# -- eigenvalues ------------------------------------------------------------------------------------


def _refuse_defective(name: str, w: Any, v: Any, g: Any) -> None:
    """Repeated eigenvalues have no derivative one by one: a cotangent must treat each
    cluster alike (its sum is smooth), and even then the eigenvectors must span the space
    (a defective matrix has no such basis, and its eigenvalues move like square roots)."""
    w, v, plain = all_values(w), all_values(v), asarray(all_values(g))  # every example's, under vmap
    repeated = repeated_pairs(w)
    if not np.any(repeated):
        return
    differences = np.broadcast_to(plain[..., :, None] - plain[..., None, :], repeated.shape)
    used = np.broadcast_to((plain != 0)[..., :, None], repeated.shape)
    scale = np.max(np.abs(plain)) if plain.size else 0.0
    tol = np.sqrt(np.finfo(np.result_type(w)).eps)
    if np.any(np.abs(differences[repeated]) > tol * scale):
        msg = (
            f"{name}: repeated eigenvalues (closer than sqrt(eps) * max|w|) have no derivative one by one, and the "
            "function differentiated tells them apart; a function of them that treats them alike (their sum) has one"
        )
        raise NoGradientError(msg)
    if np.any(used[repeated]) and np.any(np.linalg.cond(v) > 1 / tol):
        msg = (
            f"{name}: the matrix is defective (repeated eigenvalues without a basis of eigenvectors), where its "
            "eigenvalues have no derivative"
        )
        raise NoGradientError(msg)


def _eigvals_rule(g: Any, ans: Any, x: Any, paired: Any) -> Any:
    """V^-T diag(g) V^T"""
    if batched_in(g, ans, x, paired):  # a grad inside vmap: the examples as a stack
        return on_stacks(_eigvals_rule, g, ans, x, paired)
    name = "eig" if paired else "eigvals"
    w, v = _decomposition(name, x, ans)
    _refuse_defective(name, w, v, g)
    refuse_again_at_repeated(name, "eigenvalues", repeated_pairs(w), g)
    grad = np.linalg.solve(transposed(v), np.expand_dims(g, -1) * transposed(v))
    return _real_if_real(grad, x)


def _values(x: Any, paired: bool) -> Any:
    return np.linalg.eig(lapack_ready("eig", x))[0] if paired else np.linalg.eigvals(lapack_ready("eigvals", x))


EIGVALS = defop(
    "eigvals",
    _values,
    _eigvals_rule,
    None,
    family="linalg",
    doc="the eigenvalues of a square matrix (np.linalg.eigvals, or np.linalg.eig's first part)",
    batch=ONE_MATRIX,
)


# -- eigenvectors ------------------------------------------------------------------------------------


def _eig_vectors_rule(g: Any, ans: Any, x: Any, invariant: Any) -> Any:
    """V^-T (F * (V^T g - V^T conj(V) diag(Re(diag(V^T g))))) V^T, F_ij = 1 / (w_j - w_i)"""
    if batched_in(g, ans, x, invariant):  # a grad inside vmap: the examples as a stack
        return on_stacks(_eig_vectors_rule, g, ans, x, invariant)
    if np.shape(ans)[-1] == 1:  # numpy's eigenvector of a 1 x 1 matrix is 1, whatever the matrix
        return _real_if_real(np.zeros(np.shape(ans), np.result_type(unwrap(ans), unwrap(g))), x)
    if type(x) in DIFFERENTIATING:
        w, v = record(EIGVALS, x, True), ans
    else:
        w, v = np.linalg.eig(lapack_ready("eig", x))  # the forward's own call: the same vectors
    c = np.matmul(transposed(v), g)
    diagonal = np.diagonal(c, 0, -2, -1)
    if np.iscomplexobj(unwrap(v)):
        # numpy's real matrices have real eigenvectors for real eigenvalues: only the others
        # have a phase of numpy's choice.
        free = np.ones(np.shape(w), bool) if np.iscomplexobj(unwrap(x)) else np.imag(unwrap(w)) != 0
        if not invariant:
            refuse_phase_dependence("eig", "eigenvector", np.where(free, np.imag(unwrap(diagonal)), 0), g)
        c = c - np.matmul(transposed(v), np.conjugate(v)) * np.expand_dims(np.real(diagonal), -2)
    else:
        c = c - np.matmul(transposed(v), v) * np.expand_dims(diagonal, -2)
    repeated = repeated_pairs(w)
    refuse_again_at_repeated("eig", "eigenvalues", repeated, g, ans, x)
    refuse_undefined("eig", "eigenvectors of repeated eigenvalues", repeated, c, g)
    grad = np.linalg.solve(transposed(v), np.matmul(c * inverse_gaps(w, repeated), transposed(v)))
    return _real_if_real(grad, x)


EIG_VECTORS = defop(
    "eig_vectors",
    lambda x, invariant: np.linalg.eig(lapack_ready("eig", x))[1],
    _eig_vectors_rule,
    None,
    family="linalg",
    doc="the eigenvectors (the columns, unit 2-norm) of a square matrix: np.linalg.eig's second part",
    batch=ONE_MATRIX,
)


def _square(name: str, a: Any) -> None:
    shape = np.shape(unwrap(a))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"{name}: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise MatrixShapeError(msg)


@guarded
def eig(a: Any) -> Any:
    """The eigenvalues and right eigenvectors (the columns, each of unit 2-norm) of a square
    matrix, or of each matrix of a stack, as ``np.linalg.eig``: an
    ``EigResult(eigenvalues, eigenvectors)``, so ``w, v = ng.eig(a)`` works.

    Both are differentiable, for real and complex ``a``: the eigenvalues as the holomorphic
    functions of the entries they are where they are simple (gradient
    ``V^-T diag(g) V^T``), the eigenvectors with numpy's unit norm kept (see
    :mod:`nodegrad.ops.linalg.eig` for the rules). A real ``a`` has complex eigenvalues and
    vectors in general (real ones when every eigenvalue is real, as numpy returns them),
    and gets a real gradient.

    The phase of each complex eigenvector is numpy's arbitrary choice: functions of the
    vectors that do not depend on it have a gradient (``abs(v)``, projectors ``v v^H``,
    ``V diag(f(w)) V^-1``, ``v_k^H b``... ), others raise
    :class:`~nodegrad.errors.NoGradientError`, in both modes. Repeated eigenvalues (closer than
    ``sqrt(eps) * max|w|``) have no derivative one by one, nor do their eigenvectors: a
    function that needs one raises; the sum of a cluster of them, at a matrix that is not
    defective, has its gradient. Differentiable to any order, in both modes. For a
    Hermitian matrix,
    :func:`eigh` is faster and differentiable in its eigenvectors' phases too.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = np.array([[1.0, 2.0], [-2.0, 1.0]])
    >>> w, v = ng.eig(a)
    >>> w
    array([1.+2.j, 1.-2.j])
    >>> ng.grad(lambda a: ng.imag(ng.eig(a).eigenvalues[0]))(a)
    array([[ 0. ,  0.5],
           [-0.5,  0. ]])
    >>> ng.grad(lambda a: ng.abs(ng.eig(a).eigenvectors[0, 0]) ** 2)(np.array([[2.0, 1.0], [0.5, 1.0]]))
    array([[ 0.12030541,  0.04403484],
           [-0.32868051, -0.12030541]])
    """
    _square("eig", a)
    return _EigResult(record(EIGVALS, a, True), record(EIG_VECTORS, a, False))


@guarded
def eigvals(a: Any) -> Any:
    """The eigenvalues of a square matrix, or of each matrix of a stack, as
    ``np.linalg.eigvals``: complex in general (real when every eigenvalue of a real matrix
    is). Differentiable where they are simple, as for :func:`eig`, with the gradient
    ``V^-T diag(g) V^T``; differentiable to any order.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.eigvals(np.array([[2.0, 1.0], [0.0, 3.0]]))
    array([2., 3.])
    >>> ng.grad(lambda a: ng.eigvals(a)[1])(np.array([[2.0, 1.0], [0.0, 3.0]]))
    array([[0., 0.],
           [1., 1.]])
    """
    _square("eigvals", a)
    return record(EIGVALS, a, False)


# -- roots --------------------------------------------------------------------------------------------


def _roots_rule(g: Any, ans: Any, p: Any) -> Any:
    """-(g / p'(r)) @ [r^n, ..., r, 1]"""
    if batched_in(g, ans, p):  # a grad inside vmap: written for one polynomial, so once per example
        return per_example_rule(_roots_rule, g, ans, p)
    # p(r_i) = 0 for each root: dr_i = -sum_k dp_k r_i^(n-k) / p'(r_i), for every
    # coefficient, the zero ones numpy strips included (a simple root moves with them too).
    n = np.shape(p)[-1] - 1
    if np.size(unwrap(ans)) == 0:
        return None
    roots = unwrap(ans)
    repeated = np.any(repeated_pairs(roots), axis=-1)
    if np.any(repeated) and np.any(unwrap(g)[repeated] != 0):
        msg = (
            "roots: repeated roots (closer than sqrt(eps) * max|r|) have no derivative, and the function "
            "differentiated uses one"
        )
        raise NoGradientError(msg)
    columns: list[Any] = [np.ones(np.shape(roots), np.result_type(roots))]
    for _ in range(n):
        columns.append(columns[-1] * ans)
    powers = np.stack(columns[::-1], -1)  # r^n, ..., r, 1
    slope = np.matmul(powers[..., 1:], p[..., :-1] * np.arange(n, 0, -1))
    if np.any(repeated):  # unused there (else refused above): p'(r) is 0 at a repeated root
        slope = np.where(repeated, 1, slope)
    return _real_if_real(-np.matmul(g / slope, powers), p)


ROOTS = defop(
    "roots",
    np.roots,
    _roots_rule,
    family="linalg",
    doc="the roots of a polynomial (np.roots: the eigenvalues of its companion matrix)",
    # np.roots takes one polynomial, and how many roots it gives depends on the values (zero
    # coefficients at either end): once per example, on purpose.
    batch=loop,
)


def roots(p: Any) -> Any:
    """The roots of the polynomial with coefficients ``p`` (highest power first), as
    ``np.roots``: the eigenvalues of its companion matrix, then a zero for each zero
    coefficient at the end. Complex in general, real when every root of a real ``p`` is.

    Differentiable in every coefficient where the roots are simple: implicitly, from
    ``p(r) = 0``, ``dr = -sum_k dp_k r^(n-k) / p'(r)`` (also in the leading and trailing zero
    coefficients numpy sets aside, which a simple root does depend on). Repeated roots
    have no derivative: a cotangent on one raises
    :class:`~nodegrad.errors.NoGradientError`. Differentiable to any order.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.linalg import roots
    >>> import nodegrad as ng
    >>> roots(np.array([1.0, -3.0, 2.0]))
    array([2., 1.])
    >>> ng.grad(lambda p: roots(p)[0])(np.array([1.0, -3.0, 2.0]))
    array([-4., -2., -1.])
    """
    shape = np.shape(unwrap(p))
    if len(shape) != 1:
        msg = f"roots: the coefficients must be 1-D, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    return record(ROOTS, p)
