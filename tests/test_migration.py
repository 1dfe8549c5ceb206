"""docs/migration.md's mapping tables are true: each row has a test here that runs the
autograd (or JAX) snippet with the one change the row documents and compares the numbers,
with autograd itself where the row is about parity with it (autograd is in the test
extra), and otherwise with plain numpy/scipy values, closed forms and central differences.
A row without a test, or a test for a row that is gone, fails
:func:`test_every_row_of_the_mapping_tables_has_a_test`."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as onp
import pytest
import scipy.linalg
import scipy.optimize
import scipy.signal
import scipy.special
import scipy.stats

import nodegrad as ng
import nodegrad.numpy as np
import nodegrad.numpy.random as npr
from nodegrad.errors import DtypeError, NonFiniteError
from nodegrad.testing import check_grads

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402  (after the importorskip above)
import autograd.numpy.random as anpr  # noqa: E402

MIGRATION = Path(__file__).resolve().parent.parent / "docs" / "migration.md"
ROWS: dict[str, Callable[[], None]] = {}
X = onp.array([0.3, -0.7, 1.1])


def row(first_cell: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register a test as the one for the table row whose first cell is ``first_cell``."""

    def register(test: Callable[[], None]) -> Callable[[], None]:
        assert first_cell not in ROWS, first_cell
        ROWS[first_cell] = test
        return test

    return register


def table_rows() -> list[str]:
    """The first cell of every row of the three mapping tables (autograd, JAX, scipy)."""
    cells = []
    for section in ("## HIPS autograd", "## JAX", "## scipy, name by name"):
        text = MIGRATION.read_text().split(section, 1)[1].split("\n## ", 1)[0]
        for line in text.splitlines():
            if line.startswith("| ") and not line.startswith(("| autograd |", "| JAX |", "| module |")):
                cells.append(line.split(" | ")[0][2:])
    return cells


def test_every_row_of_the_mapping_tables_has_a_test() -> None:
    rows = table_rows()
    assert len(rows) == len(set(rows))
    assert sorted(set(rows) - set(ROWS)) == [], "rows without a test"
    assert sorted(set(ROWS) - set(rows)) == [], "tests for rows that are not in the tables"


def close(got: Any, expected: Any, rtol: float = 1e-12) -> None:
    onp.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-13)


# -- HIPS autograd ----------------------------------------------------------------------------------


def model(np_: Any, npr_: Any) -> Callable[[Any], Any]:
    """One snippet, written once against a numpy module and its random module."""
    a = npr_.RandomState(0).randn(3, 3)

    def f(x: Any) -> Any:
        m = a @ a.T + np_.diag(x**2 + 1.0)
        spectrum = np_.fft.fft(np_.sin(x))
        return np_.sum(np_.linalg.inv(m)) + np_.real(np_.sum(spectrum * np_.conj(spectrum))) + np_.linalg.slogdet(m)[1]

    return f


@row("`autograd.numpy`, `autograd.numpy.random`, `.linalg`, `.fft`")
def test_the_numpy_namespace() -> None:
    ours, theirs = model(np, npr), model(anp, anpr)
    close(ours(X), theirs(X))
    close(ng.grad(ours)(X), autograd.grad(theirs)(X))


def loss2(w: Any, x: Any) -> Any:
    return np.sum(np.tanh(w * x) ** 2)


def loss2_autograd(w: Any, x: Any) -> Any:
    return anp.sum(anp.tanh(w * x) ** 2)


@row("`grad(fun, argnum=0)`")
def test_grad() -> None:
    close(ng.grad(loss2, argnums=1)(X, X[::-1]), autograd.grad(loss2_autograd, argnum=1)(X, X[::-1]))
    both = ng.grad(loss2, argnums=(0, 1))(X, X[::-1])
    close(both[0], autograd.grad(loss2_autograd, argnum=0)(X, X[::-1]))


@row("`value_and_grad(fun, argnum=0)`")
def test_value_and_grad() -> None:
    ours, theirs = ng.value_and_grad(loss2)(X, 2.0), autograd.value_and_grad(loss2_autograd)(X, 2.0)
    close(ours[0], theirs[0])
    close(ours[1], theirs[1])


@row("`elementwise_grad(fun, argnum=0)`")
def test_elementwise_grad() -> None:
    close(ng.elementwise_grad(np.tanh)(X), autograd.elementwise_grad(anp.tanh)(X))
    close(ng.elementwise_grad(np.tanh)(X), 1.0 - onp.tanh(X) ** 2)


@row("`jacobian(fun, argnum=0)`")
def test_jacobian() -> None:
    close(ng.jacobian(lambda x: np.outer(x, x))(X), autograd.jacobian(lambda x: anp.outer(x, x))(X))
    close(ng.jacobian(lambda x: np.sin(x), mode="fwd")(X), onp.diag(onp.cos(X)))


@row("`hessian(fun, argnum=0)`")
def test_hessian() -> None:
    close(ng.hessian(lambda x: loss2(x, X))(X), autograd.hessian(lambda x: loss2_autograd(x, X))(X))


@row("`hessian_vector_product(fun)(x, v)`")
def test_hvp() -> None:
    v = onp.array([1.0, -2.0, 0.5])
    expected = autograd.hessian_vector_product(lambda x: loss2_autograd(x, X))(X, v)
    close(ng.hvp(lambda x: loss2(x, X), X, v), expected)


@row("`make_vjp(fun)(x)`")
def test_make_vjp() -> None:
    their_vjp, their_value = autograd.make_vjp(anp.sin)(X)  # autograd: (vjp, value)
    value, vjp_fun = ng.vjp(np.sin, X)  # nodegrad: (value, vjp), and a tuple of cotangents
    close(value, their_value)
    (ct,) = vjp_fun(onp.ones(3))
    close(ct, their_vjp(onp.ones(3)))


@row("`make_jvp(fun)(x)(v)`")
def test_make_jvp() -> None:
    v = onp.array([1.0, 0.0, 2.0])
    their_value, their_tangent = autograd.make_jvp(anp.sin)(X)(v)
    value, tangent = ng.jvp(np.sin, (X,), (v,))
    close(value, their_value)
    close(tangent, their_tangent)
    _, push = ng.linearize(np.sin, X)
    close(push(v), onp.cos(X) * v)


def define_softplus(np_: Any, ext: Any, with_vjp: bool = True) -> Any:
    @ext.primitive
    def softplus(x: Any) -> Any:
        return onp.logaddexp(0.0, x)  # plain numpy in the body: it is not traced

    if with_vjp:
        ext.defvjp(softplus, lambda ans, x: lambda g: g / (1.0 + np_.exp(-x)))
    else:
        ext.defjvp(softplus, lambda g, ans, x: g / (1.0 + np_.exp(-x)))
    return softplus


@row("`from autograd.extend import primitive, defvjp`")
def test_extend_defvjp() -> None:
    import autograd.extend

    from nodegrad import extend

    ours, theirs = define_softplus(np, extend), define_softplus(anp, autograd.extend)
    close(ng.grad(lambda x: np.sum(ours(x) ** 2))(X), autograd.grad(lambda x: anp.sum(theirs(x) ** 2))(X))
    close(ng.hessian(lambda x: np.sum(ours(x) ** 3))(X), autograd.hessian(lambda x: anp.sum(theirs(x) ** 3))(X))


@row("`defjvp(fun, jvp)`")
def test_extend_defjvp() -> None:
    import autograd.extend

    from nodegrad import extend

    ours, theirs = define_softplus(np, extend, False), define_softplus(anp, autograd.extend, False)
    v = onp.array([0.5, 1.0, -1.0])
    close(ng.jvp(ours, (X,), (v,))[1], autograd.make_jvp(theirs)(X)(v)[1])
    close(ng.grad(lambda x: np.sum(ours(x)))(X), scipy.special.expit(X))  # its VJP: the transposed JVP
    check_grads(ours, X, order=2)


@row("`checkpoint(fun)`")
def test_checkpoint() -> None:
    block = ng.checkpoint(lambda x: np.sum(np.tanh(np.tanh(x))))
    their_block = autograd.checkpoint(lambda x: anp.sum(anp.tanh(anp.tanh(x))))
    close(ng.grad(block)(X), autograd.grad(their_block)(X))


@row("`autograd.misc.flatten(value)`")
def test_flatten_sorts_keys_as_autograd_does() -> None:
    from autograd.misc import flatten as their_flatten

    from nodegrad.misc import flatten

    params = {"w": onp.array([1.0, 2.0]), "b": onp.array([3.0]), "a": 4.0}
    close(flatten(params)[0], their_flatten(params)[0])  # a, b, w
    assert list(ng.tree.ravel(params)[0]) == [1.0, 2.0, 3.0, 4.0]  # insertion order: w, b, a
    # A Hessian labelled by sorted names, as a survival-analysis port labels its standard errors
    flat, _ = flatten(params)
    hess = ng.hessian(lambda v: np.sum(np.arange(1.0, 5.0) * v**2))(flat)
    close(onp.diag(hess), [2.0, 4.0, 6.0, 8.0])  # a, b, w[0], w[1]: in sorted order, as labelled


@row("`autograd.misc.optimizers.sgd`, `.rmsprop`, `.adam`")
def test_optimizers() -> None:
    from autograd.misc import optimizers

    from nodegrad.optim import adam_loop, rmsprop_loop, sgd_loop

    target = {"w": onp.array([1.0, -2.0]), "b": 0.5}

    def grad_at(np_: Any, grad: Any) -> Any:
        return grad(lambda p, i: np_.sum((p["w"] - target["w"]) ** 2) + (p["b"] - target["b"]) ** 2)

    start = {"w": onp.zeros(2), "b": 0.0}
    for ours, theirs in ((sgd_loop, optimizers.sgd), (rmsprop_loop, optimizers.rmsprop), (adam_loop, optimizers.adam)):
        got = ours(grad_at(np, ng.grad), start, num_iters=30, step_size=0.05)
        expected = theirs(grad_at(anp, autograd.grad), start, num_iters=30, step_size=0.05)
        close(got["w"], expected["w"])
        close(got["b"], expected["b"])


@row("`autograd.misc.fixed_points.fixed_point(f, a, x0, distance, tol)`")
def test_fixed_point_as_autograds() -> None:
    from autograd.misc.fixed_points import fixed_point as their_fixed_point

    from nodegrad.misc import fixed_point

    def newton_sqrt_iter(a: Any) -> Any:
        return lambda x: 0.5 * (x + a / x)

    def distance(x: Any, y: Any) -> Any:
        return onp.abs(x - y)

    for a in (2.0, 9.0, 0.3):
        ours = ng.grad(lambda a: fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12))(a)
        theirs = autograd.grad(lambda a: their_fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12))(a)
        close(ours, theirs, rtol=1e-9)
        close(ours, 0.5 / onp.sqrt(a), rtol=1e-9)


@row("`scipy.optimize.minimize(value_and_grad(...), flat, jac=True)`")
def test_minimize_over_the_structure_as_scipy_over_the_flat_vector() -> None:
    from autograd.misc import flatten as their_flatten

    target = {"w": onp.array([1.0, -2.0, 0.5]), "b": 0.75}

    def loss(np_: Any) -> Callable[[Any], Any]:
        return lambda p: (
            np_.sum((p["w"] - target["w"]) ** 4 + (p["w"] - target["w"]) ** 2) + (p["b"] - target["b"]) ** 2
        )

    start = {"w": onp.zeros(3), "b": 0.0}
    flat, unflatten = their_flatten(start)
    by_hand = scipy.optimize.minimize(
        lambda v: autograd.value_and_grad(lambda v: loss(anp)(unflatten(v)))(v), flat, jac=True, method="BFGS"
    )
    fit = ng.optim.minimize(loss(np), start, method="BFGS")
    expected = unflatten(by_hand.x)
    close(fit.x["w"], expected["w"], rtol=1e-5)
    close(fit.x["b"], expected["b"], rtol=1e-5)
    assert fit.nit == by_hand.nit


@row("`jaxopt.implicit_diff.custom_root`, `custom_fixed_point`")
def test_implicit_differentiation_decorators() -> None:
    @ng.custom_root(lambda x, a: x**2 - a, solve="gmres")
    def sqrt_by_bisection(x0: Any, a: Any) -> Any:
        low, high = 0.0, max(1.0, float(a))
        for _ in range(200):
            mid = 0.5 * (low + high)
            low, high = (mid, high) if mid * mid < a else (low, mid)
        return 0.5 * (low + high)

    @ng.custom_fixed_point(lambda x, a: onp.cos(x) * a)
    def cos_fixed_point(x: Any, a: Any) -> Any:
        for _ in range(2000):
            x = onp.cos(x) * a
        return x

    close(ng.grad(lambda a: sqrt_by_bisection(1.0, a))(4.0), 0.25, rtol=1e-9)
    x = cos_fixed_point(0.0, 0.5)
    close(ng.grad(lambda a: cos_fixed_point(0.0, a))(0.5), onp.cos(x) / (1 + 0.5 * onp.sin(x)), rtol=1e-9)


@row("`autograd.test_util.check_grads(fun, modes, order)(x)`")
def test_check_grads_order() -> None:
    from autograd.test_util import check_grads as their_check_grads

    # A rule whose first derivative is right and whose second is not (its factor is cut
    # from the graph): autograd's default order (2) sees it; ours (1) needs order=2.
    from nodegrad.extend import defvjp, primitive

    cube = primitive(lambda x: x**3)
    defvjp(cube, lambda ans, x: lambda g: g * 3.0 * ng.stop_gradient(x) ** 2)
    check_grads(cube, X)  # order 1: right
    with pytest.raises(AssertionError):
        check_grads(cube, X, order=2)
    their_check_grads(anp.sin)(X)  # autograd's default: order 2, both modes
    check_grads(np.sin, X, order=2, modes=("rev", "fwd"))


@row("`grad(f)(x)` of an integer array `x`")
def test_integer_arguments() -> None:
    x = onp.arange(3)
    survival = lambda np_: lambda t: np_.exp(-t * 0.5)  # integer durations, as a survival model has
    theirs = autograd.elementwise_grad(survival(anp))(x)
    ours = ng.elementwise_grad(survival(np))(x)
    assert ours.dtype == theirs.dtype == onp.float64
    close(ours, theirs)
    for dtype in (onp.int32, onp.uint8, onp.bool_):  # autograd's gradient is float64 for each
        ours = ng.grad(lambda t: np.sum(t * 2.5))(x.astype(dtype))
        close(ours, autograd.grad(lambda t: anp.sum(t * 2.5))(x.astype(dtype)))
    cube = lambda np_: lambda t: np_.sum(t**3.0)
    for ag, ours_ in ((autograd.grad, ng.grad), (autograd.hessian, ng.hessian)):
        close(ours_(cube(np))(x), ag(cube(anp))(x))
    close(ng.jacobian(survival(np))(x), autograd.jacobian(survival(anp))(x))
    close(ng.value_and_grad(cube(np))(x)[1], autograd.value_and_grad(cube(anp))(x)[1])
    close(ng.vjp(survival(np), x)[1](onp.ones(3))[0], autograd.make_vjp(survival(anp))(x)[0](onp.ones(3)))
    close(ng.jvp(survival(np), (x,), (onp.ones(3),))[1], autograd.make_jvp(survival(anp))(x)(onp.ones(3))[1])
    close(ng.grad(lambda t: t * 2.5)(onp.array(3)), autograd.grad(lambda t: t * 2.5)(onp.array(3)))  # 0-d
    # An integer-valued f: autograd's gradient is integer (or refused), ours float64 all the same.
    assert autograd.elementwise_grad(lambda t: t * 2)(x).dtype.kind == "i"
    assert ng.elementwise_grad(lambda t: t * 2)(x).dtype == onp.float64
    for number in (3, onp.int64(3), True):  # an integer *number* is refused by both
        with pytest.raises(TypeError):
            autograd.grad(lambda t: t * 2.0)(number)
        with pytest.raises(DtypeError, match=r"3\.0 instead of 3"):
            ng.grad(lambda t: t * 2.0)(number)
    g = ng.grad(lambda p: np.sum(p["a"] ** 2) + p["b"])({"a": x, "b": 1.0})
    assert g["a"] is None and g["b"] == 1.0  # static inside a structure


@row("`np.int64(x)`, `np.int32(x)`, `np.bool_(x)` of a traced `x`")
def test_integer_casts_are_constants() -> None:
    casts = [lambda np_, t=t: getattr(np_, t) for t in ("int64", "int32", "intp", "int8", "bool_")]
    for cast in casts:
        theirs = autograd.elementwise_grad(lambda x, c=cast: c(anp)(x) * x)(X)
        ours = ng.elementwise_grad(lambda x, c=cast: c(np)(x) * x)(X)
        close(ours, theirs)  # the cast is a constant: d(c x)/dx = c
        ours = ng.grad(lambda x, c=cast: c(np)(x[0]) * 2.0 + x[1])(X)
        close(ours, autograd.grad(lambda x, c=cast: c(anp)(x[0]) * 2.0 + x[1])(X))
    close(ng.elementwise_grad(lambda x: onp.uint8(x) * x)(onp.abs(X)), onp.abs(X).astype(onp.uint8))  # plain numpy too
    for name in ("float64", "float32"):
        with pytest.raises(ValueError, match="sequence"):  # autograd refuses a float cast of a box
            autograd.grad(lambda x, n=name: getattr(anp, n)(x) * 2.0)(1.5)
        with pytest.raises(ng.errors.ArenaError, match=rf"x\.astype\(np\.{name}\)"):
            ng.grad(lambda x, n=name: getattr(np, n)(x) * 2.0)(1.5)
    close(ng.grad(lambda x: x.astype(np.float32) * 2.0)(onp.array(1.5)), 2.0)


@row("`from autograd.builtins import tuple, list, dict, isinstance, type`")
def test_builtins() -> None:
    from autograd.builtins import isinstance as ag_isinstance
    from autograd.builtins import tuple as ag_tuple
    from autograd.builtins import type as ag_type

    from nodegrad.builtins import isinstance as ng_isinstance
    from nodegrad.builtins import tuple as ng_tuple
    from nodegrad.builtins import type as ng_type

    def f(tuple_: Any, isinstance_: Any, type_: Any, np_: Any) -> Any:
        def loss(x: Any) -> Any:
            pair = tuple_((x, np_.sin(x)))
            assert isinstance_(pair, tuple) and isinstance_(x, onp.ndarray) and type_(x) is onp.ndarray
            return np_.sum(pair[0] * pair[1])

        return loss

    theirs = autograd.grad(f(ag_tuple, ag_isinstance, ag_type, anp))(X)
    close(ng.grad(f(ng_tuple, ng_isinstance, ng_type, np))(X), theirs)
    assert ng.grad(lambda x: x * 2.0 if ng_isinstance(x, float) else None)(1.0) == 2.0


@row("`autograd.scipy.special`, `autograd.scipy.stats`")
def test_scipy_special_and_stats() -> None:
    import autograd.scipy.special as asp
    import autograd.scipy.stats.norm as anorm

    import nodegrad.scipy.special as special
    import nodegrad.scipy.stats.norm as norm

    def f(sp: Any, nm: Any, np_: Any, x: Any) -> Any:
        return np_.sum(sp.gammaln(x**2 + 1.0) + nm.logpdf(x, 0.5, 2.0) + sp.logsumexp(x))

    close(f(special, norm, np, X), f(asp, anorm, anp, X))
    close(ng.grad(lambda x: f(special, norm, np, x))(X), autograd.grad(lambda x: f(asp, anorm, anp, x))(X))
    close(ng.grad(lambda x: np.sum(scipy.special.gammaln(x + 2.0)))(X), scipy.special.digamma(X + 2.0))


@row("`autograd.scipy.linalg`")
def test_scipy_linalg() -> None:
    import autograd.scipy.linalg as alg

    import nodegrad.scipy.linalg as lg

    a = onp.array([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [-0.3, 0.2, 1.0]])

    def f(mod: Any, np_: Any, m: Any) -> Any:
        return np_.sum(mod.solve_triangular(m, X, lower=True) ** 2) + np_.sum(mod.sqrtm(m @ m.T))

    close(ng.grad(lambda m: f(lg, np, m))(a), autograd.grad(lambda m: np_real(f(alg, anp, m)))(a), rtol=1e-9)
    check_grads(lambda m: f(lg, np, m), a, order=2)
    ab = onp.array([[0.0, 0.5, -0.2, 0.1], [3.0, -2.5, 2.0, 2.2], [0.3, 0.4, -0.6, 0.0]])  # (l, u) = (1, 1)
    rhs = onp.array([1.0, -2.0, 0.5, 3.0])
    for k in (0, 1):  # autograd's gradient in ab is right for a vector b (for columns, its shape is not ab's)
        ours = ng.grad(lambda ab, b: np.sum(np.sin(lg.solve_banded((1, 1), ab, b))), argnums=k)(ab, rhs)
        theirs = autograd.grad(lambda ab, b: anp.sum(anp.sin(alg.solve_banded((1, 1), ab, b))), k)(ab, rhs)
        close(ours, theirs)


def np_real(x: Any) -> Any:
    return anp.real(x)


@row("`autograd.scipy.integrate.odeint`")
def test_odeint() -> None:
    from nodegrad.scipy.integrate import odeint

    t = onp.array([0.0, 0.5, 1.0])

    def final(y0: Any, k: Any) -> Any:
        return odeint(lambda y, t, k: -k * y, y0, t, args=(k,))[-1, 0]

    y0, k = onp.array([2.0]), 0.7
    assert final(y0, k) == pytest.approx(2.0 * onp.exp(-0.7), rel=1e-6)
    d_y0, d_k = ng.grad(final, argnums=(0, 1))(y0, k)
    close(d_y0, [onp.exp(-0.7)], rtol=1e-5)
    assert d_k == pytest.approx(-2.0 * onp.exp(-0.7), rel=1e-5)


@row("`autograd.scipy.signal.convolve(A, B, axes=axes, dot_axes=dot_axes, mode=mode)`")
def test_signal_convolve() -> None:
    import autograd.scipy.signal as asig

    import nodegrad.scipy.signal as signal

    a, b = onp.arange(1.0, 6.0), onp.array([0.5, -1.0, 2.0])
    for mode in ("full", "valid", "same"):
        close(signal.convolve(a, b, mode), scipy.signal.convolve(a, b, mode))
        ours = ng.grad(lambda b, m=mode: np.sum(signal.convolve(a, b, m) ** 2))(b)
        theirs = autograd.grad(lambda b, m=mode: anp.sum(asig.convolve(a, b, mode=m) ** 2))(b)
        close(ours, theirs)
    # autograd's convolutional net: images (N, C, H, W), filters (C, K, h, w)
    rng = onp.random.default_rng(0)
    images, filters = rng.normal(size=(4, 2, 6, 5)), rng.normal(size=(2, 3, 3, 2))
    layer = {"axes": ([2, 3], [2, 3]), "dot_axes": ([1], [0]), "mode": "valid"}
    close(signal.convolve(images, filters, **layer), asig.convolve(images, filters, **layer))
    ours = ng.grad(lambda w: np.sum(np.tanh(signal.convolve(images, w, **layer))))(filters)
    theirs = autograd.grad(lambda w: anp.sum(anp.tanh(asig.convolve(images, w, **layer))))(filters)
    close(ours, theirs)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dot_axis'"):
        signal.convolve(images, filters, dot_axis=([1], [0]))


@row("`autograd.scipy.stats.multivariate_normal.logpdf`")
def test_multivariate_normal_errors() -> None:
    import autograd.scipy.stats.multivariate_normal as amvn

    import nodegrad.scipy.stats.multivariate_normal as mvn

    singular, indefinite = onp.array([[1.0, 1.0], [1.0, 1.0]]), onp.array([[1.0, 2.0], [2.0, 1.0]])
    for module in (amvn, mvn):
        with pytest.raises(onp.linalg.LinAlgError):
            module.logpdf(onp.zeros(2), onp.zeros(2), singular)
        with pytest.raises(ValueError, match="positive semidefinite"):
            module.logpdf(onp.zeros(2), onp.zeros(2), indefinite)
    cov = onp.array([[2.0, 0.3], [0.3, 1.0]])
    close(mvn.logpdf(X[:2], onp.zeros(2), cov), amvn.logpdf(X[:2], onp.zeros(2), cov))
    close(mvn.entropy(onp.zeros(2), cov), amvn.entropy(onp.zeros(2), cov))
    root = onp.array([[1.0, 0.0], [0.4, 0.8]])  # along symmetric directions (cov = r r^T), both agree
    ours = ng.grad(lambda r: mvn.entropy(onp.zeros(2), r @ r.T))(root)
    close(ours, autograd.grad(lambda r: amvn.entropy(onp.zeros(2), anp.dot(r, r.T)))(root))


# -- JAX -----------------------------------------------------------------------------------------------
# JAX is not installed here: the references are closed forms, numpy and central differences.


@row("`jax.numpy`")
def test_at_instead_of_dot_at() -> None:
    def f(x: Any) -> Any:  # jnp: x.at[1].set(x[0] ** 2)
        return np.sum(ng.at(x)[1].set(x[0] ** 2) * onp.array([1.0, 2.0, 3.0]))

    close(f(X), X[0] + 2 * X[0] ** 2 + 3 * X[2])
    close(ng.grad(f)(X), [1.0 + 4.0 * X[0], 0.0, 3.0])


@row("`jax.grad`, `jax.value_and_grad`")
def test_jax_grad_and_aux() -> None:
    (value, aux), g = ng.value_and_grad(lambda p: (np.sum(p["w"] ** 2), "aux"), has_aux=True)({"w": X})
    assert aux == "aux" and value == pytest.approx(onp.sum(X**2))
    close(g["w"], 2 * X)


@row("`jax.vjp`, `jax.jvp`, `jax.linearize`")
def test_jax_vjp_jvp_linearize() -> None:
    v = onp.array([1.0, 2.0, 3.0])
    _, back = ng.vjp(np.exp, X)
    close(back(v)[0], onp.exp(X) * v)
    close(ng.jvp(np.exp, (X,), (v,))[1], onp.exp(X) * v)
    close(ng.linearize(np.exp, X)[1](v), onp.exp(X) * v)


@row("`jax.jacrev`, `jax.jacfwd`, `jax.jacobian`, `jax.hessian`")
def test_jax_jacobians() -> None:
    def f(p: Any) -> Any:
        return {"y": p["a"] * p["b"]}

    p = {"a": X, "b": X[::-1].copy()}
    for jac in (ng.jacrev(f)(p), ng.jacfwd(f)(p), ng.jacobian(f)(p)):
        close(jac["y"]["a"], onp.diag(p["b"]))
        close(jac["y"]["b"], onp.diag(p["a"]))
    close(ng.hessian(lambda x: np.sum(x**3))(X), onp.diag(6 * X))


@row("`jax.custom_vjp`")
def test_jax_custom_vjp() -> None:
    @ng.custom_vjp
    def clip_gradient(x: Any) -> Any:
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (np.clip(g, -1.0, 1.0),))
    close(ng.grad(lambda x: np.sum(clip_gradient(x) * onp.array([5.0, 0.5, -3.0])))(X), [1.0, 0.5, -1.0])


@row("`jax.checkpoint` (`jax.remat`)")
def test_jax_checkpoint() -> None:
    f = ng.checkpoint(lambda x: np.sin(np.sin(x)))
    close(ng.elementwise_grad(f)(X), onp.cos(onp.sin(X)) * onp.cos(X))


@row("`jax.lax.stop_gradient`")
def test_jax_stop_gradient() -> None:
    close(ng.grad(lambda x: np.sum(x * ng.stop_gradient(x)))(X), X)


@row("`jax.flatten_util.ravel_pytree`")
def test_ravel_pytree_order() -> None:
    from nodegrad.misc import flatten

    params = {"w": onp.array([1.0, 2.0]), "b": 3.0}
    flat, unravel = ng.tree.ravel(params)
    close(flat, [1.0, 2.0, 3.0])  # insertion order
    close(flatten(params)[0], [3.0, 1.0, 2.0])  # JAX's (and autograd's) sorted order
    assert unravel(flat * 2)["b"] == 6.0


@row("`jax.tree_util.tree_map`")
def test_tree_map() -> None:
    out = ng.tree.tree_map(lambda a: a * 2, {"w": X, "layers": [1.0, (2.0,)]})
    close(out["w"], 2 * X)
    assert out["layers"] == [2.0, (4.0,)]


@row("`jax.debug_nans` config")
def test_debug_nans() -> None:
    with ng.debug_nans(), pytest.raises(NonFiniteError, match=r"log .*test_migration.py"):
        ng.grad(lambda x: np.sum(np.log(x)))(onp.array([-1.0, 1.0]))


@row("`jax.vmap`")
def test_vmap() -> None:
    # jax.vmap(jnp.dot, in_axes=(0, None))(xs, w) and a dict prefix of in_axes, ported.
    xs, w = onp.arange(6.0).reshape(3, 2), onp.array([0.5, -1.0])
    close(ng.vmap(np.dot, in_axes=(0, None))(xs, w), xs @ w)
    params = {"b": onp.array([1.0, 2.0, 3.0]), "a": onp.array([2.0, 4.0])}
    out = ng.vmap(lambda p: p["a"] * p["b"], in_axes=({"b": 0, "a": None},))(params)
    close(out, onp.outer(params["b"], params["a"]))


@row("`jax.jit`")
def test_jit() -> None:
    # jax.jit(f, static_argnums=1)(x, 3), ported: the same values, recorded once per signature.
    def f(x: Any, n: int) -> Any:
        return np.sum(np.sin(x) ** n)

    fast = ng.replay(f, static_argnums=1)
    x = onp.linspace(0.0, 1.0, 4)
    assert fast(x, 3) == f(x, 3) and fast(x + 1.0, 3) == f(x + 1.0, 3)
    assert len(fast.traces) == 1


@row("`jax.pmap`")
def test_no_pmap() -> None:
    assert not hasattr(ng, "pmap")


@row("`jax.scipy.special`, `jax.scipy.stats`")
def test_scipy_values_outside_the_supports() -> None:
    import nodegrad.scipy.stats.gamma as gamma_dist

    x = onp.array([-1.0, 0.0, 2.0])
    close(gamma_dist.logpdf(x, 2.0), scipy.stats.gamma.logpdf(x, 2.0))  # -inf outside, as scipy
    assert gamma_dist.logpdf(x, 2.0).dtype == onp.float64


@row("`jax.scipy.linalg`")
def test_cholesky_reads_one_triangle() -> None:
    import nodegrad.scipy.linalg as lg

    a = onp.array([[4.0, 99.0], [1.0, 3.0]])  # the upper entry is never read (lower=True)
    close(lg.cholesky(a, lower=True), scipy.linalg.cholesky(a, lower=True))
    grad = ng.grad(lambda a: np.sum(lg.cholesky(a, lower=True) ** 2 * onp.array([[1.0, 0.0], [2.0, 3.0]])))(a)
    # along a symmetric direction, the derivative of scipy's function, by central differences
    e, h = onp.array([[0.3, -0.5], [-0.5, 1.0]]), 1e-6

    def plain(m: Any) -> Any:
        return onp.sum(scipy.linalg.cholesky(m, lower=True) ** 2 * onp.array([[1.0, 0.0], [2.0, 3.0]]))

    assert onp.sum(grad * e) == pytest.approx((plain(a + h * e) - plain(a - h * e)) / (2 * h), rel=1e-7)


@row("`jax.experimental.ode.odeint(func, y0, t, *args)`")
def test_odeint_args_keyword() -> None:
    from nodegrad.scipy.integrate import odeint

    t = onp.array([0.0, 1.0])
    ys = odeint(lambda y, t, a, b: a * y + b, onp.array([1.0]), t, args=(-1.0, 0.5))
    assert ys[-1, 0] == pytest.approx(0.5 + 0.5 * onp.exp(-1.0), rel=1e-6)


# -- scipy, name by name ---------------------------------------------------------------------------------


def listed(module: str) -> list[str]:
    """The names the scipy table's row for ``module`` lists: the first backticked name of
    each comma-separated entry (options and asides in parentheses dropped)."""
    line = next(ln for ln in MIGRATION.read_text().splitlines() if ln.startswith(f"| `{module}` |"))
    cell, depth, entries, current = line.split(" | ", 1)[1], 0, [], ""
    for char in cell:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    found = [re.search(r"`([A-Za-z_]\w*)`", entry) for entry in entries]
    return [m.group(1) for m in found if m is not None]


@row("`special`")
def test_every_listed_special_function_is_scipys() -> None:
    import nodegrad.scipy.special as special

    names = listed("special")
    assert {"beta", "jn", "logsumexp", "stdtr"} <= set(names)
    for name in [*names, "psi", "jv"]:  # and the other names the row gives in parentheses
        assert hasattr(special, name), name
        assert hasattr(scipy.special, name), name


@row("`stats`")
def test_every_listed_distribution_and_method_is_scipys() -> None:
    import nodegrad.scipy.stats as stats

    line = next(ln for ln in MIGRATION.read_text().splitlines() if ln.startswith("| `stats` |"))
    for group in line.split(" | ", 1)[1].split(";"):
        dists, _, methods = group.partition(":")
        for dist in re.findall(r"`(\w+)`", dists):
            for method in re.findall(r"`(\w+)`", methods.split("(")[0]):
                assert hasattr(getattr(stats, dist), method), f"{dist}.{method}"
                assert hasattr(getattr(scipy.stats, dist), method), f"{dist}.{method}"
    assert stats.norm.ppf(0.975) == pytest.approx(scipy.stats.norm.ppf(0.975), rel=1e-14)


@row("`linalg`")
def test_every_listed_linalg_function_is_scipys() -> None:
    import nodegrad.scipy.linalg as lg

    for name in listed("linalg"):
        assert hasattr(lg, name) and hasattr(scipy.linalg, name), name


@row("`signal`")
def test_the_listed_signal_function_is_scipys() -> None:
    import nodegrad.scipy.signal as signal

    assert listed("signal") == ["convolve"]
    a, b = onp.arange(6.0).reshape(2, 3), onp.ones((2, 2))
    close(signal.convolve(a, b), scipy.signal.convolve(a, b))


@row("`integrate`")
def test_the_listed_integrate_functions_are_scipys() -> None:
    import scipy.integrate

    import nodegrad.scipy.integrate as integrate

    for name in listed("integrate"):
        assert hasattr(integrate, name) and hasattr(scipy.integrate, name), name
