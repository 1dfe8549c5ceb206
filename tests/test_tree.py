"""``ng.tree.ravel``: one vector from a structure's float leaves, and back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given

import nodegrad as ng
from nodegrad.engine.structure import differentiable_leaves, flatten_with_paths, is_differentiable_leaf
from nodegrad.errors import DtypeError, ShapeError
from nodegrad.testing import check_grads
from nodegrad.testing.strategies import Tagged, structures


def _same(a: Any, b: Any) -> None:
    """Equal structures: same types and static leaves, float leaves equal with their dtypes."""
    pairs = list(zip(flatten_with_paths(a), flatten_with_paths(b), strict=True))
    for (path_a, leaf_a), (path_b, leaf_b) in pairs:
        assert path_a == path_b
        assert type(leaf_a) is type(leaf_b), path_a
        if is_differentiable_leaf(leaf_a):
            assert np.shape(leaf_a) == np.shape(leaf_b) and np.asarray(leaf_a).dtype == np.asarray(leaf_b).dtype
            np.testing.assert_array_equal(leaf_a, leaf_b)
        elif isinstance(leaf_a, np.ndarray):
            np.testing.assert_array_equal(leaf_a, leaf_b)
        else:
            assert leaf_a == leaf_b or (leaf_a != leaf_a and leaf_b != leaf_b), path_a  # NaN floats are static too


@given(structures())
def test_ravel_then_unravel_gives_the_structure_back(tree: Any) -> None:
    flat, unravel = ng.tree.ravel(tree)
    floats = [leaf for _, leaf in differentiable_leaves(tree)]
    assert flat.ndim == 1 and flat.size == sum(np.size(leaf) for leaf in floats)
    if floats:
        assert flat.dtype == np.result_type(*(np.asarray(leaf) for leaf in floats))
        np.testing.assert_array_equal(flat, np.concatenate([np.ravel(leaf) for leaf in floats]))
    _same(unravel(flat), tree)


@given(structures(max_leaves=4))
def test_a_function_of_the_unravelled_vector_differentiates(tree: Any) -> None:
    # In float64, so that central differences measure the derivative, not rounding.
    tree = ng.tree.map_floats(lambda leaf: np.asarray(leaf, np.float64) if isinstance(leaf, np.ndarray) else leaf, tree)
    flat, unravel = ng.tree.ravel(tree)
    weights = np.linspace(0.5, 1.5, flat.size)

    def f(vector: Any) -> Any:
        total: Any = 0.0
        for _, leaf in differentiable_leaves(unravel(vector)):
            total = total + ng.sum(ng.sin(leaf) * leaf)
        return total + ng.sum(vector * weights) * 0.1

    check_grads(f, flat, order=2)


def test_ravel_inside_grad_gives_the_gradient_of_the_structure() -> None:
    params = Tagged(w={"a": np.array([1.0, -2.0]), "b": 0.5}, tag=3)
    g = ng.grad(lambda p: ng.sum(ng.tree.ravel(p)[0] ** 2.0))(params)
    assert isinstance(g, Tagged) and g.tag is None
    np.testing.assert_allclose(g.w["a"], [2.0, -4.0])
    assert g.w["b"] == pytest.approx(1.0) and type(g.w["b"]) is float


def test_unravel_casts_back_to_each_leafs_dtype_and_checks_the_size() -> None:
    tree = {"low": np.ones(2, np.float32), "high": np.zeros(3)}
    flat, unravel = ng.tree.ravel(tree)
    assert flat.dtype == np.float64
    back = unravel(flat + 0.25)
    assert back["low"].dtype == np.float32 and back["high"].dtype == np.float64
    np.testing.assert_array_equal(back["low"], [1.25, 1.25])
    with pytest.raises(ShapeError, match=r"unravel needs a vector of shape \(5,\), got shape \(4,\)"):
        unravel(np.zeros(4))


def test_unravel_reads_a_list_or_a_range_as_numpy_does_and_refuses_what_is_not_numbers() -> None:
    tree = {"w": np.ones(2), "b": 0.5, "name": "layer"}
    _, unravel = ng.tree.ravel(tree)
    back = unravel(range(3))  # ints, cast back to each leaf's dtype
    np.testing.assert_array_equal(back["w"], [0.0, 1.0])
    assert back["b"] == 2.0 and type(back["b"]) is float and back["name"] == "layer"
    assert unravel([1.0, 2.0, 3.0])["b"] == 3.0
    with pytest.raises(DtypeError, match=r"tree\.ravel: unravel needs a vector of numbers, got list of dtype <U1"):
        unravel(["a", "b", "c"])
    with pytest.raises(DtypeError, match="got NoneType of dtype object"):
        unravel(None)
    with pytest.raises(ShapeError, match="unravel needs a vector of numbers"):
        unravel([[1.0], [2.0, 3.0]])
    with pytest.raises(ShapeError, match=r"shape \(3,\), got shape \(4,\)"):
        unravel(range(4))
    # the vector differentiated through unravel, a closed-over structure's inverse
    g = ng.grad(lambda v: ng.sum(unravel(v)["w"] * 3.0) + unravel(v)["b"])(np.ones(3))
    np.testing.assert_array_equal(g, [3.0, 3.0, 1.0])


def test_a_structure_without_float_leaves_ravels_to_an_empty_vector() -> None:
    flat, unravel = ng.tree.ravel({"n": 3, "s": "x"})
    assert flat.shape == (0,)
    assert unravel(flat) == {"n": 3, "s": "x"}


def test_unravel_of_a_traced_python_float_gives_a_traced_scalar() -> None:
    # Inside a transform a float leaf is a handle holding a Python float: unravel rebuilds it.
    def f(params: dict[str, Any]) -> Any:
        flat, unravel = ng.tree.ravel(params)
        back = unravel(flat * 3.0)
        return back["k"] * back["w"][0]

    g = ng.grad(f)({"k": 0.5, "w": np.array([2.0])})
    assert g["k"] == pytest.approx(18.0) and type(g["k"]) is float
    np.testing.assert_allclose(g["w"], [4.5])


def test_add_keeps_a_float_in_a_field_marked_static() -> None:
    params = Tagged(w={"a": np.array([1.0]), "b": 0.5}, tag=2.0)
    total = ng.tree.add(params, Tagged(w={"a": np.array([0.5]), "b": 0.25}, tag=2.0))
    assert total.tag == 2.0 and total.w["b"] == 0.75
    np.testing.assert_array_equal(total.w["a"], [1.5])


def test_vdot_leaves_out_a_float_in_a_field_marked_static() -> None:
    params = Tagged(w={"a": np.array([1.0]), "b": 0.5}, tag=2.0)
    assert ng.tree.vdot(params, params) == pytest.approx(1.25)


def test_ravel_round_trips_python_complex_leaves() -> None:
    tree = {"z": 1j, "x": 2.0, "w": np.array([1.0 + 2.0j])}
    flat, unravel = ng.tree.ravel(tree)
    back = unravel(flat * 2.0)
    assert type(back["z"]) is complex and back["z"] == 2j
    assert type(back["x"]) is float and back["x"] == 4.0
    np.testing.assert_array_equal(back["w"], [2.0 + 4.0j])
