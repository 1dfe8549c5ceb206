"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``), einsum and
the products built on it (:mod:`~nodegrad.ops.linalg.products`); singular values,
symmetric eigenvalues, Cholesky factors, inverses, linear solves and determinants
(:mod:`~nodegrad.ops.linalg.decompositions`)."""

from nodegrad.ops.linalg.decompositions import cholesky, det, eigvalsh, inv, slogdet, solve, svdvals
from nodegrad.ops.linalg.products import dot, einsum, matmul, outer, tensordot

__all__ = [
    "cholesky",
    "det",
    "dot",
    "eigvalsh",
    "einsum",
    "inv",
    "matmul",
    "outer",
    "slogdet",
    "solve",
    "svdvals",
    "tensordot",
]
