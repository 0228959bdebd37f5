"""Which methods of a module class run its forward (issue 36.2), computed
from the class, not from a list of names.

A method runs the forward when its body

- calls ``self(...)`` or ``self.forward(...)``;
- calls one of the class's submodules, ``self.<sub>(...)`` or
  ``self.<sub>[i](...)``, where ``submodules`` (the caller's: attributes the
  class assigns a built module to, ``self.enc = Encoder(...)``) holds
  ``<sub>`` (TabNet's ``forward_masks`` -> ``self.embedder(x)``);
- is one the class's own ``forward`` calls (``self.encode(...)``, to any
  depth) and calls an attribute the class assigns (``encode`` ->
  ``self.encoder(...)``, an attribute given to ``__init__``): the forward's
  own computation, cut in pieces; a helper ``forward`` calls that calls no
  attribute (``make_mask``) runs nothing of the model;
- calls an attribute the class's own ``forward`` calls too, assigned
  something other than a stateless torch module (Speech-Transformer's
  ``recognize`` -> ``self.encoder(...)``, the encoder ``forward`` runs, of a
  class another file defines): part of the model's own computation;
- or calls (``self.<m>(...)``) another method of the class that does
  (``predict`` -> ``self.scores(x)`` -> ``self(x)``), to any depth.

Bases count (``inherited``: the forward methods of the class's bases, which
the caller computes the same way): a base's forward method the class does not
override runs the class's own forward (``self.forward`` is the subclass's);
an override that hands the call to the same method of the module its own
forward runs (torchmil's ``MILModelWrapper.compute_loss`` ->
``self.model.compute_loss(...)``, its ``forward`` -> ``self.model(...)``)
keeps the base's meaning: a wrapper of a model of the same interface.

Only plain forwards count: a method that switches a mode, opens a grad
context (``with torch.no_grad():``), trains (``backward``, ``step``,
``zero_grad``) or is decorated (``@staticmethod``, a cache) decides
something its caller's code does not show, so a call of it is not read as
the caller's forward. Apart: methods decorated to run with grad off
(``@torch.no_grad()``, ``@torch.inference_mode()``: nanoGPT's ``generate``,
a translator's ``translate``), whose grad is settled and whose mode is the
caller's (``grad_off_forwards``): a forward for a region's mode, never a
graph a helper's summary records. Library classes' forward methods
(transformers' ``generate``) are rows of ``library``, not computed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import walk_local
from rnnfix.analysis.torch.api import (
    MODULE_METHODS,
    is_stateless_torch_module,
    module_mode_switch,
)
from rnnfix.analysis.torch.classfacts import self_assignments

_TRAINING_CALLS = frozenset({"backward", "step", "zero_grad"})
_GRAD_SWITCHES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "enable_grad"})


@dataclass
class _Body:
    """What one method's body calls on ``self``."""

    runs_self: bool = False  # ``self(...)``, ``self.forward(...)``
    methods: set[str] = field(default_factory=set)  # ``self.<m>(...)``
    attributes: set[str] = field(default_factory=set)  # ``self.<a>(...)``, ``self.<a>[i](...)``
    # ``self.<a>.<m>(...)``: (attribute, method) pairs
    delegated: set[tuple[str, str]] = field(default_factory=set)


def forward_methods(
    cls: ast.ClassDef,
    submodules: frozenset[str] = frozenset(),
    inherited: frozenset[str] = frozenset(),
    grad_off: bool = False,
) -> frozenset[str]:
    """The methods of ``cls`` that run its forward, ``forward`` itself
    excluded. ``submodules``: the attributes the class assigns a module to
    (``models.module_attributes``); ``inherited``: its bases' forward
    methods. With ``grad_off``, methods decorated to run with grad off
    count too (``grad_off_forwards``)."""
    # Attributes the class assigns itself (``self.encoder = encoder``): an
    # inherited method (``self.parameters()``) is none.
    assigned = {attr for attr, _value, _fn in self_assignments(cls)}
    methods = {
        s.name: s
        for s in cls.body
        if isinstance(s, ast.FunctionDef)
        and (not s.decorator_list or (grad_off and all(_grad_off(d) for d in s.decorator_list)))
        and not (s.name.startswith("__") and s.name.endswith("__"))
        and s.name not in MODULE_METHODS
    }
    bodies: dict[str, _Body] = {}
    for name, fn in methods.items():
        found = _read(fn)
        if found is not None:
            bodies[name] = found
    reached = _reached_from_forward(bodies)
    # A base's forward method the class leaves alone (or does not define at
    # all: ``s.name`` of a decorated or dunder override stays out).
    own = {s.name for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: set[str] = set(inherited - own)
    forward = bodies.get("forward")
    runs = forward.attributes if forward is not None else set()
    # The forward's own parts, a loss or an activation it calls aside.
    parts = runs & assigned - _stateless_attributes(cls)
    for name, body in bodies.items():
        if name == "forward":
            continue
        if body.runs_self or body.attributes & submodules or body.attributes & parts:
            out.add(name)
        elif name in reached and body.attributes & assigned:
            out.add(name)
        elif name in inherited and any(m == name and a in runs for a, m in body.delegated):
            out.add(name)
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name != "forward" and name not in out and body.methods & out:
                out.add(name)
                changed = True
    return frozenset(out)


# ``@torch.no_grad()``, ``@torch.inference_mode()`` (also bare, and as
# imported names): the method runs with grad off whatever its caller does.
_GRAD_OFF_DECORATORS = frozenset(
    {"torch.no_grad", "no_grad", "torch.inference_mode", "inference_mode",
     "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}
)  # fmt: skip


def _grad_off(decorator: ast.expr) -> bool:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(decorator, ast.Call) and (decorator.args or decorator.keywords):
        return False  # ``inference_mode(False)``, ``set_grad_enabled(flag)``
    return dotted(func) in _GRAD_OFF_DECORATORS


def grad_off_forwards(
    cls: ast.ClassDef,
    submodules: frozenset[str] = frozenset(),
    inherited: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The forward methods of ``cls`` decorated to run with grad off."""
    return forward_methods(cls, submodules, inherited, grad_off=True) & grad_off_methods(cls)


def grad_off_methods(cls: ast.ClassDef) -> frozenset[str]:
    """The methods of ``cls`` decorated to run with grad off (and with no
    other decorator)."""
    return frozenset(
        s.name
        for s in cls.body
        if isinstance(s, ast.FunctionDef)
        and s.decorator_list
        and all(_grad_off(d) for d in s.decorator_list)
    )


def _stateless_attributes(cls: ast.ClassDef) -> set[str]:
    """Attributes assigned, anywhere in the class, a stateless torch module
    (``self.criterion = nn.CrossEntropyLoss()``, ``self.act = nn.ReLU()``),
    read by the class's last name as written (the class has no imports)."""
    out: set[str] = set()
    for attr, value, _fn in self_assignments(cls):
        func = value.func if isinstance(value, ast.Call) else None
        name = dotted(func) if func is not None else None
        if name is not None and is_stateless_torch_module("torch.nn." + name.rsplit(".", 1)[-1]):
            out.add(attr)
    return out


def _reached_from_forward(bodies: dict[str, _Body]) -> set[str]:
    """The methods ``forward`` calls on ``self``, to any depth."""
    start = bodies.get("forward")
    if start is None:
        return set()
    seen: set[str] = set()
    todo = list(start.methods)
    while todo:
        name = todo.pop()
        if name in seen or name not in bodies:
            continue
        seen.add(name)
        todo.extend(bodies[name].methods)
    return seen


def _read(fn: ast.FunctionDef) -> _Body | None:
    """What ``fn`` calls on ``self``; None when it is no plain forward."""
    body = _Body()
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
        if isinstance(func, ast.Subscript):
            func = func.value  # ``self.layers[i](x)``
            if isinstance(func, ast.Attribute) and dotted(func.value) == "self":
                body.attributes.add(func.attr)
            continue
        if dotted(func) == "self":
            body.runs_self = True
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and dotted(func.value.value) == "self"
        ):
            body.delegated.add((func.value.attr, func.attr))
        elif isinstance(func, ast.Attribute) and dotted(func.value) == "self":
            if func.attr == "forward":
                body.runs_self = True
            else:
                body.methods.add(func.attr)
                body.attributes.add(func.attr)
    return body


def _name(expr: ast.expr) -> str:
    func = expr.func if isinstance(expr, ast.Call) else expr
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
