"""Random bad arguments through every public op and transform.

Whatever a caller passes -- wrong shapes; float16, complex, integer, boolean, object and
string dtypes; ``None``; NaN and Inf; empty and 0-d arrays; ragged, cyclic and subclassed
containers -- a call either works or raises a :class:`nodegrad.errors.NodegradError`
(never a numpy traceback from inside the engine), and a call that raised leaves its
arena exactly as it was.
"""

from __future__ import annotations

import inspect
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
import nodegrad.ops
from nodegrad.engine.arena import _state
from nodegrad.errors import NodegradError

DTYPES = [np.float64, np.float32, np.float16, np.complex128, np.int64, np.bool_, object, "U1"]
SHAPES = [(), (0,), (1,), (3,), (2, 3), (3, 3), (2, 1, 3)]


class Mapping(dict):  # a dict subclass with a constructor of its own
    def __init__(self, scale: float) -> None:
        super().__init__(w=np.ones(2) * scale)


class Items(list):  # a list subclass
    pass


def _cyclic() -> list[Any]:
    value: list[Any] = [np.ones(2)]
    value.append(value)
    return value


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    shape = draw(st.sampled_from(SHAPES))
    dtype = draw(st.sampled_from(DTYPES))
    special = draw(st.sampled_from([0.0, 1.0, -2.5, np.nan, np.inf, -np.inf, 1e300]))
    if dtype == "U1":
        return np.full(shape, "a")
    if dtype is object:
        return np.full(shape, None, dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # casting inf/nan to an integer dtype
        values = np.arange(int(np.prod(shape, dtype=int)), dtype=np.float64).reshape(shape) - 1.0
        values = values.copy()
        if values.size:
            values.flat[0] = special
        return values.astype(dtype)


others = st.sampled_from(
    [None, 0, -1, 3, 2.5, np.nan, np.inf, True, "a", 1j, (), [], [1, [2, 3]], {"a": 1.0}, slice(None), Ellipsis]
)
containers = st.sampled_from(["cyclic", "dict subclass", "list subclass", "tuple of arrays", "ragged list"])


def _container(kind: str) -> Any:
    return {
        "cyclic": _cyclic,
        "dict subclass": lambda: Mapping(2.0),
        "list subclass": lambda: Items([np.ones(2), 1.0]),
        "tuple of arrays": lambda: (np.ones(2), np.ones((2, 2))),
        "ragged list": lambda: [np.ones(2), np.ones(3)],
    }[kind]()


@st.composite
def bad_values(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["array", "array", "array", "other", "container"]))
    if kind == "array":
        return "array", draw(arrays())
    if kind == "other":
        return "other", draw(others)
    return "container", _container(draw(containers))


def _traced(arena: ng.Arena, value: Any) -> Any:
    """``value`` as a leaf of ``arena`` (a parameter if it can be one, else an input)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return arena.param(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biu":
        return arena.input(value)
    return value


def _arity(fn: Callable[..., Any]) -> tuple[int, int]:
    parameters = inspect.signature(fn).parameters.values()
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required), len(positional)


def _nodes(arena: ng.Arena) -> list[Any]:
    return [id(node) for node in arena._nodes]


def _raised_in_user_code(exc: BaseException) -> bool:
    """The exception comes from the user's own function (``[1, 2] * [1, 2]`` on a list
    argument): it is the user's, and passes through as it is."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename == __file__


def _expect_nodegrad_errors(call: Callable[[], Any], arena: ng.Arena, what: str) -> None:
    before = _nodes(arena)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # numpy's warnings about NaN and overflow, and its deprecations of odd arguments
        # (a string read as a dtype), are numpy's answer for such values.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            call()
        except NodegradError:
            after = _nodes(arena)
            assert after == before, f"{what} raised but left {len(after) - len(before)} node(s) behind"
        except RecursionError:
            raise
        except Exception as exc:
            if not _raised_in_user_code(exc):
                pytest.fail(f"{what} raised {type(exc).__module__}.{type(exc).__name__}: {exc}")
    assert not _state.stack, f"{what} left a transform's arena entered"


OPS = sorted(nodegrad.ops.__all__)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_public_op_raises_only_nodegrad_errors_and_keeps_its_arena(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(OPS), label="op")
    fn = getattr(ng, name)
    required, positional = _arity(fn)
    count = data.draw(st.integers(required, max(required, positional)), label="count")
    drawn = [data.draw(bad_values(), label=f"argument {k}") for k in range(count)]
    arena = ng.Arena()
    traced_first = data.draw(st.booleans(), label="first argument traced")
    args = [_traced(arena, value) if k == 0 and traced_first else value for k, (_, value) in enumerate(drawn)]
    _expect_nodegrad_errors(lambda: fn(*args), arena, f"ng.{name}{tuple(type(a).__name__ for a in args)}")


TRANSFORMS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "grad": lambda f, x, opt: ng.grad(f, argnums=opt)(x),
    "value_and_grad": lambda f, x, opt: ng.value_and_grad(f, argnums=opt)(x),
    "grad holomorphic": lambda f, x, opt: ng.grad(f, holomorphic=opt)(x),
    "jacobian": lambda f, x, opt: ng.jacobian(f, argnums=opt)(x),
    "jacobian fwd": lambda f, x, opt: ng.jacobian(f, mode=opt)(x),
    "hessian": lambda f, x, opt: ng.hessian(f, argnums=opt)(x),
    "vjp": lambda f, x, opt: ng.vjp(f, x)[1](opt),
    "jvp": lambda f, x, opt: ng.jvp(f, (x,), (opt,)),
    "linearize": lambda f, x, opt: ng.linearize(f, x)[1](opt),
    "elementwise_grad": lambda f, x, opt: ng.elementwise_grad(f, argnums=opt)(x),
    "hvp": lambda f, x, opt: ng.hvp(f, x, opt),
    "checkpoint": lambda f, x, opt: ng.grad(ng.checkpoint(f))(x),
    "stop_gradient": lambda f, x, opt: ng.grad(lambda y: f(ng.stop_gradient(y)))(x),
}
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "sum of squares": lambda x: ng.sum(x * x),
    "identity": lambda x: x,
    "a string": lambda x: "not a number",
    "a dict": lambda x: {"y": x},
    "aux pair": lambda x: (ng.sum(x), 1),
    "raises": lambda x: 1 / 0,
}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_transform_raises_only_nodegrad_errors(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(TRANSFORMS)), label="transform")
    fun_name = data.draw(st.sampled_from(sorted(FUNCTIONS)), label="function")
    _, x = data.draw(bad_values(), label="argument")
    _, option = data.draw(bad_values(), label="option")
    arena = ng.Arena()

    def call() -> Any:
        try:
            return TRANSFORMS[name](FUNCTIONS[fun_name], x, option)
        except ZeroDivisionError:
            return None  # the user's own exception passes through as it is

    _expect_nodegrad_errors(call, arena, f"ng.{name} of {fun_name!r}")


def test_a_sum_the_sweep_replaced_is_never_written_into_again() -> None:
    # Found by the differential fuzzer (vmap(jvp) of cholesky then tensordot, float32): a
    # pending sum that did not fit an in-place add was replaced, but its id stayed among the
    # sums the sweep owns, so a later array made at its address (here a read-only view) was
    # added into in place. The eager jvp itself raised "output array is read-only".
    def f(m: Any) -> Any:
        spd = m @ m.T + 3.0 * np.eye(3, dtype=m.dtype)
        chol = np.linalg.cholesky(spd)
        return np.tensordot(chol, chol, axes=1)

    rng = np.random.default_rng(0)
    m, t = rng.normal(size=(3, 3)).astype(np.float32), rng.normal(size=(3, 3)).astype(np.float32)
    m.flags.writeable = t.flags.writeable = False
    for _ in range(20):
        _, tangent = ng.jvp(f, (m,), (t,))
        eps = 1e-3
        numeric = (f(m.astype(np.float64) + eps * t) - f(m.astype(np.float64) - eps * t)) / (2 * eps)
        np.testing.assert_allclose(tangent, numeric, rtol=2e-2, atol=2e-2)
        batched = ng.vmap(lambda m, t: ng.jvp(f, (m,), (t,))[1])(np.stack([m, m]), np.stack([t, t]))
        np.testing.assert_allclose(batched, np.stack([tangent, tangent]), rtol=1e-5, atol=1e-5)
