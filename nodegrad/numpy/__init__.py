"""numpy's namespace, for traced values too: ``import nodegrad.numpy as np``.

Code written for numpy, or for ``autograd.numpy``, runs under nodegrad's transforms after
changing that one import line. Every name numpy declares public (``numpy.__all__``) is
here, generated from numpy's own namespace, not kept by hand:

- the functions numpy dispatches (``np.exp``, ``np.sum``, ``np.linalg.solve``, ...) run as
  numpy's own: numpy hands traced values to nodegrad through its protocols
  (``__array_ufunc__`` / ``__array_function__``, see :mod:`nodegrad.numpy_api`), which
  also keeps plain ``import numpy`` working on traced values. The ufuncs are numpy's
  objects; the other functions are wrapped (:mod:`nodegrad.numpy.lists`) so that they
  also take Python lists and tuples holding traced values where numpy takes an
  array-like (``np.sum([x * 2, x ** 2])``, ``np.dot([x, 1.0], [2.0, x])``), which numpy
  alone would not hand over;
- the few that numpy builds in C from the numbers inside lists, without asking the
  elements (``np.array([x, y])``, ``np.asarray``, ``np.full(shape, x)``, ...), are
  replaced by the versions in :mod:`nodegrad.numpy.construct` (:data:`REPLACED`);
- ``np.r_`` and ``np.c_`` also take traced entries (:mod:`nodegrad.numpy.index_tricks`);
  constants, dtypes, the other index tricks and every other name pass through.

``nodegrad.numpy.linalg``, ``.fft`` and ``.random`` are importable modules holding numpy's
submodule of the same name (``import nodegrad.numpy.random as npr``).

Examples
--------
>>> import nodegrad as ng
>>> import nodegrad.numpy as np
>>> ng.grad(lambda x: np.sum(np.array([x, np.sin(x)]) ** 2.0))(0.5)
1.8414709848078965
>>> ng.grad(lambda x: np.sum([x * 2.0, x**2.0]))(0.5)
3.0
"""

from typing import Any

import numpy as _numpy

from nodegrad.numpy import construct as _construct
from nodegrad.numpy import fft, linalg, random
from nodegrad.numpy import index_tricks as _index_tricks
from nodegrad.numpy.lists import with_lists as _with_lists

#: The names whose numpy versions would turn traced list elements into plain numbers.
REPLACED = frozenset(_construct.__all__) | frozenset(_index_tricks.__all__)

#: numpy's submodules that are importable here as modules of their own.
SUBMODULES = {"fft": fft, "linalg": linalg, "random": random}

globals().update(
    _with_lists(_numpy, [name for name in _numpy.__all__ if name not in REPLACED | SUBMODULES.keys()], "numpy")
)
globals().update({name: getattr(_construct, name) for name in _construct.__all__})
globals().update({name: getattr(_index_tricks, name) for name in _index_tricks.__all__})

__all__ = sorted(set(_numpy.__all__) | REPLACED)


def __getattr__(name: str) -> Any:
    # Only reached for a name numpy does not declare public: the same answer numpy gives.
    return getattr(_numpy, name)
