"""The ops a random program is made of, each a numpy or nodegrad expression over registers.

An op draws its operands among the registers made so far (by shape) and returns a
:class:`Step`: the expression as text, the registers it reads, the shape it makes. The
text is what runs and what a repro prints, so a disagreement reads as ordinary code.

Every op keeps its values where the function is smooth and well conditioned, so that a
disagreement is a real one: logarithms of positive values, square roots away from zero,
the linear algebra on diagonally dominant matrices whose eigen- and singular values lie
apart (``well_conditioned``, ``spd``), eigenvectors squared (their sign is arbitrary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np
import scipy.sparse

Shape = tuple[int, ...]
INDEX_BOUND = 3  # integer indices lie in [0, 3): valid for every axis a program makes


@attrs.frozen
class Step:
    op: str  # the name known.py and the report group by
    expr: str  # a format string over the registers read: "np.sin({0})"
    reads: tuple[str, ...]
    shape: Shape


@attrs.frozen
class Register:
    name: str
    shape: Shape
    integer: bool = False  # an index: read by the indexing ops only


def well_conditioned(a: np.ndarray) -> np.ndarray:
    """A 3 x 3 matrix of ``a``, diagonally dominant with singular values apart."""
    return np.tanh(a) * 0.3 + np.diag(np.array([1.0, 2.5, 4.0], dtype=a.dtype))


def spd(a: np.ndarray) -> np.ndarray:
    """A symmetric positive definite 3 x 3 matrix of ``a``, eigenvalues apart."""
    b = np.tanh(a) * 0.3
    return b @ b.T * 0.5 + np.diag(np.array([1.0, 2.5, 4.0], dtype=a.dtype))


def weights_like(out: np.ndarray) -> np.ndarray:
    """Fixed weights of ``out``'s shape and dtype, so a scalar loss sees every entry apart."""
    # Not affine in the position: sum(w * U**2) is constant for an orthogonal U when w is.
    return (1.5 + np.cos(1.3 * np.arange(out.size))).reshape(out.shape).astype(out.dtype)


Draw = Callable[[np.random.Generator, Sequence[Register]], "Step | None"]
UNARY: dict[str, str] = {
    "sin": "np.sin({0})",
    "cos": "np.cos({0})",
    "tanh": "np.tanh({0})",
    "exp": "np.exp(np.tanh({0}))",
    "log": "np.log(np.logaddexp({0}, 0.0))",
    "log1p": "np.log1p({0} ** 2)",
    "sqrt": "np.sqrt(1.0 + {0} ** 2)",
    "square": "np.square({0})",
    "negative": "-{0}",
    "reciprocal": "1.0 / (1.0 + {0} ** 2)",
    "arctan": "np.arctan({0})",
    "expm1": "np.expm1(np.tanh({0}))",
    "maximum0": "np.maximum({0}, 0.0)",
    "clip": "np.clip({0}, -0.5, 0.5)",
    "sigmoid": "ng.sigmoid({0})",
    "gelu": "ng.gelu({0})",
    "silu": "ng.silu({0})",
    "power": "np.power(1.0 + {0} ** 2, 1.5)",
    "scale": "{0} * 0.5 + 0.25",
}
BINARY: dict[str, str] = {
    "add": "{0} + {1}",
    "subtract": "{0} - {1}",
    "multiply": "{0} * {1}",
    "divide": "{0} / (1.0 + {1} ** 2)",
    "maximum": "np.maximum({0}, {1})",
    "hypot": "np.hypot({0}, {1})",
    "arctan2": "np.arctan2({0}, 2.0 + np.tanh({1}))",
    "logaddexp": "np.logaddexp({0}, {1})",
}
REDUCE: dict[str, str] = {
    "sum": "np.sum({0}{axis})",
    "mean": "np.mean({0}{axis})",
    "max": "np.max({0}{axis})",
    "min": "np.min({0}{axis})",
    "prod": "np.prod(np.tanh({0}) + 1.5{axis})",
    "std": "np.std({0}{axis})",
    "var": "np.var({0}{axis})",
    "logsumexp": "ng.logsumexp({0}{axis})",
    "norm": "np.linalg.norm({0}{axis})",
}


def floats(regs: Sequence[Register], ndim: int | None = None) -> list[Register]:
    return [r for r in regs if not r.integer and (ndim is None or len(r.shape) == ndim)]


def pick(rng: np.random.Generator, regs: Sequence[Register]) -> Register | None:
    """A register, the recent ones likelier, so programs are chains more than fans."""
    if not regs:
        return None
    weights = np.arange(1, len(regs) + 1, dtype=float) ** 2
    return regs[int(rng.choice(len(regs), p=weights / weights.sum()))]


def unary(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, floats(regs))
    name = str(rng.choice(sorted(UNARY)))
    return None if a is None else Step(name, UNARY[name], (a.name,), a.shape)


def partners(a: Register, regs: Sequence[Register]) -> list[Register]:
    """Registers that broadcast with ``a`` to ``a``'s shape: its shape, a scalar, a row."""
    return [r for r in floats(regs) if r.shape in (a.shape, (), a.shape[-1:])]


def binary(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, floats(regs))
    if a is None:
        return None
    b = pick(rng, partners(a, regs))
    if b is None:
        return None
    name = str(rng.choice(sorted(BINARY)))
    first, second = (a, b) if rng.random() < 0.7 else (b, a)
    return Step(name, BINARY[name], (first.name, second.name), a.shape)


def outer_broadcast(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    vectors = floats(regs, 1)
    if not vectors:
        return None
    a, b = pick(rng, vectors), pick(rng, vectors)
    assert a is not None and b is not None
    if rng.random() < 0.5:
        return Step("broadcast", "{0}[:, None] * {1}", (a.name, b.name), a.shape + b.shape)
    return Step("outer", "np.outer({0}, {1})", (a.name, b.name), a.shape + b.shape)


def reduction(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape])
    if a is None:
        return None
    name = str(rng.choice(sorted(REDUCE)))
    choices: list[int | None] = [None, *range(len(a.shape)), -1]
    axis = choices[int(rng.integers(len(choices)))]
    keepdims = bool(rng.random() < 0.3)
    if axis is None:
        shape: Shape = (1,) * len(a.shape) if keepdims else ()
    else:
        k = axis % len(a.shape)
        shape = a.shape[:k] + ((1,) if keepdims else ()) + a.shape[k + 1 :]
    text = "" if axis is None else f", axis={axis}"
    text += ", keepdims=True" if keepdims else ""
    return Step(name, REDUCE[name].replace("{axis}", text), (a.name,), shape)


def shared_index(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape and min(r.shape) >= INDEX_BOUND])
    if a is None:
        return None
    n = a.shape[0]
    rest = a.shape[1:]
    options: list[tuple[str, Shape]] = [
        ("{0}[1:3]", (2, *rest)),
        ("{0}[::-1]", a.shape),
        ("{0}[np.array([2, 0, 2])]", (3, *rest)),
        ("{0}[1]", rest),
        ("{0}[-1:]", (1, *rest)),
        ("{0}[..., ::2]", (*a.shape[:-1], (a.shape[-1] + 1) // 2)),
        ("{0}[None]", (1, *a.shape)),
    ]
    if rest:
        options += [("{0}[:, 1]", (n, *rest[1:])), ("{0}[np.array([0, 2]), np.array([2, 1])]", (2, *rest[1:]))]
    expr, shape = options[int(rng.integers(len(options)))]
    return Step("getitem", expr, (a.name,), shape)


def batched_index(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    """Indexing with the integer input: one index per example under vmap."""
    a = pick(rng, [r for r in floats(regs) if r.shape and min(r.shape) >= INDEX_BOUND])
    idx = [r for r in regs if r.integer and r.shape]  # the batched index, not the static k
    if a is None or not idx:
        return None
    i = idx[0]
    options: list[tuple[str, str, Shape]] = [
        ("index", "{0}[{1}]", i.shape + a.shape[1:]),
        ("take", "np.take({0}, {1}, axis=0)", i.shape + a.shape[1:]),
        ("index_scalar", "{0}[{1}[0]]", a.shape[1:]),
    ]
    if len(a.shape) == 2:
        options.append(("index_columns", "{0}[:, {1}]", a.shape[:1] + i.shape))
    name, expr, shape = options[int(rng.integers(len(options)))]
    return Step(name, expr, (a.name, i.name), shape)


def static_index(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    """Indexing with a static field of the record: the same for every example."""
    static = [r for r in regs if r.name == "k"]
    a = pick(rng, [r for r in floats(regs) if r.shape and min(r.shape) >= INDEX_BOUND])
    if a is None or not static:
        return None
    return Step("static_index", "{0}[{1}]", (a.name, "k"), a.shape[1:])


def where(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, floats(regs))
    if a is None:
        return None
    b = pick(rng, partners(a, regs))
    assert b is not None  # a partners itself
    if rng.random() < 0.5:
        return Step("where", "np.where({0} > {1}, {0}, {1} * 0.5)", (a.name, b.name), a.shape)
    return Step("where", "np.where({0} > 0.1, {0}, 0.1 * {0})", (a.name,), a.shape)


def join(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape])
    if a is None:
        return None
    same = [r for r in floats(regs) if r.shape == a.shape]
    b = pick(rng, same)
    assert b is not None
    if rng.random() < 0.5 and a.shape[0] + b.shape[0] <= 8:
        return Step("concatenate", "np.concatenate([{0}, {1}])", (a.name, b.name), (2 * a.shape[0], *a.shape[1:]))
    axis = int(rng.integers(-1, len(a.shape) + 1))
    k = axis % (len(a.shape) + 1)
    return Step("stack", f"np.stack([{{0}}, {{1}}], axis={axis})", (a.name, b.name), (*a.shape[:k], 2, *a.shape[k:]))


def products(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if 1 <= len(r.shape) <= 2])
    if a is None:
        return None
    fits = [r for r in floats(regs) if 1 <= len(r.shape) <= 2 and r.shape[0] == a.shape[-1]]
    b = pick(rng, fits)
    if b is None:
        return None
    out = a.shape[:-1] + b.shape[1:]
    letters_a = "ij"[2 - len(a.shape) :]
    letters_b = "jk"[: len(b.shape)]
    spec = f"{letters_a},{letters_b}->{letters_a[:-1]}{letters_b[1:]}"
    options = [
        ("matmul", "{0} @ {1}"),
        ("einsum", f"np.einsum('{spec}', {{0}}, {{1}})"),
        ("dot", "np.dot({0}, {1})"),
        ("tensordot", "np.tensordot({0}, {1}, axes=1)"),
    ]
    name, expr = options[int(rng.integers(len(options)))]
    return Step(name, expr, (a.name, b.name), out)


def shaping(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape])
    if a is None:
        return None
    options: list[tuple[str, str, Shape]] = [
        ("ravel", "np.ravel({0})", (int(np.prod(a.shape)),)),
        ("cumsum", "np.cumsum({0}, axis=-1)", a.shape),
        ("cumprod", "np.cumprod(np.tanh({0}) + 1.5, axis=0)", a.shape),
        ("sort", "np.sort({0}, axis=-1)", a.shape),
        ("flip", "np.flip({0}, axis=0)", a.shape),
        ("softmax", "ng.softmax({0}, axis=-1)", a.shape),
        ("log_softmax", "ng.log_softmax({0}, axis=-1)", a.shape),
        ("expand_dims", "np.expand_dims({0}, 0)", (1, *a.shape)),
    ]
    if len(a.shape) == 2:
        options += [
            ("transpose", "{0}.T", a.shape[::-1]),
            ("reshape", "{0}.reshape(-1, 1)", (int(np.prod(a.shape)), 1)),
            ("swapaxes", "np.swapaxes({0}, 0, 1)", a.shape[::-1]),
        ]
    if len(a.shape) == 1 and a.shape[0] % 2 == 0:
        options.append(("reshape", "{0}.reshape(2, -1)", (2, a.shape[0] // 2)))
    name, expr, shape = options[int(rng.integers(len(options)))]
    return Step(name, expr, (a.name,), shape)


def fourier(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape and r.shape[-1] % 2 == 0])
    if a is None:
        return None
    n = a.shape[-1]
    options: list[tuple[str, str, Shape]] = [
        ("fft", "np.real(np.fft.fft({0}))", a.shape),
        ("fft", "np.imag(np.fft.fft({0}))", a.shape),
        ("rfft", "np.real(np.fft.rfft({0}))", (*a.shape[:-1], n // 2 + 1)),
        ("irfft", f"np.fft.irfft(np.fft.rfft({{0}}) * 1.5, n={n})", a.shape),
        ("ifft", "np.real(np.fft.ifft({0} * 1j + {0}))", a.shape),
    ]
    name, expr, shape = options[int(rng.integers(len(options)))]
    return Step(name, expr, (a.name,), shape)


LINALG: list[tuple[str, str, Shape]] = [
    ("inv", "np.linalg.inv(well_conditioned({0}))", (3, 3)),
    ("det", "np.linalg.det(well_conditioned({0}))", ()),
    ("slogdet", "np.linalg.slogdet(well_conditioned({0}))[1]", ()),
    ("eigh", "np.linalg.eigh(spd({0}))[0]", (3,)),
    ("eigh_vectors", "np.linalg.eigh(spd({0}))[1] ** 2", (3, 3)),
    ("eigvalsh", "np.linalg.eigvalsh(spd({0}))", (3,)),
    ("svd", "np.linalg.svd(well_conditioned({0}), compute_uv=False)", (3,)),
    ("svd_u", "np.linalg.svd(well_conditioned({0}))[0] ** 2", (3, 3)),
    ("qr", "np.linalg.qr(well_conditioned({0}))[1]", (3, 3)),
    ("qr_q", "np.linalg.qr(well_conditioned({0}))[0]", (3, 3)),
    ("norm2", "np.linalg.norm(well_conditioned({0}), ord=2)", ()),
    ("norm_fro", "np.linalg.norm({0}, axis=-1)", (3,)),
    ("cholesky", "np.linalg.cholesky(spd({0}))", (3, 3)),
    ("cond", "np.linalg.cond(well_conditioned({0}))", ()),
    ("eigvals", "np.real(np.linalg.eigvals(spd({0})))", (3,)),
    ("matrix_power", "np.linalg.matrix_power(well_conditioned({0}), 2)", (3, 3)),
]


def linalg(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    a = pick(rng, [r for r in floats(regs) if r.shape == (3, 3)])
    if a is None:
        return None
    vectors = [r for r in floats(regs) if r.shape == (3,)]
    if vectors and rng.random() < 0.2:
        b = pick(rng, vectors)
        assert b is not None
        return Step("solve", "np.linalg.solve(well_conditioned({0}), {1})", (a.name, b.name), (3,))
    name, expr, shape = LINALG[int(rng.integers(len(LINALG)))]
    return Step(name, expr, (a.name,), shape)


def square_matrix(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    """A 3 x 3 matrix from vectors, so the linear algebra also sees batched matrices."""
    a = pick(rng, [r for r in floats(regs) if len(r.shape) == 1 and r.shape[0] >= 3])
    if a is None:
        return None
    b = pick(rng, [r for r in floats(regs) if len(r.shape) == 1 and r.shape[0] >= 3])
    assert b is not None
    return Step("outer", "np.outer({0}[:3], {1}[:3])", (a.name, b.name), (3, 3))


def more_numpy(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    """numpy's statistics, selections, masks and other functions that work under grad."""
    a = pick(rng, [r for r in floats(regs) if r.shape and r.shape[-1] >= 3])
    if a is None:
        return None
    idx = [r for r in regs if r.integer and r.shape]
    options: list[tuple[str, str, tuple[str, ...], Shape]] = [
        ("median", "np.median({0}, axis=-1)", (a.name,), a.shape[:-1]),
        ("percentile", "np.percentile({0}, 30.0, axis=-1)", (a.name,), a.shape[:-1]),
        ("quantile", "np.quantile({0}, 0.7, axis=0)", (a.name,), a.shape[1:]),
        ("partition", "np.partition({0}, 1, axis=-1)", (a.name,), a.shape),
        ("nan_to_num", "np.nan_to_num({0})", (a.name,), a.shape),
        ("fmax", "np.fmax({0}, 0.25)", (a.name,), a.shape),
        ("full_like", "{0} + np.full_like({0}, 0.5)", (a.name,), a.shape),
        ("any", "np.where(np.any({0} > 0.5), {0}, -{0})", (a.name,), a.shape),
        ("all", "np.where(np.all({0} > -2.0, axis=-1, keepdims=True), {0}, 2.0 * {0})", (a.name,), a.shape),
        ("count_nonzero", "{0} * np.count_nonzero({0} > 0)", (a.name,), a.shape),
        ("argsort", "np.take_along_axis({0}, np.argsort({0}, axis=-1), axis=-1)", (a.name,), a.shape),
        ("argmax", "np.ravel({0})[np.argmax({0})]", (a.name,), ()),
        ("interp", "np.interp({0}, np.array([-1.0, 0.0, 1.0]), np.array([0.0, 1.0, 3.0]))", (a.name,), a.shape),
        ("polyval", "np.polyval(np.array([0.5, -1.0, 2.0]), {0})", (a.name,), a.shape),
        ("select", "np.select([{0} > 0.5, {0} < -0.5], [{0}, 2.0 * {0}], 0.1 * {0})", (a.name,), a.shape),
        ("piecewise", "np.piecewise({0}, [{0} > 0], [lambda v: v ** 2, lambda v: v])", (a.name,), a.shape),
        ("apply_along_axis", "np.apply_along_axis(lambda r: r * r.sum(), -1, {0})", (a.name,), a.shape),
        ("frexp", "np.frexp(1.0 + {0} ** 2)[0]", (a.name,), a.shape),
        ("modf", "np.modf(3.0 * {0})[0]", (a.name,), a.shape),
        ("diff", "np.diff({0}, axis=-1)", (a.name,), (*a.shape[:-1], a.shape[-1] - 1)),
        ("roll", "np.roll({0}, 1, axis=-1)", (a.name,), a.shape),
        ("norm_logpdf", "ng.scipy.stats.norm.logpdf({0}, 0.5, 2.0)", (a.name,), a.shape),
        ("broadcast_arrays", "np.broadcast_arrays({0}, 1.5)[1] * {0}", (a.name,), a.shape),
    ]
    if len(a.shape) == 2:
        n, m = a.shape
        options += [
            ("flatten_f", "{0}.flatten('F')", (a.name,), (n * m,)),
            ("cov", "np.cov({0})", (a.name,), (n, n) if n > 1 else ()),  # (one variable: a 0-d result)
            ("corrcoef", "np.corrcoef({0})", (a.name,), (n, n) if n > 1 else ()),
            ("triu", "np.triu({0})", (a.name,), a.shape),
        ]
        if n == m:
            options.append(("trace", "np.trace({0})", (a.name,), ()))
    if len(a.shape) == 1:
        b = pick(rng, floats(regs, 1))
        assert b is not None
        options.append(("meshgrid", "np.meshgrid({0}, {1}, indexing='ij')[1]", (a.name, b.name), a.shape + b.shape))
    if idx:
        i = idx[0].name
        options += [
            ("isin", "np.where(np.isin(np.arange({0}.shape[-1]) % 3, {1}), {0}, 0.5 * {0})", (a.name, i), a.shape),
            ("bincount", "np.bincount({1}, weights={0}[..., :2].ravel()[:2], minlength=3)", (a.name, i), (3,)),
        ]
    name, expr, reads, shape = options[int(rng.integers(len(options)))]
    return Step(name, expr, reads, shape)


#: A sparse matrix programs close over (rows 0 and 2 stored, an unsorted row, an empty
#: row), and its pattern, for a matrix built from traced values inside a program.
SPARSE_INDICES = np.array([3, 0, 1, 2, 0])
SPARSE_INDPTR = np.array([0, 2, 2, 5])
SPARSE_A = scipy.sparse.csr_array((np.array([0.5, -1.0, 2.0, 0.25, 1.5]), SPARSE_INDICES, SPARSE_INDPTR), shape=(3, 4))


def sparse(rng: np.random.Generator, regs: Sequence[Register]) -> Step | None:
    """Products with a sparse matrix closed over, and with one built from traced values."""
    options: list[tuple[str, str, tuple[str, ...], Shape]] = []
    for r in floats(regs):
        if 1 <= len(r.shape) <= 2 and r.shape[0] == 4:
            options.append(("sparse_matmul", "SPARSE_A @ {0}", (r.name,), (3, *r.shape[1:])))
        if 1 <= len(r.shape) <= 2 and r.shape[0] == 3:
            options.append(("sparse_rmatmul", "SPARSE_A.T @ {0}", (r.name,), (4, *r.shape[1:])))
        if 1 <= len(r.shape) <= 2 and r.shape[-1] == 3:
            options.append(("sparse_vecmat", "{0} @ SPARSE_A", (r.name,), (*r.shape[:-1], 4)))
        if r.shape == (4,):
            options.append(("sparse_multiply", "(SPARSE_A * {0}).sum(axis=0)", (r.name,), (4,)))
            built = "sp.csr_array((np.concatenate([{0}, {0}[:1] * 2.0]), SPARSE_INDICES, SPARSE_INDPTR), shape=(3, 4))"
            options.append(("sparse_built", f"{built} @ np.cos({{0}})", (r.name,), (3,)))
            options.append(("sparse_built_sum", f"np.tanh({built}).sum(axis=0)", (r.name,), (4,)))
    if not options:
        return None
    name, expr, reads, shape = options[int(rng.integers(len(options)))]
    return Step(name, expr, reads, shape)


FAMILIES: list[tuple[Draw, float]] = [
    (more_numpy, 2.0),
    (unary, 3.0),
    (binary, 3.0),
    (outer_broadcast, 0.5),
    (reduction, 1.5),
    (shared_index, 1.0),
    (batched_index, 1.0),
    (static_index, 0.3),
    (where, 0.7),
    (join, 0.7),
    (products, 1.2),
    (shaping, 1.2),
    (fourier, 0.6),
    (linalg, 2.0),
    (square_matrix, 0.7),
    (sparse, 0.6),
]


def draw_step(rng: np.random.Generator, regs: Sequence[Register]) -> Step:
    """One step over ``regs``: a family drawn by weight, tried again where it does not fit."""
    weights = np.array([w for _, w in FAMILIES])
    while True:
        family = FAMILIES[int(rng.choice(len(FAMILIES), p=weights / weights.sum()))][0]
        step = family(rng, regs)
        if step is not None and int(np.prod(step.shape)) <= 64 and len(step.shape) <= 3:
            return step
