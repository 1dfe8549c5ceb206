"""``np.r_`` and ``np.c_``, also with traced entries: ``np.r_[x, 2 * x, 3.0]``.

numpy builds these from its entries' numbers, without asking them. Here, with a traced
entry (or a list holding one), numpy's own object lays out the *positions* of the entries'
elements (an integer array in the shape numpy would give, with its directives, slices and
``ndmin`` rules), and the result gathers the entries' elements into that layout, so the
gradient reaches every traced entry. With no traced entry they are numpy's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, user_location
from nodegrad.numpy_api.arguments import holds_traced, traced_array

__all__ = ["c_", "r_"]


class _Concatenator:
    """One of numpy's concatenating index objects, taking traced entries too."""

    def __init__(self, numpy_object: Any, name: str, doc: str) -> None:
        self._numpy = numpy_object
        self._name = name
        self.__doc__ = doc

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not holds_traced(items):
            return self._numpy[key]
        if items and isinstance(items[0], str) and items[0] in ("r", "c"):
            msg = (
                f"{self._name}: the matrix directives 'r' and 'c' (np.matrix) are not available for traced entries "
                f"[called at {user_location()}]"
            )
            raise ArgumentError(msg)
        parts: list[Any] = []
        values: list[Any] = []
        positions: list[Any] = []
        offset = 0
        for item in items:
            if isinstance(item, str):
                values.append(item)
                positions.append(item)
                continue
            if isinstance(item, slice):  # numpy's range (or linspace) of the slice, a plain 1-D entry
                value = part = self._numpy[item]
            elif holds_traced(item):  # an interpreted value, or a list holding one
                part = item if type(item) in INTERPRETED else traced_array(item, self._name)
                value = unwrap(part)
            else:
                value, part = item, np.asarray(item)
            size = int(np.size(unwrap(part)))
            if type(item) in np.ScalarType:  # numpy reads a scalar entry as a weak scalar
                positions.append(np.intp(offset))
            else:
                positions.append(np.arange(offset, offset + size).reshape(np.shape(unwrap(part))))
            values.append(item if isinstance(item, slice) else value)
            parts.append(ops.ravel(part) if type(part) in INTERPRETED else np.ravel(part))
            offset += size
        layout = self._numpy[tuple(positions)]
        dtype = self._numpy[tuple(values)].dtype  # numpy's result dtype for these values
        result = ops.getitem(ops.cat(parts, 0), layout)
        return result if unwrap(result).dtype == dtype else ops.astype(result, dtype)

    def __len__(self) -> int:
        return 0  # as numpy's


r_ = _Concatenator(
    np.r_,
    "np.r_",
    """``np.r_``: entries (scalars, arrays, slices, lists) concatenated along the first axis,
    numpy's directives included (``np.r_["0,2", a, b]``); traced entries keep their gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.r_[x, 2.0 * x, 3.0, 0:2] ** 2.0))(1.0)
    10.0
    """,
)
c_ = _Concatenator(
    np.c_,
    "np.c_",
    """``np.c_``: entries concatenated along the last axis, 1-D ones as columns; traced
    entries keep their gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> ng.grad(lambda x: np.sum(np.c_[[x, 2.0 * x], [1.0, 2.0]] ** 2.0))(1.0)
    10.0
    """,
)
