"""Sparse matrices: scipy.sparse CSR, CSC and COO matrices as differentiable values.

The stored values are what a transform follows; the pattern (class, format, shape, index
arrays) is static. Inside a transform a sparse argument is a :class:`SparseMatrix`, which
speaks scipy's API; its gradient is a scipy matrix of the argument's class and pattern.

The rooms: :mod:`.pattern` (the static half), :mod:`.products` (``X @ b``, ``X.T @ b`` and
the sampled product, closed under differentiation), :mod:`.structure` (ops that move
stored values: a linear map from old values to new), :mod:`.selection` (rows and columns
selected), :mod:`.matrix` (the SparseMatrix), :mod:`.solve` (``spsolve`` by its adjoint
solve) and :mod:`.values` (scipy's matrices taken apart and rebuilt by transforms, and met
by traced values).
"""

from nodegrad.ops.sparse.matrix import DENSE_LIMIT, SparseMatrix, is_sparse, sparse_of
from nodegrad.ops.sparse.pattern import Pattern, pattern_of
from nodegrad.ops.sparse.values import sparse_matrix_of  # (registers scipy's classes)

__all__ = ["DENSE_LIMIT", "Pattern", "SparseMatrix", "is_sparse", "pattern_of", "sparse_matrix_of", "sparse_of"]
