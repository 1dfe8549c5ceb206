"""W6: a sampled batch from a dict of columns, written in plain numpy (:func:`gather_loss`).

From cols = {"x": (10000, 16), "y": (10000,)} float64, gather 4,096 rows by a fixed index
array drawn with ``rng.integers`` (repeats included, as a sampler's),
``xb = cols["x"][idx]``, ``h = np.where(xb > 0, xb, 0.1 * xb)``,
``z = np.concatenate([xb, h], axis=1)`` (4096, 32), ``pred = z @ w`` with w (32, 1), loss
``np.mean((pred[:, 0] - cols["y"][idx]) ** 2)``. nodegrad differentiates that very function
(numpy dispatches the calls on traced values to nodegrad ops); each peer has its own
equivalent, side by side (``gather_loss_torch`` and so on). JAX runs jitted.

Two cases: the gradient w.r.t. w only (the columns stay plain arrays, so only the tail from
``z @ w`` on is traced), and w.r.t. w and the columns, written as a user would,
``ng.grad(gather_loss, argnums=(0, 1))(w, cols, idx)``: the dict itself is differentiated
and its gradient is a dict holding "x" and "y", so every library and the baseline compute
the "y" gradient too (a 4,096-entry scatter, about 5 µs by hand). Target: nodegrad <= 1.10x
numpy in both cases. Each case has a replay row too, the same ``ng.grad`` through
``ng.replay`` (recorded when it is built), with the same target.

The baseline is a hand-written numpy forward + backward
(:func:`gather_numpy_loss_and_grads`), checked against nodegrad's at startup
(:func:`check_hand_written`): its forward makes ``gather_loss``'s own numpy calls; its
backward multiplies by the mask instead of calling ``np.where`` (which is branch-bound on a
random mask, about 200 µs on (4096, 16)) and scatter-adds the rows' gradient with
``np.add.at`` on complex128 views of column pairs, the fastest correct plain-numpy scatter
measured (:func:`scatter_rows` lists the alternatives).

With respect to w alone, the table also times the "shared prefix" (:func:`gather_prefix`):
the gather, where and concatenate that run on plain arrays in every library and in the
baseline alike (about 87% of the baseline's time). The rest of the baseline, the traced
tail from ``z @ w`` on and its backward, is about 45 µs of numpy calls; a library that
records those five ops and sweeps them back adds its fixed cost on top, so that case's
ratio cannot reach 1.0x. With respect to the columns nodegrad runs the whole function, and
its where (a branch-free select on the bit patterns) and gather (``np.take``) are faster
than numpy's own calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .libraries import GRADIENT_STEPS, PREFIX, REPLAY, Step, max_relative_error, replayed_step, with_replay
from .timing import Case, Sizes

LEAK = 0.1  # the slope of the leaky branch of np.where


def gather_inputs(rows: int, features: int, batch: int) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """A (2 * features, 1) weight, the columns {"x": (rows, features), "y": (rows,)} and a
    sampler's batch of row indices (``rng.integers``: repeats included)."""
    rng = np.random.default_rng(6)
    cols = {"x": rng.standard_normal((rows, features)), "y": rng.standard_normal(rows)}
    idx = rng.integers(0, rows, size=batch)
    w = rng.standard_normal((2 * features, 1)) / np.sqrt(2 * features)
    return w, cols, idx


def gather_loss(w: Any, cols: dict[str, Any], idx: np.ndarray) -> Any:
    """W6 in plain numpy: nodegrad differentiates this very function (numpy dispatches
    the calls on traced values to nodegrad ops), and the hand-written baseline's forward
    makes the same calls."""
    xb = cols["x"][idx]
    h = np.where(xb > 0, xb, LEAK * xb)
    z = np.concatenate([xb, h], axis=1)
    pred = z @ w
    return np.mean((pred[:, 0] - cols["y"][idx]) ** 2)


def gather_loss_torch(w: Any, cols: dict[str, Any], idx: Any) -> Any:
    import torch

    xb = cols["x"][idx]
    h = torch.where(xb > 0, xb, LEAK * xb)
    z = torch.cat([xb, h], dim=1)
    pred = z @ w
    return torch.mean((pred[:, 0] - cols["y"][idx]) ** 2)


def gather_loss_autograd(w: Any, cols: dict[str, Any], idx: np.ndarray) -> Any:
    import autograd.numpy as anp

    xb = cols["x"][idx]
    h = anp.where(xb > 0, xb, LEAK * xb)
    z = anp.concatenate([xb, h], axis=1)
    pred = anp.matmul(z, w)
    return anp.mean((pred[:, 0] - cols["y"][idx]) ** 2)


def gather_loss_mygrad(w: Any, cols: dict[str, Any], idx: np.ndarray) -> Any:
    import mygrad as mg

    xb = cols["x"][idx]
    h = mg.where(xb > 0, xb, LEAK * xb)
    z = mg.concatenate([xb, h], axis=1)
    pred = mg.matmul(z, w)
    return mg.mean((pred[:, 0] - cols["y"][idx]) ** 2)


def gather_loss_jax(w: Any, cols: dict[str, Any], idx: Any) -> Any:
    import jax.numpy as jnp

    xb = cols["x"][idx]
    h = jnp.where(xb > 0, xb, LEAK * xb)
    z = jnp.concatenate([xb, h], axis=1)
    pred = z @ w
    return jnp.mean((pred[:, 0] - cols["y"][idx]) ** 2)


def scatter_rows(rows: np.ndarray, idx: np.ndarray, count: int) -> np.ndarray:
    """``out[idx[i]] += rows[i]`` into ``count`` zero rows, repeated indices accumulating.

    The fastest plain-numpy way measured for (4096, 16) float64 rows into 10,000 (numpy
    2.4, one thread): view each pair of float64 columns as one complex128 column, whose
    addition adds both halves exactly as two float64 additions, and run ``np.add.at`` on
    each of the 8 strided complex columns: 63 µs. Also measured: ``np.add.at`` on the
    flattened (rows * 16) array with flat indices ``idx[:, None] * 16 + arange(16)``
    105 µs (37 µs of it building the indices), the same on complex pairs 83 µs, a loop of
    16 float64 column ``np.add.at`` 94 µs, ``np.bincount`` on flat indices 130 µs, one
    ``np.bincount`` per column 249 µs, sort + ``np.add.reduceat`` 363 µs, and a single
    2-D ``np.add.at(out, idx, rows)`` 490 µs. All but reduceat are bit-identical to the 2-D
    ``np.add.at`` (the same additions in the same order).
    """
    out = np.zeros((count, rows.shape[1]), dtype=rows.dtype)
    if rows.dtype == np.float64 and rows.shape[1] % 2 == 0 and rows.flags.c_contiguous:
        out_cols, row_cols = out.view(np.complex128), rows.view(np.complex128)
    else:
        out_cols, row_cols = out, rows
    for j in range(out_cols.shape[1]):
        np.add.at(out_cols[:, j], idx, row_cols[:, j])
    return out


def gather_numpy_loss_and_grads(
    w: np.ndarray, cols: dict[str, np.ndarray], idx: np.ndarray, wrt_cols: bool
) -> tuple[Any, Any]:
    """Hand-written forward and backward of :func:`gather_loss`; returns (loss, grads).

    The forward makes :func:`gather_loss`'s own numpy calls (both pay for them alike) and
    keeps the mask. The backward never calls ``np.where``: on a random mask it costs
    about 3 ns per element (a branch per element: 200 µs on (4096, 16), eight times a
    multiply by the mask). ``grads`` is the weight's gradient, or with ``wrt_cols`` the
    pair (weight's gradient, {"x": ..., "y": ...}).
    """
    x, y = cols["x"], cols["y"]
    xb = x[idx]
    pos = xb > 0
    h = np.where(pos, xb, LEAK * xb)
    z = np.concatenate([xb, h], axis=1)
    err = (z @ w)[:, 0] - y[idx]
    loss = np.mean(err**2)
    d_err = err * (2.0 / len(idx))
    d_w = (d_err @ z)[:, None]
    if not wrt_cols:
        return loss, d_w
    # z = [xb, where(pos, xb, LEAK * xb)], so d xb = d_err * (w1 + w2 * (LEAK or 1)).
    f = x.shape[1]
    w1, w2 = w[:f, 0], w[f:, 0]
    d_xb = (w1 + LEAK * w2 + ((1.0 - LEAK) * w2) * pos) * d_err[:, None]
    d_y = np.zeros(len(y), dtype=y.dtype)
    np.add.at(d_y, idx, -d_err)  # 1-D np.add.at is fast (5 µs for 4,096): no trick needed
    return loss, (d_w, {"x": scatter_rows(d_xb, idx, len(x)), "y": d_y})


def gather_step(name: str, wrt_cols: bool, w: np.ndarray, cols: dict[str, np.ndarray], idx: np.ndarray) -> Step:
    """The gradient of W6 in each library's own way: w.r.t. the weight, or with
    ``wrt_cols`` w.r.t. the weight and the columns dict (which includes "y")."""
    if name == "numpy":
        return lambda: gather_numpy_loss_and_grads(w, cols, idx, wrt_cols)[1]
    if name in ("nodegrad", REPLAY):
        import nodegrad as ng

        grad = ng.grad(gather_loss, argnums=(0, 1) if wrt_cols else 0)
        return replayed_step(grad, (w, cols, idx)) if name == REPLAY else lambda: grad(w, cols, idx)
    if name == "torch":
        import torch

        w_t, idx_t = torch.from_numpy(w).requires_grad_(), torch.from_numpy(idx)
        cols_t = {k: torch.from_numpy(v).requires_grad_(wrt_cols) for k, v in cols.items()}
        leaves = [w_t, *cols_t.values()] if wrt_cols else [w_t]

        def step_torch() -> Any:
            d_w, *d_cols = torch.autograd.grad(gather_loss_torch(w_t, cols_t, idx_t), leaves)
            return (d_w, dict(zip(cols_t, d_cols, strict=True))) if wrt_cols else d_w

        return step_torch
    if name == "autograd":
        import autograd

        grad = autograd.grad(gather_loss_autograd, argnum=(0, 1) if wrt_cols else 0)
        return lambda: grad(w, cols, idx)
    if name == "mygrad":
        import mygrad as mg

        def step_mygrad() -> Any:
            w_t = mg.Tensor(w, copy=False)
            cols_t: dict[str, Any] = {k: mg.Tensor(v, copy=False) for k, v in cols.items()} if wrt_cols else cols
            gather_loss_mygrad(w_t, cols_t, idx).backward()
            return (w_t.grad, {k: t.grad for k, t in cols_t.items()}) if wrt_cols else w_t.grad

        return step_mygrad
    if name == "jax":
        import jax

        grad = jax.jit(jax.grad(gather_loss_jax, argnums=(0, 1) if wrt_cols else 0))
        device_args = jax.device_put((w, cols, idx))
        return lambda: jax.block_until_ready(grad(*device_args))
    msg = f"no W6 step for {name!r}"
    raise ValueError(msg)


def gather_steps(
    libraries: Sequence[str], rows: int, features: int, batch: int, wrt_cols: bool
) -> dict[str, Callable[[], Step]]:
    """A step builder per library (the hand-written numpy one first) for one W6 variant."""
    w, cols, idx = gather_inputs(rows, features, batch)
    names = ["numpy", *(name for name in with_replay(libraries) if name in GRADIENT_STEPS)]
    steps = {name: (lambda name=name: gather_step(name, wrt_cols, w, cols, idx)) for name in names}
    if not wrt_cols:
        steps[PREFIX] = lambda: lambda: gather_prefix(cols, idx)
    return steps


def gather_prefix(cols: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """The calls of :func:`gather_loss` up to ``z``: with respect to w alone they run on
    plain arrays in every library, the hand-written baseline included."""
    xb = cols["x"][idx]
    return np.concatenate([xb, np.where(xb > 0, xb, LEAK * xb)], axis=1)


def w6_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    what = f"W6 {sizes.gather_batch:,} of {sizes.gather_rows:,} rows, where/concatenate/matmul/MSE"
    cases = []
    for wrt_cols, wrt in ((False, "w"), (True, "w and the columns dict")):
        steps = gather_steps(libraries, sizes.gather_rows, sizes.gather_features, sizes.gather_batch, wrt_cols)
        title = f"{what}, grad w.r.t. {wrt}"
        timing = sizes.timing("W6")
        cases.append(Case("W6", title, "numpy", "ms", 1, 1.10, *timing, steps, 1e-9, True, replay_target=1.10))
    return cases


def check_hand_written(sizes: Sizes) -> None:
    """Assert that the hand-written gradients equal nodegrad's, in both cases, with repeated row indices."""
    import nodegrad as ng

    w, cols, idx = gather_inputs(sizes.gather_rows, sizes.gather_features, sizes.gather_batch)
    assert len(np.unique(idx)) < len(idx), "W6 needs repeated row indices to check the scatter"
    for wrt_cols in (False, True):
        value, grads = ng.value_and_grad(gather_loss, argnums=(0, 1) if wrt_cols else 0)(w, cols, idx)
        hand_value, hand_grads = gather_numpy_loss_and_grads(w, cols, idx, wrt_cols)
        error = max(max_relative_error(grads, hand_grads), abs(float(value) - float(hand_value)) / abs(float(value)))
        assert error <= 1e-12, f"hand-written W6 gradients (wrt_cols={wrt_cols}) differ from nodegrad's: {error:.2e}"
