"""What the user sees when a VJP rule fails in the sweep: the op named, with its inputs.

A rule that raises on plain values is reported as the op's own error (its shapes said);
one that raises on traced values is being differentiated again (nested transforms,
``create_graph``), and is reported as that. A missing decomposition (a singular matrix)
means the gradient is not defined at this input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.traced import Traced, describe
from nodegrad.errors import (
    ImplicitDiffError,
    NodegradError,
    NoGradientError,
    NonFiniteError,
    ShapeError,
    ShapeOnlyError,
    _UndefinedGradientError,
    error_like,
)

__all__ = ["reported"]


def reported(op: Any, g: Any, value: Any, args: tuple[Any, ...], exc: Exception) -> Exception:
    """The exception to raise for a failed rule: :func:`_rule_failed`'s, or ``exc`` itself
    (re-raised as it is, with its own traceback)."""
    failure = _rule_failed(op, g, value, args, exc)
    if failure is exc:
        raise exc
    return failure


def _rule_failed(op: Any, g: Any, value: Any, args: tuple[Any, ...], exc: Exception) -> Exception:
    """The error to raise for a rule of ``op`` that failed. A rule fed traced values is
    being differentiated again (nested transforms, ``create_graph``): a failure there is
    reported as that, naming the op."""
    traced = type(g) is Traced or type(value) is Traced or any(type(a) is Traced for a in args)
    if isinstance(exc, ImplicitDiffError):
        return exc  # (it names the solver and its linear system already, at any order)
    if isinstance(exc, ShapeError):
        # A rule whose cotangent does not fit its input (a custom_vjp's bwd, say): wrong at
        # any order, and the rule is named (check_grads then finds where it was recorded).
        if exc.failed_rule_of is None:
            exc.failed_rule_of = op.name
        return exc
    if isinstance(exc, np.linalg.LinAlgError):
        # A decomposition the rule needs does not exist here (a singular matrix, say): the
        # gradient is not defined at this input.
        msg = f"op {op.name!r}: its gradient is not defined at this input ({type(exc).__name__}: {exc})"
        return _UndefinedGradientError(msg)
    if not traced:
        kind = error_like(exc)
        if kind is None:
            return exc
        shapes = ", ".join(describe(a) for a in args)
        failure = kind(f"op {op.name!r}: its gradient rule failed on inputs ({shapes}): {type(exc).__name__}: {exc}")
        failure.failed_rule_of = op.name  # (check_grads looks for where it was recorded)
        return failure
    if isinstance(exc, NoGradientError | ShapeOnlyError):
        return exc  # (eval_shape's refusal to read values: the rule itself differentiates)
    if isinstance(exc, NonFiniteError):
        msg = f"{exc}; this node was recorded by the gradient rule of {op.name!r} (differentiating it again)"
        return NonFiniteError(msg)
    if isinstance(exc, NodegradError):
        msg = f"op {op.name!r}: its gradient rule cannot be differentiated again: {exc}"
    else:
        msg = f"op {op.name!r}: its gradient rule cannot be differentiated again ({type(exc).__name__}: {exc})"
    return NoGradientError(msg)
