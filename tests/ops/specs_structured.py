"""Specs for the structured family: records, maps and sequences as nodes.

The function of the float operands packs them into a container (one constructor node,
make_*), takes its traced view (read nodes: struct_field / map_lookup / seq_index) and
concatenates the entries it reads. Unread entries must get zero gradients; a static
entry ("tag") rides along; the last entry may be a nested container of another kind.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.engine.traced import Traced
from nodegrad.errors import ArenaError, StructureError
from nodegrad.ops.structured import map_lookup, pack, seq_index, struct_field, view
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask, draw_operand
from tests.strategies import floats, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]

_NAMEDTUPLES = {n: collections.namedtuple(f"NT{n}", [*(f"f{i}" for i in range(n)), "tag"]) for n in range(1, 5)}
_DATACLASSES = {
    n: dataclasses.make_dataclass(f"DC{n}", [*(f"f{i}" for i in range(n)), ("tag", str)]) for n in range(1, 5)
}
_CONTAINERS = {"record": ["namedtuple", "dataclass"], "map": ["dict"], "sequence": ["list", "tuple"]}


@dataclasses.dataclass(frozen=True)
class _Layout:
    """A container of type ``form`` whose entries are operand positions or nested layouts."""

    form: str
    entries: tuple[int | _Layout, ...]

    def build(self, values: tuple[Any, ...]) -> Any:
        items = [e.build(values) if isinstance(e, _Layout) else values[e] for e in self.entries]
        n = len(items)
        if self.form == "namedtuple":
            return _NAMEDTUPLES[n](*items, tag="static")
        if self.form == "dataclass":
            return _DATACLASSES[n](*items, tag="static")
        if self.form == "dict":
            return {**{f"k{i}": item for i, item in enumerate(items)}, "tag": "static"}
        return (list if self.form == "list" else tuple)([*items, "static"])

    def read(self, container: Any, wanted: set[int]) -> list[tuple[int, Any]]:
        """``(operand position, entry)`` for each wanted operand, read from ``container``."""
        found = []
        for i, entry in enumerate(self.entries):
            if self.form in ("namedtuple", "dataclass"):
                child = getattr(container, f"f{i}")
            else:
                child = container[f"k{i}" if self.form == "dict" else i]
            if isinstance(entry, _Layout):
                found.extend(entry.read(child, wanted))
            elif entry in wanted:
                found.append((entry, child))
        return found


@st.composite
def _structured_cases(draw: st.DrawFn, kind: str) -> Case:
    n_outer = draw(st.integers(1, 3))
    nested = draw(st.integers(0, 2))
    values = tuple(draw_operand(draw, draw(shapes(max_dims=2)), floats()) for _ in range(n_outer + nested))
    entries: tuple[int | _Layout, ...] = tuple(range(n_outer))
    if nested:
        inner = _Layout(
            draw(st.sampled_from([f for forms in _CONTAINERS.values() for f in forms])),
            tuple(range(n_outer, n_outer + nested)),
        )
        entries = (*entries, inner)
    layout = _Layout(draw(st.sampled_from(_CONTAINERS[kind])), entries)
    wanted = set(draw(st.sets(st.integers(0, len(values) - 1), min_size=1)))

    def fn(*values: Any) -> Any:
        packed = pack(layout.build(values))
        container = view(packed) if isinstance(packed, Traced) else packed
        return ng.cat([ng.reshape(entry, (-1,)) for _, entry in layout.read(container, wanted)])

    def ref(*values: Any) -> Any:
        return np.concatenate([np.reshape(entry, (-1,)) for _, entry in layout.read(layout.build(values), wanted)])

    return Case(fn, ref, values, draw(diff_mask(len(values))), desc=f"{layout}, reading {sorted(wanted)}")


_OPS = {
    "record": ("make_record", "struct_field"),
    "map": ("make_map", "map_lookup"),
    "sequence": ("make_sequence", "seq_index"),
}
SPECS: dict[str, st.SearchStrategy[Case]] = {
    name: _structured_cases(kind) for kind, names in _OPS.items() for name in names
}
# pack and view are what every case above goes through: any container kind exercises them.
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "pack": st.sampled_from(list(_OPS)).flatmap(_structured_cases),
    "view": st.sampled_from(list(_OPS)).flatmap(_structured_cases),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}
# Complex entries, alone or among real ones (then joined by cat): holomorphic.
COMPLEX: dict[str, ComplexSpec] = {
    name: ComplexSpec(spec, holomorphic=True) for name, spec in {**SPECS, **COMPOSITES}.items()
}

BAD_CALLS = [
    *(
        BadCall(name, (np.ones(2),), lambda x, t=template: pack(t(x, ng.Arena().param(np.ones(2)))), ArenaError,
                ("different arenas",))
        for name, template in [
            ("make_record", lambda a, b: _NAMEDTUPLES[2](a, b, tag="static")),
            ("make_map", lambda a, b: {"a": a, "b": b}),
            ("make_sequence", lambda a, b: [a, b]),
        ]
    ),
    *(
        BadCall(name, (np.ones(2), np.ones(3)), lambda node, f=read, w=where: f(node, *w), StructureError, fragments,
                prepare=lambda a, b, t=template: (pack(t(a, b)),))
        for name, read, template, where, fragments in [
            ("struct_field", struct_field, lambda a, b: {"a": a, "b": b}, (0, 2), ("holds a dict, not a record",)),
            ("struct_field", struct_field, lambda a, b: _NAMEDTUPLES[2](a, b, "t"), (3, 3), ("entry 3 of 3",)),
            ("map_lookup", map_lookup, lambda a, b: [a, b], (0, 2), ("holds a list, not a map",)),
            ("map_lookup", map_lookup, lambda a, b: {"a": a, "b": b}, (0, 5), ("entry 0 of 5", "has 2 entries")),
            ("seq_index", seq_index, lambda a, b: {"a": a, "b": b}, (0, 2), ("holds a dict, not a sequence",)),
            ("seq_index", seq_index, lambda a, b: (a, b), (-1, 2), ("entry -1 of 2",)),
        ]
    ),
]  # fmt: skip
