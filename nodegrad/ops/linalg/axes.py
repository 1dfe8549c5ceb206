"""What the linear algebra rooms share about a matrix's axes."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["transposed"]


def transposed(x: Any) -> Any:
    """The transpose of the last two axes, of one matrix or of each in a stack.
    ``np.swapaxes`` dispatches on traced values, so a rule written with it differentiates
    again."""
    return np.swapaxes(x, -1, -2)
