"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``), einsum and
the products built on it (:mod:`~nodegrad.ops.linalg.products`); inverses, linear solves,
determinants and Cholesky factors (:mod:`~nodegrad.ops.linalg.decompositions`); the
symmetric eigendecomposition, eigvalsh and eigh (:mod:`~nodegrad.ops.linalg.symmetric`);
the singular value decomposition, svdvals and svd (:mod:`~nodegrad.ops.linalg.singular`);
the QR factorisation (:mod:`~nodegrad.ops.linalg.qr`); what the rules of eigenvectors and
singular vectors refuse (:mod:`~nodegrad.ops.linalg.refusals`); the general
eigendecomposition and polynomial roots (:mod:`~nodegrad.ops.linalg.eig`); the
pseudo-inverse, least squares, matrix powers, tensorsolve and tensorinv
(:mod:`~nodegrad.ops.linalg.composed`). Real and complex matrices alike; every
decomposition differentiates to any order."""

from nodegrad.ops.linalg.composed import lstsq, matrix_power, pinv, tensorinv, tensorsolve
from nodegrad.ops.linalg.decompositions import cholesky, det, inv, slogdet, solve
from nodegrad.ops.linalg.eig import eig, eigvals, roots
from nodegrad.ops.linalg.products import dot, einsum, matmul, outer, tensordot
from nodegrad.ops.linalg.qr import qr
from nodegrad.ops.linalg.singular import svd, svdvals
from nodegrad.ops.linalg.symmetric import eigh, eigvalsh

__all__ = [
    "cholesky",
    "det",
    "dot",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "einsum",
    "inv",
    "lstsq",
    "matmul",
    "matrix_power",
    "outer",
    "pinv",
    "qr",
    "roots",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
]
