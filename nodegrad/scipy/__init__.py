"""scipy's namespace for traced values: ``import nodegrad.scipy as scipy``.

The parts of scipy that differentiable programs reach for, with gradients:
:mod:`nodegrad.scipy.special`, :mod:`nodegrad.scipy.stats`, :mod:`nodegrad.scipy.linalg`,
:mod:`nodegrad.scipy.integrate`, :mod:`nodegrad.scipy.signal` (``convolve``) and
:mod:`nodegrad.scipy.sparse` (sparse matrices as differentiable values), with
scipy's names and signatures, so code written for ``autograd.scipy`` or ``jax.scipy`` runs
after changing its import line. scipy's own
special-function ufuncs (``scipy.special.gammaln(x)``) also take traced values directly,
through numpy's ufunc protocol.

scipy is an optional dependency (``pip install nodegrad[scipy]``); nodegrad itself
imports and works without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

try:
    import scipy as _scipy  # noqa: F401  (only checks that scipy is installed)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    msg = "nodegrad.scipy needs scipy: pip install nodegrad[scipy]"
    raise ImportError(msg) from exc

from nodegrad.scipy import _conversions as _conversions  # errors about scipy's functions name ours
from nodegrad.scipy import integrate, linalg

if TYPE_CHECKING:  # loaded on first use (see __getattr__); declared for type checkers
    from nodegrad.scipy import signal as signal
    from nodegrad.scipy import sparse as sparse
    from nodegrad.scipy import special as special
    from nodegrad.scipy import stats as stats

__all__ = ["integrate", "linalg"]

#: Loaded on first use as attributes (``nodegrad.scipy.stats.norm``), as scipy does.
_ON_FIRST_USE = ("signal", "sparse", "special", "stats")


def __getattr__(name: str) -> ModuleType:
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"{__name__}.{name}")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})
