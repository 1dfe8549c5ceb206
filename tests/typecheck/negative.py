"""Calls a type checker must refuse: mypy reports each line marked ``# error``
(tests/test_typing.py checks the lines). Never run."""

from __future__ import annotations

import attrs
import numpy as np

import nodegrad as ng


def loss(w: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum(w * x))


ng.grad(loss)(np.ones(2))  # error: an argument missing
ng.grad(loss)(np.ones(2), "x")  # error: a str for an array
ng.value_and_grad(loss, has_aux=False)(np.ones(2), x=1)  # error: an int for an array
ng.vjp(loss, np.ones(2), "x")  # error: a str for an array
ng.jacobian(loss)(np.ones(2), np.ones(2), np.ones(2))  # error: one argument too many
ng.elementwise_grad(loss)(np.ones(2), y=np.ones(2))  # error: no parameter y


@attrs.frozen
class Model:
    scale: float = ng.field(static=True, default="one")  # error: a default of the wrong type
    w: float = attrs.field(metadata=ng.STATIC)  # error: mandatory after a default
