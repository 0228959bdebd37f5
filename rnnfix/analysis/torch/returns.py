"""What a function returns, as far as a data-parallel wrapper proof needs it.

RNF002 rewrites ``W.module.train()`` to ``W.train()`` safely only when ``W``
is provably a ``DataParallel``/``DistributedDataParallel``/FSDP wrapper. The
wrapper often reaches ``W`` through a helper::

    model = to_cuda(nn.DataParallel(net))     # def to_cuda(m): return m.cuda()
    self.model = self.load_model(path)        # builds and returns the wrapper
    model = build_parallel(cfg)               # a factory in another file

A function's ``Returns`` says that *every* path through it returns a wrapper,
or returns one of its parameters unchanged (``m``, ``m.cuda()``,
``m.to(dev)``: the self-returning methods of ``torchapi``). Anything else is
unknown (None): a path that returns something else, falls off the end, a
generator, a value assigned in a loop or a ``try``. A helper that returns the
wrapper on some paths only (``if n_gpu > 1: model = DataParallel(model)``;
``return model``) is unknown, so it proves nothing.

Values are read from assignments only: a name's value at a statement is what
the assignments that may reach it (found walking back through the blocks
before it; an ``if`` joins its branches) bind it to. ``torch.compile`` passes
its argument's layers through but returns another object, so it is not a
wrapper here.

``ReturnFacts`` works on one file; calls into other files of the run go
through ``ProjectView.returns`` (``rnnfix.analysis.project.index``), whose
summaries are ``ReturnFacts.summaries()`` of those files: plain, picklable
``Returns``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import FUNCTIONS, LOOPS, block_of, enclosing_stmt, tree_parents
from rnnfix.analysis.torch.api import DATA_PARALLEL

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef
Kind = Literal["function", "method", "staticmethod", "classmethod"]
_MAX_DEPTH = 8  # helpers calling helpers; deeper chains are unknown


@dataclass(frozen=True)
class Returns:
    """Every path through a function returns a data-parallel wrapper
    (``wrapper``) or its positional parameter number ``param`` (``self`` and
    ``cls`` counted) unchanged."""

    kind: Kind
    wrapper: bool = False
    param: int | None = None
    # ``return model, optimizer``: which elements of the tuple every path
    # returns are wrappers (``model, opt = setup(cfg)``).
    items: tuple[bool, ...] | None = None


# A value, as far as a proof goes: a wrapper, or the value a parameter of the
# enclosing function had on entry.
_Value = Literal["wrapper"] | tuple[Literal["param"], str]
_WRAPPER: _Value = "wrapper"


class ReturnFacts:
    """Return values of one file's functions and whether an expression is a
    wrapper, computed on demand. ``external`` answers for a call's function
    in another file of the run (``ProjectView.returns``)."""

    def __init__(
        self,
        tree: ast.Module,
        imports: ImportMap,
        external: Callable[[ast.expr], Returns | None] | None = None,
    ) -> None:
        self.tree = tree
        self.imports = imports
        self.external = external
        self.parents = tree_parents(tree)
        self.functions: dict[str, FuncNode] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for stmt in tree.body:
            if isinstance(stmt, FUNCTIONS):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
        self._memo: dict[FuncNode, Returns | None] = {}
        # What each statement (maybe) binds, computed once for every question
        # about it (``_binds``).
        self._bound: _Bound = {}

    # --- the questions ------------------------------------------------------
    def is_wrapper(self, expr: ast.AST) -> bool:
        """Whether ``expr`` (in this file's tree) is provably a data-parallel wrapper."""
        at = enclosing_stmt(self.parents, expr)
        return at is not None and self._value(expr, at, 0) == _WRAPPER

    def is_wrapper_item(self, expr: ast.AST, index: int) -> bool:
        """Whether element ``index`` of the tuple ``expr`` evaluates to is
        provably a wrapper: ``a, b = nn.DataParallel(n), opt`` or
        ``model, optimizer = setup(cfg)`` with ``setup`` returning
        ``(wrapper, ...)`` on every path."""
        at = enclosing_stmt(self.parents, expr)
        if at is None:
            return False
        if isinstance(expr, (ast.Tuple, ast.List)):
            elts = expr.elts
            if index >= len(elts) or any(isinstance(e, ast.Starred) for e in elts):
                return False
            return self._value(elts[index], at, 0) == _WRAPPER
        if not isinstance(expr, ast.Call):
            return False
        found = self._callee(expr, at)
        items = found[0].items if found is not None else None
        return items is not None and index < len(items) and items[index]

    def summaries(self) -> dict[str, Returns]:
        """``Returns`` of each module-level function (``"build"``) and method
        of a module-level class (``"Trainer.load_model"``, its bases' in this
        file included) that has one."""
        out: dict[str, Returns] = {}
        for name, fn in self.functions.items():
            found = self.returns(fn)
            if found is not None:
                out[name] = found
        for cls_name in self.classes:
            for method_name, fn in self._methods(cls_name).items():
                found = self.returns(fn)
                if found is not None:
                    out[f"{cls_name}.{method_name}"] = found
        return out

    def returns(self, fn: FuncNode) -> Returns | None:
        if fn in self._memo:
            return self._memo[fn]
        self._memo[fn] = None  # recursion: unknown
        self._memo[fn] = found = self._summarise(fn)
        return found

    # --- function summaries -------------------------------------------------
    def _summarise(self, fn: FuncNode) -> Returns | None:
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _walk_own(fn.body)):
            return None
        if not _ends(fn.body):
            return None  # some path falls off the end: returns None
        returns = [r for r in _walk_own(fn.body) if isinstance(r, ast.Return)]
        if returns and all(isinstance(r.value, ast.Tuple) for r in returns):
            return self._tuple_returns(fn, returns)
        values: set[_Value] = set()
        for ret in _walk_own(fn.body):
            if isinstance(ret, ast.Return):
                value = self._value(ret.value, ret, 0) if ret.value is not None else None
                if value is None:
                    return None
                values.add(value)
        if len(values) != 1:
            return None
        (value,) = values
        kind = self._kind(fn)
        if value == _WRAPPER:
            return Returns(kind, wrapper=True)
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        if value[1] not in params:
            return None
        return Returns(kind, param=params.index(value[1]))

    def _tuple_returns(self, fn: FuncNode, returns: list[ast.Return]) -> Returns | None:
        """``return model, optimizer`` on every path: which elements are wrappers."""
        tuples = [(r, r.value) for r in returns if isinstance(r.value, ast.Tuple)]
        size = len(tuples[0][1].elts)
        for _, t in tuples:
            if len(t.elts) != size or any(isinstance(e, ast.Starred) for e in t.elts):
                return None
        items = tuple(
            all(self._value(t.elts[i], r, 0) == _WRAPPER for r, t in tuples) for i in range(size)
        )
        return Returns(self._kind(fn), items=items) if any(items) else None

    def _kind(self, fn: FuncNode) -> Kind:
        if not isinstance(self.parents.get(fn), ast.ClassDef):
            return "function"
        names = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
        if "staticmethod" in names:
            return "staticmethod"
        return "classmethod" if "classmethod" in names else "method"

    # --- values -------------------------------------------------------------
    def _value(self, expr: ast.AST, at: ast.stmt, depth: int) -> _Value | None:
        """What ``expr``, evaluated at statement ``at``, is."""
        if depth > _MAX_DEPTH:
            return None
        expr = strip_self_returning(expr)
        if isinstance(expr, ast.Call):
            if self.imports.qualname(expr.func) in DATA_PARALLEL:
                return _WRAPPER
            return self._call_value(expr, at, depth)
        text = dotted(expr)
        if text is None:
            return None
        values: set[_Value] = set()
        for value in self._reaching(text, at):
            if value is None:
                return None
            if isinstance(value, ast.AST):
                found = self._value(value, enclosing_stmt(self.parents, value) or at, depth + 1)
                if found is None:
                    return None
                values.add(found)
            else:
                values.add(value)
        return values.pop() if len(values) == 1 else None

    def _call_value(self, call: ast.Call, at: ast.stmt, depth: int) -> _Value | None:
        found = self._callee(call, at)
        if found is None:
            return None
        returns, implicit = found
        if returns.wrapper:
            return _WRAPPER
        if returns.param is None:
            return None
        index = returns.param - implicit
        if index < 0:
            # ``self.prepare()`` returning ``self``: the receiver.
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            return self._value(receiver, at, depth + 1) if receiver is not None else None
        arg = _argument(call, index)
        return self._value(arg, at, depth + 1) if arg is not None else None

    def _callee(self, call: ast.Call, at: ast.stmt) -> tuple[Returns, int] | None:
        """The callee's ``Returns`` and how many of its leading parameters
        the call binds implicitly (``self``/``cls``)."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.functions:
            if self._locally_bound(func.id, at):
                return None
            found = self.returns(self.functions[func.id])
            return (found, 0) if found is not None else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            cls_name = self._receiver_class(owner, at)
            if cls_name is not None:  # ``self.m()`` / ``cls.m()``: bound
                method = self._methods(cls_name).get(func.attr)
                if method is not None:
                    found = self.returns(method)
                else:  # inherited from a base class of another file of the run
                    found = self._imported_base_method(cls_name, func.attr)
                if found is None:
                    return None
                return found, 0 if found.kind == "staticmethod" else 1
            if owner in self.classes and not self._locally_bound(owner, at):
                method = self._methods(owner).get(func.attr)  # ``Trainer.build(...)``
                found = self.returns(method) if method is not None else None
                if found is None:
                    return None
                return found, 1 if found.kind == "classmethod" else 0
        if isinstance(func, ast.Attribute):
            cls_expr = self._instance_class(func.value, at)
            if cls_expr is not None:  # ``Builder(cfg).build()``, ``utils.get_model()``
                found = self._method_returns(cls_expr, func.attr, at)
                if found is None or found.kind == "classmethod":
                    return (found, 1) if found is not None else None
                return found, 0 if found.kind == "staticmethod" else 1
        if self.external is None:
            return None
        found = self.external(func)
        if found is None:
            return None
        return found, 1 if found.kind == "classmethod" else 0

    def _imported_base_method(self, cls_name: str, method: str) -> Returns | None:
        """``method`` inherited from the base class of ``cls_name`` (or of its
        bases in this file) that another file of the run defines. Only with
        a single such base: with several, which one defines ``method`` first
        in the MRO is not something the summaries show."""
        if self.external is None:
            return None
        imported: list[ast.expr] = []
        todo, seen = [cls_name], set()
        while todo:
            cls = self.classes.get(todo.pop(0))
            if cls is None or cls.name in seen:
                continue
            seen.add(cls.name)
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in self.classes:
                    todo.append(base.id)
                elif dotted(base) is not None:
                    imported.append(base)
        if len(imported) != 1:
            return None
        return self.external(ast.Attribute(value=imported[0], attr=method, ctx=ast.Load()))

    def _instance_class(self, expr: ast.expr, at: ast.stmt) -> ast.expr | None:
        """The class ``expr`` is an instance of, as the expression that names
        it: ``Builder(cfg)``, or a name every assignment reaching ``at``
        binds to ``Builder(...)``; None when that is not shown."""
        built = strip_self_returning(expr)
        if isinstance(built, ast.Call):
            return built.func if dotted(built.func) is not None else None
        text = dotted(expr)
        if text is None:
            return None
        classes: dict[str, ast.expr] = {}
        for value in self._reaching(text, at):
            made = strip_self_returning(value) if isinstance(value, ast.AST) else None
            if not isinstance(made, ast.Call) or dotted(made.func) is None:
                return None
            classes[dotted(made.func) or ""] = made.func
        return next(iter(classes.values())) if len(classes) == 1 else None

    def _method_returns(self, cls_expr: ast.expr, method: str, at: ast.stmt) -> Returns | None:
        """``Returns`` of ``method`` of the class ``cls_expr`` names: a class
        of this file, or one of another file of the run."""
        if isinstance(cls_expr, ast.Name) and cls_expr.id in self.classes:
            if self._locally_bound(cls_expr.id, at):
                return None
            fn = self._methods(cls_expr.id).get(method)
            return self.returns(fn) if fn is not None else None
        if self.external is None:
            return None
        return self.external(ast.Attribute(value=cls_expr, attr=method, ctx=ast.Load()))

    def _receiver_class(self, name: str, at: ast.stmt) -> str | None:
        """The class whose method ``at`` is in, when ``name`` is that method's
        ``self``/``cls`` (its first parameter)."""
        fn = self._function_of(at)
        if fn is None:
            return None
        cls = self.parents.get(fn)
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        if not isinstance(cls, ast.ClassDef) or cls.name not in self.classes:
            return None
        if self._kind(fn) == "staticmethod" or not params or params[0] != name:
            return None
        return cls.name

    def _function_of(self, node: ast.AST) -> FuncNode | None:
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, FUNCTIONS):
            cur = self.parents.get(cur)
        return cur

    def _locally_bound(self, name: str, at: ast.stmt) -> bool:
        """A function's own binding of ``name`` shadows the module's."""
        fn = self._function_of(at)
        while fn is not None:
            params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
            if name in params or any(_binds(s, name, self._bound) for s in fn.body):
                return True
            fn = self._function_of(fn)
        return False

    def _methods(self, cls_name: str) -> dict[str, FuncNode]:
        """Methods of a class of this file, its bases' in this file included
        (its own first)."""
        out: dict[str, FuncNode] = {}
        todo, seen = [cls_name], set()
        while todo:
            current = todo.pop(0)
            cls = self.classes.get(current)
            if cls is None or current in seen:
                continue
            seen.add(current)
            for stmt in cls.body:
                if isinstance(stmt, FUNCTIONS):
                    out.setdefault(stmt.name, stmt)
            todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
        return out

    # --- reaching assignments -------------------------------------------------
    def _reaching(self, name: str, at: ast.stmt) -> list[ast.expr | _Value | None]:
        """The values ``name`` may hold just before ``at``: assigned
        expressions, a parameter's entry value, or None (unknown)."""
        out: list[ast.expr | _Value | None] = []
        node: ast.AST = at
        while True:
            parent = self.parents.get(node)
            found = block_of(self.parents, node)
            if parent is None or found is None:
                return [None]  # an ``except`` or ``case`` block: not followed
            block, index = found
            for sibling in reversed(block[:index]):
                defs = _defs_at_end(sibling, name, self._bound)
                if defs is None:
                    return [None]
                values, complete = defs
                out.extend(values)
                if complete:
                    return out
            if isinstance(parent, FUNCTIONS):
                params = [a.arg for a in [*parent.args.posonlyargs, *parent.args.args]]
                out.append(("param", name) if name in params else None)
                return out
            if isinstance(parent, ast.Module):
                return [*out, None]  # not assigned before: unknown
            if isinstance(parent, (*LOOPS, ast.Try)) and _binds(parent, name, self._bound):
                return [None]  # a later iteration, or an exception, may bring another value
            if isinstance(parent, ast.ClassDef):
                return [None]
            node = parent


def _argument(call: ast.Call, index: int) -> ast.expr | None:
    """The call's positional argument ``index`` (a keyword one is not followed)."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if i == index:
            return arg
    return None


def _defs_at_end(stmt: ast.stmt, name: str, bound: _Bound) -> tuple[list[ast.expr], bool] | None:
    """The values ``stmt`` may leave in ``name`` and whether every path
    through it assigns one; None when it binds ``name`` some other way."""
    if not _binds(stmt, name, bound):
        return [], False
    if isinstance(stmt, ast.Assign):
        if all(dotted(t) == name or not _binds(t, name, bound) for t in stmt.targets):
            return [stmt.value], True
        return None
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and dotted(stmt.target) == name:
        return [stmt.value], True
    if isinstance(stmt, ast.If):
        body = _defs_in_block(stmt.body, name, bound)
        orelse = _defs_in_block(stmt.orelse, name, bound)
        if body is None or orelse is None or _binds(stmt.test, name, bound):
            return None
        return body[0] + orelse[0], body[1] and orelse[1]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        if any(_binds(item, name, bound) for item in stmt.items):
            return None
        return _defs_in_block(stmt.body, name, bound)
    return None


def _defs_in_block(
    block: list[ast.stmt], name: str, bound: _Bound
) -> tuple[list[ast.expr], bool] | None:
    out: list[ast.expr] = []
    for stmt in reversed(block):
        defs = _defs_at_end(stmt, name, bound)
        if defs is None:
            return None
        out.extend(defs[0])
        if defs[1]:
            return out, True
    return out, False


# Node -> what it may bind (``_bound_names``), for the nodes asked about.
_Bound = dict[ast.AST, frozenset[str]]


def _binds(node: ast.AST, name: str, bound: _Bound) -> bool:
    """Whether ``node`` (not entering nested scopes' bodies) may rebind
    ``name`` (a plain name, or an attribute path such as ``self.model``)."""
    names = _bound_names(node, bound)
    return name in names or name.split(".")[0] in names


def _bound_names(node: ast.AST, bound: _Bound) -> frozenset[str]:
    """Every name ``node`` may bind, in one pass (kept in ``bound`` for it and
    for each statement under it, so that each statement of a scope is walked
    once, however many names are asked about): the dotted text of a target
    stored or deleted (``self.model``), and the name a ``def``/``class``, an
    import (its first part), ``global``/``nonlocal`` or an ``except ... as``
    binds. A dotted name is rebound by a store of itself or of its first part
    (what ``_binds`` asks); the others are plain names."""
    found = bound.get(node)
    if found is not None:
        return found
    names: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        n = stack.pop()
        if n is not node and isinstance(n, ast.stmt):
            names |= _bound_names(n, bound)
            continue
        if isinstance(n, (ast.Name, ast.Attribute)):
            if isinstance(n.ctx, (ast.Store, ast.Del)):
                text = dotted(n)
                if text is not None:
                    names.add(text)
        elif isinstance(n, (*FUNCTIONS, ast.ClassDef)):
            names.add(n.name)
            continue  # its body runs elsewhere
        elif isinstance(n, ast.Lambda):
            continue
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        stack.extend(ast.iter_child_nodes(n))
    bound[node] = found = frozenset(names)
    return found


def _walk_own(nodes: list[ast.stmt] | list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes under ``nodes`` (themselves included), yielding nested defs,
    classes and lambdas but not entering them: their bodies run elsewhere."""
    stack: list[ast.AST] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _ends(block: list[ast.stmt]) -> bool:
    """Whether no path through ``block`` reaches its end (each returns or raises)."""
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _ends(last.body)
    if isinstance(last, ast.Try):
        if last.finalbody and _ends(last.finalbody):
            return True
        body = _ends(last.body) or (bool(last.orelse) and _ends(last.orelse))
        return body and all(_ends(h.body) for h in last.handlers)
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value:
        return not any(isinstance(n, ast.Break) for n in _walk_own(last.body))
    return False
