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
from rnnfix.analysis.project import ModuleSummary, ProjectIndex, normalise, summarise
from rnnfix.engine import DroppedFix, fix_source
from rnnfix.files import FileProblem, decode, read_source, write_atomic
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
    # Other files of the run whose summaries the analysis looked up.
    consulted: frozenset[str] = frozenset()
    # Parts left unchecked that do not fail the file ("cell 4: line 2: cannot parse: ...").
    notes: list[str] = field(default_factory=list)


# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 200
# Rounds of re-checking the files that call into a file a fix changed.
MAX_ROUNDS = 3
# Rules whose analysis follows calls into other files (the project index).
_PROJECT_RULES = ("RNF001", "RNF003", "RNF004")


def process_files(
    paths: Sequence[Path], settings: Settings, write: bool, jobs: int = 0
) -> list[FileResult]:
    """``process_file`` over many files, in worker processes on large trees.
    Workers get the settings, the project index and a path (plain data),
    never shared objects.

    With more than one file, the project index (``rnnfix.analysis.project``)
    is built first from every file as it is on disk, so that a call into
    another file of the run is followed whatever order the files come in.
    Every file is fixed from its own source against that index; then each
    file a fix changed is summarised again, and the files whose analysis
    looked it up are fixed again, from their own source, against the new
    summaries (a helper that RNF003 now puts in eval mode makes its callers
    need ``train()``). Files are written once, at the end."""
    if jobs == 0:
        jobs = min(os.cpu_count() or 1, 8) if len(paths) >= PARALLEL_THRESHOLD else 1
    project = _build_project(paths, settings)
    if project is None:
        return _map(paths, settings, write, None, jobs)
    results = _map(paths, settings, False, project, jobs)
    results = _settle(paths, results, settings, project)
    if write:
        for path, result in zip(paths, results, strict=True):
            _write(path, result)
    return results


def _build_project(paths: Sequence[Path], settings: Settings) -> ProjectIndex | None:
    if len(paths) < 2 or not any(settings.enabled(code) for code in _PROJECT_RULES):
        return None
    return ProjectIndex.build(paths)


def _map(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    project: ProjectIndex | None,
    jobs: int,
) -> list[FileResult]:
    if jobs <= 1:
        return [process_file(p, settings, write, project) for p in paths]
    # The index goes to each worker once (not with every chunk of paths).
    work = partial(_process_in_worker, settings=settings, write=write)
    with ProcessPoolExecutor(
        max_workers=jobs, initializer=_set_worker_project, initargs=(project,)
    ) as pool:
        return list(pool.map(work, paths, chunksize=max(1, len(paths) // (jobs * 8))))


_worker_project: ProjectIndex | None = None


def _set_worker_project(project: ProjectIndex | None) -> None:
    global _worker_project
    _worker_project = project


def _process_in_worker(path: Path, settings: Settings, write: bool) -> FileResult:
    return process_file(path, settings, write, _worker_project)


def _settle(
    paths: Sequence[Path], results: list[FileResult], settings: Settings, project: ProjectIndex
) -> list[FileResult]:
    """Re-check the files that looked up a file whose summary a fix changed,
    until the summaries agree with the fixed files (or ``MAX_ROUNDS``)."""
    results = list(results)
    for _ in range(MAX_ROUNDS):
        changes: dict[str, ModuleSummary | None] = {}
        for path, result in zip(paths, results, strict=True):
            if result.outcome is Outcome.CHANGED and path.suffix == ".py":
                assert result.new_text is not None
                key = normalise(path)
                summary = summarise(result.new_text, key)
                if summary != project.files.get(key):
                    changes[key] = summary
        if not changes:
            break
        project = project.updated(changes)
        for i, (path, result) in enumerate(zip(paths, results, strict=True)):
            if result.consulted & changes.keys():
                results[i] = process_file(path, settings, False, project)
    return results


def _write(path: Path, result: FileResult) -> None:
    if result.outcome is not Outcome.CHANGED:
        return
    assert result.new_text is not None and result.old_bytes is not None
    try:
        write_atomic(path, decode(result.old_bytes).encode(result.new_text))
    except (FileProblem, UnicodeEncodeError) as exc:
        result.outcome = Outcome.FAILED
        result.error = str(exc) if isinstance(exc, FileProblem) else f"cannot encode: {exc}"


def process_file(
    path: Path, settings: Settings, write: bool, project: ProjectIndex | None = None
) -> FileResult:
    name = str(path)
    try:
        data, decoded = read_source(path)
    except FileProblem as exc:
        return FileResult(name, Outcome.FAILED, error=str(exc))
    if path.suffix == ".ipynb":
        result = process_notebook(name, decoded.text, settings, project)
    else:
        result = process_text(name, decoded.text, settings, project)
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


def process_notebook(
    name: str, text: str, settings: Settings, project: ProjectIndex | None = None
) -> FileResult:
    """A notebook's code cells are fixed as one module (see ``rnnfix.notebooks``);
    findings are reported per cell, the diff is of the notebook's JSON."""
    try:
        nb = notebooks.parse(text)
    except FileProblem as exc:
        return FileResult(name, Outcome.FAILED, error=str(exc))
    # IPython runs each cell on its own: a cell that does not parse is
    # reported and left as it is, the others are checked. Only a notebook with
    # no code cell that parses fails, as a file that does not parse does.
    notes = [f"cell {cell}: not checked: {reason}" for cell, reason in nb.skipped]
    if nb.skipped and not nb.cell_lines:
        cell, reason = nb.skipped[0]
        return FileResult(name, Outcome.FAILED, error=f"cell {cell}: {reason}")
    result = process_text(name, nb.python, settings, project)
    result.notes = notes
    if result.error_line is not None:
        cell, line = nb.locate(result.error_line)
        result.error = f"cell {cell}: line {line}: {result.error}"
        result.error_line = None
    # What is left is at the fixed module's lines; the rest at the input's.
    fixed = result.new_text if result.outcome is Outcome.CHANGED else None
    result.findings = [_in_cell(nb, f, fixed) for f in result.findings]
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


def _in_cell(nb: notebooks.Notebook, f: Finding, python: str | None = None) -> Finding:
    cell, line = nb.locate(f.line, python)
    end = None if f.end_line is None else f.end_line - (f.line - line)
    return dataclasses.replace(f, line=line, end_line=end, cell=cell)


def process_text(
    name: str, text: str, settings: Settings, project: ProjectIndex | None = None
) -> FileResult:
    try:
        fixed = fix_source(text, settings, name, project)
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
        consulted=frozenset(fixed.consulted),
    )
