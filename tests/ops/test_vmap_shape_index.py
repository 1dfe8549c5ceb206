"""``ng.vmap`` over the shape, index and structured ops, against plain Python loops.

The op specs of ``specs_shape.py`` and ``specs_index.py`` (their ops and composites) give one
example; ``B`` examples (``B`` in {1, 3}) scale its float operands by factors near 1, each
operand batched along an axis drawn from {0, 1, -1, None}. For each: ``vmap`` equals a loop;
``vmap(grad)`` equals a loop of ``grad``; ``grad(vmap)`` equals the gradient of the loop; a
batched value reaching the op through a closure (inside ``grad``) equals a loop; all in
float64 to 1e-12, with the per-example fallback patched to fail (every op here has a rule).
Then indices batched per example (integer arrays among slices, ``None``, ints and ``...``),
``gather``, ``take_along_axis``, ``at[...].set/add`` and scatter with batched indices, the
numpy functions built from these ops, and the refusals (a batched boolean mask, structures
built from batched values).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.engine.registry import MADE_OF_OPS
from nodegrad.errors import BatchingError, NodegradError
from nodegrad.ops import REGISTRY, batching
from nodegrad.ops.index import scatter
from tests.ops import specs_index, specs_shape
from tests.ops.vmap_harness import (
    assert_same,
    check_forward,
    check_grad_of_vmap,
    check_vmap_of_grad,
    draw_case,
    per_example_spy,
    run_vmap,
    spec_test,
    stacked,
    weighted_sum,
    weights,
)

SPECS = {**specs_shape.SPECS, **specs_shape.COMPOSITES, **specs_index.SPECS, **specs_index.COMPOSITES}
#: Where a spec's operands are single precision (the closure's sums of products).
SINGLE = {"rtol": 1e-5, "atol": 1e-6}
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MORE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # indices: many layouts
OPS = ["reshape", "transpose", "astype", "broadcast_to", "pad", "cat", "stack"]
OPS += ["getitem", "scatter", "gather", "index_add", "index_set", "take_along_axis"]
STRUCTURED = ["struct_field", "map_lookup", "seq_index", "make_map", "make_record", "make_sequence"]


@pytest.fixture(autouse=True)
def _no_per_example_loop() -> Iterator[None]:
    """Every op of these families has a rule: running one once per example is a failure."""
    with per_example_spy(None):
        yield


def test_each_op_has_a_rule_of_its_own() -> None:
    for name in OPS + STRUCTURED:
        assert batching.rule_of(REGISTRY[name]) not in (None, batching.loop), name


# -- the specs' calls, batched ---------------------------------------------------------------------


test_vmap_equals_a_loop = spec_test(check_forward, SPECS, FEW)
test_vmap_of_grad_equals_a_loop = spec_test(check_vmap_of_grad, SPECS, FEW)
test_grad_of_vmap_equals_the_gradient_of_a_loop = spec_test(check_grad_of_vmap, SPECS, FEW)


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_a_batched_value_through_a_closure_equals_a_loop(name: str, data: st.DataObject) -> None:
    # Inside vmap, grad with respect to a scale s of the operands: the batched operands reach
    # the op from the enclosing function, times a traced s.
    case, batch = draw_case(data, SPECS[name])

    def scaled(*values: Any) -> Any:
        return ng.grad(lambda s: weighted_sum(case.fn(*(v * s for v in values))))(1.0)

    expected = stacked([scaled(*e) for e in batch.examples])
    # s's gradient sums single-precision products: over every example at once the summation
    # order differs from one example's, within float32's rounding.
    single = any(np.asarray(v).dtype in (np.float32, np.complex64) for v in case.values)
    assert_same(run_vmap(scaled, batch), expected, f"{name} closure, {batch}", SINGLE if single else None)


# -- indices of their own per example -------------------------------------------------------------


@st.composite
def _batched_indices(draw: st.DrawFn) -> Any:
    """``(x, size, items, arrays)``: an index of ``x``'s example shape (slices, ints, integer
    arrays, ``None``, ``...``) whose integer arrays of each example ``arrays`` (stacked over
    ``size`` examples; perhaps none) stand where ``items`` holds ``("array", k)``."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    size = draw(st.sampled_from([1, 3]))
    common = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    kinds = [draw(st.sampled_from(["batched", "array", "slice", "int"])) for _ in shape]
    if "batched" not in kinds and draw(st.booleans()):  # else the same index for every example
        kinds[draw(st.integers(0, len(shape) - 1))] = "batched"
    items: list[Any] = []
    arrays: list[np.ndarray] = []
    for n, kind in zip(shape, kinds, strict=True):
        ints = st.integers(-n, n - 1)
        own = common[draw(st.integers(0, len(common))) :]  # a suffix: broadcasts to common
        if kind == "batched":
            items.append(("array", len(arrays)))
            arrays.append(draw(hnp.arrays(np.int64, (size, *own), elements=ints)))
        elif kind == "array":
            items.append(draw(hnp.arrays(np.int64, own, elements=ints)))
        elif kind == "slice":
            items.append(draw(st.slices(n)))
        else:
            items.append(draw(ints))
    cut = draw(st.integers(0, len(items)))
    if draw(st.booleans()):  # drop trailing items, or stand them in with an Ellipsis
        items = [*items[:cut], Ellipsis] if all(i[0] != "array" for i in items[cut:] if type(i) is tuple) else items
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    x = draw(hnp.arrays(np.float64, (size, *shape), elements=st.floats(-3, 3)))
    return x, size, items, arrays


def _index(items: list[Any], arrays: Any) -> tuple[Any, ...]:
    return tuple(arrays[i[1]] if type(i) is tuple else i for i in items)


@MORE
@given(case=_batched_indices(), x_batched=st.booleans())
def test_getitem_with_indices_of_each_example(case: Any, x_batched: bool) -> None:
    x, size, items, arrays = case
    x_batched = x_batched or not arrays
    x = x if x_batched else x[0]
    loop = np.stack([(x[b] if x_batched else x)[_index(items, [a[b] for a in arrays])] for b in range(size)])
    f = lambda x, *arrays: ng.getitem(x, _index(items, arrays))
    in_axes = (0 if x_batched else None, *(0,) * len(arrays))
    assert_same(ng.vmap(f, in_axes)(x, *arrays), loop, f"x[{items}]")
    w = weights(loop.shape[1:])
    g = ng.vmap(ng.grad(lambda x, *a: np.sum(f(x, *a) * w)), in_axes)(x, *arrays)
    grads = [
        ng.grad(lambda x, b=b: np.sum(f(x, *(a[b] for a in arrays)) * w))(x[b] if x_batched else x) for b in range(size)
    ]
    assert_same(g, np.stack(grads), f"vmap(grad) of x[{items}]")
    total = ng.grad(lambda x: np.sum(ng.vmap(f, in_axes)(x, *arrays) * w))(x)
    assert_same(total, np.stack(grads) if x_batched else np.sum(grads, axis=0), f"grad(vmap) of x[{items}]")


@MORE
@given(case=_batched_indices())
def test_index_add_and_set_with_indices_of_each_example(case: Any) -> None:
    x, size, items, arrays = case
    selected = x[0][_index(items, [a[0] for a in arrays])].shape
    v = np.arange(size * int(np.prod(selected)), dtype=float).reshape(size, *selected) + 1.0
    add = lambda x, v, *arrays: ng.at(x)[_index(items, arrays)].add(v)
    loop = [ng.at(x[b])[_index(items, [a[b] for a in arrays])].add(v[b]) for b in range(size)]
    assert_same(ng.vmap(add)(x, v, *arrays), np.stack(loop), f"at[{items}].add")
    w = weights(x.shape[1:])
    gx, gv = ng.vmap(ng.grad(lambda x, v, *a: np.sum(add(x, v, *a) * w), argnums=(0, 1)))(x, v, *arrays)
    assert_same(gx, np.broadcast_to(w, x.shape), "gradient of x")
    assert_same(gv, np.stack([w[_index(items, [a[b] for a in arrays])] for b in range(size)]), "gradient of v")
    # set: refused as one example's index would be when it writes an entry twice
    put = lambda x, v, *arrays: ng.at(x)[_index(items, arrays)].set(v)
    expected, refused = [], []
    for b in range(size):
        try:
            expected.append(ng.at(x[b])[_index(items, [a[b] for a in arrays])].set(v[b]))
        except NodegradError as exc:
            refused.append(exc)
    if refused:
        with pytest.raises(NodegradError, match="more than once"):
            ng.vmap(put)(x, v, *arrays)
        return
    assert_same(ng.vmap(put)(x, v, *arrays), np.stack(expected), f"at[{items}].set")


@MORE
@given(case=_batched_indices())
def test_scatter_with_indices_of_each_example(case: Any) -> None:
    x, size, items, arrays = case
    shape = x.shape[1:]
    selected = x[0][_index(items, [a[0] for a in arrays])].shape
    v = np.cos(np.arange(size * int(np.prod(selected)), dtype=float)).reshape(size, *selected)
    f = lambda v, *arrays: scatter(v, _index(items, arrays), shape)
    loop = [scatter(v[b], _index(items, [a[b] for a in arrays]), shape) for b in range(size)]
    assert_same(ng.vmap(f)(v, *arrays), np.stack(loop), f"scatter at {items}")
    if not arrays:
        return
    assert_same(
        ng.vmap(f, (None, *(0,) * len(arrays)))(v[0], *arrays),
        np.stack([scatter(v[0], _index(items, [a[b] for a in arrays]), shape) for b in range(size)]),
        "scatter, v unbatched",
    )


@MORE
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    data=st.data(),
    size=st.sampled_from([1, 3]),
)
def test_gather_and_take_along_axis_with_indices_of_each_example(shape: Any, data: Any, size: int) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    x = data.draw(hnp.arrays(np.float64, (size, *shape), elements=st.floats(-3, 3)))
    idx = data.draw(
        hnp.arrays(
            np.int64,
            (size, *data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))),
            elements=st.integers(-n, n - 1),
        )
    )
    for in_x in (0, None):
        xs = [x[b] if in_x == 0 else x[0] for b in range(size)]
        # numpy dispatches np.take on its array alone: a plain x with batched indices takes ng.gather
        fn = (lambda x, i: np.take(x, i, axis=axis)) if in_x == 0 else (lambda x, i: ng.gather(x, i, axis=axis))
        take = ng.vmap(fn, (in_x, 0))(x if in_x == 0 else x[0], idx)
        assert_same(take, np.stack([np.take(xs[b], idx[b], axis=axis) for b in range(size)]), f"np.take axis {axis}")
    along = data.draw(
        hnp.arrays(
            np.int64,
            (size, *(m if k != axis % len(shape) else 2 for k, m in enumerate(shape))),
            elements=st.integers(-n, n - 1),
        )
    )
    for in_i in (0, None):
        ids = along if in_i == 0 else along[0]
        got = ng.vmap(lambda x, i: np.take_along_axis(x, i, axis), (0, in_i))(x, ids)
        expected = [np.take_along_axis(x[b], along[b] if in_i == 0 else along[0], axis) for b in range(size)]
        assert_same(got, np.stack(expected), f"np.take_along_axis axis {axis}, indices in_axes {in_i}")
    w = weights(expected[0].shape)
    g = ng.vmap(ng.grad(lambda x, i: np.sum(np.take_along_axis(x, i, axis) * w)))(x, along)
    loop = [ng.grad(lambda x, b=b: np.sum(np.take_along_axis(x, along[b], axis) * w))(x[b]) for b in range(size)]
    assert_same(g, np.stack(loop), "gradient of np.take_along_axis")


def test_a_batched_index_into_an_unbatched_traced_value() -> None:
    # record1 looks only at its first argument: the index's batched value must still be seen.
    x = np.arange(5.0)
    idx = np.array([[0, 4], [3, 3], [1, 2]])
    got = ng.grad(lambda x: np.sum(ng.vmap(lambda i: x[i] ** 2)(idx)))(x)
    np.testing.assert_allclose(got, 2 * x * np.bincount(idx.ravel(), minlength=5))
    per_row = ng.vmap(lambda i: ng.grad(lambda x: np.sum(x[i] ** 2))(x))(idx)
    np.testing.assert_allclose(per_row, [2 * x * np.bincount(r, minlength=5) for r in idx])


def test_argmax_picks_each_examples_entry() -> None:
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    np.testing.assert_array_equal(ng.vmap(lambda r: r[np.argmax(r)])(x), [5.0, 7.0])
    np.testing.assert_array_equal(ng.vmap(lambda r: ng.getitem(r, (np.argmax(r), None)))(x), [[5.0], [7.0]])


# -- numpy's functions on batched values -----------------------------------------------------------

NUMPY = {
    "x.reshape": lambda x: x.reshape(-1, 2),
    "x.T": lambda x: x.T,
    "np.concatenate": lambda x: np.concatenate([x, np.ones((3, 4)), x[:1]], axis=0),
    "np.concatenate axis None": lambda x: np.concatenate([x, x], axis=None),
    "np.stack": lambda x: np.stack([x, np.zeros((3, 4))], axis=-1),
    "np.take": lambda x: np.take(x, np.array([[3, 0], [1, -1]]), axis=1),
    "np.take flat": lambda x: np.take(x, np.array([7, 0])),
    "np.moveaxis": lambda x: np.moveaxis(x[None], 0, -1),
    "np.expand_dims": lambda x: np.expand_dims(x, (0, 2)),
    "np.squeeze": lambda x: np.squeeze(x[:, None, :1]),
    "np.swapaxes": lambda x: np.swapaxes(x, 0, 1),
    "np.repeat": lambda x: np.repeat(x, [1, 0, 2, 1], axis=1),
    "np.tile": lambda x: np.tile(x, (2, 1, 2)),
    "np.flip": lambda x: np.flip(x, 1),
    "np.roll": lambda x: np.roll(x, (1, -2), axis=(0, 1)),
    "np.pad": lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=0.5),
    "np.broadcast_to": lambda x: np.broadcast_to(x[:, :1], (2, 3, 4)),
    "astype": lambda x: x.astype(np.float32).astype(np.float64),
    "at.set": lambda x: ng.at(x)[1, ::2].set(x[0, :2]),
    "mask": lambda x: x[:, np.array([True, False, True, True])],
    "np.dstack": lambda x: np.dstack([x, np.ones((3, 4))]),
    "np.column_stack": lambda x: np.column_stack([x, x[:, :1]]),
    "np.append": lambda x: np.append(x, np.ones((1, 4)), axis=0),
    "np.insert": lambda x: np.insert(x, 1, 5.0, axis=1),
    "np.delete": lambda x: np.delete(x, [0, 2], axis=1),
    "np.block": lambda x: np.block([[x, np.zeros((3, 1))], [x[:1], x[1:2, :1]]]),
    "np.resize": lambda x: np.resize(x, (2, 7)),
}


@pytest.mark.parametrize("name", sorted(NUMPY))
@pytest.mark.parametrize("size", [1, 3])
def test_numpy_functions_of_batched_values(name: str, size: int) -> None:
    f = NUMPY[name]
    x = np.sin(np.arange(size * 12.0)).reshape(size, 3, 4)
    assert_same(ng.vmap(f)(x), np.stack([f(x[b]) for b in range(size)]), name)
    assert_same(
        ng.vmap(f, in_axes=2)(np.moveaxis(x, 0, 2)), np.stack([f(x[b]) for b in range(size)]), f"{name}, axis 2"
    )
    w = weights(np.shape(f(x[0])))
    g = ng.vmap(ng.grad(lambda x: np.sum(f(x) * w)))(x)
    assert_same(g, np.stack([ng.grad(lambda x: np.sum(f(x) * w))(x[b]) for b in range(size)]), f"gradient of {name}")


# -- refusals --------------------------------------------------------------------------------------


def test_a_mask_of_each_example_is_refused_naming_getitem() -> None:
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(BatchingError, match="getitem: a boolean mask"):
        ng.vmap(lambda r: r[r > 1.0])(x)
    with pytest.raises(BatchingError, match="getitem: a boolean mask"):
        ng.vmap(lambda r, m: ng.getitem(r, (m,)), (None, 0))(x[0], x > 1.0)


def test_an_index_of_each_example_must_hold_integers() -> None:
    with pytest.raises(NodegradError, match="integers"):
        ng.vmap(lambda r, i: ng.getitem(r, (i,)))(np.ones((2, 3)), np.zeros((2, 2)))


def test_a_structure_built_from_batched_values_holds_them() -> None:
    # custom_vjp packs its dict argument into a make_map node; under vmap its leaves are
    # batched values, and fwd and bwd run on them: the same as one call per example.
    @ng.custom_vjp
    def f(p: Any) -> Any:
        return np.sum(p["a"] * p["b"])

    f.defvjp(lambda p: (f(p), p), lambda p, g: ({"a": g * p["b"], "b": g * p["a"]},))
    loss = lambda x: f({"a": x, "b": x * 2.0})
    xs = np.arange(6.0).reshape(2, 3)
    got = ng.vmap(ng.grad(loss))(xs)
    np.testing.assert_allclose(got, np.stack([ng.grad(loss)(x) for x in xs]), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", STRUCTURED)
def test_the_structured_ops_run_as_they_are(name: str) -> None:
    # A structure's node holds its batched leaves: the forward builds or reads it as it is.
    assert MADE_OF_OPS in REGISTRY[name].traits
