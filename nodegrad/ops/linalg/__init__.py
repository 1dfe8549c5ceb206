"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``), einsum and
the products built on it (:mod:`~nodegrad.ops.linalg.products`); singular values,
symmetric eigenvalues, Cholesky factors, inverses, linear solves and determinants
(:mod:`~nodegrad.ops.linalg.decompositions`); decompositions with vectors: eigh, svd and
qr (:mod:`~nodegrad.ops.linalg.spectral`); the pseudo-inverse, least squares, matrix
powers, tensorsolve and tensorinv (:mod:`~nodegrad.ops.linalg.composed`)."""

from nodegrad.ops.linalg.composed import lstsq, matrix_power, pinv, tensorinv, tensorsolve
from nodegrad.ops.linalg.decompositions import cholesky, det, eigvalsh, inv, slogdet, solve, svdvals
from nodegrad.ops.linalg.products import dot, einsum, matmul, outer, tensordot
from nodegrad.ops.linalg.spectral import eigh, qr, svd

__all__ = [
    "cholesky",
    "det",
    "dot",
    "eigh",
    "eigvalsh",
    "einsum",
    "inv",
    "lstsq",
    "matmul",
    "matrix_power",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
]
