"""Progress bars for long loops: ``tqdm.auto`` when it is installed (the ``display``
extra), a plain text count otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, TypeVar

__all__ = ["Progress", "progress"]

T = TypeVar("T")

_HINT = "progress: counting in text; pip install 'nodegrad[display]' for a progress bar\n"
_hinted = [False]  # the hint is given once a session


class Progress(Iterator[T]):
    """The items of a loop under a progress bar, and the way to print beside that bar.

    A line printed with ``print`` while the bar is drawn lands on the bar's line in a
    terminal (the bar is redrawn in place with a carriage return); :meth:`write` clears the
    bar, prints the line and draws the bar again below it.
    """

    def __init__(self, items: Iterator[T], write: Callable[[str], None]) -> None:
        self._items, self._write = items, write

    def __iter__(self) -> Progress[T]:
        return self

    def __next__(self) -> T:
        return next(self._items)

    def write(self, line: str) -> None:
        """Print ``line`` to standard output on a line of its own, above the bar.

        Parameters
        ----------
        line : str
            The text to print, without its newline.
        """
        self._write(line)


def progress(items: Iterable[T], **options: Any) -> Progress[T]:
    """Iterate over ``items`` with a progress bar.

    With the ``display`` extra installed (tqdm and ipywidgets), the bar is ``tqdm.auto``'s:
    a widget in Jupyter, a text bar in a terminal, and ``options`` are tqdm's. Without it,
    the count is written as text to standard error (``12/30 40% 1.5s``), on one line that
    updates in a terminal or a notebook, and once every tenth of the way in a log; the
    first count of a session is preceded by a line saying how to get the bar.

    Parameters
    ----------
    items : iterable
        What the loop goes over.
    **options
        tqdm's options; without tqdm, ``desc``, ``total``, ``disable`` and ``file`` are read.

    Returns
    -------
    Progress
        An iterator over ``items``; print inside the loop with its ``write`` method, so the
        printed lines and the bar do not share a line.

    Examples
    --------
    >>> from nodegrad.display import progress
    >>> sum(progress(range(4), disable=True))
    6
    >>> bar = progress(range(3), disable=True)
    >>> for k in bar:
    ...     bar.write(f"step {k}")
    step 0
    step 1
    step 2
    """
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        count = _Count(items, **options)
        return Progress(iter(count), count.write)
    bar = tqdm(items, **options)
    return Progress(iter(bar), bar.write)


class _Count:
    """``items``, with a text count of them written to ``file`` as they pass."""

    def __init__(
        self,
        items: Iterable[Any],
        desc: str = "",
        total: int | None = None,
        disable: bool = False,
        file: TextIO | None = None,
        **_: Any,
    ) -> None:
        self.items, self.desc, self.disable = items, desc, disable
        self.stream = file if file is not None else sys.stderr
        self.total = len(items) if total is None and hasattr(items, "__len__") else total  # type: ignore[arg-type]
        self.live = _updates_in_place(self.stream)
        self.done, self.start = 0, time.perf_counter()
        self.drawn = ""  # the count now on the stream's last line, when it updates in place

    def line(self) -> str:
        total = self.total
        of = f"/{total} {100 * self.done // total}%" if total else ""
        return f"{self.desc + ': ' if self.desc else ''}{self.done}{of} {time.perf_counter() - self.start:.1f}s"

    def __iter__(self) -> Iterator[Any]:
        if self.disable:
            yield from self.items
            return
        stream = self.stream
        if not _hinted[0]:
            stream.write(_HINT)
            _hinted[0] = True
        self.start = time.perf_counter()
        shown, tenth = self.start, 0
        if self.live:
            self.draw()
        try:
            for item in self.items:
                yield item
                self.done += 1
                now = time.perf_counter()
                if self.live and now - shown >= 0.1:
                    self.draw()
                    shown = now
                elif not self.live and self.total and 10 * self.done // self.total > tenth:
                    tenth = 10 * self.done // self.total
                    stream.write(self.line() + "\n")
        finally:
            if self.live:
                self.draw()
                stream.write("\n")
                self.drawn = ""
            elif not self.total:
                stream.write(self.line() + "\n")
            stream.flush()

    def draw(self) -> None:
        """The count, over the one drawn before it (padded: a shorter line leaves no tail)."""
        text = self.line()
        self.stream.write("\r" + text.ljust(len(self.drawn)))
        self.stream.flush()
        self.drawn = text

    def write(self, line: str) -> None:
        """``line`` on standard output, the count cleared first and drawn again below it."""
        if self.drawn:
            self.stream.write("\r" + " " * len(self.drawn) + "\r")
            self.stream.flush()
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if self.drawn:
            self.draw()


def _updates_in_place(stream: TextIO) -> bool:
    """Whether a carriage return rewrites the line on ``stream``: a terminal, or a notebook."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or type(stream).__module__.startswith("ipykernel")
