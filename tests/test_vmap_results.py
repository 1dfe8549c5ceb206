"""What ``ng.vmap`` returns, and what it raises, against a Python loop and ``np.stack``.

* The dtype of every leaf of a vmapped transform's result (``grad``, ``value_and_grad``,
  ``jvp``, ``jacfwd``, ``jacrev``, ``hessian``) is the loop's, for float32 and float64
  arguments held in arrays, dicts and attrs records, including functions whose rules
  compute in float64 (a float64 constant, ``cholesky``, ``entr``).
* An axis-taking function (reductions, ``arg*``, ``sort``, ``cumsum``, ``concatenate``,
  ``stack``, ``take``...) called with every axis in ``range(-ndim - 1, ndim + 1)`` gives
  the loop's result, or raises an error of the loop's kind (numpy's ``AxisError`` where
  the loop raises it, never a wrapped-round axis).
* A result that does not depend on the example (a Python ``True``, an int, a float, a
  complex, a numpy scalar, a constant array) is batched as ``np.stack`` of the loop's
  results batches it, along ``out_axes``, chunked or not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
import nodegrad.scipy.special as sps
from nodegrad.engine.structure import flatten

RNG = np.random.default_rng(35)


def _stacked(results: list[Any], axis: int = 0) -> Any:
    """The loop's results stacked leaf by leaf (static leaves kept), as ``np.stack`` does."""
    first, treedef = flatten(results[0])
    rows = [flatten(r)[0] for r in results]
    statics = treedef.static_leaves()
    leaves = [
        first[k] if statics[k] else np.stack([np.asarray(row[k]) for row in rows], axis=axis) for k in range(len(first))
    ]
    return leaves[0] if len(leaves) == 1 and not statics[0] and results[0] is first[0] else treedef.unflatten(leaves)


def _same(got: Any, expected: Any, what: str) -> None:
    got_paths: list[str] = []
    expected_paths: list[str] = []
    got_leaves, _ = flatten(got, got_paths)
    expected_leaves, _ = flatten(expected, expected_paths)
    assert type(got) is type(expected), f"{what}: {type(got).__name__}, the loop's {type(expected).__name__}"
    assert got_paths == expected_paths, f"{what}: {got!r} against {expected!r}"
    for k, (g, e) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        assert type(g) is type(e), f"{what}[{k}]: {type(g).__name__}, the loop's {type(e).__name__}"
        if isinstance(e, np.ndarray):
            assert g.dtype == e.dtype, f"{what}[{k}] is {g.dtype}, the loop's {e.dtype}"
            assert g.shape == e.shape, f"{what}[{k}] has shape {g.shape}, the loop's {e.shape}"
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=f"{what}[{k}]")
        else:
            assert g == e, f"{what}[{k}]: {g!r}, the loop's {e!r}"


# -- dtypes of the transforms' results -------------------------------------------------------------------


@attrs.frozen
class Params:
    w: Any
    b: Any
    name: str = ng.field(static=True, default="params")


def _matrix(p: Any) -> Any:
    return p["w"] if isinstance(p, dict) else p.w if isinstance(p, Params) else p


def _offset(p: Any) -> Any:
    return np.sum(p["b"]) if isinstance(p, dict) else np.sum(p.b) if isinstance(p, Params) else 0.0


LOSSES: dict[str, Callable[[Any], Any]] = {
    "tanh": lambda p: np.sum(np.tanh(_matrix(p)) * 1.5) + _offset(p),
    "a float64 constant": lambda p: np.sum(_matrix(p) * np.arange(4.0).reshape(2, 2)) + _offset(p),
    "cholesky": lambda p: np.sum(np.linalg.cholesky(_matrix(p))) + _offset(p),  # its rule computes in float64
    "entr": lambda p: np.sum(sps.entr(_matrix(p))) * _offset(p),  # as does this one's
    "constant": lambda p: np.float64(2.0),
}


def _transforms(loss: Callable[[Any], Any], tangent: Any) -> dict[str, Callable[[Any], Any]]:
    return {
        "grad": ng.grad(loss),
        "value_and_grad": ng.value_and_grad(loss),
        "jacrev": ng.jacrev(loss),
        "jacfwd": ng.jacfwd(loss),
        "hessian": ng.hessian(loss),
        "jvp": lambda p: ng.jvp(loss, (p,), (tangent,)),
    }


def _batch(kind: str, dtype: Any, size: int = 3) -> tuple[Any, list[Any], Any]:
    """A batch of parameters of ``kind`` in ``dtype``, its examples, and a tangent of one."""
    noise = np.abs(RNG.standard_normal((size, 2, 2)))
    w = (2 * np.eye(2) + 0.3 * (noise + np.swapaxes(noise, 1, 2))).astype(dtype)  # positive, and definite
    b = RNG.standard_normal((size, 3)).astype(dtype)
    if kind == "array":
        return w, list(w), np.ones((2, 2), dtype)
    if kind == "dict":
        return {"w": w, "b": b}, [{"w": w[k], "b": b[k]} for k in range(size)], {"w": np.ones((2, 2), dtype), "b": b[0]}
    return Params(w, b), [Params(w[k], b[k]) for k in range(size)], Params(np.ones((2, 2), dtype), b[0])


@pytest.mark.parametrize("kind", ["array", "dict", "record"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_the_dtypes_of_vmapped_transforms_are_the_loops(loss: str, dtype: Any, kind: str) -> None:
    batched, examples, tangent = _batch(kind, dtype)
    for name, transform in _transforms(LOSSES[loss], tangent).items():
        expected = _stacked([transform(e) for e in examples])
        _same(ng.vmap(transform)(batched), expected, f"vmap({name}) of {loss}, {np.dtype(dtype)} {kind}")


def test_a_batched_gradient_of_a_float32_argument_is_float32() -> None:
    a = np.array([[2.0, 0.3], [0.3, 1.0]], np.float32)
    loss = lambda m: np.sum(np.linalg.cholesky(m)) * np.float64(1.5)
    assert ng.grad(loss)(a).dtype == np.float32
    assert ng.vmap(ng.grad(loss))(np.stack([a, 0.9 * a])).dtype == np.float32


# -- axes out of range -------------------------------------------------------------------------------------

AXIS_FUNCTIONS: dict[str, Callable[[Any, int], Any]] = {
    "sum": lambda v, axis: np.sum(v, axis=axis),
    "sum keepdims": lambda v, axis: np.sum(v, axis=axis, keepdims=True),
    "sum over (0, axis)": lambda v, axis: np.sum(v, axis=(0, axis)),
    "x.sum": lambda v, axis: v.sum(axis=axis),
    "mean": lambda v, axis: np.mean(v, axis=axis),
    "prod": lambda v, axis: np.prod(v, axis=axis),
    "max": lambda v, axis: np.max(v, axis=axis),
    "x.min": lambda v, axis: v.min(axis=axis),
    "std": lambda v, axis: np.std(v, axis=axis),
    "var": lambda v, axis: np.var(v, axis=axis),
    "ptp": lambda v, axis: np.ptp(v, axis=axis),
    "average": lambda v, axis: np.average(v, axis=axis),
    "nansum": lambda v, axis: np.nansum(v, axis=axis),
    "norm": lambda v, axis: np.linalg.norm(v, axis=axis),
    "logsumexp": lambda v, axis: sps.logsumexp(v, axis=axis),
    "softmax": lambda v, axis: sps.softmax(v, axis=axis),
    "argmax": lambda v, axis: np.argmax(v, axis=axis),
    "argmin": lambda v, axis: np.argmin(v, axis=axis),
    "x.argmax": lambda v, axis: v.argmax(axis=axis),
    "argsort": lambda v, axis: np.argsort(v, axis=axis),
    "count_nonzero": lambda v, axis: np.count_nonzero(v > 0, axis=axis),
    "cumsum": lambda v, axis: np.cumsum(v, axis=axis),
    "x.cumsum": lambda v, axis: v.cumsum(axis=axis),
    "cumprod": lambda v, axis: np.cumprod(v, axis=axis),
    "cumulative_sum": lambda v, axis: np.cumulative_sum(v, axis=axis),
    "sort": lambda v, axis: np.sort(v, axis=axis),
    "flip": lambda v, axis: np.flip(v, axis=axis),
    "roll": lambda v, axis: np.roll(v, 1, axis=axis),
    "diff": lambda v, axis: np.diff(v, axis=axis),
    "gradient": lambda v, axis: np.gradient(v, axis=axis),
    "trapezoid": lambda v, axis: np.trapezoid(v, axis=axis),
    "fft": lambda v, axis: np.fft.fft(v, axis=axis),
    "expand_dims": lambda v, axis: np.expand_dims(v, axis),
    "squeeze": lambda v, axis: np.squeeze(v[..., :1], axis=axis),
    "moveaxis": lambda v, axis: np.moveaxis(v, axis, 0),
    "swapaxes": lambda v, axis: np.swapaxes(v, axis, 0),
    "repeat": lambda v, axis: np.repeat(v, 2, axis=axis),
    "concatenate": lambda v, axis: np.concatenate([v, 2 * v], axis=axis),
    "append": lambda v, axis: np.append(v, v, axis=axis),
    "stack": lambda v, axis: np.stack([v, 2 * v], axis=axis),
    "split": lambda v, axis: np.split(v, 1, axis=axis),
    "take": lambda v, axis: np.take(v, [0, 1], axis=axis),
    "take one": lambda v, axis: np.take(v, 0, axis=axis),
    "take_along_axis": lambda v, axis: np.take_along_axis(v, np.zeros((1,) * v.ndim, int), axis=axis),
    "insert": lambda v, axis: np.insert(v, 0, 1.0, axis=axis),
    "delete": lambda v, axis: np.delete(v, 0, axis=axis),
}
DATA = RNG.standard_normal((3, 2, 3, 4))


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # the loop's exception is the oracle
        return exc


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(AXIS_FUNCTIONS))
def test_an_axis_is_read_as_one_examples_axis(name: str, ndim: int) -> None:
    x = DATA[(slice(None),) + (0,) * (3 - ndim)]
    for axis in range(-ndim - 1, ndim + 1):
        fun = lambda v, axis=axis: AXIS_FUNCTIONS[name](v, axis)
        expected = _outcome(lambda fun=fun: _stacked([fun(e) for e in x]))
        got = _outcome(lambda fun=fun: ng.vmap(fun)(x))
        what = f"{name}, axis {axis} of an example of {ndim} dimensions"
        if isinstance(expected, Exception):
            assert isinstance(got, type(expected)), f"{what}: the loop raises {expected!r}, vmap gives {got!r}"
            assert not isinstance(expected, np.exceptions.AxisError) or isinstance(got, ng.errors.AxisError), what
        else:
            assert not isinstance(got, Exception), f"{what}: the loop gives a result, vmap raises {got!r}"
            _same(got, expected, what)


def test_an_axis_error_names_the_function() -> None:
    x = np.ones((3, 4))
    for fun, name in ((np.argmax, "np.argmax"), (np.argsort, "np.argsort"), (np.cumsum, "cumsum"), (np.sum, "sum")):
        with pytest.raises(ng.errors.AxisError, match=f"{name}: axis 1 is out of range"):
            ng.vmap(lambda v, fun=fun: fun(v, axis=1))(x)
    with pytest.raises(np.exceptions.AxisError):  # numpy's own, caught as numpy's
        ng.grad(lambda v: np.sum(np.cumsum(v, axis=2)))(np.ones((2, 2)))


# -- results that do not depend on the example ---------------------------------------------------------------

CONSTANTS: dict[str, Callable[[Any], Any]] = {
    "True": lambda v: True,
    "an int": lambda v: 3,
    "a float": lambda v: 1.5,
    "a complex": lambda v: 2j,
    "a numpy float32": lambda v: np.float32(2.0),
    "a numpy bool": lambda v: np.True_,
    "a 0-d array": lambda v: np.array(4, np.int8),
    "a constant array": lambda v: np.ones(2, bool),
    "beside a batched one": lambda v: (v.sum(), False, "tag"),
    "in a dict": lambda v: {"flag": True, "n": 7, "name": "x", "none": None},
}


@pytest.mark.parametrize(("out_axes", "chunk_size"), [(0, None), (-1, None), (0, 2)])
@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_a_result_the_same_for_every_example_is_batched_like_the_loops(
    name: str, out_axes: int, chunk_size: int | None
) -> None:
    fun, x = CONSTANTS[name], np.arange(12.0).reshape(3, 4)
    results = [fun(e) for e in x]
    leaves = [flatten(r)[0] for r in results]
    first, treedef = flatten(results[0])

    def stacked(k: int) -> Any:
        if not isinstance(first[k], (np.ndarray, np.generic, bool, int, float, complex)):
            return first[k]  # a string, None: the same value, not batched
        return np.stack([np.asarray(row[k]) for row in leaves], axis=out_axes)

    expected = treedef.unflatten([stacked(k) for k in range(len(first))]) if len(first) > 1 else stacked(0)
    if not isinstance(results[0], (tuple, dict)):
        expected = stacked(0)
    _same(ng.vmap(fun, out_axes=out_axes, chunk_size=chunk_size)(x), expected, f"{name}, out_axes {out_axes}")
