"""Model objects are written as names or attribute paths: ``model``,
``self.model``, ``agent.critic``. This module turns such expressions into
their dotted text and back."""

from __future__ import annotations

import ast


def dotted(node: ast.AST) -> str | None:
    """``self.model`` -> "self.model"; None for anything that is not a plain
    name or attribute path (calls, subscripts)."""
    cls = node.__class__
    if cls is ast.Name:  # most calls: a plain name, or not a path at all
        return node.id  # type: ignore[attr-defined, no-any-return]
    if cls is not ast.Attribute:
        return None
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def method_call(node: ast.AST) -> tuple[ast.expr, str] | None:
    """For ``<receiver>.<method>(...)`` return (receiver, method)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value, node.func.attr
    return None


# Methods that return the module itself: ``Net().to(device)`` is the ``Net()``.
SELF_RETURNING = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "train", "eval"}
)
# (torch knowledge, kept here because resolving a name sees through it:
# ``model = Net().to(device)`` binds ``model`` to the ``Net()``.)


def strip_self_returning(expr: ast.AST) -> ast.AST:
    """``Net().to(dev).eval()`` -> ``Net()``; ``model.cuda()`` -> ``model``."""
    while (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in SELF_RETURNING
    ):
        expr = expr.func.value
    return expr
