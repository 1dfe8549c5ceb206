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

The tests read the cotangent's value, in forward mode too: ``jvp`` sweeps the function
back with a stand-in cotangent drawn at random (see
:func:`nodegrad.transforms.common.probe_cotangent`), whose share is zero exactly when the
function that follows does not depend on the choice. The gaps and reciprocals the rules
multiply by are written with recorded arithmetic, so that a rule on traced values
differentiates again; what counts as repeated is read from the values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values
from nodegrad.engine.levels import DIFFERENTIATING, has_values
from nodegrad.engine.traced import unwrap
from nodegrad.errors import NoGradientError

__all__ = [
    "inverse_gaps",
    "reciprocal",
    "refuse_again_at_repeated",
    "refuse_phase_dependence",
    "refuse_split_values",
    "refuse_undefined",
    "repeated_pairs",
    "tolerance",
]


def tolerance(values: Any) -> np.ndarray:
    """How close two values (or a value and zero) must be to count as repeated, for each
    matrix of the stack: ``sqrt(eps) * max|value|``, shaped ``(..., 1)``."""
    values = unwrap(values)
    scale = np.max(np.abs(values), axis=-1, keepdims=True) if values.shape[-1] else np.zeros((*values.shape[:-1], 1))
    return np.sqrt(np.finfo(values.dtype).eps) * scale


def repeated_pairs(values: Any) -> np.ndarray:
    """The pairs ``(i, j)``, ``i != j``, of values closer than the tolerance."""
    values = unwrap(values)
    n = values.shape[-1]
    gaps = np.abs(values[..., None, :] - values[..., :, None])
    return (gaps <= tolerance(values)[..., None]) & ~np.eye(n, dtype=bool)


def _mask(skip: np.ndarray, values: Any) -> np.ndarray:
    """``skip`` as 0.0 and 1.0 of the real dtype of ``values`` (float32 stays float32)."""
    return skip.astype(np.finfo(np.result_type(unwrap(values))).dtype)


def inverse_gaps(values: Any, skip: np.ndarray) -> Any:
    """``1 / (values_j - values_i)`` at ``(i, j)``, 0 on the diagonal and where ``skip`` is set
    (traced ``values`` give a traced result)."""
    skipped = _mask(skip | np.eye(np.shape(values)[-1], dtype=bool), values)
    return (1 - skipped) / (values[..., None, :] - values[..., :, None] + skipped)


def reciprocal(values: Any, skip: np.ndarray) -> Any:
    """``1 / values``, 0 where ``skip`` is set (traced ``values`` give a traced result)."""
    skipped = _mask(skip, values)
    return (1 - skipped) / (values + skipped)


def _too_large(share: Any, g: Any) -> bool:
    """Whether ``share`` (a plain array) holds more than rounding of the cotangent ``g``."""
    g = all_values(g)
    scale = np.max(np.abs(g)) if np.size(g) else 0.0
    return bool(np.any(np.abs(share) > np.sqrt(np.finfo(np.result_type(share)).eps) * scale))


def refuse_undefined(name: str, what: str, where: np.ndarray, share: Any, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` has a nonzero ``share`` (an
    array shaped like ``where``) anywhere ``where`` flags a repeated (or zero) value."""
    where = all_values(where)  # every example's, under vmap
    if not has_values(where) or not np.any(where):
        return
    share = all_values(share)
    # Under vmap either may hold every example (a batched cotangent of a matrix shared by
    # the examples, say): compared on their common shape.
    shape = np.broadcast_shapes(np.shape(share), np.shape(where))
    if _too_large(np.broadcast_to(share, shape)[np.broadcast_to(where, shape)], g):
        msg = (
            f"{name}: the gradient of the {what} is undefined (the vectors are not unique there, any rotation of "
            "them is as good) and the function differentiated depends on which were chosen; a function of them "
            "that does not (the projector onto their subspace, say) has a gradient"
        )
        raise NoGradientError(msg)


def refuse_split_values(name: str, what: str, repeated: np.ndarray, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` of the values tells repeated
    ones apart (``repeated`` flags the pairs): repeated values have no derivative one by
    one, only functions that treat them alike (their sum) do."""
    repeated = all_values(repeated)  # every example's, under vmap
    if not has_values(repeated) or not np.any(repeated):
        return
    plain = np.asarray(all_values(g))
    differences = plain[..., :, None] - plain[..., None, :]
    shape = np.broadcast_shapes(differences.shape, repeated.shape)  # (either may hold every example)
    if _too_large(np.broadcast_to(differences, shape)[np.broadcast_to(repeated, shape)], plain):
        msg = (
            f"{name}: repeated {what} (closer than sqrt(eps) * max) have no derivative one by one, and the function "
            "differentiated tells them apart; a function of them that treats them alike (their sum) has one"
        )
        raise NoGradientError(msg)


def _differentiated(g: Any) -> bool:
    """Whether the cotangent ``g`` is traced by a level other than forward mode's stand-in
    cotangent. A rule is linear in that one, which is drawn at random: what the tests read
    of its value holds for the linear map, so it needs no refusal of its own."""
    while type(g) in DIFFERENTIATING:
        if not g.arena.cotangent_probe:
            return True
        g = g.value
    return False


def refuse_again_at_repeated(name: str, what: str, repeated: np.ndarray, g: Any, *values: Any) -> None:
    """Raise :class:`NoGradientError` if a rule that leaves out the pairs of repeated values
    (``repeated``) is itself being differentiated (its cotangent ``g`` or one of ``values``
    traced): the terms it leaves out are limits ``0 / 0`` whose derivatives need not be
    zero. Forward mode's stand-in cotangent alone is fine (see :func:`_differentiated`)."""
    if (
        has_values(repeated)
        and np.any(all_values(repeated))
        and (_differentiated(g) or any(type(v) in DIFFERENTIATING for v in values))
    ):
        msg = (
            f"{name}: a second derivative at repeated {what} (closer than sqrt(eps) * max) is not defined by the "
            "decomposition (the vectors of a repeated value are any basis of its space); first derivatives of "
            "functions that do not depend on that choice are"
        )
        raise NoGradientError(msg)


def refuse_phase_dependence(name: str, what: str, phase_share: Any, g: Any) -> None:
    """Raise :class:`NoGradientError` if the cotangent ``g`` of complex vectors depends on
    their phases: ``phase_share`` holds ``Im(v_k^T g_k)`` for each vector ``k``."""
    if _too_large(unwrap(phase_share), g):
        msg = (
            f"{name}: the phase of each complex {what} is arbitrary (numpy promises unit vectors, not which), and "
            "the function differentiated depends on it, so it has no gradient; functions of them that do not "
            "(abs(v), the projector v v^H) have one"
        )
        raise NoGradientError(msg)
