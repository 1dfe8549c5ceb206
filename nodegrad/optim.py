"""Optimisers over structured parameters.

Steps -- :func:`sgd` and :func:`adam` -- are functions from (parameters, gradients) to new
parameters of the same structure; ``None`` gradient slots (static fields) leave their
parameter untouched. A :class:`~nodegrad.RowSparse` gradient (``grad(...,
sparse_rows=True)``) makes the step lazy, as PyTorch's ``SparseAdam`` and sparse SGD are:
only its rows move, written into the parameter array in place (and Adam's moments into the
state's arrays), since copying a million-row table would cost more than the step (a copy of
tied weights, memory two parameters share, so each gets the dense step's result).

Drivers -- :func:`sgd_loop`, :func:`rmsprop_loop` and :func:`adam_loop` -- run a whole
optimisation from a gradient function ``grad(params, iteration)``, with the signatures,
defaults and update formulas of ``autograd.misc.optimizers.sgd``, ``rmsprop`` and
``adam``: ``from autograd.misc.optimizers import adam`` ports as
``from nodegrad.optim import adam_loop as adam``. Each float leaf keeps its own shape and
dtype (float32 stays float32); static leaves are carried over as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.rows import RowSparse, overlapping
from nodegrad.engine.structure import (
    differentiable_leaves,
    flatten,
    integer_leaves,
    is_container,
    is_differentiable_leaf,
    pair_leaves,
    zip_leaves,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, StructureError
from nodegrad.tree import map_floats, tree_map, zeros_like

__all__ = ["AdamState", "adam", "adam_loop", "rmsprop_loop", "sgd", "sgd_loop"]


def _keep_type(new: Any, old: Any) -> Any:
    return type(old)(new) if isinstance(old, float) and type(old) is old.__class__ else new  # not replay's stand-in


def _refuse_immovable(where: str, params: Any) -> None:
    """Refuse a parameter tree with int leaves (outside fields marked static): a step
    cannot move them, and beside float leaves an int is almost always a parameter written
    ``0`` for ``0.0``, which would stay 0 forever without a word. (The drivers keep
    autograd's contract instead: they optimise the float leaves and carry the rest.)"""
    found = [f"{path} (the int {leaf!r})" for path, leaf in integer_leaves(params)]
    if found:
        msg = (
            f"{where}: cannot move the parameters at {', '.join(found)}: ints are static leaves, with no gradient. "
            "Write 0.0 for a parameter; for a constant, mark a record's field ng.field(static=True) or keep the "
            "value out of the parameters"
        )
        raise ArgumentError(msg)


def _update(where: str, params: Any, grads: Any, step: Any) -> Any:
    # Parameters whose gradient slot is None (static fields) are carried over as they are;
    # an update never broadcasts a parameter to another shape, nor widens its dtype.
    _refuse_immovable(where, params)
    arrays, lazy = [], False
    for path, p, g in zip_leaves(params, grads):
        if g is not None and is_differentiable_leaf(p) and np.shape(g) != np.shape(p):
            msg = (
                f"{where}: the gradient at {path or 'the top level'} has shape {np.shape(g)}, the parameter "
                f"{np.shape(p)}; gradients are not broadcast"
            )
            raise ShapeError(msg)
        lazy = lazy or type(g) is RowSparse
        if type(p) is np.ndarray:
            arrays.append(p)
    # A lazy step writes into its parameter: where another one holds that memory too (tied
    # weights), into a copy, so that each gets its own step, as the dense step gives it.
    shared = overlapping(arrays) if lazy else set()

    def moved(p: Any, g: Any) -> Any:
        if g is None:
            return p
        if type(g) is RowSparse and id(p) in shared:
            p = p.copy()
        return _keep_type(_like(step(p, g), p), p)

    return map_floats(moved, params, grads)


def _like(new: Any, old: Any) -> Any:
    """``new`` in ``old``'s array dtype (a float32 parameter stays float32)."""
    return new.astype(old.dtype, copy=False) if isinstance(old, np.ndarray) and new.dtype != old.dtype else new


def _descent(g: Any) -> Any:
    """The direction of steepest ascent for a gradient ``g``: ``g`` itself for real values,
    ``conj(g)`` for complex ones (a gradient of a complex value is JAX's, the conjugate of
    the direction ``d/dRe + i d/dIm``)."""
    return np.conjugate(g) if np.iscomplexobj(g) else g


def _squared(g: Any) -> Any:
    """``|g|**2``, real for complex ``g`` (the second moment of Adam and RMSProp)."""
    return np.real(g * np.conjugate(g)) if np.iscomplexobj(g) else g * g


def _check_rate(where: str, lr: Any) -> None:
    # A real number (a traced one too: a step can be differentiated in its rate), not a
    # string or None, which would fail deep inside numpy.
    value = unwrap(lr)
    if isinstance(value, bool | np.bool_) or np.ndim(value) != 0 or np.asarray(value).dtype.kind not in "iuf":
        msg = f"{where}: the learning rate lr must be a real number, got {type(lr).__name__} {lr!r}"
        raise ArgumentError(msg)
    if not (np.isfinite(value) and value > 0):
        msg = f"{where}: the learning rate must be a finite positive number, got {lr}"
        raise ArgumentError(msg)


@reports_unwalkable("optim.sgd")
def sgd(params: Any, grads: Any, lr: float) -> Any:
    """One step of gradient descent: ``params - lr * grads``, leafwise.

    A complex parameter steps along ``conj(grads)``, its direction of steepest descent
    (nodegrad's gradients of complex values are JAX's; see the complex-numbers page).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.optim.sgd({"w": 1.0, "tag": "a"}, {"w": 0.5, "tag": None}, lr=0.1)
    {'w': 0.95, 'tag': 'a'}
    """
    _check_rate("sgd", lr)

    def step(p: Any, g: Any) -> Any:
        if type(g) is RowSparse:
            return _rows_moved(p, g.indices, lr * _descent(g.values))
        return p - lr * _descent(g)

    return _update("sgd", params, grads, step)


def _rows_moved(p: Any, rows: Any, step: Any) -> Any:
    """``p`` with ``step`` subtracted from its ``rows``, in place when ``p`` is a writeable
    array (a lazy step: the other rows are not even read)."""
    target = p if isinstance(p, np.ndarray) and p.flags.writeable else np.array(p)
    moved = np.take(target, rows, axis=0)  # (np.take: twice as fast as target[rows] here)
    np.subtract(moved, step, out=moved, casting="same_kind")
    target[rows] = moved
    return target


def _rows_updated(moment: Any, rows: Any, update: Callable[[Any], Any]) -> Any:
    """A moment array with ``update`` applied to its ``rows`` only, in place."""
    moment = moment.todense() if type(moment) is RowSparse else moment
    moment[rows] = update(np.take(moment, rows, axis=0))
    return moment


@attrs.frozen
class AdamState:
    """Adam's running moments (shaped like the gradients) and its step count."""

    step: int
    mu: Any
    nu: Any


@reports_unwalkable("optim.adam")
def adam(
    params: Any,
    grads: Any,
    state: AdamState | None = None,
    *,
    lr: float = 1e-3,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> tuple[Any, AdamState]:
    """One Adam step (Kingma & Ba, with bias correction).

    For a complex parameter the first moment averages ``conj(grads)`` and the second
    ``|grads|**2``, so the step descends (as :func:`sgd` explains).

    Parameters
    ----------
    params, grads : structure
        Parameters and their gradients, of one structure.
    state : AdamState, optional
        The state returned by the previous step; ``None`` starts from zero moments.
    lr, b1, b2, eps : float
        Step size, moment decay rates and the denominator's floor.

    Notes
    -----
    For a :class:`~nodegrad.RowSparse` gradient the step is PyTorch's ``SparseAdam``: the
    moments are dense arrays of the parameter's shape, and only the gradient's rows of
    them, and of the parameter, are updated, in place. Where every row with a nonzero
    moment is among the gradient's rows (the first step, say) this is the dense step.

    Returns
    -------
    (new_params, new_state)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> params, state = {"w": np.array([1.0])}, None
    >>> params, state = ng.optim.adam(params, {"w": np.array([0.5])}, state, lr=0.1)
    >>> params["w"], state.step
    (array([0.9]), 1)
    """
    _check_rate("adam", lr)
    b1, b2 = _decay("adam", "b1", b1), _decay("adam", "b2", b2)
    eps = _positive("adam", "eps", eps)
    if state is None:
        state = AdamState(0, _moments_like(grads), _moments_like(grads))
    step = state.step + 1

    def first(m: Any, g: Any) -> Any:
        if type(g) is RowSparse:
            return _rows_updated(m, g.indices, lambda rows: b1 * rows + (1 - b1) * _descent(g.values))
        return b1 * m + (1 - b1) * _descent(g)

    def second(v: Any, g: Any) -> Any:
        if type(g) is RowSparse:
            return _rows_updated(v, g.indices, lambda rows: b2 * rows + (1 - b2) * _squared(g.values))
        return b2 * v + (1 - b2) * _squared(g)

    mu, nu = tree_map(first, state.mu, grads), tree_map(second, state.nu, grads)
    mu_hat_scale = 1 / (1 - b1**step)
    nu_hat_scale = 1 / (1 - b2**step)

    def moved(m: Any, v: Any, g: Any) -> Any:
        if type(g) is RowSparse:
            rows = g.indices
            return RowSparse(rows, lr * (m[rows] * mu_hat_scale) / (np.sqrt(v[rows] * nu_hat_scale) + eps), m.shape)
        return lr * (m * mu_hat_scale) / (np.sqrt(v * nu_hat_scale) + eps)

    steps = tree_map(moved, mu, nu, grads)
    return _update("adam", params, steps, _adam_step), AdamState(step, mu, nu)


def _adam_step(p: Any, s: Any) -> Any:
    return _rows_moved(p, s.indices, s.values) if type(s) is RowSparse else p - s


def _moments_like(grads: Any) -> Any:
    """Zero moments for Adam: dense arrays, also for a RowSparse gradient (whose rows are
    then updated in place at each step)."""
    return map_floats(lambda g: np.zeros(g.shape, g.dtype) if type(g) is RowSparse else g, zeros_like(grads))


# -- drivers: whole optimisations, as autograd.misc.optimizers runs them ----------------------


def _real(driver: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        msg = f"{driver}: {name} must be a real number, got {type(value).__name__}"
        raise ArgumentError(msg)
    number = float(value)  # a Python float: numpy scalars would promote float32 leaves
    if not math.isfinite(number):
        msg = f"{driver}: {name} must be finite, got {number}"
        raise ArgumentError(msg)
    return number


def _decay(driver: str, name: str, value: Any) -> float:
    number = _real(driver, name, value)
    if not 0.0 <= number < 1.0:
        msg = f"{driver}: {name} must be in [0, 1), got {number}"
        raise ArgumentError(msg)
    return number


def _positive(driver: str, name: str, value: Any) -> float:
    number = _real(driver, name, value)
    if number <= 0.0:
        msg = f"{driver}: {name} must be positive, got {number}"
        raise ArgumentError(msg)
    return number


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
