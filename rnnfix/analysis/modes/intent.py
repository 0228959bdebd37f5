"""Is an ``eval()`` that reaches a training step there on purpose?

Fine-tuning with frozen BatchNorm statistics (or a frozen backbone) calls
``model.eval()`` right before the training loop, often with
``cudnn.flags(enabled=False)`` so that an RNN can still be trained. Putting
``train()`` after it undoes what the author asked for. An ``eval()`` is a
*bug* only when

- an evaluation runs between it and the step (a forward under ``no_grad``, a
  helper or method that receives the model), or
- it reaches the step from another iteration (around a loop's back edge) or
  from another function (a helper's summary, a caller's state).

What is left -- an ``eval()`` of the step's own scope whose only successor is
training, in the same iteration -- is deliberate. Every rule asks
``ModeFlow.deliberate_eval``; nothing here is specific to one rule.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.comments import EVAL_INTENTS, intent_comment
from rnnfix.analysis.modes.exclusive import eval_excludes_step
from rnnfix.analysis.modes.flow import chained_mode
from rnnfix.analysis.modes.placement import container, statement_path
from rnnfix.analysis.modes.state import ModeFact, is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.scopes import LOOPS, FuncNode
from rnnfix.analysis.syntax.walks import FUNCTIONS, walk_local
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import built_class

if TYPE_CHECKING:
    from collections.abc import Callable

    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.modes.records import Summary


def deliberate_eval(
    flow: FlowView, fact: ModeFact, step: ast.Call, scope: FuncNode | None, model: str
) -> bool:
    origin = fact.origin
    if isinstance(origin, (ast.Assign, ast.AnnAssign)) and origin.value is not None:
        # ``vgg = VGG().to(device).eval()``: a frozen feature extractor
        built = origin.value
        if chained_mode(built) is not Mode.EVAL:
            return False
    elif scope is not None and origin is scope:
        if fact.cause is not None and eval_excludes_step(flow, fact.cause, scope):
            return True  # the eval() path never builds the optimizer ``scope`` steps
        return _deliberate_entry(flow, fact, step, scope, model)
    elif mode_switch(origin) is None:
        return False  # a helper's eval(), or the model as a caller left it
    if intent_comment(flow.ctx.lines, origin, EVAL_INTENTS) is not None:
        # ``model.eval()  # freeze BN statistics``, ``# batch size 1``: the
        # author says why; train() after it would undo that.
        return True
    if flow.freezing.freezes_near(origin, model) is not None:
        # ``unet.requires_grad_(False); unet.eval()``: frozen on purpose, in
        # parameters and in mode; whatever evaluates it later is no bug.
        return True
    if flow.scope_of(origin) is not scope:
        return False  # another function
    # Between the eval() and the step: the rest of the eval()'s statement,
    # the statements in between, and the training statement up to the step.
    return _nothing_evaluates(flow, origin, step, scope, model, True)


def _deliberate_entry(
    flow: FlowView, fact: ModeFact, step: ast.Call, scope: FuncNode, model: str
) -> bool:
    """``net.eval()`` at module level (BatchNorm frozen: the batch size is 1),
    then ``train()`` is called, whose first use of ``net`` is the training
    forward: the first use after an ``eval()`` decides what it is for. Only
    for a model the caller and the function name alike (a global,
    ``self.<attr>`` of the same object is not followed)."""
    cause = fact.cause
    switch = mode_switch(cause) if isinstance(cause, ast.Call) else None
    if cause is None or switch is None or switch.mode is not Mode.EVAL:
        return False
    if intent_comment(flow.ctx.lines, cause, EVAL_INTENTS) is not None:
        # ``# fix the batch normalization ... because batchsize = 1`` above a
        # module-level ``net.eval()`` (GAIC's answer to its issue #2): the
        # author says why, whatever runs between it and the step.
        return True
    if _evaluated_on_purpose_before(flow, cause, model):
        return True
    info = flow.function_info(scope)
    root = model.split(".")[0]
    passed = info is not None and root in info.params
    if passed and _frozen_feature_model(flow, cause, scope, model):
        return True  # a fixed loss network handed to the training function
    if info is None or root in {*info.params, *info.kwonly} or root in info.locals:
        return False
    if flow.freezing.freezes_near(cause, model) is not None:
        return True
    caller = flow.scope_of(cause)
    at = (getattr(cause, "lineno", 0), getattr(cause, "col_offset", 0))
    sites = sorted(
        (c for s, c in flow.callers(scope) if s is caller and (c.lineno, c.col_offset) > at),
        key=lambda c: (c.lineno, c.col_offset),
    )
    if not sites or not _nothing_evaluates(flow, cause, sites[0], caller, model, False):
        return False
    # In the function, before the step: nothing evaluates the model either.
    path = statement_path(step, scope, flow.parents)
    if not path:
        return False
    step_pos = (step.lineno, step.col_offset)
    for node in flow.scope_calls(scope):
        if (node.lineno, node.col_offset) >= step_pos or node is step:
            continue
        top = statement_path(node, scope, flow.parents)
        feeds = top is not None and len(top) > 0 and top[0] is path[0]
        if _evaluates(flow, node, model, scope, training_stmt=feeds):
            return False
    return True


def _evaluated_on_purpose_before(flow: FlowView, cause: ast.AST, model: str) -> bool:
    """Every mode ``model`` may be in right before the ``eval()`` ``cause`` is
    an eval the author said was on purpose: this ``eval()`` changes nothing
    (PoolNet's ``__init__``: ``self.build_model()``, whose ``self.net.eval()
    # use_global_stats = True`` freezes BatchNorm, then ``if config.mode ==
    'test': ... self.net.eval()``). Read at the ``eval()`` itself, or in the
    helper of the file whose call set it."""
    facts = flow.mode_before(cause, model).facts
    if not facts:
        return False
    scope = flow.scope_of(cause)
    last = model.rsplit(".", 1)[-1]
    for fact in facts:
        if fact.mode is not Mode.EVAL:
            return False
        origin = fact.origin
        if not isinstance(origin, ast.Call):
            return False
        if mode_switch(origin) is not None:
            if intent_comment(flow.ctx.lines, origin, EVAL_INTENTS) is None:
                return False
            continue
        res = flow.index.resolve(origin, scope)
        if res is None or not any(
            (sw := mode_switch(n)) is not None
            and sw.mode is Mode.EVAL
            and sw.target is not None
            and sw.target.rsplit(".", 1)[-1] == last
            and intent_comment(flow.ctx.lines, n, EVAL_INTENTS) is not None
            for n in walk_local(res.callee.node)
            if isinstance(n, ast.Call)
        ):
            return False
    return True


def _frozen_feature_model(flow: FlowView, cause: ast.AST, scope: FuncNode, model: str) -> bool:
    """The caller switched the model to eval right after building it (``vgg =
    TruncatedVGG19(); vgg.eval()``: a fixed feature or loss network, as
    ``VGG().eval()`` would be), and the training function it is passed to
    switches other models to train mode itself but never this one
    (``generator.train(); discriminator.train()``), and no optimizer of the
    file is built over its parameters: the author manages the modes there
    model by model and left this one out on purpose."""
    stmt = flow.stmt_of(cause)
    block = container(stmt, flow.parents) if stmt is not None else None
    receiver = mode_switch(cause)
    if block is None or stmt is None or receiver is None:
        return False
    name = dotted(receiver.receiver)
    at = next(i for i, s in enumerate(block) if s is stmt)
    built = block[at - 1] if at > 0 else None
    if (
        name is None
        or not isinstance(built, ast.Assign)
        or [dotted(t) for t in built.targets] != [name]
        or built_class(built.value, flow.imports, flow.classes) is None
        or flow.optimizers.built_over(name)
    ):
        return False  # not built right before, or an optimizer of the file updates it
    own = [c for c in flow.mode_calls if c.function is scope]
    return any(c.mode is Mode.TRAIN and not _related(c.model, model) for c in own) and not any(
        _related(c.model, model) for c in own
    )


def _related(a: str, b: str) -> bool:
    return is_prefix(a, b) or is_prefix(b, a)


def _nothing_evaluates(
    flow: FlowView,
    origin: ast.AST,
    target: ast.Call,
    scope: FuncNode | None,
    model: str,
    target_trains: bool,
) -> bool:
    """``origin`` (an ``eval()``) and ``target`` (the step, or the call of the
    function that runs it) in the same block of ``scope``, ``origin`` first
    and not in a loop ``target`` is outside of, and no call between them
    runs ``model`` for anything but the training (``_evaluates``)."""
    scope_node: ast.AST = scope if scope is not None else flow.tree
    px = statement_path(origin, scope_node, flow.parents)
    ps = statement_path(target, scope_node, flow.parents)
    if not px or not ps:
        return False
    i = 0
    while i < min(len(px), len(ps)) and px[i] is ps[i]:
        i += 1
    if i >= len(px) or i >= len(ps):
        return False
    if any(isinstance(s, LOOPS) for s in px[i:]):
        return False
    block = container(ps[i], flow.parents)
    if block is None or container(px[i], flow.parents) is not block:
        return False
    start = next(k for k, s in enumerate(block) if s is px[i])
    end = next(k for k, s in enumerate(block) if s is ps[i])
    if start >= end:
        return False
    origin_pos = (getattr(origin, "lineno", 0), getattr(origin, "col_offset", 0))
    target_pos = (target.lineno, target.col_offset)
    for stmt in block[start : end + 1]:
        if isinstance(stmt, (*FUNCTIONS, ast.ClassDef)):
            continue  # a definition runs nothing here
        for node in walk_local(stmt):
            if not isinstance(node, ast.Call) or node is origin or node is target:
                continue
            if not origin_pos < (node.lineno, node.col_offset) < target_pos:
                continue
            feeds = target_trains and (stmt is block[end] or ps[i] is ps[-1])
            if _evaluates(flow, node, model, scope, training_stmt=feeds):
                return False
    return True


def _evaluates(
    flow: FlowView, call: ast.Call, model: str, scope: FuncNode | None, training_stmt: bool
) -> bool:
    """Whether ``call`` may run ``model`` for something other than the
    training step: a forward under ``no_grad``, or a helper that receives it."""
    related = _related_key(flow, call, model)
    if related == "forward":
        # The step's own forward is training; one with grad off is an evaluation.
        return flow.grad_enabled(call) is False or not training_stmt
    if related == "argument":
        callee = flow.callee_summary(call, scope)
        if callee is not None and callee[0].optimizer_step:
            return False  # a training helper: it is the training, not an evaluation
        if callee is not None and _only_forwards(callee, model):
            # ``encode_prompt(text_encoder, ids)``: a helper that only runs the
            # model's forward is a forward, read as one.
            return flow.grad_enabled(call) is False or not training_stmt
        return True
    # A helper of this file that reaches the model without being passed it
    # (a global, ``self.model`` through ``self.validate()``): it may evaluate it.
    res = flow.index.resolve(call, scope)
    if res is None or flow.summary(res.callee).optimizer_step:
        return False
    return _mentions(flow, res.callee.node, model, res.receiver, set())


def _only_forwards(callee: tuple[Summary, Callable[[str], str | None]], model: str) -> bool:
    """The helper's summary runs ``model``'s forward and neither switches its
    mode nor steps an optimizer."""
    summary, mapper = callee
    mapped = [mapper(k) for k in summary.forwards]
    runs = any(m is not None and (is_prefix(m, model) or is_prefix(model, m)) for m in mapped)
    touched = [mapper(k) for k in summary.effects]
    switches = any(t is not None and (is_prefix(t, model) or is_prefix(model, t)) for t in touched)
    return runs and not switches and not summary.optimizer_step


def _mentions(
    flow: FlowView, fn: FuncNode, model: str, receiver: str | None, seen: set[FuncNode]
) -> bool:
    """Whether ``fn`` (or a function of this file it calls) names ``model``:
    as a global, or as ``self.<attr>`` when ``self`` is ``receiver``."""
    if fn in seen or len(seen) > 8:
        return False
    seen.add(fn)
    info = flow.index.functions.get(fn)
    if info is None:
        return False
    this = info.params[0] if info.is_method else None
    root, _, rest = model.partition(".")
    for node in flow.index.scope_nodes(fn):
        text = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if text is not None:
            if root not in info.locals and is_prefix(root, text) and this != root:
                return True
            if this is not None and receiver is not None and text.startswith(this + "."):
                mine = receiver + text[len(this) :]
                if is_prefix(mine, model) or is_prefix(model, mine):
                    return True
        if isinstance(node, ast.Call):
            res = flow.index.resolve(node, fn)
            if res is not None and _mentions(flow, res.callee.node, model, res.receiver, seen):
                return True
    return False


def _related_key(flow: FlowView, call: ast.Call, model: str) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in MODULE_METHODS:
        return None  # ``net.parameters()``, ``net.to(device)``: no forward
    found = library.row(flow.imports.qualname(func))
    if found is not None and found.kind in ("wrapper", "passthrough"):
        return None  # ``net = DataParallel(net)``: wrapped, not run
    key = flow.forward_path(call, flow.is_model)
    if key is not None and (is_prefix(key, model) or is_prefix(model, key)):
        return "forward"
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in MODULE_METHODS or mode_switch(call) is not None:
            return None
        owner = dotted(func.value)
        # ``self.validate()`` while the model is ``self.model``: the method may
        # evaluate it. Not ``self.text_encoder(ids)``: the forward of another model.
        if (
            owner is not None
            and is_prefix(owner, model)
            and owner != model
            and not flow.is_model(owner + "." + func.attr)
        ):
            return "argument"
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        text = dotted(arg)
        if text is not None and (is_prefix(text, model) or is_prefix(model, text)):
            return "argument"
    return None
