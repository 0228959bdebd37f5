"""A file's import bindings, relative imports included: what lets the project
index follow ``from .trainer import fit`` to the file that defines ``fit``."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

# (relative import level, dotted parts): ``from ..a import b`` -> (2, ("a", "b")).
Binding = tuple[int, tuple[str, ...]]

if TYPE_CHECKING:
    pass


def star_key(level: int, module: tuple[str, ...]) -> str:
    """The key ``import_bindings`` files ``from <module> import *`` under: no
    identifier starts with ``*``, so no name lookup ever finds it, and a walk
    over the values follows it like any other import."""
    return "*" + "." * level + ".".join(module)


def stars(bindings: dict[str, Binding]) -> list[Binding]:
    """The star imports among ``bindings``, the last one first (a later
    ``import *`` rebinds the names an earlier one bound)."""
    return [b for k, b in reversed(bindings.items()) if k.startswith("*")]


def import_bindings(tree: ast.Module) -> dict[str, Binding]:
    """Local name -> what it is bound to, relative imports included (the
    ``ImportMap`` of ``rnnfix.analysis.syntax.imports`` keeps absolute ones
    only); ``from m import *`` under ``star_key`` (a package's ``__init__.py``
    re-exporting ``from .tensor import *``)."""
    out: dict[str, Binding] = {}
    for node in statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = (0, tuple(alias.name.split(".")))
                else:
                    top = alias.name.split(".")[0]
                    out[top] = (0, (top,))
        elif isinstance(node, ast.ImportFrom):
            module = tuple(node.module.split(".")) if node.module else ()
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = (node.level, (*module, alias.name))
                else:
                    out[star_key(node.level, module)] = (node.level, module)
    return out


def statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement, nested ones included, without walking expressions
    (imports are statements; expressions are most of a tree's nodes)."""
    stack = list(reversed(body))
    blocks = _BLOCKS
    while stack:
        stmt = stack.pop()
        yield stmt
        fields = blocks.get(stmt.__class__)
        if fields is None:
            fields = _block_fields(stmt.__class__)
        if not fields:
            continue  # a simple statement (most of them)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, ast.stmt)]))
        for handler in getattr(stmt, "handlers", None) or ():
            stack.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", None) or ():
            stack.extend(reversed(case.body))


# Per statement class: whether it has a block of statements (``statements``).
_BLOCKS: dict[type, bool] = {}


def _block_fields(cls: type) -> bool:
    fields = getattr(cls, "_fields", ())
    found = _BLOCKS[cls] = any(
        f in fields for f in ("body", "orelse", "finalbody", "handlers", "cases")
    )
    return found
