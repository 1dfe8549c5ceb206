"""The public transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each call builds a fresh arena, turns the differentiated arguments into leaves, runs the
user's function (which records nodes as it goes), and sweeps back once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.arena import Arena, Traced
from nodegrad.errors import ArenaError, NodegradError, ShapeError, StructureError
from nodegrad.structure import flatten_with_paths, handler_for, map_with_paths, zip_leaves
from nodegrad.sweep import GradOptions, gradients

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


def _trace_argument(arena: Arena, value: Any, position: int) -> Any:
    if type(value) is np.ndarray or type(value) is float:
        return arena.param(value, name=f"args[{position}]")
    for path, leaf in flatten_with_paths(value, f"args[{position}]"):
        if isinstance(leaf, Traced):
            msg = (
                f"{path} is already traced: differentiating inside a differentiated "
                "function (higher order) is not supported by this transform"
            )
            raise ArenaError(msg)
    return arena.param(value, name=f"args[{position}]")


def _like_argument(g: Any, original: Any) -> Any:
    """Give ``g`` the argument's own leaf types: Python float in, Python float out."""
    handler = handler_for(original)
    if handler is None:
        if g is not None and isinstance(original, float | np.floating) and type(g) is not type(original):
            return type(original)(g)
        return g
    g_handler = handler_for(g)
    if g_handler is None:
        return g
    children = [_like_argument(g_handler.get(g, k), handler.get(original, k)) for k in handler.keys(original)]
    return g_handler.build(g, children)


def plain(value: Any) -> Any:
    """Replace traced values by their forward values, inside any structure."""
    if type(value) is Traced:
        return value.value
    return map_with_paths(lambda _, leaf: leaf.value if isinstance(leaf, Traced) else leaf, value)


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
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    options: GradOptions | None = None,
    out: Any = None,
    accumulate: bool = False,
) -> Callable[..., Any]:
    """Make a function that returns ``fun``'s value and its gradient.

    Parameters
    ----------
    fun : callable
        Returns a scalar (or ``(scalar, aux)`` with ``has_aux``). A differentiated
        argument is a float, a float array, or any record / dict / list / tuple of them
        (static leaves such as ints, strings and fields marked static pass through).
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate.
    has_aux : bool, default False
        ``fun`` returns ``(output, aux)``; ``aux`` comes back as plain values and gets
        no gradient.
    options : GradOptions, optional
        :attr:`GradOptions.TRAINING` (default) gives zeros for inputs with no path to the
        output; :attr:`GradOptions.STRICT` raises naming their key paths.
    out : structure of arrays, optional
        Preallocated gradient buffers shaped like the gradient. Each call writes into them
        (overwrite semantics) and returns them: no parameter-sized arrays are allocated
        for the result.
    accumulate : bool, default False
        With ``out``: add into the buffers instead of overwriting them.

    Returns
    -------
    callable
        Called like ``fun``; returns ``(value, grad)``, or ``((value, aux), grad)`` with
        ``has_aux``. ``grad`` has the argument's structure, type, shape and dtype: a
        record's gradient is an instance of its class, a dict's a dict with the same
        keys in the same order, ``None`` at static leaves (a tuple of them when
        ``argnums`` is a tuple).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> value, g = ng.value_and_grad(lambda x: ng.sum(x ** 2.0))(np.array([1.0, 2.0]))
    >>> float(value), g
    (5.0, array([2., 4.]))
    >>> buffers = {"w": np.zeros(2)}
    >>> f = ng.value_and_grad(lambda p: ng.sum(p["w"] * 3.0), out=buffers, accumulate=True)
    >>> _ = f({"w": np.ones(2)}); _, g = f({"w": np.ones(2)})
    >>> g is buffers, g["w"]
    (True, array([6., 6.]))
    """
    nums = _normalize_argnums(argnums)
    single = isinstance(argnums, (int, np.integer))
    if accumulate and out is None:
        msg = "accumulate=True needs out= buffers to add into"
        raise NodegradError(msg)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        positions = _resolve_argnums(nums, len(args), fun)
        with Arena() as arena:
            call_args = list(args)
            for k in positions:
                call_args[k] = _trace_argument(arena, args[k], k)
            result, aux = _split_output(fun(*call_args, **kwargs), has_aux)
            _check_scalar(result)
            wrt = tuple(call_args[k] for k in positions)
            if out is None:
                grads = gradients(arena, result, wrt, None, options)
                shaped = tuple(_like_argument(g, args[k]) for g, k in zip(grads, positions, strict=True))
                grad_value: Any = shaped[0] if single else shaped
            else:
                write_gradients(arena, result, wrt[0] if single else wrt, out, accumulate, options)
                grad_value = out
        value = plain(result)
        return ((value, plain(aux)), grad_value) if has_aux else (value, grad_value)

    return value_and_grad_fun


def write_gradients(arena: Arena, output: Any, wrt: Any, out: Any, accumulate: bool, options: Any) -> None:
    """Write (or add) the gradients of ``output`` into the buffers ``out``, shaped like ``wrt``."""
    pairs = [(path, leaf, buf) for path, leaf, buf in zip_leaves(wrt, out) if isinstance(leaf, Traced)]
    for path, leaf, buf in pairs:
        if not isinstance(buf, np.ndarray) or buf.shape != np.shape(leaf.value) or not buf.flags.writeable:
            got = (
                f"{type(buf).__name__} of shape {np.shape(buf)}" if isinstance(buf, np.ndarray) else type(buf).__name__
            )
            msg = f"out{path} must be a writeable array of shape {np.shape(leaf.value)}, got {got}"
            raise StructureError(msg)
    raw = gradients(arena, output, [leaf for _, leaf, _ in pairs], None, options, finish=lambda g, like: g)
    for (_, _, buf), g in zip(pairs, raw, strict=True):
        if accumulate:
            np.add(buf, g, out=buf, casting="same_kind")
        else:
            np.copyto(buf, g, casting="same_kind")


def grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    options: GradOptions | None = None,
) -> Callable[..., Any]:
    """Make a function that returns the gradient of scalar-valued ``fun``.

    Same arguments as :func:`value_and_grad`; returns only the gradient, or
    ``(grad, aux)`` with ``has_aux``.

    Examples
    --------
    >>> import attrs, numpy as np
    >>> import nodegrad as ng
    >>> @attrs.frozen
    ... class Line:
    ...     slope: np.ndarray
    ...     intercept: float
    ...     def predict(self, x):
    ...         return self.slope * x + self.intercept
    >>> loss = lambda line, x: ng.sum(line.predict(x) ** 2.0)
    >>> ng.grad(loss)(Line(np.array([1.0]), 0.5), np.array([2.0]))
    Line(slope=array([10.]), intercept=5.0)
    """
    inner = value_and_grad(fun, argnums, has_aux=has_aux, options=options)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = inner(*args, **kwargs)
            return g, aux
        return inner(*args, **kwargs)[1]

    return grad_fun


def vjp(fun: Callable[..., Any], *args: Any, has_aux: bool = False) -> Any:
    """Evaluate ``fun(*args)`` and return its value and a vector-Jacobian product function.

    Returns
    -------
    out : array or structure
        ``fun(*args)`` as plain values (any structure of arrays).
    vjp_fun : callable
        ``vjp_fun(cotangent)`` returns a tuple with one gradient per argument, each shaped
        like its argument; the cotangent is shaped like ``out``. It can be called any
        number of times.
    aux : any
        Only with ``has_aux=True``: the second element of ``fun``'s ``(output, aux)``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> out, back = ng.vjp(lambda x: {"double": x * 2.0, "square": x * x}, np.array([1.0, 2.0]))
    >>> back({"double": np.ones(2), "square": np.zeros(2)})
    (array([2., 2.]),)
    """
    arena = Arena()
    with arena:
        traced = [_trace_argument(arena, a, k) for k, a in enumerate(args)]
        result, aux = _split_output(fun(*traced), has_aux)

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        grads = gradients(arena, result, tuple(traced), cotangent)
        return tuple(_like_argument(g, a) for g, a in zip(grads, args, strict=True))

    return (plain(result), vjp_fun, plain(aux)) if has_aux else (plain(result), vjp_fun)
