"""What a replayed function can read of a staged value, and that each reading is honest.

The rule: no value of a staged array reaches Python, numpy or the program except through
the tape or a guard. :data:`nodegrad.engine.face.FACE` decides, for every attribute of an
array and of a numpy number, whether it is recorded, answered from the signature, guarded,
or makes the signature run eagerly; the first tests check that every name of
``dir(np.ndarray)`` is decided and behaves as decided. The rest take the ways a program
reads values one family at a time (writes into arrays it made, pandas indexes, formatting,
numpy scalars' types, signs of zero, random draws, an array's memory), call each function
with values that change every thing it reads, and compare the replayed result with the
eager one, bit for bit (type, dtype, index), over several calls, under ``replay(f)``,
``replay(grad(f))`` and ``replay(vmap(f))``, with the values reached through arguments,
closures and globals.
"""

from __future__ import annotations

import io
import math
import operator
import os
import pickle
import random
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nodegrad as ng
from nodegrad.engine.face import EAGER, FACE, GUARDED, RECORDED, SIGNATURE, names_to_decide
from nodegrad.errors import RandomDrawError, ReplayWarning

# -- running a function eagerly and replayed ----------------------------------------------------


def outcome(fun: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """What ``fun(*args)`` gives, or the type of what it raises."""
    try:
        return ("value", fun(*args))
    except Exception as exc:
        return ("raised", type(exc))


def assert_identical(got: Any, expected: Any, what: str) -> None:
    """The same type and, for arrays, dtype, shape and bytes; pandas objects with their index."""
    assert type(got) is type(expected), f"{what}: a {type(got).__name__}, eagerly a {type(expected).__name__}"
    if isinstance(expected, tuple | list):
        assert len(got) == len(expected), what
        for k, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_identical(a, b, f"{what}[{k}]")
    elif isinstance(expected, dict):
        assert list(got) == list(expected), what
        for k in expected:
            assert_identical(got[k], expected[k], f"{what}[{k!r}]")
    elif isinstance(expected, pd.Series | pd.DataFrame):
        assert got.index.equals(expected.index) and got.index.names == expected.index.names, what
        assert_identical(got.to_numpy(), expected.to_numpy(), f"{what} values")
        assert (got.name if isinstance(got, pd.Series) else list(got.columns)) == (
            expected.name if isinstance(expected, pd.Series) else list(expected.columns)
        ), what
    elif isinstance(expected, np.ndarray | np.generic):
        assert got.dtype == expected.dtype, f"{what}: {got.dtype}, eagerly {expected.dtype}"
        assert got.shape == expected.shape, f"{what}: shape {got.shape}, eagerly {expected.shape}"
        assert got.tobytes() == expected.tobytes(), f"{what}: {got!r}, eagerly {expected!r}"
    elif isinstance(expected, float | complex):
        assert repr(got) == repr(expected) and math.copysign(1, abs(got) and 1) == math.copysign(1, abs(expected) and 1)
        assert np.array(got).tobytes() == np.array(expected).tobytes(), f"{what}: {got!r}, eagerly {expected!r}"
    else:
        assert got == expected, f"{what}: {got!r}, eagerly {expected!r}"


class Checked:
    """What :func:`check` saw: the replayed function, the ReplayWarnings it issued, and
    whether every eager call raised."""

    def __init__(self, fast: Any, said: list[str], raised: bool) -> None:
        self.fast = fast
        self.said = said
        self.raised = raised


def check(make: Callable[[], Callable[..., Any]], calls: list[tuple[Any, ...]], what: str) -> Checked:
    """``replay(make())`` gives what ``make()`` gives on each call of ``calls`` (two
    instances, so a function with state of its own keeps it apart)."""
    eager, fast = make(), ng.replay(make())
    raised = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReplayWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for k, args in enumerate(calls):
            expected = outcome(eager, args)
            got = outcome(fast, args)
            raised.append(expected[0] == "raised")
            assert got[0] == expected[0], f"{what}, call {k}: {got}, eagerly {expected}"
            if expected[0] == "raised":
                assert got[1] is expected[1], f"{what}, call {k}: raised {got[1]}, eagerly {expected[1]}"
            else:
                assert_identical(got[1], expected[1], f"{what}, call {k}")
    said = [str(w.message) for w in caught if issubclass(w.category, ReplayWarning)]
    return Checked(fast, said, all(raised))


def _summed(fun: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, *rest: np.sum(fun(x, *rest))


#: The transforms a replayed function is (a function of arrays returning an array).
TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "f": lambda fun: fun,
    "grad": lambda fun: ng.grad(_summed(fun)),
    "vmap": lambda fun: ng.vmap(fun, in_axes=0),
}


def _arrays(*values: list[float]) -> list[tuple[np.ndarray]]:
    return [(np.array(v),) for v in values]


def _batches(*values: list[float]) -> list[tuple[np.ndarray]]:
    return [(np.array([v, [2 * a for a in v]]),) for v in values]


def calls_for(transform: str, *values: list[float]) -> list[tuple[np.ndarray]]:
    return _batches(*values) if transform == "vmap" else _arrays(*values)


# -- the face: every attribute of an array is decided ------------------------------------------------


def test_every_attribute_of_an_array_and_of_a_numpy_number_is_decided() -> None:
    undecided = sorted(names_to_decide() - set(FACE))
    assert undecided == [], f"attributes of np.ndarray (or numpy numbers) no kind is decided for: {undecided}"
    assert set(FACE.values()) == {RECORDED, SIGNATURE, GUARDED, EAGER}


def test_an_attribute_nothing_decided_about_makes_the_signature_eager() -> None:
    class Unknown(np.ndarray):
        pass

    fast = ng.replay(lambda x: x * 2 if not hasattr(x, "surely_no_numpy_name") else x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        assert_identical(fast(np.ones(2)), np.ones(2) * 2, "an unknown name")


_X = [1.0, -2.5, 3.0, 0.5]


#: How each name is used, for the probes below (``x`` a float array of 4; the default:
#: the attribute read, or the method called with no arguments).
def _applied(fn: Callable[..., Any], *makers: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``x -> fn(maker(x) for each maker)``: one operator, its operands made from ``x``."""
    return lambda x: fn(*(make(x) for make in makers))


def _same(x: Any) -> Any:
    return x


def _copy(x: Any) -> Any:
    return x * 1.0


def _number(x: Any) -> Any:
    return 1.5


def _positive(x: Any) -> Any:
    return x > 0


def _small(x: Any) -> Any:
    return x < 1


def _integers(x: Any) -> Any:
    return x.astype(np.int64)


_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
_LOGICAL = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}
_SHIFTS = ("lshift", "rshift")

USE: dict[str, Callable[[Any], Any]] = {
    **{f"__{n}__": _applied(getattr(operator, n), _same, _number) for n in (*_ARITHMETIC, "lt", "le", "gt", "ge",
       "eq", "ne")},
    **{f"__r{n}__": _applied(getattr(operator, n), _number, _same) for n in _ARITHMETIC},
    **{f"__i{n}__": _applied(getattr(operator, f"i{n}"), _copy, _number) for n in _ARITHMETIC},
    **{f"__{n}__": _applied(fn, _positive, _small) for n, fn in _LOGICAL.items()},
    **{f"__r{n}__": _applied(fn, lambda x: True, _positive) for n, fn in _LOGICAL.items()},
    **{f"__i{n}__": _applied(getattr(operator, f"i{n}"), _positive, _small) for n in _LOGICAL},
    **{f"__{n}__": _applied(getattr(operator, n), _integers, lambda x: 1) for n in _SHIFTS},
    **{f"__r{n}__": _applied(getattr(operator, n), lambda x: 1, lambda x: _integers(x) % 3) for n in _SHIFTS},
    **{f"__i{n}__": _applied(getattr(operator, f"i{n}"), _integers, lambda x: 1) for n in _SHIFTS},
    "__matmul__": lambda x: x @ x, "__rmatmul__": lambda x: np.ones(4) @ x,
    "__imatmul__": lambda x: operator.imatmul(x.reshape(2, 2) * 1.0, np.eye(2)),
    "__neg__": operator.neg, "__pos__": operator.pos, "__abs__": abs, "__invert__": lambda x: ~(x > 0),
    "__getitem__": lambda x: x[1:3], "__setitem__": lambda x: operator.setitem(x * 1.0, 0, x[3]) or x,
    "__delitem__": lambda x: operator.delitem(x, 0), "__iter__": lambda x: list(x),
    "__contains__": lambda x: 3.0 in x, "__divmod__": lambda x: divmod(x, 1.5), "__rdivmod__": lambda x: divmod(7.0, x),
    "__copy__": lambda x: __import__("copy").copy(x), "__deepcopy__": lambda x: __import__("copy").deepcopy(x),
    "__array_ufunc__": lambda x: np.sin(x), "__array_function__": lambda x: np.concatenate([x, x]),
    "__len__": len, "__bool__": lambda x: bool(x[0] > 0), "__int__": lambda x: int(x[1]),
    "__index__": lambda x: operator.index(x.astype(np.int64)[1]), "__float__": lambda x: float(x[1]),
    "__complex__": lambda x: complex(x[1]), "__round__": lambda x: round(x[1]), "__trunc__": lambda x: math.trunc(x[1]),
    "__floor__": lambda x: math.floor(x[1]), "__ceil__": lambda x: math.ceil(x[1]),
    "__format__": lambda x: format(x[1], ".3f"), "__str__": str, "__repr__": repr, "__bytes__": bytes,
    "__hash__": lambda x: hash(x[1]), "__sizeof__": sys.getsizeof,
    "__array__": lambda x: x.__array__(), "__array_interface__": lambda x: x.__array_interface__["shape"],
    "__array_struct__": lambda x: x.__array_struct__ is not None,
    "__array_wrap__": lambda x: x.__array_wrap__(np.ones(4)),
    "__array_finalize__": lambda x: x.__array_finalize__(None),
    "__dlpack__": lambda x: x.__dlpack__() is not None, "__buffer__": lambda x: memoryview(x).tobytes(),
    "__dlpack_device__": lambda x: x.__dlpack_device__(), "__reduce__": lambda x: pickle.loads(pickle.dumps(x)),
    "__reduce_ex__": lambda x: x.__reduce_ex__(2)[0], "__getstate__": lambda x: x.__getstate__() is not None,
    "__setstate__": lambda x: (x * 1.0).__setstate__((1, (4,), np.dtype(float), False, bytes(32))),
    "__array_namespace__": lambda x: x.__array_namespace__().sum(x),
    "__array_priority__": lambda x: x.__array_priority__ >= 0,
    "base": lambda x: x.base is None, "data": lambda x: bytes(x.data), "ctypes": lambda x: x.ctypes.data > 0,
    "flags": lambda x: x.flags.c_contiguous, "flat": lambda x: x.flat[1],
    "setflags": lambda x: (x * 1.0).setflags(write=True), "tofile": lambda x: x.tofile(os.devnull),
    "dump": lambda x: x.dump(os.devnull), "dumps": lambda x: pickle.loads(x.dumps()),
    "mT": lambda x: x.reshape(2, 2).mT, "diagonal": lambda x: x.reshape(2, 2).diagonal(),
    "trace": lambda x: x.reshape(2, 2).trace(),
    "strides": lambda x: x.strides, "shape": lambda x: x.shape, "dtype": lambda x: x.dtype,
    "device": lambda x: x.device,
    "ndim": lambda x: x.ndim, "size": lambda x: x.size, "itemsize": lambda x: x.itemsize, "nbytes": lambda x: x.nbytes,
    "argpartition": lambda x: x.argpartition(1), "partition": lambda x: (x * 1.0).partition(1),
    "choose": lambda x: np.array([0, 1, 0, 1]).choose([x, -x]) if False else (x > 0).astype(np.int64).choose([x, -x]),
    "compress": lambda x: x.compress([True, False, True, True]), "fill": lambda x: (x * 1.0).fill(x[2]),
    "getfield": lambda x: x.getfield(np.float64), "setfield": lambda x: (x * 1.0).setfield(x[1], np.float64),
    "put": lambda x: (x * 1.0).put([0], x[1:2]), "repeat": lambda x: x.repeat(2), "reshape": lambda x: x.reshape(2, 2),
    "resize": lambda x: (x * 1.0).resize((2,), refcheck=False), "searchsorted": lambda x: np.sort(x).searchsorted(0.7),
    "sort": lambda x: (x * 1.0).sort(), "swapaxes": lambda x: x.reshape(2, 2).swapaxes(0, 1),
    "take": lambda x: x.take([2, 0]), "byteswap": lambda x: x.byteswap(), "astype": lambda x: x.astype(np.float32),
    "view": lambda x: x.view(np.int64), "dot": lambda x: x.dot(x), "to_device": lambda x: x.to_device("cpu"),
    "item": lambda x: x.item(1), "tolist": lambda x: x.tolist(), "tobytes": lambda x: x.tobytes(),
    "is_integer": lambda x: x[0].is_integer(), "as_integer_ratio": lambda x: x[1].as_integer_ratio(),
    "hex": lambda x: x[1].hex(), "bit_count": lambda x: x.astype(np.int64)[1].bit_count(),
    "numerator": lambda x: x.astype(np.int64)[0].numerator, "denominator": lambda x: x.astype(np.int64)[1].denominator,
    "__getformat__": lambda x: x[1].__getformat__("double"), "fromhex": lambda x: x[1].fromhex("0x1p1"),
    "__getnewargs__": lambda x: x[1].__getnewargs__(),
}  # fmt: skip

#: Python's machinery of the object: nothing of the value to read.
_MACHINERY = {
    "__class__", "__doc__", "__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class_getitem__",
    "__getattribute__", "__setattr__", "__delattr__", "__dir__",
}  # fmt: skip

#: Values for the probes' calls: each entry of each call differs from the last's (a
#: strided argument among them, so what the layout answers changes too).
_PROBE_CALLS = [
    (np.array([1.0, -2.5, 3.0, 0.5]),),
    (np.array([-2.0, 0.5, -1.0, 4.0]),),
    (np.array([3.5, 9.0, -1.5, 9.0, 0.25, 9.0, 2.0, 9.0])[::2],),
]


def _probe(name: str) -> Callable[[Any], Any]:
    use = USE.get(name)
    if use is not None:
        return use
    if callable(getattr(np.ndarray, name)):
        return lambda x: getattr(x, name)()
    return lambda x: getattr(x, name)


#: Names eager code cannot use on a 1-d float array either (both raise, as checked), or whose
#: reading is the same for every value of the probes.
_RAISE_EAGERLY = {"__delitem__", "__index__"}
_SAME_READING = {"denominator"}


@pytest.mark.parametrize("name", sorted(set(FACE) - _MACHINERY))
def test_each_attribute_behaves_as_its_kind_says(name: str) -> None:
    if name == "__buffer__" and sys.version_info < (3, 12):
        pytest.skip("memoryview() asks a Python object for a buffer from Python 3.12 on")
    kind = FACE[name]
    use = _probe(name)
    seen = check(lambda: use, _PROBE_CALLS, name)
    fast = seen.fast
    if kind == EAGER:
        assert seen.said and "runs eagerly" in seen.said[0], f"{name}: no ReplayWarning"
        assert fast.traces == [], name
        return
    assert seen.said == [], f"{name}: {seen.said}"
    if seen.raised:
        assert name in _RAISE_EAGERLY, f"{name}: its probe raises eagerly"
        return
    guards = sum(trace.guards for trace in fast.traces)
    if kind == GUARDED:
        assert guards > 0, f"{name} is read without a guard"
        assert len(fast.traces) > 1 or name in _SAME_READING, f"{name}: a new reading was not recorded again"
    else:
        assert len(fast.traces) == 1, f"{name}: recorded {len(fast.traces)} times"


def test_isinstance_sees_the_type_a_staged_value_stands_for() -> None:
    def fun(x: Any, s: Any) -> Any:
        kinds = [isinstance(x, np.ndarray), isinstance(s, float), isinstance(s, np.floating), isinstance(x[0], float)]
        return x * sum(2**k for k, yes in enumerate(kinds) if yes)

    seen = check(lambda: fun, [(np.ones(2), np.float64(k)) for k in range(3)], "isinstance")
    assert len(seen.fast.traces) == 1


# -- 6: writes into arrays made inside the function -----------------------------------------------------

_GLOBAL_BUFFER = np.zeros(3)


def _writer(kind: str) -> Callable[[], Callable[..., Any]]:
    """A function writing its argument into an array in place, ``kind`` saying how and into what."""

    def make() -> Callable[..., Any]:
        closure_buffer = np.zeros(3)
        writes: dict[str, Callable[[Any], Any]] = {
            "np.add.at": lambda x: (np.add.at(b := np.zeros(3), [0, 0, 1], x[:3]), b)[1],
            "np.maximum.at": lambda x: (np.maximum.at(b := np.zeros(3), [2, 2, 0], x[:3]), b)[1],
            "np.multiply.at": lambda x: (np.multiply.at(b := np.ones(3), [1, 1, 2], x[:3]), b)[1],
            "out=": lambda x: (np.multiply(x[:3], 2.0, out=(b := np.empty(3))), b)[1],
            "reduce out=": lambda x: (np.add.reduce(x.reshape(2, 2), axis=0, out=(b := np.empty(2))), b)[1],
            "np.copyto": lambda x: (np.copyto(b := np.zeros(3), x[:3]), b)[1],
            "x[...] =": lambda x: (operator.setitem(b := np.zeros(3), Ellipsis, x[:3]), b)[1],
            "x[i] = one value": lambda x: (operator.setitem(b := np.zeros(3), 1, x[2]), b)[1],
            "ndarray.fill": lambda x: ((b := np.zeros(3)).fill(x[1]), b)[1],
            "np.put": lambda x: (np.put(b := np.zeros(3), [0, 2], x[:2]), b)[1],
            "a view of it": lambda x: (np.add.at((b := np.zeros(4))[1:], [0, 0], x[:2]), b)[1],
            "sort in place": lambda x: ((b := x * 1.0).sort(), b)[1],
            "out given by position": lambda x: (np.add(x[:3], 1.0, b := np.zeros(3)), b)[1],
            "np.clip, out by position": lambda x: (np.clip(x[:3], 0.0, 2.0, b := np.zeros(3)), b)[1],
            "a view of it, by a computed index": lambda x: (
                operator.iadd((b := np.zeros(6))[np.argmax(x) :][:2], x[:2]),
                b,
            )[1],
            "itself, handed back by a recorded call": lambda x: (
                operator.iadd(np.atleast_1d(b := np.zeros(4), x)[0], x),
                b,
            )[1],
            "np.add.at into a copy": lambda x: (np.add.at(b := np.zeros_like(x), [0, 0, 1], x[:3]), b)[1],
            "np.add.at, a closure's buffer": lambda x: (
                np.add.at(closure_buffer, [0, 0, 1], x[:3]), closure_buffer * 1
            )[1],
            "np.add.at, a global buffer": lambda x: (
                _GLOBAL_BUFFER.fill(0.0), np.add.at(_GLOBAL_BUFFER, [0, 1, 1], x[:3]), _GLOBAL_BUFFER * 1
            )[2],
            "savetxt into a StringIO": lambda x: (np.savetxt(out := io.StringIO(), x, fmt="%.3f"), out.getvalue())[1],
        }  # fmt: skip
        return writes[kind]

    return make


WRITES = [
    "np.add.at", "np.maximum.at", "np.multiply.at", "out=", "reduce out=", "np.copyto", "x[...] =",
    "x[i] = one value", "ndarray.fill", "np.put", "a view of it", "sort in place", "out given by position",
    "np.clip, out by position", "a view of it, by a computed index",
    "itself, handed back by a recorded call", "np.add.at into a copy",
    "np.add.at, a closure's buffer", "np.add.at, a global buffer", "savetxt into a StringIO",
]  # fmt: skip


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("kind", WRITES)
def test_a_write_into_an_array_made_inside_never_piles_up(kind: str, transform: str) -> None:
    make = _writer(kind)
    if kind == "savetxt into a StringIO" and transform != "f":
        return  # a text, not numbers
    calls = calls_for(
        transform, [1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 2.0, 8.0], [3.0, 3.0, -2.0, 1.0], [1.0, 2.0, 3.0, 4.0]
    )
    check(lambda: TRANSFORMS[transform](make()), calls, f"{kind} under {transform}")


# -- 7: pandas indexes -------------------------------------------------------------------------------------


def _series(values: list[float], index: list[Any], name: str = "s", index_name: str | None = None) -> pd.Series:
    return pd.Series(values, index=pd.Index(index, name=index_name), name=name)


SERIES_CALLS = [
    (_series([1.0, 2.0, 3.0], [5, 6, 7]),),
    (_series([4.0, -1.0, 0.5], [7, 5, 6]),),
    (_series([2.0, 2.0, 9.0], [5, 6, 7], name="t", index_name="day"),),
    (_series([1.0, 2.0, 3.0], ["a", "b", "c"]),),
]

SERIES_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "s * 2": lambda s: s * 2,
    "s.loc[5]": lambda s: s.loc[5] if 5 in s.index else s.iloc[0],
    "np.sum(s)": np.sum,
    "s.index.name": lambda s: np.float64(len(str(s.index.name))),
    "s.to_numpy() * 2": lambda s: s.to_numpy() * 2,
}


@pytest.mark.parametrize("name", sorted(SERIES_FUNCTIONS))
def test_a_series_argument_replays_as_its_eager_call(name: str) -> None:
    fun = SERIES_FUNCTIONS[name]
    check(lambda: fun, SERIES_CALLS, name)
    check(lambda: ng.grad(lambda s: np.sum(fun(s) ** 2)) if name != "s.index.name" else fun, SERIES_CALLS, name)


def _frame(values: list[float], index: list[Any], index_name: str | None = None) -> pd.DataFrame:
    return pd.DataFrame({"a": values, "b": [2.0 * v for v in values]}, index=pd.Index(index, name=index_name))


FRAME_CALLS = [
    (_frame([1.0, 2.0, 3.0], [5, 6, 7]),),
    (_frame([4.0, -1.0, 0.5], [7, 5, 6]),),
    (_frame([2.0, 2.0, 9.0], [6, 7, 5], index_name="day"),),
    (_frame([1.0, 2.0, 3.0], [5, 6, 7]),),
]


def _loss_by_label(f: Any) -> Any:
    return np.sum(f.loc[[5, 6]]["a"] ** 2 * np.arange(1.0, 3.0)) + np.sum(f["b"][:1])


@pytest.mark.parametrize("how", ["grad", "value_and_grad", "the frame itself", "a column", "loc"])
def test_a_dataframe_argument_follows_its_index(how: str) -> None:
    functions: dict[str, Callable[[], Callable[..., Any]]] = {
        "grad": lambda: ng.grad(_loss_by_label),
        "value_and_grad": lambda: ng.value_and_grad(_loss_by_label),
        "the frame itself": lambda: lambda f: f * 2.0,
        "a column": lambda: lambda f: f["a"] + 1.0,
        "loc": lambda: lambda f: f.loc[5, "a"],
    }
    seen = check(functions[how], FRAME_CALLS, how)
    # Recorded, the table inside as a transform has it: one trace per index (the fourth
    # call's is the first's).
    assert len(seen.fast.traces) == 3 and seen.said == []


def test_a_closed_over_series_is_read_when_recorded_and_its_index_with_it() -> None:
    s = _series([1.0, 2.0, 3.0], [5, 6, 7])
    check(lambda: lambda x: x * s.loc[6], _arrays([1.0, 2.0], [3.0, -1.0], [0.0, -0.0]), "closure")


# -- 8: formatting --------------------------------------------------------------------------------------

FORMATS: dict[str, Callable[[Any], Any]] = {
    "format": lambda x: format(x[0], ".3f"),
    "f-string with a spec": lambda x: f"{x[0]:.2f}",
    "f-string": lambda x: f"{x[1]}",
    "str.format": lambda x: f"{x[0]:.1e} {x[1]}",
    "%": lambda x: "%.2f %s" % (x[0], x[1]),  # noqa: UP031  (the %-formatting is what is tested)
    "str": str,
    "repr": repr,
    "np.savetxt": lambda x: (np.savetxt(out := io.StringIO(), x, fmt="%.4f"), out.getvalue())[1],
    "np.array2string": lambda x: np.array2string(x, precision=2),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_formatting_a_staged_value_gives_each_call_its_own_text(name: str, transform: str) -> None:
    text = FORMATS[name]

    def numbers(x: Any) -> Any:  # the text read back into the computation
        return x * float(len(text(x)) + sum(map(ord, text(x))) % 7)

    calls = calls_for(transform, [1.0, 2.5], [-3.25, 0.5], [10.125, -0.0], [1.0, 2.5])
    if transform == "f":
        check(lambda: text, calls, name)
    check(lambda: TRANSFORMS[transform](numbers), calls, f"{name} under {transform}")


# -- 9: numpy scalars keep their type ---------------------------------------------------------------------

SCALARS = [np.float64(1.5), np.float32(-2.0), np.int64(3), np.complex128(1 - 2j), np.bool_(True), np.float16(0.5)]


def _by_type(x: Any, s: Any) -> Any:
    for k, kind in enumerate((bool, int, float, complex, np.floating, np.integer, np.complexfloating, np.bool_)):
        if isinstance(s, kind):
            return x * (k + 1) + np.real(s)
    return x


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_a_numpy_scalar_argument_keeps_its_type(transform: str) -> None:
    for scalar in SCALARS:
        kind = type(scalar)
        values = [kind(scalar), kind(scalar * 2), kind(0)]
        x = np.array([1.0, 2.0]) if transform != "vmap" else np.ones((2, 2))
        calls = [(x, v) for v in values]
        fun = TRANSFORMS[transform](_by_type) if transform != "vmap" else ng.vmap(_by_type, in_axes=(0, None))
        check(lambda fun=fun: fun, calls, f"{kind.__name__} under {transform}")


# -- 10: signatures tell numbers apart exactly -----------------------------------------------------------

NAN = float("nan")
NEGATIVE_NAN = -NAN

NUMBERS: dict[str, list[Any]] = {
    "signed zeros": [0.0, -0.0, 0.0, -0.0],
    "complex signed zeros": [complex(0.0, 0.0), complex(-0.0, 0.0), complex(0.0, -0.0)],
    "1, 1.0 and True": [1, 1.0, True, 1],
    "NaNs of either sign": [NAN, NEGATIVE_NAN, NAN],
    "numpy signed zeros": [np.float64(0.0), np.float64(-0.0)],
}


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("family", sorted(NUMBERS))
def test_numbers_that_differ_are_different_signatures(family: str, transform: str, static: bool) -> None:
    def fun(x: Any, s: Any) -> Any:
        return x / s + np.copysign(1.0, np.real(s)) * x

    x = np.array([1.0, -2.0]) if transform != "vmap" else np.ones((2, 2))
    calls = [(x, s) for s in NUMBERS[family]]
    replayed = {
        "f": fun,
        "grad": ng.grad(lambda x, s: np.sum(np.real(fun(x, s)))),
        "vmap": ng.vmap(fun, in_axes=(0, None)),
    }[transform]
    eager, fast = replayed, ng.replay(replayed, static_argnums=(1,) if static else ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", ReplayWarning)
        for k, args in enumerate(calls):
            assert_identical(fast(*args), eager(*args), f"{family} under {transform}, call {k}")


def test_a_static_field_of_a_structure_tells_signed_zeros_apart() -> None:
    fun = ng.replay(lambda p: p["x"] / p["s"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in (0.0, -0.0, 0.0):
            assert_identical(fun({"x": np.ones(2), "s": s}), np.ones(2) / s, f"s={s}")


# -- 11: random draws are refused -------------------------------------------------------------------------

_GLOBAL_GENERATOR = np.random.default_rng(5)
_GLOBAL_BIT_GENERATOR = np.random.PCG64(9)


class _Holder:
    generator = np.random.default_rng(2)


DRAWS: dict[str, Callable[[], Callable[[Any], Any]]] = {
    "RandomState()": lambda: lambda x: x * np.random.RandomState().normal(size=x.shape),
    "Generator(PCG64())": lambda: lambda x: x * np.random.Generator(np.random.PCG64()).normal(size=x.shape),
    "default_rng(SeedSequence())": lambda: lambda x: x * np.random.default_rng(np.random.SeedSequence()).random(),
    "default_rng()": lambda: lambda x: x * np.random.default_rng().random(),
    "random.Random()": lambda: lambda x: x * random.Random().random(),
    "random.SystemRandom()": lambda: lambda x: x * random.SystemRandom().random(),
    "a closure's BitGenerator": lambda: (lambda bg: lambda x: x * np.random.Generator(bg).random())(np.random.PCG64(3)),
    "a global BitGenerator": lambda: lambda x: x * np.random.Generator(_GLOBAL_BIT_GENERATOR).random(),
    "a closure's Generator": lambda: (lambda g: lambda x: x * (g.random(x.shape) > 0.5))(np.random.default_rng(1)),
    "a global Generator": lambda: lambda x: x * (_GLOBAL_GENERATOR.random(x.shape) > 0.5),
    "a closure's random.Random": lambda: (lambda r: lambda x: x * r.random())(random.Random(4)),
    "a Generator held by a class": lambda: lambda x: x * _Holder.generator.random(),
}


@pytest.mark.parametrize("transform", ["f", "grad", "value_and_grad", "vmap", "vmap of grad"])
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_random_draw_is_refused_under_every_transform(name: str, transform: str) -> None:
    fun = DRAWS[name]()
    wrapped = {
        "f": fun,
        "grad": ng.grad(_summed(fun)),
        "value_and_grad": ng.value_and_grad(_summed(fun)),
        "vmap": ng.vmap(fun),
        "vmap of grad": ng.vmap(ng.grad(_summed(fun))),
    }[transform]
    x = np.ones((2, 3)) if transform.startswith("vmap") else np.ones(3)
    fast = ng.replay(wrapped)
    with pytest.raises(RandomDrawError, match="pass them in as an argument"):
        fast(x)
    assert fast.traces == []
    wrapped(x)  # eagerly, it draws


def test_a_seeded_generator_made_inside_still_replays() -> None:
    fun = lambda x: x * np.random.Generator(np.random.PCG64(7)).random() + random.Random(3).random()
    seen = check(lambda: fun, _arrays([1.0, 2.0], [3.0, 4.0], [5.0, -1.0]), "seeded")
    assert len(seen.fast.traces) == 1


# -- 12: what eager code reads of an array works, or runs eagerly --------------------------------------------

READS: dict[str, Callable[[Any], Any]] = {
    "x.flags": lambda x: x * x.flags.c_contiguous,
    "x.strides": lambda x: x * x.strides[0],
    "x.base": lambda x: x if x.base is None else x * 2,
    "x.data": lambda x: x * len(bytes(x.data)),
    "x.ctypes": lambda x: x * (x.ctypes.data != 0),
    "__array_interface__": lambda x: x * len(x.__array_interface__["shape"]),
    "x[0].is_integer()": lambda x: x * x[0].is_integer(),
    "divmod": lambda x: divmod(x, 2.0)[0] + divmod(3.0, x)[1],
    "bytes(x)": lambda x: x * (sum(bytes(x)) % 5),
    "x.tobytes()": lambda x: x * (sum(x.tobytes()) % 5),
    "hash(x[0])": lambda x: x * (hash(x[0]) % 3),
    "x[0].as_integer_ratio()": lambda x: x * x[0].as_integer_ratio()[1],
    "pickle": lambda x: pickle.loads(pickle.dumps(x)) * 2,
    "memory of a slice": lambda x: x[::2] * x[::2].strides[0],
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("name", sorted(READS))
def test_what_eager_code_reads_of_an_array_is_read_honestly(name: str, transform: str) -> None:
    calls = calls_for(transform, [1.0, 2.5], [3.0, 2.0], [-0.5, 4.0], [1.0, 2.5])
    if transform == "f":  # a strided argument: the layout changes too
        calls.append((np.array([1.0, 7.0, 2.5, 7.0])[::2],))
    check(lambda: TRANSFORMS[transform](READS[name]), calls, f"{name} under {transform}")


LAYOUT_LOSSES: dict[str, Callable[[Any], Any]] = {
    "reshape": lambda x: np.sum(x.reshape(-1) * np.arange(4.0)),
    "transpose": lambda x: np.sum(x.T @ np.ones((2, 2))),
    "identity": np.sum,
    "ravel then view": lambda x: np.sum(np.ravel(x)[::-1] * np.arange(4.0)),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_LOSSES))
def test_a_gradient_follows_its_arguments_memory_layout(name: str) -> None:
    """Arguments of one shape and dtype but another memory layout share a signature: the
    replayed gradients equal the eager ones, and none is a view of another array."""
    loss = LAYOUT_LOSSES[name]
    calls = [
        (np.arange(4.0).reshape(2, 2),),
        (np.arange(8.0).reshape(2, 4)[:, ::2],),
        (np.asfortranarray(np.arange(4.0).reshape(2, 2)),),
        (np.arange(4.0).reshape(2, 2),),
    ]
    seen = check(lambda: ng.grad(loss), calls, name)
    for (x,) in calls:
        g = seen.fast(x)
        assert not np.shares_memory(g, x) and g.flags.writeable and g.base is None, name


SCALAR_TRANSFORMS: dict[str, Callable[..., Any]] = {
    "jvp": lambda x, t: ng.jvp(lambda q: np.sum(q * q) * 0.5, (x,), (t,)),
    "linearize": lambda x, t: ng.linearize(lambda q: np.sum(np.sin(q)), x)[1](t),
    "hvp": lambda x, t: ng.hvp(lambda q: np.sum(q**3), x, t),
    "value_and_grad": lambda x, t: ng.value_and_grad(lambda q: 2.0 * np.sum(q * t))(x),
    "jacfwd": lambda x, t: ng.jacfwd(lambda q: np.sum(q * q))(x),
}


@pytest.mark.parametrize("name", list(SCALAR_TRANSFORMS))
def test_a_transform_of_a_function_with_a_scalar_result_replays_as_its_eager_call(name: str) -> None:
    # a float stand-in answers isinstance(x, float): code that rebuilds a float by its class
    # (the zero and the probe of a scalar result) must not call the stand-in's own type
    fun = SCALAR_TRANSFORMS[name]
    replayed = ng.replay(fun)
    for k in range(3):
        x, t = np.linspace(-1.0, 1.0, 4) * (k + 1), np.full(4, 0.5 + k)
        assert_identical(replayed(x, t), fun(x, t), f"{name}, call {k}")
