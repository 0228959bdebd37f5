"""RNF003 for a function shared by training and evaluation through a flag.

``def iteration(self, epoch, loader, train=True)`` runs the model on every
batch and its training step only under ``if train:``; ``test()`` calls it
with ``train=False`` (codertimo/BERT-pytorch, ``bert_pytorch/trainer/
pretrain.py``, ``BERTTrainer.iteration``). Nothing sets the mode or the grad
mode from the flag: the evaluation pass runs with dropout on and builds a
graph for every batch. The fix says what the flag already means:
``self.model.train(train)`` at the head of the function and
``torch.set_grad_enabled(train)`` around the forward.

Only for a model the function trains: its forward outside the flag's guard,
and a module the file shows (``ModelIndex.is_known_module``) or one built
from a module class whose parameters an optimizer of the file holds
(``Adam(self.model.parameters())``): ``train(flag)`` on it can neither fail
nor be noise. The region finder (``flagparams.flag_parameter``) has already
checked that every training step is under the guard and that a call turns
the flag off (``False``, a string such as ``"valid"`` for ``mode ==
"train"``, or the caller's own flag when its callers turn that off); the
mode of a model the file sets anywhere else (around the calls, in the
callers) is the author's to manage and is left alone.

When the function sets the modes itself, each switch under the flag (``if
mode == "train": model.train() else: model.eval()``: fairseq's
``pitch_predictor.run_epoch``), or the file sets them elsewhere (the
annotated transformer's ``model.eval()`` before ``run_epoch(...,
mode="eval")``), only the grad mode can be missing: the statements from the
first forward to the last get ``torch.set_grad_enabled(<flag>)``, nothing
else.
"""

from __future__ import annotations

import ast

from rnnfix.analysis.grads.escape import escapes
from rnnfix.analysis.grads.gradctx import GradContexts, training_steps
from rnnfix.analysis.grads.valueflow import ValueFlow, written
from rnnfix.analysis.modes.flagparams import FlagParam, off_calls, only_when_training
from rnnfix.analysis.modes.regions import flag_parameter, in_training_iteration
from rnnfix.analysis.syntax.names import dotted, is_below
from rnnfix.analysis.syntax.scopes import bind_arguments
from rnnfix.analysis.syntax.walks import (
    block_of,
    body_without_docstring,
    enclosing_stmt,
    scope_of,
    statement_runs,
    suspends,
    walk_local,
    walk_tree,
)
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import built_class, mode_receiver
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.effects import train_mode_effects
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.source.edits import AddImport, Edit, InsertStatements, ReplaceExpression, WrapInWith


def flag_function_finding(
    ctx: FileContext, index: ModelIndex, func: ast.FunctionDef
) -> Finding | None:
    flag = flag_parameter(ctx, func)
    if flag is None:
        return None
    body = body_without_docstring(func)
    if not body:
        return None
    if flag.reads_mode:
        return _mode_flag_finding(ctx, func, body, flag)
    parents = ctx.facts.parents
    calls = {
        m: cs
        for m, cs in index.model_calls(body).items()
        if m not in ("self", "cls")
        # run on the off path too: an augmentation applied to training
        # batches only (denoiser's ``self.augment``) is never evaluated
        and not all(only_when_training(parents, c, func, flag) for c in cs)
    }
    models = [m for m in calls if _trained_module(ctx, index, m)]
    if not models:
        return None
    # The file sets these models' modes somewhere else (the callers, around
    # the calls: the annotated transformer's ``model.eval()`` before
    # ``run_epoch(..., mode="eval")``): the author manages the modes, and a
    # flag switch would be noise; only the grad mode may be missing.
    forced = {id(c) for c in flag.forced}
    callers_set = not flag.sets_modes and any(
        _related(m, r) for m in models for r in _switched(ctx, forced)
    )
    if callers_set and not _off_with_grad(ctx, func, flag):
        return None  # every evaluating call runs under the caller's ``no_grad``
    forwards = [site for m in models for site in calls[m]]
    names = ", ".join(f"`{m}`" for m in models)
    expr = flag.expr
    when = f"`{expr}` is true" if expr == flag.name else f"`{expr}`"
    if flag.inverted:
        called = f"called with `{flag.name}=True`"
    elif expr == flag.name:
        called = f"called with `{expr}=False`"
    elif expr == f"{flag.name} is not None":
        called = f"called without `{flag.name}`"
    else:
        called = f"called with another `{flag.name}`"
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    edits: list[Edit] = []
    if flag.sets_modes or callers_set:
        sets = "sets the mode from it" if flag.sets_modes else "its callers set the mode"
        message = (
            f"`{func.name}` trains {names} only when {when} and {sets}, "
            f"but not the grad mode: {called} it builds a graph for every batch"
        )
    else:
        never = (
            "puts it in train mode whatever the flag"
            if flag.forced
            else "never sets the mode from it"
        )
        message = (
            f"`{func.name}` trains {names} only when {when}, but {never}: "
            f"{called} it evaluates in train mode "
            f"({train_mode_effects(ctx, models)}) and builds a graph for every batch; call "
            f"`{models[0]}.train({expr})` {'instead' if flag.forced else 'first'}"
        )
        edits.extend(_mode_edits(ctx, flag, models, body[0]))
    span = _grad_span(ctx, func, body, forwards)
    if span is not None:
        first, last = span
        edits.append(WrapInWith(ctx.pos(first), ctx.pos(last), f"{t}.set_grad_enabled({expr})"))
        if torch is None:
            edits.append(AddImport("torch"))
        message += (
            f"; run the forward under `{t}.set_grad_enabled({expr})`"
            if flag.sets_modes or callers_set
            else f" and `{t}.set_grad_enabled({expr})` around the forward"
        )
    elif flag.sets_modes or callers_set:
        # The forwards sit in several blocks (one per model family, TranAD's
        # ``backprop``): no one ``with`` holds them. The file's calls that
        # turn the flag off can take ``no_grad`` instead, when what they give
        # back feeds no training step.
        grad = GradContexts(ctx)
        set_here = any(grad.in_function(f) is not None for f in forwards)
        sites = [] if set_here else _off_call_statements(ctx, func, flag)
        if not sites:
            return None  # the modes are the author's, and grad is set or cannot be set here
        for first, last in statement_runs(ctx.facts.parents, sites):
            edits.append(WrapInWith(ctx.pos(first), ctx.pos(last), f"{t}.no_grad()"))
        if torch is None:
            edits.append(AddImport("torch"))
        lines = ", ".join(str(stmt.lineno) for stmt in sites)
        message += (
            f"; run its calls on line{'s' if len(sites) > 1 else ''} {lines} under `{t}.no_grad()`"
        )
    fix = Fix(tuple(edits), safe=True, description=f"set the mode from `{expr}`")
    return ctx.finding("RNF003", func, message, fix)


def _mode_flag_finding(
    ctx: FileContext, func: ast.FunctionDef, body: list[ast.stmt], flag: FlagParam
) -> Finding | None:
    """``if model.training:`` around the step (``flagparams.mode_flag``): the
    caller's ``eval()`` chooses the evaluation path, so the mode is right and
    only the grad mode is missing: ``torch.set_grad_enabled(model.training)``
    around the forwards. Never where a value they compute leaves the
    function with its graph (returned, stored): a caller may differentiate
    it, and then the fix is reported, not made."""
    model = flag.name
    grad = GradContexts(ctx)
    called = [n for n in walk_tree(ctx.tree) if isinstance(n, ast.Call) and _name(n) == func.name]
    if called and all(
        grad.in_function(c) == "off" or _trains_at(ctx, func, model, c) for c in called
    ):
        # ``model.eval(); with torch.no_grad(): run_epoch(...)``: every call
        # that may evaluate already runs with grad off.
        return None
    forwards = [
        n
        for s in body
        for n in walk_local(s)
        if isinstance(n, ast.Call) and dotted(n.func) in (model, f"{model}.forward")
    ]
    span = _grad_span(ctx, func, body, forwards)
    if span is None:
        return None  # grad is set already, or cannot be set in one place
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    message = (
        f"`{func.name}` trains `{model}` only when `{flag.expr}` and evaluates otherwise, "
        f"but never sets the grad mode: run in eval mode it builds a graph for every batch; "
        f"run the forward under `{t}.set_grad_enabled({flag.expr})`"
    )

    def is_forward(call: ast.Call) -> bool:
        return any(call is f for f in forwards)

    leaving = escapes(func, body, is_forward, model.__eq__, ctx.facts.imports.qualname)
    if leaving:
        return ctx.finding(
            "RNF003",
            func,
            f"{message}; not fixed: a value it computes is {leaving[0].how} (line "
            f"{getattr(leaving[0].node, 'lineno', '?')}), and a caller may differentiate it",
        )
    first, last = span
    edits: list[Edit] = [
        WrapInWith(ctx.pos(first), ctx.pos(last), f"{t}.set_grad_enabled({flag.expr})")
    ]
    if torch is None:
        edits.append(AddImport("torch"))
    fix = Fix(tuple(edits), safe=True, description=f"set the grad mode from `{flag.expr}`")
    return ctx.finding("RNF003", func, message, fix)


def _mode_edits(ctx: FileContext, flag: FlagParam, models: list[str], head: ast.stmt) -> list[Edit]:
    """``<model>.train(<flag>)`` for each model: the author's unconditional
    ``train()`` on it (or on an object holding it) takes the flag; a model
    no such call covers gets one at the head of the function."""
    edits: list[Edit] = []
    covered: list[str] = []
    for call in flag.forced:
        receiver = mode_receiver(call, ctx.facts.imports)
        if receiver is None or not isinstance(call.func, ast.Attribute):
            continue
        switch = f"{ctx.segment(call.func.value)}.train({flag.expr})"
        edits.append(ReplaceExpression(ctx.pos(call), ctx.end_pos(call), switch))
        covered.append(receiver)
    rest = tuple(
        f"{m}.train({flag.expr})" for m in models if not any(is_below(m, r) for r in covered)
    )
    if rest:
        edits.append(InsertStatements(ctx.pos(head), rest))
    return edits


def _grad_span(
    ctx: FileContext, func: ast.FunctionDef, body: list[ast.stmt], forwards: list[ast.Call]
) -> tuple[ast.stmt, ast.stmt] | None:
    """The statements ``torch.set_grad_enabled(flag)`` can go around: from
    the first to the last statement that runs a forward, in one block (not the
    function's first statement, where the mode switch goes), when grad is not
    set anywhere on their way up and the span runs no training step and
    holds no ``yield`` (the ``with`` would stay entered while the generator
    is paused, turning grad off in its caller)."""
    grad = GradContexts(ctx)
    if not forwards or any(grad.in_function(f) is not None for f in forwards):
        return None
    parents = ctx.facts.parents
    found_stmts = [enclosing_stmt(parents, f) for f in forwards]
    if any(s is None for s in found_stmts):
        return None
    stmts = list({id(s): s for s in found_stmts if s is not None}.values())
    blocks = [block_of(parents, s) for s in stmts]
    if any(b is None for b in blocks) or len({id(b[0]) for b in blocks if b}) != 1:
        return None
    found = blocks[0]
    assert found is not None
    block = found[0]
    indexes = sorted(block.index(s) for s in stmts)
    span = block[indexes[0] : indexes[-1] + 1]
    if span[0] is body[0] or suspends(span):
        return None
    if any(True for s in span for _ in training_steps(ctx, s)):
        return None
    return span[0], span[-1]


def _off_call_statements(
    ctx: FileContext, func: ast.FunctionDef, flag: FlagParam
) -> list[ast.stmt]:
    """The statements of the file's calls that turn the flag off, each a
    plain statement (``loss, y_pred = backprop(..., training=False)``) that
    runs with grad on, outside any training iteration, whose results reach
    no gradient use and do not leave a function; [] unless every such call
    is one (a call rnnfix cannot wrap keeps the finding without this fix)."""
    grad = GradContexts(ctx)
    flow = ValueFlow(ctx)
    parents = ctx.facts.parents
    out: list[ast.stmt] = []
    for call in off_calls(ctx, func, flag):
        if grad.in_function(call) == "off":
            continue  # already under the caller's ``no_grad``
        stmt = enclosing_stmt(parents, call)
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) or stmt in out:
            return []
        value = stmt.value
        if value is not call and not (isinstance(value, ast.Await) and value.value is call):
            return []  # the call inside a larger expression: wrap by hand
        if in_training_iteration(ctx, stmt) or block_of(parents, stmt) is None:
            return []
        scope = scope_of(parents, stmt)
        seeds = written([stmt])
        if flow.reaches_gradient_use([stmt], scope, seeds):
            return []
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            isinstance(scope, ast.AsyncFunctionDef) or flow.escapes([stmt], scope, seeds)
        ):
            return []
        out.append(stmt)
    return out


def _off_with_grad(ctx: FileContext, func: ast.FunctionDef, flag: FlagParam) -> bool:
    """A call that turns the flag off runs where the file does not turn grad
    off (``with torch.no_grad(): run_epoch(..., "eval")`` is right as it is)."""
    grad = GradContexts(ctx)
    return any(grad.in_function(c) not in ("off", "unknown") for c in off_calls(ctx, func, flag))


def _switched(ctx: FileContext, skip: set[int]) -> set[str]:
    """The receivers of the file's mode calls, but those in ``skip`` (ids)."""
    found: set[str] = set()
    for n in walk_tree(ctx.tree):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Call) and module_mode_switch(n, lenient=True) is not None:
            recv = mode_receiver(n, ctx.facts.imports)
            if recv is not None:
                found.add(recv)
    return found


def _trains_at(ctx: FileContext, func: ast.FunctionDef, model: str, call: ast.Call) -> bool:
    """The model ``call`` hands ``func`` (for ``model``, a parameter of it)
    is in train mode there, on every path: the call trains."""
    a = func.args
    params = [p.arg for p in [*a.posonlyargs, *a.args]]
    kwonly = [p.arg for p in a.kwonlyargs]
    root, _, rest = model.partition(".")
    if root not in params + kwonly:
        return False
    is_method = bool(params) and params[0] in ("self", "cls")
    passed = bind_arguments(params, kwonly, is_method, call).get(root)
    if passed is None:
        return False
    facts = ctx.facts.modes.mode_before(call, f"{passed}.{rest}" if rest else passed).facts
    return bool(facts) and all(f.mode is Mode.TRAIN for f in facts)


def _name(call: ast.Call) -> str | None:
    """The name a call calls: ``f`` of ``f(...)`` and of ``obj.f(...)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _related(a: str, b: str) -> bool:
    return is_below(a, b) or is_below(b, a)


def _trained_module(ctx: FileContext, index: ModelIndex, model: str) -> bool:
    """A module of the file, or one built from a module class (of this file,
    a library or another file of the run) whose ``parameters()`` the file
    passes to an optimizer."""
    if index.is_known_module(model):
        return True
    flow = ctx.facts.modes
    info = flow.model_info(model)
    if info is None or info.built_at is None:
        return False
    if built_class(info.built_at, flow.imports, flow.classes) is None:
        return False
    return flow.optimizers.built_over(model)
