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
        if self.format == "coo":
            return np.asarray(self.indices)
        if self.format == "csc":
            return np.asarray(self.indices)
        return np.repeat(np.arange(self.shape[0], dtype=self.indices.dtype), np.diff(self.indptr))

    @property
    def cols(self) -> np.ndarray:
        """The column of each stored value."""
        if self.format == "coo":
            return np.asarray(self.indptr)
        if self.format == "csr":
            return np.asarray(self.indices)
        return np.repeat(np.arange(self.shape[1], dtype=self.indices.dtype), np.diff(self.indptr))

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
            digest = hashlib.blake2b(digest_size=16)
            for part in (self.indices, self.indptr):
                digest.update(str(part.dtype).encode())
                digest.update(np.ascontiguousarray(part).data)
            self._key = (self.cls.__name__, self.shape, self.nnz, digest.hexdigest())
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


_PATTERNS: dict[int, tuple[Any, Pattern]] = {}


def pattern_of(matrix: Any) -> Pattern:
    """The pattern of the scipy sparse ``matrix`` (CSR, CSC or COO), one object per matrix
    while its index arrays are the same objects (so what it derives is worked out once)."""
    if matrix.format not in FORMATS:
        msg = (
            f"a scipy.sparse matrix in {matrix.format.upper()} format: nodegrad differentiates CSR, CSC and COO "
            f"(convert it with .tocsr() first)"
        )
        raise ArgumentError(msg)
    if matrix.ndim != 2:
        msg = f"a {matrix.ndim}-d scipy.sparse array: nodegrad differentiates 2-d sparse matrices"
        raise ArgumentError(msg)
    known = _PATTERNS.get(id(matrix))
    if known is not None:
        ref, pattern = known
        if ref() is matrix and _same_arrays(pattern, matrix):
            return pattern
    pattern = Pattern(matrix)
    try:
        ref = weakref.ref(matrix, _forget(id(matrix)))
    except TypeError:
        return pattern
    _PATTERNS[id(matrix)] = (ref, pattern)
    return pattern


def _forget(at: int) -> Any:
    return lambda _: _PATTERNS.pop(at, None)


def _same_arrays(pattern: Pattern, matrix: Any) -> bool:
    if pattern.format == "coo":
        return matrix.row is pattern.indices and matrix.col is pattern.indptr and matrix.shape == pattern.shape
    return matrix.indices is pattern.indices and matrix.indptr is pattern.indptr and matrix.shape == pattern.shape
