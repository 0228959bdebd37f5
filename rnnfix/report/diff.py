"""Unified diffs of what a run changed (or would change)."""

from __future__ import annotations

import difflib


def unified_diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path.lstrip('/')}",
        tofile=f"b/{path.lstrip('/')}",
    )
    out = []
    for line in lines:
        # Keep CRLF files' diffs readable and make a missing final newline visible.
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
