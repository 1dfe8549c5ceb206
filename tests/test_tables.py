"""pandas DataFrames and Series as differentiable values, and ``ng.Frame`` inside functions.

Hypothesis draws frames of mixed column types (float columns with NaN allowed where the
loss does not read them, ints, bools, strings, categoricals) and indexes (integers, strings,
repeated labels). Checked: the gradient of a DataFrame is a DataFrame with the argument's
index and its float columns in their order, equal to central differences; a Series' is a
Series with its index and name; a pipeline written in pandas' spelling gives pandas' own
values when run on a Frame inside a transform; a Frame returned from a transform is a
DataFrame; refusals name what is refused; ``import nodegrad`` does not import pandas.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings

import nodegrad as ng
from nodegrad.errors import NoGradientError, ShapeError, StructureError

# Away from -1, where pipeline's row filter switches (central differences would straddle it).
FLOATS = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False).filter(lambda v: abs(v + 1.0) > 1e-3)


@st.composite
def frames(draw: st.DrawFn, min_rows: int = 1) -> pd.DataFrame:
    """A DataFrame of 1-3 float columns and 0-3 static ones (ints, bools, strings, a
    categorical), with an integer or string index (labels may repeat)."""
    rows = draw(st.integers(min_rows, 6))
    data: dict[str, Any] = {}
    for k in range(draw(st.integers(1, 3))):
        data[f"f{k}"] = np.array(draw(st.lists(FLOATS, min_size=rows, max_size=rows)))
    kinds = draw(st.lists(st.sampled_from(["int", "bool", "str", "category"]), max_size=3, unique=True))
    for kind in kinds:
        codes = draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows))
        column = {
            "int": np.array(codes),
            "bool": np.array(codes) > 0,
            "str": np.array([f"s{c}" for c in codes], dtype=object),
            "category": pd.Categorical([f"c{c}" for c in codes]),
        }[kind]
        data[kind] = column
    labels = list(data)
    order = draw(st.permutations(labels))
    if draw(st.booleans()):
        index = pd.Index(draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=rows, max_size=rows)))
    else:
        index = pd.Index(draw(st.lists(st.integers(-5, 5), min_size=rows, max_size=rows, unique=True)))
    return pd.DataFrame({label: data[label] for label in order}, index=index)


def float_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if frame[c].dtype.kind == "f"]


def weighted(frame: Any) -> Any:
    """A loss reading every float column, each weighted differently, squared and summed."""
    total = 0.0
    for k, label in enumerate(c for c in frame.columns if frame[c].dtype.kind == "f"):
        total = total + np.sum((k + 1.0) * np.sin(frame[label]) * frame[label])
    return total


def central_differences(f: Any, frame: pd.DataFrame, eps: float = 1e-6) -> pd.DataFrame:
    """The gradient of ``f`` with respect to each float entry, by central differences."""
    grads = {}
    for label in float_columns(frame):
        values = frame[label].to_numpy()
        g = np.zeros_like(values)
        for i in range(len(values)):
            up, down = frame.copy(), frame.copy()
            up.iloc[i, frame.columns.get_loc(label)] += eps
            down.iloc[i, frame.columns.get_loc(label)] -= eps
            g[i] = (f(up) - f(down)) / (2 * eps)
        grads[label] = g
    return pd.DataFrame(grads, index=frame.index)


@settings(max_examples=40, deadline=None)
@given(frame=frames())
def test_the_gradient_of_a_dataframe_is_a_dataframe_of_its_float_columns(frame: pd.DataFrame) -> None:
    g = ng.grad(weighted)(frame)
    assert isinstance(g, pd.DataFrame)
    assert g.index.equals(frame.index) and list(g.columns) == float_columns(frame)
    expected = central_differences(weighted, frame)
    np.testing.assert_allclose(g.to_numpy(), expected.to_numpy(), rtol=1e-6, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(frame=frames(), name=st.sampled_from(["price", None, 3]))
def test_the_gradient_of_a_series_is_a_series_with_its_index_and_name(frame: pd.DataFrame, name: Any) -> None:
    series = pd.Series(frame[float_columns(frame)[0]].to_numpy(), index=frame.index, name=name)
    g = ng.grad(lambda s: np.sum(s**3))(series)
    assert isinstance(g, pd.Series) and g.index.equals(series.index) and g.name == name
    np.testing.assert_allclose(g.to_numpy(), 3 * series.to_numpy() ** 2)


def pipeline(f: Any) -> Any:
    """pandas' spelling, run alike on a DataFrame and on a Frame: a row filter, labels and
    positions, assign, a column subset, to_numpy."""
    first = f.columns[0]
    kept = f[f[first] > -1.0]
    extra = kept.assign(twice=lambda t: t[first] * 2.0, one=1.0)
    head = f.iloc[: max(len(f) - 1, 1)]
    labelled = f.loc[[f.index[0]]]
    return (
        np.sum(extra["twice"] * extra.one)
        + np.sum(head[[first]].to_numpy() ** 2)
        + np.sum(labelled[first])
        + len(extra) * 0.5
    )


@settings(max_examples=40, deadline=None)
@given(frame=frames())
def test_a_pipeline_on_a_frame_gives_pandas_values_and_right_gradients(frame: pd.DataFrame) -> None:
    frame = frame[[*float_columns(frame), *(c for c in frame.columns if c not in float_columns(frame))]]
    frame = frame[~frame.index.duplicated()]
    value, g = ng.value_and_grad(pipeline)(frame)
    assert value == pytest.approx(pipeline(frame), rel=1e-12, abs=1e-12)
    assert g.index.equals(frame.index) and list(g.columns) == float_columns(frame)
    np.testing.assert_allclose(g.to_numpy(), central_differences(pipeline, frame).to_numpy(), rtol=1e-5, atol=1e-6)


def test_a_frame_returned_from_a_transform_is_a_dataframe() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "n": [3, 4]}, index=["u", "v"])
    out, back = ng.vjp(lambda f: f.assign(y=f.x * f.n)[["x", "y"]], frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["x", "y"] and out.index.equals(frame.index)
    np.testing.assert_array_equal(out["y"].to_numpy(), [3.0, 8.0])
    (g,) = back(out)
    np.testing.assert_array_equal(g["x"].to_numpy(), [1.0 + 9.0, 2.0 + 32.0])


def test_a_frame_made_inside_a_function_comes_back_a_dataframe() -> None:
    def table(x: Any) -> Any:
        return ng.Frame({"x": x, "double": x * 2.0}, index=["a", "b", "c"])

    out = ng.jvp(table, (np.arange(3.0),), (np.ones(3),))[1]
    assert isinstance(out, pd.DataFrame) and list(out.index) == ["a", "b", "c"]
    np.testing.assert_array_equal(out["double"].to_numpy(), [2.0, 2.0, 2.0])


def test_strict_names_a_column_without_a_gradient_by_its_key_path() -> None:
    frame = pd.DataFrame({"used": [1.0], "unused": [2.0]})
    with pytest.raises(NoGradientError, match=r"args\[0\]\['unused'\]"):
        ng.grad(lambda f: np.sum(f.used), options=ng.GradOptions.STRICT)(frame)


def test_a_dataframe_method_a_frame_lacks_is_named() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "k": ["a", "b"]})
    with pytest.raises(NoGradientError, match=r"Frame\.pivot_table"):
        ng.grad(lambda f: f.pivot_table(values="x"))(frame)


def test_frame_refuses_bad_input() -> None:
    with pytest.raises(ShapeError, match="different lengths"):
        ng.Frame({"a": np.ones(2), "b": np.ones(3)})
    with pytest.raises(StructureError, match="no column 'z'"):
        ng.Frame({"a": np.ones(2)})["z"]
    with pytest.raises(StructureError, match="no rows labelled"):
        ng.Frame({"a": np.ones(2)}, index=["p", "q"]).loc[["r"]]


def test_importing_nodegrad_does_not_import_pandas() -> None:
    code = "import sys, nodegrad; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@st.composite
def grouped_frames(draw: st.DrawFn) -> pd.DataFrame:
    """A frame with a key column (strings with missing keys, ints, or a categorical) and two
    float columns of distinct values (no ties at max/min), some of them NaN."""
    rows = draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["str", "int", "category"]))
    codes = draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows))
    if kind == "str":
        keys: Any = [None if c == 2 and draw(st.booleans()) else f"k{c}" for c in codes]
    elif kind == "int":
        keys = np.array(codes) * 10
    else:
        keys = pd.Categorical([f"c{c}" for c in codes], categories=["c2", "c0", "c1", "c9"])
    data = {"key": keys}
    for label in ("x", "y"):
        # Tenths: distinct and far apart next to central differences' step (no near-ties at max/min).
        values = np.array(draw(st.lists(st.integers(-30, 30), min_size=rows, max_size=rows, unique=True))) / 10
        nans = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
        data[label] = np.where(nans, np.nan, values) if label == "y" else np.array(values)
    return pd.DataFrame(data, index=[f"r{k}" for k in range(rows)])


AGGREGATIONS = ["sum", "mean", "max", "min", "count"]


@settings(max_examples=60, deadline=None)
@given(frame=grouped_frames(), how=st.sampled_from(AGGREGATIONS))
def test_groupby_aggregations_give_pandas_values(frame: pd.DataFrame, how: str) -> None:
    expected = getattr(frame.groupby("key"), how)()
    if how == "count":  # integers: no gradient to take, so a Frame of the plain columns
        got = ng.Frame({c: frame[c].array for c in frame}, frame.index).groupby("key").count()
    else:
        got = ng.vjp(lambda f: getattr(f.groupby("key"), how)(), frame)[0]
    assert list(got.index) == list(expected.index)
    for label in ("x", "y"):  # to rounding: pandas sums a group with compensated summation
        np.testing.assert_allclose(
            np.asarray(got[label], dtype=float), expected[label].to_numpy(dtype=float), rtol=1e-12, atol=1e-12
        )


@settings(max_examples=60, deadline=None)
@given(frame=grouped_frames(), how=st.sampled_from(AGGREGATIONS[:4]))
def test_groupby_gradients_equal_central_differences(frame: pd.DataFrame, how: str) -> None:
    def loss(f: Any) -> Any:
        out = getattr(f.groupby("key"), how)()
        total = 0.0
        for k, label in enumerate(("x", "y")):
            column = out[label]
            weights = np.linspace(1.0, 2.0, len(out)) * (k + 1)
            total = total + np.sum(np.where(np.isnan(column), 0.0, column) * weights)
        return total

    g = ng.grad(loss)(frame)
    assert g.index.equals(frame.index) and list(g.columns) == ["x", "y"]
    np.testing.assert_allclose(g.to_numpy(), central_differences(loss, frame).to_numpy(), rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(frame=grouped_frames(), how=st.sampled_from(AGGREGATIONS[:4]))
def test_groupby_transform_gives_pandas_values_per_row(frame: pd.DataFrame, how: str) -> None:
    assume(frame["key"].notna().any())  # pandas' transform fails where no row has a key
    expected = frame.groupby("key")[["x", "y"]].transform(how)
    got = ng.vjp(lambda f: f.groupby("key")[["x", "y"]].transform(how), frame)[0]
    assert got.index.equals(frame.index)
    np.testing.assert_allclose(got.to_numpy(dtype=float), expected.to_numpy(dtype=float), rtol=1e-12, atol=1e-12)


def test_groupby_refuses_what_it_does_not_have() -> None:
    frame = pd.DataFrame({"key": ["a", "b"], "x": [1.0, 2.0]})
    with pytest.raises(NoGradientError, match=r"groupby\(\.\.\.\)\.median"):
        ng.grad(lambda f: f.groupby("key").median())(frame)
    with pytest.raises(ng.errors.ArgumentError, match="groupby: the key column 'x' is differentiated"):
        ng.grad(lambda f: f.groupby("x").sum())(frame)
    with pytest.raises(ng.errors.ArgumentError, match="merge: the key column 'x' is differentiated"):
        ng.grad(lambda f: f.merge(frame, on="x"))(frame)


@st.composite
def joined_frames(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A left and a right frame sharing a string key column, keys repeated and missing on
    either side, each with a float column of its own and one of the same name."""

    def side(prefix: str) -> pd.DataFrame:
        rows = draw(st.integers(1, 5))
        keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=rows, max_size=rows))
        values = draw(st.lists(FLOATS, min_size=rows, max_size=rows))
        shared = draw(st.lists(FLOATS, min_size=rows, max_size=rows))
        return pd.DataFrame({"key": keys, prefix: values, "v": shared}, index=[f"{prefix}{k}" for k in range(rows)])

    return side("left"), side("right")


@settings(max_examples=50, deadline=None)
@given(frames_=joined_frames(), how=st.sampled_from(["inner", "left"]))
def test_merge_gives_pandas_rows_and_gradients_to_both_sides(frames_: Any, how: str) -> None:
    left, right = frames_
    expected = left.merge(right, on="key", how=how)
    got = ng.vjp(lambda a, b: a.merge(b, on="key", how=how), left, right)[0]
    assert list(got.columns) == list(expected.columns) and len(got) == len(expected)
    for label in expected.columns:
        if label != "key":
            np.testing.assert_array_equal(got[label].to_numpy(dtype=float), expected[label].to_numpy(dtype=float))

    def loss(a: Any, b: Any) -> Any:
        out = a.merge(b, on="key", how=how)
        right_part = np.where(np.isnan(out["right"]), 0.0, out["right"] * out["v_y"])
        return np.sum(out["left"] * out["v_x"] * np.linspace(1.0, 2.0, len(out))) + np.sum(right_part)

    g_left, g_right = ng.grad(loss, argnums=(0, 1))(left, right)
    np.testing.assert_allclose(
        g_left.to_numpy(), central_differences(lambda a: loss(a, right), left).to_numpy(), atol=1e-6
    )
    np.testing.assert_allclose(
        g_right.to_numpy(), central_differences(lambda b: loss(left, b), right).to_numpy(), atol=1e-6
    )


@settings(max_examples=40, deadline=None)
@given(frame=frames(), ascending=st.booleans())
def test_sort_values_gives_pandas_order(frame: pd.DataFrame, ascending: bool) -> None:
    key = frame.columns[-1]
    expected = frame.sort_values(key, ascending=ascending, kind="stable")
    got = ng.vjp(lambda f: f.sort_values(key, ascending=ascending)[float_columns(frame)], frame)[0]
    assert got.index.equals(expected.index)
    np.testing.assert_array_equal(got.to_numpy(), expected[float_columns(frame)].to_numpy())


def test_optimisers_step_a_dataframe_by_its_float_columns_gradient() -> None:
    effects = pd.DataFrame({"store": ["a", "b"], "effect": [0.0, 1.0]}, index=["a", "b"])
    params = {"effects": effects, "scale": np.float64(0.5)}
    g = ng.grad(lambda p: np.sum(p["effects"].effect ** 2) * p["scale"])(params)
    assert list(g["effects"].columns) == ["effect"]
    stepped = ng.optim.sgd(params, g, 0.1)
    assert list(stepped["effects"]["store"]) == ["a", "b"]  # static columns carried over
    np.testing.assert_allclose(stepped["effects"]["effect"].to_numpy(), [0.0, 1.0 - 0.1 * 1.0])
    moved, state = ng.optim.adam(params, g, lr=0.1)
    moved, state = ng.optim.adam(moved, g, state, lr=0.1)
    np.testing.assert_allclose(moved["effects"]["effect"].to_numpy(), [0.0, 0.8], atol=1e-6)


def test_a_frame_reaching_an_inner_transform_through_a_closure_is_differentiated_at_both_levels() -> None:
    frame = pd.DataFrame({"price": [2.0, 3.0], "units": [1, 4]}, index=["a", "b"])

    def outer(f: Any) -> Any:
        # The inner gradient, with respect to w, closes over the outer Frame's column.
        inner = ng.grad(lambda w: np.sum(f.price**2 * f.units * w))(1.5)
        return inner * 2.0

    g = ng.grad(outer)(frame)
    np.testing.assert_allclose(g["price"].to_numpy(), 2.0 * 2.0 * frame["price"].to_numpy() * frame["units"])
    assert g.index.equals(frame.index)


def test_replay_of_a_table_pipeline_never_freezes_which_rows_go_where() -> None:
    """Groups, NaN entries and sorted orders depend on the values of columns, so a replay
    does not record them (the call runs eagerly, said once): the results follow every call."""

    def loss(f: Any) -> Any:
        means = f.groupby("key").mean()["x"]
        return np.sum(np.where(np.isnan(means), 0.0, means)) + np.sum(f.sort_values("x")["x"][:1])

    fast = ng.replay(ng.grad(loss))
    calls = [
        pd.DataFrame({"key": [1, 2, 1], "x": [1.0, np.nan, 3.0]}),
        pd.DataFrame({"key": [1, 2, 1], "x": [np.nan, 2.0, 3.0]}),
        pd.DataFrame({"key": [2, 2, 1], "x": [5.0, 2.0, -3.0]}),
    ]
    with pytest.warns(ng.errors.ReplayWarning, match="depends on the values of a column"):
        got = [fast(frame) for frame in calls]
    for frame, g in zip(calls, got, strict=True):
        np.testing.assert_array_equal(g.to_numpy(), ng.grad(loss)(frame).to_numpy())


def test_replay_records_a_groupby_once_and_follows_nan_entries_and_key_columns() -> None:
    """A group's NaN entries are a mask of numpy calls (recorded, recomputed each run); the
    key columns, strings and categoricals, are part of the signature (new keys, new trace)."""

    def loss(f: Any) -> Any:
        means = f.groupby("store")[["x"]].mean()["x"]
        counts = f.groupby("kind")[["x"]].count()["x"]
        return np.sum(np.where(np.isnan(means), 0.0, means) ** 2) + np.sum(counts * f["x"][:2].sum())

    fast = ng.replay(ng.grad(loss))
    kind = pd.Categorical(["b", "a", "b"], categories=["b", "a"])
    calls = [
        pd.DataFrame({"store": ["n", "s", "n"], "kind": kind, "x": [1.0, np.nan, 3.0]}),
        pd.DataFrame({"store": ["n", "s", "n"], "kind": kind, "x": [np.nan, 2.0, 3.0]}),
        pd.DataFrame({"store": ["s", "s", "n"], "kind": kind, "x": [5.0, 2.0, -3.0]}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [fast(frame) for frame in calls]
    assert len(fast.traces) == 2  # the third call's keys differ
    for frame, g in zip(calls, got, strict=True):
        np.testing.assert_array_equal(g.to_numpy(), ng.grad(loss)(frame).to_numpy())


# -- arithmetic of whole tables ----------------------------------------------------------------


def arithmetic(f: Any, scalar: float) -> Any:
    """Every operator of a table, with a number on either side and with a table."""
    g = f[float_columns_of(f)]
    # abs away from its kink
    h = (g * scalar - 1.0) / (g * g + 1.0) + scalar * g - (-g) + abs(g + 10.0) + (g + scalar) ** 2.0
    h = h - 2.0 / (h * h + 1.0) + 2.0 ** (g / 4.0) - (1.0 - g)
    return h


def float_columns_of(f: Any) -> list[Any]:
    return [c for c in f.columns if getattr(f[c].dtype, "kind", None) == "f"]


@settings(max_examples=40, deadline=None)
@given(frame=frames(), scalar=st.floats(-2.0, 2.0))
def test_table_arithmetic_gives_pandas_values_and_right_gradients(frame: pd.DataFrame, scalar: float) -> None:
    expected = arithmetic(frame, scalar)  # pandas' own
    both = lambda f: (ng.sum(arithmetic(f, scalar).to_numpy()), arithmetic(f, scalar))
    (_, table), _ = ng.value_and_grad(both, has_aux=True)(frame)
    pd.testing.assert_frame_equal(table, expected, rtol=1e-12)  # a Frame returned is a DataFrame again
    loss = lambda f: float(np.sum(np.sin(arithmetic(f, scalar).to_numpy())))
    g = ng.grad(lambda f: ng.sum(ng.sin(arithmetic(f, scalar).to_numpy())))(frame)
    assert g.index.equals(frame.index) and list(g.columns) == float_columns(frame)
    np.testing.assert_allclose(g.to_numpy(), central_differences(loss, frame).to_numpy(), rtol=1e-5, atol=1e-6)


def test_table_arithmetic_refuses_what_pandas_would_align_or_cannot_add() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0], "name": ["a", "b"]})

    def run(f: Any) -> Any:
        return ng.grad(lambda d: ng.sum(f(d).to_numpy()))(frame)

    with pytest.raises(ng.errors.DtypeError, match="Frame mul: the column 'name'"):
        run(lambda d: d * 2.0)
    with pytest.raises(StructureError, match="pandas reads an array as one value per column"):
        run(lambda d: d[["x", "y"]] * np.ones(3))


def test_vmap_over_a_table_gives_each_examples_gradient_and_refuses_to_stack_tables() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 4.0], "key": ["a", "b", "a"]})
    scales = np.array([1.0, 2.0, -0.5])

    def loss(f: Any, s: Any) -> Any:
        means = f.groupby("key")[["x"]].mean()["x"]
        return np.sum(np.sin(means * s)) + np.sum(f["x"] ** 2 * s)

    def columns(f: Any, s: Any) -> Any:
        g = ng.grad(loss)(f, s)
        return {label: g[label].to_numpy() for label in g.columns}

    per_example = ng.vmap(columns, in_axes=(None, 0))(frame, scales)
    looped = np.stack([ng.grad(loss)(frame, s)["x"].to_numpy() for s in scales])
    np.testing.assert_allclose(per_example["x"], looped, rtol=1e-14)
    with pytest.raises(ShapeError, match="a table cannot stack them"):
        ng.vmap(ng.grad(loss), in_axes=(None, 0))(frame, scales)


def test_second_order_through_a_table_and_matrices_of_tables_refused() -> None:
    frame = pd.DataFrame({"price": [2.0, 3.0, 5.0], "n": [1, 2, 3], "key": ["a", "b", "a"]})
    cube = lambda f: np.sum(f["price"] ** 3.0 * f["n"])
    # a direction given as the table itself (its int and string columns are static)
    np.testing.assert_allclose(ng.hvp(cube, frame, frame)["price"].to_numpy(), 6.0 * frame["price"] ** 2 * frame["n"])
    with pytest.raises(StructureError, match="structure mismatch"):  # an extra float column is not static
        ng.hvp(cube, frame, frame.assign(extra=1.0))
    ng.testing.check_grads(cube, frame, order=2)
    with pytest.raises(ng.errors.ArgumentError, match="is or holds a table"):
        ng.hessian(cube)(frame)
    with pytest.raises(ng.errors.ArgumentError, match="is or holds a table"):
        ng.jacobian(lambda f: f["price"] * 2.0)({"t": frame})


@pytest.mark.parametrize("select", [lambda t: t[[]], lambda t: t.drop(columns=list(t.columns))])
def test_a_frame_left_with_no_columns_keeps_the_labels_dtype_as_pandas(select: Any) -> None:
    df = pd.DataFrame({"f0": [0.25], "f1": [1.5]}, index=pd.Index([3], name="id"))
    want = select(df)
    for got in (ng.vjp(select, df)[0], ng.replay(lambda d: ng.vjp(select, d)[0])(df)):
        pd.testing.assert_frame_equal(got, want)
        assert got.columns.dtype == want.columns.dtype
