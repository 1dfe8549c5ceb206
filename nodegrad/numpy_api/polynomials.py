"""numpy's polynomial functions, built from the ops: differentiable in the coefficients.

A polynomial is numpy's 1-D array of coefficients, the highest power first. Sums,
differences and products of polynomials (``np.polyadd``, ``np.polysub``, ``np.polymul``),
derivatives and integrals (``np.polyder``, ``np.polyint``), the long division
(``np.polydiv``), the coefficients from the roots or from a matrix's characteristic
polynomial (``np.poly``), the Vandermonde matrix (``np.vander``) and the least-squares fit
(``np.polyfit``) are written as compositions of nodegrad ops taking numpy's own steps, so
their gradients are exact and differentiate again. The roots (``np.roots``) are an op of
their own (:func:`nodegrad.ops.linalg.roots`), and ``np.sort_complex``, which orders them,
a permutation. :data:`POLYNOMIALS` maps numpy's functions onto these.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError
from nodegrad.numpy_api.arguments import as_operand, refusal
from nodegrad.numpy_api.composed import atleast_1d, convolve
from nodegrad.ops import linalg

__all__ = [
    "POLYNOMIALS",
    "poly",
    "polyadd",
    "polyder",
    "polydiv",
    "polyfit",
    "polyint",
    "polymul",
    "polysub",
    "roots",
    "sort_complex",
    "vander",
]


def _shape(a: Any) -> tuple[int, ...]:
    return np.shape(unwrap(a))


def _zeros_before(name: str, a: Any, count: int) -> Any:
    """``a`` with ``count`` zero coefficients in front (higher powers with zero weight)."""
    if count == 0:
        return a
    if len(_shape(a)) != 1:
        raise refusal(name, f"coefficients of shape {_shape(a)} can't be padded: a polynomial is 1-D")
    return ops.cat([np.zeros(count, np.result_type(unwrap(a))), a], 0)


def _combine(name: str, combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def combined(a1: Any, a2: Any) -> Any:
        a1, a2 = atleast_1d(as_operand(a1)), atleast_1d(as_operand(a2))
        longer = max(_shape(a1)[0], _shape(a2)[0])
        return combine(_zeros_before(name, a1, longer - _shape(a1)[0]), _zeros_before(name, a2, longer - _shape(a2)[0]))

    return combined


polyadd = _combine("polyadd", ops.add)
polysub = _combine("polysub", ops.subtract)


def _trimmed(name: str, a: Any) -> Any:
    """``a`` as ``np.poly1d`` reads it: 1-D, without leading zero coefficients (``[0.]`` if
    every coefficient is zero)."""
    a = atleast_1d(as_operand(a))
    if len(_shape(a)) != 1:
        raise refusal(name, "Polynomial must be 1d only.")
    nonzero = np.flatnonzero(unwrap(a))
    if not nonzero.size:
        return ops.where(np.zeros(1, bool), ops.getitem(a, slice(0, 1)), 0.0) if _shape(a)[0] else np.zeros(1)
    return ops.getitem(a, slice(int(nonzero[0]), None)) if nonzero[0] else a


def polymul(a1: Any, a2: Any) -> Any:
    return convolve(_trimmed("polymul", a1), _trimmed("polymul", a2))


def _order(name: str, m: Any, what: str) -> int:
    m = int(m)
    if m < 0:
        other = "polyint" if what == "derivative" else "polyder"
        raise refusal(name, f"Order of {what} must be positive (see {other})", ArgumentError)
    return m


def polyder(p: Any, m: Any = 1) -> Any:
    m = _order("polyder", m, "derivative")
    p = as_operand(p)
    for _ in range(m):
        n = len(unwrap(p)) - 1
        p = ops.getitem(p, slice(None, -1)) * np.arange(n, 0, -1)
    return p


def polyint(p: Any, m: Any = 1, k: Any = None) -> Any:
    m = _order("polyint", m, "integral")
    constants = atleast_1d(as_operand(np.zeros(m) if k is None else k))
    if _shape(constants)[0] == 1 and m > 1:
        constants = ops.getitem(constants, slice(0, 1)) * np.ones(m)
    if _shape(constants)[0] < m:
        raise refusal("polyint", "k must be a scalar or a rank-1 array of length 1 or >m.", ArgumentError)
    p = as_operand(p)
    for i in range(m):
        constant = ops.reshape(ops.getitem(constants, i), (1,))
        p = ops.cat([p / np.arange(len(unwrap(p)), 0, -1), constant], 0)
    return p


def polydiv(u: Any, v: Any) -> Any:
    # numpy's long division, one step per power of the quotient: r[k:k + n + 1] -= d * v.
    u, v = atleast_1d(as_operand(u)), atleast_1d(as_operand(v))
    if len(_shape(u)) != 1 or len(_shape(v)) != 1:
        raise refusal("polydiv", f"needs 1-D coefficients, got shapes {_shape(u)} and {_shape(v)}")
    zero = np.zeros((), np.result_type(unwrap(u), unwrap(v), 1.0))  # numpy's common dtype, complex or float
    u, v = u + zero, v + zero
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = 1.0 / ops.getitem(v, 0)
    r, quotient = u, []
    for k in range(m - n + 1):
        d = scale * ops.getitem(r, k)
        quotient.append(d)
        r = r - ops.cat([np.zeros(k), d * v, np.zeros(m - n - k)], 0)
    if quotient:
        q = ops.stack(quotient, 0)
    else:  # a divisor of higher degree: the quotient is 0, the remainder u itself
        q = ops.where(np.zeros(1, bool), ops.getitem(r, slice(0, 1)) * ops.getitem(v, slice(0, 1)), 0.0)
    start, values = 0, unwrap(r)
    while np.allclose(values[start], 0, rtol=1e-14) and start < len(values) - 1:
        start += 1
    return q, ops.getitem(r, slice(start, None)) if start else r


def poly(seq_of_zeros: Any) -> Any:
    zeros = atleast_1d(as_operand(seq_of_zeros))
    shape = _shape(zeros)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        return _characteristic(zeros)
    if len(shape) != 1:
        raise refusal("poly", "input must be 1d or non-empty square 2d array.")
    if shape[0] == 0:
        return 1.0
    zeros = ops.astype(zeros, np.float64) if np.result_type(unwrap(zeros)).kind in "biu" else zeros
    a: Any = np.ones(1, np.result_type(unwrap(zeros)))
    for i in range(shape[0]):  # a times (x - zero): numpy's convolution with [1, -zero]
        a = ops.cat([a, np.zeros(1)], 0) + ops.cat([np.zeros(1), a], 0) * -ops.getitem(zeros, i)
    return _real_if_conjugate_pairs(a, unwrap(zeros))


def _real_if_conjugate_pairs(coefficients: Any, roots: Any) -> Any:
    """numpy's rule: complex roots that come in conjugate pairs (compared exactly) give
    real coefficients (their imaginary parts are rounding), so the real part is taken."""
    roots = np.asarray(roots)
    if roots.dtype.kind == "c" and np.all(np.sort(roots) == np.sort(roots.conjugate())):
        return ops.real(coefficients)
    return coefficients


def _characteristic(a: Any) -> Any:
    """The coefficients of ``det(x I - a)``, highest power first (numpy's from the
    eigenvalues): the Faddeev-LeVerrier recursion, a polynomial in the entries with no
    complex numbers for a real ``a``, M_k = a M_{k-1} + c_{k-1} I, c_k = -trace(a M_k) / k."""
    n = _shape(a)[0]
    a = ops.astype(a, np.float64) if np.result_type(unwrap(a)).kind in "biu" else a
    eye = np.eye(n)
    coefficients: list[Any] = [np.ones(())]
    product: Any = np.zeros((n, n))
    for k in range(1, n + 1):
        product = ops.matmul(a, product) + eye * coefficients[-1]
        coefficients.append(-ops.sum(ops.multiply(ops.transpose(a), product)) / k)
    wide = np.complex128 if np.iscomplexobj(unwrap(a)) else np.float64
    stacked = ops.stack([ops.astype(c, wide) if type(c) in DIFFERENTIATING else c for c in coefficients], 0)
    # numpy reads the coefficients from the eigenvalues, and so decides when they are real.
    return _real_if_conjugate_pairs(stacked, np.linalg.eigvals(unwrap(a))) if wide == np.complex128 else stacked


def vander(x: Any, N: Any = None, increasing: bool = False) -> Any:  # noqa: N803  (numpy's name)
    x = as_operand(x)
    if len(_shape(x)) != 1:
        raise refusal("vander", "x must be a one-dimensional array or sequence.")
    length = _shape(x)[0]
    columns = length if N is None else int(N)
    dtype = np.promote_types(np.result_type(unwrap(x)), int)
    if columns < 2:  # no power of x: ones (or nothing), which carry no gradient
        return ops.where(
            np.zeros((length, columns), bool), ops.reshape(x, (length, 1)), np.ones((length, columns), dtype)
        )
    # numpy's running product of x along each row: 1, x, x x, ...
    powers = ops.cumprod(ops.broadcast_to(ops.reshape(x, (length, 1)), (length, columns - 1)), 1)
    v = ops.cat([np.ones((length, 1), dtype), powers], 1)
    return v if increasing else ops.flip(v, 1)


def polyfit(x: Any, y: Any, deg: Any, rcond: Any = None, full: bool = False, w: Any = None, cov: Any = False) -> Any:
    order = int(deg) + 1
    x, y = as_operand(x), as_operand(y)
    if deg < 0:
        raise refusal("polyfit", "expected deg >= 0", ArgumentError)
    # numpy's TypeErrors (DtypeError is one) for operands of the wrong shapes.
    for wrong, what in (
        (len(_shape(x)) != 1, "expected 1D vector for x"),
        (np.size(unwrap(x)) == 0, "expected non-empty vector for x"),
        (len(_shape(y)) not in (1, 2), "expected 1D or 2D array for y"),
    ):
        if wrong:
            raise refusal("polyfit", what, DtypeError)
    if _shape(x)[0] != _shape(y)[0]:
        raise refusal("polyfit", "expected x and y to have same length", DtypeError)
    if w is not None and len(_shape(w)) != 1:
        raise refusal("polyfit", "expected a 1-d array for weights", DtypeError)
    if w is not None and _shape(w)[0] != _shape(y)[0]:
        raise refusal("polyfit", "expected w and y to have the same length", DtypeError)
    if cov and cov != "unscaled" and _shape(x)[0] <= order and not full:
        raise refusal("polyfit", "the number of data points must exceed order to scale the covariance matrix",
                    ArgumentError)  # fmt: skip
    x, y = x + 0.0, y + 0.0
    if rcond is None:
        rcond = len(unwrap(x)) * np.finfo(np.result_type(unwrap(x))).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = as_operand(w) + 0.0
        lhs = lhs * ops.reshape(w, (-1, 1))
        rhs = rhs * (ops.reshape(w, (-1, 1)) if len(_shape(y)) == 2 else w)
    scale = ops.sqrt(ops.sum(lhs * lhs, 0))
    lhs = lhs / scale
    c, residuals, rank, s = ops.lstsq(lhs, rhs, rcond)
    c = ops.transpose(ops.transpose(c) / scale)
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=3)
    if full:
        return c, residuals, rank, s, rcond
    if not cov:
        return c
    base = ops.inv(ops.matmul(ops.transpose(lhs), lhs)) / ops.outer(scale, scale)
    if cov == "unscaled":
        factor: Any = 1.0
    else:
        factor = residuals / (len(unwrap(x)) - order)
    if len(_shape(y)) == 1:
        return c, base * factor
    return c, ops.reshape(base, (order, order, 1)) * factor


def roots(p: Any) -> Any:
    p = atleast_1d(as_operand(p))
    if len(_shape(p)) != 1:
        raise refusal("roots", "Input must be a rank-1 array.")
    if np.result_type(unwrap(p)).kind not in "fc":
        p = ops.astype(p, np.float64)
    return linalg.roots(p)


def sort_complex(a: Any) -> Any:
    # numpy sorts complex values by their real parts, then their imaginary parts, along the
    # last axis, and returns complex values: the gradient follows the permutation.
    a = as_operand(a)
    value = unwrap(a)
    if not np.ndim(value):
        raise refusal("sort_complex", "needs an array of at least one dimension, got a scalar")
    order = np.argsort(value, axis=-1, kind="stable")
    out = ops.take_along_axis(a, order, -1)
    if np.iscomplexobj(value):
        return out
    widths = {"b": np.complex64, "h": np.complex64, "B": np.complex64, "H": np.complex64, "g": np.clongdouble}
    return ops.astype(out, widths.get(value.dtype.char, np.complex128))


POLYNOMIALS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.polyadd: polyadd,
    np.polysub: polysub,
    np.polymul: polymul,
    np.polyder: polyder,
    np.polyint: polyint,
    np.polydiv: polydiv,
    np.poly: poly,
    np.vander: vander,
    np.polyfit: polyfit,
    np.roots: roots,
    np.sort_complex: sort_complex,
}
