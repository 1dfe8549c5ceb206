"""Progress bars for long loops: ``tqdm.auto`` when it is installed (the ``display``
extra), a plain text count otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

__all__ = ["progress"]

T = TypeVar("T")

_HINT = "progress: counting in text; pip install 'nodegrad[display]' for a progress bar\n"
_hinted = [False]  # the hint is given once a session


def progress(items: Iterable[T], **options: Any) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar.

    With the ``display`` extra installed (tqdm and ipywidgets), the bar is ``tqdm.auto``'s:
    a widget in Jupyter, a text bar in a terminal, and ``options`` are tqdm's. Without it,
    the count is written as text to standard error (``12/30 40% 1.5s``), on one line that
    updates in a terminal or a notebook, and once every tenth of the way in a log; the
    first count of a session is preceded by a line saying how to get the bar. Of tqdm's options it then reads ``desc``,
    ``total``, ``disable`` and ``file``.

    Examples
    --------
    >>> from nodegrad.display import progress
    >>> sum(progress(range(4), disable=True))
    6
    """
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return _counting(items, **options)
    return iter(tqdm(items, **options))


def _counting(
    items: Iterable[T],
    desc: str = "",
    total: int | None = None,
    disable: bool = False,
    file: TextIO | None = None,
    **_: Any,
) -> Iterator[T]:
    """``items``, with a text count of them written to ``file`` as they pass."""
    if disable:
        yield from items
        return
    stream = file if file is not None else sys.stderr
    if total is None:
        total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
    live = _updates_in_place(stream)
    if not _hinted[0]:
        stream.write(_HINT)
        _hinted[0] = True
    start = time.perf_counter()
    shown, tenth, done = start, 0, 0

    def line() -> str:
        of = f"/{total} {100 * done // total}%" if total else ""
        return f"{desc + ': ' if desc else ''}{done}{of} {time.perf_counter() - start:.1f}s"

    if live:
        stream.write(line())
        stream.flush()

    try:
        for item in items:
            yield item
            done += 1
            now = time.perf_counter()
            if live and now - shown >= 0.1:
                stream.write("\r" + line())
                stream.flush()
                shown = now
            elif not live and total and 10 * done // total > tenth:
                tenth = 10 * done // total
                stream.write(line() + "\n")
    finally:
        if live:
            stream.write("\r" + line() + "\n")
        elif not total:
            stream.write(line() + "\n")
        stream.flush()


def _updates_in_place(stream: TextIO) -> bool:
    """Whether a carriage return rewrites the line on ``stream``: a terminal, or a notebook."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or type(stream).__module__.startswith("ipykernel")
