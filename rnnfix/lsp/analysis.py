"""What the language server says about one document, without pygls: the
findings of a Python file or a notebook's cells, the reason a document could
not be checked (a syntax error, at its line and column), and, only when a
client asks, the text edits of one finding's fix or of "fix all".

Diagnostics come from checking (the rules once, ``process_text(fix=False)``):
what the server does on every edit. Edits come from fixing, on request: one
fix applied alone and refused as the fix loop refuses it (its result does not
parse or reads a name nothing binds), or the whole fix loop for "fix all".
These functions run in the analysis process (``rnnfix.lsp.worker``): their
arguments and results are plain, picklable data.

A document is checked as the file it will be saved as, against the
``[tool.rnnfix]`` of its own configuration (``rnnfix.config.discovery``, as
the command line finds it; re-read when it changes), on its own: the
server sees the text the editor holds, not the project's other files, so
cross-file findings are those ``rnnfix check --isolated`` gives. Positions
are 0-based lines and character columns; ``rnnfix.lsp.server`` turns
columns into the client's encoding.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from rnnfix.analysis.context import Finding
from rnnfix.config.settings import Settings
from rnnfix.run.process import FileResult, Outcome


@dataclass(frozen=True)
class TextEdit:
    """Replace ``start``..``end`` (0-based line, character column) with ``text``."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


# Edits by cell: ``None`` is the document itself (a Python file).
CellEdits = dict[int | None, list[TextEdit]]


@dataclass(frozen=True)
class Document:
    """What is analysed: a Python file's ``text``, or a notebook's ``cells``
    ((is code, text) of each cell, in the order the client sent them)."""

    path: str
    settings: Settings
    text: str | None = None
    cells: tuple[tuple[bool, str], ...] | None = None


@dataclass(frozen=True)
class Item:
    """A finding of one document (a notebook's: of one cell, 0-based ``cell``
    among the cells the client sent). ``fixable``: its fix may be offered
    under the settings (safe, or unsafe with ``unsafe-fixes``); whether it
    applies is known only once its edit is asked for."""

    finding: Finding
    cell: int | None = None
    fixable: bool = False


@dataclass(frozen=True)
class Problem:
    """Why (part of) a document was not checked: one line, at a 0-based
    ``line`` and ``col`` when there is one (a syntax error's)."""

    message: str
    line: int | None = None
    col: int | None = None
    cell: int | None = None


@dataclass
class Analysis:
    items: list[Item] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def fixable(self) -> bool:
        """Whether "fix all" may change something."""
        return any(i.fixable for i in self.items)


@dataclass
class _Settings:
    digest: str  # of the configuration's bytes
    settings: Settings
    error: str | None


class SettingsCache:
    """``[tool.rnnfix]`` of each document's own configuration, found as the
    command line finds it (``rnnfix.config.discovery``), re-read whenever its
    bytes change (not its modification time: a file rewritten within the same
    second keeps it). A file that cannot be read counts as no configuration;
    its error is said once per version of the file."""

    def __init__(self) -> None:
        self._known: dict[Path, _Settings] = {}

    def settings_for(self, path: str | None) -> tuple[Settings, str | None]:
        """The settings, and the configuration's error when it is new (read
        for the first time since the file last changed), else None."""
        from rnnfix.config.pyproject import ConfigError, find_pyproject, load_settings

        if path is None:
            return Settings(), None
        found = find_pyproject(Path(path))
        if found is None:
            return Settings(), None
        try:
            digest = hashlib.sha256(found.read_bytes()).hexdigest()
        except OSError:
            return Settings(), None
        known = self._known.get(found)
        if known is not None and known.digest == digest:
            return known.settings, None
        try:
            entry = _Settings(digest, load_settings(found), None)
        except ConfigError as exc:
            entry = _Settings(digest, Settings(), str(exc))
        self._known[found] = entry
        return entry.settings, entry.error


# --- diagnostics: checked, never fixed ---------------------------------------------


def analyse(doc: Document) -> Analysis:
    if doc.cells is not None:
        return _analyse_notebook(doc.cells, doc.path, doc.settings)
    assert doc.text is not None
    return _analyse_python(doc.text, doc.path, doc.settings)


def _analyse_python(text: str, path: str, settings: Settings) -> Analysis:
    from rnnfix.run.process import process_text

    result = process_text(path, text, settings, fix=False)
    if result.outcome is Outcome.FAILED:
        return Analysis(problems=[_problem(result, notebook=False)])
    return Analysis(items=[Item(f, None, _fixable(f, settings)) for f in result.initial])


def _analyse_notebook(
    cells: tuple[tuple[bool, str], ...], path: str, settings: Settings
) -> Analysis:
    """The cells are checked as the notebook file they make
    (``rnnfix.source.notebooks``); a code cell that does not parse is said
    on that cell, the others are still checked."""
    from rnnfix.run.process import process_notebook

    result = process_notebook(path, _notebook_json(cells), settings, fix=False)
    problems = [_cell_problem(note) for note in result.notes]
    if result.outcome is Outcome.FAILED:
        return Analysis(problems=[*problems, _problem(result, notebook=True)])
    items = [
        Item(f, None if f.cell is None else f.cell - 1, _fixable(f, settings))
        for f in result.initial
    ]
    return Analysis(items=items, problems=problems)


def _fixable(f: Finding, settings: Settings) -> bool:
    return f.fix is not None and bool(f.fix.edits) and (f.fix.safe or settings.unsafe_fixes)


def _problem(result: FileResult, notebook: bool) -> Problem:
    assert result.error is not None
    message = result.error
    m = _CELL_ERROR.match(message) if notebook else None
    if m is not None:  # "cell 3: line 2: cannot parse: ...": the notebook's own message
        line = None if m["line"] is None else int(m["line"]) - 1
        col = None if m["col"] is None else int(m["col"]) - 1
        return Problem(message, line, col, int(m["cell"]) - 1)
    line = None if result.error_line is None else result.error_line - 1
    col = None if result.error_col is None else result.error_col - 1
    return Problem(message, line, col)


# How ``rnnfix.run.process.process_notebook`` and ``notebooks.parse`` say
# where in a notebook a cell failed.
_CELL_ERROR = re.compile(r"cell (?P<cell>\d+): (?:line (?P<line>\d+)(?:, column (?P<col>\d+))?: )?")
_CELL_NOTE = re.compile(r"cell (?P<cell>\d+): not checked: (?:line (?P<line>\d+): )?")


def _cell_problem(note: str) -> Problem:
    m = _CELL_NOTE.match(note)
    if m is None:
        return Problem(note)
    return Problem(
        note, None if m["line"] is None else int(m["line"]) - 1, None, int(m["cell"]) - 1
    )


def _notebook_json(cells: tuple[tuple[bool, str], ...]) -> str:
    data = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": text}
            if code
            else {"cell_type": "markdown", "metadata": {}, "source": text}
            for code, text in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data)


# --- edits: only when asked --------------------------------------------------------


def fix_edits(doc: Document, finding: Finding) -> CellEdits:
    """The edits of ``finding``'s fix applied alone to ``doc`` (a finding of
    ``analyse(doc)``), by cell; empty when it does not apply there."""
    if doc.cells is None:
        assert doc.text is not None
        fixed = _applied(doc.text, finding)
        return {} if fixed is None else {None: replacements(doc.text, fixed)}
    from rnnfix.source.files import FileProblem
    from rnnfix.source.notebooks import code_cells, parse, render

    source = _notebook_json(doc.cells)
    nb = parse(source)
    # The fix's edits are of the cells as one module (the finding's line is
    # its cell's): applied there, then split back into cells.
    fixed = _applied(nb.python, finding)
    if fixed is None:
        return {}
    try:
        fixed_json = render(nb, fixed)
    except (FileProblem, ValueError, SyntaxError):
        return {}
    return _cell_edits(dict(code_cells(source) or []), dict(code_cells(fixed_json) or []))


def fix_all_edits(doc: Document) -> CellEdits:
    """The edits of "fix all": the fix loop of ``rnnfix apply`` on ``doc``."""
    from rnnfix.run.process import process_notebook, process_text
    from rnnfix.source.notebooks import code_cells

    if doc.cells is None:
        assert doc.text is not None
        result = process_text(doc.path, doc.text, doc.settings)
        if result.outcome is not Outcome.CHANGED or result.new_text is None:
            return {}
        return {None: replacements(doc.text, result.new_text)}
    source = _notebook_json(doc.cells)
    result = process_notebook(doc.path, source, doc.settings)
    if result.outcome is not Outcome.CHANGED or result.new_text is None:
        return {}
    return _cell_edits(dict(code_cells(source) or []), dict(code_cells(result.new_text) or []))


def _applied(source: str, f: Finding) -> str | None:
    """``source`` with ``f``'s fix alone, or None where the fix loop would
    refuse it: its edits do not apply, the result does not parse, or it reads
    a name that is not bound where it is read (and was before)."""
    import ast

    from rnnfix.run import undefined
    from rnnfix.source.textedit import apply_edits  # libcst only if needed

    if f.fix is None or not f.fix.edits:
        return None
    try:
        tree = ast.parse(source)
        new = apply_edits(source, f.fix.edits, tree)
        after = undefined.problems(ast.parse(new))
        before = undefined.problems(tree)
    except Exception:  # noqa: BLE001 - a fix that does not apply alone is not offered
        return None
    if before is not None and after is not None and undefined.introduced(before, after):
        return None
    return new


def _cell_edits(before: dict[int, str], after: dict[int, str]) -> CellEdits:
    """Edits by 0-based cell, of the cells whose source changed."""
    return {
        number - 1: replacements(old, after[number])
        for number, old in before.items()
        if number in after and after[number] != old
    }


def replacements(old: str, new: str) -> list[TextEdit]:
    """The whole-line edits that turn ``old`` into ``new``. The lines both
    share at the start and at the end are set aside before diffing: a fix
    changes a few lines of a long file, and a diff of all of them costs."""
    import difflib

    from rnnfix.source.lines import split_lines

    before, after = split_lines(old), split_lines(new)
    start = 0
    most = min(len(before), len(after))
    while start < most and before[start] == after[start]:
        start += 1
    end = 0
    while end < most - start and before[-1 - end] == after[-1 - end]:
        end += 1
    old_mid, new_mid = before[start : len(before) - end], after[start : len(after) - end]
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            text = "".join(new_mid[j1:j2])
            out.append(
                TextEdit(_line_start(before, start + i1), _line_start(before, start + i2), text)
            )
    return out


def _line_start(lines: list[str], n: int) -> tuple[int, int]:
    """Where line ``n`` (0-based) of ``lines`` starts; past the last line:
    the end of the text (after its last line break, when it has one)."""
    if n < len(lines) or not lines:
        return (n, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return (len(lines), 0)
    return (len(lines) - 1, len(last))
