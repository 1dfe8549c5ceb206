"""Tests of the gradient checker itself: it passes right gradients and catches wrong ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
import nodegrad.testing._check as check_module
from nodegrad.ops import elementwise
from nodegrad.testing import check_grads


def _patch_sin_rule(monkeypatch: pytest.MonkeyPatch, rule: Callable[..., Any]) -> None:
    """Make ``ng.sin`` record an op whose VJP is ``rule`` (undone after the test)."""
    monkeypatch.setattr(elementwise, "SIN", attrs.evolve(elementwise.SIN, vjps=(rule,)))


@pytest.mark.parametrize(
    ("f", "args"),
    [
        pytest.param(lambda x, y: ng.sin(x) * y, (np.array([0.5, 1.0]), 2.0), id="array-and-python-float"),
        pytest.param(lambda x: ng.sum(ng.exp(x), axis=0), (np.linspace(-1.0, 1.0, 6).reshape(2, 3),), id="reduce"),
        pytest.param(lambda x, y: x @ y, (np.ones((2, 3), np.float32), np.ones(3, np.float32)), id="float32"),
        pytest.param(ng.tanh, (0.3,), id="scalar"),
    ],
)
def test_passes_right_gradients(f: Callable[..., Any], args: tuple[Any, ...]) -> None:
    check_grads(f, *args)


def test_catches_a_wrong_rule_and_names_the_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = np.array([0.5, 1.0, -2.0]), np.array([0.3, -0.7, 1.1])
    f = lambda x, y: x * ng.sin(y)
    check_grads(f, x, y)  # the real rule passes ...
    _patch_sin_rule(monkeypatch, lambda g, ans, x: -g * np.cos(x))
    with pytest.raises(AssertionError) as info:
        check_grads(f, x, y)  # ... the sign-flipped one does not, and only argument 1 is wrong
    message = str(info.value)
    assert "argument 1 (shape (3,), dtype float64)" in message
    for fragment in ("analytic <vjp(v), u> = ", "numeric  (central difference, eps=1e-06) = ", "tolerance", "rtol="):
        assert fragment in message
    check_grads(f, x, y, argnums=0)  # argument 0 does not go through sin


def test_default_tolerances_follow_the_dtype(monkeypatch: pytest.MonkeyPatch) -> None:
    # A rule off by a relative 1e-4: beyond float64's tolerance, within float32's.
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.cos(x) * (1 + 1e-4))
    x = np.array([0.5, 1.0, -2.0])
    with pytest.raises(AssertionError, match="argument 0"):
        check_grads(ng.sin, x)
    check_grads(ng.sin, x.astype(np.float32))
    check_grads(ng.sin, x, rtol=1e-3)


def test_catches_a_nan_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.nan)
    with pytest.raises(AssertionError, match="analytic <vjp\\(v\\), u> = nan"):
        check_grads(ng.sin, np.array([0.5, 1.0]))


@pytest.mark.parametrize(
    ("wrong", "fragment"),
    [
        pytest.param(lambda g: g.astype(np.float32), "dtype float32", id="dtype"),
        pytest.param(lambda g: g[:1], "shape (1,)", id="shape"),
    ],
)
def test_catches_a_gradient_of_the_wrong_shape_or_dtype(
    monkeypatch: pytest.MonkeyPatch, wrong: Callable[[Any], Any], fragment: str
) -> None:
    real_vjp = check_module.vjp

    def bad_vjp(f: Callable[..., Any], *args: Any) -> Any:
        out, back = real_vjp(f, *args)
        return out, lambda v: tuple(wrong(g) for g in back(v))

    monkeypatch.setattr(check_module, "vjp", bad_vjp)
    with pytest.raises(AssertionError, match="argument 0") as info:
        check_grads(ng.sin, np.array([0.5, 1.0]))
    assert fragment in str(info.value)


def test_seeded_and_leaves_the_global_random_state_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_sin_rule(monkeypatch, lambda g, ans, x: -g * np.cos(x))
    x = np.linspace(0.1, 1.0, 5)
    before = np.random.get_state()

    def message(seed: int) -> str:
        with pytest.raises(AssertionError) as info:
            check_grads(ng.sin, x, seed=seed)
        return str(info.value)

    assert message(0) == message(0)
    assert message(0) != message(1)
    after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_other_arguments_are_passed_as_given() -> None:
    # The integer indices must reach gather unchanged on both sides (not cast to float).
    x, indices = np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2])
    check_grads(lambda x, i: ng.gather(x, i) * x[i], x, indices, argnums=0)
    check_grads(lambda x, i: ng.gather(x, i) * x[i], x, indices, argnums=(-2,))


@pytest.mark.parametrize("argnums", [2, (0, 0), (), (-3,)])
def test_rejects_bad_argnums(argnums: Any) -> None:
    with pytest.raises(ValueError, match="argnums"):
        check_grads(lambda x, y: x * y, 1.0, 2.0, argnums=argnums)


def test_structured_arguments_and_outputs_pass_and_a_wrong_field_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    params = {"w": np.array([0.5, 1.0]), "layers": [{"b": 0.25, "name": "l0"}], "n": 3}

    def f(p: dict[str, Any]) -> Any:
        return {"out": ng.sin(p["w"]) * p["layers"][0]["b"], "sq": p["w"] * p["w"], "tag": "x"}

    check_grads(f, params)
    _patch_sin_rule(monkeypatch, lambda g, ans, x: -g * np.cos(x))
    with pytest.raises(AssertionError, match=r"argument 0 at \['w'\] fails") as info:
        check_grads(f, params)
    assert "['layers'][0]['b']" not in str(info.value)
