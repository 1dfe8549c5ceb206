"""Elementwise transcendental functions: exponentials, logarithms, roots, trigonometric
and hyperbolic functions and their inverses, ``hypot``, ``arctan2``, ``logaddexp``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values
from nodegrad.engine.levels import has_values
from nodegrad.engine.record import record1, record2
from nodegrad.ops.elementwise.arithmetic import binary, is_complex, unary

__all__ = [
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "cbrt",
    "cos",
    "cosh",
    "deg2rad",
    "exp",
    "exp2",
    "expm1",
    "hypot",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "rad2deg",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
]


_LN2 = math.log(2.0)


# Arrays of at least this many entries are worth writing into: for a large sweep, one
# temporary fewer at the peak; for a small one, the checks would cost more than they save.
_IN_PLACE_SIZE = 4096


def _writable_like(g: Any, made: Any) -> bool:
    """``made`` is a large array the rule has just made and ``g`` a plain array of its shape
    and dtype: ``g * made`` can be written into ``made``. (A traced ``g``, in a recorded
    sweep, is never written into.)"""
    return (
        type(made) is np.ndarray
        and made.size >= _IN_PLACE_SIZE
        and type(g) is np.ndarray
        and g.shape == made.shape
        and g.dtype == made.dtype
    )


def _sin_rule(g: Any, ans: Any, x: Any) -> Any:
    """g cos(x)

    Written into the array cos(x) has just made, when large: one temporary, not two."""
    c = np.cos(x)
    return np.multiply(g, c, out=c) if _writable_like(g, c) else g * c


def _cos_rule(g: Any, ans: Any, x: Any) -> Any:
    """-g sin(x)

    Written into the array sin(x) has just made, when large (``-(g * s)`` is ``-g * s``
    exactly)."""
    s = np.sin(x)
    if _writable_like(g, s):
        np.multiply(g, s, out=s)
        return np.negative(s, out=s)
    return -g * s


def _tanh_rule(g: Any, ans: Any, x: Any) -> Any:
    """g - g ans ans

    For large plain arrays in one temporary array, with the same roundings."""
    if not _writable_like(g, ans):
        return g - g * ans * ans
    t = g * ans
    t *= ans
    return np.subtract(g, t, out=t)


EXP = unary("exp", np.exp, lambda g, ans, x: g * ans, "e ** x")


LOG = unary("log", np.log, lambda g, ans, x: g / x, "natural logarithm")


LOG2 = unary("log2", np.log2, lambda g, ans, x: g / (x * _LN2), "base-2 logarithm")


SQRT = unary("sqrt", np.sqrt, lambda g, ans, x: g / (ans + ans), "square root")


SIN = unary("sin", np.sin, _sin_rule, "sine")


COS = unary("cos", np.cos, _cos_rule, "cosine")


TANH = unary("tanh", np.tanh, _tanh_rule, "hyperbolic tangent")


_LN10 = math.log(10.0)


EXPM1 = unary("expm1", np.expm1, lambda g, ans, x: g * (ans + 1), "e ** x - 1, accurate near 0")


LOG1P = unary("log1p", np.log1p, lambda g, ans, x: g / (x + 1), "log(1 + x), accurate near 0")


LOG10 = unary("log10", np.log10, lambda g, ans, x: g / (x * _LN10), "base-10 logarithm")


EXP2 = unary("exp2", np.exp2, lambda g, ans, x: g * ans * _LN2, "2 ** x")


CBRT = unary("cbrt", np.cbrt, lambda g, ans, x: g / (3 * ans * ans), "cube root (real values only)", real_only=True)


TAN = unary("tan", np.tan, lambda g, ans, x: g * (1 + ans * ans), "tangent")


ARCSIN = unary("arcsin", np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x * x), "inverse sine")


ARCCOS = unary("arccos", np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x * x), "inverse cosine")


ARCTAN = unary("arctan", np.arctan, lambda g, ans, x: g / (1 + x * x), "inverse tangent")


SINH = unary("sinh", np.sinh, lambda g, ans, x: g * np.cosh(x), "hyperbolic sine")


COSH = unary("cosh", np.cosh, lambda g, ans, x: g * np.sinh(x), "hyperbolic cosine")


ARCSINH = unary("arcsinh", np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1), "inverse hyperbolic sine")


def _arccosh_rule(g: Any, ans: Any, x: Any) -> Any:
    # sqrt(z - 1) sqrt(z + 1) is sqrt(z**2 - 1) for real z > 1, but only it is analytic
    # where arccosh is (off its cut z < 1): the other jumps across the imaginary axis.
    if is_complex(x):
        return g / (np.sqrt(x - 1) * np.sqrt(x + 1))
    return g / np.sqrt(x * x - 1)


ARCCOSH = unary("arccosh", np.arccosh, _arccosh_rule, "inverse hyperbolic cosine")


ARCTANH = unary("arctanh", np.arctanh, lambda g, ans, x: g / (1 - x * x), "inverse hyperbolic tangent")


DEG2RAD = unary(
    "deg2rad", np.deg2rad, lambda g, ans, x: g * (math.pi / 180), "degrees to radians (real values)", real_only=True
)


RAD2DEG = unary(
    "rad2deg", np.rad2deg, lambda g, ans, x: g * (180 / math.pi), "radians to degrees (real values)", real_only=True
)


HYPOT = binary(
    "hypot",
    np.hypot,
    lambda g, ans, x, y: g * x / ans,
    lambda g, ans, x, y: g * y / ans,
    "sqrt(x**2 + y**2) (real values)",
    real_only=True,
)


ARCTAN2 = binary(
    "arctan2",
    np.arctan2,
    lambda g, ans, y, x: g * x / (x * x + y * y),
    lambda g, ans, y, x: -g * y / (x * x + y * y),
    "the angle of the point (x, y): arctan2(y, x) (real values)",
    real_only=True,
)


def _logaddexp_weight(exp: Any, x: Any, y: Any, ans: Any) -> Any:
    """The weight ``exp(x - ans)`` of ``x`` in ``logaddexp(x, y)`` (the softmax of the
    pair), also where ``ans`` is infinite: 0 when both are -inf, and when ``ans`` is +inf
    an even share among the +inf inputs. Those weights are constants, and the exponent is
    masked before ``exp``, so no order of derivative sees inf - inf."""
    finite = np.isfinite(ans)
    if not has_values(finite) or np.all(all_values(finite)):  # every example's, under vmap
        return exp(x - ans)
    x_inf, y_inf = x == np.inf, y == np.inf
    share = np.where(x_inf, np.where(y_inf, 0.5, 1.0), 0.0)
    share = np.where(np.isnan(ans), np.nan, share)
    top = np.where(finite, x, 0) - np.where(finite, ans, 0)
    return np.where(finite, exp(top), share.astype(np.result_type(ans.dtype)))


LOGADDEXP = binary(
    "logaddexp",
    np.logaddexp,
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp, x, y, ans),
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp, y, x, ans),
    "log(exp(x) + exp(y)), without overflow (at -inf, -inf: gradient 0; real values)",
    real_only=True,
)


LOGADDEXP2 = binary(
    "logaddexp2",
    np.logaddexp2,
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp2, x, y, ans),
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp2, y, x, ans),
    "log2(2**x + 2**y), without overflow (at -inf, -inf: gradient 0; real values)",
    real_only=True,
)


def exp(x: Any) -> Any:
    """Elementwise ``e ** x``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.exp)(0.0)
    1.0
    """
    return record1(EXP, x)


def log(x: Any) -> Any:
    """Elementwise natural logarithm.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.log)(4.0)
    0.25
    """
    return record1(LOG, x)


def log2(x: Any) -> Any:
    """Elementwise base-2 logarithm.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.log2)(1.0), 6)
    1.442695
    """
    return record1(LOG2, x)


def sqrt(x: Any) -> Any:
    """Elementwise square root.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.sqrt)(4.0)
    0.25
    """
    return record1(SQRT, x)


def sin(x: Any) -> Any:
    """Elementwise sine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.sin)(0.0)
    1.0
    """
    return record1(SIN, x)


def cos(x: Any) -> Any:
    """Elementwise cosine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.cos)(0.0)
    -0.0
    """
    return record1(COS, x)


def tanh(x: Any) -> Any:
    """Elementwise hyperbolic tangent.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.tanh)(0.0)
    1.0
    """
    return record1(TANH, x)


def expm1(x: Any) -> Any:
    """e ** x - 1, accurate for small x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.expm1)(0.0)
    1.0
    """
    return record1(EXPM1, x)


def log1p(x: Any) -> Any:
    """log(1 + x), accurate for small x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.log1p)(0.0)
    1.0
    """
    return record1(LOG1P, x)


def log10(x: Any) -> Any:
    """Elementwise base-10 logarithm.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.log10)(1.0), 6)
    0.434294
    """
    return record1(LOG10, x)


def exp2(x: Any) -> Any:
    """Elementwise 2 ** x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.exp2)(0.0), 6)
    0.693147
    """
    return record1(EXP2, x)


def cbrt(x: Any) -> Any:
    """Elementwise cube root.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.cbrt)(8.0), 6)
    0.083333
    """
    return record1(CBRT, x)


def tan(x: Any) -> Any:
    """Elementwise tangent.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.tan)(0.0)
    1.0
    """
    return record1(TAN, x)


def arcsin(x: Any) -> Any:
    """Elementwise inverse sine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arcsin)(0.0)
    1.0
    """
    return record1(ARCSIN, x)


def arccos(x: Any) -> Any:
    """Elementwise inverse cosine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arccos)(0.0)
    -1.0
    """
    return record1(ARCCOS, x)


def arctan(x: Any) -> Any:
    """Elementwise inverse tangent.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arctan)(1.0)
    0.5
    """
    return record1(ARCTAN, x)


def sinh(x: Any) -> Any:
    """Elementwise hyperbolic sine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.sinh)(0.0)
    1.0
    """
    return record1(SINH, x)


def cosh(x: Any) -> Any:
    """Elementwise hyperbolic cosine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.cosh)(0.0)
    0.0
    """
    return record1(COSH, x)


def arcsinh(x: Any) -> Any:
    """Elementwise inverse hyperbolic sine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arcsinh)(0.0)
    1.0
    """
    return record1(ARCSINH, x)


def arccosh(x: Any) -> Any:
    """Elementwise inverse hyperbolic cosine.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.arccosh)(2.0), 6)
    0.57735
    """
    return record1(ARCCOSH, x)


def arctanh(x: Any) -> Any:
    """Elementwise inverse hyperbolic tangent.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arctanh)(0.0)
    1.0
    """
    return record1(ARCTANH, x)


def deg2rad(x: Any) -> Any:
    """Degrees to radians, elementwise.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.deg2rad)(1.0), 6)
    0.017453
    """
    return record1(DEG2RAD, x)


def rad2deg(x: Any) -> Any:
    """Radians to degrees, elementwise.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.rad2deg)(1.0), 4)
    57.2958
    """
    return record1(RAD2DEG, x)


def hypot(x: Any, y: Any) -> Any:
    """``sqrt(x**2 + y**2)`` elementwise, without overflow.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.hypot, argnums=(0, 1))(3.0, 4.0)
    (0.6, 0.8)
    """
    return record2(HYPOT, x, y)


def arctan2(y: Any, x: Any) -> Any:
    """The angle of the point ``(x, y)``: ``arctan2(y, x)`` elementwise (note the order).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.arctan2, argnums=(0, 1))(1.0, 1.0)
    (0.5, -0.5)
    """
    return record2(ARCTAN2, y, x)


def logaddexp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` elementwise, without overflow.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.logaddexp, argnums=(0, 1))(0.0, 0.0)
    (0.5, 0.5)
    """
    return record2(LOGADDEXP, x, y)


def logaddexp2(x: Any, y: Any) -> Any:
    """``log2(2**x + 2**y)`` elementwise, without overflow.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.logaddexp2, argnums=(0, 1))(1.0, 1.0)
    (0.5, 0.5)
    """
    return record2(LOGADDEXP2, x, y)
