"""Model objects are written as names or attribute paths: ``model``,
``self.model``, ``agent.critic``. This module turns such expressions into
their dotted text and back."""

from __future__ import annotations

import ast
import builtins
import re

# The names Python binds in every module (``print``, ``len``, ``range``).
BUILTINS = frozenset(dir(builtins))


def dotted(node: ast.AST) -> str | None:
    """``self.model`` -> "self.model"; ``nets["G"]`` -> 'nets["G"]' and
    ``self.models[0].encoder`` -> "self.models[0].encoder" (a constant key: an
    identifier-like string or an integer, the element a container holds
    there); None for anything else (calls, other subscripts)."""
    cls = node.__class__
    if cls is ast.Name:  # most calls: a plain name, or not a path at all
        return node.id  # type: ignore[attr-defined, no-any-return]
    if cls is ast.Attribute:
        base = dotted(node.value)  # type: ignore[attr-defined]
        return None if base is None else f"{base}.{node.attr}"  # type: ignore[attr-defined]
    if cls is ast.Subscript:
        key = _constant_key(node.slice)  # type: ignore[attr-defined]
        base = dotted(node.value) if key is not None else None  # type: ignore[attr-defined]
        return None if base is None else f"{base}[{key}]"
    return None


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _constant_key(node: ast.AST) -> str | None:
    """``"G"`` -> '"G"', ``0`` -> "0", ``-1`` -> "-1": a key written the way
    a formatter writes it, so that every spelling of it is one path."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_key(node.operand)
        return f"-{inner}" if inner is not None and inner.isdigit() else None
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and _KEY.match(value):
        return f'"{value}"'
    return None


def parent_path(key: str) -> str | None:
    """The path ``key`` is part of: "self.nets" for 'self.nets["G"]' and for
    "self.nets.G"; None for a plain name."""
    if key.endswith("]"):
        at = key.rfind("[")
        return key[:at] if at > 0 else None
    at = key.rfind(".")
    return key[:at] if at > 0 else None


def is_below(key: str, prefix: str) -> bool:
    """``key`` is ``prefix`` or a part of it (an attribute or an element)."""
    return key == prefix or (
        key.startswith(prefix) and key[len(prefix) : len(prefix) + 1] in (".", "[")
    )


def root_name(key: str) -> str:
    """The name a path starts from: "nets" for 'nets["G"].encoder'."""
    end = len(key)
    for sep in (".", "["):
        at = key.find(sep)
        if 0 <= at < end:
            end = at
    return key[:end]


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
