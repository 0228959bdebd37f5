"""How a call uses a loaded model (RNF006): runs its forward directly,
through a helper that runs it, not at all, or in a way that may train it or
switch its mode (then the load is left alone).

A helper is a function of this file (read from its body: the mode flow
tracks only objects it knows are models) or of another file of the run (its
summary); an object handed to code rnnfix cannot read may be trained there.
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.grads.gradctx import Handlers
from rnnfix.analysis.modes.loads import unwrap_value
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import walk_local, words
from rnnfix.analysis.torch.api import MODULE_METHODS, WRAPPERS, module_mode_switch

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.modeflow import ModeFlow

Use = Literal["direct", "helper", "block"]
# Builtins a model can be handed to without being run or switched.
_HARMLESS = frozenset(
    {"print", "len", "str", "repr", "isinstance", "type", "id", "getattr", "hasattr", "vars",
     "sum", "format", "dir"}
)  # fmt: skip
# Method words that say a model is trained: ``model.fit(...)``, ``net.run_epoch()``.
_TRAINING_WORDS = frozenset(
    {"train", "training", "fit", "finetune", "tune", "learn", "optimize", "backward",
     "update", "step", "epoch", "adapt", "teach"}
)  # fmt: skip


class ModelUses:
    """One per file (shares the mode flow and the grad-context reader)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    @functools.cached_property
    def flow(self) -> ModeFlow:
        return self.ctx.facts.modes

    @functools.cached_property
    def handlers(self) -> Handlers:
        return Handlers(self.ctx)

    @functools.cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        return self.ctx.facts.parents

    def use(self, call: ast.Call, model: str, scope: FuncNode | None) -> Use | None:
        """How ``call`` uses the model: "direct" (its forward), "helper" (a
        function that runs it), None (does not run it), "block" (code that may
        train it or switch its mode: leave the load alone)."""
        func = call.func
        text = dotted(func)
        if text == model or (
            isinstance(func, ast.Attribute)
            and func.attr == "forward"
            and dotted(func.value) == model
        ):
            return "direct"
        if isinstance(func, ast.Attribute) and dotted(func.value) == model:
            if set(words(func.attr)) & _TRAINING_WORDS:
                return "block"  # ``model.fit(...)``, ``model.train_step(...)``
            if func.attr in MODULE_METHODS:
                return None
            return self._helper(call, model, scope, method=True)
        args = [*call.args, *(k.value for k in call.keywords)]
        if not any(mentions(a, model) for a in args):
            return None
        if isinstance(func, ast.Name) and func.id in _HARMLESS:
            return None
        if self.ctx.facts.imports.qualname(func) in WRAPPERS:
            return None
        return self._helper(call, model, scope, method=False)

    def _helper(
        self, call: ast.Call, model: str, scope: FuncNode | None, method: bool
    ) -> Use | None:
        """A function of this file (or of another file of the run) that is
        handed the model: "helper" when it runs it, None when it only reads
        it, "block" when it switches or trains it or cannot be read."""
        found = self.flow.callee_summary(call, scope)
        if found is None:
            # ``model.generate(...)``: an unknown method runs who knows what; it
            # neither proves inference nor hides training. Any other unknown
            # callee may train the model or set its mode.
            return None if method else "block"
        summary, mapper = found
        mapped = {
            k: mapper(k) for k in {*summary.effects, *summary.forwards, *summary.entry_trains}
        }
        mine = {k for k, v in mapped.items() if v is not None and is_prefix(model, v)}
        if summary.optimizer_step or any(k in mine for k in summary.entry_trains):
            return "block"
        if any(k in mine for k in summary.effects):
            return "block"  # it switches the model's mode itself
        local = self._local_use(call, model, scope)
        if local is not None:
            return local
        return "helper" if any(k in mine for k in summary.forwards) else None

    def _local_use(self, call: ast.Call, model: str, scope: FuncNode | None) -> Use | None:
        """What a function of this file does with the parameter the model is
        passed as, read from its body (the mode flow tracks only objects it
        knows are models): "block" when it switches its mode, "helper" when it
        calls it (``def predict(net, x): return net(x)``)."""
        res = self.flow.resolve(call, scope)
        if res is None:
            return None
        params = {p for p, arg in res.args.items() if arg == model}
        if res.callee.is_method and res.receiver == model:
            params.add(res.callee.params[0])
        runs = False
        for n in walk_local(res.callee.node):
            if not isinstance(n, ast.Call) or not params:
                continue
            switch = module_mode_switch(n)
            if switch is not None:
                target = dotted(switch.receiver) or ""
                if target.split(".")[0] in params:
                    return "block"
                continue
            runs = runs or _runs(n, params) or self._runs_method(n, params, model)
        return "helper" if runs else None

    def _runs_method(self, call: ast.Call, params: set[str], model: str) -> bool:
        """``net.<method>(x)`` for a parameter the model is passed as, where
        the method runs the model's forward (``extract(loader, model)``
        running ``model.encode(img)``): the caller knows the class."""
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in params
            and self.flow.forward_method(model, func.attr)
        )

    def helper_grad(self, call: ast.Call, model: str, scope: FuncNode | None) -> bool:
        """Whether a helper of this file runs the model with grad enabled: not
        when it is decorated with ``no_grad`` or runs each forward of the
        model under one (``with torch.no_grad(): y = net(x)``)."""
        res = self.flow.resolve(call, scope)
        if res is None:
            return True  # another file's summary lists only grad-enabled forwards
        fn = res.callee.node
        for dec in fn.decorator_list:
            handling = self.handlers.handling(dec)
            if handling is None or "grad" in handling:
                return False
        params = {p for p, arg in res.args.items() if arg == model}
        if res.callee.is_method and res.receiver == model:
            params.add(res.callee.params[0])
        inner = [
            n
            for n in walk_local(fn)
            if isinstance(n, ast.Call) and (_runs(n, params) or self._runs_method(n, params, model))
        ]
        if not inner:
            return True  # through a method or another helper: not read here
        return any(self._grad_local(n, fn) for n in inner)

    def _grad_local(self, node: ast.AST, fn: FuncNode) -> bool:
        """Grad may be on at ``node`` as far as the ``with`` blocks between it
        and ``fn`` say (an unreadable one may handle it: False)."""
        cur = self.parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, (ast.With, ast.AsyncWith)):
                for item in cur.items:
                    handling = self.handlers.handling(item.context_expr)
                    if handling is None or "grad" in handling:
                        return False
            cur = self.parents.get(cur)
        return True


def _runs(call: ast.Call, params: set[str]) -> bool:
    """``net(x)`` / ``net.forward(x)`` for a name in ``params``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return dotted(func) in params


def mentions(expr: ast.AST, model: str) -> bool:
    """``model`` itself is passed (``f(model)``, ``f(net=model.to(dev))``),
    not a value computed from it (``f(model(x))``, ``f(model.config)``)."""
    inner, _ = unwrap_value(expr)
    if isinstance(inner, ast.Starred):
        inner = inner.value
    text = dotted(inner)
    return text is not None and (text == model or is_prefix(text, model))
