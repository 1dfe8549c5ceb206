"""autograd's extension API, ``nodegrad.extend``: primitives defined as autograd code
defines them, checked against scipy's values, finite differences (first and second order,
both modes), closures, structured values, and autograd itself on the same definitions."""

from __future__ import annotations

import pickle
import types
from typing import Any

import numpy as onp
import pytest
import scipy.special

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad import extend
from nodegrad.errors import ArgumentError, NoGradientError, StructureError
from nodegrad.extend import (
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    primitive,
)
from nodegrad.testing import check_grads

BOTH = ("rev", "fwd")


# -- ports of autograd's own primitive definitions -------------------------------------------
# Written once as a function of the numpy module and the extension module, so the very same
# definitions are built on nodegrad here and on autograd in the parity test below.


def define(anp: Any, ext: Any) -> types.SimpleNamespace:
    """autograd's tutorial logsumexp, and its scipy.special logsumexp with axis and keepdims,
    j0/j1/jn (rules calling each other, so every order is there), and a power of two
    arguments: ``primitive`` + ``defvjp`` exactly as autograd writes them."""

    @ext.primitive
    def logsumexp(x):
        max_x = onp.max(x)
        return max_x + onp.log(onp.sum(onp.exp(x - max_x)))

    def logsumexp_vjp(ans, x):
        x_shape = x.shape
        return lambda g: anp.full(x_shape, g) * anp.exp(x - anp.full(x_shape, ans))

    ext.defvjp(logsumexp, logsumexp_vjp)

    lse_axis = ext.primitive(scipy.special.logsumexp)

    def lse_axis_vjp(ans, x, axis=None, keepdims=False):
        def vjp(g):
            if axis is not None and not keepdims:
                g, a = anp.expand_dims(g, axis), anp.expand_dims(ans, axis)
            else:
                a = ans
            return g * anp.exp(x - a)

        return vjp

    ext.defvjp(lse_axis, lse_axis_vjp)

    j0 = ext.primitive(scipy.special.j0)
    j1 = ext.primitive(scipy.special.j1)
    jn = ext.primitive(scipy.special.jn)
    ext.defvjp(j0, lambda ans, x: lambda g: -g * j1(x))
    ext.defvjp(j1, lambda ans, x: lambda g: g * (j0(x) - jn(2, x)) / 2.0)
    ext.defvjp(jn, None, lambda ans, n, x: lambda g: g * (jn(n - 1, x) - jn(n + 1, x)) / 2.0)

    power = ext.primitive(lambda x, y: onp.power(x, y))
    ext.defvjp(
        power,
        lambda ans, x, y: lambda g: g * y * x ** (y - 1),
        lambda ans, x, y: lambda g: g * ans * anp.log(x),
    )
    return types.SimpleNamespace(logsumexp=logsumexp, lse_axis=lse_axis, j0=j0, j1=j1, jn=jn, power=power)


P = define(np, extend)
X = onp.array([0.3, -1.2, 2.0, 0.7])
M = onp.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]])


def test_a_ported_logsumexp_has_scipys_value_and_checked_gradients() -> None:
    assert P.logsumexp(X) == pytest.approx(scipy.special.logsumexp(X), rel=1e-14)
    softmax = onp.exp(X - scipy.special.logsumexp(X))
    onp.testing.assert_allclose(ng.grad(P.logsumexp)(X), softmax, rtol=1e-13)
    check_grads(P.logsumexp, X, order=2, modes=BOTH)
    hess = ng.hessian(P.logsumexp)(X)
    onp.testing.assert_allclose(hess, onp.diag(softmax) - onp.outer(softmax, softmax), atol=1e-13)


@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (0, False), (1, False), (1, True)])
def test_keyword_arguments_reach_the_function_and_the_rule(axis: int | None, keepdims: bool) -> None:
    def f(m: Any) -> Any:
        return np.sum(np.sin(P.lse_axis(m, axis=axis, keepdims=keepdims)))

    onp.testing.assert_allclose(
        f(M), onp.sum(onp.sin(scipy.special.logsumexp(M, axis=axis, keepdims=keepdims))), rtol=1e-14
    )
    check_grads(f, M, order=2, modes=BOTH)


def test_rules_calling_other_primitives_differentiate_to_any_order() -> None:
    x = onp.array([0.4, 1.3, 2.9])
    onp.testing.assert_array_equal(P.j0(x), scipy.special.j0(x))
    onp.testing.assert_allclose(ng.grad(lambda x: np.sum(P.j0(x)))(x), -scipy.special.j1(x), rtol=1e-14)
    check_grads(lambda x: P.j0(x) * P.jn(3, x), x, order=2, modes=BOTH)
    third = ng.grad(ng.grad(ng.grad(P.j0)))(1.1)
    assert third == pytest.approx(scipy.special.jvp(0, 1.1, n=3), rel=1e-12)


def test_none_means_no_gradient_to_that_argument() -> None:
    # jn's order has the rule None: differentiating in it gives zeros, as in autograd.
    assert ng.grad(lambda n: P.jn(n, 1.3), argnums=0)(2.0) == 0.0
    check_grads(P.power, 1.7, 2.5, order=2, modes=BOTH)


def test_closures_over_the_differentiated_value() -> None:
    w0 = onp.array([0.5, -0.2, 1.1, 0.3])

    def outer(w: Any) -> Any:
        # the primitive's argument depends on w, and the loss closes over w beside it
        inner = ng.grad(lambda s: P.logsumexp(s * w))(2.0)
        return inner * np.sum(w**2) + P.logsumexp(w * X)

    check_grads(outer, w0, order=2, modes=BOTH)
    h = 1e-6
    e0 = onp.eye(4)[0]
    fd = (outer(w0 + h * e0) - outer(w0 - h * e0)) / (2 * h)
    assert ng.grad(outer)(w0)[0] == pytest.approx(fd, rel=1e-7)


def test_one_node_and_a_body_that_is_not_traced() -> None:
    arena = ng.Arena()
    x = arena.param(X)
    y = P.logsumexp(x)  # the body calls onp.max/onp.exp on plain values only
    assert [node.op for node in arena] == ["param", "custom_vjp:define.<locals>.logsumexp"]
    assert y.value == pytest.approx(scipy.special.logsumexp(X))


# -- structured values ------------------------------------------------------------------------------


@primitive
def energy(p: dict[str, Any], scale: float = 1.0) -> Any:
    return {"quadratic": scale * onp.sum(p["a"] ** 2), "linear": onp.sum(p["b"]) * p["a"]}


defvjp(
    energy,
    lambda ans, p, scale=1.0: (
        lambda g: {
            "a": 2.0 * scale * p["a"] * g["quadratic"] + np.sum(p["b"]) * g["linear"],
            "b": np.full(p["b"].shape, np.sum(g["linear"] * p["a"])),
        }
    ),
)


def test_dict_arguments_and_outputs() -> None:
    p = {"a": onp.array([1.0, -2.0]), "b": onp.array([0.5, 0.25, 3.0])}
    out = energy(p, scale=3.0)
    assert out["quadratic"] == 15.0

    def loss(p: Any) -> Any:
        e = energy(p, scale=3.0)
        return e["quadratic"] + np.sum(np.sin(e["linear"]))

    g = ng.grad(loss)(p)
    assert set(g) == {"a", "b"}
    onp.testing.assert_allclose(g["a"], 6.0 * p["a"] + 3.75 * onp.cos(3.75 * p["a"]), rtol=1e-14)
    check_grads(loss, p, order=2, modes=BOTH)


@primitive
def products(xs: list[Any]) -> Any:
    return [xs[0] * xs[1], onp.sum(xs[0])]


defvjp(products, lambda ans, xs: lambda g: [g[0] * xs[1] + g[1] * np.ones_like(xs[0]), g[0] * xs[0]])


def test_list_arguments_and_outputs() -> None:
    xs = [onp.array([1.0, 2.0]), onp.array([3.0, -1.0])]

    def loss(xs: Any) -> Any:
        out = products(xs)
        return np.sum(out[0] ** 2) + out[1] ** 2

    g = ng.grad(loss)(xs)
    assert isinstance(g, list)
    onp.testing.assert_allclose(g[0], 2 * xs[0] * xs[1] ** 2 + 2 * onp.sum(xs[0]))
    onp.testing.assert_allclose(g[1], 2 * xs[1] * xs[0] ** 2)
    check_grads(loss, xs, order=2, modes=BOTH)


def test_a_module_level_primitive_pickles_by_reference_with_its_rules() -> None:
    again = pickle.loads(pickle.dumps(energy))  # as process pools and Dask ship functions
    assert again is energy
    p = {"a": onp.array([1.0, -2.0]), "b": onp.array([0.5])}
    onp.testing.assert_allclose(ng.grad(lambda p: again(p)["quadratic"])(p)["a"], 2.0 * p["a"])


# -- the other ways of giving rules --------------------------------------------------------------------


def test_defvjp_argnums_gives_a_joint_rule_for_the_traced_arguments() -> None:
    asked: list[tuple[int, ...]] = []
    ratio = primitive(lambda x, y: x / y)

    def ratio_vjp(argnums: tuple[int, ...], ans: Any, args: Any, kwargs: Any) -> Any:
        asked.append(argnums)
        y = args[1]
        return lambda g: [g / y if k == 0 else -g * ans / y for k in argnums]

    defvjp_argnums(ratio, ratio_vjp)
    check_grads(ratio, onp.array([1.0, 2.0]), onp.array([3.0, -0.5]), order=2, modes=BOTH)
    asked.clear()
    ng.grad(ratio, argnums=1)(2.0, 4.0)
    assert asked == [(1,)]  # only the traced argument is asked for


def test_defvjp_argnum_gives_one_rule_for_every_argument() -> None:
    product = primitive(lambda x, y: x * y)
    defvjp_argnum(product, lambda k, ans, args, kwargs: lambda g: g * args[1 - k])
    assert ng.grad(product, argnums=(0, 1))(2.0, 5.0) == (5.0, 2.0)
    check_grads(product, onp.array([0.3, 1.0]), onp.array([2.0, -1.0]), order=2, modes=BOTH)


def test_defvjp_argnums_keyword_skips_arguments() -> None:
    shift = primitive(lambda n, x: x + n)
    defvjp(shift, lambda ans, n, x: lambda g: g, argnums=[1])
    assert ng.grad(shift, argnums=1)(3.0, 1.0) == 1.0
    with pytest.raises(NoGradientError, match=r"has no VJP for its argument 0"):
        ng.grad(shift, argnums=0)(3.0, 1.0)


def test_a_jvp_alone_serves_both_modes_by_transposition() -> None:
    sine = primitive(onp.sin)
    defjvp(sine, lambda g, ans, x: g * np.cos(x))
    onp.testing.assert_allclose(ng.grad(lambda x: np.sum(sine(x)))(X), onp.cos(X), rtol=1e-15)
    check_grads(lambda x: sine(x) * x, X, order=2, modes=BOTH)

    weighted = primitive(lambda x, y: x * onp.exp(y))
    defjvp(weighted, lambda g, ans, x, y: g * np.exp(y), lambda g, ans, x, y: g * ans)
    check_grads(weighted, onp.array([0.5, -1.0]), onp.array([0.2, 0.3]), order=2, modes=BOTH)

    cube = primitive(lambda x: x**3)
    defjvp_argnum(cube, lambda k, g, ans, args, kwargs: 3.0 * g * args[0] ** 2)
    assert ng.grad(cube)(2.0) == 12.0
    both = primitive(lambda x, y: x * y)
    defjvp_argnums(
        both, lambda argnums, gs, ans, args, kwargs: sum(g * args[1 - k] for k, g in zip(argnums, gs, strict=True))
    )
    assert ng.grad(both, argnums=(0, 1))(2.0, 5.0) == (5.0, 2.0)


def test_a_vjp_is_used_when_both_rules_are_given() -> None:
    # A JVP deliberately wrong (10x): the VJP is the one used, in forward mode too.
    sine = primitive(onp.sin)
    defvjp(sine, lambda ans, x: lambda g: g * np.cos(x))
    defjvp(sine, lambda g, ans, x: 10.0 * g * np.cos(x))
    assert ng.jvp(sine, (0.0,), (1.0,))[1] == 1.0
    assert ng.grad(sine)(0.0) == 1.0


def test_linear_primitives_need_their_vjp() -> None:
    double = primitive(lambda x: 2.0 * x)
    def_linear(double)
    with pytest.raises(NoGradientError, match=r"its JVP is the function itself.*defvjp"):
        ng.grad(double)(1.0)
    defvjp(double, lambda ans, x: lambda g: 2.0 * g)
    assert ng.grad(double)(1.0) == 2.0
    same = primitive(lambda x: 3.0 * x)
    defjvp(same, "same")
    with pytest.raises(NoGradientError, match=r"'same'"):
        ng.grad(same)(1.0)


# -- errors --------------------------------------------------------------------------------------------


def test_a_primitive_without_a_rule_names_itself() -> None:
    @primitive
    def opaque(x: Any) -> Any:
        return onp.tanh(x)

    assert opaque(0.5) == onp.tanh(0.5)  # plain values: the function itself
    with pytest.raises(NoGradientError, match=r"primitive .*opaque has no gradient rule.*defvjp"):
        ng.grad(opaque)(0.5)


def test_bad_definitions_raise_clear_errors() -> None:
    with pytest.raises(ArgumentError, match=r"defvjp: .* is not a primitive.*@nodegrad.extend.primitive"):
        defvjp(onp.sin, lambda ans, x: lambda g: g)
    with pytest.raises(ArgumentError, match=r"primitive needs a function"):
        primitive(3.0)  # type: ignore[arg-type]
    sq = primitive(lambda x: x * x)
    with pytest.raises(ArgumentError, match=r"a VJP maker must be a function or None"):
        defvjp(sq, "nope")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"2 rules for the 1 argnums"):
        defvjp(sq, None, None, argnums=[0])
    pair = primitive(lambda x, y: x * y)
    defvjp_argnums(pair, lambda argnums, ans, args, kwargs: lambda g: [g])  # one cotangent for two
    with pytest.raises(StructureError, match=r"gave 1 cotangents for the arguments \(0, 1\)"):
        ng.grad(pair, argnums=(0, 1))(1.0, 2.0)
    scaled = primitive(lambda x, scale=1.0: x * scale)
    defvjp(scaled, lambda ans, x, scale=1.0: lambda g: g * scale)
    with pytest.raises(ArgumentError, match=r"keyword argument 'scale' is traced"):
        ng.grad(lambda s: scaled(s, scale=s))(2.0)


# -- the same definitions on autograd ------------------------------------------------------------------


def test_the_same_definitions_give_autograds_numbers() -> None:
    autograd = pytest.importorskip("autograd")
    import autograd.extend as aext
    import autograd.numpy as anp

    theirs_ns = define(anp, aext)

    def loss(ns: Any, x: Any) -> Any:
        return ns.logsumexp(x * ns.j0(x)) + ns.power(ns.lse_axis(x[:2], axis=0), 2.0)

    ours = ng.grad(lambda x: loss(P, x))(X)
    theirs = autograd.grad(lambda x: loss(theirs_ns, x))(X)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-13)
    ours2 = ng.hessian(lambda x: loss(P, x))(X)
    theirs2 = autograd.hessian(lambda x: loss(theirs_ns, x))(X)
    onp.testing.assert_allclose(ours2, theirs2, rtol=1e-12, atol=1e-13)
