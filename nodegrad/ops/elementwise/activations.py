"""Activation functions: ``sigmoid``, ``relu``, ``silu`` and ``gelu`` (tanh-approximate or
exact, differentiable to any order).
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.record import record1
from nodegrad.engine.registry import defop
from nodegrad.engine.traced import unwrap
from nodegrad.errors import DtypeError, user_location
from nodegrad.ops.batching import elementwise
from nodegrad.ops.elementwise.arithmetic import FAMILY, is_complex, unary

__all__ = ["gelu", "relu", "sigmoid", "silu"]


def _sigmoid(x: Any) -> Any:
    if is_complex(x):  # holomorphic (poles at odd multiples of i pi); numpy has no complex logaddexp
        return 1 / (1 + np.exp(-x))
    # exp(-log(1 + e^-x)) is accurate for large |x| in both directions.
    return np.exp(-np.logaddexp(0, -x))


def _silu(x: Any) -> Any:
    return x * _sigmoid(x)


def _silu_rule(g: Any, ans: Any, x: Any) -> Any:
    s = _sigmoid(x)
    return g * (s + ans * (1 - s))


_GELU_C = math.sqrt(2.0 / math.pi)


@functools.cache
def _erf_ufunc() -> Any:
    """scipy's erf, a compiled ufunc; without scipy, math.erf called once per element.
    Looked up on the first exact gelu, not at import: scipy.special takes a quarter of a
    second to import."""
    try:
        return importlib.import_module("scipy.special").erf
    except ImportError:  # pragma: no cover - exercised in a subprocess test
        return np.frompyfunc(math.erf, 1, 1)


def _erf(x: Any) -> Any:
    """Elementwise erf in x's own float dtype (numpy has no erf ufunc; scipy's is used
    when scipy is installed)."""
    x = np.asarray(x)
    return np.asarray(_erf_ufunc()(x), dtype=x.dtype)


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
    # Recorded (or batched, or staged): differentiable again.
    cdf = record1(GELU, x, _NORMAL_CDF) if type(x) in INTERPRETED else 0.5 * (1 + _erf(x / math.sqrt(2.0)))
    return g * (cdf + x * _normal_pdf(x))


SIGMOID = unary("sigmoid", _sigmoid, lambda g, ans, x: g * ans * (1 - ans), "logistic function")


RELU = unary("relu", lambda x: np.maximum(x, 0), lambda g, ans, x: g * np.greater(x, 0), "max(x, 0); gradient 0 at 0")


SILU = unary("silu", _silu, _silu_rule, "x * sigmoid(x)")


GELU = defop("gelu", _gelu, _gelu_rule, None, family=FAMILY, doc="Gaussian error linear unit", batch=elementwise)


@guarded
def sigmoid(x: Any) -> Any:
    """Elementwise logistic function ``1 / (1 + e^-x)``, accurate for large ``|x|``;
    holomorphic for complex ``x`` (as ``jax.nn.sigmoid``).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.sigmoid)(0.0)
    0.25
    """
    return record1(SIGMOID, x)


@guarded
def relu(x: Any) -> Any:
    """Elementwise ``max(x, 0)``; the gradient at 0 is 0. Complex values are ordered as
    numpy orders them (``np.maximum``: by real part, then imaginary part), and the
    gradient follows the entry chosen.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.relu)(2.0), ng.grad(ng.relu)(-2.0)
    (1.0, 0.0)
    """
    return record1(RELU, x)


@guarded
def silu(x: Any) -> Any:
    """Elementwise ``x * sigmoid(x)`` (also called swish).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.silu)(0.0)
    0.5
    """
    return record1(SILU, x)


@guarded
def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``.

    Parameters
    ----------
    x : array_like
        Input. The tanh approximation is holomorphic and takes complex values as JAX's
        does; the exact form refuses them (:class:`~nodegrad.errors.DtypeError`), as
        ``erf`` here is real.
    approximate : bool, default True
        Use the tanh approximation (as ``jax.nn.gelu``); ``False`` computes the exact
        ``erf`` form, which is slower.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.gelu)(0.0)
    0.5
    """
    if not approximate and is_complex(unwrap(x)):
        msg = (
            "gelu: complex values are not supported by the exact form (erf of a complex number is not computed "
            f"here); pass approximate=True for the tanh form, which is holomorphic [called at {user_location()}]"
        )
        raise DtypeError(msg)
    return record1(GELU, x, bool(approximate))
