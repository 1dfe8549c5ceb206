"""What a replay's signature holds of a table's rows: the labels of its index.

A DataFrame's or Series' index is part of its structure, so a recording made for one set of
row labels never answers for another (a ``.loc`` lookup and a result's index follow each
call). The key is cached per index object: a pandas Index's labels cannot change.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["index_key"]


#: Index keys by the index's id, with a weak reference to check it is the same index
#: (a pandas Index's labels cannot change; its names can, and are read each time).
_KEYS: dict[int, tuple[Any, Any]] = {}


def index_key(value: Any) -> Any:
    """What the signature holds of a DataFrame's or Series' index: its type, dtype and labels
    (by their bits), and its names."""
    index = value.index
    cached = _KEYS.get(id(index))
    if cached is not None and cached[0]() is index:
        labels = cached[1]
    else:
        labels = _labels_key(index)
        try:
            ref = weakref.ref(index, _forget(id(index)))
        except TypeError:
            pass
        else:
            _KEYS[id(index)] = (ref, labels)
    return (type(index).__name__, str(index.dtype), labels, tuple(index.names))


def _forget(at: int) -> Any:
    return lambda _: _KEYS.pop(at, None)


def _labels_key(index: Any) -> Any:
    if type(index).__name__ == "RangeIndex":
        return (index.start, index.stop, index.step)
    values = index.to_numpy()
    if values.dtype.kind in "biufcmM":
        return values.tobytes()
    return tuple(index.tolist())
