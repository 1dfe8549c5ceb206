"""Data-parallel gradients over a dataset partitioned by rows, computed with Dask.

The dataset is any structure (a dict of columns, a record, a list, ...) whose leaves are
Dask arrays split into the same row blocks. Each block of rows becomes one task that runs
:func:`nodegrad.value_and_grad` on plain numpy arrays; the per-block values and gradients
are then added in a tree of tasks. Nothing of the engine is shared between tasks, so the
tasks run on threads, processes or a Dask cluster alike (whatever scheduler computes them).

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
from nodegrad.tree import add, scale

__all__ = ["value_and_grad"]

_REDUCTIONS = ("mean", "sum")


def _dask() -> Any:
    try:
        return importlib.import_module("dask")
    except ImportError as exc:
        msg = 'nodegrad.parallel needs Dask: pip install "nodegrad[dask]"'
        raise ImportError(msg) from exc


def _is_dask_array(value: Any) -> bool:
    # Checked by name first, so plain data never imports Dask.
    if type(value).__name__ != "Array" or not type(value).__module__.startswith("dask"):
        return False
    from dask.array import Array

    return isinstance(value, Array)


class _Slot:
    """Where a block of the ``k``-th partitioned leaf goes in a partition's batch."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k

    def __repr__(self) -> str:
        return f"_Slot({self.k})"


def _row_blocks(data: Any) -> tuple[Any, list[list[Any]], tuple[int, ...]]:
    """Split ``data`` into a template (each Dask leaf replaced by a :class:`_Slot`), the
    row blocks of each Dask leaf (as delayed values) and the rows in each block."""
    leaves = [(path, leaf) for path, leaf in flatten_with_paths(data, "data") if _is_dask_array(leaf)]
    if not leaves:
        return data, [], ()
    first_path, first = leaves[0]
    for path, leaf in leaves:
        if leaf.ndim == 0:
            msg = f"value_and_grad: {path} is a 0-d Dask array; partitioned leaves need a row axis"
            raise ShapeError(msg)
        if any(np.isnan(n) for n in leaf.chunks[0]):
            msg = (
                f"value_and_grad: the row blocks of {path} have unknown sizes (after a boolean mask, say); "
                "call .compute_chunk_sizes() on it first"
            )
            raise ShapeError(msg)
        if leaf.chunks[0] != first.chunks[0]:
            msg = (
                f"value_and_grad: {path} is split into row blocks {leaf.chunks[0]}, but {first_path} into "
                f"{first.chunks[0]}; rechunk them alike (x.rechunk({{0: y.chunks[0]}}))"
            )
            raise ShapeError(msg)
    blocks = []
    for _, leaf in leaves:
        # One block per row range: the other axes are joined into a single chunk.
        whole = leaf.rechunk({axis: -1 for axis in range(1, leaf.ndim)}) if leaf.ndim > 1 else leaf
        blocks.append(list(whole.to_delayed().reshape(-1)))
    slots = iter(range(len(leaves)))
    template = map_with_paths(lambda _, leaf: _Slot(next(slots)) if _is_dask_array(leaf) else leaf, data)
    return template, blocks, tuple(int(n) for n in first.chunks[0])


def _fill(template: Any, blocks: Sequence[Any]) -> Any:
    return map_with_paths(lambda _, leaf: blocks[leaf.k] if isinstance(leaf, _Slot) else leaf, template)


def _partition(
    fun: Callable[..., Any], params: Any, template: Any, blocks: list[Any], args: tuple[Any, ...], weight: float
) -> tuple[Any, Any]:
    """One task: the weighted value and gradient of ``fun`` on one block of rows."""
    value, grad = _value_and_grad(fun)(params, _fill(template, blocks), *args)
    if weight == 1.0:
        return value, grad
    return value * weight, scale(grad, weight)


def _combine(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    value, grad = parts[0]
    for v, g in parts[1:]:
        value, grad = value + v, add(grad, g)
    return value, grad


def _check_params(params: Any) -> None:
    for path, leaf in flatten_with_paths(params, "params"):
        if _is_dask_array(leaf):
            msg = f"value_and_grad: {path} is a Dask array; parameters must be plain values (call .compute() first)"
            raise StructureError(msg)


def value_and_grad(
    fun: Callable[..., Any],
    *,
    reduction: str = "mean",
    split_every: int = 8,
    scheduler: Any = None,
) -> Callable[..., tuple[Any, Any]]:
    """Value and gradient of a loss over a dataset split into row blocks, one Dask task
    per block.

    ``fun(params, batch, *args)`` computes a scalar loss on a batch of rows: ``batch`` has
    the dataset's structure, with each Dask array replaced by the numpy block of one row
    range (the dataset's other leaves are passed whole to every block). The returned
    function ``f(params, data, *args)`` gives the value and the gradient with respect to
    ``params`` over all rows, the gradient in ``params``' own structure.

    Parameters
    ----------
    fun : callable
        The loss of one batch of rows. It must be picklable to run on processes or a
        cluster (a module-level function; the threaded scheduler takes any callable).
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
        ``f(params, data, *args) -> (value, grad)``. Blocks without rows are skipped.
        ``data`` without any Dask array is one block.

    Raises
    ------
    ShapeError
        If the Dask arrays of ``data`` are not split into the same row blocks, or one has
        no row axis, or there are no rows at all.
    ArgumentError
        If ``reduction`` or ``split_every`` is not one of the allowed values.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad import parallel
    >>> x = np.arange(8.0)
    >>> data = {"x": da.from_array(x, chunks=3), "y": da.from_array(2.0 * x, chunks=3)}
    >>> loss = lambda w, batch: ng.mean((w * batch["x"] - batch["y"]) ** 2.0)
    >>> value, g = parallel.value_and_grad(loss, scheduler="sync")(1.0, data)
    >>> float(value), g  # the same as ng.value_and_grad on all 8 rows
    (17.5, -35.0)
    """
    if not callable(fun):
        msg = f"value_and_grad needs a callable, got {type(fun).__name__}"
        raise ArgumentError(msg)
    if reduction not in _REDUCTIONS:
        msg = f"reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        raise ArgumentError(msg)
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        msg = f"split_every must be an int of at least 2, got {split_every!r}"
        raise ArgumentError(msg)

    @functools.wraps(fun)
    def partitioned_value_and_grad(params: Any, data: Any, *args: Any) -> tuple[Any, Any]:
        _check_params(params)
        template, blocks, rows = _row_blocks(data)
        if not blocks:
            return _value_and_grad(fun)(params, data, *args)
        total = sum(rows)
        if total == 0:
            msg = "value_and_grad: the dataset has no rows"
            raise ShapeError(msg)
        dask = _dask()
        # One copy of the parameters, the template and the extra arguments in the graph,
        # shared by every task (not one copy per block).
        shared = [dask.delayed(v, traverse=False) for v in (fun, params, template, args)]
        run = dask.delayed(_partition)
        parts = [
            run(*shared[:3], [column[i] for column in blocks], shared[3], n / total if reduction == "mean" else 1.0)
            for i, n in enumerate(rows)
            if n
        ]
        combine = dask.delayed(_combine)
        while len(parts) > 1:
            parts = [combine(parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
        value, grad = dask.compute(parts[0], scheduler=scheduler)[0]
        return np.asarray(value)[()], grad

    return partitioned_value_and_grad
