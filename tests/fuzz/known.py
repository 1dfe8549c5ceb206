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

#: Nothing is known to disagree today. An entry reads ``(stack, op): why``.
KNOWN: dict[tuple[str, str], str] = {}

#: Refusals ``docs/vmap.md`` lists, by mode and op: a stack that raises this error class,
#: saying this, on a program holding the op, in this mode, refuses as documented. Counted
#: apart from disagreements by the suite and the long run alike. numpy indexes a plain
#: array that a closure holds itself, so nodegrad has no hook; its error names ng.gather.
REFUSALS: dict[tuple[str, str], tuple[str, str]] = {
    ("closure", op): ("BatchingError", "ng.gather") for op in BATCHED_INDEX_OPS
}
#: The same for a scipy.sparse matrix closed over: its own operators compute a plain array
#: from an array vmap shares (scipy's kernels, no hook), which numpy then indexes itself.
SPARSE_CLOSURE_OPS = ("sparse_matmul", "sparse_rmatmul", "sparse_vecmat", "sparse_multiply", "sparse_built",
                      "sparse_built_sum")  # fmt: skip
REFUSALS.update({("args", op): ("BatchingError", "ng.gather") for op in SPARSE_CLOSURE_OPS})


def refused_as_documented(stack: str, mode: str, ops: set[str], error: BaseException) -> bool:
    """Whether ``error``, raised by ``stack`` on a program of ``ops`` in ``mode``, is a
    refusal ``docs/vmap.md`` documents."""
    if stack.startswith("eval_shape") and type(error).__name__ == "ShapeOnlyError":
        return True  # what only values answer (a value read by an op's checks, say): refused, never answered wrong
    if stack not in BATCHED_STACKS:
        return False
    for op in ops:
        kind, says = REFUSALS.get((mode, op), ("", ""))
        if kind and type(error).__name__ == kind and says in str(error):
            return True
    return False


def skipped(stack: str, ops: set[str]) -> str | None:
    """Why ``stack`` is not run on a program of ``ops`` in the suite, or None."""
    for op in sorted(ops | {"*"}):
        reason = KNOWN.get((stack, op))
        if reason:
            return reason
    return None
