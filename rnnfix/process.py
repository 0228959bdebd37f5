"""One file, start to end: read -> fix -> (write). Never raises: every outcome,
failures included, is a ``FileResult``."""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rnnfix import notebooks
from rnnfix.engine import DroppedFix, fix_source
from rnnfix.files import FileProblem, read_source, write_atomic
from rnnfix.rules import Finding
from rnnfix.settings import Settings


class Outcome(enum.Enum):
    UNCHANGED = "unchanged"
    CHANGED = "changed"  # written, or (dry run) would be written
    FAILED = "failed"


@dataclass
class FileResult:
    path: str
    outcome: Outcome
    findings: list[Finding] = field(default_factory=list)  # left after fixing
    applied: list[Finding] = field(default_factory=list)
    dropped: list[DroppedFix] = field(default_factory=list)
    initial: list[Finding] = field(default_factory=list)  # in the original source
    error: str | None = None  # one line: "cannot parse: ...", "cannot read: ..."
    error_line: int | None = None
    old_text: str | None = None
    new_text: str | None = None
    old_bytes: bytes | None = None


# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 200


def process_files(
    paths: Sequence[Path], settings: Settings, write: bool, jobs: int = 0
) -> list[FileResult]:
    """``process_file`` over many files, in worker processes on large trees.
    Workers get the settings and a path (plain data), never shared objects."""
    if jobs == 0:
        jobs = min(os.cpu_count() or 1, 8) if len(paths) >= PARALLEL_THRESHOLD else 1
    work = partial(process_file, settings=settings, write=write)
    if jobs <= 1:
        return [work(p) for p in paths]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(work, paths, chunksize=max(1, len(paths) // (jobs * 8))))


def process_file(path: Path, settings: Settings, write: bool) -> FileResult:
    name = str(path)
    try:
        data, decoded = read_source(path)
    except FileProblem as exc:
        return FileResult(name, Outcome.FAILED, error=str(exc))
    if path.suffix == ".ipynb":
        result = process_notebook(name, decoded.text, settings)
    else:
        result = process_text(name, decoded.text, settings)
    result.old_bytes = data
    if result.outcome is not Outcome.CHANGED or not write:
        return result
    assert result.new_text is not None
    try:
        write_atomic(path, decoded.encode(result.new_text))
    except (FileProblem, UnicodeEncodeError) as exc:
        result.outcome = Outcome.FAILED
        result.error = str(exc) if isinstance(exc, FileProblem) else f"cannot encode: {exc}"
    return result


def process_notebook(name: str, text: str, settings: Settings) -> FileResult:
    """A notebook's code cells are fixed as one module (see ``rnnfix.notebooks``);
    findings are reported per cell, the diff is of the notebook's JSON."""
    try:
        nb = notebooks.parse(text)
    except FileProblem as exc:
        return FileResult(name, Outcome.FAILED, error=str(exc))
    result = process_text(name, nb.python, settings)
    if result.error_line is not None:
        cell, line = nb.locate(result.error_line)
        result.error = f"cell {cell}: line {line}: {result.error}"
        result.error_line = None
    result.findings = [_in_cell(nb, f) for f in result.findings]
    result.applied = [_in_cell(nb, f) for f in result.applied]
    result.initial = [_in_cell(nb, f) for f in result.initial]
    result.dropped = [
        dataclasses.replace(d, finding=_in_cell(nb, d.finding)) for d in result.dropped
    ]
    result.old_text = text
    if result.outcome is Outcome.CHANGED:
        assert result.new_text is not None
        try:
            result.new_text = notebooks.render(nb, result.new_text)
        except FileProblem as exc:
            result.outcome, result.error, result.new_text = Outcome.FAILED, str(exc), None
    else:
        result.new_text = text
    return result


def _in_cell(nb: notebooks.Notebook, f: Finding) -> Finding:
    cell, line = nb.locate(f.line)
    end = None if f.end_line is None else f.end_line - (f.line - line)
    return dataclasses.replace(f, line=line, end_line=end, cell=cell)


def process_text(name: str, text: str, settings: Settings) -> FileResult:
    try:
        fixed = fix_source(text, settings, name)
    except SyntaxError as exc:
        msg = (exc.msg or "invalid syntax").splitlines()[0]
        return FileResult(name, Outcome.FAILED, error=f"cannot parse: {msg}", error_line=exc.lineno)
    except RecursionError:
        return FileResult(name, Outcome.FAILED, error="cannot parse: nesting too deep")
    except Exception as exc:  # noqa: BLE001 - one bad file must never stop a run
        return FileResult(
            name, Outcome.FAILED, error=f"internal error: {type(exc).__name__}: {exc}"
        )
    outcome = Outcome.CHANGED if fixed.changed else Outcome.UNCHANGED
    return FileResult(
        name,
        outcome,
        findings=fixed.findings,
        applied=fixed.applied,
        dropped=fixed.dropped,
        initial=fixed.initial,
        old_text=text,
        new_text=fixed.fixed,
    )
