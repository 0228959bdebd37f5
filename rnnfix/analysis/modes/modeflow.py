"""The mode-flow analysis: which models may be in eval mode where.

Built once per file from a ``FileContext`` (``ctx.facts.modes``), on the
standard library's ``ast``. API:

- ``models: dict[str, ModelInfo]`` -- model objects by dotted text (``"model"``,
  ``"self.critic"``), see ``rnnfix.analysis.torch.models`` for what counts.
- ``mode_before(node, model) -> ModeState`` -- the modes (``Mode.TRAIN``,
  ``Mode.EVAL``, ``Mode.UNKNOWN``) ``model`` may be in just before the
  statement containing ``node`` runs, each with its origin (the ``.eval()``, the
  helper call, or the function itself for "as the callers left it"). An empty
  state means the statement is unreachable.
- ``grad_enabled(node) -> bool | None`` -- False under ``torch.no_grad()`` /
  ``inference_mode()`` / ``set_grad_enabled(False)`` or in a function decorated
  with them (or only called from such places), True where provably enabled,
  None when unknown.
- ``training_steps: list[TrainingStep]`` -- backward calls and optimizer steps,
  with the models each uses and whether a backward feeds an optimizer step.
- ``model_calls: list[ModelCall]`` -- every forward call of a model (direct, or
  through a helper of this file), with grad mode.
- ``mode_calls: list[ModeCall]`` -- every ``.eval()``/``.train(...)`` on a model.
- ``scope_of(node)``, ``stmt_of(node)``, ``loops_of(node)`` -- structural helpers.

How: functions are summarised (which models each sets to which mode, which it
calls); then every scope is interpreted (``rnnfix.analysis.modes.flow``) callers
first, so that a function's entry state is the join of the states its callers
in this file call it with (no caller: unknown). A call into another file of the
same run uses that function's summary from the project index
(``rnnfix.analysis.project.index``); a function there that trains the models it is
given in the mode it gets them is a training step of kind ``"call"`` here.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.grads.gradctx import grad_context
from rnnfix.analysis.modes.flow import Effect, ScopeRun, calls_in
from rnnfix.analysis.modes.freezing import Freezing
from rnnfix.analysis.modes.gradentry import entry_gradients
from rnnfix.analysis.modes.intent import deliberate_eval
from rnnfix.analysis.modes.modeapi import callable_parameters, has_mode_setter
from rnnfix.analysis.modes.state import Facts, ModeFact, ModeState, is_prefix
from rnnfix.analysis.syntax.aliases import canonical, function_aliases
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import LOOPS, FuncNode, FunctionInfo, Resolved
from rnnfix.analysis.syntax.walks import walk_local, walk_subtree, walk_tree
from rnnfix.analysis.torch.api import DATA_PARALLEL, MODULE_METHODS, module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import (
    ModelInfo,
    ModuleClasses,
    find_models,
    forward_path,
    mode_receiver,
    module_attributes,
    unwrap_built,
)
from rnnfix.analysis.torch.optimizers import Optimizers

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.project.summaries import ExternalCall, FunctionSummary
    from rnnfix.analysis.project.view import ProjectView
    from rnnfix.analysis.torch.returns import ReturnFacts

__all__ = ["Mode", "ModeFact", "ModeFlow", "ModeState", "ModelInfo", "TrainingStep"]

LoopNode = ast.For | ast.AsyncFor | ast.While
_ASSIGNMENTS = frozenset({ast.Assign, ast.AnnAssign})  # ``AugAssign`` sets no model
_OPTIMIZER_NAME = re.compile(r"(optim|(^|_)opt($|_)|^opt\w*$)", re.IGNORECASE)


@dataclass(frozen=True)
class Summary:
    """What a call to a function does, in the function's own names (parameters,
    ``self.<attr>``, globals). Plain data: the project index ships summaries of
    other files to worker processes."""

    effects: dict[str, Effect]
    forwards: tuple[str, ...]  # keys it calls (forward) with grad enabled, in call order
    optimizer_step: bool  # runs an optimizer step, directly or through calls
    # Keys a training step uses while they may still be in the mode the
    # function was entered with (computed for the project index only).
    entry_trains: tuple[str, ...] = ()
    # Keys it takes an input gradient through (saliency, an attack) in the mode
    # the caller left them in (project index only; ``rnnfix.analysis.modes.gradentry``).
    entry_grads: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.effects
            or self.forwards
            or self.optimizer_step
            or self.entry_trains
            or self.entry_grads
        )


@dataclass(frozen=True)
class TrainingStep:
    node: ast.Call
    # "call": a call to a function of another file of the run that runs a
    # training step on models it receives in the mode they have at the call.
    kind: Literal["backward", "optimizer_step", "call"]
    models: tuple[str, ...]  # models called with grad enabled on the way to it
    loops: tuple[LoopNode, ...]  # enclosing loops of its scope, outermost first
    function: FuncNode | None  # None: module level
    feeds_optimizer_step: bool  # backward: an optimizer step can follow it


@dataclass(frozen=True)
class ModelCall:
    node: ast.Call
    model: str
    function: FuncNode | None
    grad_enabled: bool | None
    via: FuncNode | None  # the helper of this file that calls it, if indirect


@dataclass(frozen=True)
class ModeCall:
    node: ast.Call
    model: str
    mode: Mode
    function: FuncNode | None


# Summaries computed inside one another before the flow switches to an
# iterative walk (each level costs several Python frames).
_MAX_SUMMARY_DEPTH = 40


class _TooDeep(RecursionError):
    """A summary chain reached ``_MAX_SUMMARY_DEPTH`` (a RecursionError: if
    even the iterative walk meets it, the file fails as too deep)."""


class ModeFlow:
    """``summaries_only``: for the project index, which only needs the
    summaries of this file's functions for callers in other files: the
    whole-file pass is skipped, and a parameter (or ``self.<attr>``) that a
    function calls or switches counts as a model, since a caller elsewhere may
    pass one (whether its argument is a model is the caller's to decide)."""

    def __init__(self, ctx: FileContext, summaries_only: bool = False) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self.imports = ctx.facts.imports
        self.parents = ctx.facts.parents
        self.project: ProjectView | None = ctx.facts.project
        self.summaries_only = summaries_only
        self.index = ctx.facts.index
        self.classes = ModuleClasses(self.index, self.imports, self.project)
        self._external: dict[ast.Call, ExternalCall | None] = {}
        self._params: dict[FuncNode | None, frozenset[str]] = {}
        self._module_attributes: dict[ast.ClassDef, frozenset[str]] = {}
        self._calls_cache: dict[int, list[ast.Call]] = {}
        self._plain_names: dict[ast.AST, frozenset[str]] = {}  # ``ScopeRun.plain``
        self._contents: dict[int, frozenset[int]] = {}
        self._scope_calls: dict[FuncNode | None, list[ast.Call]] = {}
        self.models: dict[str, ModelInfo] = find_models(
            self.tree, self.index, self.imports, self.classes
        )
        if summaries_only:
            self._add_parameter_models()
        elif self.project is not None:
            self._add_external_arguments()
        self._aliases: dict[FuncNode, dict[str, tuple[str, ast.stmt]]] = {}
        self._summaries: dict[FuncNode, Summary] = {}
        self._in_progress: set[FuncNode] = set()
        self._depth = 0  # summaries being computed inside one another
        self._scope_grads: dict[FuncNode, bool | None] = {}
        self._runs_found: dict[FuncNode | None, ScopeRun] = {}
        self._sites_found: dict[FuncNode, list[tuple[FuncNode | None, ast.Call, Resolved]]] = {}
        self._analysed = True  # not during __init__: it used to run last
        self._optimizers, self._not_optimizers = self._optimizer_names()
        # Paths assigned a data-parallel wrapper, asked only for ``W.module``
        # receivers (``mode_target``): most files have none.
        self._wrapper_values: dict[str, list[ast.expr]] | None = None
        self._wrapper_paths: dict[str, bool] = {}
        self._wrapper_helpers: ReturnFacts | None = None
        self.optimizers = Optimizers(self)
        # Receivers of a mode call that are not known models (an annotated
        # parameter only evaluated, an object of an unknown class): their mode
        # is tracked too, for rules that ask about them (RNF003). Not in
        # summaries for the project index: there a tracked key would become a
        # model of the caller's file.
        self.switched = frozenset[str]() if summaries_only else self._switched_receivers()
        # The whole-file pass runs at the first question that needs it (see
        # ``_runs``): RNF003 asks most files only which models a region calls.
        self._analysed = summaries_only

    @property
    def _runs(self) -> dict[FuncNode | None, ScopeRun]:
        self._ensure_analysed()
        return self._runs_found

    @property
    def _static_sites(self) -> dict[FuncNode, list[tuple[FuncNode | None, ast.Call, Resolved]]]:
        self._ensure_analysed()
        return self._sites_found

    def _ensure_analysed(self) -> None:
        """The whole-file pass, once, before anything reads its results or a
        summary is computed (the pass computes summaries in its own order, and
        recursion makes that order matter): answers are as if it ran in
        ``__init__``."""
        if not self._analysed:
            self._analysed = True
            self._analyse()

    # --- public queries ----------------------------------------------------
    def is_model(self, key: str) -> bool:
        return any(is_prefix(m, key) for m in self.models)

    def holds_model(self, key: str) -> bool:
        """``key`` is a model, or an object a model is an attribute of
        (``self`` for ``self.trunk``): a mode call on it switches the model
        too, since ``Module.train`` recurses into children."""
        return self.is_model(key) or any(is_prefix(key, m) for m in self.models)

    def tracks(self, key: str) -> bool:
        """Whether a mode call on ``key`` changes what the flow knows: a model,
        an object holding one, or any other receiver of a mode call."""
        return key in self.switched or self.holds_model(key)

    def model_info(self, key: str) -> ModelInfo | None:
        """The info of ``key`` or of the model it is a submodule of."""
        probe = key
        while True:
            if probe in self.models:
                return self.models[probe]
            if "." not in probe:
                return None
            probe = probe.rsplit(".", 1)[0]

    def mode_before(self, node: ast.AST, model: str) -> ModeState:
        stmt = self.stmt_of(node)
        scope = self.scope_of(node)
        run = self._runs.get(scope)
        if stmt is None or run is None:
            return ModeState(frozenset())
        frame = run.before.get(stmt)
        key = self.canonical(model, scope)
        return ModeState(frame.lookup(key) if frame is not None else frozenset())

    def entry_states(self, fn: FuncNode, model: str) -> list[tuple[ast.Call, ModeState]]:
        """For each call of ``fn`` in this file, the modes ``model`` (in
        ``fn``'s names) may be in just before it, in the caller's names: what
        the entry state of ``fn`` joins. A call that does not pass the model
        in a way the flow follows gives an unknown state."""
        out: list[tuple[ast.Call, ModeState]] = []
        for caller, call, res in self._static_sites.get(fn, []):
            run = self._runs.get(caller)
            frame = run.call_frames.get(call) if run is not None else None
            mine = res.caller_key(self.canonical(model, fn))
            if frame is None or mine is None:
                state = ModeState(frozenset({ModeFact(Mode.UNKNOWN, fn)}))
            else:
                state = ModeState(frame.lookup(self.canonical(mine, caller)))
            out.append((call, state))
        return out

    def switches_in(self, root: ast.AST, model: str) -> list[tuple[ast.Call, Mode]]:
        """Mode calls in ``root``'s own code (not in nested functions) that
        set ``model``'s mode: on ``model``, on an object it is an attribute of
        (``Module.train`` recurses), or on ``model.module`` (a wrapper's only
        child: every layer the wrapper runs). ``train(<expression>)`` on them
        counts, as a switch to an unknown mode. In source order."""
        out: list[tuple[ast.Call, Mode]] = []
        for node in walk_local(root):
            switch = module_mode_switch(node, lenient=True)
            if switch is None:
                continue
            assert isinstance(node, ast.Call)
            recv = mode_receiver(node, self.imports)
            if recv is not None and (is_prefix(recv, model) or recv == f"{model}.module"):
                out.append((node, switch.mode))
        return sorted(out, key=lambda item: _pos(item[0]))

    def aliases(
        self, scope: FuncNode | None, params: bool = False
    ) -> dict[str, tuple[str, ast.stmt]]:
        """Must-aliases of ``scope`` (``rnnfix.analysis.syntax.aliases``): local names
        of attributes; with ``params`` also parameters stored as attributes."""
        if scope is None:
            return {}
        found = self._aliases.get(scope)
        if found is None:
            found = function_aliases(self.index, scope, self._wrapped_name)
            self._aliases[scope] = found
        if params:
            return found
        info = self.index.functions.get(scope)
        taken = set(info.params) | set(info.kwonly) if info is not None else set()
        return {k: v for k, v in found.items() if k not in taken}

    def _wrapped_name(self, value: ast.expr) -> str | None:
        """The name ``value`` wraps or returns itself: ``nn.DataParallel(model)``,
        ``model.to(device)`` -> ``model``."""
        inner = unwrap_built(value, self.imports)
        return inner.id if inner is not value and isinstance(inner, ast.Name) else None

    def canonical(self, key: str, scope: FuncNode | None) -> str:
        """The path the flow tracks ``key`` under in ``scope`` (``model`` ->
        ``self.model`` after ``model = self.model``)."""
        return canonical(key, self.aliases(scope)) if scope is not None else key

    def spelling(self, key: str, before: ast.stmt) -> str:
        """How to write ``key`` in a statement inserted before ``before``: its
        aliased path when the alias is not bound yet there."""
        scope = self.scope_of(before)
        found = self.aliases(scope).get(key.split(".")[0])
        if found is not None and (before.lineno, before.col_offset) <= (
            found[1].lineno,
            found[1].col_offset,
        ):
            return self.canonical(key, scope)
        return key

    def grad_enabled(self, node: ast.AST) -> bool | None:
        return self._grad(node)

    def stmt_of(self, node: ast.AST) -> ast.stmt | None:
        while not isinstance(node, ast.stmt):
            parent = self.parents.get(node)
            if parent is None:
                return None
            node = parent
        return node

    def scope_of(self, node: ast.AST) -> FuncNode | None:
        parent = self.parents.get(node)
        while parent is not None:
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return parent
            parent = self.parents.get(parent)
        return None

    def loops_of(self, node: ast.AST) -> tuple[LoopNode, ...]:
        """Loops of the same scope whose body contains ``node``, outermost first."""
        out: list[LoopNode] = []
        child, parent = node, self.parents.get(node)
        while parent is not None and not isinstance(
            parent, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            if isinstance(parent, LOOPS) and any(child is b for b in parent.body):
                out.append(parent)
            child, parent = parent, self.parents.get(parent)
        return tuple(reversed(out))

    def contains(self, outer: ast.AST) -> Callable[[ast.AST], bool]:
        """A membership test for the nodes inside ``outer`` (cached). The set
        is built at the first question: a loop's pass asks only about guarded
        facts, which most loops have none of."""
        contents = self._contents

        def inside(node: ast.AST) -> bool:
            ids = contents.get(id(outer))
            if ids is None:
                ids = contents[id(outer)] = frozenset(map(id, walk_subtree(outer)))
            return id(node) in ids

        return inside

    def function_info(self, fn: FuncNode) -> FunctionInfo | None:
        return self.index.functions.get(fn)

    def in_lightning_module(self, fn: FuncNode | None) -> bool:
        """Lightning switches modes itself: its modules are never RNF001's business."""
        info = self.index.functions.get(fn) if fn else None
        while info is not None:
            if info.cls is not None and info.cls.name in self.classes.lightning:
                return True
            info = self.index.functions.get(info.parent) if info.parent else None
        return False

    def resolve(
        self, call: ast.Call, scope: FuncNode | None, target: str | None = None
    ) -> Resolved | None:
        """The function of this file ``call`` runs: a direct call, a method or
        constructor, or the closure ``optimizer.step(closure)`` runs (LBFGS)."""
        res = self.index.resolve(call, scope, target)
        if res is not None:
            return res
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
            return None
        args = [*call.args, *(k.value for k in call.keywords if k.arg == "closure")]
        for arg in args:
            if isinstance(arg, ast.Name):
                fn = self.index.lookup_function(arg.id, scope)
                if fn is not None and not fn.params:
                    return Resolved(fn, None, {})
        return None

    @functools.cached_property
    def freezing(self) -> Freezing:
        """Freezing, partial modes, ``None`` paths and conditional mode calls:
        the author's intent (``rnnfix.analysis.freezing``)."""
        return Freezing(self)

    def deliberate_eval(self, fact: ModeFact, step: ast.Call, model: str) -> bool:
        """``fact`` (eval mode of ``model`` at training step ``step``) was set on
        purpose: an ``eval()`` of the step's own scope whose only successor is
        training (frozen BatchNorm fine-tuning), see ``rnnfix.analysis.modes.intent``."""
        return deliberate_eval(self, fact, step, self.scope_of(step), model)

    def callers(self, fn: FuncNode) -> list[tuple[FuncNode | None, ast.Call]]:
        return [(scope, call) for scope, call, _ in self._static_sites.get(fn, [])]

    @functools.cached_property
    def mode_calls(self) -> list[ModeCall]:
        out: list[ModeCall] = []
        for scope in self._scope_nodes():
            for node in self.scope_calls(scope):
                switch = module_mode_switch(node)
                if switch is not None:
                    recv = mode_receiver(node, self.imports)
                    if recv is not None and self.holds_model(recv):
                        out.append(ModeCall(node, recv, switch.mode, scope))
        return out

    @functools.cached_property
    def model_calls(self) -> list[ModelCall]:
        out: list[ModelCall] = []
        for scope in self._scope_nodes():
            for node in self.scope_calls(scope):
                if not isinstance(node, ast.Call):
                    continue
                direct = self._forward_key(node)
                if direct is not None:
                    if self.is_model(direct):
                        out.append(ModelCall(node, direct, scope, self.grad_enabled(node), None))
                    continue
                res = self.index.resolve(node, scope)
                if res is not None:
                    summary, mapper, via = self.summary(res.callee), res.caller_key, res.callee.node
                else:
                    ext = self.external(node, scope)
                    if ext is None:
                        continue
                    summary, mapper, via = ext.summary, ext.caller_key, None
                for key in summary.forwards:
                    mine = mapper(key)
                    if mine is not None and self.is_model(mine):
                        out.append(ModelCall(node, mine, scope, self.grad_enabled(node), via))
        return out

    @functools.cached_property
    def training_steps(self) -> list[TrainingStep]:
        out: list[TrainingStep] = []
        for scope in self._scope_nodes():
            if self.in_lightning_module(scope):
                continue
            for node in self.scope_calls(scope):
                if isinstance(node, ast.Call):
                    kind = self.step_kind(node)
                    if kind is not None:
                        out.append(
                            TrainingStep(
                                node=node,
                                kind=kind,
                                models=self._models_used(node, scope),
                                loops=self.loops_of(node),
                                function=scope,
                                feeds_optimizer_step=kind == "optimizer_step"
                                or self._feeds_step(node, scope, 0),
                            )
                        )
                    elif self.project is not None:
                        step = self._external_step(node, scope)
                        if step is not None:
                            out.append(step)
        return out

    def _external_step(self, node: ast.Call, scope: FuncNode | None) -> TrainingStep | None:
        """A call into another file of the run whose function trains the models
        it is given in the mode they are in (no ``train()`` of its own): the
        training step is this call, as far as this file is concerned; that file
        is never edited for this file's finding."""
        ext = self.external(node, scope)
        if ext is None or not ext.summary.optimizer_step:
            return None
        models = [ext.caller_key(k) for k in ext.summary.entry_trains]
        used = tuple(dict.fromkeys(m for m in models if m is not None and self.is_model(m)))
        if not used:
            return None
        return TrainingStep(node, "call", used, self.loops_of(node), scope, True)

    # --- calls into other files of the run ---------------------------------
    def external(self, call: ast.Call, scope: FuncNode | None) -> ExternalCall | None:
        """The function of another file of the run that ``call`` runs (through
        the project index); None without an index or when it is unknown."""
        if self.project is None:
            return None
        if call in self._external:
            return self._external[call]
        found = self.project.call(call, self._parameters(scope))
        self._external[call] = found
        return found

    def _parameters(self, scope: FuncNode | None) -> frozenset[str]:
        """Parameters of ``scope`` and its enclosing functions: they shadow
        imports. Once per scope (asked for every call of it)."""
        found = self._params.get(scope)
        if found is None:
            found = self._params[scope] = self._find_parameters(scope)
        return found

    def _find_parameters(self, scope: FuncNode | None) -> frozenset[str]:
        names: set[str] = set()
        while scope is not None:
            info = self.index.functions.get(scope)
            if info is None:
                break
            names.update(info.params)
            names.update(info.kwonly)
            scope = info.parent
        return frozenset(names)

    def _add_external_arguments(self) -> None:
        """An argument that a function of another file of the run calls or
        switches the mode of is a model here too (as ``_propagate`` does for
        this file's functions)."""
        taken = set(self.imports.names) | set(self.index.module_functions) | set(self.index.classes)
        for scope in self._scope_nodes():
            for node in self.scope_calls(scope):
                ext = self.external(node, scope)
                if ext is None:
                    continue
                s = ext.summary
                for key in dict.fromkeys([*s.effects, *s.forwards, *s.entry_trains]):
                    mine = ext.caller_key(key)
                    if mine is None or mine in self.models or mine.split(".")[0] in taken:
                        continue
                    self.models[mine] = ModelInfo(mine, None, None, None, "argument")

    def _add_parameter_models(self) -> None:
        for info in self.index.functions.values():
            params = set(info.params[1:] if info.is_method else info.params) | set(info.kwonly)
            params -= callable_parameters(info.node)
            this = info.params[0] if info.is_method else None
            cls_name = info.cls.name if info.cls is not None else None
            for node in self.index.scope_nodes(info.node):
                if not isinstance(node, ast.Call):
                    continue
                if module_mode_switch(node) is not None:
                    key = mode_receiver(node, self.imports)
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
                    if attr and cls_name is not None and self.index.method(cls_name, attr):
                        continue  # ``self.helper(x)``: a method, not a submodule
                if key is None:
                    continue
                root = key.split(".")[0]
                if (root in params or (root == this and key != this)) and key not in self.models:
                    self.models[key] = ModelInfo(key, None, None, None, "argument")

    # --- summaries ---------------------------------------------------------
    def summary(self, info: FunctionInfo) -> Summary:
        self._ensure_analysed()
        fn = info.node
        done = self._summaries.get(fn)
        if done is not None:
            return done
        if fn in self._in_progress:  # recursion: assume it changes nothing
            return Summary({}, (), False)
        if self._depth == 0:
            try:
                return self._summary(info)
            except _TooDeep:
                # A call chain deeper than Python's stack allows (generated
                # code): compute the callees first, one at a time, then retry.
                self._in_progress.clear()
                self._summaries_callees_first(fn)
                return self._summary(info)
        if self._depth >= _MAX_SUMMARY_DEPTH:
            raise _TooDeep
        return self._summary(info)

    def _summaries_callees_first(self, root: FuncNode) -> None:
        """Summaries of what ``root`` calls, deepest first, by an iterative
        walk: a function on the walk's stack counts as in progress, as it would
        in the recursive computation, so no summary recurses more than a step."""
        stack: list[tuple[FuncNode, Iterator[FuncNode]]] = [(root, self._callees(root))]
        seen = {root}
        while stack:
            fn, pending = stack[-1]
            for c in pending:
                if c not in seen and c not in self._summaries:
                    seen.add(c)
                    stack.append((c, self._callees(c)))
                    break
            else:
                stack.pop()
                if fn is root:
                    break
                self._in_progress = {f for f, _ in stack}
                try:
                    self._summary(self.index.functions[fn])
                finally:
                    self._in_progress = set()

    def _callees(self, fn: FuncNode) -> Iterator[FuncNode]:
        for call in self.scope_calls(fn):
            res = self.resolve(call, fn)
            if res is not None:
                yield res.callee.node

    def _summary(self, info: FunctionInfo) -> Summary:
        fn = info.node
        self._in_progress.add(fn)
        self._depth += 1
        try:
            entry_fact = frozenset({ModeFact(Mode.UNKNOWN, fn)})
            run = ScopeRun(self, fn, fn, lambda _key: entry_fact)
            # Without anything that can set a mode, the run would end with the
            # entry facts only (no effect) and compute no other summary.
            end = None if not self.summaries_only and self._inert(fn) else run.run(fn.body)
            effects: dict[str, Effect] = {}
            if end is not None:
                params = {*info.params, *info.kwonly}
                for key, facts in end.values.items():
                    sets = frozenset(
                        f.mode
                        for f in facts
                        if f.origin is not fn and not _rebinds_parameter(f, key, params)
                    )
                    if sets:
                        effects[key] = Effect(any(f.origin is fn for f in facts), sets)
            forwards = self._forwards(info)
            entry_trains = self._entry_trains(info, run, forwards) if self.summaries_only else ()
            steps = self._runs_optimizer_step(info)
            grads = self.summaries_only and not steps
            entry_grads = entry_gradients(self, info, run) if grads else ()
            summary = Summary(effects, forwards, steps, entry_trains, entry_grads)
        finally:
            self._in_progress.discard(fn)
            self._depth -= 1
        self._summaries[fn] = summary
        return summary

    def _inert(self, fn: FuncNode) -> bool:
        """Nothing in ``fn``'s own code can give a model a fact of its own in
        the interpreter (``flow.ScopeRun``): no mode call (nor ``train(was)``),
        no call of a function of this file (nor of another file of the run
        with effects), no read of ``.training``, no assignment to a model."""
        for node in self.index.scope_nodes(fn):
            cls = node.__class__
            if cls is ast.Call:
                assert isinstance(node, ast.Call)
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("train", "eval"):
                    return False
                if module_mode_switch(node) is not None or self.resolve(node, fn) is not None:
                    return False
                ext = self.external(node, fn)
                if ext is not None and ext.summary.effects:
                    return False
            elif cls is ast.Attribute:
                assert isinstance(node, ast.Attribute)
                if node.attr == "training":
                    return False
            elif cls in _ASSIGNMENTS:
                # ``ScopeRun.assign`` sets a target (or an element of a tuple
                # target) that is a model.
                assert isinstance(node, (ast.Assign, ast.AnnAssign))
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stack = list(targets)  # tuple targets at any depth (``assignment_pairs``)
                while stack:
                    t = stack.pop()
                    if isinstance(t, (ast.Tuple, ast.List)):
                        stack.extend(t.elts)
                    elif (key := dotted(t)) is not None and self.is_model(key):
                        return False
        return True

    def _entry_trains(
        self, info: FunctionInfo, run: ScopeRun, forwards: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Keys a training step of ``info`` (or of a function it calls) may use
        while they are still in the mode the caller left them in."""
        fn = info.node
        out: list[str] = []
        for node in self.scope_calls(fn):
            if self.step_kind(node) is not None:
                keys: tuple[str, ...] = forwards
            else:
                callee = self.callee_summary(node, fn)
                if callee is None:
                    continue
                summary, mapper = callee
                keys = tuple(k for k in map(mapper, summary.entry_trains) if k is not None)
            stmt = self.stmt_of(node)
            frame = run.before.get(stmt) if stmt is not None else None
            if frame is None:
                continue  # unreachable
            for key in keys:
                if key not in out and any(f.origin is fn for f in frame.lookup(key)):
                    out.append(key)
        return tuple(out)

    def callee_summary(
        self, call: ast.Call, scope: FuncNode | None
    ) -> tuple[Summary, Callable[[str], str | None]] | None:
        """The summary of the function ``call`` runs (of this file, else of
        another file of the run) and the map from its names to the caller's."""
        res = self.index.resolve(call, scope)
        if res is not None:
            return self.summary(res.callee), res.caller_key
        ext = self.external(call, scope)
        if ext is not None:
            return ext.summary, ext.caller_key
        return None

    def _forwards(self, info: FunctionInfo) -> tuple[str, ...]:
        if self._decorator_grad(info.node) is False:
            return ()
        found: list[tuple[tuple[int, int], str]] = []
        for node in self.scope_calls(info.node):
            if not isinstance(node, ast.Call) or self._grad_local(node) is False:
                continue
            end = (node.end_lineno or 0, node.end_col_offset or 0)
            direct = self._forward_key(node)
            if direct is not None:
                found.append((end, self.canonical(direct, info.node)))
                continue
            callee = self.callee_summary(node, info.node)
            if callee is not None:
                summary, mapper = callee
                for key in summary.forwards:
                    mine = mapper(key)
                    if mine is not None:
                        found.append((end, mine))
        found.sort(key=lambda item: item[0])  # inner calls end first: evaluation order
        return tuple(dict.fromkeys(key for _, key in found))

    def _runs_optimizer_step(self, info: FunctionInfo) -> bool:
        for node in self.scope_calls(info.node):
            if isinstance(node, ast.Call):
                if self.step_kind(node) == "optimizer_step":
                    return True
                callee = self.callee_summary(node, info.node)
                if callee is not None and callee[0].optimizer_step:
                    return True
        return False

    # --- the whole-file pass -----------------------------------------------
    def _scope_nodes(self) -> list[FuncNode | None]:
        return [None, *self.index.functions]

    def scope_calls(self, scope: FuncNode | None) -> list[ast.Call]:
        """Every call in a scope's own code (not in nested defs), in source order."""
        found = self._scope_calls.get(scope)
        if found is None:
            found = [n for n in self.index.scope_nodes(scope) if isinstance(n, ast.Call)]
            self._scope_calls[scope] = found
        return found

    def calls_of(self, node: ast.AST | None) -> list[ast.Call]:
        if node is None:
            return []
        found = self._calls_cache.get(id(node))
        if found is None:
            if isinstance(node, ast.stmt) and not isinstance(
                node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
            ):
                # simple statements only; compound ones pass their header parts
                found = [c for child in ast.iter_child_nodes(node) for c in calls_in(child)]
            else:
                found = calls_in(node)
            self._calls_cache[id(node)] = found
        return found

    def _analyse(self) -> None:
        for scope in self._scope_nodes():
            for node in self.scope_calls(scope):
                if isinstance(node, ast.Call):
                    res = self.resolve(node, scope)
                    if res is not None:
                        self._static_sites.setdefault(res.callee.node, []).append(
                            (scope, node, res)
                        )
        for scope in self._callers_first():
            if scope is None:
                run = ScopeRun(
                    self,
                    None,
                    self.tree,
                    lambda _key: frozenset({ModeFact(Mode.UNKNOWN, self.tree)}),
                )
                run.run(self.tree.body)
            else:
                run = ScopeRun(self, scope, scope, self._entry(scope))
                run.run(scope.body)
            self._runs[scope] = run

    def _callers_first(self) -> list[FuncNode | None]:
        """Scopes in an order where callers come before callees (recursion aside)."""
        callees: dict[FuncNode | None, list[FuncNode]] = {}
        for callee, sites in self._static_sites.items():
            for scope, _, _ in sites:
                callees.setdefault(scope, []).append(callee)
        order: list[FuncNode | None] = []
        seen: set[FuncNode | None] = set()

        # Iterative post-order DFS: a call chain thousands of functions long
        # (generated code) must not hit Python's recursion limit.
        for root in [None, *self.index.functions]:
            if root in seen:
                continue
            seen.add(root)
            stack: list[tuple[FuncNode | None, Iterator[FuncNode]]] = [
                (root, iter(callees.get(root, [])))
            ]
            while stack:
                scope, pending = stack[-1]
                for c in pending:
                    if c not in seen:
                        seen.add(c)
                        stack.append((c, iter(callees.get(c, []))))
                        break
                else:
                    stack.pop()
                    order.append(scope)
        order.reverse()
        # functions nobody calls go first too; module stays before its callees
        return order

    def _entry(self, fn: FuncNode) -> Callable[[str], Facts]:
        unknown = frozenset({ModeFact(Mode.UNKNOWN, fn)})
        cache: dict[str, Facts] = {}
        # A name the function binds (not a parameter) is unbound when it is
        # entered: no caller's value reaches it (CloserLookFewShot's
        # ``linear_clf``, built in an if/elif with no else, was "unknown as
        # set_forward_adaptation receives it").
        info = self.index.functions.get(fn)
        a = fn.args
        passed = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        own = info.locals - passed if info is not None else set()

        def lookup(key: str) -> Facts:
            found = cache.get(key)
            if found is not None:
                return found
            if key.split(".")[0] in own:
                return frozenset()
            cache[key] = unknown  # guards against recursion
            facts: set[ModeFact] = set()
            for caller, call, res in self._static_sites.get(fn, []):
                run = self._runs.get(caller)
                frame = run.call_frames.get(call) if run is not None else None
                if frame is None or run is None:
                    continue  # caller not analysed yet (recursion) or unreachable
                mine = res.caller_key(key)
                if mine is None:
                    facts.add(ModeFact(Mode.UNKNOWN, fn))
                    continue
                for f in frame.lookup(mine):
                    cause = f.cause if f.origin is run.scope_node else f.origin
                    facts.add(ModeFact(f.mode, fn, cause))
            result = frozenset(facts) if facts else unknown
            if not self._static_sites.get(fn):
                result |= self._object_state(fn, key)
            elif self._object_state(fn, key):
                # Called here, but maybe also on instances in other files of
                # the run (asked only when a method may leave the model in
                # eval): what runs there before it counts.
                before = self._run_predecessors(fn)
                if before:
                    result |= self._object_state(fn, key, before)
            cache[key] = result
            return result

        return lookup

    def _object_state(self, fn: FuncNode, key: str, only: frozenset[str] | None = None) -> Facts:
        """A public method nobody in the file calls (an entry point such as
        ``fit()``) may run after any public method of its object: it is
        entered with ``self.<model>`` in the mode any of them (the
        constructor included, and those inherited from a base of this file
        or of another file of the run) may leave it in. Only eval matters: a
        ``predict()`` that never restores train mode breaks the next
        ``fit()``. ``only``: the methods that may run before it (what the
        callers in other files of the run do)."""
        info = self.index.functions.get(fn)
        if info is None or info.cls is None or not info.is_method or not _public(fn.name):
            return frozenset()
        cls = info.cls
        if cls.name in self.classes.modules or cls.name in self.classes.lightning:
            return frozenset()  # a module's own mode is its caller's business
        this, _, rest = key.partition(".")
        if this != info.params[0] or not rest:
            return frozenset()
        if has_mode_setter(self, fn, key, Mode.TRAIN):
            return frozenset()  # its callers switch it back to train (``agent.train()``)
        out: set[ModeFact] = set()
        for name, method in self._public_methods(cls).items():
            if only is not None and name not in only:
                continue
            if isinstance(method, FuncNode):
                other = self.index.functions.get(method)
                if other is None or not other.is_method:
                    continue
                mine = f"{other.params[0]}.{rest}"
                effect = self.summary(other).effects.get(mine)
                if effect is None or Mode.EVAL not in effect.sets:
                    continue
                cause: ast.AST = next(
                    (
                        c.node
                        for c in self.mode_calls
                        if c.function is method and c.mode is Mode.EVAL and is_prefix(c.model, mine)
                    ),
                    method,
                )
            else:  # a base's method in another file: the base names it here
                fs, cause = method
                if not fs.is_method or not fs.params:
                    continue
                effect = fs.summary.effects.get(f"{fs.params[0]}.{rest}")
                if effect is None or Mode.EVAL not in effect.sets:
                    continue
            out.add(ModeFact(Mode.EVAL, fn, cause))
        return frozenset(out)

    def public_methods(
        self, cls: ast.ClassDef
    ) -> dict[str, FuncNode | tuple[FunctionSummary, ast.expr]]:
        return self._public_methods(cls)

    def _public_methods(
        self, cls: ast.ClassDef
    ) -> dict[str, FuncNode | tuple[FunctionSummary, ast.expr]]:
        """The public methods of ``cls`` by name, with those it inherits from
        its bases in this file and in other files of the run (those with the
        base expression that names them here); the nearest definition wins."""
        out: dict[str, FuncNode | tuple[FunctionSummary, ast.expr]] = {}
        todo: list[ast.ClassDef] = [cls]
        seen: set[str] = set()
        while todo:
            current = todo.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            for stmt in current.body:
                if isinstance(stmt, FuncNode) and _public(stmt.name):
                    out.setdefault(stmt.name, stmt)
            for base in current.bases:
                local = self.index.classes.get(base.id) if isinstance(base, ast.Name) else None
                if local is not None:
                    todo.append(local)
                    continue
                found = self.project.lookup_class(base) if self.project is not None else None
                if found is not None:
                    for name, fs in found.methods.items():
                        if _public(name):
                            out.setdefault(name, (fs, base))
        return out

    def _run_predecessors(self, fn: FuncNode) -> frozenset[str]:
        """The methods other files of the run may call on an instance of
        ``fn``'s class before ``fn`` (``__init__`` for the constructor)."""
        info = self.index.functions.get(fn)
        if self.project is None or info is None or info.cls is None or not _public(fn.name):
            return frozenset()
        cls = info.cls
        if self.parents.get(cls) is not self.tree:
            return frozenset()  # only module-level classes can be imported
        order = self.project.method_order(cls.name)
        return frozenset(a for a, b in order if b == fn.name)

    def _switched_receivers(self) -> frozenset[str]:
        found: set[str] = set()
        for node in walk_tree(self.tree):
            if node.__class__ is ast.Call and module_mode_switch(node) is not None:
                assert isinstance(node, ast.Call)
                recv = mode_receiver(node, self.imports)
                if recv is not None:
                    found.add(recv)
        return frozenset(found)

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
            for node in walk_tree(self.tree):
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
            if self.imports.qualname(call.func) in DATA_PARALLEL:
                return True
            if ".module." not in self.ctx.source:
                continue
            if self._wrapper_helpers is None:
                from rnnfix.analysis.torch.returns import ReturnFacts

                external = self.project.returns if self.project is not None else None
                self._wrapper_helpers = ReturnFacts(self.tree, self.imports, external)
            if self._wrapper_helpers.is_wrapper(value):
                return True
        return False

    def mode_target(self, receiver: str) -> str:
        """The path a mode call on ``receiver`` switches, for the flow:
        ``W.module`` of a data-parallel wrapper ``W`` is ``W`` (its only child)."""
        owner, _, last = receiver.rpartition(".")
        return owner if last == "module" and self.is_wrapper_path(owner) else receiver

    # --- training steps and model calls ------------------------------------
    def _optimizer_names(self) -> tuple[set[str], set[str]]:
        yes: set[str] = set()
        no: set[str] = set()
        for node in walk_tree(self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = self.imports.qualname(node.value.func) or ""
                for t in node.targets:
                    text = dotted(t)
                    if text is None:
                        continue
                    if "lr_scheduler" in q or "Scheduler" in q:
                        no.add(text)
                    elif q.startswith("torch.optim.") or q.endswith("GradScaler"):
                        yes.add(text)
        return yes, no

    def _is_optimizer(self, text: str) -> bool:
        if text in self._optimizers or self.optimizers.is_optimizer(text):
            return True
        if text in self._not_optimizers:
            return False
        last = text.rsplit(".", 1)[-1]
        return bool(_OPTIMIZER_NAME.search(last)) or "scaler" in last.lower()

    def step_kind(self, call: ast.Call) -> Literal["backward", "optimizer_step"] | None:
        func = call.func
        if self.imports.qualname(func) == "torch.autograd.backward":
            return "backward"
        if not call.args and not call.keywords and self._callable_optimizer(func):
            return "optimizer_step"  # ``train_op = get_train_op(params=...)``; ``train_op()``
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr == "backward":
            root = func.value
            while isinstance(root, (ast.Attribute, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and self.imports.qualname(root) not in (None, "torch"):
                # a name bound to another library (``accelerate`` passes: it is
                # usually an instance, not an import)
                q = self.imports.qualname(root) or ""
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

    @functools.cached_property
    def refreshed_targets(self) -> frozenset[str]:
        """Models whose weights are copied from another model rather than
        trained: ``target.load_state_dict(net.state_dict())``, or a loop over
        ``zip(net.parameters(), target.parameters())`` that writes the
        target's (``copy_``, Polyak/EMA ``mul_``/``add_``/``lerp_``). Target
        networks stay in eval on purpose; no rule puts them in train mode."""
        found: set[str] = set()
        for node in walk_tree(self.tree):
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
        return frozenset(k for k in found if self.is_model(k))

    def is_target_network(self, model: str, scope: FuncNode | None) -> bool:
        """``model`` is refreshed from another model and no optimizer of this
        file is known to update it."""
        key = self.canonical(model, scope)
        if not any(is_prefix(t, key) or is_prefix(t, model) for t in self.refreshed_targets):
            return False
        return not self.optimizers.may_own(key)

    def _callable_optimizer(self, func: ast.expr) -> bool:
        """A call of an object built from ``parameters()`` by something other
        than ``torch.optim`` (whose optimizers are not callable)."""
        text = dotted(func)
        return (
            text is not None
            and text not in self._optimizers
            and not self.is_model(text)
            and self.optimizers.is_optimizer(text)
        )

    def step_may_update(self, step: ast.Call, model: str) -> bool | None:
        """Whether optimizer step ``step`` (``opt.step()``, ``train_op()``)
        updates ``model``'s parameters; None when whose they are is unknown."""
        func = step.func
        receiver = dotted(func.value if isinstance(func, ast.Attribute) else func)
        if receiver is None:
            return None
        scope = self.scope_of(step)
        owners = None
        if scope is not None:
            owners = self.optimizers.reaching_owners(receiver, scope, step)
        if owners is None:
            owners = self.optimizers.owners_of(receiver, scope)
        if owners is None:
            return None
        return self._owned(owners, self.canonical(model, scope), scope, 0)

    def _owned(
        self, owners: frozenset[str], key: str, scope: FuncNode | None, depth: int
    ) -> bool | None:
        if any(is_prefix(o, key) or is_prefix(key, o) for o in owners):
            return True
        info = self.index.functions.get(scope) if scope is not None else None
        root, _, rest = key.partition(".")
        this = info.params[0] if info is not None and info.is_method else None
        if info is None or root == this or root not in {*info.params, *info.kwonly}:
            return False
        params = {*info.params, *info.kwonly}
        if all(o.split(".")[0] in info.locals - params for o in owners):
            return False  # ``Adam([text_embeddings])`` over a local tensor: not the caller's model
        # A parameter: whatever its callers pass (``train(model, ...)`` with a
        # global optimizer over ``model``); unknown without callers.
        sites = self._static_sites.get(info.node, [])
        if not sites or depth > 2:
            return None
        verdicts = set()
        for caller, _, res in sites:
            mine = res.args.get(root)
            if mine is None:
                return None
            found = self._owned(
                owners,
                self.canonical(mine + ("." + rest if rest else ""), caller),
                caller,
                depth + 1,
            )
            if found is None:
                return None
            verdicts.add(found)
        return True in verdicts

    def forward_path(self, call: ast.Call, is_model: Callable[[str], bool]) -> str | None:
        """``models.forward_path`` with this file's classes: the path whose
        forward ``call`` runs, for a caller's notion of ``is_model``."""
        return forward_path(call, is_model, self.is_submodule)

    def is_submodule(self, owner: str, attr: str) -> bool:
        """``owner.attr`` holds a module: ``owner``'s class, defined in this
        file, assigns one to ``self.attr``."""
        info = self.model_info(owner)
        name = info.class_name if info is not None else None
        cls = self.index.classes.get(name) if name else None
        if cls is None:
            return False
        attrs = self._module_attributes.get(cls)
        if attrs is None:
            attrs = module_attributes(cls, self.index, self.imports, self.classes, self.models)
            self._module_attributes[cls] = attrs
        return attr in attrs

    def _forward_key(self, call: ast.Call) -> str | None:
        text = self.forward_path(call, self.models.__contains__)
        if text is None:
            return None
        # ``model.encoder(x)`` runs part of ``model``: it is ``model`` whose
        # mode matters and that gets ``train()``.
        probe = text
        while True:
            info = self.models.get(probe)
            if info is not None and info.evidence != "submodule":
                return probe
            if "." not in probe:
                return None
            probe = probe.rsplit(".", 1)[0]

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
        regions: list[ast.AST] = [*reversed(self.loops_of(step))]
        for region in regions:
            inside = [c for c in calls if self._within(c.node, region) and _pos(c.node) <= pos]
            if inside:
                return tuple(dict.fromkeys(c.model for c in inside))
        before = [c for c in calls if _pos(c.node) <= pos]
        return tuple(dict.fromkeys(c.model for c in before))

    def _within(self, node: ast.AST, ancestor: ast.AST) -> bool:
        parent = self.parents.get(node)
        while parent is not None:
            if parent is ancestor:
                return True
            parent = self.parents.get(parent)
        return False

    def _feeds_step(self, backward: ast.Call, scope: FuncNode | None, depth: int) -> bool:
        """Whether an optimizer step can run after ``backward``: later in its
        scope, anywhere in a loop around it, or after a call to its function."""
        loops = self.loops_of(backward)
        pos = _pos(backward)
        for node in self.scope_calls(scope):
            if not isinstance(node, ast.Call) or node is backward:
                continue
            steps = self.step_kind(node) == "optimizer_step"
            if not steps:
                callee = self.callee_summary(node, scope)
                steps = callee is not None and callee[0].optimizer_step
            if steps and (_pos(node) > pos or any(self._within(node, lp) for lp in loops)):
                return True
        if depth > 0 and self.step_kind(backward) == "optimizer_step":
            return True  # ``optimizer.step(closure)`` runs the closure's backward
        if scope is not None and depth < 3:
            return any(
                self._feeds_step(call, caller, depth + 1)
                for caller, call, _ in self._static_sites.get(scope, [])
            )
        return False

    # --- grad mode ---------------------------------------------------------
    def _grad_context(self, expr: ast.expr) -> bool | None:
        """True/False for a grad-mode context manager or decorator; None otherwise."""
        grad = grad_context(self.imports, expr)
        return {"on": True, "off": False}.get(grad) if grad is not None else None

    def _decorator_grad(self, fn: FuncNode) -> bool | None:
        for dec in fn.decorator_list:
            value = self._grad_context(dec)
            if value is not None:
                return value
        return None

    def _grad_local(self, node: ast.AST) -> bool | None:
        """Grad mode set by ``with`` blocks and decorators of ``node``'s own scope."""
        child, parent = node, self.parents.get(node)
        while parent is not None:
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(
                child is s for s in parent.body
            ):
                for item in reversed(parent.items):
                    value = self._grad_context(item.context_expr)
                    if value is not None:
                        return value
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return self._decorator_grad(parent)
            if isinstance(parent, ast.Lambda):
                return None
            child, parent = parent, self.parents.get(parent)
        return True  # module level: grad is on by default

    def _grad(self, node: ast.AST) -> bool | None:
        local = self._grad_local(node)
        if local is not None:
            return local
        scope = self.scope_of(node)
        return None if scope is None else self._scope_grad(scope)

    def _scope_grad(self, root: FuncNode) -> bool | None:
        """Grad mode every caller of ``root`` runs it in: the same value at
        every call site (through callers' callers where a site's own code does
        not say), None where they differ, a caller is unknown or the callers
        form a cycle. Iterative and memoised: call chains may be thousands of
        functions long, and a per-path walk is exponential in a diamond."""
        memo = self._scope_grads
        on_stack: set[FuncNode] = set()
        stack: list[tuple[FuncNode, Iterator[ast.Call], set[bool | None]]] = []

        def push(scope: FuncNode) -> None:
            on_stack.add(scope)
            sites = self._static_sites.get(scope, [])
            stack.append((scope, iter([call for _, call, _ in sites]), set() if sites else {None}))

        if root not in memo:
            push(root)
        while stack:
            scope, pending, values = stack[-1]
            for call in pending:
                local = self._grad_local(call)
                if local is not None:
                    values.add(local)
                    continue
                caller = self.scope_of(call)
                if caller is None or caller in on_stack:
                    values.add(None)
                elif caller in memo:
                    values.add(memo[caller])
                else:
                    push(caller)
                    break
            else:
                stack.pop()
                on_stack.discard(scope)
                memo[scope] = values.pop() if len(values) == 1 else None
                if stack:
                    stack[-1][2].add(memo[scope])
        return memo[root]


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


def _rebinds_parameter(fact: ModeFact, key: str, params: set[str]) -> bool:
    """``model = accelerator.unwrap_model(model)`` inside a helper: the name
    now holds another object (or the same one, in the mode it had), and
    nothing was switched on the object the caller passed. Only a bare
    parameter name: rebinding ``self.model`` changes what the caller sees."""
    return (
        fact.mode is Mode.UNKNOWN
        and key in params
        and isinstance(fact.origin, (ast.Assign, ast.AnnAssign, ast.AugAssign))
    )


def _public(name: str) -> bool:
    """A method a user of the object calls: not ``_private``; the constructor counts."""
    return name == "__init__" or not name.startswith("_")


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
