"""The per-process store of records, and its report file."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from rnnfix.verify.records import ProcessReport, Record, write_process_report


class Recorder:
    """Deduplicating record store of one process.

    Hooks may run on autograd engine threads (CUDA backward) and in ``__del__``,
    so every mutation holds a lock. File writes happen on new records from safe
    contexts and at exit; the runner may SIGKILL a process on timeout, so
    nothing important waits for exit alone.
    """

    def __init__(self, mode: str, report_dir: Path | None) -> None:
        self.mode = mode
        self.report_dir = report_dir
        self.rnn_forwards = 0
        self.rnn_forwards_cuda = 0
        self.optimizer_steps = 0
        self.stopped_after_clean_cycle = False
        self._records: dict[tuple[object, ...], Record] = {}
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._closed = False

    def add(self, record: Record, *, flush: bool = True) -> bool:
        """Store ``record`` (or bump the count of its twin). True if new."""
        with self._lock:
            if self._closed:
                return False
            seen = self._records.get(record.key())
            if seen is not None:
                seen.count += record.count
                extra = [o for o in record.optimizers if o not in seen.optimizers]
                if extra:
                    seen.optimizers = (*seen.optimizers, *extra)
                return False
            self._records[record.key()] = record
        if flush:
            self.flush()
        return True

    def records(self) -> list[Record]:
        with self._lock:
            return list(self._records.values())

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def has_problems(self) -> bool:
        """Any error or warning so far: the run is not clean."""
        with self._lock:
            return any(r.severity in ("error", "warning") for r in self._records.values())

    def flush(self, *, exited: bool = False) -> None:
        if self.report_dir is None:
            return
        with self._lock:
            report = ProcessReport(
                pid=self._pid,
                argv=list(sys.argv),
                mode=self.mode,
                rank=os.environ.get("RANK"),
                records=list(self._records.values()),
                rnn_forwards=self.rnn_forwards,
                rnn_forwards_cuda=self.rnn_forwards_cuda,
                optimizer_steps=self.optimizer_steps,
                exited=exited,
                stopped_after_clean_cycle=self.stopped_after_clean_cycle,
            )
            try:
                write_process_report(self.report_dir, report)
            except OSError:
                pass  # the report directory vanished: the runner is gone

    def close(self) -> None:
        """Final flush; later records (interpreter teardown) are dropped."""
        self.flush(exited=True)
        with self._lock:
            self._closed = True

    def after_fork_in_child(self) -> None:
        """A forked child (DataLoader worker, ``mp`` with fork) starts empty
        under its own pid, so the parent's records are not reported twice."""
        self._lock = threading.RLock()
        self._records = {}
        self._pid = os.getpid()
        self.rnn_forwards = self.rnn_forwards_cuda = self.optimizer_steps = 0
