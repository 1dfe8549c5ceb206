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

import collections
import contextlib
import os
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
from nodegrad.transforms.free_values import filled, library_function, names_read

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


#: What holds a random state a draw advances: numpy's generators and bit generators, Python's.
_RANDOM_STATES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)

#: How far the search for generators goes from the function: each step is a closure cell,
#: a global, a default, a wrapped function (a transform's), an entry or an attribute.
_DEPTH = 6


def _generators(roots: list[Any]) -> dict[int, tuple[str, Any]]:
    """The random states (:data:`_RANDOM_STATES`) reachable from ``roots`` ((name, value)
    pairs) through functions' closures, defaults, globals they name, wrapped functions
    (transforms of transforms), bound objects, the attributes of modules that the code
    names (and of classes), and entries and attributes of containers: by id, with the name they were reached
    by. Breadth first, so each value is reached by its shortest path."""
    found: dict[int, tuple[str, Any]] = {}
    seen: set[int] = set()
    read: set[str] = set()  # the names the functions' code reads: a module's attributes among them
    modules: list[tuple[str, Any, int]] = []
    todo = collections.deque((name, value, _DEPTH) for name, value in roots)
    while todo or modules:
        if not todo:  # the modules last, once every function's names are known
            todo.extend(
                (f"{module_name}.{attr}", held, depth - 1)
                for module_name, module, depth in modules
                for attr in sorted(read)
                if isinstance(held := _held(module, attr), _RANDOM_STATES)
            )
            modules = []
            continue
        name, value, depth = todo.popleft()
        if id(value) in seen or depth < 0:
            continue
        seen.add(id(value))
        if isinstance(value, _RANDOM_STATES):
            found[id(value)] = (name, value)
            continue
        if isinstance(value, types.ModuleType | type):  # (a class's attributes: as a module's)
            modules.append((name, value, depth))
            continue
        todo.extend(_inside(name, value, depth - 1, read))
    return found


def _held(owner: Any, attr: str) -> Any:
    """What a module or a class holds under ``attr`` (read from its dicts: a module's
    ``__getattr__`` may warn or import)."""
    for space in (owner,) if isinstance(owner, types.ModuleType) else owner.__mro__:
        found = vars(space).get(attr)
        if found is not None:
            return found
    return None


def _inside(name: str, value: Any, depth: int, read: set[str]) -> list[tuple[str, Any, int]]:
    """The values one step inside ``value`` (see :func:`_generators`)."""
    if isinstance(value, types.FunctionType) and library_function(value):
        # A library's own state is not the function's: only what its cells hold (the user's
        # function, under a transform or a decorator).
        return [(name, cell.cell_contents, depth) for cell in value.__closure__ or () if filled(cell)]
    if isinstance(value, types.FunctionType):
        code = value.__code__
        names = names_read(code)
        read |= names
        cells = zip(code.co_freevars, value.__closure__ or (), strict=False)
        inner = [(var, cell.cell_contents, depth) for var, cell in cells if filled(cell)]
        inner += [(f"{var} (a global)", value.__globals__[var], depth) for var in names if var in value.__globals__]
        inner += [(f"a default of {value.__name__}", d, depth) for d in value.__defaults__ or ()]
        return [*inner, (name, value.__wrapped__, depth)] if hasattr(value, "__wrapped__") else inner
    if isinstance(value, dict):
        return [(f"{name}[{k!r}]", v, depth) for k, v in list(value.items())[:64]]
    if isinstance(value, list | tuple):
        return [(f"{name}[{k}]", v, depth) for k, v in enumerate(value[:64])]
    if isinstance(value, type | np.ndarray | str | bytes | int | float | complex):
        return []
    inner = [(name, getattr(value, a), depth) for a in ("__self__", "__wrapped__", "_fun", "func") if hasattr(value, a)]
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        inner += [(f"{name}.{k}", v, depth) for k, v in list(attrs.items())[:64]]
    return inner


def _state(generator: Any) -> bytes:
    if isinstance(generator, np.random.RandomState | random.Random):
        return pickle.dumps(generator.getstate() if isinstance(generator, random.Random) else generator.get_state())
    if isinstance(generator, np.random.BitGenerator):
        return pickle.dumps(generator.state)
    return pickle.dumps(generator.bit_generator.state)


def _entropy(where: str, watch: _Watch, what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a source of fresh entropy, refusing to give any to the recorded function
    (outside the recorded calls, on the recording's thread)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        if watch.inside or threading.get_ident() != watch.thread:
            return fn(*args, **kwargs)
        msg = f"{where}: {what} draws fresh entropy [at {_caller()}]: {_ADVICE}"
        raise RandomDrawError(msg)

    return refuse


def _caller() -> str:
    """``file:line`` of the user's code that asked for entropy: the innermost frame outside
    nodegrad and the modules ``random`` and ``os`` (``random.Random()`` seeds in random's code)."""
    skipped = {os.path.abspath(m.__file__) for m in (random, os) if m.__file__}
    frame: Any = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename not in skipped and not filename.startswith(_PACKAGE + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return user_location()


#: nodegrad's own directory.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _unseeded_python(where: str, watch: _Watch, seed: Callable[..., Any]) -> Callable[..., Any]:
    """``random.Random.seed``, refusing to seed from fresh entropy (``random.Random()``)."""
    refuse = _entropy(where, watch, "random.Random() without a seed", seed)

    def seeding(self: Any, a: Any = None, *args: Any, **kwargs: Any) -> Any:
        return (refuse if a is None else seed)(self, a, *args, **kwargs)

    return seeding


def _entropy_sources(where: str, watch: _Watch) -> list[tuple[Any, str, Any]]:
    """(owner, name, refusing stand-in) for each source of fresh entropy: numpy's (every
    unseeded SeedSequence, so every unseeded bit generator, Generator and RandomState),
    Python's (an unseeded ``random.Random``, ``SystemRandom``) and ``os.urandom``."""
    numpy_entropy = "an unseeded numpy generator (RandomState(), PCG64(), SeedSequence(), default_rng(...))"
    numpy_source = np.random.bit_generator.randbits  # type: ignore[attr-defined]  # (secrets.randbits, held there)
    return [
        (np.random.bit_generator, "randbits", _entropy(where, watch, numpy_entropy, numpy_source)),
        (random.Random, "seed", _unseeded_python(where, watch, random.Random.seed)),
        (random, "_urandom", _entropy(where, watch, "random.SystemRandom", random._urandom)),  # type: ignore[attr-defined]
        (os, "urandom", _entropy(where, watch, "os.urandom", os.urandom)),
    ]


@contextlib.contextmanager
def refusing_draws(where: str, fun: Any, args: list[Any], tape: Tape) -> Iterator[None]:
    """Raise :class:`~nodegrad.errors.RandomDrawError` if the code run inside draws random
    numbers (see the module's docstring); ``where`` names the replay in messages, ``fun``
    and ``args`` are where generators are looked for."""
    generators = _generators([("the function", fun), *((f"an argument ({type(a).__name__})", a) for a in args)])
    before = {k: _state(g) for k, (_, g) in generators.items()}
    python_before = random.getstate()
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
    for owner, name, stand_in in _entropy_sources(where, watch):
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, stand_in)
    try:
        yield
    finally:
        tape.watch = None
        for module, name, fn in reversed(saved):
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
