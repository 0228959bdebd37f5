"""RNF006's findings for inference classes (``rnnfix.analysis.modes.inferclass``).

Two findings per held model, each with its own fix and safety, because the
evidence for each is different:

- eval: at the statement of ``__init__`` that binds the model. Fixed only for
  an object the class builds or loads itself (``owned``): ``self.<attr>.eval()``
  after the bind (or after the ``load_state_dict`` that follows it), as the
  upstream fixes of pytorch-seq2seq's ``Predictor`` and denoising-diffusion's
  ``FIDEvaluation`` did. A model the caller passes in (``given``) is reported
  without a fix: an ``eval()`` in the constructor switches the caller's
  object, which the caller may still train (TextAttack added
  ``self.model.eval()`` to ``GoalFunction.__init__`` and removed it the next
  day: its models include wrappers that are no ``nn.Module``). An owned model
  whose attribute other files of the run read is reported too: they may train
  it through the object.
- grad: at each method that runs the model with grad enabled. Fixed with
  ``@torch.no_grad()`` on the method when no value computed from the forward
  leaves the method (RNF003's ``escapes``: returned, stored, handed to a
  callback, unless detached: ``.item()``, ``.detach()``, ``.data``, ``.numpy()``);
  ``no_grad`` calls nothing on the model, so it is safe whatever the model
  is, and the file trains nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Protocol

from rnnfix.analysis.grads.escape import escapes
from rnnfix.analysis.modes.inferclass import ClassInference, InferenceClasses
from rnnfix.analysis.modes.inference import InferenceAnalysis
from rnnfix.analysis.syntax.walks import FUNCTIONS
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.source.edits import AddDecorator, AddImport, Edit, InsertStatements

CODE = "RNF006"


class Regions(Protocol):
    """RNF003's regions (``rule._Rnf003Regions``): a forward in one is RNF003's."""

    def covers(self, site: ast.Call) -> bool: ...


def class_findings(
    ctx: FileContext, analysis: InferenceAnalysis, owned: Regions
) -> Iterator[Finding]:
    covers = owned.covers
    found = InferenceClasses(ctx, analysis).find()
    decorated: set[int] = set()
    for held in found:
        held.forwards = [f for f in held.forwards if not covers(f.site)]
        if not held.forwards:
            continue
        if held.needs_eval:
            yield _eval_finding(ctx, held)
        for method in _grad_methods(held):
            if id(method) in decorated:
                continue
            decorated.add(id(method))
            yield _grad_finding(ctx, method, [h for h in found if _runs_in(h, method)])


def _runs_in(held: ClassInference, method: ast.AST) -> bool:
    return any(f.method is method and f.needs_grad for f in held.forwards)


def _grad_methods(held: ClassInference) -> list[ast.AST]:
    out: list[ast.AST] = []
    for f in held.forwards:
        if f.needs_grad and f.method not in out:
            out.append(f.method)
    return out


def _runners(held: ClassInference) -> str:
    names = list(dict.fromkeys(f"`{f.method.name}`" for f in held.forwards))
    return ", ".join(names)


def _eval_finding(ctx: FileContext, held: ClassInference) -> Finding:
    attr, cls = held.attr, held.cls.name
    how = "given to" if held.origin == "given" else "built in"
    message = (
        f"`{attr}` is {how} `{cls}.__init__` and run for inference by {_runners(held)}, and "
        "nothing here puts it in eval mode: in train mode any dropout in it is active and any "
        "BatchNorm normalises with batch statistics, which changes the results"
    )
    if held.origin == "given":
        why = (
            f"it is the caller's object: an `eval()` in `{cls}` would switch it for the "
            "caller, who may still train it (and it may be a wrapper that is no `nn.Module`)"
        )
        return ctx.finding(CODE, held.bind, f"{message}; not fixed: {why}")
    message += f"; call `{attr}.eval()` after building it"
    elsewhere = _read_elsewhere(ctx, attr.split(".", 1)[1])
    if elsewhere is not None:
        return ctx.finding(CODE, held.bind, f"{message}; not fixed: {elsewhere}")
    check = ctx.facts.receivers.check(attr, "eval", at=held.after)
    if check.reason is not None:
        return ctx.finding(CODE, held.bind, f"{message}; not fixed: {check.reason}")
    edit = InsertStatements(ctx.pos(held.after), (f"{attr}.eval()",), "after")
    # A class rnnfix cannot read (a library's ``InceptionV3``, a whole module
    # from ``torch.load``): a module in practice, not proven.
    fix = Fix((edit,), safe=check.provable, description=f"insert `{attr}.eval()`")
    return ctx.finding(CODE, held.bind, message, fix)


def _read_elsewhere(ctx: FileContext, name: str) -> str | None:
    """Another file of the run reads ``.<name>``: it may reach the model
    through the object and train it. Read from the files' text, as
    ``LazySummaries.may_call`` does (a summary given as data has no text: it
    may read it)."""
    project = ctx.project
    if project is None:
        return None
    from rnnfix.analysis.project.index import LazySummaries, normalise

    files = project.files
    view = ctx.facts.project
    me = normalise(ctx.path)
    needle = f".{name}"
    why = f"another file of the run reads `{needle}` (it may train the model through it)"
    for key in files:
        if key == me:
            continue
        if not isinstance(files, LazySummaries):
            return why
        if view is not None:
            view.consulted.add(key)  # the answer rests on its text: an edit re-checks
        try:
            text = files._paths[key].read_bytes().decode("utf-8", "replace")
        except OSError:
            return why
        if _mentions_attr(text, needle):
            return why
    return None


def _mentions_attr(text: str, needle: str) -> bool:
    start = 0
    while (i := text.find(needle, start)) >= 0:
        end = i + len(needle)
        if end >= len(text) or not (text[end].isalnum() or text[end] == "_"):
            return True
        start = end
    return False


def _grad_finding(ctx: FileContext, method: ast.AST, held: list[ClassInference]) -> Finding:
    assert isinstance(method, FUNCTIONS)
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    attrs = ", ".join(f"`{h.attr}`" for h in held)
    message = (
        f"`{method.name}` runs {attrs} for inference with grad enabled (autograd records "
        f"every forward, which costs memory and time); run it under `{t}.no_grad()`"
    )
    if any(kw.arg == "volatile" for n in ast.walk(method) if isinstance(n, ast.Call)
           for kw in n.keywords):  # fmt: skip
        message += " (`volatile=True` has had no effect since PyTorch 0.4)"
    if isinstance(method, ast.AsyncFunctionDef):
        why = f"`{method.name}` is a coroutine: `@{t}.no_grad()` would not cover its body"
        return ctx.finding(CODE, method, f"{message}; not fixed: {why}")
    sites = {id(f.site) for h in held for f in h.forwards if f.method is method}
    models = {h.attr for h in held}
    found = escapes(
        method,
        method.body,
        lambda call: id(call) in sites,
        models.__contains__,
        ctx.facts.imports.qualname,
    )
    if found:
        why = f"what it computes is {found[0].how}, to callers rnnfix does not see"
        return ctx.finding(CODE, method, f"{message}; not fixed: {why}")
    edits: list[Edit] = [AddDecorator(ctx.pos(method), f"{t}.no_grad()")]
    if torch is None:
        edits.append(AddImport("torch"))
    fix = Fix(
        tuple(edits), safe=True, description=f"decorate `{method.name}` with `@{t}.no_grad()`"
    )
    return ctx.finding(CODE, method, message, fix)
