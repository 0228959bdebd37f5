"""Functions that *show* what a model they are given computes: they print,
log, write, save or plot it (``outputs.feeds_output``), and do nothing a
``no_grad`` or an ``eval()`` around their call could break.

A call that hands a trained model to such a function, after the training,
is an evaluation of what was trained whatever the function is called
(``get_scores(model, test_batches)`` printing an accuracy after each epoch's
batch loop, ``save_samples(G, z)`` from the file's ``utils``): the
*after-training* signal of ``regions`` asks this module about the functions
of the file (also of the models they read as globals) and the methods of the
caller's class (``self.visualize(epoch)`` saving what ``self.ae`` makes), and
the project summaries record the answer for the functions of the other
files of the run (``ModuleSummary.shows``).

Only the parameters that receive a model are sources: a demo that prints
what it reads from a stream runs no model. A function is refused when it,
or a function of its file that it calls (one level down), makes a call
named for training or for gradients (``backward``, ``step``,
``fine_tune_epoch``, ``autograd.grad``), switches a mode (a ``train()``
there is Monte Carlo dropout), yields (a caller runs between its steps),
declares a global, or puts anything into what it does not own: a
parameter, ``self``, a global (``results.append(out)``, ``buf[i] = out``:
its caller could train on it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from rnnfix.analysis.modes.outputs import SINKS, feeds_output
from rnnfix.analysis.syntax.names import dotted, is_below
from rnnfix.analysis.syntax.walks import walk_local, words
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, module_mode_switch

# Words that make a name about training.
TRAINING_WORDS = frozenset({"train", "training", "fit", "finetune", "step"})
# ... and, for a call a showing function makes, ``fine_tune_epoch`` too.
_TRAINING_CALL_WORDS = TRAINING_WORDS | {"tune", "optimise", "optimize", "adapt"}
# Calls that train or read gradients, whoever the receiver, and mode calls.
_REFUSED_CALLS = frozenset(
    {"backward", "step", "zero_grad", "fit", "train_step", "training_step", "optimize",
     "learn", "grad", "requires_grad_", "enable_grad", "set_grad_enabled", "train", "eval"}
)  # fmt: skip


def called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


# Methods that put an argument into their receiver.
_MUTATORS = frozenset({"append", "extend", "insert", "update", "add", "setdefault", "put"})


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def runs_any(call: ast.Call, models: Iterable[str]) -> bool:
    """``call`` runs one of ``models``: calls it or a method of it that is
    not one of ``nn.Module``'s own (``model.generate(x)``, not
    ``model.parameters()``), or hands it to a runner
    (``nn.parallel.data_parallel(net, x)``); never a mode call."""
    text = dotted(call.func)
    if text and text.rsplit(".", 1)[-1] in library.RUNNER_NAMES and call.args:
        text = dotted(call.args[0])
    if text is None:
        return False
    method = text.rsplit(".", 1)[-1]
    for model in models:
        if text == model or (is_below(text, model) and method not in MODULE_METHODS):
            return module_mode_switch(call) is None
    return False


def only_shows(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    local: Mapping[str, ast.FunctionDef],
    depth: int = 1,
    methods: Mapping[str, ast.FunctionDef] | None = None,
) -> bool:
    """``func`` trains nothing, reads no gradient, switches no mode, yields
    nothing and keeps no global, nor do the functions of ``local`` it calls,
    nor the ``methods`` of its class it calls on ``self`` (``depth`` levels
    down)."""
    if isinstance(func, ast.AsyncFunctionDef):
        return False
    params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    nodes = list(walk_local(func))
    # Its own variables: what it puts in anything else (a parameter, ``self``,
    # a global) outlives the call, and its caller may train on it.
    own = {
        n.id
        for n in nodes
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in params
    }
    for n in nodes:
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
            return False
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
            if _root(n) not in own:
                return False  # ``buf[i] = out``, ``self.last = out``
        if not isinstance(n, ast.Call):
            continue
        name = called_name(n)
        if name is None:
            continue
        if name in _MUTATORS and isinstance(n.func, ast.Attribute) and _root(n.func) not in own:
            return False  # ``results.append(out)``, ``HISTORY.append(out)``
        if name in _REFUSED_CALLS or any(w in _TRAINING_CALL_WORDS for w in words(name)):
            return False
        callee = local.get(name) if isinstance(n.func, ast.Name) else None
        if methods is not None and on_self(n):
            callee = methods.get(name)
        if callee is not None and callee is not func:
            if depth <= 0 or not only_shows(callee, local, depth - 1, methods):
                return False
    return True


def on_self(call: ast.Call) -> bool:
    """``call`` is ``self.<name>(...)``."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    )


def call_shows(
    func: ast.FunctionDef,
    local: Mapping[str, ast.FunctionDef],
    call: ast.Call,
    models: set[str],
    methods: Mapping[str, ast.FunctionDef] | None = None,
) -> bool:
    """``call`` runs ``func``, a function of the caller's file (or, with
    ``methods``, a method of the caller's class called on ``self``), which
    shows what one of ``models`` computes (``_sources``)."""
    sources = _sources(func, local, call, models, methods)
    if not sources:
        return False
    noise = _Noise(func, methods)
    return feeds_output(func.body, lambda c: runs_any(c, sources) and not noise.fed(c))


def method_runs(
    method: ast.FunctionDef,
    methods: Mapping[str, ast.FunctionDef],
    local: Mapping[str, ast.FunctionDef],
    call: ast.Call,
    models: set[str],
) -> bool:
    """``call`` (``self.reconstruct(images)``) runs ``method`` of the
    caller's class, which runs one of ``models`` (``_sources``) and does
    nothing else a ``no_grad`` could break: what it returns is what the
    model computes, for the caller's statement to show."""
    sources = _sources(method, local, call, models, methods)
    if not sources:
        return False
    noise = _Noise(method, methods)
    return any(
        isinstance(n, ast.Call) and runs_any(n, sources) and not noise.fed(n)
        for n in walk_local(method)
    )


# Calls that make up random tensors: a model run on them is a generator
# sampled from noise, whose mode and grad are the author's (as the rule
# leaves a forward on made-up tensors alone).
_RANDOM = frozenset(
    {"randn", "rand", "randn_like", "rand_like", "normal", "normal_", "uniform", "uniform_",
     "standard_normal"}
)  # fmt: skip


class _Noise:
    """What in ``func`` holds random tensors it made up (``z =
    Variable(FloatTensor(np.random.normal(...)))``), and, for a method, the
    attributes of ``self`` its class makes up (``self.fixed_z =
    torch.randn(...)``). Read at the first question: most calls it could be
    asked about run no model."""

    def __init__(self, func: ast.AST, methods: Mapping[str, ast.FunctionDef] | None) -> None:
        self.func = func
        self.methods = methods
        self._names: set[str] | None = None
        self._attrs: set[str] = set()

    def _read(self) -> set[str]:
        if self._names is None:
            self._names = set()
            for n in walk_local(self.func):
                if isinstance(n, ast.Assign) and _random(n.value):
                    self._names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
            for method in (self.methods or {}).values():
                for n in walk_local(method):
                    if isinstance(n, ast.Assign) and _random(n.value):
                        self._attrs |= {
                            d for t in n.targets if (d := dotted(t)) and d.startswith("self.")
                        }
        return self._names

    def fed(self, call: ast.Call, models: Iterable[str] = ()) -> bool:
        """The arguments of ``call`` that are data (not one of ``models``,
        not a constant such as a path) are all made-up noise."""
        args = [
            a
            for a in (*call.args, *(k.value for k in call.keywords))
            if not isinstance(a, (ast.Constant, ast.JoinedStr)) and dotted(a) not in set(models)
        ]
        return bool(args) and all(self._noise(a) for a in args)

    def _noise(self, expr: ast.expr) -> bool:
        if _random(expr):
            return True
        names = self._read()
        if isinstance(expr, ast.Name):
            return expr.id in names
        return dotted(expr) in self._attrs


def fed_noise(
    call: ast.Call, scope: ast.AST, methods: Mapping[str, ast.FunctionDef], models: set[str]
) -> bool:
    """``call``, in ``scope`` (a function, a method of a class with
    ``methods``, or a module), is given ``models`` and otherwise only random
    tensors made up there (``self.generate(self.fixed_z)``,
    ``save_samples(G, fixed_z, path)``): a generator sampled from noise."""
    return _Noise(scope, methods).fed(call, models)


def _random(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and called_name(n) in _RANDOM for n in ast.walk(expr))


def _sources(
    func: ast.FunctionDef,
    local: Mapping[str, ast.FunctionDef],
    call: ast.Call,
    models: set[str],
    methods: Mapping[str, ast.FunctionDef] | None,
) -> set[str]:
    """The ``models`` that ``func`` may run when ``call`` runs it: those it
    is handed, those it reads as globals of the file (``show(images)``
    running the script's ``model``), and for a method those it reads from
    ``self`` (``self.visualize_results(epoch)`` running ``self.ae``); none
    when ``func`` does more than show (``only_shows``). A forward fed only
    noise is no source (``_Noise``)."""
    params = positional_parameters(func)
    if methods is not None:
        params = params[1:]  # ``self`` is bound
    kwonly = tuple(a.arg for a in func.args.kwonlyargs)
    bound = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    bound |= {
        n.id
        for n in walk_local(func)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    read = {
        m
        for m in models
        if (root := m.split(".")[0]) not in bound or (methods is not None and root == "self" != m)
    }
    sources = receiving(params, kwonly, call, models) | read
    if not sources or not only_shows(func, local, 1, methods):
        return set()
    return sources


def shown_parameters(
    func: ast.FunctionDef, local: Mapping[str, ast.FunctionDef], candidates: Iterable[str]
) -> frozenset[str]:
    """Those of ``candidates`` (parameters of ``func``) whose forwards reach
    an output in ``func``'s body; none when ``func`` does more than show."""
    # One walk first: a function with no output call, or that never calls
    # a candidate (``p(x)``, ``p.encode(x)``), shows none of them.
    called: set[str] = set()
    sinks = False
    for n in walk_local(func):
        if isinstance(n, ast.Call):
            sinks = sinks or called_name(n) in SINKS
            root = _root(n.func.value) if isinstance(n.func, ast.Attribute) else None
            called.add(n.func.id if isinstance(n.func, ast.Name) else root or "")
            if called_name(n) in library.RUNNER_NAMES and n.args:
                called.add(_root(n.args[0]) or "")  # ``data_parallel(net, x)``
    names = [p for p in candidates if p not in ("self", "cls") and p in called]
    if not sinks or not names or not only_shows(func, local):
        return frozenset()

    noise = _Noise(func, None)

    def shows(param: str) -> bool:
        return feeds_output(
            func.body, lambda call: runs_any(call, (param,)) and not noise.fed(call, (param,))
        )

    return frozenset(p for p in names if shows(p))


def receiving(
    positional: tuple[str, ...], kwonly: tuple[str, ...], call: ast.Call, models: set[str]
) -> set[str]:
    """The parameters (``positional`` then ``kwonly``) that ``call`` binds to
    one of ``models``, positionally or by keyword; none through ``*args``."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return set()
    out = {positional[i] for i, a in enumerate(call.args[: len(positional)]) if dotted(a) in models}
    names = set(positional) | set(kwonly)
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in names and dotted(kw.value) in models:
            out.add(kw.arg)
    return out


def positional_parameters(func: ast.FunctionDef) -> tuple[str, ...]:
    return tuple(a.arg for a in (*func.args.posonlyargs, *func.args.args))
