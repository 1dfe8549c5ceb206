"""The public transforms, one room each way of differentiating.

- :mod:`~nodegrad.transforms.common` -- arguments, results and how transforms nest;
- :mod:`~nodegrad.transforms.reverse` -- ``value_and_grad``, ``grad``, ``vjp``, ``elementwise_grad``;
- :mod:`~nodegrad.transforms.forward` -- ``jvp``, ``linearize``;
- :mod:`~nodegrad.transforms.matrices` -- ``jacobian`` (``jacrev``, ``jacfwd``), ``hessian``, ``hvp``;
- :mod:`~nodegrad.transforms.batching` -- ``vmap``;
- :mod:`~nodegrad.transforms.replay` -- ``replay`` (and :mod:`~nodegrad.transforms.randomness`,
  the random draws a recording refuses).

Every transform works on values traced by any enclosing transform, to any depth and in
any order: each call differentiates one level, and only with respect to its own inputs.
"""

from nodegrad.transforms.batching import vmap
from nodegrad.transforms.forward import jvp, linearize
from nodegrad.transforms.matrices import hessian, hvp, jacfwd, jacobian, jacrev
from nodegrad.transforms.replay import replay
from nodegrad.transforms.reverse import elementwise_grad, grad, value_and_grad, vjp

__all__ = [
    "elementwise_grad",
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
