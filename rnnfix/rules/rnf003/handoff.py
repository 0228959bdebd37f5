"""A model handed to an object rnnfix cannot read, which the loop around an
evaluation runs again: it may train the model there.

``svi = SVI(vae.model, vae.guide, optim)`` (Pyro), ``trainer = Trainer(net)``,
``engine = create_engine(net, opt)``: the training step is a method of
another library's object. RNF001 never sees it, so it never puts ``train()``
back at the loop head; an ``eval()`` that RNF003 inserts in the epoch loop's
evaluation would then hold for every later epoch's training (Dropout off,
BatchNorm statistics frozen). Such an evaluation is reported, not fixed.

The hand-off: the model, or an attribute of it (a bound method such as
``vae.model``, a submodule), is an argument of a call that is neither a
function of this file (its summary says what it does), nor torch's, nor a
builtin, nor a table wrapper. It counts only when the loop around the
evaluation runs it again outside the evaluation: the call itself, or a
method of the name its result was bound to (``svi.step(x)``).
"""

from __future__ import annotations

import ast

from rnnfix.analysis.syntax.names import BUILTINS, dotted
from rnnfix.rules.base import FileContext

_HARMLESS_ROOTS = ("torch.", "copy.", "numpy.", "logging.", "os.", "math.", "time.")


def trainer_handoff(
    ctx: FileContext, region: ast.AST, scope: ast.AST, model: str
) -> ast.Call | None:
    """The call that hands ``model`` to an unknown object the loop around
    ``region`` runs again, or None."""
    loops = _enclosing_loops(ctx, region, scope)
    if not loops:
        return None
    inside = {id(n) for n in ast.walk(region)}
    defined = _local_definitions(ctx.tree)
    for call in ast.walk(scope):
        if not isinstance(call, ast.Call) or id(call) in inside:
            continue
        if not any(_names_model(a, model) for a in _arguments(call)):
            continue
        if _known(ctx, call, defined):
            continue
        holders = _bound_to(ctx, call)
        for loop in loops:
            if _runs_again(loop, inside, call, holders):
                return call
    return None


def _enclosing_loops(ctx: FileContext, node: ast.AST, scope: ast.AST) -> list[ast.stmt]:
    parents = ctx.facts.parents
    out: list[ast.stmt] = []
    cur = parents.get(node)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            out.append(cur)
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
        cur = parents.get(cur)
    return out


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _names_model(arg: ast.expr, model: str) -> bool:
    """``vae`` or ``vae.model``; not ``vae.parameters()`` (a call's result)."""
    if isinstance(arg, ast.Starred):
        arg = arg.value
    name = dotted(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
    return name is not None and (name == model or name.startswith(model + "."))


def _local_definitions(tree: ast.Module) -> frozenset[str]:
    return frozenset(
        n.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )


def _known(ctx: FileContext, call: ast.Call, defined: frozenset[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Name) and (func.id in defined or func.id in BUILTINS):
        return True
    if isinstance(func, ast.Attribute) and func.attr in defined:
        return True  # ``self.train_epoch(model)``, ``utils.evaluate(model)``: summarised
    qualname = ctx.facts.imports.qualname(func)
    if qualname is None:
        return False
    return qualname.startswith(_HARMLESS_ROOTS) or qualname in BUILTINS


def _bound_to(ctx: FileContext, call: ast.Call) -> frozenset[str]:
    parent = ctx.facts.parents.get(call)
    if isinstance(parent, ast.Assign) and parent.value is call:
        return frozenset(name for t in parent.targets if (name := dotted(t)) is not None)
    return frozenset()


def _runs_again(
    loop: ast.stmt, inside: set[int], handoff: ast.Call, holders: frozenset[str]
) -> bool:
    for n in ast.walk(loop):
        if id(n) in inside:
            continue
        if n is handoff:
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and holders:
            receiver = dotted(n.func.value)
            if receiver is not None and receiver in holders:
                return True
    return False
