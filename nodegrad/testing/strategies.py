"""Hypothesis strategies for property-based tests of differentiable code.

Importing this module needs ``hypothesis`` (``pip install nodegrad[test]``); the rest of
nodegrad does not.

- :func:`float_arrays` and :func:`complex_arrays` -- well-conditioned float and complex
  arrays (bounded, optionally kept away from zero);
- :func:`broadcastable_shapes` -- shape tuples that broadcast together;
- :func:`axes` and :func:`reshape_targets` -- valid ``axis`` arguments and new shapes;
- :func:`index_expressions` -- valid ``x[index]`` expressions for a shape: ints, slices
  (any bounds and steps), ``None``, ``...``, integer arrays (repeats, negative values,
  several dtypes, lists) and boolean masks, adjacent or separated as numpy allows;
- :func:`stretchable_to` -- shapes that broadcast to a given shape;
- :func:`segment_ids` -- integer group ids for the segment ops;
- :func:`structures` -- nested attrs records, dataclasses, named tuples, dicts with mixed
  key types, lists and tuples, built from any leaf strategy.

Examples
--------
>>> import numpy as np
>>> from hypothesis import given, settings
>>> import nodegrad as ng
>>> from nodegrad.testing import check_grads
>>> from nodegrad.testing.strategies import float_arrays
>>> @settings(max_examples=5, deadline=None)
... @given(float_arrays())
... def test_tanh(x):
...     check_grads(ng.tanh, x)
>>> test_tanh()
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any

import attrs
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from nodegrad.engine.structure import dataclass_field, field

__all__ = [
    "Box",
    "Marked",
    "Pair",
    "Tagged",
    "Triple",
    "axes",
    "broadcastable_shapes",
    "complex_arrays",
    "float_arrays",
    "index_expressions",
    "reshape_targets",
    "segment_ids",
    "shapes",
    "stretchable_to",
    "structures",
]


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy[Any]:
    """Small array shapes."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def float_arrays(
    shape: Any = None,
    dtype: Any = np.float64,
    bound: float = 3.0,
    away_from_zero: float = 0.0,
    *,
    elements: st.SearchStrategy[float] | None = None,
    unique: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays with entries in ``[-bound, bound]`` (and ``|x| >= away_from_zero``).

    Bounded, finite, normal entries keep ops and their finite differences well conditioned;
    ``away_from_zero`` keeps ``log``, ``sqrt``, ``1/x`` or ``abs`` clear of their kinks.
    ``elements`` draws the entries from a strategy of your own instead (a grid that keeps
    them apart, a domain), and ``unique`` makes them pairwise distinct. A complex ``dtype``
    (``complex64``, ``complex128``) gives complex arrays, as :func:`complex_arrays` does.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_grads
    >>> @settings(max_examples=5, deadline=None)
    ... @given(float_arrays(dtype=np.float32, away_from_zero=0.1))
    ... def test_log_abs(x):
    ...     assert x.dtype == np.float32
    ...     check_grads(lambda x: ng.log(ng.abs(x)), x)
    >>> test_log_abs()
    """
    if np.dtype(dtype).kind == "c":
        return complex_arrays(shape, dtype, bound, away_from_zero)
    values = _parts(dtype, bound) if elements is None else elements
    if away_from_zero:
        values = values.filter(lambda v: abs(v) >= away_from_zero)
    return hnp.arrays(dtype, shapes() if shape is None else shape, elements=values, unique=unique)


def complex_arrays(
    shape: Any = None,
    dtype: Any = np.complex128,
    bound: float = 3.0,
    away_from_zero: float = 0.0,
    *,
    real: st.SearchStrategy[float] | None = None,
    imag: st.SearchStrategy[float] | None = None,
) -> st.SearchStrategy[np.ndarray]:
    """Complex arrays whose real and imaginary parts lie in ``[-bound, bound]`` (and with
    ``|z| >= away_from_zero``): the complex twin of :func:`float_arrays`.

    Keeping a function clear of its branch cuts (``log`` and ``sqrt`` on the negative
    real axis, say) is the test's choice: filter the drawn arrays, or shift them, or draw
    the ``real`` and ``imag`` parts from strategies of your own (floats the dtype's parts
    hold exactly).

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_grads
    >>> @settings(max_examples=5, deadline=None)
    ... @given(complex_arrays(dtype=np.complex64))
    ... def test_exp(z):
    ...     assert z.dtype == np.complex64
    ...     check_grads(ng.exp, z, holomorphic=True)  # real and imaginary directions
    >>> test_exp()
    >>> @settings(max_examples=5, deadline=None)
    ... @given(complex_arrays(away_from_zero=0.5))
    ... def test_abs(z):
    ...     check_grads(lambda z: ng.sum(ng.abs(z)), z)  # real-valued: not holomorphic
    >>> test_abs()
    """
    if np.dtype(dtype).kind != "c":
        msg = f"complex_arrays: dtype must be complex64 or complex128, got {np.dtype(dtype)}"
        raise ValueError(msg)
    parts = _parts(np.float32 if np.dtype(dtype) == np.complex64 else np.float64, bound)
    values = st.builds(complex, parts if real is None else real, parts if imag is None else imag)
    if away_from_zero:
        values = values.filter(lambda z: abs(z) >= away_from_zero)
    return hnp.arrays(dtype, shapes() if shape is None else shape, elements=values)


def _parts(dtype: Any, bound: float) -> st.SearchStrategy[float]:
    """Finite floats in ``[-bound, bound]`` that ``dtype`` holds exactly, and no subnormal
    ones (they carry fewer digits than the rest, and ``1/x`` of one overflows)."""
    if np.dtype(dtype) == np.float32:
        return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=32)
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def broadcastable_shapes(num_shapes: int = 2, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy[Any]:
    """Tuples of ``num_shapes`` shapes that broadcast together (some of them stretched)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, max_dims=max_dims, max_side=max_side).map(
        lambda drawn: drawn.input_shapes
    )


def axes(ndim: int, single: bool = False) -> st.SearchStrategy[Any]:
    """A valid ``axis`` for ``ndim`` dimensions: None, an int (maybe negative) or a tuple
    of distinct axes (negative ones, and the empty tuple, which numpy's reductions read as
    no axis at all, included); ``single``: an int alone (None for a 0-d array)."""
    one = st.integers(-ndim, ndim - 1)
    if single:
        return one if ndim else st.none()
    return st.one_of([st.none(), hnp.valid_tuple_axes(ndim), *([one] if ndim else [])])


@st.composite
def reshape_targets(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A new shape with as many elements as ``shape``, possibly with one ``-1``."""
    size = math.prod(shape)
    factors = [p for p in range(2, size + 1) if size % p == 0 and all(p % q for q in range(2, p))]
    primes: list[int] = []
    rest = size
    while rest > 1:
        p = draw(st.sampled_from([f for f in factors if rest % f == 0]))
        primes.append(p)
        rest //= p
    ordered: list[int] = draw(st.permutations(primes)) if primes else []
    merged: list[int] = []
    for n in ordered:
        if merged and draw(st.booleans()):
            merged[-1] *= n
        else:
            merged.append(n)
    merged += [1] * draw(st.integers(0, 1))
    if merged and draw(st.booleans()):
        merged[draw(st.integers(0, len(merged) - 1))] = -1
    return tuple(merged)


@st.composite
def stretchable_to(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape`` without growing it: a suffix of ``shape`` with
    some sides replaced by 1."""
    ndim = draw(st.integers(0, len(shape)))
    return tuple(n if draw(st.booleans()) else 1 for n in shape[len(shape) - ndim :])


def _index_array(draw: st.DrawFn, n: int, shape: tuple[int, ...]) -> Any:
    """Integer positions into an axis of size ``n`` (negative and repeated ones included);
    sometimes as a nested list, which numpy treats the same."""
    dtype = draw(st.sampled_from([np.intp, np.int32, np.int8, np.uint8]))
    lo = 0 if np.dtype(dtype).kind == "u" else -n
    positions = draw(hnp.arrays(dtype, shape, elements=st.integers(lo, n - 1)))
    # (An empty list stays an array: numpy reads `[]` as a float array, `x[[]]` as an int index.)
    return positions.tolist() if positions.size and draw(st.integers(0, 3)) == 0 else positions


def _slice(draw: st.DrawFn, n: int) -> slice:
    """A slice of an axis of size ``n``: bounds past either end and negative steps included."""
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def index_expressions(
    draw: st.DrawFn,
    shape: tuple[int, ...],
    *,
    allow_arrays: bool = True,
    allow_masks: bool = True,
    allow_newaxis: bool = True,
    allow_ellipsis: bool = True,
) -> Any:
    """An index valid for an array of ``shape``, as numpy accepts it in ``x[index]``.

    Parts: ints (negative ones too), slices (any bounds, negative steps), ``None``, one
    ``...``, integer arrays (repeats, negatives, several dtypes, sometimes as lists) and at
    most one boolean mask spanning one or more consecutive axes. The advanced parts
    (arrays, the mask) broadcast together; they may be adjacent or separated by a slice
    or ``None``, in which case numpy moves the advanced dimensions to the front. Explicit
    parts cover a prefix of the axes, or a prefix and a suffix around ``...``; a single
    part is sometimes given bare rather than in a tuple.
    """
    ndim = len(shape)
    explicit = ndim - draw(st.integers(0, ndim))  # usually most axes: the richer indices
    ellipsis = allow_ellipsis and draw(st.booleans())
    before = draw(st.integers(0, explicit)) if ellipsis else explicit
    groups = [list(range(before)), list(range(ndim - (explicit - before), ndim))]
    kinds = ["slice", "int", *(["array"] if allow_arrays else [])]
    parts: list[tuple[str, list[int]]] = []
    has_mask = False
    for g, dims in enumerate(groups):
        k = 0
        while k < len(dims):
            kind = draw(st.sampled_from([*kinds, *(["mask"] if allow_masks and not has_mask else [])]))
            width = draw(st.integers(1, len(dims) - k)) if kind == "mask" else 1
            parts.append((kind, dims[k : k + width]))
            has_mask = has_mask or kind == "mask"
            k += width
        if g == 0 and ellipsis:
            parts.append(("ellipsis", []))
    if allow_newaxis:
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            parts.insert(draw(st.integers(0, len(parts))), ("none", []))

    # A mask stands for its count of integer arrays: the others must broadcast with it.
    mask = None
    for kind, dims in parts:
        if kind == "mask":
            mask = draw(hnp.arrays(bool, tuple(shape[d] for d in dims)))
    if mask is not None:
        count = int(mask.sum())
        array_shapes: st.SearchStrategy[tuple[int, ...]] = st.sampled_from([(), (1,), (count,)])
    else:
        array_shapes = stretchable_to(draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)))

    index: list[Any] = []
    for kind, dims in parts:
        n = shape[dims[0]] if dims else 0
        if kind == "int":
            position = draw(st.integers(-n, n - 1))
            index.append(np.intp(position) if draw(st.integers(0, 3)) == 0 else position)
        elif kind == "slice":
            index.append(_slice(draw, n))
        elif kind == "array":
            index.append(_index_array(draw, n, draw(array_shapes)))
        elif kind == "mask":
            index.append(mask)
        else:
            index.append(None if kind == "none" else Ellipsis)
    if len(index) == 1 and draw(st.booleans()):
        return index[0]
    return tuple(index)


@st.composite
def segment_ids(draw: st.DrawFn, rows: int, num_segments: int | None = None) -> np.ndarray:
    """Group ids for ``rows`` rows in ``[0, num_segments)``: unsorted, with repeats and
    (when there are more segments than used) empty groups."""
    num = num_segments if num_segments is not None else draw(st.integers(1, max(rows, 1)))
    return draw(hnp.arrays(np.intp, rows, elements=st.integers(0, num - 1)))


@attrs.define
class Pair:
    """A record (attrs) of two entries, for :func:`structures`."""

    x: Any
    y: Any


@attrs.frozen
class Tagged:
    """A frozen record (attrs) with a field marked static."""

    w: Any
    tag: Any = field(static=True, default="tag")


@dataclasses.dataclass
class Box:
    """A dataclass of two entries."""

    p: Any
    q: Any


@dataclasses.dataclass(frozen=True)
class Marked:
    """A frozen dataclass with a float field marked static."""

    v: Any
    note: Any = dataclass_field(static=True, default=1.5)


Triple = collections.namedtuple("Triple", "a b c")
Triple.__doc__ = "A named tuple of three entries, for :func:`structures`."

_KEYS = st.one_of(st.text(max_size=2), st.integers(-3, 3), st.tuples(st.integers(0, 2), st.text(max_size=1)))


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_KEYS, children, max_size=3),
        st.builds(Pair, children, children),
        st.builds(Tagged, children, st.integers()),
        st.builds(Box, children, children),
        st.builds(Marked, children, st.floats(-3, 3)),
        st.builds(Triple, children, children, children),
    )


def structures(
    leaves: st.SearchStrategy[Any] | None = None, max_leaves: int = 6, dtypes: Any = (np.float64, np.float32)
) -> st.SearchStrategy[Any]:
    """Nested structured values around ``leaves`` (by default arrays of the ``dtypes``, and
    Python floats, or complex numbers when a dtype is complex, mixed with static leaves:
    ints, strings, ``None``, integer arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import nodegrad as ng
    >>> @settings(max_examples=5, deadline=None)
    ... @given(structures(dtypes=(np.complex128,)))
    ... def test_leaves(value):
    ...     arrays = [leaf for _, leaf in ng.tree.tree_leaves_with_path(value) if isinstance(leaf, np.ndarray)]
    ...     assert {a.dtype.kind for a in arrays} <= {"c", "i", "b"}  # complex128, static ints and masks
    >>> test_leaves()
    """
    if leaves is None:
        statics = st.one_of(
            st.integers(-5, 5),
            st.booleans(),
            st.text(max_size=3),
            st.none(),
            hnp.arrays(np.intp, shapes(max_dims=1)),
            hnp.arrays(np.bool_, shapes(max_dims=1)),
        )
        arrays = st.sampled_from(list(dtypes)).flatmap(lambda dt: float_arrays(shapes(max_dims=2), dt))
        numbers: st.SearchStrategy[Any] = st.floats(-3, 3)
        if any(np.dtype(dt).kind == "c" for dt in dtypes):
            numbers = st.one_of(numbers, st.complex_numbers(max_magnitude=3, allow_nan=False, allow_infinity=False))
        leaves = st.one_of(arrays, numbers, statics)
    return _containers(st.recursive(leaves, _containers, max_leaves=max_leaves))
