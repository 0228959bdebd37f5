"""The evidence the mode flow lists for the rules: training steps (backward
calls, optimizer steps, and calls into another file of the run that train the
models they get), forward calls of models, mode calls, which optimizer step
updates which model, and target networks (models refreshed from another one).

What counts as an optimizer step: ``<optimizer>.step()`` on an object built by
``torch.optim`` (or a ``GradScaler``), on a path whose last name reads like an
optimizer (``opt``, ``optimizer_g``, ``scaler``) and not like a scheduler, a
training strategy's ``optimizer_step(<optimizer>, ...)``, and a call of an
object built from ``parameters()`` by something other than ``torch.optim``.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.modes.records import ModeCall, ModelCall, TrainingStep
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.models import mode_receiver

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView

_OPTIMIZER_NAME = re.compile(r"(optim|(^|_)opt($|_)|^opt\w*$)", re.IGNORECASE)


class StepEvidence:
    """The training steps, model calls and mode calls of one file's flow,
    each list computed once, at the first question."""

    def __init__(self, flow: FlowView) -> None:
        self.flow = flow
        self._optimizers, self._not_optimizers = _optimizer_names(flow)

    @functools.cached_property
    def mode_calls(self) -> list[ModeCall]:
        out: list[ModeCall] = []
        for scope in self.flow.scopes():
            for node in self.flow.scope_calls(scope):
                switch = module_mode_switch(node)
                if switch is not None:
                    recv = mode_receiver(node, self.flow.imports)
                    if recv is not None and self.flow.holds_model(recv):
                        out.append(ModeCall(node, recv, switch.mode, scope))
        return out

    @functools.cached_property
    def model_calls(self) -> list[ModelCall]:
        out: list[ModelCall] = []
        for scope in self.flow.scopes():
            for node in self.flow.scope_calls(scope):
                if not isinstance(node, ast.Call):
                    continue
                direct = self.flow.forward_key(node)
                if direct is not None:
                    if self.flow.is_model(direct):
                        out.append(
                            ModelCall(node, direct, scope, self.flow.grad_enabled(node), None)
                        )
                    continue
                res = self.flow.index.resolve(node, scope)
                if res is not None:
                    summary, mapper, via = (
                        self.flow.summary(res.callee),
                        res.caller_key,
                        res.callee.node,
                    )
                else:
                    ext = self.flow.external(node, scope)
                    if ext is None:
                        continue
                    summary, mapper, via = ext.summary, ext.caller_key, None
                for key in summary.forwards:
                    mine = mapper(key)
                    if mine is not None and self.flow.is_model(mine):
                        out.append(ModelCall(node, mine, scope, self.flow.grad_enabled(node), via))
        return out

    @functools.cached_property
    def training_steps(self) -> list[TrainingStep]:
        out: list[TrainingStep] = []
        for scope in self.flow.scopes():
            if self.flow.in_lightning_module(scope):
                continue
            for node in self.flow.scope_calls(scope):
                if isinstance(node, ast.Call):
                    kind = self.step_kind(node)
                    if kind is not None:
                        out.append(
                            TrainingStep(
                                node=node,
                                kind=kind,
                                models=self._models_used(node, scope),
                                loops=self.flow.loops_of(node),
                                function=scope,
                                feeds_optimizer_step=kind == "optimizer_step"
                                or self._feeds_step(node, scope, 0),
                            )
                        )
                    elif self.flow.project is not None:
                        step = self._external_step(node, scope)
                        if step is not None:
                            out.append(step)
        return out

    def _external_step(self, node: ast.Call, scope: FuncNode | None) -> TrainingStep | None:
        """A call into another file of the run whose function trains the models
        it is given in the mode they are in (no ``train()`` of its own): the
        training step is this call, as far as this file is concerned; that file
        is never edited for this file's finding."""
        ext = self.flow.external(node, scope)
        if ext is None or not ext.summary.optimizer_step:
            return None
        models = [ext.caller_key(k) for k in ext.summary.entry_trains]
        used = tuple(dict.fromkeys(m for m in models if m is not None and self.flow.is_model(m)))
        if not used:
            return None
        return TrainingStep(node, "call", used, self.flow.loops_of(node), scope, True)

    def step_kind(self, call: ast.Call) -> Literal["backward", "optimizer_step"] | None:
        func = call.func
        if self.flow.imports.qualname(func) == "torch.autograd.backward":
            return "backward"
        if not call.args and not call.keywords and self._callable_optimizer(func):
            return "optimizer_step"  # ``train_op = get_train_op(params=...)``; ``train_op()``
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr == "backward":
            root = func.value
            while isinstance(root, (ast.Attribute, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and self.flow.imports.qualname(root) not in (
                None,
                "torch",
            ):
                # a name bound to another library (``accelerate`` passes: it is
                # usually an instance, not an import)
                q = self.flow.imports.qualname(root) or ""
                if not q.startswith("torch"):
                    return None
            return "backward"
        if func.attr == "step":
            recv = dotted(func.value)
            if recv is None or "sched" in recv.lower() or len(call.args) > 1:
                return None
            if self._is_optimizer(recv):
                return "optimizer_step"
        if func.attr == "optimizer_step":
            # A training strategy steps the optimizer it is given (OpenRLHF's
            # ``self.strategy.optimizer_step(self.optimizer, self.model, ...)``,
            # DeepSpeed/Accelerate wrappers): an optimizer step by its name
            # and its optimizer argument.
            args = [*call.args, *(k.value for k in call.keywords)]
            if any((t := dotted(a)) is not None and self._is_optimizer(t) for a in args):
                return "optimizer_step"
        return None

    def _is_optimizer(self, text: str) -> bool:
        if text in self._optimizers or self.flow.optimizers.is_optimizer(text):
            return True
        if text in self._not_optimizers:
            return False
        last = text.rsplit(".", 1)[-1]
        return bool(_OPTIMIZER_NAME.search(last)) or "scaler" in last.lower()

    def _callable_optimizer(self, func: ast.expr) -> bool:
        """A call of an object built from ``parameters()`` by something other
        than ``torch.optim`` (whose optimizers are not callable)."""
        text = dotted(func)
        return (
            text is not None
            and text not in self._optimizers
            and not self.flow.is_model(text)
            and self.flow.optimizers.is_optimizer(text)
        )

    @functools.cached_property
    def refreshed_targets(self) -> frozenset[str]:
        """Models whose weights are copied from another model rather than
        trained: ``target.load_state_dict(net.state_dict())``, or a loop over
        ``zip(net.parameters(), target.parameters())`` that writes the
        target's (``copy_``, Polyak/EMA ``mul_``/``add_``/``lerp_``). Target
        networks stay in eval on purpose; no rule puts them in train mode."""
        found: set[str] = set()
        for node in walk_tree(self.flow.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load_state_dict"
                and node.args
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Attribute)
                and node.args[0].func.attr == "state_dict"
            ):
                target, source = dotted(node.func.value), dotted(node.args[0].func.value)
                if target and source and target != source:
                    found.add(target)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                found.update(_polyak_targets(node))
        return frozenset(k for k in found if self.flow.is_model(k))

    def is_target_network(self, model: str, scope: FuncNode | None) -> bool:
        """``model`` is refreshed from another model and no optimizer of this
        file is known to update it."""
        key = self.flow.canonical(model, scope)
        if not any(is_prefix(t, key) or is_prefix(t, model) for t in self.refreshed_targets):
            return False
        return not self.flow.optimizers.may_own(key)

    def step_may_update(self, step: ast.Call, model: str) -> bool | None:
        """Whether optimizer step ``step`` (``opt.step()``, ``train_op()``)
        updates ``model``'s parameters; None when whose they are is unknown."""
        func = step.func
        receiver = dotted(func.value if isinstance(func, ast.Attribute) else func)
        if receiver is None:
            return None
        scope = self.flow.scope_of(step)
        owners = None
        if scope is not None:
            owners = self.flow.optimizers.reaching_owners(receiver, scope, step)
        if owners is None:
            owners = self.flow.optimizers.owners_of(receiver, scope)
        if owners is None:
            return None
        return self._owned(owners, self.flow.canonical(model, scope), scope, 0)

    def _owned(
        self, owners: frozenset[str], key: str, scope: FuncNode | None, depth: int
    ) -> bool | None:
        if any(is_prefix(o, key) or is_prefix(key, o) for o in owners):
            return True
        info = self.flow.index.functions.get(scope) if scope is not None else None
        root, _, rest = key.partition(".")
        this = info.params[0] if info is not None and info.is_method else None
        if info is None or root == this or root not in {*info.params, *info.kwonly}:
            return False
        params = {*info.params, *info.kwonly}
        if all(o.split(".")[0] in info.locals - params for o in owners):
            return False  # ``Adam([text_embeddings])`` over a local tensor: not the caller's model
        # A parameter: whatever its callers pass (``train(model, ...)`` with a
        # global optimizer over ``model``); unknown without callers.
        sites = self.flow.call_sites(info.node)
        if not sites or depth > 2:
            return None
        verdicts = set()
        for caller, _, res in sites:
            mine = res.args.get(root)
            if mine is None:
                return None
            found = self._owned(
                owners,
                self.flow.canonical(mine + ("." + rest if rest else ""), caller),
                caller,
                depth + 1,
            )
            if found is None:
                return None
            verdicts.add(found)
        return True in verdicts

    def _models_used(self, step: ast.Call, scope: FuncNode | None) -> tuple[str, ...]:
        """Models called with grad enabled before ``step`` in the innermost
        enclosing loop body that calls any (else the whole scope)."""
        calls = [c for c in self.model_calls if c.function is scope and c.grad_enabled is not False]
        if not calls:
            return ()
        # Evaluation order: an inner call (``self.encoder(src)`` inside
        # ``self.decoder(tgt, ...)``) ends first.
        calls.sort(key=lambda c: (c.node.end_lineno or 0, c.node.end_col_offset or 0))
        pos = (step.lineno, step.col_offset)
        regions: list[ast.AST] = [*reversed(self.flow.loops_of(step))]
        for region in regions:
            inside = [c for c in calls if self._within(c.node, region) and _pos(c.node) <= pos]
            if inside:
                return tuple(dict.fromkeys(c.model for c in inside))
        before = [c for c in calls if _pos(c.node) <= pos]
        return tuple(dict.fromkeys(c.model for c in before))

    def _within(self, node: ast.AST, ancestor: ast.AST) -> bool:
        parent = self.flow.parents.get(node)
        while parent is not None:
            if parent is ancestor:
                return True
            parent = self.flow.parents.get(parent)
        return False

    def _feeds_step(self, backward: ast.Call, scope: FuncNode | None, depth: int) -> bool:
        """Whether an optimizer step can run after ``backward``: later in its
        scope, anywhere in a loop around it, or after a call to its function."""
        loops = self.flow.loops_of(backward)
        pos = _pos(backward)
        for node in self.flow.scope_calls(scope):
            if not isinstance(node, ast.Call) or node is backward:
                continue
            steps = self.step_kind(node) == "optimizer_step"
            if not steps:
                callee = self.flow.callee_summary(node, scope)
                steps = callee is not None and callee[0].optimizer_step
            if steps and (_pos(node) > pos or any(self._within(node, lp) for lp in loops)):
                return True
        if depth > 0 and self.step_kind(backward) == "optimizer_step":
            return True  # ``optimizer.step(closure)`` runs the closure's backward
        if scope is not None and depth < 3:
            return any(
                self._feeds_step(call, caller, depth + 1)
                for caller, call, _ in self.flow.call_sites(scope)
            )
        return False


def _optimizer_names(flow: FlowView) -> tuple[set[str], set[str]]:
    yes: set[str] = set()
    no: set[str] = set()
    for node in nodes_of(flow.tree, ast.Assign):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            q = flow.imports.qualname(node.value.func) or ""
            for t in node.targets:
                text = dotted(t)
                if text is None:
                    continue
                if "lr_scheduler" in q or "Scheduler" in q:
                    no.add(text)
                elif q.startswith("torch.optim.") or q.endswith("GradScaler"):
                    yes.add(text)
    return yes, no


_WRITES = frozenset({"copy_", "mul_", "add_", "lerp_", "mul", "set_"})


def _polyak_targets(loop: ast.For | ast.AsyncFor) -> set[str]:
    """``for p, tp in zip(net.parameters(), target.parameters()): tp.data.mul_(...)``
    -> {``target``}: the models whose parameters the loop body writes."""
    it = loop.iter
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "zip"
        and isinstance(loop.target, ast.Tuple)
        and len(loop.target.elts) == len(it.args)
    ):
        return set()
    owners: dict[str, str] = {}
    for name, arg in zip(loop.target.elts, it.args, strict=True):
        if (
            isinstance(name, ast.Name)
            and isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute)
            and arg.func.attr == "parameters"
        ):
            owner = dotted(arg.func.value)
            if owner is not None:
                owners[name.id] = owner
    out: set[str] = set()
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in _WRITES:
                continue
            base = node.func.value
            while isinstance(base, (ast.Attribute, ast.Call)):
                base = base.func if isinstance(base, ast.Call) else base.value
            if isinstance(base, ast.Name) and base.id in owners:
                out.add(owners[base.id])
    if len(out) == len(owners):
        return set()  # every model written: not a source -> target copy
    return out


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
