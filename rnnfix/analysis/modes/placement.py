"""Where ``model.train()`` has to go so that it runs between the statement
that left a model in the wrong mode (an *origin*) and a training step.

- origin is the step's function itself (its callers leave the model in eval):
  the function's first statement (after a docstring);
- origin comes earlier in the same block as (an ancestor of) the step --
  "evaluate, then train": immediately before that ancestor (the training loop
  or the training call);
- otherwise the origin reaches the step around a loop's back edge (validation
  at the end of an epoch, evaluation every N steps): the first statement of
  the innermost loop that contains both.

The rule re-checks after fixing, so a placement that does not cover every
path gets completed on the next pass rather than guessed here.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from rnnfix.analysis.syntax.scopes import LOOPS, FuncNode


def statement_path(
    node: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]
) -> list[ast.stmt] | None:
    """Statements from ``scope``'s body down to the one containing ``node``
    (inclusive); None if ``node`` is not in ``scope``."""
    out: list[ast.stmt] = []
    current: ast.AST | None = node
    while current is not None and current is not scope:
        if isinstance(current, ast.stmt):
            out.append(current)
        current = parents.get(current)
    if current is None:
        return None
    return list(reversed(out))


def container(stmt: ast.stmt, parents: dict[ast.AST, ast.AST]) -> list[ast.stmt] | None:
    """The statement list (a block) ``stmt`` is an element of."""
    parent = parents.get(stmt)
    if parent is None:
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def function_head(fn: FuncNode) -> ast.stmt:
    body = fn.body
    if (
        len(body) > 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1]
    return body[0]


def anchor_for(
    origin: ast.AST,
    step: ast.AST,
    scope: FuncNode | None,
    module: ast.Module,
    parents: dict[ast.AST, ast.AST],
    forwards: Sequence[ast.AST] = (),
) -> ast.stmt | None:
    """The statement ``train()`` goes before, for one origin; None when no
    single place is clear. ``forwards`` are the model's forward calls: the
    mode is read at forward time, so ``train()`` must come before the
    forward that feeds the step, never between it and ``backward()``."""
    scope_node: ast.AST = scope if scope is not None else module
    ps = statement_path(step, scope_node, parents)
    if not ps:
        return None
    if origin is scope_node:
        return function_head(scope) if scope is not None else ps[0]
    px = statement_path(origin, scope_node, parents)
    if not px:
        return None
    i = 0
    while i < min(len(px), len(ps)) and px[i] is ps[i]:
        i += 1
    if i == len(ps):
        return None  # the origin is inside the step's own statement
    if i == len(px):
        return ps[i]  # the origin is in the header of a block around the step
    tx, ts = px[i], ps[i]
    block = container(ts, parents)
    if block is not None and container(tx, parents) is block:
        start, end = _index(block, tx), _index(block, ts)
        if start < end:
            # The first statement after the origin that runs a forward of the
            # model (``y = model(x)`` before ``loss.backward()``), else the
            # training loop or call itself.
            inside = {id(n) for f in forwards for n in _ancestors(f, parents)}
            for stmt in block[start + 1 : end + 1]:
                if id(stmt) in inside:
                    return stmt
            return ts
    for common in reversed(px[:i]):
        if isinstance(common, LOOPS):
            if any(s is ps[px.index(common) + 1] for s in common.body):
                return common.body[0]
            return None
    return None


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    out = [node]
    while node in parents:
        node = parents[node]
        out.append(node)
    return out


def _index(block: list[ast.stmt], stmt: ast.stmt) -> int:
    return next(i for i, s in enumerate(block) if s is stmt)
