"""Programs as data: a table's columns and index, a pipeline's steps, its tail and loss, and
the Python source that builds them; what pandas makes of a step (its columns' kinds, whether
a program may hold its value)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import pandas as pd

#: The kinds of step a program is drawn from; each can be switched off.
FAMILIES: dict[str, str] = {
    "filter": "row filters by a boolean mask, f[f['x'] > c], with &, | and ~",
    "assign": "assign with chained callables, a later one reading a column an earlier one made",
    "arith": "column arithmetic, numpy ufuncs, comparisons and // (static columns)",
    "reduce": "column reductions: sum, mean, std, var, min, max, prod, count",
    "window": "rolling(k).mean() and .sum(), shift, diff, cumsum",
    "series": "clip, where, map(dict) on static columns, astype",
    "align": "Series of other row orders or subsets, aligned by label",
    "transform": "groupby(k)['x'].transform(name), and a column minus it",
    "groupby": "groupby aggregations (sum, mean, min, max, count, agg dicts) by one or more keys, "
    "with as_index, observed, dropna and sort",
    "groupby_stats": "groupby std and var",
    "merge": "merge how inner, left, right, outer; on or left_on/right_on; a constant right table or one derived",
    "sort": "sort_values on columns with ties and NaN: ascending, kind, na_position",
    "loc": "loc by labels, label slices, masks and [rows, columns]; column selection",
    "iloc": "iloc by positions, slices, masks and [rows, columns]",
    "frame_math": "arithmetic and numpy ufuncs on a table of float columns",
}
ALL_FAMILIES = frozenset(FAMILIES)
MAX_ROWS = 300

HEADER = "import numpy as np, pandas as pd, nodegrad as ng\nnan = np.nan"
NAMES: dict[str, Any] = {"np": np, "pd": pd, "nan": np.nan}  # what a program's source is evaluated with


# -- frames as data ----------------------------------------------------------------------------


def literal(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool | np.bool_):
        return repr(bool(value))
    if isinstance(value, int | np.integer):
        return repr(int(value))
    if isinstance(value, float | np.floating):
        return "nan" if np.isnan(value) else repr(float(value))
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def as_python(value: Any) -> Any:
    """A label as a plain Python value (what a program's source writes)."""
    if isinstance(value, tuple):
        return tuple(as_python(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


@attrs.frozen
class Column:
    name: str
    kind: str  # float int bool str category datetime
    values: tuple[Any, ...]
    categories: tuple[str, ...] = ()

    def source(self) -> str:
        items = literal(list(self.values))
        if self.kind == "category":
            return f"pd.Categorical({items}, categories={list(self.categories)!r})"
        if self.kind == "datetime":
            return f"pd.to_datetime({items})"
        return items

    def take(self, rows: Sequence[int]) -> Column:
        return attrs.evolve(self, values=tuple(self.values[r] for r in rows))


@attrs.frozen
class Table:
    """A DataFrame as data: its columns and its index (the labels of each level, none for a
    RangeIndex, and their names). Its source is what builds it, in a program and a repro."""

    columns: tuple[Column, ...]
    levels: tuple[tuple[Any, ...], ...] = ()
    names: tuple[str | None, ...] = ()

    @property
    def rows(self) -> int:
        return len(self.columns[0].values) if self.columns else 0

    def source(self) -> str:
        data = "{" + ", ".join(f"{c.name!r}: {c.source()}" for c in self.columns) + "}"
        if not self.levels:
            return f"pd.DataFrame({data})"
        if len(self.levels) == 1:
            index = f"pd.Index({literal(list(self.levels[0]))}, name={self.names[0]!r})"
        else:
            arrays = literal([list(level) for level in self.levels])
            index = f"pd.MultiIndex.from_arrays({arrays}, names={list(self.names)!r})"
        return f"pd.DataFrame({data}, index={index})"

    def take(self, rows: Sequence[int]) -> Table:
        levels = tuple(tuple(level[r] for r in rows) for level in self.levels)
        return Table(tuple(c.take(rows) for c in self.columns), levels, self.names)

    def without(self, name: str) -> Table:
        return attrs.evolve(self, columns=tuple(c for c in self.columns if c.name != name))

    def floats(self) -> list[str]:
        return [c.name for c in self.columns if c.kind == "float"]


# -- programs as data ---------------------------------------------------------------------------


@attrs.frozen
class Step:
    line: str  # `t = line` in the pipeline (the returned expression, for its tail)
    families: frozenset[str]


@attrs.frozen
class Program:
    """A pipeline of pandas steps over ``t`` (a DataFrame), its returned value (``tail``) and
    a scalar ``loss`` of that value (``out``); ``table`` is df, ``other`` df2 (the same
    structure, other floats), ``rights`` the constant right tables of merges (R0, R1, ...),
    ``scaled`` the float columns vmap's examples scale."""

    seed: int
    table: Table
    other: Table
    rights: tuple[Table, ...]
    steps: tuple[Step, ...]
    tail: Step
    loss: str | None
    families_drawn: frozenset[str] = ALL_FAMILIES

    @property
    def families(self) -> frozenset[str]:
        found: set[str] = set()
        for step in (*self.steps, self.tail):
            found |= step.families
        return frozenset(found)

    @property
    def scaled(self) -> list[str]:
        return self.table.floats()

    def pipeline_source(self, compact: bool = False) -> list[str]:
        if compact:  # one line: `def pipeline(t): t = ...; return ...`
            return ["def pipeline(t): " + "".join(f"t = {s.line}; " for s in self.steps) + f"return {self.tail.line}"]
        return ["def pipeline(t):", *(f"    t = {s.line}" for s in self.steps), f"    return {self.tail.line}"]

    def source(self, *, other: bool = True, loss: bool = True, scaled: bool = True, compact: bool = False) -> str:
        """The program as Python: df (and df2), the merges' right tables, ``pipeline`` (and
        ``loss``, ``scaled_loss``); ``compact`` writes each function on one line."""
        body = self.pipeline_source(compact)
        lines = [HEADER.replace("\n", "; ") if compact else HEADER, f"df = {self.table.source()}"]
        if other:
            lines.append(f"df2 = {self.other.source()}")
        text = "\n".join(body)
        lines += [f"R{k} = {r.source()}" for k, r in enumerate(self.rights) if re.search(rf"\bR{k}\b", text)]
        lines += body
        if loss and self.loss is not None:
            if compact:
                lines.append(f"def loss(t): out = pipeline(t); return {self.loss}")
            else:
                lines += ["def loss(t):", "    out = pipeline(t)", f"    return {self.loss}"]
            if scaled and self.scaled:
                assigned = ", ".join(f"{c}=d[{c!r}] * s" for c in self.scaled)
                lines += [
                    "def scaled_loss(s, d):" + (" " if compact else "\n    ") + f"return loss(d.assign({assigned}))"
                ]
        return "\n".join(lines) + "\n"

    def namespace(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"__name__": "program"}
        exec(compile(self.source(), "<program>", "exec"), ns)
        return ns


# -- what pandas makes of a program ------------------------------------------------------------


def column_kinds(frame: pd.DataFrame) -> dict[str, str]:
    """Each (string, unrepeated) column label of ``frame`` and its kind."""
    found: dict[str, str] = {}
    labels = list(frame.columns)
    for label in labels:
        if not isinstance(label, str) or labels.count(label) > 1:
            continue
        dtype = frame[label].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            found[label] = "category"
        elif dtype.kind == "f":
            found[label] = "float"
        elif dtype.kind in "iu":
            found[label] = "int"
        elif dtype.kind == "b":
            found[label] = "bool"
        elif dtype.kind == "M":
            found[label] = "datetime"
        elif pd.api.types.is_string_dtype(dtype):
            found[label] = "str"
        else:
            found[label] = "other"
    return found


def quietly(thunk: Callable[[], Any]) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return thunk()


def acceptable(value: Any, table: bool) -> bool:
    """A step's (``table``) or a pipeline's value a program may hold: a DataFrame of string
    labels, not too long, its floats finite or NaN (a Series or a number too, at the end)."""
    if isinstance(value, pd.DataFrame):
        kinds = column_kinds(value)
        if len(kinds) != value.shape[1] or "other" in kinds.values() or len(value) > MAX_ROWS:
            return False
        return all(not np.isinf(value[c].to_numpy()).any() for c, k in kinds.items() if k == "float")
    if table:
        return False
    if isinstance(value, pd.Series):
        if len(value) > MAX_ROWS:
            return False
        return value.dtype.kind != "f" or not np.isinf(value.to_numpy()).any()
    if isinstance(value, bool | int | float | np.number | np.bool_):
        return not (isinstance(value, float | np.floating) and np.isinf(value))
    return False


def pandas_value(thunk: Callable[[], Any]) -> Any:
    try:
        return quietly(thunk)
    except Exception:
        return None


def valid(program: Program, check: str) -> bool:
    """Whether pandas runs ``program``'s pipeline on df, with an output a program may hold,
    and (for the checks that need one) a finite loss."""
    try:
        ns = quietly(program.namespace)
        out = quietly(lambda: ns["pipeline"](ns["df"]))
        if not acceptable(out, table=False):
            return False
        if check in ("grad", "vmap"):
            if program.loss is None:
                return False
            value = quietly(lambda: ns["loss"](ns["df"]))
            return bool(np.isfinite(value)) and abs(value) < 1e8
    except Exception:
        return False
    return True
