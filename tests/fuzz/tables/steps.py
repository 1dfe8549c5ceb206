"""The steps of a pipeline, drawn one family at a time, its tail and its loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tests.fuzz.tables.expressions import KEY_KINDS, Expressions
from tests.fuzz.tables.programs import NAMES, Column, Step, Table, as_python, column_kinds, literal, quietly


class Steps(Expressions):
    """A step of a pipeline (a filter, an assign, a groupby, a merge, ...), the value it ends
    with and a scalar loss of that value."""

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
        combos = [tuple(as_python(v) for v in row) for row in present.itertuples(index=False)]
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
        return [as_python(labels[int(self.rng.integers(len(labels)))]) for _ in range(k)]

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
            return f"t.loc[{literal(self._labels(frame, int(self.rng.integers(1, 4))))}]"
        if form == "mask":
            return f"t.loc[{mask}]" if mask else None
        if form == "mask_columns":
            return f"t.loc[{mask}, {self._columns_subset(frame)!r}]" if mask else None
        if form == "all_columns":
            return f"t.loc[:, {self._columns_subset(frame)!r}]"
        if form == "labels_columns":
            labels = literal(self._labels(frame, int(self.rng.integers(1, 4))))
            return f"t.loc[{labels}, {self._columns_subset(frame)!r}]"
        if form == "slice":
            a, b = self._labels(frame, 2)
            return f"t.loc[{literal(a)}:{literal(b)}]"
        if form == "series_index":  # the labels a column (a Series) carries
            column = self.pick(list(column_kinds(frame)) or [None])
            return f"t.loc[t[{column!r}].index[{self.pick(['::2', '1:', ':-1', '::-1'])}]]" if column else None
        return f"t.loc[{literal(as_python(frame.index.get_level_values(0)[0]))}]"

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
            options = [f"t.loc[:, {self.pick(floats)!r}]", f"t.loc[{literal(label)}, {self.some(floats, 1, 2)!r}]"]
            options.append(f"t.loc[{literal(label)}, {self.pick(floats)!r}]")
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
