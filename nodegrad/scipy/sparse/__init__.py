"""``scipy.sparse`` for traced values: ``import nodegrad.scipy.sparse as sp``.

A scipy.sparse CSR, CSC or COO matrix (``sparray`` or ``spmatrix``) needs no wrapping to
be differentiated: passed to a transform, its stored values are what the transform
follows and its gradient is a matrix of its own class on its own pattern (inside the
function it is a :class:`SparseMatrix`, which speaks scipy's API); closed over, it meets
traced values through its own operators (``X @ w``). This namespace adds what scipy's own
functions cannot take traced values for: building a matrix from traced values on a static
pattern (:func:`csr_array`, :func:`coo_array`, ...), :func:`vstack`, :func:`hstack`,
:func:`diags`, and :func:`linalg.spsolve <nodegrad.scipy.sparse.linalg.spsolve>`. Given no
traced value, each is scipy's own function.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> import nodegrad.scipy.sparse as sp
>>> indices, indptr = np.array([0, 2, 1]), np.array([0, 2, 3])
>>> def edge_loss(w):  # learned edge weights on a fixed graph
...     A = sp.csr_array((w, indices, indptr), shape=(2, 3))
...     return (A @ np.ones(3)).sum() ** 2
>>> ng.grad(edge_loss)(np.array([1.0, 2.0, 3.0]))
array([12., 12., 12.])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as _sparse

from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import INTERPRETED
from nodegrad.ops.sparse import SparseMatrix, is_sparse, pattern_of, sparse_of
from nodegrad.ops.sparse.matrix import moved_matrix
from nodegrad.ops.sparse.structure import converted, from_probe, probe_values
from nodegrad.scipy.sparse import linalg as linalg  # (scipy.sparse.linalg, as an attribute)

__all__ = [
    "SparseMatrix",
    "coo_array",
    "coo_matrix",
    "csc_array",
    "csc_matrix",
    "csr_array",
    "csr_matrix",
    "diags",
    "diags_array",
    "hstack",
    "issparse",
    "vstack",
]


def issparse(x: Any) -> bool:
    """Whether ``x`` is a sparse matrix: scipy's, or a :class:`SparseMatrix` (a sparse
    argument inside a transform).

    Examples
    --------
    >>> import scipy.sparse
    >>> import nodegrad.scipy.sparse as sp
    >>> sp.issparse(scipy.sparse.eye_array(2)), sp.issparse([[1.0]])
    (True, False)
    """
    return is_sparse(x) or _sparse.issparse(x)


def _traced(value: Any) -> bool:
    return type(value) in INTERPRETED


def _build(cls: Any, arg1: Any, shape: Any, dtype: Any, copy: bool) -> Any:
    """``cls(arg1, shape)``, as scipy builds it; a SparseMatrix where the values in
    ``arg1`` are traced (the pattern from the index arrays, which must be plain)."""
    if not (isinstance(arg1, tuple) and arg1 and _traced(arg1[0])):
        if isinstance(arg1, SparseMatrix):
            return _converted(arg1, cls)
        return cls(arg1, shape=shape, dtype=dtype, copy=copy)
    values, *where = arg1
    if np.ndim(values) != 1:
        msg = f"{cls.__name__}: the values must be 1-d, got shape {np.shape(values)}"
        raise ValueError(msg)
    placeholder = np.zeros(np.shape(values)[0])
    coordinates = len(where) == 1 and isinstance(where[0], tuple | list) and len(where[0]) == 2
    if coordinates and cls._format != "coo":  # the COO form of a compressed constructor: scipy sums duplicates
        coo = _sparse.coo_array((placeholder, tuple(where[0])), shape=shape)
        made = SparseMatrix(values, pattern_of(coo))
        return _converted(made, cls)
    template = cls((placeholder, *where), shape=shape, copy=False)
    if template.nnz != placeholder.size or template.format not in ("csr", "csc", "coo"):
        msg = f"{cls.__name__}: the pattern holds {template.nnz} values, {placeholder.size} given"
        raise ValueError(msg)
    data = values if dtype is None else values.astype(dtype)
    return SparseMatrix(data, pattern_of(template))


def _converted(made: SparseMatrix, cls: Any) -> SparseMatrix:
    """``made`` as a matrix of class ``cls`` (scipy's conversion: a compressed format sums
    duplicates)."""
    if made.pattern.cls is cls:
        return made
    if cls._format == "coo":
        coo = made.tocoo()
        template = cls((np.ones(coo.nnz), (coo.pattern.rows, coo.pattern.cols)), shape=made.shape)
        return SparseMatrix(coo.data, pattern_of(template))
    return moved_matrix(made.data, converted(made.pattern, cls))


_CONSTRUCTOR_DOC = """scipy's ``{name}``, also from traced values on a fixed pattern.

    ``{name}((values, {where}), shape)`` with traced ``values`` is a :class:`SparseMatrix`
    of class ``{name}`` holding them as its stored values; the form ``(values, (rows, cols))``
    is taken by every class (a compressed format sums duplicate entries, as scipy does).
    Given no traced values, scipy's own constructor.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.sparse as sp
    >>> def total(v):
    ...     return (sp.{name}({example}, shape=(2, 2)) @ np.array([1.0, 2.0])).sum()
    >>> ng.grad(total)(np.array([3.0, 4.0]))
    array([1., 2.])
    """


def _constructor(cls: Any) -> Any:
    def build(arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False) -> Any:
        return _build(cls, arg1, shape, dtype, copy)

    build.__name__ = build.__qualname__ = cls.__name__
    build.__doc__ = _CONSTRUCTOR_DOC.format(
        name=cls.__name__,
        where="(rows, cols)" if cls._format == "coo" else "indices, indptr",
        example="(v, (np.array([0, 1]), np.array([0, 1])))" if cls._format == "coo" else "(v, [0, 1], [0, 1, 2])",
    )
    return guarded(build)


csr_array = _constructor(_sparse.csr_array)
csc_array = _constructor(_sparse.csc_array)
coo_array = _constructor(_sparse.coo_array)
csr_matrix = _constructor(_sparse.csr_matrix)
csc_matrix = _constructor(_sparse.csc_matrix)
coo_matrix = _constructor(_sparse.coo_matrix)


def _stack(name: str, stack: Any, blocks: Any, format: str | None, dtype: Any) -> Any:  # noqa: A002
    """scipy's ``stack(blocks)``, with the values of every block moved to the result."""
    blocks = list(blocks)
    if not any(isinstance(b, SparseMatrix) for b in blocks):
        return stack(blocks, format=format, dtype=dtype)
    parts = [sparse_of(b) if issparse(b) else sparse_of(_sparse.csr_array(np.atleast_2d(b))) for b in blocks]
    sizes = [part.nnz for part in parts]
    probes = [part.pattern.matrix(v) for part, v in zip(parts, probe_values(sizes), strict=True)]
    linear = from_probe(stack(probes, format=format or parts[0].format), sum(sizes), sum(sizes))
    return moved_matrix(np.concatenate([part.data for part in parts]), linear)


@guarded
def vstack(blocks: Any, format: str | None = None, dtype: Any = None) -> Any:  # noqa: A002  (scipy's name)
    """Stack sparse matrices vertically (scipy's ``vstack``), traced values moved along.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.sparse as sp
    >>> X = scipy.sparse.csr_array(np.eye(2))
    >>> g = ng.grad(lambda X: sp.vstack([X, 2 * X]).sum())(X)
    >>> g.data
    array([3., 3.])
    """
    return _stack("vstack", _sparse.vstack, blocks, format, dtype)


@guarded
def hstack(blocks: Any, format: str | None = None, dtype: Any = None) -> Any:  # noqa: A002  (scipy's name)
    """Stack sparse matrices side by side (scipy's ``hstack``), traced values moved along.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.sparse as sp
    >>> X = scipy.sparse.csr_array(np.eye(2))
    >>> ng.grad(lambda X: sp.hstack([X, X]).sum())(X).data
    array([2., 2.])
    """
    return _stack("hstack", _sparse.hstack, blocks, format, dtype)


def _diagonals(name: str, make: Any, diagonals: Any, offsets: Any, shape: Any, format: str | None, dtype: Any) -> Any:  # noqa: A002
    single = not isinstance(diagonals, list | tuple) or (len(diagonals) and np.ndim(diagonals[0]) == 0)
    listed = [diagonals] if single else list(diagonals)
    if not any(_traced(d) for d in listed):
        return make(diagonals, offsets=offsets, shape=shape, format=format, dtype=dtype)
    sizes = [int(np.size(d)) for d in listed]
    probes = [v.reshape(np.shape(d)) for v, d in zip(probe_values(sizes), listed, strict=True)]
    result = make(probes[0] if single else probes, offsets=offsets, shape=shape, format="csr", dtype=None)
    linear = from_probe(result, sum(sizes))
    data = np.concatenate([np.reshape(d, (-1,)) for d in listed])
    made = moved_matrix(data if dtype is None else data.astype(dtype), linear)
    return made if format in (None, "csr", "dia") else made.asformat(format)


@guarded
def diags(diagonals: Any, offsets: Any = 0, shape: Any = None, format: str | None = None, dtype: Any = None) -> Any:  # noqa: A002
    """A sparse matrix (``spmatrix``) from diagonals, as scipy's ``diags``; from traced
    diagonals a CSR :class:`SparseMatrix` (scipy's is DIA, which nodegrad does not follow).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.sparse as sp
    >>> ng.grad(lambda d: (sp.diags(d) @ np.array([1.0, 2.0])).sum())(np.array([3.0, 4.0]))
    array([1., 2.])
    """
    return _diagonals("diags", _sparse.diags, diagonals, offsets, shape, format, dtype)


@guarded
def diags_array(
    diagonals: Any,
    /,
    *,
    offsets: Any = 0,
    shape: Any = None,
    format: str | None = None,  # noqa: A002
    dtype: Any = None,
) -> Any:
    """A sparse array from diagonals, as scipy's ``diags_array``; from traced diagonals a
    CSR :class:`SparseMatrix`.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.sparse as sp
    >>> ng.grad(lambda d: sp.diags_array(d, offsets=1).sum())(np.array([3.0, 4.0]))
    array([1., 1.])
    """

    def make(d: Any, offsets: Any, shape: Any, format: Any, dtype: Any) -> Any:  # noqa: A002
        return _sparse.diags_array(d, offsets=offsets, shape=shape, format=format, dtype=dtype)

    return _diagonals("diags_array", make, diagonals, offsets, shape, format, dtype)
