"""Wrong rules of elementwise ops: real ones, and complex ones with a conjugate too many or too few.

Each entry's function is a small composite around the op, its output summed against fixed
weights so that every entry of the op's output reaches the loss with its own weight.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import nodegrad as ng
from nodegrad.ops.elementwise.parts import _angle_rule

from .core import Mutation, broadcast_flag, negate, rules, use
from .inputs import args, arrays, complex_arrays, positive, tied, weights

__all__ = ["COMPLEX", "ELEMENTWISE"]

_elementwise = functools.partial(Mutation, family="elementwise")
_complex = functools.partial(Mutation, family="complex", kind="conjugate")

W3, W34, W44 = weights((3,)), weights((3, 4)), weights((4, 4))
C3 = weights((3,)) + 1j * weights((3,), offset=-0.8)  # complex weights: both parts reach the loss
C33 = weights((3, 3)) + 1j * weights((3, 3), offset=0.5)


def _loss(y: Any, w: Any = W3) -> Any:
    return ng.sum(ng.tanh(y) * w)


def _complex_loss(z: Any, w: Any = C3) -> Any:
    """A real loss of a complex value, through both its parts."""
    u = z * w
    return ng.sum(ng.real(u)) + ng.sum(ng.imag(u * u)) * 0.5


def _zero_like(rule: Any, _k: int) -> Any:
    return lambda g, ans, *a: rule(g, ans, *a) * 0.0


ELEMENTWISE = (
    _elementwise(
        id="subtract-sign",
        op="subtract",
        kind="sign",
        description="d(x - y)/dy = +1",
        patch=rules(negate, [1]),
        function=lambda x, y: _loss(ng.subtract(x, y) * 0.7),
        inputs=args(arrays((3,)), arrays((3,))),
    ),
    _elementwise(
        id="cos-sign",
        op="cos",
        kind="sign",
        description="d cos x = +sin x",
        patch=rules(negate),
        function=lambda x: _loss(ng.cos(x * 1.5) * ng.sin(x)),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="arccos-sign",
        op="arccos",
        kind="sign",
        description="d arccos x = +1 / sqrt(1 - x^2)",
        patch=rules(negate),
        function=lambda x: _loss(ng.arccos(x) * x),
        inputs=args(arrays((3,), bound=0.8)),
    ),
    _elementwise(
        id="arctan2-sign",
        op="arctan2",
        kind="sign",
        description="d arctan2(y, x)/dx with the sign of dy",
        patch=rules(negate, [1]),
        function=lambda y, x: _loss(ng.arctan2(y, x) * 2.0),
        inputs=args(arrays((3,)), positive((3,))),
    ),
    _elementwise(
        id="divide-sign",
        op="divide",
        kind="sign",
        description="d(x / y)/dx = -1 / y",
        patch=rules(negate, [0]),
        function=lambda x, y: _loss(ng.divide(ng.sin(x), y)),
        inputs=args(arrays((3,)), positive((3,))),
    ),
    _elementwise(
        id="square-factor",
        op="square",
        kind="factor",
        description="d x^2 = x (the 2 forgotten)",
        patch=rules(use(lambda g, ans, x: g * x)),
        function=lambda x: _loss(ng.sin(ng.square(x))),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="sqrt-factor",
        op="sqrt",
        kind="factor",
        description="d sqrt x = 1 / sqrt x (the 1/2 forgotten)",
        patch=rules(use(lambda g, ans, x: g / ans)),
        function=lambda x: _loss(ng.sqrt(x) * x),
        inputs=args(positive((3,))),
    ),
    _elementwise(
        id="exp2-factor",
        op="exp2",
        kind="factor",
        description="d 2^x = 2^x (the log 2 forgotten)",
        patch=rules(use(lambda g, ans, x: g * ans)),
        function=lambda x: _loss(ng.exp2(x) * 0.3),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="log10-factor",
        op="log10",
        kind="factor",
        description="d log10 x = 1 / x (the 1 / log 10 forgotten)",
        patch=rules(use(lambda g, ans, x: g / x)),
        function=lambda x: _loss(ng.log10(x) + x),
        inputs=args(positive((3,))),
    ),
    _elementwise(
        id="power-factor",
        op="power",
        kind="factor",
        description="d x^y = (y - 1) x^(y-1) (exponent off by one)",
        patch=rules(use(lambda g, ans, x, y: g * (y - 1) * np.power(x, y - 1)), [0]),
        function=lambda x: _loss(ng.power(x, 3.0) * 0.2),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="hypot-factor",
        op="hypot",
        kind="factor",
        description="d hypot(x, y)/dx = 2x / hypot (the chain rule's 1/2 forgotten)",
        patch=rules(use(lambda g, ans, x, y: g * 2 * x / ans), [0]),
        function=lambda x, y: _loss(ng.hypot(x, y) - y),
        inputs=args(arrays((3,)), positive((3,))),
    ),
    _elementwise(
        id="multiply-dropped",
        op="multiply",
        kind="dropped-term",
        description="product rule without the second factor's term",
        patch=rules(_zero_like, [1]),
        function=lambda x: _loss(ng.multiply(x, ng.tanh(x))),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="divide-dropped",
        op="divide",
        kind="dropped-term",
        description="quotient rule without the denominator's term",
        patch=rules(_zero_like, [1]),
        function=lambda x: _loss(ng.divide(ng.sin(x), ng.cosh(x))),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="silu-dropped",
        op="silu",
        kind="dropped-term",
        description="d x s(x) = s(x) (the x s'(x) term dropped)",
        patch=rules(use(lambda g, ans, x: g * ng.sigmoid(x))),
        function=lambda x: _loss(ng.silu(x) * 0.8),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="gelu-dropped",
        op="gelu",
        kind="dropped-term",
        description="d x Phi(x) = Phi(x) (the x phi(x) term dropped)",
        patch=rules(use(lambda g, ans, x, approximate: g * 0.5 * (1 + ng.scipy.special.erf(x / np.sqrt(2.0)))), [0]),
        function=lambda x: _loss(ng.gelu(x) * 0.8),
        inputs=args(arrays((3,))),
    ),
    _elementwise(
        id="maximum-tie",
        op="maximum",
        kind="tie",
        description="at a tie each input gets the whole gradient (not split)",
        patch=rules(
            lambda _rule, k: (lambda g, ans, x, y: g * (x == ans)) if k == 0 else (lambda g, ans, x, y: g * (y == ans))
        ),
        function=lambda x, y: _loss(ng.maximum(x, y * 1.0) * 0.9),
        inputs=tied(arrays((3,))),
    ),
    _elementwise(
        id="minimum-tie",
        op="minimum",
        kind="tie",
        description="at a tie the first input gets the whole gradient",
        patch=rules(
            lambda _rule, k: (lambda g, ans, x, y: g * (x <= y)) if k == 0 else (lambda g, ans, x, y: g * (y < x))
        ),
        function=lambda x, y: _loss(ng.minimum(x, y) * ng.cos(y)),
        inputs=tied(arrays((3,))),
    ),
    _elementwise(
        id="add-broadcast",
        op="add",
        kind="broadcast",
        description="a broadcast operand's cotangent not reduced to its shape",
        patch=broadcast_flag(False),
        function=lambda x, b: _loss(ng.add(x, b), W34),
        inputs=args(arrays((3, 4)), arrays((4,))),
    ),
    _elementwise(
        id="add-axis",
        op="add",
        kind="broadcast",
        description="a broadcast operand's cotangent summed over the wrong axis",
        patch=rules(use(lambda g, ans, x, y: ng.sum(g, axis=-1) if np.ndim(y) < np.ndim(g) else g), [1]),
        function=lambda x, b: _loss(ng.add(x, b), W44),
        inputs=args(arrays((4, 4)), arrays((4,))),
    ),
    _elementwise(
        id="multiply-broadcast",
        op="multiply",
        kind="broadcast",
        description="a broadcast operand's cotangent not reduced, reaching another op",
        patch=broadcast_flag(False),
        function=lambda x, s: _loss(ng.multiply(x, ng.exp(s)), W34),
        inputs=args(arrays((3, 4)), arrays((3, 1), bound=1.0)),
    ),
)


COMPLEX = (
    _complex(
        id="abs-conj",
        op="abs",
        description="d|z| transposed without the conjugate: g sign(z)",
        patch=rules(use(lambda g, ans, x: g * np.sign(x))),
        function=lambda z: ng.sum(ng.tanh(ng.abs(z * C3)) * W3),
        inputs=args(complex_arrays((3,))),
    ),
    _complex(
        id="multiply-conj",
        op="multiply",
        description="a conjugate too many (the other convention): g conj(y)",
        patch=rules(use(lambda g, ans, x, y: g * np.conjugate(y)), [0]),
        function=lambda z, u: _complex_loss(ng.multiply(z, u)),
        inputs=args(complex_arrays((3,), 0.0), complex_arrays((3,), 0.0)),
    ),
    _complex(
        id="exp-conj",
        op="exp",
        description="a conjugate too many: g conj(exp z)",
        patch=rules(use(lambda g, ans, x: g * np.conjugate(ans))),
        function=lambda z: _complex_loss(ng.exp(z * 0.5)),
        inputs=args(complex_arrays((3,), 0.0)),
    ),
    _complex(
        id="matmul-conj",
        op="matmul",
        description="the conjugate transpose where the transpose belongs: g conj(y)^T",
        patch=rules(use(lambda g, ans, x, y: np.matmul(g, np.conjugate(np.swapaxes(y, -1, -2)))), [0]),
        function=lambda a, b: _complex_loss(ng.matmul(a, b), C33),
        inputs=args(complex_arrays((3, 3), 0.0), complex_arrays((3, 3), 0.0)),
    ),
    _complex(
        id="conj-conj",
        op="conj",
        description="the conjugate's own rule without its conjugate: g",
        patch=rules(use(lambda g, ans, z: g)),
        function=lambda z: _complex_loss(ng.conj(z) * z),
        inputs=args(complex_arrays((3,), 0.0)),
    ),
    _complex(
        id="imag-conj",
        op="imag",
        description="Im transposed as +1j g (the conjugate of -1j)",
        patch=rules(negate),
        function=lambda z: ng.sum(ng.tanh(ng.imag(z * C3)) * W3),
        inputs=args(complex_arrays((3,), 0.0)),
    ),
    _complex(
        id="angle-conj",
        op="angle",
        description="d angle transposed with a conjugate too many: conj(-1j g / z)",
        patch=rules(use(lambda g, ans, z, deg: np.conjugate(_angle_rule(g, ans, z, deg))), [0]),
        function=lambda z: ng.sum(ng.sin(ng.angle(z) * 1.3) * W3),
        # kept to the right half-plane: the angle jumps on the negative real axis
        inputs=args(complex_arrays((3,)).map(lambda z: np.abs(z.real) + 0.3 + 1j * z.imag)),
    ),
)
