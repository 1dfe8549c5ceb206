"""Fitting: ``scipy.optimize.minimize`` over structured parameters, and the fit's covariance.

:func:`minimize` takes ``scipy.optimize.minimize``'s methods, options and semantics, and the
parameters in their own structure (a record, a dict, nested, with static leaves): scipy
sees one float64 vector of the float leaves, the gradient comes from
``value_and_grad`` (replayed where the function allows), Newton-type methods get Hessian-
vector products or the Hessian, and the answer comes back in the parameters' structure,
each leaf in its own dtype. Where the fit's extra arguments carry a gradient, its answer is
differentiable with respect to them by the implicit function theorem (the gradient of
``fun`` is zero at the answer): a hyperparameter's gradient through the fit.

:func:`covariance` is the inverse Hessian of ``fun`` at a fitted point: for a negative
log-likelihood, the estimates' asymptotic covariance, indexed by the parameters' key paths.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.structure import differentiable_leaves, leaves, pair_leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import (
    ArgumentError,
    DtypeError,
    LinAlgError,
    ReplayWarning,
    ShapeError,
    StructureError,
    user_location,
)
from nodegrad.implicit import implicit_solver
from nodegrad.transforms import grad, hessian, hvp, jacobian, replay, value_and_grad
from nodegrad.tree import map_floats, ravel

__all__ = ["Covariance", "covariance", "minimize"]

#: scipy's methods that use the gradient, the Hessian-vector product, and the Hessian.
_USE_JAC = {
    "cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc", "slsqp", "dogleg", "trust-ncg", "trust-krylov", "trust-exact",
    "trust-constr",
}  # fmt: skip
_USE_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_USE_HESS = {"dogleg", "trust-exact"}


def minimize(
    fun: Callable[..., Any],
    params: Any,
    *args: Any,
    method: str = "L-BFGS-B",
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    options: dict[str, Any] | None = None,
    callback: Callable[..., Any] | None = None,
) -> Any:
    """Minimise ``fun(params, *args)`` over structured ``params`` with
    ``scipy.optimize.minimize``.

    Parameters
    ----------
    fun : callable
        ``fun(params, *args)``, a scalar.
    params : structure
        The starting point: an array, or a record, dataclass, dict, named tuple, list
        (nested) of them; int and other static leaves are carried over, never optimised.
    *args : any
        Further arguments of ``fun``. Where they carry a gradient (``fun`` fitted inside
        ``grad``, ``jvp``, ``vmap``), the answer is differentiable with respect to them.
    method : str, default "L-BFGS-B"
        scipy's method name. Gradient methods get ``value_and_grad``; ``Newton-CG``,
        ``trust-ncg``, ``trust-krylov`` and ``trust-constr`` get Hessian-vector products;
        ``trust-exact`` and ``dogleg`` the Hessian.
    bounds : structure, optional
        ``params``' structure with a ``(low, high)`` pair (numbers, arrays of the leaf's
        shape, or ``None`` for no bound) or ``None`` at each float leaf; or a
        ``scipy.optimize.Bounds`` on the flat vector.
    constraints : dict or sequence of dicts, optional
        scipy's constraint dicts, ``fun`` (and ``jac``, computed when absent) taking the
        parameters in their structure, then the dict's ``args``. scipy's
        ``LinearConstraint`` and ``NonlinearConstraint`` objects act on the flat vector.
    tol : float, optional
        scipy's ``tol``.
    options : dict, optional
        scipy's method options.
    callback : callable, optional
        ``callback(params)`` after each iteration, the parameters in their structure.

    Returns
    -------
    scipy.optimize.OptimizeResult
        scipy's result, with ``x`` in the parameters' structure (each leaf in its own dtype)
        and ``jac`` likewise (where the method reports one). Under ``vmap`` each other field
        is a list, one entry per example.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> def loss(p, target):
    ...     return np.sum((p["w"] - target) ** 2) + (p["b"] - 1.0) ** 2
    >>> fit = ng.optim.minimize(loss, {"w": np.zeros(2, np.float32), "b": 0.0}, np.array([3.0, -1.0]))
    >>> fit.x["w"].round(4), round(fit.x["b"], 6), fit.success
    (array([ 3., -1.], dtype=float32), 1.0, True)

    The answer is differentiable in the fit's arguments (a ridge penalty's gradient):

    >>> def ridge(w, lam):
    ...     return np.sum((np.array([1.0, 2.0]) - w) ** 2) + lam * np.sum(w**2)
    >>> float(ng.grad(lambda lam: np.sum(ng.optim.minimize(ridge, np.zeros(2), lam).x))(1.0))
    -0.75
    """
    if not callable(fun):
        msg = f"optim.minimize needs a function fun(params, *args), got {type(fun).__name__} [at {user_location()}]"
        raise ArgumentError(msg)
    problem = _Problem(fun, method, bounds, constraints, tol, options, callback)
    if not any(type(leaf) in INTERPRETED for leaf in leaves(args)):
        return problem.fit(params, args)
    results: list[Any] = []

    def solver(init: Any, *values: Any) -> Any:
        results.append(problem.fit(init, values))
        return results[-1].x

    solver.__qualname__ = f"optim.minimize({getattr(fun, '__qualname__', 'fun')})"
    x = implicit_solver(solver, grad(fun), symmetric=True)(params, *args)
    result = results[0] if len(results) == 1 else _merged(results)
    result.x = x
    return result


class _Problem:
    """One call's method, bounds, constraints and options, and the fit on plain values."""

    def __init__(
        self, fun: Callable[..., Any], method: str, bounds: Any, constraints: Any, tol: Any, options: Any, callback: Any
    ) -> None:
        if not isinstance(method, str):
            msg = f"optim.minimize: method must be a scipy method name, got {type(method).__name__}"
            raise ArgumentError(msg)
        self.fun = fun
        self.method = method
        self.bounds = bounds
        self.constraints = constraints
        self.tol = tol
        self.options = options
        self.callback = callback
        self.optimize = importlib.import_module("scipy.optimize")
        self.where = user_location()  # (the caller's line, which scipy's frames would hide)

    def fit(self, params: Any, args: tuple[Any, ...]) -> Any:
        params = map_floats(unwrap, params)
        flat, unravel = ravel(params)
        if np.iscomplexobj(flat):
            msg = (
                "optim.minimize: scipy minimises over real parameters; split complex ones into real and imaginary parts"
            )
            raise DtypeError(msg)
        x0 = np.asarray(flat, dtype=np.float64)

        def flat_fun(v: Any, *a: Any) -> Any:
            return self.fun(unravel(v), *a)

        kind = self.method.lower()
        keywords: dict[str, Any] = {"method": self.method, "tol": self.tol, "options": self.options}
        if kind in _USE_JAC:
            keywords["jac"] = True
            objective = _with_gradient(self.fun, unravel, args, self.where)
        else:
            objective = _value_only(flat_fun, args, self.where)
        if kind in _USE_HESSP:
            keywords["hessp"] = lambda v, p: np.asarray(hvp(lambda u: flat_fun(u, *args), v, p), dtype=np.float64)
        elif kind in _USE_HESS:
            keywords["hess"] = lambda v: np.asarray(hessian(flat_fun)(v, *args), dtype=np.float64)
        if self.bounds is not None:
            keywords["bounds"] = _flat_bounds(self.bounds, params, self.optimize)
        if self.constraints:
            keywords["constraints"] = _flat_constraints(self.constraints, unravel)
        if self.callback is not None:
            user = self.callback
            keywords["callback"] = lambda xk, *rest: user(unravel(np.asarray(xk)))
        with warnings.catch_warnings():  # (a function replay cannot record runs eagerly: scipy asked for no replay)
            warnings.simplefilter("ignore", ReplayWarning)
            result = self.optimize.minimize(objective, x0, **keywords)
        result.x = unravel(np.asarray(result.x))
        jac = result.get("jac")
        if jac is not None and np.shape(jac) == x0.shape:
            result.jac = unravel(np.asarray(jac, dtype=np.float64))
        return result


def _with_gradient(
    fun: Callable[..., Any], unravel: Callable[[Any], Any], args: tuple[Any, ...], where: str
) -> Callable[[np.ndarray], Any]:
    """scipy's ``fun`` with ``jac=True``: the value and the gradient at a vector, taken with
    respect to the parameters in their structure (no slicing of the vector is recorded)
    and laid end to end as the vector is, replayed where the function allows (eagerly where
    it does not)."""
    fast = replay(value_and_grad(fun))

    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        # A Python float is a constant of a replay's recording (its value is in the
        # signature): as a numpy float (a float too) it is an argument, and one recording
        # serves every evaluation.
        params = map_floats(_numpy_float, unravel(v))
        try:
            value, g = fast(params, *args)
        except ShapeError:
            _scalar(fun(params, *args), where)  # a fun that is not a scalar is refused as minimize's
            raise
        return _scalar(value, where), np.asarray(ravel(g)[0], dtype=np.float64)

    return objective


def _numpy_float(leaf: Any) -> Any:
    return np.float64(leaf) if type(leaf) is float else leaf


def _value_only(flat_fun: Callable[..., Any], args: tuple[Any, ...], where: str) -> Callable[[np.ndarray], float]:
    return lambda v: _scalar(flat_fun(v, *args), where)


def _scalar(value: Any, where: str) -> float:
    if np.ndim(value) != 0:
        msg = f"optim.minimize: fun must return a scalar, got shape {np.shape(value)} [called at {where}]"
        raise ShapeError(msg)
    return float(value)


def _flat_bounds(bounds: Any, params: Any, optimize: Any) -> Any:
    """``bounds`` (the parameters' structure, a ``(low, high)`` pair or ``None`` per float
    leaf) as scipy's list of pairs, one per entry of the flat vector."""
    if isinstance(bounds, optimize.Bounds):
        return bounds
    differentiable = {path for path, _ in differentiable_leaves(params)}
    flat: list[tuple[Any, Any]] = []
    for path, leaf, pair in pair_leaves(params, bounds):
        if path not in differentiable:
            continue
        size = int(np.size(leaf))
        if pair is None:
            flat.extend([(None, None)] * size)
            continue
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            msg = f"optim.minimize: bounds{path} must be a (low, high) pair or None, got {pair!r}"
            raise StructureError(msg)
        low, high = (_entries(b, np.shape(leaf), f"bounds{path}") for b in pair)
        flat.extend(zip(low, high, strict=True))
    return flat


def _entries(bound: Any, shape: tuple[int, ...], where: str) -> list[Any]:
    """One side of a leaf's bounds, one entry per entry of the leaf (``None``: unbounded)."""
    size = int(np.prod(shape, dtype=np.int64))
    if bound is None:
        return [None] * size
    try:
        values = np.broadcast_to(np.asarray(bound, dtype=np.float64), shape).ravel()
    except ValueError:
        msg = f"optim.minimize: {where} has shape {np.shape(bound)}, the parameter {shape}"
        raise StructureError(msg) from None
    return [None if np.isinf(v) else float(v) for v in values]


def _flat_constraints(constraints: Any, unravel: Callable[[Any], Any]) -> list[Any]:
    """scipy's constraints with their functions (given the parameters in their structure)
    taking the flat vector; a missing ``jac`` computed."""
    found = [constraints] if isinstance(constraints, dict) else list(constraints)
    flat: list[Any] = []
    for k, c in enumerate(found):
        if not isinstance(c, dict):
            flat.append(c)  # scipy's LinearConstraint / NonlinearConstraint: on the flat vector
            continue
        if "fun" not in c or "type" not in c:
            msg = f"optim.minimize: constraints[{k}] needs 'type' and 'fun', got keys {sorted(c)}"
            raise ArgumentError(msg)
        extra = tuple(c.get("args", ()))

        def value(v: Any, *a: Any, _c: Any = c) -> Any:
            out, _ = ravel(_c["fun"](unravel(v), *a))
            return out

        made = {"type": c["type"], "fun": lambda v, *a, _f=value: np.asarray(_f(v, *a), dtype=np.float64)}
        if "jac" in c:
            made["jac"] = lambda v, *a, _c=c: np.asarray(_c["jac"](unravel(v), *a), dtype=np.float64)
        else:
            made["jac"] = lambda v, *a, _f=value: np.atleast_2d(np.asarray(jacobian(_f)(v, *a), dtype=np.float64))
        made["args"] = extra
        flat.append(made)
    return flat


def _merged(results: Sequence[Any]) -> Any:
    """One result of a fit made once per example (under ``vmap``): each field a list."""
    first = results[0]
    merged = type(first)()
    for key in first:
        merged[key] = [r.get(key) for r in results]
    return merged


class Covariance:
    """The inverse Hessian of a function at a point, by the point's key paths.

    ``matrix`` is the whole (the float leaves laid end to end, as :func:`nodegrad.tree.ravel`
    lays them); ``cov[path_a, path_b]`` is the block of two leaves, shaped ``shape_a +
    shape_b``; :meth:`standard_errors` the square roots of the diagonal, in the point's
    structure.
    """

    def __init__(self, matrix: np.ndarray, point: Any, unravel: Callable[[Any], Any]) -> None:
        self.matrix = matrix
        self._unravel = unravel
        self._blocks: dict[str, tuple[slice, tuple[int, ...]]] = {}
        start = 0
        for path, leaf in differentiable_leaves(point):
            shape = np.shape(leaf)
            size = int(np.prod(shape, dtype=np.int64))
            self._blocks[path] = (slice(start, start + size), shape)
            start += size

    @property
    def paths(self) -> list[str]:
        """The key paths of the float leaves, in the matrix's order."""
        return list(self._blocks)

    def __getitem__(self, paths: tuple[Hashable, Hashable]) -> np.ndarray:
        if not (isinstance(paths, tuple) and len(paths) == 2):
            msg = f"Covariance: index it by two key paths, cov[path_a, path_b]; the paths are {self.paths}"
            raise KeyError(msg)
        (rows, shape_a), (cols, shape_b) = (self._block(p) for p in paths)
        return self.matrix[rows, cols].reshape(shape_a + shape_b)

    def _block(self, path: Hashable) -> tuple[slice, tuple[int, ...]]:
        if path not in self._blocks:
            msg = f"Covariance: no float leaf at {path!r}; the paths are {self.paths}"
            raise KeyError(msg)
        return self._blocks[path]

    def standard_errors(self) -> Any:
        """The square roots of the diagonal, in the point's structure (NaN where the
        diagonal is negative: the point is not a minimum there)."""
        diagonal = np.diagonal(self.matrix)
        with np.errstate(invalid="ignore"):
            return self._unravel(np.where(diagonal >= 0, np.sqrt(np.abs(diagonal)), np.nan))

    def __repr__(self) -> str:
        return f"Covariance({len(self.matrix)} entries, paths {self.paths})"


def covariance(fun: Callable[..., Any], params: Any, *args: Any) -> Covariance:
    """The inverse Hessian of ``fun(params, *args)`` with respect to ``params``.

    At the minimum of a negative log-likelihood this is the estimates' asymptotic covariance
    (their standard errors are the square roots of its diagonal). The Hessian is computed
    exactly (reverse over reverse), over the float leaves of ``params``.

    Parameters
    ----------
    fun : callable
        ``fun(params, *args)``, a scalar (a negative log-likelihood).
    params : structure
        The point (a fitted one), any structure nodegrad differentiates.
    *args : any
        Further arguments of ``fun``.

    Returns
    -------
    Covariance
        ``cov.matrix``, ``cov[path_a, path_b]`` and ``cov.standard_errors()``.

    Raises
    ------
    nodegrad.errors.LinAlgError
        Where the Hessian is singular.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> times = np.array([1.0, 2.0, 3.0, 6.0])
    >>> def nll(p):  # exponential lifetimes, rate exp(p["log_rate"])
    ...     return -np.sum(p["log_rate"] - np.exp(p["log_rate"]) * times)
    >>> fit = ng.optim.minimize(nll, {"log_rate": 0.0})
    >>> cov = ng.optim.covariance(nll, fit.x)
    >>> round(float(cov.standard_errors()["log_rate"]), 6)  # 1 / sqrt(n) for the log-rate
    0.5
    """
    point = map_floats(unwrap, params)
    flat, unravel = ravel(point)
    matrix = np.asarray(hessian(lambda v: fun(unravel(v), *args))(np.asarray(flat, dtype=np.float64)))
    matrix = np.atleast_2d(matrix).reshape(flat.size, flat.size)
    try:
        inverse = np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        msg = f"optim.covariance: the Hessian of {getattr(fun, '__qualname__', 'fun')} is singular at the point"
        raise LinAlgError(msg) from None
    return Covariance(inverse, point, unravel)
