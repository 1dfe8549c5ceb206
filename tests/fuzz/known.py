"""Disagreements known today, skipped by the default test suite (never by the long run
unless it is given ``--skip-known``).

Each entry is ``(stack, op): why``; ``op`` is an op name from ``tests/fuzz/ops.py`` or
``"*"`` (every program), ``stack`` a name from ``tests/fuzz/stacks.py`` or a stale-hunt
case from ``tests/fuzz/stale.py`` (with op ``"*"``). A program containing the op is not
run under that stack in the suite. Remove an entry when its class is fixed: the suite then
runs it, and ``python -m tests.fuzz`` prints it again if it still disagrees.
"""

from __future__ import annotations

BATCHED_STACKS = (
    "vmap",
    "vmap(grad)",
    "vmap(grad, chunk_size=2)",
    "grad(sum(vmap))",
    "vmap(jvp)",
    "vmap(jacfwd)",
    "vmap(hessian)",
    "vmap(chunk_size=None, out_axes=1)",
    "vmap(chunk_size=None, out_axes=-1)",
    "vmap(chunk_size=2, out_axes=0)",
    "vmap(chunk_size=2, out_axes=1)",
    "vmap(chunk_size=2, out_axes=-1)",
    "vmap(vmap)",
)
BATCHED_INDEX_OPS = ("index", "take", "index_scalar", "index_columns")
STALE = {
    "documented in docs/replay.md: values a function closes over (or reads as globals) are read when it is recorded": (
        "closure_cell",
        "closure_rebound",
        "global_array",
        "global_float",
    ),
}


def pairs(stacks: tuple[str, ...], ops: tuple[str, ...], reason: str) -> dict[tuple[str, str], str]:
    return {(stack, op): reason for stack in stacks for op in ops}


KNOWN: dict[tuple[str, str], str] = {
    **pairs(
        BATCHED_STACKS,
        BATCHED_INDEX_OPS,
        "a documented refusal (docs/vmap.md): numpy's own indexing of a plain array (one no transform traces) by "
        "a batched index gives nodegrad no hook; the BatchingError names ng.gather, which batches",
    ),
    **pairs(
        ("vmap(grad)", "vmap(grad, chunk_size=2)", "vmap(hessian)"),
        ("bincount",),
        "np.bincount with batched indices and differentiated weights shared by every example: a wrong gradient",
    ),
    **{(f"stale:{case}", "*"): reason for reason, cases in STALE.items() for case in cases},
}


def skipped(stack: str, ops: set[str]) -> str | None:
    """Why ``stack`` is not run on a program of ``ops`` in the suite, or None."""
    for op in sorted(ops | {"*"}):
        reason = KNOWN.get((stack, op))
        if reason:
            return reason
    return None
