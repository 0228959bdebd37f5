"""Calls that hand a model back as it was: accelerate's ``Accelerator.prepare``.

``model, optimizer, loader = accelerator.prepare(model, optimizer, loader)``
returns its arguments in order, a model wrapped for the device setup (DDP,
FSDP, or the model itself); ``Module.train``/``eval`` reach through those
wrappers, and ``prepare`` switches no mode. So a model bound again to its own
name by ``prepare`` keeps the mode it had: the flow must not forget that a
``from_pretrained`` model is in eval (issue 24.6), nor that a built one trains.
Only a receiver the file builds from ``accelerate.Accelerator``.
"""

from __future__ import annotations

import ast
import weakref
from typing import TYPE_CHECKING

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import walk_tree

if TYPE_CHECKING:
    from rnnfix.analysis.syntax.imports import ImportMap

_ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
_known: weakref.WeakKeyDictionary[ast.Module, frozenset[str]] = weakref.WeakKeyDictionary()


def accelerators(tree: ast.Module, imports: ImportMap) -> frozenset[str]:
    """The names (``accelerator``, ``self.accelerator``) the file binds to an
    ``Accelerator(...)``."""
    found = _known.get(tree)
    if found is None:
        names: set[str] = set()
        # ``qualname`` gives an ``accelerate.`` name only through an import of
        # accelerate: without one the walk can find nothing (most files).
        imported = any(q.split(".")[0] == "accelerate" for q in imports.names.values())
        for node in walk_tree(tree) if imported else ():
            if (
                node.__class__ is ast.Assign
                and isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and imports.qualname(node.value.func) in _ACCELERATORS
            ):
                names.update(t for t in map(dotted, node.targets) if t is not None)
        found = _known[tree] = frozenset(names)
    return found


def prepared_as_itself(
    value: ast.expr, position: int | None, key: str, tree: ast.Module, imports: ImportMap
) -> bool:
    """``value`` is ``<accelerator>.prepare(...)`` whose argument at
    ``position`` (None: the only one) is ``key`` itself, the name it is bound to."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "prepare"
        and not value.keywords
        and not any(isinstance(a, ast.Starred) for a in value.args)
    ):
        return False
    if dotted(value.func.value) not in accelerators(tree, imports):
        return False
    if position is None:
        return len(value.args) == 1 and dotted(value.args[0]) == key
    return position < len(value.args) and dotted(value.args[position]) == key
