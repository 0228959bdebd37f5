"""SARIF 2.1.0 (``--output-format sarif``), for code-scanning uploads and
editors' SARIF viewers; ``tests/report`` validates it against the official
schema.

A finding whose fix applies under the run's settings (safe, or unsafe with
``--unsafe-fixes``) carries it as a SARIF ``fix``: the lines the fix changes,
each run of them one ``replacement`` (``deletedRegion`` whole lines,
``insertedContent`` their new text), computed by applying the fix alone to the
text the finding is about: the file as it is for a dry run (``--check``,
``--diff``), as fixed otherwise. A follow-up fix (one a later pass finds once
earlier fixes went in) is an edit of a text no file holds, and a notebook's
lines are its cells', not its JSON's: neither carries a fix.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

from rnnfix._version import __version__
from rnnfix.analysis.context import Finding
from rnnfix.report.fingerprints import fingerprints
from rnnfix.report.rulelinks import rule_url
from rnnfix.report.sources import FileSpan, Sources
from rnnfix.rules import all_rules
from rnnfix.run.process import FileResult, Outcome
from rnnfix.source.lines import split_lines


def render_sarif(
    results: Sequence[FileResult], unsafe_fixes: bool = False, dry: bool = False
) -> str:
    rules = all_rules()
    sarif_rules = [
        {
            "id": code,
            "name": cls.name,
            "shortDescription": {"text": cls.summary},
            "fullDescription": {"text": cls.docs},
            "help": {"text": cls.docs, "markdown": cls.docs},
            "helpUri": rule_url(code),
            "properties": {"fixSafety": cls.fix_safety},
        }
        for code, cls in rules.items()
    ]
    index = {code: i for i, code in enumerate(rules)}
    sources = Sources(dry)
    prints = fingerprints(results, sources)
    sarif_results = []
    for r in results:
        uri = _uri(r.path)
        source: str | None | bool = False  # False: not read yet
        for i, f in enumerate(r.findings):
            result = _result(f, uri, index, sources.span(r, f))
            result["partialFingerprints"] = {"rnnfix/v1": prints[(r.path, i)]}
            if _offered(f, unsafe_fixes) and f not in r.followups:
                if source is False:
                    source = _source(r, dry)
                if isinstance(source, str) and (fix := _fix(f, source, uri)) is not None:
                    result["fixes"] = [fix]
            sarif_results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": str(r.error)},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(r.path)}}}],
        }
        for r in results
        if r.outcome is Outcome.FAILED
    ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rnnfix",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/rnnfix/",
                        "rules": sarif_rules,
                    }
                },
                "results": sarif_results,
                # rnnfix counts columns in characters (SARIF's default is UTF-16 units).
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not any(
                            r.outcome is Outcome.FAILED for r in results
                        ),
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _uri(path: str) -> str:
    return path.replace("\\", "/")


def _result(f: Finding, uri: str, index: dict[str, int], span: FileSpan) -> dict[str, Any]:
    """A notebook's finding is at the JSON line that holds its cell line, no
    column (the JSON line's are not the cell's); its message names the cell."""
    region: dict[str, int] = {"startLine": span.line}
    if span.col is not None:
        region["startColumn"] = span.col
    if span.end_line != span.line or span.end_col is not None:
        region["endLine"] = span.end_line
    if span.end_col is not None:
        region["endColumn"] = span.end_col
    text = f"cell {f.cell}:{f.line}:{f.col}: {f.message}" if f.cell else f.message
    return {
        "ruleId": f.code,
        "ruleIndex": index.get(f.code, -1),
        "level": "warning",
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}],
        # whether rnnfix has a fix for it at all (``fixes`` holds one only
        # when the run's settings apply it); the CI bot's annotation level
        "properties": {"fixable": f.fixable},
    }


def _offered(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and f.cell is None and (f.fix.safe or unsafe_fixes)


def _source(r: FileResult, dry: bool) -> str | None:
    """The text ``r``'s findings are about (None: not known)."""
    if r.path.endswith(".ipynb") or r.outcome is Outcome.FAILED:
        return None
    text = r.old_text if dry else r.new_text
    if text is None and r.outcome is Outcome.UNCHANGED and r.old_bytes is not None:
        # A cached unchanged result keeps the bytes, not the text.
        from rnnfix.source.files import FileProblem, decode

        try:
            text = decode(r.old_bytes).text
        except FileProblem:
            return None
    return text


def _fix(f: Finding, source: str, uri: str) -> dict[str, Any] | None:
    from rnnfix.source.textedit import apply_edits  # libcst only if needed

    assert f.fix is not None
    try:
        fixed = apply_edits(source, f.fix.edits)
    except Exception:  # noqa: BLE001 - a fix that does not apply alone is left out
        return None
    replacements = replacements_of(source, fixed)
    if not replacements:
        return None
    return {
        "description": {"text": f.fix.description or f.message},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements}],
        "properties": {"safe": f.fix.safe},
    }


def replacements_of(old: str, new: str) -> list[dict[str, Any]]:
    """The whole-line replacements that turn ``old`` into ``new``, in order,
    each at ``old``'s lines (SARIF applies them all to the same text)."""
    before = split_lines(old)
    after = split_lines(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out.append(
            {
                "deletedRegion": _lines_region(before, i1, i2),
                "insertedContent": {"text": "".join(after[j1:j2])},
            }
        )
    return out


def _lines_region(lines: list[str], first: int, end: int) -> dict[str, int]:
    """Lines ``first`` up to ``end`` (0-based, ``end`` excluded) with their
    line breaks, as a region; an empty one (an insertion) when they are equal."""
    if end < len(lines):
        return {"startLine": first + 1, "startColumn": 1, "endLine": end + 1, "endColumn": 1}
    if not lines:
        return {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
    # Up to the end of the file: the end of its last line.
    last = len(lines)
    end_column = len(lines[-1]) + 1
    if first == end:  # an insertion at the very end
        return {
            "startLine": last,
            "startColumn": end_column,
            "endLine": last,
            "endColumn": end_column,
        }
    return {"startLine": first + 1, "startColumn": 1, "endLine": last, "endColumn": end_column}
