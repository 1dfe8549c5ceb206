"""Specs for the elementwise family: unary math, binary arithmetic, gelu, clamp and where.

The unary and binary ops are each one table row: the nodegrad function, a numpy
reference (a second formula where numpy's own function is what the op calls) and the
value domain of each operand, chosen away from the points where the op is not
differentiable or not defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import DtypeError, ShapeError
from tests.ops.harness import BadCall, Case, ComplexSpec, SomeShapes, diff_mask, draw_operand, nontrivial
from tests.strategies import (
    BOUND,
    away_from_zero,
    broadcastable_shapes,
    complex_arrays,
    complexes,
    floats,
    grid,
    shapes,
)

__all__ = ["BAD_CALLS", "BINARY", "BROADCASTING", "COMPLEX", "COMPOSITES", "PARTS", "SPECS", "UNARY", "gelu_ref"]

Unary = tuple[Callable[..., Any], Callable[..., Any], st.SearchStrategy[float]]
Binary = tuple[Callable[..., Any], Callable[..., Any], st.SearchStrategy[float], st.SearchStrategy[float]]

_POSITIVE = floats(0.2, BOUND)
_UNIT = floats(-0.9, 0.9)  # arcsin, arccos, arctanh: inside (-1, 1), away from the ends

UNARY: dict[str, Unary] = {
    "negative": (ng.negative, np.negative, floats()),
    "positive": (ng.positive, lambda x: 1.0 * x, floats()),
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
    "expm1": (ng.expm1, lambda x: np.exp(x) - 1, floats()),
    "log1p": (ng.log1p, lambda x: np.log(1 + x), floats(-0.8, BOUND)),
    "log10": (ng.log10, lambda x: np.log(x) / math.log(10), _POSITIVE),
    "exp2": (ng.exp2, lambda x: np.exp(x * math.log(2)), floats()),
    "square": (ng.square, lambda x: x * x, floats()),
    "cbrt": (ng.cbrt, lambda x: np.sign(x) * np.abs(x) ** (1 / 3), away_from_zero()),
    "reciprocal": (ng.reciprocal, lambda x: 1 / np.asarray(x), away_from_zero(0.2)),
    "tan": (ng.tan, lambda x: np.sin(x) / np.cos(x), floats(-1.3, 1.3)),
    "arcsin": (ng.arcsin, lambda x: np.arctan2(x, np.sqrt(1 - x * x)), _UNIT),
    "arccos": (ng.arccos, lambda x: np.arctan2(np.sqrt(1 - x * x), x), _UNIT),
    "arctan": (ng.arctan, lambda x: np.arctan2(x, 1.0), floats()),
    "sinh": (ng.sinh, lambda x: (np.exp(x) - np.exp(np.negative(x))) / 2, floats()),
    "cosh": (ng.cosh, lambda x: (np.exp(x) + np.exp(np.negative(x))) / 2, floats()),
    "arcsinh": (ng.arcsinh, lambda x: np.sign(x) * np.log(np.abs(x) + np.sqrt(x * x + 1)), floats()),
    "arccosh": (ng.arccosh, lambda x: np.log(x + np.sqrt(x * x - 1)), floats(1.1, BOUND)),
    "arctanh": (ng.arctanh, lambda x: np.log((1 + x) / (1 - x)) / 2, _UNIT),
    "deg2rad": (ng.deg2rad, lambda x: x * (math.pi / 180), floats()),
    "rad2deg": (ng.rad2deg, lambda x: x * (180 / math.pi), floats()),
}

# remainder and fmod jump where x / y is an integer. Divisors are multiples of 0.5 and x
# is 0.1 to 0.4 past a multiple of 0.5, so |x / y - n| >= 0.05 for every integer n.
_DIVISORS = st.sampled_from([-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0])
_OFF_MULTIPLES = st.builds(lambda k, f: 0.5 * k + f, st.integers(-6, 5), floats(0.1, 0.4))

# maximum/minimum draw x on a 0.01 grid and y on the grid shifted by 0.005: never tied.
BINARY: dict[str, Binary] = {
    "add": (ng.add, np.add, floats(), floats()),
    "subtract": (ng.subtract, np.subtract, floats(), floats()),
    "multiply": (ng.multiply, np.multiply, floats(), floats()),
    "divide": (ng.divide, np.divide, floats(), away_from_zero(0.5)),
    "power": (ng.power, np.power, _POSITIVE, floats()),
    "maximum": (ng.maximum, np.maximum, grid(), grid(offset=0.005)),
    "minimum": (ng.minimum, np.minimum, grid(), grid(offset=0.005)),
    # hypot: x away from 0, so never at the kink (0, 0).
    "hypot": (ng.hypot, lambda x, y: np.sqrt(x * x + y * y), away_from_zero(), floats()),
    # arctan2(y, x): y away from 0, so off the origin and the branch cut (y = 0, x < 0).
    "arctan2": (ng.arctan2, lambda y, x: 2 * np.arctan(y / (np.sqrt(x * x + y * y) + x)), away_from_zero(), floats()),
    "logaddexp": (ng.logaddexp, lambda x, y: np.log(np.exp(x) + np.exp(y)), floats(), floats()),
    "logaddexp2": (ng.logaddexp2, lambda x, y: np.log2(np.exp2(x) + np.exp2(y)), floats(), floats()),
    "remainder": (ng.remainder, lambda x, y: x - y * np.floor(np.divide(x, y)), _OFF_MULTIPLES, _DIVISORS),
    "fmod": (ng.fmod, lambda x, y: x - y * np.trunc(np.divide(x, y)), _OFF_MULTIPLES, _DIVISORS),
}

_erf = np.vectorize(math.erf, otypes=[float])


def gelu_ref(x: Any, approximate: bool) -> Any:
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(np.divide(x, math.sqrt(2))))


@st.composite
def _unary_cases(draw: st.DrawFn, name: str, elements: st.SearchStrategy[float] | None = None) -> Case:
    fn, ref, domain = UNARY[name]
    x = draw_operand(draw, draw(shapes()), domain if elements is None else elements)
    return Case(fn, ref, (x,), (True,), desc=name)


@st.composite
def _gelu_cases(draw: st.DrawFn, approximate: bool | None = None, elements: Any = None) -> Case:
    approximate = draw(st.booleans()) if approximate is None else approximate
    x = draw_operand(draw, draw(shapes()), floats() if elements is None else elements)
    return Case(
        lambda x: ng.gelu(x, approximate=approximate),
        lambda x: gelu_ref(x, approximate),
        (x,),
        (True,),
        desc=f"gelu approximate={approximate}",
    )


@st.composite
def _binary_cases(draw: st.DrawFn, name: str, shape_pairs: SomeShapes, all_diff: bool = False) -> Case:
    fn, ref, x_elements, y_elements = BINARY[name]
    shape_x, shape_y = draw(shape_pairs)
    x = draw_operand(draw, shape_x, x_elements)
    y = draw_operand(draw, shape_y, y_elements)
    diff = (True, True) if all_diff else draw(diff_mask(2))
    return Case(fn, ref, (x, y), diff, desc=f"{name} {np.shape(x)} {np.shape(y)}")


@st.composite
def _clamp_cases(
    draw: st.DrawFn, shape_triples: SomeShapes, bounds: st.SearchStrategy[str], all_diff: bool = False
) -> Case:
    # x on the 0.01 grid, lo < 0 < hi on the shifted grid: never at a bound, lo < hi.
    shape_x, shape_lo, shape_hi = draw(shape_triples)
    which = draw(bounds)
    x = draw_operand(draw, shape_x, grid())
    lo = draw_operand(draw, shape_lo, grid(hi=-0.005, offset=0.005)) if which != "hi" else None
    hi = draw_operand(draw, shape_hi, grid(lo=0.005, offset=0.005)) if which != "lo" else None
    values = (x, *(b for b in (lo, hi) if b is not None))

    def split(x: Any, *given: Any) -> tuple[Any, Any, Any]:
        it = iter(given)
        return x, next(it) if lo is not None else None, next(it) if hi is not None else None

    diff = (True,) * len(values) if all_diff else draw(diff_mask(len(values)))
    return Case(
        lambda *v: ng.clamp(*split(*v)),
        lambda *v: np.clip(*split(*v)),
        values,
        diff,
        desc=f"clamp bounds={which}",
    )


@st.composite
def _where_cases(draw: st.DrawFn, shape_triples: SomeShapes, all_diff: bool = False) -> Case:
    shape_m, shape_a, shape_b = draw(shape_triples)
    kind = draw(st.sampled_from(["bool", "int 0/1", "float 0/1"]))
    mask = draw(hnp.arrays(np.bool_, shape_m))
    if kind != "bool":
        mask = mask.astype(np.int64 if kind == "int 0/1" else np.float64)
    a = draw_operand(draw, shape_a, floats())
    b = draw_operand(draw, shape_b, floats())
    diff = (True, True) if all_diff else draw(diff_mask(2))
    return Case(
        lambda a, b: ng.where(mask, a, b),
        lambda a, b: np.where(mask.astype(bool), a, b),
        (a, b),
        diff,
        static=(mask,),
        desc=f"where, {kind} mask",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    **{name: _unary_cases(name) for name in UNARY},
    **{name: _binary_cases(name, broadcastable_shapes(2)) for name in BINARY},
    "gelu": _gelu_cases(),
    "clamp": _clamp_cases(broadcastable_shapes(3), st.sampled_from(["both", "lo", "hi"])),
    "where": _where_cases(broadcastable_shapes(3)),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    **{name: _binary_cases(name, nontrivial(2), all_diff=True) for name in BINARY},
    "clamp": _clamp_cases(nontrivial(3), st.just("both"), all_diff=True),
    "where": _where_cases(nontrivial(3), all_diff=True),
}

# -- complex operands -----------------------------------------------------------------------

# The branch cuts lie on the real axis (logarithms, roots, arcsin, arccos, arctanh, arccosh:
# the imaginary parts keep 0.2 away from it, the real parts are free, negative ones
# included) or on the imaginary axis beyond +-i (arctan, arcsinh: the other way round).
_OFF_REAL_AXIS = (floats(), away_from_zero(0.2, 1.4))
_OFF_IMAGINARY_AXIS = (away_from_zero(0.2), floats(-1.4, 1.4))
_COMPLEX_DOMAINS = {
    **{n: _OFF_REAL_AXIS for n in ("log", "log2", "log10", "log1p", "sqrt", "arcsin", "arccos", "arctanh", "arccosh")},
    **{name: _OFF_IMAGINARY_AXIS for name in ("arctan", "arcsinh")},
    "tanh": (floats(), floats(-1.2, 1.2)),  # poles at +-i pi / 2
}
_REAL_ONLY_UNARY = ("cbrt", "deg2rad", "rad2deg")

# The parts of complex numbers: drawn complex (of real values they record nothing); off the
# real axis, as angle jumps across its negative half.
PARTS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "real": (ng.real, np.real),
    "imag": (ng.imag, np.imag),
    "conj": (ng.conj, np.conjugate),
    "angle": (ng.angle, np.angle),
}


@st.composite
def _part_cases(draw: st.DrawFn, name: str) -> Case:
    fn, ref = PARTS[name]
    deg = name == "angle" and draw(st.booleans())
    shape = draw(shapes())
    if shape == () and draw(st.booleans()):
        z: Any = draw(complexes(*_OFF_REAL_AXIS))
    else:
        z = draw(complex_arrays(shape, real=_OFF_REAL_AXIS[0], imag=_OFF_REAL_AXIS[1]))
    if deg:
        return Case(lambda z: fn(z, deg=True), lambda z: ref(z, deg=True), (z,), (True,), desc=f"{name} deg=True")
    return Case(fn, ref, (z,), (True,), desc=name)


SPECS.update({name: _part_cases(name) for name in PARTS})
_REAL_ONLY_BINARY = ("hypot", "arctan2", "logaddexp", "logaddexp2", "remainder", "fmod")
_SELECTIONS = ("abs", "relu", "maximum", "minimum")  # abs is not holomorphic; the others select


def _complex_unary(name: str) -> ComplexSpec:
    real, imag = _COMPLEX_DOMAINS.get(name, (None, None))
    numpy_ref = getattr(np, name, None) if name not in ("relu", "sigmoid", "silu") else None
    return ComplexSpec(_unary_cases(name, real), ref=numpy_ref, imag=imag, holomorphic=name not in _SELECTIONS)


COMPLEX: dict[str, ComplexSpec] = {
    **{name: _complex_unary(name) for name in UNARY if name not in _REAL_ONLY_UNARY},
    **{
        name: ComplexSpec(SPECS[name], holomorphic=name not in _SELECTIONS)
        for name in BINARY
        if name not in _REAL_ONLY_BINARY
    },
    # The tanh form: |Re| <= 1.5 and |Im| <= 0.5 keep tanh's argument off its poles.
    "gelu": ComplexSpec(_gelu_cases(True, floats(-1.5, 1.5)), imag=floats(-0.5, 0.5), holomorphic=True),
    "clamp": ComplexSpec(SPECS["clamp"]),  # lexicographic, as np.clip: the real parts decide here
    "where": ComplexSpec(SPECS["where"], holomorphic=True),
    **{name: ComplexSpec(SPECS[name], drawn_complex=True) for name in PARTS},
}

_M23, _STRINGS = np.ones((2, 3)), np.array(["a", "b"])
_Z = np.array([1.0 + 2.0j, -0.5j])

BAD_CALLS = [
    *(BadCall(name, (_M23, np.ones(4)), fn, ShapeError, ("[2, 3]", "[4]")) for name, (fn, *_) in BINARY.items()),
    *(BadCall(name, (_STRINGS,), fn, DtypeError, ("<U1[2]",)) for name, (fn, *_) in UNARY.items()),
    BadCall("gelu", (_STRINGS,), ng.gelu, DtypeError, ("<U1[2]",)),
    *(BadCall(name, (_STRINGS,), fn, DtypeError, ("numbers", "<U1[2]")) for name, (fn, _) in PARTS.items()),
    BadCall("clamp", (np.ones(3), np.ones(2)), lambda x, lo: ng.clamp(x, lo), ShapeError, ("[3]", "[2]")),
    BadCall("clamp", (np.ones(3),), lambda x: ng.clamp(x), ShapeError, ("lo", "hi")),
    BadCall("where", (np.array([0, 2]), np.ones(2), np.ones(2)), ng.where, ShapeError, ("mask",)),
    BadCall("where", (np.array([True, False]), np.ones(3), np.ones(2)), ng.where, ShapeError, ("[3]", "[2]")),
    # Defined for real numbers only, as in numpy.
    *(BadCall(name, (_Z,), UNARY[name][0], DtypeError, ("complex",)) for name in _REAL_ONLY_UNARY),
    *(BadCall(name, (np.ones(2), _Z), BINARY[name][0], DtypeError, ("complex",)) for name in _REAL_ONLY_BINARY),
    BadCall("gelu", (_Z,), lambda x: ng.gelu(x, approximate=False), DtypeError, ("complex", "approximate=True")),
]
