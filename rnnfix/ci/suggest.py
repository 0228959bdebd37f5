"""From a file's text before and after rnnfix to review comments: each change
(``difflib`` opcodes, an insertion anchored on a neighbouring line, touching
changes merged) becomes a GitHub suggestion over the lines it replaces, on the
new side of the PR's diff. A change whose lines are not all in one hunk of the
PR's diff cannot be commented on; it goes into the review body as a patch."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    path: str
    start: int  # first replaced line, 1-based, of the PR's version of the file
    end: int  # last replaced line (inclusive)
    old: list[str]  # the replaced lines, with their line ends
    new: list[str]  # what replaces them

    def comment(self, message: str = "") -> dict[str, Any]:
        body = "".join(self.new)
        if body and not body.endswith("\n"):
            body += "\n"
        text = (message + "\n\n" if message else "") + f"```suggestion\n{body}```"
        out: dict[str, Any] = {"path": self.path, "line": self.end, "side": "RIGHT", "body": text}
        if self.start != self.end:
            out["start_line"], out["start_side"] = self.start, "RIGHT"
        return out


def changes(
    path: str, old_text: str, new_text: str, commentable: dict[int, int] | None = None
) -> list[Change]:
    """``commentable``: the PR's commentable lines of ``path`` (``prdiff``),
    so an insertion anchors on a neighbour a comment can go on."""
    old, new = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    # Each change as a half-open range of old lines; a pure insertion takes
    # the line after it (the statement it guards, where rnnfix reports the
    # finding), or the line before when that one is in the PR's diff and the
    # line after is not, or at the end of the file.
    ranges: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        a, b = i1, i2
        if a == b:
            after_ok = b < len(old) and (commentable is None or b + 1 in commentable)
            before_ok = a > 0 and (commentable is None or a in commentable)
            if b < len(old) and (after_ok or not before_ok):
                b += 1
            elif a > 0:
                a -= 1
            else:
                continue  # an empty file gains lines: nothing to anchor on
        if ranges and a <= ranges[-1][1]:  # touching changes: one suggestion
            pa, _, pj1, _ = ranges[-1]
            ranges[-1] = (pa, b, pj1, j2)
        else:
            ranges.append((a, b, j1, j2))
    out = []
    for a, b, j1, j2 in ranges:
        start_new = min(j1, _new_pos(ops, a))
        end_new = max(j2, _new_pos(ops, b))
        out.append(Change(path, a + 1, b, old[a:b], new[start_new:end_new]))
    return out


def _new_pos(ops: Sequence[tuple[str, int, int, int, int]], k: int) -> int:
    """The new side's position of old position ``k`` (a line boundary)."""
    for tag, i1, i2, j1, _ in ops:
        if tag == "equal" and i1 <= k <= i2:
            return j1 + (k - i1)
    for _, i1, i2, j1, j2 in ops:
        if k == i1:
            return j1
        if k == i2:
            return j2
    return k


def split(
    found: list[Change], commentable: dict[str, dict[int, int]]
) -> tuple[list[Change], list[Change]]:
    """(inline suggestions, changes for the review body)."""
    inline: list[Change] = []
    body: list[Change] = []
    for c in found:
        hunks = {commentable.get(c.path, {}).get(n) for n in range(c.start, c.end + 1)}
        ok = not c.path.endswith(".ipynb") and len(hunks) == 1 and None not in hunks
        (inline if ok else body).append(c)
    return inline, body


def patch(path: str, old_text: str, keep: list[Change]) -> str:
    """A unified diff of ``path`` with only the changes in ``keep`` applied."""
    old = old_text.splitlines(keepends=True)
    new = list(old)
    for c in sorted(keep, key=lambda c: c.start, reverse=True):
        new[c.start - 1 : c.end] = c.new
    return "".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
