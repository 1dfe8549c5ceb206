"""Implicit differentiation: the gradient of a solver's answer from the condition it meets.

A solver finds ``x`` with ``F(x, *args) = 0`` (a root, the stationary point of a fit) or
``T(x, *args) = x`` (a fixed point), by any means: a Python loop, ``float()``, scipy. Its
steps are not differentiated. Where ``F`` is smooth and ``A = dF/dx`` is invertible at the
answer, the implicit function theorem gives the answer's derivative with respect to
``args``, ``dx/dargs = -A^-1 dF/dargs``, so a cotangent ``g`` of ``x`` becomes

    u = A^-T g,        the cotangent of ``args`` = -(dF/dargs)^T u,

one linear solve with ``A``'s transpose per sweep: :func:`custom_root` and
:func:`custom_fixed_point` give a solver that rule (JAXopt's decorators, for any structure
nodegrad differentiates).

The solve is matrix-free where it may be: ``A^T u`` is one reverse sweep of ``F`` recorded
once, handed to scipy's Krylov solvers (or ``A`` is built column by column and solved
densely, for small systems). Where the sweep is itself differentiated (second derivatives,
``jvp``, which transposes a reverse sweep) the rule is made of nodegrad's ops throughout:
``A`` is built with :func:`~nodegrad.jacobian` and solved with ``np.linalg.solve``, so its
answer is differentiated again. The answer itself is made differentiable at every level of
nesting, so a Hessian with respect to ``args`` sees the answer move.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from nodegrad.custom import custom_vjp
from nodegrad.engine.arena import entered_arenas
from nodegrad.engine.levels import INTERPRETED, PER_EXAMPLE, RECORDING, carries_gradient, lower
from nodegrad.engine.record import interpreters_running
from nodegrad.engine.staged import Unreplayable
from nodegrad.engine.structure import differentiable_leaves, leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ImplicitDiffError, ShapeError, user_location
from nodegrad.ops.examples import per_example_call
from nodegrad.transforms import grad, jacobian, vjp
from nodegrad.tree import map_floats, ravel

__all__ = ["LINEAR_SOLVERS", "custom_fixed_point", "custom_root"]

#: The linear solvers a decorated solver may name for its systems ``A^T u = g``; ``"auto"``
#: solves systems of up to :data:`_DENSE_UP_TO` unknowns densely, larger ones by GMRES (CG
#: where ``A`` is symmetric, as a fit's Hessian is). The Krylov ones need scipy.
LINEAR_SOLVERS = ("auto", "dense", "cg", "gmres", "bicgstab", "minres")

_DENSE_UP_TO = 64
_HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


def custom_root(
    optimality_fun: Callable[..., Any], solve: str | Callable[..., Any] = "auto"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a root finder so that its answer is differentiable by the implicit function
    theorem.

    The decorated ``solver(init, *args)`` runs on plain values (it may call ``float()``,
    scipy, any Python) and returns ``x`` with ``optimality_fun(x, *args) == 0``, of
    ``init``'s structure. Its answer is differentiable with respect to ``args`` (not
    ``init``) under every transform, to any order: each cotangent is one linear solve with
    the transpose of ``d optimality_fun / dx``.

    Parameters
    ----------
    optimality_fun : callable
        ``optimality_fun(x, *args)``, zero at the answer, of ``x``'s structure and size
        (a square system).
    solve : str or callable, default "auto"
        How the linear systems are solved: one of :data:`LINEAR_SOLVERS`, or a function
        ``solve(matvec, b)`` returning ``u`` with ``matvec(u) == b`` (1-D float arrays).

    Returns
    -------
    callable
        A decorator: ``solver`` becomes a function of ``(init, *args)`` (keyword arguments
        are bound to ``solver``'s parameters) whose answer carries gradients to ``args``.

    Raises
    ------
    nodegrad.errors.ImplicitDiffError
        In a sweep, where the linear system is singular or its solver does not converge.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> @ng.custom_root(lambda x, a: x**3 - a)
    ... def cube_root(x, a):
    ...     for _ in range(50):
    ...         x = x - (x**3 - a) / (3 * x**2)
    ...     return x
    >>> float(ng.grad(lambda a: cube_root(1.0, a))(8.0))  # d a^(1/3) / da = 1/12 at 8
    0.08333333333333333
    """
    return _decorator(optimality_fun, solve, "custom_root", fixed_point=False)


def custom_fixed_point(
    fixed_point_fun: Callable[..., Any], solve: str | Callable[..., Any] = "auto"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a fixed-point solver so that its answer is differentiable by the implicit
    function theorem.

    As :func:`custom_root` with ``optimality_fun(x, *args) = fixed_point_fun(x, *args) - x``:
    the decorated ``solver(init, *args)`` returns ``x`` with ``fixed_point_fun(x, *args) ==
    x``.

    Parameters
    ----------
    fixed_point_fun : callable
        ``fixed_point_fun(x, *args)``, of ``x``'s structure, equal to ``x`` at the answer.
    solve : str or callable, default "auto"
        As for :func:`custom_root`.

    Returns
    -------
    callable
        A decorator, as :func:`custom_root`'s.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> @ng.custom_fixed_point(lambda x, a: 0.5 * (x + a / x))  # Newton's square root
    ... def square_root(x, a):
    ...     while abs(x * x - a) > 1e-14 * a:
    ...         x = 0.5 * (x + a / x)
    ...     return x
    >>> float(ng.grad(lambda a: square_root(1.0, a))(4.0))  # 1 / (2 sqrt(a))
    0.25
    """
    return _decorator(fixed_point_fun, solve, "custom_fixed_point", fixed_point=True)


def _decorator(
    condition: Callable[..., Any], solve: Any, where: str, *, fixed_point: bool, symmetric: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    if not callable(condition):
        msg = f"{where} needs a function of (x, *args), got {type(condition).__name__} [at {user_location()}]"
        raise ArgumentError(msg)
    if not callable(solve) and solve not in LINEAR_SOLVERS:
        msg = f"{where}: solve must be one of {', '.join(LINEAR_SOLVERS)} or a function solve(matvec, b), got {solve!r}"
        raise ArgumentError(msg)

    def decorate(solver: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(solver):
            msg = f"{where} decorates a solver function, got {type(solver).__name__}"
            raise ArgumentError(msg)
        return _Implicit(solver, condition, solve, fixed_point=fixed_point, symmetric=symmetric)

    return decorate


def implicit_solver(
    solver: Callable[..., Any], optimality_fun: Callable[..., Any], solve: Any = "auto", *, symmetric: bool = False
) -> Callable[..., Any]:
    """``custom_root(optimality_fun, solve)(solver)``, telling the linear solver that ``d
    optimality_fun / dx`` is symmetric (a gradient's: a fit's stationarity condition), so
    ``"auto"`` picks CG."""
    return _decorator(optimality_fun, solve, "custom_root", fixed_point=False, symmetric=symmetric)(solver)


class _Implicit:
    """A solver whose answer's gradient is given by its optimality condition (see the
    module's docstring)."""

    def __init__(
        self,
        solver: Callable[..., Any],
        condition: Callable[..., Any],
        solve: Any,
        *,
        fixed_point: bool,
        symmetric: bool,
    ) -> None:
        self.solver = solver
        self.condition = condition
        self.solve = solve
        self.fixed_point = fixed_point
        self.symmetric = symmetric
        self.name = getattr(solver, "__qualname__", "solver")
        self.signature = _signature(solver)
        self.answer = custom_vjp(_named(self._plain_answer, self.name))
        self.answer.defvjp(self._fwd, self._bwd)
        functools.update_wrapper(self, solver)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or not args:
            args = self._positional(args, kwargs)
        return self.answer(*args)

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """``(init, *args)`` bound to the solver's parameters, keywords too (``init`` among them)."""
        if self.signature is None:
            msg = f"{self.name}: keyword arguments need a solver whose signature Python can read"
            raise ArgumentError(msg)
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}: {exc} [at {user_location()}]") from None
        bound.apply_defaults()
        if bound.kwargs:
            msg = f"{self.name}: keyword-only parameters ({', '.join(bound.kwargs)}) cannot be differentiated through"
            raise ArgumentError(msg)
        if not bound.args:
            raise TypeError(f"{self.name}: the solver needs a starting point, init [at {user_location()}]")
        return tuple(bound.args)

    # -- the answer, on plain values --------------------------------------------------------
    def _plain_answer(self, init: Any, *args: Any) -> Any:
        """The solver's answer where no gradient reaches ``args``: on plain values, once per
        example of a ``vmap`` over them."""
        found = leaves((init, args))
        if any(type(leaf) in PER_EXAMPLE for leaf in found):
            return per_example_call(self._plain_answer, (init, *args), {})
        if any(type(leaf) in RECORDING for leaf in found):
            # A solver reads values as it iterates: a recording would freeze its path.
            msg = f"{self.name}: a solver differentiated implicitly runs on plain values [at {user_location()}]"
            raise Unreplayable(msg)
        x = self.solver(init, *args)
        if (entered_arenas() or interpreters_running()) and not any(type(v) in INTERPRETED for v in leaves(x)):
            # (an answer computed through a closure's values carries their gradient itself)
            self._refuse_closures(x, args)
        return x

    def _fwd(self, init: Any, *args: Any) -> tuple[Any, Any]:
        if any(carries_gradient(leaf) for leaf in leaves(args)):
            x = self(_constant(init), *args)  # differentiable at the level around this one, too
        else:
            x = self._plain_answer(_constant(init), *args)
        return x, (x, args)

    # -- the rule -----------------------------------------------------------------------------
    def _bwd(self, residuals: tuple[Any, Any], g: Any) -> tuple[Any, ...]:
        x, args = residuals
        differentiated = [k for k, a in enumerate(args) if differentiable_leaves(a)]
        if not differentiated:
            return (None,) * (len(args) + 1)
        u = self._transposed_solve(x, args, g)

        def paired(*chosen: Any) -> Any:
            full = list(args)
            for k, value in zip(differentiated, chosen, strict=True):
                full[k] = value
            residual, _ = ravel(self.condition(x, *full))
            return -(residual @ u)  # (the -x of a fixed point's condition does not depend on args)

        found = grad(paired, argnums=tuple(range(len(differentiated))))(*(args[k] for k in differentiated))
        cotangents: list[Any] = [None] * len(args)
        for k, ct in zip(differentiated, found, strict=True):
            cotangents[k] = ct
        return (None, *cotangents)

    def _refuse_closures(self, x: Any, args: tuple[Any, ...]) -> None:
        """Refuse a condition that closes over a value a transform interprets: the rule gives
        gradients to ``args`` only, so what it closes over would silently get none."""
        plain = self.condition(_plain(x), *(_plain(a) for a in args))
        if any(type(leaf) in INTERPRETED for leaf in leaves(plain)):
            what = "fixed_point_fun" if self.fixed_point else "optimality_fun"
            msg = (
                f"{self.name}: its {what} closes over a value a transform differentiates or batches (its result on "
                f"plain arguments still depends on one), whose gradient the implicit rule cannot give: pass that value "
                f"to the solver as one of its arguments, after init [at {user_location()}]"
            )
            raise ArgumentError(msg)

    def _residual(self, x: Any, args: tuple[Any, ...]) -> Any:
        """``F(x, *args)``: the root condition (a fixed point's ``T(x) - x``)."""
        out = self.condition(x, *args)
        if self.fixed_point:
            return _tree_sub(out, x, self.name)
        return out

    def _transposed_solve(self, x: Any, args: tuple[Any, ...], g: Any) -> Any:
        """``u`` with ``A^T u = g`` (``A = dF/dx`` at the answer), as a flat vector."""
        x_flat, unravel_x = ravel(x)
        g_flat, _ = ravel(g)
        n = int(x_flat.shape[0])
        if tuple(g_flat.shape) != (n,):
            msg = f"{self.name}: the cotangent of its answer has {g_flat.shape} entries, the answer {n}"
            raise ShapeError(msg)
        if any(type(v) in INTERPRETED for v in (x_flat, g_flat, *leaves(args))):
            # The sweep is differentiated again (or batched, as a Jacobian's is): A and the
            # solve, as ops, which every interpreter runs.
            matrix = jacobian(lambda v: ravel(self._residual(unravel_x(v), args))[0])(x_flat)
            self._check_square(matrix, n)
            try:
                return np.linalg.solve(np.swapaxes(matrix, 0, 1), g_flat)
            except np.linalg.LinAlgError:
                raise self._failed("dense", "the matrix dF/dx is singular at the answer") from None
        residual, back = vjp(lambda v: ravel(self._residual(unravel_x(v), args))[0], x_flat)
        if np.shape(residual) != (n,):
            self._check_square(np.zeros((np.size(residual), n)), n)

        def matvec(u: Any) -> Any:
            return np.asarray(back(np.asarray(u, dtype=residual.dtype))[0], dtype=np.float64)

        return self._solved(matvec, np.asarray(g_flat, dtype=np.float64), n).astype(
            np.asarray(x_flat).dtype, copy=False
        )

    def _check_square(self, matrix: Any, n: int) -> None:
        rows = int(matrix.shape[0])
        if rows != n:
            what = "fixed_point_fun" if self.fixed_point else "optimality_fun"
            msg = (
                f"{self.name}: {what} has {rows} entries where the answer has {n}: implicit differentiation needs as "
                f"many conditions as unknowns"
            )
            raise ShapeError(msg)

    def _solved(self, matvec: Callable[[Any], Any], b: np.ndarray, n: int) -> np.ndarray:
        method = self.solve
        if callable(method):
            return np.asarray(method(matvec, b), dtype=np.float64).reshape(n)
        if method == "auto":
            method = "dense" if n <= _DENSE_UP_TO or not _HAVE_SCIPY else ("cg" if self.symmetric else "gmres")
        if method == "dense":
            return self._dense(matvec, b, n)
        return self._krylov(method, matvec, b, n)

    def _dense(self, matvec: Callable[[Any], Any], b: np.ndarray, n: int) -> np.ndarray:
        transposed = np.stack([matvec(e) for e in np.eye(n)], axis=1) if n else np.zeros((0, 0))
        try:
            u = np.linalg.solve(transposed, b)
        except np.linalg.LinAlgError:
            raise self._failed("dense", "the matrix dF/dx is singular at the answer") from None
        if not np.all(np.isfinite(u)):
            raise self._failed("dense", "the matrix dF/dx is singular at the answer (a non-finite solution)")
        return u

    def _krylov(self, method: str, matvec: Callable[[Any], Any], b: np.ndarray, n: int) -> np.ndarray:
        if not _HAVE_SCIPY:
            msg = f"{self.name}: the linear solver {method!r} needs scipy (pip install scipy), or use solve='dense'"
            raise ImportError(msg)
        linalg = importlib.import_module("scipy.sparse.linalg")
        operator = linalg.LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        scale = float(np.linalg.norm(b)) or 1.0
        u, info = getattr(linalg, method)(
            operator, b, rtol=1e-10, maxiter=max(10 * n, 100), **({} if method == "minres" else {"atol": 1e-12 * scale})
        )
        if info != 0 or not np.all(np.isfinite(u)):
            why = f"it did not converge in {info} iterations" if info > 0 else "it broke down (dF/dx singular?)"
            raise self._failed(method, why)
        # A Krylov solver may stop "converged" on a singular system (minres answers 0 there):
        # the residual says whether u solves it.
        residual = float(np.linalg.norm(matvec(u) - b))
        if residual > 1e-6 * scale:
            raise self._failed(method, f"its answer leaves a residual of {residual:.3g} (dF/dx singular?)")
        return np.asarray(u)

    def _failed(self, method: str, why: str) -> ImplicitDiffError:
        decorator = "custom_fixed_point" if self.fixed_point else "custom_root"
        msg = (
            f"{self.name} ({decorator}): the linear system of its implicit gradient, solved by {method!r}, failed: "
            f"{why}. The answer may not be a regular root (dF/dx invertible there), or the solver stopped short of it"
        )
        return ImplicitDiffError(msg)


def _tree_sub(a: Any, b: Any, name: str) -> Any:
    """``a - b`` leaf by leaf, for two values of one structure (traced or not): a fixed
    point's condition ``T(x) - x``."""
    a_flat, unravel = ravel(a)
    b_flat, _ = ravel(b)
    if tuple(a_flat.shape) != tuple(b_flat.shape):
        msg = (
            f"{name}: fixed_point_fun has {a_flat.shape[0]} entries where the answer has {b_flat.shape[0]}: a fixed "
            f"point maps the answer to a value of its own structure and size"
        )
        raise ShapeError(msg)
    return unravel(a_flat - b_flat)


def _plain(value: Any) -> Any:
    """``value`` with every float leaf's plain value under all its levels."""
    return map_floats(lower, value)


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` under the solver's name, which the op recorded for it takes (and errors show)."""

    def answer(*args: Any) -> Any:
        return fn(*args)

    answer.__name__ = answer.__qualname__ = name
    return answer


def _constant(init: Any) -> Any:
    """The starting point, with no gradient: its float leaves' values under every arena."""
    return map_floats(unwrap, init)


def _signature(fn: Callable[..., Any]) -> Any:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None
