"""Unified diffs of what a run changed (or would change)."""

from __future__ import annotations

import difflib


def unified_diff(path: str, old: str, new: str) -> str:
    if path.endswith(".ipynb"):
        cells = _notebook_diff(path, old, new)
        if cells is not None:
            return cells
    return _diff(path, old.splitlines(keepends=True), new.splitlines(keepends=True), "")


def _notebook_diff(path: str, old: str, new: str) -> str | None:
    """A notebook's diff as its cells' Python, one ``--- a/nb.ipynb:cell N``
    section per changed cell, as ruff shows it (fixes change cell sources
    only); None when the two are not the same notebook's cells."""
    from rnnfix.source.notebook_syntax import split_lines
    from rnnfix.source.notebooks import code_cells

    before, after = code_cells(old), code_cells(new)
    if before is None or after is None or [n for n, _ in before] != [n for n, _ in after]:
        return None
    out = []
    for (number, a), (_, b) in zip(before, after, strict=True):
        if a != b:
            out.append(_diff(path, split_lines(a), split_lines(b), f":cell {number}"))
    return "".join(out)


def _diff(path: str, old: list[str], new: list[str], where: str) -> str:
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=f"a/{path.lstrip('/')}{where}",
        tofile=f"b/{path.lstrip('/')}{where}",
    )
    out = []
    for line in lines:
        # Keep CRLF files' diffs readable and make a missing final newline visible.
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
