"""``model.train()`` used to get past cuDNN's RNN check in gradient code.

"cudnn RNN backward can only be called in training mode" is often answered by
putting the whole model in train mode before an attack or an attribution.
That works, but every dropout layer is then active and every BatchNorm uses
(and updates) batch statistics while the gradient is taken: the attack or the
saliency map is computed on another function than the deployed model, and the
running statistics drift. Only the RNNs need train mode.

A finding is: ``M.train()`` (the whole model, a statement of its own), then
in the same block a forward of ``M`` and gradient code about an input
(``rnnfix.analysis.grads.gradcode``: a captum gradient attribution, ``autograd.grad``
with respect to a non-parameter, an input that requires grad or whose
``.grad`` is read, a backward hook), with

- no optimizer step in the scope that may update ``M`` and no optimizer step
  after the backward (then the ``train()`` is for training, adversarial
  training included); for a ``train()`` in a function, no optimizer step in
  a scope of the file that calls it (directly or through its callers), nor
  in a function such a scope calls: ``x_adv = perturb(model, x, y)`` then
  ``train_step(model, optimizer, x_adv, y)`` is adversarial training too;
- no other mode call in between (``m.eval()`` on its dropout and BatchNorm
  layers, as torchattacks does, is the careful version of this workaround);
- ``M`` known to hold a cuDNN RNN.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rnnfix.analysis.evalgrad.across_calls import local_functions
from rnnfix.analysis.evalgrad.in_scope import EvalGradAnalysis, end_key, key, mode_call
from rnnfix.analysis.grads.gradcode import (
    attribution,
    forward_model,
    input_gradient,
    parameter_names,
)
from rnnfix.analysis.torch.api import mode_switch
from rnnfix.analysis.torch.rnns import RnnSpec

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.syntax.scopes import FuncNode

_HOOKS = frozenset({"register_backward_hook", "register_full_backward_hook", "register_hook"})


@dataclass(frozen=True)
class TrainForGradient:
    train_call: ast.Call  # ``M.train()``
    train_stmt: ast.Expr
    model: str
    rnns: tuple[RnnSpec, ...]
    sink: ast.Call  # the first gradient code it is for
    scope: ast.AST


def train_for_gradient(ctx: FileContext, analysis: EvalGradAnalysis) -> list[TrainForGradient]:
    modes = ctx.facts.modes
    out: list[TrainForGradient] = []
    for scope in [None, *modes.index.functions]:
        if not modes.in_lightning_module(scope):
            out.extend(_scope(ctx, analysis, modes, scope))
    return out


def _scope(
    ctx: FileContext, analysis: EvalGradAnalysis, modes: ModeFlow, scope: FuncNode | None
) -> Iterator[TrainForGradient]:
    imports = ctx.facts.imports
    nodes = modes.index.scope_nodes(scope)
    calls = sorted((n for n in nodes if isinstance(n, ast.Call)), key=key)
    trains = [(m[0], c) for c in calls if (m := mode_call(c)) is not None and m[1] == "train"]
    if not trains:
        return
    if scope is not None and _TrainingCallers(modes).calls_into_training(scope):
        return  # a step of (adversarial) training elsewhere in the file follows it
    sinks: list[tuple[ast.Call, str | None]] = []
    for call in calls:
        found = attribution(call, imports, analysis.assigned_values)
        if found is not None:
            sinks.append(
                (
                    call,
                    forward_model(
                        found.forward_func, modes.is_model, local_functions(modes, scope)
                    ),
                )
            )
        elif analysis.is_sink(call):
            sinks.append((call, None))
    if not sinks:
        return
    steps = [c for c in calls if modes.step_kind(c) == "optimizer_step"]
    feeding = {id(s.node) for s in modes.training_steps if s.feeds_optimizer_step}
    params = parameter_names(nodes)
    hooks = any(isinstance(c.func, ast.Attribute) and c.func.attr in _HOOKS for c in calls)
    forwards = [c for c in modes.model_calls if c.function is scope]
    for model, train in trains:
        stmt = analysis.statement(train)
        if not (isinstance(stmt, ast.Expr) and stmt.value is train):
            continue
        if any(analysis.step_may_update(s, model) for s in steps):
            continue  # training, adversarial training included
        for sink, captum_model in sinks:
            if key(sink) < end_key(train) or not analysis.encloses(stmt, sink):
                continue
            if id(sink) in feeding:
                break
            between = [c for c in calls if end_key(train) <= key(c) < key(sink)]
            if any(mode_switch(c) is not None for c in between):
                break  # the layers' modes are managed by hand after it
            ran = captum_model == model or any(
                f.model == model and end_key(train) <= key(f.node) <= end_key(sink)
                for f in forwards
            )
            if not ran:
                continue

            def is_param(text: str) -> bool:
                return text.split(".")[0] in params or modes.holds_model(text)

            about_input = (
                captum_model is not None or hooks or input_gradient(nodes, sink, imports, is_param)
            )
            if not about_input:
                break
            rnns = analysis.of_object(model, train)
            if rnns:
                out = TrainForGradient(train, stmt, model, rnns, sink, scope if scope else ctx.tree)
                yield out
            break


class _TrainingCallers:
    """Whether a function of the file is called from code that trains: a scope
    that holds an optimizer step, or calls a function of the file that does
    (one level down), or is itself such a function's caller (up the chain).
    Matched by name, methods included: over-matching only leaves a finding out."""

    def __init__(self, modes: ModeFlow) -> None:
        self.modes = modes
        self.by_name: dict[str, list[FuncNode]] = {}
        for fn in modes.index.functions:
            self.by_name.setdefault(fn.name, []).append(fn)
        self._steps: dict[FuncNode | None, bool] = {}

    def _has_step(self, scope: FuncNode | None) -> bool:
        found = self._steps.get(scope)
        if found is None:
            nodes = self.modes.index.scope_nodes(scope)
            found = any(
                isinstance(n, ast.Call) and self.modes.step_kind(n) == "optimizer_step"
                for n in nodes
            )
            self._steps[scope] = found
        return found

    def _trains(self, scope: FuncNode | None) -> bool:
        if self._has_step(scope):
            return True
        for node in self.modes.index.scope_nodes(scope):
            name = _called_name(node)
            if name is not None and any(self._has_step(f) for f in self.by_name.get(name, [])):
                return True
        return False

    def calls_into_training(self, fn: FuncNode, seen: frozenset[int] = frozenset()) -> bool:
        if id(fn) in seen:
            return False
        seen = seen | {id(fn)}
        for scope in [None, *self.modes.index.functions]:
            if scope is fn:
                continue
            if not any(_called_name(n) == fn.name for n in self.modes.index.scope_nodes(scope)):
                continue
            if self._trains(scope):
                return True
            if scope is not None and self.calls_into_training(scope, seen):
                return True
        return False


def _called_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None
