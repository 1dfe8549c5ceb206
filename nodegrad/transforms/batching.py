"""``vmap``: a function of one example, run on a batch of them at once.

Each call makes a :class:`~nodegrad.engine.batched.BatchLevel`; the arguments' batched
leaves become :class:`~nodegrad.engine.batched.Batched` values of it (their batch axis
moved to the front), every op they reach runs once for the whole batch by its batching
rule (:mod:`nodegrad.ops.batching`), and the results' batch axes go where ``out_axes``
says. Levels nest with each other and with every differentiating transform, in any order:
``vmap(grad(f))`` differentiates one example at a time for every example at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ParamSpec

import numpy as np

from nodegrad.engine.batched import Batched, BatchLevel
from nodegrad.engine.levels import INTERPRETED, check_alive
from nodegrad.engine.record import interpreting
from nodegrad.engine.shared import plain_result, shared
from nodegrad.engine.structure import LEAF, flatten
from nodegrad.errors import ArgumentError, ShapeError, StructureError
from nodegrad.transforms.common import Transformed, as_seen, check_callable, name_of

__all__ = ["vmap"]

P = ParamSpec("P")

#: An axis specification: an int, ``None`` (not batched), or a structure prefix of the
#: value holding them.
Axes = Any


def vmap(
    fun: Callable[P, Any],
    in_axes: Axes = 0,
    out_axes: Axes = 0,
    *,
    axis_size: int | None = None,
    chunk_size: int | None = None,
) -> Transformed[P, Any]:
    """Make a function that maps ``fun`` over an axis of its arguments, as one batched call.

    ``fun`` is written for one example; the returned function takes a batch of them and
    returns ``fun``'s results stacked, computed by running each op once for the whole batch
    (an op without a batching rule of its own runs once per example, see the docs).

    Parameters
    ----------
    fun : callable
        The function of one example. Its arguments and results may be arrays, Python
        numbers, dicts, attrs records, dataclasses, named tuples, lists and tuples, nested.
    in_axes : int, None or tuple, optional
        The axis of each positional argument that holds the examples: an int (negative
        counts from the end), ``None`` (not batched: the same for every example), or a
        tuple with one entry per positional argument, each an int, ``None`` or a structure
        prefix of its argument (a dict, record or list mirroring it, with int or ``None``
        leaves). Keyword arguments are batched along axis 0. Leaves that are not arrays
        (strings, ints, ``None``) and fields marked static pass through unbatched.
    out_axes : int, None or structure, optional
        Where the batch axis goes in each result: as ``in_axes``, a prefix of the result's
        structure. ``None`` for a result that does not depend on the example.
    axis_size : int, optional
        The number of examples, needed when no argument is batched (the results are then
        repeated), and checked against the batched arguments otherwise.
    chunk_size : int, optional
        Compute ``chunk_size`` examples at a time, each chunk's results written into the
        result's arrays along their ``out_axes`` as it is made: the same result, with a
        peak memory of the result and one chunk's work.

    Returns
    -------
    callable
        Called with the batched arguments; returns the batched results.

    Raises
    ------
    ShapeError
        If batched arguments' axes hold different numbers of examples, or an axis is out
        of range (naming the argument's key path and the sizes).
    StructureError
        If ``in_axes`` or ``out_axes`` does not match the structure of the arguments or
        results.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> w = np.array([1.0, 2.0])
    >>> ng.vmap(lambda x: x @ w)(np.array([[1.0, 1.0], [0.0, 3.0]]))
    array([3., 6.])

    Per-example gradients of a dict of parameters, one row of ``x`` per example:

    >>> loss = lambda p, x: np.sum((x * p["w"] + p["b"]) ** 2)
    >>> p = {"w": np.array([1.0, 2.0]), "b": 0.5}
    >>> g = ng.vmap(ng.grad(loss), in_axes=(None, 0))(p, np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> g["w"].shape, g["b"]
    ((2, 2), array([4., 6.]))
    """
    check_callable(fun, "vmap")
    name = name_of("vmap", fun)
    _check_axes_spec(name, "in_axes", in_axes, top=True)
    _check_axes_spec(name, "out_axes", out_axes, top=False)
    for option, value in (("axis_size", axis_size), ("chunk_size", chunk_size)):
        if value is not None and (not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 0):
            msg = f"{name}: {option} must be a non-negative int, got {value!r}"
            raise ArgumentError(msg)
    if chunk_size == 0:
        msg = f"{name}: chunk_size must be at least 1"
        raise ArgumentError(msg)

    def batched_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if len(axes) != len(args):
            msg = (
                f"{name}: in_axes has {len(axes)} entries for {len(args)} positional argument(s); give one per argument"
            )
            raise StructureError(msg)
        found = [_batch_axes(name, a, spec, f"args[{k}]") for k, (a, spec) in enumerate(zip(args, axes, strict=True))]
        found += [_batch_axes(name, v, 0, f"kwargs[{k!r}]") for k, v in kwargs.items()]
        size = _size(name, found, axis_size)
        call = _Call(fun, name, len(args), list(kwargs), out_axes)
        if chunk_size is not None and size > chunk_size:
            return _in_chunks(call, found, size, chunk_size)
        return _run(call, found, size)

    options = {"in_axes": in_axes, "out_axes": out_axes, "axis_size": axis_size, "chunk_size": chunk_size}
    remake = (vmap, (fun,), options)
    return Transformed(batched_fun, fun, remake)


# -- axis specifications ----------------------------------------------------------------------


def _check_axes_spec(name: str, what: str, spec: Axes, top: bool) -> None:
    leaves, treedef = flatten(spec)
    for leaf, static in zip(leaves, treedef.static_leaves(), strict=True):
        if static:
            continue  # a record's static field, written as the record has it: never an axis
        if leaf is not None and (not isinstance(leaf, int | np.integer) or isinstance(leaf, bool)):
            msg = f"{name}: {what} holds {leaf!r}; its entries must be ints or None"
            raise ArgumentError(msg)
    if top and isinstance(spec, list):
        msg = f"{name}: in_axes must be an int, None or a tuple (one entry per positional argument), got a list"
        raise ArgumentError(msg)


def _matched(name: str, what: str, value: Any, spec: Axes, root: str) -> tuple[list[Any], Any, list[str], list[Any]]:
    """``value``'s leaves, treedef and key paths, with the axis ``spec`` gives each leaf
    (a prefix of ``value``'s structure, its leaves int or None)."""
    paths: list[str] = []
    leaves, treedef = flatten(value, paths, root)
    spec_paths: list[str] = []
    spec_leaves, spec_def = flatten(spec, spec_paths, root)
    if spec_def is LEAF:
        return leaves, treedef, paths, [spec] * len(leaves)
    axes: list[Any] = []
    used = set()
    for path in paths:
        for k, prefix in enumerate(spec_paths):
            if path == prefix or path.startswith((prefix + "[", prefix + ".")):
                axes.append(spec_leaves[k])
                used.add(k)
                break
        else:
            msg = (
                f"{name}: {what} does not match the structure at {path}: the {what} given there ({spec!r}) has no "
                "entry for it"
            )
            raise StructureError(msg)
    unused = [spec_paths[k] for k in range(len(spec_paths)) if k not in used]
    if unused:
        msg = f"{name}: {what} has an entry at {unused[0]}, which {root} does not have"
        raise StructureError(msg)
    return leaves, treedef, paths, axes


class _Batch:
    """One argument taken apart: its leaves, treedef, key paths, and each leaf's batch axis
    (normalized, ``None`` for a leaf that is not batched)."""

    __slots__ = ("axes", "leaves", "paths", "treedef")

    def __init__(self, leaves: list[Any], treedef: Any, paths: list[str], axes: list[int | None]) -> None:
        self.leaves = leaves
        self.treedef = treedef
        self.paths = paths
        self.axes = axes

    @property
    def shape(self) -> tuple[Any, list[str], list[int | None]]:
        """Everything but the leaves: what a chunk of the argument shares with it."""
        return self.treedef, self.paths, self.axes


def _is_array(leaf: Any) -> bool:
    return isinstance(leaf, np.ndarray) or type(leaf) in INTERPRETED


def _batch_axes(name: str, value: Any, spec: Axes, root: str) -> _Batch:
    leaves, treedef, paths, axes = _matched(name, "in_axes", value, spec, root)
    statics = treedef.static_leaves()
    found: list[int | None] = []
    for leaf, path, axis, static in zip(leaves, paths, axes, statics, strict=True):
        if type(leaf) is Batched:
            check_alive(leaf, f"{name}: {path}")
        if axis is None or static or not _is_array(leaf):
            if axis is not None and not static and isinstance(leaf, float | complex | np.generic):
                msg = f"{name}: {path} is a number ({leaf!r}), which has no axis {axis} to batch; give it in_axes None"
                raise ShapeError(msg)
            found.append(None)
            continue
        ndim = np.ndim(leaf)
        if not -ndim <= axis < ndim:
            msg = f"{name}: in_axes {axis} is out of range for {path}, of shape {np.shape(leaf)}"
            raise ShapeError(msg)
        found.append(int(axis) % ndim)
    return _Batch(leaves, treedef, paths, found)


def _size(name: str, batches: list[_Batch], axis_size: int | None) -> int:
    sizes: dict[str, int] = {}
    for batch in batches:
        for leaf, path, axis in zip(batch.leaves, batch.paths, batch.axes, strict=True):
            if axis is not None:
                sizes[path] = np.shape(leaf)[axis]
    if axis_size is not None:
        sizes = {"axis_size": int(axis_size), **sizes}
    if not sizes:
        msg = f"{name}: no argument is batched (every in_axes is None or meets no array): give axis_size"
        raise ArgumentError(msg)
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{path}: {n}" for path, n in sizes.items())
        msg = f"{name}: the batched axes hold different numbers of examples ({listed})"
        raise ShapeError(msg)
    return next(iter(sizes.values()))


# -- running the batch ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Call:
    """One call of a vmapped function: what every chunk of it shares."""

    fun: Callable[..., Any]
    name: str
    nargs: int  # how many of the arguments are positional (the keyword ones follow)
    keys: list[str]  # the keyword arguments' names
    out_axes: Axes


def _run(call: _Call, batches: list[_Batch], size: int) -> Any:
    """``call`` on ``size`` examples, the arguments taken apart in ``batches``."""
    fun, name, nargs, keys, out_axes = call.fun, call.name, call.nargs, call.keys, call.out_axes
    level = BatchLevel(size, name)
    interpreting(True)
    try:
        # A DataFrame (a sparse matrix) the examples share is a table (a SparseMatrix) inside,
        # as under every transform.
        values = [as_seen(_batched_argument(batch, level)) for batch in batches]
        out = fun(*values[:nargs], **dict(zip(keys, values[nargs:], strict=True)))
        return _unbatched_result(name, out, level, out_axes)
    finally:
        level.active = False
        interpreting(False)


def _batched_argument(batch: _Batch, level: BatchLevel) -> Any:
    made = [
        _unbatched_argument(leaf) if axis is None else Batched(leaf if axis == 0 else np.moveaxis(leaf, axis, 0), level)
        for leaf, axis in zip(batch.leaves, batch.axes, strict=True)
    ]
    return made[0] if batch.treedef is LEAF else batch.treedef.unflatten(made)


def _unbatched_argument(leaf: Any) -> Any:
    # A plain array the examples share: a view numpy's own indexing by a batched index
    # cannot bypass (see nodegrad.engine.shared). Handles and other leaves as given.
    return shared(leaf) if type(leaf) is np.ndarray else leaf  # (replay's stand-in for one is not)


def _unbatched_result(name: str, out: Any, level: BatchLevel, out_axes: Axes) -> Any:
    leaves, treedef, paths, axes = _matched(name, "out_axes", out, out_axes, "the result")
    made = [
        leaf if static else _placed(name, plain_result(leaf), path, axis, level)  # a static field is never batched
        for leaf, path, axis, static in zip(leaves, paths, axes, treedef.static_leaves(), strict=True)
    ]
    return made[0] if treedef is LEAF else treedef.unflatten(made)


def _placed(name: str, leaf: Any, path: str, axis: int | None, level: BatchLevel) -> Any:
    """One result leaf with its batch axis at ``axis``: a batched value's examples moved
    there, a value the same for every example repeated along it."""
    batched = type(leaf) is Batched and leaf.level is level
    if axis is None:
        if batched:
            msg = f"{name}: out_axes is None at {path}, but the result there differs from example to example"
            raise StructureError(msg)
        return leaf
    if batched:
        value = leaf.value
        ndim = np.ndim(value)
        if not -ndim <= axis < ndim:
            msg = f"{name}: out_axes {axis} is out of range for {path}, whose examples have shape {leaf.shape}"
            raise ShapeError(msg)
        value = plain_result(value)  # a shared table's view, batched by a rule that kept it
        return value if axis % ndim == 0 else np.moveaxis(value, 0, axis)
    if not (_is_array(leaf) or isinstance(leaf, float | complex | int | np.generic)):
        return leaf  # a string, None, a static value: the same for every example
    # A number or an array the same for every example (True, 3, np.float32(2)...): repeated
    # along the batch axis, in numpy's dtype for it, as stacking a loop's results gives.
    ndim = np.ndim(leaf) + 1
    if not -ndim <= axis < ndim:
        msg = f"{name}: out_axes {axis} is out of range for {path}, of shape {np.shape(leaf)}"
        raise ShapeError(msg)
    return np.repeat(np.expand_dims(leaf, axis), level.size, axis=axis)


def _in_chunks(call: _Call, batches: list[_Batch], size: int, chunk: int) -> Any:
    """The batch ``chunk`` examples at a time: each chunk's results are written into arrays
    made for every example once the first chunk shows their shapes, and dropped, so the
    memory is the result's and one chunk's work."""
    joined: list[_Joined] = []
    treedef: Any = None
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        # The next chunk's work starts with only the result's arrays and the arguments alive:
        # the previous chunk's treedef goes too (its template is that chunk's result).
        treedef = None
        part = [
            _Batch([_sliced(leaf, axis, start, stop) for leaf, axis in zip(b.leaves, b.axes, strict=True)], *b.shape)
            for b in batches
        ]
        treedef = _write_chunk(call, joined, _run(call, part, stop - start), size, start, stop)
        del part
    made = [j.value() for j in joined]
    return made[0] if treedef is LEAF else treedef.unflatten(made)


def _write_chunk(call: _Call, joined: list[_Joined], result: Any, size: int, start: int, stop: int) -> Any:
    """Write one chunk's ``result`` into ``joined`` (made from the first chunk); its treedef.

    A function of its own, so that no reference to the chunk's leaves survives it."""
    leaves, treedef, paths, axes = _matched(call.name, "out_axes", result, call.out_axes, "the result")
    if not joined:
        statics = treedef.static_leaves()  # a static field is never batched, whatever out_axes says
        joined.extend(
            _Joined(call.name, leaf, path, None if static else axis, size)
            for leaf, path, axis, static in zip(leaves, paths, axes, statics, strict=True)
        )
    for j, leaf in zip(joined, leaves, strict=True):
        j.put(leaf, start, stop)
    return treedef


class _Joined:
    """One result leaf of a chunked call, filled chunk by chunk: an array made for every
    example that each chunk's plain array is written into along the leaf's out axis, or,
    for chunks that are not plain arrays (traced values, which an enclosing transform
    differentiates, or batched values of an enclosing ``vmap``), the chunks themselves,
    concatenated at the end. A leaf without an out axis, or not an array (a string,
    ``None``), is the first chunk's: the same for every example."""

    __slots__ = ("axis", "buffer", "first", "name", "path", "pieces")

    def __init__(self, name: str, first: Any, path: str, axis: int | None, size: int) -> None:
        self.name, self.path = name, path
        self.axis: int | None = None
        self.first: Any = first
        self.buffer: np.ndarray | None = None
        self.pieces: list[Any] = []
        if axis is None or not _is_array(first):
            return
        self.axis = int(axis) % np.ndim(first)  # ``_placed`` checked the range
        self.first = None  # the chunk is written below: holding it would keep a second chunk alive
        if type(first) is np.ndarray:
            shape = list(first.shape)
            shape[self.axis] = size
            self.buffer = np.empty(shape, first.dtype)

    def put(self, leaf: Any, start: int, stop: int) -> None:
        if self.axis is None:
            return
        if self.buffer is not None and not self._fits(leaf, stop - start):
            self._unbuffer(start)
        if self.buffer is None:
            self.pieces.append(leaf)
            return
        self.buffer[(slice(None),) * self.axis + (slice(start, stop),)] = leaf

    def _fits(self, leaf: Any, count: int) -> bool:
        """Whether ``leaf`` is a plain array this buffer holds as it is (its shape with
        ``count`` examples, its dtype): a chunk that is not (another dtype, a traced value)
        is joined as ``np.concatenate`` would, never cast into the first chunk's dtype."""
        assert self.buffer is not None
        expected = list(self.buffer.shape)
        expected[self.axis or 0] = count
        if np.shape(leaf) != tuple(expected):
            msg = (
                f"{self.name}: {self.path} has shape {np.shape(leaf)} in one chunk, where the first chunk's "
                f"examples gave {tuple(expected)}: its shape must not depend on the example"
            )
            raise ShapeError(msg)
        return type(leaf) is np.ndarray and leaf.dtype == self.buffer.dtype

    def _unbuffer(self, start: int) -> None:
        assert self.buffer is not None
        self.pieces = [self.buffer[(slice(None),) * (self.axis or 0) + (slice(0, start),)]]
        self.buffer = None

    def value(self) -> Any:
        if self.axis is None:
            return self.first
        if self.buffer is not None:
            return self.buffer
        return np.concatenate(self.pieces, axis=self.axis)


def _sliced(leaf: Any, axis: int | None, start: int, stop: int) -> Any:
    if axis is None:
        return leaf
    index = (slice(None),) * axis + (slice(start, stop),)
    return leaf[index]
