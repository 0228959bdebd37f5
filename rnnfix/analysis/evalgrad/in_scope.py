"""Gradients computed on purpose while a model with a cuDNN RNN is in eval mode.

A region is: ``M.eval()`` (or ``M.train(False)``), then a forward through ``M``,
then ``x.backward()`` / ``torch.autograd.grad(...)`` / ``torch.autograd.backward``,
all in one function (or at module level), with

- the ``eval()`` statement in a block that encloses the backward (it runs
  before it on every path), and no ``M.train()`` written between the two;
- no optimizer step in that function that updates ``M`` (an optimizer built
  from other models' parameters, as in an actor update through an eval-mode
  critic, does not count; one whose parameters cannot be read does);
- ``M`` known, from how it is built in this file, to contain an LSTM/GRU/RNN.

This is a syntactic first version; the mode-flow analysis can replace the
first condition later. Precision beats recall: a region we are unsure about is
not reported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradctx import grad_context
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import local_nodes, nodes_of, walk_tree
from rnnfix.analysis.torch.api import MODULE_METHODS, mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.rnns import RnnIndex, RnnSpec

if TYPE_CHECKING:
    from rnnfix.analysis.project.view import ProjectView

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_SINKS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
CUDNN_FLAGS = frozenset({"torch.backends.cudnn.flags"})
CUDNN_ENABLED = frozenset({"torch.backends.cudnn.enabled"})
Key = tuple[int, int]


def key(node: ast.AST) -> Key:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def end_key(node: ast.AST) -> Key:
    return (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class EvalBackward:
    """One gradient computation through ``model``'s RNNs while it is in eval mode."""

    sink: ast.Call  # the ``.backward()`` / ``autograd.grad`` call
    model: str  # dotted text as written
    # The scope's own ``M.eval()``; None when the eval mode comes from elsewhere
    # (a helper, a caller, the object's state: ``rnnfix.analysis.evalgrad.across_calls``).
    eval_call: ast.Call | None
    eval_stmt: ast.stmt | None
    rnns: tuple[RnnSpec, ...]
    forwards: tuple[ast.AST, ...]  # uses of the model between eval() and the sink
    scope: ast.AST  # the function, or the module
    rnn_train_done: bool  # every RNN was already put back in train mode
    cudnn_off_done: bool  # the forward(s) and the backward run with cuDNN off
    origin: str | None = None  # where an eval from elsewhere comes from, for the message
    anchor: ast.stmt | None = None  # the statement of the first forward (eval from elsewhere)


class EvalGradAnalysis:
    def __init__(
        self,
        tree: ast.Module,
        imports: ImportMap,
        parents: dict[ast.AST, ast.AST],
        project: ProjectView | None = None,
    ):
        self.tree = tree
        self.imports = imports
        self.parents = parents
        self.rnns = RnnIndex(tree, imports, project.class_rnns if project is not None else None)
        self._switches: list[tuple[Key, bool]] = []
        # Per scope (and whether nested functions count): every dotted name
        # assigned there and its values, built once (``assigned_values`` is
        # asked about every call of a scope: walking the scope each time made
        # large files quadratic).
        self._assigned: dict[tuple[int, bool], dict[str, list[ast.expr]]] = {}

    # --- regions -----------------------------------------------------------
    def regions(self) -> list[EvalBackward]:
        out: list[EvalBackward] = []
        holders = self._sink_holders()
        for scope in [self.tree, *nodes_of(self.tree, *_FUNCS)]:
            if scope in holders:
                out.extend(self._scope_regions(scope))
        return out

    def _sink_holders(self) -> set[ast.AST]:
        """The module and the functions around a sink: only their own code
        can hold one (``_scope_regions`` finds nothing in the others, and most
        functions of a file never call ``backward``)."""
        out: set[ast.AST] = set()
        for call in nodes_of(self.tree, ast.Call):
            if not self.is_sink(call):  # type: ignore[arg-type]  # only calls listed
                continue
            node: ast.AST | None = call
            while node is not None:
                if isinstance(node, (ast.Module, *_FUNCS)):
                    out.add(node)
                node = self.parents.get(node)
        return out

    def _scope_regions(self, scope: ast.AST) -> Iterator[EvalBackward]:
        calls = sorted((n for n in _own_nodes(scope) if isinstance(n, ast.Call)), key=key)
        sinks = [c for c in calls if self.is_sink(c)]
        if not sinks:
            return
        evals: list[tuple[str, ast.Call]] = []
        trains: list[tuple[str, ast.Call]] = []
        for c in calls:
            mode = mode_call(c)
            if mode is not None:
                (evals if mode[1] == "eval" else trains).append((mode[0], c))
        steps = [c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "step"]
        self._switches = self._cudnn_switches(scope)
        for sink in sinks:
            # The latest eval() per model before the sink wins.
            latest: dict[str, ast.Call] = {}
            for model, call in evals:
                if end_key(call) <= key(sink):
                    latest[model] = call
            for model, call in latest.items():
                region = self._region(scope, model, call, sink, calls, trains, steps)
                if region is not None:
                    yield region

    def _region(
        self,
        scope: ast.AST,
        model: str,
        eval_call: ast.Call,
        sink: ast.Call,
        calls: list[ast.Call],
        trains: list[tuple[str, ast.Call]],
        steps: list[ast.Call],
    ) -> EvalBackward | None:
        eval_stmt = self.statement(eval_call)
        if eval_stmt is None or not self.encloses(eval_stmt, sink):
            return None
        lo, hi = end_key(eval_call), end_key(sink)
        # The whole model put back in train mode (or an object holding it).
        for other, call in trains:
            if lo <= key(call) <= hi and (model == other or model.startswith(other + ".")):
                return None
        forwards = tuple(c for c in calls if lo <= key(c) <= hi and _uses_model(c, model))
        if not forwards or all(self._under_no_grad(f) for f in forwards):
            return None
        if any(self.step_may_update(step, model) for step in steps):
            return None
        rnns = self.of_object(model, eval_call)
        if not rnns:
            return None
        return EvalBackward(
            sink=sink,
            model=model,
            eval_call=eval_call,
            eval_stmt=eval_stmt,
            rnns=rnns,
            forwards=forwards,
            scope=scope,
            rnn_train_done=self.rnn_train_done(model, rnns, trains, calls, lo, hi),
            cudnn_off_done=self.switched_off(forwards[0], sink)
            or all(self.under_cudnn_off(n) for n in (*forwards, sink)),
        )

    def _cudnn_switches(self, scope: ast.AST) -> list[tuple[Key, bool]]:
        """``cudnn.enabled = <literal>`` in ``scope``, in order: (where, on)."""
        out = []
        for node in _own_nodes(scope):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and self.imports.qualname(node.targets[0]) in CUDNN_ENABLED
                and isinstance(node.value, ast.Constant)
            ):
                out.append((key(node), bool(node.value.value)))
        return sorted(out)

    def switched_off(self, first_forward: ast.AST, sink: ast.AST) -> bool:
        """cuDNN switched off by hand before the forward and not back on
        before the backward (``enabled = False`` ... ``enabled = True``)."""
        before = [on for k, on in self._switches if k < key(first_forward)]
        between = [on for k, on in self._switches if key(first_forward) <= k <= end_key(sink)]
        return bool(before) and not before[-1] and not any(between)

    def is_sink(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            return True
        return self.imports.qualname(call.func) in _SINKS

    def rnn_train_done(
        self,
        model: str,
        rnns: tuple[RnnSpec, ...],
        trains: list[tuple[str, ast.Call]],
        calls: list[ast.Call],
        lo: Key,
        hi: Key,
    ) -> bool:
        done = [o for o, c in trains if lo <= key(c) <= hi and o.startswith(model + ".")]
        # ``for m in model.modules(): ... m.train()``, or ``model.apply(fn)``.
        for c in calls:
            if not lo <= key(c) <= hi or not isinstance(c.func, ast.Attribute):
                continue
            if dotted(c.func.value) == model and c.func.attr == "apply":
                return True
            if c.func.attr in ("modules", "named_modules") and (
                dotted(c.func.value) or ""
            ).startswith(model):
                loop = self.parents.get(c)
                if isinstance(loop, ast.For) and any(
                    mode_call(n) is not None and mode_call(n)[1] == "train"  # type: ignore[index]
                    for n in ast.walk(loop)
                    if isinstance(n, ast.Call)
                ):
                    return True
        for spec in rnns:
            full = f"{model}.{spec.path}" if spec.path else model
            if not any(full == d or full.startswith(d + ".") for d in done):
                return False
        return True

    # --- where things are ---------------------------------------------------
    def statement(self, node: ast.AST) -> ast.stmt | None:
        while node is not None and not isinstance(node, ast.stmt):
            node = self.parents.get(node)  # type: ignore[assignment]
        return node

    def encloses(self, stmt: ast.stmt, node: ast.AST) -> bool:
        """Whether ``stmt``'s block holds an ancestor of ``node`` after ``stmt``:
        then ``stmt`` runs before ``node`` on every path through the block."""
        parent = self.parents.get(stmt)
        cur: ast.AST | None = node
        while cur is not None and cur is not parent:
            up = self.parents.get(cur)
            if up is parent and isinstance(cur, ast.stmt):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(parent, field, None)
                    if isinstance(block, list) and stmt in block and cur in block:
                        return block.index(stmt) < block.index(cur)
                return False
            cur = up
        return False

    def _with_items(self, node: ast.AST) -> Iterator[ast.withitem]:
        for anc in self._ancestors(node):
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                yield from anc.items
            if isinstance(anc, _NESTED):
                return

    def _ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def _under_no_grad(self, node: ast.AST) -> bool:
        for item in self._with_items(node):
            if grad_context(self.imports, item.context_expr) == "off":
                return True
        return False

    def under_cudnn_off(self, node: ast.AST) -> bool:
        for item in self._with_items(node):
            ctx = item.context_expr
            if isinstance(ctx, ast.Call) and self.imports.qualname(ctx.func) in CUDNN_FLAGS:
                if is_cudnn_flags_off(ctx):
                    return True
        return False

    # --- optimizer steps ----------------------------------------------------
    def step_may_update(self, step: ast.Call, model: str) -> bool:
        """Whether ``X.step(...)`` may update ``model``'s parameters."""
        assert isinstance(step.func, ast.Attribute)
        receiver = dotted(step.func.value)
        if receiver is None:
            return True
        if "env" in receiver.rsplit(".", 1)[-1].lower():
            return False  # ``env.step(action)`` in RL code
        built = self._built_from(receiver, step)
        if not built:
            return True
        for value in built:
            qual = self.imports.qualname(value.func) or ""
            if qual.endswith("GradScaler"):
                target = step.args[0] if step.args else None
                if target is None or dotted(target) is None:
                    return True
                if self.step_may_update(
                    ast.Call(func=ast.Attribute(value=target, attr="step"), args=[], keywords=[]),
                    model,
                ):
                    return True
                continue
            params = value.args[0] if value.args else None
            for k in value.keywords:
                if k.arg == "params":
                    params = k.value
            if params is None:
                return True
            owners = _parameter_owners(params)
            if not owners:
                return True  # ``Adam(params)``: cannot tell whose
            if any(is_prefix(o, model) or is_prefix(model, o) for o in owners):
                return True
        return False

    def _built_from(self, name: str, use: ast.AST) -> list[ast.Call]:
        out = []
        for value in self.assigned_values(name, use):
            built = strip_self_returning(value)
            if isinstance(built, ast.Call):
                out.append(built)
        return out

    # --- which object is it -------------------------------------------------
    def of_object(self, name: str, use: ast.AST, depth: int = 0) -> tuple[RnnSpec, ...] | None:
        """The RNNs inside the object ``name`` (dotted text) at ``use``."""
        if depth > 3:
            return None
        values = self.assigned_values(name, use)
        found: list[RnnSpec] = []
        known = False
        for value in values:
            if isinstance(value, ast.Name) and value.id == name:
                continue
            specs = self.rnns.of_expr(value) if not isinstance(value, ast.Name) else None
            if isinstance(value, ast.Name):
                specs = self.of_object(value.id, value, depth + 1)
            if specs is not None:
                known = True
                found.extend(specs)
        if not known:
            found.extend(self._from_parameter(name, use, depth) or ())
        if not found and "." in name and not name.startswith("self."):
            # ``agent.critic`` where ``agent`` is built from a local class.
            root, rest = name.split(".", 1)
            holder = self.of_object(root, use, depth + 1) or ()
            found = [_strip(s, rest) for s in holder if _strip(s, rest) is not None]  # type: ignore[misc]
        return tuple(dict.fromkeys(found)) or None

    def _from_parameter(self, name: str, use: ast.AST, depth: int) -> tuple[RnnSpec, ...] | None:
        func = next((a for a in self._ancestors(use) if isinstance(a, _FUNCS)), None)
        if func is None or "." in name:
            return None
        params = [*func.args.posonlyargs, *func.args.args]
        arg = next((a for a in [*params, *func.args.kwonlyargs] if a.arg == name), None)
        if arg is None:
            return None
        if arg.annotation is not None:
            ann = arg.annotation
            if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                try:
                    ann = ast.parse(ann.value, mode="eval").body
                except SyntaxError:
                    return None
            if isinstance(ann, ast.Name) and ann.id in self.rnns.classes:
                return self.rnns.of_class(ann.id)
            return self.rnns.of_expr(
                ast.copy_location(ast.Call(func=ann, args=[], keywords=[]), ann)
            )
        # One level of callers in this file: ``saliency(model, x)``.
        index = params.index(arg) if arg in params else None
        is_method = bool(params) and params[0].arg in ("self", "cls")
        # A constructor's callers call its class: ``FGSM(model)`` for ``__init__``.
        cls = self.parents.get(func) if func.name == "__init__" and is_method else None
        found: list[RnnSpec] = []
        for call in nodes_of(self.tree, ast.Call):
            assert isinstance(call, ast.Call)
            callee = call.func
            callee_name = callee.id if isinstance(callee, ast.Name) else None
            if isinstance(callee, ast.Attribute) and is_method:
                callee_name = callee.attr
            constructs = isinstance(cls, ast.ClassDef) and callee_name == cls.name
            if callee_name != func.name and not constructs:
                continue
            value: ast.expr | None = None
            if index is not None:
                bound = is_method and (isinstance(callee, ast.Attribute) or constructs)
                pos = index - (1 if bound else 0)
                if 0 <= pos < len(call.args) and not isinstance(call.args[pos], ast.Starred):
                    value = call.args[pos]
            for k in call.keywords:
                if k.arg == name:
                    value = k.value
            if value is None:
                continue
            text = dotted(value)
            specs = (
                self.of_object(text, call, depth + 1)
                if text is not None
                else self.rnns.of_expr(value)
            )
            found.extend(specs or ())
        return tuple(found) or None

    def assigned_values(self, name: str, use: ast.AST) -> list[ast.expr]:
        """Values assigned to ``name`` in the scope that binds it at ``use``:
        the enclosing class's methods for ``self.x``, else the enclosing
        function when it assigns the name, else module level."""
        if name.startswith("self."):
            scope: ast.AST | None = next(
                (a for a in self._ancestors(use) if isinstance(a, ast.ClassDef)), None
            )
            return list(self._values_in(scope, name, own_only=False)) if scope else []
        for anc in self._ancestors(use):
            if isinstance(anc, _FUNCS):
                values = list(self._values_in(anc, name, own_only=True))
                if values:
                    return values
                root = name.split(".")[0]
                if root in {
                    a.arg for a in [*anc.args.posonlyargs, *anc.args.args, *anc.args.kwonlyargs]
                }:
                    return []
        return list(self._values_in(self.tree, name, own_only=True))

    def _values_in(self, scope: ast.AST, name: str, own_only: bool) -> Sequence[ast.expr]:
        table = self._assigned.get((id(scope), own_only))
        if table is None:
            table = self._assigned[(id(scope), own_only)] = _assignments(scope, own_only)
        return table.get(name, ())


def global_cudnn_off(
    tree: ast.Module, imports: ImportMap, star_torch: bool = False
) -> list[ast.Assign]:
    """``torch.backends.cudnn.enabled = False`` (or ``0``) that its own function
    (or the module) does not set back to True later: a process-wide switch.
    ``star_torch``: the file's ``torch`` comes from a star import of a file that
    imports it (``from __init__ import *``), so the written name counts."""

    def qualname(node: ast.expr) -> str | None:
        found = imports.qualname(node)
        if found is None and star_torch:
            text = dotted(node)
            return text if text is not None and text.startswith("torch.") else None
        return found

    out = []
    for scope in [tree, *(n for n in walk_tree(tree) if isinstance(n, _FUNCS))]:
        sets = sorted(
            (n for n in _own_nodes(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1),
            key=key,
        )
        sets = [n for n in sets if qualname(n.targets[0]) in CUDNN_ENABLED]
        for i, node in enumerate(sets):
            off = isinstance(node.value, ast.Constant) and node.value.value in (False, 0)
            restored = any(
                isinstance(later.value, ast.Constant) and later.value.value in (True, 1)
                for later in sets[i + 1 :]
            )
            if off and not restored:
                out.append(node)
    return out


def is_cudnn_flags_off(call: ast.Call) -> bool:
    """``cudnn.flags()`` / ``flags(enabled=False)`` / ``flags(False, ...)``."""
    for k in call.keywords:
        if k.arg == "enabled":
            return isinstance(k.value, ast.Constant) and not k.value.value
    if call.args:
        first = call.args[0]
        return isinstance(first, ast.Constant) and not first.value
    return True  # ``enabled`` defaults to False


def _strip(spec: RnnSpec, prefix: str) -> RnnSpec | None:
    if spec.path == prefix:
        return RnnSpec(spec.kind, "", spec.nameable, spec.dropout, spec.num_layers, spec.line)
    if spec.path.startswith(prefix + "."):
        rest = spec.path[len(prefix) + 1 :]
        return RnnSpec(spec.kind, rest, spec.nameable, spec.dropout, spec.num_layers, spec.line)
    return None


_OWN_KEY = "_rnnfix_own_body_nodes"


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """Nodes of ``scope``'s own body, not of functions or classes nested in it
    (a statement of the body is entered whatever it is), last statement first:
    a stack walk of the body, one ``local_nodes`` walk per statement."""
    if not isinstance(scope, (ast.Module, *_FUNCS)):
        return local_nodes(scope)
    kept: list[ast.AST] | None = scope.__dict__.get(_OWN_KEY)
    if kept is None:
        # Kept on the scope (asked per region, per model and per sink): the
        # list holds the nodes of its body only, never the scope itself, so
        # that the tree goes with reference counting alone.
        kept = [n for stmt in reversed(scope.body) for n in local_nodes(stmt)]
        setattr(scope, _OWN_KEY, kept)
    return kept


def _assignments(scope: ast.AST, own_only: bool) -> dict[str, list[ast.expr]]:
    """Dotted name -> the values assigned to it in ``scope``, in walk order."""
    nodes = _own_nodes(scope) if own_only else ast.walk(scope)
    out: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for name in {d for t in node.targets if (d := dotted(t)) is not None}:
                out.setdefault(name, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            if (target := dotted(node.target)) is not None:
                out.setdefault(target, []).append(node.value)
    return out


def mode_call(call: ast.Call) -> tuple[str, str] | None:
    """``M.eval()`` / ``M.train(False)`` -> (M, "eval"); ``M.train()`` -> (M, "train");
    None for ``M.train(flag)`` (either)."""
    switch = mode_switch(call)
    if switch is None or switch.mode is Mode.UNKNOWN or switch.target is None:
        return None
    return switch.target, switch.mode.value


def _uses_model(call: ast.Call, model: str) -> bool:
    """``M(x)``, ``M.forward(x)``, ``M.encoder(x)``, ``M.encode(x)``, or ``M``
    handed to a helper that presumably runs it."""
    func = dotted(call.func)
    if func == model:
        return True
    if func is not None and func.startswith(model + "."):
        return func.rsplit(".", 1)[1] not in MODULE_METHODS
    return any(dotted(a) == model for a in [*call.args, *(k.value for k in call.keywords)])


def _parameter_owners(params: ast.AST) -> set[str]:
    """``model.parameters()``, ``[{"params": net.head.parameters()}]`` -> owners."""
    owners = set()
    for node in ast.walk(params):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("parameters", "named_parameters")
        ):
            owner = dotted(node.func.value)
            if owner is None:
                return set()
            owners.add(owner)
    return owners
