"""Lists and tuples holding traced values where numpy takes an array-like.

``import nodegrad.numpy as np`` lets ported code write ``np.sum([x * 2, x ** 2])``,
``np.dot([x, 1.0], [2.0, x])``, ``np.r_[x, 2 * x, 3.0]``: numpy does not hand such a call to
nodegrad (it inspects no list), so ``nodegrad.numpy``'s functions catch it
(:mod:`nodegrad.numpy.lists`), and :func:`~nodegrad.numpy_api.dispatch_function` makes each
list one traced array. The main test is generated from the catalogue
(:mod:`nodegrad.numpy_api.catalog`): every differentiable numpy function is called with lists
mixing traced values and constants, its value compared with numpy's on the plain lists and
its gradient with central differences, in both modes.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy
import pytest

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.errors import ArenaError, DtypeError, NoGradientError, ShapeError
from nodegrad.numpy_api import VALUE_FUNCTIONS, catalog
from nodegrad.testing import check_grads

Call = Callable[..., Any]

# Where the traced values enter: a 5-vector, a well-conditioned 3 x 3 matrix and a symmetric
# positive definite one, each mixing entries of x with constants (distinct values: no ties).
X = numpy.array([0.3, -1.1, 0.8, 1.7, -0.6])


def _lists(x: Any) -> tuple[list[Any], list[list[Any]], list[list[Any]]]:
    v = [x[0], 0.7, x[1] * x[2], -0.4, x[3]]
    m = [[2.0 + x[0], 0.5, x[1]], [0.3, 2.5 + x[2], 0.1], [x[3], -0.2, 3.0 + x[4]]]
    s = [[2.0 + x[0], x[1], 0.3], [x[1], 2.5 + x[2], 0.1], [0.3, 0.1, 3.0 + x[4]]]
    return v, m, s


_MASK = [True, False, True, True, False]

#: How each function is called, with ``fn`` the function and the lists of :func:`_lists`;
#: a function not listed is called as ``fn(v)``.
CALLS: dict[str, Call] = {
    "np.append": lambda fn, v, m, s: fn(v, m[0]),
    "np.apply_along_axis": lambda fn, v, m, s: fn(lambda r: r * r, 0, m),
    "np.array_split": lambda fn, v, m, s: fn(v, 2),
    "np.bincount": lambda fn, v, m, s: fn([0, 1, 1, 3, 2], weights=v),
    "np.broadcast_to": lambda fn, v, m, s: fn(v, (2, 5)),
    "np.choose": lambda fn, v, m, s: fn([0, 1, 0], [m[0], m[1]]),
    "np.clip": lambda fn, v, m, s: fn(v, -0.5, 1.0),
    "np.compress": lambda fn, v, m, s: fn(_MASK, v),
    "np.concat": lambda fn, v, m, s: fn([v, m[0]]),
    "np.concatenate": lambda fn, v, m, s: fn([v, m[0]]),
    "np.convolve": lambda fn, v, m, s: fn(v, m[0], "same"),
    "np.correlate": lambda fn, v, m, s: fn(v, m[0], "full"),
    "np.cross": lambda fn, v, m, s: fn(m[0], m[1]),
    "np.delete": lambda fn, v, m, s: fn(v, 1),
    "np.diagonal": lambda fn, v, m, s: fn(m),
    "np.dot": lambda fn, v, m, s: fn(m, v[:3]),
    "np.einsum": lambda fn, v, m, s: fn("ij,j->i", m, v[:3]),
    "np.expand_dims": lambda fn, v, m, s: fn(v, 0),
    "np.extract": lambda fn, v, m, s: fn(_MASK, v),
    "np.fft.fft2": lambda fn, v, m, s: fn(m),
    "np.fft.ifft2": lambda fn, v, m, s: fn(m),
    "np.fft.irfft2": lambda fn, v, m, s: fn(m),
    "np.fft.rfft2": lambda fn, v, m, s: fn(m),
    "np.fliplr": lambda fn, v, m, s: fn(m),
    "np.geomspace": lambda fn, v, m, s: fn([m[0][0], 2.0], [3.0, m[1][1]], 4),
    "np.linspace": lambda fn, v, m, s: fn([v[0], 1.0], [2.0, v[2]], 5),
    "np.logspace": lambda fn, v, m, s: fn([v[0], 1.0], [2.0, v[2]], 5),
    "np.inner": lambda fn, v, m, s: fn(v, v[::-1]),
    "np.kron": lambda fn, v, m, s: fn(m[0], v),
    "np.insert": lambda fn, v, m, s: fn(v, [1, 2], m[0][:2]),
    "np.interp": lambda fn, v, m, s: fn([v[0], 1.5], [0.0, 1.0, 2.0], m[0]),
    "np.linalg.cholesky": lambda fn, v, m, s: fn(s),
    "np.linalg.cond": lambda fn, v, m, s: fn(m),
    "np.linalg.cross": lambda fn, v, m, s: fn(m[0], m[1]),
    "np.linalg.det": lambda fn, v, m, s: fn(m),
    "np.linalg.diagonal": lambda fn, v, m, s: fn(m),
    "np.linalg.eig": lambda fn, v, m, s: fn(s)[0],
    "np.linalg.eigh": lambda fn, v, m, s: fn(s)[0],
    "np.linalg.eigvals": lambda fn, v, m, s: fn(m),
    "np.linalg.eigvalsh": lambda fn, v, m, s: fn(s),
    "np.linalg.inv": lambda fn, v, m, s: fn(m),
    "np.linalg.lstsq": lambda fn, v, m, s: fn(m, v[:3])[0],
    "np.linalg.matmul": lambda fn, v, m, s: fn(m, v[:3]),
    "np.linalg.matrix_norm": lambda fn, v, m, s: fn(m),
    "np.linalg.matrix_power": lambda fn, v, m, s: fn(m, 2),
    "np.linalg.matrix_transpose": lambda fn, v, m, s: fn(m),
    "np.linalg.multi_dot": lambda fn, v, m, s: fn([m, s, v[:3]]),
    "np.linalg.outer": lambda fn, v, m, s: fn(v, m[0]),
    "np.linalg.pinv": lambda fn, v, m, s: fn(m),
    "np.linalg.qr": lambda fn, v, m, s: fn(m)[1],
    "np.linalg.slogdet": lambda fn, v, m, s: fn(m)[1],
    "np.linalg.solve": lambda fn, v, m, s: fn(m, v[:3]),
    "np.linalg.svd": lambda fn, v, m, s: fn(m)[1],
    "np.linalg.svdvals": lambda fn, v, m, s: fn(m),
    "np.linalg.tensordot": lambda fn, v, m, s: fn(m, s),
    "np.linalg.tensorinv": lambda fn, v, m, s: fn(m, ind=1),
    "np.linalg.tensorsolve": lambda fn, v, m, s: fn(m, v[:3]),
    "np.linalg.trace": lambda fn, v, m, s: fn(m),
    "np.linalg.vecdot": lambda fn, v, m, s: fn(m[0], m[1]),
    "np.matrix_transpose": lambda fn, v, m, s: fn(m),
    "np.moveaxis": lambda fn, v, m, s: fn(m, 0, 1),
    "np.swapaxes": lambda fn, v, m, s: fn(m, 0, 1),
    "np.percentile": lambda fn, v, m, s: fn(v, 30.0),
    "np.nanpercentile": lambda fn, v, m, s: fn(v, 30.0),
    "np.quantile": lambda fn, v, m, s: fn(v, 0.3),
    "np.nanquantile": lambda fn, v, m, s: fn(v, 0.3),
    "np.outer": lambda fn, v, m, s: fn(v, m[0]),
    "np.pad": lambda fn, v, m, s: fn(v, 1),
    "np.partition": lambda fn, v, m, s: fn(v, 2),
    "np.piecewise": lambda fn, v, m, s: fn(v, [_MASK], [lambda t: t * 2.0, lambda t: t**2]),
    "np.polyadd": lambda fn, v, m, s: fn(v, m[0]),
    "np.polydiv": lambda fn, v, m, s: fn(v, [1.0, m[0][0]]),
    "np.polyfit": lambda fn, v, m, s: fn([0.0, 1.0, 2.0, 3.0, 4.0], v, 2),
    "np.polymul": lambda fn, v, m, s: fn(v, m[0]),
    "np.polysub": lambda fn, v, m, s: fn(v, m[0]),
    "np.polyval": lambda fn, v, m, s: fn(v, m[0]),
    "np.repeat": lambda fn, v, m, s: fn(v, 2),
    "np.reshape": lambda fn, v, m, s: fn(m, (9,)),
    "np.resize": lambda fn, v, m, s: fn(v, 7),
    "np.roll": lambda fn, v, m, s: fn(v, 2),
    "np.rot90": lambda fn, v, m, s: fn(m),
    "np.select": lambda fn, v, m, s: fn([[True, False, True], [False, True, False]], [m[0], m[1]], 0.5),
    "np.take": lambda fn, v, m, s: fn(v, [0, 3]),
    "np.tensordot": lambda fn, v, m, s: fn(m, s),
    "np.tile": lambda fn, v, m, s: fn(v, 2),
    "np.trace": lambda fn, v, m, s: fn(m),
    "np.tril": lambda fn, v, m, s: fn(m),
    "np.triu": lambda fn, v, m, s: fn(m),
    "np.vdot": lambda fn, v, m, s: fn(v, v[::-1]),
}

#: Functions whose numpy version takes only arrays in that place (it reads ``.shape`` or
#: ``.ndim`` of the argument itself): numpy refuses the plain list too.
ARRAYS_ONLY: dict[str, Call] = {
    "np.apply_over_axes": lambda fn, v, m, s: fn(numpy.sum, m, [0]),
    "np.astype": lambda fn, v, m, s: fn(v, numpy.complex128),
    "np.dsplit": lambda fn, v, m, s: fn(np.stack([m, s], axis=2) if type(m) is not list else [m], 2),
    "np.hsplit": lambda fn, v, m, s: fn(m, 3),
    "np.rollaxis": lambda fn, v, m, s: fn(m, 1),
    "np.split": lambda fn, v, m, s: fn(v, 5),
    "np.take_along_axis": lambda fn, v, m, s: fn(m, numpy.array([[0], [2], [1]]), 1),
    "np.unstack": lambda fn, v, m, s: fn(m),
    "np.vsplit": lambda fn, v, m, s: fn(m, 3),
}

_CALLABLES = catalog.public_callables()
#: Every differentiable function numpy dispatches (ufuncs are numpy's own objects and take
#: traced values, not lists of them; the constructors nodegrad.numpy replaces have their
#: own tests; a delegate is not dispatched: it calls its target with numpy's own object).
FUNCTIONS = [
    name
    for name in catalog.classify(np.REPLACED)["differentiable"]
    if catalog.is_dispatched(_CALLABLES[name])
    and not isinstance(_CALLABLES[name], numpy.ufunc)
    and name.removeprefix("np.") not in np.REPLACED
]


def _ours(name: str) -> Any:
    obj: Any = np
    for part in name.removeprefix("np.").split("."):
        obj = getattr(obj, part)
    return obj


def _leaves(out: Any) -> list[Any]:
    """The arrays of a result: itself, or those of a tuple or of a list of arrays (a list of
    numbers, as numpy's np.trim_zeros of a list returns, is one array)."""
    if isinstance(out, tuple) or (isinstance(out, list) and any(numpy.ndim(item) for item in out)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _scalar(out: Any) -> Any:
    """A scalar that depends on every output entry (real part of complex ones)."""
    total: Any = 0.0
    for leaf in _leaves(out):
        total = total + np.sum(np.sin(np.real(leaf)))
    return total


def test_every_function_is_called_and_every_call_names_one() -> None:
    assert set(CALLS) <= set(FUNCTIONS) and set(ARRAYS_ONLY) <= set(FUNCTIONS)
    assert not set(CALLS) & set(ARRAYS_ONLY)
    assert len(FUNCTIONS) > 150


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - set(ARRAYS_ONLY)))
def test_a_list_mixing_traced_values_and_constants(name: str) -> None:
    call = CALLS.get(name, lambda fn, v, m, s: fn(v))
    numpys, ours = _CALLABLES[name], _ours(name)
    expected = _leaves(call(numpys, *_lists(X)))
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        out = call(ours, *_lists(x))
        seen.setdefault("value", [numpy.asarray(ng.stop_gradient(leaf)) for leaf in _leaves(out)])
        return _scalar(out)

    gradient = ng.grad(f)(X)
    assert type(gradient) is numpy.ndarray and gradient.shape == X.shape
    assert len(seen["value"]) == len(expected)
    for got, want in zip(seen["value"], expected, strict=True):
        numpy.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    check_grads(lambda x: _scalar(call(ours, *_lists(x))), X)


@pytest.mark.parametrize("name", sorted(ARRAYS_ONLY))
def test_a_function_numpy_gives_arrays_only_refuses_the_plain_list_too(name: str) -> None:
    with pytest.raises((AttributeError, TypeError)):
        ARRAYS_ONLY[name](_CALLABLES[name], *_lists(X))
    # ... and takes the traced array a list becomes with np.array.
    call = ARRAYS_ONLY[name]
    check_grads(lambda x: _scalar(call(_ours(name), *(np.array(a) for a in _lists(x)))), X)


# -- functions whose results carry no gradient, and refused ones ---------------------------------

VALUE_CALLS: dict[Any, Call] = {
    numpy.isclose: lambda fn, v: fn(v, v[::-1]),
    numpy.allclose: lambda fn, v: fn(v, v[::-1]),
    numpy.array_equal: lambda fn, v: fn(v, v[::-1]),
    numpy.result_type: lambda fn, v: fn(numpy.asarray([1, 2]), 1.0),
}


# np.empty_like's values are whatever memory held: its shape and dtype are compared.
VALUE_FUNCTIONS_OF_LISTS = sorted(
    (f for f in VALUE_FUNCTIONS if not isinstance(f, numpy.ufunc)), key=lambda f: f.__name__
)


@pytest.mark.parametrize("func", VALUE_FUNCTIONS_OF_LISTS, ids=lambda f: f.__name__)
def test_a_value_function_of_a_list_holding_traced_values_is_numpys_on_the_values(func: Any) -> None:
    call = VALUE_CALLS.get(func, lambda fn, v: fn(v))
    ours = getattr(np, func.__name__)
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        seen["value"] = call(ours, _lists(x)[0])
        return np.sum(x)

    ng.grad(f)(X)
    expected = call(func, _lists(X)[0])
    assert type(seen["value"]) is type(expected)
    if func is numpy.empty_like:
        assert (seen["value"].shape, seen["value"].dtype) == (expected.shape, expected.dtype)
    else:
        numpy.testing.assert_array_equal(seen["value"], expected)


def test_a_refused_function_of_a_list_holding_traced_values_names_itself() -> None:
    with pytest.raises(NoGradientError, match=r"np\.unique"):
        ng.grad(lambda x: np.sum(np.unique([x, 1.0])))(0.5)


# -- the examples of ported code ------------------------------------------------------------------

EXAMPLES: dict[str, tuple[Call, float]] = {
    # name: (function of x at x = 1.5, its derivative there, worked by hand)
    "sum": (lambda x: np.sum([x * 2, x**2]), 2.0 + 3.0),
    "mean": (lambda x: np.mean([x * 2, x**2, 1.0]), (2.0 + 3.0) / 3),
    "prod": (lambda x: np.prod([x * 2, x**2, 3.0]), 3.0 * 6.0 * 1.5**2),
    "max": (lambda x: np.max([x * 2, x**2, -1.0]), 2.0),
    "dot": (lambda x: np.dot([x, 1.0], [2.0, x]), 3.0),
    "concatenate": (lambda x: np.sum(np.concatenate([[x, 1.0], [x**2]])), 1.0 + 3.0),
    "append": (lambda x: np.sum(np.append([x, 1.0], [x**2])), 1.0 + 3.0),
    "norm": (lambda x: np.linalg.norm([x, 2 * x]), 5.0**0.5),
    "r_": (lambda x: np.sum(np.r_[x, 2 * x, 3.0]), 3.0),
    "c_": (lambda x: np.sum(np.c_[[x, 2 * x], [3.0, x]]), 4.0),
    "std": (lambda x: np.std([x, -x]), 1.0),
    "var": (lambda x: np.var([x, -x, 0.0]), 4.0 * 1.5 / 3),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_ported_examples(name: str) -> None:
    f, derivative = EXAMPLES[name]
    gradient = ng.grad(f)(1.5)
    assert type(gradient) is float or type(gradient) is numpy.float64
    numpy.testing.assert_allclose(gradient, derivative, rtol=1e-12)
    check_grads(f, 1.5, order=2)


def _scaled(key: tuple[Any, ...], x: Any) -> tuple[Any, ...]:
    return tuple(x * k if isinstance(k, numpy.ndarray) else k for k in key)


def _traced_result(obj: Any, key: tuple[Any, ...]) -> Any:
    """``obj[key]`` with its arrays traced (times a traced 1.0), as a plain array."""
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        out = obj[_scaled(key, x)]
        seen["out"] = numpy.asarray(ng.stop_gradient(out))
        return np.sum(out)

    ng.grad(f)(1.0)
    return seen["out"]


def test_r_and_c_keep_numpys_layout_directives_and_dtype() -> None:
    a = numpy.array([[1.0, 2.0], [3.0, 4.0]])
    for key in [("0,2", [0.5, 1.5], a), ("1,2,0", [0.5, 1.5], a), (a, 0.5), (slice(0, 3), 2, a[0])]:
        for obj, numpys in ((np.r_, numpy.r_), (np.c_, numpy.c_)):
            try:
                expected = numpys[key]
            except ValueError:
                continue
            got = _traced_result(obj, key)
            assert got.dtype == expected.dtype
            numpy.testing.assert_allclose(got, expected)
            check_grads(lambda x, obj=obj, key=key: np.sum(obj[_scaled(key, x)] ** 2), 1.0)
    assert np.r_[1:4, 7].dtype == numpy.r_[1:4, 7].dtype  # no traced entry: numpy's own
    assert pickle.loads(pickle.dumps(np.r_)) is not None


def test_a_closed_over_traced_value_in_a_list_differentiates_to_second_order() -> None:
    # x is closed over by the inner function and sits in a list with the inner variable.
    def outer(y: Any) -> Any:
        return ng.grad(lambda x: np.sum([x * y, x**2, y**3]))(0.5) * y

    numpy.testing.assert_allclose(ng.grad(outer)(2.0), 2.0 * 2.0 + 1.0, rtol=1e-12)  # d/dy (y + 1) y
    check_grads(lambda x: np.linalg.norm([x, 2 * x, np.sin(x)]), 0.7, order=2)
    check_grads(lambda v: np.dot([v[0], 1.0], [2.0, v[1]]) * np.prod((v[1], v[0], 3.0)), numpy.array([0.4, -1.2]))


def test_plain_numpy_dispatching_a_call_converts_the_lists_it_hands_over() -> None:
    # numpy dispatches np.append(x, ...) on the traced x: the list beside it is converted too.
    f = lambda x: numpy.sum(numpy.append(x, [x[0] ** 2, 1.0]) ** 2)
    check_grads(f, numpy.array([0.5, -1.5]))


def test_a_ragged_or_non_numeric_list_is_a_clear_error_naming_the_function() -> None:
    with pytest.raises(ShapeError, match=r"np.sum.*ragged"):
        ng.grad(lambda x: np.sum([x, [x, 1.0]]))(0.5)
    with pytest.raises(DtypeError, match=r"np.sum.*numbers only"):
        ng.grad(lambda x: np.sum([x, "a"]))(0.5)
    with pytest.raises(ArenaError, match="cannot become a plain numpy array"):  # a list of plain numpy's own
        ng.grad(lambda x: numpy.sum([x, 1.0]))(0.5)


def test_a_ufunc_given_a_list_of_traced_values_says_to_make_it_one_array_first() -> None:
    expected = r"a ufunc reads a list holding traced values .*np\.exp\(np\.array\(\[x, 1\.0\]\)\)"
    with pytest.raises(ArenaError, match=expected):
        ng.grad(lambda x: np.sum(np.exp([x, 1.0])))(0.5)
    # what the message says to write
    assert ng.grad(lambda x: np.sum(np.exp(np.array([x, 1.0]))))(0.5) == pytest.approx(numpy.exp(0.5))
