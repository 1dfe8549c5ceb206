"""Backward: the sweep run for a transform, from the outputs' seeds to gradients handed back.

:func:`gradients` seeds the outputs (a scalar's one, a structured output's cotangent),
checks what is asked, runs :func:`~nodegrad.engine.sweep.sweep` over the arena (recording
it on the arena itself for higher-order derivatives, each rule taped whole while a replay
records), and hands the cotangents back in the inputs' own structures, with the policy for
inputs no path reaches (:class:`GradOptions`).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import attrs
import numpy as np

from nodegrad.engine.cotangents import check_seed_dtype, cotangent_for, materialize
from nodegrad.engine.record import INTERPRETERS, interpreters_running
from nodegrad.engine.rows import RowParts, coalesced, sparse_nodes
from nodegrad.engine.staged import Staged, array, now, only_staged
from nodegrad.engine.structure import (
    flatten_with_paths,
    integer_leaves,
    is_container,
    leaves,
    map_unless_static,
    zip_leaves,
)
from nodegrad.engine.sweep import sweep
from nodegrad.engine.traced import Traced, unwrap
from nodegrad.engine.whole import RecordedWhole
from nodegrad.errors import (
    ArenaError,
    ArgumentError,
    DtypeError,
    NoGradientError,
    NonFiniteError,
    ShapeError,
    StructureError,
    _CotangentShapeError,
)

__all__ = ["GradOptions", "gradients", "strict_integer_leaves"]


@attrs.frozen
class GradOptions:
    """What to do about inputs that have no gradient path to the output.

    Attributes
    ----------
    zero_missing_wrt : bool
        ``True`` (:attr:`TRAINING`, the default): such inputs get zeros of their shape and
        dtype. ``False`` (:attr:`STRICT`): raise one :class:`NoGradientError` listing the
        key path of every such input, and of every int leaf of a structure (an int is a
        static leaf, with no gradient: beside float leaves, usually ``0`` meant as ``0.0``;
        mark a record's field ``ng.field(static=True)`` when it is meant).

    Examples
    --------
    >>> import nodegrad as ng
    >>> f = lambda p: p["used"] * 2.0
    >>> ng.grad(f)({"used": 1.0, "unused": 1.0})
    {'used': 2.0, 'unused': 0.0}
    >>> ng.grad(f, options=ng.GradOptions.STRICT)({"used": 1.0, "unused": 1.0})
    Traceback (most recent call last):
    ...
    nodegrad.errors.NoGradientError: no gradient path to the output from: args[0]['unused']
    """

    zero_missing_wrt: bool = attrs.field(default=True)

    @zero_missing_wrt.validator
    def _check(self, attribute: Any, value: Any) -> None:
        if not isinstance(value, bool):
            msg = f"GradOptions.zero_missing_wrt must be True or False, got {value!r}"
            raise ArgumentError(msg)

    STRICT: ClassVar[GradOptions]
    TRAINING: ClassVar[GradOptions]


GradOptions.STRICT = GradOptions(zero_missing_wrt=False)
GradOptions.TRAINING = GradOptions(zero_missing_wrt=True)


def _seed_value(value: Any, seed: Any, path: str) -> Any:
    if type(seed) is Traced or type(seed) in INTERPRETERS:  # traced by an enclosing transform, or batched
        if seed.shape != np.shape(value):
            msg = f"the seed{' at ' + path if path else ''} has shape {seed.shape}, the output {np.shape(value)}"
            raise ShapeError(msg)
        return _typed_like(seed, value)
    if is_container(value):
        return cotangent_for(seed, value, path)
    dtype = _dtype_of(value)
    if dtype.kind not in "fc":
        msg = (
            f"cannot differentiate the output{' ' + path if path else ''} of dtype {dtype}: only "
            f"floating-point and complex outputs have gradients"
        )
        raise DtypeError(msg)
    try:
        seed_array = np.asarray(seed)
    except ValueError as exc:  # ragged nested lists
        msg = f"the seed{' at ' + path if path else ''} is not an array: {exc}"
        raise StructureError(msg) from None
    check_seed_dtype(seed_array.dtype, dtype, path)
    if seed_array.shape != np.shape(value):
        msg = (
            f"the seed{' at ' + path if path else ''} has shape {seed_array.shape} but the output has shape "
            f"{np.shape(value)}"
        )
        raise ShapeError(msg)
    # Always a copy the sweep owns: the sweep adds further cotangents into the ones it
    # owns in place, so the caller's array must never be one of them.
    return np.array(seed_array, dtype=dtype)


def _typed_like(seed: Any, value: Any) -> Any:
    """A traced seed (a cotangent an enclosing transform differentiates) with the output's
    array type and dtype, as a plain seed gets them: rules index and reshape their
    cotangent, which a weakly typed Python float does not allow. The conversion is recorded
    through numpy's dispatch, so the seed stays differentiable."""
    dtype = _dtype_of(value)
    if type(unwrap(seed)) in (float, complex):
        seed = np.multiply(seed, np.ones((), dtype))
    return seed if seed.dtype == dtype else seed.astype(dtype)


def _dtype_of(value: Any) -> np.dtype[Any]:
    """The dtype of a forward value: an array, a Python number, or a handle of an enclosing
    transform's arena (whose value it stands for)."""
    return value.dtype if type(value) is Traced or type(value) in INTERPRETERS else np.result_type(value)


def _output_seeds(arena: Any, output: Any, seed: Any) -> dict[int, Any]:
    """Pair each traced leaf of ``output`` with its seed: node index -> cotangent."""

    seeds: dict[int, Any] = {}
    if seed is None and type(output) is Traced and output.arena is arena:
        value = output.value  # the common case: a scalar loss
        if type(value) is np.float64:
            return {output.index: _ONE64.copy()}
        if isinstance(value, np.ndarray | np.generic) and value.size == 1 and value.dtype.kind == "f":
            return {output.index: _one_like(value)}
        if _dtype_of(value).kind == "c":
            msg = (
                "the output is complex: pass seed= explicitly (a complex output has no gradient of its own; seed=1 "
                "gives the derivative of a holomorphic function, seed=1j the other half of the Jacobian)"
            )
            raise DtypeError(msg)
    if seed is None:
        found = [output] if type(output) is Traced else _traced_leaves(output)
        if not found:
            return seeds  # a constant output: every gradient is zero
        if len(found) != 1 or np.size(found[0].value) != 1 or is_container(found[0].value):
            shape = np.shape(found[0].value) if len(found) == 1 else f"a structure of {len(found)} traced values"
            msg = (
                f"the output has shape {shape}; pass seed= (shaped like the output) to differentiate a non-scalar "
                f"output"
            )
            raise ArenaError(msg)
        value = found[0].value
        paired = [("", found[0], np.ones(np.shape(value), _dtype_of(value)))]
    elif type(output) is Traced:
        paired = [("", output, seed)]
    else:
        paired = list(zip_leaves(output, seed))
    for path, leaf, leaf_seed in paired:
        if type(leaf) is not Traced:
            continue
        if leaf.arena is not arena:
            msg = f"the output{' ' + path if path else ''} belongs to another arena"
            raise ArenaError(msg)
        if leaf_seed is None:
            continue
        g = _seed_value(leaf.value, leaf_seed, path)
        prev = seeds.get(leaf.index)
        seeds[leaf.index] = g if prev is None else prev + g
    return seeds


_ONES = {dtype: np.ones((), dtype) for dtype in map(np.dtype, (np.float16, np.float32, np.float64, np.longdouble))}
_ONE64 = _ONES[np.dtype(np.float64)]


def _one_like(value: Any) -> Any:
    """A fresh array of ones shaped like the one-element float ``value`` (a copy of a kept
    0-d one is a third of the cost of ``np.ones``)."""
    one = _ONES.get(value.dtype)
    if one is None or value.shape != ():
        return np.ones(value.shape, value.dtype)
    return one.copy()


def _check_options(options: Any) -> GradOptions:
    if options is None:
        return GradOptions.TRAINING
    if not isinstance(options, GradOptions):
        msg = f"options must be a GradOptions (GradOptions.STRICT or GradOptions.TRAINING), got {options!r}"
        raise ArgumentError(msg)
    return options


def _all_traced(values: tuple[Any, ...]) -> bool:
    return all(type(value) is Traced for value in values)


def _check_seeds(arena: Any, seeds: dict[int, Any]) -> None:
    for index, seed in seeds.items():
        if isinstance(seed, np.ndarray | np.generic) and not np.isfinite(seed).all():
            msg = f"the seed of the output (node {index}) is not finite"
            raise NonFiniteError(msg)


def _traced_leaves(value: Any) -> list[Any]:
    """Every traced leaf of ``value``, in order."""
    if type(value) is Traced:
        return [value]
    return [leaf for leaf in leaves(value) if type(leaf) is Traced]


def _path_of(arena: Any, target: Any, wrt: Any) -> str:
    known = arena._paths.get(target.index)
    if known:
        return str(known)
    return next((f"wrt{path}" for path, leaf in flatten_with_paths(wrt) if leaf is target), "wrt")


def _check_targets(arena: Any, targets: list[Any], wrt: Any) -> None:
    for target in targets:
        if target.arena is not arena:
            msg = f"{_path_of(arena, target, wrt)} is not a node of this arena"
            raise ArenaError(msg)
        value = target.value
        dtype = getattr(value, "dtype", None)
        if dtype is not None and dtype.kind not in "fc" and not is_container(value):
            msg = (
                f"{_path_of(arena, target, wrt)} (node {target.index}) has dtype {dtype}; "
                "only floating-point and complex values are differentiable"
            )
            raise DtypeError(msg)


def _owned(g: Any, like: Any, taken: set[int]) -> Any:
    """Give the caller an array nobody else holds (not a seed, a view or another
    gradient), typed like ``like``. ``taken`` holds the ids of seeds and earlier results.
    """
    if type(g) is Traced:
        return g  # traced by an enclosing transform: the enclosing sweep differentiates it
    if type(g) in INTERPRETERS and type(g) is not Staged:  # batched (inside vmap): its interpreter holds the arrays
        dtype = _dtype_of(like)  # typed like the leaf, as below: float32 stays float32
        g = np.real(g) if dtype.kind == "f" and g.dtype.kind == "c" else g
        return g if g.dtype == dtype else g.astype(dtype)
    dtype = like.dtype if type(like) is np.ndarray else _dtype_of(like)
    plain = now(g)  # (under replay: what this recording holds, whose copies the tape makes again)
    if np.shape(plain) != np.shape(like):
        # Only a rule that gives its input a cotangent of another shape gets here: say so
        # rather than hand back a gradient the argument cannot be stepped with.
        msg = (
            f"a gradient of shape {np.shape(plain)} reached an input of shape {np.shape(like)}: an op's gradient "
            "rule returned a cotangent of the wrong shape (check_grads names the op)"
        )
        raise _CotangentShapeError(msg)
    if type(plain) is not np.ndarray or plain.base is not None or id(plain) in taken or plain.dtype != dtype:
        if dtype.kind == "f" and np.iscomplexobj(g):
            g = np.real(g)  # the backstop of fit_cotangent: a real leaf's cotangent is real
        g = array(g, dtype=dtype)
    taken.add(id(now(g)))
    return g


def strict_integer_leaves(value: Any, path: str = "") -> list[str]:
    """The key paths of the int leaves of a structure, each with what is wrong, for STRICT
    to name: an int is a static leaf (no gradient), and beside float leaves it is almost
    always a parameter written ``0`` for ``0.0``, which no optimiser would ever move. (A
    lone int argument is refused as such by the transforms, STRICT or not.)"""
    if not is_container(value):
        return []
    return [f"{p} (the int {leaf!r}: ints get no gradient; write {leaf}.0)" for p, leaf in integer_leaves(value, path)]


class _Missing(list[str]):
    """The key paths of a requested input's parts that no gradient reached (STRICT)."""


def _finished(arena: Any, wrt: Any, target: Traced, g: Any, options: GradOptions, finish: Any, taken: set[int]) -> Any:
    """The gradient handed back for ``target`` (one leaf of ``wrt``), built from the
    cotangent ``g`` that reached it: ``finish(g, like)`` per array, zeros (or, with
    STRICT, a :class:`_Missing` of key paths) where nothing arrived."""
    if type(g) is RowParts:
        return coalesced(g, target.value)
    if g is not None and (type(target.value) is np.ndarray or not is_container(target.value)):  # an array leaf
        return _owned(g, target.value, taken) if finish is None else finish(g, target.value)
    lacking: list[str] = []
    if finish is None:
        finish = functools.partial(_owned, taken=taken)
    result = materialize(g, target.value, "", lacking, options.zero_missing_wrt, finish)
    if lacking and not options.zero_missing_wrt:
        path = _path_of(arena, target, wrt)
        return _Missing(path + step for step in lacking)
    return result


class _RecordingNodes:
    """The arena's nodes with every value replaced by the handle of its node: the sweep
    run over this records its own computation (``create_graph=True``), so gradients are
    traced values that can be differentiated again.
    """

    def __init__(self, arena: Any) -> None:
        self._arena = arena
        self._nodes = arena._nodes

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        op, parents, argnums, args, value = self._nodes[i]
        if not parents:
            return op, parents, argnums, args, Traced(self._arena, i, value)
        lifted = list(args)
        for p, k in zip(parents, argnums, strict=True):
            lifted[k] = Traced(self._arena, p, self._nodes[p][4])
        return op, parents, argnums, tuple(lifted), Traced(self._arena, i, value)


def _staged_rules(op: Any, g: Any, value: Any, args: Any) -> Any:
    """The op whose rules a node's cotangent takes while a replay may record the sweep:
    where the node's values are staged, each rule is recorded as one call on the plain
    values (:class:`~nodegrad.engine.whole.RecordedWhole`)."""
    tape = only_staged((g, value, args))
    return op if tape is None else RecordedWhole(op, tape)


def gradients(
    arena: Any,
    output: Any,
    wrt: Any,
    seed: Any = None,
    options: GradOptions | None = None,
    finish: Any = None,
    create_graph: bool = False,
    retain: bool = True,
    wrt_is_every_leaf: bool = False,
    sparse_rows: bool = False,
) -> Any:
    """Differentiate ``output`` with respect to every traced leaf of ``wrt``.

    ``output`` and ``wrt`` may be traced values or any structure of them; the result has
    ``wrt``'s structure, with ``None`` where ``wrt`` holds a non-traced (static) leaf.
    ``finish(g, like)`` post-processes each array gradient; by default it makes sure the
    caller gets arrays that nothing else holds. With ``create_graph`` the sweep records
    itself into the arena and the gradients are traced values. (Nested transforms need no
    such mode: there the values are handles of an enclosing arena, so the rules record into
    it on their own.) ``retain=False`` drops each node's forward value as soon as the sweep is done with it.
    ``wrt_is_every_leaf`` says that ``wrt``'s leaves are the arena's only leaf nodes (a
    transform's arena, whose leaves are the arguments it made): the sweep then need not
    look for the nodes that depend on them, for every node does. With ``sparse_rows`` a
    leaf whose every use is a row gather gets a :class:`~nodegrad.engine.rows.RowSparse`.
    """
    options = GradOptions.TRAINING if options is None else _check_options(options)
    if create_graph and arena._lean:
        msg = "this arena keeps only the values its rules read, so its sweep cannot be recorded (create_graph)"
        raise ArenaError(msg)
    flat = type(wrt) is tuple and _all_traced(wrt)  # grad's common case
    targets = list(wrt) if flat else _traced_leaves(wrt)
    _check_targets(arena, targets, wrt)
    seeds = _output_seeds(arena, output, seed)
    checking = type(arena._nodes) is not list and arena.check_finite
    if checking:
        _check_seeds(arena, seeds)
    if create_graph:
        nodes: Any = _RecordingNodes(arena)
    elif checking:
        nodes = arena._nodes.for_sweep()  # checks every cotangent (nodegrad.debug)
    else:
        nodes = arena._nodes
    size = len(arena._nodes)
    taken = {id(s) for s in seeds.values()}  # the seeds are the sweep's own: never handed back
    # A rule closing over this arena's own handles (a custom_vjp's bwd) records as it runs,
    # also into an arena whose transform has returned (a vjp's backward): allowed during
    # the sweep, and undone after it unless the sweep is the recording.
    sealed = getattr(arena._nodes, "finished_by", None) is not None
    if sealed:
        arena._nodes.open_for_sweep = True
    try:
        release = not (retain or create_graph)
        indices = [t.index for t in targets]
        if sparse_rows and seeds and indices:
            nodes = sparse_nodes(nodes, arena._nodes, indices, min(indices), max(seeds))
        every_leaf = wrt_is_every_leaf and indices == list(range(len(indices)))
        rules_of = _staged_rules if interpreters_running() else None
        found, arena.last_visited = sweep(nodes, seeds, indices, release, every_leaf, rules_of)
    except BaseException:
        arena.truncate(size)  # a recorded sweep that failed midway leaves no nodes behind
        raise
    finally:
        if sealed:
            arena._nodes.open_for_sweep = False
    if not create_graph and len(arena._nodes) > size:
        arena.truncate(size)

    arena._last_gradients = found if len(found) == len(targets) else {t.index: found.get(t.index) for t in targets}
    results = [_finished(arena, wrt, target, found.get(target.index), options, finish, taken) for target in targets]
    if not options.zero_missing_wrt:
        missing = [p for r in results if type(r) is _Missing for p in r] + strict_integer_leaves(wrt)
        if missing:
            msg = "no gradient path to the output from: " + ", ".join(missing)
            raise NoGradientError(msg)
    if type(wrt) is Traced:
        return results[0]
    if flat:
        return tuple(results)
    by_id = {id(t): r for t, r in zip(targets, results, strict=True)}
    return map_unless_static(lambda leaf: by_id.get(id(leaf)), wrt)
