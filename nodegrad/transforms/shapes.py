"""``eval_shape``: the shapes and dtypes of what a function returns, computing nothing large.

The fourth interpreter, written on the protocol of :mod:`nodegrad.engine.levels` as the
arena, ``vmap`` and ``replay`` are: a :class:`ShapeLevel` is one ``eval_shape`` call, and a
:class:`Shaped` value stands for an array of which only the shape and the dtype are known.
Every op given a shaped value comes to :func:`interpret` (through the registry's one hook,
:func:`~nodegrad.engine.record.register_interpreter`), which answers it without arrays of
those shapes:

- an op made of other ops runs its forward on the shaped values themselves (each op inside
  is answered here in turn);
- an elementwise op's result has its operands' broadcast shape, and the dtype its forward
  gives on 0-d stand-ins of the operands' dtypes;
- every other op has a rule in :data:`SHAPE_RULES` (:mod:`nodegrad.transforms.shape_rules`
  fills it), given the op's arguments and returning the result's :class:`ShapeDtype`;
- an op with neither raises :class:`~nodegrad.errors.ShapeOnlyError` naming it.

numpy's ufuncs of a shaped value are answered the same way (broadcast shapes, the dtype of
0-d stand-ins), and its functions go to nodegrad's numpy namespace as a traced value's do.
What only the values answer (``if x > 0``, ``float(x)``, ``np.nonzero(x)``, a boolean
mask's selection) raises :class:`~nodegrad.errors.ShapeOnlyError`. Nothing here allocates
an array of the shapes it reasons about: the cost is the program's length, not its sizes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.engine.levels import Interpreted, Level, find_top, next_stamp
from nodegrad.engine.record import forward_failed, register_interpreter
from nodegrad.engine.registry import ELEMENTWISE, MADE_OF_OPS, Op
from nodegrad.errors import AxisError, NodegradError, ShapeOnlyError, user_location
from nodegrad.numpy_api import FUNCTIONS, dispatch_function, dispatch_ufunc
from nodegrad.ops.traced_methods import give_array_face

__all__ = [
    "SHAPE_RULES",
    "ShapeDtype",
    "ShapeLevel",
    "Shaped",
    "interpret",
    "reduced_shape",
    "shape_of",
    "shape_rule",
    "stand_in",
]


class ShapeDtype:
    """The shape and dtype of an array, without its values: what :func:`eval_shape` gives
    for each array of a result, and what it takes in place of an argument.

    Parameters
    ----------
    shape : tuple of int
        The array's shape.
    dtype : numpy dtype or anything ``np.dtype`` accepts
        The array's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.ShapeDtype((2, 3), np.float32)
    ShapeDtype(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: Any, dtype: Any) -> None:
        self.shape: tuple[int, ...] = tuple(int(n) for n in shape)
        self.dtype: np.dtype[Any] = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of entries."""
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other: object) -> bool:
        return type(other) is ShapeDtype and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"ShapeDtype(shape={self.shape}, dtype={self.dtype})"


class ShapeLevel(Level):
    """One ``eval_shape`` call: when it began, its function's name, whether it still runs."""

    __slots__ = ("active", "name", "stamp")

    def __init__(self, name: str) -> None:
        self.name = name
        self.active = True
        self.stamp = next_stamp()

    def alive(self) -> bool:
        return self.active

    def describe(self) -> str:
        return self.name


def _operator(ufunc: np.ufunc, reflected: bool = False) -> Callable[[Any, Any], Any]:
    """A binary operator of a shaped value: the ufunc, answered by shape (see :func:`_ufunc`)."""

    def operator(self: Any, other: Any) -> Any:
        return _ufunc(ufunc, "__call__", (other, self) if reflected else (self, other), {})

    return operator


class Shaped(Interpreted):
    """A value ``eval_shape`` stands for: an array's shape and dtype, and no values.

    Its operators, array methods and numpy functions are a traced value's (each op is
    answered by :func:`interpret`); what reads its values raises
    :class:`~nodegrad.errors.ShapeOnlyError`.
    """

    __slots__ = ("_dtype", "_shape", "level")
    __array_priority__ = 1000
    noun = "shape-only"
    leaked = "a value eval_shape stood for"
    abstract = True
    calls_at_level = True
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays

    def __init__(self, shape: tuple[int, ...], dtype: Any, level: ShapeLevel) -> None:
        self._shape = tuple(shape)
        self._dtype = np.dtype(dtype)
        self.level = level

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    def below(self) -> Any:
        raise _read(self, "its values")

    def map_plain(self, fn: Any) -> Any:
        """The shape and dtype of ``fn`` of its values (see :meth:`call_plain`)."""
        return self.call_plain(fn, (self,), {})

    def call_plain(self, fn: Any, args: Any, kwargs: Any) -> Any:
        """The shapes and dtypes of ``fn(*args, **kwargs)``, a call on plain values that works
        entry by entry or along trailing axes (a cast, a sign, a scan). Where this value is
        the only array argument, ``fn`` runs on stand-ins of at most 2 and at most 3 entries
        along each axis, and where both results have their stand-in's shape (``fn`` keeps
        shapes), the result has this one; otherwise it runs on zero-strided stand-ins of the
        arguments' shapes, whose values no one reads (only the result's shape and dtype are
        kept): its cost is then its result's size."""
        items = _items(args) + _items(list(kwargs.values()))
        alone = sum(type(i) is Shaped or np.ndim(i) > 0 for i in items if isinstance(i, np.ndarray | Shaped)) == 1
        if alone:
            for most in (3, 2):
                small = tuple(min(n, most) for n in self.shape)
                kept = _quietly(fn, *_stand_ins(args, small), **_stand_ins_by_name(kwargs, small))
                if any(np.shape(o) != small for o in _results(kept)):
                    break
            else:
                return _shaped_results(kept, self.shape, self.level)
        return _shaped_results(_quietly(fn, *_stand_ins(args), **_stand_ins_by_name(kwargs)), None, self.level)

    def __repr__(self) -> str:
        return f"Shaped(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__

    def __len__(self) -> int:
        if not self.shape:
            msg = "len() of a 0-d value"
            raise TypeError(msg)
        return self.shape[0]

    def __iter__(self) -> Any:
        return (self[k] for k in range(len(self)))

    # What only the values answer.
    def __bool__(self) -> bool:
        raise _read(self, "bool() (an if or a while on it)")

    def __float__(self) -> float:
        raise _read(self, "float()")

    def __int__(self) -> int:
        raise _read(self, "int()")

    def __index__(self) -> int:
        raise _read(self, "its value as an index")

    def __complex__(self) -> complex:
        raise _read(self, "complex()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _read(self, "a plain array of it")

    def item(self, *args: Any) -> Any:
        """Refused: an entry's value."""
        raise _read(self, ".item()")

    def tolist(self) -> Any:
        """Refused: the values as a list."""
        raise _read(self, ".tolist()")

    def nonzero(self) -> Any:
        """Refused: how many entries are nonzero depends on the values."""
        raise _read(self, "np.nonzero (how many entries it finds depends on the values)")

    # Comparisons, masks and floor division give plain values under grad: shaped ones here.
    __lt__ = _operator(np.less)
    __le__ = _operator(np.less_equal)
    __gt__ = _operator(np.greater)
    __ge__ = _operator(np.greater_equal)
    __eq__ = _operator(np.equal)
    __ne__ = _operator(np.not_equal)
    __floordiv__ = _operator(np.floor_divide)
    __rfloordiv__ = _operator(np.floor_divide, reflected=True)
    __and__ = __rand__ = _operator(np.bitwise_and)
    __or__ = __ror__ = _operator(np.bitwise_or)
    __xor__ = __rxor__ = _operator(np.bitwise_xor)

    def __invert__(self) -> Any:
        return _ufunc(np.invert, "__call__", (self,), {})

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether any entry is true: a shaped bool."""
        return np.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether every entry is true: a shaped bool."""
        return np.all(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: Any = None) -> Any:
        """The index of the maximum: a shaped integer."""
        return np.argmax(self, axis=axis)

    def argmin(self, axis: Any = None) -> Any:
        """The index of the minimum: a shaped integer."""
        return np.argmin(self, axis=axis)

    def argsort(self, axis: int = -1) -> Any:
        """The indices that sort the values: shaped integers."""
        return np.argsort(self, axis=axis)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func in _SIGNATURE:
            return _SIGNATURE[func](*args, **kwargs)
        if func in VALUE_RULES:
            return _made(VALUE_RULES[func](*args, **kwargs), _level_of(args, kwargs))
        if func in FUNCTIONS:
            return dispatch_function(func, args, kwargs)
        raise _read(self, f"np.{getattr(func, '__name__', func)} (numpy's own function, which reads the values)")


give_array_face(Shaped)
_SHAPED = frozenset({Shaped})


def _stand_ins(args: Any, shape: tuple[int, ...] | None = None) -> list[Any]:
    """``args`` with each shaped value (also in tuples and lists) replaced by zeros of its
    dtype: of ``shape``, or zero-strided ones of its own shape."""
    found: list[Any] = []
    for a in args:
        if type(a) is tuple or type(a) is list:
            found.append(type(a)(_stand_ins(a, shape)))
        elif type(a) is Shaped:
            zero = np.zeros((), a.dtype)
            found.append(np.zeros(shape, a.dtype) if shape is not None else np.broadcast_to(zero, a.shape))
        else:
            found.append(a)
    return found


def _stand_ins_by_name(kwargs: dict[str, Any], shape: tuple[int, ...] | None = None) -> dict[str, Any]:
    return dict(zip(kwargs, _stand_ins(list(kwargs.values()), shape), strict=True))


def _results(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


def _shaped_results(out: Any, shape: tuple[int, ...] | None, level: ShapeLevel) -> Any:
    """A plain call's result as shaped values (of ``shape`` where given, else their own)."""
    made = [Shaped(np.shape(o) if shape is None else shape, np.result_type(o), level) for o in _results(out)]
    return tuple(made) if isinstance(out, tuple) else made[0]


def _read(value: Shaped, what: str) -> ShapeOnlyError:
    msg = (
        f"{what} of a value {value.level.describe()} knows only the shape and dtype of ({value!r}): eval_shape "
        f"computes no values; pass what the code branches on as a plain argument [at {user_location()}]"
    )
    return ShapeOnlyError(msg)


# -- the interpreter ---------------------------------------------------------------------------

#: The shape rules of the ops that are neither elementwise nor made of other ops, by op name:
#: ``rule(*args)`` gets the op's arguments (shaped values among them: read only their shape
#: and dtype) and returns the result's :class:`ShapeDtype` (a tuple of them for an op with
#: several results).
SHAPE_RULES: dict[str, Callable[..., Any]] = {}


def shape_rule(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the shape rule of the ops ``names``."""

    def register(rule: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            SHAPE_RULES[name] = rule
        return rule

    return register


def interpret(op: Op, args: tuple[Any, ...]) -> Any:
    """Answer ``op`` on ``args``, some shaped: its result's shape and dtype, as shaped values
    of the innermost ``eval_shape`` level among them."""
    top = find_top(args, _SHAPED, alive_for=op.name)
    if MADE_OF_OPS in op.traits:
        return op.forward(*args)  # its ops, answered here one by one
    if ELEMENTWISE in op.traits:
        return _made(_elementwise(op.forward, args, {}), top.level)
    rule = SHAPE_RULES.get(op.name)
    if rule is None:
        msg = (
            f"eval_shape: the op {op.name!r} has no shape rule: its result's shape is not known [at {user_location()}]"
        )
        raise ShapeOnlyError(msg)
    try:
        out = _quietly(rule, *args)  # (a rule may run numpy on stand-ins)
    except NodegradError:
        raise
    except Exception as exc:  # shapes that do not fit: the error the eager call raises, naming the op
        forward_failed(op, args, (), exc)
    return _made(out, top.level)


def _made(out: Any, level: ShapeLevel) -> Any:
    """A rule's answer as shaped values of ``level``."""
    if type(out) is tuple or type(out) is list:
        return type(out)(_made(o, level) for o in out)
    return Shaped(out.shape, out.dtype, level)


def _level_of(args: Any, kwargs: Any) -> ShapeLevel:
    found = find_top([*_items(args), *_items(list(kwargs.values()))], _SHAPED)
    return found.level


def _items(args: Any) -> list[Any]:
    found: list[Any] = []
    for a in args:
        found.extend(_items(a) if type(a) is tuple or type(a) is list else (a,))
    return found


def shape_of(value: Any) -> tuple[int, ...]:
    """The shape of an argument: a shaped value's, or numpy's of anything else."""
    return value.shape if type(value) is Shaped else np.shape(value)


def stand_in(value: Any) -> Any:
    """A 0-d stand-in of an argument's dtype, for finding what dtype a computation gives
    (numpy's promotion of a Python number, which takes the other's dtype, is kept)."""
    if type(value) is Shaped:
        return np.ones((), value.dtype)
    if isinstance(value, np.ndarray | np.generic):
        return np.ones((), value.dtype)
    return value


def _elementwise(forward: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> ShapeDtype:
    """An elementwise computation's result: the broadcast shape, the dtype of its 0-d run."""
    shape = np.broadcast_shapes(*(shape_of(a) for a in args if a is not None))
    return ShapeDtype(shape, np.result_type(_quietly(forward, *(stand_in(a) for a in args), **kwargs)))


def _quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` on stand-ins: what their values warn of (a log of 0, a singular matrix) is no
    one's concern, as no one's values they are."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- numpy's ufuncs and functions of shaped values -------------------------------------------------


def _ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    level = find_top(inputs, _SHAPED, alive_for=ufunc.__name__).level
    if kwargs.get("out") is not None or kwargs.get("where", True) is not True:
        msg = (
            f"np.{ufunc.__name__} with out= or where= under eval_shape: build the result instead [at {user_location()}]"
        )
        raise ShapeOnlyError(msg)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("out", "where")}
    if ufunc.signature is not None:  # a generalized ufunc (np.matmul): nodegrad's op answers
        return dispatch_ufunc(ufunc, method, inputs, kwargs)
    if method == "__call__":
        if ufunc.nout > 1:
            shape = np.broadcast_shapes(*(shape_of(a) for a in inputs))
            probes = _quietly(ufunc, *(stand_in(a) for a in inputs), **kwargs)
            return tuple(Shaped(shape, np.result_type(p), level) for p in probes)
        return _made(_elementwise(ufunc, inputs, kwargs), level)
    if method == "outer":
        probe = _quietly(ufunc, *(stand_in(a) for a in inputs), **kwargs)
        return Shaped(shape_of(inputs[0]) + shape_of(inputs[1]), np.result_type(probe), level)
    if method in ("reduce", "accumulate"):
        a, axis = inputs[0], kwargs.pop("axis", inputs[1] if len(inputs) > 1 else 0)
        keepdims = kwargs.pop("keepdims", False)
        probe = _quietly(getattr(ufunc, method), np.ones(1, stand_in(a).dtype), axis=0, **kwargs)
        shape = shape_of(a) if method == "accumulate" else reduced_shape(shape_of(a), axis, keepdims)
        return Shaped(shape, np.result_type(probe), level)
    msg = f"np.{ufunc.__name__}.{method} of a value eval_shape stands for [at {user_location()}]"
    raise ShapeOnlyError(msg)


def reduced_shape(shape: tuple[int, ...], axis: Any, keepdims: bool = False) -> tuple[int, ...]:
    """The shape a reduction over ``axis`` (``None``: every axis) leaves, as numpy's."""
    ndim = len(shape)
    axes = range(ndim) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
    found = set()
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            msg = f"axis {a} is out of bounds for an array of dimension {ndim}"
            raise AxisError(msg)
        found.add(a % ndim)
    if keepdims:
        return tuple(1 if k in found else n for k, n in enumerate(shape))
    return tuple(n for k, n in enumerate(shape) if k not in found)


def _like(a: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None, **kw: Any) -> ShapeDtype:
    made = shape_of(a) if shape is None else ((shape,) if np.ndim(shape) == 0 else tuple(shape))
    return ShapeDtype(made, stand_in(a).dtype if dtype is None else dtype)


def _index_of(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> ShapeDtype:
    return ShapeDtype(reduced_shape(shape_of(a), axis, keepdims), np.intp)


def _argsort(a: Any, axis: Any = -1, **kw: Any) -> ShapeDtype:
    shape = shape_of(a)
    return ShapeDtype((int(np.prod(shape, dtype=np.int64)),) if axis is None else shape, np.intp)


def _test(*args: Any, **kwargs: Any) -> ShapeDtype:
    return ShapeDtype(np.broadcast_shapes(*(shape_of(a) for a in args[:2] if a is not None)), np.bool_)


def _unary_test(x: Any, *args: Any, **kwargs: Any) -> ShapeDtype:
    return ShapeDtype(shape_of(x), np.bool_)


def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> ShapeDtype:
    return ShapeDtype(reduced_shape(shape_of(a), axis, keepdims), np.intp)


def _truth(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> ShapeDtype:
    return ShapeDtype(reduced_shape(shape_of(a), axis, keepdims), np.bool_)


def _rounded(a: Any, decimals: int = 0, out: Any = None) -> ShapeDtype:
    return ShapeDtype(shape_of(a), stand_in(a).dtype)


#: What numpy's own functions that give plain values (masks, indices, new arrays of a shape)
#: give of shaped values: their results' shapes and dtypes (see VALUE_FUNCTIONS), a tuple of
#: them for a function with several results. More are added by
#: :mod:`nodegrad.transforms.shape_rules` (``np.isin``, ``np.searchsorted``, ``np.digitize``,
#: ``np.histogram``).
VALUE_RULES: dict[Callable[..., Any], Callable[..., Any]] = {
    np.zeros_like: _like, np.ones_like: _like, np.empty_like: _like,
    np.argmax: _index_of, np.argmin: _index_of, np.argsort: _argsort, np.count_nonzero: _count_nonzero,
    np.isclose: _test, np.isfinite: _unary_test, np.isnan: _unary_test, np.isinf: _unary_test,
    np.iscomplex: _unary_test, np.isreal: _unary_test, np.isposinf: _unary_test, np.isneginf: _unary_test,
    np.round: _rounded, np.around: _rounded, np.any: _truth, np.all: _truth,
}  # fmt: skip

#: numpy's functions answered by the signature alone.
_SIGNATURE: dict[Callable[..., Any], Callable[..., Any]] = {
    np.shape: lambda a: shape_of(a),
    np.ndim: lambda a: len(shape_of(a)),
    np.size: lambda a, axis=None: int(np.prod(shape_of(a), dtype=np.int64)) if axis is None else shape_of(a)[axis],
    np.result_type: lambda *args: np.result_type(*(stand_in(a) for a in args)),
    np.iscomplexobj: lambda a: stand_in(a).dtype.kind == "c",
    np.isrealobj: lambda a: stand_in(a).dtype.kind != "c",
}


register_interpreter(Shaped, interpret)
