"""The four checks of a program against pandas (vjp, grad, vmap, replay), each run with a
time limit."""

from __future__ import annotations

import signal
import threading
import traceback
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pandas as pd

import nodegrad as ng
from tests.fuzz.tables.compare import close_enough, compare, compare_scalars
from tests.fuzz.tables.outcomes import Outcome, attempt, classify_error, differs, first_line, normalize
from tests.fuzz.tables.programs import Program, column_kinds, pandas_value, quietly

CHECKS = ("vjp", "grad", "vmap", "replay")
SCALES = (1.0, 0.99, 1.015)  # vmap's examples: small enough that no drawn row filter switches
EPS = 1e-5  # central differences' step (extrapolated); drawn floats are quarters, thresholds between them
ENTRIES = 3  # float entries of df a gradient is checked at one by one
DIRECTIONS = 2  # random directions it is checked along
TIME_LIMIT = 60.0  # seconds one check may run


def check_vjp(program: Program) -> Outcome:
    ns = program.namespace()
    want = quietly(lambda: ns["pipeline"](ns["df"]))
    got, error, notes = attempt(lambda: ng.vjp(ns["pipeline"], ns["df"])[0])
    if error is not None:
        return classify_error("vjp", error, notes)
    found = compare(got, want)
    return differs("vjp", found, notes) if found else Outcome("vjp", "agree", notes=notes)


def _central(f: Callable[[pd.DataFrame], float], df: pd.DataFrame, direction: dict[str, np.ndarray]) -> float | None:
    """The derivative of ``f`` at ``df`` along ``direction`` (column -> one number per row)
    by central differences, or None at a kink (where the one-sided differences part) or
    where pandas gives no finite value or refuses a neighbour (a row filter switched)."""

    def at(delta: float) -> float:
        moved = {c: df[c].to_numpy(dtype=float) + delta * v for c, v in direction.items()}
        return float(quietly(lambda: f(df.assign(**moved))))

    try:
        f0, up, down, near_up, near_down = at(0.0), at(EPS), at(-EPS), at(EPS / 2), at(-EPS / 2)
    except Exception:
        return None
    return _derivative(f0, up, down, near_up, near_down)


def _derivative(f0: float, up: float, down: float, near_up: float, near_down: float) -> float | None:
    """The derivative from ``f`` at 0, +-EPS and +-EPS/2: central differences at both steps,
    extrapolated (Richardson: their error, of order EPS**2, cancels, which matters where the
    function curves steeply), or None at a kink (the one-sided differences part) or where a
    value is not finite."""
    if not np.isfinite([f0, up, down, near_up, near_down]).all():
        return None
    forward, backward, central = (up - f0) / EPS, (f0 - down) / EPS, (up - down) / (2 * EPS)
    if abs(forward - backward) > 1e-3 * (1.0 + abs(central)):
        return None
    return (4 * (near_up - near_down) / EPS - central) / 3


def _one_hot(df: pd.DataFrame, row: int, label: str) -> dict[str, np.ndarray]:
    return {label: (np.arange(len(df)) == row).astype(float)}


def _derivative_kind(name: str, got: float, want: float) -> str:
    """A wrong derivative's class: NaN where pandas' loss does not move (the entry reaches it
    only through a NaN that pandas skips, ``0 * nan`` in the sweep), NaN elsewhere, or a
    wrong number."""
    if np.isnan(got):
        return f"NaN {name} where pandas' loss does not move" if want == 0.0 else f"NaN {name}"
    return name


def _derivative_agrees(got: float, want: float, value: float) -> bool:
    return bool(abs(got - want) <= 1e-5 * (1.0 + abs(want)) + 1e-9 * abs(value))


def _entries(rng: np.random.Generator, g: pd.DataFrame, finite: dict[str, np.ndarray]) -> list[tuple[int, str]]:
    """A few finite entries of df to check one by one: some the gradient says move the loss,
    some drawn from all (where it may wrongly say they do not)."""
    found = [(r, c) for c, mask in finite.items() for r in np.flatnonzero(mask).tolist()]
    moving = [(r, c) for r, c in found if g[c].iloc[r] != 0.0]
    chosen: list[tuple[int, str]] = []
    for pool in (moving, found):
        rest = [e for e in pool if e not in chosen]
        if rest:
            k = min(ENTRIES - 1 if pool is moving else ENTRIES, len(rest))
            chosen += [rest[i] for i in sorted(rng.choice(len(rest), size=k, replace=False))]
    return chosen


def check_grad(program: Program) -> Outcome:
    if program.loss is None:
        return Outcome("grad", "skipped", "no float output")
    ns = program.namespace()
    loss, df = ns["loss"], _jittered(ns["df"], program)
    try:
        want = quietly(lambda: loss(df))
    except Exception:
        want = None
    if want is None or np.ndim(want) != 0 or not isinstance(want, int | float | np.number):
        df = ns["df"]  # moved, the frame crossed a threshold the program drew at a quarter: the draws as they are
        want = quietly(lambda: loss(df))
    result, error, notes = attempt(lambda: ng.value_and_grad(loss)(df))
    if error is not None:
        return classify_error("grad", error, notes)
    value, g = result
    found = compare_scalars(value, want)
    if found:
        return differs("grad", ("loss " + found[0], found[1]), notes)
    found = gradient_structure(g, df, program.scaled)
    if found:
        return differs("grad", found, notes)
    rng = np.random.default_rng(program.seed + 1)
    finite = {c: np.isfinite(df[c].to_numpy(dtype=float)) for c in program.scaled}
    # Along random directions first: every finite entry at once, in three evaluations.
    along = None
    for _ in range(DIRECTIONS):
        direction = {c: np.where(mask, rng.normal(size=len(df)), 0.0) for c, mask in finite.items()}
        expected = _central(loss, df, direction)
        got = sum(float(np.sum(g[c].to_numpy()[m] * direction[c][m])) for c, m in finite.items())
        if expected is not None and not _derivative_agrees(got, expected, float(want)):
            along = (_derivative_kind("gradient along a random direction", got, expected), f"{got!r} vs {expected!r}")
            break
    entries = _entries(rng, g, finite)
    if along is not None:  # which entry: look at all of them
        entries = [(r, c) for c, mask in finite.items() for r in np.flatnonzero(mask).tolist()][:40]
    for row, label in entries:
        expected = _central(loss, df, _one_hot(df, row, label))
        if expected is None:
            continue
        entry = float(g[label].iloc[row])
        if not _derivative_agrees(entry, expected, float(want)):
            detail = f"{label}[{row}]: {entry!r} vs {expected!r}"
            kind = _derivative_kind("gradient", entry, expected)
            if np.isnan(entry) and df[program.scaled].isna().to_numpy().any():
                kind += ", df holding NaN"
            return differs("grad", (kind, detail), notes, entry=(row, label))
    if along is not None:
        return differs("grad", along, notes)
    return Outcome("grad", "agree", notes=notes)


def _jittered(df: pd.DataFrame, program: Program) -> pd.DataFrame:
    """``df`` with every float a program scales moved by 1e-3 to 3e-3, either way: the drawn
    quarters tie and meet kinks (a sort of equal values, ``abs(x)`` at 0), where a gradient is
    one of several one-sided answers and central differences another; thresholds, between the
    quarters, stay where they were. The values checks keep the draws exact."""
    rng = np.random.default_rng(program.seed + 2)
    moves = {}
    for c in program.scaled:
        size = rng.uniform(1e-3, 3e-3, len(df)) * rng.choice([-1.0, 1.0], len(df))
        moves[c] = df[c].to_numpy(dtype=float) + size
    return df.assign(**moves)


def gradient_structure(g: Any, df: pd.DataFrame, floats: list[str]) -> tuple[str, str] | None:
    """What is wrong with ``g`` as the gradient of ``df``: a DataFrame with its index and its
    float columns, in their order, of float64."""
    if not isinstance(g, pd.DataFrame):
        return "gradient type", f"a {type(g).__name__} for a DataFrame"
    if list(g.columns) != floats:
        return "gradient columns", f"{list(g.columns)} vs {floats}"
    if not g.index.equals(df.index) or list(g.index.names) != list(df.index.names):
        return "gradient index", f"{g.index.tolist()[:6]} vs {df.index.tolist()[:6]}"
    bad = [c for c in floats if g[c].dtype != np.float64]
    if bad:
        return "gradient dtype", f"{bad[0]}: {g[bad[0]].dtype}"
    return None


def check_vmap(program: Program) -> Outcome:
    if program.loss is None or not program.scaled:
        return Outcome("vmap", "skipped", "no float output")
    ns = program.namespace()
    f, df = ns["scaled_loss"], ns["df"]
    scales = np.array(SCALES)
    try:
        want = np.array([quietly(lambda s=s: f(s, df)) for s in scales], dtype=float)
    except Exception:
        return Outcome("vmap", "skipped", "pandas raised on a scaled frame")
    if not np.isfinite(want).all():
        return Outcome("vmap", "skipped", "pandas' loss not finite on a scaled frame")
    got, error, notes = attempt(lambda: ng.vmap(f, in_axes=(0, None))(scales, df))
    if error is not None:
        return _same_rows(classify_error("vmap", error, notes), ns, scales)
    if np.shape(got) != scales.shape:
        return differs("vmap", ("shape", f"{np.shape(got)} vs {scales.shape}"), notes)
    if not close_enough(np.asarray(got, dtype=float), want):
        return differs("vmap", ("values", f"{np.asarray(got).tolist()} vs {want.tolist()}"), notes)
    slopes, error, more = attempt(lambda: ng.vmap(ng.grad(f), in_axes=(0, None))(scales, df))
    notes += more
    if error is not None:
        return _same_rows(classify_error("vmap", error, notes), ns, scales)
    for b, s in enumerate(scales):
        expected = _central_scale(f, s, df)
        if expected is not None and not _derivative_agrees(float(np.asarray(slopes)[b]), expected, float(want[b])):
            slope = float(np.asarray(slopes)[b])
            kind = _derivative_kind("derivative in the scale", slope, expected)
            if np.isnan(slope) and df[program.scaled].isna().to_numpy().any():
                kind += ", df holding NaN"
            return differs("vmap", (kind, f"example {b}: {slope!r} vs {expected!r}"), notes)
    return Outcome("vmap", "agree", notes=notes)


def _same_rows(outcome: Outcome, ns: dict[str, Any], scales: np.ndarray) -> Outcome:
    """A vmap refusal, marked where pandas' pipeline output has the same index for every
    example (no example ends with rows of its own)."""
    if outcome.verdict != "refused":
        return outcome
    scaled = [c for c in ns["df"].columns if column_kinds(ns["df"]).get(c) == "float"]
    df = ns["df"]
    try:
        indexes = [
            quietly(lambda s=s: ns["pipeline"](df.assign(**{c: df[c] * s for c in scaled})).index) for s in scales
        ]
    except Exception:
        return outcome
    return attrs.evolve(outcome, same_rows=all(index.equals(indexes[0]) for index in indexes[1:]))


def _central_scale(f: Callable[[float, pd.DataFrame], float], s: float, df: pd.DataFrame) -> float | None:
    try:
        steps = (s, s + EPS, s - EPS, s + EPS / 2, s - EPS / 2)
        f0, up, down, near_up, near_down = (float(quietly(lambda v=v: f(v, df))) for v in steps)
    except Exception:
        return None
    return _derivative(f0, up, down, near_up, near_down)


def check_replay(program: Program) -> Outcome:
    ns = program.namespace()
    pipeline, frames = ns["pipeline"], [("df", ns["df"]), ("df2", ns["df2"]), ("df", ns["df"])]
    notes: tuple[str, ...] = ()
    replayed = {
        "forward": ng.replay(lambda d: ng.vjp(pipeline, d)[0]),  # through a transform
        "direct": ng.replay(pipeline),  # the function itself: its table steps recorded
    }
    for kind, fast in replayed.items():
        for call, (name, frame) in enumerate(frames):
            want = pandas_value(lambda frame=frame: pipeline(frame))
            if want is None:
                continue
            got, error, more = attempt(lambda frame=frame, fast=fast: fast(frame))
            notes += more
            if error is not None:
                return classify_error("replay", error, notes)
            found = compare(got, want)
            if found:
                return differs("replay", (f"{kind} {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
    if program.loss is None:
        return Outcome("replay", "agree", notes=tuple(sorted(set(notes))))
    loss = ns["loss"]
    step = ng.replay(ng.value_and_grad(loss))
    for call, (name, frame) in enumerate(frames):
        want = pandas_value(lambda frame=frame: loss(frame))
        if want is None or not np.isfinite(want):
            continue
        eager, eager_error, _ = attempt(lambda frame=frame: ng.value_and_grad(loss)(frame))
        result, error, more = attempt(lambda frame=frame: step(frame))
        notes += more
        if error is not None:
            return classify_error("replay", error, notes)
        found = compare_scalars(result[0], want)
        if found:
            return differs("replay", (f"loss {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
        if eager_error is None:
            found = compare(result[1], eager[1]) if isinstance(eager[1], pd.DataFrame) else None
            if found:
                return differs("replay", (f"gradient {found[0]}", f"call {call + 1} ({name}): {found[1]}"), notes)
    return Outcome("replay", "agree", notes=tuple(sorted(set(notes))))


CHECK_FUNCTIONS: dict[str, Callable[[Program], Outcome]] = {
    "vjp": check_vjp,
    "grad": check_grad,
    "vmap": check_vmap,
    "replay": check_replay,
}


def run_check(program: Program, check: str) -> Outcome:
    """``check`` on ``program``; a check running past :data:`TIME_LIMIT` seconds is stopped
    (a foreign TimeoutError) where a timer can be set (the main thread, on POSIX)."""
    timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, _too_long)
        signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return CHECK_FUNCTIONS[check](program)
    except Exception as error:  # the tester's own step (pandas' oracle, a comparison) raised
        if any("/nodegrad/" in f.filename for f in traceback.extract_tb(error.__traceback__)):
            return classify_error(check, error)
        message = f"the tester could not finish: {type(error).__name__}: {normalize(first_line(error))}"
        return Outcome(check, "skipped", message, notes=(message,))
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _too_long(signum: int, frame: object) -> None:
    msg = f"the check ran longer than {TIME_LIMIT} s"
    raise TimeoutError(msg)
