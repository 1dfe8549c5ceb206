"""scipy.special on traced values: scipy's own ufuncs through numpy's dispatch, the ops'
rules at their edges, ``nodegrad.scipy.special`` (``logsumexp`` with weights and signs,
``softmax``, ...), the errors that name scipy's functions, and nodegrad without scipy.

Values are compared with scipy's own (the ufuncs exactly: the ops call them); gradients
with central differences (:func:`~nodegrad.testing.check_grads`). The op-by-op checks
(every rule, float32, broadcasting, complex values, bad calls) are in
``tests/ops/specs_special.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.errors import ArenaError, ArgumentError, NoGradientError
from nodegrad.testing import check_grads
from tests.ops.harness import draw_operand
from tests.strategies import axes, broadcastable_shapes, float_arrays, floats, shapes

sc = pytest.importorskip("scipy.special")
special = pytest.importorskip("nodegrad.scipy.special")
from nodegrad.numpy_api.special import scipy_ufuncs  # noqa: E402  (after the importorskip above)
from tests.ops.specs_special import BINARY, IN_THE_POINT, ORDERED, UNARY  # noqa: E402

EXAMPLES = settings(max_examples=20, deadline=None)
ROOT = Path(__file__).resolve().parent.parent


def _close(got: Any, expected: Any, rtol: float = 1e-12) -> None:
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, equal_nan=True)


# -- scipy's ufuncs on traced values ----------------------------------------------------------------


def test_every_mapped_scipy_ufunc_is_tested_here() -> None:
    tested = {getattr(sc, name) for name in [*UNARY, *BINARY, *IN_THE_POINT, *ORDERED, "gammasgn"]}
    mapped = scipy_ufuncs()
    assert set(mapped) == tested | {sc.psi}
    assert mapped[sc.psi] is special.digamma


@pytest.mark.parametrize("name", sorted(UNARY))
@EXAMPLES
@given(data=st.data())
def test_a_unary_scipy_ufunc_records_its_op(name: str, data: st.DataObject) -> None:
    ufunc, domain = getattr(sc, name), UNARY[name][2]
    x = draw_operand(data.draw, data.draw(shapes()), domain)
    out, _ = ng.vjp(ufunc, x)
    _close(out, ufunc(x), rtol=0)
    check_grads(ufunc, x)


@pytest.mark.parametrize("name", sorted(BINARY))
@EXAMPLES
@given(data=st.data())
def test_a_binary_scipy_ufunc_records_its_op(name: str, data: st.DataObject) -> None:
    ufunc, (_, _, x_domain, y_domain) = getattr(sc, name), BINARY[name]
    shape_x, shape_y = data.draw(broadcastable_shapes(2))
    x, y = draw_operand(data.draw, shape_x, x_domain), draw_operand(data.draw, shape_y, y_domain)
    out, _ = ng.vjp(ufunc, x, y)
    _close(out, ufunc(x, y), rtol=0)
    check_grads(ufunc, x, y)


@pytest.mark.parametrize("name", sorted(IN_THE_POINT))
@EXAMPLES
@given(data=st.data())
def test_an_incomplete_function_differentiates_in_its_point_only(name: str, data: st.DataObject) -> None:
    ufunc, (_, _, param_domains, domain) = getattr(sc, name), IN_THE_POINT[name]
    params = tuple(data.draw(d) for d in param_domains)
    x = draw_operand(data.draw, data.draw(shapes()), domain)
    check_grads(lambda x: ufunc(*params, x), x)
    with pytest.raises(NoGradientError, match=rf"'{name}' has no gradient rule for .*no closed form"):
        ng.grad(lambda p: ng.sum(ufunc(p, *params[1:], x)))(params[0])


def test_order_two_through_the_dispatch() -> None:
    x = np.array([0.4, 1.3, 2.5])
    for f in (sc.gammaln, sc.digamma, sc.erf, sc.erfinv, sc.ndtri, sc.log_ndtr, sc.i1, sc.i0e, sc.expit, sc.logit):
        check_grads(f, np.clip(x, 0.1, 0.9) if f in (sc.erfinv, sc.ndtri, sc.logit) else x, order=2)
    check_grads(sc.xlogy, x, x[::-1], order=2)
    check_grads(sc.betaln, x, x[::-1], order=2)
    check_grads(sc.kl_div, x, x[::-1], order=2)


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_a_bessel_function_of_any_order_through_the_dispatch(name: str) -> None:
    ufunc = getattr(sc, name)  # scipy's jn is its jv
    x = np.array([0.4, 1.3, 2.5])
    for order in (0, 1, 2) if name == "yn" else (0, 1, 2.5):
        _close(ng.vjp(lambda x, n=order: ufunc(n, x), x)[0], ufunc(order, x), rtol=0)
        check_grads(lambda x, n=order: ufunc(n, x), x, order=2)
    if name != "yn":
        with pytest.raises(NoGradientError, match=rf"'{name}' has no gradient rule for the order"):
            ng.grad(lambda v: ufunc(v, 1.3))(1.5)


def test_beta_rgamma_and_bessels_of_orders_0_and_1_to_order_two() -> None:
    x = np.array([0.4, 1.3, 2.5])
    for f in (sc.rgamma, sc.j0, sc.j1, sc.y0, sc.y1):
        check_grads(f, x, order=2)
    check_grads(sc.beta, x, x[::-1], order=2)
    check_grads(sc.rgamma, np.array([-0.5, -1.5, -2.5]), order=2)  # off the poles, where gamma changes sign
    np.testing.assert_allclose(ng.grad(lambda a: sc.beta(a, 2.0))(1.5), sc.beta(1.5, 2.0) * (sc.psi(1.5) - sc.psi(3.5)))


def test_gammasgn_is_a_constant() -> None:
    x = np.array([0.5, -0.5, -1.5, 3.0])
    np.testing.assert_array_equal(special.gammasgn(x), sc.gammasgn(x))
    grad = ng.grad(lambda x: ng.sum(sc.gammasgn(x) * sc.gamma(x)))(x)  # |gamma|' = gammasgn * gamma'
    np.testing.assert_allclose(grad, sc.gammasgn(x) * sc.gamma(x) * sc.psi(x), rtol=1e-13)


def test_autograds_special_functions_are_all_here_with_its_numbers() -> None:
    autograd = pytest.importorskip("autograd")
    asp = pytest.importorskip("autograd.scipy.special")
    theirs = {n for n in dir(asp) if isinstance(getattr(asp, n), autograd.extend.primitive.__class__)}
    functions = {n for n in dir(asp) if not n.startswith("_") and callable(getattr(asp, n))}
    helpers = {"defjvp", "defvjp", "primitive", "repeat_to_match_shape", "unbroadcast_f"}
    helpers |= {n for n in functions if n.startswith(("make_", "fwd_"))}
    assert not functions - helpers - set(special.__all__) - set(theirs - functions)
    x = np.array([0.4, 1.3, 2.5])
    calls = {
        "beta": lambda m, x: m.beta(x, 2.0),
        "rgamma": lambda m, x: m.rgamma(x),
        "jn": lambda m, x: m.jn(2, x),
        "yn": lambda m, x: m.yn(2, x),
        "iv": lambda m, x: m.iv(1.5, x),
        "ive": lambda m, x: m.ive(1, x),
        "y1": lambda m, x: m.y1(x),
    }
    for name, call in calls.items():
        ours = ng.grad(lambda x, call=call: ng.sum(call(special, x)))(x)
        expected = autograd.grad(lambda x, call=call: autograd.numpy.sum(call(asp, x)))(x)
        np.testing.assert_allclose(ours, expected, rtol=1e-12, err_msg=name)


def test_np_i0_differentiates_through_scipy() -> None:
    x = np.array([-2.0, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(ng.grad(lambda x: np.sum(np.i0(x)))(x), sc.i1(x), rtol=1e-14)
    check_grads(np.i0, x, order=2)


def test_a_scipy_ufunc_without_a_rule_names_itself() -> None:
    with pytest.raises(NoGradientError, match=r"^scipy\.special\.kv has no gradient rule"):
        ng.grad(lambda x: sc.kv(1.0, x))(1.0)
    with pytest.raises(NoGradientError, match=r"scipy\.special\.gammaln with keyword arguments \['out'\]"):
        ng.grad(lambda x: sc.gammaln(x, out=np.empty(2)))(np.ones(2))
    with pytest.raises(NoGradientError, match=r"^np\.add\.reduce"):
        ng.grad(lambda x: np.add.reduce(x))(np.ones(2))


# -- the rules at their edges ----------------------------------------------------------------------


def test_polygamma_rules_climb_the_orders() -> None:
    d1 = ng.grad(special.digamma)
    d2 = ng.grad(d1)
    d3 = ng.grad(lambda x: special.polygamma(2, x))
    for x in (0.7, 2.0):
        assert d1(x) == pytest.approx(sc.polygamma(1, x), rel=1e-14)
        assert d2(x) == pytest.approx(sc.polygamma(2, x), rel=1e-14)
        assert d3(x) == pytest.approx(sc.polygamma(3, x), rel=1e-14)
    orders = np.array([[0], [1], [3]])
    x = np.array([0.5, 1.5])
    _close(special.polygamma(orders, x), sc.polygamma(orders, x))
    check_grads(lambda x: special.polygamma(orders, x), x, order=2)
    assert special.polygamma(1, np.float32(2.0)).dtype == np.float32  # scipy's is float64


def test_polygamma_refuses_orders_that_are_not_whole() -> None:
    for n in (-1, 0.5, np.array([1, -2])):
        with pytest.raises(ArgumentError, match="n must be integers >= 0"):
            special.polygamma(n, 1.0)


def test_gamma_and_its_relatives_off_the_positive_axis() -> None:
    x = np.array([-2.5, -1.3, -0.4, 0.3, 4.0])
    check_grads(special.gamma, x, order=2)
    check_grads(special.gammaln, x, order=2)
    np.testing.assert_allclose(ng.grad(lambda x: ng.sum(special.gamma(x)))(x), sc.gamma(x) * sc.psi(x), rtol=1e-13)


def test_i1_at_zero_to_the_third_order() -> None:
    # i1(x) = x/2 + x**3/16 + ...: i1'(0) = 1/2, i1''(0) = 0, i1'''(0) = 3/8.
    d1 = ng.grad(special.i1)
    assert d1(0.0) == 0.5
    assert ng.grad(d1)(0.0) == 0.0
    assert ng.grad(ng.grad(d1))(0.0) == pytest.approx(0.375, rel=1e-15)
    # Near 0, the Taylor polynomial and the quotient meet without a seam.
    for x in (1e-300, 1e-8, 0.0999999, 0.1, 0.3):
        assert d1(x) == pytest.approx(sc.i0(x) - sc.i1(x) / x, rel=1e-14)
        assert ng.grad(special.i1e)(x) == pytest.approx(sc.i0e(x) - sc.i1e(x) / x - sc.i1e(x), rel=1e-13)
    assert ng.grad(special.i1)(np.float32(1e-40)) == np.float32(0.5)  # subnormal float32: no 0/0 rounding


def test_log_ndtr_gradient_is_accurate_far_in_the_lower_tail() -> None:
    # pdf / cdf = -x / (1 - 1/x**2 + 3/x**4 - ...) for large -x; exp(-x**2/2 - log_ndtr) has lost it.
    grad = ng.grad(special.log_ndtr)
    for x in (-40.0, -1e3, -1e8, -1e150):
        r = 1 / x**2
        mills = -x / (1 - r + 3 * r**2 - 15 * r**3 + 105 * r**4)  # the next term is 1e-13 at x = -40
        assert grad(x) == pytest.approx(mills, rel=1e-12 if x == -40.0 else 1e-15)
    assert grad(40.0) == 0.0  # pdf / cdf underflows far in the upper tail
    check_grads(special.log_ndtr, np.array([-30.0, -8.0, 0.0, 5.0]), order=2)


def test_log_ndtr_of_complex_values_is_holomorphic() -> None:
    z = np.array([-1.0 + 0.3j, 0.5 - 0.2j, 2.0 + 0.4j])
    check_grads(special.log_ndtr, z, order=2)
    check_grads(special.ndtr, z, order=2)
    check_grads(special.erfcx, z, order=2)


def test_xlogy_and_xlog1py_at_x_zero() -> None:
    for f, y, dx in (
        (special.xlogy, 0.0, -np.inf),
        (special.xlogy, 2.0, np.log(2.0)),
        (special.xlog1py, -1.0, -np.inf),
    ):
        with np.errstate(divide="ignore"):
            gx, gy = ng.grad(f, argnums=(0, 1))(0.0, y)
        assert (gx, gy) == (dx, 0.0)
    # The second derivative in y at x == 0 is 0 too (no 0/0 anywhere).
    assert ng.grad(ng.grad(special.xlogy, argnums=1), argnums=1)(0.0, 0.0) == 0.0
    check_grads(special.xlogy, np.array([0.0, 1.5]), np.array([0.5, 2.0]), order=2)


def test_entropies_at_the_edges_of_their_domains() -> None:
    with np.errstate(divide="ignore"):
        g = ng.grad(lambda x: ng.sum(special.entr(x)))(np.array([-1.0, 0.0, np.e]))
    np.testing.assert_array_equal(g, [0.0, np.inf, -2.0])
    x, y = np.array([0.0, 0.0, 1.0, -1.0, 2.0]), np.array([2.0, 0.0, -1.0, 1.0, 1.0])
    gx, gy = ng.grad(lambda x, y: ng.sum(special.rel_entr(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [-np.inf, -np.inf, 0.0, 0.0, np.log(2.0) + 1])
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.0, 0.0, -2.0])
    gx, gy = ng.grad(lambda x, y: ng.sum(special.kl_div(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [-np.inf, -np.inf, 0.0, 0.0, np.log(2.0)])
    np.testing.assert_array_equal(gy, [1.0, 1.0, 0.0, 0.0, -1.0])


# -- logsumexp, softmax and friends ---------------------------------------------------------------


@st.composite
def _weighted(draw: st.DrawFn) -> tuple[np.ndarray, Any, Any, bool]:
    """``(a, b, axis, keepdims)``: ``a`` with some ``-inf``, ``b`` with zeros and negatives."""
    shape = draw(shapes(min_dims=1))
    a = draw(float_arrays(shape, elements=st.one_of(floats(), st.just(-np.inf))))
    b = draw(st.one_of(st.none(), float_arrays(shape, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, -0.5]))))
    axis = draw(st.one_of(st.none(), axes(len(shape), single=True), st.just(tuple(range(len(shape))))))
    return a, b, axis, draw(st.booleans())


@EXAMPLES
@given(case=_weighted())
def test_logsumexp_values_are_scipys(case: tuple[np.ndarray, Any, Any, bool]) -> None:
    a, b, axis, keepdims = case
    with np.errstate(all="ignore"):
        expected = sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims)
        expected_signed = sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    _close(special.logsumexp(a, axis=axis, b=b, keepdims=keepdims), expected, rtol=0)
    got = special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    for g, e in zip(got, expected_signed, strict=True):
        _close(g, e, rtol=0)
    out, back = ng.vjp(lambda a: special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0], a)
    grad = back(np.ones(np.shape(out)))
    assert np.all(np.isfinite(grad)), "finite gradients, 0 where the weighted sum is 0"


@EXAMPLES
@given(data=st.data())
def test_logsumexp_gradients(data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.one_of(st.none(), axes(len(shape), single=True)))
    a = data.draw(float_arrays(shape))
    b = data.draw(float_arrays(shape, elements=floats(0.5, 2.0)))
    check_grads(lambda a, b: special.logsumexp(a, axis, b), a, b)
    # Signed: one entry dominates, so the sum keeps its sign near the point.
    b = b * np.where(np.arange(b.size).reshape(shape) % 2, -0.01, 1.0)
    check_grads(lambda a, b: special.logsumexp(a, axis, b, return_sign=True)[0], a, b)


def test_logsumexp_second_order_and_complex_values() -> None:
    a = np.array([[0.3, -1.0, 2.0], [1.0, 1.0, -0.5]])
    b = np.array([1.0, 0.5, 2.0])
    check_grads(lambda a, b: special.logsumexp(a, 1, b), a, b, order=2)
    z = a + 1j * np.array([[0.1, -0.2, 0.3], [0.0, 0.2, -0.1]])
    _close(special.logsumexp(z, axis=1), sc.logsumexp(z, axis=1))
    check_grads(lambda z: special.logsumexp(z, axis=1), z, order=2)
    res, sign = special.logsumexp(z, axis=1, return_sign=True)
    expected_res, expected_sign = sc.logsumexp(z, axis=1, return_sign=True)
    _close(res, expected_res)
    np.testing.assert_allclose(sign, expected_sign, rtol=1e-14)


def test_logsumexp_conventions_where_the_result_is_not_finite() -> None:
    a = np.array([[-np.inf, -np.inf], [0.0, np.inf], [np.inf, np.inf], [np.nan, 0.0], [np.inf, 5.0]])
    with np.errstate(invalid="ignore"):
        _close(special.logsumexp(a, axis=1), sc.logsumexp(a, axis=1), rtol=0)
    _, back = ng.vjp(lambda a: special.logsumexp(a, axis=1), a)
    # -inf: 0; +inf: shared by the +inf entries (the softmax's limit); NaN: NaN.
    (grad,) = back(np.ones(5))
    np.testing.assert_array_equal(grad, [[0, 0], [0, 1], [0.5, 0.5], [np.nan, np.nan], [1, 0]])
    # b == 0 ignores an entry, even an infinite one; its gradient in b is still exp(a - res).
    a2, b2 = np.array([np.inf, 0.0, 1.0]), np.array([0.0, 1.0, 1.0])
    assert special.logsumexp(a2, b=b2) == sc.logsumexp(a2, b=b2)
    ga = ng.grad(lambda a: special.logsumexp(a, b=b2))(np.array([3.0, 0.0, 1.0]))
    assert ga[0] == 0.0
    gb = ng.grad(lambda b: special.logsumexp(np.array([3.0, 0.0, 1.0]), b=b))(b2)
    np.testing.assert_allclose(gb, np.exp(np.array([3.0, 0.0, 1.0]) - np.logaddexp(0.0, 1.0)), rtol=1e-14)


def test_logsumexp_of_empty_and_zero_dimensional_values() -> None:
    assert special.logsumexp(np.zeros((0, 3)), axis=0).tolist() == sc.logsumexp(np.zeros((0, 3)), axis=0).tolist()
    assert special.logsumexp(2.0) == sc.logsumexp(2.0)
    assert ng.grad(special.logsumexp)(2.0) == 1.0


@EXAMPLES
@given(data=st.data())
def test_softmax_log_softmax_softplus_are_scipys(data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.one_of(st.none(), axes(len(shape), single=True)))
    x = data.draw(float_arrays(shape))
    for ours, theirs in ((special.softmax, sc.softmax), (special.log_softmax, sc.log_softmax)):
        _close(ours(x, axis), theirs(x, axis), rtol=1e-15)
        check_grads(lambda x, f=ours: f(x, axis), x)
    _close(special.softplus(x), np.logaddexp(0, x), rtol=0)
    check_grads(special.softplus, x)


@pytest.mark.skipif(not hasattr(sc, "softplus"), reason="scipy.special.softplus is new in scipy 1.15")
def test_scipys_own_softplus_takes_traced_values() -> None:
    x = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    _close(ng.vjp(sc.softplus, x)[0], sc.softplus(x), rtol=0)  # np.logaddexp(0, x), dispatched
    check_grads(sc.softplus, x, order=2)


def test_log_softmax_of_infinite_values_is_scipys() -> None:
    x = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    with np.errstate(invalid="ignore"):  # scipy's all -inf row is NaN (-inf - -inf)
        expected = sc.log_softmax(x, axis=1)
    _close(special.log_softmax(x, axis=1), expected, rtol=0)


def test_multigammaln() -> None:
    a = np.array([2.5, 7.0])
    _close(special.multigammaln(a, 3), sc.multigammaln(a, 3))
    check_grads(lambda a: special.multigammaln(a, 3), a, order=2)
    for bad in ((np.array([0.5]), 3), (2.0, 1.5)):
        with pytest.raises(ArgumentError, match="multigammaln"):
            special.multigammaln(*bad)


def test_the_scipy_names_are_there() -> None:
    assert special.psi is special.digamma
    for name in special.__all__:
        assert callable(getattr(special, name)), name


# -- scipy functions that cannot see traced values say so, and where to turn -------------------------


def test_a_scipy_function_that_converts_a_traced_value_names_itself() -> None:
    import scipy.stats

    import nodegrad.scipy.stats  # noqa: F401  (so the message can check nodegrad.scipy has the function)

    cases = [
        (lambda x: scipy.stats.norm.logpdf(x), "scipy.stats.norm.logpdf", "Use nodegrad.scipy.stats.norm.logpdf"),
        (lambda x: scipy.stats.norm(0.0, 2.0).cdf(x), "scipy.stats.norm.cdf", "Use nodegrad.scipy.stats.norm.cdf"),
        (lambda x: sc.polygamma(1, x), "scipy.special.polygamma", "Use nodegrad.scipy.special.polygamma"),
        (lambda x: sc.logsumexp(x), "scipy.special.logsumexp", "Use nodegrad.scipy.special.logsumexp"),
        (lambda x: scipy.stats.gumbel_r.logpdf(x), "scipy.stats.gumbel_r.logpdf", "There is no nodegrad.scipy.stats"),
    ]
    for call, name, advice in cases:
        with pytest.raises(ArenaError) as info:
            ng.grad(lambda x, call=call: ng.sum(call(x)))(np.ones(2))
        message = str(info.value)
        assert message.startswith(f"{name} (scipy."), message
        assert "cannot see traced values" in message and advice in message and "stop_gradient" in message


def test_a_conversion_in_user_code_keeps_the_plain_message() -> None:
    with pytest.raises(ArenaError, match=r"^a traced value \(node 0, .*Use a nodegrad op"):
        ng.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))


# -- gelu and nodegrad without scipy ---------------------------------------------------------------------


def test_exact_gelu_uses_scipys_erf() -> None:
    x = np.linspace(-4, 4, 9)
    np.testing.assert_array_equal(ng.gelu(x, approximate=False), 0.5 * x * (1 + sc.erf(x / np.sqrt(2.0))))


_WITHOUT_SCIPY = """
import sys
sys.modules["scipy"] = None  # import scipy (and scipy.special) now fails, as when it is not installed
import numpy as np
import nodegrad as ng
from nodegrad.errors import NoGradientError
from nodegrad.ops import special

assert not special.HAVE_SCIPY and special.__all__ == ["HAVE_SCIPY"]
assert ng.grad(lambda x: ng.sum(ng.tanh(x) ** 2))(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
assert ng.grad(lambda x: ng.gelu(x, approximate=False))(0.0) == 0.5  # math.erf, element by element
try:
    ng.grad(lambda x: np.sum(np.i0(x)))(np.ones(2))
except NoGradientError as exc:
    assert "nodegrad[scipy]" in str(exc), exc
else:
    raise AssertionError("np.i0 differentiated without scipy")
try:
    import nodegrad.scipy
except ImportError as exc:
    assert "pip install nodegrad[scipy]" in str(exc), exc
else:
    raise AssertionError("nodegrad.scipy imported without scipy")
print("ok")
"""


def test_nodegrad_imports_and_differentiates_without_scipy() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WITHOUT_SCIPY)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
