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

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import nodegrad as ng
import nodegrad.scipy.linalg as sla
from nodegrad.engine.batched import plain_map
from nodegrad.errors import ShapeError
from nodegrad.ops import REGISTRY, batching
from nodegrad.ops.linalg import roots
from tests.ops import specs_linalg, specs_scipy_linalg
from tests.ops.harness import Case
from tests.ops.vmap_harness import (
    assert_same,
    check_closure,
    check_forward,
    check_grad_of_vmap,
    check_vmap_of_grad,
    loop_and_vmap,
    per_example_spy,
    shrinking,
    spec_test,
    stacked,
    weighted_sum,
)

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
#: Every example scaled alike (the specs' orders and gaps kept), every operand perhaps unbatched.
DRAW = {"factor": shrinking, "unbatched": True}
FAST = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


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


@pytest.fixture(autouse=True)
def _ruled_ops_never_loop() -> Iterator[None]:
    with per_example_spy(RULED):
        yield


test_vmap_matches_a_loop = spec_test(check_forward, SPECS, FAST, **DRAW)
test_vmap_of_grad_matches_a_loop = spec_test(check_vmap_of_grad, SPECS, FAST, **DRAW)
test_grad_of_vmap_matches_the_loop = spec_test(check_grad_of_vmap, SPECS, FAST, **DRAW)
test_a_batched_value_reaching_the_op_from_an_enclosing_vmap = spec_test(check_closure, SPECS, FAST, **DRAW)


# -- the public functions, one by one ----------------------------------------------------------------

RNG = np.random.default_rng(11)
MATRICES = RNG.normal(size=(3, 4, 4)) + 4 * np.eye(4)
SPD = MATRICES @ np.swapaxes(MATRICES, -1, -2)
VECTORS = RNG.normal(size=(3, 4))
WIDE = RNG.normal(size=(3, 4, 6))


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
    loop_and_vmap(ng.grad(lambda *a: weighted_sum(fun(*a)), argnums=tuple(range(len(args)))), *args)


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
    with per_example_spy() as seen:
        out = ng.vmap(roots)(p)
    assert_same(out, stacked([roots(q) for q in p]), "roots")
    assert seen == {"roots"}
    loop_and_vmap(ng.grad(lambda q: weighted_sum(roots(q))), p)
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
    f = ng.grad(lambda m: weighted_sum(np.linalg.svd(m, full_matrices=False)[0] ** 2) + np.sum(np.linalg.svd(m)[1]))
    assert_same(ng.vmap(ng.vmap(f))(a), stacked([stacked([f(m) for m in row]) for row in a]), "svd")


def test_every_ruled_op_is_registered_with_its_rule() -> None:
    assert {"matmul", "einsum", "det", "solve", "eigh_vectors", "svd_vh", "expm", "lu_factor"} <= RULED
    for name in RULED | LOOPED:
        assert batching.rule_of(REGISTRY[name]) is not None, name
    for name in LOOPED:
        assert batching.rule_of(REGISTRY[name]) is batching.loop, name
