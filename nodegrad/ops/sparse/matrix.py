"""A scipy.sparse matrix inside a transform: its stored values traced, its pattern static.

A CSR, CSC or COO argument (an ``sparray`` or an ``spmatrix``) reaches the function as a
:class:`SparseMatrix`: its ``data`` is what the transform follows (a traced, batched or
staged 1-D array, one value per stored entry), its :class:`~.pattern.Pattern` the rest.
It speaks scipy's API for what a sparse model is made of, and every op keeps to the
stored entries: a product never forms the dense matrix, an elementwise function is
applied where ``f(0) == 0`` only, and what would fill in every entry silently (``exp``,
adding a dense matrix larger than :data:`DENSE_LIMIT`) is refused naming the op and the
size. Returned from the function, it is a scipy matrix again, of the argument's class.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from nodegrad.engine.levels import FOREIGN, INTERPRETED
from nodegrad.engine.traced import DEFERS_TO, foreign_operand
from nodegrad.errors import ArgumentError, NoGradientError, ShapeError, user_location
from nodegrad.ops.sparse import selection, structure
from nodegrad.ops.sparse.pattern import Pattern, pattern_of
from nodegrad.ops.sparse.products import matmul, rmatmul
from nodegrad.ops.sparse.selection import is_int

__all__ = ["DENSE_LIMIT", "SparseMatrix", "is_sparse", "moved_matrix", "sparse_of"]

#: The most entries an op may fill in densely without being asked to (``X + dense``);
#: ``X.toarray()`` is always allowed.
DENSE_LIMIT = 10_000_000

#: numpy's ufuncs of one argument that map 0 to 0: applied to the stored values, they keep
#: the pattern (scipy's own methods of the same names do so too).
_ZERO_PRESERVING = [
    "negative", "positive", "absolute", "sign", "sqrt", "square", "sin", "sinh", "tan", "tanh", "arcsin", "arcsinh",
    "arctan", "arctanh", "expm1", "log1p", "deg2rad", "rad2deg", "floor", "ceil", "trunc", "rint", "conjugate", "real",
    "imag", "fabs", "cbrt",
]  # fmt: skip
PATTERN_KEEPING = frozenset(getattr(np, name) for name in _ZERO_PRESERVING)
#: Those that are linear: applied to each of an entry's duplicates, they give the entry's.
_LINEAR = frozenset({np.negative, np.positive, np.conjugate, np.real, np.imag, np.deg2rad, np.rad2deg})

#: scipy's methods of those names, on the stored values.
_METHODS = frozenset(
    ["sin", "sinh", "tan", "tanh", "arcsin", "arcsinh", "arctan", "arctanh", "expm1", "log1p", "sqrt", "sign",
     "deg2rad", "rad2deg", "floor", "ceil", "trunc", "rint"]
)  # fmt: skip


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a sparse matrix nodegrad differentiates: a :class:`SparseMatrix`
    or a scipy.sparse matrix or array."""
    return type(value) is SparseMatrix or _is_scipy_sparse(value)


def _is_scipy_sparse(value: Any) -> bool:
    return type(value).__module__.startswith("scipy.sparse") and hasattr(value, "format")


def sparse_of(value: Any) -> SparseMatrix:
    """``value`` (a SparseMatrix, or a scipy matrix closed over) as a SparseMatrix."""
    if type(value) is SparseMatrix:
        return value
    if value.format not in ("csr", "csc", "coo"):
        value = value.tocsr()
    return SparseMatrix(value.data, pattern_of(value))


def _is_scalar(value: Any) -> bool:
    return isinstance(value, numbers.Number | np.generic) or (np.ndim(value) == 0 and not is_sparse(value))


def moved_matrix(data: Any, linear: structure.LinearMap) -> SparseMatrix:
    """The matrix holding the values ``linear`` moves ``data`` to, on its pattern."""
    assert linear.pattern is not None
    return SparseMatrix(structure.moved(data, linear), linear.pattern)


def _comparison(written: str) -> Any:
    def compared(self: SparseMatrix, other: Any) -> Any:
        msg = (
            f"a comparison of a differentiated sparse matrix: {self._where(written)}; compare its values, X.data, "
            "or X.toarray()"
        )
        raise NoGradientError(msg)

    return compared


class SparseMatrix:
    """A sparse matrix whose stored values a transform follows: what a scipy.sparse
    argument is inside ``grad``, ``vmap``, ``replay`` and the rest.

    It answers as scipy does for ``@`` (with a dense vector or matrix, on either side),
    ``.dot``, ``.T``/``.transpose()``, ``.multiply``, ``*`` and ``/`` by a number (``*`` is
    a matrix product for an ``spmatrix``, as in scipy), ``-X``, ``abs(X)``, ``X.power(n)``,
    the elementwise methods that map 0 to 0 (``sin``, ``expm1``, ``log1p``, ``sqrt``,
    ``sign``, ...), numpy's ufuncs of that kind, ``sum``/``mean`` (with ``axis``),
    ``diagonal``, ``toarray``/``todense``, rows and columns selected (``X[idx]``,
    ``X[a:b]``, ``X[:, cols]``), ``tocsr``/``tocsc``/``tocoo``, and ``+``/``-`` of a
    matrix on the same pattern. ``shape``, ``nnz``, ``dtype``, ``format`` and
    ``ndim`` are scipy's.

    Parameters
    ----------
    data : array
        The stored values, one per entry of ``pattern``.
    pattern : Pattern
        Where they are stored (class, format, shape, index arrays).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import nodegrad as ng
    >>> X = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> g = ng.grad(lambda X: (X @ np.array([1.0, 2.0, 3.0])).sum())(X)
    >>> type(g).__name__, g.data
    ('csr_array', array([1., 3., 2.]))
    """

    __slots__ = ("data", "pattern")
    __array_priority__ = 30.0
    __pandas_priority__ = 6000

    def __init__(self, data: Any, pattern: Pattern) -> None:
        self.data = data
        self.pattern = pattern

    # -- scipy's attributes ------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        return self.pattern.nnz

    @property
    def format(self) -> str:
        return self.pattern.format

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(self.data.dtype)

    @property
    def size(self) -> int:
        return self.pattern.nnz

    def __len__(self) -> int:
        msg = "sparse matrix length is ambiguous; use getnnz() or shape[0]"
        raise TypeError(msg)

    def getnnz(self) -> int:
        return self.pattern.nnz

    def __repr__(self) -> str:
        kind = type(self.data).__name__
        return (
            f"<SparseMatrix ({self.pattern.cls.__name__}) of shape {self.shape}, {self.nnz} stored values "
            f"({kind} {self.dtype})>"
        )

    def _with(self, data: Any, pattern: Pattern | None = None) -> SparseMatrix:
        return SparseMatrix(data, self.pattern if pattern is None else pattern)

    def _where(self, op: str) -> str:
        return f"{op} on a sparse {self.shape[0]}x{self.shape[1]} matrix [at {user_location()}]"

    # -- products ------------------------------------------------------------------------------------
    def __matmul__(self, other: Any) -> Any:
        other = self._factor(other, 0, f"a sparse {self.shape} matrix @ an operand of shape {np.shape(other)}")
        return matmul(self.data, other, self.pattern)

    def __rmatmul__(self, other: Any) -> Any:
        ndim = np.ndim(other)
        other = self._factor(other, -1, f"an operand of shape {np.shape(other)} @ a sparse {self.shape} matrix")
        if ndim == 1:
            return rmatmul(self.data, other, self.pattern)
        return np.transpose(rmatmul(self.data, np.transpose(other), self.pattern))

    def _factor(self, other: Any, axis: int, written: str) -> Any:
        """The dense factor of a product, checked: a vector or matrix whose ``axis`` meets
        the matrix (not a number, nor a sparse matrix)."""
        if is_sparse(other):
            msg = (
                f"sparse @ sparse is not differentiated: {self._where('@')}; multiply by a dense matrix "
                "(other.toarray()), or keep one factor dense"
            )
            raise NoGradientError(msg)
        if _is_scalar(other):
            msg = "Scalar operands are not allowed, use '*' instead"
            raise ValueError(msg)
        meets = self.shape[1] if axis == 0 else self.shape[0]
        if np.ndim(other) not in (1, 2) or np.shape(other)[axis] != meets:
            msg = f"matmul: dimension mismatch: {written} [at {user_location()}]"
            raise ShapeError(msg)
        return _dense_operand(other)

    def dot(self, other: Any) -> Any:
        """``X @ other`` (``X * other`` for a number)."""
        return self * other if _is_scalar(other) else self @ other

    # -- transposes and formats ----------------------------------------------------------------
    def transpose(self, axes: Any = None, copy: bool = False) -> SparseMatrix:
        """``X.T``: the same values (a CSR matrix's transpose is CSC, as in scipy)."""
        if axes is not None and tuple(axes) != (1, 0):
            msg = "Sparse matrices do not support an 'axes' parameter other than (1, 0)"
            raise ValueError(msg)
        return self._with(self.data, pattern_of(self.pattern.template.transpose()))

    @property
    def T(self) -> SparseMatrix:  # noqa: N802  (scipy's name)
        return self.transpose()

    def tocsr(self, copy: bool = False) -> SparseMatrix:
        """The matrix in CSR format (duplicates summed, as scipy's ``tocsr``)."""
        return self._to("csr")

    def tocsc(self, copy: bool = False) -> SparseMatrix:
        """The matrix in CSC format (duplicates summed, as scipy's ``tocsc``)."""
        return self._to("csc")

    def tocoo(self, copy: bool = False) -> SparseMatrix:
        """The matrix in COO format (the same entries, in stored order)."""
        return self._to("coo")

    def asformat(self, format: str | None, copy: bool = False) -> SparseMatrix:  # noqa: A002  (scipy's name)
        return self if format is None else self._to(format)

    def _to(self, fmt: str) -> SparseMatrix:
        if fmt == self.format:
            return self
        p = self.pattern
        if fmt not in ("csr", "csc", "coo"):
            msg = f"a differentiated sparse matrix is CSR, CSC or COO, not {fmt.upper()} [at {user_location()}]"
            raise ArgumentError(msg)
        if fmt == "coo":
            linear = structure.by_probe(p, lambda m: m.tocoo(), p.nnz)
        else:
            template = p.template.tocsr() if fmt == "csr" else p.template.tocsc()
            linear = structure.converted(p, type(template))
        return self._moved(linear)

    def _deduped(self) -> SparseMatrix:
        """The matrix with duplicate entries summed (as scipy's ``sum_duplicates``), where it
        has any: what a function of the entries is applied to, not of each stored value."""
        p = self.pattern
        if not structure.has_duplicates(p):
            return self
        return self._moved(structure.converted(p, p.cls))

    def _moved(self, linear: structure.LinearMap) -> SparseMatrix:
        return moved_matrix(self.data, linear)

    # -- elementwise -------------------------------------------------------------------------------
    def multiply(self, other: Any) -> SparseMatrix:
        """Entry by entry with a number, a dense array broadcast to the matrix's shape, or a
        sparse matrix on the same pattern: the pattern is kept."""
        if _is_scalar(other):
            return self._with(self.data * other)
        if is_sparse(other):
            deduped = self._deduped()
            return deduped._with(deduped.data * deduped._same_pattern(sparse_of(other)._deduped(), "multiply").data)
        return self._with(self.data * self._read_dense(other, "multiply"))

    def _read_dense(self, other: Any, op: str) -> Any:
        """A dense operand broadcast to the matrix's shape, read at the stored entries."""
        shape = np.shape(other)
        try:
            np.broadcast_shapes(shape, self.shape)
        except ValueError:
            msg = f"{op}: a dense operand of shape {shape} does not broadcast to {self._where(op)}"
            raise ShapeError(msg) from None
        if len(shape) == 2 and shape == self.shape:
            return other[self.pattern.rows, self.pattern.cols]
        flat = np.reshape(other, (-1,))
        if shape[-1:] == (self.shape[1],) and math.prod(shape) == self.shape[1]:
            return flat[self.pattern.cols]
        if shape[-2:] == (self.shape[0], 1):
            return flat[self.pattern.rows]
        return np.broadcast_to(other, self.shape)[self.pattern.rows, self.pattern.cols]

    def _same_pattern(self, other: Any, op: str) -> SparseMatrix:
        other = sparse_of(other)
        if other.pattern != self.pattern:
            msg = (
                f"{op} of two sparse matrices on different patterns is not differentiated: {self._where(op)} "
                f"and a {other.shape} one with {other.nnz} stored values"
            )
            raise NoGradientError(msg)
        return other

    def power(self, n: Any, dtype: Any = None) -> SparseMatrix:
        """Each stored value to the power ``n`` (a number)."""
        if not _is_scalar(n):
            msg = "input is not scalar"
            raise NotImplementedError(msg)
        if type(n) not in INTERPRETED and n == 0:
            msg = (
                "zero power is not supported as it would densify the matrix.\n"
                "Use `np.ones(A.shape, dtype=A.dtype)` for this case."
            )
            raise NotImplementedError(msg)
        deduped = self._deduped()
        data = deduped.data**n
        return deduped._with(data if dtype is None else data.astype(dtype))

    def __mul__(self, other: Any) -> Any:
        if _is_scalar(other):
            return self._with(self.data * other)
        if self.pattern.is_matrix:  # an spmatrix's * is a matrix product
            return self @ other
        return self.multiply(other)

    def __rmul__(self, other: Any) -> Any:
        if _is_scalar(other):
            return self._with(other * self.data)
        if self.pattern.is_matrix:
            return other @ self
        return self.multiply(other)

    def __truediv__(self, other: Any) -> SparseMatrix:
        if not _is_scalar(other):
            msg = (
                f"dividing by a {np.shape(other)} array would fill in every entry: {self._where('/')}; "
                "divide the values, X.multiply(1 / d), where d is nonzero"
            )
            raise NoGradientError(msg)
        return self._with(self.data / other)

    def __neg__(self) -> SparseMatrix:
        return self._with(-self.data)

    def __pos__(self) -> SparseMatrix:
        return self

    def __abs__(self) -> SparseMatrix:
        deduped = self._deduped()
        return deduped._with(abs(deduped.data))

    def conj(self) -> SparseMatrix:
        return self._with(np.conj(self.data))

    conjugate = conj

    def __add__(self, other: Any) -> Any:
        if _is_scalar(other):
            if type(other) not in INTERPRETED and other == 0:
                return self
            msg = "adding a nonzero scalar to a sparse array is not supported"
            raise NotImplementedError(msg)
        if is_sparse(other):
            return self._with(self.data + self._same_pattern(other, "+").data)
        return self._densely("+") + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self + (-other)

    def __rsub__(self, other: Any) -> Any:
        return (-self) + other

    def _densely(self, op: str) -> Any:
        size = self.shape[0] * self.shape[1]
        if size > DENSE_LIMIT:
            msg = (
                f"{op} with a dense operand would make the sparse matrix dense ({size:,} entries, "
                f"{size * self.dtype.itemsize / 1e9:.1f} GB): {self._where(op)}; call X.toarray() to do it on purpose"
            )
            raise ShapeError(msg)
        return self.toarray()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        if len(inputs) == 1 and ufunc in PATTERN_KEEPING:
            applied = self if ufunc in _LINEAR else self._deduped()
            return applied._with(ufunc(applied.data, **kwargs))
        if ufunc is np.matmul and len(inputs) == 2:
            return inputs[0] @ inputs[1] if inputs[0] is self else self.__rmatmul__(inputs[0])
        if ufunc is np.multiply and len(inputs) == 2:
            other = inputs[1] if inputs[0] is self else inputs[0]
            return self.multiply(other)
        msg = (
            f"np.{ufunc.__name__} of a sparse matrix would not keep its pattern (it does not map 0 to 0, or takes "
            f"a second operand): {self._where(f'np.{ufunc.__name__}')}; apply it to X.data on purpose, or to "
            "X.toarray()"
        )
        raise NoGradientError(msg)

    __eq__ = _comparison("==")
    __ne__ = _comparison("!=")
    __lt__ = _comparison("<")
    __le__ = _comparison("<=")
    __gt__ = _comparison(">")
    __ge__ = _comparison(">=")
    __hash__ = object.__hash__

    @property
    def real(self) -> SparseMatrix:
        """The real parts of the stored values, on the same pattern."""
        return self._with(np.real(self.data))

    @property
    def imag(self) -> SparseMatrix:
        """The imaginary parts of the stored values, on the same pattern."""
        return self._with(np.imag(self.data))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        operand = foreign_operand(self)  # a scipy matrix's operator: it gives way to ours
        if operand is not None:
            return operand
        msg = f"np.asarray() of a differentiated sparse matrix: {self._where('np.asarray')}; call X.toarray()"
        raise NoGradientError(msg)

    # -- reductions --------------------------------------------------------------------------------
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """The sum of every entry, or of each column (``axis=0``) or row (``axis=1``); an
        ``spmatrix`` gives a 2-d row or column, as scipy's (an ``np.matrix`` there)."""
        axis = _axis(axis)
        kind = _sum_dtype(self.dtype) if dtype is None else np.dtype(dtype)
        data = self.data if kind == self.dtype else self.data.astype(kind)
        if axis is None:
            return np.sum(data)
        m, n = self.shape
        if axis == 0:  # (ones of the values' type: a float32 matrix sums in float32, as scipy's)
            total = rmatmul(data, np.ones(m, kind), self.pattern)
            return np.reshape(total, (1, n)) if self.pattern.is_matrix else total
        total = matmul(data, np.ones(n, kind), self.pattern)
        return np.reshape(total, (m, 1)) if self.pattern.is_matrix else total

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """The mean of every entry (implicit zeros counted), or of each column or row."""
        axis = _axis(axis)
        count = self.shape[0] * self.shape[1] if axis is None else self.shape[axis]
        return self.sum(axis, dtype) / count

    def diagonal(self, k: int = 0) -> Any:
        """Diagonal ``k`` as a dense vector (duplicates summed)."""
        return structure.moved(self.data, structure.diagonal_map(self.pattern, int(k)))

    def toarray(self, order: Any = None, out: Any = None) -> Any:
        """The dense matrix (duplicates summed): the one op that densifies, on purpose."""
        flat = structure.moved(self.data, structure.densified(self.pattern))
        return np.reshape(flat, self.shape)

    def todense(self, order: Any = None, out: Any = None) -> Any:
        """The dense matrix, as :meth:`toarray` (a 2-d array, also for an ``spmatrix``)."""
        return self.toarray()

    # -- selection -------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))
        if is_int(rows) and is_int(cols):
            return self._entry(rows, cols)
        if is_int(rows) and not self.pattern.is_matrix:
            msg = (
                f"X[i] of a sparse array is a 1-d sparse array, which nodegrad does not differentiate: "
                f"{self._where('X[i]')}; write X[[i]] for a 1-row matrix"
            )
            raise ArgumentError(msg)
        return self._moved(selection.selected(self.pattern, key, rows, cols))

    def _entry(self, i: Any, j: Any) -> Any:
        m, n = self.shape
        if not (-m <= i < m and -n <= j < n):
            msg = f"index ({i}, {j}) out of range for {self._where('X[i, j]')}"
            raise IndexError(msg)
        i, j = i % m, j % n
        on = np.flatnonzero((self.pattern.rows == i) & (self.pattern.cols == j))
        return np.sum(self.data[on]) if on.size else np.zeros((), self.dtype)[()]

    # -- scipy's elementwise methods ---------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in _METHODS:
            deduped = self._deduped()  # (as scipy's: on the entries, duplicates summed)
            return lambda: deduped._with(getattr(np, name)(deduped.data))
        msg = f"a differentiated sparse matrix has no attribute {name!r} (SparseMatrix speaks part of scipy's API)"
        raise AttributeError(msg)

    def __reduce__(self) -> Any:
        msg = "a SparseMatrix holds values a transform follows: return it from the function to get a scipy matrix"
        raise TypeError(msg)


def _sum_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type scipy sums values of ``dtype`` in: a platform integer for booleans and
    narrower integers, the values' own type otherwise."""
    if dtype.kind in "bi" and np.can_cast(dtype, np.int_):
        return np.dtype(np.int_)
    if dtype.kind == "u" and np.can_cast(dtype, np.uint):
        return np.dtype(np.uint)
    return dtype


def _dense_operand(value: Any) -> Any:
    return value if type(value) in INTERPRETED or isinstance(value, np.ndarray) else np.asarray(value)


def _axis(axis: Any) -> int | None:
    if axis is None:
        return None
    if isinstance(axis, tuple):
        if sorted(a % 2 for a in axis) == [0, 1]:
            return None
        (axis,) = axis
    axis = int(axis)
    if axis not in (-2, -1, 0, 1):
        msg = f"axis {axis} out of range for a 2-d sparse matrix"
        raise ValueError(msg)
    return axis % 2


DEFERS_TO[SparseMatrix] = lambda value: value  # a traced value met with one gives way to it
FOREIGN.add(SparseMatrix)  # and a staged one
