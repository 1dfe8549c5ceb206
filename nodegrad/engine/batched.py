"""The batched value: what user code holds inside ``vmap``.

A :class:`Batched` is ``(value, level)``: ``value`` holds one entry per example, stacked
along its axis 0, and ``level`` is the :class:`BatchLevel` (one ``vmap`` call) that batches
it. User code sees one example: ``shape``, ``ndim``, ``len`` and ``dtype`` are an example's.
Like :class:`~nodegrad.engine.traced.Traced` it is only a handle here: an op given one is
handed to the batching interpreter (:data:`nodegrad.engine.record.INTERPRETERS`), its
operators and array methods are attached by the op families, numpy's protocols by
:mod:`nodegrad.numpy_api`. Levels nest as arenas do: inside ``vmap(vmap(f))`` the inner
level's values are themselves batched by the outer one, and ``value`` may be a
``Batched`` (or a ``Traced``, under an enclosing transform) too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED, Interpreted, Level, check_alive, lower, next_stamp
from nodegrad.engine.traced import Traced, describe, foreign_operand, meet_libraries, unwrap
from nodegrad.errors import ArenaError, BatchingError

__all__ = [
    "BatchLevel",
    "Batched",
    "BatchingError",
    "all_values",
    "next_stamp",
    "plain",
    "plain_map",
    "read_level",
]


class BatchLevel(Level):
    """One ``vmap`` call: how many examples it batches, when it began (its ``stamp``: the
    innermost level among an op's inputs runs the op), and whether it is still running."""

    __slots__ = ("active", "name", "size", "stamp")

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self.active = True
        self.stamp = next_stamp()
        meet_libraries()

    def __repr__(self) -> str:
        return f"BatchLevel({self.name}, size {self.size}, stamp {self.stamp})"

    def alive(self) -> bool:
        return self.active

    def describe(self) -> str:
        return self.name

    def handle(self, value: Any) -> Batched:
        return Batched(value, self)


def read_level(exc: BaseException) -> BatchLevel | None:
    """The level whose batched value ``exc`` refused to give one value of (a plain array,
    a ``bool``, a number, an index), or ``None``. A function that reads its arguments'
    values (a numpy function written here, a public op, a distribution) meets this refusal
    and runs once per example of that level instead
    (:func:`nodegrad.ops.examples.per_example_where_read`)."""
    return getattr(exc, "read_level", None)


class Batched(Interpreted):
    """A value batched by ``vmap``: one example as user code sees it, every example inside.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.vmap(lambda row: row * row.shape[0])(np.ones((2, 3)))  # row.shape is one example's
    array([[3., 3., 3.],
           [3., 3., 3.]])
    """

    __slots__ = ("level", "value")
    __array_priority__ = 1000
    noun = "batched"
    leaked = "a leaked batched value"
    per_example = True
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays

    def __init__(self, value: Any, level: BatchLevel) -> None:
        self.value = value
        self.level = level

    def below(self) -> Any:
        """Every example's value, stacked along axis 0 (one level down)."""
        return self.value

    # -- one example's attributes -----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one example."""
        return tuple(np.shape(self.value)[1:])

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the values."""
        value = unwrap(self.value)
        while type(value) is Batched:
            value = unwrap(value.value)
        return np.asarray(value).dtype if not hasattr(value, "dtype") else value.dtype

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            msg = "len() of a batched value whose examples are 0-d"
            raise TypeError(msg)
        return shape[0]

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Batched({self.level.name}: {self.level.size} examples of {describe(self.like_example())})"

    def like_example(self) -> np.ndarray:
        """A plain array of zeros shaped and typed like one example: for checks of shapes
        and dtypes that take arrays."""
        return np.zeros(self.shape, self.dtype)

    # -- refusals: one answer where each example has its own --------------------------------
    def _refuse(self, what: str, instead: str) -> BatchingError:
        self._refuse_if_leaked(what)
        msg = (
            f"{what} of a batched value ({self.level.size} examples of {describe(self.like_example())}, inside "
            f"{self.level.name}) has one answer per example, where Python needs one: {instead}"
        )
        exc = BatchingError(msg)
        exc.read_level = self.level  # type: ignore[attr-defined]  # see read_level
        return exc

    def _refuse_if_leaked(self, what: str) -> None:
        check_alive(self, what)

    def __bool__(self) -> bool:
        raise self._refuse("bool() (an if or while on the value)", "write np.where(condition, a, b) per example")

    def __float__(self) -> float:
        raise self._refuse("float()", "keep it an array (use numpy functions on it)")

    def __int__(self) -> int:
        raise self._refuse("int()", "keep it an array; for an index use ng.gather or np.take_along_axis")

    def __index__(self) -> int:
        raise self._refuse("Use as an index", "index with an integer array instead (x[idx] with idx batched)")

    def __round__(self, ndigits: Any = None) -> Any:
        raise self._refuse("round()", "use np.round(x), which rounds every example")

    def __trunc__(self) -> Any:
        raise self._refuse("math.trunc()", "use np.trunc(x), which works on every example")

    def __floor__(self) -> Any:
        raise self._refuse("math.floor()", "use np.floor(x), which works on every example")

    def __ceil__(self) -> Any:
        raise self._refuse("math.ceil()", "use np.ceil(x), which works on every example")

    def __complex__(self) -> complex:
        raise self._refuse("complex()", "keep it an array (use numpy functions on it)")

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)  # f"{x}": what the value is, as print shows it
        raise self._refuse(
            f"format() with the spec {spec!r} (an f-string or str.format)",
            "each example has its own text: format the results after vmap returns",
        )

    def item(self, *args: Any) -> Any:
        """Refused: each example has its own number."""
        raise self._refuse("x.item()", "keep it an array (use numpy functions on it)")

    def tolist(self) -> Any:
        """Refused: each example has its own list."""
        raise self._refuse("x.tolist()", "keep it an array (use numpy functions on it)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        operand = foreign_operand(self)
        if operand is not None:
            return operand
        raise self._refuse(
            "np.asarray() (or numpy's own indexing of a plain array by it, t[i] or np.take(t, i))",
            "use numpy functions (which nodegrad batches) on it, or return it from the function; to index a plain "
            "array t by it write ng.gather(t, i, axis)",
        )

    def map_plain(self, fn: Any) -> Any:
        """``fn`` of every example's values at once (stacked along the leading axis), batched
        again (each array of a tuple result, too)."""
        out = plain_map(fn, self.value)
        if isinstance(out, tuple):  # numpy's result tuples (QRResult, ...) too
            items = [Batched(o, self.level) for o in out]
            return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
        return Batched(out, self.level)

    def __setitem__(self, index: Any, value: Any) -> None:
        msg = (
            "a batched value cannot be assigned into: write x = ng.at(x)[index].set(value) (or .add(value)) for a new "
            "array with those entries replaced"
        )
        raise TypeError(msg)

    def __reduce__(self) -> Any:
        msg = "a batched value cannot be pickled: it exists only while its vmap runs; return it from the function"
        raise ArenaError(msg)

    def __copy__(self) -> Batched:
        return self

    def __deepcopy__(self, memo: Any) -> Batched:
        return self


def all_values(x: Any) -> Any:
    """The plain values under ``x``'s traced and batched levels: under ``vmap``, every
    example's at once (stacked along leading axes). For checks that read values (bounds,
    masks, the sign of an index), and for a shortcut a rule may take only where every
    example allows it."""
    return lower(x, _TRACED_OR_BATCHED)


def plain_map(fn: Any, x: Any) -> Any:
    """``fn`` of the plain values under ``x`` (its traced levels dropped: the result carries
    no gradient), called once on every example of a batched ``x`` stacked along leading
    axes, and batched again as ``x`` is (each array of a tuple result, too). ``fn`` must
    work on such a stack: entry by entry (a sign, a cast) or along trailing axes."""
    while type(x) is Traced:
        x = x.value
    if type(x) in INTERPRETED:  # batched, staged, shaped: each interpreter its own way
        return x.map_plain(fn)
    return fn(x)


def plain(x: Any) -> Any:
    """``x`` without its traced levels (a plain value: it carries no gradient); a batched
    value stays batched, with the traced levels inside it dropped too."""
    return plain_map(lambda v: v, x)


_TRACED_OR_BATCHED = frozenset({Traced, Batched})
