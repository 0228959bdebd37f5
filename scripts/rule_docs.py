"""Write docs/rules/<CODE>.md from the rules' own documentation (the pages
``rnnfix``'s JSON ``url`` and SARIF ``helpUri`` link to).

    python scripts/rule_docs.py          # write
    python scripts/rule_docs.py --check  # exit 1 when a page is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from rnnfix.report.rulelinks import rule_doc
from rnnfix.rules import all_rules

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    DOCS.mkdir(parents=True, exist_ok=True)
    for code in all_rules():
        page = DOCS / f"{code}.md"
        text = rule_doc(code)
        assert text is not None
        if page.exists() and page.read_text(encoding="utf-8") == text:
            continue
        stale.append(page.name)
        if not check:
            page.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"out of date: {', '.join(stale)}; run python scripts/rule_docs.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
