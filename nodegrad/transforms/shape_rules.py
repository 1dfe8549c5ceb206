"""``eval_shape``'s shape rules for the ops that move, select and reduce entries: reductions,
reshaping, joining, indexing, gathering and scattering, and the matrix products.

A rule gets the op's arguments as its forward does (shaped values among them: only their
``shape`` and ``dtype`` are read) and returns the result's
:class:`~nodegrad.transforms.shapes.ShapeDtype`. An op that only moves entries is answered
by numpy itself on a stand-in that holds no memory: an array of the argument's shape whose
every entry is one zero-byte item (:func:`_void`), so reshaping, transposing, broadcasting
and indexing it cost what they cost on a small array, and numpy's own rules (``-1`` in a
shape, advanced indexing, errors) decide.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from nodegrad.errors import ShapeOnlyError, user_location
from nodegrad.transforms.shapes import (
    VALUE_RULES,
    Shaped,
    ShapeDtype,
    reduced_shape,
    shape_of,
    shape_rule,
    stand_in,
)

__all__: list[str] = []

_NOTHING = np.zeros((), dtype=np.dtype([]))  # one entry of zero bytes


def _void(value: Any) -> np.ndarray:
    """A stand-in of ``value``'s shape holding no memory (one zero-byte entry, broadcast)."""
    return np.broadcast_to(_NOTHING, shape_of(value))


def _dtype(value: Any) -> np.dtype[Any]:
    return np.result_type(stand_in(value))


# -- reductions --------------------------------------------------------------------------------


def _reduction(numpy_reduction: Any) -> Any:
    """The rule of a reduction ``op(x, axis, keepdims)``: the dtype numpy's reduction gives
    (a sum of bools or small integers is numpy's default integer, a mean of integers a float)."""

    def rule(x: Any, axis: Any, keepdims: bool) -> ShapeDtype:
        with np.errstate(all="ignore"):
            dtype = np.result_type(numpy_reduction(np.ones(1, _dtype(x))))
        return ShapeDtype(reduced_shape(shape_of(x), axis, keepdims), dtype)

    return rule


for _name, _numpy in (("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod), ("mean", np.mean)):
    shape_rule(_name)(_reduction(_numpy))
shape_rule("logsumexp")(_reduction(lambda v: np.log(np.sum(np.exp(v)))))


# -- shapes ------------------------------------------------------------------------------------


@shape_rule("reshape")
def _reshape(x: Any, shape: Any) -> ShapeDtype:
    return ShapeDtype(_void(x).reshape(shape).shape, _dtype(x))


@shape_rule("astype")
def _astype(x: Any, dtype: Any) -> ShapeDtype:
    return ShapeDtype(shape_of(x), np.dtype(dtype))


@shape_rule("transpose")
def _transpose(x: Any, axes: Any) -> ShapeDtype:
    return ShapeDtype(np.transpose(_void(x), axes).shape, _dtype(x))


@shape_rule("broadcast_to")
def _broadcast_to(x: Any, shape: Any) -> ShapeDtype:
    return ShapeDtype(np.broadcast_to(_void(x), shape).shape, _dtype(x))


@shape_rule("cat")
def _cat(axis: int, *xs: Any) -> ShapeDtype:
    shapes = [shape_of(x) for x in xs]
    first = list(shapes[0])
    axis = axis % len(first) if first else axis
    joined = list(first)
    joined[axis] = sum(s[axis] for s in shapes)
    _same_but(shapes, axis, "cat")
    return ShapeDtype(tuple(joined), np.result_type(*(stand_in(x) for x in xs)))


@shape_rule("stack")
def _stack(axis: int, *xs: Any) -> ShapeDtype:
    shapes = [shape_of(x) for x in xs]
    _same_but(shapes, None, "stack")
    ndim = len(shapes[0]) + 1
    out = list(shapes[0])
    out.insert(axis % ndim, len(xs))
    return ShapeDtype(tuple(out), np.result_type(*(stand_in(x) for x in xs)))


def _same_but(shapes: list[tuple[int, ...]], axis: int | None, name: str) -> None:
    """Refuse shapes that differ (but along ``axis``), as numpy would."""
    first = shapes[0]
    for s in shapes[1:]:
        if len(s) != len(first) or any(a != b for k, (a, b) in enumerate(zip(s, first, strict=True)) if k != axis):
            msg = f"the shapes {shapes} do not fit together"
            raise ValueError(msg)


@shape_rule("pad")
def _pad(x: Any, widths: Any, value: Any) -> ShapeDtype:
    shape = shape_of(x)
    pairs = np.broadcast_to(np.asarray(widths, dtype=np.int64), (len(shape), 2))
    return ShapeDtype(tuple(n + int(a) + int(b) for n, (a, b) in zip(shape, pairs, strict=True)), _dtype(x))


# -- indexing ----------------------------------------------------------------------------------


def _index_stand_in(index: Any) -> Any:
    """An index with its shaped parts replaced by stand-ins numpy can index with: an integer
    array by zeros of its shape (zero-strided); a boolean one selects as many entries as it
    has true ones, which only its values say."""
    if type(index) is tuple:
        return tuple(_index_stand_in(i) for i in index)
    if type(index) is list and any(type(i) is Shaped for i in index):
        return np.stack([_index_stand_in(i) for i in index]) if index else index
    if type(index) is Shaped:
        if index.dtype.kind == "b":
            msg = (
                f"indexing by a boolean mask eval_shape knows only the shape of: how many entries it selects "
                f"depends on its values (use np.where(mask, x, 0) to keep the shape) [at {user_location()}]"
            )
            raise ShapeOnlyError(msg)
        return np.broadcast_to(np.zeros((), np.intp), index.shape)
    return index


@shape_rule("getitem")
def _getitem(x: Any, index: Any) -> ShapeDtype:
    return ShapeDtype(_void(x)[_index_stand_in(index)].shape, _dtype(x))


@shape_rule("gather")
def _gather(x: Any, indices: Any, axis: Any) -> ShapeDtype:
    return ShapeDtype(np.take(_void(x), _index_stand_in(indices), axis=axis).shape, _dtype(x))


@shape_rule("take_along_axis")
def _take_along_axis(x: Any, indices: Any, axis: Any) -> ShapeDtype:
    return ShapeDtype(np.take_along_axis(_void(x), _index_stand_in(indices), axis).shape, _dtype(x))


@shape_rule("scatter")
def _scatter(v: Any, index: Any, shape: Any) -> ShapeDtype:
    return ShapeDtype(tuple(shape), _dtype(v))


@shape_rule("index_add", "index_set")
def _update(x: Any, v: Any, index: Any) -> ShapeDtype:
    np.broadcast_to(_void(v), _void(x)[_index_stand_in(index)].shape)  # numpy's refusal of a misfit
    return ShapeDtype(shape_of(x), _dtype(x))


# -- products ----------------------------------------------------------------------------------


@shape_rule("matmul")
def _matmul(x: Any, y: Any) -> ShapeDtype:
    a, b = shape_of(x), shape_of(y)
    if not a or not b:
        msg = f"a 0-d operand (shapes {a} and {b})"
        raise ValueError(msg)
    left = a if len(a) > 1 else (1, *a)
    right = b if len(b) > 1 else (*b, 1)
    if left[-1] != right[-2]:
        msg = f"the inner sizes {left[-1]} and {right[-2]} differ"
        raise ValueError(msg)
    batch = np.broadcast_shapes(left[:-2], right[:-2])
    out = (*batch, *(left[-2:-1] if len(a) > 1 else ()), *(right[-1:] if len(b) > 1 else ()))
    return ShapeDtype(out, np.result_type(stand_in(x), stand_in(y)))


@shape_rule("einsum")
def _einsum(spec: Any, *operands: Any) -> ShapeDtype:
    # The spec is parsed already (an ellipsis spelled out): each operand's letters, and the
    # output's. An output axis is a named operand axis, so its size is read back by letter;
    # a letter of size 1 broadcasts, as under numpy's ellipsis.
    terms, output = spec
    sizes: dict[str, int] = {}
    for term, op in zip(terms, operands, strict=True):
        for letter, n in zip(term, shape_of(op), strict=True):
            known = sizes.get(letter, 1)
            if known != 1 and n not in (1, known):
                msg = f"the axis {letter!r} has sizes {known} and {n}"
                raise ValueError(msg)
            sizes[letter] = max(known, n)
    dtype = np.result_type(*(stand_in(o) for o in operands))
    return ShapeDtype(tuple(sizes[k] for k in output), dtype)


# -- numpy's value functions: masks and indices whose shape the arguments' shapes give -----------


def _zeros(value: Any) -> Any:
    """A stand-in of ``value`` with its shape and dtype holding no memory (zeros, broadcast),
    for numpy's own checks of an argument (a sorted 1-d grid, a valid ``side``); a plain
    ``value`` as it is, for the checks of its values."""
    if type(value) is Shaped:
        return np.broadcast_to(np.zeros((), value.dtype), value.shape)
    return value


def _numpy_on_stand_ins(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # of stand-ins' values: no one's concern
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
          kind: Any = None) -> ShapeDtype:  # fmt: skip
    _numpy_on_stand_ins(np.isin, stand_in(element), _zeros(test_elements), assume_unique, invert, kind=kind)
    return ShapeDtype(shape_of(element), np.bool_)


def _searchsorted(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> ShapeDtype:
    probe = _numpy_on_stand_ins(np.searchsorted, _zeros(a), stand_in(v), side, _zeros(sorter))
    return ShapeDtype(shape_of(v), np.result_type(probe))


def _digitize(x: Any, bins: Any, right: bool = False) -> ShapeDtype:
    probe = _numpy_on_stand_ins(np.digitize, stand_in(x), _zeros(bins), right)
    return ShapeDtype(shape_of(x), np.result_type(probe))


def _histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:  # noqa: A002  (numpy's name)
    """The counts have one entry per bin, the edges one more: known from an integer ``bins``
    or a plain array of edges. Bins numpy computes from the values (a string), or edges and a
    range that are values themselves, have a number and dtypes only the values give."""
    ends = range if type(range) is tuple or type(range) is list else (range,)
    if isinstance(bins, str) or any(type(v) is Shaped for v in (bins, *ends)):
        what = f"bins={bins!r}" if isinstance(bins, str) else "bins or range given as values it knows the shape of"
        msg = (
            f"np.histogram with {what} under eval_shape: the bins are computed from values it does not have; "
            f"pass an integer number of bins (and a plain range) or plain bin edges [at {user_location()}]"
        )
        raise ShapeOnlyError(msg)
    if weights is not None and shape_of(weights) != shape_of(a):
        msg = "weights should have the same shape as a."
        raise ValueError(msg)
    one = np.zeros(1, _dtype(a))  # the counts' and edges' shapes and dtypes do not depend on a's size or values
    weight = None if weights is None else np.zeros(1, _dtype(weights))
    counts, edges = _numpy_on_stand_ins(np.histogram, one, bins, range, density, weight)
    return ShapeDtype(counts.shape, counts.dtype), ShapeDtype(edges.shape, edges.dtype)


VALUE_RULES.update({np.isin: _isin, np.searchsorted: _searchsorted, np.digitize: _digitize, np.histogram: _histogram})


# -- sparse matrices: the pattern (a static argument) knows the shape --------------------------------


@shape_rule("sparse_matmul")
def _sparse_matmul(data: Any, b: Any, p: Any) -> ShapeDtype:
    return ShapeDtype((p.shape[0], *shape_of(b)[1:]), np.result_type(stand_in(data), stand_in(b)))


@shape_rule("sparse_rmatmul")
def _sparse_rmatmul(data: Any, b: Any, p: Any) -> ShapeDtype:
    return ShapeDtype((p.shape[1], *shape_of(b)[1:]), np.result_type(stand_in(data), stand_in(b)))


@shape_rule("sparse_sampled")
def _sparse_sampled(a: Any, b: Any, p: Any) -> ShapeDtype:
    return ShapeDtype((p.nnz,), np.result_type(stand_in(a), stand_in(b)))


@shape_rule("sparse_solve")
def _sparse_solve(data: Any, b: Any, p: Any, transposed: bool) -> ShapeDtype:
    dtype = np.result_type(stand_in(data), stand_in(b))
    return ShapeDtype(shape_of(b), dtype if dtype.kind in "fc" else np.dtype(np.float64))
