"""RNF003's decision for one evaluation region: leave it, report it, or fix it.

Kept apart from the rule class so that the rule module stays docs + wiring.
Every "leave alone" below is a precision decision: a wrong edit in a correct
file costs more than a missed bug.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field

from rnnfix.analysis.gradctx import GradContexts, LocalFunctions, gradient_uses
from rnnfix.analysis.modeflow import Mode as FlowMode
from rnnfix.analysis.modelrefs import Mode, ModelIndex, mode_before, mode_calls_in
from rnnfix.analysis.names import dotted
from rnnfix.analysis.regions import EvalRegion, in_training_iteration, is_smoke_test
from rnnfix.analysis.syntax import (
    FUNCTIONS,
    body_without_docstring,
    enclosing_stmt,
    parameters,
    scope_of,
    walk_all_local,
)
from rnnfix.analysis.valueflow import ValueFlow, written
from rnnfix.edits import AddDecorator, AddImport, Edit, InsertStatements, WrapInWith
from rnnfix.rules.base import FileContext, Finding, Fix

Func = ast.FunctionDef | ast.AsyncFunctionDef


class Verdict(enum.Enum):
    NOT_A_REGION = "not a region"  # no model called here: inner loops may still be
    LEFT_ALONE = "left alone"  # correct already, or not safe to touch


@dataclass
class _Need:
    """What a region lacks, and what stops a fix."""

    eval_models: list[str] = field(default_factory=list)
    grad: bool = False
    volatile: bool = False
    grad_helper: str | None = None  # a local function it calls needs gradients
    no_fix: str | None = None


class RegionJudge:
    """One per file: the model index and local functions are shared by its regions."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.parents = ctx.facts.parents
        self.index = ModelIndex(ctx, extra=ctx.facts.modes.models)
        self.local = LocalFunctions(ctx)
        self.flow = ValueFlow(ctx)
        self.grad = GradContexts(ctx)

    def run(self, region: EvalRegion) -> Finding | Verdict:
        node = region.node
        is_function = isinstance(node, FUNCTIONS)
        if is_function:
            assert isinstance(node, FUNCTIONS)
            if isinstance(node, ast.AsyncFunctionDef):
                return Verdict.NOT_A_REGION  # @no_grad does not cover a coroutine's body
            body = body_without_docstring(node)
        else:
            body = [node]
        calls = {
            m: cs for m, cs in self.index.model_calls(body).items() if m not in ("self", "cls")
        }
        if not body or not calls:
            return Verdict.NOT_A_REGION
        if isinstance(node, FUNCTIONS) and is_smoke_test(node, calls, self.index.builds_module):
            return Verdict.LEFT_ALONE
        # A region that computes gradients is a gradient evaluator (saliency,
        # test-time optimisation) or training: not evaluation.
        if any(True for _ in walk_gradient_uses(self.ctx, body)):
            return Verdict.LEFT_ALONE
        if self._fed_into_training(region, body):
            return Verdict.LEFT_ALONE
        sites = [site for group in calls.values() for site in group]
        if any(self.grad.in_function(site) == "on" for site in sites):
            return Verdict.LEFT_ALONE  # under ``enable_grad()``: grad is wanted here
        need = self._need(region, body, calls)
        if not need.eval_models and not need.grad:
            return Verdict.LEFT_ALONE
        if need.grad:
            need.grad_helper = next(filter(None, map(self.local.gradient_helper, body)), None)
        return self._finding(region, body, calls, need)

    # --- when to leave a region alone -----------------------------------
    def _fed_into_training(self, region: EvalRegion, body: list[ast.stmt]) -> bool:
        node = region.node
        if isinstance(node, FUNCTIONS):
            return self._callers_train(node)
        if region.signal != "data" and in_training_iteration(self.ctx, node):
            return True  # sampling / generation inside a training step
        scope = scope_of(self.parents, node)
        seeds = written(body) - set(self.index.models)
        if self.flow.reaches_gradient_use(body, scope, seeds):
            return True
        if region.signal == "after-eval" and isinstance(scope, FUNCTIONS):
            # Only ``eval()`` says this is evaluation, and what the loop computes
            # leaves the function: a caller (maybe in another file) may
            # differentiate it — soft samples fed to a generator loss, say.
            if self.flow.escapes(body, scope, seeds):
                return True
        if isinstance(scope, FUNCTIONS) and region.signal != "data":
            # A helper that evaluates and returns what it computed: its
            # callers decide whether that feeds a training step.
            return self._callers_train(scope)
        return False

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

    # --- what is missing --------------------------------------------------
    def _need(
        self, region: EvalRegion, body: list[ast.stmt], calls: dict[str, list[ast.Call]]
    ) -> _Need:
        need = _Need()
        for model, sites in sorted(calls.items(), key=lambda kv: _first(kv[1])):
            if not self.index.is_known_module(model):
                continue  # an object of an unknown class: no ``eval()`` on a guess
            if any(self._mode_at(site, model) != "eval" for site in sites):
                need.eval_models.append(model)
        need.grad = any(self._grad_on(site) for sites in calls.values() for site in sites)
        need.volatile = need.grad and any(
            isinstance(n, ast.keyword)
            and n.arg == "volatile"
            and not (isinstance(n.value, ast.Constant) and n.value.value is False)
            for n in walk_all_local(body)
        )
        for model in need.eval_models:
            if any(mode != "eval" for s in body for _, mode in mode_calls_in(s, model)):
                # ``train()`` inside the region: an ``eval()`` before it
                # cannot hold there; a person has to decide.
                need.no_fix = f"it switches `{model}` to train mode itself"
            elif self._eval_anchor(region, body, model) is None:
                need.no_fix = f"`{model}` is rebound inside it"
        return need

    def _mode_at(self, site: ast.Call, model: str) -> Mode:
        # The mode flow follows helpers, callers and loops; the local reading
        # knows a few things it may not (a loop's last statement-level switch).
        # Either one proving eval is enough: a redundant ``eval()`` is noise.
        if self.ctx.facts.modes.mode_before(site, model).modes == {FlowMode.EVAL}:
            return "eval"
        stmt = enclosing_stmt(self.parents, site)
        assert stmt is not None
        mode, where = mode_before(self.ctx, stmt, model)
        if mode == "unknown" and isinstance(where, FUNCTIONS):
            return self._entry_mode(where, model)
        if mode == "unknown" and isinstance(where, ast.Call):
            # Set from a flag (``model.train(is_training)``) or under a
            # condition: the author manages the mode here; not ours to judge.
            return "eval"
        return mode

    def _entry_mode(self, func: Func, model: str) -> Mode:
        """ "eval" when every call of ``func`` in this file passes the model
        already in eval mode; one level of callers, read syntactically."""
        sites = self.local.call_sites(func)
        if not sites:
            return "unknown"
        params = parameters(func)
        root, _, rest = model.partition(".")
        for site in sites:
            text = model
            if root in params and root not in ("self", "cls"):
                arg = _argument(site, func, params, root)
                base = dotted(arg) if arg is not None else None
                if base is None:
                    return "unknown"
                text = f"{base}.{rest}" if rest else base
            stmt = enclosing_stmt(self.parents, site)
            if stmt is None or mode_before(self.ctx, stmt, text)[0] != "eval":
                return "unknown"
        return "eval"

    def _grad_on(self, site: ast.AST) -> bool:
        if self.ctx.facts.modes.grad_enabled(site) is False:
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
            if self.grad.in_function(call) is not None:
                return False
        return True

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
            else "Evaluation loop"
        )
        models = need.eval_models or sorted(calls, key=lambda m: _first(calls[m]))
        names = ", ".join(f"`{m}`" for m in models)
        evals = ", ".join(f"`{m}.eval()`" for m in need.eval_models)
        if need.eval_models and need.grad:
            message = (
                f"{what} may run {names} in train mode and with grad enabled; "
                f"run it under {evals} and `{t}.no_grad()`"
            )
        elif need.eval_models:
            message = (
                f"{what} may run {names} in train mode (dropout on, BatchNorm "
                f"statistics updated); call {evals} first"
            )
        else:
            message = (
                f"{what} runs {names} with grad enabled, building autograd graphs "
                f"it never uses; run it under `{t}.no_grad()`"
            )
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
        if need.no_fix is not None:
            return ctx.finding("RNF003", node, f"{message}; not fixed: {need.no_fix}")
        edits: list[Edit] = []
        for model in need.eval_models:
            anchor = self._eval_anchor(region, body, model)
            assert anchor is not None
            edits.append(InsertStatements(ctx.pos(anchor), (f"{model}.eval()",), "before"))
        if need.grad:
            if isinstance(node, FUNCTIONS):
                edits.append(AddDecorator(ctx.pos(node), f"{t}.no_grad()"))
            else:
                edits.append(WrapInWith(ctx.pos(node), ctx.pos(node), f"{t}.no_grad()"))
            if torch is None:
                edits.append(AddImport("torch"))
        parts = [f"insert {evals}"] if need.eval_models else []
        if need.grad:
            parts.append(
                f"decorate with `@{t}.no_grad()`"
                if isinstance(node, FUNCTIONS)
                else f"wrap in `with {t}.no_grad():`"
            )
        fix = Fix(tuple(edits), safe=True, description=" and ".join(parts))
        return ctx.finding("RNF003", node, message, fix)


def walk_gradient_uses(ctx: FileContext, body: list[ast.stmt]) -> list[ast.AST]:
    return [u for s in body for u in gradient_uses(ctx, s)]


def _first(sites: list[ast.Call]) -> tuple[int, int]:
    return min((c.lineno, c.col_offset) for c in sites)


def _binds(stmt: ast.stmt, name: str) -> bool:
    for n in walk_all_local([stmt]):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name:
            return True
    return False


def _argument(site: ast.Call, func: Func, params: list[str], name: str) -> ast.expr | None:
    for k in site.keywords:
        if k.arg == name:
            return k.value
    index = params.index(name)
    if params and params[0] in ("self", "cls") and isinstance(site.func, ast.Attribute):
        index -= 1  # bound method: ``self`` is not in the argument list
    if 0 <= index < len(site.args) and not any(
        isinstance(a, ast.Starred) for a in site.args[: index + 1]
    ):
        return site.args[index]
    return None
