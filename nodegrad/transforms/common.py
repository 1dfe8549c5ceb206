"""What every transform does with its arguments and results.

Transforms nest by levels. Each call of a transform makes its own arena and turns the
differentiated arguments into its leaves; an argument already traced by an enclosing
transform becomes a leaf whose value is that transform's handle, so every op inside
records at both levels and every rule of the inner sweep records into the outer arena.
Results are lowered by one level on the way out (:func:`lower`): this arena's handles
become their values, which are plain arrays, or handles of the enclosing transform.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np

from nodegrad import ops
from nodegrad.engine.arena import Arena
from nodegrad.engine.cycles import unwalkable
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, RECORDING, Interpreted
from nodegrad.engine.staged import call_on, now
from nodegrad.engine.structure import (
    LEAF,
    UnwalkableError,
    differentiable_leaves,
    flatten,
    is_container,
    is_differentiable_leaf,
    leaves,
    map_unless_static,
    zip_leaves,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, StructureError
from nodegrad.ops.structured import leaf_view
from nodegrad.tree import zeros_like

__all__ = [
    "Transformed",
    "as_differentiated",
    "check_callable",
    "check_flag",
    "check_holomorphic_inputs",
    "check_scalar",
    "gradient_like",
    "leaf_params",
    "like_argument",
    "lower",
    "name_of",
    "normalize_argnums",
    "probe_cotangent",
    "rebuild",
    "resolve_argnums",
    "same_shapes",
    "snapshot",
    "split_output",
    "traced_vdot",
    "zero_tangent",
]


P = ParamSpec("P")
R = TypeVar("R", covariant=True)


class Transformed(Generic[P, R]):
    """What a transform returns: called like the function it wraps, with that function's
    name and docstring, and pickled as the transform applied to the function again, so a
    module-level function wrapped by ``grad`` travels to process pools and Dask workers.

    For a type checker, ``Transformed[P, R]`` takes the parameters ``P`` of the wrapped
    function and returns ``R``: ``grad(f)`` of ``f: Callable[P, float]`` is a
    ``Transformed[P, Any]``, so the arguments of a call are checked against ``f``'s."""

    def __init__(self, call: Callable[P, R], fun: Any, remake: tuple[Any, tuple[Any, ...], dict[str, Any]]) -> None:
        # Not merging fun's __dict__: a transformed function's own _call would come along.
        functools.update_wrapper(self, fun, updated=())
        self._call = call
        self._remake = remake

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._call(*args, **kwargs)

    def __reduce__(self) -> Any:
        return reachable_name(self) or (rebuild, self._remake)


def reachable_name(obj: Any) -> str | None:
    """``obj``'s qualified name when its module holds ``obj`` under it, else ``None``.

    A function decorated at module level (``@ng.custom_vjp``, ``@ng.checkpoint``) is
    pickled by that name, as a function is: its module's name now means the wrapper, so the
    function inside could not be pickled by reference.
    """
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    qualname = getattr(obj, "__qualname__", None)
    if module is None or not isinstance(qualname, str) or "<locals>" in qualname:
        return None
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return qualname if found is obj else None


def rebuild(transform: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``transform(*args, **kwargs)``: how a pickled transformed function is made again."""
    return transform(*args, **kwargs)


def check_flag(where: str, name: str, value: Any) -> None:
    """A transform's boolean option is ``True`` or ``False``, not anything truthy."""
    if not isinstance(value, bool | np.bool_):
        msg = f"{where}: {name} must be True or False, got {value!r}"
        raise ArgumentError(msg)


def check_callable(fun: Any, where: str) -> None:
    if not callable(fun):
        msg = f"{where} needs a function, got {type(fun).__name__}"
        raise ArgumentError(msg)


def name_of(transform: str, fun: Any) -> str:
    """``ng.grad(loss)``: how error messages name one transform of one function."""
    return f"ng.{transform}({getattr(fun, '__qualname__', None) or type(fun).__name__})"


def normalize_argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),)
    if not isinstance(argnums, (tuple, list)) or not all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums
    ):
        msg = f"argnums must be an int or a tuple of ints, got {argnums!r}"
        raise ArgumentError(msg)
    nums = tuple(int(a) for a in argnums)
    if not nums or len(set(nums)) != len(nums):
        msg = f"argnums must be an int or a non-empty tuple of distinct ints, got {argnums!r}"
        raise ArgumentError(msg)
    return nums


def resolve_argnums(nums: tuple[int, ...], nargs: int, fun: Callable[..., Any]) -> tuple[int, ...]:
    if nums == (0,) and nargs:
        return nums  # the common case
    for k in nums:
        if not -nargs <= k < nargs:
            name = getattr(fun, "__name__", repr(fun))
            msg = f"argnums {k} is out of range: {name} was called with {nargs} positional argument(s)"
            raise ArgumentError(msg)
    resolved = tuple(k % nargs for k in nums)
    if len(set(resolved)) != len(resolved):
        name = getattr(fun, "__name__", repr(fun))
        msg = (
            f"argnums {nums} name one argument twice ({name} was called with {nargs} positional argument(s)): "
            "each argument is differentiated once"
        )
        raise ArgumentError(msg)
    return resolved


def as_differentiated(value: Any) -> Any:
    """A differentiated argument as the transforms take it: an integer or boolean array
    becomes float64, as HIPS autograd differentiates one (its gradient is float64, and
    ``fun`` sees the floats); any other value as it is. A Python or numpy integer *number*
    is still refused where it becomes a leaf, as autograd refuses it, and integer arrays
    inside a structure stay static."""
    if type(value) is np.ndarray and value.dtype.kind in "biu":
        return value.astype(np.float64)
    return value


#: Libraries whose values a function sees as nodegrad's when passed and not differentiated:
#: the module that must be imported for one to exist, and the conversion (``None`` for a
#: value that is not one of them).
_SEEN_AS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("pandas", ops.tables.table_of),
    ("scipy.sparse", ops.sparse.sparse_matrix_of),
)


def as_seen(value: Any) -> Any:
    """An argument a transform does not differentiate, as its function sees it: each pandas
    DataFrame and Series in it (through dicts, lists and tuples) a table, each scipy.sparse
    matrix a SparseMatrix, as they are where differentiated. Costs one lookup per library
    where none of them was imported."""
    converts = [convert for module, convert in _SEEN_AS if module in sys.modules]
    return _seen(value, converts) if converts else value


def _seen(value: Any, converts: list[Callable[[Any], Any]]) -> Any:
    kind = type(value)
    if kind is np.ndarray or kind is float or kind is int:
        return value
    if kind is dict:
        return {k: _seen(v, converts) for k, v in value.items()}
    if kind is list or kind is tuple:
        return kind(_seen(v, converts) for v in value)
    for convert in converts:
        made = convert(value)
        if made is not None:
            return made
    return value


def leaf_params(
    arena: Arena, value: Any, name: str, leaves: list[Interpreted], layouts: list[Any], where: str = "grad"
) -> Any:
    """The differentiated argument ``value`` as user code sees it: each differentiable leaf
    a leaf node of ``arena`` of its own (appended to ``leaves``), in ``value``'s own
    structure (see :func:`~nodegrad.ops.structured.leaf_view`)."""
    try:
        return leaf_view(arena, value, name, leaves, layouts)
    except UnwalkableError:
        raise unwalkable(where, name, value) from None


def snapshot(traced: Any) -> Any:
    """A copy of a traced argument's containers, taken before the user's function runs: a
    function that replaces an entry of its argument (``batch["x"] = batch["x"] / 2``) must
    not change what the gradient is taken with respect to."""
    found, treedef = flatten(traced)
    return traced if treedef is LEAF else treedef.unflatten(found)


def like_argument(g: Any, original: Any) -> Any:
    """Give ``g`` the argument's own leaf types: Python float in, Python float out."""
    if type(original) is np.ndarray:
        return g  # an array's (a handle, of an enclosing transform or of vmap, stays one: _like_leaf)
    if not is_container(original):
        return _like_leaf(g, original)
    found, treedef = flatten(g)
    if treedef is LEAF:
        return g
    # g was built in original's structure (None for a static entry's whole subtree).
    pairs = zip_leaves(g, original)
    if len(pairs) != len(found):
        return g
    return treedef.unflatten([_like_leaf(x, like) for _, x, like in pairs])


def _like_leaf(g: Any, original: Any) -> Any:
    original = now(original)  # under replay: its type is its signature's
    if g is not None and isinstance(original, float | complex | np.inexact) and type(now(g)) is not type(original):
        if type(g) in INTERPRETED and type(g) not in RECORDING:
            # a handle stays one (a batched gradient holds one number per example); a staged one
            # is converted by a call the tape records
            return g
        return call_on(type(original), g)
    return g


def gradient_like(original: Any, grads: Iterator[Any], layout: Any = None) -> Any:
    """The gradient of the argument ``original`` from the gradients of its differentiable
    leaves, in the order :func:`~nodegrad.ops.structured.leaf_view` made them leaves: an
    instance of its own container types, ``None`` at static fields and at entries holding
    no floats, each leaf of its own type (Python float in, Python float out)."""
    if type(original) is np.ndarray:
        return next(grads)  # the common case: an array's gradient is an array like it
    if type(original) in INTERPRETED:  # a handle is one leaf
        return like_argument(next(grads), original)
    if layout is None:
        found, treedef = flatten(original)
        if treedef is LEAF:
            return like_argument(next(grads), original)
        static = treedef.static_leaves()
        chosen = [not s and is_differentiable_leaf(leaf) for leaf, s in zip(found, static, strict=True)]
    else:
        found, treedef, chosen = layout  # as leaf_view took it apart
    made = [
        (next(grads) if type(leaf) is np.ndarray else _like_leaf(next(grads), leaf)) if take else None
        for leaf, take in zip(found, chosen, strict=True)
    ]
    return treedef.unflatten(made, static_as_none=True)


def lower(value: Any, arena: Arena) -> Any:
    """``value`` with the handles of ``arena`` replaced by their values, inside any
    structure: what a transform returns. Handles of enclosing arenas stay as they are."""
    if type(value) in INTERPRETED:
        return value.below() if value.level is arena else value
    found, treedef = flatten(value)
    if treedef is LEAF:
        return value
    return treedef.unflatten(
        [leaf.below() if type(leaf) in INTERPRETED and leaf.level is arena else leaf for leaf in found]
    )


def split_output(out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        msg = f"with has_aux=True the function must return a pair (output, aux), got {type(out).__name__}"
        raise StructureError(msg)
    return out[0], out[1]


def check_scalar(out: Any, holomorphic: bool = False) -> None:
    """``out`` is what ``grad`` can differentiate: a real scalar, or with ``holomorphic``
    a complex one (JAX's rule: a complex output has no gradient of its own)."""
    value = unwrap(out)
    if type(value) is np.float64 and not holomorphic:
        return  # the commonest case: a reduction's float64 scalar
    if type(value) in INTERPRETED:  # batched, staged, shaped: the shape and dtype user code sees
        shape, dtype = tuple(value.shape), np.dtype(value.dtype)
    elif isinstance(value, (np.ndarray, np.generic, int, float, complex)):
        shape, dtype = np.shape(value), np.result_type(value)
    else:
        msg = f"grad needs a function returning a real scalar, got {type(value).__name__}"
        raise DtypeError(msg)
    if dtype.kind not in "biufc":
        msg = f"grad needs a function returning a real scalar, got {type(value).__name__} of dtype {dtype}"
        raise DtypeError(msg)
    if holomorphic and dtype.kind != "c":
        msg = f"grad with holomorphic=True needs a function returning a complex scalar, got dtype {dtype}"
        raise DtypeError(msg)
    if not holomorphic and dtype.kind == "c":
        msg = (
            f"grad needs a function returning a real scalar, got dtype {dtype}: for the derivative "
            "of a holomorphic function pass holomorphic=True; for other complex outputs use nodegrad.vjp"
        )
        raise DtypeError(msg)
    if int(np.prod(shape, dtype=np.int64)) != 1:
        msg = f"grad needs a function with a scalar output, got shape {shape}; use nodegrad.vjp for non-scalar outputs"
        raise ShapeError(msg)


def check_holomorphic_inputs(where: str, values: Sequence[Any]) -> None:
    """With ``holomorphic=True`` every differentiated leaf must be complex (as in JAX): a
    holomorphic derivative with respect to a real value is not defined."""
    for k, value in enumerate(values):
        for path, leaf in differentiable_leaves(value):
            if np.result_type(unwrap(leaf)).kind != "c":
                msg = (
                    f"{where} with holomorphic=True needs complex arguments, but argument {k}{path} has dtype "
                    f"{np.result_type(unwrap(leaf))}: cast it with .astype(complex)"
                )
                raise DtypeError(msg)


def traced_vdot(a: Any, b: Any) -> Any:
    """``sum(a * b)`` over the float leaves of two structures, recorded as ops (dict
    entries paired by key)."""
    total: Any = 0.0
    for _, x, y in zip_leaves(a, b):
        if x is not None and y is not None and is_differentiable_leaf(x):
            total = total + ops.sum(ops.multiply(x, y))
    return total


def same_shapes(where: str, value: Any, other: Any) -> None:
    """``other`` has ``value``'s structure and, at every float leaf, its shape."""
    try:
        pairs = list(zip_leaves(value, other))
    except UnwalkableError:
        raise unwalkable(where, "the direction", other) from None
    for path, leaf, other_leaf in pairs:
        if not is_differentiable_leaf(leaf):
            continue
        try:
            other_shape = np.shape(other_leaf)
        except ValueError as exc:  # a ragged list
            msg = f"{where}: the direction{path} is not an array: {exc}"
            raise StructureError(msg) from None
        if np.shape(leaf) != other_shape:
            msg = f"{where}: the direction{path} has shape {np.shape(other_leaf)}, the point {np.shape(leaf)}"
            raise ShapeError(msg)
        if np.iscomplexobj(unwrap(other_leaf)) and not np.iscomplexobj(unwrap(leaf)):
            msg = (
                f"{where}: the direction{path} is complex but the point is real ({np.result_type(unwrap(leaf))}): a "
                "real value moves along real directions only"
            )
            raise DtypeError(msg)


def zero_tangent(value: Any, where: str = "jvp") -> Any:
    """Zeros shaped like each float leaf of ``value``; ``None`` at its other leaves."""
    if not is_container(value) and not is_differentiable_leaf(value):
        msg = f"{where}: the output must hold floating-point values, got {type(value).__name__}"
        raise DtypeError(msg)
    return zeros_like(value)


def probe_cotangent(value: Any, where: str = "jvp") -> Any:
    """Values drawn from a fixed seed in every float slot of ``value`` (same dtypes, complex
    parts in both), ``None`` elsewhere: the point at which forward mode's stand-in cotangent
    is swept back.

    The JVP does not depend on that point (a VJP is linear in its cotangent), but the rules
    that test what follows their output (the phases of complex eigenvectors, repeated
    singular values) read the cotangent's value: a random point shows them whether the
    function depends on the choice, as reverse mode's cotangent does, where zeros would
    hide it. The seed is fixed, so a computation repeats exactly."""
    zero_tangent(value, where)
    rng = np.random.default_rng(0x6E67)

    def draw(x: Any) -> Any:
        if not is_differentiable_leaf(x):
            return None
        shape, dtype = np.shape(x), np.result_type(x)
        drawn = rng.standard_normal(shape)
        if np.issubdtype(dtype, np.complexfloating):
            drawn = drawn + 1j * rng.standard_normal(shape)
        return x.__class__(drawn) if isinstance(x, float) else np.asarray(drawn, dtype=dtype)

    return map_unless_static(draw, value)


def traced_leaves(value: Any) -> list[Interpreted]:
    try:
        return [leaf for leaf in leaves(value) if type(leaf) in DIFFERENTIATING]
    except UnwalkableError:
        raise unwalkable("grad", "an argument", value) from None
