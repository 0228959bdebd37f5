"""Must-aliases: one model under two names, proven from assignments only.

- local <- attribute: ``model = self.model`` at the top of a method, the only
  binding of ``model`` in it, with ``self.model`` never rebound there: in that
  method ``model`` *is* ``self.model`` (a ``model.eval()`` in ``evaluate()``
  is ``self.model.eval()`` for the ``train()`` that calls it).
- local <- the module itself: ``model = self.train()`` or ``model =
  self.to(device)`` (self-returning methods) at the top of a method, maybe
  rewrapped later: ``model`` is ``self``.
- attribute <- parameter: ``self.model = model`` in a method that never
  rebinds either: there ``model`` is ``self.model`` (``Adam(model.parameters())``
  in ``__init__`` updates ``self.model``).

Nothing is guessed from names; anything assigned twice, in a branch or a
loop, or unpacked, is not an alias. Rebindings are allowed where the caller
says it keeps the same modules: ``model = nn.DataParallel(model)`` or
``model = model.to(device)`` after ``model = self.model`` (library trainers
wrap under ``if n_gpu > 1:``): a mode call on the wrapper sets the modes of
``self.model``'s modules, and its forward runs them.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import FileIndex, FuncNode
from rnnfix.analysis.syntax.walks import walk_subtree

_BINDING_STATEMENTS = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
     ast.NamedExpr}
)  # fmt: skip


def function_aliases(
    index: FileIndex, fn: FuncNode, wrapped: Callable[[ast.expr], str | None] | None = None
) -> dict[str, tuple[str, ast.stmt]]:
    """Name -> (the path it must alias, the assignment that makes it so).
    ``wrapped(value)``: the name ``value`` wraps or returns itself
    (``nn.DataParallel(model)`` -> ``model``), if any."""
    info = index.functions.get(fn)
    if info is None:
        return {}
    params = set(info.params) | set(info.kwonly)
    nodes = index.scope_nodes(fn)
    bound: Counter[str] = Counter()
    rewrapped: Counter[str] = Counter()  # ``model = nn.DataParallel(model)``
    kinds = _BINDING_STATEMENTS
    for node in nodes:
        if node.__class__ not in kinds:
            continue  # most nodes (parsed trees hold no subclasses of these)
        if (
            wrapped is not None
            and isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and wrapped(node.value) == node.targets[0].id
        ):
            rewrapped[node.targets[0].id] += 1
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in walk_subtree(t):  # ``ast.walk``'s nodes, in one loop
                    text = dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
                    if text is not None:
                        bound[text] += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
            for sub in walk_subtree(node.target if hasattr(node, "target") else node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound[sub.id] += 1
    out: dict[str, tuple[str, ast.stmt]] = {}
    this = info.params[0] if info.is_method else None
    for stmt in fn.body:  # top level only: it runs before everything after it
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = dotted(stmt.targets[0]), dotted(stmt.value)
        if value is None and this is not None:
            # ``model = self.train()``, ``model = self.to(device)`` in a
            # module's method (deepctr's ``BaseModel.fit``): the module itself,
            # returned by its own self-returning method.
            inner = strip_self_returning(stmt.value)
            if inner is not stmt.value and dotted(inner) == this:
                value = this
        if target is None or value is None or bound[value] > 0:
            continue
        whole = value == this  # the module itself: ``self`` is never rebound
        if bound[target] != 1 and not (
            ("." in value or whole) and bound[target] == 1 + rewrapped[target]
        ):
            continue
        if isinstance(stmt.targets[0], ast.Name) and target not in params:
            # local <- attribute of self (or of a parameter), maybe rewrapped
            root = value.split(".")[0]
            if ("." in value and (root == this or root in params)) or whole:
                out[target] = (value, stmt)
        elif this is not None and target.startswith(this + ".") and value in params:
            # attribute <- parameter: the parameter names the attribute
            if bound[value] == 0:
                out[value] = (target, stmt)
    return out


def canonical(key: str, aliases: dict[str, tuple[str, ast.stmt]]) -> str:
    """``key`` with an aliased root replaced by what it aliases."""
    root, dot, rest = key.partition(".")
    found = aliases.get(root)
    return found[0] + dot + rest if found is not None else key
