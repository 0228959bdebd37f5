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
nor be noise. The region finder (``regions.flag_parameter``) has already
checked that every training step is under the guard, that a call passes the
flag False and that the function switches no mode itself; a model whose
mode the file sets anywhere (around the calls, in the callers) is the
author's to manage and is left alone.
"""

from __future__ import annotations

import ast

from rnnfix.analysis.grads.gradctx import GradContexts, training_steps
from rnnfix.analysis.modes.regions import flag_parameter
from rnnfix.analysis.syntax.walks import (
    body_without_docstring,
    enclosing_stmt,
    suspends,
    walk_tree,
)
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.models import built_class, mode_receiver
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.effects import train_mode_effects
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.source.edits import AddImport, Edit, InsertStatements, WrapInWith


def flag_function_finding(
    ctx: FileContext, index: ModelIndex, func: ast.FunctionDef
) -> Finding | None:
    flag = flag_parameter(ctx, func)
    if flag is None:
        return None
    body = body_without_docstring(func)
    if not body:
        return None
    calls = {m: cs for m, cs in index.model_calls(body).items() if m not in ("self", "cls")}
    switched = _switched(ctx)
    models = [m for m in calls if _trained_module(ctx, index, m)]
    if not models or any(_related(m, r) for m in models for r in switched):
        # The file sets these models' modes somewhere (the callers, around
        # the calls): the author manages them; a flag switch would be noise.
        return None
    forwards = [site for m in models for site in calls[m]]
    names = ", ".join(f"`{m}`" for m in models)
    message = (
        f"`{func.name}` trains {names} only when `{flag}` is true, but never sets the mode "
        f"from it: called with `{flag}=False` it evaluates in train mode "
        f"({train_mode_effects(ctx, models)}) and builds a graph for every batch; call "
        f"`{models[0]}.train({flag})` first"
    )
    edits: list[Edit] = [
        InsertStatements(ctx.pos(body[0]), tuple(f"{m}.train({flag})" for m in models))
    ]
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    grad = GradContexts(ctx)
    stmts = {id(s): s for s in (enclosing_stmt(ctx.facts.parents, f) for f in forwards) if s}
    if all(grad.in_function(f) is None for f in forwards) and len(stmts) == 1:
        stmt = next(iter(stmts.values()))
        # Never around a ``yield``: the ``with`` would stay entered while the
        # generator is paused, turning grad off in its caller.
        if (
            not any(True for _ in training_steps(ctx, stmt))
            and stmt is not body[0]
            and not suspends([stmt])
        ):
            edits.append(WrapInWith(ctx.pos(stmt), ctx.pos(stmt), f"{t}.set_grad_enabled({flag})"))
            if torch is None:
                edits.append(AddImport("torch"))
            message += f" and `{t}.set_grad_enabled({flag})` around the forward"
    fix = Fix(tuple(edits), safe=True, description=f"set the mode from `{flag}`")
    return ctx.finding("RNF003", func, message, fix)


def _switched(ctx: FileContext) -> set[str]:
    found: set[str] = set()
    for n in walk_tree(ctx.tree):
        if isinstance(n, ast.Call) and module_mode_switch(n, lenient=True) is not None:
            recv = mode_receiver(n, ctx.facts.imports)
            if recv is not None:
                found.add(recv)
    return found


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


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
