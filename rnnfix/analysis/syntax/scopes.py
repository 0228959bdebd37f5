"""Functions, classes and call resolution within one file.

The mode flow follows calls into functions of the same file: module-level
functions, nested functions, methods through ``self.method(...)``, methods of
local classes called on an instance (``trainer.fit()``, ``Trainer().fit()``),
and constructors (``Trainer(...)`` runs ``__init__``). Everything else is an
unknown call, which the analysis assumes leaves every mode as it was.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import CONTEXTS, node_fields, nodes_of

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef
ScopeNode = FuncNode | ast.Module
LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(eq=False)
class FunctionInfo:
    node: FuncNode
    cls: ast.ClassDef | None  # the class whose body defines it (a method)
    parent: FuncNode | None  # the function it is nested in
    params: list[str]  # positional-or-keyword parameters, ``self`` included
    kwonly: list[str]
    locals: set[str]  # names bound in the body (parameters included)

    @property
    def is_method(self) -> bool:
        if self.cls is None:
            return False
        names = {d.id for d in self.node.decorator_list if isinstance(d, ast.Name)}
        return "staticmethod" not in names and "classmethod" not in names and bool(self.params)

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class Resolved:
    """A call into a function of this file, with how its names map to the caller's."""

    callee: FunctionInfo
    receiver: str | None  # caller text bound to ``self`` (None: not a dotted name)
    args: dict[str, str | None] = field(default_factory=dict)  # param -> caller text

    def caller_key(self, key: str) -> str | None:
        """The caller's name for the callee's ``key`` (None: not visible there)."""
        root, _, rest = key.partition(".")
        suffix = "." + rest if rest else ""
        if self.callee.is_method and root == self.callee.params[0]:
            return self.receiver + suffix if self.receiver else None
        if root in self.args:
            arg = self.args[root]
            return arg + suffix if arg else None
        if root in self.callee.locals:
            return None  # a local of the callee, or a parameter left at its default
        return key  # a global or a variable of an enclosing function


def _bound_names(fn: FuncNode, own: Iterable[ast.AST] | None = None) -> set[str]:
    """``own``: ``_scope_list(fn.body)``, when the caller has it already."""
    names: set[str] = set()
    declared: set[str] = set()
    a = fn.args
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
        if arg is not None:
            names.add(arg.arg)
    kinds = _BINDING_KINDS
    Name, Store = ast.Name, ast.Store
    for node in _scope_list(fn.body) if own is None else own:
        cls = node.__class__
        if cls not in kinds:
            continue  # most nodes (parsed trees hold no subclasses of these)
        if cls is Name:
            if node.ctx.__class__ is Store:  # type: ignore[attr-defined]
                names.add(node.id)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
    return names - declared


_BINDING_KINDS = frozenset(
    {ast.Name, ast.Global, ast.Nonlocal, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
     ast.Import, ast.ImportFrom}
)  # fmt: skip
_ASSIGNS = frozenset({ast.Assign, ast.AnnAssign})
_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scope_list(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a scope's statements in source order (depth first), not
    entering nested defs, classes and lambdas (scopes of their own) but
    including their nodes, nor listing the expression contexts (as
    ``walk_tree``); one loop (the analyses' most walked nodes)."""
    out: list[ast.AST] = []
    append = out.append
    stack: list[ast.AST] = list(reversed(body))
    pop = stack.pop
    push = stack.append
    AST = ast.AST
    backwards = _REVERSED_FIELDS
    contexts = CONTEXTS
    while stack:
        node = pop()
        append(node)
        if isinstance(node, _OWN_SCOPE):
            continue
        fields = backwards.get(node.__class__)
        if fields is None:
            fields = backwards[node.__class__] = node_fields(node.__class__)[::-1]
        # Children pushed last first (fields and lists backwards), so that the
        # first child is popped first, as when listed in order and reversed.
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, AST):
                if value.__class__ not in contexts:
                    push(value)
            elif isinstance(value, list):
                for item in reversed(value):
                    if isinstance(item, AST):
                        push(item)
    return out


# ``node_fields`` backwards, by node class (filled by ``_scope_list``).
_REVERSED_FIELDS: dict[type, tuple[str, ...]] = {}


class FileIndex:
    """Functions and classes of one module, and resolution of calls to them."""

    def __init__(self, tree: ast.Module, imports: ImportMap) -> None:
        self.tree = tree
        self.imports = imports
        self.functions: dict[FuncNode, FunctionInfo] = {}
        self.module_functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self._nested: dict[FuncNode, dict[str, FunctionInfo]] = {}
        self._scope_nodes: dict[FuncNode | None, list[ast.AST]] = {}
        self._resolved: dict[tuple[ast.Call, FuncNode | None, str | None], Resolved | None] = {}
        self._index(tree.body, cls=None, parent=None)
        # dotted text -> local class it was built from (``trainer = Trainer()``)
        self.instance_types: dict[str, str] = {}
        # dotted text -> the values the file's assignments bind to it, in
        # ``ast.walk`` order (asked per model by RNF003: one walk, not one each)
        self.bound_values: dict[str, list[ast.expr]] = {}
        for node in nodes_of(tree, *_ASSIGNS):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                name = self.constructed_class(node.value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                texts = {text for t in targets if (text := dotted(t))}
                for text in texts:
                    self.bound_values.setdefault(text, []).append(node.value)
                    if name:
                        self.instance_types[text] = name

    def subclasses(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The module-level classes of the file that name ``cls`` as a base
        (directly, by its plain name)."""
        return [
            c
            for c in self.classes.values()
            if c is not cls and any(isinstance(b, ast.Name) and b.id == cls.name for b in c.bases)
        ]

    def scope_nodes(self, scope: FuncNode | None) -> list[ast.AST]:
        """``_scope_list`` of a function's body (the module's for None),
        computed once (do not modify the list)."""
        found = self._scope_nodes.get(scope)
        if found is None:
            found = _scope_list(self.tree.body if scope is None else scope.body)
            self._scope_nodes[scope] = found
        return found

    def _index(
        self, body: list[ast.stmt], cls: ast.ClassDef | None, parent: FuncNode | None
    ) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = stmt.args
                info = FunctionInfo(
                    node=stmt,
                    cls=cls,
                    parent=parent,
                    params=[p.arg for p in [*a.posonlyargs, *a.args]],
                    kwonly=[p.arg for p in a.kwonlyargs],
                    locals=_bound_names(stmt, self.scope_nodes(stmt)),
                )
                self.functions[stmt] = info
                if parent is not None and cls is None:
                    self._nested.setdefault(parent, {})[stmt.name] = info
                elif cls is None:
                    self.module_functions[stmt.name] = info
                self._index_nested(stmt, stmt)
            elif isinstance(stmt, ast.ClassDef):
                if parent is None and cls is None:
                    self.classes[stmt.name] = stmt
                self._index(stmt.body, cls=stmt, parent=parent)
            else:
                # defs inside if/try/with blocks at the same level
                for child_body in _sub_bodies(stmt):
                    self._index(child_body, cls=cls, parent=parent)

    def _index_nested(self, fn: FuncNode, parent: FuncNode) -> None:
        for child_body in _sub_bodies(fn):
            self._index(child_body, cls=None, parent=parent)

    # --- classes -----------------------------------------------------------
    def method(
        self, class_name: str, name: str, _seen: frozenset[str] = frozenset()
    ) -> FunctionInfo | None:
        cls = self.classes.get(class_name)
        if cls is None or class_name in _seen:
            return None
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return self.functions.get(stmt)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                found = self.method(base.id, name, _seen | {class_name})
                if found:
                    return found
        return None

    def constructed_class(self, value: ast.AST) -> str | None:
        """``Trainer(...)`` (possibly ``.to(device)``-chained) -> "Trainer"."""
        value = strip_self_returning(value)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in self.classes:
                return value.func.id
        return None

    def class_of(self, fn: FuncNode) -> ast.ClassDef | None:
        info = self.functions.get(fn)
        return info.cls if info else None

    # --- calls -------------------------------------------------------------
    def resolve(
        self, call: ast.Call, scope: FuncNode | None, target: str | None = None
    ) -> Resolved | None:
        """The local function ``call`` runs, if any. ``target`` is the name a
        constructor's result is assigned to (it becomes ``self``). Once per
        call, scope and target: the index does not change after it is built,
        and the mode flow asks again at every pass over a loop and in every
        summary (do not modify the answer)."""
        key = (call, scope, target)
        try:
            return self._resolved[key]
        except KeyError:
            found = self._resolved[key] = self._resolve(call, scope, target)
            return found

    def _resolve(
        self, call: ast.Call, scope: FuncNode | None, target: str | None
    ) -> Resolved | None:
        func = call.func
        callee: FunctionInfo | None = None
        receiver: str | None = None
        if isinstance(func, ast.Name):
            callee = self._lookup_function(func.id, scope)
            if callee is None and func.id in self.classes:
                callee = self.method(func.id, "__init__")
                receiver = target
        elif isinstance(func, ast.Attribute):
            base = func.value
            text = dotted(base)
            if text is not None:
                cls_name: str | None = None
                if text == "self" and scope is not None:
                    info = self.functions.get(scope)
                    owner = info.cls if info else None
                    if owner is not None and info is not None and info.is_method:
                        cls_name = owner.name
                elif text in self.instance_types:
                    cls_name = self.instance_types[text]
                if cls_name:
                    callee = self.method(cls_name, func.attr)
                    receiver = text
            else:
                cls_name = self.constructed_class(base)
                if cls_name:
                    callee = self.method(cls_name, func.attr)
        if callee is None:
            return None
        return Resolved(callee, receiver, self._bind(callee, call))

    def _lookup_function(self, name: str, scope: FuncNode | None) -> FunctionInfo | None:
        fn = scope
        while fn is not None:
            nested = self._nested.get(fn, {})
            if name in nested:
                return nested[name]
            info = self.functions.get(fn)
            fn = info.parent if info else None
        return self.module_functions.get(name)

    def lookup_function(self, name: str, scope: FuncNode | None) -> FunctionInfo | None:
        return self._lookup_function(name, scope)

    @staticmethod
    def _bind(callee: FunctionInfo, call: ast.Call) -> dict[str, str | None]:
        return bind_arguments(callee.params, callee.kwonly, callee.is_method, call)


class ClassIndex:
    """The module-level classes of a module, as ``FileIndex.classes`` finds
    them (defs inside ``if``/``try``/``with`` blocks count, those inside
    functions or classes do not; a later definition of a name wins), without
    indexing its functions: for what reads only the classes."""

    def __init__(self, tree: ast.Module) -> None:
        self.classes: dict[str, ast.ClassDef] = {}
        self._index(tree.body)

    def _index(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            else:
                for child_body in _sub_bodies(stmt):
                    self._index(child_body)


def bind_arguments(
    params: Sequence[str], kwonly: Sequence[str], is_method: bool, call: ast.Call
) -> dict[str, str | None]:
    """Parameter -> the caller's dotted text for its argument (None: not a
    dotted name, or not passed). A method's ``self`` is the receiver, not an
    argument. An argument ``net.eval()`` (or ``net.train(...)``) is ``net``:
    a mode call returns the module itself (ssd.pytorch's demo/live.py passes
    ``cv2_demo(net.eval(), transform)``)."""
    positional = list(params[1:] if is_method else params)
    out: dict[str, str | None] = {p: None for p in [*positional, *kwonly]}
    for p, arg in zip(positional, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        out[p] = dotted(_through_mode_call(arg))
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in out:
            out[kw.arg] = dotted(_through_mode_call(kw.value))
    return out


def _through_mode_call(arg: ast.expr) -> ast.expr:
    """``net.eval()`` / ``net.train(flag)`` -> ``net`` (``Module.train``
    returns ``self``); anything else as it is."""
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr in ("eval", "train")
        and len(arg.args) + len(arg.keywords) <= 1
    ):
        return arg.func.value
    return arg


def _sub_bodies(stmt: ast.AST) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def names_bound(tree: ast.Module) -> frozenset[str]:
    """Names the file binds itself anywhere (assignments, definitions,
    parameters, imports): a builtin or a star-imported name spelled the same
    may be anything there."""
    out: set[str] = set()
    binders = (ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg, ast.alias)
    for n in nodes_of(tree, *binders):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return frozenset(out)
