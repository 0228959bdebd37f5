"""What the mode flow tracks besides the models ``rnnfix.analysis.torch.models``
finds: arguments a function of another file of the run calls or switches (a
model here too), parameters a function calls or switches (for the project
index's summaries, where a caller elsewhere may pass a model), the receivers
of any mode call (RNF003 asks about their modes), and the paths a data-parallel
wrapper is assigned to (a mode call on ``W.module`` switches ``W``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.modeapi import callable_parameters
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree
from rnnfix.analysis.torch.api import DATA_PARALLEL, MODULE_METHODS, module_mode_switch
from rnnfix.analysis.torch.models import ModelInfo, mode_receiver

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.torch.returns import ReturnFacts


def add_argument_models(flow: FlowView) -> None:
    """An argument that a function of another file of the run calls or
    switches the mode of is a model here too (as ``_propagate`` does for
    this file's functions)."""
    taken = set(flow.imports.names) | set(flow.index.module_functions) | set(flow.index.classes)
    for scope in flow.scopes():
        for node in flow.scope_calls(scope):
            ext = flow.external(node, scope)
            if ext is None:
                continue
            s = ext.summary
            for key in dict.fromkeys([*s.effects, *s.forwards, *s.entry_trains]):
                mine = ext.caller_key(key)
                if mine is None or mine in flow.models or mine.split(".")[0] in taken:
                    continue
                flow.models[mine] = ModelInfo(mine, None, None, None, "external")


def add_parameter_models(flow: FlowView) -> None:
    """For the project index's summaries: a parameter (or ``self.<attr>``)
    that a function calls or switches is a model, since a caller in another
    file may pass one (whether its argument is a model is the caller's to
    decide)."""
    for info in flow.index.functions.values():
        params = set(info.params[1:] if info.is_method else info.params) | set(info.kwonly)
        params -= callable_parameters(info.node)
        this = info.params[0] if info.is_method else None
        cls_name = info.cls.name if info.cls is not None else None
        for node in flow.index.scope_nodes(info.node):
            if not isinstance(node, ast.Call):
                continue
            if module_mode_switch(node) is not None:
                key = mode_receiver(node, flow.imports)
            else:
                # ``m(x)``, ``m.forward(x)``, ``self.net(x)``; not ``m.generate(x)``,
                # which may be any method (precision first, as ``forward_path``).
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "forward":
                    func = func.value
                key = dotted(func)
                if key is None or not (key in params or key.count(".") == 1):
                    continue
                owner, _, attr = key.partition(".")
                if attr and (owner != this or attr in MODULE_METHODS):
                    continue
                if attr and cls_name is not None and flow.index.method(cls_name, attr):
                    continue  # ``self.helper(x)``: a method, not a submodule
            if key is None:
                continue
            root = key.split(".")[0]
            if (root in params or (root == this and key != this)) and key not in flow.models:
                flow.models[key] = ModelInfo(key, None, None, None, "argument")


def switched_receivers(flow: FlowView) -> frozenset[str]:
    """Receivers of the file's mode calls, models or not."""
    found: set[str] = set()
    for node in walk_tree(flow.tree):
        if node.__class__ is ast.Call and module_mode_switch(node) is not None:
            assert isinstance(node, ast.Call)
            recv = mode_receiver(node, flow.imports)
            if recv is not None:
                found.add(recv)
    return frozenset(found)


class WrapperPaths:
    """Which paths of one file hold a data-parallel wrapper, each proved once."""

    def __init__(self, flow: FlowView) -> None:
        self.flow = flow
        # Paths assigned a data-parallel wrapper, asked only for ``W.module``
        # receivers (``mode_target``): most files have none.
        self._wrapper_values: dict[str, list[ast.expr]] | None = None
        self._wrapper_paths: dict[str, bool] = {}
        self._wrapper_helpers: ReturnFacts | None = None

    def is_wrapper_path(self, path: str) -> bool:
        """Whether ``path`` is assigned a DataParallel/DDP/FSDP wrapper somewhere
        in the file: ``W.module`` only exists on the wrapper, so
        ``W.module.train()`` on such a path switches every layer ``W`` runs. A
        wrapper a helper returns (``W = build_parallel(cfg)``) counts too, as
        RNF002 proves it (``rnnfix.analysis.torch.returns``), only asked where
        ``.module.`` is written. Each path is asked about once, and only the
        assignments to it are proved (the helpers' proofs are the costly part)."""
        found = self._wrapper_paths.get(path)
        if found is None:
            found = self._wrapper_paths[path] = self._assigned_wrapper(path)
        return found

    def _assigned_wrapper(self, path: str) -> bool:
        if self._wrapper_values is None:
            self._wrapper_values = {}
            for node in nodes_of(self.flow.tree, ast.Assign, ast.AnnAssign):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    if not isinstance(strip_self_returning(node.value), ast.Call):
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in map(dotted, targets):
                        if t is not None:
                            self._wrapper_values.setdefault(t, []).append(node.value)
        for value in self._wrapper_values.get(path, []):
            call = strip_self_returning(value)
            assert isinstance(call, ast.Call)
            if self.flow.imports.qualname(call.func) in DATA_PARALLEL:
                return True
            if ".module." not in self.flow.ctx.source:
                continue
            if self._wrapper_helpers is None:
                from rnnfix.analysis.torch.returns import ReturnFacts

                external = self.flow.project.returns if self.flow.project is not None else None
                self._wrapper_helpers = ReturnFacts(self.flow.tree, self.flow.imports, external)
            if self._wrapper_helpers.is_wrapper(value):
                return True
        return False

    def mode_target(self, receiver: str) -> str:
        """The path a mode call on ``receiver`` switches, for the flow:
        ``W.module`` of a data-parallel wrapper ``W`` is ``W`` (its only child)."""
        owner, _, last = receiver.rpartition(".")
        return owner if last == "module" and self.is_wrapper_path(owner) else receiver
