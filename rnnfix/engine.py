"""parse -> rules -> edits -> re-check -> (write). Per-file results never raise.

The fix loop applies every applicable fix, re-runs the rules on the result and
repeats until nothing applicable is left (a fixed point where all rules agree)
or ``MAX_PASSES`` is reached. A result that does not parse is refused: the
fixes are then tried one at a time and the ones that break the parse are
dropped and reported.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.testcode import outside_test_classes
from rnnfix.edits import Edit, apply_edits
from rnnfix.rules import FileContext, Finding, Rule, all_rules
from rnnfix.settings import Settings

if TYPE_CHECKING:
    from rnnfix.analysis.project import ProjectIndex

MAX_PASSES = 8

_IGNORE = re.compile(r"#\s*rnnfix:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


@dataclass(frozen=True)
class DroppedFix:
    finding: Finding
    reason: str


@dataclass
class SourceResult:
    """What fixing one source did. ``findings`` are what is left in ``fixed``
    (positions in ``fixed``); ``applied`` are the findings whose fixes went in."""

    original: str
    fixed: str
    findings: list[Finding] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    dropped: list[DroppedFix] = field(default_factory=list)
    # Findings in ``original``, with its line numbers. ``applied`` may hold
    # findings of later passes, whose positions refer to intermediate sources.
    initial: list[Finding] = field(default_factory=list)
    # Other files of the run (absolute paths) whose summaries the analysis
    # looked up: the result may change when one of them does.
    consulted: set[str] = field(default_factory=set)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def selected_rules(settings: Settings) -> list[Rule]:
    return [cls() for code, cls in all_rules().items() if settings.enabled(code)]


def check_source(
    source: str,
    settings: Settings | None = None,
    path: str = "<string>",
    project: ProjectIndex | None = None,
) -> list[Finding]:
    """Findings for ``source``; raises ``SyntaxError`` when it does not parse."""
    settings = settings or Settings()
    rules = selected_rules(settings)
    return _run_rules(source, ast.parse(source), settings, path, rules, project, set())


def fix_source(
    source: str,
    settings: Settings | None = None,
    path: str = "<string>",
    project: ProjectIndex | None = None,
) -> SourceResult:
    """Apply every applicable fix until a fixed point; raises ``SyntaxError``
    only when the *input* does not parse. ``project``: the other files of the
    run (the same index on every pass: fixing this file does not change what
    the others do)."""
    settings = settings or Settings()
    rules = selected_rules(settings)
    result = SourceResult(original=source, fixed=source)
    current = source
    consulted = result.consulted
    findings = _run_rules(current, ast.parse(current), settings, path, rules, project, consulted)
    result.initial = findings
    for _ in range(MAX_PASSES):
        applicable = [f for f in findings if _applicable(f, settings)]
        if not applicable:
            break
        new, applied, dropped = _apply(current, applicable)
        result.dropped.extend(d for d in dropped if d not in result.dropped)
        if not applied or new == current:
            break
        result.applied.extend(applied)
        current = new
        findings = _run_rules(
            current, ast.parse(current), settings, path, rules, project, consulted
        )
        # A fix that failed once would fail again: stop offering it.
        findings = _strip_failed(findings, result.dropped)
    result.fixed = current
    # A fix that could not be applied is not offered as available.
    result.findings = _strip_failed(findings, result.dropped)
    return result


def _strip_failed(findings: list[Finding], dropped: list[DroppedFix]) -> list[Finding]:
    failed = {(d.finding.code, d.finding.line, d.finding.message) for d in dropped}
    return [_without_fix(f) if (f.code, f.line, f.message) in failed else f for f in findings]


def _without_fix(f: Finding) -> Finding:
    return dataclasses.replace(f, fix=None)


def _applicable(f: Finding, settings: Settings) -> bool:
    return f.fix is not None and (f.fix.safe or settings.unsafe_fixes)


def _apply(source: str, findings: Sequence[Finding]) -> tuple[str, list[Finding], list[DroppedFix]]:
    edits: list[Edit] = [e for f in findings if f.fix for e in f.fix.edits]
    try:
        return _apply_checked(source, edits), list(findings), []
    except Exception:  # noqa: BLE001 - fall back to one fix at a time below
        pass
    applied: list[Finding] = []
    dropped: list[DroppedFix] = []
    current = source
    for f in findings:
        assert f.fix is not None
        try:
            current = _apply_checked(current, f.fix.edits)
        except Exception as exc:  # noqa: BLE001 - a failing fix is dropped, not fatal
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            dropped.append(DroppedFix(f, reason))
            continue
        applied.append(f)
        # Positions of the other findings may have moved: the next pass
        # re-runs the rules on the new source and offers them again.
        break
    return current, applied, dropped


def _apply_checked(source: str, edits: Sequence[Edit]) -> str:
    new = apply_edits(source, edits)
    ast.parse(new)  # refuse anything that does not parse
    return new


def _run_rules(
    source: str,
    tree: ast.Module,
    settings: Settings,
    path: str,
    rules: Iterable[Rule],
    project: ProjectIndex | None,
    consulted: set[str],
) -> list[Finding]:
    ctx = FileContext(source=source, tree=tree, settings=settings, path=path, project=project)
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(rule.check(ctx))
    if not settings.include_tests:
        findings = outside_test_classes(ctx, findings)
    # The facts refer back to the context: dropping them here frees each tree
    # at once instead of leaving it to the cyclic garbage collector (which
    # then walks every live tree, and a large run gets slower and slower).
    facts = ctx.__dict__.pop("facts", None)
    if facts is not None and facts.project is not None:
        consulted |= facts.project.consulted
    lines = ctx.lines
    kept = [f for f in findings if not _ignored(f, lines)]
    return sorted(set(kept), key=lambda f: (f.line, f.col, f.code, f.message))


def _ignored(f: Finding, lines: list[str]) -> bool:
    if not 0 < f.line <= len(lines):
        return False
    m = _IGNORE.search(lines[f.line - 1])
    if m is None:
        return False
    codes = m.group("codes")
    if codes is None:
        return True
    return any(f.code.startswith(c.strip()) for c in codes.split(",") if c.strip())
