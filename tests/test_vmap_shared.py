"""A plain array every example shares (``in_axes=None``) indexed by a batched index: an
embedding lookup. Each way a program indexes one (``t[i]``, ``t[i, j]``, ``t[:, i]``,
``np.take``, and the same of values computed from the table alone) equals a Python loop
of plain numpy, under ``vmap``, ``vmap(grad)``, ``grad`` of a ``vmap``, ``vmap(jvp)``,
chunked and nested; results leave as plain arrays. A table that reaches the function
by a closure is refused, as ``docs/vmap.md`` says, naming ``ng.gather``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.errors import BatchingError

ROWS, COLS, BATCH = 5, 3, 4

# Each (table, index) -> one example's value, written as user code writes it; the index is
# an int64 pair (i, j) with i < ROWS and j < COLS.
LOOKUPS: dict[str, Callable[[Any, Any], Any]] = {
    "row": lambda t, i: t[i[0]],
    "rows": lambda t, i: t[i],
    "element": lambda t, i: t[i[0], i[1]],
    "column": lambda t, i: t[:, i[1]],
    "row_then_slice": lambda t, i: t[i[0], 1:],
    "take_rows": lambda t, i: np.take(t, i, axis=0),
    "take_flat": lambda t, i: np.take(t, i),
    "of_tanh": lambda t, i: np.tanh(t)[i[0]],
    "of_product": lambda t, i: (t @ t.T)[i],
    "of_concatenate": lambda t, i: np.concatenate([t, 2.0 * t])[i[0] + ROWS],
    "of_transpose": lambda t, i: t.T[i[1]],
    "of_reshape": lambda t, i: t.reshape(-1)[i],
    "of_eigh": lambda t, i: np.linalg.eigh(t.T @ t)[1][i[1]],  # a named tuple of results
    # nodegrad's own np.meshgrid, given a batched value: the table's part is the same for all
    "of_meshgrid": lambda t, i: np.meshgrid(i * 1.0, t[0], indexing="ij")[1][:, i[1]],
}

tables = st.lists(st.floats(-3, 3), min_size=ROWS * COLS, max_size=ROWS * COLS).map(
    lambda v: np.array(v).reshape(ROWS, COLS)
)
indices = st.lists(st.tuples(st.integers(0, ROWS - 1), st.integers(0, COLS - 1)), min_size=BATCH, max_size=BATCH).map(
    lambda v: np.array(v, dtype=np.int64)
)


def _loop(f: Callable[[Any, Any], Any], t: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.stack([np.asarray(f(t, i)) for i in idx])


def _loss(lookup: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda t, i: np.sum(np.sin(lookup(t, i)) ** 2)


@pytest.mark.parametrize("name", list(LOOKUPS))
@settings(max_examples=5, deadline=None)
@given(t=tables, idx=indices)
def test_vmap_of_a_lookup_in_a_shared_table_is_the_loop(name: str, t: np.ndarray, idx: np.ndarray) -> None:
    lookup = LOOKUPS[name]
    want = _loop(lookup, t, idx)
    got = ng.vmap(lookup, in_axes=(None, 0))(t, idx)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, want)
    chunked = ng.vmap(lookup, in_axes=(None, 0), chunk_size=3, out_axes=-1)(t, idx)
    np.testing.assert_array_equal(np.moveaxis(chunked, -1, 0), want)


@pytest.mark.parametrize("name", list(LOOKUPS))
@settings(max_examples=3, deadline=None)
@given(t=tables, idx=indices)
def test_transforms_of_a_lookup_in_a_shared_table_are_the_loop(name: str, t: np.ndarray, idx: np.ndarray) -> None:
    loss = _loss(LOOKUPS[name])
    per_example = np.stack([ng.grad(loss)(t, i) for i in idx])
    np.testing.assert_allclose(ng.vmap(ng.grad(loss), in_axes=(None, 0))(t, idx), per_example, rtol=1e-12)
    total = ng.grad(lambda t: np.sum(ng.vmap(loss, in_axes=(None, 0))(t, idx)))(t)
    np.testing.assert_allclose(total, per_example.sum(axis=0), rtol=1e-12, atol=1e-15)
    tangent = np.cos(t)

    def jvp(t: Any, i: Any) -> Any:
        return ng.jvp(lambda t: loss(t, i), (t,), (tangent,))[1]

    np.testing.assert_allclose(
        ng.vmap(jvp, in_axes=(None, 0))(t, idx), [np.sum(g * tangent) for g in per_example], rtol=1e-10, atol=1e-14
    )


def test_finite_differences_agree_with_vmap_grad_of_an_embedding_lookup() -> None:
    t = np.random.default_rng(0).normal(size=(ROWS, COLS))
    idx = np.array([[1, 0], [4, 2], [1, 1], [0, 2]])
    loss = _loss(LOOKUPS["rows"])
    got = ng.vmap(ng.grad(loss), in_axes=(None, 0))(t, idx)
    eps = 1e-6
    for b, i in enumerate(idx):
        numeric = np.zeros_like(t)
        for k in np.ndindex(t.shape):
            step = np.zeros_like(t)
            step[k] = eps
            numeric[k] = (loss(t + step, i) - loss(t - step, i)) / (2 * eps)
        np.testing.assert_allclose(got[b], numeric, rtol=1e-6, atol=1e-9)


def test_a_shared_table_inside_vmap_of_vmap_is_the_double_loop() -> None:
    t = np.arange(15.0).reshape(5, 3)
    idx = np.array([[0, 4], [3, 1]])
    got = ng.vmap(ng.vmap(lambda t, i: t[i] * 2.0, in_axes=(None, 0)), in_axes=(None, 0))(t, idx)
    np.testing.assert_array_equal(got, [[t[i] * 2.0 for i in row] for row in idx])


def test_results_leave_vmap_as_plain_arrays() -> None:
    t = np.arange(6.0).reshape(3, 2)
    out = ng.vmap(lambda t, i: {"same": np.tanh(t), "row": t[i], "pair": np.split(t, 3)}, in_axes=(None, 0),
                  out_axes={"same": None, "row": 0, "pair": None})(t, np.array([2, 0]))  # fmt: skip
    for leaf in (out["same"], out["row"], *out["pair"]):
        assert type(leaf) is np.ndarray
    np.testing.assert_array_equal(out["row"], t[[2, 0]])
    np.testing.assert_array_equal(out["same"], np.tanh(t))


def test_the_table_given_is_neither_copied_nor_changed() -> None:
    t = np.arange(6.0).reshape(3, 2)
    seen = []
    ng.vmap(lambda t, i: seen.append(t) or t[i], in_axes=(None, 0))(t, np.array([1, 2]))
    assert np.shares_memory(seen[0], t)
    np.testing.assert_array_equal(t, np.arange(6.0).reshape(3, 2))


@pytest.mark.parametrize("write", ["t[i]", "np.take(t, i, axis=0)"])
def test_a_table_reached_by_a_closure_is_refused_naming_gather(write: str) -> None:
    t = np.arange(6.0).reshape(3, 2)
    f = eval(f"lambda i: {write}", {"t": t, "np": np})
    with pytest.raises(BatchingError, match=r"ng\.gather"):
        ng.vmap(f)(np.array([1, 2]))


@pytest.mark.parametrize("name", list(LOOKUPS))
def test_replay_of_vmap_of_a_lookup_is_the_loop_on_every_call(name: str) -> None:
    # Under replay the table is staged, and x[i] of a staged x by a batched i is the
    # batched getitem op (``__getitem__`` has no reflected form to hand it over).
    lookup = LOOKUPS[name]
    fast = ng.replay(ng.vmap(lookup, in_axes=(None, 0)))
    rng = np.random.default_rng(5)
    for _ in range(3):
        t = rng.normal(size=(ROWS, COLS))
        idx = np.stack([rng.integers(0, ROWS, BATCH), rng.integers(0, COLS, BATCH)], axis=1)
        got = fast(t, idx)
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, _loop(lookup, t, idx))
    assert len(fast.traces) == 1


@pytest.mark.parametrize("which", ["vectors", "values"])
def test_forward_mode_through_a_shared_matrix_with_repeated_eigenvalues_is_the_loop(which: str) -> None:
    # The refusal of an undefined derivative compares a batched cotangent with the shared
    # matrix's repeated-eigenvalue mask: one per example against one for all.
    t, idx = np.zeros((ROWS, COLS)), np.array([[0, 0], [1, 2], [4, 1], [2, 2]])
    if which == "vectors":
        loss = lambda t, i: np.sum(np.sin(np.linalg.eigh(t.T @ t)[1][i[1]]) ** 2)
    else:
        loss = lambda t, i: np.sum(np.linalg.eigvalsh(t.T @ t)) * i[1]
    tangent = np.cos(t)

    def jvp(t: Any, i: Any) -> Any:
        return ng.jvp(lambda t: loss(t, i), (t,), (tangent,))[1]

    np.testing.assert_array_equal(ng.vmap(jvp, in_axes=(None, 0))(t, idx), [jvp(t, i) for i in idx])
