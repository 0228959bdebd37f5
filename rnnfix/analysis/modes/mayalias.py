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


@dataclass(frozen=True)
class Alias:
    target: str  # the model key the name is bound to on this path
    origin: ast.stmt  # the binding ``name = target``
    guard: tuple[str, bool] | None = None  # the ``if`` arm it was bound in


def plain_names(scope_body: list[ast.stmt]) -> frozenset[str]:
    """Names whose every binding under ``scope_body`` (nested scopes
    included, conservatively) is a single-target ``name = <expr>``."""
    nodes = [n for stmt in scope_body for n in ast.walk(stmt)]
    plain: dict[int, str] = {
        id(n.targets[0]): n.targets[0].id
        for n in nodes
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
    }
    other: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            if id(n) not in plain:
                other.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            other.update(n.names)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(n.name)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            other.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            other.add(n.rest)
    return frozenset(name for name in plain.values() if name not in other)
