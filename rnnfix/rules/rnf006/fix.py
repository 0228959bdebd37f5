"""RNF006's finding for the loads of one scope: the message, and the edits
(``eval()`` after each load, ``no_grad`` around the inference), or why there
is no fix.

``no_grad`` follows RNF003's policy: a function gets ``@torch.no_grad()`` (a
two-line diff that re-indents nothing), module-level code gets ``with
torch.no_grad():`` around the statements that run the forwards; and, as in
RNF003 (``rnnfix.analysis.grads.escape``), a function whose results may leave it with a
graph attached, to callers rnnfix does not see, is reported without a fix.
"""

from __future__ import annotations

import ast
from typing import Literal

from rnnfix.analysis.grads.escape import escapes, no_caller_reason
from rnnfix.analysis.grads.gradctx import LocalFunctions
from rnnfix.analysis.modes.batchstats import evaluates_with_batch_statistics
from rnnfix.analysis.modes.comments import TRAIN_INTENTS, intent_comment
from rnnfix.analysis.modes.inference import GLOBAL, Inference
from rnnfix.analysis.project.index import called_from_other_files
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import FUNCTIONS, block_of, suspends
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.classfacts import returned_class
from rnnfix.analysis.torch.models import unwrap_built
from rnnfix.rules.base import FileContext, Finding, Fix
from rnnfix.rules.rnf003.modes import chosen_train, deliberate_train_name
from rnnfix.source.edits import AddDecorator, AddImport, Edit, InsertStatements, WrapInWith

CODE = "RNF006"
_NOT_IN_WITH = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def scope_finding(ctx: FileContext, group: list[Inference]) -> Finding:
    """One finding for the loads of one scope (an encoder and a decoder
    loaded together get one ``no_grad``), reported at the first load."""
    torch = ctx.facts.torch_name()
    t = torch or "torch"
    first = group[0].load
    scope = first.scope
    evals = [inf for inf in group if inf.needs_eval]
    grad = any(inf.needs_grad for inf in group)
    message = _message(
        group,
        t,
        unread=any(not _readable(ctx, inf) for inf in evals),
        no_layers=any(not _mode_layers_seen(ctx, inf) for inf in evals),
    )
    if grad and _volatile(ctx):
        message += " (`volatile=True` has had no effect since PyTorch 0.4)"
    why_not: str | None = None
    safe = True
    edits: list[Edit] = []
    anchors: list[tuple[ast.stmt, Literal["before", "after"]]] = []
    for inf in evals:
        model = inf.load.model
        anchor = _eval_anchor(inf)
        if anchor is None:
            why_not = f"`{model}` is loaded on one path and run on another"
            break
        check = ctx.facts.receivers.check(model, "eval", at=anchor[0])
        if check.reason is not None:
            why_not = check.reason
            break
        if not (check.provable or inf.load.built_module or _module_class(ctx, inf)):
            safe = False  # a loaded object of a class rnnfix cannot read
        elif evaluates_with_batch_statistics(ctx, model):
            # BatchNorm(momentum=1) only: evaluating in train mode, with each
            # batch's own statistics, is how such a model is meant to run.
            safe = False
        elif not _mode_layers_seen(ctx, inf):
            # A readable class with no dropout or BatchNorm found in it
            # (stylegan2-pytorch's Generator): ``eval()`` may change nothing,
            # so it is no evidence of a bug; offered, not applied by default.
            safe = False
        edits.append(InsertStatements(ctx.pos(anchor[0]), (f"{model}.eval()",), anchor[1]))
        anchors.append(anchor)
    if why_not is None and grad:
        found = _no_grad(ctx, group, scope, t, anchors)
        if isinstance(found, str):
            why_not = found
        else:
            edits.extend(found)
            if torch is None:
                edits.append(AddImport("torch"))
    if why_not is not None:
        return ctx.finding(CODE, first.stmt, f"{message}; not fixed: {why_not}")
    parts = []
    if evals:
        parts.append("insert " + ", ".join(f"`{i.load.model}.eval()`" for i in evals))
    decorated = [e for e in edits if isinstance(e, AddDecorator)]
    if decorated:
        names = ", ".join(f"`{_function_at(ctx, e)}`" for e in decorated)
        parts.append(f"decorate {names} with `@{t}.no_grad()`")
    if any(isinstance(e, WrapInWith) for e in edits):
        parts.append(f"wrap the inference in `with {t}.no_grad():`")
    fix = Fix(tuple(edits), safe=safe, description=" and ".join(parts))
    return ctx.finding(CODE, first.stmt, message, fix)


def train_finding(ctx: FileContext, inf: Inference) -> Finding | None:
    """A loaded model the author puts in train mode with ``train()``, in a
    file that trains nothing: reported, never fixed (an ``eval()`` would undo
    the call, and Monte Carlo dropout or BatchNorm on batch statistics are
    written just so); None when the code says it is deliberate (a comment on
    or above the call, repeated forwards of one input, a function named for
    it: ``rnf003.modes``)."""
    call = inf.explicit_train
    assert call is not None
    model = inf.load.model
    if intent_comment(ctx.lines, call, TRAIN_INTENTS) is not None:
        return None
    scopes = [inf.load.scope, *(f.unit for f in inf.forwards if f.level == GLOBAL)]
    if any(isinstance(s, FUNCTIONS) and deliberate_train_name(s.name) for s in scopes):
        return None
    units: dict[int, tuple[ast.stmt, list[ast.Call]]] = {}
    for f in inf.forwards:
        units.setdefault(id(f.unit), (f.unit, []))[1].append(f.site)
    if any(chosen_train(ctx, unit, model, sites) for unit, sites in units.values()):
        return None
    t = ctx.facts.torch_name() or "torch"
    grad = (
        f"; it also runs with grad enabled: run it under `{t}.no_grad()`" if inf.needs_grad else ""
    )
    message = (
        f"`{model}` is loaded with {inf.load.how} for inference, and "
        f"`{model}.train()` (line {call.lineno}) puts it in train mode while nothing in "
        "this file trains it: any dropout in it is active and any BatchNorm normalises "
        "with batch statistics, which changes the predictions; unless that is deliberate "
        f"(Monte Carlo dropout, BatchNorm statistics: say so in a comment), call "
        f"`{model}.eval()` instead{grad}; not fixed: an explicit `train()` may be the "
        "author's choice"
    )
    return ctx.finding(CODE, inf.load.stmt, message)


def _volatile(ctx: FileContext) -> bool:
    """``Variable(x, volatile=True)``: the pre-0.4 way to turn grad off."""
    return "volatile" in ctx.source and any(
        isinstance(n, ast.keyword)
        and n.arg == "volatile"
        and not (isinstance(n.value, ast.Constant) and n.value.value is False)
        for n in ast.walk(ctx.tree)
    )


def _function_at(ctx: FileContext, edit: AddDecorator) -> str:
    for node in ast.walk(ctx.tree):
        if isinstance(node, FUNCTIONS) and ctx.pos(node) == edit.function:
            return node.name
    return "..."


def _readable(ctx: FileContext, inf: Inference) -> bool:
    """rnnfix reads the class of the loaded object (so it knows whether it has
    layers whose behaviour depends on the mode)."""
    anchor = _eval_anchor(inf)
    at = anchor[0] if anchor is not None else inf.load.stmt
    check = ctx.facts.receivers.check(inf.load.model, "eval", at=at)
    # An override in the way of ``eval()`` was read from the class itself.
    return bool(
        check.provable or check.override or inf.load.built_module or _module_class(ctx, inf)
    )


def _message(
    group: list[Inference], t: str, *, unread: bool = False, no_layers: bool = False
) -> str:
    evals = [inf for inf in group if inf.needs_eval]
    grad = any(inf.needs_grad for inf in group)
    names = ", ".join(f"`{inf.load.model}`" for inf in (evals or group))
    hows = sorted({inf.load.how for inf in (evals or group)})
    one = len(evals or group) == 1
    loaded = f"{names} {'is' if one else 'are'} loaded with {', '.join(hows)}"
    if unread:
        # The class is not readable here: whether it has dropout or BatchNorm
        # is unknown, so the message must not claim that it has.
        train = (
            "may run inference in train mode (nothing here puts it in eval, and its class "
            "is not readable here: in train mode any dropout in it is active and any "
            "BatchNorm normalises with batch statistics, which changes the predictions)"
        )
    elif no_layers:
        # Readable, but no Dropout/BatchNorm was found in it (stylegan2-pytorch's
        # Generator has neither): "the predictions change" would be a claim
        # rnnfix cannot back; the layers may still come from code it does not read.
        train = (
            f"{'runs' if one else 'run'} inference in train mode (rnnfix found no dropout "
            "or BatchNorm in its class, but in train mode any it has is active or "
            "normalises with batch statistics, which changes the predictions)"
        )
    else:
        train = (
            f"{'runs' if one else 'run'} inference in train mode (dropout active, BatchNorm "
            "normalising with batch statistics: the predictions change)"
        )
    grads = "autograd records every forward, which costs memory and time"
    calls = ", ".join(f"`{inf.load.model}.eval()`" for inf in evals)
    if evals and grad:
        return (
            f"{loaded} and {train} and with grad enabled ({grads}); call {calls} after "
            f"loading and run the inference under `{t}.no_grad()`"
        )
    if evals:
        return f"{loaded} and {train}; call {calls} after loading"
    return (
        f"Inference with loaded {names} runs with grad enabled: {grads}; "
        f"run it under `{t}.no_grad()`"
    )


def _mode_layers_seen(ctx: FileContext, inf: Inference) -> bool:
    """The loaded model's class is known to hold a layer whose forward
    depends on the mode: a torch.nn Dropout/BatchNorm or RNN, a class of this
    file or of the run that builds one (or reads ``self.training``). True when
    the class cannot be named here (the message then says so itself)."""
    info = ctx.facts.modes.model_info(inf.load.model)
    built = info.built_at if info is not None else None
    values = [built] if built is not None else _bound_values(ctx, inf.load.model)
    found = [f for v in values if (f := _factory_layers(ctx, v)) is not None]
    factory = any(found) if found and len(found) == len(values) else None
    if factory is not None:
        return factory  # ``create_model(cfg)``: the class the factory builds says
    if info is not None and info.has_rnn is not False:
        return True  # an RNN's inter-layer dropout, or a class not known to hold none
    return built is None or _builds_mode_layers(ctx, built)


def _bound_values(ctx: FileContext, model: str) -> list[ast.expr]:
    """The values ``model`` is assigned anywhere in the file."""
    return [
        node.value
        for node in ast.walk(ctx.tree)
        if isinstance(node, ast.Assign) and any(dotted(t) == model for t in node.targets)
    ]


def _factory_layers(ctx: FileContext, built: ast.AST) -> bool | None:
    """For a model a factory function built (``create_model(cfg)``, of this
    file or of another file of the run: ``classfacts.returned_class``),
    whether the class it returns holds an RNN or a mode layer; None when
    ``built`` is no factory's result."""
    call = unwrap_built(built, ctx.facts.imports)
    if not isinstance(call, ast.Call):
        return None
    table = ctx.facts.receivers.table
    if isinstance(call.func, ast.Name) and call.func.id in table.functions:
        made = returned_class(table.functions[call.func.id])
        if made is None or made not in table.classes:
            return None
        return made in ctx.facts.modes.classes.with_rnn or table.mode_layers(made)
    view = ctx.facts.project
    found = view.factory_class(call.func) if view is not None else None
    if found is None:
        return None
    return bool(found.rnns) or found.mode_layers


def _builds_mode_layers(ctx: FileContext, built: ast.AST) -> bool:
    call = unwrap_built(built, ctx.facts.imports)
    if not isinstance(call, ast.Call):
        return True
    qual = ctx.facts.imports.qualname(call.func) or ""
    if qual == "torch.nn.Sequential":
        return any(_builds_mode_layers(ctx, a) for a in call.args)
    if qual.startswith("torch.nn."):
        last = qual.rsplit(".", 1)[-1]
        return library.mode_layer(qual) or last in ("RNN", "LSTM", "GRU") or "Transformer" in last
    if library.torchvision_builder(qual):
        return library.torchvision_mode_layers(
            qual, frozenset(k.arg for k in call.keywords if k.arg is not None)
        )
    if isinstance(call.func, ast.Name) and call.func.id in ctx.facts.receivers.table.classes:
        return ctx.facts.receivers.table.mode_layers(call.func.id)
    view = ctx.facts.project
    found = view.lookup_class(call.func) if view is not None else None
    if found is None or not found.is_module:
        return True
    return found.mode_layers


def _module_class(ctx: FileContext, inf: Inference) -> bool:
    """``Net.load_from_checkpoint(...)`` of a module class rnnfix reads, whose
    ``train``/``eval`` a call can go through."""
    cls = inf.load.cls
    if cls is None:
        return False
    ref = ctx.facts.receivers.table.ref(cls)
    return ref.module is True and ref.blocker("eval") is None


def _eval_anchor(inf: Inference) -> tuple[ast.stmt, Literal["before", "after"]] | None:
    """Right after the load when every forward is in the load's own block;
    right before the first forward's statement when they all are in one
    block around it (the load is conditional); None otherwise."""
    # Module-level functions that read the model as a global run after the
    # load, whichever block it is in.
    levels = {f.level for f in inf.forwards if f.level != GLOBAL}
    if levels <= {0}:
        return inf.load.stmt, "after"
    if len(levels) == 1:
        units = [f.unit for f in inf.forwards if f.level != GLOBAL]
        unit = min(units, key=lambda s: (s.lineno, s.col_offset))
        return unit, "before"
    return None


def _no_grad(
    ctx: FileContext,
    group: list[Inference],
    scope: ast.AST | None,
    t: str,
    anchors: list[tuple[ast.stmt, Literal["before", "after"]]],
) -> list[Edit] | str:
    units = {
        id(f.unit): f.unit
        for inf in group
        for f in inf.forwards
        if f.needs_grad and f.level != GLOBAL
    }
    functions = {
        id(f.unit): f.unit
        for inf in group
        for f in inf.forwards
        if f.needs_grad and f.level == GLOBAL
    }
    edits: list[Edit] = []
    if scope is not None:
        assert isinstance(scope, FUNCTIONS)
        found = _decorate(ctx, scope, list(units.values()), group, t)
        if isinstance(found, str):
            return found
        edits.append(found)
    elif units:
        edits.extend(_wraps(ctx, list(units.values()), anchors))
    for fn in functions.values():
        assert isinstance(fn, FUNCTIONS)
        found = _decorate(ctx, fn, fn.body, group, t)
        if isinstance(found, str):
            return found
        edits.append(found)
    return edits


def _decorate(
    ctx: FileContext, func: ast.stmt, units: list[ast.stmt], group: list[Inference], t: str
) -> Edit | str:
    assert isinstance(func, FUNCTIONS)
    if isinstance(func, ast.AsyncFunctionDef):
        return f"`{func.name}` is a coroutine: `@{t}.no_grad()` would not cover its body"
    why = _escape(ctx, func, units, group)
    return why if why is not None else AddDecorator(ctx.pos(func), f"{t}.no_grad()")


def _escape(
    ctx: FileContext, func: ast.FunctionDef, units: list[ast.stmt], group: list[Inference]
) -> str | None:
    """RNF003's rule: what the inference computes may leave ``func`` with a
    graph attached; fixed only when every caller is a call of this file
    (which trains nothing: RNF006 acts only on files that train nothing)."""
    sites = {id(f.site) for inf in group for f in inf.forwards}
    models = {inf.load.model for inf in group}
    found = escapes(
        func,
        units,
        lambda call: id(call) in sites,
        models.__contains__,
        ctx.facts.imports.qualname,
    )
    if not found:
        return None
    how = found[0].how
    callers = LocalFunctions(ctx).call_sites(func)
    if not callers:
        return f"what it computes is {how}, and {no_caller_reason(ctx.tree, func)}"
    if called_from_other_files(ctx, func.name):
        return (
            f"what it computes is {how}, and a function named `{func.name}` is called"
            " from other files of the run"
        )
    return None


def _wraps(
    ctx: FileContext,
    units: list[ast.stmt],
    anchors: list[tuple[ast.stmt, Literal["before", "after"]]],
) -> list[Edit]:
    """``with torch.no_grad():`` around each run of units in one block: from
    the first to the last, unless a definition or an import lies between, or
    a statement an ``eval()`` goes after (a second model loaded between the
    first model's inference and its own: the ``eval()`` stays right after its
    load, between two ``with`` blocks), or a unit an ``eval()`` goes before
    starts a run of its own."""
    parents = ctx.facts.parents
    after = {id(n) for a, where in anchors if where == "after" for n in ast.walk(a)}
    before = {id(a) for a, where in anchors if where == "before"}
    inside = {id(n) for u in units for n in ast.walk(u) if n is not u}
    blocks: dict[int, tuple[list[ast.stmt], list[int]]] = {}
    for unit in units:
        if id(unit) in inside:
            continue  # wrapped with the unit around it
        if suspends([unit]):
            # A ``with`` around a ``yield`` stays entered while the generator
            # is paused: grad would be off in its caller. Left unwrapped.
            continue
        found = block_of(parents, unit)
        if found is None:
            continue
        block, index = found
        blocks.setdefault(id(block), (block, []))[1].append(index)
    edits: list[Edit] = []
    t = ctx.facts.torch_name() or "torch"
    for block, indexes in blocks.values():
        indexes.sort()
        start = prev = indexes[0]
        for i in indexes[1:]:
            if id(block[i]) in before or any(
                isinstance(s, _NOT_IN_WITH) or any(id(n) in after for n in ast.walk(s))
                for s in block[prev + 1 : i]
            ):
                edits.append(_wrap(ctx, block[start], block[prev], t))
                start = i
            prev = i
        edits.append(_wrap(ctx, block[start], block[prev], t))
    return edits


def _wrap(ctx: FileContext, first: ast.stmt, last: ast.stmt, t: str) -> WrapInWith:
    return WrapInWith(ctx.pos(first), ctx.pos(last), f"{t}.no_grad()")
