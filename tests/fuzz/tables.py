"""A differential tester of tables: random pandas pipelines, run by nodegrad, against pandas.

Each program draws a DataFrame (float columns with NaN, ints, bools, strings, categoricals,
datetimes; a RangeIndex, string labels that repeat, int labels or a named MultiIndex) and a
pipeline of pandas steps ending in a table, a Series or a number, with a scalar loss of it.
pandas runs the pipeline eagerly on the plain DataFrame: that is the oracle, and it shares no
code with nodegrad. Four checks run it under nodegrad:

``vjp``
    ``ng.vjp(pipeline, df)``'s output is pandas' own: values (floats to 1e-12 relative),
    index with its levels and names, columns, dtypes, row order.
``grad``
    ``ng.value_and_grad(loss)(df)``: the value is pandas', the gradient a DataFrame with df's
    index and float columns, equal to central differences of pandas' loss at a few entries
    (an entry where the one-sided differences part, a kink, is left out).
``vmap``
    ``ng.vmap`` of the loss of df scaled by each example's number (df itself not batched),
    and of its derivative in the number, against a loop of pandas and central differences.
``replay``
    ``ng.replay`` of the pipeline's vjp output and of the loss's value_and_grad, called on
    df, on a frame of the same structure holding other floats, and on df again.

Each run is classed: it agrees; nodegrad refuses with one of its errors naming what to do
instead (counted by the method it names); it raises a foreign exception (a KeyError, an
AttributeError, numpy's, ...) or a nodegrad error naming no remedy; or it gives a silent
difference. The last three are defects. A program pandas cannot run is never drawn (a step
pandas refuses is drawn again), and a check pandas cannot answer (on the other frame, or a
scaled one) is skipped. A defect's program is shrunk (steps, columns and rows dropped while
the same defect remains) and printed as a short script.

``python -m tests.fuzz.tables --programs N [--seed S] [--report F]``; ``--families`` and
``--without`` choose the kinds of step drawn (:data:`FAMILIES`), ``--checks`` the checks,
``--one SEED`` prints one program and its outcomes. ``tests/test_tables_differential.py`` runs
a fixed budget of it in the suite.
"""

from __future__ import annotations

import argparse
import ast
import re
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pandas as pd

import nodegrad as ng
from nodegrad.errors import NodegradError

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
CHECKS = ("vjp", "grad", "vmap", "replay")
DEFECTS = ("foreign", "unexplained", "differs")  # the verdicts that are defects

SCALES = (1.0, 0.99, 1.015)  # vmap's examples: small enough that no drawn row filter switches
EPS = 1e-6  # central differences' step; drawn floats are quarters, thresholds between them
RTOL = 1e-12
ENTRIES = 3  # float entries of df a gradient is checked at one by one
DIRECTIONS = 2  # random directions it is checked along
MAX_ROWS = 300
SHRINK_BUDGET = 60  # checks run while shrinking one defect
SHRINK_PER_CLASS = 3  # defects of one class shrunk; the others are counted only
TIME_LIMIT = 60.0  # seconds one check may run

#: A nodegrad error names what to do when it says one of these.
REMEDY = re.compile(
    r"\b(use|pass|write|take|return|call|compute|gather|instead|rather|then|see|one of|joins|give)\b", re.IGNORECASE
)

HEADER = "import numpy as np, pandas as pd, nodegrad as ng\nnan = np.nan"


# -- frames as data ----------------------------------------------------------------------------


def _literal(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool | np.bool_):
        return repr(bool(value))
    if isinstance(value, int | np.integer):
        return repr(int(value))
    if isinstance(value, float | np.floating):
        return "nan" if np.isnan(value) else repr(float(value))
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


def _python(value: Any) -> Any:
    """A label as a plain Python value (what a program's source writes)."""
    if isinstance(value, tuple):
        return tuple(_python(v) for v in value)
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
        items = _literal(list(self.values))
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
            index = f"pd.Index({_literal(list(self.levels[0]))}, name={self.names[0]!r})"
        else:
            arrays = _literal([list(level) for level in self.levels])
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


# -- drawing programs ---------------------------------------------------------------------------

KEY_KINDS = ("str", "int", "category", "bool")


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


class Draw:
    """The random choices of one program, from its seed."""

    def __init__(self, rng: np.random.Generator, families: frozenset[str]) -> None:
        self.rng = rng
        self.families = families
        self.fresh = 0
        self.rights: list[Table] = []
        self.pending: list[Table] = []  # a merge's right table, until its step is taken
        self.used: set[str] = set()
        self.prefer: str | None = None  # a column an assign's next callable reads

    # -- small choices --
    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def some(self, options: Sequence[Any], low: int = 1, high: int = 2) -> list[Any]:
        k = min(int(self.rng.integers(low, high + 1)), len(options))
        return [options[i] for i in self.rng.choice(len(options), size=k, replace=False)]

    def name(self) -> str:
        self.fresh += 1
        return f"z{self.fresh - 1}"

    def on(self, family: str) -> bool:
        return family in self.families

    # -- frames --
    def table(self) -> tuple[Table, Table]:
        rows = int(self.pick([1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 8, 8, 10, 12, 18, 24]))
        columns = []
        for k in range(int(self.rng.integers(1, 4))):
            nan = self.pick([0.0, 0.15, 0.3])
            values = self.quarters(rows)
            columns.append(Column(f"f{k}", "float", tuple(np.where(self.rng.random(rows) < nan, np.nan, values))))
        for kind in ("int", "bool", "str", "category", "datetime"):
            if self.coin(0.5 if kind != "datetime" else 0.3):
                columns.append(self.static_column(kind, rows))
        order = self.rng.permutation(len(columns))
        table = Table(tuple(columns[i] for i in order), *self.index(rows))
        other = attrs.evolve(
            table,
            columns=tuple(
                attrs.evolve(c, values=tuple(np.where(np.isnan(c.values), np.nan, self.quarters(rows))))
                if c.kind == "float"
                else c
                for c in table.columns
            ),
        )
        return table, other

    def quarters(self, rows: int) -> np.ndarray:
        return self.rng.integers(-12, 13, size=rows) / 4.0

    def static_column(self, kind: str, rows: int) -> Column:
        codes = self.rng.integers(0, 3, size=rows)
        missing = self.rng.random(rows) < (0.15 if self.coin(0.4) else 0.0)
        if kind == "int":
            return Column("i0", "int", tuple(int(c) for c in codes))
        if kind == "bool":
            return Column("b0", "bool", tuple(bool(c) for c in codes % 2))
        if kind == "str":
            values = tuple(None if m else "xyz"[c] for c, m in zip(codes, missing, strict=True))
            return Column("s0", "str", values if any(v is not None for v in values) else ("x", *values[1:]))
        if kind == "category":
            categories = list(self.rng.permutation(["a", "b", "c", "d"]))  # "d" never observed, order not sorted
            return Column("c0", "category", tuple("abc"[c] for c in codes), tuple(str(c) for c in categories))
        days = tuple(None if m else f"2024-01-0{c + 1}" for c, m in zip(codes, missing, strict=True))
        return Column("d0", "datetime", days)

    def index(self, rows: int) -> tuple[tuple[tuple[Any, ...], ...], tuple[str | None, ...]]:
        kind = self.pick(["range", "range", "str", "int", "multi"])
        if kind == "range":
            return (), ()
        if kind == "str":
            if self.coin():
                labels = tuple(self.pick("abcde") for _ in range(rows))  # repeated labels
            else:
                labels = tuple(f"r{k}" for k in self.rng.permutation(rows))
            return (labels,), (self.pick([None, "key"]),)
        if kind == "int":
            if self.coin(0.3):
                labels = tuple(int(v) for v in self.rng.integers(0, 4, size=rows))
            else:
                labels = tuple(int(v) for v in self.rng.choice(np.arange(-10, 30), size=rows, replace=False))
            return (labels,), (self.pick([None, "id"]),)
        first = tuple(self.pick("abc") for _ in range(rows))
        second = tuple(int(v) for v in self.rng.integers(0, 4, size=rows))
        return (first, second), ("g", "n")

    # -- thresholds and masks --
    def threshold(self, values: Any) -> float:
        """A number between two of ``values`` far from both (no step of central differences,
        or of vmap's scales, moves a value across it)."""
        found = np.unique(np.asarray(values, dtype=float))
        found = found[np.isfinite(found)]
        if len(found) == 0:
            return 0.0
        gaps = [k for k in range(len(found) - 1) if found[k + 1] - found[k] >= 0.2]
        if not gaps or self.coin(0.1):
            return float(self.pick([found[0] - 0.5, found[-1] + 0.5]))
        k = self.pick(gaps)
        return float((found[k] + found[k + 1]) / 2)

    def mask(self, var: str, frame: pd.DataFrame, depth: int = 1) -> str | None:
        kinds = column_kinds(frame)
        options: list[str] = []
        for label, kind in kinds.items():
            col = f"{var}[{label!r}]"
            if kind == "float":
                c = self.threshold(frame[label])
                options.append(f"({col} {self.pick(['>', '<', '>=', '<='])} {c!r})")
                if self.on("arith"):
                    options.append(f"(({col} // 1.0) >= {self.pick([-1.0, 0.0, 1.0])!r})")
            elif kind == "int":
                options.append(f"({col} {self.pick(['>=', '!=', '=='])} {int(self.rng.integers(0, 3))})")
                if self.on("arith"):
                    options.append(f"(({col} // 2) == 0)")
            elif kind == "bool":
                options.append(self.pick([col, f"(~{col})"]))
            elif kind in ("str", "category"):
                values = [v for v in frame[label].dropna().unique().tolist()] or ["x"]
                options.append(f"({col} {self.pick(['==', '!='])} {_python(self.pick(values))!r})")
            elif kind == "datetime":
                options.append(f"({col} > pd.Timestamp({'2024-01-0' + str(int(self.rng.integers(1, 4)))!r}))")
        if not options:
            return None
        found = self.pick(options)
        if "//" in found:
            self.used.add("arith")
        if depth > 0 and self.coin(0.3):
            other = self.mask(var, frame, depth - 1)
            if other is not None:
                found = self.pick([f"({found} & {other})", f"({found} | {other})", f"(~{found})"])
        return found

    # -- Series expressions --
    def series(self, var: str, frame: pd.DataFrame, depth: int) -> str:
        """A float Series of ``var`` (whose value at drawing is ``frame``)."""
        makers = [
            ("arith", self._arith),
            ("reduce", self._reduce),
            ("window", self._window),
            ("series", self._series),
            ("transform", self._minus_transform),
            ("align", self._align),
        ]
        options = [(family, make) for family, make in makers if self.on(family)] if depth > 0 else []
        if not options or self.coin(0.3):
            return self.atom(var, frame)
        family, make = self.pick(options)
        found = make(var, frame, depth - 1)
        if found is None:
            return self.atom(var, frame)
        self.used.add(family)
        return found

    def atom(self, var: str, frame: pd.DataFrame) -> str:
        kinds = column_kinds(frame)
        floats = [c for c, k in kinds.items() if k == "float"]
        if self.prefer is not None and self.prefer in kinds:
            label, self.prefer = self.prefer, None
            return f"{var}[{label!r}]"
        options: list[tuple[str, str]] = [("", f"{var}[{c!r}]") for c in floats] * 3
        if self.on("transform"):
            made = self._transform(var, frame)
            if made:
                options.append(("transform", made))
        if self.on("series"):
            for label, kind in kinds.items():
                if kind in ("int", "bool"):
                    options.append(("series", f"{var}[{label!r}].astype(float)"))
                if kind == "int":
                    weights = {k: self.pick([0.5, -1.0, 2.0, 1.5]) for k in range(3) if self.coin(0.8)}
                    options.append(("series", f"{var}[{label!r}].map({weights!r})"))
                if kind == "str":
                    weights = {k: self.pick([0.5, -1.0, 2.0, 1.5]) for k in "xyz" if self.coin(0.8)}
                    options.append(("series", f"{var}[{label!r}].map({weights!r})"))
        if self.on("align"):
            for label in floats:
                options.append(("align", f"{var}[{label!r}].iloc[::-1]"))
        if self.on("series"):
            for label in floats:  # a Series' name
                options.append(("series", f"({var}[{label!r}] * float({var}[{label!r}].name == {label!r}))"))
        if not options:
            statics = [c for c, k in kinds.items() if k in ("int", "bool")]
            return f"({var}[{self.pick(statics)!r}] * 0.5)" if statics else "0.5"
        family, found = self.pick(options)
        if family:
            self.used.add(family)
        return found

    def _arith(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        a = self.series(var, frame, depth)
        kinds = column_kinds(frame)
        form = self.pick(["binary", "binary", "scalar", "unary", "unary", "static"])
        if form == "binary":
            b = self.series(var, frame, depth)
            return self.pick([f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"({a} / (1.0 + {b} ** 2))"])
        if form == "scalar":
            c = self.pick([0.5, -1.5, 2.0])
            return self.pick([f"({a} * {c})", f"({a} + {c})", f"({c} - {a})"])
        if form == "unary":
            return self.pick(
                [
                    f"np.sin({a})",
                    f"np.tanh({a})",
                    f"np.cos({a})",
                    f"abs({a})",
                    f"(-{a})",
                    f"({a} ** 2)",
                    f"np.exp({a} / 8.0)",
                    f"np.sqrt({a} ** 2 + 1.0)",
                ]
            )
        ints = [c for c, k in kinds.items() if k == "int"]
        bools = [c for c, k in kinds.items() if k == "bool"]
        options = [f"({a} // 1.0)"]
        options += [f"({var}[{c!r}] * {a})" for c in ints] + [f"({var}[{c!r}] // 2 + {a})" for c in ints]
        options += [f"({a} + {var}[{c!r}])" for c in bools]
        return self.pick(options)

    def _reduce(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        a = self.series(var, frame, depth)
        return self.pick(
            [
                f"({a} - {a}.mean())",
                f"({a} * {a}.std())",
                f"({a} / (1.0 + {a}.var()))",
                f"({a} - {a}.min())",
                f"({a} - {a}.max())",
                f"({a} * {a}.sum())",
                f"({a} * np.tanh({a}.prod()))",
                f"({a} / {a}.count())",
            ]
        )

    def _window(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        a = self.series(var, frame, depth)
        return self.pick(
            [
                f"{a}.rolling({self.pick([2, 3])}).mean()",
                f"{a}.rolling({self.pick([2, 3])}).sum()",
                f"{a}.shift({self.pick([1, -1, 2])})",
                f"{a}.diff()",
                f"{a}.cumsum()",
            ]
        )

    def _series(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        a = self.series(var, frame, depth)
        # Bounds off the quarters the floats are drawn on: no entry sits on one, where clip's
        # derivative is a choice (and central differences see whatever the steps after make of it).
        lo = self.pick([-1.1, -0.6, 0.1, 0.6, 1.6])
        hi = round(lo + self.pick([0.5, 1.0, 2.0]), 1)
        options = [f"{a}.clip({lo}, {hi})", f"{a}.clip(lower={lo})", f"{a}.clip(upper={hi})", f"{a}.astype('float64')"]
        mask = self.mask(var, frame, 0)
        if mask is not None:
            options += [f"{a}.where({mask}, 0.0)", f"{a}.where({mask})"]
        return self.pick(options)

    def _transform(self, var: str, frame: pd.DataFrame) -> str | None:
        kinds = column_kinds(frame)
        keys = [c for c, k in kinds.items() if k in KEY_KINDS]
        floats = [c for c, k in kinds.items() if k == "float" and c not in keys]
        if not keys or not floats:
            return None
        key = self.pick(keys)
        names = ["sum", "mean", "min", "max", "count"] + (["std", "var"] if self.on("groupby_stats") else [])
        return f"{var}.groupby({key!r})[{self.pick(floats)!r}].transform({self.pick(names)!r})"

    def _minus_transform(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        made = self._transform(var, frame)
        if made is None:
            return None
        return f"({self.series(var, frame, depth)} - {made})"

    def _align(self, var: str, frame: pd.DataFrame, depth: int) -> str | None:
        a = self.series(var, frame, depth)
        floats = [c for c, k in column_kinds(frame).items() if k == "float"]
        if not floats:
            return None
        b = f"{var}[{self.pick(floats)!r}]"
        return self.pick([f"({a} + {b}.sort_values())", f"({a} * {b}.iloc[1:])", f"({a} - {b}.iloc[::-1])"])

    # -- steps of a pipeline --
    def step(self, frame: pd.DataFrame) -> Step | None:
        kinds = {
            "filter": ("filter",),
            "assign": ("assign",),
            "column": ("arith", "reduce", "window", "series", "transform", "align"),
            "groupby": ("groupby", "groupby_stats"),
            "merge": ("merge",),
            "sort": ("sort",),
            "loc": ("loc",),
            "iloc": ("iloc",),
            "frame_math": ("frame_math",),
        }
        weights = {"filter": 3, "assign": 3, "column": 3, "groupby": 2, "merge": 2, "sort": 2}
        weights |= {"loc": 2, "iloc": 2, "frame_math": 1}
        options = [k for k, families in kinds.items() if any(self.on(f) for f in families)]
        if not options:
            return None
        p = np.array([weights[k] for k in options], dtype=float)
        kind = options[int(self.rng.choice(len(options), p=p / p.sum()))]
        self.used = set()
        self.pending = []
        maker = getattr(self, f"_step_{kind}")
        line = maker(frame)
        if line is None:
            return None
        if kind in ("filter", "assign", "merge", "sort", "loc", "iloc", "frame_math"):
            self.used.add(kind)
        return Step(line, frozenset(self.used))

    def _step_filter(self, frame: pd.DataFrame) -> str | None:
        mask = self.mask("t", frame)
        if mask is None:
            return None
        if self.on("loc") and self.coin(0.25):
            self.used.add("loc")
            return f"t.loc[{mask}]"
        return f"t[{mask}]"

    def _step_assign(self, frame: pd.DataFrame) -> str | None:
        parts: list[tuple[str, str]] = []
        for k in range(int(self.rng.integers(2, 4))):
            if k > 0:
                self.prefer = parts[-1][0]  # a later callable reads the column an earlier one made
            kinds = column_kinds(frame)
            floats = [c for c, kind in kinds.items() if kind == "float"]
            if self.on("arith") and self.coin(0.2) and floats:
                label = self.prefer if self.prefer in floats else self.pick(floats)
                text = f"u[{label!r}] {self.pick(['>', '<='])} {self.threshold(frame[label])!r}"
                self.used.add("arith")
            else:
                text = self.series("u", frame, int(self.rng.integers(0, 3)))
            self.prefer = None
            label = self.pick(floats) if floats and self.coin(0.15) else self.name()
            parts.append((label, text))
            try:
                frame = quietly(lambda: frame.assign(**{label: eval(f"lambda u: {text}", NAMES)}))  # noqa: B023
            except Exception:
                return None
        return "t.assign(" + ", ".join(f"{label}=lambda u: {text}" for label, text in parts) + ")"

    def _step_column(self, frame: pd.DataFrame) -> str | None:
        kinds = column_kinds(frame)
        statics = [c for c, k in kinds.items() if k == "int"]
        if self.on("arith") and statics and self.coin(0.15):
            self.used.add("arith")
            return f"t.assign({self.name()}=t[{self.pick(statics)!r}] // 2)"
        return f"t.assign({self.name()}={self.series('t', frame, int(self.rng.integers(1, 4)))})"

    def _groupby_keywords(self, frame: pd.DataFrame, keys: list[str], as_index: bool = True) -> str:
        kinds = column_kinds(frame)
        words = []
        if self.coin(0.25):
            words.append("sort=False")
        if self.coin(0.25):
            words.append("dropna=False")
        if any(kinds[k] == "category" for k in keys) and self.coin(0.4):
            words.append("observed=False")
        if as_index and self.coin(0.25):
            words.append("as_index=False")
        return "".join(f", {w}" for w in words)

    def _aggregations(self) -> list[str]:
        names = ["sum", "mean", "min", "max", "count"] if self.on("groupby") else []
        return names + (["std", "var"] if self.on("groupby_stats") else [])

    def _step_groupby(self, frame: pd.DataFrame) -> str | None:
        kinds = column_kinds(frame)
        keys = [c for c, k in kinds.items() if k in (*KEY_KINDS, "datetime")]
        if not keys:
            return None
        by = self.some(keys, 1, 2)
        values = [c for c, k in kinds.items() if c not in by and (k == "float" or (k == "int" and self.coin(0.3)))]
        if not values:
            return None
        values = self.some(values, 1, 3)
        key = repr(by[0]) if len(by) == 1 and self.coin() else repr(by)
        words = self._groupby_keywords(frame, by)
        form = self.pick(["select", "select", "agg", "narrow"])
        if form == "agg":
            how = {v: self.aggregation() for v in values}
            return f"t.groupby({key}{words}).agg({how!r})"
        name = self.aggregation()
        if form == "narrow":
            return f"t[{[*by, *values]!r}].groupby({key}{words}).{name}()"
        return f"t.groupby({key}{words})[{values!r}].{name}()"

    def aggregation(self) -> str:
        name = self.pick(self._aggregations())
        self.used.add("groupby_stats" if name in ("std", "var") else "groupby")
        return name

    def _step_merge(self, frame: pd.DataFrame) -> str | None:
        kinds = column_kinds(frame)
        keys = [c for c, k in kinds.items() if k in ("str", "int")]
        floats = [c for c, k in kinds.items() if k == "float"]
        if not keys:
            return None
        by = self.some(keys, 1, 2) if self.coin(0.25) else [self.pick(keys)]
        how = self.pick(["inner", "left", "right", "outer"])
        on = repr(by[0]) if len(by) == 1 else repr(by)
        if self.on("groupby") and floats and self.coin(0.3):  # a right side derived from t: gradients reach both
            self.used.add("groupby")
            value = self.pick([f for f in floats if f not in by] or floats)
            agg = self.pick(["mean", "sum", "max"])
            derived = f"t.groupby({on}, as_index=False)[[{value!r}]].{agg}()"
            return f"t.merge({derived}, on={on}, how={how!r}, suffixes=('', '_g'))"
        rows = int(self.rng.integers(2, 6))
        present = frame[by].dropna().drop_duplicates()
        combos = [tuple(_python(v) for v in row) for row in present.itertuples(index=False)]
        extra = tuple(("w" if kinds[k] == "str" else 7) for k in by)
        combos = [*combos, extra]
        chosen = [combos[int(self.rng.integers(len(combos)))] for _ in range(rows)]
        right_names = list(by) if self.coin(0.6) else [f"key{j}" for j in range(len(by))]
        columns = [
            Column(name, kinds[k], tuple(c[j] for c in chosen))
            for j, (name, k) in enumerate(zip(right_names, by, strict=True))
        ]
        columns.append(Column("r0", "float", tuple(self.quarters(rows))))
        if floats and self.coin(0.4):  # a label both sides have: suffixes
            columns.append(Column(self.pick(floats), "float", tuple(self.quarters(rows))))
        self.pending = [Table(tuple(columns))]
        name = f"R{len(self.rights)}"
        suffixes = ", suffixes=('_l', '_r')" if self.coin(0.2) else ""
        if right_names == list(by):
            return f"t.merge({name}, on={on}, how={how!r}{suffixes})"
        right_on = repr(right_names[0]) if len(by) == 1 else repr(right_names)
        return f"t.merge({name}, left_on={on}, right_on={right_on}, how={how!r}{suffixes})"

    def _step_sort(self, frame: pd.DataFrame) -> str | None:
        kinds = column_kinds(frame)
        if not kinds:
            return None
        by = self.some(list(kinds), 1, 2) if self.coin(0.35) else [self.pick(list(kinds))]
        words = [repr(by[0]) if len(by) == 1 and self.coin() else repr(by)]
        if self.coin(0.35):
            words.append(f"ascending={self.coin()}" if len(by) == 1 else f"ascending={[self.coin() for _ in by]}")
        kind = self.pick([None, None, "stable", "mergesort", "quicksort", "heapsort"])
        if kind:
            words.append(f"kind={kind!r}")
        na = self.pick([None, None, "first", "last"])
        if na:
            words.append(f"na_position={na!r}")
        return f"t.sort_values({', '.join(words)})"

    def _columns_subset(self, frame: pd.DataFrame) -> list[str]:
        kinds = column_kinds(frame)
        floats = [c for c, k in kinds.items() if k == "float"]
        chosen = self.some(list(kinds), 1, max(1, len(kinds)))
        if floats and not any(c in floats for c in chosen):
            chosen.append(self.pick(floats))
        return chosen

    def _labels(self, frame: pd.DataFrame, k: int) -> list[Any]:
        labels = frame.index.tolist()
        return [_python(labels[int(self.rng.integers(len(labels)))]) for _ in range(k)]

    def _step_loc(self, frame: pd.DataFrame) -> str | None:
        forms = ["columns", "labels", "mask", "mask_columns", "all_columns", "labels_columns", "slice", "series_index"]
        if isinstance(frame.index, pd.MultiIndex):
            forms.append("level")
        form = self.pick(forms)
        if form == "columns":
            return f"t[{self._columns_subset(frame)!r}]"
        if not len(frame):
            return None
        mask = self.mask("t", frame)
        if form == "labels":
            return f"t.loc[{_literal(self._labels(frame, int(self.rng.integers(1, 4))))}]"
        if form == "mask":
            return f"t.loc[{mask}]" if mask else None
        if form == "mask_columns":
            return f"t.loc[{mask}, {self._columns_subset(frame)!r}]" if mask else None
        if form == "all_columns":
            return f"t.loc[:, {self._columns_subset(frame)!r}]"
        if form == "labels_columns":
            labels = _literal(self._labels(frame, int(self.rng.integers(1, 4))))
            return f"t.loc[{labels}, {self._columns_subset(frame)!r}]"
        if form == "slice":
            a, b = self._labels(frame, 2)
            return f"t.loc[{_literal(a)}:{_literal(b)}]"
        if form == "series_index":  # the labels a column (a Series) carries
            column = self.pick(list(column_kinds(frame)) or [None])
            return f"t.loc[t[{column!r}].index[{self.pick(['::2', '1:', ':-1', '::-1'])}]]" if column else None
        return f"t.loc[{_literal(_python(frame.index.get_level_values(0)[0]))}]"

    def _step_iloc(self, frame: pd.DataFrame) -> str | None:
        n = len(frame)
        if not n:
            return None
        i, j = sorted(int(v) for v in self.rng.integers(0, n + 1, size=2))
        width = frame.shape[1]
        forms = [
            f"t.iloc[{i}:{j if j > i else n}]",
            f"t.iloc[::{self.pick([2, 3, -1])}]",
            f"t.iloc[-{max(1, n - i)}:]",
            f"t.iloc[{[int(v) for v in self.rng.integers(-n, n, size=int(self.rng.integers(1, 4)))]}]",
            f"t.iloc[{i}:{max(j, i + 1)}, {sorted(set(int(v) for v in self.rng.integers(0, width, size=2)))}]",
            f"t.iloc[:, {self.pick([0, 1])}:{width}]",
        ]
        mask = self.mask("t", frame)
        if mask:
            forms.append(f"t.iloc[({mask}).to_numpy()]")
        return self.pick(forms)

    def _step_frame_math(self, frame: pd.DataFrame) -> str | None:
        floats = [c for c, k in column_kinds(frame).items() if k == "float"]
        if not floats:
            return None
        cols = repr(self.some(floats, 1, 3))
        return self.pick(
            [
                f"t[{cols}] * 2.0",
                f"np.exp(t[{cols}] / 8.0)",
                f"np.tanh(t[{cols}])",
                f"-t[{cols}]",
                f"abs(t[{cols}]) + t[{cols}]",
                f"t[{cols}] - t[{cols}] * 0.5",
                f"np.sin(t[{cols}]) * t[{cols}]",
            ]
        )

    # -- the end of a pipeline --
    def tail(self, frame: pd.DataFrame) -> Step:
        self.used = set()
        self.pending = []
        kinds = column_kinds(frame)
        floats = [c for c, k in kinds.items() if k == "float"]
        options = ["table", "table", "column"]
        if any(self.on(f) for f in ("arith", "reduce", "window", "series", "transform", "align")):
            options += ["expr", "expr"]
        if self._aggregations():
            options.append("groupby")
        if self.on("reduce"):
            options += ["reduction", "reduction"]
        if self.on("loc"):
            options.append("loc")
        if self.on("iloc"):
            options.append("iloc")
        if self.on("frame_math"):
            options.append("frame_math")
        form = self.pick(options)
        line = self._tail(form, frame, kinds, floats)
        if line is None:
            line, self.used = "t", set()
        if form in ("reduction", "loc", "iloc", "frame_math") and line != "t":
            self.used.add({"reduction": "reduce"}.get(form, form))
        return Step(line, frozenset(self.used))

    def _tail(self, form: str, frame: pd.DataFrame, kinds: dict[str, str], floats: list[str]) -> str | None:
        if form == "table":
            return "t"
        if form == "column":
            return f"t[{self.pick(floats)!r}]" if floats else None
        if form == "expr":
            return self.series("t", frame, int(self.rng.integers(1, 4)))
        if form == "groupby":
            keys = [c for c, k in kinds.items() if k in KEY_KINDS]
            values = [c for c in floats if c not in keys]
            if not keys or not values:
                return None
            key = self.some(keys, 1, 2)
            by = repr(key[0]) if len(key) == 1 else repr(key)
            words = self._groupby_keywords(frame, key, as_index=False)
            return f"t.groupby({by}{words})[{self.pick(values)!r}].{self.aggregation()}()"
        if form == "reduction":
            name = self.pick(["sum", "mean", "std", "var", "min", "max", "prod", "count"])
            return f"{self.series('t', frame, int(self.rng.integers(0, 3)))}.{name}()"
        if form == "loc" and floats and len(frame):
            mask = self.mask("t", frame)
            label = self._labels(frame, 1)[0]
            options = [f"t.loc[:, {self.pick(floats)!r}]", f"t.loc[{_literal(label)}, {self.some(floats, 1, 2)!r}]"]
            options.append(f"t.loc[{_literal(label)}, {self.pick(floats)!r}]")
            if mask:
                options.append(f"t.loc[{mask}, {self.pick(floats)!r}]")
            return self.pick(options)
        if form == "iloc" and len(frame):
            i, j = int(self.rng.integers(len(frame))), int(self.rng.integers(frame.shape[1]))
            options = [f"t.iloc[:, {j}]", f"t.iloc[{i}, {j}]"]
            if floats:
                options.append(f"t[{self.some(floats, 1, 3)!r}].iloc[{i}]")
            return self.pick(options)
        if form == "frame_math":
            return self._step_frame_math(frame)
        return None

    # -- the loss --
    def loss(self, out: Any) -> str | None:
        if isinstance(out, pd.DataFrame):
            floats = [c for c, k in column_kinds(out).items() if k == "float"]
            if not floats:
                return None
            return " + ".join(self._term(f"out[{c!r}]") for c in self.some(floats, 1, 2))
        if isinstance(out, pd.Series):
            return self._term("out") if out.dtype.kind == "f" else None
        if isinstance(out, float | np.floating):
            return self.pick(["out", "np.tanh(out) * 3.0"])
        return None

    def _term(self, x: str) -> str:
        return self.pick(
            [
                f"np.nansum(np.sin({x}))",
                f"({x} * {x}).sum()",
                f"np.nansum({x}.to_numpy() * np.cos(np.arange(len(out))))",
                f"np.nansum(np.tanh({x}.values) * 2.0)",
            ]
        )


NAMES: dict[str, Any] = {"np": np, "pd": pd, "nan": np.nan}


def random_program(seed: int, families: Iterable[str] = ALL_FAMILIES) -> Program:
    """The program of ``seed``, its steps drawn from ``families``; pandas runs every step
    drawn (a step pandas refuses is drawn again, up to a few times)."""
    chosen = frozenset(families)
    d = Draw(np.random.default_rng(seed), chosen)
    table, other = d.table()
    ns = dict(NAMES)
    frame = quietly(lambda: eval(table.source(), ns))
    steps: list[Step] = []
    for _ in range(int(d.rng.integers(1, 6))):
        for _attempt in range(6):
            step = _drawn(lambda: d.step(frame))  # noqa: B023
            if step is None:
                continue
            value = _try_step(step.line, frame, ns, d.pending, len(d.rights), table=True)
            if value is None or (len(value) == 0 and d.coin(0.8)):
                continue
            d.rights += d.pending
            steps.append(step)
            frame = value
            break
    for _attempt in range(6):
        tail = _drawn(lambda: d.tail(frame)) or Step("t", frozenset())
        out = _try_step(tail.line, frame, ns, [], 0, table=False)
        if out is not None:
            break
    else:
        tail, out = Step("t", frozenset()), frame
    loss = None
    for _attempt in range(4):
        loss = d.loss(out)
        if loss is None:
            break
        value = _pandas_value(lambda: eval(loss, {**ns, "out": out}))  # noqa: B023
        if value is not None and np.isfinite(value) and abs(value) < 1e8:
            break
        loss = None
    return Program(seed, table, other, tuple(d.rights), tuple(steps), tail, loss, chosen)


def _drawn(thunk: Callable[[], Step | None]) -> Step | None:
    """A step drawn, or None where the table leaves nothing to draw it from (no columns, no
    rows of a kind): the same for the same seed."""
    try:
        return quietly(thunk)
    except (ValueError, IndexError, KeyError):
        return None


def _try_step(line: str, frame: Any, ns: dict[str, Any], pending: list[Table], first: int, table: bool) -> Any:
    for k, right in enumerate(pending):
        ns[f"R{first + k}"] = quietly(lambda r=right: eval(r.source(), NAMES))
    value = _pandas_value(lambda: eval(line, {**ns, "t": frame}))
    return value if value is not None and acceptable(value, table) else None


def _pandas_value(thunk: Callable[[], Any]) -> Any:
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


# -- comparing with pandas -----------------------------------------------------------------------


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    scale = max(1.0, float(np.nanmax(np.abs(want)))) if np.isfinite(want).any() else 1.0
    return bool(np.all(np.abs(got - want) <= RTOL * scale + RTOL * np.abs(want)))


def compare(got: Any, want: Any) -> tuple[str, str] | None:
    """What differs between nodegrad's ``got`` and pandas' ``want`` -- (a kind, its
    figures) -- or None. Floats agree to 1e-12 relative; everything else exactly."""
    if isinstance(want, pd.DataFrame):
        if not isinstance(got, pd.DataFrame):
            return "type", f"a {type(got).__name__} where pandas gives a DataFrame"
        return _compare_frames(got, want)
    if isinstance(want, pd.Series):
        if not isinstance(got, pd.Series):
            return "type", f"a {type(got).__name__} where pandas gives a Series"
        if got.name != want.name:
            return "Series name", f"{got.name!r} vs {want.name!r}"
        if len(got) != len(want):
            return "row count", f"{len(got)} vs {len(want)}"
        found = _compare_index(got.index, want.index) or _compare_values(got, want)
        return found if found is None else (found[0], found[1])
    return _compare_scalars(got, want)


def _compare_scalars(got: Any, want: Any) -> tuple[str, str] | None:
    if isinstance(got, pd.Series | pd.DataFrame | np.ndarray) or np.ndim(got) != 0:
        return "type", f"a {type(got).__name__} of shape {np.shape(got)} where pandas gives a {type(want).__name__}"
    kinds = {k: np.asarray(v).dtype.kind for k, v in (("got", got), ("want", want))}
    if (kinds["got"] == "f") != (kinds["want"] == "f") or (kinds["got"] == "b") != (kinds["want"] == "b"):
        return "scalar type", f"{type(got).__name__} vs {type(want).__name__}"
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if np.isnan(g) != np.isnan(w):
        return "NaN placement", f"{got!r} vs {want!r}"
    if not np.isnan(w) and not _close(g, w):
        return "values", f"{got!r} vs {want!r}"
    return None


def _compare_frames(got: pd.DataFrame, want: pd.DataFrame) -> tuple[str, str] | None:
    if list(got.columns) != list(want.columns):
        return "columns", f"{list(got.columns)} vs {list(want.columns)}"
    if type(got.columns) is not type(want.columns) or got.columns.dtype != want.columns.dtype:
        what = (
            f"{type(got.columns).__name__}({got.columns.dtype})",
            f"{type(want.columns).__name__}({want.columns.dtype})",
        )
        return "columns' Index type", " vs ".join(what)
    if len(got) != len(want):
        return "row count", f"{len(got)} vs {len(want)}"
    found = _compare_index(got.index, want.index)
    if found:
        return found
    for j, label in enumerate(want.columns):
        found = _compare_values(got.iloc[:, j], want.iloc[:, j])
        if found:
            return f"column {found[0]}", f"{label!r}: {found[1]}"
    try:
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=RTOL, atol=RTOL)
    except AssertionError as error:
        return "other", first_line(error)
    return None


def _compare_index(got: pd.Index, want: pd.Index) -> tuple[str, str] | None:
    if isinstance(got, pd.MultiIndex) != isinstance(want, pd.MultiIndex):
        return "index type", f"{type(got).__name__} vs {type(want).__name__}"
    if list(got.names) != list(want.names):
        return "index names", f"{list(got.names)} vs {list(want.names)}"
    if not got.equals(want):
        same = sorted(map(repr, got.tolist())) == sorted(map(repr, want.tolist()))
        kind = "row order" if same else "index labels"
        return kind, f"{got.tolist()[:8]} vs {want.tolist()[:8]}"
    levels = [(got, want)] if not isinstance(want, pd.MultiIndex) else list(zip(got.levels, want.levels, strict=True))
    for g, w in levels:
        ranges = {type(g), type(w)} <= {pd.RangeIndex, pd.Index} and g.dtype.kind == w.dtype.kind == "i"
        if g.dtype != w.dtype and not ranges:
            return "index dtype", f"{g.dtype} vs {w.dtype}"
    return None


def _compare_values(got: pd.Series, want: pd.Series) -> tuple[str, str] | None:
    if got.dtype != want.dtype:
        return "dtype", f"{got.dtype} vs {want.dtype}"
    if isinstance(want.dtype, pd.CategoricalDtype) and list(got.cat.categories) != list(want.cat.categories):
        return "categories", f"{list(got.cat.categories)} vs {list(want.cat.categories)}"
    g, w = got.reset_index(drop=True), want.reset_index(drop=True)
    if want.dtype.kind in "fc":
        gv, wv = g.to_numpy(), w.to_numpy()
        if (np.isnan(gv) != np.isnan(wv)).any():
            return "NaN placement", f"{gv.tolist()[:8]} vs {wv.tolist()[:8]}"
        present = ~np.isnan(wv)
        if _close(gv[present], wv[present]):
            return None
        permuted = np.array_equal(np.sort(gv[present]), np.sort(wv[present]))
        error = float(np.max(np.abs(gv[present] - wv[present])))
        detail = f"max error {error:.3g}: {gv.tolist()[:6]} vs {wv.tolist()[:6]}"
        return ("values permuted" if permuted else "values"), detail
    if not g.equals(w):
        permuted = sorted(map(repr, g.tolist())) == sorted(map(repr, w.tolist()))
        return ("values permuted" if permuted else "values"), f"{g.tolist()[:6]} vs {w.tolist()[:6]}"
    return None


# -- outcomes ------------------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    check: str
    verdict: str  # agree refused foreign unexplained differs skipped
    what: str = ""  # the class: the method refused, the exception and where, the kind of difference
    detail: str = ""  # the figures
    notes: tuple[str, ...] = ()  # warnings (a replay that ran eagerly)
    entry: tuple[int, str] | None = None  # the gradient entry that differs (row position, column)
    same_rows: bool = False  # a vmap refusal where pandas' output has one index for every example

    @property
    def defect(self) -> bool:
        return self.verdict in DEFECTS

    @property
    def key(self) -> tuple[str, str]:
        """A class of defect: an exception by its kind and where, whichever check raised it
        (one bug breaks every check on the program); a difference by its check too."""
        return ("", f"{self.verdict}: {self.what}") if self.verdict != "differs" else (self.check, self.what)


def first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [""])[0][:300]


def normalize(text: str) -> str:
    text = re.sub(r"\[at [^\]]*\]", "", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "#", text)
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}", "(#)", text)
    text = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", text)
    return text.strip()[:140]


def where_raised(error: BaseException) -> str:
    """The innermost place in nodegrad the exception passed through, else the innermost of
    all (the program's own line, or a library's)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/nodegrad/" in f.filename.replace("\\", "/")]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    path = frame.filename.replace("\\", "/")
    short = path.split("/nodegrad/", 1)[1] if "/nodegrad/" in path else path.rsplit("/", 1)[-1]
    prefix = "nodegrad/" if "/nodegrad/" in path else ""
    return f"{prefix}{short}:{frame.name}"


def method_named(message: str, error: BaseException) -> str:
    """The method or step a refusal names: ``Frame.pivot_table``, ``Series.sort_values``,
    or the step a table refuses (``a row mask``), with the error's class."""
    name = type(error).__name__
    found = re.search(r"\b((?:Frame|Series|DataFrame|GroupBy)\.[\w.]*(?:\(\.\.\.\)\.\w+)?)", message)
    if found:
        return f"{found.group(1).rstrip('.:')} ({name})"
    step = re.search(r"table step: (.{1,60}?)(?: depends| is |;|:|$)", message)
    if step:
        return f"{normalize(step.group(1))} ({name})"
    return f"{normalize(message)[:60]} ({name})"


def classify_error(check: str, error: BaseException, notes: tuple[str, ...] = ()) -> Outcome:
    """A documented refusal (a nodegrad error naming what to do), a nodegrad error naming no
    remedy, or a foreign exception."""
    message = first_line(error)
    name = type(error).__name__
    if isinstance(error, NodegradError):
        if REMEDY.search(str(error)):
            return Outcome(check, "refused", method_named(message, error), f"{name}: {message}", notes)
        return Outcome(check, "unexplained", f"{name}: {normalize(message)}", message, notes)
    return Outcome(check, "foreign", f"{name} at {where_raised(error)}: {normalize(message)}", message, notes)


def attempt(thunk: Callable[[], Any]) -> tuple[Any, BaseException | None, tuple[str, ...]]:
    """``thunk()`` with its warnings collected (a ReplayWarning is a note), or the exception."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            value, error = thunk(), None
        except Exception as raised:
            value, error = None, raised
    notes = tuple(sorted({f"{w.category.__name__}: {normalize(str(w.message))[:90]}" for w in caught}))
    notes = tuple(n for n in notes if n.startswith("ReplayWarning"))
    return value, error, notes


def differs(check: str, found: tuple[str, str], notes: tuple[str, ...] = (), **extra: Any) -> Outcome:
    return Outcome(check, "differs", found[0], found[1], notes, **extra)


# -- the checks ----------------------------------------------------------------------------------


def check_vjp(program: Program) -> Outcome:
    ns = program.namespace()
    want = quietly(lambda: ns["pipeline"](ns["df"]))
    got, error, notes = attempt(lambda: ng.vjp(ns["pipeline"], ns["df"])[0])
    if error is not None:
        return classify_error("vjp", error, notes)
    found = compare(got, want)
    return differs("vjp", found, notes) if found else Outcome("vjp", "agree", notes=notes)


def _central(f: Callable[[pd.DataFrame], float], df: pd.DataFrame, direction: dict[str, np.ndarray]) -> float | None:
    """The derivative of ``f`` at ``df`` along ``direction`` (column -> one number per row)
    by central differences, or None at a kink (where the one-sided differences part) or
    where pandas gives no finite value or refuses a neighbour (a row filter switched)."""

    def at(delta: float) -> float:
        moved = {c: df[c].to_numpy(dtype=float) + delta * v for c, v in direction.items()}
        return float(quietly(lambda: f(df.assign(**moved))))

    try:
        f0, up, down = at(0.0), at(EPS), at(-EPS)
    except Exception:
        return None
    if not np.isfinite([f0, up, down]).all():
        return None
    forward, backward, central = (up - f0) / EPS, (f0 - down) / EPS, (up - down) / (2 * EPS)
    if abs(forward - backward) > 1e-3 * (1.0 + abs(central)):
        return None
    return central


def _one_hot(df: pd.DataFrame, row: int, label: str) -> dict[str, np.ndarray]:
    return {label: (np.arange(len(df)) == row).astype(float)}


def _derivative_kind(name: str, got: float, want: float) -> str:
    """A wrong derivative's class: NaN where pandas' loss does not move (the entry reaches it
    only through a NaN that pandas skips, ``0 * nan`` in the sweep), NaN elsewhere, or a
    wrong number."""
    if np.isnan(got):
        return f"NaN {name} where pandas' loss does not move" if want == 0.0 else f"NaN {name}"
    return name


def _derivative_agrees(got: float, want: float, value: float) -> bool:
    return bool(abs(got - want) <= 1e-5 * (1.0 + abs(want)) + 1e-9 * abs(value))


def _entries(rng: np.random.Generator, g: pd.DataFrame, finite: dict[str, np.ndarray]) -> list[tuple[int, str]]:
    """A few finite entries of df to check one by one: some the gradient says move the loss,
    some drawn from all (where it may wrongly say they do not)."""
    found = [(r, c) for c, mask in finite.items() for r in np.flatnonzero(mask).tolist()]
    moving = [(r, c) for r, c in found if g[c].iloc[r] != 0.0]
    chosen: list[tuple[int, str]] = []
    for pool in (moving, found):
        rest = [e for e in pool if e not in chosen]
        if rest:
            k = min(ENTRIES - 1 if pool is moving else ENTRIES, len(rest))
            chosen += [rest[i] for i in sorted(rng.choice(len(rest), size=k, replace=False))]
    return chosen


def check_grad(program: Program) -> Outcome:
    if program.loss is None:
        return Outcome("grad", "skipped", "no float output")
    ns = program.namespace()
    loss, df = ns["loss"], ns["df"]
    want = quietly(lambda: loss(df))
    result, error, notes = attempt(lambda: ng.value_and_grad(loss)(df))
    if error is not None:
        return classify_error("grad", error, notes)
    value, g = result
    found = _compare_scalars(value, want)
    if found:
        return differs("grad", ("loss " + found[0], found[1]), notes)
    found = gradient_structure(g, df, program.scaled)
    if found:
        return differs("grad", found, notes)
    rng = np.random.default_rng(program.seed + 1)
    finite = {c: np.isfinite(df[c].to_numpy(dtype=float)) for c in program.scaled}
    # Along random directions first: every finite entry at once, in three evaluations.
    along = None
    for _ in range(DIRECTIONS):
        direction = {c: np.where(mask, rng.normal(size=len(df)), 0.0) for c, mask in finite.items()}
        expected = _central(loss, df, direction)
        got = sum(float(np.sum(g[c].to_numpy()[m] * direction[c][m])) for c, m in finite.items())
        if expected is not None and not _derivative_agrees(got, expected, float(want)):
            along = (_derivative_kind("gradient along a random direction", got, expected), f"{got!r} vs {expected!r}")
            break
    entries = _entries(rng, g, finite)
    if along is not None:  # which entry: look at all of them
        entries = [(r, c) for c, mask in finite.items() for r in np.flatnonzero(mask).tolist()][:40]
    for row, label in entries:
        expected = _central(loss, df, _one_hot(df, row, label))
        if expected is None:
            continue
        entry = float(g[label].iloc[row])
        if not _derivative_agrees(entry, expected, float(want)):
            detail = f"{label}[{row}]: {entry!r} vs {expected!r}"
            kind = _derivative_kind("gradient", entry, expected)
            if np.isnan(entry) and df[program.scaled].isna().to_numpy().any():
                kind += ", df holding NaN"
            return differs("grad", (kind, detail), notes, entry=(row, label))
    if along is not None:
        return differs("grad", along, notes)
    return Outcome("grad", "agree", notes=notes)


def gradient_structure(g: Any, df: pd.DataFrame, floats: list[str]) -> tuple[str, str] | None:
    """What is wrong with ``g`` as the gradient of ``df``: a DataFrame with its index and its
    float columns, in their order, of float64."""
    if not isinstance(g, pd.DataFrame):
        return "gradient type", f"a {type(g).__name__} for a DataFrame"
    if list(g.columns) != floats:
        return "gradient columns", f"{list(g.columns)} vs {floats}"
    if not g.index.equals(df.index) or list(g.index.names) != list(df.index.names):
        return "gradient index", f"{g.index.tolist()[:6]} vs {df.index.tolist()[:6]}"
    bad = [c for c in floats if g[c].dtype != np.float64]
    if bad:
        return "gradient dtype", f"{bad[0]}: {g[bad[0]].dtype}"
    return None


def check_vmap(program: Program) -> Outcome:
    if program.loss is None or not program.scaled:
        return Outcome("vmap", "skipped", "no float output")
    ns = program.namespace()
    f, df = ns["scaled_loss"], ns["df"]
    scales = np.array(SCALES)
    try:
        want = np.array([quietly(lambda s=s: f(s, df)) for s in scales], dtype=float)
    except Exception:
        return Outcome("vmap", "skipped", "pandas raised on a scaled frame")
    if not np.isfinite(want).all():
        return Outcome("vmap", "skipped", "pandas' loss not finite on a scaled frame")
    got, error, notes = attempt(lambda: ng.vmap(f, in_axes=(0, None))(scales, df))
    if error is not None:
        return _same_rows(classify_error("vmap", error, notes), ns, scales)
    if np.shape(got) != scales.shape:
        return differs("vmap", ("shape", f"{np.shape(got)} vs {scales.shape}"), notes)
    if not _close(np.asarray(got, dtype=float), want):
        return differs("vmap", ("values", f"{np.asarray(got).tolist()} vs {want.tolist()}"), notes)
    slopes, error, more = attempt(lambda: ng.vmap(ng.grad(f), in_axes=(0, None))(scales, df))
    notes += more
    if error is not None:
        return _same_rows(classify_error("vmap", error, notes), ns, scales)
    for b, s in enumerate(scales):
        expected = _central_scale(f, s, df)
        if expected is not None and not _derivative_agrees(float(np.asarray(slopes)[b]), expected, float(want[b])):
            slope = float(np.asarray(slopes)[b])
            kind = _derivative_kind("derivative in the scale", slope, expected)
            if np.isnan(slope) and df[program.scaled].isna().to_numpy().any():
                kind += ", df holding NaN"
            return differs("vmap", (kind, f"example {b}: {slope!r} vs {expected!r}"), notes)
    return Outcome("vmap", "agree", notes=notes)


def _same_rows(outcome: Outcome, ns: dict[str, Any], scales: np.ndarray) -> Outcome:
    """A vmap refusal, marked where pandas' pipeline output has the same index for every
    example (no example ends with rows of its own)."""
    if outcome.verdict != "refused":
        return outcome
    scaled = [c for c in ns["df"].columns if column_kinds(ns["df"]).get(c) == "float"]
    df = ns["df"]
    try:
        indexes = [
            quietly(lambda s=s: ns["pipeline"](df.assign(**{c: df[c] * s for c in scaled})).index) for s in scales
        ]
    except Exception:
        return outcome
    return attrs.evolve(outcome, same_rows=all(index.equals(indexes[0]) for index in indexes[1:]))


def _central_scale(f: Callable[[float, pd.DataFrame], float], s: float, df: pd.DataFrame) -> float | None:
    try:
        f0, up, down = (float(quietly(lambda v=v: f(v, df))) for v in (s, s + EPS, s - EPS))
    except Exception:
        return None
    if not np.isfinite([f0, up, down]).all():
        return None
    forward, backward, central = (up - f0) / EPS, (f0 - down) / EPS, (up - down) / (2 * EPS)
    return None if abs(forward - backward) > 1e-3 * (1.0 + abs(central)) else central


def check_replay(program: Program) -> Outcome:
    ns = program.namespace()
    pipeline, frames = ns["pipeline"], [("df", ns["df"]), ("df2", ns["df2"]), ("df", ns["df"])]
    forward = ng.replay(lambda d: ng.vjp(pipeline, d)[0])
    notes: tuple[str, ...] = ()
    for call, (name, frame) in enumerate(frames):
        want = _pandas_value(lambda frame=frame: pipeline(frame))
        if want is None:
            continue
        got, error, more = attempt(lambda frame=frame: forward(frame))
        notes += more
        if error is not None:
            return classify_error("replay", error, notes)
        found = compare(got, want)
        if found:
            return differs("replay", (f"forward {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
    if program.loss is None:
        return Outcome("replay", "agree", notes=tuple(sorted(set(notes))))
    loss = ns["loss"]
    step = ng.replay(ng.value_and_grad(loss))
    for call, (name, frame) in enumerate(frames):
        want = _pandas_value(lambda frame=frame: loss(frame))
        if want is None or not np.isfinite(want):
            continue
        eager, eager_error, _ = attempt(lambda frame=frame: ng.value_and_grad(loss)(frame))
        result, error, more = attempt(lambda frame=frame: step(frame))
        notes += more
        if error is not None:
            return classify_error("replay", error, notes)
        found = _compare_scalars(result[0], want)
        if found:
            return differs("replay", (f"loss {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
        if eager_error is None:
            found = compare(result[1], eager[1]) if isinstance(eager[1], pd.DataFrame) else None
            if found:
                return differs("replay", (f"gradient {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
    return Outcome("replay", "agree", notes=tuple(sorted(set(notes))))


CHECK_FUNCTIONS: dict[str, Callable[[Program], Outcome]] = {
    "vjp": check_vjp,
    "grad": check_grad,
    "vmap": check_vmap,
    "replay": check_replay,
}


def run_check(program: Program, check: str) -> Outcome:
    """``check`` on ``program``; a check running past :data:`TIME_LIMIT` seconds is stopped
    (a foreign TimeoutError) where a timer can be set (the main thread, on POSIX)."""
    timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, _too_long)
        signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return CHECK_FUNCTIONS[check](program)
    except Exception as error:  # the tester's own step (pandas' oracle, a comparison) raised
        if any("/nodegrad/" in f.filename for f in traceback.extract_tb(error.__traceback__)):
            return classify_error(check, error)
        message = f"the tester could not finish: {type(error).__name__}: {normalize(first_line(error))}"
        return Outcome(check, "skipped", message, notes=(message,))
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _too_long(signum: int, frame: object) -> None:
    msg = f"the check ran longer than {TIME_LIMIT} s"
    raise TimeoutError(msg)


# -- shrinking and repros ------------------------------------------------------------------------


def _simpler(program: Program, outcome: Outcome) -> Iterable[Program]:
    """Smaller programs: without the loss (a defect of the forward pass), a step, the tail or
    a term of the loss; without a column or rows of df; then each step, tail and loss with a
    part dropped (a callable of an assign, an operand, a method of a chain)."""
    forward = outcome.check == "vjp" or (outcome.check == "replay" and not outcome.what.startswith(("loss", "grad")))
    if forward and program.loss is not None:
        yield attrs.evolve(program, loss=None)
    for n in reversed(range(len(program.steps))):
        yield attrs.evolve(program, steps=program.steps[:n] + program.steps[n + 1 :])
    if program.tail.line != "t":
        yield attrs.evolve(program, tail=Step("t", frozenset()))
    if program.loss and " + " in program.loss:
        for term in program.loss.split(" + "):
            yield attrs.evolve(program, loss=term)
    if len(program.table.columns) > 1:
        for column in program.table.columns:
            table, other = program.table.without(column.name), program.other.without(column.name)
            yield attrs.evolve(program, table=table, other=other)
    rows = program.table.rows
    if rows > 1:
        for part in (range(rows // 2), range(rows // 2, rows)):
            yield _rows(program, list(part))
        for r in reversed(range(rows)):
            yield _rows(program, [k for k in range(rows) if k != r])
    for n, step in enumerate(program.steps):
        for line in _variants(step.line):
            smaller = Step(line, _families_left(step.families, line))
            yield attrs.evolve(program, steps=(*program.steps[:n], smaller, *program.steps[n + 1 :]))
    for line in _variants(program.tail.line):
        yield attrs.evolve(program, tail=Step(line, _families_left(program.tail.families, line)))
    for line in _variants(program.loss or ""):
        yield attrs.evolve(program, loss=line)


#: What a line of each family shows; a line shrunk past it no longer holds the family.
MARKERS = {
    "filter": re.compile(r"^t(\.loc)?\[[(~]"),
    "assign": re.compile(r"lambda u"),
    "reduce": re.compile(r"\.(sum|mean|std|var|min|max|prod|count)\(\)"),
    "window": re.compile(r"\.(rolling|shift|diff|cumsum)\("),
    "series": re.compile(r"\.(clip|where|map|astype)\(|\.name\b"),
    "align": re.compile(r"\.iloc\[(::-1|1:)\]|\.sort_values\(\)"),
    "transform": re.compile(r"\.transform\("),
    "groupby": re.compile(r"groupby\("),
    "groupby_stats": re.compile(r"\.(std|var)\(\)|'(std|var)'"),
    "merge": re.compile(r"\.merge\("),
    "sort": re.compile(r"\.sort_values\("),
    "loc": re.compile(r"\.loc\[|^t\[\[|\.index\["),
    "iloc": re.compile(r"\.iloc\["),
    "frame_math": re.compile(r"t\[\["),
}


def _families_left(families: frozenset[str], line: str) -> frozenset[str]:
    return frozenset(f for f in families if f not in MARKERS or MARKERS[f].search(line))


def _variants(line: str) -> Iterable[str]:
    """``line`` with one part dropped: a keyword of a call (an assign's callable), a binary
    operation replaced by an operand, a unary one or a numpy function by its argument, a
    method call by the value it is called on."""
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError:
        return
    count = sum(1 for _ in ast.walk(tree))
    for k in range(count):
        node = list(ast.walk(tree))[k]
        replacements: list[Any] = []
        if isinstance(node, ast.Call) and len(node.keywords) > 1:
            for j in range(len(node.keywords)):
                replacements.append(ast.Call(node.func, node.args, node.keywords[:j] + node.keywords[j + 1 :]))
        if isinstance(node, ast.BinOp | ast.BoolOp):
            replacements += [node.left, node.right] if isinstance(node, ast.BinOp) else list(node.values)
        elif isinstance(node, ast.UnaryOp):
            replacements.append(node.operand)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "np" and node.args:
                replacements.append(node.args[0])
            elif not isinstance(owner, ast.Name):
                replacements.append(owner)
        for replacement in replacements:
            found = _replaced(tree, k, replacement)
            if found != line:
                yield found


def _replaced(tree: ast.Expression, k: int, replacement: Any) -> str:
    copy = ast.parse(ast.unparse(tree), mode="eval")
    target = list(ast.walk(copy))[k]
    replacement = ast.parse(ast.unparse(replacement), mode="eval").body
    if target is copy.body:
        return ast.unparse(replacement)
    for parent in ast.walk(copy):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, replacement)
            elif isinstance(value, list) and any(v is target for v in value):
                setattr(parent, field, [replacement if v is target else v for v in value])
    return ast.unparse(copy)


def _rows(program: Program, rows: list[int]) -> Program:
    return attrs.evolve(program, table=program.table.take(rows), other=program.other.take(rows))


def shrink(program: Program, outcome: Outcome, budget: int = SHRINK_BUDGET) -> tuple[Program, Outcome]:
    """Drop steps, columns and rows while ``outcome``'s class of defect remains."""
    changed = True
    while changed and budget > 0:
        changed = False
        for candidate in _simpler(program, outcome):
            if budget <= 0:
                break
            if not candidate.table.columns or not valid(candidate, outcome.check):
                continue
            budget -= 1
            found = run_check(candidate, outcome.check)
            if found.defect and found.key == outcome.key:
                program, outcome, changed = candidate, found, True
                break
    return program, outcome


def repro(program: Program, outcome: Outcome) -> str:
    """A short script that shows ``outcome`` on ``program``: df, the functions on a line
    each, and one or two lines printing nodegrad's answer beside pandas'."""
    check = outcome.check
    forward = check == "vjp" or (check == "replay" and not outcome.what.startswith(("loss", "grad")))
    source = program.source(other=check == "replay", loss=not forward, scaled=check == "vmap", compact=True)
    lines = [source.rstrip("\n")]
    if check == "vjp":
        lines.append('print(ng.vjp(pipeline, df)[0], pipeline(df), sep="\\n\\n")')
    elif check == "grad" and outcome.entry is not None:
        row, label = outcome.entry
        lines.append(
            f"up, down = (df.assign({label}=df[{label!r}].to_numpy() + d * (np.arange(len(df)) == {row})) "
            "for d in (1e-6, -1e-6))"
        )
        lines.append(f"print(ng.grad(loss)(df)[{label!r}].iloc[{row}], (loss(up) - loss(down)) / 2e-6)")
    elif check == "grad":
        lines.append('print(*ng.value_and_grad(loss)(df), loss(df), sep="\\n\\n")')
    elif check == "vmap":
        lines.append(
            f"S = np.array({list(SCALES)}); print(ng.vmap(scaled_loss, in_axes=(0, None))(S, df), "
            "[scaled_loss(s, df) for s in S], ng.vmap(ng.grad(scaled_loss), in_axes=(0, None))(S, df))"
        )
    elif outcome.what.startswith(("loss", "gradient")):
        lines.append("step = ng.replay(ng.value_and_grad(loss))")
        lines.append('for d in (df, df2, df): print(*step(d), loss(d), *ng.value_and_grad(loss)(d), sep="\\n")')
    else:
        lines.append("forward = ng.replay(lambda d: ng.vjp(pipeline, d)[0])")
        lines.append('for d in (df, df2, df): print(forward(d), pipeline(d), sep="\\n\\n")')
    return "\n".join(lines) + "\n"


# -- a run ---------------------------------------------------------------------------------------


@attrs.frozen
class Finding:
    seed: int
    check: str
    verdict: str
    what: str
    detail: str
    repro: str
    families: tuple[str, ...]  # of the (shrunk) program's steps
    shrunk: bool

    @property
    def key(self) -> tuple[str, str]:
        return Outcome(self.check, self.verdict, self.what).key


@attrs.define
class HuntResult:
    count: int = 0
    seconds: float = 0.0
    verdicts: Counter[tuple[str, str]] = attrs.Factory(Counter)  # (check, verdict) -> runs
    refusals: Counter[tuple[str, str]] = attrs.Factory(Counter)  # (method, check) -> runs
    refused_where_vjp_agrees: Counter[tuple[str, str]] = attrs.Factory(Counter)  # of those, on programs vjp runs
    refused_same_rows: Counter[tuple[str, str]] = attrs.Factory(Counter)  # of those, vmap's with one index
    refusal_texts: dict[str, str] = attrs.Factory(dict)  # method -> the first program's seed and message
    notes: Counter[str] = attrs.Factory(Counter)
    drawn: Counter[str] = attrs.Factory(Counter)  # family -> programs holding it
    defective: Counter[str] = attrs.Factory(Counter)  # family -> programs holding it with a defect
    findings: list[Finding] = attrs.Factory(list)

    @property
    def defects(self) -> list[Finding]:
        return self.findings

    def add(self, other: HuntResult) -> None:
        self.count += other.count
        self.seconds = max(self.seconds, other.seconds)
        self.verdicts.update(other.verdicts)
        self.refusals.update(other.refusals)
        self.refused_where_vjp_agrees.update(other.refused_where_vjp_agrees)
        self.refused_same_rows.update(other.refused_same_rows)
        self.notes.update(other.notes)
        self.drawn.update(other.drawn)
        self.defective.update(other.defective)
        self.refusal_texts = {**other.refusal_texts, **self.refusal_texts}
        self.findings += other.findings


def program_seeds(count: int, seed: int) -> list[int]:
    return [int(s) for s in np.random.default_rng(seed).integers(2**31, size=count)]


def hunt(
    seeds: Sequence[int],
    *,
    families: Iterable[str] = ALL_FAMILIES,
    checks: Sequence[str] = CHECKS,
    shrink_budget: int = SHRINK_BUDGET,
    shrink_per_class: int = SHRINK_PER_CLASS,
    progress: bool = False,
    report_to: str | None = None,
    title: str = "",
) -> HuntResult:
    """Draw the program of each seed and run ``checks`` on it; each defect found is shrunk
    (the first few of its class) and kept with a repro."""
    result = HuntResult()
    families = frozenset(families)
    shrunk: Counter[tuple[str, str]] = Counter()
    start = time.perf_counter()
    try:
        for n, seed in enumerate(seeds):
            program = random_program(seed, families)
            for family in program.families:
                result.drawn[family] += 1
            outcomes = [run_check(program, check) for check in checks]
            eager = [o.verdict for o in outcomes if o.check == "vjp"] == ["agree"]
            for outcome in outcomes:
                check = outcome.check
                result.verdicts[check, outcome.verdict] += 1
                result.notes.update(f"{check}: {note}" for note in outcome.notes)
                if outcome.verdict == "refused":
                    result.refusals[outcome.what, check] += 1
                    result.refused_where_vjp_agrees[outcome.what, check] += eager
                    result.refused_same_rows[outcome.what, check] += outcome.same_rows
                    result.refusal_texts.setdefault(outcome.what, f"seed {seed}: {outcome.detail}")
                if not outcome.defect:
                    continue
                small, found, shrinking = program, outcome, shrunk[outcome.key] < shrink_per_class
                if shrinking and shrink_budget > 0:
                    shrunk[outcome.key] += 1
                    small, found = shrink(program, outcome, shrink_budget)
                families_of = tuple(sorted(small.families))
                text = repro(small, found)
                result.findings.append(
                    Finding(seed, check, found.verdict, found.what, found.detail, text, families_of, shrinking)
                )
            if any(o.defect for o in outcomes):
                for family in program.families:
                    result.defective[family] += 1
            result.count = n + 1
            result.seconds = time.perf_counter() - start
            if progress and (n + 1) % 20 == 0:
                print(f"{n + 1} programs, {len(result.findings)} defects", file=sys.stderr, flush=True)
            if report_to and (n + 1) % 25 == 0:
                Path(report_to).write_text(report(result, title=title))
    except KeyboardInterrupt:  # a time limit: report what ran
        pass
    result.seconds = time.perf_counter() - start
    if report_to:
        Path(report_to).write_text(report(result, title=title))
    return result


def report(result: HuntResult, title: str = "", shown: int = 2) -> str:
    """Each class of defect once (its count, checks, the families of its shrunk programs and
    the shortest repros), then the refusals by method, the outcomes by check and family."""
    parts = [title] if title else []
    parts.append(f"{result.count} programs, {len(result.findings)} defects ({result.seconds:.0f} s)\n")
    parts.append("## Outcomes by check\n")
    parts.append("| check | agree | refused | foreign | unexplained | differs | skipped |")
    parts.append("|---|---|---|---|---|---|---|")
    for check in CHECKS:
        row = [str(result.verdicts[check, v]) for v in ("agree", "refused", *DEFECTS, "skipped")]
        if any(r != "0" for r in row):
            parts.append(f"| {check} | " + " | ".join(row) + " |")
    classes: dict[tuple[str, str], list[Finding]] = {}
    for finding in result.findings:
        classes.setdefault(finding.key, []).append(finding)
    parts.append(f"\n## Defect classes ({len(classes)})\n")
    for k, (key, members) in enumerate(sorted(classes.items(), key=lambda kv: -len(kv[1]))):
        checks = Counter(f.check for f in members)
        programs = len({f.seed for f in members})
        families = Counter(fam for f in members if f.shrunk for fam in f.families)
        parts.append(f"### {k + 1}. {(key[0] + ': ') if key[0] else ''}{key[1]}")
        parts.append(
            f"{len(members)} runs in {programs} programs; checks: "
            + ", ".join(f"{c} x{n}" for c, n in checks.most_common())
        )
        seeds = sorted({f.seed for f in members})
        parts.append(f"program seeds: {', '.join(map(str, seeds[:8]))}{' ...' if len(seeds) > 8 else ''}")
        parts.append(
            "families of the shrunk programs: "
            + (", ".join(f"{f} x{n}" for f, n in families.most_common()) or "none (a plain pipeline)")
        )
        for finding in sorted((f for f in members if f.shrunk), key=lambda f: len(f.repro))[:shown]:
            parts.append(f"\nseed {finding.seed}, {finding.check}: {finding.detail[:200]}")
            parts.append(f"```python\n{finding.repro}```")
        parts.append("")
    if result.refusals:
        parts.append("## Documented refusals (nodegrad errors naming what to do)\n")
        parts.append(
            "Runs on programs whose vjp agrees; vmap's where pandas' output has one index for every example.\n"
        )
        parts.append("| method | runs | checks | vjp agrees | one index | first program and message |")
        parts.append("|---|---|---|---|---|---|")
        methods: dict[str, Counter[str]] = {}
        for (method, check), n in result.refusals.items():
            methods.setdefault(method, Counter())[check] += n
        for method, checks in sorted(methods.items(), key=lambda kv: -kv[1].total()):
            text = result.refusal_texts.get(method, "").replace("|", "/")[:200]
            where = ", ".join(f"{c} x{n}" for c, n in checks.items())
            eager = sum(n for (m, _), n in result.refused_where_vjp_agrees.items() if m == method)
            same = sum(n for (m, _), n in result.refused_same_rows.items() if m == method)
            parts.append(f"| {method} | {checks.total()} | {where} | {eager} | {same} | {text} |")
        parts.append("")
    if result.notes:
        parts.append("## Notes\n")
        parts += [f"- {note} (x{n})" for note, n in result.notes.most_common(10)]
        parts.append("")
    parts.append("## Families\n")
    parts.append("| family | programs holding it | with a defect |")
    parts.append("|---|---|---|")
    for family in FAMILIES:
        if result.drawn[family]:
            parts.append(f"| {family} | {result.drawn[family]} | {result.defective[family]} |")
    parts.append(f"\n{result.count} programs, {len(result.findings)} defects")
    return "\n".join(parts) + "\n"


# -- the command line ----------------------------------------------------------------------------


def _part(seeds: list[int], options: dict[str, Any]) -> HuntResult:
    return hunt(seeds, **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=200, help="how many programs (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--report", default=None, help="write the report (markdown) to this file")
    parser.add_argument("--families", nargs="+", default=None, metavar="NAME", help=f"only these: {list(FAMILIES)}")
    parser.add_argument("--without", nargs="+", default=(), metavar="NAME", help="all families but these")
    parser.add_argument("--checks", nargs="+", default=list(CHECKS), choices=CHECKS, help="the checks to run")
    parser.add_argument("--jobs", type=int, default=1, help="processes to split the programs among")
    parser.add_argument("--no-shrink", action="store_true", help="report defects without shrinking them")
    parser.add_argument("--progress", action="store_true", help="a line per 20 programs on stderr")
    parser.add_argument("--one", type=int, default=None, metavar="SEED", help="print one program and its outcomes")
    args = parser.parse_args(argv)
    families = set(args.families or FAMILIES) - set(args.without)
    unknown = (set(args.families or ()) | set(args.without)) - set(FAMILIES)
    if unknown:
        parser.error(f"no family named {sorted(unknown)}")
    if args.one is not None:
        program = random_program(args.one, families)
        print(program.source())
        for check in args.checks:
            outcome = run_check(program, check)
            print(f"# {check}: {outcome.verdict} {outcome.what} {outcome.detail}")
        return 0
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    chosen = "" if families == set(FAMILIES) else f" --families {' '.join(sorted(families))}"
    title = (
        f"# python -m tests.fuzz.tables {argv_text}\n\nfamilies: {', '.join(sorted(families))}; checks: "
        f"{', '.join(args.checks)}\n\n`python -m tests.fuzz.tables --one SEED{chosen}` prints one program "
        "and its outcomes again.\n"
    )
    seeds = program_seeds(args.programs, args.seed)
    options = {"families": frozenset(families), "checks": tuple(args.checks), "progress": args.progress}
    options["shrink_budget"] = 0 if args.no_shrink else SHRINK_BUDGET
    start = time.perf_counter()
    if args.jobs > 1:
        from tests.fuzz import tables  # the module by its name, so the processes can find its functions

        parts = [seeds[k :: args.jobs] for k in range(args.jobs)]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(tables._part, parts, [options] * args.jobs))
        result = HuntResult()
        for part in results:
            result.add(part)
    else:
        result = hunt(seeds, **options, report_to=args.report, title=title)
    result.seconds = time.perf_counter() - start
    text = report(result, title=title)
    if args.report:
        Path(args.report).write_text(text)
    print(text)
    return 1 if result.findings else 0


if __name__ == "__main__":
    sys.exit(main())
