"""Where a sparse matrix stores its values: the static half of a sparse value.

A scipy.sparse matrix is its stored values (``.data``, the differentiable part) on a
pattern: its class, format, shape and the index arrays saying where each stored value
sits (``indices``/``indptr`` for CSR and CSC, ``row``/``col`` for COO). A :class:`Pattern`
holds the second half; the sparse ops take it as a static argument and the values as an
array, so every interpreter (grad, vmap, replay) sees a 1-D array and a constant.

Stored values are taken as scipy stores them: duplicates (a COO matrix's repeated entries,
which scipy sums when it reads the matrix), explicit zeros and unsorted indices are kept
where they are, each a value of its own, so a gradient lines up with ``.data`` entry by
entry.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

import numpy as np

from nodegrad.errors import ArgumentError

__all__ = ["FORMATS", "Pattern", "pattern_of", "scipy_sparse"]

#: The formats whose stored values nodegrad differentiates.
FORMATS = ("csr", "csc", "coo")


def scipy_sparse() -> Any:
    """scipy.sparse, imported on first use (scipy stays optional)."""
    import scipy.sparse

    return scipy.sparse


class Pattern:
    """The static part of a sparse matrix: its class, format, shape and index arrays.

    ``major``/``minor`` are, for CSR, the row and column of each stored value (for CSC the
    column and row); for COO ``rows``/``cols`` are the coordinate arrays themselves.
    ``template`` is a scipy matrix on this pattern (the user's own, where there is one), so
    that a product whose values are the template's own runs on it directly.
    """

    __slots__ = ("__weakref__", "_key", "cls", "format", "indices", "indptr", "is_matrix", "shape", "template")

    def __init__(self, template: Any) -> None:
        self.template = template
        self.cls = type(template)
        self.format: str = template.format
        self.shape: tuple[int, int] = tuple(int(n) for n in template.shape)  # type: ignore[assignment]
        self.is_matrix = isinstance(template, scipy_sparse().spmatrix)
        if self.format == "coo":
            self.indices, self.indptr = template.row, template.col  # (coordinates, for COO)
        else:
            self.indices, self.indptr = template.indices, template.indptr
        self._key: Any = None

    @property
    def nnz(self) -> int:
        """How many values are stored (duplicates and explicit zeros included)."""
        return int(self.indices.shape[0])

    @property
    def rows(self) -> np.ndarray:
        """The row of each stored value."""
        return self._coordinate(0)

    @property
    def cols(self) -> np.ndarray:
        """The column of each stored value."""
        return self._coordinate(1)

    def _coordinate(self, axis: int) -> np.ndarray:
        """Each stored value's index along ``axis``: COO's own array, a compressed format's
        indices (its minor axis) or its runs expanded (its major axis)."""
        if self.format == "coo":
            return np.asarray(self.indptr if axis else self.indices)
        if axis == (self.format == "csr"):  # the minor axis: CSR's columns, CSC's rows
            return np.asarray(self.indices)
        return np.repeat(np.arange(self.shape[axis], dtype=self.indices.dtype), np.diff(self.indptr))

    def counts(self) -> np.ndarray:
        """How many values each row (CSR) or column (CSC) stores."""
        return np.diff(self.indptr)

    def matrix(self, data: Any) -> Any:
        """The scipy matrix of this class and pattern holding ``data`` (plain, 1-D): the
        template itself when ``data`` is its own values; the index arrays are shared."""
        if data is self.template.data:
            return self.template
        if self.format == "coo":
            return self.cls((data, (self.indices, self.indptr)), shape=self.shape, copy=False)
        return self.cls((data, self.indices, self.indptr), shape=self.shape, copy=False)

    def key(self) -> Any:
        """A hashable key of the pattern (class, shape, index arrays by their bits): what a
        replay's signature holds of a sparse value, so that another pattern records anew."""
        if self._key is None:
            self._key = (self.cls.__name__, self.shape, self.nnz, _digest(self.indices, self.indptr))
        return self._key

    def __repr__(self) -> str:
        return f"Pattern({self.cls.__name__}, {self.shape}, nnz={self.nnz})"

    # a pattern is a static argument of the ops: two are the same when their keys are
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Pattern):
            return NotImplemented
        return self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


def pattern_of(matrix: Any) -> Pattern:
    """The pattern of the scipy sparse ``matrix`` (CSR, CSC or COO)."""
    if matrix.format not in FORMATS:
        msg = (
            f"a scipy.sparse matrix in {matrix.format.upper()} format: nodegrad differentiates CSR, CSC and COO "
            f"(convert it with .tocsr() first)"
        )
        raise ArgumentError(msg)
    if matrix.ndim != 2:
        msg = f"a {matrix.ndim}-d scipy.sparse array: nodegrad differentiates 2-d sparse matrices"
        raise ArgumentError(msg)
    return Pattern(matrix)


#: The digests of index arrays, by the identity of the arrays (held weakly): a replay asks
#: for a matrix's key at every call, and hashing its indices each time would cost O(nnz).
_DIGESTS: dict[tuple[int, int], tuple[Any, Any, str]] = {}


def _digest(indices: np.ndarray, indptr: np.ndarray) -> str:
    at = (id(indices), id(indptr))
    known = _DIGESTS.get(at)
    if known is not None and known[0]() is indices and known[1]() is indptr:
        return known[2]
    digest = hashlib.blake2b(digest_size=16)
    for part in (indices, indptr):
        digest.update(str(part.dtype).encode())
        digest.update(np.ascontiguousarray(part).data)
    found = digest.hexdigest()
    try:
        refs = (weakref.ref(indices, _forget(at)), weakref.ref(indptr, _forget(at)))
    except TypeError:
        return found
    _DIGESTS[at] = (*refs, found)
    return found


def _forget(at: tuple[int, int]) -> Any:
    return lambda _: _DIGESTS.pop(at, None)
