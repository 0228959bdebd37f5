"""Evaluation functions that training code calls mid-iteration (issue 24.4).

``estimate_loss()`` of GPT-style trainers runs under ``@torch.no_grad()``
inside the training loop, between two training steps. When it lacks
``model.eval()``, an ``eval()`` alone would leave the model in eval mode for
the steps that follow; so the fix saves and restores the caller's mode, as
TORCH_FACTS' idiom does (``was_training = model.training`` ...
``model.train(was_training)``).

Where the restore goes: before every ``return`` of the function and after its
last statement when control can fall off the end. Chosen over ``try:/finally:``
because it adds lines without re-indenting the author's body; the price is
the exception path (an exception that leaves the function skips the restore),
which ends the training step the mode was for anyway. Refused, so the finding
is reported without a fix, when a ``return`` computes something that may run
the model (it names the model or ``self``, or calls anything but an imported
function or a builtin: the model could run in the restored mode), when the
function is a generator (a ``yield`` hands control back mid-evaluation), or
when the name the fix needs is taken.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from rnnfix.analysis.syntax.walks import FUNCTIONS
from rnnfix.rules.base import FileContext
from rnnfix.source.edits import Edit, InsertStatements

Func = ast.FunctionDef | ast.AsyncFunctionDef


def restore_name(model: str, taken: set[str]) -> str | None:
    """The variable that keeps ``model``'s mode: ``was_training``, or
    ``<model>_was_training`` beside others; None when it is taken."""
    name = "was_training" if "." not in model else model.replace(".", "_") + "_was_training"
    return None if name in taken else name


def bound_names(func: Func) -> set[str]:
    names = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    for n in ast.walk(func):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, (*FUNCTIONS, ast.ClassDef)) and n is not func:
            names.add(n.name)
    return names


def restore_edits(
    ctx: FileContext, func: Func, body: list[ast.stmt], models: list[str]
) -> tuple[Edit, ...] | str:
    """The edits that put each of ``models`` in eval at the start of ``func``
    and back in the caller's mode on the way out; or why they cannot."""
    own = list(_own_nodes(func))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own):
        return "it is a generator: its caller runs between its steps"
    returns = [n for n in own if isinstance(n, ast.Return)]
    imported = ctx.facts.imports.names
    bound = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(func) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    if any(r.value is not None and not _apart(r.value, models, imported, bound) for r in returns):
        return "a `return` computes its value after the mode would be restored"
    taken = bound_names(func)
    saves: list[str] = []
    restores: list[str] = []
    for model in models:
        name = restore_name(model, taken)
        if name is None:
            return f"`{restore_name(model, set())}` is taken"
        taken.add(name)
        saves += [f"{name} = {model}.training", f"{model}.eval()"]
        restores.append(f"{model}.train({name})")
    edits: list[Edit] = [InsertStatements(ctx.pos(body[0]), tuple(saves), "before")]
    for r in returns:
        edits.append(InsertStatements(ctx.pos(r), tuple(restores), "before"))
    last = body[-1]
    if _falls_through(last):
        edits.append(InsertStatements(ctx.pos(last), tuple(restores), "after"))
    return tuple(edits)


def _own_nodes(func: Func) -> list[ast.AST]:
    """The nodes of ``func``'s own body, not of functions or classes nested in it."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


def _plain(value: ast.expr) -> bool:
    """A value that runs no code of the model: names, constants, subscripts
    and containers of them."""
    return all(
        isinstance(n, (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Tuple, ast.List,
                       ast.Dict, ast.Load, ast.Slice, ast.Starred))
        for n in ast.walk(value)
    )  # fmt: skip


def _apart(value: ast.expr, models: list[str], imported: Collection[str], bound: set[str]) -> bool:
    """A return value that cannot run the models: plain (``_plain``), or one
    that names neither them nor ``self`` and calls only imported functions
    and builtins the function does not rebind (``np.mean(accuracies)``,
    ``correct / total``, ``float(hits) / len(data)``): a method call on a
    local value (``loss.item()``) or a call of a local name may be the model
    under another name."""
    if _plain(value):
        return True
    roots = {m.split(".")[0] for m in models} | {"self", "cls"}
    for n in ast.walk(value):
        if isinstance(n, ast.Name) and n.id in roots:
            return False
        if isinstance(n, ast.Call):
            head = n.func
            while isinstance(head, ast.Attribute):
                head = head.value
            if not isinstance(head, ast.Name):
                return False
            if head.id in bound or not (
                head.id in imported or (head.id in _BUILTINS and head is n.func)
            ):
                return False
    return True


_BUILTINS = frozenset({"float", "int", "len", "sum", "min", "max", "round", "abs", "dict", "list",
                       "tuple", "str", "sorted", "zip", "range", "enumerate"})  # fmt: skip


def _falls_through(stmt: ast.stmt) -> bool:
    """Control may leave the function after ``stmt`` (the last statement)
    without a ``return`` or ``raise`` of its own."""
    if isinstance(stmt, (ast.Return, ast.Raise)):
        return False
    if isinstance(stmt, ast.If):
        return not stmt.orelse or any(map(_falls_through, [stmt.body[-1], stmt.orelse[-1]]))
    return True
