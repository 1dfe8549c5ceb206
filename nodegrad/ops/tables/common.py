"""What every part of a table needs: pandas on demand, and telling values from handles.

A column's values are a plain array (numpy's, or pandas' own array for an extension dtype:
a categorical, a string, a datetime with a time zone) or a value an interpreter stands for
(traced by ``grad``, batched by ``vmap``, staged by ``replay``). Where no column of a step
is such a value, the step is pandas' own (the answer is pandas' by construction); where one
is, nodegrad computes it with its ops, and pandas still decides every choice of rows (which
rows a mask, a sort, a group or a join takes, in which order) from the plain values.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED, PER_EXAMPLE, RECORDING
from nodegrad.engine.staged import Unreplayable, now
from nodegrad.engine.traced import unwrap
from nodegrad.errors import (
    ArgumentError,
    BatchingError,
    DtypeError,
    NoGradientError,
    OpIndexError,
    ShapeError,
    StructureError,
    user_location,
)

__all__ = [
    "MAKERS",
    "NUMPY_METHODS",
    "aligned",
    "as_index",
    "as_numbers",
    "batched_in",
    "by_example",
    "check_key",
    "column_values",
    "decided",
    "delegated",
    "dtype_carrier",
    "dtype_of",
    "from_pandas",
    "holds_handles",
    "is_float",
    "is_handle",
    "length",
    "missing_apart",
    "no_gradient",
    "pandas",
    "pandas_step",
    "per_example",
    "plain_values",
    "row_positions",
    "take_rows",
    "to_pandas",
    "to_values",
]


def pandas() -> Any:
    """The pandas module, imported the first time a table needs it."""
    module = sys.modules.get("pandas")
    if module is not None:
        return module
    try:
        return importlib.import_module("pandas")
    except ImportError:  # pragma: no cover - the extra is installed in every test environment
        msg = "nodegrad's tables need pandas: python -m pip install 'nodegrad[pandas]'"
        raise ArgumentError(msg) from None


def is_handle(value: Any) -> bool:
    """Whether ``value`` is a value an interpreter stands for (traced, batched, staged)."""
    return type(value) in INTERPRETED


def dtype_of(value: Any) -> Any:
    """The dtype user code sees for a column's values (a batched value's examples' dtype)."""
    return getattr(now(unwrap(value)), "dtype", None)


def is_float(value: Any) -> bool:
    """Whether a column's values are float or complex (the columns a table differentiates)."""
    dtype = dtype_of(value)
    return isinstance(dtype, np.dtype) and dtype.kind in "fc"


def length(value: Any) -> int:
    """The number of rows of a column's values."""
    shape = np.shape(now(unwrap(value)))
    if not shape:
        msg = f"a column of a table must have one entry per row, got a 0-d value [at {user_location()}]"
        raise ShapeError(msg)
    return int(shape[0])


def plain_values(value: Any, what: str) -> Any:
    """The plain values under a traced ``value``, for deciding which rows go where (a choice
    with no gradient). A staged value cannot be read so (the choice would be frozen into the
    recording: the call runs eagerly instead), nor a batched one whose examples differ (each
    example would choose its own rows); one whose examples are all the same makes one choice
    for all of them."""
    plain = unwrap(value)
    if type(plain) in RECORDING:  # (read now, the choice would be frozen into the recording)
        msg = f"a table step: {what} depends on the values of a column [at {user_location()}]"
        raise Unreplayable(msg)
    if type(plain) in PER_EXAMPLE:
        same = _same_in_every_example(plain)
        if same is not None:
            return same
        msg = (
            f"a table step: {what} depends on values that differ from example to example under vmap; each example "
            f"would take its own rows: compute it outside vmap, or loop over the examples [at {user_location()}]"
        )
        raise BatchingError(msg)
    return plain


def _same_in_every_example(batched: Any) -> Any:
    """The values of every example of ``batched`` (batched once, its examples plain) where
    they are all the same (NaN matching NaN), else None."""
    examples = unwrap(batched.value)
    if type(examples) is not np.ndarray or not len(examples):
        return None
    first = examples[0]
    same = examples == first
    if examples.dtype.kind in "fc":
        same |= np.isnan(examples) & np.isnan(first)
    return first if bool(np.all(same)) else None


def take_rows(values: Any, positions: np.ndarray) -> Any:
    """``values`` at row ``positions`` (an integer array; -1 for a row with no value, which
    gets NaN as pandas gives it, an integer column becoming float as in pandas). The rows
    present are one gather of ``values`` (a table read so has row-sparse gradients)."""
    positions = np.asarray(positions, dtype=np.int64)
    missing = positions < 0
    if not missing.any():
        return values[positions]
    kind = getattr(dtype_of(values), "kind", "O")
    if is_handle(values) and kind not in "iufc" and _fillable_by_pandas(values, kind):
        # pandas fills a bool column's empty rows with NaN (an object column), a date's with NaT
        values = plain_values(values, "filling the rows a join leaves empty in a column of bools or dates")
    if not is_handle(values):
        return pandas().api.extensions.take(values, positions, allow_fill=True)  # pandas' fill and its dtype
    gathered = values[positions[~missing]]
    if not is_float(values):
        gathered = gathered.astype(np.float64) if is_handle(gathered) else np.asarray(gathered, dtype=np.float64)
    slots = np.full(len(positions), len(positions) - int(missing.sum()))
    slots[~missing] = np.arange(len(slots) - int(missing.sum()))
    return np.concatenate([gathered, np.full(1, np.nan, dtype=dtype_of(gathered))])[slots]


def _fillable_by_pandas(values: Any, kind: str) -> bool:
    """Whether pandas can fill the empty rows of a column of bools or dates: its values are
    one set of plain values (a batched bool column whose examples differ is filled as float,
    NaN in the empty rows, each example its own)."""
    batched = batched_in(values)
    return kind != "b" or batched is None or _same_in_every_example(batched) is not None


def pandas_step(where: str, step: Any) -> Any:
    """``step()``, a pandas computation on plain values: what pandas refuses (a string
    column multiplied by a float, labels that do not compare) raises the nodegrad error of
    its kind, naming ``where``."""
    try:
        return step()
    except TypeError as exc:
        raise DtypeError(f"{where}: {exc} [at {user_location()}]") from None
    except (ValueError, KeyError) as exc:
        raise StructureError(f"{where}: {exc} [at {user_location()}]") from None


def missing_apart(step: Any, *operands: Any) -> Any:
    """``step(*operands)`` on float values, NaN wherever an operand is NaN (pandas' missing
    value), computed so that no NaN reaches the gradient of any other entry: a missing
    operand is replaced by 1 in the step and its result dropped (numpy's arithmetic would
    give ``0 * nan = nan`` in the gradient of every entry it meets)."""
    masks: list[Any] = [np.isnan(o) if is_float(o) else None for o in operands]
    # A mask known now (plain: under grad) of an operand with nothing missing needs no care;
    # under vmap and replay the masks are values of their own, and every float operand is kept apart.
    known = [m is not None and (type(m) is np.ndarray or type(m) is np.bool_) for m in masks]
    apart = [m is not None and not (k and not m.any()) for m, k in zip(masks, known, strict=True)]
    if not any(apart):
        return step(*operands)  # nothing missing: the step as it is
    missing: Any = None
    for m, kept in zip(masks, apart, strict=True):
        if kept:
            missing = m if missing is None else missing | m
    safe = [np.where(m, 1.0, o) if kept else o for o, m, kept in zip(operands, masks, apart, strict=True)]
    return np.where(missing, np.nan, step(*safe))


def as_numbers(values: Any) -> Any:
    """A plain object column of numbers (what pandas gives for a mask clipped or shifted:
    ``True``, ``1.6``, NaN) as float64, as pandas' arithmetic reads its entries; anything
    else as it is."""
    if isinstance(values, np.ndarray) and values.dtype == object:
        try:
            return values.astype(np.float64)
        except (TypeError, ValueError):
            return values
    return values


def by_example(step: Any, *values: Any, what: str) -> Any:
    """``step(*values)``, a computation with no gradient (a comparison), on plain values:
    a traced value's own, and under vmap each example's, the results batched again. A
    staged value cannot be read so: the call runs eagerly."""
    found = batched_in(list(values))
    if found is None:
        return step(*(plain_values(v, what) for v in values))
    results = _each_example(list(values), found, lambda example: step(*(plain_values(v, what) for v in example)))
    return found.level.handle(np.stack(results))


def check_key(values: Any, label: Any, where: str) -> None:
    """Refuse a differentiated key column: rows are grouped and paired by the keys' values,
    which carry no gradient. Another interpreter's is read (a staged one: so the call runs
    eagerly; a batched one: where every example has the same keys)."""
    if type(values) in DIFFERENTIATING:
        msg = (
            f"Frame.{where}: the key column {label!r} is differentiated; use static key columns [at {user_location()}]"
        )
        raise ArgumentError(msg)
    if is_handle(values):
        plain_values(values, f"{where}'s keys")


def no_gradient(kind: str, name: str, advice: str = "", values: Any = None) -> BaseException:
    """The error for a pandas method a table cannot run on differentiated columns. On a
    column a replay stages (``values``), pandas itself would run it: the call runs eagerly
    instead (see :class:`~nodegrad.engine.staged.Unreplayable`)."""
    if any(type(unwrap(v)) in RECORDING for v in (values if isinstance(values, list) else [values])):
        return Unreplayable(f"{kind}.{name} on a staged column is pandas' own [at {user_location()}]")
    more = f": {advice}" if advice else ""
    return NoGradientError(
        f"{kind}.{name}: not something nodegrad's tables compute on differentiated columns{more} [at {user_location()}]"
    )


def delegated(table: Any, kind: str, name: str, advice: str = "") -> Any:
    """pandas' own attribute ``name`` of ``table`` (a Series or Frame whose values are plain),
    a method's Series and table arguments and results converted; on differentiated values,
    the error naming ``kind.name`` (with ``advice``)."""
    if not table._plain():
        if _in_pandas(sys._getframe(1).f_back):
            msg = (
                f"a {kind} of differentiated values reached pandas' own code (which asked for its {name!r}): a pandas "
                f"DataFrame or Series cannot hold them. Make the closed-over table nodegrad's with ng.Frame(df) or "
                f"ng.Series(s), or pass it to the transform as an argument [at {user_location()}]"
            )
            raise ArgumentError(msg)
        raise no_gradient(kind, name, advice, table._handles())
    attribute = getattr(table._pandas(), name)
    if not callable(attribute):
        return from_pandas(attribute)

    def call(*args: Any, **kwargs: Any) -> Any:
        return from_pandas(attribute(*to_pandas(args), **to_pandas(kwargs)))

    return call


def _in_pandas(frame: Any) -> bool:
    """Whether ``frame`` runs pandas' own code (pandas probing a value it was given)."""
    return frame is not None and str(frame.f_globals.get("__name__", "")).startswith("pandas.")


def aligned(left: Any, right: Any, join: str = "outer") -> tuple[np.ndarray, np.ndarray, Any] | None:
    """How pandas aligns two axes of labels ``left`` and ``right`` (pandas Indexes): the
    positions of each result label's entry on each side (-1 where that side has none) and
    the result's labels, from pandas' own ``align``; None where the labels are equal (pandas
    pairs the entries as they are)."""
    if left.equals(right):
        return None
    pd = pandas()
    ours = pd.Series(np.arange(len(left), dtype=np.float64), index=left)
    theirs = pd.Series(np.arange(len(right), dtype=np.float64), index=right)
    ours, theirs = ours.align(theirs, join=join)
    return _positions(ours), _positions(theirs), ours.index


def _positions(probe: Any) -> np.ndarray:
    found = probe.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isnan(found), -1, found).astype(np.int64)


def decided(inputs: Any, decide: Any, what: str) -> Any:
    """``decide(inputs)``: a choice of rows pandas makes from plain values (a mask's rows, a
    sort's order). Under vmap, where ``inputs`` hold batched values (in Series, lists, tuples
    and dicts), each example's choice is made from its own values: a choice that is the same
    for every example is the choice (one set of rows, one index, for all); where examples
    choose differently, a BatchingError says so."""
    found = batched_in(inputs)
    if found is None:
        return decide(inputs)
    choices = _each_example(inputs, found, decide)
    if all(_same_choice(choices[0], other) for other in choices[1:]):
        return choices[0]
    msg = (
        f"a table step: {what} depends on values that differ from example to example under vmap, and the examples "
        f"choose different rows, so no one table holds them: compute it outside vmap, or loop over the examples "
        f"[at {user_location()}]"
    )
    raise BatchingError(msg)


def per_example(step: Any, inputs: Any, what: str) -> Any:
    """``step(inputs)``, pandas' own method of a column with no gradient (a mask batched by
    vmap, whose pandas answer is not arithmetic's: a bool column clipped stays bool, shifted
    becomes objects), run on each example's values (``inputs`` hold batched values in Series,
    lists, tuples and dicts). The pandas Series each example gives are one Series, batched
    again (an object column of numbers as floats); where their row labels differ, no one
    Series holds them, and a BatchingError says so."""
    found = batched_in(inputs)
    results = _each_example(inputs, found, step)
    first = results[0]
    pd = pandas()
    if not all(isinstance(r, pd.Series) and r.index.equals(first.index) for r in results):
        msg = (
            f"a table step: {what} of values that differ from example to example under vmap gives each example its "
            f"own rows, so no one Series holds them: compute it outside vmap, or loop over the examples "
            f"[at {user_location()}]"
        )
        raise BatchingError(msg)
    values = as_numbers(np.stack([r.to_numpy() for r in results]))
    return MAKERS["Series"](found.level.handle(values), index=first.index, name=first.name)


def batched_in(value: Any) -> Any:
    """A batched value in ``value`` (through Series, lists, tuples and dicts), or None."""
    if isinstance(value, MAKERS["Series"]):
        value = value._values
    if isinstance(value, list | tuple):
        return next((b for b in map(batched_in, value) if b is not None), None)
    if isinstance(value, dict):
        return batched_in(list(value.values()))
    plain = unwrap(value)
    return plain if type(plain) in PER_EXAMPLE else None


def _each_example(inputs: Any, found: Any, step: Any) -> list[Any]:
    """``step`` of each example's ``inputs`` (:func:`_example`), for the examples of the
    batched value ``found`` in them."""
    return [step(_example(inputs, k)) for k in range(found.level.size)]


def _example(value: Any, k: int) -> Any:
    """``value`` with each batched value in it replaced by its ``k``-th example's values."""
    if isinstance(value, MAKERS["Series"]):
        return MAKERS["Series"](_example(value._values, k), index=value._index, name=value._name)
    if isinstance(value, list | tuple):
        return type(value)(_example(v, k) for v in value)
    if isinstance(value, dict):
        return {key: _example(v, k) for key, v in value.items()}
    plain = unwrap(value)
    if type(plain) not in PER_EXAMPLE:
        return value
    examples = unwrap(plain.value)
    if type(examples) in PER_EXAMPLE:  # batched twice (vmap of vmap): each level would choose
        return plain_values(plain, "a choice of rows")
    return np.asarray(examples)[k]


def _same_choice(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_choice(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    pd = pandas()
    if isinstance(a, pd.Index) and isinstance(b, pd.Index):
        return a.equals(b) and list(a.names) == list(b.names)
    return bool(a == b) if not isinstance(a, pd.Index | pd.Series) else False


def row_positions(index: Any, key: Any, how: str, where: str = "Frame") -> tuple[Any, Any]:
    """The rows ``key`` selects from labels ``index`` by pandas' own indexing (``how`` is
    ``"loc"``, ``"iloc"`` or ``"getitem"``): an array of positions and the result's labels,
    or one position and None where pandas gives a single row. What pandas refuses raises
    the nodegrad error of its kind, naming ``where`` and the key."""
    pd = pandas()
    probe = pd.Series(np.arange(len(index)), index=index)
    try:
        found = probe[key] if how == "getitem" else getattr(probe, how)[key]
    except KeyError as exc:
        msg = f"{where}{'' if how == 'getitem' else '.' + how}[...]: no rows labelled {exc} [at {user_location()}]"
        raise StructureError(msg) from None
    except IndexError as exc:
        msg = f"{where}.{how}[...]: {exc} [at {user_location()}]"
        raise OpIndexError(msg) from None
    except (TypeError, ValueError) as exc:
        msg = f"{where}{'' if how == 'getitem' else '.' + how}[{key!r}]: {exc} [at {user_location()}]"
        raise ArgumentError(msg) from None
    if isinstance(found, pd.Series):
        return found.to_numpy(), found.index
    return int(found), None


#: numpy functions pandas answers with the object's own method (numpy calls ``s.sum(...)``).
NUMPY_METHODS: dict[Any, str] = {
    np.sum: "sum", np.mean: "mean", np.std: "std", np.var: "var", np.min: "min", np.max: "max",
    np.amin: "min", np.amax: "max", np.prod: "prod", np.cumsum: "cumsum", np.cumprod: "cumprod",
    np.round: "round", np.around: "round", np.clip: "clip", np.argmax: "argmax", np.argmin: "argmin",
}  # fmt: skip


#: The table types, filled by their modules: ``"Series"`` and ``"Frame"``.
MAKERS: dict[str, Any] = {}


def as_index(labels: Any) -> Any:
    """``labels`` as a pandas Index, a MultiIndex kept as it is (``pd.Index(mi)`` is flat)."""
    pd = pandas()
    return labels if isinstance(labels, pd.Index) else pd.Index(labels)


def from_pandas(value: Any) -> Any:
    """A pandas Series or DataFrame as nodegrad's table type; anything else as it is."""
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(value, pd.DataFrame):
            return MAKERS["Frame"](value)
        if isinstance(value, pd.Series):
            return MAKERS["Series"](value)
    return value


def to_pandas(value: Any, what: str = "") -> Any:
    """``value`` with nodegrad's table types as pandas', through lists, tuples and dicts;
    a traced value read as its plain values where ``what`` names a choice of rows (a key
    or a mask, which carries no gradient)."""
    if isinstance(value, MAKERS["Series"]):
        return value._pandas() if not is_handle(value._values) else value._plain_copy(what or "a pandas call")
    if isinstance(value, MAKERS["Frame"]):
        return value._pandas()
    if isinstance(value, list | tuple):
        return type(value)(to_pandas(v, what) for v in value)
    if isinstance(value, dict):
        return {k: to_pandas(v, what) for k, v in value.items()}
    if what and is_handle(value):
        return plain_values(value, what)
    return value


def column_values(series: Any) -> Any:
    """A pandas Series' values: a numpy array for a numpy dtype, pandas' own array for one of
    its extension dtypes (a categorical, a string, a datetime with a time zone)."""
    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array


def dtype_carrier(value: Any) -> Any:
    """What numpy reads a shape from: the value itself, a plain array under a handle."""
    return now(unwrap(value))


def to_values(value: Any) -> Any:
    """``value`` with every Series and table in it replaced by its values (as numpy reads
    pandas objects), through lists, tuples and dicts."""
    if isinstance(value, MAKERS["Series"]):
        return value._values
    if isinstance(value, MAKERS["Frame"]):
        return value.to_numpy()
    if isinstance(value, list | tuple):
        return type(value)(to_values(v) for v in value)
    if isinstance(value, dict):
        return {k: to_values(v) for k, v in value.items()}
    return value


def holds_handles(value: Any) -> bool:
    """Whether a differentiated value is in ``value`` (a table's column, a list, ...)."""
    if isinstance(value, MAKERS["Series"]):
        return is_handle(value._values)
    if isinstance(value, MAKERS["Frame"]):
        return any(is_handle(v) for v in value._columns.values())
    if isinstance(value, list | tuple):
        return any(holds_handles(v) for v in value)
    if isinstance(value, dict):
        return any(holds_handles(v) for v in value.values())
    return is_handle(value)
