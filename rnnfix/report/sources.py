"""The text a finding is about, for the formats that show or hash it.

A finding's line and column count in the file as the run leaves it: the file
as it is for a dry run (``--check``, ``--diff``, ``rnnfix check``), as fixed
otherwise. For a notebook they count within its cell (``cell``), as a person
sees it in Jupyter; the machine formats that can only point at a line of the
file (GitHub annotations, GitLab Code Quality, SARIF) get the line of the
notebook's JSON that holds that cell line (Jupyter writes one source line per
JSON line), never a line of the concatenated cells and never a line number
that means something else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rnnfix.analysis.context import Finding
from rnnfix.run.process import FileResult, Outcome

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class FileSpan:
    """Where a finding is in the file itself: 1-based lines, columns None
    where the file's columns are not the finding's (a notebook's JSON)."""

    line: int
    end_line: int
    col: int | None
    end_col: int | None


class Sources:
    """The texts of a run's files, read once each, as its findings see them."""

    def __init__(self, dry: bool) -> None:
        self.dry = dry
        self._texts: dict[str, str | None] = {}
        self._lines: dict[str, list[str] | None] = {}
        self._cells: dict[str, dict[int, list[str]] | None] = {}

    def text(self, r: FileResult) -> str | None:
        """The file's text (a notebook's JSON) in the state its findings are of."""
        if r.path not in self._texts:
            self._texts[r.path] = self._read(r)
        return self._texts[r.path]

    def _read(self, r: FileResult) -> str | None:
        text = r.old_text if self.dry else r.new_text
        if text is None and r.outcome is Outcome.UNCHANGED:
            text = r.old_text if r.old_text is not None else r.new_text
        if text is None and r.outcome is not Outcome.FAILED and r.old_bytes is not None:
            if self.dry or r.outcome is Outcome.UNCHANGED:
                text = _decoded(r.old_bytes)
        if text is None and r.path != "<stdin>":
            try:
                text = _decoded(Path(r.path).read_bytes())
            except OSError:
                return None
        return text

    def lines(self, r: FileResult, f: Finding) -> list[str] | None:
        """The lines ``f``'s line counts in: its cell's for a notebook."""
        if f.cell is not None:
            cells = self._cell_lines(r)
            return None if cells is None else cells.get(f.cell)
        if r.path not in self._lines:
            text = self.text(r)
            self._lines[r.path] = None if text is None else _split(text)
        return self._lines[r.path]

    def code(self, r: FileResult, f: Finding) -> str | None:
        """The source line ``f`` starts on, as written (None: not known)."""
        lines = self.lines(r, f)
        if lines is None or not 0 < f.line <= len(lines):
            return None
        return lines[f.line - 1].rstrip("\r\n")

    def span(self, r: FileResult, f: Finding) -> FileSpan:
        """``f``'s place in the file itself."""
        end = f.end_line if f.end_line is not None else f.line
        if f.cell is None:
            return FileSpan(f.line, max(end, f.line), f.col, f.end_col)
        text = self.text(r)
        first = None if text is None else notebook_line(text, f.cell, f.line)
        last = None if text is None else notebook_line(text, f.cell, end)
        if first is None:
            return FileSpan(1, 1, None, None)  # the notebook as a whole
        return FileSpan(first, max(first, last or first), None, None)

    def _cell_lines(self, r: FileResult) -> dict[int, list[str]] | None:
        if r.path not in self._cells:
            from rnnfix.source.notebooks import code_cells

            text = self.text(r)
            cells = None if text is None else code_cells(text)
            self._cells[r.path] = (
                None if cells is None else {n: _split(source) for n, source in cells}
            )
        return self._cells[r.path]


def _decoded(data: bytes) -> str | None:
    from rnnfix.source.files import FileProblem, decode

    try:
        return decode(data).text
    except FileProblem:
        return None


def _split(text: str) -> list[str]:
    from rnnfix.source.notebook_syntax import split_lines

    return split_lines(text)


def notebook_line(text: str, cell: int, line: int) -> int | None:
    """The line of the notebook JSON ``text`` that holds line ``line`` of
    cell ``cell`` (both 1-based); None when the JSON is not laid out so."""
    from rnnfix.source.notebook_json import source_spans

    span = source_spans(text).get(cell - 1)
    if span is None:
        return None
    start, _end = span
    try:
        return _line_in_value(text, start, line)
    except (ValueError, IndexError):
        return None


def _line_in_value(text: str, start: int, line: int) -> int:
    """``source`` is a string (every cell line on the JSON line it starts on)
    or a list of strings, each up to and including its line break."""
    at = start
    if text[start] == "[":
        at, seen = start + 1, 1  # ``seen``: the cell line the next element starts
        found = start
        while True:
            while text[at] in _WS or text[at] == ",":
                at += 1
            if text[at] == "]":
                break
            value, end = _DECODER.raw_decode(text, at)
            if seen > line:
                break
            found = at
            seen += str(value).count("\n")
            at = end
        at = found
    return text.count("\n", 0, at) + 1
