"""Complex values through every op: each one is right on them, or refuses them by name.

Every registered op of the families below has a :class:`~tests.ops.harness.ComplexSpec`
in the ``COMPLEX`` table of its ``specs_<family>.py`` module (so have the public
functions built from several ops that are listed there), or a bad call raising a
``DtypeError`` that names it on a complex input (run with the other bad calls by
``test_ops.py``). For every complex spec:

(a) the forward, recorded and plain, equals numpy's on the same complex values, some
    operands complex and some real (real values meeting complex ones);
(b) the gradients pass :func:`~nodegrad.testing.check_grads` in reverse and forward mode,
    along real and along imaginary directions of each complex argument;
(c) complex64 operands (with float32 ones) give complex64 (or float32) results and
    gradients of their operands' dtypes, still right;
(d) for a holomorphic op, ``jacobian(..., holomorphic=True)`` is its complex derivative:
    along a random direction ``u`` it gives ``(f(z + h u) - f(z - h u)) / 2h`` and, by
    Cauchy-Riemann, ``(f(z + i h u) - f(z - i h u)) / 2ih``;
(e) a few ops are checked to second order.

The linalg and fourier families keep their own complex tests while their complex support
is being built; a ``COMPLEX`` table in their spec modules is picked up here all the same.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import assume, given, settings

import nodegrad as ng
from nodegrad.errors import DtypeError
from nodegrad.ops import REGISTRY
from nodegrad.testing import check_grads
from tests.ops.harness import Case, ComplexSpec
from tests.ops.test_ops import BAD_CALLS, FAMILIES, LEAF_OPS

OWN_COMPLEX_TESTS = {"linalg", "fourier"}
COMPLEX: dict[str, ComplexSpec] = {
    name: spec for module in FAMILIES.values() for name, spec in getattr(module, "COMPLEX", {}).items()
}
NAMES = sorted(COMPLEX)
HOLOMORPHIC = sorted(name for name, spec in COMPLEX.items() if spec.holomorphic)
# Second derivatives: a sample of rules of each kind (holomorphic, conjugating, selecting).
ORDER_2 = sorted(
    {"exp", "log", "sqrt", "arccosh", "tanh", "sigmoid", "abs", "power", "divide", "angle", "imag", "conj", "real"}
    | {"maximum", "where", "prod", "var", "norm", "cumprod", "ssm_scan", "logsumexp", "softmax", "sort", "index_set"}
)
EXAMPLES = settings(max_examples=10, deadline=None)


def _refuses_complex(name: str) -> bool:
    return any(
        bad.op == name and bad.error is DtypeError and any(np.iscomplexobj(v) for v in bad.inputs) for bad in BAD_CALLS
    )


def test_every_op_takes_complex_values_or_refuses_them() -> None:
    ops = [name for name, op in REGISTRY.items() if name not in LEAF_OPS and op.family not in OWN_COMPLEX_TESTS]
    neither = [name for name in ops if name not in COMPLEX and not _refuses_complex(name)]
    assert not neither, f"ops with neither a COMPLEX spec nor a bad call refusing complex values: {sorted(neither)}"
    assert [name for name in ORDER_2 if name not in COMPLEX] == []


def _draw(data: st.DataObject, name: str, mixed: bool = True) -> Case:
    case = data.draw(COMPLEX[name].cases(mixed), label="case")
    complex_out = np.iscomplexobj(case.ref(*case.values))  # real values cast to complex, say
    assert complex_out or any(np.iscomplexobj(v) for v in case.values), "a complex spec drew no complex values"
    return case


# -- (a) and (b) ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@EXAMPLES
@given(data=st.data())
def test_complex_forward_and_gradients(name: str, data: st.DataObject) -> None:
    case = _draw(data, name)
    expected = case.ref(*case.values)
    out, _ = ng.vjp(case.of_args(), *case.args)
    for got in (out, case.fn(*case.values)):  # recorded, and plain (nothing traced)
        assert np.shape(got) == np.shape(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    check_grads(case.fn, *case.values, argnums=case.argnums)


# -- (c) --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in NAMES if n != "astype"])  # astype's job is to change the dtype
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_complex64_in_complex64_out(name: str, data: st.DataObject) -> None:
    case = _draw(data, name)
    single = case.single()
    out, back = ng.vjp(single.of_args(), *single.args)
    expected = case.ref(*case.values)
    assert np.asarray(out).dtype == {"f": np.float32, "c": np.complex64}[np.asarray(expected).dtype.kind]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    seed = np.ones(np.shape(out), np.asarray(out).dtype)
    for k, (g, x) in enumerate(zip(back(seed), single.args, strict=True)):
        assert np.asarray(g).dtype == np.result_type(x), f"gradient {k} has dtype {np.asarray(g).dtype}"
    check_grads(single.fn, *single.values, argnums=single.argnums)


# -- (d) --------------------------------------------------------------------------------------------------


def _directional(jacobians: Any, us: list[Any]) -> Any:
    """The sum over arguments of ``J_k u_k``, each ``J_k`` shaped ``out.shape + x_k.shape``."""
    return sum(np.tensordot(np.asarray(j), u, axes=np.ndim(u)) for j, u in zip(jacobians, us, strict=True))


@pytest.mark.parametrize("name", HOLOMORPHIC)
@EXAMPLES
@given(data=st.data())
def test_holomorphic_derivative_is_the_complex_derivative(name: str, data: st.DataObject) -> None:
    case = _draw(data, name, mixed=False)
    f, args = case.of_args(), case.args
    assume(all(np.iscomplexobj(x) for x in args))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    us = [rng.standard_normal(np.shape(x)) + 1j * rng.standard_normal(np.shape(x)) for x in args]
    derivative = _directional(ng.jacobian(f, tuple(range(len(args))), holomorphic=True)(*args), us)
    h = 1e-6
    for step in (h, 1j * h):  # Cauchy-Riemann: the same derivative along u and along i u

        def moved(sign: float, step: complex = step) -> Any:
            return np.asarray(f(*(x + sign * step * u for x, u in zip(args, us, strict=True))))

        numeric = (moved(1.0) - moved(-1.0)) / (2 * step)
        np.testing.assert_allclose(derivative, numeric, rtol=1e-5, atol=1e-6, err_msg=f"{name} along {step}")


# -- (e) --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ORDER_2)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_complex_second_derivatives(name: str, data: st.DataObject) -> None:
    case = _draw(data, name)
    check_grads(case.fn, *case.values, argnums=case.argnums, order=2)
