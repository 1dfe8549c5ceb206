"""What the rules of eigenvectors and singular vectors refuse.

Eigenvectors and singular vectors are not unique where eigenvalues or singular values
repeat (any rotation of the vectors of a repeated value is as good), and their derivative
is undefined there. The rules treat two values as repeated when they are closer than
``sqrt(eps) * max|value|`` (``eps`` of the dtype; a zero singular value likewise, where it
enters a rule): a cotangent whose share at such a pair is zero (a function of the vectors
that does not change under that rotation, such as the projector onto their subspace) gets
its gradient, with nothing from that pair; any other raises
:class:`~nodegrad.errors.NoGradientError` naming the op, never a NaN or an infinity.

Complex vectors have one more freedom: each may be multiplied by any phase ``e^{i phi}``
(numpy promises unit vectors, not which of them). A function of them that does not depend
on the phases (``abs(v)``, the projector ``v v^H``, ``v_k^H w``...) has a cotangent ``g``
with ``Im(v_k^T g_k) = 0`` for every vector ``k``: that is the test for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.traced import Traced
from nodegrad.errors import NoGradientError

__all__ = [
    "inverse_gaps",
    "reciprocal",
    "refuse_phase_dependence",
    "refuse_undefined",
    "repeated_pairs",
    "tolerance",
]


def tolerance(values: np.ndarray) -> np.ndarray:
    """How close two values (or a value and zero) must be to count as repeated, for each
    matrix of the stack: ``sqrt(eps) * max|value|``, shaped ``(..., 1)``."""
    scale = np.max(np.abs(values), axis=-1, keepdims=True) if values.shape[-1] else np.zeros((*values.shape[:-1], 1))
    return np.sqrt(np.finfo(values.dtype).eps) * scale


def repeated_pairs(values: np.ndarray) -> np.ndarray:
    """The pairs ``(i, j)``, ``i != j``, of values closer than the tolerance."""
    n = values.shape[-1]
    gaps = np.abs(values[..., None, :] - values[..., :, None])
    return (gaps <= tolerance(values)[..., None]) & ~np.eye(n, dtype=bool)


def inverse_gaps(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``1 / (values_j - values_i)`` at ``(i, j)``, 0 on the diagonal and where ``skip`` is set."""
    skip = skip | np.eye(values.shape[-1], dtype=bool)
    return np.where(skip, 0, 1 / np.where(skip, 1, values[..., None, :] - values[..., :, None]))


def reciprocal(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``1 / values``, 0 where ``skip`` is set."""
    return np.where(skip, 0, 1 / np.where(skip, 1, values))


def _too_large(share: Any, g: Any) -> bool:
    """Whether ``share`` (a plain array) holds more than rounding of the cotangent ``g``."""
    scale = np.max(np.abs(g)) if np.size(g) else 0.0
    return bool(np.any(np.abs(share) > np.sqrt(np.finfo(np.result_type(share)).eps) * scale))


def refuse_undefined(name: str, what: str, where: np.ndarray, share: Any, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` has a nonzero ``share`` (an
    array shaped like ``where``) anywhere ``where`` flags a repeated (or zero) value.

    A traced ``g`` is the symbolic cotangent of forward mode: its values are not known, so
    any flagged place refuses."""
    if not np.any(where):
        return
    if type(g) is Traced:
        msg = (
            f"{name}: the derivative of the {what} is undefined (the vectors are not unique there); forward mode "
            "(jvp) cannot tell whether the function of them is unaffected, so it refuses"
        )
        raise NoGradientError(msg)
    if _too_large(np.broadcast_to(share, where.shape)[where], g):
        msg = (
            f"{name}: the gradient of the {what} is undefined (the vectors are not unique there, any rotation of "
            "them is as good) and the function differentiated depends on which were chosen; a function of them "
            "that does not (the projector onto their subspace, say) has a gradient"
        )
        raise NoGradientError(msg)


def refuse_phase_dependence(name: str, what: str, phase_share: Any, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` of complex vectors depends on
    their phases: ``phase_share`` holds ``Im(v_k^T g_k)`` for each vector ``k``.

    Forward mode (a traced ``g``) cannot see what follows the vectors, so it refuses."""
    if type(g) is Traced:
        msg = (
            f"{name}: the phase of each complex {what} is arbitrary, and forward mode (jvp) cannot tell whether "
            "the function of them depends on it, so it refuses; reverse mode (grad, vjp) differentiates functions "
            "that do not (abs(v), v v^H)"
        )
        raise NoGradientError(msg)
    if _too_large(phase_share, g):
        msg = (
            f"{name}: the phase of each complex {what} is arbitrary (numpy promises unit vectors, not which), and "
            "the function differentiated depends on it, so it has no gradient; functions of them that do not "
            "(abs(v), the projector v v^H) have one"
        )
        raise NoGradientError(msg)
