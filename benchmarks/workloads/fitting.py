"""W15: one L-BFGS fit of a logistic regression, the whole fit timed.

The problem (:func:`fit_inputs`, a fixed seed): 10,000 rows of 1,000 float64 features
(standard normal, each column scaled by one of ``np.geomspace(0.1, 3.0, 1000)``, as
unstandardised features are spread) and labels in {-1, +1} drawn from a logistic model
with an intercept. The loss is the mean log-loss with a small L2 penalty, which makes the
optimum unique (:func:`logistic_loss`, nodegrad differentiates this very function)::

    z = X @ p.w + p.b
    np.mean(np.logaddexp(0.0, -y * z)) + 0.5 * 1e-3 * (p.w @ p.w)

with ``p`` a :class:`Logistic` record ``(w, b)`` (an attrs class, the intercept a Python
float). Every row but one runs ``scipy.optimize.minimize(..., method="L-BFGS-B")`` from
zero with the same options: ``maxiter`` 100, ``gtol`` 1e-20 and ``ftol`` 0, so that no
row stops before its 100th iteration (the fit is 1.2e-7 relative above the optimum
there; scipy's own stopping would take 236 iterations), and the rows take the same steps
up to rounding. Rows, each the total time of one whole fit in ms, as a ratio to the
baseline:

- "numpy (by hand)": scipy on the flat vector ``[w, b]`` with ``jac=True`` and a
  hand-written numpy loss and gradient (:func:`numpy_loss_and_grad`, the log-sigmoid by
  ``np.logaddexp`` and the sigmoid from it). Checked against nodegrad's value and
  gradient at startup (:func:`check_hand_written`).
- "nodegrad": ``ng.optim.minimize(logistic_loss, Logistic(np.zeros(1000), 0.0), X, y,
  method="L-BFGS-B", options=...)``: the record is raveled into scipy's vector and each
  evaluation is ``value_and_grad`` of the loss on the unravelled record, replayed (a new
  ``minimize`` call records on its first evaluation: that is part of the fit's time).
- "autograd": scipy with ``autograd.value_and_grad`` of the same loss on the flat
  vector. autograd cannot take an attrs record (its boxes do not pass through attrs
  classes: W0's record row shows its error), so it is given the vector ``[w, b]``.
- "pytorch (cpu)": scipy with ``torch.autograd.grad`` of the loss on the flat vector
  (``torch.logaddexp``), the same iterations as the other rows.
- "pytorch torch.optim.LBFGS": PyTorch's own optimiser, 100 iterations, ``history_size``
  10 (scipy's default ``maxcor``), ``line_search_fn="strong_wolfe"``, both tolerances 0,
  ``max_eval`` 15,000 (scipy's ``maxfun``). Its line search is not scipy's, so it takes
  other steps and another number of evaluations (its check cell shows them).
- "jax (jit)", only where JAX imports: scipy with ``jax.jit(jax.value_and_grad(loss))``
  on the flat vector.

MyGrad is not timed (as in W8 to W10). The PyTorch rows are always listed: where torch
does not import they say so ("not run: ...").

The check column compares each row's final loss with the baseline's (at most 1e-6
relative: every row must reach the same optimum) and shows the iterations and function
evaluations it made (``nit``, ``nfev``; torch.optim.LBFGS's ``n_iter`` and
``func_evals``). A row driven by scipy whose ``nfev`` differs from the baseline's is
flagged "NFEV DIFFERS": its time would not be the same fit's.

Targets: nodegrad <= 1.10x the hand-written numpy, and no slower than the fastest of the
autograd and PyTorch rows that ran (the target column names it, and nodegrad's ratio to
it is shown beside its ratio to numpy). JAX is shown, not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import attrs
import numpy as np

from .libraries import Step, display_name
from .timing import Case, PeerUnavailableError, Row, Sizes, judge_row, run_case

PENALTY = 1e-3  # the L2 penalty's weight: 0.5 * PENALTY * ||w||^2
FEATURE_SCALES = (0.1, 3.0)  # the columns' scales, geometrically spaced
MAXFUN = 15_000  # scipy's default, and torch.optim.LBFGS's max_eval here
FIT_TARGET = 1.10  # nodegrad's time over the hand-written numpy's
PEER_LIMIT = 1.0  # nodegrad's time over the fastest judged peer's
TORCH_LBFGS = "pytorch torch.optim.LBFGS"
JUDGED_PEERS = ("autograd", "torch", TORCH_LBFGS)
SCIPY_DRIVEN = ("numpy", "nodegrad", "autograd", "torch", "jax")


@attrs.define
class Logistic:
    """The parameters: the weights and the intercept."""

    w: np.ndarray
    b: float


def fit_inputs(rows: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """The features (rows, features) and labels in {-1, +1} of a logistic model."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((rows, features)) * np.geomspace(*FEATURE_SCALES, features)
    w_true = rng.standard_normal(features) / np.sqrt(features)
    p = 1.0 / (1.0 + np.exp(-(x @ w_true + 0.3)))
    y = np.where(rng.random(rows) < p, 1.0, -1.0)
    x.flags.writeable = y.flags.writeable = False  # shared by every row: none may change them
    return x, y


def fit_options(iterations: int) -> dict[str, Any]:
    """scipy's L-BFGS-B options: exactly ``iterations`` iterations."""
    return {"maxiter": iterations, "gtol": 1e-20, "ftol": 0.0, "maxfun": MAXFUN}


def logistic_loss(p: Logistic, x: np.ndarray, y: np.ndarray) -> Any:
    """W15's loss in numpy on the record: nodegrad differentiates this very function."""
    z = x @ p.w + p.b
    return np.mean(np.logaddexp(0.0, -y * z)) + 0.5 * PENALTY * (p.w @ p.w)


def numpy_loss_and_grad(v: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Hand-written loss and gradient on the flat vector ``[w, b]``."""
    w, b = v[:-1], v[-1]
    margin = -y * (x @ w + b)
    log_terms = np.logaddexp(0.0, margin)  # -log sigmoid(-margin)
    d_z = -y * np.exp(margin - log_terms) / len(y)  # sigmoid(margin), without overflow
    grad = np.empty_like(v)
    grad[:-1] = x.T @ d_z + PENALTY * w
    grad[-1] = d_z.sum()
    return float(np.mean(log_terms) + 0.5 * PENALTY * (w @ w)), grad


Fits = dict[str, tuple[int, int]]  # row name -> (iterations, function evaluations) of its last fit


def scipy_fit(name: str, objective: Callable[[np.ndarray], Any], features: int, iterations: int, fits: Fits) -> Step:
    """A step fitting from zero with scipy's L-BFGS-B and ``jac=True``; it returns the final loss."""
    import scipy.optimize

    def fit() -> np.ndarray:
        result = scipy.optimize.minimize(
            objective, np.zeros(features + 1), jac=True, method="L-BFGS-B", options=fit_options(iterations)
        )
        fits[name] = (int(result.nit), int(result.nfev))
        return np.array([result.fun])

    return fit


def fit_step(name: str, x: np.ndarray, y: np.ndarray, iterations: int, fits: Fits) -> Step:
    features = x.shape[1]
    if name == "numpy":
        return scipy_fit(name, lambda v: numpy_loss_and_grad(v, x, y), features, iterations, fits)
    if name == "nodegrad":
        import nodegrad as ng

        def fit() -> np.ndarray:
            start = Logistic(np.zeros(features), 0.0)
            result = ng.optim.minimize(logistic_loss, start, x, y, method="L-BFGS-B", options=fit_options(iterations))
            fits[name] = (int(result.nit), int(result.nfev))
            return np.array([result.fun])

        return fit
    if name == "autograd":
        try:
            import autograd
            import autograd.numpy as anp
        except ImportError as exc:
            msg = f"autograd does not import here ({exc})"
            raise PeerUnavailableError(msg) from exc

        def autograd_loss(v: Any) -> Any:
            w, b = v[:-1], v[-1]
            z = anp.dot(x, w) + b
            return anp.mean(anp.logaddexp(0.0, -y * z)) + 0.5 * PENALTY * anp.dot(w, w)

        value_and_grad = autograd.value_and_grad(autograd_loss)
        return scipy_fit(name, value_and_grad, features, iterations, fits)
    if name in ("torch", TORCH_LBFGS):
        return torch_fit(name, x, y, iterations, fits)
    if name == "jax":
        import jax
        import jax.numpy as jnp

        x_j, y_j = jax.device_put(x), jax.device_put(y)

        def jax_loss(v: Any) -> Any:
            w, b = v[:-1], v[-1]
            z = x_j @ w + b
            return jnp.mean(jnp.logaddexp(0.0, -y_j * z)) + 0.5 * PENALTY * (w @ w)

        compiled = jax.jit(jax.value_and_grad(jax_loss))

        def jax_objective(v: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = compiled(v)
            return float(value), np.asarray(grad, dtype=np.float64)

        return scipy_fit(name, jax_objective, features, iterations, fits)
    raise KeyError(name)


def torch_fit(name: str, x: np.ndarray, y: np.ndarray, iterations: int, fits: Fits) -> Step:
    """scipy with PyTorch's gradients ("torch"), or ``torch.optim.LBFGS`` (:data:`TORCH_LBFGS`)."""
    try:
        import torch
    except ImportError as exc:
        msg = f"torch does not import here ({exc})"
        raise PeerUnavailableError(msg) from exc
    x_t, y_t = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    features = x.shape[1]

    def torch_loss(v: Any) -> Any:
        w, b = v[:-1], v[-1]
        margin = -y_t * (x_t @ w + b)
        return torch.logaddexp(torch.zeros_like(margin), margin).mean() + 0.5 * PENALTY * (w @ w)

    if name == "torch":

        def torch_objective(v: np.ndarray) -> tuple[float, np.ndarray]:
            leaf = torch.tensor(v, dtype=torch.float64, requires_grad=True)
            value = torch_loss(leaf)
            (grad,) = torch.autograd.grad(value, leaf)
            return value.item(), grad.numpy()

        return scipy_fit(name, torch_objective, features, iterations, fits)

    def fit() -> np.ndarray:
        v = torch.zeros(features + 1, dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.LBFGS(
            [v],
            lr=1.0,
            max_iter=iterations,
            max_eval=MAXFUN,
            tolerance_grad=0.0,
            tolerance_change=0.0,
            history_size=10,
            line_search_fn="strong_wolfe",
        )

        def closure() -> Any:
            optimizer.zero_grad()
            value = torch_loss(v)
            value.backward()
            return value

        optimizer.step(closure)
        state = optimizer.state[v]
        fits[name] = (int(state["n_iter"]), int(state["func_evals"]))
        with torch.no_grad():
            return np.array([torch_loss(v).item()])

    return fit


@dataclass(frozen=True)
class FitCase(Case):
    """W15's case: its rows also report their iterations and evaluations (``fits``, filled
    by the steps), and nodegrad is judged against the fastest of ``judged_peers`` that ran."""

    fits: Fits = field(default_factory=dict)
    judged_peers: tuple[str, ...] = JUDGED_PEERS


def run_fit_case(case: FitCase, judge_targets: bool) -> list[Row]:
    """Time the case (:func:`.timing.run_case`), then add each row's ``nit`` and ``nfev`` to
    its check cell and judge nodegrad against the fastest judged peer that ran."""
    rows = run_case(case, judge_targets)
    by_name = {row.library: row for row in rows}
    base = case.fits.get(case.baseline)
    for row in rows:
        if row.library not in case.fits or row.error:
            continue
        nit, nfev = case.fits[row.library]
        row.check += f", nit {nit}, nfev {nfev}"
        if row.library in SCIPY_DRIVEN and base is not None and (nit, nfev) != base:
            row.check += f" NFEV DIFFERS ({display_name(case.baseline)}: nit {base[0]}, nfev {base[1]})"
    timed = [by_name[n] for n in case.judged_peers if n in by_name and by_name[n].best_s]
    nodegrad = by_name.get("nodegrad")
    if nodegrad is not None and timed:
        fastest = min(timed, key=lambda row: row.best_s or float("inf"))
        judge_row(nodegrad, by_name, case.target, (fastest.library, PEER_LIMIT), judge_targets)
    return rows


def w15_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    rows, features, iterations = sizes.fit_rows, sizes.fit_features, sizes.fit_iterations
    x, y = fit_inputs(rows, features)
    fits: Fits = {}
    # The judged peers are always listed (each says so where it does not import); JAX only where it does.
    names = ["numpy", *(n for n in ("nodegrad",) if n in libraries), "autograd", "torch", TORCH_LBFGS]
    names += [n for n in ("jax",) if n in libraries]
    builders = {name: (lambda name=name: fit_step(name, x, y, iterations, fits)) for name in names}
    title = (
        f"W15 one L-BFGS fit ({iterations} iterations, scipy's L-BFGS-B unless named), logistic regression, "
        f"{rows:,} rows x {features:,} features, float64"
    )
    rounds, runs = sizes.timing("W15")
    case = FitCase(
        "W15",
        title,
        "numpy",
        "ms",
        1,
        FIT_TARGET,
        rounds,
        runs,
        builders,
        1e-6,  # the final loss, relative to the baseline's
        jit=True,
        fits=fits,
    )
    return [case]


def check_hand_written(sizes: Sizes) -> None:
    """Assert that the hand-written loss and gradient equal nodegrad's at a point off the start."""
    import nodegrad as ng

    x, y = fit_inputs(sizes.fit_rows, sizes.fit_features)
    rng = np.random.default_rng(150)
    point = Logistic(rng.standard_normal(sizes.fit_features) * 0.01, 0.1)
    value, grads = ng.value_and_grad(logistic_loss)(point, x, y)
    hand_value, hand_grad = numpy_loss_and_grad(np.append(point.w, point.b), x, y)
    np.testing.assert_allclose(hand_value, value, rtol=1e-12)
    np.testing.assert_allclose(hand_grad, np.append(grads.w, grads.b), rtol=1e-9, atol=1e-15)
