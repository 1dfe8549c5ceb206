"""The public transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each call builds a fresh arena, turns the differentiated arguments into leaves, runs the
user's function (which records nodes as it goes), and sweeps back once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.arena import Arena, Traced, _as_float_array
from nodegrad.errors import ArenaError, NodegradError, ShapeError
from nodegrad.sweep import run_backward

__all__ = ["grad", "value_and_grad", "vjp"]


def _normalize_argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)):
        return (int(argnums),)
    nums = tuple(int(a) for a in argnums)
    if not nums or len(set(nums)) != len(nums):
        msg = f"argnums must be an int or a non-empty tuple of distinct ints, got {argnums!r}"
        raise NodegradError(msg)
    return nums


def _resolve_argnums(nums: tuple[int, ...], nargs: int, fun: Callable[..., Any]) -> tuple[int, ...]:
    name = getattr(fun, "__name__", repr(fun))
    for k in nums:
        if not -nargs <= k < nargs:
            msg = f"argnums {k} is out of range: {name} was called with {nargs} positional argument(s)"
            raise NodegradError(msg)
    return tuple(k % nargs for k in nums)


def _trace_argument(arena: Arena, value: Any, position: int) -> Traced:
    if isinstance(value, Traced):
        msg = (
            f"argument {position} is already traced: differentiating inside a differentiated "
            "function (higher order) is not supported by this transform"
        )
        raise ArenaError(msg)
    return arena.param(_as_float_array(value, f"argument {position}"))


def _like_argument(g: Any, original: Any) -> Any:
    """Return ``g`` with the argument's own type: Python float in, Python float out."""
    if isinstance(original, float):
        return float(g)
    if isinstance(original, np.generic):
        return type(original)(g)
    return g


def plain(value: Any) -> Any:
    """Replace traced values by their forward values, inside lists, tuples and dicts too."""
    if isinstance(value, Traced):
        return value.value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _split_output(out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        msg = f"with has_aux=True the function must return a pair (output, aux), got {type(out).__name__}"
        raise NodegradError(msg)
    return out[0], out[1]


def _check_scalar(out: Any) -> None:
    value = out.value if isinstance(out, Traced) else out
    if np.size(value) != 1:
        msg = (
            f"grad needs a function with a scalar output, got shape {np.shape(value)}; "
            "use nodegrad.vjp for non-scalar outputs"
        )
        raise ShapeError(msg)


def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *, has_aux: bool = False
) -> Callable[..., Any]:
    """Make a function that returns ``fun``'s value and its gradient.

    Parameters
    ----------
    fun : callable
        Returns a scalar (or ``(scalar, aux)`` with ``has_aux``). Its differentiated
        arguments are floats or float arrays.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate.
    has_aux : bool, default False
        ``fun`` returns ``(output, aux)``; ``aux`` comes back as plain values and gets
        no gradient.

    Returns
    -------
    callable
        Called like ``fun``; returns ``(value, grad)``, or ``((value, aux), grad)`` with
        ``has_aux``. ``grad`` matches the argument's type, shape and dtype (a tuple of
        them when ``argnums`` is a tuple).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> value, g = ng.value_and_grad(lambda x: ng.sum(x ** 2.0))(np.array([1.0, 2.0]))
    >>> float(value), g
    (5.0, array([2., 4.]))
    """
    nums = _normalize_argnums(argnums)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        positions = _resolve_argnums(nums, len(args), fun)
        with Arena() as arena:
            call_args = list(args)
            for k in positions:
                call_args[k] = _trace_argument(arena, args[k], k)
            out, aux = _split_output(fun(*call_args, **kwargs), has_aux)
            _check_scalar(out)
            grads = run_backward(arena, out, [call_args[k] for k in positions], None)
        shaped = [_like_argument(g, args[k]) for g, k in zip(grads, positions, strict=True)]
        result = shaped[0] if isinstance(argnums, (int, np.integer)) else tuple(shaped)
        value = plain(out)
        return ((value, plain(aux)), result) if has_aux else (value, result)

    return value_and_grad_fun


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *, has_aux: bool = False) -> Callable[..., Any]:
    """Make a function that returns the gradient of scalar-valued ``fun``.

    Same arguments as :func:`value_and_grad`; returns only the gradient, or
    ``(grad, aux)`` with ``has_aux``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (3.0, 2.0)
    """
    inner = value_and_grad(fun, argnums, has_aux=has_aux)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = inner(*args, **kwargs)
            return g, aux
        return inner(*args, **kwargs)[1]

    return grad_fun


def vjp(fun: Callable[..., Any], *args: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Evaluate ``fun(*args)`` and return its value and a vector-Jacobian product function.

    Returns
    -------
    out : array
        ``fun(*args)`` as a plain value.
    vjp_fun : callable
        ``vjp_fun(cotangent)`` returns a tuple with one gradient per argument; the
        cotangent has ``out``'s shape. It can be called any number of times.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> out, back = ng.vjp(lambda x: x * 2.0, np.array([1.0, 2.0]))
    >>> back(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    """
    arena = Arena()
    with arena:
        traced = [_trace_argument(arena, a, k) for k, a in enumerate(args)]
        out = fun(*traced)

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        grads = run_backward(arena, out, traced, cotangent)
        return tuple(_like_argument(g, a) for g, a in zip(grads, args, strict=True))

    return plain(out), vjp_fun
