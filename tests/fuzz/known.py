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
UNBATCHED_OPS = (  # work under grad; under vmap, a BatchingError, NoGradientError, TypeError or RecursionError
    "all",
    "any",
    "apply_along_axis",
    "bincount",
    "broadcast_arrays",
    "corrcoef",
    "cov",
    "flatten_f",
    "fmax",
    "frexp",
    "full_like",
    "interp",
    "isin",
    "median",
    "meshgrid",
    "modf",
    "nan_to_num",
    "norm_logpdf",
    "partition",
    "percentile",
    "piecewise",
    "quantile",
    "select",
)
FORWARD_STACKS = ("vmap(jvp)", "vmap(jacfwd)")
FORWARD_ZERO_OPS = ("det", "cond", "qr", "qr_q", "svd", "svd_u", "eigh", "eigh_vectors", "eigvalsh", "eigvals", "norm2")
STALE = {
    "formatting a staged value gives the recording's text, str/repr give Staged(slot ...)": (
        "fstring_spec",
        "str_format",
        "format_builtin",
        "str_repr",
        "savetxt",
    ),
    "a numpy scalar argument is staged while recording, so isinstance(s, float) is False": ("isinstance_scalar",),
    "0.0 and -0.0 share a signature": ("signed_zero", "static_signed_zero"),
    "an attribute or protocol of a staged value fails while recording with a foreign error": (
        "flags",
        "strides",
        "base",
        "data",
        "ctypes",
        "array_interface",
        "is_integer",
        "divmod",
        "bytes",
    ),
    "ufunc.at into an array made inside the function writes into the recording's buffer": ("add_at", "maximum_at"),
    "a Generator reached by a closure is frozen when the replayed function is a transform": (
        "generator_grad",
        "generator_value_and_grad",
        "generator_vmap",
        "bitgenerator_closure",
    ),
    "a Series' or DataFrame's index is not part of the signature; a Series comes back an ndarray": (
        "series_arithmetic",
        "series_loc",
        "frame_index_name",
    ),
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
        "indexing an unbatched array with a batched integer index (an embedding lookup) raises BatchingError "
        "under vmap (under vmap(hessian) after eigvalsh: LeakedTracerError)",
    ),
    **pairs(
        BATCHED_STACKS,
        UNBATCHED_OPS,
        "works under grad, fails under vmap: np.any/np.all, full_like (RecursionError), the scipy.stats "
        "distributions, median, percentile, quantile, partition, interp, cov, corrcoef, select, piecewise, "
        "meshgrid, broadcast_arrays, apply_along_axis, isin, bincount, nan_to_num, fmax, frexp, modf, flatten('F')",
    ),
    **pairs(
        FORWARD_STACKS,
        FORWARD_ZERO_OPS,
        "forward mode inside vmap gives zero tangents through det, eigh, eigvalsh, eigvals, svd, qr, norm(ord=2), cond",
    ),
    **pairs(
        ("vmap(grad)", "vmap(grad, chunk_size=2)", "vmap(jvp)", "vmap(jacfwd)", "vmap(hessian)", "replay(vmap(grad))"),
        ("where",),
        "np.where(x > w, x, w) with both batched and w differentiated returns a Batched object from "
        "vmap(grad), vmap(jvp), vmap(jacfwd), vmap(hessian) and replay(vmap(grad)) "
        "(with chunk_size: LeakedTracerError)",
    ),
    **pairs(
        ("vmap(hessian)",),
        ("norm2", "eigvalsh", "eigvals", "eigh", "qr"),
        "vmap(hessian) through norm(ord=2), eigvals, or eigvalsh or qr then an index, raises LeakedTracerError",
    ),
    **pairs(
        ("vmap(grad)", "vmap(grad, chunk_size=2)"),
        ("polyval",),
        "vmap(grad) of a float32 function through np.polyval returns float64 (grad and the loop keep float32)",
    ),
    **pairs(
        ("vmap(grad)", "vmap(grad, chunk_size=2)", "grad(sum(vmap))", "vmap(jvp)", "vmap(jacfwd)", "vmap(hessian)"),
        ("flatten_f",),
        "x.flatten('F') raises TypeError under grad too",
    ),
    ("vmap(chunk_size=2, out_axes=-1)", "*"): "chunk_size with out_axes=-1 writes the chunks along axis 0 "
    "(a foreign ValueError when the chunks do not divide the batch)",
    **{(f"stale:{case}", "*"): reason for reason, cases in STALE.items() for case in cases},
}


def skipped(stack: str, ops: set[str]) -> str | None:
    """Why ``stack`` is not run on a program of ``ops`` in the suite, or None."""
    for op in sorted(ops | {"*"}):
        reason = KNOWN.get((stack, op))
        if reason:
            return reason
    return None
