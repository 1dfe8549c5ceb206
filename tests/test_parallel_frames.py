"""Data-parallel gradients over Dask DataFrames (nodegrad.parallel): each partition reaches
the loss as a pandas DataFrame, and the answers equal those on the whole table."""

from __future__ import annotations

import doctest
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad import parallel
from nodegrad.errors import ArgumentError, ShapeError, StructureError
from nodegrad.testing import check_grads

STORES = ("north", "south", "east")


def sales(rows: int, seed: int) -> pd.DataFrame:
    """A table of sales: a static key column (the store, and its code), float columns to
    differentiate, an int column that has no gradient, and an index that is not 0, 1, 2..."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, len(STORES), rows)
    return pd.DataFrame(
        {
            "store": np.array(STORES)[codes],
            "code": codes,
            "units": rng.uniform(0.5, 3.0, rows),
            "price": rng.standard_normal(rows),
        },
        index=pd.Index(10 + 3 * np.arange(rows), name="sale"),
    )


def params() -> dict[str, Any]:
    return {"stores": pd.DataFrame({"store": list(STORES), "effect": [0.3, -0.2, 0.1]}), "slope": 0.7}


def residuals(p: dict[str, Any], f: Any) -> tuple[Any, Any]:
    joined = f.merge(p["stores"], on="store")  # each row's store effect, looked up by its key
    return joined, joined.price - joined.effect - p["slope"] * joined.units


def sum_loss(p: dict[str, Any], f: Any) -> Any:
    return np.sum(residuals(p, f)[1] ** 2)


def mean_loss(p: dict[str, Any], f: Any) -> Any:
    return np.mean(np.tanh(residuals(p, f)[1]) ** 2)


def groupby_loss(p: dict[str, Any], f: Any) -> Any:
    # Each store's squared residuals summed, then the stores added: a sum over rows, so the
    # partitions' losses add up to the whole table's (a per-store mean would not).
    joined, r = residuals(p, f)
    per_store = joined.assign(sq=r**2).groupby("store")[["sq"]].sum()
    return np.sum(per_store["sq"]) / len(f)


def gather_loss(p: dict[str, Any], f: Any) -> Any:
    effect = ng.gather(p["effect"], f["code"])  # the lookup by integer codes
    return np.mean((f["price"] - effect - p["slope"] * f["units"]) ** 2)


def gather_params() -> dict[str, Any]:
    return {"effect": np.array([0.3, -0.2, 0.1]), "slope": 0.7}


LOSSES = [
    pytest.param(sum_loss, params, "sum", id="sum"),
    pytest.param(mean_loss, params, "mean", id="mean"),
    pytest.param(groupby_loss, params, "mean", id="groupby"),
    pytest.param(gather_loss, gather_params, "mean", id="gather"),
]


def assert_same_params(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for key, value in want.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(got[key], value, rtol=1e-10, atol=1e-13)
        else:
            assert type(got[key]) is type(value)
            np.testing.assert_allclose(got[key], value, rtol=1e-10, atol=1e-13)


def assert_same(got: tuple[Any, Any], want: tuple[Any, Any], table: Any, scheduler: Any) -> None:
    """The partitioned answer ``got`` equals the whole table's ``want``; the table's gradient
    is a Dask DataFrame split as ``table`` is."""
    (value, (g_params, g_table)), (want_value, (want_params, want_table)) = got, want
    np.testing.assert_allclose(value, want_value, rtol=1e-12, atol=1e-14)
    assert_same_params(g_params, want_params)
    assert isinstance(g_table, dd.DataFrame)
    assert g_table.npartitions == table.npartitions and g_table.divisions == table.divisions
    pd.testing.assert_frame_equal(g_table.compute(scheduler=scheduler), want_table, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize(("loss", "start", "reduction"), LOSSES)
def test_a_table_gives_what_the_whole_table_gives(loss: Callable[..., Any], start: Any, reduction: str) -> None:
    df = sales(40, seed=0)
    table = dd.from_pandas(df, npartitions=4)
    vg = parallel.value_and_grad(loss, argnums=(0, 1), reduction=reduction, scheduler="threads")
    want = ng.value_and_grad(loss, argnums=(0, 1))(start(), df)
    assert_same(vg(start(), table), want, table, "threads")


@pytest.mark.parametrize(("loss", "start", "reduction"), LOSSES)
def test_the_gradient_of_the_parameters_alone(loss: Callable[..., Any], start: Any, reduction: str) -> None:
    df = sales(30, seed=1)
    value, g = parallel.value_and_grad(loss, reduction=reduction, scheduler="threads")(
        start(), dd.from_pandas(df, npartitions=3)
    )
    want_value, want = ng.value_and_grad(loss)(start(), df)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    assert_same_params(g, want)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One cluster of two worker processes for every test here that needs one."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as found,
    ):
        yield found


@pytest.mark.parametrize(("loss", "start", "reduction"), LOSSES)
def test_on_a_cluster_of_processes(client: Any, loss: Callable[..., Any], start: Any, reduction: str) -> None:
    df = sales(50, seed=2)
    table = dd.from_pandas(df, npartitions=5)
    vg = parallel.value_and_grad(loss, argnums=(0, 1), reduction=reduction, scheduler=client.get)
    want = ng.value_and_grad(loss, argnums=(0, 1))(start(), df)
    assert_same(vg(start(), table), want, table, client.get)


def test_the_parameters_alone_on_a_cluster(client: Any) -> None:
    df = sales(30, seed=3)
    value, g = parallel.value_and_grad(groupby_loss, scheduler=client.get)(params(), dd.from_pandas(df, npartitions=3))
    want_value, want = ng.value_and_grad(groupby_loss)(params(), df)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    assert_same_params(g, want)


@settings(max_examples=8)
@given(rows=st.integers(1, 25), npartitions=st.integers(1, 6), seed=st.integers(0, 2**16), mean=st.booleans())
def test_any_split_of_the_rows(rows: int, npartitions: int, seed: int, mean: bool) -> None:
    df = sales(rows, seed)
    table = dd.from_pandas(df, npartitions=npartitions, sort=False)  # partitions of any lengths
    loss, reduction = (mean_loss, "mean") if mean else (sum_loss, "sum")
    got = parallel.value_and_grad(loss, argnums=(0, 1), reduction=reduction, scheduler="sync")(params(), table)
    assert_same(got, ng.value_and_grad(loss, argnums=(0, 1))(params(), df), table, "sync")


def partitioned(loss: Callable[..., Any], df: pd.DataFrame, npartitions: int) -> Any:
    """``loss`` of the parameters and of ``df``'s float columns, computed partition by
    partition, as one function whose gradient is nodegrad.parallel's: what check_grads
    compares with central differences of the partitioned value."""
    vg = parallel.value_and_grad(loss, argnums=(0, 1), scheduler="sync")

    def table(columns: dict[str, np.ndarray]) -> Any:
        return dd.from_pandas(df.assign(**columns), npartitions=npartitions)

    @ng.custom_vjp
    def value(p: Any, columns: dict[str, np.ndarray]) -> Any:
        return vg(p, table(columns))[0]

    def forward(p: Any, columns: dict[str, np.ndarray]) -> tuple[Any, Any]:
        found, (g_params, g_table) = vg(p, table(columns))
        g_table = g_table.compute(scheduler="sync")
        return found, (g_params, {label: g_table[label].to_numpy() for label in columns})

    value.defvjp(forward, lambda grads, g: tuple(ng.tree.scale(grad, float(g)) for grad in grads))
    return value


def test_the_gradient_matches_central_differences() -> None:
    df = sales(12, seed=4)
    columns = {"units": df["units"].to_numpy(), "price": df["price"].to_numpy()}
    check_grads(partitioned(groupby_loss, df, 3), params(), columns, modes=("rev",))


def test_unknown_divisions_and_partition_lengths() -> None:
    df = sales(40, seed=5)
    table = dd.from_pandas(df, npartitions=4).clear_divisions()
    kept = table[table.units > 1.5]  # rows per partition unknown until computed
    vg = parallel.value_and_grad(mean_loss, argnums=(0, 1), scheduler="threads")
    for part in (table, kept):
        assert_same(
            vg(params(), part), ng.value_and_grad(mean_loss, argnums=(0, 1))(params(), part.compute()), part, "sync"
        )
    assert not kept.known_divisions


def test_partitions_without_rows_are_skipped_and_get_empty_gradients() -> None:
    df = sales(20, seed=6)
    table = dd.from_pandas(df, npartitions=4)
    kept = table.map_partitions(lambda part: part[part.index < 40])  # later partitions keep no rows
    assert 0 in kept.map_partitions(len).compute().tolist()
    got = parallel.value_and_grad(mean_loss, argnums=(0, 1), scheduler="sync")(params(), kept)
    assert_same(got, ng.value_and_grad(mean_loss, argnums=(0, 1))(params(), kept.compute()), kept, "sync")


def weighted_loss(p: dict[str, Any], batch: dict[str, Any]) -> Any:
    return np.sum(batch["weight"] * residuals(p, batch["table"])[1] ** 2)


def test_a_table_and_arrays_split_alike() -> None:
    df = sales(30, seed=7)
    table = dd.from_pandas(df, npartitions=3)
    lengths = tuple(table.map_partitions(len).compute())
    weight = np.linspace(0.5, 1.5, 30)
    data = {"table": table, "weight": da.from_array(weight, chunks=lengths), "days": da.arange(30, chunks=lengths)}
    vg = parallel.value_and_grad(weighted_loss, argnums=(0, 1), reduction="sum", scheduler="threads")
    value, (g_params, g_data) = vg(params(), data)
    whole = {"table": df, "weight": weight, "days": np.arange(30)}
    want_value, (want_params, want_data) = ng.value_and_grad(weighted_loss, argnums=(0, 1))(params(), whole)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    assert_same_params(g_params, want_params)
    assert isinstance(g_data["weight"], da.Array) and g_data["weight"].chunks == (lengths,)
    np.testing.assert_allclose(g_data["weight"].compute(), want_data["weight"], rtol=1e-10)
    pd.testing.assert_frame_equal(g_data["table"].compute(), want_data["table"], rtol=1e-10)
    assert g_data["days"] is None is want_data["days"]


def test_a_table_and_arrays_split_otherwise_are_refused() -> None:
    table = dd.from_pandas(sales(30, seed=8), npartitions=3)
    vg = parallel.value_and_grad(weighted_loss, argnums=(0, 1), reduction="sum", scheduler="sync")
    with pytest.raises(ShapeError, match=r"data\['weight'\] is split into 2 row blocks, but data\['table'\] into 3"):
        vg(params(), {"table": table, "weight": da.ones(30, chunks=15)})
    # As many blocks, of other lengths: the tasks find out, block by block.
    with pytest.raises(
        ShapeError, match=r"block \d of data\['weight'\] has \d+ rows, but that of data\['table'\] has 10"
    ):
        vg(params(), {"table": table, "weight": da.ones(30, chunks=(12, 12, 6))})


def test_a_series_and_a_table_without_floats() -> None:
    df = sales(20, seed=9)
    table = dd.from_pandas(df, npartitions=2)

    def loss(w: float, batch: dict[str, Any]) -> Any:
        return np.sum(w * batch["price"] ** 2 * np.asarray(batch["keys"]["code"]))

    data = {"price": table["price"], "keys": table[["store", "code"]]}
    value, (g_w, g_data) = parallel.value_and_grad(loss, argnums=(0, 1), reduction="sum", scheduler="sync")(2.0, data)
    whole = {"price": df["price"], "keys": df[["store", "code"]]}
    want_value, (want_w, want_data) = ng.value_and_grad(loss, argnums=(0, 1))(2.0, whole)
    np.testing.assert_allclose([value, g_w], [want_value, want_w], rtol=1e-12)
    assert isinstance(g_data["price"], dd.Series)
    pd.testing.assert_series_equal(g_data["price"].compute(), want_data["price"])
    assert g_data["keys"] is None is want_data["keys"]  # no float column: no gradient


def test_tables_as_parameters_are_refused() -> None:
    table = dd.from_pandas(sales(6, seed=10), npartitions=2)
    with pytest.raises(StructureError, match=r"params\['stores'\] is a Dask DataFrame"):
        parallel.value_and_grad(sum_loss)({"stores": table, "slope": 1.0}, table)


@pytest.mark.parametrize(
    ("argnums", "message"),
    [((), "non-empty tuple"), ((0, 0), "repeat"), (-1, "non-negative"), ((True,), "non-negative"), ("0", "an int")],
)
def test_bad_argnums_are_refused(argnums: Any, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        parallel.value_and_grad(sum_loss, argnums=argnums)


def test_argnums_beyond_the_arguments_are_refused() -> None:
    table = dd.from_pandas(sales(6, seed=11), npartitions=2)
    with pytest.raises(ArgumentError, match=r"argnums \(0, 2\), but the function is called with 2 arguments"):
        parallel.value_and_grad(sum_loss, argnums=(0, 2))(params(), table)


def test_the_docs_page_examples_run_as_doctests() -> None:
    page = Path(__file__).parent.parent / "docs" / "parallel.md"
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(page), module_relative=False, optionflags=flags, report=False)
    assert result.failed == 0
    assert result.attempted >= 8
