"""What the tests of ``ng.vmap`` over the op specs share: a batch of examples drawn from a
:class:`~tests.ops.harness.Case`, the Python loops they are checked against, the
comparison, and a spy on the per-example fallback.

A batch has ``B`` examples (``B`` in {1, 3}): the case's operands scaled by factors close
to 1 (a different factor per example, so that examples a rule mixes up give different
numbers), each operand batched along an axis drawn from {0, 1, -1, None} (1 and -1 only for
an operand whose examples have an axis). The checks, each against a loop over the examples
and to 1e-12 (relative and absolute, NaN equal to NaN, the same dtype, nothing left traced):

* :func:`check_forward`: ``vmap(case.fn)`` against stacking ``case.fn`` per example;
* :func:`check_vmap_of_grad`: ``vmap(grad(loss))`` against a loop of ``grad(loss)``;
* :func:`check_grad_of_vmap`: ``grad`` of a weighted sum of ``vmap(case.fn)`` against the
  gradient of the same sum taken example by example, each example weighted differently;
* :func:`check_closure`: a batched value reaching the op from an enclosing ``vmap`` through
  a nested one, against a loop of loops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import nodegrad as ng
import nodegrad.ops.index
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.ops import batching
from tests.ops.harness import Case

TOLERANCE = {"rtol": 1e-12, "atol": 1e-12, "equal_nan": True}


# -- the batch ------------------------------------------------------------------------------------


def shrinking(b: int, k: int) -> float:
    """Example ``b`` of every operand scaled alike, a little less each example: spectra,
    pivots, signs, zeros and orders the spec draws keep their order and separation."""
    return 1 - 0.07 * b


def alternating(b: int, k: int) -> float:
    """The scale of example ``b`` of operand ``k``: 1 for the drawn example, otherwise
    within 5% of it and different for neighbouring operands."""
    return 1.0 + 0.015 * b * (-1) ** (b + k)


@dataclasses.dataclass(frozen=True)
class Batch:
    """``examples[b]`` are example ``b``'s operands (an operand with in_axes ``None`` the
    same in every example), ``batched`` the arguments of the vmapped function."""

    size: int
    axes: tuple[Any, ...]
    examples: list[tuple[Any, ...]]
    batched: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"{self.size} examples, in_axes {self.axes}"


@st.composite
def batches(
    draw: st.DrawFn, case: Case, factor: Callable[[int, int], float] = alternating, unbatched: bool = False
) -> Batch:
    """A batch of the case's operands; with ``unbatched``, every operand may be unbatched
    (the vmap is then given ``axis_size``), else at least one is batched."""
    size = draw(st.sampled_from([1, 3]), label="B")
    axes: list[Any] = []
    for value in case.values:
        choices = [0, None, 1, -1] if np.ndim(value) >= 1 else [0, None]
        axes.append(draw(st.sampled_from(choices)))
    if not unbatched and all(a is None for a in axes):
        axes[draw(st.integers(0, len(axes) - 1))] = 0
    examples = [
        tuple(v if a is None else v * factor(b, k) for k, (v, a) in enumerate(zip(case.values, axes, strict=True)))
        for b in range(size)
    ]
    batched = tuple(
        v if a is None else np.stack([np.asarray(examples[b][k]) for b in range(size)], axis=a)
        for k, (v, a) in enumerate(zip(case.values, axes, strict=True))
    )
    return Batch(size, tuple(axes), examples, batched)


def draw_case(data: st.DataObject, spec: st.SearchStrategy[Case], **options: Any) -> tuple[Case, Batch]:
    """A case of the spec and a batch of it (``options`` as :func:`batches` takes them)."""
    case = data.draw(spec, label="case")
    return case, data.draw(batches(case, **options), label="batch")


def run_vmap(fun: Callable[..., Any], batch: Batch, batched: tuple[Any, ...] | None = None) -> Any:
    """``vmap(fun)`` of the batch's arguments (or of ``batched``, the same layout)."""
    size = batch.size if all(a is None for a in batch.axes) else None
    return ng.vmap(fun, in_axes=batch.axes, axis_size=size)(*(batch.batched if batched is None else batched))


# -- the loop's results and the comparison --------------------------------------------------------


def stacked(results: list[Any], axis: int = 0) -> Any:
    """Per-example results (arrays, numbers, or structures of them) stacked leaf by leaf."""
    leaves = [flatten(r)[0] for r in results]
    _, treedef = flatten(results[0])
    out = [np.stack([np.asarray(r[k]) for r in leaves], axis=axis) for k in range(len(leaves[0]))]
    return out[0] if treedef is LEAF else treedef.unflatten(out)


def assert_same(got: Any, expected: Any, what: str = "", tolerance: dict[str, Any] | None = None) -> None:
    """The same structure, and leaf by leaf the same shape and dtype, nothing traced, equal to
    1e-12 (or ``tolerance``)."""
    got_paths: list[str] = []
    expected_paths: list[str] = []
    got_leaves, got_def = flatten(got, got_paths)
    expected_leaves, expected_def = flatten(expected, expected_paths)
    same_kind = got_def is expected_def is LEAF or type(got) is type(expected)  # a number's type is its dtype
    assert same_kind and got_paths == expected_paths, f"{what}: {got!r} against {expected!r}"
    for k, (g, e) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        assert type(g) is not ng.Traced, f"{what}[{k}] is still traced"
        assert np.shape(g) == np.shape(e), f"{what}[{k}] has shape {np.shape(g)}, the loop {np.shape(e)}"
        dtypes = np.result_type(g), np.result_type(e)
        assert dtypes[0] == dtypes[1], f"{what}[{k}] is {dtypes[0]}, the loop's {dtypes[1]}"
        np.testing.assert_allclose(g, e, **(tolerance or TOLERANCE), err_msg=f"{what}[{k}]")


def weights(shape: tuple[int, ...]) -> np.ndarray:
    """Fixed weights of that shape: no two alike, none zero (a gradient of their sum is not
    blind to a permutation, as the plain sum of a softmax is)."""
    return (0.5 + np.cos(1.0 + np.arange(int(np.prod(shape, dtype=np.int64))))).reshape(shape)


def weighted_sum(out: Any, examples: bool = False) -> Any:
    """The weighted sum of a result's real part (of its float and complex leaves, where it
    has several). With ``examples``, ``out`` stacks examples along its first axis: each
    example weighted as :func:`weighted_sum` weights it, times ``b + 1`` for example ``b``
    (the loop's :func:`example_loss`)."""
    leaves, treedef = flatten(out)
    if treedef is not LEAF:
        return sum(weighted_sum(o, examples) for o in leaves if np.result_type(o).kind in "fc")
    if not examples:
        return np.sum(np.real(out) * weights(np.shape(out)))
    shape = np.shape(out)
    each = np.arange(1.0, shape[0] + 1).reshape(-1, *(1,) * (len(shape) - 1))
    return np.sum(np.real(out) * (weights(shape[1:]) * each))


def example_loss(fun: Callable[..., Any], b: int = 0) -> Callable[..., Any]:
    """The weighted sum of ``fun``'s result for example ``b`` of a batch."""
    return lambda *values: (b + 1.0) * weighted_sum(fun(*values))


# -- the checks -----------------------------------------------------------------------------------


def check_forward(name: str, case: Case, batch: Batch) -> None:
    expected = stacked([case.fn(*e) for e in batch.examples])
    assert_same(run_vmap(case.fn, batch), expected, f"{name}: vmap, {batch}")


def check_vmap_of_grad(name: str, case: Case, batch: Batch) -> None:
    grad = ng.grad(example_loss(case.fn), argnums=case.argnums)
    expected = stacked([grad(*e) for e in batch.examples])
    assert_same(run_vmap(grad, batch), expected, f"{name}: vmap of grad, {batch}")


def check_grad_of_vmap(name: str, case: Case, batch: Batch) -> None:
    total = ng.grad(lambda *v: weighted_sum(run_vmap(case.fn, batch, v), examples=True), argnums=case.argnums)
    got = total(*batch.batched)
    grads = [ng.grad(example_loss(case.fn, b), argnums=case.argnums)(*e) for b, e in enumerate(batch.examples)]
    for k, j in enumerate(case.argnums):
        mine = got[k] if isinstance(got, tuple) else got
        theirs = [g[k] if isinstance(g, tuple) else g for g in grads]
        expected = sum(theirs[1:], theirs[0]) if batch.axes[j] is None else stacked(theirs, batch.axes[j])
        assert_same(mine, expected, f"{name}: grad of vmap, operand {j}, {batch}")


def check_closure(name: str, case: Case, batch: Batch) -> None:
    """Inside ``vmap`` over the batch, a nested ``vmap`` scales one operand: the outer
    example's operands are closed over."""
    scales = np.array([1.0, 0.9])
    first = next((j for j, a in enumerate(batch.axes) if a is not None), 0)

    def scaled_call(values: tuple[Any, ...], c: Any) -> Any:
        return case.fn(*(v * c if j == first else v for j, v in enumerate(values)))

    def inner(*values: Any) -> Any:
        return ng.vmap(lambda c: scaled_call(values, c))(scales)

    expected = stacked([stacked([scaled_call(e, c) for c in scales]) for e in batch.examples])
    assert_same(run_vmap(inner, batch), expected, f"{name}: closure, {batch}")


def spec_test(check: Callable[[str, Case, Batch], None], specs: dict[str, Any], config: Any, **options: Any) -> Any:
    """A test of ``check`` on a case and batch drawn (``options`` as :func:`batches` takes
    them) for each spec, with the hypothesis settings ``config``: assign it to a module's
    ``test_...`` name."""

    @pytest.mark.parametrize("name", sorted(specs))
    @config
    @given(data=st.data())
    def test(name: str, data: st.DataObject) -> None:
        check(name, *draw_case(data, specs[name], **options))

    test.__name__ = test.__qualname__ = f"test_{check.__name__}"
    return test


def loop_and_vmap(fun: Callable[..., Any], *args: Any, in_axes: Any = 0) -> None:
    """``vmap(fun, in_axes)`` of ``args`` against a loop over their examples."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    examples = [
        tuple(a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes, strict=True))
        for b in range(size)
    ]
    assert_same(ng.vmap(fun, in_axes=in_axes)(*args), stacked([fun(*e) for e in examples]), f"{fun}, {in_axes}")


# -- the per-example fallback ---------------------------------------------------------------------


@contextmanager
def per_example_spy(refused: Collection[str] | None = ()) -> Iterator[set[str]]:
    """The names of the ops run once per example while inside; running one of ``refused``
    (``None``: any op) that way raises ``AssertionError``, and fails on leaving should the
    op's caller have swallowed the error."""
    seen: set[str] = set()
    original = batching.per_example

    def spy(op: Any, *args: Any, **kwargs: Any) -> Any:
        seen.add(op.name)
        if refused is None or op.name in refused:
            raise AssertionError(f"{op.name} ran once per example")
        return original(op, *args, **kwargs)

    # nodegrad.ops.index calls it by a name of its own.
    with mock.patch.object(batching, "per_example", spy), mock.patch.object(nodegrad.ops.index, "per_example", spy):
        yield seen
    bad = seen if refused is None else seen & set(refused)
    assert not bad, f"run once per example: {sorted(bad)}"
