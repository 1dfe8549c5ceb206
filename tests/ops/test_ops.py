"""Gradient tests for every registered op and every composite public function.

Each op in ``nodegrad.ops.REGISTRY`` has a *spec* in the ``specs_<family>.py`` module of
its family (see :mod:`tests.ops.harness`), and so has each public function built from
several ops. For every spec:

(a) the forward, recorded and unrecorded, equals the numpy reference;
(b) the gradients pass :func:`nodegrad.testing.check_grads` in float64;
(c) the inputs, the static arguments and the seed are not modified by the sweep;
(d) the returned gradients are writable and share no memory with each other, the inputs,
    the seed or the output;
(e) float32 inputs give a float32 forward and float32 gradients that are still right.

Binary ops (and matmul's batch dimensions, einsum's ellipsis, ssm_scan, the functional
updates) are also tested under non-trivial broadcasting, and every op has bad inputs that
must raise a ``NodegradError`` naming it without leaving a node behind. A new op without
a spec and a bad-input case fails the ``test_every_registered_op_has_*`` tests.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Any
from unittest import mock

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.ops
from nodegrad.engine import record as record_module
from nodegrad.engine.traced import Traced
from nodegrad.errors import NodegradError
from nodegrad.ops import REGISTRY
from nodegrad.testing import check_grads
from tests.ops import (
    specs_elementwise,
    specs_fourier,
    specs_index,
    specs_linalg,
    specs_nn,
    specs_pipeline,
    specs_reduce,
    specs_scipy_linalg,
    specs_shape,
    specs_sparse,
    specs_special,
    specs_structured,
)
from tests.ops.harness import BadCall, Case
from tests.strategies import float_arrays

# Properties of how an op treats memory and dtypes (inputs left alone, fresh gradients, what
# a lean arena keeps, float32 in and out) hold or fail alike on most values: a third of the
# profile's examples (8 under `ci`, 166 under `thorough`), where values matter the full count.
STRUCTURAL = settings(max_examples=max(8, settings.default.max_examples // 3))

FAMILIES = {
    "elementwise": specs_elementwise,
    "reduce": specs_reduce,
    "linalg": specs_linalg,
    "shape": specs_shape,
    "index": specs_index,
    "fourier": specs_fourier,
    "special": specs_special,
    "nn": specs_nn,
    "pipeline": specs_pipeline,
    "structured": specs_structured,
    "scipy.linalg": specs_scipy_linalg,
    "sparse": specs_sparse,
}
LEAF_OPS = {"param", "input"}


def _merged(attribute: str) -> dict[str, st.SearchStrategy[Case]]:
    merged: dict[str, st.SearchStrategy[Case]] = {}
    for module in FAMILIES.values():
        table = getattr(module, attribute)
        assert not merged.keys() & table.keys(), f"{attribute} defined twice: {sorted(merged.keys() & table.keys())}"
        merged.update(table)
    return merged


SPECS = _merged("SPECS")
COMPOSITES = _merged("COMPOSITES")
BROADCASTING = _merged("BROADCASTING")
ALL_SPECS = {**SPECS, **COMPOSITES}
NAMES = sorted(ALL_SPECS)
BAD_CALLS: list[BadCall] = [bad for module in FAMILIES.values() for bad in module.BAD_CALLS]

# -- the registry and the public functions are covered ---------------------------------------------------


def test_every_registered_op_has_a_spec() -> None:
    ops = set(REGISTRY) - LEAF_OPS
    assert not ops - set(SPECS), f"ops without a gradient-test spec: {sorted(ops - set(SPECS))}"
    assert not set(SPECS) - ops, f"specs for ops that are not registered: {sorted(set(SPECS) - ops)}"


def test_every_spec_lives_in_its_familys_module() -> None:
    misplaced = [
        (name, family, REGISTRY[name].family)
        for family, module in FAMILIES.items()
        for name in module.SPECS
        if name in REGISTRY and REGISTRY[name].family != family
    ]
    assert not misplaced, misplaced


def test_every_public_function_has_a_spec() -> None:
    # Public functions that are not ops are composites; at(x)[i] has one spec per method.
    missing = [
        name
        for name in nodegrad.ops.__all__
        if name not in SPECS and not any(key == name or key.startswith(name + ".") for key in COMPOSITES)
    ]
    assert not missing, f"public functions without a gradient-test spec: {missing}"
    assert not COMPOSITES.keys() & REGISTRY.keys(), "a composite spec is named after a registered op"


def test_every_registered_op_has_an_error_case() -> None:
    covered = {bad.op for bad in BAD_CALLS}
    assert not (set(REGISTRY) - LEAF_OPS) - covered, sorted((set(REGISTRY) - LEAF_OPS) - covered)


# -- helpers for the checks -------------------------------------------------------------------------------


def _arrays_in(value: Any) -> list[np.ndarray]:
    """Every numpy array inside ``value`` (tuples and lists searched)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays_in(v)]
    return []


def _assert_unchanged(now: Any, before: Any, what: str) -> None:
    """``now`` still equals its deep copy ``before``: same type, dtype, shape and contents."""
    assert type(now) is type(before), f"{what} changed type"
    if isinstance(now, np.ndarray):
        assert now.dtype == before.dtype, f"{what} changed dtype"
        np.testing.assert_array_equal(now, before, err_msg=f"{what} was modified in place")
    elif isinstance(now, (tuple, list)):
        assert len(now) == len(before), f"{what} changed length"
        for k, (a, b) in enumerate(zip(now, before, strict=True)):
            _assert_unchanged(a, b, f"{what}[{k}]")
    else:
        assert now == before, f"{what} changed"


def _traced_call(case: Case) -> tuple[ng.Arena, Any]:
    with ng.Arena() as arena:
        operands = [arena.param(v) if d else v for v, d in zip(case.values, case.diff, strict=True)]
        out = case.fn(*operands)
    return arena, out


def _draw_seed(data: st.DataObject, out: Any) -> np.ndarray:
    return data.draw(float_arrays(np.shape(out)).map(lambda s: s.astype(np.asarray(out).dtype)), label="seed")


# -- (a) to (e), for every spec ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_forward_matches_numpy_reference(name: str, data: st.DataObject) -> None:
    case = data.draw(ALL_SPECS[name], label="case")
    expected = case.ref(*case.values)
    arena, out = _traced_call(case)
    assert isinstance(out, Traced), "a traced input must give a traced output"
    if name in SPECS:
        assert name in {node.op for node in arena}, f"the spec for {name!r} never records a {name!r} node"
    for got in (out.value, case.fn(*case.values)):  # recorded, and plain (nothing traced)
        assert np.shape(got) == np.shape(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_gradients_match_finite_differences(name: str, data: st.DataObject) -> None:
    case = data.draw(ALL_SPECS[name], label="case")
    check_grads(case.fn, *case.values, argnums=case.argnums)


# scipy.linalg.logm estimates a 1-norm with random vectors (onenormest), so two calls on the
# same matrix may pick different scaling steps: equal to rounding, not bit for bit.
_NOT_BITWISE_REPEATABLE = {"logm"}


@pytest.mark.parametrize("name", NAMES)
@STRUCTURAL
@given(data=st.data())
def test_backward_leaves_inputs_and_seed_unmodified(name: str, data: st.DataObject) -> None:
    case = data.draw(ALL_SPECS[name], label="case")
    values_before, static_before = copy.deepcopy(case.values), copy.deepcopy(case.static)
    out, back = ng.vjp(case.of_args(), *case.args)
    seed = _draw_seed(data, out)
    seed_before = seed.copy()
    first, second = back(seed), back(seed)
    _assert_unchanged(case.values, values_before, "the inputs")
    _assert_unchanged(case.static, static_before, "the static arguments")
    _assert_unchanged(seed, seed_before, "the seed")
    for g1, g2 in zip(first, second, strict=True):  # so the first sweep changed nothing it reads
        if name in _NOT_BITWISE_REPEATABLE:
            np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-15, err_msg="a second sweep gives another gradient")
        else:
            np.testing.assert_array_equal(g1, g2, err_msg="a second sweep gives another gradient")


@pytest.mark.parametrize("name", NAMES)
@STRUCTURAL
@given(data=st.data())
def test_lean_arenas_keep_every_value_a_rule_reads(name: str, data: st.DataObject) -> None:
    # With the threshold at 0 a lean arena replaces every float array no rule of its node
    # reads (by Op.reads) with a NaN stand-in: a rule that read one after all would give NaN.
    case = data.draw(ALL_SPECS[name], label="case")
    with mock.patch.object(record_module, "LEAN_BYTES", 1 << 62):
        out, back = ng.vjp(case.of_args(), *case.args)
        seed = _draw_seed(data, out)
        kept = back(seed)
    with mock.patch.object(record_module, "LEAN_BYTES", 0):
        _, lean_back = ng.vjp(case.of_args(), *case.args)
        lean = lean_back(seed)
    for g_kept, g_lean in zip(kept, lean, strict=True):
        if name in _NOT_BITWISE_REPEATABLE:
            np.testing.assert_allclose(g_lean, g_kept, rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_array_equal(g_lean, g_kept)


@pytest.mark.parametrize("name", NAMES)
@STRUCTURAL
@given(data=st.data())
def test_gradients_are_fresh_arrays(name: str, data: st.DataObject) -> None:
    case = data.draw(ALL_SPECS[name], label="case")
    out, back = ng.vjp(case.of_args(), *case.args)
    seed = _draw_seed(data, out)
    grads = back(seed)
    others = [*_arrays_in(case.values), *_arrays_in(case.static), seed, *_arrays_in(out)]
    for k, g in enumerate(grads):
        if not isinstance(g, np.ndarray):
            assert isinstance(case.args[k], (float, complex, np.inexact)), f"gradient {k} is a {type(g).__name__}"
            continue
        assert g.flags.writeable, f"gradient {k} is read-only"
        for j, h in enumerate(grads[k + 1 :], start=k + 1):
            assert not np.shares_memory(g, h), f"gradients {k} and {j} share memory"
        for other in others:
            assert not np.shares_memory(g, other), f"gradient {k} shares memory with an input, the seed or the output"


@pytest.mark.parametrize("name", [n for n in NAMES if n != "astype"])  # astype's job is to change the dtype
@STRUCTURAL
@given(data=st.data())
def test_float32_in_float32_out(name: str, data: st.DataObject) -> None:
    # Single precision: float32, and complex64 for the specs drawn complex (real, imag, ...).
    case = data.draw(ALL_SPECS[name], label="case")
    case32 = case.single()
    out, back = ng.vjp(case32.of_args(), *case32.args)
    expected = {"f": np.float32, "c": np.complex64}[np.asarray(case.ref(*case.values)).dtype.kind]
    assert np.asarray(out).dtype == expected, f"single-precision inputs gave a {np.asarray(out).dtype} forward"
    np.testing.assert_allclose(out, case.ref(*case.values), rtol=1e-4, atol=1e-5)
    for k, (g, x) in enumerate(zip(back(_draw_seed(data, out)), case32.args, strict=True)):
        assert np.asarray(g).dtype == np.result_type(x), f"gradient {k} has dtype {np.asarray(g).dtype}"
        assert np.shape(g) == np.shape(x)
    check_grads(case32.fn, *case32.values, argnums=case32.argnums)


# -- broadcasting -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BROADCASTING))
@given(data=st.data())
def test_op_broadcasting(name: str, data: st.DataObject) -> None:
    case = data.draw(BROADCASTING[name], label="case")
    out, back = ng.vjp(case.fn, *case.values)
    assert np.shape(out) == np.shape(case.ref(*case.values))
    grads = back(_draw_seed(data, out))
    assert [np.shape(g) for g in grads] == [np.shape(v) for v in case.values]
    check_grads(case.fn, *case.values)


# -- bad inputs ---------------------------------------------------------------------------------------------


def _calling_file(bad: BadCall) -> str:
    """The file an error about ``bad`` must point at: where its call is written, unless the
    call is a nodegrad function itself (then this file, which calls it)."""
    source = inspect.getsourcefile(inspect.unwrap(bad.call))
    package = Path(ng.__file__).resolve().parent
    if source is None or package in Path(source).resolve().parents:
        return Path(__file__).name
    return Path(source).name


@pytest.mark.parametrize("bad", BAD_CALLS, ids=str)
def test_bad_input_raises_an_error_naming_the_op(bad: BadCall) -> None:
    with ng.Arena() as arena:
        leaves = [arena.param(v) if np.asarray(v).dtype.kind == "f" else arena.input(v) for v in bad.inputs]
        if bad.prepare is not None:
            leaves = list(bad.prepare(*leaves))
        size = len(arena)
        with pytest.raises(bad.error) as info:
            bad.call(*leaves)
        assert isinstance(info.value, NodegradError)
        assert len(arena) == size, "the failed call left nodes in the arena"
        message = str(info.value)
        for fragment in (bad.names or bad.op, *bad.fragments):
            assert fragment in message, f"{fragment!r} missing from the message: {message}"
        assert _calling_file(bad) in message, f"the message does not point at the calling line: {message}"
        # The arena still records and differentiates.
        z = arena.param(np.array([0.5, -1.5]))
        y = ng.sum(z * z)
        assert len(arena) == size + 3
        np.testing.assert_array_equal(arena.backward(y, wrt=z), [1.0, -3.0])
