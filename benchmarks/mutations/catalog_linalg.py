"""Wrong rules of matrix ops, of ``custom_vjp`` functions, and rules wrong in their second
derivatives only.

nodegrad registers no op of its own through ``custom_vjp`` (``scipy.integrate`` makes one
per call), so the custom entries are the kind users write: a stable softplus and a
product, each a ``custom_vjp`` function whose rule is swapped for a wrong one.

A rule wrong only in its second derivative reads some of its inputs as constants (here:
through :func:`nodegrad.engine.traced.unwrap`, the way a rule that leaves nodegrad --
``np.asarray``, ``float()``, a cached plain value -- does): its value is right, so
``check_grads(..., order=1)`` cannot see it, but differentiating it again misses terms.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import nodegrad as ng
from nodegrad.engine.traced import unwrap

from .core import Mutation, broadcast_flag, joint_rule, joint_without, negate, register_custom, rules, scale, use
from .inputs import args, arrays, matrices, positive, spd_matrices, weights

__all__ = ["CUSTOM", "LINALG", "SECOND_ORDER"]

W3, W33 = weights((3,)), weights((3, 3))
W233 = weights((2, 3, 3))


def _loss(y: Any, w: Any) -> Any:
    return ng.sum(ng.tanh(y) * w)


def _t(x: Any) -> Any:
    return np.swapaxes(x, -1, -2)


def _transposed_result(rule: Any, _k: int) -> Any:
    return lambda g, ans, *a: _t(rule(g, ans, *a))


def _solve_with_a(wanted: tuple[int, ...], g: Any, ans: Any, a: Any, b: Any) -> tuple[Any, ...]:
    """solve's rule with a where a^T belongs (b a vector)."""
    g_b = np.linalg.solve(a, g)
    return tuple(-(g_b[:, None] * ans[None, :]) if k == 0 else g_b for k in wanted)


_linalg = functools.partial(Mutation, family="linalg")
LINALG = (
    _linalg(
        id="matmul-transpose-x",
        op="matmul",
        kind="transpose",
        description="d(x @ y)/dx as g @ y (y^T belongs)",
        patch=rules(use(lambda g, ans, x, y: np.matmul(g, y)), [0]),
        function=lambda a, b: _loss(ng.matmul(a, b) * 0.5, W33),
        inputs=args(arrays((3, 3), bound=1.0), arrays((3, 3), bound=1.0)),
    ),
    _linalg(
        id="matmul-transpose-y",
        op="matmul",
        kind="transpose",
        description="d(x @ y)/dy as x @ g (x^T belongs)",
        patch=rules(use(lambda g, ans, x, y: np.matmul(x, g)), [1]),
        function=lambda a, b: _loss(ng.matmul(ng.sin(a), b), W33),
        inputs=args(arrays((3, 3), bound=1.0), arrays((3, 3), bound=1.0)),
    ),
    _linalg(
        id="matmul-transpose-shape",
        op="matmul",
        kind="transpose",
        description="d(x @ y)/dx as g @ y for non-square y: the rule itself fails",
        patch=rules(use(lambda g, ans, x, y: np.matmul(g, y)), [0]),
        function=lambda a, b: _loss(ng.matmul(a, b), weights((3, 4))),
        inputs=args(arrays((3, 2), bound=1.0), arrays((2, 4), bound=1.0)),
    ),
    _linalg(
        id="matmul-broadcast",
        op="matmul",
        kind="broadcast",
        description="a matrix used against a stack gets one cotangent per matrix of the stack",
        patch=broadcast_flag(False, rules(use(lambda g, ans, x, y: np.matmul(_t(x), g)), [1])),
        function=lambda a, b: _loss(ng.matmul(a, b), W233),
        inputs=args(arrays((2, 3, 3), bound=1.0), arrays((3, 3), bound=1.0)),
    ),
    _linalg(
        id="inv-sign",
        op="inv",
        kind="sign",
        description="d inv(x) without its minus sign",
        patch=rules(negate),
        function=lambda x: _loss(ng.inv(x) * 3.0, W33),
        inputs=args(matrices(3)),
    ),
    _linalg(
        id="inv-transpose",
        op="inv",
        kind="transpose",
        description="d inv(x) as -inv g inv (the transposes forgotten)",
        patch=rules(use(lambda g, ans, x: -np.matmul(np.matmul(ans, g), ans))),
        function=lambda x: _loss(ng.inv(x) * 3.0, W33),
        inputs=args(matrices(3)),
    ),
    _linalg(
        id="solve-transpose",
        op="solve",
        kind="transpose",
        description="solve's cotangent solved with a, not a^T",
        patch=joint_rule(lambda _joint: _solve_with_a),
        function=lambda a, b: _loss(ng.solve(a, b) * 2.0, W3),
        inputs=args(matrices(3), arrays((3,))),
    ),
    _linalg(
        id="solve-dropped",
        op="solve",
        kind="dropped-term",
        description="no cotangent for the matrix of a solve",
        patch=joint_without(0),
        function=lambda a, b: _loss(ng.solve(a, b) * 2.0, W3),
        inputs=args(matrices(3), arrays((3,))),
    ),
    _linalg(
        id="det-transpose",
        op="det",
        kind="transpose",
        description="d det(x) as the cofactor matrix transposed",
        patch=rules(_transposed_result),
        function=lambda x: ng.sin(ng.det(x) / 50.0),
        inputs=args(matrices(3)),
    ),
    _linalg(
        id="logabsdet-transpose",
        op="logabsdet",
        kind="transpose",
        description="d log|det x| as inv(x) (inv(x)^T belongs)",
        patch=rules(_transposed_result),
        function=lambda x: ng.tanh(ng.slogdet(x * 0.5)[1] - 2.0),
        inputs=args(matrices(3)),
    ),
    _linalg(
        id="einsum-transpose",
        op="einsum",
        kind="transpose",
        description="an einsum operand's cotangent transposed",
        patch=rules(_transposed_result, [2]),
        function=lambda a, b: _loss(ng.einsum("ij,jk->ik", a, b), W33),
        inputs=args(arrays((3, 3), bound=1.0), arrays((3, 3), bound=1.0)),
    ),
    _linalg(
        id="cholesky-factor",
        op="cholesky",
        kind="factor",
        description="Cholesky's cotangent symmetrised as s + s^T (the 1/2 forgotten)",
        patch=rules(scale(2.0), [0]),
        function=lambda a: _loss(ng.cholesky(a), W33),
        inputs=args(spd_matrices(3)),
    ),
)


# -- custom_vjp functions ---------------------------------------------------------------------------


@ng.custom_vjp
def softplus(x: Any) -> Any:
    """log(1 + e^x), stable for large |x|."""
    return np.logaddexp(0.0, x)


def _softplus_fwd(x: Any) -> tuple[Any, Any]:
    return np.logaddexp(0.0, x), x


softplus.defvjp(_softplus_fwd, lambda x, g: (g * ng.sigmoid(x),))
SOFTPLUS = register_custom(softplus)


@ng.custom_vjp
def weighted(x: Any, w: Any) -> Any:
    """x * w, elementwise."""
    return x * w


weighted.defvjp(lambda x, w: (x * w, (x, w)), lambda res, g: (g * res[1], g * res[0]))
WEIGHTED = register_custom(weighted)


def _custom_rule(fun: Any, fwd: Any, bwd: Any) -> Any:
    """A patch giving the custom_vjp function of ``fun`` the rule ``bwd`` (its residuals
    made by ``fwd``, the same as the function's own)."""
    other = ng.custom_vjp(fun)
    other.defvjp(fwd, bwd)
    return joint_rule(lambda _joint: other._op.joint)


_custom = functools.partial(Mutation, family="custom")
CUSTOM = (
    _custom(
        id="custom-softplus-sign",
        op=SOFTPLUS,
        kind="sign",
        description="a custom softplus whose rule is -g sigmoid(x)",
        patch=_custom_rule(softplus.fun, _softplus_fwd, lambda x, g: (-g * ng.sigmoid(x),)),
        function=lambda x: _loss(softplus(x * 1.5) - 0.7, W3),
        inputs=args(arrays((3,))),
    ),
    _custom(
        id="custom-weighted-dropped",
        op=WEIGHTED,
        kind="dropped-term",
        description="a custom product whose rule gives the second factor no cotangent",
        patch=_custom_rule(weighted.fun, lambda x, w: (x * w, (x, w)), lambda res, g: (g * res[1], g * 0.0)),
        function=lambda x, w: _loss(weighted(ng.sin(x), w), W3),
        inputs=args(arrays((3,)), arrays((3,))),
    ),
    _custom(
        id="custom-softplus-second",
        op=SOFTPLUS,
        kind="second-order",
        description="a custom softplus whose rule reads its residual as a constant",
        patch=_custom_rule(softplus.fun, _softplus_fwd, lambda x, g: (g * ng.sigmoid(unwrap(x)),)),
        function=lambda x: _loss(softplus(x * 1.5) - 0.7, W3),
        inputs=args(arrays((3,))),
        order=2,
    ),
)


# -- wrong second derivatives only --------------------------------------------------------------------


def _stale(positions: tuple[int, ...] | None = None, ans: bool = True) -> Any:
    """A rule transform: the rule reading its ``ans`` (when ``ans``) and the arguments at
    ``positions`` (every one when ``None``) as plain numbers."""

    def transform(rule: Any, _k: int) -> Any:
        def stale_rule(g: Any, out: Any, *a: Any) -> Any:
            read = [unwrap(v) if positions is None or j in positions else v for j, v in enumerate(a)]
            return rule(g, unwrap(out) if ans else out, *read)

        return stale_rule

    return transform


def _det_traced_without_det(rule: Any, _k: int) -> Any:
    def det_rule(g: Any, ans: Any, x: Any) -> Any:
        if type(x) is np.ndarray:
            return rule(g, ans, x)  # the first-order path, as it is
        return g[..., None, None] * _t(np.linalg.inv(x))  # differentiated again: det(x) forgotten

    return det_rule


def _second(op: str, family: str, description: str, patch: Any, function: Any, inputs: Any) -> Mutation:
    return Mutation(
        id=f"{op}-second",
        op=op,
        kind="second-order",
        family=family,
        description=description,
        patch=patch,
        function=function,
        inputs=inputs,
        order=2,
    )


SECOND_ORDER = (
    _second(
        "tanh",
        "elementwise",
        "1 - tanh^2 from a stale tanh",
        rules(_stale()),
        lambda x: _loss(ng.tanh(x * 1.3), W3),
        args(arrays((3,))),
    ),
    _second(
        "sigmoid",
        "elementwise",
        "s (1 - s) from a stale s",
        rules(_stale()),
        lambda x: _loss(ng.sigmoid(x) * 2.0, W3),
        args(arrays((3,))),
    ),
    _second(
        "exp",
        "elementwise",
        "g exp(x) from a stale exp(x)",
        rules(_stale()),
        lambda x: _loss(ng.exp(x * 0.5) * 0.5, W3),
        args(arrays((3,))),
    ),
    _second(
        "log",
        "elementwise",
        "g / x with x read as a constant",
        rules(_stale()),
        lambda x: _loss(ng.log(x), W3),
        args(positive((3,))),
    ),
    _second(
        "power",
        "elementwise",
        "y x^(y-1) with x read as a constant",
        rules(_stale(), [0]),
        lambda x: _loss(ng.power(x, 3.0) * 0.2, W3),
        args(arrays((3,))),
    ),
    _second(
        "sin",
        "elementwise",
        "g cos(x) with x read as a constant",
        rules(_stale()),
        lambda x: _loss(ng.sin(x * 1.2), W3),
        args(arrays((3,))),
    ),
    _second(
        "sqrt",
        "elementwise",
        "g / (2 sqrt x) from a stale sqrt",
        rules(_stale()),
        lambda x: _loss(ng.sqrt(x), W3),
        args(positive((3,))),
    ),
    _second(
        "divide",
        "elementwise",
        "d(x / y)/dx = g / y with y read as a constant",
        rules(_stale((1,)), [0]),
        lambda x, y: _loss(ng.divide(x, y), W3),
        args(arrays((3,)), positive((3,))),
    ),
    _second(
        "softmax",
        "nn",
        "softmax's rule from a stale softmax",
        rules(_stale(), [0]),
        lambda x: _loss(ng.softmax(x * 2.0), W3),
        args(arrays((3,))),
    ),
    _second(
        "log_softmax",
        "nn",
        "log_softmax's rule from a stale log_softmax",
        rules(_stale(), [0]),
        lambda x: _loss(ng.log_softmax(x), W3),
        args(arrays((3,))),
    ),
    _second(
        "matmul",
        "linalg",
        "d(x @ y)/dx = g @ y^T with y read as a constant",
        rules(_stale((1,)), [0]),
        lambda a, b: _loss(ng.matmul(a, b) * 0.5, W33),
        args(arrays((3, 3), bound=1.0), arrays((3, 3), bound=1.0)),
    ),
    _second(
        "det",
        "linalg",
        "differentiated again, d det(x) written inv(x)^T without det(x)",
        rules(_det_traced_without_det),
        lambda x: ng.sin(ng.det(x) / 50.0),
        args(matrices(3)),
    ),
    _second(
        "layer_norm",
        "norm",
        "layer norm's rule with x read as a constant",
        rules(_stale(), [0]),
        lambda x: _loss(ng.layer_norm(x), weights((2, 4))),
        args(arrays((2, 4), kink_free=True)),
    ),
    _second(
        "logsumexp",
        "reduce",
        "exp(x - logsumexp) with x and the result read as constants",
        rules(_stale(), [0]),
        lambda x: ng.tanh(ng.logsumexp(x) - 1.0),
        args(arrays((4,))),
    ),
)
