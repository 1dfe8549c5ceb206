"""``ng.eval_shape`` of numpy's functions whose results' shapes and dtypes follow from their
arguments' (quantiles, medians, ``np.interp``, ``np.nan_to_num``, ``np.partition``,
``np.piecewise``, covariances, the NaN-ignoring extrema, and the masks and indices of
``np.isin``, ``np.searchsorted``, ``np.digitize`` and ``np.histogram``): each answered as the
eager call's shapes and dtypes, leaf by leaf, plain, under ``grad``, under ``vmap`` and with a
closure over a plain array; and what depends on the values still refused.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.errors import BatchingError, ShapeOnlyError
from tests.test_eval_shape import described, signature

FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GRID = np.linspace(0.0, 1.0, 7)
LEVELS = np.arange(7.0) ** 2
EDGES = np.linspace(0.0, 1.0, 5)

Axis = int | None
#: name -> (axis -> function of one array): differentiable in its argument.
DIFFERENTIABLE: dict[str, Callable[[Axis], Callable[[Any], Any]]] = {
    "quantile": lambda axis: lambda x: np.quantile(x, 0.3, axis=axis),
    "quantile-array": lambda axis: lambda x: np.quantile(x, np.array([0.1, 0.5]), axis=axis, keepdims=True),
    "quantile-lower": lambda axis: lambda x: np.quantile(x, [0.7], axis=axis, method="lower"),
    "percentile": lambda axis: lambda x: np.percentile(x, 30.0, axis=axis),
    "percentile-hazen": lambda axis: lambda x: np.percentile(x, 45, axis=axis, method="hazen"),
    "median": lambda axis: lambda x: np.median(x, axis=axis),
    "nanquantile": lambda axis: lambda x: np.nanquantile(x, 0.25, axis=axis),
    "nanmedian": lambda axis: lambda x: np.nanmedian(x, axis=axis, keepdims=True),
    "nanmax": lambda axis: lambda x: np.nanmax(x, axis=axis),
    "nanmin": lambda axis: lambda x: np.nanmin(x, axis=axis, keepdims=True),
    "interp": lambda axis: lambda x: np.interp(x, GRID, LEVELS),
    "interp-edges": lambda axis: lambda x: np.interp(x, GRID, LEVELS, left=-1.0, right=2.0),
    "nan_to_num": lambda axis: lambda x: np.nan_to_num(x),
    "nan_to_num-fills": lambda axis: lambda x: np.nan_to_num(x, nan=1.5, posinf=2.0, neginf=-2.0),
    "partition": lambda axis: lambda x: np.partition(x, 0, axis=axis),
    "partition-last": lambda axis: lambda x: np.partition(x, [0, -1], axis=-1 if axis is None else axis),
    "piecewise": lambda axis: lambda x: np.piecewise(x, [x < 0.5, x >= 0.5], [lambda v: -v, lambda v: v**2]),
    "piecewise-otherwise": lambda axis: lambda x: np.piecewise(x, [x < 0.3], [np.sin, 2.0]),
    "cov": lambda axis: lambda x: np.cov(np.reshape(x, (np.shape(x)[0], -1))),
    "cov-columns": lambda axis: lambda x: np.cov(np.reshape(x, (np.shape(x)[0], -1)), rowvar=False, ddof=0),
    "corrcoef": lambda axis: lambda x: np.corrcoef(np.reshape(x, (np.shape(x)[0], -1))),
}
#: name -> (axis -> function of one array): masks, indices and counts (no gradient).
VALUES: dict[str, Callable[[Axis], Callable[[Any], Any]]] = {
    "isin": lambda axis: lambda x: np.isin(x, np.array([0.25, 0.5])),
    "isin-inverted": lambda axis: lambda x: np.isin(x, [0.25], invert=True),
    "searchsorted": lambda axis: lambda x: np.searchsorted(EDGES, x),
    "searchsorted-right": lambda axis: lambda x: np.searchsorted(EDGES, x, side="right"),
    "digitize": lambda axis: lambda x: np.digitize(x, EDGES),
    "digitize-decreasing": lambda axis: lambda x: np.digitize(x, EDGES[::-1], right=True),
    "histogram": lambda axis: lambda x: np.histogram(x, bins=5, range=(0, 1)),
    "histogram-no-range": lambda axis: lambda x: np.histogram(x, bins=3),
    "histogram-edges": lambda axis: lambda x: np.histogram(x, bins=EDGES, density=True),
}
ALL = {**DIFFERENTIABLE, **VALUES}
FLOATS = st.sampled_from([np.float32, np.float64])


@st.composite
def _arguments(draw: st.DrawFn, min_ndim: int = 1) -> tuple[np.ndarray, Axis]:
    """An array of 1 to 3 axes of 1 to 4 entries, values in [0, 1), and an axis of it (or None)."""
    shape = draw(st.lists(st.integers(1, 4), min_size=min_ndim, max_size=3).map(tuple))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.random(shape).astype(draw(FLOATS))
    return x, draw(st.sampled_from([None, *range(-len(shape), len(shape))]))


def _shaped(x: np.ndarray) -> ng.ShapeDtype:
    return ng.ShapeDtype(x.shape, x.dtype)


def _check(fun: Any, *args: np.ndarray) -> None:
    """eval_shape of ``fun`` on shapes and dtypes only is the eager call's shapes and dtypes
    (what numpy warns of, one observation for a covariance, say, both may warn of)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = signature(fun(*args))
        got = described(ng.eval_shape(fun, *(_shaped(a) for a in args)))
    assert got == expected, f"eval_shape {got} against eager {expected}"


def _scalar_loss(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def loss(x: Any) -> Any:
        out = f(x)
        return np.sum(np.real(out[0] if isinstance(out, tuple) else out) * 1.5)

    return loss


@pytest.mark.parametrize("name", list(ALL))
@FEW
@given(data=st.data())
def test_answered_as_the_eager_call(name: str, data: st.DataObject) -> None:
    x, axis = data.draw(_arguments(min_ndim=2 if name.startswith(("cov", "corrcoef")) else 1))
    _check(ALL[name](axis), x)


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
@FEW
@given(data=st.data())
def test_gradient_answered_as_the_eager_gradient(name: str, data: st.DataObject) -> None:
    x, axis = data.draw(_arguments(min_ndim=2 if name.startswith(("cov", "corrcoef")) else 1))
    grad = ng.grad(_scalar_loss(DIFFERENTIABLE[name](axis)))
    _check(grad, x)
    _check(ng.value_and_grad(_scalar_loss(DIFFERENTIABLE[name](axis))), x)


@pytest.mark.parametrize("name", list(VALUES))
@FEW
@given(data=st.data())
def test_masks_and_indices_of_a_value_without_its_gradient_under_grad(name: str, data: st.DataObject) -> None:
    x, axis = data.draw(_arguments())
    f = VALUES[name](axis)

    def loss(x: Any) -> Any:
        out = f(ng.stop_gradient(x))
        return np.sum(x * 2.0) + np.sum(out[0] if isinstance(out, tuple) else out)

    _check(ng.grad(loss), x)


@pytest.mark.parametrize("name", list(ALL))
@FEW
@given(data=st.data(), batch=st.integers(1, 3))
def test_vmap_answered_as_the_eager_vmap(name: str, data: st.DataObject, batch: int) -> None:
    example, axis = data.draw(_arguments(min_ndim=2 if name.startswith(("cov", "corrcoef")) else 1))
    xs = np.stack([example] * batch) + np.arange(batch, dtype=example.dtype).reshape((-1,) + (1,) * example.ndim)
    _check(ng.vmap(ALL[name](axis)), xs)
    if name in DIFFERENTIABLE:
        _check(ng.vmap(ng.grad(_scalar_loss(ALL[name](axis)))), xs)


@pytest.mark.parametrize("name", list(ALL))
@FEW
@given(data=st.data())
def test_a_closure_over_a_plain_array_with_a_shaped_argument(name: str, data: st.DataObject) -> None:
    x, axis = data.draw(_arguments(min_ndim=2 if name.startswith(("cov", "corrcoef")) else 1))
    shift = np.linspace(0.0, 0.5, x.size, dtype=x.dtype).reshape(x.shape)  # closed over: plain
    f = ALL[name](axis)
    _check(lambda x: f(x * 0.5 + shift), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_closures_of_the_second_arguments(dtype: Any) -> None:
    x, levels = np.random.default_rng(0).random((3, 4)).astype(dtype), LEVELS.astype(dtype)
    _check(lambda x: np.interp(x, GRID, levels + 1j), x)  # complex fp: complex values
    _check(lambda w: np.cov(x, aweights=w[0] + 1.0), x)  # shaped weights, plain m
    _check(lambda x: np.searchsorted(np.sort(x[0]), 0.5), x)  # a shaped grid, a plain value
    _check(lambda x: np.isin(np.arange(4.0), x), x)
    _check(lambda x, w: np.histogram(x, bins=4, range=(0, 1), weights=w), x, x.astype(np.float32))
    _check(lambda x: np.quantile(x, 0.5, axis=1) + np.nanmax(x.astype(np.int32), axis=0).sum(), x)


def test_the_examples_of_the_task() -> None:
    x = np.random.default_rng(1).random((4, 5))
    _check(lambda x: np.quantile(x, 0.3, axis=0), x)
    _check(lambda x: np.quantile(x, np.array([0.1, 0.5]), axis=1), x)
    _check(lambda x: np.histogram(x, bins=5, range=(0, 1)), x)
    _check(ng.grad(lambda x: np.quantile(x, 0.5).sum()), x)
    _check(ng.vmap(lambda r: np.quantile(r, 0.5)), x)
    counts, edges = ng.eval_shape(lambda x: np.histogram(x, bins=5, range=(0, 1)), _shaped(x))
    assert (counts.shape, edges.shape) == ((5,), (6,))


def test_quantiles_keep_numpy_dtypes_and_nans_eagerly() -> None:
    """A Python q keeps float32 values' dtype (numpy's weak promotion), and a slice with a
    NaN gives NaN: under grad and vmap as in numpy."""
    x = np.random.default_rng(2).random((3, 4)).astype(np.float32)
    x[1, 2] = np.nan
    for f in (np.median, lambda r: np.percentile(r, 30), lambda r: np.quantile(r, [0.3]), np.nanmedian):
        expected = np.stack([f(r) for r in x])
        got = ng.vmap(f)(x)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        value, _ = ng.value_and_grad(lambda r, f=f: np.sum(f(r)))(x[1])
        assert np.result_type(value) == np.result_type(np.sum(f(x[1])))
        np.testing.assert_array_equal(value, np.sum(f(x[1])))
    ints = np.arange(12).reshape(3, 4)
    _check(lambda x: np.nanmax(x, axis=0), ints)  # no NaN in integers: numpy's max, in their dtype


# -- what depends on the values ----------------------------------------------------------------

REFUSED = {
    "unique": lambda x: np.unique(x),
    "nonzero": lambda x: np.nonzero(x > 0.5),
    "mask": lambda x: x[x > 0.5],
    "histogram-auto": lambda x: np.histogram(x, bins="auto"),
    "histogram-value-edges": lambda x: np.histogram(x, bins=np.linspace(0.0, 1.0, 4) * x.max()),
    "histogram-value-range": lambda x: np.histogram(x, bins=3, range=(x.min(), x.max())),
    "bincount": lambda x: np.bincount(np.ravel(x * 4).astype(np.intp)),
    "bincount-weights": lambda x: np.bincount(np.ravel(x * 4).astype(np.intp), weights=np.ravel(x)),
    "if": lambda x: x if np.median(x) > 0.5 else -x,
    "float": lambda x: float(np.quantile(x, 0.5)),
}


@pytest.mark.parametrize("name", list(REFUSED))
@pytest.mark.parametrize("transform", ["plain", "vmap"])
def test_what_depends_on_the_values_is_refused(name: str, transform: str) -> None:
    f = REFUSED[name] if transform == "plain" else ng.vmap(REFUSED[name])
    x = ng.ShapeDtype((3, 4), np.float64)
    with pytest.raises(ShapeOnlyError if transform == "plain" else (ShapeOnlyError, BatchingError)):
        ng.eval_shape(f, x)  # (under vmap an if on a value is refused as eager vmap refuses it)


def test_the_refusal_of_computed_bins_says_why() -> None:
    x = ng.ShapeDtype((3, 4), np.float32)
    with pytest.raises(ShapeOnlyError, match=re.escape("np.histogram with bins='auto' under eval_shape")):
        ng.eval_shape(lambda x: np.histogram(x, bins="auto"), x)
