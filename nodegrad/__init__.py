"""nodegrad: reverse-mode automatic differentiation over a flat arena of op nodes.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> ng.grad(lambda w: ng.sum(ng.tanh(w) ** 2.0))(np.zeros(3))
array([0., 0., 0.])
"""

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from nodegrad import display, errors, ops, optim, parallel, tree
from nodegrad import numpy_api as numpy_api  # np.exp(x) and np.sum(x) of traced values
from nodegrad.custom import checkpoint, custom_vjp, stop_gradient
from nodegrad.debug import debug_nans
from nodegrad.engine.arena import Arena, Node
from nodegrad.engine.backward import GradOptions
from nodegrad.engine.containers import STATIC, dataclass_field, field, is_differentiable_leaf, register_container
from nodegrad.engine.rows import RowSparse
from nodegrad.engine.traced import Traced
from nodegrad.implicit import custom_fixed_point, custom_root
from nodegrad.ops import *  # noqa: F403
from nodegrad.ops.structured import replace
from nodegrad.ops.tables import Frame, Series
from nodegrad.transforms import (
    ShapeDtype,
    elementwise_grad,
    eval_shape,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linearize,
    replay,
    value_and_grad,
    vjp,
    vmap,
)

if TYPE_CHECKING:  # loaded on first use (see __getattr__); declared for type checkers
    from nodegrad import data as data
    from nodegrad import numpy as numpy
    from nodegrad import scipy as scipy
    from nodegrad import testing as testing

__version__ = "0.1.0"

__all__ = [
    "STATIC",
    "Arena",
    "Frame",
    "GradOptions",
    "Node",
    "RowSparse",
    "Series",
    "ShapeDtype",
    "Traced",
    "checkpoint",
    "custom_fixed_point",
    "custom_root",
    "custom_vjp",
    "dataclass_field",
    "debug_nans",
    "display",
    "elementwise_grad",
    "errors",
    "eval_shape",
    "field",
    "grad",
    "hessian",
    "hvp",
    "is_differentiable_leaf",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "linearize",
    "optim",
    "parallel",
    "register_container",
    "replace",
    "replay",
    "stop_gradient",
    "tree",
    "value_and_grad",
    "vjp",
    "vmap",
]
__all__ += ops.__all__

#: Subpackages loaded on first use as attributes (``ng.testing.check_grads``), as numpy and
#: JAX do: ``import nodegrad`` stays free of scipy (``ng.scipy``) and of what the testing
#: kit and the datasets load. Not in ``__all__``, so ``from nodegrad import *`` loads none.
_ON_FIRST_USE = ("data", "numpy", "scipy", "testing")


def __getattr__(name: str) -> ModuleType:
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"nodegrad.{name}")  # the import binds it here too
    msg = f"module 'nodegrad' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})
