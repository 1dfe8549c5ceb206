"""``scipy.special`` for traced values: ``import nodegrad.scipy.special as special``.

The special functions are the ops of :mod:`nodegrad.ops.special` under scipy's names
(``gammaln``, ``digamma`` and ``psi``, ``polygamma``, ``beta``, ``erf``, ``ndtr``,
``log_ndtr``, ``expit``, ``xlogy``, ``i0``, ``jn``, ``iv``, ``gammainc``, ...), differentiable to any order (the
incomplete gamma and beta functions and ``stdtr`` in their point only). Besides them:
``logsumexp`` with scipy's weights and sign, and ``softmax``, ``log_softmax``,
``softplus`` and ``multigammaln``, written with ops as scipy writes them, so their values
are scipy's and their gradients follow.

scipy's own ufuncs take traced values too (``scipy.special.gammaln(x)`` records the same
op); its functions written in Python (``scipy.special.logsumexp``, ``polygamma``) cannot
see traced values, and say to come here.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> import nodegrad.scipy.special as special
>>> ng.grad(lambda x: special.logsumexp(x))(np.zeros(4))
array([0.25, 0.25, 0.25, 0.25])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.guards import guarded
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, user_location
from nodegrad.ops.arguments import normalize_axis
from nodegrad.ops.elementwise.arithmetic import all_values
from nodegrad.ops.special import (
    beta,
    betainc,
    betaincc,
    betaln,
    digamma,
    entr,
    erf,
    erfc,
    erfcinv,
    erfcx,
    erfinv,
    expit,
    gamma,
    gammainc,
    gammaincc,
    gammaln,
    gammasgn,
    i0,
    i0e,
    i1,
    i1e,
    iv,
    ive,
    j0,
    j1,
    jn,
    kl_div,
    log_expit,
    log_ndtr,
    logit,
    logsumexp,
    ndtr,
    ndtri,
    polygamma,
    rel_entr,
    rgamma,
    stdtr,
    xlog1py,
    xlogy,
    y0,
    y1,
    yn,
)

__all__ = [
    "beta",
    "betainc",
    "betaincc",
    "betaln",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcinv",
    "erfcx",
    "erfinv",
    "expit",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "iv",
    "ive",
    "j0",
    "j1",
    "jn",
    "jv",
    "kl_div",
    "log_expit",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "rel_entr",
    "rgamma",
    "softmax",
    "softplus",
    "stdtr",
    "xlog1py",
    "xlogy",
    "y0",
    "y1",
    "yn",
]

#: scipy's other name for :func:`digamma`.
psi = digamma

#: scipy's other name for :func:`jn`: Bessel functions of the first kind of real order.
jv = jn


def _axes(name: str, x: Any, axis: Any) -> tuple[int, ...] | None:
    return normalize_axis(name, axis, np.ndim(unwrap(x)))


@guarded
def softmax(x: Any, axis: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default), computed as
    ``scipy.special.softmax`` computes it (shifted by the maximum, a constant).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad.scipy.special as special
    >>> special.softmax(np.array([[0.0, 0.0], [0.0, np.log(3.0)]]), axis=1).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    axes = _axes("softmax", x, axis)
    shifted = ops.exp(ops.subtract(x, np.max(unwrap(x), axis=axes, keepdims=True)))
    return ops.divide(shifted, ops.sum(shifted, axes, keepdims=True))


@guarded
def log_softmax(x: Any, axis: Any = None) -> Any:
    """``log(softmax(x))`` over ``axis`` (all axes by default), computed as
    ``scipy.special.log_softmax`` computes it: ``x - max - log(sum(exp(x - max)))``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.special as special
    >>> ng.grad(lambda x: special.log_softmax(x)[0])(np.zeros(2))
    array([ 0.5, -0.5])
    """
    axes = _axes("log_softmax", x, axis)
    top = np.max(unwrap(x), axis=axes, keepdims=True)
    shifted = ops.subtract(x, np.where(np.isfinite(top), top, 0))
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, and an all -inf slice NaN, as scipy's
        return ops.subtract(shifted, ops.log(ops.sum(ops.exp(shifted), axes, keepdims=True)))


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))`` without overflow: ``np.logaddexp(0, x)``, as
    ``scipy.special.softplus``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.special as special
    >>> float(ng.grad(special.softplus)(0.0))
    0.5
    """
    return ops.logaddexp(0.0, x)


@guarded
def multigammaln(a: Any, d: int) -> Any:
    """The logarithm of the multivariate gamma function of dimension ``d``,
    ``scipy.special.multigammaln``: ``d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.special as special
    >>> round(float(special.multigammaln(23.5, 10)), 10)
    457.1766747829
    """
    given = np.asarray(d)
    if given.ndim != 0 or given.dtype.kind not in "iuf" or np.floor(given) != given:
        msg = f"multigammaln: d should be a positive integer (dimension), got {d!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    dimension = int(given)
    if np.any(np.asarray(all_values(a)) <= 0.5 * (dimension - 1)):  # every example's, under vmap
        msg = f"multigammaln: a must be > (d - 1) / 2 = {0.5 * (dimension - 1)} [called at {user_location()}]"
        raise ArgumentError(msg)
    terms = ops.stack([gammaln(ops.subtract(a, (j - 1.0) / 2)) for j in range(1, dimension + 1)])
    return ops.add((dimension * (dimension - 1) * 0.25) * math.log(math.pi), ops.sum(terms, 0))
