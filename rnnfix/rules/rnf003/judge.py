"""RNF003's decision for one evaluation region: leave it, report it, or fix it.

Kept apart from the rule class so that the rule module stays docs + wiring.
Every "leave alone" below is a precision decision: a wrong edit in a correct
file costs more than a missed bug.
"""

from __future__ import annotations

import ast
import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rnnfix.analysis.grads.escape import Escape, escapes, no_caller_reason
from rnnfix.analysis.grads.gradctx import (
    GradContexts,
    Handlers,
    LocalFunctions,
    gradient_uses,
    training_steps,
)
from rnnfix.analysis.grads.valueflow import ValueFlow, bound_names, written
from rnnfix.analysis.modes.batchstats import evaluates_with_batch_statistics
from rnnfix.analysis.modes.modeapi import function_parameters, has_mode_setter
from rnnfix.analysis.modes.regions import (
    EvalRegion,
    find_regions,
    in_training_iteration,
    is_below_node,
    is_smoke_test,
    probes_shapes,
)
from rnnfix.analysis.modes.state import ModeFact, is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    LOOPS,
    block_of,
    body_without_docstring,
    enclosing_stmt,
    nodes_of,
    parameters,
    scope_of,
    suspends,
    walk_all_local,
    walk_local,
    walk_tree,
)
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import unwrap_built
from rnnfix.analysis.torch.passthrough import rewraps
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.callers import (
    CallerModels,
    caller_models,
    forwards_a_parameter,
    parameter_forwards,
)
from rnnfix.rules.rnf003.effects import train_mode_effects
from rnnfix.rules.rnf003.flagfunc import flag_function_finding
from rnnfix.rules.rnf003.handoff import trainer_handoff
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.rules.rnf003.modes import (
    DELIBERATE,
    builds_mode_free_class,
    chosen_train,
    constructor_evals,
    evaluation_evals_before,
    holds_no_state,
    in_module_method,
    is_mode_free,
    is_stateless,
    leftover_train,
    names_train_mode_technique,
    phase_loop_finding,
    repeated_forward,
    steps_run_self,
    train_set_by_loader,
    trains_itself,
)
from rnnfix.rules.rnf003.restore import restore_edits
from rnnfix.source.edits import (
    AddDecorator,
    AddImport,
    Edit,
    InsertStatements,
    ReplaceExpression,
    WrapInWith,
)

Func = ast.FunctionDef | ast.AsyncFunctionDef


class Verdict(enum.Enum):
    NOT_A_REGION = "not a region"  # no model called here: inner loops may still be
    LEFT_ALONE = "left alone"  # correct already, or not safe to touch


@dataclass
class _Need:
    """What a region lacks, and what stops a fix."""

    eval_models: list[str] = field(default_factory=list)
    grad: bool = False
    recording: list[str] = field(default_factory=list)  # the models whose forwards record a graph
    volatile: bool = False
    grad_helper: str | None = None  # a local function it calls needs gradients
    no_fix: str | None = None
    # model -> its ``train()`` call left in the region before the forward:
    # the fix turns that call into ``eval()`` instead of inserting one.
    leftover: dict[str, tuple[ast.Call, ...]] = field(default_factory=dict)
    escape: str | None = None  # how its results may reach a backward rnnfix does not see
    # Training code calls it mid-iteration: ``eval()`` must give the mode back
    # on the way out (``rules/rnf003/restore.py``).
    restore: bool = False


class RegionJudge:
    """One per file: the model index and local functions are shared by its regions."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.parents = ctx.facts.parents
        self.index = ModelIndex(ctx, extra=ctx.facts.modes.models)
        self.local = LocalFunctions(ctx)
        self.flow = ValueFlow(ctx)
        self.grad = GradContexts(ctx)
        self.handlers = Handlers(ctx)
        self._helper_fixed: dict[ast.AST, bool] = {}  # ``fixes_itself``' verdicts
        self._judging: set[ast.AST] = set()
        self._callers: dict[ast.AST, CallerModels | None] = {}  # ``caller_models``' answers

    def run(self, region: EvalRegion) -> Finding | Verdict:
        node = region.node
        if region.signal == "phase":
            found = phase_loop_finding(self.ctx, self.index, region.node)
            return found if found is not None else Verdict.LEFT_ALONE
        if region.signal == "flag":
            assert isinstance(node, ast.FunctionDef)
            flagged = flag_function_finding(self.ctx, self.index, node)
            return flagged if flagged is not None else Verdict.LEFT_ALONE
        is_function = isinstance(node, FUNCTIONS)
        if is_function:
            assert isinstance(node, FUNCTIONS)
            if isinstance(node, ast.AsyncFunctionDef):
                return Verdict.NOT_A_REGION  # @no_grad does not cover a coroutine's body
            body = body_without_docstring(node)
        else:
            body = [node] if region.last is None else _run_of(self.parents, region)
        functions = function_parameters(self.parents, node)
        owner = self._self_trainer(node)
        calls = {
            m: cs
            for m, cs in self.index.model_calls(body).items()
            if (m not in ("self", "cls") or (m == "self" and owner))
            and m.split(".")[0] not in functions
            and not self._unproven_load(m)
        }
        calls = self._without_fixed_helpers(calls)
        # Forwards after an unconditional ``return``/``raise`` never run (an
        # evaluation the author switched off with ``return`` at its head): an
        # ``eval()`` before them would run, and outlive the call.
        calls = {
            m: live for m, cs in calls.items() if (live := [c for c in cs if not self._dead(c)])
        }
        for param in self._caller_params(node, calls):
            sites = parameter_forwards(body, param)
            if sites:
                calls[param] = sites
        if not body or not calls:
            return Verdict.NOT_A_REGION
        if isinstance(node, FUNCTIONS) and is_smoke_test(node, calls, self.index.builds_module):
            return Verdict.LEFT_ALONE
        if self._may_adapt_at_test_time(node, calls):
            return Verdict.LEFT_ALONE
        scope = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        sites = [site for group in calls.values() for site in group]
        # A forward on made-up tensors: a shape probe, or a generator sampled
        # from noise, whose mode and grad are the author's (also after training).
        if probes_shapes(self.ctx, scope, sites, self.ctx.facts.imports.qualname):
            return Verdict.LEFT_ALONE
        # A region that computes gradients is a gradient evaluator (saliency,
        # test-time optimisation) or training: not evaluation.
        if any(True for _ in walk_gradient_uses(self.ctx, body)):
            return Verdict.LEFT_ALONE
        if self._trains_elsewhere(body, scope):
            # ``model.set_forward_adaptation(z)``: a method of another file
            # that steps an optimizer or takes a gradient (test-time
            # fine-tuning): ``no_grad`` would break it, ``eval()`` change it.
            return Verdict.LEFT_ALONE
        restore = False
        if self._fed_into_training(region, body):
            if not (
                self._evaluates_between_steps(region, sites)
                or self._gives_back_no_graph(region, body)
            ):
                return Verdict.LEFT_ALONE
            restore = True  # ``estimate_loss()`` in the training loop: restore its mode
        if any(self.grad.in_function(self._at(site, node)) == "on" for site in sites):
            return Verdict.LEFT_ALONE  # under ``enable_grad()``: grad is wanted here
        handled = self._handled(node, sites)
        if handled is None:
            return Verdict.LEFT_ALONE  # a wrapper we cannot read may manage both
        need = self._need(region, body, calls)
        need.restore = restore
        if "grad" in handled:
            need.grad = need.volatile = False
        if "eval" in handled:
            # The project's own context switches to eval and restores: an
            # ``eval()`` of ours would outlive its restore.
            need.eval_models, need.leftover, need.no_fix = [], {}, None
        if not need.eval_models and not need.grad:
            return Verdict.LEFT_ALONE
        if need.grad:
            need.grad_helper = next(filter(None, map(self.local.gradient_helper, body)), None)
            if need.grad_helper is not None and self._differentiated_by_helper(body, sites):
                # ``y = model(x); loss = ...; hvp(loss, params, v)`` (an
                # influence function's ``s_test``): the graph is what the
                # helper differentiates, a gradient computation, not waste.
                return Verdict.LEFT_ALONE
        need.escape = self._escape(region, body)
        if need.escape is not None and need.volatile and self._fed_volatile(body, sites):
            # Every forward takes a ``Variable(..., volatile=True)``: written for
            # a PyTorch where that built no graph, so no caller can have
            # differentiated what the region gives back (sylvester-flows'
            # ``evaluate``, called from another file).
            need.escape = None
        if region.signal == "eval-object" and need.escape is not None:
            # Only the object's constructor says it infers: a result that
            # leaves (features for a perceptual loss) may feed training.
            return Verdict.LEFT_ALONE
        return self._finding(region, body, calls, need)

    def _may_adapt_at_test_time(self, node: ast.AST, calls: dict[str, list[ast.Call]]) -> bool:
        """The project holds modules that train in their forward (test-time
        adaptation: ``analysis/project/adapting.py``) and a model the region
        runs may be one: built from such a class, handed in as a parameter
        of the region's function, or bound again by a call rnnfix cannot read
        (``model = registery.init(args.mode, model)``). Its forward needs
        grad and the mode the method chose: no edit."""
        names = self._adapting
        if not names:
            return False
        flow = self.ctx.facts.modes
        func = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        params = set(parameters(func)) if isinstance(func, FUNCTIONS) else set()
        for model in calls:
            info = flow.model_info(model)
            if info is not None and (info.class_name or "").rsplit(".", 1)[-1] in names:
                return True
            root = model.split(".")[0]
            if root in params and root not in ("self", "cls"):
                return True
            if any(rewraps(n, root) for n in nodes_of(self.ctx.tree, ast.Assign)):
                return True
        return False

    @functools.cached_property
    def _adapting(self) -> frozenset[str]:
        from rnnfix.analysis.project.adapting import adapting_classes

        ctx = self.ctx
        # The project's other files only in a run with a project index (as
        # ``callers.caller_models`` reads them): a source checked alone is alone.
        whole = ctx.facts.project is not None and not ctx.settings.isolated
        return adapting_classes(ctx.path, ctx.source, whole)

    def _fed_volatile(self, body: list[ast.stmt], sites: list[ast.Call]) -> bool:
        """Every forward in ``sites`` takes an argument made, in ``body``, from a
        ``Variable(..., volatile=<not False>)`` (through names assigned from it:
        ``data = data.view(...)``)."""
        volatile = _spread(body, set(), _makes_volatile)
        return bool(sites) and all(
            any(_mentions_any(a, volatile) for a in [*s.args, *(k.value for k in s.keywords)])
            for s in sites
        )

    def _may_hold_graph(self, body: list[ast.stmt], seeds: set[str]) -> set[str]:
        """Of ``seeds`` (names ``body`` writes), those whose value there may
        come from something that records a graph: a forward, a call of code
        rnnfix does not know to be torch's, numpy's or a builtin (a method of a
        module, a helper), an attribute read, or another such name. DnCNN's
        validation loop writes ``noise = torch.FloatTensor(...).normal_(...)``,
        which the next epoch may read for its loss: the same tensor with or
        without ``no_grad``, so no reason to leave the loop alone."""
        qualname = self.ctx.facts.imports.qualname
        models = {m.split(".")[0] for m in self.index.models}
        stmts = [n for n in walk_all_local(body) if isinstance(n, ast.stmt)]
        graph: set[str] = set()

        def source(value: ast.AST) -> bool:
            for n in ast.walk(value):
                if isinstance(n, ast.Name) and n.id in graph:
                    return True
                if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                    root = n.value
                    if isinstance(root, ast.Name) and (
                        root.id in ("self", "cls") or root.id in models
                    ):
                        return True  # ``self.scale``, ``model.weight``: may be parameters
                if isinstance(n, ast.Call) and not _plain_call(n, qualname, graph):
                    return True
            return False

        for _ in range(3):  # ``out = model(x)``, then ``psnr += f(out)``, in any order
            before = len(graph)
            for stmt in stmts:
                bound = bound_names(stmt)
                value = _bound_value(stmt)
                if bound and value is not None and source(value):
                    graph |= bound & seeds
            if len(graph) == before:
                break
        # Names written any other way (``scores.append(...)``, ``a[i] = ...``,
        # ``del``, ``global``, a walrus) are kept: unknown.
        plain = {name for stmt in stmts for name in bound_names(stmt)}
        other = seeds - plain
        for stmt in stmts:
            other |= (written([stmt]) & seeds) - bound_names(stmt) - _nested_bound(stmt)
        return graph | other

    def _differentiated_by_helper(self, body: list[ast.stmt], sites: list[ast.Call]) -> bool:
        """What a forward of ``body`` computes reaches, through the body's
        assignments, an argument of a call of a local function that needs
        gradients."""
        tainted: set[str] = set()
        for site in sites:
            stmt = enclosing_stmt(self.parents, site)
            if stmt is not None:
                tainted |= written([stmt])
        if not tainted:
            return False
        tainted = _spread(body, tainted, lambda value: False)
        for n in walk_all_local(body):
            if not isinstance(n, ast.Call) or self.local.gradient_helper(n) is None:
                continue
            if any(_mentions_any(a, tainted) for a in [*n.args, *(k.value for k in n.keywords)]):
                return True
        return False

    def _without_fixed_helpers(self, calls: dict[str, list[ast.Call]]) -> dict[str, list[ast.Call]]:
        """``calls`` less the calls of a helper of this file that is an
        evaluation region itself and gets a fix of its own (tabnet's
        ``_predict_batch``, called by ``_predict_epoch``): its fix covers the
        forwards it runs for every caller, and a second fix in the caller
        would repeat it. A helper region left alone (``skorch``'s ``infer``,
        which training calls for the loss too) still runs the model for its
        evaluating callers."""
        out: dict[str, list[ast.Call]] = {}
        for model, sites in calls.items():
            kept = [s for s in sites if not self.fixes_itself(s)]
            if kept:
                out[model] = kept
        return out

    def fixes_itself(self, site: ast.Call) -> bool:
        """``site`` calls a function region of this file that gets an
        applicable fix of its own."""
        targets = self.local.targets(site)
        region = self._function_regions.get(targets[0]) if len(targets) == 1 else None
        if region is None or region.node in self._judging:
            return False
        found = self._helper_fixed.get(region.node)
        if found is None:
            self._judging.add(region.node)
            try:
                verdict = self.run(region)
            finally:
                self._judging.discard(region.node)
            fix = verdict.fix if isinstance(verdict, Finding) else None
            found = fix is not None and (fix.safe or self.ctx.settings.unsafe_fixes)
            self._helper_fixed[region.node] = found
        return found

    @functools.cached_property
    def _function_regions(self) -> dict[ast.AST, EvalRegion]:
        return {r.node: r for r in find_regions(self.ctx) if r.is_function}

    def _from_callers(self, func: ast.AST) -> CallerModels | None:
        """What the calls of ``func`` in the other files of the run pass and
        do (``callers.caller_models``); asked once per function."""
        if func not in self._callers:
            self._callers[func] = caller_models(self.ctx, func)
        return self._callers[func]

    def _caller_params(self, node: ast.AST, calls: dict[str, list[ast.Call]]) -> list[str]:
        """Parameters of the function region ``node`` that every caller in
        another file passes a torch module in, and that its own file does
        not already know as models (issue 36.3)."""
        if not isinstance(node, ast.FunctionDef) or not forwards_a_parameter(node):
            return []
        found = self._from_callers(node)
        return [p for p in found.params if p not in calls] if found is not None else []

    def _self_trainer(self, node: ast.AST) -> bool:
        """The region is in a module's own method that trains ``self`` itself
        (``modes.trains_itself``): ``self`` is a model it evaluates."""
        func = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        return isinstance(func, FUNCTIONS) and trains_itself(self.ctx, func)

    def _trains_elsewhere(self, body: list[ast.stmt], scope: ast.AST) -> bool:
        """A call in ``body`` runs a function of another file of the run whose
        summary trains or takes an input gradient."""
        flow = self.ctx.facts.modes
        if flow.project is None:
            return False
        func = scope if isinstance(scope, FUNCTIONS) else None
        for stmt in body:
            for n in walk_local(stmt):
                if not isinstance(n, ast.Call):
                    continue
                found = flow.external(n, func)
                s = found.summary if found is not None else None
                if s is not None and (s.optimizer_step or s.entry_trains or s.entry_grads):
                    return True
        return False

    def _unproven_load(self, model: str) -> bool:
        """A loader's result (``torch.load``, ``torch.hub.load``) that nothing
        proves a module (``ModelIndex.is_known_module``): RNF006's inference
        question, not an evaluation RNF003 can fix."""
        info = self.ctx.facts.modes.model_info(model)
        return (
            info is not None
            and info.evidence == "loaded+use"
            and not self.index.is_known_module(model)
        )

    # --- where a model call runs -------------------------------------------
    def _at(self, site: ast.AST, region_node: ast.AST) -> ast.AST:
        """Where ``site``'s mode and grad are read: a forward in a function or
        lambda nested in the region runs when the region calls it, so it is
        read at the statement that defines it, in the region's own code (an
        ``eval()``/``no_grad`` the fix adds there then covers it)."""
        scope: ast.AST = (
            region_node
            if isinstance(region_node, FUNCTIONS)
            else scope_of(self.parents, region_node)
        )
        cur: ast.AST = site
        outer: ast.AST | None = None
        while cur is not scope and cur in self.parents:
            if isinstance(cur, (*FUNCTIONS, ast.Lambda)):
                outer = cur
            cur = self.parents[cur]
        if outer is None:
            return site
        return (
            outer if isinstance(outer, ast.stmt) else (enclosing_stmt(self.parents, outer) or site)
        )

    def _handled(self, node: ast.stmt, sites: list[ast.Call]) -> frozenset[str] | None:
        """What decorators and context managers already do for every forward
        of the region (those on the way from each forward up to the region's
        function, and ``stack.enter_context(...)`` calls in that function):
        ``{"grad", "eval"}`` or less; None when one of them is unknown."""
        top = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        entered = frozenset[str]()
        for n in walk_local(top):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "enter_context"
                and n.args
            ):
                handling = self.handlers.handling(n.args[0])
                if handling is None:
                    return None
                entered |= handling
        common: frozenset[str] | None = None
        starts: list[ast.AST] = [*sites] if sites else [node]
        for start in starts:  # each forward's path passes the region's wrappers
            on_path: set[str] = set()
            cur: ast.AST = start
            while True:
                for expr in _wrapper_exprs(cur):
                    handling = self.handlers.handling(expr)
                    if handling is None:
                        return None
                    on_path |= handling
                if cur is top or cur not in self.parents:
                    break
                cur = self.parents[cur]
            # A wrapper around one forward does nothing for another.
            common = frozenset(on_path) if common is None else common & on_path
        return entered | (common or frozenset())

    def _escape(self, region: EvalRegion, body: list[ast.stmt]) -> str | None:
        """Why ``no_grad``/``eval()`` cannot be added: what the region
        computes leaves its function, and not every caller is one rnnfix sees
        not differentiating it. None when nothing leaves, or when it does and
        every caller is in this file and none differentiates it."""
        node = region.node
        func = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        if not isinstance(func, FUNCTIONS):
            return None
        found = self._escapes(func, body)
        if not found:
            return None
        why = _describe(found)
        kept = [e for e in found if e.how not in ("returned", "yielded")]
        if region.signal in ("self-eval", "eval-object") and kept:
            # Only the function's own ``eval()`` says it evaluates: a result
            # kept on an object or handed to a callback may feed a loss
            # anywhere (a policy's ``saved_log_probs``), whatever its callers do.
            return f"what it computes is {_describe(kept)}, where training code may read it"
        unseen = self._unseen_callers(func)
        if unseen is not None and self._from_callers(func) is not None:
            unseen = None  # every call is in another file, seen, and none trains on it
        if unseen is not None:
            return f"what it computes is {why}, and {unseen}"
        if self._callers_train(func) or self._callers_pass_on(func):
            return f"what it computes is {why}, and a caller trains on it or passes it on"
        return None

    def _is_forward(self, call: ast.Call) -> bool:
        if self.index.called_model(call) is not None or self.index.wrapped_models(call):
            return True
        # A local helper that runs a model: ``self._forward(x)``.
        return any(self.index.model_calls(t.body) for t in self.local.targets(call))

    def _unseen_callers(self, func: Func) -> str | None:
        """Why not every caller of ``func`` is visible; None when they are
        all calls in this file and ``func`` is used no other way."""
        name = func.name
        sites = self.local.call_sites(func)
        if not sites:
            return no_caller_reason(self.ctx.tree, func)
        if self._called_elsewhere(name):
            return f"a function named `{name}` is called from other files of the run"
        owner = self.parents.get(func)
        called = {id(s.func) for s in sites}
        for n in walk_tree(self.ctx.tree):
            # ``callbacks=[evaluate]``, ``pool.map(self.evaluate, xs)``: called
            # by code rnnfix does not see.
            is_ref = (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)) or (
                isinstance(owner, ast.ClassDef)
                and isinstance(n, ast.Attribute)
                and n.attr == name
                and isinstance(n.value, ast.Name)
                and n.value.id in ("self", "cls")
            )
            if is_ref and id(n) not in called:
                return f"`{name}` is passed on as a value"
        return None

    def _called_elsewhere(self, name: str) -> bool:
        from rnnfix.analysis.project.index import called_from_other_files

        return called_from_other_files(self.ctx, name)

    def _callers_pass_on(self, func: Func, depth: int = 0) -> bool:
        """A caller returns or stores what ``func`` returns, to its own
        callers rnnfix may not see (followed two levels)."""
        for site in self.local.call_sites(func):
            caller = scope_of(self.parents, site)
            stmt = enclosing_stmt(self.parents, site)
            if not isinstance(caller, FUNCTIONS) or stmt is None:
                continue
            found = escapes(
                caller, [stmt], _is_call(site), _nothing, self.ctx.facts.imports.qualname
            )
            if not found:
                continue
            if depth >= 1 or self._unseen_callers(caller) is not None:
                return True
            if self._callers_train(caller) or self._callers_pass_on(caller, depth + 1):
                return True
        return False

    def _dead(self, node: ast.AST) -> bool:
        """``node`` comes after a ``return``/``raise`` of a block that holds it
        (up to its function): it never runs."""
        cur: ast.AST = node
        while not isinstance(cur, FUNCTIONS) and cur in self.parents:
            found = block_of(self.parents, cur) if isinstance(cur, ast.stmt) else None
            if found is not None:
                block, index = found
                if any(isinstance(s, (ast.Return, ast.Raise)) for s in block[:index]):
                    return True
            cur = self.parents[cur]
        return False

    # --- when to leave a region alone -----------------------------------
    def _fed_into_training(self, region: EvalRegion, body: list[ast.stmt]) -> bool:
        node = region.node
        if isinstance(node, FUNCTIONS):
            found = self._from_callers(node)
            return self._callers_train(node) or (found is not None and found.in_training)
        scope = scope_of(self.parents, node)
        after_step = region.signal in ("after-step", "after-training") or (
            region.signal == "after-eval" and self._after_own_steps(node, scope)
        )
        if region.signal != "data" and not after_step and in_training_iteration(self.ctx, node):
            return True  # sampling / generation inside a training step
        seeds = written(body) - set(self.index.models)
        if self.flow.reaches_gradient_use(body, scope, self._may_hold_graph(body, seeds)):
            return True
        if after_step:
            # Every step of the scope came before it: what it computes feeds
            # training only through a name a later step reads (above), or by
            # leaving the scope (returned, or kept on an object) for code
            # this function does not show.
            if region.signal == "after-eval" and isinstance(scope, FUNCTIONS):
                # The author's ``eval()`` marks it: only a graph that leaves
                # counts (hit rates of ``.detach().numpy()`` scores do not).
                return bool(self._escapes(scope, body))
            return any("." in seed for seed in seeds) or self.flow.escapes(body, scope, seeds)
        if region.signal == "after-eval" and isinstance(scope, FUNCTIONS):
            # Only ``eval()`` says this is evaluation, and what the loop computes
            # leaves the function: a caller (maybe in another file) may
            # differentiate it — soft samples fed to a generator loss, say.
            # Not when what leaves a module-level helper holds no graph
            # (powerful-gnns' ``pass_data_iteratively``: ``output.append(
            # model(g).detach())``); a method's results stay its object's.
            if self.flow.escapes(body, scope, seeds) and (
                self.parents.get(scope) is not self.ctx.tree or self._escapes(scope, body)
            ):
                return True
        if isinstance(scope, FUNCTIONS) and region.signal != "data":
            # A helper that evaluates and returns what it computed: its
            # callers decide whether that feeds a training step.
            return self._callers_train(scope)
        return False

    def _after_own_steps(self, node: ast.stmt, scope: ast.AST) -> bool:
        """``node`` (an *after-eval* loop) comes after every training step of
        its function, and no loop around it holds one (SR-GNN's ``train_test``:
        the epoch's steps, ``model.eval()``, then the test loop): what it
        computes feeds a step only as an *after-training* statement's would."""
        if not isinstance(scope, FUNCTIONS):
            return False
        steps = list(training_steps(self.ctx, scope))
        start = (node.lineno, node.col_offset)
        if not steps or any(
            (s.end_lineno or s.lineno, s.end_col_offset or 0) > start for s in steps
        ):
            return False
        around = [a for a in self.ctx.facts.ancestors(node) if isinstance(a, LOOPS)]
        return not any(is_below_node(self.parents, s, loop) for s in steps for loop in around)

    def _evaluates_between_steps(self, region: EvalRegion, sites: list[ast.Call]) -> bool:
        """A function that training code calls in its iteration, which cannot
        feed a training step: it runs under its own grad-off decorator
        (``@torch.no_grad()``), and no call's result reaches a gradient use.
        Periodic evaluation (``estimate_loss()``), not sampling for the loss."""
        node = region.node
        if not isinstance(node, FUNCTIONS) or region.signal != "name":
            return False
        if not any("grad" in (self.handlers.handling(d) or ()) for d in node.decorator_list):
            return False
        for site in self.local.call_sites(node):
            stmt = enclosing_stmt(self.parents, site)
            if stmt is None:
                return False
            if any(site in set(ast.walk(u)) for u in gradient_uses(self.ctx, stmt)):
                return False
            seeds = written([stmt])
            if seeds and self.flow.reaches_gradient_use(
                [stmt], scope_of(self.parents, stmt), seeds
            ):
                return False
        return bool(sites)

    def _gives_back_no_graph(self, region: EvalRegion, body: list[ast.stmt]) -> bool:
        """An evaluation function by its name (``test``, ``evaluate``) that
        training code calls between its steps, from which nothing computed
        through a model leaves with a graph: not returned or yielded (only
        ``.item()`` sums, accuracies, strings), not kept on an object, a
        parameter or a global, not handed to a callback. Its callers cannot
        train on what it computes, so it evaluates between steps (bidaf's
        ``test`` every N batches): fixed, with its mode restored."""
        node = region.node
        # Or one that switches the model to eval itself (DenseDepth's
        # ``LogProgress``: ``model.eval()``, a forward, images logged).
        if region.signal not in ("name", "self-eval") or not isinstance(node, ast.FunctionDef):
            return False
        return not self._escapes(node, body)

    @functools.cached_property
    def _helpers(self) -> dict[str, ast.FunctionDef]:
        """The file's module-level functions, by name, each bound once at
        module level (a name defined twice, or rebound, is not read)."""
        bound: dict[str, int] = {}
        for stmt in self.ctx.tree.body:
            for name in _module_bindings(stmt):
                bound[name] = bound.get(name, 0) + 1
        return {
            stmt.name: stmt
            for stmt in self.ctx.tree.body
            if isinstance(stmt, ast.FunctionDef) and bound.get(stmt.name) == 1
        }

    def _escapes(self, func: Func, body: list[ast.stmt]) -> list[Escape]:
        """How what ``body`` (statements of ``func``) computes through a model
        leaves ``func`` (``escape.escapes``)."""
        view = self.ctx.facts.project
        return escapes(
            func,
            body,
            self._is_forward,
            self.index.models.__contains__,
            self.ctx.facts.imports.qualname,
            self._helpers,
            view.returns_detached if view is not None else None,
        )

    def _callers_train(self, func: Func) -> bool:
        """A call of ``func`` runs in a training step's iteration, or its
        result reaches a gradient use."""
        for site in self.local.call_sites(func):
            if in_training_iteration(self.ctx, site):
                return True
            stmt = enclosing_stmt(self.parents, site)
            if stmt is None:
                continue
            if any(site in set(ast.walk(u)) for u in gradient_uses(self.ctx, stmt)):
                return True
            seeds = written([stmt])
            scope = scope_of(self.parents, stmt)
            if seeds and self.flow.reaches_gradient_use([stmt], scope, seeds):
                return True
        return False

    def _ran_before(self, region: ast.AST, func: ast.AST | None, model: str) -> bool:
        """A loop region of a function that trains nothing before it, whose
        ``model`` the function already ran before the loop, in the mode it
        still has (``expected = module(x)``, then ``for layout in
        test_layouts: assert allclose(module(...), expected)``): the loop is
        part of what the whole function does with the model, not an
        evaluation of its own. An ``eval()`` before the loop would switch the
        mode between forwards the function compares, and ``no_grad`` would
        differ from the forward before it: mode and grad are the author's or
        the caller's choice there."""
        if region is func or not isinstance(func, FUNCTIONS):
            return False
        start = (region.lineno, region.col_offset)  # type: ignore[attr-defined]
        first: tuple[int, int] | None = None
        switched: list[tuple[int, int]] = []
        for n in walk_all_local(func.body):
            if not isinstance(n, ast.Call) or (n.lineno, n.col_offset) >= start:
                continue
            if self.ctx.facts.modes.step_kind(n) is not None:
                return False  # train, then evaluate: the usual place for ``eval()``
            switch = mode_switch(n)
            if switch is not None:
                recv = dotted(switch.receiver)
                if recv is not None and (is_prefix(recv, model) or is_prefix(model, recv)):
                    switched.append((n.lineno, n.col_offset))
                continue
            called = dotted(n.func)
            if called is not None and is_prefix(model, called):
                if called != model and called.rsplit(".", 1)[-1] in MODULE_METHODS:
                    # ``model.load_state_dict(...)``, ``model.to(dev)``: a module
                    # method, not a forward whose results the loop compares.
                    continue
                at = (n.lineno, n.col_offset)
                first = at if first is None or at < first else first
        return first is not None and not any(at > first for at in switched)

    # --- what is missing --------------------------------------------------
    def _need(
        self, region: EvalRegion, body: list[ast.stmt], calls: dict[str, list[ast.Call]]
    ) -> _Need:
        need = _Need()
        node = region.node
        func = node if isinstance(node, FUNCTIONS) else scope_of(self.parents, node)
        # In a module's own method, ``self.decoder.eval()`` would be a partial
        # mode switch that outlives the call: the module's user sets its mode.
        own_method = isinstance(func, FUNCTIONS) and in_module_method(self.ctx, func)
        # The author switches a model to eval in the region itself: the mode is
        # managed here, other things called (a softmax, a metric) are not ours.
        flow = self.ctx.facts.modes
        managed = any(
            mode is Mode.EVAL for m in calls for s in body for _, mode in flow.switches_in(s, m)
        )
        for model, sites in sorted(calls.items(), key=lambda kv: _first(kv[1])):
            passed = self._from_callers(func) if isinstance(func, ast.FunctionDef) else None
            if passed is not None and model in passed.params:
                # Every caller passes a module whose mode matters (``callers.py``).
                if model not in passed.evaluated:
                    need.eval_models.append(model)
                continue
            if not self.index.is_known_module(model) or is_stateless(self.ctx, model):
                continue  # an object of an unknown class: no ``eval()`` on a guess
            if holds_no_state(self.ctx, model):
                continue  # no parameters, submodules or mode: ``eval()`` changes nothing
            if is_mode_free(self.ctx, model):
                continue  # Linear/ReLU layers only: ``eval()`` changes nothing
            if evaluates_with_batch_statistics(self.ctx, model):
                continue  # BatchNorm(momentum=1): train-mode evaluation is the method
            if own_method and model.split(".")[0] in ("self", "cls"):
                if not (model == "self" and self._self_trainer(node)):
                    continue
            if isinstance(func, FUNCTIONS) and has_mode_setter(flow, func, model, Mode.EVAL):
                continue  # its class's own ``eval()`` is how its callers evaluate
            if constructor_evals(self.ctx, func, model):
                continue  # held in eval since ``__init__``: nothing switches it back
            if any(is_prefix(p, model) and p != model for p in calls):
                continue  # the outermost model called here: its eval() covers this one
            at = [self._at(site, node) for site in sites]
            if not all(self._eval_at(a, model) for a in at):
                if not self._evaluated_as_parameter(
                    func, model, at
                ) and not self._evaluated_through_wrapper(func, model, at):
                    need.eval_models.append(model)
        if need.eval_models and all(builds_mode_free_class(self.ctx, m) for m in need.eval_models):
            # Every model it would switch computes the same in both modes
            # (Linear layers only, in classes of this or other files): an
            # ``eval()`` here would change nothing.
            need.eval_models = []
        if managed:
            # The region sets the mode itself; only a stray ``train()`` after
            # its own ``eval()`` (every forward runs after it) is still a bug.
            need.eval_models = [m for m in need.eval_models if self._stray_train(region, body, m)]
        need.recording = [
            model
            for model, sites in sorted(calls.items(), key=lambda kv: _first(kv[1]))
            if any(self._records_graph(model, self._at(site, node)) for site in sites)
        ]
        need.grad = bool(need.recording)
        if isinstance(func, FUNCTIONS) and names_train_mode_technique(func.name):
            # ``mc_predict``, ``adapt_bn``: train mode is what the function is
            # for (Monte Carlo dropout, BatchNorm adaptation); grad is not.
            need.eval_models = []
        if calls and all(self._ran_before(node, func, m) for m in calls):
            need.eval_models, need.grad = [], False
        need.volatile = need.grad and any(map(_volatile_keyword, walk_all_local(body)))
        for model in list(need.eval_models):
            handoff = (
                trainer_handoff(self.ctx, node, func, model)
                if not isinstance(node, FUNCTIONS)
                else None
            )
            if handoff is not None:
                need.no_fix = (
                    f"`{model}` is handed to `{self.ctx.segment(handoff.func)}(...)` on line "
                    f"{handoff.lineno}, which the loop around it runs again and may train it "
                    "there: an `eval()` here would outlive this evaluation"
                )
                continue
            if chosen_train(self.ctx, node, model, calls[model]):
                need.eval_models.remove(model)  # the author's own train(), on purpose
                continue
            loader_train = train_set_by_loader(self.ctx, node, model, calls[model])
            if loader_train is not None:
                if any(repeated_forward(self.ctx, site, node) for site in calls[model]):
                    # Several passes over the same input, after a train() the
                    # author asked for: stochastic sampling, on purpose.
                    need.eval_models.remove(model)
                    continue
                need.no_fix = (
                    f"the function that builds `{model}` for it puts it in train mode "
                    f"explicitly (`{self.ctx.segment(loader_train)}` on line "
                    f"{loader_train.lineno}), which may be chosen on purpose"
                )
            leftover = self._leftover(region, body, model)
            if leftover == DELIBERATE:
                need.eval_models.remove(model)  # Monte Carlo dropout and the like
            elif isinstance(leftover, tuple):
                need.leftover[model] = leftover
                first = leftover[0]
                if not evaluation_evals_before(self.ctx, region.node, model, first):
                    # ``def evaluate(): net.train(); ...``: the evaluation's
                    # only mode call; train mode may be the author's choice.
                    need.no_fix = (
                        f"`{self.ctx.segment(first)}` on line {first.lineno} is its only "
                        "mode call, so train mode may be chosen on purpose (BatchNorm "
                        "normalising with batch statistics, Monte Carlo dropout)"
                    )
            elif any(mode is not Mode.EVAL for s in body for _, mode in flow.switches_in(s, model)):
                # ``train()`` inside the region: an ``eval()`` before it
                # cannot hold there; a person has to decide.
                need.no_fix = f"it switches `{model}` to train mode itself"
            elif self._eval_anchor(region, body, model) is None:
                need.no_fix = f"`{model}` is rebound inside it"
            elif (
                blocked := self.ctx.facts.receivers.check(model, "eval", at=node)
            ).override and blocked.reason is not None:
                # ``def train(self):`` on the class: ``eval()`` calls
                # ``self.train(False)`` and raises a TypeError.
                need.no_fix = blocked.reason
            elif model == "self" and not steps_run_self(self.ctx, func):  # type: ignore[arg-type]
                need.no_fix = (
                    "no training step of the method is seen running `self`, so the "
                    "`train()` that must follow an `eval()` here could not be put back"
                )
        return need

    def _stray_train(self, region: EvalRegion, body: list[ast.stmt], model: str) -> bool:
        leftover = self._leftover(region, body, model)
        return isinstance(leftover, tuple) and evaluation_evals_before(
            self.ctx, region.node, model, leftover[0]
        )

    def _leftover(
        self, region: EvalRegion, body: list[ast.stmt], model: str
    ) -> tuple[ast.Call, ...] | str | None:
        node = region.node
        sites = self.index.model_calls(body).get(model, [])
        return leftover_train(self.ctx, node, body, model, [self._at(s, node) for s in sites])

    def _evaluated_as_parameter(self, func: ast.AST, model: str, sites: list[ast.AST]) -> bool:
        """``def val(net, ...): net.eval(); ... crnn(image)``, called only as
        ``val(crnn, ...)``: every call of ``func`` (all in this file, none
        from other files, never passed as a value) binds one of its
        parameters to the global ``model``, and that parameter is in eval at
        each forward of ``model``: the author's ``net.eval()`` switched it."""
        if not isinstance(func, ast.FunctionDef) or "." in model:
            return False
        flow = self.ctx.facts.modes
        info = flow.index.functions.get(func)
        sites_of = flow.call_sites(func)
        if info is None or not sites_of or model in info.locals:
            return False
        if any(caller is not None and model in self._locals(caller) for caller, _, _ in sites_of):
            return False  # the caller's ``model`` is not the global one
        params = [p for p in info.params if all(r.args.get(p) == model for _, _, r in sites_of)]
        if not params or self._unseen_callers(func) is not None:
            return False
        return any(all(self._eval_at(site, p) for site in sites) for p in params)

    def _evaluated_through_wrapper(self, func: ast.AST, model: str, sites: list[ast.AST]) -> bool:
        """``parallel_model = nn.DataParallel(model)`` (or ``model.cuda()``, or
        ``model``) at every binding of the global ``model`` the function runs,
        each binding of the wrapped global followed by one of the wrapper
        with no call of the function between them, and the wrapped model in
        eval at each forward: the author's ``model.eval()`` switched every
        layer the wrapper runs (mos's ``evaluate``)."""
        if not isinstance(func, FUNCTIONS) or "." in model:
            return False
        flow = self.ctx.facts.modes
        info = flow.index.functions.get(func)
        sites_of = flow.call_sites(func)
        if info is None or model in info.locals or not sites_of:
            return False
        if any(caller is not None for caller, _, _ in sites_of):
            return False  # called from functions: the order of bindings says nothing
        wrapper_lines, wrapped = self._module_bindings(model)
        if not wrapper_lines or len(wrapped) != 1 or None in wrapped:
            return False
        inner = next(iter(wrapped))
        assert inner is not None
        inner_lines, _ = self._module_bindings(inner)
        if inner == model or inner in info.locals or self._unseen_callers(func) is not None:
            return False
        calls = [call.lineno for _, call, _ in sites_of]
        for line in inner_lines:
            later = [w for w in wrapper_lines if w > line]
            if not later or any(line < c < min(later) for c in calls):
                return False  # the wrapper may still hold the model bound before
        return all(self._eval_at(site, inner) for site in sites)

    def _module_bindings(self, name: str) -> tuple[list[int], set[str | None]]:
        """The lines of the module-level statements that bind the global
        ``name``, and the name each value wraps or is (None: anything else);
        a binding inside a function counts as anything else."""
        lines: list[int] = []
        wrapped: set[str | None] = set()
        imports = self.ctx.facts.imports
        for node in nodes_of(self.ctx.tree, ast.Name):
            if not isinstance(node, ast.Name) or node.id != name:
                continue
            if not isinstance(node.ctx, ast.Store):
                continue
            stmt = enclosing_stmt(self.parents, node)
            if stmt is None or isinstance(scope_of(self.parents, stmt), FUNCTIONS):
                if stmt is not None and name not in self._locals_of(stmt):
                    wrapped.add(None)  # ``global name`` in a function
                continue
            lines.append(stmt.lineno)
            value = stmt.value if isinstance(stmt, ast.Assign) else None
            inner = unwrap_built(value, imports) if value is not None else None
            wrapped.add(inner.id if isinstance(inner, ast.Name) else None)
        return lines, wrapped

    def _locals_of(self, stmt: ast.stmt) -> frozenset[str]:
        scope = scope_of(self.parents, stmt)
        return self._locals(scope) if isinstance(scope, FUNCTIONS) else frozenset()

    def _locals(self, fn: Func) -> frozenset[str]:
        info = self.ctx.facts.modes.index.functions.get(fn)
        return frozenset(info.locals) if info is not None else frozenset()

    def _eval_at(self, site: ast.AST, model: str) -> bool:
        """Whether ``model`` needs no ``eval()`` at ``site``, as the mode flow
        (``ctx.facts.modes``) reads it there: every mode it may be in is
        eval, or one of them comes from a switch the author made under a
        condition or from a flag (the mode is managed here; not ours to
        judge). A mode a wrapper's ``model.module`` switch set counts too."""
        flow = self.ctx.facts.modes
        return any(
            self._settled(
                self._through_rewraps(
                    self._unguarded(flow.mode_before(site, key).facts, site), key
                ),
                key,
            )
            for key in (model, f"{model}.module")
        )

    def _unguarded(self, facts: frozenset[ModeFact], site: ast.AST) -> frozenset[ModeFact]:
        """A mode set under an ``if`` is no condition for a forward in the
        same branch right after it (``if is_packed: model.train(); out =
        model(...)``): its guard is dropped for that forward."""
        here = enclosing_stmt(self.parents, site)
        found = block_of(self.parents, here) if here is not None else None
        if found is None:
            return facts
        before = found[0][: found[1]]
        return frozenset(
            replace(f, guard=None)
            if f.guard is not None and any(self.parents.get(f.origin) is s for s in before)
            else f
            for f in facts
        )

    def _through_rewraps(
        self, facts: frozenset[ModeFact], model: str, depth: int = 0
    ) -> frozenset[ModeFact]:
        """``model = prepare_pippy(model, ...)``, a wrapper the library table
        does not know (``passthrough.rewraps``; the flow keeps the mode through
        the table's own, ``accelerator.prepare``), gives back the same
        modules, in the mode they had: read the mode from before it."""
        out: set[ModeFact] = set()
        for f in facts:
            if depth < 3 and f.mode is Mode.UNKNOWN and rewraps(f.origin, model):
                before = self.ctx.facts.modes.mode_before(f.origin, model).facts
                out |= self._through_rewraps(before, model, depth + 1)
            else:
                out.add(f)
        return frozenset(out)

    def _settled(self, facts: frozenset[ModeFact], model: str) -> bool:
        if not facts:
            return False  # unreachable, or outside any scope the flow reads
        switched = [f for f in facts if mode_switch(f.origin) is not None]
        if any(f.mode is Mode.UNKNOWN or f.guard is not None for f in switched):
            return True  # set under a condition or from a flag
        # The author's ``eval()`` reaches here on some path: the other paths
        # (a loop run zero times, an exception before it) are not ours to
        # guard; a ``train()`` that reaches here is.
        authored_eval = any(f.mode is Mode.EVAL for f in switched)
        entry: set[Func] = set()
        for f in facts:
            if f.mode is Mode.EVAL:
                continue
            if f in switched or not authored_eval:
                if not isinstance(f.origin, FUNCTIONS):
                    return False
                entry.add(f.origin)
        return all(self._entry_eval(fn, model) for fn in entry)

    def _entry_eval(self, func: Func, model: str) -> bool:
        """Every call of ``func`` in this file passes ``model`` in eval mode
        (as the flow reads the caller there), or runs inside the project's
        own eval context (a ``with`` or decorator that switches to eval)."""
        found = self.ctx.facts.modes.entry_states(func, model)
        if not found:
            return self._closure_eval(func, model)
        return all(
            "eval" in self._around(call) or state.modes == {Mode.EVAL} for call, state in found
        )

    def _closure_eval(self, func: Func, model: str) -> bool:
        """``func`` is nested in the function that holds ``model`` and no call
        of it is in the file (handed to a UI or a callback: alpaca-lora's
        ``evaluate`` given to gradio in ``main``): it reads the enclosing
        function's ``model``, which is in eval mode where ``func`` is defined
        and that function switches it no more after the definition."""
        flow = self.ctx.facts.modes
        outer = scope_of(self.parents, func)
        inner = flow.index.functions.get(func)
        enclosing = flow.index.functions.get(outer) if isinstance(outer, FUNCTIONS) else None
        root = model.split(".")[0]
        if inner is None or enclosing is None or root in inner.locals:
            return False
        if root not in enclosing.locals or flow.mode_before(func, model).modes != {Mode.EVAL}:
            return False
        defined = (func.lineno, func.col_offset)
        return not any(
            c.function is outer
            and (is_prefix(c.model, model) or is_prefix(model, c.model))
            and (c.node.lineno, c.node.col_offset) > defined
            for c in flow.mode_calls
        )

    def _around(self, site: ast.AST) -> frozenset[str]:
        """What the context managers and decorators around a call site, up to
        its function, do (unknown ones count as nothing here: this only
        proves a caller handled mode or grad)."""
        found: set[str] = set()
        cur: ast.AST | None = site
        while cur is not None:
            for expr in _wrapper_exprs(cur):
                found |= self.handlers.handling(expr) or frozenset()
            if isinstance(cur, FUNCTIONS):
                break
            cur = self.parents.get(cur)
        return frozenset(found)

    def _records_graph(self, model: str, site: ast.AST) -> bool:
        """``model``'s forward at ``site`` runs with grad on and has parameters
        that require it: not a module without parameters, not one the author
        froze (``requires_grad_(False)``) on every path to it."""
        if not self._grad_on(site) or holds_no_state(self.ctx, model):
            return False
        return not self.ctx.facts.modes.freezing.grad_free_at(model, site)

    def _grad_on(self, site: ast.AST) -> bool:
        if self.ctx.facts.modes.grad_enabled(site) is False:
            return False
        if _library_no_grad(self.ctx, site) or self.index.grad_off_method(site):
            # ``model.generate(ids)``: transformers runs it under no_grad; an
            # in-repo ``@torch.no_grad() def generate`` does the same.
            return False
        state = self.grad.in_function(site)
        if state is not None:
            return state == "on"
        func = scope_of(self.parents, site)
        if not isinstance(func, FUNCTIONS):
            return True
        # Grad is the caller's: any call of it under a grad context counts as
        # handled (the author thought about it).
        for call in self.local.call_sites(func):
            if self.grad.in_function(call) is not None or "grad" in self._around(call):
                return False
        return True

    def _paused_with(self, loop: ast.stmt) -> str | None:
        """Why a loop that yields cannot get ``no_grad``; None when it does not
        yield, or when its generator function can be decorated instead. A
        ``with torch.no_grad():`` around a ``yield`` stays entered while the
        generator is paused, so grad would be off in the caller between two
        ``next()`` calls (its training step would silently stop learning);
        torch's decorator on a generator function re-enters the context at
        each resume and leaves it at each ``yield``. The decorator covers the
        whole function, so nothing else in it may need gradients or hand out
        what a forward computed."""
        if not suspends([loop]):
            return None
        func = scope_of(self.parents, loop)
        why = (
            "the loop yields, and a `with no_grad():` around it would stay in force while "
            "the generator is paused, turning grad off in its caller"
        )
        if not isinstance(func, ast.FunctionDef) or func.decorator_list:
            return why
        whole = body_without_docstring(func)
        if walk_gradient_uses(self.ctx, whole):
            return f"{why}; decorating the function instead would cover its gradient code"
        inside = set(walk_local(loop))
        found = escapes(
            func,
            whole,
            self._is_forward,
            self.index.models.__contains__,
            self.ctx.facts.imports.qualname,
            self._helpers,
        )
        if any(e.node not in inside for e in found):
            return f"{why}; decorating the function instead would detach what else it hands out"
        return None

    # --- the finding --------------------------------------------------------
    def _eval_anchor(self, region: EvalRegion, body: list[ast.stmt], model: str) -> ast.stmt | None:
        """The statement ``<model>.eval()`` goes before: the loop itself, or the
        first statement of the function; for a model bound in the function,
        the first statement that calls it. None when the model is rebound
        inside the region (an ``eval()`` before it would miss the new object)."""
        root = model.split(".")[0]
        bound = [s for s in body if _binds(s, root)]
        if not isinstance(region.node, FUNCTIONS):
            return None if bound else region.node
        if not bound:
            return body[0]
        first_call = next((s for s in body if self.index.model_calls([s]).get(model)), None)
        if first_call is None:
            return None
        after = body[body.index(first_call) :]
        return None if any(_binds(s, root) for s in after) else first_call

    def _finding(
        self,
        region: EvalRegion,
        body: list[ast.stmt],
        calls: dict[str, list[ast.Call]],
        need: _Need,
    ) -> Finding:
        ctx = self.ctx
        node = region.node
        torch = ctx.facts.torch_name()
        t = torch or "torch"
        what = (
            f"Evaluation function `{node.name}`"
            if isinstance(node, FUNCTIONS)
            else "Evaluation after the training step"
            if region.signal == "after-step"
            else "Evaluation after training"
            if region.signal == "after-training"
            else "Evaluation loop"
        )
        models = need.eval_models or need.recording or sorted(calls, key=lambda m: _first(calls[m]))
        names = ", ".join(f"`{m}`" for m in models)
        evals = ", ".join(f"`{m}.eval()`" for m in need.eval_models)
        switched = ", ".join(f"`{m}`" for m in need.leftover)
        if need.eval_models and need.grad:
            message = (
                f"{what} may run {names} in train mode and with grad enabled; "
                f"run it under {evals} and `{t}.no_grad()`"
            )
        elif need.eval_models:
            message = (
                f"{what} may run {names} in train mode "
                f"({train_mode_effects(ctx, need.eval_models)}); call {evals} first"
            )
        else:
            message = (
                f"{what} runs {names} with grad enabled, building autograd graphs "
                f"it never uses; run it under `{t}.no_grad()`"
            )
        if need.leftover:
            # ``train()`` left in evaluation code: a message of its own.
            message = (
                f"{what} switches {switched} to train mode before running it on "
                f"evaluation data ({train_mode_effects(ctx, need.leftover)}); "
                f"call `eval()` there instead"
            )
            if need.grad:
                message += f", and run it under `{t}.no_grad()`"
        if need.volatile:
            message += " (`volatile=True` has had no effect since PyTorch 0.4)"
        if need.grad_helper is not None:
            message = (
                f"{what} runs {names} with grad enabled, but `{t}.no_grad()` cannot be "
                f"added: it calls `{need.grad_helper}`, which needs gradients"
            )
            if need.eval_models:
                message += f"; {evals} is missing too"
            return ctx.finding("RNF003", node, message)
        if need.escape is not None:
            state = " and ".join(
                (["possibly in train mode"] if need.eval_models else [])
                + (["with grad enabled"] if need.grad else [])
            )
            wrappers = " or ".join(
                (["`eval()`"] if need.eval_models else [])
                + ([f"`{t}.no_grad()`"] if need.grad else [])
            )
            message = (
                f"{what} runs {names} {state}; not fixed: {need.escape}. A caller "
                f"may differentiate it, and {wrappers} here would then silently change "
                f"or stop training"
            )
            return ctx.finding("RNF003", node, message)
        if need.no_fix is None and need.grad and not isinstance(node, FUNCTIONS):
            need.no_fix = self._paused_with(node)
        if need.no_fix is not None:
            return ctx.finding("RNF003", node, f"{message}; not fixed: {need.no_fix}")
        edits: list[Edit] = []
        restored = False  # the mode switched and given back by the fix itself
        if need.restore and need.eval_models:
            assert isinstance(node, FUNCTIONS)
            found = (
                restore_edits(ctx, node, body, need.eval_models)
                if not need.leftover
                else "it switches the model to train mode itself"
            )
            if isinstance(found, str):
                message += (
                    f"; not fixed: training code calls it, and its mode cannot be restored: {found}"
                )
                return ctx.finding("RNF003", node, message)
            message += (
                " (training code calls it: the fix restores the caller's mode on the way out)"
            )
            edits.extend(found)
            restored = True
            need.eval_models = []  # done: saved, switched and restored
        for model in need.eval_models:
            leftover = need.leftover.get(model)
            if leftover is not None:
                for call in leftover:
                    receiver = ctx.segment(call.func.value)  # type: ignore[attr-defined]
                    edits.append(
                        ReplaceExpression(ctx.pos(call), ctx.end_pos(call), f"{receiver}.eval()")
                    )
                continue
            anchor = self._eval_anchor(region, body, model)
            assert anchor is not None
            edits.append(InsertStatements(ctx.pos(anchor), (f"{model}.eval()",), "before"))
        # A loop that yields: the generator function is decorated instead
        # (``_paused_with`` has checked that this is safe).
        decorated = node if isinstance(node, FUNCTIONS) else None
        if decorated is None and suspends(body):
            scope = scope_of(self.parents, node)
            assert isinstance(scope, ast.FunctionDef)
            decorated = scope
        if need.grad:
            if decorated is not None:
                edits.append(AddDecorator(ctx.pos(decorated), f"{t}.no_grad()"))
            else:
                edits.append(WrapInWith(ctx.pos(node), ctx.pos(body[-1]), f"{t}.no_grad()"))
            if torch is None:
                edits.append(AddImport("torch"))
        inserted = [m for m in need.eval_models if m not in need.leftover]
        parts = [f"replace `{m}.train()` with `{m}.eval()`" for m in need.leftover]
        if restored:
            parts.append("switch to `eval()` and restore the caller's mode before returning")
        parts += [f"insert {', '.join(f'`{m}.eval()`' for m in inserted)}"] if inserted else []
        if need.grad:
            parts.append(
                f"decorate with `@{t}.no_grad()`"
                if isinstance(node, FUNCTIONS)
                else f"decorate the generator `{decorated.name}` with `@{t}.no_grad()`"
                if decorated is not None
                else f"wrap in `with {t}.no_grad():`"
            )
        fix = Fix(tuple(edits), safe=True, description=" and ".join(parts))
        return ctx.finding("RNF003", node, message, fix)


def _run_of(parents: dict[ast.AST, ast.AST], region: EvalRegion) -> list[ast.stmt]:
    """The statements of a region that is a run of a block's statements."""
    found = block_of(parents, region.node)
    assert found is not None and region.last is not None
    block, first = found
    return block[first : block.index(region.last) + 1]


def _describe(found: list[Escape]) -> str:
    hows = list(dict.fromkeys(e.how for e in found))
    return " and ".join(hows[:2]) if len(hows) <= 2 else f"{hows[0]}, {hows[1]} and more"


def _is_call(site: ast.Call) -> Callable[[ast.Call], bool]:
    def test(call: ast.Call) -> bool:
        return call is site

    return test


def _nothing(_: str) -> bool:
    return False


def walk_gradient_uses(ctx: FileContext, body: list[ast.stmt]) -> list[ast.AST]:
    return [u for s in body for u in gradient_uses(ctx, s)]


def _first(sites: list[ast.Call]) -> tuple[int, int]:
    return min((c.lineno, c.col_offset) for c in sites)


def _binds(stmt: ast.stmt, name: str) -> bool:
    for n in walk_all_local([stmt]):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name:
            return True
    return False


def _library_no_grad(ctx: FileContext, site: ast.AST) -> bool:
    """``site`` calls a library forward method the library runs under
    ``torch.no_grad()`` itself (the table's ``no_grad_methods``)."""
    if not (isinstance(site, ast.Call) and isinstance(site.func, ast.Attribute)):
        return False
    method = site.func.attr
    if method not in library.NO_GRAD_METHODS:
        return False
    owner = dotted(site.func.value)
    info = ctx.facts.modes.model_info(owner) if owner is not None else None
    return info is not None and method in info.forwards


def _wrapper_exprs(node: ast.AST) -> list[ast.expr]:
    """What may wrap the code below ``node``: a ``with``'s context managers, a
    function's decorators."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in node.items]
    if isinstance(node, FUNCTIONS):
        return list(node.decorator_list)
    return []


def _module_bindings(stmt: ast.stmt) -> list[str]:
    """Names a module-level statement binds (definitions, assignments, imports)."""
    if isinstance(stmt, (*FUNCTIONS, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _spread(body: list[ast.stmt], names: set[str], source: Callable[[ast.AST], bool]) -> set[str]:
    """``names`` and what the assignments of ``body`` write from them or
    from a value ``source`` accepts, a few rounds (``y = model(x)``, then
    ``loss = f(y)``, in any order)."""
    out = set(names)
    assignments = [n for n in walk_all_local(body) if isinstance(n, (ast.Assign, ast.AugAssign))]
    for _ in range(3):
        before = len(out)
        for n in assignments:
            if source(n.value) or _mentions_any(n.value, out):
                out |= written([n])
        if len(out) == before:
            break
    return out


def _mentions_any(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


# Builtins that make no tensor from their arguments' graph.
_PLAIN_BUILTINS = frozenset(
    {"range", "len", "enumerate", "zip", "int", "float", "str", "print", "min", "max", "abs",
     "round", "sorted", "list", "tuple", "dict"}
)  # fmt: skip


def _plain_call(
    call: ast.Call, qualname: Callable[[ast.expr], str | None], graph: set[str]
) -> bool:
    """A call that records no graph unless an argument holds one (checked
    by the caller's walk): torch's and numpy's functions and tensor factories
    (``torch.FloatTensor(...).normal_(...)``, ``Variable(x, volatile=True)``),
    a few builtins, and a method of a name that holds no graph
    (``img.cuda()``) or of such a call's result. Not a call with
    ``requires_grad`` among its keywords."""
    if any(k.arg == "requires_grad" for k in call.keywords):
        return False
    func = call.func
    name = qualname(func)
    if name is not None:
        return name.split(".")[0] in ("torch", "numpy", "math", "random")
    if isinstance(func, ast.Name):
        return func.id in _PLAIN_BUILTINS
    if isinstance(func, ast.Attribute):
        if func.attr in ("requires_grad_", "backward"):
            return False
        owner = func.value
        if isinstance(owner, ast.Name):
            own = owner.id in ("self", "cls")
            return owner.id not in graph and qualname(owner) is None and not own
        if isinstance(owner, ast.Call):
            return _plain_call(owner, qualname, graph)
        if isinstance(owner, ast.Subscript):
            return isinstance(owner.value, ast.Name) and owner.value.id not in graph
    return False


def _makes_volatile(value: ast.AST) -> bool:
    """``Variable(x, volatile=True)`` somewhere in ``value``."""
    return any(map(_volatile_keyword, ast.walk(value)))


def _volatile_keyword(node: ast.AST) -> bool:
    """``volatile=<anything but False>``: the pre-0.4 way to build no graph."""
    return (
        isinstance(node, ast.keyword)
        and node.arg == "volatile"
        and not (isinstance(node.value, ast.Constant) and node.value.value is False)
    )


def _bound_value(stmt: ast.stmt) -> ast.AST | None:
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return stmt.value
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return stmt.iter
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple([i.context_expr for i in stmt.items], ast.Load())
    return None


def _nested_bound(stmt: ast.stmt) -> set[str]:
    """What the statements nested in a compound ``stmt`` bind (each read on
    its own by the caller's loop)."""
    if not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith,
                             ast.Try, ast.TryStar)):  # fmt: skip
        return set()
    return written([n for n in walk_all_local([stmt]) if isinstance(n, ast.stmt) and n is not stmt])
