"""What an error says when numpy, or a library through it, turns a traced value into a
plain array (the refusal itself is :class:`~nodegrad.engine.traced.Traced`'s
``__array__``).

numpy's functions written in Python (``np.full``), its masked arrays and its matrices each
get their own way out, and so does the user's own ``np.asarray(x)``: this namespace's
constructors take traced values. scipy's functions are named as scipy's documentation
names them (``scipy.stats.norm.logpdf``) with nodegrad.scipy's version to try; once
imported, :mod:`nodegrad.scipy` answers for them instead, knowing which versions it has.
Importing this module fills the engine's sockets (:mod:`nodegrad.engine.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.traced import DETACH

__all__ = ["NODEGRAD_NUMPY", "numpy_advice", "scipy_advice"]

#: The way out when plain numpy builds an array from traced values (np.array([x, y]),
#: np.full(shape, x)): nodegrad's numpy namespace has constructors that take them.
NODEGRAD_NUMPY = (
    "Write import nodegrad.numpy as np instead of import numpy as np: its np.array, np.asarray, np.full and "
    "np.full_like take traced values (plain numpy's read only the numbers inside)"
)


def numpy_advice(frame: FrameType, full: str, what: str) -> str:
    """The error for numpy's function ``full`` (running in ``frame``), which cannot see
    traced values: masked arrays and matrices are not differentiated at all, and numpy's
    constructors have counterparts in nodegrad's numpy namespace."""
    module = frame.f_globals.get("__name__") or "?"
    if module.startswith("numpy.ma."):
        return (
            f"{full} cannot see traced values: {what} nodegrad does not differentiate numpy's masked arrays: pass "
            f"m.filled(fill) or m.compressed(), and keep the mask as a boolean array (np.where(mask, ...)); or {DETACH}"
        )
    if module.startswith("numpy.matrixlib."):
        return (
            f"{full} cannot see traced values: {what} nodegrad does not differentiate np.matrix: pass np.asarray(m) "
            f"and write @ for its matrix product; or {DETACH}"
        )
    return f"{full} cannot see traced values: {what} {NODEGRAD_NUMPY}, or {DETACH}"  # np.full and kin


def scipy_advice(frame: FrameType, full: str, what: str, instead: Callable[[str], str]) -> str:
    """The error for scipy's function ``full`` (running in ``frame``), which cannot see
    traced values, named as scipy documents it (a distribution's method by the
    distribution: ``scipy.stats.norm.logpdf``); ``instead(ours)`` says what to do about
    ``ours``, the nodegrad.scipy name of the same function."""
    module = frame.f_globals.get("__name__") or "?"
    package = ".".join(module.split(".")[: 3 if module.startswith("scipy.sparse.linalg") else 2])  # scipy.stats, ...
    owner = frame.f_locals.get("self")
    dist = getattr(getattr(owner, "dist", owner), "name", None) if package == "scipy.stats" else None
    name = frame.f_code.co_name
    public = f"{package}.{dist}.{name}" if isinstance(dist, str) else f"{package}.{name}"
    if package == "scipy.sparse" and hasattr(owner, "format"):  # a method of a sparse matrix closed over
        return (
            f"{type(owner).__name__}.{name} ({full}) cannot see traced values: {what} A scipy.sparse matrix closed "
            "over meets traced values through its operators (X @ w, X * w, X / s); for its methods, pass it to the "
            f"transform as an argument (inside, its methods take traced values), or {DETACH}"
        )
    return f"{public} ({full}) cannot see traced values: {what} {instead(f'nodegrad.{public}')}"


def _try_nodegrad_scipy(ours: str) -> str:
    # Until nodegrad.scipy is imported, nothing below it knows which of scipy's functions it has.
    return f"Try {ours} (nodegrad.scipy has versions of scipy's functions that take traced values); or {DETACH}"


PLUGINS.library_advice["numpy"] = numpy_advice
PLUGINS.library_advice["scipy"] = lambda frame, full, what: scipy_advice(frame, full, what, _try_nodegrad_scipy)
PLUGINS.conversion_advice = (
    f"{NODEGRAD_NUMPY}; a ufunc reads a list holding traced values as plain numbers even there: make it one array "
    "first, np.exp(np.array([x, 1.0]))."
)
