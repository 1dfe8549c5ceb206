"""Specs for the reduce family: sum, mean, max, min and prod; var, std and norm (composites)."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
from hypothesis import assume

import nodegrad as ng
from nodegrad.errors import ArgumentError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, draw_operand, well_separated_matrices
from tests.strategies import BOUND, axes, float_arrays, floats, grid, separated_arrays, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]


@st.composite
def _shape_and_axis(draw: st.DrawFn, max_side: int = 4) -> tuple[tuple[int, ...], Any]:
    if draw(st.booleans()):
        shape = draw(shapes(max_side=max_side))
        return shape, draw(axes(len(shape)))
    # make sure several non-trivial axes are reduced together
    shape = draw(shapes(min_dims=2, min_side=2, max_side=max_side))
    return shape, draw(hnp.valid_tuple_axes(len(shape), min_size=2))


@st.composite
def _reduce_cases(draw: st.DrawFn, name: str) -> Case:
    fn, ref = getattr(ng, name), getattr(np, name)
    shape, axis = draw(_shape_and_axis(max_side=3 if name == "prod" else 4))
    keepdims = draw(st.booleans())
    if name in ("max", "min"):  # no (near-)ties: the extremum is differentiable
        x = draw(separated_arrays(shape)) if shape else draw(grid())
    elif name == "prod":  # up to two exact zeros, so groups with none, one and two zeros
        # Small groups of small entries: with two zeros the true gradient is 0 and the
        # central difference's eps**2 term (a product of the other entries) must stay
        # below check_grads' atol.
        x = draw(float_arrays(shape, elements=floats(-1.2, 1.2)))
        for _ in range(draw(st.integers(0, 2)) if x.size else 0):
            x.flat[draw(st.integers(0, x.size - 1))] = 0.0
    else:
        x = draw_operand(draw, shape, floats())
    return Case(
        lambda x: fn(x, axis=axis, keepdims=keepdims),
        lambda x: ref(x, axis=axis, keepdims=keepdims),
        (x,),
        (True,),
        desc=f"{name} axis={axis} keepdims={keepdims}",
    )


def _count(shape: tuple[int, ...], axis: Any) -> int:
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in ((axis,) if isinstance(axis, int) else axis))


@st.composite
def _var_cases(draw: st.DrawFn, name: str) -> Case:
    # std needs a positive variance: at least two distinct entries in every group.
    shape, axis = draw(_shape_and_axis())
    if name == "std":
        shape = tuple(max(n, 2) for n in shape) or (2,)
        axis = draw(axes(len(shape)).filter(lambda a: a != ()))
    ddof = draw(st.integers(0, 1 if _count(shape, axis) > 1 else 0))
    keepdims = draw(st.booleans())
    x = draw(separated_arrays(shape, step=0.05)) if shape else draw(floats())
    fn, ref = getattr(ng, name), getattr(np, name)
    return Case(
        lambda x: fn(x, axis=axis, ddof=ddof, keepdims=keepdims),
        lambda x: ref(x, axis=axis, ddof=ddof, keepdims=keepdims),
        (x,),
        (True,),
        desc=f"{name} axis={axis} ddof={ddof} keepdims={keepdims}",
    )


def _sums_are_separated(x: np.ndarray, ord_: Any, axis: tuple[int, int]) -> bool:
    """Whether the line sums of ``|x|`` a matrix norm picks the max/min of have a unique
    extremum, at least 0.01 from the next (finite differences stay on one side of the kink)."""
    rows, cols = axis
    sums = np.sum(np.abs(x), axis=rows if ord_ in (1, -1) else cols, keepdims=True)
    lines = np.sort(np.moveaxis(sums, cols if ord_ in (1, -1) else rows, -1), axis=-1)
    if lines.shape[-1] < 2:
        return True
    gap = lines[..., 1] - lines[..., 0] if ord_ in (-1, -np.inf) else lines[..., -1] - lines[..., -2]
    return bool(np.all(gap >= 0.01))


@st.composite
def _norm_cases(draw: st.DrawFn) -> Case:
    # Entries away from 0 (abs has a kink there) with distinct |x| (inf-norms take a max).
    kind = draw(st.sampled_from(["vector", "matrix", "flat"]))
    shape = draw(shapes(min_dims=2 if kind == "matrix" else 1))
    magnitudes = draw(float_arrays(shape, elements=grid(lo=0.1, hi=BOUND, offset=0.005), unique=True))
    x = magnitudes * draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([-1.0, 1.0])))
    axis: Any = None
    if kind == "vector":
        # ord 0 counts the nonzeros (gradient 0); a numpy integer works as a Python one.
        ord_ = draw(st.sampled_from([None, 2, 1, 3.0, 0.5, -1, 0, np.int64(3), np.inf, -np.inf]))
        axis = draw(axes(len(shape), single=True)) if len(shape) > 1 or draw(st.booleans()) else None
    elif kind == "matrix":
        # Induced norms: the max/min over columns (1, -1) or rows (inf, -inf) of |x| sums;
        # the largest and smallest singular value (2, -2) and their sum ("nuc").
        ord_ = draw(st.sampled_from([None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"]))
        axis = tuple(draw(st.permutations(range(-len(shape), 0)))[:2])
        if len(shape) == 2 and draw(st.booleans()):
            axis = None  # rows along axis 0, columns along axis 1
        if ord_ in (2, -2, "nuc"):
            # Simple, nonzero singular values: built with the matrix axes last, then moved.
            rows, cols = (-2, -1) if axis is None else axis
            others = [a for a in range(len(shape)) if a not in (rows % len(shape), cols % len(shape))]
            moved = well_separated_matrices(draw, (*(shape[a] for a in others), shape[rows], shape[cols]))
            x = np.moveaxis(moved, (-2, -1), (rows, cols))
        elif ord_ not in (None, "fro"):
            assume(_sums_are_separated(x, ord_, (-2, -1) if axis is None else axis))
    else:  # the 2-norm of all entries
        ord_ = None
    keepdims = draw(st.booleans()) and axis is not None
    return Case(
        lambda x: ng.norm(x, ord=ord_, axis=axis, keepdims=keepdims),
        lambda x: np.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims),
        (x,),
        (True,),
        desc=f"norm ord={ord_!r} axis={axis} keepdims={keepdims}",
    )


@st.composite
def _complex_norm_cases(draw: st.DrawFn) -> Case:
    # Distinct |z| (inf-norms take a max) away from 0, at random phases; the induced matrix
    # norms need separated line sums of |z|. (The singular-value norms are linalg's.)
    kind = draw(st.sampled_from(["vector", "matrix", "flat"]))
    shape = draw(shapes(min_dims=2 if kind == "matrix" else 1))
    magnitudes = draw(float_arrays(shape, elements=grid(lo=0.1, hi=BOUND, offset=0.005), unique=True))
    z = magnitudes * np.exp(1j * draw(float_arrays(shape, elements=floats(-np.pi, np.pi))))
    axis: Any = None
    if kind == "vector":
        ord_ = draw(st.sampled_from([None, 2, 1, 3.0, 0.5, -1, 0, np.inf, -np.inf]))
        axis = draw(axes(len(shape), single=True)) if len(shape) > 1 or draw(st.booleans()) else None
    elif kind == "matrix":
        ord_ = draw(st.sampled_from([None, "fro", 1, -1, np.inf, -np.inf]))
        axis = tuple(draw(st.permutations(range(-len(shape), 0)))[:2])
        if ord_ not in (None, "fro"):
            assume(_sums_are_separated(np.abs(z), ord_, axis))
    else:
        ord_ = None
    keepdims = draw(st.booleans()) and axis is not None
    return Case(
        lambda z: ng.norm(z, ord=ord_, axis=axis, keepdims=keepdims),
        lambda z: np.linalg.norm(z, ord=ord_, axis=axis, keepdims=keepdims),
        (z,),
        (True,),
        desc=f"norm of complex values, ord={ord_!r} axis={axis} keepdims={keepdims}",
    )


_REDUCTIONS = ("sum", "mean", "max", "min", "prod")
SPECS: dict[str, st.SearchStrategy[Case]] = {name: _reduce_cases(name) for name in _REDUCTIONS}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "var": _var_cases("var"),
    "std": _var_cases("std"),
    "norm": _norm_cases(),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}
# max and min order complex values by real part, then imaginary part (the specs keep the
# real parts apart); var and std are real, of |x - mean| ** 2.
COMPLEX: dict[str, ComplexSpec] = {
    **{name: ComplexSpec(SPECS[name], holomorphic=name in ("sum", "mean", "prod")) for name in _REDUCTIONS},
    "prod": ComplexSpec(SPECS["prod"], holomorphic=True, keep_zeros=True),
    "var": ComplexSpec(COMPOSITES["var"]),
    "std": ComplexSpec(COMPOSITES["std"]),
    "norm": ComplexSpec(_complex_norm_cases(), drawn_complex=True),
}

_M23 = np.ones((2, 3))

BAD_CALLS = [
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=2), ShapeError, ("axis 2",))
      for name in _REDUCTIONS),
    *(BadCall(name, (_M23,), lambda x, n=name: getattr(ng, n)(x, axis=(1, -1)), ShapeError, ("repeated",))
      for name in _REDUCTIONS),
    BadCall("var", (_M23,), lambda x: ng.var(x, axis=3), ShapeError, ("axis 3",)),
    BadCall("norm", (_M23,), lambda x: ng.norm(x, ord=3), ArgumentError, ("ord=3", "not a matrix norm")),
    BadCall("norm", (np.ones(3),), lambda x: ng.norm(x, ord="nuc"), ArgumentError, ("'nuc'", "not a vector norm")),
    BadCall("norm", (np.ones((2, 2, 2)),), lambda x: ng.norm(x, ord=1), ShapeError, ("ord=1", "axis=")),
]  # fmt: skip
