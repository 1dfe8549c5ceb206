"""A column inside a transform is a Series, and tables answer as pandas does.

The oracle is pandas itself, run eagerly on the same function: values (index, columns,
names, dtypes and order included) must be pandas' own, and gradients must equal central
differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ArgumentError, BatchingError, NoGradientError, ReplayWarning, StructureError

pd = pytest.importorskip("pandas")


def _sales() -> Any:
    index = pd.MultiIndex.from_tuples(
        [("mon", 1), ("mon", 2), ("tue", 1), ("tue", 2), ("wed", 1), ("wed", 2)], names=["day", "shift"]
    )
    return pd.DataFrame(
        {
            "store": ["n", "s", "n", "e", "s", "n"],
            "price": [2.0, 3.0, np.nan, 5.0, 3.5, 1.5],
            "cost": [1.0, 2.5, 0.5, 4.0, 2.0, 1.0],
            "units": [1, 4, 2, 3, 4, 1],
            "open": [True, False, True, True, False, True],
        },
        index=index,
    )


def _same(got: Any, expected: Any) -> None:
    """``got`` (a transform's result) is pandas' ``expected``, to rounding."""
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-12, atol=1e-12)
    elif isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(got, expected, check_exact=False, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def _central(fun: Any, frame: Any, column: str) -> np.ndarray:
    """Central differences of a scalar ``fun`` of ``frame`` in each finite entry of ``column``."""
    found = np.zeros(len(frame))
    for k in range(len(frame)):
        if np.isnan(frame[column].iloc[k]):
            continue
        sides = []
        for step in (1e-6, -1e-6):
            moved = frame.copy()
            moved.iloc[k, moved.columns.get_loc(column)] += step
            sides.append(float(fun(moved)))
        found[k] = (sides[0] - sides[1]) / 2e-6
    return found


PIPELINES = {
    "column arithmetic": lambda f: f["price"] * f["units"] - f.cost,
    "aligned by label": lambda f: f["price"].iloc[:4] + f["cost"].iloc[2:],
    "groupby transform": lambda f: f["price"] - f.groupby("store")["price"].transform("mean"),
    "reductions": lambda f: np.stack(
        [f.price.sum(), f.price.mean(), f.price.std(), f.price.var(), f.price.min(), f.price.max(), f.price.prod()]
    ),
    "numpy on a Series": lambda f: np.stack([np.sum(f.price), np.mean(f.price), np.std(f.price), np.max(f.cost)]),
    "running values": lambda f: f.price.cumsum() + f.cost.cumprod(),
    "rolling": lambda f: f.price.rolling(2).mean() + f.cost.rolling(3, min_periods=1, center=True).sum(),
    "shift diff clip": lambda f: f.price.shift(1) + f.cost.diff() + f.cost.clip(0.8, 3.0),
    "where mask fillna": lambda f: f.price.where(f.units > 1) + f.cost.mask(f.open, 0.0) + f.price.fillna(0.0),
    "ufunc": lambda f: np.exp(f.cost) * np.log1p(f.price.fillna(0.0)),
    "chained assign": lambda f: f.assign(a=lambda t: t.cost * 2, b=lambda t: t.a + t.units)[["a", "b"]],
    "mask rows": lambda f: f[f["units"] > 1][["price", "cost"]],
    "loc label": lambda f: f.loc["tue"],
    "loc rows and column": lambda f: f.loc[("mon", 2) : ("wed", 1), "cost"],
    "iloc rows and columns": lambda f: f.iloc[[4, 0, 0], [1, 2]],
    "loc one value": lambda f: np.stack([f.loc[("tue", 2), "price"], f.iat[0, 2]]),
    "sort with ties": lambda f: f.sort_values("units")[["cost", "units"]],
    "sort stable, NaN first": lambda f: f.sort_values(["open", "price"], kind="stable", na_position="first"),
    "groupby several keys": lambda f: f.groupby(["store", "open"])[["price", "cost"]].sum(),
    "groupby not as index": lambda f: f.groupby("store", as_index=False)[["cost"]].mean(),
    "groupby agg": lambda f: f.groupby("store").agg(total=("cost", "sum"), spread=("cost", "std")),
    "groupby agg list": lambda f: f.groupby("store")[["cost"]].agg(["min", "max", "first", "last"]),
    "groupby by level": lambda f: f.groupby(level="day")["cost"].var(),
    "frame comparison": lambda f: f[["price", "cost"]] > 2.2,
    "frame floordiv": lambda f: f[["cost", "units"]] // 0.7,
    "frame ufunc": lambda f: np.exp(f[["cost", "price"]]),
    "frame minus its means": lambda f: f[["price", "cost"]] - f[["price", "cost"]].mean(),
    "frame row sums": lambda f: f[["price", "cost"]].sum(axis=1),
    "frames aligned": lambda f: f[["price", "cost"]].iloc[:4] + f[["cost"]].iloc[1:],
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_a_pipeline_gives_pandas_values_and_central_difference_gradients(name: str) -> None:
    pipeline = PIPELINES[name]
    frame = _sales()
    expected = pipeline(frame)
    got, _ = ng.vjp(pipeline, frame)
    _same(got, expected)

    def loss(f: Any) -> Any:
        out = pipeline(f)
        out = out.select_dtypes("number") if hasattr(out, "select_dtypes") else out
        values = out.to_numpy(dtype=float) if hasattr(out, "to_numpy") else out
        weights = np.linspace(0.5, 1.5, values.size).reshape(np.shape(values))
        return np.nansum(values * weights)

    gradient = ng.grad(loss)(frame)
    for column in gradient.columns:
        finite = ~np.isnan(frame[column].to_numpy())  # (a NaN entry's derivative is NaN, as numpy's arithmetic gives)
        got, numeric = gradient[column].to_numpy()[finite], _central(loss, frame, column)[finite]
        np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)


def test_a_series_returned_is_pandas_with_its_index_and_name_and_its_gradient_a_series() -> None:
    frame = _sales()
    out, back = ng.vjp(lambda f: f.groupby("store")["price"].sum(), frame)
    assert type(out) is pd.Series and out.name == "price" and out.index.name == "store"
    cotangent = pd.Series(np.ones(len(out)), index=out.index, name="price")
    np.testing.assert_array_equal(back(cotangent)[0]["price"].to_numpy(), [1, 1, 0, 1, 1, 1])
    series = frame["cost"]
    g = ng.grad(lambda s: (s.shift(1) * s).sum())(series)
    assert type(g) is pd.Series and g.name == "cost" and g.index.equals(series.index)


def test_a_data_frame_not_differentiated_is_a_table_inside_every_transform() -> None:
    frame = pd.DataFrame({"x1": [1.0, 2.0, 3.0], "x2": [0.0, 1.0, 1.0], "y": [1.0, 0.0, 2.0]})
    params = {"w": np.array([0.5, -1.0])}

    def loss(p: Any, d: Any) -> Any:
        return ((d["y"] - d[["x1", "x2"]].to_numpy() @ p["w"]) ** 2).mean()

    x, y = frame[["x1", "x2"]].to_numpy(), frame["y"].to_numpy()
    expected = -2.0 * x.T @ (y - x @ params["w"]) / 3
    np.testing.assert_allclose(ng.grad(loss)(params, frame)["w"], expected, rtol=1e-14)
    both = ng.grad(loss, argnums=(0, 1))(params, frame)
    np.testing.assert_allclose(both[0]["w"], expected, rtol=1e-14)
    scales = np.array([1.0, 2.0])
    batched = ng.vmap(lambda s, d: loss({"w": params["w"] * s}, d), in_axes=(0, None))(scales, frame)
    np.testing.assert_allclose(batched, [loss({"w": params["w"] * s}, frame) for s in scales], rtol=1e-14)


def test_a_data_frame_closed_over_meets_traced_values_as_a_table() -> None:
    frame = pd.DataFrame({"y": [1.0, 2.0, 3.0], "x": [0.0, 1.0, 2.0]}, index=list("abc"))

    def loss(w: Any) -> Any:
        return ((frame["y"] - w * frame["x"]) ** 2).sum() + (frame - w).sum().sum()

    eager = lambda w: float(((frame["y"] - w * frame["x"]) ** 2).sum() + (frame - w).sum().sum())
    assert ng.grad(loss)(0.5) == pytest.approx((eager(0.5 + 1e-6) - eager(0.5 - 1e-6)) / 2e-6, rel=1e-6)
    np.testing.assert_allclose(ng.vmap(loss)(np.array([0.5, 1.0])), [eager(0.5), eager(1.0)], rtol=1e-14)


def test_a_data_frame_shared_by_the_examples_of_vmap_is_a_table() -> None:
    frame = _sales()

    def per_store(f: Any, s: Any) -> Any:
        return (f["cost"] * s).groupby(f["store"]).sum().to_numpy()

    scales = np.array([1.0, 2.0, -1.0])
    got = ng.vmap(per_store, in_axes=(None, 0))(frame, scales)
    np.testing.assert_allclose(got, [per_store(frame, s) for s in scales], rtol=1e-14)
    with pytest.raises(BatchingError, match="differ from example to example"):
        ng.vmap(lambda f, s: (f["cost"] * s).sort_values().to_numpy(), in_axes=(None, 0))(frame, scales)


def test_every_join_is_pandas_own() -> None:
    left = pd.DataFrame({"k": ["a", "b", "c", "b"], "v": [1.0, 2.0, 3.0, 4.0], "n": [1, 2, 3, 4]})
    right = pd.DataFrame({"key": ["b", "c", "d"], "v": [10.0, 20.0, 30.0], "w": [0.5, 1.5, 2.5]})
    for how in ("inner", "left", "right", "outer", "cross"):
        keys = {} if how == "cross" else {"left_on": "k", "right_on": "key"}

        def joined(a: Any, b: Any, how: str = how, keys: dict[str, Any] = keys) -> Any:
            return a.merge(b, how=how, indicator=how != "cross", **keys)

        out, _ = ng.vjp(joined, left, right)
        _same(out, joined(left, right))
    g_left, g_right = ng.grad(lambda a, b: np.nansum(a.merge(b, left_on="k", right_on="key", how="outer").v_y), (0, 1))(
        left, right
    )
    np.testing.assert_array_equal(g_right["v"].to_numpy(), [2.0, 1.0, 1.0])
    assert g_left.columns.tolist() == ["v"]


def test_sorting_and_grouping_keep_pandas_order_for_ties_and_missing_keys() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "x": rng.integers(0, 3, 40).astype(float),
            "k": rng.choice(["a", "b", None], 40),
            "v": rng.normal(size=40),
        }
    )
    frame.loc[[3, 7], "x"] = np.nan
    for options in ({}, {"kind": "stable"}, {"kind": "mergesort", "ascending": False}, {"na_position": "first"}):
        out, _ = ng.vjp(lambda f, o=options: f.sort_values("x", **o), frame)
        _same(out, frame.sort_values("x", **options))
    for options in ({}, {"dropna": False}, {"sort": False}):
        out, _ = ng.vjp(lambda f, o=options: f.groupby("k", **o)["v"].agg(["sum", "count"]), frame)
        _same(out, frame.groupby("k", **options)["v"].agg(["sum", "count"]))


def test_what_a_table_cannot_differentiate_is_refused_naming_it() -> None:
    frame = _sales()
    with pytest.raises(NoGradientError, match=r"Series\.apply"):
        ng.grad(lambda f: f.price.apply(np.exp).sum())(frame)
    with pytest.raises(NoGradientError, match=r"Frame\.pivot_table"):
        ng.grad(lambda f: f.pivot_table(index="store").sum().sum())(frame)
    with pytest.raises(StructureError, match="no rows labelled"):
        ng.grad(lambda f: f.loc["sun"].price.sum())(frame)
    with pytest.raises(ng.errors.ArgumentError, match="key column 'price' is differentiated"):
        ng.grad(lambda f: f.groupby("price").cost.sum().sum())(frame)
    # a static table's own pandas methods are pandas'
    pivoted = ng.grad(lambda w, f: (f.pivot_table(index="store", values="cost").cost * w).sum())(1.0, frame)
    assert pivoted == pytest.approx(4.0 + 2.5 / 3 + 2.25, rel=1e-14)


SPELLINGS = {
    "groupby column sum": lambda f: f.groupby("store")["price"].sum(),
    "groupby attribute": lambda f: f.groupby("store").price.sum(),
    "minus a group mean": lambda f: f["price"] - f.groupby("store")["price"].transform("mean"),
    "np.sum of a group sum": lambda f: np.sum(f.groupby("store")["price"].sum()),
    "to_numpy and values": lambda f: f["price"].to_numpy() + f["cost"].values,
    "column reductions": lambda f: f["price"].sum() + f["price"].mean() + f["price"].std(),
    "rolling": lambda f: f["cost"].rolling(2).mean(),
    "loc duplicate labels": lambda f: f.reset_index(drop=True).set_index("store").loc["n"],
    "loc slice": lambda f: f.loc["mon":"tue"],
    "loc rows and a column": lambda f: f.loc[f["units"] > 1, "cost"],
    "iloc rows and a column": lambda f: f.iloc[[0, 2], 2],
    "floor division": lambda f: f[["cost", "units"]] // 2,
    "comparison": lambda f: f[["cost", "units"]] > 1,
    "np.exp of a table": lambda f: np.exp(f[["cost"]]),
    "as_index": lambda f: f.groupby("store", as_index=False)["cost"].sum(),
    "observed": lambda f: f.astype({"store": "category"}).groupby("store", observed=False)["cost"].sum(),
    "dropna and sort": lambda f: f.groupby("store", dropna=False, sort=False)["cost"].max(),
    "level": lambda f: f.groupby(level="shift")["cost"].mean(),
    "na_position": lambda f: f.sort_values("price", na_position="first")["price"],
    "left_on and right_on": lambda f: f.merge(
        f[["store", "cost"]].rename(columns={"store": "s"}), left_on="store", right_on="s"
    ),
    "right and outer joins": lambda f: f.merge(f.iloc[:2], on="store", how="right").merge(
        f.iloc[3:], on="store", how="outer"
    ),
    "mask by a boolean Series": lambda f: f[f["open"]],
    "mask by a list": lambda f: f[[True, False, True, True, False, False]],
    "a DataFrame plus a table": lambda f: f[["cost"]] + f[["cost"]] * 2,
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_spellings_a_pandas_user_writes_first_give_pandas_answers(name: str) -> None:
    spelling = SPELLINGS[name]
    frame = _sales()
    got, _ = ng.vjp(spelling, frame)
    _same(got, spelling(frame))


def test_a_plain_data_frame_meets_a_table_as_pandas_would() -> None:
    frame = _sales()
    plain = frame[["cost"]] * 3.0
    got, _ = ng.vjp(lambda f: plain + f[["cost"]], frame)
    _same(got, plain + frame[["cost"]])


def test_under_vmap_a_choice_of_rows_the_examples_share_is_made_once() -> None:
    frame = pd.DataFrame({"x": [3.0, 1.0, 2.0, np.nan], "k": list("abca")})

    def loss(s: Any, d: Any) -> Any:
        t = d.assign(x=d["x"] * s)
        return t.sort_values("x")["x"].iloc[:2].sum() + t[t["x"] > 1.5]["x"].sum() + t["x"].nlargest(2).sum()

    scales = np.array([1.0, 0.99, 1.015])
    np.testing.assert_allclose(ng.vmap(loss, in_axes=(0, None))(scales, frame), [loss(s, frame) for s in scales])
    np.testing.assert_allclose(ng.vmap(ng.grad(loss), in_axes=(0, None))(scales, frame), [13.0, 13.0, 13.0])
    with pytest.raises(BatchingError, match="the examples choose different rows"):
        ng.vmap(loss, in_axes=(0, None))(np.array([1.0, -1.0]), frame)


def test_named_operators_fill_a_value_missing_on_one_side_as_pandas_does() -> None:
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0]}, index=list("abc"))
    other = pd.Series([10.0, 20.0, np.nan], index=list("bcd"), name="y")
    for spelling in (
        lambda t: t["x"].add(other, fill_value=0.5),
        lambda t: t["x"].pow(2).rsub(1.0),
        lambda t: t["x"].mul(2.0, fill_value=1.0),
        lambda t: t["x"].lt(2.0),
    ):
        got, _ = ng.vjp(spelling, frame)
        _same(got, spelling(frame))
    g = ng.grad(lambda t: np.nansum(t["x"].add(other, fill_value=0.5) * 2))(frame)
    np.testing.assert_array_equal(g["x"].to_numpy(), [2.0, 0.0, 2.0])  # b is filled: no gradient


def test_a_mask_meets_strings_and_its_pandas_object_columns_as_pandas_would() -> None:
    """A mask made from differentiated values, compared with a string (pandas' answer, per
    example under vmap), and clipped or shifted by pandas into an object column of numbers,
    which then meets a differentiated column as its numbers."""
    frame = pd.DataFrame({"x": [np.nan, 0.75, 2.5, -0.25, 2.75], "k": list("abcab")})

    def loss(s: Any, d: Any) -> Any:
        t = d.assign(x=d["x"] * s)
        low = t["x"] <= 1.6
        kept = t[low != "x"]  # pandas: a bool never equals a string, so every row
        return (low.clip(lower=0.5) * t["x"]).sum() + (low.shift(1) - t["x"]).sum() + kept["x"].sum()

    eager = lambda s: float(loss(s, frame))
    for s in (1.0, 0.99):
        assert ng.grad(loss)(s, frame) == pytest.approx((eager(s + 1e-6) - eager(s - 1e-6)) / 2e-6, rel=1e-6)
    scales = np.array([1.0, 0.99, 1.015])
    np.testing.assert_allclose(ng.vmap(loss, in_axes=(0, None))(scales, frame), [eager(s) for s in scales])
    with pytest.warns(ReplayWarning, match="a comparison"):  # pandas compares the values: eager
        assert ng.replay(loss)(1.0, frame) == pytest.approx(eager(1.0))
    got, _ = ng.vjp(lambda d: d["x"] != "x", frame)
    _same(got, frame["x"] != "x")


def test_rows_a_join_leaves_empty_hold_what_pandas_fills_them_with() -> None:
    frame = pd.DataFrame(
        {"k": ["a", "b"], "x": [1.0, 2.0], "flag": [True, False], "day": pd.to_datetime(["2024-01-01", "2024-01-02"])}
    )
    right = pd.DataFrame({"k": ["b", "c"], "r": [3.0, 4.0]})

    def joined(d: Any) -> Any:
        return d.merge(right, on="k", how="outer")

    _same(ng.vjp(joined, frame)[0], joined(frame))
    with pytest.warns(ReplayWarning, match="filling the rows a join leaves empty"):  # pandas' own fill: eager
        _same(ng.replay(joined)(frame), joined(frame))


def test_a_closed_over_data_frame_cannot_store_a_differentiated_column_and_says_how() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ArgumentError, match=r"ng\.Frame\(df\)") as caught:
        ng.grad(lambda s: frame.assign(x=frame["x"] * s)["x"].sum())(1.0)
    assert __file__ in str(caught.value)  # the user's line, not pandas'
    assert ng.grad(lambda s: ng.Frame(frame).assign(x=frame["x"] * s)["x"].sum())(1.0) == 6.0


def test_under_vmap_group_keys_the_examples_share_group_once() -> None:
    frame = pd.DataFrame({"x": [1.0, -2.0, 3.0, np.nan, -0.5], "k": list("abcab")})

    def loss(s: Any, d: Any) -> Any:
        t = d.assign(x=d["x"] * s)
        return t.groupby(t["x"] > 0)["x"].sum().sum() + t.groupby(["k", t["x"] < 1.5])["x"].mean().sum()

    scales = np.array([1.0, 0.99, 1.015])
    np.testing.assert_allclose(ng.vmap(loss, in_axes=(0, None))(scales, frame), [loss(s, frame) for s in scales])
    eager = lambda s: float(loss(s, frame))
    slopes = [(eager(s + 1e-6) - eager(s - 1e-6)) / 2e-6 for s in scales]
    np.testing.assert_allclose(ng.vmap(ng.grad(loss), in_axes=(0, None))(scales, frame), slopes, rtol=1e-6)
    with pytest.raises(BatchingError, match="a group key depends on values that differ"):
        ng.vmap(loss, in_axes=(0, None))(np.array([1.0, -1.0]), frame)
