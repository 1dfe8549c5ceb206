"""Levels and the values they interpret: the protocol every interpreter is written on.

A transform that is running is a **level**: an arena (``grad`` records on it), a batch
level (one ``vmap`` call), a tape (one ``replay`` recording). Every level has a stamp (when
it began: of two levels running, the later is inside the other, so it interprets an op
first), a name for messages, and whether it is still running. A value user code holds while
a level runs is an **interpreted value**: a handle of one level (:class:`Interpreted`)
whose value one level down may be another level's handle, down to a plain array.

Everything the rest of nodegrad asks of an interpreted value is asked here, once:

- :func:`is_interpreted` -- whether a value stands for another (the one set of handle types,
  :data:`INTERPRETED`, filled as each interpreter's handle class is defined);
- :func:`find_top` -- the handle of the innermost level among an op's arguments, which
  runs the op;
- :func:`lower` -- a value with the handles of some levels peeled off;
- :func:`check_alive` -- the one leak check: a handle whose level has returned is refused.

Whether a level besides recording is running at all is one counter, read on the hot path
where it lives (:func:`nodegrad.engine.record.interpreting`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from nodegrad.engine.containers import ARRAY_TYPES
from nodegrad.errors import LeakedTracerError, user_location

__all__ = [
    "ABSTRACT",
    "CALLS_AT_LEVEL",
    "DIFFERENTIATING",
    "FOREIGN",
    "INTERPRETED",
    "PER_EXAMPLE",
    "RECORDING",
    "ArrayFace",
    "Interpreted",
    "Level",
    "carries_gradient",
    "check_alive",
    "find_top",
    "has_values",
    "inside",
    "is_interpreted",
    "leaked_error",
    "lower",
    "next_stamp",
]


_STAMPS = itertools.count()


def next_stamp() -> int:
    """A number larger than every one given before: when a level began. Transforms nest, so
    of two levels that are running, the later one is the inner one."""
    return next(_STAMPS)


class Level:
    """One running transform: an arena, a batch level, a tape.

    A subclass sets ``stamp`` (from :func:`next_stamp`, as it begins) and says what it is
    (:meth:`describe`) and whether it still runs (:meth:`alive`).
    """

    __slots__ = ()
    stamp: int

    def alive(self) -> bool:
        """Whether the transform is still running (its handles may still be computed with)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The transform, as a message names it (``grad(loss)``, ``vmap(f)``)."""
        raise NotImplementedError

    def handle(self, value: Any) -> Any:
        """A value of this level standing for ``value``, a plain value one level down as this
        level's handles hold it (for a batch level: every example, stacked along the leading
        axis). For a step that computed the values under a handle itself and gives them back
        at the handle's level."""
        raise NotImplementedError


class ArrayFace:
    """What a value standing for an array shows of it: its operators and array methods,
    attached at import time by nodegrad.ops.traced_methods, and numpy's dispatch protocols,
    by nodegrad.numpy_api; declared here so that type checkers see them. It holds nothing
    itself."""

    __slots__ = ()

    if TYPE_CHECKING:
        T: Any
        mT: Any  # noqa: N815  (numpy's name)

        def __getattr__(self, name: str) -> Any: ...
        def __getitem__(self, index: Any) -> Any: ...
        def __add__(self, other: Any) -> Any: ...
        def __radd__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __rsub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __rmul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __rtruediv__(self, other: Any) -> Any: ...
        def __floordiv__(self, other: Any) -> Any: ...
        def __rfloordiv__(self, other: Any) -> Any: ...
        def __mod__(self, other: Any) -> Any: ...
        def __rmod__(self, other: Any) -> Any: ...
        def __pow__(self, other: Any) -> Any: ...
        def __rpow__(self, other: Any) -> Any: ...
        def __matmul__(self, other: Any) -> Any: ...
        def __rmatmul__(self, other: Any) -> Any: ...
        def __neg__(self) -> Any: ...
        def __pos__(self) -> Any: ...
        def __abs__(self) -> Any: ...
        def __lt__(self, other: Any) -> Any: ...
        def __le__(self, other: Any) -> Any: ...
        def __gt__(self, other: Any) -> Any: ...
        def __ge__(self, other: Any) -> Any: ...
        def __eq__(self, other: object) -> Any: ...
        def __ne__(self, other: object) -> Any: ...
        def __and__(self, other: Any) -> Any: ...
        def __or__(self, other: Any) -> Any: ...
        def __invert__(self) -> Any: ...


#: The types of interpreted values (traced, batched, staged, ...): every subclass of
#: :class:`Interpreted` is added as it is defined. Membership of ``type(x)`` is the test,
#: as a staged value answers ``isinstance`` with the type of the value it stands for.
INTERPRETED: set[type] = set()


#: The interpreted types that stand for a shape and a dtype only (``eval_shape``'s): no value
#: under them can be read (see :func:`has_values`, which the library's checks of values and
#: shortcuts ask), and a plain call on them (``np.asarray``, :func:`staged.call_on
#: <nodegrad.engine.staged.call_on>`) gives a value of their own level
#: (:meth:`Interpreted.call_plain`).
ABSTRACT: set[type] = set()

#: What a level's values are, asked by their kind and not by their type. Each set holds the
#: interpreted types whose class says so (filled as the class is defined, from the class
#: attributes of the same name on :class:`Interpreted`); ``type(x) in SET`` is the test on
#: the hot path, as fast as naming the type.
#:
#: - ``DIFFERENTIATING``: the value's level records for a gradient (``grad``'s arena): an op
#:   on it must be recorded for its VJP, and it is a leaf a cotangent reaches.
#: - ``PER_EXAMPLE``: the value stands for one value per example (``vmap``'s): an index or
#:   a mask of it selects per example, and its examples are stacked under it.
#: - ``CALLS_AT_LEVEL``: a plain call on it is made at its level as one step
#:   (:meth:`Interpreted.call_plain`: ``replay``'s tape appends it, ``eval_shape`` answers
#:   it by shape), so a helper that computes on plain values can be handed it whole.
#: - ``RECORDING``: the value's level records the calls made on it, to make them again later
#:   (``replay``'s tape): a helper that computes on plain values is best recorded as one call
#:   (``staged.call_on``), and a value read from it now would be frozen into the recording.
DIFFERENTIATING: set[type] = set()
PER_EXAMPLE: set[type] = set()
CALLS_AT_LEVEL: set[type] = set()
RECORDING: set[type] = set()

#: The types whose values take an op first when a recording value (:data:`RECORDING`) meets
#: one: every interpreted type that does not record (a traced or batched value: an op on
#: both is its level's, and a recording that reads one of a level around it cannot be
#: replayed), added as each is defined, and the types of the layers above whose own
#: operators answer (a table's column), added by those layers.
FOREIGN: set[type] = set()


class Interpreted(ArrayFace):
    """A value a level interprets: its :attr:`level`, the value it stands for one level down
    (:meth:`below`), and its ``shape`` and ``dtype`` as user code sees them.

    ``noun`` names the kind in messages (``"traced"``, ``"batched"``, ``"staged"``), and
    ``leaked`` what user code calls one that outlived its transform.
    """

    __slots__ = ()
    noun = "interpreted"
    leaked = "a leaked value"
    #: What the values of a kind are (see :data:`DIFFERENTIATING`, :data:`PER_EXAMPLE`,
    #: :data:`CALLS_AT_LEVEL`, :data:`RECORDING`, :data:`ABSTRACT`): a subclass sets those
    #: that hold.
    differentiating = False
    per_example = False
    calls_at_level = False
    recording = False
    abstract = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        INTERPRETED.add(cls)
        ARRAY_TYPES.add(cls)  # a leaf of a structure, as an array is
        for holds, kinds in (
            (cls.differentiating, DIFFERENTIATING),
            (cls.per_example, PER_EXAMPLE),
            (cls.calls_at_level, CALLS_AT_LEVEL),
            (cls.recording, RECORDING),
            (cls.abstract, ABSTRACT),
        ):
            if holds:
                kinds.add(cls)
        if not cls.recording:
            FOREIGN.add(cls)

    if TYPE_CHECKING:

        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> Any: ...

    def below(self) -> Any:
        """The value this one stands for one level down (a plain value, or the handle of an
        enclosing level)."""
        raise NotImplementedError

    # What the shape and dtype say, the same for every interpreter's values.
    @property
    def ndim(self) -> int:
        """Number of dimensions (as user code sees the value)."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes of the value."""
        return self.size * self.itemsize

    def call_plain(self, fn: Any, args: Any, kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, a call on plain values, ``args`` holding this value (and
        maybe others of its level; in tuples and lists, too), as a value of this level: for
        code that computes through calls numpy's protocols cannot reach. The result has the
        shape the arguments' shapes give it."""
        raise NotImplementedError

    def map_plain(self, fn: Any) -> Any:
        """``fn`` of the plain values this value stands for, as a value of this level: ``fn``
        reads no gradient and works entry by entry or along trailing axes (a cast, a sign, a
        mask). Each interpreter says how: on every example at once, appended to a tape, or
        by shape alone."""
        raise NotImplementedError


def is_interpreted(value: Any) -> bool:
    """Whether ``value`` is a value a level interprets (traced, batched, staged, ...)."""
    return type(value) in INTERPRETED


def has_values(value: Any) -> bool:
    """Whether the values under ``value`` can be read: False under a level that knows only
    shapes and dtypes (:data:`ABSTRACT`). A check of values (an index in bounds, a matrix
    finite) is skipped where they cannot be, and a shortcut some values allow is not taken."""
    while type(value) in INTERPRETED:
        if type(value) in ABSTRACT:
            return False
        value = value.below()
    return True


def carries_gradient(value: Any) -> bool:
    """Whether a gradient reaches ``value``: it is, or stands for at some level down, a value
    a level records for a gradient (:data:`DIFFERENTIATING`; a batched value with traced
    values inside, say)."""
    while type(value) in INTERPRETED:
        if type(value) in DIFFERENTIATING:
            return True
        if type(value) in ABSTRACT:  # a shape only: nothing under it
            return False
        value = value.below()
    return False


def find_top(args: Iterable[Any], kinds: Any = INTERPRETED, alive_for: str | None = None) -> Any:
    """The handle of the innermost level among ``args`` (and the items of tuple and list
    arguments, one level down: an index, a list of operands), of one of the types ``kinds``
    (every interpreted type by default), or ``None``. The innermost level runs an op first
    (it began last: its stamp is the largest). With ``alive_for``, every handle found is
    leak-checked on the way (:func:`check_alive`), even one of an outer level."""
    found = None
    for a in args:
        for item in a if type(a) is tuple or type(a) is list else (a,):
            if type(item) in kinds:
                if alive_for is not None:
                    check_alive(item, alive_for)
                if found is None or item.level.stamp > found.level.stamp:
                    found = item
    return found


def inside(value: Any, level: Level) -> bool:
    """Whether ``value``, a handle, is of a level that began inside ``level`` (so it runs an
    op before ``level`` does)."""
    return bool(value.level.stamp > level.stamp)


def lower(value: Any, kinds: Any = INTERPRETED) -> Any:
    """``value`` with the handles on top of it peeled off while they are of one of the types
    ``kinds`` (every interpreted type by default: down to the plain value, every example of
    a batched one at once). For reading what carries no gradient: a mask, a shape, a value
    to show."""
    while type(value) in kinds:
        value = value.below()
    return value


def check_alive(value: Any, what: str) -> None:
    """The leak check: refuse ``what`` of ``value``, a handle whose transform has already
    returned (a value that leaked out of it). Nothing computed from it could be right: its
    level no longer records, batches or stages anything."""
    level = value.level
    if not level.alive():
        raise leaked_error(what, value.noun, value.leaked, level.describe())


def leaked_error(what: str, noun: str, leaked: str, transform: str) -> LeakedTracerError:
    """The error of the leak check (:func:`check_alive`), for a check made where only the
    level is at hand (an arena's sealed node list refuses the node appended to it)."""
    msg = (
        f"{what}: a {noun} value of {transform}, which has already returned ({leaked}): return what you need from "
        f"the function instead [at {user_location()}]"
    )
    return LeakedTracerError(msg)
