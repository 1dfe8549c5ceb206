"""Random programs as data: a list of steps over named registers, rendered as Python source.

A program is a function ``f(p, x, i)`` of parameters ``p`` (an array, a dict with a string
leaf, or an attrs record with static fields), one example's features ``x`` and its integer
indices ``i``; ``loss`` is a fixed weighting of its output, for the transforms that need a
scalar. The source is what runs and what a repro prints.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

import nodegrad as ng
import nodegrad.scipy.sparse as sp
from tests.fuzz.ops import (
    INDEX_BOUND,
    SPARSE_A,
    SPARSE_INDICES,
    SPARSE_INDPTR,
    Register,
    Step,
    draw_step,
    spd,
    weights_like,
    well_conditioned,
)

KINDS = ("array", "dict", "record")
DTYPES = ("float64", "float32")
FEATURES = 4  # an example's features: x has shape (4,), p.w too
HEADER = """import numpy as np
import nodegrad as ng
import nodegrad.scipy.sparse as sp
from tests.fuzz.ops import SPARSE_A, SPARSE_INDICES, SPARSE_INDPTR, spd, weights_like, well_conditioned
from tests.fuzz.programs import Params
"""


@attrs.frozen
class Params:
    """Parameters as a record: two arrays and two static fields the program may read."""

    w: np.ndarray
    m: np.ndarray
    name: str = ng.field(static=True)
    k: int = ng.field(static=True)


INPUT_LINES = {
    "array": ["w = p"],
    "dict": ['w = p["w"]', 'm = p["m"]'],
    "record": ["w = p.w", "m = p.m", "k = p.k"],
}


@attrs.frozen
class Program:
    kind: str
    dtype: str
    steps: tuple[Step, ...]

    def inputs(self) -> list[Register]:
        regs = [Register("w", (FEATURES,))]
        if self.kind != "array":
            regs.append(Register("m", (3, 3)))
        if self.kind == "record":
            regs.append(Register("k", (), integer=True))
        return [*regs, Register("x", (FEATURES,)), Register("i", (2,), integer=True)]

    @property
    def output(self) -> str:
        return f"v{len(self.steps) - 1}"

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.steps[-1].shape

    def ops(self) -> set[str]:
        return {s.op for s in self.steps}

    def source(self) -> str:
        lines = ["def f(p, x, i):", *(f"    {line}" for line in INPUT_LINES[self.kind])]
        lines += [f"    v{n} = {s.expr.format(*s.reads)}" for n, s in enumerate(self.steps)]
        lines += [f"    return {self.output}", "", "", "def loss(p, x, i):", "    out = f(p, x, i)"]
        lines.append("    return np.sum(out * weights_like(out))")
        return "\n".join(lines) + "\n"

    def compile(self) -> dict[str, Any]:
        """The namespace ``f`` and ``loss`` run in, with them defined."""
        namespace: dict[str, Any] = {
            "np": np,
            "ng": ng,
            "Params": Params,
            "spd": spd,
            "weights_like": weights_like,
            "well_conditioned": well_conditioned,
            "sp": sp,
            "SPARSE_A": SPARSE_A,
            "SPARSE_INDICES": SPARSE_INDICES,
            "SPARSE_INDPTR": SPARSE_INDPTR,
        }
        exec(compile(self.source(), "<fuzz program>", "exec"), namespace)
        return namespace


def depends_on(steps: tuple[Step, ...], names: set[str]) -> set[str]:
    """The inputs the last step reads, through the steps before it."""
    deps: dict[str, set[str]] = {name: {name} for name in names}
    for n, step in enumerate(steps):
        deps[f"v{n}"] = set().union(*(deps.get(r, set()) for r in step.reads))
    return deps[f"v{len(steps) - 1}"]


def mix_in(steps: list[Step], regs: list[Register], missing: str) -> None:
    """A last step that makes the output depend on an input it missed (the parameters or x)."""
    last = regs[-1]
    steps.append(Step("mix", "{0} * (1.0 + np.tanh(np.sum({1})))", (last.name, missing), last.shape))
    regs.append(Register(f"v{len(steps) - 1}", last.shape))


def random_program(rng: np.random.Generator) -> Program:
    kind = KINDS[int(rng.integers(len(KINDS)))]
    dtype = DTYPES[int(rng.random() < 0.25)]
    regs = Program(kind, dtype, ()).inputs()
    steps: list[Step] = []
    for n in range(int(rng.integers(3, 13))):
        step = draw_step(rng, regs)
        steps.append(step)
        regs.append(Register(f"v{n}", step.shape))
    for needed in ("x", "w"):
        if needed not in depends_on(tuple(steps), {r.name for r in Program(kind, dtype, ()).inputs()}):
            mix_in(steps, regs, needed)
    return Program(kind, dtype, tuple(steps))


def without_step(program: Program, n: int) -> Program | None:
    """``program`` without step ``n``: later reads of it read an earlier register of its
    shape instead (None when there is none), and the registers after it are renumbered."""
    if len(program.steps) <= 1:
        return None
    gone = program.steps[n]
    earlier = [*program.inputs(), *(Register(f"v{k}", s.shape) for k, s in enumerate(program.steps[:n]))]
    stand_in = next((r.name for r in reversed(earlier) if r.shape == gone.shape and not r.integer), None)
    renamed: dict[str, str] = {f"v{k}": f"v{k - 1}" for k in range(n + 1, len(program.steps))}
    steps = []
    for step in program.steps[n + 1 :]:
        if f"v{n}" in step.reads and stand_in is None:
            return None
        reads = tuple(renamed.get(r, stand_in if r == f"v{n}" else r) for r in step.reads)
        steps.append(attrs.evolve(step, reads=reads))
    return attrs.evolve(program, steps=(*program.steps[:n], *steps))


def params(kind: str, dtype: str, rng: np.random.Generator, lead: tuple[int, ...] = ()) -> Any:
    w = rng.normal(size=(*lead, FEATURES)).astype(dtype)
    m = rng.normal(size=(*lead, 3, 3)).astype(dtype)
    if kind == "array":
        return w
    if kind == "dict":
        return {"w": w, "m": m, "tag": "dense"}
    return Params(w=w, m=m, name="dense", k=2)


def values(program: Program, seed: int, batch: int) -> dict[str, Any]:
    """The arguments every stack draws on, all from ``seed``: shared parameters ``P``,
    per-example ones ``PB``, tangents ``TP``/``TPB``/``TX``, a batch ``X``/``I`` and a
    batch of batches ``XX``/``II``."""
    rng = np.random.default_rng(seed)
    kind, dtype = program.kind, program.dtype
    return {
        "P": params(kind, dtype, rng),
        "PB": params(kind, dtype, rng, (batch,)),
        "TP": params(kind, dtype, rng),
        "TPB": params(kind, dtype, rng, (batch,)),
        "X": rng.normal(size=(batch, FEATURES)).astype(dtype),
        "I": rng.integers(0, INDEX_BOUND, size=(batch, 2)),
        "TX": rng.normal(size=(batch, FEATURES)).astype(dtype),
        "XX": rng.normal(size=(batch, batch, FEATURES)).astype(dtype),
        "II": rng.integers(0, INDEX_BOUND, size=(batch, batch, 2)),
    }


def literal(value: Any) -> str:
    """Python source that rebuilds ``value`` exactly (floats by their shortest repr)."""
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r}, dtype=np.{value.dtype})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Params):
        fields = ", ".join(f"{f.name}={literal(getattr(value, f.name))}" for f in attrs.fields(Params))
        return f"Params({fields})"
    return repr(value)
