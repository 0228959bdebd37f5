"""The fix loop's nets under every rule: convergence, names bound where they
are read, follow-up fixes reported at the input's lines.

The fake rules here are never registered (``code`` is set after the class is
made), so they exist only where a test hands them to the engine."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

import pytest

import rnnfix.run.engine as engine
from rnnfix.config.settings import Settings
from rnnfix.rules import FileContext, Finding, Fix, Rule
from rnnfix.run.engine import fix_source
from rnnfix.source.edits import AddDecorator, InsertStatements, ReplaceExpression, WrapInWith

# The fake rules' calls, bound (the name net would refuse them otherwise).
LIB = "from lib import make, prepare, target, train\n"

ISSUE_REPRO = """\
import torch
from torch.nn import Module


def evaluate(model: Module, xs):
    def forward_func(x):
        return model(x)

    for x in xs:
        run(forward_func, x)
"""


def _rule(code: str, check: Callable[[FileContext], Iterator[Finding]]) -> Rule:
    cls = type(f"Fake{code}", (Rule,), {"check": lambda self, ctx: check(ctx)})
    cls.code = code  # after creation: not in the registry
    return cls()  # type: ignore[no-any-return]


@pytest.fixture
def use_rules(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    def _use(*rules: Rule) -> None:
        monkeypatch.setattr(engine, "selected_rules", lambda settings: list(rules))

    return _use


def _statements(ctx: FileContext) -> Iterator[ast.stmt]:
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.stmt):
            yield node


def _calls_to(ctx: FileContext, name: str) -> Iterator[ast.Expr]:
    for node in _statements(ctx):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == name
        ):
            yield node


def _insert_before(code: str, statement: str) -> Rule:
    """Flags ``statement()`` and inserts ``statement`` before it, once."""

    def check(ctx: FileContext) -> Iterator[Finding]:
        if statement in ctx.source:
            return
        for node in _calls_to(ctx, "target"):
            edit = InsertStatements(ctx.pos(node), (statement,))
            yield ctx.finding(code, node, "needs a statement", Fix((edit,), safe=True))

    return _rule(code, check)


# --- convergence ------------------------------------------------------------


def test_issue_reproduction_never_stacks_fixes() -> None:
    result = fix_source(ISSUE_REPRO)
    assert result.fixed.count("@torch.no_grad()") <= 1
    assert result.fixed.count(".eval()") <= 1
    again = fix_source(result.fixed)
    assert again.fixed == result.fixed and not again.applied
    if result.fixed == ISSUE_REPRO:  # the engine had to refuse the rule's fix
        assert [d.reason for d in result.dropped] == [engine._NOT_CONVERGED]
        assert all(f.fix is None for f in result.findings)


def _always_decorates(ctx: FileContext) -> Iterator[Finding]:
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.FunctionDef) and node.name == "evaluate":
            edit = AddDecorator(ctx.pos(node), "torch.no_grad()")
            yield ctx.finding("RNF901", node, "decorate it", Fix((edit,), safe=True))


def test_finding_that_survives_its_fix_is_dropped(use_rules) -> None:
    use_rules(_rule("RNF901", _always_decorates))
    result = fix_source(ISSUE_REPRO)
    assert result.fixed == ISSUE_REPRO  # the last good pass: the input
    [dropped] = result.dropped
    assert dropped.reason.startswith("did not converge")
    assert (dropped.finding.code, dropped.finding.line) == ("RNF901", 5)  # def evaluate
    assert [f.fix for f in result.findings] == [None]  # not offered as available
    assert [f.fix for f in result.initial] == [None]


def test_nonconverging_fix_does_not_stop_the_others(use_rules) -> None:
    src = LIB + ISSUE_REPRO + "\n\ntarget()\n"
    use_rules(_rule("RNF901", _always_decorates), _insert_before("RNF902", "prepare()"))
    result = fix_source(src)
    assert result.fixed == src.replace("target()", "prepare()\ntarget()")
    assert [f.code for f in result.applied] == ["RNF902"]
    assert [d.finding.code for d in result.dropped] == ["RNF901"]


def test_finding_left_without_a_fix_after_its_fix_is_kept(use_rules) -> None:
    """Nothing can stack when the finding that stays offers no fix again."""

    def check(ctx: FileContext) -> Iterator[Finding]:
        for node in _calls_to(ctx, "target"):
            fix = None
            if "prepare()" not in ctx.source:
                fix = Fix((InsertStatements(ctx.pos(node), ("prepare()",)),), safe=True)
            yield ctx.finding("RNF912", node, "still worth a look", fix)

    use_rules(_rule("RNF912", check))
    result = fix_source(LIB + "target()\n")
    assert result.fixed == LIB + "prepare()\ntarget()\n"
    assert not result.dropped
    assert [(f.code, f.fix) for f in result.findings] == [("RNF912", None)]


def _grows(ctx: FileContext) -> Iterator[Finding]:
    """Flags the last ``x = 1`` and adds another after it: its finding moves
    onto the line its own fix inserted."""
    last = [n for n in ctx.tree.body if ast.unparse(n) == "x = 1"][-1:]
    for node in last:
        edit = InsertStatements(ctx.pos(node), ("x = 1",), where="after")
        yield ctx.finding("RNF903", node, "grow", Fix((edit,), safe=True))


def test_finding_on_its_own_inserted_line_is_not_convergence(use_rules) -> None:
    use_rules(_rule("RNF903", _grows))
    src = "y = 0\nx = 1\n"
    result = fix_source(src)
    assert result.fixed == src
    assert [d.reason for d in result.dropped] == [engine._NOT_CONVERGED]


def _swap(old: str, new: str, code: str) -> Rule:
    def check(ctx: FileContext) -> Iterator[Finding]:
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Name) and node.id == old and isinstance(node.ctx, ast.Load):
                edit = ReplaceExpression(ctx.pos(node), ctx.end_pos(node), new)
                yield ctx.finding(code, node, f"use {new}", Fix((edit,), safe=True))

    return _rule(code, check)


def test_fixes_that_undo_each_other_stop_at_the_first(use_rules) -> None:
    use_rules(_swap("a", "b", "RNF904"), _swap("b", "a", "RNF905"))
    result = fix_source("a = b = 1\nprint(a)\n")
    assert result.fixed == "a = b = 1\nprint(b)\n"
    assert [f.code for f in result.applied] == ["RNF904"]
    assert [(d.finding.code, d.reason) for d in result.dropped] == [
        ("RNF905", engine._NOT_CONVERGED)
    ]


def test_fixes_still_offered_after_the_last_pass_are_dropped(use_rules, monkeypatch) -> None:
    monkeypatch.setattr(engine, "MAX_PASSES", 1)
    use_rules(_insert_before("RNF906", "prepare()"), _followup_rule())
    result = fix_source(LIB + "target()\n")
    assert result.fixed == LIB + "prepare()\ntarget()\n"
    assert [(d.finding.code, d.reason) for d in result.dropped] == [
        ("RNF907", "did not converge within 1 passes")
    ]


# --- follow-up fixes --------------------------------------------------------


def _followup_rule() -> Rule:
    """Once ``prepare()`` is there, ``train()`` must follow the last ``target()``."""

    def check(ctx: FileContext) -> Iterator[Finding]:
        if "prepare()" not in ctx.source or "train()" in ctx.source:
            return
        for node in list(_calls_to(ctx, "target"))[-1:]:
            edit = InsertStatements(ctx.pos(node), ("train()",), where="after")
            message = f"train after the call on line {node.lineno}"
            yield ctx.finding("RNF907", node, message, Fix((edit,), safe=True))

    return _rule("RNF907", check)


def test_followup_fix_is_reported_at_the_input_lines(use_rules) -> None:
    use_rules(_insert_before("RNF906", "prepare()"), _followup_rule())
    src = LIB + "\ntarget()\n"
    result = fix_source(src)
    assert result.fixed == LIB + "\nprepare()\ntarget()\ntrain()\n"
    assert [(f.code, f.line) for f in result.initial] == [("RNF906", 3)]
    [followup] = result.followups
    # In the pass that found it, target() was on line 4; in the input, line 3.
    assert (followup.code, followup.line, followup.col) == ("RNF907", 3, 1)
    assert followup.message == (
        "train after the call on line 3 (follows from fixing RNF906 at line 3)"
    )
    assert [(f.code, f.line) for f in result.reported] == [("RNF906", 3), ("RNF907", 3)]
    assert len(result.reported) == len(result.applied)


def _wrap(code: str, manager: str) -> Rule:
    """Wraps ``target()`` in ``with manager:`` unless it is in one already."""

    def check(ctx: FileContext) -> Iterator[Finding]:
        inside = {
            id(s)
            for w in ast.walk(ctx.tree)
            if isinstance(w, ast.With) and ast.unparse(w.items[0].context_expr) == manager
            for s in ast.walk(w)
        }
        for node in _calls_to(ctx, "target"):
            if id(node) not in inside:
                edit = WrapInWith(ctx.pos(node), ctx.pos(node), manager)
                yield ctx.finding(code, node, f"wrap in {manager}", Fix((edit,), safe=True))

    return _rule(code, check)


def test_fixes_that_clash_go_in_one_pass_after_the_other(use_rules) -> None:
    use_rules(_wrap("RNF910", "a"), _wrap("RNF911", "b"))
    src = LIB + "a = b = None\ntarget()\n"
    result = fix_source(src)
    assert result.fixed == LIB + "a = b = None\nwith a:\n    with b:\n        target()\n"
    assert [(f.code, f.line) for f in result.applied] == [("RNF910", 3), ("RNF911", 3)]
    assert not result.dropped
    # Both are the input's own findings: no follow-up.
    assert result.followups == []
    assert len(result.reported) == 2


# --- names bound where they are read -----------------------------------------


def test_fix_reading_a_name_assigned_later_is_dropped(use_rules) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"))
    src = LIB + "def main():\n    target()\n    trainer = make()\n    trainer.fit()\n"
    result = fix_source(src)
    assert result.fixed == src
    [dropped] = result.dropped
    assert dropped.reason == "would read `trainer` before it is assigned"
    assert result.findings[0].fix is None


def test_fix_reading_a_name_assigned_later_in_the_loop_is_dropped(use_rules) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"))
    src = LIB + "for epoch in range(3):\n    target()\n    trainer = make()\n"
    result = fix_source(src)
    assert result.fixed == src
    assert [d.reason for d in result.dropped] == ["would read `trainer` where it may be unassigned"]


def test_fix_reading_an_undefined_name_is_dropped(use_rules) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"))
    result = fix_source(LIB + "def main(model):\n    target()\n")
    assert [d.reason for d in result.dropped] == ["would read `trainer`, which nothing defines"]


@pytest.mark.parametrize(
    "src",
    [
        "def main():\n    trainer = make()\n    target()\n",
        "def main(trainer):\n    target()\n",
        "trainer = make()\n\n\ndef main():\n    target()\n",
        "def main():\n    def inner():\n        target()\n\n    trainer = make()\n    inner()\n",
        # Already unbound before the fix on the same paths: the fix adds no new failure.
        "import sys\nif sys.argv:\n    trainer = make()\ntrainer.fit()\ntarget()\n",
    ],
)
def test_fix_reading_bound_names_is_kept(use_rules, src: str) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"))
    result = fix_source(LIB + src)
    assert not result.dropped
    assert "trainer.dispatch.train()\n" in result.fixed


def test_star_import_turns_the_name_check_off(use_rules) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"))
    result = fix_source("from lightning import *\n\ntarget()\n")
    assert not result.dropped and "trainer.dispatch" in result.fixed


def test_only_the_fix_that_reads_an_unbound_name_is_dropped(use_rules) -> None:
    use_rules(_insert_before("RNF908", "trainer.dispatch.train()"), _swap("a", "b", "RNF904"))
    src = LIB + "a = b = 1\n\n\ndef main():\n    target()\n    trainer = make(a)\n"
    result = fix_source(src)
    assert result.fixed == src.replace("make(a)", "make(b)")
    assert [d.finding.code for d in result.dropped] == ["RNF908"]


def test_dropped_fixes_are_said_at_the_input_lines(use_rules) -> None:
    use_rules(
        _insert_before("RNF906", "prepare()"), _followup_rule(), _swap("train", "x", "RNF909")
    )
    # RNF909 flags the train() RNF907 inserts; x is undefined: it is dropped
    # where the input has the line train() was inserted next to.
    result = fix_source(LIB + "\ntarget()\n", Settings())
    assert "\ntrain()" in result.fixed
    # train is read on line 1 (bound there: fine) and in the inserted call.
    assert [(d.finding.code, d.finding.line) for d in result.dropped] == [("RNF909", 3)]
    [dropped] = result.dropped
    assert "`x`" in dropped.reason
