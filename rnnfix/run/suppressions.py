"""The comments that silence findings, as ruff reads its own:

- on the finding's line: ``# rnnfix: ignore`` (every code) or
  ``# rnnfix: ignore[RNF001,RNF003]``; ``# noqa`` (every code, as ruff and
  flake8 read a bare one) or ``# noqa: RNF001`` / ``# noqa:RNF001,RNF003``
  (only those codes: ``# noqa: E501`` leaves rnnfix's findings alone);
- for the whole file, on a line of its own anywhere in it (ruff's ``# ruff:
  noqa``): ``# rnnfix: noqa`` (every code) or ``# rnnfix: noqa: RNF001``.

Codes are prefixes (``RNF00`` silences RNF001..RNF009), as in ``--ignore``.
The comments are found in the text of the line (as the line-level form
always was), so one inside a string counts too: a missed finding, never a
wrong edit.

``unused`` lists the suppressions that silence nothing
(``--report-unused-suppressions``, ruff's RUF100). Only rnnfix's own are
judged: ``# rnnfix: ...`` and the RNF codes of a ``# noqa: ...``; a bare
``# noqa`` or another tool's codes may serve another linter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rnnfix.analysis.context import Finding
from rnnfix.source.lines import line_texts

_CODES = r"[A-Za-z]+[0-9]*(?:\s*,\s*[A-Za-z]+[0-9]*|\s+[A-Za-z]+[0-9]+)*"
_IGNORE = re.compile(r"#\s*rnnfix:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES})|(?![\w:-]))", re.IGNORECASE)
_FILE = re.compile(rf"[ \t\f]*#\s*rnnfix:\s*noqa(?::\s*(?P<codes>{_CODES}))?[ \t]*", re.IGNORECASE)
# A text without these has no suppression (no regex run over it).
_MARKS = ("noqa", "NOQA", "rnnfix:")


def _codes(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None  # every code
    return tuple(c.upper() for c in re.split(r"[\s,]+", text) if c)


@dataclass(frozen=True)
class Suppression:
    line: int  # 1-based
    codes: tuple[str, ...] | None  # None: every code (``ignore[]``: none)
    form: str  # "ignore", "noqa" or "file"

    def silences(self, code: str) -> bool:
        return self.codes is None or any(code.startswith(c) for c in self.codes)


def may_suppress(text: str) -> bool:
    return any(mark in text for mark in _MARKS)


def file_level(text: str, lines: Sequence[str] | None = None) -> list[Suppression]:
    """The file's ``# rnnfix: noqa`` lines (``lines``: the text's, when known)."""
    if "rnnfix" not in text or "noqa" not in text.lower():
        return []
    found = []
    for n, line in enumerate(line_texts(text) if lines is None else lines, 1):
        if "rnnfix" in line and (m := _FILE.fullmatch(line.rstrip("\r\n"))):
            found.append(Suppression(n, _codes(m.group("codes")), "file"))
    return found


def silences_everything(text: str) -> bool:
    """A bare ``# rnnfix: noqa``: nothing in the file is reported or fixed."""
    return any(s.codes is None for s in file_level(text))


def on_line(line_text: str, line: int) -> list[Suppression]:
    found = []
    if "rnnfix" in line_text:
        for m in _IGNORE.finditer(line_text):
            found.append(Suppression(line, _codes(m.group("codes")), "ignore"))
    if "noqa" in line_text.lower():
        for m in _NOQA.finditer(line_text):
            found.append(Suppression(line, _codes(m.group("codes")), "noqa"))
    return found


class Suppressions:
    """The suppressions of one source, read once; ``lines`` as Python
    counts them (``rnnfix.source.lines``)."""

    def __init__(self, text: str, lines: Sequence[str]) -> None:
        self.lines = lines
        self.whole = file_level(text, lines)
        self._on: dict[int, list[Suppression]] = {}

    def at(self, line: int) -> list[Suppression]:
        if line not in self._on:
            ok = 0 < line <= len(self.lines)
            self._on[line] = on_line(self.lines[line - 1], line) if ok else []
        return self._on[line]

    def silenced(self, f: Finding) -> bool:
        return any(s.silences(f.code) for s in (*self.whole, *self.at(f.line)))

    def every(self) -> list[Suppression]:
        """Every suppression in the source, file-level ones first."""
        return [
            *self.whole,
            *(s for n, text in enumerate(self.lines, 1) if may_suppress(text) for s in self.at(n)),
        ]


def unused(suppressions: Suppressions, findings: Iterable[Finding]) -> list[tuple[int, str]]:
    """(line, what) for each of rnnfix's own suppressions that silences none
    of ``findings`` (the findings before any suppression)."""
    found = list(findings)
    out: list[tuple[int, str]] = []
    for s in suppressions.every():
        candidates = found if s.form == "file" else [f for f in found if f.line == s.line]
        where = "in the file" if s.form == "file" else "on this line"
        if s.codes is None:
            if s.form == "noqa":
                continue  # a bare noqa may be another linter's
            if not candidates:
                spelled = "# rnnfix: noqa" if s.form == "file" else "# rnnfix: ignore"
                out.append((s.line, f"`{spelled}` (no finding {where})"))
            continue
        for code in s.codes:
            if s.form == "noqa" and not code.startswith("RNF"):
                continue  # another tool's code
            if not any(f.code.startswith(code) for f in candidates):
                out.append((s.line, f"{code} (no such finding {where})"))
    return out
