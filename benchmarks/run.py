"""Side-by-side benchmarks: nodegrad against the autodiff libraries that are installed.

Run from the repository root::

    python benchmarks/run.py                  # every workload, about 1-2 minutes on 2 cores
    python benchmarks/run.py --quick          # tiny sizes, one timed run: a smoke test
    python benchmarks/run.py --only W1,W3     # a subset
    python benchmarks/run.py --json out.json  # also write the results as JSON
    python benchmarks/run.py --threads 2      # BLAS/OpenMP/torch threads (default 1)

Every workload computes a scalar and its gradient (forward + backward) and returns the
gradient as arrays; every library runs exactly the same computation.

W1  Per-op overhead. 250 repeats of [sin(x), x * 1.01, tanh(x), x + 0.5] on a 4-element
    float64 array (1,000 ops), then sum. Reported in µs per op (time / 1,000) and as a
    ratio to PyTorch. Target: nodegrad <= 0.8x PyTorch.
W2  MLP 784-256-256-10, tanh hidden activations, softmax cross-entropy with integer
    labels (mean over the batch), batch 64, once in float32 and once in float64; gradient
    of all 6 parameters. Reported in ms per step and as a ratio to a hand-written numpy
    forward + backward, whose gradients are checked against nodegrad's at startup.
    Target: nodegrad <= 1.3x numpy.
W3  Large arrays. [sin, x * 1.01, tanh, x + 0.5] twice, then [sin, tanh] (10 ops, values
    stay bounded) on 10 million float64 elements, then sum. Reported in ms and as a ratio
    to a hand-written numpy forward + backward that keeps the intermediates its backward
    needs. Target: nodegrad <= 1.10x numpy.
W4  Structured parameters. A dict of 200 (8, 8) float64 matrices; the loss is the sum over
    keys of sum(tanh(W_k @ x)), the gradient a dict. Reported in µs per parameter and as
    a ratio to PyTorch. Target: nodegrad <= 1.0x PyTorch.
W5  Deep graph. The W1 op mix repeated to 100,000 ops. Reported in µs per op and as a
    ratio to PyTorch; a library that fails (a recursion limit, say) is reported as failed.
W6  A sampled batch from a dict of columns, written in plain numpy (``gather_loss``):
    from cols = {"x": (10000, 16), "y": (10000,)} float64, gather 4,096 rows by a fixed
    index array drawn with ``rng.integers`` (repeats included, as a sampler's),
    ``xb = cols["x"][idx]``, ``h = np.where(xb > 0, xb, 0.1 * xb)``,
    ``z = np.concatenate([xb, h], axis=1)`` (4096, 32), ``pred = z @ w`` with w (32, 1),
    loss ``np.mean((pred[:, 0] - cols["y"][idx]) ** 2)``. nodegrad differentiates that very
    function (numpy dispatches the calls on traced values to nodegrad ops); each peer has
    its own equivalent, side by side. Two cases: the gradient w.r.t. w only (the columns
    stay plain arrays, so only the tail from ``z @ w`` on is traced), and w.r.t. w and the
    columns, written as a user would, ``ng.grad(gather_loss, argnums=(0, 1))(w, cols, idx)``:
    the dict itself is differentiated and its gradient is a dict holding "x" and "y", so
    every library and the baseline compute the "y" gradient too (a 4,096-entry scatter,
    about 5 µs by hand). Reported in ms and as a ratio to a hand-written numpy forward +
    backward, checked against nodegrad's at startup: its forward makes ``gather_loss``'s own
    numpy calls; its backward multiplies by the mask instead of calling ``np.where`` (which
    is branch-bound on a random mask, about 200 µs on (4096, 16)) and scatter-adds the
    rows' gradient with ``np.add.at`` on complex128 views of column pairs, the fastest
    correct plain-numpy scatter measured (``scatter_rows`` lists the alternatives).
    Target: nodegrad <= 1.0x numpy in both cases. With respect to w alone, the table also
    times the "shared prefix": the gather, where and concatenate that run on plain arrays
    in every library and in the baseline alike (about 87% of the baseline's time). The
    rest of the baseline, the traced tail from ``z @ w`` on and its backward, is about
    45 µs of numpy calls; a library that records those five ops and sweeps them back
    adds its fixed cost on top, so that case's ratio cannot reach 1.0x. With respect to
    the columns nodegrad runs the whole function, and its where (a branch-free select on
    the bit patterns) and gather (``np.take``) are faster than numpy's own calls.

Peers, each skipped with a note when it cannot be imported: PyTorch (CPU), HIPS autograd,
MyGrad and JAX (eager for W1/W4/W5, where per-op cost is the point; jitted for W2/W3/W6).

Method: each library runs each case once as a warm-up (its gradient is compared with the
baseline's: the "check" column). Then the libraries are timed with ``time.perf_counter``
in interleaved rounds (W1/W2/W6: 10 rounds of 10 back-to-back runs each; W3: 7 rounds of
1; W4: 10 rounds of 5; W5: 3 rounds of 1), so that load from other processes on a shared machine hits all of
them alike. Ratios use the minimum over all runs; the median is shown beside it. The
garbage collector stays enabled (it is part of what a user pays); ``gc.collect()`` runs
once before the first round.

Environment: fresh large allocations are page-fault bound on these machines, so every
library runs under the same glibc malloc settings, and under the same thread settings.
Both are read only at process start, so unless they already have the wanted values the
script re-executes itself with them set. ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` default to 16 GiB (glibc 2.36 accepts values above 32 MiB when
they are set explicitly; the 32 MiB cap applies only to the dynamic threshold), which
keeps freed 80 MB buffers in the heap for reuse (the header shows a page-fault check).
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``torch.set_num_threads`` get the same value for every library: ``--threads N``, else the
caller's ``OMP_NUM_THREADS``, else 1. One thread is the default because these machines
are shared: with two BLAS threads on two cores, any other busy process makes each
OpenBLAS matmul wait for scheduler ticks, and a 0.4 ms W2 step was measured at 84-96 ms.
Single-threaded numbers also isolate what the autodiff layer costs. The header records
all of it.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import importlib.metadata
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

# -- environment --------------------------------------------------------------------------

HEAP_BYTES = str(16 * 2**30)  # buffers below this size come from (and return to) the heap
RELAUNCH_MARK = "NODEGRAD_BENCH_RELAUNCHED"
MALLOC_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def core_count() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def wanted_environment(threads: int | None) -> dict[str, str]:
    """The variables every library must see from process start.

    Unset malloc variables get :data:`HEAP_BYTES`. Every thread variable gets ``threads``
    when it is given, else the caller's ``OMP_NUM_THREADS``, else 1 (the module docstring
    says why 1).
    """
    wanted = {k: os.environ.get(k, HEAP_BYTES) for k in MALLOC_VARS}
    count = str(threads) if threads is not None else os.environ.get("OMP_NUM_THREADS", "1")
    wanted.update(dict.fromkeys(THREAD_VARS, count))
    return wanted


def relaunch_with_environment(threads: int | None) -> None:
    """Re-execute this script unless its malloc and thread variables already have the
    wanted values.

    glibc reads the malloc variables and BLAS libraries read the thread variables only
    when the process starts, so setting ``os.environ`` here would be too late.
    """
    changed = {k: v for k, v in wanted_environment(threads).items() if os.environ.get(k) != v}
    if not changed or os.environ.get(RELAUNCH_MARK):
        return
    env = {**os.environ, **changed, RELAUNCH_MARK: ",".join(changed)}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def refault_count(n_bytes: int = 80_000_000) -> int:
    """Minor page faults while filling a buffer of ``n_bytes`` right after freeing one.

    Zero when malloc hands the freed buffer back (heap reuse); about a hundred or more when
    every large allocation is a fresh mmap (how many depends on how many huge pages the
    kernel has free at that moment). Measured before the peers are imported.
    """
    np.ones(n_bytes // 8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(n_bytes // 8)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


# -- libraries ------------------------------------------------------------------------------

PEERS = ("torch", "autograd", "mygrad", "jax")
# A row that times only the part of a workload every library runs as the same plain numpy
# calls (W6 with respect to w: the columns are not traced). It computes no gradient; it
# shows how much of the baseline's time no library can change.
PREFIX = "prefix"

DISPLAY = {"numpy": "numpy (by hand)", "torch": "pytorch (cpu)", PREFIX: "shared prefix"}


def display_name(library: str, variant: str = "") -> str:
    name = DISPLAY.get(library, library)
    return f"{name} ({variant})" if variant else name


def import_library(name: str, threads: int) -> str:
    """Import ``name`` and configure it the same way for every workload; return its version."""
    module = importlib.import_module(name)
    if name == "torch":
        module.set_num_threads(threads)
    if name == "jax":
        module.config.update("jax_enable_x64", True)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "?"))


def available_libraries(threads: int) -> tuple[dict[str, str], dict[str, str]]:
    """Versions of the libraries that import, and the reason for each one that does not."""
    versions = {"numpy": np.__version__, "nodegrad": import_library("nodegrad", threads)}
    skipped = {}
    for name in PEERS:
        try:
            versions[name] = import_library(name, threads)
        except Exception as exc:  # an optional peer may fail in any way while importing
            skipped[name] = f"{type(exc).__name__}: {exc}"
    return versions, skipped


@dataclass(frozen=True)
class ArrayOps:
    """The few functions the workloads need, from one library."""

    sin: Callable[[Any], Any]
    tanh: Callable[[Any], Any]
    total: Callable[[Any], Any]
    matmul: Callable[[Any, Any], Any]


def library_ops(name: str) -> ArrayOps:
    """The library's own sin, tanh, sum and matmul."""
    if name == "nodegrad":
        import nodegrad as ng

        return ArrayOps(ng.sin, ng.tanh, ng.sum, ng.matmul)
    if name == "torch":
        import torch

        return ArrayOps(torch.sin, torch.tanh, torch.sum, torch.matmul)
    if name == "autograd":
        import autograd.numpy as anp

        return ArrayOps(anp.sin, anp.tanh, anp.sum, anp.matmul)
    if name == "mygrad":
        import mygrad as mg

        return ArrayOps(mg.sin, mg.tanh, mg.sum, mg.matmul)
    if name == "jax":
        import jax.numpy as jnp

        return ArrayOps(jnp.sin, jnp.tanh, jnp.sum, jnp.matmul)
    msg = f"no ops for library {name!r}"
    raise ValueError(msg)


# -- differentiation harnesses: one per library, shared by every workload -------------------

Step = Callable[[], Any]
Loss = Callable[..., Any]


def all_positions(args: Sequence[Any]) -> tuple[int, ...]:
    return tuple(range(len(args)))


def gradient_step_nodegrad(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    import nodegrad as ng

    grad = ng.grad(loss, argnums=all_positions(args))
    return lambda: grad(*args)


def gradient_step_torch(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    import torch

    leaves = [torch.from_numpy(a).requires_grad_() for a in args]
    return lambda: torch.autograd.grad(loss(*leaves), leaves)


def gradient_step_autograd(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    import autograd

    grad = autograd.grad(loss, argnum=all_positions(args))
    return lambda: grad(*args)


def gradient_step_mygrad(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    import mygrad as mg

    def step() -> list[Any]:
        leaves = [mg.Tensor(a, copy=False) for a in args]
        loss(*leaves).backward()
        return [leaf.grad for leaf in leaves]

    return step


def gradient_step_jax(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    import jax

    grad = jax.grad(loss, argnums=all_positions(args))
    if jit:
        grad = jax.jit(grad)
    device_args = [jax.device_put(a) for a in args]
    return lambda: jax.block_until_ready(grad(*device_args))


GRADIENT_STEPS: dict[str, Callable[[Loss, Sequence[Any], bool], Step]] = {
    "nodegrad": gradient_step_nodegrad,
    "torch": gradient_step_torch,
    "autograd": gradient_step_autograd,
    "mygrad": gradient_step_mygrad,
    "jax": gradient_step_jax,
}


def as_numpy(value: Any) -> Any:
    """Gradients of any library as numpy arrays (tuples and lists become tuples)."""
    if isinstance(value, (tuple, list)):
        return tuple(as_numpy(v) for v in value)
    if isinstance(value, dict):  # W4: compared key by key, in insertion order
        return tuple(as_numpy(v) for v in value.values())
    if hasattr(value, "detach"):  # torch
        return value.detach().numpy()
    return np.asarray(value)


# -- W1 and W5: chains of cheap elementwise ops ----------------------------------------------


def mixed_chain(x: Any, ops: ArrayOps, blocks: int) -> Any:
    """``blocks`` repeats of [sin(x), x * 1.01, tanh(x), x + 0.5]: 4 ops each."""
    for _ in range(blocks):
        x = ops.sin(x)
        x = x * 1.01
        x = ops.tanh(x)
        x = x + 0.5
    return x


def chain_steps(libraries: Sequence[str], blocks: int, jit: bool) -> dict[str, Callable[[], Step]]:
    """A step builder per library for the chain of ``4 * blocks`` ops on 4 elements."""
    x0 = np.array([0.1, 0.2, 0.3, 0.4])

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            ops = library_ops(name)
            loss = lambda x: ops.total(mixed_chain(x, ops, blocks))
            return GRADIENT_STEPS[name](loss, [x0], jit)

        return build

    return {name: builder(name) for name in libraries if name in GRADIENT_STEPS}


# -- W2: MLP with softmax cross-entropy --------------------------------------------------------


def mlp_inputs(layers: Sequence[int], batch: int, dtype: Any) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Parameters [w1, b1, w2, b2, w3, b3], a batch of inputs and integer labels."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in itertools.pairwise(layers):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(dtype))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(dtype))
    x = rng.standard_normal((batch, layers[0])).astype(dtype)
    labels = rng.integers(0, layers[-1], size=batch)
    return params, x, labels


def mlp_logits(params: Sequence[Any], x: Any, ops: ArrayOps) -> Any:
    """tanh hidden layers, linear output layer."""
    h = x
    n_layers = len(params) // 2
    for k in range(n_layers):
        h = ops.matmul(h, params[2 * k]) + params[2 * k + 1]
        if k < n_layers - 1:
            h = ops.tanh(h)
    return h


def mlp_numpy_loss_and_grads(params: Sequence[np.ndarray], x: np.ndarray, labels: np.ndarray) -> tuple[Any, ...]:
    """Hand-written forward and backward of the 3-layer MLP; returns (loss, grads)."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    logits = h2 @ w3 + b3
    batch, rows = len(labels), np.arange(len(labels))
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    norm = exp.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(norm[:, 0]) - shifted[rows, labels])
    d_logits = (exp / norm - (np.arange(logits.shape[1]) == labels[:, None])) / batch
    d_w3, d_b3 = h2.T @ d_logits, d_logits.sum(axis=0)
    d_a2 = (d_logits @ w3.T) * (1 - h2 * h2)
    d_w2, d_b2 = h1.T @ d_a2, d_a2.sum(axis=0)
    d_a1 = (d_a2 @ w2.T) * (1 - h1 * h1)
    d_w1, d_b1 = x.T @ d_a1, d_a1.sum(axis=0)
    return loss, (d_w1, d_b1, d_w2, d_b2, d_w3, d_b3)


def mlp_loss_nodegrad(x: np.ndarray, labels: np.ndarray) -> Loss:
    import nodegrad as ng

    ops = library_ops("nodegrad")
    return lambda *params: ng.cross_entropy(mlp_logits(params, x, ops), labels)


def mlp_loss_torch(x: np.ndarray, labels: np.ndarray) -> Loss:
    import torch

    ops, x_t, labels_t = library_ops("torch"), torch.from_numpy(x), torch.from_numpy(labels)
    return lambda *params: torch.nn.functional.cross_entropy(mlp_logits(params, x_t, ops), labels_t)


def mlp_loss_autograd(x: np.ndarray, labels: np.ndarray) -> Loss:
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    ops, rows = library_ops("autograd"), np.arange(len(labels))

    def loss(*params: Any) -> Any:
        logits = mlp_logits(params, x, ops)
        log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(log_probs[rows, labels])

    return loss


def mlp_loss_mygrad(x: np.ndarray, labels: np.ndarray) -> Loss:
    from mygrad.nnet.losses import softmax_crossentropy

    ops = library_ops("mygrad")
    return lambda *params: softmax_crossentropy(mlp_logits(params, x, ops), labels)


def mlp_loss_jax(x: np.ndarray, labels: np.ndarray) -> Loss:
    import jax
    import jax.numpy as jnp

    ops, x_j, labels_j = library_ops("jax"), jnp.asarray(x), jnp.asarray(labels)

    def loss(*params: Any) -> Any:
        log_probs = jax.nn.log_softmax(mlp_logits(params, x_j, ops), axis=1)
        return -jnp.mean(jnp.take_along_axis(log_probs, labels_j[:, None], axis=1))

    return loss


MLP_LOSSES: dict[str, Callable[[np.ndarray, np.ndarray], Loss]] = {
    "nodegrad": mlp_loss_nodegrad,
    "torch": mlp_loss_torch,
    "autograd": mlp_loss_autograd,
    "mygrad": mlp_loss_mygrad,
    "jax": mlp_loss_jax,
}


def mlp_steps(
    libraries: Sequence[str], layers: Sequence[int], batch: int, dtype: Any, jit: bool
) -> dict[str, Callable[[], Step]]:
    """A step builder per library (the hand-written numpy one first) for one MLP step."""
    params, x, labels = mlp_inputs(layers, batch, dtype)

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            if name == "numpy":
                return lambda: mlp_numpy_loss_and_grads(params, x, labels)[1]
            return GRADIENT_STEPS[name](MLP_LOSSES[name](x, labels), params, jit)

        return build

    names = ["numpy", *(name for name in libraries if name in MLP_LOSSES)]
    return {name: builder(name) for name in names}


# -- W3: a 10-op chain on a large array ---------------------------------------------------------


def bounded_chain(x: Any, ops: ArrayOps) -> Any:
    """[sin, x * 1.01, tanh, x + 0.5] twice, then [sin, tanh]: 10 ops, values stay in [-1, 2]."""
    x = mixed_chain(x, ops, 2)
    return ops.tanh(ops.sin(x))


def bounded_chain_numpy_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
    """Hand-written forward and backward of :func:`bounded_chain` followed by a sum.

    The forward keeps only what the backward reads (sin needs its input, tanh its
    output); the backward multiplies by one derivative factor per op.
    """
    t1 = np.tanh(np.sin(x) * 1.01)
    u1 = t1 + 0.5
    t2 = np.tanh(np.sin(u1) * 1.01)
    u2 = t2 + 0.5
    t3 = np.tanh(np.sin(u2))
    total = t3.sum()
    g = 1.0 - t3 * t3  # d total / d t3 is 1
    g = g * np.cos(u2)
    g = g * (1.0 - t2 * t2)
    g = g * 1.01
    g = g * np.cos(u1)
    g = g * (1.0 - t1 * t1)
    g = g * 1.01
    g = g * np.cos(x)
    return total, g


def bounded_chain_steps(libraries: Sequence[str], n: int, jit: bool) -> dict[str, Callable[[], Step]]:
    """A step builder per library (the hand-written numpy one first) for the large chain."""
    x0 = np.random.default_rng(0).standard_normal(n)

    def builder(name: str) -> Callable[[], Step]:
        def build() -> Step:
            if name == "numpy":
                return lambda: bounded_chain_numpy_grad(x0)[1]
            ops = library_ops(name)
            return GRADIENT_STEPS[name](lambda x: ops.total(bounded_chain(x, ops)), [x0], jit)

        return build

    names = ["numpy", *(name for name in libraries if name in GRADIENT_STEPS)]
    return {name: builder(name) for name in names}


# -- W4: a dict of parameters ---------------------------------------------------------------------


def dict_inputs(count: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(4)
    return {f"w{k}": rng.standard_normal((8, 8)) for k in range(count)}, rng.standard_normal(8)


def dict_loss(params: dict[str, Any], x: Any, ops: ArrayOps) -> Any:
    """The sum over keys of ``sum(tanh(W_k @ x))``."""
    total = 0.0
    for w in params.values():
        total = total + ops.total(ops.tanh(ops.matmul(w, x)))
    return total


def dict_step(name: str, params: dict[str, np.ndarray], x: np.ndarray) -> Step:
    """The gradient of :func:`dict_loss` with respect to the dict, in each library's own way."""
    ops = library_ops(name)
    loss = lambda p: dict_loss(p, x, ops)
    if name == "nodegrad":
        import nodegrad as ng

        grad = ng.grad(loss)
        return lambda: grad(params)
    if name == "torch":
        import torch

        leaves = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
        xt = torch.from_numpy(x)
        return lambda: dict(
            zip(leaves, torch.autograd.grad(dict_loss(leaves, xt, ops), list(leaves.values())), strict=True)
        )
    if name == "autograd":
        import autograd

        grad = autograd.grad(loss)
        return lambda: grad(params)
    if name == "mygrad":
        import mygrad as mg

        def step() -> dict[str, Any]:
            leaves = {k: mg.Tensor(v, copy=False) for k, v in params.items()}
            dict_loss(leaves, x, ops).backward()
            return {k: t.grad for k, t in leaves.items()}

        return step
    if name == "jax":
        import jax

        grad = jax.grad(loss)
        device_params = jax.device_put(params)
        return lambda: jax.block_until_ready(grad(device_params))
    msg = f"no W4 step for {name!r}"
    raise ValueError(msg)


def dict_steps(libraries: Sequence[str], count: int) -> dict[str, Callable[[], Step]]:
    params, x = dict_inputs(count)
    return {name: (lambda name=name: dict_step(name, params, x)) for name in libraries if name in GRADIENT_STEPS}


# -- W6: a sampled batch from a dict of columns, written in plain numpy -------------------------

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
    if name == "nodegrad":
        import nodegrad as ng

        grad = ng.grad(gather_loss, argnums=(0, 1) if wrt_cols else 0)
        return lambda: grad(w, cols, idx)
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
    names = ["numpy", *(name for name in libraries if name in GRADIENT_STEPS)]
    steps = {name: (lambda name=name: gather_step(name, wrt_cols, w, cols, idx)) for name in names}
    if not wrt_cols:
        steps[PREFIX] = lambda: lambda: gather_prefix(cols, idx)
    return steps


def gather_prefix(cols: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """The calls of :func:`gather_loss` up to ``z``: with respect to w alone they run on
    plain arrays in every library, the hand-written baseline included."""
    xb = cols["x"][idx]
    return np.concatenate([xb, np.where(xb > 0, xb, LEAK * xb)], axis=1)


# -- the hand-written references are checked before anything is timed --------------------------


def as_array_tuple(value: Any) -> tuple[np.ndarray, ...]:
    """Every array of a gradient, nested tuples and dicts (W6's (d_w, {"x", "y"})) flattened."""
    value = as_numpy(value)
    if not isinstance(value, tuple):
        return (value,)
    return tuple(array for item in value for array in as_array_tuple(item))


def max_relative_error(got: Any, ref: Any) -> float:
    """Largest absolute difference over all arrays, relative to the largest reference entry."""
    got, ref = as_array_tuple(got), as_array_tuple(ref)
    if len(got) != len(ref) or any(np.shape(g) != np.shape(r) for g, r in zip(got, ref, strict=True)):
        return float("inf")
    diff = max(float(np.max(np.abs(g - r), initial=0.0)) for g, r in zip(got, ref, strict=True))
    scale = max(float(np.max(np.abs(r), initial=0.0)) for r in ref)
    if diff == 0.0:
        return 0.0
    return diff / scale if scale else float("inf")  # NaN stays NaN and fails every check


def verify_hand_written_references(sizes: Sizes) -> None:
    """Assert that the hand-written numpy gradients equal nodegrad's (tight tolerance)."""
    import nodegrad as ng

    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        params, x, labels = mlp_inputs(sizes.layers, sizes.batch, dtype)
        loss = mlp_loss_nodegrad(x, labels)
        value, grads = ng.value_and_grad(loss, argnums=all_positions(params))(*params)
        hand_value, hand_grads = mlp_numpy_loss_and_grads(params, x, labels)
        error = max(max_relative_error(grads, hand_grads), abs(float(value) - float(hand_value)) / abs(float(value)))
        assert all(g.dtype == dtype for g in hand_grads), "hand-written MLP gradients changed dtype"
        assert error <= tol, f"hand-written MLP gradients ({np.dtype(dtype)}) differ from nodegrad's: {error:.2e}"
    x0 = np.random.default_rng(1).standard_normal(1000)
    ops = library_ops("nodegrad")
    grads = ng.grad(lambda x: ops.total(bounded_chain(x, ops)))(x0)
    error = max_relative_error(grads, bounded_chain_numpy_grad(x0)[1])
    assert error <= 1e-12, f"hand-written chain gradient differs from nodegrad's: {error:.2e}"
    w, cols, idx = gather_inputs(sizes.gather_rows, sizes.gather_features, sizes.gather_batch)
    assert len(np.unique(idx)) < len(idx), "W6 needs repeated row indices to check the scatter"
    for wrt_cols in (False, True):
        value, grads = ng.value_and_grad(gather_loss, argnums=(0, 1) if wrt_cols else 0)(w, cols, idx)
        hand_value, hand_grads = gather_numpy_loss_and_grads(w, cols, idx, wrt_cols)
        error = max(max_relative_error(grads, hand_grads), abs(float(value) - float(hand_value)) / abs(float(value)))
        assert error <= 1e-12, f"hand-written W6 gradients (wrt_cols={wrt_cols}) differ from nodegrad's: {error:.2e}"


# -- cases, timing and results ------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """Problem sizes and timing rounds of one run."""

    chain_blocks: int = 250  # W1: 4 ops per block
    deep_blocks: int = 25_000  # W5
    layers: tuple[int, ...] = (784, 256, 256, 10)
    batch: int = 64
    big_n: int = 10_000_000  # W3
    dict_params: int = 200  # W4
    gather_rows: int = 10_000  # W6: rows of the columns, features of "x", rows sampled per step
    gather_features: int = 16
    gather_batch: int = 4096
    # Timed runs: ``rounds`` rounds, each running every library ``runs_per_round`` times.
    rounds: dict[str, int] = field(default_factory=lambda: {"W1": 10, "W2": 10, "W3": 7, "W4": 10, "W5": 3, "W6": 10})
    runs_per_round: dict[str, int] = field(
        default_factory=lambda: {"W1": 10, "W2": 10, "W3": 1, "W4": 5, "W5": 1, "W6": 10}
    )
    judge_targets: bool = True  # the targets are defined for these sizes only

    def timing(self, key: str) -> tuple[int, int]:
        """Rounds and runs per round of workload ``key``."""
        return self.rounds[key], self.runs_per_round[key]


QUICK = Sizes(
    chain_blocks=25,
    deep_blocks=250,
    layers=(64, 32, 32, 10),
    batch=8,
    big_n=100_000,
    dict_params=10,
    gather_rows=500,
    gather_batch=200,
    rounds={"W1": 1, "W2": 1, "W3": 1, "W4": 1, "W5": 1, "W6": 1},
    runs_per_round={"W1": 1, "W2": 1, "W3": 1, "W4": 1, "W5": 1, "W6": 1},
    judge_targets=False,
)


@dataclass(frozen=True)
class Case:
    """One block of the table: the same computation in every library."""

    key: str  # what --only selects
    title: str
    baseline: str
    unit: str  # "µs/op", "µs/param" or "ms"
    ops_per_run: int  # time per run is divided by this for the "µs/..." units
    target: float | None  # nodegrad's ratio to the baseline should not exceed this
    rounds: int
    runs_per_round: int
    builders: dict[str, Callable[[], Step]]
    tolerance: float  # for the check column, see max_relative_error
    jit: bool  # whether JAX compiles the step (the others have no such switch)


@dataclass
class Row:
    """The result of one library on one case (times in seconds)."""

    case: str
    library: str
    variant: str = ""  # "jit" or "eager" for JAX
    best_s: float | None = None
    median_s: float | None = None
    runs: int = 0
    value: float | None = None  # best time in the case's unit
    median_value: float | None = None
    unit: str = ""
    ratio: float | None = None
    baseline: str = ""
    target: float | None = None
    met: bool | None = None
    check: str = ""
    error: str = ""


def w1_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    ops = 4 * sizes.chain_blocks
    steps = chain_steps(libraries, sizes.chain_blocks, jit=False)
    title = f"W1 per-op overhead, {ops:,}-op chain on 4 float64"
    return [Case("W1", title, "torch", "µs/op", ops, 0.8, *sizes.timing("W1"), steps, 1e-9, jit=False)]


def w2_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    layers = "-".join(map(str, sizes.layers))
    cases = []
    for dtype, tolerance in ((np.float32, 1e-4), (np.float64, 1e-9)):
        steps = mlp_steps(libraries, sizes.layers, sizes.batch, dtype, jit=True)
        title = f"W2 MLP {layers}, batch {sizes.batch}, {np.dtype(dtype).name}"
        cases.append(Case("W2", title, "numpy", "ms", 1, 1.3, *sizes.timing("W2"), steps, tolerance, jit=True))
    return cases


def w3_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    steps = bounded_chain_steps(libraries, sizes.big_n, jit=True)
    title = f"W3 10-op chain on {sizes.big_n:,} float64"
    return [Case("W3", title, "numpy", "ms", 1, 1.10, *sizes.timing("W3"), steps, 1e-9, jit=True)]


def w4_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    steps = dict_steps(libraries, sizes.dict_params)
    title = f"W4 dict of {sizes.dict_params} (8, 8) parameters, gradient as a dict"
    n = sizes.dict_params
    return [Case("W4", title, "torch", "µs/param", n, 1.0, *sizes.timing("W4"), steps, 1e-9, jit=False)]


def w5_case(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    ops = 4 * sizes.deep_blocks
    steps = chain_steps(libraries, sizes.deep_blocks, jit=False)
    title = f"W5 deep graph, {ops:,}-op chain on 4 float64"
    return [Case("W5", title, "torch", "µs/op", ops, None, *sizes.timing("W5"), steps, 1e-9, jit=False)]


def w6_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case]:
    what = f"W6 {sizes.gather_batch:,} of {sizes.gather_rows:,} rows, where/concatenate/matmul/MSE"
    cases = []
    for wrt_cols, wrt in ((False, "w"), (True, "w and the columns dict")):
        steps = gather_steps(libraries, sizes.gather_rows, sizes.gather_features, sizes.gather_batch, wrt_cols)
        title = f"{what}, grad w.r.t. {wrt}"
        cases.append(Case("W6", title, "numpy", "ms", 1, 1.0, *sizes.timing("W6"), steps, 1e-9, jit=True))
    return cases


WORKLOADS: dict[str, Callable[[Sizes, Sequence[str]], list[Case]]] = {
    "W1": w1_case,
    "W2": w2_cases,
    "W3": w3_case,
    "W4": w4_case,
    "W5": w5_case,
    "W6": w6_cases,
}


def time_runs(step: Step, runs: int) -> list[float]:
    """Seconds of each of ``runs`` back-to-back runs; a run's result is freed inside its timing."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"failed: {type(exc).__name__}: {text[:100]}"


def prepare_library(case: Case, name: str, reference: Any) -> tuple[Row, Step | None, Any]:
    """Build the step and run it once (the warm-up), checking its gradient against ``reference``.

    Returns the row, the step (``None`` if it failed) and the gradient as numpy arrays.
    """
    variant = ("jit" if case.jit else "eager") if name == "jax" else ""
    row = Row(case.title, name, variant, unit=case.unit, baseline=case.baseline)
    try:
        step = case.builders[name]()
        grads = as_numpy(step())
    except Exception as exc:  # a library failing a workload is a result, not a crash
        row.error = short_error(exc)
        return row, None, None
    if name == PREFIX:
        row.check = "part of every run"
        return row, step, None
    if reference is None:
        row.check = "reference"
    else:
        error = max_relative_error(grads, reference)
        row.check = "ok" if error <= case.tolerance else f"MISMATCH {error:.1e}"
    return row, step, grads


def time_in_rounds(case: Case, steps: dict[str, Step], rows: dict[str, Row]) -> dict[str, list[float]]:
    """Time every step in interleaved rounds, so that a burst of load from another process
    hits all libraries alike instead of the one that happened to be running.

    The collector runs once before the first round, not before each run: a full collection
    walks every object of every imported library and evicts the caches, which would add
    about 0.2 ms to a sub-millisecond step.
    """
    times: dict[str, list[float]] = {name: [] for name in steps}
    gc.collect()
    for _ in range(case.rounds):
        for name, step in list(steps.items()):
            try:
                times[name].extend(time_runs(step, case.runs_per_round))
            except Exception as exc:  # e.g. memory running out on a later run
                rows[name].error = short_error(exc)
                del steps[name], times[name]
    return times


def run_case(case: Case, judge_targets: bool) -> list[Row]:
    """Every library on one case. The baseline is prepared first: its gradient is the check's reference."""
    order = sorted(case.builders, key=lambda name: name != case.baseline)
    rows: dict[str, Row] = {}
    steps: dict[str, Step] = {}
    reference = None
    for name in order:
        print(f"  {case.title}: {display_name(name)} ...", file=sys.stderr, flush=True)
        rows[name], step, grads = prepare_library(case, name, reference)
        if step is not None:
            steps[name] = step
            reference = grads if reference is None else reference
        del grads
    print(f"  {case.title}: timing {case.rounds} x {case.runs_per_round} runs", file=sys.stderr, flush=True)
    scale = (1e6 / case.ops_per_run) if case.unit.startswith("µs/") else 1e3
    for name, times in time_in_rounds(case, steps, rows).items():
        row = rows[name]
        row.best_s, row.median_s, row.runs = min(times), statistics.median(times), len(times)
        row.value, row.median_value = row.best_s * scale, row.median_s * scale
    del steps, reference
    gc.collect()
    base = rows.get(case.baseline)
    for row in rows.values():
        if base is not None and base.best_s and row.best_s is not None:
            row.ratio = row.best_s / base.best_s
        if row.library == "nodegrad" and case.target is not None:
            row.target = case.target
            row.met = None if row.ratio is None or not judge_targets else row.ratio <= case.target
    return list(rows.values())


# -- report ---------------------------------------------------------------------------------------


def environment_report(
    versions: dict[str, str], skipped: dict[str, str], sizes: Sizes, refaults: int
) -> dict[str, Any]:
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    relaunched = os.environ.get(RELAUNCH_MARK, "")
    torch_threads = None
    if "torch" in versions:
        import torch

        torch_threads = torch.get_num_threads()
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": core_count(),
        "numpy_blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "versions": versions,
        "skipped": skipped,
        "malloc": {k: os.environ.get(k) for k in MALLOC_VARS},
        "threads": {**{k: os.environ.get(k) for k in THREAD_VARS}, "torch.get_num_threads": torch_threads},
        "set_by_script": relaunched.split(",") if relaunched else [],
        "refaults_80MB": refaults,
        "rounds": sizes.rounds,
        "runs_per_round": sizes.runs_per_round,
        "timing": "time.perf_counter; 1 warm-up run, then libraries interleaved in rounds; min (ratios) and "
        "median of all runs; gc enabled, gc.collect() once before the rounds",
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def print_header(env: dict[str, Any]) -> None:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    print(f"nodegrad benchmarks, {env['date']}")
    print(f"machine: {env['cpu']}, {env['cores']} cores; {env['platform']}; Python {env['python']}")
    print(f"libraries: {versions}; numpy BLAS: {env['numpy_blas']}")
    for name, reason in env["skipped"].items():
        print(f"skipped: {name} ({reason})")
    by = f" (set by this script: {', '.join(env['set_by_script'])})" if env["set_by_script"] else " (as given)"
    malloc = " ".join(f"{k}={v}" for k, v in env["malloc"].items())
    reuse = "yes" if env["refaults_80MB"] < 10 else "NO"
    print(f"malloc: {malloc}; freed 80 MB buffer reused: {reuse} ({env['refaults_80MB']} page faults refilling it)")
    threads = " ".join(f"{k}={v}" for k, v in env["threads"].items())
    print(f"threads: {threads}{by}")
    rounds = ", ".join(f"{k} {n}x{env['runs_per_round'][k]}" for k, n in env["rounds"].items())
    print(f"timing: {env['timing']}; rounds x runs per round: {rounds}")


def format_row(row: Row) -> list[str]:
    """The table cells of a row that has times."""
    target = f"<= {row.target:.2f}x" if row.target is not None else ""
    met = {None: "n/a" if row.target is not None else "", True: "yes", False: "NO"}[row.met]
    ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "n/a"
    return [
        display_name(row.library, row.variant),
        f"{row.value:,.3f}",
        f"{row.median_value:,.3f}",
        row.unit,
        ratio,
        target,
        met,
        row.check,
    ]


TABLE_HEADERS = ("library", "min", "median", "unit", "ratio", "target", "met?", "check")
LEFT_ALIGNED = (0, 3, 7)


def table_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    padded = (
        c.ljust(w) if i in LEFT_ALIGNED else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )
    return "  " + "  ".join(padded).rstrip()


def print_table(rows: list[Row]) -> None:
    """One block per case: a title line naming the baseline, then a line per library."""
    cells = {id(r): format_row(r) for r in rows if not r.error}
    widths = [max([len(h), *(len(c[i]) for c in cells.values())]) for i, h in enumerate(TABLE_HEADERS)]
    widths[0] = max([widths[0], *(len(display_name(r.library, r.variant)) for r in rows)])
    case = None
    for row in rows:
        if row.case != case:
            case = row.case
            print(f"\n{case}: ratio to {display_name(row.baseline)}")
            print(table_line(TABLE_HEADERS, widths))
        if row.error:
            print(f"  {display_name(row.library, row.variant).ljust(widths[0])}  {row.error}")
        else:
            print(table_line(cells[id(row)], widths))


# -- main ---------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and one timed run (smoke test)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--json", metavar="PATH", help="also write the environment and results as JSON")
    parser.add_argument("--rounds", type=int, help="timing rounds for every workload (see Sizes)")
    parser.add_argument(
        "--threads", type=int, help="BLAS/OpenMP/torch threads for every library (default: $OMP_NUM_THREADS or 1)"
    )
    args = parser.parse_args(argv)
    args.only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    unknown = args.only - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workload(s) {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    for name in ("rounds", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    relaunch_with_environment(args.threads)
    sizes = QUICK if args.quick else Sizes()
    if args.rounds:
        sizes = replace(sizes, rounds=dict.fromkeys(sizes.rounds, args.rounds))
    refaults = refault_count()
    versions, skipped = available_libraries(int(os.environ["OMP_NUM_THREADS"]))
    env = environment_report(versions, skipped, sizes, refaults)
    print_header(env)
    verify_hand_written_references(sizes)
    print("check: hand-written numpy gradients equal nodegrad's (MLP float32/float64, W3 chain, W6 both variants)")
    libraries = ["nodegrad", *(name for name in PEERS if name in versions)]
    rows = []
    for key, make_cases in WORKLOADS.items():
        if key in args.only:
            for case in make_cases(sizes, libraries):
                rows.extend(run_case(case, sizes.judge_targets))
    print_table(rows)
    if not sizes.judge_targets:
        print("\n(--quick: sizes differ from the targets' definitions, so met? is n/a)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "results": [asdict(r) for r in rows]}, f, indent=2)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
