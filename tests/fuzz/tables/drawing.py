"""Drawing a program from its seed: its table, then steps pandas runs, a tail and a loss."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs
import numpy as np

from tests.fuzz.tables.programs import (
    ALL_FAMILIES,
    NAMES,
    Column,
    Program,
    Step,
    Table,
    acceptable,
    pandas_value,
    quietly,
)
from tests.fuzz.tables.steps import Steps


class Draw(Steps):
    """The random choices of one program, from its seed: its table and index here; its
    masks, Series, steps, tail and loss from the classes it extends."""

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
        value = pandas_value(lambda: eval(loss, {**ns, "out": out}))  # noqa: B023
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
    value = pandas_value(lambda: eval(line, {**ns, "t": frame}))
    return value if value is not None and acceptable(value, table) else None
