"""Does an ``eval()`` of one method exclude the training step of another?

A class that can be built for training or for testing often decides it once:

    if self.is_train:
        self.optimizer_net = torch.optim.Adam(self.parameters, lr=lr)
    else:
        self.net.eval()

(lpips' ``DistModel.initialize``, shipped in stylegan2-pytorch; the
``isTrain`` models of pix2pix-style code). An instance on the ``eval()`` path
has no ``self.optimizer_net``: a training method that steps it cannot run on
that instance, so the ``eval()`` never reaches its step. Object-state guesses
(``FilePass._object_state``) would otherwise say it may.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import walk_local

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView


def eval_excludes_step(flow: FlowView, cause: ast.AST, scope: FuncNode) -> bool:
    """``cause`` (an ``eval()`` in a method of ``scope``'s class) lies in one
    arm of an ``if`` whose other arm is the only place the class binds every
    ``self.<optimizer>`` that ``scope`` steps."""
    info = flow.function_info(scope)
    method = flow.scope_of(cause)
    if info is None or info.cls is None or not info.is_method or method is None:
        return False
    other = flow.function_info(method)
    if other is None or other.cls is not info.cls or not other.is_method:
        return False
    stepped = _stepped_attrs(flow, scope, info.params[0])
    if not stepped:
        return False
    return all(_bound_only_opposite(flow, info.cls, attr, cause) for attr in stepped)


def _stepped_attrs(flow: FlowView, scope: FuncNode, this: str) -> set[str]:
    """The ``self.<attr>`` optimizers whose ``step()`` ``scope`` calls; empty
    when it steps anything else (a local, a parameter, an unknown object)."""
    out: set[str] = set()
    for node in walk_local(scope):
        if not isinstance(node, ast.Call) or flow.step_kind(node) != "optimizer_step":
            continue
        recv = dotted(node.func.value) if isinstance(node.func, ast.Attribute) else None
        root, _, attr = (recv or "").partition(".")
        if root != this or not attr or "." in attr:
            return set()
        out.add(attr)
    return out


def _bound_only_opposite(flow: FlowView, cls: ast.ClassDef, attr: str, cause: ast.AST) -> bool:
    binds = _self_bindings(cls).get(attr, [])
    if not binds:
        return False
    child, parent = cause, flow.parents.get(cause)
    while parent is not None and parent is not cls:
        if isinstance(parent, ast.If) and child is not parent.test:
            arm = parent.body if _within(child, parent.body) else parent.orelse
            opposite = parent.orelse if arm is parent.body else parent.body
            if opposite and all(_inside(b, opposite, flow) for b in binds):
                return True
        child, parent = parent, flow.parents.get(parent)
    return False


_SELF_BINDINGS_KEY = "_rnnfix_self_bindings"


def _self_bindings(cls: ast.ClassDef) -> dict[str, list[ast.stmt]]:
    """Attribute -> the assignments in ``cls`` (``ast.walk`` order) with a
    target ``self.<attribute>``: read once per class and kept on it (asked
    per step and model); the lists hold nodes below the class only, so the
    tree stays free of reference cycles."""
    kept: dict[str, list[ast.stmt]] | None = cls.__dict__.get(_SELF_BINDINGS_KEY)
    if kept is None:
        kept = {}
        for node in ast.walk(cls):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for attr in dict.fromkeys(
                    t.attr
                    for t in _targets(node)
                    if isinstance(t, ast.Attribute) and _is_self_attr(t, t.attr)
                ):
                    kept.setdefault(attr, []).append(node)
        setattr(cls, _SELF_BINDINGS_KEY, kept)
    return kept


def _targets(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        out: list[ast.expr] = []
        for t in node.targets:
            out.extend(t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
        return out
    return [node.target]


def _is_self_attr(target: ast.expr, attr: str) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and target.attr == attr
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


def _within(node: ast.AST, block: list[ast.stmt]) -> bool:
    return any(node is s for s in block)


def _inside(node: ast.AST, block: list[ast.stmt], flow: FlowView) -> bool:
    probe: ast.AST | None = node
    while probe is not None:
        if _within(probe, block):
            return True
        probe = flow.parents.get(probe)
    return False
