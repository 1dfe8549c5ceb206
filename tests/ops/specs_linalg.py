"""Specs for the linalg family: matmul, einsum, svdvals, eigvalsh, cholesky, inv, solve, det, logabsdet and
signdet (slogdet); eigh_vectors, svd_u, svd_vh, qr_q, qr_r, pinv, eigvals, eig_vectors, roots and
convolve; tensordot, dot,
outer, eigh, svd, qr, lstsq, matrix_power, tensorsolve, tensorinv and eig (composites); COMPLEX_CASES: every
linalg op and numpy linalg function with complex operands, for test_linalg.py; and COMPLEX: the holomorphic ones,
for test_complex.py too.

The sign of an eigenvector or of a pair of singular vectors is arbitrary (for complex
vectors, the phase), so their specs differentiate functions of the vectors that do not
depend on it (squares and moduli, ``v diag(c) v^H``, ``u_i v_i^H``, ``V f(w) V^-1``) at
matrices with well-separated values, where those are smooth."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.engine.record import record
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, LinAlgError, NoGradientError, NonFiniteError, ShapeError
from nodegrad.ops.linalg import roots, tensorinv, tensorsolve
from nodegrad.ops.linalg.decompositions import READ_TRIANGLE
from nodegrad.ops.linalg.products import convolve
from tests.ops.harness import BadCall, Case, ComplexSpec, diff_mask, draw_operand, well_separated_matrices
from tests.strategies import float_arrays, floats, grid, shapes

__all__ = [
    "BAD_CALLS",
    "BROADCASTING",
    "COMPLEX",
    "COMPLEX_CASES",
    "COMPOSITES",
    "SPECS",
    "complex_matrices",
    "eig_matrices",
    "hermitian_matrices",
    "polynomials",
]


@st.composite
def _matmul_cases(draw: st.DrawFn, batch_broadcast: bool = False) -> Case:
    # 1-D and 2-D operands, and broadcast batch dimensions, as np.matmul's signature allows.
    shape_pairs = hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=4)
    if batch_broadcast:  # the operands' batch dimensions differ: one is stretched or extended
        shape_pairs = shape_pairs.filter(lambda b: b.input_shapes[0][:-2] != b.input_shapes[1][:-2])
    shape_x, shape_y = draw(shape_pairs).input_shapes
    x, y = draw(float_arrays(shape_x)), draw(float_arrays(shape_y))
    diff = (True, True) if batch_broadcast else draw(diff_mask(2))
    return Case(ng.matmul, np.matmul, (x, y), diff, desc=f"matmul {shape_x} @ {shape_y}")


# Every index has one size in all operands; '...' parts broadcast against each other.
_EINSUM = [
    "ij,jk->ik",  # a matrix product
    "ij,jk",  # implicit output: the indices that appear once, in order
    "i,i->",  # inner product
    "i,j->ij",  # outer product
    "ij->ji",  # a transpose
    "ijk->j",  # a sum over two axes
    "ij,k->ik",  # j is summed inside operand 0 alone
    "ij,jk,kl->il",  # three operands
    "bij,bjk->bik",  # batched products
    "...ij,...jk->...ik",  # broadcast batch dimensions
    "...i,...i->...",
    "i...,i->...",  # an index before the ellipsis
    "...,...->...",  # a broadcast elementwise product
    "ii->i",  # a diagonal
    "ii",  # a trace (implicit output)
    "iij,jk->ik",  # a diagonal inside a product
    "ij,jj->i",  # the other operand's diagonal
]


@st.composite
def _einsum_cases(draw: st.DrawFn, broadcast: bool = False) -> Case:
    patterns = [p for p in _EINSUM if p.count("...") > 1] if broadcast else _EINSUM
    subscripts = draw(st.sampled_from(patterns))
    inputs = subscripts.partition("->")[0].split(",")
    sizes = {c: draw(st.integers(1, 4)) for c in sorted(set(subscripts) - set(".,->"))}
    n_dots = sum("..." in s for s in inputs)
    ellipsis = iter(
        draw(
            hnp.mutually_broadcastable_shapes(num_shapes=max(n_dots, 1), max_dims=2, max_side=3).filter(
                lambda b: not broadcast or len(set(b.input_shapes)) > 1
            )
        ).input_shapes
    )
    operands = []
    for s in inputs:
        head, dots, tail = s.partition("...")
        shape = (*(sizes[c] for c in head), *(next(ellipsis) if dots else ()), *(sizes[c] for c in tail))
        operands.append(draw_operand(draw, shape, floats()))
    diff = (True,) * len(operands) if broadcast else draw(diff_mask(len(operands)))
    return Case(
        lambda *ops: ng.einsum(subscripts, *ops),
        lambda *ops: np.einsum(subscripts, *ops),
        tuple(operands),
        diff,
        desc=f"einsum {subscripts!r} {[np.shape(op) for op in operands]}",
    )


@st.composite
def _tensordot_cases(draw: st.DrawFn) -> Case:
    # Contracted sizes c; free axes fa (of a) and fb (of b); a's and b's axes in any order.
    c = draw(shapes(max_dims=2))
    fa, fb = draw(shapes(max_dims=2)), draw(shapes(max_dims=2))
    k = len(c)
    if draw(st.booleans()):
        shape_a, shape_b = (*fa, *c), (*c, *fb)
        axes: Any = k
    else:
        perm_a = draw(st.permutations(range(len(fa) + k)))
        perm_b = draw(st.permutations(range(k + len(fb))))
        shape_a = tuple((*fa, *c)[p] for p in perm_a)
        shape_b = tuple((*c, *fb)[p] for p in perm_b)
        axes_a = [perm_a.index(len(fa) + j) for j in range(k)]
        axes_b = [perm_b.index(j) for j in range(k)]
        if draw(st.booleans()):  # negative axes too
            axes_a = [a - len(shape_a) for a in axes_a]
        axes = (axes_a, axes_b)
    a, b = draw(float_arrays(shape_a)), draw(float_arrays(shape_b))
    return Case(
        lambda a, b: ng.tensordot(a, b, axes=axes),
        lambda a, b: np.tensordot(a, b, axes=axes),
        (a, b),
        draw(diff_mask(2)),
        desc=f"tensordot {shape_a} {shape_b} axes={axes}",
    )


@st.composite
def _dot_cases(draw: st.DrawFn) -> Case:
    # np.dot: a scalar factor; else a's last axis against b's only or second-to-last axis.
    nda, ndb = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    shape_a, shape_b = draw(shapes(min_dims=nda, max_dims=nda)), draw(shapes(min_dims=ndb, max_dims=ndb))
    if nda and ndb:
        shape_b = (*shape_b[:-2], shape_a[-1], *shape_b[-1:]) if ndb > 1 else (shape_a[-1],)
    a, b = draw_operand(draw, shape_a, floats()), draw_operand(draw, shape_b, floats())
    return Case(ng.dot, np.dot, (a, b), draw(diff_mask(2)), desc=f"dot {shape_a} {shape_b}")


@st.composite
def _outer_cases(draw: st.DrawFn) -> Case:
    a, b = draw(float_arrays(shapes(max_dims=2))), draw(float_arrays(shapes(max_dims=2)))
    return Case(ng.outer, np.outer, (a, b), draw(diff_mask(2)), desc=f"outer {a.shape} {b.shape}")


@st.composite
def _convolve_cases(draw: st.DrawFn) -> Case:
    a = draw(float_arrays(st.tuples(st.integers(1, 7))))
    v = draw(float_arrays(st.tuples(st.integers(1, 7))))
    return Case(convolve, np.convolve, (a, v), draw(diff_mask(2)), desc=f"convolve {a.shape} {v.shape}")


@st.composite
def _svdvals_cases(draw: st.DrawFn) -> Case:
    batch = draw(shapes(max_dims=1, max_side=3))
    shape = (*batch, draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    x = well_separated_matrices(draw, shape)
    return Case(ng.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), (x,), (True,), desc=f"svdvals {shape}")


def _square_stack(draw: st.DrawFn, max_batch: int = 1) -> np.ndarray:
    """Square matrices (a stack of them, sometimes) with singular values in [0.2, 3]: far
    from singular, so inverses, solves and determinants are smooth where drawn."""
    batch = draw(shapes(max_dims=max_batch, max_side=3))
    n = draw(st.integers(1, 4))
    return well_separated_matrices(draw, (*batch, n, n))


@st.composite
def _inv_cases(draw: st.DrawFn) -> Case:
    x = _square_stack(draw)
    return Case(ng.inv, np.linalg.inv, (x,), (True,), desc=f"inv {x.shape}")


@st.composite
def _det_cases(draw: st.DrawFn) -> Case:
    x = _square_stack(draw)
    return Case(ng.det, np.linalg.det, (x,), (True,), desc=f"det {x.shape}")


@st.composite
def _logabsdet_cases(draw: st.DrawFn) -> Case:
    x = _square_stack(draw)
    return Case(lambda x: ng.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], (x,), (True,), desc=f"slogdet {x.shape}")


def _unread(draw: st.DrawFn, sym: np.ndarray, lower: bool, hermitian: bool = False) -> np.ndarray:
    """``sym`` with entries of its own added to the triangle numpy does not read (the upper
    one when it reads the ``lower``), and for a ``hermitian`` (complex) matrix imaginary
    parts on the diagonal, which LAPACK ignores: the function numpy evaluates does not
    depend on them, and its gradient must be zero there."""
    n = sym.shape[-1]
    junk = draw(float_arrays(sym.shape))
    if hermitian:
        junk = junk + 1j * draw(float_arrays(sym.shape))
    unread = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    out = sym + junk * unread
    if hermitian:
        out = out + 1j * np.imag(junk) * np.eye(n)
    return out


def _symmetric_case(draw: st.DrawFn, ng_fn: Any, np_fn: Any, indefinite: bool, lower: bool, **kwargs: Any) -> Case:
    """A symmetric U diag(e) U^T, |e| in [0.2, 3] and 0.2 apart: positive definite, or with
    signs alternating (``indefinite``; the eigenvalues stay distinct), with entries in the
    triangle numpy does not read (see :func:`_unread`): central differences of numpy's
    function see it reading the other, and the gradient must be that function's."""
    u, s, _ = np.linalg.svd(_square_stack(draw))
    if indefinite:
        s = s * np.where(np.arange(s.shape[-1]) % 2 == 0, 1.0, -1.0)
    a = _unread(draw, np.matmul(u * s[..., None, :], np.swapaxes(u, -1, -2)), lower)
    return Case(
        lambda a: ng_fn(a, **kwargs),
        lambda a: np_fn(a, **kwargs),
        (a,),
        (True,),
        desc=f"{np_fn.__name__} {a.shape} {kwargs}",
    )


@st.composite
def _cholesky_cases(draw: st.DrawFn) -> Case:
    upper = draw(st.booleans())
    return _symmetric_case(draw, ng.cholesky, np.linalg.cholesky, False, not upper, upper=upper)


@st.composite
def _eigvalsh_cases(draw: st.DrawFn) -> Case:
    uplo = draw(st.sampled_from(["L", "U"]))
    return _symmetric_case(draw, ng.eigvalsh, np.linalg.eigvalsh, True, uplo == "L", UPLO=uplo)


@st.composite
def _read_triangle_cases(draw: st.DrawFn, complex_: bool = False) -> Case:
    """The symmetric (or, of a complex matrix, Hermitian or complex symmetric) matrix read
    from one triangle, against numpy's where of the triangle and its mirror."""
    batch = draw(shapes(max_dims=1, max_side=2))
    n = draw(st.integers(1, 4))
    x = draw(float_arrays((*batch, n, n)))
    if complex_:
        x = x + 1j * draw(float_arrays((*batch, n, n)))
    lower, hermitian = draw(st.booleans()), draw(st.booleans())

    def ref(x: Any) -> Any:
        flipped = np.swapaxes(np.conj(x) if hermitian else x, -1, -2)
        kept = np.tri(n, dtype=bool) if lower else np.tri(n, dtype=bool).T
        read = np.where(kept, x, flipped)
        return np.where(np.eye(n, dtype=bool), np.real(read), read) if hermitian and complex_ else read

    return Case(
        lambda x: record(READ_TRIANGLE, x, lower, hermitian),
        ref,
        (x,),
        (True,),
        desc=f"read_triangle {x.shape} lower={lower} hermitian={hermitian}",
    )


@st.composite
def _solve_cases(draw: st.DrawFn, broadcast: bool = False) -> Case:
    # b a vector (1-D), or columns (..., n, k); batch axes of a and b broadcast together.
    a = _square_stack(draw, max_batch=2)
    n = a.shape[-1]
    if draw(st.booleans()) and not broadcast:
        b_shape: tuple[int, ...] = (n,)
    else:
        batch = a.shape[:-2]
        if broadcast:  # b's batch differs from a's: stretched from 1, or fewer axes
            batch = draw(st.sampled_from([tuple(1 for _ in batch), batch[1:], (2, *batch)]))
        b_shape = (*batch, n, draw(st.integers(1, 3)))
    b = draw(float_arrays(b_shape))
    diff = (True, True) if broadcast else draw(diff_mask(2))
    return Case(ng.solve, np.linalg.solve, (a, b), diff, desc=f"solve {a.shape} {b.shape}")


@st.composite
def _eigh_cases(draw: st.DrawFn, part: str = "both") -> Case:
    """Of a symmetric matrix with distinct eigenvalues, entries in the triangle not read
    (as for eigvalsh): the eigenvalues, the squares of the eigenvectors' entries or
    ``v diag(c) v^T``."""
    uplo = draw(st.sampled_from(["L", "U"]))
    a = _symmetric_case(draw, ng.eigvalsh, np.linalg.eigvalsh, True, uplo == "L").values[0]
    kind = draw(st.sampled_from(["squares", "weighted outer"] if part == "vectors" else ["squares", "values"]))
    c = draw(float_arrays((a.shape[-1],)))

    def of(eigh: Any) -> Any:
        def fn(x: Any) -> Any:
            w, v = eigh(x, UPLO=uplo)
            if kind == "values":
                return w
            if kind == "squares":
                return v**2
            return np.matmul(v * c.astype(x.dtype), np.swapaxes(v, -1, -2))

        return fn

    return Case(of(ng.eigh), of(np.linalg.eigh), (a,), (True,), desc=f"eigh {a.shape} UPLO={uplo} {kind}")


def _svd_matrix(draw: st.DrawFn) -> np.ndarray:
    batch = draw(shapes(max_dims=1, max_side=3))
    return well_separated_matrices(draw, (*batch, draw(st.integers(1, 4)), draw(st.integers(1, 4))))


@st.composite
def _svd_cases(draw: st.DrawFn, part: str = "any") -> Case:
    """Squares of the first min(m, n) singular vectors (U's columns, Vh's rows), the
    products ``u_i v_i^T`` summed with weights, or the singular values."""
    x = _svd_matrix(draw)
    k = min(x.shape[-2:])
    # full_matrices=True with m != n adds vectors that are not unique (tested on their own).
    full = x.shape[-1] == x.shape[-2] and draw(st.booleans())
    kinds = {"u": ["u squares", "pairs"], "vh": ["vh squares", "pairs"], "any": ["u squares", "vh squares", "values"]}
    kind = draw(st.sampled_from(kinds[part]))
    c = draw(float_arrays((k,)))

    def of(svd: Any) -> Any:
        def fn(x: Any) -> Any:
            u, s, vh = svd(x, full_matrices=full)
            u, vh = u[..., :, :k], vh[..., :k, :]
            if kind == "u squares":
                return u**2
            if kind == "vh squares":
                return vh**2
            if kind == "pairs":
                return np.matmul(u * c.astype(x.dtype), vh)
            return s

        return fn

    return Case(of(ng.svd), of(np.linalg.svd), (x,), (True,), desc=f"svd {x.shape} full_matrices={full} {kind}")


@st.composite
def _qr_cases(draw: st.DrawFn, part: str = "any") -> Case:
    """Q or R of a matrix with m >= n and full column rank (numpy's signs: a smooth branch)."""
    batch = draw(shapes(max_dims=1, max_side=3))
    n = draw(st.integers(1, 3))
    x = well_separated_matrices(draw, (*batch, n + draw(st.integers(0, 2)), n))
    which = {"q": "Q", "r": "R"}.get(part) or draw(st.sampled_from(["Q", "R", "mode r"]))
    if which == "mode r":
        return Case(lambda x: ng.qr(x, mode="r"), lambda x: np.linalg.qr(x, mode="r"), (x,), (True,), f"qr r {x.shape}")
    index = 0 if which == "Q" else 1
    return Case(lambda x: ng.qr(x)[index], lambda x: np.linalg.qr(x)[index], (x,), (True,), f"qr {x.shape} {which}")


@st.composite
def _pinv_cases(draw: st.DrawFn) -> Case:
    x = _svd_matrix(draw)
    return Case(ng.pinv, np.linalg.pinv, (x,), (True,), desc=f"pinv {x.shape}")


@st.composite
def _lstsq_cases(draw: st.DrawFn) -> Case:
    """The solution (any m, n: of least norm when m < n) or the residuals (m > n)."""
    n = draw(st.integers(1, 3))
    m = draw(st.integers(1, 5))
    a = well_separated_matrices(draw, (m, n))
    b = draw(float_arrays((m,) if draw(st.booleans()) else (m, draw(st.integers(1, 3)))))
    index = draw(st.sampled_from([0, 1] if m > n else [0]))
    return Case(
        lambda a, b: ng.lstsq(a, b)[index],
        lambda a, b: np.linalg.lstsq(a, b)[index],
        (a, b),
        draw(diff_mask(2)),
        desc=f"lstsq {a.shape} {b.shape} part {index}",
    )


@st.composite
def _matrix_power_cases(draw: st.DrawFn) -> Case:
    x = _square_stack(draw)
    n = draw(st.sampled_from([-3, -2, -1, 1, 2, 3, 4]))
    return Case(
        lambda x: ng.matrix_power(x, n),
        lambda x: np.linalg.matrix_power(x, n),
        (x,),
        (True,),
        desc=f"matrix_power {x.shape} {n}",
    )


def _factored_shape(draw: st.DrawFn, size: int) -> tuple[int, ...]:
    """A shape of ``size`` elements: ``(size,)``, or two factors of it."""
    pairs = [(d, size // d) for d in range(2, size) if size % d == 0]
    return draw(st.sampled_from([(size,), *pairs]))


@st.composite
def _tensorsolve_cases(draw: st.DrawFn) -> Case:
    size = draw(st.sampled_from([1, 2, 3, 4, 6]))
    b_shape, x_shape = _factored_shape(draw, size), _factored_shape(draw, size)
    a = well_separated_matrices(draw, (size, size)).reshape(*b_shape, *x_shape)
    axes = None
    if len(x_shape) == 2 and draw(st.booleans()):  # x's first axis moved to the front, and named
        a, axes = np.moveaxis(a, len(b_shape), 0), (0,)
    b = draw(float_arrays(b_shape))
    return Case(
        lambda a, b: tensorsolve(a, b, axes),
        lambda a, b: np.linalg.tensorsolve(a, b, axes),
        (a, b),
        draw(diff_mask(2)),
        desc=f"tensorsolve {a.shape} {b_shape} axes={axes}",
    )


@st.composite
def _tensorinv_cases(draw: st.DrawFn) -> Case:
    size = draw(st.sampled_from([1, 2, 3, 4, 6]))
    out_shape, in_shape = _factored_shape(draw, size), _factored_shape(draw, size)
    a = well_separated_matrices(draw, (size, size)).reshape(*out_shape, *in_shape)
    ind = len(out_shape)
    return Case(
        lambda a: tensorinv(a, ind),
        lambda a: np.linalg.tensorinv(a, ind),
        (a,),
        (True,),
        desc=f"tensorinv {a.shape} ind={ind}",
    )


# -- complex matrices ---------------------------------------------------------------------------------
# Complex operands are drawn as they are for the complex tests (COMPLEX_CASES, run in
# test_linalg.py); the specs of the complex-valued ops for test_ops.py, whose generic checks
# want real operands and real results, take a complex operand as its real and imaginary
# parts (``re + 1j * im``) and give a complex result as its parts stacked.


def _generator(draw: st.DrawFn) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def _unitary(rng: np.random.Generator, n: int, complex_: bool = True) -> np.ndarray:
    z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0.0)
    return np.linalg.qr(z)[0]


def complex_matrices(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """As :func:`well_separated_matrices` (singular values at least 0.2 and 0.2 apart), with
    random unitary factors: complex matrices whose singular values and vectors are smooth
    functions of the entries near the drawn point."""
    *batch, m, n = shape
    k = min(m, n)
    rng = _generator(draw)
    out = np.empty(shape, complex)
    for index in np.ndindex(*batch):
        values = draw(st.lists(st.integers(1, 15), min_size=k, max_size=k, unique=True))
        s = 0.2 * np.sort(np.array(values, dtype=float))[::-1]
        out[index] = (_unitary(rng, m)[:, :k] * s) @ _unitary(rng, n)[:k, :]
    return out


def hermitian_matrices(draw: st.DrawFn, shape: tuple[int, ...], definite: bool) -> np.ndarray:
    """Hermitian ``U diag(e) U^H``, ``|e|`` in [0.2, 3] and 0.2 apart: positive definite, or
    with alternating signs."""
    u, s, _ = np.linalg.svd(complex_matrices(draw, shape))
    if not definite:
        s = s * np.where(np.arange(s.shape[-1]) % 2 == 0, 1.0, -1.0)
    return np.matmul(u * s[..., None, :], np.conj(np.swapaxes(u, -1, -2)))


def _distinct_values(draw: st.DrawFn, n: int, complex_: bool, pairs: bool = True) -> np.ndarray:
    """``n`` eigenvalues (or roots) at least 0.3 apart, their real parts too (sorting them
    by real part is stable), except a real matrix's conjugate pairs ``a +- ib``."""
    reals = 0.3 * np.array(draw(st.lists(st.integers(-7, 7), min_size=n, max_size=n, unique=True)), dtype=float)
    if complex_:
        return reals + 0.3j * np.array(draw(st.lists(st.integers(-7, 7), min_size=n, max_size=n)), dtype=float)
    values = reals.astype(complex)
    for i in range(0, 2 * draw(st.integers(0, n // 2 if pairs else 0)), 2):
        b = 0.3 * draw(st.integers(1, 7))
        values[i : i + 2] = reals[i] + 1j * b, reals[i] - 1j * b
    return values


def eig_matrices(draw: st.DrawFn, shape: tuple[int, ...], complex_: bool, real_values: bool = False) -> np.ndarray:
    """Diagonalizable ``B diag(w) B^-1`` with ``w`` from :func:`_distinct_values` and a basis
    ``B`` of condition number below 10 (not orthogonal: the matrices are not normal). Real
    ones (``complex_=False``) have some pairs of complex eigenvalues, unless ``real_values``."""
    *batch, n, _ = shape
    rng = _generator(draw)
    out = np.empty(shape, complex if complex_ else float)
    for index in np.ndindex(*batch):
        w = _distinct_values(draw, n, complex_, pairs=not real_values)
        blocks = np.diag(w)
        if not complex_:  # the real form of each pair: [[a, b], [-b, a]]
            blocks = np.diag(w.real)
            for i in np.flatnonzero(w.imag > 0):
                blocks[i, i + 1], blocks[i + 1, i] = w[i].imag, -w[i].imag
        noise = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0.0)
        basis = _unitary(rng, n, complex_) @ (np.eye(n) + 0.3 * noise)
        if np.linalg.cond(basis) > 10:
            basis = _unitary(rng, n, complex_)
        out[index] = basis @ blocks @ np.linalg.inv(basis)
    return out


def polynomials(draw: st.DrawFn, complex_: bool) -> np.ndarray:
    """The coefficients of a polynomial of degree 1 to 4 with roots from :func:`_distinct_values`,
    none of them 0 (numpy sets a zero coefficient aside, and its result may then be real
    for complex coefficients: a separate test covers it)."""
    roots = _distinct_values(draw, draw(st.integers(1, 4)), complex_)
    # A zero root moves past every other by 0.3 (its real part too, so the order stays stable).
    roots = np.where(roots == 0, np.max(np.abs(roots)) + 0.3, roots)
    lead = draw(st.sampled_from([1.0, -1.5, 2.0])) * (np.exp(1j * draw(floats(-3.0, 3.0))) if complex_ else 1.0)
    p = lead * np.poly(roots)
    return p if complex_ else np.real(p)


def _joined(*parts: Any) -> Any:
    """A complex operand from its real and imaginary parts, or a real one as it is."""
    return parts[0] if len(parts) == 1 else parts[0] + 1j * parts[1]


def _parts(y: Any) -> Any:
    """A complex result as real values (its parts stacked): numpy's calls, so traced too."""
    return np.stack([np.real(y), np.imag(y)])


def _as_parts(x: np.ndarray, complex_: bool) -> tuple[np.ndarray, ...]:
    return (x.real.copy(), x.imag.copy()) if complex_ else (x,)


@st.composite
def _signdet_cases(draw: st.DrawFn) -> Case:
    x = complex_matrices(draw, (*draw(shapes(max_dims=1, max_side=2)), *[draw(st.integers(1, 4))] * 2))
    return Case(
        lambda *p: _parts(ng.slogdet(_joined(*p))[0]),
        lambda *p: _parts(np.linalg.slogdet(_joined(*p))[0]),
        _as_parts(x, True),
        draw(diff_mask(2)),
        desc=f"slogdet sign {x.shape}",
    )


def _eig_function(kind: str, values_of: str, eig: Any, eigvals: Any) -> Any:
    """Of a square matrix: its eigenvalues (sorted by their real parts; from ``eig`` or from
    ``eigvals``), the squared moduli of its eigenvectors (the columns in that order) or
    ``V diag(exp(w)) V^-1``: functions of the vectors that do not depend on their phases."""

    def fn(x: Any) -> Any:
        if kind == "values":
            w = eigvals(x) if values_of == "eigvals" else eig(x)[0]
            return np.take_along_axis(w, _ordered(w), -1)
        w, v = eig(x)
        if kind == "function":
            return np.matmul(v * np.expand_dims(np.exp(w), -2), np.linalg.inv(v))
        v = np.take_along_axis(v, np.expand_dims(_ordered(w), -2), -1)
        return np.real(v * np.conj(v))

    return fn


def _ordered(values: Any) -> np.ndarray:
    """The order of complex values by real, then imaginary part (np.sort_complex's, whose
    results are complex128 even for float32 values), along the last axis."""
    plain = unwrap(values)
    return np.lexsort((np.imag(plain), np.real(plain)), axis=-1)


def _eig_operand(draw: st.DrawFn, kind: str, complex_: bool, real_values: bool = False) -> np.ndarray:
    # V f(w) V^-1 of a 1 x 1 matrix: the cotangents of V from V and from V^-1 cancel to
    # rounding, which the test for phase dependence cannot tell from a small dependence.
    n = draw(st.integers(2 if kind == "function" else 1, 4))
    return eig_matrices(draw, (*draw(shapes(max_dims=1, max_side=2)), n, n), complex_, real_values)


@st.composite
def _eig_cases(draw: st.DrawFn, kinds: tuple[str, ...], values_of: str) -> Case:
    """:func:`_eig_function` of a real or complex matrix (as its parts), results as parts."""
    kind = draw(st.sampled_from(kinds))
    # The generic checks run forward mode too, which refuses complex eigenvectors (their
    # phases): the vectors are those of real matrices with real eigenvalues here, complex
    # ones in COMPLEX_CASES.
    complex_ = kind == "values" and draw(st.booleans())
    a = _eig_operand(draw, kind, complex_, real_values=kind != "values")
    fn = _eig_function(kind, values_of, ng.eig, ng.eigvals)
    ref = _eig_function(kind, values_of, np.linalg.eig, np.linalg.eigvals)
    return Case(
        lambda *p: _parts(fn(_joined(*p))),
        lambda *p: _parts(ref(_joined(*p))),
        _as_parts(a, complex_),
        draw(diff_mask(2)) if complex_ else (True,),
        desc=f"eig {'complex' if complex_ else 'real'} {a.shape} {kind}",
    )


@st.composite
def _roots_cases(draw: st.DrawFn) -> Case:
    complex_ = draw(st.booleans())
    p = polynomials(draw, complex_)
    return Case(
        lambda *c: _parts((lambda r: np.take_along_axis(r, _ordered(r), -1))(roots(_joined(*c)))),
        lambda *c: _parts((lambda r: np.take_along_axis(r, _ordered(r), -1))(np.roots(_joined(*c)))),
        _as_parts(p, complex_),
        draw(diff_mask(2)) if complex_ else (True,),
        desc=f"roots of {p}",
    )


SPECS: dict[str, st.SearchStrategy[Case]] = {
    "matmul": _matmul_cases(),
    "einsum": _einsum_cases(),
    "svdvals": _svdvals_cases(),
    "inv": _inv_cases(),
    "det": _det_cases(),
    "logabsdet": _logabsdet_cases(),
    "solve": _solve_cases(),
    "cholesky": _cholesky_cases(),
    "eigvalsh": _eigvalsh_cases(),
    "eigh_vectors": _eigh_cases("vectors"),
    "read_triangle": _read_triangle_cases(),
    "svd_u": _svd_cases("u"),
    "svd_vh": _svd_cases("vh"),
    "qr_q": _qr_cases("q"),
    "qr_r": _qr_cases("r"),
    "pinv": _pinv_cases(),
    "signdet": _signdet_cases(),
    "eigvals": _eig_cases(("values",), "eigvals"),
    "eig_vectors": _eig_cases(("moduli", "function"), "eig"),
    "roots": _roots_cases(),
    "convolve": _convolve_cases(),
}
COMPOSITES: dict[str, st.SearchStrategy[Case]] = {
    "tensordot": _tensordot_cases(),
    "dot": _dot_cases(),
    "outer": _outer_cases(),
    "slogdet": _logabsdet_cases(),  # the public name of the logabsdet op
    "eigh": _eigh_cases(),
    "svd": _svd_cases(),
    "qr": _qr_cases(),
    "lstsq": _lstsq_cases(),
    "matrix_power": _matrix_power_cases(),
    "tensorsolve": _tensorsolve_cases(),
    "tensorinv": _tensorinv_cases(),
    "eig": _eig_cases(("values", "moduli", "function"), "eig"),
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    "matmul": _matmul_cases(batch_broadcast=True),
    "einsum": _einsum_cases(broadcast=True),
    "solve": _solve_cases(broadcast=True),
}

_M23, _M45 = np.ones((2, 3)), np.ones((4, 5))

BAD_CALLS = [
    BadCall("convolve", (_M23, np.ones(3)), convolve, ShapeError, ("1-D", "(2, 3)", "(3,)")),
    BadCall("convolve", (np.ones(0), np.ones(3)), convolve, ShapeError, ("non-empty", "(0,)")),
    BadCall("matmul", (_M23, _M45), ng.matmul, ShapeError, ("[2, 3]", "[4, 5]")),
    BadCall("matmul", (_M23, np.array(2.0)), ng.matmul, ShapeError, ("[2, 3]", "float64[]")),
    BadCall("einsum", (_M23, _M45), lambda a, b: ng.einsum("ij,jk->ik", a, b), ShapeError, ("[2, 3]", "[4, 5]")),
    BadCall("einsum", (_M23,), lambda a: ng.einsum("ij,jk->ik", a), ShapeError, ("2 operand subscripts",)),
    BadCall("einsum", (_M23,), lambda a: ng.einsum("ijk->i", a), ShapeError, ("'ijk'", "(2, 3)")),
    BadCall("tensordot", (_M23, _M45), lambda a, b: ng.tensordot(a, b, axes=([0, 1], [0])), ShapeError, ("axes",)),
    BadCall("tensordot", (_M23, _M45), lambda a, b: ng.tensordot(a, b, axes=1), ShapeError, ("[2, 3]",), "einsum"),
    BadCall("dot", (_M23, _M45), ng.dot, ShapeError, ("[2, 3]", "[4, 5]"), "matmul"),
    BadCall("svdvals", (np.ones(3),), ng.svdvals, ShapeError, ("shape (3,)", "matrix")),
    BadCall("svdvals", (np.full((2, 2), np.nan),), ng.svdvals, NonFiniteError, ("NaN or Inf",)),
    BadCall("inv", (_M23,), ng.inv, ShapeError, ("square", "(2, 3)")),
    BadCall("inv", (np.ones((2, 2)),), ng.inv, LinAlgError, ("float64[2, 2]", "Singular matrix")),
    BadCall("det", (np.ones(3),), ng.det, ShapeError, ("square", "(3,)")),
    BadCall("cholesky", (-np.eye(2),), ng.cholesky, LinAlgError, ("float64[2, 2]", "not positive definite")),
    BadCall("cholesky", (_M23,), ng.cholesky, ShapeError, ("square", "(2, 3)")),
    BadCall("eigvalsh", (_M23,), ng.eigvalsh, ShapeError, ("square", "(2, 3)")),
    BadCall("eigvalsh", (np.eye(2),), lambda x: ng.eigvalsh(x, UPLO="X"), ShapeError, ("UPLO", "'X'")),
    # Reached through eigvalsh, eigh and cholesky only, which check the matrix first.
    BadCall("read_triangle", (_M23,), ng.eigh, ShapeError, ("square", "(2, 3)"), "eigh"),
    BadCall("logabsdet", (_M23,), lambda x: ng.slogdet(x), ShapeError, ("square",), "slogdet"),
    BadCall("solve", (_M23, np.ones(2)), ng.solve, ShapeError, ("square", "(2, 3)")),
    BadCall("solve", (np.eye(2), np.ones(3)), ng.solve, ShapeError, ("float64[2, 2]", "float64[3]")),
    BadCall("eigh_vectors", (_M23,), ng.eigh, ShapeError, ("square", "(2, 3)"), "eigh"),
    BadCall("eigh_vectors", (np.eye(2),), lambda x: ng.eigh(x, UPLO="X"), ShapeError, ("UPLO", "'X'"), "eigh"),
    BadCall("svd_u", (np.ones(3),), ng.svd, ShapeError, ("shape (3,)", "matrix"), "svd"),
    BadCall("svd_vh", (np.full((2, 2), np.nan),), ng.svd, NonFiniteError, ("NaN or Inf",), "svd"),
    BadCall("qr_q", (np.ones(3),), ng.qr, ShapeError, ("shape (3,)", "matrix"), "qr"),
    BadCall("qr_r", (_M23,), lambda x: ng.qr(x, mode="r"), NoGradientError, ("m < n", "(2, 3)"), "qr"),
    BadCall("qr_q", (_M45,), lambda x: ng.qr(x, mode="complete"), NoGradientError, ("fewer rows",), "qr"),
    BadCall("qr_q", (_M23.T,), lambda x: ng.qr(x, mode="complete"), NoGradientError, ("'complete'",), "qr"),
    BadCall("qr_q", (_M23.T,), lambda x: ng.qr(x, mode="raw"), NoGradientError, ("'raw'",), "qr"),
    BadCall("qr_q", (_M23.T,), lambda x: ng.qr(x, mode="full"), ArgumentError, ("mode", "'full'"), "qr"),
    BadCall("pinv", (np.ones(3),), ng.pinv, ShapeError, ("shape (3,)", "matrix")),
    BadCall("pinv", (_M23,), lambda x: ng.pinv(x, 0.1, rtol=0.1), ArgumentError, ("rtol", "rcond")),
    BadCall("lstsq", (_M23, np.ones(3)), ng.lstsq, ShapeError, ("(2, 3)", "(3,)")),
    BadCall("matrix_power", (_M23,), lambda x: ng.matrix_power(x, 2), ShapeError, ("square", "(2, 3)")),
    BadCall("matrix_power", (np.eye(2),), lambda x: ng.matrix_power(x, 1.5), DtypeError, ("integer", "1.5")),
    BadCall("matrix_power", (np.ones((2, 2)),), lambda x: ng.matrix_power(x, -1), LinAlgError, ("Singular",), "inv"),
    BadCall("tensorsolve", (np.ones((2, 3)), np.ones(2)), tensorsolve, ShapeError, ("(2, 3)",)),
    BadCall("tensorinv", (np.ones((2, 3)),), lambda x: tensorinv(x, 1), ShapeError, ("(2, 3)",)),
    BadCall("tensorinv", (np.eye(2),), lambda x: tensorinv(x, 0), ArgumentError, ("ind", "0")),
    BadCall("signdet", (_M23 * 1j,), ng.slogdet, ShapeError, ("square", "(2, 3)"), "slogdet"),
    BadCall("eigvals", (_M23,), ng.eigvals, ShapeError, ("square", "(2, 3)")),
    BadCall("eigvals", (np.full((2, 2), np.inf),), ng.eigvals, NonFiniteError, ("NaN or Inf",)),
    BadCall("eig_vectors", (np.ones(3),), ng.eig, ShapeError, ("square", "(3,)"), "eig"),
    BadCall("eig_vectors", (np.full((2, 2), np.nan),), ng.eig, NonFiniteError, ("NaN or Inf",), "eig"),
    BadCall("roots", (np.ones((2, 2)),), roots, ShapeError, ("1-D", "(2, 2)")),
]


# -- complex cases (test_linalg.py) -------------------------------------------------------------------
# Each draws a Case whose operands are complex (or a mix of real and complex), with the modes
# check_grads can check (both, for every case: the vectors of eigh, svd and eig, whose
# phases are arbitrary, are drawn into functions that do not depend on them).

ComplexCase = tuple[Case, tuple[str, ...]]
_BOTH = ("rev", "fwd")


def _imaginary_part(draw: st.DrawFn, x: Any) -> Any:
    if isinstance(x, float):
        return complex(x, draw(floats()))
    return np.asarray(x + 1j * draw(float_arrays(np.shape(x))))  # a 0-d array stays one


@st.composite
def _complexified(draw: st.DrawFn, spec: st.SearchStrategy[Case]) -> ComplexCase:
    """Cases of a real spec with imaginary parts added to every operand, or to some of
    them (the others meeting complex values as real ones)."""
    case = draw(spec)
    chosen = draw(diff_mask(len(case.values)))  # a non-empty subset, usually all
    values = tuple(_imaginary_part(draw, v) if c else v for v, c in zip(case.values, chosen, strict=True))
    return Case(case.fn, case.ref, values, case.diff, desc=f"{case.desc}; complex {chosen}"), _BOTH


def _complex_array(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    return draw(float_arrays(shape)) + 1j * draw(float_arrays(shape))


def _square(draw: st.DrawFn, max_batch: int = 1, n: int | None = None) -> np.ndarray:
    batch = draw(shapes(max_dims=max_batch, max_side=2))
    n = draw(st.integers(1, 4)) if n is None else n
    return complex_matrices(draw, (*batch, n, n))


def _one(fn: Any, ref: Any, x: Any, desc: str, modes: tuple[str, ...] = _BOTH) -> ComplexCase:
    return Case(fn, ref, (x,), (True,), desc=desc), modes


@st.composite
def _vector_products(draw: st.DrawFn) -> ComplexCase:
    """np.vdot, np.inner, np.kron and np.linalg.vecdot, np.vecdot and np.vecmat (which
    conjugate their first operand)."""
    name = draw(st.sampled_from(["vdot", "inner", "kron", "linalg.vecdot", "vecdot", "vecmat", "matvec"]))
    n = draw(st.integers(1, 4))
    fn = {"vdot": np.vdot, "inner": np.inner, "kron": np.kron, "linalg.vecdot": np.linalg.vecdot}.get(name)
    fn = fn or getattr(np, name)
    shapes_ = {"vecmat": ((2, n), (n, 3)), "matvec": ((3, n), (2, 1, n)), "kron": ((2, n), (n,))}
    a_shape, b_shape = shapes_.get(name, ((2, n), (n,)) if name != "vdot" else ((n,), (n,)))
    a = _complex_array(draw, a_shape)
    b = _complex_array(draw, b_shape) if draw(st.booleans()) else draw(float_arrays(b_shape))
    return Case(fn, fn, (a, b), draw(diff_mask(2)), desc=f"np.{name} {a_shape} {b_shape}"), _BOTH


@st.composite
def _inv_solve_det(draw: st.DrawFn, name: str) -> ComplexCase:
    x = _square(draw)
    if name == "solve":
        real_a = draw(st.booleans())
        a = x.real.copy() if real_a else x  # a real matrix meeting complex right-hand sides, too
        if real_a:
            a = well_separated_matrices(draw, x.shape)
        b = _complex_array(draw, (x.shape[-1],) if draw(st.booleans()) else (*x.shape[:-1], 2))
        if not real_a and draw(st.booleans()):
            b = b.real.copy()
        return Case(ng.solve, np.linalg.solve, (a, b), draw(diff_mask(2)), desc=f"solve {a.dtype} {b.dtype}"), _BOTH
    fns = {
        "inv": (ng.inv, np.linalg.inv),
        "det": (ng.det, np.linalg.det),
        "slogdet": (lambda a: ng.slogdet(a)[0] * ng.slogdet(a)[1], lambda a: np.prod(np.linalg.slogdet(a), axis=0)),
        "matrix_power": (lambda a: ng.matrix_power(a, -2), lambda a: np.linalg.matrix_power(a, -2)),
        "pinv": (ng.pinv, np.linalg.pinv),
    }
    return _one(*fns[name], x, f"{name} {x.shape}")


@st.composite
def _tensor_cases(draw: st.DrawFn) -> ComplexCase:
    a = complex_matrices(draw, (4, 4)).reshape(2, 2, 2, 2)
    if draw(st.booleans()):
        b = _complex_array(draw, (2, 2))
        case = Case(tensorsolve, np.linalg.tensorsolve, (a, b), draw(diff_mask(2)), desc="tensorsolve")
        return case, _BOTH
    return _one(tensorinv, np.linalg.tensorinv, a, "tensorinv")


@st.composite
def _rectangular(draw: st.DrawFn, name: str) -> ComplexCase:
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    if name in ("qr", "lstsq"):
        m = max(m, n) + (draw(st.integers(0, 1)) if name == "qr" else 0)
    a = complex_matrices(draw, (*draw(shapes(max_dims=1, max_side=2)), m, n) if name != "lstsq" else (m, n))
    if name == "pinv":
        return _one(ng.pinv, np.linalg.pinv, a, f"pinv {a.shape}")
    if name == "svdvals":
        return _one(ng.svdvals, np.linalg.svdvals, a, f"svdvals {a.shape}")
    if name == "qr":
        which = draw(st.sampled_from([0, 1, "r"]))
        if which == "r":
            return _one(lambda a: ng.qr(a, mode="r"), lambda a: np.linalg.qr(a, mode="r"), a, f"qr r {a.shape}")
        return _one(lambda a: ng.qr(a)[which], lambda a: np.linalg.qr(a)[which], a, f"qr {a.shape} {which}")
    b = _complex_array(draw, (m,) if draw(st.booleans()) else (m, 2))
    part = draw(st.sampled_from([0, 1] if m > n else [0]))
    lstsq = (lambda a, b: ng.lstsq(a, b)[part], lambda a, b: np.linalg.lstsq(a, b)[part])
    return Case(*lstsq, (a, b), draw(diff_mask(2)), desc=f"lstsq {a.shape} {b.shape} part {part}"), _BOTH


@st.composite
def _hermitian_cases(draw: st.DrawFn, name: str) -> ComplexCase:
    """cholesky, eigvalsh and eigh of a Hermitian matrix with entries in the triangle not
    read and imaginary parts on the diagonal (see :func:`_unread`); for eigh also functions
    of the vectors that do not depend on their phases: ``|v|^2``, ``V diag(c) V^H``."""
    definite = name == "cholesky"
    a = hermitian_matrices(draw, (*draw(shapes(max_dims=1, max_side=2)), *[draw(st.integers(1, 4))] * 2), definite)
    uplo = draw(st.sampled_from(["L", "U"]))
    if name == "cholesky":
        upper = draw(st.booleans())
        return _one(
            lambda a: ng.cholesky(a, upper=upper),
            lambda a: np.linalg.cholesky(a, upper=upper),
            _unread(draw, a, not upper, hermitian=True),
            f"cholesky {a.shape} upper={upper}",
        )
    a = _unread(draw, a, uplo == "L", hermitian=True)
    if name == "eigvalsh":
        return _one(lambda a: ng.eigvalsh(a, uplo), lambda a: np.linalg.eigvalsh(a, uplo), a, f"eigvalsh UPLO={uplo}")
    kind = draw(st.sampled_from(["values", "moduli", "weighted projectors"]))
    c = draw(float_arrays((a.shape[-1],)))

    def of(eigh: Any) -> Any:
        def fn(a: Any) -> Any:
            w, v = eigh(a, UPLO=uplo)
            if kind == "values":
                return w
            if kind == "moduli":
                return np.real(v * np.conj(v))
            return np.matmul(v * c, np.conj(np.swapaxes(v, -1, -2)))

        return fn

    return _one(of(ng.eigh), of(np.linalg.eigh), a, f"eigh {a.shape} {kind}", _BOTH)


@st.composite
def _complex_svd_cases(draw: st.DrawFn) -> ComplexCase:
    """The singular values, ``|U|^2``, ``|Vh|^2`` or ``U diag(c) Vh`` (which depends on the
    common phase of each pair through neither factor alone)."""
    a = complex_matrices(
        draw, (*draw(shapes(max_dims=1, max_side=2)), draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    )
    k = min(a.shape[-2:])
    full = a.shape[-1] == a.shape[-2] and draw(st.booleans())
    kind = draw(st.sampled_from(["values", "u moduli", "vh moduli", "pairs"]))
    c = draw(float_arrays((k,)))

    def of(svd: Any) -> Any:
        def fn(a: Any) -> Any:
            u, s, vh = svd(a, full_matrices=full)
            u, vh = u[..., :, :k], vh[..., :k, :]
            if kind == "values":
                return s
            if kind == "pairs":
                return np.matmul(u * c, vh)
            x = u if kind == "u moduli" else vh
            return np.real(x * np.conj(x))

        return fn

    return _one(of(ng.svd), of(np.linalg.svd), a, f"svd {a.shape} {kind}", _BOTH)


@st.composite
def _norm_cases(draw: st.DrawFn) -> ComplexCase:
    """Vector and matrix norms of complex values, and np.linalg.cond."""
    if draw(st.booleans()):  # moduli distinct (no ties for the max and min) and away from 0 (|x|'s kink)
        n = draw(st.integers(1, 5))
        moduli = draw(float_arrays((n,), elements=grid(0.2, 3.0, step=0.1), unique=True))
        x = moduli * np.exp(1j * draw(float_arrays((n,), elements=floats(-3.0, 3.0))))
        order = draw(st.sampled_from([None, 2, 1, np.inf, -np.inf, 3, 0.5]))
        return _one(lambda x: ng.norm(x, order), lambda x: np.linalg.norm(x, order), x, f"vector norm {order}")
    x = _square(draw, max_batch=0)
    order = draw(st.sampled_from([None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf, "cond", "cond 1", "cond fro"]))
    if isinstance(order, str) and order.startswith("cond"):
        p = {"cond": None, "cond 1": 1, "cond fro": "fro"}[order]
        return _one(lambda x: np.linalg.cond(x, p), lambda x: np.linalg.cond(x, p), x, f"cond {p}")
    return _one(lambda x: ng.norm(x, order), lambda x: np.linalg.norm(x, order), x, f"matrix norm {order}")


@st.composite
def _complex_eig_cases(draw: st.DrawFn) -> ComplexCase:
    """eig and eigvals of complex and real matrices: complex results as they are."""
    kind, values_of = draw(st.sampled_from(["values", "moduli", "function"])), draw(st.sampled_from(["eig", "eigvals"]))
    a = _eig_operand(draw, kind, draw(st.booleans()))
    return _one(
        _eig_function(kind, values_of, ng.eig, ng.eigvals),
        _eig_function(kind, values_of, np.linalg.eig, np.linalg.eigvals),
        a,
        f"eig {a.dtype} {a.shape} {kind} ({values_of})",
    )


@st.composite
def _complex_roots_cases(draw: st.DrawFn) -> ComplexCase:
    """np.roots of real and complex coefficients, sorted by np.sort_complex (a permutation)."""
    p = polynomials(draw, draw(st.booleans()))
    return _one(lambda p: np.sort_complex(np.roots(p)), lambda p: np.sort_complex(np.roots(p)), p, f"roots of {p}")


@st.composite
def _sort_complex_cases(draw: st.DrawFn) -> ComplexCase:
    """Complex or real values with distinct real parts: no ties (not even of real parts
    alone), so the permutation is the same on both sides of a finite difference."""
    n = draw(st.integers(1, 6))
    real = draw(float_arrays((n,), elements=grid(step=0.1), unique=True))
    x = real + 1j * draw(float_arrays((n,), elements=floats())) if draw(st.booleans()) else real
    return _one(np.sort_complex, np.sort_complex, x, f"sort_complex {x}")


@st.composite
def _complex_eig_values(draw: st.DrawFn) -> Case:
    """The eigenvalues of a complex matrix (sorted by their real parts), as a Case."""
    a = _eig_operand(draw, "values", True)
    fn = _eig_function("values", "eigvals", ng.eig, ng.eigvals)
    ref = _eig_function("values", "eigvals", np.linalg.eig, np.linalg.eigvals)
    return Case(fn, ref, (a,), (True,), desc=f"eigvals {a.shape}")


COMPLEX_CASES: dict[str, st.SearchStrategy[ComplexCase]] = {
    "matmul": _complexified(_matmul_cases()),
    "einsum": _complexified(_einsum_cases()),
    "tensordot": _complexified(_tensordot_cases()),
    "dot": _complexified(_dot_cases()),
    "outer": _complexified(_outer_cases()),
    "vector products": _vector_products(),
    "inv": _inv_solve_det("inv"),
    "solve": _inv_solve_det("solve"),
    "det": _inv_solve_det("det"),
    "slogdet": _inv_solve_det("slogdet"),
    "matrix_power": _inv_solve_det("matrix_power"),
    "tensorsolve and tensorinv": _tensor_cases(),
    "pinv": _rectangular("pinv"),
    "lstsq": _rectangular("lstsq"),
    "svdvals": _rectangular("svdvals"),
    "qr": _rectangular("qr"),
    "cholesky": _hermitian_cases("cholesky"),
    "eigvalsh": _hermitian_cases("eigvalsh"),
    "eigh": _hermitian_cases("eigh"),
    "read_triangle": _read_triangle_cases(complex_=True).map(lambda case: (case, _BOTH)),
    "svd": _complex_svd_cases(),
    "norm and cond": _norm_cases(),
    "eig": _complex_eig_cases(),
    "roots": _complex_roots_cases(),
    "sort_complex": _sort_complex_cases(),
}

# The holomorphic ones, for the complex checks of test_complex.py too (their complex
# derivatives against complex differences among them).
COMPLEX: dict[str, ComplexSpec] = {
    name: ComplexSpec(COMPLEX_CASES[name].map(lambda drawn: drawn[0]), holomorphic=True, drawn_complex=True)
    for name in ("matmul", "einsum", "tensordot", "dot", "outer", "inv", "solve", "det", "matrix_power")
}
COMPLEX["eigvals"] = ComplexSpec(_complex_eig_values(), holomorphic=True, drawn_complex=True)
COMPLEX["convolve"] = ComplexSpec(_convolve_cases(), holomorphic=True)
