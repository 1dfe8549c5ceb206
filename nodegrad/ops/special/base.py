"""What the rooms of the special-function family share: registering an op, refusing
complex values where scipy's function is real, and the ``x == 0`` convention of
``xlogy``.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

import numpy as np

from nodegrad.engine.registry import Op, defop
from nodegrad.errors import NoGradientError
from nodegrad.ops.batching import elementwise
from nodegrad.ops.elementwise.arithmetic import all_values, plain_map, refusing_complex

__all__ = [
    "FAMILY",
    "binary",
    "float_like",
    "no_closed_form",
    "plain_map",
    "real_only",
    "sc",
    "ternary",
    "unary",
    "xdivy",
]

FAMILY = "special"


@cache
def _scipy_special() -> Any:
    return importlib.import_module("scipy.special")


class _LazyScipySpecial:
    """``scipy.special``, imported on the first call of one of its functions.

    Importing scipy.special takes a quarter of a second, five times nodegrad's own import:
    a program that never calls a special function should not pay for it. ``sc.gammaln`` is
    a function that looks the ufunc up when called, so the ops can be registered (and
    listed, and documented) before scipy is loaded.
    """

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(_scipy_special(), name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call


#: scipy.special, loaded on first use (its functions, called as ``sc.erf(x)``).
sc: Any = _LazyScipySpecial()


def real_only(name: str, forward: Any) -> Any:
    """``forward``, refusing complex operands as scipy's function of the same name does."""
    return refusing_complex(name, forward, f"scipy.special.{name} is defined for real numbers only")


def unary(name: str, forward: Any, rule: Any, doc: str, *, complex_ok: bool = False) -> Op:
    """Register an op of one input (real only unless ``complex_ok``)."""
    fwd = forward if complex_ok else real_only(name, forward)
    return defop(name, fwd, rule, family=FAMILY, doc=doc, batch=elementwise)


def binary(name: str, forward: Any, rule_x: Any, rule_y: Any, doc: str, *, complex_ok: bool = False) -> Op:
    """Register an op of two inputs that broadcast against each other."""
    fwd = forward if complex_ok else real_only(name, forward)
    return defop(name, fwd, rule_x, rule_y, family=FAMILY, broadcasts=True, doc=doc, batch=elementwise)


def ternary(name: str, forward: Any, rules: tuple[Any, Any, Any], doc: str) -> Op:
    """Register a real op of three inputs that broadcast against each other."""
    return defop(name, real_only(name, forward), *rules, family=FAMILY, broadcasts=True, doc=doc, batch=elementwise)


def no_closed_form(name: str, argument: str) -> Any:
    """The rule of an input whose derivative has no closed form: it raises
    :class:`NoGradientError` naming the op and the argument, never a wrong number."""

    def no_rule(g: Any, ans: Any, *args: Any) -> Any:
        msg = (
            f"op {name!r} has no gradient rule for {argument}: its derivative there has no closed form "
            f"(differentiate in the other arguments, or pass {argument} as a constant)"
        )
        raise NoGradientError(msg)

    no_rule.__doc__ = f"none: the derivative in {argument} has no closed form (NoGradientError)"
    return no_rule


def float_like(out: Any, *inputs: Any) -> Any:
    """``out`` in the float dtype its inputs call for (scipy computes some functions in
    float64 whatever it is given)."""
    dtype = np.result_type(*inputs, 1.0)  # weak 1.0: a float dtype, float32 kept
    return out.astype(dtype, copy=False) if out.dtype != dtype else out


def xdivy(x: Any, y: Any) -> Any:
    """``x / y``, and 0 where ``x == 0`` even if ``y == 0``: the derivative in ``y`` of
    ``xlogy(x, y)``, which is 0 at ``x == 0``. The division never sees ``0 / 0``, so no
    order of derivative meets a NaN there."""
    zero = np.logical_and(x == 0, y == 0)  # elsewhere x / y is already 0 at x == 0, with its derivative 1 / y
    if not np.any(all_values(zero)):  # under vmap: in no example
        return x / y
    return np.where(zero, 0, x / np.where(zero, 1, y))
