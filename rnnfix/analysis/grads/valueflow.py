"""Do values computed in a region reach a gradient use after it?

Wrapping a region in ``no_grad`` detaches everything it computes. That is only
safe when none of it flows into a ``backward`` / ``autograd.grad`` later (a
sampled sequence used for a REINFORCE loss, outputs collected for a loss over
the whole set). This is a small, name-based reaching-definitions check within
one function: a value written in the region (assigned, or mutated with
``.append``-like calls) taints what is computed from it, unless a plain
assignment between the region and the use replaces it first. It errs towards
"reaches": then RNF003 leaves the region alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradctx import gradient_uses
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import LOOPS, Scope, block_of, walk_all_local, walk_local

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext

_MUTATORS = frozenset(
    {
        "append", "extend", "insert", "update", "add", "setdefault", "put", "push",
        "copy_", "add_", "mul_", "sub_", "fill_", "scatter_", "index_add_", "index_copy_",
    }
)  # fmt: skip


def written(nodes: list[ast.stmt]) -> set[str]:
    """Names and attribute paths the statements assign or mutate."""
    out: set[str] = set()
    for n in walk_all_local(nodes):
        for t in _targets(n):
            out.update(_target_names(t))
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _MUTATORS
        ):
            text = dotted(n.func.value)
            if text:
                out.add(text)
    return out


class ValueFlow:
    """One per file: per-scope lists (assignments, gradient uses) and
    per-statement reads and kills are computed once and shared."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._assignments: dict[ast.AST, list[ast.stmt]] = {}
        self._uses: dict[ast.AST, list[ast.AST]] = {}
        self._read_cache: dict[ast.AST, frozenset[str]] = {}
        self._kill_cache: dict[ast.AST, frozenset[str]] = {}

    def reaches_gradient_use(self, region: list[ast.stmt], scope: Scope, seeds: set[str]) -> bool:
        """True when a value in ``seeds`` written by ``region`` (statements of
        ``scope``) may reach a gradient use outside the region."""
        if scope not in self._uses:
            self._uses[scope] = list(gradient_uses(self.ctx, scope))
        return self._reaches(region, scope, seeds, self._uses[scope])

    def escapes(self, region: list[ast.stmt], scope: Scope, seeds: set[str]) -> bool:
        """True when a value in ``seeds`` written by ``region`` may be returned
        or yielded by ``scope``: its callers, maybe in another file, decide
        whether it is differentiated."""
        exits: list[ast.AST] = [
            n for n in walk_local(scope) if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom))
        ]
        return self._reaches(region, scope, seeds, exits)

    def _reaches(
        self, region: list[ast.stmt], scope: Scope, seeds: set[str], uses: list[ast.AST]
    ) -> bool:
        if not seeds:
            return False
        inside = {id(n) for n in walk_all_local(region)}
        # name -> the statements whose write of it is tainted
        sources: dict[str, list[ast.stmt]] = {name: list(region) for name in seeds}
        if scope not in self._assignments:
            self._assignments[scope] = [
                n
                for n in walk_local(scope)
                if isinstance(n, ast.stmt) and any(True for _ in _targets(n))
            ]
        assignments = [a for a in self._assignments[scope] if id(a) not in inside]
        changed = True
        while changed:
            changed = False
            for stmt in assignments:
                names = self._reads(stmt) & set(sources)
                if any(self._reached(name, stmt, sources[name]) for name in names):
                    for name in {x for t in _targets(stmt) for x in _target_names(t)}:
                        if not any(s is stmt for s in sources.setdefault(name, [])):
                            sources[name].append(stmt)
                            changed = True
        for use in uses:
            if id(use) in inside:
                continue
            names = self._reads(use) & set(sources)
            if any(self._reached(name, use, sources[name]) for name in names):
                return True
        return False

    def _reached(self, name: str, use: ast.AST, sources: list[ast.stmt]) -> bool:
        """Whether a tainted write of ``name`` (in ``sources``) may be what ``use`` reads."""
        parents = self.ctx.facts.parents
        # Statements that are or contain a source: found by walking up once.
        holders: set[int] = set()
        for src in sources:
            cur: ast.AST | None = src
            while cur is not None and id(cur) not in holders:
                holders.add(id(cur))
                cur = parents.get(cur)
        node: ast.AST = use
        while not isinstance(node, ast.stmt):
            node = parents[node]
        loops_crossed = False
        while True:
            found = block_of(parents, node)
            if found is None:
                break
            block, index = found
            for sibling in reversed(block[:index]):
                if id(sibling) in holders:
                    return True
                if self._kills(sibling, name):
                    return False
            parent = parents[node]
            if isinstance(parent, (ast.For, ast.AsyncFor)) and name in _target_names(parent.target):
                return False
            if isinstance(parent, LOOPS):
                if id(parent) in holders:
                    # A source later in this loop's body: the back edge brings
                    # its value to the top of the body, whatever was assigned
                    # before the loop (``target = None``, then ``target =
                    # model(x)`` at the end of each iteration).
                    return True
                loops_crossed = True
            if not isinstance(parent, ast.stmt) or isinstance(
                parent, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                break
            node = parent
        # The region comes later in the source: only a loop around both brings
        # its values back here.
        return loops_crossed

    def _reads(self, node: ast.AST) -> frozenset[str]:
        if node not in self._read_cache:
            self._read_cache[node] = frozenset(_reads(node))
        return self._read_cache[node]

    def _kills(self, stmt: ast.stmt, name: str) -> bool:
        if stmt not in self._kill_cache:
            self._kill_cache[stmt] = frozenset(_killed_names(stmt))
        return name in self._kill_cache[stmt]


def _killed_names(stmt: ast.stmt) -> set[str]:
    """What a plain assignment statement replaces as a whole."""
    if isinstance(stmt, ast.Assign):
        return {x for t in stmt.targets for x in _target_names(t, whole_only=True)}
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return _target_names(stmt.target, whole_only=True)
    return set()


def bound_names(stmt: ast.AST) -> set[str]:
    """The plain names ``stmt`` itself binds whole: its targets, a loop's
    target, a ``with``'s ``as`` names (not what a nested block binds, not a
    write into an object: ``a[i] = x``, ``self.x = v``)."""
    return {n for t in _targets(stmt) for n in _target_names(t, whole_only=True) if "." not in n}


def _targets(n: ast.AST) -> Iterator[ast.AST]:
    if isinstance(n, ast.Assign):
        yield from n.targets
    elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        yield n.target
    elif isinstance(n, (ast.For, ast.AsyncFor)):
        yield n.target
    elif isinstance(n, (ast.With, ast.AsyncWith)):
        yield from (i.optional_vars for i in n.items if i.optional_vars is not None)


def _target_names(t: ast.AST, whole_only: bool = False) -> set[str]:
    """``a, self.b[i]`` -> {a, self.b}; with ``whole_only`` a subscript or
    starred element does not count (it replaces only part of the value)."""
    if isinstance(t, (ast.Tuple, ast.List)):
        return {x for e in t.elts for x in _target_names(e, whole_only)}
    if isinstance(t, ast.Starred):
        return _target_names(t.value, whole_only)
    if isinstance(t, ast.Subscript):
        if whole_only:
            return set()
        t = t.value
    text = dotted(t)
    return {text} if text else set()


def _reads(node: ast.AST) -> set[str]:
    """Names and attribute paths an assignment's value or a call reads."""
    roots: list[ast.AST]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        roots = [node.value] if node.value is not None else []
        if isinstance(node, ast.AugAssign):
            roots.append(node.target)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        roots = [node.iter]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        roots = [i.context_expr for i in node.items]
    else:
        roots = [node]
    out: set[str] = set()
    for r in roots:
        _collect_reads(r, frozenset(), out)
    return out


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _collect_reads(node: ast.AST, shadowed: frozenset[str], out: set[str]) -> None:
    """``walk_local``'s reads of ``node``, less the names a comprehension binds
    for itself: ``[_.cuda() for _ in batch]`` reads ``batch``, not the ``_``
    an earlier loop (an evaluation's ``data, _ = ...``) assigned, since a
    comprehension's variables live in a scope of their own."""
    stack: list[tuple[ast.AST, frozenset[str]]] = [(node, shadowed)]
    while stack:
        cur, hidden = stack.pop()
        if isinstance(cur, _COMPREHENSIONS):
            bound = {x for g in cur.generators for x in _target_names(g.target)}
            # The first iterable is evaluated in the enclosing scope.
            stack.append((cur.generators[0].iter, hidden))
            inner = hidden | bound
            for child in ast.iter_child_nodes(cur):
                if isinstance(child, ast.comprehension):
                    parts = [child.target, *child.ifs]
                    if child is not cur.generators[0]:
                        parts.append(child.iter)
                    stack.extend((p, inner) for p in parts)
                else:
                    stack.append((child, inner))
            continue
        if isinstance(cur, (ast.Name, ast.Attribute)):
            text = dotted(cur)
            if text and text.split(".")[0] not in hidden:
                out.add(text)
        stack.extend(
            (child, hidden)
            for child in ast.iter_child_nodes(cur)
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            )
        )
