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

Fitting -- :func:`minimize` runs ``scipy.optimize.minimize`` over structured parameters (its
answer differentiable in the fit's arguments by the implicit function theorem), and
:func:`covariance` gives the inverse Hessian at the answer, by key path: the standard
errors of a maximum-likelihood fit.
"""

from nodegrad.optim.fit import Covariance, covariance, minimize
from nodegrad.optim.loops import adam_loop, rmsprop_loop, sgd_loop
from nodegrad.optim.steps import AdamState, adam, sgd

__all__ = [
    "AdamState",
    "Covariance",
    "adam",
    "adam_loop",
    "covariance",
    "minimize",
    "rmsprop_loop",
    "sgd",
    "sgd_loop",
]
