"""RNF002: ``model.module.train()`` on a data-parallel wrapper."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rnnfix.analysis.project.index import called_from_other_files
from rnnfix.analysis.ruletext import may_call_module_mode
from rnnfix.analysis.syntax.names import dotted, method_call
from rnnfix.analysis.syntax.scopes import bind_arguments
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.returns import ReturnFacts
from rnnfix.rules.base import FileContext, Finding, Fix, Rule
from rnnfix.source.edits import ReplaceExpression


class WrapperModeViaModule(Rule):
    code = "RNF002"
    name = "wrapper-mode-via-module"
    summary = "Mode set on `wrapper.module` instead of the DataParallel/DDP wrapper"
    fix_safety = "safe"
    docs = """
## What it does
Finds `model.module.train()`, `model.module.eval()` and `model.module.train(False)`
where `model` is a `DataParallel`, `DistributedDataParallel` or
`FullyShardedDataParallel` wrapper, and calls the method on the wrapper instead.

## Why is this bad?
`Module.train()` sets `training` on a module and all its children. Called on
`model.module`, it reaches every layer, and DataParallel/DDP take their
replicas' mode from the inner module, so dropout, BatchNorm and RNNs do run in
the mode you asked for. But the wrapper's own `model.training` flag is left
stale: every piece of code that reads it (your own `if model.training:`
branches, loggers, callbacks, trainers, and FSDP in two places) sees the old
mode. It does not by itself cause cuDNN's "RNN backward can only be called in
training mode" error.

## Example
```python
model = nn.DataParallel(net)
model.module.train()
```

## Use instead
```python
model = nn.DataParallel(net)
model.train()
```

## Fix safety
Safe when `model` is provably a wrapper (assigned from one of the wrapper
classes above, under any import alias, in the same scope or, for `self.x`, in
the same class): `model.train()` sets the same layers' mode and also the
wrapper's flag. The wrapper may reach `model` through a helper, of this file
or of another file of the run, that returns one on every path (`model =
build_parallel(cfg)`, `self.model = self.load_model(path)`) or that returns
its argument unchanged (`model = to_cuda(nn.DataParallel(net))` where
`to_cuda` returns `m.cuda()`). A parameter of a module-level function is a
wrapper when every call of that function passes one (`validate(model,
loader)` after `model = nn.DataParallel(net)`), the function is used no
other way in the file, and no other file of the run calls a function of its
name. Otherwise, when `model` is never assigned where it is used (a
parameter), the fix is unsafe: the object may define a `module` attribute of
its own. Left alone: objects assigned from anything else, such as an EMA
helper, a local class with `self.module`, `torch.compile(...)` (another
object), a call that is not known, or a helper that wraps only on some paths
(`if n_gpu > 1: model = nn.DataParallel(model)`; `return model`); and
`self.module` inside a class.

Also left alone: a wrapper around a class (of this file, or of another file of
the run) that overrides `train`/`eval` in a form the wrapper cannot call: `def
train(self):` without `mode`, a `train(self, data, epochs)` training loop, an
`eval(self, expr)`, or a class holding such a submodule. The wrapper's
`train()` calls `module.train(mode)` (and its `eval()` calls `train(False)`),
which fails with `TypeError` there; `model.module.train()` is the only call
that works, so it is not a bug. Calls that are not mode switches by their
arguments (`model.module.train(batches, optimizer)`) are another method and
are never rewritten.
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not may_apply(ctx.source):
            return
        scopes = _Scopes(ctx)
        for node in walk_tree(ctx.tree):
            call = method_call(node)
            if call is None:
                continue
            receiver, method = call
            if method not in ("train", "eval") or not isinstance(node, ast.Call):
                continue
            if not (isinstance(receiver, ast.Attribute) and receiver.attr == "module"):
                continue
            if module_mode_switch(node) is None:
                continue  # ``m.module.train(batches, opt)``: another method named ``train``
            owner = dotted(receiver.value)
            if owner is None or owner == "self":
                continue  # a wrapper's own code, or not a plain name/attribute path
            verdict = scopes.origin(owner, node)
            if verdict == "other":
                continue
            if ctx.facts.receivers.check(owner, "eval" if method == "eval" else "train").override:
                # The wrapped class overrides ``train``/``eval`` in a form the
                # wrapper's ``train()`` cannot call (``def train(self):``):
                # ``owner.module.train()`` is the only call that works.
                continue
            safe = verdict == "wrapper"
            call_text = f"{owner}.{method}({_args_text(ctx, node)})"
            message = (
                f"`{owner}.module.{method}(...)` sets the layers' mode but leaves "
                f"`{owner}.training` stale for code that reads it; call `{call_text}` "
                "on the wrapper"
            )
            if not safe:
                message += f" (`{owner}` is not provably a data-parallel wrapper here)"
            edit = ReplaceExpression(ctx.pos(receiver), ctx.end_pos(receiver), owner)
            yield ctx.finding(
                self.code, node, message, Fix((edit,), safe=safe, description=f"use `{call_text}`")
            )


def may_apply(source: str) -> bool:
    """A necessary condition for a finding, from the text: every finding is a
    call ``<owner>.module.train(...)``/``.eval(...)`` (its receiver is the
    attribute ``module``), which ``may_call_module_mode`` looks for with any
    spacing; ``.module.`` as written is what this rule has always required."""
    return ".module." in source and may_call_module_mode(source)


def _args_text(ctx: FileContext, call: ast.Call) -> str:
    parts = [ctx.segment(a) for a in call.args]
    parts += [
        f"{k.arg}={ctx.segment(k.value)}" if k.arg else f"**{ctx.segment(k.value)}"
        for k in call.keywords
    ]
    return ", ".join(parts)


class _Scopes:
    """Where each dotted name is assigned, per scope: a function's own body, the
    module, or (for ``self.x``) every method of the enclosing class."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        view = ctx.facts.project
        # Values that reach the name through a helper: ``to_cuda(DataParallel(net))``,
        # ``self.load_model(path)``, a factory in another file of the run.
        self.values = ReturnFacts(
            ctx.tree, ctx.facts.imports, view.returns if view is not None else None
        )

    def origin(self, owner: str, use: ast.AST, depth: int = 0) -> str:
        """ "wrapper", "other" (assigned from something else in scope) or
        "unknown". A parameter of a function is a wrapper when every caller
        passes one (``_callers_wrap``, ``depth`` levels of callers up)."""
        scope = self._scope_for(owner, use)
        verdicts = set()
        for node in ast.walk(scope):
            for target, value in _assignments(node):
                if dotted(target) == owner:
                    verdicts.add("wrapper" if self._is_wrapper(value) else "other")
                elif isinstance(target, (ast.Tuple, ast.List)):
                    # ``model, optimizer = setup(cfg)``: only a proof counts
                    # (an unpacked value is otherwise unknown, as before).
                    for i, element in enumerate(target.elts):
                        if dotted(element) == owner and self.values.is_wrapper_item(value, i):
                            verdicts.add("wrapper")
        if "wrapper" in verdicts:
            return "wrapper"
        if "other" in verdicts:
            return "other"
        if (
            depth < 2
            and isinstance(scope, ast.FunctionDef)
            and self._callers_wrap(scope, owner, depth)
        ):
            return "wrapper"
        return "unknown"

    def _callers_wrap(self, fn: ast.FunctionDef, owner: str, depth: int) -> bool:
        """``owner`` is a parameter of the module-level function ``fn``, and
        every caller rnnfix can see passes a proven wrapper there
        (``validate(model, loader)`` after ``model = DataParallel(net)``): no
        other file of the run calls a function of its name, and it is used no
        other way than by calls in this file (``callbacks=[validate]`` could
        hand it anything)."""
        if owner not in _parameters(fn) or not isinstance(
            self.ctx.facts.parents.get(fn), ast.Module
        ):
            return False
        a = fn.args
        if a.vararg is not None or a.kwarg is not None or owner in {x.arg for x in a.posonlyargs}:
            return False
        params = [x.arg for x in a.args]
        kwonly = [x.arg for x in a.kwonlyargs]
        sites: list[ast.Call] = []
        called: set[int] = set()
        for n in nodes_of(self.ctx.tree, ast.Call):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name:
                sites.append(n)
                called.add(id(n.func))
        for n in nodes_of(self.ctx.tree, ast.Name):
            if isinstance(n, ast.Name) and n.id == fn.name and id(n) not in called:
                return False  # passed on as a value, or rebound
        if not sites or called_from_other_files(self.ctx, fn.name):
            return False
        for site in sites:
            arg = bind_arguments(params, kwonly, False, site).get(owner)
            if arg is None or self.origin(arg, site, depth + 1) != "wrapper":
                return False
        return True

    def _scope_for(self, owner: str, use: ast.AST) -> ast.AST:
        want_class = owner.startswith("self.")
        for anc in self.ctx.facts.ancestors(use):
            if want_class and isinstance(anc, ast.ClassDef):
                return anc
            if not want_class and isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # A wrapper built at module level and used inside a function is
                # common (scripts); look at the module when the function does
                # not bind the name itself (as a parameter or by assignment).
                root = owner.split(".")[0]
                if root in _parameters(anc) or any(
                    dotted(t) == owner for n in ast.walk(anc) for t, _ in _assignments(n)
                ):
                    return anc
        return self.ctx.tree

    def _is_wrapper(self, value: ast.AST) -> bool:
        return self.values.is_wrapper(value)


def _assignments(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    if isinstance(node, ast.Assign):
        for t in node.targets:
            yield t, node.value
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        yield node.target, node.value


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    return names
