"""An error nodegrad raises where numpy (or scipy) raises one is an instance of numpy's.

The oracle is numpy itself: each failing call is made on plain arrays by numpy or scipy,
and the same call under ``ng.grad``, ``ng.vmap``, ``ng.replay`` (and eagerly, for
nodegrad's own functions) must raise an error that ``except type(numpy's error)`` catches,
a :class:`~nodegrad.errors.NodegradError` whose message names the function.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.linalg

import nodegrad as ng
import nodegrad.scipy.linalg as nsl
from nodegrad.errors import AxisError, LinAlgError, MatrixShapeError, NodegradError, NonFiniteError

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
INDEFINITE = np.array([[1.0, 2.0], [2.0, 1.0]])
LOWER_SINGULAR = np.array([[1.0, 0.0], [1.0, 0.0]])
WIDE, VECTOR = np.ones((2, 3)), np.ones(3)
B = np.array([1.0, 2.0])

# (name the message must hold, nodegrad's call, numpy's or scipy's call, inputs it fails on)
LINALG: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any], list[np.ndarray]]] = [
    ("inv", np.linalg.inv, np.linalg.inv, [SINGULAR, WIDE, VECTOR]),
    ("solve", lambda a: np.linalg.solve(a, B), lambda a: np.linalg.solve(a, B), [SINGULAR, WIDE, VECTOR]),
    ("cholesky", np.linalg.cholesky, np.linalg.cholesky, [INDEFINITE, WIDE, VECTOR]),
    ("det", np.linalg.det, np.linalg.det, [WIDE, VECTOR]),
    ("slogdet", lambda a: np.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], [WIDE, VECTOR]),
    ("eig", lambda a: np.real(np.linalg.eigvals(a)), np.linalg.eigvals, [WIDE, VECTOR]),
    ("eigh", lambda a: np.linalg.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], [WIDE, VECTOR]),
    ("eigvalsh", np.linalg.eigvalsh, np.linalg.eigvalsh, [WIDE, VECTOR]),
    ("svd", lambda a: np.linalg.svd(a)[1], lambda a: np.linalg.svd(a)[1], [VECTOR]),
    ("qr", lambda a: np.linalg.qr(a)[1], lambda a: np.linalg.qr(a)[1], [VECTOR]),
    ("pinv", np.linalg.pinv, np.linalg.pinv, [VECTOR]),
    ("inv", lambda a: np.linalg.matrix_power(a, -1), lambda a: np.linalg.matrix_power(a, -1), [SINGULAR]),
    ("matrix_power", lambda a: np.linalg.matrix_power(a, 2), lambda a: np.linalg.matrix_power(a, 2), [WIDE, VECTOR]),
    ("lstsq", lambda a: np.linalg.lstsq(a, np.ones(3))[0], lambda a: np.linalg.lstsq(a, np.ones(3))[0], [WIDE]),
    ("solve", lambda a: np.linalg.tensorsolve(a, B), lambda a: np.linalg.tensorsolve(a, B), [SINGULAR]),
    ("tensorsolve", lambda a: np.linalg.tensorsolve(a, B), lambda a: np.linalg.tensorsolve(a, B), [WIDE]),
    ("inv", lambda a: np.linalg.tensorinv(a, ind=1), lambda a: np.linalg.tensorinv(a, ind=1), [SINGULAR]),
    ("tensorinv", lambda a: np.linalg.tensorinv(a, ind=1), lambda a: np.linalg.tensorinv(a, ind=1), [WIDE]),
    ("cond", lambda a: np.linalg.cond(a, 1), lambda a: np.linalg.cond(a, 1), [WIDE, VECTOR]),
]
# nodegrad's own functions, which also take plain arrays
OWN_LINALG: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any], list[np.ndarray]]] = [
    ("inv", ng.inv, np.linalg.inv, [SINGULAR, WIDE, VECTOR]),
    ("solve", lambda a: ng.solve(a, B), lambda a: np.linalg.solve(a, B), [SINGULAR, WIDE]),
    ("cholesky", ng.cholesky, np.linalg.cholesky, [INDEFINITE, WIDE]),
    ("det", ng.det, np.linalg.det, [WIDE, VECTOR]),
    ("solve", lambda a: nsl.solve(a, B), lambda a: scipy.linalg.solve(a, B), [SINGULAR, WIDE, VECTOR]),
    ("inv", nsl.inv, scipy.linalg.inv, [SINGULAR, WIDE]),
    ("cholesky", nsl.cholesky, scipy.linalg.cholesky, [INDEFINITE, WIDE]),
    ("cholesky", lambda a: nsl.cho_factor(a)[0], lambda a: scipy.linalg.cho_factor(a)[0], [INDEFINITE]),
    ("cho_factor", lambda a: nsl.cho_factor(a)[0], lambda a: scipy.linalg.cho_factor(a)[0], [WIDE]),
    (
        "solve_triangular",
        lambda a: nsl.solve_triangular(a, B, lower=True),
        lambda a: scipy.linalg.solve_triangular(a, B, lower=True),
        [LOWER_SINGULAR, WIDE],
    ),
    ("expm", nsl.expm, scipy.linalg.expm, [WIDE, VECTOR]),
    ("sqrtm", nsl.sqrtm, scipy.linalg.sqrtm, [WIDE, VECTOR]),
]
LINALG_CASES = [(name, ours, theirs, a) for name, ours, theirs, inputs in LINALG + OWN_LINALG for a in inputs]
OWN_CASES = [(name, ours, theirs, a) for name, ours, theirs, inputs in OWN_LINALG for a in inputs]


def _numpy_error(call: Callable[[Any], Any], a: np.ndarray) -> Exception:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(a)
        except Exception as exc:
            return exc
    raise AssertionError("numpy raised nothing: not a failing case")


def _loss(call: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda a: np.sum(np.real(call(a)))


def _replayed(call: Callable[[Any], Any], a: np.ndarray) -> Any:
    replayed = ng.replay(call)
    replayed(np.eye(*a.shape) + 0.5 if a.ndim == 2 else a + 1.0)  # recorded on a matrix it takes (if any)
    return replayed(a)


MODES: dict[str, Callable[[Callable[[Any], Any], np.ndarray], Any]] = {
    "grad": lambda call, a: ng.grad(_loss(call))(a),
    "vmap": lambda call, a: ng.vmap(call)(np.stack([np.eye(*a.shape) if a.ndim == 2 else a, a])),
    "vmap of grad": lambda call, a: ng.vmap(ng.grad(_loss(call)))(a[None]),
    "replay": lambda call, a: _replayed(call, a),
    "replay of grad": lambda call, a: _replayed(ng.grad(_loss(call)), a),
    # the matrix in a closure, scaled by the argument differentiated or batched
    "closure under grad": lambda call, a: ng.grad(lambda s: np.sum(np.real(call(a * s))))(1.0),
    "closure under vmap": lambda call, a: ng.vmap(lambda s: call(a * s))(np.ones(2)),
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize(("name", "ours", "theirs", "a"), LINALG_CASES)
def test_a_linalg_failure_is_numpys_error_in_every_mode(
    mode: str, name: str, ours: Callable[[Any], Any], theirs: Callable[[Any], Any], a: np.ndarray
) -> None:
    expected = type(_numpy_error(theirs, a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(expected) as info:
            MODES[mode](ours, a)
    if mode == "replay" and not isinstance(info.value, NodegradError):
        # numpy's own call on plain arrays: the replay fails as the eager call does
        eager = _numpy_error(ours, a)
        assert type(info.value) is type(eager) and str(info.value) == str(eager)
        return
    assert isinstance(info.value, NodegradError), f"{type(info.value).__name__}: {info.value}"
    assert name in str(info.value)
    if expected is np.linalg.LinAlgError:
        assert isinstance(info.value, LinAlgError)  # nodegrad's, which is numpy's


@pytest.mark.parametrize(("name", "ours", "theirs", "a"), OWN_CASES)
def test_nodegrads_own_functions_on_plain_arrays_raise_numpys_or_scipys_error(
    name: str, ours: Callable[[Any], Any], theirs: Callable[[Any], Any], a: np.ndarray
) -> None:
    expected = type(_numpy_error(theirs, a))
    with pytest.raises(expected, match=name):
        ours(a)


def test_the_message_of_a_singular_matrix_says_so_and_names_the_op() -> None:
    with pytest.raises(np.linalg.LinAlgError) as info:
        ng.grad(lambda a: np.sum(np.linalg.solve(a, B)))(SINGULAR)
    message = str(info.value)
    assert message.startswith("solve: Singular matrix") and "float64[2, 2]" in message and "recorded at" in message
    assert "do not fit" not in message  # the shapes fit: the values have no answer


def test_a_gradient_rule_meeting_a_singular_matrix_raises_numpys_error_too() -> None:
    with pytest.raises(np.linalg.LinAlgError, match="logabsdet") as info:
        ng.grad(lambda a: np.linalg.slogdet(a)[1])(SINGULAR)
    assert isinstance(info.value, NonFiniteError)  # as before: the gradient is not defined there


def test_the_classes_derive_from_numpys() -> None:
    assert issubclass(LinAlgError, np.linalg.LinAlgError) and issubclass(MatrixShapeError, np.linalg.LinAlgError)
    assert issubclass(MatrixShapeError, ng.errors.ShapeError)
    assert issubclass(AxisError, np.exceptions.AxisError) and issubclass(AxisError, ng.errors.ShapeError)
    assert str(AxisError("sum: axis 3 is out of range")) == "sum: axis 3 is out of range"


# -- axes out of range: numpy's AxisError (an IndexError and a ValueError) --------------------------

X = np.arange(6.0).reshape(2, 3) + 1.0
AXES: dict[str, Callable[[Any], Any]] = {
    "sum": lambda a: np.sum(a, axis=2),
    "mean": lambda a: np.mean(a, axis=-3),
    "max": lambda a: np.max(a, axis=2),
    "var": lambda a: np.var(a, axis=2),
    "cumsum": lambda a: np.cumsum(a, axis=2),
    "cumprod": lambda a: np.cumprod(a, axis=2),
    "concatenate": lambda a: np.concatenate([a, a], axis=2),
    "stack": lambda a: np.stack([a, a], axis=4),
    "take": lambda a: np.take(a, [0], axis=2),
    "fft": lambda a: np.fft.fft(a, axis=2),
    "moveaxis": lambda a: np.moveaxis(a, 2, 0),
    "swapaxes": lambda a: np.swapaxes(a, 0, 2),
    "norm": lambda a: np.linalg.norm(a, axis=2),
    "gradient": lambda a: np.gradient(a, axis=2),
    "sort": lambda a: np.sort(a, axis=2),
    "flip": lambda a: np.flip(a, axis=2),
    "expand_dims": lambda a: np.expand_dims(a, 4),
    "squeeze": lambda a: np.squeeze(a, axis=2),
    "diff": lambda a: np.diff(a, axis=2),
    "roll": lambda a: np.roll(a, 1, axis=2),
    "repeat": lambda a: np.repeat(a, 2, axis=2),
    "delete": lambda a: np.delete(a, 0, axis=2),
    "insert": lambda a: np.insert(a, 0, 1.0, axis=2),
    "split": lambda a: np.split(a, 1, axis=2),
    "tensordot": lambda a: np.tensordot(a, a, axes=([2], [0])),
}


@pytest.mark.parametrize("mode", ["grad", "vmap"])
@pytest.mark.parametrize("name", sorted(AXES))
def test_an_axis_out_of_range_is_numpys_error(mode: str, name: str) -> None:
    call = AXES[name]
    expected = type(_numpy_error(call, X))
    if mode == "grad":
        run = lambda: ng.grad(lambda a: np.sum(call(a)[0] if name == "split" else call(a)))(X)
    else:
        run = lambda: ng.vmap(call)(X[None])
    with pytest.raises(expected) as info:
        run()
    assert isinstance(info.value, NodegradError), f"{type(info.value).__name__}: {info.value}"


def test_an_index_out_of_bounds_is_an_index_error_in_every_mode() -> None:
    for run in (
        lambda: ng.grad(lambda a: a[5])(np.ones(3)),
        lambda: ng.vmap(lambda a: a[5])(np.ones((2, 3))),
        lambda: ng.grad(lambda a: np.sum(np.take(a, [7])))(np.ones(3)),
    ):
        with pytest.raises(IndexError) as info:
            run()
        assert isinstance(info.value, NodegradError)
