"""Names a module reads where nothing binds them: the engine's net under every fix.

A pyflakes-style check on ``ast``: each read of a name is resolved the way
Python resolves it (function locals, enclosing functions, class bodies that
functions do not see, module globals, builtins), and a read of a local is
checked against the bindings that reach it (flow-sensitive, per scope). The
engine compares the problems of a source before and after a fix; a fix that
adds one is dropped (``trainer.dispatch.train()`` inserted before ``trainer =
...``).

Three kinds of problem:

- ``undefined``: no scope binds the name (and it is no builtin);
- ``unbound``: the scope binds it, but on no path before this read;
- ``maybe-unbound``: bound on some paths to the read, not on all.

A module with ``from x import *`` binds names nobody can list: ``problems``
returns None and the net stands aside.
"""

from __future__ import annotations

import ast
import builtins
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from rnnfix.analysis.syntax.walks import walk_tree

Kind = Literal["undefined", "unbound", "maybe-unbound"]

# Module attributes every module has, and what IPython puts in a notebook's namespace.
_BUILTINS = frozenset(dir(builtins)) | {
    "__file__",
    "__name__",
    "__doc__",
    "__spec__",
    "__loader__",
    "__package__",
    "__path__",
    "__builtins__",
    "__annotations__",
    "__cached__",
    "__debug__",
    "__class__",
    "get_ipython",
    "display",
    "In",
    "Out",
}
# Inside a class body Python also provides these.
_CLASS_NAMES = frozenset({"__module__", "__qualname__"})


@dataclass(frozen=True)
class NameProblem:
    scope: str  # qualified name of the function or class, "<module>" at the top
    name: str
    kind: Kind
    line: int

    def describe(self) -> str:
        if self.kind == "undefined":
            return f"would read `{self.name}`, which nothing defines"
        if self.kind == "unbound":
            return f"would read `{self.name}` before it is assigned"
        return f"would read `{self.name}` where it may be unassigned"


def problems(tree: ast.Module) -> list[NameProblem] | None:
    """Every read in ``tree`` that may find its name unbound; None when a
    star import makes the module's names unknowable."""
    # One walk, the analyses' shared one: the rules read the same tree next.
    declared: set[str] = set()
    for n in walk_tree(tree):
        cls = n.__class__
        if cls is ast.ImportFrom:
            assert isinstance(n, ast.ImportFrom)
            if any(a.name == "*" for a in n.names):
                return None
        elif cls is ast.Global:
            assert isinstance(n, ast.Global)
            declared.update(n.names)
    module = _Scope("module", "<module>", None, tree.body)
    module.global_assigned = declared
    walker = _Walker(module)
    walker.run_module(tree)
    return walker.found


def introduced(before: Iterable[NameProblem], after: Iterable[NameProblem]) -> list[NameProblem]:
    """Problems of ``after`` that ``before`` did not have. Definite ones count
    (one more read of an unbound name is one more crash); a name that may be
    unassigned counts once per scope (another read of it on the same paths
    fails where the existing ones already do)."""
    old = list(before)
    counts = Counter(_key(p) for p in old if p.kind != "maybe-unbound")
    maybe = {(p.scope, p.name) for p in old if p.kind == "maybe-unbound"}
    new: list[NameProblem] = []
    for p in after:
        if p.kind == "maybe-unbound":
            if (p.scope, p.name) not in maybe:
                maybe.add((p.scope, p.name))
                new.append(p)
        elif counts[_key(p)] > 0:
            counts[_key(p)] -= 1
        else:
            new.append(p)
    return new


def _key(p: NameProblem) -> tuple[str, str, str]:
    return (p.scope, p.name, p.kind)


# --- scopes ---------------------------------------------------------------


ScopeKind = Literal["module", "function", "class", "comprehension"]


@dataclass
class _Scope:
    kind: ScopeKind
    qualname: str
    parent: _Scope | None
    body: list[ast.stmt] | list[ast.AST]
    bound: set[str] = field(default_factory=set)  # bound anywhere in this scope
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    # Module only: names a function declares ``global`` (it may bind them here).
    global_assigned: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        collector = _Bindings(self)
        for node in self.body:
            collector.visit(node)

    def is_local(self, name: str) -> bool:
        return (
            name in self.bound
            and name not in self.declared_global
            and name not in self.declared_nonlocal
        )


def _target_names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id


class _Bindings(ast.NodeVisitor):
    """Names a scope binds anywhere in its own body (not in nested scopes)."""

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.scope.bound.add(node.id)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.declared_nonlocal.update(node.names)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.bound.add(node.name)
        # Decorators, defaults, bases run in this scope.
        for d in node.decorator_list:
            self.visit(d)
        if isinstance(node, ast.ClassDef):
            for b in [*node.bases, *(k.value for k in node.keywords)]:
                self.visit(b)
        else:
            for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
                self.visit(d)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _def

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(d)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        # The first iterable runs here; a walrus inside binds here (PEP 572).
        self.visit(node.generators[0].iter)
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.scope.bound.add(sub.target.id)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.scope.bound.add(a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            self.scope.bound.add(a.asname or a.name)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.scope.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.scope.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.scope.bound.add(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.scope.bound.add(node.rest)
        self.generic_visit(node)

    # Python 3.12 type parameters open their own scope: nothing bound here.
    def visit_TypeAlias(self, node: ast.AST) -> None:
        name = getattr(node, "name", None)
        if isinstance(name, ast.Name):
            self.scope.bound.add(name.id)


# --- flow -----------------------------------------------------------------


@dataclass
class _State:
    """Names bound on every path here (``must``) and on some path (``may``);
    ``dead``: no path reaches here (after return/raise/break/continue)."""

    must: set[str] = field(default_factory=set)
    may: set[str] = field(default_factory=set)
    dead: bool = False

    def copy(self) -> _State:
        return _State(set(self.must), set(self.may), self.dead)

    def bind(self, name: str) -> None:
        self.must.add(name)
        self.may.add(name)

    def unbind(self, name: str) -> None:
        self.must.discard(name)
        self.may.discard(name)


def _join(states: Iterable[_State]) -> _State:
    live = [s for s in states if not s.dead]
    if not live:
        return _State(dead=True)
    must = set.intersection(*(s.must for s in live))
    may = set.union(*(s.may for s in live))
    return _State(must, may)


class _Walker:
    """Walks one scope's statements in execution order, checking every read."""

    def __init__(self, scope: _Scope, found: list[NameProblem] | None = None) -> None:
        self.scope = scope
        self.found: list[NameProblem] = [] if found is None else found
        self.state = _State()
        self.outer: _Walker | None = None  # comprehensions: the walker they run in

    # --- entry points ---
    def run_module(self, tree: ast.Module) -> None:
        self._block(tree.body)

    def _child(self, scope: _Scope, bound: Iterable[str] = ()) -> _Walker:
        child = _Walker(scope, self.found)
        for name in bound:
            child.state.bind(name)
        return child

    # --- reads ---
    def _read(self, name: str, line: int) -> None:
        if self.state.dead:
            return  # unreachable code reads nothing
        kind = self._resolve(name)
        if kind is not None:
            self.found.append(NameProblem(self.scope.qualname, name, kind, line))

    def _resolve(self, name: str) -> Kind | None:
        scope = self.scope
        if scope.kind == "comprehension":
            # Its own variables are bound before any read of them; the rest
            # is read from the enclosing scope as it is now (class bodies
            # excepted: a comprehension does not see them).
            if scope.is_local(name):
                return None
            outer = self.outer
            assert outer is not None
            if outer.scope.kind == "class":
                return self._enclosing(outer.scope.parent, name)
            return outer._resolve(name)
        if scope.kind == "class":
            if name in self.state.must or name in _CLASS_NAMES:
                return None
            # An unbound class-level name falls back to globals and builtins.
            fallback = self._enclosing(scope.parent, name)
            if name in self.state.may and fallback is not None:
                return "maybe-unbound"
            return fallback
        if name in scope.declared_nonlocal:
            return None
        if name in scope.declared_global:
            return self._global(name)
        if scope.kind == "module" or scope.is_local(name):
            if name in self.state.must:
                return None
            if scope.kind == "module" and (name in _BUILTINS or self._global_elsewhere(name)):
                return None
            if name in self.state.may:
                return "maybe-unbound"
            return "unbound" if name in scope.bound else "undefined"
        return self._enclosing(scope.parent, name)

    def _enclosing(self, scope: _Scope | None, name: str) -> Kind | None:
        """A free name, looked up at call time: enclosing functions (class
        bodies are skipped), then the module, then builtins."""
        while scope is not None and scope.kind != "module":
            if scope.kind in ("function", "comprehension") and (
                scope.is_local(name) or name in scope.declared_nonlocal
            ):
                return None
            if scope.kind == "function" and name in scope.declared_global:
                break
            scope = scope.parent
        return self._global(name)

    def _global(self, name: str) -> Kind | None:
        module = self._module()
        if name in module.bound or name in _BUILTINS or self._global_elsewhere(name):
            return None
        return "undefined"

    def _module(self) -> _Scope:
        scope = self.scope
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def _global_elsewhere(self, name: str) -> bool:
        """Bound at module level by a function that declares it ``global``."""
        return name in self._module().global_assigned

    # --- statements ---
    def _block(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _stmt(self, node: ast.stmt) -> None:  # noqa: C901 - one case per statement kind
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function_def(node)
        elif isinstance(node, ast.ClassDef):
            self._class_def(node)
        elif isinstance(node, ast.Assign):
            self._expr(node.value)
            for t in node.targets:
                self._store(t)
        elif isinstance(node, ast.AugAssign):
            self._expr(node.value)
            if isinstance(node.target, ast.Name):
                self._read(node.target.id, node.lineno)
            self._store(node.target)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._expr(node.value)
                self._store(node.target)
            elif not isinstance(node.target, ast.Name):
                self._store(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._expr(node.iter)
            self._loop(node, node.body, node.orelse, target=node.target)
        elif isinstance(node, ast.While):
            self._expr(node.test)
            self._loop(node, node.body, node.orelse)
        elif isinstance(node, ast.If):
            self._expr(node.test)
            self._branches([node.body, node.orelse])
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._store(item.optional_vars)
            self._block(node.body)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self._try(node)  # type: ignore[arg-type]
        elif isinstance(node, ast.Match):
            self._match(node)
        elif isinstance(node, (ast.Return, ast.Raise)):
            for child in ast.iter_child_nodes(node):
                self._expr(child)
            self.state.dead = True
        elif isinstance(node, (ast.Break, ast.Continue)):
            self.state.dead = True
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                self._delete(t)
        elif isinstance(node, ast.Import):
            for a in node.names:
                self.state.bind(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                self.state.bind(a.asname or a.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Pass)):
            pass
        else:  # Expr, Assert, TypeAlias, ...
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._expr(child)
            name = getattr(node, "name", None)
            if isinstance(name, ast.Name):
                self.state.bind(name.id)

    def _function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self._expr(d)
        for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self._expr(d)
        self.state.bind(node.name)
        self._function_body(node.name, node.args, node.body)

    def _function_body(self, name: str, args: ast.arguments, body: list[ast.stmt]) -> None:
        params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        scope = _Scope("function", self._qualify(name), self.scope, body)
        scope.bound.update(params)
        self._child(scope, params)._block(body)

    def _qualify(self, name: str) -> str:
        return name if self.scope.kind == "module" else f"{self.scope.qualname}.{name}"

    def _class_def(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list:
            self._expr(d)
        for b in [*node.bases, *(k.value for k in node.keywords)]:
            self._expr(b)
        scope = _Scope("class", self._qualify(node.name), self.scope, node.body)
        self._child(scope)._block(node.body)
        self.state.bind(node.name)

    def _loop(
        self,
        node: ast.stmt,
        body: list[ast.stmt],
        orelse: list[ast.stmt],
        target: ast.expr | None = None,
    ) -> None:
        entry = self.state.copy()
        # From the second iteration on, whatever the body binds may be bound.
        again = _bound_in(body) | (set(_target_names(target)) if target is not None else set())
        self.state = entry.copy()
        self.state.may |= again
        if target is not None:
            self._store(target)
        self._block(body)
        # After the loop: the body may have run zero times, or stopped anywhere.
        after = entry.copy()
        after.may |= again
        after.dead = entry.dead
        self.state = after
        self._block(orelse)
        self.state.may |= _bound_in(orelse)

    def _branches(self, blocks: Iterable[list[ast.stmt]]) -> None:
        entry = self.state
        ends = []
        for block in blocks:
            self.state = entry.copy()
            self._block(block)
            ends.append(self.state)
        self.state = _join(ends)

    def _try(self, node: ast.Try) -> None:
        entry = self.state.copy()
        self._block(node.body)
        self._block(node.orelse)
        ends = [self.state]
        # A handler may start after any statement of the body.
        raised = entry.copy()
        raised.may |= _bound_in(node.body)
        for handler in node.handlers:
            self.state = raised.copy()
            if handler.type is not None:
                self._expr(handler.type)
            if handler.name:
                self.state.bind(handler.name)
            self._block(handler.body)
            if handler.name:
                self.state.unbind(handler.name)  # Python deletes it at the end
            ends.append(self.state)
        after = _join(ends)
        if node.finalbody:
            # Reads in ``finally`` may run after any of it; the code after the
            # statement runs only on the normal paths.
            self.state = entry.copy()
            self.state.may |= after.may | raised.may
            self._block(node.finalbody)
            in_finally = self.state
            after.must |= in_finally.must - entry.must
            after.may |= in_finally.may
            after.dead = after.dead or in_finally.dead
        self.state = after

    def _match(self, node: ast.Match) -> None:
        self._expr(node.subject)
        entry = self.state
        ends = [entry.copy()]  # no case may match
        for case in node.cases:
            self.state = entry.copy()
            for name in _pattern_names(case.pattern):
                self.state.bind(name)
            for child in ast.walk(case.pattern):
                if isinstance(child, ast.expr):
                    self._expr(child)
            if case.guard is not None:
                self._expr(case.guard)
            self._block(case.body)
            ends.append(self.state)
        self.state = _join(ends)

    def _store(self, target: ast.expr) -> None:
        # Names get bound; subscripts and attributes read their object.
        if isinstance(target, ast.Name):
            self.state.bind(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._store(elt)
        elif isinstance(target, ast.Starred):
            self._store(target.value)
        else:
            self._expr(target)

    def _delete(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self._read(target.id, target.lineno)
            self.state.unbind(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._delete(elt)
        else:
            self._expr(target)

    # --- expressions ---
    def _expr(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self._read(node.id, node.lineno)
            return
        if isinstance(node, ast.NamedExpr):
            self._expr(node.value)
            self._walrus(node.target.id)
            return
        if isinstance(node, ast.Lambda):
            for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
                self._expr(d)
            body = ast.Return(value=node.body, lineno=node.lineno, col_offset=node.col_offset)
            self._function_body("<lambda>", node.args, [body])
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self._comprehension(node)
            return
        for child in ast.iter_child_nodes(node):
            self._expr(child)

    def _walrus(self, name: str) -> None:
        # In a comprehension the walrus binds in the enclosing function.
        walker: _Walker | None = self
        while walker is not None:
            walker.state.bind(name)
            walker = walker.outer if walker.scope.kind == "comprehension" else None

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        first = node.generators[0]
        self._expr(first.iter)
        scope = _Scope("comprehension", self.scope.qualname, self.scope, [])
        for gen in node.generators:
            scope.bound.update(_target_names(gen.target))
        child = self._child(scope)
        child.outer = self
        for gen in node.generators:
            if gen is not first:
                child._expr(gen.iter)
            child._store(gen.target)
            for cond in gen.ifs:
                child._expr(cond)
        if isinstance(node, ast.DictComp):
            child._expr(node.key)
            child._expr(node.value)
        else:
            child._expr(node.elt)


def _bound_in(body: Iterable[ast.stmt]) -> set[str]:
    """Names a block binds anywhere (not in nested functions or classes' bodies)."""
    scope = _Scope("function", "", None, list(body))
    return scope.bound


def _pattern_names(pattern: ast.pattern) -> Iterator[str]:
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest
