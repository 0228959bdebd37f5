"""What one review, comment or job summary may carry, and how text is cut to
fit without leaving a patch that does not apply.

GitHub documents 65,536 characters for a review's or a comment's body,
1 MiB for a step's job summary, and, for annotations from workflow commands
(actions/toolkit's docs/problem-matchers.md), 10 error, 10 warning and 10
notice annotations a step and 50 a job: the rest are dropped without a word,
so the bot writes that many and says how many it cut. It documents no cap on the comments of one
review, but large reviews fail or time out, and a pull request with hundreds
of suggestion blocks is unreadable: the bot shows at most ``MAX_COMMENTS``
suggestions inline and puts the other fixes into one patch."""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_BODY = 65_536  # characters, a review's or a comment's body
MAX_COMMENTS = 50  # inline suggestions the bot keeps on a pull request at once
MAX_SUMMARY = 1_024 * 1_024  # bytes, $GITHUB_STEP_SUMMARY of one step
ANNOTATIONS_PER_LEVEL = 10  # error, warning and notice annotations each, of one step
ANNOTATIONS_PER_JOB = 50  # of all the job's steps together

_HUNK_START = re.compile(r"^@@ ", re.MULTILINE)


def cut_patch(files: list[str], room: int) -> tuple[str, bool]:
    """The longest run of ``files`` (unified diffs, one per file, in order)
    that fits in ``room`` characters, cut only between hunks and with each
    file's header kept with its hunks, so what it holds applies with
    ``git apply``. (text, whether something was left out)."""
    whole = "".join(files)
    if len(whole) <= room:
        return whole, False
    out: list[str] = []
    used = 0
    for text in files:
        header, hunks = _split(text)
        part = header
        for hunk in hunks:
            if used + len(part) + len(hunk) > room:
                break
            part += hunk
        if part == header:  # not even its first hunk fits
            break
        out.append(part)
        used += len(part)
        if len(part) < len(text):
            break
    return "".join(out), True


def _split(patch: str) -> tuple[str, list[str]]:
    """One file's unified diff as (its ``---``/``+++`` header, its hunks);
    a content line never starts with ``@@`` (it starts with ' ', +, - or \\)."""
    starts = [m.start() for m in _HUNK_START.finditer(patch)]
    if not starts:
        return patch, []
    ends = [*starts[1:], len(patch)]
    return patch[: starts[0]], [patch[s:e] for s, e in zip(starts, ends, strict=True)]


def utf8_size(text: str) -> int:
    """Bytes ``text`` takes in a UTF-8 file (the job summary's limit is in bytes)."""
    return len(text.encode("utf-8", "replace"))


def cut_lines(lines: list[str], room: int, more: str, size: Callable[[str], int] = len) -> str:
    """``lines`` joined by newlines, as many as fit in ``room`` (characters,
    or what ``size`` measures); when some do not, ``more`` formatted with how
    many were left out."""
    text = "\n".join(lines)
    if size(text) <= room:
        return text
    reserve = size(more) + 12
    out: list[str] = []
    used = 0
    for line in lines:
        if used + size(line) + 1 + reserve > room:
            break
        out.append(line)
        used += size(line) + 1
    out.append(more.format(len(lines) - len(out)))
    return "\n".join(out)
