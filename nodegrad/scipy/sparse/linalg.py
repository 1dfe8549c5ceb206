"""``scipy.sparse.linalg`` for traced values: :func:`spsolve`.

Differentiated by the adjoint solve: the cotangent of ``b`` is ``A^-T g`` and that of
``A``'s stored values ``-lam[r] * x[c]`` on its pattern; the LU factorization of the
forward solve is kept for the adjoint one, so a gradient costs little beyond the solve.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as _sparse
import scipy.sparse.linalg as _linalg

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import INTERPRETED
from nodegrad.errors import DtypeError, ShapeError, user_location
from nodegrad.ops.sparse import SparseMatrix, is_sparse, sparse_of
from nodegrad.ops.sparse.solve import solve

__all__ = ["spsolve"]


@guarded
def spsolve(A: Any, b: Any, permc_spec: str | None = None, use_umfpack: bool = True) -> Any:  # noqa: N803  (scipy's name)
    """Solve ``A x = b`` for a sparse square ``A``, as scipy's ``spsolve``, differentiable
    in ``b`` and in ``A``'s stored values.

    ``b`` is a dense vector or matrix (a sparse ``b`` is refused where anything is
    traced). Without traced values this is scipy's own ``spsolve``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import nodegrad as ng
    >>> from nodegrad.scipy.sparse.linalg import spsolve
    >>> A = scipy.sparse.csc_array(np.array([[2.0, 0.0], [1.0, 4.0]]))
    >>> ng.grad(lambda b: spsolve(A, b).sum())(np.array([1.0, 1.0]))
    array([0.375, 0.25 ])
    """
    traced = isinstance(A, SparseMatrix) or type(b) in INTERPRETED
    if not traced:
        return _linalg.spsolve(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)
    if not is_sparse(A):
        msg = f"spsolve: A must be a sparse matrix, got {type(A).__name__} [called at {user_location()}]"
        raise DtypeError(msg)
    if _sparse.issparse(b) or isinstance(b, SparseMatrix):
        msg = f"spsolve: a sparse right-hand side is not differentiated; pass b.toarray() [called at {user_location()}]"
        raise DtypeError(msg)
    matrix = sparse_of(A)
    n, m = matrix.shape
    if n != m:
        msg = f"spsolve: A must be square, got shape {matrix.shape} [called at {user_location()}]"
        raise ShapeError(msg)
    b = b if type(b) in INTERPRETED else np.asarray(b)
    if np.ndim(b) not in (1, 2) or np.shape(b)[0] != n:
        msg = f"spsolve: b of shape {np.shape(b)} does not fit A of shape {matrix.shape} [called at {user_location()}]"
        raise ShapeError(msg)
    return solve(matrix.data, b, matrix.pattern)
