"""What an op spec draws, what a bad call is, and the drawing helpers the specs share.

A *spec* is a hypothesis strategy drawing :class:`Case` objects: valid calls of one op
(shapes, a value domain away from non-differentiable points, static arguments) with a
numpy reference for the forward. Each ``specs_<family>.py`` module, for its family of
``nodegrad.ops``, defines:

``SPECS``
    registered op name -> spec, for every op of the family;
``COMPOSITES``
    public function name -> spec, for the public functions built from several ops;
``BROADCASTING``
    op name -> spec whose operands are non-trivially broadcast (may be empty);
``BAD_CALLS``
    :class:`BadCall` objects: calls that must raise a ``NodegradError`` naming the op;
``COMPLEX``
    op or public function name -> :class:`ComplexSpec`: how its calls are drawn with complex
    operands (an op that refuses complex values has a ``BadCall`` raising ``DtypeError`` on
    a complex input instead). Optional for the linalg and fourier families.

``test_ops.py`` collects them and runs the generic checks over every spec, and
``test_complex.py`` the complex checks over every ``COMPLEX`` entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from nodegrad.errors import NodegradError
from tests.strategies import broadcastable_shapes, float_arrays, floats

__all__ = [
    "IMAGINARY",
    "BadCall",
    "Case",
    "ComplexSpec",
    "SomeShapes",
    "complexified",
    "diff_mask",
    "draw_operand",
    "int_index",
    "nontrivial",
    "unique_index",
    "well_separated_matrices",
]

SomeShapes = st.SearchStrategy[tuple[tuple[int, ...], ...]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn call of an op.

    ``fn`` (nodegrad) and ``ref`` (numpy) both take every float operand in ``values``, in
    order; ``diff`` says which of them are differentiated (the others are passed as
    constants, exercising the ops' mixed traced/untraced paths). ``static`` holds the
    non-float data the call closes over (indices, masks, class targets).
    """

    fn: Callable[..., Any]
    ref: Callable[..., Any]
    values: tuple[Any, ...]
    diff: tuple[bool, ...]
    static: tuple[Any, ...] = ()
    desc: str = ""

    @property
    def argnums(self) -> tuple[int, ...]:
        return tuple(k for k, d in enumerate(self.diff) if d)

    @property
    def args(self) -> tuple[Any, ...]:
        """The differentiated operands."""
        return tuple(self.values[k] for k in self.argnums)

    def of_args(self) -> Callable[..., Any]:
        """``fn`` as a function of the differentiated operands only, the rest fixed."""

        def f(*args: Any) -> Any:
            it = iter(args)
            return self.fn(*(next(it) if d else v for v, d in zip(self.values, self.diff, strict=True)))

        return f

    def astype(self, dtype: Any) -> Case:
        """The same case with every float operand cast to ``dtype``."""
        cast = [np.asarray(v, dtype=dtype) if isinstance(v, np.ndarray) else dtype(v) for v in self.values]
        return dataclasses.replace(self, values=tuple(cast))

    def single(self) -> Case:
        """The same case in single precision: float operands (arrays and Python numbers)
        as float32, complex ones as complex64."""
        narrow = {"f": np.float32, "c": np.complex64}

        def cast(v: Any) -> Any:
            if _is_array_of(v, "fc"):
                return v.astype(narrow[v.dtype.kind])
            return narrow["c" if type(v) is complex else "f"](v) if type(v) in (float, complex) else v

        return dataclasses.replace(self, values=tuple(cast(v) for v in self.values))


@dataclasses.dataclass(frozen=True)
class BadCall:
    """A call of op ``op`` that must raise ``error`` with ``names`` and ``fragments`` in its message.

    ``inputs`` become leaves first (float arrays params, anything else inputs), then
    ``prepare`` may record more nodes from them; what it returns is passed to ``call``.
    ``names`` is the name the message must contain when it is not ``op`` itself.
    """

    op: str
    inputs: tuple[Any, ...]
    call: Callable[..., Any]
    error: type[NodegradError]
    fragments: tuple[str, ...] = ()
    names: str = ""
    prepare: Callable[..., tuple[Any, ...]] | None = None

    def __str__(self) -> str:
        return f"{self.op}-{self.error.__name__}-{'-'.join(self.fragments)}"


# -- complex operands ------------------------------------------------------------------------

#: The default imaginary parts of complex operands: ``|Im| < pi / 2`` keeps ``tanh``,
#: ``sigmoid`` and ``tan`` of values with a small real part clear of their poles.
IMAGINARY = floats(-1.4, 1.4)


def _is_array_of(value: Any, kinds: str) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in kinds


def _is_float(value: Any) -> bool:
    return type(value) is float or _is_array_of(value, "f")


def _with_imaginary(draw: st.DrawFn, value: Any, imag: st.SearchStrategy[float], keep_zeros: bool) -> Any:
    """``value + 1j * parts``, parts drawn from ``imag``; with ``keep_zeros``, exact zeros
    stay exact zeros (the product and scan specs place them on purpose)."""
    if type(value) is float:
        return complex(value, 0.0 if keep_zeros and value == 0 else draw(imag))
    parts = draw(float_arrays(value.shape, elements=imag))
    if keep_zeros:
        parts[value == 0] = 0.0
    return np.asarray(value + 1j * parts, dtype=np.result_type(value.dtype, np.complex64))


@st.composite
def complexified(
    draw: st.DrawFn,
    spec: st.SearchStrategy[Case],
    ref: Callable[..., Any] | None = None,
    imag: st.SearchStrategy[float] | None = None,
    mixed: bool = True,
    keep_zeros: bool = False,
) -> Case:
    """Cases of ``spec`` with imaginary parts added to float operands: to all of them, or
    (``mixed``, half the time) to a non-empty subset, the others meeting them as real values.

    The spec keeps the real parts where it keeps its real operands (away from kinks, ties
    and poles), so the imaginary parts are the only new choice: ``imag`` (:data:`IMAGINARY`
    by default). ``ref`` replaces the spec's reference when that one takes real values only.
    With ``keep_zeros`` the spec's exact zeros stay exact (complex) zeros.
    """
    case = draw(spec)
    floating = [k for k, v in enumerate(case.values) if _is_float(v)]
    chosen = floating
    if mixed and len(floating) > 1 and draw(st.booleans()):
        chosen = sorted(draw(st.lists(st.sampled_from(floating), min_size=1, max_size=len(floating), unique=True)))
    values = list(case.values)
    for k in chosen:
        values[k] = _with_imaginary(draw, values[k], IMAGINARY if imag is None else imag, keep_zeros)
    return dataclasses.replace(
        case, values=tuple(values), ref=case.ref if ref is None else ref, desc=f"{case.desc}; complex operands {chosen}"
    )


@dataclasses.dataclass(frozen=True)
class ComplexSpec:
    """How one op (or public function) is drawn with complex operands.

    ``spec`` draws real cases that :func:`complexified` gives imaginary parts (from
    ``imag``), with ``ref`` as the numpy reference if the spec's own takes real values
    only; with ``drawn_complex`` the spec draws complex cases itself and is used as it is.
    ``holomorphic``: the function is holomorphic in its operands (complex derivatives are
    checked too); otherwise it is a selection, a permutation or a non-holomorphic function
    (``abs``, ``real``, ``var``, ...), checked along real and imaginary directions alone.
    ``keep_zeros``: the spec's exact zeros stay exact zeros (products with zeros).
    """

    spec: st.SearchStrategy[Case]
    ref: Callable[..., Any] | None = None
    imag: st.SearchStrategy[float] | None = None
    holomorphic: bool = False
    drawn_complex: bool = False
    keep_zeros: bool = False

    def cases(self, mixed: bool = True) -> st.SearchStrategy[Case]:
        """Complex cases; with ``mixed``, some real operands meet complex ones."""
        if self.drawn_complex:
            return self.spec
        return complexified(self.spec, self.ref, self.imag, mixed, self.keep_zeros)


# -- drawing helpers ------------------------------------------------------------------------


def draw_operand(draw: st.DrawFn, shape: tuple[int, ...], elements: st.SearchStrategy[float] | None = None) -> Any:
    """An array of ``shape``; for shape ``()`` sometimes a plain Python float instead."""
    elements = floats() if elements is None else elements
    if shape == () and draw(st.booleans()):
        return draw(elements)
    return draw(float_arrays(shape, elements=elements))


@st.composite
def diff_mask(draw: st.DrawFn, n: int) -> tuple[bool, ...]:
    """Usually every operand differentiated; otherwise a random non-empty subset."""
    if n == 1 or draw(st.booleans()):
        return (True,) * n
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if not any(mask):
        mask[draw(st.integers(0, n - 1))] = True
    return tuple(mask)


def nontrivial(num_shapes: int) -> SomeShapes:
    """Broadcastable shapes where at least one input is actually stretched or extended."""
    return broadcastable_shapes(num_shapes).filter(
        lambda shapes: any(s != np.broadcast_shapes(*shapes) for s in shapes)
    )


@st.composite
def int_index(draw: st.DrawFn, shape: tuple[int, ...], *, unique: bool = False) -> Any:
    """Integer arrays indexing the first ``k >= 1`` axes of ``shape`` (``shape`` has ``ndim >= 1``).

    Negative positions included; repeats included unless ``unique``, in which case each
    element is selected at most once.
    """
    k = draw(st.integers(1, len(shape)))
    size = int(np.prod(shape[:k]))
    flat = draw(
        st.lists(
            st.integers(0, size - 1), min_size=0 if unique else 1, max_size=min(size, 5) if unique else 6, unique=unique
        )
    )
    positions = np.unravel_index(np.asarray(flat, dtype=np.int64), shape[:k])
    negative = draw(st.lists(st.booleans(), min_size=k, max_size=k))
    index = tuple(p - n if neg else p for p, n, neg in zip(positions, shape[:k], negative, strict=True))
    return index[0] if k == 1 and draw(st.booleans()) else index  # a bare array, or a tuple of them


@st.composite
def unique_index(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[str, Any]:
    """``(kind, index)``: an index selecting each element of an array of ``shape`` at most once."""
    kinds = ["basic", "integer arrays", "boolean mask"] if shape else ["basic"]
    kind = draw(st.sampled_from(kinds))
    if kind == "basic":
        return kind, draw(hnp.basic_indices(shape, allow_ellipsis=True))
    if kind == "integer arrays":
        return kind, draw(int_index(shape, unique=True))
    return kind, draw(hnp.arrays(np.bool_, shape[: draw(st.integers(1, len(shape)))]))


def well_separated_matrices(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """Matrices (the last two axes of ``shape``) with singular values at least 0.2 and
    0.2 apart, rotated by random orthogonal factors: each singular value is then a smooth
    function of the entries near the drawn point, as central differences need."""
    *batch, m, n = shape
    k = min(m, n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = np.empty(shape)
    for index in np.ndindex(*batch):
        values = draw(st.lists(st.integers(1, 15), min_size=k, max_size=k, unique=True))
        s = 0.2 * np.sort(np.array(values, dtype=float))[::-1]
        left, _ = np.linalg.qr(rng.standard_normal((m, m)))
        right, _ = np.linalg.qr(rng.standard_normal((n, n)))
        out[index] = (left[:, :k] * s) @ right[:k, :]
    return out
