"""Diagnostics in the formats ``--output-format`` offers: text, json, github, sarif, gitlab."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from rnnfix.report.gitlab import render_gitlab
from rnnfix.report.sarif import render_sarif
from rnnfix.rules import Finding
from rnnfix.run.process import FileResult, Outcome


def _diagnostics(results: Sequence[FileResult]) -> list[tuple[str, Finding]]:
    return [(r.path, f) for r in results for f in r.findings]


def text_line(path: str, f: Finding, unsafe_fixes: bool = False) -> str:
    # ``[*]``: fixable under the current settings (ruff's convention: unsafe
    # fixes count only with --unsafe-fixes).
    mark = " [*]" if f.fix is not None and (f.fix.safe or unsafe_fixes) else ""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{path}:{cell}{f.line}:{f.col}: {f.code}{mark} {f.message}"


def failure_line(r: FileResult) -> str:
    where = f"{r.path}:{r.error_line}" if r.error_line else r.path
    return f"{where}: {r.error}"


def render_text(results: Sequence[FileResult], unsafe_fixes: bool = False) -> str:
    lines = [text_line(p, f, unsafe_fixes) for p, f in _diagnostics(results)]
    for r in results:
        for d in r.dropped:
            f = d.finding
            cell = f"cell {f.cell}:" if f.cell is not None else ""
            lines.append(f"{r.path}:{cell}{f.line}:{f.col}: {f.code} fix not applied ({d.reason})")
    return "".join(line + "\n" for line in lines)


def render_json(results: Sequence[FileResult]) -> str:
    items: list[dict[str, Any]] = []
    for path, f in _diagnostics(results):
        items.append(
            {
                "path": path,
                "line": f.line,
                "column": f.col,
                "end_line": f.end_line,
                "end_column": f.end_col,
                "cell": f.cell,
                "code": f.code,
                "message": f.message,
                "fixable": f.fixable,
                "fix": None
                if f.fix is None
                else {"safe": f.fix.safe, "description": f.fix.description},
            }
        )
    files = [
        {
            "path": r.path,
            "outcome": r.outcome.value,
            "error": r.error,
            "fixes_applied": len(r.applied),
        }
        for r in results
    ]
    return json.dumps({"diagnostics": items, "files": files}, indent=2) + "\n"


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def render_github(results: Sequence[FileResult]) -> str:
    """GitHub Actions workflow commands: annotations on the pull request."""
    out = []
    for path, f in _diagnostics(results):
        level = "warning" if f.fixable else "error"
        out.append(
            f"::{level} title={_gh_escape('rnnfix ' + f.code, True)},"
            f"file={_gh_escape(path, True)},line={f.line},col={f.col}"
            f"::{_gh_escape(f.code + ' ' + (f'cell {f.cell}: ' if f.cell else '') + f.message)}"
        )
    for r in results:
        if r.outcome is Outcome.FAILED:
            line = f",line={r.error_line}" if r.error_line else ""
            out.append(f"::error file={_gh_escape(r.path, True)}{line}::{_gh_escape(str(r.error))}")
    return "".join(line + "\n" for line in out)


FORMATS: dict[str, Callable[[Sequence[FileResult]], str]] = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
    "gitlab": render_gitlab,
}


def render(
    fmt: str, results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    """``dry``: the findings are of the files as they are (``--check``,
    ``--diff``), not as fixed (SARIF's fixes are edits of the one or the other)."""
    if fmt == "text":
        return render_text(results, unsafe_fixes)
    if fmt == "sarif":
        return render_sarif(results, unsafe_fixes, dry)
    return FORMATS[fmt](results)
