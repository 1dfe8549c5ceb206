"""Elementwise arithmetic: + - * / and powers, negation, absolute value, remainders.

Binary ops broadcast as numpy does; their rules return broadcast-shaped cotangents and
the sweep reduces them to each input's shape. This is the bottom room of the elementwise
family: :func:`unary` and :func:`binary` register the family's ops here and in the rooms
above it (transcendental functions, activations, selection).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.record import record1, record2
from nodegrad.engine.registry import Op, defop
from nodegrad.errors import DtypeError, user_location
from nodegrad.ops.batching import elementwise

__all__ = [
    "abs",
    "add",
    "divide",
    "fmod",
    "multiply",
    "negative",
    "positive",
    "power",
    "reciprocal",
    "remainder",
    "square",
    "subtract",
]

FAMILY = "elementwise"


def is_complex(x: Any) -> bool:
    """Whether ``x`` (an array, a number or a traced value) holds complex numbers."""
    dtype = getattr(x, "dtype", None)
    return dtype.kind == "c" if dtype is not None else isinstance(x, complex)


def refusing_complex(name: str, forward: Any, why: str) -> Any:
    """``forward``, refusing complex operands with an error naming ``name`` and saying
    ``why`` (numpy's and scipy's own say only that no loop fits the types)."""

    def real_forward(*args: Any) -> Any:
        if any(np.iscomplexobj(a) for a in args):  # a list holding complex numbers too
            msg = f"{name}: complex values are not supported: {why} [called at {user_location()}]"
            raise DtypeError(msg)
        return forward(*args)

    return real_forward


def real_numbers_only(name: str, forward: Any) -> Any:
    """``forward``, refusing complex operands as numpy's function of the same name does
    (``name`` is how the error names it: ``cbrt`` for the op, ``np.fabs`` for numpy's)."""
    why = f"{name} is defined for real numbers only, as numpy's is (take np.real, np.imag or np.abs first)"
    return refusing_complex(name, forward, why)


def unary(name: str, forward: Any, rule: Any, doc: str, *, real_only: bool = False) -> Op:
    """Register an elementwise op of one input (``real_only``: refusing complex values)."""
    fwd = real_numbers_only(name, forward) if real_only else forward
    return defop(name, fwd, rule, family=FAMILY, doc=doc, batch=elementwise)


def binary(name: str, forward: Any, rule_x: Any, rule_y: Any, doc: str, *, real_only: bool = False) -> Op:
    """Register an elementwise op of two inputs that broadcast against each other."""
    fwd = real_numbers_only(name, forward) if real_only else forward
    return defop(name, fwd, rule_x, rule_y, family=FAMILY, broadcasts=True, doc=doc, batch=elementwise)


ADD = binary("add", np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, "x + y")


SUBTRACT = binary("subtract", np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, "x - y")


MULTIPLY = binary(
    "multiply", np.multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, "x * y (also x * scalar)"
)


DIVIDE = binary("divide", np.divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * ans / y, "x / y")


NEGATIVE = unary("negative", np.negative, lambda g, ans, x: -g, "-x")


POSITIVE = unary("positive", np.positive, lambda g, ans, x: g, "+x: a new node holding the same value")


def _power_rule_base(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # y * x**(y-1), written so that x == 0 with y >= 1 gives a finite value.
    if type(y) in (int, float):  # a constant exponent: the common case, no array checks
        if y == 2:
            return g * (x + x)  # squares are the commonest: one pass fewer
        return g * 0.0 if y == 0 else g * y * np.power(x, y - 1)
    zero = (y == 0) & (x == 0)  # y * x ** (y - 1) would be 0 * inf = NaN there
    if np.any(all_values(zero)):  # under vmap: in any example
        # A base of 1 there gives the value 0 and keeps y in the product, so the rule's own
        # derivative in y at y == 0 is x ** -1 elsewhere (a constant 0 would drop it).
        return g * y * np.power(np.where(zero, 1.0, x), y - 1)
    return g * y * np.power(x, y - 1)


def _power_rule_exponent(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # d/dy x**y = x**y * log(x); defined as 0 where x == 0 (the limit for y > 0), and the
    # log of a negative base is not real, so those entries get 0 as well. A complex base
    # has a logarithm everywhere but at 0.
    safe = np.where(x != 0, x, 1) if np.iscomplexobj(x) else np.where(x > 0, x, 1)
    return g * ans * np.log(safe)


def _abs_rule(g: Any, ans: Any, x: Any) -> Any:
    if not np.iscomplexobj(x):
        return g * plain_map(np.sign, x)  # piecewise constant
    # d|z| = Re(conj(z) dz) / |z|: the transpose is g conj(z) / |z| = g conj(sign(z)), 0 at
    # z == 0. numpy's complex sign scales before it divides: z / |z| overflows for a
    # subnormal z.
    return g * np.conjugate(np.sign(x))


def _power(x: Any, y: Any) -> Any:
    """``np.power``; a float array squared by ``np.square``, the same numbers at half the
    cost (``x ** 2`` is the commonest power: squared errors, variances)."""
    if type(y) is int and y == 2 and type(x) is np.ndarray and x.dtype.kind == "f":
        return np.square(x)
    return np.power(x, y)


POWER = binary("power", _power, _power_rule_base, _power_rule_exponent, "x ** y")


ABS = unary("abs", np.abs, _abs_rule, "absolute value (gradient 0 at 0; of a complex z: g conj(z) / |z|)")


SQUARE = unary("square", np.square, lambda g, ans, x: g * (x + x), "x * x")


RECIPROCAL = unary("reciprocal", np.reciprocal, lambda g, ans, x: -g * ans * ans, "1 / x")


REMAINDER = binary(
    "remainder",
    np.remainder,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.floor_divide(x, y),
    "x mod y with the sign of y (np.remainder; real values only)",
    real_only=True,
)


FMOD = binary(
    "fmod",
    np.fmod,
    lambda g, ans, x, y: g,
    lambda g, ans, x, y: -g * np.trunc(np.divide(x, y)),
    "x mod y with the sign of x (np.fmod; real values only)",
    real_only=True,
)


def add(x: Any, y: Any) -> Any:
    """Elementwise ``x + y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.add(x, 2.0) * x)(3.0)
    8.0
    """
    return record2(ADD, x, y)


def subtract(x: Any, y: Any) -> Any:
    """Elementwise ``x - y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.subtract(1.0, x))(3.0)
    -1.0
    """
    return record2(SUBTRACT, x, y)


def multiply(x: Any, y: Any) -> Any:
    """Elementwise ``x * y`` with numpy broadcasting; a scalar factor records no extra node.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.multiply(x, x))(3.0)
    6.0
    """
    return record2(MULTIPLY, x, y)


def divide(x: Any, y: Any) -> Any:
    """Elementwise ``x / y`` with numpy broadcasting.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda y: ng.divide(1.0, y))(2.0)
    -0.25
    """
    return record2(DIVIDE, x, y)


def negative(x: Any) -> Any:
    """Elementwise ``-x``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.negative)(3.0)
    -1.0
    """
    return record1(NEGATIVE, x)


def power(x: Any, y: Any) -> Any:
    """Elementwise ``x ** y``, differentiable in both; ``d/dy`` is 0 where ``x <= 0``.

    At ``x == 0`` that 0 is the limit for ``y > 0``. At ``x < 0``, ``d/dy = x**y log(x)``
    is not real, and JAX and PyTorch give NaN. nodegrad gives 0 on purpose: the entries of
    a branch that a ``where`` discards still get their rules run with a zero cotangent, and
    ``0 * NaN`` would turn the whole gradient into NaN; a value that does reach the output
    is NaN already (``x ** y`` of a negative base and a non-integer exponent).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x: ng.power(x, 3.0))(2.0)
    12.0
    """
    return record2(POWER, x, y)


def abs(x: Any) -> Any:  # noqa: A001  (numpy's name)
    """Elementwise absolute value; the gradient at 0 is 0.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.abs)(-2.0)
    -1.0
    """
    return record1(ABS, x)


def square(x: Any) -> Any:
    """Elementwise x * x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.square)(3.0)
    6.0
    """
    return record1(SQUARE, x)


def reciprocal(x: Any) -> Any:
    """Elementwise 1 / x.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.reciprocal)(2.0)
    -0.25
    """
    return record1(RECIPROCAL, x)


def remainder(x: Any, y: Any) -> Any:
    """``x mod y`` with the sign of ``y`` (``np.remainder``); ``d/dy = -floor(x / y)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.remainder, argnums=(0, 1))(7.0, 2.0)
    (1.0, -3.0)
    """
    return record2(REMAINDER, x, y)


def fmod(x: Any, y: Any) -> Any:
    """``x mod y`` with the sign of ``x`` (``np.fmod``); ``d/dy = -trunc(x / y)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.fmod, argnums=(0, 1))(-7.0, 2.0)
    (1.0, 3.0)
    """
    return record2(FMOD, x, y)


def positive(x: Any) -> Any:
    """``+x``: the same values in a new node (as ``np.positive``).

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.positive)(2.0)
    1.0
    """
    return record1(POSITIVE, x)
