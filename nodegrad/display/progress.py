"""Progress bars for long loops: ``tqdm.auto`` when it is installed, nothing otherwise."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["progress"]

T = TypeVar("T")


def progress(items: Iterable[T], **options: Any) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar when ``tqdm`` is installed (the
    ``display`` extra): a notebook widget in Jupyter, a text bar in a terminal.

    Examples
    --------
    >>> from nodegrad.display import progress
    >>> sum(progress(range(4), disable=True))
    6
    """
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return iter(items)
    return iter(tqdm(items, **options))
