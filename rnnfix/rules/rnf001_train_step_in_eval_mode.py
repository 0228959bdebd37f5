"""RNF001: a training step can run while a model it uses is in eval mode."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

from rnnfix.analysis.modes.condowner import owned_only_when
from rnnfix.analysis.modes.elements import Elements, loop_spelling
from rnnfix.analysis.modes.flagpaths import reaching_through_flag, set_only_when_asked
from rnnfix.analysis.modes.loadermode import loader_switches
from rnnfix.analysis.modes.modeapi import has_mode_setter, setter_call
from rnnfix.analysis.modes.modeflow import Mode, ModeFact, ModeFlow
from rnnfix.analysis.modes.placement import anchor_for, container
from rnnfix.analysis.modes.pretrained import eval_origin, unsupported
from rnnfix.analysis.modes.records import TrainingStep
from rnnfix.analysis.modes.regions import function_is_eval
from rnnfix.analysis.modes.state import ModeState, is_prefix
from rnnfix.analysis.project.summaries import FunctionSummary
from rnnfix.analysis.ruletext import STEP_REACH, call_facts
from rnnfix.analysis.syntax.names import parent_path
from rnnfix.analysis.syntax.scopes import LOOPS
from rnnfix.analysis.syntax.walks import scope_of
from rnnfix.analysis.torch.api import mode_switch
from rnnfix.rules.base import FileContext, Finding, Fix, Rule
from rnnfix.source.edits import InsertStatements, Pos, RemoveStatement

_DOCS = """\
## What it does
Finds training steps (`loss.backward()`, `optimizer.step()`, `scaler.scale(loss).backward()`,
`accelerator.backward(loss)`) that can run while a model they use is in eval mode: some
path reaches the step from `model.eval()` (or `model.train(False)`, or a helper such as
`validate(model)` that calls it) without passing `model.train()`. A model loaded with
Hugging Face `transformers`' `from_pretrained` (`AutoModelForCausalLM`, a
`BertForSequenceClassification` imported from `transformers`) starts in eval mode:
transformers calls `eval()` at the end of the load. It is fixed by default only when an
optimizer is built over that model's parameters (or a model holding it), the file calls
no `train()` on it anywhere (the author's conditional `train()` is the specification),
and nothing freezes it or a part of it (`requires_grad_(False)`, `p.requires_grad =
False`); otherwise its mode counts as unknown. When the optimizer holds the model only
under a flag of the author's (`params = chain(unet.parameters(), text_encoder.parameters())
if args.train_text_encoder else unet.parameters()`) and it is frozen only when the flag is
false (`if not args.train_text_encoder: text_encoder.requires_grad_(False)`), the fix
repeats that flag: `if args.train_text_encoder: text_encoder.train()`. Other libraries'
`from_pretrained` is not assumed to return eval mode.

## Why is this bad?
In eval mode dropout is off and BatchNorm uses (and stops updating) its running
statistics, so the model silently trains as a different network. On a GPU, an `nn.LSTM`,
`nn.GRU` or `nn.RNN` whose forward ran in eval mode cannot be backpropagated through:
cuDNN raises `RuntimeError: cudnn RNN backward can only be called in training mode`.
The usual cause is validation at the end of an epoch (or every N steps) that never
switches the model back.

## Example
```python
for epoch in range(epochs):
    for x, y in train_loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    validate(model, val_loader)
```

## Use instead
```python
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        ...
    model.eval()
    validate(model, val_loader)
```
`model.train()` goes at the head of the loop whose iterations bring eval mode back to
the step, right before the training loop or call when evaluation comes first in the same
iteration, or at the start of a training function whose callers leave the model in eval
mode. Each model the step uses gets its own `train()` (`encoder` and `decoder`); models
used only under `torch.no_grad()` (a target network) get none. A plain `model.train()`
right before the loop whose head gets the same call is moved there, not copied (it
would be redundant); one with a comment on its line stays where it is.

A method's mode switch that the call's boolean argument turns off does not
reach the step: `self.predict(x, training=True)` around `if not training:
self.model.eval()` switches nothing (an estimator's `fit` running its forward
through its own `predict`).

The eval mode may come through objects and other files: a helper of another file that
calls a method, as a statement, on the object it is given (`encode_data(model, loader)`
running `model.val_start()`) switches what that method of the object's class switches,
when the caller's file knows the class (`model = VSE(opt)`, a class of the run whose
`val_start()` calls `self.img_enc.eval()`); and an object built with the model
(`BertEvaluator(self.model, ...).get_scores()`, or `ev = Evaluator(model)` assigned once in
the file) whose method switches the attribute its constructor stored the model in switches
the model itself. When the author's own call of a method of the object put the step's
models in train mode earlier in the same function (`model.train_start()` before the loop),
and that method is provably a mode setter (it sets train mode on those models on every
path, switches nothing the step does not use, and runs no forward and no training step),
the fix repeats that call instead of one `train()` per model; called under a condition
(`if opt.reset_train: model.train_start()`), it is the author's conditional `train()`.

A `train()` in one branch of an `if` whose other branch runs the training step without one
(`if not loader: model.train(); <step>` / `else: <step over loader>`) is no condition of
the author's on the mode: the test picks a data path, and the fix goes at the head of the
loop around them.

A public training method of a plain class (`fit()` of an estimator or agent) is entered
with its object's models in any mode the class's public methods, inherited ones
included, may leave them in, when nothing in its file calls it; when its file does call
it, in the mode that what other files of the run call on an instance before it leaves
(`clf.predict(x)` then `clf.fit(loader)`, in sequence or in a loop). A `predict()` that
leaves `self.net` in eval gets `self.net.train()` at the start of `fit()`. Not when the
class has its own mode setter for that model: a public method that switches it to train
and neither calls a model nor trains (`def train(self): self.net.train()`, a
`load_checkpoint(path, evaluate)` that leaves it in train or eval as asked); its callers
choose the mode.

A backward that runs in eval mode on purpose (saliency, adversarial examples) and feeds
no optimizer step is not a training step: RNF004 covers it.

Left alone on purpose: an `eval()` whose only successor is training in the same function
and iteration (fine-tuning with frozen BatchNorm statistics, linear probing; nothing
evaluates between it and the step), a helper that saves and restores the mode
(`was = model.training; ...; model.train(was)`), target networks that no optimizer
updates (refreshed by `load_state_dict` or Polyak/EMA averaging), a model kept in
eval while another model's optimizer steps through it (RNF004 when it has an RNN),
a model frozen with `requires_grad_(False)` (or a loop or helper that sets
`p.requires_grad = False` over its parameters) that nothing unfreezes: no optimizer
step can change it, so its mode is the author's (a textual-inversion UNet, a
self-distillation teacher), an `eval()` beside a freeze of the same model, and
mode calls made per branch at a loop head (`if finetune: model.train()` /
`elif freeze: model.eval()`), and an `eval()` whose comment (on its line or right
above it) says why: BatchNorm kept frozen (`# freeze BN statistics`, Caffe's
`# use_global_stats = True`), a batch size of 1, a frozen feature model
(`# linear probing`), also when more code runs between it and the step, or when a
second `eval()` follows it; a module-level `net.eval()` followed only by wrapping
(`DataParallel`, `.cuda()`) and the optimizer before the training function is
called; and a fixed loss network: switched to eval
right after it is built, given to no optimizer of the file, and passed to a training
function that switches the other models to train itself but not it (the perceptual
loss's VGG of an SRGAN).

## Fix safety
Safe: it restores the mode the training step was written for, and does nothing when the
model already is in train mode. With `--strict`, training loops and functions whose
models' mode is *unknown* (a model received as a parameter, loaded from disk) also get
`train()`; those fixes are unsafe because nothing in the file shows the mode is wrong,
and they go only on objects the run proves are `nn.Module`s (built from a module class,
annotated as one, or switched by the file's own `train()`/`eval()` calls): never on a
plain-Python object such as a loss helper class, nor on an object whose class is unknown.

`train()` goes only on a model whose forward runs before the step, the outermost one, and
never on a module with no parameters and no mode-dependent layers (`nn.Softmax()`,
`nn.ReLU()`, `nn.CrossEntropyLoss()`, a parameter-free loss or metric class): its mode
changes nothing.

Reported but **not fixed**, because the author's code says a whole-model `train()`
would be wrong (issue 27: an edit needs evidence of a bug): `model.eval()`
followed by `train()` on parts of it (`model.module.layer4.train()`: a freezing
scheme); a model that is `None` on some path (`text_encoder = None`: the call
would raise); the author's own `train()` of the model under a condition (`if
args.train_text_encoder: text_encoder.train()`: an unconditional one would undo the
choice); a `train()` that would land right after the `eval()` it undoes; a
helper whose training step runs only under a flag of its own (`if train:
loss.backward()`): its callers evaluate through it too; a model that a loader of
the file hands back in eval mode (`model = load_test_model(path)`, whose body ends
`model.eval(); return model`): eval may be what it was loaded for; and a step whose
forward runs inside a call that switched the model to eval first
(`self.predict(x)` with `if not training: self.model.eval()`): a `train()` right
before `loss.backward()` would come after that forward, too late. Under `--strict` these get
no finding, and neither does a model whose class has its own mode setter
(`def train(self, training=True)`). The message says what rnnfix saw.

Also reported but **not fixed**: a model whose class (of this file or another file of the
run), one of its bases, one of its submodules' classes or, for a `DataParallel`/DDP
wrapper, the wrapped class overrides `train` in a form the inserted call cannot go
through: `def train(self):` without `mode` (`Module.train()` calls `child.train(mode)`
on every child, and a wrapper's `train()` calls `module.train(mode)`: `TypeError`), a
`train(self, data, epochs)` that is a training loop, or a body that never calls
`super().train(mode)` nor sets `self.training` (the call would change nothing, or run
something else). The finding names the class, the file and the line. Overrides that
accept the mode (`def train(self, mode=True): super().train(mode); ...`) are fine. Under
`--strict`, where the mode is only unknown, such a model gets no finding at all.
"""


@dataclass
class _Group:
    anchor: ast.stmt | None
    safe: bool
    steps: list[TrainingStep] = field(default_factory=list)
    models: dict[str, list[ModeFact]] = field(default_factory=dict)
    blocked: str | None = None  # why no ``train()`` may be inserted (an override)
    # ``if <condition>: model.train()``: the author's condition of the
    # optimizer's ownership (``condowner``), for the models that have one
    conditions: dict[str, ast.expr] = field(default_factory=dict)


class TrainStepInEvalMode(Rule):
    code = "RNF001"
    name = "train-step-in-eval-mode"
    summary = "A training step can run while a model it uses is in eval mode"
    docs = _DOCS
    fix_safety = "safe"

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not may_apply(ctx):
            return
        strict = ctx.settings.strict
        flow = ctx.facts.modes
        receivers = ctx.facts.receivers
        groups: dict[tuple[int, int, int, bool], _Group] = {}
        for step in flow.training_steps:
            if not step.feeds_optimizer_step:
                continue  # a backward meant for eval mode: RNF004's business
            for model in _outermost(flow, step):
                if not _step_may_update(ctx, flow, step, model):
                    continue  # e.g. an actor update through an eval-mode critic (RNF004)
                receiver = receivers.check(model, "train", at=step.node)
                if receiver.kind in ("stateless", "not_module"):
                    continue  # a loss, an activation, a plain object: its mode is not the bug
                if flow.is_target_network(model, step.function):
                    continue  # refreshed by copy/Polyak/EMA: kept in eval on purpose
                before = flow.mode_before(step.node, model)
                # ``params = chain(unet..., text_encoder...) if c else unet...``
                condition = _owner_condition(flow, step, model, before)
                if condition is None and flow.freezing.frozen(flow.canonical(model, step.function)):
                    continue  # ``requires_grad_(False)``: no optimizer changes it
                state = _judge_pretrained(flow, step, model, before, condition is not None)
                anchor = None  # the head of the loop/function, unless a case says otherwise
                # Frozen-BatchNorm fine-tuning: an eval() whose only successor
                # is training is the author's choice, even with --strict.
                facts = [
                    f
                    for f in state.facts
                    if f.mode is Mode.EVAL
                    and not flow.deliberate_eval(f, step.node, model)
                    and not set_only_when_asked(flow, f)
                ]
                if facts:
                    # ``test(): model.eval(); iteration(train=False)``: the
                    # eval mode of a call that passes the step's flag False
                    # never reaches the step.
                    facts = reaching_through_flag(
                        flow, step, model, facts, partial(_called_elsewhere, ctx, step)
                    )
                intent: str | None = None  # why the author's code says not to edit
                if facts:
                    if step.kind == "backward" and _trains_before_stepping(flow, step, model):
                        continue
                    safe = True
                    intent = _partial_modes(ctx, flow, step, model, facts) or _loader_eval(
                        ctx, flow, facts
                    )
                elif state.may_eval:
                    continue
                elif step.kind == "backward" and (late := _late_train(flow, step, model)):
                    # ``y = model(x); model.train(); loss.backward()``: the graph was
                    # recorded in eval mode; train() has to come before the forward.
                    forward, facts = late
                    anchor = anchor_for(
                        facts[0].origin, forward, step.function, ctx.tree, flow.parents, [forward]
                    )
                    safe = True
                elif strict and state.unknown and state.facts and receiver.provable:
                    # A guess about the mode: only on an object the run proves
                    # is an ``nn.Module`` (never ``trainer.dispatch``, a loss helper).
                    facts = [f for f in state.facts if f.mode is Mode.UNKNOWN]
                    safe = False
                    if any(mode_switch(f.origin) is not None for f in facts):
                        continue  # the author's ``train(not cfg.fix_bn)``: the mode asked for
                    if flow.freezing.layer_scheme(model) is not None:
                        continue  # ``model.apply(set_bn_eval)``: a guess would unfreeze it
                    if flow.freezing.none_default(model, step.function):
                        continue  # ``loss_fct=None``: maybe no object at all, never a guess
                    if step.function is not None and has_mode_setter(
                        flow, step.function, model, Mode.TRAIN
                    ):
                        continue  # the class's own ``def train(self, training)``: callers choose
                else:
                    continue
                if anchor is None:
                    anchor = _choose_anchor(ctx, flow, step, facts, model)
                if intent is None:
                    intent = _author_spec(ctx, flow, step, model, facts, anchor)
                if intent is not None and not safe:
                    continue  # only a guess about the mode, and the author's code says no
                blocked = receiver.reason if receiver.override else intent
                _add(groups, ctx, anchor, step, model, facts, safe, blocked, condition)
        for group in groups.values():
            yield _finding(ctx, flow, group)


def _loader_eval(ctx: FileContext, flow: ModeFlow, facts: list[ModeFact]) -> str | None:
    """Every eval fact comes from a loader of the file that returns the
    model in eval mode (``model = load_test_model(path)``, ``loadermode``):
    training it is a bug, unless what it was loaded for is frozen BatchNorm
    fine-tuning; a person decides, so the finding says so and is not fixed."""
    loaders: list[ast.Assign] = []
    for fact in facts:
        origin = fact.origin
        if not isinstance(origin, ast.Assign) or not loader_switches(flow, origin.value):
            return None
        loaders.append(origin)
    if not loaders:
        return None
    first = loaders[0]
    return (
        f"`{ctx.segment(first.value)}` on line {first.lineno} hands it back in eval mode, "
        "which may be what it was loaded for (frozen BatchNorm); add the `train()` "
        "where it should train"
    )


def _called_elsewhere(ctx: FileContext, step: TrainingStep) -> bool:
    from rnnfix.analysis.project.index import called_from_other_files

    fn = step.function
    return fn is not None and called_from_other_files(ctx, fn.name)


def _owner_condition(
    flow: ModeFlow, step: TrainingStep, model: str, state: ModeState
) -> ast.expr | None:
    """The author's condition of the optimizer's ownership of ``model``
    (``condowner``), for a model a transformers load left in eval: the
    evidence for ``if <condition>: model.train()``."""
    if not any(eval_origin(f, flow.imports) is not None for f in state.facts):
        return None
    return owned_only_when(flow, step, model)


def _judge_pretrained(
    flow: ModeFlow, step: TrainingStep, model: str, state: ModeState, conditional: bool
) -> ModeState:
    """The eval mode a transformers ``from_pretrained`` left ``model`` in is a
    bug only with the evidence ``pretrained.unsupported`` asks for; without it
    the mode counts as unknown (``--strict``'s business), as it did before
    rnnfix knew that load's mode. ``conditional``: the optimizer holds the
    model under the author's condition, and freezes are on the other side of
    it (``condowner``): that is the ownership and freezing evidence."""
    imports = flow.imports
    loaded = [f for f in state.facts if eval_origin(f, imports) is not None]
    if not loaded or not unsupported(flow, step, model, state.may_train, conditional):
        return state
    unknown = {ModeFact(Mode.UNKNOWN, f.origin, f.cause, f.guard) for f in loaded}
    return ModeState(frozenset((state.facts - set(loaded)) | unknown))


def _add(
    groups: dict[tuple[int, int, int, bool], _Group],
    ctx: FileContext,
    anchor: ast.stmt | None,
    step: TrainingStep,
    model: str,
    facts: list[ModeFact],
    safe: bool,
    blocked: str | None,
    condition: ast.expr | None = None,
) -> None:
    if anchor is not None and not _anchorable(ctx, anchor):
        anchor = None
    # A model whose fix is blocked gets its own finding: it must not hold back
    # the fix of another model at the same step.
    kind = 0 if blocked is None else 2
    key = (
        (anchor.lineno, anchor.col_offset, kind, safe)
        if anchor is not None
        else (step.node.lineno, step.node.col_offset, kind + 1, safe)
    )
    group = groups.setdefault(key, _Group(anchor, safe))
    if step not in group.steps:
        group.steps.append(step)
    group.models.setdefault(model, []).extend(facts)
    if condition is not None:
        group.conditions[model] = condition
    if blocked is not None and group.blocked is None:
        group.blocked = blocked  # an override of ``train`` the call cannot go through


def _partial_modes(
    ctx: FileContext, flow: ModeFlow, step: TrainingStep, model: str, facts: list[ModeFact]
) -> str | None:
    """``model.eval()`` then ``model.module.layer4.train()`` in the step's
    function: the parts that train are chosen, the rest is frozen on purpose.
    Whatever else leaves the model in eval (a validation helper), a
    whole-model ``train()`` would unfreeze what the author froze."""
    origins = [f.origin for f in facts if mode_switch(f.origin) is not None]
    origins += [
        c.node
        for c in flow.mode_calls
        if c.function is step.function and c.mode is Mode.EVAL and c.model == model
    ]
    scheme = flow.freezing.layer_scheme(model)
    if scheme is not None:
        return (
            f"`{_snippet(ctx, scheme)}` on line {getattr(scheme, 'lineno', '?')} puts some "
            f"layers of `{model}` in eval (BatchNorm frozen on purpose): a whole-model "
            "`train()` would undo it"
        )
    for origin in origins:
        part = flow.freezing.partial_train_after(origin, step.node, model)
        if part is not None:
            return (
                f"`{_snippet(ctx, origin)}` on line {getattr(origin, 'lineno', '?')} "
                f"is followed by training of `{_snippet(ctx, _receiver(part))}` only (line "
                f"{part.lineno}): a freezing scheme"
            )
    return None


def _receiver(call: ast.Call) -> ast.AST:
    return call.func.value if isinstance(call.func, ast.Attribute) else call


def _author_spec(
    ctx: FileContext,
    flow: ModeFlow,
    step: TrainingStep,
    model: str,
    facts: list[ModeFact],
    anchor: ast.stmt | None,
) -> str | None:
    """The author's own code says the inserted ``train()`` would be wrong: the
    model is ``None`` on some path, the author's ``train()`` of it runs under
    a condition, or the call would land right after the ``eval()`` it undoes."""
    freezing = flow.freezing
    none = freezing.may_be_none(model, step.function)
    if none is not None:
        return (
            f"`{model}` is `None` on the path through line {none.lineno}, where "
            "`train()` would raise AttributeError"
        )
    cond = freezing.conditional_train(model, step.function, step.node)
    if cond is not None:
        return (
            f"the author's `{_snippet(ctx, cond)}` on line {cond.lineno} runs under a "
            "condition; an unconditional `train()` would undo that choice"
        )
    shared = _shared_helper(ctx, flow, step, facts)
    if shared is not None:
        return shared
    if anchor is not None:
        block = container(anchor, flow.parents)
        index = next((k for k, s in enumerate(block or []) if s is anchor), 0)
        before = block[index - 1] if block and index > 0 else None
        for fact in facts:
            # the author's own ``model.eval()`` (not an evaluating helper's)
            if (
                before is not None
                and mode_switch(fact.origin) is not None
                and flow.stmt_of(fact.origin) is before
            ):
                return (
                    f"`{_snippet(ctx, fact.origin)}` on line {before.lineno} is the statement "
                    "right before: a `train()` there would undo it, so it is deliberate"
                )
    return None


def _shared_helper(
    ctx: FileContext, flow: ModeFlow, step: TrainingStep, facts: list[ModeFact]
) -> str | None:
    """``def run_epoch(model, loader, train): ... if train: loss.backward()``
    entered in eval mode by its callers: a helper of both the training and
    the evaluation path (its flag says which). A ``train()`` at its start
    would put the evaluation in train mode too."""
    fn = step.function
    if fn is None or not facts or any(f.origin is not fn for f in facts):
        return None
    info = flow.function_info(fn)
    if info is None:
        return None
    params = {*info.params, *info.kwonly}
    if info.is_method and info.params:
        # ``if self.args.fp16:`` reads the object's configuration, not a flag
        # each caller passes: the same for the training and any other caller.
        params.discard(info.params[0])
    node: ast.AST | None = flow.parents.get(step.node)
    while node is not None and node is not fn:
        if isinstance(node, (ast.If, ast.IfExp)):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if names & params:
                return (
                    f"`{fn.name}` runs this step only under `if {_snippet(ctx, node.test)}:` "
                    f"(line {node.lineno}): its callers evaluate through it too, and a "
                    "`train()` at its start would put their evaluation in train mode"
                )
        node = flow.parents.get(node)
    return None


def _late_train(
    flow: ModeFlow, step: TrainingStep, model: str
) -> tuple[ast.Call, list[ModeFact]] | None:
    """A forward of ``model`` that feeds backward ``step`` in eval mode, with
    ``model.train()`` only between that forward and the backward."""
    step_pos = (step.node.lineno, step.node.col_offset)
    loops = step.loops
    region: ast.AST | None = loops[-1] if loops else step.function
    earlier = [
        (s.node.lineno, s.node.col_offset)
        for s in flow.training_steps
        if s.function is step.function and (s.node.lineno, s.node.col_offset) < step_pos
    ]
    after = max(earlier, default=(0, 0))
    inside = flow.contains(region) if region is not None else (lambda _n: True)
    trains = [
        (c.node.lineno, c.node.col_offset)
        for c in flow.mode_calls
        if c.function is step.function and c.mode is Mode.TRAIN and is_prefix(c.model, model)
    ]
    for call in flow.model_calls:
        pos = (call.node.lineno, call.node.col_offset)
        if (
            call.function is not step.function
            or call.via is not None
            or call.grad_enabled is False
            or not _related(call.model, model)
            or not (after < pos < step_pos)
            or not inside(call.node)
            or not any(pos < t < step_pos for t in trains)
        ):
            continue
        state = flow.mode_before(call.node, model)
        facts = [
            f
            for f in state.facts
            if f.mode is Mode.EVAL and not flow.deliberate_eval(f, call.node, model)
        ]
        if facts:
            return call.node, facts
    return None


def eval_text(src: str, strict: bool) -> bool:
    """The text of an eval mode this file may set itself: a mode call
    (``.eval(``, ``train(False``, ``mode=False``), with ``--strict`` an
    unknown mode (``.backward(``/``.step(``), or a ``from_pretrained`` of
    ``transformers`` (``pretrained``: it returns eval models). Shared with
    the file gate (``rnnfix.run.filegate``), which must never rule out a
    file this rule may report in."""
    return (
        (".eval(" in src or "train(False" in src or "mode=False" in src)
        or (strict and (".backward(" in src or ".step(" in src))
        or (".from_pretrained(" in src and "transformers" in src)
    )


def may_apply(ctx: FileContext) -> bool:
    """A necessary condition for a finding, cheap tests first. Every finding
    is a training step that feeds an optimizer step (``feeds_optimizer_step``
    of one of ``ModeFlow.training_steps``), which is one of

    - an optimizer step of this file: ``X.step(...)`` (``step_kind``), or a
      call without arguments of an optimizer built from ``parameters()``
      (``_callable_optimizer``): ``CallFacts.step_call``/``callable_optimizer``;
    - a backward (``X.backward()``, ``torch.autograd.backward``) fed to an
      optimizer step that only a function of another file of the run runs
      (``_feeds_step`` through ``callee_summary``), or a call of a function of
      another file that trains the models it is given (a step of kind
      ``"call"``): ``ProjectView.reaches`` with ``Summary.optimizer_step``
      (after a backward of this file) or ``FunctionSummary.trains``, for the
      names the file calls (``ModeFlow.external`` looks up only calls);

    and an eval mode that can reach it: the text this rule has always asked
    for (``.eval(``, ``train(False``, ``mode=False``; with ``--strict``, an
    unknown mode, ``.backward(``/``.step(``; a ``.from_pretrained(`` of
    ``transformers``, ``pretrained.transformers_load``), or a helper of another file of
    the run that may call ``eval()`` (``_imports_eval``)."""
    src = ctx.source
    eval_here = eval_text(src, ctx.settings.strict)
    # a helper of another file of the run may call ``eval()``
    if not eval_here and (ctx.project is None or not _imports_eval(ctx)):
        return False
    # ``.step``, ``parameters()``/``torch.optim`` (a callable optimizer) and
    # ``backward`` are written wherever the syntax below can find them.
    backward = False
    if any(k in src for k in ("step", "parameters", "optim", "backward")):
        calls = call_facts(ctx.tree, ctx.facts.imports)
        if calls.step_call or calls.callable_optimizer:
            return True
        backward = calls.backward_call
    view = ctx.facts.project
    if view is None:
        return False
    test = _runs_optimizer_step if backward else _trains
    return view.reaches(test, STEP_REACH, src, called=True)


def _runs_optimizer_step(f: FunctionSummary) -> bool:
    return f.summary.optimizer_step


def _trains(f: FunctionSummary) -> bool:
    return f.trains


def _imports_eval(ctx: FileContext) -> bool:
    """A helper of another file of the run may call ``eval()``, and a training
    step runs here or in a function of the run this file calls."""
    view = ctx.facts.project
    if view is None or not view.imports_eval():
        return False
    src = ctx.source
    return ".backward(" in src or ".step(" in src or view.imports_training()


def _choose_anchor(
    ctx: FileContext, flow: ModeFlow, step: TrainingStep, facts: list[ModeFact], model: str
) -> ast.stmt | None:
    forwards = [
        c.node
        for c in flow.model_calls
        # Forwards under no_grad (acting, targets) do not feed the step.
        if c.function is step.function
        and c.grad_enabled is not False
        and _related(c.model, model)
        # Nor does the forward of an evaluation helper (``print(evaluate(model,
        # val))`` after ``model.eval()``): train() goes after that call, never
        # between the eval() and the evaluation it was set for.
        and not _evaluation_helper(ctx, c.via)
    ]
    anchors: list[ast.stmt] = []
    for fact in facts:
        anchor = anchor_for(fact.origin, step.node, step.function, ctx.tree, flow.parents, forwards)
        if anchor is None:
            return None
        anchors.append(anchor)
    if not anchors:
        return None
    # The latest candidate is the closest to the step; the re-check after
    # fixing completes the rare case where it does not cover every origin.
    chosen = max(anchors, key=lambda s: (s.lineno, s.col_offset))
    if (
        step.kind != "call"
        and not isinstance(chosen, _COMPOUND)
        and _holds(chosen, step.node)
        and not any(_holds(chosen, f) for f in forwards)
    ):
        # Right before ``loss.backward()``/``optimizer.step()`` itself, with no
        # forward of the model in that statement: the forward ran already
        # (inside a call rnnfix does not read as one, ``self.predict(x)``),
        # so a ``train()`` there is too late to change what the graph
        # recorded; reported without a fix.
        return None
    return chosen


_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


def _holds(stmt: ast.stmt, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(stmt))


def _evaluation_helper(ctx: FileContext, via: ast.AST | None) -> bool:
    return isinstance(via, (ast.FunctionDef, ast.AsyncFunctionDef)) and function_is_eval(ctx, via)


def _outermost(flow: ModeFlow, step: TrainingStep) -> list[str]:
    """The step's models, each replaced by its outermost enclosing model that
    may be in eval mode too: ``model.train()`` rather than one ``train()`` per
    submodule when ``model.generate()`` left all of ``model`` in eval."""
    out: list[str] = []
    for model in step.models:
        parts = model.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix == model or (
                prefix in flow.models and flow.mode_before(step.node, prefix).may_eval
            ):
                break
        if prefix not in out:
            out.append(prefix)
    return out


def _related(a: str, b: str) -> bool:
    """One path is the other or lies below it (``model``, ``model.encoder``)."""
    return is_prefix(a, b) or is_prefix(b, a)


def _anchorable(ctx: FileContext, stmt: ast.stmt) -> bool:
    """Only a statement that starts its own line can get a statement inserted
    before it (not ``for x in y: step()`` nor the second half of ``a; b``)."""
    pos = ctx.pos(stmt)
    line = ctx.lines[pos.line - 1] if pos.line - 1 < len(ctx.lines) else ""
    decorators = getattr(stmt, "decorator_list", None)
    return not line[: pos.col].strip() and not decorators


def _step_may_update(ctx: FileContext, flow: ModeFlow, step: TrainingStep, model: str) -> bool:
    """Whether the optimizer step this training step feeds may update ``model``.
    An optimizer built only from other models' parameters (an actor's, while a
    frozen critic in eval mode scores its actions) does not make the critic's
    forward a training forward."""
    if step.kind == "call":
        return True  # the optimizer is in another file: assume it updates the model
    if step.kind == "optimizer_step":
        optimizer_steps = [step.node]
    else:
        start = (step.node.lineno, step.node.col_offset)
        optimizer_steps = [
            s.node
            for s in flow.training_steps
            if s.kind == "optimizer_step"
            and s.function is step.function
            and (s.node.lineno, s.node.col_offset) > start
        ]
        if step.loops:
            # The steps of the backward's own loop, when it has some: a later
            # phase's optimizer (another loop) does not step this gradient.
            inside = flow.contains(step.loops[-1])
            own = [n for n in optimizer_steps if inside(n)]
            optimizer_steps = own or optimizer_steps
    if not optimizer_steps:
        return True  # the step is somewhere we cannot see: assume it may
    evalgrad = ctx.facts.evalgrad
    for node in optimizer_steps:
        known = flow.step_may_update(node, model)
        if known is None:
            known = not isinstance(node.func, ast.Attribute) or evalgrad.step_may_update(
                node, model
            )
        if known:
            return True
    return False


def _trains_before_stepping(flow: ModeFlow, step: TrainingStep, model: str) -> bool:
    """``model.eval(); ...; loss.backward(); model.train(); optimizer.step()``:
    the eval-mode backward is deliberate (an adversarial example, a
    regulariser), so it is not RNF001's to change."""
    start = (step.node.lineno, step.node.col_offset)
    later_steps = [
        (s.node.lineno, s.node.col_offset)
        for s in flow.training_steps
        if s.function is step.function
        and s.kind == "optimizer_step"
        and (s.node.lineno, s.node.col_offset) > start
    ]
    if not later_steps:
        return False
    end = min(later_steps)
    return any(
        c.function is step.function
        and c.model == model
        and c.mode is Mode.TRAIN
        and start < (c.node.lineno, c.node.col_offset) < end
        for c in flow.mode_calls
    )


def _finding(ctx: FileContext, flow: ModeFlow, group: _Group) -> Finding:
    step = min(group.steps, key=lambda s: (s.node.lineno, s.node.col_offset))
    models = list(group.models)
    names = _join_names(models)
    facts = sorted(
        (f for m in models for f in group.models[m]),
        key=lambda f: (
            getattr(f.origin, "lineno", 0),
            getattr(f.origin, "col_offset", 0),
            getattr(f.cause, "lineno", 0),
            getattr(f.cause, "col_offset", 0),
        ),
    )
    if group.safe:
        message = (
            f"{names} may be in eval mode at this training step "
            f"(set by {_describe(ctx, facts[0])}); {_consequence(flow, models)}"
        )
    else:
        message = (
            f"the mode of {names} is unknown at this training step "
            f"({_describe_unknown(ctx, facts[0])}); nothing shows it is in train mode"
        )
    for model, condition in group.conditions.items():
        message += (
            f"; the optimizer holds `{model}`'s parameters only when "
            f"`{ast.unparse(condition)}`, so its `train()` runs under that condition"
        )
    fix = None
    if group.blocked is not None:
        message += f"; not fixed: {group.blocked}"
    elif group.anchor is not None:
        loop = _author_loop(ctx, flow, group, facts)
        setter = _author_setter(ctx, flow, group, step) if loop is None else None
        whole = _switched_whole(ctx, flow, group, step) if loop is setter is None else None
        held = [m for m in models if (info := flow.models.get(m)) and info.container]
        if loop is setter is whole is None and held:
            # A dict or list of modules has no ``train()``: only the author's
            # own loop over it could be repeated, and there is none to copy.
            message += (
                f"; not fixed: `{held[0]}` is a container of modules, and no loop of the "
                "author's over it can be repeated"
            )
            return ctx.finding("RNF001", step.node, message, None)
        if loop is not None:
            code: tuple[str, ...] = (loop,)
        elif setter is not None:
            code = (setter,)
        elif whole is not None:
            code = (f"{flow.spelling(whole, group.anchor)}.train()",)
        else:
            code = tuple(_train_code(ctx, flow, group, m) for m in models)
        where = _where(flow, group.anchor)
        moved = _superseded_trains(ctx, flow, group.anchor, code)
        description = f"Insert {_join_names([' '.join(c.split()) for c in code])} {where}"
        if moved:
            description += " (moved from right before the loop)"
        fix = Fix(
            edits=(
                InsertStatements(anchor=_pos(ctx, group.anchor), code=code, where="before"),
                *(RemoveStatement(_pos(ctx, s)) for s in moved),
            ),
            safe=group.safe,
            description=description,
        )
    return ctx.finding("RNF001", step.node, message, fix)


def _switched_whole(
    ctx: FileContext, flow: ModeFlow, group: _Group, step: TrainingStep
) -> str | None:
    """The module whose own ``eval()`` put every model of the group in eval
    (``self.eval()`` in a sampling method, the step then running
    ``self.encoder`` and ``self.decoder``): its ``train()`` undoes exactly
    the author's call. Only when each model's mode at the step is the
    module's (nothing switched a part of it on its own: no partial modes),
    and a fix may call ``train()`` on it."""
    models = list(group.models)
    if group.conditions or group.anchor is None or len(models) < 2:
        return None
    whole: str | None = models[0]
    while whole is not None and not all(is_prefix(whole, m) and m != whole for m in models):
        whole = parent_path(whole)
    if whole is None:
        return None
    facts = flow.mode_before(step.node, whole).facts
    if not facts or any(flow.mode_before(step.node, m).facts != facts for m in models):
        return None
    if any(c.model != whole and is_prefix(whole, c.model) for c in flow.mode_calls):
        return None  # a part of it is switched on its own somewhere: partial modes
    check = ctx.facts.receivers.check(whole, "train", at=group.anchor)
    return whole if check.provable else None


def _author_setter(
    ctx: FileContext, flow: ModeFlow, group: _Group, step: TrainingStep
) -> str | None:
    """``model.train_start()`` when the author's own call of that method,
    earlier in the step's function, is what put every model of the group in
    train mode, and the method is provably a mode setter: it sets train mode
    on each of them on every path, switches nothing the step does not use,
    and neither runs a forward nor trains (``modeapi``'s evidence, read from
    its summary). Repeating the author's setter keeps whatever else the
    class does with it (a ``set_mode`` flag, a wrapped module's own API)."""
    if group.conditions or group.anchor is None:
        return None
    scope = step.function
    origins: dict[int, ast.AST] = {}
    for model in group.models:
        trains = [
            f.origin for f in flow.mode_before(step.node, model).facts if f.mode is Mode.TRAIN
        ]
        if len(trains) != 1:
            return None
        origins[id(trains[0])] = trains[0]
    if len(origins) != 1:
        return None
    (origin,) = origins.values()
    if (
        flow.scope_of(origin) is not scope
        or not isinstance(flow.parents.get(origin), ast.Expr)
        or (getattr(origin, "lineno", 0), getattr(origin, "col_offset", 0))
        >= (group.anchor.lineno, group.anchor.col_offset)
    ):
        return None
    switched = setter_call(flow, origin, scope)
    if switched is None:
        return None
    used = {flow.canonical(m, scope) for m in step.models}
    wanted = {flow.canonical(m, scope) for m in group.models}
    if not wanted <= set(switched) <= used or set(switched.values()) != {Mode.TRAIN}:
        return None
    return ctx.segment(origin)


def _author_loop(
    ctx: FileContext, flow: ModeFlow, group: _Group, facts: list[ModeFact]
) -> str | None:
    """``for m in models:\n    m.train()`` when every eval of the group comes
    from the author's own loop over exactly these models (``for m in models:
    m.eval()``): the fix is written the way the code writes its mode calls."""
    if group.conditions or not facts or group.anchor is None:
        return None
    origins = {id(f.origin): f.origin for f in facts}
    if len(origins) != 1:
        return None
    (switch,) = origins.values()
    scope = scope_of(flow.parents, group.anchor)
    elements = Elements(ctx.tree, flow.parents)
    found = loop_spelling(
        elements, switch, set(group.models), ctx.source, scope, lambda m: _container_kind(flow, m)
    )
    return found.format(method="train") if found is not None else None


def _container_kind(flow: ModeFlow, model: str) -> str | None:
    info = flow.models.get(model)
    return info.container if info is not None else None


def _superseded_trains(
    ctx: FileContext, flow: ModeFlow, anchor: ast.stmt, code: tuple[str, ...]
) -> list[ast.stmt]:
    """The ``model.train()`` statements right before the loop whose head the
    fix puts the same calls at: with ``train()`` at the head of every
    iteration they would be redundant, so the fix moves them there instead of
    copying them. Only plain statements alone on their line, without a
    comment, each one of the inserted calls."""
    loop = flow.parents.get(anchor)
    if not isinstance(loop, LOOPS) or not loop.body or loop.body[0] is not anchor:
        return []
    block = container(loop, flow.parents)
    if block is None:
        return []
    index = next(i for i, s in enumerate(block) if s is loop)
    wanted = {c for c in code if "\n" not in c}
    out: list[ast.stmt] = []
    for stmt in reversed(block[:index]):
        text = ctx.segment(stmt) if isinstance(stmt, ast.Expr) else None
        line = ctx.lines[stmt.lineno - 1] if stmt.lineno - 1 < len(ctx.lines) else ""
        if (
            text is None
            or text not in wanted
            or stmt.end_lineno != stmt.lineno
            or line.strip() != text
        ):
            break
        wanted.discard(text)
        out.append(stmt)
    return out


def _train_code(ctx: FileContext, flow: ModeFlow, group: _Group, model: str) -> str:
    """``model.train()``, or under the author's condition of the optimizer's
    ownership: ``if args.train_text_encoder:\\n    text_encoder.train()``."""
    assert group.anchor is not None
    call = f"{flow.spelling(model, group.anchor)}.train()"
    condition = group.conditions.get(model)
    if condition is None:
        return call
    return f"if {ast.unparse(condition)}:\n    {call}"


def _pos(ctx: FileContext, stmt: ast.stmt) -> Pos:
    return ctx.pos(stmt)


def _where(flow: ModeFlow, anchor: ast.stmt) -> str:
    """Where the inserted line goes, as the diff will show it."""
    parent = flow.parents.get(anchor)
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and _first(parent) is anchor:
        return f"at the start of `{parent.name}`"
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)) and parent.body[0] is anchor:
        return f"at the head of the loop on line {parent.lineno}"
    if isinstance(anchor, (ast.For, ast.AsyncFor, ast.While)):
        return f"before the loop on line {anchor.lineno}"
    return f"before line {anchor.lineno}"


def _first(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
    """The first statement of ``fn`` after its docstring."""
    body = fn.body
    docstring = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    return body[1] if docstring and len(body) > 1 else body[0]


def _join_names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _snippet(ctx: FileContext, node: ast.AST) -> str:
    # The first line only: ``ast.get_source_segment`` re-splits the whole file.
    start, end = ctx.pos(node), ctx.end_pos(node)
    line = ctx.lines[start.line - 1] if start.line - 1 < len(ctx.lines) else ""
    text = line[start.col : end.col] if end.line == start.line else line[start.col :]
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(ctx: FileContext, fact: ModeFact) -> str:
    origin = fact.origin
    if isinstance(origin, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cause = fact.cause
        if isinstance(cause, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(
            ctx.facts.parents.get(cause), ast.ClassDef
        ):
            # Another method of the class (object state): it leaves the mode
            # before this one runs (``playtrain`` calling ``val_epoch``).
            return (
                f"`{cause.name}` (line {cause.lineno}), a method of the same object, "
                f"before `{origin.name}` is called"
            )
        if fact.cause is not None and isinstance(ctx.facts.parents.get(fact.cause), ast.ClassDef):
            # A base class of another file of the run (object state).
            return (
                f"a method inherited from `{_snippet(ctx, fact.cause)}` (line "
                f"{getattr(fact.cause, 'lineno', '?')}) before `{origin.name}` is called"
            )
        if fact.cause is not None and hasattr(fact.cause, "lineno"):
            return (
                f"`{_snippet(ctx, fact.cause)}` on line {fact.cause.lineno} "
                f"before `{origin.name}` is called{_pretrained_note(ctx, fact)}"
            )
        return f"a caller of `{origin.name}`"
    line = getattr(origin, "lineno", "?")
    return f"`{_snippet(ctx, origin)}` on line {line}{_pretrained_note(ctx, fact)}"


def _pretrained_note(ctx: FileContext, fact: ModeFact) -> str:
    if eval_origin(fact, ctx.facts.imports) is None:
        return ""
    return ": transformers' `from_pretrained` returns the model in eval mode"


def _describe_unknown(ctx: FileContext, fact: ModeFact) -> str:
    origin = fact.origin
    if isinstance(origin, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"as `{origin.name}` receives it"
    if isinstance(origin, ast.Module):
        return "never set in this file"
    if isinstance(origin, (ast.Assign, ast.AnnAssign)) and origin.value is not None:
        return f"it comes from `{_snippet(ctx, origin.value)}` on line {origin.lineno}"
    return f"set by `{_snippet(ctx, origin)}` on line {getattr(origin, 'lineno', '?')}"


def _consequence(flow: ModeFlow, models: list[str]) -> str:
    infos = [flow.model_info(m) for m in models]
    rnn = [info.has_rnn if info is not None else None for info in infos]
    base = "training then runs with dropout off and BatchNorm frozen"
    if any(r is True for r in rnn):
        return base + ", and on CUDA the cuDNN RNN backward fails"
    if all(r is False for r in rnn):
        return base
    return base + " (on CUDA an LSTM/GRU/RNN in it fails in backward)"
