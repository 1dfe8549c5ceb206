"""Utilities over structured values and gradients: map, zeros, add, scale, norms, clipping,
and flattening a structure to one vector and back.

Every function takes any nesting of records, dicts, lists and tuples with array or float
leaves, and returns the same structure (records as instances of their class). ``None``
leaves -- the gradient slots of static fields -- stay ``None``. A
:class:`~nodegrad.RowSparse` gradient is a leaf too, kept sparse where it can be: by
:func:`zeros_like`, :func:`add` (with another), :func:`scale`, :func:`vdot`,
:func:`global_norm` and :func:`clip_by_global_norm`; :func:`ravel` writes it out densely.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.levels import INTERPRETED, PER_EXAMPLE
from nodegrad.engine.rows import RowSparse
from nodegrad.engine.structure import (
    differentiable_leaves,
    flatten,
    flatten_with_paths,
    is_differentiable_leaf,
    map_unless_static,
    map_with_paths,
    pair_leaves,
    zip_leaves,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError

__all__ = [
    "add",
    "clip_by_global_norm",
    "global_norm",
    "map_floats",
    "ravel",
    "scale",
    "tree_leaves_with_path",
    "tree_map",
    "vdot",
    "zeros_like",
]


@reports_unwalkable("tree.tree_map")
def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """Apply ``fn`` leafwise to ``tree`` and the trees in ``rest`` (same structure).

    ``None`` leaves of ``tree`` stay ``None``; a structure mismatch raises a
    :class:`~nodegrad.errors.StructureError` naming the key path.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.tree.tree_map(lambda a, b: a + b, {"w": 1.0, "b": None}, {"w": 2.0, "b": None})
    {'w': 3.0, 'b': None}
    """
    if not callable(fn):
        msg = f"tree_map needs a function, got {type(fn).__name__}"
        raise ArgumentError(msg)
    return _map(fn, tree, rest)


def _map(fn: Callable[..., Any], tree: Any, rest: tuple[Any, ...], floats_only: bool = False) -> Any:
    found, treedef = flatten(tree)
    # Pairing validates every structure (or raises naming the key path) before fn runs.
    others = [[o for _, _, o in pair_leaves(tree, other, absent=_NOTHING)] for other in rest]
    static = treedef.static_leaves()
    mapped = []
    for i, leaf in enumerate(found):
        row = [other[i] for other in others]
        skipped = floats_only and (static[i] or not is_differentiable_leaf(leaf))
        keep = leaf is None or skipped or any(o is _NOTHING for o in row)
        mapped.append(leaf if keep else fn(leaf, *row))
    return treedef.unflatten(mapped)


_NOTHING = object()  # where another tree holds None for a whole subtree: its leaves stay as they are


@reports_unwalkable("tree.map_floats")
def map_floats(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """Like :func:`tree_map`, but ``fn`` sees only the differentiable leaves of ``tree``;
    static leaves (strings, ints, fields marked static, ...) and ``None`` stay as they are.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.tree.map_floats(lambda x: 2 * x, {"w": 1.5, "n": 3, "name": "a"})
    {'w': 3.0, 'n': 3, 'name': 'a'}
    """
    return _map(fn, tree, rest, floats_only=True)


@reports_unwalkable("tree.tree_leaves_with_path")
def tree_leaves_with_path(tree: Any) -> list[tuple[str, Any]]:
    """Every leaf of ``tree`` with its key path, in order.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.tree.tree_leaves_with_path({"layers": [{"w": 1.0}], "name": "m"})
    [("['layers'][0]['w']", 1.0), ("['name']", 'm')]
    """
    return list(flatten_with_paths(tree))


@reports_unwalkable("tree.zeros_like")
def zeros_like(tree: Any) -> Any:
    """Zeros in every differentiable slot of ``tree`` (same dtypes), ``None`` elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.tree.zeros_like({"w": np.ones(2, np.float32), "n": 3})
    {'w': array([0., 0.], dtype=float32), 'n': None}
    """
    return map_unless_static(lambda x: _zero(x) if is_differentiable_leaf(x) else None, tree)


def _zero(x: Any) -> Any:
    if type(x) is RowSparse:
        return RowSparse(x.indices[:0], x.values[:0], x.shape)  # no rows: the same kind, nothing to hold
    # x.__class__, not type(x): a value replay stages answers for the float it stands for
    return x.__class__(0) if isinstance(x, float) else np.zeros_like(x)


@reports_unwalkable("tree.add")
def add(a: Any, b: Any) -> Any:
    """Leafwise ``a + b``. ``None`` in a gradient slot is a zero: ``None + y`` is ``y``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.tree.add([1.0, None, None], [2.0, None, 5.0])
    [3.0, None, 5.0]
    """
    pairs = list(zip_leaves(a, b))  # the same structure, or an error naming the place
    for path, x, y in pairs:
        if is_differentiable_leaf(x) and is_differentiable_leaf(y) and np.shape(x) != np.shape(y):
            where = path or "the top level"
            msg = f"tree.add: at {where} shapes {np.shape(x)} and {np.shape(y)} differ (no broadcasting)"
            raise ShapeError(msg)
    others = iter([y for _, _, y in pairs])
    differentiable = {path for path, _ in differentiable_leaves(a)}

    def slot(path: str, x: Any) -> Any:
        y = next(others)
        if is_differentiable_leaf(x) and path not in differentiable:
            return x  # a float in a field marked static: kept as it is, like any static leaf
        return _add_slot(x, y)

    return map_with_paths(slot, a)


def _add_slot(x: Any, y: Any) -> Any:
    if is_differentiable_leaf(x) and is_differentiable_leaf(y):
        return x + y
    if x is None and is_differentiable_leaf(y):
        return y
    return x  # a float plus None, or a static leaf: kept as it is


@reports_unwalkable("tree.vdot")
def vdot(a: Any, b: Any) -> Any:
    """The inner product of two trees of one structure: the sum over their float and
    complex leaves of ``np.vdot(x, y)`` (``sum(conj(x) * y)``); slots where either is
    ``None`` or static count as zero. A float for real trees, a complex for complex ones.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.tree.vdot({"w": np.array([1.0, 2.0]), "n": None}, {"w": np.array([3.0, 4.0]), "n": 5})
    11.0
    """
    # A float in a field marked static is not differentiable: it counts as zero.
    differentiable = {path for path, _ in differentiable_leaves(a)}
    pairs = [
        (x, y)
        for path, x, y in zip_leaves(a, b)
        if path in differentiable and is_differentiable_leaf(x) and is_differentiable_leaf(y)
    ]
    pairs = [_rows_in_common(x, y) for x, y in pairs]
    if not any(np.iscomplexobj(x) or np.iscomplexobj(y) for x, y in pairs):
        return math.fsum(float(np.sum(np.multiply(x, y, dtype=np.float64))) for x, y in pairs)
    terms = [np.sum(np.multiply(np.conjugate(x), y, dtype=np.complex128)) for x, y in pairs]
    return complex(math.fsum(t.real for t in terms), math.fsum(t.imag for t in terms))


def _rows_in_common(x: Any, y: Any) -> tuple[Any, Any]:
    """Two leaves as arrays whose elementwise product sums to their inner product: a
    RowSparse contributes its rows only (zero elsewhere), met by the same rows of the other."""
    if type(x) is RowSparse and type(y) is RowSparse:
        _, at_x, at_y = np.intersect1d(x.indices, y.indices, assume_unique=True, return_indices=True)
        return x.values[at_x], y.values[at_y]
    if type(x) is RowSparse:
        return x.values, np.asarray(y)[x.indices]
    if type(y) is RowSparse:
        return np.asarray(x)[y.indices], y.values
    return x, y


def _entries(x: Any) -> Any:
    """The entries of a leaf that can be nonzero: a RowSparse's rows, else the leaf."""
    return x.values if type(x) is RowSparse else x


def _check_finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        msg = f"{name} must be a real number, got {type(value).__name__}"
        raise ArgumentError(msg)
    if not math.isfinite(value):
        msg = f"{name} must be finite, got {value}"
        raise ArgumentError(msg)
    return float(value)


@reports_unwalkable("tree.scale")
def scale(tree: Any, factor: float) -> Any:
    """Multiply every leaf by ``factor``, which must be finite.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.tree.scale({"w": 2.0}, 0.5)
    {'w': 1.0}
    """
    factor = _check_finite("scale factor", factor)

    def scaled(x: Any) -> Any:
        if isinstance(x, float | complex):
            return x * factor  # a Python number stays one (a float times a float is a float)
        return x * np.asarray(factor, _entries(x).real.dtype)  # a float32 (or complex64) array stays one

    return map_floats(scaled, tree)


@reports_unwalkable("tree.global_norm")
def global_norm(tree: Any) -> float:
    """The L2 norm over all leaves of ``tree``, as one long vector.

    Computed in float64 with the leaves scaled by the largest magnitude (no overflow or
    underflow in the squares) and the per-leaf sums added with compensated summation
    (``math.fsum``), so the result does not depend on how the values are split up.
    Non-finite entries give a non-finite norm.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.tree.global_norm({"a": np.array([3.0]), "b": [4.0, None]})
    5.0
    """
    # A complex entry counts by its modulus, as two real entries would.
    leaves = [
        np.abs(np.asarray(_entries(x), dtype=np.complex128 if np.iscomplexobj(x) else np.float64))
        for _, x in differentiable_leaves(tree)
    ]
    if not leaves:
        return 0.0
    if any(np.isnan(x).any() for x in leaves):
        return math.nan  # NaN wins over Inf, as in np.linalg.norm
    largest = max(float(np.max(np.abs(x))) if x.size else 0.0 for x in leaves)
    if largest == 0.0 or not math.isfinite(largest):
        return largest
    total = math.fsum(float(np.sum(np.square(x / largest))) for x in leaves)
    return largest * math.sqrt(total)


@reports_unwalkable("tree.clip_by_global_norm")
def clip_by_global_norm(tree: Any, max_norm: float) -> tuple[Any, float]:
    """Scale ``tree`` down so its :func:`global_norm` is at most ``max_norm``.

    Returns
    -------
    clipped : structure
        ``tree`` itself when its norm is within the bound, else a scaled copy.
    norm : float
        The norm before clipping.

    Raises
    ------
    ArgumentError
        If ``max_norm`` is not a finite positive number, or the norm is not finite (a
        NaN or Inf in the gradients; its key path is named).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> clipped, norm = ng.tree.clip_by_global_norm({"g": np.array([3.0, 4.0])}, 1.0)
    >>> clipped["g"], norm
    (array([0.6, 0.8]), 5.0)
    """
    max_norm = _check_finite("max_norm", max_norm)
    if max_norm <= 0:
        msg = f"max_norm must be positive, got {max_norm}"
        raise ArgumentError(msg)
    norm = global_norm(tree)
    if not math.isfinite(norm):
        bad = next(p for p, x in differentiable_leaves(tree) if not np.all(np.isfinite(_entries(x))))
        msg = f"the global norm is not finite: {bad or 'the value'} holds NaN or Inf"
        raise ArgumentError(msg)
    if norm <= max_norm:
        return tree, norm
    return scale(tree, max_norm / norm), norm


@reports_unwalkable("tree.ravel")
def ravel(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten every float leaf of ``tree`` into one vector, and give the inverse.

    JAX's ``ravel_pytree`` and autograd's ``flatten``: for optimisers, samplers and
    solvers written for one vector of parameters. The leaves are laid end to end in the
    order of the structure (C order within each), in their common dtype (a Python float counts
    as float64, so that nothing is rounded on the way); static leaves are
    not in the vector and come back unchanged. Traced leaves give a traced vector, and the
    inverse of a traced vector gives traced leaves, so both directions differentiate.

    Parameters
    ----------
    tree : structure
        A record, dict, list or tuple (nested), an array, or a float.

    Returns
    -------
    flat : ndarray or Traced
        A 1-D array of all float entries.
    unravel : callable
        ``unravel(vector)`` rebuilds ``tree``'s structure from a vector of ``flat``'s size:
        each leaf with its own shape and dtype (a Python float comes back as one).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> flat, unravel = ng.tree.ravel({"w": np.ones((2, 2)), "b": 0.5, "name": "layer"})
    >>> flat
    array([1. , 1. , 1. , 1. , 0.5])
    >>> unravel(flat * 2.0)
    {'w': array([[2., 2.],
           [2., 2.]]), 'b': 1.0, 'name': 'layer'}
    """
    leaves = [leaf for _, leaf in differentiable_leaves(tree)]
    shapes = [np.shape(unwrap(leaf)) for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=int)) for shape in shapes]
    # Python floats count as float64 here, not as weak scalars: the round trip is exact.
    dtype = np.result_type(*(_dtype_of(leaf) for leaf in leaves)) if leaves else np.dtype(np.float64)
    if any(type(leaf) in INTERPRETED for leaf in leaves):
        flat: Any = ops.cat([ops.astype(ops.ravel(leaf), dtype) for leaf in leaves], 0)
    else:
        flat = np.concatenate([np.ravel(leaf) for leaf in leaves]).astype(dtype, copy=False) if leaves else np.zeros(0)
    total = sum(sizes)

    def unravel(vector: Any) -> Any:
        if type(vector) not in INTERPRETED:
            vector = _plain_vector(vector)
        if np.shape(unwrap(vector)) != (total,):
            msg = f"tree.ravel: unravel needs a vector of shape ({total},), got shape {np.shape(unwrap(vector))}"
            raise ShapeError(msg)
        pieces = iter(range(len(leaves)))
        offsets = np.cumsum([0, *sizes])

        def rebuild(leaf: Any) -> Any:
            k = next(pieces)
            part = vector[int(offsets[k]) : int(offsets[k + 1])]
            if np.iscomplexobj(unwrap(part)) and not np.iscomplexobj(unwrap(leaf)):
                part = ops.real(part)  # a real leaf in a complex vector: its imaginary part is 0
            kind = type(unwrap(leaf))
            if kind is float or kind is complex:  # a Python number, or a traced handle of one
                return part[0] if type(part) in INTERPRETED else kind(part[0])
            part = part.reshape(shapes[k])
            target = unwrap(leaf).dtype
            part = part if part.dtype == target else part.astype(target)
            if isinstance(unwrap(leaf), np.generic) and type(part) not in INTERPRETED:
                return part[()]  # a numpy number comes back one (np.float32(x) stays a scalar)
            return part

        return map_floats(rebuild, tree)  # the float leaves, in differentiable_leaves' order

    return flat, unravel


def _dtype_of(leaf: Any) -> Any:
    """A leaf's dtype, Python floats as float64 (the round trip is exact)."""
    leaf = unwrap(leaf)
    return leaf.dtype if type(leaf) in PER_EXAMPLE else np.asarray(leaf).dtype


def _plain_vector(vector: Any) -> np.ndarray:
    """What ``unravel`` was given, as numpy reads it (a list or a range works too)."""
    try:
        array = np.asarray(vector)
    except ValueError as exc:  # a ragged list
        msg = f"tree.ravel: unravel needs a vector of numbers: {exc}"
        raise ShapeError(msg) from None
    if array.dtype.kind not in "biufc":
        msg = f"tree.ravel: unravel needs a vector of numbers, got {type(vector).__name__} of dtype {array.dtype}"
        raise DtypeError(msg)
    return array
