"""nodegrad.testing.check_consistency: every check passes on right code (arrays, dicts,
records, lists, float32 and float64, real and complex) and fails, naming its pair, on a bug
planted for it. Bugs are planted without editing the library: a private function
monkeypatched, an op's rule or batching rule replaced and restored, a custom_vjp whose
residuals go stale."""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import nodegrad as ng
import nodegrad.custom
import nodegrad.transforms.matrices
from nodegrad.engine.registry import BATCH_RULES
from nodegrad.engine.structure import differentiable_leaves, is_differentiable_leaf, zip_leaves
from nodegrad.errors import ArgumentError
from nodegrad.ops import REGISTRY, batching
from nodegrad.testing import ConsistencyError, check_consistency
from nodegrad.testing.strategies import Pair, Tagged, data_frames, structures
from nodegrad.transforms.replay import Trace

CHECKS = ["checkpoint", "custom_vjp", "closure", "hessian_symmetric", "hvp", "vmap", "replay"]
X = np.array([0.3, -0.5, 1.2])
Y = np.array([0.7, 0.2, -0.9])


@ng.custom_vjp
def _cube(x: Any) -> Any:
    return x**3.0


_cube.defvjp(lambda x: (x**3.0, x), lambda x, g: (3.0 * x**2.0 * g,))


def _mlp(p: Any, x: Any) -> Any:
    return ng.mean(ng.tanh(x @ p["w"] + p["b"]) ** 2.0) * p["scale"]


# -- right code passes ----------------------------------------------------------------------------

PASSING: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "array float64": (lambda x: ng.sum(ng.tanh(x) ** 2.0 * x), (X,)),
    "array float32": (lambda x: ng.sum(ng.tanh(x) ** 2.0 * x), (X.astype(np.float32),)),
    "two arguments, a vector output": (lambda x, y: ng.sin(x * y) + x[::-1] * y, (X, Y)),
    "dict with static leaves": (
        _mlp,
        ({"w": np.array([[0.5, -1.0], [0.3, 0.8]]), "b": np.array([0.1, -0.2]), "scale": 1.5, "tag": "t"}, X[:2]),
    ),
    "dict float32": (
        _mlp,
        ({"w": np.eye(2, dtype=np.float32), "b": np.ones(2, np.float32), "scale": np.float32(2.0)}, X[:2]),
    ),
    "records and a structured output": (
        lambda r, t: {"a": ng.sin(r.x) * r.y, "b": [t.w * r.x[0]]},
        (Pair(X, Y), Tagged(np.array([0.4, -0.1]), tag="static")),
    ),
    "lists and a Python float": (lambda xs, a: ng.sum(xs[0] * ng.exp(xs[1] * a)), ([X, Y], 0.5)),
    "complex128 to real": (lambda z: ng.sum(ng.abs(ng.sin(z)) ** 2.0), (X + 1j * Y,)),
    "complex64 to complex": (lambda z: {"s": ng.sin(z) * z}, ((X + 1j * Y).astype(np.complex64),)),
    "complex and real arguments": (lambda z, x: ng.sum(ng.real(z * ng.exp(1j * x))), (X + 1j * Y, Y)),
    "custom_vjp": (lambda x, y: ng.sum(_cube(x) * y), (X, Y)),
    "checkpoint inside": (lambda x: ng.checkpoint(lambda u: ng.sum(ng.tanh(u) * u))(x * 2.0), (X,)),
    "kinks are the same maths both ways": (lambda x: ng.sum(ng.abs(x) * ng.sort(x)) + ng.max(x), (X,)),
}


@pytest.mark.parametrize("case", sorted(PASSING))
def test_every_check_passes_on_right_code(case: str) -> None:
    f, args = PASSING[case]
    report = check_consistency(f, *args)
    assert list(report) == CHECKS
    expected_na = set() if "custom_vjp" in case or "checkpoint" in case else {"custom_vjp"}
    assert {name for name, outcome in report.items() if outcome.startswith("not applicable")} == expected_na
    assert all(outcome.startswith(("passed", "not applicable")) for outcome in report.values())


def test_complex_arguments_reach_the_hessian_through_their_real_and_imaginary_parts() -> None:
    report = check_consistency(lambda z: ng.sum(ng.abs(z) ** 2.0), X + 1j * Y, checks=("hessian_symmetric", "hvp"))
    assert report["hvp"] == "passed; complex arguments through their real and imaginary parts"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structures(dtypes=(np.float64, np.float32, np.complex128), max_leaves=4))
def test_every_check_passes_on_drawn_structures(value: Any) -> None:
    assume(any(np.size(leaf) for _, leaf in differentiable_leaves(value)))
    # ng.jacobian (so ng.hessian) fails on a float field marked static (an engine bug of its own).
    differentiable = {path for path, _ in differentiable_leaves(value)}
    static_floats = [p for p, leaf in ng.tree.tree_leaves_with_path(value) if isinstance(leaf, float)]
    assume(set(static_floats) <= differentiable)
    report = check_consistency(lambda v: ng.tree.map_floats(lambda a: ng.sin(a) * a, v), value)
    assert all(outcome.startswith(("passed", "not applicable")) for outcome in report.values())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_frames(min_rows=1, max_rows=4, float_columns=("price", "cost"), key_columns={"store": "str"}))
def test_every_check_that_applies_passes_on_drawn_tables(table: Any) -> None:
    def margin(t: Any) -> Any:  # (a missing store belongs to no group; with no store at all, none)
        by_store = t[["price", "store"]].groupby("store").sum()
        return np.sum(np.tanh(t["price"] - t["cost"])) * np.sum(by_store["price"] ** 2.0)

    report = check_consistency(margin, table)
    assert report["vmap"].startswith("not applicable: a table's columns hold its rows")
    assert report["hvp"] == "passed; tables through their float entries end to end"
    assert all(outcome.startswith("passed") for name, outcome in report.items() if name not in {"vmap", "custom_vjp"})


# -- the report and the arguments -------------------------------------------------------------------


def test_checks_selects_and_orders_the_checks() -> None:
    report = check_consistency(lambda x: ng.sum(x**3.0), X, checks=["vmap", "checkpoint"])
    assert report == {"checkpoint": "passed", "vmap": "passed"}
    assert check_consistency(lambda x: ng.sum(x**3.0), X, checks="hvp") == {"hvp": "passed"}


def test_a_check_that_does_not_apply_says_why() -> None:
    report = check_consistency(lambda x: ng.sum(x**3.0), X, checks=["custom_vjp"])
    assert report == {"custom_vjp": "not applicable: f calls no custom_vjp function"}
    first_order = ng.custom_vjp(lambda x: x * x)
    first_order.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * np.asarray(x) * g,))  # leaves nodegrad
    report = check_consistency(lambda x: ng.sum(first_order(x)), X, checks=["hessian_symmetric", "replay"])
    assert report["hessian_symmetric"].startswith("not applicable: f has no second derivatives: op 'custom_vjp:")
    # replay(grad(f)) meets np.asarray of a staged value and runs eagerly: a note, not a failure
    assert re.match(r"passed; ran eagerly \(.*np\.asarray", report["replay"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"checks": ["vmap", "jvp_vjp"]}, r"unknown checks \['jvp_vjp'\]; the checks are \['checkpoint'"),
        ({"checks": 3}, "checks must be a sequence of check names"),
        ({"rtol": -1.0}, "rtol must be a finite number >= 0"),
        ({"atol": float("nan")}, "atol must be a finite number >= 0"),
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"argnums": 5}, "check_consistency: .*argnums"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        check_consistency(lambda x: ng.sum(x), X, **kwargs)


def test_f_must_be_callable_and_something_must_be_differentiable() -> None:
    with pytest.raises(ArgumentError, match="f must be callable"):
        check_consistency(3.0, X)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="no argument holds a float value"):
        check_consistency(lambda n: n * 2.0, 3)


def test_argnums_keeps_the_other_arguments_fixed() -> None:
    calls: list[Any] = []

    def f(x: Any, y: Any) -> Any:
        calls.append(y)
        return ng.sum(ng.sin(x) * y)

    check_consistency(f, X, Y, argnums=0, checks=["vmap"])
    assert all(y is Y for y in calls)  # y is never moved, batched or traced


# -- planted bugs: each caught by its own check -------------------------------------------------------


def _raises(f: Callable[..., Any], *args: Any, checks: str, pair: tuple[str, str], **kwargs: Any) -> str:
    with pytest.raises(ConsistencyError) as info:
        check_consistency(f, *args, checks=checks, **kwargs)
    assert isinstance(info.value, AssertionError)
    assert info.value.pair == pair
    message = str(info.value)
    assert message.startswith(f"check_consistency ({checks!r}): {pair[0]} and {pair[1]} ")
    return message


def test_a_consistency_error_pickles_with_its_pair() -> None:
    error = pickle.loads(pickle.dumps(ConsistencyError("message", ("vmap(f)", "f on each example"))))
    assert isinstance(error, AssertionError)
    assert (str(error), error.pair) == ("message", ("vmap(f)", "f on each example"))


def test_checkpoint_giving_the_cotangents_to_the_wrong_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    vjp = nodegrad.custom.vjp

    def swapped(fun: Any, *args: Any) -> Any:
        out, back = vjp(fun, *args)
        return out, lambda g: tuple(reversed(back(g)))

    monkeypatch.setattr(nodegrad.custom, "vjp", swapped)  # what checkpoint's backward calls
    f = lambda x, y: ng.sum(ng.sin(x) * y**2.0)
    message = _raises(f, X, Y, checks="checkpoint", pair=("grad(checkpoint(f))", "grad(f)"))
    assert "disagree at argument 0 (shape (3,), float64), entry (" in message
    assert re.search(r"\n  grad\(checkpoint\(f\)\) = .*\n  grad\(f\)             = .*\n  \|difference\| = ", message)


def test_checkpoint_raising_where_grad_gives_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    vjp = nodegrad.custom.vjp

    def misshapen(fun: Any, *args: Any) -> Any:
        out, back = vjp(fun, *args)
        return out, lambda g: tuple(np.stack([c, c], axis=-1) for c in back(g))  # (3, 2) for a (3,) argument

    monkeypatch.setattr(nodegrad.custom, "vjp", misshapen)
    message = _raises(lambda x: ng.sum(ng.sin(x)), X, checks="checkpoint", pair=("grad(checkpoint(f))", "grad(f)"))
    assert "disagree: grad(checkpoint(f)) raised ShapeError: custom_vjp " in message
    assert message.endswith("\n  where grad(f) gave a result")


def test_checkpoint_dropping_the_gradient_of_a_value_it_reaches_by_closure(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bug that existed: checkpoint took a closed-over traced value for a constant.
    monkeypatch.setattr(nodegrad.custom, "_captured", lambda value, arena: None)
    f = lambda p: ng.sum(ng.tanh(p["w"]) * p["w"] * p["b"])
    p = {"w": X, "b": 0.5}
    assert check_consistency(f, p, checks="checkpoint") == {"checkpoint": "passed"}  # the plain form is right
    message = _raises(f, p, checks="closure", pair=("grad(checkpoint(f)) by closure", "grad(f)"))
    assert "argument 0['w'] (shape (3,), float64)" in message
    two = lambda x, y: ng.sum(ng.tanh(x) * y)
    _raises(two, X, Y, checks="closure", pair=("grad(checkpoint(f)) closing over argument 0", "grad(f)"))


def _stale_cube() -> Any:
    # fwd stores its residual in one dict for every call: each bwd reads the latest one
    last: dict[str, Any] = {}

    @ng.custom_vjp
    def cube(x: Any) -> Any:
        return x**3.0

    def fwd(x: Any) -> Any:
        last["x"] = x
        return x**3.0, last

    cube.defvjp(fwd, lambda res, g: (3.0 * res["x"] ** 2.0 * g,))
    return cube


def test_a_residual_overwritten_by_a_later_call_inside_f() -> None:
    cube = _stale_cube()
    f = lambda x: ng.sum(cube(x) + cube(2.0 * x))
    pair = ("grad(f) from stored residuals", "grad(f) with fwd run again")
    message = _raises(f, X, checks="custom_vjp", pair=pair)
    assert "argument 0 (shape (3,), float64)" in message
    assert message.endswith("\n  the custom functions f calls: '_stale_cube.<locals>.cube'")


def test_a_residual_overwritten_by_another_call_of_f() -> None:
    cube = _stale_cube()
    pair = ("vjp(f) after another vjp(f)", "vjp(checkpoint(f)) after another vjp(f)")
    _raises(lambda p: ng.sum(cube(p["w"]) * p["b"]), {"w": X, "b": 2.0}, checks="custom_vjp", pair=pair)


def test_a_bwd_that_changes_its_residuals_in_place() -> None:
    @ng.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    def bwd(res: Any, g: Any) -> Any:
        cotangent = 2.0 * res * g
        res *= 2.0  # the next backward pass reads a doubled residual
        return (cotangent,)

    square.defvjp(lambda x: (x * x, np.array(x)), bwd)
    pair = ("vjp(f)'s backward run twice", "vjp(f)'s backward run once")
    _raises(lambda x: ng.sum(square(x)), X, checks="custom_vjp", pair=pair)


def test_a_right_custom_vjp_passes_and_is_named() -> None:
    report = check_consistency(lambda x, y: ng.sum(_cube(x) * y), X, Y.astype(np.float32), checks="custom_vjp")
    assert report == {"custom_vjp": "passed; custom functions: _cube"}


@pytest.fixture
def multiply_with_a_wrong_second_order_term() -> Iterator[None]:
    """multiply's first rule with the right value and a dropped derivative (y read as a constant)."""
    op = REGISTRY["multiply"]
    rules = op.vjps
    try:
        object.__setattr__(op, "vjps", (lambda g, ans, x, y: g * ng.stop_gradient(y), rules[1]))
        yield
    finally:
        object.__setattr__(op, "vjps", rules)


@pytest.mark.usefixtures("multiply_with_a_wrong_second_order_term")
@pytest.mark.parametrize(
    ("f", "args", "where"),
    [
        (lambda x: ng.sum(x[:-1] * x[1:]), (X,), r"argument 0\[\d\] and argument 0\[\d\]"),
        (lambda x, y: ng.sum(ng.sin(x * y)), (X, Y), r"argument \d\[\d\] and argument \d\[\d\]"),
        (lambda p: ng.sum(p["w"] * p["b"]) ** 2.0, ({"w": X, "b": 0.5, "n": 3},), r"argument 0\['\w'\]"),
        (lambda r: ng.sum(ng.sin(r.x * r.y)), (Pair(X.astype(np.float32), Y.astype(np.float32)),), r"argument 0\.x"),
        (lambda z: ng.sum(ng.abs(z[:-1] * z[1:]) ** 2.0), (X + 1j * Y,), r"(Re|Im) argument 0\[\d\] and"),
    ],
)
def test_a_wrong_second_order_term_makes_the_hessian_asymmetric(f: Any, args: Any, where: str) -> None:
    message = _raises(f, *args, checks="hessian_symmetric", pair=("hessian(f)", "hessian(f) transposed"))
    assert re.search(f"disagree at the entry of {where}", message)
    # and the op whose rule's derivative is wrong, as check_grads(order=2) finds it
    assert re.search(
        r"\n  check_grads\(f, order=2\) blames op 'multiply' \(recorded at .*test_check_consistency.py:\d+\)", message
    )


def test_hvp_dropping_a_leaf_of_its_direction(monkeypatch: pytest.MonkeyPatch) -> None:
    real_vdot = nodegrad.transforms.matrices.traced_vdot

    def without_the_last_leaf(a: Any, b: Any) -> Any:
        pairs = [(x, y) for _, x, y in zip_leaves(a, b) if x is not None and is_differentiable_leaf(x)]
        return real_vdot([x for x, _ in pairs[:-1]], [y for _, y in pairs[:-1]])

    monkeypatch.setattr(nodegrad.transforms.matrices, "traced_vdot", without_the_last_leaf)  # hvp's <grad f, v>
    f = lambda p: ng.sum(ng.sin(p["w"]) * p["b"] ** 2.0)
    p = {"w": X, "b": Y, "name": "layer"}
    assert check_consistency(f, p, checks="hessian_symmetric") == {"hessian_symmetric": "passed"}
    message = _raises(f, p, checks="hvp", pair=("hvp(f)", "hessian(f) @ w"))
    assert re.search(r"disagree at argument 0\['\w'\]\[\d\]:", message)


@pytest.fixture
def reversed_batching_rule() -> Iterator[Callable[[str], None]]:
    """Replace an op's batching rule with one that hands back the examples in reverse order."""
    replaced: list[tuple[str, Any]] = []

    def plant(name: str) -> None:
        rule = batching.rule_of(REGISTRY[name])
        assert rule is not None
        replaced.append((name, BATCH_RULES.get(name)))
        BATCH_RULES[name] = lambda op_, batched, size, *args: rule(op_, batched, size, *args)[::-1]

    try:
        yield plant
    finally:
        for name, rule in replaced:
            if rule is None:
                del BATCH_RULES[name]
            else:
                BATCH_RULES[name] = rule


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_vmap_with_a_batching_rule_that_mixes_up_the_examples(
    reversed_batching_rule: Callable[[str], None], dtype: Any
) -> None:
    reversed_batching_rule("tanh")
    p = {"w": X.astype(dtype), "b": 0.5}
    message = _raises(lambda p: ng.tanh(p["w"] * p["b"]), p, checks="vmap", pair=("vmap(f)", "f on each example"))
    assert "example 0 of the output (shape (3,)" in message
    assert message.endswith("the first op of f whose batching rule disagrees with its forward on each example: 'tanh'")


def test_vmap_of_grad_with_a_wrong_batching_rule_in_the_gradient(reversed_batching_rule: Callable[[str], None]) -> None:
    reversed_batching_rule("cos")  # sin's gradient rule calls cos; sin itself does not
    pair = ("vmap(grad(f))", "grad(f) on each example")
    message = _raises(lambda r: ng.sum(ng.sin(r.x) * r.y), Pair(X, Y), checks="vmap", pair=pair)
    assert "example 0 of argument 0.x (shape (3,), float64)" in message
    assert message.endswith(
        "the first op of grad(f)'s sweep whose batching rule disagrees with its forward on each example: 'cos'"
    )


def test_replay_handing_out_one_buffer_for_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    run = Trace.run
    buffers: dict[int, np.ndarray] = {}

    def into_one_buffer(self: Any, leaves: Any) -> Any:
        out = run(self, leaves)
        if not isinstance(out, np.ndarray):
            return out
        buffer = buffers.setdefault(id(self), np.empty_like(out))
        buffer[...] = out
        return buffer

    monkeypatch.setattr(Trace, "run", into_one_buffer)
    f = lambda x: ng.tanh(x) * 2.0
    pair = ("replay(f)'s result after later calls", "as it was returned")
    assert "the output (a second call)" in _raises(f, X, checks="replay", pair=pair)


def test_replay_off_by_one_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    run = Trace.run
    monkeypatch.setattr(
        Trace,
        "run",
        lambda self, leaves: ng.tree.map_floats(lambda a: np.nextafter(a, np.inf), run(self, leaves)),
    )
    message = _raises(lambda x: ng.sum(ng.tanh(x)), X.astype(np.float32), checks="replay", pair=("replay(f)", "f"))
    assert "the output (a second call)" in message
    assert "not bit for bit" in message


# -- tolerances ------------------------------------------------------------------------------------


def test_default_tolerances_follow_the_dtype_and_rtol_overrides_them(monkeypatch: pytest.MonkeyPatch) -> None:
    vjp = nodegrad.custom.vjp

    def slightly_off(fun: Any, *args: Any) -> Any:
        out, back = vjp(fun, *args)
        return out, lambda g: tuple(c * (1 + 1e-7) for c in back(g))

    monkeypatch.setattr(nodegrad.custom, "vjp", slightly_off)
    f = lambda x: ng.sum(ng.sin(x) * x)
    _raises(f, X, checks="checkpoint", pair=("grad(checkpoint(f))", "grad(f)"))  # float64: rtol 1e-10
    assert check_consistency(f, X, checks="checkpoint", rtol=1e-6) == {"checkpoint": "passed"}
    assert check_consistency(f, X.astype(np.float32), checks="checkpoint") == {"checkpoint": "passed"}  # 1e-4


def test_nan_on_both_sides_agrees_and_nan_on_one_side_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    with np.errstate(invalid="ignore"):  # the gradient of sqrt at -1 is NaN both ways
        assert check_consistency(lambda x: ng.sum(ng.sqrt(x)), np.array([-1.0, 4.0]), checks="checkpoint") == {
            "checkpoint": "passed"
        }
    vjp = nodegrad.custom.vjp

    def nan_first(fun: Any, *args: Any) -> Any:
        out, back = vjp(fun, *args)
        return out, lambda g: tuple(np.where(np.arange(np.size(c)) == 0, np.nan, c) for c in back(g))

    monkeypatch.setattr(nodegrad.custom, "vjp", nan_first)
    message = _raises(lambda x: ng.sum(x**2.0), X, checks="checkpoint", pair=("grad(checkpoint(f))", "grad(f)"))
    assert "entry (0,):\n  grad(checkpoint(f)) = nan" in message


# -- the docs -----------------------------------------------------------------------------------------


def test_the_examples_of_the_docs_sections_run_and_print_what_they_show() -> None:
    # The sections on check_consistency and on property tests of a model, at the end of the
    # testing page: its code blocks run in order, and a block followed by a text block prints it.
    text = (Path(__file__).parent.parent / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(
        r"```(python|text)\n(.*?)```", text[text.index("## Checking transforms against each other") :], re.S
    )
    assert sum(kind == "python" for kind, _ in blocks) >= 4
    namespace: dict[str, Any] = {}
    printed = ""
    for kind, code in blocks:
        if kind == "text":
            assert printed == code
            continue
        out = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            warnings.simplefilter("error")
            exec(compile(code, "docs/testing.md", "exec"), namespace)  # the page's own code
        printed = out.getvalue()


# -- a function that formats a value: vmap cannot batch it, and says why ---------------------------

FORMATTERS: dict[str, Callable[[Any], str]] = {
    "f-string with a spec": lambda x: f"{x[0]:.3f}",
    "format()": lambda x: format(ng.sum(x), ".2f"),
    "str.format": lambda x: "{:>8.2e}".format(x[1]),  # noqa: UP032  (str.format itself)
}


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_formatting_a_batched_value_is_refused_by_a_batching_error_and_check_consistency_says_why(name: str) -> None:
    text = FORMATTERS[name]

    def f(x: Any) -> Any:
        text(x)  # (a log line, say)
        return ng.sum(ng.sin(x))

    x = np.array([0.3, 0.7, 1.1])
    with pytest.raises(ng.errors.BatchingError, match=r"format\(\) with the spec .* each example has its own text"):
        ng.vmap(f)(np.stack([x, x]))
    report = check_consistency(f, x)
    assert report["vmap"].startswith("not applicable: vmap cannot batch f: format() with the spec")
    assert ng.vmap(lambda x: f"{x}" and x * 2.0)(x[None]).shape == (1, 3)  # no spec: the value as str shows it
