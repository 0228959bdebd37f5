"""A plain class's own mode API: public methods that only switch its models.

An agent or estimator that wraps its networks often gives its users the
switch itself: ``def train(self): self.online_net.train()`` and ``def
eval(self): self.online_net.eval()`` (Rainbow's ``Agent``), or
``load_checkpoint(path, evaluate)`` that leaves every network in eval or in
train mode as its caller asks (pytorch-soft-actor-critic's ``SAC``). Such a
class hands the mode to its callers: its training methods are written to be
entered after the caller's ``agent.train()``, its evaluation methods after
``agent.eval()``. Guessing the mode from the order its public methods might
be called in, or inserting a switch into one of its methods, second-guesses
that protocol (and an ``eval()`` put into an evaluation method would leave the
network in eval for the caller's next ``learn()``).

A method is a *mode setter* for ``self.<path>`` when it switches that path
(or an owner of it) to a mode itself and neither calls a model nor runs a
training step: it changes the mode and nothing a mode matters to. A
``predict()`` that switches to eval and then calls the network is not one: it
is the evaluation whose eval mode may reach the next ``fit()``.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView
    from rnnfix.analysis.syntax.scopes import FuncNode

__all__ = ["callable_parameters", "function_parameters", "has_mode_setter", "setter_call"]

# Annotations that say a parameter is a function, not a module: calling it is
# no forward (``def standard_test(self, fn: Callable[..., Any], kwargs)``).
_CALLABLE = re.compile(
    r"(?:typing\.|collections\.abc\.|types\.)?(?:Callable|FunctionType|MethodType)\b"
)


def has_mode_setter(flow: FlowView, fn: FuncNode, key: str, mode: Mode) -> bool:
    """``fn`` is a method of a plain class (its own or one inherited from a
    base of this file) that has another public method which is a mode setter
    switching ``key`` (``self.<path>`` in ``fn``'s names) to ``mode``."""
    info = flow.function_info(fn)
    if info is None or info.cls is None or not info.is_method:
        return False
    this, _, rest = key.partition(".")
    if this != info.params[0] or not rest:
        return False
    for name, method in flow.public_methods(info.cls).items():
        if name == "__init__" or method is fn:
            continue  # a constructor's train() is the start, not a switch for callers
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        other = flow.function_info(method)
        if other is None or not other.is_method:
            continue
        if _sets(flow, method, f"{other.params[0]}.{rest}", mode):
            return True
    return False


def setter_call(flow: FlowView, call: ast.AST, scope: FuncNode | None) -> dict[str, Mode] | None:
    """What ``call`` (``model.train_start()``, a statement of ``scope``
    without arguments) switches, in ``scope``'s names, when it runs a mode
    setter of a class of this file or of another file of the run: a method
    whose summary sets one mode on each key it touches on every path, and
    that neither runs a forward nor trains. None otherwise."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and not call.args
        and not call.keywords
        and call.func.attr not in ("train", "eval")
    ):
        return None
    callee = flow.callee_summary(call, scope)
    if callee is None:
        return None
    summary, mapper = callee
    if summary.forwards or summary.optimizer_step or summary.entry_trains or summary.object_calls:
        return None
    out: dict[str, Mode] = {}
    for key, effect in summary.effects.items():
        mine = mapper(key)
        if mine is None or effect.passthrough or len(effect.sets) != 1:
            return None
        (mode,) = effect.sets
        if mode is Mode.UNKNOWN:
            return None
        out[flow.canonical(mine, scope)] = mode
    return out or None


def _sets(flow: FlowView, method: FuncNode, key: str, mode: Mode) -> bool:
    switches = any(
        c.function is method
        and c.mode in (mode, Mode.UNKNOWN)  # ``self.net.train(training)``: the caller's choice
        and is_prefix(c.model, key)
        for c in flow.mode_calls
    )
    if not switches:
        return False
    if any(c.function is method for c in flow.model_calls):
        return False  # it evaluates (or trains) itself: not a switch for the caller
    info = flow.function_info(method)
    return info is not None and not flow.summary(info).optimizer_step


def callable_parameters(fn: FuncNode) -> set[str]:
    """Parameters of ``fn`` annotated as functions (``Callable[..., Any]``,
    ``typing.Callable``, ``FunctionType``, also quoted): what calling one runs
    is a function's body, not a model's forward."""
    out: set[str] = set()
    args = fn.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        ann = a.annotation
        if ann is None:
            continue
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            text: str | None = ann.value.strip()
        else:
            text = dotted(ann.value if isinstance(ann, ast.Subscript) else ann)
        if text is not None and _CALLABLE.match(text):
            out.add(a.arg)
    return out


def function_parameters(parents: dict[ast.AST, ast.AST], node: ast.AST) -> set[str]:
    """Parameters of the functions around ``node`` (its own when it is one)
    that hold functions: annotated so (``callable_parameters``), or handed to
    ``functools.wraps`` by a decorator inside (``@wraps(fn) def wrapper``)."""
    out: set[str] = set()
    current: ast.AST | None = node
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out |= callable_parameters(current)
            params = {a.arg for a in (*current.args.posonlyargs, *current.args.args)}
            for inner in ast.walk(current):
                if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for d in inner.decorator_list:
                    if (
                        isinstance(d, ast.Call)
                        and (dotted(d.func) or "").rsplit(".", 1)[-1] == "wraps"
                        and d.args
                        and (name := dotted(d.args[0])) in params
                    ):
                        out.add(name)
        current = parents.get(current)
    return out
