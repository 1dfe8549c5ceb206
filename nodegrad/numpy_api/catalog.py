"""Every public callable of numpy, classified by what it does with a traced value.

The scope is each callable of ``numpy.__all__``, ``numpy.linalg.__all__`` and
``numpy.fft.__all__`` (classes, dtypes and submodules are not callables to classify),
plus ``numpy.random``, which draws plain data from plain parameters. Each name lands in
one of four categories, the first two derived from the tables, the last two kept by hand
with a one-line reason per entry:

- ``differentiable``: a key of :data:`~nodegrad.numpy_api.FUNCTIONS` or
  :data:`~nodegrad.numpy_api.UFUNCS`, or a constructor ``nodegrad.numpy`` replaces
  (the ``replaced`` argument of :func:`classify`);
- ``plain``: passes plain values through: :data:`~nodegrad.numpy_api.VALUE_FUNCTIONS` and
  :data:`~nodegrad.numpy_api.VALUE_UFUNCS`, ufuncs with no floating-point loop (traced
  values are floats), and the callables numpy does not dispatch, which build arrays from
  shapes and plain parameters or set options (``zeros``, ``arange``, ``set_printoptions``);
- ``not differentiable`` (:data:`NOT_DIFFERENTIABLE`): refused on traced values, and
  rightly so: integer, boolean or index results, piecewise-constant values, in-place
  writers, I/O, set operations;
- ``not yet`` (:data:`NOT_YET`): differentiable in principle, refused for want of a rule.

A callable numpy does not dispatch that passes traced arguments on to one it does
(:data:`DELEGATES`: ``np.row_stack`` calls ``np.vstack``) has that one's category. A
hand-kept entry that the tables have since taken up (a rule, a value entry) has the
derived category: it wins. Refused functions that numpy dispatches raise
:class:`~nodegrad.errors.NoGradientError` naming themselves (``np.histogram``,
``np.unique``); the few refused callables numpy does not dispatch
fail when they convert a traced value to a plain array.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Collection
from typing import Any

import numpy as np

from nodegrad.numpy_api.functions import FUNCTIONS, VALUE_FUNCTIONS
from nodegrad.numpy_api.ufuncs import UFUNCS, VALUE_UFUNCS

__all__ = [
    "CATEGORIES",
    "DELEGATES",
    "NOT_DIFFERENTIABLE",
    "NOT_YET",
    "classify",
    "derived_category",
    "is_dispatched",
    "overlaps",
    "public_callables",
    "stale_entries",
    "unknown_entries",
    "writers",
]

CATEGORIES = ("differentiable", "plain", "not differentiable", "not yet")

# The functions numpy hands to ``__array_function__`` are instances of this type.
_DISPATCHER = type(np.concatenate)

_NAMESPACES = {"np": np, "np.linalg": np.linalg, "np.fft": np.fft}
_DATA_MODULES = {"np.random": np.random}  # plain data drawn from plain parameters

_WRITES = "writes into an array in place"
_INDICES = "returns indices"
_BOOLS = "returns booleans"
_DTYPES = "answers a question about dtypes"
_DATES = "works on dates and business days"
_TEXT = "formats an array as text"
_SAVES = "writes arrays to files"
_SETS = "a set operation: returns unique values"
_COUNTS = "counts samples in bins: piecewise constant"
_BUFFERS = "reads raw memory or an iterator, not array values"
_MATRIX = "builds the np.matrix subclass"

#: Callables numpy does not dispatch that pass traced arguments on to a dispatched one: each
#: has the category of the one it calls.
DELEGATES: dict[str, str] = {
    "np.row_stack": "np.vstack",  # a deprecated name of vstack
    "np.fft.fftfreq": "np.multiply",  # the frequencies times 1 / (n * d): traced in the spacing d
    "np.fft.rfftfreq": "np.multiply",
}

#: Refused on traced values because their results carry no gradient: name -> reason.
NOT_DIFFERENTIABLE: dict[str, str] = {
    "np.copyto": _WRITES,
    "np.put": _WRITES,
    "np.place": _WRITES,
    "np.putmask": _WRITES,
    "np.put_along_axis": _WRITES,
    "np.fill_diagonal": _WRITES,
    "np.argwhere": _INDICES,
    "np.flatnonzero": _INDICES,
    "np.nanargmax": _INDICES,
    "np.nanargmin": _INDICES,
    "np.argpartition": "returns the permutation that partitions: indices",
    "np.lexsort": "returns the permutation that sorts: indices",
    "np.searchsorted": "returns insertion indices: piecewise constant",
    "np.digitize": "returns bin indices: piecewise constant",
    "np.unravel_index": _INDICES,
    "np.ravel_multi_index": _INDICES,
    "np.diag_indices_from": _INDICES,
    "np.tril_indices_from": _INDICES,
    "np.triu_indices_from": _INDICES,
    "np.ix_": "builds index arrays from index sequences",
    "np.any": _BOOLS,
    "np.all": _BOOLS,
    "np.isin": _BOOLS,
    "np.array_equiv": _BOOLS,
    "np.isposinf": _BOOLS,
    "np.isneginf": _BOOLS,
    "np.may_share_memory": "returns a boolean about memory",
    "np.shares_memory": "returns a boolean about memory",
    "np.isfortran": "returns a memory-layout flag",
    "np.can_cast": _DTYPES,
    "np.min_scalar_type": _DTYPES,
    "np.common_type": _DTYPES,
    "np.busday_offset": _DATES,
    "np.busday_count": _DATES,
    "np.is_busday": _DATES,
    "np.datetime_as_string": _DATES,
    "np.array2string": _TEXT,
    "np.array_repr": _TEXT,
    "np.array_str": _TEXT,
    "np.save": _SAVES,
    "np.savez": _SAVES,
    "np.savez_compressed": _SAVES,
    "np.savetxt": _SAVES,
    "np.unique": _SETS,
    "np.unique_all": _SETS,
    "np.unique_counts": _SETS,
    "np.unique_inverse": _SETS,
    "np.unique_values": _SETS,
    "np.union1d": _SETS,
    "np.intersect1d": _SETS,
    "np.setdiff1d": _SETS,
    "np.setxor1d": _SETS,
    "np.histogram": _COUNTS,
    "np.histogram2d": _COUNTS,
    "np.histogramdd": _COUNTS,
    "np.histogram_bin_edges": "bin edges from the range of the samples: piecewise linear, chosen by counts",
    "np.fix": "rounds towards zero: piecewise constant",
    "np.packbits": "packs booleans into bits",
    "np.unpackbits": "unpacks integers into bits",
    "np.einsum_path": "returns a contraction order, not values",
    "np.linalg.matrix_rank": "returns an integer",
    "np.frombuffer": _BUFFERS,
    "np.fromiter": _BUFFERS,
    "np.from_dlpack": _BUFFERS,
    "np.nested_iters": _BUFFERS,
    "np.asmatrix": _MATRIX,
    "np.bmat": _MATRIX,
}

#: Differentiable in principle, refused on traced values for want of a rule: name -> reason.
NOT_YET: dict[str, str] = {}


def public_callables() -> dict[str, Any]:
    """Every callable in scope, by qualified name (``np.sum``, ``np.linalg.eig``), with
    ``np.random`` standing for the random module."""
    found: dict[str, Any] = {}
    for prefix, module in _NAMESPACES.items():
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not inspect.isclass(obj) and not isinstance(obj, types.ModuleType):
                found[f"{prefix}.{name}"] = obj
    return found | _DATA_MODULES


def writers() -> dict[str, Any]:
    """The callables that write into an array in place or into a file, by qualified name:
    inside ``vmap``, run once per example, each example would overwrite the last one's."""
    callables = public_callables()
    return {name: callables[name] for name, why in NOT_DIFFERENTIABLE.items() if why in (_WRITES, _SAVES)}


def is_dispatched(obj: Any) -> bool:
    """Whether numpy hands traced arguments of ``obj`` to nodegrad (a ufunc, or a function
    numpy dispatches through ``__array_function__``)."""
    return isinstance(obj, np.ufunc | _DISPATCHER)


def _has_float_loop(ufunc: np.ufunc) -> bool:
    return any(np.dtype(code).kind == "f" for types_ in ufunc.types for code in types_.split("->")[0])


def _in(obj: Any, table: Collection[Any]) -> bool:
    try:
        return obj in table
    except TypeError:  # unhashable
        return False


def derived_category(name: str, obj: Any, replaced: Collection[str] = ()) -> str | None:
    """The category that ``obj`` (public as ``name``) has from the tables, or None when it
    is left to the hand-kept lists."""
    ufunc = isinstance(obj, np.ufunc)
    if _in(obj, UFUNCS if ufunc else FUNCTIONS) or name.removeprefix("np.") in replaced:
        return "differentiable"
    if _in(obj, VALUE_UFUNCS if ufunc else VALUE_FUNCTIONS) or (ufunc and not _has_float_loop(obj)):
        return "plain"
    if isinstance(obj, types.ModuleType) and name in _DATA_MODULES:
        return "plain"
    if name in DELEGATES:
        target = DELEGATES[name]
        return derived_category(target, public_callables()[target], replaced)
    if not is_dispatched(obj) and name not in NOT_DIFFERENTIABLE and name not in NOT_YET:
        return "plain"  # numpy converts every argument to a plain value itself
    return None


def _explicit(name: str) -> str | None:
    if name in NOT_DIFFERENTIABLE:
        return "not differentiable"
    return "not yet" if name in NOT_YET else None


def classify(replaced: Collection[str] = ()) -> dict[str, list[str]]:
    """``{category: sorted qualified names}`` over :func:`public_callables`, with an
    ``"unclassified"`` list for names in no category (empty while the lists are complete).

    ``replaced`` names the top-level constructors that ``nodegrad.numpy`` replaces with
    versions taking traced values (its ``REPLACED``): they count as differentiable.
    """
    out: dict[str, list[str]] = {category: [] for category in (*CATEGORIES, "unclassified")}
    for name, obj in public_callables().items():
        out[derived_category(name, obj, replaced) or _explicit(name) or "unclassified"].append(name)
    return {category: sorted(names) for category, names in out.items()}


def overlaps(replaced: Collection[str] = ()) -> list[str]:
    """Names in two categories: in both hand-kept lists, in both derived ones, or kept as
    not differentiable while the tables differentiate them. (A hand-kept entry the tables
    have since taken up otherwise is not one: see :func:`stale_entries`.)"""
    found = sorted(set(NOT_DIFFERENTIABLE) & set(NOT_YET))
    for name, obj in public_callables().items():
        category = derived_category(name, obj, replaced)
        if category == "differentiable" and name in NOT_DIFFERENTIABLE:
            found.append(f"{name}: differentiable and not differentiable")
        ufunc = isinstance(obj, np.ufunc)
        if _in(obj, UFUNCS if ufunc else FUNCTIONS) and _in(obj, VALUE_UFUNCS if ufunc else VALUE_FUNCTIONS):
            found.append(f"{name}: differentiable and plain")
    return found


def stale_entries(replaced: Collection[str] = ()) -> list[str]:
    """Hand-kept entries that the tables now classify (a rule or a value entry was added):
    the derived category counts, and the entry can go."""
    callables = public_callables()
    return sorted(
        name
        for name in set(NOT_YET) | set(NOT_DIFFERENTIABLE)
        if name in callables and derived_category(name, callables[name], replaced) is not None
    )


def unknown_entries() -> list[str]:
    """Hand-kept entries that name no public callable of this numpy."""
    known = set(public_callables())
    return sorted((set(NOT_DIFFERENTIABLE) | set(NOT_YET) | set(DELEGATES) | set(DELEGATES.values())) - known)
