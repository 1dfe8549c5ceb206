"""The error of central differences against the analytic derivative, step by step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.errors import ArgumentError
from nodegrad.testing._check import _Check, _pair
from nodegrad.transforms import vjp
from nodegrad.tree import add, scale

__all__ = ["plot_check_grads"]


def plot_check_grads(
    f: Callable[..., Any],
    *args: Any,
    steps: Sequence[float] | None = None,
    seed: int = 0,
    ax: Any = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Plot how far central differences of ``f`` are from its gradient, against the step.

    The dot-product test of :func:`~nodegrad.testing.check_grads` (reverse mode, all the
    arguments along one random direction ``u``, a random output cotangent ``v``), repeated
    for each step ``eps``: the error ``|<vjp(v), u> - (<v, f(x + eps u)> - <v, f(x - eps
    u)>) / (2 eps)|``. For a correct gradient the curve falls as ``eps**2`` (truncation)
    from the right, and rises as ``1 / eps`` (rounding) to the left; a gradient that is
    wrong flattens out at its error instead. Complex arguments move along complex
    directions, with the pairing ``Re(sum(v * w))``.

    Parameters
    ----------
    f : callable
        The function, as for ``check_grads``.
    *args
        The point.
    steps : sequence of float, optional
        The steps; default 25 from ``1e-12`` to ``1e-1``, evenly on a log scale.
    seed : int, default 0
        Seeds the directions.
    ax : matplotlib Axes, optional
        Where to draw; a new figure's by default.

    Returns
    -------
    steps, errors : ndarray
        The steps and the absolute errors.
    ax : matplotlib Axes
        The plot (log-log).

    Raises
    ------
    ImportError
        Without matplotlib (``pip install nodegrad[plot]``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import plot_check_grads
    >>> steps, errors, ax = plot_check_grads(lambda x: ng.sum(ng.sin(x) * x), np.array([0.5, 1.0]))
    >>> bool(errors.min() < 1e-9), ax.get_xscale()
    (True, 'log')
    """
    try:
        import matplotlib.pyplot as plt  # an optional extra: imported when asked
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        msg = "plot_check_grads needs matplotlib: pip install nodegrad[plot]"
        raise ImportError(msg) from exc
    eps = np.logspace(-12, -1, 25) if steps is None else np.asarray(steps, dtype=float)
    if eps.ndim != 1 or not eps.size or not np.all(np.isfinite(eps) & (eps > 0)):
        msg = f"plot_check_grads: steps must be positive finite numbers, got {steps!r}"
        raise ArgumentError(msg)
    draws = _Check(("rev",), None, None, 1e-6, seed)  # check_grads' own random directions

    out, back = vjp(f, *args)
    v = draws.random(out)
    us = [draws.random(x) for x in args]
    analytic = sum(_pair(g, u) for g, u in zip(back(v), us, strict=True))

    def moved(step: float) -> Any:
        return f(*(add(x, scale(u, step)) for x, u in zip(args, us, strict=True)))

    errors = np.array([abs(analytic - (_pair(v, moved(h)) - _pair(v, moved(-h))) / (2 * h)) for h in eps])
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    ax.loglog(eps, np.maximum(errors, np.finfo(float).tiny), "o-", ms=3)
    ax.set(xlabel="step eps", ylabel="|analytic - central difference|", title="gradient check by step size")
    ax.grid(True, which="major", alpha=0.3)
    return eps, errors, ax
