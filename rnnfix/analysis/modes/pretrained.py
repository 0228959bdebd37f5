"""Models that Hugging Face ``transformers`` returns in eval mode (issue 24.6).

``PreTrainedModel.from_pretrained`` ends with ``model.eval()`` (transformers'
``modeling_utils``: "Set model in evaluation mode to deactivate DropOut
modules by default"). A training loop over such a model with no ``train()``
trains it with dropout off. The mode flow therefore starts a model bound to
``<class imported from transformers>.from_pretrained(...)`` in eval mode, with
the assignment as the eval's origin (``eval_origin``). Only transformers: the
``from_pretrained`` of other libraries (asteroid, peft, timm hubs, a project's
own classmethod) may return any mode, and stays unknown.

That eval is not the author's, so nothing the author wrote says it is
deliberate; nor does anything say it is a bug until the model is trained.
``unsupported`` says when an eval fact from such a load lacks the evidence
RNF001 needs to insert ``train()`` (issue 27): an optimizer built over the
model's parameters (or an enclosing model's), stepped by the training step;
no ``train()`` of the author's on the model anywhere in the file (a
conditional ``if args.train_text_encoder: text_encoder.train()`` is the
specification, never made unconditional); and no freezing of it or of its
parts (``requires_grad_(False)``, ``p.requires_grad = False``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import SELF_RETURNING, dotted
from rnnfix.analysis.syntax.walks import walk_tree
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.modes.records import TrainingStep
    from rnnfix.analysis.modes.state import ModeFact
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import FuncNode


def transformers_load(value: ast.AST, imports: ImportMap) -> ast.Call | None:
    """The ``X.from_pretrained(...)`` call of ``value`` (through ``.to(dev)``,
    ``.cuda()``, ``.half()``), where ``X`` is a model class whose library's
    ``from_pretrained`` returns eval mode (the library table's row: a class
    imported from transformers, ``AutoModelForCausalLM``,
    ``transformers.AutoModel``, not a tokenizer or a config); None otherwise."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in SELF_RETURNING
    ):
        value = value.func.value
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "from_pretrained"
    ):
        return None
    owner = value.func.value
    found = library.method_row("from_pretrained", dotted(owner), imports.qualname(owner))
    return value if found is not None and found.returns == "eval" else None


def eval_origin(fact: ModeFact, imports: ImportMap) -> ast.Assign | ast.AnnAssign | None:
    """The assignment from a transformers ``from_pretrained`` that set ``fact``'s
    eval mode, in this scope (``origin``) or a caller's (``cause``)."""
    if fact.mode is not Mode.EVAL:
        return None
    for node in (fact.origin, fact.cause):
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and transformers_load(node.value, imports) is not None
        ):
            return node
    return None


def unsupported(
    flow: FlowView, step: TrainingStep, model: str, may_train: bool, conditional: bool = False
) -> bool:
    """An eval fact from a transformers load of ``model`` reaches ``step``, and
    the file lacks the evidence that putting ``model`` in train mode there is
    the fix (module docstring). ``may_train``: another path reaches the step
    in train mode (the author's own, conditional ``train()``). ``conditional``:
    ``condowner`` showed that the optimizer holds ``model`` under a condition
    whose other side is the only one that freezes it (the fix then repeats
    that condition)."""
    if may_train or _author_trains(flow, model):
        return True
    if conditional:
        return False
    return _frozen(flow, model) or not _optimized(flow, step, model)


def _author_trains(flow: FlowView, model: str) -> bool:
    return any(
        c.mode is Mode.TRAIN and (is_prefix(c.model, model) or is_prefix(model, c.model))
        for c in flow.mode_calls
    )


def _frozen(flow: FlowView, model: str) -> bool:
    """``model`` or a part of it is frozen somewhere in the file: a freezing
    scheme whose modes are the author's (issue 27.2)."""
    root = model.split(".", 1)[0]
    for node in walk_tree(flow.tree):  # the shared walk: asked once per model
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "requires_grad_":
                recv = dotted(node.func.value)
                if recv is not None and (is_prefix(model, recv) or is_prefix(recv, model)):
                    return True
        elif isinstance(node, ast.Assign) and _assigns_frozen(node, model):
            return True
        elif isinstance(node, (ast.For, ast.comprehension)) and _over_parameters(node.iter, root):
            body = node.body if isinstance(node, ast.For) else [node]
            if any(_sets_requires_grad(b) for b in body):
                return True
    return False


def _assigns_frozen(node: ast.Assign, model: str) -> bool:
    """``model = X.from_pretrained(...).requires_grad_(flag)``: frozen on the
    path where ``flag`` is false (diffusers' DreamBooth scripts freeze the text
    encoder unless ``--train_text_encoder``); only a literal ``True`` (or no
    argument) unfreezes."""
    if not any(dotted(t) == model for t in node.targets):
        return False
    value: ast.expr = node.value
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "requires_grad_":
            args = [*value.args, *(k.value for k in value.keywords)]
            if args and not (isinstance(args[0], ast.Constant) and args[0].value is True):
                return True
        value = value.func.value
    return False


def _over_parameters(it: ast.expr, root: str) -> bool:
    for n in ast.walk(it):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("parameters", "named_parameters")
        ):
            recv = dotted(n.func.value)
            if recv is not None and recv.split(".", 1)[0] == root:
                return True
    return False


def _sets_requires_grad(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets)
        for n in ast.walk(node)
    )


def fed_optimizer_steps(flow: FlowView, step: TrainingStep) -> list[ast.Call] | None:
    """The ``optimizer.step()`` calls ``step`` feeds: itself, or for a
    ``backward()`` the steps after it in its function; None when the step is
    another kind (a trainer's own ``fit``: the optimizer is not in this file)."""
    if step.kind == "optimizer_step":
        return [step.node]
    if step.kind == "backward":
        start = (step.node.lineno, step.node.col_offset)
        return [
            s.node
            for s in flow.training_steps
            if s.kind == "optimizer_step"
            and s.function is step.function
            and (s.node.lineno, s.node.col_offset) > start
        ]
    return None


def _optimized(flow: FlowView, step: TrainingStep, model: str) -> bool:
    """An optimizer step that ``step`` feeds updates ``model``'s parameters,
    taken from ``model`` itself or a model holding it: an optimizer over a
    part only (a head, adapters) is a probe whose other parts stay as loaded."""
    steps = fed_optimizer_steps(flow, step)
    if steps is None:
        return False  # the optimizer is in another file: nothing to read
    scope = flow.scope_of(step.node)
    for node in steps:
        func = node.func
        receiver = dotted(func.value if isinstance(func, ast.Attribute) else func)
        if receiver is not None and _owns(flow, receiver, model, scope, 0):
            return True
    return False


def _owns(flow: FlowView, optimizer: str, model: str, scope: FuncNode | None, depth: int) -> bool:
    """The optimizer ``optimizer`` of ``scope`` is built over the parameters of
    ``model`` (or a model holding it); through a function's parameters, at
    every call of the function in the file (``forward(model, batch, optimizer)``)."""
    owners = flow.optimizers.owners_of(optimizer, scope)
    if owners is not None:
        key = flow.canonical(model, scope)
        return any(is_prefix(o, key) for o in owners)
    info = flow.index.functions.get(scope) if scope is not None else None
    if info is None or depth > 2:
        return False
    params = list(info.params)
    o_root, _, o_rest = optimizer.partition(".")
    m_root, _, m_rest = model.partition(".")
    if o_root not in params or m_root not in params:
        return False
    callers = flow.callers(info.node)
    if not callers:
        return False
    for caller, call in callers:
        o_arg = _argument(call, params, o_root, info.is_method)
        m_arg = _argument(call, params, m_root, info.is_method)
        if o_arg is None or m_arg is None:
            return False
        o_key = o_arg + ("." + o_rest if o_rest else "")
        m_key = m_arg + ("." + m_rest if m_rest else "")
        if not _owns(flow, o_key, m_key, caller, depth + 1):
            return False
    return True


def _argument(call: ast.Call, params: list[str], name: str, is_method: bool) -> str | None:
    """The dotted argument ``call`` passes for parameter ``name``; None when
    it is not written out (``*args``, an expression)."""
    for k in call.keywords:
        if k.arg == name:
            return dotted(k.value)
    positional = params[1:] if is_method else params
    if name not in positional:
        return None
    i = positional.index(name)
    if i >= len(call.args) or any(isinstance(a, ast.Starred) for a in call.args[: i + 1]):
        return None
    return dotted(call.args[i])
