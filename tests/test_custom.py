"""User-defined gradients and arena surgery: custom_vjp, stop_gradient, checkpoint, Arena.merge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import ArenaError, NodegradError, NoGradientError, NonFiniteError, ShapeError, StructureError
from nodegrad.testing import check_grads

HERE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    hits = [n for n, text in enumerate(HERE.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


# -- custom_vjp -------------------------------------------------------------------------------------


@ng.custom_vjp
def clip_gradient(x: Any) -> Any:
    return x * 1.0


clip_gradient.defvjp(lambda x: (x * 1.0, None), lambda res, g: (np.clip(g, -1.0, 1.0),))


@ng.custom_vjp
def scaled_square(x: Any) -> Any:
    return x * x


# A rule that is deliberately not the true derivative (10x it), to see that it is the one used.
scaled_square.defvjp(lambda x: (x * x, x), lambda x, g: (10.0 * 2.0 * x * g,))


def test_custom_vjp_on_an_array_uses_the_users_rule() -> None:
    x = np.array([0.5, -1.0, 2.0])
    g = ng.grad(lambda x: ng.sum(clip_gradient(x) * np.array([5.0, 0.5, -3.0])))(x)
    np.testing.assert_array_equal(g, [1.0, 0.5, -1.0])
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(scaled_square(x)))(x), 20.0 * x)
    # forward: the function's value, from fwd
    arena = ng.Arena()
    p = arena.param(x)
    y = scaled_square(p)
    np.testing.assert_array_equal(y.value, x * x)
    # one node for the whole function: its body is not traced
    assert [node.op for node in arena] == ["param", "custom_vjp:scaled_square"]
    np.testing.assert_allclose(arena.backward(y, wrt=p, seed=np.array([1.0, 2.0, 3.0])), 20.0 * x * [1.0, 2.0, 3.0])


def test_custom_vjp_keeps_no_cotangent_after_the_sweep() -> None:
    # bwd runs once per node and sweep (the op's joint rule), so nothing of its answer is
    # kept: an arena kept for another sweep must not hold a gradient's worth of arrays.
    x = np.array([0.5, -1.0, 2.0])
    arena = ng.Arena()
    p = arena.param(x)
    y = scaled_square(p)
    g1 = arena.backward(y, wrt=p, seed=np.array([1.0, 2.0, 3.0]))
    box = arena.nodes[1][3][0]
    assert set(type(box).__slots__) == {"given", "level", "value"}  # the residuals, nothing else
    g2 = arena.backward(y, wrt=p, seed=np.array([1.0, 2.0, 3.0]))  # and it answers again
    np.testing.assert_array_equal(g1, g2)


def test_custom_vjp_called_on_plain_values_is_the_plain_function() -> None:
    x = np.array([1.0, 2.0])
    out = scaled_square(x)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, x * x)


def test_custom_vjp_without_defvjp_is_the_plain_function() -> None:
    @ng.custom_vjp
    def f(x: Any) -> Any:
        return ng.sin(x) * x

    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(f(x)))(x), np.cos(x) * x + np.sin(x))
    check_grads(f, x)
    arena = ng.Arena()
    f(arena.param(x))
    assert [node.op for node in arena] == ["param", "sin", "multiply"]  # traced through, as a plain function
    assert f.__name__ == "f"


def test_custom_vjp_with_several_arguments_and_a_none_cotangent() -> None:
    @ng.custom_vjp
    def mul(a: Any, b: Any) -> Any:
        return a * b

    mul.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g * res[1], None))
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    ga, gb = ng.grad(lambda a, b: ng.sum(mul(a, b)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, b)
    np.testing.assert_array_equal(gb, np.zeros(2))  # None: no gradient, zeros by default
    with pytest.raises(NoGradientError, match=r"args\[1\]"):
        ng.grad(lambda a, b: ng.sum(mul(a, b)), argnums=(0, 1), options=ng.GradOptions.STRICT)(a, b)


def test_custom_vjp_on_a_dict_with_structured_cotangents() -> None:
    @ng.custom_vjp
    def affine(p: Any, x: Any) -> Any:
        return p["w"] * x + p["b"]

    def fwd(p: Any, x: Any) -> Any:
        return p["w"] * x + p["b"], (p, x)

    def bwd(res: Any, g: Any) -> Any:
        p, x = res
        assert isinstance(p, dict) and p["tag"] == "layer"  # bwd sees the plain structure
        return {"w": g * x, "b": np.sum(g), "tag": None}, g * p["w"]

    affine.defvjp(fwd, bwd)
    p = {"w": np.array([1.0, -2.0]), "b": 0.5, "tag": "layer"}
    x = np.array([3.0, 4.0])
    gp, gx = ng.grad(lambda p, x: ng.sum(affine(p, x) ** 2.0), argnums=(0, 1))(p, x)
    y = p["w"] * x + p["b"]
    assert list(gp) == ["w", "b", "tag"]
    np.testing.assert_allclose(gp["w"], 2 * y * x)
    assert type(gp["b"]) is float and gp["b"] == pytest.approx(float(np.sum(2 * y)))
    assert gp["tag"] is None
    np.testing.assert_allclose(gx, 2 * y * p["w"])
    check_grads(lambda p, x: affine(p, x), p, x)


@attrs.frozen
class Linear:
    w: np.ndarray
    b: float
    name: str = ng.field(static=True, default="linear")


@ng.custom_vjp
def linear(layer: Linear, x: Any) -> Any:
    return layer.w * x + layer.b


linear.defvjp(
    lambda layer, x: (layer.w * x + layer.b, (layer, x)),
    lambda res, g: (Linear(g * res[1], np.sum(g), "ignored"), g * res[0].w),
)


def test_custom_vjp_on_an_attrs_record_with_structured_cotangents() -> None:
    layer = Linear(np.array([1.0, 2.0]), 0.5)
    x = np.array([3.0, 4.0])
    g_layer, g_x = ng.grad(lambda layer, x: ng.sum(linear(layer, x)), argnums=(0, 1))(layer, x)
    assert type(g_layer) is Linear
    np.testing.assert_array_equal(g_layer.w, x)
    assert g_layer.b == pytest.approx(2.0)
    assert g_layer.name is None  # static: no gradient, whatever bwd put there
    np.testing.assert_array_equal(g_x, layer.w)
    check_grads(linear, layer, x)


def test_custom_vjp_with_a_structured_output() -> None:
    @ng.custom_vjp
    def polar(x: Any) -> Any:
        return {"double": x * 2.0, "square": x * x}

    seen: list[Any] = []

    def bwd(x: Any, g: Any) -> Any:
        seen.append(g)
        return (g["double"] * 2.0 + g["square"] * 2.0 * x,)

    polar.defvjp(lambda x: ({"double": x * 2.0, "square": x * x}, x), bwd)
    x = np.array([1.0, -3.0])
    g = ng.grad(lambda x: ng.sum(polar(x)["square"]))(x)
    np.testing.assert_allclose(g, 2 * x)
    # bwd got the cotangent as a dict; the entry that was not used came as zeros
    assert set(seen[-1]) == {"double", "square"}
    np.testing.assert_array_equal(seen[-1]["double"], np.zeros(2))
    out, back = ng.vjp(polar, x)
    assert set(out) == {"double", "square"}
    (gx,) = back({"double": np.array([1.0, 1.0]), "square": np.array([0.5, 2.0])})
    np.testing.assert_allclose(gx, 2.0 + np.array([0.5, 2.0]) * 2 * x)
    check_grads(polar, x)


@pytest.mark.parametrize(
    "cotangents",
    [
        pytest.param(lambda g: (), id="none"),
        pytest.param(lambda g: (g, g), id="two"),
        pytest.param(lambda g: g, id="bare"),
    ],
)
def test_bwd_returning_the_wrong_number_of_cotangents(cotangents: Any) -> None:
    @ng.custom_vjp
    def f(x: Any) -> Any:
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: cotangents(g))
    with pytest.raises(StructureError, match=r"custom_vjp .*f: bwd must return a tuple of 1 cotangents"):
        ng.grad(lambda x: ng.sum(f(x)))(np.ones(2))


def test_bwd_returning_a_cotangent_of_the_wrong_structure() -> None:
    @ng.custom_vjp
    def f(p: Any) -> Any:
        return p["w"] * p["b"]

    f.defvjp(lambda p: (p["w"] * p["b"], p), lambda p, g: ({"w": g * p["b"]},))  # "b" is missing
    with pytest.raises(StructureError, match="argument 0"):
        ng.grad(lambda p: ng.sum(f(p)))({"w": np.ones(2), "b": 2.0})


def test_bwd_returning_an_array_cotangent_of_the_wrong_shape_raises() -> None:
    @ng.custom_vjp
    def f(x: Any) -> Any:
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (np.ones(5),))
    arena = ng.Arena()
    x = arena.param(np.ones(3))
    y = ng.sum(f(x))
    with pytest.raises(ShapeError, match=r"bwd's cotangent 0 has shape \(5,\), its argument \(3,\)"):
        arena.backward(y, wrt=x)
    np.testing.assert_array_equal(arena.backward(ng.sum(x * 3.0), wrt=x), [3.0, 3.0, 3.0])  # still usable


def test_bwd_returning_a_broadcast_cotangent_is_summed_to_the_argument() -> None:
    @ng.custom_vjp
    def scaled(x: Any, y: Any) -> Any:
        return x * y

    # bwd hands back g * y for x, shaped like the broadcast output (2, 3), not like x (3,).
    scaled.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))
    y = np.arange(6.0).reshape(2, 3)
    g = ng.grad(lambda x: ng.sum(scaled(x, y)))(np.ones(3, dtype=np.float32))
    assert g.shape == (3,) and g.dtype == np.float32
    np.testing.assert_allclose(g, y.sum(axis=0))


@pytest.mark.parametrize(
    "fwd",
    [
        pytest.param(lambda x: x, id="bare-output"),
        pytest.param(lambda x: [x, None], id="a-list"),
        pytest.param(lambda x: (x, None, None), id="a-triple"),
    ],
)
def test_fwd_not_returning_a_pair_raises_and_records_nothing(fwd: Any) -> None:
    @ng.custom_vjp
    def f(x: Any) -> Any:
        return x

    f.defvjp(fwd, lambda res, g: (g,))
    arena = ng.Arena()
    p = arena.param(np.ones(2))
    with pytest.raises(NodegradError, match=r"fwd must return \(output, residuals\)"):
        f(p)
    assert len(arena) == 1
    np.testing.assert_array_equal(arena.backward(ng.sum(p * 3.0), wrt=p), [3.0, 3.0])


def test_second_derivative_through_custom_vjp() -> None:
    # bwd(x, g) = 2 x g is the true derivative of x * x: differentiating the sweep again must
    # give 2, never a silent 0 (fwd runs again on the traced input to give a traced residual).
    @ng.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * x * g,))
    assert ng.grad(square)(3.0) == pytest.approx(6.0)
    assert ng.grad(ng.grad(square))(3.0) == pytest.approx(2.0)
    assert ng.grad(ng.grad(ng.grad(lambda x: square(x) * x)))(3.0) == pytest.approx(6.0)


def test_second_derivative_through_a_custom_vjp_of_a_record() -> None:
    @ng.custom_vjp
    def energy(p: Any) -> Any:
        return ng.sum(p["w"] ** 2.0) * p["s"]

    energy.defvjp(
        lambda p: (energy.fun(p), p),
        lambda p, g: ({"w": 2.0 * p["w"] * p["s"] * g, "s": ng.sum(p["w"] ** 2.0) * g, "tag": None},),
    )
    p = {"w": np.array([1.0, -2.0]), "s": 0.5, "tag": "layer"}
    check_grads(energy, p, order=2)


def test_bwd_runs_once_per_sweep_whatever_the_number_of_inputs() -> None:
    calls = []

    @ng.custom_vjp
    def product(x: Any, y: Any, z: Any) -> Any:
        return x * y * z

    def bwd(res: Any, g: Any) -> Any:
        calls.append(1)
        x, y, z = res
        return g * y * z, g * x * z, g * x * y

    product.defvjp(lambda x, y, z: (x * y * z, (x, y, z)), bwd)
    grads = ng.grad(lambda x, y, z: ng.sum(product(x, y, z)), argnums=(0, 1, 2))(np.ones(2), 2.0 * np.ones(2), 3.0)
    assert len(calls) == 1
    np.testing.assert_array_equal(grads[0], [6.0, 6.0])
    assert grads[2] == pytest.approx(4.0)


# -- stop_gradient -----------------------------------------------------------------------------------


def test_stop_gradient_on_arrays() -> None:
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(x * ng.stop_gradient(x)))(x), x)
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.stop_gradient(x * x)))(x), np.zeros(3))
    arena = ng.Arena()
    p = arena.param(x)
    stopped = ng.stop_gradient(p * 2.0)
    assert type(stopped) is np.ndarray
    np.testing.assert_array_equal(stopped, 2 * x)
    assert ng.stop_gradient(x) is x  # plain values pass through
    assert ng.stop_gradient(2.5) == 2.5


def test_stop_gradient_inside_structures() -> None:
    layer = Linear(np.array([1.0, 2.0]), 0.5)

    def loss(layer: Linear, x: Any) -> Any:
        frozen = ng.stop_gradient({"layer": layer, "pair": [x * 2.0, "tag"], "n": 3})
        assert type(frozen["layer"]) is Linear and frozen["layer"].name == "linear"
        assert type(frozen["layer"].w) is np.ndarray and type(frozen["pair"][0]) is np.ndarray
        assert frozen["pair"][1] == "tag" and frozen["n"] == 3
        return ng.sum(frozen["layer"].w * x * x) + ng.sum(layer.w * frozen["pair"][0])

    x = np.array([3.0, -1.0])
    g_layer, g_x = ng.grad(loss, argnums=(0, 1))(layer, x)
    np.testing.assert_array_equal(g_layer.w, 2 * x)  # only through the unstopped layer.w
    assert g_layer.b == 0.0
    np.testing.assert_array_equal(g_x, 2 * layer.w * x)  # only through x * x


# -- checkpoint --------------------------------------------------------------------------------------

DEPTH = 12


def deep_block(x: Any) -> Any:
    for k in range(DEPTH):
        x = ng.tanh(x * (1.0 + 0.05 * k)) + 0.1 * x
    return x


def test_checkpoint_gives_the_same_gradients() -> None:
    block = ng.checkpoint(deep_block)
    x = np.linspace(-1.0, 1.0, 7)
    plain = ng.grad(lambda x: ng.sum(deep_block(x) ** 2.0))(x)
    checked = ng.grad(lambda x: ng.sum(block(x) ** 2.0))(x)
    np.testing.assert_allclose(checked, plain, rtol=1e-13)
    check_grads(block, x)
    check_grads(lambda x: ng.sum(block(x) * block(x * 0.5)), x)


def test_checkpoint_of_several_structured_arguments() -> None:
    def layer(p: Any, x: Any) -> Any:
        return ng.tanh(p["w"] @ x + p["b"])

    block = ng.checkpoint(layer)
    p = {"w": np.array([[0.5, -1.0], [2.0, 0.3]]), "b": np.array([0.1, -0.2])}
    x = np.array([1.0, -0.5])
    loss = lambda f: lambda p, x: ng.sum(f(p, x) ** 2.0)
    gp, gx = ng.grad(loss(block), argnums=(0, 1))(p, x)
    ep, ex = ng.grad(loss(layer), argnums=(0, 1))(p, x)
    np.testing.assert_allclose(gp["w"], ep["w"], rtol=1e-13)
    np.testing.assert_allclose(gp["b"], ep["b"], rtol=1e-13)
    np.testing.assert_allclose(gx, ex, rtol=1e-13)
    check_grads(block, p, x)


def test_checkpoint_stores_fewer_bytes() -> None:
    x = np.linspace(-1.0, 1.0, 5000)
    plain = ng.Arena()
    y_plain = deep_block(plain.param(x))
    checkpointed = ng.Arena()
    y_checked = ng.checkpoint(deep_block)(xc := checkpointed.param(x))
    np.testing.assert_allclose(y_checked.value, y_plain.value, rtol=1e-15)
    # the input and the output, against every intermediate of every layer
    assert checkpointed.nbytes <= 2 * x.nbytes + 64
    assert plain.nbytes >= DEPTH * 4 * x.nbytes
    assert len(checkpointed) == 2
    g = checkpointed.backward(ng.sum(y_checked), wrt=xc)
    np.testing.assert_allclose(g, ng.grad(lambda z: ng.sum(deep_block(z)))(x), rtol=1e-13)


def test_second_derivative_through_checkpoint() -> None:
    f = lambda x: ng.sum(ng.tanh(ng.tanh(x)) * x)
    block = ng.checkpoint(f)
    x, v = np.array([0.3, -0.5]), np.array([1.0, 1.0])
    np.testing.assert_allclose(ng.hvp(block, x, v), ng.hvp(f, x, v), rtol=1e-12)
    check_grads(block, x, order=2)


# -- Arena.merge ----------------------------------------------------------------------------------------


def test_gradients_flow_through_merged_nodes() -> None:
    a, b = ng.Arena(), ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    y = b.param(np.array([3.0, 4.0]))
    z = ng.sin(y) * y
    moved = a.merge(b)
    w = x * moved(z)
    gx, gy = a.backward(ng.sum(w), wrt=[x, moved(y)])
    np.testing.assert_allclose(gx, np.sin(y.value) * y.value)
    np.testing.assert_allclose(gy, x.value * (np.cos(y.value) * y.value + np.sin(y.value)))
    assert moved(z).arena is a and moved(z).index == 1 + z.index
    assert [node.op for node in a] == ["param", "param", "sin", "multiply", "multiply", "sum"]
    # plain values and structures of handles are mapped too
    assert moved(3.0) == 3.0
    pair = moved({"y": y, "name": "n", "both": [y, z]})
    assert pair["name"] == "n" and pair["both"][1].index == moved(z).index and pair["y"].arena is a


def test_merge_keeps_key_paths() -> None:
    a, b = ng.Arena(), ng.Arena()
    a.param(np.ones(3), name="first")
    p = b.param({"w": np.array([1.0, 2.0]), "unused": np.ones(2)}, name="params")
    out = ng.sum(p["w"] * 2.0)
    moved = a.merge(b)
    q = moved(p)
    g = a.backward(moved(out), wrt=q)
    np.testing.assert_array_equal(g["w"], [2.0, 2.0])
    np.testing.assert_array_equal(g["unused"], [0.0, 0.0])
    with pytest.raises(NoGradientError, match=r"params\['unused'\]"):
        a.backward(moved(out), wrt=q, options=ng.GradOptions.STRICT)
    with pytest.raises(ng.errors.ShapeError, match=r"params\['w'\]"):
        q["w"] @ np.ones((3, 3))  # errors about merged nodes name their key paths


def test_merge_leaves_the_other_arena_unchanged() -> None:
    a, b = ng.Arena(), ng.Arena()
    a.param(np.zeros(2))
    y = b.param(np.array([3.0, 4.0]), name="y")
    z = ng.sum(y * y)
    before = [(node.op, node.parents) for node in b]
    g_before = b.backward(z, wrt=y)
    moved = a.merge(b)
    a.backward(moved(z) * 5.0, wrt=moved(y))
    ng.exp(moved(y))  # more nodes in a
    assert [(node.op, node.parents) for node in b] == before
    assert len(b) == 3 and len(a) == 1 + 3 + 2
    np.testing.assert_array_equal(b.backward(z, wrt=y), g_before)
    ng.tanh(y)  # b goes on recording on its own
    assert len(b) == 4 and len(a) == 6


def test_merge_into_itself_raises() -> None:
    a = ng.Arena()
    a.param(np.ones(2))
    with pytest.raises(ArenaError, match="itself"):
        a.merge(a)
    assert len(a) == 1


def test_merge_into_a_checking_arena_keeps_the_source_lines() -> None:
    a, b = ng.Arena(check_finite=True), ng.Arena(check_finite=True)
    a.param(np.ones(2))
    x = b.param(np.array([0.0, 4.0]))
    y = ng.where(x.value > 0, ng.sqrt(x), 0.0)  # merged-line
    moved = a.merge(b)
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError) as info:
        a.backward(ng.sum(moved(y)), wrt=moved(x))
    assert str(info.value).startswith("sqrt (node 2)")
    assert f"{HERE.name}:{line_of('merged-line')}]" in str(info.value)


def test_a_failed_merge_leaves_the_arena_as_it_was() -> None:
    source = ng.Arena()
    x = source.param(np.array([1.0, -1.0]))
    with np.errstate(invalid="ignore"):
        ng.log(x)  # a NaN, fine in an arena that does not check
    target = ng.Arena(check_finite=True)
    t = target.param(np.ones(2))
    with pytest.raises(NonFiniteError, match="log"):
        target.merge(source)
    assert [node.op for node in target] == ["param"]
    np.testing.assert_array_equal(target.backward(ng.sum(t * 2.0)), [np.array([2.0, 2.0])])


def test_merging_a_released_arena_raises() -> None:
    a, b = ng.Arena(), ng.Arena()
    x = b.param(np.ones(2))
    b.backward(ng.sum(x * 2.0), wrt=x, retain=False)
    with pytest.raises(ArenaError, match="released"):
        a.merge(b)
    assert len(a) == 0


def test_a_recorded_sweep_after_a_plain_one_with_the_same_seed_differentiates_again() -> None:
    @ng.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * x * g,))
    arena = ng.Arena()
    x = arena.param(np.array([1.0, 3.0]))
    y = square(x)
    seed = np.ones(2)
    np.testing.assert_array_equal(arena.backward(y, wrt=x, seed=seed), [2.0, 6.0])
    g = arena.backward(y, wrt=x, seed=seed, create_graph=True)  # the same seed object again
    assert isinstance(g, ng.Traced)
    np.testing.assert_array_equal(arena.backward(ng.sum(g), wrt=x), [2.0, 2.0])


def test_custom_vjp_with_a_structured_output_of_numpy_scalars_in_forward_mode() -> None:
    @ng.custom_vjp
    def f(x: Any) -> Any:
        return {"s": np.sum(x**2)}  # a numpy scalar in a dict

    f.defvjp(lambda x: (f(x), x), lambda x, g: (2.0 * x * g["s"],))
    x = np.array([1.0, 2.0])
    assert ng.jvp(lambda x: f(x)["s"], (x,), (np.ones(2),))[1] == 6.0
    check_grads(lambda x: f(x)["s"], x, order=2)
