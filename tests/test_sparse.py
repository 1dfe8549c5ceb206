"""scipy.sparse CSR, CSC and COO matrices as differentiable values: each op against scipy.

A hypothesis strategy (:func:`sparse_matrices`) draws scipy matrices of random shapes
(1..7 x 1..7), densities (empty matrices, empty rows and columns, full ones), formats
(CSR, CSC, COO) and classes (``sparray`` and ``spmatrix``), with COO duplicates, explicit
stored zeros and unsorted CSR/CSC indices. For every op of the table :data:`OPS`:

- the forward (``ng.replay(f)(X)`` and the value of ``ng.value_and_grad``) equals scipy's
  own answer on the same plain matrix;
- the gradient with respect to ``X`` is a scipy matrix of the argument's class, format,
  shape and pattern arrays, whose ``.data`` equals float64 central differences on the
  stored values (one entry at a time, duplicates and explicit zeros each their own);
- the gradient with respect to the dense operand equals central differences;
- the argument is not modified (its values, and its index arrays however unsorted).

As scipy's, a function of the entries (``X.sin()``, ``np.sin(X)``, ``X.power(n)``, ``abs(X)``,
``X.multiply(Y)``) sums a COO matrix's duplicates first: the gradient with respect to each
duplicate is the derivative at the summed entry (scipy's answer on a copy is the reference);
linear ones (``-X``, ``X * s``, ``X.multiply(dense)``, ...) keep each stored value.

Where cheap, an independent oracle: the gradient through the dense matrix (``ng.grad`` of
the same function of an ``np.ndarray``) read at each stored entry, and plain numpy's
closed forms for the products.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import weakref
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.sparse as ss
from hypothesis import HealthCheck, assume, given, settings

import nodegrad as ng
import nodegrad.scipy.sparse as sp
from nodegrad.errors import ArenaError
from tests.finite_differences import central_difference

SOME = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MORE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CLASSES: dict[tuple[str, bool], type] = {
    ("csr", False): ss.csr_array,
    ("csc", False): ss.csc_array,
    ("coo", False): ss.coo_array,
    ("csr", True): ss.csr_matrix,
    ("csc", True): ss.csc_matrix,
    ("coo", True): ss.coo_matrix,
}


# -- the strategy ------------------------------------------------------------------------------------


@st.composite
def sparse_matrices(
    draw: st.DrawFn,
    *,
    max_side: int = 7,
    square: bool = False,
    formats: tuple[str, ...] = ("csr", "csc", "coo"),
    classes: tuple[bool, ...] = (False, True),
    duplicates: bool = True,
    explicit_zeros: bool = True,
    unsorted: bool = True,
    min_nnz: int = 0,
) -> Any:
    """A scipy sparse matrix, built by hand from index arrays.

    Shape 1..max_side on each side, density 0..1 (0: an empty matrix), values in [-2, 2];
    optionally some stored values exactly 0 (explicit zeros), duplicated COO coordinates
    (each with its own value), a COO in shuffled order, and CSR/CSC indices permuted within
    each row/column (``has_sorted_indices`` false where that unsorted them).
    """
    m = draw(st.integers(1, max_side))
    n = m if square else draw(st.integers(1, max_side))
    fmt = draw(st.sampled_from(formats))
    is_matrix = draw(st.sampled_from(classes))
    density = draw(st.one_of(st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]), st.floats(0.0, 1.0)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mask = rng.random((m, n)) < density
    if not mask.any() and draw(st.integers(0, 3)):  # an empty matrix a quarter of the times it was drawn
        mask.flat[rng.integers(m * n)] = True
    if mask.sum() < min_nnz:
        mask.flat[rng.permutation(m * n)[:min_nnz]] = True
    cls = CLASSES[(fmt, is_matrix)]
    if fmt == "csc":  # column-major order: the stored order of a CSC matrix
        cols, rows = np.nonzero(mask.T)
    else:
        rows, cols = np.nonzero(mask)
    values = rng.uniform(-2.0, 2.0, rows.size)
    if explicit_zeros and rows.size and draw(st.booleans()):
        values[rng.random(rows.size) < 0.3] = 0.0
    if fmt == "coo":
        if rows.size and draw(st.booleans()):  # any stored order
            order = rng.permutation(rows.size)
            rows, cols, values = rows[order], cols[order], values[order]
        if duplicates and rows.size and draw(st.booleans()):
            again = rng.integers(0, rows.size, size=int(rng.integers(1, rows.size + 1)))
            rows, cols = np.concatenate([rows, rows[again]]), np.concatenate([cols, cols[again]])
            values = np.concatenate([values, rng.uniform(-2.0, 2.0, again.size)])
        return cls((values, (rows, cols)), shape=(m, n))
    major, minor, count = (rows, cols, m) if fmt == "csr" else (cols, rows, n)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=count))]).astype(np.int32)
    indices = minor.astype(np.int32)
    shuffled = unsorted and rows.size > 1 and draw(st.booleans())
    if shuffled:  # permute the entries within each row (column) run
        order = np.concatenate(
            [start + rng.permutation(stop - start) for start, stop in itertools.pairwise(indptr)]
        ).astype(np.int64)
        indices, values = indices[order], values[order]
    # (scipy works has_sorted_indices out from the indices: false where a row's got shuffled)
    return cls((values, indices, indptr), shape=(m, n))


def with_data(X: Any, data: np.ndarray) -> Any:
    """A copy of ``X`` (same class and pattern) holding ``data``."""
    Y = X.copy()
    Y.data[...] = data
    return Y


def snapshot(X: Any) -> tuple[np.ndarray, ...]:
    """Copies of ``X``'s stored values and index arrays."""
    if X.format == "coo":
        return (X.data.copy(), X.row.copy(), X.col.copy())
    return (X.data.copy(), X.indices.copy(), X.indptr.copy())


def assert_unchanged(X: Any, before: tuple[np.ndarray, ...]) -> None:
    for now, then in zip(snapshot(X), before, strict=True):
        np.testing.assert_array_equal(now, then)


def assert_same_pattern(g: Any, X: Any) -> None:
    """``g`` is a scipy matrix of ``X``'s class, format, shape and pattern arrays."""
    assert type(g) is type(X), (type(g), type(X))
    assert g.format == X.format and g.shape == X.shape
    assert g.data.shape == X.data.shape and g.data.dtype == X.data.dtype
    if X.format == "coo":
        np.testing.assert_array_equal(g.row, X.row)
        np.testing.assert_array_equal(g.col, X.col)
    else:
        np.testing.assert_array_equal(g.indices, X.indices)
        np.testing.assert_array_equal(g.indptr, X.indptr)


def coordinates(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """The row and column of each stored value, in stored order."""
    coo = X.tocoo()  # CSR/CSC -> COO keeps the stored order; a COO is itself
    return np.asarray(coo.row, np.int64), np.asarray(coo.col, np.int64)


def scipy_answer(fun: Callable[[Any, Any], Any], X: Any, operand: Any = None) -> Any:
    """scipy's own answer, ``fun(X, operand)`` on a copy of ``X`` (scipy sums a COO's duplicates
    in place). scipy's product of a one-row coo_array and a vector is 0-d, not (1,) as its
    CSR's, numpy's product of a 1 x n array and nodegrad's: a dense answer for a coo_array of
    one row or column is its CSR copy's."""
    if isinstance(X, ss.coo_array) and 1 in X.shape:
        expected = fun(X.tocsr(), operand)
        if not ss.issparse(expected):
            return expected
    return fun(X.copy(), operand)


def dense(value: Any) -> np.ndarray:
    """A plain result (scipy sparse, np.matrix, array, number) as an ndarray."""
    return value.toarray() if ss.issparse(value) else np.asarray(value)


def contract(result: Any, C: Any) -> Any:
    """``sum(result * C)`` for a traced or a plain result, sparse or dense."""
    if sp.issparse(result):  # a SparseMatrix or a scipy matrix: read C at the stored entries
        return result.multiply(C).sum()
    if isinstance(result, np.matrix):
        result = np.asarray(result)
    return ng.sum(result * C)


# -- duplicates, and inputs scipy itself refuses ----------------------------------------------------


def entries(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each stored value the index of its entry (its duplicates share one), and for each
    entry how many values it stores."""
    rows, cols = coordinates(X)
    _, entry, count = np.unique(rows * X.shape[1] + cols, return_inverse=True, return_counts=True)
    return entry.reshape(-1), count


def in_domain(X: Any, domain: Callable[[np.ndarray], np.ndarray]) -> Any:
    """A copy of ``X`` whose entries, duplicates summed (what scipy applies a function of the
    entries to), are in ``domain``: a value stored once is mapped by it, an entry's duplicates
    are each moved by an equal share of their sum's move (keeping their own values)."""
    entry, count = entries(X)
    sums = np.bincount(entry, weights=X.data, minlength=count.size)
    shift = (domain(sums) - sums) / count
    return with_data(X, np.where(count[entry] == 1, domain(X.data), X.data + shift[entry]))


def coo_matrix_indexing(X: Any, _: Any) -> bool:
    """scipy's coo_matrix is not subscriptable (nor is it inside a transform)."""
    return isinstance(X, ss.coo_matrix)


# -- the ops -----------------------------------------------------------------------------------------


def _none(rng: np.random.Generator, m: int, n: int) -> None:
    return None


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.5


def _away_from_zero(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x + 0.3, x - 0.3)


def _inside_unit(x: np.ndarray) -> np.ndarray:
    return 0.8 * np.tanh(x / 2.0)  # |x| < 0.8 (an entry's duplicates may sum to more than 2)


@dataclasses.dataclass(frozen=True)
class Op:
    """``fun(X, operand)``, the same code for a SparseMatrix and a plain scipy matrix.

    ``operand(rng, m, n)`` draws the other operand; ``domain`` maps the entries (an entry's
    duplicates summed, see :func:`in_domain`) into the op's domain, away from its kinks;
    ``dense_operand``: the operand is a float array whose gradient is checked too, also with
    the matrix closed over when ``closed`` (scipy's own operators meeting a traced value);
    ``matrix_only``/``array_only``: for ``spmatrix`` (``sparray``) classes only;
    ``same_pattern``: the operand is a plain scipy matrix on ``X``'s pattern, its values drawn
    anew; ``same_class``: the result is a matrix of the class scipy's is (else its class may
    differ, as the pattern is kept); ``skip``: a predicate of ``(X, operand)`` saying scipy
    itself refuses the input (those examples are skipped).
    """

    fun: Callable[[Any, Any], Any]
    operand: Callable[[np.random.Generator, int, int], Any] = _none
    domain: Callable[[np.ndarray], np.ndarray] = _identity
    dense_operand: bool = False
    matrix_only: bool = False
    array_only: bool = False
    same_pattern: bool = False
    same_class: bool = False
    closed: bool = False
    skip: Callable[[Any, Any], bool] | None = None


def _vector(side: int) -> Callable[[np.random.Generator, int, int], np.ndarray]:
    return lambda rng, m, n: rng.normal(size=(m, n)[side])


def _shaped(shape: Callable[[int, int], tuple[int, ...]]) -> Callable[[np.random.Generator, int, int], np.ndarray]:
    return lambda rng, m, n: rng.normal(size=shape(m, n))


def _rows(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    """Row indices with repeats and negative ones."""
    picks = rng.integers(-m, m, size=int(rng.integers(1, 2 * m + 1)))
    return picks


def _cols(rng: np.random.Generator, m: int, n: int) -> list[int]:
    return [int(c) for c in rng.integers(0, n, size=int(rng.integers(1, n + 1)))]


def _mask(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    return rng.random(m) < 0.5


def _slice(rng: np.random.Generator, m: int, n: int) -> slice:
    start, stop = sorted(int(v) for v in rng.integers(0, m + 1, size=2))
    return slice(start, stop, int(rng.integers(1, 3)))


def _entry(rng: np.random.Generator, m: int, n: int) -> tuple[int, int]:
    return int(rng.integers(-m, m)), int(rng.integers(-n, n))


def _diag_k(rng: np.random.Generator, m: int, n: int) -> int:
    return int(rng.integers(-m + 1, n))


OPS: dict[str, Op] = {
    # products with a dense vector or matrix, on either side
    "X @ w": Op(lambda X, w: X @ w, _vector(1), dense_operand=True, closed=True),
    "X @ W": Op(lambda X, W: X @ W, _shaped(lambda m, n: (n, 2)), dense_operand=True, closed=True),
    "w @ X": Op(lambda X, v: v @ X, _vector(0), dense_operand=True, closed=True),
    "W @ X": Op(lambda X, V: V @ X, _shaped(lambda m, n: (3, m)), dense_operand=True, closed=True),
    "X.T @ g": Op(lambda X, g: X.T @ g, _vector(0), dense_operand=True, closed=True),
    "X.T @ G": Op(lambda X, G: X.T @ G, _shaped(lambda m, n: (m, 2)), dense_operand=True, closed=True),
    "X.transpose() @ g": Op(lambda X, g: X.transpose() @ g, _vector(0), dense_operand=True, closed=True),
    "X.dot(w)": Op(lambda X, w: X.dot(w), _vector(1), dense_operand=True, closed=True),
    "X.dot(W)": Op(lambda X, W: X.dot(W), _shaped(lambda m, n: (n, 2)), dense_operand=True, closed=True),
    # an spmatrix's * is a product, an sparray's is elementwise
    "X * w": Op(lambda X, w: X * w, _vector(1), dense_operand=True, closed=True),
    # transposes
    "X.T": Op(lambda X, _: X.T, same_class=True),
    "X.transpose()": Op(lambda X, _: X.transpose(), same_class=True),
    # elementwise with numbers and dense arrays
    "X.multiply(D)": Op(lambda X, D: X.multiply(D), _shaped(lambda m, n: (m, n)), dense_operand=True),
    "X.multiply(row)": Op(lambda X, r: X.multiply(r), _vector(1), dense_operand=True),
    "X.multiply(col)": Op(lambda X, c: X.multiply(c), _shaped(lambda m, n: (m, 1)), dense_operand=True),
    "X.multiply(s)": Op(lambda X, _: X.multiply(1.7)),
    "X.multiply(X)": Op(lambda X, _: X.multiply(X)),
    "X * s": Op(lambda X, _: X * 2.5, same_class=True),
    "s * X": Op(lambda X, _: -1.5 * X),
    "X / s": Op(lambda X, _: X / 4.0),
    "-X": Op(lambda X, _: -X, same_class=True),
    "abs(X)": Op(lambda X, _: abs(X), domain=_away_from_zero),
    "X.power(2)": Op(lambda X, _: X.power(2)),
    "X.power(3)": Op(lambda X, _: X.power(3)),
    "X.power(-1)": Op(lambda X, _: X.power(-1), domain=_away_from_zero),
    "X.power(0.5)": Op(lambda X, _: X.power(0.5), domain=_positive),
    # scipy's elementwise methods that map 0 to 0
    "X.sin()": Op(lambda X, _: X.sin()),
    "X.sinh()": Op(lambda X, _: X.sinh()),
    "X.tan()": Op(lambda X, _: X.tan(), domain=_inside_unit),
    "X.tanh()": Op(lambda X, _: X.tanh()),
    "X.arcsin()": Op(lambda X, _: X.arcsin(), domain=_inside_unit),
    "X.arcsinh()": Op(lambda X, _: X.arcsinh()),
    "X.arctan()": Op(lambda X, _: X.arctan()),
    "X.arctanh()": Op(lambda X, _: X.arctanh(), domain=_inside_unit),
    "X.expm1()": Op(lambda X, _: X.expm1()),
    "X.log1p()": Op(lambda X, _: X.log1p(), domain=_inside_unit),
    "X.sqrt()": Op(lambda X, _: X.sqrt(), domain=_positive),
    "X.sign()": Op(lambda X, _: X.sign(), domain=_away_from_zero),
    "X.deg2rad()": Op(lambda X, _: X.deg2rad()),
    "X.rad2deg()": Op(lambda X, _: X.rad2deg()),
    # numpy's ufuncs that map 0 to 0
    "np.sin(X)": Op(lambda X, _: np.sin(X)),
    "np.tanh(X)": Op(lambda X, _: np.tanh(X)),
    "np.sqrt(X)": Op(lambda X, _: np.sqrt(X), domain=_positive),
    "np.square(X)": Op(lambda X, _: np.square(X), array_only=True),  # spmatrix: X * X,
    "np.negative(X)": Op(lambda X, _: np.negative(X)),
    "np.absolute(X)": Op(lambda X, _: np.absolute(X), domain=_away_from_zero),
    "np.expm1(X)": Op(lambda X, _: np.expm1(X)),
    "np.log1p(X)": Op(lambda X, _: np.log1p(X), domain=_inside_unit),
    "np.arctan(X)": Op(lambda X, _: np.arctan(X)),
    # reductions
    "X.sum()": Op(lambda X, _: X.sum()),
    "X.sum(axis=0)": Op(lambda X, _: X.sum(axis=0)),
    "X.sum(axis=1)": Op(lambda X, _: X.sum(axis=1)),
    "X.sum(axis=-1)": Op(lambda X, _: X.sum(axis=-1)),
    "X.mean()": Op(lambda X, _: X.mean()),
    "X.mean(axis=0)": Op(lambda X, _: X.mean(axis=0)),
    "X.mean(axis=1)": Op(lambda X, _: X.mean(axis=1)),
    "X.diagonal()": Op(lambda X, _: X.diagonal()),
    "X.diagonal(k)": Op(lambda X, k: X.diagonal(k), _diag_k),
    # dense results
    "X.toarray()": Op(lambda X, _: X.toarray()),
    "X.todense()": Op(lambda X, _: X.todense()),
    "X + D": Op(lambda X, D: X + D, _shaped(lambda m, n: (m, n)), dense_operand=True),
    # selection
    "X[rows]": Op(lambda X, r: X[r], _rows, skip=coo_matrix_indexing, same_class=True),
    "X[list]": Op(lambda X, r: X[[int(i) for i in r]], _rows, skip=coo_matrix_indexing, same_class=True),
    "X[a:b:s]": Op(lambda X, s: X[s], _slice, skip=coo_matrix_indexing, same_class=True),
    "X[mask]": Op(lambda X, mask: X[mask], _mask, skip=coo_matrix_indexing, same_class=True),
    "X[i]": Op(lambda X, ij: X[ij[0]], _entry, matrix_only=True, skip=coo_matrix_indexing, same_class=True),
    "X[:, cols]": Op(lambda X, c: X[:, c], _cols, skip=coo_matrix_indexing, same_class=True),
    "X[i, j]": Op(lambda X, ij: X[ij], _entry, skip=coo_matrix_indexing),
    # formats
    "X.tocsr()": Op(lambda X, _: X.tocsr(), same_class=True),
    "X.tocsc()": Op(lambda X, _: X.tocsc(), same_class=True),
    "X.tocoo()": Op(lambda X, _: X.tocoo(), same_class=True),
    # sums of matrices on one pattern
    "X + X": Op(lambda X, _: X + X),  # (scipy: COO + COO is CSR; nodegrad keeps the pattern)
    "X - 2X": Op(lambda X, _: X - X * 2.0),
    "X + Y": Op(lambda X, Y: X + Y, same_pattern=True),
    "Y - X": Op(lambda X, Y: Y - X, same_pattern=True),
    "X.multiply(Y)": Op(lambda X, Y: X.multiply(Y), same_pattern=True),
    "X + 0": Op(lambda X, _: X + 0),
    # stacking
    "vstack": Op(lambda X, _: sp.vstack([X, X * 2.0])),
    "hstack": Op(lambda X, _: sp.hstack([X * 3.0, X])),
}


def _prepare(name: str, X: Any, seed: int) -> tuple[Op, Any, Any, Any]:
    """The op, the matrix with its values in the op's domain, the operand and a cotangent
    of the result's shape (drawn from scipy's own answer)."""
    op = OPS[name]
    assume(not op.matrix_only or isinstance(X, ss.spmatrix))
    assume(not op.array_only or isinstance(X, ss.sparray))
    rng = np.random.default_rng(seed)
    X = in_domain(X, op.domain)
    operand = op.operand(rng, *X.shape)
    if op.same_pattern:
        operand = with_data(X, op.domain(rng.uniform(-2.0, 2.0, X.nnz)))
    assume(op.skip is None or not op.skip(X, operand))
    expected = scipy_answer(op.fun, X, operand)
    C = rng.normal(size=np.shape(expected))
    return op, X, operand, C


@pytest.mark.parametrize("name", sorted(OPS))
@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_forward_equals_scipy_and_gradient_equals_central_differences(name: str, X: Any, seed: int) -> None:
    op, X, operand, C = _prepare(name, X, seed)
    before = snapshot(X)
    expected = scipy_answer(op.fun, X, operand)

    # the forward, replayed: the result (a scipy matrix, or an array) is scipy's
    got = ng.replay(lambda X: op.fun(X, operand))(X)
    assert sp.issparse(got) == ss.issparse(expected)
    if ss.issparse(expected):
        assert got.shape == expected.shape and isinstance(got, ss.spmatrix) == isinstance(expected, ss.spmatrix)
        if op.same_class:
            assert type(got) is type(expected)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(dense(got), dense(expected), rtol=1e-12, atol=1e-12)

    # the value and the gradient of a scalar contraction of the result
    def loss(X: Any) -> Any:
        return contract(op.fun(X, operand), C)

    value, g = ng.value_and_grad(loss)(X)
    plain = float(np.sum(dense(expected) * C))
    assert float(value) == pytest.approx(plain, rel=1e-12, abs=1e-12)
    assert_same_pattern(g, X)
    numeric = central_difference(lambda d: float(np.sum(dense(op.fun(with_data(X, d), operand)) * C)), X.data.copy())
    np.testing.assert_allclose(g.data, numeric, rtol=1e-5, atol=1e-6)
    assert_unchanged(X, before)


DENSE_OPERAND = sorted(name for name, op in OPS.items() if op.dense_operand)


@pytest.mark.parametrize("name", DENSE_OPERAND)
@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_gradient_with_respect_to_the_dense_operand(name: str, X: Any, seed: int) -> None:
    op, X, operand, C = _prepare(name, X, seed)
    before = snapshot(X)

    def loss(X: Any, operand: Any) -> Any:
        return contract(op.fun(X, operand), C)

    gX, gw = ng.grad(loss, argnums=(0, 1))(X, operand)
    assert type(gw) is np.ndarray and gw.shape == operand.shape
    numeric = central_difference(lambda w: float(np.sum(dense(scipy_answer(op.fun, X, w)) * C)), operand)
    np.testing.assert_allclose(gw, numeric, rtol=1e-6, atol=1e-7)
    if op.closed and not (name.startswith("X.dot") and X.format == "coo"):  # (COO's dot: refused, a test below)
        # the matrix closed over (not an argument) gives the same, through scipy's own operators
        closed = ng.grad(lambda w: contract(op.fun(X, w), C))(operand)
        np.testing.assert_allclose(closed, gw, rtol=1e-13, atol=1e-14)
    assert_same_pattern(gX, X)
    assert_unchanged(X, before)


# -- independent oracles ------------------------------------------------------------------------------

# Ops that are functions of the dense matrix (duplicates summed): their gradient with
# respect to a stored value is the dense gradient at its entry. The dense function runs on an
# ndarray: nodegrad's dense ops, no sparse code.
DENSE_TWINS: dict[str, Callable[[Any, Any], Any]] = {
    "X @ w": lambda D, w: D @ w,
    "X @ W": lambda D, W: D @ W,
    "w @ X": lambda D, v: v @ D,
    "W @ X": lambda D, V: V @ D,
    "X.T @ g": lambda D, g: D.T @ g,
    "X.T @ G": lambda D, G: D.T @ G,
    "X.dot(w)": lambda D, w: D @ w,
    "X.sum()": lambda D, _: ng.sum(D),
    "X.sum(axis=0)": lambda D, _: ng.sum(D, axis=0),
    "X.sum(axis=1)": lambda D, _: ng.sum(D, axis=1),
    "X.mean()": lambda D, _: ng.mean(D),
    "X.mean(axis=0)": lambda D, _: ng.mean(D, axis=0),
    "X.mean(axis=1)": lambda D, _: ng.mean(D, axis=1),
    "X.diagonal(k)": lambda D, k: np.diagonal(D, k),
    "X[i, j]": lambda D, ij: D[ij],
}


@pytest.mark.parametrize("name", sorted(DENSE_TWINS))
@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_gradient_equals_the_dense_gradient_read_at_each_stored_entry(name: str, X: Any, seed: int) -> None:
    op, X, operand, _ = _prepare(name, X, seed)
    twin = DENSE_TWINS[name]
    # a cotangent of the dense twin's shape (an spmatrix's sum(axis) is a 2-d np.matrix: reshaped)
    C = np.random.default_rng(seed + 1).normal(size=np.shape(twin(X.toarray(), operand)))

    def dense_loss(D: np.ndarray) -> Any:
        return ng.sum(twin(D, operand) * C)

    def sparse_loss(X: Any) -> Any:
        return ng.sum(np.reshape(op.fun(X, operand), np.shape(C)) * C)

    G = ng.grad(dense_loss)(X.toarray())
    rows, cols = coordinates(X)
    g = ng.grad(sparse_loss)(X)
    np.testing.assert_allclose(g.data, G[rows, cols], rtol=1e-12, atol=1e-12)


@MORE
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3))
def test_product_gradients_equal_numpy_closed_forms(X: Any, seed: int, k: int) -> None:
    # loss = sum(C * (X @ W)) + sum(E * (V @ X)): d/d data_j = (C W^T)[r_j, c_j] + (V^T E)[r_j, c_j]
    rng = np.random.default_rng(seed)
    m, n = X.shape
    W, C = rng.normal(size=(n, k)), rng.normal(size=(m, k))
    V, E = rng.normal(size=(k, m)), rng.normal(size=(k, n))

    def loss(X: Any, W: np.ndarray, V: np.ndarray) -> Any:
        return ng.sum((X @ W) * C) + ng.sum((V @ X) * E)

    gX, gW, gV = ng.grad(loss, argnums=(0, 1, 2))(X, W, V)
    rows, cols = coordinates(X)
    expected = np.zeros(X.nnz)
    for j in range(X.nnz):  # a Python loop over the stored values
        expected[j] = C[rows[j]] @ W[cols[j]] + V[:, rows[j]] @ E[:, cols[j]]
    np.testing.assert_allclose(gX.data, expected, rtol=1e-12, atol=1e-12)
    D = X.toarray()
    np.testing.assert_allclose(gW, D.T @ C, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gV, E @ D.T, rtol=1e-12, atol=1e-12)


@MORE
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_elementwise_chain_gradient_equals_a_python_loop(X: Any, seed: int) -> None:
    # loss = sum over entries of c sin(e)^2 * 3, e an entry (its duplicates summed, as scipy's
    # sin sums them): d/dx_k = 6 c sin(e) cos(e) for each stored value x_k at that entry
    C = np.random.default_rng(seed).normal(size=X.shape)
    g = ng.grad(lambda X: (X.sin().power(2) * 3.0).multiply(C).sum())(X)
    rows, cols = coordinates(X)
    entries: dict[tuple[int, int], float] = {}
    for r, c, x in zip(rows, cols, X.data, strict=True):
        entries[(r, c)] = entries.get((r, c), 0.0) + x
    expected = [
        6.0 * C[r, c] * np.sin(entries[(r, c)]) * np.cos(entries[(r, c)]) for r, c in zip(rows, cols, strict=True)
    ]
    np.testing.assert_allclose(g.data, np.array(expected).reshape(-1), rtol=1e-12, atol=1e-13)


# -- the gradient's layout -------------------------------------------------------------------------


@MORE
@given(X=sparse_matrices())
def test_gradient_shares_the_arguments_layout_entry_by_entry(X: Any) -> None:
    # d/d data of sum(data_k * k): the gradient's k-th stored value is k, whatever the layout
    weights = np.arange(X.nnz, dtype=np.float64)
    g = ng.grad(lambda X: ng.sum(X.data * weights) + 0.0 * X.sum())(X)
    assert_same_pattern(g, X)
    np.testing.assert_array_equal(g.data, weights)
    if X.format != "coo":
        assert g.has_sorted_indices == X.has_sorted_indices


@pytest.mark.parametrize(("fmt", "is_matrix"), sorted(CLASSES))
def test_each_class_gives_a_gradient_of_its_class(fmt: str, is_matrix: bool) -> None:
    cls = CLASSES[(fmt, is_matrix)]
    X = cls(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    g = ng.grad(lambda X: ng.sum((X @ np.array([1.0, 2.0, 3.0])) ** 2))(X)
    assert type(g) is cls and g.format == fmt
    # d/dx_k sum_i (X w)_i^2 = 2 (X w)_{r_k} w_{c_k}; X w = [7, 6]
    expected = {(0, 0): 2 * 7 * 1.0, (0, 2): 2 * 7 * 3.0, (1, 1): 2 * 6 * 2.0}
    rows, cols = coordinates(X)
    np.testing.assert_array_equal(g.data, [expected[(r, c)] for r, c in zip(rows, cols, strict=True)])


def test_float32_values_give_a_float32_gradient() -> None:
    X = ss.csr_array(np.array([[1.0, 0.0], [2.0, 3.0]], dtype=np.float32))
    g = ng.grad(lambda X: ng.sum(X @ np.ones(2, np.float32)))(X)
    assert type(g) is ss.csr_array and g.data.dtype == np.float32
    np.testing.assert_array_equal(g.data, np.ones(3, np.float32))


def test_duplicates_explicit_zeros_and_unsorted_indices_are_each_their_own_value() -> None:
    # COO: (0, 1) stored twice, (1, 0) an explicit zero
    X = ss.coo_array((np.array([1.0, 2.0, 0.0, 4.0]), (np.array([0, 0, 1, 1]), np.array([1, 1, 0, 2]))), shape=(2, 3))
    w = np.array([10.0, 20.0, 30.0])
    g = ng.grad(lambda X: ng.sum((X @ w) * np.array([1.0, -1.0])))(X)
    np.testing.assert_array_equal(g.data, [20.0, 20.0, -10.0, -30.0])
    np.testing.assert_array_equal(g.row, X.row)
    # CSR with unsorted indices: row 0 stores columns 2 then 0
    U = ss.csr_array((np.array([5.0, 6.0, 7.0]), np.array([2, 0, 1], np.int32), np.array([0, 2, 3], np.int32)), (2, 3))
    U.has_sorted_indices = False
    gU = ng.grad(lambda U: ng.sum(U @ w))(U)
    np.testing.assert_array_equal(gU.indices, [2, 0, 1])
    np.testing.assert_array_equal(gU.data, [30.0, 10.0, 20.0])
    np.testing.assert_array_equal(U.indices, [2, 0, 1])  # the argument is left as it was


def test_an_empty_matrix_has_an_empty_gradient() -> None:
    for cls in CLASSES.values():
        X = cls((3, 2))
        value, g = ng.value_and_grad(lambda X: ng.sum(X @ np.ones(2)) + X.sum())(X)
        assert float(value) == 0.0
        assert type(g) is cls and g.shape == (3, 2) and g.nnz == 0


# -- the sparse namespace: building matrices from traced values -----------------------------------------


@pytest.mark.parametrize("kind", ["csr_array", "csc_array", "coo_array", "csr_matrix", "csc_matrix", "coo_matrix"])
@SOME
@given(X=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_a_matrix_built_from_traced_values_matches_scipy(kind: str, X: Any, seed: int) -> None:
    cls = getattr(ss, kind)
    target = cls(X)  # scipy's conversion of the drawn matrix: a pattern of that class
    if target.format == "coo":
        where: tuple = ((target.row, target.col),)
    else:
        where = (target.indices, target.indptr)
    rng = np.random.default_rng(seed)
    values = rng.normal(size=target.nnz)
    w, C = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[0])
    build = getattr(sp, kind)

    def f(values: np.ndarray, w: np.ndarray) -> Any:
        return ng.sum((build((values, *where), shape=X.shape) @ w) * C)

    expected = cls((values, *where), shape=X.shape)
    value, (gv, gw) = ng.value_and_grad(f, argnums=(0, 1))(values, w)
    assert float(value) == pytest.approx(float(np.sum((expected @ w) * C)), rel=1e-12, abs=1e-12)
    rows, cols = coordinates(expected)
    np.testing.assert_allclose(gv, C[rows] * w[cols], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gw, expected.T @ C, rtol=1e-12, atol=1e-14)
    built = ng.replay(lambda v: build((v, *where), shape=X.shape))(values)
    assert type(built) is cls
    np.testing.assert_array_equal(built.toarray(), expected.toarray())
    # plain inputs: scipy's own constructor
    assert type(build((values, *where), shape=X.shape)) is cls


@SOME
@given(
    rows=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    data=st.data(),
    kind=st.sampled_from(["csr_array", "csc_array", "csr_matrix", "csc_matrix"]),
)
def test_a_compressed_matrix_built_from_coordinates_sums_duplicates_as_scipy(
    rows: list[int], data: Any, kind: str
) -> None:
    cols = data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows)))
    r, c = np.array(rows), np.array(cols)
    values = np.linspace(0.5, 2.0, len(rows))
    cls, build = getattr(ss, kind), getattr(sp, kind)
    W = np.arange(6.0).reshape(3, 2) - 2.0
    expected = cls((values, (r, c)), shape=(4, 3))
    got = ng.replay(lambda v: build((v, (r, c)), shape=(4, 3)) @ W)(values)
    np.testing.assert_allclose(got, expected @ W, rtol=1e-13, atol=1e-13)
    g = ng.grad(lambda v: ng.sum(build((v, (r, c)), shape=(4, 3)) @ W))(values)
    np.testing.assert_allclose(g, W.sum(axis=1)[c], rtol=1e-13)


@SOME
@given(
    a=st.lists(st.floats(-2, 2), min_size=1, max_size=5),
    offset=st.integers(-2, 2),
    fmt=st.sampled_from([None, "csr", "csc", "coo"]),
)
def test_diags_from_traced_diagonals(a: list[float], offset: int, fmt: str | None) -> None:
    d = np.array(a)
    size = d.size + abs(offset)
    expected = ss.diags(d, offset, format=fmt)
    got = ng.replay(lambda d: sp.diags(d, offset, format=fmt))(d)
    assert isinstance(got, ss.spmatrix) and got.shape == (size, size)
    np.testing.assert_array_equal(got.toarray(), expected.toarray())
    w = np.arange(1.0, size + 1)
    g = ng.grad(lambda d: ng.sum(sp.diags(d, offset, format=fmt) @ w))(d)
    np.testing.assert_array_equal(g, w[max(offset, 0) : max(offset, 0) + d.size])


def test_diags_of_several_diagonals_with_a_shape() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    expected = ss.diags([a, b], [0, 1], shape=(3, 4)).toarray()
    got = ng.replay(lambda a, b: sp.diags([a, b], [0, 1], shape=(3, 4)))(a, b)
    np.testing.assert_array_equal(got.toarray(), expected)
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    ga, gb = ng.grad(lambda a, b: ng.sum(sp.diags([a, b], [0, 1], shape=(3, 4)) @ w), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, [1.0, 10.0, 100.0])
    np.testing.assert_array_equal(gb, [10.0, 100.0, 1000.0])


def test_diags_array_from_traced_diagonals() -> None:
    d = np.array([3.0, 4.0])
    got = ng.replay(lambda d: sp.diags_array(d, offsets=1))(d)
    np.testing.assert_array_equal(got.toarray(), ss.diags_array(d, offsets=1).toarray())
    g = ng.grad(lambda d: sp.diags_array(d, offsets=1).sum())(d)
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_diags_array_of_plain_values_is_scipys() -> None:
    d = np.array([3.0, 4.0])
    got = sp.diags_array(d, offsets=1)
    assert type(got) is type(ss.diags_array(d, offsets=1))
    np.testing.assert_array_equal(got.toarray(), ss.diags_array(d, offsets=1).toarray())


@pytest.mark.parametrize("vertical", [True, False], ids=["vstack", "hstack"])
@SOME
@given(X=sparse_matrices(), Y=sparse_matrices(), seed=st.integers(0, 2**32 - 1))
def test_vstack_and_hstack_of_two_arguments(vertical: bool, X: Any, Y: Any, seed: int) -> None:
    stack, scipys = (sp.vstack, ss.vstack) if vertical else (sp.hstack, ss.hstack)
    if vertical:  # Y's columns (rows) made to fit X's, keeping Y's class
        Y = type(Y)(ss.hstack([Y, ss.csr_array((Y.shape[0], X.shape[1]))]).tocsr()[:, : X.shape[1]])
    else:
        Y = type(Y)(ss.vstack([Y, ss.csr_array((X.shape[0], Y.shape[1]))]).tocsr()[: X.shape[0]])
    expected = scipys([X, Y])
    got = ng.replay(lambda X, Y: stack([X, Y]))(X, Y)
    np.testing.assert_array_equal(got.toarray(), expected.toarray())
    C = np.random.default_rng(seed).normal(size=expected.shape)
    gX, gY = ng.grad(lambda X, Y: stack([X, Y]).multiply(C).sum(), argnums=(0, 1))(X, Y)
    assert_same_pattern(gX, X)
    assert_same_pattern(gY, Y)
    top = C[: X.shape[0], : X.shape[1]]
    rest = C[X.shape[0] :, :] if vertical else C[:, X.shape[1] :]
    np.testing.assert_allclose(gX.data, top[coordinates(X)], rtol=1e-13)
    np.testing.assert_allclose(gY.data, rest[coordinates(Y)], rtol=1e-13)


def test_issparse() -> None:
    X = ss.csr_array(np.eye(2))
    seen = []

    def f(X: Any) -> Any:
        seen.append(sp.issparse(X))
        return X.sum()

    ng.grad(f)(X)
    assert seen == [True]
    assert sp.issparse(X) and not sp.issparse(np.eye(2)) and not sp.issparse([[1.0]])


# -- regressions of bugs found (fixed meanwhile), and library bugs with a minimal reproduction --


@pytest.mark.parametrize("cls", [ss.csr_array, ss.coo_matrix])
def test_toarray_of_a_matrix_storing_a_leading_run_of_entries(cls: type) -> None:
    X = cls(np.array([[1.0, 2.0], [0.0, 0.0]]))  # stored: positions 0 and 1 of 4
    got = ng.replay(lambda X: X.toarray())(X)
    np.testing.assert_array_equal(got, X.toarray())
    g = ng.grad(lambda X: ng.sum(X.toarray() * np.array([[1.0, 2.0], [3.0, 4.0]])))(X)
    np.testing.assert_array_equal(g.data, [1.0, 2.0])


def test_diagonal_of_a_matrix_storing_part_of_its_diagonal() -> None:
    X = ss.csr_array(np.array([[1.0, 0.0], [0.0, 0.0]]))
    np.testing.assert_array_equal(ng.replay(lambda X: X.diagonal())(X), [1.0, 0.0])
    g = ng.grad(lambda X: ng.sum(X.diagonal() * np.array([3.0, 4.0])))(X)
    np.testing.assert_array_equal(g.data, [3.0])


def test_power_zero_is_refused_as_scipy_refuses_it() -> None:
    X = ss.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    with pytest.raises(NotImplementedError, match="zero power"):
        X.power(0)
    with pytest.raises(NotImplementedError, match="zero power"):
        ng.grad(lambda X: X.power(0).sum())(X)


def test_a_differentiated_matrix_is_not_kept_alive() -> None:
    X = ss.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    ref = weakref.ref(X)
    g = ng.grad(lambda X: ng.sum(X @ np.ones(3)))(X)
    np.testing.assert_array_equal(g.data, [1.0, 1.0, 1.0])
    del X, g
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("cls", [ss.csr_array, ss.csc_array, ss.coo_matrix])
def test_products_with_a_dense_matrix_of_a_matrix_storing_nothing(cls: type) -> None:
    X = cls((3, 2))
    W, V = np.ones((2, 4)), np.ones((5, 3))
    value, g = ng.value_and_grad(lambda X: ng.sum(X @ W) + ng.sum(V @ X))(X)
    assert float(value) == 0.0
    assert type(g) is cls and g.shape == (3, 2) and g.nnz == 0
    gW = ng.grad(lambda W: ng.sum(X @ W))(W)
    np.testing.assert_array_equal(gW, np.zeros((2, 4)))
    gV = ng.grad(lambda V: ng.sum(V @ X))(V)
    np.testing.assert_array_equal(gV, np.zeros((5, 3)))
    gX, gW, gV = ng.grad(lambda X, W, V: ng.sum(X @ W) + ng.sum(V @ X), argnums=(0, 1, 2))(X, W, V)
    assert type(gX) is cls and gX.nnz == 0
    np.testing.assert_array_equal(gW, np.zeros((2, 4)))
    np.testing.assert_array_equal(gV, np.zeros((5, 3)))


# functions of the entries: an entry's duplicates are summed first (scipy's sum_duplicates), the
# result is on the deduplicated pattern, of the argument's class and format
NONLINEAR = {
    "X.sin()": lambda X, _: X.sin(),
    "np.sin(X)": lambda X, _: np.sin(X),
    "X.tanh()": lambda X, _: X.tanh(),
    "np.square(X)": lambda X, _: np.square(X),
    "X.power(2)": lambda X, _: X.power(2),
    "X.power(3)": lambda X, _: X.power(3),
    "abs(X)": lambda X, _: abs(X),
    "np.absolute(X)": lambda X, _: np.absolute(X),
    "X.multiply(X)": lambda X, _: X.multiply(X),
    "X.multiply(Y)": lambda X, Y: X.multiply(Y),
}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        (name, cls)
        for name in NONLINEAR
        for cls in (ss.coo_array, ss.coo_matrix)
        if not (name == "np.square(X)" and cls is ss.coo_matrix)  # (an spmatrix's np.square: X * X, a product)
    ],
)
def test_elementwise_functions_of_duplicate_entries_are_scipys(name: str, cls: type) -> None:
    fun = NONLINEAR[name]
    # (0, 1) stored twice (0.5 and -0.75), (0, 0) once, (1, 0) once
    X = cls((np.array([0.5, 1.25, -0.75, -2.0]), (np.array([0, 0, 0, 1]), np.array([1, 0, 1, 0]))), shape=(2, 2))
    Y = with_data(X, np.array([2.0, 3.0, 5.0, 7.0]))  # another matrix on X's pattern
    expected = fun(X.copy(), Y.copy())  # scipy: f(0.5 - 0.75) at (0, 1)
    got = ng.replay(lambda X: fun(X, Y))(X)
    np.testing.assert_allclose(got.toarray(), expected.toarray(), rtol=1e-14)
    assert type(got) is cls and got.nnz == 3  # deduplicated, in scipy's canonical order
    canonical = X.copy()
    canonical.sum_duplicates()
    np.testing.assert_array_equal(got.row, canonical.row)
    np.testing.assert_array_equal(got.col, canonical.col)
    C = np.array([[1.0, -2.0], [3.0, 0.5]])
    g = ng.grad(lambda X: fun(X, Y).multiply(C).sum())(X)
    assert_same_pattern(g, X)
    numeric = central_difference(lambda d: float(np.sum(fun(with_data(X, d), Y.copy()).toarray() * C)), X.data.copy())
    np.testing.assert_allclose(g.data, numeric, rtol=1e-6, atol=1e-8)
    assert g.data[0] == g.data[2]  # each duplicate: the derivative at the summed entry
    # and the independent closed form of sin: d/dx_k sum C sin(e) = C[r_k, c_k] cos(e_{r_k c_k})
    if name == "X.sin()":
        e = X.toarray()
        np.testing.assert_allclose(g.data, (C * np.cos(e))[X.row, X.col], rtol=1e-14)


LINEAR = {
    "-X": lambda X: -X,
    "np.negative(X)": lambda X: np.negative(X),
    "np.conj(X)": lambda X: np.conj(X),
    "np.deg2rad(X)": lambda X: np.deg2rad(X),
    "np.rad2deg(X)": lambda X: np.rad2deg(X),
    "X * s": lambda X: X * 2.5,
    "s * X": lambda X: -1.5 * X,
    "X / s": lambda X: X / 4.0,
    "X.multiply(s)": lambda X: X.multiply(1.7),
    "X.multiply(D)": lambda X: X.multiply(np.array([[1.0, -2.0], [3.0, 0.5]])),
    "X.multiply(row)": lambda X: X.multiply(np.array([2.0, -1.0])),
}


@pytest.mark.parametrize("cls", [ss.coo_array, ss.coo_matrix])
@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_functions_of_duplicate_entries_keep_each_stored_value(name: str, cls: type) -> None:
    fun = LINEAR[name]
    X = cls((np.array([0.5, 1.25, -0.75, -2.0]), (np.array([0, 0, 0, 1]), np.array([1, 0, 1, 0]))), shape=(2, 2))
    expected = fun(X.copy())
    got = ng.replay(fun)(X)
    np.testing.assert_allclose(got.toarray(), expected.toarray(), rtol=1e-14)
    assert type(got) is cls and got.nnz == 4  # the duplicates kept, each its own value
    np.testing.assert_array_equal(got.row, X.row)
    np.testing.assert_array_equal(got.col, X.col)
    for k in range(X.nnz):  # each stored value: f of a matrix storing only it, read at its entry
        alone = cls((X.data[k : k + 1], (X.row[k : k + 1], X.col[k : k + 1])), shape=X.shape)
        assert got.data[k] == pytest.approx(fun(alone).toarray()[X.row[k], X.col[k]], rel=1e-14)
    C = np.array([[1.0, -2.0], [3.0, 0.5]])
    g = ng.grad(lambda X: fun(X).multiply(C).sum())(X)
    assert_same_pattern(g, X)
    numeric = central_difference(lambda d: float(np.sum(fun(with_data(X, d)).toarray() * C)), X.data.copy())
    np.testing.assert_allclose(g.data, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("part", "slope"),
    [(np.real, 1.0), (np.imag, 0.0), (lambda X: X.real, 1.0), (lambda X: X.imag, 0.0)],
    ids=["np.real(X)", "np.imag(X)", "X.real", "X.imag"],
)
def test_real_and_imaginary_parts_keep_each_stored_value(part: Callable[[Any], Any], slope: float) -> None:
    X = ss.coo_array((np.array([0.5, 1.25, -0.75]), (np.array([0, 0, 0]), np.array([1, 0, 1]))), shape=(1, 2))
    expected = part(X.copy())  # scipy's: X's pattern, duplicates kept
    got = ng.replay(part)(X)
    assert type(got) is ss.coo_array and got.nnz == 3
    np.testing.assert_array_equal(got.data, expected.data)
    C = np.array([[2.0, -3.0]])
    g = ng.grad(lambda X: part(X).multiply(C).sum())(X)
    np.testing.assert_array_equal(g.data, slope * C[0, X.col])


def test_products_of_a_one_row_coo_array() -> None:
    X = ss.coo_array(np.array([[1.0, 2.0]]))
    got = ng.replay(lambda X: X.sum(axis=1))(X)
    assert np.shape(got) == (1,)
    np.testing.assert_array_equal(got, X.sum(axis=1))  # [3.0], shape (1,)
    g = ng.grad(lambda w: ng.sum(X @ w))(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])
    g = ng.grad(lambda v: ng.sum(v @ X.T))(np.array([3.0, 4.0]))  # X.T: one column
    np.testing.assert_array_equal(g, [1.0, 2.0])
    gX, gw = ng.grad(lambda X, w: ng.sum(X @ w), argnums=(0, 1))(X, np.array([3.0, 4.0]))
    np.testing.assert_array_equal(gX.data, [3.0, 4.0])
    np.testing.assert_array_equal(gw, [1.0, 2.0])
    gX = ng.grad(lambda X: ng.sum(X.sum(axis=1) * 5.0) + ng.sum(X.T @ np.array([2.0])))(X)
    np.testing.assert_array_equal(gX.data, [7.0, 7.0])


@pytest.mark.parametrize("cls", [ss.coo_array, ss.coo_matrix])
def test_dot_of_a_closed_over_coo_matrix_is_refused_and_its_product_works(cls: type) -> None:
    # scipy's COO .dot raises TypeError for an operand it cannot read instead of returning
    # NotImplemented: it cannot give way to the traced operand, as its operators do
    X = cls(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    w = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ArenaError, match=r"\.dot") as info:
        ng.grad(lambda w: ng.sum(X.dot(w) * np.array([1.0, 10.0])))(w)
    message = str(info.value)
    assert "closed over" in message and "operators (X @ w" in message
    np.testing.assert_array_equal(ng.grad(lambda w: ng.sum((X @ w) * np.array([1.0, 10.0])))(w), [1.0, 30.0, 2.0])
    # as an argument (a SparseMatrix inside) its .dot takes the traced operand
    g = ng.grad(lambda X, w: ng.sum(X.dot(w) * np.array([1.0, 10.0])), argnums=1)(X, w)
    np.testing.assert_array_equal(g, [1.0, 30.0, 2.0])
