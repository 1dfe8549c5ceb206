"""autograd's extension API: ``from nodegrad.extend import primitive, defvjp``.

Code that defines its own primitives for HIPS autograd ports with the import changed::

    from nodegrad.extend import primitive, defvjp      # was: from autograd.extend import ...

    @primitive
    def logsumexp(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))

A primitive is recorded as one node (its body is not traced: it may call scipy, C code,
anything that computes numbers), and its gradient is the rule given with :func:`defvjp`.
The calling conventions are autograd's: a VJP maker ``(ans, *args, **kwargs)`` returns
``g -> cotangent``; ``None`` in place of a maker means no gradient to that argument;
keyword arguments are passed to the function and to the makers but never differentiated.
A rule written with ``nodegrad.numpy`` (or numpy's functions on traced values) is
differentiated again, so second derivatives, ``hessian`` and ``hvp`` work through it.
Arguments and results may be records, dicts and lists, as with :class:`nodegrad.custom_vjp`
(on which this is built): a maker returns a cotangent of its argument's structure.

Forward mode (``jvp``, ``jacfwd``, ``linearize``) is the transpose of the VJP in nodegrad,
so a primitive with a VJP needs no JVP. :func:`defjvp` is accepted with autograd's
conventions, for the primitives that only have one: their VJP is then the JVP's
transpose, computed by differentiating the JVP rule in its tangent (a rule written with
``nodegrad.numpy``). A JVP given beside a VJP is kept, not used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nodegrad.custom import custom_vjp, stop_gradient
from nodegrad.engine.levels import DIFFERENTIATING
from nodegrad.engine.structure import leaves
from nodegrad.errors import ArgumentError, NoGradientError, StructureError
from nodegrad.ops.batching import innermost
from nodegrad.ops.examples import per_example_call
from nodegrad.transforms import vjp
from nodegrad.tree import zeros_like

__all__ = [
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "primitive",
]

#: ``(argnums, ans, args, kwargs) -> (g -> cotangents, one per argnum)``: autograd's joint form.
VjpArgnums = Callable[[tuple[int, ...], Any, tuple[Any, ...], dict[str, Any]], Callable[[Any], Iterable[Any]]]
#: ``(argnums, tangents, ans, args, kwargs) -> output tangent``: autograd's joint forward form.
JvpArgnums = Callable[[tuple[int, ...], tuple[Any, ...], Any, tuple[Any, ...], dict[str, Any]], Any]


def _traced(value: Any) -> bool:
    return any(type(leaf) in DIFFERENTIATING for leaf in leaves(value))


class _Call:
    """One call's static part, handed to the node as a constant: the keyword arguments
    and which positional arguments were traced (autograd's ``argnums``)."""

    __slots__ = ("argnums", "kwargs")

    def __init__(self, kwargs: dict[str, Any], argnums: tuple[int, ...]) -> None:
        self.kwargs = kwargs
        self.argnums = argnums


class primitive:  # noqa: N801  (a decorator, spelled as autograd spells it)
    """Make ``fun`` a primitive: one node in the arena, its body not traced, its gradient
    given by :func:`defvjp` (or :func:`defvjp_argnums`, or :func:`defjvp`).

    Called on plain values it is ``fun``; called on traced ones it records one node. Only
    positional arguments are differentiated; keyword arguments reach ``fun`` and the rules
    as they are. Until a rule is given, differentiating it raises
    :class:`~nodegrad.errors.NoGradientError` naming it.

    Parameters
    ----------
    fun : callable
        Computes the value from plain arrays (or records, dicts and lists of them).

    Returns
    -------
    primitive
        Called like ``fun``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defvjp
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
    >>> ng.grad(cube)(2.0), ng.grad(ng.grad(cube))(2.0)
    (12.0, 12.0)
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        if not callable(fun):
            msg = f"primitive needs a function, got {type(fun).__name__}"
            raise ArgumentError(msg)
        self.fun = fun
        self.name: str = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)
        self.vjp_argnums: VjpArgnums | None = None
        self.jvp_argnums: JvpArgnums | None = None
        #: Whether the JVP rule is ``fun`` itself at the tangent (``'same'``, ``def_linear``):
        #: such a rule cannot be transposed by differentiating it.
        self.jvp_is_fun = False

        def call(static: _Call, *args: Any) -> Any:
            return fun(*args, **static.kwargs)

        call.__name__ = getattr(fun, "__name__", "primitive")
        call.__qualname__ = self.name
        self._node = custom_vjp(call)
        self._node.defvjp(self._forward, self._backward)
        functools.update_wrapper(self, fun)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argnums = tuple(k for k, a in enumerate(args) if _traced(a))
        if not argnums:
            if innermost((*args, *kwargs.values())) is not None:
                # Batched by vmap: the body is a function of one example (perhaps a
                # library's, which sees no batched values), run once per example.
                return per_example_call(self, args, kwargs)
            return self.fun(*args, **kwargs)
        for key, value in kwargs.items():
            if _traced(value):
                msg = (
                    f"primitive {self.name}: keyword argument {key!r} is traced, but a primitive's keyword "
                    f"arguments are not differentiated (as in autograd): pass it by position"
                )
                raise ArgumentError(msg)
        return self._node(_Call(kwargs, argnums), *args)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def __reduce__(self) -> str:
        # Pickled by reference, as a function is: a module-level ``@primitive`` is found
        # again by its module and name, rules and all (its closures do not pickle).
        return str(getattr(self, "__qualname__", self.name))

    def _forward(self, static: _Call, *args: Any) -> tuple[Any, Any]:
        # On traced arguments (the sweep recording itself, for a higher derivative) this
        # records the primitive again, so the rules see an ``ans`` that depends on them.
        ans = self(*args, **static.kwargs)
        return ans, (static, ans, args)

    def _backward(self, residuals: tuple[_Call, Any, tuple[Any, ...]], g: Any) -> tuple[Any, ...]:
        static, ans, args = residuals
        argnums = static.argnums
        if self.vjp_argnums is not None:
            cotangents = tuple(self.vjp_argnums(argnums, ans, args, static.kwargs)(g))
        elif self.jvp_argnums is not None:
            cotangents = tuple(self._transposed_jvp(k, g, ans, args, static.kwargs) for k in argnums)
        else:
            msg = f"primitive {self.name} has no gradient rule: give one with nodegrad.extend.defvjp({self.name}, ...)"
            raise NoGradientError(msg)
        if len(cotangents) != len(argnums):
            msg = f"primitive {self.name}: the VJP gave {len(cotangents)} cotangents for the arguments {argnums}"
            raise StructureError(msg)
        out: list[Any] = [None] * (1 + len(args))
        for k, ct in zip(argnums, cotangents, strict=True):
            out[1 + k] = ct
        return tuple(out)

    def _transposed_jvp(self, k: int, g: Any, ans: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The cotangent of argument ``k``: the JVP rule, linear in its tangent, transposed
        by differentiating it in the tangent (``ans`` and ``args``, traced by an enclosing
        level at a higher order, are seen by the nested ``vjp`` as that level's values)."""
        jvp_argnums = self.jvp_argnums
        assert jvp_argnums is not None
        if self.jvp_is_fun:
            msg = (
                f"primitive {self.name}: its JVP is the function itself ('same', def_linear), whose transpose "
                f"nodegrad cannot derive: give its VJP with nodegrad.extend.defvjp"
            )
            raise NoGradientError(msg)
        _, back = vjp(lambda t: jvp_argnums((k,), (t,), ans, args, kwargs), zeros_like(stop_gradient(args[k])))
        return back(g)[0]


def _primitive_of(fun: Any, who: str) -> primitive:
    if not isinstance(fun, primitive):
        name = getattr(fun, "__qualname__", type(fun).__name__)
        msg = f"{who}: {name} is not a primitive: make it one with @nodegrad.extend.primitive first"
        raise ArgumentError(msg)
    return fun


def _argnums_given(fun: primitive, who: str, rules: Sequence[Any], argnums: Sequence[int] | None) -> list[int]:
    if argnums is None:
        return list(range(len(rules)))
    positions = list(argnums)
    if len(positions) != len(rules):
        msg = f"{who}({fun.name}): {len(rules)} rules for the {len(positions)} argnums {positions}"
        raise ArgumentError(msg)
    return positions


def defvjp(fun: primitive, *vjpmakers: Callable[..., Any] | None, argnums: Sequence[int] | None = None) -> None:
    """Give a primitive its gradient, one VJP maker per argument (autograd's ``defvjp``).

    Each maker is called as ``maker(ans, *args, **kwargs)`` and returns ``vjp(g)``, the
    cotangent of its argument for the output's cotangent ``g``, shaped like the argument
    (a cotangent of the broadcast shape is summed back). ``None`` means no gradient to that
    argument. ``argnums`` says which arguments the makers are for (default: the first
    ones, in order); an argument with no maker has no gradient rule, and differentiating
    with respect to it raises :class:`~nodegrad.errors.NoGradientError`. As in autograd,
    each call replaces the primitive's whole rule.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    *vjpmakers : callable or None
        ``(ans, *args, **kwargs) -> (g -> cotangent)``, one per argument in ``argnums``.
    argnums : sequence of int, optional
        The argument positions the makers are for.

    Examples
    --------
    >>> import nodegrad as ng
    >>> import nodegrad.numpy as np
    >>> from nodegrad.extend import primitive, defvjp
    >>> power = primitive(lambda x, y: x ** y)
    >>> defvjp(power, lambda ans, x, y: lambda g: g * y * x ** (y - 1),
    ...        lambda ans, x, y: lambda g: g * ans * np.log(x))
    >>> ng.grad(power, argnums=(0, 1))(2.0, 3.0)
    (12.0, 5.545177444479562)
    """
    prim = _primitive_of(fun, "defvjp")
    positions = _argnums_given(prim, "defvjp", vjpmakers, argnums)
    for maker in vjpmakers:
        if maker is not None and not callable(maker):
            msg = f"defvjp({prim.name}): a VJP maker must be a function or None, got {type(maker).__name__}"
            raise ArgumentError(msg)
    makers = dict(zip(positions, vjpmakers, strict=True))

    def one(k: int, ans: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[Any], Any]:
        if k not in makers:
            msg = f"primitive {prim.name} has no VJP for its argument {k}: give one with defvjp(..., argnums=...)"
            raise NoGradientError(msg)
        maker = makers[k]
        if maker is None:
            return lambda g: None
        return maker(ans, *args, **kwargs)

    defvjp_argnum(prim, one)


def defvjp_argnum(fun: primitive, vjpmaker: Callable[..., Callable[[Any], Any]]) -> None:
    """Give a primitive its gradient with one maker for every argument (autograd's
    ``defvjp_argnum``): ``vjpmaker(argnum, ans, args, kwargs)`` returns ``g -> cotangent``.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    vjpmaker : callable
        ``(argnum, ans, args, kwargs) -> (g -> cotangent)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defvjp_argnum
    >>> product = primitive(lambda x, y: x * y)
    >>> defvjp_argnum(product, lambda k, ans, args, kwargs: lambda g: g * args[1 - k])
    >>> ng.grad(product, argnums=(0, 1))(2.0, 5.0)
    (5.0, 2.0)
    """
    prim = _primitive_of(fun, "defvjp_argnum")
    _callable(prim, "defvjp_argnum", vjpmaker)

    def joint(argnums: tuple[int, ...], ans: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        vjps = [vjpmaker(k, ans, args, kwargs) for k in argnums]
        return lambda g: tuple(v(g) for v in vjps)

    prim.vjp_argnums = joint


def defvjp_argnums(fun: primitive, vjpmaker: VjpArgnums) -> None:
    """Give a primitive one joint rule for all its arguments (autograd's
    ``defvjp_argnums``): ``vjpmaker(argnums, ans, args, kwargs)`` returns a function of
    ``g`` giving the cotangents of the arguments ``argnums`` (the traced ones), in that
    order. For rules whose arguments share work.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    vjpmaker : callable
        ``(argnums, ans, args, kwargs) -> (g -> sequence of cotangents)``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defvjp_argnums
    >>> ratio = primitive(lambda x, y: x / y)
    >>> def ratio_vjp(argnums, ans, args, kwargs):
    ...     x, y = args
    ...     return lambda g: [g / y if k == 0 else -g * ans / y for k in argnums]
    >>> defvjp_argnums(ratio, ratio_vjp)
    >>> ng.grad(ratio, argnums=(0, 1))(3.0, 2.0)
    (0.5, -0.75)
    """
    prim = _primitive_of(fun, "defvjp_argnums")
    _callable(prim, "defvjp_argnums", vjpmaker)
    prim.vjp_argnums = vjpmaker


def defjvp(fun: primitive, *jvpfuns: Callable[..., Any] | str | None, argnums: Sequence[int] | None = None) -> None:
    """Give a primitive its forward-mode rule, one per argument (autograd's ``defjvp``):
    ``jvp(g, ans, *args, **kwargs)`` is the output's tangent for the argument's tangent
    ``g``; ``None`` means the output does not move with that argument, and ``'same'``
    that the rule is the function itself at ``g`` (a linear function).

    nodegrad's forward mode is the transpose of its reverse mode, so a primitive with a VJP
    (:func:`defvjp`) uses that in both modes and keeps this rule unused. A primitive with
    only a JVP gets its VJP by transposing the rule (differentiating it in ``g``; written
    with ``nodegrad.numpy`` it works to any order). A ``'same'`` rule cannot be transposed
    that way: such a primitive needs :func:`defvjp` too.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    *jvpfuns : callable, 'same' or None
        ``(g, ans, *args, **kwargs) -> output tangent``, one per argument in ``argnums``.
    argnums : sequence of int, optional
        The argument positions the rules are for.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defjvp
    >>> sine = primitive(np.sin)
    >>> defjvp(sine, lambda g, ans, x: g * ng.numpy.cos(x))
    >>> y, dy = ng.jvp(sine, (0.0,), (2.0,))
    >>> float(dy), ng.grad(sine)(0.0)
    (2.0, 1.0)
    """
    prim = _primitive_of(fun, "defjvp")
    positions = _argnums_given(prim, "defjvp", jvpfuns, argnums)
    for rule in jvpfuns:
        if rule is not None and rule != "same" and not callable(rule):
            msg = f"defjvp({prim.name}): a JVP rule must be a function, 'same' or None, got {type(rule).__name__}"
            raise ArgumentError(msg)
    rules = dict(zip(positions, jvpfuns, strict=True))

    def one(k: int, g: Any, ans: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if k not in rules:
            msg = f"primitive {prim.name} has no JVP for its argument {k}: give one with defjvp(..., argnums=...)"
            raise NoGradientError(msg)
        rule = rules[k]
        if rule is None:
            return zeros_like(stop_gradient(ans))
        if rule == "same":
            return prim.fun(*(g if j == k else a for j, a in enumerate(args)), **kwargs)
        assert callable(rule)
        return rule(g, ans, *args, **kwargs)

    defjvp_argnum(prim, one)
    prim.jvp_is_fun = any(rule == "same" for rule in jvpfuns)


def defjvp_argnum(fun: primitive, jvpmaker: Callable[..., Any]) -> None:
    """A forward-mode rule for every argument (autograd's ``defjvp_argnum``):
    ``jvpmaker(argnum, g, ans, args, kwargs)`` is the output's tangent for the tangent
    ``g`` of argument ``argnum``. Used as :func:`defjvp` says.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    jvpmaker : callable
        ``(argnum, g, ans, args, kwargs) -> output tangent``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defjvp_argnum
    >>> product = primitive(lambda x, y: x * y)
    >>> defjvp_argnum(product, lambda k, g, ans, args, kwargs: g * args[1 - k])
    >>> ng.grad(product, argnums=(0, 1))(2.0, 5.0)
    (5.0, 2.0)
    """
    prim = _primitive_of(fun, "defjvp_argnum")
    _callable(prim, "defjvp_argnum", jvpmaker)

    def joint(
        argnums: tuple[int, ...], gs: tuple[Any, ...], ans: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        total = None
        for k, g in zip(argnums, gs, strict=True):
            term = jvpmaker(k, g, ans, args, kwargs)
            total = term if total is None else total + term
        return total

    prim.jvp_argnums = joint
    prim.jvp_is_fun = False


def defjvp_argnums(fun: primitive, jvpmaker: JvpArgnums) -> None:
    """One joint forward-mode rule (autograd's ``defjvp_argnums``):
    ``jvpmaker(argnums, gs, ans, args, kwargs)`` is the output's tangent for the tangents
    ``gs`` of the arguments ``argnums``. Used as :func:`defjvp` says.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.
    jvpmaker : callable
        ``(argnums, gs, ans, args, kwargs) -> output tangent``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, defjvp_argnums
    >>> total = primitive(lambda x, y: x + 2.0 * y)
    >>> defjvp_argnums(total, lambda argnums, gs, ans, args, kwargs: sum(
    ...     g * (1.0 if k == 0 else 2.0) for k, g in zip(argnums, gs)))
    >>> ng.grad(total, argnums=(0, 1))(1.0, 1.0)
    (1.0, 2.0)
    """
    prim = _primitive_of(fun, "defjvp_argnums")
    _callable(prim, "defjvp_argnums", jvpmaker)
    prim.jvp_argnums = jvpmaker
    prim.jvp_is_fun = False


def def_linear(fun: primitive) -> None:
    """Mark a primitive as linear in each argument (autograd's ``def_linear``): its JVP is
    the function itself at the tangent. Reverse mode still needs its VJP
    (:func:`defvjp`), which nodegrad's forward mode then uses too.

    Parameters
    ----------
    fun : primitive
        Made with :class:`primitive`.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.extend import primitive, def_linear, defvjp
    >>> double = primitive(lambda x: 2.0 * x)
    >>> def_linear(double)
    >>> defvjp(double, lambda ans, x: lambda g: 2.0 * g)
    >>> ng.grad(double)(1.0)
    2.0
    """
    prim = _primitive_of(fun, "def_linear")
    defjvp_argnum(
        prim, lambda k, g, ans, args, kwargs: prim.fun(*(g if j == k else a for j, a in enumerate(args)), **kwargs)
    )
    prim.jvp_is_fun = True


def _callable(prim: primitive, who: str, rule: Any) -> None:
    if not callable(rule):
        msg = f"{who}({prim.name}): needs a function, got {type(rule).__name__}"
        raise ArgumentError(msg)
