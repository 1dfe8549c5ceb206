"""Bad arguments to public functions raise the nodegrad error of their kind, naming the
function and the caller's line, and leave nothing recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, NodegradError, OpIndexError, ShapeError, StructureError
from nodegrad.testing import check_grads

X = np.arange(6.0).reshape(2, 3)


@ng.custom_vjp
def _scaled(x: Any, scale: float = 2.0) -> Any:
    return x * scale


_scaled.defvjp(lambda x, scale: (x * scale, scale), lambda scale, g: (g * scale, None))


def _cyclic() -> list[Any]:
    value: list[Any] = [np.ones(2)]
    value.append(value)
    return value


CASES: dict[str, tuple[Callable[[], Any], type[NodegradError], str]] = {
    "var ddof=None": (lambda: ng.grad(lambda x: ng.var(x, ddof=None))(X), DtypeError, "var"),
    "np.var ddof=None": (lambda: ng.grad(lambda x: np.var(x, ddof=None))(X), DtypeError, "var"),
    "split into 0": (lambda: ng.grad(lambda x: ng.sum(ng.split(x, 0)[0]))(X), ShapeError, "split"),
    "split by a string": (lambda: ng.split(X, "a"), ShapeError, "split"),
    "take_along_axis axis=None": (
        lambda: ng.grad(lambda x: ng.sum(np.take_along_axis(x, np.array([[0]]), None)))(X),
        ShapeError,
        "take_along_axis",
    ),
    "norm ord=array": (lambda: ng.grad(lambda x: ng.norm(x, ord=np.array([1, 2])))(X), ShapeError, "norm"),
    "layer_norm eps='a'": (
        lambda: ng.grad(lambda x: ng.sum(ng.layer_norm(x, eps="a")))(X),
        NodegradError,
        "layer_norm",
    ),
    "ragged index list": (lambda: ng.grad(lambda x: ng.sum(x[[[0], [0, 1]]]))(X), OpIndexError, "getitem"),
    "custom_vjp unknown keyword": (lambda: _scaled(np.ones(2), y=1.0), ArgumentError, "custom_vjp _scaled"),
    "slogdet of float16": (
        lambda: ng.grad(lambda x: ng.slogdet(x)[1])(np.eye(2, dtype=np.float16)),
        DtypeError,
        "slogdet",
    ),
    "sum of a ragged list": (lambda: ng.sum([[1.0], [1.0, 2.0]]), ShapeError, "sum"),
    "pack of a cyclic list": (lambda: ng.pack(_cyclic()), StructureError, "pack"),
    "jacobian mode=array": (lambda: ng.jacobian(lambda x: x, mode=np.array([]))(X), ArgumentError, "mode"),
    "grad holomorphic=array": (lambda: ng.grad(lambda x: x, holomorphic=np.array([]))(X), ArgumentError, "holomorphic"),
    "jvp ragged tangent": (
        lambda: ng.jvp(lambda x: x, (np.ones(2),), ([np.ones(2), np.ones(3)],)),
        NodegradError,
        "jvp",
    ),
    "vjp ragged cotangent": (lambda: ng.vjp(lambda x: x, np.ones(2))[1]([1.0, [2.0, 3.0]]), StructureError, "seed"),
    "jacobian of a cyclic list": (lambda: ng.jacobian(lambda x: x[0])(_cyclic()), StructureError, "jacobian"),
    "check_grads order 3": (lambda: check_grads(lambda x: x, X, order=3), ArgumentError, "order"),
    "check_grads eps < 0": (lambda: check_grads(lambda x: x, X, eps=-1.0), ArgumentError, "eps"),
    "check_grads rtol='a'": (lambda: check_grads(lambda x: x, X, rtol="a"), ArgumentError, "rtol"),
    "check_grads seed='a'": (lambda: check_grads(lambda x: x, X, seed="a"), ArgumentError, "seed"),
    "check_grads f=3": (lambda: check_grads(3, X), ArgumentError, "callable"),
    "check_grads argnums='a'": (lambda: check_grads(lambda x: x, X, argnums="a"), ArgumentError, "argnums"),
    "check_grads modes=('x',)": (lambda: check_grads(lambda x: x, X, modes=("x",)), ArgumentError, "modes"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_argument_is_a_nodegrad_error_naming_the_function(case: str) -> None:
    call, kind, named = CASES[case]
    with pytest.raises(kind, match=named) as info:
        call()
    assert isinstance(info.value, NodegradError)


def test_custom_vjp_takes_keyword_arguments_by_their_positions() -> None:
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(_scaled(x=x)))(np.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(_scaled(x, scale=3.0)))(np.ones(2)), [3.0, 3.0])


def test_a_guarded_failure_keeps_the_cause_and_names_the_line() -> None:
    with pytest.raises(ShapeError, match=r"moveaxis: .*\[called at .*test_arguments.py:\d+\]") as info:
        ng.moveaxis([[1.0], [1.0, 2.0]], 0, 1)
    assert isinstance(info.value.__cause__, ValueError)


def test_the_commonest_functions_stay_unwrapped() -> None:
    # One recording call each: the recording names their failures itself.
    assert not hasattr(ng.exp, "__wrapped__") and not hasattr(ng.add, "__wrapped__")
    assert hasattr(ng.sum, "__wrapped__") and hasattr(ng.where, "__wrapped__")
    with pytest.raises(ShapeError, match=r"exp: inputs do not fit"):
        ng.exp([[1.0], [1.0, 2.0]])
