"""RNF003: validation, test and inference code not under ``model.eval()`` and
``torch.no_grad()``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rnnfix.analysis.regions import find_regions
from rnnfix.analysis.syntax import FUNCTIONS
from rnnfix.rules._rnf003_judge import RegionJudge, Verdict
from rnnfix.rules.base import FileContext, Finding, Rule

_PREFILTER = re.compile(r"val|test|eval|predict|infer|dev|holdout", re.IGNORECASE)


class EvalWithoutNoGrad(Rule):
    code = "RNF003"
    name = "eval-without-no-grad"
    summary = "Validation/test/inference code not under `model.eval()` and `torch.no_grad()`"
    fix_safety = "safe"
    docs = """
## What it does
Finds *evaluation regions* that may run a model in train mode, or with grad
enabled, or both, and puts them under `model.eval()` and `torch.no_grad()`.

A region is evaluation by intent when it is

- a loop over data named like `val`, `valid`, `dev`, `test`, `eval`, `holdout`
  (`val_loader`, `testloader`, `loaders["val"]`);
- the body of a function or method named like `evaluate`, `validate`, `test`,
  `eval_*`, `predict`, `inference`;
- a loop that follows `model.eval()` in the same block and calls that model;

and it calls a model (a name or attribute path that has `.eval()`/`.train()`
called on it in the file, is built from an `nn.Module` class, or is a
parameter annotated as one) and runs no training step.

## Why is this bad?
Without `eval()`, dropout stays active and BatchNorm normalises with batch
statistics and updates its running statistics from validation data: the
metrics are noisy and the model is changed by evaluating it. Without
`no_grad()`, every forward builds an autograd graph that is never used, which
costs memory and time. `Variable(x, volatile=True)` no longer helps: it has
done nothing since PyTorch 0.4.

## Example
```python
def evaluate(model, loader):
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()
    return total

for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

## Use instead
```python
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()
    return total

model.eval()
with torch.no_grad():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```

What is added depends on what is missing: only `model.eval()`, only
`no_grad`, or both. A whole evaluation function gets `@torch.no_grad()` and
`model.eval()` as its first statement (after the docstring; right before the
first statement that calls the model when the function builds or loads the
model itself): a two-line diff that re-indents nothing. A loop gets
`model.eval()` before it and is wrapped in `with torch.no_grad():`.
`torch.no_grad()` is used, not `torch.inference_mode()`: tensors created under
inference mode cannot be saved for backward later (a hidden state carried into
the next training step, a lazily built cache). `import torch` is added when
the module lacks it; an alias (`import torch as th`) is used when it has one.

Putting the model in eval mode means the next training step needs
`model.train()` again: RNF001 then adds it where the training step runs.

Left alone: regions already under `eval()` and `no_grad`/`inference_mode`
(including through every caller in the file), evaluators that need gradients
(`torch.autograd.grad`, `requires_grad_()`, `backward()` inside), sampling loops
that run in the same iteration as a training step, code whose results flow
into a later `backward()`, functions called from inside a training step,
a module's own methods (`self.eval()` inside `predict`), pytest tests,
Lightning modules (the framework sets the mode), and code that is evaluation
by no signal above.

## Fix safety
The `no_grad` part is safe: it is only offered when nothing in the region
calls `backward`, `torch.autograd.grad`, `requires_grad_` or a training step,
directly or through a helper defined in the file, and when no value computed
in the region reaches a gradient use later in the same function. When a helper
needs gradients, the region is reported and not fixed.

Adding `eval()` changes outputs: dropout turns off and BatchNorm uses (and
stops updating) its running statistics. That is the intended fix for
evaluation, but the numbers you report will change. `eval()` also stays in
effect after the region, as it would after any hand-written `model.eval()`;
training code that follows needs `model.train()` (RNF001).
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not _PREFILTER.search(ctx.source):
            return
        regions = find_regions(ctx)
        if not regions:
            return
        judge: RegionJudge | None = None  # built at the first region that needs it
        claimed: set[ast.AST] = set()  # evaluation functions taken as regions
        for region in regions:
            if not region.is_function and any(
                a in claimed for a in ctx.facts.ancestors(region.node)
            ):
                continue
            if judge is None:
                judge = RegionJudge(ctx)
            verdict = judge.run(region)
            if verdict is Verdict.NOT_A_REGION:
                continue
            if isinstance(region.node, FUNCTIONS):
                claimed.add(region.node)
            if isinstance(verdict, Finding):
                yield verdict
