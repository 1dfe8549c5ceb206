"""Elementwise ops: arithmetic, transcendental functions, activations, clamp and where.

Binary ops broadcast as numpy does; their rules return broadcast-shaped cotangents and
the sweep reduces them to each input's shape.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.record import record, record1, record2
from nodegrad.engine.registry import PerCotangent, defop
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.errors import DtypeError, ShapeError, user_location

__all__ = [
    "abs",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "cbrt",
    "clamp",
    "cos",
    "cosh",
    "deg2rad",
    "divide",
    "exp",
    "exp2",
    "expm1",
    "fmod",
    "gelu",
    "hypot",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "positive",
    "power",
    "rad2deg",
    "reciprocal",
    "relu",
    "remainder",
    "sigmoid",
    "silu",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "where",
]

_F = "elementwise"
_LN2 = math.log(2.0)


def _unary(name: str, forward: Any, rule: Any, doc: str) -> Any:
    return defop(name, forward, rule, family=_F, doc=doc)


def _binary(name: str, forward: Any, rule_x: Any, rule_y: Any, doc: str) -> Any:
    return defop(name, forward, rule_x, rule_y, family=_F, broadcasts=True, doc=doc)


# -- arithmetic ---------------------------------------------------------------------------

ADD = _binary("add", np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, "x + y")
SUBTRACT = _binary("subtract", np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, "x - y")
MULTIPLY = _binary(
    "multiply", np.multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, "x * y (also x * scalar)"
)
DIVIDE = _binary("divide", np.divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * ans / y, "x / y")
NEGATIVE = _unary("negative", np.negative, lambda g, ans, x: -g, "-x")
POSITIVE = _unary("positive", np.positive, lambda g, ans, x: g, "+x: a new node holding the same value")


def _power_rule_base(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # y * x**(y-1), written so that x == 0 with y >= 1 gives a finite value.
    if type(y) in (int, float):  # a constant exponent: the common case, no array checks
        if y == 2:
            return g * (x + x)  # squares are the commonest: one pass fewer
        return g * 0.0 if y == 0 else g * y * np.power(x, y - 1)
    zero = y == 0  # x ** 0 is constant; y * x ** -1 would be 0 * inf = NaN at x == 0
    if np.any(zero):
        return np.where(zero, 0.0 * g, g * y * np.power(x, np.where(zero, 1.0, y - 1)))
    return g * y * np.power(x, y - 1)


def _power_rule_exponent(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # d/dy x**y = x**y * log(x); defined as 0 where x == 0 (the limit for y > 0), and the
    # log of a negative base is not real, so those entries get 0 as well.
    safe = np.where(x > 0, x, 1)
    return g * ans * np.log(safe)


POWER = _binary("power", np.power, _power_rule_base, _power_rule_exponent, "x ** y")

# -- transcendental -----------------------------------------------------------------------

EXP = _unary("exp", np.exp, lambda g, ans, x: g * ans, "e ** x")
LOG = _unary("log", np.log, lambda g, ans, x: g / x, "natural logarithm")
LOG2 = _unary("log2", np.log2, lambda g, ans, x: g / (x * _LN2), "base-2 logarithm")
SQRT = _unary("sqrt", np.sqrt, lambda g, ans, x: g / (ans + ans), "square root")
SIN = _unary("sin", np.sin, lambda g, ans, x: g * np.cos(x), "sine")
COS = _unary("cos", np.cos, lambda g, ans, x: -g * np.sin(x), "cosine")
TANH = _unary("tanh", np.tanh, lambda g, ans, x: g - g * ans * ans, "hyperbolic tangent")
ABS = _unary("abs", np.abs, lambda g, ans, x: g * np.sign(x), "absolute value (gradient 0 at 0)")
_LN10 = math.log(10.0)
EXPM1 = _unary("expm1", np.expm1, lambda g, ans, x: g * (ans + 1), "e ** x - 1, accurate near 0")
LOG1P = _unary("log1p", np.log1p, lambda g, ans, x: g / (x + 1), "log(1 + x), accurate near 0")
LOG10 = _unary("log10", np.log10, lambda g, ans, x: g / (x * _LN10), "base-10 logarithm")
EXP2 = _unary("exp2", np.exp2, lambda g, ans, x: g * ans * _LN2, "2 ** x")
SQUARE = _unary("square", np.square, lambda g, ans, x: g * (x + x), "x * x")
CBRT = _unary("cbrt", np.cbrt, lambda g, ans, x: g / (3 * ans * ans), "cube root")
RECIPROCAL = _unary("reciprocal", np.reciprocal, lambda g, ans, x: -g * ans * ans, "1 / x")
TAN = _unary("tan", np.tan, lambda g, ans, x: g * (1 + ans * ans), "tangent")
ARCSIN = _unary("arcsin", np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x * x), "inverse sine")
ARCCOS = _unary("arccos", np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x * x), "inverse cosine")
ARCTAN = _unary("arctan", np.arctan, lambda g, ans, x: g / (1 + x * x), "inverse tangent")
SINH = _unary("sinh", np.sinh, lambda g, ans, x: g * np.cosh(x), "hyperbolic sine")
COSH = _unary("cosh", np.cosh, lambda g, ans, x: g * np.sinh(x), "hyperbolic cosine")
ARCSINH = _unary("arcsinh", np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1), "inverse hyperbolic sine")
ARCCOSH = _unary("arccosh", np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1), "inverse hyperbolic cosine")
ARCTANH = _unary("arctanh", np.arctanh, lambda g, ans, x: g / (1 - x * x), "inverse hyperbolic tangent")
DEG2RAD = _unary("deg2rad", np.deg2rad, lambda g, ans, x: g * (math.pi / 180), "degrees to radians")
RAD2DEG = _unary("rad2deg", np.rad2deg, lambda g, ans, x: g * (180 / math.pi), "radians to degrees")

# -- activations --------------------------------------------------------------------------


def _sigmoid(x: Any) -> Any:
    # exp(-log(1 + e^-x)) is accurate for large |x| in both directions.
    return np.exp(-np.logaddexp(0, -x))


def _silu(x: Any) -> Any:
    return x * _sigmoid(x)


def _silu_rule(g: Any, ans: Any, x: Any) -> Any:
    s = _sigmoid(x)
    return g * (s + ans * (1 - s))


_GELU_C = math.sqrt(2.0 / math.pi)
_erf_objects = np.frompyfunc(math.erf, 1, 1)


def _erf(x: Any) -> Any:
    """Elementwise erf in x's own float dtype (numpy has no erf ufunc)."""
    x = np.asarray(x)
    return np.asarray(_erf_objects(x), dtype=x.dtype)


# The gelu op's third mode, never reached from the public function: the standard normal
# CDF Phi(x) itself. The exact rule records Phi this way on traced values (numpy has no
# erf a traced value could dispatch to), and Phi's own rule is the normal pdf, written
# with exp: so exact gelu is differentiable to any order.
_NORMAL_CDF = "normal_cdf"


def _normal_pdf(x: Any) -> Any:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu(x: Any, approximate: Any) -> Any:
    if approximate == _NORMAL_CDF:
        return 0.5 * (1 + _erf(x / math.sqrt(2.0)))
    if approximate:
        return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2.0)))


def _gelu_rule(g: Any, ans: Any, x: Any, approximate: Any) -> Any:
    if approximate == _NORMAL_CDF:
        return g * _normal_pdf(x)
    if approximate:
        inner = _GELU_C * (x + 0.044715 * x**3)
        t = np.tanh(inner)
        d_inner = _GELU_C * (1 + 3 * 0.044715 * x**2)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    cdf = record1(GELU, x, _NORMAL_CDF) if type(x) is Traced else 0.5 * (1 + _erf(x / math.sqrt(2.0)))
    return g * (cdf + x * _normal_pdf(x))


SIGMOID = _unary("sigmoid", _sigmoid, lambda g, ans, x: g * ans * (1 - ans), "logistic function")
RELU = _unary("relu", lambda x: np.maximum(x, 0), lambda g, ans, x: g * (x > 0), "max(x, 0); gradient 0 at 0")
SILU = _unary("silu", _silu, _silu_rule, "x * sigmoid(x)")
GELU = defop("gelu", _gelu, _gelu_rule, None, family=_F, doc="Gaussian error linear unit")


def _tie_share(x: Any, y: Any, ans: Any) -> Any:
    # Where x == y both inputs share the gradient evenly, as a max over a tie does.
    return np.where(x == y, 0.5, (x == ans) * 1.0)


MAXIMUM = _binary(
    "maximum",
    np.maximum,
    lambda g, ans, x, y: g * _tie_share(x, y, ans),
    lambda g, ans, x, y: g * _tie_share(y, x, ans),
    "elementwise maximum; ties split the gradient evenly",
)
MINIMUM = _binary(
    "minimum",
    np.minimum,
    lambda g, ans, x, y: g * _tie_share(x, y, ans),
    lambda g, ans, x, y: g * _tie_share(y, x, ans),
    "elementwise minimum; ties split the gradient evenly",
)

HYPOT = _binary(
    "hypot", np.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans, "sqrt(x**2 + y**2)"
)
ARCTAN2 = _binary(
    "arctan2",
    np.arctan2,
    lambda g, ans, y, x: g * x / (x * x + y * y),
    lambda g, ans, y, x: -g * y / (x * x + y * y),
    "the angle of the point (x, y): arctan2(y, x)",
)


def _logaddexp_weight(exp: Any, x: Any, y: Any, ans: Any) -> Any:
    """The weight ``exp(x - ans)`` of ``x`` in ``logaddexp(x, y)`` (the softmax of the
    pair), also where ``ans`` is infinite: 0 when both are -inf, and when ``ans`` is +inf
    an even share among the +inf inputs. Those weights are constants, and the exponent is
    masked before ``exp``, so no order of derivative sees inf - inf."""
    finite = np.isfinite(ans)
    if np.all(finite):
        return exp(x - ans)
    x_inf, y_inf = np.asarray(x == np.inf), np.asarray(y == np.inf)
    share = np.where(x_inf, np.where(y_inf, 0.5, 1.0), 0.0)
    share = np.where(np.isnan(ans), np.nan, share)
    top = np.where(finite, x, 0) - np.where(finite, ans, 0)
    return np.where(finite, exp(top), share.astype(np.result_type(ans.dtype)))


LOGADDEXP = _binary(
    "logaddexp",
    np.logaddexp,
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp, x, y, ans),
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp, y, x, ans),
    "log(exp(x) + exp(y)), without overflow (at -inf, -inf: gradient 0)",
)
LOGADDEXP2 = _binary(
    "logaddexp2",
    np.logaddexp2,
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp2, x, y, ans),
    lambda g, ans, x, y: g * _logaddexp_weight(np.exp2, y, x, ans),
    "log2(2**x + 2**y), without overflow (at -inf, -inf: gradient 0)",
)
REMAINDER = _binary(
    "remainder",
    np.remainder,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.floor_divide(x, y),
    "x mod y with the sign of y (np.remainder)",
)
FMOD = _binary(
    "fmod",
    np.fmod,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.trunc(np.divide(x, y)),
    "x mod y with the sign of x (np.fmod)",
)

# -- clamp and where --------------------------------------------------------------------------


def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return out


def _inside(x: Any, lo: Any, hi: Any) -> Any:
    inside = np.ones(np.shape(x), dtype=bool)
    if lo is not None:
        inside = inside & (x >= lo)
    if hi is not None:
        inside = inside & (x <= hi)
    return inside


def _raised(x: Any, lo: Any, hi: Any) -> Any:
    # Where lo wins: x below it, and lo itself within hi (numpy's clip applies hi last).
    return (x < lo) if hi is None else (x < lo) & (lo <= hi)


def _lowered(x: Any, lo: Any, hi: Any) -> Any:
    # Where hi wins: max(x, lo) above it.
    return (x > hi) if lo is None else (np.maximum(x, lo) > hi)


CLAMP = defop(
    "clamp",
    _clamp,
    lambda g, ans, x, lo, hi: g * _inside(x, lo, hi),
    lambda g, ans, x, lo, hi: g * _raised(x, lo, hi),
    lambda g, ans, x, lo, hi: g * _lowered(x, lo, hi),
    family=_F,
    broadcasts=True,
    doc="x limited to [lo, hi]; at a bound the gradient goes to x",
)


# np.where on a random mask is branch-bound: about 8x slower than a multiply. For float
# arrays the same selection is exact, and as fast as a multiply, on the bit patterns:
# ``keep`` is all ones where the mask is true and all zeros elsewhere. (``g * mask`` would
# not do: it turns a NaN or Inf in an unselected slot into NaN rather than 0.)


def _keep_bits(mask: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The mask as integers of ``dtype``'s width: all ones where true, all zeros where not."""
    # Negate the one-byte mask before widening it: the same result from a pass over bytes.
    return np.negative(mask.view(np.int8)).astype(np.dtype(f"i{dtype.itemsize}"))


def _usable(keep: Any, *arrays: Any) -> bool:
    return keep is not None and all(
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


_SPLIT = PerCotangent()


def _select(g: Any, mask: Any, keep: Any, chosen: bool) -> Any:
    """``np.where(mask, g, 0)`` (``chosen``) or ``np.where(mask, 0, g)``, exactly."""
    if not _usable(keep, g):
        return np.where(mask, g, 0) if chosen else np.where(mask, 0, g)
    split = _SPLIT.get(g, keep)
    if split is None:
        # A strided cotangent (one part of a concatenation's, say) is made contiguous
        # once: both passes below are then about twice as fast, and the second rule
        # reuses the first's work: g & keep for one branch, g ^ (g & keep) for the other.
        dense = np.ascontiguousarray(g).view(keep.dtype)
        split = (dense, np.bitwise_and(dense, keep))
        _SPLIT.put(g, keep, split)
    dense, kept = split
    return (kept if chosen else np.bitwise_xor(dense, kept)).view(g.dtype)


WHERE = defop(
    "where",
    _where,
    None,
    lambda g, ans, m, a, b, keep: _select(g, m, keep, True),
    lambda g, ans, m, a, b, keep: _select(g, m, keep, False),
    None,
    family=_F,
    broadcasts=True,
    doc="a where mask is true, else b; the mask carries no gradient",
)

# -- public functions -------------------------------------------------------------------------


def add(x: Any, y: Any) -> Any:
    """Elementwise ``x + y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.add(x, 2.0) * x)(3.0)
    8.0
    """
    return record2(ADD, x, y)


def subtract(x: Any, y: Any) -> Any:
    """Elementwise ``x - y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.subtract(1.0, x))(3.0)
    -1.0
    """
    return record2(SUBTRACT, x, y)


def multiply(x: Any, y: Any) -> Any:
    """Elementwise ``x * y`` with numpy broadcasting; a scalar factor records no extra node.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.multiply(x, x))(3.0)
    6.0
    """
    return record2(MULTIPLY, x, y)


def divide(x: Any, y: Any) -> Any:
    """Elementwise ``x / y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda y: ng.divide(1.0, y))(2.0)
    -0.25
    """
    return record2(DIVIDE, x, y)


def negative(x: Any) -> Any:
    """Elementwise ``-x``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.negative)(3.0)
    -1.0
    """
    return record1(NEGATIVE, x)


def power(x: Any, y: Any) -> Any:
    """Elementwise ``x ** y``, differentiable in both; ``d/dy`` is 0 where ``x <= 0``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.power(x, 3.0))(2.0)
    12.0
    """
    return record2(POWER, x, y)


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


def abs(x: Any) -> Any:  # noqa: A001  (numpy's name)
    """Elementwise absolute value; the gradient at 0 is 0.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.abs)(-2.0)
    -1.0
    """
    return record1(ABS, x)


def sigmoid(x: Any) -> Any:
    """Elementwise logistic function ``1 / (1 + e^-x)``, accurate for large ``|x|``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.sigmoid)(0.0)
    0.25
    """
    return record1(SIGMOID, x)


def relu(x: Any) -> Any:
    """Elementwise ``max(x, 0)``; the gradient at 0 is 0.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.relu)(2.0), ng.grad(ng.relu)(-2.0)
    (1.0, 0.0)
    """
    return record1(RELU, x)


def silu(x: Any) -> Any:
    """Elementwise ``x * sigmoid(x)`` (also called swish).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.silu)(0.0)
    0.5
    """
    return record1(SILU, x)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``.

    Parameters
    ----------
    x : array_like
        Input.
    approximate : bool, default True
        Use the tanh approximation (as ``jax.nn.gelu``); ``False`` computes the exact
        ``erf`` form, which is slower.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.gelu)(0.0)
    0.5
    """
    return record1(GELU, x, bool(approximate))


def maximum(x: Any, y: Any) -> Any:
    """Elementwise maximum; where ``x == y`` each input gets half the gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.maximum(x, 1.0))(1.0)
    0.5
    """
    return record2(MAXIMUM, x, y)


def minimum(x: Any, y: Any) -> Any:
    """Elementwise minimum; where ``x == y`` each input gets half the gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.minimum(x, 5.0))(1.0)
    1.0
    """
    return record2(MINIMUM, x, y)


def clamp(x: Any, lo: Any = None, hi: Any = None) -> Any:
    """Limit ``x`` to ``[lo, hi]`` elementwise; ``lo`` and ``hi`` may be arrays or ``None``.

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
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)):
        return value
    return np.asarray(value)


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
    mask_value = np.asarray(unwrap(mask))
    if mask_value.dtype != bool:
        if not np.all((mask_value == 0) | (mask_value == 1)):
            msg = (
                f"where: the mask must be boolean or hold only 0 and 1, got dtype {mask_value.dtype} "
                f"with other values [called at {user_location()}]"
            )
            raise ShapeError(msg)
        mask_value = mask_value.astype(bool)
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
    keep = _keep_bits(mask_value, dtype) if dtype.kind == "f" else None
    return record(WHERE, mask_value, a, b, keep)


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


def square(x: Any) -> Any:
    """Elementwise x * x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.square)(3.0)
    6.0
    """
    return record1(SQUARE, x)


def cbrt(x: Any) -> Any:
    """Elementwise cube root.

    Examples
    --------
    >>> import nodegrad as ng
    >>> round(ng.grad(ng.cbrt)(8.0), 6)
    0.083333
    """
    return record1(CBRT, x)


def reciprocal(x: Any) -> Any:
    """Elementwise 1 / x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.reciprocal)(2.0)
    -0.25
    """
    return record1(RECIPROCAL, x)


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


def remainder(x: Any, y: Any) -> Any:
    """``x mod y`` with the sign of ``y`` (``np.remainder``); ``d/dy = -floor(x / y)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.remainder, argnums=(0, 1))(7.0, 2.0)
    (1.0, -3.0)
    """
    return record2(REMAINDER, x, y)


def fmod(x: Any, y: Any) -> Any:
    """``x mod y`` with the sign of ``x`` (``np.fmod``); ``d/dy = -trunc(x / y)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.fmod, argnums=(0, 1))(-7.0, 2.0)
    (1.0, 3.0)
    """
    return record2(FMOD, x, y)


def positive(x: Any) -> Any:
    """``+x``: the same values in a new node (as ``np.positive``).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.positive)(2.0)
    1.0
    """
    return record1(POSITIVE, x)
