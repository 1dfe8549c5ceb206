"""Drivers: whole optimisations from a gradient function ``grad(params, iteration)``.

:func:`sgd_loop`, :func:`rmsprop_loop` and :func:`adam_loop` have the signatures, defaults
and update formulas of ``autograd.misc.optimizers.sgd``, ``rmsprop`` and ``adam``: ``from
autograd.misc.optimizers import adam`` ports as ``from nodegrad.optim import adam_loop as
adam``. Each float leaf keeps its own shape and dtype (float32 stays float32); static
leaves are carried over as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.structure import (
    differentiable_leaves,
    flatten,
    is_container,
    is_differentiable_leaf,
    pair_leaves,
    zip_leaves,
)
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, StructureError
from nodegrad.optim.steps import _decay, _descent, _positive, _real, _squared
from nodegrad.tree import map_floats

__all__ = ["adam_loop", "rmsprop_loop", "sgd_loop"]

# -- drivers: whole optimisations, as autograd.misc.optimizers runs them ----------------------


def _step_size(driver: str, name: str, value: Any) -> float:
    number = _real(driver, name, value)
    if number < 0.0:
        msg = f"{driver}: {name} must not be negative, got {number}"
        raise ArgumentError(msg)
    return number


def _check_driver_arguments(driver: str, grad: Any, callback: Any, num_iters: Any, step_size: Any) -> None:
    if not callable(grad):
        msg = f"{driver}: grad must be a function grad(params, iteration), got {type(grad).__name__}"
        raise ArgumentError(msg)
    if callback is not None and not callable(callback):
        msg = f"{driver}: callback must be None or a function callback(params, iteration, gradient), got "
        raise ArgumentError(msg + type(callback).__name__)
    if isinstance(num_iters, bool) or not isinstance(num_iters, int | np.integer):
        msg = f"{driver}: num_iters must be an int, got {type(num_iters).__name__}"
        raise ArgumentError(msg)
    if num_iters < 0:
        msg = f"{driver}: num_iters must not be negative, got {num_iters}"
        raise ArgumentError(msg)
    if not callable(step_size):
        _step_size(driver, "step_size", step_size)


def _restore(value: np.ndarray, like: Any) -> Any:
    # Arrays stay arrays (0-d ones too); Python and numpy float scalars come back as their type.
    return value if isinstance(like, np.ndarray) or type(like) is not like.__class__ else type(like)(value)


class _Leaves:
    """The float leaves of ``x0`` as working arrays (copies, each in its own dtype), and
    ``x0``'s structure rebuilt around their current values."""

    def __init__(self, driver: str, x0: Any) -> None:
        found = list(differentiable_leaves(x0))
        if not found:
            msg = (
                f"{driver}: x0 has no float leaves to optimise (ints, integer arrays and fields marked static "
                "are static); pass float values, e.g. np.asarray(x0, float)"
            )
            raise ArgumentError(msg)
        for path, leaf in found:
            if type(leaf) in DIFFERENTIATING:
                msg = f"{driver}: x0{path} is a traced value; the optimisers run on plain values"
                raise ArgumentError(msg)
        self.tree = x0
        self.originals = [leaf for _, leaf in found]
        self.values: list[np.ndarray] = [np.array(leaf) for leaf in self.originals]

    def rebuild(self) -> Any:
        restored = iter([_restore(v, like) for v, like in zip(self.values, self.originals, strict=True)])
        return map_floats(lambda _: next(restored), self.tree)  # in differentiable_leaves' order


def _paired(value: Any, other: Any, path: str) -> list[tuple[str, Any]]:
    """``(key_path, other_leaf)`` for each float leaf of ``value`` (a structure already
    checked against ``other``) outside fields marked static; ``None`` where ``other`` has
    nothing for it."""
    static = flatten(value)[1].static_leaves()
    pairs = pair_leaves(value, other, path=path)
    return [(p, o) for (p, leaf, o), s in zip(pairs, static, strict=True) if not s and is_differentiable_leaf(leaf)]


def _gradients(driver: str, x: Any, g: Any, values: list[np.ndarray], iteration: int) -> list[np.ndarray]:
    """The gradient's leaves, one per float leaf of ``x``, each checked against its
    parameter (same shape, a real dtype) and in the parameter's dtype; ``None`` is zero."""
    for _ in zip_leaves(x, g):  # a StructureError naming the key path where they differ
        pass
    out = []
    for (path, leaf), like in zip(_paired(x, g, ""), values, strict=True):
        where = f"{driver}: the gradient at {path or 'the top level'} (iteration {iteration})"
        if leaf is None:
            out.append(np.zeros_like(like))
            continue
        if is_container(leaf):
            msg = f"{where} is a {type(leaf).__name__}, the parameter an array of shape {like.shape}"
            raise StructureError(msg)
        array = np.asarray(leaf)
        if array.dtype.kind == "c" and like.dtype.kind == "c":
            out.append(_descent(array).astype(like.dtype, copy=False))  # steepest ascent, as for reals
            continue
        if array.dtype.kind not in "fiu":
            msg = f"{where} has dtype {array.dtype}, the parameter {like.dtype}"
            raise DtypeError(msg)
        if array.shape != like.shape:
            msg = f"{where} has shape {array.shape}, the parameter {like.shape}; gradients are not broadcast"
            raise ShapeError(msg)
        out.append(array.astype(like.dtype, copy=False))
    return out


def _run(
    driver: str,
    grad: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable[[Any, int, Any], Any] | None,
    num_iters: int,
    step_size: float | Callable[[int], float],
    init: Callable[[np.ndarray], Any],
    update: Callable[[np.ndarray, np.ndarray, Any, float, int], tuple[Any, Any]],
) -> Any:
    leaves = _Leaves(driver, x0)
    states = [init(v) for v in leaves.values]
    x = leaves.rebuild()
    for i in range(int(num_iters)):
        g = grad(x, i)
        grads = _gradients(driver, x, g, leaves.values, i)
        if callback is not None:
            callback(x, i, g)
        rate = _step_size(driver, f"step_size({i})", step_size(i)) if callable(step_size) else float(step_size)
        for k, (value, gk) in enumerate(zip(leaves.values, grads, strict=True)):
            new, states[k] = update(value, gk, states[k], rate, i)
            leaves.values[k] = np.asarray(new, value.dtype)
        x = leaves.rebuild()
    return x


@reports_unwalkable("optim.sgd_loop")
def sgd_loop(
    grad: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable[[Any, int, Any], Any] | None = None,
    num_iters: int = 200,
    step_size: float | Callable[[int], float] = 0.1,
    mass: float = 0.9,
) -> Any:
    """Run gradient descent with momentum: ``autograd.misc.optimizers.sgd``.

    Each iteration, leafwise: ``velocity = mass * velocity - (1 - mass) * g`` (from zero),
    then ``x = x + step_size * velocity``.

    Parameters
    ----------
    grad : callable
        ``grad(params, iteration)`` returns the gradient at ``params``: a structure like
        ``params`` (``None`` in a slot counts as zero; static slots are ignored).
    x0 : structure
        The starting parameters: a float, a float array, or a record / dict / list / tuple
        of them (nested); static leaves are carried over unchanged.
    callback : callable, optional
        ``callback(params, iteration, gradient)``, called each iteration after ``grad``
        and before the update.
    num_iters : int, default 200
        The number of iterations (0 returns a copy of ``x0``).
    step_size : float or callable, default 0.1
        A non-negative step, or ``step_size(iteration)`` giving one (a schedule).
    mass : float, default 0.9
        The momentum, in ``[0, 1)``; 0 is plain gradient descent.

    Returns
    -------
    structure
        The parameters after ``num_iters`` updates, of ``x0``'s structure, each float leaf
        in its own shape and dtype.

    Raises
    ------
    ArgumentError
        For an argument outside its domain, naming it (checked before the first call).
    ShapeError, StructureError, DtypeError
        When a gradient does not fit its parameter, naming the key path.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> g = ng.grad(lambda p: ng.sum((p["w"] - 3.0) ** 2.0))
    >>> p = ng.optim.sgd_loop(lambda p, i: g(p), {"w": np.zeros(2), "name": "w"}, num_iters=300)
    >>> np.round(p["w"], 6), p["name"]
    (array([3., 3.]), 'w')
    """
    name = "sgd_loop"
    _check_driver_arguments(name, grad, callback, num_iters, step_size)
    momentum = _decay(name, "mass", mass)

    def update(x: np.ndarray, g: np.ndarray, velocity: Any, rate: float, i: int) -> tuple[Any, Any]:
        velocity = momentum * velocity - (1.0 - momentum) * g
        return x + rate * velocity, velocity

    return _run(name, grad, x0, callback, num_iters, step_size, np.zeros_like, update)


@reports_unwalkable("optim.rmsprop_loop")
def rmsprop_loop(
    grad: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable[[Any, int, Any], Any] | None = None,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.1,
    gamma: float = 0.9,
    eps: float = 1e-8,
) -> Any:
    """Run RMSprop: ``autograd.misc.optimizers.rmsprop``.

    Each iteration, leafwise: ``avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)``
    (starting from ones, as autograd does), then
    ``x = x - step_size * g / (sqrt(avg_sq_grad) + eps)``.

    Parameters
    ----------
    grad, x0, callback, num_iters, step_size
        As in :func:`sgd_loop` (``num_iters`` defaults to 100).
    gamma : float, default 0.9
        The decay of the squared-gradient average, in ``[0, 1)``.
    eps : float, default 1e-8
        Added to the denominator: finite and positive.

    Returns
    -------
    structure
        The parameters after ``num_iters`` updates, of ``x0``'s structure.

    Raises
    ------
    ArgumentError, ShapeError, StructureError, DtypeError
        As in :func:`sgd_loop`.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> g = ng.grad(lambda p: ng.sum((p["w"] - 3.0) ** 2.0))
    >>> schedule = lambda i: 0.1 / (1 + i)
    >>> p = ng.optim.rmsprop_loop(lambda p, i: g(p), {"w": np.zeros(2, np.float32)}, step_size=schedule)
    >>> p["w"].dtype, bool(np.all(p["w"] > 0.5))
    (dtype('float32'), True)
    """
    name = "rmsprop_loop"
    _check_driver_arguments(name, grad, callback, num_iters, step_size)
    decay = _decay(name, "gamma", gamma)
    floor = _positive(name, "eps", eps)

    def update(x: np.ndarray, g: np.ndarray, avg_sq_grad: Any, rate: float, i: int) -> tuple[Any, Any]:
        avg_sq_grad = avg_sq_grad * decay + _squared(g) * (1 - decay)
        return x - rate * g / (np.sqrt(avg_sq_grad) + floor), avg_sq_grad

    return _run(name, grad, x0, callback, num_iters, step_size, np.ones_like, update)


@reports_unwalkable("optim.adam_loop")
def adam_loop(
    grad: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable[[Any, int, Any], Any] | None = None,
    num_iters: int = 100,
    step_size: float | Callable[[int], float] = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> Any:
    """Run Adam: ``autograd.misc.optimizers.adam``.

    Each iteration ``i`` (from 0), leafwise: ``m = (1 - b1) * g + b1 * m`` and
    ``v = (1 - b2) * g**2 + b2 * v`` (both from zero), bias-corrected as
    ``mhat = m / (1 - b1**(i + 1))`` and ``vhat = v / (1 - b2**(i + 1))``, then
    ``x = x - step_size * mhat / (sqrt(vhat) + eps)``. The one-step
    :func:`adam` takes the same step when driven by hand.

    Parameters
    ----------
    grad, x0, callback, num_iters, step_size
        As in :func:`sgd_loop` (``num_iters`` defaults to 100, ``step_size`` to 0.001).
    b1, b2 : float, default 0.9 and 0.999
        The decay rates of the first and second moment estimates, each in ``[0, 1)``.
    eps : float, default 1e-8
        Added to the denominator: finite and positive.

    Returns
    -------
    structure
        The parameters after ``num_iters`` updates, of ``x0``'s structure.

    Raises
    ------
    ArgumentError, ShapeError, StructureError, DtypeError
        As in :func:`sgd_loop`.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> g = ng.grad(lambda p: ng.sum((p["w"] - 3.0) ** 2.0) + (p["b"] + 1.0) ** 2.0)
    >>> seen = []
    >>> log = lambda p, i, grads: seen.append(i)
    >>> p = ng.optim.adam_loop(lambda p, i: g(p), {"w": np.zeros(2), "b": 0.0}, log, 500, 0.1)
    >>> np.round(p["w"], 3), round(p["b"], 3), len(seen)
    (array([3., 3.]), -1.0, 500)
    """
    name = "adam_loop"
    _check_driver_arguments(name, grad, callback, num_iters, step_size)
    beta1 = _decay(name, "b1", b1)
    beta2 = _decay(name, "b2", b2)
    floor = _positive(name, "eps", eps)

    def update(x: np.ndarray, g: np.ndarray, moments: Any, rate: float, i: int) -> tuple[Any, Any]:
        m, v = moments
        m = (1 - beta1) * g + beta1 * m  # first moment estimate
        v = (1 - beta2) * _squared(g) + beta2 * v  # second moment estimate
        mhat = m / (1 - beta1 ** (i + 1))  # bias correction
        vhat = v / (1 - beta2 ** (i + 1))
        return x - rate * mhat / (np.sqrt(vhat) + floor), (m, v)

    return _run(name, grad, x0, callback, num_iters, step_size, lambda x: (np.zeros_like(x), np.zeros_like(x)), update)
