"""What a table and a column share of pandas' spelling: the operators and the row selectors.

Each operator is one call of the class's ``_binary(other, op, name, reflected)``, which
aligns the labels as pandas does; the selectors hand a key to the class's own indexer.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

__all__ = ["Operators", "Selection"]


def _operator(op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        return self._binary(other, op, name, reflected)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _named(op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Callable[..., Any]:
    """pandas' named form of an operator (``s.add(t, fill_value=0)``)."""

    def method(self: Any, other: Any, *args: Any, fill_value: Any = None, **kwargs: Any) -> Any:
        if args or kwargs or fill_value is not None:
            return self._binary_with(other, op, name, reflected, fill_value, args, kwargs)
        return self._binary(other, op, name, reflected)

    method.__name__ = f"{'r' if reflected else ''}{name}"
    method.__doc__ = f"``{'other ' if reflected else ''}{name} {'self' if reflected else 'other'}``, as pandas' method."
    return method


class Operators:
    """``+ - * / // % ** & | ^`` (both ways) and the comparisons, through ``_binary``, and
    pandas' named forms of them (``add``, ``rsub``, ``pow``, ``lt``, ... with ``fill_value``)."""

    __slots__ = ()

    def _binary(self, other: Any, op: Callable[[Any, Any], Any], name: str, reflected: bool = False) -> Any:
        raise NotImplementedError

    def _binary_with(
        self,
        other: Any,
        op: Callable[[Any, Any], Any],
        name: str,
        reflected: bool,
        fill_value: Any,
        args: Any,
        kwargs: Any,
    ) -> Any:
        raise NotImplementedError

    __add__, __radd__ = _operator(operator.add, "add"), _operator(operator.add, "add", True)
    __sub__, __rsub__ = _operator(operator.sub, "sub"), _operator(operator.sub, "sub", True)
    __mul__, __rmul__ = _operator(operator.mul, "mul"), _operator(operator.mul, "mul", True)
    __truediv__ = _operator(operator.truediv, "truediv")
    __rtruediv__ = _operator(operator.truediv, "truediv", True)
    __floordiv__ = _operator(operator.floordiv, "floordiv")
    __rfloordiv__ = _operator(operator.floordiv, "floordiv", True)
    __mod__, __rmod__ = _operator(operator.mod, "mod"), _operator(operator.mod, "mod", True)
    __pow__, __rpow__ = _operator(operator.pow, "pow"), _operator(operator.pow, "pow", True)
    __and__, __rand__ = _operator(operator.and_, "and"), _operator(operator.and_, "and", True)
    __or__, __ror__ = _operator(operator.or_, "or"), _operator(operator.or_, "or", True)
    __xor__, __rxor__ = _operator(operator.xor, "xor"), _operator(operator.xor, "xor", True)
    __lt__, __le__ = _operator(operator.lt, "lt"), _operator(operator.le, "le")
    __gt__, __ge__ = _operator(operator.gt, "gt"), _operator(operator.ge, "ge")
    __eq__ = _operator(operator.eq, "eq")
    __ne__ = _operator(operator.ne, "ne")
    __hash__ = None  # type: ignore[assignment]

    add, radd = _named(operator.add, "add"), _named(operator.add, "add", True)
    sub, rsub = _named(operator.sub, "sub"), _named(operator.sub, "sub", True)
    subtract = sub
    mul, rmul = _named(operator.mul, "mul"), _named(operator.mul, "mul", True)
    multiply = mul
    truediv, rtruediv = _named(operator.truediv, "truediv"), _named(operator.truediv, "truediv", True)
    div, rdiv, divide = truediv, rtruediv, truediv
    floordiv, rfloordiv = _named(operator.floordiv, "floordiv"), _named(operator.floordiv, "floordiv", True)
    mod, rmod = _named(operator.mod, "mod"), _named(operator.mod, "mod", True)
    pow, rpow = _named(operator.pow, "pow"), _named(operator.pow, "pow", True)
    lt, le, gt, ge = (
        _named(operator.lt, "lt"),
        _named(operator.le, "le"),
        _named(operator.gt, "gt"),
        _named(operator.ge, "ge"),
    )
    eq, ne = _named(operator.eq, "eq"), _named(operator.ne, "ne")


class Selection:
    """``loc``, ``iloc``, ``at``, ``iat``, ``head`` and ``tail``: pandas' own choice of rows,
    made by the class's indexer (``_indexer(how)``)."""

    __slots__ = ()

    def _indexer(self, how: str) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def loc(self) -> Any:
        """By label: labels, lists, slices, boolean masks (and ``[rows, columns]`` on a table)."""
        return self._indexer("loc")

    @property
    def iloc(self) -> Any:
        """By position: ints, lists, slices, boolean masks (and ``[rows, columns]`` on a table)."""
        return self._indexer("iloc")

    @property
    def at(self) -> Any:
        """One value by label."""
        return self._indexer("loc")

    @property
    def iat(self) -> Any:
        """One value by position."""
        return self._indexer("iloc")

    def head(self, n: int = 5) -> Any:
        """The first ``n`` rows."""
        return self.iloc[:n]

    def tail(self, n: int = 5) -> Any:
        """The last ``n`` rows."""
        return self.iloc[max(len(self) - n, 0) :] if n >= 0 else self.iloc[-n:]
