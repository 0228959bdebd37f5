"""What a rule is: its identity, its docs, and a detection that yields findings.

A rule is one module under ``rnnfix/rules/``; defining a ``Rule`` subclass with
a ``code`` registers it (no central list to edit).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Literal

# Re-exported: rules have always imported these from here.
from rnnfix.analysis.context import FileContext, Finding, Fix

__all__ = ["FileContext", "Finding", "Fix", "FixSafety", "Rule"]

FixSafety = Literal["safe", "unsafe", "opt-in", "none"]


class Rule:
    """Base class. Subclasses set the class attributes and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, e.g. "wrapper-mode-via-module"
    summary: ClassVar[str]  # one line
    docs: ClassVar[
        str
    ]  # markdown: What it does / Why is this bad / Example / Use instead / Fix safety
    fix_safety: ClassVar[FixSafety]

    registry: ClassVar[dict[str, type[Rule]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code:
            if code in Rule.registry:
                raise RuntimeError(f"rule code {code} defined twice")
            Rule.registry[code] = cls

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        raise NotImplementedError
