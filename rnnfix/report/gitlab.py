"""GitLab Code Quality report (``--output-format gitlab``), as ruff writes it:
a JSON list of issues, each with a fingerprint from the rule, the file and
the code (``rnnfix.report.fingerprints``), never from a line number. A
notebook's issue is at the line of its JSON that holds the cell line, and its
description names the cell and the line within it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rnnfix.report.fingerprints import digest, fingerprints
from rnnfix.report.sources import Sources
from rnnfix.run.process import FileResult, Outcome


def render_gitlab(results: Sequence[FileResult], dry: bool = False) -> str:
    sources = Sources(dry)
    prints = fingerprints(results, sources)
    issues: list[dict[str, Any]] = []
    for r in results:
        for i, f in enumerate(r.findings):
            cell = f"cell {f.cell}:{f.line}:{f.col}: " if f.cell is not None else ""
            span = sources.span(r, f)
            issues.append(
                {
                    "check_name": f.code,
                    "description": f"{f.code}: {cell}{f.message}",
                    "severity": "major",
                    "fingerprint": prints[(r.path, i)],
                    "location": {
                        "path": r.path,
                        "lines": {"begin": span.line, "end": span.end_line},
                    },
                }
            )
        if r.outcome is Outcome.FAILED:
            line = r.error_line or 1
            issues.append(
                {
                    "check_name": "rnnfix-error",
                    "description": str(r.error),
                    "severity": "info" if (r.error or "").startswith("not checked") else "blocker",
                    "fingerprint": digest(r.path, "error", str(r.error)),
                    "location": {"path": r.path, "lines": {"begin": line, "end": line}},
                }
            )
    return json.dumps(issues, indent=2) + "\n"
