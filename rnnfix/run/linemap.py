"""Positions in a fixed source, mapped back to the source it was fixed from.

The fix loop re-runs the rules on its own output; to say where a finding of a
later pass is in the *input* (``--check`` reports at the input's line numbers)
and to recognise a finding that survived its own fix, each pass's output is
mapped line by line onto its input. Lines are matched without their leading
whitespace, so a statement that ``with torch.no_grad():`` re-indented still
maps to itself (its column shifted by the indentation). A line a fix inserted
maps to the line it was inserted next to: the line below when that one is
indented at least as deep (an ``eval()`` before a statement, a decorator over a
``def``), else the line above (a ``train()`` at the end of a block).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from typing import TypeVar

from rnnfix.analysis.context import Finding
from rnnfix.source.lines import line_texts

_F = TypeVar("_F", bound=Finding)
# How rule messages name a line: "on line 12", "before line 7".
_LINE = re.compile(r"\b(lines? )(\d+)\b")


@dataclass(frozen=True)
class _Target:
    line: int  # 1-based line of the old source
    shift: int | None  # column shift; None: an inserted line, put at the old line's indent


class LineMap:
    """Maps 1-based lines (and columns) of ``new`` to those of ``old``."""

    # The old source's lines, split at first use (the identity map of a file
    # with nothing to fix never needs them).
    _old_text: str
    _old_lines: list[str] | None

    @property
    def _old(self) -> list[str]:
        if self._old_lines is None:
            self._old_lines = line_texts(self._old_text)
        return self._old_lines

    def __init__(self, old: str, new: str) -> None:
        self._old_text = old
        self._old_lines = line_texts(old)
        new_lines = line_texts(new)
        to = [_Target(1, None)] * len(new_lines)
        a = [line.strip() for line in self._old]
        b = [line.strip() for line in new_lines]
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for t in range(j2 - j1):
                    shift = _indent(self._old[i1 + t]) - _indent(new_lines[j1 + t])
                    to[j1 + t] = _Target(i1 + t + 1, shift)
            elif tag == "replace":
                # A changed line: same place, its text edited in the middle.
                for t in range(j2 - j1):
                    to[j1 + t] = _Target(i1 + min(t, i2 - i1 - 1) + 1, 0)
            elif tag == "insert":
                near = self._neighbour(i1, new_lines[j1])
                for t in range(j2 - j1):
                    to[j1 + t] = _Target(near, None)
        self._to: list[_Target] | None = to

    def _neighbour(self, i: int, inserted: str) -> int:
        """The 1-based old line an insertion before old index ``i`` sits next to."""
        below = i < len(self._old) and _indent(self._old[i]) >= _indent(inserted)
        if below or i == 0:
            return i + 1
        return i  # the line above (old index i - 1)

    def line(self, line: int) -> int:
        return self._target(line).line

    def _target(self, line: int) -> _Target:
        if self._to is None:  # the identity
            return _Target(line, 0)
        if not self._to:
            return _Target(1, 0)
        return self._to[min(max(line, 1), len(self._to)) - 1]

    def col(self, line: int, col: int) -> int:
        """1-based column ``col`` of new ``line``, in the old source."""
        target = self._target(line)
        if target.shift is None:
            old = self._old[target.line - 1] if target.line - 1 < len(self._old) else ""
            return _indent(old) + 1
        return max(1, col + target.shift)

    def then(self, earlier: LineMap) -> LineMap:
        """This map followed by ``earlier`` (new -> ours -> earlier's old)."""
        if earlier._to is None:
            return self
        composed = LineMap.__new__(LineMap)
        composed._old_text = earlier._old_text
        composed._old_lines = earlier._old_lines
        composed._to = []
        for t in self._to or []:
            e = earlier._target(t.line)
            shift = None if t.shift is None or e.shift is None else t.shift + e.shift
            composed._to.append(_Target(e.line, shift))
        return composed

    def finding(self, f: _F) -> _F:
        """``f`` with its positions in the old source, and the lines its
        message and fix description name ("on line 12") too."""
        line = self.line(f.line)
        end_line = end_col = None
        if f.end_line is not None and f.end_col is not None:
            end_line = max(line, self.line(f.end_line))
            end_col = self.col(f.end_line, f.end_col)
        fix = f.fix
        if fix is not None and fix.description:
            fix = dataclasses.replace(fix, description=self.text(fix.description))
        return dataclasses.replace(
            f,
            line=line,
            col=self.col(f.line, f.col),
            end_line=end_line,
            end_col=end_col,
            message=self.text(f.message),
            fix=fix,
        )

    def text(self, message: str) -> str:
        """``message`` with every "line N" said in the old source's lines."""
        return _LINE.sub(lambda m: f"{m.group(1)}{self.line(int(m.group(2)))}", message)


def identity(source: str) -> LineMap:
    """The map of a source onto itself (built on first use: most files never
    need it)."""
    same = LineMap.__new__(LineMap)
    same._old_text = source
    same._old_lines = None
    same._to = None
    return same


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
