"""The traced handle: what user code holds while a function is being differentiated.

A :class:`Traced` is ``(arena, index, value)``: node ``index`` of ``arena``, whose
forward value is ``value``. Transforms nest by levels: inside ``grad(grad(f))`` the inner
arena's values are themselves handles of the outer arena, so ``value`` may be a
``Traced`` too; :func:`unwrap` reads through every level. Here it is only a handle (its value's attributes, and refusals
to silently become a plain number or array). Its arithmetic operators and array methods
are attached by the op families (:mod:`nodegrad.ops.traced_methods`), and numpy's
dispatch protocols by :mod:`nodegrad.numpy_api`: the engine knows no particular op.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED, ArrayFace, Interpreted, check_alive, lower, next_stamp
from nodegrad.engine.plugins import PLUGINS
from nodegrad.errors import ArenaError, calling_code

__all__ = [
    "DEFERS_TO",
    "DETACH",
    "ON_IMPORT",
    "ON_PANDAS",
    "READERS",
    "ArrayFace",
    "Traced",
    "describe",
    "foreign_operand",
    "meet_libraries",
    "next_stamp",
    "read",
    "unwrap",
]


#: How a Python value is read out of a value of an interpreter below the arena (a value
#: staged by replay: through a guard, so a replay checks it reads the same), by its type.
READERS: dict[type, Callable[[Any, Callable[[Any], Any]], Any]] = {}


def read(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` of the plain value ``value`` stands for (a text for a display, say): what
    ``fn(value)`` is for a plain value; for a staged one, read through a guard."""
    reader = READERS.get(type(value))
    return fn(value) if reader is None else reader(value, fn)


def unwrap(value: Any) -> Any:
    """The value under a traced handle, through every arena's level of nesting (for reading
    shapes, dtypes and masks: it carries no gradient); anything else unchanged."""
    return lower(value, _ARENAS)


def _library_roots() -> tuple[str, ...]:
    """The directories installed libraries live in: the standard library and site-packages."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update(getattr(site, "getsitepackages", list)())
    return tuple(os.path.join(os.path.abspath(root), "") for root in roots)


def _foreign_caller() -> FrameType | None:
    """The frame of the library function that is turning a traced value into a plain
    array: walking out from the conversion over library frames (and nodegrad's own), the
    outermost library frame before user code. None when user code converts it itself. Only
    asked while an error is being written."""
    roots = _library_roots()
    frame: FrameType | None = sys._getframe(2)
    found = None
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module != "nodegrad" and not module.startswith("nodegrad."):
            if not os.path.abspath(frame.f_code.co_filename).startswith(roots):
                break
            found = frame
        frame = frame.f_back
    return found


#: How each refusal to become a plain array ends: the way to detach on purpose.
DETACH = "call nodegrad.stop_gradient(x) or read x.value to detach on purpose."

#: Value types of the layers above whose own operators and numpy protocols answer when a
#: traced (or batched, or staged) value meets one: ``x * column`` is the column's product,
#: which keeps its row labels. Each maps to how a value of it becomes the one that answers
#: (a pandas Series closed over becomes nodegrad's column). The handle's operator gives way.
DEFERS_TO: dict[type, Callable[[Any], Any]] = {}

#: Called once, the first time pandas asks a handle for its ``__pandas_priority__`` (a pandas
#: object met a traced value): the layer that knows pandas registers its types in
#: :data:`DEFERS_TO` then, so that nodegrad never imports pandas itself.
ON_PANDAS: list[Callable[[], None]] = []

#: Such registrations by the module that must be imported first (scipy.sparse's classes).
ON_IMPORT: dict[str, list[Callable[[], None]]] = {"pandas": ON_PANDAS}


def meet_libraries() -> None:
    """Run the :data:`ON_IMPORT` registrations of the libraries imported by now: called as a
    transform starts, so a DataFrame or a sparse matrix closed over meets traced values as
    nodegrad's."""
    for module, waiting in ON_IMPORT.items():
        if waiting and module in sys.modules:
            while waiting:
                waiting.pop()()


def foreign_operand(handle: Any) -> np.ndarray | None:
    """``handle`` as the 0-d object array a library's operator reads as an operand it cannot
    handle (see ``PLUGINS.gives_way``), when the conversion asking for it is that; else
    None. Called from a handle's ``__array__``."""
    gives_way = PLUGINS.gives_way
    if gives_way is None or not gives_way(sys._getframe(2)):
        return None
    wrapped = np.empty((), dtype=object)
    wrapped[()] = handle
    return wrapped


def _foreign_message(frame: FrameType, what: str) -> str:
    """The error for a library function that cannot see traced values: its name, and where
    to turn instead, as the layer that knows the library says (``PLUGINS.library_advice``)."""
    code = frame.f_code
    module = frame.f_globals.get("__name__") or "?"
    full = f"{module}.{getattr(code, 'co_qualname', code.co_name)}"
    library, dot, _ = module.partition(".")
    advice = PLUGINS.library_advice.get(library) if dot else None
    if advice is not None:
        return advice(frame, full, what)
    return f"{full} cannot see traced values: {what} Use nodegrad ops instead, or {DETACH}"


def _user_call() -> str | None:
    """The function the user's line called on a traced value, as written there
    (``math.sin``, ``float``), from the position of the call being made; None when it
    cannot be read (no source, or Python older than 3.11)."""
    code = calling_code()
    if code is None or "(" not in code:
        return None
    callee = code.split("(", 1)[0].strip()
    return callee if callee.replace(".", "").replace("_", "").isalnum() else None


def _instead_of(call: str) -> str:
    """What to call instead of ``call`` (``math.sin`` -> ``np.sin``)."""
    name = call.rpartition(".")[2]
    if call.startswith("math.") and isinstance(getattr(np, name, None), np.ufunc):
        return f"use np.{name}(x), which records an op, instead of {call}(x)"
    return f"use a nodegrad op or a numpy function instead of {call}"


def _shown(value: Any) -> str:
    return np.array2string(np.asarray(value), threshold=6)


class Traced(Interpreted):
    """A handle to one node of an arena: what user code holds while being differentiated.

    It behaves like the numpy array it stands for: arithmetic operators with numpy
    broadcasting, ``@``, comparisons (which give plain boolean masks), ``.shape``,
    ``.dtype``, ``.T``, ``.reshape``, ``.sum``, ``.mean``, ``.max``, ``.min``, indexing,
    and numpy functions and ufuncs that have a registered op. Each operation records one
    node in the arena.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> a = ng.Arena()
    >>> x = a.param(np.ones((2, 3)))
    >>> (x.T @ x).shape
    (3, 3)
    """

    __slots__ = ("arena", "index", "value")
    __array_priority__ = 1000
    noun = "traced"
    leaked = "a leaked tracer"
    differentiating = True
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays

    def __init__(self, arena: Any, index: int, value: Any) -> None:  # (an Arena: defined above this module)
        self.arena = arena
        self.index = index
        self.value = value

    @property
    def level(self) -> Any:
        """The arena it is a node of: its level."""
        return self.arena

    def below(self) -> Any:
        """Its value (one level down)."""
        return self.value

    # -- array attributes -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the value."""
        value = self.value
        return value.shape if type(value) is np.ndarray else np.shape(value)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the value (float64 or complex128 for a leaf made from a Python number)."""
        value = self.value
        if type(value) is float:
            return np.dtype(np.float64)
        return value.dtype if type(value) is not complex else np.dtype(np.complex128)

    @property
    def ndim(self) -> int:
        """Number of dimensions of the value."""
        return np.ndim(self.value)

    @property
    def size(self) -> int:
        """Number of elements of the value."""
        return np.size(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        value = unwrap(self.value)
        text = read(value, _shown)
        return f"Traced(node {self.index}, {describe(value)}: {text})"

    def __bool__(self) -> bool:
        return bool(unwrap(self.value))

    def __float__(self) -> float:
        # float(x) and math.* would hand back a plain number and silently cut the gradient.
        self._refuse_if_leaked("float()")
        call = _user_call()
        if call is None or call == "float":
            what, instead = "float() of a traced value", "keep it a traced value (use nodegrad ops on it)"
        else:
            what, instead = f"{call}() of a traced value", _instead_of(call)
        msg = (
            f"{what} (node {self.index}, {describe(self.value)}) would silently drop its gradient: {instead}; "
            "call float(x.value) or float(nodegrad.stop_gradient(x)) to read the number on purpose."
        )
        raise ArenaError(msg)

    def __setitem__(self, index: Any, value: Any) -> None:
        msg = (
            f"a traced value (node {self.index}, {describe(self.value)}) cannot be assigned into: a value being "
            "differentiated never changes in place. Write x = ng.at(x)[index].set(value) (or .add(value)) for a "
            "new array with those entries replaced"
        )
        raise TypeError(msg)

    def _refuse_if_leaked(self, what: str) -> None:
        check_alive(self, what)

    def __format__(self, spec: str) -> str:
        # Formatting is for reading (logging a loss inside a traced function), not computing.
        return format(unwrap(self.value), spec) if spec else repr(self)

    def item(self, *args: Any) -> Any:
        """Refused, as ``float(x)`` is: a Python number carries no gradient, so ``x.item() * x``
        would be differentiated as if ``x.item()`` were a constant. Read the number on purpose
        with ``np.asarray(x.value).item()`` (``x.value`` has no gradient)."""
        raise ArenaError(self._plain_refused("item"))

    def tolist(self) -> Any:
        """Refused, as :meth:`item` is: Python lists of numbers carry no gradient. Read them on
        purpose with ``np.asarray(x.value).tolist()``."""
        raise ArenaError(self._plain_refused("tolist"))

    def _plain_refused(self, method: str) -> str:
        return (
            f"x.{method}() of a traced value (node {self.index}, {describe(self.value)}) would silently drop its "
            f"gradient: keep it a traced value (use nodegrad ops on it); call np.asarray(x.value).{method}() to read "
            "it on purpose."
        )

    def __reduce__(self) -> Any:
        msg = (
            f"a traced value (node {self.index}, {describe(self.value)}) cannot be pickled: it is a handle into a "
            "computation in progress; pickle its plain value (x.value, or nodegrad.stop_gradient(x)) instead"
        )
        raise ArenaError(msg)

    def __copy__(self) -> Traced:
        return self  # a handle never changes: copying it must not copy its arena

    def __deepcopy__(self, memo: Any) -> Traced:
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self._refuse_if_leaked("np.asarray()")
        operand = foreign_operand(self)
        if operand is not None:
            return operand
        wanted = _dtype_or_none(dtype)
        if wanted is not None and wanted.kind in "biu" and type(unwrap(self)) not in INTERPRETED:
            # An integer cast has no gradient to drop: np.int64(x), np.int32(x), np.bool_(x) and
            # np.asarray(x, dtype=int) are constants, as x.astype(int) and HIPS autograd's
            # np.int64(x) are. (Not under vmap or replay, whose values must stay theirs.)
            return np.array(unwrap(self), dtype=wanted)
        what = (
            f"a traced value (node {self.index}, {describe(self.value)}) cannot become a plain numpy "
            "array: that would silently drop its gradient."
        )
        library = _foreign_caller()
        if library is not None:
            raise ArenaError(_foreign_message(library, what))
        cast = (
            f"To cast it keeping its gradient, write x.astype(np.{wanted.name}) (np.{wanted.name}(x) is refused, "
            "as HIPS autograd refuses it)."
            if wanted is not None and wanted.kind in "fc"
            else ""
        )
        parts = (
            what,
            cast,
            "Use a nodegrad op or a numpy function with a registered op.",
            PLUGINS.conversion_advice,
            "Call nodegrad.stop_gradient(x) or read x.value to detach on purpose.",
        )
        msg = " ".join(part for part in parts if part)
        raise ArenaError(msg)


def _dtype_or_none(dtype: Any) -> np.dtype[Any] | None:
    """``dtype`` as a numpy dtype; ``None`` for none, or for something that is not one."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


_ARENAS = frozenset({Traced})  # what unwrap peels: the handles of arenas


def describe(arg: Any) -> str:
    """A short description of an argument for messages: ``float64[2, 3]``, or its repr."""
    arg = unwrap(arg)
    if isinstance(arg, np.ndarray | np.generic) or type(arg) in INTERPRETED:  # (a batched one: an example's)
        return f"{arg.dtype}{list(arg.shape)}"
    if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, np.ndarray | np.generic) for a in arg):
        return "[" + ", ".join(describe(a) for a in arg) + "]"
    return repr(arg) if len(repr(arg)) < 40 else type(arg).__name__
