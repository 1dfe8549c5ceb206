"""``scipy.linalg`` for traced values: ``import nodegrad.scipy.linalg as sla``.

Linear solves (:func:`solve`, :func:`solve_triangular`, :func:`solve_banded`,
:func:`solve_sylvester`), inverses
and determinants, the LU and Cholesky factorisations with the solves that take them, the
matrix exponential, square root and logarithm, and :func:`block_diag`, with scipy's
signatures and return conventions (``cho_factor`` returns ``(c, lower)``, ``lu_factor``
``(lu, piv)``) and scipy's values, differentiable in every array argument to any order.
Real and complex matrices alike, with nodegrad's convention for complex values.
"""

from nodegrad.scipy.linalg.banded import solve_banded
from nodegrad.scipy.linalg.basic import block_diag, det, inv, solve
from nodegrad.scipy.linalg.matrix_functions import expm, logm, sqrtm
from nodegrad.scipy.linalg.solvers import (
    cho_factor,
    cho_solve,
    cholesky,
    lu_factor,
    lu_solve,
    solve_sylvester,
    solve_triangular,
)

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "expm",
    "inv",
    "logm",
    "lu_factor",
    "lu_solve",
    "solve",
    "solve_banded",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
]
