"""``scipy.integrate``'s ODE solvers for traced values: ``odeint`` and ``solve_ivp``.

The forward solve is scipy's own, on plain values, so the values are scipy's. Gradients
come from the adjoint method: for ``dy/dt = f(y, t, *args)`` with outputs ``y_i = y(t_i)``
and their cotangents ``g_i``, the adjoint ``a`` (the cotangent of the state) and the
accumulated cotangent ``b`` of the parameters obey

    da/dt = -a . df/dy,        db/dt = -a . df/dargs,

integrated backwards from ``t[-1]`` to ``t[0]`` together with ``y`` itself (restarted from
the stored ``y_i`` at each output time, where ``g_i`` is added to ``a``). ``a . df/dy`` and
``a . df/dargs`` are one :func:`nodegrad.vjp` of ``f`` on plain values per evaluation. At
the end ``a`` is the cotangent of ``y0`` and ``b`` that of ``args``; moving an output time
``t_i`` (``i >= 1``) moves ``y_i`` along ``f``, so its cotangent is ``g_i . f(y_i, t_i)``,
and moving ``t_0`` shifts the whole trajectory: ``-a(t_0) . f(y_0, t_0)``, with ``a(t_0)``
the adjoint there before ``g_0`` is added.

Each backward segment is itself solved by the same differentiable solution map (the
augmented system, with the same solver and tolerances), and everything else in the
backward pass is made of nodegrad ops, so the gradient is differentiable again: second
derivatives (reverse over reverse, ``hessian``) and forward mode (``jvp``) work, to any
order, at the cost of one more, larger, adjoint system per order. The gradient's accuracy
is that of the solver: tolerances ``rtol``/``atol`` apply to the adjoint solves too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.integrate

from nodegrad.custom import custom_vjp
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import DIFFERENTIATING, INTERPRETED
from nodegrad.engine.structure import leaves
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, NoGradientError, ShapeError, user_location
from nodegrad.ops import cat, reshape, stack
from nodegrad.ops import sum as total
from nodegrad.ops.batching import innermost
from nodegrad.ops.examples import per_example_call
from nodegrad.transforms import vjp
from nodegrad.tree import ravel

__all__ = ["odeint", "solve_ivp"]

Dynamics = Callable[..., Any]
#: ``forward(y0, ts, args) -> (ys, info)``: the solution at every time of ``ts`` (plain values).
Forward = Callable[[np.ndarray, np.ndarray, tuple[Any, ...]], tuple[np.ndarray, Any]]
#: ``segment(fun, y0, t_from, t_to, args) -> y``: one solve of ``dy/dt = fun(y, t, *args)``.
Segment = Callable[[Dynamics, np.ndarray, float, float, tuple[Any, ...]], np.ndarray]


def _has_traced(value: Any) -> bool:
    """Whether ``value`` (an array, a float or a structure of them) holds a traced leaf."""
    return any(type(leaf) in DIFFERENTIATING for leaf in leaves(value))


def _vector(value: Any) -> Any:
    """``f``'s answer as a 1-D array: a list of traced (or batched, ...) scalars is stacked."""
    if isinstance(value, list | tuple):
        value = stack(list(value)) if any(type(v) in INTERPRETED for v in value) else np.asarray(value)
    return reshape(value, (-1,)) if type(value) in INTERPRETED else np.ravel(value)


# -- the differentiable solution map ------------------------------------------------------------------


def _solution_map(name: str, dynamics: Dynamics, forward: Forward, segment: Segment, info: list[Any]) -> custom_vjp:
    """``(y0, ts, args) -> ys``, ``ys[i]`` the solution at ``ts[i]`` of ``dy/dt =
    dynamics(y, t, *args)`` from ``y(ts[0]) = y0``, computed by ``forward`` (which leaves
    what else it reports in ``info``), with the adjoint method as its gradient."""

    def solution(y0: Any, ts: Any, args: tuple[Any, ...]) -> np.ndarray:
        if innermost((y0, ts, *leaves(args))) is not None:
            # Batched by vmap (a Jacobian's rows, say): scipy's solver takes one problem.
            return per_example_call(solution, (y0, ts, args), {})
        ys, report = forward(y0, ts, args)
        info[:] = [report]
        return ys

    solution.__qualname__ = solution.__name__ = name  # errors about the node name the function
    flow = custom_vjp(solution)

    def fwd(y0: Any, ts: Any, args: tuple[Any, ...]) -> tuple[Any, Any]:
        ys = flow(y0, ts, args)  # a node of its own when the sweep records itself
        return ys, (ys, ts, args)

    def bwd(residuals: tuple[Any, Any, tuple[Any, ...]], g: Any) -> tuple[Any, Any, Any]:
        return _adjoint(name, dynamics, segment, *residuals, g)

    flow.defvjp(fwd, bwd)
    return flow


def _augmented(dynamics: Dynamics, n: int) -> Dynamics:
    """The dynamics of ``[y, a, b]`` backwards in time: ``[f, -a . df/dy, -a . df/dargs]``."""

    def augmented(state: Any, t: Any, *args: Any) -> Any:
        y, a = state[:n], state[n : 2 * n]
        f, back = vjp(lambda y, *args: _vector(dynamics(y, t, *args)), y, *args)
        a_y, *a_args = back(a)
        a_args_flat, _ = ravel(tuple(a_args))
        return cat([f, -a_y, -a_args_flat], 0)

    return augmented


def _adjoint(
    name: str, dynamics: Dynamics, segment: Segment, ys: Any, ts: Any, args: tuple[Any, ...], g: Any
) -> tuple[Any, Any, Any]:
    """The cotangents of ``(y0, ts, args)`` for the cotangent ``g`` of ``ys`` (see the module)."""
    n = np.shape(unwrap(ys))[1]
    times = unwrap(ts)
    flat_args, unravel = ravel(args)
    args_bar = np.zeros_like(unwrap(flat_args))
    augmented = _augmented(dynamics, n)
    flow = _solution_map(name, augmented, _segment_forward(segment, augmented), segment, [])
    a = g[-1]
    t_bars: list[Any] = [0.0] * len(times)
    for i in range(len(times) - 1, 0, -1):
        t_bars[i] = total(g[i] * _vector(dynamics(ys[i], ts[i], *args)))
        if times[i] != times[i - 1]:  # a repeated time is a segment of length 0
            state = flow(cat([ys[i], a, args_bar], 0), stack([ts[i], ts[i - 1]]), args)[-1]
            a, args_bar = state[n : 2 * n], state[2 * n :]
        if i == 1:  # a(t_0), before g_0 is added: moving t_0 shifts the whole trajectory
            t_bars[0] = -total(a * _vector(dynamics(ys[0], ts[0], *args)))
        a = a + g[i - 1]
    return a, stack(t_bars), unravel(args_bar)


def _segment_forward(segment: Segment, fun: Dynamics) -> Forward:
    """The forward of a backward segment, from ``ts[0]`` to ``ts[1]``: both states."""

    def forward(y0: np.ndarray, ts: np.ndarray, args: tuple[Any, ...]) -> tuple[np.ndarray, Any]:
        return np.stack([y0, segment(fun, y0, float(ts[0]), float(ts[1]), args)]), None

    return forward


def _plain_only(name: str, role: str, fun: Dynamics) -> Dynamics:
    """``fun``, refusing to return a traced value for the plain values the solver gives it:
    then it closes over a value being differentiated, whose gradient the adjoint cannot
    reach (it sees ``args`` only)."""

    def plain(*values: Any) -> Any:
        out = fun(*values)
        if type(out) in DIFFERENTIATING or (isinstance(out, list | tuple) and _has_traced(out)):
            msg = (
                f"{name}: {role} closes over a traced value (one being differentiated): pass it to {role} "
                f"through args=(...), so that its gradient can be computed [at {user_location()}]"
            )
            raise ArgumentError(msg)
        return out

    return plain


def _segment_failed(name: str, t_from: float, t_to: float, message: str) -> ArgumentError:
    msg = (
        f"{name}: the adjoint integration from t={t_from:g} to t={t_to:g} failed ({message}): loosen rtol and atol, "
        f"or allow more steps [at {user_location()}]"
    )
    return ArgumentError(msg)


# -- odeint -------------------------------------------------------------------------------------------

#: The options of ``scipy.integrate.odeint`` that the backward solves use too (the others
#: describe ``func`` alone: its Jacobian, its band, its critical times, a first step).
_ODEINT_ADJOINT_OPTIONS = ("rtol", "atol", "hmax", "hmin", "mxstep", "mxhnil", "mxordn", "mxords")


def _odeint_segment(options: dict[str, Any]) -> Segment:
    def segment(fun: Dynamics, y0: np.ndarray, t_from: float, t_to: float, args: tuple[Any, ...]) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.integrate.ODEintWarning)  # raised below instead
            ys, info = scipy.integrate.odeint(fun, y0, [t_from, t_to], args=args, full_output=True, **options)
        if info["message"] != "Integration successful.":
            raise _segment_failed("odeint", t_from, t_to, info["message"])
        return ys[-1]

    return segment


def _times(name: str, t: Any) -> Any:
    if isinstance(t, list | tuple) and any(type(v) in DIFFERENTIATING for v in t):
        t = stack(list(t))
    t = t if type(t) in DIFFERENTIATING else np.asarray(t, dtype=np.float64)
    if np.ndim(unwrap(t)) != 1 or len(unwrap(t)) == 0:
        shape = np.shape(unwrap(t))
        msg = f"{name}: the times must be a non-empty 1-D array, got shape {shape} [called at {user_location()}]"
        raise ShapeError(msg)
    return t


def _initial_state(name: str, y0: Any, max_ndim: int) -> Any:
    value = np.asarray(unwrap(y0))
    if value.ndim > max_ndim:
        msg = f"{name}: y0 must be one-dimensional, got shape {value.shape} [called at {user_location()}]"
        raise ShapeError(msg)
    if value.dtype.kind == "c":
        msg = f"{name}: gradients of complex states are not supported, got {value.dtype} [called at {user_location()}]"
        raise DtypeError(msg)
    return reshape(y0, (-1,)) if type(y0) in INTERPRETED else np.ravel(np.asarray(y0, dtype=np.float64))


@guarded
def odeint(
    func: Callable[..., Any],
    y0: Any,
    t: Any,
    args: tuple[Any, ...] = (),
    Dfun: Callable[..., Any] | None = None,  # noqa: N803  (scipy's name)
    col_deriv: int = 0,
    full_output: int = 0,
    ml: int | None = None,
    mu: int | None = None,
    rtol: Any = None,
    atol: Any = None,
    tcrit: Any = None,
    h0: float = 0.0,
    hmax: float = 0.0,
    hmin: float = 0.0,
    ixpr: int = 0,
    mxstep: int = 0,
    mxhnil: int = 0,
    mxordn: int = 12,
    mxords: int = 5,
    printmessg: int = 0,
    tfirst: bool = False,
) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``, as
    ``scipy.integrate.odeint`` (LSODA), with gradients in ``y0``, ``t`` and ``args``.

    The forward solve is scipy's call itself, with every option passed on, so the values
    are scipy's. The gradient is the adjoint method (see :mod:`nodegrad.scipy.integrate`):
    the augmented system is integrated backwards by ``odeint`` with the same ``rtol``,
    ``atol`` and step limits, the vector-Jacobian products of ``func`` computed by
    :func:`nodegrad.vjp`, so ``func`` must be written with numpy calls on its arguments (or
    nodegrad ops). ``args`` may hold arrays, floats and structures of them (dicts, records,
    lists); their other entries are passed as they are. Differentiable to any order (the
    backward pass is made of the same solves); a failed adjoint solve raises
    :class:`~nodegrad.errors.ArgumentError` naming ``odeint``.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)`` (``func(t, y, *args)`` with ``tfirst``), returning ``dy/dt``.
    y0 : array_like, shape (N,) or ()
        The initial state (real).
    t : array_like, shape (T,)
        The times of the answer, monotonic; the first is the initial time.
    args : tuple, default ()
        Further arguments of ``func``.
    Dfun, col_deriv, full_output, ml, mu, rtol, atol, tcrit, h0, hmax, hmin : optional
        As for ``scipy.integrate.odeint``.
    ixpr, mxstep, mxhnil, mxordn, mxords, printmessg, tfirst : optional
        As for ``scipy.integrate.odeint``. ``Dfun`` (``func``'s Jacobian), ``ml``, ``mu``,
        ``tcrit`` and ``h0`` help the forward solve only.

    Returns
    -------
    y : ndarray or Traced, shape (T, N)
        The state at each time of ``t``.
    infodict : dict
        With ``full_output``: scipy's report of the forward solve.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.scipy.integrate import odeint
    >>> decay = lambda y, t, k: -k * y
    >>> t = np.array([0.0, 1.0])
    >>> ys = odeint(decay, np.array([1.0]), t, args=(0.5,), rtol=1e-10, atol=1e-10)
    >>> ys[-1].round(8)
    array([0.60653066])
    >>> grad = ng.grad(lambda k: odeint(decay, np.array([1.0]), t, args=(k,), rtol=1e-10, atol=1e-10)[-1, 0])
    >>> round(grad(0.5), 6)  # d/dk exp(-k) = -exp(-k)
    -0.606531
    """
    if not isinstance(args, tuple):
        msg = f"odeint: args must be a tuple, got {type(args).__name__} [called at {user_location()}]"
        raise ArgumentError(msg)
    options = {
        "rtol": rtol,
        "atol": atol,
        "h0": h0,
        "hmax": hmax,
        "hmin": hmin,
        "ixpr": ixpr,
        "mxstep": mxstep,
        "mxhnil": mxhnil,
        "mxordn": mxordn,
        "mxords": mxords,
        "printmessg": printmessg,
    }
    forward_only = {"Dfun": Dfun, "col_deriv": col_deriv, "ml": ml, "mu": mu, "tcrit": tcrit, "tfirst": tfirst}
    if not (_has_traced(y0) or _has_traced(t) or _has_traced(args)):
        plain = _plain_only("odeint", "func", func)
        return scipy.integrate.odeint(plain, y0, t, args=args, full_output=full_output, **options, **forward_only)

    def forward(y0: np.ndarray, ts: np.ndarray, args: tuple[Any, ...]) -> tuple[np.ndarray, Any]:
        plain = _plain_only("odeint", "func", func)
        ys, info = scipy.integrate.odeint(plain, y0, ts, args=args, full_output=True, **options, **forward_only)
        return ys, info

    dynamics = (lambda y, t, *args: func(t, y, *args)) if tfirst else func
    adjoint_options = {key: options[key] for key in _ODEINT_ADJOINT_OPTIONS}
    info: list[Any] = []
    flow = _solution_map("odeint", dynamics, forward, _odeint_segment(adjoint_options), info)
    ys = flow(_initial_state("odeint", y0, 1), _times("odeint", t), args)
    return (ys, info[0]) if full_output else ys


# -- solve_ivp ----------------------------------------------------------------------------------------

#: The options of ``scipy.integrate.solve_ivp`` that the backward solves use too.
_IVP_ADJOINT_OPTIONS = ("rtol", "atol", "max_step", "min_step")


def _ivp_segment(method: Any, options: dict[str, Any]) -> Segment:
    def segment(fun: Dynamics, y0: np.ndarray, t_from: float, t_to: float, args: tuple[Any, ...]) -> np.ndarray:
        solution = scipy.integrate.solve_ivp(
            lambda t, y, *args: fun(y, t, *args), (t_from, t_to), y0, method=method, args=args or None, **options
        )
        if not solution.success:
            raise _segment_failed("solve_ivp", t_from, t_to, solution.message)
        return solution.y[:, -1]

    return segment


def _refuse_for_gradients(what: str, why: str) -> None:
    msg = f"solve_ivp: {what} is not differentiable {why} [called at {user_location()}]"
    raise NoGradientError(msg)


@guarded
def solve_ivp(
    fun: Callable[..., Any],
    t_span: Any,
    y0: Any,
    method: Any = "RK45",
    t_eval: Any = None,
    dense_output: bool = False,
    events: Any = None,
    vectorized: bool = False,
    args: tuple[Any, ...] | None = None,
    **options: Any,
) -> Any:
    """Solve the initial value problem ``dy/dt = fun(t, y, *args)``, ``y(t_span[0]) = y0``,
    as ``scipy.integrate.solve_ivp``, with gradients in ``y0``, ``t_eval``, ``args`` and
    the initial time ``t_span[0]``.

    The forward solve is scipy's call itself, so the values (and the report: ``status``,
    ``message``, ``nfev``, ...) are scipy's; the result's ``y`` (shape ``(N, len(t_eval))``)
    and ``t`` are traced when the inputs are. The gradient is the adjoint method (see
    :mod:`nodegrad.scipy.integrate`), each backward segment solved by ``solve_ivp`` with
    the same ``method``, ``rtol``, ``atol`` and step limits; ``fun`` must be written with
    numpy calls on its arguments (or nodegrad ops). Differentiable to any order.

    With traced inputs, the answer must be asked at ``t_eval`` (the solver's own steps
    depend on the inputs discontinuously); ``events`` and ``dense_output`` then raise
    :class:`~nodegrad.errors.NoGradientError` naming ``solve_ivp``, and so does a complex
    ``y0``. A failed solve raises :class:`~nodegrad.errors.ArgumentError`. Without traced
    inputs it is scipy's ``solve_ivp``, every option included.

    Parameters
    ----------
    fun : callable
        ``fun(t, y, *args)``, returning ``dy/dt``.
    t_span : (float, float)
        The initial and the final time.
    y0 : array_like, shape (N,)
    method : str or OdeSolver, default "RK45"
    t_eval : array_like, shape (T,)
        The times of the answer, inside ``t_span``, in its direction.
    dense_output, events, vectorized, args, **options
        As for ``scipy.integrate.solve_ivp`` (``rtol``, ``atol``, ``max_step``,
        ``first_step``, ``jac``, ...).

    Returns
    -------
    OdeResult
        scipy's result, with ``t`` and ``y`` traced when the inputs are.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.scipy.integrate import solve_ivp
    >>> def final(y0):
    ...     result = solve_ivp(lambda t, y: -y, (0.0, 1.0), y0, t_eval=[1.0], rtol=1e-10, atol=1e-10)
    ...     return result.y[0, -1]
    >>> round(float(final(np.array([2.0]))), 8)  # 2 exp(-1)
    0.73575888
    >>> ng.grad(final)(np.array([2.0])).round(8)
    array([0.36787944])
    """
    traced = _has_traced(y0) or _has_traced(t_span) or _has_traced(t_eval) or _has_traced(args)
    if not traced:
        plain = _plain_only("solve_ivp", "fun", fun)
        return scipy.integrate.solve_ivp(
            plain, t_span, y0, method, t_eval, dense_output, events, vectorized, args, **options
        )
    if t_eval is None:
        _refuse_for_gradients("the solver's own steps", "(they move discontinuously with the inputs): pass t_eval")
    if events is not None:
        _refuse_for_gradients("events", "(their times and states have no gradient rule)")
    if dense_output:
        _refuse_for_gradients("dense_output", "(the interpolant has no gradient rule): pass t_eval")
    if args is not None and not isinstance(args, tuple):
        msg = f"solve_ivp: args must be a tuple, got {type(args).__name__} [called at {user_location()}]"
        raise ArgumentError(msg)
    if len(t_span) != 2:
        msg = f"solve_ivp: t_span must be (t0, t1), got {len(t_span)} entries [called at {user_location()}]"
        raise ShapeError(msg)
    args = args or ()
    t0, t1 = t_span
    t_eval = _times("solve_ivp", t_eval)
    ts = cat([reshape(t0, (1,)), t_eval], 0) if _has_traced(t0) or _has_traced(t_eval) else None
    if ts is None:
        ts = np.concatenate([[float(t0)], t_eval])
    t_end = float(unwrap(t1))

    def forward(y0: np.ndarray, ts: np.ndarray, args: tuple[Any, ...]) -> tuple[np.ndarray, Any]:
        plain = _plain_only("solve_ivp", "fun", fun)
        result = scipy.integrate.solve_ivp(
            plain, (ts[0], t_end), y0, method, ts[1:], False, None, vectorized, args or None, **options
        )
        if not result.success:
            msg = f"solve_ivp: the solve failed ({result.message}) [at {user_location()}]"
            raise ArgumentError(msg)
        return np.concatenate([y0[None], result.y.T]), result

    adjoint_options = {key: options[key] for key in _IVP_ADJOINT_OPTIONS if key in options}
    info: list[Any] = []
    flow = _solution_map(
        "solve_ivp", lambda y, t, *args: fun(t, y, *args), forward, _ivp_segment(method, adjoint_options), info
    )
    ys = flow(_initial_state("solve_ivp", y0, 1), ts, args)
    result = info[0]
    result.y = np.swapaxes(ys[1:], 0, 1)
    result.t = t_eval
    return result
