"""``eval_shape``, the transform: a function's arguments as values with a shape and a dtype
only, the function run on them (each op answered by the interpreter of
:mod:`nodegrad.transforms.shapes`), its result's arrays described by their shapes and dtypes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.record import interpreting
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.transforms.common import check_callable, name_of
from nodegrad.transforms.shapes import Shaped, ShapeDtype, ShapeLevel

__all__ = ["eval_shape"]


def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of what ``fun(*args, **kwargs)`` returns, computed without its
    values: every array of the result is a :class:`ShapeDtype`, in the result's structure.

    The arguments are structured values as every transform takes them; each array in them
    (or a :class:`ShapeDtype` standing for one, so that nothing needs allocating) becomes a
    value with a shape and dtype only. Python numbers, strings and ``None`` pass as they
    are (a Python float keeps numpy's promotion: it takes the dtype of the array it meets).
    ``grad``, ``vmap``, ``jacobian`` and the other transforms work inside
    ``fun``; what only values answer (an ``if`` on an entry, ``float(x)``, a boolean mask's
    selection) raises :class:`~nodegrad.errors.ShapeOnlyError`. The cost is the number of
    ops ``fun`` runs, whatever the sizes of the arrays.

    Parameters
    ----------
    fun : callable
        The function.
    *args, **kwargs
        Its arguments: arrays, numbers, :class:`ShapeDtype` values, structures of them.

    Returns
    -------
    object
        ``fun``'s result with each array and numpy scalar replaced by its :class:`ShapeDtype`
        (a Python number, such as a size read from a shape, stays as it is).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> def loss(w, x):
    ...     return np.sum(np.tanh(x @ w) ** 2)
    >>> w, x = ng.ShapeDtype((512, 10), np.float32), ng.ShapeDtype((100_000, 512), np.float32)
    >>> ng.eval_shape(ng.grad(loss), w, x)
    ShapeDtype(shape=(512, 10), dtype=float32)
    >>> ng.eval_shape(ng.vmap(ng.grad(loss), in_axes=(None, 0)), w, ng.ShapeDtype((8, 64, 512), np.float32))
    ShapeDtype(shape=(8, 512, 10), dtype=float32)
    """
    check_callable(fun, "eval_shape")
    level = ShapeLevel(name_of("eval_shape", fun))
    interpreting(True)
    try:
        shaped_args, shaped_kwargs = _shaped((args, kwargs), level)
        return _described(fun(*shaped_args, **shaped_kwargs), level)
    finally:
        level.active = False
        interpreting(False)


def _shaped(value: Any, level: ShapeLevel) -> Any:
    return _each_leaf(value, lambda leaf: _shaped_leaf(leaf, level))


def _shaped_leaf(leaf: Any, level: ShapeLevel) -> Any:
    if type(leaf) is ShapeDtype:
        return Shaped(leaf.shape, leaf.dtype, level)
    if isinstance(leaf, np.ndarray | np.generic):
        return Shaped(np.shape(leaf), np.result_type(leaf), level)
    return leaf


def _described(out: Any, level: ShapeLevel) -> Any:
    return _each_leaf(out, _described_leaf)


def _each_leaf(value: Any, fn: Callable[[Any], Any]) -> Any:
    leaves, treedef = flatten(value)
    made = [fn(leaf) for leaf in leaves]
    return made[0] if treedef is LEAF else treedef.unflatten(made)


def _described_leaf(leaf: Any) -> Any:
    if type(leaf) is Shaped:
        return ShapeDtype(leaf.shape, leaf.dtype)
    if isinstance(leaf, np.ndarray | np.generic):
        return ShapeDtype(np.shape(leaf), np.result_type(leaf))
    return leaf  # a Python number (a size, say) is known: it stays as it is
