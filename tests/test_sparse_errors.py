"""What a differentiated scipy.sparse matrix refuses: a clear exception naming the op.

Each refusal is checked for its type and that its message names the op (and, where the
library gives one, the way out), and after it a new ``ng.grad`` call gives the right
answer: a failed trace leaves no state behind (:func:`assert_still_works`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as ss

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, NodegradError, NoGradientError, ShapeError
from nodegrad.scipy.sparse.linalg import spsolve


def _matrix(cls: type = ss.csr_array) -> Any:
    return cls(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))


def assert_still_works() -> None:
    """A fresh gradient (of a sparse argument and of a dense one) after an error is right."""
    X = _matrix(ss.coo_array)
    w = np.array([1.0, 2.0, 3.0])
    gX, gw = ng.grad(lambda X, w: ng.sum((X @ w) ** 2), argnums=(0, 1))(X, w)
    # X w = [7, 6]; d/dx_k = 2 (X w)[r_k] w[c_k]; d/dw = 2 X^T (X w)
    np.testing.assert_array_equal(gX.data, [14.0, 42.0, 24.0])
    np.testing.assert_array_equal(gw, [14.0, 36.0, 28.0])
    np.testing.assert_array_equal(ng.replay(lambda w: X @ w)(w), [7.0, 6.0])
    np.testing.assert_array_equal(ng.vmap(lambda w: X @ w)(np.stack([w, -w])), [[7.0, 6.0], [-7.0, -6.0]])


@pytest.fixture(autouse=True)
def _state_not_corrupted() -> Any:
    yield
    assert_still_works()


CLASSES = [ss.csr_array, ss.csc_array, ss.coo_array, ss.csr_matrix, ss.csc_matrix, ss.coo_matrix]


# -- refused as scipy refuses it -----------------------------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "fun",
    [lambda X: X + 1.0, lambda X: 1.0 + X, lambda X: X - 2.5, lambda X: X + np.float64(3.0)],
    ids=["X + 1.0", "1.0 + X", "X - 2.5", "X + np.float64"],
)
def test_adding_a_nonzero_scalar_raises_not_implemented_like_scipy(cls: type, fun: Callable[[Any], Any]) -> None:
    X = _matrix(cls)
    with pytest.raises(NotImplementedError) as scipys:
        fun(X)
    with pytest.raises(NotImplementedError) as ours:
        ng.grad(lambda X: fun(X).sum())(X)
    assert "scalar" in str(ours.value) and "scalar" in str(scipys.value)


def test_adding_zero_is_allowed_as_in_scipy() -> None:
    X = _matrix()
    g = ng.grad(lambda X: (X + 0).multiply(np.arange(6.0).reshape(2, 3)).sum())(X)
    np.testing.assert_array_equal(g.data, [0.0, 2.0, 4.0])


def test_power_of_an_array_raises_not_implemented_like_scipy() -> None:
    X = _matrix()
    with pytest.raises(NotImplementedError, match="not scalar"):
        X.power(np.ones(3))
    with pytest.raises(NotImplementedError, match="not scalar"):
        ng.grad(lambda X: X.power(np.ones(3)).sum())(X)


def test_matmul_by_a_scalar_raises_value_error_like_scipy() -> None:
    X = _matrix()
    with pytest.raises(ValueError, match="Scalar operands"):
        X @ 2.0
    with pytest.raises(ValueError, match="Scalar operands"):
        ng.grad(lambda X: (X @ 2.0).sum())(X)


def test_len_is_ambiguous_as_in_scipy() -> None:
    X = _matrix()
    with pytest.raises(TypeError, match="ambiguous"):
        len(X)
    with pytest.raises(TypeError, match="ambiguous"):
        ng.grad(lambda X: X.sum() * len(X))(X)


# -- refused where scipy would densify, or where nodegrad does not follow ----------------------------


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("ufunc", [np.exp, np.cos, np.cosh, np.log, np.exp2], ids=lambda u: u.__name__)
def test_a_ufunc_that_does_not_keep_zero_raises_naming_it(cls: type, ufunc: np.ufunc) -> None:
    X = _matrix(cls)
    with pytest.raises(NoGradientError, match=rf"np\.{ufunc.__name__}\b") as info:
        ng.grad(lambda X: ufunc(X).sum())(X)
    assert "toarray" in str(info.value)  # the way out


def test_a_binary_ufunc_raises_naming_it() -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match=r"np\.add"):
        ng.grad(lambda X: np.add(X, X).sum())(X)


@pytest.mark.parametrize(
    "convert", [np.asarray, np.array, lambda X: np.asarray(X, dtype=float)], ids=["asarray", "array", "asarray dtype"]
)
def test_np_asarray_of_a_differentiated_matrix_raises(convert: Callable[[Any], Any]) -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match=r"np\.asarray") as info:
        ng.grad(lambda X: convert(X).sum())(X)
    assert "toarray" in str(info.value)


@pytest.mark.parametrize("divisor", [np.ones((2, 3)), np.ones(3), np.ones((2, 1))], ids=["matrix", "row", "column"])
def test_dividing_by_a_dense_array_raises(divisor: np.ndarray) -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match="/") as info:
        ng.grad(lambda X: (X / divisor).sum())(X)
    assert "multiply" in str(info.value)  # the way out: X.multiply(1 / d)


def test_dividing_by_a_traced_array_raises() -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match="/"):
        ng.grad(lambda d: (_as_traced(X, d) / d).sum())(np.ones((2, 3)))


def _as_traced(X: Any, d: Any) -> Any:
    """X as a SparseMatrix with values depending on d (a sparse matrix built from traced values)."""
    import nodegrad.scipy.sparse as sp

    return sp.csr_array((X.data * ng.sum(d), X.indices, X.indptr), shape=X.shape)


@pytest.mark.parametrize(
    "fun",
    [
        lambda X: X @ X.T,
        lambda X: X.T @ X,
        lambda X: X @ ss.csr_array(np.ones((3, 2))),
        lambda X: X.dot(ss.csc_array(np.eye(3))),
    ],
    ids=["X @ X.T", "X.T @ X", "X @ closed-over", "X.dot(closed-over)"],
)
def test_sparse_times_sparse_raises(fun: Callable[[Any], Any]) -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match="sparse @ sparse"):
        ng.grad(lambda X: fun(X).sum())(X)


@pytest.mark.parametrize("cls", CLASSES)
def test_closed_over_sparse_times_a_differentiated_one_raises_naming_the_product(cls: type) -> None:
    X = _matrix()
    Y = cls(np.ones((3, 2)))
    with pytest.raises(NoGradientError, match="sparse @ sparse") as info:
        ng.grad(lambda X: (Y @ X).sum())(X)
    assert "np.asarray" not in str(info.value)
    assert "test_sparse_errors.py" in str(info.value)  # where it was called: here, not in scipy


@pytest.mark.parametrize(
    "fun",
    [
        lambda X: X == X,
        lambda X: X != X * 2.0,
        lambda X: X < 1.0,
        lambda X: X <= X,
        lambda X: X > 0.5,
        lambda X: X >= X * 0.5,
    ],
    ids=["==", "!=", "<", "<=", ">", ">="],
)
def test_comparing_a_differentiated_matrix_raises(fun: Callable[[Any], Any]) -> None:
    X = _matrix()
    with pytest.raises(NoGradientError, match="comparison of a differentiated sparse matrix") as info:
        ng.grad(lambda X: fun(X).sum() * X.sum())(X)
    assert "X.data" in str(info.value)  # the way out


@pytest.mark.parametrize("op", ["!=", "<", "<=", ">", ">="])
def test_comparing_a_differentiated_matrix_names_the_comparison(op: str) -> None:
    X = _matrix()
    compare = {"!=": lambda X: X != 1.0, "<": lambda X: X < 1.0, "<=": lambda X: X <= 1.0}
    compare |= {">": lambda X: X > 1.0, ">=": lambda X: X >= 1.0}
    with pytest.raises(NoGradientError) as info:
        ng.grad(lambda X: compare[op](X).sum() * X.sum())(X)
    assert f"{op} on a sparse 2x3 matrix" in str(info.value)


def test_sums_and_products_of_two_patterns_raise() -> None:
    X = _matrix()
    other = ss.csr_array(np.eye(2, 3))
    with pytest.raises(NoGradientError, match=r"\+ of two sparse matrices on different patterns"):
        ng.grad(lambda X: (X + other).sum())(X)
    with pytest.raises(NoGradientError, match="multiply of two sparse matrices on different patterns"):
        ng.grad(lambda X: X.multiply(other).sum())(X)


def test_shapes_that_do_not_fit_raise_shape_errors_naming_the_op() -> None:
    X = _matrix()
    with pytest.raises(ShapeError, match=r"matmul: dimension mismatch.*\(2, 3\).*\(2,\)"):
        ng.grad(lambda X: (X @ np.ones(2)).sum())(X)
    with pytest.raises(ShapeError, match=r"matmul: dimension mismatch"):
        ng.grad(lambda X: (np.ones(3) @ X).sum())(X)
    with pytest.raises(ShapeError, match="multiply"):
        ng.grad(lambda X: X.multiply(np.ones((3, 3))).sum())(X)


def test_an_int_row_of_a_sparse_array_is_refused_naming_it() -> None:
    X = _matrix()
    with pytest.raises(ArgumentError, match=r"X\[i\]") as info:
        ng.grad(lambda X: X[0].sum())(X)
    assert "X[[i]]" in str(info.value)  # the way out


def test_an_entry_out_of_range_raises_index_error() -> None:
    X = _matrix()
    with pytest.raises(IndexError):
        X[2, 0]
    with pytest.raises(IndexError, match="out of range"):
        ng.grad(lambda X: X[2, 0])(X)
    with pytest.raises(IndexError, match="out of range"):
        ng.grad(lambda X: X[[0, 5]].sum())(X)


@pytest.mark.parametrize("name", ["cos", "max", "exp"])
def test_a_method_nodegrad_does_not_follow_raises_attribute_error_naming_it(name: str) -> None:
    X = _matrix()
    with pytest.raises(AttributeError, match=repr(name)):
        ng.grad(lambda X: getattr(X, name)().sum())(X)


def test_another_format_inside_a_transform_is_refused_naming_it() -> None:
    X = _matrix()
    with pytest.raises(ArgumentError, match="DIA"):
        ng.grad(lambda X: X.asformat("dia").sum())(X)


def test_pickling_a_traced_matrix_raises() -> None:
    X = _matrix()
    with pytest.raises(TypeError, match="SparseMatrix"):
        ng.grad(lambda X: X.sum() * len(pickle.dumps(X)))(X)


def test_returning_stacked_values_as_a_matrix_raises_shape_error() -> None:
    X = _matrix()
    with pytest.raises(ShapeError, match=r"values have shape \(2, 3\), not \(3,\)"):
        ng.vmap(ng.grad(lambda X, w: ng.sum(X @ w)), in_axes=(None, 0))(X, np.ones((2, 3)))
    with pytest.raises(ShapeError, match="one value per stored entry"):
        ng.jacobian(lambda X: X @ np.ones(3))(X)


def test_a_three_dimensional_sparse_array_is_refused() -> None:
    X = ss.coo_array(np.ones((2, 2, 2)))
    with pytest.raises(ArgumentError, match="3-d"):
        ng.grad(lambda X: X.sum())(X)


# -- spsolve ---------------------------------------------------------------------------------------


def test_spsolve_of_a_non_square_matrix_raises_shape_error() -> None:
    X = _matrix(ss.csc_array)
    with pytest.raises(ShapeError, match=r"spsolve: A must be square, got shape \(2, 3\)"):
        ng.grad(lambda X: spsolve(X, np.ones(2)).sum())(X)
    with pytest.raises(ShapeError, match=r"spsolve: A must be square"):  # A closed over, b traced
        ng.grad(lambda b: spsolve(X, b).sum())(np.ones(2))


def test_spsolve_with_a_right_hand_side_that_does_not_fit_raises_shape_error() -> None:
    A = ss.csc_array(np.eye(3))
    with pytest.raises(ShapeError, match=r"spsolve: b of shape \(2,\) does not fit A of shape \(3, 3\)"):
        ng.grad(lambda b: spsolve(A, b).sum())(np.ones(2))
    with pytest.raises(ShapeError, match="spsolve"):
        ng.grad(lambda b: spsolve(A, b).sum())(np.ones((3, 2, 2)))


def test_spsolve_refuses_a_sparse_right_hand_side_and_a_dense_matrix() -> None:
    A = ss.csc_array(np.eye(3))
    with pytest.raises(TypeError, match="sparse right-hand side") as info:
        ng.grad(lambda A: spsolve(A, ss.csc_array(np.ones((3, 1)))).sum())(A)
    assert isinstance(info.value, NodegradError)
    with pytest.raises(TypeError, match="A must be a sparse matrix"):
        ng.grad(lambda b: spsolve(np.eye(3), b).sum())(np.ones(3))


def test_spsolve_messages_name_it_once() -> None:
    with pytest.raises(DtypeError) as info:
        ng.grad(lambda b: spsolve(np.eye(3), b).sum())(np.ones(3))
    assert isinstance(info.value, TypeError)
    message = str(info.value)
    assert message.count("spsolve:") == 1 and message.count("[called at") == 1
    assert "A must be a sparse matrix" in message
    with pytest.raises(DtypeError) as info:  # the sparse right-hand side's too
        ng.grad(lambda A: spsolve(A, ss.csc_array(np.ones((3, 1)))).sum())(ss.csc_array(np.eye(3)))
    message = str(info.value)
    assert message.count("spsolve:") == 1 and message.count("[called at") == 1


# -- formats nodegrad does not differentiate --------------------------------------------------------


OTHER_FORMATS = [
    "dia_array",
    "lil_array",
    "dok_array",
    "bsr_array",
    "dia_matrix",
    "lil_matrix",
    "dok_matrix",
    "bsr_matrix",
]


@pytest.mark.parametrize("kind", OTHER_FORMATS)
def test_a_matrix_of_another_format_as_an_argument_is_refused_naming_its_format(kind: str) -> None:
    X = getattr(ss, kind)(np.eye(2))
    with pytest.raises(ArgumentError, match=kind[:3].upper()) as info:
        ng.grad(lambda X: (X @ np.ones(2)).sum())(X)
    assert "tocsr" in str(info.value)
    with pytest.raises(ArgumentError, match=kind[:3].upper()):
        ng.value_and_grad(lambda X, w: ng.sum(X @ w), argnums=(0, 1))(X, np.ones(2))


@pytest.mark.parametrize("kind", ["dia_array", "lil_array", "dia_matrix"])
def test_a_closed_over_matrix_of_another_format_works_with_traced_values(kind: str) -> None:
    X = getattr(ss, kind)(np.array([[1.0, 2.0], [0.0, 3.0]]))
    np.testing.assert_array_equal(ng.grad(lambda w: ng.sum(X @ w))(np.array([1.0, 1.0])), [1.0, 5.0])


# -- state after errors --------------------------------------------------------------------------------


def test_many_errors_in_a_row_leave_the_transforms_working() -> None:
    X = _matrix()
    failing = [
        lambda X: (X + 1.0).sum(),
        lambda X: np.exp(X).sum(),
        lambda X: np.asarray(X).sum(),
        lambda X: (X / np.ones((2, 3))).sum(),
        lambda X: (X @ X.T).sum(),
        lambda X: spsolve(X, np.ones(2)).sum(),
    ]
    for fun in failing:
        for transform in (ng.grad, ng.replay, ng.value_and_grad):
            with pytest.raises((NotImplementedError, NodegradError, ValueError)):
                transform(fun)(X)
        assert_still_works()
    # and a replay recorded before the errors still replays
    fast = ng.replay(ng.grad(lambda X: ng.sum(np.sin(X @ np.ones(3)))))
    first = fast(X)
    with pytest.raises(NoGradientError):
        ng.grad(lambda X: np.exp(X).sum())(X)
    again = fast(X)
    assert np.array_equal(first.data, again.data)
    np.testing.assert_allclose(first.data, np.cos(X @ np.ones(3))[[0, 0, 1]], rtol=1e-15)
