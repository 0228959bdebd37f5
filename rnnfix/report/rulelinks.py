"""Where each rule's documentation is online (JSON ``url``, SARIF ``helpUri``).

``docs/rules/<CODE>.md`` holds each rule's documentation as ``rnnfix explain``
prints it; ``scripts/rule_docs.py`` writes them and a test checks they match.
"""

from __future__ import annotations

REPOSITORY = "https://github.com/rnnfix/rnnfix"


def rule_url(code: str) -> str:
    return f"{REPOSITORY}/blob/main/docs/rules/{code}.md"


def rule_doc(code: str) -> str | None:
    """A rule's documentation as Markdown (``rnnfix explain``); None for an unknown code."""
    from rnnfix.rules import all_rules

    cls = all_rules().get(code.upper())
    if cls is None:
        return None
    return f"# {cls.code} {cls.name}\n\nFix: {cls.fix_safety}\n\n{cls.docs.strip()}\n"
