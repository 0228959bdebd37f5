"""Which methods of a module class run its forward (issue 36.2), computed
from the class, not from a list of names.

A method runs the forward when its body calls ``self(...)`` or
``self.forward(...)``, or calls (``self.<m>(...)``) another method of the
class that does (``predict`` -> ``self.scores(x)`` -> ``self(x)``), to any
depth. Only plain forwards count: a method that switches a mode, opens a
grad context (``with torch.no_grad():``), trains (``backward``, ``step``,
``zero_grad``) or is decorated (``@torch.no_grad()``, ``@staticmethod``)
decides something its caller's code does not show, so a call of it is not
read as the caller's forward. Library classes' forward methods
(transformers' ``generate``) are rows of ``library``, not computed.
"""

from __future__ import annotations

import ast

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import walk_local
from rnnfix.analysis.torch.api import MODULE_METHODS, module_mode_switch

_TRAINING_CALLS = frozenset({"backward", "step", "zero_grad"})
_GRAD_SWITCHES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "enable_grad"})


def forward_methods(cls: ast.ClassDef) -> frozenset[str]:
    """The methods of ``cls`` (its own body) that run its forward, ``forward``
    itself excluded."""
    methods = {
        s.name: s
        for s in cls.body
        if isinstance(s, ast.FunctionDef)
        and not s.decorator_list
        and s.name != "forward"
        and not (s.name.startswith("__") and s.name.endswith("__"))
        and s.name not in MODULE_METHODS
    }
    direct: set[str] = set()
    calls: dict[str, set[str]] = {}
    for name, fn in methods.items():
        found = _read(fn)
        if found is None:
            continue
        runs_self, called = found
        if runs_self:
            direct.add(name)
        calls[name] = called & methods.keys()
    out = set(direct)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in out and called & out:
                out.add(name)
                changed = True
    return frozenset(out)


def _read(fn: ast.FunctionDef) -> tuple[bool, set[str]] | None:
    """(calls ``self(...)``/``self.forward(...)``, the ``self.<m>`` it calls);
    None when it is no plain forward (module docstring)."""
    runs_self = False
    called: set[str] = set()
    for n in walk_local(fn):
        if module_mode_switch(n) is not None:
            return None
        if isinstance(n, (ast.With, ast.AsyncWith)) and any(
            _name(i.context_expr) in _GRAD_SWITCHES for i in n.items
        ):
            return None
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        if isinstance(func, ast.Attribute) and func.attr in _TRAINING_CALLS:
            return None
        if dotted(func) == "self":
            runs_self = True
        elif isinstance(func, ast.Attribute) and dotted(func.value) == "self":
            if func.attr == "forward":
                runs_self = True
            else:
                called.add(func.attr)
    return runs_self, called


def _name(expr: ast.expr) -> str:
    func = expr.func if isinstance(expr, ast.Call) else expr
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
