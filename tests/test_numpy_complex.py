"""numpy's functions on traced complex values: numpy's answer, or an error naming the function.

Every spec of ``tests/test_numpy_api.py`` (plain numpy code with a differentiable domain)
is drawn again with imaginary parts added to some or all of its float operands, and numpy
itself is the reference on those complex values. Where numpy computes a result, the traced
call gives the same values and dtype, and its gradients pass
:func:`~nodegrad.testing.check_grads` along real and imaginary directions. Where numpy
refuses complex values (a ``TypeError``, or a ``ComplexWarning`` for a cast that would
drop the imaginary parts), the traced call raises a ``NodegradError`` naming the function
and warns nothing. A few functions refuse complex values that numpy takes; they are listed
with the reason. ``np.linalg`` and ``np.fft`` keep complex tests of their own.

The value ufuncs (comparisons, rounding) follow the same rule on complex values.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, note, settings

import nodegrad as ng
from nodegrad.errors import NodegradError
from nodegrad.numpy_api import VALUE_UFUNCS
from tests.strategies import float_arrays, floats, shapes
from tests.test_numpy_api import FUNCTION_SPECS, UFUNC_SPECS, Case, _assert_same_as_numpy, _name

# Imaginary parts within +-0.5: clear of the cuts of arctan and arcsinh (beyond +-i), and
# small enough for the specs' real domains to keep the other functions well conditioned.
_IMAGINARY = floats(-0.5, 0.5)


def _owned_elsewhere(f: Any) -> bool:
    return _name(f).startswith(("np.linalg.", "np.fft."))


#: numpy takes complex values here, nodegrad refuses them (with the reason).
REFUSED: dict[Any, str] = {
    np.geomspace: "numpy's complex geometric sequence (a spiral) is not written here",
}
SPECS = {f: spec for f, spec in {**UFUNC_SPECS, **FUNCTION_SPECS}.items() if not _owned_elsewhere(f)}


def _is_float(value: Any) -> bool:
    return isinstance(value, float | np.floating) or (isinstance(value, np.ndarray) and value.dtype.kind == "f")


@st.composite
def _complexified(draw: st.DrawFn, spec: st.SearchStrategy[Case]) -> Case:
    case = draw(spec)
    floating = [k for k, v in enumerate(case.operands) if _is_float(v)]
    chosen = floating
    if len(floating) > 1 and draw(st.booleans()):
        chosen = sorted(draw(st.lists(st.sampled_from(floating), min_size=1, max_size=len(floating), unique=True)))
    operands = list(case.operands)
    for k in chosen:
        v = operands[k]
        if not isinstance(v, np.ndarray):  # numpy's scalar: Python's complex numbers have no order
            operands[k] = np.complex128(v + 1j * draw(_IMAGINARY))
        else:
            parts = draw(float_arrays(v.shape, elements=_IMAGINARY))
            operands[k] = np.asarray(v + 1j * parts, dtype=np.result_type(v.dtype, np.complex64))
    return Case(case.call, tuple(operands), case.diff, f"{case.desc}; complex operands {chosen}")


def _numpy_refuses(case: Case) -> BaseException | None:
    """What numpy raises on the complex call (a ComplexWarning counts), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            case.call(*case.operands)
    except (TypeError, ValueError, np.exceptions.ComplexWarning) as exc:
        return exc
    return None


@pytest.mark.parametrize("func", list(SPECS), ids=_name)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_function_on_complex_values(func: Any, data: st.DataObject) -> None:
    case = data.draw(_complexified(SPECS[func]), label="case")
    note(case.desc)
    refusal = _numpy_refuses(case)
    if refusal is not None or func in REFUSED:
        note(f"numpy: {refusal!r}")
        with pytest.raises(NodegradError) as info:
            ng.vjp(case.of_args(), *case.args)
        assert re.search(rf"\b{re.escape(_name(func).removeprefix('np.'))}\b", str(info.value)), str(info.value)
        return
    out, _ = ng.vjp(case.of_args(), *case.args)
    _assert_same_as_numpy(out, case.call(*case.operands))
    ng.testing.check_grads(case.of_args(), *case.args)


def test_refused_functions_are_specced() -> None:
    assert [f for f in REFUSED if f not in SPECS] == []


@pytest.mark.parametrize("ufunc", sorted(VALUE_UFUNCS, key=_name), ids=_name)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_value_ufunc_on_complex_values(ufunc: np.ufunc, data: st.DataObject) -> None:
    shape = data.draw(shapes(), label="shape")
    z = data.draw(float_arrays(shape), label="re") + 1j * data.draw(float_arrays(shape), label="im")
    args = (z,) * ufunc.nin
    try:
        expected = ufunc(*args)
    except TypeError:
        with ng.Arena() as arena, pytest.raises(NodegradError, match=rf"np\.{ufunc.__name__}"):
            ufunc(arena.param(z), *args[1:])
        return
    with ng.Arena() as arena:
        got = ufunc(arena.param(z), *args[1:])
    np.testing.assert_array_equal(got, expected)
