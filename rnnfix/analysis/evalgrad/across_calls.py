"""Gradient code reached by an eval mode that another function set.

``EvalGradAnalysis`` finds a region whose ``model.eval()`` sits in the same
function as the backward. Often it does not: an accuracy check
(``evaluate(model, loader)``, in this file or another file of the run) leaves
the model in eval before attribution code; a ``generate()`` method calls
``self.eval()``; an attack class puts its model in eval in ``__init__`` and
takes input gradients in ``attack()``; a caller puts the model in eval before
calling ``saliency(model, x)``. The mode flow (``ModeFlow.mode_before``) knows
these through its summaries (helpers of this file and of the run, callers'
states, an object's state across its public methods); this module asks it.

A region here is gradient code (``backward()``, ``torch.autograd.grad``, a
captum gradient attribution) after a forward of ``M`` in one scope, where

- every forward of ``M`` before it may run in eval and none in train mode,
  and each eval comes from outside the scope's own mode calls (the scope's
  own ``M.eval()`` is ``EvalGradAnalysis``'s, which has already decided);
- the gradient is about an input (``rnnfix.analysis.grads.gradcode``): a captum
  attribution, ``autograd.grad`` with respect to a non-parameter, an input
  that requires grad or whose ``.grad`` is read. Precision first: a plain
  ``loss.backward()`` after a helper's eval is more often a training step
  (RNF001's business) than gradient code;
- no optimizer step that may update ``M`` runs in the scope or after it;
- ``M`` holds a cuDNN RNN.

Fixes go where the gradient code is: before the statement of its first
forward (``rnn-train``), or around the forward and the backward (``cudnn-off``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from rnnfix.analysis.evalgrad.in_scope import (
    EvalBackward,
    EvalGradAnalysis,
    end_key,
    key,
    mode_call,
)
from rnnfix.analysis.grads.gradcode import (
    attribution,
    forward_model,
    input_gradient,
    parameter_names,
)
from rnnfix.analysis.modes.state import ModeFact, is_prefix
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import bind_arguments
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.project.summaries import ModuleSummary, Summariser
    from rnnfix.analysis.syntax.scopes import FuncNode


def regions_across_calls(
    ctx: FileContext,
    analysis: EvalGradAnalysis,
    local: list[EvalBackward],
    summarise: Summariser | None = None,
) -> list[EvalBackward]:
    """``summarise``: the project index's summariser
    (``rnnfix.analysis.project.summarise.summarise``), handed in by the rule:
    the classes of this file are read through their summary, and the index
    sits above this package. None: they are not read."""
    modes = ctx.facts.modes
    taken = {(id(r.sink), r.model) for r in local}
    own = OwnClasses(ctx.source, ctx.tree, str(ctx.path), summarise)
    out: list[EvalBackward] = []
    for scope in [None, *modes.index.functions]:
        if modes.in_lightning_module(scope):
            continue
        out.extend(
            r
            for r in _scope(ctx, analysis, modes, scope, own)
            if (id(r.sink), r.model) not in taken
        )
    return out


def _scope(
    ctx: FileContext,
    analysis: EvalGradAnalysis,
    modes: ModeFlow,
    scope: FuncNode | None,
    own: OwnClasses,
) -> Iterator[EvalBackward]:
    imports = ctx.facts.imports
    nodes = modes.index.scope_nodes(scope)
    calls = sorted((n for n in nodes if isinstance(n, ast.Call)), key=key)
    # (sink, the model it runs when one call is forward and backward)
    sinks: list[tuple[ast.Call, str | None]] = []
    info = modes.index.functions.get(scope) if scope is not None else None
    names = {*info.params, *info.kwonly} if info is not None else set()
    for call in calls:
        found = attribution(call, imports, analysis.assigned_values)
        if found is not None:
            model = forward_model(found.forward_func, modes.is_model, local_functions(modes, scope))
            if model is not None:
                sinks.append((call, model))
        elif analysis.is_sink(call):
            sinks.append((call, None))
        elif modes.project is not None and modes.index.resolve(call, scope) is None:
            # A function of another file that takes an input gradient through
            # a model it is given, in the mode it gets it (``Summary.entry_grads``).
            ext = modes.external(call, scope)
            for name in ext.summary.entry_grads if ext is not None else ():
                mine = ext.caller_key(name) if ext is not None else None
                if mine is not None and modes.is_model(mine):
                    sinks.append((call, mine))
        # A method of an object that stored the model at its construction
        # (``attack = PGD(model)``, a class of this file or another file of the
        # run; ``ClassSummary.ctor_grads``).
        if found is None and not analysis.is_sink(call) and _calls_object(call):
            built = _construction(analysis, call)
            stored = [
                *own.stored_gradients(call, built),
                *(modes.project.stored_gradients(call, built) if modes.project else ()),
            ]
            for mine in stored:
                if _rebound_since(nodes, names, mine, call) or not modes.is_model(mine):
                    continue  # ``attack = PGD(model); model = other``: not that model
                if (call, mine) not in sinks:
                    sinks.append((call, mine))
    if not sinks:
        return
    forwards = [c for c in modes.model_calls if c.function is scope and c.grad_enabled is not False]
    steps = [c for c in calls if modes.step_kind(c) == "optimizer_step"]
    feeding = {id(s.node) for s in modes.training_steps if s.feeds_optimizer_step}
    params = parameter_names(nodes)
    first: dict[str, EvalBackward] = {}  # per model, the scope's first region
    for sink, runs_model in sinks:
        if id(sink) in feeding:
            continue
        if runs_model is not None:
            by_model = {runs_model: [sink]}
        else:
            by_model = {}
            for c in forwards:
                if c.node is not sink and end_key(c.node) <= end_key(sink):
                    by_model.setdefault(c.model, []).append(c.node)
        for model, fwds in by_model.items():
            region = _region(
                ctx,
                analysis,
                modes,
                scope,
                calls,
                steps,
                params,
                sink,
                model,
                fwds,
                whole=runs_model is not None,
            )
            if region is None:
                continue
            # Later gradient code of the same model that the first region's
            # statement runs before shares its fix (one ``train()``, one block).
            earlier = first.setdefault(model, region)
            if earlier is not region and earlier.anchor is not None:
                if _runs_before(analysis, earlier.anchor, sink):
                    region = replace(region, anchor=earlier.anchor, forwards=earlier.forwards)
            yield region


def _calls_object(call: ast.Call) -> bool:
    """``obj.method(...)``, ``Cls(...).method(...)``, ``obj(...)`` or ``Cls(...)(...)``."""
    func = call.func
    return isinstance(func, (ast.Attribute, ast.Call)) or (
        isinstance(func, ast.Name) and not func.id[:1].isupper()
    )


def _rebound_since(nodes: list[ast.AST], params: set[str], name: str, call: ast.Call) -> bool:
    """``name`` (or what it is an attribute of) may be assigned another object
    between the object's construction and ``call``: conservatively, anywhere
    in the scope before ``call`` other than the first assignment of a local
    (``model = model.to(device)`` keeps the object)."""
    roots = {name, *(name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1))}
    stores = [
        n
        for n in nodes
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With))
        and key(n) < key(call)
        and any(
            dotted(t) in roots
            for t in (
                n.targets
                if isinstance(n, ast.Assign)
                else [i.optional_vars for i in n.items if i.optional_vars is not None]
                if isinstance(n, ast.With)
                else [n.target]
            )
        )
    ]
    new = [
        n
        for n in stores
        if isinstance(n, ast.AugAssign)
        or (value := getattr(n, "value", None)) is None
        or dotted(strip_self_returning(value)) not in roots
    ]
    # A parameter is bound on entry: any new object is another one.
    return len(new) > (0 if name.split(".")[0] in params else 1)


def _construction(
    analysis: EvalGradAnalysis, use: ast.Call
) -> Callable[[ast.expr], ast.Call | None]:
    """The one call an object name is assigned in the scope that binds it at
    ``use`` (``attack = PGD(model)``); None when it is assigned more than once."""

    def built(target: ast.expr) -> ast.Call | None:
        name = dotted(target)
        values = analysis.assigned_values(name, use) if name is not None else []
        if len(values) != 1:
            return None
        value = strip_self_returning(values[0])
        return value if isinstance(value, ast.Call) else None

    return built


def _region(
    ctx: FileContext,
    analysis: EvalGradAnalysis,
    modes: ModeFlow,
    scope: FuncNode | None,
    calls: list[ast.Call],
    steps: list[ast.Call],
    params: set[str],
    sink: ast.Call,
    model: str,
    fwds: list[ast.Call],
    whole: bool,
) -> EvalBackward | None:
    # The scope's own whole-model mode calls before a backward: the local
    # analysis's case (an eval), or provably not eval (a train). It does not
    # read a ``whole`` sink (forward and backward in one call: captum's
    # ``attribute``, a gradient helper of another file): the flow decides those.
    own = [
        c
        for c in calls
        if key(c) < key(sink) and (m := mode_call(c)) is not None and is_prefix(m[0], model)
    ]
    if own and not whole:
        return None
    facts: set[ModeFact] = set()
    for f in fwds:
        facts |= modes.mode_before(f, model).facts
    found = {f.mode for f in facts}
    if Mode.EVAL not in found or Mode.TRAIN in found:
        return None
    if any(analysis.step_may_update(s, model) for s in steps):
        return None

    def is_param(text: str) -> bool:
        return text.split(".")[0] in params or modes.holds_model(text)

    nodes = modes.index.scope_nodes(scope)
    if not whole and not input_gradient(nodes, sink, ctx.facts.imports, is_param):
        return None
    rnns = analysis.of_object(model, fwds[0])
    if not rnns:
        return None
    anchor = _anchor(analysis, fwds[0], sink)
    if anchor is None:
        return None
    origin = min((f for f in facts if f.mode is Mode.EVAL), key=_fact_position)
    # One call of this scope that runs before the gradient code on every path
    # (``accuracy(model, loader)``, captum's own ``model.eval()``) put the model
    # in eval: the RNN-only ``train()`` goes right after it, as for a local
    # ``eval()``, once for all the gradient code it reaches.
    evals = {f.origin for f in facts if f.mode is Mode.EVAL}
    source = next(iter(evals)) if len(evals) == 1 else None
    after: ast.stmt | None = None
    if isinstance(source, ast.Call) and modes.scope_of(source) is scope:
        stmt = analysis.statement(source)
        if stmt is not None and analysis.encloses(stmt, sink):
            after = stmt
    own_eval = source if isinstance(source, ast.Call) and mode_call(source) else None
    hi = end_key(sink)
    trains = [(m[0], c) for c in calls if (m := mode_call(c)) is not None and m[1] == "train"]
    lo = end_key(after) if after is not None else key(scope) if scope is not None else (0, 0)
    return EvalBackward(
        sink=sink,
        model=model,
        eval_call=own_eval if after is not None else None,
        eval_stmt=after,
        rnns=rnns,
        forwards=tuple(fwds),
        scope=scope if scope is not None else ctx.tree,
        rnn_train_done=analysis.rnn_train_done(model, rnns, trains, calls, lo, hi)
        or (
            all(s.path for s in rnns)
            and all(modes.mode_before(fwds[0], f"{model}.{s.path}").provably_train for s in rnns)
        ),
        cudnn_off_done=analysis.switched_off(fwds[0], sink)
        or all(analysis.under_cudnn_off(n) for n in (*fwds, sink)),
        origin=_origin_text(ctx, modes, origin, scope),
        anchor=anchor,
    )


def _anchor(analysis: EvalGradAnalysis, forward: ast.AST, sink: ast.Call) -> ast.stmt | None:
    """The statement around ``forward`` in the innermost block that also runs
    ``sink`` after it (or holds it): where the gradient code starts."""
    stmt = analysis.statement(forward)
    while stmt is not None:
        if _runs_before(analysis, stmt, sink):
            return stmt
        parent = analysis.parents.get(stmt)
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        stmt = analysis.statement(parent)
    return None


def _runs_before(analysis: EvalGradAnalysis, stmt: ast.stmt, sink: ast.Call) -> bool:
    return any(n is sink for n in ast.walk(stmt)) or analysis.encloses(stmt, sink)


def _fact_position(fact: ModeFact) -> tuple[int, int]:
    node = fact.cause if fact.cause is not None else fact.origin
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _origin_text(ctx: FileContext, modes: ModeFlow, fact: ModeFact, scope: FuncNode | None) -> str:
    """Where the eval mode comes from, for the message."""
    node = fact.cause if fact.cause is not None else fact.origin
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        # ``model = Net().eval()``: built in eval mode.
        for n in ast.walk(node.value):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr in ("eval", "train"):
                    args = ", ".join(ast.unparse(a) for a in n.args)
                    return f"`.{n.func.attr}({args})` on line {n.lineno}"
    if not isinstance(node, ast.Call):
        return "as its callers leave it"
    if mode_call(node) is not None:
        where = modes.scope_of(node)
        if where is None or where is scope:
            return f"`.eval()` on line {node.lineno}"
        if scope is not None and not any(caller is where for caller, _ in modes.callers(scope)):
            # The object's state: another public method of the class left it so.
            return f"after `{where.name}()` runs: `.eval()` on line {node.lineno}"
        return f"`.eval()` on line {node.lineno} in `{where.name}()`"
    name = dotted(node.func) or ctx.segment(node.func)
    if len(name) > 40:
        name = name.rsplit(".", 1)[-1]
    return f"left there by `{name}(...)` on line {node.lineno}"


def local_functions(
    modes: ModeFlow, scope: FuncNode | None
) -> Callable[[str], ast.FunctionDef | ast.AsyncFunctionDef | None]:
    """A name's function of this file as seen from ``scope`` (not a method)."""

    def lookup(name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        info = modes.index.lookup_function(name, scope)
        return info.node if info is not None and not info.is_method else None

    return lookup


class OwnClasses:
    """``ctor_grads`` for the classes of the file being checked: an object of a
    class of this file built with a model (``vs = VanillaSaliency(model)``)
    whose method takes input gradients through it. The file's own project
    summary, computed at the first construction of such a class only."""

    def __init__(
        self, source: str, tree: ast.Module, path: str, summarise: Summariser | None
    ) -> None:
        self._summarise = summarise
        self._source = source
        self._path = path
        self._classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
        self._summary: ModuleSummary | None = None
        self._done = False

    def stored_gradients(
        self, call: ast.Call, built: Callable[[ast.expr], ast.Call | None]
    ) -> tuple[str, ...]:
        """``ProjectView.stored_gradients`` for a class of this file."""
        func = call.func
        target, method = (
            (func.value, func.attr) if isinstance(func, ast.Attribute) else (func, "__call__")
        )
        stripped = strip_self_returning(target)
        ctor = stripped if isinstance(stripped, ast.Call) else built(target)
        name = ctor.func.id if ctor is not None and isinstance(ctor.func, ast.Name) else None
        if ctor is None or name is None or name not in self._classes or not self._summarise:
            return ()
        if not self._done:
            self._done = True
            self._summary = self._summarise(self._source, self._path)
        cls = self._summary.classes.get(name) if self._summary is not None else None
        params = cls.ctor_grads.get(method, ()) if cls is not None else ()
        if cls is None or not params:
            return ()
        args = bind_arguments(cls.init_params, cls.init_kwonly, True, ctor)
        return tuple(a for p in params if (a := args.get(p)) is not None)
