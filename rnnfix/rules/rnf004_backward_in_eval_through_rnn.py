"""RNF004: a gradient computed on purpose through an eval-mode cuDNN RNN."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Literal

from rnnfix.analysis.evalgrad.across_calls import regions_across_calls
from rnnfix.analysis.evalgrad.in_scope import EvalBackward, EvalGradAnalysis, global_cudnn_off, key
from rnnfix.analysis.evalgrad.trainworkaround import TrainForGradient, train_for_gradient
from rnnfix.analysis.modes.receivers import Method
from rnnfix.analysis.project.summaries import FunctionSummary
from rnnfix.analysis.project.summarise import summarise
from rnnfix.analysis.ruletext import (
    EVAL_REACH,
    call_facts,
    may_switch_cudnn_off,
    may_switch_mode,
)
from rnnfix.analysis.syntax.names import is_below
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.rnns import RnnSpec
from rnnfix.rules.base import FileContext, Finding, Fix, Rule
from rnnfix.source.edits import AddImport, Edit, InsertStatements, ReplaceExpression, WrapInWith

_ERROR = '"cudnn RNN backward can only be called in training mode"'


class BackwardInEvalThroughRnn(Rule):
    code = "RNF004"
    name = "backward-in-eval-through-rnn"
    summary = "Gradient through an eval-mode LSTM/GRU/RNN (fails on cuDNN), or train() to dodge it"
    fix_safety = "opt-in"
    docs = """
## What it does
Finds a gradient computed on purpose while a model is in eval mode —
`backward()`, `torch.autograd.grad(...)` or a captum gradient attribution
(`Saliency(model).attribute(x)`, `IntegratedGradients`, `DeepLift`,
`GradientShap`, `InputXGradient`, `LayerIntegratedGradients`, `NoiseTunnel`
around one of them..., resolved through the file's imports) after
`model.eval()` and a forward through the model, with no optimizer step that
updates the model — where the model contains an `nn.LSTM`, `nn.GRU` or
`nn.RNN`. Saliency maps and attribution, adversarial examples (FGSM, PGD),
test-time optimisation, and an RL actor update through an eval-mode critic
look like this.

The `eval()` may sit elsewhere: an accuracy helper that leaves the model in
eval (in this file or another file of the run), a `generate()` method that
calls `self.eval()`, an attack class whose `__init__` puts its model in eval,
a caller that puts the model in eval before calling the gradient helper, or
a gradient helper of another file of the run (`input_saliency(model, x)`)
called while the model is in eval (reported at the call), or an attack or
saliency object built with the model (`attack = PGD(model)`,
`VanillaSaliency(model)`, in this file or another file of the run) whose
method takes input gradients through the model it stored in `__init__`,
called while that model is in eval (reported at the method call; not when the
class switches that model's mode itself or replaces it). The mode flow
follows these (the summaries RNF001 uses). Across calls, only
gradient code about an input is reported: captum, `autograd.grad` with
respect to a non-parameter, or an input that requires grad or whose `.grad`
is read after the backward; a plain `loss.backward()` there is more often a
training step (RNF001).

It also reports a whole `model.train()` put before such gradient code on an
input (no optimizer step that updates the model, no dropout/BatchNorm put
back in eval by hand): the usual way around cuDNN's error, which also runs
dropout and BatchNorm in training mode while the gradient is taken.

The RNNs are found in the model's class definition, in this file or in
another file of the run (nested
submodules, `nn.Sequential`/`nn.ModuleList`, base classes and data-parallel
wrappers included). `nn.LSTMCell`, `nn.GRUCell` and `nn.RNNCell` do not use
cuDNN's RNN kernel and do not count.

## Why is this bad?
On a GPU, an RNN whose forward runs in eval mode does not keep what cuDNN's
backward needs, and the backward fails with "cudnn RNN backward can only be
called in training mode". The decision is taken at *forward* time, so calling
`train()` between the forward and `backward()` does not help. On a CPU the same
code runs, which is why it is found late.

`model.train()` is not the answer: it also switches dropout and BatchNorm to
training behaviour and changes the gradient you wanted (and BatchNorm's
running statistics are updated by the attack's or attribution's forwards).

## Example
```python
model.eval()
x.requires_grad_()
score = model(x)[:, target].sum()
score.backward()
```

## Use instead
Keep the model in eval and put only its RNNs in train mode
(`--rnn-only`, strategy `rnn-train`, the default):
```python
model.eval()
model.lstm.train()
score = model(x)[:, target].sum()
score.backward()
```
For a whole `model.train()` put there to get past the error:
```python
model.eval()
model.lstm.train()
x.requires_grad_()
F.cross_entropy(model(x), y).backward()
```
When the RNN submodules cannot be named statically (inside `nn.Sequential`,
a `ModuleList`), the fix inserts a loop over `model.modules()` that puts every
`torch.nn.RNNBase` in train mode.

Or run the forward and the backward with cuDNN off for that region only
(`--rnn-only --rnn-only-strategy cudnn-off`):
```python
model.eval()
x.requires_grad_()
with torch.backends.cudnn.flags(
    enabled=False,
    benchmark=torch.backends.cudnn.benchmark,
    deterministic=torch.backends.cudnn.deterministic,
    allow_tf32=torch.backends.cudnn.allow_tf32,
):
    score = model(x)[:, target].sum()
    score.backward()
```
The block must hold the forward: cuDNN is chosen when the RNN runs forward.
`cudnn.flags()` would reset `benchmark`, `deterministic` and `allow_tf32` to its
own defaults inside the block, so the fix passes their current values. (In
torch 2.13 it also resets `benchmark_limit`, `fp32_precision` and
`depthwise_kernel`; those only choose among cuDNN kernels, none of which runs
inside the block, and older releases' `flags()` do not accept the last two.)

## Fix safety
The finding is always reported; it is fixed only when asked, with `--rnn-only`
(or `rnn-only = true` under `[tool.rnnfix]`). Having opted in, the fix applies
as a safe fix.

- `rnn-train` gives gradients identical to eval mode when every RNN has
  `dropout=0` or a single layer: an RNN's train and eval modes differ only in
  its inter-layer dropout. When an RNN is built with a non-zero `dropout` (or
  one written as an expression we cannot read) and more than one layer (or an
  unknown number), train mode would switch that dropout on and change the
  result, so **`rnn-train` is not applied**: the finding says why and names
  `--rnn-only-strategy cudnn-off`, which is exact for any RNN configuration.
  The code is left unchanged rather than silently switched to another strategy.
- `rnn-train` is not applied either when a class on the way overrides
  `train` in a form the inserted call cannot go through (`def train(self):`
  without `mode`, a `train(self, data, epochs)` training loop, or a module
  holding such a submodule): `train()` would fail with `TypeError` or run
  something else. The finding says which class and why; `cudnn-off` calls
  no `train()` and fixes it.
- `cudnn-off` is exact, but the flag is process-wide while the block runs
  (other threads see it) and every cuDNN operation in the block falls back to
  a slower kernel. It is offered when the forward and the backward sit in one
  block of statements.

When the eval mode comes from another function, the `rnn-train` fix goes
into the function of the gradient code: right after the call that left the
model in eval (`accuracy(model, loader)`) when that call runs before the
gradient code on every path, else before the statement that runs the gradient
code's first forward (in a helper whose caller put the model in eval, inside
the helper; the RNNs then stay in train mode for the caller, which changes
nothing for an RNN without inter-layer dropout).

The `model.train()` finding's fix (`model.eval()` and train mode for the
RNNs only) is unsafe, applied with `--unsafe-fixes` (`--rnn-only` is not
needed): the author chose `train()`, and the gradient changes — to the eval
model's gradient, which is what an attack or an attribution is meant to take.

Not reported: a region whose forward and backward already run under
`cudnn.flags(enabled=False)`, or whose RNNs were already put in train mode; a
file that switches cuDNN off globally (RNF005 reports that). A gradient taken
only with respect to the RNN's output (`autograd.grad(loss, rnn_out)`) does not
reach cuDNN's backward; this rule cannot see that and reports it too.
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not may_apply(ctx):
            return
        src = ctx.source
        facts = ctx.facts
        if may_switch_cudnn_off(src) and global_cudnn_off(ctx.tree, facts.imports):
            return  # no cuDNN anywhere: RNF005's business
        analysis = facts.evalgrad
        modes = facts.modes
        local = analysis.regions()
        regions = [
            r
            for r in [*local, *regions_across_calls(ctx, analysis, local, summarise)]
            if not (r.rnn_train_done or r.cudnn_off_done)
            # The mode flow follows helpers (``reset(model)`` calling
            # ``model.train()``) that the syntactic region cannot see.
            and not modes.mode_before(r.sink, r.model).provably_train
        ]
        for region in regions:
            yield self._finding(ctx, analysis, region, regions)
        if ".train(" in src:
            for found in train_for_gradient(ctx, analysis):
                yield self._train_finding(ctx, found)

    def _train_finding(self, ctx: FileContext, found: TrainForGradient) -> Finding:
        """The whole model put in train mode for gradient code (a workaround for
        cuDNN's check): suggest eval + RNN-only train mode. Unsafe: the author
        chose ``train()``, and the gradient changes (for the better)."""
        model = found.model
        rnns = _rnns_text(model, found.rnns)
        message = (
            f"`{model}.train()` puts all of `{model}` in train mode for the gradient of "
            f"{_sink_text(ctx, found.sink)} on line {found.sink.lineno}: any dropout in it is "
            "active and any BatchNorm uses and updates batch statistics while the gradient "
            f"is taken; cuDNN's RNN backward needs only {rnns} in train mode"
        )
        blocked = None
        calls: list[tuple[str, Method]] = [(model, "eval")]
        calls += [(t, "train") for t in _rnn_targets(found)]
        for target, method in calls:
            check = ctx.facts.receivers.check(target, method)
            if check.override:
                blocked = check.reason
                break
        if blocked is not None:
            return ctx.finding(self.code, found.train_call, message + f"; not fixed: {blocked}")
        code, imports, what = _rnn_train_code(ctx, model, found.rnns, found.scope)
        edits: tuple[Edit, ...] = (
            ReplaceExpression(
                ctx.pos(found.train_call), ctx.end_pos(found.train_call), f"{model}.eval()"
            ),
            InsertStatements(ctx.pos(found.train_stmt), code, where="after"),
            *imports,
        )
        fix = Fix(edits, safe=False, description=f"keep `{model}` in eval and {what}")
        message += f": use `{model}.eval()` and {what}"
        return ctx.finding(self.code, found.train_call, message, fix)

    def _finding(
        self,
        ctx: FileContext,
        analysis: EvalGradAnalysis,
        region: EvalBackward,
        regions: Sequence[EvalBackward],
    ) -> Finding:
        model = region.model
        where = (
            f"`.eval()` on line {region.eval_call.lineno}"
            if region.eval_call is not None
            else region.origin
        )
        message = (
            f"{_sink_text(ctx, region.sink)} computes a gradient through "
            f"{_rnns_text(model, region.rnns)} while `{model}` is in eval mode "
            f"({where}); on a GPU cuDNN fails with {_ERROR}"
        )
        inexact = [s for s in region.rnns if not s.train_mode_exact]
        settings = ctx.settings
        if not settings.rnn_only:
            if inexact:
                hint = (
                    f"; `{_full(model, inexact[0])}` has {inexact[0].describe()}, so fix it with "
                    "`--rnn-only --rnn-only-strategy cudnn-off`"
                )
            else:
                hint = "; `--rnn-only` puts only the RNNs in train mode"
            return ctx.finding(self.code, region.sink, message + hint)
        if settings.rnn_only_strategy == "rnn-train":
            blocked = rnn_train_blocker(ctx, region)
            if blocked is not None:
                reason = (
                    f"; not fixed: {blocked}; `--rnn-only-strategy cudnn-off` calls no `train()`"
                )
                return ctx.finding(self.code, region.sink, message + reason)
            if inexact:
                reason = (
                    f"; not fixed: train mode would switch on the inter-layer dropout of "
                    f"`{_full(model, inexact[0])}` ({inexact[0].describe()}) and change the "
                    "gradient: use `--rnn-only-strategy cudnn-off`"
                )
                return ctx.finding(self.code, region.sink, message + reason)
            fix = rnn_train_fix(ctx, analysis, region)
            if fix is None:
                what = "`.eval()` call" if region.eval_call is not None else "forward"
                reason = f"; not fixed: the {what} does not stand alone on its line"
                return ctx.finding(self.code, region.sink, message + reason)
            return ctx.finding(self.code, region.sink, message, fix)
        group = [r for r in regions if same_region(r, region)]
        edits = cudnn_off_edits(ctx, analysis, group)
        if edits is None:
            reason = "; not fixed: the forward and the backward are not in one block of statements"
            return ctx.finding(self.code, region.sink, message + reason)
        fix = Fix(edits, safe=True, description="run the forward and backward with cuDNN off")
        return ctx.finding(self.code, region.sink, message, fix)


def may_apply(ctx: FileContext) -> bool:
    """A necessary condition for a finding, cheap tests first. Every finding
    needs

    - gradient code: ``backward``/``autograd``/``captum`` in the text, or a
      gradient helper of another file of the run (``_imports_gradient_code``),
      as this rule has always required;
    - an RNN: ``LSTM``/``GRU``/``RNN`` in the text or an RNN class of another
      file of the run (``_imports_rnn_class``), likewise;
    - an eval mode, or the ``train()`` workaround:

      - a region of one function (``EvalGradAnalysis.regions``) starts at a
        mode call to eval of its own (``mode_call``); a region across calls
        (``regions_across_calls``) needs an eval fact of
        ``ModeFlow.mode_before``, which only such a call of this file
        (``Net().eval()`` included) or the summary of a function of another
        file of the run that this file calls (``ModeFlow.external``: a
        function, a class it builds and its methods) or names as a base class
        (the object's state) can give: ``CallFacts.eval_switch``, else
        ``ProjectView.reaches`` with a summary that sets eval;
      - ``train_for_gradient`` starts at a call ``M.train()``
        (``CallFacts.train_switch``) and is asked only where ``.train(`` is
        written.

    The three are independent: the RNN comes first (its text is in few
    files, and its project part reads only files with RNN or override
    text), the eval mode last (its project part asks about every name the
    file calls).
    """
    src = ctx.source
    grad_text = any(k in src for k in ("backward", "autograd", "captum"))
    rnn_text = any(k in src for k in ("LSTM", "GRU", "RNN"))
    if ctx.project is None and not (grad_text and rnn_text):
        return False
    if not rnn_text and not _imports_rnn_class(ctx):
        return False
    if not grad_text and not _imports_gradient_code(ctx):
        return False
    eval_here = False
    if may_switch_mode(src):
        calls = call_facts(ctx.tree, ctx.facts.imports)
        eval_here = calls.eval_switch or (calls.train_switch and ".train(" in src)
    if not eval_here:
        view = ctx.facts.project
        if view is None or not view.reaches(_sets_eval, EVAL_REACH, src, called=True, bases=True):
            return False
    return True


def _sets_eval(f: FunctionSummary) -> bool:
    """It may leave a name in eval mode; unlike ``FunctionSummary.sets_eval``,
    an override of ``eval`` counts too (a base class's public methods give an
    object's state in ``ModeFlow``)."""
    return any(Mode.EVAL in e.sets for e in f.summary.effects.values())


def _imports_gradient_code(ctx: FileContext) -> bool:
    view = ctx.facts.project
    return view is not None and view.imports_gradient_code()


def _imports_rnn_class(ctx: FileContext) -> bool:
    view = ctx.facts.project
    return view is not None and view.imports_rnn_class()


def same_region(a: EvalBackward, b: EvalBackward) -> bool:
    return (
        a.scope is b.scope
        and a.model == b.model
        and a.eval_call is b.eval_call
        and (a.eval_call is not None or a.anchor is b.anchor)
    )


def rnn_train_blocker(ctx: FileContext, region: EvalBackward) -> str | None:
    """Why ``train()`` may not be called on the RNNs the fix would name (a
    class that overrides ``train`` without ``mode``, say); for the loop over
    ``model.modules()``, on anything inside ``model``."""
    receivers = ctx.facts.receivers
    model = region.model
    if all(s.nameable and s.path for s in region.rnns):
        targets = sorted({f"{model}.{s.path}" for s in region.rnns})
    else:
        targets = [model]
    for target in targets:
        found = receivers.check(target, "train")
        if found.override:
            return found.reason
    return None


def rnn_train_fix(ctx: FileContext, analysis: EvalGradAnalysis, region: EvalBackward) -> Fix | None:
    stmt = region.eval_stmt
    where: Literal["before", "after"] = "after"
    simple = isinstance(stmt, (ast.Expr, ast.Assign)) and alone_on_lines(analysis, stmt, stmt)
    if stmt is None or (not simple and region.eval_call is None):
        # Eval mode from elsewhere (a caller, the object's state, a helper
        # called in an ``if``): train the RNNs where the gradient code is,
        # before the statement that runs its first forward.
        span = _common_block(analysis, [region.forwards[0], region.sink])
        stmt, where = (span[0] if span is not None else None), "before"
        if stmt is None or not alone_on_lines(analysis, stmt, stmt):
            return None
    elif not simple:
        return None
    code, imports, description = _rnn_train_code(ctx, region.model, region.rnns, region.scope)
    edits = (InsertStatements(ctx.pos(stmt), code, where=where), *imports)
    return Fix(edits, safe=True, description=description)


def _rnn_targets(found: TrainForGradient) -> list[str]:
    if all(s.nameable and s.path for s in found.rnns):
        return sorted({f"{found.model}.{s.path}" for s in found.rnns})
    return [found.model]


def _rnn_train_code(
    ctx: FileContext, model: str, rnns: Sequence[RnnSpec], scope: ast.AST
) -> tuple[tuple[str, ...], tuple[Edit, ...], str]:
    """Statements that put ``model``'s RNNs (only) in train mode, the imports
    they need, and what they do in words."""
    if all(s.nameable and s.path for s in rnns):
        paths = sorted({s.path for s in rnns})
        # ``enc`` already covers ``enc.lstm``.
        paths = [p for p in paths if not any(p != q and is_below(p, q) for q in paths)]
        code = tuple(f"{model}.{p}.train()" for p in paths)
        description = "put " + ", ".join(f"`{model}.{p}`" for p in paths) + " in train mode"
        return code, (), description
    torch, imports = _torch(ctx)
    var = _fresh_name(scope, "module")
    code = (
        f"for {var} in {model}.modules():\n"
        f"    if isinstance({var}, {torch}.nn.RNNBase):\n"
        f"        {var}.train()",
    )
    return code, imports, f"put every RNN of `{model}` in train mode"


def cudnn_off_edits(
    ctx: FileContext, analysis: EvalGradAnalysis, group: Sequence[EvalBackward]
) -> tuple[Edit, ...] | None:
    """Wrap the statements from the first forward to the last backward of
    ``group`` (one model's eval region) in ``torch.backends.cudnn.flags``."""
    first_forward = min((f for r in group for f in r.forwards), key=key)
    span = _common_block(analysis, [first_forward, *(r.sink for r in group)])
    if span is None:
        return None
    first, last = span
    if not alone_on_lines(analysis, first, last):
        return None
    return cudnn_off_wrap(ctx, first, last)


def cudnn_off_wrap(ctx: FileContext, first: ast.stmt, last: ast.stmt) -> tuple[Edit, ...]:
    """Statements ``first`` .. ``last`` (one block) under
    ``cudnn.flags(enabled=False, ...)``, the other flags kept as they are; also
    used by ``verify --fix``."""
    torch, imports = _torch(ctx)
    # libcst prefixes continuation lines with the block's own indentation.
    line = ctx.lines[first.lineno - 1]
    inner = "\t" if line.startswith("\t") else "    "
    cudnn = _module_level_alias(ctx, "torch.backends.cudnn") or f"{torch}.backends.cudnn"
    items = (
        f"{cudnn}.flags(\n"
        f"{inner}enabled=False,\n"
        f"{inner}benchmark={cudnn}.benchmark,\n"
        f"{inner}deterministic={cudnn}.deterministic,\n"
        f"{inner}allow_tf32={cudnn}.allow_tf32,\n"
        ")"
    )
    return (WrapInWith(ctx.pos(first), ctx.pos(last), items), *imports)


def _module_level_alias(ctx: FileContext, module: str) -> str | None:
    """The name a module-level import binds to ``module`` (``from torch.backends
    import cudnn``), so the fix spells it as the file does and keeps that import
    in use; a function-local import would not be visible at the fix."""
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for alias in stmt.names:
                if f"{stmt.module}.{alias.name}" == module:
                    return alias.asname or alias.name
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == module and alias.asname:
                    return alias.asname
    return None


def _common_block(
    analysis: EvalGradAnalysis, nodes: Sequence[ast.AST]
) -> tuple[ast.stmt, ast.stmt] | None:
    """The innermost statement list holding all ``nodes``, and the first and
    last of its statements that hold them."""
    chains = [_stmt_chain(analysis, n) for n in nodes]
    for block_id, first in chains[0]:
        found: list[ast.stmt] = [first]
        for chain in chains[1:]:
            match = next((s for b, s in chain if b == block_id), None)
            if match is None:
                break
            found.append(match)
        else:
            parent, field = block_id
            block = getattr(parent, field)
            order = sorted(found, key=block.index)
            if isinstance(order[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return None
            return order[0], order[-1]
    return None


def _stmt_chain(
    analysis: EvalGradAnalysis, node: ast.AST
) -> list[tuple[tuple[ast.AST, str], ast.stmt]]:
    """(block, statement) for each statement enclosing ``node``, innermost first,
    up to the enclosing function."""
    out: list[tuple[tuple[ast.AST, str], ast.stmt]] = []
    cur = node
    while cur in analysis.parents:
        parent = analysis.parents[cur]
        if isinstance(cur, ast.stmt):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(parent, field, None)
                if isinstance(block, list) and cur in block:
                    out.append(((parent, field), cur))
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
        cur = parent
    return out


def alone_on_lines(analysis: EvalGradAnalysis, first: ast.stmt, last: ast.stmt) -> bool:
    """No other statement shares a line with ``first``..``last`` (``a; b``):
    edits are located by statement lines."""
    parent = analysis.parents.get(first)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and first in block:
            i, j = block.index(first), block.index(last)
            if i > 0 and block[i - 1].end_lineno == first.lineno:
                return False
            if j + 1 < len(block) and block[j + 1].lineno == last.end_lineno:
                return False
            return True
    return False


def _torch(ctx: FileContext) -> tuple[str, tuple[Edit, ...]]:
    name = ctx.facts.torch_name()
    if name is not None:
        return name, ()
    return "torch", (AddImport("torch"),)


def _fresh_name(scope: ast.AST, base: str) -> str:
    used = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
    used |= {n.arg for n in ast.walk(scope) if isinstance(n, ast.arg)}
    name = base
    while name in used:
        name = f"rnn_{name}" if not name.startswith("rnn_") else name + "_"
    return name


def _full(model: str, spec: RnnSpec) -> str:
    return f"{model}.{spec.path}" if spec.path else model


def _rnns_text(model: str, rnns: Sequence[RnnSpec]) -> str:
    parts = []
    for s in rnns:
        if not s.path:
            parts.append(f"`{model}` ({_article(s.kind)} {s.kind})")
        elif s.nameable:
            parts.append(f"`{model}.{s.path}` ({s.kind})")
        else:
            parts.append(f"{_article(s.kind)} {s.kind} inside `{model}.{s.path}`")
    parts = list(dict.fromkeys(parts))
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _article(kind: str) -> str:
    return "a" if kind == "GRU" else "an"


def _sink_text(ctx: FileContext, sink: ast.Call) -> str:
    if isinstance(sink.func, ast.Attribute) and sink.func.attr == "backward":
        receiver = ctx.segment(sink.func.value)
        if len(receiver) <= 30 and "\n" not in receiver:
            return f"`{receiver}.backward()`"
        return "`.backward()`"
    return f"`{ctx.segment(sink.func)}(...)`"
