"""Whole derivatives: ``jacobian`` (by rows or by columns), ``hessian`` and ``hvp``.

Arguments and outputs may be structured. The Jacobian has JAX's layout: the output's
structure outside, the argument's inside, and at each pair of leaves an array of shape
``out_leaf.shape + arg_leaf.shape`` (with ``argnums`` a tuple, a tuple level between).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec

import numpy as np

from nodegrad import ops
from nodegrad.engine.cycles import unwalkable
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.structure import (
    UnwalkableError,
    differentiable_leaves,
    flatten,
    is_container,
    map_with_paths,
)
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError
from nodegrad.transforms.batching import vmap
from nodegrad.transforms.common import (
    Transformed,
    as_differentiated,
    check_callable,
    check_flag,
    check_holomorphic_inputs,
    normalize_argnums,
    resolve_argnums,
    same_shapes,
    traced_vdot,
)
from nodegrad.transforms.forward import jvp
from nodegrad.transforms.reverse import grad, vjp

P = ParamSpec("P")

__all__ = ["hessian", "hvp", "jacfwd", "jacobian", "jacrev"]


def _float_leaves(value: Any) -> list[tuple[str, Any]]:
    """The differentiated leaves of ``value`` with their paths (not a float in a field
    marked static, which gets no derivative)."""
    return list(differentiable_leaves(value))


def _identity(template: Any) -> tuple[Any, int]:
    """``template``'s float entries' unit vectors, all at once: each float leaf an array of
    shape ``(n,) + leaf.shape`` holding, at position ``k``, the structure that is zero but
    for a one at float entry ``k`` (entries counted leaf by leaf, each in C order); ``None``
    at other leaves. Returns it and ``n``."""
    found = _float_leaves(template)
    sizes = [int(np.prod(np.shape(leaf), dtype=int)) for _, leaf in found]
    count = sum(sizes)
    offsets = dict(zip((path for path, _ in found), np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))

    def unit(path: str, leaf: Any) -> Any:
        if path not in offsets:
            return None
        size = int(np.prod(np.shape(leaf), dtype=int))
        block = np.zeros((count, size), _dtype(leaf))
        block[offsets[path] : offsets[path] + size] = np.eye(size, dtype=block.dtype)
        return block.reshape((count, *np.shape(leaf)))

    return map_with_paths(unit, template), count


def _zeros_batched(template: Any, count: int) -> Any:
    chosen = {path for path, _ in _float_leaves(template)}
    return map_with_paths(
        lambda path, leaf: np.zeros((count, *np.shape(leaf)), _dtype(leaf)) if path in chosen else None,
        template,
    )


def _from_batched(out: Any, args: tuple[Any, ...], batched: Any, count: int, by_rows: bool, single: bool) -> Any:
    """Lay out derivatives computed for every basis vector at once as JAX does. By rows,
    ``batched`` holds one structure per argument (its float leaves with a leading axis of
    one entry per output entry); by columns, one output structure per argument (its float
    leaves with a leading axis of one entry per entry of that argument)."""
    out_leaves = _float_leaves(out)
    arg_leaves = [_float_leaves(a) for a in args]
    out_sizes = [int(np.prod(np.shape(leaf), dtype=int)) for _, leaf in out_leaves]
    out_starts = np.cumsum([0, *out_sizes]).tolist()

    def block(i: int, position: int, j: int) -> Any:
        out_shape, arg_shape = np.shape(out_leaves[i][1]), np.shape(arg_leaves[position][j][1])
        if by_rows:
            rows = [leaf for _, leaf in _float_leaves(batched[position])][j] if count else None
            if rows is None:
                return np.zeros(out_shape + arg_shape)
            return _reshaped(rows[out_starts[i] : out_starts[i + 1]], out_shape + arg_shape)
        columns = [leaf for _, leaf in _float_leaves(batched[position])][i] if batched else None
        if columns is None:
            return np.zeros(out_shape + arg_shape)
        arg_sizes = [int(np.prod(np.shape(leaf), dtype=int)) for _, leaf in arg_leaves[position]]
        start = sum(arg_sizes[:j])
        part = columns[start : start + arg_sizes[j]]  # (entries of arg leaf j,) + out_shape
        moved = np.moveaxis(_reshaped(part, (arg_sizes[j], *out_shape)), 0, -1)
        return _reshaped(moved, out_shape + arg_shape)

    def for_output_leaf(i: int) -> Any:
        per_argument = [_fill(arg, functools.partial(block, i, position)) for position, arg in enumerate(args)]
        return per_argument[0] if single else tuple(per_argument)

    return _fill(out, for_output_leaf)


def _reshaped(value: Any, shape: tuple[int, ...]) -> Any:
    return ops.reshape(value, shape) if type(value) in DIFFERENTIATING else np.reshape(value, shape)


def _dtype(leaf: Any) -> Any:
    return leaf.dtype if hasattr(leaf, "dtype") else np.float64


def _fill(template: Any, make: Callable[[int], Any]) -> Any:
    """``template`` rebuilt with ``make(j)`` at its ``j``-th float leaf and ``None`` at its
    other leaves (a bare array or float is its own leaf 0)."""
    if not is_container(template):
        return make(0)
    chosen = {path: j for j, (path, _) in enumerate(_float_leaves(template))}

    def at(path: str, leaf: Any) -> Any:
        return make(chosen[path]) if path in chosen else None

    return map_with_paths(at, template)


def _check_differentiable(where: str, value: Any, what: str) -> None:
    try:
        found = _float_leaves(value)
    except UnwalkableError:
        raise unwalkable(where, what, value) from None
    if not found:
        msg = (
            f"{where}: {what} holds no floating-point value to differentiate (integer numbers are not "
            "differentiated: write 3.0 for 3; an integer array is differentiated as float64, but not inside a "
            "structure: cast it with x.astype(float))"
        )
        raise DtypeError(msg)
    if _holds_table(flatten(value)[1]):
        msg = (
            f"{where}: {what} is or holds a table, whose columns cannot each hold a block of a matrix: pass its "
            "float columns as a dict, {c: df[c].to_numpy() for c in columns}"
        )
        raise ArgumentError(msg)


def _holds_table(treedef: Any) -> bool:
    handler = treedef.handler
    return handler is not None and (handler.family == "table" or any(_holds_table(c) for c in treedef.children))


def jacobian(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, *, mode: str = "rev", holomorphic: bool = False
) -> Transformed[P, Any]:
    """Make a function returning the Jacobian of ``fun`` with respect to argument(s) ``argnums``.

    Parameters
    ----------
    fun : callable
        Returns a float array, or any structure of them.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate; each may be structured.
    mode : {"rev", "fwd"}, default "rev"
        ``"rev"``: one reverse sweep per output entry (cheaper for few outputs).
        ``"fwd"``: one :func:`~nodegrad.jvp` per argument entry (cheaper for few inputs).
    holomorphic : bool, default False
        ``fun`` is holomorphic, with complex arguments and outputs: the result holds its
        complex derivatives. Without it, as in JAX, ``"rev"`` needs real outputs (each row
        is then a gradient, complex for complex arguments) and ``"fwd"`` real arguments.

    Returns
    -------
    callable
        Called like ``fun``. For array argument and output, an array of shape
        ``out.shape + x.shape``; for structured ones, the output's structure outside and the
        argument's inside (a tuple of those per argument when ``argnums`` is a tuple).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jacobian(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> jac = ng.jacobian(lambda p: {"y": p["a"] * p["b"]})({"a": np.array([2.0]), "b": 3.0})
    >>> jac["y"]["a"], jac["y"]["b"]
    (array([[3.]]), array([2.]))
    """
    check_callable(fun, "jacobian")
    nums = normalize_argnums(argnums)
    single = isinstance(argnums, (int, np.integer))
    if not isinstance(mode, str) or mode not in ("rev", "fwd"):
        msg = f"jacobian: mode must be 'rev' or 'fwd', got {mode!r}"
        raise ArgumentError(msg)
    check_flag("jacobian", "holomorphic", holomorphic)

    def jacobian_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        positions = resolve_argnums(nums, len(args), fun)
        chosen = tuple(as_differentiated(args[k]) for k in positions)
        for k, value in zip(positions, chosen, strict=True):
            _check_differentiable("jacobian", value, f"args[{k}]")
        if holomorphic:
            check_holomorphic_inputs("jacobian", chosen)
        elif mode == "fwd":
            _refuse_complex(chosen, "arguments", "for a real-valued function use mode='rev'")

        def partial(*values: Any) -> Any:
            call_args: list[Any] = list(args)
            for k, value in zip(positions, values, strict=True):
                call_args[k] = value
            return fun(*call_args, **kwargs)

        if mode == "rev":
            out, back = vjp(partial, *chosen)
            _check_differentiable("jacobian", out, "the output")
            _check_output(out, holomorphic, mode)
            # Every row at once: one sweep of batched cotangents, the rows of the identity.
            seeds, count = _identity(out)
            rows = vmap(back, axis_size=count)(seeds) if count else ()
            return _from_batched(out, chosen, rows, count, by_rows=True, single=single)
        # Every column at once: one forward pass of batched tangents.
        columns = []
        total = sum(_identity(value)[1] for value in chosen)
        start = 0
        out = _NOT_YET
        for position, value in enumerate(chosen):
            directions, count = _identity(value)
            if count:
                tangents = tuple(
                    directions if p == position else _zeros_batched(v, count) for p, v in enumerate(chosen)
                )
                # The output from the traced pass (the same for every tangent): a plain call
                # would fail where the function indexes the plain value by a batched index.
                out, column = vmap(lambda t: jvp(partial, chosen, t), out_axes=(None, 0))(tangents)
                columns.append(column)
            start += count
        if out is _NOT_YET:
            out = partial(*chosen)
        _check_differentiable("jacobian", out, "the output")
        _check_output(out, holomorphic, mode)
        return _from_batched(out, chosen, columns, total, by_rows=False, single=single)

    return Transformed(jacobian_fun, fun, (jacobian, (fun, argnums), {"mode": mode, "holomorphic": holomorphic}))


#: The output of jacobian_fun's function, before any pass has computed it.
_NOT_YET = object()


def _leaves_of_kind(value: Any, complex_: bool) -> list[str]:
    """The key paths of ``value``'s differentiable leaves that are complex (or real)."""
    return [
        path or "the value"
        for path, leaf in _float_leaves(value)
        if (np.result_type(unwrap(leaf)).kind == "c") == complex_
    ]


def _refuse_complex(values: Any, what: str, hint: str) -> None:
    found = _leaves_of_kind(values, complex_=True)
    if found:
        msg = (
            f"jacobian(mode='fwd') needs real {what}, but {found[0]} is complex: for a holomorphic function pass "
            f"holomorphic=True; {hint}"
        )
        raise DtypeError(msg)


def _check_output(out: Any, holomorphic: bool, mode: str) -> None:
    if holomorphic:
        real = _leaves_of_kind(out, complex_=False)
        if real:
            msg = f"jacobian with holomorphic=True needs complex outputs, but {real[0]} is real"
            raise DtypeError(msg)
        return
    complex_ = _leaves_of_kind(out, complex_=True) if mode == "rev" else []
    if complex_:
        msg = (
            f"jacobian(mode='rev') needs real outputs, but {complex_[0]} is complex: for a holomorphic "
            "function pass holomorphic=True; with real arguments mode='fwd' gives the Jacobian of a complex output"
        )
        raise DtypeError(msg)


def jacrev(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, *, holomorphic: bool = False
) -> Transformed[P, Any]:
    """:func:`jacobian` by reverse sweeps, one per output entry (JAX's name).

    Parameters
    ----------
    fun : callable
        Returns a float array, or any structure of them.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate; each may be structured.
    holomorphic : bool, default False
        ``fun`` is holomorphic: complex derivatives (see :func:`jacobian`).

    Returns
    -------
    callable
        Called like ``fun``; returns the Jacobian laid out as :func:`jacobian` lays it out.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jacrev(lambda x: x[0] * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [2., 1.]])
    """
    return jacobian(fun, argnums, mode="rev", holomorphic=holomorphic)


def jacfwd(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, *, holomorphic: bool = False
) -> Transformed[P, Any]:
    """:func:`jacobian` by forward mode, one :func:`~nodegrad.jvp` per argument entry
    (JAX's name).

    Parameters
    ----------
    fun : callable
        Returns a float array, or any structure of them.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate; each may be structured.
    holomorphic : bool, default False
        ``fun`` is holomorphic: complex derivatives (see :func:`jacobian`).

    Returns
    -------
    callable
        Called like ``fun``; returns the Jacobian laid out as :func:`jacobian` lays it out.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.jacfwd(lambda x: x[0] * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [2., 1.]])
    """
    return jacobian(fun, argnums, mode="fwd", holomorphic=holomorphic)


def hessian(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, *, holomorphic: bool = False
) -> Transformed[P, Any]:
    """Make a function returning the Hessian of ``fun``: the Jacobian of its Jacobian, laid
    out as :func:`jacobian` lays it out. For a scalar ``fun`` of an array, an array of shape
    ``x.shape + x.shape``; a non-scalar ``fun`` adds its output's shape in front, so
    ``hessian(hessian(f))`` is the fourth derivative.

    Parameters
    ----------
    fun : callable
        Returns a float array (usually a scalar), or any structure of them.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate; each may be structured.
    holomorphic : bool, default False
        ``fun`` is holomorphic: complex second derivatives.

    Returns
    -------
    callable
        Called like ``fun``; returns the Hessian.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> ng.hessian(lambda x: x[0] * x[1] ** 2.0)(np.array([1.0, 3.0]))
    array([[0., 6.],
           [6., 2.]])
    """
    check_callable(fun, "hessian")
    return jacobian(jacobian(fun, argnums, holomorphic=holomorphic), argnums, holomorphic=holomorphic)


def hvp(fun: Callable[..., Any], x: Any, v: Any) -> Any:
    """The Hessian of scalar ``fun`` at ``x`` times ``v``, without forming the Hessian.

    Reverse over reverse: the gradient of ``<grad(fun)(x), v>``. ``x`` and ``v`` may be
    arrays or structures of one shape (dict entries matched by key); the result has
    ``x``'s structure.

    Parameters
    ----------
    fun : callable
        A scalar function of one argument.
    x : array or structure
        The point.
    v : array or structure
        The vector, of ``x``'s structure and shapes.

    Returns
    -------
    array or structure
        ``H(x) @ v``, in ``x``'s structure.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> f = lambda x: ng.sum(x ** 3.0)
    >>> ng.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([6., 0.])
    """
    check_callable(fun, "hvp")
    same_shapes("hvp", x, v)
    return grad(lambda y: traced_vdot(grad(fun)(y), v))(x)
