"""An array every example of a ``vmap`` shares, as the function holds it.

numpy indexes a plain array itself: ``table[i]`` with a batched ``i`` asks ``i`` for one
plain array, which it cannot give, and nodegrad gets no hook (``ndarray.__getitem__`` is
numpy's). So a plain array argument given ``in_axes=None`` (an embedding table, say)
reaches the function as a view of :class:`SharedArray`, an ``ndarray`` in every other
respect: numpy computes with it as with any array, values computed from it alone keep the
class, and indexing one by a batched or traced index is nodegrad's ``getitem``, which
batches. Results leave ``vmap`` as plain arrays again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.staged import FOREIGN_INDEXING

__all__ = ["SharedArray", "plain_result", "shared", "shared_results"]


class SharedArray(np.ndarray):
    """A plain array that ``vmap`` shares between its examples; ``self[i]`` batches.

    ``vmap`` makes one (a view, no copy) of each array argument given ``in_axes=None``;
    it never needs making by hand, and leaves ``vmap`` as a plain array.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> ng.vmap(lambda t, i: t[i], in_axes=(None, 0))(table, np.array([2, 0]))  # an embedding lookup
    array([[5., 6.],
           [1., 2.]])
    """

    def __getitem__(self, index: Any) -> Any:
        if _holds_handle(index):
            return FOREIGN_INDEXING[0](self.view(np.ndarray), index)  # nodegrad's getitem, which batches
        return super().__getitem__(index)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # Shared views never reach a handle's rules (whose results would keep the class):
        # the ufunc runs on plain views, and only a result of shared values alone is shared.
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(out) for out in kwargs["out"])
        out = getattr(ufunc, method)(*map(_plain, inputs), **kwargs)
        return out if next(_handles(inputs), None) is not None else shared_results(out)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        args, kwargs = _plain(args), {key: _plain(value) for key, value in kwargs.items()}
        # numpy dispatches np.take(table, i) on the table alone (not on i): a handle among
        # the other arguments is given the call as if numpy had asked it.
        handle = next(_handles((*args, *kwargs.values())), None)
        if handle is not None:
            others = tuple(t for t in types if not issubclass(t, SharedArray))
            return handle.__array_function__(func, (*others, type(handle)), args, kwargs)
        # Computed from shared values alone, a result is shared too: numpy's functions (as
        # np.concatenate) do not all keep an ndarray subclass as its ufuncs do.
        return shared_results(func(*args, **kwargs))


def _holds_handle(index: Any) -> bool:
    if type(index) in INTERPRETED:
        return True
    return type(index) is tuple and any(type(part) in INTERPRETED for part in index)


def _handles(values: Any) -> Any:
    for value in values:
        if type(value) in INTERPRETED:
            yield value
        elif type(value) in (tuple, list):
            yield from _handles(value)


def _plain(value: Any) -> Any:
    if isinstance(value, SharedArray):
        return value.view(np.ndarray)
    if type(value) in (tuple, list):
        return type(value)(_plain(part) for part in value)
    return value


def shared_results(out: Any) -> Any:
    if type(out) is np.ndarray:
        return out.view(SharedArray)
    if type(out) in (tuple, list):
        return type(out)(shared_results(part) for part in out)
    if isinstance(out, tuple) and hasattr(out, "_make"):  # np.linalg.eigh's EighResult, say
        return out._make(shared_results(part) for part in out)
    return out


def shared(leaf: np.ndarray) -> SharedArray:
    """``leaf`` (a plain array, the same for every example) as the function sees it: a view."""
    return leaf.view(SharedArray)


def plain_result(leaf: Any) -> Any:
    """A result leaf with any shared view turned back into a plain array (no copy)."""
    return leaf.view(np.ndarray) if isinstance(leaf, SharedArray) else leaf
