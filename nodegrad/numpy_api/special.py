"""scipy.special's ufuncs on traced values, and ``np.i0``.

scipy's special functions are numpy ufuncs, so ``scipy.special.gammaln(x)`` of a traced
``x`` reaches :func:`~nodegrad.numpy_api.ufuncs.dispatch_ufunc` as ``np.exp(x)`` does:
:func:`scipy_ufuncs` maps each one that has an op in :mod:`nodegrad.ops.special` onto it
(empty until the user has imported scipy.special: none of its ufuncs can arrive before).
``np.i0`` is differentiable through the same ops, and without scipy says what to install.
:func:`ufunc_name` names any ufunc as its user wrote it, for the error a ufunc without a
rule raises.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.errors import NoGradientError, user_location
from nodegrad.ops import special

__all__ = ["i0", "scipy_ufuncs", "ufunc_name"]


def scipy_ufuncs() -> dict[np.ufunc, Callable[..., Any]]:
    """scipy.special's ufuncs that have an op here, each mapped onto the op's function
    (``scipy.special.psi`` is ``digamma``; ``polygamma`` is not a ufunc in scipy); empty
    while scipy.special is not imported, which nodegrad never does on its own account."""
    scipy_special = sys.modules.get("scipy.special")
    if scipy_special is None:
        return {}
    found = {name: getattr(scipy_special, name, None) for name in special.__all__}
    return {ufunc: getattr(special, name) for name, ufunc in found.items() if isinstance(ufunc, np.ufunc)}


def ufunc_name(ufunc: np.ufunc) -> str:
    """``np.exp``, ``scipy.special.jv``, or the ufunc's own module and name: as the user
    would write it. (scipy's ufuncs have no ``__module__``: they are looked up in
    ``scipy.special`` when it has been imported.)"""
    name = ufunc.__name__
    if getattr(np, name, None) is ufunc:
        return f"np.{name}"
    scipy_special = sys.modules.get("scipy.special")
    if scipy_special is not None and getattr(scipy_special, name, None) is ufunc:
        return f"scipy.special.{name}"
    module = getattr(ufunc, "__module__", None)
    return f"{module}.{name}" if module else f"the ufunc {name}"


def i0(x: Any) -> Any:
    """``np.i0``: the modified Bessel function of order 0, through the ``i0`` op (and
    ``i1`` for its derivative), which scipy provides."""
    if not special.HAVE_SCIPY:
        msg = (
            "np.i0 has no gradient rule for traced values without scipy: its rule uses scipy's Bessel functions, "
            f"pip install nodegrad[scipy] [called at {user_location()}]"
        )
        raise NoGradientError(msg)
    return special.i0(x)
