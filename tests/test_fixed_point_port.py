"""``nodegrad.misc.fixed_point``: autograd's ``autograd.misc.fixed_points.fixed_point``,
ported with one import line, against autograd itself and closed forms."""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.misc import fixed_point

autograd = pytest.importorskip("autograd")
from autograd.misc.fixed_points import fixed_point as autograd_fixed_point  # noqa: E402


def newton_sqrt_iter(a):  # autograd's example, as written there
    return lambda x: 0.5 * (x + a / x)


def distance(x, y):
    return np.abs(x - y)


@settings(max_examples=20, deadline=None)
@given(st.floats(0.1, 50.0))
def test_the_value_and_gradient_match_autograds_and_the_closed_form(a: float) -> None:
    value = fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12)
    gradient = ng.grad(lambda a: fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12))(a)
    theirs = autograd.grad(lambda a: autograd_fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12))(a)
    assert value == pytest.approx(np.sqrt(a), rel=1e-12)
    assert gradient == pytest.approx(0.5 / np.sqrt(a), rel=1e-9)
    assert gradient == pytest.approx(theirs, rel=1e-9)


def test_a_vector_fixed_point_under_grad_vmap_and_hessian() -> None:
    m = np.array([[0.3, 0.1], [-0.2, 0.4]])

    def affine(c):
        return lambda x: m @ x + c

    def solved(c):
        return fixed_point(affine, c, np.zeros(2), lambda x, y: np.max(np.abs(x - y)), 1e-14)

    c = np.array([1.0, -2.0])
    exact = np.linalg.solve(np.eye(2) - m, c)
    np.testing.assert_allclose(solved(c), exact, rtol=1e-12)
    weights = np.array([0.7, -1.3])
    want = np.linalg.solve((np.eye(2) - m).T, weights)  # d <w, (I - M)^-1 c> / dc
    np.testing.assert_allclose(ng.grad(lambda c: weights @ solved(c))(c), want, rtol=1e-10)
    np.testing.assert_allclose(ng.jacobian(solved)(c), np.linalg.inv(np.eye(2) - m), rtol=1e-10)
    np.testing.assert_allclose(ng.vmap(solved)(np.stack([c, 2 * c])), np.stack([exact, 2 * exact]), rtol=1e-12)
    np.testing.assert_allclose(
        ng.hessian(lambda c: np.sum(solved(c) ** 2))(c),
        2 * np.linalg.inv(np.eye(2) - m).T @ np.linalg.inv(np.eye(2) - m),
        rtol=1e-9,
    )


def test_the_autograd_example_ports_with_the_import_line() -> None:
    # autograd/examples/fixed_points.py, with `from nodegrad.misc import fixed_point` and nodegrad's grad
    def sqrt(a, guess=10.0):
        return fixed_point(newton_sqrt_iter, a, guess, distance, 1e-4)

    der = ng.grad(sqrt)(2.0)
    assert der == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-6)
    assert der == pytest.approx(
        autograd.grad(lambda a: autograd_fixed_point(newton_sqrt_iter, a, 10.0, distance, 1e-4))(2.0), rel=1e-6
    )
