"""The error functions and the normal distribution's: ``erf``, ``erfc``, ``erfcx``,
``erfinv``, ``erfcinv``, ``ndtr``, ``ndtri`` and ``log_ndtr``.

Their derivatives are Gaussians, written with ``exp`` so they differentiate again; the
inverses differentiate through their own value (``erfinv' = sqrt(pi) / 2 exp(ans**2)``).
``log_ndtr' = pdf / cdf`` is not computed as ``exp(-x**2 / 2 - log_ndtr(x))``, whose two
terms cancel catastrophically for very negative ``x`` (both near ``-x**2 / 2``): since
``ndtr(x) = erfcx(-x / sqrt 2) exp(-x**2 / 2) / 2``, the ratio is exactly
``sqrt(2 / pi) / erfcx(-x / sqrt 2)``, accurate everywhere, and ``erfcx`` is an op of this
room too. ``erf``, ``erfc``, ``erfcx``, ``ndtr`` and ``log_ndtr`` take complex values as
scipy's do, and are holomorphic; the inverses are real.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad.engine.record import record1
from nodegrad.ops.special.base import sc, unary

__all__ = ["erf", "erfc", "erfcinv", "erfcx", "erfinv", "log_ndtr", "ndtr", "ndtri"]

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_SQRT_TWO_PI = math.sqrt(2 * math.pi)
_SQRT_TWO_OVER_PI = math.sqrt(2 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


ERF = unary(
    "erf", sc.erf, lambda g, ans, x: g * (_TWO_OVER_SQRT_PI * np.exp(-x * x)), "the error function", complex_ok=True
)


ERFC = unary(
    "erfc", sc.erfc, lambda g, ans, x: g * (-_TWO_OVER_SQRT_PI * np.exp(-x * x)), "1 - erf(x)", complex_ok=True
)


ERFCX = unary(
    "erfcx",
    sc.erfcx,
    lambda g, ans, x: g * (2 * x * ans - _TWO_OVER_SQRT_PI),
    "exp(x**2) erfc(x), without overflow",
    complex_ok=True,
)


ERFINV = unary(
    "erfinv", sc.erfinv, lambda g, ans, x: g * (_SQRT_PI_OVER_TWO * np.exp(ans * ans)), "inverse of erf (real values)"
)


ERFCINV = unary(
    "erfcinv",
    sc.erfcinv,
    lambda g, ans, x: g * (-_SQRT_PI_OVER_TWO * np.exp(ans * ans)),
    "inverse of erfc (real values)",
)


NDTR = unary(
    "ndtr",
    sc.ndtr,
    lambda g, ans, x: g * (np.exp(-0.5 * x * x) / _SQRT_TWO_PI),
    "the standard normal CDF",
    complex_ok=True,
)


NDTRI = unary(
    "ndtri",
    sc.ndtri,
    lambda g, ans, x: g * (_SQRT_TWO_PI * np.exp(0.5 * ans * ans)),
    "inverse of ndtr (real values)",
)


LOG_NDTR = unary(
    "log_ndtr",
    sc.log_ndtr,
    lambda g, ans, x: g * (_SQRT_TWO_OVER_PI / record1(ERFCX, -_SQRT_HALF * x)),
    "log of the standard normal CDF, accurate in both tails (gradient sqrt(2/pi) / erfcx(-x/sqrt 2))",
    complex_ok=True,
)


def erf(x: Any) -> Any:
    """The error function, ``scipy.special.erf``; holomorphic for complex ``x``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import erf
    >>> round(float(ng.grad(erf)(0.0)), 6)  # 2 / sqrt(pi)
    1.128379
    """
    return record1(ERF, x)


def erfc(x: Any) -> Any:
    """The complementary error function ``1 - erf(x)``, ``scipy.special.erfc``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import erfc
    >>> round(float(ng.grad(erfc)(0.0)), 6)
    -1.128379
    """
    return record1(ERFC, x)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function ``exp(x**2) erfc(x)``,
    ``scipy.special.erfcx``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import erfcx
    >>> round(float(ng.grad(erfcx)(0.0)), 6)
    -1.128379
    """
    return record1(ERFCX, x)


def erfinv(x: Any) -> Any:
    """The inverse of :func:`erf` on ``(-1, 1)``, ``scipy.special.erfinv``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import erfinv
    >>> round(float(ng.grad(erfinv)(0.0)), 6)  # sqrt(pi) / 2
    0.886227
    """
    return record1(ERFINV, x)


def erfcinv(x: Any) -> Any:
    """The inverse of :func:`erfc` on ``(0, 2)``, ``scipy.special.erfcinv``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import erfcinv
    >>> round(float(ng.grad(erfcinv)(1.0)), 6)
    -0.886227
    """
    return record1(ERFCINV, x)


def ndtr(x: Any) -> Any:
    """The standard normal cumulative distribution function, ``scipy.special.ndtr``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import ndtr
    >>> round(float(ng.grad(ndtr)(0.0)), 6)  # 1 / sqrt(2 pi)
    0.398942
    """
    return record1(NDTR, x)


def ndtri(p: Any) -> Any:
    """The inverse of :func:`ndtr` on ``(0, 1)``, ``scipy.special.ndtri``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import ndtri
    >>> round(float(ng.grad(ndtri)(0.5)), 6)  # sqrt(2 pi)
    2.506628
    """
    return record1(NDTRI, p)


def log_ndtr(x: Any) -> Any:
    """The logarithm of :func:`ndtr`, accurate far into both tails,
    ``scipy.special.log_ndtr``; its gradient is accurate there too.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import log_ndtr
    >>> float(ng.grad(log_ndtr)(-1e8))  # pdf / cdf, about -x far in the lower tail
    100000000.00000001
    """
    return record1(LOG_NDTR, x)
