"""numpy's dispatch protocols onto the op registry.

``np.exp(traced)`` reaches :func:`dispatch_ufunc` through ``__array_ufunc__`` and
``np.sum(traced)`` reaches :func:`dispatch_function` through ``__array_function__``.
A ufunc or function without an entry raises :class:`NoGradientError` naming it: a
silent conversion to a plain array would drop the gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.arena import composite, unwrap
from nodegrad.errors import NoGradientError, user_location

__all__ = ["FUNCTIONS", "UFUNCS", "dispatch_function", "dispatch_ufunc"]

UFUNCS: dict[np.ufunc, Callable[..., Any]] = {
    np.add: ops.add,
    np.subtract: ops.subtract,
    np.multiply: ops.multiply,
    np.divide: ops.divide,
    np.true_divide: ops.divide,
    np.negative: ops.negative,
    np.positive: lambda x: x,
    np.power: ops.power,
    np.exp: ops.exp,
    np.log: ops.log,
    np.log2: ops.log2,
    np.sqrt: ops.sqrt,
    np.sin: ops.sin,
    np.cos: ops.cos,
    np.tanh: ops.tanh,
    np.absolute: ops.abs,
    np.maximum: ops.maximum,
    np.minimum: ops.minimum,
    np.matmul: ops.matmul,
}

# Ufuncs whose results are masks or integers: computed on values, never differentiated.
_NON_DIFFERENTIABLE = {
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.isfinite, np.isnan, np.isinf, np.sign, np.floor, np.ceil, np.rint, np.trunc,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.signbit,
}  # fmt: skip


def _shape_of(x: Any) -> Any:
    return np.shape(unwrap(x))


@composite
def _take(a: Any, indices: Any, axis: Any = None) -> Any:
    # np.take without an axis indexes the flattened array.
    if axis is None:
        return ops.gather(ops.reshape(a, (-1,)), indices, 0)
    return ops.gather(a, indices, axis)


FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: ops.sum,
    np.mean: ops.mean,
    np.max: ops.max,
    np.amax: ops.max,
    np.min: ops.min,
    np.amin: ops.min,
    np.reshape: ops.reshape,
    np.transpose: ops.transpose,
    np.concatenate: ops.cat,
    np.stack: ops.stack,
    np.take: _take,
    np.where: ops.where,
    np.matmul: ops.matmul,
    np.clip: ops.clamp,
    np.shape: _shape_of,
    np.ndim: lambda x: np.ndim(unwrap(x)),
    np.size: lambda x, axis=None: np.size(unwrap(x), axis),
}


def dispatch_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``ufunc`` on inputs of which at least one is traced."""
    if method == "__call__" and not kwargs:
        if ufunc in _NON_DIFFERENTIABLE:
            return ufunc(*(unwrap(a) for a in inputs))
        op = UFUNCS.get(ufunc)
        if op is not None:
            return op(*inputs)
    what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    extra = f" with keyword arguments {sorted(kwargs)}" if kwargs else ""
    msg = f"{what}{extra} has no gradient rule for traced values [called at {user_location()}]"
    raise NoGradientError(msg)


def dispatch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the numpy function ``func`` on arguments of which at least one is traced."""
    impl = FUNCTIONS.get(func)
    if impl is None:
        msg = f"np.{func.__name__} has no gradient rule for traced values [called at {user_location()}]"
        raise NoGradientError(msg)
    return impl(*args, **kwargs)
