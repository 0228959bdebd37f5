"""Which lines of a pull request can carry a review comment: the new-side
lines (added or context) of each hunk of the PR's diff. A comment's range must
lie inside one hunk, so each line maps to the hunk it belongs to."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def commentable_lines(patch: str) -> dict[int, int]:
    """New-side line number -> hunk index, from one file's ``patch`` (the
    hunks GitHub returns for a file of the PR)."""
    lines: dict[int, int] = {}
    hunk, line = -1, 0
    for text in patch.splitlines():
        match = _HUNK.match(text)
        if match:
            hunk, line = hunk + 1, int(match.group(1))
            continue
        if hunk < 0 or text.startswith("\\"):  # "\ No newline at end of file"
            continue
        if text.startswith("-"):
            continue
        lines[line] = hunk  # "+" added or " " context
        line += 1
    return lines


def pr_files(files: Iterable[Mapping[str, Any]]) -> dict[str, dict[int, int]]:
    """path -> commentable lines, from ``GET /pulls/{n}/files``; a file
    without a patch (binary, too large) has no commentable line."""
    return {
        str(f["filename"]): commentable_lines(str(f.get("patch") or ""))
        for f in files
        if f.get("status") != "removed"
    }
