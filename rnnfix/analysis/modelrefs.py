"""Which dotted paths are torch models, where they are called, and their mode
just before a statement, read syntactically.

A *model* is a name or attribute path (``model``, ``self.net``) that has a
mode call (``.eval()``, ``.train()``, ``.train(False)``) somewhere in the file,
is built from an ``nn.Module`` class (``torch.nn.*`` or a local subclass), or
is a parameter annotated as one. Never guessed from its name.

``SyntacticModes.mode_before`` is a local, intraprocedural reading used until
(and alongside) the mode flow of ``rnnfix.analysis.modeflow``: it says "eval"
only when a ``.eval()`` on the model provably runs before the statement.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.names import dotted, method_call
from rnnfix.analysis.syntax import FUNCTIONS, LOOPS, block_of, walk_local

if TYPE_CHECKING:
    from rnnfix.rules.base import FileContext

Mode = Literal["train", "eval", "unknown"]

# Chained calls that return the module itself: ``Net().to(device)``.
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train"})
# ``nn.Module`` API: calling these on a model does not run its forward.
_NOT_FORWARD = frozenset(
    {
        "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers",
        "children", "named_children", "modules", "named_modules", "state_dict",
        "load_state_dict", "to", "cuda", "cpu", "float", "double", "half", "bfloat16",
        "zero_grad", "apply", "register_buffer", "register_parameter", "register_module",
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "requires_grad_", "share_memory", "add_module", "get_submodule", "get_parameter",
        "save_pretrained", "init_hidden", "reset_parameters", "type",
    }
)  # fmt: skip


def mode_call(node: ast.AST, lenient: bool = False) -> tuple[str, Mode] | None:
    """``m.eval()`` -> (m, eval); ``m.train()`` / ``m.train(False)`` /
    ``m.train(mode=flag)``. ``booster.train(data)`` is not a mode call, unless
    ``lenient`` (for a receiver already known to be a model: ``model.train(flag)``)."""
    mc = method_call(node)
    if mc is None:
        return None
    receiver, method = mc
    assert isinstance(node, ast.Call)
    target = dotted(receiver)
    if target is None:
        return None
    args = [*node.args, *(k.value for k in node.keywords if k.arg in (None, "mode"))]
    if len(node.args) + len(node.keywords) != len(args) or len(args) > 1:
        return None
    if method == "eval":
        return (target, "eval") if not args else None
    if method != "train":
        return None
    if not args:
        return target, "train"
    flag = args[0]
    if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
        return target, "train" if flag.value else "eval"
    if isinstance(flag, (ast.Compare, ast.UnaryOp, ast.BoolOp)) or node.keywords or lenient:
        return target, "unknown"
    return None  # ``x.train(data)``: not a torch module's mode switch


class ModelIndex:
    """``extra``: models another analysis found (the mode flow's, which follows
    models passed as arguments) are models here too."""

    def __init__(self, ctx: FileContext, extra: Iterable[str] = ()) -> None:
        self.ctx = ctx
        self.extra = frozenset(extra)

    @functools.cached_property
    def models(self) -> frozenset[str]:
        found: set[str] = set()
        for n in ast.walk(self.ctx.tree):
            mc = mode_call(n)
            if mc is not None:
                found.add(mc[0])
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                if self._is_module_ctor(n.value):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    found.update(t for t in map(dotted, targets) if t)
            elif isinstance(n, ast.arg) and n.annotation is not None:
                if self._is_module_class(n.annotation):
                    found.add(n.arg)
        return frozenset(found | self.extra)

    @functools.cached_property
    def _local_module_classes(self) -> frozenset[str]:
        classes = {n.name: n for n in ast.walk(self.ctx.tree) if isinstance(n, ast.ClassDef)}
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in classes.items():
                if name not in found and any(self._is_module_class(b, found) for b in cls.bases):
                    found.add(name)
                    changed = True
        return frozenset(found)

    def _is_module_class(self, expr: ast.AST, local: set[str] | None = None) -> bool:
        local_classes = self._local_module_classes if local is None else local
        if isinstance(expr, ast.Name) and expr.id in local_classes:
            return True
        qual = self.ctx.facts.imports.qualname(expr)
        if qual is None:
            return False
        last = qual.rsplit(".", 1)[-1]
        # Loss modules and parameters are modules (or not) but not models: their
        # mode changes nothing, and a criterion does not need ``eval()``.
        if last.endswith("Loss") or last.startswith("Parameter"):
            return False
        return qual.startswith(("torch.nn.", "torchvision.models.")) and last[:1].isupper()

    def _is_module_ctor(self, value: ast.AST) -> bool:
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SELF_RETURNING
        ):
            value = value.func.value
        return isinstance(value, ast.Call) and self._is_module_class(value.func)

    def called_model(self, call: ast.Call) -> str | None:
        """The model a call runs: ``model(x)``, ``model.encoder(x)``,
        ``model.generate(x)`` -> "model" (the longest model prefix)."""
        text = dotted(call.func)
        if text is None:
            return None
        if text in self.models:
            return text
        parts = text.split(".")
        if parts[-1] in _NOT_FORWARD:
            return None
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.models:
                return prefix
        return None

    def model_calls(self, roots: list[ast.stmt]) -> dict[str, list[ast.Call]]:
        out: dict[str, list[ast.Call]] = {}
        for root in roots:
            for n in walk_local(root):
                if isinstance(n, ast.Call):
                    m = self.called_model(n)
                    if m is not None:
                        out.setdefault(m, []).append(n)
        return out


def mode_calls_in(root: ast.AST, model: str) -> Iterator[tuple[ast.Call, Mode]]:
    """Mode calls on ``model``. One on ``model.module`` counts too: on a
    DataParallel/DDP wrapper it sets the mode of every layer the wrapper runs
    (RNF002 reports the stale wrapper flag, not RNF003)."""
    for n in walk_local(root):
        mc = mode_call(n, lenient=True)
        if mc is not None and mc[0] in (model, f"{model}.module"):
            assert isinstance(n, ast.Call)
            yield n, mc[1]


def mode_before(ctx: FileContext, stmt: ast.stmt, model: str) -> tuple[Mode, ast.AST]:
    """The model's mode just before ``stmt`` within its function, and where
    the reading stopped: the mode call found, or the function / module when
    the mode comes from outside (then the mode is "unknown")."""
    parents = ctx.facts.parents
    cur: ast.AST = stmt
    while True:
        found = block_of(parents, cur)
        if found is None:
            parent = parents.get(cur)
            if parent is None or isinstance(parent, (*FUNCTIONS, ast.Module)):
                return "unknown", parent or cur
            cur = parent  # e.g. an except handler, a match case
            continue
        block, index = found
        for sibling in reversed(block[:index]):
            last = _last_mode(sibling, model)
            if last is not None:
                call, mode = last
                direct = isinstance(sibling, ast.Expr) and sibling.value is call
                # The last statement-level switch in a loop or ``with`` body
                # holds after it (assuming the loop runs at least once).
                top = _top_stmt(parents, call, sibling)
                in_loop_body = (
                    isinstance(sibling, (*LOOPS, ast.With, ast.AsyncWith))
                    and any(s is top for s in sibling.body)
                    and isinstance(top, ast.Expr)
                    and top.value is call
                )
                if direct or in_loop_body:
                    return mode, call
                return "unknown", call  # set under a condition
        parent = parents[cur]
        if isinstance(parent, (*FUNCTIONS, ast.Module)):
            return "unknown", parent
        if isinstance(parent, LOOPS) and any(s is cur for s in parent.body):
            # The previous iteration's end feeds this one.
            later = parent.body[index + 1 :] if block is parent.body else []
            for s in later:
                if any(mode != "eval" for _, mode in mode_calls_in(s, model)):
                    return "train", s
        cur = parent


def _last_mode(stmt: ast.stmt, model: str) -> tuple[ast.Call, Mode] | None:
    found = None
    for call, mode in mode_calls_in(stmt, model):
        if found is None or (call.lineno, call.col_offset) > (
            found[0].lineno,
            found[0].col_offset,
        ):
            found = (call, mode)
    return found


def _top_stmt(parents: dict[ast.AST, ast.AST], node: ast.AST, container: ast.AST) -> ast.AST:
    """The child statement of ``container`` that holds ``node``."""
    cur = node
    while parents.get(cur) is not container:
        cur = parents[cur]
    return cur
