"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.arena import record2, unwrap
from nodegrad.errors import ShapeError, user_location
from nodegrad.ops.registry import defop

__all__ = ["matmul"]


def _matmul_rule_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if np.ndim(y) == 1:
        # out[..., i] = sum_k x[..., i, k] y[k]  (or a dot product when x is 1-D too)
        return g * y if np.ndim(x) == 1 else np.expand_dims(g, -1) * y
    if np.ndim(x) == 1:
        return np.matmul(np.expand_dims(g, -2), np.swapaxes(y, -1, -2))[..., 0, :]
    return np.matmul(g, np.swapaxes(y, -1, -2))


def _matmul_rule_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if np.ndim(x) == 1:
        return g * x if np.ndim(y) == 1 else np.expand_dims(x, -1) * np.expand_dims(g, -2)
    if np.ndim(y) == 1:
        return np.matmul(np.swapaxes(x, -1, -2), np.expand_dims(g, -1))[..., 0]
    if np.ndim(y) == 2 and np.ndim(x) > 2:
        # A batch of x against one matrix: fold the batch into rows instead of building a
        # per-batch product that the unbroadcast would only sum away.
        k, m = np.shape(x)[-1], np.shape(g)[-1]
        return np.matmul(np.reshape(x, (-1, k)).T, np.reshape(g, (-1, m)))
    return np.matmul(np.swapaxes(x, -1, -2), g)


MATMUL = defop(
    "matmul",
    np.matmul,
    _matmul_rule_x,
    _matmul_rule_y,
    family="linalg",
    broadcasts=True,
    doc="matrix product with numpy's 1-D and batch rules",
)


def matmul(x: Any, y: Any) -> Any:
    """Matrix product of ``x`` and ``y`` (``x @ y``), with ``np.matmul``'s rules.

    1-D operands are promoted to a row (left) or a column (right) and the added axis is
    removed again; leading batch axes broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> w = np.ones((2, 3))
    >>> ng.grad(lambda w: ng.sum(ng.matmul(w, np.array([1.0, 2.0, 3.0]))))(w)
    array([[1., 2., 3.],
           [1., 2., 3.]])
    """
    if np.ndim(unwrap(x)) == 0 or np.ndim(unwrap(y)) == 0:
        msg = (
            f"matmul: operands must have at least 1 dimension, got shapes {np.shape(unwrap(x))} and "
            f"{np.shape(unwrap(y))}; use multiply for scalars [called at {user_location()}]"
        )
        raise ShapeError(msg)
    return record2(MATMUL, x, y)
