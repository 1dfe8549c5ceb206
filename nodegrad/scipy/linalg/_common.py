"""What the scipy.linalg functions share: their family name, argument checks, transposes
and triangle masks."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, has_values
from nodegrad.engine.staged import now
from nodegrad.engine.traced import unwrap
from nodegrad.errors import MatrixShapeError, NonFiniteError, ShapeError, user_location
from nodegrad.ops import conj, swapaxes

__all__ = [
    "FAMILY",
    "adjoint",
    "as_operand",
    "is_traced",
    "refuse_nonfinite",
    "square",
    "square_operand",
    "transposed",
    "triangle",
]

#: The op family of the scipy.linalg ops (``docs/ops.md`` groups the registry by it).
FAMILY = "scipy.linalg"


def as_operand(a: Any) -> Any:
    """A traced or batched value as it is; anything else (lists, scalars) as numpy reads it."""
    return a if type(a) in INTERPRETED else np.asarray(a)


def is_traced(*xs: Any) -> bool:
    """Whether any of ``xs`` is traced or batched (inside ``vmap``): a value scipy cannot
    take, so it is computed with recorded ops."""
    return any(type(x) in INTERPRETED for x in xs)


def refuse_nonfinite(name: str, *xs: Any) -> None:
    """Refuse NaN and Inf as scipy's ``check_finite=True`` does, with a nodegrad error
    (inside ``vmap``, for every example)."""
    for x in xs:
        value = all_values(x)
        if not has_values(value):  # (shapes only: eval_shape)
            continue
        if np.asarray(now(value)).dtype.kind in "fc" and not np.all(np.isfinite(value)):
            msg = f"{name}: the array must not contain infs or NaNs (check_finite=True) [called at {user_location()}]"
            raise NonFiniteError(msg)


# The functions for which scipy refuses a matrix that is not square with numpy's
# LinAlgError (the others raise a plain ValueError).
_LINALG_ERROR_WHEN_NOT_SQUARE = frozenset({"expm", "sqrtm"})


def square(name: str, x: Any, batched: bool = True) -> None:
    """Refuse anything but a square matrix (or a stack of them when ``batched``), with
    the error scipy raises there."""
    shape = np.shape(unwrap(x))
    if len(shape) < 2 or shape[-1] != shape[-2] or (not batched and len(shape) != 2):
        what = "a square matrix or a stack of them" if batched else "a square matrix"
        msg = f"{name}: needs {what}, got shape {shape} [called at {user_location()}]"
        raise (MatrixShapeError if name in _LINALG_ERROR_WHEN_NOT_SQUARE else ShapeError)(msg)


def square_operand(name: str, a: Any, check_finite: bool = True) -> Any:
    """``a`` as an operand (:func:`as_operand`), refused unless it is a square matrix or a
    stack of them, and with ``check_finite`` unless it is finite: the checks of every
    function of one square matrix."""
    a = as_operand(a)
    square(name, a)
    if check_finite:
        refuse_nonfinite(name, a)
    return a


def transposed(x: Any) -> Any:
    """The plain transpose of the last two axes."""
    return swapaxes(x, -1, -2) if type(x) in DIFFERENTIATING else np.swapaxes(x, -1, -2)


def adjoint(x: Any) -> Any:
    """The conjugate transpose of the last two axes (the transpose of a real matrix)."""
    if not np.iscomplexobj(unwrap(x)):
        return transposed(x)
    return conj(transposed(x)) if type(x) in DIFFERENTIATING else np.conj(np.swapaxes(x, -1, -2))


def triangle(n: int, lower: bool, strict: bool = False) -> np.ndarray:
    """The boolean mask of the lower (or upper) triangle of an ``n`` by ``n`` matrix, with
    or without the diagonal: multiplying by it keeps the dtype of what it masks."""
    ones = np.ones((n, n), dtype=bool)
    k = 1 if strict else 0
    return np.tril(ones, -k) if lower else np.triu(ones, k)
