"""What the language server says about one document, without pygls: the
findings of a Python file or a notebook's cells, each with the text edits
of its fix, and the edits of "fix all".

A document is checked as the file it will be saved as, against the
``[tool.rnnfix]`` of its own configuration (``rnnfix.config.discovery``, as
the command line finds it; re-read when it changes), on its own: the
server sees the text the editor holds, not the project's other files, so
cross-file findings are those ``rnnfix check --isolated`` gives. Positions
are 0-based lines and character columns; ``rnnfix.lsp.server`` turns
columns into the client's encoding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rnnfix.analysis.context import Finding
from rnnfix.config.settings import Settings
from rnnfix.run.process import FileResult, Outcome


@dataclass(frozen=True)
class TextEdit:
    """Replace ``start``..``end`` (0-based line, character column) with ``text``."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


@dataclass(frozen=True)
class Item:
    """A finding of one document (a notebook's: of one cell, 0-based ``cell``
    among the cells the client sent), and the edits of its fix, by cell."""

    finding: Finding
    cell: int | None = None
    edits: dict[int | None, list[TextEdit]] = field(default_factory=dict)


@dataclass
class Analysis:
    items: list[Item] = field(default_factory=list)
    # "fix all": edits by cell (None: the document itself); empty: nothing to fix.
    fix_all: dict[int | None, list[TextEdit]] = field(default_factory=dict)
    error: str | None = None


# A configuration's settings by its path, with the digest of the bytes they
# were read from (the first item; ``Any``: the server's own annotation).
SettingsCache = dict[Path, tuple[Any, Settings]]


def settings_for(path: str | None, cache: SettingsCache) -> Settings:
    """``[tool.rnnfix]`` of the file's own configuration, found as the command line
    finds it (``rnnfix.config.discovery``); invalid ones count as none. Read
    again whenever its bytes change (not its modification time: a file
    rewritten within the same second keeps it)."""
    import hashlib

    from rnnfix.config.pyproject import ConfigError, find_pyproject, load_settings

    if path is None:
        return Settings()
    found = find_pyproject(Path(path))
    if found is None:
        return Settings()
    try:
        key = hashlib.sha256(found.read_bytes()).hexdigest()
    except OSError:
        return Settings()
    known = cache.get(found)
    if known is not None and known[0] == key:
        return known[1]
    try:
        settings = load_settings(found)
    except ConfigError:
        settings = Settings()
    cache[found] = (key, settings)
    return settings


def analyse_python(text: str, path: str, settings: Settings) -> Analysis:
    from rnnfix.run.process import process_text

    result = process_text(path, text, settings)
    out = Analysis(error=_error(result))
    if result.outcome is Outcome.FAILED:
        return out
    unsafe = settings.unsafe_fixes
    for f in result.initial:
        edits: dict[int | None, list[TextEdit]] = {}
        if f.fix is not None and f.fix.edits and (f.fix.safe or unsafe):
            fixed = _applied(text, f)
            if fixed is not None:
                edits[None] = replacements(text, fixed)
        out.items.append(Item(f, None, edits))
    if result.outcome is Outcome.CHANGED and result.new_text is not None:
        out.fix_all[None] = replacements(text, result.new_text)
    return out


def analyse_notebook(cells: list[tuple[bool, str]], path: str, settings: Settings) -> Analysis:
    """``cells``: (is code, text) of each cell, in order. The cells are
    checked as the notebook file they make (``rnnfix.source.notebooks``)."""
    from rnnfix.run.process import process_notebook
    from rnnfix.source.files import FileProblem
    from rnnfix.source.notebooks import code_cells, parse, render

    doc = _notebook_json(cells)
    result = process_notebook(path, doc, settings)
    out = Analysis(error=_error(result))
    if result.outcome is Outcome.FAILED:
        return out
    before = dict(code_cells(doc) or [])
    nb = parse(doc)
    unsafe = settings.unsafe_fixes
    for f in result.initial:
        edits: dict[int | None, list[TextEdit]] = {}
        if f.fix is not None and f.fix.edits and (f.fix.safe or unsafe):
            # The fix's edits are of the cells as one module (the finding's
            # line is its cell's): applied there, then split back into cells.
            try:
                fixed_json = render(nb, _apply(nb.python, f))
            except (FileProblem, ValueError, SyntaxError):
                fixed_json = None
            if fixed_json is not None:
                edits = _cell_edits(before, dict(code_cells(fixed_json) or []))
        out.items.append(Item(f, None if f.cell is None else f.cell - 1, edits))
    if result.outcome is Outcome.CHANGED and result.new_text is not None:
        out.fix_all = _cell_edits(before, dict(code_cells(result.new_text) or []))
    return out


def _error(result: FileResult) -> str | None:
    return result.error if result.outcome is Outcome.FAILED else None


def _notebook_json(cells: list[tuple[bool, str]]) -> str:
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


def _apply(source: str, f: Finding) -> str:
    from rnnfix.source.textedit import apply_edits  # libcst only if needed

    assert f.fix is not None
    return apply_edits(source, f.fix.edits)


def _applied(text: str, f: Finding) -> str | None:
    try:
        return _apply(text, f)
    except Exception:  # noqa: BLE001 - a fix that does not apply alone is not offered
        return None


def _cell_edits(before: dict[int, str], after: dict[int, str]) -> dict[int | None, list[TextEdit]]:
    """Edits by 0-based cell, of the cells whose source changed."""
    return {
        number - 1: replacements(old, after[number])
        for number, old in before.items()
        if number in after and after[number] != old
    }


def replacements(old: str, new: str) -> list[TextEdit]:
    """The whole-line edits that turn ``old`` into ``new``."""
    from rnnfix.report.sarif import replacements_of

    out = []
    for rep in replacements_of(old, new):
        region = rep["deletedRegion"]
        out.append(
            TextEdit(
                (region["startLine"] - 1, region["startColumn"] - 1),
                (region["endLine"] - 1, region["endColumn"] - 1),
                rep["insertedContent"]["text"],
            )
        )
    return out
