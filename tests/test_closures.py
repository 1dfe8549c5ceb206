"""Every transform, nested in every other, on a function that closes over the outer
variable as well as taking it as an argument.

A value can reach a transform two ways: as an argument, or through the closure of the
function the transform is given. For each pair (outer, inner), ``F(x)`` applies the inner
transform to a function of ``y`` that also reads ``x`` from its closure, at ``y = 0.7 x +
0.1``; the outer transform then differentiates ``F``. Each result is compared with
float64 central differences of ``F`` evaluated on plain values, and must be a plain array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import NoGradientError

X0 = np.array([0.3, -0.5, 1.2])
W = np.array([0.6, -1.1, 0.4])  # a cotangent / weighting of F's output
V = np.array([-0.2, 0.9, 0.5])  # a tangent


def _body(x: Any, y: Any) -> Any:
    """The function the inner transform is given: reads y (its argument) and x (closure)."""
    return np.sin(x * y) * y + x


def _body_vjp(x: Any, y: Any, g: Any) -> Any:
    """d(_body)/dy applied to g, written out (the custom rule)."""
    return g * (np.cos(x * y) * x * y + np.sin(x * y))


def _scalar(x: Any, y: Any) -> Any:
    return np.sum(_body(x, y))


def _custom(x: Any) -> Callable[[Any], Any]:
    # fwd closes over x; bwd reads it from the residuals, as custom_vjp documents (a bwd
    # closing over x itself is first-order only: see the tests at the end).
    @ng.custom_vjp
    def body(y: Any) -> Any:
        return _body(x, y)

    body.defvjp(lambda y: (_body(x, y), (x, y)), lambda res, g: (_body_vjp(res[0], res[1], g),))
    return body


# Each inner transform as a function of x with an array output of shape (3,).
INNER: dict[str, Callable[[Any], Any]] = {
    "grad": lambda x: ng.grad(lambda y: _scalar(x, y))(0.7 * x + 0.1),
    "value_and_grad": lambda x: (lambda vg: vg[0] + vg[1])(ng.value_and_grad(lambda y: _scalar(x, y))(0.7 * x + 0.1)),
    "vjp": lambda x: (lambda ob: ob[0] + ob[1](np.cos(x))[0])(ng.vjp(lambda y: _body(x, y), 0.7 * x + 0.1)),
    "jvp": lambda x: sum(ng.jvp(lambda y: _body(x, y), (0.7 * x + 0.1,), (np.cos(x),))),
    "linearize": lambda x: (lambda of: of[0] + of[1](np.cos(x)))(ng.linearize(lambda y: _body(x, y), 0.7 * x + 0.1)),
    "jacobian": lambda x: ng.jacobian(lambda y: _body(x, y))(0.7 * x + 0.1) @ x,
    "hessian": lambda x: ng.hessian(lambda y: _scalar(x, y))(0.7 * x + 0.1) @ x,
    "hvp": lambda x: ng.hvp(lambda y: _scalar(x, y), 0.7 * x + 0.1, x),
    "checkpoint": lambda x: ng.checkpoint(lambda y: _body(x, y))(0.7 * x + 0.1),
    "custom_vjp": lambda x: _custom(x)(0.7 * x + 0.1),
    "elementwise_grad": lambda x: ng.elementwise_grad(lambda y: _body(x, y))(0.7 * x + 0.1),
}


def _jacobian_fd(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = [(np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def _checked(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f`` on a plain point gives a plain array (no traced value escapes)."""

    def plain(x: np.ndarray) -> np.ndarray:
        out = f(x)
        assert type(out) is np.ndarray, type(out)
        return out

    return plain


def _outer(name: str, f: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(what the outer transform gives, the same by central differences)."""
    s = lambda x: np.sum(f(x) * W)  # a scalar of x
    jac = _jacobian_fd(_checked(f), X0)
    if name == "grad":
        return ng.grad(s)(X0), jac.T @ W
    if name == "value_and_grad":
        value, g = ng.value_and_grad(s)(X0)
        return np.append(g, value), np.append(jac.T @ W, np.sum(f(X0) * W))
    if name == "vjp":
        out, back = ng.vjp(f, X0)
        return np.append(back(W)[0], out), np.append(jac.T @ W, f(X0))
    if name == "jvp":
        return ng.jvp(f, (X0,), (V,))[1], jac @ V
    if name == "linearize":
        return ng.linearize(f, X0)[1](V), jac @ V
    if name == "jacobian":
        return ng.jacobian(f)(X0), jac
    if name == "hessian":
        grad_fd = lambda x: _jacobian_fd(lambda z: np.atleast_1d(np.sum(f(z) * W)), x)[0]
        return ng.hessian(s)(X0), _jacobian_fd(grad_fd, X0, h=1e-4)
    if name == "hvp":
        grad_fd = lambda x: _jacobian_fd(lambda z: np.atleast_1d(np.sum(f(z) * W)), x)[0]
        return ng.hvp(s, X0, V), _jacobian_fd(grad_fd, X0, h=1e-4) @ V
    if name == "checkpoint":
        return ng.grad(lambda x: np.sum(ng.checkpoint(f)(x) * W))(X0), jac.T @ W
    if name == "custom_vjp":
        wrapped = ng.custom_vjp(f)
        wrapped.defvjp(lambda x: (f(x), x), lambda x, g: ng.vjp(f, x)[1](g))
        return ng.grad(lambda x: np.sum(wrapped(x) * W))(X0), jac.T @ W
    assert name == "elementwise_grad"
    return ng.elementwise_grad(f)(X0), jac.T @ np.ones(3)


# The one pair refused, with an error saying what to do: a custom_vjp whose fwd closes over
# the variable, inside a Hessian (the derivative of its gradient needs that value as an
# argument of the custom function).
REFUSED = {("hessian", "custom_vjp")}


@pytest.mark.parametrize("inner", sorted(INNER))
@pytest.mark.parametrize("outer", sorted(INNER))
def test_a_transform_of_a_function_closing_over_the_outer_variable(outer: str, inner: str) -> None:
    if (outer, inner) in REFUSED:
        with pytest.raises(NoGradientError, match=r"closes over a traced value .* pass it to"):
            _outer(outer, INNER[inner])
        return
    got, expected = _outer(outer, INNER[inner])
    assert type(got) is np.ndarray
    second_order = outer in {"hessian", "hvp"}
    np.testing.assert_allclose(got, expected, rtol=1e-5 if second_order else 1e-7, atol=2e-5 if second_order else 1e-8)


@pytest.mark.parametrize("inner", sorted(INNER))
def test_the_inner_transforms_on_plain_values_agree_with_their_written_out_forms(inner: str) -> None:
    # What INNER computes, written with numpy only, so the matrix above checks derivatives
    # of the right function.
    x = X0
    y = 0.7 * x + 0.1
    dy = np.cos(x * y) * x * y + np.sin(x * y)  # d body / dy, elementwise (diagonal Jacobian)
    d2y = 2 * np.cos(x * y) * x - np.sin(x * y) * x * x * y  # d^2 sum(body) / dy^2, diagonal
    body = np.sin(x * y) * y + x
    expected = {
        "grad": dy,
        "value_and_grad": np.sum(body) + dy,
        "vjp": body + dy * np.cos(x),
        "jvp": body + dy * np.cos(x),
        "linearize": body + dy * np.cos(x),
        "jacobian": dy * x,
        "hessian": d2y * x,
        "hvp": d2y * x,
        "checkpoint": body,
        "custom_vjp": body,
        "elementwise_grad": dy,
    }[inner]
    np.testing.assert_allclose(INNER[inner](x), expected, rtol=1e-12)


def test_a_custom_rule_answers_for_the_arguments_and_the_closure_is_differentiated_through() -> None:
    # The rule says the argument's cotangent is 2 g (not the true one): it is used as given,
    # while the closed-over x is differentiated through fwd as written.
    def f(x: Any) -> Any:
        @ng.custom_vjp
        def times_x(y: Any) -> Any:
            return x * y

        times_x.defvjp(lambda y: (x * y, None), lambda _, g: (2.0 * g,))
        return ng.sum(times_x(x))

    np.testing.assert_allclose(ng.grad(f)(X0), 2.0 + X0)  # 2 from the rule, y = x from the closure


def test_checkpoint_of_a_closure_over_a_record_field() -> None:
    p = {"w": X0, "b": 2.0}
    g = ng.grad(lambda p: ng.checkpoint(lambda y: np.sum(p["w"] * y))(np.ones(3) * p["b"]))(p)
    np.testing.assert_allclose(g["w"], [2.0, 2.0, 2.0])
    assert type(g["b"]) is float and g["b"] == pytest.approx(np.sum(X0))


def _bwd_closing_over(x: Any) -> Callable[[Any], Any]:
    @ng.custom_vjp
    def body(y: Any) -> Any:
        return _body(x, y)

    body.defvjp(lambda y: (_body(x, y), y), lambda y, g: (_body_vjp(x, y, g),))
    return body


def test_a_bwd_closing_over_the_outer_variable_is_right_at_first_order_and_refused_beyond() -> None:
    f = lambda x: _bwd_closing_over(x)(0.7 * x + 0.1)
    s = lambda x: np.sum(f(x) * W)
    jac = _jacobian_fd(f, X0)
    np.testing.assert_allclose(ng.grad(s)(X0), jac.T @ W, rtol=1e-7, atol=1e-8)
    _, back = ng.vjp(f, X0)
    np.testing.assert_allclose(back(W)[0], jac.T @ W, rtol=1e-7, atol=1e-8)
    with pytest.raises(NoGradientError, match=r"fwd or bwd closes over a traced value .* from fwd's residuals"):
        ng.jvp(f, (X0,), (V,))
    with pytest.raises(NoGradientError, match=r"fwd or bwd closes over a traced value"):
        ng.hessian(s)(X0)
