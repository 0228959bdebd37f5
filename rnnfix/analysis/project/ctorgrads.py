"""Which constructor parameters a class's methods take an input gradient
through: ``ClassSummary.ctor_grads``, for the project index.

``class PGD: def __init__(self, model): self.model = model`` with a
``perturb()`` whose ``Summary.entry_grads`` holds ``self.model`` takes an input
gradient through the model its caller passed to ``PGD(model)``, in the mode
that model has at the ``perturb()`` call: ``{"perturb": ("model",)}``. A
caller in another file connects ``attack.perturb(x)`` (or ``PGD(m).perturb(x)``,
``attack(x)`` for ``__call__``) to the argument of the construction
(``ProjectView.stored_gradients``).

Precision first, an attribute counts only when the mode the caller left is
the one the method sees:

- ``__init__`` (the class's own, its bases all in this file and without one
  of their own) assigns it once, from the parameter itself (``model`` or
  ``model.to(device)``), and no other method assigns it;
- no method of the class switches its mode (an ``eval()`` in ``__init__``, a
  ``train()`` that restores it): those are the mode flow's, not the caller's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.syntax.names import strip_self_returning
from rnnfix.analysis.syntax.scopes import bind_arguments
from rnnfix.analysis.syntax.walks import walk_subtree

if TYPE_CHECKING:
    from rnnfix.analysis.project.summaries import FunctionSummary
    from rnnfix.analysis.syntax.scopes import FuncNode

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Constructor:
    params: tuple[str, ...]  # positional, ``self`` included
    kwonly: tuple[str, ...]
    stored: dict[str, str]  # ``self`` attribute -> the parameter it holds
    # Method (as the class sees it, bases of this file included) -> the
    # methods it calls on ``self``: ``__call__`` running ``self.forward(x)``
    # that a subclass defines.
    self_calls: dict[str, frozenset[str]] = field(default_factory=dict)
    # Attributes a method switches the mode of (``self.model.train()``), even
    # for a moment: restored modes leave no effect in a summary.
    switched: frozenset[str] = frozenset()


def constructor(name: str, classes: dict[str, ast.ClassDef]) -> Constructor | None:
    """The ``__init__`` of class ``name`` and the parameters it stores as
    attributes; None when a base is not a class of this file (its
    constructor or methods are unknown here) or there is no ``__init__``."""
    chain: list[ast.ClassDef] = []
    current: str | None = name
    while current is not None:
        cls = classes.get(current)
        if cls is None or cls in chain or len(cls.bases) > 1 or cls.keywords:
            return None
        chain.append(cls)
        base = cls.bases[0] if cls.bases else None
        if base is None or (isinstance(base, ast.Name) and base.id == "object"):
            current = None
        elif isinstance(base, ast.Name):
            current = base.id
        else:
            return None
    inits = [init for c in chain if (init := _own_init(c)) is not None]
    if not inits:
        return None
    init = inits[0]
    args = init.args
    params = tuple(a.arg for a in [*args.posonlyargs, *args.args])
    if not params:
        return None
    this = params[0]
    # Each method's nodes in ``ast.walk`` order, listed once for the two walks below.
    nodes: dict[ast.AST, list[ast.AST]] = {}

    def walked(method: ast.AST) -> list[ast.AST]:
        found = nodes.get(method)
        if found is None:
            found = nodes[method] = walk_subtree(method)
        return found

    # Every ``self.<attr> = ...`` of the class chain: attr -> values.
    assigned: dict[str, list[tuple[ast.AST, ast.expr | None]]] = {}
    for cls in chain:
        for method in (s for s in cls.body if isinstance(s, _FUNCS)):
            for node in walked(method):
                for target, value in _assignments(node):
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == this
                    ):
                        assigned.setdefault(target.attr, []).append((method, value))
    stored: dict[str, str] = {}
    for attr, values in assigned.items():
        if len(values) != 1 or values[0][1] is None:
            continue
        param = _init_parameter(inits, values[0][0], values[0][1])
        if param is not None:
            stored[attr] = param
    self_calls: dict[str, frozenset[str]] = {}
    for cls in chain:  # the class first: its methods override its bases'
        for method in (s for s in cls.body if isinstance(s, _FUNCS)):
            if method.name in self_calls:
                continue
            self_calls[method.name] = frozenset(
                n.func.attr
                for n in walked(method)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == this
            )
    switched = frozenset(
        held
        for cls in chain
        for n in walk_subtree(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("train", "eval", "requires_grad_")
        and (held := _self_attribute(n.func.value, this)) is not None
    )
    return Constructor(params, tuple(a.arg for a in args.kwonlyargs), stored, self_calls, switched)


def ctor_gradients(
    ctor: Constructor, methods: dict[str, FunctionSummary]
) -> dict[str, tuple[str, ...]]:
    """Method -> the constructor parameters whose stored model it takes an
    input gradient through, in the mode the caller left it."""
    this = ctor.params[0]
    switched = set(ctor.switched) | {
        key.split(".")[1]
        for m in methods.values()
        for key in m.summary.effects
        if key.startswith(this + ".") and key.count(".") >= 1
    }
    out: dict[str, tuple[str, ...]] = {}
    for name, method in methods.items():
        if name == "__init__" or not method.params or method.params[0] != this:
            continue
        found: list[str] = []
        for key in method.summary.entry_grads:
            root, _, rest = key.partition(".")
            attr = rest.split(".")[0]
            param = ctor.stored.get(attr)
            if root == this and param is not None and attr not in switched and param not in found:
                found.append(param)
        if found:
            out[name] = tuple(found)
    # No method switches these attributes' modes: a method that calls one of
    # them on ``self`` runs it in the mode its own caller left.
    changed = True
    while changed:
        changed = False
        for name, called in ctor.self_calls.items():
            if name == "__init__":
                continue
            more = [p for c in called for p in out.get(c, ()) if p not in out.get(name, ())]
            if more:
                out[name] = (*out.get(name, ()), *dict.fromkeys(more))
                changed = True
    return out


def _own_init(cls: ast.ClassDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return next((s for s in cls.body if isinstance(s, _FUNCS) and s.name == "__init__"), None)


def _init_parameter(inits: list[FuncNode], method: ast.AST, value: ast.expr) -> str | None:
    """The parameter of the class's own constructor (``inits[0]``) that
    ``value``, assigned in ``method``, is: a parameter of that ``__init__``,
    or of a base's ``__init__`` that each ``__init__`` on the way calls
    (``super().__init__(model)``, ``Base.__init__(self, model)``) with its own
    parameter unchanged."""
    stripped = strip_self_returning(value)
    if _has_mode_call(value) or not isinstance(stripped, ast.Name):
        return None
    if method not in inits:
        return None
    name = stripped.id
    depth = inits.index(method)
    while True:
        fn = inits[depth]
        args = fn.args
        names = {a.arg for a in [*args.posonlyargs, *args.args][1:]} | {
            a.arg for a in args.kwonlyargs
        }
        if name not in names or _rebound(fn, name):
            return None
        if depth == 0:
            return name
        caller = inits[depth - 1]
        calls = [c for c in ast.walk(caller) if isinstance(c, ast.Call) and _is_init_call(c)]
        if len(calls) != 1:
            return None
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        via_super = isinstance(calls[0].func, ast.Attribute) and isinstance(
            calls[0].func.value, ast.Call
        )
        bound = bind_arguments(
            params if via_super else ["", *params],
            [a.arg for a in args.kwonlyargs],
            True,
            calls[0],
        )
        passed = bound.get(name)
        if passed is None or "." in passed:
            return None
        name = passed
        depth -= 1


def _self_attribute(expr: ast.expr, this: str) -> str | None:
    """``self.model.lstm`` -> ``model``: the attribute of ``self`` it is under."""
    attr: str | None = None
    while isinstance(expr, ast.Attribute):
        attr = expr.attr
        expr = expr.value
    return attr if isinstance(expr, ast.Name) and expr.id == this else None


def _is_init_call(call: ast.Call) -> bool:
    """``super().__init__(...)`` or ``Base.__init__(self, ...)``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "__init__":
        return False
    owner = func.value
    if isinstance(owner, ast.Call):
        return isinstance(owner.func, ast.Name) and owner.func.id == "super"
    return isinstance(owner, ast.Name)


def _assignments(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        pairs: list[tuple[ast.expr, ast.expr | None]] = []
        for t in node.targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                pairs.extend((e, None) for e in t.elts)  # unpacked: not a plain store
            else:
                pairs.append((t, node.value))
        return pairs
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [(node.target, node.value if isinstance(node, ast.AnnAssign) else None)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        targets = (
            [node.target]
            if isinstance(node, (ast.For, ast.AsyncFor))
            else [i.optional_vars for i in node.items if i.optional_vars is not None]
        )
        return [(t, None) for t in targets]
    return []


def _has_mode_call(expr: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("eval", "train")
        for n in ast.walk(expr)
    )


def _rebound(fn: ast.AST, name: str) -> bool:
    """``name`` is assigned in ``fn`` (the parameter may no longer be the argument)."""
    return any(
        isinstance(t, ast.Name) and t.id == name for n in ast.walk(fn) for t, _ in _assignments(n)
    )
