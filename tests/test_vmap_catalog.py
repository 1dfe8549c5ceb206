"""Every function that works under ``grad`` works under ``vmap``, equal to a loop over examples.

The functions are walked from the catalogues, not listed by hand: every numpy function and
ufunc with a differentiating rule (one drawn call of each, from the specs of
``tests/test_numpy_api.py``), the plain-value functions, numpy's functions that ``grad``
meets only on plain values (masks, indices: :data:`PLAIN_CALLS`), the array methods, and
every method of every distribution in ``nodegrad.scipy.stats``. Each is run under
``ng.vmap`` over a batch of three examples: with every argument batched, with one argument
given ``in_axes=None``, and with one reached through a closure; the oracle is the plain
call in a Python loop over the examples, stacked by ``np.stack`` (the same dtype, equal to
1e-12). What cannot be batched must raise a :class:`~nodegrad.errors.BatchingError` naming
the function, and be listed in docs/vmap.md between the refusal markers (read here, so the
list and the code cannot drift apart). A few are differentiated too: ``vmap(grad(f))``
against a loop of ``grad(f)``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import nodegrad as ng
from nodegrad.errors import BatchingError
from nodegrad.numpy_api import UFUNCS, catalog
from nodegrad.ops.traced_methods import _ArrayMethods, _BatchedValues
from tests.test_numpy_api import FUNCTION_SPECS, UFUNC_SPECS, VALUE_CALLS, Case

stats = pytest.importorskip("nodegrad.scipy.stats")

#: One drawn call per function, the same one on every run: the catalogue's breadth, in seconds.
ONE = settings(
    max_examples=1,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
SIZE = 3  # examples per batch

DOCS = Path(__file__).resolve().parent.parent / "docs" / "vmap.md"
BEGIN, END = "<!-- refused under vmap -->", "<!-- end refused under vmap -->"


def _documented_refusals() -> set[str]:
    """The names each bullet of the refusal list in docs/vmap.md opens with (in backticks,
    before its first colon)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    bullets = [" ".join(b.split()) for b in section.split("\n- ") if b.strip()]
    return {name for bullet in bullets for name in re.findall(r"`([^`]+)`", bullet.split(": ")[0])}


REFUSALS = _documented_refusals()


# -- the oracle: a loop over examples --------------------------------------------------------------


def _example(value: Any, k: int) -> Any:
    """Example ``k`` of a batch built from ``value``: its floats scaled a little (so the
    examples differ and keep the domain: signs, order, separations), anything else as is."""
    kind = np.asarray(value).dtype.kind if isinstance(value, np.ndarray | float | np.generic) else ""
    if kind in "fc" and kind:
        return value * np.asarray(1.0 + 0.03 * k, np.asarray(value).real.dtype)
    return value


def _stacked_loop(results: list[Any]) -> Any:
    first = results[0]
    if isinstance(first, tuple | list):
        parts = [_stacked_loop([r[i] for r in results]) for i in range(len(first))]
        return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)
    if isinstance(first, np.dtype):
        assert all(r == first for r in results)
        return first  # not an array: the same for every example, compared as it is
    return np.stack([np.asarray(r) for r in results])


def _assert_equal(got: Any, expected: Any, what: str) -> None:
    if isinstance(expected, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(expected), f"{what}: {got!r}"
        for g, e in zip(got, expected, strict=True):
            _assert_equal(g, e, what)
        return
    if isinstance(expected, np.dtype):
        assert got == expected, f"{what}: {got!r}, the loop's {expected!r}"
        return
    if type(got) is not np.ndarray:
        # A result the same for every example (a flag read from the shapes): as it is.
        assert all(np.array_equal(e, got) for e in expected), f"{what}: {got!r}, the loop's {expected!r}"
        return
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, the loop's {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, the loop's {expected.dtype}"
    if expected.dtype.kind in "fc":
        scale = max(1.0, float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0.0)))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * scale, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


def _refused_as_documented(exc: Exception, name: str) -> None:
    assert isinstance(exc, BatchingError), f"{name}: {type(exc).__name__}: {exc}"
    assert name in REFUSALS, f"{name} is refused under vmap but not listed in docs/vmap.md: {exc}"
    assert name.split(".")[-1] in str(exc), f"the refusal does not name {name}: {exc}"


def check_batched(name: str, fn: Callable[..., Any], operands: tuple[Any, ...], batched: tuple[bool, ...]) -> None:
    """``fn(*operands)`` under vmap, the operands marked in ``batched`` holding ``SIZE``
    examples, against the loop: every marked one batched; the first given ``in_axes=None``
    (the same for every example); the first reached through a closure."""
    examples = [tuple(_example(v, k) if b else v for v, b in zip(operands, batched, strict=True)) for k in range(SIZE)]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = _stacked_loop([fn(*example) for example in examples])
        except (ValueError, TypeError, IndexError, np.linalg.LinAlgError):
            return  # numpy's loop refuses the batch itself (shapes that differ): nothing to compare
        positions = [k for k, b in enumerate(batched) if b]
        stacks = tuple(np.stack([e[k] for e in examples]) for k in positions)
        variants: list[tuple[str, Callable[..., Any], tuple[Any, ...], Any]] = [
            ("every operand batched", _with(fn, operands, positions), stacks, 0)
        ]
        if len(positions) > 1:
            first, shared = positions[0], examples[0][positions[0]]
            first_unbatched = _stacked_loop([fn(*_replaced(e, first, shared)) for e in examples])
            axes = (None, *([0] * (len(positions) - 1)))
            variants.append(("in_axes None", _with(fn, operands, positions), (shared, *stacks[1:]), axes))
            closed = _with(fn, _replaced(operands, first, shared), positions[1:])
            variants.append(("closure", closed, stacks[1:], 0))
        for label, f, args, in_axes in variants:
            want = expected if label == "every operand batched" else first_unbatched
            got, refusal = _vmapped(f, in_axes, args)
            if refusal is not None:
                _refused_as_documented(refusal, name)
                continue
            _assert_equal(got, want, f"{name}, {label}")


def _vmapped(f: Callable[..., Any], in_axes: Any, args: tuple[Any, ...]) -> tuple[Any, Exception | None]:
    """``vmap(f)(*args)``, or the nodegrad error it raised (a refusal, a ShapeError)."""
    try:
        return ng.vmap(f, in_axes=in_axes)(*args), None
    except (BatchingError, ng.errors.ShapeError) as exc:
        return None, exc


def _replaced(values: tuple[Any, ...], k: int, value: Any) -> tuple[Any, ...]:
    return (*values[:k], value, *values[k + 1 :])


def _with(fn: Callable[..., Any], operands: tuple[Any, ...], positions: list[int]) -> Callable[..., Any]:
    """``fn`` as a function of the operands at ``positions``, the others fixed."""

    def f(*args: Any) -> Any:
        found = list(operands)
        for k, a in zip(positions, args, strict=True):
            found[k] = a
        return fn(*found)

    return f


def _name(f: Any) -> str:
    module = "numpy" if isinstance(f, np.ufunc) else getattr(f, "__module__", "numpy")
    return f"{module.replace('numpy', 'np', 1)}.{f.__name__}".replace("np._core.", "np.")


# -- every numpy function and ufunc with a rule -----------------------------------------------------


#: The specs whose calls sort the results by reading their values in Python (the test's own
#: code, which no vmap can batch): called here without it.
OWN_CALLS: dict[Any, Callable[..., Any]] = {np.roots: np.roots, np.sort_complex: np.sort_complex}


def _check_case(func: Any, case: Case) -> None:
    call = OWN_CALLS.get(func, case.call)
    check_batched(_name(func), call, case.operands, case.diff)
    # The other operands batched too (indices, masks, integer arrays): each example's own.
    arrays = tuple(d or isinstance(v, np.ndarray) for v, d in zip(case.operands, case.diff, strict=True))
    if arrays != case.diff:
        check_batched(_name(func), call, case.operands, arrays)


@pytest.mark.parametrize("func", list(FUNCTION_SPECS), ids=_name)
@ONE
@given(data=st.data())
def test_function_under_vmap_is_the_loop(func: Any, data: st.DataObject) -> None:
    _check_case(func, data.draw(FUNCTION_SPECS[func], label="case"))


@pytest.mark.parametrize("ufunc", list(UFUNC_SPECS), ids=_name)
@ONE
@given(data=st.data())
def test_ufunc_under_vmap_is_the_loop(ufunc: np.ufunc, data: st.DataObject) -> None:
    _check_case(ufunc, data.draw(UFUNC_SPECS[ufunc], label="case"))


_X = np.array([[0.5, -1.25, 2.0, 0.0], [1.5, 0.25, -0.75, 3.0], [-2.0, 1.0, 0.75, -0.5]])
_Y = np.array([[1.0, -0.5, 2.0, 0.25], [0.5, 0.25, -1.0, 3.5], [-2.0, 1.5, 0.5, -0.5]])


@pytest.mark.parametrize("func", list(VALUE_CALLS), ids=_name)
def test_value_function_under_vmap_is_the_loop(func: Any) -> None:
    check_batched(_name(func), VALUE_CALLS[func], (_X, _Y), (True, True))


# numpy's functions that grad meets on plain values only (a mask, indices, integers: the
# catalogue's "not differentiable" ones): under vmap they are batched values, each example's own.
_INDICES = np.array([[3, 1, 0, 1], [2, 2, 0, 3], [1, 0, 3, 3]])
_BOUNDS = [(-3.0, 3.0), (-3.0, 3.0)]
PLAIN_CALLS: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "np.any": (lambda m: np.any(m > 0), (_X,)),
    "np.all": (lambda m: np.all(m > -3.0, axis=0), (_X,)),
    "np.isin": (lambda i, j: np.isin(i, j), (_INDICES, _INDICES[::-1, 1:3])),
    "np.bincount": (lambda i, w: np.bincount(i.ravel(), weights=w.ravel(), minlength=4), (_INDICES, _X)),
    "np.searchsorted": (lambda a, v: np.searchsorted(np.sort(a.ravel()), v), (_X, _Y)),
    "np.digitize": (lambda x: np.digitize(x, [-1.0, 0.0, 1.0]), (_X,)),
    "np.argpartition": (lambda x: np.argpartition(x, 1, axis=-1), (_X,)),
    "np.lexsort": (lambda x, y: np.lexsort((x, y)), (_X, _Y)),
    "np.argwhere": (lambda x: np.argwhere(x > 0), (_X,)),
    "np.flatnonzero": (lambda x: np.flatnonzero(x > 0), (_X,)),
    "np.nanargmax": (lambda x: np.nanargmax(np.where(x > 2.5, np.nan, x)), (_X,)),
    "np.nanargmin": (lambda x: np.nanargmin(x), (_X,)),
    "np.unravel_index": (lambda i: np.unravel_index(i, (2, 2)), (_INDICES,)),
    "np.ravel_multi_index": (lambda i, j: np.ravel_multi_index((i, j), (4, 4)), (_INDICES, _INDICES[::-1])),
    "np.diag_indices_from": (lambda x: np.diag_indices_from(x.reshape(2, 2)), (_X,)),
    "np.tril_indices_from": (lambda x: np.tril_indices_from(x.reshape(2, 2)), (_X,)),
    "np.triu_indices_from": (lambda x: np.triu_indices_from(x.reshape(2, 2), 1), (_X,)),
    "np.ix_": (lambda i, j: np.ix_(i, j), (_INDICES, _INDICES[::-1])),
    "np.isposinf": (lambda x: np.isposinf(np.where(x > 0, np.inf, x)), (_X,)),
    "np.isneginf": (lambda x: np.isneginf(np.where(x > 0, -np.inf, x)), (_X,)),
    "np.array_equiv": (lambda a, b: np.array_equiv(a, b), (_X, _X)),
    "np.may_share_memory": (lambda a, b: np.may_share_memory(a, b), (_X, _Y)),
    "np.shares_memory": (lambda a, b: np.shares_memory(a, b), (_X, _Y)),
    "np.unique": (lambda i: np.unique(i), (_INDICES,)),
    "np.unique_all": (lambda i: tuple(np.unique_all(i)), (_INDICES,)),
    "np.unique_counts": (lambda i: tuple(np.unique_counts(i)), (_INDICES,)),
    "np.unique_inverse": (lambda i: tuple(np.unique_inverse(i)), (_INDICES,)),
    "np.unique_values": (lambda i: np.unique_values(i), (_INDICES,)),
    "np.union1d": (lambda i, j: np.union1d(i, j), (_INDICES, _INDICES[::-1])),
    "np.intersect1d": (lambda i, j: np.intersect1d(i, j), (_INDICES, _INDICES[::-1])),
    "np.setdiff1d": (lambda i, j: np.setdiff1d(i, j), (_INDICES, _INDICES[::-1])),
    "np.setxor1d": (lambda i, j: np.setxor1d(i, j), (_INDICES, _INDICES[::-1])),
    "np.histogram": (lambda x: np.histogram(x, bins=3, range=(-3.0, 3.0)), (_X,)),
    "np.histogram2d": (lambda x, y: np.histogram2d(x, y, bins=2, range=_BOUNDS), (_X, _Y)),
    "np.histogramdd": (lambda x: np.histogramdd(x.reshape(2, 2), bins=2, range=_BOUNDS), (_X,)),
    "np.histogram_bin_edges": (lambda x: np.histogram_bin_edges(x, bins=3), (_X,)),
    "np.fix": (lambda x: np.fix(x), (_X,)),
    "np.packbits": (lambda x: np.packbits(x > 0), (_X,)),
    "np.unpackbits": (lambda i: np.unpackbits(i.astype(np.uint8)), (_INDICES,)),
    "np.einsum_path": (lambda x: np.einsum_path("i,i->", x, x)[1], (_X,)),
    "np.linalg.matrix_rank": (lambda x: np.linalg.matrix_rank(x.reshape(2, 2)), (_X,)),
    "np.array2string": (lambda x: np.array2string(x), (_X,)),
    "np.array_repr": (lambda x: np.array_repr(x), (_X,)),
    "np.array_str": (lambda x: np.array_str(x), (_X,)),
    "np.nonzero": (lambda x: np.nonzero(x > 0), (_X,)),
}
#: The catalogue's refused functions that take no batched value to loop over, by reason.
NOT_APPLICABLE = {
    "answers a question about dtypes": ("np.can_cast", "np.min_scalar_type", "np.common_type"),
    "works on dates and business days": ("np.busday_offset", "np.busday_count", "np.is_busday"),
    "formats dates": ("np.datetime_as_string",),
    "reads raw memory or an iterator": ("np.frombuffer", "np.fromiter", "np.from_dlpack", "np.nested_iters"),
    "builds the np.matrix subclass, refused everywhere": ("np.asmatrix", "np.bmat"),
    "reads the memory layout, which a traced value has none of either": ("np.isfortran",),
}


def test_every_refused_numpy_function_is_tried_under_vmap() -> None:
    """Each function the catalogue refuses on traced values (grad meets it on plain values
    only) is run under vmap here, refused as a writer, or takes no batched value."""
    skipped = {name for names in NOT_APPLICABLE.values() for name in names}
    untried = set(catalog.NOT_DIFFERENTIABLE) - set(PLAIN_CALLS) - set(catalog.writers()) - skipped
    assert untried == set(), f"add them to PLAIN_CALLS in {Path(__file__).name}"


_WRITES = {
    "np.copyto": lambda v: np.copyto(np.zeros(4), v),
    "np.put": lambda v: np.put(np.zeros(4), [0, 1], v[:2]),
    "np.place": lambda v: np.place(np.zeros(4), np.ones(4, bool), v),
    "np.putmask": lambda v: np.putmask(np.zeros(4), np.ones(4, bool), v),
    "np.put_along_axis": lambda v: np.put_along_axis(np.zeros(4), np.arange(4), v, axis=0),
    "np.fill_diagonal": lambda v: np.fill_diagonal(v.reshape(2, 2), 1.0),
    "np.save": lambda v: np.save("unused.npy", v),
    "np.savez": lambda v: np.savez("unused.npz", v),
    "np.savez_compressed": lambda v: np.savez_compressed("unused.npz", v),
    "np.savetxt": lambda v: np.savetxt("unused.txt", v),
}


@pytest.mark.parametrize("name", sorted(catalog.writers()))
def test_a_writer_of_batched_values_is_refused_as_documented(name: str) -> None:
    """Run once per example, each example would overwrite the last one's array or file."""
    _, refusal = _vmapped(_WRITES[name], 0, (_X,))
    assert refusal is not None, f"{name} wrote a batched value in place"
    _refused_as_documented(refusal, name)


@pytest.mark.parametrize("name", list(PLAIN_CALLS))
def test_plain_value_function_under_vmap_is_the_loop(name: str) -> None:
    """The operands' rows are the examples: each its own integers or mask."""
    fn, operands = PLAIN_CALLS[name]
    _check_rows(name, fn, operands, tuple(isinstance(o, np.ndarray) for o in operands))


def _check_rows(name: str, fn: Callable[..., Any], operands: tuple[Any, ...], batched: tuple[bool, ...]) -> None:
    with np.errstate(all="ignore"):
        try:
            expected = _stacked_loop([fn(*(o[k] for o in operands)) for k in range(len(operands[0]))])
        except ValueError:
            expected = None  # the examples' results differ in shape: np.stack refuses, and so must vmap
    got, refusal = _vmapped(fn, 0, operands)
    if isinstance(refusal, ng.errors.ShapeError):
        # The examples' results differ in shape: np.stack of the loop refuses them too.
        assert expected is None, f"{name}: refused what the loop stacks: {refusal}"
        assert name.split(".")[-1] in str(refusal), refusal
        return
    if refusal is not None:
        _refused_as_documented(refusal, name)
        return
    assert expected is not None, f"{name}: vmap stacked results the loop cannot"
    _assert_equal(got, expected, name)
    check_batched(name, fn, operands, batched)


# -- array methods ----------------------------------------------------------------------------------

METHOD_CALLS: dict[str, Callable[[Any], Any]] = {
    "flatten('F')": lambda x: x.flatten("F"),
    "ravel('F')": lambda x: x.ravel("F"),
    "reshape(order='F')": lambda x: x.reshape((2, 2), order="F"),
    "sum(axis)": lambda x: x.sum(axis=-1),
    "mean": lambda x: x.mean(),
    "max": lambda x: x.max(axis=0, keepdims=True),
    "prod": lambda x: x.prod(),
    "var(ddof)": lambda x: x.var(ddof=1),
    "std": lambda x: x.std(),
    "cumsum": lambda x: x.cumsum(),
    "cumprod": lambda x: x.cumprod(axis=0),
    "clip": lambda x: x.clip(-0.5, 1.0),
    "astype": lambda x: x.astype(np.float32),
    "T": lambda x: x.reshape(2, 2).T,
    "diagonal": lambda x: x.reshape(2, 2).diagonal(),
    "trace": lambda x: x.reshape(2, 2).trace(),
    "repeat": lambda x: x.repeat(2),
    "squeeze": lambda x: x[None].squeeze(0),
    "swapaxes": lambda x: x.reshape(2, 2).swapaxes(0, 1),
    "dot": lambda x: x.dot(x),
    "copy": lambda x: x.copy(),
    "any": lambda x: (x > 0).any(),
    "all": lambda x: (x > -1).all(),
    "argmax": lambda x: x.argmax(),
    "argmin": lambda x: x.argmin(axis=0),
    "argsort": lambda x: x.argsort(),
    "conj": lambda x: x.conj(),
    "real": lambda x: x.real,
    "conjugate": lambda x: x.conjugate(),
    "imag": lambda x: x.imag,
    "mT": lambda x: x.reshape(2, 2).mT,
    "min": lambda x: x.min(axis=-1),
    "nonzero": lambda x: (x > 10.0).nonzero(),
    "transpose": lambda x: x.reshape(2, 1, 2).transpose(2, 0, 1),
    "reshape": lambda x: x.reshape(2, 2),
    "getitem slice": lambda x: x[1:3],
    "getitem mask": lambda x: np.where(x > 0, x, 0.0)[::2],
}


def test_every_array_method_is_tried_under_vmap() -> None:
    methods = {name for face in (_ArrayMethods, _BatchedValues) for name in vars(face) if not name.startswith("_")}
    tried = {re.match(r"\w+", call).group() for call in METHOD_CALLS}  # type: ignore[union-attr]
    assert methods - tried == set(), f"add them to METHOD_CALLS in {Path(__file__).name}"


@pytest.mark.parametrize("method", list(METHOD_CALLS))
def test_array_method_under_vmap_is_the_loop(method: str) -> None:
    check_batched(f"x.{method}", METHOD_CALLS[method], (_X[0],), (True,))


# -- indexing by a batched index --------------------------------------------------------------------

_TABLE = np.arange(24.0).reshape(6, 4) / 7.0
INDEXINGS: dict[str, Callable[[Any, Any], Any]] = {
    "t[i]": lambda t, i: t[i],
    "t[i, j]": lambda t, i: t[i, i % 4],
    "t[:, i]": lambda t, i: t[:, i % 4],
    "np.take": lambda t, i: np.take(t, i, axis=0),
    "np.take_along_axis": lambda t, i: np.take_along_axis(t, i * np.ones((1, 4), int), axis=0),
    "ng.gather": lambda t, i: ng.gather(t, i, 0),
}


@pytest.mark.parametrize("name", list(INDEXINGS))
@pytest.mark.parametrize("table", ["argument", "batched argument", "traced"])
def test_indexing_by_a_batched_index_is_the_loop(name: str, table: str) -> None:
    """An embedding lookup: the index batched, the table unbatched (in_axes None), batched,
    or traced by grad (so per-example gradients of a lookup are the loop's). A plain array
    indexed by numpy itself is refused as documented."""
    index = np.array([4, 1, 0])
    look = INDEXINGS[name]
    expected = np.stack([look(_TABLE, i) for i in index])
    if table == "traced":

        def loss(t: Any, i: Any) -> Any:
            return np.sum(look(t, i) ** 2)

        got = ng.vmap(ng.grad(loss), in_axes=(None, 0))(_TABLE, index)
        _assert_equal(got, np.stack([ng.grad(loss)(_TABLE, i) for i in index]), name)
        return
    if table == "batched argument":
        got, refusal = _vmapped(look, 0, (np.stack([_TABLE] * 3), index))
    else:
        got, refusal = _vmapped(look, (None, 0), (_TABLE, index))
    if refusal is not None:
        assert table == "argument", refusal
        _refused_as_documented(refusal, "t[i]" if name.startswith("t[") else name)  # numpy's own indexing, each
        return
    _assert_equal(got, expected, name)


# -- every distribution of nodegrad.scipy.stats ------------------------------------------------------

_POINTS = np.array([-0.5, 0.25, 0.75, 1.5])
_COUNTS = np.array([0.0, 1.0, 3.0, 5.0])
#: Arguments of each distribution's methods (the point first): floats are batched and scaled.
DISTRIBUTIONS: dict[str, tuple[Any, ...]] = {
    "norm": (_POINTS, 0.25, 1.5),
    "t": (_POINTS, 3.0, 0.25, 1.5),
    "beta": (np.array([0.1, 0.25, 0.5, 0.8]), 2.0, 3.0),
    "gamma": (_POINTS, 2.0, 0.0, 1.5),
    "chi2": (_POINTS, 3.0, -1.0, 1.5),
    "expon": (_POINTS, 0.0, 1.5),
    "laplace": (_POINTS, 0.25, 1.5),
    "cauchy": (_POINTS, 0.25, 1.5),
    "logistic": (_POINTS, 0.25, 1.5),
    "uniform": (_POINTS, -0.25, 1.5),
    "poisson": (_COUNTS, 2.5),
    "binom": (_COUNTS, 6, 0.4),
    "bernoulli": (np.array([0.0, 1.0, 1.0, 0.0]), 0.3),
    "multivariate_normal": (
        np.array([[0.5, -0.25], [1.0, 0.75]]),
        np.array([0.25, 0.5]),
        np.array([[2.0, 0.5], [0.5, 1.0]]),
    ),
    "dirichlet": (np.array([0.25, 0.5, 0.25]), np.array([1.5, 2.0, 3.0])),
}
#: Whose points are not scaled (a scaled point leaves the support: the simplex, the integers).
_FIXED_POINT = {"dirichlet", "poisson", "binom", "bernoulli"}


def _methods() -> list[tuple[str, str]]:
    found = []
    for name in stats.__all__:
        for method in getattr(stats, name).__all__:
            found.append((name, method))
    return found


def test_every_distribution_has_arguments() -> None:
    assert set(stats.__all__) == set(DISTRIBUTIONS)


@pytest.mark.parametrize(("dist", "method"), _methods(), ids=[f"{d}.{m}" for d, m in _methods()])
def test_distribution_under_vmap_is_the_loop(dist: str, method: str) -> None:
    fn = getattr(getattr(stats, dist), method)
    args = DISTRIBUTIONS[dist]
    if method == "ppf":
        args = (np.array([0.1, 0.4, 0.6, 0.9]), *args[1:])
    batched = tuple(
        isinstance(a, np.ndarray | float) and not (k == 0 and dist in _FIXED_POINT) for k, a in enumerate(args)
    )
    operands = tuple(np.asarray(a) if isinstance(a, float) else a for a in args)
    check_batched(f"{dist}.{method}", fn, operands, batched)


# -- vmap(grad(f)) of a few that read values ----------------------------------------------------------

GRADIENTS: dict[str, Callable[[Any], Any]] = {
    "np.median": lambda x: np.median(x**3),
    "np.percentile": lambda x: np.percentile(x, 30.0) * x[0],
    "np.interp": lambda x: np.sum(np.interp(x, [-1.0, 0.0, 1.0], [0.0, 1.0, 3.0]) ** 2),
    "np.nan_to_num": lambda x: np.sum(np.nan_to_num(np.where(x > 0, x, np.nan)) ** 2),
    "np.select": lambda x: np.sum(np.select([x > 0, x < -1.0], [x**2, np.sin(x)], 1.0)),
    "np.fmax": lambda x: np.sum(np.fmax(x, 0.3) ** 2),
    "np.cov": lambda x: np.sum(np.cov(np.stack([x, x**2]))),
    "norm.logpdf": lambda x: np.sum(stats.norm.logpdf(x, x[0], 1.5)),
    "gamma.logpdf": lambda x: np.sum(stats.gamma.logpdf(x**2 + 0.1, 2.0)),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_vmap_of_grad_is_a_loop_of_grad(name: str) -> None:
    f, xs = GRADIENTS[name], _X + 0.1
    expected = np.stack([ng.grad(f)(x) for x in xs])
    _assert_equal(ng.vmap(ng.grad(f))(xs), expected, f"vmap(grad({name}))")
    hessians = np.stack([ng.hessian(f)(x) for x in xs])
    _assert_equal(ng.vmap(ng.hessian(f))(xs), hessians, f"vmap(hessian({name}))")
    total = ng.grad(lambda xs: np.sum(ng.vmap(f)(xs)))(xs)
    _assert_equal(total, expected, f"grad(vmap({name}))")


# -- functions given functions: closures over batched values ------------------------------------------


def test_a_callback_may_close_over_a_batched_value_where_the_function_is_batched_whole() -> None:
    xs, ys = _X[:, :2], _Y[:, 0]

    def f(x: Any, y: Any) -> Any:
        return np.apply_along_axis(lambda r: r * y + np.sum(r), 0, x[:, None])

    _assert_equal(ng.vmap(f)(xs, ys), np.stack([f(x, y) for x, y in zip(xs, ys, strict=True)]), "apply_along_axis")


def test_a_callback_closing_over_a_batched_value_where_the_function_loops_is_refused_naming_it() -> None:
    xs, ys = _X[:, :2], _Y[:, 0]
    closure = lambda x, y: np.piecewise(x, [x > 0.4], [lambda v: v * y, lambda v: v])
    _, refusal = _vmapped(closure, 0, (xs, ys))
    assert isinstance(refusal, BatchingError) and "np.piecewise" in str(refusal), refusal
    # The same values passed on as arguments, as the refusal advises, are each example's own.
    passed = lambda x, y: np.piecewise(x, [x > 0.4], [lambda v, y: v * y, lambda v, y: v], y)
    _assert_equal(ng.vmap(passed)(xs, ys), np.stack([closure(x, y) for x, y in zip(xs, ys, strict=True)]), "piecewise")


# -- ufuncs' methods ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["reduce", "accumulate", "outer"])
@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.logaddexp, np.logical_and], ids=_name)
def test_ufunc_method_under_vmap_is_the_loop_and_grad_of_it_is_grads(ufunc: np.ufunc, method: str) -> None:
    """Under vmap equal to the loop; under grad(vmap(f)) the gradient grad gives, or the
    refusal grad gives (never a zero gradient from values read as plain)."""
    bound = getattr(ufunc, method)
    f = (lambda x: bound(x, x)) if method == "outer" else bound
    check_batched(f"np.{ufunc.__name__}.{method}", f, (_X[0],), (True,))
    if ufunc not in UFUNCS:
        return  # its values are plain (booleans): no gradient to compare
    loss = lambda x: np.sum(f(x * 1.5))
    try:
        expected: Any = np.stack([ng.grad(loss)(x) for x in _X])
    except ng.errors.NoGradientError as exc:
        expected = exc
    try:
        got: Any = ng.grad(lambda xs: np.sum(ng.vmap(loss)(xs)))(_X)
    except ng.errors.NoGradientError as exc:
        got = exc
    if isinstance(expected, Exception):
        assert isinstance(got, ng.errors.NoGradientError), f"grad refuses it, grad(vmap) gave {got!r}"
    else:
        _assert_equal(got, expected, f"grad(vmap(np.{ufunc.__name__}.{method}))")
