"""Jupyter's view of a program recorded by ``replay``: an HTML table, one row per
instruction, as the arena's table has one row per node."""

from __future__ import annotations

import html
from typing import Any

from nodegrad.display.tables import table_view
from nodegrad.transforms.replay import describe_instruction

__all__ = ["trace_html"]

_COLUMNS = ("step", "writes", "call", "holds", "checked")


def _row(k: int, step: Any, describe: Any) -> str:
    line = describe(step)
    if step.kind != "call":
        writes, call, holds, checked = "", line, "", "guard"
    else:
        text = line.split("    ")[0]
        writes, _, call = text.rpartition(" = ") if " = " in text and step.outs else ("", "", text)
        holds = ", ".join(step.values)
        checked = "shape" if any(shape is not None for shape in step.shapes) else ""
    # A call and the values it holds wrap between words; the short columns stay whole.
    cells = [html.escape(str(k)), html.escape(writes), _wrapping(call, "ng-text ng-wide"), _wrapping(holds), checked]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _wrapping(text: str, kind: str = "ng-text") -> str:
    return f'<div class="{kind}">{html.escape(text)}</div>' if text else ""


def trace_html(trace: Any, limit: int = 60) -> str:
    """An HTML table of ``trace``'s instructions (the first and last ``limit // 2`` of a
    long one), at most 1,000 px wide, with the signature and the number of checks above."""
    describe = describe_instruction
    steps = trace.instructions
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in _COLUMNS) + "</tr>"
    if len(steps) <= limit:
        rows = [_row(k, s, describe) for k, s in enumerate(steps)]
    else:
        half = limit // 2
        elided = f'<tr><td class="ng-elided" colspan="{len(_COLUMNS)}">... {len(steps) - 2 * half} steps ...</td></tr>'
        rows = [
            *(_row(k, steps[k], describe) for k in range(half)),
            elided,
            *(_row(k, steps[k], describe) for k in range(len(steps) - half, len(steps))),
        ]
    caption = (
        f"<caption>Replay trace of {html.escape(trace.signature)}: {len(steps)} steps, {trace.guards} checks</caption>"
    )
    return table_view(f'<table class="ng-table ng-arena">{caption}{head}{"".join(rows)}</table>')
