"""Three programs in the style of HIPS autograd's examples, written against
``autograd.numpy`` / ``autograd.scipy`` and ported by changing the import lines only:

- a Gaussian-process marginal likelihood with ``multivariate_normal``;
- black-box variational inference with ``norm``;
- a hidden Markov model's forward pass with ``logsumexp``.

Each one's value is checked against scipy (or brute force) and its gradient against
central differences.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy
import pytest

pytest.importorskip("scipy")

import scipy.stats

# The ported programs' imports: `autograd` became `nodegrad`, nothing else changed.
import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.scipy.special import logsumexp
from nodegrad.scipy.stats import multivariate_normal, norm
from nodegrad.testing import check_grads

RNG = numpy.random.default_rng(7)

# -- a Gaussian process -------------------------------------------------------------------------

X = numpy.linspace(-2.0, 2.0, 12)[:, None]
Y = numpy.sin(2.0 * X[:, 0]) + 0.1 * RNG.standard_normal(12)


def rbf_covariance(params: Any, x: Any, xp: Any) -> Any:
    output_scale = np.exp(params[0])
    lengthscales = np.exp(params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


def gp_log_marginal_likelihood(params: Any) -> Any:
    noise_scale, mean = np.exp(params[0]) + 1e-4, params[1]
    cov = rbf_covariance(params[2:], X, X) + noise_scale * np.eye(len(Y))
    prior_mean = mean * np.ones(len(Y))
    return multivariate_normal.logpdf(Y, prior_mean, cov)


def test_gaussian_process_marginal_likelihood() -> None:
    params = numpy.array([-2.0, 0.1, 0.2, -0.3])
    value = gp_log_marginal_likelihood(params)
    cov = rbf_covariance(params[2:], X, X) + (numpy.exp(params[0]) + 1e-4) * numpy.eye(len(Y))
    assert value == pytest.approx(scipy.stats.multivariate_normal.logpdf(Y, 0.1 * numpy.ones(len(Y)), cov), rel=1e-12)
    check_grads(gp_log_marginal_likelihood, params)
    # Fitting the hyperparameters raises the likelihood.
    fitted = ng.optim.adam_loop(
        lambda p, i: ng.grad(lambda q: -gp_log_marginal_likelihood(q))(p), params, num_iters=100, step_size=0.05
    )
    assert gp_log_marginal_likelihood(fitted) > value + 1.0


# -- black-box variational inference -------------------------------------------------------------


def log_density(z: Any) -> Any:
    """A correlated two-dimensional target: N(mu, S) written out with norm.logpdf."""
    first = norm.logpdf(z[:, 0], 1.0, 1.5)
    second = norm.logpdf(z[:, 1], 0.5 * z[:, 0], 0.7)
    return first + second


EPSILON = RNG.standard_normal((400, 2))  # fixed draws: the objective is deterministic


def elbo(params: Any) -> Any:
    mean, log_std = params[:2], params[2:]
    samples = EPSILON * np.exp(log_std) + mean
    entropy = np.sum(log_std) + 0.5 * 2 * (1.0 + numpy.log(2 * numpy.pi))
    return np.mean(log_density(samples)) + entropy


def test_black_box_variational_inference() -> None:
    params = numpy.array([0.2, -0.3, -0.5, 0.1])
    z = EPSILON * numpy.exp(params[2:]) + params[:2]
    expected = (
        numpy.mean(scipy.stats.norm.logpdf(z[:, 0], 1.0, 1.5) + scipy.stats.norm.logpdf(z[:, 1], 0.5 * z[:, 0], 0.7))
        + numpy.sum(params[2:])
        + (1.0 + numpy.log(2 * numpy.pi))
    )
    assert elbo(params) == pytest.approx(expected, rel=1e-12)
    check_grads(elbo, params)
    fitted = ng.optim.adam_loop(lambda p, i: ng.grad(lambda q: -elbo(q))(p), params, num_iters=400, step_size=0.05)
    # A factorised Gaussian fitted to a correlated one finds its mean, (1, 0.5), and for each
    # coordinate the inverse square root of its precision: 1 / sqrt(1 / 1.5**2 + 0.5**2 / 0.7**2).
    assert fitted[:2] == pytest.approx([1.0, 0.5], abs=0.15)
    assert numpy.exp(fitted[2]) == pytest.approx((1 / 1.5**2 + 0.25 / 0.49) ** -0.5, rel=0.15)


# -- a hidden Markov model -----------------------------------------------------------------------

OBSERVATIONS = numpy.array([0, 1, 1, 2, 0, 2, 2])


def log_normalize(logits: Any, axis: int) -> Any:
    return logits - logsumexp(logits, axis=axis, keepdims=True)


def hmm_log_likelihood(params: dict[str, Any]) -> Any:
    log_pi = log_normalize(params["initial"], axis=0)
    log_a = log_normalize(params["transition"], axis=1)
    log_b = log_normalize(params["emission"], axis=1)
    alpha = log_pi + log_b[:, OBSERVATIONS[0]]
    for obs in OBSERVATIONS[1:]:
        alpha = logsumexp(np.expand_dims(alpha, 1) + log_a, axis=0) + log_b[:, obs]
    return logsumexp(alpha)


def _brute_force(params: dict[str, numpy.ndarray]) -> float:
    def normalized(logits: numpy.ndarray) -> numpy.ndarray:
        e = numpy.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    pi, a, b = normalized(params["initial"]), normalized(params["transition"]), normalized(params["emission"])
    total = 0.0
    for states in itertools.product(range(len(pi)), repeat=len(OBSERVATIONS)):
        p = pi[states[0]] * b[states[0], OBSERVATIONS[0]]
        for prev, cur, obs in zip(states, states[1:], OBSERVATIONS[1:], strict=False):
            p *= a[prev, cur] * b[cur, obs]
        total += p
    return float(numpy.log(total))


def test_hidden_markov_model_forward_pass() -> None:
    params = {
        "initial": RNG.standard_normal(3),
        "transition": RNG.standard_normal((3, 3)),
        "emission": RNG.standard_normal((3, 3)),
    }
    assert hmm_log_likelihood(params) == pytest.approx(_brute_force(params), rel=1e-12)
    check_grads(hmm_log_likelihood, params)
    g = ng.grad(hmm_log_likelihood)(params)
    assert set(g) == {"initial", "transition", "emission"} and g["transition"].shape == (3, 3)
