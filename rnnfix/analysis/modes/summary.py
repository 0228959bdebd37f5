"""Function summaries: what a call to a function of this file does, in the
function's own names (``records.Summary``).

A summary is computed on demand from one interpretation of the function
(``rnnfix.analysis.modes.flow.ScopeRun``) entered in an unknown mode: the modes it
leaves each key in (its effects), the keys it calls with grad enabled, whether
it runs an optimizer step; for the project index also the keys a training step
or an input gradient uses in the mode the caller left them in. Summaries
compute one another through the calls they meet; a chain deeper than
``_MAX_SUMMARY_DEPTH`` is computed again callees first, by an iterative walk.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.flow import ScopeRun
from rnnfix.analysis.modes.gradentry import entry_gradients
from rnnfix.analysis.modes.records import Effect, ObjectCall, Summary
from rnnfix.analysis.modes.state import ModeFact
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.scopes import FuncNode, FunctionInfo
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.modes.gradmode import GradModes

_ASSIGNMENTS = frozenset({ast.Assign, ast.AnnAssign})  # ``AugAssign`` sets no model


# Summaries computed inside one another before the flow switches to an
# iterative walk (each level costs several Python frames).
_MAX_SUMMARY_DEPTH = 40


class _TooDeep(RecursionError):
    """A summary chain reached ``_MAX_SUMMARY_DEPTH`` (a RecursionError: if
    even the iterative walk meets it, the file fails as too deep)."""


class Summaries:
    """The summaries of one file's functions, each computed once."""

    def __init__(self, flow: FlowView, grads: GradModes) -> None:
        self.flow = flow
        self.grads = grads
        self._summaries: dict[FuncNode, Summary] = {}
        self._in_progress: set[FuncNode] = set()
        self._depth = 0  # summaries being computed inside one another
        # Per function: the index in its body of the first statement that
        # holds a ``return`` (len(body) when none): ``_on_every_path`` asks
        # it for every call, so it is read once.
        self._first_return: dict[FuncNode, int] = {}

    def summary(self, info: FunctionInfo) -> Summary:
        fn = info.node
        done = self._summaries.get(fn)
        if done is not None:
            return done
        if fn in self._in_progress:  # recursion: assume it changes nothing
            return Summary({}, (), False)
        if self._depth == 0:
            try:
                return self._summary(info)
            except _TooDeep:
                # A call chain deeper than Python's stack allows (generated
                # code): compute the callees first, one at a time, then retry.
                self._in_progress.clear()
                self._summaries_callees_first(fn)
                return self._summary(info)
        if self._depth >= _MAX_SUMMARY_DEPTH:
            raise _TooDeep
        return self._summary(info)

    def _summaries_callees_first(self, root: FuncNode) -> None:
        """Summaries of what ``root`` calls, deepest first, by an iterative
        walk: a function on the walk's stack counts as in progress, as it would
        in the recursive computation, so no summary recurses more than a step."""
        stack: list[tuple[FuncNode, Iterator[FuncNode]]] = [(root, self._callees(root))]
        seen = {root}
        while stack:
            fn, pending = stack[-1]
            for c in pending:
                if c not in seen and c not in self._summaries:
                    seen.add(c)
                    stack.append((c, self._callees(c)))
                    break
            else:
                stack.pop()
                if fn is root:
                    break
                self._in_progress = {f for f, _ in stack}
                try:
                    self._summary(self.flow.index.functions[fn])
                finally:
                    self._in_progress = set()

    def _callees(self, fn: FuncNode) -> Iterator[FuncNode]:
        for call in self.flow.scope_calls(fn):
            res = self.flow.resolve(call, fn)
            if res is not None:
                yield res.callee.node

    def _summary(self, info: FunctionInfo) -> Summary:
        fn = info.node
        self._in_progress.add(fn)
        self._depth += 1
        try:
            entry_fact = frozenset({ModeFact(Mode.UNKNOWN, fn)})
            run = ScopeRun(self.flow, fn, fn, lambda _key: entry_fact)
            # Without anything that can set a mode, the run would end with the
            # entry facts only (no effect) and compute no other summary.
            end = None if not self.flow.summaries_only and self._inert(fn) else run.run(fn.body)
            effects: dict[str, Effect] = {}
            if end is not None:
                params = {*info.params, *info.kwonly}
                for key, facts in end.values.items():
                    sets = frozenset(
                        f.mode
                        for f in facts
                        if f.origin is not fn and not _rebinds_parameter(f, key, params)
                    )
                    if sets:
                        effects[key] = Effect(any(f.origin is fn for f in facts), sets)
            forwards = self._forwards(info)
            entry_trains = (
                self._entry_trains(info, run, forwards) if self.flow.summaries_only else ()
            )
            steps = self._runs_optimizer_step(info)
            grads = self.flow.summaries_only and not steps
            entry_grads = entry_gradients(self.flow, info, run) if grads else ()
            objects = self._object_calls(info)
            summary = Summary(effects, forwards, steps, entry_trains, entry_grads, objects)
        finally:
            self._in_progress.discard(fn)
            self._depth -= 1
        self._summaries[fn] = summary
        return summary

    def _inert(self, fn: FuncNode) -> bool:
        """Nothing in ``fn``'s own code can give a model a fact of its own in
        the interpreter (``flow.ScopeRun``): no mode call (nor ``train(was)``),
        no call of a function of this file (nor of another file of the run
        with effects), no read of ``.training``, no assignment to a model."""
        for node in self.flow.index.scope_nodes(fn):
            cls = node.__class__
            if cls is ast.Call:
                assert isinstance(node, ast.Call)
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in ("train", "eval"):
                    return False
                if module_mode_switch(node) is not None or self.flow.resolve(node, fn) is not None:
                    return False
                ext = self.flow.external(node, fn)
                if ext is not None and ext.summary.effects:
                    return False
            elif cls is ast.Attribute:
                assert isinstance(node, ast.Attribute)
                if node.attr == "training":
                    return False
            elif cls in _ASSIGNMENTS:
                # ``ScopeRun.assign`` sets a target (or an element of a tuple
                # target) that is a model.
                assert isinstance(node, (ast.Assign, ast.AnnAssign))
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stack = list(targets)  # tuple targets at any depth (``assignment_pairs``)
                while stack:
                    t = stack.pop()
                    if isinstance(t, (ast.Tuple, ast.List)):
                        stack.extend(t.elts)
                    elif (key := dotted(t)) is not None and self.flow.is_model(key):
                        return False
        return True

    def _entry_trains(
        self, info: FunctionInfo, run: ScopeRun, forwards: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Keys a training step of ``info`` (or of a function it calls) may use
        while they are still in the mode the caller left them in."""
        fn = info.node
        out: list[str] = []
        for node in self.flow.scope_calls(fn):
            if self.flow.step_kind(node) is not None:
                keys: tuple[str, ...] = forwards
            else:
                callee = self.callee_summary(node, fn)
                if callee is None:
                    continue
                summary, mapper = callee
                keys = tuple(k for k in map(mapper, summary.entry_trains) if k is not None)
            stmt = self.flow.stmt_of(node)
            frame = run.before.get(stmt) if stmt is not None else None
            if frame is None:
                continue  # unreachable
            for key in keys:
                if key not in out and any(f.origin is fn for f in frame.lookup(key)):
                    out.append(key)
        return tuple(out)

    def callee_summary(
        self, call: ast.Call, scope: FuncNode | None
    ) -> tuple[Summary, Callable[[str], str | None]] | None:
        """The summary of the function ``call`` runs (of this file, else of
        another file of the run) and the map from its names to the caller's."""
        res = self.flow.index.resolve(call, scope)
        if res is not None:
            return self.flow.summary(res.callee), res.caller_key
        ext = self.flow.external(call, scope)
        if ext is not None:
            return ext.summary, ext.caller_key
        return None

    def _forwards(self, info: FunctionInfo) -> tuple[str, ...]:
        if self.grads.decorator_grad(info.node) is False:
            return ()
        found: list[tuple[tuple[int, int], str]] = []
        for node in self.flow.scope_calls(info.node):
            if not isinstance(node, ast.Call) or self.grads.local_grad(node) is False:
                continue
            end = (node.end_lineno or 0, node.end_col_offset or 0)
            direct = self.flow.forward_key(node)
            if direct is not None:
                found.append((end, self.flow.canonical(direct, info.node)))
                continue
            callee = self.callee_summary(node, info.node)
            if callee is not None:
                summary, mapper = callee
                for key in summary.forwards:
                    mine = mapper(key)
                    if mine is not None:
                        found.append((end, mine))
            for summary, mapper in self._override_summaries(node, info):
                for key in summary.forwards:
                    mine = mapper(key)
                    if mine is not None:
                        found.append((end, mine))
        found.sort(key=lambda item: item[0])  # inner calls end first: evaluation order
        return tuple(dict.fromkeys(key for _, key in found))

    def _override_summaries(
        self, call: ast.Call, info: FunctionInfo
    ) -> list[tuple[Summary, Callable[[str], str | None]]]:
        """``self.apply_model(model, x)`` in a method of a base class: the
        same-parameter overrides of ``apply_model`` in the file's subclasses
        may run instead (a template method whose base body returns None:
        LM-LSTM-CRF's ``predict.output_batch``). Their forwards count, when
        none of them switches a mode or trains (which one runs is not known)."""
        if not info.is_method:
            return []
        res = self.flow.index.resolve(call, info.node)
        if res is None or res.receiver != info.params[0]:
            return []
        base = res.callee
        if base.cls is None:
            return []
        out: list[tuple[Summary, Callable[[str], str | None]]] = []
        for sub in self.flow.index.subclasses(base.cls):
            for stmt in sub.body:
                if not (isinstance(stmt, ast.FunctionDef) and stmt.name == base.node.name):
                    continue
                over = self.flow.index.functions.get(stmt)
                if over is None or over.params != base.params or over is info:
                    continue
                summary = self.flow.summary(over)
                if summary.effects or summary.optimizer_step:
                    return []  # one sets a mode or trains: which runs matters, and is unknown
                out.append((summary, replace(res, callee=over).caller_key))
        return out

    def _object_calls(self, info: FunctionInfo) -> tuple[ObjectCall, ...]:
        """Methods ``info`` calls as statements (for their effect; itself or
        through the functions it calls) on a parameter whose class nothing
        here resolves (``encode_data(model, ...)`` running ``model.val_start()``,
        the class in a file this one does not import): a caller that knows
        the class applies their effects. In call order."""
        fn = info.node
        params = {*info.params, *info.kwonly}
        if info.is_method and info.params:
            # ``self.x.reset()``: a caller knows the class of what it passes,
            # not of the attributes of the object it calls the method on.
            params.discard(info.params[0])
        found: list[tuple[tuple[int, int], ObjectCall]] = []
        for node in self.flow.scope_calls(fn):
            end = (node.end_lineno or 0, node.end_col_offset or 0)
            callee = self.callee_summary(node, fn)
            if callee is not None:
                summary, mapper = callee
                for inner in summary.object_calls:
                    mine = mapper(inner.key)
                    if mine is not None:
                        always = inner.always and self._on_every_path(node, fn)
                        found.append((end, ObjectCall(mine, inner.method, always)))
                continue
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr in ("train", "eval"):
                continue
            if not isinstance(self.flow.parents.get(node), ast.Expr):
                continue  # its value is used: called for a result, not for its effect
            receiver = dotted(func.value)
            if receiver is None or receiver.split(".")[0] not in params:
                continue
            if module_mode_switch(node) is not None:
                continue
            key = self.flow.canonical(receiver, fn)
            found.append((end, ObjectCall(key, func.attr, self._on_every_path(node, fn))))
        found.sort(key=lambda item: item[0])  # inner calls end first: evaluation order
        return tuple(dict.fromkeys(call for _, call in found))

    def _on_every_path(self, node: ast.AST, fn: FuncNode) -> bool:
        """``node`` runs whenever ``fn`` returns normally: no branch, loop or
        handler of ``fn`` lies between them, and no ``return`` comes before it
        in ``fn``'s own body (an early exit skips it)."""
        flow = self.flow
        parent = flow.parents.get(node)
        while parent is not None and parent is not fn:
            if isinstance(parent, _CONDITIONAL):
                return False
            parent = flow.parents.get(parent)
        first_return = self._first_return.get(fn)
        if first_return is None:
            first_return = next(
                (
                    i
                    for i, s in enumerate(fn.body)
                    if any(isinstance(n, ast.Return) for n in ast.walk(s))
                ),
                len(fn.body),
            )
            self._first_return[fn] = first_return
        stmt = flow.stmt_of(node)
        for i, s in enumerate(fn.body):
            if s is stmt:
                return i <= first_return
        # Not a statement of fn's own body (inside a ``with``): no return
        # anywhere in the body.
        return first_return == len(fn.body)

    def _runs_optimizer_step(self, info: FunctionInfo) -> bool:
        for node in self.flow.scope_calls(info.node):
            if isinstance(node, ast.Call):
                if self.flow.step_kind(node) == "optimizer_step":
                    return True
                callee = self.callee_summary(node, info.node)
                if callee is not None and callee[0].optimizer_step:
                    return True
        return False


# Where a call may run on some paths only (a branch, a loop that may not
# iterate, a handler, a short-circuit, a comprehension).
_CONDITIONAL = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.ExceptHandler,
    ast.Match,
    ast.BoolOp,
    ast.comprehension,
)


def _rebinds_parameter(fact: ModeFact, key: str, params: set[str]) -> bool:
    """``model = accelerator.unwrap_model(model)`` inside a helper: the name
    now holds another object (or the same one, in the mode it had), and
    nothing was switched on the object the caller passed. Only a bare
    parameter name: rebinding ``self.model`` changes what the caller sees."""
    return (
        fact.mode is Mode.UNKNOWN
        and key in params
        and isinstance(fact.origin, (ast.Assign, ast.AnnAssign, ast.AugAssign))
    )
