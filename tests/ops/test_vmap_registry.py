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

import pytest
from hypothesis import HealthCheck, settings

from nodegrad.ops import REGISTRY, batching
from tests.ops.test_ops import LEAF_OPS, SPECS
from tests.ops.vmap_harness import check_forward, check_vmap_of_grad, spec_test

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


# -- the forward and the per-example gradient ------------------------------------------------------


test_vmap_of_the_op_equals_a_loop = spec_test(check_forward, SPECS, FEW)
test_vmap_of_the_ops_gradient_equals_a_loop = spec_test(check_vmap_of_grad, SPECS, FEW)
# -- which ops run once per example -----------------------------------------------------------------


def _per_example_ops() -> list[str]:
    for module in LAZY_MODULES:
        importlib.import_module(module)
    ops = {name: op for name, op in REGISTRY.items() if name not in LEAF_OPS}
    return sorted(name for name, op in ops.items() if batching.rule_of(op) in (None, batching.loop))


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
