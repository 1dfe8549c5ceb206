"""W12: one training step of a lookup table under a small MLP, with row-sparse gradients.

The parameters are ``{"table": (1,000,000, 64), "mlp": {"w1": (64, 32), "b1": (32,),
"w2": (32, 1), "b2": (1,)}}``, float64; a batch is 1,000 row ids drawn with a fixed seed
(repeats allowed, as a sampler's) and 1,000 float targets; the loss
(:func:`table_loss`) is the mean squared error of ``tanh(table[ids] @ w1 + b1) @ w2 + b2``
against the targets. One timed run is one training step: forward, gradient, and an SGD
step (learning rate :data:`LEARNING_RATE`), in each library's own way:

- "nodegrad (dense)", the baseline: ``ng.grad(table_loss)`` then ``ng.optim.sgd``. The
  table's gradient is a dense (1,000,000, 64) array, and the step writes a new table.
- "nodegrad (sparse_rows)": ``ng.grad(table_loss, sparse_rows=True)`` then
  ``ng.optim.sgd``. The table's gradient is an ``ng.RowSparse`` of the rows read, and the
  step subtracts them from the table in place (PyTorch's sparse SGD).
- "pytorch Embedding(sparse=True)": ``torch.nn.Embedding.from_pretrained(table,
  freeze=False, sparse=True)`` (the same module as ``Embedding(1_000_000, 64, sparse=True,
  dtype=torch.float64)``, started from the same table) and two ``torch.nn.Linear`` layers
  holding the same MLP; ``zero_grad()`` (``set_to_none``, PyTorch's default), the forward,
  ``loss.backward()`` and ``torch.optim.SGD``'s step, which takes the sparse gradient of
  the table and the dense ones of the MLP.
- "pytorch Embedding(sparse=False)", for reference: the same with a dense table gradient.

Every library steps its own copy of the same starting parameters, and keeps stepping them
from run to run (a step is a step: copying the 512 MB table before each run would cost
more than the sparse step itself). The warm-up run is the first step from the shared start,
and its parameters after the step (the table densely) are the "check" column, against
nodegrad's dense step.

Target: the sparse step at most 0.01x the dense one (100 times faster); its ratio to
PyTorch's sparse step is shown beside it, not judged (:data:`SHOWN_BESIDE`).

A second block, not timed, is the memory of the table's gradient
(:class:`GradientMemoryCase`, rows :class:`GradientMemoryRow`): one gradient of each
library from the starting parameters, its table part measured as the bytes it holds,
``RowSparse.nbytes`` (rows and indices) for the sparse one, ``.nbytes`` of the dense
array, and for PyTorch's sparse gradient the values' and indices' bytes after
``coalesce()`` (which sums repeated rows, as ``RowSparse`` does). Checked, densified,
against nodegrad's dense gradient of the table. Target: the sparse gradient at most 1 MiB.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .libraries import Step, as_numpy, display_name, max_relative_error
from .memory import MIB
from .timing import Case, Row, Sizes, run_case, short_error

LEARNING_RATE = 0.1
STEP_TARGET = 0.01  # the sparse step's time over the dense step's
GRADIENT_TARGET_BYTES = MIB  # the sparse gradient of the table
# A peer target that is never missed: the sparse row's ratio to PyTorch's sparse step is
# shown beside its ratio to the dense step, without a target of its own.
SHOWN_BESIDE = math.inf

# Rows of the two blocks. Keys other than "nodegrad" and "torch" are their own display
# names (display_name falls back to the key); the sparse row is "nodegrad", the one the
# targets judge, labelled with the variant it runs (LabelledCase).
DENSE = "nodegrad (dense)"
SPARSE = "nodegrad"
TORCH_SPARSE = "pytorch Embedding(sparse=True)"
TORCH_DENSE = "pytorch Embedding(sparse=False)"
SPARSE_VARIANT = "sparse_rows"

Params = dict[str, Any]


def table_inputs(rows: int, features: int, hidden: int, lookups: int) -> tuple[Params, np.ndarray, np.ndarray]:
    """The starting parameters, a batch of row ids (repeats allowed) and its targets."""
    rng = np.random.default_rng(12)
    mlp = {
        "w1": rng.standard_normal((features, hidden)) / np.sqrt(features),
        "b1": np.zeros(hidden),
        "w2": rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
        "b2": np.zeros(1),
    }
    table = rng.standard_normal((rows, features))
    ids = rng.integers(0, rows, size=lookups)
    targets = rng.standard_normal(lookups)
    return {"table": table, "mlp": mlp}, ids, targets


def table_loss(params: Params, ids: np.ndarray, targets: np.ndarray) -> Any:
    """W12's loss in plain numpy: nodegrad differentiates this very function."""
    mlp = params["mlp"]
    hidden = np.tanh(params["table"][ids] @ mlp["w1"] + mlp["b1"])
    pred = hidden @ mlp["w2"] + mlp["b2"]
    return np.mean((pred[:, 0] - targets) ** 2)


def copied(params: Params) -> Params:
    """A copy of the parameters that no other row's step can move."""
    return {"table": params["table"].copy(), "mlp": {k: v.copy() for k, v in params["mlp"].items()}}


# -- the training steps -------------------------------------------------------------------------


def nodegrad_training_step(start: Params, ids: np.ndarray, targets: np.ndarray, sparse_rows: bool) -> Step:
    """``ng.grad`` (dense, or with ``sparse_rows``) then ``ng.optim.sgd``, on a copy of
    ``start`` that each call steps further; a call returns the parameters after its step."""
    import nodegrad as ng

    grad = ng.grad(table_loss, sparse_rows=sparse_rows)
    current = [copied(start)]

    def step() -> Params:
        params = ng.optim.sgd(current[0], grad(current[0], ids, targets), LEARNING_RATE)
        current[0] = params
        return params

    return step


def torch_model(start: Params, sparse: bool, copy: bool) -> tuple[Any, Any]:
    """The embedding and the MLP as PyTorch modules holding ``start``'s values, and the
    forward ``ids -> predictions``. The table is a copy when ``copy`` (a step moves it),
    else it shares ``start``'s memory."""
    import torch

    table = torch.from_numpy(start["table"].copy() if copy else start["table"])
    embedding = torch.nn.Embedding.from_pretrained(table, freeze=False, sparse=sparse)
    mlp = start["mlp"]
    layers = []
    for w, b in (("w1", "b1"), ("w2", "b2")):
        layer = torch.nn.Linear(*mlp[w].shape, dtype=torch.float64)
        with torch.no_grad():  # Linear holds the weight transposed: it computes x @ weight.T
            layer.weight.copy_(torch.from_numpy(mlp[w].T))
            layer.bias.copy_(torch.from_numpy(mlp[b]))
        layers.append(layer)
    first, second = layers
    model = torch.nn.ModuleDict({"embedding": embedding, "first": first, "second": second})
    return model, lambda ids: second(torch.tanh(first(embedding(ids))))


def torch_parameters(model: Any) -> Params:
    """The model's parameters in nodegrad's layout (for the check column)."""
    first, second = model["first"], model["second"]
    mlp = {"w1": first.weight.T, "b1": first.bias, "w2": second.weight.T, "b2": second.bias}
    return {"table": model["embedding"].weight, "mlp": mlp}


def torch_training_step(start: Params, ids: np.ndarray, targets: np.ndarray, sparse: bool) -> Step:
    """PyTorch's step as its users write it: zero_grad, forward, backward, ``SGD.step``."""
    import torch

    model, forward = torch_model(start, sparse, copy=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    ids_t, targets_t = torch.from_numpy(ids), torch.from_numpy(targets)
    parameters = torch_parameters(model)  # views: SGD moves the parameters in place

    def step() -> Params:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(forward(ids_t)[:, 0], targets_t)
        loss.backward()
        optimizer.step()
        return parameters

    return step


def training_step(name: str, start: Params, ids: np.ndarray, targets: np.ndarray) -> Step:
    if name in (DENSE, SPARSE):
        return nodegrad_training_step(start, ids, targets, sparse_rows=name == SPARSE)
    if name in (TORCH_SPARSE, TORCH_DENSE):
        return torch_training_step(start, ids, targets, sparse=name == TORCH_SPARSE)
    raise KeyError(name)


@dataclass(frozen=True)
class LabelledCase(Case):
    """A timed case whose rows show a variant beside the library ("nodegrad (sparse_rows)")."""

    variants: dict[str, str] = field(default_factory=dict)


def run_labelled_case(case: LabelledCase, judge_targets: bool) -> list[Row]:
    rows = run_case(case, judge_targets)
    for row in rows:
        row.variant = case.variants.get(row.library, row.variant)
    return rows


# -- the memory of the table's gradient ----------------------------------------------------------


def table_gradient(name: str, start: Params, ids: np.ndarray, targets: np.ndarray) -> Callable[[], Any]:
    """A call returning the table's part of the gradient at ``start`` (nothing is stepped)."""
    if name in (DENSE, SPARSE):
        import nodegrad as ng

        grad = ng.grad(table_loss, sparse_rows=name == SPARSE)
        return lambda: grad(start, ids, targets)["table"]
    import torch

    model, forward = torch_model(start, sparse=name == TORCH_SPARSE, copy=False)
    ids_t, targets_t = torch.from_numpy(ids), torch.from_numpy(targets)
    weight = model["embedding"].weight

    def torch_gradient() -> Any:
        model.zero_grad()
        torch.nn.functional.mse_loss(forward(ids_t)[:, 0], targets_t).backward()
        return weight.grad

    return torch_gradient


def held_bytes_and_rows(gradient: Any) -> tuple[int, int]:
    """The bytes a table gradient holds, and how many rows: a RowSparse's rows and indices,
    a PyTorch sparse tensor's values and indices once coalesced, a dense array's all."""
    if hasattr(gradient, "is_sparse") and gradient.is_sparse:
        gradient = gradient.coalesce()
        values, indices = gradient._values(), gradient._indices()
        return values.nbytes + indices.nbytes, len(values)
    import nodegrad as ng

    if isinstance(gradient, ng.RowSparse):
        return gradient.nbytes, len(gradient.indices)
    dense = as_numpy(gradient)
    return dense.nbytes, len(dense)


def dense_gradient(gradient: Any) -> np.ndarray:
    if hasattr(gradient, "is_sparse") and gradient.is_sparse:
        return np.asarray(gradient.to_dense().numpy())
    return np.asarray(as_numpy(gradient))


@dataclass(frozen=True)
class GradientMemoryCase:
    """One block measured by the bytes a gradient holds: a gradient per row, the baseline first."""

    key: str
    title: str
    baseline: str
    judged: str  # the row held to target_bytes
    target_bytes: int | None
    variants: dict[str, str]
    builders: dict[str, Callable[[], Callable[[], Any]]]
    tolerance: float


@dataclass
class GradientMemoryRow:
    """The bytes of one library's table gradient."""

    case: str
    library: str
    variant: str = ""
    gradient_bytes: int | None = None
    rows_held: int | None = None
    ratio: float | None = None  # over the baseline's bytes
    baseline: str = ""
    target_bytes: int | None = None
    met: bool | None = None
    check: str = ""
    error: str = ""


def measure_gradient_memory_case(case: GradientMemoryCase, judge_targets: bool) -> list[GradientMemoryRow]:
    """Every row's table gradient, once, its bytes and its values against the baseline's."""
    rows, reference = [], None
    for name, build in case.builders.items():
        variant = case.variants.get(name, "")
        print(f"  {case.title}: {display_name(name, variant)} ...", file=sys.stderr, flush=True)
        row = GradientMemoryRow(case.title, name, variant, baseline=case.baseline)
        rows.append(row)
        try:
            gradient = build()()
            row.gradient_bytes, row.rows_held = held_bytes_and_rows(gradient)
            dense = dense_gradient(gradient)
        except Exception as exc:  # a failing row is a result, not a crash
            row.error = short_error(exc)
            continue
        if reference is None:
            reference, row.check = dense, "reference"
        else:
            error = max_relative_error(dense, reference)
            row.check = "ok" if error <= case.tolerance else f"MISMATCH {error:.1e}"
        del gradient, dense
    del reference
    base = next((r for r in rows if r.library == case.baseline and r.gradient_bytes), None)
    for row in rows:
        if base is not None and base.gradient_bytes and row.gradient_bytes is not None:
            row.ratio = row.gradient_bytes / base.gradient_bytes
        if row.library == case.judged and case.target_bytes is not None:
            row.target_bytes = case.target_bytes
            judged = judge_targets and row.gradient_bytes is not None
            row.met = row.gradient_bytes <= case.target_bytes if judged else None
    return rows


# -- the cases ------------------------------------------------------------------------------------


def w12_cases(sizes: Sizes, libraries: Sequence[str]) -> list[Case | GradientMemoryCase]:
    start, ids, targets = table_inputs(sizes.table_rows, sizes.table_features, sizes.table_hidden, sizes.lookups)
    torch_rows = (TORCH_SPARSE, TORCH_DENSE) if "torch" in libraries else ()
    names = (DENSE, SPARSE, *torch_rows)
    variants = {SPARSE: SPARSE_VARIANT}
    problem = (
        f"table {sizes.table_rows:,} x {sizes.table_features} float64, {sizes.lookups:,} lookups, "
        f"MLP {sizes.table_features}-{sizes.table_hidden}-1, MSE"
    )
    steps = {name: (lambda name=name: training_step(name, start, ids, targets)) for name in names}
    rounds, runs = sizes.timing("W12")
    timed = LabelledCase(
        key="W12",
        title=f"W12 one grad + sgd step, {problem}",
        baseline=DENSE,
        unit="ms",
        ops_per_run=1,
        target=STEP_TARGET,
        rounds=rounds,
        runs_per_round=runs,
        builders=steps,
        tolerance=1e-12,  # the parameters after one step; a step not taken is off by 6e-3
        jit=False,
        peer_target=(TORCH_SPARSE, SHOWN_BESIDE) if torch_rows else None,
        variants=variants,
    )
    gradients = {name: (lambda name=name: table_gradient(name, start, ids, targets)) for name in names}
    memory = GradientMemoryCase(
        key="W12",
        title=f"W12 memory of the table's gradient, {problem}",
        baseline=DENSE,
        judged=SPARSE,
        target_bytes=GRADIENT_TARGET_BYTES,
        variants=variants,
        builders=gradients,
        tolerance=1e-12,
    )
    return [timed, memory]


def gradient_memory_notes(rows: Sequence[GradientMemoryRow]) -> list[str]:
    """The line printed under the W12 tables: what the bytes count."""
    if not rows:
        return []
    return [
        "W12: table grad: the bytes the table's gradient holds (RowSparse.nbytes: rows and indices; PyTorch's "
        "sparse gradient: values and indices after coalesce(); a dense array: all of it); rows: rows held"
    ]
