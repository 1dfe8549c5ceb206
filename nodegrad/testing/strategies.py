"""Hypothesis strategies for property-based tests of differentiable code.

Importing this module needs ``hypothesis`` (``pip install nodegrad[test]``); the rest of
nodegrad does not.

- :func:`float_arrays` and :func:`complex_arrays` -- well-conditioned float and complex
  arrays (bounded, optionally kept away from zero, or with ``avoid_kinks=True`` away from
  the kinks and ties of ``abs``, ``max``, ``sort``, ``clip``, ``round`` and the like);
- :func:`broadcastable_shapes` -- shape tuples that broadcast together;
- :func:`axes` and :func:`reshape_targets` -- valid ``axis`` arguments and new shapes;
- :func:`index_expressions` -- valid ``x[index]`` expressions for a shape: ints, slices
  (any bounds and steps), ``None``, ``...``, integer arrays (repeats, negative values,
  several dtypes, lists) and boolean masks, adjacent or separated as numpy allows;
- :func:`stretchable_to` -- shapes that broadcast to a given shape;
- :func:`segment_ids` -- integer group ids for the segment ops;
- :func:`structures` -- nested attrs records, dataclasses, named tuples, dicts with mixed
  key types, lists and tuples, built from any leaf strategy;
- :func:`data_frames` -- pandas DataFrames with float columns and key columns (ints,
  strings, categoricals) with duplicate and missing keys, as arguments of ``ng.grad``.

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
from collections.abc import Sequence
from typing import Any

import attrs
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from nodegrad.engine.structure import dataclass_field, field
from nodegrad.errors import ArgumentError
from nodegrad.testing._frames import data_frames
from nodegrad.testing._kinks import check_kink_options, check_room, kink_free_values, room

__all__ = [
    "Box",
    "Marked",
    "Pair",
    "Tagged",
    "Triple",
    "axes",
    "broadcastable_shapes",
    "complex_arrays",
    "data_frames",
    "float_arrays",
    "index_expressions",
    "reshape_targets",
    "segment_ids",
    "shapes",
    "stretchable_to",
    "structures",
]


def shapes(
    min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4, *, allow_empty: bool = False
) -> st.SearchStrategy[Any]:
    """Small array shapes: 0-d ones (``()``) included unless ``min_dims`` is above 0, and
    with ``allow_empty`` sides of 0 too (arrays with no entries).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> @settings(max_examples=10, deadline=None)
    ... @given(float_arrays(shapes(allow_empty=True)))
    ... def test_sum_of_squares(x):
    ...     assert ng.grad(lambda x: ng.sum(x * x))(x).shape == x.shape  # 0-d and empty arrays too
    >>> test_sum_of_squares()
    """
    low = 0 if allow_empty else min_side
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=low, max_side=max_side)


def float_arrays(
    shape: Any = None,
    dtype: Any = np.float64,
    bound: float = 3.0,
    away_from_zero: float = 0.0,
    *,
    elements: st.SearchStrategy[float] | None = None,
    unique: bool = False,
    avoid_kinks: bool = False,
    margin: float = 1e-2,
    kinks: Sequence[float] = (),
    allow_empty: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays with entries in ``[-bound, bound]`` (and ``|x| >= away_from_zero``).

    Bounded, finite, normal entries keep ops and their finite differences well conditioned;
    ``away_from_zero`` keeps ``log``, ``sqrt``, ``1/x`` or ``abs`` clear of their kinks.
    ``elements`` draws the entries from a strategy of your own instead (a grid that keeps
    them apart, a domain), and ``unique`` makes them pairwise distinct. A complex ``dtype``
    (``complex64``, ``complex128``) gives complex arrays, as :func:`complex_arrays` does.

    ``avoid_kinks=True`` keeps every entry at least ``margin`` (an absolute distance,
    ``0.01`` by default, below ``0.25``) away from 0 and every other integer (``abs``,
    ``relu``, ``sign``, ``floor``, ``ceil``), from every half-integer (``round``'s jumps),
    from each of ``kinks`` (the bounds of a ``clip``, the threshold of a ``where``: your
    own points) and from every other entry of the array (no near-ties for ``max``, ``min``,
    ``sort``, ``argmax``). A gradient check of a function built of those ops then never
    straddles a point where it is not differentiable: its central difference (a step of
    ``1e-6`` along a normal direction) stays on one side of every kink. The margins hold
    for the drawn entries, not for values computed from them (``x * x`` ties where ``x``
    meets ``-x``), and between the entries of one array only: to keep two arguments
    apart, draw one array and split it. A fixed ``shape`` too large for its margins within
    ``[-bound, bound]`` is refused when the strategy is made; drawn shapes that large are
    not drawn. ``allow_empty`` draws
    arrays with a side of 0 when no ``shape`` is given.

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

    Piecewise ops, checked away from their kinks (here ``clip``'s bounds, given as kinks):

    >>> @settings(max_examples=5, deadline=None)
    ... @given(float_arrays(shapes(min_dims=1), avoid_kinks=True, kinks=(-1.5, 1.5)))
    ... def test_piecewise(x):
    ...     check_grads(lambda x: ng.sum(ng.sort(ng.abs(x)) * np.clip(x, -1.5, 1.5)) + ng.max(x), x)
    >>> test_piecewise()
    """
    if np.dtype(dtype).kind == "c":
        return complex_arrays(
            shape,
            dtype,
            bound,
            away_from_zero,
            avoid_kinks=avoid_kinks,
            margin=margin,
            kinks=kinks,
            allow_empty=allow_empty,
        )
    drawn_shape = shapes(allow_empty=allow_empty) if shape is None else shape
    if avoid_kinks:
        if elements is not None:
            msg = "float_arrays: elements and avoid_kinks=True both choose the entries; give one of them"
            raise ArgumentError(msg)
        points = check_kink_options("float_arrays", bound, margin, kinks)
        check_room(drawn_shape, bound, margin, points, away_from_zero, dtype)
        return _kink_free_arrays(drawn_shape, dtype, bound, away_from_zero, margin, points)
    _refuse_kinks_alone("float_arrays", kinks)
    values = _parts(dtype, bound) if elements is None else elements
    if away_from_zero:
        values = values.filter(lambda v: abs(v) >= away_from_zero)
    return hnp.arrays(dtype, drawn_shape, elements=values, unique=unique)


def _refuse_kinks_alone(where: str, kinks: Sequence[float]) -> None:
    if tuple(kinks):
        msg = f"{where}: kinks are kept clear of with avoid_kinks=True only; pass avoid_kinks=True with them"
        raise ArgumentError(msg)


@st.composite
def _kink_free_arrays(
    draw: st.DrawFn, shape: Any, dtype: Any, bound: float, away_from_zero: float, margin: float, kinks: Sequence[float]
) -> np.ndarray:
    drawn = shape
    if isinstance(shape, st.SearchStrategy):
        fits = room(bound, margin, kinks, away_from_zero, dtype)
        drawn = draw(shape.filter(lambda s: math.prod((s,) if isinstance(s, int | np.integer) else s) <= fits))
    drawn = (drawn,) if isinstance(drawn, int | np.integer) else tuple(drawn)
    values = draw(kink_free_values(math.prod(drawn), bound, margin, kinks, away_from_zero, dtype))
    return values.reshape(drawn)


def complex_arrays(
    shape: Any = None,
    dtype: Any = np.complex128,
    bound: float = 3.0,
    away_from_zero: float = 0.0,
    *,
    real: st.SearchStrategy[float] | None = None,
    imag: st.SearchStrategy[float] | None = None,
    avoid_kinks: bool = False,
    margin: float = 1e-2,
    kinks: Sequence[float] = (),
    allow_empty: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Complex arrays whose real and imaginary parts lie in ``[-bound, bound]`` (and with
    ``|z| >= away_from_zero``): the complex twin of :func:`float_arrays`.

    Keeping a function clear of its branch cuts (``log`` and ``sqrt`` on the negative
    real axis, say) is the test's choice: filter the drawn arrays, or shift them, or draw
    the ``real`` and ``imag`` parts from strategies of your own (floats the dtype's parts
    hold exactly).

    ``avoid_kinks``, ``margin`` and ``kinks`` act as in :func:`float_arrays` on the real
    parts and on the imaginary parts, each apart from the others of its kind: clear of
    the kinks of ``abs`` at 0 and of ``real``/``imag`` followed by a piecewise op, and
    with no ties between the real (or the imaginary) parts of two entries. With
    ``away_from_zero``, both parts keep that far from 0 (so ``|z|`` does too).

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
    >>> @settings(max_examples=5, deadline=None)
    ... @given(complex_arrays(shapes(min_dims=1), avoid_kinks=True))
    ... def test_sorted_real_parts(z):
    ...     check_grads(lambda z: ng.sum(ng.sort(ng.real(z)) * ng.abs(ng.imag(z))), z)
    >>> test_sorted_real_parts()
    """
    if np.dtype(dtype).kind != "c":
        msg = f"complex_arrays: dtype must be complex64 or complex128, got {np.dtype(dtype)}"
        raise ValueError(msg)
    part_dtype = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
    drawn_shape = shapes(allow_empty=allow_empty) if shape is None else shape
    if avoid_kinks:
        if real is not None or imag is not None:
            msg = "complex_arrays: real or imag and avoid_kinks=True both choose the parts; give one of them"
            raise ArgumentError(msg)
        points = check_kink_options("complex_arrays", bound, margin, kinks)
        check_room(drawn_shape, bound, margin, points, away_from_zero, part_dtype)
        real_parts = _kink_free_arrays(drawn_shape, part_dtype, bound, away_from_zero, margin, points)
        return real_parts.flatmap(
            lambda re: _kink_free_arrays(re.shape, part_dtype, bound, away_from_zero, margin, points).map(
                lambda im: (re + 1j * im).astype(dtype)
            )
        )
    _refuse_kinks_alone("complex_arrays", kinks)
    parts = _parts(part_dtype, bound)
    values = st.builds(complex, parts if real is None else real, parts if imag is None else imag)
    if away_from_zero:
        values = values.filter(lambda z: abs(z) >= away_from_zero)
    return hnp.arrays(dtype, drawn_shape, elements=values)


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


def _mixed_dicts(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[Any, Any]]:
    """Dicts with a string, an int and a tuple key at once (in a drawn order)."""
    keys = st.tuples(st.text(max_size=2), st.integers(-3, 3), st.tuples(st.integers(0, 2), st.text(max_size=1)))
    entries = st.tuples(keys, st.lists(children, min_size=3, max_size=3))
    return entries.flatmap(lambda drawn: st.permutations(list(zip(drawn[0], drawn[1], strict=True))).map(dict))


def _containers(children: st.SearchStrategy[Any], mixed_keys: bool, static_leaves: bool) -> st.SearchStrategy[Any]:
    kinds = [
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_KEYS if mixed_keys else st.text(max_size=2), children, max_size=3),
        st.builds(Pair, children, children),
        st.builds(Box, children, children),
        st.builds(Triple, children, children, children),
    ]
    if mixed_keys:
        kinds.append(_mixed_dicts(children))
    if static_leaves:  # records with a field marked static (an int, a string or None; a float)
        kinds.append(st.builds(Tagged, children, st.one_of(st.integers(), st.text(max_size=3), st.none())))
        kinds.append(st.builds(Marked, children, st.floats(-3, 3)))
    return st.one_of(kinds)


def structures(
    leaves: st.SearchStrategy[Any] | None = None,
    max_leaves: int = 6,
    dtypes: Any = (np.float64, np.float32),
    *,
    mixed_keys: bool = True,
    static_leaves: bool = True,
) -> st.SearchStrategy[Any]:
    """Nested structured values around ``leaves`` (by default arrays of the ``dtypes``, and
    Python floats, or complex numbers when a dtype is complex, mixed with static leaves:
    ints, strings, ``None``, integer arrays).

    Containers: lists, tuples, dicts, attrs records (:class:`Pair`), dataclasses
    (:class:`Box`) and named tuples (:class:`Triple`), nested. ``mixed_keys`` (on by
    default) gives dicts string, int and tuple keys, some dicts all three at once;
    ``False``: string keys only. ``static_leaves`` (on by default) mixes static leaves
    among the default ones (ints, bools, strings, ``None``, int and bool arrays) and
    draws records with a field marked static (:class:`Tagged` with
    ``ng.field(static=True)``, :class:`Marked` with ``ng.dataclass_field(static=True)``);
    ``False``: every leaf is a float or complex value and no field is static.

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

    Every leaf differentiable, dicts keyed by strings:

    >>> @settings(max_examples=5, deadline=None)
    ... @given(structures(mixed_keys=False, static_leaves=False))
    ... def test_all_floats(value):
    ...     everything = ng.tree.tree_leaves_with_path(value)
    ...     assert all(ng.is_differentiable_leaf(leaf) for _, leaf in everything)
    ...     assert len(ng.tree.ravel(value)[0]) == sum(np.size(leaf) for _, leaf in everything)
    >>> test_all_floats()
    """
    if leaves is None:
        arrays = st.sampled_from(list(dtypes)).flatmap(lambda dt: float_arrays(shapes(max_dims=2), dt))
        numbers: st.SearchStrategy[Any] = st.floats(-3, 3)
        if any(np.dtype(dt).kind == "c" for dt in dtypes):
            numbers = st.one_of(numbers, st.complex_numbers(max_magnitude=3, allow_nan=False, allow_infinity=False))
        leaves = st.one_of(arrays, numbers, _STATICS) if static_leaves else st.one_of(arrays, numbers)

    def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return _containers(children, mixed_keys, static_leaves)

    return containers(st.recursive(leaves, containers, max_leaves=max_leaves))


#: The static leaves :func:`structures` mixes in: ints, bools, strings, ``None``, int and bool arrays.
_STATICS = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
    hnp.arrays(np.intp, shapes(max_dims=1)),
    hnp.arrays(np.bool_, shapes(max_dims=1)),
)
