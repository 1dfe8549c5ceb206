"""``ng.vmap`` over every registered op, against a plain Python loop.

For every op spec (the ``SPECS`` of ``tests/ops/specs_<family>.py``, collected as
``test_ops.py`` collects them) a drawn :class:`~tests.ops.harness.Case` gives one example;
``B`` examples (``B`` in {1, 3}) are that example's float operands scaled by factors close
to 1 (a different factor per example and per operand, so examples or operands that a rule
mixes up give different numbers; positive factors near 1 keep the specs' domains: signs,
symmetry, definiteness, the gaps the specs leave), with the same static data. Each operand
is batched along an axis drawn from {0, 1, -1, None} (1 and -1 only for an operand whose
examples have an axis; at least one operand batched), and

* ``ng.vmap(case.fn, in_axes)`` equals ``np.stack`` of ``case.fn`` per example;
* ``ng.vmap(ng.grad(loss))``, the per-example gradient of ``np.sum(case.fn(...) * w)``
  with respect to the spec's differentiated operands, equals a loop of ``ng.grad``;

both in float64 to 1e-12 (relative and absolute, NaN equal to NaN). The registry itself is
checked too: the ops that run once per example (no batching rule of their own, or the
``loop`` rule) are under 5% of it, and each is named in ``docs/vmap.md``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.ops import REGISTRY, batching
from tests.ops.harness import Case
from tests.ops.test_ops import LEAF_OPS, SPECS

NAMES = sorted(SPECS)
TOLERANCE = {"rtol": 1e-12, "atol": 1e-12, "equal_nan": True}
#: A handful of draws per op: about 150 ops, two tests each, under a minute in all.
FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DOCS = Path(__file__).resolve().parents[2] / "docs" / "vmap.md"
BEGIN, END = "<!-- per-example ops -->", "<!-- end per-example ops -->"
#: Modules that register ops when they are imported (not with ``import nodegrad``).
LAZY_MODULES = (
    "nodegrad.scipy",
    "nodegrad.scipy.linalg",
    "nodegrad.scipy.special",
    "nodegrad.scipy.signal",
    "nodegrad.scipy.stats",
    "nodegrad.scipy.integrate",
)


# -- the batch ------------------------------------------------------------------------------------


def _factor(b: int, k: int) -> float:
    """The scale of example ``b`` of operand ``k``: 1 for the drawn example, otherwise
    within 5% of it and different for neighbouring operands."""
    return 1.0 + 0.015 * b * (-1) ** (b + k)


@st.composite
def _batches(draw: st.DrawFn, case: Case) -> tuple[int, tuple[Any, ...], list[tuple[Any, ...]], list[Any]]:
    """``(B, in_axes, examples, batched)``: ``examples[b]`` are example ``b``'s operands
    (an operand with in_axes ``None`` the same in every example), ``batched`` the arguments
    of the vmapped function."""
    size = draw(st.sampled_from([1, 3]), label="B")
    axes: list[Any] = []
    for value in case.values:
        choices = [0, None, 1, -1] if np.ndim(value) >= 1 else [0, None]
        axes.append(draw(st.sampled_from(choices)))
    if all(a is None for a in axes):
        axes[draw(st.integers(0, len(axes) - 1))] = 0
    examples = [
        tuple(v if a is None else v * _factor(b, k) for k, (v, a) in enumerate(zip(case.values, axes, strict=True)))
        for b in range(size)
    ]
    batched = [
        v if a is None else np.stack([np.asarray(examples[b][k]) for b in range(size)], axis=a)
        for k, (v, a) in enumerate(zip(case.values, axes, strict=True))
    ]
    return size, tuple(axes), examples, batched


def _stacked(results: list[Any]) -> Any:
    """Per-example results (arrays, numbers, or structures of them) stacked leaf by leaf."""
    leaves = [flatten(r)[0] for r in results]
    _, treedef = flatten(results[0])
    stacked = [np.stack([np.asarray(r[k]) for r in leaves]) for k in range(len(leaves[0]))]
    return stacked[0] if treedef is LEAF else treedef.unflatten(stacked)


def _assert_same(got: Any, expected: Any, what: str) -> None:
    got_paths: list[str] = []
    expected_paths: list[str] = []
    got_leaves, _ = flatten(got, got_paths)
    expected_leaves, _ = flatten(expected, expected_paths)
    assert type(got) is type(expected) and got_paths == expected_paths, f"{what}: {got!r} against {expected!r}"
    for k, (g, e) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        assert type(g) is not ng.Traced, f"{what}[{k}] is still traced"
        assert np.shape(g) == np.shape(e), f"{what}[{k}] has shape {np.shape(g)}, the loop {np.shape(e)}"
        dtypes = np.result_type(g), np.result_type(e)
        assert dtypes[0] == dtypes[1], f"{what}[{k}] is {dtypes[0]}, the loop's {dtypes[1]}"
        np.testing.assert_allclose(g, e, **TOLERANCE, err_msg=f"{what}[{k}]")


def _weights(out: Any) -> np.ndarray:
    """Fixed weights shaped like one example's output: no two alike, none zero."""
    shape = np.shape(out)
    return (0.5 + np.cos(1.0 + np.arange(int(np.prod(shape, dtype=np.int64))))).reshape(shape)


def _loss(case: Case, w: np.ndarray) -> Any:
    def loss(*values: Any) -> Any:
        out = case.fn(*values) * w
        return np.sum(np.real(out)) if np.iscomplexobj(out) else np.sum(out)

    return loss


# -- the forward and the per-example gradient ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_vmap_of_the_op_equals_a_loop(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    size, in_axes, examples, batched = data.draw(_batches(case), label="batch")
    expected = _stacked([case.fn(*example) for example in examples])
    got = ng.vmap(case.fn, in_axes=in_axes)(*batched)
    _assert_same(got, expected, f"{name}: vmap with in_axes {in_axes}, {size} examples")


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_vmap_of_the_ops_gradient_equals_a_loop(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    size, in_axes, examples, batched = data.draw(_batches(case), label="batch")
    grad = ng.grad(_loss(case, _weights(case.fn(*case.values))), argnums=case.argnums)
    expected = _stacked([grad(*example) for example in examples])
    got = ng.vmap(grad, in_axes=in_axes)(*batched)
    _assert_same(got, expected, f"{name}: vmap of the gradient with in_axes {in_axes}, {size} examples")


# -- which ops run once per example -----------------------------------------------------------------


def _per_example_ops() -> list[str]:
    for module in LAZY_MODULES:
        importlib.import_module(module)
    ops = {name: op for name, op in REGISTRY.items() if name not in LEAF_OPS}
    return sorted(name for name, op in ops.items() if op.batch is None or op.batch is batching.loop)


def test_few_ops_run_once_per_example() -> None:
    ops = [name for name in REGISTRY if name not in LEAF_OPS]
    slow = _per_example_ops()
    assert len(ops) >= 150, f"the registry holds {len(ops)} ops: were the lazily registered ones imported?"
    assert len(slow) < 0.05 * len(ops), (
        f"{len(slow)} of {len(ops)} ops have no batching rule of their own (at most 5% may): {slow}"
    )


def _documented_names() -> set[str]:
    """The names listed in docs/vmap.md between the per-example markers: those in
    backticks, or every word when nothing there is in backticks."""
    text = DOCS.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{DOCS.name} has no {BEGIN} ... {END} section"
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    quoted = set(re.findall(r"`([A-Za-z_][\w.]*)", section))
    return quoted or set(re.findall(r"[A-Za-z_]\w*", section))


def test_every_op_run_once_per_example_is_named_in_the_docs() -> None:
    if not DOCS.exists():
        pytest.skip(f"{DOCS.relative_to(DOCS.parents[1])} is not written yet: nothing to check the list against")
    missing = [name for name in _per_example_ops() if name not in _documented_names()]
    assert not missing, f"ops run once per example but not listed in {DOCS.name}: {missing}"
