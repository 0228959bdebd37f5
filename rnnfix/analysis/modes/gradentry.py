"""Which models a function takes an input gradient through in the mode its
caller left them in: ``Summary.entry_grads``, for the project index.

``def saliency(model, x): x.requires_grad_(); model(x).max().backward();
return x.grad`` in ``utils.py`` has ``("model",)``: a caller in another file
that calls it while its model is in eval mode runs gradient code through an
eval-mode model (RNF004 reports it at the call, ``rnnfix.analysis.evalgrad.across_calls``).
Only gradient code about an input counts (``rnnfix.analysis.grads.gradcode``), and
only in a function that runs no optimizer step.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradcode import (
    AUTOGRAD_GRAD,
    attribution,
    forward_model,
    input_gradient,
    parameter_names,
)
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.torch.api import MODULE_METHODS

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flow import ScopeRun
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.syntax.scopes import FunctionInfo


def entry_gradients(flow: FlowView, info: FunctionInfo, run: ScopeRun) -> tuple[str, ...]:
    fn = info.node
    calls = flow.scope_calls(fn)
    nodes = flow.index.scope_nodes(fn)
    params = parameter_names(nodes)

    def values(name: str, use: ast.AST) -> list[ast.expr]:
        return [
            n.value
            for n in nodes
            if isinstance(n, ast.Assign) and any(dotted(t) == name for t in n.targets)
        ]

    def is_param(text: str) -> bool:
        return text.split(".")[0] in params or flow.holds_model(text)

    def no_function(name: str) -> None:
        return None

    out: list[str] = []
    # A function of this file it calls that does (``__call__`` running
    # ``self.forward(x)``, ``attack()`` running ``self._perturb(x)``), with
    # the key in the mode this function was entered with at the call.
    for call in calls:
        callee = flow.callee_summary(call, fn)
        if callee is None:
            continue
        summary, mapper = callee
        for name in summary.entry_grads:
            key = mapper(name)
            stmt = flow.stmt_of(call)
            frame = run.before.get(stmt) if stmt is not None else None
            if key is None or frame is None or key in out:
                continue
            facts = frame.lookup(key)
            if facts and all(f.origin is fn for f in facts):
                out.append(key)
    for sink in calls:
        found = attribution(sink, flow.imports, values)
        if found is not None:
            model = forward_model(found.forward_func, flow.is_model, no_function)
            keys = [(model, sink)] if model is not None else []
        elif _is_sink(flow, sink) and input_gradient(nodes, sink, flow.imports, is_param):
            keys = [
                (k, c)
                for c in calls
                if c is not sink
                and (c.end_lineno, c.end_col_offset) <= (sink.end_lineno, sink.end_col_offset)
                and (k := _model_key(flow, c)) is not None
            ]
        else:
            continue
        for key, forward in keys:
            stmt = flow.stmt_of(forward)
            frame = run.before.get(stmt) if stmt is not None else None
            if frame is None or key in out:
                continue
            # Every mode it may have there is the one it was called with.
            facts = frame.lookup(key)
            if facts and all(f.origin is fn for f in facts):
                out.append(key)
    return tuple(out)


def _is_sink(flow: FlowView, call: ast.Call) -> bool:
    if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        return True
    return flow.imports.qualname(call.func) == AUTOGRAD_GRAD


def _model_key(flow: FlowView, call: ast.Call) -> str | None:
    """The model (a parameter, ``self.<attr>``) whose forward ``call`` runs."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in MODULE_METHODS:
        return None  # ``self.model.train()``: a method of the module, not its forward
    text = flow.forward_path(call, flow.is_model)
    while text is not None:
        if text in flow.models:
            return text
        text = text.rpartition(".")[0] or None
    return None
