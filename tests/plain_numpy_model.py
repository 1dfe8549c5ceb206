"""A small data pipeline written against numpy alone.

Nothing here knows about nodegrad: ``tests/test_numpy_api.py`` differentiates these
functions, unmodified, through numpy's dispatch protocols (``__array_ufunc__`` and
``__array_function__``), and checks that this file imports numpy and nothing else.
"""

from __future__ import annotations

import numpy as np


def soft_mean(weights, bias, batch):
    """Mean of softplus(tanh(batch @ weights + bias)): small enough to differentiate by hand."""
    return np.mean(np.logaddexp(np.tanh(batch @ weights + bias), 0.0))


def pipeline_loss(weights, bias, batch, picks):
    """Features, a data gate, a leaky mask from the values, pooling, a running total, a pick.

    ``batch`` is ``(n, d)`` data, ``weights`` ``(d, k)``, ``bias`` ``(k,)`` and ``picks``
    integer positions (repeats allowed) into the ``2 k + 1`` pooled features.
    """
    hidden = np.tanh(batch @ weights + bias)  # (n, k)
    gated = np.where(batch[:, :1] > 0.0, hidden, 0.5 * hidden)  # gate from the data
    leaky = np.where(hidden > 0.0, hidden, 0.1 * hidden)  # mask from the values themselves
    widened = np.concatenate([gated, leaky[:, ::-1], np.square(hidden[:, :1])], axis=1)  # (n, 2k+1)
    pooled = np.sum(widened, axis=0)  # (2k+1,)
    centred = widened - np.mean(widened, axis=0, keepdims=True)
    running = np.logaddexp(np.cumsum(pooled), pooled[::-1])  # a running total against its reverse
    chosen = np.take(running, picks)
    corner = widened[-1, -1] + widened[0, np.array([0, 0, -1])].sum()
    return np.mean(chosen) + np.mean(centred**2) + 0.5 * corner
