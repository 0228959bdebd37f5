"""``rnnfix verify --fix``: run, see, fix, run again, keep only what is proven.

1. Run the command under the sanitizer in record mode, stopping once every
   trained model has completed a clean cycle or has been seen training in
   eval mode (``--until-clean-cycle`` semantics).
2. Plan an edit per recorded mode bug (:mod:`rnnfix.verify.fixplan`).
3. Write the edited files (atomically), run the command again, and judge:
   a file keeps its edits only if none of the bugs they fix shows again; every
   file of the round is restored to its exact original bytes when the run
   fails where the first did not, or shows a mode bug its edits could have
   caused (a validation forward in train mode, say). A new *eval-mode* bug
   is not theirs (inserting ``train()`` cannot put a model in eval): it was
   hidden behind the first (a GPU stops at the first cuDNN error), and the
   next round fixes it, up to :data:`MAX_ROUNDS`.

Sites of the proving run are mapped back to the lines the edits were planned
on (``rnnfix.run.linemap``) before records are compared.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from rnnfix.config.settings import Settings
from rnnfix.run.linemap import LineMap
from rnnfix.source.edits import EditError
from rnnfix.source.files import FileProblem, write_atomic
from rnnfix.verify.fixplan import PlannedFix, Planner, Unfixed
from rnnfix.verify.records import (
    CUDNN_BACKWARD_IN_EVAL,
    OPTIMIZER_STEP_IN_EVAL,
    VALIDATION_FORWARD,
    WRAPPER_MODE_MISMATCH,
    Record,
    Site,
)
from rnnfix.verify.result import VerifyResult
from rnnfix.verify.rollback import EditedSinceWritten, restore_bytes
from rnnfix.verify.runner import run_verify

MAX_ROUNDS = 3
#: Record kinds an inserted ``train()`` (or cuDNN switched off) cannot cause.
_EVAL_KINDS = frozenset({CUDNN_BACKWARD_IN_EVAL, OPTIMIZER_STEP_IN_EVAL})
#: Why ``verify --fix`` plans no edit for the other kinds of mode bug: it
#: edits only what cuDNN's check proves; the static rules fix these.
_NOT_PLANNED = {
    OPTIMIZER_STEP_IN_EVAL: (
        "`verify --fix` edits only what cuDNN's check proves, and no cuDNN RNN backward "
        "ran here; `rnnfix apply` fixes an optimizer step in eval mode from the source (RNF001)"
    ),
    VALIDATION_FORWARD: (
        "`verify --fix` edits only training in eval mode; `rnnfix apply` puts "
        "validation under eval() and no_grad (RNF003)"
    ),
    WRAPPER_MODE_MISMATCH: (
        "`verify --fix` edits only training in eval mode; `rnnfix apply` fixes "
        "the `.module.train()`/`.module.eval()` call (RNF002)"
    ),
}


@dataclass
class FixOutcome:
    fix: PlannedFix
    #: ``proven`` (written and kept), ``rolled back``, ``not rolled back``
    #: (unproven, but edited on disk while the command ran), ``would apply``
    #: (``--diff``), ``not applied`` (the edit could not be made).
    status: str
    why: str = ""


@dataclass
class FixReport:
    command: tuple[str, ...]
    runs: list[VerifyResult] = field(default_factory=list)
    outcomes: list[FixOutcome] = field(default_factory=list)
    unfixed: list[Unfixed] = field(default_factory=list)
    #: ``--diff``: the unified diff of what would be written.
    diff: str = ""
    written: bool = True

    @property
    def first(self) -> VerifyResult | None:
        return self.runs[0] if self.runs else None

    @property
    def proven(self) -> list[FixOutcome]:
        return [o for o in self.outcomes if o.status == "proven"]

    @property
    def exit_code(self) -> int:
        """0: nothing left (every bug seen is fixed and proven, or none was
        seen and the run passed); 2: the command could not run or the
        sanitizer failed; 1 otherwise (something reported, rolled back, or
        only shown by ``--diff``)."""
        first = self.first
        if first is None or first.exit_code == 2:
            return 2
        # Warnings reported as not fixed do not fail the run, as in ``verify``.
        errors = [u for u in self.unfixed if u.record.severity == "error"]
        if errors or any(o.status != "proven" for o in self.outcomes):
            return 1
        last = self.runs[-1]
        return 0 if last.ok or (not self.outcomes and first.ok) else 1


def verify_fix(
    command: Sequence[str],
    *,
    settings: Settings | None = None,
    cwd: Path | str | None = None,
    timeout: float | None = 600.0,
    write: bool = True,
    mode: str = "record",
    capture: bool = False,
    stdout: IO[Any] | int | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> FixReport:
    """Run ``command``, fix the mode bugs it shows, prove the fixes by a
    second run, and roll back what is not proven. ``write=False``
    (``--diff``): plan and show, write nothing. ``mode="raise"`` makes the
    CPU run stop at the first cuDNN error, as a GPU does."""
    settings = settings or Settings()
    root = Path(cwd) if cwd is not None else Path(os.getcwd())

    def run(seen: bool) -> VerifyResult:
        return run_verify(
            command,
            timeout=timeout,
            mode=mode,
            until_clean_cycle=True,
            stop_when_seen=seen,
            cwd=cwd,
            capture=capture,
            stdout=stdout,
        )

    report = FixReport(tuple(command), written=write)
    current = run(seen=True)
    report.runs.append(current)
    baseline = current
    now = current  # the last run of the files as they are
    records = list(current.records)
    reported: set[tuple[object, ...]] = set()
    for _round in range(max_rounds):
        plan = Planner(root, settings).plan(records)
        for item in plan.unfixed:
            if item.record.key() not in reported:
                reported.add(item.record.key())
                report.unfixed.append(item)
        if not plan.fixes:
            break
        if not write:
            report.diff = _diff_of(plan.fixes, report)
            break
        originals, texts, written = _write(plan.fixes, report)
        if not originals:
            break
        proof = run(seen=False)
        report.runs.append(proof)
        every_file_kept, new = _judge(
            plan.fixes, originals, texts, current, proof, baseline, report, root, written
        )
        if every_file_kept:
            now = proof
        masked = [r for r in new if r.kind == CUDNN_BACKWARD_IN_EVAL and r.severity == "error"]
        # Another round only on files as the proving run saw them: after a
        # rollback its line numbers no longer match the files.
        if not every_file_kept or not masked:
            break
        current, records = proof, masked  # bugs the first ones hid
    _report_the_rest(now, report, reported)
    return report


def _report_the_rest(
    now: VerifyResult, report: FixReport, reported: set[tuple[object, ...]]
) -> None:
    """Every mode bug the files still show is either fixed or reported as
    not fixed: the kinds no edit is planned for are reported with the
    reason (a run that shows them after ``verify --fix`` would otherwise
    warn of bugs the report never named)."""
    # An optimizer step in eval mode next to a cuDNN backward in eval mode is
    # the same training step: the cuDNN record's fix or report covers it.
    cudnn = any(r.kind == CUDNN_BACKWARD_IN_EVAL for r in now.records)
    for record in now.records:
        why = _NOT_PLANNED.get(record.kind)
        if why is None or record.severity not in ("error", "warning"):
            continue
        if record.kind == OPTIMIZER_STEP_IN_EVAL and cudnn:
            continue
        if record.key() in reported:
            continue
        reported.add(record.key())
        report.unfixed.append(Unfixed(record, why))


def _write(
    fixes: list[PlannedFix], report: FixReport
) -> tuple[dict[Path, bytes], dict[Path, str], dict[Path, bytes]]:
    """Write every file's edits at once; returns the original bytes, the
    original text and the bytes written of the files written."""
    originals: dict[Path, bytes] = {}
    texts: dict[Path, str] = {}
    written: dict[Path, bytes] = {}
    for path, group in _by_file(fixes).items():
        new = _edited(path, group, report)
        if new is None:
            continue
        data, old_text, _new_text, new_bytes = new
        try:
            write_atomic(path, new_bytes, expected=data)
        except FileProblem as exc:
            report.outcomes.extend(FixOutcome(f, "not applied", str(exc)) for f in group)
            continue
        originals[path] = data
        texts[path] = old_text
        written[path] = new_bytes
    return originals, texts, written


def _edited(
    path: Path, group: list[PlannedFix], report: FixReport
) -> tuple[bytes, str, str, bytes] | None:
    """Original bytes and text, edited text and bytes (same encoding, BOM)."""
    from rnnfix.source.files import read_source
    from rnnfix.source.textedit import apply_edits  # libcst only if needed

    try:
        data, decoded = read_source(path)
        edits = [e for f in group for e in f.edits]
        text = apply_edits(decoded.text, list(dict.fromkeys(edits)))
        ast.parse(text)  # output always parses
    except (FileProblem, EditError, SyntaxError, ValueError) as exc:
        report.outcomes.extend(FixOutcome(f, "not applied", f"{exc}") for f in group)
        return None
    except Exception as exc:  # noqa: BLE001 - libcst's parser errors
        report.outcomes.extend(FixOutcome(f, "not applied", f"{exc}") for f in group)
        return None
    return data, decoded.text, text, decoded.encode(text)


def _diff_of(fixes: list[PlannedFix], report: FixReport) -> str:
    from rnnfix.report.diff import unified_diff

    parts = []
    for path, group in _by_file(fixes).items():
        new = _edited(path, group, report)
        if new is None:
            continue
        _data, old_text, new_text, _bytes = new
        parts.append(unified_diff(_display(path), old_text, new_text))
        report.outcomes.extend(FixOutcome(f, "would apply") for f in group)
    return "".join(parts)


def _judge(
    fixes: list[PlannedFix],
    originals: dict[Path, bytes],
    texts: dict[Path, str],
    before: VerifyResult,
    proof: VerifyResult,
    baseline: VerifyResult,
    report: FixReport,
    root: Path,
    written: dict[Path, bytes],
) -> tuple[bool, list[Record]]:
    """Keep or roll back each written file (only one that still holds what
    was written: an edit saved while the command ran is kept). Returns whether every file was
    kept, and the proving run's records the run before did not show (as the
    proving run wrote them)."""
    maps = _line_maps(originals, texts)
    seen_before = {r.key() for r in before.records}
    after = [_mapped(r, maps, root) for r in proof.records]
    new = [r for r, m in zip(proof.records, after, strict=True) if m.key() not in seen_before]
    after_keys = {r.key() for r in after}
    caused = [
        r
        for r in after
        if r.severity in ("error", "warning")
        and r.kind not in _EVAL_KINDS
        and r.key() not in seen_before
    ]
    explained = any(r.kind == CUDNN_BACKWARD_IN_EVAL and r.key() not in seen_before for r in after)
    failed = not proof.finished and not explained and not _fails_alike(baseline, proof)
    round_reason = ""
    if failed:
        round_reason = f"the proving run failed ({'; '.join(proof.failures())})"
    elif caused:
        first = caused[0]
        round_reason = (
            f"the proving run shows a new {first.kind} ({first.where() or first.subject})"
        )
    rolled: set[Path] = set()
    reasons: dict[Path, str] = {}
    for path in originals:
        group = [f for f in fixes if f.path == path]
        persisting = [f for f in group if any(r.key() in after_keys for r in f.records)]
        if round_reason:
            reasons[path] = round_reason
        elif persisting:
            reasons[path] = f"the bug it fixes still shows ({persisting[0].records[0].where()})"
    edited: set[Path] = set()
    for path in reasons:
        try:
            restore_bytes(path, originals[path], written=written[path])
        except EditedSinceWritten:
            edited.add(path)  # saved while the command ran: that edit wins
            continue
        rolled.add(path)
    for fix in fixes:
        if fix.path not in originals:
            continue
        if fix.path in rolled:
            report.outcomes.append(FixOutcome(fix, "rolled back", reasons[fix.path]))
        elif fix.path in edited:
            why = f"{reasons[fix.path]}; the file changed on disk while the command ran"
            report.outcomes.append(FixOutcome(fix, "not rolled back", why))
        else:
            report.outcomes.append(FixOutcome(fix, "proven"))
    return not rolled and not edited, new


def _fails_alike(baseline: VerifyResult, proof: VerifyResult) -> bool:
    """The first run failed the same way for a reason that is not a mode bug
    (a missing file at the end of the script): not the edits' doing. A first
    run that died of cuDNN's error excuses nothing: that is what was fixed."""
    if baseline.finished or baseline.timed_out or proof.timed_out:
        return False
    died_of_cudnn = any(
        r.kind == CUDNN_BACKWARD_IN_EVAL
        and (r.checked_by in ("cudnn", "miopen") or baseline.mode == "raise")
        for r in baseline.records
    )
    return not died_of_cudnn and baseline.returncode == proof.returncode


def _line_maps(originals: dict[Path, bytes], texts: dict[Path, str]) -> dict[str, LineMap]:
    from rnnfix.source.files import decode

    maps: dict[str, LineMap] = {}
    for path in originals:
        try:
            new = decode(path.read_bytes()).text
        except (OSError, FileProblem):
            continue
        maps[str(path.resolve())] = LineMap(texts[path], new)
    return maps


def _mapped(record: Record, maps: dict[str, LineMap], root: Path) -> Record:
    """``record`` with its sites moved to the lines before the edits."""
    if not maps:
        return record

    def move(sites: tuple[Site, ...]) -> tuple[Site, ...]:
        out = []
        for s in sites:
            found = maps.get(str((root / s.file).resolve()))
            out.append(replace(s, line=found.line(s.line)) if found is not None else s)
        return tuple(out)

    return replace(record, forward=move(record.forward), backward=move(record.backward))


def _by_file(fixes: list[PlannedFix]) -> dict[Path, list[PlannedFix]]:
    out: dict[Path, list[PlannedFix]] = {}
    for fix in fixes:
        out.setdefault(fix.path, []).append(fix)
    return out


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
