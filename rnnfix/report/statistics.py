"""``--statistics``: how many findings of each rule, most frequent first
(ruff's ``--statistics``), and the rule list as JSON (``rnnfix rules
--output-format json``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rnnfix.rules import all_rules
from rnnfix.run.process import FileResult


def statistics(results: Sequence[FileResult], fmt: str, unsafe_fixes: bool = False) -> str:
    counts: Counter[str] = Counter()
    fixable: Counter[str] = Counter()
    for r in results:
        for f in r.findings:
            counts[f.code] += 1
            fixable[f.code] += f.fix is not None and (f.fix.safe or unsafe_fixes)
    rules = all_rules()
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if fmt == "json":
        items = [
            {
                "code": code,
                "name": rules[code].name if code in rules else None,
                "count": count,
                "fixable": fixable[code],
            }
            for code, count in rows
        ]
        return json.dumps(items, indent=2) + "\n"
    width = max((len(str(count)) for _, count in rows), default=1)
    return "".join(
        f"{count:>{width}}\t{code}\t{'[*]' if fixable[code] else '   '} "
        f"{rules[code].name if code in rules else ''}\n"
        for code, count in rows
    )


def rules_json() -> str:
    items: list[dict[str, Any]] = [
        {
            "code": code,
            "name": cls.name,
            "summary": cls.summary,
            "fix_safety": cls.fix_safety,
            "explanation": cls.docs.strip(),
        }
        for code, cls in all_rules().items()
    ]
    return json.dumps(items, indent=2) + "\n"
