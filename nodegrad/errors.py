"""The exception hierarchy.

Every error nodegrad raises on purpose is a :class:`NodegradError`. Each concrete class
also derives from the builtin exception a user would expect (``ValueError`` for a shape
mismatch, ``TypeError`` for a wrong dtype, ...), so ``except ValueError`` keeps working.

Errors about recorded ops name the op, the shapes involved and the line of user code that
recorded it; :func:`user_location` finds that line.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "ArenaError",
    "ArgumentError",
    "DtypeError",
    "LeakedTracerError",
    "NoGradientError",
    "NodegradError",
    "NonFiniteError",
    "OpIndexError",
    "ShapeError",
    "StructureError",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NodegradError(Exception):
    """Base class of every error raised by nodegrad."""


class ShapeError(NodegradError, ValueError):
    """An op's inputs have shapes that do not fit together."""


class DtypeError(NodegradError, TypeError):
    """A value has a dtype the operation cannot use (e.g. differentiating an integer)."""


class OpIndexError(NodegradError, IndexError):
    """An index (gather, indexing, class targets) is out of bounds."""


class NoGradientError(NodegradError, NotImplementedError):
    """Differentiation reached an op that has no gradient rule for that input."""


class ArenaError(NodegradError, RuntimeError):
    """Misuse of an arena: mixing arenas, unknown nodes, a non-scalar output without a seed."""


class LeakedTracerError(ArenaError):
    """A traced value outlived the transform that traced it (it was stored, or returned
    inside an aux or a closure) and reached a later computation."""


class StructureError(NodegradError, ValueError):
    """A structured value (record, map, sequence) does not match what was expected."""


class NonFiniteError(NodegradError, FloatingPointError):
    """A forward value or a gradient is NaN or infinite (raised only when checking is on)."""


class ArgumentError(NodegradError, ValueError):
    """An argument is outside its domain (a non-finite scale, a non-positive norm bound)."""


def error_like(exc: BaseException) -> type[NodegradError] | None:
    """The nodegrad error to raise, naming the op, for a builtin exception that escaped an
    op's forward or one of its rules; ``None`` for any other exception (a user's own, from a
    custom rule, say), which is left as it is."""
    if isinstance(exc, NodegradError):
        return None
    if isinstance(exc, LookupError):  # an index out of range, or a key an array does not take
        return OpIndexError
    if isinstance(exc, TypeError | AttributeError):
        return DtypeError
    if isinstance(exc, ArithmeticError):  # overflow, division by zero, floating point
        return NonFiniteError
    if isinstance(exc, ValueError):
        return ShapeError
    return None


def user_location() -> str:
    """Return ``"file:line"`` of the innermost caller outside the nodegrad package.

    Called only when an error is being built, so it costs nothing on the normal path.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"
