"""HIPS autograd's ``autograd.builtins``, for code ported with a change of imports:
``from nodegrad.builtins import tuple, list, dict, isinstance, type``.

autograd needs its own ``tuple``, ``list`` and ``dict`` to build a container of boxed
values that it differentiates as one value (``ag_tuple((x, y))``). nodegrad differentiates
Python's own containers of traced values (and records, and named tuples), so here they
*are* Python's ``tuple``, ``list`` and ``dict``: ``ag_tuple((x, y))`` is ``(x, y)``, and
``isinstance(t, tuple)`` holds for it as autograd's does. ``isinstance`` and ``type`` read
through traced (and batched) values as autograd's read through its boxes: ``type(x)`` is
the type of the value ``x`` stands for, ``np.ndarray`` or ``float``.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> from nodegrad.builtins import isinstance, tuple
>>> def f(x):
...     pair = tuple((x, 2.0 * x))
...     assert isinstance(x, np.ndarray)
...     return ng.sum(pair[0] * pair[1])
>>> ng.grad(f)(np.array([1.0, 2.0]))
array([4., 8.])
"""

from __future__ import annotations

import builtins as _python
from typing import Any

from nodegrad.engine.levels import lower

# tuple, list and dict are Python's own (importable from here, documented above), so only the
# two functions are this module's public names.
__all__ = ["isinstance", "type"]

tuple = _python.tuple  # noqa: A001  (autograd's names, which shadow Python's on purpose)
list = _python.list  # noqa: A001
dict = _python.dict  # noqa: A001


def isinstance(obj: Any, classinfo: Any) -> bool:  # noqa: A001
    """``isinstance`` of the value ``obj`` stands for (``obj`` itself when it is plain), as
    autograd's ``autograd.builtins.isinstance`` reads through its boxes.

    Parameters
    ----------
    obj : any
        A traced, batched or plain value.
    classinfo : type or tuple of types
        As for Python's ``isinstance``.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.builtins import isinstance
    >>> ng.grad(lambda x: x * 2.0 if isinstance(x, float) else None)(1.0)
    2.0
    """
    return _python.isinstance(lower(obj), classinfo)


def type(obj: Any) -> Any:  # noqa: A001
    """The type of the value ``obj`` stands for (of ``obj`` itself when it is plain), as
    autograd's ``autograd.builtins.type``.

    Parameters
    ----------
    obj : any
        A traced, batched or plain value.

    Returns
    -------
    type

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.builtins import type
    >>> ng.grad(lambda x: ng.sum(x) if type(x) is np.ndarray else None)(np.ones(2))
    array([1., 1.])
    """
    return _python.type(lower(obj))
