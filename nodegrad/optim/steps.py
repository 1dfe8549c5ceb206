"""Steps: functions from (parameters, gradients) to new parameters of the same structure.

:func:`sgd` and :func:`adam`; ``None`` gradient slots (static fields) leave their parameter
untouched. A :class:`~nodegrad.RowSparse` gradient (``grad(..., sparse_rows=True)``) makes
the step lazy, as PyTorch's ``SparseAdam`` and sparse SGD are: only its rows move, written
into the parameter array in place (and Adam's moments into the state's arrays), since
copying a million-row table would cost more than the step (a copy of tied weights, memory
two parameters share, so each gets the dense step's result).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.rows import RowSparse, overlapping
from nodegrad.engine.structure import (
    integer_leaves,
    is_differentiable_leaf,
    zip_leaves,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ShapeError
from nodegrad.tree import map_floats, tree_map, zeros_like

__all__ = ["AdamState", "adam", "sgd"]


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
