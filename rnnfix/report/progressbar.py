"""A progress bar on stderr for runs long enough to want one.

It draws ``Progress`` (``rnnfix.run.process``: files checked of the total) from
a thread, so the run itself never waits for the terminal. Nothing is drawn
before ``delay`` seconds have passed (a short run shows nothing) nor when
the stream is not a terminal (CI logs, pipes, files), and the line is erased
when the run ends, so the summary and the diagnostics read as without it.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType
from typing import Protocol, TextIO

WIDTH = 30

# The worker pool forks while the bar's thread runs: a fork in the middle of
# a write would leave the child a stderr whose lock no thread will release.
# Writes hold this lock, and so does every fork (in the parent, around it).
_WRITING = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_WRITING.acquire,
        after_in_parent=_WRITING.release,
        after_in_child=_WRITING.release,
    )


class Counts(Protocol):
    total: int
    checked: int


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def line(checked: int, total: int, elapsed: float | None = None) -> str:
    """``rnnfix: [####.....]  40%  4/10 files  00:00:02  ETA 00:00:03``; the
    times only when ``elapsed`` is given, the ETA once a file is done."""
    done = min(checked, total)
    filled = WIDTH * done // total if total else WIDTH
    percent = 100 * done // total if total else 100
    text = f"rnnfix: [{'#' * filled}{'.' * (WIDTH - filled)}] {percent:3d}%  {done}/{total} files"
    if elapsed is not None:
        text += f"  {_clock(elapsed)}"
        if 0 < done < total:
            text += f"  ETA {_clock(elapsed / done * (total - done))}"
    return text


def wanted(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class ProgressBar:
    def __init__(
        self, counts: Counts, stream: TextIO, delay: float = 1.0, interval: float = 0.1
    ) -> None:
        self.counts = counts
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.drawn = 0  # width of the line on screen
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rnnfix-progress", daemon=True)

    def __enter__(self) -> ProgressBar:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        if self.drawn:
            self._write("\r" + " " * self.drawn + "\r")

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self.draw()
            if self._stop.wait(self.interval):
                return

    def draw(self) -> None:
        text = line(self.counts.checked, self.counts.total, time.monotonic() - self.started)
        self._write("\r" + text.ljust(self.drawn))
        self.drawn = max(self.drawn, len(text))

    def _write(self, text: str) -> None:
        with _WRITING:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # a closed or broken terminal: no bar
                self._stop.set()
