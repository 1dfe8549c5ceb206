"""``ng.vmap`` of the linear algebra ops (numpy's and scipy's) against a Python loop over the
examples.

Each op spec of the linalg and scipy.linalg families (see :mod:`tests.ops.harness`) is
drawn, its operands batched along an axis drawn from ``0, 1, -1, None`` (``1`` and ``-1``
only where an example has an axis), ``B`` examples in ``{1, 3}``, and compared to 1e-12
with stacking the results of a loop: the forward, ``vmap(grad)`` against a loop of
``grad``, ``grad(vmap)`` against the gradient of the loop, and a closure (a batched value
reaching the op from an enclosing ``vmap`` through a nested one). The ops with batching
rules of their own must not run once per example; ``roots`` and ``convolve`` (whose numpy
functions take one polynomial, two vectors) run once per example on purpose. The public
functions built on them (``np.linalg``'s array API, the scipy solves that take factors) are
checked one by one below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
import nodegrad.scipy.linalg as sla
from nodegrad.engine.batched import plain_map
from nodegrad.errors import ShapeError
from nodegrad.ops import REGISTRY, batching
from nodegrad.ops.linalg import roots
from tests.ops import specs_linalg, specs_scipy_linalg
from tests.ops.harness import Case

#: Run once per example on purpose: their numpy functions take one operand, not a stack.
LOOPED = {"roots", "convolve"}
#: The ops given batching rules of their own: none may run once per example.
RULED = {name for name, op in REGISTRY.items() if op.family in ("linalg", "scipy.linalg")} - LOOPED
SPECS: dict[str, st.SearchStrategy[Case]] = {
    **specs_linalg.SPECS,
    **specs_linalg.COMPOSITES,
    **{f"{name} (broadcast)": spec for name, spec in specs_linalg.BROADCASTING.items()},
    **specs_scipy_linalg.SPECS,
    **{f"{name} (broadcast)": spec for name, spec in specs_scipy_linalg.BROADCASTING.items()},
}
NAMES = sorted(SPECS)
FAST = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


def close(actual: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            close(a, e)
        return
    assert np.shape(actual) == np.shape(expected)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def stacked(results: list[Any], axis: int = 0) -> Any:
    if isinstance(results[0], tuple):
        return tuple(stacked([r[k] for r in results], axis) for k in range(len(results[0])))
    return np.stack([np.asarray(r) for r in results], axis=axis)


def scalar(out: Any, examples: int = 0) -> Any:
    """A weighted sum of a result's real part: weights that differ entry by entry, so that a
    gradient is not blind to a permutation; with ``examples`` leading axes of examples, the
    same weights for each (the sum of each example's ``scalar``)."""
    if isinstance(out, tuple):
        return sum(scalar(o, examples) for o in out if np.result_type(o).kind in "fc")
    shape = np.shape(out)[examples:]
    weights = np.cos(np.arange(math.prod(shape))).reshape(shape) + 0.5
    return np.sum(np.real(out) * weights)


@pytest.fixture(autouse=True)
def _specs_on_batched_values() -> Iterator[None]:
    """The specs order eigenvalues and roots with ``np.lexsort`` of their plain values,
    which a batched value refuses: here of every example's. And they take ``np.imag`` of
    real results, which recurses on a batched value (``nodegrad.ops.elementwise.imag`` calls
    ``np.imag`` of it again): here zeros shaped like it."""
    parts = specs_linalg._parts

    def ordered(values: Any) -> Any:
        return plain_map(lambda v: np.lexsort((np.imag(v), np.real(v)), axis=-1), values)

    def real_parts(y: Any) -> Any:
        return parts(y) if np.iscomplexobj(y) else np.stack([y, np.zeros(np.shape(y), np.result_type(y))])

    with mock.patch.object(specs_linalg, "_ordered", ordered), mock.patch.object(specs_linalg, "_parts", real_parts):
        yield


@contextmanager
def looped_ops() -> Iterator[set[str]]:
    """The names of the ops that run once per example while inside."""
    seen: set[str] = set()
    original = batching.per_example

    def spy(op: Any, *args: Any, **kwargs: Any) -> Any:
        seen.add(op.name)
        return original(op, *args, **kwargs)

    with mock.patch.object(batching, "per_example", spy):
        yield seen


@st.composite
def batched_cases(
    draw: st.DrawFn, name: str
) -> tuple[Case, int, tuple[Any, ...], list[tuple[Any, ...]], tuple[Any, ...]]:
    """A case, B, the vmap in_axes per operand, the examples' operands and the batched ones."""
    case = draw(SPECS[name])
    size = draw(st.sampled_from([1, 3]))
    axes: list[Any] = []
    for v in case.values:
        choices = [0, None] + ([1, -1] if np.ndim(v) >= 1 else [])
        axes.append(draw(st.sampled_from(choices)))
    # Each example scaled a little differently: the spectra, pivots and signs the spec draws
    # keep their order and separation, and a mixed-up example shows.
    examples = [
        tuple(v if a is None else v * (1 - 0.07 * k) for v, a in zip(case.values, axes, strict=True))
        for k in range(size)
    ]
    batched = tuple(
        v if a is None else np.stack([np.asarray(e[j]) for e in examples], axis=a)
        for j, (v, a) in enumerate(zip(case.values, axes, strict=True))
    )
    return case, size, tuple(axes), examples, batched


def run_vmap(fun: Callable[..., Any], axes: tuple[Any, ...], size: int, batched: tuple[Any, ...]) -> Any:
    return ng.vmap(fun, in_axes=axes, axis_size=size if all(a is None for a in axes) else None)(*batched)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_vmap_matches_a_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    with looped_ops() as seen:
        out = run_vmap(case.fn, axes, size, batched)
    close(out, stacked([case.fn(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_vmap_of_grad_matches_a_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    gradient = ng.grad(lambda *v: scalar(case.fn(*v)), argnums=case.argnums)
    with looped_ops() as seen:
        out = run_vmap(gradient, axes, size, batched)
    close(out, stacked([gradient(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_grad_of_vmap_matches_the_loop(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    with looped_ops() as seen:
        total = ng.grad(lambda *v: scalar(run_vmap(case.fn, axes, size, v), 1), argnums=case.argnums)(*batched)
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"
    per_example = ng.grad(lambda *v: scalar(case.fn(*v)), argnums=case.argnums)
    grads = [per_example(*e) for e in examples]
    for k, j in enumerate(case.argnums):
        mine = total[k] if isinstance(total, tuple) else total
        theirs = [g[k] if isinstance(g, tuple) else g for g in grads]
        expected = sum(theirs[1:], theirs[0]) if axes[j] is None else stacked(theirs, axes[j])
        close(mine, expected)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_a_batched_value_reaching_the_op_from_an_enclosing_vmap(name: str, data: st.DataObject) -> None:
    case, size, axes, examples, batched = data.draw(batched_cases(name))
    scales = np.array([1.0, 0.9])
    first = next((j for j, a in enumerate(axes) if a is not None), 0)

    def inner(*values: Any) -> Any:
        # The outer example's operands are closed over; the inner vmap scales one of them.
        def scaled(c: Any) -> Any:
            return case.fn(*(v * c if j == first else v for j, v in enumerate(values)))

        return ng.vmap(scaled)(scales)

    out = run_vmap(inner, axes, size, batched)
    expected = stacked([stacked([case.fn(*(v * c if j == first else v for j, v in enumerate(e))) for c in scales])
                        for e in examples])  # fmt: skip
    close(out, expected)


# -- the public functions, one by one ----------------------------------------------------------------

RNG = np.random.default_rng(11)
MATRICES = RNG.normal(size=(3, 4, 4)) + 4 * np.eye(4)
SPD = MATRICES @ np.swapaxes(MATRICES, -1, -2)
VECTORS = RNG.normal(size=(3, 4))
WIDE = RNG.normal(size=(3, 4, 6))


def loop_and_vmap(fun: Callable[..., Any], *args: Any, in_axes: Any = 0) -> None:
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    examples = [
        tuple(a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes, strict=True))
        for b in range(size)
    ]
    with looped_ops() as seen:
        out = ng.vmap(fun, in_axes=in_axes)(*args)
    close(out, stacked([fun(*e) for e in examples]))
    assert not seen & RULED, f"run once per example: {sorted(seen & RULED)}"


@pytest.mark.parametrize(
    ("fun", "args"),
    [
        (np.matmul, (MATRICES, VECTORS)),
        (np.dot, (MATRICES, VECTORS)),
        (np.dot, (VECTORS, VECTORS)),
        (np.inner, (VECTORS, MATRICES)),
        (np.outer, (VECTORS, VECTORS)),
        (lambda a, b: np.tensordot(a, b, axes=1), (MATRICES, WIDE)),
        (lambda a, b: np.einsum("ij,jk->ki", a, b), (MATRICES, WIDE)),
        (np.trace, (MATRICES,)),
        (np.linalg.matmul, (MATRICES, WIDE)),
        (np.linalg.outer, (VECTORS, VECTORS)),
        (np.linalg.trace, (WIDE,)),
        (np.linalg.diagonal, (WIDE,)),
        (np.linalg.vecdot, (VECTORS, VECTORS)),
        (np.linalg.matrix_transpose, (WIDE,)),
        (lambda a, b, c: np.linalg.multi_dot([a, b, c]), (MATRICES, MATRICES, VECTORS)),
        (np.linalg.cond, (MATRICES,)),
        (lambda a: np.linalg.cond(a, 1), (MATRICES,)),
        (lambda a: np.linalg.slogdet(a), (MATRICES,)),
        (lambda a: np.linalg.lstsq(a, a[:, 0])[0], (np.swapaxes(WIDE, -1, -2),)),
        (lambda a: np.linalg.matrix_power(a, -2), (MATRICES,)),
        (lambda a, b: np.linalg.tensorsolve(a.reshape(4, 2, 2), b), (MATRICES, VECTORS)),
        (lambda a, b: sla.lu_solve(sla.lu_factor(a), b), (MATRICES, VECTORS)),
        (lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=1), (MATRICES, VECTORS)),
        (lambda a, b: sla.cho_solve(sla.cho_factor(a), b), (SPD, VECTORS)),
        (lambda a, b: sla.solve(a, b, assume_a="pos"), (SPD, VECTORS)),
        (lambda a: sla.inv(a, assume_a="sym"), (SPD,)),
        (sla.det, (MATRICES,)),
        (sla.block_diag, (MATRICES, WIDE)),
    ],
)
def test_public_functions(fun: Callable[..., Any], args: tuple[Any, ...]) -> None:
    loop_and_vmap(fun, *args)
    loop_and_vmap(ng.grad(lambda *a: scalar(fun(*a)), argnums=tuple(range(len(args)))), *args)


def test_plain_results_of_batched_values() -> None:
    # numpy's own answers where nodegrad gives no gradient, and the plain data (signs, pivots).
    loop_and_vmap(lambda a: np.linalg.qr(a, mode="complete"), np.swapaxes(WIDE, -1, -2))
    loop_and_vmap(lambda a: np.linalg.qr(a, mode="raw"), WIDE)
    loop_and_vmap(sla.lu_factor, MATRICES)
    loop_and_vmap(lambda a: np.linalg.slogdet(a)[0], MATRICES * np.array([1, -1, 1])[:, None, None])


def test_solves_with_one_side_not_batched() -> None:
    for solve in (np.linalg.solve, sla.solve_triangular, lambda a, b: sla.solve_triangular(a, b, lower=True)):
        loop_and_vmap(solve, MATRICES[0], VECTORS, in_axes=(None, 0))
        loop_and_vmap(solve, MATRICES, VECTORS[0], in_axes=(0, None))
        loop_and_vmap(solve, MATRICES, WIDE[0], in_axes=(0, None))
        loop_and_vmap(solve, MATRICES[None, 0], WIDE, in_axes=(None, 0))  # a stack of one matrix in each example


def test_roots_and_convolve_run_once_per_example() -> None:
    p = RNG.normal(size=(3, 4))
    with looped_ops() as seen:
        out = ng.vmap(roots)(p)
    close(out, stacked([roots(q) for q in p]))
    assert seen == {"roots"}
    loop_and_vmap(ng.grad(lambda q: scalar(roots(q))), p)
    loop_and_vmap(lambda a, v: ng.ops.linalg.products.convolve(a, v), p, VECTORS)


def test_roots_of_different_numbers_are_refused() -> None:
    p = np.array([[1.0, -3.0, 2.0], [0.0, 1.0, 2.0]])  # numpy drops the leading zero: 2 roots and 1
    with pytest.raises(ShapeError, match="roots"):
        ng.vmap(roots)(p)


def test_lstsq_with_ranks_that_differ_between_examples_is_refused() -> None:
    a = np.stack([np.eye(3)[:, :2], np.zeros((3, 2))])
    with pytest.raises(ShapeError, match="lstsq"):
        ng.vmap(lambda a: np.linalg.lstsq(a, np.ones(3)))(a)


def test_nested_vmap_of_grad_of_a_decomposition() -> None:
    # Two levels of examples in the rules that test the values (the SVD's separated values).
    a = RNG.normal(size=(2, 3, 4, 3))
    f = ng.grad(lambda m: scalar(np.linalg.svd(m, full_matrices=False)[0] ** 2) + np.sum(np.linalg.svd(m)[1]))
    close(ng.vmap(ng.vmap(f))(a), stacked([stacked([f(m) for m in row]) for row in a]))


def test_every_ruled_op_is_registered_with_its_rule() -> None:
    assert {"matmul", "einsum", "det", "solve", "eigh_vectors", "svd_vh", "expm", "lu_factor"} <= RULED
    for name in RULED | LOOPED:
        assert REGISTRY[name].batch is not None, name
    for name in LOOPED:
        assert REGISTRY[name].batch is batching.loop, name
