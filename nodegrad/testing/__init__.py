"""Testing helpers for code built on nodegrad.

Examples
--------
>>> import nodegrad as ng
>>> from nodegrad.testing import check_grads
>>> check_grads(ng.tanh, 0.3)
"""

from nodegrad.testing._check import check_grads
from nodegrad.testing._consistency import ConsistencyError, check_consistency
from nodegrad.testing._errors import GradientCheckError
from nodegrad.testing._plot import plot_check_grads

__all__ = ["ConsistencyError", "GradientCheckError", "check_consistency", "check_grads", "plot_check_grads"]
