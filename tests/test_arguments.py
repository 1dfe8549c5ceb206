"""Bad arguments to public functions raise the nodegrad error of their kind, naming the
function and the caller's line, and leave nothing recorded."""

from __future__ import annotations

import warnings
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
    "split by a string": (lambda: ng.split(X, "a"), DtypeError, "split"),  # a TypeError, as numpy raises
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


# -- masked arrays and np.matrix: their numpy meaning differs from a plain array's --------------
# Computed as plain arrays they gave sum(masked_array([1, 2, 3], mask=[0, 1, 0])) = 6 with the
# gradient [1, 1, 1] (numpy: 4, and [1, 0, 1]), a constant's hidden entry in the gradient, and
# m * m for an np.matrix as an elementwise product (30 where numpy's matrix product gives 54).
# Both are refused wherever they meet a traced value, naming the place and the way out.

_MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # numpy's advice against np.matrix itself
    _MATRIX = np.matrix([[1.0, 2.0], [3.0, 4.0]])
_MASKED_ADVICE = r"is a numpy masked array .*x\.filled\(fill\).*x\.compressed\(\)"
_MATRIX_ADVICE = r"is an np\.matrix, for which \* is a matrix product.*np\.asarray\(m\) and write @"

_SUBCLASS_ARGUMENTS: list[tuple[str, Callable[[], Any], str]] = [
    ("grad", lambda: ng.value_and_grad(np.sum)(_MASKED), r"args\[0\] " + _MASKED_ADVICE),
    ("grad-matrix", lambda: ng.grad(lambda m: np.sum(m * m))(_MATRIX), r"args\[0\] " + _MATRIX_ADVICE),
    ("in-a-dict", lambda: ng.grad(lambda p: np.sum(p["w"]))({"w": _MASKED}), r"args\[0\]\['w'\] " + _MASKED_ADVICE),
    ("in-a-list", lambda: ng.grad(lambda p: np.sum(p[1]))([1.0, _MATRIX]), r"args\[0\]\[1\] " + _MATRIX_ADVICE),
    ("argnums", lambda: ng.grad(lambda a, b: np.sum(a * b), argnums=1)(1.0, _MASKED), r"args\[1\] " + _MASKED_ADVICE),
    ("vjp", lambda: ng.vjp(np.sum, _MASKED), _MASKED_ADVICE),
    ("jvp", lambda: ng.jvp(np.sum, (_MATRIX,), (np.ones((2, 2)),)), _MATRIX_ADVICE),
    ("hessian", lambda: ng.hessian(np.sum)(_MASKED), _MASKED_ADVICE),
    ("jacobian", lambda: ng.jacobian(lambda m: m * 2.0)(_MATRIX), _MATRIX_ADVICE),
    ("arena", lambda: ng.Arena().param({"w": _MASKED}), r"\['w'\] " + _MASKED_ADVICE),
]


@pytest.mark.parametrize(
    ("call", "pattern"), [c[1:] for c in _SUBCLASS_ARGUMENTS], ids=[c[0] for c in _SUBCLASS_ARGUMENTS]
)
def test_masked_arrays_and_matrices_as_differentiated_arguments_are_refused(
    call: Callable[[], Any], pattern: str
) -> None:
    with pytest.raises(DtypeError, match=pattern):
        call()


_SUBCLASS_CONSTANTS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("x * masked", lambda x: np.sum(x * _MASKED), r"multiply: a constant .* " + _MASKED_ADVICE),
    ("masked + x", lambda x: np.sum(np.add(_MASKED, x)), r"add: a constant .* " + _MASKED_ADVICE),
    ("ng.sum", lambda x: ng.sum(x / _MASKED), r"divide: a constant .* " + _MASKED_ADVICE),
    ("where", lambda x: np.sum(np.where(x > 0.0, x, _MASKED)), r"where: a constant .* " + _MASKED_ADVICE),
    ("concatenate", lambda x: np.sum(np.concatenate([x, _MASKED])), r"a constant .* " + _MASKED_ADVICE),
    ("masked * x", lambda x: np.sum(_MASKED * x), r"MaskedArray\.__mul__ cannot see traced values: .*m\.filled"),
    ("np.ma.sum", lambda x: np.ma.sum(x * 2.0), r"numpy\.ma\..* cannot see traced values: .*m\.filled"),
    ("x * matrix", lambda x: np.sum(x[:2] * _MATRIX), r"multiply: a constant .* " + _MATRIX_ADVICE),
    ("matrix * x", lambda x: np.sum(_MATRIX * x[:2]), r"multiply: a constant .* " + _MATRIX_ADVICE),
    ("matrix + x", lambda x: np.sum(_MATRIX + x[:2]), r"add: a constant .* " + _MATRIX_ADVICE),
    ("x @ masked", lambda x: x @ _MASKED, r"matmul: a constant .* " + _MASKED_ADVICE),
    ("np.dot", lambda x: np.dot(_MASKED, x), r"matmul: a constant .* " + _MASKED_ADVICE),
    ("matrix @ x", lambda x: np.sum(_MATRIX @ x[:2]), r"matmul: a constant .* " + _MATRIX_ADVICE),
    ("tensordot", lambda x: np.tensordot(x, _MASKED, 1), r"einsum: a constant .* " + _MASKED_ADVICE),
    ("einsum", lambda x: np.einsum("i,i", _MASKED, x), r"einsum: a constant .* " + _MASKED_ADVICE),
]


@pytest.mark.parametrize(
    ("fn", "pattern"), [c[1:] for c in _SUBCLASS_CONSTANTS], ids=[c[0] for c in _SUBCLASS_CONSTANTS]
)
def test_masked_arrays_and_matrices_as_constants_are_refused_directly_and_through_closures(
    fn: Callable[[Any], Any], pattern: str
) -> None:
    x0 = np.array([0.5, 1.5, 2.5])
    with pytest.raises(DtypeError if "constant" in pattern else ng.errors.ArenaError, match=pattern):
        ng.grad(fn)(x0)
    # closed over by an inner transform, with the traced value the enclosing one's
    with pytest.raises(DtypeError if "constant" in pattern else ng.errors.ArenaError, match=pattern):
        ng.grad(lambda s: ng.grad(lambda t: fn(x0 * s) * t)(1.0))(1.0)
    with pytest.raises(DtypeError if "constant" in pattern else ng.errors.ArenaError, match=pattern):
        ng.jvp(fn, (x0,), (np.ones(3),))


def test_what_numpy_computes_from_a_masked_array_is_differentiated_once_it_is_filled() -> None:
    # The ways out the errors name give numpy.ma's numbers with plain arrays.
    value, g = ng.value_and_grad(lambda x: np.sum(np.where(_MASKED.mask, 0.0, x)))(_MASKED.filled(0.0))
    assert value == np.ma.sum(_MASKED) == 4.0
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0])
    assert ng.value_and_grad(np.sum)(_MASKED.compressed()) == (4.0, pytest.approx(np.ones(2)))
    m = np.asarray(_MATRIX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        expected = np.sum(_MATRIX * _MATRIX)  # numpy's matrix product
    assert ng.value_and_grad(lambda a: np.sum(a @ a))(m)[0] == expected == 54.0
    check_grads(lambda a: np.sum(a @ a), m)
