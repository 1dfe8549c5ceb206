"""Specs for the special-function family (scipy.special's functions as ops): each op is a
table row with its domain, chosen away from poles, branch cuts and kinks; the reference
is scipy's own function. ``COMPLEX`` holds the holomorphic ones (the error functions,
``ndtr``, ``log_ndtr``, ``xlogy``, ``xlog1py``, ``logsumexp``); the others refuse
complex values by name. Without scipy the family registers nothing and the tables are
empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np

from nodegrad.errors import ArgumentError, DtypeError, NodegradError, ShapeError
from nodegrad.ops import special
from tests.ops.harness import BadCall, Case, ComplexSpec, SomeShapes, diff_mask, draw_operand, nontrivial
from tests.strategies import away_from_zero, axes, broadcastable_shapes, float_arrays, floats, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPLEX", "COMPOSITES", "SPECS"]

SPECS: dict[str, st.SearchStrategy[Case]] = {}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {}
COMPLEX: dict[str, ComplexSpec] = {}
BAD_CALLS: list[BadCall] = []

if special.HAVE_SCIPY:
    import scipy.special as sc

    _POSITIVE = floats(0.2, 3.0)
    # Off the poles of the gamma function at 0, -1, -2, ...
    _OFF_POLES = st.one_of(floats(0.2, 3.0), floats(-0.8, -0.2), floats(-1.8, -1.2))

    UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], st.SearchStrategy[float]]] = {
        "gammaln": (special.gammaln, sc.gammaln, _OFF_POLES),
        "digamma": (special.digamma, sc.psi, _OFF_POLES),
        "gamma": (special.gamma, sc.gamma, _OFF_POLES),
        "rgamma": (special.rgamma, sc.rgamma, _OFF_POLES),
        "j0": (special.j0, sc.j0, floats()),
        "j1": (special.j1, sc.j1, floats()),
        "y0": (special.y0, sc.y0, _POSITIVE),  # -inf at 0, complex beyond
        "y1": (special.y1, sc.y1, _POSITIVE),
        "erf": (special.erf, sc.erf, floats()),
        "erfc": (special.erfc, sc.erfc, floats()),
        "erfcx": (special.erfcx, sc.erfcx, floats(-2.0, 3.0)),
        "erfinv": (special.erfinv, sc.erfinv, floats(-0.9, 0.9)),
        "erfcinv": (special.erfcinv, sc.erfcinv, floats(0.1, 1.9)),
        "ndtr": (special.ndtr, sc.ndtr, floats()),
        "ndtri": (special.ndtri, sc.ndtri, floats(0.05, 0.95)),
        "log_ndtr": (special.log_ndtr, sc.log_ndtr, floats()),
        "i0": (special.i0, sc.i0, floats()),
        "i1": (special.i1, sc.i1, floats()),
        "i0e": (special.i0e, sc.i0e, away_from_zero()),  # exp(-|x|): a kink at 0
        "i1e": (special.i1e, sc.i1e, away_from_zero()),
        "expit": (special.expit, sc.expit, floats()),
        "logit": (special.logit, sc.logit, floats(0.05, 0.95)),
        "log_expit": (special.log_expit, sc.log_expit, floats()),
        "entr": (special.entr, sc.entr, floats(0.1, 3.0)),
    }
    BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any, Any]] = {
        "betaln": (special.betaln, sc.betaln, _POSITIVE, _POSITIVE),
        "beta": (special.beta, sc.beta, _POSITIVE, _POSITIVE),
        "xlogy": (special.xlogy, sc.xlogy, floats(), _POSITIVE),
        "xlog1py": (special.xlog1py, sc.xlog1py, floats(), floats(-0.8, 3.0)),
        "rel_entr": (special.rel_entr, sc.rel_entr, floats(0.1, 3.0), floats(0.1, 3.0)),
        "kl_div": (special.kl_div, sc.kl_div, floats(0.1, 3.0), floats(0.1, 3.0)),
    }
    # Differentiable in the last operand only; the others (shape parameters) are constants.
    IN_THE_POINT: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...], Any]] = {
        "gammainc": (special.gammainc, sc.gammainc, (floats(0.5, 3.0),), floats(0.1, 3.0)),
        "gammaincc": (special.gammaincc, sc.gammaincc, (floats(0.5, 3.0),), floats(0.1, 3.0)),
        "betainc": (special.betainc, sc.betainc, (floats(0.5, 3.0), floats(0.5, 3.0)), floats(0.05, 0.95)),
        "betaincc": (special.betaincc, sc.betaincc, (floats(0.5, 3.0), floats(0.5, 3.0)), floats(0.05, 0.95)),
        # scipy's stdtr loses digits near t == 0 for df near 1 (an absolute error of 1.4e-11
        # at t = 1e-6 and df = 1, against its closed form), enough to spoil central differences.
        "stdtr": (special.stdtr, sc.stdtr, (floats(0.5, 5.0),), away_from_zero(0.1)),
    }

    @st.composite
    def _unary_cases(draw: st.DrawFn, name: str, elements: Any = None) -> Case:
        fn, ref, domain = UNARY[name]
        x = draw_operand(draw, draw(shapes()), domain if elements is None else elements)
        return Case(fn, ref, (x,), (True,), desc=name)

    @st.composite
    def _polygamma_cases(draw: st.DrawFn) -> Case:
        n = draw(st.integers(0, 3))
        x = draw_operand(draw, draw(shapes()), floats(0.3, 3.0))
        return Case(lambda x: special.polygamma(n, x), lambda x: sc.polygamma(n, x), (x,), (True,), (n,), f"n={n}")

    # Functions of a constant order and a point: (ours, scipy's, orders, the point's domain).
    ORDERED: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any, Any]] = {
        "jn": (special.jn, sc.jn, st.sampled_from([0, 1, 2, 3, 1.5, -0.5]), floats()),
        "yn": (special.yn, sc.yn, st.integers(0, 3), _POSITIVE),
        "iv": (special.iv, sc.iv, st.sampled_from([0.0, 1.0, 2.0, 0.5, 2.5]), _POSITIVE),
        "ive": (special.ive, sc.ive, st.sampled_from([0, 1, 2]), away_from_zero()),  # a kink at 0
    }

    @st.composite
    def _ordered_cases(draw: st.DrawFn, name: str) -> Case:
        fn, ref, orders, domain = ORDERED[name]
        n = draw(orders)
        if isinstance(n, float) and n != int(n) and name == "jn":
            domain = _POSITIVE  # a real order: real values for x > 0 only
        x = draw_operand(draw, draw(shapes()), domain)
        return Case(lambda x: fn(n, x), lambda x: ref(n, x), (x,), (True,), (n,), f"{name} order={n}")

    @st.composite
    def _binary_cases(
        draw: st.DrawFn, name: str, pairs: SomeShapes, all_diff: bool = False, domains: Any = None
    ) -> Case:
        fn, ref, x_domain, y_domain = BINARY[name]
        x_domain, y_domain = domains or (x_domain, y_domain)
        shape_x, shape_y = draw(pairs)
        x, y = draw_operand(draw, shape_x, x_domain), draw_operand(draw, shape_y, y_domain)
        diff = (True, True) if all_diff else draw(diff_mask(2))
        return Case(fn, ref, (x, y), diff, desc=f"{name} {np.shape(x)} {np.shape(y)}")

    @st.composite
    def _in_the_point_cases(draw: st.DrawFn, name: str, shape_sets: SomeShapes) -> Case:
        fn, ref, param_domains, domain = IN_THE_POINT[name]
        *param_shapes, shape = draw(shape_sets)
        params = tuple(draw(float_arrays(s, elements=d)) for s, d in zip(param_shapes, param_domains, strict=True))
        x = draw_operand(draw, shape, domain)

        def like(x: Any) -> tuple[Any, ...]:  # the shape parameters in the precision of x
            return tuple(p.astype(x.dtype if hasattr(x, "dtype") else np.float64) for p in params)

        return Case(lambda x: fn(*like(x), x), lambda x: ref(*like(x), x), (x,), (True,), params, name)

    @st.composite
    def _logsumexp_cases(draw: st.DrawFn, complex_ok: bool = False, nontrivial_b: bool = False) -> Case:
        shape = draw(shapes(min_dims=1))
        axis = draw(st.one_of(st.none(), axes(len(shape), single=True)))
        keepdims = draw(st.booleans())
        return_sign = draw(st.booleans()) and not complex_ok
        a = draw(float_arrays(shape))
        b_shape = draw(st.sampled_from([shape, shape[1:], (1,) * len(shape)])) if nontrivial_b else shape
        # With the sign returned, b may be negative (away from a cancelling sum: one entry dominates).
        b = draw(float_arrays(b_shape, elements=floats(0.5, 2.0)))
        if return_sign and draw(st.booleans()):
            b = -b
        with_b = nontrivial_b or draw(st.booleans())

        def pick(out: Any) -> Any:
            return out[0] if return_sign else out

        if not with_b:
            return Case(
                lambda a: pick(special.logsumexp(a, axis, keepdims=keepdims, return_sign=return_sign)),
                lambda a: pick(sc.logsumexp(a, axis, keepdims=keepdims, return_sign=return_sign)),
                (a,),
                (True,),
                desc=f"axis={axis} keepdims={keepdims} return_sign={return_sign}",
            )
        diff = (True, True) if nontrivial_b else draw(diff_mask(2))
        return Case(
            lambda a, b: pick(special.logsumexp(a, axis, b, keepdims, return_sign)),
            lambda a, b: pick(sc.logsumexp(a, axis, b, keepdims, return_sign)),
            (a, b),
            diff,
            desc=f"axis={axis} b {b_shape} keepdims={keepdims} return_sign={return_sign}",
        )

    def _in_the_point_shapes(name: str) -> SomeShapes:
        return broadcastable_shapes(len(IN_THE_POINT[name][2]) + 1)

    SPECS.update(
        {
            **{name: _unary_cases(name) for name in UNARY},
            "polygamma": _polygamma_cases(),
            **{name: _ordered_cases(name) for name in ORDERED},
            **{name: _binary_cases(name, broadcastable_shapes(2)) for name in BINARY},
            **{name: _in_the_point_cases(name, _in_the_point_shapes(name)) for name in IN_THE_POINT},
            "weighted_logsumexp": _logsumexp_cases(),
        }
    )
    BROADCASTING.update(
        {
            **{name: _binary_cases(name, nontrivial(2), all_diff=True) for name in BINARY},
            **{name: _in_the_point_cases(name, nontrivial(len(IN_THE_POINT[name][2]) + 1)) for name in IN_THE_POINT},
            "weighted_logsumexp": _logsumexp_cases(nontrivial_b=True),
        }
    )

    # -- complex operands: the holomorphic ones -------------------------------------------------

    _SMALL_IMAGINARY = floats(-0.5, 0.5)
    COMPLEX.update(
        {
            **{name: ComplexSpec(_unary_cases(name), holomorphic=True) for name in ("erf", "erfc", "ndtr")},
            "erfcx": ComplexSpec(_unary_cases("erfcx", floats(-1.0, 3.0)), holomorphic=True),
            # log of ndtr: kept where ndtr stays off the negative real axis (the logarithm's cut).
            "log_ndtr": ComplexSpec(
                _unary_cases("log_ndtr", floats(-1.5, 3.0)), imag=_SMALL_IMAGINARY, holomorphic=True
            ),
            # y (and 1 + y) with a positive real part: off the logarithm's cut.
            "xlogy": ComplexSpec(SPECS["xlogy"], holomorphic=True),
            "xlog1py": ComplexSpec(SPECS["xlog1py"], holomorphic=True),
            # Small phases keep the sum off the logarithm's cut.
            "weighted_logsumexp": ComplexSpec(
                _logsumexp_cases(complex_ok=True), imag=floats(-0.3, 0.3), holomorphic=True
            ),
        }
    )

    # -- bad calls --------------------------------------------------------------------------------

    _M23, _STRINGS, _Z = np.ones((2, 3)), np.array(["a", "b"]), np.array([1.0 + 2.0j, -0.5j])
    _COMPLEX_OK = set(COMPLEX)

    def _bad(
        op: str,
        inputs: tuple[Any, ...],
        call: Callable[..., Any],
        error: type[NodegradError],
        *fragments: str,
        names: str = "",
    ) -> BadCall:
        return BadCall(op, inputs, call, error, fragments, names)

    BAD_CALLS.extend(
        [
            *(_bad(name, (_STRINGS,), fn, DtypeError, "<U1[2]") for name, (fn, *_) in UNARY.items()),
            *(_bad(name, (_M23, np.ones(4)), fn, ShapeError, "[2, 3]", "[4]") for name, (fn, *_) in BINARY.items()),
            *(_bad(name, (_Z,), UNARY[name][0], DtypeError, "complex") for name in UNARY if name not in _COMPLEX_OK),
            *(
                _bad(name, (np.ones(2), _Z), BINARY[name][0], DtypeError, "complex")
                for name in BINARY
                if name not in _COMPLEX_OK
            ),
            *(
                _bad(name, (*(np.ones(2),) * len(params), _Z), fn, DtypeError, "complex")
                for name, (fn, _, params, _) in IN_THE_POINT.items()
            ),
            *(
                _bad(name, (*(np.ones(2),) * len(params), np.ones(3)), fn, ShapeError, "[2]", "[3]")
                for name, (fn, _, params, _) in IN_THE_POINT.items()
            ),
            _bad("polygamma", (np.ones(2),), lambda x: special.polygamma(-1, x), ArgumentError, "n must be integers"),
            _bad("polygamma", (np.ones(2),), lambda x: special.polygamma(1.5, x), ArgumentError, "1.5"),
            _bad("polygamma", (_Z,), lambda x: special.polygamma(1, x), DtypeError, "complex"),
            *(
                _bad(name, (_Z,), lambda x, fn=fn: fn(1, x), DtypeError, "complex")
                for name, (fn, *_) in ORDERED.items()
            ),
            _bad("yn", (np.ones(2),), lambda x: special.yn(1.5, x), ArgumentError, "the order must be integers"),
            _bad("jn", (np.ones(2),), lambda x: special.jn("a", x), ArgumentError, "the order must be real numbers"),
            _bad(
                "weighted_logsumexp",
                (np.ones((2, 3)),),
                lambda a: special.logsumexp(a, axis=2),
                ShapeError,
                "axis 2",
                names="logsumexp",
            ),
            _bad(
                "weighted_logsumexp",
                (np.ones((2, 3)), np.ones(4)),
                lambda a, b: special.logsumexp(a, b=b),
                ShapeError,
                "(2, 3)",
                names="logsumexp",
            ),
        ]
    )
