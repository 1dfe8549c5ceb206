"""nodegrad.scipy.stats: values equal to scipy.stats' own (inside and outside the support,
for invalid parameters, broadcasting), gradients against central differences in the
point and every continuous parameter, and scipy's signatures and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.errors import ArgumentError, LinAlgError, NoGradientError
from nodegrad.testing import check_grads
from tests.strategies import broadcastable_shapes, float_arrays, floats

scipy_stats = pytest.importorskip("scipy.stats")
stats = pytest.importorskip("nodegrad.scipy.stats")

EXAMPLES = settings(max_examples=20, deadline=None)
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")

# name -> (shape parameters: valid domains for values and gradients, support, where it is smooth)
CONTINUOUS: dict[str, tuple[tuple[st.SearchStrategy[float], ...], st.SearchStrategy[float]]] = {
    "norm": ((), floats()),
    # Away from 0, where scipy's stdtr loses digits for df near 1 (see tests/ops/specs_special.py).
    "t": ((floats(0.5, 6.0),), st.one_of(floats(-3.0, -0.1), floats(0.1, 3.0))),
    "beta": ((floats(0.5, 4.0), floats(0.5, 4.0)), floats(0.05, 0.95)),
    "gamma": ((floats(0.5, 4.0),), floats(0.1, 4.0)),
    "chi2": ((floats(1.0, 8.0),), floats(0.1, 8.0)),
    "expon": ((), floats(0.1, 4.0)),
    "laplace": ((), st.one_of(floats(-3.0, -0.1), floats(0.1, 3.0))),  # the kink at loc
    "cauchy": ((), floats()),
    "logistic": ((), floats()),
    "uniform": ((), floats(0.05, 0.95)),
}
# Shape parameters of the CDFs with no closed-form derivative.
NO_CDF_GRADIENT = {"t", "beta", "gamma", "chi2"}


def _close(got: Any, expected: Any, rtol: float = 1e-12) -> None:
    """Equal to ``rtol``, or to 1e-13 absolutely: a log-density near 0 is a difference of
    terms of order 1, whose last bits the two computations may round differently."""
    assert np.shape(got) == np.shape(expected), (np.shape(got), np.shape(expected))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-13, equal_nan=True)


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with np.errstate(all="ignore"):
        return fn(*args, **kwargs)


# -- values: scipy's, everywhere ---------------------------------------------------------------------------

# Points anywhere (outside the support too, infinities, NaN); parameters mostly valid.
_ANYWHERE = st.one_of(floats(-4.0, 4.0), st.sampled_from([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]))
_SHAPE_PARAMETER = st.one_of(floats(0.3, 5.0), st.sampled_from([-1.0, 0.0, np.inf]))
_SCALE = st.one_of(floats(0.2, 3.0), st.sampled_from([0.0, -1.0]))


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@EXAMPLES
@given(data=st.data())
def test_continuous_values_are_scipys(name: str, data: st.DataObject) -> None:
    n_shapes = len(CONTINUOUS[name][0])
    shapes = data.draw(broadcastable_shapes(n_shapes + 3))
    x = data.draw(float_arrays(shapes[0], elements=_ANYWHERE))
    params = [data.draw(float_arrays(s, elements=_SHAPE_PARAMETER)) for s in shapes[1 : n_shapes + 1]]
    loc, scale = data.draw(float_arrays(shapes[-2])), data.draw(float_arrays(shapes[-1], elements=_SCALE))
    ours, theirs = getattr(stats, name), getattr(scipy_stats, name)
    for method in METHODS:
        expected = _quiet(getattr(theirs, method), x, *params, loc=loc, scale=scale)
        _close(getattr(ours, method)(x, *params, loc=loc, scale=scale), expected)


def test_defaults_keywords_and_scalars_are_scipys() -> None:
    assert stats.norm.logpdf(1.0) == scipy_stats.norm.logpdf(1.0)
    assert type(stats.norm.logpdf(1.0)) is type(scipy_stats.norm.logpdf(1.0))
    _close(stats.t.cdf(x=0.5, df=3.0, scale=2.0), scipy_stats.t.cdf(x=0.5, df=3.0, scale=2.0))
    _close(stats.beta.pdf(0.3, a=2.0, b=5.0), scipy_stats.beta.pdf(0.3, a=2.0, b=5.0))
    _close(stats.gamma.logpdf([1.0, 2.0], a=2.5, loc=0.5), scipy_stats.gamma.logpdf([1.0, 2.0], a=2.5, loc=0.5))
    _close(stats.t.logpdf(0.7, np.inf), scipy_stats.t.logpdf(0.7, np.inf))  # the normal distribution
    q = np.array([0.0, 0.025, 0.5, 1.0, 1.5, np.nan])
    _close(stats.norm.ppf(q, 1.0, 2.0), _quiet(scipy_stats.norm.ppf, q, 1.0, 2.0))
    _close(stats.norm.ppf(q, 1.0, -2.0), _quiet(scipy_stats.norm.ppf, q, 1.0, -2.0))


def test_far_tails_are_scipys() -> None:
    x = np.array([-40.0, -10.0, 10.0, 40.0])
    for name in ("norm", "logistic"):
        for method in ("logcdf", "logsf", "logpdf"):
            _close(getattr(getattr(stats, name), method)(x), getattr(getattr(scipy_stats, name), method)(x))
    _close(stats.cauchy.logpdf(np.array([1e200, -3e5])), scipy_stats.cauchy.logpdf(np.array([1e200, -3e5])))


@pytest.mark.parametrize("name", ["poisson", "binom", "bernoulli"])
@EXAMPLES
@given(data=st.data())
def test_discrete_values_are_scipys(name: str, data: st.DataObject) -> None:
    shape_k, shape_p = data.draw(broadcastable_shapes(2))
    k = data.draw(float_arrays(shape_k, elements=st.one_of(st.integers(-2, 12).map(float), _ANYWHERE)))
    loc = data.draw(st.sampled_from([0, 1, -2]))
    if name == "poisson":
        params: list[Any] = [data.draw(float_arrays(shape_p, elements=st.one_of(floats(0.0, 8.0), st.just(-1.0))))]
    else:
        p = data.draw(float_arrays(shape_p, elements=st.one_of(floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 1.5]))))
        params = [p] if name == "bernoulli" else [data.draw(st.sampled_from([0, 1, 6, 10, 5.5, -1])), p]
    ours, theirs = getattr(stats, name), getattr(scipy_stats, name)
    for method in DISCRETE_METHODS:
        _close(getattr(ours, method)(k, *params, loc=loc), _quiet(getattr(theirs, method), k, *params, loc=loc))


# -- gradients ---------------------------------------------------------------------------------------------


@st.composite
def _inside(draw: st.DrawFn, name: str) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """``(x, shape parameters, loc, scale)`` broadcast together, ``z`` inside the support."""
    domains, support = CONTINUOUS[name]
    shapes = draw(broadcastable_shapes(len(domains) + 3))
    loc = draw(float_arrays(shapes[-2], elements=floats(-0.5, 0.5)))
    scale = draw(float_arrays(shapes[-1], elements=floats(0.5, 2.0)))
    z = draw(float_arrays(np.broadcast_shapes(shapes[0], loc.shape, scale.shape), elements=support))
    params = [draw(float_arrays(s, elements=d)) for s, d in zip(shapes[1:-2], domains, strict=True)]
    return z * scale + loc, params, loc, scale


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_continuous_gradients(name: str, method: str, data: st.DataObject) -> None:
    x, params, loc, scale = data.draw(_inside(name))
    fn = getattr(getattr(stats, name), method)
    if method in METHODS[2:] and name in NO_CDF_GRADIENT:
        check_grads(lambda x, loc, scale: fn(x, *params, loc, scale), x, loc, scale)
    else:
        check_grads(lambda x, *rest: fn(x, *rest), x, *params, loc, scale)


@pytest.mark.parametrize("name", ["norm", "t", "beta", "gamma", "chi2", "laplace", "cauchy", "logistic"])
def test_second_derivatives_of_the_log_densities(name: str) -> None:
    domains, _ = CONTINUOUS[name]
    positive = {"beta": np.array([0.2, 0.7]), "gamma": np.array([0.5, 2.0]), "chi2": np.array([0.5, 2.0])}
    x = positive.get(name, np.array([-1.3, 0.4]))
    params = [np.array([1.5, 3.0])[: 1 + i] for i in range(len(domains))]
    check_grads(lambda x, *rest: getattr(stats, name).logpdf(x, *rest), x, *params, 0.1, 1.3, order=2)


def test_cdfs_are_not_differentiable_in_shape_parameters() -> None:
    for fn, name in (
        (lambda df: stats.t.cdf(0.5, df), "stdtr"),
        (lambda a: stats.gamma.sf(0.5, a), "gammaincc"),
        (lambda df: stats.chi2.cdf(0.5, df), "gammainc"),
    ):
        with pytest.raises(NoGradientError, match=f"'{name}' has no gradient rule"):
            ng.grad(fn)(2.0)
    with pytest.raises(NoGradientError, match="'betainc' has no gradient rule for a"):
        ng.grad(lambda a: stats.beta.cdf(0.5, a, 2.0))(2.0)


def test_gradients_are_zero_outside_the_support() -> None:
    g = ng.grad(lambda x: ng.sum(stats.expon.pdf(x)))(np.array([-1.0, 1.0]))
    np.testing.assert_allclose(g, [0.0, -np.exp(-1.0)])
    g = ng.grad(lambda s: ng.sum(stats.norm.logpdf(np.ones(2), 0.0, s)))(np.array([-1.0, 2.0]))
    np.testing.assert_allclose(g, [0.0, -0.5 + 0.125])  # -1/s + x**2/s**3 where the scale is valid


@pytest.mark.parametrize("name", ["poisson", "binom", "bernoulli"])
@pytest.mark.parametrize("method", DISCRETE_METHODS)
def test_discrete_gradients_in_the_continuous_parameter(name: str, method: str) -> None:
    fn = getattr(getattr(stats, name), method)
    log = method.startswith("log")
    # Finite values only: logpmf is -inf at a non-integer k, logcdf at k < 0 for a Bernoulli.
    k = np.array([0.0, 1.0, 3.0, 6.0] if method.endswith("pmf") else [0.0, 1.0, 3.0, 6.0, 2.5])
    if name == "poisson":
        check_grads(lambda mu: fn(k, mu), np.array([0.7, 2.3]).reshape(2, 1), order=2 if method.endswith("pmf") else 1)
    elif name == "binom":
        check_grads(lambda p: fn(k, 8, p), np.array([0.15, 0.6]).reshape(2, 1))
    else:
        kk = np.array([0.0, 1.0]) if method.endswith("pmf") else np.array([0.0, 0.5] if log else [-1.0, 0.0, 0.5])
        check_grads(lambda p: fn(kk, p), np.array([0.25, 0.8]).reshape(2, 1))


# -- multivariate normal and Dirichlet ------------------------------------------------------------------


@st.composite
def _mvn(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    dim = draw(st.integers(1, 3))
    leading = draw(st.sampled_from([(), (1,), (4,), (2, 3)]))
    x = draw(float_arrays((*leading, dim)))
    mean = draw(float_arrays((dim,)))
    root = draw(float_arrays((dim, dim), elements=floats(-1.0, 1.0)))
    return x, mean, root, np.eye(dim)


@EXAMPLES
@given(case=_mvn())
def test_multivariate_normal_values_and_gradients(case: tuple[np.ndarray, ...]) -> None:
    x, mean, root, eye = case
    cov = root @ root.T + eye
    for method in ("logpdf", "pdf"):
        expected = getattr(scipy_stats.multivariate_normal, method)(x, mean, cov)
        _close(getattr(stats.multivariate_normal, method)(x, mean, cov), expected, rtol=1e-11)
    check_grads(lambda x, m, r: stats.multivariate_normal.logpdf(x, m, r @ r.T + eye), x, mean, root)


@EXAMPLES
@given(case=_mvn())
def test_multivariate_normal_entropy(case: tuple[np.ndarray, ...]) -> None:
    _, mean, root, eye = case
    cov = root @ root.T + eye
    _close(stats.multivariate_normal.entropy(mean, cov), scipy_stats.multivariate_normal.entropy(mean, cov))
    diagonal = np.diag(cov)
    _close(stats.multivariate_normal.entropy(mean, diagonal), scipy_stats.multivariate_normal.entropy(mean, diagonal))
    check_grads(lambda r: stats.multivariate_normal.entropy(mean, r @ r.T + eye), root, order=2)
    # inv(cov) / 2 along symmetric directions: HIPS autograd's gradient, held on the lower triangle
    direction = root + root.T
    along = ng.jvp(lambda c: stats.multivariate_normal.entropy(None, c), (cov,), (direction,))[1]
    np.testing.assert_allclose(along, 0.5 * np.sum(np.linalg.inv(cov) * direction), rtol=1e-10, atol=1e-12)


def test_multivariate_normal_entropy_reads_its_arguments_as_scipy_does() -> None:
    mvn, theirs = stats.multivariate_normal, scipy_stats.multivariate_normal
    for args in ((), (None, 2.0), (np.zeros(3), 0.5), (np.zeros(2), np.array([1.0, 3.0]))):
        _close(mvn.entropy(*args), theirs.entropy(*args))
    singular = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    expected = theirs(None, singular, allow_singular=True).entropy()
    _close(mvn.entropy(None, singular, allow_singular=True), expected)
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular"):
        mvn.entropy(None, singular)
    with pytest.raises(LinAlgError, match="positive semidefinite"):
        mvn.entropy(None, -np.eye(2))


def test_chi2_matches_hips_autograd() -> None:
    autograd = pytest.importorskip("autograd")
    achi2 = pytest.importorskip("autograd.scipy.stats.chi2")
    x = np.array([0.3, 1.0, 2.5, 7.0])
    for method in ("logpdf", "pdf", "cdf"):  # autograd's three, differentiable in x
        for df in (1.0, 3.0, 6.0):  # integers: autograd's density gradient is 0 at other df
            _close(getattr(stats.chi2, method)(x, df), getattr(achi2, method)(x, df))
            ours = ng.grad(lambda x, m=method, df=df: ng.sum(getattr(stats.chi2, m)(x, df)))(x)
            theirs = autograd.grad(lambda x, m=method, df=df: autograd.numpy.sum(getattr(achi2, m)(x, df)))(x)
            _close(ours, theirs, rtol=1e-10)
    # the derivative where autograd's is 0: (df - 2 - x) / (2 x)
    _close(ng.grad(lambda x: ng.sum(stats.chi2.logpdf(x, 2.5)))(x), (2.5 - 2.0 - x) / (2.0 * x))


def test_multivariate_normal_reads_its_arguments_as_scipy_does() -> None:
    mvn, theirs = stats.multivariate_normal, scipy_stats.multivariate_normal
    calls: list[tuple[Any, ...]] = [
        (np.array([0.5, -1.0, 2.0]),),  # dim 1: three points
        (0.3, None, 2.0),
        (np.array([0.5, -1.0]), np.zeros(2)),  # cov 1
        (np.ones((4, 2)), np.zeros(2), np.array([1.0, 2.0])),  # a diagonal
        (np.ones((4, 2)), np.zeros(2), 0.5),  # a multiple of the identity
        (np.ones((1, 2)), np.zeros(2), np.eye(2)),  # squeezed to a scalar
    ]
    for args in calls:
        _close(mvn.logpdf(*args), theirs.logpdf(*args))
        _close(mvn.pdf(*args), theirs.pdf(*args))
    check_grads(lambda x, m, c: mvn.logpdf(x, m, c), np.ones((4, 2)), np.zeros(2), np.array([1.0, 2.0]), order=2)
    with pytest.raises(ng.errors.ShapeError, match="reshape"):  # scipy reads dim 1 from a vector cov, and fails
        mvn.logpdf(np.ones((4, 2)), None, np.array([1.0, 2.0]))
    check_grads(lambda x, c: mvn.logpdf(x, None, c), np.array([0.5, -1.0, 2.0]), 1.5, order=2)


def test_multivariate_normal_with_a_singular_covariance() -> None:
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # rank 2
    x = np.array([[0.5, 0.5, 1.0], [0.5, -0.5, 1.0]])  # on the support, and off it
    for method in ("logpdf", "pdf"):
        expected = getattr(scipy_stats.multivariate_normal, method)(x, None, cov, allow_singular=True)
        _close(getattr(stats.multivariate_normal, method)(x, None, cov, allow_singular=True), expected, rtol=1e-11)
    # Along the subspace the distribution lives on (off it, the density is 0: log -inf).
    basis = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    check_grads(lambda c: stats.multivariate_normal.logpdf(x[0], basis @ c, cov, allow_singular=True), np.zeros(2))
    # numpy's LinAlgError, as scipy raises for a singular covariance: code catching it still does.
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular"):
        stats.multivariate_normal.logpdf(x, None, cov)
    with pytest.raises(np.linalg.LinAlgError):
        scipy_stats.multivariate_normal.logpdf(x, None, cov)
    with pytest.raises(LinAlgError, match="positive semidefinite"):
        stats.multivariate_normal.logpdf(x, None, -np.eye(3))
    with pytest.raises(ValueError, match="positive semidefinite"):  # scipy's is a ValueError: so is ours
        scipy_stats.multivariate_normal.logpdf(x, None, -np.eye(3))
    with pytest.raises(ArgumentError, match="'mean' must be a vector of length 3"):
        stats.multivariate_normal.logpdf(x, np.zeros((3, 1)), np.eye(3))
    with pytest.raises(ArgumentError, match="'cov' has shape"):
        stats.multivariate_normal.logpdf(x, np.zeros(3), np.eye(2))


def test_multivariate_normal_second_order_in_the_covariance() -> None:
    root = np.array([[1.0, 0.0], [0.4, 0.8]])
    check_grads(lambda r: stats.multivariate_normal.logpdf(np.array([0.3, -0.2]), None, r @ r.T), root, order=2)


def test_dirichlet() -> None:
    alpha = np.array([1.5, 2.0, 3.0])
    full = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])  # two points, components along axis 0
    for x in (full, full[:2], full[:, 0], full[:2, 0]):
        for method in ("logpdf", "pdf"):
            _close(getattr(stats.dirichlet, method)(x, alpha), getattr(scipy_stats.dirichlet, method)(x, alpha))
    check_grads(lambda x, a: stats.dirichlet.logpdf(x, a), full[:2], alpha, order=2)
    check_grads(lambda x, a: stats.dirichlet.pdf(x, a), full[:2, 0], alpha)
    for x, a, fragment in (
        (full, -alpha, "greater than 0"),
        (full, alpha[:2, None], "one dimensional"),
        (np.ones(4), alpha, "one fewer"),
        (np.array([0.5, 0.6, -0.1]), alpha, "between 0 and 1"),
        (np.array([0.0, 0.5, 0.5]), np.array([0.5, 1.0, 1.0]), "greater than zero"),
        (np.array([0.2, 0.2, 0.2]), alpha, "simplex"),
    ):
        with pytest.raises(ArgumentError, match=fragment):
            stats.dirichlet.logpdf(x, a)


# -- the namespace ------------------------------------------------------------------------------------------


def test_each_distribution_is_a_module_importable_both_ways() -> None:
    import nodegrad.scipy.stats.norm as norm_module
    from nodegrad.scipy.stats import norm

    assert norm is norm_module is stats.norm
    for name in stats.__all__:
        module = getattr(stats, name)
        assert module.__name__ == f"nodegrad.scipy.stats.{name}"
        assert all(callable(getattr(module, f)) for f in module.__all__)


def test_single_precision_stays_single() -> None:
    x = np.array([0.3, 0.6], np.float32)
    for fn in (stats.norm.logpdf, stats.t.cdf, stats.beta.logpdf, stats.gamma.pdf):
        args = {stats.t.cdf: (np.float32(3),), stats.beta.logpdf: (np.float32(2), np.float32(3))}.get(fn, ())
        if fn is stats.gamma.pdf:
            args = (np.float32(2),)
        out = fn(x, *args)
        assert out.dtype == np.float32
        assert ng.grad(lambda x, fn=fn, args=args: ng.sum(fn(x, *args)))(x).dtype == np.float32
