"""numpy's own arguments as a traced call receives them.

numpy's functions take arguments nodegrad cannot honour on traced values (``out=``,
``dtype=``, ...): :func:`no_extras` refuses them by name rather than ignoring them.
:func:`read_keepdims` reads a ``keepdims`` numpy may leave as ``np._NoValue``, and
:func:`forward_values` gives the plain values a call with no gradient runs on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.traced import unwrap
from nodegrad.errors import NoGradientError, user_location

__all__ = ["forward_values", "no_extras", "read_keepdims"]


def no_extras(name: str, **extras: Any) -> None:
    """Refuse, naming ``np.{name}``, the arguments of ``extras`` that were given."""
    for value in extras.values():
        if value is not None and value is not np._NoValue:
            break
    else:
        return  # the common case: none given
    given = sorted(k for k, v in extras.items() if v is not None and v is not np._NoValue)
    if given:
        msg = f"np.{name}: the argument(s) {given} are not supported on traced values [called at {user_location()}]"
        raise NoGradientError(msg)


def read_keepdims(value: Any) -> bool:
    """numpy's keepdims argument, which may be left as np._NoValue."""
    return False if value is np._NoValue else bool(value)


def forward_values(args: Any) -> Any:
    """``args`` with traced values (also inside lists and tuples) replaced by their values."""
    if isinstance(args, (list, tuple)):
        return type(args)(forward_values(a) for a in args)
    if isinstance(args, dict):
        return {k: forward_values(v) for k, v in args.items()}
    return unwrap(args)
