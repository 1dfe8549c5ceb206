"""The exception hierarchy.

Every error nodegrad raises on purpose is a :class:`NodegradError`. Each concrete class
also derives from the builtin exception a user would expect (``ValueError`` for a shape
mismatch, ``TypeError`` for a wrong dtype, ...), so ``except ValueError`` keeps working.
An error that stands for one numpy raises derives from numpy's too: :class:`LinAlgError`
and :class:`MatrixShapeError` are ``numpy.linalg.LinAlgError``, :class:`AxisError` is
``numpy.exceptions.AxisError``, so code written for numpy catches them.

Errors about recorded ops name the op, the shapes involved and the line of user code that
recorded it; :func:`user_location` finds that line.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np

__all__ = [
    "ArenaError",
    "ArgumentError",
    "AxisError",
    "BatchingError",
    "DtypeError",
    "ImplicitDiffError",
    "LeakedTracerError",
    "LinAlgError",
    "MatrixShapeError",
    "NoGradientError",
    "NodegradError",
    "NonFiniteError",
    "OpIndexError",
    "RandomDrawError",
    "ReplayWarning",
    "ShapeError",
    "ShapeOnlyError",
    "StructureError",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NodegradError(Exception):
    """Base class of every error raised by nodegrad."""

    #: The name of the op whose gradient rule raised this, where one did (for
    #: :func:`nodegrad.testing.check_grads`, which then finds where it was recorded).
    failed_rule_of: str | None = None


class ShapeError(NodegradError, ValueError):
    """An op's inputs have shapes that do not fit together."""


class AxisError(ShapeError, np.exceptions.AxisError):
    """An ``axis`` out of range for an array's dimensions (inside ``vmap``, one example's).
    Also a ``numpy.exceptions.AxisError`` (an ``IndexError`` and a ``ValueError``), the
    error numpy raises there, so code that catches numpy's catches it."""

    def __str__(self) -> str:
        return Exception.__str__(self)  # the message, as every other error's (numpy's reads its own fields)


class _CotangentShapeError(ShapeError):
    """A gradient rule gave its input a cotangent of another shape (the sweep finds it at
    the input; ``check_grads`` then looks for the op whose rule it was)."""


class DtypeError(NodegradError, TypeError):
    """A value has a dtype the operation cannot use (e.g. differentiating an integer)."""


class OpIndexError(NodegradError, IndexError):
    """An index (gather, indexing, class targets) is out of bounds."""


class NoGradientError(NodegradError, NotImplementedError):
    """Differentiation reached an op that has no gradient rule for that input."""


class ArenaError(NodegradError, RuntimeError):
    """Misuse of an arena: mixing arenas, unknown nodes, a non-scalar output without a seed."""


class ShapeOnlyError(ArenaError, TypeError):
    """Inside ``eval_shape``, a value that has only a shape and a dtype was asked for what
    only its values answer: a Python ``bool`` (an ``if``), a number, a plain array, or a
    shape that depends on the values (a boolean mask's selection, ``np.nonzero``)."""


class LeakedTracerError(ArenaError):
    """A traced value outlived the transform that traced it (it was stored, or returned
    inside an aux or a closure) and reached a later computation."""


class BatchingError(ArenaError):
    """Inside ``vmap``, a batched value was asked for one answer where each example has its
    own: a Python ``bool`` (an ``if``), a number, or a plain array.

    numpy's own indexing of a plain array by a batched index asks for a plain array too;
    and a batched value written in place into one array or file (``np.put``, ``out=``) is
    refused, as every example would overwrite the last one's."""


class RandomDrawError(NodegradError, RuntimeError):
    """A function being recorded by ``replay`` drew random numbers (from numpy's global
    generator, Python's ``random``, or a ``numpy.random.Generator``): a replay would repeat
    the same draws. Pass the random values in as an argument instead."""


class ReplayWarning(UserWarning):
    """``replay`` runs a function eagerly instead of replaying it (it reached its
    ``max_traces``, or did something a recording cannot repeat): the results are right,
    only slower. Issued once per function and reason."""


class StructureError(NodegradError, ValueError):
    """A structured value (record, map, sequence) does not match what was expected."""


class NonFiniteError(NodegradError, FloatingPointError):
    """A forward value or a gradient is NaN or infinite (raised only when checking is on)."""


class ArgumentError(NodegradError, ValueError):
    """An argument is outside its domain (a non-finite scale, a non-positive norm bound)."""


class LinAlgError(ArgumentError, np.linalg.LinAlgError):
    """A matrix is not what the function needs: singular, not positive definite, a
    decomposition that does not converge (a covariance that is not positive definite, say).
    Also a ``numpy.linalg.LinAlgError``, the error numpy and scipy raise there, so code that
    catches theirs catches it."""


class ImplicitDiffError(LinAlgError):
    """The linear system of an implicit gradient (:func:`nodegrad.custom_root`,
    :func:`nodegrad.custom_fixed_point`, :func:`nodegrad.optim.minimize`) is singular, or its
    solver did not converge: the answer may not be a regular root, or the solver stopped
    short of it. The message names the decorated solver and the linear solver."""


class MatrixShapeError(ShapeError, LinAlgError):
    """An array is not the matrix a linear-algebra function needs (not square, or fewer
    than two dimensions). A :class:`ShapeError`, and numpy's ``LinAlgError``, which numpy
    raises there."""


class _UndefinedGradientError(NonFiniteError, LinAlgError):
    """A decomposition a gradient rule needs does not exist at this input (a singular
    matrix): the gradient is not defined there. Numpy's ``LinAlgError`` too, as the
    decomposition raised it."""


def error_like(exc: BaseException) -> type[NodegradError] | None:
    """The nodegrad error to raise, naming the op, for a builtin exception that escaped an
    op's forward or one of its rules; ``None`` for any other exception (a user's own, from a
    custom rule, say), which is left as it is."""
    if isinstance(exc, NodegradError):
        return None
    # numpy's own errors first: each is a ValueError, but code written for numpy catches it
    # by its own name.
    if isinstance(exc, np.linalg.LinAlgError):  # singular, not positive definite, no convergence
        return LinAlgError
    if isinstance(exc, np.exceptions.AxisError):
        return AxisError
    if isinstance(exc, LookupError):  # an index out of range, or a key an array does not take
        return OpIndexError
    if isinstance(exc, TypeError | AttributeError):
        return DtypeError
    if isinstance(exc, ArithmeticError):  # overflow, division by zero, floating point
        return NonFiniteError
    if isinstance(exc, ValueError):
        return ShapeError
    return None


_PROTOCOL_CALLERS = ("numpy.", "pandas.")


def user_location() -> str:
    """Return ``"file:line"`` of the innermost caller outside the nodegrad package; for code
    run in a notebook cell, the cell's name and line (``In[3] line 9``).

    Called only when an error is being built, so it costs nothing on the normal path.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        module = str(frame.f_globals.get("__name__", ""))
        # numpy's and pandas' own code calls nodegrad's protocols: the user's line is beyond it
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep) and not module.startswith(_PROTOCOL_CALLERS):
            return shown_location(filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


# IPython compiles each cell into a file of its own, in a Jupyter kernel a temporary one
# (/tmp/ipykernel_123/4567.py) whose name tells the reader nothing; IPython's tracebacks
# name the cell instead, and so do nodegrad's messages and tables.
_KERNEL_CELL = re.compile(r"ipykernel_\d+[\\/]\d+\.py$")


def shown_location(filename: str, line: int) -> str:
    """``file:line`` as a message shows it; code run in a notebook cell as ``In[3] line 9``."""
    cell = cell_name(filename, ipython_shell())
    return f"{cell} line {line}" if cell else f"{filename}:{line}"


def cell_name(filename: str, shell: Any) -> str:
    """The name IPython's ``shell`` gives the cell compiled into ``filename`` (``In[3]``),
    ``"cell"`` for a Jupyter kernel's cell it does not name, ``""`` for any other file."""
    try:
        named = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # an IPython that does not name cells: the file's name is still known
        named = None
    if named:
        return str(named[1])
    return "cell" if _KERNEL_CELL.search(filename) else ""


def ipython_shell() -> Any:
    """The running IPython shell (a Jupyter kernel's, or a terminal's), or None."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first caller outside nodegrad,
    for ``warnings.warn`` called in the function that calls this one."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def _user_frame() -> FrameType | None:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame = frame.f_back
    return frame


def calling_code() -> str | None:
    """The source text of the expression the innermost caller outside nodegrad is
    evaluating (``math.sin(x)``), for errors that name what the user called; None where it
    cannot be read. Only asked while an error is being written."""
    frame = _user_frame()
    if frame is None or not hasattr(frame.f_code, "co_positions"):  # Python < 3.11
        return None
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if not 0 <= index < len(positions):
        return None
    start, end, col, end_col = positions[index]
    if start is None or end is None or col is None or end_col is None:
        return None
    lines = [linecache.getline(frame.f_code.co_filename, n) for n in range(start, end + 1)]
    if not all(lines):
        return None
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    return "".join(lines).strip()


# numpy's warnings (log of a negative number, overflow, ...) come from C, and Python
# attributes them to the innermost Python frame: nodegrad's own code, never the user's
# line, and shown once for all of nodegrad. So inside the engine and the ops they are
# raised as errors instead, caught where an op's forward or rule is called, and issued
# again from the user's line by :func:`rerun_reporting_warnings`; the common path, with
# no warning, pays nothing. A filter the user sets later comes first and still decides.
warnings.filterwarnings("error", category=RuntimeWarning, module=r"nodegrad\.(engine\.(record|sweep|program)|ops\..*)$")


def rerun_reporting_warnings(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` again, after a warning stopped it: its warnings are collected
    this time and each is issued from the user's line (under the user's filters)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    frame = _user_frame()
    for w in caught:
        if frame is None:
            warnings.warn(w.message, w.category, stacklevel=2)
            continue
        registry = frame.f_globals.setdefault("__warningregistry__", {})
        module = frame.f_globals.get("__name__", "<unknown>")
        # No module globals: the line is read from the file (a loader may have no source to give).
        warnings.warn_explicit(w.message, w.category, frame.f_code.co_filename, frame.f_lineno, module, registry)
    return out
