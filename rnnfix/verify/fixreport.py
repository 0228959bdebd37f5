"""Text and JSON renderings of a ``verify --fix`` :class:`FixReport`.

Every fix says what it rests on: the run-time evidence (the command, the
processes that saw the bug, the call chains of the forward, the ``eval()``
and the backward, the optimizer) and, once written, the run that proved it.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from rnnfix.verify.fixloop import FixOutcome, FixReport
from rnnfix.verify.fixplan import PlannedFix
from rnnfix.verify.records import (
    CUDNN_BACKWARD_IN_EVAL,
    OPTIMIZER_STEP_IN_EVAL,
    Record,
    format_chain,
)
from rnnfix.verify.report import to_json as result_json


def _rel(fix: PlannedFix) -> str:
    import os

    try:
        return os.path.relpath(fix.path)
    except ValueError:
        return str(fix.path)


def evidence(record: Record, command: tuple[str, ...]) -> str:
    """One line: which run saw this bug, and along which call chains."""
    prov = record.provenance
    who = ", ".join(record.processes) or "the command"
    parts = [f"run-time evidence from `{shlex.join(command)}` ({who})"]
    if record.kind not in (CUDNN_BACKWARD_IN_EVAL, OPTIMIZER_STEP_IN_EVAL):
        # Not a forward in eval mode: the sanitizer's own words say what ran.
        return "; ".join([*parts, record.message.split(": ", 1)[0]])
    if prov is not None and prov.call:
        what = record.subject
        if prov.rnn_path:
            what = f"{record.subject} `{prov.rnn_path}` of {prov.model}"
        elif prov.rnn_path is None:
            what = f"{record.subject} in {prov.model}"
        parts.append(f"{what} ran forward in eval mode, called at {format_chain(prov.call)}")
    elif record.forward:
        parts.append(f"{record.subject} ran forward in eval mode at {format_chain(record.forward)}")
    if prov is not None and prov.eval_site:
        parts.append(f"eval() at {format_chain(prov.eval_site)}")
    if record.backward:
        parts.append(f"backward at {format_chain(record.backward)}")
    if record.optimizers:
        parts.append(f"optimizer: {', '.join(record.optimizers)}")
    return "; ".join(parts)


def format_fix_text(report: FixReport) -> str:
    counts = {
        status: sum(1 for o in report.outcomes if o.status == status)
        for status in ("proven", "rolled back", "not rolled back", "would apply", "not applied")
    }
    head = [f"{counts['proven']} fix(es) proven"] if report.written else []
    if counts["would apply"]:
        head.append(f"{counts['would apply']} fix(es) to apply (--diff: nothing written)")
    if counts["rolled back"]:
        head.append(f"{counts['rolled back']} rolled back")
    if counts["not rolled back"]:
        head.append(f"{counts['not rolled back']} not rolled back (edited during the run)")
    if counts["not applied"]:
        head.append(f"{counts['not applied']} not applied")
    head.append(f"{len(report.unfixed)} reported, not fixed")
    lines = [f"rnnfix verify --fix: {', '.join(head)}"]
    for i, run in enumerate(report.runs):
        label = "recorded" if i == 0 else "proving run"
        lines.append(f"  {label}: {run.how()}; {'; '.join(run.failures()) or 'clean'}")
    if report.diff:
        lines.append(report.diff.rstrip("\n"))
    for outcome in report.outcomes:
        lines.extend(_outcome_lines(outcome, report))
    for item in report.unfixed:
        record = item.record
        lines.append(f"  reported, not fixed: {record.kind} ({record.subject}): {item.reason}")
        lines.append(f"    {evidence(record, report.command)}")
    if not report.outcomes and not report.unfixed and report.first is not None:
        if report.first.errors:
            lines.append("  no recorded mode bug could be turned into an edit")
        else:
            lines.append("  no mode bug seen: nothing to fix")
    return "\n".join(lines)


def _outcome_lines(outcome: FixOutcome, report: FixReport) -> list[str]:
    fix = outcome.fix
    status = outcome.status + (f": {outcome.why}" if outcome.why else "")
    out = [f"  {_rel(fix)}:{fix.line}: {fix.description} [{status}]"]
    for record in fix.records[:3]:
        out.append(f"    {evidence(record, report.command)}")
    if outcome.status == "proven" and len(report.runs) > 1:
        out.append("    proven: the proving run no longer shows it and shows no new mode bug")
    return out


def fix_to_json(report: FixReport) -> dict[str, Any]:
    return {
        "exit_code": report.exit_code,
        "written": report.written,
        "command": list(report.command),
        "fixes": [
            {
                "path": _rel(o.fix),
                "line": o.fix.line,
                "strategy": o.fix.strategy,
                "description": o.fix.description,
                "status": o.status,
                "why": o.why,
                "evidence": [evidence(r, report.command) for r in o.fix.records],
                "records": [r.to_json() for r in o.fix.records],
            }
            for o in report.outcomes
        ],
        "reported": [
            {
                "reason": u.reason,
                "evidence": evidence(u.record, report.command),
                "record": u.record.to_json(),
            }
            for u in report.unfixed
        ],
        "diff": report.diff,
        "runs": [result_json(r) for r in report.runs],
    }


def format_fix_json(report: FixReport) -> str:
    return json.dumps(fix_to_json(report), indent=2)
