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
from dataclasses import dataclass, field, replace
from typing import Any

FILTER_MODES = ("added", "diff_context", "file", "nofilter")
# reviewdog's diff_context: a pull request that only deletes a line (the loop
# head's ``model.train()``) adds none, and ``added`` would pass it; the
# finding's fix goes on a line of the deleted line's hunk.
DEFAULT_FILTER_MODE = "diff_context"


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
    # the line its annotation goes on when its own line is outside the pull
    # request's diff and its fix's line is inside it (``place``)
    at: int | None = None

    def touches(self, start: int, end: int) -> bool:
        """Whether its fix changes lines ``start..end`` (1-based, inclusive)
        or inserts next to them."""
        a, b = start - 1, end
        return any(i1 <= b and i2 >= a for i1, i2 in self.fix_lines)

    def lines(self) -> set[int]:
        """Its line and the lines its fix changes (1-based)."""
        return {self.line} | self.fixed_lines()

    def fixed_lines(self) -> set[int]:
        """The lines its fix changes, or the line an insertion precedes (1-based)."""
        out: set[int] = set()
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


def place(findings: Iterable[Finding], diff: Diff | None) -> list[Finding]:
    """Each finding whose own line is outside its file's hunks while a line
    its fix changes is inside one moved there, to the hunk line nearest its
    own (``at``): a pull request that deletes ``model.train()`` makes RNF001
    report the training step below, and GitHub shows an annotation on the
    diff only. The SARIF file keeps every finding where it is."""
    out = []
    for f in findings:
        sets = diff.get(f.path) if diff is not None else None
        if sets is None or f.line in sets[1]:
            out.append(f)
            continue
        inside = f.fixed_lines() & sets[1]
        at = min(inside, key=lambda n: (abs(n - f.line), n)) if inside else None
        out.append(replace(f, at=at))
    return out


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


_CELL = re.compile(r"^(cell \d+:\d+:\d+): (.*)$", re.S)


@dataclass(frozen=True)
class Annotation:
    level: str  # error, warning or notice
    command: str  # the workflow command
    text: str  # what it says, as a log line

    @property
    def plain(self) -> str:
        """A log line the runner never reads as a command: a line that starts
        with ``::`` is one, and a path or a message may hold a newline."""
        return "rnnfix: " + self.text.replace("\r", "\\r").replace("\n", "\\n")


def to_annotations(report: Report, findings: Iterable[Finding]) -> list[Annotation]:
    """The findings', then the failures', workflow commands, as
    ``--output-format github`` writes them."""
    out = []
    for f in findings:
        level = "warning" if f.fixable else "error"
        line = f.at or f.line
        place_ = f"line={line},endLine={line if f.at else f.end_line or f.line}"
        if f.col is not None and not f.at:
            place_ += f",col={f.col}"
            if f.end_col is not None:
                place_ += f",endColumn={f.end_col}"
        cell = _CELL.match(f.message)  # a notebook's: the cell's position leads the message
        where, text = (
            (f"{f.path}:{cell.group(1)}", cell.group(2))
            if cell
            else (f"{f.path}:{f.line}:{f.col or 1}", f.message)
        )
        if f.at:
            text += f" (shown on line {f.at}, where its fix goes in this pull request's diff)"
        out.append(
            Annotation(
                level,
                f"::{level} title={_escape(f'rnnfix ({f.code})', True)},"
                f"file={_escape(f.path, True)},{place_}::{_escape(f'{where}: {f.code} {text}')}",
                f"{where}: {f.code} {text}",
            )
        )
    for path, reason, level in report.failures:
        at = f" file={_escape(path, True)}" if path else ""
        level = level if level in ("error", "warning", "notice") else "error"
        text = f"{path}: {reason}" if path else reason
        out.append(Annotation(level, f"::{level}{at}::{_escape(text)}", text))
    return out


def workflow_commands(report: Report, findings: Iterable[Finding]) -> str:
    """GitHub workflow commands, as ``--output-format github`` writes them."""
    return "".join(a.command + "\n" for a in to_annotations(report, findings))


def capped_commands(
    items: list[Annotation], per_level: int, reserved: Mapping[str, int] | None = None
) -> tuple[str, int]:
    """``items`` as workflow commands up to ``per_level`` of each level (GitHub
    drops the rest of a step's without a word; ``reserved``: those of a level
    the bot writes itself), the others as plain log lines. (text, how many
    were not annotations)."""
    used = dict(reserved or {})
    out, cut = [], 0
    for a in items:
        if used.get(a.level, 0) < per_level:
            used[a.level] = used.get(a.level, 0) + 1
            out.append(a.command)
        else:
            cut += 1
            out.append(a.plain)
    return "".join(line + "\n" for line in out), cut
