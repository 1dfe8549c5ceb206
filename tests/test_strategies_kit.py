"""nodegrad.testing.strategies: what the strategies promise, checked on what they draw.

Kink-free arrays keep their margins (from 0, the integers, the half-integers, the given
kinks and each other), so gradient checks of piecewise ops pass on them; shapes with a
side of 0 and 0-d shapes are drawn when asked; structures mix key types and static
leaves when asked and leave them out when not; DataFrames have the columns and dtypes
asked for, with duplicate and missing keys, and gradients flow through them."""

from __future__ import annotations

import sys
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import nodegrad as ng
from nodegrad.engine.structure import TreeDef, differentiable_leaves, flatten
from nodegrad.errors import ArgumentError
from nodegrad.testing import check_grads
from nodegrad.testing.strategies import (
    Marked,
    Tagged,
    complex_arrays,
    data_frames,
    float_arrays,
    shapes,
    structures,
)

pd = pytest.importorskip("pandas")

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Found(Exception):  # noqa: N818  (stops the search, carrying the example)
    def __init__(self, value: Any) -> None:
        self.value = value


def find(strategy: st.SearchStrategy[Any], predicate: Any, tries: int = 300) -> Any:
    """A drawn example with the property (hypothesis.find without its shrinking, which is slow)."""

    @settings(max_examples=tries, database=None, deadline=None, derandomize=True, phases=[Phase.generate])
    @given(strategy)
    def look(value: Any) -> None:
        if predicate(value):
            raise _Found(value)

    try:
        look()
    except _Found as found:
        return found.value
    raise AssertionError(f"no example in {tries} draws")


def _distance_to_the_half_integers(x: np.ndarray) -> np.ndarray:
    """How far each entry is from the nearest multiple of 0.5 (integers, 0 and half-integers)."""
    return np.abs(x - np.round(x * 2.0) / 2.0)


def _assert_margins(x: np.ndarray, margin: float, kinks: tuple[float, ...], bound: float) -> None:
    values = np.asarray(x, dtype=np.float64).ravel()
    assert np.all(np.abs(values) <= bound)
    assert np.all(_distance_to_the_half_integers(values) >= margin)
    for kink in kinks:
        assert np.all(np.abs(values - kink) >= margin)
    if values.size > 1:
        gaps = np.abs(values[:, None] - values[None, :])
        np.fill_diagonal(gaps, np.inf)
        assert gaps.min() >= margin


# -- avoid_kinks ------------------------------------------------------------------------------------


@FAST
@given(st.data())
def test_kink_free_arrays_keep_every_margin(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.float16]))
    margin = data.draw(st.sampled_from([1e-3, 1e-2, 0.05, 0.2]))
    bound = data.draw(st.sampled_from([1.0, 3.0, 10.0]))
    kinks = tuple(data.draw(st.lists(st.floats(-bound, bound), max_size=3)))
    x = data.draw(float_arrays(shapes(max_side=3), dtype, bound, avoid_kinks=True, margin=margin, kinks=kinks))
    assert x.dtype == dtype
    _assert_margins(x, margin, kinks, bound)


@FAST
@given(complex_arrays(dtype=np.complex64, avoid_kinks=True, margin=0.05, kinks=(0.25,), away_from_zero=0.3))
def test_kink_free_complex_arrays_keep_the_margins_in_each_part(z: np.ndarray) -> None:
    assert z.dtype == np.complex64
    for part in (z.real, z.imag):
        _assert_margins(part, 0.05, (0.25,), 3.0)
        assert np.all(np.abs(part) >= 0.3)


@FAST
@given(float_arrays(away_from_zero=0.7, avoid_kinks=True))
def test_away_from_zero_holds_with_avoid_kinks(x: np.ndarray) -> None:
    assert np.all(np.abs(x) >= 0.7)


# Functions of piecewise ops, with the kinks (clip and where thresholds) the draws avoid.
PIECEWISE = {
    "abs": (lambda x: ng.sum(ng.abs(x) * x), ()),
    "max and min": (lambda x: ng.max(x * 2.0 + 1.0) - ng.min(ng.exp(x), axis=0), ()),
    "sort": (lambda x: ng.sum(ng.sort(x, axis=-1) * np.linspace(1.0, 2.0, x.shape[-1])), ()),
    "clip": (lambda x: np.sum(np.clip(x, -1.3, 0.8) ** 2.0), (-1.3, 0.8)),
    "relu": (lambda x: ng.sum(ng.relu(x) * ng.tanh(x)), ()),
    "where": (lambda x: ng.sum(ng.where(x > 0.3, x**2.0, -x)), (0.3,)),
    "round and floor": (lambda x: np.sum(np.round(x) * x + np.floor(x) * x**2.0), ()),
}


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_check_grads_of_piecewise_ops_passes_on_kink_free_draws(name: str) -> None:
    f, kinks = PIECEWISE[name]

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(float_arrays(shapes(min_dims=1, max_dims=2), avoid_kinks=True, kinks=kinks))
    def check(x: np.ndarray) -> None:
        check_grads(f, x)

    check()


def test_without_avoid_kinks_hypothesis_finds_a_kink() -> None:
    # The reason for the option: drawn values sit on kinks (0, ties) often enough to fail.
    def fails(x: np.ndarray) -> bool:
        try:
            check_grads(PIECEWISE["max and min"][0], x)
        except AssertionError:
            return True
        return False

    found = find(float_arrays(shapes(min_dims=1)), fails)
    assert found.size >= 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"avoid_kinks": True, "margin": 0.25}, r"margin must be a number in \(0, 0.25\)"),
        ({"avoid_kinks": True, "margin": 0.0}, "margin must be a number"),
        ({"avoid_kinks": True, "kinks": (0.5, float("nan"))}, "kinks must be finite numbers"),
        ({"avoid_kinks": True, "kinks": "abc"}, "kinks must be a sequence of numbers"),
        ({"kinks": (1.5,)}, "pass avoid_kinks=True with them"),
        ({"avoid_kinks": True, "elements": st.just(0.3)}, "elements and avoid_kinks=True both choose"),
        ({"avoid_kinks": True, "bound": 0.01}, "bound must exceed 2 \\* margin"),
    ],
)
def test_bad_kink_options_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ArgumentError, match=f"float_arrays: .*{match}"):
        float_arrays(**kwargs)


def test_an_array_too_large_for_its_margins_is_refused() -> None:
    # [-1, 1] holds about 2 / 0.2 = 10 values 0.2 apart and from the kinks: not 50.
    with pytest.raises(ArgumentError, match=r"cannot place 50 values at least 0\.2 apart"):
        float_arrays((50,), bound=1.0, avoid_kinks=True, margin=0.2)  # refused when made, not when drawn


# -- shapes --------------------------------------------------------------------------------------------


def test_shapes_draw_empty_and_0d_shapes_when_asked() -> None:
    assert 0 in find(shapes(allow_empty=True), lambda s: 0 in s)
    assert find(shapes(), lambda s: s == ()) == ()
    empty = find(float_arrays(allow_empty=True, avoid_kinks=True), lambda x: x.size == 0)
    assert empty.size == 0 and empty.ndim >= 1


@FAST
@given(shapes())
def test_shapes_have_no_empty_side_unless_asked(shape: tuple[int, ...]) -> None:
    assert 0 not in shape


@FAST
@given(float_arrays(allow_empty=True), complex_arrays(allow_empty=True))
def test_gradients_of_empty_and_0d_arrays(x: np.ndarray, z: np.ndarray) -> None:
    assert ng.grad(lambda x: ng.sum(x * x))(x).shape == x.shape
    assert ng.grad(lambda z: ng.sum(ng.abs(z) ** 2.0))(z).dtype == z.dtype


# -- structures -----------------------------------------------------------------------------------------


def _containers(value: Any) -> list[TreeDef]:
    """The TreeDef of every container inside ``value`` (nodegrad's own walk of it)."""

    def walk(treedef: TreeDef) -> list[TreeDef]:
        if treedef.handler is None:
            return []
        return [treedef, *(found for child in treedef.children for found in walk(child))]

    return walk(flatten(value)[1])


def _dict_keys(value: Any) -> list[list[Any]]:
    return [list(t.keys) for t in _containers(value) if type(t.template) is dict]


def _static_fields(value: Any) -> list[Any]:
    return [t.template for t in _containers(value) if any(t.static)]


def _static_leaves(value: Any) -> list[Any]:
    return [leaf for _, leaf in ng.tree.tree_leaves_with_path(value) if not ng.is_differentiable_leaf(leaf)]


def test_structures_mix_key_types_in_one_dict() -> None:
    def mixed(value: Any) -> bool:
        return any({type(k) for k in keys} >= {str, int, tuple} for keys in _dict_keys(value))

    assert mixed(find(structures(), mixed))


@FAST
@given(structures(mixed_keys=False, static_leaves=False, dtypes=(np.float32, np.complex128)))
def test_structures_without_mixed_keys_or_static_leaves(value: Any) -> None:
    assert all(type(k) is str for keys in _dict_keys(value) for k in keys)
    assert not _static_leaves(value)
    assert not _static_fields(value)


def test_structures_draw_static_leaves_and_static_fields() -> None:
    fields = _static_fields(find(structures(), _static_fields))
    assert {type(record) for record in fields} <= {Tagged, Marked}
    leaves = _static_leaves(find(structures(), _static_leaves))
    assert leaves  # ints, bools, strings, None, int and bool arrays


def _squares(v: Any) -> Any:
    total: Any = 0.0
    for _, leaf in differentiable_leaves(v):
        total = total + ng.sum(ng.abs(leaf) ** 2.0)
    return total


@FAST
@given(structures(max_leaves=4, dtypes=(np.float64, np.float32, np.complex128)))
def test_gradients_reach_every_float_leaf_of_drawn_structures(value: Any) -> None:
    grads = dict(differentiable_leaves(ng.grad(_squares)(value)))
    for path, leaf in differentiable_leaves(value):
        np.testing.assert_allclose(grads[path], 2.0 * np.conj(leaf), rtol=1e-5)  # 2 conj(z): JAX's convention


# -- data frames ---------------------------------------------------------------------------------------


@FAST
@given(
    data_frames(
        max_rows=5, float_columns=("price", "cost"), key_columns={"store": "str", "day": "int", "kind": "category"}
    )
)
def test_data_frames_have_the_columns_and_dtypes_asked_for(table: Any) -> None:
    assert list(table.columns) == ["price", "cost", "store", "day", "kind"]
    assert table["price"].dtype == np.float64 and table["cost"].dtype == np.float64
    assert str(table["day"].dtype) == "Int64"
    assert isinstance(table["kind"].dtype, pd.CategoricalDtype)
    assert list(table["kind"].cat.categories) == ["lo", "mid", "hi", "unused"]
    assert table.index.equals(pd.RangeIndex(len(table)))
    assert not table[["price", "cost"]].isna().any().any()  # no NaN unless asked
    assert np.all(np.abs(table[["price", "cost"]].to_numpy()) <= 3.0)


def test_data_frames_draw_duplicate_and_missing_keys_nans_and_empty_tables() -> None:
    tables = data_frames(max_rows=6, float_columns=2, key_columns=("k",), allow_nan=True)
    assert find(tables, lambda t: t["k"].dropna().duplicated().any())["k"].dropna().duplicated().any()
    assert find(tables, lambda t: t["k"].isna().any())["k"].isna().any()
    assert find(tables, lambda t: t[["x0", "x1"]].isna().any().any())["x0"].size
    assert len(find(tables, lambda t: len(t) == 0)) == 0
    kinds = set()
    for kind in ("int", "str", "category"):
        drawn = find(tables, lambda t, kind=kind: _kind(t["k"]) == kind)
        kinds.add(_kind(drawn["k"]))
    assert kinds == {"int", "str", "category"}


def _kind(column: Any) -> str:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return "category"
    return "int" if pd.api.types.is_integer_dtype(column.dtype) else "str"


@FAST
@given(
    data_frames(
        min_rows=1, float_columns=("x", "y"), key_columns=("key",), dtype=np.float32, allow_nan=True, missing_keys=False
    )
)
def test_gradients_flow_through_drawn_tables(table: Any) -> None:
    def loss(t: Any) -> Any:
        by_key = t[["y", "key"]].groupby("key").sum()
        return np.nansum(t["x"] * 3.0) + np.sum(by_key["y"] * 2.0)  # linear: a NaN entry gets 0, not NaN

    g = ng.grad(loss)(table)
    assert list(g.columns) == ["x", "y"] and g.index.equals(table.index)
    assert g["x"].dtype == np.float32
    np.testing.assert_allclose(g["x"], np.where(np.isnan(table["x"]), 0.0, 3.0), rtol=1e-6)
    np.testing.assert_allclose(g["y"], np.where(np.isnan(table["y"]), 0.0, 2.0), rtol=1e-6)  # a NaN is skipped


@FAST
@given(data_frames(min_rows=2, float_columns=("x",), key_columns={"key": "str"}, missing_keys=False))
def test_check_grads_through_a_drawn_table(table: Any) -> None:
    # check_grads is given the float columns; the keys join inside the function.
    keys = table["key"].to_numpy()

    def f(floats: Any) -> Any:
        means = floats.assign(key=keys).groupby("key").transform("mean")
        return np.sum(np.tanh(floats["x"]) * means["x"])

    check_grads(f, table[["x"]], modes=("rev",))


def test_data_frames_refuse_bad_options() -> None:
    with pytest.raises(ArgumentError, match="column names must be distinct"):
        data_frames(float_columns=("a",), key_columns=("a",))
    with pytest.raises(ArgumentError, match="key_columns kinds must be among"):
        data_frames(key_columns={"k": "date"})
    with pytest.raises(ArgumentError, match="min_rows <= max_rows"):
        data_frames(min_rows=3, max_rows=1)
    with pytest.raises(ArgumentError, match="dtype must be a float dtype"):
        data_frames(dtype=np.int64)


def test_data_frames_without_pandas_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"data_frames needs pandas.*pip install 'nodegrad\[pandas\]'"):
        data_frames()
