"""numpy's functions on traced values: the function tables and :func:`dispatch_function`.

:data:`FUNCTIONS` maps each differentiable numpy function onto an op, directly
(``np.dot`` to ``ops.dot``), through a thin adapter written here that reads numpy's
signature (``np.sum``'s ``where=``, ``np.einsum``'s interleaved form, ``np.reshape``'s
``order=``, ...), or onto a function built from the ops in
:mod:`nodegrad.numpy_api.composed`, :mod:`~nodegrad.numpy_api.shaping` (splits, stacks,
rotations, ``np.cross``), :mod:`~nodegrad.numpy_api.elementwise` (``np.sinc``,
``np.nan_to_num``, ...) or :mod:`~nodegrad.numpy_api.along_axis` (``np.linspace``,
``np.gradient``, ``np.partition``); :mod:`~nodegrad.numpy_api.statistics` and
:mod:`~nodegrad.numpy_api.sequences` give tables of their own (quantiles, NaN-ignoring
reductions, covariances; selections, ``np.block``, ``np.interp``, ...) that
:data:`FUNCTIONS` takes in, and so does :mod:`~nodegrad.numpy_api.fourier` (the
``np.fft`` transforms). :data:`VALUE_FUNCTIONS` are computed on the forward
values: shapes, indices, comparisons and rounding carry no gradient (a few, such as
``np.imag``, check their arguments first).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.batched import plain, plain_map
from nodegrad.engine.guards import call_atomically
from nodegrad.engine.levels import DIFFERENTIATING, PER_EXAMPLE, Interpreted
from nodegrad.engine.record import record1
from nodegrad.engine.registry import BATCH_RULES, defbatch
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError, user_location
from nodegrad.numpy_api import along_axis, applying, elementwise, linalg_api, shaping, special
from nodegrad.numpy_api.arguments import (
    array_likes,
    forward_values,
    has_sequence,
    no_extras,
    public_name,
    read_keepdims,
)
from nodegrad.numpy_api.composed import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    average,
    convolve,
    diag,
    diagonal,
    diff,
    fftshift,
    full_like,
    hstack,
    ifftshift,
    inner,
    kron,
    matrix_norm,
    nanmean,
    nansum,
    polyval,
    ptp,
    repeat,
    roll,
    tile,
    trace,
    trapezoid,
    tril,
    triu,
    vector_norm,
    vstack,
)
from nodegrad.numpy_api.fourier import TRANSFORMS
from nodegrad.numpy_api.polynomials import POLYNOMIALS
from nodegrad.numpy_api.sequences import SEQUENCES
from nodegrad.numpy_api.statistics import STATISTICS
from nodegrad.ops import linalg, reduce
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.batching import along_axis as along_axis_rule
from nodegrad.ops.pipeline.segments import TAKE_ALONG_AXIS

__all__ = ["FUNCTIONS", "VALUE_FUNCTIONS", "dispatch_function"]


def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    where = kw.pop("where", None)
    no_extras("sum", dtype=dtype, out=out, **kw)
    return ops.sum(a, axis, keepdims) if where is None else ops.masked_sum(a, where, axis, keepdims)


def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    where = kw.pop("where", None)
    no_extras("mean", dtype=dtype, out=out, **kw)
    return ops.mean(a, axis, keepdims) if where is None else ops.masked_mean(a, where, axis, keepdims)


def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        no_extras(name, out=out, **kw)
        return fn(a, axis, keepdims)

    return reduce


def _var(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # numpy's signature: (a, axis, dtype, out, ddof, keepdims, *, where, mean, correction).
    def spread(
        a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, **kw: Any
    ) -> Any:
        correction = kw.pop("correction", np._NoValue)
        if correction is not np._NoValue:
            if ddof != 0:
                msg = f"np.{name}: ddof and correction can't be provided simultaneously [called at {user_location()}]"
                raise ArgumentError(msg)
            ddof = correction
        no_extras(name, dtype=dtype, out=out, **kw)
        return fn(a, axis, ddof, read_keepdims(keepdims))

    return spread


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, **kw: Any) -> Any:
    no_extras("concatenate", out=out, **kw)
    if axis is None:
        return ops.cat([ops.ravel(a) for a in arrays], 0)
    return ops.cat(arrays, axis)


def _stack(arrays: Any, axis: int = 0, out: Any = None, **kw: Any) -> Any:
    no_extras("stack", out=out, **kw)
    return ops.stack(arrays, axis)


def _where(condition: Any, *branches: Any) -> Any:
    if not branches:
        return np.nonzero(plain(condition))
    if len(branches) != 2:
        msg = f"np.where: either both or neither of x and y should be given [called at {user_location()}]"
        raise ShapeError(msg)
    # numpy reads any nonzero condition as true (ng.where itself insists on masks); a
    # batched condition stays batched (each example's own mask).
    mask = plain_map(lambda c: np.asarray(c).astype(bool, copy=False), condition)
    return ops.where(mask, *branches)


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    no_extras("take", out=out, mode=None if mode == "raise" else mode)
    # np.take without an axis indexes the flattened array.
    return ops.gather(ops.ravel(a), indices, 0) if axis is None else ops.gather(a, indices, axis)


def _einsum(subscripts: Any, *operands: Any, optimize: Any = False, **kw: Any) -> Any:
    no_extras("einsum", **kw)  # `optimize` only changes the order of the contraction
    if not isinstance(subscripts, str):  # the interleaved form: a, [0, 1], b, [1, 2], [0, 2]
        subscripts, operands = _from_sublists((subscripts, *operands))
    return ops.einsum(subscripts, *operands)


def _from_sublists(args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """numpy's interleaved einsum arguments as a subscripts string and the operands."""

    def letters(sublist: Any) -> str:
        try:
            return "".join("..." if i is Ellipsis else string.ascii_letters[i] for i in sublist)
        except (TypeError, IndexError):
            msg = f"np.einsum: {sublist!r} is not a list of axis labels 0-51 [called at {user_location()}]"
            raise ShapeError(msg) from None

    output = letters(args[-1]) if len(args) % 2 else None
    pairs = args[: len(args) - len(args) % 2]
    subscripts = ",".join(letters(sub) for sub in pairs[1::2])
    return (subscripts if output is None else f"{subscripts}->{output}"), tuple(pairs[0::2])


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    # hermitian=True only picks numpy's algorithm for a symmetric a: the same factorisation
    # (up to the signs of the singular vectors, which are arbitrary either way).
    return ops.svd(a, full_matrices) if compute_uv else ops.svdvals(a)


def _pinv(a: Any, rcond: Any = None, hermitian: bool = False, **kw: Any) -> Any:
    rtol = kw.pop("rtol", np._NoValue)
    no_extras("linalg.pinv", **kw)
    return ops.pinv(a, rcond, hermitian, rtol=rtol)


def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Any:
    no_extras("sort", order=order, **kw)
    return ops.sort(ops.ravel(a), 0) if axis is None else ops.sort(a, axis)


def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    # axis=None: numpy treats the array as flattened first.
    if axis is None:
        arr, axis = ops.ravel(arr), 0
    if type(unwrap(indices)) in PER_EXAMPLE:
        return _take_along_each(arr, unwrap(indices), axis)
    return ops.take_along_axis(arr, indices, axis)


def _take_along_each(x: Any, indices: Interpreted, axis: Any) -> Any:
    """``np.take_along_axis`` with indices of their own per example (inside ``vmap``): the
    index that reads them, an ``arange`` on each other axis, selected by one getitem."""
    shape = np.shape(unwrap(x))
    axis = normalize_axis("np.take_along_axis", axis, len(shape))[0]  # type: ignore[index]
    if indices.dtype.kind not in "iu" or indices.ndim != len(shape):
        msg = (
            f"np.take_along_axis: indices need integers and {len(shape)} dimensions like x, got "
            f"{indices.dtype}{list(indices.shape)} [called at {user_location()}]"
        )
        raise ShapeError(msg)
    index = tuple(
        indices if k == axis else np.arange(n).reshape([n if j == k else 1 for j in range(len(shape))])
        for k, n in enumerate(shape)
    )
    return ops.getitem(x, index)


# take_along_axis is run for every example at once by shifting its axis past the examples'
# (the pipeline family defines the op; its rule is the common one, set here unless it has one).
if TAKE_ALONG_AXIS.name not in BATCH_RULES:
    defbatch(TAKE_ALONG_AXIS, along_axis_rule(2, data=(0, 1)))


def _reshape(a: Any, shape: Any = None, order: str = "C", **kw: Any) -> Any:
    shape = kw.pop("newshape", shape)
    no_extras("reshape", copy=kw.pop("copy", None), **kw)
    if order == "F":  # column-major: reverse the axes, reshape, reverse back
        target = (shape,) if isinstance(shape, int) else tuple(shape)
        return ops.transpose(ops.reshape(ops.transpose(a), target[::-1]))
    no_extras("reshape", order=None if order in ("C", "A") else order)
    return ops.reshape(a, shape)


def _ravel(a: Any, order: str = "C") -> Any:
    return _reshape(a, -1, order=order)


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kw: Any) -> Any:
    no_extras("clip", out=out, **kw)
    return ops.clamp(a, a_min, a_max)


def _cumulative(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def scan(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        no_extras(name, dtype=dtype, out=out)
        return fn(a, axis)

    return scan


FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: _sum,
    np.mean: _mean,
    np.max: _reduction("max", ops.max),
    np.amax: _reduction("amax", ops.max),
    np.min: _reduction("min", ops.min),
    np.amin: _reduction("amin", ops.min),
    np.prod: lambda a, axis=None, dtype=None, out=None, keepdims=False, **kw: _reduction("prod", ops.prod)(
        a, axis, out, keepdims, dtype=dtype, **kw
    ),
    np.var: _var("var", ops.var),
    np.std: _var("std", ops.std),
    np.linalg.norm: ops.norm,
    np.cumsum: _cumulative("cumsum", ops.cumsum),
    np.cumprod: _cumulative("cumprod", ops.cumprod),
    np.dot: ops.dot,
    np.outer: ops.outer,
    np.matmul: ops.matmul,
    np.einsum: _einsum,
    np.tensordot: ops.tensordot,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.split: ops.split,
    np.where: _where,
    np.clip: _clip,
    np.take: _take,
    np.take_along_axis: _take_along_axis,
    np.sort: _sort,
    np.reshape: _reshape,
    np.transpose: ops.transpose,
    np.ravel: _ravel,
    np.moveaxis: ops.moveaxis,
    np.swapaxes: ops.swapaxes,
    np.expand_dims: ops.expand_dims,
    np.squeeze: ops.squeeze,
    np.broadcast_to: lambda array, shape, subok=False: ops.broadcast_to(array, shape),
    np.pad: ops.pad,
    np.flip: ops.flip,
    np.copy: lambda a, **kw: a,  # values are never written in place: a copy is the value itself
    np.linalg.svd: _svd,
    np.atleast_1d: atleast_1d,
    np.atleast_2d: atleast_2d,
    np.atleast_3d: atleast_3d,
    np.hstack: hstack,
    np.vstack: vstack,
    np.diff: diff,
    np.roll: roll,
    np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift,
    np.repeat: repeat,
    np.tile: tile,
    np.tril: tril,
    np.triu: triu,
    np.diagonal: diagonal,
    np.trace: trace,
    np.diag: diag,
    np.average: average,
    np.inner: inner,
    np.nansum: nansum,
    np.nanmean: nanmean,
    np.ptp: ptp,
    np.kron: kron,
    np.polyval: polyval,
    np.convolve: convolve,
    np.linalg.inv: ops.inv,
    np.linalg.cholesky: ops.cholesky,
    np.linalg.eigvalsh: ops.eigvalsh,
    np.linalg.solve: ops.solve,
    np.linalg.det: ops.det,
    np.linalg.slogdet: ops.slogdet,
    np.linalg.eigh: ops.eigh,
    np.linalg.eig: ops.eig,
    np.linalg.eigvals: ops.eigvals,
    np.linalg.qr: ops.qr,
    np.linalg.pinv: _pinv,
    np.linalg.lstsq: ops.lstsq,
    np.linalg.matrix_power: ops.matrix_power,
    np.linalg.tensorsolve: linalg.tensorsolve,
    np.linalg.tensorinv: linalg.tensorinv,
    np.full_like: full_like,
    np.array_split: shaping.array_split,
    np.hsplit: shaping.hsplit,
    np.vsplit: shaping.vsplit,
    np.dsplit: shaping.dsplit,
    np.column_stack: shaping.column_stack,
    np.dstack: shaping.dstack,
    np.append: shaping.append,
    np.select: shaping.select,
    np.rot90: shaping.rot90,
    np.fliplr: shaping.fliplr,
    np.flipud: shaping.flipud,
    np.rollaxis: shaping.rollaxis,
    np.cross: shaping.cross,
    np.sinc: elementwise.sinc,
    np.real: ops.real,
    np.imag: ops.imag,
    np.angle: ops.angle,
    np.real_if_close: elementwise.real_if_close,
    np.nan_to_num: elementwise.nan_to_num,
    np.linspace: along_axis.linspace,
    np.gradient: along_axis.gradient,
    np.partition: along_axis.partition,
    np.linalg.multi_dot: linalg_api.multi_dot,
    np.linalg.cond: linalg_api.cond,
}
# Refused on traced values with a reason other than a missing rule (none at present).
_REFUSED: dict[Callable[..., Any], Callable[..., Any]] = {}
# Added in numpy 2.0: mapped where this numpy has them.
_NUMPY_2_FUNCTIONS = {
    "trapezoid": trapezoid,
    "svdvals": ops.svdvals,
    "vector_norm": vector_norm,
    "matrix_norm": matrix_norm,
    "matrix_transpose": linalg_api.matrix_transpose,
}
FUNCTIONS.update(
    {
        f: impl
        for name, impl in _NUMPY_2_FUNCTIONS.items()
        if (f := getattr(np.linalg, name, None) or getattr(np, name, None)) is not None
    }
)
# numpy.linalg's array-API functions (numpy 2.0): objects of their own, not the top-level ones.
_LINALG_API = ("matmul", "outer", "tensordot", "trace", "diagonal", "cross", "vecdot")
FUNCTIONS.update({f: getattr(linalg_api, name) for name in _LINALG_API if (f := getattr(np.linalg, name, None))})
if hasattr(np, "matrix_transpose"):
    FUNCTIONS[np.matrix_transpose] = linalg_api.matrix_transpose
FUNCTIONS.update(POLYNOMIALS)
FUNCTIONS.update({np.apply_along_axis: applying.apply_along_axis, np.apply_over_axes: applying.apply_over_axes})
FUNCTIONS.update(STATISTICS)
FUNCTIONS.update(SEQUENCES)
FUNCTIONS.update(TRANSFORMS)
FUNCTIONS[np.i0] = special.i0  # through scipy's Bessel functions, with nodegrad[scipy]

# Functions whose results carry no gradient: computed on the forward values.
VALUE_FUNCTIONS = {
    np.shape, np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.lexsort, np.nonzero, np.count_nonzero,
    np.isclose, np.allclose, np.array_equal, np.zeros_like, np.ones_like, np.empty_like,
    np.round, np.around, np.isfinite, np.isnan, np.isinf, np.result_type,
    np.iscomplexobj, np.isrealobj, np.iscomplex, np.isreal,
}  # fmt: skip


# np.sum(x) and np.mean(x) of one traced array, the commonest calls of all (a loss): one
# node over every axis, recorded directly.
_WHOLE_REDUCTIONS = {np.sum: reduce.SUM, np.mean: reduce.MEAN}


def dispatch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the numpy function ``func`` on arguments of which at least one is traced."""
    if not kwargs and len(args) == 1 and func in _WHOLE_REDUCTIONS and type(args[0]) in DIFFERENTIATING:
        return record1(_WHOLE_REDUCTIONS[func], args[0], None, False)
    if func in VALUE_FUNCTIONS:
        return func(*forward_values(args), **forward_values(kwargs))
    impl = FUNCTIONS.get(func) or _REFUSED.get(func)
    if impl is None:
        msg = f"{public_name(func)} has no gradient rule for traced values [called at {user_location()}]"
        raise NoGradientError(msg)
    if has_sequence(args, kwargs):
        # A list or tuple holding traced values where numpy takes an array-like
        # (np.sum([x, 2 * x])) becomes one traced array before the function reads it: read
        # as a list, it could even be wrong without an error (a list times 2 repeats it).
        args, kwargs = array_likes(func, args, kwargs)
    try:
        return call_atomically(impl, args, kwargs)
    except DtypeError as exc:
        name = public_name(func)
        if name in str(exc):
            raise
        # An op the function is built from refused a dtype (a cast of complex values to
        # real ones, where numpy would warn, say): say which numpy function it was.
        raise DtypeError(f"{name}: {exc}") from exc
