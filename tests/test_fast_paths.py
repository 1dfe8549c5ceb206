"""Each fast path gives, bit for bit, what the general path it stands in for gives.

The reductions' forwards call numpy's ufunc reduction without ``np.sum``/``np.mean``'s
Python wrappers; sin, cos and tanh write their VJP into the array they have just made; a
basic index that picks a whole array in order has a reshape for its VJP; a full sum's
cotangent is spread as a zero-stride view. Timing is the benchmarks' business, never a test's.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given
from hypothesis.extra import numpy as hnp

import nodegrad as ng
from nodegrad.engine.registry import REGISTRY
from nodegrad.ops.index import _scatter

DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.float16]


def _arrays(dtype: Any) -> st.SearchStrategy[np.ndarray]:
    elements = st.floats(-1e3, 1e3, width=16 if dtype == np.float16 else 32 if dtype in (np.float32,) else 64)
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
    real = hnp.arrays(np.float64, shapes, elements=elements)
    return real.map(lambda a: (a + 1j * np.sqrt(np.abs(a)) if np.dtype(dtype).kind == "c" else a).astype(dtype))


def _axes(ndim: int) -> st.SearchStrategy[tuple[int, ...] | None]:
    return (
        st.one_of(st.none(), st.lists(st.integers(0, max(ndim - 1, 0)), unique=True).map(tuple)) if ndim else st.none()
    )


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_sum_and_mean_forwards_are_numpys_bit_for_bit(dtype: Any, data: st.DataObject) -> None:
    x = data.draw(_arrays(dtype))
    axis = data.draw(_axes(x.ndim))
    keepdims = data.draw(st.booleans())
    for name, reference in (("sum", np.sum), ("mean", np.mean)):
        if name == "mean" and (x.size == 0 or (axis is not None and any(x.shape[a] == 0 for a in axis))):
            continue  # numpy warns about an empty mean; both give NaN
        with np.errstate(over="ignore"):  # float16 sums overflow to inf both ways
            got = REGISTRY[name].forward(x, axis, keepdims)
            expected = reference(x, axis=axis, keepdims=keepdims)
        assert type(got) is type(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
@given(data=st.data())
def test_a_float_array_squared_is_np_power(dtype: Any, data: st.DataObject) -> None:
    x = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2), elements=st.floats(-1e4, 1e4, width=16)))
    with np.errstate(over="ignore"):  # float16 overflows to inf both ways
        got = REGISTRY["power"].forward(x, 2)
        expected = np.power(x, 2)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["sin", "cos", "tanh"])
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_in_place_rules_give_the_out_of_place_formula(name: str, dtype: Any, data: st.DataObject) -> None:
    x = data.draw(_arrays(dtype).filter(lambda a: a.size > 0))
    if data.draw(st.booleans(), label="large"):
        x = np.resize(x, 5000)  # past the size from which the rules write in place
    g = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-10, 10))).astype(dtype)
    with np.errstate(all="ignore"):
        ans = REGISTRY[name].forward(x)
        got = REGISTRY[name].vjps[0](g, ans, x)
        expected = {"sin": lambda: g * np.cos(x), "cos": lambda: -g * np.sin(x), "tanh": lambda: g - g * ans * ans}[
            name
        ]()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    # a cotangent of another layout (a broadcast scalar, say) takes the general path
    with np.errstate(all="ignore"):
        broadcast = np.broadcast_to(np.asarray(1.5, dtype), x.shape)
        np.testing.assert_array_equal(
            REGISTRY[name].vjps[0](broadcast, ans, x),
            {
                "sin": lambda: 1.5 * np.cos(x),
                "cos": lambda: -1.5 * np.sin(x),
                "tanh": lambda: broadcast - broadcast * ans * ans,
            }[name](),
        )


WHOLE = [
    ((6, 1), (slice(None), 0)),
    ((6, 1), (Ellipsis, 0)),
    ((2, 3), Ellipsis),
    ((2, 3), (None, slice(None))),
    ((4,), slice(0, 4, 1)),
    ((1, 1, 3), (0, 0)),
    ((2, 1, 3), (slice(None), Ellipsis, -1, slice(None))),
]
PARTIAL = [
    ((4,), slice(None, None, -1)),
    ((4,), slice(1, None)),
    ((3, 2), (slice(None), 0)),
    ((4,), slice(None, None, 2)),
    ((1,), slice(0, 0)),  # nothing picked; a 1-entry v broadcasts to nothing
    ((2, 1, 3), (Ellipsis, 0, slice(None, 2))),
]


@pytest.mark.parametrize(("shape", "index"), WHOLE + PARTIAL)
def test_a_whole_in_order_index_scatters_as_a_reshape(shape: tuple[int, ...], index: Any) -> None:
    x = np.arange(float(np.prod(shape))).reshape(shape)
    v = np.random.default_rng(0).standard_normal(np.shape(x[index]))
    if x[index].size == 0:
        v = np.asarray(1.5)  # broadcasts to an empty selection
    expected = np.zeros(shape)
    expected[index] = v
    np.testing.assert_array_equal(_scatter(shape, index, v), expected)
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(x[index] * v))(x), expected)
