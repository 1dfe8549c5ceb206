"""numpy's dispatch protocols on traced values: ``np.exp(x)``, ``np.sum(x, axis=0)``, ...

``nodegrad.numpy_api`` has four tables. Every key of :data:`UFUNCS` and :data:`FUNCTIONS`
(differentiable) has a *spec* here: a hypothesis strategy drawing valid calls, written as
plain numpy code, with inputs in a differentiable domain and the keyword arguments numpy
users pass. For each spec, the call on traced values (inside :func:`nodegrad.vjp`) gives
numpy's own result on plain arrays and its gradient passes
:func:`nodegrad.testing.check_grads`. A key without a spec fails
``test_every_dispatched_function_has_a_spec``: the tables are the list.

Every :data:`VALUE_UFUNCS` / :data:`VALUE_FUNCTIONS` entry gives numpy's plain result and
records nothing; anything else raises :class:`NoGradientError` naming the function and
leaves the arena as it was; ``np.asarray(traced)`` raises :class:`ArenaError`. The headline
test differentiates ``tests/plain_numpy_model.py``, which imports numpy only.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import assume, given, note

import nodegrad as ng
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import ArenaError, ArgumentError, DtypeError, NoGradientError, OpIndexError, ShapeError
from nodegrad.numpy_api import FUNCTIONS, UFUNCS, VALUE_FUNCTIONS, VALUE_UFUNCS
from nodegrad.numpy_api.special import scipy_ufuncs
from nodegrad.testing import check_grads
from tests import plain_numpy_model
from tests.ops.harness import diff_mask, draw_operand, well_separated_matrices
from tests.ops.specs_linalg import eig_matrices, polynomials
from tests.strategies import (
    BOUND,
    away_from_zero,
    axes,
    broadcastable_shapes,
    complex_arrays,
    float_arrays,
    floats,
    grid,
    separated_arrays,
    shapes,
    stretchable_to,
)


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn call: ``call`` is plain numpy code taking ``operands``.

    It runs once on plain arrays (numpy's own result) and once with the operands marked
    in ``diff`` traced. ``desc`` says what was drawn (keyword arguments, shapes).
    """

    call: Callable[..., Any]
    operands: tuple[Any, ...]
    diff: tuple[bool, ...]
    desc: str

    @property
    def args(self) -> tuple[Any, ...]:
        """The differentiated operands."""
        return tuple(v for v, d in zip(self.operands, self.diff, strict=True) if d)

    def of_args(self) -> Callable[..., Any]:
        """``call`` as a function of the differentiated operands, the others fixed."""

        def f(*args: Any) -> Any:
            it = iter(args)
            return self.call(*(next(it) if d else v for v, d in zip(self.operands, self.diff, strict=True)))

        return f


def _name(f: Any) -> str:
    """``np.exp``, ``np.linalg.norm``: how a user spells the function."""
    module = "numpy" if isinstance(f, np.ufunc) else getattr(f, "__module__", "numpy")
    return f"{module.replace('numpy', 'np', 1)}.{f.__name__}"


def _kw(**kwargs: Any) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not _OMIT}


_OMIT = object()  # "do not pass this keyword argument at all"


def _maybe(draw: st.DrawFn, strategy: st.SearchStrategy[Any]) -> Any:
    """A drawn value, or :data:`_OMIT` (numpy's default)."""
    return draw(st.one_of(st.just(_OMIT), strategy))


@st.composite
def _signed_separated(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """Entries whose magnitudes are distinct and at least 0.1: no ties in ``|x|``, no zeros."""
    size = math.prod(shape)
    magnitudes = draw(float_arrays((size,), elements=grid(0.1, BOUND, step=0.01), unique=True))
    signs = draw(hnp.arrays(np.float64, (size,), elements=st.sampled_from([-1.0, 1.0])))
    return (magnitudes * signs).reshape(shape)


def _reduced_count(shape: tuple[int, ...], axis: Any) -> int:
    if axis is None:
        return math.prod(shape)
    picked = (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in picked)


# -- ufunc specs ---------------------------------------------------------------------------------

_ANY = floats()
_POSITIVE = floats(0.2, BOUND)
_UNIT = floats(-0.9, 0.9)

UNARY: dict[np.ufunc, st.SearchStrategy[float]] = {
    np.negative: _ANY,
    np.positive: _ANY,
    np.square: _ANY,
    np.sqrt: _POSITIVE,
    np.cbrt: away_from_zero(0.2),
    np.reciprocal: away_from_zero(0.3),
    np.absolute: away_from_zero(),
    np.fabs: away_from_zero(),
    np.exp: _ANY,
    np.exp2: _ANY,
    np.expm1: _ANY,
    np.log: _POSITIVE,
    np.log2: _POSITIVE,
    np.log10: _POSITIVE,
    np.log1p: floats(-0.8, BOUND),
    np.sin: _ANY,
    np.cos: _ANY,
    np.tan: floats(-1.3, 1.3),
    np.arcsin: _UNIT,
    np.arccos: _UNIT,
    np.arctan: _ANY,
    np.sinh: _ANY,
    np.cosh: _ANY,
    np.tanh: _ANY,
    np.arcsinh: _ANY,
    np.arccosh: floats(1.2, BOUND),
    np.arctanh: _UNIT,
    np.deg2rad: _ANY,
    np.rad2deg: _ANY,
    np.radians: _ANY,
    np.degrees: _ANY,
    np.conjugate: _ANY,  # the identity on real values
}

# remainder/fmod jump where x / y is an integer: y is a multiple of 0.1 and x sits half-way
# between multiples of 0.01, so x is at least 0.005 away from every multiple of y.
_DIVISOR = st.tuples(st.sampled_from([-1.0, 1.0]), st.integers(3, 25)).map(lambda t: t[0] * t[1] / 10)
BINARY: dict[np.ufunc, tuple[st.SearchStrategy[float], st.SearchStrategy[float]]] = {
    np.add: (_ANY, _ANY),
    np.subtract: (_ANY, _ANY),
    np.multiply: (_ANY, _ANY),
    np.divide: (_ANY, away_from_zero(0.5)),
    np.power: (_POSITIVE, _ANY),
    np.logaddexp: (_ANY, _ANY),
    np.logaddexp2: (_ANY, _ANY),
    np.arctan2: (away_from_zero(0.3), _ANY),  # arctan2(y, x) jumps across y = 0 where x < 0
    np.hypot: (away_from_zero(0.3), _ANY),
    np.maximum: (grid(), grid(offset=0.005)),
    np.minimum: (grid(), grid(offset=0.005)),
    np.fmax: (grid(), grid(offset=0.005)),
    np.fmin: (grid(), grid(offset=0.005)),
    np.remainder: (grid(offset=0.005), _DIVISOR),
    np.fmod: (grid(offset=0.005), _DIVISOR),
    np.copysign: (away_from_zero(), away_from_zero()),  # |x| has a kink at 0, the sign of y jumps there
    np.float_power: (_POSITIVE, _ANY),
}


@st.composite
def _unary_cases(draw: st.DrawFn, ufunc: np.ufunc) -> Case:
    x = draw_operand(draw, draw(shapes()), UNARY[ufunc])
    return Case(lambda x: ufunc(x), (x,), (True,), f"{_name(ufunc)}(x), shape {np.shape(x)}")


@st.composite
def _binary_cases(draw: st.DrawFn, ufunc: np.ufunc) -> Case:
    ex, ey = BINARY[ufunc]
    shape_x, shape_y = draw(broadcastable_shapes(2))
    x, y = draw_operand(draw, shape_x, ex), draw_operand(draw, shape_y, ey)
    diff = draw(diff_mask(2))
    return Case(lambda x, y: ufunc(x, y), (x, y), diff, f"{_name(ufunc)}(x, y), shapes {shape_x} {shape_y}")


@st.composite
def _matmul_cases(draw: st.DrawFn, fn: Any) -> Case:
    """Vectors, matrices and broadcast stacks of matrices, in every combination."""
    m, n, k = (draw(st.integers(1, 4)) for _ in range(3))
    batch_a, batch_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    kind_a, kind_b = (
        draw(st.sampled_from(["vector", "matrix", "stack"])),
        draw(st.sampled_from(["vector", "matrix", "stack"])),
    )
    shape_a = {"vector": (n,), "matrix": (m, n), "stack": (*batch_a, m, n)}[kind_a]
    shape_b = {"vector": (n,), "matrix": (n, k), "stack": (*batch_b, n, k)}[kind_b]
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    diff = draw(diff_mask(2))
    return Case(lambda a, b: fn(a, b), (a, b), diff, f"{_name(fn)} of {shape_a} and {shape_b}")


@st.composite
def _ldexp_cases(draw: st.DrawFn, fn: Any) -> Case:
    # x * 2**n: the integer exponent n is data, never differentiated.
    shape_x, shape_n = draw(broadcastable_shapes(2))
    x = draw_operand(draw, shape_x)
    n: Any = draw(hnp.arrays(draw(st.sampled_from([np.int64, np.int32])), shape_n, elements=st.integers(-40, 12)))
    if shape_n == () and draw(st.booleans()):
        n = int(n)
    return Case(lambda x: fn(x, n), (x,), (True,), f"np.ldexp(x {shape_x}, n={n!r})")


def _numpy_ufunc(name: str) -> Any:
    """``np.<name>`` if this numpy has it as a ufunc (vecdot: numpy 2.0; matvec, vecmat: 2.2)."""
    found = getattr(np, name, None)
    return found if isinstance(found, np.ufunc) else None


@st.composite
def _vecdot_cases(draw: st.DrawFn, fn: Any) -> Case:
    # The vectors lie along `axis` (the last by default) of each operand; the other axes broadcast.
    n = draw(st.integers(1, 4))
    batch_a, batch_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    depth = draw(st.integers(1, 1 + min(len(batch_a), len(batch_b))))  # the vectors along axis -depth
    place = lambda batch: (*batch[: len(batch) - depth + 1], n, *batch[len(batch) - depth + 1 :])
    shape_a, shape_b = place(batch_a), place(batch_b)
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    kwargs = _kw(axis=-depth if depth > 1 or draw(st.booleans()) else _OMIT)
    return Case(
        lambda a, b: fn(a, b, **kwargs), (a, b), draw(diff_mask(2)), f"np.vecdot({shape_a}, {shape_b}, **{kwargs})"
    )


@st.composite
def _matvec_cases(draw: st.DrawFn, fn: Any) -> Case:
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch_a, batch_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    if fn is _numpy_ufunc("matvec"):  # matrices (..., m, n) times vectors (..., n)
        shape_a, shape_b = (*batch_a, m, n), (*batch_b, n)
    else:  # vecmat: vectors (..., n) times matrices (..., n, m)
        shape_a, shape_b = (*batch_a, n), (*batch_b, n, m)
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    return Case(lambda a, b: fn(a, b), (a, b), draw(diff_mask(2)), f"{_name(fn)} of {shape_a} and {shape_b}")


@st.composite
def _complex_entrywise_cases(draw: st.DrawFn, fn: Any) -> Case:
    # np.sign, np.imag and np.angle have gradients of complex values only (of real ones they
    # are piecewise constant): values off the real axis, where angle jumps (its negative half).
    shape = draw(shapes())
    z = draw(complex_arrays(shape, real=floats(), imag=away_from_zero(0.2)))
    kwargs = _kw(deg=_maybe(draw, st.booleans())) if fn is np.angle else {}
    return Case(lambda z: fn(z, **kwargs), (z,), (True,), f"{_name(fn)}(z {shape}, **{kwargs})")


UFUNC_SPECS: dict[np.ufunc, st.SearchStrategy[Case]] = {
    **{u: _unary_cases(u) for u in UNARY},
    np.sign: _complex_entrywise_cases(np.sign),
    **{u: _binary_cases(u) for u in BINARY},
    np.matmul: _matmul_cases(np.matmul),
    np.ldexp: _ldexp_cases(np.ldexp),
}
for _make, _names in ((_vecdot_cases, ("vecdot",)), (_matvec_cases, ("matvec", "vecmat"))):
    for _ufunc in filter(None, map(_numpy_ufunc, _names)):
        UFUNC_SPECS[_ufunc] = _make(_ufunc)

# -- function specs ----------------------------------------------------------------------------------

FUNCTION_SPECS: dict[Any, st.SearchStrategy[Case]] = {}


def spec(*funcs: Any) -> Callable[[Callable[..., st.SearchStrategy[Case]]], Any]:
    """Register ``make(func)`` as the spec of each of ``funcs``."""

    def register(make: Callable[..., st.SearchStrategy[Case]]) -> Any:
        for func in funcs:
            FUNCTION_SPECS[func] = make(func)
        return make

    return register


@spec(np.sum, np.mean)
@st.composite
def _sum_mean_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes())
    x = draw_operand(draw, shape)
    axis = draw(axes(len(shape)))
    keepdims = _maybe(draw, st.booleans())
    where = _OMIT
    if draw(st.booleans()):
        mask = draw(hnp.arrays(bool, draw(stretchable_to(shape))))
        full = np.broadcast_to(mask, shape)
        # np.mean over an empty selection is NaN with a warning: keep every slice non-empty.
        if fn is np.sum or np.all(np.any(full, axis=axis)):
            where = mask
    kwargs = _kw(axis=axis, keepdims=keepdims, where=where)
    desc = f"{_name(fn)}(x {shape}, {', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), desc)


@spec(np.max, np.amax, np.min, np.amin)
@st.composite
def _extremum_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes())
    x = draw(separated_arrays(shape))  # no ties: the extremum is unique
    axis = draw(axes(len(shape)))
    keepdims = _maybe(draw, st.booleans())
    positional = draw(st.booleans())
    if positional:
        return Case(lambda x: fn(x, axis), (x,), (True,), f"{_name(fn)}(x {shape}, {axis!r})")
    kwargs = _kw(axis=axis, keepdims=keepdims)
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.prod)
@st.composite
def _prod_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Up to two exact zeros: the gradient of a product with a zero factor is still defined.
    # Small groups of small entries: with two zeros the true gradient is 0, and the central
    # difference's higher-order terms (products of the other entries) must stay below atol.
    shape = draw(shapes(max_side=3))
    x = draw_operand(draw, shape, floats(-1.2, 1.2))
    if isinstance(x, np.ndarray):
        for _ in range(draw(st.integers(0, 2)) if x.size else 0):
            x.flat[draw(st.integers(0, x.size - 1))] = 0.0
    elif draw(st.booleans()):
        x = 0.0
    kwargs = _kw(axis=draw(axes(len(shape))), keepdims=_maybe(draw, st.booleans()))
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"np.prod(x {shape}, **{kwargs})")


@spec(np.var, np.std)
@st.composite
def _spread_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, min_side=2))
    x = draw(separated_arrays(shape))  # distinct entries: a spread over two or more is positive
    axis = draw(axes(len(shape)).filter(lambda a: a != ()))
    ddof = _maybe(draw, st.sampled_from([0, 1]))
    keepdims = _maybe(draw, st.booleans())
    assert _reduced_count(shape, axis) >= 2
    if draw(st.booleans()):  # numpy's positional order: a, axis, dtype, out, ddof, keepdims
        args = (axis, None, None, 0 if ddof is _OMIT else ddof, False if keepdims is _OMIT else keepdims)
        return Case(lambda x: fn(x, *args), (x,), (True,), f"{_name(fn)}(x {shape}, *{args})")
    kwargs = _kw(axis=axis, ddof=ddof, keepdims=keepdims)
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


def _line_sums_are_separated(x: np.ndarray, order: Any, axis: tuple[int, int]) -> bool:
    """Whether the column (ord 1, -1) or row (inf, -inf) sums of ``|x|`` that a matrix norm
    takes the max/min of have a unique extremum, at least 0.01 from the next."""
    rows, cols = axis
    by_column = order in (1, -1)
    sums = np.sum(np.abs(x), axis=rows if by_column else cols, keepdims=True)
    lines = np.sort(np.moveaxis(sums, cols if by_column else rows, -1), axis=-1)
    if lines.shape[-1] < 2:
        return True
    gap = lines[..., 1] - lines[..., 0] if order in (-1, -np.inf) else lines[..., -1] - lines[..., -2]
    return bool(np.all(gap >= 0.01))


@spec(np.linalg.norm)
@st.composite
def _norm_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(_signed_separated(shape))  # no zeros (|x|, |x|**p), no ties in |x| (inf norms)
    ndim = len(shape)
    if ndim >= 2 and draw(st.booleans()):  # a matrix norm: Frobenius, induced, or of singular values
        pair = draw(st.permutations(range(-ndim, 0)).map(lambda p: tuple(p[:2])))
        axis = draw(st.sampled_from([pair, None] if ndim == 2 else [pair]))
        order = draw(st.sampled_from([None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"]))
        if order in (2, -2, "nuc"):  # simple, nonzero singular values: smooth where drawn
            rows, cols = (-2, -1) if axis is None else axis
            others = [a for a in range(ndim) if a not in (rows % ndim, cols % ndim)]
            x = np.moveaxis(
                well_separated_matrices(draw, (*(shape[a] for a in others), shape[rows], shape[cols])),
                (-2, -1),
                (rows, cols),
            )
        elif order not in (None, "fro"):  # the max/min line sum of |x| is unique: no kink
            assume(_line_sums_are_separated(x, order, (-2, -1) if axis is None else axis))
    else:  # a vector norm; ord 0 counts the nonzeros (gradient 0), numpy integers work as ord
        axis = draw(axes(ndim, single=True)) if ndim > 1 or draw(st.booleans()) else None
        order = draw(st.sampled_from([None, 1, 2, 3, 0.5, -1, 0, np.int64(3), np.inf, -np.inf]))
    keepdims = _maybe(draw, st.booleans())
    if order is None and draw(st.booleans()):
        kwargs = _kw(axis=axis, keepdims=keepdims)
        return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"np.linalg.norm(x {shape}, **{kwargs})")
    kwargs = _kw(axis=axis, keepdims=keepdims)
    return Case(lambda x: fn(x, order, **kwargs), (x,), (True,), f"np.linalg.norm(x {shape}, {order!r}, **{kwargs})")


@st.composite
def _svdvals_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = (*draw(shapes(max_dims=1, max_side=3)), draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    x = well_separated_matrices(draw, shape)
    if fn is np.linalg.svd and draw(st.booleans()):
        # The vectors: their signs are arbitrary, so squares of them; full_matrices=True
        # with m != n adds vectors that are not unique, so only for a square matrix.
        kwargs = _kw(full_matrices=False if shape[-1] != shape[-2] else _maybe(draw, st.booleans()))

        def call(x: Any) -> Any:
            u, s, vh = fn(x, **kwargs)
            return u**2, s, vh**2

        return Case(call, (x,), (True,), f"np.linalg.svd(x {shape}, **{kwargs}): U**2, S, Vh**2")
    if fn is np.linalg.svd:
        return Case(lambda x: fn(x, compute_uv=False), (x,), (True,), f"np.linalg.svd(x {shape}, compute_uv=False)")
    return Case(fn, (x,), (True,), f"np.linalg.svdvals(x {shape})")


spec(*filter(None, (np.linalg.svd, getattr(np.linalg, "svdvals", None))))(_svdvals_cases)


@spec(np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.linalg.solve, np.linalg.cholesky, np.linalg.eigvalsh)
@st.composite
def _square_matrix_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Far from singular: singular values in [0.2, 3], so the functions are smooth where drawn.
    n = draw(st.integers(1, 4))
    a = well_separated_matrices(draw, (*draw(shapes(max_dims=1, max_side=3)), n, n))
    if fn is np.linalg.solve:
        b = draw(float_arrays((n,) if draw(st.booleans()) else (*a.shape[:-1], 2)))
        return Case(fn, (a, b), draw(diff_mask(2)), f"np.linalg.solve(a {a.shape}, b {b.shape})")
    if fn is np.linalg.slogdet:
        return Case(lambda a: fn(a)[1], (a,), (True,), f"np.linalg.slogdet(a {a.shape})[1]")
    if fn is np.linalg.eigvalsh:  # of a @ a^T: symmetric, eigenvalues the (distinct) s^2
        return Case(lambda a: fn(a @ np.swapaxes(a, -1, -2)), (a,), (True,), f"np.linalg.eigvalsh(a a^T {a.shape})")
    if fn is np.linalg.cholesky:  # of a @ a^T (positive definite), which is symmetric
        return Case(lambda a: fn(a @ np.swapaxes(a, -1, -2)), (a,), (True,), f"np.linalg.cholesky(a a^T {a.shape})")
    return Case(fn, (a,), (True,), f"{_name(fn)}(a {a.shape})")


@spec(np.linalg.eigh)
@st.composite
def _eigh_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Of a a^T: symmetric, eigenvalues the (distinct) s^2; the vectors' signs are arbitrary.
    a = well_separated_matrices(draw, (*draw(shapes(max_dims=1, max_side=3)), *[draw(st.integers(1, 4))] * 2))
    kwargs = _kw(UPLO=_maybe(draw, st.sampled_from(["L", "U"])))

    def call(a: Any) -> Any:
        w, v = fn(a @ np.swapaxes(a, -1, -2), **kwargs)
        return w, v**2

    return Case(call, (a,), (True,), f"np.linalg.eigh(a a^T {a.shape}, **{kwargs}): w, v**2")


@spec(np.linalg.eig, np.linalg.eigvals)
@st.composite
def _eig_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Real or complex, eigenvalues well apart; the vectors' phases are arbitrary, and forward
    # mode refuses complex ones: |v|^2 of a real matrix with real eigenvalues.
    vectors = fn is np.linalg.eig and draw(st.booleans())
    shape = (*draw(shapes(max_dims=1, max_side=2)), *[draw(st.integers(1, 4))] * 2)
    a = eig_matrices(draw, shape, complex_=not vectors and draw(st.booleans()), real_values=vectors)

    def call(a: Any) -> Any:
        w = np.linalg.eigvals(a) if fn is np.linalg.eigvals else fn(a)[0]
        order = np.lexsort((np.imag(unwrap(w)), np.real(unwrap(w))), axis=-1)  # numpy's order may vary
        if vectors:
            return np.take_along_axis(fn(a)[1], order[..., None, :], -1) ** 2
        return np.take_along_axis(w, order, -1)

    return Case(call, (a,), (True,), f"{_name(fn)}(a {a.dtype} {a.shape}){' vectors' if vectors else ''}")


def _order_key(r: Any) -> Any:
    """A key that orders simple roots in the plane along a direction no symmetry favours:
    neither a conjugate pair (equal real parts) nor real roots (equal imaginary parts) tie."""
    values = np.asarray(unwrap(r))
    return values.real + 0.6180339887 * values.imag


def _in_stable_order(r: Any) -> Any:
    """``r`` sorted by :func:`_order_key` (read from the values; the entries keep their
    gradients)."""
    return r[np.argsort(_order_key(r))]


@spec(np.roots, np.sort_complex)
@st.composite
def _roots_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Coefficients with simple roots, in an order that a small perturbation cannot change
    # (sorted by real part, a conjugate pair would swap under a perturbation of the
    # coefficients along imaginary directions); or values with distinct real parts: no ties.
    if fn is np.roots:
        p = polynomials(draw, draw(st.booleans()))
        keys = np.sort(_order_key(np.roots(p)))
        assume(np.all(np.diff(keys) > 1e-3))
        return Case(lambda p: _in_stable_order(np.roots(p)), (p,), (True,), f"np.roots({p}), sorted")
    real = draw(float_arrays((draw(st.integers(1, 5)),), elements=grid(step=0.1), unique=True))
    x = real + 1j * draw(float_arrays(real.shape)) if draw(st.booleans()) else real
    return Case(np.sort_complex, (x,), (True,), f"np.sort_complex({x})")


@spec(np.linalg.qr)
@st.composite
def _qr_cases(draw: st.DrawFn, fn: Any) -> Case:
    n = draw(st.integers(1, 3))
    a = well_separated_matrices(draw, (*draw(shapes(max_dims=1, max_side=3)), n + draw(st.integers(0, 2)), n))
    mode = _maybe(draw, st.sampled_from(["reduced", "r"] + (["complete"] if a.shape[-2] == n else [])))
    kwargs = _kw(mode=mode)
    return Case(lambda a: fn(a, **kwargs), (a,), (True,), f"np.linalg.qr(a {a.shape}, **{kwargs})")


@spec(np.linalg.pinv, np.linalg.lstsq)
@st.composite
def _least_squares_cases(draw: st.DrawFn, fn: Any) -> Case:
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    if fn is np.linalg.pinv:
        a = well_separated_matrices(draw, (*draw(shapes(max_dims=1, max_side=3)), m, n))
        kwargs = draw(st.sampled_from([{}, {"rcond": 1e-10}, {"rtol": None}, {"rtol": 1e-12}, {"hermitian": False}]))
        return Case(lambda a: fn(a, **kwargs), (a,), (True,), f"np.linalg.pinv(a {a.shape}, **{kwargs})")
    a = well_separated_matrices(draw, (m, n))
    b = draw(float_arrays((m,) if draw(st.booleans()) else (m, draw(st.integers(1, 3)))))
    rcond = _maybe(draw, st.sampled_from([None, 1e-10]))
    parts = slice(0, 2) if m > n else slice(0, 1)  # the residuals are empty unless m > n; the rank is plain

    def call(a: Any, b: Any) -> Any:
        return fn(a, b, **_kw(rcond=rcond))[parts]

    return Case(call, (a, b), draw(diff_mask(2)), f"np.linalg.lstsq(a {a.shape}, b {b.shape}, rcond={rcond})")


@spec(np.linalg.matrix_power, np.linalg.tensorsolve, np.linalg.tensorinv)
@st.composite
def _matrix_power_and_tensor_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.linalg.matrix_power:
        n = draw(st.integers(1, 3))
        a = well_separated_matrices(draw, (*draw(shapes(max_dims=1, max_side=3)), n, n))
        power = draw(st.sampled_from([-3, -2, -1, 1, 2, 3, 5, np.int64(2)]))
        return Case(lambda a: fn(a, power), (a,), (True,), f"np.linalg.matrix_power(a {a.shape}, {power!r})")
    outer_shape, inner_shape = draw(st.sampled_from([((4,), (2, 2)), ((2, 3), (6,)), ((2, 2), (2, 2)), ((3,), (3,))]))
    a = well_separated_matrices(draw, (math.prod(outer_shape),) * 2).reshape(*outer_shape, *inner_shape)
    if fn is np.linalg.tensorinv:
        return Case(lambda a: fn(a, ind=len(outer_shape)), (a,), (True,), f"np.linalg.tensorinv(a {a.shape})")
    b = draw(float_arrays(outer_shape))
    return Case(fn, (a, b), draw(diff_mask(2)), f"np.linalg.tensorsolve(a {a.shape}, b {b.shape})")


@spec(np.atleast_1d, np.atleast_2d, np.atleast_3d, np.diff, np.roll, np.repeat, np.tile, np.ptp)
@st.composite
def _reshaping_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=0 if fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d) else 1))
    x = draw(_signed_separated(shape))  # no ties: ptp takes a max and a min
    ndim = len(shape)
    if fn is np.diff:
        kwargs = _kw(n=_maybe(draw, st.integers(0, 2)), axis=_maybe(draw, axes(ndim, single=True)))
    elif fn is np.roll:
        axis = draw(st.one_of(st.none(), axes(ndim, single=True)))
        kwargs = {"shift": draw(st.integers(-5, 5)), "axis": axis}
    elif fn is np.repeat:
        axis = draw(st.one_of(st.none(), axes(ndim, single=True)))
        n = x.size if axis is None else shape[axis]
        repeats = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 2), min_size=n, max_size=n)))
        kwargs = {"repeats": repeats, "axis": axis}
    elif fn is np.tile:
        kwargs = {"reps": draw(st.one_of(st.integers(1, 3), st.lists(st.integers(1, 2), min_size=1, max_size=3)))}
    elif fn is np.ptp:
        kwargs = _kw(axis=_maybe(draw, axes(ndim)), keepdims=_maybe(draw, st.booleans()))
    else:
        kwargs = {}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.hstack, np.vstack, np.inner)
@st.composite
def _joining_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, max_dims=3))
    if fn is np.inner:
        other = (*draw(shapes(max_dims=2)), shape[-1])
    elif fn is np.hstack:
        other = (*shape[:1], draw(st.integers(1, 3)), *shape[2:]) if len(shape) > 1 else (draw(st.integers(1, 3)),)
    else:  # vstack: 1-D arrays stack as rows
        other = shape if len(shape) == 1 else (draw(st.integers(1, 3)), *shape[1:])
    a, b = draw(float_arrays(shape)), draw(float_arrays(other))
    kwargs = (
        {}
        if fn is np.inner
        else _kw(
            dtype=_maybe(draw, st.sampled_from([np.float64, "f8", None])),
            casting=_maybe(draw, st.sampled_from(["no", "equiv", "safe", "same_kind", "unsafe"])),
        )
    )
    return Case(
        lambda a, b: fn(a, b) if fn is np.inner else fn([a, b], **kwargs),
        (a, b),
        draw(diff_mask(2)),
        f"{_name(fn)} {shape} {other} **{kwargs}",
    )


@spec(np.tril, np.triu, np.diagonal, np.trace, np.diag)
@st.composite
def _triangle_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, max_dims=2) if fn is np.diag else shapes(min_dims=2, max_dims=3))
    x = draw(float_arrays(shape))
    k = draw(st.integers(-3, 3))
    if fn in (np.diagonal, np.trace) and len(shape) > 2 and draw(st.booleans()):
        pair = draw(st.permutations(range(len(shape))).map(lambda p: tuple(p[:2])))
        kwargs: dict[str, Any] = {"offset": k, "axis1": pair[0], "axis2": pair[1]}
    else:
        kwargs = {"k": k} if fn in (np.tril, np.triu, np.diag) else {"offset": k}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.average)
@st.composite
def _average_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    kind = draw(st.sampled_from(["plain", "full weights", "axis weights"]))
    if kind == "plain":
        kwargs = _kw(axis=_maybe(draw, axes(len(shape))), keepdims=_maybe(draw, st.booleans()))
        return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"np.average(x {shape}, **{kwargs})")
    axis = draw(axes(len(shape), single=True))
    w_shape = shape if kind == "full weights" else (shape[axis],)
    w = draw(float_arrays(w_shape, elements=floats(0.5, BOUND)))  # positive: the weights' sum is away from 0
    return Case(
        lambda x, w: fn(x, axis=axis, weights=w), (x, w), draw(diff_mask(2)), f"np.average(x {shape}, w {w_shape})"
    )


@spec(np.nansum, np.nanmean)
@st.composite
def _nan_cases(draw: st.DrawFn, fn: Any) -> Case:
    # NaNs at fixed places (the gradient there is 0); every line reduced keeps a number
    # (the entry at index 0 on each reduced axis), so no mean is of an empty slice.
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    holes = draw(hnp.arrays(bool, shape))
    axis = draw(axes(len(shape)))
    reduced = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    reduced = [a % len(shape) for a in reduced]
    np.moveaxis(holes, reduced, range(len(reduced)))[(0,) * len(reduced)] = False
    kwargs = _kw(axis=axis, keepdims=_maybe(draw, st.booleans()))

    def call(x: Any) -> Any:
        return fn(np.where(holes, np.nan, x), **kwargs)

    return Case(call, (x,), (True,), f"{_name(fn)}(x {shape} with {int(holes.sum())} NaNs, **{kwargs})")


@spec(np.full_like)
@st.composite
def _full_like_cases(draw: st.DrawFn, fn: Any) -> Case:
    # The template gives only the shape and dtype; the fill value (any shape that
    # broadcasts to it) carries the gradient. Plain numpy reaches nodegrad through the
    # traced template (a traced fill alone: nodegrad.numpy.full_like).
    shape = draw(shapes())
    a = draw(float_arrays(shape))
    fill = draw(float_arrays(draw(stretchable_to(shape))))
    return Case(lambda a, fill: fn(a, fill), (a, fill), (True, True), f"np.full_like(a {shape}, {fill.shape})")


@spec(np.kron, np.polyval, np.convolve)
@st.composite
def _product_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.kron:
        a, b = draw(float_arrays(shapes(max_dims=2))), draw(float_arrays(shapes(max_dims=2)))
        desc = f"np.kron {a.shape} {b.shape}"
    elif fn is np.polyval:
        a, b = draw(float_arrays(shapes(min_dims=1, max_dims=1))), draw(float_arrays(shapes(max_dims=2)))
        desc = f"np.polyval(p {a.shape}, x {b.shape})"
    else:
        a, b = draw(float_arrays(shapes(min_dims=1, max_dims=1))), draw(float_arrays(shapes(min_dims=1, max_dims=1)))
        mode = draw(st.sampled_from(["full", "same", "valid"]))
        desc = f"np.convolve {a.shape} {b.shape} {mode}"
        return Case(lambda a, b: fn(a, b, mode), (a, b), draw(diff_mask(2)), desc)
    return Case(fn, (a, b), draw(diff_mask(2)), desc)


@st.composite
def _trapezoid_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    y = draw(float_arrays(shape))
    axis = draw(axes(len(shape), single=True))
    kind = draw(st.sampled_from(["dx", "x along the axis", "x like y"]))
    if kind == "dx":
        dx = draw(floats(0.1, 2.0))
        return Case(lambda y: fn(y, dx=dx, axis=axis), (y,), (True,), f"np.trapezoid(y {shape}, dx={dx}, axis={axis})")
    x = draw(float_arrays((shape[axis],) if kind == "x along the axis" else shape))
    return Case(lambda y, x: fn(y, x, axis=axis), (y, x), draw(diff_mask(2)), f"np.trapezoid(y {shape}, x {x.shape})")


if hasattr(np, "trapezoid"):
    spec(np.trapezoid)(_trapezoid_cases)


@st.composite
def _array_api_norm_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=2 if fn is not np.linalg.vector_norm else 1))
    x = draw(_signed_separated(shape))
    if fn is np.linalg.vector_norm:
        kwargs = _kw(
            axis=_maybe(draw, axes(len(shape))),
            keepdims=_maybe(draw, st.booleans()),
            ord=_maybe(draw, st.sampled_from([1, 2, 3, np.inf])),
        )
    elif fn is np.linalg.matrix_norm:
        kwargs = _kw(keepdims=_maybe(draw, st.booleans()), ord=_maybe(draw, st.sampled_from(["fro", 1, np.inf])))
        if kwargs.get("ord") in (1, np.inf):
            assume(_line_sums_are_separated(x, kwargs["ord"], (-2, -1)))
    else:
        kwargs = {}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


spec(*filter(None, (getattr(np.linalg, n, None) for n in ("vector_norm", "matrix_norm", "matrix_transpose"))))(
    _array_api_norm_cases
)
if hasattr(np, "matrix_transpose"):
    spec(np.matrix_transpose)(_array_api_norm_cases)


def _linalg_api(*names: str) -> list[Any]:
    """numpy.linalg's array-API functions of these names that this numpy has (2.0)."""
    return [f for name in names if (f := getattr(np.linalg, name, None)) is not None]


@spec(*_linalg_api("matmul", "outer", "tensordot", "vecdot", "cross"))
@st.composite
def _linalg_api_product_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.linalg.matmul:
        return draw(_matmul_cases(fn))
    if fn is np.linalg.outer:
        a, b = draw(float_arrays(shapes(min_dims=1, max_dims=1))), draw(float_arrays(shapes(min_dims=1, max_dims=1)))
        return Case(lambda a, b: fn(a, b), (a, b), draw(diff_mask(2)), f"np.linalg.outer({a.shape}, {b.shape})")
    if fn is np.linalg.tensordot:
        k = draw(st.integers(0, 2))
        contracted = draw(shapes(min_dims=k, max_dims=k, max_side=3))
        shape_a = (*draw(shapes(max_dims=2, max_side=3)), *contracted)
        shape_b = (*contracted, *draw(shapes(max_dims=2, max_side=3)))
        a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
        kwargs = _kw(axes=k if k != 2 or draw(st.booleans()) else _OMIT)
        desc = f"np.linalg.tensordot({shape_a}, {shape_b}, **{kwargs})"
        return Case(lambda a, b: fn(a, b, **kwargs), (a, b), draw(diff_mask(2)), desc)
    # vecdot and cross: vectors along `axis` (the last by default), the other axes broadcast.
    n = 3 if fn is np.linalg.cross else draw(st.integers(1, 4))
    batch_a, batch_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    depth = draw(st.integers(1, 1 + min(len(batch_a), len(batch_b))))
    place = lambda batch: (*batch[: len(batch) - depth + 1], n, *batch[len(batch) - depth + 1 :])
    shape_a, shape_b = place(batch_a), place(batch_b)
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    kwargs = _kw(axis=-depth if depth > 1 or draw(st.booleans()) else _OMIT)
    desc = f"{_name(fn)}({shape_a}, {shape_b}, **{kwargs})"
    return Case(lambda a, b: fn(a, b, **kwargs), (a, b), draw(diff_mask(2)), desc)


@spec(*_linalg_api("trace", "diagonal"))
@st.composite
def _linalg_api_diagonal_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=2, max_dims=4))
    x = draw(float_arrays(shape))
    offset = _maybe(draw, st.integers(-shape[-2], shape[-1]))
    dtype = _maybe(draw, st.sampled_from([None, np.float64])) if fn is np.linalg.trace else _OMIT
    kwargs = _kw(offset=offset, dtype=dtype)
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.linalg.multi_dot)
@st.composite
def _multi_dot_cases(draw: st.DrawFn, fn: Any) -> Case:
    sides = draw(st.lists(st.integers(1, 4), min_size=3, max_size=6))
    shapes_ = [(sides[i], sides[i + 1]) for i in range(len(sides) - 1)]
    if draw(st.booleans()):
        shapes_[0] = shapes_[0][1:]
    if draw(st.booleans()) and (len(shapes_) > 1 or len(shapes_[0]) == 2):
        shapes_[-1] = shapes_[-1][:1]
    arrays = tuple(draw(float_arrays(s)) for s in shapes_)
    desc = f"np.linalg.multi_dot of {[a.shape for a in arrays]}"
    return Case(lambda *arrays: fn(list(arrays)), arrays, draw(diff_mask(len(arrays))), desc)


@spec(np.linalg.cond)
@st.composite
def _cond_cases(draw: st.DrawFn, fn: Any) -> Case:
    p = _maybe(draw, st.sampled_from([None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf]))
    batch = draw(shapes(max_dims=1, max_side=3))
    if p in (_OMIT, None, 2, -2):
        x = well_separated_matrices(draw, (*batch, draw(st.integers(1, 4)), draw(st.integers(1, 4))))
    else:
        x = well_separated_matrices(draw, (*batch, *[draw(st.integers(1, 4))] * 2))
        if p not in ("fro", "nuc"):  # the max/min of line sums of |x| and |inv(x)|: unique
            assume(_line_sums_are_separated(x, p, (-2, -1)))
            assume(_line_sums_are_separated(np.linalg.inv(x), p, (-2, -1)))
    args = () if p is _OMIT else (p,)
    return Case(lambda x: fn(x, *args), (x,), (True,), f"np.linalg.cond(x {x.shape}, *{args})")


# -- polynomials -------------------------------------------------------------------------------------

POLYNOMIAL_FUNCTIONS = (np.polyadd, np.polysub, np.polymul, np.polydiv, np.polyder, np.polyint, np.poly, np.vander,
                        np.polyfit)  # fmt: skip


def _coefficients(draw: st.DrawFn, leading: st.SearchStrategy[float] | None = None) -> Any:
    """1-D coefficients (or a scalar); with ``leading``, the first coefficient drawn from it
    (away from zero where a leading zero would be dropped)."""
    if draw(st.booleans()) and leading is None:
        return draw(floats())
    p = draw(float_arrays((draw(st.integers(1, 5)),)))
    if leading is not None:
        p[0] = draw(leading)
    return p


@spec(np.polyadd, np.polysub, np.polymul, np.polydiv)
@st.composite
def _polynomial_arithmetic_cases(draw: st.DrawFn, fn: Any) -> Case:
    leading = away_from_zero(0.5) if fn in (np.polymul, np.polydiv) else None
    a, b = _coefficients(draw, leading), _coefficients(draw, leading)
    if fn is np.polydiv:  # the remainder has its full degree: its first coefficient is not (nearly) zero
        remainder = np.polydiv(a, b)[1]
        assume(len(a) < len(b) or len(b) == 1 or (len(remainder) == len(b) - 1 and abs(remainder[0]) > 1e-3))
    desc = f"{_name(fn)}({np.shape(a)}, {np.shape(b)})"
    # Dividing by a polynomial of higher degree leaves a as the remainder: traced with a only.
    diff = (True, draw(st.booleans())) if fn is np.polydiv and np.size(a) < np.size(b) else draw(diff_mask(2))
    return Case(lambda a, b: fn(a, b), (a, b), diff, desc)


@spec(np.polyder, np.polyint)
@st.composite
def _polynomial_calculus_cases(draw: st.DrawFn, fn: Any) -> Case:
    p = draw(float_arrays((draw(st.integers(1, 6)),)))
    m = draw(st.integers(0, 3))
    if fn is np.polyder:
        kwargs = _kw(m=m if m != 1 or draw(st.booleans()) else _OMIT)
        return Case(lambda p: fn(p, **kwargs), (p,), (True,), f"np.polyder(p {p.shape}, **{kwargs})")
    kind = draw(st.sampled_from(["none", "scalar", "array"]))
    k: Any = {"none": None, "scalar": draw(floats()), "array": draw(float_arrays((m + draw(st.integers(0, 1)),)))}[kind]
    if kind == "array" and m == 1 and len(k) == 0:
        k = None
    desc = f"np.polyint(p {p.shape}, m={m}, k={k!r})"
    if k is None:
        return Case(lambda p: fn(p, m), (p,), (True,), desc)
    # numpy hands np.polyint to nodegrad for a traced p only (k is not among its dispatched arguments).
    return Case(lambda p, k: fn(p, m, k=k), (p, k), (True, draw(st.booleans())), desc)


@spec(np.poly, np.vander)
@st.composite
def _polynomial_construction_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.vander:
        x = draw(float_arrays((draw(st.integers(0, 5)),)))
        kwargs = _kw(N=_maybe(draw, st.integers(0, 6)), increasing=_maybe(draw, st.booleans()))
        return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"np.vander(x {x.shape}, **{kwargs})")
    if draw(st.booleans()):
        roots = draw(float_arrays((draw(st.integers(1, 5)),)))
        return Case(fn, (roots,), (True,), f"np.poly(roots {roots.shape})")
    # A generic matrix: its eigenvalues (numpy's route, possibly complex pairs) are well defined.
    n = draw(st.integers(1, 4))
    a = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).standard_normal((n, n))
    return Case(fn, (a,), (True,), f"np.poly(matrix {a.shape})")


@spec(np.polyfit)
@st.composite
def _polyfit_cases(draw: st.DrawFn, fn: Any) -> Case:
    size = draw(st.integers(1, 8))
    x = draw(separated_arrays((size,), step=0.25))  # distinct samples: a full-rank fit
    deg = draw(st.integers(0, min(size - 1, 3)))
    y = draw(float_arrays((size,) if draw(st.booleans()) else (size, draw(st.integers(1, 3)))))
    weights = _maybe(draw, float_arrays((size,), elements=floats(0.5, 2.0)))
    kind = draw(st.sampled_from(["plain", "full", "cov", "unscaled"] if size > deg + 1 else ["plain", "unscaled"]))
    kwargs = _kw(w=weights, rcond=_maybe(draw, st.sampled_from([None, 1e-12])))
    desc = f"np.polyfit(x {x.shape}, y {y.shape}, {deg}, {kind}, **{ {k: np.shape(v) for k, v in kwargs.items()} })"
    if kind == "plain":
        return Case(lambda x, y: fn(x, y, deg, **kwargs), (x, y), draw(diff_mask(2)), desc)
    if kind == "full":  # c and the residuals (the rank and rcond are plain numbers, s as np.linalg.svdvals)
        return Case(lambda x, y: fn(x, y, deg, full=True, **kwargs)[:2], (x, y), draw(diff_mask(2)), desc)
    cov = True if kind == "cov" else "unscaled"
    diff = draw(diff_mask(2)) if kind == "cov" else (True, draw(st.booleans()))  # unscaled: a function of x alone
    return Case(lambda x, y: fn(x, y, deg, cov=cov, **kwargs), (x, y), diff, desc)


@pytest.mark.parametrize("func", POLYNOMIAL_FUNCTIONS, ids=_name)
@given(data=st.data())
def test_polynomials_differentiate_twice(func: Any, data: st.DataObject) -> None:
    case = data.draw(FUNCTION_SPECS[func], label="case")
    note(case.desc)
    # A least-squares fit's central differences carry the rounding of its solve times the
    # condition number (about 1e-7 for three points on [-0.25, 0.25]), above the default atol.
    check_grads(case.of_args(), *case.args, order=2, atol=1e-6)


# -- functions applied to parts of an array ----------------------------------------------------------

_APPLIED_1D: dict[str, Callable[[Any], Any]] = {
    "sum of squares": lambda r: np.sum(r**2),
    "outer": lambda r: np.outer(r, np.sin(r)),
    "cumsum": np.cumsum,
    "first and last": lambda r: np.stack([r[0] * r[-1], np.exp(r[0])]),
}
_APPLIED_OVER: dict[str, Callable[[Any, int], Any]] = {
    "sum": np.sum,
    "mean keepdims": lambda a, axis: np.mean(a * a, axis, keepdims=True),
    "cumprod": lambda a, axis: np.cumprod(np.tanh(a), axis),
}


@spec(np.apply_along_axis)
@st.composite
def _apply_along_axis_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, max_side=3))
    assume(all(shape))  # numpy refuses to iterate over an empty dimension
    x = draw(float_arrays(shape))
    axis = draw(axes(len(shape), single=True))
    name = draw(st.sampled_from(sorted(_APPLIED_1D)))
    func = _APPLIED_1D[name]
    if draw(st.booleans()):  # extra arguments are passed on to the function
        scale = draw(floats(0.5, 2.0))
        call = lambda x: fn(lambda r, s, *, power: func(r) * s**power, axis, x, scale, power=2)
        return Case(call, (x,), (True,), f"np.apply_along_axis({name} * s**power, {axis}, x {shape}, s, power=2)")
    return Case(lambda x: fn(func, axis, x), (x,), (True,), f"np.apply_along_axis({name}, {axis}, x {shape})")


@spec(np.apply_over_axes)
@st.composite
def _apply_over_axes_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, max_side=3))
    x = draw(float_arrays(shape))
    axes_ = draw(st.one_of(axes(len(shape), single=True), st.lists(axes(len(shape), single=True), max_size=3)))
    name = draw(st.sampled_from(sorted(_APPLIED_OVER)))
    desc = f"np.apply_over_axes({name}, x {shape}, {axes_})"
    return Case(lambda x: fn(_APPLIED_OVER[name], x, axes_), (x,), (True,), desc)


@spec(np.cumsum, np.cumprod)
@st.composite
def _cumulative_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes())
    elements = st.one_of(st.just(0.0), floats(-1.5, 1.5)) if fn is np.cumprod else None
    x = draw_operand(draw, shape, elements)
    axis = _OMIT if len(shape) == 0 else _maybe(draw, st.one_of(st.none(), axes(len(shape), single=True)))
    kwargs = _kw(axis=axis)
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.dot)
@st.composite
def _dot_cases(draw: st.DrawFn, fn: Any) -> Case:
    n = draw(st.integers(1, 4))
    nda, ndb = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    if nda == 0 or ndb == 0:
        shape_a, shape_b = draw(shapes(min_dims=nda, max_dims=nda)), draw(shapes(min_dims=ndb, max_dims=ndb))
    else:
        shape_a = (*draw(shapes(min_dims=nda - 1, max_dims=nda - 1)), n)
        rest_b = draw(shapes(min_dims=ndb - 1, max_dims=ndb - 1))
        shape_b = (n,) if ndb == 1 else (*rest_b[:-1], n, rest_b[-1])
    a, b = draw_operand(draw, shape_a), draw_operand(draw, shape_b)
    return Case(lambda a, b: fn(a, b), (a, b), draw(diff_mask(2)), f"np.dot of {shape_a} and {shape_b}")


@spec(np.outer)
@st.composite
def _outer_cases(draw: st.DrawFn, fn: Any) -> Case:
    a = draw_operand(draw, draw(shapes(max_dims=2)))
    b = draw_operand(draw, draw(shapes(max_dims=2)))
    return Case(lambda a, b: fn(a, b), (a, b), draw(diff_mask(2)), f"np.outer of {np.shape(a)}, {np.shape(b)}")


FUNCTION_SPECS[np.matmul] = _matmul_cases(np.matmul)  # a ufunc since numpy 2: in both tables

# (subscripts, operand shapes in letters; "B" is a broadcast batch prefix for "...").
_EINSUM = [
    ("ij,jk->ik", ["ij", "jk"]),
    ("ij,jk", ["ij", "jk"]),
    ("ij,ij->", ["ij", "ij"]),
    ("i,i", ["i", "i"]),
    ("i,j->ij", ["i", "j"]),
    ("ij->ji", ["ij"]),
    ("ijk->k", ["ijk"]),
    ("bij,bjk->bik", ["bij", "bjk"]),
    ("ij,jk,kl->il", ["ij", "jk", "kl"]),
    ("...ij,...jk->...ik", ["Bij", "Cjk"]),
    ("i...->...", ["iB"]),
]


@spec(np.einsum)
@st.composite
def _einsum_cases(draw: st.DrawFn, fn: Any) -> Case:
    subscripts, templates = draw(st.sampled_from(_EINSUM))
    sizes = {c: draw(st.integers(1, 3)) for c in "ijklb"}
    batch_b, batch_c = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    batches = {"B": batch_b, "C": batch_c}
    operand_shapes = [tuple(s for c in t for s in (batches[c] if c in batches else (sizes[c],))) for t in templates]
    operands = tuple(draw(float_arrays(s)) for s in operand_shapes)
    optimize = _maybe(draw, st.booleans())
    kwargs = _kw(optimize=optimize)
    return Case(
        lambda *ops: fn(subscripts, *ops, **kwargs),
        operands,
        draw(diff_mask(len(operands))),
        f"np.einsum({subscripts!r}, shapes {operand_shapes}, **{kwargs})",
    )


@spec(np.tensordot)
@st.composite
def _tensordot_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape_a = draw(shapes(min_dims=1))
    nda = len(shape_a)
    if draw(st.booleans()):  # axes=N: the last N axes of a with the first N of b
        count = draw(st.integers(0, min(nda, 2)))
        shape_b = shape_a[nda - count :] + draw(shapes(max_dims=2))
        axes_arg: Any = count
    else:  # axes=(axes of a, axes of b), in any order, negative ones included
        count = draw(st.integers(1, min(nda, 2)))
        axes_a = draw(st.permutations(range(nda)))[:count]
        free_b = list(draw(shapes(max_dims=2)))
        ndb = count + len(free_b)
        axes_b = draw(st.permutations(range(ndb)))[:count]
        shape_list = [0] * ndb
        for i, j in zip(axes_a, axes_b, strict=True):
            shape_list[j] = shape_a[i]
        rest = iter(free_b)
        shape_b = tuple(s if k in axes_b else next(rest) for k, s in enumerate(shape_list))
        axes_a = [a - nda if draw(st.booleans()) else a for a in axes_a]
        axes_arg = (axes_a, list(axes_b))
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    return Case(
        lambda a, b: fn(a, b, axes=axes_arg),
        (a, b),
        draw(diff_mask(2)),
        f"np.tensordot({shape_a}, {shape_b}, axes={axes_arg!r})",
    )


@spec(np.concatenate)
@st.composite
def _concatenate_cases(draw: st.DrawFn, fn: Any) -> Case:
    count = draw(st.integers(1, 3))
    if draw(st.booleans()):  # axis=None: everything flattened, any shapes
        arrays = tuple(draw(float_arrays(draw(shapes()))) for _ in range(count))
        axis: Any = None
    else:
        base = draw(shapes(min_dims=1))
        axis = draw(axes(len(base), single=True))
        arrays = tuple(
            draw(
                float_arrays(tuple(draw(st.integers(1, 3)) if k == axis % len(base) else n for k, n in enumerate(base)))
            )
            for _ in range(count)
        )
    kwargs = _kw(axis=axis) if axis != 0 or draw(st.booleans()) else {}
    return Case(
        lambda *xs: fn(list(xs), **kwargs),
        arrays,
        draw(diff_mask(count)),
        f"np.concatenate(shapes {[a.shape for a in arrays]}, **{kwargs})",
    )


@spec(np.stack)
@st.composite
def _stack_cases(draw: st.DrawFn, fn: Any) -> Case:
    count = draw(st.integers(1, 3))
    shape = draw(shapes())
    arrays = tuple(draw(float_arrays(shape)) for _ in range(count))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return Case(
        lambda *xs: fn(xs, axis=axis), arrays, draw(diff_mask(count)), f"np.stack({count} x {shape}, axis={axis})"
    )


@spec(np.split)
@st.composite
def _split_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    axis = draw(axes(len(shape), single=True))
    length = shape[axis]
    if draw(st.booleans()):  # N equal sections
        where: Any = draw(st.sampled_from([d for d in range(1, length + 1) if length % d == 0]))
    else:  # split points in any order, negative, repeated or past the end (empty pieces)
        where = draw(st.lists(st.integers(-length - 1, length + 1), max_size=3))
    return Case(lambda x: fn(x, where, axis=axis), (x,), (True,), f"np.split(x {shape}, {where!r}, axis={axis})")


@spec(np.where)
@st.composite
def _where_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape_c, shape_x, shape_y = draw(broadcastable_shapes(3))
    condition = draw(hnp.arrays(bool, shape_c))
    x, y = draw_operand(draw, shape_x), draw_operand(draw, shape_y)
    return Case(
        lambda x, y: fn(condition, x, y),
        (x, y),
        draw(diff_mask(2)),
        f"np.where(mask {shape_c}, {shape_x}, {shape_y})",
    )


@spec(np.clip)
@st.composite
def _clip_cases(draw: st.DrawFn, fn: Any) -> Case:
    # x on a 0.01 grid, the bounds on the grid shifted by 0.005: never tied, so no kinks.
    shape_x, shape_lo, shape_hi = draw(broadcastable_shapes(3))
    x = draw_operand(draw, shape_x, grid())
    lo = draw_operand(draw, shape_lo, grid(-BOUND, 1.0, offset=0.005))
    gap = np.asarray(draw_operand(draw, shape_hi, grid(0.01, 2.0)))
    hi = np.max(lo) + gap  # above every lower bound
    hi = float(hi) if np.ndim(hi) == 0 and draw(st.booleans()) else np.asarray(hi, dtype=np.float64)
    which = draw(st.sampled_from(["both", "lo", "hi"]))
    if which == "both":
        return Case(lambda x, lo, hi: fn(x, lo, hi), (x, lo, hi), draw(diff_mask(3)), "np.clip(x, lo, hi)")
    if which == "lo":
        return Case(lambda x, lo: fn(x, lo, None), (x, lo), draw(diff_mask(2)), "np.clip(x, lo, None)")
    return Case(lambda x, hi: fn(x, None, hi), (x, hi), draw(diff_mask(2)), "np.clip(x, None, hi)")


@spec(np.take)
@st.composite
def _take_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    axis = draw(st.one_of(st.none(), axes(len(shape), single=True)))
    n = math.prod(shape) if axis is None else shape[axis]
    indices: Any = draw(hnp.arrays(np.intp, draw(shapes(max_dims=2)), elements=st.integers(-n, n - 1)))
    if indices.ndim == 1 and draw(st.booleans()):
        indices = indices.tolist()  # a list works as well
    kwargs = _kw(axis=axis) if axis is not None or draw(st.booleans()) else {}
    return Case(lambda x: fn(x, indices, **kwargs), (x,), (True,), f"np.take(x {shape}, {indices!r}, **{kwargs})")


@spec(np.take_along_axis)
@st.composite
def _take_along_axis_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    axis = draw(axes(len(shape), single=True))
    n = shape[axis]
    index_shape = tuple(draw(st.integers(1, 4)) if k == axis % len(shape) else s for k, s in enumerate(shape))
    indices = draw(hnp.arrays(np.intp, index_shape, elements=st.integers(-n, n - 1)))
    return Case(
        lambda x: fn(x, indices, axis=axis), (x,), (True,), f"np.take_along_axis(x {shape}, {indices!r}, axis={axis})"
    )


@spec(np.sort)
@st.composite
def _sort_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(separated_arrays(shape))  # no ties: the permutation is unique
    kwargs = _kw(
        axis=_maybe(draw, axes(len(shape), single=True)), kind=_maybe(draw, st.sampled_from(["stable", "quicksort"]))
    )
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"np.sort(x {shape}, **{kwargs})")


@st.composite
def _reshape_target(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape with as many elements as ``shape``, sometimes with one ``-1``."""
    factors = [p for n in shape for p in _prime_factors(n)]
    groups = draw(st.integers(0, 3)) if factors else draw(st.integers(0, 2))
    target = [1] * groups
    for p in factors:
        if not target:
            target.append(1)
        target[draw(st.integers(0, len(target) - 1))] *= p
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return tuple(target)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@spec(np.reshape)
@st.composite
def _reshape_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()))
    target = draw(_reshape_target(np.shape(x)))
    if draw(st.booleans()):
        return Case(lambda x: fn(x, shape=target), (x,), (True,), f"np.reshape(x {np.shape(x)}, shape={target})")
    return Case(lambda x: fn(x, target), (x,), (True,), f"np.reshape(x {np.shape(x)}, {target})")


@spec(np.transpose)
@st.composite
def _transpose_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes())
    x = draw(float_arrays(shape))
    order = draw(st.one_of(st.none(), st.permutations(range(len(shape))).map(tuple)))
    if order is None:
        return Case(lambda x: fn(x), (x,), (True,), f"np.transpose(x {shape})")
    return Case(lambda x: fn(x, order), (x,), (True,), f"np.transpose(x {shape}, {order})")


@spec(np.ravel)
@st.composite
def _ravel_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()))
    return Case(lambda x: fn(x), (x,), (True,), f"np.ravel(x {np.shape(x)})")


@spec(np.moveaxis)
@st.composite
def _moveaxis_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    ndim = len(shape)
    x = draw(float_arrays(shape))
    count = draw(st.integers(1, ndim))
    source = [a - ndim if draw(st.booleans()) else a for a in draw(st.permutations(range(ndim)))[:count]]
    destination = [a - ndim if draw(st.booleans()) else a for a in draw(st.permutations(range(ndim)))[:count]]
    src: Any = source[0] if count == 1 and draw(st.booleans()) else source
    dst: Any = destination[0] if isinstance(src, int) else destination
    return Case(lambda x: fn(x, src, dst), (x,), (True,), f"np.moveaxis(x {shape}, {src}, {dst})")


@spec(np.swapaxes)
@st.composite
def _swapaxes_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    a, b = draw(axes(len(shape), single=True)), draw(axes(len(shape), single=True))
    return Case(lambda x: fn(x, a, b), (x,), (True,), f"np.swapaxes(x {shape}, {a}, {b})")


@spec(np.expand_dims)
@st.composite
def _expand_dims_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()))
    ndim = np.ndim(x)
    count = draw(st.integers(1, 2))
    positions = draw(st.permutations(range(ndim + count)))[:count]
    axis: Any = [p - (ndim + count) if draw(st.booleans()) else p for p in positions]
    axis = axis[0] if count == 1 and draw(st.booleans()) else tuple(axis)
    return Case(lambda x: fn(x, axis), (x,), (True,), f"np.expand_dims(x {np.shape(x)}, {axis})")


@spec(np.squeeze)
@st.composite
def _squeeze_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_side=1, max_side=3).map(lambda s: tuple(1 if n == 3 else n for n in s)))
    x = draw(float_arrays(shape))
    ones = [k for k, n in enumerate(shape) if n == 1]
    choice = draw(st.sampled_from(["all", "some"])) if ones else "all"
    if choice == "all":
        return Case(lambda x: fn(x), (x,), (True,), f"np.squeeze(x {shape})")
    picked = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    axis: Any = picked[0] if len(picked) == 1 and draw(st.booleans()) else tuple(picked)
    return Case(lambda x: fn(x, axis=axis), (x,), (True,), f"np.squeeze(x {shape}, axis={axis})")


@spec(np.broadcast_to)
@st.composite
def _broadcast_to_cases(draw: st.DrawFn, fn: Any) -> Case:
    target = draw(shapes())
    x = draw_operand(draw, draw(stretchable_to(target)))
    return Case(lambda x: fn(x, target), (x,), (True,), f"np.broadcast_to(x {np.shape(x)}, {target})")


@spec(np.pad)
@st.composite
def _pad_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    width = st.integers(0, 2)
    pad_width = draw(
        st.one_of(
            width,
            st.tuples(width),
            st.tuples(width, width),
            st.tuples(*[st.tuples(width, width)] * len(shape)),
        )
    )
    kwargs = _kw(mode=_maybe(draw, st.just("constant")), constant_values=_maybe(draw, floats()))
    return Case(lambda x: fn(x, pad_width, **kwargs), (x,), (True,), f"np.pad(x {shape}, {pad_width}, **{kwargs})")


@spec(np.flip)
@st.composite
def _flip_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    axis = draw(axes(len(shape)))
    if axis is None and draw(st.booleans()):
        return Case(lambda x: fn(x), (x,), (True,), f"np.flip(x {shape})")
    return Case(lambda x: fn(x, axis=axis), (x,), (True,), f"np.flip(x {shape}, axis={axis})")


@spec(np.copy)
@st.composite
def _copy_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()))
    return Case(lambda x: fn(x), (x,), (True,), f"np.copy(x {np.shape(x)})")


@spec(np.array_split, np.hsplit, np.vsplit, np.dsplit)
@st.composite
def _splitting_cases(draw: st.DrawFn, fn: Any) -> Case:
    min_dims = {np.array_split: 1, np.hsplit: 1, np.vsplit: 2, np.dsplit: 3}[fn]
    shape = draw(shapes(min_dims=min_dims, max_dims=max(min_dims, 3)))
    x = draw(float_arrays(shape))
    kwargs: dict[str, Any] = {}
    if fn is np.array_split:
        axis = draw(axes(len(shape), single=True))
        kwargs = _kw(axis=axis) if axis != 0 or draw(st.booleans()) else {}
    else:
        axis = {np.hsplit: 1 if len(shape) > 1 else 0, np.vsplit: 0, np.dsplit: 2}[fn]
    length = shape[axis]
    if draw(st.booleans()):  # N sections: equal ones, but any N for array_split
        divisors = [d for d in range(1, length + 1) if length % d == 0]
        where: Any = draw(st.integers(1, length + 2) if fn is np.array_split else st.sampled_from(divisors))
    else:  # split points in any order, negative ones and ones past the end included
        where = draw(st.lists(st.integers(-length - 1, length + 1), max_size=3))
        if draw(st.booleans()):
            where = np.array(where, dtype=np.intp)
    return Case(lambda x: fn(x, where, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, {where!r}, **{kwargs})")


@st.composite
def _shapes_joining_on(draw: st.DrawFn, count: int, base: tuple[int, ...], axis: int) -> list[tuple[int, ...]]:
    """``count`` shapes equal to ``base`` but along ``axis``, where each has its own length."""
    return [tuple(draw(st.integers(1, 3)) if k == axis else n for k, n in enumerate(base)) for _ in range(count)]


@spec(np.column_stack, np.dstack, np.append)
@st.composite
def _gluing_cases(draw: st.DrawFn, fn: Any) -> Case:
    count = draw(st.integers(1, 3))
    kwargs: dict[str, Any] = {}
    if fn is np.column_stack:  # 1-D arrays (and 0-D ones of one row) become columns
        rows = draw(st.integers(1, 3))
        if draw(st.booleans()):
            rest = draw(shapes(max_dims=1, max_side=3))
            arrays_shapes = draw(_shapes_joining_on(count, (rows, 1, *rest), 1))
        else:
            options = [(rows,), (rows, 1)] + ([()] if rows == 1 else [])
            arrays_shapes = [draw(st.sampled_from(options)) for _ in range(count)]
            arrays_shapes = [(rows, draw(st.integers(1, 3))) if len(s) == 2 else s for s in arrays_shapes]
    elif fn is np.dstack:  # (n,) -> (1, n, 1), (m, n) -> (m, n, 1), then joined on axis 2
        m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        options = [(m, n), (m, n, 1)] + ([(n,)] if m == 1 else []) + ([()] if m == n == 1 else [])
        arrays_shapes = [draw(st.sampled_from(options)) for _ in range(count)]
        arrays_shapes = [(m, n, draw(st.integers(1, 3))) if len(s) == 3 else s for s in arrays_shapes]
    else:
        count = 2
        shape = draw(shapes())
        if shape and draw(st.booleans()):
            axis = draw(axes(len(shape), single=True))
            arrays_shapes = [shape, draw(_shapes_joining_on(1, shape, axis % len(shape)))[0]]
            kwargs = {"axis": axis}
        else:  # axis=None: both flattened, any shapes
            arrays_shapes = [shape, draw(shapes())]
    arrays = tuple(draw(float_arrays(s)) for s in arrays_shapes)

    def call(*xs: Any) -> Any:
        return fn(*xs, **kwargs) if fn is np.append else fn(list(xs))

    return Case(call, arrays, draw(diff_mask(len(arrays))), f"{_name(fn)} of {arrays_shapes}, **{kwargs}")


@spec(np.select)
@st.composite
def _select_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes())
    count = draw(st.integers(1, 3))
    conditions = [draw(hnp.arrays(bool, draw(stretchable_to(shape)))) for _ in range(count)]
    choices = [draw_operand(draw, draw(stretchable_to(shape))) for _ in range(count)]
    default = _maybe(draw, st.one_of(floats(), st.just(0), float_arrays(draw(stretchable_to(shape)))))
    diff = draw(diff_mask(count))
    # np.select dispatches on the conditions and choices only: a traced default needs a traced choice.
    traced_default = default is not _OMIT and not isinstance(default, int) and draw(st.booleans())
    operands = (*choices, default) if traced_default else tuple(choices)
    diff = (*diff, True) if traced_default else diff

    def call(*xs: Any) -> Any:
        if traced_default:
            return fn(conditions, list(xs[:-1]), xs[-1])
        return fn(conditions, list(xs), **_kw(default=default))

    desc = f"np.select({count} conditions, choices {[np.shape(c) for c in choices]}, default {np.shape(default)})"
    return Case(call, operands, diff, desc)


@spec(np.rot90, np.fliplr, np.flipud, np.rollaxis)
@st.composite
def _turning_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=2 if fn in (np.rot90, np.fliplr) else 1))
    x = draw(float_arrays(shape))
    ndim = len(shape)
    if fn is np.rot90:
        pair = [a - ndim if draw(st.booleans()) else a for a in draw(st.permutations(range(ndim)))[:2]]
        kwargs = _kw(k=_maybe(draw, st.integers(-5, 5)), axes=_maybe(draw, st.just(tuple(pair))))
    elif fn is np.rollaxis:
        kwargs = _kw(axis=draw(axes(ndim, single=True)), start=_maybe(draw, st.integers(-ndim, ndim)))
    else:
        kwargs = {}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


@spec(np.cross)
@st.composite
def _cross_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Vectors of 3 (or, deprecated, 2) components along any axis of each operand; the
    # other axes broadcast.
    n_a, n_b = draw(st.sampled_from([3, 3, 2])), draw(st.sampled_from([3, 3, 2]))
    batch_a, batch_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    if draw(st.booleans()):  # one axis= for a, b and the result
        depth = max(len(batch_a), len(batch_b))
        batch_a, batch_b = (1,) * (depth - len(batch_a)) + batch_a, (1,) * (depth - len(batch_b)) + batch_b
        place = draw(st.integers(0, depth))
        shape_a, shape_b = (*batch_a[:place], n_a, *batch_a[place:]), (*batch_b[:place], n_b, *batch_b[place:])
        axis = place - depth - 1 if draw(st.booleans()) else place
        kwargs = {"axis": axis}  # with 2-D vectors on both sides the result has no vector axis
    else:
        pa, pb = draw(st.integers(0, len(batch_a))), draw(st.integers(0, len(batch_b)))
        shape_a, shape_b = (*batch_a[:pa], n_a, *batch_a[pa:]), (*batch_b[:pb], n_b, *batch_b[pb:])
        out_ndim = max(len(batch_a), len(batch_b)) + 1
        kwargs = _kw(
            axisa=pa - len(shape_a) if pa == len(batch_a) and draw(st.booleans()) else pa,
            axisb=pb,
            axisc=_maybe(draw, st.integers(-out_ndim, out_ndim - 1)) if n_a == 3 or n_b == 3 else _OMIT,
        )
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))

    def call(a: Any, b: Any) -> Any:
        with warnings.catch_warnings():  # 2-D vectors: numpy's DeprecationWarning
            warnings.simplefilter("ignore", DeprecationWarning)
            return fn(a, b, **kwargs)

    return Case(call, (a, b), draw(diff_mask(2)), f"np.cross(a {shape_a}, b {shape_b}, **{kwargs})")


spec(np.imag, np.angle)(_complex_entrywise_cases)


@spec(np.sinc, np.real, np.real_if_close, np.i0)
@st.composite
def _entrywise_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()), st.one_of(st.just(0.0), floats()))  # exact zeros: sinc's series
    kwargs = _kw(tol=_maybe(draw, st.sampled_from([1e-3, 100, 1000]))) if fn is np.real_if_close else {}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {np.shape(x)}, **{kwargs})")


@spec(np.nan_to_num)
@st.composite
def _nan_to_num_cases(draw: st.DrawFn, fn: Any) -> Case:
    # NaN and +-inf at fixed places: their gradient is 0, a traced nan= gets theirs.
    shape = draw(shapes())
    x = draw(float_arrays(shape))
    holes = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 0.0, np.nan, np.inf, -np.inf])))
    infinite = bool(np.isinf(holes).any())
    # Moderate replacements for infinities: numpy's defaults (the float extremes) would
    # overflow the finite-difference sums.
    kwargs = _kw(
        copy=_maybe(draw, st.just(True)),
        posinf=draw(floats()) if infinite else _maybe(draw, floats()),
        neginf=draw(floats()) if infinite else _maybe(draw, floats()),
    )
    fill = draw_operand(draw, draw(stretchable_to(shape)))
    traced_fill = draw(st.booleans())

    def call(x: Any, *fill_: Any) -> Any:
        holed = np.where(holes != 0, holes, x)
        return fn(holed, nan=fill_[0], **kwargs) if fill_ else fn(holed, **kwargs)

    operands = (x, fill) if traced_fill else (x,)
    diff = draw(diff_mask(2)) if traced_fill else (True,)
    diff = (True, diff[1]) if traced_fill else diff  # x traced: np.nan_to_num dispatches on x alone
    nan_shape = np.shape(fill) if traced_fill else None
    desc = f"np.nan_to_num(x {shape} with {int(np.count_nonzero(holes))} holes, nan {nan_shape}, **{kwargs})"
    return Case(call, operands, diff, desc)


@spec(np.linspace)
@st.composite
def _linspace_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape_start, shape_stop = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    start, stop = draw_operand(draw, shape_start), draw_operand(draw, shape_stop)
    num = draw(st.integers(0, 6))
    endpoint = _maybe(draw, st.booleans())
    div = num - 1 if endpoint in (True, _OMIT) else num
    ndim = len(np.broadcast_shapes(shape_start, shape_stop))
    kwargs = _kw(
        endpoint=endpoint,
        retstep=draw(st.booleans()) if div > 0 else _OMIT,  # else the step is a plain nan
        dtype=_maybe(draw, st.sampled_from([np.float64, "float64"])),
        axis=_maybe(draw, st.integers(-ndim - 1, ndim)),
    )
    positional = draw(st.booleans())

    def call(start: Any, stop: Any) -> Any:
        return fn(start, stop, num, **kwargs) if positional else fn(start, stop, num=num, **kwargs)

    desc = f"np.linspace(start {shape_start}, stop {shape_stop}, num={num}, **{kwargs})"
    return Case(call, (start, stop), draw(diff_mask(2)), desc)


@spec(np.gradient)
@st.composite
def _gradient_cases(draw: st.DrawFn, fn: Any) -> Case:
    edge_order = _maybe(draw, st.sampled_from([1, 2]))
    shape = draw(shapes(min_dims=1, min_side=3 if edge_order == 2 else 2))
    f = draw(float_arrays(shape))
    ndim = len(shape)
    axis = _maybe(
        draw,
        st.one_of(
            axes(ndim, single=True),
            st.permutations(range(ndim)).flatmap(lambda p: st.integers(1, ndim).map(lambda k: tuple(p[:k]))),
        ),
    )
    picked = range(ndim) if axis is _OMIT else (axis,) if isinstance(axis, int) else axis
    spacing = st.one_of(away_from_zero(0.2), st.just(2))
    kind = draw(st.sampled_from(["none", "one", "each"]))
    if kind == "none":
        spacings: list[Any] = []
    elif kind == "one":
        spacings = [draw(spacing)]
    else:  # a step or coordinates per axis: steps of one sign, at least 0.2 apart
        spacings = []
        for a in picked:
            if draw(st.booleans()):
                spacings.append(draw(spacing))
                continue
            steps = draw(float_arrays((shape[a] - 1,), elements=grid(0.2, 1.0, step=0.1))) * draw(
                st.sampled_from([1, -1])
            )
            spacings.append(np.concatenate([[draw(floats())], steps]).cumsum())
    kwargs = _kw(axis=axis, edge_order=edge_order)
    operands = (f, *spacings)
    desc = f"np.gradient(f {shape}, spacings {[np.shape(s) for s in spacings]}, **{kwargs})"
    diff = [d and not isinstance(v, int) for d, v in zip(draw(diff_mask(len(operands))), operands, strict=True)]
    # Integer steps are data; f untraced only when every step is traced (else a plain part).
    diff[0] = diff[0] or len(operands) == 1 or not all(diff[1:])
    return Case(lambda f, *sp: fn(f, *sp, **kwargs), operands, tuple(diff), desc)


@spec(np.partition)
@st.composite
def _partition_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))
    x = draw(separated_arrays(shape))  # no ties: which entry lands where is unique
    axis = _maybe(draw, st.one_of(st.none(), axes(len(shape), single=True)))
    n = math.prod(shape) if axis is None else shape[-1 if axis is _OMIT else axis]
    kth = draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    kwargs = _kw(axis=axis, kind=_maybe(draw, st.just("introselect")))
    return Case(lambda x: fn(x, kth, **kwargs), (x,), (True,), f"np.partition(x {shape}, {kth!r}, **{kwargs})")


_QUANTILE_METHODS = [
    "linear", "lower", "higher", "nearest", "midpoint",
    "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased",
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation",
]  # fmt: skip


@st.composite
def _holes_keeping_one(draw: st.DrawFn, shape: tuple[int, ...], axis: Any) -> np.ndarray:
    """A NaN mask over ``shape`` that leaves a number (index 0 of the reduced axes) in every line."""
    holes = draw(hnp.arrays(bool, shape))
    reduced = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    reduced = [a % len(shape) for a in reduced]
    if holes.ndim:
        np.moveaxis(holes, reduced, range(len(reduced)))[(0,) * len(reduced)] = False
    return holes


@spec(np.percentile, np.quantile, np.median, np.nanpercentile, np.nanquantile, np.nanmedian)
@st.composite
def _quantile_cases(draw: st.DrawFn, fn: Any) -> Case:
    # Distinct entries (no ties: each order statistic is one entry); NaNs for the nan twins.
    shape = draw(shapes(min_dims=1))
    x = draw(separated_arrays(shape))
    axis = draw(axes(len(shape)).filter(lambda a: a != ()))  # numpy's nan twins misshape axis=() too
    nan = fn in (np.nanpercentile, np.nanquantile, np.nanmedian)
    holes = draw(_holes_keeping_one(shape, axis)) if nan else np.zeros(shape, bool)
    kwargs = _kw(axis=axis, keepdims=_maybe(draw, st.booleans()))
    args: tuple[Any, ...] = ()
    if fn not in (np.median, np.nanmedian):
        scale = 100.0 if fn in (np.percentile, np.nanpercentile) else 1.0
        # numpy's nan twins misplace the axes of a q of 2 or more dimensions.
        q_shape = draw(shapes(max_dims=1 if nan else 2, max_side=3))
        q = draw(st.one_of(floats(0.0, 1.0), float_arrays(q_shape, elements=floats(0.0, 1.0)))) * scale
        args = (q,)
        kwargs |= _kw(method=_maybe(draw, st.sampled_from(_QUANTILE_METHODS)))

    def call(x: Any) -> Any:
        return fn(np.where(holes, np.nan, x), *args, **kwargs)

    desc = f"{_name(fn)}(x {shape} with {int(holes.sum())} NaNs, {args!r}, **{kwargs})"
    return Case(call, (x,), (True,), desc)


@spec(np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd, np.nancumsum, np.nancumprod)
@st.composite
def _nan_ignoring_cases(draw: st.DrawFn, fn: Any) -> Case:
    scan = fn in (np.nancumsum, np.nancumprod)
    spread = fn in (np.nanvar, np.nanstd)
    product = fn in (np.nanprod, np.nancumprod)
    shape = draw(shapes(min_dims=1, min_side=3 if spread else 1, max_side=3 if product else 4))
    elements = floats(-1.5, 1.5) if product else None
    x = draw(separated_arrays(shape)) if elements is None else draw(float_arrays(shape, elements=elements))
    axis = draw(st.one_of(st.none(), axes(len(shape), single=True))) if scan else draw(axes(len(shape)))
    holes = draw(_holes_keeping_one(shape, axis))
    if spread:  # two numbers per line at least: index 1 on the reduced axes too
        reduced = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
        reduced = [a % len(shape) for a in reduced]
        assume(reduced)
        np.moveaxis(holes, reduced, range(len(reduced)))[(1,) * len(reduced)] = False
    kwargs = _kw(axis=axis)
    if not scan:
        kwargs |= _kw(keepdims=_maybe(draw, st.booleans()))
    if spread:
        kwargs |= _kw(ddof=_maybe(draw, st.sampled_from([0, 1])))

    def call(x: Any) -> Any:
        return fn(np.where(holes, np.nan, x), **kwargs)

    return Case(call, (x,), (True,), f"{_name(fn)}(x {shape} with {int(holes.sum())} NaNs, **{kwargs})")


@spec(np.cov, np.corrcoef)
@st.composite
def _covariance_cases(draw: st.DrawFn, fn: Any) -> Case:
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(3, 5))
    rowvar = _maybe(draw, st.booleans())
    shape = (rows, cols) if rowvar in (True, _OMIT) else (cols, rows)
    m = draw(separated_arrays(draw(st.sampled_from([shape, (cols,)]) if rows == 1 else st.just(shape))))
    with_y = draw(st.booleans())
    y = draw(separated_arrays(m.shape, offset=0.005)) if with_y else None
    kwargs = _kw(rowvar=rowvar)
    if fn is np.cov:
        kwargs |= _kw(bias=_maybe(draw, st.booleans()), ddof=_maybe(draw, st.sampled_from([0, 1, 2])))
        if draw(st.booleans()):
            kwargs["fweights"] = draw(hnp.arrays(np.int64, cols, elements=st.integers(1, 3)))
        if draw(st.booleans()):
            kwargs["aweights"] = draw(float_arrays(cols, elements=floats(0.5, 2.0)))
    operands = (m, y) if with_y else (m,)
    if fn is np.corrcoef:  # away from perfectly correlated variables: the clip to [-1, 1] is a kink
        r = np.atleast_2d(np.corrcoef(*operands, **kwargs))
        assume(np.all(np.abs(r[~np.eye(len(r), dtype=bool)]) < 0.999))
    desc = f"{_name(fn)}(m {m.shape}, y {None if y is None else y.shape}, **{kwargs})"
    return Case(lambda *ops: fn(*ops, **kwargs), operands, draw(diff_mask(len(operands))), desc)


@spec(np.bincount)
@st.composite
def _bincount_cases(draw: st.DrawFn, fn: Any) -> Case:
    n = draw(st.integers(1, 6))
    x = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 5)))
    w = draw(float_arrays((n,)))
    kwargs = _kw(minlength=_maybe(draw, st.integers(0, 8)))
    return Case(lambda w: fn(x, w, **kwargs), (w,), (True,), f"np.bincount(x {x.tolist()}, w, **{kwargs})")


@spec(np.delete, np.insert, np.compress, np.extract, np.resize, np.choose)
@st.composite
def _selection_cases(draw: st.DrawFn, fn: Any) -> Case:
    # numpy arranges the entries; each output reads one traced entry.
    shape = draw(shapes(min_dims=1))
    x = draw(float_arrays(shape))
    axis = draw(st.one_of(st.none(), axes(len(shape), single=True)))
    n = math.prod(shape) if axis is None else shape[axis]
    if fn is np.delete:
        obj = draw(
            st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), max_size=3), st.just(slice(0, n, 2)))
        )
        return Case(lambda x: fn(x, obj, axis), (x,), (True,), f"np.delete(x {shape}, {obj!r}, {axis})")
    if fn is np.insert:
        obj = draw(st.one_of(st.integers(-n, n), st.lists(st.integers(-n, n), min_size=1, max_size=3)))
        count = 1 if isinstance(obj, int) else len(obj)
        flat = axis is None or len(shape) == 1  # else a scalar, which numpy spreads over the new slice
        values = draw(float_arrays(draw(st.sampled_from([(), (count,)] if flat else [()]))))
        return Case(lambda x, v: fn(x, obj, v, axis=axis), (x, values), draw(diff_mask(2)),
                    f"np.insert(x {shape}, {obj!r}, values {values.shape}, axis={axis})")  # fmt: skip
    if fn is np.compress:
        condition = draw(st.lists(st.booleans(), max_size=n))
        return Case(lambda x: fn(condition, x, axis), (x,), (True,), f"np.compress({condition}, x {shape}, {axis})")
    if fn is np.extract:
        condition = draw(hnp.arrays(bool, shape))
        return Case(lambda x: fn(condition, x), (x,), (True,), f"np.extract(mask, x {shape})")
    if fn is np.resize:
        new_shape = draw(st.one_of(st.integers(0, 7), shapes(max_dims=2, min_side=0)))
        return Case(lambda x: fn(x, new_shape), (x,), (True,), f"np.resize(x {shape}, {new_shape!r})")
    k = draw(st.integers(1, 3))
    choices = [draw(float_arrays(draw(stretchable_to(shape)))) for _ in range(k)]
    mode = _maybe(draw, st.sampled_from(["raise", "wrap", "clip"]))
    index = draw(hnp.arrays(np.int64, draw(stretchable_to(shape)), elements=st.integers(0, k - 1) if mode in (
        "raise", _OMIT) else st.integers(-2, k + 2)))  # fmt: skip
    kwargs = _kw(mode=mode)
    return Case(lambda *c: fn(index, list(c), **kwargs), tuple(choices), draw(diff_mask(k)),
                f"np.choose(index {index.shape}, {[c.shape for c in choices]}, **{kwargs})")  # fmt: skip


@spec(np.block, np.broadcast_arrays, np.meshgrid, np.vdot, np.diagflat, np.ediff1d)
@st.composite
def _arranging_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.block:  # a 2 x 2 grid of blocks, or a row of them
        r, c, r2, c2 = (draw(st.integers(1, 3)) for _ in range(4))
        grid_ = draw(st.booleans())
        shapes_ = [(r, c), (r, c2), (r2, c), (r2, c2)] if grid_ else [(r, c), (r, c2)]
        parts = tuple(draw(float_arrays(s)) for s in shapes_)

        def call(*p: Any) -> Any:
            return fn([[p[0], p[1]], [p[2], p[3]]] if len(p) == 4 else [p[0], p[1]])

        return Case(call, parts, draw(diff_mask(len(parts))), f"np.block of {shapes_}")
    if fn is np.broadcast_arrays:
        shapes_ = draw(broadcastable_shapes(draw(st.integers(1, 3))))
        arrays = tuple(draw(float_arrays(s)) for s in shapes_)
        return Case(lambda *a: fn(*a), arrays, (True,) * len(arrays), f"np.broadcast_arrays {shapes_}")
    if fn is np.meshgrid:
        vectors = tuple(draw(float_arrays(shapes(min_dims=1, max_dims=1))) for _ in range(draw(st.integers(1, 3))))
        kwargs = _kw(indexing=_maybe(draw, st.sampled_from(["xy", "ij"])), sparse=_maybe(draw, st.booleans()))
        return Case(lambda *v: fn(*v, **kwargs), vectors, (True,) * len(vectors),
                    f"np.meshgrid {[v.shape for v in vectors]} **{kwargs}")  # fmt: skip
    if fn is np.vdot:
        shape = draw(shapes())
        a, b = draw(float_arrays(shape)), draw(float_arrays(shape[::-1]))  # same size, any shapes
        return Case(fn, (a, b), draw(diff_mask(2)), f"np.vdot {shape}")
    if fn is np.diagflat:
        v = draw(float_arrays(shapes(max_dims=2)))
        k = _maybe(draw, st.integers(-2, 2))
        return Case(lambda v: fn(v, **_kw(k=k)), (v,), (True,), f"np.diagflat(v {v.shape}, k={k!r})")
    x = draw(float_arrays(shapes()))
    begin = _maybe(draw, float_arrays(shapes(max_dims=1)))
    end = _maybe(draw, float_arrays(shapes(max_dims=1)))
    extras = tuple(e for e in (begin, end) if e is not _OMIT)

    def ediff(x: Any, *e: Any) -> Any:
        it = iter(e)
        return fn(x, **_kw(to_begin=begin if begin is _OMIT else next(it), to_end=end if end is _OMIT else next(it)))

    return Case(ediff, (x, *extras), draw(diff_mask(1 + len(extras))), f"np.ediff1d(x {x.shape}, {len(extras)} ends)")


@spec(np.correlate, np.interp, np.unwrap, np.logspace, np.geomspace, np.trim_zeros, np.piecewise)
@st.composite
def _curve_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn is np.correlate:
        a, v = (draw(float_arrays(shapes(min_dims=1, max_dims=1))) for _ in range(2))
        mode = _maybe(draw, st.sampled_from(["full", "same", "valid"]))
        return Case(
            lambda a, v: fn(a, v, **_kw(mode=mode)),
            (a, v),
            draw(diff_mask(2)),
            f"np.correlate {a.shape} {v.shape} {mode!r}",
        )
    if fn is np.interp:
        # Samples on one grid, queries on another half a step off: no query sits on a sample.
        xp = np.sort(
            draw(float_arrays(shapes(min_dims=1, max_dims=1, max_side=5), elements=grid(step=0.1), unique=True))
        )
        fp = draw(float_arrays(xp.shape))
        x = draw(float_arrays(shapes(), elements=grid(-3.5, 3.5, step=0.1, offset=0.05)))
        ends = draw(st.sampled_from(["default", "given"]))
        kwargs = _kw(left=-5.0, right=5.0) if ends == "given" else {}
        diff = (*draw(diff_mask(2)), True)  # fp always: outside the samples nothing else matters
        return Case(lambda x, xp, fp: fn(x, xp, fp, **kwargs), (x, xp, fp), diff,
                    f"np.interp(x {x.shape}, xp {xp.shape}, **{kwargs})")  # fmt: skip
    if fn is np.unwrap:
        shape = draw(shapes(min_dims=1))
        steps = draw(float_arrays(shape, elements=grid(-9.0, 9.0, step=0.1, offset=0.05)))  # no step on a boundary
        axis = _maybe(draw, axes(len(shape), single=True))
        period = _maybe(draw, st.sampled_from([2 * np.pi, 4.0]))
        p = np.cumsum(steps, axis=-1 if axis is _OMIT else axis)
        kwargs = _kw(axis=axis, period=period)
        # The wrapping depends on the differences only; they stay off the boundaries.
        assume(
            np.all(
                np.abs(
                    (np.abs(np.diff(p, axis=kwargs.get("axis", -1))) % kwargs.get("period", 2 * np.pi))
                    - kwargs.get("period", 2 * np.pi) / 2
                )
                > 1e-3
            )
        )
        return Case(lambda p: fn(p, **kwargs), (p,), (True,), f"np.unwrap(p {shape}, **{kwargs})")
    if fn in (np.logspace, np.geomspace):
        shape_a, shape_b = draw(broadcastable_shapes(2, max_dims=2, max_side=3))
        elements = floats(0.3, 2.0) if fn is np.geomspace else floats(-2.0, 2.0)
        sign = draw(st.sampled_from([1.0, -1.0]))  # geomspace: both ends of one sign
        start, stop = (draw(float_arrays(s, elements=elements)) * sign for s in (shape_a, shape_b))
        ndim = len(np.broadcast_shapes(shape_a, shape_b))
        kwargs = _kw(
            num=draw(st.integers(0, 5)),
            endpoint=_maybe(draw, st.booleans()),
            axis=_maybe(draw, st.integers(-ndim - 1, ndim)),
        )
        if fn is np.logspace:
            kwargs |= _kw(base=_maybe(draw, st.sampled_from([2.0, 10.0, np.e])))
        return Case(
            lambda a, b: fn(a, b, **kwargs),
            (start, stop),
            draw(diff_mask(2)),
            f"{_name(fn)}({shape_a}, {shape_b}, **{kwargs})",
        )
    if fn is np.trim_zeros:
        shape = draw(shapes(min_dims=1))
        x = draw(float_arrays(shape, elements=away_from_zero()))
        zeros = draw(hnp.arrays(bool, shape))  # zeros at fixed places: they stay zero under perturbation
        kwargs = _kw(
            trim=_maybe(draw, st.sampled_from(["fb", "f", "b", "BF"])),
            axis=_maybe(draw, st.one_of(st.none(), axes(len(shape), single=True))),
        )
        desc = f"np.trim_zeros(x {shape} with {int(zeros.sum())} zeros, **{kwargs})"
        return Case(lambda x: fn(np.where(zeros, 0.0, x), **kwargs), (x,), (True,), desc)
    shape = draw(shapes())
    x = draw_operand(draw, shape, grid(offset=0.005))  # off the thresholds
    otherwise = draw(st.booleans())
    assume(np.any(np.abs(x) > 0.5))  # some entry goes through a function (else the result is plain zeros)

    def call(x: Any) -> Any:
        functions = [lambda t: t * t, lambda t: np.sin(t) + 1.0, 2.5][: 3 if otherwise else 2]
        return fn(x, [x < -0.5, x > 0.5], functions)

    return Case(call, (x,), (True,), f"np.piecewise(x {shape}, otherwise={otherwise})")


@st.composite
def _newer_function_cases(draw: st.DrawFn, fn: Any) -> Case:
    if fn.__name__ == "unstack":
        shape = draw(shapes(min_dims=1))
        kwargs = _kw(axis=_maybe(draw, axes(len(shape), single=True)))
        return Case(
            lambda x: fn(x, **kwargs), (draw(float_arrays(shape)),), (True,), f"np.unstack({shape}, **{kwargs})"
        )
    if fn.__name__ == "astype":
        x = draw(float_arrays(shapes()))
        # float64 targets only: a float32 result is too coarse for the central differences.
        dtype = draw(st.sampled_from([np.float64, "float64", "f8", np.dtype(np.float64)]))
        kwargs = _kw(copy=_maybe(draw, st.booleans()))
        return Case(lambda x: fn(x, dtype, **kwargs), (x,), (True,), f"np.astype({x.shape}, {dtype}, **{kwargs})")
    shape = draw(shapes(min_dims=1, max_side=3))
    x = draw(float_arrays(shape, elements=floats(-1.5, 1.5)))
    axis = (
        draw(axes(len(shape), single=True))
        if len(shape) > 1
        else _maybe(draw, st.one_of(st.none(), axes(1, single=True)))
    )
    kwargs = _kw(axis=axis, include_initial=_maybe(draw, st.booleans()))
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


spec(*filter(None, (getattr(np, n, None) for n in ("unstack", "astype", "cumulative_sum", "cumulative_prod"))))(
    _newer_function_cases
)


@st.composite
def _modf_cases(draw: st.DrawFn, fn: Any) -> Case:
    x = draw_operand(draw, draw(shapes()), grid(offset=0.005))  # off the whole numbers
    return Case(lambda x: fn(x)[0], (x,), (True,), f"np.modf(x {np.shape(x)})[0] (the integral part is plain)")


UFUNC_SPECS[np.modf] = _modf_cases(np.modf)


@st.composite
def _divmod_cases(draw: st.DrawFn, fn: Any) -> Case:
    # The remainder, away from the jumps where x / y is whole; the quotient is plain.
    x = draw_operand(draw, draw(shapes()), grid(offset=0.0125))
    y = draw(st.sampled_from([0.75, -1.25, 2.5]))
    return Case(lambda x: fn(x, y)[1], (x,), (True,), f"np.divmod(x {np.shape(x)}, {y})[1]")


@st.composite
def _frexp_cases(draw: st.DrawFn, fn: Any) -> Case:
    # The mantissa, away from zero and from the powers of two, where it jumps as the
    # exponent (plain) steps: values sign * m * 2**k with m in [0.55, 0.95].
    shape = draw(shapes())
    size = int(np.prod(shape, dtype=int))
    m = np.array(draw(st.lists(floats(0.55, 0.95), min_size=size, max_size=size)), dtype=float)
    k = np.array(draw(st.lists(st.integers(-3, 3), min_size=size, max_size=size)))
    sign = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=size, max_size=size)))
    x = (sign * np.ldexp(m, k)).reshape(shape)
    return Case(lambda x: fn(x)[0], (x,), (True,), f"np.frexp(x {np.shape(x)})[0]")


@spec(np.fft.fftshift, np.fft.ifftshift)
@st.composite
def _fftshift_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1))  # numpy itself fails on 0-d
    x = draw(float_arrays(shape))
    chosen = _maybe(draw, st.one_of(axes(len(shape), single=True), axes(len(shape))) if shape else st.none())
    kwargs = {} if chosen is _OMIT or chosen is None else {"axes": chosen}
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape}, **{kwargs})")


_NORMS = st.sampled_from([None, "backward", "ortho", "forward"])
_REAL_IN = (np.fft.rfft, np.fft.ihfft, np.fft.rfft2, np.fft.rfftn)
_HALF_IN = (np.fft.irfft, np.fft.hfft, np.fft.irfft2, np.fft.irfftn)  # no default length for one entry


@st.composite
def _signal(draw: st.DrawFn, shape: tuple[int, ...], real: bool) -> np.ndarray:
    x = draw(float_arrays(shape))
    return x if real or draw(st.booleans()) else x + 1j * draw(float_arrays(shape))


@spec(np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft)
@st.composite
def _fft_cases(draw: st.DrawFn, fn: Any) -> Case:
    shape = draw(shapes(min_dims=1, max_side=5))
    axis = _maybe(draw, axes(len(shape), single=True))
    n = _maybe(draw, st.integers(1, 7))
    if fn in _HALF_IN and n is _OMIT and shape[-1 if axis is _OMIT else axis] == 1:
        n = draw(st.integers(1, 7))
    kwargs = _kw(n=n, axis=axis, norm=_maybe(draw, _NORMS))
    x = draw(_signal(shape, fn in _REAL_IN))
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape} {x.dtype}, **{kwargs})")


def _fft_axes(ndim: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Some of ``ndim`` axes (counted from the end), in any order."""
    return st.tuples(st.permutations(range(-ndim, 0)), st.integers(1, ndim)).map(lambda p: tuple(p[0][: p[1]]))


@spec(*(getattr(np.fft, f"{kind}{d}") for kind in ("fft", "ifft", "rfft", "irfft") for d in ("2", "n")))
@st.composite
def _fftn_cases(draw: st.DrawFn, fn: Any) -> Case:
    two = fn.__name__.endswith("2")
    shape = draw(shapes(min_dims=2 if two else 1, min_side=2 if fn in _HALF_IN else 1, max_side=4))
    chosen = _maybe(draw, _fft_axes(len(shape)))
    axes = chosen if chosen is not _OMIT else ((-2, -1) if two else tuple(range(-len(shape), 0)))
    s = _OMIT
    if two or chosen is not _OMIT:  # s without axes is deprecated by numpy, which warns
        s = _maybe(draw, st.lists(st.integers(1, 6), min_size=len(axes), max_size=len(axes)))
    kwargs = _kw(s=s, axes=chosen, norm=_maybe(draw, _NORMS))
    x = draw(_signal(shape, fn in _REAL_IN))
    return Case(lambda x: fn(x, **kwargs), (x,), (True,), f"{_name(fn)}(x {shape} {x.dtype}, **{kwargs})")


UFUNC_SPECS[np.divmod] = _divmod_cases(np.divmod)
UFUNC_SPECS[np.frexp] = _frexp_cases(np.frexp)


def test_divmod_and_frexp_give_plain_quotient_and_exponent() -> None:
    x = np.array([2.5, -3.75])
    (quotient, remainder), _ = ng.vjp(lambda x: np.divmod(x, 2.0), x)
    np.testing.assert_array_equal(quotient, [1.0, -2.0])
    np.testing.assert_array_equal(remainder, np.remainder(x, 2.0))
    (mantissa, exponent), _ = ng.vjp(lambda x: np.frexp(x), x)
    assert exponent.dtype.kind == "i" and type(exponent) is np.ndarray
    np.testing.assert_array_equal(mantissa, np.frexp(x)[0])
    np.testing.assert_allclose(ng.grad(lambda x: np.sum(np.frexp(x)[0]))(x), np.ldexp(1.0, -np.frexp(x)[1]))


# -- the tables are covered ----------------------------------------------------------------------------


def test_every_dispatched_function_has_a_spec() -> None:
    # scipy.special's ufuncs (nodegrad[scipy]) have their specs in tests/test_scipy_special.py.
    missing = [_name(f) for f in UFUNCS if f not in UFUNC_SPECS and f not in scipy_ufuncs()] + [
        _name(f) for f in FUNCTIONS if f not in FUNCTION_SPECS
    ]
    assert not missing, f"dispatched without a spec in tests/test_numpy_api.py: {missing}"
    stale = [_name(f) for f in UFUNC_SPECS if f not in UFUNCS] + [
        _name(f) for f in FUNCTION_SPECS if f not in FUNCTIONS
    ]
    assert not stale, f"specs for functions that are not dispatched: {stale}"


# -- differentiable: forward equals numpy, gradients pass check_grads --------------------------------


def _leaves(out: Any) -> list[Any]:
    return [leaf for item in out for leaf in _leaves(item)] if isinstance(out, (list, tuple)) else [out]


def _assert_same_as_numpy(got: Any, expected: Any) -> None:
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _assert_same_as_numpy(g, e)
        return
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def _check_case(case: Case) -> None:
    note(case.desc)
    expected = case.call(*case.operands)
    recorded: list[Any] = []

    def f(*args: Any) -> Any:
        out = case.of_args()(*args)
        recorded.append(out)
        return out

    out, _ = ng.vjp(f, *case.args)
    assert all(type(leaf) is Traced for leaf in _leaves(recorded[0])), f"{case.desc} did not record: {recorded[0]!r}"
    _assert_same_as_numpy(out, expected)
    check_grads(case.of_args(), *case.args)


@pytest.mark.parametrize("ufunc", list(UFUNC_SPECS), ids=_name)
@given(data=st.data())
def test_ufunc_on_traced_values(ufunc: np.ufunc, data: st.DataObject) -> None:
    _check_case(data.draw(UFUNC_SPECS[ufunc], label="case"))


@pytest.mark.parametrize("func", list(FUNCTION_SPECS), ids=_name)
@given(data=st.data())
def test_function_on_traced_values(func: Any, data: st.DataObject) -> None:
    _check_case(data.draw(FUNCTION_SPECS[func], label="case"))


def test_grad_through_a_dispatched_reduction() -> None:
    x = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    g = ng.grad(lambda x: np.sum(np.mean(x, axis=0) ** 2))(x)
    np.testing.assert_allclose(g, np.broadcast_to(np.mean(x, axis=0), x.shape))


# -- value-only entries ------------------------------------------------------------------------


def _assert_plain(result: Any) -> None:
    for leaf in _leaves(result):
        assert type(leaf) is not Traced, f"a value-only result is traced: {leaf!r}"


def _assert_equal_values(got: Any, expected: Any) -> None:
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _assert_equal_values(g, e)
        return
    if isinstance(expected, np.dtype):
        assert got == expected
        return
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


_ODD_FLOATS = st.one_of(floats(), st.sampled_from([0.0, -0.0, 1.5, -1.5, np.nan, np.inf, -np.inf]))


@pytest.mark.parametrize("ufunc", sorted(VALUE_UFUNCS, key=_name), ids=_name)
@given(data=st.data())
def test_value_ufunc_gives_a_plain_result(ufunc: np.ufunc, data: st.DataObject) -> None:
    shapes_ = data.draw(broadcastable_shapes(ufunc.nin), label="shapes")
    values = [data.draw(float_arrays(s, elements=_ODD_FLOATS), label=f"operand {k}") for k, s in enumerate(shapes_)]
    traced_at = data.draw(diff_mask(ufunc.nin), label="traced")
    with np.errstate(all="ignore"):
        expected = ufunc(*values)
        with ng.Arena() as arena:
            operands = [arena.param(v) if t else v for v, t in zip(values, traced_at, strict=True)]
            size = len(arena)
            got = ufunc(*operands)
    _assert_plain(got)
    assert len(arena) == size, "a value-only ufunc recorded nodes"
    _assert_equal_values(got, expected)


VALUE_CALLS: dict[Any, Callable[[Any, Any], Any]] = {
    np.shape: lambda x, y: np.shape(x),
    np.ndim: lambda x, y: np.ndim(x),
    np.size: lambda x, y: np.size(x),
    np.argmax: lambda x, y: np.argmax(x, axis=-1),
    np.argmin: lambda x, y: np.argmin(x),
    np.argsort: lambda x, y: np.argsort(x, axis=0, kind="stable"),
    np.lexsort: lambda x, y: np.lexsort((x, y), axis=0),
    np.nonzero: lambda x, y: np.nonzero(x),
    np.count_nonzero: lambda x, y: np.count_nonzero(x, axis=0),
    np.isclose: lambda x, y: np.isclose(x, y, atol=0.5),
    np.allclose: lambda x, y: np.allclose(x, y),
    np.array_equal: lambda x, y: np.array_equal(x, x),
    np.zeros_like: lambda x, y: np.zeros_like(x),
    np.ones_like: lambda x, y: np.ones_like(x, dtype=np.float32),
    np.empty_like: lambda x, y: np.empty_like(x).shape,
    np.round: lambda x, y: np.round(x, 1),
    np.around: lambda x, y: np.around(x),
    np.isfinite: lambda x, y: np.isfinite(x),
    np.isnan: lambda x, y: np.isnan(x),
    np.isinf: lambda x, y: np.isinf(x),
    np.result_type: lambda x, y: np.result_type(x, np.float32),
    np.iscomplexobj: lambda x, y: np.iscomplexobj(x),
    np.isrealobj: lambda x, y: np.isrealobj(x),
    np.iscomplex: lambda x, y: np.iscomplex(x),
    np.isreal: lambda x, y: np.isreal(x),
}


def test_every_value_function_has_a_call() -> None:
    assert set(VALUE_CALLS) == set(VALUE_FUNCTIONS), sorted(map(_name, set(VALUE_CALLS) ^ set(VALUE_FUNCTIONS)))


@pytest.mark.parametrize("func", sorted(VALUE_CALLS, key=_name), ids=_name)
@given(data=st.data())
def test_value_function_gives_a_plain_result(func: Any, data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1), label="shape")
    x = data.draw(float_arrays(shape, elements=st.one_of(grid(step=0.5), floats())), label="x")
    y = data.draw(float_arrays(shape), label="y")
    call = VALUE_CALLS[func]
    expected = call(x, y)
    with ng.Arena() as arena:
        tx = arena.param(x)
        size = len(arena)
        got = call(tx, y)
        also = call(tx, arena.param(y))  # both traced
    _assert_plain(got)
    _assert_plain(also)
    assert len(arena) == size + 1, "a value-only function recorded nodes"
    _assert_equal_values(got, expected)
    _assert_equal_values(also, expected)


def test_comparisons_argmax_and_floor_give_plain_arrays() -> None:
    x0 = np.array([[-1.5, 0.25, 2.75], [0.5, -0.75, 1.25]])
    with ng.Arena() as arena:
        x = arena.param(x0)
        size = len(arena)
        results = {
            "x > 0": (x > 0, x0 > 0),
            "x <= x": (x <= x, x0 <= x0),
            "0.5 == x": (0.5 == x, x0 == 0.5),  # noqa: SIM300  (the reflected comparison)
            "np.argmax(x)": (np.argmax(x), np.argmax(x0)),
            "np.argmax(x, axis=1)": (np.argmax(x, axis=1), np.argmax(x0, axis=1)),
            "np.floor(x)": (np.floor(x), np.floor(x0)),
            "np.floor_divide(x, 0.5)": (np.floor_divide(x, 0.5), np.floor_divide(x0, 0.5)),
            "np.sign(x)": (np.sign(x), np.sign(x0)),
        }
        assert len(arena) == size
    for what, (got, expected) in results.items():
        assert isinstance(got, (np.ndarray, np.generic)), f"{what} gave a {type(got).__name__}"
        assert np.asarray(got).dtype == np.asarray(expected).dtype, what
        np.testing.assert_array_equal(got, expected, err_msg=what)
    # A piecewise-constant factor is a constant to the gradient; a mask selects.
    g = ng.grad(lambda x: np.sum(x * np.floor(x) + np.where(x > 0, x, 0.0)))(x0)
    np.testing.assert_array_equal(g, np.floor(x0) + (x0 > 0))


@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin], ids=_name)
def test_fmax_and_fmin_let_a_number_win_over_a_nan(ufunc: np.ufunc) -> None:
    x0 = np.array([np.nan, 1.0, 3.0, np.nan])
    y0 = np.array([2.0, np.nan, 1.0, np.nan])
    out, back = ng.vjp(lambda x, y: ufunc(x, y), x0, y0)
    np.testing.assert_array_equal(out, ufunc(x0, y0))
    gx, gy = back(np.ones(4))
    chose_x = np.isnan(y0) | (ufunc(x0, y0) == x0)  # where both are NaN, x (a NaN) is passed on
    np.testing.assert_array_equal(gx, np.where(chose_x, 1.0, 0.0))
    np.testing.assert_array_equal(gy, np.where(chose_x, 0.0, 1.0))


def test_where_with_only_a_condition_is_nonzero() -> None:
    x0 = np.array([[0.0, 1.5], [-2.0, 0.0]])
    with ng.Arena() as arena:
        got = np.where(arena.param(x0))
    _assert_plain(got)
    _assert_equal_values(got, np.where(x0))


# -- no rule: NoGradientError naming the function, the arena unchanged --------------------------------

_BUF = np.zeros((3, 3))

UNSUPPORTED: list[tuple[str, Callable[[Any], Any], str]] = [
    ("histogram", lambda x: np.histogram(x), "np.histogram"),
    ("copysign-out", lambda x: np.copysign(x, -1.0, out=_BUF), "np.copysign"),
    ("ldexp-out", lambda x: np.ldexp(x, 2, out=_BUF), "np.ldexp"),
    ("add.reduce", lambda x: np.add.reduce(x), "np.add.reduce"),
    ("add.accumulate", lambda x: np.add.accumulate(x, axis=1), "np.add.accumulate"),
    ("multiply.outer", lambda x: np.multiply.outer(x, x), "np.multiply.outer"),
    ("maximum.reduce", lambda x: np.maximum.reduce(x, axis=0), "np.maximum.reduce"),
    ("exp-out", lambda x: np.exp(x, out=_BUF), "np.exp"),
    ("add-out", lambda x: np.add(x, 1.0, out=_BUF), "np.add"),
    ("multiply-where", lambda x: np.multiply(x, 2.0, where=np.ones((3, 3), bool)), "np.multiply"),
    ("exp-dtype", lambda x: np.exp(x, dtype=np.float32), "np.exp"),
    ("sum-dtype", lambda x: np.sum(x, dtype=np.float32), "np.sum"),
    ("sum-out", lambda x: np.sum(x, axis=0, out=np.zeros(3)), "np.sum"),
    ("max-initial", lambda x: np.max(x, initial=0.0), "np.max"),
    ("mean-dtype", lambda x: np.mean(x, dtype=np.float32), "np.mean"),
    ("cumsum-dtype", lambda x: np.cumsum(x, dtype=np.float32), "np.cumsum"),
    ("take-wrap", lambda x: np.take(x, [7], mode="wrap"), "np.take"),
    ("concatenate-dtype", lambda x: np.concatenate([x, x], dtype=np.float32), "np.concatenate"),
]


@pytest.mark.parametrize(("call", "name"), [u[1:] for u in UNSUPPORTED], ids=[u[0] for u in UNSUPPORTED])
def test_no_rule_raises_no_gradient_error_naming_the_function(call: Callable[[Any], Any], name: str) -> None:
    buffer_before = _BUF.copy()
    with ng.Arena() as arena:
        x = arena.param(np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [1.0, 3.0, -2.0]]))
        y = x * 2.0  # a node before the failing call
        size = len(arena)
        with pytest.raises(NoGradientError) as info:
            call(y)
        assert len(arena) == size, f"the failed call left nodes: {[n.op for n in arena][size:]}"
    message = str(info.value)
    assert name in message, message
    assert Path(__file__).name in message, f"the message does not point at the calling line: {message}"
    np.testing.assert_array_equal(_BUF, buffer_before)  # out= was not written either
    # The arena still differentiates what it recorded before.
    np.testing.assert_array_equal(arena.backward(ng.sum(y), wrt=x), np.full((3, 3), 2.0))


def test_no_rule_inside_grad_names_the_function() -> None:
    with pytest.raises(NoGradientError, match=r"np\.unique\b"):
        ng.grad(lambda x: np.sum(np.unique(x)))(np.eye(2))


# Valid numpy calls whose arguments the tables may or may not support: each must either
# give numpy's result (and a right gradient) or raise NoGradientError naming the function,
# never another error and never a different result.
HONOURED_OR_REFUSED: list[tuple[str, Callable[[Any], Any], str]] = [
    ("clip-min-max-keywords", lambda x: np.clip(x, min=-0.5, max=1.0), "np.clip"),
    ("sort-kind-stable", lambda x: np.sort(x, stable=True), "np.sort"),
    ("var-where", lambda x: np.var(x, where=np.array([True, False, True])), "np.var"),
    ("std-where", lambda x: np.std(x, axis=1, where=np.array([True, False, True])), "np.std"),
    ("var-correction", lambda x: np.var(x, axis=0, correction=1), "np.var"),
    ("mean-keepdims-positional-dtype", lambda x: np.mean(x, 0, None, None, True), "np.mean"),
    ("var-all-positional", lambda x: np.var(x, 0, None, None, 1, True), "np.var"),
    ("std-all-positional", lambda x: np.std(x, 1, None, None, 0, True), "np.std"),
    ("var-correction-keepdims", lambda x: np.var(x, axis=1, correction=1, keepdims=True), "np.var"),
    ("pad-per-side-constants", lambda x: np.pad(x, ((0, 1), (2, 0)), constant_values=(1.0, 2.0)), "np.pad"),
    ("reshape-order-F", lambda x: np.reshape(x, (3, 2), order="F"), "np.reshape"),
    ("ravel-order-F", lambda x: np.ravel(x, order="F"), "np.ravel"),
    ("sort-axis-None", lambda x: np.sort(x, axis=None), "np.sort"),
    (
        "take_along_axis-default-axis",
        lambda x: np.take_along_axis(x, np.array([[2, 0, 1], [1, 1, 0]])),
        "np.take_along_axis",
    ),
    (
        "take_along_axis-axis-None",
        lambda x: np.take_along_axis(x, np.array([5, 0, 5]), axis=None),
        "np.take_along_axis",
    ),
]


@pytest.mark.parametrize(
    ("call", "name"), [h[1:] for h in HONOURED_OR_REFUSED], ids=[h[0] for h in HONOURED_OR_REFUSED]
)
def test_numpy_arguments_are_honoured_or_refused(call: Callable[[Any], Any], name: str) -> None:
    x0 = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]])
    expected = call(x0)
    with ng.Arena() as arena:
        x = arena.param(x0)
        size = len(arena)
        try:
            got = call(x)
        except NoGradientError as exc:
            refused: NoGradientError | None = exc
        else:
            refused = None
    if refused is not None:
        assert name in str(refused), str(refused)
        assert len(arena) == size, "the refused call left nodes"
        return
    assert type(got) is Traced
    _assert_same_as_numpy(got.value, expected)
    check_grads(call, x0)


def test_clip_with_crossed_bounds_follows_numpy() -> None:
    # numpy: "if a_min > a_max, clip returns all values equal to a_max", so every output is
    # a_max's and its gradient goes to a_max, none to a_min or x.
    x, lo, hi = np.array([-1.0, 0.2, 2.0]), np.array([0.35, 0.25, 0.15]), 0.1
    out, back = ng.vjp(lambda x, lo, hi: np.clip(x, lo, hi), x, lo, hi)
    np.testing.assert_array_equal(out, np.clip(x, lo, hi))
    g_x, g_lo, g_hi = back(np.ones(3))
    np.testing.assert_array_equal(g_x, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(g_lo, [0.0, 0.0, 0.0])
    assert g_hi == 3.0
    check_grads(lambda x, lo, hi: np.clip(x, lo, hi), x, lo, hi)


def test_where_reads_a_numeric_condition_as_numpy_does() -> None:
    # np.where takes any array as the condition: nonzero entries are true.
    condition = np.array([2, 0, -1])
    x, y = np.array([0.5, -1.5, 2.0]), np.array([3.0, 4.0, 5.0])
    out, back = ng.vjp(lambda x, y: np.where(condition, x, y), x, y)
    np.testing.assert_array_equal(out, np.where(condition, x, y))
    g_x, g_y = back(np.ones(3))
    np.testing.assert_array_equal(g_x, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(g_y, [0.0, 1.0, 0.0])


# -- no silent conversion ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "convert",
    [np.asarray, np.array, lambda t: np.array(t, dtype=np.float64), lambda t: np.array([t, t]), np.ascontiguousarray],
    ids=["asarray", "array", "array-dtype", "array-of-list", "ascontiguousarray"],
)
def test_conversion_to_a_plain_array_raises(convert: Callable[[Any], Any]) -> None:
    with ng.Arena() as arena:
        x = arena.param(np.array([1.0, 2.0]))
        size = len(arena)
        with pytest.raises(ArenaError) as info:
            convert(x)
        assert len(arena) == size
    message = str(info.value)
    assert "cannot become a plain numpy array" in message
    assert "gradient" in message and "stop_gradient" in message and ".value" in message


def test_conversion_inside_grad_raises() -> None:
    with pytest.raises(ArenaError, match="cannot become a plain numpy array"):
        ng.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))


# -- the headline: an unmodified numpy function -------------------------------------------------------


def test_plain_numpy_model_imports_only_numpy() -> None:
    path = Path(plain_numpy_model.__file__)
    source = path.read_text()
    tree = ast.parse(source)
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert imported <= {"numpy", "__future__"}, imported
    assert "numpy" in imported
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }
    assert not names & {"nodegrad", "ng", "Traced", "Arena"}, names


def _model_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, d, k = 5, 3, 4
    weights = rng.normal(size=(d, k)) * 0.7
    bias = rng.normal(size=k) * 0.3
    batch = rng.normal(size=(n, d))
    picks = np.array([0, 2, 2, -1, 2 * k])  # repeats and a negative index
    return weights, bias, batch, picks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unmodified_numpy_pipeline_is_differentiable(seed: int) -> None:
    weights, bias, batch, picks = _model_inputs(seed)
    expected = plain_numpy_model.pipeline_loss(weights, bias, batch, picks)  # plain numpy, no tracing
    value, (g_weights, g_bias) = ng.value_and_grad(plain_numpy_model.pipeline_loss, argnums=(0, 1))(
        weights, bias, batch, picks
    )
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    assert g_weights.shape == weights.shape and g_bias.shape == bias.shape
    assert np.all(np.isfinite(g_weights)) and np.all(np.isfinite(g_bias))
    check_grads(plain_numpy_model.pipeline_loss, weights, bias, batch, picks, argnums=(0, 1), seed=seed)
    # Each argument alone, by central differences along every coordinate.
    eps = 1e-6
    for k, g in ((0, g_weights), (1, g_bias)):
        base = [weights, bias]
        numeric = np.zeros_like(g)
        for i in np.ndindex(g.shape):
            step = np.zeros_like(g)
            step[i] = eps
            plus, minus = list(base), list(base)
            plus[k], minus[k] = base[k] + step, base[k] - step
            numeric[i] = (
                plain_numpy_model.pipeline_loss(*plus, batch, picks)
                - plain_numpy_model.pipeline_loss(*minus, batch, picks)
            ) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_unmodified_numpy_soft_mean_matches_the_hand_derived_gradient() -> None:
    weights, bias, batch, _ = _model_inputs(3)
    g_weights, g_bias = ng.grad(plain_numpy_model.soft_mean, argnums=(0, 1))(weights, bias, batch)
    # L = mean(softplus(t)), t = tanh(u), u = batch @ weights + bias:
    # dL/du = sigmoid(t) * (1 - t**2) / t.size; dL/dweights = batch.T @ dL/du; dL/dbias = sum_rows dL/du.
    t = np.tanh(batch @ weights + bias)
    du = 1.0 / (1.0 + np.exp(-t)) * (1.0 - t**2) / t.size
    np.testing.assert_allclose(g_weights, batch.T @ du, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_bias, du.sum(axis=0), rtol=1e-12, atol=1e-15)
    check_grads(plain_numpy_model.soft_mean, weights, bias, batch, argnums=(0, 1))


# -- argument forms and edge cases of dispatched entries ----------------------------------------------


@pytest.mark.parametrize("fn", [np.var, np.std], ids=_name)
def test_var_and_std_take_numpy_s_positional_arguments(fn: Any) -> None:
    # numpy's order: a, axis, dtype, out, ddof, keepdims
    x0 = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]])
    call = lambda x: fn(x, 0, None, None, 0, True)
    out, _ = ng.vjp(call, x0)
    _assert_same_as_numpy(out, call(x0))
    check_grads(call, x0)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # correction= came with numpy 2
        with pytest.raises(ValueError, match="simultaneously"):
            ng.grad(lambda x: ng.sum(fn(x, ddof=1, correction=1)))(x0)


def test_where_with_one_branch_raises_numpy_s_error() -> None:
    mask, x0 = np.array([True, False]), np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="either both or neither of x and y should be given"):
        np.where(mask, x0)
    with ng.Arena() as arena:
        x = arena.param(x0)
        size = len(arena)
        with pytest.raises(ShapeError, match="either both or neither of x and y should be given") as info:
            np.where(mask, x)
        assert len(arena) == size
    assert isinstance(info.value, ValueError)


def test_ldexp_is_exact_where_the_power_of_two_alone_overflows() -> None:
    x0 = np.array([3e-300, 1.5, 5e300, 0.75])
    n = np.array([1100, -3, -1100, 2])
    out, back = ng.vjp(lambda x: np.ldexp(x, n), x0)
    np.testing.assert_array_equal(out, np.ldexp(x0, n))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(back(np.ones(4))[0], np.ldexp(1.0, n))  # 2**1100 is inf itself
    x32 = np.array([1.5, -2.0], dtype=np.float32)
    out32, back32 = ng.vjp(lambda x: np.ldexp(x, 3), x32)
    assert out32.dtype == np.float32 and back32(np.ones(2, np.float32))[0].dtype == np.float32
    with pytest.raises(DtypeError, match="integers"):
        ng.grad(lambda x: ng.sum(np.ldexp(x, x)))(x0)


def test_copysign_takes_the_sign_bit_of_y_and_gives_y_no_gradient() -> None:
    x0, y0 = np.array([1.5, -2.0, 3.0, -0.5]), np.array([-0.0, 0.0, -1.0, np.inf])
    out, back = ng.vjp(lambda x, y: np.copysign(x, y), x0, y0)
    np.testing.assert_array_equal(out, np.copysign(x0, y0))
    np.testing.assert_array_equal(np.signbit(out), np.signbit(y0))
    gx, gy = back(np.ones(4))
    np.testing.assert_array_equal(gx, np.sign(x0) * np.where(np.signbit(y0), -1.0, 1.0))
    np.testing.assert_array_equal(gy, np.zeros(4))
    # Only y traced: still a traced result, with a zero gradient.
    out_y, back_y = ng.vjp(lambda y: np.copysign(2.0, y), y0)
    np.testing.assert_array_equal(out_y, np.copysign(2.0, y0))
    np.testing.assert_array_equal(back_y(np.ones(4))[0], np.zeros(4))


def test_conjugate_of_real_values_is_the_value() -> None:
    x0 = np.array([1.5, -2.0])
    assert np.conj is np.conjugate
    out, back = ng.vjp(lambda x: np.conj(x) * 2.0, x0)
    np.testing.assert_array_equal(out, 2.0 * x0)
    np.testing.assert_array_equal(back(np.ones(2))[0], [2.0, 2.0])


def test_norm_ord_0_counts_nonzeros_with_zero_gradient() -> None:
    x0 = np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]])
    for axis in (None, 0, 1):
        if axis is None:
            call = lambda x: np.linalg.norm(np.ravel(x), 0)
        else:
            call = lambda x, axis=axis: np.linalg.norm(x, 0, axis=axis, keepdims=True)
        out, back = ng.vjp(call, x0)
        _assert_same_as_numpy(out, call(x0))
        np.testing.assert_array_equal(back(np.ones(np.shape(out)))[0], np.zeros_like(x0))


@pytest.mark.parametrize("order", [1, -1, np.inf, -np.inf])
def test_induced_matrix_norms_share_the_gradient_at_ties(order: Any) -> None:
    # Every column (row) sum of |x| is 3: the tied lines share the gradient evenly.
    x0 = np.array([[1.0, -2.0, 0.5], [2.0, 1.0, 2.5]]) if order in (1, -1) else np.array([[1.0, -2.0], [2.5, 0.5]])
    g = ng.grad(lambda x: np.linalg.norm(x, order))(x0)
    assert np.linalg.norm(x0, order) == 3.0
    lines = x0.shape[1] if order in (1, -1) else x0.shape[0]
    np.testing.assert_allclose(g, np.sign(x0) / lines, rtol=1e-15)


@pytest.mark.skipif(_numpy_ufunc("vecdot") is None, reason="np.vecdot needs numpy >= 2.0")
def test_vecdot_refuses_keywords_it_cannot_honour() -> None:
    x0 = np.ones((2, 3))
    with ng.Arena() as arena:
        x = arena.param(x0)
        size = len(arena)
        with pytest.raises(NoGradientError, match=r"np\.vecdot"):
            np.vecdot(x, x, keepdims=True)
        with pytest.raises(ShapeError, match="3 and 2 entries"):
            np.vecdot(x, np.ones(2))
        assert len(arena) == size


# -- splits, stacks, rotations, cross products, entrywise and along-axis functions -------------------


def test_split_reads_split_points_in_any_order_as_numpy_does() -> None:
    x0 = np.arange(5.0)
    for where in ([3, 1], [-2], [1, -1], [7, 2]):
        call = lambda x, where=where: np.split(x, where)
        out, _ = ng.vjp(call, x0)
        _assert_same_as_numpy(out, call(x0))
        check_grads(call, x0)


def test_row_stack_takes_vstack_s_arguments() -> None:
    a0, b0 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.warns(DeprecationWarning, match="row_stack"):
        expected = np.row_stack([a0, b0], casting="safe")
    with pytest.warns(DeprecationWarning, match="row_stack"):
        out, back = ng.vjp(lambda a, b: np.row_stack([a, b], casting="safe"), a0, b0)
    _assert_same_as_numpy(out, expected)
    np.testing.assert_array_equal(back(np.ones((2, 2)))[0], [1.0, 1.0])


@pytest.mark.parametrize("fn", [np.hstack, np.vstack], ids=_name)
def test_stacks_cast_to_the_dtype_asked_for(fn: Any) -> None:
    a0, b0 = np.array([[1.5, 2.0]]), np.array([[0.25, -1.0]])
    call = lambda a, b: fn([a, b], dtype=np.float32)
    out, back = ng.vjp(call, a0, b0)
    _assert_same_as_numpy(out, call(a0, b0))
    g = back(np.ones(np.shape(out), np.float32))[0]
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, np.ones_like(a0))
    integers = ng.vjp(lambda a, b: fn([a, b], dtype=np.int64, casting="unsafe"), a0, b0)[0]
    _assert_equal_values(integers, fn([a0, b0], dtype=np.int64, casting="unsafe"))
    with ng.Arena() as arena:
        a = arena.param(a0)
        size = len(arena)
        with pytest.raises(TypeError):
            fn([a0, b0], dtype=np.float32, casting="safe")  # numpy refuses it too
        with pytest.raises(DtypeError, match=rf"np\.{fn.__name__}: cannot cast .* 'safe'"):
            fn([a, b0], dtype=np.float32, casting="safe")
        with pytest.raises(DtypeError, match=rf"np\.{fn.__name__}: cannot cast .* 'no'"):
            fn([a, b0.astype(np.float32)], casting="no")
        with pytest.raises(ArgumentError, match=rf"np\.{fn.__name__}: casting must be one of"):
            fn([a, b0], casting="sometimes")
        assert len(arena) == size


def test_cross_of_2_vectors_warns_as_numpy_does() -> None:
    a0, b0 = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[3.0, -1.0, 2.0], [1.0, 1.0, 1.0]])
    for call in (lambda a, b: np.cross(a, b), lambda a, b: np.cross(a, a)):
        with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
            expected = call(a0, b0)
        with pytest.warns(DeprecationWarning, match="2-dimensional vectors") as caught:
            out, _ = ng.vjp(call, a0, b0)
        assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
        _assert_same_as_numpy(out, expected)


_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])

REFUSED_CALLS: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    ("array_split-0-sections", lambda v: np.array_split(v.x, 0), ShapeError, r"np\.array_split: number sections"),
    ("hsplit-0-d", lambda v: np.hsplit(v.entry, 1), ShapeError, r"np\.hsplit: hsplit only works on arrays of 1"),
    ("hsplit-unequal", lambda v: np.hsplit(v.x, 2), ShapeError, r"np\.hsplit: array split does not result"),
    ("vsplit-1-d", lambda v: np.vsplit(v.row, 1), ShapeError, r"np\.vsplit: vsplit only works on arrays of 2"),
    ("dsplit-2-d", lambda v: np.dsplit(v.x, 1), ShapeError, r"np\.dsplit: dsplit only works on arrays of 3"),
    ("array_split-axis", lambda v: np.array_split(v.x, 2, axis=2), ShapeError, r"np\.array_split: axis 2"),
    ("select-lengths", lambda v: np.select([v.x > 0], [v.x, v.x]), ShapeError, r"np\.select: list of cases"),
    ("select-numeric-condition", lambda v: np.select([v.x], [v.x]), DtypeError, r"np\.select: invalid entry 0"),
    (
        "select-shapes",
        lambda v: np.select([v.x > 0, v.x > 1], [v.x, np.ones(2)]),
        ShapeError,
        r"np\.select: shape mismatch",
    ),
    ("rot90-one-axis", lambda v: np.rot90(v.x, axes=(0,)), ShapeError, r"np\.rot90: len\(axes\) must be 2"),
    ("rot90-same-axes", lambda v: np.rot90(v.x, axes=(0, -2)), ShapeError, r"np\.rot90: Axes must be different"),
    ("rot90-axes-range", lambda v: np.rot90(v.x, axes=(0, 3)), ShapeError, r"np\.rot90: Axes=\(0, 3\) out of range"),
    ("fliplr-1-d", lambda v: np.fliplr(v.row), ShapeError, r"np\.fliplr: Input must be >= 2-d"),
    ("flipud-0-d", lambda v: np.flipud(v.entry), ShapeError, r"np\.flipud: Input must be >= 1-d"),
    ("rollaxis-start", lambda v: np.rollaxis(v.x, 0, 3), ShapeError, r"np\.rollaxis: 'start' arg requires -2 <= start"),
    ("rollaxis-axis", lambda v: np.rollaxis(v.x, 2), ShapeError, r"np\.rollaxis: axis 2 is out of bounds"),
    ("cross-0-d", lambda v: np.cross(v.entry, v.x), ShapeError, r"np\.cross: At least one array has zero"),
    ("cross-4-vectors", lambda v: np.cross(v.x, np.ones((2, 4))), ShapeError, r"np\.cross: incompatible"),
    ("cross-axisc", lambda v: np.cross(v.x, v.x, axisc=2), ShapeError, r"np\.cross: axisc 2 is out of bounds"),
    # Complex values: refused where numpy refuses them (tests/test_numpy_complex.py tries every function).
    ("percentile-complex", lambda v: np.percentile(v.complex, 50), DtypeError, r"np\.percentile: a must be .* real"),
    ("fabs-complex", lambda v: np.fabs(v.complex), DtypeError, r"np\.fabs: complex values are not supported"),
    ("floor-complex", lambda v: np.floor(v.complex), DtypeError, r"np\.floor: ufunc 'floor' not supported"),
    ("interp-complex", lambda v: np.interp(v.complex, [0.0, 1.0], [0.0, 1.0]), DtypeError, r"np\.interp: x must be"),
    ("interp-string-x", lambda v: np.interp("abc", [0.0, 1.0, 2.0], v.row), DtypeError, r"np\.interp: x must be real"),
    ("interp-none-x", lambda v: np.interp(None, [0.0, 1.0, 2.0], v.row), DtypeError, r"got None \(dtype object\)"),
    ("interp-string-xp", lambda v: np.interp(v.entry, ["a", "b"], [0.0, 1.0]), DtypeError, r"np\.interp: xp must"),
    ("nan_to_num-complex-nan", lambda v: np.nan_to_num(v.x, nan=1j), DtypeError, r"np\.nan_to_num: nan= must be real"),
    ("nan_to_num-in-place", lambda v: np.nan_to_num(v.x, copy=False), ArgumentError, r"np\.nan_to_num: copy=False"),
    ("nan_to_num-nan-shape", lambda v: np.nan_to_num(v.x, nan=np.zeros(4)), ShapeError, r"np\.nan_to_num: nan="),
    ("linspace-negative", lambda v: np.linspace(v.x, 1.0, -1), ArgumentError, r"np\.linspace: Number of samples, -1"),
    ("linspace-float-num", lambda v: np.linspace(v.x, 1.0, 2.5), ArgumentError, r"np\.linspace: num must be"),
    ("linspace-device", lambda v: np.linspace(v.x, 1.0, device="gpu"), ArgumentError, r"np\.linspace: device"),
    ("partition-order", lambda v: np.partition(v.x, 1, order="a"), ArgumentError, r"np\.partition: order="),
    ("partition-kth", lambda v: np.partition(v.x, 3), ShapeError, r"np\.partition: kth\(=3\) out of bounds"),
    ("gradient-too-short", lambda v: np.gradient(v.x, edge_order=2), ShapeError, r"np\.gradient: Shape of array"),
    ("gradient-edge-order", lambda v: np.gradient(v.x, edge_order=3), ArgumentError, r"np\.gradient: edge_order"),
    ("gradient-2-d-steps", lambda v: np.gradient(v.x, v.x, 1.0), ShapeError, r"np\.gradient: distances must be"),
    ("gradient-step-count", lambda v: np.gradient(v.x, 1.0, 2.0, 3.0), ArgumentError, r"np\.gradient: invalid"),
    ("gradient-coordinates", lambda v: np.gradient(v.x, [1.0], 1.0), ShapeError, r"np\.gradient: when 1d"),
    ("gradient-repeated-axis", lambda v: np.gradient(v.x, axis=(0, -2)), ShapeError, r"np\.gradient: repeated"),
    # numpy's IndexError, as numpy raises
    ("delete-index", lambda v: np.delete(v.x, 9, axis=1), OpIndexError, r"np\.delete: index 9 is out of bounds"),
    ("insert-index", lambda v: np.insert(v.row, 9, 1.0), OpIndexError, r"np\.insert: index 9 is out of bounds"),
    ("compress-out", lambda v: np.compress([True], v.x, 0, out=_BUF), ArgumentError, r"np\.compress: out="),
    ("choose-index", lambda v: np.choose([0, 2, 1], [v.row, v.row]), ShapeError, r"np\.choose: invalid entry"),
    ("block-depths", lambda v: np.block([v.row, [v.row]]), ShapeError, r"np\.block: List depths are mismatched"),
    ("correlate-mode", lambda v: np.correlate(v.row, v.row, "wide"), ArgumentError, r"np\.correlate: mode must"),
    ("correlate-2-d", lambda v: np.correlate(v.x, v.row), ShapeError, r"np\.correlate: needs two non-empty"),
    (
        "interp-period",
        lambda v: np.interp(v.row, [0.0, 1.0, 2.0], v.row, period=2.0),
        ArgumentError,
        r"np\.interp: period=",
    ),
    ("interp-lengths", lambda v: np.interp(v.row, [0.0, 1.0], v.row), ShapeError, r"np\.interp: fp and xp"),
    ("geomspace-zero", lambda v: np.geomspace(v.entry, 0.0), ArgumentError, r"np\.geomspace: Geometric sequence"),
    ("trim_zeros-trim", lambda v: np.trim_zeros(v.row, "x"), ArgumentError, r"np\.trim_zeros: unexpected"),
    ("meshgrid-indexing", lambda v: np.meshgrid(v.row, indexing="yx"), ArgumentError, r"np\.meshgrid: Valid values"),
    ("vdot-lengths", lambda v: np.vdot(v.x, v.row), ShapeError, r"np\.vdot: vectors have different lengths"),
    (
        "piecewise-count",
        lambda v: np.piecewise(v.row, [v.row > 0], [1.0, 2.0, 3.0]),
        ShapeError,
        r"np\.piecewise: with 1",
    ),
    ("astype-complex", lambda v: np.astype(v.complex, np.float64), DtypeError, r"np\.astype: casting complex"),
    ("cumulative_sum-2-d", lambda v: np.cumulative_sum(v.x), ShapeError, r"np\.cumulative_sum: For arrays which"),
    (
        "cumulative_prod-dtype",
        lambda v: np.cumulative_prod(v.row, dtype=np.float32),
        ArgumentError,
        r"np\.cumulative_prod: \['dtype'\]",
    ),
    ("quantile-method", lambda v: np.quantile(v.x, 0.5, method="cubic"), ArgumentError, r"np\.quantile: method"),
    ("percentile-range", lambda v: np.percentile(v.x, 101), ArgumentError, r"np\.percentile: Percentiles must be"),
    ("quantile-range", lambda v: np.quantile(v.x, -0.1), ArgumentError, r"np\.quantile: Quantiles must be"),
    ("quantile-weights", lambda v: np.quantile(v.x, 0.5, weights=np.ones((2, 3))), ArgumentError, r"np\.quantile: "),
    ("quantile-traced-q", lambda v: np.quantile(v.x, v.entry), ArgumentError, r"np\.quantile: q must be"),
    ("median-out", lambda v: np.median(v.x, out=np.zeros(())), ArgumentError, r"np\.median: the argument"),
    ("nanmax-initial", lambda v: np.nanmax(v.x, initial=0.0), ArgumentError, r"np\.nanmax: the argument"),
    ("nanvar-where", lambda v: np.nanvar(v.x, where=np.ones((2, 3), bool)), ArgumentError, r"np\.nanvar: the"),
    ("nanstd-ddof-correction", lambda v: np.nanstd(v.x, ddof=1, correction=1), ArgumentError, r"np\.nanstd: ddof"),
    ("nancumsum-dtype", lambda v: np.nancumsum(v.x, dtype=np.float32), ArgumentError, r"np\.nancumsum: the"),
    ("cov-weights-length", lambda v: np.cov(v.x, aweights=[1.0, 1.0]), ShapeError, r"np\.cov: weights need"),
    ("cov-fweights", lambda v: np.cov(v.x, fweights=[1.5, 1.0, 1.0]), ArgumentError, r"np\.cov: fweights must be"),
    ("cov-aweights", lambda v: np.cov(v.x, aweights=[-1.0, 1.0, 1.0]), ArgumentError, r"np\.cov: aweights cannot"),
    ("bincount-length", lambda v: np.bincount([0, 1], v.row), ShapeError, r"np\.bincount: The weights"),
    ("multi_dot-out", lambda v: np.linalg.multi_dot([v.x, v.row], out=_BUF), ArgumentError, r"np\.linalg\.multi_dot"),
    ("multi_dot-one", lambda v: np.linalg.multi_dot([v.x]), ShapeError, r"np\.linalg\.multi_dot: Expecting"),
    (
        "multi_dot-3-d",
        lambda v: np.linalg.multi_dot([v.x, np.ones((2, 3, 2)), np.ones(2)]),
        ShapeError,
        r"np\.linalg\.multi_dot: 3-dimensional array given",
    ),
    ("cond-not-square", lambda v: np.linalg.cond(v.x, 1), ShapeError, r"np\.linalg\.cond: Last 2 dimensions"),
    ("cond-vector", lambda v: np.linalg.cond(v.row), ShapeError, r"np\.linalg\.cond: needs at least two"),
]
_LINALG_API_REFUSED: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    ("linalg-outer-2-d", lambda v: np.linalg.outer(v.x, v.row), ShapeError, r"np\.linalg\.outer: Input arrays must"),
    ("linalg-cross-2", lambda v: np.linalg.cross(v.x, np.ones((2, 2))), ShapeError, r"np\.linalg\.cross: Both input"),
    ("linalg-cross-axis", lambda v: np.linalg.cross(v.x, v.x, axis=2), ShapeError, r"np\.linalg\.cross: axis 2"),
    ("linalg-trace-1-d", lambda v: np.linalg.trace(v.row), ShapeError, r"np\.linalg\.trace: needs at least two"),
    ("linalg-trace-int", lambda v: np.linalg.trace(v.x, dtype=np.int64), ArgumentError, r"np\.linalg\.trace: dtype"),
    ("linalg-diagonal-0-d", lambda v: np.linalg.diagonal(v.entry), ShapeError, r"np\.linalg\.diagonal: needs"),
    ("linalg-vecdot-sizes", lambda v: np.linalg.vecdot(v.x, np.ones(2)), ShapeError, r"np\.linalg\.vecdot: the vector"),
    ("matrix_transpose-1-d", lambda v: np.matrix_transpose(v.row), ShapeError, r"np\.matrix_transpose: Input array"),
]
if hasattr(np.linalg, "outer"):  # numpy 2.0
    REFUSED_CALLS += _LINALG_API_REFUSED
_POLYNOMIALS_REFUSED: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    ("polyder-negative", lambda v: np.polyder(v.row, -1), ArgumentError, r"np\.polyder: Order of derivative must"),
    ("polyint-negative", lambda v: np.polyint(v.row, -1), ArgumentError, r"np\.polyint: Order of integral must"),
    ("polyint-short-k", lambda v: np.polyint(v.row, 3, k=[1.0, 2.0]), ArgumentError, r"np\.polyint: k must be"),
    ("polyadd-2-d", lambda v: np.polyadd(v.x, np.ones(3)), ShapeError, r"np\.polyadd: coefficients of shape"),
    ("polymul-2-d", lambda v: np.polymul(v.x, v.row), ShapeError, r"np\.polymul: Polynomial must be 1d only"),
    ("polydiv-2-d", lambda v: np.polydiv(v.row, v.x), ShapeError, r"np\.polydiv: needs 1-D coefficients"),
    ("vander-2-d", lambda v: np.vander(v.x), ShapeError, r"np\.vander: x must be a one-dimensional"),
    ("polyfit-deg", lambda v: np.polyfit(v.row, v.row, -1), ArgumentError, r"np\.polyfit: expected deg >= 0"),
    ("polyfit-2-d-x", lambda v: np.polyfit(v.x, v.x, 1), DtypeError, r"np\.polyfit: expected 1D vector for x"),
    ("polyfit-lengths", lambda v: np.polyfit(v.row, np.ones(2), 1), DtypeError, r"np\.polyfit: expected x and y"),
    ("polyfit-w-2-d", lambda v: np.polyfit(v.row, v.row, 1, w=v.x), DtypeError, r"np\.polyfit: expected a 1-d"),
    ("polyfit-cov", lambda v: np.polyfit(v.row, v.row, 2, cov=True), ArgumentError, r"np\.polyfit: the number of"),
]
REFUSED_CALLS += _POLYNOMIALS_REFUSED
REFUSED_CALLS += [
    (
        "apply_along_axis-shapes",
        lambda v: np.apply_along_axis(lambda r: r[r.value > 0.3], 1, v.x),
        ShapeError,
        r"np\.apply_along_axis: the function returned results of different shapes",
    ),
    ("apply_along_axis-axis", lambda v: np.apply_along_axis(np.sum, 2, v.x), ShapeError, r"np\.apply_along_axis: axis"),
    (
        "apply_over_axes-shape",
        lambda v: np.apply_over_axes(lambda a, axis: np.sum(a), v.x, 0),
        ShapeError,
        r"np\.apply_over_axes: function is not returning an array of the correct shape",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "pattern"), [r[1:] for r in REFUSED_CALLS], ids=[r[0] for r in REFUSED_CALLS]
)
def test_invalid_calls_raise_naming_the_function(
    call: Callable[[Any], Any], error: type[Exception], pattern: str
) -> None:
    with ng.Arena() as arena:
        x = arena.param(_X)
        # The operands, recorded before the call: a matrix, a row, an entry, complex values.
        v = SimpleNamespace(x=x, row=x[0], entry=x[0, 0], complex=x * 1j)
        size = len(arena)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(error, match=pattern) as info:
                call(v)
        assert len(arena) == size, f"the failed call left nodes: {[n.op for n in arena][size:]}"
    assert Path(__file__).name in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("m", "kwargs"),
    [
        (np.array([[1.0], [2.0], [4.0]]), {}),  # one sample of three variables: 0 / 0
        (np.array([1.0, 2.0, 4.0]), {"ddof": 3}),  # as many degrees of freedom taken as samples
        (np.array([[1.0], [2.0]]), {"aweights": np.array([1.0])}),
    ],
)
def test_cov_without_degrees_of_freedom_warns_and_divides_by_zero_as_numpy_does(m: Any, kwargs: Any) -> None:
    # It raised a raw ZeroDivisionError; numpy warns and gives inf (nan where 0 / 0).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expected = np.cov(m, **kwargs)
        got, g = ng.value_and_grad(lambda m: np.sum(np.cov(m, **kwargs)))(m)
        w = np.ones(1)  # traced weights, closed over from an enclosing transform
        one = np.array([[1.0], [2.0]])
        inner = ng.grad(lambda s: np.sum(ng.grad(lambda x: np.sum(np.cov(x, aweights=w * s)))(one)))
        nested = inner(1.0)
    np.testing.assert_array_equal(got, np.sum(expected))
    assert np.isnan(g).all() and np.isnan(nested)  # 0 * inf: numpy's arithmetic, differentiated
    ours = [c for c in caught if "Degrees of freedom <= 0" in str(c.message)]
    assert len(ours) == 3 and all(c.filename == __file__ for c in ours)  # numpy's, then ours from this line


def test_sinc_differentiates_to_any_order_at_zero() -> None:
    # sinc(x) = 1 - (pi x)^2 / 6 + (pi x)^4 / 120 - ...: at 0 the derivatives are 0, -pi^2/3, 0, pi^4/5.
    x0 = np.array([0.0, 0.0, 0.5, -1.25])
    d1 = ng.grad(lambda x: np.sum(np.sinc(x)))
    d2 = ng.grad(lambda x: np.sum(d1(x)))
    d4 = ng.grad(lambda x: np.sum(ng.grad(lambda y: np.sum(d2(y)))(x)))
    np.testing.assert_allclose(d1(x0)[:2], 0.0, atol=1e-15)
    np.testing.assert_allclose(d2(x0)[:2], -(np.pi**2) / 3, rtol=1e-12)
    np.testing.assert_allclose(d4(x0)[:2], np.pi**4 / 5, rtol=1e-12)
    check_grads(np.sinc, x0, order=2)


def test_nan_to_num_passes_the_gradient_to_the_finite_entries_only() -> None:
    x0 = np.array([1.5, np.nan, np.inf, -np.inf, -2.0])
    out, back = ng.vjp(lambda x: np.nan_to_num(x), x0)
    _assert_same_as_numpy(out, np.nan_to_num(x0))
    np.testing.assert_array_equal(back(np.ones(5))[0], [1.0, 0.0, 0.0, 0.0, 1.0])
    # Traced replacements get the gradient of the entries they replace.
    out, back = ng.vjp(lambda x, n, p: np.nan_to_num(x, nan=n, posinf=p, neginf=-p), x0, 0.5, 2.0)
    _assert_same_as_numpy(out, np.nan_to_num(x0, nan=0.5, posinf=2.0, neginf=-2.0))
    g_x, g_n, g_p = back(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(g_x, [1.0, 0.0, 0.0, 0.0, 5.0])
    assert (g_n, g_p) == (2.0, 3.0 - 4.0)


def test_linspace_integer_dtype_and_undefined_step_follow_numpy() -> None:
    start0, stop0 = np.array([0.5, -1.5]), 3.25
    with ng.Arena() as arena:
        start = arena.param(start0)
        floored = np.linspace(start, stop0, 4, dtype=np.int64, axis=-1)
        one, step = np.linspace(start, stop0, 1, retstep=True)
    _assert_plain(floored)  # integers: plain data, as astype gives them
    _assert_equal_values(floored, np.linspace(start0, stop0, 4, dtype=np.int64, axis=-1))
    assert type(one) is Traced and np.isnan(step)
    _assert_same_as_numpy(one.value, np.linspace(start0, stop0, 1))
    check_grads(lambda a, b: np.linspace(a, b, 5, endpoint=False, axis=1), start0, np.array([[2.0], [4.0]]), order=2)


def test_gradient_with_coordinates_differentiates_in_the_coordinates() -> None:
    f0, x0 = np.array([1.0, 4.0, 9.0, 16.0]), np.array([0.0, 1.0, 2.0, 3.0])  # uniform coordinates
    out, _ = ng.vjp(lambda f, x: np.gradient(f, x, edge_order=2), f0, x0)
    _assert_same_as_numpy(out, np.gradient(f0, x0, edge_order=2))
    check_grads(lambda f, x: np.gradient(f, x), f0, x0, order=2)
    check_grads(lambda f, x: np.gradient(f, x, edge_order=2), f0, x0)


def test_partition_sends_the_gradient_to_the_entries_it_moved() -> None:
    x0 = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    out, back = ng.vjp(lambda x: np.partition(x, 1), x0)
    expected = np.partition(x0, 1)
    _assert_same_as_numpy(out, expected)
    cotangent = np.arange(1.0, 6.0)
    g = back(cotangent)[0]
    for k, value in enumerate(expected):  # each output's cotangent lands on the entry with its value
        assert g[x0 == value] == cotangent[k]


def test_median_and_nanmax_share_the_gradient_as_documented() -> None:
    # An even count: half to each middle value. Tied maxima share evenly; NaNs get nothing.
    g = ng.grad(lambda x: np.median(x))(np.array([3.0, 1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.0, 0.5])
    g = ng.grad(lambda x: np.nanmax(x))(np.array([2.0, np.nan, 2.0, 1.0]))
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5, 0.0])
    g = ng.grad(lambda x: np.nanmedian(x))(np.array([np.nan, 5.0, 1.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5])


def test_all_nan_slices_give_nan_as_numpy_does() -> None:
    x = np.array([[np.nan, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn in (np.nanmax, np.nanmin, np.nanmedian):
            out, _ = ng.vjp(lambda x, fn=fn: fn(x, axis=1), x)
            np.testing.assert_array_equal(out, fn(x, axis=1))


def test_modf_gives_a_plain_integral_part() -> None:
    x = np.array([-2.5, -2.0, 0.25, 3.0, np.inf])
    (fraction, whole), _ = ng.vjp(lambda x: np.modf(x), x)
    np.testing.assert_array_equal(fraction, np.modf(x)[0])
    np.testing.assert_array_equal(np.signbit(fraction), np.signbit(np.modf(x)[0]))
    assert type(whole) is np.ndarray
    np.testing.assert_array_equal(whole, np.modf(x)[1])
    g = ng.grad(lambda x: np.sum(np.modf(x)[0]))(x)
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0, 0.0, 0.0])  # 0 where the fraction jumps


def test_selections_send_each_gradient_to_the_entry_read() -> None:
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ng.grad(lambda x: np.sum(np.resize(x, 7)))(x), [3.0, 2.0, 2.0])
    np.testing.assert_array_equal(ng.grad(lambda x: np.sum(np.delete(x, [0, 2])))(x), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(ng.grad(lambda w: np.sum(np.bincount([0, 0, 2], w) ** 2))(x), [6.0, 6.0, 6.0])


def test_angle_and_imag_of_real_values_are_plain() -> None:
    x0 = np.array([-1.5, 0.0, -0.0, 2.0])
    with ng.Arena() as arena:
        x = arena.param(x0)
        size = len(arena)
        angles, parts = np.angle(x), np.imag(x)
        assert len(arena) == size
    _assert_plain([angles, parts])
    _assert_equal_values(angles, np.angle(x0))
    _assert_equal_values(parts, np.imag(x0))


def test_poly_of_a_matrix_is_its_characteristic_polynomial_and_refuses_other_shapes() -> None:
    a0 = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +-i: numpy's coefficients are real
    out, back = ng.vjp(np.poly, a0)
    _assert_same_as_numpy(out, np.poly(a0))
    np.testing.assert_allclose(back(np.array([0.0, 0.0, 1.0]))[0], [[0.0, -1.0], [1.0, 0.0]])  # d det / d a
    check_grads(np.poly, a0, order=2)
    with pytest.raises(ShapeError, match=r"np\.poly: input must be 1d or non-empty square 2d array"):
        ng.grad(lambda x: np.sum(np.poly(x)))(np.ones((2, 3)))


def test_polyfit_warns_as_numpy_does_when_the_fit_is_rank_deficient() -> None:
    x0, y0 = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    with pytest.warns(np.exceptions.RankWarning):
        expected = np.polyfit(x0, y0, 2)
    with pytest.warns(np.exceptions.RankWarning):
        out, _ = ng.vjp(lambda y: np.polyfit(x0, y, 2), y0)
    _assert_same_as_numpy(out, expected)
    c, residuals, rank, s, rcond = ng.vjp(lambda y: np.polyfit(x0, y, 2, full=True), y0)[0]
    for got, want in zip((c, residuals, rank, s, rcond), np.polyfit(x0, y0, 2, full=True), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_apply_along_axis_refuses_empty_iteration_dimensions_as_numpy_does() -> None:
    with pytest.raises(ValueError, match="Cannot apply_along_axis when any iteration dimensions are 0"):
        np.apply_along_axis(np.sum, 1, np.ones((0, 3)))
    with pytest.raises(ShapeError, match=r"np\.apply_along_axis: Cannot apply_along_axis when any iteration"):
        ng.grad(lambda x: np.sum(np.apply_along_axis(np.sum, 1, x)))(np.ones((0, 3)))
