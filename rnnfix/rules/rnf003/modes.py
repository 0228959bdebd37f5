"""RNF003's reading of the module mode in an evaluation region: where an
``eval()`` may go (not into a module's own methods, not on a stateless
module), and ``train()`` left inside evaluation code.

A validation helper that starts with ``model.train()`` (copied from the
training function), or a shared ``for phase in ("train", "val")`` body that
calls ``model.train()`` on every phase, evaluates with dropout on and lets
validation batches update BatchNorm's running statistics.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from rnnfix.analysis.grads.gradctx import GradContexts, training_steps
from rnnfix.analysis.modes.comments import TRAIN_INTENTS, intent_comment
from rnnfix.analysis.modes.loadermode import loader_switches, switch_mode
from rnnfix.analysis.modes.regions import ends_in_eval, phase_names
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    block_of,
    enclosing_stmt,
    guarded_by_name,
    scope_of,
    suspends,
    words,
)
from rnnfix.analysis.torch.api import is_mode_free_torch_module, module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import unwrap_built
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.effects import train_mode_effects
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.source.edits import AddImport, Edit, InsertStatements, ReplaceExpression, WrapInWith

Func = ast.FunctionDef | ast.AsyncFunctionDef

# torch.nn classes without parameters or a train/eval behaviour: an ``eval()``
# on one changes nothing, and it is never "the model" of a region.
_STATELESS = frozenset(
    {"ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
     "Tanh", "Softmax", "Softmax2d", "LogSoftmax", "Softmin", "Softplus", "Softsign",
     "Hardtanh", "Hardsigmoid", "Hardswish", "Hardshrink", "Softshrink", "Tanhshrink",
     "LogSigmoid", "Threshold", "GLU", "Identity", "Flatten", "Unflatten", "MaxPool1d",
     "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
     "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
     "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "Upsample", "UpsamplingNearest2d",
     "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
     "CosineSimilarity", "PairwiseDistance", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
     "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
     "ReplicationPad2d", "ReplicationPad3d", "Fold", "Unfold"}
)  # fmt: skip
_SEQUENTIAL = "torch.nn.Sequential"
# Words of a function that runs a model in train mode on purpose while
# evaluating: Monte Carlo dropout, test-time BatchNorm adaptation, SWA's
# BatchNorm update, stochastic sampling.
_DELIBERATE_TRAIN_WORDS = frozenset(
    {"mc", "dropout", "uncertainty", "bayes", "bayesian", "stochastic", "sample", "samples",
     "sampling", "ensemble", "tta", "bn", "adapt", "adaptation", "calibrate", "calibration",
     "recalibrate", "swa", "stats", "statistics", "mcdropout", "montecarlo"}
)  # fmt: skip
_TRAIN_WORDS = frozenset({"train", "training"})


def in_module_method(ctx: FileContext, func: Func) -> bool:
    """``func`` is a method of an ``nn.Module`` subclass: of this file or the
    run's (directly or through bases the run shows), or of a class that
    defines ``forward`` over a base rnnfix cannot see."""
    owner = ctx.facts.parents.get(func)
    if not isinstance(owner, ast.ClassDef):
        return False
    classes = ctx.facts.modes.classes
    if owner.name in classes.modules or owner.name in classes.lightning:
        return True
    return bool(owner.bases) and any(
        isinstance(s, FUNCTIONS) and s.name == "forward" for s in owner.body
    )


def trains_itself(ctx: FileContext, func: Func) -> bool:
    """``func`` is a module's own method that trains the module itself (a
    Keras-like ``fit``, torchensemble's estimators): a statement of its own
    body, outside any condition or loop, is ``self.train()``, and it runs a
    training step. ``self``'s mode is then this method's to manage, not its
    caller's, and an evaluation inside it (validation in the epoch loop) runs
    ``self`` as any evaluation runs a model: it needs ``self.eval()``. Any
    other method of a module leaves ``self``'s mode to its caller. A class
    whose ``train``/``eval`` (its own, its bases' or its submodules') a mode
    call cannot go through (``def eval(self, loader)``) is not one: an
    inserted ``self.eval()`` would crash."""
    if not in_module_method(ctx, func) or not func.args.args or func.args.args[0].arg != "self":
        return False
    owner = ctx.facts.parents.get(func)
    if isinstance(owner, ast.ClassDef) and ctx.facts.receivers.table.overrides(owner.name):
        return False
    own = any(
        isinstance(s, ast.Expr)
        and (switch := module_mode_switch(s.value)) is not None
        and switch.mode is Mode.TRAIN
        and dotted(switch.receiver) == "self"
        for s in func.body
    )
    return own and any(True for _ in training_steps(ctx, func))


def steps_run_self(ctx: FileContext, func: Func) -> bool:
    """A training step of ``func`` runs ``self`` as the mode flow reads it
    (``self(x)``, ``self.forward(x)``, a method that reaches them): RNF001
    then sees an ``eval()`` of ``self`` reach the next step and puts
    ``train()`` back at the loop head. A step the flow does not tie to
    ``self`` (its forward goes through a helper that runs the elements of a
    container, torchensemble's ``self._forward``) would stay in eval."""
    return any(
        step.function is func and "self" in step.models for step in ctx.facts.modes.training_steps
    )


def is_stateless(ctx: FileContext, model: str) -> bool:
    """``model`` is built from a torch module without parameters or a mode
    (a module-level ``softmax = nn.Softmax(dim=1)``), or a ``Sequential`` of them."""
    info = ctx.facts.modes.model_info(model)
    if info is None or info.built_at is None:
        return False
    return _stateless_call(ctx, info.built_at)


def _stateless_call(ctx: FileContext, call: ast.AST) -> bool:
    if not isinstance(call, ast.Call):
        return False
    qual = ctx.facts.imports.qualname(call.func) or ""
    if qual == _SEQUENTIAL:
        return bool(call.args) and all(_stateless_call(ctx, a) for a in call.args)
    return qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1] in _STATELESS


def is_mode_free(ctx: FileContext, model: str) -> bool:
    """Every binding of ``model`` in the file builds a ``Sequential`` of (or
    one) torch.nn layer whose forward is the same in train and eval mode:
    NYU-DLSP20's ``emulator = nn.Sequential(nn.Linear(...), nn.ReLU(),
    nn.Linear(...))`` needs ``no_grad`` to evaluate, never ``eval()``. Only
    for a model the file never switches: where the author sets its mode
    (``decoder.train()`` beside ``encoder.train()``), ``eval()`` keeps the
    pair alike."""
    flow = ctx.facts.modes
    info = flow.model_info(model)
    if info is None or info.key != model or info.built_at is None:
        return False
    if any(is_prefix(c.model, model) or is_prefix(model, c.model) for c in flow.mode_calls):
        return False
    values = _bound_values(ctx, model)
    return bool(values) and all(_mode_free_call(ctx, v) for v in values)


def builds_mode_free_class(ctx: FileContext, model: str) -> bool:
    """Every binding of ``model`` in the file builds a module whose class,
    read across the files of the run, computes the same in train and eval
    mode (``ClassTable.mode_free_call``: recurrent-visual-attention's
    ``RecurrentAttention``, Linear layers in classes of another file): an
    ``eval()`` would change nothing, whatever mode calls the author makes."""
    table = ctx.facts.receivers.table
    return _every_binding_builds(ctx, model, table.mode_free_call)


def holds_no_state(ctx: FileContext, model: str) -> bool:
    """Every binding of ``model`` in the file builds a module that provably
    holds no parameter and no submodule (the receivers' class table: a torch
    activation or pooling layer, a class of the file or the run whose
    constructor stores neither and that reads no mode, EfficientDet's
    ``BBoxTransform()``): its forward records no graph of its own and is the
    same in both modes, so it needs neither ``no_grad`` nor ``eval()``."""
    table = ctx.facts.receivers.table

    def stateless(built: ast.Call) -> bool:
        ref = table.ref_call(built)
        return ref.module is True and not ref.stateful

    return _every_binding_builds(ctx, model, stateless)


def _every_binding_builds(ctx: FileContext, model: str, holds: Callable[[ast.Call], bool]) -> bool:
    """``model`` is a model the file builds, bound at least once, and every
    value the file binds to it is a constructor call (through wrappers) for
    which ``holds`` is true."""
    info = ctx.facts.modes.model_info(model)
    if info is None or info.key != model or info.built_at is None:
        return False
    imports = ctx.facts.imports
    values = _bound_values(ctx, model)
    return bool(values) and all(
        isinstance(built := unwrap_built(v, imports), ast.Call) and holds(built) for v in values
    )


def _bound_values(ctx: FileContext, model: str) -> list[ast.expr]:
    """The values the file's assignments bind to the path ``model``."""
    return ctx.facts.index.bound_values.get(model, [])


def _mode_free_call(ctx: FileContext, call: ast.AST) -> bool:
    if not isinstance(call, ast.Call):
        return False
    qual = ctx.facts.imports.qualname(call.func) or ""
    if qual == _SEQUENTIAL:
        return bool(call.args) and all(_mode_free_call(ctx, a) for a in call.args)
    return is_mode_free_torch_module(qual)


DELIBERATE = "deliberate"


def leftover_train(
    ctx: FileContext, node: ast.stmt, body: list[ast.stmt], model: str, sites: list[ast.AST]
) -> tuple[ast.Call, ...] | str | None:
    """The statement-level ``model.train()`` calls in an evaluation region
    that the forwards of ``model`` there run after (the last switch before
    each of them: one for all, or one per branch, right before its forward:
    MultiBench's ``if is_packed: model.train(); out = model(...) else:
    model.train(); out = model(...)``); ``DELIBERATE`` when train mode looks
    chosen: Monte Carlo dropout (repeated forwards, or a name that says so),
    BatchNorm adaptation, sampling; None when there is no such call."""
    if not sites:
        return None
    func = node if isinstance(node, FUNCTIONS) else scope_of(ctx.facts.parents, node)
    deliberate = isinstance(func, FUNCTIONS) and bool(
        set(words(func.name)) & _DELIBERATE_TRAIN_WORDS
    )
    flow = ctx.facts.modes
    trains = {
        id(call): call
        for s in body
        for call, mode in flow.switches_in(s, model)
        if mode is Mode.TRAIN and _plain_train(ctx, call, model)
    }
    if not trains:
        return None
    found: dict[int, ast.Call] = {}
    for site in sites:
        where = set_by(ctx, site, model) or _set_right_before(ctx, site, model)
        if where is None or id(where) not in trains:
            return None
        call = found.setdefault(id(where), trains[id(where)])
        deliberate = (
            deliberate
            or repeated_forward(ctx, site, node)
            or intent_comment(ctx.lines, call, TRAIN_INTENTS) is not None
        )
    if len(found) > 1 and any(set_by(ctx, site, model) is not None for site in sites):
        return None  # one train() for some forwards, another for the rest: read it by hand
    return DELIBERATE if deliberate else tuple(found.values())


def _set_right_before(ctx: FileContext, site: ast.AST, model: str) -> ast.AST | None:
    """The one mode call ``model``'s mode comes from before ``site`` when it
    is a statement of the same block as the statement running ``site``,
    before it: straight-line, so the branch it sits in (``set_by`` refuses
    a fact set under an ``if``) is the forward's own."""
    facts = ctx.facts.modes.mode_before(site, model).facts
    origins = {f.origin for f in facts}
    if len(origins) != 1:
        return None
    origin = next(iter(origins))
    parents = ctx.facts.parents
    stmt = parents.get(origin)
    here = enclosing_stmt(parents, site)
    if not isinstance(stmt, ast.Expr) or here is None:
        return None
    found = block_of(parents, here)
    if found is None:
        return None
    block, index = found
    return origin if any(s is stmt for s in block[:index]) else None


def deliberate_train_name(name: str) -> bool:
    """A function named for a chosen train mode (``mc_predict``, ``adapt_bn``)."""
    return bool(set(words(name)) & _DELIBERATE_TRAIN_WORDS)


# The narrower set for an evaluation function of a file that trains: words
# that name the train-mode technique itself (``mc_predict``, ``adapt_bn``,
# ``bayesian_eval``), not ones an ordinary evaluation may carry
# (``evaluate_samples``, ``eval_ensemble``, ``val_stats``).
_TRAIN_MODE_TECHNIQUES = frozenset(
    {"mc", "mcdropout", "montecarlo", "dropout", "bayes", "bayesian", "uncertainty",
     "stochastic", "adapt", "adaptation", "bn", "calibrate", "recalibrate", "swa"}
)  # fmt: skip


def names_train_mode_technique(name: str) -> bool:
    """A function named for a technique that runs in train mode on purpose
    (``mc_predict``, ``adapt_bn``): its train mode is the author's."""
    return bool(set(words(name)) & _TRAIN_MODE_TECHNIQUES)


def chosen_train(ctx: FileContext, node: ast.stmt, model: str, sites: list[ast.Call]) -> bool:
    """Every forward of ``model`` in the region runs in the train mode of one
    plain ``model.train()`` the author wrote before it (outside the region:
    a model loaded for prediction, then put in train mode), and that call
    looks chosen: a comment on it or right above it says why (Monte Carlo
    dropout, BatchNorm statistics, test-time adaptation: ``comments``), or
    the region repeats its forwards (``for _ in range(n)``: Monte Carlo
    sampling). Then ``eval()`` would undo the author's choice."""
    if not sites:
        return False
    found: ast.AST | None = None
    for site in sites:
        where = set_by(ctx, site, model)
        if where is None or (found is not None and where is not found):
            return False
        found = where
    if not isinstance(found, ast.Call) or not _plain_train(ctx, found, model):
        return False
    if intent_comment(ctx.lines, found, TRAIN_INTENTS) is not None:
        return True
    return any(repeated_forward(ctx, site, node) for site in sites)


def evaluation_evals_before(
    ctx: FileContext, region: ast.stmt, model: str, train: ast.Call
) -> bool:
    """The evaluation puts ``model`` in eval itself before the stray
    ``train()``: an ``eval()`` of it earlier in the function that holds the
    region (in the module's own code for a script's loop). Then the
    ``train()`` contradicts the evaluation's own choice and is fixed; without
    one, it is the evaluation's only mode call and may be deliberate (issue 27)."""
    func = region if isinstance(region, FUNCTIONS) else scope_of(ctx.facts.parents, region)
    root: ast.AST = func if isinstance(func, FUNCTIONS) else ctx.tree
    flow = ctx.facts.modes
    at = (train.lineno, train.col_offset)
    for call, mode in flow.switches_in(root, model):
        if mode is Mode.EVAL and (call.lineno, call.col_offset) < at:
            return True
    return False


def set_by(ctx: FileContext, site: ast.AST, model: str) -> ast.AST | None:
    """The one unconditional mode call or statement the mode flow says
    ``model``'s mode comes from just before ``site``; None when it may come
    from several (a branch, a loop's back edge, the callers)."""
    facts = ctx.facts.modes.mode_before(site, model).facts
    origins = {f.origin for f in facts}
    if len(origins) != 1 or any(f.guard is not None for f in facts):
        return None
    return next(iter(origins))


def _plain_train(ctx: FileContext, call: ast.Call, model: str) -> bool:
    """``model.train()`` / ``model.train(True)`` as a statement of its own."""
    switch = module_mode_switch(call)
    parent = ctx.facts.parents.get(call)
    return (
        switch is not None
        and switch.target == model
        and isinstance(parent, ast.Expr)
        and all(isinstance(a, ast.Constant) and a.value is True for a in call.args)
        and not call.keywords
    )


def repeated_forward(ctx: FileContext, site: ast.AST, region: ast.stmt) -> bool:
    """A forward in a ``for _ in range(n)`` loop inside the region: several
    stochastic passes over the same input (Monte Carlo dropout)."""
    parents = ctx.facts.parents
    cur = parents.get(site)
    while cur is not None and cur is not region:
        loops: list[ast.For | ast.AsyncFor | ast.comprehension] = []
        if isinstance(cur, (ast.For, ast.AsyncFor)):
            loops = [cur]
        elif isinstance(cur, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = list(cur.generators)
        for loop in loops:
            it = loop.iter
            if (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name)
                and it.func.id == "range"
                and isinstance(loop.target, ast.Name)
                and loop.target.id.startswith("_")
            ):
                return True
        if isinstance(cur, FUNCTIONS):
            return False
        cur = parents.get(cur)
    return False


# --- a loop shared by the train and the evaluation phase ----------------------
def phase_loop_finding(ctx: FileContext, index: ModelIndex, loop: ast.stmt) -> Finding | None:
    """``for phase in ("train", "val"):`` whose body puts a model in train mode
    unconditionally: validation then runs in train mode. Fixed with
    ``model.train(phase == "train")`` and, where grad is not handled at the
    forward, ``torch.set_grad_enabled(phase == "train")`` around it; reported
    only when the loop also trains on the evaluation phase."""
    assert isinstance(loop, (ast.For, ast.AsyncFor))
    phases = phase_names(loop)
    if phases is None:
        return None
    var, train_node = phases
    calls = {m: cs for m, cs in index.model_calls(loop.body).items() if m not in ("self", "cls")}
    if calls and not any(ctx.facts.modes.switches_in(loop, m) for m in calls):
        return _unswitched_phase_loop(ctx, index, loop, var, train_node, calls)
    edits: list[Edit] = []
    models: list[str] = []
    forwards: list[ast.Call] = []
    train_text = ctx.segment(train_node)
    for model, sites in calls.items():
        switches = ctx.facts.modes.switches_in(loop, model)
        if not switches or not index.is_known_module(model):
            continue
        if any(
            mode is not Mode.TRAIN
            or not _plain_train(ctx, c, model)
            or not _unconditional(ctx, c, loop)
            for c, mode in switches
        ):
            return None  # the author sets the mode per phase somewhere
        models.append(model)
        forwards.extend(sites)
        for c, _ in switches:
            receiver = ctx.segment(c.func.value)  # type: ignore[attr-defined]
            edits.append(
                ReplaceExpression(
                    ctx.pos(c), ctx.end_pos(c), f"{receiver}.train({var} == {train_text})"
                )
            )
    if not models:
        return None
    names = ", ".join(f"`{m}`" for m in models)
    message = (
        f"Loop over phases puts {names} in train mode for every phase: the evaluation "
        f"phase runs its data in train mode ({train_mode_effects(ctx, models)}); "
        f"use `train({var} == {train_text})`"
    )
    steps = list(training_steps(ctx, loop))
    if not steps or not all(guarded_by_name(ctx.facts.parents, s, loop, var) for s in steps):
        return ctx.finding(
            "RNF003",
            loop,
            f"{message}; not fixed: the loop runs its training step in every phase",
        )
    message += _phase_grad_edits(ctx, forwards, f"{var} == {train_text}", edits)
    fix = Fix(tuple(edits), safe=True, description=f"switch the mode with `train({var} == ...)`")
    return ctx.finding("RNF003", loop, message, fix)


def _phase_grad_edits(
    ctx: FileContext, forwards: list[ast.Call], flag: str, edits: list[Edit]
) -> str:
    """``torch.set_grad_enabled(<flag>)`` around the one statement that runs
    the forwards, where nothing sets grad there yet (added to ``edits``);
    what the message says of it ("" when nothing is added)."""
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    grad = GradContexts(ctx)
    stmts = {id(s): s for s in (enclosing_stmt(ctx.facts.parents, f) for f in forwards) if s}
    if any(grad.in_function(f) is not None for f in forwards) or len(stmts) != 1:
        return ""
    stmt = next(iter(stmts.values()))
    # Never around a ``yield`` (the ``with`` would outlast the pause).
    if any(True for _ in training_steps(ctx, stmt)) or suspends([stmt]):
        return ""
    edits.append(WrapInWith(ctx.pos(stmt), ctx.pos(stmt), f"{t}.set_grad_enabled({flag})"))
    if torch is None:
        edits.append(AddImport("torch"))
    return f" and `{t}.set_grad_enabled({flag})` around the forward"


def _unswitched_phase_loop(
    ctx: FileContext,
    index: ModelIndex,
    loop: ast.For | ast.AsyncFor,
    var: str,
    train_node: ast.Constant,
    calls: dict[str, list[ast.Call]],
) -> Finding | None:
    """A phase loop that never sets a mode (zoo-attack-pytorch's ``fit``:
    ``for phase in ('train', 'val')``, the step only under ``if phase ==
    'train'``): the evaluation phase runs in whatever mode training left,
    train mode. The evidence, all of it required: the loop runs a training
    step, each only in the training phase (``phase_guard``); every model
    it calls is a module the file shows, and no ``eval()`` can reach any of
    its forwards (an ``eval()`` before the loop is the author's: frozen
    BatchNorm fine-tuning, or RNF001's question). Fixed with ``model.train(
    phase == "train")`` at the head of each phase and the grad switch; a
    model the file does not show is a module: reported."""
    steps = list(training_steps(ctx, loop))
    if not steps or not all(train_phase_only(ctx, s, loop, var, train_node) for s in steps):
        return None
    flow = ctx.facts.modes
    for model, sites in calls.items():
        if any(f.mode is not Mode.TRAIN for s in sites for f in flow.mode_before(s, model).facts):
            return None
    train_text = ctx.segment(train_node)
    flag = f"{var} == {train_text}"
    models = list(calls)
    names = ", ".join(f"`{m}`" for m in models)
    message = (
        f"Loop over phases never sets the mode of {names}: the evaluation phase runs "
        f"in train mode ({train_mode_effects(ctx, models)}); call `{models[0]}.train({flag})` "
        "at the head of each phase"
    )
    if not all(index.is_known_module(m) for m in models):
        return ctx.finding(
            "RNF003", loop, f"{message}; not fixed: the file does not show it is a module"
        )
    edits: list[Edit] = [
        InsertStatements(ctx.pos(loop.body[0]), tuple(f"{m}.train({flag})" for m in models))
    ]
    forwards = [site for sites in calls.values() for site in sites]
    message += _phase_grad_edits(ctx, forwards, flag, edits)
    fix = Fix(tuple(edits), safe=True, description=f"switch the mode with `train({flag})`")
    return ctx.finding("RNF003", loop, message, fix)


def train_phase_only(
    ctx: FileContext, node: ast.AST, loop: ast.stmt, var: str, train_node: ast.Constant
) -> bool:
    """``node`` runs only in the training phase: in the body of an ``if
    <var> == "train":`` (either side, or ``<var> in ("train", ...)`` with
    only training words), or in the ``else`` of ``if <var> != "train":`` /
    ``if <var> == "val":``, below ``loop``."""
    parents = ctx.facts.parents
    aliases = _phase_aliases(loop, var, train_node.value)
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not loop:
        if isinstance(cur, ast.If):
            test = _phase_test(cur.test, var, train_node.value)
            if isinstance(cur.test, ast.Name) and cur.test.id in aliases:
                test = True
            if child in cur.body and test is True:
                return True
            if child in cur.orelse and test is False:
                return True
        child, cur = cur, parents.get(cur)
    return False


def _phase_aliases(loop: ast.stmt, var: str, train: object) -> set[str]:
    """Names the loop's own body binds once, first thing, to ``<var> ==
    "train"`` (``is_train = phase == "train"``), and never again."""
    body = getattr(loop, "body", [])
    bound: dict[str, int] = {}
    for n in ast.walk(loop):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound[n.id] = bound.get(n.id, 0) + 1
    out: set[str] = set()
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and bound.get(stmt.targets[0].id) == 1
            and _phase_test(stmt.value, var, train) is True
        ):
            out.add(stmt.targets[0].id)
    return out


def _phase_test(test: ast.expr, var: str, train: object) -> bool | None:
    """True when ``test`` holds exactly in the training phase (``phase ==
    "train"``, ``phase in ("train",)``), False when exactly outside it
    (``phase != "train"``), None otherwise: ``phase == "val"`` says nothing
    of a third phase."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(right, ast.Name) and right.id == var:
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == var):
        return None
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        values = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        if not values or len(values) != len(right.elts) or not all(map(_trains, values)):
            return None
        return isinstance(op, ast.In)
    if isinstance(right, ast.Constant) and right.value == train:
        if isinstance(op, ast.Eq):
            return True
        if isinstance(op, ast.NotEq):
            return False
    return None


def _trains(value: object) -> bool:
    return isinstance(value, str) and bool(set(words(value)) & _PHASE_TRAIN_WORDS)


_PHASE_TRAIN_WORDS = frozenset({"train", "training", "fit", "finetune"})


def _unconditional(ctx: FileContext, node: ast.AST, loop: ast.stmt) -> bool:
    """No ``if``/``try``/``while`` between ``node`` and ``loop``."""
    cur = ctx.facts.parents.get(node)
    while cur is not None and cur is not loop:
        if isinstance(cur, (ast.If, ast.Try, ast.While, ast.IfExp, *FUNCTIONS)):
            return False
        cur = ctx.facts.parents.get(cur)
    return cur is loop


def constructor_evals(ctx: FileContext, func: ast.AST, model: str) -> bool:
    """``model`` is ``self.<attr>`` of a method whose class's ``__init__``
    puts it in eval as a statement of its own body (``self.model =
    model; self.model.eval()``: IBM pytorch-seq2seq's ``Predictor`` after its
    fix), and no code of the file ever switches an ``<x>.<attr>`` to another
    mode: the object holds it in eval, so an ``eval()`` in the method would
    repeat the author's (a ``no_grad`` may still be missing)."""
    if not isinstance(func, FUNCTIONS):
        return False
    flow = ctx.facts.modes
    info = flow.function_info(func)
    if info is None or info.cls is None or not info.is_method or not info.params:
        return False
    this, _, attr = model.partition(".")
    if this != info.params[0] or not attr:
        return False
    init = next(
        (s for s in info.cls.body if isinstance(s, FUNCTIONS) and s.name == "__init__"), None
    )
    init_info = flow.function_info(init) if init is not None else None
    if init is None or init_info is None or not init_info.params:
        return False
    mine = f"{init_info.params[0]}.{attr}"
    # ``self.model = net.to(device).eval()``: the eval() of the value it holds.
    evals = any(
        isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and dotted(s.targets[0]) == mine
        and ends_in_eval(s.value)
        for s in init.body
    )
    for call in flow.mode_calls:
        if call.model == mine and call.function is init and call.mode is Mode.EVAL:
            stmt = ctx.facts.parents.get(call.node)
            evals = evals or (isinstance(stmt, ast.Expr) and any(stmt is s for s in init.body))
        elif call.mode is not Mode.EVAL and (call.model == attr or call.model.endswith("." + attr)):
            return False  # switched back somewhere: the held mode is not settled
    return evals


def train_set_by_loader(
    ctx: FileContext, node: ast.stmt, model: str, sites: list[ast.Call]
) -> ast.Call | None:
    """The plain ``train()`` a loader of the file puts the model in before
    returning it, when that is where its mode at every forward of the region
    comes from (sgan's ``get_generator(checkpoint)``: ``generator.train();
    return generator``, then ``evaluate(args, loader, generator, n)``): the
    author asked for train mode in the code that builds the model for this
    evaluation. None when any forward's mode may come from elsewhere."""
    flow = ctx.facts.modes
    found: ast.Call | None = None
    for site in sites:
        facts = flow.mode_before(site, model).facts
        if not facts:
            return None
        for fact in facts:
            where = fact.cause if isinstance(fact.origin, FUNCTIONS) else fact.origin
            train = _loader_train(ctx, where)
            if train is None or (found is not None and train is not found):
                return None
            found = train
    return found


def _loader_train(ctx: FileContext, stmt: ast.AST | None) -> ast.Call | None:
    """``name = loader(...)`` where ``loader`` is a function of the file that
    hands the model back after a plain ``train()`` (``loadermode``)."""
    if not isinstance(stmt, ast.Assign):
        return None
    switch = loader_switches(ctx.facts.modes, stmt.value).get(None)
    if switch is None or switch_mode(switch) is not Mode.TRAIN:
        return None
    name = dotted(switch.func.value) if isinstance(switch.func, ast.Attribute) else None
    return switch if name is not None and _plain_train(ctx, switch, name) else None
