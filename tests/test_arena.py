"""The arena: recording, inspection, handles, and staying usable after errors."""

from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ArenaError, DtypeError, NodegradError, ShapeError


def test_nodes_are_appended_in_topological_order():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    y = ng.exp(x) * x
    z = y.sum()
    assert len(a) == 4
    assert [n.op for n in a] == ["param", "exp", "multiply", "sum"]
    assert a[2].parents == (1, 0)
    assert all(p < n.index for n in a for p in n.parents)
    assert z.index == 3
    assert a[-1].index == 3


def test_node_view_reports_shape_dtype_and_value():
    a = ng.Arena()
    x = a.param(np.ones((2, 3), dtype=np.float32))
    y = x.T
    node = a[y.index]
    assert node.op == "transpose"
    assert node.shape == (3, 2)
    assert node.dtype == np.float32
    np.testing.assert_array_equal(node.value, np.ones((3, 2)))


def test_node_index_out_of_range_is_an_arena_error():
    a = ng.Arena()
    a.param(1.0)
    with pytest.raises(ArenaError, match="out of range"):
        a[5]


def test_param_rejects_integers_with_a_hint():
    a = ng.Arena()
    with pytest.raises(DtypeError, match=r"3\.0 instead of 3"):
        a.param(3)
    assert len(a) == 0


def test_input_accepts_any_dtype():
    a = ng.Arena()
    idx = a.input(np.array([0, 2]))
    assert a[idx.index].op == "input"
    assert idx.dtype.kind == "i"


def test_handle_attributes_mirror_numpy():
    a = ng.Arena()
    v = np.arange(6.0).reshape(2, 3)
    x = a.param(v)
    assert x.shape == (2, 3)
    assert x.ndim == 2
    assert x.size == 6
    assert len(x) == 2
    assert x.dtype == np.float64
    np.testing.assert_array_equal(x.reshape(3, 2).value, v.reshape(3, 2))
    np.testing.assert_array_equal(x.reshape((6,)).value, v.ravel())
    np.testing.assert_array_equal(x.sum(axis=0).value, v.sum(axis=0))
    np.testing.assert_array_equal(x.mean(axis=1, keepdims=True).value, v.mean(axis=1, keepdims=True))
    np.testing.assert_array_equal(x.max(axis=1).value, v.max(axis=1))
    np.testing.assert_array_equal(x.min().value, v.min())
    np.testing.assert_array_equal(x.transpose(1, 0).value, v.T)


def test_matrix_methods_mirror_numpy_and_carry_gradients():
    v = np.arange(6.0).reshape(2, 3) + 1.0

    def f(x: Any) -> Any:
        return (x.mT @ x).trace() + x.diagonal(1).sum() + x.repeat(2, axis=0).sum()

    want = v.T @ v
    x = ng.Arena().param(v)
    np.testing.assert_array_equal(x.mT.value, v.mT)
    np.testing.assert_array_equal(x.diagonal(-1).value, v.diagonal(-1))
    np.testing.assert_array_equal(x.repeat(2).value, v.repeat(2))
    assert f(x).value == np.trace(want) + v.diagonal(1).sum() + v.repeat(2, axis=0).sum()
    # d/dx: trace(x^T x) -> 2x; the offset diagonal -> 1 there; each row repeated twice -> 2.
    expected = 2 * v + 2.0
    expected[[0, 1], [1, 2]] += 1.0
    np.testing.assert_array_equal(ng.grad(f)(v), expected)
    # Plain answers, as for comparisons: no gradient to carry.
    assert x.any() is np.True_ and x.all(axis=0).tolist() == [True, True, True]
    np.testing.assert_array_equal(x.nonzero()[1], np.nonzero(v)[1])


def test_operators_record_nodes_with_numpy_results():
    a = ng.Arena()
    xv, yv = np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0, 7.0])
    x, y = a.param(xv), a.param(yv)
    cases = {
        "add": (x + y, xv + yv),
        "radd": (2.0 + x, 2.0 + xv),
        "sub": (x - y, xv - yv),
        "rsub": (1.0 - x, 1.0 - xv),
        "mul": (x * y, xv * yv),
        "rmul": (3.0 * x, 3.0 * xv),
        "div": (x / y, xv / yv),
        "rdiv": (1.0 / x, 1.0 / xv),
        "pow": (x**2.0, xv**2.0),
        "rpow": (2.0**x, 2.0**xv),
        "matmul": (x @ y, xv @ yv),
        "rmatmul": (xv @ y, xv @ yv),
        "neg": (-x, -xv),
        "abs": (abs(-x), xv),
        "ndarray-left": (np.array([1.0, 1.0, 1.0]) * x, xv),
    }
    for name, (got, want) in cases.items():
        assert isinstance(got, ng.Traced), name
        np.testing.assert_allclose(got.value, want, err_msg=name)


def test_comparisons_give_plain_masks_and_record_nothing():
    a = ng.Arena()
    x = a.param(np.array([-1.0, 0.0, 2.0]))
    before = len(a)
    masks = [x > 0, x >= 0, x < 0, x <= 0, x == 0, x != 0]
    assert all(type(m) is np.ndarray and m.dtype == bool for m in masks)
    np.testing.assert_array_equal(masks[0], [False, False, True])
    assert len(a) == before


def test_failed_op_appends_nothing_and_arena_stays_usable():
    a = ng.Arena()
    x = a.param(np.ones((2, 3)))
    y = a.param(np.ones((4, 5)))
    before = len(a)
    with pytest.raises(ShapeError, match=r"matmul.*\[2, 3\].*\[4, 5\]"):
        x @ y
    with pytest.raises(ShapeError, match="add"):
        x + y
    assert len(a) == before
    z = (x * 2.0).sum()
    np.testing.assert_array_equal(a.backward(z, wrt=x), np.full((2, 3), 2.0))


def test_shape_error_names_the_users_line():
    a = ng.Arena()
    x = a.param(np.ones(3))
    with pytest.raises(ShapeError, match=r"test_arena\.py:\d+"):
        x + np.ones(4)


def test_mixing_arenas_is_an_error():
    x = ng.Arena().param(1.0)
    y = ng.Arena().param(2.0)
    with pytest.raises(ArenaError, match="different arenas"):
        x + y


def test_asarray_of_a_traced_value_raises_instead_of_detaching():
    x = ng.Arena().param(np.ones(2))
    with pytest.raises(ArenaError, match="drop its gradient"):
        np.asarray(x)


def test_numpy_ufuncs_and_functions_dispatch_to_ops():
    a = ng.Arena()
    xv = np.array([0.5, 1.5])
    x = a.param(xv)
    y = np.sum(np.exp(x) * np.sin(x))
    assert isinstance(y, ng.Traced)
    np.testing.assert_allclose(y.value, np.sum(np.exp(xv) * np.sin(xv)))
    np.testing.assert_allclose(a.backward(y, wrt=x), np.exp(xv) * (np.sin(xv) + np.cos(xv)))


def test_numpy_function_without_a_rule_raises_naming_it():
    x = ng.Arena().param(np.ones(3))
    with pytest.raises(ng.errors.NoGradientError, match=r"np\.unique\b"):
        np.unique(x.reshape(1, 3)[:, :1])
    with pytest.raises(ng.errors.NoGradientError, match=r"np\.histogram\b"):
        np.histogram(x)


def test_every_error_is_a_nodegrad_error():
    for cls in (ShapeError, DtypeError, ArenaError, ng.errors.NoGradientError, ng.errors.OpIndexError):
        assert issubclass(cls, NodegradError)


def test_arenas_enter_and_exit_as_context_managers():
    from nodegrad.engine.arena import current_arena

    assert current_arena() is None
    with ng.Arena() as outer:
        assert current_arena() is outer
        with ng.Arena() as inner:
            assert current_arena() is inner
        assert current_arena() is outer
    assert current_arena() is None
