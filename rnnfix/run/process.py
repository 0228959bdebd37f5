"""One file, start to end: read -> fix -> (write). Never raises: every outcome,
failures included, is a ``FileResult``."""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rnnfix.analysis.context import DroppedFix, Finding
from rnnfix.config.settings import Settings
from rnnfix.run import budget, stopping
from rnnfix.run.cache import (
    FileDigests,
    ResultCache,
    digest,
    dropped_from_json,
    dropped_to_json,
    finding_from_json,
    finding_to_json,
    run_fingerprint,
)
from rnnfix.run.collector import collector_tuned
from rnnfix.source.files import FileProblem, decode, is_plain_file, read_source, write_atomic
from rnnfix.source.lines import line_texts

if TYPE_CHECKING:
    from rnnfix.analysis.project.index import ProjectIndex
    from rnnfix.analysis.project.summaries import ModuleSummary
    from rnnfix.run.pool import FilePool
    from rnnfix.source import notebooks

# A run whose results all come from the cache imports neither the project
# index, the summaries nor the worker pool (nor the engine: ``process_text``):
# they are imported where a file is checked.


def normalise(path: str | os.PathLike[str]) -> str:
    """A file's key: ``rnnfix.analysis.project.index.normalise``, which a
    warm run would import the project index for."""
    return os.path.abspath(path)


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
    # Fixes later passes found once earlier fixes went in, at the original's lines.
    followups: list[Finding] = field(default_factory=list)
    error: str | None = None  # one line: "cannot parse: ...", "cannot read: ..."
    error_line: int | None = None
    error_col: int | None = None  # 1-based, with error_line
    old_text: str | None = None
    new_text: str | None = None
    old_bytes: bytes | None = None
    # Other files whose summaries the analysis looked up (of the run, or
    # imported from outside it).
    consulted: frozenset[str] = frozenset()
    # Parts left unchecked that do not fail the file ("cell 4: line 2: cannot parse: ...").
    notes: list[str] = field(default_factory=list)

    @property
    def reported(self) -> list[Finding]:
        """What a dry run reports (``--check``, ``--diff``): the findings of the
        file as it is and the follow-up fixes, one for each fix the diff shows."""
        return sorted([*self.initial, *self.followups], key=lambda f: (f.cell or 0, f.line, f.col))


@dataclass
class Progress:
    """How far a run got, for the message an interrupted run prints."""

    total: int = 0
    checked: int = 0
    written: int = 0


# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 200
# Rounds of re-checking the files that call into a file a fix changed.
MAX_ROUNDS = 3
# Rules whose analysis follows calls into other files (the project index).
_PROJECT_RULES = ("RNF001", "RNF003", "RNF004")


def process_files(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    jobs: int = 0,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    context: Sequence[Path] | None = None,
    scan_imports: bool = True,
    texts: bool = True,
) -> list[FileResult]:
    """``process_file`` over many files, in worker processes on large trees.
    Workers get the settings, the project index and a path (plain data),
    never shared objects.

    The project index (``rnnfix.analysis.project.index``) is built first from
    every file as it is on disk, and from the project files outside the run
    that they import (``rnnfix.analysis.project.imported``; not with ``isolated``),
    so that a call into another file is followed whatever order the files
    come in, and a file given alone still sees its package. Only the run's
    files are fixed.
    Every file is fixed from its own source against that index; then each
    file a fix changed is summarised again, and the files whose analysis
    looked it up are fixed again, from their own source, against the new
    summaries (a helper that RNF003 now puts in eval mode makes its callers
    need ``train()``). Files are written once, at the end.

    ``context``: every file of the project (``--changed-since``); the index
    reads them all, but only ``paths`` are reported and fixed.

    ``scan_imports``: look for the files outside the run that its files
    import (``rnnfix apply train.py``). The CLI turns it off when the run is
    whole folders or has a ``context``: the project is then in the run
    already, and scanning thousands of files' imports would cost a warm run
    more than everything else it does.

    ``texts``: the results of changed files need their old and new text (a
    write, a diff). Without (``--check``), a file with a fix can be answered
    from the cache, which holds its findings but never its text."""
    with collector_tuned():
        return _process_files(
            paths, settings, write, jobs, cache, progress, context, scan_imports, texts or write
        )


def _process_files(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    jobs: int,
    cache: ResultCache | None,
    progress: Progress | None,
    context: Sequence[Path] | None,
    scan_imports: bool,
    texts: bool,
) -> list[FileResult]:
    progress = progress if progress is not None else Progress()
    # A run in several parts (one per configuration) shares one Progress.
    progress.total = max(progress.total, progress.checked + len(paths))
    everything = _with_context(paths, context)
    outside = _outside(everything, settings) if scan_imports else []
    if cache is None:
        return _process_uncached(paths, settings, write, jobs, progress, everything, outside)
    # ``everything`` starts with ``paths`` (``_with_context``): each path is
    # made absolute once (a warm run on a large tree spent a tenth of its time
    # doing it three times).
    every_key = _absolute(everything)
    keys = every_key[: len(paths)]
    known: dict[str, str] = {}
    raw: dict[str, bytes] = {}
    for key in every_key:
        data = _read_plain(key, settings.max_file_size)
        if data is not None:
            raw[key] = data
            known[key] = digest(data)
    # Files outside the run that it imports: which ones exist keys every
    # result; the bytes of those a result consulted key that result.
    run = run_fingerprint([*every_key, *(f"imported:{o}" for o in outside)])
    digests = FileDigests(known, settings.max_file_size)
    cached: dict[str, FileResult] = {}
    for key, path in zip(keys, paths, strict=True):
        if key in known:
            hit = cache.lookup(key, known[key], run, digests)
            if hit is not None and (result := _result_from_json(hit, raw[key], path, texts)):
                cached[key] = result
    todo = [p for p, k in zip(paths, keys, strict=True) if k not in cached]
    progress.checked += len(cached)
    rechecked: dict[str, FileResult] = {}
    fresh: Iterator[FileResult] = iter(())
    if todo:
        # As many workers as a run without the cache would start: the files
        # left to fix are the costly ones (a warm ``--diff`` re-fixes every
        # file with a fix), never worth fewer (issue 37).
        jobs = min(jobs or _auto_jobs(len(paths)), len(todo))
        # A hit that consulted a file fixed again still stands: that file's
        # bytes are part of the hit's key, so they are the ones it was
        # computed with. It is checked again only where that file's fixed
        # summary differs from the one on disk (the hit may then be of a
        # run that settled against either), by ``_settle``, as a cold run
        # checks it again.
        hit_keys = [k for k in keys if k in cached]
        hits = [(p, cached[k]) for p, k in zip(paths, keys, strict=True) if k in cached]
        new, settled = _fix(todo, settings, jobs, progress, everything, outside, False, hits)
        fresh = iter(new)
        rechecked = {
            k: r for k, (_, hit), r in zip(hit_keys, hits, settled, strict=True) if r is not hit
        }
    results = [
        rechecked[k] if k in rechecked else cached[k] if k in cached else next(fresh) for k in keys
    ]
    for key, result in zip(keys, results, strict=True):
        if (
            (key not in cached or key in rechecked)
            and key in known
            and _cacheable(result, raw[key])
        ):
            consulted = result.consulted
            cache.store(key, known[key], run, digests, _result_to_json(result), consulted)
    cache.save()  # before writing: an interrupted write phase keeps the results
    if write:
        for path, result in zip(paths, results, strict=True):
            _write(path, result, progress)
    return results


def _auto_jobs(files: int) -> int:
    """Workers for a run of ``files`` files when ``--jobs`` is not given."""
    return min(os.cpu_count() or 1, 8) if files >= PARALLEL_THRESHOLD else 1


def _process_uncached(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    jobs: int,
    progress: Progress,
    everything: Sequence[Path],
    outside: Sequence[str],
) -> list[FileResult]:
    """Fix ``paths``; ``everything``: all files of the run (the project index
    covers them all); ``outside``: the files outside the run that they import."""
    jobs = jobs or _auto_jobs(len(paths))
    return _fix(paths, settings, jobs, progress, everything, outside, write)[0]


def _fix(
    paths: Sequence[Path],
    settings: Settings,
    jobs: int,
    progress: Progress,
    everything: Sequence[Path],
    outside: Sequence[str],
    write: bool = False,
    hits: Sequence[tuple[Path, FileResult]] = (),
) -> tuple[list[FileResult], list[FileResult]]:
    """The results of ``paths``, fixed, and of ``hits`` (results the cache
    gave for other files of the run): settled together (``_settle``), so a
    hit is checked again, from its source, only when a file it consulted
    has a fixed summary that differs from the one on disk. Without a
    project index nothing settles, and ``write`` writes each file as it goes."""
    from rnnfix.run.pool import FilePool

    project = _build_project(everything, settings, outside)
    with FilePool(process_file, settings, project, jobs) as pool:
        if project is None:
            return _map(pool, paths, write, progress), [r for _, r in hits]
        results = _map(pool, paths, False, progress)
        every = _settle(
            pool, [*paths, *(p for p, _ in hits)], [*results, *(r for _, r in hits)], project
        )
    fixed, settled = every[: len(paths)], every[len(paths) :]
    if write:
        for path, result in zip(paths, fixed, strict=True):
            _write(path, result, progress)
    return fixed, settled


def _with_context(paths: Sequence[Path], context: Sequence[Path] | None) -> list[Path]:
    """The files the project index reads: ``paths`` first, then the rest of ``context``."""
    if not context:
        return list(paths)
    seen = {normalise(p) for p in paths}
    return [*paths, *(p for p in context if normalise(p) not in seen)]


def _absolute(paths: Sequence[Path]) -> list[str]:
    """``normalise`` of each path, asking the OS for the current folder once
    (``os.path.abspath`` asks it per path)."""
    cwd = os.getcwd()
    join, norm, isabs = os.path.join, os.path.normpath, os.path.isabs
    return [norm(p if isabs(p) else join(cwd, p)) for p in map(os.fspath, paths)]


_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _read_plain(key: str, max_bytes: int) -> bytes | None:
    """The bytes of a regular file of at most ``max_bytes``; None for
    anything else: a link, a FIFO, a device (``/dev/zero``), a huge file or
    one that cannot be read (``process_file`` reports it, never read here).
    ``O_NONBLOCK``: a FIFO swapped in after the ``lstat`` cannot block the
    open; ``O_NOFOLLOW``: nor can a link be followed."""
    try:
        st = os.lstat(key)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        fd = os.open(key, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        data = os.read(fd, st.st_size + 1)
        more = os.read(fd, 1 << 20) if data else b""
        if more:  # a short read, or it grew since the fstat: read to the end
            chunks = [data, more]
            while chunks[-1]:
                chunks.append(os.read(fd, 1 << 20))
            data = b"".join(chunks)  # never copied in the common case
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _cacheable(result: FileResult, data: bytes) -> bool:
    """Failures to read or write are about the disk, not the bytes: never
    cached. A result computed from other bytes than the ones hashed (the file
    changed during the run) is not cached either."""
    if result.outcome is Outcome.FAILED and not (
        (result.error or "").startswith("cannot parse") or result.error == NEWER_SYNTAX
    ):
        return False
    return result.old_bytes is None or result.old_bytes == data


def _result_to_json(result: FileResult) -> dict[str, Any]:
    """What the analysis found, never text: the text rnnfix writes (or a diff
    shows) is always computed from the source in the run that needs it
    (``rnnfix.run.cache``)."""
    return {
        "outcome": result.outcome.value,
        "findings": [finding_to_json(f) for f in result.findings],
        "applied": [finding_to_json(f) for f in result.applied],
        "initial": [finding_to_json(f) for f in result.initial],
        "followups": [finding_to_json(f) for f in result.followups],
        "dropped": [dropped_to_json(d) for d in result.dropped],
        "error": result.error,
        "error_line": result.error_line,
        "error_col": result.error_col,
        "consulted": sorted(result.consulted),
        "notes": result.notes,
    }


_OUTCOMES = {o.value: o for o in Outcome}


def _findings(data: list[Any]) -> list[Finding]:
    # Most entries have none: no comprehension to build for them.
    return [finding_from_json(f) for f in data] if data else []


def _result_from_json(
    data: dict[str, Any], raw: bytes, path: Path, texts: bool
) -> FileResult | None:
    """A cached result, or None when the entry does not read back (then the
    file is simply processed again). A changed file's result is a miss when
    the run needs its text (``texts``: a write, a diff): the cache has none."""
    try:
        outcome = _OUTCOMES[data["outcome"]]
        if outcome is Outcome.CHANGED and texts:
            return None
        # No text: nothing downstream reads it without ``texts`` (diffs and
        # writes are of changed files), and decoding every file would cost a
        # warm run more than the rest of it.
        return FileResult(
            path=str(path),
            outcome=outcome,
            findings=_findings(data["findings"]),
            applied=_findings(data["applied"]),
            initial=_findings(data["initial"]),
            followups=_findings(data["followups"]),
            dropped=[dropped_from_json(d) for d in data["dropped"]] if data["dropped"] else [],
            error=data["error"],
            error_line=data["error_line"],
            error_col=data["error_col"],
            old_bytes=raw,
            consulted=frozenset(data["consulted"]),
            notes=[str(n) for n in data["notes"]] if data["notes"] else [],
        )
    except (KeyError, TypeError, ValueError):
        return None


def _uses_project(settings: Settings) -> bool:
    return any(settings.enabled(code) for code in _PROJECT_RULES)


def _outside(paths: Sequence[Path], settings: Settings) -> list[str]:
    """The files outside the run that its files import (``rnnfix apply
    train.py`` knows what ``from utils import evaluate`` does); none with
    ``--isolated``."""
    if settings.isolated or not _uses_project(settings):
        return []
    from rnnfix.analysis.project.imported import imported_files

    return imported_files(paths)


def _build_project(
    paths: Sequence[Path], settings: Settings, outside: Sequence[str]
) -> ProjectIndex | None:
    """The index of the run's files and the files outside it they import;
    only the run's files are fixed. A file run alone has one too: RNF003
    asks it who calls the file's functions from the project beyond the run
    (``rules/rnf003/callers.py``)."""
    if not paths or not _uses_project(settings):
        return None
    from rnnfix.analysis.project.index import ProjectIndex

    # Only regular files: a FIFO named on the command line would block the
    # first lookup that reads it (``process_file`` reports it).
    plain = [p for p in paths if is_plain_file(p)]
    return ProjectIndex.build([*plain, *(Path(o) for o in outside)])


def _map(
    pool: FilePool[FileResult], paths: Sequence[Path], write: bool, progress: Progress
) -> list[FileResult]:
    results: list[FileResult] = []
    for result in pool.map(paths, write):
        stopping.check()  # a stop that native code swallowed mid-file
        results.append(result)
        progress.checked += 1
        progress.written += write and result.outcome is Outcome.CHANGED
    return results


def _settle(
    pool: FilePool[FileResult],
    paths: Sequence[Path],
    results: list[FileResult],
    project: ProjectIndex,
) -> list[FileResult]:
    """Re-check the files that looked up a file whose summary a fix changed,
    until the summaries agree with the fixed files (or ``MAX_ROUNDS``); in
    the pool's workers, which have the first pass's summaries already."""
    from rnnfix.analysis.project.summarise import summarise

    results = list(results)
    keys = [normalise(p) for p in paths]
    # A file's own summary is never a reason to check it again: its analysis
    # reads its own source, and its own fix passes (``engine``) already see
    # what a fix does to its functions. A lookup comes back to the file
    # itself through re-exports (``torch/__init__.py`` re-exports half of
    # ``torch``), so a fixed file's re-check would otherwise be a whole second
    # fix of it, for nothing.
    others = [r.consulted - {k} for k, r in zip(keys, results, strict=True)]
    every_change: dict[str, ModuleSummary | None] = {}
    for _ in range(MAX_ROUNDS):
        changes: dict[str, ModuleSummary | None] = {}
        # Only a file some other file looked up can change a result: the
        # others (the one file of ``rnnfix apply train.py``) are not
        # summarised again.
        looked_up = set().union(*others)
        for key, result in zip(keys, results, strict=True):
            # A cached result has no text (nor need: the hits of files
            # fixed again are what settles here, against fixed summaries).
            if (
                result.outcome is Outcome.CHANGED
                and result.new_text is not None
                and key.endswith(".py")
                and key in looked_up
            ):
                summary = summarise(result.new_text, key)
                if summary != project.files.get(key):
                    changes[key] = summary
        if not changes:
            break
        project = project.updated(changes)
        every_change.update(changes)
        again = [i for i, consulted in enumerate(others) if consulted & changes.keys()]
        rechecked = pool.map([paths[i] for i in again], False, every_change)
        for i, result in zip(again, rechecked, strict=True):
            results[i] = result
            others[i] = result.consulted - {keys[i]}
    return results


def _write(path: Path, result: FileResult, progress: Progress) -> None:
    if result.outcome is not Outcome.CHANGED:
        return
    assert result.new_text is not None and result.old_bytes is not None
    # Ctrl-C / SIGTERM wait until the file is written and counted, so the
    # "N written" an interrupted run prints is exact.
    from rnnfix.run.pool import signals_blocked

    stopping.check()
    with signals_blocked():
        try:
            new = decode(result.old_bytes).encode(result.new_text)
            write_atomic(path, new, expected=result.old_bytes)
        except (FileProblem, UnicodeEncodeError) as exc:
            _not_written(result, exc)
        progress.written += result.outcome is Outcome.CHANGED


def process_file(
    path: Path, settings: Settings, write: bool, project: ProjectIndex | None = None
) -> FileResult:
    name = str(path)
    try:
        data, decoded = read_source(path, settings.max_file_size)
    except FileProblem as exc:
        return FileResult(name, Outcome.FAILED, error=str(exc))
    if path.suffix == ".ipynb":
        result = process_notebook(name, decoded.text, settings, project)
    else:
        result = process_text(name, decoded.text, settings, project)
    if decoded.warning is not None:
        result.notes.append(decoded.warning)
    result.old_bytes = data
    if result.outcome is not Outcome.CHANGED or not write:
        return result
    stopping.check()  # never write a file whose analysis a stop cut short
    assert result.new_text is not None
    try:
        write_atomic(path, decoded.encode(result.new_text), expected=data)
    except (FileProblem, UnicodeEncodeError) as exc:
        _not_written(result, exc)
    return result


def _not_written(result: FileResult, exc: FileProblem | UnicodeEncodeError) -> None:
    """A fixed file that could not be written (read-only, changed meanwhile,
    not encodable) keeps its findings, at its own lines, and no fix."""
    result.outcome = Outcome.FAILED
    result.error = str(exc) if isinstance(exc, FileProblem) else f"cannot encode: {exc}"
    result.findings, result.applied = list(result.initial), []


def process_notebook(
    name: str,
    text: str,
    settings: Settings,
    project: ProjectIndex | None = None,
    *,
    fix: bool = True,
) -> FileResult:
    """A notebook's code cells are fixed as one module (see ``rnnfix.source.notebooks``);
    findings are reported per cell, the diff is of the notebook's JSON.
    ``fix=False``: only checked (see ``process_text``)."""
    from rnnfix.source import notebooks

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
    result = process_text(name, nb.python, settings, project, fix=fix)
    # Unused suppressions, at the module's lines: said at the cell's.
    for note in result.notes:
        number, _, rest = note.removeprefix("line ").partition(": ")
        in_cell, at = nb.locate(int(number))
        notes.append(f"cell {in_cell}: line {at}: {rest}")
    result.notes = notes
    if result.error_line is not None:
        cell, line = nb.locate(result.error_line)
        col = f", column {result.error_col}" if result.error_col else ""
        result.error = f"cell {cell}: line {line}{col}: {result.error}"
        result.error_line = result.error_col = None
    # What is left is at the fixed module's lines; the rest at the input's.
    fixed = result.new_text if result.outcome is Outcome.CHANGED else None
    result.findings = [_in_cell(nb, f, fixed) for f in result.findings]
    result.applied = [_in_cell(nb, f) for f in result.applied]
    result.initial = [_in_cell(nb, f) for f in result.initial]
    result.followups = [_in_cell(nb, f) for f in result.followups]
    result.dropped = [
        dataclasses.replace(
            d,
            finding=(shown := _in_cell(nb, d.finding)),
            reason=cell_line_refs(nb, d.reason, shown.cell or 0, None),
        )
        for d in result.dropped
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
    fix = f.fix
    if fix is not None and fix.description:
        fix = dataclasses.replace(
            fix, description=cell_line_refs(nb, fix.description, cell, python)
        )
    # A cell indented as a whole is checked dedented (as IPython runs it).
    shift = len(nb.dedents.get(cell - 1, ""))
    return dataclasses.replace(
        f,
        line=line,
        end_line=end,
        col=f.col + shift,
        end_col=None if f.end_col is None else f.end_col + shift,
        cell=cell,
        message=cell_line_refs(nb, f.message, cell, python),
        fix=fix,
    )


# "line N" in a message or a fix's description, unless it follows another
# file's name ("`Net.train` (models.py line 4)").
_LINE_REF = re.compile(r"(?P<file>\S+\.(?:py|pyi|ipynb) )?\bline (?P<n>\d+)\b")


def cell_line_refs(nb: notebooks.Notebook, text: str, cell: int, python: str | None) -> str:
    """``text`` with each line of the notebook's module it cites as a line
    of the cell a person sees ("line 8", or "line 2 of cell 3")."""

    def one(m: re.Match[str]) -> str:
        if m.group("file"):
            return m.group(0)
        at_cell, at_line = nb.locate(int(m.group("n")), python)
        return f"line {at_line}" if at_cell == cell else f"line {at_line} of cell {at_cell}"

    return _LINE_REF.sub(one, text)


_PY = f"{sys.version_info.major}.{sys.version_info.minor}"
# The only newer syntax told apart from a mistake is Python 3.12's type
# parameters and type aliases (PEP 695): the syntax errors an older ``ast``
# gives on code that is valid on a newer Python.
_NEWER = (3, 12)
NEWER_SYNTAX = f"not checked: needs Python 3.12 to parse (rnnfix runs on Python {_PY})"
_PEP695 = re.compile(r"^\s*(?:(?:async\s+)?def\s+\w+\s*\[|class\s+\w+\s*\[|type\s+\w+\s*(?:\[|=))")
# An f-string whose replacement field holds the f-string's own quote (PEP 701).
_PEP701 = re.compile(r"""(?i)(?<![\w])(?:rf|fr|f)(["'])[^\n]*?\{[^}\n]*\1""")

_PEP695_ANYWHERE = re.compile(_PEP695.pattern, re.M)


def newer_syntax(text: str, lineno: int | None, msg: str = "") -> bool:
    """Whether a syntax error at ``lineno`` is a newer Python's syntax rather
    than a mistake (the file is then not checked, and counted apart): PEP
    695's type parameters, and PEP 701's f-strings (a quote of the f-string's
    own kind inside a replacement field), both before 3.12."""
    if sys.version_info >= _NEWER or lineno is None:
        return False
    lines = line_texts(text)
    if not 0 < lineno <= len(lines):
        return False
    line = lines[lineno - 1]
    if _PEP695.match(line):
        return True
    return msg.startswith("f-string") and _PEP701.search(line) is not None


def _too_new_for_target(text: str, settings: Settings) -> int | None:
    """The line of the first PEP 695 statement when ``target-version`` is
    older than 3.12 and the running Python parses it (on an older one the
    parser says so first)."""
    target = settings.target
    if target is None or target >= _NEWER or sys.version_info < _NEWER:
        return None
    if not _PEP695_ANYWHERE.search(text):
        return None
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if type(node).__name__ == "TypeAlias" or getattr(node, "type_params", None):
            return getattr(node, "lineno", 1)
    return None


def _target_error(settings: Settings) -> str:
    return (
        f"uses Python 3.12 syntax (type parameters), newer than "
        f"target-version {settings.target_version}"
    )


def process_text(
    name: str,
    text: str,
    settings: Settings,
    project: ProjectIndex | None = None,
    *,
    fix: bool = True,
) -> FileResult:
    """``text`` fixed to a fixed point, as ``name``. ``fix=False``: only
    checked (the rules once, no fix loop: the language server's diagnostics
    on every edit); the result is then UNCHANGED with the findings of
    ``text``, their fixes as the rules offer them, not tried."""
    # A run whose results are all cached never needs the engine.
    from rnnfix.run import suppressions
    from rnnfix.run.engine import SourceResult, check_source, fix_source
    from rnnfix.run.filegate import may_find

    report_unused = settings.report_unused_suppressions
    try:
        # A file no selected rule can report anything in is not parsed (its
        # syntax is not rnnfix's to judge, and it is never written); nor is
        # one whose ``# rnnfix: noqa`` silences everything.
        gate: set[str] = set()
        if not report_unused and suppressions.silences_everything(text):
            return FileResult(name, Outcome.UNCHANGED, old_text=text, new_text=text)
        if not may_find(text, settings.for_path(name), name, project, gate):
            unused: list[tuple[int, str]] = []
            if report_unused and suppressions.may_suppress(text):
                # No rule can report anything here: every suppression is unused.
                found = suppressions.Suppressions(text, line_texts(text))
                unused = suppressions.unused(found, [])
            return FileResult(
                name,
                Outcome.UNCHANGED,
                old_text=text,
                new_text=text,
                consulted=frozenset(gate),
                notes=_unused_notes(unused),
            )
        large = budget.too_large(text)
        if large is not None:
            return FileResult(name, Outcome.FAILED, error=large)
        with budget.cpu_budget():
            if fix:
                fixed = fix_source(text, settings, name, project)
            else:
                checked = check_source(text, settings, name, project)
                fixed = SourceResult(text, text, findings=checked, initial=checked)
    except budget.BudgetExceeded:
        return FileResult(name, Outcome.FAILED, error=budget.exceeded_reason())
    except SyntaxError as exc:
        if newer_syntax(text, exc.lineno, exc.msg or ""):
            target = settings.target
            error = _target_error(settings) if target and target < _NEWER else NEWER_SYNTAX
            return FileResult(name, Outcome.FAILED, error=error, error_line=exc.lineno)
        msg = (exc.msg or "invalid syntax").splitlines()[0]
        col = exc.offset if exc.lineno is not None and exc.offset and exc.offset > 0 else None
        return FileResult(
            name,
            Outcome.FAILED,
            error=f"cannot parse: {msg}",
            error_line=exc.lineno,
            error_col=col,
        )
    except RecursionError:
        return FileResult(name, Outcome.FAILED, error="cannot parse: nesting too deep")
    except Exception as exc:  # noqa: BLE001 - one bad file must never stop a run
        return FileResult(
            name, Outcome.FAILED, error=f"internal error: {type(exc).__name__}: {exc}"
        )
    too_new = _too_new_for_target(text, settings)
    if too_new is not None:
        return FileResult(name, Outcome.FAILED, error=_target_error(settings), error_line=too_new)
    outcome = Outcome.CHANGED if fixed.changed else Outcome.UNCHANGED
    return FileResult(
        name,
        outcome,
        findings=fixed.findings,
        applied=fixed.applied,
        dropped=fixed.dropped,
        initial=fixed.initial,
        followups=fixed.followups,
        old_text=text,
        new_text=fixed.fixed,
        consulted=frozenset(fixed.consulted),
        notes=_unused_notes(fixed.unused),
    )


_UNUSED = "unused suppression: "


def _unused_notes(unused: list[tuple[int, str]]) -> list[str]:
    return [f"line {line}: {_UNUSED}{what}" for line, what in unused]
