"""Specs for the linalg family: matmul, einsum, svdvals, eigvalsh, cholesky, inv, solve, det and logabsdet (slogdet);
eigh_vectors, svd_u, svd_vh, qr_q, qr_r and pinv; tensordot, dot, outer, eigh, svd, qr, lstsq, matrix_power,
tensorsolve and tensorinv (composites).

The sign of an eigenvector or of a pair of singular vectors is arbitrary, so their specs
differentiate functions of the vectors that do not depend on it (squares, ``v diag(c) v^T``,
``u_i v_i^T``) at matrices with well-separated values, where those are smooth."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

import nodegrad as ng
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, NonFiniteError, ShapeError
from nodegrad.ops.linalg import tensorinv, tensorsolve
from tests.ops.harness import BadCall, Case, diff_mask, draw_operand, well_separated_matrices
from tests.strategies import float_arrays, floats, shapes

__all__ = ["BAD_CALLS", "BROADCASTING", "COMPOSITES", "SPECS"]


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


def _symmetric(a: Any) -> Any:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _symmetric_case(draw: st.DrawFn, ng_fn: Any, np_fn: Any, indefinite: bool, **kwargs: Any) -> Case:
    """A symmetric U diag(e) U^T, |e| in [0.2, 3] and 0.2 apart: positive definite, or with
    signs alternating (``indefinite``; the eigenvalues stay distinct). numpy reads one
    triangle only and the gradient is the symmetric one, so both sides symmetrize first:
    central differences then see the same function."""
    u, s, _ = np.linalg.svd(_square_stack(draw))
    if indefinite:
        s = s * np.where(np.arange(s.shape[-1]) % 2 == 0, 1.0, -1.0)
    sym = np.matmul(u * s[..., None, :], np.swapaxes(u, -1, -2))
    return Case(
        lambda a: ng_fn(_symmetric(a), **kwargs),
        lambda a: np_fn(_symmetric(a), **kwargs),
        (sym,),
        (True,),
        desc=f"{np_fn.__name__} {sym.shape} {kwargs}",
    )


@st.composite
def _cholesky_cases(draw: st.DrawFn) -> Case:
    return _symmetric_case(draw, ng.cholesky, np.linalg.cholesky, False, upper=draw(st.booleans()))


@st.composite
def _eigvalsh_cases(draw: st.DrawFn) -> Case:
    return _symmetric_case(draw, ng.eigvalsh, np.linalg.eigvalsh, True, UPLO=draw(st.sampled_from(["L", "U"])))


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
    """Of a symmetric matrix (symmetrized first, as for eigvalsh) with distinct eigenvalues:
    the eigenvalues, the squares of the eigenvectors' entries or ``v diag(c) v^T``."""
    a = _symmetric_case(draw, ng.eigvalsh, np.linalg.eigvalsh, True).values[0]
    uplo = draw(st.sampled_from(["L", "U"]))
    kind = draw(st.sampled_from(["squares", "weighted outer"] if part == "vectors" else ["squares", "values"]))
    c = draw(float_arrays((a.shape[-1],)))

    def of(eigh: Any) -> Any:
        def fn(x: Any) -> Any:
            w, v = eigh(_symmetric(x), UPLO=uplo)
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
    "svd_u": _svd_cases("u"),
    "svd_vh": _svd_cases("vh"),
    "qr_q": _qr_cases("q"),
    "qr_r": _qr_cases("r"),
    "pinv": _pinv_cases(),
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
}
BROADCASTING: dict[str, st.SearchStrategy[Case]] = {
    "matmul": _matmul_cases(batch_broadcast=True),
    "einsum": _einsum_cases(broadcast=True),
    "solve": _solve_cases(broadcast=True),
}

_M23, _M45 = np.ones((2, 3)), np.ones((4, 5))

BAD_CALLS = [
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
    BadCall("inv", (np.ones((2, 2)),), ng.inv, ShapeError, ("float64[2, 2]", "Singular matrix")),
    BadCall("det", (np.ones(3),), ng.det, ShapeError, ("square", "(3,)")),
    BadCall("cholesky", (-np.eye(2),), ng.cholesky, ShapeError, ("float64[2, 2]", "not positive definite")),
    BadCall("cholesky", (_M23,), ng.cholesky, ShapeError, ("square", "(2, 3)")),
    BadCall("eigvalsh", (_M23,), ng.eigvalsh, ShapeError, ("square", "(2, 3)")),
    BadCall("eigvalsh", (np.eye(2),), lambda x: ng.eigvalsh(x, UPLO="X"), ShapeError, ("UPLO", "'X'")),
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
    BadCall("matrix_power", (np.ones((2, 2)),), lambda x: ng.matrix_power(x, -1), ShapeError, ("Singular",), "inv"),
    BadCall("tensorsolve", (np.ones((2, 3)), np.ones(2)), tensorsolve, ShapeError, ("(2, 3)",)),
    BadCall("tensorinv", (np.ones((2, 3)),), lambda x: tensorinv(x, 1), ShapeError, ("(2, 3)",)),
    BadCall("tensorinv", (np.eye(2),), lambda x: tensorinv(x, 0), ArgumentError, ("ind", "0")),
]
