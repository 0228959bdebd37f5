"""What the classes of a file read on ``self``: the methods their own code
may call on an instance, a subclass's overrides included.

RNF003 asks it of a class of another file of the run that an evaluation
method's class derives from (Informer's ``class Exp_Informer(Exp_Basic)``,
with ``Exp_Basic`` in ``exp/exp_basic.py``): a base that never reads
``self.vali`` never calls the subclass's ``vali``, so every call of it is in
the author's code, where rnnfix sees it. A framework's base class calls its
subclasses' hooks (speechbrain's ``Brain.fit`` calls ``self.evaluate_batch``
under ``torch.no_grad()``): there it says nothing.

Read from the file's text at the first question, apart from its
``ModuleSummary`` (a file of plain classes has no summary at all).
"""

from __future__ import annotations

import ast

from rnnfix.analysis.project.bindings import import_bindings
from rnnfix.analysis.project.summaries import SelfUses
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.scopes import ClassIndex

# Bases that call no method of their subclasses.
_INERT_BASES = frozenset({"builtins.object", "object", "abc.ABC"})


def self_uses(tree: ast.Module) -> SelfUses:
    """Per module-level class of ``tree``: the attribute names its code and
    its bases' (classes of the same file, ``object``, ``abc.ABC``) read on
    ``self``; None when a base is anything else, or when the code reads an
    attribute of ``self`` by a computed name (``getattr(self, hook)``)."""
    classes = ClassIndex(tree).classes
    imports = ImportMap.build(tree)
    own: dict[str, frozenset[str] | None] = {
        name: _read_on_self(cls) for name, cls in classes.items()
    }
    found: dict[str, frozenset[str] | None] = {}

    def with_bases(name: str, seen: frozenset[str]) -> frozenset[str] | None:
        if name in found:
            return found[name]
        names = own[name]
        for base in classes[name].bases:
            if names is None:
                break
            if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                inherited = with_bases(base.id, seen | {name})
                names = None if inherited is None else names | inherited
            elif _qualname(base, imports) not in _INERT_BASES:
                names = None
        found[name] = names
        return names

    for name in classes:
        with_bases(name, frozenset())
    return SelfUses(found, import_bindings(tree))


def _qualname(base: ast.expr, imports: ImportMap) -> str | None:
    found = imports.qualname(base)
    if found is None and isinstance(base, ast.Name):
        return base.id  # a builtin: ``object``
    return found


def _read_on_self(cls: ast.ClassDef) -> frozenset[str] | None:
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and _is_self(node.args[0])
        ):
            key = node.args[1]
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None  # ``getattr(self, f"{stage}_step")``: any method
            names.add(key.value)
    return frozenset(names)


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id in ("self", "cls")
