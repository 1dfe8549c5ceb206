"""The error :func:`nodegrad.testing.check_grads` raises, with the op it blames."""

from __future__ import annotations

from typing import Any

__all__ = ["GradientCheckError"]


class GradientCheckError(AssertionError):
    """A derivative disagrees with its numeric reference (raised by :func:`~nodegrad.testing.check_grads`).

    A subclass of ``AssertionError``, so ``pytest.raises(AssertionError)`` catches it. Its
    message says which order and mode failed and shows the numbers; below them, the op
    found to disagree with its own forward, if one does.

    Attributes
    ----------
    culprit : str or None
        The name of the first recorded op whose gradient rule (or the rule's own derivative)
        disagrees with central differences of its forward: a registry name such as
        ``"multiply"``, or ``"custom_vjp:<function name>"`` for a :func:`nodegrad.custom_vjp`
        function. ``None`` when no single op disagrees.
    location : str or None
        ``"file:line"`` of the user code that recorded the culprit, or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.testing import GradientCheckError, check_grads
    >>> @ng.custom_vjp
    ... def double(x):
    ...     return 2.0 * x
    >>> double.defvjp(lambda x: (2.0 * x, None), lambda res, g: (3.0 * g,))  # should be 2 g
    >>> try:
    ...     check_grads(lambda x: ng.sin(double(x)), np.array([0.1, 0.2]), modes=("rev",))
    ... except GradientCheckError as error:
    ...     print(error.culprit)
    custom_vjp:double
    """

    def __init__(self, message: str, culprit: str | None = None, location: str | None = None) -> None:
        super().__init__(message)
        self.culprit = culprit
        self.location = location

    def __reduce__(self) -> Any:
        # Rebuilt with its attributes, e.g. when a test runner sends it to another process.
        return (type(self), (str(self), self.culprit, self.location))
