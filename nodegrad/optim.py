"""Optimiser steps over structured parameters: plain SGD and Adam.

Both are functions from (parameters, gradients) to new parameters of the same structure;
``None`` gradient slots (static fields) leave their parameter untouched.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from nodegrad.errors import ArgumentError
from nodegrad.tree import map_floats, tree_map, zeros_like

__all__ = ["AdamState", "adam", "sgd"]


def _keep_type(new: Any, old: Any) -> Any:
    return type(old)(new) if isinstance(old, float) else new


def _update(params: Any, grads: Any, step: Any) -> Any:
    # Parameters whose gradient slot is None (static fields) are carried over as they are.
    return map_floats(lambda p, g: p if g is None else _keep_type(step(p, g), p), params, grads)


def _check_rate(lr: float) -> None:
    if not (np.isfinite(lr) and lr > 0):
        msg = f"the learning rate must be a finite positive number, got {lr}"
        raise ArgumentError(msg)


def sgd(params: Any, grads: Any, lr: float) -> Any:
    """One step of gradient descent: ``params - lr * grads``, leafwise.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.optim.sgd({"w": 1.0, "tag": "a"}, {"w": 0.5, "tag": None}, lr=0.1)
    {'w': 0.95, 'tag': 'a'}
    """
    _check_rate(lr)
    return _update(params, grads, lambda p, g: p - lr * g)


@attrs.frozen
class AdamState:
    """Adam's running moments (shaped like the gradients) and its step count."""

    step: int
    mu: Any
    nu: Any


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

    Parameters
    ----------
    params, grads : structure
        Parameters and their gradients, of one structure.
    state : AdamState, optional
        The state returned by the previous step; ``None`` starts from zero moments.
    lr, b1, b2, eps : float
        Step size, moment decay rates and the denominator's floor.

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
    _check_rate(lr)
    if state is None:
        state = AdamState(0, zeros_like(grads), zeros_like(grads))
    step = state.step + 1
    mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state.nu, grads)
    mu_hat_scale = 1 / (1 - b1**step)
    nu_hat_scale = 1 / (1 - b2**step)
    steps = tree_map(lambda m, v: lr * (m * mu_hat_scale) / (np.sqrt(v * nu_hat_scale) + eps), mu, nu)
    return _update(params, steps, lambda p, s: p - s), AdamState(step, mu, nu)
