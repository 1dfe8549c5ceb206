"""What a recording cannot repeat: random draws.

A replay makes the recorded calls again, so a random draw made while recording would come
back as the same numbers every time. :func:`refusing_draws` watches a recording: numpy's
global generator (its functions raise naming the call), Python's ``random``, a new
``np.random.default_rng()`` without a seed, and every ``numpy.random.Generator`` (or
``RandomState``) the function can reach through its arguments, closure, defaults and
globals (their states are compared after the call). A draw raises
:class:`~nodegrad.errors.RandomDrawError`, telling the user to pass the random values in.
"""

from __future__ import annotations

import contextlib
import pickle
import random
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from nodegrad.engine.tape import Tape
from nodegrad.errors import RandomDrawError, user_location

__all__ = ["refusing_draws"]

_ADVICE = (
    "a replay would repeat the same numbers on every call. Draw them outside the function and pass them in as an "
    "argument (replay(f)(x, noise)), or call the function without replay"
)


def _global_functions() -> dict[str, Callable[..., Any]]:
    """numpy.random's module functions that draw from its global generator."""
    shared = np.random.mtrand._rand
    found: dict[str, Callable[..., Any]] = {}
    for name in np.random.__all__:
        fn = getattr(np.random, name, None)
        if (
            fn is not None
            and getattr(fn, "__self__", None) is shared
            and name not in ("get_state", "set_state", "seed")
        ):
            found[name] = fn
    return found


class _Watch:
    """Whether numpy's global generator drew between the recorded calls (a draw inside one,
    by a library function the tape calls again, is made again by a replay: it is fine),
    and the module functions that draw from it, refusing to outside the calls."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.thread = threading.get_ident()  # the recording's: other threads draw as they please
        self.inside = 0
        self.last = _global_key()
        self.drew = False

    def __call__(self, entering: bool) -> None:
        if entering:
            self.drew = self.drew or _global_key() != self.last
            self.inside += 1
        else:
            self.inside -= 1
            self.last = _global_key()

    def refusal(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            if self.inside or threading.get_ident() != self.thread:
                return fn(*args, **kwargs)
            msg = (
                f"{self.where}: np.random.{name}() draws from numpy's global random generator [at {user_location()}]: "
                f"{_ADVICE}"
            )
            raise RandomDrawError(msg)

        return refuse


def _global_key() -> tuple[Any, ...]:
    state: Any = np.random.mtrand._rand.get_state()  # ('MT19937', key, pos, has_gauss, cached_gaussian)
    return (state[2], state[1].tobytes(), state[3], state[4])


def _unseeded(where: str, make: Callable[..., Any], watch: _Watch) -> Callable[..., Any]:
    def default_rng(seed: Any = None) -> Any:
        if seed is None and not watch.inside and threading.get_ident() == watch.thread:
            msg = (
                f"{where}: np.random.default_rng() without a seed draws fresh entropy [at {user_location()}]: {_ADVICE}"
            )
            raise RandomDrawError(msg)
        return make(seed)

    return default_rng


def _generators(roots: list[Any]) -> dict[int, tuple[str, Any]]:
    """The numpy generators reachable from ``roots`` ((name, value) pairs) through
    functions' closures, defaults, globals they name and bound objects, and one level of
    containers and attributes: by id, with the name they were reached by."""
    found: dict[int, tuple[str, Any]] = {}
    seen: set[int] = set()
    todo = [(name, value, 3) for name, value in roots]
    while todo:
        name, value, depth = todo.pop()
        if id(value) in seen or depth < 0:
            continue
        seen.add(id(value))
        if isinstance(value, np.random.Generator | np.random.RandomState):
            found[id(value)] = (name, value)
            continue
        if isinstance(value, types.FunctionType):
            code = value.__code__
            cells = zip(code.co_freevars, value.__closure__ or (), strict=False)
            todo += [(var, cell.cell_contents, depth - 1) for var, cell in cells if _filled(cell)]
            todo += [
                (f"{var} (a global)", value.__globals__[var], depth - 1)
                for var in _names(code)
                if var in value.__globals__
            ]
            todo += [(f"a default of {value.__name__}", d, depth - 1) for d in value.__defaults__ or ()]
        elif isinstance(value, dict):
            todo += [(f"{name}[{k!r}]", v, depth - 1) for k, v in list(value.items())[:64]]
        elif isinstance(value, list | tuple):
            todo += [(f"{name}[{k}]", v, depth - 1) for k, v in enumerate(value[:64])]
        elif not isinstance(value, type | types.ModuleType | np.ndarray | str | bytes | int | float):
            for attr in ("__self__", "__wrapped__", "_fun", "func"):
                inner = getattr(value, attr, None)
                if inner is not None:
                    todo.append((name, inner, depth - 1))
            attrs = getattr(value, "__dict__", None)
            if isinstance(attrs, dict):
                todo += [(f"{name}.{k}", v, depth - 1) for k, v in list(attrs.items())[:64]]
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions defined in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _state(generator: Any) -> bytes:
    if isinstance(generator, np.random.RandomState):
        return pickle.dumps(generator.get_state())
    return pickle.dumps(generator.bit_generator.state)


@contextlib.contextmanager
def refusing_draws(where: str, fun: Any, args: list[Any], tape: Tape) -> Iterator[None]:
    """Raise :class:`~nodegrad.errors.RandomDrawError` if the code run inside draws random
    numbers (see the module's docstring); ``where`` names the replay in messages, ``fun``
    and ``args`` are where generators are looked for."""
    modules = [np.random] + [m for m in (sys.modules.get("nodegrad.numpy.random"),) if m is not None]
    saved: list[tuple[Any, str, Any]] = []
    watch = tape.watch = _Watch(where)
    for name, fn in _global_functions().items():
        for module in modules:
            if getattr(module, name, None) is fn:
                saved.append((module, name, fn))
                setattr(module, name, watch.refusal(name, fn))
    for module in modules:
        make = getattr(module, "default_rng", None)
        if make is not None:
            saved.append((module, "default_rng", make))
            module.default_rng = _unseeded(where, make, watch)  # type: ignore[attr-defined]
    generators = _generators([("the function", fun), *((f"an argument ({type(a).__name__})", a) for a in args)])
    before = {k: _state(g) for k, (_, g) in generators.items()}
    python_before = random.getstate()
    try:
        yield
    finally:
        tape.watch = None
        for module, name, fn in saved:
            setattr(module, name, fn)
    for k, (name, generator) in generators.items():
        if _state(generator) != before[k]:
            msg = f"{where}: the function drew from the numpy random generator {name}: {_ADVICE}"
            raise RandomDrawError(msg)
    if watch.drew or _global_key() != watch.last:
        msg = f"{where}: the function drew from numpy's global random generator: {_ADVICE}"
        raise RandomDrawError(msg)
    if random.getstate() != python_before:
        msg = f"{where}: the function drew from Python's random module: {_ADVICE}"
        raise RandomDrawError(msg)
