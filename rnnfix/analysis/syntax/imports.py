"""Which local names refer to which modules or objects (``import torch as th``,
``from torch import nn``, ``from torch.nn.parallel import DistributedDataParallel as DDP``)."""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field

from rnnfix.analysis.syntax.walks import walk_statements


@dataclass
class ImportMap:
    # local name -> fully qualified name it is bound to
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, tree: ast.Module) -> ImportMap:
        """The map of ``tree``, built once per tree and shared (trees are never
        changed after parsing; do not modify the map)."""
        found = _BUILT.get(tree)
        if found is None:
            found = _BUILT[tree] = cls._build(tree)
        return found

    @classmethod
    def _build(cls, tree: ast.Module) -> ImportMap:
        names: dict[str, str] = {}
        # Imports anywhere in the file count (function-local imports are common
        # in training scripts); a later rebinding of the same name to something
        # unrelated is rare enough not to model.
        for node in walk_statements(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return cls(names)

    def qualname(self, node: ast.AST) -> str | None:
        """``th.nn.DataParallel`` -> ``torch.nn.DataParallel``; None when the
        expression is not a dotted name rooted in an import."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.names.get(node.id)
        if root is None:
            return None
        return ".".join([root, *reversed(parts)])

    def alias_for(self, module: str) -> str | None:
        """The local name bound to ``module`` itself (``th`` for ``torch``)."""
        for local, qual in self.names.items():
            if qual == module:
                return local
        return None


# One map per tree, dropped with the tree (each pass of the fix loop parses anew).
_BUILT: weakref.WeakKeyDictionary[ast.AST, ImportMap] = weakref.WeakKeyDictionary()
