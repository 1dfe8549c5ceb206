"""The public transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each call builds a fresh arena, turns the differentiated arguments into leaves, runs the
user's function (which records nodes as it goes), and sweeps back once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad import ops, tree
from nodegrad.engine.arena import Arena, current_arena, quiet_while_checking, too_deep
from nodegrad.engine.structure import (
    flatten_with_paths,
    handler_for,
    is_differentiable_leaf,
    leaves,
    map_with_paths,
    zip_leaves,
)
from nodegrad.engine.sweep import GradOptions, gradients
from nodegrad.engine.traced import Traced
from nodegrad.errors import ArenaError, ArgumentError, DtypeError, ShapeError, StructureError

__all__ = ["grad", "hessian", "hvp", "jacobian", "jvp", "value_and_grad", "vjp"]


def _check_callable(fun: Any, where: str) -> None:
    if not callable(fun):
        msg = f"{where} needs a function, got {type(fun).__name__}"
        raise ArgumentError(msg)


def _normalize_argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),)
    if not isinstance(argnums, (tuple, list)) or not all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums
    ):
        msg = f"argnums must be an int or a tuple of ints, got {argnums!r}"
        raise ArgumentError(msg)
    nums = tuple(int(a) for a in argnums)
    if not nums or len(set(nums)) != len(nums):
        msg = f"argnums must be an int or a non-empty tuple of distinct ints, got {argnums!r}"
        raise ArgumentError(msg)
    return nums


def _resolve_argnums(nums: tuple[int, ...], nargs: int, fun: Callable[..., Any]) -> tuple[int, ...]:
    if nums == (0,) and nargs:
        return nums  # the common case
    for k in nums:
        if not -nargs <= k < nargs:
            name = getattr(fun, "__name__", repr(fun))
            msg = f"argnums {k} is out of range: {name} was called with {nargs} positional argument(s)"
            raise ArgumentError(msg)
    return tuple(k % nargs for k in nums)


def _trace_argument(arena: Arena, value: Any, position: int) -> Any:
    if type(value) is np.ndarray or type(value) is float:
        return arena.param(value, name=f"args[{position}]")
    try:
        if any(isinstance(leaf, Traced) for leaf in leaves(value)):
            path = next(p for p, leaf in flatten_with_paths(value, f"args[{position}]") if isinstance(leaf, Traced))
            msg = (
                f"{path} is already traced: differentiating inside a differentiated "
                "function (higher order) is not supported by this transform"
            )
            raise ArenaError(msg)
    except RecursionError:
        raise too_deep("grad", f"args[{position}]") from None
    return arena.param(value, name=f"args[{position}]")


def _snapshot(traced: Any) -> Any:
    """A copy of a traced argument's containers, taken before the user's function runs: a
    function that replaces an entry of its argument (``batch["x"] = batch["x"] / 2``) must
    not change what the gradient is taken with respect to."""
    return traced if handler_for(traced) is None else map_with_paths(lambda _, leaf: leaf, traced)


def _like_argument(g: Any, original: Any) -> Any:
    """Give ``g`` the argument's own leaf types: Python float in, Python float out."""
    if isinstance(g, Traced):
        return g  # inside an enclosing differentiation: keep it traced
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
        raise StructureError(msg)
    return out[0], out[1]


def _check_scalar(out: Any) -> None:
    value = out.value if isinstance(out, Traced) else out
    if isinstance(value, np.ndarray | np.generic) and value.size == 1 and value.dtype.kind == "f":
        return  # the common case: a float scalar
    if not isinstance(value, (np.ndarray, np.generic, int, float)) or np.result_type(value).kind not in "biuf":
        msg = f"grad needs a function returning a real scalar, got {type(value).__name__}"
        if isinstance(value, (np.ndarray, np.generic)):
            msg += f" of dtype {value.dtype}"
        raise DtypeError(msg)
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
    check_finite: bool = False,
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
    check_finite : bool, default False
        Raise :class:`~nodegrad.errors.NonFiniteError` at the first op whose forward value
        or gradient is NaN or Inf, naming it and the line that recorded it (as inside
        :func:`nodegrad.debug_nans`). Costs a source-line lookup per op; off, it costs
        nothing.

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
    _check_callable(fun, "value_and_grad")
    nums = _normalize_argnums(argnums)
    single = isinstance(argnums, (int, np.integer))
    if accumulate and out is None:
        msg = "accumulate=True needs out= buffers to add into"
        raise ArgumentError(msg)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        positions = _resolve_argnums(nums, len(args), fun)
        outer = _enclosing_arena(args[k] for k in positions)
        if outer is not None:
            if check_finite:
                outer._start_checking()  # the enclosing arena checks from here on
            return _nested_value_and_grad(outer, fun, args, kwargs, positions, single, has_aux, options, out)
        with Arena(check_finite=True if check_finite else None) as arena, quiet_while_checking(bool(check_finite)):
            call_args = list(args)
            for k in positions:  # _enclosing_arena found no traced leaf in them
                call_args[k] = arena.param(args[k], name=f"args[{k}]")
            wrt = tuple(_snapshot(call_args[k]) for k in positions)
            result, aux = _split_output(fun(*call_args, **kwargs), has_aux)
            _check_scalar(result)
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


def _enclosing_arena(arguments: Any) -> Arena | None:
    """The arena of an enclosing differentiation, if any: that of a traced argument, else
    the arena entered with ``with``. Transforms nested in one record into its arena.
    """
    for argument in arguments:
        if type(argument) is np.ndarray or type(argument) is float:
            continue  # the common case: nothing to look inside
        traced = _traced_leaves(argument)
        if traced:
            return traced[0].arena
    return current_arena()


def _traced_leaves(value: Any) -> list[Traced]:
    try:
        return [leaf for leaf in leaves(value) if isinstance(leaf, Traced)]
    except RecursionError:
        raise too_deep("grad", "an argument") from None


def _nested_leaves(arena: Arena, value: Any, position: int) -> Any:
    """Fresh differentiable leaves for an argument inside an enclosing differentiation: a
    traced value gets an identity node (so the enclosing sweep still reaches it), plain
    data becomes a parameter of the enclosing arena.
    """
    if not _traced_leaves(value):
        return arena.param(value, name=f"args[{position}]")
    return map_with_paths(
        lambda path, leaf: (
            ops.positive(leaf)
            if isinstance(leaf, Traced)
            else arena.param(leaf, name=f"args[{position}]{path}")
            if is_differentiable_leaf(leaf)
            else leaf
        ),
        value,
    )


def _nested_value_and_grad(
    arena: Arena,
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    positions: tuple[int, ...],
    single: bool,
    has_aux: bool,
    options: GradOptions | None,
    out: Any,
) -> Any:
    """``value_and_grad`` inside an enclosing differentiation (``grad(grad(f))``): the
    sweep records itself into the enclosing arena, so value and gradient are traced
    values that the enclosing transform differentiates in turn.
    """
    if out is not None:
        msg = "out= buffers cannot be used inside an enclosing differentiation (the gradient is traced)"
        raise ArgumentError(msg)
    call_args = list(args)
    for k in positions:
        call_args[k] = _nested_leaves(arena, args[k], k)
    wrt = tuple(_snapshot(call_args[k]) for k in positions)
    result, aux = _split_output(fun(*call_args, **kwargs), has_aux)
    _check_scalar(result)
    grads = gradients(arena, result, wrt, None, options, create_graph=True)
    shaped = tuple(_like_argument(g, args[k]) for g, k in zip(grads, positions, strict=True))
    grad_value = shaped[0] if single else shaped
    return ((result, aux), grad_value) if has_aux else (result, grad_value)


def write_gradients(arena: Arena, output: Any, wrt: Any, out: Any, accumulate: bool, options: Any) -> None:
    """Write (or add) the gradients of ``output`` into the buffers ``out``, shaped like ``wrt``."""
    pairs = [(path, leaf, buf) for path, leaf, buf in zip_leaves(wrt, out) if isinstance(leaf, Traced)]
    for path, leaf, buf in pairs:
        bad = not isinstance(buf, np.ndarray) or buf.dtype.kind not in "fc"
        if bad or buf.shape != np.shape(leaf.value) or not buf.flags.writeable:
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
    check_finite: bool = False,
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
    _check_callable(fun, "grad")
    inner = value_and_grad(fun, argnums, has_aux=has_aux, options=options, check_finite=check_finite)

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
    _check_callable(fun, "vjp")
    arena = Arena()
    with arena:
        traced = [_trace_argument(arena, a, k) for k, a in enumerate(args)]
        wrt = tuple(_snapshot(t) for t in traced)
        result, aux = _split_output(fun(*traced), has_aux)

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        grads = gradients(arena, result, wrt, cotangent)
        return tuple(_like_argument(g, a) for g, a in zip(grads, args, strict=True))

    return (plain(result), vjp_fun, plain(aux)) if has_aux else (plain(result), vjp_fun)


def _traced_vdot(a: Any, b: Any) -> Any:
    """``sum(a * b)`` over the float leaves of two structures, recorded as ops."""
    total: Any = 0.0
    for _, x, y in zip_leaves(a, b):
        if x is not None and y is not None and (isinstance(x, Traced) or is_differentiable_leaf(x)):
            total = total + ops.sum(ops.multiply(x, y))
    return total


def hvp(fun: Callable[..., Any], x: Any, v: Any) -> Any:
    """The Hessian of scalar ``fun`` at ``x`` times ``v``, without forming the Hessian.

    Reverse over reverse: the gradient of ``<grad(fun)(x), v>``. ``x`` and ``v`` may be
    arrays or structures of one shape; the result has ``x``'s structure.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> f = lambda x: ng.sum(x ** 3.0)
    >>> ng.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([6., 0.])
    """
    _check_callable(fun, "hvp")
    _same_shapes("hvp", x, v)
    return grad(lambda y: _traced_vdot(grad(fun)(y), v))(x)


def _same_shapes(where: str, value: Any, other: Any) -> None:
    for path, leaf, other_leaf in zip_leaves(value, other):
        if is_differentiable_leaf(leaf) and np.shape(leaf) != np.shape(other_leaf):
            msg = f"{where}: the direction{path} has shape {np.shape(other_leaf)}, the point {np.shape(leaf)}"
            raise ShapeError(msg)


def jacobian(fun: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """Make a function returning the Jacobian of ``fun`` with respect to argument ``argnums``.

    One forward pass and one reverse sweep per output element; the result has shape
    ``out.shape + x.shape``. Arguments and output are arrays.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jacobian(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """

    _check_callable(fun, "jacobian")
    _normalize_argnums(argnums)

    @functools.wraps(fun)
    def jacobian_fun(*args: Any) -> Any:
        (position,) = _resolve_argnums((argnums,), len(args), fun)
        if handler_for(args[position]) is not None:
            msg = (
                f"jacobian: argument {position} is a {type(args[position]).__name__}; the Jacobian is taken with "
                "respect to an array (use vjp or jvp for structured arguments)"
            )
            raise ArgumentError(msg)
        out, back = vjp(lambda x: fun(*args[:position], x, *args[position + 1 :]), args[position])
        out = np.asarray(out)
        rows = []
        for k in range(out.size):
            seed = np.zeros(out.size, dtype=out.dtype)
            seed[k] = 1
            rows.append(np.asarray(back(seed.reshape(out.shape))[0]))
        x_shape = np.shape(args[position])
        return np.stack(rows).reshape(out.shape + x_shape) if rows else np.zeros(out.shape + x_shape)

    return jacobian_fun


def hessian(fun: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """Make a function returning the Hessian of scalar ``fun``: ``jacobian(grad(fun))``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.hessian(lambda x: x[0] * x[1] ** 2.0)(np.array([1.0, 3.0]))
    array([[0., 6.],
           [6., 2.]])
    """
    return jacobian(grad(fun, argnums), argnums)


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Forward mode: ``fun(*primals)`` and its directional derivative along ``tangents``.

    Computed by transposing a VJP (the VJP is linear in its cotangent ``u``, so the gradient
    with respect to ``u`` of ``<vjp(u), tangents>`` is the JVP): two reverse sweeps, no
    separate forward-mode rules to keep in step. Primals, tangents and the output may be
    structured; the output tangent has the output's structure (zeros at float leaves that do
    not depend on the primals, ``None`` at static leaves).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jvp(lambda x: x ** 2.0, (np.array([1.0, 3.0]),), (np.array([1.0, 1.0]),))
    (array([1., 9.]), array([2., 6.]))
    >>> ng.jvp(lambda p: {"y": p["w"] * 3.0}, ({"w": np.array([1.0])},), ({"w": np.array([2.0])},))
    ({'y': array([3.])}, {'y': array([6.])})
    """
    _check_callable(fun, "jvp")
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            msg = f"jvp: {name} must be a tuple or list with one entry per argument, got {type(value).__name__}"
            raise ArgumentError(msg)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        msg = f"jvp: {len(primals)} primals but {len(tangents)} tangents"
        raise StructureError(msg)
    for k, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        _same_shapes(f"jvp tangents[{k}]", p, t)  # same structures and shapes, or an error naming the place
    with Arena() as arena:
        traced = tuple(_trace_argument(arena, p, k) for k, p in enumerate(primals))
        wrt = tuple(_snapshot(t) for t in traced)
        out = fun(*traced)
        if not _traced_leaves(out):
            return plain(out), _zero_tangent(plain(out))
        # The cotangent u is a leaf shaped like the output; its traced leaves stand for the
        # output's, so the second sweep's gradient with respect to u has the output's structure.
        u = arena.param(_zero_tangent(plain(out)), name="cotangent")
        pulled = gradients(arena, out, wrt, seed=u, create_graph=True, seed_only=True)
        tangent_out = gradients(arena, _traced_vdot(pulled, tangents), u)
    return plain(out), _like_argument(tangent_out, plain(out))


def _zero_tangent(value: Any) -> Any:
    """Zeros shaped like each float leaf of ``value``; ``None`` at its other leaves."""
    if handler_for(value) is None and not is_differentiable_leaf(value):
        msg = f"jvp: the output must hold floating-point values, got {type(value).__name__}"
        raise DtypeError(msg)
    return tree.zeros_like(value)
