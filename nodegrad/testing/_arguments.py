"""``check_grads``' own arguments: each one refused with an ``ArgumentError`` that names it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.structure import differentiable_leaves
from nodegrad.errors import ArgumentError
from nodegrad.testing._leaves import real_number
from nodegrad.testing._references import REFERENCES
from nodegrad.transforms.common import normalize_argnums, resolve_argnums

__all__ = ["check_arguments", "normalize_modes", "positions", "refuse_complex", "refuse_complex_arguments"]

_MODES = ("rev", "fwd")

Function = Callable[..., Any]


def check_arguments(
    f: Any, order: Any, rtol: Any, atol: Any, eps: Any, seed: Any, holomorphic: Any, reference: Any
) -> None:
    """``check_grads``' own arguments, each refused with an ArgumentError naming it."""
    problems = []
    if not callable(f):
        problems.append(f"f must be callable, got {type(f).__name__}")
    if isinstance(order, bool) or order not in (1, 2):
        problems.append(f"order must be 1 or 2, got {order!r}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (real_number(value) and 0 <= value < np.inf):
            problems.append(f"{name} must be a finite number >= 0, got {value!r}")
    if eps is not None and not (real_number(eps) and 0 < eps < np.inf):
        problems.append(f"eps must be a finite number > 0, got {eps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        problems.append(f"seed must be a non-negative int, got {seed!r}")
    if not isinstance(holomorphic, bool):
        problems.append(f"holomorphic must be True or False, got {holomorphic!r}")
    if not isinstance(reference, str) or reference not in REFERENCES:
        problems.append(f"reference must be 'central_difference' or 'complex_step', got {reference!r}")
    if problems:
        msg = "check_grads: " + "; ".join(problems)
        raise ArgumentError(msg)


def refuse_complex_arguments(xs: list[Any], names: list[str], holomorphic: bool) -> None:
    """The complex step moves real arguments along imaginary directions: it has no room
    for complex ones."""
    if holomorphic:
        msg = (
            "check_grads: reference='complex_step' needs real arguments and outputs; holomorphic=True checks "
            "complex ones (use the default reference='central_difference')"
        )
        raise ArgumentError(msg)
    for x, name in zip(xs, names, strict=True):
        refuse_complex(x, "check_grads", name)


def refuse_complex(value: Any, header: str, what: str) -> None:
    """The complex step needs ``value`` (an argument, the output) real: say where it is not."""
    found = [path for path, leaf in differentiable_leaves(value) if np.iscomplexobj(leaf)]
    if found:
        where = f" at {found[0]}" if found[0] else ""
        msg = (
            f"{header}: reference='complex_step' needs real arguments and outputs; {what}{where} is complex "
            "(use the default reference='central_difference')"
        )
        raise ArgumentError(msg)


def normalize_modes(modes: Any) -> tuple[str, ...]:
    ok = isinstance(modes, (tuple, list)) and modes and all(isinstance(m, str) for m in modes)
    if not ok or len(set(modes)) != len(modes) or any(m not in _MODES for m in modes):
        msg = f"check_grads: modes must be a non-empty tuple of distinct 'rev' and 'fwd', got {modes!r}"
        raise ArgumentError(msg)
    return tuple(modes)


def positions(argnums: int | Sequence[int] | None, f: Function, nargs: int) -> tuple[int, ...]:
    """The positions of the arguments to check: all of them by default, else ``argnums``
    read as the transforms read it."""
    if argnums is None:
        return tuple(range(nargs))
    try:
        nums = resolve_argnums(normalize_argnums(argnums), nargs, f)
    except ArgumentError as exc:
        msg = f"check_grads: {exc}"
        raise ArgumentError(msg) from None
    return nums
