"""``eval_shape``'s shape rules for the ops that compute: the Fourier transforms, the
neural-network ops, scans and segment reductions, ``where``, scipy's weighted
``logsumexp``, and the linear algebra of :mod:`nodegrad.ops.linalg` and
:mod:`nodegrad.scipy.linalg`.

A rule gets the op's arguments as its forward does (shaped values among them: only their
``shape`` and ``dtype`` are read) and returns the result's
:class:`~nodegrad.transforms.shapes.ShapeDtype`. The shape is worked out from the
arguments' shapes, as the forward's numpy or scipy function would make it. The dtype is
the one the op's own forward gives on a tiny stand-in of each array argument
(:func:`_small`: its dtype, its number of axes, every axis cut to length 1, or kept at 0),
so every promotion, single-precision path and empty-array branch of numpy and scipy is
theirs, at a cost that does not depend on the sizes.

Where the dtype or the length of the result depends on the values, the rule raises
:class:`~nodegrad.errors.ShapeOnlyError` naming the op: the eigenvalues and eigenvectors
of a real matrix (real only when every eigenvalue is), the principal square root and
logarithm of a real matrix (complex past the negative real axis) and the roots of a
polynomial (zero coefficients at either end are set aside).
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.registry import REGISTRY
from nodegrad.errors import AxisError, MatrixShapeError, ShapeError, ShapeOnlyError, user_location
from nodegrad.transforms.shapes import Shaped, ShapeDtype, reduced_shape, shape_of, shape_rule, stand_in

__all__: list[str] = []

Rule = Callable[..., ShapeDtype]


# -- stand-ins and probes ------------------------------------------------------------------------


def _dtype(value: Any) -> np.dtype[Any]:
    """The dtype of an array argument (a list is read as numpy reads it)."""
    if isinstance(value, list | tuple):
        return np.asarray(value).dtype
    return np.result_type(stand_in(value))


def _small(value: Any, fill: Any = 1) -> Any:
    """A stand-in of an array argument for a probe: its dtype and number of axes, each axis
    of length 1 (0 where the argument's is 0, so that numpy takes its empty-array path),
    filled with ``fill`` (ones: a 1 x 1 matrix is the identity, which every factorisation
    takes). A Python number stays itself (numpy's weak promotion of it is kept)."""
    if type(value) is Shaped or isinstance(value, np.ndarray | np.generic | list | tuple):
        return np.full(tuple(min(n, 1) for n in shape_of(value)), fill, _dtype(value))
    return value


def _probe(name: str, *args: Any) -> np.dtype[Any]:
    """The dtype the op ``name``'s forward gives on ``args`` (small stand-ins): its own
    promotions, whatever they are. Warnings of a probe's values are not the user's."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.result_type(REGISTRY[name].forward(*args))


def _fail(kind: type[Exception], name: str, what: str) -> Exception:
    return kind(f"{name}: {what} [at {user_location()}]")


def _axis(name: str, axis: Any, ndim: int) -> int:
    """One axis counted from 0, checked against ``ndim`` as numpy checks it."""
    k = operator.index(axis)  # a shaped axis refuses here: its value is unknown
    if not -ndim <= k < ndim:
        raise _fail(AxisError, name, f"axis {k} is out of bounds for an array of dimension {ndim}")
    return k % ndim


def _broadcast(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise _fail(ShapeError, name, f"the shapes {list(shapes)} do not broadcast together") from None


def _size(value: Any) -> int:
    return math.prod(shape_of(value))


def _value_dependent(name: str, why: str) -> ShapeOnlyError:
    msg = f"eval_shape: {name} {why}, which only the values say [at {user_location()}]"
    return ShapeOnlyError(msg)


# -- Fourier transforms ----------------------------------------------------------------------------


def _fourier(name: str, length: Callable[[int], int], default: Callable[[int], int]) -> Rule:
    """The rule of a transform ``op(x, n, axis, norm)`` along one axis: ``n`` points in
    (``default`` of the axis's length when None), ``length(n)`` out; the dtype numpy's
    (complex64 from float32 and complex64, complex128 from double precision)."""

    def rule(x: Any, n: Any, axis: Any, norm: Any) -> ShapeDtype:
        shape = list(shape_of(x))
        k = _axis(name, axis, len(shape))
        points = default(shape[k]) if n is None else operator.index(n)
        if points < 1:
            raise _fail(ShapeError, name, f"invalid number of FFT data points ({points}) specified")
        shape[k] = length(points)
        return ShapeDtype(tuple(shape), _probe(name, _small(x), 1, k, norm))

    return rule


def _same(n: int) -> int:
    return n


shape_rule("fft")(_fourier("fft", _same, _same))
shape_rule("ifft")(_fourier("ifft", _same, _same))
shape_rule("rfft")(_fourier("rfft", lambda n: n // 2 + 1, _same))
shape_rule("irfft")(_fourier("irfft", _same, lambda m: 2 * (m - 1)))


# -- neural-network ops ------------------------------------------------------------------------------


def _along_axis(name: str) -> Rule:
    """``op(x, axis)`` that keeps ``x``'s shape (softmax, log_softmax)."""

    def rule(x: Any, axis: Any) -> ShapeDtype:
        reduced_shape(shape_of(x), axis)  # numpy's refusal of an axis out of bounds
        return ShapeDtype(shape_of(x), _probe(name, _small(x), axis))

    return rule


shape_rule("softmax")(_along_axis("softmax"))
shape_rule("log_softmax")(_along_axis("log_softmax"))


def _cross_entropy(name: str, targets_shape: Callable[[tuple[int, ...]], tuple[int, ...]]) -> Rule:
    """A mean over every example: a number. Integer targets are indices (probed with 0, a
    valid one); probability targets have the logits' shape. ``targets_shape(logits)`` is
    what the targets must broadcast with."""

    def rule(logits: Any, targets: Any) -> ShapeDtype:
        lshape = shape_of(logits)
        if not lshape:
            raise _fail(ShapeError, name, "logits must have a class axis, got a 0-d value")
        _broadcast(name, targets_shape(lshape), shape_of(targets))
        return ShapeDtype((), _probe(name, _small(logits), _small(targets, fill=0)))

    return rule


shape_rule("cross_entropy")(_cross_entropy("cross_entropy", lambda lshape: lshape[:-1]))
shape_rule("cross_entropy_probs")(_cross_entropy("cross_entropy_probs", lambda lshape: lshape))


def _parameter(value: Any, shape: Callable[[int], tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The shape an affine parameter is reshaped to (its entries along one axis), if given."""
    return [] if value is None else [shape(_size(value))]


@shape_rule("layer_norm")
def _layer_norm(x: Any, weight: Any, bias: Any, eps: Any) -> ShapeDtype:
    # The weight and bias are reshaped to (-1,): they line up with the last axis.
    params = [*_parameter(weight, lambda n: (n,)), *_parameter(bias, lambda n: (n,))]
    shape = _broadcast("layer_norm", shape_of(x), *params)
    return ShapeDtype(shape, _probe("layer_norm", _small(x), _small(weight), _small(bias), eps))


@shape_rule("batch_norm")
def _batch_norm(x: Any, weight: Any, bias: Any, eps: Any) -> ShapeDtype:
    # The weight and bias are reshaped to (1, -1, 1, ...): one entry per channel (axis 1).
    ndim = len(shape_of(x))

    def channels(n: int) -> tuple[int, ...]:
        return (1, n) + (1,) * (ndim - 2)

    params = [*_parameter(weight, channels), *_parameter(bias, channels)]
    shape = _broadcast("batch_norm", shape_of(x), *params)
    return ShapeDtype(shape, _probe("batch_norm", _small(x), _small(weight), _small(bias), eps))


# -- scans, segments, selection --------------------------------------------------------------------


def _scan(name: str) -> Rule:
    """``op(x, axis)`` as ``np.cumsum``: the flattened array for axis None, and a 0-d ``x``
    scanned as one of length 1; the dtype numpy's accumulation gives (small integers and
    bools widen to the default integer)."""

    def rule(x: Any, axis: Any) -> ShapeDtype:
        shape = shape_of(x)
        if axis is None:
            out: tuple[int, ...] = (math.prod(shape),)
        else:
            _axis(name, axis, max(len(shape), 1))
            out = shape or (1,)
        return ShapeDtype(out, _probe(name, np.ones(1, _dtype(x)), 0))

    return rule


shape_rule("cumsum")(_scan("cumsum"))
shape_rule("cumprod")(_scan("cumprod"))


@shape_rule("ssm_scan")
def _ssm_scan(a: Any, b: Any, x: Any) -> ShapeDtype:
    shape = _broadcast("ssm_scan", shape_of(a), shape_of(b), shape_of(x))
    if not shape:
        raise _fail(ShapeError, "ssm_scan", "needs a time axis (axis 0), got scalars")
    return ShapeDtype(shape, _probe("ssm_scan", _small(a), _small(b), _small(x)))


def _segment(name: str) -> Rule:
    """``op(data, ids, num)``: ``num`` rows, each shaped like a row of ``data``."""

    def rule(data: Any, ids: Any, num: Any) -> ShapeDtype:
        shape, ids_shape = shape_of(data), shape_of(ids)
        if not shape:
            raise _fail(ShapeError, name, "data must have rows (axis 0), got a 0-d value")
        wanted = ids_shape + shape[1:]  # the rows np.add.at adds into, one per id
        if _broadcast(name, shape, wanted) != wanted:
            raise _fail(ShapeError, name, f"segment ids of shape {ids_shape} do not fit data of shape {shape}")
        count = operator.index(num)  # a shaped count refuses here: its value is unknown
        probe = _probe(name, _small(data), np.zeros(tuple(min(n, 1) for n in ids_shape), np.intp), 1)
        return ShapeDtype((count, *shape[1:]), probe)

    return rule


shape_rule("segment_sum")(_segment("segment_sum"))
shape_rule("segment_max")(_segment("segment_max"))


@shape_rule("where")
def _where(mask: Any, a: Any, b: Any, keep: Any) -> ShapeDtype:
    # keep, the mask's bit pattern, has the mask's shape; the bitwise path gives a's dtype,
    # which is then b's too: np.where's dtype either way (the probe takes np.where's path).
    shapes = [shape_of(v) for v in (mask, a, b, keep) if v is not None]
    dtype = _probe("where", stand_in(mask), stand_in(a), stand_in(b), None)
    return ShapeDtype(_broadcast("where", *shapes), dtype)


@shape_rule("weighted_logsumexp")
def _weighted_logsumexp(a: Any, b: Any, axes: Any, signed: Any) -> ShapeDtype:
    # scipy's logsumexp with keepdims=True (a 0-d operand is read as 1-d); with return_sign
    # the forward returns the logarithm alone, one array.
    base = shape_of(a) if b is None else _broadcast("weighted_logsumexp", shape_of(a), shape_of(b))
    summed = None if axes is None else tuple(operator.index(k) for k in axes)  # None: every axis
    shape = reduced_shape(base or (1,), summed, keepdims=True)
    return ShapeDtype(shape, _probe("weighted_logsumexp", _small(a), _small(b), axes, signed))


# -- matrices --------------------------------------------------------------------------------------


def _matrices(name: str, x: Any, square: bool = True) -> tuple[tuple[int, ...], int, int]:
    """The stack axes and the matrix sizes ``(m, n)`` of ``x`` (the last two axes)."""
    shape = shape_of(x)
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        what = "a square matrix" if square else "a matrix"
        raise _fail(MatrixShapeError, name, f"needs {what} or a stack of them, got shape {shape}")
    return shape[:-2], shape[-2], shape[-1]


def _one_matrix(name: str, shape: Callable[[tuple[int, ...], int, int], tuple[int, ...]], square: bool = True) -> Rule:
    """The rule of ``op(x, *options)`` of one matrix or stack: ``shape(stack, m, n)``, the
    dtype the forward gives on a 1 x 1 stand-in with the same options."""

    def rule(x: Any, *options: Any) -> ShapeDtype:
        stack, m, n = _matrices(name, x, square)
        return ShapeDtype(shape(stack, m, n), _probe(name, _small(x), *options))

    return rule


def _same_matrix(stack: tuple[int, ...], m: int, n: int) -> tuple[int, ...]:
    return (*stack, m, n)


def _stack_only(stack: tuple[int, ...], m: int, n: int) -> tuple[int, ...]:
    return stack


def _one_per_row(stack: tuple[int, ...], m: int, n: int) -> tuple[int, ...]:
    return (*stack, n)


for _name in ("inv", "cholesky", "eigh_vectors", "expm", "read_triangle"):
    shape_rule(_name)(_one_matrix(_name, _same_matrix))
for _name in ("det", "logabsdet", "signdet"):
    shape_rule(_name)(_one_matrix(_name, _stack_only))
shape_rule("eigvalsh")(_one_matrix("eigvalsh", _one_per_row))
shape_rule("lu_factor")(_one_matrix("lu_factor", _same_matrix, square=False))
shape_rule("svdvals")(_one_matrix("svdvals", lambda stack, m, n: (*stack, min(m, n)), square=False))
shape_rule("qr_q")(_one_matrix("qr_q", lambda stack, m, n: (*stack, m, min(m, n)), square=False))
shape_rule("qr_r")(_one_matrix("qr_r", lambda stack, m, n: (*stack, min(m, n), n), square=False))


@shape_rule("svd_u")
def _svd_u(x: Any, full: Any, invariant: Any) -> ShapeDtype:
    stack, m, n = _matrices("svd_u", x, square=False)
    columns = m if full else min(m, n)
    return ShapeDtype((*stack, m, columns), _probe("svd_u", _small(x), full, invariant))


@shape_rule("svd_vh")
def _svd_vh(x: Any, u: Any, full: Any, invariant: Any) -> ShapeDtype:
    # u (a complex matrix's U) is read by the rule alone: the forward is x's SVD.
    stack, m, n = _matrices("svd_vh", x, square=False)
    rows = n if full else min(m, n)
    return ShapeDtype((*stack, rows, n), _probe("svd_vh", _small(x), None, full, invariant))


@shape_rule("pinv")
def _pinv(x: Any, rcond: Any, hermitian: Any) -> ShapeDtype:
    stack, m, n = _matrices("pinv", x, square=bool(hermitian))
    if m * n == 0:
        # numpy returns an empty result in x's own dtype, integers included, without an SVD.
        return ShapeDtype((*stack, n, m), _dtype(x))
    # One tolerance per matrix: it broadcasts into the stack (numpy writes the inverted
    # singular values in place, so it cannot add axes).
    if _broadcast("pinv", stack, shape_of(rcond)) != stack:
        raise _fail(ShapeError, "pinv", f"rcond of shape {shape_of(rcond)} does not fit the stack {stack}")
    return ShapeDtype((*stack, n, m), _probe("pinv", _small(x), stand_in(rcond), hermitian))


def _solve_shape(name: str, a: Any, b: Any) -> tuple[int, ...]:
    """The solution's shape for ``a`` (a stack of N x N) and ``b``: a vector when 1-D (the
    result then has ``a``'s stack), else columns ``(..., N, K)`` whose stack broadcasts
    with ``a``'s, as numpy 2 and scipy read them."""
    stack, rows, _ = _matrices(name, a)
    bshape = shape_of(b)
    if len(bshape) == 1:
        if bshape[0] != rows:
            raise _fail(ShapeError, name, f"a of shape {shape_of(a)} and b of shape {bshape} do not fit")
        return (*stack, rows)
    if len(bshape) < 2 or bshape[-2] != rows:
        raise _fail(ShapeError, name, f"a of shape {shape_of(a)} and b of shape {bshape} do not fit")
    return (*_broadcast(name, stack, bshape[:-2]), rows, bshape[-1])


@shape_rule("solve")
def _solve(a: Any, b: Any) -> ShapeDtype:
    return ShapeDtype(_solve_shape("solve", a, b), _probe("solve", _small(a), _small(b)))


@shape_rule("solve_triangular")
def _solve_triangular(a: Any, b: Any, trans: Any, lower: Any, unit_diagonal: Any) -> ShapeDtype:
    dtype = _probe("solve_triangular", _small(a), _small(b), trans, lower, unit_diagonal)
    return ShapeDtype(_solve_shape("solve_triangular", a, b), dtype)


@shape_rule("solve_banded")
def _solve_banded(ab: Any, b: Any, lower: Any, upper: Any) -> ShapeDtype:
    """The solution has ``b``'s shape (its stack broadcast with the band storage's), in the
    common dtype of ``ab`` and ``b`` (at least float32), as scipy solves in it."""
    abshape, bshape = shape_of(ab), shape_of(b)
    if len(abshape) < 2 or abshape[-2] != int(lower) + int(upper) + 1:
        raise _fail(ShapeError, "solve_banded", f"ab of shape {abshape} is not the band storage of ({lower}, {upper})")
    n = abshape[-1]
    if len(bshape) == 1:
        if bshape[0] != n:
            raise _fail(ShapeError, "solve_banded", f"ab of shape {abshape} and b of shape {bshape} do not fit")
        shape: tuple[int, ...] = (*abshape[:-2], n)
    else:
        if len(bshape) < 2 or bshape[-2] != n:
            raise _fail(ShapeError, "solve_banded", f"ab of shape {abshape} and b of shape {bshape} do not fit")
        shape = (*_broadcast("solve_banded", abshape[:-2], bshape[:-2]), n, bshape[-1])
    return ShapeDtype(shape, np.result_type(_dtype(ab), _dtype(b), np.float32))


@shape_rule("solve_sylvester")
def _solve_sylvester(a: Any, b: Any, q: Any) -> ShapeDtype:
    a_stack, m, _ = _matrices("solve_sylvester", a)
    b_stack, n, _ = _matrices("solve_sylvester", b)
    q_stack, qm, qn = _matrices("solve_sylvester", q, square=False)
    if (qm, qn) != (m, n):
        raise _fail(ShapeError, "solve_sylvester", f"q must be {m} x {n} for a and b, got {qm} x {qn}")
    stack = _broadcast("solve_sylvester", a_stack, b_stack, q_stack)
    return ShapeDtype((*stack, m, n), _probe("solve_sylvester", _small(a), _small(b), _small(q)))


@shape_rule("convolve")
def _convolve(a: Any, v: Any) -> ShapeDtype:
    shapes = shape_of(a), shape_of(v)
    if any(len(s) != 1 or not s[0] for s in shapes):
        raise _fail(ShapeError, "convolve", f"needs two non-empty 1-D arrays, got shapes {shapes[0]} and {shapes[1]}")
    return ShapeDtype((shapes[0][0] + shapes[1][0] - 1,), _probe("convolve", _small(a), _small(v)))


# -- what only the values say ----------------------------------------------------------------------


def _real_only_if(name: str, why: str, shape: Callable[[tuple[int, ...], int, int], tuple[int, ...]]) -> Rule:
    """The rule of an op of a square matrix whose result, for a real matrix, is real or
    complex as its values make it (``why``). A complex matrix's is complex, and so is the
    answer; a real stack with nothing to decide (no matrix, or 1 x 1 ones for
    eigen-decompositions) gets the probe's."""

    def rule(x: Any, *options: Any) -> ShapeDtype:
        stack, m, n = _matrices(name, x)
        if _dtype(x).kind != "c" and not _decided(name, stack, n):
            raise _value_dependent(name, why)
        return ShapeDtype(shape(stack, m, n), _probe(name, _small(x), *options))

    return rule


def _decided(name: str, stack: tuple[int, ...], n: int) -> bool:
    """Whether a real stack's result dtype is fixed by its shape: with no entries at all,
    or for an eigen-decomposition of 1 x 1 matrices (each eigenvalue is the entry, real)."""
    if math.prod(stack) * n == 0:
        return True
    return n == 1 and name in ("eigvals", "eig_vectors")


_EIG_WHY = (
    "of a real matrix is real only when every eigenvalue is (numpy returns a complex array otherwise): its dtype "
    "depends on the values; pass x.astype(complex) for a complex result whatever they are"
)
_BRANCH_WHY = (
    "of a real matrix is real, or complex where an eigenvalue lies on the negative real axis (scipy's principal "
    "branch): its dtype depends on the values; pass x.astype(complex) for a complex result whatever they are"
)
shape_rule("eigvals")(_real_only_if("eigvals", _EIG_WHY, _one_per_row))
shape_rule("eig_vectors")(_real_only_if("eig_vectors", _EIG_WHY, _same_matrix))
shape_rule("sqrtm")(_real_only_if("sqrtm", _BRANCH_WHY, _same_matrix))
shape_rule("logm")(_real_only_if("logm", _BRANCH_WHY, _same_matrix))


@shape_rule("roots")
def _roots(p: Any) -> ShapeDtype:
    raise _value_dependent(
        "roots",
        "gives one root fewer for each leading zero coefficient (np.roots strips them), and real roots only when "
        "every root is real: its length and dtype depend on the values",
    )
