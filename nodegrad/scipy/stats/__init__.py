"""``scipy.stats`` for traced values: one module per distribution, with scipy's names and
signatures (``loc=``, ``scale=``, ``mean=``, ``cov=``, shape parameters by name), so
``from nodegrad.scipy.stats import norm`` and ``import nodegrad.scipy.stats.norm as norm``
both work, as in JAX and HIPS autograd.

Continuous: :mod:`~nodegrad.scipy.stats.norm`, :mod:`~nodegrad.scipy.stats.t`,
:mod:`~nodegrad.scipy.stats.beta`, :mod:`~nodegrad.scipy.stats.gamma`,
:mod:`~nodegrad.scipy.stats.chi2`,
:mod:`~nodegrad.scipy.stats.expon`, :mod:`~nodegrad.scipy.stats.laplace`,
:mod:`~nodegrad.scipy.stats.cauchy`, :mod:`~nodegrad.scipy.stats.logistic`,
:mod:`~nodegrad.scipy.stats.uniform` (``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``,
``logsf``; ``norm.ppf``), :mod:`~nodegrad.scipy.stats.multivariate_normal` (``logpdf``,
``pdf``, ``entropy``) and :mod:`~nodegrad.scipy.stats.dirichlet` (``logpdf``, ``pdf``). Discrete:
:mod:`~nodegrad.scipy.stats.poisson`, :mod:`~nodegrad.scipy.stats.binom`,
:mod:`~nodegrad.scipy.stats.bernoulli` (``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``,
``logsf``).

Values are scipy's, outside the support and for invalid parameters too (``-inf``, 0,
NaN); every method is differentiable in the point and every continuous parameter
(discrete distributions: in their continuous parameters only), broadcasting as scipy
does. The CDFs of ``t``, ``beta``, ``gamma`` and ``chi2`` are not differentiable in their shape
parameters (no closed form): asking raises :class:`~nodegrad.errors.NoGradientError`.
Where every parameter is float32, results stay float32 (scipy computes in float64).

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import norm
>>> ng.grad(lambda mu: norm.logpdf(2.0, loc=mu))(0.0)
2.0
"""

from nodegrad.scipy.stats import (
    bernoulli,
    beta,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    laplace,
    logistic,
    multivariate_normal,
    norm,
    poisson,
    t,
    uniform,
)

__all__ = [
    "bernoulli",
    "beta",
    "binom",
    "cauchy",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "laplace",
    "logistic",
    "multivariate_normal",
    "norm",
    "poisson",
    "t",
    "uniform",
]
