"""The Dirichlet distribution, ``scipy.stats.dirichlet``: ``logpdf`` and ``pdf``,
differentiable in ``x`` and ``alpha``.

As in scipy, the components run along the *first* axis of ``x`` (``(K,)`` or ``(K, N)``
for ``N`` points); ``K - 1`` components are completed with ``1 - sum``. Invalid ``alpha``
or ``x`` (outside the simplex, a zero where ``alpha < 1``) raise
:class:`~nodegrad.errors.ArgumentError`, as scipy raises ``ValueError``.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import dirichlet
>>> round(float(dirichlet.pdf(np.array([0.5, 0.5]), np.array([2.0, 2.0]))), 6)
1.5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.guards import guarded
from nodegrad.errors import ArgumentError, user_location
from nodegrad.scipy.special import gammaln, xlogy
from nodegrad.scipy.stats._shared import array_like, plain

__all__ = ["logpdf", "pdf"]


def _refuse(message: str) -> None:
    msg = f"dirichlet: {message} [called at {user_location()}]"
    raise ArgumentError(msg)


def _checked(x: Any, alpha: Any) -> Any:
    """``x`` with all ``K`` components, after scipy's checks of ``alpha`` and ``x``."""
    a, xv = plain(alpha), plain(x)
    if a.ndim != 1:
        _refuse(f"the parameter vector 'alpha' must be one dimensional, but alpha.shape = {a.shape}")
    if np.min(a) <= 0:
        _refuse("all parameters must be greater than 0")
    if xv.ndim == 0 or (xv.shape[0] + 1 != a.shape[0] and xv.shape[0] != a.shape[0]):
        _refuse(f"'x' must have as many entries as 'alpha' ({a.shape[0]}) or one fewer, got shape {xv.shape}")
    if xv.shape[0] != a.shape[0]:
        if xv.ndim > 2:
            _refuse("the input must be one dimensional or a two dimensional matrix containing the entries")
        x = ops.cat([x, ops.expand_dims(ops.subtract(1.0, ops.sum(x, 0)), 0)], 0)
        xv = plain(x)
    if np.min(xv) < 0 or np.max(xv) > 1:
        _refuse("each entry in 'x' must be between 0 and 1")
    if np.any((xv == 0) & (a < 1).reshape((-1,) + (1,) * (xv.ndim - 1))):
        _refuse("each entry in 'x' must be greater than zero if its alpha is less than one")
    if np.any(np.abs(np.sum(xv, 0) - 1.0) > 10e-10):
        _refuse(f"the input vector 'x' must lie within the normal simplex, but np.sum(x, 0) = {np.sum(xv, 0)}")
    return x


@guarded
def logpdf(x: Any, alpha: Any) -> Any:
    """Log of the Dirichlet density: ``sum((alpha - 1) log x) - log B(alpha)``."""
    x, alpha = array_like(x), array_like(alpha)
    x = _checked(x, alpha)
    log_b = ops.subtract(ops.sum(gammaln(alpha)), gammaln(ops.sum(alpha)))
    terms = xlogy(ops.subtract(alpha, 1), ops.moveaxis(x, 0, -1))
    out = ops.subtract(ops.sum(terms, -1), log_b)
    out = ops.squeeze(out)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


@guarded
def pdf(x: Any, alpha: Any) -> Any:
    """The Dirichlet density, ``exp(logpdf)``."""
    return ops.exp(logpdf(x, alpha))
