"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``), einsum and
the products built on it (:mod:`~nodegrad.ops.linalg.products`); singular values,
symmetric eigenvalues, Cholesky factors, inverses, linear solves and determinants
(:mod:`~nodegrad.ops.linalg.decompositions`); decompositions with vectors: eigh, svd and
qr (:mod:`~nodegrad.ops.linalg.spectral`, what their vectors' rules refuse in
:mod:`~nodegrad.ops.linalg.refusals`); the general eigendecomposition and polynomial
roots (:mod:`~nodegrad.ops.linalg.eig`); the pseudo-inverse, least squares, matrix
powers, tensorsolve and tensorinv (:mod:`~nodegrad.ops.linalg.composed`). Real and
complex matrices alike."""

from nodegrad.ops.linalg.composed import lstsq, matrix_power, pinv, tensorinv, tensorsolve
from nodegrad.ops.linalg.decompositions import cholesky, det, eigvalsh, inv, slogdet, solve, svdvals
from nodegrad.ops.linalg.eig import eig, eigvals, roots
from nodegrad.ops.linalg.products import dot, einsum, matmul, outer, tensordot
from nodegrad.ops.linalg.spectral import eigh, qr, svd

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
