"""The random choices of a program, and the expressions its steps are made of: thresholds
between a column's values, row masks and float Series."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tests.fuzz.tables.programs import Table, as_python, column_kinds

KEY_KINDS = ("str", "int", "category", "bool")


class Choices:
    """The small random choices of one program (a coin, a pick, a fresh name), from its seed,
    and what its drawing has gathered so far."""

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

    def quarters(self, rows: int) -> np.ndarray:
        return self.rng.integers(-12, 13, size=rows) / 4.0


class Expressions(Choices):
    """Row masks and float Series of a table, drawn from the families switched on."""

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
                options.append(f"({col} {self.pick(['==', '!='])} {as_python(self.pick(values))!r})")
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
