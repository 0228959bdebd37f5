"""RNF003 for a test batch run every N steps inside the training loop (issue 24.3).

    for step, (b_x, b_y) in enumerate(train_loader):
        loss = loss_func(cnn(b_x), b_y)
        optimizer.zero_grad(); loss.backward(); optimizer.step()
        if step % 50 == 0:
            test_output = cnn(test_x)
            accuracy = ...
            print("test accuracy", accuracy)

(MorvanZhou/PyTorch-Tutorial, ``tutorial-contents/401_CNN.py``.) The test
forward builds a graph nobody uses, and when the model has Dropout or
BatchNorm it also runs in train mode. The rest of RNF003 leaves code in the
iteration of a training step alone (sampling for the loss lives there), so
this block is judged on evidence of its own, all of it required:

- an ``if`` whose test computes a remainder (``step % N == 0``: every N
  steps) in a loop whose own iteration runs a training step; no ``else``, no
  loop, ``return``, ``break``, ``continue``, ``yield`` or nested function in it;
- it runs a model of the file on evaluation data: an argument of the forward
  reads a name like ``test_x``/``val_batch``, or a name the block binds from
  a batch drawn from such data (``next(iter(test_loader))``,
  ``sample_random_batch(test_dset, 8)``) or from such a name;
- it reports what it computes (``print``, a logger, a summary writer, an
  image saved);
- it calls no method of a model other than its forward (``learner.adapt``,
  ``maml.clone()``: code that may differentiate);
- it runs no training step and no gradient code, stores nothing on an
  attribute or a subscript, and nothing it writes reaches a gradient use
  later in its scope or leaves its function.

The fix: ``with torch.no_grad():`` around the statements of the block that
run the models (from the first to the last) when grad is on there and the
author set no grad mode there. A model that holds Dropout or BatchNorm (the
file shows it, ``effects.train_mode_effects``, or its class in another file
of the run builds one), in train mode (and only train mode) before the
block, whose mode the block does not set, gets ``model.eval()`` before
those statements and ``model.train()`` after them: the mode it had, so the
training after the block is unchanged. GLCIC-PyTorch's upstream fix
(4b28f35) is exactly that, around its periodic ``with torch.no_grad():``
snapshot; MorvanZhou's ``503_dropout.py``, which switches the modes
itself, is a no-op fixture.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from rnnfix.analysis.grads.gradctx import GradContexts, LocalFunctions, gradient_uses
from rnnfix.analysis.grads.valueflow import ValueFlow, written
from rnnfix.analysis.modes.comments import TRAIN_INTENTS, intent_comment
from rnnfix.analysis.modes.regions import in_training_iteration, is_eval_name
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    LOOPS,
    innermost_loop,
    scope_of,
    walk_local,
    walk_subtree,
    walk_tree,
)
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.effects import train_mode_effects
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.source.edits import AddImport, Edit, InsertStatements, WrapInWith

_REPORTS = frozenset(
    {"print", "info", "debug", "warning", "log", "add_scalar", "add_scalars", "log_metrics",
     "set_postfix", "set_description", "write", "save_image", "add_image", "add_images",
     "imsave", "imwrite", "make_grid"}
)  # fmt: skip
_EXITS = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Await)


def may_have_periodic(source: str) -> bool:
    """A necessary condition, read from text: a remainder and a training step."""
    return "%" in source and ("backward" in source or ".step(" in source)


def periodic_findings(
    ctx: FileContext,
    models: Callable[[], ModelIndex],
    fixes_itself: Callable[[ast.Call], bool] = lambda _: False,
) -> Iterator[Finding]:
    """``models``: the model index, built at the first ``if`` that passes the
    syntactic tests (most files with a ``%`` have no such block).
    ``fixes_itself``: a call of a helper of the file that is an evaluation
    region with a fix of its own (``test(model, dev_iter)`` gets
    ``@torch.no_grad()``): its forwards are covered, no second fix here."""
    index: ModelIndex | None = None
    for node in walk_tree(ctx.tree):  # ``ast.walk``'s order, shared with the other analyses
        if node.__class__ is ast.If and _candidate(ctx, node):
            if index is None:
                index = models()
            found = _judge(ctx, index, node, fixes_itself)
            if found is not None:
                yield found


def _candidate(ctx: FileContext, block: ast.If) -> bool:
    """The tests of ``_judge`` that read only the syntax and the training steps."""
    if block.orelse or not _every_n(block.test) or not block.body:
        return False
    parents = ctx.facts.parents
    loop = innermost_loop(parents, block)
    if loop is None or not in_training_iteration(ctx, block):
        return False
    if any(isinstance(n, (*_EXITS, *FUNCTIONS, ast.Lambda, ast.ClassDef, *LOOPS))
           for s in block.body for n in ast.walk(s)):  # fmt: skip
        return False
    return not any(True for s in block.body for _ in gradient_uses(ctx, s))


def _judge(
    ctx: FileContext, index: ModelIndex, block: ast.If, fixes_itself: Callable[[ast.Call], bool]
) -> Finding | None:
    """``block`` passed ``_candidate`` (it does not train or compute gradients itself)."""
    calls = {
        m: kept
        for m, cs in index.model_calls(block.body).items()
        if m not in ("self", "cls") and (kept := [c for c in cs if not fixes_itself(c)])
    }
    calls = {m: cs for m, cs in calls.items() if not any(is_prefix(p, m) and p != m for p in calls)}
    if not calls or not _on_eval_data(block, calls):
        return None
    if not _reports(block):
        return None
    if _other_model_methods(index, block):
        return None  # ``learner = maml.clone(); learner.adapt(loss)``: may need gradients
    if _stores(block):
        return None  # ``self.best = out``, ``hist[k] = out``: may reach a loss rnnfix does not see
    scope = scope_of(ctx.facts.parents, block)
    seeds = written(block.body)
    values = ValueFlow(ctx)
    if values.reaches_gradient_use(block.body, scope, seeds):
        return None
    if isinstance(scope, FUNCTIONS) and values.escapes(block.body, scope, seeds):
        return None  # returned or yielded: a caller rnnfix may not see could differentiate it
    local = LocalFunctions(ctx)
    if any(local.gradient_helper(s) for s in block.body):
        return None
    grad = GradContexts(ctx)
    flow = ctx.facts.modes
    sites = [c for cs in calls.values() for c in cs]
    # Where the author set the grad mode (``with torch.no_grad():`` around
    # the snapshot), only the mode can be missing.
    set_grad = any(grad.in_function(c) is not None for c in sites)
    need_grad = not set_grad and all(flow.grad_enabled(c) is not False for c in sites)
    evals = [m for m in calls if _needs_eval(ctx, index, block, m)]
    if not need_grad and not evals:
        return None
    return _finding(ctx, block, calls, evals, need_grad)


def _every_n(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in walk_subtree(test))


def _on_eval_data(block: ast.If, calls: dict[str, list[ast.Call]]) -> bool:
    """A forward's arguments read evaluation data: a name like ``test_x``, or
    a name the block binds from a batch drawn from evaluation data
    (``_draws_eval``), or from such a name (``x_mask = x - x * mask``)."""
    drawn: set[str] = set()
    assigns = [n for s in block.body for n in ast.walk(s) if isinstance(n, ast.Assign)]
    assigns.sort(key=lambda a: (a.lineno, a.col_offset))
    for a in assigns:
        reads_drawn = any(isinstance(n, ast.Name) and n.id in drawn for n in ast.walk(a.value))
        if reads_drawn or _draws_eval(a.value):
            drawn |= {n.id for t in a.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    for sites in calls.values():
        for call in sites:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                for n in ast.walk(arg):
                    if isinstance(n, ast.Name) and (n.id in drawn or is_eval_name(n.id)):
                        return True
                    if isinstance(n, ast.Attribute) and is_eval_name(n.attr):
                        return True
    return False


def _draws_eval(value: ast.expr) -> bool:
    """A batch drawn from evaluation data: ``next(iter(test_loader))``,
    ``next(test_iter)``, ``sample_random_batch(test_dset, 8)`` (GLCIC),
    ``val_set.sample(8)``: a call (moved at most: ``.to(gpu)``) whose
    arguments or receiver name evaluation data."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("to", "cuda", "cpu", "float")
    ):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    read: list[ast.AST] = [*value.args, *(k.value for k in value.keywords)]
    if isinstance(value.func, ast.Attribute):
        read.append(value.func.value)
    return any(
        isinstance(n, ast.Name)
        and is_eval_name(n.id)
        or isinstance(n, ast.Attribute)
        and is_eval_name(n.attr)
        for r in read
        for n in ast.walk(r)
    )


def _reports(block: ast.If) -> bool:
    for s in block.body:
        for n in ast.walk(s):
            if isinstance(n, ast.Call):
                name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
                if name in _REPORTS:
                    return True
    return False


# Methods of a model that run no code needing gradients.
_PLAIN_METHODS = frozenset(
    {"parameters", "named_parameters", "state_dict", "to", "cpu", "cuda", "float", "half",
     "double", "eval", "train", "modules", "children", "named_modules"}
)  # fmt: skip


def _other_model_methods(index: ModelIndex, block: ast.If) -> bool:
    """The block calls a method of a model that is not its forward (``clone``,
    ``adapt``, ``finetune``, ``generate``): code rnnfix does not read, which may
    differentiate (test-time adaptation, meta-learning) under a ``no_grad``."""
    for s in block.body:
        for n in ast.walk(s):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                continue
            if n.func.attr in _PLAIN_METHODS or index.called_model(n) is not None:
                continue
            base = dotted(n.func.value)
            if base is not None and any(is_prefix(m, base) for m in index.models):
                return True
    return False


def _stores(block: ast.If) -> bool:
    return any(
        isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store)
        for s in block.body
        for n in ast.walk(s)
    )


def _needs_eval(ctx: FileContext, index: ModelIndex, block: ast.If, model: str) -> bool:
    """``model`` shows Dropout or BatchNorm layers, is in train mode (only)
    before the block, takes a mode call, and the block sets no mode of it."""
    if not index.is_known_module(model):
        return False
    shown = train_mode_effects(ctx, [model]).startswith(("dropout", "BatchNorm"))
    if not shown and not _class_of_run_has_mode_layers(ctx, model):
        return False  # no mode-dependent layer shown: eval() might change nothing
    if not ctx.facts.receivers.check(model, "eval", at=block).provable:
        return False
    if intent_comment(ctx.lines, block, TRAIN_INTENTS) is not None:
        return False  # ``# keep BatchNorm batch statistics``: train mode on purpose
    flow = ctx.facts.modes
    for s in block.body:
        for n in walk_local(s):
            if isinstance(n, ast.Call) and module_mode_switch(n, lenient=True) is not None:
                recv = dotted(n.func.value) if isinstance(n.func, ast.Attribute) else None
                if recv is None or is_prefix(recv, model) or is_prefix(model, recv):
                    return False  # the author sets its mode here
    facts = flow.mode_before(block.body[0], model).facts
    return bool(facts) and all(f.mode is Mode.TRAIN and f.guard is None for f in facts)


def _finding(
    ctx: FileContext,
    block: ast.If,
    calls: dict[str, list[ast.Call]],
    evals: list[str],
    need_grad: bool,
) -> Finding:
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    names = ", ".join(f"`{m}`" for m in calls)
    where = f"Periodic evaluation inside the training loop (line {block.lineno})"
    # The statements that run the models, from the first to the last: the
    # no_grad goes around them, the eval()/train() pair before and after.
    sites = {id(c) for cs in calls.values() for c in cs}
    running = [s for s in block.body if any(id(n) in sites for n in ast.walk(s))]
    edits: list[Edit] = []
    parts: list[str] = []
    if evals:
        listed = ", ".join(f"`{m}`" for m in evals)
        parts.append(
            f"runs {listed} on evaluation data in train mode ({train_mode_effects(ctx, evals)})"
        )
        edits.append(InsertStatements(ctx.pos(running[0]), tuple(f"{m}.eval()" for m in evals)))
        edits.append(
            InsertStatements(ctx.pos(running[-1]), tuple(f"{m}.train()" for m in evals), "after")
        )
    if need_grad:
        parts.append(
            f"runs {names} on evaluation data with grad enabled, building graphs it never uses"
        )
        edits.append(WrapInWith(ctx.pos(running[0]), ctx.pos(running[-1]), f"{t}.no_grad()"))
        if torch is None:
            edits.append(AddImport("torch"))
    if evals and need_grad:
        listed = ", ".join(f"`{m}`" for m in evals)
        message = (
            f"{where} runs {names} on evaluation data with grad enabled, building graphs it "
            f"never uses, and runs {listed} in train mode ({train_mode_effects(ctx, evals)}); "
            f"call {_switches(evals)}, and run it under `{t}.no_grad()`"
        )
    elif evals:
        message = f"{where} " + parts[0] + f"; call {_switches(evals)}"
    else:
        message = f"{where} " + parts[0] + f"; run it under `{t}.no_grad()`"
    description = " and ".join(
        ([f"switch {', '.join(evals)} to eval around it"] if evals else [])
        + ([f"wrap the forward in `with {t}.no_grad():`"] if need_grad else [])
    )
    fix = Fix(tuple(edits), safe=True, description=description)
    return ctx.finding("RNF003", block, message, fix)


def _switches(evals: list[str]) -> str:
    return (
        ", ".join(f"`{m}.eval()`" for m in evals)
        + " before it and `train()` after it (the mode it had: training goes on)"
    )


def _class_of_run_has_mode_layers(ctx: FileContext, model: str) -> bool:
    """``model`` is built from a module class of another file of the run
    that builds a Dropout or BatchNorm layer, or reads ``self.training``
    (``ClassSummary.mode_layers``: GLCIC's ``CompletionNetwork`` of
    ``models.py``)."""
    view = ctx.facts.project
    info = ctx.facts.modes.models.get(model)
    if view is None or info is None or not isinstance(info.built_at, ast.Call):
        return False
    found = view.lookup_class(info.built_at.func)
    return found is not None and found.is_module and found.mode_layers
