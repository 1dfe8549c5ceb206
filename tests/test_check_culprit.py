"""check_grads names the op to blame: each recorded op's rule against its own forward.

Wrong rules are made with ``ng.custom_vjp`` and, for registry ops, by swapping an op's
rules for the length of a ``with`` block (always restored). Every test that shows a wrong
rule named also shows the right rule passing.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
import nodegrad.testing._check as check_module
import nodegrad.testing._culprit as culprit_module
from nodegrad.errors import ArgumentError
from nodegrad.ops import REGISTRY
from nodegrad.testing import GradientCheckError, check_grads
from nodegrad.testing.strategies import float_arrays

HERE = str(Path(__file__).resolve())
TRIPLE = "custom_vjp:scaled_by.<locals>.triple"  # the op of the custom_vjp function below


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (once)."""
    lines = [i for i, text in enumerate(Path(HERE).read_text().splitlines(), 1) if marker in text]
    assert len(lines) == 2, lines  # the marked line, and this call's own argument
    return lines[0]


@contextlib.contextmanager
def rules_of(name: str, *rules: Callable[..., Any]) -> Iterator[None]:
    """Give the registry op ``name`` the VJP ``rules`` inside the block; restore them after."""
    op = REGISTRY[name]
    saved = op.vjps
    object.__setattr__(op, "vjps", rules)
    try:
        yield
    finally:
        object.__setattr__(op, "vjps", saved)


def failure(f: Callable[..., Any], *args: Any, **options: Any) -> GradientCheckError:
    with pytest.raises(GradientCheckError) as info:
        check_grads(f, *args, **options)
    return info.value


def scaled_by(factor: float) -> Any:
    """A custom_vjp of ``3 x`` whose rule multiplies by ``factor`` (3 is right)."""

    @ng.custom_vjp
    def triple(x: Any) -> Any:
        return 3.0 * x

    triple.defvjp(lambda x: (3.0 * x, None), lambda _, g: (factor * g,))
    return triple


# -- a 30-op function with one broken op in the middle -----------------------------------------------


def composite(x: Any, triple: Any) -> Any:
    """About thirty ops: elementwise, reductions, matmul, softmax, indexing, stacking."""
    w = ng.reshape(np.cos(np.arange(12.0) * 0.3), (4, 3))
    h = ng.tanh(x @ w) * 0.5 + ng.sin(x[:3])
    h = ng.exp(-h * h) + ng.log1p(h * h)
    h = ng.softmax(ng.stack([h, h * 2.0]), axis=0)[0]
    h = triple(h)  # the broken op
    h = ng.sqrt(h * h + 1.0) - ng.mean(h) * ng.cos(h)
    h = ng.cat([h, ng.sigmoid(h[::-1])])
    return ng.sum(ng.logsumexp(ng.reshape(h, (2, 3)), axis=1) * np.arange(1.0, 3.0))


X = np.array([0.3, -0.8, 1.2, 0.5])


def test_a_30_op_function_passes_with_the_right_rule_and_names_the_wrong_one() -> None:
    arena = ng.Arena()
    composite(arena.param(X), scaled_by(3.0))
    assert len([node for node in arena if node.parents]) >= 30
    check_grads(lambda x: composite(x, scaled_by(3.0)), X)
    error = failure(lambda x: composite(x, scaled_by(2.5)), X)
    assert error.culprit == TRIPLE
    assert error.location == f"{HERE}:{line_of('# the broken op')}"
    message = str(error)
    header = (
        f"the first op that disagrees with its own forward: {TRIPLE!r} (the custom_vjp function {TRIPLE[11:]}; inputs"
    )
    assert header in message
    assert f"recorded at {error.location} in composite" in message
    assert "its gradient rule for argument 0" in message
    assert message.startswith("check_grads (order 1, mode 'rev')")  # the whole function's numbers stay first
    assert message.count("the first op") == 1  # only the custom op is named


def test_a_broken_registry_op_in_the_middle_is_named_with_its_line() -> None:
    tanh = REGISTRY["tanh"].vjps[0]
    with rules_of("tanh", lambda g, ans, x: tanh(g, ans, x) * 1.05):
        error = failure(lambda x: composite(x, scaled_by(3.0)), X)
    assert error.culprit == "tanh"
    assert error.location == f"{HERE}:{line_of('h = ng.tanh(x @ w)')}"
    assert "'tanh' (inputs (3,) float64)" in str(error)
    check_grads(lambda x: composite(x, scaled_by(3.0)), X)  # restored


def test_a_broken_binary_op_reports_the_shapes_and_dtypes_of_its_inputs() -> None:
    multiply = REGISTRY["multiply"]
    with rules_of("multiply", multiply.vjps[0], lambda g, ans, x, y: -g * x):
        error = failure(lambda x, y: ng.sum(ng.exp(x) * y), np.ones(3), np.full(3, 0.5))
    assert error.culprit == "multiply"
    assert "'multiply' (inputs (3,) float64, (3,) float64)" in str(error)
    assert "its gradient rule for input 1" in str(error)


# -- structures, dtypes, complex values ----------------------------------------------------------------


@attrs.frozen
class Layer:
    w: Any
    b: Any
    name: str = ng.field(static=True, default="layer")


STRUCTURES = [
    pytest.param(lambda x: x, lambda p: (p, 0.25), "args[0]", id="array"),
    pytest.param(lambda x: {"w": x, "b": 0.5, "tag": "t"}, lambda p: (p["w"], p["b"]), "args[0]['w']", id="dict"),
    pytest.param(lambda x: Layer(x, 0.5), lambda p: (p.w, p.b), "args[0].w", id="record"),
]


@pytest.mark.parametrize(("make", "read", "path"), STRUCTURES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_wrong_custom_vjp_is_named_for_arrays_dicts_and_records(make: Any, read: Any, path: str, dtype: Any) -> None:
    def loss(triple: Any) -> Callable[[Any], Any]:
        def f(p: Any) -> Any:
            w, b = read(p)
            return ng.sum(ng.tanh(triple(ng.sin(w)) + b))

        return f

    p = make(np.array([0.2, -0.4, 0.9], dtype=dtype))
    check_grads(loss(scaled_by(3.0)), p)
    error = failure(loss(scaled_by(3.3)), p)
    assert error.culprit == TRIPLE
    assert error.location is not None and error.location.startswith(f"{HERE}:")
    assert f"reading {path}" in str(error)


def test_a_custom_vjp_of_structured_arguments_and_outputs_is_named() -> None:
    @ng.custom_vjp
    def affine(p: Any, x: Any) -> Any:
        return Layer(p["w"] * x, p["b"] + x)

    def rules(w_factor: float) -> Any:
        return lambda r, g: ({"w": g.w * r[1] * w_factor, "b": ng.sum(g.b), "tag": None}, g.w * r[0]["w"] + g.b)

    def f(p: Any, x: Any) -> Any:
        out = affine(p, ng.sin(x))
        return ng.sum(ng.exp(out.w)) + ng.sum(out.b * out.b)

    p, x = {"w": np.array([0.1, 0.2, 0.3]), "b": 0.5, "tag": "t"}, np.array([0.5, -1.0, 2.0])
    affine.defvjp(lambda p, x: (affine.fun(p, x), (p, x)), rules(1.0))
    check_grads(f, p, x, modes=("rev",))
    affine.defvjp(lambda p, x: (affine.fun(p, x), (p, x)), rules(2.0))
    error = failure(f, p, x, modes=("rev",))
    assert error.culprit == f"custom_vjp:{affine.__qualname__}"
    assert "its gradient rule for argument 0" in str(error)


def test_a_wrong_rule_of_a_complex_op_is_named() -> None:
    rng = np.random.default_rng(3)
    z, w = rng.standard_normal(3) + 1j * rng.standard_normal(3), rng.standard_normal(3) + 1j * rng.standard_normal(3)
    f = lambda z: ng.sum(ng.abs(z * w) ** 2.0 + ng.real(ng.exp(z)))
    check_grads(f, z)
    rule = REGISTRY["abs"].vjps[0]
    with rules_of("abs", lambda g, ans, x: np.conj(rule(g, ans, x))):  # the conjugate the other way round
        error = failure(f, z)
    assert error.culprit == "abs"
    assert "'abs' (inputs (3,) complex128)" in str(error)
    assert "along imaginary directions" in str(error)


def test_a_custom_vjp_on_complex_values_with_a_stray_conjugate_is_named() -> None:
    def square(conjugate: bool) -> Any:
        @ng.custom_vjp
        def csquare(z: Any) -> Any:
            return z * z

        # JAX's convention: the VJP of a holomorphic function is g f'(z), no conjugate.
        csquare.defvjp(lambda z: (z * z, z), lambda z, g: (2.0 * g * (np.conj(z) if conjugate else z),))
        return csquare

    name = f"custom_vjp:{square(False).__qualname__}"
    z = np.array([0.5 + 0.2j, -1.0 + 0.7j], dtype=np.complex64)
    f = lambda sq: lambda z: ng.sum(ng.real(sq(ng.exp(z)) * (1.0 - 2.0j)))
    check_grads(f(square(False)), z)
    error = failure(f(square(True)), z)
    assert error.culprit == name


# -- kinks: innocent ops are not blamed ---------------------------------------------------------------------


def _kinky(triple: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        kinks = ng.relu(x) + ng.clamp(x, -1.0, 0.5) + ng.abs(x)  # x[0] == 0, x[1] == 0.5: kinks
        ties = ng.max(ng.stack([x, x]), axis=0) + ng.sort(ng.cat([x, x]))[::2]
        return ng.sum(triple(kinks + ties) * ng.tanh(x))

    return f


def test_ops_at_kinks_are_listed_as_unchecked_never_blamed() -> None:
    x = np.array([0.0, 0.5, -0.7])
    error = failure(_kinky(scaled_by(2.0)), x)
    assert error.culprit == TRIPLE
    message = str(error)
    assert "ops that could not be checked at this point:" in message
    assert "'relu' recorded at" in message and "'clamp' recorded at" in message
    # The kinks alone make the whole check fail (central differences straddle them), but
    # no op is to blame for that.
    error = failure(_kinky(scaled_by(3.0)), x)
    assert error.culprit is None and error.location is None
    assert "no single op disagrees with its own forward at this point; the whole function's check failed" in str(error)
    check_grads(_kinky(scaled_by(3.0)), np.array([0.3, 0.7, -0.6]))  # away from the kinks: right


def culprit_of(f: Callable[..., Any], *args: Any, **options: Any) -> str | None:
    """The culprit the check names, ``None`` if it names none, ``"passes"`` if it passes."""
    try:
        check_grads(f, *args, **options)
    except GradientCheckError as error:
        return error.culprit
    return "passes"


@settings(max_examples=15, deadline=None)
@given(float_arrays((4,), bound=2.0))
def test_only_the_wrong_custom_vjp_is_ever_named(x: np.ndarray) -> None:
    # Any point, kinks and ties included: the composite's own ops are never blamed (it may
    # fail at a kink, naming none; the wrong rule may pass where the gradient through it vanishes).
    assert culprit_of(lambda x: composite(x, scaled_by(3.0)), x, modes=("rev",)) in ("passes", None)
    assert culprit_of(lambda x: composite(x, scaled_by(1.5)), x, modes=("rev",)) in ("passes", TRIPLE)


# -- order 2 and forward mode -------------------------------------------------------------------------------


def _cut_cosine(g: Any, ans: Any, x: Any) -> Any:
    """sin's VJP with the right value but cut off from ``x`` when recorded: right at order 1."""
    return g * np.cos(ng.stop_gradient(x))


@pytest.mark.parametrize("modes", [("rev",), ("fwd",)])
def test_a_rule_wrong_only_at_order_2_is_named_by_its_derivative(modes: tuple[str, ...]) -> None:
    f = lambda x: ng.sum(ng.sin(ng.exp(x) * 0.5) ** 2.0)
    x = np.array([0.3, -0.4, 0.8])
    check_grads(f, x, order=2, modes=modes)
    with rules_of("sin", _cut_cosine):
        check_grads(f, x, modes=modes)  # order 1 cannot tell
        error = failure(f, x, order=2, modes=modes)
    assert error.culprit == "sin"
    assert "its gradient rule's derivative" in str(error)
    assert "(every op's rule agrees with its own forward)" in str(error)


def test_a_rule_forward_mode_cannot_transpose_is_named() -> None:
    # Right in reverse mode; forward mode differentiates the rule in its cotangent, which is cut.
    f = lambda x: ng.sum(ng.sin(x) * x)
    x = np.array([0.3, -0.4, 0.8])
    with rules_of("sin", lambda g, ans, x: ng.stop_gradient(g) * np.cos(x)):
        check_grads(f, x, modes=("rev",))
        error = failure(f, x, modes=("fwd",))
    assert error.culprit == "sin"
    assert "moved along its cotangent g" in str(error)


# -- the error and its contract ------------------------------------------------------------------------------


def test_the_error_is_an_assertion_error_with_culprit_and_location() -> None:
    assert issubclass(GradientCheckError, AssertionError)
    error = failure(lambda x: ng.sum(scaled_by(1.0)(x)), np.ones(2))
    assert isinstance(error.culprit, str) and isinstance(error.location, str)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.culprit, copy.location) == (
        GradientCheckError,
        str(error),
        error.culprit,
        error.location,
    )
    assert (GradientCheckError("m").culprit, GradientCheckError("m").location) == (None, None)


def test_a_failure_no_op_explains_has_no_culprit() -> None:
    error = failure(lambda x: ng.stop_gradient(x) * x, np.array([1.0, 2.0]))
    assert (error.culprit, error.location) == (None, None)
    assert str(error).endswith(
        "no single op disagrees with its own forward at this point; the whole function's check failed"
    )


def test_the_search_runs_only_after_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = check_module.blamed
    monkeypatch.setattr(check_module, "blamed", lambda *a, **k: calls.append(a) or real(*a, **k))
    check_grads(lambda x: composite(x, scaled_by(3.0)), X, order=2)
    assert not calls
    failure(lambda x: composite(x, scaled_by(2.0)), X)
    assert len(calls) == 1


def test_a_search_that_cannot_record_keeps_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> Any:
        raise RuntimeError("not today")

    monkeypatch.setattr(culprit_module, "record_call", refuse)
    error = failure(lambda x: ng.sum(scaled_by(2.0)(x)), np.array([1.0, 2.0]))
    assert str(error).startswith("check_grads (order 1, mode 'rev')")
    assert "could not record the function again: RuntimeError: not today" in str(error)
    assert error.culprit is None


def test_bad_arguments_still_raise_argument_errors() -> None:
    with pytest.raises(ArgumentError, match="reference must be"):
        check_grads(ng.sin, 0.5, reference="forward")


def test_a_rule_that_raises_or_gives_the_wrong_shape_is_named_with_its_line() -> None:
    x = np.linspace(0.2, 1.0, 6).reshape(2, 3)

    def loss(x: np.ndarray) -> np.ndarray:
        return ng.sum(ng.tanh(ng.cos(x) * 2.0))  # the cos line

    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "# the cos line" in text)
    raising = lambda g, ans, x: g @ np.ones((4, 4))
    misshaped = lambda g, ans, x: np.stack([-g * np.sin(x)] * 2)
    for rule in (raising, misshaped):
        with rules_of("cos", rule):
            error = failure(loss, x)
        assert error.culprit == "cos" and error.location is not None
        assert error.location.endswith(f"test_check_culprit.py:{line}")
    check_grads(loss, x)  # the right rule again


def test_a_wrong_tie_split_is_named_and_a_right_one_never_blamed() -> None:
    """At an exact tie of two values the rule of max, min, maximum, minimum, segment_max
    (and abs at 0) takes the mean of the one-sided derivatives, which is what a central
    difference across the tie gives: a wrong split is named there. Three tied values, or
    two nearly tied, are not checked (a difference across them is no mean)."""
    tied = np.array([[1.0, -2.0, 0.5], [1.0, 0.3, 0.5]])  # every column's max is a two-way tie
    loss = lambda x: ng.sum(ng.sin(ng.max(x, axis=0)) * np.array([1.0, 2.0, 3.0]))
    whole = lambda g, ans, x, axis, keepdims: g * (x == ans)  # each tied entry gets all of it
    with rules_of("max", whole):
        error = failure(loss, tied)
    assert error.culprit == "max"
    check_grads(loss, tied)  # the even split agrees with central differences at a two-way tie

    three = np.array([[1.0], [1.0], [1.0]])  # a three-way tie: the whole check fails, and no op is blamed
    error = failure(lambda x: ng.max(x, axis=0), three)
    assert error.culprit is None and "could not be checked" in str(error)

    # a wrong rule elsewhere is named, the max at its tie not
    with rules_of("sin", lambda g, ans, x: g * np.cos(x) * 2.0):
        assert failure(loss, tied).culprit == "sin"

    x = np.array([0.5, 2.0, 1.0])
    pair = lambda x: ng.sum(ng.maximum(x, 1.0) * ng.minimum(x, 1.0) + ng.abs(x - 2.0))
    check_grads(pair, x)  # ties at 1.0 and abs at 0: the right rules pass


def test_the_culprit_has_its_line_where_the_function_computes_a_nan_it_masks() -> None:
    x = np.array([-1.0, 0.5, 2.0])

    def loss(x: np.ndarray) -> np.ndarray:
        safe = ng.where(x > 0, ng.log(np.abs(x)), 0.0)  # log of -1's abs: finite; of x: NaN, masked
        return ng.sum(ng.where(x > 0, np.log(x), 0.0) + ng.sin(safe))  # the sin line

    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "# the sin line" in text)
    with rules_of("sin", lambda g, ans, x: -g * np.cos(x)), np.errstate(invalid="ignore"):
        error = failure(loss, x)
    assert error.culprit == "sin" and error.location is not None
    assert error.location.endswith(f"test_check_culprit.py:{line}")
