"""pandas DataFrames as hypothesis draws them: :func:`data_frames` (re-exported by
:mod:`nodegrad.testing.strategies`). pandas is imported when the strategy is made, not
when this module is."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import hypothesis.strategies as st
import numpy as np

from nodegrad.errors import ArgumentError

__all__ = ["data_frames"]

#: The kinds of key column, and the values each draws from: few, so that keys repeat.
KEY_KINDS = ("int", "str", "category")
_INT_KEYS = (0, 1, 2, 3)
_STR_KEYS = ("a", "b", "c")
_CATEGORIES = ("lo", "mid", "hi", "unused")  # the last one never drawn: an empty group


def _import_pandas() -> Any:
    try:
        return importlib.import_module("pandas")  # an extra: imported when a table strategy is made
    except ImportError:
        msg = "data_frames needs pandas, which nodegrad's `pandas` extra installs: pip install 'nodegrad[pandas]'"
        raise ImportError(msg) from None


def _column_names(where: str, given: Any, prefix: str) -> list[str]:
    if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
        return [f"{prefix}{k}" for k in range(given)]
    if isinstance(given, str) or not isinstance(given, Sequence | Mapping):
        msg = f"data_frames: {where} must be a count or a sequence of column names, got {given!r}"
        raise ArgumentError(msg)
    return list(given)


def _key_kinds(key_columns: Any) -> dict[str, str | None]:
    """Each key column's kind (``None``: drawn)."""
    if isinstance(key_columns, Mapping):
        unknown = {name: kind for name, kind in key_columns.items() if kind not in KEY_KINDS}
        if unknown:
            msg = f"data_frames: key_columns kinds must be among {KEY_KINDS}, got {unknown}"
            raise ArgumentError(msg)
        return dict(key_columns)
    return dict.fromkeys(_column_names("key_columns", key_columns, "key"))


def data_frames(
    min_rows: int = 0,
    max_rows: int = 6,
    float_columns: int | Sequence[str] = ("x",),
    key_columns: int | Sequence[str] | Mapping[str, str] = ("key",),
    *,
    dtype: Any = np.float64,
    bound: float = 3.0,
    allow_nan: bool = False,
    missing_keys: bool = True,
) -> st.SearchStrategy[Any]:
    """pandas DataFrames of float columns and key columns, as ``ng.grad`` takes them.

    The float columns (differentiable) hold values in ``[-bound, bound]`` of ``dtype``,
    and with ``allow_nan`` some NaN entries. The key columns (static) are ints (a nullable
    ``Int64`` column when keys may be missing), strings or categoricals (with a category no
    row has), each drawn from three or four values so that keys repeat, and with
    ``missing_keys`` some missing ones (``<NA>``, ``None`` or ``NaN``, as pandas keeps them):
    what ``groupby`` and ``merge`` meet. The index is a ``RangeIndex``.

    Needs pandas (the ``pandas`` extra); it is imported when the strategy is made.

    Parameters
    ----------
    min_rows, max_rows : int
        The number of rows (0 included by default: an empty table).
    float_columns : int or sequence of str
        The float columns' names, or how many (named ``x0``, ``x1``, ...).
    key_columns : int, sequence of str, or mapping of str to str
        The key columns' names (each of a drawn kind), how many (``key0``, ...), or a
        mapping from name to kind: ``"int"``, ``"str"`` or ``"category"``.
    dtype : float dtype, default float64
        The float columns' dtype.
    bound : float, default 3.0
        The float entries lie in ``[-bound, bound]``.
    allow_nan : bool, default False
        Whether float entries may be NaN.
    missing_keys : bool, default True
        Whether key entries may be missing.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import nodegrad as ng
    >>> @settings(max_examples=10, deadline=None)
    ... @given(data_frames(min_rows=1, float_columns=("price",), key_columns={"store": "str"}))
    ... def test_revenue(table):
    ...     g = ng.grad(lambda t: np.sum(t["price"] ** 2.0))(table)
    ...     assert list(g.columns) == ["price"] and g.index.equals(table.index)
    ...     np.testing.assert_allclose(g["price"], 2.0 * table["price"])
    >>> test_revenue()
    """
    pd = _import_pandas()
    floats = _column_names("float_columns", float_columns, "x")
    keys = _key_kinds(key_columns)
    _check_frame_options(min_rows, max_rows, floats, keys, dtype)
    kinds = st.tuples(*(st.sampled_from(KEY_KINDS) if kind is None else st.just(kind) for kind in keys.values()))
    return st.tuples(st.integers(min_rows, max_rows), kinds).flatmap(
        lambda drawn: _frames_of(
            pd, drawn[0], floats, dict(zip(keys, drawn[1], strict=True)), dtype, bound, allow_nan, missing_keys
        )
    )


def _check_frame_options(min_rows: Any, max_rows: Any, floats: list[str], keys: dict[str, Any], dtype: Any) -> None:
    if not (isinstance(min_rows, int) and isinstance(max_rows, int) and 0 <= min_rows <= max_rows):
        msg = f"data_frames: need 0 <= min_rows <= max_rows (ints), got min_rows={min_rows!r}, max_rows={max_rows!r}"
        raise ArgumentError(msg)
    names = [*floats, *keys]
    if len(set(names)) != len(names):
        msg = f"data_frames: column names must be distinct, got {names}"
        raise ArgumentError(msg)
    if np.dtype(dtype).kind != "f":
        msg = f"data_frames: dtype must be a float dtype, got {np.dtype(dtype)}"
        raise ArgumentError(msg)


def _frames_of(
    pd: Any,
    rows: int,
    floats: list[str],
    keys: dict[str, str],
    dtype: Any,
    bound: float,
    allow_nan: bool,
    missing_keys: bool,
) -> st.SearchStrategy[Any]:
    if np.dtype(dtype).itemsize == 2:
        number = st.floats(-bound, bound, allow_nan=False, allow_subnormal=False, width=16)
    elif np.dtype(dtype).itemsize == 4:
        number = st.floats(-bound, bound, allow_nan=False, allow_subnormal=False, width=32)
    else:
        number = st.floats(-bound, bound, allow_nan=False, allow_subnormal=False)
    entry = st.one_of(number, st.just(float("nan"))) if allow_nan else number
    float_values = st.lists(st.lists(entry, min_size=rows, max_size=rows), min_size=len(floats), max_size=len(floats))
    key_values = st.tuples(*(_key_entries(kind, rows, missing_keys) for kind in keys.values()))

    def build(drawn: tuple[list[list[float]], tuple[list[Any], ...]]) -> Any:
        columns: dict[str, Any] = {name: np.array(v, dtype=dtype) for name, v in zip(floats, drawn[0], strict=True)}
        for (name, kind), values in zip(keys.items(), drawn[1], strict=True):
            columns[name] = _key_column(pd, kind, values, missing_keys)
        return pd.DataFrame(columns, index=pd.RangeIndex(rows))

    return st.tuples(float_values, key_values).map(build)


def _key_entries(kind: str, rows: int, missing_keys: bool) -> st.SearchStrategy[list[Any]]:
    pool: tuple[Any, ...] = {"int": _INT_KEYS, "str": _STR_KEYS, "category": _CATEGORIES[:-1]}[kind]
    entry = st.sampled_from(pool)
    if missing_keys:
        entry = st.one_of(entry, st.none())
    return st.lists(entry, min_size=rows, max_size=rows)


def _key_column(pd: Any, kind: str, values: list[Any], missing_keys: bool) -> Any:
    if kind == "int":
        return pd.array(values, dtype="Int64" if missing_keys else "int64")
    if kind == "category":
        return pd.Categorical(values, categories=list(_CATEGORIES))
    return pd.array(values, dtype=object)
