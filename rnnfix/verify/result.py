"""The outcome of a verified run, and the verdict drawn from it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from rnnfix.verify.records import SANITIZER_ERROR, ProcessReport, Record


@dataclass(frozen=True)
class VerifyResult:
    """What ran, how it ended, what the sanitizer saw, and the verdict."""

    command: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    timeout_s: float | None
    duration_s: float
    mode: str
    until_clean_cycle: bool
    strict: bool
    records: tuple[Record, ...]
    processes: tuple[ProcessReport, ...]
    stdout: str | None = None
    stderr: str | None = None
    #: Files written back to their original bytes (``apply --verify``).
    rolled_back: tuple[str, ...] = ()
    #: Files that needed a rollback but were edited while the command ran:
    #: left as they are (the edit is someone's work).
    not_rolled_back: tuple[str, ...] = ()
    #: Why the command could not be started at all (``OSError`` text).
    launch_error: str | None = None

    @property
    def errors(self) -> list[Record]:
        return [r for r in self.records if r.severity == "error"]

    @property
    def warnings(self) -> list[Record]:
        return [r for r in self.records if r.severity == "warning"]

    @property
    def stopped_after_clean_cycle(self) -> bool:
        return any(p.stopped_after_clean_cycle for p in self.processes)

    @property
    def finished(self) -> bool:
        """The command exited with status 0 in time (a clean-cycle stop counts)."""
        return not self.timed_out and self.returncode == 0

    @property
    def rnn_forwards(self) -> int:
        return sum(p.rnn_forwards for p in self.processes)

    @property
    def rnn_forwards_cuda(self) -> int:
        return sum(p.rnn_forwards_cuda for p in self.processes)

    def failures(self) -> list[str]:
        """Why the verdict is FAIL; empty when it passes."""
        reasons = []
        if self.errors:
            reasons.append(f"{len(self.errors)} mode bug(s) seen")
        if self.strict and self.warnings:
            reasons.append(f"{len(self.warnings)} warning(s) seen (--strict)")
        if self.launch_error is not None:
            return [*reasons, f"the command could not be started: {self.launch_error}"]
        if self.timed_out:
            reasons.append(f"the command did not finish within {self.timeout_s:g} s")
        elif self.returncode != 0:
            reasons.append(f"the command exited with status {self.returncode}")
        if not self.processes:
            reasons.append("no process of the command imported torch: nothing was verified")
        return reasons

    @property
    def ok(self) -> bool:
        return not self.failures()

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0 clean and finished; 2 the command could not
        be started or the sanitizer failed; 1 otherwise."""
        if self.launch_error is not None or any(r.kind == SANITIZER_ERROR for r in self.records):
            return 2
        return 0 if self.ok else 1

    def how(self) -> str:
        """One sentence: what was verified and how."""
        n = len(self.processes)
        cuda, total = self.rnn_forwards_cuda, self.rnn_forwards
        if total == 0:
            checked = "no RNN forward ran, so cuDNN's check had nothing to check"
        elif cuda == total:
            checked = f"{total} RNN forward(s) on CUDA checked by real cuDNN"
        elif cuda == 0:
            checked = f"cuDNN's check emulated on the CPU for {total} RNN forward(s)"
        else:
            checked = (
                f"{cuda} RNN forward(s) checked by real cuDNN, {total - cuda} by the CPU emulation"
            )
        return (
            f"ran `{shlex.join(self.command)}` under the rnnfix mode sanitizer "
            f"(mode {self.mode}) in {n} Python process(es); {checked}"
        )
