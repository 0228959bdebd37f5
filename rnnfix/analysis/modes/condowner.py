"""A model the optimizer holds only under the author's condition (issue 24.6).

diffusers' DreamBooth scripts train the text encoder only with
``--train_text_encoder``, and say so in three places::

    text_encoder = CLIPTextModel.from_pretrained(...)          # eval mode
    if not args.train_text_encoder:
        text_encoder.requires_grad_(False)
    params_to_optimize = (
        itertools.chain(unet.parameters(), text_encoder.parameters())
        if args.train_text_encoder else unet.parameters()
    )
    optimizer = optimizer_class(params_to_optimize, ...)
    for epoch in ...:
        unet.train()                                          # no text_encoder.train()

With the flag the text encoder trains with dropout off (upstream fixed it,
diffusers 4623f095, with ``if args.train_text_encoder: text_encoder.train()``).
An unconditional ``train()`` would be wrong on the other path only in what it
says (the frozen encoder would run its forward with dropout on); the fix that
repeats the author's condition is exactly the upstream one.

``owned_only_when`` answers the condition ``c`` when the file shows all of
it: the optimizer a training step feeds is built once in the step's
function over ``A if c else B`` (or a name bound once to it), ``A``'s
``parameters()`` include the model's and ``B``'s do not (and are known);
``c`` is a plain flag (a dotted name the file never assigns); and every
freeze of the model is the same condition's other side (``if not c:
model.requires_grad_(False)``, ``...from_pretrained(...).requires_grad_(c)``),
with nothing unfreezing it. Anything else: None (no edit).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.pretrained import fed_optimizer_steps
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.torch.optimizers import parameter_owners
from rnnfix.analysis.torch.passthrough import passed_back

if TYPE_CHECKING:
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.modes.records import TrainingStep
    from rnnfix.analysis.syntax.scopes import FuncNode


def owned_only_when(flow: ModeFlow, step: TrainingStep, model: str) -> ast.expr | None:
    """The author's condition under which the optimizer ``step`` feeds holds
    ``model``'s parameters (module docstring); None when the file does not
    show it."""
    scope = step.function
    if scope is None:
        return None
    conditions = [_condition(flow, scope, opt, model) for opt in _stepped(flow, step)]
    if not conditions or any(c is None for c in conditions):
        return None
    first = conditions[0]
    assert first is not None
    if any(ast.dump(c) != ast.dump(first) for c in conditions if c is not None):
        return None
    if not _plain_flag(flow, scope, first) or not _frozen_only_otherwise(flow, model, first):
        return None
    return first


def _stepped(flow: ModeFlow, step: TrainingStep) -> list[str]:
    """The optimizers (dotted receivers) whose ``step()`` this training step feeds."""
    nodes = fed_optimizer_steps(flow, step) or []
    out: list[str] = []
    for node in nodes:
        func = node.func
        receiver = dotted(func.value) if isinstance(func, ast.Attribute) else None
        if receiver is None:
            return []  # ``scaler.step(optimizer)`` and the like: not read here
        out.append(receiver)
    return out


def _condition(flow: ModeFlow, scope: FuncNode, optimizer: str, model: str) -> ast.expr | None:
    built = _single_binding(flow, scope, optimizer)
    if not isinstance(built, ast.Call):
        return None
    params = next((k.value for k in built.keywords if k.arg == "params"), None)
    if params is None and built.args:
        params = built.args[0]
    if isinstance(params, ast.Name):
        params = _single_binding(flow, scope, params.id)
    if not isinstance(params, ast.IfExp):
        return None
    key = flow.canonical(model, scope)
    with_it = _owners(flow, scope, params.body)
    without = _owners(flow, scope, params.orelse)
    if not with_it or not without:
        return None  # not all known, or nothing on the other path: not this shape
    if not any(is_prefix(o, key) for o in with_it) or any(
        is_prefix(o, key) or is_prefix(key, o) for o in without
    ):
        return None
    return params.test


def _owners(flow: ModeFlow, scope: FuncNode, expr: ast.expr) -> set[str] | None:
    owners = parameter_owners(expr)
    if owners is None:
        return None
    return {flow.canonical(o, scope) for o in owners}


def _single_binding(flow: ModeFlow, scope: FuncNode, name: str) -> ast.expr | None:
    """The value of the one statement of ``scope`` that binds ``name``
    (pass-throughs such as ``accelerator.prepare`` hand the same object back
    and do not count); None when there are none or several."""
    found: list[ast.expr] = []
    for node in flow.index.scope_nodes(scope):
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and dotted(node.target) == name:
            return None
        if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)):
                if _binds(node, name):
                    return None
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if dotted(target) == name:
                if not passed_back(node.value, name, _same):
                    found.append(node.value)  # not ``optimizer = accelerator.prepare(optimizer)``
            elif isinstance(target, (ast.Tuple, ast.List)):
                elts = target.elts
                elt = next((e for e in elts if dotted(e) == name), None)
                if elt is not None and not passed_back(node.value, name, _same, (elts, elt)):
                    return None
                if any(isinstance(e, ast.Starred) and dotted(e.value) == name for e in elts):
                    return None
    return found[0] if len(found) == 1 else None


def _binds(node: ast.AST, name: str) -> bool:
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _same(text: str) -> str:
    return text


def _plain_flag(flow: ModeFlow, scope: FuncNode, test: ast.expr) -> bool:
    """``args.train_text_encoder``: a dotted name nothing in the file assigns
    (a parsed option), nor its object in the step's function, so the
    condition means the same at the optimizer and at the inserted ``train()``."""
    text = dotted(test)
    if text is None or not isinstance(test, (ast.Name, ast.Attribute)):
        return False
    top = {id(s) for s in scope.body}
    for node in flow.index.scope_nodes(scope):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in _flat(targets):
                bound = dotted(t)
                if bound is None or not text.startswith(bound + "."):
                    continue
                # ``args = parse_args()`` once, in straight-line code before the
                # condition is first read: the same object at both places
                if isinstance(node, ast.Assign) and id(node) in top and node.lineno < test.lineno:
                    continue
                return False
    for node in ast.walk(flow.tree):
        stores: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            stores = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            stores = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            stores = [node.target]
        for store in stores:
            for n in ast.walk(store):
                if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == text:
                    return False
    return True


def _flat(targets: list[ast.expr]) -> list[ast.expr]:
    out: list[ast.expr] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(_flat(list(t.elts)))
        else:
            out.append(t.value if isinstance(t, ast.Starred) else t)
    return out


def _frozen_only_otherwise(flow: ModeFlow, model: str, test: ast.expr) -> bool:
    """Every freeze of ``model`` (or of a module it is part of, or of a part
    of it) is on the path where ``test`` is false, and nothing unfreezes it."""
    want = ast.dump(test)
    for switch in flow.freezing.switches:
        if not (is_prefix(switch.key, model) or is_prefix(model, switch.key)):
            continue
        if switch.frozen is not True or not _under_not(flow, switch.stmt, want):
            return False
    for node in ast.walk(flow.tree):
        if isinstance(node, ast.Assign) and any(dotted(t) == model for t in node.targets):
            flag = _load_requires_grad(node.value)
            if flag is not None and ast.dump(flag) != want:
                return False
    return True


def _under_not(flow: ModeFlow, stmt: ast.stmt, want: str) -> bool:
    """``stmt`` runs only where the test dumped as ``want`` is false: in the
    body of ``if not <test>:`` or the ``else`` of ``if <test>:``."""
    child: ast.AST = stmt
    parent = flow.parents.get(stmt)
    while parent is not None:
        if isinstance(parent, ast.If):
            test = parent.test
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            operand = test.operand if isinstance(test, ast.UnaryOp) else None
            if negated and operand is not None and ast.dump(operand) == want:
                if any(s is child for s in parent.body):
                    return True
            if ast.dump(test) == want and any(s is child for s in parent.orelse):
                return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        child, parent = parent, flow.parents.get(parent)
    return False


def _load_requires_grad(value: ast.expr) -> ast.expr | None:
    """The flag of ``X.from_pretrained(...).requires_grad_(flag)`` (a chain on
    the load); None when there is none or it is a literal ``True``."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "requires_grad_":
            args = [*value.args, *(k.value for k in value.keywords)]
            if args and not (isinstance(args[0], ast.Constant) and args[0].value is True):
                return args[0]
        value = value.func.value
    return None
