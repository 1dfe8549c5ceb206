"""Matrix products: ``matmul`` (1-D, 2-D and batched, as ``np.matmul``), ``einsum`` and the
products built on it (``tensordot``, ``dot``, ``outer``), and the full discrete
``convolve`` of two vectors.

Every contraction goes through :func:`_contract`, which lets ``np.einsum`` plan the order
(and reach BLAS) once a contraction is large enough to pay for it."""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from nodegrad.engine.guards import composite, guarded
from nodegrad.engine.levels import INTERPRETED, PER_EXAMPLE, RECORDING
from nodegrad.engine.record import record, record2
from nodegrad.engine.registry import Op, defop, same_rule_for_all
from nodegrad.engine.staged import call_on
from nodegrad.engine.traced import unwrap
from nodegrad.errors import AxisError, ShapeError, user_location
from nodegrad.ops.arguments import as_ints
from nodegrad.ops.batching import example_ndim, loop
from nodegrad.ops.elementwise import multiply
from nodegrad.ops.linalg.batching import per_example_rule
from nodegrad.ops.shape import reshape

__all__ = ["convolve", "dot", "einsum", "matmul", "outer", "tensordot"]


def _dense(g: Any) -> Any:
    """``g`` with memory of its own where it is a broadcast view (the cotangent of a sum or
    mean, or a user's np.broadcast_to): numpy's matmul takes a loop several times slower
    than BLAS for an operand with a zero stride (7x on a 50,000-row matrix-vector
    product); a copy costs far less."""
    if type(g) in RECORDING:  # under replay: this function, on the plain value, is one recorded call
        return call_on(_dense, g)
    if type(g) is np.ndarray and g.size > 1 and 0 in g.strides:
        return np.ascontiguousarray(g)
    return g


def _matmul_rule_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    g = _dense(g)
    if y.ndim == 1:
        # out[..., i] = sum_k x[..., i, k] y[k]  (or a dot product when x is 1-D too)
        return g * y if x.ndim == 1 else g[..., None] * y
    if x.ndim == 1:
        return np.matmul(g[..., None, :], np.swapaxes(y, -1, -2))[..., 0, :]
    if np.shape(g)[-1] == 1:
        # A product with one output column: its VJP is an outer product. For 2-D, BLAS
        # (np.dot) writes it row-major several times faster than np.matmul or a broadcast
        # multiply; row-major matters, because the cotangent meets x's other (row-major)
        # arrays downstream, and mixed layouts make every later elementwise pass slow.
        if np.ndim(g) == 2 and np.ndim(y) == 2:
            return np.dot(g, y.T)
        return g * np.swapaxes(y, -1, -2)
    return np.matmul(g, np.swapaxes(y, -1, -2))


def _matmul_rule_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    g = _dense(g)
    if x.ndim == 1:
        return g * x if y.ndim == 1 else x[:, None] * g[..., None, :]
    if y.ndim == 1:
        return np.matmul(np.swapaxes(x, -1, -2), g[..., None])[..., 0]
    if y.ndim == 2 and x.ndim > 2:
        # A batch of x against one matrix: fold the batch into rows instead of building a
        # per-batch product that the unbroadcast would only sum away.
        k, m = np.shape(x)[-1], np.shape(g)[-1]
        return np.matmul(np.reshape(x, (-1, k)).T, np.reshape(g, (-1, m)))
    if np.ndim(x) == 2 and np.ndim(g) == 2:
        return np.dot(x.T, g)  # BLAS directly: a tenth less than np.matmul on a tall x
    return np.matmul(np.swapaxes(x, -1, -2), g)


def _batch_matmul(op: Op, batched: tuple[bool, ...], size: int, x: Any, y: Any) -> Any:
    """One matmul for every example: a vector operand made a row (x) or a column (y), the
    batched operands given size-1 axes after the examples' so that an operand that is not
    batched never lines up with the examples' axis, the added axes dropped again."""
    ndims = [example_ndim(x, batched[0]), example_ndim(y, batched[1])]
    if 0 in ndims:
        msg = f"matmul: an operand is a scalar (0-d) in each example, which matmul refuses [at {user_location()}]"
        raise ShapeError(msg)
    operands = [np.expand_dims(x, -2) if ndims[0] == 1 else x, np.expand_dims(y, -1) if ndims[1] == 1 else y]
    depth = max(max(ndims[0], 2), max(ndims[1], 2)) - 2  # stack axes of an example
    for k, is_batched in enumerate(batched):
        missing = depth - (max(ndims[k], 2) - 2)
        if is_batched and missing:
            operands[k] = np.expand_dims(operands[k], tuple(range(1, 1 + missing)))
    out = record(op, *operands)
    if ndims[1] == 1:  # y's column
        out = out[..., 0]
    if ndims[0] == 1:  # x's row: the last axis but one, or the last one once y's is gone
        out = out[..., 0] if ndims[1] == 1 else out[..., 0, :]
    return out


MATMUL = defop(
    "matmul",
    lambda x, y: np.matmul(_dense(x), _dense(y)),
    _matmul_rule_x,
    _matmul_rule_y,
    family="linalg",
    broadcasts=True,
    doc="matrix product with numpy's 1-D and batch rules",
    batch=_batch_matmul,
)


@guarded
def matmul(x: Any, y: Any) -> Any:
    """Matrix product of ``x`` and ``y`` (``x @ y``), with ``np.matmul``'s rules.

    1-D operands are promoted to a row (left) or a column (right) and the added axis is
    removed again; leading batch axes broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> w = np.ones((2, 3))
    >>> ng.grad(lambda w: ng.sum(ng.matmul(w, np.array([1.0, 2.0, 3.0]))))(w)
    array([[1., 2., 3.],
           [1., 2., 3.]])
    """
    # Constants become arrays once here, so the rules can read .ndim directly (an array of a
    # subclass is left as it is, for the recording to refuse a masked array or a matrix).
    return record2(MATMUL, _operand(x), _operand(y))


def _operand(v: Any) -> Any:
    return v if type(v) in INTERPRETED or isinstance(v, np.ndarray) else np.asarray(v)


# -- einsum and the products built on it ------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """Explicit per-operand letters and output letters, with ``...`` spelled out."""
    spec = subscripts.replace(" ", "")
    inputs_part, arrow, output = spec.partition("->")
    inputs = inputs_part.split(",")
    if len(inputs) != len(shapes):
        msg = f"einsum: {len(inputs)} operand subscripts for {len(shapes)} operands [called at {user_location()}]"
        raise ShapeError(msg)
    used = set(spec) - set(".,->")
    spare = [c for c in _LETTERS if c not in used]
    widths = [len(shape) - len(s.replace("...", "")) for s, shape in zip(inputs, shapes, strict=True)]
    ellipsis = "".join(spare[: max([w for s, w in zip(inputs, widths, strict=True) if "..." in s], default=0)])
    expanded = []
    for s, width, shape in zip(inputs, widths, shapes, strict=True):
        letters = s.replace("...", ellipsis[len(ellipsis) - width :] if width else "") if "..." in s else s
        if len(letters) != len(shape):
            msg = f"einsum: subscripts {s!r} do not fit an operand of shape {shape} [called at {user_location()}]"
            raise ShapeError(msg)
        expanded.append(letters)
    if not arrow:
        counts = {c: "".join(expanded).count(c) for c in set("".join(expanded))}
        output = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
    else:
        output = output.replace("...", ellipsis)
    return expanded, output


def _einsum_rule(k: int, g: Any, ans: Any, spec: tuple[tuple[str, ...], str], *operands: Any) -> Any:
    inputs, output = spec
    mine = inputs[k - 1]
    distinct = "".join(dict.fromkeys(mine))  # a repeated index (a diagonal) once
    others = [(s, op) for j, (s, op) in enumerate(zip(inputs, operands, strict=True)) if j != k - 1]
    reachable = set(output).union(*(set(s) for s, _ in others))
    kept = "".join(c for c in distinct if c in reachable)
    g_k = _contract([output, *(s for s, _ in others)], kept, g, *(op for _, op in others))
    # Indices summed inside this operand alone got no axis in g_k, and a size-1 index that
    # broadcast against the other operands may have come out at size 1: give every index
    # its full size (every entry along a missing one got the same cotangent); the central
    # unbroadcast then sums each back to the operand's own size.
    sizes: dict[str, int] = {}
    for letters, operand in zip(inputs, operands, strict=True):
        for c, n in zip(letters, np.shape(operand), strict=True):
            if sizes.get(c, 1) == 1:  # a size-1 index broadcasts; any other size (0 too) is the index's
                sizes[c] = n
    shape = tuple(np.shape(g_k)[kept.index(c)] if c in kept else 1 for c in distinct)
    g_k = np.broadcast_to(np.reshape(g_k, shape), tuple(sizes[c] for c in distinct))
    return g_k if distinct == mine else _onto_diagonals(g_k, distinct, mine, sizes)


def _onto_diagonals(g: Any, distinct: str, mine: str, sizes: dict[str, int]) -> Any:
    """Spread ``g`` (indexed by ``distinct``) onto the diagonals of an operand whose
    subscripts ``mine`` repeat indices: zero off the diagonal. Each repeat of an index gets
    a fresh letter tied to the first by an identity matrix, so this is one einsum, which
    also records itself when differentiated again."""
    free = iter(c for c in string.ascii_letters if c not in mine)
    spread, ties = [], []
    for position, c in enumerate(mine):
        if c in mine[:position]:
            fresh = next(free)
            spread.append(fresh)
            ties.append(c + fresh)
        else:
            spread.append(c)
    eyes = [np.eye(sizes[tie[0]], dtype=np.result_type(g.dtype)) for tie in ties]
    return _contract([distinct, *ties], "".join(spread), g, *eyes)


# Above this many multiply-adds, np.einsum's optimize=True (a contraction order, and BLAS
# through tensordot where it can) pays for its planning, about 7 µs: 6x faster for a
# (2000, 64) by (64, 64) product. Below it, the plain einsum loop is faster.
_PLANNED = 16_384


def _contract(inputs: list[str], output: str, *operands: Any) -> Any:
    """``np.einsum`` over explicit subscripts, planned when the contraction is large."""
    spec = ",".join(inputs) + "->" + output
    if len(operands) < 2:
        return np.einsum(spec, *operands)
    sizes: dict[str, int] = {}
    for letters, operand in zip(inputs, operands, strict=True):
        sizes.update(zip(letters, np.shape(operand), strict=True))
    return np.einsum(spec, *operands, optimize=math.prod(sizes.values()) >= _PLANNED)


def _batch_einsum(op: Op, batched: tuple[bool, ...], size: int, spec: Any, *operands: Any) -> Any:
    """One einsum for every example: a fresh index for the examples' axis, on each batched
    operand and first in the output."""
    inputs, output = spec
    used = set(output).union(*inputs)
    fresh = next((c for c in _LETTERS if c not in used), None)
    if fresh is None:
        msg = (
            f"einsum: under vmap it needs an index letter for the examples, and all 52 are used [at {user_location()}]"
        )
        raise ShapeError(msg)
    letters = tuple(fresh + s if is_batched else s for s, is_batched in zip(inputs, batched[1:], strict=True))
    return record(op, (letters, fresh + output), *operands)


EINSUM = defop(
    "einsum",
    lambda spec, *operands: _contract(list(spec[0]), spec[1], *operands),
    same_rule_for_all(_einsum_rule),
    family="linalg",
    broadcasts=True,
    doc="Einstein summation (np.einsum), ellipsis broadcasting included",
    batch=_batch_einsum,
)


@guarded
def einsum(subscripts: str, *operands: Any) -> Any:
    """Einstein summation over ``operands``, as ``np.einsum`` (explicit or implicit output,
    ``...`` broadcasting), differentiable in every operand, also one whose subscripts repeat
    an index (a diagonal, ``"ii->i"``). numpy's interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is accepted by ``np.einsum`` on traced values.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a, b = np.ones((2, 3)), np.arange(3.0)
    >>> ng.einsum("ij,j->i", a, b)
    array([3., 3.])
    >>> ng.grad(lambda b: ng.sum(ng.einsum("ij,j->i", a, b)))(b)
    array([2., 2., 2.])
    """
    if not isinstance(subscripts, str):
        msg = f"einsum: subscripts must be a string, got {type(subscripts).__name__} [called at {user_location()}]"
        raise ShapeError(msg)
    shapes = [np.shape(unwrap(op)) for op in operands]
    inputs, output = _parse_einsum(subscripts, shapes)
    return record(EINSUM, (tuple(inputs), output), *operands)


@guarded
@composite
def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """Sum products over the given axes of ``a`` and ``b``, as ``np.tensordot``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    nda, ndb = np.ndim(unwrap(a)), np.ndim(unwrap(b))
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        axes_a, axes_b = list(as_ints("tensordot", "axes", axes[0])), list(as_ints("tensordot", "axes", axes[1]))
    else:
        n = as_ints("tensordot", "axes", axes)
        if len(n) != 1:
            msg = f"tensordot: axes must be an int or a pair of axis lists, got {axes!r} [called at {user_location()}]"
            raise ShapeError(msg)
        axes_a, axes_b = list(range(nda - n[0], nda)), list(range(n[0]))
    out_of_range = [i for i in axes_a if not -nda <= i < nda] + [j for j in axes_b if not -ndb <= j < ndb]
    if out_of_range or len(axes_a) != len(axes_b) or len(axes_a) > min(nda, ndb):
        msg = (
            f"tensordot: axes {axes!r} do not pair up for shapes {np.shape(unwrap(a))} and {np.shape(unwrap(b))} "
            f"[called at {user_location()}]"
        )
        raise (AxisError if out_of_range else ShapeError)(msg)  # numpy: an IndexError for an axis out of range
    letters = iter(_LETTERS)
    sa = [next(letters) for _ in range(nda)]
    sb = [next(letters) for _ in range(ndb)]
    for i, j in zip(axes_a, axes_b, strict=True):
        sb[j % ndb] = sa[i % nda]
    summed = {sa[i % nda] for i in axes_a}
    out = [c for c in sa if c not in summed] + [c for c in sb if c not in summed]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


@guarded
def dot(a: Any, b: Any) -> Any:
    """``np.dot``: a product for scalars, ``matmul`` up to 2-D, and a sum over the last axis
    of ``a`` and the second-to-last of ``b`` beyond.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.dot(x, x))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    nda, ndb = np.ndim(unwrap(a)), np.ndim(unwrap(b))
    if nda == 0 or ndb == 0:
        return multiply(a, b)
    if ndb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([nda - 1], [ndb - 2]))


@guarded
@composite
def outer(a: Any, b: Any) -> Any:
    """The outer product of the flattened ``a`` and ``b``, as ``np.outer``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.outer(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])).shape
    (2, 3)
    """
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


# full[k] = sum_j a[k - j] v[j] is linear in each input; its transpose correlates the
# cotangent with the other input: a's cotangent at i is sum_k g[k] v[k - i], the central
# ("valid") part of np.correlate(g, v), which conjugates its second operand: the rule is the
# transpose, with no conjugate, as every complex rule here, so it is undone. (np.correlate:
# numpy's np.convolve of two long operands takes 3x longer on a reversed view.) Memory
# O(n + m), as the forward; differentiated again, the rule's np.correlate records this op.
# The shapes need no fitting, but a complex cotangent of a real input must lose its
# imaginary part, traced too: broadcasts=True has the central fit_cotangent do that.
def _convolve_rule_a(g: Any, ans: Any, a: Any, v: Any) -> Any:
    """np.correlate(g, conj(v), 'valid')"""
    if type(g) in PER_EXAMPLE or type(v) in PER_EXAMPLE:  # np.correlate takes 1-D arrays: once per example
        return per_example_rule(_convolve_rule_a, g, None, None, v)  # ans and a are not read
    return np.correlate(g, np.conj(v), "valid")


def _convolve_rule_v(g: Any, ans: Any, a: Any, v: Any) -> Any:
    """np.correlate(g, conj(a), 'valid')"""
    if type(g) in PER_EXAMPLE or type(a) in PER_EXAMPLE:  # np.correlate takes 1-D arrays: once per example
        return per_example_rule(_convolve_rule_v, g, None, a, None)  # ans and v are not read
    return np.correlate(g, np.conj(a), "valid")


CONVOLVE = defop(
    "convolve",
    lambda a, v: np.convolve(a, v),
    _convolve_rule_a,
    _convolve_rule_v,
    family="linalg",
    broadcasts=True,
    doc="full discrete convolution of two 1-D arrays (np.convolve); its gradients are correlations, O(n + m) memory",
    # np.convolve (and np.correlate, its rule) take two 1-D arrays, never a stack: once per
    # example, on purpose.
    batch=loop,
)


def convolve(a: Any, v: Any) -> Any:
    """The full discrete convolution of two non-empty 1-D arrays, ``np.convolve(a, v)``
    (length ``len(a) + len(v) - 1``), differentiable in both; real or complex.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.ops.linalg.products import convolve
    >>> convolve(np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0]))
    array([1., 3., 3., 2.])
    >>> ng.grad(lambda a: ng.sum(convolve(a, np.array([1.0, 1.0, 1.0]))))(np.array([1.0, 2.0]))
    array([3., 3.])
    """
    shape_a, shape_v = np.shape(unwrap(a)), np.shape(unwrap(v))
    if len(shape_a) != 1 or len(shape_v) != 1 or not shape_a[0] or not shape_v[0]:
        msg = f"convolve: needs two non-empty 1-D arrays, got shapes {shape_a} and {shape_v}"
        msg += f" [called at {user_location()}]"
        raise ShapeError(msg)
    return record(CONVOLVE, a, v)
