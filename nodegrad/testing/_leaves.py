"""Leaf helpers the gradient checks share: casts, random directions, the pairing of
cotangents with tangents, and the shape and dtype checks of a derivative."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.structure import differentiable_leaves, is_differentiable_leaf, zip_leaves
from nodegrad.tree import map_floats, vdot

__all__ = [
    "absolute",
    "as_float64",
    "check_like",
    "describe_argument",
    "draw_like",
    "only",
    "pair",
    "parts",
    "real_number",
    "zeros",
]


def real_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def as_float64(leaf: Any) -> Any:
    if isinstance(leaf, float | complex):
        return leaf
    return np.asarray(leaf, dtype=np.complex128 if np.iscomplexobj(leaf) else np.float64)


def parts(x: Any) -> tuple[str, ...]:
    """The directions to check ``x`` along: any (real values), or real and imaginary ones."""
    complex_ = any(np.iscomplexobj(leaf) for _, leaf in differentiable_leaves(x))
    return ("real", "imaginary") if complex_ else ("",)


def pair(a: Any, b: Any) -> float:
    """``Re(sum(a * b))`` over the leaves: the pairing of cotangents with tangents whose
    transpose a VJP is (JAX's convention for complex values; ``vdot`` for real ones)."""
    if type(a) in _PLAIN and type(b) in _PLAIN:
        # two real arrays or numbers, the common case (a check pairs many): vdot's sum, without its walk
        a_, b_ = np.asarray(a), np.asarray(b)
        if a_.dtype.kind == b_.dtype.kind == "f" and a_.shape == b_.shape:
            return float(np.sum(np.multiply(a_, b_, dtype=np.float64)))
    return _paired(a, b)


_PLAIN = frozenset({np.ndarray, np.float64, np.float32, np.float16, float})


def _paired(a: Any, b: Any) -> float:
    return float(np.real(vdot(map_floats(np.conjugate, a), b)))


def absolute(value: Any) -> Any:
    return np.abs(value) if type(value) is np.ndarray else map_floats(np.abs, value)


def zeros(value: Any) -> Any:
    return map_floats(lambda leaf: leaf * 0, value)


def only(direction: Any, path: str) -> Any:
    """``direction`` with every leaf but the one at ``path`` set to zero."""
    flat = dict(differentiable_leaves(direction))
    return map_floats(lambda leaf: leaf if flat.get(path) is leaf else leaf * 0, direction)


def draw_like(rng: np.random.Generator, like: Any, part: str = "") -> Any:
    """Standard normal draws shaped like the float and complex leaves of ``like``, in
    their dtypes. Complex leaves get complex draws, or with ``part`` purely real or
    purely imaginary ones (real leaves then get zeros along imaginary directions)."""

    def draw(leaf: Any) -> Any:
        dtype = np.result_type(leaf)
        values = rng.standard_normal(np.shape(leaf))
        if dtype.kind == "c":
            if part == "imaginary":
                values = 1j * values
            elif part != "real":
                values = values + 1j * rng.standard_normal(np.shape(leaf))
        elif part == "imaginary":
            values = values * 0
        if isinstance(leaf, float | complex):
            return type(leaf)(values)
        return values.astype(dtype)

    return draw(like) if type(like) is np.ndarray else map_floats(draw, like)


def describe_argument(name: str, x: Any, path: str | None) -> str:
    if is_differentiable_leaf(x):
        return f"{name} (shape {np.shape(x)}, dtype {np.asarray(x).dtype})"
    return name if path is None else f"{name} at {path}"


def check_like(what: str, g: Any, x: Any) -> str | None:
    """What is wrong with ``g`` as a derivative shaped like ``x`` (its structure, and its
    leaves' shapes and dtypes), or ``None``."""
    try:
        pairs = list(zip_leaves(x, g))
    except Exception as exc:
        return f"{what} does not have its structure: {exc}"
    differentiable = {path for path, _ in differentiable_leaves(x)}  # fields marked static excluded
    for path, leaf, g_leaf in pairs:
        if path not in differentiable:
            continue
        same = np.shape(g_leaf) == np.shape(leaf) and np.asarray(g_leaf).dtype == np.asarray(leaf).dtype
        if g_leaf is None or not same:
            expected = f"{path} (shape {np.shape(leaf)}, dtype {np.asarray(leaf).dtype})"
            got = "None" if g_leaf is None else f"shape {np.shape(g_leaf)} and dtype {np.asarray(g_leaf).dtype}"
            return f"{what}{expected} has {got}"
    return None
