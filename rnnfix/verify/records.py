"""What the mode sanitizer saw, as plain data that crosses process boundaries.

Every sanitized process writes one JSON file (see :func:`write_process_report`)
into the directory named by ``RNNFIX_VERIFY_REPORT``; the runner reads them all
back (:func:`read_process_reports`). Nothing here imports torch.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]

#: A backward reached an RNN whose forward ran in eval mode with grad enabled
#: and cuDNN on: the exact condition under which cuDNN's backward fails.
CUDNN_BACKWARD_IN_EVAL = "cudnn-backward-in-eval"
#: ``optimizer.step()`` updated parameters of a model that is in eval mode.
OPTIMIZER_STEP_IN_EVAL = "optimizer-step-in-eval"
#: A forward that never reached a backward (a validation/inference forward) ran
#: in train mode, or with grad enabled; or a Dropout/BatchNorm ran in train mode
#: under no_grad.
VALIDATION_FORWARD = "validation-forward"
#: Dropout deliberately on under no_grad (Monte Carlo dropout): ``F.dropout``
#: with ``training=True`` in an eval-mode module, or a Dropout in train mode
#: inside a model in eval mode. Info.
MC_DROPOUT = "mc-dropout"
#: A BatchNorm/InstanceNorm in eval mode ran with grad enabled inside a module
#: in train mode: deliberately frozen statistics. Info.
FROZEN_BATCHNORM = "frozen-batchnorm"
#: A BatchNorm/InstanceNorm updated its running statistics under no_grad on
#: purpose: ``swa_utils.update_bn``, ``F.batch_norm(training=True)`` in an
#: eval-mode module, or the norm alone in train mode inside a model in eval
#: mode (test-time adaptation). Info.
BATCHNORM_RECALIBRATION = "batchnorm-recalibration"
#: A DataParallel/DDP wrapper's ``training`` flag differs from its module's.
WRAPPER_MODE_MISMATCH = "wrapper-mode-mismatch"
#: The process was stopped on purpose after a clean train/eval/train/step cycle.
CLEAN_CYCLE = "clean-cycle"
#: The sanitizer itself failed to install in a process.
SANITIZER_ERROR = "sanitizer-error"

REPORT_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Site:
    """One user frame: where in the user's code something happened."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Provenance:
    """How the user's code reached an eval-mode forward, for ``verify --fix``.

    Taken at forward time from the live stack: the module the user's code
    called (the outermost module call around the RNN), the user frames from
    that call outwards with, per frame, the expressions that name the module
    there (checked against the live object, never evaluated), and the user
    frames of the ``eval()``/``train(False)`` that last put it (or a module
    around or inside it) in eval mode.
    """

    #: Class name of the module the user's code called.
    model: str
    #: User frames from the call of that module outwards, innermost first.
    call: tuple[Site, ...]
    #: Per frame of ``call``: expressions naming the module in that frame.
    refs: tuple[tuple[str, ...], ...]
    #: User frames of the ``eval()`` call, innermost first; empty: unknown.
    eval_site: tuple[Site, ...] = ()
    #: The module ``eval()`` was called on, relative to the called module:
    #: ``""`` for the module itself or a module around it, ``"encoder"`` for
    #: ``model.encoder.eval()``.
    eval_path: str = ""
    #: The RNN relative to the called module (``""``: it is the RNN); None
    #: when it is not one of its submodules.
    rnn_path: str | None = ""
    #: The RNN's inter-layer dropout changes its output in train mode.
    rnn_dropout: bool = False
    #: The called module is itself user code's call target (not library code).
    user_call: bool = True
    #: No eval-mode RNN forward ran between the ``eval()`` and this forward:
    #: nothing was evaluated (frozen-BatchNorm fine-tuning looks like this).
    nothing_evaluated: bool = False
    #: A tensor passed to the called module requires grad: a gradient with
    #: respect to the input (saliency, adversarial examples, a critic scoring
    #: an actor's output), not training data.
    input_grad: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["call"] = [asdict(s) for s in self.call]
        data["eval_site"] = [asdict(s) for s in self.eval_site]
        data["refs"] = [list(r) for r in self.refs]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Provenance:
        rnn_path = data.get("rnn_path", "")
        return cls(
            model=str(data.get("model", "")),
            call=tuple(Site(**s) for s in data.get("call", ())),
            refs=tuple(tuple(str(e) for e in r) for r in data.get("refs", ())),
            eval_site=tuple(Site(**s) for s in data.get("eval_site", ())),
            eval_path=str(data.get("eval_path", "")),
            rnn_path=None if rnn_path is None else str(rnn_path),
            rnn_dropout=bool(data.get("rnn_dropout", False)),
            user_call=bool(data.get("user_call", True)),
            nothing_evaluated=bool(data.get("nothing_evaluated", False)),
            input_grad=bool(data.get("input_grad", False)),
        )


@dataclass
class Record:
    """One finding, deduplicated: ``count`` says how often it happened."""

    kind: str
    severity: Severity
    message: str
    #: User frames of the forward, innermost first (empty when not relevant).
    forward: tuple[Site, ...] = ()
    #: User frames of the backward / optimizer step, innermost first.
    backward: tuple[Site, ...] = ()
    #: What it is about: ``LSTM``, a model's class name, ``DataParallel``.
    subject: str = ""
    #: ``"emulated"`` (the CPU sanitizer decided) or ``"cudnn"`` (real cuDNN
    #: ran the check; the sanitizer only recorded it). Empty for other kinds.
    checked_by: str = ""
    count: int = 1
    #: Distributed ranks (``RANK`` env var) or pids that saw it.
    processes: tuple[str, ...] = ()
    #: Optimizers (class names) whose parameters include the subject's: for a
    #: cuDNN record, the RNN's weights; for an optimizer step, the one stepping.
    optimizers: tuple[str, ...] = ()
    #: What ``verify --fix`` needs to turn the record into an edit.
    provenance: Provenance | None = None

    def key(self) -> tuple[object, ...]:
        """Identity for deduplication: same kind, subject and code paths, and
        for a record with provenance the same model (two models of a registry
        trained at one call site are two bugs, each with its own fix)."""
        prov = self.provenance
        who = prov.refs[0][0] if prov is not None and prov.refs and prov.refs[0] else ""
        return (self.kind, self.subject, self.forward, self.backward, who)

    def where(self) -> str:
        """Short location text: ``backward at a.py:3; forward at b.py:9 <- a.py:2``."""
        parts = []
        if self.backward:
            label = "backward at" if self.forward else "at"
            parts.append(f"{label} {format_chain(self.backward)}")
        if self.forward:
            parts.append(f"forward at {format_chain(self.forward)}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["forward"] = [asdict(s) for s in self.forward]
        data["backward"] = [asdict(s) for s in self.backward]
        data["processes"] = list(self.processes)
        data["optimizers"] = list(self.optimizers)
        data["provenance"] = self.provenance.to_json() if self.provenance else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(
            kind=str(data["kind"]),
            severity=data["severity"],
            message=str(data["message"]),
            forward=tuple(Site(**s) for s in data.get("forward", ())),
            backward=tuple(Site(**s) for s in data.get("backward", ())),
            subject=str(data.get("subject", "")),
            checked_by=str(data.get("checked_by", "")),
            count=int(data.get("count", 1)),
            processes=tuple(str(p) for p in data.get("processes", ())),
            optimizers=tuple(str(o) for o in data.get("optimizers", ())),
            provenance=Provenance.from_json(prov) if (prov := data.get("provenance")) else None,
        )


def format_chain(sites: tuple[Site, ...], limit: int = 3) -> str:
    shown = " <- ".join(str(s) for s in sites[:limit])
    return shown + (" <- ..." if len(sites) > limit else "")


@dataclass
class ProcessReport:
    """Everything one sanitized process reports."""

    pid: int
    argv: list[str]
    mode: str
    rank: str | None = None
    records: list[Record] = field(default_factory=list)
    #: RNN kernel calls seen, and how many of them ran on CUDA tensors.
    rnn_forwards: int = 0
    rnn_forwards_cuda: int = 0
    optimizer_steps: int = 0
    #: True once the interpreter reached its normal exit (atexit ran).
    exited: bool = False
    stopped_after_clean_cycle: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["records"] = [r.to_json() for r in self.records]
        data["version"] = REPORT_FORMAT_VERSION
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessReport:
        return cls(
            pid=int(data["pid"]),
            argv=[str(a) for a in data.get("argv", [])],
            mode=str(data.get("mode", "")),
            rank=data.get("rank"),
            records=[Record.from_json(r) for r in data.get("records", [])],
            rnn_forwards=int(data.get("rnn_forwards", 0)),
            rnn_forwards_cuda=int(data.get("rnn_forwards_cuda", 0)),
            optimizer_steps=int(data.get("optimizer_steps", 0)),
            exited=bool(data.get("exited", False)),
            stopped_after_clean_cycle=bool(data.get("stopped_after_clean_cycle", False)),
        )


def write_process_report(directory: Path, report: ProcessReport) -> Path:
    """Write ``report`` atomically, so a reader never sees half a file even if
    the process is killed mid-write (the runner kills on timeout)."""
    target = directory / f"process-{report.pid}.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(report.to_json(), fh)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_process_reports(directory: Path) -> list[ProcessReport]:
    """All complete process reports in ``directory``; unreadable files are skipped."""
    reports = []
    for path in sorted(directory.glob("process-*.json")):
        try:
            reports.append(ProcessReport.from_json(json.loads(path.read_text("utf-8"))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return reports


def merge_records(reports: list[ProcessReport]) -> list[Record]:
    """Deduplicate records across processes, summing counts; errors first."""
    merged: dict[tuple[object, ...], Record] = {}
    for report in reports:
        who = f"rank {report.rank}" if report.rank is not None else f"pid {report.pid}"
        for rec in report.records:
            seen = merged.get(rec.key())
            if seen is None:
                merged[rec.key()] = Record(**{**rec.__dict__, "processes": (who,)})
            else:
                seen.count += rec.count
                if who not in seen.processes:
                    seen.processes = (*seen.processes, who)
                extra = [o for o in rec.optimizers if o not in seen.optimizers]
                seen.optimizers = (*seen.optimizers, *extra)
                if seen.provenance is None:
                    seen.provenance = rec.provenance
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(merged.values(), key=lambda r: order.get(r.severity, 3))
