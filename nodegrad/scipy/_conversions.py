"""What an error says when one of scipy's functions turns a traced value into a plain
array: nodegrad.scipy's version of it to use instead, or that there is none.

Importing :mod:`nodegrad.scipy` puts this in the engine's socket, in place of the numpy
namespace's answer, which can only say to try nodegrad.scipy
(:mod:`nodegrad.numpy_api.conversions`).
"""

from __future__ import annotations

import sys
from types import FrameType

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.traced import DETACH
from nodegrad.numpy_api.conversions import scipy_advice

__all__ = ["advice"]


def _resolves(dotted: str) -> bool:
    """Whether ``nodegrad.scipy...`` name ``dotted`` is there, read from the innermost of its
    modules imported so far (attribute access on nodegrad.scipy loads the rest)."""
    parts = dotted.split(".")
    for k in range(len(parts) - 1, 1, -1):
        obj = sys.modules.get(".".join(parts[:k]))
        if obj is not None:
            for part in parts[k:]:
                obj = getattr(obj, part, None)
            return obj is not None
    return False


def _instead(ours: str) -> str:
    if _resolves(ours):
        return f"Use {ours}, which takes traced values; or {DETACH}"
    return f"There is no {ours}: write it with nodegrad ops, or {DETACH}"


def advice(frame: FrameType, full: str, what: str) -> str:
    """The error for scipy's function ``full`` (running in ``frame``), which cannot see
    traced values: naming nodegrad.scipy's version, or saying there is none."""
    return scipy_advice(frame, full, what, _instead)


PLUGINS.library_advice["scipy"] = advice
