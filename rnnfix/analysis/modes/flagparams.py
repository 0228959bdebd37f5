"""The flag of a function shared by training and evaluation.

``def iteration(self, epoch, loader, train=True)`` runs the model on every
batch and its training step only under ``if train:``; ``def run_epoch(model,
loader, optimizer, mode)`` does the same under ``if mode == "train":``. Called
with the flag off (``train=False``, ``"valid"``), the function evaluates:
that is the *flag* signal of ``regions``, whatever the function is called.

The evidence, all of it required:

- the flag: a ``FLAG_NAMES`` parameter with a boolean default, or any
  parameter that a guard compares with a training word (``mode ==
  "train"``, ``"training" == phase``);
- every training step of the function (at least one) under an ``if`` on it;
- a call in the file that turns it off: ``False`` (or no argument and a
  False default), a string that is no training word (``"valid"``,
  ``"test"``), or the calling function's own flag parameter where that
  function is called with it off (``self._run_batch(x, y, train)`` inside a
  ``_run_epoch(..., train=False)``), followed a few calls up;
- mode calls in the function, if any, each under an ``if`` on the flag: the
  author then sets the modes from it (``FlagParam.sets_modes``), and only the
  grad mode may be missing.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradctx import training_steps
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import (
    guarded_by_name,
    nodes_of,
    scope_of,
    walk_local,
    walk_tree,
    words,
)
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.flowview import FlowSource

# Boolean parameters that say "this call trains" (``regiontext`` reads them too).
FLAG_NAMES = frozenset({"train", "training", "is_train", "is_training", "train_mode"})
# String values that say "this call trains" (``mode == "train"``).
TRAIN_VALUES = frozenset({"train", "training", "fit"})
_TRAINING_WORDS = frozenset({"train", "training", "fit", "finetune"})
_MAX_THREAD = 3  # calls followed up through a threaded flag parameter


@dataclass(frozen=True)
class FlagParam:
    """A function's flag: its parameter, and the expression true when the
    call trains (``train``; ``mode == "train"`` as the author wrote it)."""

    name: str
    expr: str
    sets_modes: bool  # the function switches modes itself, from the flag
    # ``model.train()`` statements of the function's own body that put the
    # models in train mode whatever the flag (torchmil's ``_shared_loop``):
    # the fix passes them the flag.
    forced: tuple[ast.Call, ...] = ()
    # The flag is the model's own mode, ``model.training`` (``name`` is the
    # model): the caller's ``eval()`` sets it, so only grad can be missing.
    reads_mode: bool = False
    # The parameter says "this call evaluates" (conv-tasnet's
    # ``cross_valid=False``, the step under ``if not cross_valid:``): ``expr``
    # is ``not <name>``, and a call passing True turns training off.
    inverted: bool = False


@dataclass(frozen=True)
class _MarkedScopes:
    """The scopes (functions, lambdas, classes, the module) whose own code
    (``walk_local``'s nodes) holds ``"train"``/``"training"``/``"fit"`` in a
    comparison or a collection, and those that read ``.training``: found in
    one pass over those kinds of node, so that the flag checks, asked for
    every function, cost nothing for the functions that cannot have one."""

    train_values: frozenset[ast.AST]
    read_training: frozenset[ast.AST]


_MARKED: weakref.WeakKeyDictionary[ast.AST, _MarkedScopes] = weakref.WeakKeyDictionary()
_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _marked_scopes(ctx: FileContext) -> _MarkedScopes:
    found = _MARKED.get(ctx.tree)
    if found is None:
        parents = ctx.facts.parents

        def scope(node: ast.AST) -> ast.AST | None:
            cur = parents.get(node)
            while cur is not None and not isinstance(cur, _OWN_SCOPES):
                cur = parents.get(cur)
            return cur

        collections = (ast.Compare, ast.Tuple, ast.List, ast.Set)
        values = {
            scope(n)
            for n in nodes_of(ctx.tree, ast.Constant)
            if n.value in TRAIN_VALUES  # type: ignore[attr-defined]  # only constants listed
            and isinstance(parents.get(n), collections)
        }
        reads = {
            scope(n)
            for n in nodes_of(ctx.tree, ast.Attribute)
            if n.attr == "training"  # type: ignore[attr-defined]  # only attributes listed
        }
        # Functions only (what the checks ask about): a kept module would
        # keep its own entry of this weak table alive.
        found = _MarkedScopes(
            frozenset(s for s in values if isinstance(s, _FUNCTIONS)),
            frozenset(s for s in reads if isinstance(s, _FUNCTIONS)),
        )
        _MARKED[ctx.tree] = found
    return found


def flag_parameter(ctx: FileContext, func: ast.AST) -> FlagParam | None:
    """The flag of ``func`` when the module docstring's evidence holds."""
    if not isinstance(func, ast.FunctionDef):
        return None
    evaluates = _eval_parameter(func)
    if (
        _bool_parameter(func) is None
        and not _none_parameters(func)
        and evaluates is None
        and func not in _marked_scopes(ctx).train_values
    ):
        return None  # no flag to speak of: cheap, before the training steps
    steps = list(training_steps(ctx, func))
    if not steps:
        return None
    flag = _flag_of(ctx, func, steps)
    inverted = False
    if flag is None and evaluates is not None:
        if all(_only_when_false(ctx.facts.parents, s, func, evaluates) for s in steps):
            flag, inverted = (evaluates, f"not {evaluates}"), True
    if flag is None:
        return None
    name, expr = flag
    switches = [n for n in walk_local(func) if module_mode_switch(n) is not None]
    forced = [s for s in switches if not guarded_by_name(ctx.facts.parents, s, func, name)]
    if forced and (len(forced) != len(switches) or not all(_top_train(func, s) for s in forced)):
        return None  # the author sets the modes here, not from the flag
    found = FlagParam(name, expr, sets_modes=bool(switches), inverted=inverted)
    if not off_calls(ctx, func, found):
        return None
    if forced:
        calls = tuple(c for c in forced if isinstance(c, ast.Call))
        return FlagParam(name, expr, sets_modes=False, forced=calls, inverted=inverted)
    return found


# Words of a parameter that says "this call evaluates": ``cross_valid``,
# ``is_eval``, ``validate``, ``test`` (``regiontext`` reads their text).
EVAL_FLAG_WORDS = frozenset(
    {"val", "valid", "validate", "validation", "validating", "eval", "evaluate", "evaluation",
     "evaluating", "test", "testing", "cv"}
)  # fmt: skip


def _eval_parameter(func: ast.FunctionDef) -> str | None:
    """A parameter named for evaluation (``EVAL_FLAG_WORDS``, no training
    word) with a ``False`` default: ``cross_valid=False``."""
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [
        *zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True),
        *((arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None),
    ]
    for arg, default in pairs:
        ws = set(words(arg.arg))
        if (
            isinstance(default, ast.Constant)
            and default.value is False
            and ws & EVAL_FLAG_WORDS
            and not ws & _TRAINING_WORDS
        ):
            return arg.arg
    return None


def _none_parameters(func: ast.FunctionDef) -> list[str]:
    """Parameters with a ``None`` default (``optimizer=None``): a flag when
    every training step runs only if one is given (``_only_when_given``)."""
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [
        *zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True),
        *((arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None),
    ]
    return [arg.arg for arg, d in pairs if isinstance(d, ast.Constant) and d.value is None]


def _only_when_given(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.AST, name: str
) -> bool:
    """``node`` runs only when the parameter ``name`` is given: in the body of
    ``if name:`` or ``if name is not None:`` (or an ``and`` with one)
    (SimCLR's ``run_epoch(model, loader, epoch, optimizer=None)``: the step
    under ``if optimizer:``)."""
    return _only_when_true(parents, node, func, name, not_none=True)


def _is_not_none(test: ast.expr, name: str) -> bool:
    """``name is not None``."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _only_when_false(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.AST, name: str
) -> bool:
    """``node`` runs only when the parameter ``name`` is false: in the body
    of ``if not name:`` (or an ``and`` with it), or the ``else`` of ``if name:``."""
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, ast.If):
            test = cur.test
            operands = (
                test.values
                if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                else [test]
            )
            if child in cur.body and any(
                isinstance(t, ast.UnaryOp)
                and isinstance(t.op, ast.Not)
                and isinstance(t.operand, ast.Name)
                and t.operand.id == name
                for t in operands
            ):
                return True
            if child in cur.orelse and isinstance(test, ast.Name) and test.id == name:
                return True
        child, cur = cur, parents.get(cur)
    return False


def _top_train(func: ast.FunctionDef, call: ast.AST) -> bool:
    """``call`` is ``<model>.train()`` (or ``train(True)``) as a statement of
    the function's own body, not under an ``if``, a loop or a ``try``."""
    switch = module_mode_switch(call)
    return (
        isinstance(call, ast.Call)
        and switch is not None
        and switch.mode is Mode.TRAIN
        and not call.keywords
        and all(isinstance(a, ast.Constant) and a.value is True for a in call.args)
        and any(isinstance(s, ast.Expr) and s.value is call for s in func.body)
    )


def mode_flag(ctx: FileContext, func: ast.AST) -> FlagParam | None:
    """``if model.training:`` as the flag (facenet-pytorch's ``pass_epoch``:
    ``mode = 'Train' if model.training else 'Valid'``, the step only under
    ``if model.training:``). The evidence, all of it required: every training
    step of the function (at least one) in the body of an ``if`` whose test
    is ``<model>.training`` (or an ``and`` with it), one model for all; the
    function calls that model and sets no mode itself; and it has code that
    runs only with the flag off (an ``else``, ``not model.training``, ``x if
    model.training else y``): the author wrote the evaluation path, so a
    caller runs it in eval mode, the mode is the caller's and right, and
    only grad is left on."""
    if not isinstance(func, ast.FunctionDef):
        return None
    if func not in _marked_scopes(ctx).read_training:
        return None  # cheap, before the training steps
    local = list(walk_local(func))
    steps = list(training_steps(ctx, func))
    if not steps:
        return None
    parents = ctx.facts.parents
    models = {_mode_guard(parents, s, func) for s in steps}
    model = models.pop() if len(models) == 1 else None
    if model is None or any(module_mode_switch(n, lenient=True) is not None for n in local):
        return None
    forward = (model, f"{model}.forward")
    if not any(isinstance(n, ast.Call) and dotted(n.func) in forward for n in local):
        return None
    if not any(_off_only(parents, n, model) for n in local):
        return None
    return FlagParam(model, f"{model}.training", sets_modes=True, reads_mode=True)


def _mode_guard(parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.AST) -> str | None:
    """The model of the innermost ``if <model>.training:`` whose body holds ``node``."""
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, ast.If) and child in cur.body:
            for test in (
                cur.test.values
                if isinstance(cur.test, ast.BoolOp) and isinstance(cur.test.op, ast.And)
                else [cur.test]
            ):
                if isinstance(test, ast.Attribute) and test.attr == "training":
                    found = dotted(test.value)
                    if found is not None:
                        return found
        child, cur = cur, parents.get(cur)
    return None


def _off_only(parents: Mapping[ast.AST, ast.AST], node: ast.AST, model: str) -> bool:
    """``node`` is code that runs only when ``model.training`` is false:
    ``not model.training``, the ``else`` of ``if model.training:`` or of
    ``x if model.training else y``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _is_mode(node.operand, model)
    if isinstance(node, (ast.If, ast.IfExp)) and _is_mode(node.test, model):
        return bool(node.orelse)
    return False


def _is_mode(expr: ast.expr, model: str) -> bool:
    return (
        isinstance(expr, ast.Attribute) and expr.attr == "training" and dotted(expr.value) == model
    )


def off_calls(ctx: FileContext, func: ast.FunctionDef, flag: FlagParam) -> list[ast.Call]:
    """The calls of ``func`` in the file that turn its flag off (for an
    ``inverted`` flag: pass True, as a constant)."""
    return [
        n
        for n in walk_tree(ctx.tree)
        if isinstance(n, ast.Call)
        and _called_name(n) == func.name
        and (
            _passes_true(n, func, flag.name)
            if flag.inverted
            else _turns_off(ctx, n, func, flag.name)
        )
    ]


def only_when_training(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.FunctionDef, flag: FlagParam
) -> bool:
    """``node`` runs only when ``func``'s flag says "train": under ``if
    train:``, ``if mode == "train":``, ``if not cross_valid:`` or ``if
    model.training:``. A model whose every forward does (an augmentation
    applied to training batches only) is not evaluated on the off path."""
    if flag.reads_mode:
        return _mode_guard(parents, node, func) == flag.name
    if flag.inverted:
        return _only_when_false(parents, node, func, flag.name)
    if flag.expr == flag.name:
        return _only_when_true(parents, node, func, flag.name)
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    return _guarding_if(parents, node, func, params) is not None


def _only_when_true(
    parents: Mapping[ast.AST, ast.AST],
    node: ast.AST,
    func: ast.AST,
    name: str,
    not_none: bool = False,
) -> bool:
    """``node`` is in the body of ``if name:`` (or an ``and`` with ``name``);
    with ``not_none``, of ``if name is not None:`` too."""
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, ast.If) and child in cur.body:
            test = cur.test
            operands = (
                test.values
                if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                else [test]
            )
            if any(
                (isinstance(t, ast.Name) and t.id == name) or (not_none and _is_not_none(t, name))
                for t in operands
            ):
                return True
        child, cur = cur, parents.get(cur)
    return False


def evaluation_guard(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.AST
) -> str | None:
    """The evaluation parameter (``cross_valid=False``) of ``func`` that
    ``node`` runs only with off (``if not cross_valid:``), if any."""
    if not isinstance(func, ast.FunctionDef):
        return None
    name = _eval_parameter(func)
    return name if name is not None and _only_when_false(parents, node, func, name) else None


def passes_true(call: ast.Call, func: ast.FunctionDef, name: str) -> bool:
    """``call`` passes the parameter ``name`` a ``True`` constant."""
    return _passes_true(call, func, name)


def _passes_true(call: ast.Call, func: ast.FunctionDef, name: str) -> bool:
    arg = _argument(call, name, _position(func, name))
    return isinstance(arg, ast.Constant) and arg.value is True


def string_guard(src: FlowSource, node: ast.AST, func: ast.FunctionDef) -> str | None:
    """The parameter of the innermost ``if mode == "train":`` (or ``mode in
    ("train", ...)``) above ``node`` in ``func``, in its true branch."""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    found = _guarding_if(src.facts.parents, node, func, params)
    return found[0] if found is not None else None


def _guarding_if(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.AST, params: set[str]
) -> tuple[str, ast.If] | None:
    """The innermost ``if <param> == "train":`` above ``node`` in ``func``
    (``node`` in its true branch): the parameter and the ``if``."""
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, ast.If) and child in cur.body:
            name = _compared_param(cur.test, params)
            if name is not None:
                return name, cur
        child, cur = cur, parents.get(cur)
    return None


def turns_off(ctx: FlowSource, call: ast.Call, func: ast.FunctionDef, name: str) -> bool:
    """``call`` (of ``func``) passes the flag parameter ``name`` off."""
    return _turns_off(ctx, call, func, name)


def _flag_of(
    ctx: FileContext, func: ast.FunctionDef, steps: Sequence[ast.AST]
) -> tuple[str, str] | None:
    """(parameter, expression) of the flag every training step is guarded by."""
    flag = _bool_parameter(func)
    if flag is not None and all(
        guarded_by_name(ctx.facts.parents, s, func, flag[0]) for s in steps
    ):
        return flag[0], flag[0]
    for name in _none_parameters(func):
        if all(_only_when_given(ctx.facts.parents, s, func, name) for s in steps):
            return name, f"{name} is not None"
    found: tuple[str, str] | None = None
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    for step in steps:
        test = _string_guard(ctx, step, func, params)
        if test is None or (found is not None and test[0] != found[0]):
            return None
        found = found or test
    return found


def _string_guard(
    ctx: FileContext, node: ast.AST, func: ast.AST, params: set[str]
) -> tuple[str, str] | None:
    """The innermost ``if <param> == "train":`` above ``node`` (in its true
    branch): (param, the test's source)."""
    found = _guarding_if(ctx.facts.parents, node, func, params)
    return (found[0], ctx.segment(found[1].test)) if found is not None else None


def _compared_param(test: ast.expr, params: set[str]) -> str | None:
    """The parameter a guard tests for training: ``mode == "train"``, or
    (the annotated transformer's ``run_epoch``) ``mode == "train" or mode ==
    "train+log"`` and ``mode in ("train", "train+log")``: one parameter,
    every value it is compared with a training mode, one of them a plain
    ``TRAIN_VALUES`` word."""
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    found: set[str] = set()
    values: list[object] = []
    for t in tests:
        compared = _compared_values(t, params)
        if compared is None:
            return None
        found.add(compared[0])
        values += compared[1]
    if len(found) != 1 or not any(v in TRAIN_VALUES for v in values):
        return None
    if not all(isinstance(v, str) and _training_value(v) for v in values):
        return None
    return found.pop()


def _compared_values(test: ast.expr, params: set[str]) -> tuple[str, list[object]] | None:
    """(parameter, the constants it is compared with) of ``p == "c"`` (either
    side) or ``p in ("c", "d")``."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(test.ops[0], ast.In):
        if (
            isinstance(left, ast.Name)
            and left.id in params
            and isinstance(right, (ast.Tuple, ast.List, ast.Set))
            and right.elts
            and all(isinstance(e, ast.Constant) for e in right.elts)
        ):
            return left.id, [e.value for e in right.elts if isinstance(e, ast.Constant)]
        return None
    if not isinstance(test.ops[0], ast.Eq):
        return None
    for a, b in ((left, right), (right, left)):
        if isinstance(a, ast.Name) and a.id in params and isinstance(b, ast.Constant):
            return a.id, [b.value]
    return None


def _training_value(value: str) -> bool:
    """A mode string that trains: ``"train"``, ``"train+log"``, ``"fit"``."""
    return value in TRAIN_VALUES or any(w in _TRAINING_WORDS for w in words(value))


def _turns_off(
    ctx: FlowSource, call: ast.Call, func: ast.FunctionDef, name: str, depth: int = 0
) -> bool:
    """``call`` (of ``func``) passes parameter ``name`` off: ``False`` or a
    string that is no training word, passed or left as the default, or the
    caller's own parameter where the caller's callers pass that off."""
    arg = _argument(call, name, _position(func, name))
    if arg is _UNKNOWN:
        return False
    if arg is None:
        default = _default(func, name)
        return isinstance(default, ast.Constant) and _off(default.value)
    assert isinstance(arg, ast.expr)
    if isinstance(arg, ast.Constant):
        return _off(arg.value)
    if not isinstance(arg, ast.Name) or depth >= _MAX_THREAD:
        return False
    caller = scope_of(ctx.facts.parents, call)
    if not isinstance(caller, ast.FunctionDef) or caller is func:
        return False
    params = [a.arg for a in [*caller.args.posonlyargs, *caller.args.args, *caller.args.kwonlyargs]]
    if arg.id not in params:
        return False
    return any(
        isinstance(n, ast.Call)
        and _called_name(n) == caller.name
        and _turns_off(ctx, n, caller, arg.id, depth + 1)
        for n in walk_tree(ctx.tree)
    )


def _off(value: object) -> bool:
    if value is False or value is None:
        return True  # ``None``: no optimizer given, no mode string (``_none_parameters``)
    return (
        isinstance(value, str)
        and bool(value)
        and not any(w in _TRAINING_WORDS for w in words(value))
    )


_UNKNOWN = object()


def _argument(call: ast.Call, name: str, position: int | None) -> ast.expr | object | None:
    """What ``call`` passes for parameter ``name``: the expression, None when
    it passes nothing (the default applies), ``_UNKNOWN`` behind ``*``/``**``."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
        if k.arg is None:
            return _UNKNOWN
    if position is not None and any(isinstance(a, ast.Starred) for a in call.args):
        return _UNKNOWN
    if position is not None and position < len(call.args):
        return call.args[position]
    return None


def _position(func: ast.FunctionDef, name: str) -> int | None:
    positional = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if name not in positional:
        return None
    return positional.index(name) - (1 if _is_method(func) else 0)


def _default(func: ast.FunctionDef, name: str) -> ast.expr | None:
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    defaults = dict(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
    for arg, value in defaults.items():
        if arg.arg == name:
            return value
    for arg, kw in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if arg.arg == name:
            return kw
    return None


def flag_of(func: ast.FunctionDef) -> tuple[str, bool, int | None] | None:
    """(name, default, position among a call's positional arguments) of the
    function's flag parameter (``FLAG_NAMES`` with a boolean default)."""
    return _bool_parameter(func)


def passes_false(call: ast.Call, name: str, position: int | None, default: bool) -> bool:
    """``call`` passes the flag False: a ``False`` constant, or no argument
    and a False default."""
    arg = _argument(call, name, position)
    if arg is _UNKNOWN:
        return False
    if arg is None:
        return default is False
    return isinstance(arg, ast.Constant) and arg.value is False


def _bool_parameter(func: ast.FunctionDef) -> tuple[str, bool, int | None] | None:
    """(name, default, position among the caller's positional arguments; None
    for keyword-only) of a ``FLAG_NAMES`` parameter with a True/False default,
    or with none (``def run_epoch(loader, training):``, every call passes it:
    the default returned is True, so that only a ``False`` passed turns it
    off)."""
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    defaults = dict(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
    skip = 1 if _is_method(func) else 0  # ``self.iteration(...)`` binds self itself
    for i, arg in enumerate(positional):
        if arg.arg in FLAG_NAMES and arg not in defaults:
            return arg.arg, True, i - skip
        value = defaults.get(arg)
        if (
            arg.arg in FLAG_NAMES
            and isinstance(value, ast.Constant)
            and isinstance(value.value, bool)
        ):
            return arg.arg, value.value, i - skip
    for arg, value in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if arg.arg in FLAG_NAMES and value is None:
            return arg.arg, True, None
        if (
            arg.arg in FLAG_NAMES
            and isinstance(value, ast.Constant)
            and isinstance(value.value, bool)
        ):
            return arg.arg, value.value, None
    return None


def _is_method(func: ast.FunctionDef) -> bool:
    first = func.args.posonlyargs[:1] or func.args.args[:1]
    return bool(first) and first[0].arg in ("self", "cls")


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def switched_off_by_argument(
    call: ast.Call, callee: ast.FunctionDef, mode_calls: list[ast.Call]
) -> bool:
    """``call`` of ``callee`` runs none of ``mode_calls`` (the mode switches
    of ``callee`` the caller's fact comes from): each sits in the true branch
    of an ``if`` on a boolean parameter (``if not training:``, ``if eval_mode:``)
    that the call's constant argument, or the default it leaves, makes false
    (FlexTENet's ``self.predict(x, training=True)`` around ``if not training:
    self.model.eval()``)."""
    if not mode_calls:
        return False
    parents = {c: p for p in walk_local(callee) for c in ast.iter_child_nodes(p)}
    for switch in mode_calls:
        guard = _bool_guard(parents, switch, callee)
        if guard is None:
            return False
        name, wanted = guard
        value = _constant_argument(call, callee, name)
        if value is None or value is wanted:
            return False
    return True


def _bool_guard(
    parents: Mapping[ast.AST, ast.AST], node: ast.AST, func: ast.FunctionDef
) -> tuple[str, bool] | None:
    """(parameter, the value it must have) of the innermost ``if param:`` /
    ``if not param:`` whose true branch holds ``node``."""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, ast.If) and any(child is s for s in cur.body):
            test = cur.test
            if isinstance(test, ast.Name) and test.id in params:
                return test.id, True
            if (
                isinstance(test, ast.UnaryOp)
                and isinstance(test.op, ast.Not)
                and isinstance(test.operand, ast.Name)
                and test.operand.id in params
            ):
                return test.operand.id, False
            return None
        if isinstance(cur, ast.If):
            return None  # in an ``else`` branch: not read
        child, cur = cur, parents.get(cur)
    return None


def _constant_argument(call: ast.Call, func: ast.FunctionDef, name: str) -> bool | None:
    """The boolean constant ``call`` passes for ``name`` (or the boolean
    default it leaves); None when it is anything else."""
    arg = _argument(call, name, _position(func, name))
    if arg is _UNKNOWN:
        return None
    if arg is None:
        arg = _default(func, name)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
        return arg.value
    return None
