"""The libraries compared: which import, their ops, their gradient steps, their gradients as numpy.

Every workload is built from these: :func:`library_ops` gives a library's own sin, tanh,
sum and matmul, :data:`GRADIENT_STEPS` turns a loss and its arguments into a step that
computes the gradient with respect to every argument in that library's own way, and
:func:`max_relative_error` compares any library's gradient with the baseline's (the
"check" column).

The replay rows (:data:`REPLAY`, W0, W1, W2, W4, W6 and W7) call nodegrad's own gradient
function through ``ng.replay``: :func:`replayed_step` records it when the step is built,
so that the warm-up and every timed or measured call is a replay, and
:func:`replay_check` compares a replay's gradient with eager nodegrad's.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

PEERS = ("torch", "autograd", "mygrad", "jax")
# A row that times only the part of a workload every library runs as the same plain numpy
# calls (W6 with respect to w: the columns are not traced). It computes no gradient; it
# shows how much of the baseline's time no library can change.
PREFIX = "prefix"
# A row that evaluates the loss and no gradient, for scale (W14: the pipeline on plain pandas).
FORWARD = "pandas"
# The check cell of the rows that compute no gradient to compare.
NO_GRADIENT = {PREFIX: "part of every run", FORWARD: "forward only"}

# nodegrad without vmap: the baselines of W9 (a loop of ng.grad over the examples), W10 (a
# loop of VJP back calls, one per row of the Jacobian) and W11 (the call without chunk_size).
LOOP, VJP_LOOP, UNCHUNKED = "loop", "vjp_loop", "unchunked"

# nodegrad's gradient function under ``ng.replay``, a row beside eager nodegrad's in the
# workloads that opt in (:func:`with_replay`); it runs nodegrad's own loss and ops.
REPLAY = "replay"
# The replay row's target against eager nodegrad's row (W2 and W4 in time, W7 in peak
# memory): the recorded program costs no more than the eager step it was recorded from.
NOT_ABOVE_EAGER = ("nodegrad", 1.0)

DISPLAY = {
    "numpy": "numpy (by hand)",
    "torch": "pytorch (cpu)",
    PREFIX: "shared prefix",
    FORWARD: "pandas (forward only)",
    LOOP: "nodegrad, loop of ng.grad",
    VJP_LOOP: "nodegrad, loop of vjp rows",
    UNCHUNKED: "nodegrad, unchunked",
    REPLAY: "nodegrad (replay)",
}


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
    """The library's own sin, tanh, sum and matmul (nodegrad's for the replay row)."""
    if name in ("nodegrad", REPLAY):
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


def replayed_step(fn: Callable[..., Any], args: Sequence[Any]) -> Step:
    """A step calling ``ng.replay(fn)`` on ``args``, recorded here, so that the warm-up and
    every timed (or, in W7, measured) call replays the recorded program.

    It is recorded and then replayed once here, because two ways of not replaying are
    silent and would time eager nodegrad under the replay's name: ``ng.replay`` giving up
    on the function (a ``ReplayWarning``, after which it runs eagerly) raises here, and so
    does a replay that records a second program for the same arguments (a guard that
    misses every time: each timed call would record again).
    """
    import nodegrad as ng
    from nodegrad.errors import ReplayWarning

    replayed = ng.replay(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayWarning)
        replayed(*args)  # records
        replayed(*args)  # replays
    if len(replayed.traces) != 1:
        msg = f"ng.replay recorded {len(replayed.traces)} programs for one set of arguments"
        raise RuntimeError(msg)
    return lambda: replayed(*args)


def gradient_step_replay(loss: Loss, args: Sequence[Any], jit: bool) -> Step:
    """The gradient function of :func:`gradient_step_nodegrad`, replayed."""
    import nodegrad as ng

    return replayed_step(ng.grad(loss, argnums=all_positions(args)), args)


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
    REPLAY: gradient_step_replay,
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


# -- comparing gradients --------------------------------------------------------------------


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


def with_replay(libraries: Sequence[str]) -> list[str]:
    """``libraries`` with the replay row right after nodegrad's, whose gradient it is checked against."""
    names = list(libraries)
    if "nodegrad" in names:
        names.insert(names.index("nodegrad") + 1, REPLAY)
    return names


def replay_check(got: Any, eager: Any, tolerance: float) -> str:
    """A replay's gradient against eager nodegrad's. ``ng.replay`` makes the same numpy calls
    in the same order, so "= eager" (bit for bit) is what it promises; a difference within
    ``tolerance`` is shown with its size, a larger one as a mismatch."""
    error = max_relative_error(got, eager)
    if error == 0.0:
        return "= eager"
    return f"{error:.1e} from eager" if error <= tolerance else f"MISMATCH {error:.1e} from eager"
