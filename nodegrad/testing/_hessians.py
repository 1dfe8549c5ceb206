"""The Hessian of a checked function as one matrix, and its ``hvp`` as one vector.

Real arguments go through :func:`nodegrad.hessian` and :func:`nodegrad.hvp` with their
structure (every differentiated argument, dicts and records as they are); the blocks are
then laid end to end in :func:`nodegrad.tree.ravel`'s order. Tables go through a function
of their float entries laid end to end (nodegrad lays out no Hessian of a table). Complex
arguments go through
their real and imaginary parts: ``g(w) = f(unravel(w[:n] + 1j * w[n:]))`` is a real
function of a real vector whose Hessian is symmetric too, and its second derivatives are
those of the complex ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.structure import differentiable_leaves, is_differentiable_leaf, zip_leaves
from nodegrad.errors import NoGradientError
from nodegrad.testing._subject import NotApplicable, Subject, first_line, holds_table
from nodegrad.transforms import hessian, hvp
from nodegrad.tree import map_floats, ravel

__all__ = ["hessian_matrix", "hvp_vector"]

_FLAT_NOTE = "complex arguments through their real and imaginary parts"

#: Past this many entries in the differentiated arguments the Hessian (one recorded
#: sweep per entry) is not formed.
MAX_ENTRIES = 400


def _labels(s: Subject) -> list[str]:
    """Where each entry of ``ravel(xs)`` comes from: ``argument 0['w'][1]``."""
    labels = []
    for name, x in zip(s.names, s.xs, strict=True):
        for path, leaf in differentiable_leaves(x):
            for index in np.ndindex(np.shape(leaf)):
                labels.append(f"{name}{path}{list(index) if index else ''}")
    return labels


def _is_complex(s: Subject) -> bool:
    return any(np.iscomplexobj(leaf) for x in s.xs for _, leaf in differentiable_leaves(x))


def _flat(s: Subject) -> bool:
    """Whether the Hessian is taken of a function of one vector (see :func:`_flat_form`)."""
    return _is_complex(s) or any(holds_table(x) for x in s.xs)


def _flat_form(s: Subject) -> tuple[Any, np.ndarray]:
    """``(g, w)``: the scalar as a function of one real vector, and that point: the
    arguments' entries end to end (for tables, whose Hessian nodegrad does not lay out),
    or their real and imaginary parts (for complex arguments)."""
    # (A Python complex is laid out as a 0-d array: ravel's inverse rebuilds Python floats only.)
    template = map_floats(lambda leaf: np.asarray(leaf) if type(leaf) is complex else leaf, tuple(s.xs))
    flat, unravel = ravel(template)
    if not _is_complex(s):
        return (lambda w: s.scalar(*unravel(w))), flat
    n = flat.size

    def of_parts(w: Any) -> Any:
        return s.scalar(*unravel(w[:n] + 1j * w[n:]))

    return of_parts, np.concatenate([flat.real, flat.imag])


def _matrix(h: Any, point: tuple[Any, ...]) -> np.ndarray:
    """The structured Hessian ``h`` of a function of ``point`` as one matrix: ``h`` has
    ``point``'s structure, each float leaf holding ``point``'s structure again, whose
    leaves are the blocks (shape: the two leaves' shapes end to end)."""
    rows = []
    for _, leaf, row in zip_leaves(point, h):
        if not is_differentiable_leaf(leaf):
            continue
        blocks = [
            np.reshape(block, (np.size(leaf), np.size(other)))
            for _, other, block in zip_leaves(point, row)
            if is_differentiable_leaf(other)
        ]
        rows.append(np.concatenate(blocks, axis=1))
    return np.concatenate(rows, axis=0)


def hessian_matrix(s: Subject) -> tuple[np.ndarray, list[str], str]:
    """``(matrix, labels, note)``: the Hessian of the checked scalar, a label for each row,
    and a note for the report (how complex arguments were taken). Computed once."""
    if "hessian" not in s.cache:
        s.need_gradients()
        labels = _labels(s)
        complex_ = _is_complex(s)
        size = len(labels) * (2 if complex_ else 1)
        if size > MAX_ENTRIES:
            msg = f"the arguments hold {size} entries: the Hessian is formed for {MAX_ENTRIES} at most"
            raise NotApplicable(msg)
        try:
            if _flat(s):
                g, w = _flat_form(s)
                matrix = np.asarray(hessian(g)(w))
                if complex_:
                    labels = [f"Re {label}" for label in labels] + [f"Im {label}" for label in labels]
                note = _FLAT_NOTE if complex_ else "tables through their float entries end to end"
            else:
                matrix = _matrix(hessian(s.scalar, argnums=s.every)(*s.xs), tuple(s.xs))
                note = ""
        except NoGradientError as exc:
            msg = f"f has no second derivatives: {first_line(exc)}"
            raise NotApplicable(msg) from None
        s.cache["hessian"] = (matrix, labels, note)
    found: tuple[np.ndarray, list[str], str] = s.cache["hessian"]
    return found


def hvp_vector(s: Subject) -> tuple[np.ndarray, np.ndarray]:
    """``(hvp(f)(x, w), w)`` for a random ``w``, both laid end to end (through the real and
    imaginary parts for complex arguments, as :func:`hessian_matrix`)."""
    if _flat(s):
        g, point = _flat_form(s)
        w = s.rng.standard_normal(point.shape).astype(point.dtype)
        return np.asarray(hvp(g, point, w)), w
    xs = tuple(s.xs)
    direction = s.random(xs)
    got = hvp(lambda t: s.scalar(*t), xs, direction)
    return np.asarray(ravel(got)[0]), np.asarray(ravel(direction)[0])
