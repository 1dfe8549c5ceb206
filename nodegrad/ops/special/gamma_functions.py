"""The gamma function and its relatives: ``gammaln``, ``digamma``, ``polygamma``,
``gamma``, ``rgamma``, ``gammasgn``, ``beta`` and ``betaln``.

Each derivative is a function of this room, so every order is there:
``gammaln' = digamma``, ``digamma' = polygamma(1, x)``,
``polygamma(n, x)' = polygamma(n + 1, x)``, ``gamma' = gamma * digamma``, and
``rgamma = 1 / gamma`` has ``rgamma' = -rgamma * digamma``,
``betaln(a, b) = gammaln(a) + gammaln(b) - gammaln(a + b)`` differentiates into digammas
and ``beta = exp(betaln)`` (with its sign) into ``beta`` times them. ``gammasgn``, the sign
of the gamma function, is piecewise constant: a constant, with no gradient.
Real values only: scipy's ``gamma`` and ``digamma`` take complex values, but the
derivatives they lead to (``polygamma``) are real in scipy, so complex values are refused
here rather than differentiated part of the way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import PER_EXAMPLE
from nodegrad.engine.record import record, record1, record2
from nodegrad.engine.registry import defop
from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops.batching import elementwise
from nodegrad.ops.elementwise.arithmetic import all_values
from nodegrad.ops.special.base import FAMILY, binary, float_like, plain_map, real_only, sc, unary

__all__ = ["beta", "betaln", "digamma", "gamma", "gammaln", "gammasgn", "polygamma", "rgamma"]


def _polygamma(x: Any, n: Any) -> Any:
    out = float_like(sc.polygamma(n, x), x)  # scipy's works in float64 and returns arrays
    return out[()] if out.ndim == 0 else out


def _gammaln_rule(g: Any, ans: Any, x: Any) -> Any:
    return g * record1(DIGAMMA, x)


def _digamma_rule(g: Any, ans: Any, x: Any) -> Any:
    return g * record1(POLYGAMMA, x, 1)


def _polygamma_rule(g: Any, ans: Any, x: Any, n: Any) -> Any:
    return g * record1(POLYGAMMA, x, n + 1)


GAMMALN = unary("gammaln", sc.gammaln, _gammaln_rule, "log abs(Gamma(x)) (real values)")


DIGAMMA = unary("digamma", sc.psi, _digamma_rule, "the derivative of gammaln")


POLYGAMMA = defop(
    "polygamma",
    real_only("polygamma", _polygamma),
    _polygamma_rule,
    None,
    family=FAMILY,
    broadcasts=True,
    doc="the n-th derivative of digamma (n: integers >= 0, no gradient; real values)",
    batch=elementwise,
)


GAMMA = unary("gamma", sc.gamma, lambda g, ans, x: g * ans * record1(DIGAMMA, x), "the gamma function")


def _betaln_rule(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return g * (record1(DIGAMMA, a) - record1(DIGAMMA, a + b))


BETALN = binary(
    "betaln",
    sc.betaln,
    _betaln_rule,
    lambda g, ans, a, b: _betaln_rule(g, ans, b, a),
    "log abs(B(a, b)) (real values)",
)


RGAMMA = unary(
    "rgamma", sc.rgamma, lambda g, ans, x: -g * ans * record1(DIGAMMA, x), "1 / gamma(x), zero at the poles of gamma"
)


def _beta_rule(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return g * ans * (record1(DIGAMMA, a) - record1(DIGAMMA, a + b))


BETA = binary(
    "beta",
    sc.beta,
    _beta_rule,
    lambda g, ans, a, b: _beta_rule(g, ans, b, a),
    "the beta function B(a, b) = gamma(a) gamma(b) / gamma(a + b) (real values)",
)


def gammaln(x: Any) -> Any:
    """Logarithm of the absolute value of the gamma function, ``scipy.special.gammaln``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import gammaln
    >>> round(float(ng.grad(gammaln)(1.0)), 6)  # digamma(1): minus Euler's constant
    -0.577216
    """
    return record1(GAMMALN, x)


def digamma(x: Any) -> Any:
    """The digamma function ``psi(x)``, the derivative of :func:`gammaln`
    (``scipy.special.digamma``, also called ``psi``).

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import digamma
    >>> round(float(ng.grad(digamma)(1.0)), 6)  # polygamma(1, 1) = pi ** 2 / 6
    1.644934
    """
    return record1(DIGAMMA, x)


@guarded
def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of :func:`digamma`, ``scipy.special.polygamma``.

    Parameters
    ----------
    n : int or array_like of int
        The orders, integers ``>= 0`` (no gradient); broadcast against ``x``.
    x : array_like
        Real values.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import polygamma
    >>> round(float(ng.grad(lambda x: polygamma(1, x))(1.0)), 6)  # polygamma(2, 1)
    -2.404114
    """
    values = np.asarray(all_values(n))  # every example's, under vmap
    whole = values.dtype.kind in "iu" or (values.dtype.kind == "f" and bool(np.all(values == np.floor(values))))
    if not whole or np.any(values < 0):
        msg = f"polygamma: n must be integers >= 0, got {values!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    orders = plain_map(lambda v: np.asarray(v).astype(np.int64) if np.ndim(v) else int(v), n)
    return (record if type(orders) in PER_EXAMPLE else record1)(POLYGAMMA, x, orders)


def gamma(x: Any) -> Any:
    """The gamma function, ``scipy.special.gamma``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import gamma
    >>> round(float(ng.grad(gamma)(1.0)), 6)
    -0.577216
    """
    return record1(GAMMA, x)


def betaln(a: Any, b: Any) -> Any:
    """Logarithm of the absolute value of the beta function, ``scipy.special.betaln``;
    differentiable in both arguments.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import betaln
    >>> [round(float(d), 6) for d in ng.grad(betaln, argnums=(0, 1))(1.0, 1.0)]
    [-1.0, -1.0]
    """
    return record2(BETALN, a, b)


def rgamma(x: Any) -> Any:
    """The reciprocal of the gamma function, ``scipy.special.rgamma`` (0 at the poles of
    gamma; its gradient, ``-rgamma * digamma``, is NaN exactly there).

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import rgamma
    >>> round(float(ng.grad(rgamma)(1.0)), 6)  # Euler's constant
    0.577216
    """
    return record1(RGAMMA, x)


def beta(a: Any, b: Any) -> Any:
    """The beta function ``gamma(a) gamma(b) / gamma(a + b)``, ``scipy.special.beta``;
    differentiable in both arguments.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.ops.special import beta
    >>> [round(float(d), 6) for d in ng.grad(beta, argnums=(0, 1))(1.0, 2.0)]
    [-0.75, -0.25]
    """
    return record2(BETA, a, b)


def gammasgn(x: Any) -> Any:
    """The sign of the gamma function, ``scipy.special.gammasgn``: piecewise constant, so a
    plain value with no gradient (as autograd gives it), even of a traced ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.ops.special import gammasgn
    >>> gammasgn(np.array([0.5, -0.5, -1.5]))
    array([ 1., -1.,  1.])
    """
    return plain_map(sc.gammasgn, x)
