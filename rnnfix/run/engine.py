"""parse -> rules -> edits -> re-check -> (write). Per-file results never raise.

The fix loop applies every applicable fix, re-runs the rules on the result and
repeats until nothing applicable is left (a fixed point where all rules agree).
Every fix is dropped, and reported with its reason, when its result

- does not parse, or its edits cannot be placed;
- reads a name that is not bound where it is read (``rnnfix.run.undefined``),
  which the source before it did not;
- does not converge: its finding is still there, at the same place, after its
  own edit, or the pass brings back a source already seen. The pass is then
  redone without it, so the file stays as the last good pass left it and no
  fix is ever stacked. Fixes still offered after ``MAX_PASSES`` passes are
  dropped too.

When the fixes of a pass fail together, each is tried alone to find the ones
to blame.

``decide`` (``rnnfix apply -i``) is asked about each fix before it goes in,
with the source before and after that fix alone; a fix it declines is never
offered again, but its finding stays (fixable) in what is left. Later passes
ask about their own fixes against the source the accepted ones made, so every
pass is still parsed, checked and converged as above.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.context import DroppedFix, FileContext, Finding
from rnnfix.analysis.project.testcode import outside_test_classes
from rnnfix.analysis.torch.frameworks import other_framework_only
from rnnfix.config.settings import Settings
from rnnfix.rules import Rule, all_rules
from rnnfix.run import undefined
from rnnfix.run.linemap import LineMap, identity
from rnnfix.run.suppressions import Suppressions, may_suppress, unused
from rnnfix.run.undefined import NameProblem
from rnnfix.source.edits import Edit
from rnnfix.source.lines import line_texts

if TYPE_CHECKING:
    from rnnfix.analysis.project.index import ProjectIndex

MAX_PASSES = 8

# (path, finding at the input's positions, source before, source with only
# its fix) -> apply it?
Decide = Callable[[str, Finding, str, str], bool]


@dataclass
class SourceResult:
    """What fixing one source did. ``findings`` are what is left in ``fixed``
    (positions in ``fixed``); ``applied`` are the findings whose fixes went in
    and ``dropped`` those whose fixes were refused, both at the positions of
    ``original`` (a finding of a later pass at the input line it comes from)."""

    original: str
    fixed: str
    findings: list[Finding] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    dropped: list[DroppedFix] = field(default_factory=list)
    # Findings in ``original``, with its line numbers.
    initial: list[Finding] = field(default_factory=list)
    # Fixes that later passes found once earlier fixes went in (the train()
    # RNF001 asks for after RNF003's eval()), at ``original``'s positions.
    followups: list[Finding] = field(default_factory=list)
    # Other files of the run (absolute paths) whose summaries the analysis
    # looked up: the result may change when one of them does.
    consulted: set[str] = field(default_factory=set)
    # (line, what) of each suppression in ``original`` that silences nothing
    # (``report_unused_suppressions`` only; ``rnnfix.run.suppressions``).
    unused: list[tuple[int, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    @property
    def reported(self) -> list[Finding]:
        """What a dry run reports: the input's findings and the follow-up
        fixes, so that every edit of the diff has its diagnostic."""
        return sorted([*self.initial, *self.followups], key=_position)


def _position(f: Finding) -> tuple[int, int, str, str]:
    return (f.line, f.col, f.code, f.message)


def selected_rules(settings: Settings) -> list[Rule]:
    return [cls() for code, cls in all_rules().items() if settings.enabled(code)]


def check_source(
    source: str,
    settings: Settings | None = None,
    path: str = "<string>",
    project: ProjectIndex | None = None,
) -> list[Finding]:
    """Findings for ``source``; raises ``SyntaxError`` when it does not parse."""
    settings = (settings or Settings()).for_path(path)
    rules = selected_rules(settings)
    return _run_rules(source, ast.parse(source), settings, path, rules, project, set())


def fix_source(
    source: str,
    settings: Settings | None = None,
    path: str = "<string>",
    project: ProjectIndex | None = None,
    decide: Decide | None = None,
) -> SourceResult:
    """Apply every applicable fix until a fixed point; raises ``SyntaxError``
    only when the *input* does not parse. ``project``: the other files of the
    run (the same index on every pass: fixing this file does not change what
    the others do). ``decide``: asked about each fix (see the module's doc);
    by default the one ``reviewing`` set, else every fix goes in."""
    settings = (settings or Settings()).for_path(path)  # per-file-ignores
    return _FixLoop(source, settings, path, project, decide or _REVIEW.get()).run()


_REVIEW: contextvars.ContextVar[Decide | None] = contextvars.ContextVar("review", default=None)


@contextlib.contextmanager
def reviewing(decide: Decide) -> Iterator[None]:
    """Every ``fix_source`` inside asks ``decide`` (the CLI's ``-i``, through
    ``process_files``, which must then run in this process)."""
    token = _REVIEW.set(decide)
    try:
        yield
    finally:
        _REVIEW.reset(token)


class _Refused(Exception):
    """A fix whose result the engine will not keep; the message says why."""


class _FixLoop:
    """One source through the passes. Every pass maps its output back onto
    its input (``LineMap``), so that findings of any pass can be said at the
    input's line numbers and a finding that survived its own fix is seen."""

    def __init__(
        self,
        source: str,
        settings: Settings,
        path: str,
        project: ProjectIndex | None,
        decide: Decide | None = None,
    ) -> None:
        self.settings = settings
        self.path = path
        self.project = project
        self.rules = selected_rules(settings)
        self.result = SourceResult(original=source, fixed=source)
        self.current = source
        self.tree = ast.parse(source)
        self.to_input = identity(source)  # current source -> input
        self.seen = {source}
        # Where a fix was dropped (code, input line): never offered again.
        self.failed: set[tuple[str, int]] = set()
        self.decide = decide
        # Where ``decide`` declined a fix (code, input line): never offered
        # again; where it accepted one: not asked again (fixes that clash go
        # in over several passes).
        self.declined: set[tuple[str, int]] = set()
        self.accepted: set[tuple[str, int]] = set()
        self._names: list[NameProblem] | None | bool = False  # False: not computed yet
        self._parsed: dict[str, ast.Module] = {}  # ``_checked``'s last result

    def run(self) -> SourceResult:
        result = self.result
        raw: list[Finding] | None = [] if self.settings.report_unused_suppressions else None
        findings = self._check(self.current, self.tree, raw)
        result.initial = findings
        if raw is not None and may_suppress(self.current):
            result.unused = unused(Suppressions(self.current, line_texts(self.current)), raw)
        earlier: list[Finding] = []  # fixes of the passes before, at input positions
        for n in range(MAX_PASSES + 1):
            applicable = [f for f in findings if self._offered(f)]
            if not applicable:
                break
            if n == MAX_PASSES:
                for f in applicable:
                    self._drop(f, f"did not converge within {MAX_PASSES} passes", self.to_input)
                break
            step = self._pass(findings, applicable)
            if step is None:
                break
            new, tree, new_findings, applied, step_map = step
            at_input = [self.to_input.finding(f) for f in applied]
            result.applied.extend(at_input)
            # A fix of the input's own finding that had to wait for a later
            # pass (two fixes that clash go in one at a time) is no follow-up.
            initial = {(f.code, f.line) for f in result.initial}
            result.followups.extend(
                _followup(f, earlier)
                for f in at_input
                if earlier and (f.code, f.line) not in initial
            )
            earlier.extend(at_input)
            self.current, self.tree, findings = new, tree, new_findings
            self.to_input = step_map.then(self.to_input)
            self.seen.add(new)
            self._names = False
        result.fixed = self.current
        result.initial = [
            _without_fix(f) if (f.code, f.line) in self.failed else f for f in result.initial
        ]
        # A fix that could not be applied is not offered as available.
        result.findings = [
            f if self._offered(f, any_safety=True) or self._was_declined(f) else _without_fix(f)
            for f in findings
        ]
        return result

    def _offered(self, f: Finding, any_safety: bool = False) -> bool:
        at_input = (f.code, self.to_input.line(f.line))
        if f.fix is None or at_input in self.failed or at_input in self.declined:
            return False
        return any_safety or f.fix.safe or self.settings.unsafe_fixes

    def _was_declined(self, f: Finding) -> bool:
        return f.fix is not None and (f.code, self.to_input.line(f.line)) in self.declined

    def _accepted(self, candidates: list[Finding]) -> list[Finding]:
        """The candidates ``decide`` accepts, each shown alone on the current
        source; one whose edit the engine refuses anyway is not asked about
        (``_apply`` drops it with its reason)."""
        if self.decide is None:
            return candidates
        kept = []
        # Each fix is shown on the source the fixes accepted before it in
        # this pass make (falling back to the pass's source when they do not
        # combine), so its diff is the one it adds.
        so_far: list[Edit] = []
        shown = self.current
        for f in candidates:
            assert f.fix is not None
            place = (f.code, self.to_input.line(f.line))
            if place in self.accepted:
                kept.append(f)
                continue
            try:
                alone = self._checked(f.fix.edits)
            except Exception:  # noqa: BLE001 - refused below, with its reason
                kept.append(f)
                continue
            before, after = self.current, alone
            if so_far:
                try:
                    before, after = shown, self._checked([*so_far, *f.fix.edits])
                except Exception:  # noqa: BLE001 - they clash: shown alone
                    before, after = self.current, alone
                if after == before:  # the accepted fixes already make this one
                    self.accepted.add(place)
                    kept.append(f)
                    continue
            if self.decide(self.path, self.to_input.finding(f), before, after):
                self.accepted.add(place)
                kept.append(f)
                if after is not alone or not so_far:
                    so_far.extend(f.fix.edits)
                    shown = after
            else:
                self.declined.add(place)
        return kept

    def _fixable(self, f: Finding) -> bool:
        return f.fix is not None and (f.fix.safe or self.settings.unsafe_fixes)

    def _drop(self, f: Finding, reason: str, to_input: LineMap) -> None:
        at_input = to_input.finding(f)
        self.failed.add((f.code, at_input.line))
        dropped = DroppedFix(at_input, reason)
        if dropped not in self.result.dropped:
            self.result.dropped.append(dropped)

    def _pass(
        self, findings: list[Finding], applicable: list[Finding]
    ) -> tuple[str, ast.Module, list[Finding], list[Finding], LineMap] | None:
        """Apply what can be applied together; a fix whose finding is still
        there after it (or that brings back a source already seen) is dropped
        and the pass is redone without it, from the same source."""
        candidates = self._accepted(applicable)
        while candidates:
            new, applied, dropped = self._apply(candidates)
            for d in dropped:
                self._drop(d.finding, d.reason, self.to_input)
            if not applied:
                return None
            tree = self._parsed.pop(new, None) or ast.parse(new)
            step_map = LineMap(self.current, new)
            new_findings = self._check(new, tree) if new != self.current else findings
            if new in self.seen:
                stuck = applied  # no effect, or back to an earlier source: a cycle
            else:
                # Only a finding that would be fixed again can stack.
                fixable = self._fixable
                stuck = _not_converged(
                    list(filter(fixable, findings)),
                    applied,
                    list(filter(fixable, new_findings)),
                    step_map,
                )
            if not stuck:
                return new, tree, new_findings, applied, step_map
            for f in stuck:
                self._drop(f, _NOT_CONVERGED, self.to_input)
            gone = {id(f) for f in stuck} | {id(d.finding) for d in dropped}
            candidates = [f for f in candidates if id(f) not in gone and self._offered(f)]
        return None

    def _apply(self, findings: Sequence[Finding]) -> tuple[str, list[Finding], list[DroppedFix]]:
        edits: list[Edit] = [e for f in findings if f.fix for e in f.fix.edits]
        try:
            return self._checked(edits), list(findings), []
        except Exception as exc:  # noqa: BLE001 - find the fixes to blame below
            if len(findings) == 1:
                return self.current, [], [DroppedFix(findings[0], _reason(exc))]
        ok: list[Finding] = []
        dropped: list[DroppedFix] = []
        for f in findings:
            assert f.fix is not None
            try:
                self._checked(f.fix.edits)
            except Exception as exc:  # noqa: BLE001 - a failing fix is dropped, not fatal
                dropped.append(DroppedFix(f, _reason(exc)))
                continue
            ok.append(f)
        if not ok:
            return self.current, [], dropped
        together = [e for f in ok if f.fix for e in f.fix.edits]
        try:
            return self._checked(together), ok, dropped
        except Exception:  # noqa: BLE001 - they clash: one now, the rest next pass
            assert ok[0].fix is not None
            return self._checked(ok[0].fix.edits), ok[:1], dropped

    def _checked(self, edits: Sequence[Edit]) -> str:
        """The source with ``edits``; refused when it does not parse or reads
        a name that is not bound where it is read (and was not before)."""
        # libcst is imported only for an edit the text path cannot make.
        from rnnfix.source.textedit import apply_edits

        new = apply_edits(self.current, edits, self.tree)
        tree = ast.parse(new)
        # ``_pass`` reads the result it keeps: parsed once (the last one only).
        self._parsed = {new: tree}
        before = self._problems()
        if before is not None:
            after = undefined.problems(tree)
            if after is not None:
                new_problems = undefined.introduced(before, after)
                if new_problems:
                    raise _Refused(new_problems[0].describe())
        return new

    def _problems(self) -> list[NameProblem] | None:
        if self._names is False:
            self._names = undefined.problems(self.tree)
        assert self._names is not True
        return self._names

    def _check(
        self, source: str, tree: ast.Module, raw: list[Finding] | None = None
    ) -> list[Finding]:
        return _run_rules(
            source,
            tree,
            self.settings,
            self.path,
            self.rules,
            self.project,
            self.result.consulted,
            raw,
        )


_NOT_CONVERGED = "did not converge: its finding is still there after its own fix"


def _reason(exc: Exception) -> str:
    if isinstance(exc, _Refused):
        return str(exc)
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _not_converged(
    before: list[Finding], applied: list[Finding], after: list[Finding], step: LineMap
) -> list[Finding]:
    """Applied fixes whose finding is still there, fixable, at the same place
    (code and line, a line the fix inserted counting as the line it was put
    next to). Counted, so that a second finding of the same code on that line
    that was not fixed does not count against the one that was."""
    count_before = Counter((f.code, f.line) for f in before)
    count_applied = Counter((f.code, f.line) for f in applied)
    count_after = Counter((g.code, step.line(g.line)) for g in after)
    return [
        f
        for f in applied
        if count_after[(f.code, f.line)]
        > count_before[(f.code, f.line)] - count_applied[(f.code, f.line)]
    ]


def _followup(f: Finding, earlier: list[Finding]) -> Finding:
    """A finding of a later pass, said as what fixing the earlier ones leads to
    (the input itself does not have it yet)."""
    places = sorted({(e.code, e.line) for e in earlier}, key=lambda p: (p[1], p[0]))
    said = ", ".join(f"{code} at line {line}" for code, line in places[:3])
    if len(places) > 3:
        said += ", ..."
    return dataclasses.replace(f, message=f"{f.message} (follows from fixing {said})")


def _without_fix(f: Finding) -> Finding:
    return dataclasses.replace(f, fix=None)


def _run_rules(
    source: str,
    tree: ast.Module,
    settings: Settings,
    path: str,
    rules: Iterable[Rule],
    project: ProjectIndex | None,
    consulted: set[str],
    raw: list[Finding] | None = None,
) -> list[Finding]:
    """The rules' findings, less the suppressed ones (``raw``, when given,
    gets them all), without the fixes ``fixable``/``unfixable`` turn off."""
    if other_framework_only(source, tree):
        return []  # PaddlePaddle, MindSpore, TensorFlow...: not torch code
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
    if facts is not None:
        if facts.project is not None:
            consulted |= facts.project.consulted
        facts.release()
    if raw is not None:
        raw.extend(findings)
    if not findings:
        return []
    if may_suppress(source):
        suppressions = Suppressions(source, ctx.lines)
        findings = [f for f in findings if not suppressions.silenced(f)]
    if settings.unfixable or settings.fixable != ("ALL",):
        findings = [
            f if f.fix is None or settings.fix_enabled(f.code) else _without_fix(f)
            for f in findings
        ]
    return sorted(set(findings), key=lambda f: (f.line, f.col, f.code, f.message))
