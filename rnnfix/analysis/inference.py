"""Inference after a load (RNF006): a model that trained weights are loaded
into (``rnnfix.analysis.loads``) and whose forwards, later in the same scope,
reach no training step.

The question per load: which forwards of that model follow it (direct calls,
``model.forward(x)``, a method of its class or a helper of this file that
runs it, a function of another file of the run whose summary runs it), in
which mode (asked of the mode flow, ``ctx.facts.modes``; a loaded object the
mode flow does not track is switched nowhere in the file) and with grad
enabled or not. Each forward is mapped to its *unit*: the statement after the
load, in the load's block or a block around it, that contains it; the fix
puts ``eval()`` after the load and ``no_grad`` around the units.

Precision first, so a file is not inference code at all when it trains
(a training step, a gradient use, an optimizer), switches anything to train
mode (resume training, fine-tuning, Monte Carlo dropout), exports or traces
(ONNX, TorchScript, ``torch.export``), or is test code; and a load is left
alone when the model is handed to code rnnfix cannot read, when a helper
switches its mode, when a method named for training runs on it, or when a
wrapper around its forwards cannot be read.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.flow import chained_mode
from rnnfix.analysis.gradctx import Handlers, gradient_uses
from rnnfix.analysis.loads import (
    MODULE_LOADER,
    NOT_A_LOADER,
    is_checkpoint_load,
    is_torch_load,
    returns_loaded_model,
    state_dict_receiver,
    unwrap_value,
)
from rnnfix.analysis.models import built_class
from rnnfix.analysis.modestate import Mode, is_prefix
from rnnfix.analysis.names import dotted
from rnnfix.analysis.regions import probes_shapes
from rnnfix.analysis.scopes import FuncNode
from rnnfix.analysis.syntax import FUNCTIONS, block_of, walk_local, walk_tree, words
from rnnfix.analysis.torchapi import (
    MODULE_METHODS,
    WRAPPERS,
    module_mode_switch,
    strip_self_returning,
)
from rnnfix.context import FileContext

if TYPE_CHECKING:
    from rnnfix.analysis.modeflow import ModeFlow

# Text that makes a file export or trace code: it has its own expectations
# (``torch.onnx.export`` sets the mode it exports in itself).
_EXPORT = re.compile(r"onnx|jit\.trace|jit\.script|torch\.export|export\.export")
# Builtins and torch calls a model can be handed to without being run or switched.
_HARMLESS = frozenset(
    {"print", "len", "str", "repr", "isinstance", "type", "id", "getattr", "hasattr", "vars",
     "sum", "format", "dir"}
)  # fmt: skip
# Method words that say a model is trained: ``model.fit(...)``, ``net.train_step()``.
_TRAINING_WORDS = frozenset(
    {"train", "training", "fit", "finetune", "tune", "learn", "optimize", "backward",
     "update", "step", "epoch", "adapt", "teach"}
)  # fmt: skip


@dataclass(frozen=True)
class Load:
    model: str  # dotted text as written: "model", "args.model"
    stmt: ast.stmt  # the statement that loads (``eval()`` goes right after it)
    scope: FuncNode | None  # None: module level
    how: str  # for messages: "`load_state_dict`", "`torch.load`", "`load_model()`"
    cls: ast.expr | None = None  # ``Net`` of ``Net.load_from_checkpoint(...)``
    built_module: bool = False  # a loader function built it from an ``nn.Module`` class


# The level of a forward in a module-level function that reads the loaded
# model as a global: its unit is the function definition.
GLOBAL = -1


@dataclass
class Forward:
    site: ast.Call  # the call in the load's scope
    unit: ast.stmt  # the statement after the load that holds it
    level: int  # 0: the load's own block; 1: the block around it, ...; GLOBAL
    needs_eval: bool
    needs_grad: bool


@dataclass
class Inference:
    load: Load
    forwards: list[Forward] = field(default_factory=list)

    @property
    def needs_eval(self) -> bool:
        return any(f.needs_eval for f in self.forwards)

    @property
    def needs_grad(self) -> bool:
        return any(f.needs_grad for f in self.forwards)


def is_test_path(path: str) -> bool:
    base = os.path.basename(path)
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"


class InferenceAnalysis:
    """One per file: ``inferences()`` lists each load that is followed by
    inference forwards, with what they lack."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.qualname = ctx.facts.imports.qualname

    @functools.cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        return self.ctx.facts.parents

    @functools.cached_property
    def handlers(self) -> Handlers:
        return Handlers(self.ctx)

    @functools.cached_property
    def flow(self) -> ModeFlow:
        return self.ctx.facts.modes

    # --- is this file inference code at all? ---------------------------------
    def may_infer(self) -> bool:
        """A cheap syntactic test before the mode flow is built: something is
        loaded into (or as) a name that the file then calls or passes on.
        Most files that mention a load (a library's ``load_state_dict``
        override, ``json.load``) fail it."""
        view = self.ctx.facts.project
        run_names = frozenset(view.bindings) if view is not None else frozenset()
        nodes = walk_tree(self.ctx.tree)
        # Functions a model may be handed to and run by: the file's own, the run's.
        helpers = {n.name for n in nodes if isinstance(n, FUNCTIONS)} | run_names
        loaded: set[str] = set()
        picks: list[tuple[str, str]] = []  # ``model = ckpt["model"]``: (model, ckpt)
        used: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Call):
                receiver = state_dict_receiver(node)
                if receiver is not None:
                    loaded.add(receiver)
                text = dotted(node.func)
                if text is None:
                    continue
                used.add(text[: -len(".forward")] if text.endswith(".forward") else text)
                if text.split(".")[0] in helpers or text.rsplit(".", 1)[-1] in helpers:
                    for a in (*node.args, *(k.value for k in node.keywords)):
                        if (t := dotted(unwrap_value(a)[0])) is not None:
                            used.add(t)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                text = dotted(node.value.func) or ""
                if "load" in text.lower():  # ``load_checkpoint(model, path)``
                    loaded.update(t for a in node.value.args if (t := dotted(a)) is not None)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = dotted(node.targets[0])
                if target is None:
                    continue
                inner, picked = unwrap_value(node.value)
                if isinstance(inner, ast.Call):
                    text = dotted(inner.func) or ""
                    if "load" in text.lower() or text.split(".")[0] in run_names:
                        loaded.add(target)
                elif picked and isinstance(inner, ast.Name):
                    picks.append((target, inner.id))
        loaded.update(target for target, source in picks if source in loaded)
        return bool(loaded & used)

    def trains(self) -> bool:
        """Anything in the file trains, needs gradients or sets train mode."""
        flow = self.flow
        if flow.training_steps:
            return True
        scopes: list[ast.AST] = [
            self.ctx.tree,
            *(info.node for info in flow.index.functions.values()),
        ]
        for scope in scopes:
            if next(gradient_uses(self.ctx, scope), None) is not None:
                return True
        for node in walk_tree(self.ctx.tree):
            if isinstance(node, ast.Call):
                qual = self.qualname(node.func) or ""
                if qual.startswith("torch.optim.") or qual.endswith("GradScaler"):
                    return True
                switch = module_mode_switch(node)
                if switch is not None and switch.mode is not Mode.EVAL:
                    return True  # resume training, fine-tuning, Monte Carlo dropout
                if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "zero_grad",
                    "backward",
                ):
                    return True
        return False

    def inferences(self) -> list[Inference]:
        ctx = self.ctx
        if is_test_path(ctx.path) or _EXPORT.search(ctx.source) or not self.may_infer():
            return []
        loads = self.loads()
        if not loads or self.trains():
            return []
        out: list[Inference] = []
        for load in loads:
            found = self._inference(load)
            if found is None or not found.forwards:
                continue
            # Loaded again later (``load_state_dict`` of the best checkpoint):
            # the first load's ``eval()`` covers the forwards of both.
            sites = {id(f.site) for f in found.forwards}
            if any(
                earlier.load.model == load.model
                and earlier.load.scope is load.scope
                and sites <= {id(f.site) for f in earlier.forwards}
                for earlier in out
            ):
                continue
            out.append(found)
        return out

    # --- loads ----------------------------------------------------------------
    def loads(self) -> list[Load]:
        out: list[Load] = []
        index = self.flow.index
        scopes: list[FuncNode | None] = [None, *index.functions]
        for scope in scopes:
            if scope is not None and (_is_test(self.ctx, scope) or _module_method(self.ctx, scope)):
                continue  # a test, or a module's own method: its user sets the mode
            checkpoints: set[str] = set()
            for node in index.scope_nodes(scope):
                if not isinstance(node, ast.stmt):
                    continue
                load = self._load_of(node, scope, checkpoints)
                if load is not None and not self._pretrained(load.model):
                    out.append(load)
        return out

    def _load_of(
        self, stmt: ast.stmt, scope: FuncNode | None, checkpoints: set[str]
    ) -> Load | None:
        if isinstance(stmt, (ast.Expr, ast.Assign)):
            value = stmt.value
            if isinstance(value, ast.Call):
                receiver = state_dict_receiver(value)
                if receiver is not None:
                    return Load(receiver, stmt, scope, "`load_state_dict`")
                into = self._loads_into(value, scope)
                if into is not None and isinstance(stmt, ast.Expr):
                    return Load(into, stmt, scope, f"`{ctx_text(value.func)}()`")
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return None
        target = dotted(stmt.targets[0])
        if target is None or chained_mode(stmt.value) is not None:
            return None  # ``torch.load(p).eval()``: the author set the mode
        inner, picked = unwrap_value(stmt.value)
        if is_torch_load(inner, self.qualname):
            if not picked:
                checkpoints.add(target)
            return Load(target, stmt, scope, "`torch.load`")
        if picked and isinstance(inner, ast.Name) and inner.id in checkpoints:
            return Load(target, stmt, scope, "`torch.load`")
        if is_checkpoint_load(inner):
            assert isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
            return Load(target, stmt, scope, "`load_from_checkpoint`", inner.func.value)
        if isinstance(inner, ast.Call) and not picked:
            found = self._loader(inner, scope)
            if found is not None:
                return Load(target, stmt, scope, f"`{ctx_text(inner.func)}()`", None, found)
        return None

    def _loads_into(self, call: ast.Call, scope: FuncNode | None) -> str | None:
        """``load_checkpoint(model, path)``: a function of this file that calls
        ``load_state_dict`` on the parameter ``model`` is passed as, and
        switches its mode nowhere -> ``model``."""
        res = self.flow.resolve(call, scope)
        if res is None or res.callee.cls is not None:
            return None
        loaded: set[str] = set()
        for n in walk_local(res.callee.node):
            if not isinstance(n, ast.Call):
                continue
            if module_mode_switch(n) is not None:
                return None  # the helper sets the mode itself
            receiver = state_dict_receiver(n)
            if receiver is not None:
                loaded.add(receiver)
        found = [arg for param, arg in res.args.items() if param in loaded and arg is not None]
        return found[0] if len(found) == 1 else None

    def _loader(self, call: ast.Call, scope: FuncNode | None) -> bool | None:
        """``call`` runs a function that returns a loaded model: True when it
        built it from an ``nn.Module`` class; None when it is no loader."""
        res = self.flow.resolve(call, scope)
        if res is not None:
            if res.callee.cls is not None:
                return None
            found = returns_loaded_model(res.callee.node, self.qualname, self._builds_module)
            return None if found == NOT_A_LOADER else found == MODULE_LOADER
        project = self.ctx.facts.project
        return project.loader(call.func) if project is not None else None

    def _builds_module(self, value: ast.expr) -> bool:
        return built_class(value, self.flow.imports, self.flow.classes) is not None

    def _pretrained(self, model: str) -> bool:
        """Bound to ``from_pretrained(...)`` (transformers returns eval models)."""
        for node in walk_tree(self.ctx.tree):
            if isinstance(node, ast.Assign) and any(dotted(t) == model for t in node.targets):
                for n in ast.walk(node.value):
                    if isinstance(n, ast.Attribute) and n.attr == "from_pretrained":
                        return True
        return False

    # --- forwards after a load ---------------------------------------------------
    def _inference(self, load: Load) -> Inference | None:
        """The forwards of ``load.model`` after the load; None when the load
        must be left alone."""
        chain = self._chain(load.stmt)
        if chain is None or self._optional(load.model):
            return None
        model = load.model
        start = _end(load.stmt)
        stop = self._rebinding(load)
        found = Inference(load)
        for call in self.flow.scope_calls(load.scope):
            pos = (call.lineno, call.col_offset)
            if pos < start or (stop is not None and pos >= stop):
                continue
            kind = self._use(call, model, load.scope)
            if kind == "block":
                return None
            if kind is None or self._made_up(call, model, load.scope):
                continue
            placed = _unit(self.parents, chain, call)
            if placed is None:
                continue
            needs = self._needs(call, model, load.scope, kind)
            if needs is None:
                return None  # a wrapper rnnfix cannot read: it may manage both
            found.forwards.append(Forward(call, placed[0], placed[1], needs[0], needs[1]))
        if load.scope is None and stop is None and "." not in model:
            if not self._global_forwards(found):
                return None
        return found

    def _global_forwards(self, found: Inference) -> bool:
        """A script's model used from its module-level functions (``def
        evaluate(line): return rnn(line)``): their forwards run after the
        load; their statement is the function itself (level ``GLOBAL``).
        False when one of them may train it or switch its mode."""
        model = found.load.model
        for info in self.flow.index.functions.values():
            if info.cls is not None or info.parent is not None or model in info.locals:
                continue
            fn = info.node
            for call in self.flow.scope_calls(fn):
                kind = self._use(call, model, fn)
                if kind == "block":
                    return False
                if kind is None or self._made_up(call, model, fn):
                    continue
                needs = self._needs(call, model, fn, kind, global_model=True)
                if needs is None:
                    return False
                found.forwards.append(Forward(call, fn, GLOBAL, needs[0], needs[1]))
        return True

    def _chain(self, stmt: ast.stmt) -> list[tuple[list[ast.stmt], int]] | None:
        """The blocks from the load's own up to its scope's body, each with
        the index of the statement on the way to the load."""
        out: list[tuple[list[ast.stmt], int]] = []
        cur: ast.AST = stmt
        while True:
            parent = self.parents.get(cur)
            if parent is None or isinstance(parent, (*FUNCTIONS, ast.Module)):
                found = block_of(self.parents, cur)
                if found is None:
                    return None
                out.append(found)
                return out
            found = block_of(self.parents, cur)
            if found is not None:
                out.append(found)
            if isinstance(parent, ast.ClassDef):
                return None
            cur = parent

    def _optional(self, model: str) -> bool:
        """``refine_net = None`` somewhere: the model may not exist where it
        is used (``if args.refine: refine_net = RefineNet(); ...``), and an
        ``eval()`` outside the branch that builds it would fail on None."""
        for node in walk_tree(self.ctx.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(dotted(t) == model for t in targets) and _may_be_none(node.value):
                    return True
        return False

    def _rebinding(self, load: Load) -> tuple[int, int] | None:
        """Where the model's root name is next bound to another object after
        the load (``model = model.to(dev)`` and ``DataParallel(model)`` keep it)."""
        root = load.model.split(".")[0]
        start = _end(load.stmt)
        for node in self.flow.index.scope_nodes(load.scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.With)):
                continue
            if (node.lineno, node.col_offset) < start:
                continue
            targets = _targets(node)
            if not any(root == t or t.startswith(root + ".") for t in targets):
                continue
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if value is not None and self._same_object(value, load.model):
                continue
            return (node.lineno, node.col_offset)
        return None

    def _same_object(self, value: ast.AST, model: str) -> bool:
        inner, _ = unwrap_value(value)
        if dotted(inner) == model:
            return True
        return (
            isinstance(inner, ast.Call)
            and self.qualname(inner.func) in WRAPPERS
            and bool(inner.args)
            and dotted(unwrap_value(inner.args[0])[0]) == model
        )

    def _use(self, call: ast.Call, model: str, scope: FuncNode | None) -> str | None:
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
        if not any(_mentions(a, model) for a in args):
            return None
        if isinstance(func, ast.Name) and func.id in _HARMLESS:
            return None
        if self.qualname(func) in WRAPPERS:
            return None
        return self._helper(call, model, scope, method=False)

    def _helper(
        self, call: ast.Call, model: str, scope: FuncNode | None, method: bool
    ) -> str | None:
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

    def _local_use(self, call: ast.Call, model: str, scope: FuncNode | None) -> str | None:
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
            runs = runs or _runs(n, params)
        return "helper" if runs else None

    def _needs(
        self,
        call: ast.Call,
        model: str,
        scope: FuncNode | None,
        kind: str,
        global_model: bool = False,
    ) -> tuple[bool, bool] | None:
        """(needs ``eval()``, needs ``no_grad``) at ``call``; None when a
        wrapper around it cannot be read."""
        handled: set[str] = set()
        cur: ast.AST | None = call
        while cur is not None:
            exprs: list[ast.expr] = []
            if isinstance(cur, (ast.With, ast.AsyncWith)):
                exprs = [i.context_expr for i in cur.items]
            elif isinstance(cur, FUNCTIONS):
                exprs = list(cur.decorator_list)
            for expr in exprs:
                handling = self.handlers.handling(expr)
                if handling is None:
                    return None
                handled |= handling
            if cur is scope or isinstance(cur, ast.Module):
                break
            cur = self.parents.get(cur)
        # A global read in a function: its mode is whatever the script left it
        # in when the function is called; any ``eval()`` of it says the author
        # set it (``trains`` rules out ``train()``).
        may_train = not self._switched(model) if global_model else self._may_train(call, model)
        needs_eval = "eval" not in handled and may_train
        needs_grad = (
            "grad" not in handled
            and not self._grad_switched
            and self.flow.grad_enabled(call) is not False
        )
        if kind == "helper" and needs_grad:
            needs_grad = self._helper_grad(call, model, scope)
        return needs_eval, needs_grad

    @functools.cached_property
    def _grad_switched(self) -> bool:
        """``torch.set_grad_enabled(False)`` as a statement somewhere: grad is
        the script's own business from there on."""
        return any(
            isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and (self.qualname(n.value.func) or "").endswith("set_grad_enabled")
            for n in walk_tree(self.ctx.tree)
        )

    def _made_up(self, call: ast.Call, model: str, scope: FuncNode | None) -> bool:
        """Every input of the forward is a tensor the code makes up
        (``G(torch.randn(64, 100))``, a ``torch.zeros`` warm-up): a GAN's
        samples (often drawn in train mode on purpose, BatchNorm on batch
        statistics) or a dry run. Not inference rnnfix judges."""
        args = [a for a in call.args if not _mentions(a, model)]
        args += [k.value for k in call.keywords if not _mentions(k.value, model)]
        if not args:
            return False
        probe = ast.Call(func=call.func, args=args, keywords=[])
        node: ast.AST = scope if scope is not None else self.ctx.tree
        return probes_shapes(self.ctx, node, [probe], self.qualname)

    def _may_train(self, call: ast.Call, model: str) -> bool:
        """The model may be in train mode at ``call`` (train or unknown)."""
        if self.flow.is_model(model):
            state = self.flow.mode_before(call, model)
            return bool(state.facts) and state.modes != {Mode.EVAL}
        # Not tracked by the mode flow (its class is not known to be a module):
        # any switch of it in the file is an ``eval()`` (``trains`` rules out
        # ``train()``), chained ones included (``Encoder().eval()``).
        return not self._switched(model)

    def _switched(self, model: str) -> bool:
        for node in walk_tree(self.ctx.tree):
            if isinstance(node, ast.Call):
                switch = module_mode_switch(node)
                if switch is not None and dotted(strip_self_returning(switch.receiver)) == model:
                    return True
            elif isinstance(node, ast.Assign) and chained_mode(node.value) is not None:
                if any(dotted(t) == model for t in node.targets):
                    return True
        return False

    def _helper_grad(self, call: ast.Call, model: str, scope: FuncNode | None) -> bool:
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
        inner = [n for n in walk_local(fn) if isinstance(n, ast.Call) and _runs(n, params)]
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


def _may_be_none(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.IfExp):
        return _may_be_none(value.body) or _may_be_none(value.orelse)
    if isinstance(value, ast.BoolOp):
        return any(_may_be_none(v) for v in value.values)
    return False


def _runs(call: ast.Call, params: set[str]) -> bool:
    """``net(x)`` / ``net.forward(x)`` for a name in ``params``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return dotted(func) in params


def _is_test(ctx: FileContext, fn: FuncNode) -> bool:
    """A test pytest or unittest collects: ``test_*`` (a bare ``test(...)`` of a
    script is evaluation code), or any function of a ``Test*`` class."""
    owner = ctx.facts.parents.get(fn)
    in_test_class = isinstance(owner, ast.ClassDef) and owner.name.startswith("Test")
    return fn.name.startswith("test_") or in_test_class


def _module_method(ctx: FileContext, fn: FuncNode) -> bool:
    owner = ctx.facts.parents.get(fn)
    if not isinstance(owner, ast.ClassDef):
        return False
    classes = ctx.facts.modes.classes
    return (
        owner.name in classes.modules
        or owner.name in classes.lightning
        or any(isinstance(s, FUNCTIONS) and s.name == "forward" for s in owner.body)
    )


def _unit(
    parents: dict[ast.AST, ast.AST], chain: list[tuple[list[ast.stmt], int]], node: ast.AST
) -> tuple[ast.stmt, int] | None:
    """The statement after the load, in the innermost block of ``chain``,
    that holds ``node``, with that block's level."""
    ancestors: list[ast.AST] = []
    cur: ast.AST | None = node
    while cur is not None:
        ancestors.append(cur)
        cur = parents.get(cur)
    ids = {id(a) for a in ancestors}
    for level, (block, index) in enumerate(chain):
        for stmt in block[index + 1 :]:
            if id(stmt) in ids:
                return stmt, level
    return None


def _end(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def _targets(node: ast.AST) -> list[str]:
    raw: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        raw = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.For)):
        raw = [node.target]
    elif isinstance(node, ast.With):
        raw = [i.optional_vars for i in node.items if i.optional_vars is not None]
    out: list[str] = []
    for t in raw:
        for n in ast.walk(t):
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                text = dotted(n)
                if text is not None:
                    out.append(text)
    return out


def _mentions(expr: ast.AST, model: str) -> bool:
    """``model`` itself is passed (``f(model)``, ``f(net=model.to(dev))``),
    not a value computed from it (``f(model(x))``, ``f(model.config)``)."""
    inner, _ = unwrap_value(expr)
    if isinstance(inner, ast.Starred):
        inner = inner.value
    text = dotted(inner)
    return text is not None and (text == model or is_prefix(text, model))


def ctx_text(expr: ast.AST) -> str:
    return dotted(expr) or "..."
