"""numpy's whole public namespace, each callable classified once: :mod:`nodegrad.numpy_api.catalog`.

Every callable of ``numpy.__all__``, ``numpy.linalg.__all__`` and ``numpy.fft.__all__`` is
differentiable, plain by nature, or refused with an error naming it. The first test fails
when numpy gains a public callable that is in no category: that is its point, so that a
new numpy function is never met untried on traced values. It fails too when a name is in
two categories, or when a hand-kept entry no longer exists in numpy. A hand-kept entry that
the tables have since taken up (a ``not yet`` entry that gained a rule, say) counts as the
tables say, and passes.

The differentiable entries have their specs in ``tests/test_numpy_api.py`` (checked here
against its spec tables), the constructors ``nodegrad.numpy`` replaces are differentiated
here; the plain entries of the value tables are run by ``tests/test_numpy_api.py``; every
refused entry is called here on a traced value.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy
import pytest
from hypothesis import given

import nodegrad as ng
import nodegrad.numpy as np
from nodegrad.errors import ArenaError, DtypeError, NoGradientError
from nodegrad.numpy_api import FUNCTIONS, UFUNCS, VALUE_FUNCTIONS, VALUE_UFUNCS, catalog, dispatch_function
from nodegrad.numpy_api.ufuncs import dispatch_ufunc
from nodegrad.testing import check_grads
from tests.strategies import float_arrays, floats
from tests.test_numpy_api import FUNCTION_SPECS, UFUNC_SPECS, VALUE_CALLS

CLASSES = catalog.classify(np.REPLACED)
CALLABLES = catalog.public_callables()
REFUSED = CLASSES["not differentiable"] + CLASSES["not yet"]


def test_every_public_callable_is_classified_exactly_once() -> None:
    """Fails when numpy gains a public callable in no category (classify it in
    nodegrad/numpy_api/catalog.py), when a name is in two categories, or when a hand-kept
    entry names nothing in this numpy."""
    assert CLASSES["unclassified"] == [], "classify these in nodegrad/numpy_api/catalog.py"
    assert catalog.overlaps(np.REPLACED) == []
    assert catalog.unknown_entries() == []
    counted = [name for category in catalog.CATEGORIES for name in CLASSES[category]]
    assert sorted(counted) == sorted(CALLABLES)


def test_a_hand_kept_entry_the_tables_took_up_counts_as_they_say() -> None:
    for name in catalog.stale_entries(np.REPLACED):
        assert name in CLASSES["differentiable"] + CLASSES["plain"]
        assert name not in CLASSES["not yet"] + CLASSES["not differentiable"]


def test_every_hand_kept_entry_has_a_reason() -> None:
    reasons = catalog.NOT_DIFFERENTIABLE | catalog.NOT_YET
    assert [name for name, reason in reasons.items() if not reason.strip() or "\n" in reason] == []


# -- differentiable: a spec for every table entry, a gradient check for every constructor -------------


def test_every_differentiable_table_entry_has_a_spec() -> None:
    missing = [
        name
        for name in CLASSES["differentiable"]
        if name.removeprefix("np.") not in np.REPLACED
        and name not in catalog.DELEGATES
        and CALLABLES[name] not in (UFUNC_SPECS if isinstance(CALLABLES[name], numpy.ufunc) else FUNCTION_SPECS)
    ]
    assert missing == [], "add their specs to tests/test_numpy_api.py"


# Each constructor nodegrad.numpy replaces, building an array from traced list elements.
CONSTRUCTOR_CALLS: dict[str, Callable[[Any], Any]] = {
    "array": lambda x: np.array([[x[0], 1.0], [x[1] * 2.0, x[0] * x[1]]]),
    "asarray": lambda x: np.asarray([x[0], x[1] ** 2.0]),
    "asanyarray": lambda x: np.asanyarray((x[1], x[0])),
    "ascontiguousarray": lambda x: np.ascontiguousarray([x[0] * 3.0, x[1]]),
    "asfortranarray": lambda x: np.asfortranarray([[x[0]], [x[1]]]),
    "full": lambda x: np.full((2, 3), x[0] * x[1]),
    "full_like": lambda x: np.full_like(numpy.zeros(3), x[1]),
    "asarray_chkfinite": lambda x: np.asarray_chkfinite([x[0], x[1] * x[0]]),
    "require": lambda x: np.require((x[1], x[0] ** 2.0), np.float64, "CAO"),
    "r_": lambda x: np.r_[x[0], x * 2.0, 3.0, 0:2, [x[1], 1.0]],
    "c_": lambda x: np.c_[x, [x[1] ** 2.0, 1.0], numpy.ones((2, 2))],
}


def test_every_replaced_constructor_has_a_call() -> None:
    assert set(CONSTRUCTOR_CALLS) == set(np.REPLACED)


@pytest.mark.parametrize("name", sorted(CONSTRUCTOR_CALLS))
@given(x=float_arrays((2,), elements=floats(-2.0, 2.0)))
def test_replaced_constructor_differentiates(name: str, x: numpy.ndarray) -> None:
    build = CONSTRUCTOR_CALLS[name]
    check_grads(lambda x: np.sum(np.sin(build(x))), x, order=2)


# Each callable that passes traced arguments on to a dispatched one, and that call itself.
DELEGATE_CALLS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "np.row_stack": (
        lambda x: numpy.row_stack([x, x[::-1]]),
        lambda x: numpy.vstack([x, x[::-1]], casting="same_kind"),
    ),
    "np.fft.fftfreq": (
        lambda x: numpy.fft.fftfreq(5, x[0]),
        lambda x: numpy.array([0, 1, 2, -2, -1]) * (1 / (5 * x[0])),
    ),
    "np.fft.rfftfreq": (lambda x: numpy.fft.rfftfreq(4, x[1]), lambda x: numpy.arange(3) * (1 / (4 * x[1]))),
}


def test_every_delegate_has_its_target_s_category_and_a_call() -> None:
    assert set(DELEGATE_CALLS) == set(catalog.DELEGATES)
    for name, target in catalog.DELEGATES.items():
        assert not catalog.is_dispatched(CALLABLES[name]) and catalog.is_dispatched(CALLABLES[target])
        assert [name in names for names in CLASSES.values()] == [target in names for names in CLASSES.values()]


@pytest.mark.parametrize("name", sorted(DELEGATE_CALLS))
@given(x=float_arrays((2,), elements=floats(0.5, 2.0)))
def test_a_delegate_does_what_its_target_does_on_traced_values(name: str, x: numpy.ndarray) -> None:
    call, target = DELEGATE_CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.row_stack
        try:
            expected = ng.vjp(lambda x: numpy.sum(numpy.sin(target(x))), x)[0]
        except NoGradientError as exc:  # refused by the target: refused the same way
            with pytest.raises(NoGradientError, match=re.escape(str(exc).split(" [called at")[0])):
                ng.vjp(lambda x: numpy.sum(numpy.sin(call(x))), x)
            return
        got = ng.vjp(lambda x: numpy.sum(numpy.sin(call(x))), x)[0]
        numpy.testing.assert_allclose(got, expected, rtol=1e-12)
        check_grads(lambda x: numpy.sum(numpy.sin(call(x))), x)


# -- plain by nature ---------------------------------------------------------------------------


def test_the_plain_value_table_entries_are_run_by_the_numpy_api_tests() -> None:
    tabled = [CALLABLES[name] for name in CLASSES["plain"] if name != "np.random"]
    functions = [f for f in tabled if not isinstance(f, numpy.ufunc) and f in VALUE_FUNCTIONS]
    assert [f for f in functions if f not in VALUE_CALLS] == []
    assert {f for f in tabled if isinstance(f, numpy.ufunc) and f in VALUE_UFUNCS} == VALUE_UFUNCS


def test_plain_callables_are_value_entries_integer_ufuncs_or_not_dispatched() -> None:
    for name in CLASSES["plain"]:
        obj = CALLABLES[name]
        if isinstance(obj, numpy.ufunc):
            assert obj in VALUE_UFUNCS or all("f" not in loop.split("->")[0].lower() for loop in obj.types), name
        elif catalog.is_dispatched(obj):
            assert obj in VALUE_FUNCTIONS, name


# -- refused: an error naming the function -----------------------------------------------------------

X0 = numpy.array([[0.5, -1.0], [1.5, 0.25]])


def _dispatch(func: Any, x: Any) -> Any:
    """What numpy's protocols do with ``func`` called on ``x``."""
    if isinstance(func, numpy.ufunc):
        return dispatch_ufunc(func, "__call__", (x,) * func.nin, {})
    return dispatch_function(func, (x,), {})


@pytest.mark.parametrize("name", [n for n in REFUSED if catalog.is_dispatched(CALLABLES[n])])
def test_a_refused_dispatched_function_raises_naming_itself(name: str) -> None:
    func = CALLABLES[name]
    with ng.Arena() as arena:
        x = arena.param(X0)
        size = len(arena)
        # The refusal comes before numpy runs: no valid further arguments are needed.
        with pytest.raises((NoGradientError, DtypeError)) as info:  # DtypeError: complex results
            _dispatch(func, x)
        assert len(arena) == size
    message = str(info.value)
    assert re.match(rf"{re.escape(name)}\b", message), message
    assert func not in (UFUNCS if isinstance(func, numpy.ufunc) else FUNCTIONS)


# The refused callables numpy does not dispatch: each fails on a traced value.
NOT_DISPATCHED_CALLS: dict[str, Callable[[Any], Any]] = {
    "np.isfortran": lambda x: numpy.isfortran(x),
    "np.frombuffer": lambda x: numpy.frombuffer(x),
    "np.fromiter": lambda x: numpy.fromiter(x[0], float),
    "np.from_dlpack": lambda x: numpy.from_dlpack(x),
    "np.nested_iters": lambda x: numpy.nested_iters([x], [[0], [1]]),
    "np.asmatrix": lambda x: numpy.asmatrix(x),
    "np.bmat": lambda x: numpy.bmat([[x]]),
}


def test_every_refused_callable_that_numpy_does_not_dispatch_has_a_call() -> None:
    refused = {name for name in REFUSED if not catalog.is_dispatched(CALLABLES[name])}
    assert refused == set(NOT_DISPATCHED_CALLS)


@pytest.mark.parametrize("name", sorted(NOT_DISPATCHED_CALLS))
def test_a_refused_callable_that_numpy_does_not_dispatch_fails_on_traced_values(name: str) -> None:
    with ng.Arena() as arena, warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix
        x = arena.param(X0)
        # numpy converts the traced value (ArenaError) or reads what it does not have.
        with pytest.raises((ArenaError, NoGradientError, TypeError, ValueError, AttributeError)):
            NOT_DISPATCHED_CALLS[name](x)
