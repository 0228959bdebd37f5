"""Which lines of a pull request can carry a review comment: the new-side
lines (added or context) of each hunk of the PR's diff. A comment's range must
lie inside one hunk, so each line maps to the hunk it belongs to."""

from __future__ import annotations

import codecs
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


def added_lines(patch: str) -> set[int]:
    """New-side line numbers the patch adds (``+`` lines)."""
    out: set[int] = set()
    started, line = False, 0
    for text in patch.splitlines():
        match = _HUNK.match(text)
        if match:
            started, line = True, int(match.group(1))
            continue
        if not started or text.startswith(("\\", "-")):
            continue
        if text.startswith("+"):
            out.add(line)
        line += 1
    return out


def filter_sets(patches: Mapping[str, str]) -> dict[str, tuple[set[int], set[int]]]:
    """path -> (added lines, lines of its hunks), what ``findings.keep`` reads."""
    return {p: (added_lines(t), set(commentable_lines(t))) for p, t in patches.items()}


def split_git_diff(text: str) -> dict[str, str]:
    """``git diff`` output -> new path -> that file's hunks (deleted files left out)."""
    out: dict[str, str] = {}
    path: str | None = None
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            path = None
        elif line.startswith("+++ ") and path is None:
            name = line[4:].rstrip("\n")
            path = _unquote(name)[2:] if name != "/dev/null" else ""
            if path:
                out[path] = ""
        elif path and (line.startswith(("@@", " ", "+", "-", "\\"))):
            out[path] += line
    return out


def _unquote(name: str) -> str:
    """git's C-style quoting of an odd path (``"b/a\\tb.py"``)."""
    if not (name.startswith('"') and name.endswith('"')):
        return name
    raw = codecs.escape_decode(name[1:-1].encode("latin-1", "backslashreplace"))[0]
    return bytes(raw).decode("utf-8", "surrogateescape")
