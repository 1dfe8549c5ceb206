"""nodegrad: reverse-mode automatic differentiation over a flat arena of op nodes.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> ng.grad(lambda w: ng.sum(ng.tanh(w) ** 2.0))(np.zeros(3))
array([0., 0., 0.])
"""

from nodegrad import errors, optim, tree
from nodegrad.arena import Arena, Node, Traced
from nodegrad.ops import (
    abs,
    add,
    batch_norm,
    cat,
    clamp,
    cos,
    cross_entropy,
    divide,
    exp,
    gather,
    gelu,
    layer_norm,
    log,
    log2,
    log_softmax,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    power,
    relu,
    reshape,
    sigmoid,
    silu,
    sin,
    softmax,
    sqrt,
    stack,
    subtract,
    sum,
    tanh,
    transpose,
    where,
)
from nodegrad.ops.structured import replace
from nodegrad.structure import dataclass_field, field, register_container
from nodegrad.sweep import GradOptions
from nodegrad.transforms import grad, value_and_grad, vjp

__version__ = "0.1.0"

__all__ = [
    "Arena",
    "GradOptions",
    "Node",
    "Traced",
    "abs",
    "add",
    "batch_norm",
    "cat",
    "clamp",
    "cos",
    "cross_entropy",
    "dataclass_field",
    "divide",
    "errors",
    "exp",
    "field",
    "gather",
    "gelu",
    "grad",
    "layer_norm",
    "log",
    "log2",
    "log_softmax",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "optim",
    "power",
    "register_container",
    "relu",
    "replace",
    "reshape",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "sqrt",
    "stack",
    "subtract",
    "sum",
    "tanh",
    "transpose",
    "tree",
    "value_and_grad",
    "vjp",
    "where",
]
