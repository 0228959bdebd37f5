"""The whole-file pass of the mode flow: every scope of the file interpreted
once (``rnnfix.analysis.modes.flow.ScopeRun``), callers before callees, so that a
function is entered in the join of the states its callers in this file call it
with.

A function no caller of this file reaches is entered in an unknown mode, and a
public method of a plain-Python class (an entry point such as ``fit()``) also
in the eval mode any public method of its object may leave a model in: the
constructor and other methods, those inherited from bases of this file or of
another file of the run, and (for a method called here too) those that other
files of the run call before it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.flow import ScopeRun
from rnnfix.analysis.modes.modeapi import has_mode_setter
from rnnfix.analysis.modes.state import Facts, ModeFact, is_prefix
from rnnfix.analysis.syntax.scopes import FuncNode, Resolved
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.project.summaries import FunctionSummary


class FilePass:
    """The runs of one file's scopes (``runs``) and the calls of each
    function of the file (``sites``), filled by ``analyse``."""

    def __init__(self, flow: FlowView) -> None:
        self.flow = flow
        self.runs: dict[FuncNode | None, ScopeRun] = {}
        self.sites: dict[FuncNode, list[tuple[FuncNode | None, ast.Call, Resolved]]] = {}

    def analyse(self) -> None:
        for scope in self.flow.scopes():
            for node in self.flow.scope_calls(scope):
                if isinstance(node, ast.Call):
                    res = self.flow.resolve(node, scope)
                    if res is not None:
                        self.sites.setdefault(res.callee.node, []).append((scope, node, res))
        for scope in self._callers_first():
            if scope is None:
                run = ScopeRun(
                    self.flow,
                    None,
                    self.flow.tree,
                    lambda _key: frozenset({ModeFact(Mode.UNKNOWN, self.flow.tree)}),
                )
                run.run(self.flow.tree.body)
            else:
                run = ScopeRun(self.flow, scope, scope, self._entry(scope))
                run.run(scope.body)
            self.runs[scope] = run

    def _callers_first(self) -> list[FuncNode | None]:
        """Scopes in an order where callers come before callees (recursion aside)."""
        callees: dict[FuncNode | None, list[FuncNode]] = {}
        for callee, sites in self.sites.items():
            for scope, _, _ in sites:
                callees.setdefault(scope, []).append(callee)
        order: list[FuncNode | None] = []
        seen: set[FuncNode | None] = set()

        # Iterative post-order DFS: a call chain thousands of functions long
        # (generated code) must not hit Python's recursion limit.
        for root in [None, *self.flow.index.functions]:
            if root in seen:
                continue
            seen.add(root)
            stack: list[tuple[FuncNode | None, Iterator[FuncNode]]] = [
                (root, iter(callees.get(root, [])))
            ]
            while stack:
                scope, pending = stack[-1]
                for c in pending:
                    if c not in seen:
                        seen.add(c)
                        stack.append((c, iter(callees.get(c, []))))
                        break
                else:
                    stack.pop()
                    order.append(scope)
        order.reverse()
        # functions nobody calls go first too; module stays before its callees
        return order

    def _entry(self, fn: FuncNode) -> Callable[[str], Facts]:
        unknown = frozenset({ModeFact(Mode.UNKNOWN, fn)})
        cache: dict[str, Facts] = {}
        # A name the function binds (not a parameter) is unbound when it is
        # entered: no caller's value reaches it (CloserLookFewShot's
        # ``linear_clf``, built in an if/elif with no else, was "unknown as
        # set_forward_adaptation receives it").
        info = self.flow.index.functions.get(fn)
        a = fn.args
        passed = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        own = info.locals - passed if info is not None else set()

        def lookup(key: str) -> Facts:
            found = cache.get(key)
            if found is not None:
                return found
            if key.split(".")[0] in own:
                return frozenset()
            cache[key] = unknown  # guards against recursion
            facts: set[ModeFact] = set()
            for caller, call, res in self.sites.get(fn, []):
                run = self.runs.get(caller)
                frame = run.call_frames.get(call) if run is not None else None
                if frame is None or run is None:
                    continue  # caller not analysed yet (recursion) or unreachable
                mine = res.caller_key(key)
                if mine is None:
                    facts.add(ModeFact(Mode.UNKNOWN, fn))
                    continue
                for f in frame.lookup(mine):
                    cause = f.cause if f.origin is run.scope_node else f.origin
                    facts.add(ModeFact(f.mode, fn, cause))
            result = frozenset(facts) if facts else unknown
            if not self.sites.get(fn):
                result |= self._object_state(fn, key)
            elif self._object_state(fn, key):
                # Called here, but maybe also on instances in other files of
                # the run (asked only when a method may leave the model in
                # eval): what runs there before it counts.
                before = self._run_predecessors(fn)
                if before:
                    result |= self._object_state(fn, key, before)
            cache[key] = result
            return result

        return lookup

    def _object_state(self, fn: FuncNode, key: str, only: frozenset[str] | None = None) -> Facts:
        """A public method nobody in the file calls (an entry point such as
        ``fit()``) may run after any public method of its object: it is
        entered with ``self.<model>`` in the mode any of them (the
        constructor included, and those inherited from a base of this file
        or of another file of the run) may leave it in. Only eval matters: a
        ``predict()`` that never restores train mode breaks the next
        ``fit()``. ``only``: the methods that may run before it (what the
        callers in other files of the run do)."""
        info = self.flow.index.functions.get(fn)
        if info is None or info.cls is None or not info.is_method or not _public(fn.name):
            return frozenset()
        cls = info.cls
        if cls.name in self.flow.classes.modules or cls.name in self.flow.classes.lightning:
            return frozenset()  # a module's own mode is its caller's business
        this, _, rest = key.partition(".")
        if this != info.params[0] or not rest:
            return frozenset()
        if has_mode_setter(self.flow, fn, key, Mode.TRAIN):
            return frozenset()  # its callers switch it back to train (``agent.train()``)
        out: set[ModeFact] = set()
        for name, method in self.public_methods(cls).items():
            if only is not None and name not in only:
                continue
            if isinstance(method, FuncNode):
                other = self.flow.index.functions.get(method)
                if other is None or not other.is_method:
                    continue
                mine = f"{other.params[0]}.{rest}"
                effect = self.flow.summary(other).effects.get(mine)
                if effect is None or Mode.EVAL not in effect.sets:
                    continue
                cause: ast.AST = next(
                    (
                        c.node
                        for c in self.flow.mode_calls
                        if c.function is method and c.mode is Mode.EVAL and is_prefix(c.model, mine)
                    ),
                    method,
                )
            else:  # a base's method in another file: the base names it here
                fs, cause = method
                if not fs.is_method or not fs.params:
                    continue
                effect = fs.summary.effects.get(f"{fs.params[0]}.{rest}")
                if effect is None or Mode.EVAL not in effect.sets:
                    continue
            out.add(ModeFact(Mode.EVAL, fn, cause))
        return frozenset(out)

    def public_methods(
        self, cls: ast.ClassDef
    ) -> dict[str, FuncNode | tuple[FunctionSummary, ast.expr]]:
        """The public methods of ``cls`` by name, with those it inherits from
        its bases in this file and in other files of the run (those with the
        base expression that names them here); the nearest definition wins."""
        out: dict[str, FuncNode | tuple[FunctionSummary, ast.expr]] = {}
        todo: list[ast.ClassDef] = [cls]
        seen: set[str] = set()
        while todo:
            current = todo.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            for stmt in current.body:
                if isinstance(stmt, FuncNode) and _public(stmt.name):
                    out.setdefault(stmt.name, stmt)
            for base in current.bases:
                local = self.flow.index.classes.get(base.id) if isinstance(base, ast.Name) else None
                if local is not None:
                    todo.append(local)
                    continue
                found = (
                    self.flow.project.lookup_class(base) if self.flow.project is not None else None
                )
                if found is not None:
                    for name, fs in found.methods.items():
                        if _public(name):
                            out.setdefault(name, (fs, base))
        return out

    def _run_predecessors(self, fn: FuncNode) -> frozenset[str]:
        """The methods other files of the run may call on an instance of
        ``fn``'s class before ``fn`` (``__init__`` for the constructor)."""
        info = self.flow.index.functions.get(fn)
        if self.flow.project is None or info is None or info.cls is None or not _public(fn.name):
            return frozenset()
        cls = info.cls
        if self.flow.parents.get(cls) is not self.flow.tree:
            return frozenset()  # only module-level classes can be imported
        order = self.flow.project.method_order(cls.name)
        return frozenset(a for a, b in order if b == fn.name)


def _public(name: str) -> bool:
    """A method a user of the object calls: not ``_private``; the constructor counts."""
    return name == "__init__" or not name.startswith("_")
