"""``np.convolve`` and ``np.correlate`` on traced values: one ``convolve`` op whose gradients
are convolutions of the cotangent (memory O(n + m)), cut to numpy's three modes.

Checked with hypothesis in every mode, real and complex, either operand the longer one and
both differentiated: the forward against numpy, the gradient against central differences
in both modes (to second order: the rule's own convolutions record the op again), and
against the implementation it replaced, an (n + m - 1) x m window matrix times ``v``.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, note, settings

import nodegrad as ng
from nodegrad.engine.traced import Traced
from nodegrad.errors import ArgumentError, ShapeError
from nodegrad.testing import check_grads
from tests.strategies import float_arrays, floats

MODES = ("full", "same", "valid")


def _windowed(a: Any, v: Any, mode: str) -> Any:
    """The implementation the op replaced: ``full[k] = sum_j a[k - j] v[j]`` as a gathered
    (n + m - 1, m) window matrix of ``a`` times ``v``, cut as numpy cuts."""
    n, m = np.size(ng.stop_gradient(a)), np.size(ng.stop_gradient(v))
    if m > n:
        a, v, n, m = v, a, m, n
    k, j = np.arange(n + m - 1)[:, None], np.arange(m)[None, :]
    inside = (k - j >= 0) & (k - j < n)
    full = ng.matmul(ng.where(inside, ng.getitem(a, np.clip(k - j, 0, n - 1)), 0.0), v)
    start = {"full": 0, "same": (m - 1) // 2, "valid": m - 1}[mode]
    return ng.getitem(full, slice(start, start + {"full": n + m - 1, "same": n, "valid": n - m + 1}[mode]))


def _correlate_windowed(a: Any, v: Any, mode: str) -> Any:
    # sum_n a[n + k] conj(v[n]): the convolution with v reversed and conjugated; numpy's
    # 'same' centres on the longer operand with the order of the arguments kept.
    n, m = np.size(a), np.size(v)
    full = _windowed(a, ng.conj(ng.getitem(v, slice(None, None, -1))), "full")
    start = {"full": 0, "same": (m - 1) // 2 if n >= m else n // 2, "valid": min(n, m) - 1}[mode]
    return ng.getitem(full, slice(start, start + {"full": n + m - 1, "same": max(n, m), "valid": abs(n - m) + 1}[mode]))


@st.composite
def _operands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, str, bool]:
    complex_ = draw(st.booleans())
    arrays = []
    for _ in range(2):
        x = draw(float_arrays(st.tuples(st.integers(1, 8))))
        if complex_ and draw(st.booleans()):  # sometimes one operand real, the other complex
            x = x + 1j * draw(float_arrays(x.shape, elements=floats(-2.0, 2.0)))
        arrays.append(x)
    return arrays[0], arrays[1], draw(st.sampled_from(MODES)), complex_


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@settings(max_examples=40, deadline=None)
@given(drawn=_operands())
def test_against_numpy_finite_differences_and_the_window_matrix(name: str, drawn: Any) -> None:
    a, v, mode, _ = drawn
    note(f"np.{name}({a!r}, {v!r}, {mode!r})")
    func = getattr(np, name)
    reference = _windowed if name == "convolve" else _correlate_windowed
    out, pullback = ng.vjp(lambda a, v: func(a, v, mode), a, v)
    np.testing.assert_allclose(out, func(a, v, mode), rtol=1e-12, atol=1e-12)
    old_out, old_pullback = ng.vjp(lambda a, v: reference(a, v, mode), a, v)
    np.testing.assert_allclose(out, old_out, rtol=1e-12, atol=1e-12)
    g = np.linspace(-1.0, 1.5, out.size) * (1.0 + (0.5j if np.iscomplexobj(out) else 0.0))
    for got, want, x in zip(pullback(g), old_pullback(g), (a, v), strict=True):
        assert type(got) is np.ndarray and got.shape == x.shape and got.dtype == x.dtype
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    check_grads(lambda a, v: func(a, v, mode), a, v)


@settings(max_examples=15, deadline=None)
@given(drawn=_operands())
def test_second_order(drawn: Any) -> None:
    a, v, mode, _ = drawn
    check_grads(lambda a, v: np.correlate(np.convolve(a, v, mode), v), a, v, order=2)


def test_one_op_records_the_convolution_and_its_gradient_is_plain() -> None:
    a, v = np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5])
    arena = ng.Arena()
    out = np.convolve(arena.param(a), v, "valid")
    assert type(out) is Traced
    assert [node.op for node in arena] == ["param", "convolve", "getitem"]
    gradient = ng.grad(lambda a: np.sum(np.convolve(a, v, "valid") ** 2))(a)
    assert type(gradient) is np.ndarray
    valid = np.convolve(a, v, "valid")
    np.testing.assert_allclose(gradient, np.convolve(2 * valid, v[::-1], "full"), rtol=1e-12)


def test_bad_calls_name_np_convolve_and_np_correlate() -> None:
    x = np.ones(3)
    with pytest.raises(ShapeError, match=r"np\.convolve: needs two non-empty 1-D arrays.*\(3, 3\)"):
        ng.grad(lambda x: np.sum(np.convolve(np.outer(x, x), x)))(x)
    with pytest.raises(ShapeError, match=r"np\.convolve: needs two non-empty"):
        ng.grad(lambda x: np.sum(np.convolve(x, np.ones(0))))(x)
    with pytest.raises(ArgumentError, match=r"np\.convolve: mode must be"):
        ng.grad(lambda x: np.sum(np.convolve(x, x, "wide")))(x)
    with pytest.raises(ShapeError, match=r"np\.correlate: needs two non-empty"):
        ng.grad(lambda x: np.sum(np.correlate(x, np.ones((2, 2)))))(x)
