"""``ng.optim``'s drivers: ``sgd_loop``, ``rmsprop_loop`` and ``adam_loop`` run whole
optimisations over structured parameters with autograd's formulas and signatures."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nodegrad as ng
from nodegrad.engine.structure import differentiable_leaves, flatten_with_paths
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, StructureError
from nodegrad.testing.strategies import Marked, Pair, Tagged, structures

DRIVERS: dict[str, Callable[..., Any]] = {
    "sgd": ng.optim.sgd_loop,
    "rmsprop": ng.optim.rmsprop_loop,
    "adam": ng.optim.adam_loop,
}


# -- an independent reference: each update written out on a list of numpy leaves -------------


def reference(
    method: str, grad: Callable[[list[np.ndarray], int], list[np.ndarray]], x0: list[Any], num_iters: int, **hp: Any
) -> list[list[np.ndarray]]:
    """Every iterate ``x_0, ..., x_num_iters`` of ``method`` on the leaves ``x0``, each leaf
    kept in its own dtype, hyperparameters as Python floats (autograd's defaults)."""
    xs = [np.array(leaf) for leaf in x0]
    step = hp.get("step_size", {"sgd": 0.1, "rmsprop": 0.1, "adam": 0.001}[method])
    mass, gamma = hp.get("mass", 0.9), hp.get("gamma", 0.9)
    b1, b2, eps = hp.get("b1", 0.9), hp.get("b2", 0.999), hp.get("eps", 1e-8)
    first = [np.zeros_like(x) for x in xs]  # velocity (sgd) or m (adam)
    second = [np.ones_like(x) if method == "rmsprop" else np.zeros_like(x) for x in xs]
    trajectory = [[x.copy() for x in xs]]
    for i in range(num_iters):
        gs = [np.asarray(g).astype(x.dtype) for g, x in zip(grad(xs, i), xs, strict=True)]
        rate = step(i) if callable(step) else step
        for k, (x, g) in enumerate(zip(xs, gs, strict=True)):
            if method == "sgd":
                first[k] = mass * first[k] - (1.0 - mass) * g
                new = x + rate * first[k]
            elif method == "rmsprop":
                second[k] = gamma * second[k] + (1.0 - gamma) * np.square(g)
                new = x - rate * g / (np.sqrt(second[k]) + eps)
            else:
                first[k] = b1 * first[k] + (1.0 - b1) * g
                second[k] = b2 * second[k] + (1.0 - b2) * np.square(g)
                corrected_m = first[k] / (1.0 - b1 ** (i + 1))
                corrected_v = second[k] / (1.0 - b2 ** (i + 1))
                new = x - rate * corrected_m / (np.sqrt(corrected_v) + eps)
            xs[k] = np.asarray(new, x.dtype)
        trajectory.append([x.copy() for x in xs])
    return trajectory


TARGET = np.array([1.0, -2.0, 0.5])


def leaf_gradients(leaves: list[np.ndarray], i: int) -> list[np.ndarray]:
    """The gradient of a smooth non-quadratic loss, written by hand, plus a term that
    depends on the iteration (so that a wrong ``i`` shows)."""
    x, b, w, v = leaves
    return [
        2.0 * (x - TARGET) + np.cos(x) + 0.05 * np.sin(i + np.arange(3)),
        np.asarray(4.0 * (b - 0.25) ** 3 + 0.1 * math.cos(i)),
        (w - 1.5).astype(np.float32) * np.float32(3.0),
        np.tanh(v) + 0.2 * v - 0.01 * i,
    ]


def start() -> Pair:
    return Pair(
        np.array([0.3, 0.1, -0.4]),
        {
            "b": 2.0,
            "name": "model",
            "layers": [Tagged(np.full((2, 2), 0.5, np.float32), tag="conv"), Marked(np.array([[1.0], [-3.0]]))],
            "count": 3,
        },
    )


def leaves_of(p: Pair) -> list[Any]:
    return [p.x, p.y["b"], p.y["layers"][0].w, p.y["layers"][1].v]


def structured_gradient(p: Pair, i: int) -> Pair:
    gx, gb, gw, gv = leaf_gradients([np.asarray(leaf) for leaf in leaves_of(p)], i)
    layers = [Tagged(gw, tag=None), Marked(gv, note=None)]
    return Pair(gx, {"b": float(gb), "name": None, "layers": layers, "count": None})


HYPERPARAMETERS: list[tuple[str, dict[str, Any]]] = [
    ("sgd", {}),
    ("sgd", {"step_size": 0.05, "mass": 0.0}),
    ("sgd", {"step_size": lambda i: 0.2 / (1 + i), "mass": 0.5}),
    ("rmsprop", {}),
    ("rmsprop", {"step_size": 0.01, "gamma": 0.5, "eps": 1e-3}),
    ("adam", {}),
    ("adam", {"step_size": 0.05, "b1": 0.0, "b2": 0.5, "eps": 1e-4}),
    ("adam", {"step_size": lambda i: 0.1 * 0.9**i}),
]


@pytest.mark.parametrize(("method", "hp"), HYPERPARAMETERS)
def test_each_iterate_is_the_reference_update_on_a_structured_parameter(method: str, hp: dict[str, Any]) -> None:
    x0 = start()
    seen: list[list[Any]] = []
    final = DRIVERS[method](structured_gradient, x0, lambda p, i, g: seen.append(leaves_of(p)), num_iters=40, **hp)
    expected = reference(method, leaf_gradients, leaves_of(x0), 40, **hp)
    assert len(seen) == 40
    for got, want in zip([*seen, leaves_of(final)], expected, strict=True):
        for leaf, ref in zip(got, want, strict=True):
            assert np.asarray(leaf).dtype == ref.dtype
            rtol = 1e-6 if ref.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(leaf, ref, rtol=rtol, atol=1e-12)
    # The structure and the static leaves come back, each float leaf in its own type and dtype.
    assert type(final) is Pair and type(final.y["b"]) is float
    assert final.y["name"] == "model" and final.y["count"] == 3
    assert final.y["layers"][0].tag == "conv" and final.y["layers"][0].w.dtype == np.float32
    assert final.y["layers"][1].note == 1.5 and final.y["layers"][1].v.shape == (2, 1)


def test_x0_is_not_modified_and_zero_iterations_give_a_copy() -> None:
    x0 = {"w": np.array([1.0, 2.0]), "tag": "t"}
    for driver in DRIVERS.values():
        out = driver(lambda p, i: {"w": np.ones(2), "tag": None}, x0, num_iters=3)
        assert not np.array_equal(out["w"], [1.0, 2.0])
        np.testing.assert_array_equal(x0["w"], [1.0, 2.0])
        same = driver(lambda p, i: pytest.fail("no iteration runs"), x0, num_iters=0)
        assert same == {"w": same["w"], "tag": "t"} and same["w"] is not x0["w"]
        np.testing.assert_array_equal(same["w"], x0["w"])


def test_adam_loop_takes_the_steps_of_the_one_step_adam() -> None:
    x0 = start()
    x0.y["count"] = "3"  # the one-step adam refuses an int leaf (see the test below); the loop carries it
    by_hand, state = x0, None
    for i in range(30):
        by_hand, state = ng.optim.adam(by_hand, structured_gradient(by_hand, i), state, lr=0.05)
    driven = ng.optim.adam_loop(structured_gradient, x0, num_iters=30, step_size=0.05)
    for got, want in zip(leaves_of(driven), leaves_of(by_hand), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)


# -- structures of any nesting ------------------------------------------------------------


def _gradient_of(p: Any, i: int) -> Any:
    return ng.tree.map_floats(lambda leaf: np.sin(leaf) + 0.5 - 0.1 * i, p)


@given(structures(), st.sampled_from(sorted(DRIVERS)), st.integers(0, 3))
def test_structures_keep_their_types_shapes_dtypes_and_static_leaves(x0: Any, method: str, num_iters: int) -> None:
    floats = list(differentiable_leaves(x0))
    if not floats:
        with pytest.raises(ArgumentError, match="x0 has no float leaves"):
            DRIVERS[method](_gradient_of, x0, num_iters=num_iters)
        return
    before = [np.array(leaf) for _, leaf in floats]
    out = DRIVERS[method](_gradient_of, x0, num_iters=num_iters, step_size=0.1)
    pairs = list(zip(flatten_with_paths(x0), flatten_with_paths(out), strict=True))
    float_paths = {path for path, _ in floats}
    for (path, old), (new_path, new) in pairs:
        assert path == new_path
        if path in float_paths:
            assert type(new) is type(old), path
            assert np.shape(new) == np.shape(old) and np.asarray(new).dtype == np.asarray(old).dtype, path
            assert np.all(np.isfinite(new)), path
        else:
            assert new is old, path  # static leaves (marked-static floats too) are carried over as they are
    for (_, leaf), copy in zip(floats, before, strict=True):
        np.testing.assert_array_equal(leaf, copy)  # x0 untouched
    expected = reference(
        method, lambda xs, i: [np.sin(x) + 0.5 - 0.1 * i for x in xs], before, num_iters, step_size=0.1
    )
    for (_, leaf), want in zip(differentiable_leaves(out), expected[-1], strict=True):
        np.testing.assert_allclose(leaf, want, rtol=1e-5 if want.dtype == np.float32 else 1e-12, atol=1e-6)


# -- convergence with ng.grad ---------------------------------------------------------------


def test_the_drivers_minimise_a_quadratic_over_a_record() -> None:
    a = np.array([[3.0, 0.5], [0.5, 1.0]])
    target = np.array([1.0, -1.0])

    def loss(p: Tagged) -> Any:
        d = p.w["u"] - target
        return 0.5 * ng.sum(d * (a @ d)) + (p.w["s"] - 2.0) ** 2.0

    g = ng.grad(loss)
    x0 = Tagged({"u": np.zeros(2), "s": 0.0}, tag="q")
    for method, hp in [("sgd", {"step_size": 0.3}), ("rmsprop", {"step_size": 0.01}), ("adam", {"step_size": 0.05})]:
        out = DRIVERS[method](lambda p, i: g(p), x0, num_iters=1000, **hp)
        assert out.tag == "q" and type(out.w["s"]) is float
        np.testing.assert_allclose(out.w["u"], target, atol=1e-2)
        assert abs(out.w["s"] - 2.0) < 1e-2


def test_the_drivers_fit_a_regularised_logistic_regression() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(60, 3))
    labels = (features @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=60) > 0).astype(float)

    def loss(p: dict[str, Any]) -> Any:
        logits = features @ p["w"] + p["b"]
        data = ng.mean(ng.logaddexp(0.0, logits) - labels * logits)
        return data + 0.05 * ng.sum(p["w"] ** 2.0)

    g = ng.grad(loss)
    x0 = {"w": np.zeros(3), "b": np.zeros(()), "name": "logistic"}
    first = float(loss(x0))
    steps: dict[str, Any] = {"sgd": 1.0, "rmsprop": lambda i: 0.05 * 0.99**i, "adam": 0.05}
    for method, step_size in steps.items():
        out = DRIVERS[method](lambda p, i: g(p), x0, num_iters=800, step_size=step_size)
        assert out["name"] == "logistic" and out["b"].shape == ()
        assert float(loss(out)) < first - 0.2
        assert ng.tree.global_norm(g(out)) < 1e-4, method


# -- the callback and the schedule -----------------------------------------------------------


def test_the_callback_gets_the_parameters_the_iteration_and_the_gradient() -> None:
    calls: list[tuple[Any, int, Any]] = []
    passed: list[Any] = []

    def grad(p: dict[str, Any], i: int) -> dict[str, Any]:
        passed.append(p)
        return {"w": p["w"] * 2.0 + i, "n": None}

    x0 = {"w": np.array([1.0, -1.0]), "n": 4}
    out = ng.optim.sgd_loop(grad, x0, lambda p, i, g: calls.append((p, i, g)), num_iters=5, step_size=0.1, mass=0.0)
    assert [i for _, i, _ in calls] == [0, 1, 2, 3, 4]
    assert all(p is q for (p, _, _), q in zip(calls, passed, strict=True))  # the x that grad saw
    np.testing.assert_array_equal(calls[0][0]["w"], x0["w"])
    for (p, i, g), (after, _, _) in zip(calls, [*calls[1:], (out, None, None)], strict=True):
        np.testing.assert_array_equal(g["w"], p["w"] * 2.0 + i)
        np.testing.assert_allclose(after["w"], p["w"] - 0.1 * g["w"], rtol=1e-15)  # mass 0: x - step * g
        assert p["n"] == 4 and g["n"] is None


def test_a_callable_step_size_is_asked_each_iteration() -> None:
    asked: list[int] = []

    def schedule(i: int) -> float:
        asked.append(i)
        return 0.5**i

    out = ng.optim.sgd_loop(lambda p, i: np.ones(1), np.zeros(1), num_iters=4, step_size=schedule, mass=0.0)
    assert asked == [0, 1, 2, 3]
    np.testing.assert_allclose(out, [-(1 + 0.5 + 0.25 + 0.125)])


def test_float32_parameters_stay_float32_whatever_the_gradient_dtype() -> None:
    x0 = [np.ones(3, np.float32), np.float32(2.0), 1.0]
    for driver in DRIVERS.values():
        out = driver(lambda p, i: [np.ones(3), np.float64(1.0), np.float32(1.0)], x0, num_iters=3)
        assert out[0].dtype == np.float32 and type(out[1]) is np.float32 and type(out[2]) is float


def test_a_none_gradient_counts_as_zero() -> None:
    out = ng.optim.sgd_loop(lambda p, i: {"a": np.ones(1), "b": None}, {"a": np.zeros(1), "b": np.ones(1)}, num_iters=3)
    np.testing.assert_array_equal(out["b"], [1.0])
    assert out["a"][0] < 0


# -- validation -----------------------------------------------------------------------------


def _grad(p: Any, i: int) -> Any:
    return np.ones_like(p)


BAD_ARGUMENTS = [
    ("sgd", {"grad": "not callable"}, "grad must be a function"),
    ("adam", {"callback": 3}, "callback must be None or a function"),
    ("sgd", {"num_iters": -1}, "num_iters must not be negative"),
    ("rmsprop", {"num_iters": 2.0}, "num_iters must be an int"),
    ("adam", {"num_iters": True}, "num_iters must be an int"),
    ("sgd", {"step_size": math.nan}, "step_size must be finite"),
    ("rmsprop", {"step_size": math.inf}, "step_size must be finite"),
    ("adam", {"step_size": -0.1}, "step_size must not be negative"),
    ("adam", {"step_size": "0.1"}, "step_size must be a real number"),
    ("sgd", {"mass": 1.0}, r"mass must be in \[0, 1\)"),
    ("sgd", {"mass": -0.1}, r"mass must be in \[0, 1\)"),
    ("sgd", {"mass": math.nan}, "mass must be finite"),
    ("rmsprop", {"gamma": 1.0}, r"gamma must be in \[0, 1\)"),
    ("rmsprop", {"eps": 0.0}, "eps must be positive"),
    ("rmsprop", {"eps": math.inf}, "eps must be finite"),
    ("adam", {"b1": 1.0}, r"b1 must be in \[0, 1\)"),
    ("adam", {"b1": -0.5}, r"b1 must be in \[0, 1\)"),
    ("adam", {"b2": 1.0}, r"b2 must be in \[0, 1\)"),
    ("adam", {"b2": None}, "b2 must be a real number"),
    ("adam", {"eps": -1e-8}, "eps must be positive"),
    ("adam", {"eps": math.nan}, "eps must be finite"),
    ("sgd", {"x0": {"n": 3, "ids": np.arange(3)}}, "x0 has no float leaves"),
    ("adam", {"x0": np.arange(3)}, "x0 has no float leaves"),
]


@pytest.mark.parametrize(("method", "change", "message"), BAD_ARGUMENTS)
def test_arguments_are_checked_before_the_first_gradient(method: str, change: dict[str, Any], message: str) -> None:
    called: list[int] = []

    def grad(p: Any, i: int) -> Any:
        called.append(i)
        return np.ones_like(p)

    arguments: dict[str, Any] = {"grad": grad, "x0": np.zeros(2), "num_iters": 3} | change
    with pytest.raises(ArgumentError, match=f"{method}_loop: {message}"):
        DRIVERS[method](**arguments)
    assert called == []


def test_a_schedule_giving_a_bad_step_size_is_named_with_its_iteration() -> None:
    with pytest.raises(ArgumentError, match=r"adam_loop: step_size\(2\) must be finite"):
        ng.optim.adam_loop(_grad, np.zeros(2), num_iters=5, step_size=lambda i: 0.1 if i < 2 else math.nan)
    with pytest.raises(ArgumentError, match=r"sgd_loop: step_size\(0\) must not be negative"):
        ng.optim.sgd_loop(_grad, np.zeros(2), step_size=lambda i: -1.0)


def test_a_gradient_of_another_shape_is_an_error_naming_its_key_path() -> None:
    x0 = {"layers": [Tagged(np.zeros(3), tag="a")], "b": 0.0}
    bad = {"layers": [Tagged(np.ones(1), tag=None)], "b": 1.0}  # (1,) would broadcast to (3,)
    for driver in DRIVERS.values():
        with pytest.raises(ShapeError, match=r"the gradient at \['layers'\]\[0\]\.w \(iteration 0\) has shape \(1,\)"):
            driver(lambda p, i: bad, x0)
    with pytest.raises(ShapeError, match=r"at \['b'\] \(iteration 2\) has shape \(1,\)"):
        ng.optim.adam_loop(lambda p, i: {"layers": [Tagged(np.ones(3))], "b": np.ones(1) if i == 2 else 1.0}, x0)


def test_a_gradient_of_another_structure_or_dtype_is_an_error_naming_its_key_path() -> None:
    x0 = {"w": np.zeros(2), "b": 0.0}
    with pytest.raises(StructureError, match="structure mismatch"):
        ng.optim.sgd_loop(lambda p, i: {"w": np.ones(2)}, x0)
    with pytest.raises(StructureError, match=r"the gradient at \['b'\] \(iteration 0\) is a list"):
        ng.optim.rmsprop_loop(lambda p, i: {"w": np.ones(2), "b": [1.0]}, x0)
    with pytest.raises(DtypeError, match=r"the gradient at \['w'\] \(iteration 0\) has dtype complex128"):
        ng.optim.adam_loop(lambda p, i: {"w": np.ones(2) * 1j, "b": 1.0}, x0)
    with pytest.raises(DtypeError, match=r"the gradient at the top level \(iteration 0\) has dtype <U1"):
        ng.optim.adam_loop(lambda p, i: "g", 1.0)


def test_a_traced_starting_point_is_refused() -> None:
    def f(w: Any) -> Any:
        ng.optim.sgd_loop(_grad, {"w": w}, num_iters=1)
        return ng.sum(w)

    with pytest.raises(ArgumentError, match=r"sgd_loop: x0\['w'\] is a traced value"):
        ng.grad(f)(np.zeros(2))


def test_the_signatures_are_autograds() -> None:
    expected = {
        "sgd": [("num_iters", 200), ("step_size", 0.1), ("mass", 0.9)],
        "rmsprop": [("num_iters", 100), ("step_size", 0.1), ("gamma", 0.9), ("eps", 1e-8)],
        "adam": [("num_iters", 100), ("step_size", 0.001), ("b1", 0.9), ("b2", 0.999), ("eps", 1e-8)],
    }
    for method, driver in DRIVERS.items():
        parameters = list(inspect.signature(driver).parameters.values())
        assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)
        got = [(p.name, p.default) for p in parameters]
        assert (
            got
            == [("grad", inspect.Parameter.empty), ("x0", inspect.Parameter.empty), ("callback", None)]
            + expected[method]
        )


# -- against autograd itself, when it is installed ---------------------------------------------


@pytest.mark.parametrize(("method", "hp"), [(m, hp) for m, hp in HYPERPARAMETERS if not callable(hp.get("step_size"))])
def test_trajectories_match_autograds_optimizers(method: str, hp: dict[str, Any]) -> None:
    optimizers = pytest.importorskip("autograd.misc.optimizers")
    a = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 0.5]])

    def grad(x: np.ndarray, i: int) -> np.ndarray:
        return a @ x - TARGET + np.sin(x) + 0.1 * np.cos(i)

    x0 = np.array([0.5, -0.5, 2.0])
    ours: list[np.ndarray] = []
    theirs: list[np.ndarray] = []
    got = DRIVERS[method](grad, x0, lambda x, i, g: ours.append(x), 50, **hp)
    want = getattr(optimizers, method)(grad, x0, lambda x, i, g: theirs.append(x), 50, **hp)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    # A dict of arrays: autograd flattens it into one vector, the drivers keep the leaves.
    tree0 = {"x": x0[:2], "y": x0[2:]}

    def tree_grad(t: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
        g = grad(np.concatenate([t["x"], t["y"]]), i)
        return {"x": g[:2], "y": g[2:]}

    got_tree = DRIVERS[method](tree_grad, tree0, None, 50, **hp)
    want_tree = getattr(optimizers, method)(tree_grad, tree0, None, 50, **hp)
    for key in ("x", "y"):
        np.testing.assert_allclose(got_tree[key], want_tree[key], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("step", ["sgd", "adam"])
def test_one_step_updates_never_broadcast_nor_widen(step: str) -> None:
    # params (2,) with gradients (3, 1) used to come back as (3, 2); a float32 parameter
    # with a float64 gradient came back as float64.
    update = (lambda p, g: ng.optim.sgd(p, g, lr=0.1)) if step == "sgd" else (lambda p, g: ng.optim.adam(p, g)[0])
    with pytest.raises(ShapeError, match=rf"{step}: the gradient at \['w'\] has shape \(3, 1\), the parameter \(2,\)"):
        update({"w": np.ones(2)}, {"w": np.ones((3, 1))})
    kept = update({"w": np.ones(2, np.float32), "b": 0.5}, {"w": np.ones(2), "b": 1.0})
    assert kept["w"].dtype == np.float32 and type(kept["b"]) is float


@pytest.mark.parametrize(
    ("name", "value"), [("b1", 1.5), ("b1", -0.1), ("b2", 1.0), ("eps", float("nan")), ("eps", 0.0)]
)
def test_adam_step_refuses_settings_outside_their_range(name: str, value: float) -> None:
    with pytest.raises(ArgumentError, match=f"adam: {name}"):
        ng.optim.adam({"w": np.ones(2)}, {"w": np.ones(2)}, **{name: value})


def test_tree_add_never_broadcasts() -> None:
    with pytest.raises(ShapeError, match=r"tree.add: at \['w'\] shapes \(2,\) and \(3, 1\) differ"):
        ng.tree.add({"w": np.ones(2)}, {"w": np.ones((3, 1))})
    np.testing.assert_array_equal(ng.tree.add({"w": np.ones(2)}, {"w": np.ones(2)})["w"], [2.0, 2.0])


@pytest.mark.parametrize("step", ["sgd", "adam"])
def test_a_step_refuses_an_int_parameter_naming_it(step: str) -> None:
    # {"b": 0} meant 0.0: its gradient slot is None, so the step would keep b = 0 forever.
    params = {"w": np.array([1.0, 2.0]), "b": 0, "head": Tagged(np.ones(1), tag="t"), "n": [np.int64(3)]}
    grads = ng.grad(lambda p: ng.sum(p["w"]) + p["b"] + ng.sum(p["head"].w))(params)
    assert grads["b"] is None
    with pytest.raises(
        ArgumentError, match=rf"{step}: cannot move the parameters at \['b'\] \(the int 0\), \['n'\]\[0\]"
    ):
        ng.optim.sgd(params, grads, 0.1) if step == "sgd" else ng.optim.adam(params, grads)
    # Floats move; strings, bools and fields marked static are not parameters and pass.
    fine = {"w": np.array([1.0, 2.0]), "b": 0.0, "head": Tagged(np.ones(1), tag="t"), "on": True}
    grads = {"w": np.ones(2), "b": 1.0, "head": Tagged(np.ones(1), tag=None), "on": None}
    moved = ng.optim.sgd(fine, grads, 0.5) if step == "sgd" else ng.optim.adam(fine, grads, lr=0.5)[0]
    assert moved["b"] == pytest.approx(-0.5) and moved["on"] is True and moved["head"].tag == "t"


@pytest.mark.parametrize("step", ["sgd", "adam"])
@pytest.mark.parametrize("lr", [None, "0.1", True, [0.1], np.array([0.1]), 1j])
def test_a_learning_rate_that_is_not_a_real_number_is_refused_naming_the_step(step: str, lr: Any) -> None:
    # numpy's isfinite raised a raw TypeError for None and for the string "0.1".
    update = (lambda p, g: ng.optim.sgd(p, g, lr)) if step == "sgd" else (lambda p, g: ng.optim.adam(p, g, lr=lr))
    with pytest.raises(ArgumentError, match=rf"{step}: the learning rate lr must be a real number, got "):
        update({"w": np.ones(2)}, {"w": np.ones(2)})


@pytest.mark.parametrize("lr", [0.5, np.float64(0.5), np.array(0.5), 1])
def test_a_learning_rate_may_be_any_real_scalar(lr: Any) -> None:
    np.testing.assert_allclose(ng.optim.sgd({"w": np.ones(2)}, {"w": np.ones(2)}, lr)["w"], 1.0 - float(lr))
    # a traced rate: the step differentiates in it (d/dlr of sum((1 - lr) ** 2) = -2 * 2 * (1 - lr))
    slope = ng.grad(lambda r: ng.sum(ng.optim.sgd({"w": np.ones(2)}, {"w": np.ones(2)}, r)["w"] ** 2.0))(0.25)
    assert slope == pytest.approx(-3.0)
