"""Empty and 0-d inputs that numpy accepts: the forward is numpy's, the gradient has the
input's shape (zeros for an empty input).

A (0, 3) array through ``prod``, ``einsum`` and ``tensordot``; the median of one element; a
0-d value through ``cumsum``, ``cumprod`` (``axis=-1`` and ``0``: numpy reads it as one of
length 1) and ``repeat`` (``axis=0``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy
import pytest

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.testing import check_grads

EMPTY = numpy.zeros((0, 3))

CASES: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "prod": (lambda a: np.prod(a), EMPTY),
    "prod axis 0": (lambda a: np.prod(a, axis=0), EMPTY),
    "prod axis 1": (lambda a: np.prod(a, axis=1), EMPTY),
    "einsum ij->j": (lambda a: np.einsum("ij->j", a), EMPTY),
    "einsum ij,ij->": (lambda a: np.einsum("ij,ij->", a, a), EMPTY),
    "einsum ij,ik->jk": (lambda a: np.einsum("ij,ik->jk", a, numpy.ones((0, 2))), EMPTY),
    "einsum i,ij->j broadcast": (lambda a: np.einsum("ij,j->ij", a, numpy.ones(1)), EMPTY),
    "tensordot axes 2": (lambda a: np.tensordot(a, numpy.ones((0, 3)), axes=2), EMPTY),
    "tensordot axes ([0], [0])": (lambda a: np.tensordot(a, numpy.ones((0, 2)), axes=([0], [0])), EMPTY),
    "tensordot axes 1": (lambda a: np.tensordot(numpy.ones((2, 0)), a, axes=1), EMPTY),
    "median of one": (lambda a: np.median(a), numpy.array([2.0])),
    "median of one, axis 0": (lambda a: np.median(a, axis=0), numpy.array([[2.0, -1.0, 0.5]])),
    "median of a 0-d value": (lambda a: np.median(a), numpy.array(2.0)),
    "cumsum 0-d axis -1": (lambda a: np.cumsum(a, axis=-1), numpy.array(2.0)),
    "cumsum 0-d axis 0": (lambda a: np.cumsum(a, axis=0), numpy.array(2.0)),
    "cumprod 0-d axis -1": (lambda a: np.cumprod(a, axis=-1), numpy.array(2.0)),
    "cumprod 0-d axis 0": (lambda a: np.cumprod(a, axis=0), numpy.array(2.0)),
    "repeat 0-d axis 0": (lambda a: np.repeat(a, 3, axis=0), numpy.array(2.0)),
    "repeat 0-d axis -1": (lambda a: np.repeat(a, 2, axis=-1), numpy.array(2.0)),
}


def _loss(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda a: np.sum(np.sin(f(a)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_is_numpys_and_gradient_is_shaped_like_the_input(name: str) -> None:
    f, x = CASES[name]
    seen: dict[str, Any] = {}

    def loss(a: Any) -> Any:
        out = f(a)
        seen["out"] = numpy.asarray(ng.stop_gradient(out))
        return np.sum(np.sin(out))

    gradient = ng.grad(loss)(x)
    expected = f(x)  # nodegrad.numpy's functions on a plain array are numpy's own
    assert seen["out"].shape == numpy.shape(expected)
    numpy.testing.assert_allclose(seen["out"], expected)
    assert type(gradient) is numpy.ndarray and gradient.shape == x.shape and gradient.dtype == x.dtype
    if x.size == 0:
        assert gradient.size == 0
    else:
        check_grads(_loss(f), x, order=2)


def test_the_gradients_of_one_element_are_what_calculus_says() -> None:
    assert ng.grad(lambda a: np.median(a))(numpy.array([2.0])) == numpy.array([1.0])
    assert ng.grad(lambda a: np.sum(np.cumprod(a, axis=0)))(numpy.array(2.0)) == 1.0
    assert ng.grad(lambda a: np.sum(np.repeat(a, 3, axis=0)))(numpy.array(2.0)) == 3.0
    # a (0, 3) array's product over axis 0 is ones, whatever the (missing) entries
    numpy.testing.assert_array_equal(np.prod(EMPTY, axis=0), numpy.ones(3))
