"""Row-sparse gradients (``grad(..., sparse_rows=True)``) and :class:`ng.RowSparse`.

A RowSparse written out equals the dense gradient (bit for bit where one gather reads the
leaf, as the scatter-add sums in the same order), the dense gradient equals central
differences, and the optimisers' lazy steps equal the dense ones where the maths says they
must: sgd always, adam on its first step and whenever every row with a moment is touched.
"""

from __future__ import annotations

import warnings
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError


def _table(rows: int, features: tuple[int, ...], seed: int = 0, dtype: type = np.float64) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, *features)).astype(dtype)


# The ways of reading rows, each a function of (table, rows) with rows an integer array.
READS = {
    "index": lambda t, r: t[r],
    "negative index": lambda t, r: t[r - len(t)],
    "take": lambda t, r: np.take(t, r, axis=0),
    "gather": lambda t, r: ng.gather(t, r),
    "index with trailing colon": lambda t, r: t[r, ...] if t.ndim == 1 else t[r, :],
    "two-dimensional index": lambda t, r: t[np.stack([r, r[::-1]])],
    "int": lambda t, r: t[int(r[0])],
    "slice": lambda t, r: t[int(r.min()) : int(r.max()) + 1],
    "mask": lambda t, r: t[np.isin(np.arange(len(t)), r)],
}


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 12),
    features=st.sampled_from([(), (3,), (2, 2)]),
    read=st.sampled_from(sorted(READS)),
    picks=st.lists(st.integers(0, 11), min_size=1, max_size=8),
)
def test_a_row_sparse_gradient_written_out_is_the_dense_gradient(
    rows: int, features: tuple[int, ...], read: str, picks: list[int]
) -> None:
    table = _table(rows, features)
    ids = np.array(picks) % rows  # repeats included: their rows' cotangents add up

    def loss(t: np.ndarray) -> np.ndarray:
        return ng.sum(ng.tanh(READS[read](t, ids)) * 1.5)

    sparse = ng.grad(loss, sparse_rows=True)(table)
    dense = ng.grad(loss)(table)
    assert type(sparse) is ng.RowSparse
    assert sparse.shape == table.shape and sparse.dtype == table.dtype
    assert np.all(np.diff(sparse.indices) > 0)
    np.testing.assert_array_equal(np.asarray(sparse), dense)  # one gather: the same sums in the same order


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(2, 9), picks=st.lists(st.integers(0, 8), min_size=1, max_size=6), seed=st.integers(0, 99))
def test_several_gathers_of_one_leaf_add_up_and_match_central_differences(
    rows: int, picks: list[int], seed: int
) -> None:
    table = _table(rows, (2,), seed)
    ids = np.array(picks) % rows

    def loss(t: np.ndarray) -> np.ndarray:
        return ng.sum(ng.sin(t[ids]) * ng.gather(t, ids[::-1])) + ng.sum(t[1:] ** 2.0)

    sparse = np.asarray(ng.grad(loss, sparse_rows=True)(table))
    np.testing.assert_allclose(sparse, ng.grad(loss)(table), rtol=1e-13, atol=1e-15)
    # float64 central differences, entry by entry
    numeric = np.zeros_like(table)
    for at in np.ndindex(table.shape):
        step = np.zeros_like(table)
        step[at] = 1e-6
        numeric[at] = (float(loss(table + step)) - float(loss(table - step))) / 2e-6
    np.testing.assert_allclose(sparse, numeric, rtol=1e-6, atol=1e-7)


def test_a_leaf_with_another_use_stays_dense_and_other_leaves_are_untouched() -> None:
    params = {"emb": _table(20, (4,)), "other": _table(20, (4,), 1), "w": np.ones(4), "name": "model"}
    ids = np.array([3, 5, 3])

    def loss(p: dict) -> np.ndarray:
        return ng.sum(p["emb"][ids] @ p["w"]) + ng.sum(p["other"][ids] * 2.0) + ng.sum(p["other"] * 0.5)

    g = ng.grad(loss, sparse_rows=True)(params)
    assert type(g["emb"]) is ng.RowSparse and g["emb"].indices.tolist() == [3, 5]
    assert type(g["other"]) is np.ndarray and type(g["w"]) is np.ndarray and g["name"] is None
    dense = ng.grad(loss)(params)
    for key in ("emb", "other", "w"):
        np.testing.assert_array_equal(np.asarray(g[key]), dense[key])


# -- random programs: the row-sparse sums are the dense sweep's, bit for bit -----------------

# A use of the table in a random program: (table, rows drawn with repeats) -> an array.
PROGRAM_READS = [
    lambda t, r: t[r],
    lambda t, r: np.take(t, r, axis=0),
    lambda t, r: ng.gather(t, r - len(t)),
    lambda t, r: t[np.stack([r, r[::-1]])],
    lambda t, r: t[int(r[0])],
    lambda t, r: t[int(r.min()) : int(r.max()) + 1],
    lambda t, r: t[np.isin(np.arange(len(t)), r)],
]
FINISHES = [
    lambda y, w: ng.sum(ng.sin(y) * w),
    lambda y, w: ng.sum(ng.tanh(y * w) * y),  # the gathered rows used twice
    lambda y, w: ng.sum(y**2.0) * 0.3,
    lambda y, w: ng.sum(ng.exp(y * 0.1)) + ng.sum(y * w),
]


def _random_program(rng: np.random.Generator) -> tuple[Any, tuple[np.ndarray, np.ndarray]]:
    """A loss of two tables: several gathers of the first with repeated ids drawn from a few
    rows (so gathers share rows), gathers of the second, and sometimes a dense use of one."""
    dtype = (np.float32, np.float64)[int(rng.integers(2))]
    rows = int(rng.integers(2, 9))
    features = [(), (2,), (3, 2)][int(rng.integers(3))]
    tables = tuple(rng.normal(size=(rows, *features)).astype(dtype) for _ in range(2))
    pool = rng.choice(rows, size=min(rows, 3), replace=False)  # rows the gathers share
    uses = []
    for _ in range(int(rng.integers(2, 7))):
        ids = rng.choice(pool, size=int(rng.integers(1, 7)))
        read, finish = PROGRAM_READS[int(rng.integers(len(PROGRAM_READS)))], FINISHES[int(rng.integers(len(FINISHES)))]
        which = int(rng.random() < 0.3)
        w = rng.normal(size=features).astype(dtype)
        uses.append((which, read, ids, finish, w))
    dense_use = int(rng.integers(3))  # 2: none; else that table is also used whole

    def loss(a: np.ndarray, b: np.ndarray) -> Any:
        ts = (a, b)
        total = ng.sum(ts[dense_use] * 0.5) if dense_use < 2 else 0.0
        for which, read, ids, finish, w in uses:
            total = total + finish(read(ts[which], ids), w)
        return total

    return loss, tables


PROGRAMS = 500


def test_random_programs_get_the_dense_gradient_bit_for_bit() -> None:
    rng = np.random.default_rng(20261202)
    for number in range(PROGRAMS):
        loss, tables = _random_program(rng)
        sparse = ng.grad(loss, argnums=(0, 1), sparse_rows=True)(*tables)
        dense = ng.grad(loss, argnums=(0, 1))(*tables)
        for s, d, t in zip(sparse, dense, tables, strict=True):
            assert np.asarray(s).dtype == d.dtype == t.dtype
            assert np.array_equal(np.asarray(s), d), f"program {number}: {np.max(np.abs(np.asarray(s) - d))}"


def test_mixed_dtype_parts_are_added_as_the_sweep_adds_them() -> None:
    # Each gather's cotangent in its own dtype: the sum widens where the sweep's does.
    from nodegrad.engine.rows import RowParts, coalesced

    rng = np.random.default_rng(3)
    for _ in range(200):
        parts = []
        for dtype in rng.choice([np.float32, np.float64], size=int(rng.integers(2, 5))):
            rows = rng.integers(0, 4, size=int(rng.integers(1, 6)))
            parts.append((rows, rng.normal(size=(len(rows), 2)).astype(dtype)))
        dense: Any = None
        for rows, values in parts:  # the dense sweep: each part scatter-added, then summed in order
            scattered = np.zeros((4, 2), values.dtype)
            np.add.at(scattered, rows, values)
            dense = scattered if dense is None else dense + scattered
        got = coalesced(RowParts(parts), np.zeros((4, 2)))
        assert np.array_equal(np.asarray(got), dense.astype(np.float64))


@attrs.frozen
class Model:
    table: np.ndarray
    scale: float


def test_records_value_and_grad_argnums_and_aux() -> None:
    model, ids = Model(_table(10, (3,)), 2.0), np.array([9, 0])

    def loss(m: Model, bias: np.ndarray) -> tuple:
        out = ng.sum(m.table[ids] * m.scale + bias)
        return out, "aux"

    (value, aux), (gm, gb) = ng.value_and_grad(loss, argnums=(0, 1), has_aux=True, sparse_rows=True)(model, np.ones(3))
    assert aux == "aux" and float(value) == pytest.approx(float(loss(model, np.ones(3))[0]))
    assert type(gm) is Model and type(gm.table) is ng.RowSparse and gm.table.indices.tolist() == [0, 9]
    np.testing.assert_array_equal(gm.table.values, np.full((2, 3), 2.0))
    assert gm.scale == pytest.approx(float(np.sum(model.table[ids])))
    np.testing.assert_array_equal(gb, np.full(3, 2.0))  # a bias broadcast over rows is not a row gather


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_the_leaf_dtype_is_kept(dtype: type) -> None:
    table = (_table(6, (2,)) + (1j if dtype is np.complex128 else 0) * _table(6, (2,), 1)).astype(dtype)
    ids = np.array([1, 4, 1])
    loss = lambda t: ng.sum(ng.abs(t[ids]) ** 2.0)
    sparse = ng.grad(loss, sparse_rows=True)(table)
    assert sparse.dtype == dtype
    np.testing.assert_allclose(np.asarray(sparse), ng.grad(loss)(table), rtol=1e-6)


def test_a_table_read_through_a_merge_gets_rows_and_a_data_frame_column_stays_dense() -> None:
    pd = pytest.importorskip("pandas")
    stores = {"store": np.array([10, 20, 30, 40]), "effect": np.array([0.5, -1.0, 2.0, 3.0])}
    sales = pd.DataFrame({"store": [20, 10, 20, 50], "units": [1.0, 2.0, 3.0, 4.0]})

    def loss(stores: dict, sales: object) -> np.ndarray:
        merged = ng.Frame(sales).merge(ng.Frame(stores), on="store", how="left")
        effect = merged["effect"]
        return ng.sum(ng.where(np.isnan(effect), 0.0, effect * merged["units"]))

    g = ng.grad(loss, sparse_rows=True)(stores, sales)
    assert type(g["effect"]) is ng.RowSparse and g["effect"].indices.tolist() == [0, 1]
    np.testing.assert_array_equal(np.asarray(g["effect"]), [2.0, 4.0, 0.0, 0.0])
    frame_grad = ng.grad(loss, sparse_rows=True)(pd.DataFrame(stores), sales)
    assert list(frame_grad.columns) == ["effect"]
    np.testing.assert_array_equal(frame_grad["effect"].to_numpy(), [2.0, 4.0, 0.0, 0.0])


def test_closures_checkpoints_and_checking_modes() -> None:
    table, ids = _table(8, (2,)), np.array([2, 2, 7])
    closed = _table(8, (2,), 3)
    # a closed-over table is not differentiated; the argument's rows still are
    g = ng.grad(lambda t: ng.sum(t[ids] * closed[ids]), sparse_rows=True)(table)
    assert type(g) is ng.RowSparse
    np.testing.assert_array_equal(np.asarray(g), ng.grad(lambda t: ng.sum(t[ids] * closed[ids]))(table))
    # read inside a checkpoint (recomputed in the sweep), by closure or as its argument
    want = ng.grad(lambda t: ng.sum(t[ids] ** 2.0))(table)
    by_closure = ng.grad(lambda t: ng.sum(ng.checkpoint(lambda: t[ids] ** 2.0)()), sparse_rows=True)(table)
    np.testing.assert_array_equal(np.asarray(by_closure), want)
    as_argument = ng.grad(lambda t: ng.sum(ng.checkpoint(lambda u: u[ids] ** 2.0)(t)), sparse_rows=True)(table)
    np.testing.assert_array_equal(np.asarray(as_argument), want)
    checking = ng.grad(lambda t: ng.sum(t[ids] ** 2.0), sparse_rows=True, check_finite=True)(table)
    np.testing.assert_array_equal(np.asarray(checking), want)
    with ng.debug_nans():
        assert type(ng.grad(lambda t: ng.sum(t[ids] ** 2.0), sparse_rows=True)(table)) is ng.RowSparse


def test_refusals() -> None:
    table, ids = _table(8, (2,)), np.array([1, 2])
    loss = lambda t: ng.sum(ng.tanh(t[ids]))
    with pytest.raises(ArgumentError, match="out= buffers"):
        ng.value_and_grad(loss, sparse_rows=True, out=np.zeros((8, 2)))
    with pytest.raises(ArgumentError, match="sparse_rows"):
        ng.grad(loss, sparse_rows="yes")
    with pytest.raises(ArgumentError, match="inside another transform"):
        ng.grad(lambda t: ng.sum(ng.grad(loss, sparse_rows=True)(t).values))(table)
    with pytest.raises(ArgumentError, match="inside another transform"):
        ng.vmap(ng.grad(lambda t, i: ng.sum(t[i]), sparse_rows=True), in_axes=(None, 0))(table, np.array([[1], [2]]))
    with pytest.raises(NoGradientError, match="no gradient path"):
        ng.grad(lambda t, u: ng.sum(t[ids]), argnums=(0, 1), sparse_rows=True, options=ng.GradOptions.STRICT)(
            table, table
        )


def test_replay_runs_a_sparse_gradient_eagerly_with_one_warning_and_the_same_answer() -> None:
    table = _table(8, (2,))
    grad = ng.grad(lambda t, i: ng.sum(ng.tanh(t[i])), sparse_rows=True)
    replayed = ng.replay(grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = replayed(table, np.array([1, 1, 3])), replayed(table, np.array([5]))
    assert [type(w.message).__name__ for w in caught] == ["ReplayWarning"]
    for got, ids in ((first, [1, 1, 3]), (second, [5])):
        want = grad(table, np.array(ids))
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.values, want.values)


# -- the RowSparse value ---------------------------------------------------------------------


def test_row_sparse_arithmetic_and_checks() -> None:
    a = ng.RowSparse(np.array([1, 3]), np.array([[1.0, 2.0], [3.0, 4.0]]), (5, 2))
    b = ng.RowSparse(np.array([0, 3]), np.array([[1.0, 1.0], [1.0, 1.0]]), (5, 2))
    dense_a, dense_b = np.asarray(a), np.asarray(b)
    assert repr(a) == "RowSparse(2 of 5 rows, shape (5, 2), dtype float64)"
    assert a.nbytes == a.indices.nbytes + a.values.nbytes and a.ndim == 2
    total = a + b
    assert type(total) is ng.RowSparse and total.indices.tolist() == [0, 1, 3]
    np.testing.assert_array_equal(np.asarray(total), dense_a + dense_b)
    np.testing.assert_array_equal(a + dense_b, dense_a + dense_b)
    np.testing.assert_array_equal(dense_b + a, dense_a + dense_b)
    np.testing.assert_array_equal(np.asarray(a - b), dense_a - dense_b)
    np.testing.assert_array_equal(np.asarray(2.0 * a), 2.0 * dense_a)
    np.testing.assert_array_equal(np.asarray(a / 2.0), dense_a / 2.0)
    np.testing.assert_array_equal(np.asarray(-a), -dense_a)
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float32), dense_a.astype(np.float32))
    with pytest.raises(ShapeError):
        ng.RowSparse(np.array([0]), np.zeros((1, 3)), (5, 2))
    with pytest.raises(ArgumentError, match="unique, increasing"):
        ng.RowSparse(np.array([3, 1]), np.zeros((2, 2)), (5, 2))
    with pytest.raises(ArgumentError, match="unique, increasing"):
        ng.RowSparse(np.array([5]), np.zeros((1, 2)), (5, 2))
    with pytest.raises(ShapeError):
        _ = a + ng.RowSparse(np.array([0]), np.zeros((1, 2)), (6, 2))
    with pytest.raises(ShapeError):
        _ = a + np.ones((5, 1))


def test_tree_utilities_keep_rows_sparse_and_agree_with_dense() -> None:
    table, ids = _table(30, (3,)), np.array([4, 9, 4, 29])
    params = {"emb": table, "w": np.ones(3)}
    loss = lambda p: ng.sum(ng.tanh(p["emb"][ids] @ p["w"]))
    sparse, dense = ng.grad(loss, sparse_rows=True)(params), ng.grad(loss)(params)
    assert ng.tree.global_norm(sparse) == pytest.approx(ng.tree.global_norm(dense), rel=1e-15)
    assert ng.tree.vdot(sparse, dense) == pytest.approx(ng.tree.vdot(dense, dense), rel=1e-15)
    assert ng.tree.vdot(sparse, sparse) == pytest.approx(ng.tree.vdot(dense, dense), rel=1e-15)
    scaled = ng.tree.scale(sparse, 0.5)
    assert type(scaled["emb"]) is ng.RowSparse
    np.testing.assert_array_equal(np.asarray(scaled["emb"]), dense["emb"] * 0.5)
    doubled = ng.tree.add(sparse, sparse)
    assert type(doubled["emb"]) is ng.RowSparse
    np.testing.assert_array_equal(np.asarray(doubled["emb"]), dense["emb"] * 2.0)
    zeros = ng.tree.zeros_like(sparse)
    assert type(zeros["emb"]) is ng.RowSparse and len(zeros["emb"].indices) == 0
    clipped, norm = ng.tree.clip_by_global_norm(sparse, 0.01)
    assert norm == pytest.approx(ng.tree.global_norm(dense))
    assert ng.tree.global_norm(clipped) == pytest.approx(0.01)
    flat, _ = ng.tree.ravel(sparse)
    np.testing.assert_array_equal(flat, ng.tree.ravel(dense)[0])


# -- optimisers: lazy steps ------------------------------------------------------------------


def _copy(params: dict) -> dict:
    return {k: v.copy() for k, v in params.items()}


def test_sgd_steps_only_the_rows_in_place_and_equals_the_dense_step() -> None:
    params = {"emb": _table(40, (3,)), "w": np.ones(3)}
    ids = np.array([0, 7, 7, 39])
    loss = lambda p: ng.sum(ng.tanh(p["emb"][ids] @ p["w"]))
    sparse_params, dense_params = _copy(params), _copy(params)
    for _ in range(3):
        table = sparse_params["emb"]
        sparse_params = ng.optim.sgd(sparse_params, ng.grad(loss, sparse_rows=True)(sparse_params), lr=0.1)
        assert sparse_params["emb"] is table  # in place: the other rows are not even read
        dense_params = ng.optim.sgd(dense_params, ng.grad(loss)(dense_params), lr=0.1)
        for key in params:
            np.testing.assert_array_equal(sparse_params[key], dense_params[key])


def test_lazy_adam_equals_dense_adam_where_it_must_and_leaves_untouched_rows_alone() -> None:
    params = {"emb": _table(6, (2,)), "w": np.ones(2)}
    loss = lambda p, ids: ng.sum(ng.tanh(p["emb"][ids] @ p["w"]))
    every = np.array([5, 0, 1, 2, 3, 4])
    sparse_p, dense_p, sparse_s, dense_s = _copy(params), _copy(params), None, None
    for ids in (np.array([1, 4]), every, every):  # first step: equal; then every row is touched each step
        sparse_p, sparse_s = ng.optim.adam(sparse_p, ng.grad(loss, sparse_rows=True)(sparse_p, ids), sparse_s, lr=0.1)
        dense_p, dense_s = ng.optim.adam(dense_p, ng.grad(loss)(dense_p, ids), dense_s, lr=0.1)
    # After a first step on rows 1 and 4, the second step touched every row: equal throughout.
    for key in params:
        np.testing.assert_allclose(sparse_p[key], dense_p[key], rtol=1e-15)
    # Now a step touching row 2 only: dense Adam moves rows with momentum too; lazy Adam does not.
    before = sparse_p["emb"].copy()
    sparse_p, sparse_s = ng.optim.adam(
        sparse_p, ng.grad(loss, sparse_rows=True)(sparse_p, np.array([2])), sparse_s, lr=0.1
    )
    dense_p, dense_s = ng.optim.adam(dense_p, ng.grad(loss)(dense_p, np.array([2])), dense_s, lr=0.1)
    untouched = [0, 1, 3, 4, 5]
    np.testing.assert_array_equal(sparse_p["emb"][untouched], before[untouched])
    assert not np.allclose(dense_p["emb"][untouched], before[untouched])
    np.testing.assert_allclose(sparse_p["emb"][2], dense_p["emb"][2], rtol=1e-15)
    assert type(sparse_s.mu["emb"]) is np.ndarray and sparse_s.mu["emb"].shape == (6, 2)


def test_adam_first_step_equals_the_dense_step_for_float32() -> None:
    table = _table(10, (2,), dtype=np.float32)
    ids = np.array([3, 3, 8])
    loss = lambda t: ng.sum(ng.tanh(t[ids]))
    sparse, _ = ng.optim.adam(table.copy(), ng.grad(loss, sparse_rows=True)(table), lr=0.01)
    dense, _ = ng.optim.adam(table.copy(), ng.grad(loss)(table), lr=0.01)
    assert sparse.dtype == np.float32
    np.testing.assert_array_equal(sparse, dense)


def _tied_params(rng: np.random.Generator, dtype: type) -> tuple[dict, dict]:
    """Two parameter dicts alike, each holding one table twice (tied weights) and a view of
    its first rows: the lazy steps must not move one through another."""

    def made() -> dict:
        table = np.random.default_rng(seed).normal(size=(7, 3)).astype(dtype)
        return {"emb": table, "out": table, "head": table[:3], "w": np.ones(3, dtype)}

    seed = int(rng.integers(1 << 30))
    return made(), made()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lazy_steps_of_tied_leaves_equal_the_dense_steps_bit_for_bit(dtype: type) -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        ids = [rng.integers(0, 7, size=int(rng.integers(1, 6))) for _ in range(3)]
        head_ids = rng.integers(0, 3, size=2)

        def loss(p: dict, ids: list = ids, head_ids: np.ndarray = head_ids) -> Any:
            read = ng.sum(ng.tanh(p["emb"][ids[0]] @ p["w"])) + ng.sum(ng.sin(p["emb"][ids[1]]))
            return read + ng.sum(p["out"][ids[2]] ** 2.0) + ng.sum(p["head"][head_ids] * 0.5)

        sparse_p, dense_p = _tied_params(rng, dtype)
        sparse_g, dense_g = ng.grad(loss, sparse_rows=True)(sparse_p), ng.grad(loss)(dense_p)
        assert type(sparse_g["emb"]) is ng.RowSparse and type(sparse_g["out"]) is ng.RowSparse
        stepped = ng.optim.sgd(sparse_p, sparse_g, lr=0.1), ng.optim.sgd(dense_p, dense_g, lr=0.1)
        for key in dense_p:
            assert np.array_equal(stepped[0][key], stepped[1][key]), key
        sparse_p, dense_p = _tied_params(rng, dtype)
        sparse_g, dense_g = ng.grad(loss, sparse_rows=True)(sparse_p), ng.grad(loss)(dense_p)
        (sparse_new, _), (dense_new, _) = (
            ng.optim.adam(p, g, lr=0.1) for p, g in ((sparse_p, sparse_g), (dense_p, dense_g))
        )
        for key in dense_p:  # a first step: lazy Adam is the dense step
            assert np.array_equal(sparse_new[key], dense_new[key]), key


def test_a_lazy_step_of_an_untied_leaf_stays_in_place() -> None:
    table, other = _table(5, (2,)), _table(5, (2,), 1)
    params = {"emb": table, "other": other}
    g = ng.grad(lambda p: ng.sum(p["emb"][np.array([1, 1])]) + ng.sum(p["other"][np.array([0])]), sparse_rows=True)
    stepped = ng.optim.sgd(params, g(params), lr=0.5)
    assert stepped["emb"] is table and stepped["other"] is other
