"""The public transforms, one room each way of differentiating.

- :mod:`~nodegrad.transforms.common` -- arguments, results and how transforms nest;
- :mod:`~nodegrad.transforms.reverse` -- ``value_and_grad``, ``grad``, ``vjp``, ``elementwise_grad``;
- :mod:`~nodegrad.transforms.forward` -- ``jvp``, ``linearize``;
- :mod:`~nodegrad.transforms.matrices` -- ``jacobian`` (``jacrev``, ``jacfwd``), ``hessian``, ``hvp``;
- :mod:`~nodegrad.transforms.batching` -- ``vmap``;
- :mod:`~nodegrad.transforms.replay` -- ``replay`` (and :mod:`~nodegrad.transforms.randomness`,
  the random draws a recording refuses);
- :mod:`~nodegrad.transforms.shape_eval` -- ``eval_shape``, on the interpreter of
  :mod:`~nodegrad.transforms.shapes` (its shape rules in
  :mod:`~nodegrad.transforms.shape_rules` and :mod:`~nodegrad.transforms.shape_rules_numeric`).

Every transform works on values traced by any enclosing transform, to any depth and in
any order: each call differentiates one level, and only with respect to its own inputs.
"""

from nodegrad.transforms.batching import vmap
from nodegrad.transforms.forward import jvp, linearize
from nodegrad.transforms.matrices import hessian, hvp, jacfwd, jacobian, jacrev
from nodegrad.transforms.replay import replay
from nodegrad.transforms.reverse import elementwise_grad, grad, value_and_grad, vjp
from nodegrad.transforms.shape_eval import eval_shape
from nodegrad.transforms.shapes import ShapeDtype

from nodegrad.transforms import shape_rules as shape_rules  # isort: skip  # the rules fill eval_shape's table
from nodegrad.transforms import shape_rules_numeric as shape_rules_numeric  # isort: skip

__all__ = [
    "ShapeDtype",
    "elementwise_grad",
    "eval_shape",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "linearize",
    "replay",
    "value_and_grad",
    "vjp",
    "vmap",
]
