"""Findings as annotations under GitHub's limits, and all of them in the job
summary. GitHub turns a step's first 10 error, 10 warning and 10 notice
workflow commands into annotations (50 a job) and drops the rest without a
word; the bot writes no more than it shows, the rest as plain log lines, says
how many it cut, and lists every finding in the job summary (cut between
whole entries to fit its 1 MiB)."""

from __future__ import annotations

import sys
from collections.abc import Mapping

from rnnfix.ci import limits
from rnnfix.ci import workspace as ws
from rnnfix.ci.findings import Finding, Report, capped_commands, to_annotations
from rnnfix.ci.workspace import Inputs


def write_annotations(
    inputs: Inputs,
    report: Report,
    findings: list[Finding],
    reserved: Mapping[str, int] | None = None,
    summary_room: int | None = None,
) -> None:
    """``findings`` (and ``report``'s failures) on stdout as annotations;
    ``reserved``: annotations of each level the bot writes itself in this
    step; ``summary_room``: bytes of the job summary the list may take."""
    items = to_annotations(report, findings)
    own = dict(inputs.annotated)
    for level, n in (reserved or {}).items():
        own[level] = own.get(level, 0) + n
    text, cut = capped_commands(items, limits.ANNOTATIONS_PER_LEVEL, own)
    sys.stdout.write(text)
    listed = bool(findings or report.failures) and ws.add_summary(
        inputs,
        summary(report, findings, limits.MAX_SUMMARY if summary_room is None else summary_room),
    )
    if cut:
        total = len(items) + sum(own.values())
        where = (
            f"the job summary lists all {len(findings)} findings"
            if listed
            else "the lines above list them"
        )
        print(
            f"rnnfix: {cut} of {total} annotations not shown: GitHub shows "
            f"{limits.ANNOTATIONS_PER_LEVEL} error, {limits.ANNOTATIONS_PER_LEVEL} warning "
            f"and {limits.ANNOTATIONS_PER_LEVEL} notice annotations a step "
            f"({limits.ANNOTATIONS_PER_JOB} a job); {where}"
        )


def summary(report: Report, findings: list[Finding], room: int) -> str:
    """A job-summary section listing ``findings`` and the files rnnfix could
    not check, at most ``room`` bytes, cut between whole entries."""
    title = f"### rnnfix: {len(findings)} finding(s)\n\n"
    entries = [_entry(f) for f in findings] + [
        f"- `{path or 'rnnfix'}` {level}: {_md(reason)}" for path, reason, level in report.failures
    ]
    more = "- ... and {} more (the SARIF file has them all)"
    body = limits.cut_lines(entries, room - limits.utf8_size(title) - 2, more, limits.utf8_size)
    return title + body + "\n"


def _entry(f: Finding) -> str:
    where = f"{f.path}:{f.line}:{f.col or 1}".replace("`", "'")
    state = "fixable" if f.fixable else "no safe fix"
    return f"- `{where}` **{f.code}** {_md(f.message)} ({state})"


def _md(text: str) -> str:
    """One list entry's text: on one line."""
    return " ".join(text.split())
