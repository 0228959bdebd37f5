"""RNF005: cuDNN switched off for the whole process."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rnnfix.analysis.evalgrad.in_scope import global_cudnn_off
from rnnfix.analysis.ruletext import may_switch_cudnn_off
from rnnfix.rules.base import FileContext, Finding, Fix, Rule
from rnnfix.rules.rnf004_backward_in_eval_through_rnn import (
    alone_on_lines,
    cudnn_off_edits,
    same_region,
)
from rnnfix.source.edits import Edit, RemoveStatement


class GlobalCudnnSwitch(Rule):
    code = "RNF005"
    name = "global-cudnn-switch"
    summary = "`torch.backends.cudnn.enabled = False` for the whole program"
    fix_safety = "unsafe"
    docs = """
## What it does
Finds `torch.backends.cudnn.enabled = False` (under any import alias) at module
level or in a function that does not set it back to `True`. Where the file has
an LSTM/GRU/RNN and a backward through it in eval mode (the pattern RNF004
describes), offers to replace the global switch with
`torch.backends.cudnn.flags(enabled=False)` around that region only.

## Why is this bad?
The switch is the usual way to silence "cudnn RNN backward can only be called
in training mode", and it works by turning cuDNN off for every operation of
the process: every RNN and convolution, in training and inference, falls back
to slower kernels on a GPU — for the sake of one saliency or attack routine.

## Example
```python
torch.backends.cudnn.enabled = False  # for the saliency backward below

model.eval()
score = model(x)[:, target].sum()
score.backward()
```

## Use instead
```python
model.eval()
with torch.backends.cudnn.flags(
    enabled=False,
    benchmark=torch.backends.cudnn.benchmark,
    deterministic=torch.backends.cudnn.deterministic,
    allow_tf32=torch.backends.cudnn.allow_tf32,
):
    score = model(x)[:, target].sum()
    score.backward()
```
or, with `rnnfix apply --rnn-only`, keep cuDNN and put only the RNNs in train
mode (RNF004).

## Fix safety
Unsafe: the fix removes the global switch and scopes it to the regions of this
file that need it. Code elsewhere — other files, other functions that were
relying on cuDNN being off (for determinism, or for a backward rnnfix did not
recognise) — would run with cuDNN again. Offered only when every such region
in the file can be wrapped; otherwise the switch is only reported.
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not may_apply(ctx.source):
            return
        facts = ctx.facts
        switches = global_cudnn_off(ctx.tree, facts.imports, star_torch=_star_torch(ctx))
        if not switches:
            return
        scoped = self._scoped_edits(ctx)
        for node in switches:
            message = (
                f"`{ctx.segment(node.targets[0])} = {ctx.segment(node.value)}` switches cuDNN "
                "off for the whole process: every RNN and convolution runs without it "
                "(slower on a GPU)"
            )
            fix = None
            analysis = facts.evalgrad
            if scoped and alone_on_lines(analysis, node, node):
                message += (
                    "; only the backward through an eval-mode RNN in this file needs it: "
                    "scope it with `torch.backends.cudnn.flags(enabled=False)`"
                )
                edits: tuple[Edit, ...] = (RemoveStatement(ctx.pos(node)), *scoped)
                fix = Fix(edits, safe=False, description="scope the switch with cudnn.flags")
            yield ctx.finding(self.code, node, message, fix)

    def _scoped_edits(self, ctx: FileContext) -> tuple[Edit, ...]:
        """The wraps for every eval-mode RNN backward region in the file, or ()
        when there is none or one of them cannot be wrapped."""
        facts = ctx.facts
        if not any(k in ctx.source for k in ("LSTM", "GRU", "RNN")):
            return ()
        analysis = facts.evalgrad
        regions = [r for r in analysis.regions() if not (r.rnn_train_done or r.cudnn_off_done)]
        edits: list[Edit] = []
        seen: set[tuple[int, str, int]] = set()
        for region in regions:
            group_key = (id(region.scope), region.model, id(region.eval_call))
            if group_key in seen:
                continue
            seen.add(group_key)
            group = [r for r in regions if same_region(r, region)]
            wrap = cudnn_off_edits(ctx, analysis, group)
            if wrap is None:
                return ()
            edits.extend(e for e in wrap if e not in edits)
        return tuple(edits)


def _star_torch(ctx: FileContext) -> bool:
    """The file's ``torch`` is the one a file of the run imports and this file
    star-imports (``from __init__ import *`` of a package whose ``__init__.py``
    has ``import torch``, a common layout of research code): nothing in the
    file binds ``torch`` itself."""
    if "import *" not in ctx.source or "torch" in ctx.facts.imports.names:
        return False
    view = ctx.facts.project
    if view is None:
        return False
    bindings = getattr(view.index.files, "bindings", None)
    for node in ctx.tree.body:
        if not (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)):
            continue
        parts = tuple(node.module.split(".")) if node.module else ()
        target = view.index.resolve(view.path, node.level, parts)
        if target is None or target[1]:
            continue
        view.consulted.add(target[0])  # the cache keys this result on that file
        found = bindings(target[0], "torch") if bindings is not None else None
        if found is not None and found.get("torch") == (0, ("torch",)):
            return True
    return False


def may_apply(source: str) -> bool:
    """A necessary condition for a finding, from the text: every finding is a
    switch ``global_cudnn_off`` returns, an assignment of ``False``/``0`` to
    ``torch.backends.cudnn.enabled`` (``may_switch_cudnn_off``)."""
    return may_switch_cudnn_off(source)
