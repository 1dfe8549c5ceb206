"""Every transform composed with every other, checked against finite differences.

The scheme
----------
A *wrapper* turns a scalar function of the argument into another scalar function of the
argument, so any wrapper applies after any other. There are thirteen (``WRAPPERS``): each
derivative transform contracted with a fixed direction ``w`` (``grad``: ``<grad f(x), w>``;
``jvp``: the tangent along ``w``; ``hessian`` and ``hvp``: ``w^T H w``; ...), the three
that keep the value (``checkpoint``, a ``custom_vjp`` that calls ``ng.grad`` in its ``fwd`` and
its ``bwd``, and ``f + stop_gradient(f) ** 2``, whose derivative is ``f'``), and ``vmap``:
``sum_b c_b f(s_b x)``, ``f`` mapped over a batch of the argument scaled by ``s_b`` (every leaf
stacked along a new axis 0), its results weighted by ``c_b`` -- a loop's value, computed in
one batched call.

Each is applied to a base function ``F`` of three argument kinds with the same three float
coordinates: an array of shape (3,), a dict ``{"a": (2,), "b": float}`` and an attrs record
with an array field, a float field and a static name. For every ordered pair (T1, T2) of
wrappers on each kind, and for a fixed set of triples on the array and the record, the
composed function ``G = T2(T1(F))`` (or ``T3(T2(T1(F)))``) is checked two ways:

(a) its value at the plain point ``x`` is a plain float and equals a reference computed
    without nodegrad: the same composition of *reference wrappers* acting on the plain
    function of the flat coordinates, where every derivative is a nested central finite
    difference along ``w`` (five-point stencils, float64), ``checkpoint`` and ``custom_vjp``
    are the identity, ``stop_gradient`` adds its square to the value only, and ``vmap`` is
    the loop ``sum_b c_b r(s_b v)`` over the same scaled points. A reference
    function returns ``(value, smooth)``: ``smooth`` is the part that derivatives see, so
    ``stop_gradient`` changes the first and not the second;
(b) ``ng.grad(G)(x)`` -- one more level of differentiation -- has the argument's structure
    and matches central differences, along each float coordinate, of ``G`` evaluated with
    nodegrad at plain points (without its ``stop_gradient`` squares, which no derivative sees).

The step of the nested differences grows with the total order of the composition
(truncation goes like ``h**4``, roundoff like ``eps / h**order``), which keeps them within
about 1e-8 up to the fourth order; the tolerance, 1e-6, is far below a wrong factor of 2 or
a wrong sign. The module ends with explicit cases: perturbation
confusion (reverse and forward), leaked tracers, and dicts given in another key order.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import LeakedTracerError

Fun = Callable[[Any], Any]


# -- the argument kinds -------------------------------------------------------------------------


@attrs.frozen
class Point:
    a: np.ndarray
    b: float
    name: str = ng.field(static=True, default="point")


def _floats(value: Any) -> list[Any]:
    """The float leaves of a value of any kind, in order: dict entries by key, record fields
    by name (works on traced values, and on gradients, Jacobians and Hessian rows)."""
    if isinstance(value, dict):
        return [value["a"], value["b"]]
    if isinstance(value, Point):
        return [value.a, value.b]
    return [value]


def _flat(value: Any) -> np.ndarray:
    """The three float coordinates of a plain value."""
    return np.concatenate([np.ravel(np.asarray(leaf, dtype=np.float64)) for leaf in _floats(value)])


KINDS: dict[str, Callable[[np.ndarray], Any]] = {
    "array": lambda v: np.array(v, dtype=np.float64),
    "dict": lambda v: {"a": np.array(v[:2]), "b": float(v[2])},
    "record": lambda v: Point(np.array(v[:2]), float(v[2])),
}
X = np.array([0.3, -0.5, 0.8])
W = np.array([0.7, -0.2, 0.4])


def _core(a: Any, b: Any) -> Any:
    """Smooth and non-trivial in every coordinate; numpy calls, so it runs on traced values."""
    return np.sum(np.sin(a) * np.exp(0.3 * a)) + b**3 * np.sum(a) + 0.5 * b * b


def base(x: Any) -> Any:
    """``F``: the same function of the three coordinates for every kind."""
    if isinstance(x, dict | Point):
        return _core(*_floats(x))
    return _core(x[:2], x[2])


# -- the wrappers, with nodegrad ----------------------------------------------------------------


def _vdot(a: Any, b: Any) -> Any:
    total: Any = 0.0
    for p, q in zip(_floats(a), _floats(b), strict=True):
        total = total + np.sum(p * q)
    return total


def _quadratic(hessian: Any, w: Any) -> Any:
    """``w^T H w`` for a Hessian laid out as ``H[leaf_i][leaf_j]``, blocks ``shape_i + shape_j``."""
    total: Any = 0.0
    for row, wi in zip(_floats(hessian), _floats(w), strict=True):
        for block, wj in zip(_floats(row), _floats(w), strict=True):
            total = total + np.sum(block * np.multiply.outer(wi, wj))
    return total


def _value_and_grad(f: Fun, w: Any) -> Fun:
    def g(x: Any) -> Any:
        value, gradient = ng.value_and_grad(f)(x)
        return value + _vdot(gradient, w)

    return g


def _vjp(f: Fun, w: Any) -> Fun:
    def g(x: Any) -> Any:
        _, back = ng.vjp(f, x)
        return _vdot(back(1.0)[0], w)

    return g


def _custom_vjp(f: Fun, w: Any) -> Fun:
    """``f`` with its true gradient as a custom rule: ``fwd`` saves ``ng.grad(f)(x)``, ``bwd``
    takes the mean of that and ``ng.grad(f)`` of the saved ``x``. Higher orders re-run ``fwd`` on
    traced inputs, so both are differentiated again."""

    @ng.custom_vjp
    def h(x: Any) -> Any:
        return f(x)

    def fwd(x: Any) -> tuple[Any, Any]:
        return f(x), (x, ng.grad(f)(x))

    def bwd(residuals: Any, g: Any) -> tuple[Any]:
        x, saved = residuals
        again = ng.grad(f)(x)
        return (ng.tree.tree_map(lambda s, a: 0.5 * g * (s + a), saved, again),)

    h.defvjp(fwd, bwd)
    return h


#: The vmap wrapper's batch: example ``b`` is the argument scaled by ``SCALES[b]``, its
#: result weighted by ``WEIGHTS[b]`` (all different, so examples mixed up would show).
SCALES = (1.0, 0.8, 1.15)
WEIGHTS = np.array([0.6, -0.3, 0.45])


def _scaled_batch(x: Any) -> Any:
    """``x`` of any kind with every float leaf replaced by its scaled copies, stacked along
    a new axis 0 (a record's static name kept); works on traced and batched leaves."""

    def stacked(leaf: Any) -> Any:
        return np.stack([s * leaf for s in SCALES])

    if isinstance(x, dict):
        return {"a": stacked(x["a"]), "b": stacked(x["b"])}
    if isinstance(x, Point):
        return Point(stacked(x.a), stacked(x.b), x.name)
    return stacked(x)


def _vmap(f: Fun, w: Any) -> Fun:
    def g(x: Any) -> Any:
        return np.sum(WEIGHTS * ng.vmap(f)(_scaled_batch(x)))

    return g


WRAPPERS: dict[str, Callable[[Fun, Any], Fun]] = {
    "grad": lambda f, w: lambda x: _vdot(ng.grad(f)(x), w),
    "value_and_grad": _value_and_grad,
    "vjp": _vjp,
    "jvp": lambda f, w: lambda x: ng.jvp(f, (x,), (w,))[1],
    "jacobian": lambda f, w: lambda x: _vdot(ng.jacobian(f)(x), w),
    "jacfwd": lambda f, w: lambda x: _vdot(ng.jacfwd(f)(x), w),
    "hessian": lambda f, w: lambda x: _quadratic(ng.hessian(f)(x), w),
    "hvp": lambda f, w: lambda x: _vdot(ng.hvp(f, x, w), w),
    "checkpoint": lambda f, w: ng.checkpoint(f),
    "custom_vjp": _custom_vjp,
    "stop_gradient": lambda f, w: lambda x: f(x) + ng.stop_gradient(f(x)) ** 2,
    "elementwise_grad": lambda f, w: lambda x: _vdot(ng.elementwise_grad(f)(x), w),
    "vmap": _vmap,
}


def composed(names: tuple[str, ...], kind: str, *, smooth: bool = False) -> Fun:
    """``names[-1](...(names[0](F)))`` for arguments of ``kind``. With ``smooth``, the
    ``stop_gradient`` wrapper adds nothing: what is left is the part derivatives see."""
    f, w = base, KINDS[kind](W)
    for name in names:
        f = f if smooth and name == "stop_gradient" else WRAPPERS[name](f, w)
    return f


# -- the wrappers, by finite differences on plain values -----------------------------------------

#: How many derivatives each wrapper takes.
ORDER = {name: 1 for name in WRAPPERS} | {
    "hessian": 2,
    "hvp": 2,
    "checkpoint": 0,
    "custom_vjp": 0,
    "stop_gradient": 0,
    "vmap": 0,
}
Ref = Callable[[np.ndarray], tuple[float, float]]


def _d1(f: Callable[[np.ndarray], float], v: np.ndarray, h: float) -> float:
    """The derivative of ``f`` at ``v`` along ``W``: five-point central difference."""
    return (8 * (f(v + h * W) - f(v - h * W)) - (f(v + 2 * h * W) - f(v - 2 * h * W))) / (12 * h)


def _d2(f: Callable[[np.ndarray], float], v: np.ndarray, h: float) -> float:
    """The second derivative of ``f`` at ``v`` along ``W``: five-point central difference."""
    return (16 * (f(v + h * W) + f(v - h * W)) - (f(v + 2 * h * W) + f(v - 2 * h * W)) - 30 * f(v)) / (12 * h * h)


def _reference_wrapper(name: str, r: Ref, h: float) -> Ref:
    def smooth(v: np.ndarray) -> float:
        return r(v)[1]

    def wrapped(v: np.ndarray) -> tuple[float, float]:
        if name in ("checkpoint", "custom_vjp"):
            return r(v)
        if name == "stop_gradient":
            value, part = r(v)
            return value + value**2, part  # the square is cut from every derivative
        if name == "vmap":  # the loop over the scaled examples
            looped = [r(s * v) for s in SCALES]
            return float(WEIGHTS @ [value for value, _ in looped]), float(WEIGHTS @ [part for _, part in looped])
        if name == "value_and_grad":
            value, part = r(v)
            d = _d1(smooth, v, h)
            return value + d, part + d
        d = _d2(smooth, v, h) if ORDER[name] == 2 else _d1(smooth, v, h)
        return d, d

    return wrapped


def order(names: tuple[str, ...]) -> int:
    return sum(ORDER[name] for name in names)


def step(names: tuple[str, ...]) -> float:
    """Grows with the order: truncation goes like ``h**4``, roundoff like ``eps / h**order``."""
    return 1e-3 * 3.0 ** (order(names) - 1)


#: The nested differences are good to about 1e-8 up to the fourth order; a wrong factor or
#: sign is off by far more.
TOLERANCE = 1e-6


@functools.cache
def reference(names: tuple[str, ...]) -> float:
    h = step(names)
    r: Ref = lambda v: (float(_core(v[:2], v[2])),) * 2
    for name in names:
        r = _reference_wrapper(name, r, h)
    return r(X)[0]


# -- the cases -----------------------------------------------------------------------------------

NAMES = list(WRAPPERS)
PAIRS = [(kind, t1, t2) for kind in KINDS for t1 in NAMES for t2 in NAMES]
#: Three rounds of thirteen: each wrapper three times in each position, none twice in a triple.
TRIPLES = [
    (NAMES[i], NAMES[(i + s) % len(NAMES)], NAMES[(i + t) % len(NAMES)])
    for s, t in ((1, 3), (4, 9), (6, 2))
    for i in range(len(NAMES))
]
TRIPLE_CASES = [(kind, names) for kind in ("array", "record") for names in TRIPLES]


def _check(names: tuple[str, ...], kind: str) -> None:
    g = composed(names, kind)
    x = KINDS[kind](X)

    value = g(x)  # (a)
    assert type(value) is not ng.Traced and np.shape(value) == () and np.result_type(value) == np.float64
    assert float(value) == pytest.approx(reference(names), rel=TOLERANCE, abs=TOLERANCE)

    gradient = ng.grad(g)(x)  # (b)
    assert type(gradient) is type(x) and type(_floats(gradient)[-1]) is type(_floats(x)[-1])
    s, h = composed(names, kind, smooth=True), 1e-5
    numeric = [(s(KINDS[kind](X + h * e)) - s(KINDS[kind](X - h * e))) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(_flat(gradient), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("kind", "t1", "t2"), PAIRS, ids=[f"{t2}-of-{t1}[{kind}]" for kind, t1, t2 in PAIRS])
def test_pair(kind: str, t1: str, t2: str) -> None:
    _check((t1, t2), kind)


@pytest.mark.parametrize(
    ("kind", "names"), TRIPLE_CASES, ids=[f"{'-of-'.join(reversed(names))}[{kind}]" for kind, names in TRIPLE_CASES]
)
def test_triple(kind: str, names: tuple[str, str, str]) -> None:
    _check(names, kind)


def test_the_triples_hold_every_wrapper_at_least_twice_in_every_position() -> None:
    assert all(len(set(names)) == 3 for names in TRIPLES)
    for position in range(3):
        counts = collections.Counter(names[position] for names in TRIPLES)
        assert set(counts) == set(NAMES) and min(counts.values()) >= 2


# -- perturbation confusion ----------------------------------------------------------------------


def test_no_perturbation_confusion_in_reverse_mode() -> None:
    # d/dx [x * d/dy (x + y)] = d/dx [x] = 1: the inner derivative must not see x's perturbation
    assert ng.grad(lambda x: x * ng.grad(lambda y: x + y)(1.0))(1.0) == 1.0
    # d/dx [d/dy (x y^2) at y = 2] = d/dx [4 x] = 4
    assert ng.grad(lambda x: ng.grad(lambda y: x * y * y)(2.0))(1.0) == 4.0


def test_no_perturbation_confusion_in_forward_mode() -> None:
    assert ng.jvp(lambda x: x * ng.jvp(lambda y: x + y, (1.0,), (1.0,))[1], (1.0,), (1.0,))[1] == 1.0
    assert ng.jvp(lambda x: ng.jvp(lambda y: x * y * y, (2.0,), (1.0,))[1], (1.0,), (1.0,))[1] == 4.0


def test_no_perturbation_confusion_across_modes() -> None:
    assert ng.grad(lambda x: x * ng.jvp(lambda y: x + y, (1.0,), (1.0,))[1])(1.0) == 1.0
    assert ng.jvp(lambda x: x * ng.grad(lambda y: x + y)(1.0), (1.0,), (1.0,))[1] == 1.0
    assert ng.grad(lambda x: ng.jvp(lambda y: x * y * y, (2.0,), (1.0,))[1])(1.0) == 4.0
    assert ng.jvp(lambda x: ng.grad(lambda y: x * y * y)(2.0), (1.0,), (1.0,))[1] == 4.0


def test_the_outer_variable_reaching_the_inner_transform_through_a_closure_in_a_dict() -> None:
    def outer(x: Any, inner_mode: str) -> Any:
        model = {"scale": lambda y: x * y * y, "shift": 1.0}  # x only through the closure
        inner = lambda p: model["scale"](p["y"]) + p["y"] * model["shift"]
        if inner_mode == "rev":
            slope = ng.grad(inner)({"y": 2.0})["y"]  # 2 x y + 1 = 4 x + 1
        else:
            slope = ng.jvp(inner, ({"y": 2.0},), ({"y": 1.0},))[1]
        return x * slope  # 4 x^2 + x, whose derivative is 8 x + 1

    for inner_mode in ("rev", "fwd"):
        f = functools.partial(outer, inner_mode=inner_mode)
        assert ng.grad(f)(1.5) == pytest.approx(13.0, rel=1e-14)
        assert ng.jvp(f, (1.5,), (1.0,))[1] == pytest.approx(13.0, rel=1e-14)


# -- reported failures ---------------------------------------------------------------------------


def test_a_transform_of_plain_values_inside_a_differentiated_function_returns_plain_values() -> None:
    seen: list[Any] = []

    def f(x: Any) -> Any:
        inner = ng.grad(lambda y: y**3)(2.0)
        seen.append(inner)
        return x * inner

    assert ng.grad(f)(1.0) == 12.0
    assert ng.jvp(f, (1.0,), (1.0,))[1] == 12.0
    assert ng.grad(ng.grad(lambda x: x * f(x)))(1.0) == 24.0
    assert seen and all(type(inner) is float and inner == 12.0 for inner in seen)


def test_a_leaked_tracer_reaching_a_new_transform_is_an_error_naming_the_transform() -> None:
    leaked: list[Any] = []

    def keeps_its_argument(x: Any) -> Any:
        leaked.append(x)
        return x * x

    assert ng.grad(keeps_its_argument)(1.0) == 2.0
    named = r"ng\.grad\(.*keeps_its_argument\)"
    with pytest.raises(LeakedTracerError, match=named):
        ng.grad(lambda y: y * y)(leaked[0])  # passed in
    with pytest.raises(LeakedTracerError, match=named):
        ng.grad(lambda y: y * leaked[0])(2.0)  # closed over
    with pytest.raises(LeakedTracerError, match=named):
        ng.jvp(lambda y: y * leaked[0], (2.0,), (1.0,))


@pytest.mark.parametrize(
    "use",
    [
        lambda t: t * 3.0,  # an operator
        lambda t: np.sin(t),  # a numpy ufunc
        lambda t: ng.sum(t),  # a nodegrad op
        lambda t: t[0],  # indexing
        lambda t: np.asarray(t),  # a conversion
        lambda t: float(t),
    ],
    ids=["operator", "ufunc", "op", "index", "asarray", "float"],
)
@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp"])
def test_a_leaked_tracer_used_outside_any_transform_is_an_error(use: Any, transform: str) -> None:
    kept: list[Any] = []

    def keeps_a_value(x: Any) -> Any:
        kept.append(x * 2.0)
        return ng.sum(x)

    x = np.array([1.0, 2.0])
    if transform == "grad":
        ng.grad(keeps_a_value)(x)
    elif transform == "vjp":
        _, back = ng.vjp(keeps_a_value, x)
        back(1.0)  # the backward runs after the transform returned: it still works
    else:
        ng.jvp(keeps_a_value, (x,), (x,))
    with pytest.raises(LeakedTracerError, match=r"keeps_a_value.*has already returned \(a leaked tracer\)"):
        use(kept[0])


def test_a_vjp_backward_runs_after_its_transform_returned() -> None:
    _, back = ng.vjp(lambda x: x * x, np.array([1.0, 3.0]))
    np.testing.assert_array_equal(back(np.ones(2))[0], [2.0, 6.0])
    np.testing.assert_array_equal(back(np.ones(2))[0], [2.0, 6.0])  # again: nothing was sealed away


def _numeric_jacobian(f: Fun, kind: str, v: np.ndarray) -> np.ndarray:
    """Columns of central differences along each flat coordinate (outputs flattened)."""
    h = 1e-6
    columns = [(_flat(f(KINDS[kind](v + h * e))) - _flat(f(KINDS[kind](v - h * e)))) / (2 * h) for e in np.eye(3)]
    return np.stack(columns, axis=-1)


def test_jacobian_of_a_function_of_a_dict() -> None:
    x = KINDS["dict"](X)
    f = lambda p: np.sin(p["a"]) * p["b"] ** 2  # an array of shape (2,)
    numeric = _numeric_jacobian(f, "dict", X)
    for mode in ("rev", "fwd"):
        jac = ng.jacobian(f, mode=mode)(x)
        assert list(jac) == ["a", "b"] and jac["a"].shape == (2, 2) and jac["b"].shape == (2,)
        np.testing.assert_allclose(np.column_stack([jac["a"], jac["b"]]), numeric, rtol=1e-8, atol=1e-10)
    gradient_like = ng.jacobian(base)(x)  # a scalar function: shaped like its argument
    np.testing.assert_allclose(_flat(gradient_like), _numeric_jacobian(base, "dict", X)[0], rtol=1e-8)


def test_dict_tangents_and_cotangents_are_matched_by_key() -> None:
    x = KINDS["dict"](X)
    in_order = KINDS["dict"](W)
    swapped = {"b": in_order["b"], "a": in_order["a"]}
    assert list(swapped) != list(x)

    _, tangent = ng.jvp(base, (x,), (in_order,))
    assert ng.jvp(base, (x,), (swapped,))[1] == tangent
    h = 1e-6
    numeric = (base(KINDS["dict"](X + h * W)) - base(KINDS["dict"](X - h * W))) / (2 * h)
    assert tangent == pytest.approx(numeric, rel=1e-8)

    product = ng.hvp(base, x, in_order)
    np.testing.assert_array_equal(_flat(ng.hvp(base, x, swapped)), _flat(product))
    numeric_product = _numeric_jacobian(lambda p: ng.grad(base)(p), "dict", X) @ W
    np.testing.assert_allclose(_flat(product), numeric_product, rtol=1e-8)

    f = lambda p: {"a": np.sin(p["a"]) * p["b"], "b": p["b"] ** 2}
    _, back = ng.vjp(f, x)
    u, v = np.array([0.5, -1.5]), 2.0
    (in_order_ct,), (swapped_ct,) = back({"a": u, "b": v}), back({"b": v, "a": u})
    np.testing.assert_array_equal(_flat(swapped_ct), _flat(in_order_ct))
    weights = np.concatenate([u, [v]])
    np.testing.assert_allclose(_flat(in_order_ct), weights @ _numeric_jacobian(f, "dict", X), rtol=1e-8)
