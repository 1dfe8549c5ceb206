"""A typed user's script: mypy checks it (tests/test_typing.py) and must find nothing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

if sys.version_info >= (3, 11):
    from typing import assert_type
else:
    from typing_extensions import assert_type

import nodegrad as ng


@attrs.frozen
class Line:
    slope: np.ndarray
    intercept: float
    name: str = ng.field(static=True, default="line")
    tags: list[str] = ng.field(static=True, factory=list)


@attrs.frozen
class Marked:
    # What mypy's attrs plugin sees through: a static field without a default.
    scale: float = attrs.field(metadata=ng.STATIC)


def loss(line: Line, x: np.ndarray) -> Any:
    return ng.sum((line.slope * x + line.intercept) ** 2.0)


def scaled(x: float, *, by: float = 2.0) -> Any:
    return x * by


line = Line(np.array([1.0]), 0.5)
x = np.array([2.0])

dloss = ng.grad(loss)
dloss_callable: Callable[[Line, np.ndarray], Any] = dloss
g = dloss(line, x)
assert_type(g, Any)

value_and_g = ng.value_and_grad(loss)(line, x)
assert_type(value_and_g, tuple[Any, Any])
with_aux = ng.value_and_grad(lambda p: (loss(p, x), 1), has_aux=True)(line)
assert_type(with_aux, tuple[tuple[Any, Any], Any])
(value, aux), g2 = with_aux

dscaled = ng.grad(scaled)
dscaled(1.0, by=3.0)
second: Callable[[float], Any] = ng.grad(ng.grad(scaled))  # nested: the parameters still pass through
second(1.0)
as_callable: Callable[[float], Any] = dscaled

out, back = ng.vjp(scaled, 1.0)
assert_type(back, Callable[[Any], tuple[Any, ...]])
out, back, extra = ng.vjp(lambda a: (a * 2.0, "aux"), 1.0, has_aux=True)

jac = ng.jacobian(loss)(line, x)
hess = ng.hessian(scaled)(1.0)
slopes = ng.elementwise_grad(lambda v: v * v)(np.linspace(0.0, 1.0, 3))
marked = Marked(3.0)
