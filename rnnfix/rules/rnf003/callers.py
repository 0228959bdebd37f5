"""Models an evaluation function is handed by callers in other files (issue
36.3): ``utils.py: def test_seg(model, loader): ... pred = model(points)``,
whose own file never shows what ``model`` is, called from
``train_semseg.py`` as ``test_seg(model, testdataloader, ...)`` with the
network it trains.

The rule of evidence: a parameter of a module-level function is a model when
every call of the function the run shows (the other files', through the
project index's reverse call index, ``analysis/project/callers.py``, and none
in its own file, whose calls the mode flow reads) passes in that position an
object its caller's file proves a torch module whose mode matters
(``ModelIndex.is_known_module``), and there is at least one such call. A call
that passes anything else, a file that names the function without calling it
(a callback) or a call rnnfix cannot follow keeps the parameter unknown. What
the callers do with the result decides the fix too: a caller that trains on
it makes the function no evaluation; a caller in a training iteration needs
the mode given back (``restore.py``).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.grads.escape import escapes
from rnnfix.analysis.grads.gradctx import gradient_uses, training_steps
from rnnfix.analysis.grads.valueflow import ValueFlow, written
from rnnfix.analysis.modes.regions import in_training_iteration
from rnnfix.analysis.project.bindings import stars
from rnnfix.analysis.project.callers import Argument, CallFact, CallsOut
from rnnfix.analysis.project.imported import imports_of
from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.analysis.project.tree import project_python_files
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    enclosing_stmt,
    innermost_loop,
    scope_of,
    walk_all_local,
    walk_local,
    walk_tree,
)
from rnnfix.analysis.torch.mode import Mode
from rnnfix.config.settings import Settings
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.rules.rnf003.modes import is_mode_free, is_stateless
from rnnfix.source.files import FileProblem, read_source

if TYPE_CHECKING:
    from rnnfix.analysis.project.view import Index


@dataclass(frozen=True)
class CallerModels:
    """The parameters every caller passes a model in, and what the callers
    do around the call."""

    params: tuple[str, ...]
    evaluated: frozenset[str]  # params every caller has in eval mode already
    in_training: bool  # a call runs in a training step's iteration


def caller_models(ctx: FileContext, func: ast.AST) -> CallerModels | None:
    """For a module-level function of ``ctx``'s file that its own file never
    calls or names: the parameters every call in the other files of the run
    passes a torch module in (at least one call); None when there are none,
    when a call cannot be seen, or when a caller trains on its result (then
    it is no evaluation)."""
    view = ctx.facts.project
    if (
        view is None
        or not isinstance(func, ast.FunctionDef)
        or ctx.facts.parents.get(func) is not ctx.tree
        or _named_in_file(ctx.tree, func)
    ):
        return None
    outside: tuple[str, ...] | None = ()
    if not ctx.settings.isolated:
        outside = project_python_files(os.path.dirname(os.path.abspath(ctx.path)))
    if outside is None:
        return None  # a project too large to read for one function's callers
    index = ctx.project
    assert index is not None  # a view has its index
    found = view.callers(func.name, lambda path: read_calls(path, index), outside)
    if found.unseen is not None or not found.calls:
        return None
    if any(c.result_trained or c.starred for c in found.calls):
        return None
    args = func.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    params: list[str] = []
    evaluated: set[str] = set()
    for i, name in enumerate(positional):
        passed = [_passed(c, i, name) for c in found.calls]
        if all(p is not None and p.module for p in passed):
            params.append(name)
            if all(p is not None and p.evaluated for p in passed):
                evaluated.add(name)
    if not params:
        return None
    return CallerModels(
        tuple(params), frozenset(evaluated), any(c.in_training for c in found.calls)
    )


def forwards_a_parameter(func: ast.FunctionDef) -> bool:
    """Some parameter is called in the body (``model(x)``,
    ``model.forward(x)``): a cheap necessary condition for ``caller_models``
    to matter, asked before RNF003 builds its judge."""
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args)}
    return any(_forward_of(n) in params for n in walk_all_local(func.body))


def _forward_of(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def parameter_forwards(body: list[ast.stmt], param: str) -> list[ast.Call]:
    """The calls in ``body`` that run the parameter ``param`` as a module."""
    found: list[ast.Call] = []
    for stmt in body:
        found += [
            n for n in walk_local(stmt) if isinstance(n, ast.Call) and _forward_of(n) == param
        ]
    return [n for n in found if isinstance(n, ast.Call)]


def may_have_caller_models(ctx: FileContext, node: ast.AST) -> bool:
    """A necessary condition, on the syntax, for the judge to find a model
    in ``node`` through ``caller_models``: beside RNF003's gate, which reads
    only the file."""
    return (
        ctx.project is not None
        and isinstance(node, ast.FunctionDef)
        and ctx.facts.parents.get(node) is ctx.tree
        and forwards_a_parameter(node)
    )


def _passed(call: CallFact, index: int, name: str) -> Argument | None:
    if index < len(call.positional):
        return call.positional[index]
    return call.keywords.get(name)


def _named_in_file(tree: ast.Module, func: ast.FunctionDef) -> bool:
    """The function's own file names it outside its definition (a call, a
    callback): those calls are the mode flow's, read another way."""
    inside = {id(n) for n in ast.walk(func)}
    return any(
        isinstance(n, ast.Name) and n.id == func.name and id(n) not in inside
        for n in walk_tree(tree)
    )


def read_calls(path: str, index: Index) -> CallsOut | None:
    """One file's calls of module-level functions of other files of the run,
    with what each passes, judged by the file's own evidence (the reverse
    call index's ``Reader``)."""
    try:
        source = read_source(Path(path))[1].text
        tree = ast.parse(source)
    except (FileProblem, OSError, SyntaxError, ValueError, RecursionError):
        return None
    if path not in index.files:
        # A project file beyond the run: judged with what it imports itself
        # (``from models import Net``), as a run of it alone would be.
        own = [Path(path), *map(Path, imports_of(path))]
        index = ProjectIndex.build(own)
    ctx = FileContext(source=source, tree=tree, settings=Settings(), path=path, project=index)
    view = ctx.facts.project
    if view is None or not view.bindings:
        return CallsOut()
    star = bool(stars(view.bindings))
    called: dict[int, ast.Call] = {}
    heads: list[ast.expr] = []  # names and attribute chains, outermost only
    below: set[int] = set()
    for n in walk_tree(tree):
        if isinstance(n, ast.Call):
            called[id(n.func)] = n
        elif isinstance(n, ast.Attribute):
            below.add(id(n.value))
    for n in walk_tree(tree):
        if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in below:
            root: ast.expr = n
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and (root.id in view.bindings or star):
                heads.append(n)
    calls: dict[tuple[str, str], list[CallFact]] = {}
    referenced: set[tuple[str, str]] = set()
    unresolved: set[str] = set()
    reader: _CallReader | None = None
    for head in heads:
        if isinstance(head, ast.Name) and not isinstance(head.ctx, ast.Load):
            continue
        target = view.definition_of(head)
        if target is False:
            continue
        last = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
        if target is None or isinstance(target, bool):
            unresolved.add(last)
            continue
        file, names = target
        if len(names) != 1:
            continue  # a method or a class: not a module-level function
        key = (file, names[0])
        call = called.get(id(head))
        if call is None:
            referenced.add(key)
            continue
        if reader is None:
            reader = _CallReader(ctx)
        calls.setdefault(key, []).append(reader.fact(call))
    return CallsOut(
        {k: tuple(v) for k, v in calls.items()}, frozenset(referenced), frozenset(unresolved)
    )


class _CallReader:
    """What one file's calls pass and do, read with its analyses (built at
    the first call into another file)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.models = ModelIndex(ctx, extra=ctx.facts.modes.models)
        self.flow = ValueFlow(ctx)
        self._trains: dict[ast.AST, bool] = {}  # scope -> runs a training step

    def fact(self, call: ast.Call) -> CallFact:
        starred = any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        )
        return CallFact(
            tuple(self._argument(call, a) for a in call.args),
            {k.arg: self._argument(call, k.value) for k in call.keywords if k.arg is not None},
            starred,
            self._between_steps(call),
            self._result_trained(call),
        )

    def _between_steps(self, call: ast.Call) -> bool:
        """The call runs between training steps: in a step's iteration, or
        in a loop of a scope that trains (validation after each epoch's
        batch loop). An ``eval()`` in the callee must then give the mode back:
        the caller's next steps would run in eval otherwise, and a caller
        beyond the run gets no ``train()`` of RNF001's."""
        if in_training_iteration(self.ctx, call):
            return True
        parents = self.ctx.facts.parents
        if innermost_loop(parents, call) is None:
            return False
        scope = scope_of(parents, call)
        if scope not in self._trains:
            self._trains[scope] = next(training_steps(self.ctx, scope), None) is not None
        return self._trains[scope]

    def _argument(self, call: ast.Call, expr: ast.expr) -> Argument:
        text = dotted(expr)
        if text is None or not self.models.is_known_module(text):
            return Argument(False, False)
        if is_stateless(self.ctx, text) or is_mode_free(self.ctx, text):
            return Argument(False, False)  # its mode changes nothing
        receivers = self.ctx.facts.receivers
        if any(receivers.check(text, m, call).reason is not None for m in ("eval", "train")):
            # Its class overrides train()/eval() (or the caller's file shows
            # another reason no mode call may go on it): the helper's fix would
            # call them on it, and ``def train(self)`` takes no mode.
            return Argument(False, False)
        facts = self.ctx.facts.modes.mode_before(call, text).facts
        evaluated = bool(facts) and all(f.mode is Mode.EVAL for f in facts)
        return Argument(True, evaluated)

    def _result_trained(self, call: ast.Call) -> bool:
        """The call's result reaches a gradient use of the caller, or leaves
        the caller's function for code that may differentiate it."""
        parents = self.ctx.facts.parents
        stmt = enclosing_stmt(parents, call)
        if stmt is None:
            return True
        if any(call in set(ast.walk(u)) for u in gradient_uses(self.ctx, stmt)):
            return True
        scope = scope_of(parents, stmt)
        seeds = written([stmt])
        if seeds and self.flow.reaches_gradient_use([stmt], scope, seeds):
            return True
        if not isinstance(scope, FUNCTIONS):
            return False  # a script's globals are the script's
        return bool(
            escapes(
                scope,
                [stmt],
                lambda c: c is call,
                lambda _: False,
                self.ctx.facts.imports.qualname,
            )
        )
