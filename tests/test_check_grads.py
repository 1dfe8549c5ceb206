"""Tests of the gradient checker itself: it passes right gradients and catches wrong ones."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
import nodegrad.testing._check as check_module
from nodegrad.errors import NoGradientError
from nodegrad.ops import REGISTRY
from nodegrad.ops.elementwise import transcendental
from nodegrad.testing import check_grads


def _patch_sin_rule(monkeypatch: pytest.MonkeyPatch, rule: Callable[..., Any]) -> None:
    """Make ``ng.sin`` record an op whose VJP is ``rule`` (undone after the test)."""
    monkeypatch.setattr(transcendental, "SIN", attrs.evolve(transcendental.SIN, vjps=(rule,)))


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


# -- forward mode -------------------------------------------------------------------------------------


def test_fwd_mode_catches_a_wrong_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = np.array([0.5, 1.0, -2.0]), np.array([0.3, -0.7, 1.1])
    f = lambda x, y: x * ng.sin(y)
    check_grads(f, x, y, modes=("fwd",))
    _patch_sin_rule(monkeypatch, lambda g, ans, x: -g * np.cos(x))
    with pytest.raises(AssertionError) as info:
        check_grads(f, x, y, modes=("fwd",))  # all arguments move together; the blame falls on argument 1
    message = str(info.value)
    assert message.startswith("check_grads (order 1, mode 'fwd'): ")
    assert "the forward derivative along argument 1 (shape (3,), dtype float64) fails" in message
    assert "argument 0" not in message
    for fragment in ("analytic <v, jvp(u)> = ", "numeric  (central difference, eps=1e-06) = ", "tolerance"):
        assert fragment in message


def test_fwd_mode_checks_nodegrad_jvp_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    real_jvp = check_module.jvp
    x = {"w": np.array([0.5, 1.0]), "b": 0.25}
    f = lambda p: {"y": ng.sin(p["w"]) * p["b"], "z": ng.exp(p["w"])}

    def doubled_jvp(f: Callable[..., Any], primals: Any, tangents: Any) -> Any:
        out, tangent = real_jvp(f, primals, tangents)
        return out, {"y": tangent["y"], "z": tangent["z"] * 2.0}  # wrong for the output field z only

    monkeypatch.setattr(check_module, "jvp", doubled_jvp)
    check_grads(f, x, modes=("rev",))  # reverse mode does not use jvp
    blame = r"mode 'fwd'\): the forward derivative along argument 0 at \['w'\] fails"
    with pytest.raises(AssertionError, match=blame) as info:
        check_grads(f, x)
    assert "it shows in the output at ['z']" in str(info.value)
    assert "['b']" not in str(info.value)  # z does not depend on b

    monkeypatch.setattr(check_module, "jvp", lambda f, p, t: (real_jvp(f, p, t)[0], {"y": np.zeros(1), "z": None}))
    wrong_shape = r"the tangent jvp\(u\) of the output\['y'\] \(shape \(2,\), dtype float64\) has shape \(1,\)"
    with pytest.raises(AssertionError, match=wrong_shape):
        check_grads(f, x)


# -- second order ---------------------------------------------------------------------------------------

_RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    ("f", "args"),
    [
        pytest.param(ng.sin, (np.array([0.5, 1.0, -2.0]),), id="sin"),
        pytest.param(ng.tanh, (np.linspace(-1.5, 1.5, 6).reshape(2, 3),), id="tanh"),
        pytest.param(ng.tanh, (0.3,), id="python-float"),
        pytest.param(lambda x, y: x @ y, (_RNG.standard_normal((2, 3)), _RNG.standard_normal((3, 2))), id="matmul"),
        pytest.param(lambda x: ng.softmax(x, axis=-1), (_RNG.standard_normal((2, 4)),), id="softmax"),
        pytest.param(
            lambda x, w: ng.softmax(ng.tanh(x @ w), axis=-1),
            (_RNG.standard_normal((2, 3)).astype(np.float32), _RNG.standard_normal((3, 4)).astype(np.float32)),
            id="float32",
        ),
        pytest.param(
            lambda p, x: {"y": ng.tanh(p["w"] @ x) * p["b"], "norm": ng.sum(x * x), "tag": "t"},
            ({"w": _RNG.standard_normal((2, 3)), "b": 0.5, "name": "layer"}, _RNG.standard_normal(3)),
            id="structured",
        ),
    ],
)
@pytest.mark.parametrize("modes", [("rev",), ("fwd",), ("rev", "fwd")])
def test_order_2_passes_right_rules(f: Callable[..., Any], args: tuple[Any, ...], modes: tuple[str, ...]) -> None:
    check_grads(f, *args, order=2, modes=modes)


def _cut_cosine(g: Any, ans: Any, x: Any) -> Any:
    """The right value of sin's VJP, but cut off from ``x`` when the sweep is recorded (``x`` is
    then traced): first derivatives are right, second derivatives miss ``-sin``."""
    return g * np.cos(ng.stop_gradient(x))


@pytest.mark.parametrize(
    ("modes", "header"),
    [
        pytest.param(("rev",), "check_grads (order 2, mode 'rev' of the 'rev' derivative (x, v) -> vjp(f, x)(v))"),
        pytest.param(("fwd",), "check_grads (order 2, mode 'fwd' of the 'fwd' derivative (x, t) -> jvp(f, x, t))"),
        pytest.param(("rev", "fwd"), "check_grads (order 2, mode 'rev' of the 'rev' derivative"),
    ],
)
def test_order_2_catches_a_rule_that_is_only_right_at_order_1(
    monkeypatch: pytest.MonkeyPatch, modes: tuple[str, ...], header: str
) -> None:
    x = np.array([0.5, 1.0, -2.0])
    check_grads(ng.sin, x, order=2, modes=modes)
    _patch_sin_rule(monkeypatch, _cut_cosine)
    check_grads(ng.sin, x, modes=modes)  # order 1 cannot tell
    with pytest.raises(AssertionError) as info:
        check_grads(ng.sin, x, order=2, modes=modes)
    message = str(info.value)
    assert message.startswith(header)
    assert "argument 0 (shape (3,), dtype float64) fails the dot-product test" in message
    assert "analytic" in message and "numeric" in message


def test_order_2_names_the_key_path(monkeypatch: pytest.MonkeyPatch) -> None:
    params = {"w": np.array([0.5, 1.0]), "b": 0.25, "name": "l0"}
    f = lambda p: {"out": ng.sin(p["w"]) + p["b"] * p["b"], "tag": "x"}
    check_grads(f, params, order=2)
    _patch_sin_rule(monkeypatch, _cut_cosine)
    with pytest.raises(AssertionError, match=r"order 2, mode 'rev'.*: the gradient of argument 0 at \['w'\] fails"):
        check_grads(f, params, order=2)


def test_order_2_through_a_custom_vjp() -> None:
    @ng.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    # A bwd made of differentiable ops differentiates again: its residuals are recomputed
    # from the traced inputs when the sweep records itself.
    square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * x * g,))
    x = np.array([0.5, -1.5])
    check_grads(square, x, order=2)

    # A bwd that leaves nodegrad (np.asarray) cannot: order 2 says so, never passes silently.
    @ng.custom_vjp
    def opaque(x: Any) -> Any:
        return x * x

    opaque.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * np.asarray(x) * g,))
    check_grads(opaque, x, modes=("rev",))
    refused = r"^check_grads \(order 2, mode 'rev' of the 'rev' derivative .*custom_vjp"
    with pytest.raises(NoGradientError, match=refused):
        check_grads(opaque, x, order=2, modes=("rev",))


# -- record-valued functions ------------------------------------------------------------------------------


@attrs.frozen
class Polar:
    double: Any
    square: Any
    name: str = ng.field(static=True, default="polar")


def test_a_wrong_custom_vjp_on_a_record_valued_function_names_the_field() -> None:
    @ng.custom_vjp
    def polar(x: Any) -> Any:
        return Polar(x * 2.0, x * x)

    def bwd(square_factor: float) -> Callable[[Any, Any], tuple[Any]]:
        return lambda x, g: (g.double * 2.0 + g.square * square_factor * x,)

    x = np.array([0.5, -1.0, 2.0])
    polar.defvjp(lambda x: (polar.fun(x), x), bwd(2.0))
    check_grads(polar, x, modes=("rev",))
    polar.defvjp(lambda x: (polar.fun(x), x), bwd(3.0))  # wrong for the field square only
    with pytest.raises(AssertionError, match="argument 0") as info:
        check_grads(polar, x, modes=("rev",))
    message = str(info.value)
    assert "it shows in the output at .square:" in message
    assert ".double" not in message


@pytest.mark.parametrize("modes", [("rev",), ("fwd",)])
def test_a_wrong_rule_in_a_record_field_is_named_in_both_modes(
    monkeypatch: pytest.MonkeyPatch, modes: tuple[str, ...]
) -> None:
    f = lambda x: Polar(x * 2.0, ng.sin(x) * x)
    x = np.array([0.5, -1.0, 2.0])
    check_grads(f, x, modes=modes)
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.cos(x) * 1.01)
    with pytest.raises(AssertionError, match=f"mode '{modes[0]}'") as info:
        check_grads(f, x, modes=modes)
    assert "it shows in the output at .square:" in str(info.value)
    assert ".double" not in str(info.value)


# -- arguments ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [0, 3, True, 1.5, "2", None])
def test_rejects_bad_order(order: Any) -> None:
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        check_grads(ng.sin, 0.5, order=order)


@pytest.mark.parametrize("modes", [(), ("rev", "rev"), ("reverse",), ("fwd", "sideways"), "rev", None, (1,)])
def test_rejects_bad_modes(modes: Any) -> None:
    with pytest.raises(ValueError, match="modes must be a non-empty tuple"):
        check_grads(ng.sin, 0.5, modes=modes)


@pytest.mark.parametrize("offset", [1e3, 1e6, 1e9])
def test_a_large_function_value_does_not_fail_a_right_gradient(offset: float) -> None:
    # Central differences of f + offset lose digits to rounding in proportion to the
    # offset; the tolerance accounts for that, so a right gradient passes at any offset...
    x = np.array([1.0, -0.5, 2.0])
    check_grads(lambda x: ng.sum(x * x) + offset, x, order=2)
    check_grads(lambda x: ng.sum(ng.sin(x)) * offset, x)


def test_a_wrong_rule_under_a_large_offset_is_still_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # ... while a rule 1% off still fails beneath an offset of a million.
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.cos(x) * 1.01)
    with pytest.raises(AssertionError, match="rounding of the evaluations"):
        check_grads(lambda x: ng.sum(ng.sin(x)) + 1e6, np.array([0.5, 1.0, -2.0]))


def test_plot_check_grads_shows_a_right_gradient_falling_and_a_wrong_one_flat() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from nodegrad.testing import plot_check_grads

    steps, errors, ax = plot_check_grads(lambda x: ng.sum(ng.exp(x) * x), np.array([0.3, -0.2]))
    assert ax.get_xscale() == "log" and steps.shape == errors.shape == (25,)
    best = errors.argmin()
    assert errors[best] < 1e-9 and errors[-1] > 1e3 * errors[best]  # truncation grows with the step

    wrong = ng.custom_vjp(lambda x: ng.sum(x * x))
    wrong.defvjp(lambda x: (ng.sum(x * x), x), lambda x, g: (g * x,))  # half the gradient
    _, flat, _ = plot_check_grads(wrong, np.array([0.3, -0.2]), steps=[1e-6, 1e-4])
    assert np.all(flat > 1e-2)
    with pytest.raises(ng.errors.ArgumentError):
        plot_check_grads(wrong, np.array([0.3]), steps=[-1.0])


# -- the complex-step reference ------------------------------------------------------------------------------


@contextlib.contextmanager
def _sin_rule(rule: Callable[..., Any]) -> Iterator[None]:
    """``ng.sin``'s registered op with the VJP ``rule`` inside the block, restored after."""
    op = REGISTRY["sin"]
    saved = op.vjps
    object.__setattr__(op, "vjps", (rule,))
    try:
        yield
    finally:
        object.__setattr__(op, "vjps", saved)


def _cancelling(x: Any) -> Any:
    """``x + sin(x)``, summed, computed as ``(x + 1e9) - 1e9 + sin(x)``: in float64 the
    cancellation leaves ``x`` only to 1e-7, so central differences are off by 1e-1, while
    the imaginary part of a complex step is carried exactly."""
    return ng.sum((x + 1e9) - 1e9 + ng.sin(x))


def test_complex_step_passes_float32_with_tight_tolerances_where_central_differences_need_loose_ones() -> None:
    x = np.array([0.5, -1.0, 0.25, 2.0], dtype=np.float32)
    check_grads(_cancelling, x, reference="complex_step", rtol=1e-6, atol=1e-6)
    # Central differences lose digits to the cancellation inside f: the check measures that
    # (their gap to a ten times wider step) and passes the right rule, but cannot see a
    # wrong one below it (the next test), where the complex step can.
    check_grads(_cancelling, x, rtol=1e-3)


def test_complex_step_catches_a_wrong_rule_that_central_differences_cannot_see() -> None:
    # Beneath an offset of 1e12, rounding of the two evaluations allows central differences
    # an error of about 1: a rule 1% off passes them, not the complex step.
    f = lambda x: ng.sum(ng.sin(x)) + 1e12
    x = np.array([0.5, 1.0, -2.0])
    check_grads(f, x, reference="complex_step", rtol=1e-10, atol=1e-12)
    both = r"numeric  \(complex step, h=1e-20; central difference, eps=1e-06: "
    with _sin_rule(lambda g, ans, x: g * np.cos(x) * 1.01):
        check_grads(f, x)
        with pytest.raises(AssertionError, match=both) as info:
            check_grads(f, x, reference="complex_step")
    assert "rounding of the evaluations" not in str(info.value)


@attrs.frozen
class _Affine:
    w: Any
    b: Any
    name: str = ng.field(static=True, default="affine")


@pytest.mark.parametrize(
    ("params", "read"),
    [
        pytest.param(np.array([0.3, -0.7, 1.1]), lambda p: (p, 0.5), id="array"),
        pytest.param({"w": np.array([0.3, -0.7, 1.1]), "b": 0.25, "tag": "t"}, lambda p: (p["w"], p["b"]), id="dict"),
        pytest.param(_Affine(np.array([0.3, -0.7, 1.1]), 0.25), lambda p: (p.w, p.b), id="record"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", [1, 2])
def test_complex_step_checks_structures_and_dtypes(
    params: Any, read: Callable[[Any], Any], dtype: Any, order: int
) -> None:
    params = ng.tree.map_floats(lambda leaf: leaf.astype(dtype) if isinstance(leaf, np.ndarray) else leaf, params)

    def f(p: Any) -> Any:
        w, b = read(p)
        return {"y": ng.sin(w) * ng.exp(w * b), "s": ng.sum(ng.tanh(w))}

    check_grads(f, params, reference="complex_step", order=order)
    wrong = (lambda g, ans, x: g * np.cos(x) * 1.01) if order == 1 else _cut_cosine
    with _sin_rule(wrong), pytest.raises(AssertionError, match=f"(?s)order {order}.*complex step") as info:
        check_grads(f, params, reference="complex_step", order=order)
    check_grads(f, params, reference="complex_step", order=order)  # restored
    assert getattr(info.value, "culprit", None) == "sin"


@ng.custom_vjp
def _cast_square(x: Any) -> Any:
    return x.astype(np.float64) ** 2.0  # a complex x loses its imaginary part (with a ComplexWarning)


_cast_square.defvjp(lambda x: (_cast_square.fun(x), x), lambda x, g: (2.0 * x * g,))


@pytest.mark.parametrize(
    ("f", "broken"),
    [
        pytest.param(lambda x: ng.sum(ng.abs(x) * x), "'abs'", id="abs"),
        pytest.param(lambda x: ng.sum(ng.maximum(x, 0.0) ** 2.0), "'maximum'", id="maximum"),
        pytest.param(lambda x: ng.sum(ng.clamp(x, -0.5, 0.5) * x), "'clamp'", id="clip"),
        pytest.param(lambda x: ng.sum(_cast_square(x)), "numpy dropped an imaginary part", id="real-cast"),
        pytest.param(lambda x: ng.sum(ng.hypot(x, 1.0)), "raised DtypeError on complex arguments", id="raises"),
        pytest.param(lambda x: ng.sum(np.sign(x) * x * x), "'abs'", id="sign"),
    ],
)
def test_a_function_that_is_not_analytic_warns_and_falls_back(f: Callable[..., Any], broken: str) -> None:
    x = np.array([0.3, -0.7, 1.2])
    with pytest.warns(UserWarning, match="falling back to central differences") as warned:
        check_grads(f, x, reference="complex_step", order=2)
    assert len(warned) == 1  # once per call, for every check after it too
    assert broken in str(warned[0].message)


def test_a_non_analytic_step_the_recording_cannot_see_is_caught_by_central_differences() -> None:
    # fwd runs on plain values inside one custom node: the abs in it leaves no op behind.
    # Its complex step is wrong (|x| is no analytic function); central differences agree
    # with the (right) rule, and so the check warns and passes on them.
    @ng.custom_vjp
    def signed_square(x: Any) -> Any:
        return np.abs(x) * x

    signed_square.defvjp(lambda x: (np.abs(x) * x, x), lambda x, g: (2.0 * np.abs(x) * g,))
    x = np.array([0.3, -0.7, 1.2])
    with pytest.warns(UserWarning, match="disagrees with central differences"):
        check_grads(lambda x: ng.sum(signed_square(x)), x, reference="complex_step", modes=("rev",))
    # A wrong rule disagrees with both references: the failure stands.
    signed_square.defvjp(lambda x: (np.abs(x) * x, x), lambda x, g: (3.0 * np.abs(x) * g,))
    with pytest.raises(AssertionError, match="complex step") as info:
        check_grads(lambda x: ng.sum(signed_square(x)), x, reference="complex_step", modes=("rev",))
    assert getattr(info.value, "culprit", "").startswith("custom_vjp:")


@pytest.mark.parametrize(
    ("f", "args", "options", "fragment"),
    [
        pytest.param(lambda z: z * z, (np.array([1.0 + 1j]),), {}, "argument 0 is complex", id="complex-argument"),
        pytest.param(lambda x: {"z": x * 1j}, (np.array([1.0]),), {}, r"the output at \['z'\] is complex", id="out"),
        pytest.param(lambda z: z * z, (1j,), {"holomorphic": True}, "holomorphic=True", id="holomorphic"),
        pytest.param(ng.sin, (0.5,), {"reference": "forward"}, "reference must be", id="unknown"),
        pytest.param(ng.sin, (0.5,), {"reference": None}, "reference must be", id="none"),
    ],
)
def test_complex_step_refuses_complex_values_and_unknown_references(
    f: Callable[..., Any], args: tuple[Any, ...], options: dict[str, Any], fragment: str
) -> None:
    options = {"reference": "complex_step", **options}
    with pytest.raises(ng.errors.ArgumentError, match=fragment):
        check_grads(f, *args, **options)


def test_the_default_reference_is_central_differences() -> None:
    check_grads(ng.sin, np.array([0.5]), reference="central_difference")
    with pytest.raises(AssertionError, match=r"numeric  \(central difference, eps=1e-06\)"):
        check_grads(lambda x: ng.stop_gradient(x) * x, np.array([1.0, 2.0]))


# -- tolerances relative to the size of what is compared ------------------------------------------

SCALES = [1e-12, 1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e6]
SCALED = {
    "output scaled": lambda s: lambda x: ng.sum(ng.sin(x) * ng.exp(x)) * s,
    "argument scaled": lambda s: lambda x: ng.sum(ng.sin(x * s)),
    "order 2, output scaled": lambda s: lambda x: ng.sum(ng.sin(x) ** 2.0) * s,
}


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("case", sorted(SCALED))
@pytest.mark.parametrize("factor", [2.0, 0.5, 1.001])
def test_a_wrong_rule_is_caught_however_small_or_large_the_gradient(
    monkeypatch: pytest.MonkeyPatch, scale: float, case: str, factor: float
) -> None:
    # The tolerance scales with what is compared: scaling f (or x) scales every term, so a
    # rule off by a factor fails at every scale, and the right one passes at every scale.
    if case == "argument scaled" and scale > 1e3:
        pytest.skip("sin(1e6 x) turns within a step eps=1e-6: central differences cannot follow it")
    f, x = SCALED[case](scale), np.array([0.3, 0.7, -1.1])
    order = 2 if case.startswith("order 2") else 1
    check_grads(f, x, order=order)
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.cos(x) * factor)
    with pytest.raises(AssertionError, match="fails the dot-product test") as info:
        check_grads(f, x, order=order)
    assert info.value.culprit == "sin"


@pytest.mark.parametrize("scale", SCALES)
def test_a_zero_gradient_passes_at_every_scale(scale: float) -> None:
    # At 0 the gradient of x**3 is 0 and the central difference eps**2 (truncation): the
    # measured truncation, not an absolute tolerance, lets it pass.
    check_grads(lambda x: ng.sum(x**3.0) * scale, np.zeros(3))
    check_grads(lambda x: ng.sum(x**3.0) * scale, np.array([0.0, 1.0]), order=2)
    check_grads(lambda x, y: ng.sum(x**3.0 + y) * scale, np.zeros(2), np.ones(2))


def test_an_explicit_atol_is_absolute_and_the_message_shows_the_relative_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_sin_rule(monkeypatch, lambda g, ans, x: g * np.cos(x) * 2.0)
    f, x = lambda x: ng.sum(ng.sin(x)) * 1e-9, np.array([0.3, 0.7])
    check_grads(f, x, atol=1e-6)  # the caller's choice: an absolute tolerance above the gradient
    with pytest.raises(AssertionError, match=r"atol=0 \+ rtol=1e-05 \* scale .* the check's scale"):
        check_grads(f, x)


# -- a custom_vjp's cotangent of the wrong shape --------------------------------------------------


@ng.custom_vjp
def _summed_rule(x: Any) -> Any:
    return ng.sin(x)


_summed_rule.defvjp(lambda x: (ng.sin(x), x), lambda x, g: (ng.sum(ng.cos(x) * g),))  # a scalar for an array


@pytest.mark.parametrize(("order", "modes"), [(1, ("rev",)), (1, ("fwd",)), (1, ("rev", "fwd")), (2, ("rev",))])
def test_a_custom_vjp_cotangent_of_the_wrong_shape_is_a_gradient_check_error_naming_it(
    order: int, modes: tuple[str, ...]
) -> None:
    with pytest.raises(ng.testing.GradientCheckError) as info:
        check_grads(lambda x: ng.sum(_summed_rule(x) * x), np.array([0.3, 0.7, 1.1]), order=order, modes=modes)
    assert info.value.culprit == "custom_vjp:_summed_rule"
    assert "has shape (), its argument (3,)" in str(info.value)


@pytest.mark.parametrize("scale", SCALES)
def test_the_cauchy_riemann_check_is_relative_too(scale: float) -> None:
    z = np.array([0.3 + 0.2j, -1.0 + 0.5j, 0j])
    check_grads(lambda z: ng.sin(z) ** 3.0 * scale, z, holomorphic=True)  # at 0 too: truncation, measured
    with pytest.raises(AssertionError, match="fails Cauchy-Riemann"):
        check_grads(lambda z: ng.conj(z) * z * scale, z, holomorphic=True)
