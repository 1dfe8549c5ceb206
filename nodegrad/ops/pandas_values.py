"""pandas objects meeting traced values: what the error says when pandas turns a traced
operand into a plain array (``series * x`` reads ``x`` as a list of numbers).

Beside the refusal of pandas objects inside differentiated structures
(:mod:`nodegrad.ops.structured`); importing this module fills the engine's socket for
pandas (:mod:`nodegrad.engine.plugins`). pandas itself is never imported here.
"""

from __future__ import annotations

from types import FrameType

from nodegrad.engine.plugins import PLUGINS
from nodegrad.engine.traced import DETACH

__all__ = ["pandas_advice"]


def pandas_advice(frame: FrameType, full: str, what: str) -> str:
    """The error for pandas' function ``full``, which cannot see traced values: take the
    pandas object's values first."""
    return (
        f"{full} cannot see traced values: {what} pandas reads a traced operand as a list of values: take the "
        f"pandas object's values first, series.to_numpy() * x; or {DETACH}"
    )


PLUGINS.library_advice["pandas"] = pandas_advice
