"""Small structural helpers over ``ast``: statement blocks, scopes, walks that
stay inside one function, identifier words."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(identifier: str) -> list[str]:
    """``val_loader`` -> [val, loader]; ``testLoader`` -> [test, loader]."""
    return [w.lower() for w in _WORD.findall(identifier)]


# Fields that never hold a node (identifiers, constants, flags: Python's ASDL),
# by node class: the walks below skip them instead of testing their values.
_SCALAR_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(names)
    for cls, names in (
        (ast.FunctionDef, ("name", "type_comment")),
        (ast.AsyncFunctionDef, ("name", "type_comment")),
        (ast.ClassDef, ("name",)),
        (ast.Assign, ("type_comment",)),
        (ast.AnnAssign, ("simple",)),
        (ast.For, ("type_comment",)),
        (ast.AsyncFor, ("type_comment",)),
        (ast.With, ("type_comment",)),
        (ast.AsyncWith, ("type_comment",)),
        (ast.ImportFrom, ("module", "level")),
        (ast.Global, ("names",)),
        (ast.Nonlocal, ("names",)),
        (ast.Attribute, ("attr",)),
        (ast.Name, ("id",)),
        (ast.Constant, ("value", "kind")),
        (ast.FormattedValue, ("conversion",)),
        (ast.comprehension, ("is_async",)),
        (ast.ExceptHandler, ("name",)),
        (ast.arg, ("arg", "type_comment")),
        (ast.keyword, ("arg",)),
        (ast.alias, ("name", "asname")),
        (ast.MatchSingleton, ("value",)),
        (ast.MatchStar, ("name",)),
        (ast.MatchMapping, ("rest",)),
        (ast.MatchClass, ("kwd_attrs",)),
        (ast.MatchAs, ("name",)),
    )
}
# Filled by ``node_fields``; read directly in the hottest loops.
NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold a node, in field order."""
    found = NODE_FIELDS.get(cls)
    if found is None:
        skip = _SCALAR_FIELDS.get(cls, frozenset())
        fields: tuple[str, ...] = getattr(cls, "_fields", ())
        found = NODE_FIELDS[cls] = tuple(f for f in fields if f not in skip)
    return found


# ``Load``/``Store``/``Del``: a third of a tree's nodes (one per name,
# attribute, subscript...), shared singletons no analysis reads as nodes of
# the walk (they read ``node.ctx``): left out of ``walk_tree``'s list, which
# every analysis loops over; ``tree_parents`` still has them.
CONTEXTS = frozenset({ast.Load, ast.Store, ast.Del})

# The last few whole-module indexes: several analyses walk the same tree.
# Keyed by the tree object itself (held here, so its id is never reused while
# cached); trees are never mutated after parsing.
_INDEXES: list[tuple[ast.AST, list[ast.AST], dict[ast.AST, ast.AST]]] = []
_INDEXES_KEPT = 8


def _module_index(tree: ast.AST) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    for i, entry in enumerate(_INDEXES):
        if entry[0] is tree:
            if i:
                _INDEXES.insert(0, _INDEXES.pop(i))
            return entry[1], entry[2]
    # ``ast.walk``'s order (breadth first, children in field order), built in
    # one pass with the parent of each child (the last one wins for the shared
    # ``Load``/``Store`` singletons, as a dict filled from ``ast.walk`` would).
    nodes = [tree]
    parents: dict[ast.AST, ast.AST] = {}
    AST = ast.AST
    append = nodes.append
    known = NODE_FIELDS
    contexts = CONTEXTS
    i = 0
    while i < len(nodes):
        node = nodes[i]
        i += 1
        fields = known.get(node.__class__)
        if fields is None:
            fields = node_fields(node.__class__)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, AST):
                parents[value] = node
                if value.__class__ not in contexts:
                    append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        parents[item] = node
                        append(item)
    _INDEXES.insert(0, (tree, nodes, parents))
    del _INDEXES[_INDEXES_KEPT:]
    return nodes, parents


def walk_subtree(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, same order, without its generators and deque."""
    nodes = [node]
    AST = ast.AST
    append = nodes.append
    known = NODE_FIELDS
    i = 0
    while i < len(nodes):
        cur = nodes[i]
        i += 1
        fields = known.get(cur.__class__)
        if fields is None:
            fields = node_fields(cur.__class__)
        for name in fields:
            value = getattr(cur, name, None)
            if isinstance(value, AST):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        append(item)
    return nodes


# Nodes that may hold a statement: statements, ``except`` handlers and
# ``case`` blocks. Expressions never do.
_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def walk_statements(tree: ast.AST) -> list[ast.AST]:
    """``ast.walk``'s order (breadth first, children in field order) restricted
    to the nodes that may hold a statement: removing subtrees from a breadth
    first walk keeps the order of the rest, so a question about statements
    (imports, definitions) gets the same answer, in the same order, as over
    the whole walk, at a fraction of the nodes (expressions are most of a tree)."""
    nodes = [tree]
    holders = _HOLDERS
    i = 0
    while i < len(nodes):
        node = nodes[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                nodes.extend([item for item in value if isinstance(item, holders)])
            elif isinstance(value, holders):
                nodes.append(value)
    return nodes


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, without its per-field generators."""
    out: list[ast.AST] = []
    AST = ast.AST
    fields = NODE_FIELDS.get(node.__class__)
    if fields is None:
        fields = node_fields(node.__class__)
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, AST))
    return out


def walk_tree(tree: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(tree))`` for a whole module, less the expression
    contexts (``Load``/``Store``/``Del``, see ``CONTEXTS``), computed once per
    tree and shared by the analyses (do not modify the list)."""
    return _module_index(tree)[0]


_BY_CLASS_KEY = "_rnnfix_by_class"


def nodes_of(tree: ast.AST, *classes: type[ast.AST]) -> list[ast.AST]:
    """The nodes of ``walk_tree(tree)`` whose class is one of ``classes``
    (exactly: parsed trees hold no subclasses of node classes), in that
    walk's order. The walk is bucketed by class once per tree, so that the
    many analyses that read one or two kinds of node (assignments, calls)
    do not each loop over every node. Do not modify the list."""
    buckets: dict[type, list[tuple[int, ast.AST]]] | None = tree.__dict__.get(_BY_CLASS_KEY)
    if buckets is None:
        buckets = {}
        # ``tree`` itself is left out: a node holding a list that holds it
        # would be a cycle, and trees must go with reference counting alone.
        for i, node in enumerate(walk_tree(tree)):
            if i:
                bucket = buckets.get(node.__class__)
                if bucket is None:
                    bucket = buckets[node.__class__] = []
                bucket.append((i, node))
        setattr(tree, _BY_CLASS_KEY, buckets)
    if len(classes) == 1 and tree.__class__ is not classes[0]:
        return [node for _, node in buckets.get(classes[0], ())]
    found = [item for cls in classes for item in buckets.get(cls, ())]
    if tree.__class__ in classes:
        found.append((0, tree))
    found.sort(key=_position)
    return [node for _, node in found]


def _position(item: tuple[int, ast.AST]) -> int:
    return item[0]


def tree_parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Each node's parent in ``tree``, computed once per tree (do not modify)."""
    return _module_index(tree)[1]


# Scopes whose own nodes ``walk_local`` keeps: the analyses ask for a
# function's (or the module's) own nodes many times over, and a scope's nodes
# never change after parsing.
_KEPT_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_LOCAL_KEY = "_rnnfix_local_nodes"


def walk_local(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, lambdas or classes
    (their bodies run elsewhere, at another time). A scope's list is computed
    once and kept on the node (it goes with the tree)."""
    if isinstance(node, _KEPT_SCOPES):
        return chain((node,), _kept_local(node))
    return _walk_local(node)


def _kept_local(node: ast.AST) -> list[ast.AST]:
    """``local_nodes(node)`` less ``node`` itself, kept on the node: a node
    holding a list that holds it would be a cycle, and trees must go with
    reference counting alone."""
    kept: list[ast.AST] | None = node.__dict__.get(_LOCAL_KEY)
    if kept is None:
        kept = local_nodes(node)[1:]
        setattr(node, _LOCAL_KEY, kept)
    return kept


def _walk_local(node: ast.AST) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        for child in child_nodes(cur):
            if not isinstance(child, (*FUNCTIONS, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def local_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(walk_local(node))``, same order, in one loop (for callers that
    read every node: no generator frame per node, no list per child)."""
    kept: list[ast.AST] | None = node.__dict__.get(_LOCAL_KEY)
    if kept is not None:
        return [node, *kept]
    out: list[ast.AST] = []
    append = out.append
    stack = [node]
    pop, push = stack.pop, stack.append
    AST = ast.AST
    known = NODE_FIELDS
    own = _OWN_SCOPES
    while stack:
        cur = pop()
        append(cur)
        fields = known.get(cur.__class__)
        if fields is None:
            fields = node_fields(cur.__class__)
        for name in fields:
            value = getattr(cur, name, None)
            if isinstance(value, AST):
                if not isinstance(value, own):
                    push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, AST) and not isinstance(item, own):
                        push(item)
    return out


_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def walk_all_local(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    for n in nodes:
        yield from walk_local(n)


_SUSPENSIONS = (ast.Yield, ast.YieldFrom, ast.Await)


def suspends(nodes: list[ast.stmt]) -> bool:
    """Whether the statements can pause their function part-way (``yield``,
    ``yield from``, ``await`` in their own scope). A ``with`` around them stays
    entered while the function is paused: ``torch.no_grad()`` there turns grad
    off in the caller too, between two ``next()`` calls."""
    return any(isinstance(n, _SUSPENSIONS) for n in walk_all_local(nodes))


def block_of(parents: dict[ast.AST, ast.AST], stmt: ast.AST) -> tuple[list[ast.stmt], int] | None:
    """The statement list holding ``stmt`` and its index there."""
    parent = parents.get(stmt)
    if parent is None:
        return None
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list):
            for i, s in enumerate(block):
                if s is stmt:
                    return block, i
    return None


def statement_runs(
    parents: dict[ast.AST, ast.AST],
    stmts: Iterable[ast.stmt],
    joins: Callable[[ast.stmt], bool] = lambda _s: True,
) -> list[tuple[ast.stmt, ast.stmt]]:
    """``stmts`` in source order as runs of consecutive statements of one
    block, (first, last): a statement joins the run before it when it comes
    right after that run's last one and ``joins`` holds for it and for the
    run's first (one ``with`` or one region for the run)."""
    out: list[tuple[ast.stmt, ast.stmt]] = []
    last_at: tuple[int, int] | None = None  # the last run's block and index
    for stmt in sorted(stmts, key=lambda s: (s.lineno, s.col_offset)):
        found = block_of(parents, stmt)
        here = (id(found[0]), found[1]) if found is not None else None
        if (
            out
            and here is not None
            and last_at == (here[0], here[1] - 1)
            and joins(stmt)
            and joins(out[-1][0])
        ):
            out[-1] = (out[-1][0], stmt)
        else:
            out.append((stmt, stmt))
        last_at = here
    return out


def enclosing_stmt(parents: dict[ast.AST, ast.AST], node: ast.AST) -> ast.stmt | None:
    """The innermost statement that contains ``node`` (``node`` itself if it is one)."""
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = parents.get(cur)
    return cur


def scope_of(parents: dict[ast.AST, ast.AST], node: ast.AST) -> Scope:
    cur = parents.get(node)
    while cur is not None:
        if isinstance(cur, (*FUNCTIONS, ast.Module)):
            return cur
        cur = parents.get(cur)
    raise ValueError("node is not in a module")


def guarded_by_name(
    parents: dict[ast.AST, ast.AST], node: ast.AST, stop: ast.AST, name: str
) -> bool:
    """``node`` runs only under an ``if`` (below ``stop``) whose test reads
    the plain name ``name``: a flag or a phase variable."""
    cur = parents.get(node)
    while cur is not None and cur is not stop:
        if isinstance(cur, ast.If) and any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(cur.test)
        ):
            return True
        cur = parents.get(cur)
    return False


def innermost_loop(parents: dict[ast.AST, ast.AST], node: ast.AST) -> ast.stmt | None:
    """The innermost loop whose body (not header) holds ``node``, within its function."""
    child = node
    cur = parents.get(node)
    while cur is not None and not isinstance(cur, (*FUNCTIONS, ast.Module)):
        if isinstance(cur, LOOPS) and any(child is s for s in cur.body):
            return cur
        child = cur
        cur = parents.get(cur)
    return None


def parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = func.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names


def body_without_docstring(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = func.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1:]
    return body
