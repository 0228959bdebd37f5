"""How a file uses the instances of one class: which of their methods may run
before which (``clf.predict(x)`` then ``clf.fit(loader)``).

The mode flow of the class's own file asks this about the *other* files of
the run (``ProjectIndex.method_order``): a public training method whose
entry mode is otherwise only what its callers in its own file pass gets the
exit modes of the methods that other files call on an instance before it
(a ``predict()`` that leaves ``self.net`` in eval, then ``fit()``).

Read from one file's syntax, per scope: an instance is a dotted name
assigned a call of the class (``clf = Classifier(net).to(dev)``); method
``a`` may run before ``b`` on it when a call of ``a`` comes first in the same
scope and the two are not in the two branches of one ``if``, or both are in
one loop (the next iteration). Calls through helpers (``evaluate(clf)``) are
not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import FUNCTIONS, LOOPS, nodes_of, walk_local, walk_tree

# (method that may run first, method that may run after it)
Order = frozenset[tuple[str, str]]


def method_order(tree: ast.Module, is_class: Callable[[ast.expr], bool]) -> Order:
    """Pairs of methods called on one instance of the class ``is_class``
    recognises (given a constructor call's ``func``), in an order that may
    run. A constructor call counts as ``__init__``, before every method."""
    instances: set[str] = set()
    for node in nodes_of(tree, ast.Assign, ast.AnnAssign):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = strip_self_returning(node.value)
            if isinstance(value, ast.Call) and is_class(value.func):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                instances.update(t for t in map(dotted, targets) if t is not None)
    if not instances:
        return frozenset()
    parents = {c: p for p in walk_tree(tree) for c in ast.iter_child_nodes(p)}
    scopes: list[ast.AST] = [tree, *(n for n in walk_tree(tree) if isinstance(n, FUNCTIONS))]
    out: set[tuple[str, str]] = set()
    for scope in scopes:
        calls: dict[str, list[tuple[ast.Call, str]]] = {}
        for node in walk_local(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = dotted(node.func.value)
                if owner in instances:
                    calls.setdefault(owner, []).append((node, node.func.attr))
        for found in calls.values():
            for first, a in found:
                out.add(("__init__", a))
                for second, b in found:
                    if first is not second and _may_follow(parents, first, second):
                        out.add((a, b))
    return frozenset(out)


def _may_follow(parents: dict[ast.AST, ast.AST], first: ast.AST, second: ast.AST) -> bool:
    """``second`` may run after ``first`` in one run of their scope."""
    chain = _branches(parents, first)
    other = _branches(parents, second)
    if any(node is o_node and side != o_side for node, side in chain for o_node, o_side in other):
        return False  # the two branches of one ``if``
    if _pos(first) < _pos(second):
        return True
    loops = {id(n) for n in _ancestors(parents, first) if isinstance(n, LOOPS)}
    return any(id(n) in loops for n in _ancestors(parents, second) if isinstance(n, LOOPS))


def _branches(parents: dict[ast.AST, ast.AST], node: ast.AST) -> list[tuple[ast.AST, bool]]:
    out: list[tuple[ast.AST, bool]] = []
    child = node
    for parent in _ancestors(parents, node):
        if isinstance(parent, ast.If):
            if any(child is s for s in parent.body):
                out.append((parent, True))
            elif any(child is s for s in parent.orelse):
                out.append((parent, False))
        child = parent
    return out


def _ancestors(parents: dict[ast.AST, ast.AST], node: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    cur = parents.get(node)
    while cur is not None and not isinstance(cur, (*FUNCTIONS, ast.Module)):
        out.append(cur)
        cur = parents.get(cur)
    return out


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
