"""``nodegrad.misc.flatten``: autograd's flatten, dict entries in sorted-key order."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import StructureError
from nodegrad.misc import flatten, flatten_func
from nodegrad.testing import check_grads

VALUE = {
    "z": [np.ones(2), {"b": 2.0, "a": np.arange(3.0)}],
    "a": (1.5, np.array([[4.0, 5.0]])),
    "m": collections.OrderedDict([("y", 7.0), ("x", 8.0)]),
}
# Keys sorted at every level: a, m (x, y), z ([0], then b's dict: a, b).
SORTED = np.array([1.5, 4.0, 5.0, 8.0, 7.0, 1.0, 1.0, 0.0, 1.0, 2.0, 2.0])


def test_flatten_orders_dict_entries_by_sorted_key_and_unflatten_inverts_it() -> None:
    flat, unflatten = flatten(VALUE)
    np.testing.assert_array_equal(flat, SORTED)
    back = unflatten(flat * 2.0)
    assert list(back) == ["z", "a", "m"]  # the dicts keep their own order and type
    assert type(back["m"]) is collections.OrderedDict and list(back["m"]) == ["y", "x"]
    assert back["m"]["y"] == 14.0 and back["z"][1]["b"] == 4.0
    np.testing.assert_array_equal(back["z"][1]["a"], [0.0, 2.0, 4.0])
    assert isinstance(back["a"], tuple)
    # ng.tree.ravel keeps insertion order instead: the two differ by a permutation
    raveled, _ = ng.tree.ravel(VALUE)
    assert sorted(raveled) == sorted(flat) and not np.array_equal(raveled, flat)


def test_flatten_gives_autograds_vector() -> None:
    autograd_misc = pytest.importorskip("autograd.misc")
    value = {**VALUE, "m": dict(VALUE["m"])}  # autograd's takes plain dicts only
    theirs, their_unflatten = autograd_misc.flatten(value)
    np.testing.assert_array_equal(flatten(value)[0], theirs)
    v = np.linspace(-1.0, 1.0, theirs.size)
    ours_back, theirs_back = flatten(value)[1](v), their_unflatten(v)
    assert ours_back["z"][1]["b"] == theirs_back["z"][1]["b"]
    np.testing.assert_array_equal(ours_back["a"][1], theirs_back["a"][1])


def test_flatten_differentiates_both_ways() -> None:
    params = {"w": np.array([0.5, -1.0]), "b": 0.25}

    def loss(p: Any) -> Any:
        flat, unflatten = flatten(p)
        q = unflatten(flat * flat)
        return ng.sum(q["w"]) * q["b"] + flat[0]

    check_grads(loss, params, order=2)
    g = ng.grad(loss)(params)
    assert g["b"] == pytest.approx(2 * 0.25 * np.sum(params["w"] ** 2) + 1.0)


def test_flatten_func_makes_a_function_of_one_vector() -> None:
    def model(p: Any, x: Any) -> Any:
        return {"out": p["w"] * x + p["b"], "aux": p["b"] ** 2}

    example = {"w": np.array([1.0, 2.0]), "b": 0.5}
    flat_model, unflatten, x0 = flatten_func(model, example)
    np.testing.assert_array_equal(x0, [0.5, 1.0, 2.0])
    assert unflatten(x0 * 2.0)["b"] == 1.0
    # the output flattened with sorted keys too: aux, then out
    np.testing.assert_allclose(flat_model(x0, 3.0), [0.25, 3.5, 6.5])
    jac = ng.jacobian(flat_model)(x0, 3.0)
    np.testing.assert_allclose(jac, [[1.0, 0.0, 0.0], [1.0, 3.0, 0.0], [1.0, 0.0, 3.0]])


def test_keys_that_cannot_be_sorted_name_the_way_out() -> None:
    with pytest.raises(StructureError, match=r"the dict at \['p'\] has keys that cannot be sorted.*tree.ravel"):
        flatten({"p": {1: 1.0, "a": 2.0}})
