"""The symmetric (Hermitian) eigendecomposition: ``np.linalg.eigvalsh`` and
``np.linalg.eigh``, of a matrix or of each matrix of a stack (the last two axes), real or
complex.

numpy reads one triangle of the matrix only (``UPLO``, the lower by default), and of a
complex diagonal the real part: the ops decompose the Hermitian matrix
:func:`~nodegrad.ops.linalg.decompositions.read_triangle` builds from that triangle, so the
gradient is the derivative of what numpy evaluates (zero in the other triangle, the
off-diagonal cotangent of the Hermitian matrix folded onto the entry read). The rules
themselves give the Hermitian cotangent of that Hermitian matrix.

With ``A V = V diag(w)``, ``A`` Hermitian: ``dw = Re(diag(V^H dA V))``, whose transpose is
``conj(V) diag(g) V^T``; ``dV = V (F * (V^H dA V))`` with ``F_ij = 1 / (w_j - w_i)`` off the
diagonal, whose transpose is ``conj(V) (F * skew(V^T g)) V^T``, ``skew(c) = (c - c^H) / 2``
(for a real ``A``, ``V (F * skew(V^T g)) V^T``). Each rule is written with recorded
operations, the decomposition it needs included (the other factor's op): differentiated
again, it differentiates through them, to any order. Where the vectors are not unique
(repeated eigenvalues, the phases of complex vectors) the rules refuse what depends on
the choice: see :mod:`~nodegrad.ops.linalg.refusals`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.record import record
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import MatrixShapeError, user_location
from nodegrad.ops.linalg.axes import transposed
from nodegrad.ops.linalg.batching import ONE_MATRIX, batched_in, on_stacks
from nodegrad.ops.linalg.decompositions import check_uplo, lapack_ready, read_triangle
from nodegrad.ops.linalg.refusals import (
    inverse_gaps,
    refuse_again_at_repeated,
    refuse_phase_dependence,
    refuse_split_values,
    refuse_undefined,
    repeated_pairs,
)

__all__ = ["eigh", "eigvalsh"]

_EighResult = type(np.linalg.eigh(np.eye(1)))


def _eigenvalues(x: Any, uplo: Any) -> Any:
    """The eigenvalues of ``x`` for a rule: numpy's on a plain matrix, the op's on a traced one."""
    if type(x) in DIFFERENTIATING:
        return record(EIGVALSH, x, uplo)
    return np.linalg.eigvalsh(lapack_ready("eigh", x), UPLO=uplo)


def _eigenvectors(x: Any, uplo: Any) -> Any:
    """The eigenvectors of ``x`` for a rule: numpy's on a plain matrix, the op's on a traced
    one, recorded as used in a way that does not depend on their phases (``v_k v_k^H``)."""
    if type(x) in DIFFERENTIATING:
        return record(EIGH_VECTORS, x, uplo, True)
    return np.linalg.eigh(lapack_ready("eigvalsh", x), UPLO=uplo)[1]


def _eigvalsh_rule(g: Any, ans: Any, x: Any, uplo: Any) -> Any:
    """conj(V) diag(g) V^T: Hermitian"""
    if batched_in(g, ans, x, uplo):  # a grad inside vmap: the examples as a stack
        return on_stacks(_eigvalsh_rule, g, ans, x, uplo)
    repeated = repeated_pairs(ans)
    refuse_split_values("eigvalsh", "eigenvalues", repeated, g)
    refuse_again_at_repeated("eigvalsh", "eigenvalues", repeated, g)
    v = _eigenvectors(x, uplo)
    left = np.conjugate(v) if np.iscomplexobj(unwrap(v)) else v
    return np.matmul(left * np.expand_dims(g, -2), transposed(v))


def _eigh_vectors_rule(g: Any, ans: Any, x: Any, uplo: Any, invariant: Any) -> Any:
    """conj(V) (F * skew(V^T g)) V^T, F_ij = 1 / (w_j - w_i) off the diagonal: Hermitian"""
    # Only the anti-Hermitian part skew(c) = (c - c^H) / 2 of c = V^T g reaches a Hermitian
    # gradient (F is antisymmetric); its diagonal, Im(v_k^T g_k), is the phases' share.
    if batched_in(g, ans, x, uplo, invariant):  # a grad inside vmap: the examples as a stack
        return on_stacks(_eigh_vectors_rule, g, ans, x, uplo, invariant)
    if np.shape(ans)[-1] == 1:  # numpy's eigenvector of a 1 x 1 matrix is 1, whatever the matrix
        return np.zeros(np.shape(ans), np.result_type(unwrap(ans), unwrap(g)))
    w = _eigenvalues(x, uplo)
    c = np.matmul(transposed(ans), g)
    if np.iscomplexobj(unwrap(ans)):
        if not invariant:
            refuse_phase_dependence("eigh", "eigenvector", np.imag(np.diagonal(unwrap(c), 0, -2, -1)), g)
        skew, left = 0.5 * (c - np.conjugate(transposed(c))), np.conjugate(ans)
    else:
        skew, left = 0.5 * (c - transposed(c)), ans
    repeated = repeated_pairs(w)
    refuse_again_at_repeated("eigh", "eigenvalues", repeated, g, ans, x)
    refuse_undefined("eigh", "eigenvectors of repeated eigenvalues", repeated, skew, g)
    return np.matmul(np.matmul(left, skew * inverse_gaps(w, repeated)), transposed(ans))


EIGVALSH = defop(
    "eigvalsh",
    lambda x, uplo: np.linalg.eigvalsh(lapack_ready("eigvalsh", x), UPLO=uplo),
    _eigvalsh_rule,
    None,
    family="linalg",
    doc="eigenvalues of a symmetric matrix, ascending",
    batch=ONE_MATRIX,
)
EIGH_VECTORS = defop(
    "eigh_vectors",
    lambda x, uplo, invariant: np.linalg.eigh(lapack_ready("eigh", x), UPLO=uplo)[1],
    _eigh_vectors_rule,
    None,
    None,
    family="linalg",
    doc="the eigenvectors of a symmetric (Hermitian) matrix (the columns), eigenvalues ascending: "
    "np.linalg.eigh's second part",
    batch=ONE_MATRIX,
)


def _square(name: str, x: Any) -> None:
    shape = np.shape(unwrap(x))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        msg = f"{name}: needs a square matrix or a stack of them, got shape {shape} [called at {user_location()}]"
        raise MatrixShapeError(msg)


@guarded
@composite
def eigvalsh(x: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy's name)
    """The eigenvalues of a symmetric matrix (of each in a stack), in ascending order, as
    ``np.linalg.eigvalsh``, which reads the ``UPLO`` triangle only.

    The gradient is that of the function numpy evaluates: of the eigenvalues of the
    symmetric matrix with ``x``'s ``UPLO`` triangle, so zero in the other triangle. Along
    symmetric directions it is the symmetric ``v_i v_i^T`` of each eigenvalue ``w_i``
    (exact where ``w_i`` is simple), whose off-diagonal entries the triangle read gets
    twice. A complex ``x`` is read as Hermitian (the imaginary part of its diagonal
    ignored, as LAPACK does), ``conj(v_i v_i^H)`` in place of ``v_i v_i^T``.
    Repeated eigenvalues (closer than ``sqrt(eps) * max|w|``) have a derivative only in
    functions that treat them alike (their sum), and no second derivative: a function
    that needs one raises :class:`~nodegrad.errors.NoGradientError`. Differentiable to any
    order.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1., 3.])
    >>> ng.grad(lambda a: ng.eigvalsh(a)[1])(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([[0.5, 0. ],
           [1. , 0.5]])
    """
    _square("eigvalsh", x)
    uplo = check_uplo("eigvalsh", UPLO)
    return record(EIGVALSH, read_triangle(x, lower=uplo == "L"), uplo)


@guarded
@composite
def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy's name)
    """The eigenvalues (ascending) and eigenvectors (the columns) of a symmetric (complex:
    Hermitian) matrix, or of each matrix of a stack, as ``np.linalg.eigh``, which reads the
    ``UPLO`` triangle only: an ``EighResult(eigenvalues, eigenvectors)``, so
    ``w, v = ng.eigh(a)`` works.

    Both are differentiable, to any order. As for :func:`eigvalsh` and
    :func:`~nodegrad.ops.linalg.cholesky`, the gradient is that of the function numpy
    evaluates: zero in the triangle not read. The eigenvectors' rule is
    ``conj(V) (F * skew(V^T g)) V^T`` with ``F_ij = 1 / (w_j - w_i)`` off the diagonal and
    ``skew(c) = (c - c^H) / 2`` (for a real ``a``, ``V (F * skew(V^T g)) V^T``), the
    cotangent of the symmetric matrix read.

    The sign of each eigenvector is arbitrary (for a complex ``a``, its phase), and where
    eigenvalues repeat (closer than ``sqrt(eps) * max|w|``) so is the basis of their
    eigenvectors: the gradient of a function of the vectors that depends on that choice is
    undefined and raises :class:`~nodegrad.errors.NoGradientError`; a function that does
    not (``abs(v)``, the projector ``v v^H`` onto their subspace) gets its gradient, in both modes.

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
    array([[ 0.08838835,  0.        ],
           [ 0.1767767 , -0.08838835]])

    A function of complex eigenvectors that does not depend on their phases:

    >>> h = np.array([[2.0, 1j], [-1j, 3.0]])
    >>> ng.grad(lambda h: ng.abs(ng.eigh(h).eigenvectors[0, 0]) ** 2)(h)
    array([[-0.17888544+0.j        ,  0.        +0.j        ],
           [ 0.        -0.17888544j,  0.17888544+0.j        ]])
    """
    _square("eigh", a)
    uplo = check_uplo("eigh", UPLO)
    read = read_triangle(a, lower=uplo == "L")
    return _EighResult(record(EIGVALSH, read, uplo), record(EIGH_VECTORS, read, uplo, False))
