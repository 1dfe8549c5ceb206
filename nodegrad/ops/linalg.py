"""Linear algebra: matrix products (1-D, 2-D and batched, as ``np.matmul``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.arena import Traced, record2
from nodegrad.ops.registry import defop

__all__ = ["matmul"]


def _matmul_rule_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if y.ndim == 1:
        # out[..., i] = sum_k x[..., i, k] y[k]  (or a dot product when x is 1-D too)
        return g * y if x.ndim == 1 else g[..., None] * y
    if x.ndim == 1:
        return np.matmul(g[..., None, :], np.swapaxes(y, -1, -2))[..., 0, :]
    return np.matmul(g, np.swapaxes(y, -1, -2))


def _matmul_rule_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if x.ndim == 1:
        return g * x if y.ndim == 1 else x[:, None] * g[..., None, :]
    if y.ndim == 1:
        return np.matmul(np.swapaxes(x, -1, -2), g[..., None])[..., 0]
    if y.ndim == 2 and x.ndim > 2:
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
    # Constants become arrays once here, so the rules can read .ndim directly.
    return record2(MATMUL, x if type(x) is Traced else np.asarray(x), y if type(y) is Traced else np.asarray(y))
