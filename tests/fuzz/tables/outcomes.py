"""A check's outcome and the classing of an exception: a documented refusal, a nodegrad error
naming no remedy, or a foreign exception."""

from __future__ import annotations

import re
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from nodegrad.errors import NodegradError

DEFECTS = ("foreign", "unexplained", "differs")  # the verdicts that are defects

#: A nodegrad error names what to do when it says one of these.
REMEDY = re.compile(
    r"\b(use|pass|write|take|return|call|compute|gather|instead|rather|then|see|one of|joins|give)\b", re.IGNORECASE
)


@attrs.frozen
class Outcome:
    check: str
    verdict: str  # agree refused foreign unexplained differs skipped
    what: str = ""  # the class: the method refused, the exception and where, the kind of difference
    detail: str = ""  # the figures
    notes: tuple[str, ...] = ()  # warnings (a replay that ran eagerly)
    entry: tuple[int, str] | None = None  # the gradient entry that differs (row position, column)
    same_rows: bool = False  # a vmap refusal where pandas' output has one index for every example

    @property
    def defect(self) -> bool:
        return self.verdict in DEFECTS

    @property
    def key(self) -> tuple[str, str]:
        """A class of defect: an exception by its kind and where, whichever check raised it
        (one bug breaks every check on the program); a difference by its check too."""
        return ("", f"{self.verdict}: {self.what}") if self.verdict != "differs" else (self.check, self.what)


def first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [""])[0][:300]


def normalize(text: str) -> str:
    text = re.sub(r"\[at [^\]]*\]", "", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "#", text)
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}", "(#)", text)
    text = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", text)
    return text.strip()[:140]


def where_raised(error: BaseException) -> str:
    """The innermost place in nodegrad the exception passed through, else the innermost of
    all (the program's own line, or a library's)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/nodegrad/" in f.filename.replace("\\", "/")]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    path = frame.filename.replace("\\", "/")
    short = path.split("/nodegrad/", 1)[1] if "/nodegrad/" in path else path.rsplit("/", 1)[-1]
    prefix = "nodegrad/" if "/nodegrad/" in path else ""
    return f"{prefix}{short}:{frame.name}"


def method_named(message: str, error: BaseException) -> str:
    """The method or step a refusal names: ``Frame.pivot_table``, ``Series.sort_values``,
    or the step a table refuses (``a row mask``), with the error's class."""
    name = type(error).__name__
    found = re.search(r"\b((?:Frame|Series|DataFrame|GroupBy)\.[\w.]*(?:\(\.\.\.\)\.\w+)?)", message)
    if found:
        return f"{found.group(1).rstrip('.:')} ({name})"
    step = re.search(r"table step: (.{1,60}?)(?: depends| is |;|:|$)", message)
    if step:
        return f"{normalize(step.group(1))} ({name})"
    return f"{normalize(message)[:60]} ({name})"


def classify_error(check: str, error: BaseException, notes: tuple[str, ...] = ()) -> Outcome:
    """A documented refusal (a nodegrad error naming what to do), a nodegrad error naming no
    remedy, or a foreign exception."""
    message = first_line(error)
    name = type(error).__name__
    if isinstance(error, NodegradError):
        if REMEDY.search(str(error)):
            return Outcome(check, "refused", method_named(message, error), f"{name}: {message}", notes)
        return Outcome(check, "unexplained", f"{name}: {normalize(message)}", message, notes)
    return Outcome(check, "foreign", f"{name} at {where_raised(error)}: {normalize(message)}", message, notes)


def attempt(thunk: Callable[[], Any]) -> tuple[Any, BaseException | None, tuple[str, ...]]:
    """``thunk()`` with its warnings collected (a ReplayWarning is a note), or the exception."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            value, error = thunk(), None
        except Exception as raised:
            value, error = None, raised
    notes = tuple(sorted({f"{w.category.__name__}: {normalize(str(w.message))[:90]}" for w in caught}))
    notes = tuple(n for n in notes if n.startswith("ReplayWarning"))
    return value, error, notes


def differs(check: str, found: tuple[str, str], notes: tuple[str, ...] = (), **extra: Any) -> Outcome:
    return Outcome(check, "differs", found[0], found[1], notes, **extra)
