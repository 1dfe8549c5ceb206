"""A pandas argument of a replayed function, as the recording hands it over.

Eagerly, a function given a DataFrame (or a Series) sees pandas; a transform inside it
(``grad``, ``vmap``) takes it apart into its columns and hands its own function an
:class:`~nodegrad.ops.tables.Frame` (or the values). While ``replay`` records, the columns
are staged values, which pandas cannot hold, so the function is handed a :class:`Sealed`
value instead: a transform takes it apart exactly as it takes the pandas object apart, and
anything else the function does with it (``s * 2``, ``df.loc[5]``, ``np.sum(df)``), which
eagerly would be pandas' own code, makes the signature run eagerly, with a
:class:`~nodegrad.errors.ReplayWarning`. The rows' labels and names are part of the
signature (:func:`index_key`), so a recording never answers for another index.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any

from nodegrad.engine.containers import Handler, register_handler
from nodegrad.engine.staged import Unreplayable
from nodegrad.engine.structure import rebuild
from nodegrad.errors import user_location

__all__ = ["Sealed", "index_key"]


class Sealed:
    """A pandas object (``template``) with its entries (``labels`` -> staged values) while
    replay records: taken apart by transforms, refused by everything else."""

    __slots__ = ("entries", "template")

    def __init__(self, template: Any, labels: list[Hashable], children: list[Any]) -> None:
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "entries", dict(zip(labels, children, strict=True)))

    def __getattr__(self, name: str) -> Any:
        raise _refusal(object.__getattribute__(self, "template"), f".{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise _refusal(self.template, f".{name} = ...")


def _refusal(template: Any, what: str) -> Unreplayable:
    kind = type(template).__name__
    return Unreplayable(
        f"the function uses a {kind} argument itself ({what}), which inside a recording would be a stand-in, not "
        f"pandas: pass its columns as arrays, or replay a transform of the function [at {user_location()}]"
    )


def _refuse(name: str) -> Any:
    def refuse(self: Sealed, *args: Any, **kwargs: Any) -> Any:
        raise _refusal(self.template, name)

    refuse.__name__ = name
    return refuse


# Python's protocols are looked up on the class: each refuses (numpy's too: np.sum(df)).
for _name in (
    *(f"__{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")),
    *(f"__r{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")),
    *(f"__i{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")),
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__", "__pos__", "__abs__", "__invert__",
    "__getitem__", "__setitem__", "__delitem__", "__len__", "__iter__", "__contains__", "__bool__", "__float__",
    "__int__", "__index__", "__array__", "__array_ufunc__", "__array_function__", "__format__", "__str__",
    "__repr__", "__divmod__", "__round__", "__copy__", "__deepcopy__", "__reduce_ex__", "__dataframe__",
):  # fmt: skip
    setattr(Sealed, _name, _refuse(_name))
Sealed.__hash__ = None  # type: ignore[assignment]


def _labels(sealed: Sealed) -> list[Hashable]:
    return list(sealed.entries)


def _get(sealed: Sealed, label: Hashable) -> Any:
    return sealed.entries.get(label)


def _build(sealed: Sealed, children: list[Any]) -> Any:
    return rebuild(sealed.template, children)  # as the pandas object is rebuilt


_SEALED = Handler("map", _labels, _get, _build)
_SEALED.family = "table"
register_handler(Sealed, _SEALED)


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
