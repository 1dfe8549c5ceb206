"""Elementwise selection: ``maximum``, ``minimum``, ``clamp`` and ``where``.

Their gradients go to whichever input was chosen (ties split evenly); the mask of
``where`` carries none. ``where`` selects on bit patterns, exactly and without branches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import INTERPRETED, PER_EXAMPLE
from nodegrad.engine.record import record, record2
from nodegrad.engine.registry import defbatch, defjoint, defop
from nodegrad.engine.staged import asarray, call_on
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, ShapeError, user_location
from nodegrad.ops.batching import aligned, elementwise
from nodegrad.ops.elementwise.arithmetic import FAMILY, all_values, binary

__all__ = ["clamp", "maximum", "minimum", "where"]


def _tie_share(x: Any, y: Any, ans: Any) -> Any:
    # Where x == y both inputs share the gradient evenly, as a max over a tie does.
    return np.where(x == y, 0.5, (x == ans) * 1.0)


MAXIMUM = binary(
    "maximum",
    np.maximum,
    lambda g, ans, x, y: g * _tie_share(x, y, ans),
    lambda g, ans, x, y: g * _tie_share(y, x, ans),
    "elementwise maximum; ties split the gradient evenly",
)


MINIMUM = binary(
    "minimum",
    np.minimum,
    lambda g, ans, x, y: g * _tie_share(x, y, ans),
    lambda g, ans, x, y: g * _tie_share(y, x, ans),
    "elementwise minimum; ties split the gradient evenly",
)


def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return out


# The comparisons are numpy's: they order complex values as np.maximum does (by real part,
# then imaginary part), Python complex numbers included.


# The masks are combined with np.logical_and, which batched masks (under vmap) take too.


def _inside(x: Any, lo: Any, hi: Any) -> Any:
    inside = np.ones(np.shape(x), dtype=bool)
    if lo is not None:
        inside = np.logical_and(inside, np.greater_equal(x, lo))
    if hi is not None:
        inside = np.logical_and(inside, np.less_equal(x, hi))
    return inside


def _raised(x: Any, lo: Any, hi: Any) -> Any:
    # Where lo wins: x below it, and lo itself within hi (numpy's clip applies hi last).
    return np.less(x, lo) if hi is None else np.logical_and(np.less(x, lo), np.less_equal(lo, hi))


def _lowered(x: Any, lo: Any, hi: Any) -> Any:
    # Where hi wins: max(x, lo) above it.
    return np.greater(x, hi) if lo is None else np.greater(np.maximum(x, lo), hi)


CLAMP = defop(
    "clamp",
    _clamp,
    lambda g, ans, x, lo, hi: g * _inside(x, lo, hi),
    lambda g, ans, x, lo, hi: g * _raised(x, lo, hi),
    lambda g, ans, x, lo, hi: g * _lowered(x, lo, hi),
    family=FAMILY,
    broadcasts=True,
    doc="x limited to [lo, hi]; at a bound the gradient goes to x",
    batch=elementwise,
)


def _keep_bits(mask: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The mask as integers of ``dtype``'s width: all ones where true, all zeros where not."""
    # Negate the one-byte mask before widening it: the same result from a pass over bytes.
    return np.negative(mask.view(np.int8)).astype(np.dtype(f"i{dtype.itemsize}"))


def _usable(keep: Any, *arrays: Any) -> bool:
    return type(keep) is np.ndarray and all(
        type(x) is np.ndarray and x.dtype.kind == "f" and x.dtype.itemsize == keep.itemsize for x in arrays
    )


def _where(mask: Any, a: Any, b: Any, keep: Any) -> Any:
    if _usable(keep, a, b) and a.dtype == b.dtype:
        if not keep.shape == a.shape == b.shape:
            keep, a, b = np.broadcast_arrays(keep, a, b)
        bits = keep.dtype
        # b ^ ((a ^ b) & keep): a where keep is all ones, b where it is zero; three passes.
        out = np.bitwise_xor(a.view(bits), b.view(bits), out=np.empty(keep.shape, bits))
        np.bitwise_and(out, keep, out=out)
        np.bitwise_xor(out, b.view(bits), out=out)
        return out.view(a.dtype)
    return np.where(mask, a, b)


def _where_rule(wanted: tuple[int, ...], g: Any, ans: Any, mask: Any, a: Any, b: Any, keep: Any) -> tuple[Any, ...]:
    """where(mask, g, 0) for a, where(mask, 0, g) for b: exactly, and for both at once"""
    if not _usable(keep, g):
        return tuple(np.where(mask, g, 0) if k == 1 else np.where(mask, 0, g) for k in wanted)
    # A strided cotangent (one part of a concatenation's, say) is made contiguous once:
    # both passes below are then about twice as fast, and b's share reuses a's work:
    # g & keep for one branch, g ^ (g & keep) for the other.
    dense = np.ascontiguousarray(g).view(keep.dtype)
    kept = np.bitwise_and(dense, keep)
    return tuple((kept if k == 1 else np.bitwise_xor(dense, kept)).view(g.dtype) for k in wanted)


WHERE = defjoint(
    "where",
    _where,
    _where_rule,
    (1, 2),
    family=FAMILY,
    broadcasts=True,
    doc="a where mask is true, else b; the mask carries no gradient",
)


def _where_batch(op: Any, batched: tuple[bool, ...], size: int, mask: Any, a: Any, b: Any, keep: Any) -> Any:
    # Elementwise. The bit pattern ``keep`` is made for an unbatched mask only (where
    # refuses to make one of a batched mask): it lines up with the examples as the mask does.
    mask, a, b = aligned(batched[:3], (mask, a, b))
    return record(op, mask, a, b, None if batched[0] or batched[3] else keep)


defbatch(WHERE, _where_batch)


@guarded
def maximum(x: Any, y: Any) -> Any:
    """Elementwise maximum; where ``x == y`` each input gets half the gradient. Complex
    values are ordered as numpy orders them: by real part, then imaginary part.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.maximum(x, 1.0))(1.0)
    0.5
    """
    return record2(MAXIMUM, x, y)


@guarded
def minimum(x: Any, y: Any) -> Any:
    """Elementwise minimum; where ``x == y`` each input gets half the gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.minimum(x, 5.0))(1.0)
    1.0
    """
    return record2(MINIMUM, x, y)


@guarded
def clamp(x: Any, lo: Any = None, hi: Any = None) -> Any:
    """Limit ``x`` to ``[lo, hi]`` elementwise; ``lo`` and ``hi`` may be arrays or ``None``.
    Complex values are ordered as ``np.clip`` orders them (by real part, then imaginary part).

    Inside the interval and exactly at a bound the gradient flows to ``x``; below ``lo``
    it flows to ``lo``, above ``hi`` to ``hi``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.clamp(x, -1.0, 1.0).sum())(np.array([-2.0, 0.5, 3.0]))
    array([0., 1., 0.])
    """
    if lo is None and hi is None:
        msg = f"clamp: give at least one of lo and hi [called at {user_location()}]"
        raise ShapeError(msg)
    return record(CLAMP, x, lo, hi)


def _as_operand(value: Any) -> Any:
    """``value`` as ``np.result_type`` should see it: Python numbers stay weak (float32 stays
    float32), anything else becomes an array, so ``None`` or ``"f4"`` is not read as a dtype."""
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)) or type(value) in INTERPRETED:
        return value
    return np.asarray(value)


@guarded
def where(mask: Any, a: Any, b: Any) -> Any:
    """``a`` where ``mask`` is true, else ``b``, with numpy broadcasting.

    ``mask`` is a boolean array or a numeric array of 0s and 1s; it carries no gradient.
    Note the gradient of the branch *not* chosen is zero, but if that branch computes a
    NaN or Inf its own gradient can still be non-finite: mask the input, not only the
    output (``where(m, f(where(m, x, safe)), other)``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> m = np.array([True, False])
    >>> ng.grad(lambda x: ng.where(m, x * 3.0, x).sum())(np.array([1.0, 1.0]))
    array([3., 1.])
    """
    mask_value = unwrap(mask)
    batched_mask = type(mask_value) in PER_EXAMPLE
    if not batched_mask:
        mask_value = asarray(mask_value)  # (staged by replay: the call is recorded)
    if mask_value.dtype != bool:
        values = all_values(mask_value)  # every example's, under vmap
        if not np.all((values == 0) | (values == 1)):
            msg = (
                f"where: the mask must be boolean or hold only 0 and 1, got dtype {mask_value.dtype} "
                f"with other values [called at {user_location()}]"
            )
            raise ShapeError(msg)
        mask_value = np.not_equal(mask_value, 0) if batched_mask else mask_value.astype(bool)
    # The bit pattern of the mask, made once here, serves the forward and both VJPs.
    a_value, b_value = unwrap(a), unwrap(b)
    try:
        if type(a_value) is np.ndarray and type(b_value) is np.ndarray and a_value.dtype == b_value.dtype:
            dtype = a_value.dtype  # the common case, without np.result_type's cost
        else:
            dtype = np.result_type(_as_operand(a_value), _as_operand(b_value))
    except TypeError as exc:
        msg = f"where: the branches must be numeric: {exc} [called at {user_location()}]"
        raise DtypeError(msg) from exc
    if dtype.kind not in "biufc":
        msg = f"where: the branches must be numeric, got dtype {dtype} [called at {user_location()}]"
        raise DtypeError(msg)
    keep = call_on(_keep_bits, mask_value, dtype) if dtype.kind == "f" and not batched_mask else None
    return record(WHERE, mask_value, a, b, keep)
