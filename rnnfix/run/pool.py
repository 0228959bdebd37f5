"""Worker processes for one run: started once, used for the first pass over
the files and for every re-check round after it (``rnnfix.run.process._settle``).

Workers get the settings, the project index and paths (plain data), never
shared objects; results come back in the order of the paths. The summaries
the workers compute are shared through a folder that lives as long as the
pool (``LazySummaries.share_in``), so a re-check round finds the summaries
of the first pass instead of computing them again. With one job everything
runs in this process, against the same index.
"""

from __future__ import annotations

import contextlib
import gc
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from rnnfix.analysis.project.index import LazySummaries, ProjectIndex
from rnnfix.analysis.project.summaries import ModuleSummary
from rnnfix.config.settings import Settings
from rnnfix.run.collector import GC_THRESHOLD

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


Changes = dict[str, "ModuleSummary | None"]

# What the work gives for a path: ``rnnfix.run.process.FileResult``, a type
# parameter so that this module names neither the process module nor its
# types (the process module imports this one).
Result = TypeVar("Result")
Result_co = TypeVar("Result_co", covariant=True)


class FileWork(Protocol[Result_co]):
    """What the pool runs for each path: ``rnnfix.run.process.process_file``,
    handed in by the caller so that this module need not import it (the
    process module imports this one). A module-level function, so that it
    pickles by name into the workers."""

    def __call__(
        self, path: Path, settings: Settings, write: bool, project: ProjectIndex | None
    ) -> Result_co: ...


class FilePool(Generic[Result]):
    """``work`` (``process_file``) over paths, in ``jobs`` worker processes (in this
    process when ``jobs`` <= 1). Use it as a context manager: leaving it
    stops the workers (at once on an exception: Ctrl-C, SIGTERM) and
    removes the shared summaries."""

    def __init__(
        self, work: FileWork[Result], settings: Settings, project: ProjectIndex | None, jobs: int
    ) -> None:
        self.work = work
        self.settings = settings
        self.project = project
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._shared: str | None = None
        self._round = 0  # tells the workers when ``changes`` are new

    def __enter__(self) -> FilePool[Result]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            if exc is not None:
                # No worker may outlive the run (or go on writing).
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()  # they ignore SIGTERM (``_init_worker``)
                # The pool's own thread now finds its workers dead and marks
                # every future broken, also those ``map`` cancelled when the
                # stop left it: CPython's thread then dies of InvalidStateError
                # and prints it. Wait for it here, with that one error quiet.
                previous = threading.excepthook
                threading.excepthook = _quiet_invalid_state(previous)
                try:
                    pool.shutdown(wait=True)
                finally:
                    threading.excepthook = previous
            else:
                pool.shutdown()
        if self._shared is not None:
            assert self.project is not None and isinstance(self.project.files, LazySummaries)
            self.project.files.share_in(None)
            shutil.rmtree(self._shared, ignore_errors=True)
            self._shared = None

    def map(
        self, paths: Sequence[Path], write: bool, changes: Changes | None = None
    ) -> Iterator[Result]:
        """The result of each path, in order. ``changes``: summaries that
        replace those of the index (the files a fix changed, every round's
        changes together)."""
        if self.jobs <= 1:
            project = self.project
            if changes and project is not None:
                project = project.updated(changes)
            for path in paths:
                yield self.work(path, self.settings, write, project)
            return
        self._round += 1
        update = (self._round, changes) if changes else None
        work = partial(
            _process_in_worker, self.work, settings=self.settings, write=write, update=update
        )
        # Small chunks: a chunk holding a few large files (torch's
        # common_methods_invocations.py) would otherwise leave one worker
        # busy after the others are done; a task costs far less than a file.
        chunk = max(1, len(paths) // (self.jobs * 32))
        # The workers are forked while the tasks are submitted: with SIGINT
        # and SIGTERM blocked, so that none inherits this process's handlers
        # before ``_init_worker`` sets its own (a worker that took Ctrl-C or
        # the run's own stop printed a traceback).
        with signals_blocked():
            results = self._started().map(work, paths, chunksize=chunk)
        yield from results

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            from concurrent.futures import ProcessPoolExecutor  # a one-file run never starts one

            _preload()
            self._shared = _share_summaries(self.project)
            # The index goes to each worker once (not with every chunk of paths).
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs, initializer=_init_worker, initargs=(self.project,)
            )
        return self._pool


def _preload() -> None:
    """Import here, before the workers are forked, what each of them would
    otherwise import at its first file (the engine, every rule and the
    analyses they import at module level): they inherit it, and the import
    is paid once, not once a worker."""
    import rnnfix.run.engine
    import rnnfix.run.filegate  # noqa: F401
    from rnnfix.rules import all_rules

    all_rules()


def _quiet_invalid_state(
    hook: Callable[[threading.ExceptHookArgs], object],
) -> Callable[[threading.ExceptHookArgs], object]:
    from concurrent.futures import InvalidStateError

    def quiet(args: threading.ExceptHookArgs) -> object:
        if isinstance(args.exc_value, InvalidStateError):
            return None
        return hook(args)

    return quiet


def _share_summaries(project: ProjectIndex | None) -> str | None:
    """A folder for the workers to share the summaries they compute (each
    would otherwise summarise the files most files import); None when there
    is no index, or no folder can be made. This process reads it too (the
    re-check rounds look up the summary a fix replaced)."""
    if project is None or not isinstance(project.files, LazySummaries):
        return None
    try:
        folder = tempfile.mkdtemp(prefix="rnnfix-summaries-")
    except OSError:
        return None
    project.files.share_in(folder)
    return folder


_worker_project: ProjectIndex | None = None
# The index with the changes of the last round a worker was given, and that
# round (every task of a round carries the same changes).
_worker_updated: tuple[int, ProjectIndex] | None = None


def _init_worker(project: ProjectIndex | None) -> None:
    global _worker_project
    _worker_project = project
    gc.freeze()  # what the worker inherits (and the index) stays alive
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # Ctrl-C and a SIGTERM sent to the process group reach the workers too:
    # the parent decides what to do, and stops them itself (SIGKILL, in
    # ``FilePool.__exit__``). A worker that died of the group's signal first
    # would make the pool report itself broken before the parent saw its
    # own signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _unblock_signals()
    _die_with_parent()


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered on leaving), where the OS can."""
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    except (AttributeError, ValueError, OSError):  # not Unix, or not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _unblock_signals() -> None:
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    except (AttributeError, ValueError, OSError):
        pass


def _die_with_parent() -> None:
    """Linux: a worker gets SIGKILL when the parent dies, even by SIGKILL."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _process_in_worker(
    work: FileWork[Result],
    path: Path,
    settings: Settings,
    write: bool,
    update: tuple[int, Changes] | None,
) -> Result:
    global _worker_updated
    project = _worker_project
    if update is not None and project is not None:
        if _worker_updated is None or _worker_updated[0] != update[0]:
            _worker_updated = (update[0], project.updated(update[1]))
        project = _worker_updated[1]
    return work(path, settings, write, project)
