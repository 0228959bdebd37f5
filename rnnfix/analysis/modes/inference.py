"""Inference after a load (RNF006): a model that trained weights are loaded
into (``rnnfix.analysis.modes.loads``) and whose forwards, later in the same scope,
reach no training step.

The question per load: which forwards of that model follow it (direct calls,
``model.forward(x)``, a method of its class or a helper of this file that
runs it, a function of another file of the run whose summary runs it), in
which mode (asked of the mode flow, ``ctx.facts.modes``; a loaded object the
mode flow does not track is switched nowhere in the file) and with grad
enabled or not. Each forward is mapped to its *unit*: the statement after the
load, in the load's block or a block around it, that contains it; the fix
puts ``eval()`` after the load and ``no_grad`` around the units.

Where the loads are: ``rnnfix.analysis.modes.loads``; how a call uses the model:
``rnnfix.analysis.modes.modeluse``.

Precision first, so a file is not inference code at all when it trains
(a training step, a gradient use, an optimizer), switches anything but a
loaded model to train mode (a trainer, dropout layers one by one: resume
training, fine-tuning, Monte Carlo dropout), exports or traces
(ONNX, TorchScript, ``torch.export``), or is test code; and a load is left
alone when the model is handed to code rnnfix cannot read, when a helper
switches its mode, when a method named for training runs on it, or when a
wrapper around its forwards cannot be read. A loaded model the file itself
puts in train mode (``explicit_train``) is inference in train mode on
purpose or by mistake: the rule reports it and never edits it.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradcode import AUTOGRAD_GRAD, captum_method
from rnnfix.analysis.grads.gradctx import Handlers, gradient_uses
from rnnfix.analysis.modes.flow import chained_mode
from rnnfix.analysis.modes.loads import Load, LoadFinder, cut_from, unwrap_value
from rnnfix.analysis.modes.modeluse import ModelUses, mentions
from rnnfix.analysis.modes.regions import probes_shapes
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import FUNCTIONS, block_of, nodes_of, walk_tree
from rnnfix.analysis.torch.api import WRAPPERS, module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.source.files import holds_test_code, is_test_source

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.modeflow import ModeFlow

# Text that makes a file export or trace code: it has its own expectations
# (``torch.onnx.export`` sets the mode it exports in itself).
_EXPORT = re.compile(r"onnx|jit\.trace|jit\.script|torch\.export|export\.export")

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
    # The author's ``model.train()`` of the loaded model, in a file that
    # trains nothing: Monte Carlo dropout, BatchNorm statistics, or a bug.
    # Which one the code rarely says, so the rule decides and never edits.
    explicit_train: ast.Call | None = None

    @property
    def needs_eval(self) -> bool:
        return any(f.needs_eval for f in self.forwards)

    @property
    def needs_grad(self) -> bool:
        return any(f.needs_grad for f in self.forwards)


class InferenceAnalysis:
    """One per file: ``inferences()`` lists each load that is followed by
    inference forwards, with what they lack."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.finder = LoadFinder(ctx)
        self.uses = ModelUses(ctx)

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
    def trains(self, loads: list[Load] | None = None) -> bool:
        """Anything in the file trains, needs gradients or sets train mode.
        With ``loads``, a ``train()`` of a loaded model (``explicit_trains``)
        does not count: it is that model's business, not the file's (the
        other models' inference is still inference); any other ``train()``
        (``trainer.train()``, ``m.train()`` of a loop over modules) does."""
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
        for node in nodes_of(self.ctx.tree, ast.Call):
            if isinstance(node, ast.Call):
                qual = self.ctx.facts.imports.qualname(node.func) or ""
                if qual.startswith("torch.optim.") or qual.endswith("GradScaler"):
                    return True
                if _takes_gradients(qual) or captum_method(self.ctx.facts.imports, node.func):
                    return True  # attribution, attacks: the gradient is the result
                switch = module_mode_switch(node)
                if switch is not None and switch.mode is not Mode.EVAL:
                    if not loads or not any(self._trains_load(node, ld) for ld in loads):
                        return True  # resume training, fine-tuning, Monte Carlo dropout
                if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "zero_grad",
                    "backward",
                ):
                    return True
        # A gradient helper or attack class of another file of the run
        # (``input_gradient(model, x)``, ``PGD(model).perturb(x)``): the
        # forwards here feed gradient code too.
        project = self.ctx.facts.project
        return project is not None and project.imports_gradient_code()

    def inferences(self) -> list[Inference]:
        ctx = self.ctx
        if (
            _test_code(ctx.path, ctx.source)
            or _EXPORT.search(ctx.source)
            or not self.finder.may_load()
        ):
            return []
        loads = self.finder.loads()
        if not loads or self.trains(loads):
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
        trains = {id(c): c for c in self.explicit_trains(load)}
        found = Inference(load, explicit_train=next(iter(trains.values()), None))
        aliases = self._aliases(load, start, stop)
        for call in self.flow.scope_calls(load.scope):
            pos = (call.lineno, call.col_offset)
            if pos < start or (stop is not None and pos >= stop) or id(call) in trains:
                continue
            name, kind = model, self.uses.use(call, model, load.scope)
            for alias, bound in aliases.items():
                if kind is None and pos >= bound:
                    name, kind = alias, self.uses.use(call, alias, load.scope)
            if kind == "block":
                return None
            if kind is None or self._made_up(call, name, load.scope):
                continue
            placed = _unit(self.parents, chain, call)
            if placed is None:
                continue
            needs = self._needs(call, name, load.scope, kind, original=model)
            if needs is None:
                return None  # a wrapper rnnfix cannot read: it may manage both
            found.forwards.append(Forward(call, placed[0], placed[1], needs[0], needs[1]))
        if load.scope is None and stop is None and "." not in model:
            for name in (model, *aliases):
                if not self._global_forwards(found, name):
                    return None
        return found

    def _aliases(
        self, load: Load, start: tuple[int, int], stop: tuple[int, int] | None
    ) -> dict[str, tuple[int, int]]:
        """Names bound, after the load, to the loaded object itself under
        another name (``model = single_model.to(device)``, ``model =
        nn.DataParallel(net)``): its forwards through them are its own. Only
        a plain name the scope binds once and nowhere else; for each, where
        it starts to be the model."""
        root = load.model.split(".")[0]
        bound: dict[str, int] = {}
        found: dict[str, tuple[int, int]] = {}
        for node in self.flow.index.scope_nodes(load.scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
                continue
            for t in _targets(node):
                bound[t] = bound.get(t, 0) + 1
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target = node.targets[0]
            pos = (node.lineno, node.col_offset)
            if not isinstance(target, ast.Name) or target.id == root or pos < start:
                continue
            if stop is not None and pos >= stop:
                continue
            if self._alias_value(node.value, load.model):
                found[target.id] = _end(node)
        if load.scope is None:
            # A script's name that a function binds as a global is not one name.
            for node in nodes_of(self.ctx.tree, ast.Global):
                if isinstance(node, ast.Global):
                    for n in node.names:
                        bound[n] = bound.get(n, 0) + 2
        return {name: pos for name, pos in found.items() if bound.get(name) == 1}

    def _alias_value(self, value: ast.AST, model: str) -> bool:
        """``value`` is the model itself: under self-returning methods
        (``.to(dev)``, ``.cuda()``) or a wrapper of its modules
        (``DataParallel``, ``torch.compile``); not a part of it (``model[0]``,
        ``model.encoder``)."""
        inner, picked = unwrap_value(value)
        if picked:
            return False
        if dotted(inner) == model:
            return True
        if cut_from(inner, self.ctx.facts.imports.qualname) == model:
            return True
        if not (
            isinstance(inner, ast.Call)
            and self.ctx.facts.imports.qualname(inner.func) in WRAPPERS
            and inner.args
        ):
            return False
        arg, picked = unwrap_value(inner.args[0])
        return not picked and dotted(arg) == model

    def explicit_trains(self, load: Load) -> list[ast.Call]:
        """The ``train()`` calls (``train(True)``, a mode the code computes)
        of ``load.model`` in the file: in the load's scope or, for a script's
        model, in a module-level function that reads it as a global."""
        return [
            node
            for node in walk_tree(self.ctx.tree)
            if isinstance(node, ast.Call) and self._trains_load(node, load)
        ]

    def _trains_load(self, call: ast.Call, load: Load) -> bool:
        switch = module_mode_switch(call)
        if switch is None or switch.mode is Mode.EVAL:
            return False
        receiver = dotted(strip_self_returning(switch.receiver))
        if receiver is not None and receiver.endswith(".module"):
            receiver = receiver[: -len(".module")]  # a data-parallel wrapper's module
        if receiver != load.model:
            return False
        owner = next((a for a in self.ctx.facts.ancestors(call) if isinstance(a, FUNCTIONS)), None)
        if owner is load.scope:
            return True
        if load.scope is not None or owner is None:
            return False
        info = self.ctx.facts.index.functions.get(owner)
        root = load.model.split(".")[0]
        return (
            info is not None
            and info.cls is None
            and info.parent is None
            and root not in info.locals
        )

    def _global_forwards(self, found: Inference, model: str) -> bool:
        """A script's model used from its module-level functions (``def
        evaluate(line): return rnn(line)``): their forwards run after the
        load; their statement is the function itself (level ``GLOBAL``).
        False when one of them may train it or switch its mode. ``model``:
        the loaded model's name or an alias of it (``_aliases``)."""
        for info in self.flow.index.functions.values():
            if info.cls is not None or info.parent is not None or model in info.locals:
                continue
            fn = info.node
            for call in self.flow.scope_calls(fn):
                if call is found.explicit_train or (
                    found.explicit_train is not None and self._trains_load(call, found.load)
                ):
                    continue
                kind = self.uses.use(call, model, fn)
                if kind == "block":
                    return False
                if kind is None or self._made_up(call, model, fn):
                    continue
                needs = self._needs(
                    call, model, fn, kind, global_model=True, original=found.load.model
                )
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
        for node in nodes_of(self.ctx.tree, ast.Assign, ast.AnnAssign):
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
            and self.ctx.facts.imports.qualname(inner.func) in WRAPPERS
            and bool(inner.args)
            and dotted(unwrap_value(inner.args[0])[0]) == model
        )

    def _needs(
        self,
        call: ast.Call,
        model: str,
        scope: FuncNode | None,
        kind: str,
        global_model: bool = False,
        original: str | None = None,
    ) -> tuple[bool, bool] | None:
        """(needs ``eval()``, needs ``no_grad``) at ``call``; None when a
        wrapper around it cannot be read. ``original``: the loaded model's
        name when ``model`` is an alias of it (both must be possibly in
        train mode: a switch of either reaches the same modules)."""
        handled = handled_around(self.handlers, self.parents, call, scope)
        if handled is None:
            return None
        # A global read in a function: its mode is whatever the script left it
        # in when the function is called; any ``eval()`` of it says the author
        # set it (``trains`` rules out ``train()``).
        names = {model, original or model}
        if global_model:
            may_train = not any(self._switched(n) for n in names)
        else:
            may_train = all(self._may_train(call, n) for n in names)
        needs_eval = "eval" not in handled and may_train
        needs_grad = (
            "grad" not in handled
            and not self._grad_switched
            and self.flow.grad_enabled(call) is not False
        )
        if kind == "helper" and needs_grad:
            needs_grad = self.uses.helper_grad(call, model, scope)
        return needs_eval, needs_grad

    @functools.cached_property
    def _grad_switched(self) -> bool:
        """``torch.set_grad_enabled(False)`` as a statement somewhere: grad is
        the script's own business from there on."""
        return any(
            isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and (self.ctx.facts.imports.qualname(n.value.func) or "").endswith("set_grad_enabled")
            for n in walk_tree(self.ctx.tree)
        )

    def _made_up(self, call: ast.Call, model: str, scope: FuncNode | None) -> bool:
        """Every input of the forward is a tensor the code makes up
        (``G(torch.randn(64, 100))``, a ``torch.zeros`` warm-up): a GAN's
        samples (often drawn in train mode on purpose, BatchNorm on batch
        statistics) or a dry run. Not inference rnnfix judges."""
        args = [a for a in call.args if not mentions(a, model)]
        args += [k.value for k in call.keywords if not mentions(k.value, model)]
        if not args:
            return False
        probe = ast.Call(func=call.func, args=args, keywords=[])
        node: ast.AST = scope if scope is not None else self.ctx.tree
        return probes_shapes(self.ctx, node, [probe], self.ctx.facts.imports.qualname)

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


# Libraries whose calls take gradients through the model they are given
# (adversarial attacks, functional autograd): a file that uses them needs grad.
_GRADIENT_LIBRARIES = ("torchattacks.", "advertorch.", "foolbox.", "art.attacks.", "torch.func.")


def _takes_gradients(qual: str) -> bool:
    return qual == AUTOGRAD_GRAD or qual.startswith(_GRADIENT_LIBRARIES)


def _test_code(path: str, source: str) -> bool:
    """A test file, except a ``test_*.py`` script that holds no test code:
    ``python test_image.py`` of SRGAN, Pointnet2's ``test_classification.py``,
    SfmLearner's ``test_disp.py`` load a model and predict; pytest would
    collect the file, but it has no test to run (its ``test_*`` functions,
    if any, are still left alone: ``loads._is_test``)."""
    if not is_test_source(path, source):
        return False
    return holds_test_code(source) or not os.path.basename(path).startswith("test_")


def _may_be_none(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.IfExp):
        return _may_be_none(value.body) or _may_be_none(value.orelse)
    if isinstance(value, ast.BoolOp):
        return any(_may_be_none(v) for v in value.values)
    return False


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


def handled_around(
    handlers: Handlers, parents: dict[ast.AST, ast.AST], call: ast.AST, scope: ast.AST | None
) -> set[str] | None:
    """What the ``with`` blocks and decorators around ``call``, up to
    ``scope`` (or the module), already handle (``"eval"``, ``"grad"``); None
    when one of them cannot be read."""
    handled: set[str] = set()
    cur: ast.AST | None = call
    while cur is not None:
        exprs: list[ast.expr] = []
        if isinstance(cur, (ast.With, ast.AsyncWith)):
            exprs = [i.context_expr for i in cur.items]
        elif isinstance(cur, FUNCTIONS):
            exprs = list(cur.decorator_list)
        for expr in exprs:
            handling = handlers.handling(expr)
            if handling is None:
                return None
            handled |= handling
        if cur is scope or isinstance(cur, ast.Module):
            break
        cur = parents.get(cur)
    return handled
