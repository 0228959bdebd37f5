"""What the author wrote about a model's parameters and mode that no training
step can contradict: freezing, partial modes, ``None`` on some path, and mode
calls made under a condition.

These are the *evidence of intent* RNF001 reads before it puts a model back
in train mode (issue 27: an edit needs positive evidence of a bug):

- ``unet.requires_grad_(False)`` or ``for p in m.parameters(): p.requires_grad
  = False``: no optimizer can change the model, its mode is the author's to
  choose (a frozen UNet in textual inversion, a DINO teacher, a frozen text
  encoder);
- ``model.eval()`` then ``model.module.layer4.train()``: a freezing scheme
  (BatchNorm statistics frozen in the rest), not a forgotten ``train()``;
- ``text_encoder = None`` on a documented path: a call on it would raise
  ``AttributeError``;
- ``if args.train_text_encoder: text_encoder.train()``: the author's own
  condition is the specification; an unconditional call would undo it.

Each answer is a syntactic fact about the file, computed once per flow.
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.modeapi import setter_call
from rnnfix.analysis.modes.placement import container
from rnnfix.analysis.modes.records import GradSwitch
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView


class Freezing:
    def __init__(self, flow: FlowView) -> None:
        self.flow = flow

    @functools.cached_property
    def switches(self) -> tuple[GradSwitch, ...]:
        out: list[GradSwitch] = []
        flow = self.flow
        for node in walk_tree(flow.tree):
            found: tuple[str, bool | None] | None = None
            if isinstance(node, ast.Call):
                found = _requires_grad_call(node) or self._freezing_helper(node)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                found = _requires_grad_loop(node)
            if found is None:
                continue
            stmt = flow.stmt_of(node)
            if stmt is None:
                continue
            scope = flow.scope_of(node)
            out.append(GradSwitch(flow.canonical(found[0], scope), stmt, scope, found[1]))
        return tuple(out)

    def _freezing_helper(self, call: ast.Call) -> tuple[str, bool | None] | None:
        """``freeze_params(unet.parameters())`` with a helper of this file whose
        body is ``for p in params: p.requires_grad = False``."""
        if not call.args or not isinstance(call.args[0], ast.Call):
            return None
        arg = call.args[0]
        if not (isinstance(arg.func, ast.Attribute) and arg.func.attr == "parameters"):
            return None
        owner = dotted(arg.func.value)
        res = self.flow.index.resolve(call, self.flow.scope_of(call))
        if owner is None or res is None:
            return None
        info = self.flow.index.functions.get(res.callee.node)
        params = (
            info.params[1:]
            if info is not None and info.is_method
            else (info.params if info is not None else [])
        )
        if not params:
            return None
        for stmt in res.callee.node.body:
            if (
                isinstance(stmt, (ast.For, ast.AsyncFor))
                and isinstance(stmt.iter, ast.Name)
                and stmt.iter.id == params[0]
            ):
                found = _requires_grad_body(stmt)
                return (owner, found) if found is not None else None
        return None

    def frozen(self, model: str) -> bool:
        """Some statement of the file freezes ``model`` (or a module it is
        part of) and none may unfreeze it, a module it is part of, or a part
        of it (``model.requires_grad_(False); model.fc.requires_grad_(True)``
        is a linear probe: the head trains): no optimizer step can change
        it, so its mode is the author's choice."""
        frozen = any(s.frozen is True and is_prefix(s.key, model) for s in self.switches)
        thawed = any(s.frozen is not True and _related(s.key, model) for s in self.switches)
        return frozen and not thawed

    def grad_free_at(self, model: str, site: ast.AST, depth: int = 0) -> bool:
        """Every parameter of ``model`` has ``requires_grad`` off at ``site``,
        as the author switched it: a statement of the site's scope, before it
        on every path to it, freezes the model (or a module holding it) and
        none in between may thaw it (crnn's ``for p in crnn.parameters():
        p.requires_grad = False`` at the head of ``val``); or ``model`` is a
        parameter of the site's function and every call of that function in
        the file passes a model frozen so at the call (EfficientDet's
        ``model.requires_grad_(False)`` before ``evaluate_coco(..., model)``).
        Its forward then records no graph for those parameters, and
        ``no_grad`` around it adds nothing."""
        flow = self.flow
        stmt = flow.stmt_of(site)
        if stmt is None:
            return False
        scope = flow.scope_of(site)
        key = flow.canonical(model, scope)
        if self._frozen_before(key, stmt, scope):
            return True
        if depth >= 2 or scope is None:
            return False
        a = scope.args
        params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        sites = flow.call_sites(scope) if key.split(".")[0] in params else []
        return bool(sites) and all(
            (mine := res.caller_key(key)) is not None and self.grad_free_at(mine, call, depth + 1)
            for _, call, res in sites
        )

    def _frozen_before(self, key: str, stmt: ast.stmt, scope: FuncNode | None) -> bool:
        """A freeze of ``key`` (or of a module holding it) in ``scope`` that
        runs before ``stmt`` on every path (it is in the block of ``stmt`` or
        of a statement enclosing it, and earlier), with no switch of a related
        path in ``scope`` after it and before ``stmt``."""
        mine = [s for s in self.switches if s.scope is scope and _related(s.key, key)]
        at = (stmt.lineno, stmt.col_offset)
        freezes = [
            s
            for s in mine
            if s.frozen is True and is_prefix(s.key, key) and self._dominates(s.stmt, stmt, scope)
        ]
        for freeze in freezes:
            start = (freeze.stmt.lineno, freeze.stmt.col_offset)
            if not any(
                s is not freeze
                and s.frozen is not True
                and start < (s.stmt.lineno, s.stmt.col_offset) < at
                for s in mine
            ):
                return True
        return False

    def _dominates(self, first: ast.stmt, stmt: ast.stmt, scope: FuncNode | None) -> bool:
        """``first`` runs before ``stmt`` whenever ``stmt`` runs: it is an
        earlier element of the block of ``stmt`` or of one of its enclosing
        statements in ``scope``."""
        parents = self.flow.parents
        cur: ast.AST | None = stmt
        while isinstance(cur, ast.stmt) and cur is not scope:
            block = container(cur, parents)
            if block is not None:
                ids = [id(s) for s in block]
                if id(first) in ids and ids.index(id(first)) < ids.index(id(cur)):
                    return True
            cur = parents.get(cur)
        return False

    def frozen_on_some_path(self, model: str) -> bool:
        """``model`` (or a module it is part of) is frozen by some statement of
        the file, perhaps under a condition (``if not args.train_text_encoder:
        text_encoder.requires_grad_(False)``)."""
        return any(s.frozen is True and is_prefix(s.key, model) for s in self.switches)

    def freezes_near(self, origin: ast.AST, model: str) -> GradSwitch | None:
        """A freeze of ``model``, a module it is part of, or one of its parts in
        the block of statement ``origin`` (``unet.requires_grad_(False);
        unet.eval()``): the ``eval()`` is part of a freezing scheme."""
        flow = self.flow
        stmt = flow.stmt_of(origin)
        if stmt is None:
            return None
        block = container(stmt, flow.parents)
        if block is None:
            return None
        ids = {id(s) for s in block}
        for s in self.switches:
            if s.frozen is True and id(s.stmt) in ids and _related(s.key, model):
                return s
        return None

    def may_be_none(self, model: str, scope: FuncNode | None) -> ast.stmt | None:
        """A binding of ``model``'s root name (in ``scope`` or at module level)
        to ``None`` or to ``x if c else None``: on that path a call raises."""
        root = model.split(".")[0] if not model.startswith("self.") else model
        for node, node_scope, texts in self._none_bindings:
            if node_scope is not scope and node_scope is not None:
                continue
            for text in texts:
                if text is not None and (text == root or is_prefix(text, model)):
                    return node
        return None

    @functools.cached_property
    def _none_bindings(
        self,
    ) -> tuple[tuple[ast.Assign | ast.AnnAssign, FuncNode | None, tuple[str | None, ...]], ...]:
        """Every assignment that may bind ``None``, with its scope and its
        targets' texts, in the order of the tree: found once, not at each
        ``may_be_none`` question (a walk of the whole tree each time)."""
        flow = self.flow
        out = []
        for node in nodes_of(flow.tree, ast.Assign, ast.AnnAssign):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            if not _none_on_some_path(node.value):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.append((node, flow.scope_of(node), tuple(dotted(t) for t in targets)))
        return tuple(out)

    @functools.cached_property
    def _layer_schemes(self) -> tuple[tuple[str, ast.AST], ...]:
        out: list[tuple[str, ast.AST]] = []
        flow = self.flow
        for node in walk_tree(flow.tree):
            owner: str | None = None
            if isinstance(node, (ast.For, ast.AsyncFor)):
                owner = _module_loop_owner(node)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "apply"
                and len(node.args) == 1
                and self._evals_its_argument(node.args[0], node)
            ):
                owner = dotted(node.func.value)
            if owner is not None:
                out.append((flow.canonical(owner, flow.scope_of(node)), node))
        return tuple(out)

    def _evals_its_argument(self, func: ast.expr, call: ast.Call) -> bool:
        """``model.apply(set_bn_eval)`` with a function of this file that calls
        ``eval()`` on (a module it checks of) its argument."""
        if not isinstance(func, ast.Name):
            return False
        fn = self.flow.index.lookup_function(func.id, self.flow.scope_of(call))
        if fn is None or not fn.params:
            return False
        param = fn.params[0]
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "eval"
            and dotted(n.func.value) == param
            for n in ast.walk(fn.node)
        )

    def layer_scheme(self, model: str) -> ast.AST | None:
        """A statement that puts some layers of ``model`` in eval (``for m in
        model.modules(): if isinstance(m, nn.BatchNorm2d): m.eval()``, or
        ``model.apply(set_bn_eval)``): BatchNorm frozen on purpose."""
        for owner, node in self._layer_schemes:
            if _related(owner, model):
                return node
        return None

    def none_default(self, model: str, scope: FuncNode | None) -> bool:
        """``model``'s root is a parameter of ``scope`` whose default is
        ``None`` (``def fit(..., loss_fct=None)``): the caller may pass nothing."""
        if scope is None:
            return False
        root = model.split(".")[0]
        args = scope.args
        positional = [*args.posonlyargs, *args.args]
        with_default = positional[len(positional) - len(args.defaults) :]
        pairs: list[tuple[ast.arg, ast.expr | None]] = list(
            zip(with_default, args.defaults, strict=True)
        )
        pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
        return any(
            a.arg == root and isinstance(d, ast.Constant) and d.value is None for a, d in pairs
        )

    def conditional_train(
        self, model: str, scope: FuncNode | None, step: ast.AST | None = None
    ) -> ast.Call | None:
        """A ``train()`` of ``model`` (or of a module it is part of) in ``scope``
        under an ``if`` of that scope (``if args.train_text_encoder:
        text_encoder.train()``, per-branch modes at a loop head): the author's
        condition. A conditional ``eval()`` says nothing: validation every N
        epochs is the bug this rule fixes."""
        flow = self.flow
        trains = [
            call.node
            for call in flow.mode_calls
            if call.function is scope and call.mode is Mode.TRAIN and is_prefix(call.model, model)
        ]
        # The class's own setter (``if opt.reset_train: model.train_start()``)
        # is the author's ``train()`` as much as a direct call.
        trains += [
            node
            for node in flow.scope_calls(scope)
            if (switched := setter_call(flow, node, scope)) is not None
            and any(m is Mode.TRAIN and is_prefix(k, model) for k, m in switched.items())
        ]
        for node in trains:
            child: ast.AST = flow.stmt_of(node) or node
            parent = flow.parents.get(child)
            while parent is not None and parent is not scope:
                if isinstance(parent, (ast.If, ast.IfExp)):
                    if step is not None and _other_branch(flow, parent, child, step):
                        # ``if not loader: model.train(); <step>`` / ``else:
                        # <step>``: the test picks a training path, not the
                        # mode; the path without the call is the bug.
                        break
                    return node
                child, parent = parent, flow.parents.get(parent)
        return None

    def partial_train_after(self, origin: ast.AST, step: ast.AST, model: str) -> ast.Call | None:
        """``model.eval()`` on ``origin``, then ``model.module.layer4.train()``
        (a part of it) before ``step`` in the same function: a freezing scheme."""
        flow = self.flow
        scope = flow.scope_of(origin)
        if flow.scope_of(step) is not scope:
            return None
        start = (getattr(origin, "lineno", 0), getattr(origin, "col_offset", 0))
        for call in flow.mode_calls:
            pos = (call.node.lineno, call.node.col_offset)
            if (
                call.function is scope
                and call.mode is Mode.TRAIN
                and call.model != model
                and is_prefix(model, call.model)
                and start < pos
                and _same_block_after(flow, origin, call.node)
            ):
                return call.node
        return None


def _same_block_after(flow: FlowView, origin: ast.AST, later: ast.AST) -> bool:
    """``later``'s statement follows ``origin``'s in the same block (the
    scheme is written as one: ``model.eval(); model.module.layer4.train()``)."""
    a, b = flow.stmt_of(origin), flow.stmt_of(later)
    if a is None or b is None:
        return False
    block = container(a, flow.parents)
    return block is not None and any(s is b for s in block)


def _related(a: str, b: str) -> bool:
    return is_prefix(a, b) or is_prefix(b, a)


def _module_loop_owner(loop: ast.For | ast.AsyncFor) -> str | None:
    """``for m in model.modules(): ... m.eval()`` -> ``model``."""
    it = loop.iter
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr in ("modules", "named_modules", "children", "named_children")
    ):
        return None
    target = loop.target
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[-1]
    if not isinstance(target, ast.Name):
        return None
    name = target.id
    for n in ast.walk(loop):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "eval"
            and dotted(n.func.value) == name
        ):
            return dotted(it.func.value)
    return None


def _flag(args: list[ast.expr], keywords: list[ast.keyword]) -> bool | None:
    """The ``requires_grad`` flag of ``requires_grad_(...)``: True by default."""
    value = args[0] if args else next((k.value for k in keywords if k.arg == "requires_grad"), None)
    if value is None:
        return True
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return value.value
    return None


def _requires_grad_call(call: ast.Call) -> tuple[str, bool | None] | None:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "requires_grad_"):
        return None
    receiver = dotted(strip_self_returning(func.value))
    if receiver is None:
        return None
    flag = _flag(call.args, call.keywords)
    return receiver, (None if flag is None else not flag)


def _requires_grad_loop(loop: ast.For | ast.AsyncFor) -> tuple[str, bool | None] | None:
    """``for p in m.parameters(): p.requires_grad = False`` (also
    ``named_parameters()`` with ``for name, p in ...``, and
    ``p.requires_grad_(False)``)."""
    it = loop.iter
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr in ("parameters", "named_parameters")
    ):
        return None
    owner = dotted(it.func.value)
    if owner is None:
        return None
    found = _requires_grad_body(loop)
    return (owner, found) if found is not None or _sets_some(loop) else None


def _sets_some(loop: ast.For | ast.AsyncFor) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr in ("requires_grad", "requires_grad_")
        for n in ast.walk(loop)
    )


def _requires_grad_body(loop: ast.For | ast.AsyncFor) -> bool | None:
    """True: the loop freezes every parameter it visits; False: it unfreezes
    them; None: something else, or only some of them."""
    target = loop.target
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[-1]
    if not isinstance(target, ast.Name):
        return None
    name = target.id
    for stmt in loop.body:
        if isinstance(stmt, ast.If):
            return None  # some parameters only: not the whole model
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            if (
                isinstance(t, ast.Attribute)
                and t.attr == "requires_grad"
                and dotted(t.value) == name
            ):
                value = stmt.value
                if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                    return not value.value
                return None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            found = _requires_grad_call(stmt.value)
            if found is not None and found[0] == name:
                return found[1]
    return None


def _none_on_some_path(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if isinstance(value, ast.IfExp):
        return _none_on_some_path(value.body) or _none_on_some_path(value.orelse)
    return False


def _other_branch(flow: FlowView, test: ast.If | ast.IfExp, child: ast.AST, step: ast.AST) -> bool:
    """``step`` lies in the branch of ``test`` that ``child`` is not in."""
    if not isinstance(test, ast.If):
        return False
    mine, other = (test.body, test.orelse) if child in test.body else (test.orelse, test.body)
    inside = [flow.contains(s) for s in other]
    return child in mine and any(found(step) for found in inside)
