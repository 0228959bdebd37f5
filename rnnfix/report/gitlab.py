"""GitLab Code Quality report (``--output-format gitlab``), as ruff writes it:
a JSON list of issues with a fingerprint that stays the same when the lines
around a finding move (path, code and message, numbered among equals), so
GitLab's merge-request widget shows new and fixed issues, not moved ones."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rnnfix.run.process import FileResult, Outcome


def render_gitlab(results: Sequence[FileResult]) -> str:
    issues: list[dict[str, Any]] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    for r in results:
        for f in r.findings:
            cell = f"cell {f.cell}: " if f.cell is not None else ""
            key = (r.path, f.code, cell + f.message)
            seen[key] += 1
            issues.append(
                {
                    "check_name": f.code,
                    "description": f"{f.code}: {cell}{f.message}",
                    "severity": "major",
                    "fingerprint": _fingerprint(*key, seen[key]),
                    "location": {
                        "path": r.path,
                        "lines": {"begin": f.line, "end": f.end_line or f.line},
                    },
                }
            )
        if r.outcome is Outcome.FAILED:
            line = r.error_line or 1
            issues.append(
                {
                    "check_name": "rnnfix-error",
                    "description": str(r.error),
                    "severity": "blocker",
                    "fingerprint": _fingerprint(r.path, "error", str(r.error), 1),
                    "location": {"path": r.path, "lines": {"begin": line, "end": line}},
                }
            )
    return json.dumps(issues, indent=2) + "\n"


def _fingerprint(path: str, code: str, message: str, nth: int) -> str:
    data = f"{path}\0{code}\0{message}\0{nth}".encode("utf-8", "surrogateescape")
    return hashlib.blake2b(data, digest_size=16).hexdigest()
