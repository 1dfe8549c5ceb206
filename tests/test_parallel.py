"""Data-parallel gradients over row-partitioned Dask arrays (nodegrad.parallel)."""

from __future__ import annotations

from typing import Any

import attrs
import dask.array as da
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad import parallel
from nodegrad.errors import ArgumentError, ShapeError, StructureError


@attrs.frozen
class Model:
    w: np.ndarray
    b: float
    name: str = ng.field(static=True, default="linear")


@attrs.frozen
class Columns:
    x: Any
    y: Any


def mean_loss(model: Model, batch: dict[str, Any]) -> Any:
    pred = np.tanh(batch["x"] @ model.w + model.b)
    return np.mean((pred - batch["y"]) ** 2)


def sum_loss(model: Model, batch: dict[str, Any]) -> Any:
    return np.sum(np.log1p(np.exp(batch["x"] @ model.w - batch["y"] * model.b)))


@st.composite
def row_blocks(draw: Any, max_rows: int = 30) -> tuple[int, ...]:
    """A split of some rows into blocks; empty blocks included now and then."""
    sizes = draw(st.lists(st.integers(0, 8), min_size=1, max_size=8).filter(lambda s: sum(s) > 0))
    return tuple(sizes)


@st.composite
def problems(draw: Any) -> tuple[Model, dict[str, np.ndarray], tuple[int, ...]]:
    blocks = draw(row_blocks())
    n, f = sum(blocks), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    model = Model(rng.standard_normal(f), float(rng.standard_normal()))
    data = {"x": rng.standard_normal((n, f)), "y": rng.standard_normal(n)}
    return model, data, blocks


def split(data: dict[str, np.ndarray], blocks: tuple[int, ...]) -> dict[str, Any]:
    return {k: da.from_array(v, chunks=(blocks, *v.shape[1:])) for k, v in data.items()}


def assert_same(got: tuple[Any, Any], want: tuple[Any, Any]) -> None:
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
    assert type(got[1]) is Model and got[1].name is None
    np.testing.assert_allclose(got[1].w, want[1].w, rtol=1e-11, atol=1e-13)
    assert isinstance(got[1].b, float)
    np.testing.assert_allclose(got[1].b, want[1].b, rtol=1e-11, atol=1e-13)


@given(problems())
def test_mean_over_blocks_equals_the_whole_batch(problem: Any) -> None:
    model, data, blocks = problem
    got = parallel.value_and_grad(mean_loss, scheduler="sync")(model, split(data, blocks))
    assert_same(got, ng.value_and_grad(mean_loss)(model, data))


@given(problems(), st.integers(2, 4))
def test_sum_over_blocks_equals_the_whole_batch(problem: Any, split_every: int) -> None:
    model, data, blocks = problem
    vg = parallel.value_and_grad(sum_loss, reduction="sum", split_every=split_every, scheduler="sync")
    assert_same(vg(model, split(data, blocks)), ng.value_and_grad(sum_loss)(model, data))


@given(problems())
def test_gradient_matches_central_differences_of_the_partitioned_value(problem: Any) -> None:
    model, data, blocks = problem
    vg = parallel.value_and_grad(mean_loss, scheduler="sync")
    chunked = split(data, blocks)
    _, g = vg(model, chunked)
    eps = 1e-6
    for i in range(model.w.size):
        step = np.zeros_like(model.w)
        step[i] = eps
        up = vg(attrs.evolve(model, w=model.w + step), chunked)[0]
        down = vg(attrs.evolve(model, w=model.w - step), chunked)[0]
        np.testing.assert_allclose(g.w[i], (up - down) / (2 * eps), rtol=1e-5, atol=1e-8)
    up = vg(attrs.evolve(model, b=model.b + eps), chunked)[0]
    down = vg(attrs.evolve(model, b=model.b - eps), chunked)[0]
    np.testing.assert_allclose(g.b, (up - down) / (2 * eps), rtol=1e-5, atol=1e-8)


@given(problems(), st.sampled_from(["mean", "sum"]))
def test_the_gradient_of_the_blocks_is_a_dask_array_split_alike(problem: Any, reduction: str) -> None:
    model, data, blocks = problem
    loss = mean_loss if reduction == "mean" else sum_loss
    vg = parallel.value_and_grad(loss, argnums=(0, 1), reduction=reduction, scheduler="sync")
    value, (g, g_data) = vg(model, split(data, blocks))
    want_value, (want, want_data) = ng.value_and_grad(loss, argnums=(0, 1))(model, data)
    assert_same((value, g), (want_value, want))
    assert list(g_data) == ["x", "y"]
    for key, column in g_data.items():
        assert isinstance(column, da.Array) and column.chunks[0] == blocks
        np.testing.assert_allclose(column.compute(scheduler="sync"), want_data[key], rtol=1e-11, atol=1e-13)


def test_extra_arguments_and_plain_leaves_get_added_gradients() -> None:
    rng = np.random.default_rng(3)
    x, y, shift = rng.standard_normal((12, 2)), rng.standard_normal(12), rng.standard_normal(2)

    def loss(params: dict[str, Any], batch: Any, scale: float) -> Any:
        data, offset, count = batch
        return np.mean(((data.x + offset) @ params["w"] * scale - data.y) ** 2) * count

    params = {"w": rng.standard_normal(2)}
    chunked = [Columns(da.from_array(x, chunks=(5, 2)), da.from_array(y, chunks=5)), shift, 3]
    value, (g_data, g_scale) = parallel.value_and_grad(loss, argnums=(1, 2), scheduler="sync")(params, chunked, 3.0)
    want_value, (want_data, want_scale) = ng.value_and_grad(loss, argnums=(1, 2))(
        params, [Columns(x, y), shift, 3], 3.0
    )
    np.testing.assert_allclose([value, g_scale], [want_value, want_scale], rtol=1e-12)
    assert type(g_data) is list and type(g_data[0]) is Columns and g_data[2] is None
    np.testing.assert_allclose(g_data[1], want_data[1], rtol=1e-11)  # a plain leaf: added over the blocks
    np.testing.assert_allclose(g_data[0].x.compute(), want_data[0].x, rtol=1e-11)
    np.testing.assert_allclose(g_data[0].y.compute(), want_data[0].y, rtol=1e-11)


def test_integer_blocks_have_no_gradient() -> None:
    data = {"x": da.from_array(np.arange(6.0), chunks=2), "n": da.arange(6, chunks=2)}
    value, (g, g_data) = parallel.value_and_grad(
        lambda w, b: np.sum(w * b["x"] * b["n"]), argnums=(0, 1), reduction="sum", scheduler="sync"
    )(2.0, data)
    assert (value, g) == (110.0, 55.0) and g_data["n"] is None
    np.testing.assert_array_equal(g_data["x"].compute(), 2.0 * np.arange(6))


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_tasks_run_on_threads_and_processes(scheduler: str) -> None:
    rng = np.random.default_rng(0)
    model = Model(rng.standard_normal(3), 0.5)
    data = {"x": rng.standard_normal((50, 3)), "y": rng.standard_normal(50)}
    got = parallel.value_and_grad(mean_loss, scheduler=scheduler)(model, split(data, (10, 20, 5, 15)))
    assert_same(got, ng.value_and_grad(mean_loss)(model, data))


def test_many_blocks_reduce_in_a_tree() -> None:
    rng = np.random.default_rng(1)
    model = Model(rng.standard_normal(2), -0.3)
    data = {"x": rng.standard_normal((97, 2)), "y": rng.standard_normal(97)}
    vg = parallel.value_and_grad(mean_loss, split_every=2, scheduler="sync")
    assert_same(vg(model, split(data, (1,) * 97)), ng.value_and_grad(mean_loss)(model, data))


def test_a_record_of_columns_plain_leaves_and_extra_arguments() -> None:
    # The dataset is a record; a plain array in it and an extra argument reach every block whole.
    rng = np.random.default_rng(2)
    x, y, shift = rng.standard_normal((12, 2)), rng.standard_normal(12), rng.standard_normal(2)

    def loss(params: dict[str, Any], batch: Any, scale: float) -> Any:
        data, offset = batch
        return np.mean(((data.x + offset) @ params["w"] * scale - data.y) ** 2)

    params = {"w": rng.standard_normal(2)}
    chunked = [Columns(da.from_array(x, chunks=(5, 1)), da.from_array(y, chunks=5)), shift]
    value, g = parallel.value_and_grad(loss, scheduler="sync")(params, chunked, 3.0)
    want_value, want = ng.value_and_grad(loss)(params, [Columns(x, y), shift], 3.0)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    assert list(g) == ["w"]
    np.testing.assert_allclose(g["w"], want["w"], rtol=1e-11)


def test_float32_stays_float32() -> None:
    x = np.linspace(0.1, 1.3, 10, dtype=np.float32)
    w = np.array([0.5], dtype=np.float32)
    value, g = parallel.value_and_grad(lambda w, x: np.mean(np.sin(x * w)), scheduler="sync")(
        w, da.from_array(x, chunks=3)
    )
    assert value.dtype == np.float32 and g.dtype == np.float32
    np.testing.assert_allclose(g, ng.grad(lambda w, x: np.mean(np.sin(x * w)))(w, x), rtol=1e-6)


def test_data_without_dask_arrays_is_one_block() -> None:
    x = np.arange(4.0)
    got = parallel.value_and_grad(lambda w, x: np.sum(w * x), scheduler="sync")(2.0, x)
    assert got == (12.0, 6.0)


def test_blocks_that_differ_between_columns_are_refused_naming_both() -> None:
    data = {"x": da.ones((6, 2), chunks=(3, 2)), "y": da.ones(6, chunks=2)}
    with pytest.raises(ShapeError, match=r"data\['y'\].*\(2, 2, 2\).*data\['x'\].*\(3, 3\)"):
        parallel.value_and_grad(mean_loss)(Model(np.ones(2), 0.0), data)


def test_a_0d_dask_leaf_is_refused() -> None:
    with pytest.raises(ShapeError, match="0-d Dask array"):
        parallel.value_and_grad(lambda w, d: w * d)(1.0, da.from_array(np.float64(2.0)))


def test_blocks_of_unknown_size_are_refused_with_the_fix() -> None:
    x = da.from_array(np.arange(10.0), chunks=3)
    masked = x[x > 4]  # Dask does not know how many rows each block keeps
    vg = parallel.value_and_grad(lambda w, batch: np.mean(w * batch["x"]), scheduler="sync")
    with pytest.raises(ShapeError, match=r"unknown sizes.*compute_chunk_sizes"):
        vg(1.0, {"x": masked})
    value, g = vg(1.0, {"x": masked.compute_chunk_sizes()})
    assert value == g == np.mean(np.arange(5.0, 10.0))


def test_no_rows_is_an_error() -> None:
    with pytest.raises(ShapeError, match="no rows"):
        parallel.value_and_grad(lambda w, x: np.sum(w * x))(1.0, da.ones(0, chunks=1))


def test_dask_parameters_are_refused() -> None:
    with pytest.raises(StructureError, match=r"params\['w'\] is a Dask array"):
        parallel.value_and_grad(lambda p, x: np.sum(p["w"] * x))({"w": da.ones(3)}, da.ones(3))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reduction": "max"}, "reduction must be one of"),
        ({"split_every": 1}, "split_every must be an int of at least 2"),
        ({"split_every": True}, "split_every must be an int"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        parallel.value_and_grad(mean_loss, **kwargs)


def test_a_non_callable_is_refused() -> None:
    with pytest.raises(ArgumentError, match="needs a callable"):
        parallel.value_and_grad("loss")  # type: ignore[arg-type]


def test_an_error_in_a_block_reaches_the_caller_as_it_is() -> None:
    data = {"x": da.ones((6, 2), chunks=(3, 2)), "y": da.ones(6, chunks=3)}
    with pytest.raises(ShapeError, match="matmul"):
        parallel.value_and_grad(mean_loss, scheduler="sync")(Model(np.ones(3), 0.0), data)


def test_the_docs_page_example_runs_and_equals_the_whole_batch() -> None:
    import re
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "parallel.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", page, re.S)
    names: dict[str, Any] = {}
    exec(compile(code, "docs/parallel.md", "exec"), names)
    value, g = names["value"], names["g"]
    want_value, want = ng.value_and_grad(names["loss"])(
        names["Linear"](np.zeros(8), 0.0), {"x": names["x"], "y": names["y"]}
    )
    assert type(g) is names["Linear"]
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(g.w, want.w, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(g.b, want.b, rtol=1e-10, atol=1e-15)
