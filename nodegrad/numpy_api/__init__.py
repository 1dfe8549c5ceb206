"""numpy's dispatch protocols onto the op registry.

``np.exp(traced)`` reaches :func:`dispatch_ufunc` through ``__array_ufunc__`` and
``np.sum(traced)`` reaches :func:`dispatch_function` through ``__array_function__``, so
unmodified numpy code records nodes. Three tables say what happens:

- :data:`UFUNCS` and :data:`FUNCTIONS`: differentiable, mapped onto nodegrad ops;
- :data:`VALUE_UFUNCS` and :data:`VALUE_FUNCTIONS`: results with no gradient (masks,
  indices, integers, piecewise-constant values), computed on the forward values;
- anything else raises :class:`NoGradientError` naming the function: a silent
  conversion to a plain array would drop the gradient.

The ufunc table and its dispatch are in :mod:`nodegrad.numpy_api.ufuncs`, the function
table and its dispatch in :mod:`nodegrad.numpy_api.functions`, and the numpy functions
written as compositions of the ops (``np.diff``, ``np.tile``, ``np.convolve``, ...) in
:mod:`nodegrad.numpy_api.composed`, :mod:`~nodegrad.numpy_api.shaping`,
:mod:`~nodegrad.numpy_api.elementwise`, :mod:`~nodegrad.numpy_api.along_axis`,
:mod:`~nodegrad.numpy_api.statistics` (quantiles, NaN-ignoring reductions, covariances) and
:mod:`~nodegrad.numpy_api.sequences` (selections, ``np.block``, ``np.interp``, ...).
Importing this package attaches both protocols to the engine's
:class:`~nodegrad.engine.traced.Traced` handle, and gives the handle's refusal to become a
plain array numpy's ways out (:mod:`~nodegrad.numpy_api.conversions`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import Batched, BatchingError
from nodegrad.engine.shared import shared_results
from nodegrad.engine.traced import DEFERS_TO, Traced
from nodegrad.errors import user_location
from nodegrad.numpy_api import catalog
from nodegrad.numpy_api import conversions as conversions  # the advice of errors about plain arrays
from nodegrad.numpy_api.arguments import public_name
from nodegrad.numpy_api.functions import FUNCTIONS, VALUE_FUNCTIONS, dispatch_function
from nodegrad.numpy_api.ufuncs import UFUNCS, VALUE_UFUNCS, dispatch_ufunc
from nodegrad.ops.batching import value_function, value_ufunc
from nodegrad.ops.examples import per_example_call, per_example_where_read

__all__ = ["FUNCTIONS", "UFUNCS", "VALUE_FUNCTIONS", "VALUE_UFUNCS", "dispatch_function", "dispatch_ufunc"]


def _defers(values: Any) -> bool:
    """Whether a table's column is among ``values``: its own protocol answers (see DEFERS_TO)."""
    return any(type(v) in DEFERS_TO for v in values)


def _array_ufunc(self: Traced, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if DEFERS_TO and _defers(inputs):
        return NotImplemented
    try:
        return dispatch_ufunc(ufunc, method, inputs, kwargs)
    except BatchingError as exc:  # traced inside vmap, and its rule here reads values
        return per_example_where_read(ufunc, inputs, kwargs, exc)


def _array_function(self: Traced, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    if DEFERS_TO and _defers(types):
        return NotImplemented
    try:
        return dispatch_function(func, args, kwargs)
    except BatchingError as exc:  # traced inside vmap, and written here reading values
        return per_example_where_read(func, args, kwargs, exc)


def _batched_ufunc(self: Batched, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if DEFERS_TO and _defers(inputs):
        return NotImplemented
    if ufunc in VALUE_UFUNCS or ufunc in _INTEGER_UFUNCS or method == "at":
        return value_ufunc(ufunc, method, inputs, kwargs)  # a mask or a plain value, batched
    if method != "__call__":
        # np.add.reduce, np.multiply.outer: once per example, where each example's values
        # traced by a transform outside meet the refusal grad gives them.
        return per_example_call(getattr(ufunc, method), inputs, kwargs)
    try:
        return dispatch_ufunc(ufunc, method, inputs, kwargs)
    except BatchingError as exc:  # its rule here reads values (a NaN test, an exponent)
        return per_example_where_read(ufunc, inputs, kwargs, exc)


# ufuncs of integers and booleans only (masks combined with & and |): plain values, batched.
_INTEGER_UFUNCS = {
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
}  # fmt: skip


def _batched_function(self: Batched, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    if DEFERS_TO and _defers(types):
        return NotImplemented
    if func in VALUE_FUNCTIONS:
        return value_function(func, args, kwargs)  # a shape, an index, a mask, batched
    if func not in FUNCTIONS:
        # numpy's own (np.any, np.isin, np.bincount), which grad meets only on plain values:
        # run once per example (each example's values traced by a transform outside are
        # refused there as grad refuses them), unless it writes in place.
        if func in _WRITERS or kwargs.get("out") is not None:
            raise _writes_in_place(_WRITERS.get(func) or public_name(func))
        return per_example_call(func, args, kwargs)
    try:
        # A plain array among the results (np.broadcast_arrays' of a shared table) is the
        # same for every example: shared, so that a batched index can index it.
        return shared_results(dispatch_function(func, args, kwargs))
    except BatchingError as exc:  # written here reading values (an order, a mask, bins)
        return per_example_where_read(func, args, kwargs, exc)


#: numpy's functions that write into an array or a file, by the name a user spells.
_WRITERS = {func: name for name, func in catalog.writers().items()}


def _writes_in_place(name: str) -> BatchingError:
    # numpy's np.full and np.full_like of a plain array fill it by np.copyto: say so.
    called_by = " (np.full and np.full_like call it to fill a plain array)" if name == "np.copyto" else ""
    msg = (
        f"{name}{called_by} of a batched value writes into one array (or file) in place, where each example would "
        f"overwrite the last one's: build a new array (ng.at(x)[index].set(value), np.where, np.zeros_like(a) + "
        f"value) and return it [called at {user_location()}]"
    )
    return BatchingError(msg)


# numpy's protocols, attached to the engine's handles from here: np.exp(x) and np.sum(x) of a
# traced x come to this package, and of a batched x too (through the batching interpreter).
Traced.__array_ufunc__ = _array_ufunc  # type: ignore[attr-defined]
Traced.__array_function__ = _array_function  # type: ignore[attr-defined]
Batched.__array_ufunc__ = _batched_ufunc  # type: ignore[attr-defined]
Batched.__array_function__ = _batched_function  # type: ignore[attr-defined]
