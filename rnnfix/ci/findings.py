"""rnnfix's findings for the bot, read from one ``--output-format sarif`` run:
each finding with the lines its own fix changes (SARIF's ``fixes``, computed by
rnnfix on the file as it is), so a suggestion can name the findings that
caused it even when the finding's line is elsewhere (RNF001 reports the
training step and inserts ``train()`` at the loop's head). GitHub annotations
are written from the same run, so check mode runs rnnfix once."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FILTER_MODES = ("added", "diff_context", "file", "nofilter")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    col: int | None  # None: a notebook's finding, at the JSON line (its columns are not the cell's)
    code: str
    message: str
    fixable: bool
    # old-line intervals its fix replaces: 0-based, end excluded (an insertion
    # before line k+1 is (k, k))
    fix_lines: tuple[tuple[int, int], ...] = ()
    end_line: int | None = None
    end_col: int | None = None

    def touches(self, start: int, end: int) -> bool:
        """Whether its fix changes lines ``start..end`` (1-based, inclusive)
        or inserts next to them."""
        a, b = start - 1, end
        return any(i1 <= b and i2 >= a for i1, i2 in self.fix_lines)

    def lines(self) -> set[int]:
        """Its line and the lines its fix changes (1-based)."""
        out = {self.line}
        for i1, i2 in self.fix_lines:
            out.update(range(i1 + 1, max(i2, i1 + 1) + 1))
        return out


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (path, reason, level)


def rel(path: str) -> str:
    return path.replace("\\", "/").removeprefix("./")


def parse_sarif(text: str) -> Report:
    try:
        doc = json.loads(text or "{}")
    except ValueError:
        return Report()
    report = Report()
    for run in doc.get("runs", []) if isinstance(doc, dict) else []:
        for result in run.get("results", []):
            loc = result["locations"][0]["physicalLocation"]
            region = loc.get("region", {})
            fixes = [
                _interval(r["deletedRegion"])
                for fix in result.get("fixes", [])
                for change in fix.get("artifactChanges", [])
                for r in change.get("replacements", [])
            ]
            props = result.get("properties", {})
            report.findings.append(
                Finding(
                    path=rel(loc["artifactLocation"]["uri"]),
                    line=int(region.get("startLine", 1)),
                    col=_int(region.get("startColumn")),
                    code=str(result.get("ruleId", "")),
                    message=str(result.get("message", {}).get("text", "")),
                    fixable=bool(props.get("fixable", bool(fixes))),
                    fix_lines=tuple(fixes),
                    end_line=_int(region.get("endLine")),
                    end_col=_int(region.get("endColumn")),
                )
            )
        for invocation in run.get("invocations", []):
            for note in invocation.get("toolExecutionNotifications", []):
                locs = note.get("locations") or [{}]
                uri = locs[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                report.failures.append(
                    (
                        rel(str(uri or "")),
                        str(note["message"]["text"]),
                        str(note.get("level") or "error"),
                    )
                )
    return report


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


def _interval(region: Mapping[str, Any]) -> tuple[int, int]:
    """A SARIF whole-lines region (rnnfix's ``_lines_region``) as 0-based
    old-line positions: a region that ends at column 1 ends before that line;
    one that ends later (up to the end of the file) includes it."""
    start, end = int(region["startLine"]), int(region.get("endLine", region["startLine"]))
    first = start - 1 if int(region.get("startColumn", 1)) == 1 else start
    last = end - 1 if int(region.get("endColumn", 1)) == 1 else end
    return first, max(first, last)


Diff = Mapping[str, tuple[set[int], set[int]] | None]


def keep(findings: Iterable[Finding], mode: str, diff: Diff | None) -> list[Finding]:
    """reviewdog's ``filter_mode``: ``diff`` maps each file of the pull
    request to (added lines, lines of its hunks: added and context), or to
    None when its lines are not known (GitHub gives no patch for a very large
    file: all of it counts); ``diff`` None: no pull request, nothing to
    filter by. A finding passes when its line or a line its fix changes does."""
    findings = list(findings)
    if mode == "nofilter" or diff is None:
        return findings
    return [f for f in findings if passes(f.path, f.lines(), mode, diff)]


def passes(path: str, lines: set[int], mode: str, diff: Diff | None) -> bool:
    """Whether ``lines`` of ``path`` are in what ``mode`` keeps of ``diff``."""
    if mode == "nofilter" or diff is None:
        return True
    if path not in diff:
        return False
    sets = diff[path]
    if sets is None or mode == "file":
        return True
    added, hunks = sets
    return bool(lines & (added if mode == "added" else hunks))


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


_CELL = re.compile(r"^(cell \d+:\d+:\d+): (.*)$", re.S)


def workflow_commands(report: Report, findings: Iterable[Finding]) -> str:
    """GitHub workflow commands, as ``--output-format github`` writes them."""
    out = []
    for f in findings:
        level = "warning" if f.fixable else "error"
        place = f"line={f.line},endLine={f.end_line or f.line}"
        if f.col is not None:
            place += f",col={f.col}"
            if f.end_col is not None:
                place += f",endColumn={f.end_col}"
        cell = _CELL.match(f.message)  # a notebook's: the cell's position leads the message
        where, text = (
            (f"{f.path}:{cell.group(1)}", cell.group(2))
            if cell
            else (f"{f.path}:{f.line}:{f.col or 1}", f.message)
        )
        out.append(
            f"::{level} title={_escape(f'rnnfix ({f.code})', True)},"
            f"file={_escape(f.path, True)},{place}::{_escape(f'{where}: {f.code} {text}')}"
        )
    for path, reason, level in report.failures:
        at = f" file={_escape(path, True)}" if path else ""
        level = level if level in ("error", "warning", "notice") else "error"
        out.append(f"::{level}{at}::{_escape(f'{path}: {reason}' if path else reason)}")
    return "".join(line + "\n" for line in out)
