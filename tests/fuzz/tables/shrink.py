"""Shrinking a defect's program (steps, columns, rows and parts of lines dropped while the
same defect remains) and the short script that shows it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

import attrs

from tests.fuzz.tables.checks import SCALES, run_check
from tests.fuzz.tables.outcomes import Outcome
from tests.fuzz.tables.programs import Program, Step, valid

SHRINK_BUDGET = 60  # checks run while shrinking one defect


def _simpler(program: Program, outcome: Outcome) -> Iterable[Program]:
    """Smaller programs: without the loss (a defect of the forward pass), a step, the tail or
    a term of the loss; without a column or rows of df; then each step, tail and loss with a
    part dropped (a callable of an assign, an operand, a method of a chain)."""
    forward = outcome.check == "vjp" or (outcome.check == "replay" and not outcome.what.startswith(("loss", "grad")))
    if forward and program.loss is not None:
        yield attrs.evolve(program, loss=None)
    for n in reversed(range(len(program.steps))):
        yield attrs.evolve(program, steps=program.steps[:n] + program.steps[n + 1 :])
    if program.tail.line != "t":
        yield attrs.evolve(program, tail=Step("t", frozenset()))
    if program.loss and " + " in program.loss:
        for term in program.loss.split(" + "):
            yield attrs.evolve(program, loss=term)
    if len(program.table.columns) > 1:
        for column in program.table.columns:
            table, other = program.table.without(column.name), program.other.without(column.name)
            yield attrs.evolve(program, table=table, other=other)
    rows = program.table.rows
    if rows > 1:
        for part in (range(rows // 2), range(rows // 2, rows)):
            yield _rows(program, list(part))
        for r in reversed(range(rows)):
            yield _rows(program, [k for k in range(rows) if k != r])
    for n, step in enumerate(program.steps):
        for line in _variants(step.line):
            smaller = Step(line, _families_left(step.families, line))
            yield attrs.evolve(program, steps=(*program.steps[:n], smaller, *program.steps[n + 1 :]))
    for line in _variants(program.tail.line):
        yield attrs.evolve(program, tail=Step(line, _families_left(program.tail.families, line)))
    for line in _variants(program.loss or ""):
        yield attrs.evolve(program, loss=line)


#: What a line of each family shows; a line shrunk past it no longer holds the family.
MARKERS = {
    "filter": re.compile(r"^t(\.loc)?\[[(~]"),
    "assign": re.compile(r"lambda u"),
    "reduce": re.compile(r"\.(sum|mean|std|var|min|max|prod|count)\(\)"),
    "window": re.compile(r"\.(rolling|shift|diff|cumsum)\("),
    "series": re.compile(r"\.(clip|where|map|astype)\(|\.name\b"),
    "align": re.compile(r"\.iloc\[(::-1|1:)\]|\.sort_values\(\)"),
    "transform": re.compile(r"\.transform\("),
    "groupby": re.compile(r"groupby\("),
    "groupby_stats": re.compile(r"\.(std|var)\(\)|'(std|var)'"),
    "merge": re.compile(r"\.merge\("),
    "sort": re.compile(r"\.sort_values\("),
    "loc": re.compile(r"\.loc\[|^t\[\[|\.index\["),
    "iloc": re.compile(r"\.iloc\["),
    "frame_math": re.compile(r"t\[\["),
}


def _families_left(families: frozenset[str], line: str) -> frozenset[str]:
    return frozenset(f for f in families if f not in MARKERS or MARKERS[f].search(line))


def _variants(line: str) -> Iterable[str]:
    """``line`` with one part dropped: a keyword of a call (an assign's callable), a binary
    operation replaced by an operand, a unary one or a numpy function by its argument, a
    method call by the value it is called on."""
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError:
        return
    count = sum(1 for _ in ast.walk(tree))
    for k in range(count):
        node = list(ast.walk(tree))[k]
        replacements: list[Any] = []
        if isinstance(node, ast.Call) and len(node.keywords) > 1:
            for j in range(len(node.keywords)):
                replacements.append(ast.Call(node.func, node.args, node.keywords[:j] + node.keywords[j + 1 :]))
        if isinstance(node, ast.BinOp | ast.BoolOp):
            replacements += [node.left, node.right] if isinstance(node, ast.BinOp) else list(node.values)
        elif isinstance(node, ast.UnaryOp):
            replacements.append(node.operand)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "np" and node.args:
                replacements.append(node.args[0])
            elif not isinstance(owner, ast.Name):
                replacements.append(owner)
        for replacement in replacements:
            found = _replaced(tree, k, replacement)
            if found != line:
                yield found


def _replaced(tree: ast.Expression, k: int, replacement: Any) -> str:
    copy = ast.parse(ast.unparse(tree), mode="eval")
    target = list(ast.walk(copy))[k]
    replacement = ast.parse(ast.unparse(replacement), mode="eval").body
    if target is copy.body:
        return ast.unparse(replacement)
    for parent in ast.walk(copy):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, replacement)
            elif isinstance(value, list) and any(v is target for v in value):
                setattr(parent, field, [replacement if v is target else v for v in value])
    return ast.unparse(copy)


def _rows(program: Program, rows: list[int]) -> Program:
    return attrs.evolve(program, table=program.table.take(rows), other=program.other.take(rows))


def shrink(program: Program, outcome: Outcome, budget: int = SHRINK_BUDGET) -> tuple[Program, Outcome]:
    """Drop steps, columns and rows while ``outcome``'s class of defect remains."""
    changed = True
    while changed and budget > 0:
        changed = False
        for candidate in _simpler(program, outcome):
            if budget <= 0:
                break
            if not candidate.table.columns or not valid(candidate, outcome.check):
                continue
            budget -= 1
            found = run_check(candidate, outcome.check)
            if found.defect and found.key == outcome.key:
                program, outcome, changed = candidate, found, True
                break
    return program, outcome


def repro(program: Program, outcome: Outcome) -> str:
    """A short script that shows ``outcome`` on ``program``: df, the functions on a line
    each, and one or two lines printing nodegrad's answer beside pandas'."""
    check = outcome.check
    forward = check == "vjp" or (check == "replay" and not outcome.what.startswith(("loss", "grad")))
    source = program.source(other=check == "replay", loss=not forward, scaled=check == "vmap", compact=True)
    lines = [source.rstrip("\n")]
    if check == "vjp":
        lines.append('print(ng.vjp(pipeline, df)[0], pipeline(df), sep="\\n\\n")')
    elif check == "grad" and outcome.entry is not None:
        row, label = outcome.entry
        lines.append(
            f"up, down = (df.assign({label}=df[{label!r}].to_numpy() + d * (np.arange(len(df)) == {row})) "
            "for d in (1e-6, -1e-6))"
        )
        lines.append(f"print(ng.grad(loss)(df)[{label!r}].iloc[{row}], (loss(up) - loss(down)) / 2e-6)")
    elif check == "grad":
        lines.append('print(*ng.value_and_grad(loss)(df), loss(df), sep="\\n\\n")')
    elif check == "vmap":
        lines.append(
            f"S = np.array({list(SCALES)}); print(ng.vmap(scaled_loss, in_axes=(0, None))(S, df), "
            "[scaled_loss(s, df) for s in S], ng.vmap(ng.grad(scaled_loss), in_axes=(0, None))(S, df))"
        )
    elif outcome.what.startswith(("loss", "gradient")):
        lines.append("step = ng.replay(ng.value_and_grad(loss))")
        lines.append('for d in (df, df2, df): print(*step(d), loss(d), *ng.value_and_grad(loss)(d), sep="\\n")')
    else:
        lines.append("forward = ng.replay(lambda d: ng.vjp(pipeline, d)[0])")
        lines.append('for d in (df, df2, df): print(forward(d), pipeline(d), sep="\\n\\n")')
    return "\n".join(lines) + "\n"
