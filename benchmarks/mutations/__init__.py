"""A catalogue of wrong gradient rules, to measure what nodegrad's testing kit catches.

:data:`CATALOG` holds the mutations (:class:`~mutations.core.Mutation`), one wrong rule
each, across the op families; :data:`SAMPLE` names a fixed sample of them spanning the
kinds and families (the test suite runs it). ``benchmarks/mutation.py`` runs the kit
against each (see its docstring).
"""

from __future__ import annotations

from .catalog_arrays import INDEXING, NORMS, REDUCTIONS, SHAPES, SOFTMAX, WHERE
from .catalog_elementwise import COMPLEX, ELEMENTWISE
from .catalog_linalg import CUSTOM, LINALG, SECOND_ORDER
from .core import KINDS, Mutation

__all__ = ["CATALOG", "KINDS", "SAMPLE", "Mutation", "by_id"]

CATALOG: tuple[Mutation, ...] = (
    *ELEMENTWISE,
    *REDUCTIONS,
    *SOFTMAX,
    *NORMS,
    *INDEXING,
    *WHERE,
    *SHAPES,
    *LINALG,
    *COMPLEX,
    *CUSTOM,
    *SECOND_ORDER,
)

#: Ten mutations spanning every kind and nine families (the test suite runs them).
SAMPLE: tuple[str, ...] = (
    "cos-sign",
    "matmul-transpose-x",
    "add-broadcast",
    "layer_norm-factor",
    "softmax-dropped",
    "max-tie",
    "abs-conj",
    "getitem-repeats",
    "where-swapped",
    "custom-softplus-second",
)


def by_id(ids: tuple[str, ...] | list[str]) -> list[Mutation]:
    """The catalogue's mutations with these ids, in the catalogue's order."""
    known = {m.id: m for m in CATALOG}
    missing = [i for i in ids if i not in known]
    if missing:
        msg = f"no mutation with id {', '.join(missing)}"
        raise KeyError(msg)
    return [m for m in CATALOG if m.id in set(ids)]
