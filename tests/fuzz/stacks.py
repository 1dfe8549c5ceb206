"""The transform stacks a user writes, each as two lines of code: ``got`` (the stack) and
``want`` (its oracle: a Python loop of the unbatched transform, or the eager call).

The code is what runs and what a repro prints. It reads names a *mode* binds:

- ``args``: the parameters ``P`` are an argument, shared by the examples (``in_axes=None``);
  the transforms differentiate with respect to them.
- ``closure``: the parameters reach ``f`` through a closure; the transforms differentiate
  with respect to the batched features ``X`` (per-example input gradients).
- ``ensemble``: one set of parameters per example (``in_axes=0`` over a structure).

``fn`` and ``lossfn`` are the program and its scalar loss as the mode calls them, ``D`` the
argument differentiated (batched along ``AXD``: ``None`` or 0), ``R`` the other arguments
(batched along 0). ``DB``/``DC``/``D2``/``R2`` hold more values of them for the replays'
several calls and for ``vmap`` of ``vmap``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from tests.fuzz.programs import Program

BATCH = 3
MODES: dict[str, list[tuple[str, str]]] = {
    "args": [
        ("fn", "f"),
        ("lossfn", "loss"),
        ("D", "P"),
        ("AXD", "None"),
        ("R", "(X, I)"),
        ("DB", "PB"),
        ("T", "TP"),
        ("VB", "TPB"),
        ("D2", "P"),
        ("R2", "(XX, II)"),
        ("DC", "PB"),
    ],
    "closure": [
        ("fn", "lambda x, i: f(P, x, i)"),
        ("lossfn", "lambda x, i: loss(P, x, i)"),
        ("D", "X"),
        ("AXD", "0"),
        ("R", "(I,)"),
        ("DB", "X"),
        ("T", "TX"),
        ("VB", "TX"),
        ("D2", "XX"),
        ("R2", "(II,)"),
        ("DC", "XX"),
    ],
    "ensemble": [("fn", "f"), ("lossfn", "loss"), ("D", "PB"), ("AXD", "0"), ("R", "(X, I)"), ("T", "TPB")],
}
VMAP = "ng.vmap({fun}, in_axes=(AXD, *[0] * len(R)){extra})"
LOOP = "[{call} for b in range(B)]"
EXAMPLE = "ex(D, b, AXD), *ex(R, b)"


@attrs.frozen
class Stack:
    name: str
    got: str
    want: str
    exact: bool = False  # bit for bit (the replays), else to a relative tolerance
    modes: tuple[str, ...] = ("args", "closure", "ensemble")
    fits: Callable[[Program], bool] = lambda program: True


def vmapped(fun: str, call: str, *, extra: str = "", combine: str = "stack({})") -> tuple[str, str]:
    got = VMAP.format(fun=fun, extra=extra) + "(D, *R)"
    return got, combine.format(LOOP.format(call=call.format(example=EXAMPLE)))


def chunked(chunk: int | None, out_axis: int) -> Stack:
    extra = f", out_axes={out_axis}" + (f", chunk_size={chunk}" if chunk else "")
    got, want = vmapped("fn", "fn({example})", extra=extra, combine=f"stack({{}}, axis={out_axis})")
    name = f"vmap(chunk_size={chunk}, out_axes={out_axis})"
    return Stack(name, got, want, fits=lambda program: out_axis in (0, -1) or len(program.out_shape) >= out_axis)


STACKS: list[Stack] = [
    Stack("vmap", *vmapped("fn", "fn({example})")),
    Stack("vmap(grad)", *vmapped("ng.grad(lossfn)", "ng.grad(lossfn)({example})")),
    Stack(
        "vmap(grad, chunk_size=2)", *vmapped("ng.grad(lossfn)", "ng.grad(lossfn)({example})", extra=", chunk_size=2")
    ),
    Stack(
        "grad(sum(vmap))",
        f"ng.grad(lambda d: np.sum({VMAP.format(fun='lossfn', extra='')}(d, *R)))(D)",
        "(tsum if AXD is None else stack)(" + LOOP.format(call=f"ng.grad(lossfn)({EXAMPLE})") + ")",
    ),
    Stack(
        "vmap(jvp)",
        "ng.vmap(lambda d, t, *r: ng.jvp(lambda q: fn(q, *r), (d,), (t,)), in_axes=(AXD, AXD, *[0] * len(R)))"
        "(D, T, *R)",
        "stack([ng.jvp(lambda q: fn(q, *ex(R, b)), (ex(D, b, AXD),), (ex(T, b, AXD),)) for b in range(B)])",
    ),
    Stack("vmap(jacfwd)", *vmapped("ng.jacfwd(fn)", "ng.jacfwd(fn)({example})")),
    Stack("vmap(hessian)", *vmapped("ng.hessian(lossfn)", "ng.hessian(lossfn)({example})")),
    chunked(None, 1),
    chunked(None, -1),
    chunked(2, 0),
    chunked(2, 1),
    chunked(2, -1),
    Stack(
        "vmap(vmap)",
        f"{VMAP.format(fun=VMAP.format(fun='fn', extra=''), extra='')}(D2, *R2)",
        "stack([stack([fn(ex(ex(D2, a, AXD), b, AXD), *ex(ex(R2, a), b)) for b in range(B)]) for a in range(B)])",
        modes=("args", "closure"),
    ),
]
REPLAYS = [
    ("replay", "fn", "ex(DB, c), *ex(R, c)"),
    ("replay(grad)", "ng.grad(lossfn)", "ex(DB, c), *ex(R, c)"),
    ("replay(vmap(grad))", VMAP.format(fun="ng.grad(lossfn)", extra=""), "ex(DC, c), *ex(R2, c)"),
    (
        "replay(hvp)",
        "lambda d, v, *r: ng.hvp(lambda q: lossfn(q, *r), d, v)",
        "ex(DB, c), ex(VB, c), *ex(R, c)",
    ),
]
for _name, _fun, _args in REPLAYS:
    STACKS.append(
        Stack(
            _name,
            f"(lambda r: [r({_args}) for c in range(B)])(ng.replay({_fun}))",
            f"[({_fun})({_args}) for c in range(B)]",
            exact=True,
            modes=("args", "closure"),
        )
    )
SHAPED = [
    ("eval_shape(grad)", "ng.grad(lossfn)", "ex(D, 0, AXD), *ex(R, 0)"),
    ("eval_shape(vmap)", VMAP.format(fun="fn", extra=""), "D, *R"),
    ("eval_shape(vmap(grad))", VMAP.format(fun="ng.grad(lossfn)", extra=""), "D, *R"),
    ("eval_shape(vmap(jacfwd))", VMAP.format(fun="ng.jacfwd(fn)", extra=""), "D, *R"),
    ("eval_shape(vmap(hessian))", VMAP.format(fun="ng.hessian(lossfn)", extra=""), "D, *R"),
]
for _name, _fun, _args in SHAPED:
    STACKS.append(Stack(_name, f"shapes(ng.eval_shape({_fun}, {_args}))", f"shapes(({_fun})({_args}))", exact=True))
STACK_NAMES = [s.name for s in STACKS]


def setup_lines(mode: str, code: str) -> list[str]:
    """The mode's assignments ``code`` needs, in order (each pulls in the names it reads)."""
    bindings = MODES[mode]
    needed = set(re.findall(r"\w+", code)) | {"AXD", "R"}
    for name, expr in reversed(bindings):
        if name in needed:
            needed |= set(re.findall(r"\w+", expr))
    return [f"{name} = {expr}" for name, expr in bindings if name in needed]


# ---- structures: index, stack, sum, compare (shared with nothing under test) ----


def ex(value: Any, b: int, axis: int | None = 0) -> Any:
    """Example ``b`` of a batched value (arrays indexed along 0; other leaves as they are)."""
    if axis is None:
        return value
    if isinstance(value, np.ndarray):
        return value[b]
    if isinstance(value, dict):
        return {k: ex(v, b) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(ex(v, b) for v in value)
    if attrs.has(type(value)):
        return type(value)(**{f.name: ex(getattr(value, f.name), b) for f in attrs.fields(type(value))})
    return value


def stack(items: list[Any], axis: int = 0) -> Any:
    """Results of the examples stacked leaf by leaf; leaves that are not numbers must agree."""
    first = items[0]
    if isinstance(first, dict):
        return {k: stack([it[k] for it in items], axis) for k in first}
    if isinstance(first, tuple | list):
        return type(first)(stack([it[n] for it in items], axis) for n in range(len(first)))
    if attrs.has(type(first)):
        fields = attrs.fields(type(first))
        return type(first)(**{f.name: stack([getattr(it, f.name) for it in items], axis) for f in fields})
    if first is None or isinstance(first, str | bool):
        assert all(it == first for it in items), f"examples disagree on a plain leaf: {items}"
        return first
    return np.stack([np.asarray(it) for it in items], axis=axis)


def shapes(value: Any) -> Any:
    """Each number of a result (or each shape-and-dtype eval_shape gives for one) as the text
    of its shape and dtype, in the result's structure."""
    if isinstance(value, dict):
        return {k: shapes(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(shapes(v) for v in value)
    if attrs.has(type(value)):
        return type(value)(**{f.name: shapes(getattr(value, f.name)) for f in attrs.fields(type(value))})
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{tuple(value.shape)} {value.dtype}"
    if isinstance(value, float | complex | int | bool):
        return f"() {np.result_type(value)}"
    return value


def tsum(items: list[Any]) -> Any:
    """Results summed leaf by leaf, in example order."""
    first = items[0]
    if isinstance(first, dict):
        return {k: tsum([it[k] for it in items]) for k in first}
    if isinstance(first, tuple | list):
        return type(first)(tsum([it[n] for it in items]) for n in range(len(first)))
    if attrs.has(type(first)):
        fields = attrs.fields(type(first))
        return type(first)(**{f.name: tsum([getattr(it, f.name) for it in items]) for f in fields})
    if first is None or isinstance(first, str):
        return first
    total = items[0]
    for it in items[1:]:
        total = total + it
    return total


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [("", ("dict", tuple(value)))] + [kv for k, v in value.items() for kv in leaves(v, f"{path}[{k!r}]")]
    if isinstance(value, tuple | list):
        head = [(path, (type(value).__name__, len(value)))]
        return head + [kv for n, v in enumerate(value) for kv in leaves(v, f"{path}[{n}]")]
    if attrs.has(type(value)):
        head = [(path, (type(value).__name__,))]
        return head + [
            kv for f in attrs.fields(type(value)) for kv in leaves(getattr(value, f.name), f"{path}.{f.name}")
        ]
    return [(path, value)]


def numeric(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic | float | complex) and not isinstance(value, np.str_)


def compare(got: Any, want: Any, *, exact: bool, rtol: float) -> str | None:
    """None when ``got`` is ``want`` (bit for bit and of the same types when ``exact``, else
    to ``rtol`` of the leaf's size, with the same dtypes); else what differs, and where."""
    got_leaves, want_leaves = leaves(got), leaves(want)
    if [p for p, _ in got_leaves] != [p for p, _ in want_leaves]:
        return f"structure: {summary(got)} vs {summary(want)}"
    for (path, g), (_, w) in zip(got_leaves, want_leaves, strict=True):
        problem = compare_leaf(g, w, exact=exact, rtol=rtol)
        if problem:
            return f"{problem} at out{path}"
    return None


def compare_leaf(g: Any, w: Any, *, exact: bool, rtol: float) -> str | None:
    if hasattr(w, "index") and hasattr(w, "equals"):  # a pandas Series or DataFrame
        return compare_table(g, w)
    if not (numeric(g) and numeric(w)):
        return None if same_plain(g, w) else f"plain leaf {g!r} vs {w!r}"
    if exact and type(g) is not type(w):
        return f"type {type(g).__name__} vs {type(w).__name__}"
    a, b = np.asarray(g), np.asarray(w)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if exact:
        return None if np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes() else "values (bits)"
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return "NaN where the oracle has none" if np.isnan(a).sum() > np.isnan(b).sum() else "NaN missing"
    finite = ~np.isnan(b)
    if not finite.any():
        return None
    err = float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))
    scale = float(max(np.max(np.abs(a[finite])), np.max(np.abs(b[finite]))))
    if err <= rtol * max(scale, 1.0):  # values are of order 1: a derivative that is 0 is computed to ~1 ulp
        return None
    return f"values (max error {err:.3g}, {err / scale:.3g} of the leaf's size)" if scale else f"values ({err:.3g})"


def same_plain(g: Any, w: Any) -> bool:
    """Equal leaves that are not numbers (strings, None, flags); anything else, such as an
    interpreter's value that escaped its transform, is never equal."""
    if type(g) is not type(w) or not isinstance(w, str | bytes | bool | int | type(None) | list | tuple):
        return False
    try:
        return bool(g == w)
    except Exception:
        return False


def compare_table(g: Any, w: Any) -> str | None:
    if type(g) is not type(w):
        return f"type {type(g).__name__} vs {type(w).__name__}"
    if not g.index.equals(w.index) or g.index.names != w.index.names:
        return f"index {list(g.index)} ({g.index.names}) vs {list(w.index)} ({w.index.names})"
    if getattr(g, "name", None) != getattr(w, "name", None):
        return f"name {g.name!r} vs {w.name!r}"
    return None if g.equals(w) else "values"


def summary(value: Any) -> str:
    return " ".join(str(kv[1]) if not numeric(kv[1]) else "#" for kv in leaves(value))[:200]
