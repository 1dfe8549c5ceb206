"""The reverse sweep: depth, pruning, accumulation, seeds, aliasing and idempotence."""

import functools
import weakref
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.engine.registry import ANS, rule_reads
from nodegrad.errors import ArenaError, DtypeError, ShapeError


def test_a_million_node_chain_differentiates():
    n = 1_000_000
    a = ng.Arena()
    x = a.param(np.array(0.5))
    y = x
    for _ in range(n // 2):
        y = y * 1.0
        y = y + 0.0
    assert len(a) == n + 1
    assert a.backward(y, wrt=x) == 1.0
    assert a.last_visited == n + 1


def test_sweep_visits_only_nodes_between_wrt_and_output():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    w = a.param(np.array([3.0, 4.0]))
    side = ng.exp(w)  # depends on w only
    for _ in range(10):
        side = ng.sin(side)
    unused = ng.tanh(x)  # not on the path to the output
    y = (x * side).sum()
    g = a.backward(y, wrt=x)
    np.testing.assert_allclose(g, side.value)
    assert unused.index < y.index
    # x, the multiply and the sum: the 11 nodes of `side` and the unused branch cost nothing.
    assert a.last_visited == 3


def test_fan_out_accumulates():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    y = (x * x + ng.sin(x) + x).sum()
    np.testing.assert_allclose(a.backward(y, wrt=x), 2 * x.value + np.cos(x.value) + 1)


def test_sums_are_added_to_in_place_only_where_nothing_else_sees_them():
    # Several cotangents meet at y, u and x. y's sum is handed on, as one array, to u and
    # v by the add rule, and u then gets one more (from cos): adding that in place would
    # change v's too. Every path must count once; no forward value or seed may change.
    a = ng.Arena()
    x = a.param(np.array([1.0, -2.0, 0.5]))
    u, v = x * 2.0, x * 3.0
    t = ng.cos(u)
    y = u + v
    s = y + y + y * y + ng.sin(y)
    out = (s + t + x).sum()
    seed = np.array(1.0)
    forward = [(n, n.value.copy()) for n in (x, u, v, t, y, s)]
    g = a.backward(out, wrt=x, seed=seed)
    yv = 5.0 * x.value
    dy = 2.0 + 2.0 * yv + np.cos(yv)
    np.testing.assert_allclose(g, 5.0 * dy - 2.0 * np.sin(2.0 * x.value) + 1.0)
    np.testing.assert_array_equal(a.backward(out, wrt=x, seed=seed), g)
    for node, value in forward:
        np.testing.assert_array_equal(node.value, value)
    assert seed == 1.0


def test_backward_is_idempotent_and_seed_is_not_mutated():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0, 3.0]))
    y = ng.tanh(x) * 2.0
    seed = np.array([1.0, -1.0, 0.5])
    kept = seed.copy()
    g1 = a.backward(y, wrt=x, seed=seed)
    g2 = a.backward(y, wrt=x, seed=seed)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(seed, kept)
    assert not np.shares_memory(g1, g2)
    g3 = a.backward(y, wrt=x, seed=2 * seed)
    np.testing.assert_allclose(g3, 2 * g1)


def test_identity_output_does_not_return_the_seed_itself():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    seed = np.array([1.0, 1.0])
    g = a.backward(x, wrt=x, seed=seed)
    assert g is not seed
    g[0] = 5.0
    assert seed[0] == 1.0


def test_returned_gradients_do_not_alias():
    a = ng.Arena()
    x = a.param(np.array([1.0, 2.0]))
    y = a.param(np.array([3.0, 4.0]))
    z = x + y  # the add rule passes the same cotangent to both inputs
    gx, gy = a.backward(z, wrt=(x, y), seed=np.ones(2))
    assert not np.shares_memory(gx, gy)
    assert all(g.flags.writeable for g in (gx, gy))


def test_broadcast_inputs_get_gradients_of_their_own_shape():
    a = ng.Arena()
    x = a.param(np.ones((3, 1)))
    b = a.param(np.array(2.0))
    row = a.param(np.ones(4))
    y = (x * row + b).sum()
    gx, gb, grow = a.backward(y, wrt=[x, b, row])
    np.testing.assert_array_equal(gx, np.full((3, 1), 4.0))
    assert gb.shape == () and gb == 12.0
    np.testing.assert_array_equal(grow, np.full(4, 3.0))


def test_non_scalar_output_needs_a_seed_of_its_shape():
    a = ng.Arena()
    x = a.param(np.ones(3))
    y = x * 2.0
    with pytest.raises(ArenaError, match=r"shape \(3,\).*seed="):
        a.backward(y, wrt=x)
    with pytest.raises(ShapeError, match=r"seed has shape \(2,\)"):
        a.backward(y, wrt=x, seed=np.ones(2))


def test_output_without_a_path_gives_zeros():
    a = ng.Arena()
    x = a.param(np.ones(2, dtype=np.float32))
    w = a.param(np.ones(2))
    y = (w * 3.0).sum()
    g = a.backward(y, wrt=x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.zeros(2))


def test_wrt_an_intermediate_node():
    a = ng.Arena()
    x = a.param(np.array([0.3, 0.7]))
    h = ng.sin(x)
    y = (h * h).sum()
    gh, gx = a.backward(y, wrt=(h, x))
    np.testing.assert_allclose(gh, 2 * h.value)
    np.testing.assert_allclose(gx, 2 * h.value * np.cos(x.value))


def test_float32_stays_float32():
    a = ng.Arena()
    x = a.param(np.array([0.1, 0.2], dtype=np.float32))
    y = ng.sum(ng.tanh(x * 2.0) + ng.exp(x) / 3.0)
    assert y.dtype == np.float32
    assert a.backward(y, wrt=x).dtype == np.float32


def test_default_wrt_is_every_param():
    a = ng.Arena()
    x = a.param(1.0)
    data = a.input(np.array(2.0))
    w = a.param(3.0)
    y = x * w * data
    assert [float(g) for g in a.backward(y)] == [6.0, 2.0]


def test_integer_nodes_cannot_be_differentiated():
    a = ng.Arena()
    idx = a.input(np.array([1, 2]))
    with pytest.raises(DtypeError, match="only floating"):
        a.backward(idx, wrt=idx, seed=np.ones(2))


def test_wrt_from_another_arena_is_an_error():
    a, b = ng.Arena(), ng.Arena()
    x = a.param(1.0)
    with pytest.raises(ArenaError, match="not a node of this arena"):
        b.backward(x * 2.0, wrt=x)


# -- what a node keeps: Op.reads and lean arenas ----------------------------------------------------


def test_rule_reads_comes_from_the_rules_code() -> None:
    assert rule_reads(lambda g, ans, x: g * np.cos(x)) == {0}
    assert rule_reads(lambda g, ans, x: g * (1.0 - ans * ans)) == {ANS}
    assert rule_reads(lambda g, ans, x, y: g * y) == {1}
    assert rule_reads(lambda g, ans, x, y: g) == frozenset()
    assert rule_reads(None) == frozenset()


def test_rule_reads_is_none_where_the_code_does_not_show() -> None:
    def closing_over_a_parameter(g: Any, ans: Any, x: Any) -> Any:
        return (lambda: g * x)()

    def wrapped(g: Any, ans: Any, x: Any) -> Any:
        return g

    assert rule_reads(lambda g, ans, *args: g * args[0]) is None
    assert rule_reads(closing_over_a_parameter) is None
    assert rule_reads(functools.partial(lambda k, g, ans, x: g, 0)) is None
    assert rule_reads(functools.wraps(wrapped)(lambda *a: a[0])) is None
    assert rule_reads(np.multiply) is None


def test_a_gradient_call_frees_values_no_rule_reads() -> None:
    # sin's rule reads its input, not its output, and x * 1.01's rule reads 1.01: once the
    # user's code lets go of sin's output, nothing holds it. tanh's rule reads its output.
    freed: dict[str, bool] = {}

    def loss(x: Any) -> Any:
        s = ng.sin(x)
        s_ref = weakref.ref(s.value)
        t = ng.tanh(s * 1.01)
        t_ref = weakref.ref(t.value)
        y = t + 0.5
        del s, t
        freed["sin"], freed["tanh"] = s_ref() is None, t_ref() is None
        return ng.sum(y)

    x = np.linspace(-1.0, 1.0, 20_000)
    g = ng.grad(loss)(x)
    assert freed == {"sin": True, "tanh": False}
    np.testing.assert_allclose(g, (1.0 - np.tanh(np.sin(x) * 1.01) ** 2) * 1.01 * np.cos(x), rtol=1e-12)


def test_an_arena_made_by_hand_keeps_every_value() -> None:
    a = ng.Arena()
    x = a.param(np.linspace(-1.0, 1.0, 20_000))
    s = ng.sin(x)
    y = ng.sum(s * 1.01)
    ref = weakref.ref(s.value)
    del s
    assert ref() is not None  # a[1].value is there to look at
    np.testing.assert_array_equal(a[1].value, np.sin(np.linspace(-1.0, 1.0, 20_000)))
    np.testing.assert_allclose(a.backward(y, wrt=x), 1.01 * np.cos(np.linspace(-1.0, 1.0, 20_000)))
