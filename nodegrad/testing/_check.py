"""The dot-product gradient check behind :func:`nodegrad.testing.check_grads`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nodegrad.engine.cycles import reports_unwalkable
from nodegrad.engine.structure import differentiable_leaves, is_differentiable_leaf, zip_leaves
from nodegrad.errors import NodegradError, NoGradientError, _CotangentShapeError
from nodegrad.testing._arguments import check_arguments as _check_arguments
from nodegrad.testing._arguments import normalize_modes as _normalize_modes
from nodegrad.testing._arguments import positions as _positions
from nodegrad.testing._arguments import refuse_complex as _refuse_complex
from nodegrad.testing._arguments import refuse_complex_arguments as _refuse_complex_arguments
from nodegrad.testing._culprit import blamed
from nodegrad.testing._errors import GradientCheckError
from nodegrad.testing._leaves import absolute as _abs
from nodegrad.testing._leaves import as_float64 as _as_float64
from nodegrad.testing._leaves import check_like, draw_like, only, parts
from nodegrad.testing._leaves import describe_argument as _describe
from nodegrad.testing._leaves import pair as _pair
from nodegrad.testing._leaves import zeros as _zeros
from nodegrad.testing._references import ComplexStep, Numeric, OneArgument
from nodegrad.transforms import jvp, vjp
from nodegrad.tree import add, map_floats

__all__ = ["check_grads"]

# Default (rtol, floor) by the narrowest float dtype among the differentiated arguments and the
# output (float64 otherwise): the numeric side is always float64, only the analytic side varies.
# The floor is relative too: to the largest directional derivative one check compares, for the
# rounding a cancellation leaves in a smaller one.
_TOLERANCES = {"float16": (3e-2, 1e-2), "float32": (2e-3, 1e-4), "float64": (1e-5, 1e-7)}
# The same for the derivatives of derivatives (order 2): the analytic side then runs a recorded
# backward sweep, twice the rounding of the first-order one, which float32 and float16 feel.
_TOLERANCES_HIGHER = {"float16": (6e-2, 2e-2), "float32": (5e-3, 2e-4), "float64": (1e-5, 1e-7)}

Function = Callable[..., Any]


@reports_unwalkable("check_grads")
def check_grads(
    f: Function,
    *args: Any,
    order: int = 1,
    modes: Sequence[str] = ("rev", "fwd"),
    rtol: float | None = None,
    atol: float | None = None,
    argnums: int | Sequence[int] | None = None,
    eps: float | None = None,
    seed: int = 0,
    holomorphic: bool = False,
    reference: str = "central_difference",
) -> None:
    """Check ``f``'s derivatives against central finite differences, in reverse and forward mode.

    The dot-product test, with a random cotangent ``v`` for the output and a random
    direction ``u`` for the differentiated arguments ``x``, against the central difference
    ``(<v, f(x + eps u)> - <v, f(x - eps u)>) / (2 eps)`` computed in float64 (float32
    arguments are cast up for this side):

    - ``"rev"``: ``sum_k <vjp(v)_k, u_k>`` from :func:`nodegrad.vjp`, all the arguments moved
      together (a failure is then traced to the leaves it comes from, one leaf at a time);
      each gradient must also have its argument's structure, and each leaf its shape and dtype.
    - ``"fwd"``: ``<v, jvp(u)>`` from :func:`nodegrad.jvp`, all the arguments moved together;
      the tangent must have the output's structure, and each leaf its shape and dtype.

    With ``order=2`` the derivatives of the derivatives are checked too, as HIPS autograd's
    ``check_grads`` does: the same test, in every mode, of ``(x, v) -> vjp(f, x)(v)`` (for
    ``"rev"``) and of ``(x, t) -> jvp(f, x, t)`` (for ``"fwd"``). Both are written with
    :func:`nodegrad.grad`, which nests, so differentiating them differentiates the recorded
    backward sweep. Arguments and the output may be structured (records, dicts, lists, tuples).

    When a check fails, ``f`` is recorded once more (in float64) and each op on the way from
    the arguments to the output is tested on its own recorded inputs: its gradient rule
    against central differences of its own forward. The error names the first op that
    disagrees, the shapes and dtypes of its inputs and the line of your code that recorded
    it (a ``custom_vjp`` by its function's name); for failures of forward mode or of order 2,
    each rule's own derivative is tested too. Ops at a kink of their forward (``abs`` at 0,
    ``max`` at a tie, ``clip`` at its bound) are skipped, and listed, rather than blamed.

    Parameters
    ----------
    f : callable
        Takes float arrays, Python floats or structures of them; returns an array, a
        scalar or a structure of them.
    *args
        The point at which to check.
    order : {1, 2}, default 1
        How many derivatives deep to check.
    modes : tuple of {"rev", "fwd"}, default ("rev", "fwd")
        Reverse mode (VJPs), forward mode (JVPs), or both.
    rtol, atol : float, optional
        Pass when ``|analytic - numeric| <= atol + rtol * scale + floor * largest`` plus
        what rounding and truncation (measured at a ten times wider step) can put into the
        central difference, where ``scale`` is the larger of ``|numeric|`` and the sum of
        the absolute values of the terms the analytic dot product adds up, and ``largest``
        the largest ``scale`` among the directions of the check. All but ``atol`` scale with
        ``f``, so a rule off by a factor fails however small its gradient. ``rtol`` and
        ``floor`` depend on the narrowest float dtype involved (looser for float32 and
        float16 at order 2); ``atol`` is absolute: 0 by default in float64, the floor in a
        narrower dtype (whose analytic side rounds relative to values the check cannot see).
    argnums : int or sequence of int, optional
        Arguments to differentiate; all of them by default. The others are passed as given
        (their float leaves cast to float64 on the numeric side).
    eps : float, optional
        Finite-difference step along ``u``; default ``1e-6``.
    seed : int, default 0
        Seeds the ``numpy.random.Generator`` that draws the directions and cotangents.
    holomorphic : bool, default False
        Also check that ``f`` is holomorphic in its complex arguments (Cauchy-Riemann):
        its central difference along ``1j * u`` is ``1j`` times the one along ``u``, and
        so is its forward derivative, which makes ``grad(f, holomorphic=True)`` its
        complex derivative.
    reference : {"central_difference", "complex_step"}, default "central_difference"
        How the numeric side is computed. ``"complex_step"`` takes each directional
        derivative as ``Im(f(x + i h u)) / h`` with ``h = 1e-20``, in complex128: exact to
        rounding for a real-analytic ``f``, with no step size to choose, so tight tolerances
        hold for float32 arguments and for functions whose central differences lose digits
        to cancellation. It needs real arguments and real outputs (``ArgumentError``
        otherwise). Where ``f`` is not analytic at the point -- it uses ``abs``, ``real``,
        ``conj``, ``maximum``, ``clip``, a cast to a real dtype, or raises on complex
        values, or its complex step disagrees with central differences that agree with the
        gradient -- a ``UserWarning`` says what broke it and the check falls back to
        central differences (at ``order=2`` too: the derivative functions are then checked
        by the complex step in turn, and are analytic when ``f`` is).

    Raises
    ------
    nodegrad.testing.GradientCheckError
        (an ``AssertionError``) Saying which order and mode failed, naming the arguments
        and the key paths of the leaves (and of the output leaves) that show it, with the
        analytic and numeric values and the tolerances; then the first op that disagrees
        with its own forward (or "no single op disagrees with its own forward at this
        point"), also in its ``culprit`` and ``location`` attributes.
    nodegrad.errors.ArgumentError
        (a ``ValueError``) for an ``f`` that is not callable, an ``order`` other than 1
        or 2, ``modes`` other than a non-empty tuple of distinct ``"rev"`` and ``"fwd"``,
        bad ``argnums``, a negative or non-finite ``rtol``/``atol``, a non-positive
        ``eps``, a ``seed`` that is not a non-negative int, or a ``reference`` other than
        the two above; for ``reference="complex_step"`` with complex arguments or outputs,
        or with ``holomorphic=True``.
    nodegrad.errors.NoGradientError
        When a derivative cannot be taken: at ``order=2`` through a rule that cannot be
        differentiated again (``custom_vjp``, ``checkpoint``), and in ``"fwd"`` mode through
        one already at order 1 (:func:`nodegrad.jvp` differentiates a recorded sweep).

    Notes
    -----
    Complex arguments are checked along real and along imaginary directions separately,
    with the pairing ``<v, w> = Re(sum(v * w))`` (no conjugate): the VJP is its transpose,
    which is JAX's convention (``grad`` of a real-valued function of ``z`` is
    ``df/dx - 1j df/dy``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import check_grads
    >>> check_grads(lambda x, y: ng.sin(x) * y, np.array([0.5, 1.0]), 2.0)
    >>> check_grads(lambda p: ng.sum(p["w"] ** 2.0) * p["s"], {"w": np.ones(3), "s": 2.0, "tag": "t"})
    >>> check_grads(lambda x: {"y": ng.tanh(x) @ x}, np.array([0.5, -1.0]), order=2)
    >>> check_grads(ng.sin, 0.5, modes=("rev",), rtol=1e-6)

    A gradient that drops a term:

    >>> check_grads(lambda x: ng.stop_gradient(x) * x, np.array([1.0, 2.0]))
    Traceback (most recent call last):
        ...
    nodegrad.testing._errors.GradientCheckError: check_grads (order 1, mode 'rev'): the gradient of argument 0 ...
      analytic <vjp(v), u> = ...
      numeric  (central difference, eps=1e-06) = ...
      |difference| = ... > tolerance ... (atol=0 + rtol=1e-05 * scale ...)
    no single op disagrees with its own forward at this point; the whole function's check failed

    A ``custom_vjp`` whose rule is wrong is named, with the line that called it:

    >>> @ng.custom_vjp
    ... def cube(x):
    ...     return x ** 3.0
    >>> cube.defvjp(lambda x: (x ** 3.0, x), lambda x, g: (2.0 * x ** 2.0 * g,))  # should be 3 x**2 g
    >>> try:
    ...     check_grads(lambda x: ng.sum(ng.tanh(cube(ng.sin(x)))), np.array([0.3, 0.6]))
    ... except AssertionError as error:
    ...     print(error.culprit)
    ...     print(str(error).splitlines()[4])
    custom_vjp:cube
    the first op that disagrees with its own forward: 'custom_vjp:cube' (the custom_vjp function cube; ...

    Complex step, exact for an analytic function where central differences lose digits:

    >>> f = lambda x: ng.sum((x + 1e9) - 1e9 + ng.sin(x))
    >>> x = np.array([0.5, -1.0], dtype=np.float32)
    >>> check_grads(f, x, reference="complex_step", rtol=1e-6, atol=1e-6)
    """
    _check_arguments(f, order, rtol, atol, eps, seed, holomorphic, reference)
    nums = _positions(argnums, f, len(args))
    given = dict(enumerate(args))
    given64 = {k: map_floats(_as_float64, a) for k, a in given.items()}
    if reference == "complex_step":
        _refuse_complex_arguments([args[k] for k in nums], [f"argument {k}" for k in nums], holomorphic)

    def at(values: dict[int, Any]) -> Function:
        return lambda *diff: f(*(values | dict(zip(nums, diff, strict=True))).values())

    check = _Check(_normalize_modes(modes), rtol, atol, 1e-6 if eps is None else eps, seed, reference)
    xs, names = [args[k] for k in nums], [f"argument {k}" for k in nums]
    try:
        check.up_to(order, (at(given), at(given64)), xs, names)
        if holomorphic:
            check.holomorphic(at(given), at(given64), xs, names)
    except _UnblamedError as failure:
        # Only now, after a failure, is each op tested on its own.
        raise blamed(failure, f, given, nums, seed, deep=failure.deep) from None
    except (_CotangentShapeError, NodegradError) as exc:
        # A rule whose cotangent did not fit its input, or that failed on its inputs: which
        # one, recorded where? (Any other error is the function's own, and stays as it is.)
        if not isinstance(exc, _CotangentShapeError) and getattr(exc, "failed_rule_of", None) is None:
            raise
        unfit = _UnblamedError(f"check_grads: the derivatives could not be computed: {exc}", deep=order == 2)
        raise blamed(unfit, f, given, nums, seed, deep=unfit.deep) from None


class _Check:
    """One ``check_grads`` call: its settings, and the random generator all levels share."""

    def __init__(
        self,
        modes: tuple[str, ...],
        rtol: float | None,
        atol: float | None,
        eps: float,
        seed: int,
        reference: str = "central_difference",
    ) -> None:
        self.modes, self.rtol, self.atol, self.eps, self.seed = modes, rtol, atol, eps, seed
        self.rng = np.random.default_rng(seed)
        self.complex_step = ComplexStep() if reference == "complex_step" else None

    def up_to(
        self, order: int, fs: tuple[Function, Function], xs: list[Any], names: list[str], level: int = 1, of: str = ""
    ) -> None:
        """Check the first derivatives of ``fs`` (the function, and the same with its fixed
        arguments in float64) in every mode, then those of its derivative functions.
        ``of`` says which derivative of ``f`` ``fs`` is, for the messages."""
        out = None
        for mode in self.modes:
            header = f"check_grads (order {level}, mode {mode!r}{of})"
            try:
                out = self.first(mode, fs, xs, names, level, header)
            except NoGradientError as exc:
                msg = f"{header}: {exc}"
                if level > 1:
                    msg += " (order=1 checks the first derivatives alone)"
                elif mode == "fwd":
                    msg += " (nodegrad.jvp differentiates a recorded sweep; modes=('rev',) checks reverse mode alone)"
                raise NoGradientError(msg) from exc
        if order == 1:
            return
        n = len(xs)
        for mode in self.modes:
            if mode == "rev":
                v = self.random(out)
                dfs = (_vjp_function(fs[0], n), _vjp_function(fs[1], n))
                which = " of the 'rev' derivative (x, v) -> vjp(f, x)(v)"
                self.up_to(order - 1, dfs, [*xs, v], [*names, "the cotangent v"], level + 1, which)
            else:
                ts = [self.random(x) for x in xs]
                dfs = (_jvp_function(fs[0], n), _jvp_function(fs[1], n))
                which = " of the 'fwd' derivative (x, t) -> jvp(f, x, t)"
                tangents = [f"the tangent of {name}" for name in names]
                self.up_to(order - 1, dfs, [*xs, *ts], [*names, *tangents], level + 1, which)

    def first(
        self, mode: str, fs: tuple[Function, Function], xs: list[Any], names: list[str], level: int, header: str
    ) -> Any:
        """The dot-product test of ``fs[0]``'s first derivatives in ``mode``; returns its output."""
        f, f64 = fs
        point = [map_floats(_as_float64, x) for x in xs]
        numeric = Numeric(f64, point, self.eps, self.complex_step, header)
        # A failure here may come from a rule's own derivative (forward mode transposes the
        # recorded sweep; order 2 differentiates it): the search for the culprit tests those.
        deep = level > 1 or mode == "fwd"

        if mode == "rev":
            out, back = vjp(f, *xs)
            self.refuse_complex_output(out, header)
            v = self.random(out)
            grads = back(v)
            for name, g, x in zip(names, grads, xs, strict=True):
                _check_like(f"{header}: the gradient of {name}", g, x, deep)

            def analytic(v_: Any, us: list[Any]) -> tuple[float, Callable[[], float]]:
                gs = grads if v_ is v else back(v_)
                value = sum(_pair(g, u) for g, u in zip(gs, us, strict=True))
                return value, lambda: sum(_pair(_abs(g), _abs(u)) for g, u in zip(gs, us, strict=True))

            # All the arguments together (a failure is then traced to its leaves, one at a
            # time); complex ones along real and along imaginary directions.
            kinds_ = sorted({part for x in xs for part in parts(x)}, reverse=True)
            groups = [(list(range(len(xs))), part) for part in kinds_]

            def directions(group: tuple[list[int], str]) -> list[Any]:
                ks, part = group
                return [self.random(x, part) if k in ks else _zeros(x) for k, x in enumerate(xs)]

            kind, formula = "the gradient of", "<vjp(v), u>"
        else:
            tangents: dict[int, tuple[list[Any], Any]] = {}  # jvp(f, xs, us)[1]

            def tangent_along(us: list[Any]) -> tuple[Any, Any]:
                if id(us) not in tangents:
                    out_, tangent = jvp(f, xs, us)
                    _check_like(f"{header}: the tangent jvp(u) of the output", tangent, out_, deep)
                    tangents[id(us)] = us, (out_, tangent)
                return tangents[id(us)][1]

            def analytic(v_: Any, us: list[Any]) -> tuple[float, Callable[[], float]]:
                tangent = tangent_along(us)[1]
                return _pair(v_, tangent), lambda: _pair(_abs(v_), _abs(tangent))

            # All the arguments together; complex ones along real, then imaginary directions.
            kinds = sorted({part for x in xs for part in parts(x)}, reverse=True)
            groups = [(list(range(len(xs))), part) for part in kinds]
            along = {part: [self.random(x, part) for x in xs] for part in kinds}
            # The direction's jvp gives the output too: f need not run on its own.
            out = tangent_along(along[kinds[0]])[0]
            self.refuse_complex_output(out, header)
            v = self.random(out)

            def directions(group: tuple[list[int], str]) -> list[Any]:
                return along[group[1]]

            kind, formula = "the forward derivative along", "<v, jvp(u)>"
        rtol, floor = self.tolerances(out, xs, level)
        atol = self.default_atol(out, xs, floor) if self.atol is None else self.atol
        if self.complex_step is not None:
            self.complex_step.scan(f64, point, directions(groups[0]), header)
        largest: list[float] = []

        def scale_of_check() -> float:
            # The largest directional derivative this check compares: the floor is relative
            # to it, so that scaling f scales every tolerance (no absolute one hides a rule
            # off by a factor where the gradient is small).
            if not largest:
                sizes = [(analytic(v, us)[1](), numeric.estimate(v, us)[0]) for us in map(directions, groups)]
                largest.append(max((max(terms, abs(e)) for terms, e in sizes), default=0.0))
            return largest[0]

        def failure(v_: Any, us: list[Any]) -> str | None:
            value, terms_of = analytic(v_, us)
            expected, label = numeric.estimate(v_, us)
            if abs(value - expected) <= atol + rtol * abs(expected):  # within the least tolerance (NaN: not)
                return None
            # The rest of the tolerance, each part only when the parts before fall short.
            terms = terms_of()
            size = max(abs(expected), terms)
            noise = numeric.noise(v_, us)
            tolerance = atol + rtol * size + noise
            if abs(value - expected) <= tolerance:
                return None
            # Before a difference counts: what cancellation leaves relative to the check's
            # scale, and the central difference's own truncation (measured, not assumed).
            relative = floor * scale_of_check()
            truncation = numeric.truncation(v_, us)
            tolerance += relative + truncation
            if abs(value - expected) <= tolerance:
                return None
            if expected == 0.0 and abs(value) <= _ROUNDING_OF_A_ZERO:
                return None  # a derivative that is exactly zero, computed as the rounding of a cancellation
            if numeric.complex_step:
                if numeric.explains(v_, us, value, terms, rtol, atol + relative):
                    return None
                label += f"; central difference, eps={self.eps:g}: {numeric.central(v_, us)!r}"
            rounding = f" + rounding of the evaluations {noise:.3g}" if not numeric.complex_step else ""
            if truncation:
                rounding += f" + truncation {truncation:.3g}"
            return (
                f"  analytic {formula} = {value!r}\n"
                f"  numeric  ({label}) = {expected!r}\n"
                f"  |difference| = {abs(value - expected):.3g} > tolerance {tolerance:.3g} "
                f"(atol={atol:g} + rtol={rtol:g} * scale {size:.3g} + {floor:g} * the check's scale "
                f"{scale_of_check():.3g}{rounding})"
            )

        for group in groups:
            us = directions(group)
            problem = failure(v, us)
            if problem is None:
                continue
            ks, part = group
            # Find the leaves to blame: the same test with the direction on one leaf at a time,
            # then with the cotangent on one output leaf at a time.
            blamed = [
                _describe(names[k], xs[k], path)
                for k in ks
                for path, _ in differentiable_leaves(xs[k])
                if failure(v, [only(u, path) if j == k else _zeros(u) for j, u in enumerate(us)]) is not None
            ]
            where = ", ".join(blamed or [_describe(names[k], xs[k], None) for k in ks])
            if part:
                where += f" along {part} directions"
            outputs = [path for path, _ in differentiable_leaves(out) if path and failure(only(v, path), us)]
            shows = f"; it shows in the output at {', '.join(outputs)}" if outputs else ""
            msg = f"{header}: {kind} {where} fails the dot-product test (seed={self.seed}){shows}:\n{problem}"
            raise _failed(msg, deep)
        return out

    def refuse_complex_output(self, out: Any, header: str) -> None:
        if self.complex_step is not None:
            _refuse_complex(out, header, "the output")

    def holomorphic(self, f: Function, f64: Function, xs: list[Any], names: list[str]) -> None:
        """Cauchy-Riemann, one complex argument at a time: moving along ``1j * u`` changes
        ``f`` by ``1j`` times what moving along ``u`` does, numerically and in forward mode."""
        point = [map_floats(_as_float64, x) for x in xs]
        for k, (x, name) in enumerate(zip(xs, names, strict=True)):
            if parts(x) == ("",):
                msg = f"check_grads (holomorphic): {name} is real; a holomorphic function takes complex arguments"
                raise _failed(msg, deep=False)
            u = self.random(x)
            iu = map_floats(lambda leaf: leaf * 1j, u)
            moving = OneArgument(f64, point, k, self.eps)
            derivative, allowance = moving.derivative, moving.allowance
            along_u, along_iu = derivative(u), derivative(iu)
            tangents = [u if j == k else _zeros(xj) for j, xj in enumerate(xs)]
            out, tangent = jvp(f, xs, tangents)
            rtol, floor = self.tolerances(out, xs, 1)
            comparisons = (
                ("the central difference along 1j * u", along_iu, map_floats(lambda d: d * 1j, along_u), (u, iu)),
                ("the forward derivative along u", tangent, along_u, (u,)),
            )
            for what, got, expected, numeric_sides in comparisons:
                slack: list[Any] = []
                for path, a, b in zip_leaves(got, expected):
                    if a is None or not is_differentiable_leaf(a):
                        continue
                    a, b = np.asarray(a), np.asarray(b)
                    # the absolute part relative to the size of what is compared
                    size = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
                    atol = floor * size + (0.0 if self.atol is None else self.atol)
                    if np.allclose(a, b, rtol=rtol, atol=atol):
                        continue
                    if not slack:  # the numeric sides' own errors, only when needed
                        total = allowance(numeric_sides[0])
                        for side in numeric_sides[1:]:
                            total = add(total, allowance(side))
                        slack.append(dict(differentiable_leaves(total)))
                    if np.all(np.abs(a - b) <= atol + rtol * np.abs(b) + slack[0].get(path, 0.0)):
                        continue
                    msg = (
                        f"check_grads (holomorphic): {name} fails Cauchy-Riemann: {what} differs at the "
                        f"output{path or ''}: {a!r} against {b!r} (seed={self.seed}); a real-valued or "
                        "conjugating step (abs, real, conj, ...) makes a function non-holomorphic"
                    )
                    raise _failed(msg, deep=True)

    def tolerances(self, out: Any, xs: list[Any], level: int) -> tuple[float, float]:
        """``(rtol, floor)``: the relative tolerance (the caller's, or by dtype), and the
        floor by dtype, a tolerance relative to the largest derivative the check compares."""
        # A complex dtype is as precise as the float dtype of its parts.
        dtypes = [
            np.finfo(np.asarray(leaf).dtype).dtype for value in [out, *xs] for _, leaf in differentiable_leaves(value)
        ]
        narrowest = min(dtypes, key=lambda d: d.itemsize, default=np.dtype(float))
        table = _TOLERANCES if level == 1 else _TOLERANCES_HIGHER
        default_rtol, floor = table.get(narrowest.name, table["float64"])
        return (default_rtol if self.rtol is None else self.rtol), floor

    def default_atol(self, out: Any, xs: list[Any], floor: float) -> float:
        """0 in float64, where every tolerance is relative. In a narrower dtype the analytic
        side rounds relative to the values its sweep holds (a batch norm's, say, far larger
        than its gradient), which no size the check sees measures: the floor is then also
        an absolute tolerance, as it always was."""
        leaves = [leaf for value in [out, *xs] for _, leaf in differentiable_leaves(value)]
        narrow = any(np.finfo(np.asarray(leaf).dtype).bits < 64 for leaf in leaves)
        return floor if narrow else 0.0

    def random(self, like: Any, part: str = "") -> Any:
        """Standard normal draws shaped like the float and complex leaves of ``like``, in
        their dtypes. Complex leaves get complex draws, or with ``part`` purely real or
        purely imaginary ones (real leaves then get zeros along imaginary directions)."""
        return draw_like(self.rng, like, part)


#: What a sweep's rounding leaves of a derivative that is exactly zero (terms that cancel,
#: such as a difference of equal products): invisible to every size the check sees, and far
#: below any wrong rule's difference at the gradients users check.
_ROUNDING_OF_A_ZERO = 1e-15


class _UnblamedError(GradientCheckError):
    """A failed check, before the search for its culprit, which ``deep`` tells whether a
    rule's own derivative may be what is wrong (forward mode, order 2). ``check_grads``
    raises a plain :class:`GradientCheckError` in its place."""

    def __init__(self, message: str, culprit: str | None = None, location: str | None = None, deep: bool = True):
        super().__init__(message, culprit, location)
        self.deep = deep


def _failed(msg: str, deep: bool) -> _UnblamedError:
    return _UnblamedError(msg, deep=deep)


def _check_like(what: str, g: Any, x: Any, deep: bool) -> None:
    """``g`` must have ``x``'s structure, and its leaves their shapes and dtypes."""
    problem = check_like(what, g, x)
    if problem is not None:
        raise _failed(problem, deep)


def _vjp_function(f: Function, n: int) -> Function:
    """``(x_1, ..., x_n, v) -> vjp(f, x_1, ..., x_n)(v)`` (the one gradient when ``n == 1``):
    transforms nest, so the checks differentiate it in turn."""

    def vjp_of_f(*args: Any) -> Any:
        *xs, v = args
        grads = vjp(f, *xs)[1](v)
        return grads[0] if n == 1 else grads

    return vjp_of_f


def _jvp_function(f: Function, n: int) -> Function:
    """``(x_1, ..., x_n, t_1, ..., t_n) -> jvp(f, xs, ts)[1]``: transforms nest, so the checks
    differentiate it in turn."""

    def jvp_of_f(*args: Any) -> Any:
        return jvp(f, args[:n], args[n:])[1]

    return jvp_of_f
