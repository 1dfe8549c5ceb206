"""numpy's functions, also for Python lists and tuples holding traced values.

numpy hands a call to nodegrad only when one of the arguments it inspects is traced
(``np.sum(x)``); a list is not inspected, so ``np.sum([x * 2, x ** 2])`` would reach
numpy's own code, which would make a plain array of the list and, at the traced entry,
stop (a traced value refuses to become a plain array). :func:`accepting_lists` wraps such
a function for ``nodegrad.numpy``: the call runs as numpy's own, and only when numpy has
stopped at a traced value inside a list does it go to
:func:`~nodegrad.numpy_api.dispatch_function`, which makes each such list one traced array
(:func:`~nodegrad.numpy_api.arguments.array_likes`). A call whose arguments are arrays or
traced values pays for nothing but the wrapper's own call.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.errors import ArenaError
from nodegrad.numpy_api import dispatch_function
from nodegrad.numpy_api.arguments import holds_traced
from nodegrad.numpy_api.catalog import is_dispatched

__all__ = ["accepting_lists", "with_lists", "wrapped"]


#: The wrapped functions by namespace (``numpy``, ``linalg``, ``fft``) and name: where pickle
#: finds them. Their ``__module__`` is this module's, not ``nodegrad.numpy``, so that a
#: doctest run over the package does not take numpy's docstrings for nodegrad's.
wrapped = types.SimpleNamespace(
    numpy=types.SimpleNamespace(), linalg=types.SimpleNamespace(), fft=types.SimpleNamespace()
)


def accepting_lists(func: Callable[..., Any], namespace: str) -> Callable[..., Any]:
    """``func``, a function numpy dispatches, also taking lists and tuples that hold traced
    values wherever it takes an array-like; ``namespace`` (``numpy``, ``linalg`` or ``fft``)
    is where :data:`wrapped` keeps it."""

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ArenaError:
            # numpy's own code met a traced value it could not read: one inside a list, or
            # else a real error, which stands.
            if not holds_traced(args) and not holds_traced(tuple(kwargs.values())):
                raise
        return dispatch_function(func, args, kwargs)

    call.__module__ = __name__
    call.__qualname__ = f"wrapped.{namespace}.{func.__name__}"
    setattr(getattr(wrapped, namespace), func.__name__, call)
    return call


def with_lists(module: Any, names: list[str], namespace: str) -> dict[str, Any]:
    """``{name: object}`` for each of ``names`` in ``module``: the functions numpy dispatches
    (not its ufuncs, which stay numpy's objects) wrapped by :func:`accepting_lists`, the rest
    as they are."""
    found = {name: getattr(module, name) for name in names}
    for obj in found.values():
        # one wrapper per function, also under two names (np.concat is np.concatenate)
        if is_dispatched(obj) and not isinstance(obj, np.ufunc) and obj not in _WRAPPERS:
            _WRAPPERS[obj] = accepting_lists(obj, namespace)
    return {name: _WRAPPERS.get(obj, obj) if is_dispatched(obj) else obj for name, obj in found.items()}


_WRAPPERS: dict[Any, Callable[..., Any]] = {}
