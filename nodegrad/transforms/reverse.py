"""Reverse mode: ``value_and_grad``, ``grad``, ``vjp`` and ``elementwise_grad``.

Each call makes a fresh arena, turns the differentiated arguments into its leaves, runs
the user's function (which records nodes as it goes) and sweeps back once. Nested in
another transform, the same code differentiates the enclosing one's values: see
:mod:`nodegrad.transforms.common`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, overload

import numpy as np

from nodegrad.engine.arena import Arena, nested_arena, quiet_while_checking
from nodegrad.engine.backward import GradOptions, gradients, strict_integer_leaves
from nodegrad.engine.levels import Interpreted, is_interpreted
from nodegrad.engine.structure import zip_leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, NoGradientError, StructureError
from nodegrad.transforms.common import (
    Transformed,
    as_differentiated,
    as_seen,
    check_callable,
    check_flag,
    check_holomorphic_inputs,
    check_scalar,
    gradient_like,
    leaf_params,
    lower,
    name_of,
    normalize_argnums,
    resolve_argnums,
    snapshot,
    split_output,
)
from nodegrad.tree import map_floats

if TYPE_CHECKING:
    from typing_extensions import TypeVarTuple, Unpack

    Ts = TypeVarTuple("Ts")

__all__ = ["elementwise_grad", "grad", "value_and_grad", "vjp"]

P = ParamSpec("P")

# For a type checker the transformed function takes the parameters of the one it wraps;
# what it returns is Any: a gradient has its argument's shape and leaf types (None in a
# static field), which no annotation of the argument can say in general.


@overload
def value_and_grad(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = ...,
    *,
    has_aux: Literal[False] = ...,
    options: GradOptions | None = ...,
    out: Any = ...,
    accumulate: bool = ...,
    check_finite: bool = ...,
    holomorphic: bool = ...,
    sparse_rows: bool = ...,
) -> Transformed[P, tuple[Any, Any]]: ...
@overload
def value_and_grad(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = ...,
    *,
    has_aux: Literal[True],
    options: GradOptions | None = ...,
    out: Any = ...,
    accumulate: bool = ...,
    check_finite: bool = ...,
    holomorphic: bool = ...,
    sparse_rows: bool = ...,
) -> Transformed[P, tuple[tuple[Any, Any], Any]]: ...
@overload
def value_and_grad(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = ...,
    *,
    has_aux: bool,
    options: GradOptions | None = ...,
    out: Any = ...,
    accumulate: bool = ...,
    check_finite: bool = ...,
    holomorphic: bool = ...,
    sparse_rows: bool = ...,
) -> Transformed[P, tuple[Any, Any]]: ...


def value_and_grad(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    options: GradOptions | None = None,
    out: Any = None,
    accumulate: bool = False,
    check_finite: bool = False,
    holomorphic: bool = False,
    sparse_rows: bool = False,
) -> Transformed[P, Any]:
    """Make a function that returns ``fun``'s value and its gradient.

    Parameters
    ----------
    fun : callable
        Returns a scalar (or ``(scalar, aux)`` with ``has_aux``). A differentiated
        argument is a float, a float array, or any record / dict / list / tuple of them
        (static leaves such as ints, strings and fields marked static pass through). An
        integer or boolean array argument is differentiated as float64, as HIPS autograd
        does (``fun`` sees it as floats); a Python int is refused, as autograd refuses it.
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
    check_finite : bool, default False
        Raise :class:`~nodegrad.errors.NonFiniteError` at the first op whose forward value
        or gradient is NaN or Inf, naming it and the line that recorded it (as inside
        :func:`nodegrad.debug_nans`). Costs a source-line lookup per op; off, it costs
        nothing.
    holomorphic : bool, default False
        ``fun`` is holomorphic, with complex arguments and a complex scalar output: the
        result is its complex derivative ``f'(z)``. Without it, a complex output is an
        error and a complex argument gets JAX's gradient of a real-valued function (the
        conjugate of PyTorch's; see the complex-numbers page of the docs).
    sparse_rows : bool, default False
        An array leaf whose every use is a row gather (``x[idx]``, ``np.take(x, idx,
        axis=0)``, :func:`~nodegrad.gather`, a slice or mask of rows, a table merge) gets a
        :class:`~nodegrad.RowSparse` gradient: the rows read and their summed cotangents,
        instead of a dense array that is zero almost everywhere. Other leaves stay dense.
        Not with ``out``, nor inside another transform.

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
    check_callable(fun, "value_and_grad")
    for flag, value in (("has_aux", has_aux), ("accumulate", accumulate), ("holomorphic", holomorphic)):
        check_flag("value_and_grad", flag, value)
    check_flag("value_and_grad", "sparse_rows", sparse_rows)
    if sparse_rows and out is not None:
        msg = "sparse_rows=True gives RowSparse gradients, which out= buffers (dense arrays) cannot hold: pick one"
        raise ArgumentError(msg)
    nums = normalize_argnums(argnums)
    single = isinstance(argnums, (int, np.integer))
    if accumulate and out is None:
        msg = "accumulate=True needs out= buffers to add into"
        raise ArgumentError(msg)
    name = name_of("grad", fun)
    call: Callable[..., Any] = fun  # called with some arguments replaced by traced ones
    names = {k: f"args[{k}]" for k in nums if k >= 0}  # the leaves' key paths, made once

    def run(arena: Arena, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # One sweep, not recorded: the nodes need keep only what the rules read (and a
        # checking arena, here or under debug_nans, keeps everything: it checks them all).
        arena.lean = not arena.check_finite
        positions = resolve_argnums(nums, len(args), fun)
        args = tuple(as_differentiated(a) if k in positions else a for k, a in enumerate(args))
        if isinstance(options, GradOptions) and not options.zero_missing_wrt:  # others are refused by the sweep
            _refuse_integer_leaves(args, positions, names)
        call_args = list(args)
        leaves: list[Interpreted] = []  # every differentiated leaf, in order
        layouts: list[Any] = []  # how each argument was taken apart, to rebuild its gradient
        for k in positions:
            call_args[k] = leaf_params(arena, args[k], names.get(k) or f"args[{k}]", leaves, layouts)
        for k, a in enumerate(
            args
        ):  # a DataFrame not differentiated is a table inside all the same (a sparse matrix a SparseMatrix)
            if k not in positions:
                call_args[k] = as_seen(a)
        if out is not None:  # gradients written into buffers shaped like the arguments
            wrt = (snapshot(call_args[positions[0]]),) if single else tuple(snapshot(call_args[k]) for k in positions)
        if holomorphic:
            check_holomorphic_inputs("grad", [args[k] for k in positions])
        result, aux = split_output(call(*call_args, **kwargs), has_aux)
        check_scalar(result, holomorphic)
        # A holomorphic function's derivative is its VJP with the cotangent 1.
        seed = np.ones(np.shape(unwrap(result))) if holomorphic else None
        if out is None:
            # The leaves made above are the arena's only leaves: no op makes others.
            every = {"retain": False, "wrt_is_every_leaf": True, "sparse_rows": sparse_rows}
            grads = iter(gradients(arena, result, tuple(leaves), seed, options, **every))
            if single:
                grad_value: Any = gradient_like(args[positions[0]], grads, layouts[0])
            else:
                grad_value = tuple(gradient_like(args[k], grads, layouts[j]) for j, k in enumerate(positions))
        else:
            write_gradients(arena, result, wrt[0] if single else wrt, out, accumulate, options, seed)
            grad_value = out
        value = lower(result, arena)
        if has_aux:
            return (value, lower(aux, arena)), grad_value
        return value, grad_value

    def value_and_grad_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        with nested_arena(True if check_finite else None) as arena:
            try:
                if check_finite:
                    with quiet_while_checking(True):
                        return run(arena, args, kwargs)
                return run(arena, args, kwargs)
            finally:
                arena.seal(name)

    options_ = {"has_aux": has_aux, "options": options, "out": out, "accumulate": accumulate}
    flags_ = {"check_finite": check_finite, "holomorphic": holomorphic, "sparse_rows": sparse_rows}
    remake = (value_and_grad, (fun, argnums), {**options_, **flags_})
    return Transformed(value_and_grad_fun, fun, remake)


def _refuse_integer_leaves(args: tuple[Any, ...], positions: Sequence[int], names: dict[int, str]) -> None:
    """STRICT names the ints among the differentiated arguments' leaves (see
    :func:`~nodegrad.engine.backward.strict_integer_leaves`) before running anything."""
    named = [p for k in positions for p in strict_integer_leaves(args[k], names.get(k) or f"args[{k}]")]
    if named:
        msg = "no gradient path to the output from: " + ", ".join(named)
        raise NoGradientError(msg)


def write_gradients(
    arena: Arena, output: Any, wrt: Any, out: Any, accumulate: bool, options: Any, seed: Any = None
) -> None:
    """Write (or add) the gradients of ``output`` into the buffers ``out``, shaped like ``wrt``."""
    # The leaves this grad differentiates: the handles of its arena.
    pairs = [
        (path, leaf, buf) for path, leaf, buf in zip_leaves(wrt, out) if is_interpreted(leaf) and leaf.level is arena
    ]
    for path, leaf, buf in pairs:
        bad = not isinstance(buf, np.ndarray) or buf.dtype.kind not in "fc"
        bad = bad or (np.iscomplexobj(leaf.value) and buf.dtype.kind != "c")
        if bad or buf.shape != np.shape(leaf.value) or not buf.flags.writeable:
            got = (
                f"{type(buf).__name__} of shape {np.shape(buf)}" if isinstance(buf, np.ndarray) else type(buf).__name__
            )
            kind = "complex " if np.iscomplexobj(leaf.value) else ""
            msg = f"out{path} must be a writeable {kind}array of shape {np.shape(leaf.value)}, got {got}"
            raise StructureError(msg)
        value = unwrap(leaf)
        if np.may_share_memory(buf, value) and np.shares_memory(buf, value):
            # Writing the gradient there would overwrite the argument being differentiated.
            msg = f"out{path} shares memory with the argument it is the gradient of: pass separate buffers"
            raise ArgumentError(msg)
    raw = gradients(arena, output, [leaf for _, leaf, _ in pairs], seed, options, finish=lambda g, like: g)
    for (_, _, buf), g in zip(pairs, raw, strict=True):
        if accumulate:
            np.add(buf, g, out=buf, casting="same_kind")
        else:
            np.copyto(buf, g, casting="same_kind")


def _own_copy(x: Any) -> Any:
    return x.copy() if type(x) is np.ndarray else x


def grad(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    options: GradOptions | None = None,
    check_finite: bool = False,
    holomorphic: bool = False,
    sparse_rows: bool = False,
) -> Transformed[P, Any]:
    """Make a function that returns the gradient of scalar-valued ``fun``.

    Same arguments as :func:`value_and_grad`; returns only the gradient, or
    ``(grad, aux)`` with ``has_aux``. For a real-valued function of complex arguments the
    gradient is JAX's (``grad(lambda z: abs(z) ** 2)(1 + 2j)`` is ``2 - 4j``); with
    ``holomorphic=True``, the complex derivative of a holomorphic function.

    Parameters
    ----------
    fun : callable
        Returns a scalar (or ``(scalar, aux)`` with ``has_aux``). A differentiated
        argument is a float, a float array, or any record / dict / list / tuple of them.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate.
    has_aux : bool, default False
        ``fun`` returns ``(output, aux)``; ``aux`` comes back as plain values.
    options : GradOptions, optional
        :attr:`GradOptions.TRAINING` (default) gives zeros for inputs with no path to the
        output; :attr:`GradOptions.STRICT` raises naming them, and the int leaves of
        structured arguments (an int gets no gradient).
    check_finite : bool, default False
        Raise :class:`~nodegrad.errors.NonFiniteError` at the first op whose value or
        gradient is NaN or Inf, naming it and the line that recorded it.
    holomorphic : bool, default False
        ``fun`` is holomorphic (complex arguments and output): the complex derivative.
    sparse_rows : bool, default False
        A :class:`~nodegrad.RowSparse` gradient for each array leaf whose every use is a
        row gather (see :func:`value_and_grad`).

    Returns
    -------
    callable
        Called like ``fun``; returns the gradient in the argument's own structure (a tuple
        of them when ``argnums`` is a tuple), or ``(gradient, aux)`` with ``has_aux``.

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
    check_callable(fun, "grad")
    inner = value_and_grad(
        fun,
        argnums,
        has_aux=has_aux,
        options=options,
        check_finite=check_finite,
        holomorphic=holomorphic,
        sparse_rows=sparse_rows,
    )._call  # the plain function: one call layer less per gradient

    def grad_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        if has_aux:
            (_, aux), g = inner(*args, **kwargs)
            return g, aux
        return inner(*args, **kwargs)[1]

    flags = {"has_aux": has_aux, "options": options, "check_finite": check_finite, "holomorphic": holomorphic}
    remake = (grad, (fun, argnums), {**flags, "sparse_rows": sparse_rows})
    return Transformed(grad_fun, fun, remake)


@overload
def vjp(
    fun: Callable[[Unpack[Ts]], Any], *args: Unpack[Ts], has_aux: Literal[False] = ...
) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]: ...
@overload
def vjp(
    fun: Callable[[Unpack[Ts]], Any], *args: Unpack[Ts], has_aux: Literal[True]
) -> tuple[Any, Callable[[Any], tuple[Any, ...]], Any]: ...
@overload
def vjp(fun: Callable[[Unpack[Ts]], Any], *args: Unpack[Ts], has_aux: bool) -> tuple[Any, ...]: ...
def vjp(fun: Callable[[Unpack[Ts]], Any], *args: Unpack[Ts], has_aux: bool = False) -> Any:
    """Evaluate ``fun(*args)`` and return its value and a vector-Jacobian product function.

    Returns
    -------
    out : array or structure
        ``fun(*args)`` as plain values (any structure of arrays).
    vjp_fun : callable
        ``vjp_fun(cotangent)`` returns a tuple with one gradient per argument, each shaped
        like its argument; the cotangent is shaped like ``out``. It can be called any
        number of times, and reads the arguments as they were at this call (they are
        copied: an in-place update of them afterwards does not change its answers).
    aux : any
        Only with ``has_aux=True``: the second element of ``fun``'s ``(output, aux)``.

    Parameters
    ----------
    fun : callable
        A function of ``args`` returning an array or any structure of arrays (or
        ``(output, aux)`` with ``has_aux``).
    *args : any
        The point: arrays, numbers, or records / dicts / lists / tuples of them.
    has_aux : bool, default False
        ``fun`` returns ``(output, aux)``; ``aux`` comes back as plain values.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> out, back = ng.vjp(lambda x: {"double": x * 2.0, "square": x * x}, np.array([1.0, 2.0]))
    >>> back({"double": np.ones(2), "square": np.zeros(2)})
    (array([2., 2.]),)
    """
    check_callable(fun, "vjp")
    # vjp_fun may run long after this returns: its rules must read the arguments as they
    # are now, not as an in-place update (x -= lr * g) leaves them (a silent wrong answer).
    arguments: tuple[Any, ...] = tuple(map_floats(_own_copy, as_differentiated(a)) for a in args)
    leaves: list[Interpreted] = []  # every differentiated leaf, in order, as grad makes them
    layouts: list[Any] = []
    with nested_arena() as arena:
        arena.lean = not arena.check_finite  # its sweeps are never recorded
        try:
            traced = [leaf_params(arena, a, f"args[{k}]", leaves, layouts, "vjp") for k, a in enumerate(arguments)]
            result, aux = split_output(fun(*traced), has_aux)
        finally:
            arena.seal(name_of("vjp", fun))

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        grads = iter(gradients(arena, result, tuple(leaves), cotangent))
        return tuple(gradient_like(a, grads, layout) for a, layout in zip(arguments, layouts, strict=True))

    value = lower(result, arena)
    return (value, vjp_fun, lower(aux, arena)) if has_aux else (value, vjp_fun)


def elementwise_grad(fun: Callable[P, Any], argnums: int | Sequence[int] = 0) -> Transformed[P, Any]:
    """Make a function returning the sum of the rows of ``fun``'s Jacobian: its vector-Jacobian
    product with a cotangent of ones (autograd's ``elementwise_grad``).

    For a function applied elementwise this is the derivative of each output entry with
    respect to its own input entry, in one sweep.

    Parameters
    ----------
    fun : callable
        Returns an array (or any structure of float arrays).
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate.

    Returns
    -------
    callable
        Called like ``fun``; returns the gradient shaped like the argument (a tuple of them
        when ``argnums`` is a tuple).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.elementwise_grad(ng.tanh)(np.array([0.0, 1.0]))
    array([1.        , 0.41997434])
    """
    check_callable(fun, "elementwise_grad")
    nums = normalize_argnums(argnums)
    single = isinstance(argnums, (int, np.integer))

    def elementwise_grad_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        positions = resolve_argnums(nums, len(args), fun)

        def partial(*chosen: Any) -> Any:
            call_args: list[Any] = list(args)
            for k, value in zip(positions, chosen, strict=True):
                call_args[k] = value
            return fun(*call_args, **kwargs)

        out, back = vjp(partial, *(args[k] for k in positions))
        grads = back(_ones_like(out))
        return grads[0] if single else grads

    return Transformed(elementwise_grad_fun, fun, (elementwise_grad, (fun, argnums), {}))


def _ones_like(value: Any) -> Any:
    """Ones shaped like each float leaf of ``value`` (``None`` at its other leaves)."""
    return map_floats(lambda leaf: np.ones(np.shape(leaf), leaf.dtype if hasattr(leaf, "dtype") else float), value)
