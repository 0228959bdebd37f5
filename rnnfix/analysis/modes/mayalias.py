"""May-aliases: a local name bound to a model on some paths.

FixMatch-pytorch (kekmodel/FixMatch-pytorch, train.py ``train``) evaluates
``if args.use_ema: test_model = ema_model.ema`` / ``else: test_model = model``
and then ``test(args, test_loader, test_model, epoch)``, which calls
``model.eval()`` on its parameter: without EMA the eval reaches ``model``,
and the next epoch trains in eval mode. A must-alias
(``rnnfix.analysis.syntax.aliases``) needs one binding at the top of the
function; this reads a name bound in one arm of an ``if``: the flow carries,
per path, which model the name is bound to, and a mode change through the
name is a *may* change of that model (its old facts are kept).

Only names whose every binding in the scope is a plain ``name = <dotted>``
are read (no loop or ``with`` target, unpacking, augmented assignment,
``global``/``nonlocal``, ``del``, import, def or ``except ... as``): any other
binding could leave a stale alias, and a stale alias would put an ``eval()``
on a model it no longer names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rnnfix.analysis.syntax.walks import walk_subtree, walk_tree


@dataclass(frozen=True)
class Alias:
    target: str  # the model key the name is bound to on this path
    origin: ast.stmt  # the binding ``name = target``
    guard: tuple[str, bool] | None = None  # the ``if`` arm it was bound in


def plain_names(scope_body: list[ast.stmt]) -> frozenset[str]:
    """Names whose every binding under ``scope_body`` (nested scopes
    included, conservatively) is a single-target ``name = <expr>``."""
    nodes = [n for stmt in scope_body for n in walk_subtree(stmt)]
    return _plain(nodes)


def module_plain_names(tree: ast.Module) -> frozenset[str]:
    """``plain_names(tree.body)``, over the walk the file already has (the
    sets do not depend on the order; the expression contexts it leaves out
    bind nothing)."""
    return _plain(walk_tree(tree))


_OTHER_BINDINGS = (
    ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
    ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping,
)  # fmt: skip


def _plain(nodes: list[ast.AST]) -> frozenset[str]:
    plain: dict[int, str] = {}
    other: set[str] = set()
    stores: list[ast.Name] = []
    Name, Assign, Load = ast.Name, ast.Assign, ast.Load
    for n in nodes:
        cls = n.__class__
        if cls is Name:
            if n.ctx.__class__ is not Load:  # type: ignore[attr-defined]
                stores.append(n)  # type: ignore[arg-type]
        elif cls is Assign:
            targets = n.targets  # type: ignore[attr-defined]
            if len(targets) == 1 and isinstance(targets[0], Name):
                plain[id(targets[0])] = targets[0].id
        elif isinstance(n, _OTHER_BINDINGS):
            _other_binding(n, other)
    other.update(n.id for n in stores if id(n) not in plain)
    return frozenset(name for name in plain.values() if name not in other)


def _other_binding(n: ast.AST, other: set[str]) -> None:
    if isinstance(n, (ast.Global, ast.Nonlocal)):
        other.update(n.names)
    elif isinstance(n, (ast.Import, ast.ImportFrom)):
        other.update((a.asname or a.name).split(".")[0] for a in n.names)
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        other.add(n.name)
    elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
        other.add(n.name)
    elif isinstance(n, ast.MatchMapping) and n.rest:
        other.add(n.rest)
