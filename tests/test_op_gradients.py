"""Gradient tests for every registered op.

Each op in ``nodegrad.ops.REGISTRY`` has a *spec*: a hypothesis strategy drawing valid
calls of it (:class:`Case`: shapes, value domain away from non-differentiable points,
static arguments) together with a numpy reference for the forward. For every spec:

(a) the forward, recorded and unrecorded, equals the numpy reference;
(b) the gradients pass :func:`nodegrad.testing.check_grads` in float64;
(c) the inputs, the static arguments and the seed are not modified by the sweep;
(d) the returned gradients are writable and share no memory with each other, the inputs,
    the seed or the output;
(e) float32 inputs give a float32 forward and float32 gradients that are still right.

Binary ops (and matmul's batch dimensions) are also tested under non-trivial broadcasting,
and every op has bad inputs that must raise a ``NodegradError`` naming it without leaving
a node behind. A new op without a spec and a bad-input case fails the
``test_every_registered_op_has_*`` tests.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import nodegrad as ng
from nodegrad.arena import Traced
from nodegrad.errors import ArenaError, DtypeError, NodegradError, OpIndexError, ShapeError, StructureError
from nodegrad.ops import REGISTRY, getitem
from nodegrad.ops.structured import map_lookup, pack, seq_index, struct_field, view
from nodegrad.testing import check_grads
from tests.strategies import (
    BOUND,
    away_from_zero,
    axes,
    broadcastable_shapes,
    float_arrays,
    floats,
    grid,
    separated_arrays,
    shapes,
    single_axis,
)

LEAF_OPS = {"param", "input"}


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn call of an op.

    ``fn`` (nodegrad) and ``ref`` (numpy) both take every float operand in ``values``, in
    order; ``diff`` says which of them are differentiated (the others are passed as
    constants, exercising the ops' mixed traced/untraced paths). ``static`` holds the
    non-float data the call closes over (indices, masks, class targets).
    """

    fn: Callable[..., Any]
    ref: Callable[..., Any]
    values: tuple[Any, ...]
    diff: tuple[bool, ...]
    static: tuple[Any, ...] = ()
    desc: str = ""

    @property
    def argnums(self) -> tuple[int, ...]:
        return tuple(k for k, d in enumerate(self.diff) if d)

    @property
    def args(self) -> tuple[Any, ...]:
        """The differentiated operands."""
        return tuple(self.values[k] for k in self.argnums)

    def of_args(self) -> Callable[..., Any]:
        """``fn`` as a function of the differentiated operands only, the rest fixed."""

        def f(*args: Any) -> Any:
            it = iter(args)
            return self.fn(*(next(it) if d else v for v, d in zip(self.values, self.diff, strict=True)))

        return f

    def astype(self, dtype: Any) -> Case:
        """The same case with every float operand cast to ``dtype``."""
        cast = [np.asarray(v, dtype=dtype) if isinstance(v, np.ndarray) else dtype(v) for v in self.values]
        return dataclasses.replace(self, values=tuple(cast))


SPECS: dict[str, st.SearchStrategy[Case]] = {}

# -- drawing helpers ------------------------------------------------------------------------


def _draw_operand(draw: st.DrawFn, shape: tuple[int, ...], elements: st.SearchStrategy[float]) -> Any:
    """An array of ``shape``; for shape ``()`` sometimes a plain Python float instead."""
    if shape == () and draw(st.booleans()):
        return draw(elements)
    return draw(float_arrays(shape, elements))


@st.composite
def _diff_mask(draw: st.DrawFn, n: int) -> tuple[bool, ...]:
    """Usually every operand differentiated; otherwise a random non-empty subset."""
    if n == 1 or draw(st.booleans()):
        return (True,) * n
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if not any(mask):
        mask[draw(st.integers(0, n - 1))] = True
    return tuple(mask)


def _log_softmax_ref(x: Any, axis: int) -> Any:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


_erf = np.vectorize(math.erf, otypes=[float])


def _gelu_ref(x: Any, approximate: bool) -> Any:
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(np.divide(x, math.sqrt(2))))


# -- elementwise: unary -----------------------------------------------------------------------

_POSITIVE = floats(0.2, BOUND)
_UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], st.SearchStrategy[float]]] = {
    "negative": (ng.negative, np.negative, floats()),
    "exp": (ng.exp, np.exp, floats()),
    "log": (ng.log, np.log, _POSITIVE),
    "log2": (ng.log2, np.log2, _POSITIVE),
    "sqrt": (ng.sqrt, np.sqrt, _POSITIVE),
    "sin": (ng.sin, np.sin, floats()),
    "cos": (ng.cos, np.cos, floats()),
    "tanh": (ng.tanh, np.tanh, floats()),
    "abs": (ng.abs, np.abs, away_from_zero()),
    "sigmoid": (ng.sigmoid, lambda x: 1 / (1 + np.exp(np.negative(x))), floats()),
    "relu": (ng.relu, lambda x: np.maximum(x, 0.0), away_from_zero()),
    "silu": (ng.silu, lambda x: x / (1 + np.exp(np.negative(x))), floats()),
}


@st.composite
def _unary_cases(draw: st.DrawFn, name: str) -> Case:
    fn, ref, elements = _UNARY[name]
    x = _draw_operand(draw, draw(shapes()), elements)
    return Case(fn, ref, (x,), (True,), desc=name)


for _name in _UNARY:
    SPECS[_name] = _unary_cases(_name)


@st.composite
def _gelu_cases(draw: st.DrawFn) -> Case:
    approximate = draw(st.booleans())
    x = _draw_operand(draw, draw(shapes()), floats())
    return Case(
        lambda x: ng.gelu(x, approximate=approximate),
        lambda x: _gelu_ref(x, approximate),
        (x,),
        (True,),
        desc=f"gelu approximate={approximate}",
    )


SPECS["gelu"] = _gelu_cases()

# -- elementwise: binary, clamp, where --------------------------------------------------------

# maximum/minimum draw x on a 0.01 grid and y on the grid shifted by 0.005: never tied.
BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], st.SearchStrategy[float], st.SearchStrategy[float]]] = {
    "add": (ng.add, np.add, floats(), floats()),
    "subtract": (ng.subtract, np.subtract, floats(), floats()),
    "multiply": (ng.multiply, np.multiply, floats(), floats()),
    "divide": (ng.divide, np.divide, floats(), away_from_zero(0.5)),
    "power": (ng.power, np.power, _POSITIVE, floats()),
    "maximum": (ng.maximum, np.maximum, grid(), grid(offset=0.005)),
    "minimum": (ng.minimum, np.minimum, grid(), grid(offset=0.005)),
}

_SomeShapes = st.SearchStrategy[hnp.BroadcastableShapes]


def _nontrivial(num_shapes: int) -> _SomeShapes:
    """Broadcastable shapes where at least one input is actually stretched or extended."""
    return broadcastable_shapes(num_shapes).filter(lambda b: any(s != b.result_shape for s in b.input_shapes))


@st.composite
def _binary_cases(draw: st.DrawFn, name: str, shape_pairs: _SomeShapes, all_diff: bool = False) -> Case:
    fn, ref, x_elements, y_elements = BINARY[name]
    shape_x, shape_y = draw(shape_pairs).input_shapes
    x = _draw_operand(draw, shape_x, x_elements)
    y = _draw_operand(draw, shape_y, y_elements)
    diff = (True, True) if all_diff else draw(_diff_mask(2))
    return Case(fn, ref, (x, y), diff, desc=f"{name} {np.shape(x)} {np.shape(y)}")


for _name in BINARY:
    SPECS[_name] = _binary_cases(_name, broadcastable_shapes(2))


@st.composite
def _clamp_cases(
    draw: st.DrawFn, shape_triples: _SomeShapes, bounds: st.SearchStrategy[str], all_diff: bool = False
) -> Case:
    # x on the 0.01 grid, lo < 0 < hi on the shifted grid: never at a bound, lo < hi.
    shape_x, shape_lo, shape_hi = draw(shape_triples).input_shapes
    which = draw(bounds)
    x = _draw_operand(draw, shape_x, grid())
    lo = _draw_operand(draw, shape_lo, grid(hi=-0.005, offset=0.005)) if which != "hi" else None
    hi = _draw_operand(draw, shape_hi, grid(lo=0.005, offset=0.005)) if which != "lo" else None
    values = (x, *(b for b in (lo, hi) if b is not None))

    def split(x: Any, *given: Any) -> tuple[Any, Any, Any]:
        it = iter(given)
        return x, next(it) if lo is not None else None, next(it) if hi is not None else None

    diff = (True,) * len(values) if all_diff else draw(_diff_mask(len(values)))
    return Case(
        lambda *v: ng.clamp(*split(*v)),
        lambda *v: np.clip(*split(*v)),
        values,
        diff,
        desc=f"clamp bounds={which}",
    )


SPECS["clamp"] = _clamp_cases(broadcastable_shapes(3), st.sampled_from(["both", "lo", "hi"]))


@st.composite
def _where_cases(draw: st.DrawFn, shape_triples: _SomeShapes, all_diff: bool = False) -> Case:
    shape_m, shape_a, shape_b = draw(shape_triples).input_shapes
    kind = draw(st.sampled_from(["bool", "int 0/1", "float 0/1"]))
    mask = draw(hnp.arrays(np.bool_, shape_m))
    if kind != "bool":
        mask = mask.astype(np.int64 if kind == "int 0/1" else np.float64)
    a = _draw_operand(draw, shape_a, floats())
    b = _draw_operand(draw, shape_b, floats())
    diff = (True, True) if all_diff else draw(_diff_mask(2))
    return Case(
        lambda a, b: ng.where(mask, a, b),
        lambda a, b: np.where(mask.astype(bool), a, b),
        (a, b),
        diff,
        static=(mask,),
        desc=f"where, {kind} mask",
    )


SPECS["where"] = _where_cases(broadcastable_shapes(3))

# -- indexing ------------------------------------------------------------------------------------


@st.composite
def _getitem_cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(["basic", "integer arrays", "boolean mask", "slice + integer array", "int list"]))
    index: Any
    if kind == "basic":
        shape = draw(shapes())
        index = draw(hnp.basic_indices(shape, allow_newaxis=True))
    elif kind == "integer arrays":  # one array per axis, repeats and negative indices included
        shape = draw(shapes(min_dims=1))
        index = draw(hnp.integer_array_indices(shape, result_shape=shapes(max_dims=2, max_side=3)))
    elif kind == "boolean mask":
        shape = draw(shapes(min_dims=1))
        index = draw(hnp.arrays(np.bool_, shape[: draw(st.integers(1, len(shape)))]))
    elif kind == "slice + integer array":
        shape = draw(shapes(min_dims=2))
        n = shape[1]
        positions = draw(hnp.arrays(np.int64, shapes(max_dims=2, max_side=3), elements=st.integers(-n, n - 1)))
        index = (draw(st.slices(shape[0])), positions)
    else:
        shape = draw(shapes(min_dims=1))
        index = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5))
    x = draw(float_arrays(shape))
    return Case(
        lambda x: getitem(x, index),
        lambda x: x[index],
        (x,),
        (True,),
        static=(index,),
        desc=f"getitem, {kind}",
    )


SPECS["getitem"] = _getitem_cases()


@st.composite
def _gather_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes(min_dims=1))
    axis = draw(single_axis(len(shape)))
    n = shape[axis]
    indices = draw(hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-n, n - 1)))
    x = draw(float_arrays(shape))
    return Case(
        lambda x: ng.gather(x, indices, axis=axis),
        lambda x: np.take(x, indices, axis=axis),
        (x,),
        (True,),
        static=(indices,),
        desc=f"gather axis={axis}",
    )


SPECS["gather"] = _gather_cases()

# -- linear algebra ----------------------------------------------------------------------------


@st.composite
def _matmul_cases(draw: st.DrawFn, batch_broadcast: bool = False) -> Case:
    # 1-D and 2-D operands, and broadcast batch dimensions, as np.matmul's signature allows.
    shape_pairs = hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=4)
    if batch_broadcast:  # the operands' batch dimensions differ: one is stretched or extended
        shape_pairs = shape_pairs.filter(lambda b: b.input_shapes[0][:-2] != b.input_shapes[1][:-2])
    shape_x, shape_y = draw(shape_pairs).input_shapes
    x, y = draw(float_arrays(shape_x)), draw(float_arrays(shape_y))
    diff = (True, True) if batch_broadcast else draw(_diff_mask(2))
    return Case(ng.matmul, np.matmul, (x, y), diff, desc=f"matmul {shape_x} @ {shape_y}")


SPECS["matmul"] = _matmul_cases()

# -- reductions ----------------------------------------------------------------------------------


@st.composite
def _reduce_cases(draw: st.DrawFn, name: str) -> Case:
    fn, ref = getattr(ng, name), getattr(np, name)
    if draw(st.booleans()):
        shape = draw(shapes())
        axis = draw(axes(len(shape)))
    else:  # make sure several non-trivial axes are reduced together
        shape = draw(shapes(min_dims=2, min_side=2))
        axis = draw(hnp.valid_tuple_axes(len(shape), min_size=2))
    keepdims = draw(st.booleans())
    if name in ("max", "min"):  # no (near-)ties: the extremum is differentiable
        x = draw(separated_arrays(shape)) if shape else draw(grid())
    else:
        x = _draw_operand(draw, shape, floats())
    return Case(
        lambda x: fn(x, axis=axis, keepdims=keepdims),
        lambda x: ref(x, axis=axis, keepdims=keepdims),
        (x,),
        (True,),
        desc=f"{name} axis={axis} keepdims={keepdims}",
    )


for _name in ("sum", "mean", "max", "min"):
    SPECS[_name] = _reduce_cases(_name)

# -- neural-network ops --------------------------------------------------------------------------


@st.composite
def _softmax_cases(draw: st.DrawFn, name: str) -> Case:
    shape = draw(shapes(min_dims=1))
    axis = draw(single_axis(len(shape)))
    x = draw(float_arrays(shape))
    exp = np.exp if name == "softmax" else (lambda y: y)
    return Case(
        lambda x: getattr(ng, name)(x, axis=axis),
        lambda x: exp(_log_softmax_ref(x, axis)),
        (x,),
        (True,),
        desc=f"{name} axis={axis}",
    )


SPECS["softmax"] = _softmax_cases("softmax")
SPECS["log_softmax"] = _softmax_cases("log_softmax")


@st.composite
def _cross_entropy_cases(draw: st.DrawFn) -> Case:
    batch, classes = draw(shapes(max_dims=2)), draw(st.integers(1, 5))
    logits = draw(float_arrays((*batch, classes)))
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8]))
    targets = draw(hnp.arrays(dtype, batch, elements=st.integers(0, classes - 1)))

    def ref(logits: Any) -> Any:
        picked = np.take_along_axis(_log_softmax_ref(logits, -1), targets[..., None].astype(np.intp), axis=-1)
        return -np.sum(picked) / max(math.prod(batch), 1)

    return Case(
        lambda logits: ng.cross_entropy(logits, targets),
        ref,
        (logits,),
        (True,),
        static=(targets,),
        desc="cross_entropy, integer targets",
    )


SPECS["cross_entropy"] = _cross_entropy_cases()


@st.composite
def _cross_entropy_probs_cases(draw: st.DrawFn) -> Case:
    batch, classes = draw(shapes(max_dims=2)), draw(st.integers(1, 5))
    logits = draw(float_arrays((*batch, classes)))
    targets = draw(float_arrays((*batch, classes), floats(0.0, 1.0)))
    normalized = draw(st.booleans())
    if normalized:  # proper distributions; unnormalised mass is allowed too
        targets = (targets + 0.1) / np.sum(targets + 0.1, axis=-1, keepdims=True)

    def ref(logits: Any, targets: Any) -> Any:
        return -np.sum(targets * _log_softmax_ref(logits, -1)) / max(math.prod(batch), 1)

    return Case(
        ng.cross_entropy,
        ref,
        (logits, targets),
        draw(_diff_mask(2)),
        desc=f"cross_entropy, probability targets, normalized={normalized}",
    )


SPECS["cross_entropy_probs"] = _cross_entropy_probs_cases()


def _normalize_ref(x: Any, axes: Any, eps: float) -> Any:
    centred = x - np.mean(x, axis=axes, keepdims=True)
    return centred / np.sqrt(np.mean(centred**2, axis=axes, keepdims=True) + eps)


@st.composite
def _norm_cases(draw: st.DrawFn, name: str) -> Case:
    # Entries pairwise >= 0.05 apart, so no normalised group has a near-zero variance.
    if name == "layer_norm":
        shape = (*draw(shapes(max_dims=2, max_side=3)), draw(st.integers(2, 5)))
        features, axes_, affine_shape = shape[-1], -1, (-1,)
    else:
        spatial = draw(shapes(max_dims=2, max_side=2))
        batch = draw(st.integers(1 if math.prod(spatial) > 1 else 2, 3))
        shape = (batch, draw(st.integers(1, 3)), *spatial)
        features, axes_, affine_shape = shape[1], (0, *range(2, len(shape))), (1, -1) + (1,) * len(spatial)
    x = draw(separated_arrays(shape, step=0.05))
    use_weight, use_bias = draw(st.booleans()), draw(st.booleans())
    weight = draw(float_arrays((features,))) if use_weight else None
    bias = draw(float_arrays((features,))) if use_bias else None
    eps = draw(st.sampled_from([1e-5, 1e-3]))
    values = (x, *(p for p in (weight, bias) if p is not None))

    def split(x: Any, *given: Any) -> tuple[Any, Any, Any]:
        it = iter(given)
        return x, next(it) if use_weight else None, next(it) if use_bias else None

    def ref(*v: Any) -> Any:
        x, w, b = split(*v)
        out = _normalize_ref(x, axes_, eps)
        out = out if w is None else out * np.reshape(w, affine_shape)
        return out if b is None else out + np.reshape(b, affine_shape)

    return Case(
        lambda *v: getattr(ng, name)(*split(*v), eps=eps),
        ref,
        values,
        draw(_diff_mask(len(values))),
        desc=f"{name} weight={use_weight} bias={use_bias} eps={eps}",
    )


SPECS["layer_norm"] = _norm_cases("layer_norm")
SPECS["batch_norm"] = _norm_cases("batch_norm")

# -- shape ops -------------------------------------------------------------------------------------


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


@st.composite
def _reshape_targets(draw: st.DrawFn, size: int) -> Any:
    """A new shape of ``size`` elements: regrouped factors, inserted 1s, perhaps one -1."""
    dims: list[int] = []
    for f in draw(st.permutations(_prime_factors(size))):
        if dims and draw(st.booleans()):
            dims[-1] *= f
        else:
            dims.append(f)
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)


@st.composite
def _reshape_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    target = draw(_reshape_targets(x.size))
    return Case(
        lambda x: ng.reshape(x, target), lambda x: np.reshape(x, target), (x,), (True,), desc=f"reshape to {target}"
    )


SPECS["reshape"] = _reshape_cases()


@st.composite
def _transpose_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    perm: tuple[int, ...] | None = None
    if draw(st.booleans()):
        order = draw(st.permutations(range(x.ndim)))
        flips = draw(st.lists(st.booleans(), min_size=x.ndim, max_size=x.ndim))
        perm = tuple(a - x.ndim if flip else a for a, flip in zip(order, flips, strict=True))
    return Case(
        lambda x: ng.transpose(x, perm), lambda x: np.transpose(x, perm), (x,), (True,), desc=f"transpose axes={perm}"
    )


SPECS["transpose"] = _transpose_cases()


@st.composite
def _cat_cases(draw: st.DrawFn) -> Case:
    base = draw(shapes(min_dims=1))
    axis = draw(single_axis(len(base)))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    k = axis % len(base)
    xs = tuple(draw(float_arrays((*base[:k], n, *base[k + 1 :]))) for n in sizes)
    return Case(
        lambda *xs: ng.cat(list(xs), axis=axis),
        lambda *xs: np.concatenate(xs, axis=axis),
        xs,
        draw(_diff_mask(len(xs))),
        desc=f"cat of {len(xs)} along axis={axis}",
    )


SPECS["cat"] = _cat_cases()


@st.composite
def _stack_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes())
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    xs = tuple(draw(st.lists(float_arrays(shape), min_size=1, max_size=4)))
    return Case(
        lambda *xs: ng.stack(list(xs), axis=axis),
        lambda *xs: np.stack(xs, axis=axis),
        xs,
        draw(_diff_mask(len(xs))),
        desc=f"stack of {len(xs)} along axis={axis}",
    )


SPECS["stack"] = _stack_cases()

# -- structured values: records, maps and sequences ----------------------------------------------
# The function of the float operands packs them into a container (one constructor node,
# make_*), takes its traced view (read nodes: struct_field / map_lookup / seq_index) and
# concatenates the entries it reads. Unread entries must get zero gradients; a static
# entry ("tag") rides along; the last entry may be a nested container of another kind.

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
    values = tuple(_draw_operand(draw, draw(shapes(max_dims=2)), floats()) for _ in range(n_outer + nested))
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

    return Case(fn, ref, values, draw(_diff_mask(len(values))), desc=f"{layout}, reading {sorted(wanted)}")


for _kind, _names in {
    "record": ("make_record", "struct_field"),
    "map": ("make_map", "map_lookup"),
    "sequence": ("make_sequence", "seq_index"),
}.items():
    for _name in _names:
        SPECS[_name] = _structured_cases(_kind)

# -- helpers for the checks -------------------------------------------------------------------------


def _arrays_in(value: Any) -> list[np.ndarray]:
    """Every numpy array inside ``value`` (tuples and lists searched)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays_in(v)]
    return []


def _assert_unchanged(now: Any, before: Any, what: str) -> None:
    """``now`` still equals its deep copy ``before``: same type, dtype, shape and contents."""
    assert type(now) is type(before), f"{what} changed type"
    if isinstance(now, np.ndarray):
        assert now.dtype == before.dtype, f"{what} changed dtype"
        np.testing.assert_array_equal(now, before, err_msg=f"{what} was modified in place")
    elif isinstance(now, (tuple, list)):
        assert len(now) == len(before), f"{what} changed length"
        for k, (a, b) in enumerate(zip(now, before, strict=True)):
            _assert_unchanged(a, b, f"{what}[{k}]")
    else:
        assert now == before, f"{what} changed"


def _traced_call(case: Case) -> tuple[ng.Arena, Any]:
    with ng.Arena() as arena:
        operands = [arena.param(v) if d else v for v, d in zip(case.values, case.diff, strict=True)]
        out = case.fn(*operands)
    return arena, out


def _draw_seed(data: st.DataObject, out: Any) -> np.ndarray:
    return data.draw(float_arrays(np.shape(out)).map(lambda s: s.astype(np.asarray(out).dtype)), label="seed")


NAMES = sorted(SPECS)

# -- the registry is covered ------------------------------------------------------------------------


def test_every_registered_op_has_a_spec() -> None:
    ops = set(REGISTRY) - LEAF_OPS
    assert not ops - set(SPECS), f"ops without a gradient-test spec: {sorted(ops - set(SPECS))}"
    assert not set(SPECS) - ops, f"specs for ops that are not registered: {sorted(set(SPECS) - ops)}"


# -- (a) to (e), for every op -------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_forward_matches_numpy_reference(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    expected = case.ref(*case.values)
    arena, out = _traced_call(case)
    assert isinstance(out, Traced), "a traced input must give a traced output"
    assert name in {node.op for node in arena}, f"the spec for {name!r} never records a {name!r} node"
    for got in (out.value, case.fn(*case.values)):  # recorded, and plain (nothing traced)
        assert np.shape(got) == np.shape(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_gradients_match_finite_differences(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    check_grads(case.fn, *case.values, argnums=case.argnums)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_backward_leaves_inputs_and_seed_unmodified(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    values_before, static_before = copy.deepcopy(case.values), copy.deepcopy(case.static)
    out, back = ng.vjp(case.of_args(), *case.args)
    seed = _draw_seed(data, out)
    seed_before = seed.copy()
    first, second = back(seed), back(seed)
    _assert_unchanged(case.values, values_before, "the inputs")
    _assert_unchanged(case.static, static_before, "the static arguments")
    _assert_unchanged(seed, seed_before, "the seed")
    for g1, g2 in zip(first, second, strict=True):  # so the first sweep changed nothing it reads
        np.testing.assert_array_equal(g1, g2, err_msg="a second sweep gives another gradient")


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_gradients_are_fresh_arrays(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    out, back = ng.vjp(case.of_args(), *case.args)
    seed = _draw_seed(data, out)
    grads = back(seed)
    others = [*_arrays_in(case.values), *_arrays_in(case.static), seed, *_arrays_in(out)]
    for k, g in enumerate(grads):
        if not isinstance(g, np.ndarray):
            assert isinstance(case.args[k], (float, np.floating)), f"gradient {k} is a {type(g).__name__}"
            continue
        assert g.flags.writeable, f"gradient {k} is read-only"
        for j, h in enumerate(grads[k + 1 :], start=k + 1):
            assert not np.shares_memory(g, h), f"gradients {k} and {j} share memory"
        for other in others:
            assert not np.shares_memory(g, other), f"gradient {k} shares memory with an input, the seed or the output"


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_float32_in_float32_out(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    case32 = case.astype(np.float32)
    out, back = ng.vjp(case32.of_args(), *case32.args)
    assert np.asarray(out).dtype == np.float32, f"float32 inputs gave a {np.asarray(out).dtype} forward"
    np.testing.assert_allclose(out, case.ref(*case.values), rtol=1e-4, atol=1e-5)
    for k, (g, x) in enumerate(zip(back(_draw_seed(data, out)), case32.args, strict=True)):
        assert np.asarray(g).dtype == np.float32, f"gradient {k} has dtype {np.asarray(g).dtype}"
        assert np.shape(g) == np.shape(x)
    check_grads(case32.fn, *case32.values, argnums=case32.argnums)


# -- broadcasting -------------------------------------------------------------------------------------

BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    **{name: _binary_cases(name, _nontrivial(2), all_diff=True) for name in BINARY},
    "clamp": _clamp_cases(_nontrivial(3), st.just("both"), all_diff=True),
    "where": _where_cases(_nontrivial(3), all_diff=True),
    "matmul": _matmul_cases(batch_broadcast=True),
}


@pytest.mark.parametrize("name", sorted(BROADCASTING))
@given(data=st.data())
def test_binary_op_broadcasting(name: str, data: st.DataObject) -> None:
    case = data.draw(BROADCASTING[name], label="case")
    out, back = ng.vjp(case.fn, *case.values)
    assert np.shape(out) == np.shape(case.ref(*case.values))
    grads = back(_draw_seed(data, out))
    assert [np.shape(g) for g in grads] == [np.shape(v) for v in case.values]
    check_grads(case.fn, *case.values)


# -- bad inputs ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BadCall:
    """A call of op ``op`` that must raise ``error`` with ``names`` and ``fragments`` in its message.

    ``inputs`` become leaves first (float arrays params, anything else inputs), then
    ``prepare`` may record more nodes from them; what it returns is passed to ``call``.
    """

    op: str
    inputs: tuple[Any, ...]
    call: Callable[..., Any]
    error: type[NodegradError]
    fragments: tuple[str, ...] = ()
    names: str = ""
    prepare: Callable[..., tuple[Any, ...]] | None = None

    def __str__(self) -> str:
        return f"{self.op}-{self.error.__name__}-{'-'.join(self.fragments)}"


_M23, _M45, _STRINGS = np.ones((2, 3)), np.ones((4, 5)), np.array(["a", "b"])

BAD_CALLS = [
    *(BadCall(name, (_M23, np.ones(4)), fn, ShapeError, ("[2, 3]", "[4]")) for name, (fn, *_) in BINARY.items()),
    *(BadCall(name, (_STRINGS,), fn, DtypeError, ("<U1[2]",)) for name, (fn, *_) in _UNARY.items()),
    BadCall("gelu", (_STRINGS,), ng.gelu, DtypeError, ("<U1[2]",)),
    BadCall("clamp", (np.ones(3), np.ones(2)), lambda x, lo: ng.clamp(x, lo), ShapeError, ("[3]", "[2]")),
    BadCall("clamp", (np.ones(3),), lambda x: ng.clamp(x), ShapeError, ("lo", "hi")),
    BadCall("where", (np.array([0, 2]), np.ones(2), np.ones(2)), ng.where, ShapeError, ("mask",)),
    BadCall("where", (np.array([True, False]), np.ones(3), np.ones(2)), ng.where, ShapeError, ("[3]", "[2]")),
    BadCall("getitem", (_M23,), lambda x: x[2], OpIndexError, ("out of bounds",)),
    BadCall("getitem", (_M23,), lambda x: x[np.array([0, -3])], OpIndexError, ("-3",)),
    BadCall("getitem", (_M23,), lambda x: x[np.array([0.5])], OpIndexError, ("float64",)),
    BadCall("getitem", (_M23,), lambda x: x[0, 0, 0], OpIndexError, ("indices",)),
    BadCall("gather", (_M23, np.array([0, 2])), ng.gather, OpIndexError, ("index 2", "size 2")),
    BadCall("gather", (_M23, np.array([-3])), lambda x, i: ng.gather(x, i, axis=0), OpIndexError, ("-3",)),
    BadCall("gather", (_M23,), lambda x: ng.gather(x, np.array([0.0])), OpIndexError, ("float64",)),
    BadCall("gather", (_M23,), lambda x: ng.gather(x, np.array([0]), axis=2), ShapeError, ("axis 2",)),
    BadCall("matmul", (_M23, _M45), ng.matmul, ShapeError, ("[2, 3]", "[4, 5]")),
    BadCall("matmul", (_M23, np.array(2.0)), ng.matmul, ShapeError, ("[2, 3]", "float64[]")),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=2), ShapeError, ("axis 2",))
      for name in ("sum", "mean", "max", "min")),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=(1, -1)), ShapeError, ("repeated",))
      for name in ("sum", "mean", "max", "min")),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=(0, 1)), ShapeError, ("single int",))
      for name in ("softmax", "log_softmax")),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=-3), ShapeError, ("-3",))
      for name in ("softmax", "log_softmax")),
    BadCall("cross_entropy", (_M23, np.array([0, 3])), ng.cross_entropy, OpIndexError, ("[0, 3)",)),
    BadCall("cross_entropy", (_M23, np.array([-1, 0])), ng.cross_entropy, OpIndexError, ("-1",)),
    BadCall("cross_entropy", (_M23, np.array([0, 1, 2])), ng.cross_entropy, ShapeError, ("(2,)", "(3,)")),
    BadCall("cross_entropy_probs", (_M23, np.ones((2, 4))), ng.cross_entropy, ShapeError, ("(2, 4)",), "cross_entropy"),
    BadCall("cross_entropy_probs", (_M23, np.full((2, 3), "p")), ng.cross_entropy, DtypeError, ("<U1[2, 3]",)),
    BadCall("layer_norm", (_M23, np.ones(4)), ng.layer_norm, ShapeError, ("weight", "(3,)", "(4,)")),
    BadCall("layer_norm", (np.array(1.0),), ng.layer_norm, ShapeError, ("1 dimension",)),
    BadCall("batch_norm", (np.ones(3),), ng.batch_norm, ShapeError, ("(N, C, ...)", "(3,)")),
    BadCall("batch_norm", (_M23, np.ones(2)), lambda x, b: ng.batch_norm(x, None, b), ShapeError, ("bias", "(3,)")),
    BadCall("reshape", (_M23,), lambda x: ng.reshape(x, (4,)), ShapeError, ("(4,)",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (0, 0)), ShapeError, ("permutation",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (1, 0, 2)), ShapeError, ("permutation",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (0, 5)), ShapeError, ("5",)),  # engine bug 2
    BadCall("cat", (_M23, np.ones((3, 3))), lambda *xs: ng.cat(xs, axis=1), ShapeError, ("[2, 3]", "[3, 3]")),
    BadCall("cat", (_M23,), lambda x: ng.cat([x], axis=2), ShapeError, ("axis 2",)),
    BadCall("cat", (), lambda: ng.cat([]), ShapeError, ("at least one",)),
    BadCall("stack", (np.ones(2), np.ones(3)), lambda *xs: ng.stack(xs), ShapeError, ("[2]", "[3]")),
    BadCall("stack", (np.ones(2),), lambda x: ng.stack([x], axis=2), ShapeError, ("axis 2",)),
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


def test_every_registered_op_has_an_error_case() -> None:
    covered = {bad.op for bad in BAD_CALLS}
    assert not (set(REGISTRY) - LEAF_OPS) - covered, sorted((set(REGISTRY) - LEAF_OPS) - covered)


@pytest.mark.parametrize("bad", BAD_CALLS, ids=str)
def test_bad_input_raises_an_error_naming_the_op(bad: BadCall) -> None:
    with ng.Arena() as arena:
        leaves = [arena.param(v) if np.asarray(v).dtype.kind == "f" else arena.input(v) for v in bad.inputs]
        if bad.prepare is not None:
            leaves = list(bad.prepare(*leaves))
        size = len(arena)
        with pytest.raises(bad.error) as info:
            bad.call(*leaves)
        assert isinstance(info.value, NodegradError)
        assert len(arena) == size, "the failed call left nodes in the arena"
        message = str(info.value)
        for fragment in (bad.names or bad.op, *bad.fragments):
            assert fragment in message, f"{fragment!r} missing from the message: {message}"
        assert Path(__file__).name in message, f"the message does not point at the calling line: {message}"
        # The arena still records and differentiates.
        z = arena.param(np.array([0.5, -1.5]))
        y = ng.sum(z * z)
        assert len(arena) == size + 3
        np.testing.assert_array_equal(arena.backward(y, wrt=z), [1.0, -3.0])


def test_np_take_out_of_bounds_leaves_no_node() -> None:
    # Engine bug 5: np.take without an axis records a reshape before the gather fails.
    with ng.Arena() as arena:
        x = arena.param(np.ones(3))
        with pytest.raises(OpIndexError, match="gather"):
            np.take(x, np.array([5]))
        assert len(arena) == 1, [node.op for node in arena]


# -- conventions at non-differentiable points (not checkable by finite differences) ---------------------


def _grads(f: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    result = ng.grad(lambda *a: ng.sum(f(*a)), argnums=tuple(range(len(args))))(*args)
    return tuple(result)


@pytest.mark.parametrize(
    ("f", "args", "expected"),
    [
        pytest.param(ng.maximum, ([1.0, 2.0], [1.0, 3.0]), ([0.5, 0.0], [0.5, 1.0]), id="maximum-tie-splits"),
        pytest.param(ng.minimum, ([1.0, 2.0], [1.0, 3.0]), ([0.5, 1.0], [0.5, 0.0]), id="minimum-tie-splits"),
        pytest.param(ng.max, ([1.0, 3.0, 3.0],), ([0.0, 0.5, 0.5],), id="max-ties-share"),
        pytest.param(lambda x: ng.min(x, axis=1), ([[2.0, 2.0, 2.0], [1.0, 0.0, 3.0]],),
                     ([[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]],), id="min-axis-ties-share"),
        pytest.param(ng.relu, ([-1.0, 0.0, 2.0],), ([0.0, 0.0, 1.0],), id="relu-zero-at-0"),
        pytest.param(ng.abs, ([-1.0, 0.0, 2.0],), ([-1.0, 0.0, 1.0],), id="abs-zero-at-0"),
        pytest.param(ng.clamp, ([-1.0, 0.0, 1.0, 2.0], -1.0, 1.0), ([1.0, 1.0, 1.0, 0.0], 0.0, 1.0),
                     id="clamp-bound-goes-to-x"),
        pytest.param(ng.power, ([0.0, -2.0], [2.0, 2.0]), ([0.0, -4.0], [0.0, 0.0]), id="power-dy-0-for-x<=0"),
    ],
)  # fmt: skip
def test_gradient_conventions_at_kinks(f: Callable[..., Any], args: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    arrays = tuple(np.array(a) if isinstance(a, list) else a for a in args)
    for got, want in zip(_grads(f, *arrays), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


# -- engine bugs found while writing this suite (deterministic reproducers) -------------------------------


def test_gelu_exact_accepts_scalars() -> None:
    # Engine bug 1: the exact form calls .astype on the Python float math.erf returns for 0-d input.
    assert ng.gelu(0.5, approximate=False) == pytest.approx(_gelu_ref(0.5, approximate=False), rel=1e-12)
    check_grads(lambda x: ng.gelu(x, approximate=False), np.array(0.5))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reduction_of_0d_input_along_axis_0(name: str) -> None:
    # numpy lets sum/max/min reduce a 0-d array over "axis 0" (there is nothing to reduce;
    # np.mean alone refuses). nodegrad does the same for all four, gradient included.
    x = np.array(2.0)
    assert getattr(ng, name)(x, axis=0) == 2.0
    assert ng.grad(lambda v: getattr(ng, name)(v, axis=0))(3.0) == 1.0


def test_vjp_of_a_function_returning_an_earlier_argument() -> None:
    # Engine bug 4: the sweep indexes its mark array by wrt indices above the output's.
    _, back = ng.vjp(lambda x, y: x, 1.0, 2.0)
    assert back(1.0) == (1.0, 0.0)
