"""Which modes can reach a training step that runs only when a flag is true.

``def iteration(self, epoch, loader, train=True)`` runs its training step
only under ``if train:``; ``test()`` calls it with ``train=False`` after
``self.model.eval()``, ``train()`` with the flag left true after
``self.model.train()``. The mode flow joins every caller's mode into the
function's entry, so the eval mode of the test pass seems to reach the step.
It cannot: a call that passes the flag False never runs the step. Dropping
the modes that arrive only through such calls keeps RNF001 from reporting
(or, once the callers stop setting modes, fixing) a step that is right.

A string flag counts too: a step under ``if mode == "train":`` (or
``mode == "train" or mode == "train+log"``) never runs for a call that
passes ``mode="eval"``; so does an evaluation flag: a step under ``if not
cross_valid:`` never runs for a call that passes ``cross_valid=True``.

Only the in-file callers are read: when a function of that name is called
from another file of the run, nothing is dropped (what runs before those
calls is unknown).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from rnnfix.analysis.modes.flagparams import (
    evaluation_guard,
    flag_of,
    passes_false,
    passes_true,
    string_guard,
    switched_off_by_argument,
    turns_off,
)
from rnnfix.analysis.modes.modeflow import ModeFact, ModeFlow
from rnnfix.analysis.modes.records import TrainingStep
from rnnfix.analysis.syntax.walks import FUNCTIONS, scope_of, walk_local
from rnnfix.analysis.torch.api import module_mode_switch


def reaching_through_flag(
    flow: ModeFlow,
    step: TrainingStep,
    model: str,
    facts: list[ModeFact],
    elsewhere: Callable[[], bool],
) -> list[ModeFact]:
    """``facts`` (modes of ``model`` at ``step``) without the entry facts
    that only calls passing the step's guarding flag False bring in.
    ``elsewhere()``: a function of the step function's name is called from
    another file of the run (then every fact stays); asked last, since it
    reads the other files."""
    fn = step.function
    if not isinstance(fn, ast.FunctionDef):
        return facts
    off: Callable[[ast.Call], bool]
    flag = flag_of(fn)
    if flag is not None and _only_when_true(flow, step.node, fn, flag[0]):
        name, default, position = flag

        def off(call: ast.Call) -> bool:
            return passes_false(call, name, position, default)
    elif (evaluating := evaluation_guard(flow.parents, step.node, fn)) is not None:
        # ``if not cross_valid:`` (conv-tasnet's ``_run_one_epoch``): a call
        # passing ``cross_valid=True`` never runs the step.
        name = evaluating

        def off(call: ast.Call) -> bool:
            return passes_true(call, fn, name)
    else:
        # ``if mode == "train" or mode == "train+log":`` (the annotated
        # transformer's ``run_epoch``): a call passing ``mode="eval"`` never
        # runs the step either.
        guard = string_guard(flow.ctx, step.node, fn)
        if guard is None:
            return facts

        def off(call: ast.Call) -> bool:
            return turns_off(flow.ctx, call, fn, guard)

    if elsewhere():
        return facts
    live: set[ast.AST] = set()
    dead: set[ast.AST] = set()
    for call, state in flow.entry_states(fn, model):
        causes = dead if off(call) else live
        causes.update(_cause(f) for f in state.facts)
    return [
        f
        for f in facts
        if f.origin is not fn or f.cause is None or f.cause not in dead or f.cause in live
    ]


def _cause(fact: ModeFact) -> ast.AST:
    """What set the mode, as an entry fact of the callee names it
    (``FilePass._entry``): the caller's own origin, or the cause it carries
    when it is itself an entry fact."""
    if isinstance(fact.origin, (*FUNCTIONS, ast.Module)) and fact.cause is not None:
        return fact.cause
    return fact.origin


def _only_when_true(flow: ModeFlow, node: ast.AST, fn: ast.AST, name: str) -> bool:
    """``node`` runs only in the body of an ``if`` whose test is ``name``
    itself, or an ``and`` with ``name`` as one operand."""
    child: ast.AST = node
    cur = flow.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, ast.If) and child in cur.body and _true_test(cur.test, name):
            return True
        child, cur = cur, flow.parents.get(cur)
    return False


def _true_test(test: ast.expr, name: str) -> bool:
    if isinstance(test, ast.Name):
        return test.id == name
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_true_test(v, name) for v in test.values)
    return False


def set_only_when_asked(flow: ModeFlow, fact: ModeFact) -> bool:
    """The mode of ``fact`` comes from a call of a function of this file
    (``self.predict(x, training=True)``) whose every mode switch sits under an
    ``if`` on a boolean parameter that the call's argument turns off (``if
    not training: self.model.eval()``): that call switches nothing. Only
    when the function switches modes itself, calling no other function of
    the file (what those would do is not read per call)."""
    call = fact.origin
    if not isinstance(call, ast.Call):
        return False
    scope = scope_of(flow.parents, call)
    res = flow.resolve(call, scope if isinstance(scope, FUNCTIONS) else None)
    callee = res.callee.node if res is not None else None
    if not isinstance(callee, ast.FunctionDef):
        return False
    switches: list[ast.Call] = []
    for node in walk_local(callee):
        if not isinstance(node, ast.Call):
            continue
        if module_mode_switch(node) is not None:
            switches.append(node)
        elif flow.resolve(node, callee) is not None:
            return False
    return switched_off_by_argument(call, callee, switches)
