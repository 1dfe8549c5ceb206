"""scipy's namespace for traced values: ``import nodegrad.scipy as scipy``.

The parts of scipy that differentiable programs reach for, with gradients:
:mod:`nodegrad.scipy.special`, :mod:`nodegrad.scipy.stats`, :mod:`nodegrad.scipy.linalg`
and :mod:`nodegrad.scipy.integrate`, with scipy's names and signatures, so code written
for ``autograd.scipy`` or ``jax.scipy`` runs after changing its import line. scipy's own
special-function ufuncs (``scipy.special.gammaln(x)``) also take traced values directly,
through numpy's ufunc protocol.

scipy is an optional dependency (``pip install nodegrad[scipy]``); nodegrad itself
imports and works without it.
"""

from __future__ import annotations

try:
    import scipy as _scipy  # noqa: F401  (only checks that scipy is installed)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    msg = "nodegrad.scipy needs scipy: pip install nodegrad[scipy]"
    raise ImportError(msg) from exc

from nodegrad.scipy import integrate, linalg

__all__ = ["integrate", "linalg"]
