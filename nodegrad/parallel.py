"""Data-parallel gradients over a dataset partitioned by rows, computed with Dask.

The dataset is any structure (a dict of columns, a record, a list, ...) whose partitioned
leaves are Dask arrays split into the same row blocks, or Dask DataFrames (and Series) with
as many partitions. Each block of rows becomes one task that runs
:func:`nodegrad.value_and_grad` on plain values (numpy blocks, pandas partitions); the
per-block values and gradients are then added in a tree of tasks. Nothing of the engine is
shared between tasks, so the tasks run on threads, processes or a Dask cluster alike
(whatever scheduler computes them). The gradient with respect to the dataset itself is a
lazy Dask collection of the blocks' gradients, split as the dataset is.

Dask is an optional dependency: ``pip install "nodegrad[dask]"``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.structure import flatten_with_paths, map_with_paths
from nodegrad.errors import ArgumentError, ShapeError, StructureError
from nodegrad.transforms import value_and_grad as _value_and_grad
from nodegrad.tree import add, scale, zeros_like

__all__ = ["value_and_grad"]

_REDUCTIONS = ("mean", "sum")

# Where the arguments of ``fun`` sit in the function each task differentiates,
# ``(params, parts, [template], *args)``: the dataset is its partitions (position 1) and
# the rest of its structure (position 2); the extra arguments move one place up.
_PARTS, _REST = 1, 2


def _dask() -> Any:
    try:
        return importlib.import_module("dask")
    except ImportError as exc:
        msg = 'nodegrad.parallel needs Dask: pip install "nodegrad[dask]"'
        raise ImportError(msg) from exc


def _from_dask(value: Any, names: tuple[str, ...]) -> bool:
    # Checked by name first, so plain data never imports Dask.
    cls = type(value)
    return cls.__name__ in names and cls.__module__.startswith("dask")


def _is_dask_array(value: Any) -> bool:
    if not _from_dask(value, ("Array",)):
        return False
    from dask.array import Array

    return isinstance(value, Array)


def _is_dask_table(value: Any) -> bool:
    if not _from_dask(value, ("DataFrame", "Series")):
        return False
    import dask.dataframe as dd

    return isinstance(value, dd.DataFrame | dd.Series)


def _is_partitioned(value: Any) -> bool:
    return _is_dask_array(value) or _is_dask_table(value)


def _kind(value: Any) -> str:
    return "Dask array" if _is_dask_array(value) else f"Dask {type(value).__name__}"


class _Slot:
    """Where a block of the ``k``-th partitioned leaf goes in a partition's batch."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k

    def __repr__(self) -> str:
        return f"_Slot({self.k})"


def _check_arrays(leaves: list[tuple[str, Any]]) -> None:
    """Dask arrays need a row axis, known row blocks, and the same ones."""
    arrays = [(path, leaf) for path, leaf in leaves if _is_dask_array(leaf)]
    for path, leaf in arrays:
        if leaf.ndim == 0:
            msg = f"value_and_grad: {path} is a 0-d Dask array; partitioned leaves need a row axis"
            raise ShapeError(msg)
        if any(np.isnan(n) for n in leaf.chunks[0]):
            msg = (
                f"value_and_grad: the row blocks of {path} have unknown sizes (after a boolean mask, say); "
                "call .compute_chunk_sizes() on it first"
            )
            raise ShapeError(msg)
        first_path, first = arrays[0]
        if leaf.chunks[0] != first.chunks[0]:
            msg = (
                f"value_and_grad: {path} is split into row blocks {leaf.chunks[0]}, but {first_path} into "
                f"{first.chunks[0]}; rechunk them alike (x.rechunk({{0: y.chunks[0]}}))"
            )
            raise ShapeError(msg)


def _count(leaf: Any) -> int:
    return len(leaf.chunks[0]) if _is_dask_array(leaf) else int(leaf.npartitions)


def _check_counts(leaves: list[tuple[str, Any]]) -> None:
    """Every partitioned leaf has as many row blocks (their lengths are compared by the
    tasks, which see them: a table's partitions need not have known lengths)."""
    first_path, first = leaves[0]
    for path, leaf in leaves[1:]:
        if _count(leaf) != _count(first):
            msg = (
                f"value_and_grad: {path} is split into {_count(leaf)} row blocks, but {first_path} into "
                f"{_count(first)}; split them alike (a table's partition lengths are "
                "tuple(ddf.map_partitions(len).compute()), an array's x.rechunk({0: lengths}))"
            )
            raise ShapeError(msg)


def _blocks(leaf: Any) -> list[Any]:
    """The row blocks of a partitioned leaf, as delayed values."""
    if _is_dask_table(leaf):
        return list(leaf.to_delayed())
    # One block per row range: the other axes are joined into a single chunk.
    whole = leaf.rechunk({axis: -1 for axis in range(1, leaf.ndim)}) if leaf.ndim > 1 else leaf
    return list(whole.to_delayed().reshape(-1))


def _row_blocks(data: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """Split ``data`` into a template (each Dask leaf replaced by a :class:`_Slot`) and
    its Dask leaves with their key paths."""
    leaves = [(path, leaf) for path, leaf in flatten_with_paths(data, "data") if _is_partitioned(leaf)]
    if not leaves:
        return data, []
    _check_arrays(leaves)
    _check_counts(leaves)
    slots = iter(range(len(leaves)))
    template = map_with_paths(lambda _, leaf: _Slot(next(slots)) if _is_partitioned(leaf) else leaf, data)
    return template, leaves


def _fill(template: Any, blocks: Sequence[Any]) -> Any:
    return map_with_paths(lambda _, leaf: blocks[leaf.k] if isinstance(leaf, _Slot) else leaf, template)


def _filled(fun: Callable[..., Any]) -> Callable[..., Any]:
    def call(params: Any, parts: list[Any], rest: list[Any], *args: Any) -> Any:
        return fun(params, _fill(rest[0], parts), *args)

    return call


def _rows(paths: list[str], parts: list[Any], i: int) -> int:
    """The rows of partition ``i``, the same in each of its leaves' blocks."""
    rows = len(parts[0])
    for path, part in zip(paths[1:], parts[1:], strict=True):
        if len(part) != rows:
            msg = (
                f"value_and_grad: block {i} of {path} has {len(part)} rows, but that of {paths[0]} has {rows}; "
                "the partitioned leaves must be split into the same row blocks"
            )
            raise ShapeError(msg)
    return rows


def _partition(
    fun: Callable[..., Any],
    params: Any,
    template: Any,
    parts: list[Any],
    args: tuple[Any, ...],
    where: tuple[int, list[str]],
    inner: tuple[int, ...],
    mean: bool,
) -> tuple[int, Any, tuple[Any, ...]] | None:
    """One task: the rows of one partition, and the value and gradients of ``fun`` on it
    (times its rows for a mean: the sum divides by all rows). ``None`` without rows."""
    rows = _rows(where[1], parts, where[0])
    if not rows:
        return None
    value, grads = _value_and_grad(_filled(fun), inner)(params, parts, [template], *args)
    # The partitions' own gradients stay out of the sum: see _partition_gradient.
    grads = tuple(None if k == _PARTS else g for k, g in zip(inner, grads, strict=True))
    return (rows, value * rows, scale(grads, rows)) if mean else (rows, value, grads)


def _partition_gradient(
    fun: Callable[..., Any],
    params: Any,
    template: Any,
    parts: list[Any],
    args: tuple[Any, ...],
    where: tuple[int, list[str]],
    inner: tuple[int, ...],
    total: int | None,
) -> list[Any]:
    """One task of the dataset's gradient: each partitioned leaf's block of it, for one
    partition (weighted by its share of ``total`` rows for a mean)."""
    rows = _rows(where[1], parts, where[0])
    if not rows:
        return zeros_like(parts)
    _, grads = _value_and_grad(_filled(fun), inner)(params, parts, [template], *args)
    found = grads[inner.index(_PARTS)]
    return found if total is None else scale(found, rows / total)


def _combine(parts: list[tuple[int, Any, Any] | None]) -> tuple[int, Any, Any] | None:
    found = [part for part in parts if part is not None]
    if not found:
        return None
    rows, value, grads = found[0]
    for n, v, g in found[1:]:
        rows, value, grads = rows + n, value + v, add(grads, g)
    return rows, value, grads


def _lazy_gradient(leaf: Any, blocks: list[Any]) -> Any:
    """A Dask collection of a partitioned leaf's gradient from its blocks (delayed), split
    as the leaf is; ``None`` for a leaf with nothing to differentiate."""
    if _is_dask_array(leaf):
        if np.dtype(leaf.dtype).kind not in "fc":
            return None
        import dask.array as da

        pieces = zip(blocks, leaf.chunks[0], strict=True)
        joined = da.concatenate([da.from_delayed(b, (n, *leaf.shape[1:]), leaf.dtype) for b, n in pieces])
        return joined.rechunk({0: leaf.chunks[0]})  # concatenate leaves out the blocks without rows
    meta = zeros_like(leaf._meta)  # the float columns of an empty partition
    if meta is None:
        return None
    import dask.dataframe as dd

    divisions = leaf.divisions if leaf.known_divisions else None
    return dd.from_delayed(blocks, meta=meta, divisions=divisions, verify_meta=False)


def _positions(argnums: Any) -> tuple[int, ...]:
    found = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(found, tuple | list) or not found:
        msg = f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}"
        raise ArgumentError(msg)
    for k in found:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            msg = f"argnums must be non-negative ints, got {argnums!r}"
            raise ArgumentError(msg)
    if len(set(found)) != len(found):
        msg = f"argnums must not repeat a position, got {argnums!r}"
        raise ArgumentError(msg)
    return tuple(found)


def _moved(k: int) -> int:
    """Where ``fun``'s argument ``k`` (not the dataset) sits in each task's function."""
    return 0 if k == 0 else k + 1


def _inner(positions: tuple[int, ...]) -> tuple[int, ...]:
    """The positions to differentiate in each task's function (see ``_PARTS``)."""
    found: list[int] = []
    for k in positions:
        found.extend((_PARTS, _REST) if k == 1 else (_moved(k),))
    return tuple(found)


class _Tasks:
    """The tasks of one call, one per partition, sharing one copy of the function, the
    parameters, the template and the extra arguments in the graph (not one per block)."""

    def __init__(self, fun: Any, params: Any, template: Any, args: Any, leaves: Any, inner: tuple[int, ...]) -> None:
        dask = _dask()
        self._delayed = dask.delayed
        self._shared = [dask.delayed(v, traverse=False) for v in (fun, params, template)]
        self._args = dask.delayed(args, traverse=False)
        self._leaves = [leaf for _, leaf in leaves]
        self._paths = [path for path, _ in leaves]
        blocks = [_blocks(leaf) for leaf in self._leaves]
        self._batches = [[column[i] for column in blocks] for i in range(len(blocks[0]))]
        self._inner = inner

    def each(self, task: Callable[..., Any], last: Any) -> list[Any]:
        """``task`` on each partition, ``last`` its last argument."""
        run = self._delayed(task)
        found = enumerate(self._batches)
        return [run(*self._shared, batch, self._args, (i, self._paths), self._inner, last) for i, batch in found]

    def added(self, mean: bool, split_every: int, scheduler: Any) -> tuple[int, Any, tuple[Any, ...]]:
        """The rows, value and gradients (but the partitions' own) added over all partitions."""
        parts = self.each(_partition, mean)
        combine = self._delayed(_combine)
        while len(parts) > 1:
            parts = [combine(parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
        result = _dask().compute(parts[0], scheduler=scheduler)[0]
        if result is None:
            msg = "value_and_grad: the dataset has no rows"
            raise ShapeError(msg)
        return result

    def dataset_gradient(self, rest: Any, total: int | None) -> Any:
        """The gradient with respect to the dataset: ``rest`` (that of its other leaves)
        with each Dask leaf's lazy gradient in its place (the leaves' gradients share their
        tasks: computed together, each partition's loss runs once)."""
        tasks = self.each(_partition_gradient, total)
        lazy = [_lazy_gradient(leaf, [task[k] for task in tasks]) for k, leaf in enumerate(self._leaves)]
        at = {path: k for k, path in enumerate(self._paths)}
        return map_with_paths(lambda path, g: lazy[at[path]] if path in at else g, rest, "data")


def _check_params(params: Any) -> None:
    for path, leaf in flatten_with_paths(params, "params"):
        if _is_partitioned(leaf):
            msg = f"value_and_grad: {path} is a {_kind(leaf)}; parameters must be plain values (call .compute() first)"
            raise StructureError(msg)


def value_and_grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    reduction: str = "mean",
    split_every: int = 8,
    scheduler: Any = None,
) -> Callable[..., tuple[Any, Any]]:
    """Value and gradient of a loss over a dataset split into row blocks, one Dask task
    per block.

    ``fun(params, batch, *args)`` computes a scalar loss on a batch of rows: ``batch`` has
    the dataset's structure, with each Dask array replaced by the numpy block of one row
    range and each Dask DataFrame (or Series) by the pandas partition at the same place
    (an :class:`~nodegrad.Frame` inside, as :func:`nodegrad.value_and_grad` gives a
    DataFrame argument). The dataset's other leaves are passed whole to every block. The
    returned function ``f(params, data, *args)`` gives the value and the gradient over all
    rows, as :func:`nodegrad.value_and_grad` gives them on the whole dataset.

    Parameters
    ----------
    fun : callable
        The loss of one batch of rows. It must be picklable to run on processes or a
        cluster (Dask uses cloudpickle: module-level functions and lambdas both work).
    argnums : int or tuple of int, default 0
        Which positional arguments of ``fun`` to differentiate: ``0`` the parameters,
        ``1`` the dataset, ``2`` and on the extra arguments (passed whole to every block,
        so their gradients are added like the parameters').
    reduction : {"mean", "sum"}, optional
        How ``fun`` combines its rows. ``"mean"`` (``fun`` is a mean over its rows): each
        block is weighted by its share of the rows, so the result is the mean over all
        rows, as if ``fun`` had seen them at once. ``"sum"``: the blocks are added.
    split_every : int, optional
        How many block results one task adds up (the fan-in of the reduction tree).
    scheduler : optional
        Passed to ``dask.compute`` (``"threads"``, ``"processes"``, ``"sync"``, or a
        ``distributed`` client's). By default Dask chooses.

    Returns
    -------
    callable
        ``f(params, data, *args) -> (value, grad)``, ``grad`` a tuple when ``argnums`` is.
        The gradient with respect to ``data`` has its structure, each Dask leaf's a lazy
        Dask collection split as the leaf is (a DataFrame's: its float columns, with its
        partitions and divisions); computing it runs the loss on each block again.
        Blocks without rows are skipped. ``data`` without any Dask leaf is one block.

    Raises
    ------
    ShapeError
        If the Dask leaves of ``data`` are not split into the same row blocks (a table's
        partition lengths are compared by the tasks, so this one comes from computing),
        or an array has no row axis, or there are no rows at all.
    StructureError
        If ``params`` holds a Dask collection.
    ArgumentError
        If ``argnums``, ``reduction`` or ``split_every`` is not one of the allowed values.

    Examples
    --------
    >>> import dask.array as da
    >>> import dask.dataframe as dd
    >>> import numpy as np
    >>> import pandas as pd
    >>> import nodegrad as ng
    >>> from nodegrad import parallel
    >>> x = np.arange(8.0)
    >>> data = {"x": da.from_array(x, chunks=3), "y": da.from_array(2.0 * x, chunks=3)}
    >>> loss = lambda w, batch: ng.mean((w * batch["x"] - batch["y"]) ** 2.0)
    >>> value, g = parallel.value_and_grad(loss, scheduler="sync")(1.0, data)
    >>> float(value), g  # the same as ng.value_and_grad on all 8 rows
    (17.5, -35.0)

    A Dask DataFrame reaches the loss one pandas partition at a time, and its gradient is
    a Dask DataFrame of the float columns:

    >>> table = dd.from_pandas(pd.DataFrame({"x": x, "y": 2.0 * x, "day": np.arange(8) % 7}), npartitions=3)
    >>> def table_loss(w, f):
    ...     return np.mean((w * f["x"] - f["y"]) ** 2.0)
    >>> value, (g_w, g_table) = parallel.value_and_grad(table_loss, argnums=(0, 1), scheduler="sync")(1.0, table)
    >>> float(value), g_w, g_table.npartitions
    (17.5, -35.0, 3)
    >>> g_table.compute().equals(ng.grad(table_loss, argnums=1)(1.0, table.compute()))
    True
    """
    if not callable(fun):
        msg = f"value_and_grad needs a callable, got {type(fun).__name__}"
        raise ArgumentError(msg)
    positions = _positions(argnums)
    if reduction not in _REDUCTIONS:
        msg = f"reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        raise ArgumentError(msg)
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        msg = f"split_every must be an int of at least 2, got {split_every!r}"
        raise ArgumentError(msg)
    inner, mean = _inner(positions), reduction == "mean"

    @functools.wraps(fun)
    def partitioned_value_and_grad(params: Any, data: Any, *args: Any) -> tuple[Any, Any]:
        _check_params(params)
        if max(positions) >= 2 + len(args):
            msg = f"value_and_grad: argnums {argnums!r}, but the function is called with {2 + len(args)} arguments"
            raise ArgumentError(msg)
        template, leaves = _row_blocks(data)
        if not leaves:
            return _value_and_grad(fun, argnums)(params, data, *args)
        tasks = _Tasks(fun, params, template, args, leaves, inner)
        total, value, grads = tasks.added(mean, split_every, scheduler)
        if mean:
            value, grads = value / total, scale(grads, 1 / total)
        found = dict(zip(inner, grads, strict=True))
        if 1 in positions:
            found[_PARTS] = tasks.dataset_gradient(found[_REST][0], total if mean else None)
        picked = [found[_PARTS if k == 1 else _moved(k)] for k in positions]
        return np.asarray(value)[()], picked[0] if isinstance(argnums, int) else tuple(picked)

    return partitioned_value_and_grad
