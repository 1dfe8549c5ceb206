"""autograd's ``autograd.misc``, for ports: ``from nodegrad.misc import flatten, fixed_point``.

:func:`flatten` lays a structure's float leaves in one vector as autograd's does: dict
entries in the order of their *sorted* keys. :func:`nodegrad.tree.ravel` keeps the order
the structure has (a dict's insertion order, as JAX's ``ravel_pytree`` does not), which is
what new code wants; a port whose vector positions carry meaning (a Hessian labelled by
sorted parameter names, say) wants autograd's order, and gets it here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodegrad.engine.structure import LEAF, TreeDef
from nodegrad.engine.structure import flatten as flatten_tree
from nodegrad.errors import StructureError
from nodegrad.implicit import custom_fixed_point
from nodegrad.tree import ravel

__all__ = ["fixed_point", "flatten", "flatten_func"]


def flatten(value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten every float leaf of ``value`` into one vector, dict entries in the order of
    their sorted keys, as ``autograd.misc.flatten`` does; and give the inverse.

    Otherwise as :func:`nodegrad.tree.ravel` (records, lists and tuples in their order;
    static leaves such as ints and strings stay out of the vector and come back unchanged;
    traced leaves give a traced vector, and both directions differentiate). The inverse
    rebuilds ``value``'s structure, its dicts with their own key order.

    Parameters
    ----------
    value : structure
        A dict, list, tuple or record (nested), an array, or a float. Each dict's keys must
        be sortable, as autograd requires.

    Returns
    -------
    flat : ndarray or Traced
        A 1-D array of all float entries.
    unflatten : callable
        ``unflatten(vector)`` rebuilds ``value``'s structure from a vector of ``flat``'s size.

    Examples
    --------
    >>> import numpy as np
    >>> from nodegrad.misc import flatten
    >>> flat, unflatten = flatten({"w": np.array([1.0, 2.0]), "b": 0.5})
    >>> flat  # "b" sorts before "w"
    array([0.5, 1. , 2. ])
    >>> unflatten(flat * 2.0)
    {'w': array([2., 4.]), 'b': 1.0}
    """
    found, treedef = flatten_tree(value)
    order = _sorted_order(treedef, 0, "")
    flat, unravel = ravel([found[i] for i in order])

    def unflatten(vector: Any) -> Any:
        rebuilt = list(found)
        for i, leaf in zip(order, unravel(vector), strict=True):
            rebuilt[i] = leaf
        return treedef.unflatten(rebuilt)

    return flat, unflatten


def flatten_func(func: Callable[..., Any], example: Any) -> tuple[Callable[..., Any], Callable[[Any], Any], Any]:
    """``func`` of a structure as a function of one vector, as ``autograd.misc.flatten_func``:
    returns ``(flat_func, unflatten, flat_example)`` where
    ``flat_func(vector, *args) = flatten(func(unflatten(vector), *args))[0]``.

    Parameters
    ----------
    func : callable
        A function whose first argument has ``example``'s structure.
    example : structure
        The structure, also the point whose vector is returned.

    Returns
    -------
    (flat_func, unflatten, flat_example)

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.misc import flatten_func
    >>> loss = lambda p: np.sum(p["w"] ** 2) + p["b"]
    >>> flat_loss, unflatten, x = flatten_func(loss, {"w": np.array([1.0, 2.0]), "b": 0.5})
    >>> ng.grad(flat_loss)(x)
    array([1., 2., 4.])
    """
    flat_example, unflatten = flatten(example)

    def flat_func(vector: Any, *args: Any) -> Any:
        return flatten(func(unflatten(vector), *args))[0]

    return flat_func, unflatten, flat_example


def _sorted_order(treedef: TreeDef, start: int, path: str) -> list[int]:
    """The positions of ``treedef``'s leaves (the first at ``start``) with each dict's
    entries taken in the order of their sorted keys."""
    if treedef is LEAF:
        return [start]
    starts, offset = [], start
    for child in treedef.children:
        starts.append(offset)
        offset += child.num_leaves
    entries = list(range(len(treedef.keys)))
    keys: list[Any] = treedef.keys
    if treedef.kind == "map":
        try:
            entries.sort(key=lambda k: keys[k])
        except TypeError as exc:
            where = f"the dict at {path}" if path else "the dict"
            msg = (
                f"flatten: {where} has keys that cannot be sorted ({exc}); autograd's flatten sorts them: "
                "nodegrad.tree.ravel keeps their order instead"
            )
            raise StructureError(msg) from None
    order: list[int] = []
    for k in entries:
        order.extend(_sorted_order(treedef.children[k], starts[k], path + treedef.step(keys[k])))
    return order


def fixed_point(
    f: Callable[[Any], Callable[[Any], Any]], a: Any, x0: Any, distance: Callable[[Any, Any], Any], tol: float
) -> Any:
    """The fixed point of ``f(a)``, iterated from ``x0``: ``autograd.misc.fixed_points``'
    ``fixed_point``, with its signature and its stopping rule, differentiable with respect
    to ``a``.

    ``x = f(a)(x0)``, then ``x = f(a)(x)`` while ``distance(x, x_prev) > tol``. The
    iterations run on plain values and are not differentiated: the gradient with respect
    to ``a`` comes from the fixed-point condition (see :func:`nodegrad.custom_fixed_point`).

    Parameters
    ----------
    f : callable
        ``f(a)`` returns the map ``x -> f(a)(x)`` whose fixed point is sought.
    a : any
        The parameters (an array, a number, any structure).
    x0 : any
        The starting point.
    distance : callable
        ``distance(x, x_prev)``, a number.
    tol : float
        The iteration stops once ``distance`` is at most ``tol``.

    Returns
    -------
    any
        The fixed point, of ``x0``'s structure.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.misc import fixed_point
    >>> newton_sqrt = lambda a: lambda x: 0.5 * (x + a / x)
    >>> distance = lambda x, y: np.abs(x - y)
    >>> round(float(fixed_point(newton_sqrt, 2.0, 1.0, distance, 1e-12)) ** 2, 12)
    2.0
    >>> float(ng.grad(lambda a: fixed_point(newton_sqrt, a, 1.0, distance, 1e-12))(4.0))  # 1 / (2 sqrt(a))
    0.25
    """

    def iterate(init: Any, params: Any) -> Any:
        step = f(params)
        x, x_prev = step(init), init
        while distance(x, x_prev) > tol:
            x, x_prev = step(x), x
        return x

    iterate.__qualname__ = f"fixed_point({getattr(f, '__qualname__', 'f')})"
    return custom_fixed_point(lambda x, params: f(params)(x))(iterate)(x0, a)
