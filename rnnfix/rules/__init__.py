"""Rules: one module per rule (``rnf00N_<what>.py``), or one package per rule
that needs helpers of its own (``rnf003/``, whose rule is ``rnf003/rule.py``).
``all_rules`` imports each, which registers its ``Rule`` subclass (see
``base.Rule.__init_subclass__``)."""

from __future__ import annotations

import importlib
import pkgutil

from rnnfix.rules.base import FileContext, Finding, Fix, Rule

_imported = False


def all_rules() -> dict[str, type[Rule]]:
    """Every rule, by code, in code order. The package is listed once per
    process: listing it for every file cost a large run several seconds."""
    global _imported
    if not _imported:
        for info in pkgutil.iter_modules(__path__):
            if info.name != "base" and not info.name.startswith("_"):
                suffix = ".rule" if info.ispkg else ""
                importlib.import_module(f"{__name__}.{info.name}{suffix}")
        _imported = True
    return dict(sorted(Rule.registry.items()))


__all__ = ["FileContext", "Finding", "Fix", "Rule", "all_rules"]
