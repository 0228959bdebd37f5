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
calls: ``rnnfix.analysis.modes.summary``); then every scope is interpreted
(``rnnfix.analysis.modes.flow``) callers first, so that a function's entry state
is the join of the states its callers in this file call it with (no caller:
unknown; ``rnnfix.analysis.modes.filepass``). A call into another file of the
same run uses that function's summary from the project index
(``rnnfix.analysis.project.index``); a function there that trains the models it is
given in the mode it gets them is a training step of kind ``"call"`` here.

This class answers the questions; each job has its own module, which it
holds one object of: the summaries (``summary``), the whole-file pass
(``filepass``), grad mode (``gradmode``), the evidence the rules read --
training steps, model and mode calls, optimizer steps (``steps``) -- and
what is tracked besides the models found (``tracked``). Their records are
plain data (``records``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.modes.filepass import FilePass
from rnnfix.analysis.modes.flow import ScopeRun, calls_in
from rnnfix.analysis.modes.freezing import Freezing
from rnnfix.analysis.modes.gradmode import GradModes
from rnnfix.analysis.modes.intent import deliberate_eval
from rnnfix.analysis.modes.records import ModeCall, ModelCall, Summary, TrainingStep
from rnnfix.analysis.modes.state import ModeFact, ModeState, is_prefix
from rnnfix.analysis.modes.steps import StepEvidence
from rnnfix.analysis.modes.summary import Summaries
from rnnfix.analysis.modes.tracked import (
    WrapperPaths,
    add_argument_models,
    add_parameter_models,
    switched_receivers,
)
from rnnfix.analysis.syntax.aliases import canonical, function_aliases
from rnnfix.analysis.syntax.names import dotted, parent_path
from rnnfix.analysis.syntax.scopes import LOOPS, FuncNode, FunctionInfo, Resolved
from rnnfix.analysis.syntax.walks import walk_local, walk_subtree
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.forwards import forward_methods
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
    from rnnfix.analysis.modes.flowview import FlowSource
    from rnnfix.analysis.modes.records import LoopNode
    from rnnfix.analysis.project.summaries import ClassSummary, ExternalCall, FunctionSummary
    from rnnfix.analysis.project.view import ProjectView

__all__ = ["Mode", "ModeFact", "ModeFlow", "ModeState", "ModelInfo"]


class ModeFlow:
    """``summaries_only``: for the project index, which only needs the
    summaries of this file's functions for callers in other files: the
    whole-file pass is skipped, and a parameter (or ``self.<attr>``) that a
    function calls or switches counts as a model, since a caller elsewhere may
    pass one (whether its argument is a model is the caller's to decide)."""

    def __init__(self, ctx: FlowSource, summaries_only: bool = False) -> None:
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
        self._built_classes: dict[ast.Call, ClassSummary | None] = {}
        self._class_forwards: dict[ast.ClassDef, frozenset[str]] = {}
        self._calls_cache: dict[int, list[ast.Call]] = {}
        self._plain_names: dict[ast.AST, frozenset[str]] = {}  # ``ScopeRun.plain``
        self._contents: dict[int, frozenset[int]] = {}
        self._scope_calls: dict[FuncNode | None, list[ast.Call]] = {}
        self.models: dict[str, ModelInfo] = find_models(
            self.tree, self.index, self.imports, self.classes
        )
        if summaries_only:
            add_parameter_models(self)
        elif self.project is not None:
            add_argument_models(self)
        self._aliases: dict[FuncNode, dict[str, tuple[str, ast.stmt]]] = {}
        self._analysed = True  # not during __init__: it used to run last
        self.grads = GradModes(self)
        self.summaries = Summaries(self, self.grads)
        self.file_pass = FilePass(self)
        self.steps = StepEvidence(self)
        self.wrappers = WrapperPaths(self)
        self.optimizers = Optimizers(self)
        # Receivers of a mode call that are not known models (an annotated
        # parameter only evaluated, an object of an unknown class): their mode
        # is tracked too, for rules that ask about them (RNF003). Not in
        # summaries for the project index: there a tracked key would become a
        # model of the caller's file.
        self.switched = frozenset[str]() if summaries_only else switched_receivers(self)
        # The whole-file pass runs at the first question that needs it (see
        # ``_runs``): RNF003 asks most files only which models a region calls.
        self._analysed = summaries_only

    @property
    def _runs(self) -> dict[FuncNode | None, ScopeRun]:
        self._ensure_analysed()
        return self.file_pass.runs

    @property
    def _static_sites(self) -> dict[FuncNode, list[tuple[FuncNode | None, ast.Call, Resolved]]]:
        self._ensure_analysed()
        return self.file_pass.sites

    def _ensure_analysed(self) -> None:
        """The whole-file pass, once, before anything reads its results or a
        summary is computed (the pass computes summaries in its own order, and
        recursion makes that order matter): answers are as if it ran in
        ``__init__``."""
        if not self._analysed:
            self._analysed = True
            self.file_pass.analyse()

    def release(self) -> None:
        """Forget everything, once nothing asks this flow again: its parts
        keep the flow, and the whole-file pass's scope runs keep the pass
        (their entry states read it), so the flow, its runs and the file's
        tree they hold are cycles that only the cyclic garbage collector
        frees. Broken here, reference counting frees them at once."""
        file_pass = self.__dict__.get("file_pass")
        if file_pass is not None:
            file_pass.__dict__.clear()
        self.__dict__.clear()

    def call_sites(self, fn: FuncNode) -> list[tuple[FuncNode | None, ast.Call, Resolved]]:
        """The calls of ``fn`` in this file: the calling scope, the call, and
        how the call's arguments map to ``fn``'s parameters."""
        return self._static_sites.get(fn, [])

    # --- public queries ----------------------------------------------------

    def is_model(self, key: str) -> bool:
        """``key`` is a model or a part of one (``is_prefix``): ``key`` itself
        or its text up to a ``.`` or ``[`` is a model (asked for every
        assignment the flow interprets: no loop over the models)."""
        models = self.models
        if key in models:
            return True
        return any(ch in ".[" and key[:i] in models for i, ch in enumerate(key))

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
        probe: str | None = key
        while probe is not None:
            if probe in self.models:
                return self.models[probe]
            probe = parent_path(probe)  # ``model.encoder``, ``nets["G"]``
        return None

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
        return sorted(out, key=lambda item: (item[0].lineno, item[0].col_offset))

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
        return self.grads.grad(node)

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

    # --- the evidence (``steps``) and the summaries (``summary``) -----------
    @property
    def mode_calls(self) -> list[ModeCall]:
        return self.steps.mode_calls

    @property
    def model_calls(self) -> list[ModelCall]:
        return self.steps.model_calls

    @property
    def training_steps(self) -> list[TrainingStep]:
        return self.steps.training_steps

    def step_kind(self, call: ast.Call) -> Literal["backward", "optimizer_step"] | None:
        return self.steps.step_kind(call)

    def step_may_update(self, step: ast.Call, model: str) -> bool | None:
        return self.steps.step_may_update(step, model)

    def is_target_network(self, model: str, scope: FuncNode | None) -> bool:
        return self.steps.is_target_network(model, scope)

    def summary(self, info: FunctionInfo) -> Summary:
        self._ensure_analysed()
        return self.summaries.summary(info)

    def callee_summary(
        self, call: ast.Call, scope: FuncNode | None
    ) -> tuple[Summary, Callable[[str], str | None]] | None:
        return self.summaries.callee_summary(call, scope)

    def public_methods(
        self, cls: ast.ClassDef
    ) -> dict[str, FuncNode | tuple[FunctionSummary, ast.expr]]:
        return self.file_pass.public_methods(cls)

    def mode_target(self, receiver: str) -> str:
        return self.wrappers.mode_target(receiver)

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

    def object_method(
        self, owner: str, method: str
    ) -> tuple[Summary, Callable[[str], str | None]] | None:
        """``owner.method()``, where ``owner`` is assigned an instance of a
        class of this file or of another file of the run: what a callee's
        ``ObjectCall`` on the object this file passes it runs, and the map
        from the method's names to this file's."""
        cls_name = self.index.instance_types.get(owner)
        info = self.index.method(cls_name, method) if cls_name else None
        if info is not None and info.is_method and info.params:
            this = info.params[0]

            def mapper(key: str) -> str | None:
                root, _, rest = key.partition(".")
                return owner + ("." + rest if rest else "") if root == this else None

            return self.summary(info), mapper
        found = self.project.method_call(owner, method) if self.project is not None else None
        return (found.summary, found.caller_key) if found is not None else None

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

    # --- scopes, calls and forwards ------------------------------------------

    def scopes(self) -> list[FuncNode | None]:
        """The module (None) and every function of the file."""
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

    def forward_path(self, call: ast.Call, is_model: Callable[[str], bool]) -> str | None:
        """``models.forward_path`` with this file's classes: the path whose
        forward ``call`` runs, for a caller's notion of ``is_model``.
        ``C[i](x)`` with any key runs an element of ``C``, a container of
        modules filled at run time (``models.model_containers``): ``C``.
        ``nn.parallel.data_parallel(netG, inputs, gpus)`` (a ``runner`` of
        the library table) runs what its first argument's call would run."""
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            name in library.RUNNER_NAMES
            and call.args
            and self.imports.qualname(func) in library.RUNNERS
        ):
            applied = ast.Call(call.args[0], [], [])  # what ``netG(inputs)`` would run
            return forward_path(applied, is_model, self.is_submodule)
        if isinstance(func, ast.Subscript) and dotted(func) is None:
            owner = dotted(func.value)
            info = self.models.get(owner) if owner is not None else None
            if owner is not None and info is not None and info.container and is_model(owner):
                return owner
        return forward_path(call, is_model, self.is_submodule)

    def is_submodule(self, owner: str, attr: str) -> bool:
        """``owner.attr`` holds a module: ``owner``'s class, defined in this
        file, assigns one to ``self.attr``."""
        info = self.model_info(owner)
        name = info.class_name if info is not None else None
        cls = self.index.classes.get(name) if name else None
        if cls is None and info is not None and info.built_at is not None:
            # A module class of another file of the run (``ClassSummary.submodules``).
            found = self._project_class(info.built_at)
            return found is not None and attr in found.submodules
        return cls is not None and attr in self.submodules(cls)

    def forward_method(self, owner: str, method: str) -> bool:
        """``<owner>.<method>(...)`` runs ``owner``'s forward: a forward method
        of the library table's row for it (``model.generate``), or of its class,
        of this file or of another file of the run (``forwards.forward_methods``:
        VQ-VAE's ``model.encode(img)`` -> ``self.enc_b(input)``)."""
        info = self.models.get(owner)
        if info is None or info.evidence == "submodule":
            return False
        if method in info.forwards:
            return True
        cls = self.index.classes.get(info.class_name) if info.class_name else None
        if cls is not None:
            return method in self.class_forward_methods(cls)
        found = self._project_class(info.built_at) if info.built_at is not None else None
        return found is not None and method in found.forward_methods

    def _project_class(self, built: ast.Call) -> ClassSummary | None:
        """The module class of another file of the run ``built`` constructs."""
        if self.project is None:
            return None
        if built not in self._built_classes:
            call = unwrap_built(built, self.imports)
            found = self.project.lookup_class(call.func) if isinstance(call, ast.Call) else None
            self._built_classes[built] = found if found is not None and found.is_module else None
        return self._built_classes[built]

    def class_forward_methods(self, cls: ast.ClassDef) -> frozenset[str]:
        """``forwards.forward_methods`` of a class of this file, once per class."""
        found = self._class_forwards.get(cls)
        if found is None:
            self._class_forwards[cls] = frozenset()  # bases that cycle
            inherited = frozenset().union(*(self._base_forwards(b) for b in cls.bases))
            found = forward_methods(cls, self.submodules(cls), inherited)
            self._class_forwards[cls] = found
        return found

    def _base_forwards(self, base: ast.expr) -> frozenset[str]:
        """The forward methods of a base class, of this file or of another
        file of the run."""
        local = self.index.classes.get(base.id) if isinstance(base, ast.Name) else None
        if local is not None:
            return self.class_forward_methods(local)
        found = self.project.lookup_class(base) if self.project is not None else None
        return found.forward_methods if found is not None and found.is_module else frozenset()

    def submodules(self, cls: ast.ClassDef) -> frozenset[str]:
        """The attributes a class of this file assigns a module to."""
        attrs = self._module_attributes.get(cls)
        if attrs is None:
            attrs = module_attributes(cls, self.index, self.imports, self.classes, self.models)
            self._module_attributes[cls] = attrs
        return attrs

    def forward_key(self, call: ast.Call) -> str | None:
        text = self.forward_path(call, self.models.__contains__)
        if text is None:
            return None
        # ``model.encoder(x)`` runs part of ``model``: it is ``model`` whose
        # mode matters and that gets ``train()``.
        probe: str | None = text
        while probe is not None:
            info = self.models.get(probe)
            if info is not None and info.evidence != "submodule":
                return probe
            probe = parent_path(probe)
        return None
