"""scipy.sparse matrices as structured values, and as operands of traced values.

A CSR, CSC or COO matrix (``sparray`` or ``spmatrix``) is a record of one entry, its
stored values ``.data`` (key paths read ``args[0].data``); its pattern is part of its
structure (and of a replay's signature: another pattern records anew). Rebuilt around
traced values it is a :class:`~.matrix.SparseMatrix`; around plain ones (a gradient, a
result) a scipy matrix of the argument's class on the argument's pattern, sharing its
index arrays, so a gradient is never dense.

A scipy matrix closed over meets traced values through scipy's own operators: ``X @ w``
asks numpy for ``w`` as an array, and where that is a handle, the handle reads as an
operand scipy cannot handle (:data:`~nodegrad.engine.plugins.PLUGINS` ``.gives_way``), so
that scipy answers ``NotImplemented`` and the handle's reflected operator hands the product
to a SparseMatrix.

scipy stays optional: its classes are asked about through ``PLUGINS.library_containers``,
the first time one meets a transform.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable
from types import FrameType
from typing import Any

import numpy as np

from nodegrad.engine.containers import Handler, register_handler
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.rows import RowSparse
from nodegrad.engine.traced import DEFERS_TO, ON_IMPORT
from nodegrad.errors import ShapeError
from nodegrad.ops.sparse.matrix import SparseMatrix, sparse_of
from nodegrad.ops.sparse.pattern import FORMATS, pattern_of

__all__ = ["sparse_matrix_of"]

_KEYS: list[Hashable] = ["data"]


def _scipy_data(value: Any, key: Any) -> Any:
    return value.data


def _ours_data(value: SparseMatrix, key: Any) -> Any:
    return value.data


def _build(template: Any, children: list[Any]) -> Any:
    """A SparseMatrix where the values are a transform's; else a scipy matrix of the
    template's class and pattern (``None`` for a gradient of integer values)."""
    (data,) = children
    pattern = template.pattern if type(template) is SparseMatrix else pattern_of(template)
    if data is None:
        return None
    if type(data) in INTERPRETED:
        return SparseMatrix(data, pattern)
    if type(data) is RowSparse:  # sparse_rows=True: a matrix's gradient is on its pattern
        data = data.todense()
    if not isinstance(data, np.ndarray | np.generic | float | complex | int):
        return SparseMatrix(data, pattern)  # eval_shape's description of the values
    data = np.asarray(data)
    if data.shape != (pattern.nnz,):
        msg = (
            f"a sparse matrix's values have shape {data.shape}, not ({pattern.nnz},): a scipy matrix holds one "
            "value per stored entry, not a vmap's stacked examples or a Jacobian's rows; return X.data (or "
            "X.toarray()), or differentiate with respect to the values, building the matrix inside the function "
            "with nodegrad.scipy.sparse.csr_array((values, indices, indptr), shape)"
        )
        raise ShapeError(msg)
    return pattern.matrix(data)


def _meta(value: Any) -> Any:
    pattern = value.pattern if type(value) is SparseMatrix else pattern_of(value)
    return pattern.key()


def _handler(get: Any) -> Handler:
    handler = Handler("record", lambda value: _KEYS, get, _build, None, lambda value: (_KEYS, [value.data]))
    handler.family = "sparse"
    handler.meta = _meta
    return handler


def _handler_for(cls: type) -> Handler | None:
    """The handler of a scipy.sparse class in CSR, CSC or COO format (one in another format
    is refused when taken apart); ``None`` (a leaf) for any other class of scipy."""
    sparse = importlib.import_module("scipy.sparse")
    if not issubclass(cls, sparse.sparray | sparse.spmatrix):
        return None
    _register_operands()
    if getattr(cls, "_format", None) not in FORMATS:
        return Handler("record", lambda value: _KEYS, _refused, _build, None, lambda value: _refused(value, "data"))
    return _handler(_scipy_data)


def _refused(value: Any, key: Any) -> Any:
    pattern_of(value)  # raises, naming the format and the way out
    raise AssertionError  # (unreachable: only other formats are refused here)


def sparse_matrix_of(value: Any) -> SparseMatrix | None:
    """A scipy.sparse CSR, CSC or COO matrix as a :class:`SparseMatrix` (``None`` for any
    other value): what a function sees of one passed to a transform and not
    differentiated, so it sees the same value whichever arguments are differentiated."""
    kind = type(value)
    if getattr(kind, "_format", None) in FORMATS and kind.__module__.startswith("scipy.sparse"):
        return SparseMatrix(value.data, pattern_of(value))
    return None


register_handler(SparseMatrix, _handler(_ours_data))
PLUGINS.library_containers["scipy"] = _handler_for


# -- scipy's operators meeting a handle ------------------------------------------------------------

#: scipy.sparse's functions that read an operand with np.asanyarray and answer
#: NotImplemented for a 0-d object array.
_READERS = frozenset({"_matmul_dispatch", "_divide", "_multiply_2d_with_broadcasting", "multiply", "_comparison"})
#: The operators among their callers: only an operator has a reflected one to give way to.
_OPERATORS = frozenset(
    {"__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "dot", "__eq__", "__ne__",
     "__lt__", "__gt__", "__le__", "__ge__"}
)  # fmt: skip


def _gives_way(frame: FrameType) -> bool:
    if frame.f_code.co_name not in _READERS or not (frame.f_globals.get("__name__") or "").startswith("scipy.sparse"):
        return False
    _register_operands()
    caller: FrameType | None = frame
    while caller is not None and (caller.f_globals.get("__name__") or "").startswith("scipy.sparse"):
        if caller.f_code.co_name in _OPERATORS:
            return True
        caller = caller.f_back
    return False


def _register_operands() -> None:
    """scipy's matrix classes met with a handle answer as a SparseMatrix."""
    sparse = importlib.import_module("scipy.sparse")
    for name in dir(sparse):
        cls = getattr(sparse, name)
        if isinstance(cls, type) and issubclass(cls, sparse.sparray | sparse.spmatrix) and cls not in DEFERS_TO:
            DEFERS_TO[cls] = sparse_of


PLUGINS.gives_way = _gives_way
ON_IMPORT["scipy.sparse"] = [_register_operands]
