"""Diagnostics in the formats ``--output-format`` offers: text (``concise``),
``full`` (with the source lines), json, github, sarif, gitlab.

Lines and columns count in the file as the run leaves it (as it is for a dry
run, as fixed otherwise); a notebook's count within its cell, which every
format names (``cell`` in JSON, ``cell N:`` in text and in the messages of
the formats that point at a line of the file; see ``rnnfix.report.sources``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rnnfix.analysis.context import Finding
from rnnfix.report.gitlab import render_gitlab
from rnnfix.report.rulelinks import rule_url
from rnnfix.report.sarif import render_sarif, replacements_of
from rnnfix.report.sources import Sources
from rnnfix.run.process import FileResult, Outcome

FORMATS = ("text", "concise", "full", "json", "github", "sarif", "gitlab")


def not_checked(r: FileResult) -> bool:
    """A file left unchecked because the running Python cannot parse it
    (syntax of a newer Python): neither a finding nor a failure."""
    from rnnfix.run.process import NEWER_SYNTAX

    return r.outcome is Outcome.FAILED and r.error == NEWER_SYNTAX


def _diagnostics(results: Sequence[FileResult]) -> list[tuple[FileResult, Finding]]:
    return [(r, f) for r in results for f in r.findings]


def _fixable(f: Finding, unsafe_fixes: bool) -> bool:
    # ruff's convention: unsafe fixes count only with --unsafe-fixes.
    return f.fix is not None and (f.fix.safe or unsafe_fixes)


def where(path: str, f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{path}:{cell}{f.line}:{f.col}"


def text_line(path: str, f: Finding, unsafe_fixes: bool = False) -> str:
    mark = " [*]" if _fixable(f, unsafe_fixes) else ""
    return f"{where(path, f)}: {f.code}{mark} {f.message}"


def failure_line(r: FileResult) -> str:
    at = f"{r.path}:{r.error_line}" if r.error_line else r.path
    if r.error_line and r.error_col:
        at += f":{r.error_col}"
    return f"{at}: {r.error}"


def _dropped_lines(results: Sequence[FileResult]) -> list[str]:
    return [
        f"{where(r.path, d.finding)}: {d.finding.code} fix not applied ({d.reason})"
        for r in results
        for d in r.dropped
    ]


def render_text(results: Sequence[FileResult], unsafe_fixes: bool = False) -> str:
    lines = [text_line(r.path, f, unsafe_fixes) for r, f in _diagnostics(results)]
    lines += _dropped_lines(results)
    return "".join(line + "\n" for line in lines)


def render_full(
    results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    """ruff's ``full``: each finding with the lines around it, its span
    underlined, and what its fix does."""
    sources = Sources(dry)
    out: list[str] = []
    for r, f in _diagnostics(results):
        out.append(text_line(r.path, f, unsafe_fixes))
        lines = sources.lines(r, f)
        if lines is not None and 0 < f.line <= len(lines):
            out.extend(_snippet(lines, f))
        if f.fix is not None:
            safety = "" if f.fix.safe else " (unsafe fix: --unsafe-fixes)"
            out.append(f"  = fix: {f.fix.description or 'available'}{safety}")
        out.append("")
    out += _dropped_lines(results)
    return "".join(line + "\n" for line in out)


def _snippet(lines: list[str], f: Finding, context: int = 2) -> list[str]:
    first = max(1, f.line - context)
    end_line = f.end_line if f.end_line is not None else f.line
    last = min(len(lines), max(f.line, end_line) + context)
    width = len(str(last))
    out = [f"{' ' * width} |"]
    for n in range(first, last + 1):
        text = lines[n - 1].rstrip("\r\n").expandtabs(1)
        out.append(f"{n:>{width}} | {text}".rstrip())
        if n == f.line:
            start = f.col
            stop = f.end_col if f.end_line == f.line and f.end_col else len(text) + 1
            marks = "^" * max(1, stop - start)
            out.append(f"{' ' * width} | {' ' * (start - 1)}{marks} {f.code}")
    out.append(f"{' ' * width} |")
    return out


def render_fixes(
    results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    """``--show-fixes``: each fix a run applied (would apply, for a dry run)."""
    fixes = [
        (r, f) for r in results for f in (r.reported if dry else r.applied) if f.fix is not None
    ]
    if dry:
        fixes = [(r, f) for r, f in fixes if _fixable(f, unsafe_fixes)]
    if not fixes:
        return ""
    head = "Fixes available:" if dry else "Fixes applied:"
    body = [
        f"  {where(r.path, f)}: {f.code} {f.fix.description if f.fix else ''}".rstrip()
        for r, f in fixes
    ]
    return "\n".join([head, *body]) + "\n"


def render_json(
    results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    sources = Sources(dry)
    items: list[dict[str, Any]] = []
    for r, f in _diagnostics(results):
        items.append(
            {
                "path": r.path,
                "line": f.line,
                "column": f.col,
                "end_line": f.end_line,
                "end_column": f.end_col,
                # Notebooks: the 1-based cell (of all cells, as Jupyter numbers
                # them), and line/column within it; None for a .py file.
                "cell": f.cell,
                "code": f.code,
                "message": f.message,
                "url": rule_url(f.code),
                "fixable": f.fixable,
                "fix": None if f.fix is None else _fix_json(r, f, sources, unsafe_fixes),
            }
        )
    files = [_file_json(r, dry) for r in results]
    return json.dumps({"diagnostics": items, "files": files}, indent=2) + "\n"


def _file_json(r: FileResult, dry: bool) -> dict[str, Any]:
    """What the run did to the file: a run that writes nothing (``check``,
    ``--check``) leaves every file unchanged and applies no fix; what a
    write would do is ``would_change`` and ``fixes_available``."""
    would = dry and r.outcome is Outcome.CHANGED
    outcome = "not checked" if not_checked(r) else r.outcome.value
    return {
        "path": r.path,
        "outcome": Outcome.UNCHANGED.value if would else outcome,
        "error": r.error,
        "error_line": r.error_line,
        "error_column": r.error_col,
        "fixes_applied": 0 if dry else len(r.applied),
        "would_change": would,
        "fixes_available": len(r.applied) if would else 0,
    }


def _fix_json(r: FileResult, f: Finding, sources: Sources, unsafe_fixes: bool) -> dict[str, Any]:
    assert f.fix is not None
    return {
        "safe": f.fix.safe,
        "applicability": "safe" if f.fix.safe else "unsafe",
        "applies": _fixable(f, unsafe_fixes),
        "description": f.fix.description,
        "edits": _edits(r, f, sources),
    }


def _edits(r: FileResult, f: Finding, sources: Sources) -> list[dict[str, Any]] | None:
    """The fix as text edits of the file (ruff's ``edits``: whole lines
    replaced, at the file's lines); None where the fix is no edit of a text
    the file holds: a follow-up fix (of the text earlier fixes make), a
    notebook's (its cells are one module to the engine), or a result whose
    edits are not kept (a cached one)."""
    from rnnfix.source.textedit import apply_edits  # libcst only if needed

    assert f.fix is not None
    if not f.fix.edits or f.cell is not None or f in r.followups or r.path.endswith(".ipynb"):
        return None
    text = sources.text(r)
    if text is None:
        return None
    try:
        fixed = apply_edits(text, f.fix.edits)
    except Exception:  # noqa: BLE001 - a fix that does not apply alone has no edits
        return None
    return [
        {
            "content": rep["insertedContent"]["text"],
            "location": {
                "row": rep["deletedRegion"]["startLine"],
                "column": rep["deletedRegion"]["startColumn"],
            },
            "end_location": {
                "row": rep["deletedRegion"]["endLine"],
                "column": rep["deletedRegion"]["endColumn"],
            },
        }
        for rep in replacements_of(text, fixed)
    ]


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def render_github(
    results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    """GitHub Actions workflow commands: annotations on the pull request. A
    notebook's finding is annotated on the JSON line that holds its cell line
    (no column: the JSON line's columns are not the cell's), and its message
    names the cell, line and column."""
    sources = Sources(dry)
    out = []
    for r, f in _diagnostics(results):
        level = "warning" if f.fixable else "error"
        span = sources.span(r, f)
        place = f"line={span.line},endLine={span.end_line}"
        if span.col is not None:
            place += f",col={span.col}"
            if span.end_col is not None:
                place += f",endColumn={span.end_col}"
        message = f"{where(r.path, f)}: {f.code} {f.message}"
        out.append(
            f"::{level} title={_gh_escape(f'rnnfix ({f.code})', True)},"
            f"file={_gh_escape(r.path, True)},{place}::{_gh_escape(message)}"
        )
    for r in results:
        if r.outcome is Outcome.FAILED:
            level = "notice" if not_checked(r) else "error"
            line = f",line={r.error_line}" if r.error_line else ""
            if r.error_line and r.error_col:
                line += f",col={r.error_col}"
            out.append(
                f"::{level} file={_gh_escape(r.path, True)}{line}::{_gh_escape(failure_line(r))}"
            )
    return "".join(line + "\n" for line in out)


def render(
    fmt: str, results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    """``dry``: the findings are of the files as they are (``--check``,
    ``--diff``), not as fixed (fixes are edits of the one or the other)."""
    if fmt in ("text", "concise"):
        return render_text(results, unsafe_fixes)
    if fmt == "full":
        return render_full(results, unsafe_fixes, dry)
    if fmt == "json":
        return render_json(results, unsafe_fixes, dry)
    if fmt == "github":
        return render_github(results, unsafe_fixes, dry)
    if fmt == "sarif":
        return render_sarif(results, unsafe_fixes, dry)
    if fmt == "gitlab":
        return render_gitlab(results, dry)
    raise ValueError(f"unknown format {fmt!r}")
