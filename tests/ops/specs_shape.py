"""Specs for the shape family: reshape, transpose, cat, stack, broadcast_to and pad; the
composites expand_dims, squeeze, ravel, moveaxis, swapaxes, flip and split."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import DtypeError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask
from tests.strategies import axes, complex_arrays, float_arrays, floats, shapes, stretchable_to

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]


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


def _unary(name: str, fn: Any, ref: Any, x: np.ndarray, desc: str) -> Case:
    return Case(fn, ref, (x,), (True,), desc=f"{name} {x.shape} {desc}")


@st.composite
def _astype_cases(draw: st.DrawFn) -> Case:
    # float32 to float64 only: finite differences cannot see through float32 rounding (that direction
    # is checked exactly in test_behaviours).
    x = draw(float_arrays(shapes())).astype(np.float32)
    return _unary("astype", lambda x: ng.astype(x, np.float64), lambda x: x.astype(np.float64), x, "to float64")


@st.composite
def _reshape_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    target = draw(_reshape_targets(x.size))
    return _unary("reshape", lambda x: ng.reshape(x, target), lambda x: np.reshape(x, target), x, f"to {target}")


@st.composite
def _transpose_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    perm: tuple[int, ...] | None = None
    if draw(st.booleans()):
        order = draw(st.permutations(range(x.ndim)))
        flips = draw(st.lists(st.booleans(), min_size=x.ndim, max_size=x.ndim))
        perm = tuple(a - x.ndim if flip else a for a, flip in zip(order, flips, strict=True))
    return _unary("transpose", lambda x: ng.transpose(x, perm), lambda x: np.transpose(x, perm), x, f"axes={perm}")


@st.composite
def _cat_cases(draw: st.DrawFn) -> Case:
    base = draw(shapes(min_dims=1))
    axis = draw(axes(len(base), single=True))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    k = axis % len(base)
    xs = tuple(draw(float_arrays((*base[:k], n, *base[k + 1 :]))) for n in sizes)
    return Case(
        lambda *xs: ng.cat(list(xs), axis=axis),
        lambda *xs: np.concatenate(xs, axis=axis),
        xs,
        draw(diff_mask(len(xs))),
        desc=f"cat of {len(xs)} along axis={axis}",
    )


@st.composite
def _stack_cases(draw: st.DrawFn) -> Case:
    shape = draw(shapes())
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    xs = tuple(draw(st.lists(float_arrays(shape), min_size=1, max_size=4)))
    return Case(
        lambda *xs: ng.stack(list(xs), axis=axis),
        lambda *xs: np.stack(xs, axis=axis),
        xs,
        draw(diff_mask(len(xs))),
        desc=f"stack of {len(xs)} along axis={axis}",
    )


@st.composite
def _broadcast_to_cases(draw: st.DrawFn) -> Case:
    target = draw(shapes())
    x = draw(float_arrays(draw(stretchable_to(target))))
    to = target if draw(st.booleans()) or len(target) != 1 else target[0]  # an int for one axis
    return _unary("broadcast_to", lambda x: ng.broadcast_to(x, to), lambda x: np.broadcast_to(x, to), x, f"to {to}")


@st.composite
def _pad_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes(min_dims=1)))
    width = st.integers(0, 2)
    form = draw(st.sampled_from(["int", "pair", "per axis"]))
    pad_width: Any = {
        "int": lambda: draw(width),
        "pair": lambda: (draw(width), draw(width)),
        "per axis": lambda: tuple((draw(width), draw(width)) for _ in range(x.ndim)),
    }[form]()
    value = draw(floats())

    def fn(x: Any) -> Any:
        return ng.pad(x, pad_width, constant_values=value)

    def ref(x: Any) -> Any:
        return np.pad(x, pad_width, mode="constant", constant_values=value)

    return _unary("pad", fn, ref, x, f"pad_width={pad_width} value={value}")


@st.composite
def _expand_dims_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    count = draw(st.integers(1, 2))
    if count == 1 and draw(st.booleans()):
        axis: Any = draw(st.integers(-x.ndim - 1, x.ndim))
    else:
        axis = draw(hnp.valid_tuple_axes(x.ndim + count, min_size=count, max_size=count))
    fn, ref = (lambda x: ng.expand_dims(x, axis)), (lambda x: np.expand_dims(x, axis))
    return _unary("expand_dims", fn, ref, x, f"axis={axis}")


@st.composite
def _squeeze_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes(min_side=1, max_side=2)))
    ones = [k for k, n in enumerate(x.shape) if n == 1]
    axis: Any = None
    if ones and draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
        axis = tuple(k - x.ndim if draw(st.booleans()) else k for k in chosen)
        axis = axis[0] if len(axis) == 1 and draw(st.booleans()) else axis
    return _unary("squeeze", lambda x: ng.squeeze(x, axis), lambda x: np.squeeze(x, axis), x, f"axis={axis}")


@st.composite
def _ravel_cases(draw: st.DrawFn) -> Case:
    return _unary("ravel", ng.ravel, np.ravel, draw(float_arrays(shapes())), "")


@st.composite
def _moveaxis_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes(min_dims=1)))
    count = draw(st.integers(1, x.ndim))
    source = draw(st.permutations(range(-x.ndim, 0)))[:count]
    destination = draw(st.permutations(range(x.ndim)))[:count]
    if count == 1 and draw(st.booleans()):
        source, destination = source[0], destination[0]
    fn, ref = (lambda x: ng.moveaxis(x, source, destination)), (lambda x: np.moveaxis(x, source, destination))
    return _unary("moveaxis", fn, ref, x, f"{source} -> {destination}")


@st.composite
def _swapaxes_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes(min_dims=1)))
    a, b = draw(axes(x.ndim, single=True)), draw(axes(x.ndim, single=True))
    return _unary("swapaxes", lambda x: ng.swapaxes(x, a, b), lambda x: np.swapaxes(x, a, b), x, f"{a}, {b}")


@st.composite
def _flip_cases(draw: st.DrawFn) -> Case:
    x = draw(float_arrays(shapes()))
    axis: Any = draw(axes(x.ndim))
    return _unary("flip", lambda x: ng.flip(x, axis), lambda x: np.flip(x, axis), x, f"axis={axis}")


@st.composite
def _split_cases(draw: st.DrawFn) -> Case:
    # The pieces come back raveled, weighted 1, 2, ... and joined: one array to compare.
    x = draw(float_arrays(shapes(min_dims=1)))
    axis = draw(axes(x.ndim, single=True))
    n = x.shape[axis]
    if draw(st.booleans()):
        sections: Any = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    else:  # split points, repeats (empty pieces) included
        sections = sorted(draw(st.lists(st.integers(0, n), max_size=3)))

    def fn(x: Any) -> Any:
        return ng.cat([ng.ravel(p) * float(k + 1) for k, p in enumerate(ng.split(x, sections, axis))])

    def ref(x: Any) -> Any:
        return np.concatenate([np.ravel(p) * float(k + 1) for k, p in enumerate(np.split(x, sections, axis))])

    return _unary("split", fn, ref, x, f"{sections} axis={axis}")


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "astype": _astype_cases(),
    "reshape": _reshape_cases(),
    "transpose": _transpose_cases(),
    "cat": _cat_cases(),
    "stack": _stack_cases(),
    "broadcast_to": _broadcast_to_cases(),
    "pad": _pad_cases(),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "expand_dims": _expand_dims_cases(),
    "squeeze": _squeeze_cases(),
    "ravel": _ravel_cases(),
    "moveaxis": _moveaxis_cases(),
    "swapaxes": _swapaxes_cases(),
    "flip": _flip_cases(),
    "split": _split_cases(),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}


@st.composite
def _complex_astype_cases(draw: st.DrawFn) -> Case:
    # To complex128, from real or complex values of any precision (a cast to complex64 would
    # round what finite differences see).
    source = draw(st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]))
    if np.dtype(source).kind == "c":
        x = draw(complex_arrays(shapes(), dtype=source))
    else:
        x = draw(float_arrays(shapes())).astype(source)
    fn, ref = (lambda x: ng.astype(x, np.complex128)), (lambda x: x.astype(np.complex128))
    return _unary("astype", fn, ref, x, f"from {np.dtype(source)} to complex128")


@st.composite
def _complex_pad_cases(draw: st.DrawFn) -> Case:
    # Complex values padded with a complex constant.
    x = draw(complex_arrays(shapes(min_dims=1)))
    width, value = draw(st.integers(0, 2)), complex(draw(floats()), draw(floats()))
    fn, ref = (lambda x: ng.pad(x, width, constant_values=value)), (lambda x: np.pad(x, width, constant_values=value))
    return _unary("pad", fn, ref, x, f"pad_width={width} value={value}")


# Linear maps all of them: holomorphic. cat and stack join real operands with complex ones.
COMPLEX: dict[str, ComplexSpec] = {
    **{name: ComplexSpec(spec, holomorphic=True) for name, spec in {**SPECS, **COMPOSITES}.items()},
    "astype": ComplexSpec(_complex_astype_cases(), drawn_complex=True, holomorphic=True),
    "pad": ComplexSpec(st.one_of(SPECS["pad"], _complex_pad_cases()), holomorphic=True),
}

_M23 = np.ones((2, 3))

BAD_CALLS = [
    BadCall("astype", (_M23,), lambda x: ng.astype(x, "no such dtype"), ShapeError, ("not a dtype",)),
    BadCall("reshape", (_M23,), lambda x: ng.reshape(x, (4,)), ShapeError, ("(4,)",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (0, 0)), ShapeError, ("permutation",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (1, 0, 2)), ShapeError, ("permutation",)),
    BadCall("transpose", (_M23,), lambda x: ng.transpose(x, (0, 5)), ShapeError, ("5",)),  # engine bug 2
    BadCall("cat", (_M23, np.ones((3, 3))), lambda *xs: ng.cat(xs, axis=1), ShapeError, ("[2, 3]", "[3, 3]")),
    BadCall("cat", (_M23,), lambda x: ng.cat([x], axis=2), ShapeError, ("axis 2",)),
    BadCall("cat", (), lambda: ng.cat([]), ShapeError, ("at least one",)),
    BadCall("stack", (np.ones(2), np.ones(3)), lambda *xs: ng.stack(xs), ShapeError, ("[2]", "[3]")),
    BadCall("stack", (np.ones(2),), lambda x: ng.stack([x], axis=2), ShapeError, ("axis 2",)),
    BadCall("broadcast_to", (_M23,), lambda x: ng.broadcast_to(x, (4, 3)), ShapeError, ("[2, 3]", "(4, 3)")),
    BadCall("broadcast_to", (_M23,), lambda x: ng.broadcast_to(x, (3,)), ShapeError, ("[2, 3]", "(3,)")),
    BadCall("pad", (_M23,), lambda x: ng.pad(x, ((1, 1), (1, 1), (1, 1))), ShapeError, ("2 axes",)),
    BadCall("pad", (_M23,), lambda x: ng.pad(x, (-1, 0)), ShapeError, ("non-negative",)),
    BadCall("pad", (_M23,), lambda x: ng.pad(x, 1, mode="reflect"), ShapeError, ("'reflect'",)),
    BadCall("pad", (_M23,), lambda x: ng.pad(x, 1, constant_values=1j), DtypeError, ("complex", "cast x")),
    BadCall("expand_dims", (_M23,), lambda x: ng.expand_dims(x, 3), ShapeError, ("axis 3",)),
    BadCall("squeeze", (_M23,), lambda x: ng.squeeze(x, 1), ShapeError, ("size 1",)),
    BadCall("swapaxes", (_M23,), lambda x: ng.swapaxes(x, 0, 2), ShapeError, ("axis 2",)),
    BadCall("moveaxis", (_M23,), lambda x: ng.moveaxis(x, [0, 1], [0]), ShapeError, ("2 source axes",)),
    BadCall("flip", (_M23,), lambda x: ng.flip(x, 2), ShapeError, ("axis 2",)),
    BadCall("split", (_M23,), lambda x: ng.split(x, 2, axis=1), ShapeError, ("axis 1",)),
]
