"""Evaluation regions: code that is evaluation by intent.

Three signals, all syntactic:

- *data*: a loop over a loader / dataset / batches named like ``val``,
  ``valid``, ``dev``, ``test``, ``eval``, ``holdout`` (``val_loader``,
  ``testloader``, ``loaders["val"]``, ``enumerate(self.dev_batches)``);
- *name*: the body of a function or method named like ``evaluate``,
  ``validate``, ``test``, ``eval_*``, ``predict``, ``inference``;
- *after-eval*: a loop that follows ``<model>.eval()`` in the same block and
  calls that model;
- *self-eval*: a function, whatever its name, that switches a model to
  eval itself (``model.eval()`` among its own statements, not under a
  condition) and then runs it outside a loop (``get_scores``,
  ``sample_text``, ``captcha_test``), and runs no training step: its author
  says it evaluates; a loop right after the ``eval()`` is an *after-eval*
  region of its own. Not a module's own method switching ``self`` (a
  vocoder's ``forward``, a model's ``generate``): its caller owns the grad
  mode;
- *after-step*: a plain statement (an assignment or an expression, not a
  loop) that follows ``<model>.eval()`` in the same block and calls that
  model, in a function or module whose every training step comes before that
  ``eval()``, outside the loops that run a step
  (pygcn's ``train(epoch)``: the step, then ``model.eval(); output =
  model(features, adj)`` for the validation figures);
- *after-training*: a plain statement or a loop that comes after the code
  that trains a model (a loop running its training steps, or a call of a
  function of the file that runs them), in the same block or under an
  ``if``/``with``/``try`` that follows it, where every training step of its
  function (or of the module) comes before it, that runs that model and
  whose results reach an output (printed, logged, written, saved or
  plotted: ``outputs.feeds_output``), or that hands that model to a
  function of the file or of the run that shows what it computes
  (``shows``). No ``eval()`` needed: nanoGPT's
  lecture script ends with ``print(decode(m.generate(context, ...)))`` after
  the training loop; a char-RNN samples and prints text after each epoch's
  batch loop. Not when the author switches the model to train mode after
  training (a deliberate choice), nor inside a loop that runs a step
  directly (the periodic check's);
- *eval-object*: a method, whatever its name, of a class that is not a
  module (a predictor, an embedder: img2vec's ``Img2Vec.get_vec``) whose
  ``__init__`` puts ``self.<model>`` in eval mode for good (no ``train()`` of
  it, no training call, no gradient code anywhere in the class), and that
  runs that model: the object exists to run it for inference. Forward hooks
  the method registers must keep only detached outputs (``o.data``);
- *flag*: a function shared by training and evaluation through a boolean
  parameter (``def iteration(self, epoch, loader, train=True)``) whose
  training step runs only under ``if train:``, called in the file with the
  flag False (``self.iteration(epoch, loader, train=False)``), and that never
  switches a mode itself.

Whether a region calls a model, runs a training step, or is already under
``eval()`` / ``no_grad`` is for the rule to ask; this module only finds them,
and says whether a statement runs in the same iteration as a training step.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.grads.gradctx import GradContexts, classify_context, training_steps
from rnnfix.analysis.modes.flagparams import FlagParam, mode_flag
from rnnfix.analysis.modes.flagparams import flag_parameter as _flag_parameter
from rnnfix.analysis.modes.outputs import feeds_output
from rnnfix.analysis.modes.shows import (
    TRAINING_WORDS,
    call_shows,
    called_name,
    fed_noise,
    method_runs,
    on_self,
    receiving,
    runs_any,
)
from rnnfix.analysis.syntax.names import BUILTINS, dotted, is_below, strip_self_returning
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    LOOPS,
    block_of,
    child_nodes,
    innermost_loop,
    nodes_of,
    scope_of,
    statement_runs,
    walk_all_local,
    walk_local,
    words,
)
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.source.files import is_test_source

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.facts import FileFacts
    from rnnfix.analysis.project.summaries import Shown

    # What a function of another file of the run shows (``ProjectView.shows``).
    _Shows = Callable[[ast.expr], Shown | None] | None

Signal = Literal[
    "data",
    "name",
    "after-eval",
    "after-step",
    "after-training",
    "phase",
    "flag",
    "self-eval",
    "grad-off",
    "eval-object",
]

_EVAL_DATA_WORDS = frozenset(
    {"val", "vali", "valid", "validation", "dev", "test", "testing", "eval", "evaluation",
     "holdout", "heldout"}
)  # fmt: skip
# ``testloader``, ``valset``: one word made of an evaluation word and a data word.
_DATA_SUFFIXES = ("loader", "loaders", "set", "sets", "data", "dataset", "ds", "dl", "iter",
                  "batches", "gen", "queue", "samples")  # fmt: skip
_EVAL_FUNCTION_WORDS = frozenset(
    {"evaluate", "evaluation", "eval", "validate", "validation", "val", "valid", "test",
     "testing", "predict", "prediction", "inference", "infer"}
)  # fmt: skip
# Words that make a name about training, or not about running a model at all.
_TRAINING_WORDS = TRAINING_WORDS


@dataclass(frozen=True)
class EvalRegion:
    node: ast.stmt  # the loop, or the function definition
    signal: Signal
    # An *after-training* region of consecutive plain statements of one block
    # (a print, then a save): the last of them; None for one statement.
    last: ast.stmt | None = None

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, FUNCTIONS)


def _eval_word(word: str) -> bool:
    if word in _EVAL_DATA_WORDS:
        return True
    return any(
        word.startswith(w) and word[len(w) :] in _DATA_SUFFIXES
        for w in ("val", "valid", "dev", "test", "eval", "holdout")
    )


def data_is_eval(iterable: ast.AST) -> bool:
    """Whether a loop's iterable names evaluation data. String constants count
    only as subscript keys (``loaders["val"]``), so ``for phase in ["train",
    "val"]`` is not one; a name that also says ``train`` is not one either."""
    found: list[str] = []
    for n in ast.walk(iterable):
        if isinstance(n, ast.Name):
            found += words(n.id)
        elif isinstance(n, ast.Attribute):
            found += words(n.attr)
        elif isinstance(n, ast.Subscript):
            key = n.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found += words(key.value)
    if any(w in _TRAINING_WORDS for w in found):
        return False
    return any(_eval_word(w) for w in found)


def is_eval_name(identifier: str) -> bool:
    """A name of evaluation data (``test_x``, ``val_batch``, ``testloader``),
    not of training data (``train_val_split``)."""
    ws = words(identifier)
    return not any(w in _TRAINING_WORDS for w in ws) and any(_eval_word(w) for w in ws)


def is_eval_function_name(name: str) -> bool:
    """Named like an evaluator (``evaluate``, ``val_epoch``,
    ``estimate_loss``), not like training (``train_and_test``)."""
    ws = words(name)
    if name in ("eval", "train") or not ws:
        return False
    if any(w in _TRAINING_WORDS and w != "step" for w in ws):
        return False
    return any(w in _EVAL_FUNCTION_WORDS for w in ws) or _estimates_metric(ws)


def function_is_eval(ctx: FileContext, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Named like an evaluator, and not a pytest test, a mode-switch override
    (``def eval(self)``) or a Lightning hook (the framework sets the mode).
    ``step`` beside an evaluation word is an estimator's evaluation hook
    (skorch's ``validation_step``, ``evaluation_step``, ``predict_step``),
    not a training step."""
    if not is_eval_function_name(func.name):
        return False
    if func.name.startswith("test") and _pytest_context(ctx, func):
        return False
    return not _in_lightning_class(ctx, func)


# GPT-style trainers evaluate in ``estimate_loss()`` (nanoGPT, minGPT and
# their forks): an estimate of a loss or a metric is evaluation; ``estimate``
# alone is not (``estimate_mfu``, an RL ``estimate_advantages``).
_ESTIMATED = frozenset({"loss", "losses", "perplexity", "ppl", "accuracy", "acc", "metrics"})


def _estimates_metric(ws: list[str]) -> bool:
    return "estimate" in ws and any(w in _ESTIMATED for w in ws)


def _pytest_context(ctx: FileContext, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if is_test_source(ctx.path, ctx.source):
        return True
    parent = ctx.facts.parents.get(func)
    if isinstance(parent, ast.ClassDef) and parent.name.startswith("Test"):
        return True
    # pytest collects top-level ``test_*`` functions. That also drops a script's
    # ``test_epoch`` (its loops over test data still count); a bare
    # ``test(model, loader)`` is not collected by that pattern and stays an evaluator.
    # Nor is one that other files of the run call (``from utils import
    # test_seg``): a pytest test is run by pytest, never called by the code.
    if not func.name.startswith("test_") or not isinstance(parent, ast.Module):
        return False
    if len(re.findall(rf"\b{re.escape(func.name)}\s*\(", ctx.source)) > 1:
        return False  # called by this file's code too (its ``def`` is one match)
    view = ctx.facts.project
    return view is None or not view.called_elsewhere(func.name, not ctx.settings.isolated)


def _is_test(ctx: FileContext, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A pytest test, or a ``test_*`` method of a class (unittest collects those
    from any ``TestCase`` subclass, whatever its name)."""
    if not func.name.startswith("test"):
        return False
    if _pytest_context(ctx, func):
        return True
    parent = ctx.facts.parents.get(func)
    return (
        func.name.startswith("test_")
        and isinstance(parent, ast.ClassDef)
        and _may_be_test_case(ctx, parent, 0)
    )


def _may_be_test_case(ctx: FileContext, cls: ast.ClassDef, depth: int) -> bool:
    """unittest collects ``test_*`` methods only from ``TestCase`` subclasses:
    a class with no base (``class Processor:``), or whose bases are
    ``object``, torch's or the file's own classes that are not test cases,
    runs its ``test_epoch`` from the code (SR-LSTM's trainer). Any other
    base may be a ``TestCase``."""
    if depth > 8:
        return True
    local = {n.name: n for n in ctx.tree.body if isinstance(n, ast.ClassDef) and n is not cls}
    for base in cls.bases:
        name = dotted(base)
        if name is None:
            return True
        if name == "object":
            continue
        if name in local:
            if _may_be_test_case(ctx, local[name], depth + 1):
                return True
            continue
        qualname = ctx.facts.imports.qualname(base) or name
        if not qualname.startswith("torch."):
            return True
    return False


def _module_method(ctx: FileContext, func: ast.FunctionDef) -> bool:
    """``func`` is a method of an ``nn.Module`` subclass (of the file, or
    through bases the run shows), or of a class that defines ``forward``."""
    owner = ctx.facts.parents.get(func)
    if not isinstance(owner, ast.ClassDef):
        return False
    if owner.name in ctx.facts.modes.classes.modules:
        return True
    return bool(owner.bases) and any(
        isinstance(s, FUNCTIONS) and s.name == "forward" for s in owner.body
    )


def _in_lightning_class(ctx: FileContext, node: ast.AST) -> bool:
    if not ctx.facts.mentions_lightning:
        return False  # neither a base's text nor an import can say "lightning"
    for anc in ctx.facts.ancestors(node):
        if isinstance(anc, ast.ClassDef):
            for b in anc.bases:
                text = ctx.facts.imports.qualname(b) or dotted(b) or ""
                if "lightning" in text.lower():
                    return True
    return False


def find_regions(ctx: FileContext) -> list[EvalRegion]:
    """Candidate regions in source order. A loop inside another region's loop
    is not a separate candidate; a loop inside an evaluation function is (the
    rule drops it when it takes the function as the region)."""
    regions: list[EvalRegion] = []
    _visit(ctx, ctx.tree, regions, inside=False)
    loops = {id(r.node) for r in regions if not r.is_function}
    after = _after_step_statements(ctx, loops)
    # A loop after ``model.eval()`` (the *after-eval* signal) that also comes
    # after every training step of its function is an *after-training* one
    # too (SR-GNN's ``train_test``: the epoch, then the test loop): that
    # stronger signal takes it, with what it knows of the steps before.
    after_eval = {id(r.node) for r in regions if r.signal == "after-eval"}
    taken = (loops - after_eval) | {id(r.node) for r in after}
    after += _after_training(ctx, taken, {r.node for r in regions if r.is_function})
    if after:
        # A loop inside an after-training loop is part of it, as a loop inside
        # another loop region is: one ``eval()`` for both, not one each.
        outer = {id(r.node) for r in after if not r.is_function}
        regions = [
            r
            for r in regions
            if r.is_function
            or not (id(r.node) in outer or any(id(a) in outer for a in ctx.facts.ancestors(r.node)))
        ]
        regions = sorted([*regions, *after], key=lambda r: (r.node.lineno, r.node.col_offset))
    return regions


# Statements an *after-step* region may be: one simple statement, wrapped whole.
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
# The nodes with a statement list (``body``, ``orelse``, ``finalbody``).
_BLOCK_HOLDERS = (
    ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For,
    ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar,
    ast.ExceptHandler, ast.match_case,
)  # fmt: skip


def _after_step_statements(ctx: FileContext, loops: set[int]) -> list[EvalRegion]:
    """The *after-step* signal: in each block, a simple statement after a
    ``<model>.eval()`` of the same block (no ``train()`` of it between) that
    calls that model, where every training step of its function (or of the
    module) comes before it in the source and none is in a loop around it.
    Not inside a loop that is already a region."""
    found_stmts: list[ast.stmt] = []
    parents = ctx.facts.parents
    steps_of: dict[ast.AST, list[ast.Call]] = {}
    for node in nodes_of(ctx.tree, *_BLOCK_HOLDERS):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            evaluated: dict[str, ast.stmt] = {}  # model -> its eval() statement
            for stmt in block:
                if isinstance(stmt, ast.Expr):
                    switch = module_mode_switch(stmt.value)
                    if switch is not None and switch.target is not None:
                        if switch.mode is Mode.EVAL:
                            evaluated[switch.target] = stmt
                        else:
                            evaluated.pop(switch.target, None)
                        continue
                if not evaluated or not isinstance(stmt, _SIMPLE):
                    continue
                called = {m for m in evaluated if _calls_any(stmt, {m})}
                if not called:
                    continue
                scope = scope_of(parents, stmt)
                if isinstance(scope, ast.AsyncFunctionDef) or _in_lightning_class(ctx, stmt):
                    continue
                steps = steps_of.get(scope)
                if steps is None:
                    steps = steps_of[scope] = list(training_steps(ctx, scope))
                switches = [evaluated[m] for m in called]
                if steps and _after_every_step(parents, stmt, switches, steps, loops):
                    found_stmts.append(stmt)
    # Consecutive statements of one block make one region: one ``with`` for
    # the three lines that encode, quantise and decode a validation batch.
    return [
        EvalRegion(first, "after-step", last if last is not first else None)
        for first, last in statement_runs(parents, found_stmts)
    ]


# Statements an *after-training* region may be: a simple statement or a loop.
_AFTER_TRAINING = (*_SIMPLE, ast.For, ast.While)
# Blocks an *after-training* statement may sit in below the training's own
# block: code that runs once, after it.
_ONCE = (ast.If, ast.With, ast.Try, ast.TryStar)


def _after_training(
    ctx: FileContext, taken: set[int], evaluators: set[ast.stmt]
) -> list[EvalRegion]:
    """The *after-training* signal (see the module's docstring). ``taken``:
    the loops and statements already regions; ``evaluators``: the functions
    that are regions (a call of one is judged there, not here).

    Asked from the syntax first: every training step is a call of a
    ``backward`` or a ``step`` (``gradctx.training_steps``), and a loose
    scan with all of those as steps finds a superset of the statements; only
    when it finds one are the steps resolved (which builds the file's mode
    flow, the cost of a full analysis, for most training files that print)."""
    parents = ctx.facts.parents
    maybe: dict[ast.AST, list[ast.Call]] = {}
    for call in nodes_of(ctx.tree, ast.Call):
        assert isinstance(call, ast.Call)
        if called_name(call) in ("backward", "step"):
            maybe.setdefault(scope_of(parents, call), []).append(call)
    if not maybe:
        return []
    if not _scan(ctx, maybe, _training_functions(ctx, maybe), set(taken), evaluators, None):
        return []
    modes = ctx.facts.modes
    real = {s: [c for c in calls if modes.step_kind(c) is not None] for s, calls in maybe.items()}
    trainers = _training_functions(ctx, real)
    return _runs(parents, _scan(ctx, real, trainers, taken, evaluators, ctx))


def _runs(parents: dict[ast.AST, ast.AST], stmts: list[ast.stmt]) -> list[EvalRegion]:
    """One region per run of consecutive plain statements of a block (a
    print, then a save: one ``eval()`` and one ``with``), one per loop."""
    return [
        EvalRegion(first, "after-training", last if last is not first else None)
        for first, last in statement_runs(parents, stmts, lambda s: isinstance(s, _SIMPLE))
    ]


def _scan(
    ctx: FileContext,
    scope_steps: dict[ast.AST, list[ast.Call]],
    trainers: set[str],
    taken: set[int],
    evaluators: set[ast.stmt],
    resolved: FileContext | None,
) -> list[ast.stmt]:
    """The *after-training* statements, with ``scope_steps`` as each scope's
    training steps. ``resolved`` is None for the loose scan: any step counts
    as training what its statement calls, the first step of a scope bounds
    what comes after, and nothing is excluded for what the steps update."""
    found: list[ast.stmt] = []
    parents = ctx.facts.parents
    scopes = dict(scope_steps)
    starts = [_end(c) for calls in scopes.values() for c in calls]
    if trainers:
        for call in nodes_of(ctx.tree, ast.Call):
            assert isinstance(call, ast.Call)
            if _calls_trainer(call, trainers):
                scopes.setdefault(scope_of(parents, call), [])
                starts.append(_end(call))
    local = {f.name: f for f in ctx.tree.body if isinstance(f, ast.FunctionDef)}
    view = ctx.facts.project
    shows = view.shows if view is not None else None
    # Each scope's calls, from the file's list of calls: the scopes asked
    # about are few, and walking each of them costs more than placing each call.
    first = min(starts, default=(0, 0))
    calls_of: dict[ast.AST, list[ast.Call]] = {}
    for call in nodes_of(ctx.tree, ast.Call):
        assert isinstance(call, ast.Call)
        if (call.lineno, call.col_offset) >= first or _calls_trainer(call, trainers):
            found_scope = scope_of(parents, call)
            if found_scope in scopes:
                calls_of.setdefault(found_scope, []).append(call)
    for scope, calls in scopes.items():
        if not isinstance(scope, (ast.Module, ast.FunctionDef)) or _in_lightning_class(ctx, scope):
            continue
        owner = parents.get(scope)
        methods = (
            {m.name: m for m in owner.body if isinstance(m, ast.FunctionDef)}
            if isinstance(owner, ast.ClassDef)
            else {}
        )
        steps: list[ast.AST] = [*calls]
        steps += [c for c in calls_of.get(scope, ()) if _calls_trainer(c, trainers)]
        if not steps:
            continue
        bound = (max if resolved is not None else min)(_end(s) for s in steps)
        step_loops = {id(innermost_loop(parents, s)) for s in steps}
        training = _Training(ctx, steps, trainers, _aliases(scope), resolved, scope)
        # From each call after the training, the statements around it that
        # may be after-training ones, outermost first: a statement with no
        # call in it runs no model, and walking each statement instead costs
        # its size times its depth.
        trained_at: dict[int, set[str]] = {}
        for call in calls_of.get(scope, ()):
            if (call.lineno, call.col_offset) < bound:
                continue
            chain: list[ast.stmt] = []
            for anc in ctx.facts.ancestors(call):
                if anc is scope:
                    break
                if isinstance(anc, _AFTER_TRAINING):
                    chain.append(anc)
            for stmt in reversed(chain):
                if id(stmt) in taken:
                    break
                trained = trained_at.get(id(stmt))
                if trained is None:
                    trained = trained_at[id(stmt)] = _trained_at(
                        ctx, stmt, scope, bound, step_loops, training, resolved
                    )
                if not trained:
                    continue
                shown = _outputs_inside(call, trained, local, evaluators, shows, methods)
                if not shown and not _runs_trained(call, trained, local, evaluators, methods):
                    continue
                helper = shown or not runs_any(call, trained)
                if helper and fed_noise(call, scope, methods, trained):
                    continue  # ``self.sample(self.fixed_z)``: a generator fed noise

                def is_source(
                    c: ast.Call,
                    trained: set[str] = trained,
                    methods: dict[str, ast.FunctionDef] = methods,
                ) -> bool:
                    return _runs_trained(c, trained, local, evaluators, methods)

                block = block_of(parents, stmt)
                rest: list[ast.stmt] = block[0][block[0].index(stmt) :] if block else [stmt]
                if shown or feeds_output(rest, is_source):
                    found.append(stmt)
                    taken.add(id(stmt))
                    break
    return found


def _calls_trainer(call: ast.Call, trainers: set[str]) -> bool:
    """A call of a training function of the file (``train(model, loader)``),
    or of a training method of one of its classes on an object
    (``clf.fit(X, y)``; not on ``self``: a method's own helpers are its
    steps' business)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in trainers
    return (
        isinstance(func, ast.Attribute)
        and "." + func.attr in trainers
        and func.attr not in MODULE_METHODS  # ``model.train()`` switches a mode
        and isinstance(func.value, ast.Name)
        and func.value.id not in ("self", "cls")
    )


def _trained_at(
    ctx: FileContext,
    stmt: ast.stmt,
    scope: ast.AST,
    bound: tuple[int, int],
    step_loops: set[int],
    training: _Training,
    resolved: FileContext | None,
) -> set[str]:
    """What the training before ``stmt`` trains, if ``stmt`` may be an
    *after-training* statement at all (empty otherwise)."""
    if (stmt.lineno, stmt.col_offset) < bound:
        return set()
    loop = innermost_loop(ctx.facts.parents, stmt)
    if resolved is not None and loop is not None and id(loop) in step_loops:
        return set()  # in the step loop itself: the periodic check's
    return training.before(stmt, scope)


def _end(node: ast.AST) -> tuple[int, int]:
    line: int = getattr(node, "end_lineno", None) or getattr(node, "lineno", 0) or 0
    return line, getattr(node, "end_col_offset", None) or 0


def _training_functions(ctx: FileContext, scope_steps: dict[ast.AST, list[ast.Call]]) -> set[str]:
    """Module-level functions that run a training step (``scope_steps``:
    each scope's steps), and, as ``.<name>``, methods of the file's classes
    that do (a Keras-like ``clf.fit(X, y)`` of an ``nn.Module``)."""
    top = {id(f) for f in ctx.tree.body if isinstance(f, ast.FunctionDef)}
    methods = {
        id(f)
        for c in ctx.tree.body
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef)
    }
    out: set[str] = set()
    for f, steps in scope_steps.items():
        if isinstance(f, ast.FunctionDef) and steps:
            if id(f) in top:
                out.add(f.name)
            elif id(f) in methods:
                out.add("." + f.name)
    return out


def _aliases(scope: ast.AST) -> dict[str, set[str]]:
    """Names bound to the same object in ``scope``: ``m = model.to(device)``."""
    same: dict[str, set[str]] = {}
    for n in walk_local(scope):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            left = dotted(n.targets[0])
            right = dotted(strip_self_returning(n.value))
            if left and right and left != right:
                group = same.get(left, {left}) | same.get(right, {right})
                for name in group:
                    same[name] = group
    return same


class _Training:
    """One scope's training, asked for each statement after it: which
    statements hold which steps (from each step's ancestors, once), and what
    each statement trains (once per statement)."""

    def __init__(
        self,
        ctx: FileContext,
        steps: list[ast.AST],
        trainers: set[str],
        aliases: dict[str, set[str]],
        resolved: FileContext | None,
        scope: ast.AST,
    ) -> None:
        self.ctx = ctx
        self.trainers = trainers
        self.aliases = aliases
        self.resolved = resolved
        self.held: dict[int, list[ast.AST]] = {}
        for step in steps:
            for holder in ctx.facts.ancestors(step):
                self.held.setdefault(id(holder), []).append(step)
        self._trains: dict[int, set[str]] = {}
        self._prefixes: dict[int, list[set[str] | None]] = {}
        self._under: dict[int, set[str]] | None = None
        self.scope = scope

    def _calls_under(self) -> dict[int, set[str]]:
        """What each statement holding a step trains (``_trained_by`` of
        the calls under it), from one pass over the scope's calls: walking
        each such statement instead costs its size times its depth."""
        imported = self.ctx.facts.imports.names
        under: dict[int, set[str]] = {}
        for node in walk_local(self.scope):
            if node.__class__ is not ast.Call:
                continue
            assert isinstance(node, ast.Call)
            made = _trained_by(node, self.trainers, imported)
            if not made:
                continue
            for holder in self.ctx.facts.ancestors(node):
                if holder is self.scope:
                    break
                if id(holder) in self.held:
                    under.setdefault(id(holder), set()).update(made)
        return under

    def before(self, stmt: ast.stmt, scope: ast.AST) -> set[str]:
        """What the code before ``stmt`` trains: the callables a statement
        with a training step calls, the arguments of a call of a training
        function; found in ``stmt``'s block, or in the block of an
        ``if``/``with``/``try`` around it. Empty when a model is switched to
        train mode after its training (the author's choice for what
        follows). The loose scan (``resolved`` None) keeps what every
        training statement calls."""
        parents = self.ctx.facts.parents
        cur: ast.AST = stmt
        while cur is not scope:
            found = block_of(parents, cur)
            if found is None:
                return set()
            trained = self._prefix(found[0])[found[1]]
            if trained is None:
                return set()
            if trained:
                return {a for name in trained for a in self.aliases.get(name, {name})}
            parent = parents.get(cur)
            if not isinstance(parent, _ONCE):
                return set()
            cur = parent
        return set()

    def _prefix(self, block: list[ast.stmt]) -> list[set[str] | None]:
        """For each index of ``block``, what its statements before it train
        (None: a mode call after the training leaves the mode to the
        author), read once per block."""
        found = self._prefixes.get(id(block))
        if found is not None:
            return found
        out: list[set[str] | None] = []
        trained: set[str] | None = set()
        for sibling in block:
            out.append(trained)
            if trained is None:
                continue
            if id(sibling) in self.held:
                trained = (
                    (trained | self.trains(sibling))
                    if self.resolved is None
                    else self.trains(sibling)
                )
            elif self.resolved is not None and trained and not _evaluates(sibling, trained):
                trained = None
        self._prefixes[id(block)] = out
        return out

    def trains(self, stmt: ast.stmt) -> set[str]:
        found = self._trains.get(id(stmt))
        if found is not None:
            return found
        if self._under is None:
            self._under = self._calls_under()
        found = self._under.get(id(stmt), set())
        modes = self.resolved.facts.modes if self.resolved is not None else None
        if modes is not None:
            # What an optimizer step of it updates: not a frozen generator
            # a latent code is optimised through.
            updates = [
                s
                for s in self.held[id(stmt)]
                if isinstance(s, ast.Call) and modes.step_kind(s) == "optimizer_step"
            ]
            if updates:
                found = {
                    t
                    for t in found
                    if any(modes.step_may_update(s, t) is not False for s in updates)
                }
        self._trains[id(stmt)] = found
        return found


def _evaluates(stmt: ast.stmt, trained: set[str]) -> bool:
    """Whether ``stmt``, between the training and an *after-training*
    statement, leaves the mode of what was trained known: it makes no mode
    call, or it is ``<model>.eval()`` of a trained model. A ``train()``
    there is the author's choice for what follows; a mode call the flow may
    not read (``for m in models: m.eval()``) leaves the mode to a guess."""
    if isinstance(stmt, ast.Expr):
        switch = module_mode_switch(stmt.value)
        if switch is not None:
            return switch.mode is Mode.EVAL and switch.target in trained
    return not any(
        isinstance(n, ast.Call) and called_name(n) in ("eval", "train") for n in walk_local(stmt)
    )


def _trained_by(call: ast.Call, trainers: set[str], imported: dict[str, str]) -> set[str]:
    """What ``call`` may train, loosely (the judge asks which are models):
    what it calls, but builtins and imported names (``print``,
    ``torch.cat``), and what it hands to a training function of the file."""
    if isinstance(call.func, ast.Name) and call.func.id in trainers:
        return {t for a in call.args if (t := dotted(a))}
    text = dotted(call.func)
    if text is None:
        return set()
    root = text.split(".")[0]
    if root in imported or root in BUILTINS:
        return set()
    if isinstance(call.func, ast.Attribute) and "." + call.func.attr in trainers:
        # ``clf.fit(X, y)``: a method of the file's classes that trains;
        # ``clf`` (an ``nn.Module`` training itself) and what it is handed.
        owner = dotted(call.func.value)
        handed = {t for a in call.args if (t := dotted(a))}
        return {text, *handed, *([owner] if owner is not None else [])}
    return {text}


def _runs_trained(
    call: ast.Call,
    trained: set[str],
    local: dict[str, ast.FunctionDef],
    evaluators: set[ast.stmt],
    methods: dict[str, ast.FunctionDef] | None = None,
) -> bool:
    """``call`` may run one of ``trained``: calls it or a method of it (not
    one that runs no forward), runs it through a runner, hands it to a
    function of the file that is not an evaluation region itself, or calls
    a method of the caller's class that runs it and trains nothing
    (``recon = self.reconstruct(images)``)."""
    if runs_any(call, trained):
        return True
    name = called_name(call)
    if methods and on_self(call) and name in methods:
        method = methods[name]
        return method not in evaluators and method_runs(method, methods, local, call, trained)
    if isinstance(call.func, ast.Name) and call.func.id in local:
        if local[call.func.id] in evaluators:
            return False
        return any(dotted(a) in trained for a in (*call.args, *(k.value for k in call.keywords)))
    return False


def _outputs_inside(
    call: ast.Call,
    trained: set[str],
    local: dict[str, ast.FunctionDef],
    evaluators: set[ast.stmt],
    view: _Shows,
    methods: dict[str, ast.FunctionDef],
) -> bool:
    """``call`` hands a trained model to a function of the file, or of
    another file of the run, that shows what it computes with it
    (``shows``: prints, logs, writes, saves or plots it, and does nothing a
    ``no_grad`` could break), and that is no evaluation region itself (it
    is judged there)."""
    name = called_name(call)
    if methods and on_self(call) and name in methods:
        method = methods[name]
        return method not in evaluators and call_shows(method, local, call, trained, methods)
    if isinstance(call.func, ast.Name) and call.func.id in local:
        func = local[call.func.id]
        return func not in evaluators and call_shows(func, local, call, trained)
    found = view(call.func) if view is not None else None
    if found is None:
        return False
    return bool(receiving(found.params, found.kwonly, call, trained) & found.shown)


def _after_every_step(
    parents: dict[ast.AST, ast.AST],
    stmt: ast.stmt,
    switches: list[ast.stmt],
    steps: list[ast.Call],
    loops: set[int],
) -> bool:
    """Every step ends before the ``eval()`` of each model ``stmt`` runs
    (the author switches to eval to evaluate what was just trained; an
    ``eval()`` before the training loop sets up a frozen model, stylegan2's
    projector optimising a latent), ``stmt`` is in no loop that runs a step
    directly (a test every N steps inside the step loop is the periodic
    check's), and no loop around it is already a region. In a loop, what it
    computes could reach the next iteration's step only through a name: the
    rule's value flow asks that."""
    first = min((s.lineno, s.col_offset) for s in switches)
    if any(((s.end_lineno or s.lineno), (s.end_col_offset or 0)) > first for s in steps):
        return False
    step_loops = {id(innermost_loop(parents, s)) for s in steps}
    loop = innermost_loop(parents, stmt)
    if loop is not None and id(loop) in step_loops:
        return False
    while loop is not None:
        if id(loop) in loops:
            return False
        loop = innermost_loop(parents, loop)
    return True


def is_below_node(parents: dict[ast.AST, ast.AST], node: ast.AST, top: ast.AST) -> bool:
    cur: ast.AST | None = node
    while cur is not None:
        if cur is top:
            return True
        cur = parents.get(cur)
    return False


# Nodes that cannot hold a statement (a lambda's body is an expression).
_NO_STATEMENTS = (ast.expr, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _visit(ctx: FileContext, node: ast.AST, out: list[EvalRegion], inside: bool) -> None:
    for child in child_nodes(node):
        if isinstance(child, _NO_STATEMENTS):
            continue  # no function definition or loop statement can be inside
        child_inside = inside
        if isinstance(child, FUNCTIONS):
            child_inside = False  # a nested function runs on its own
            if _is_test(ctx, child):
                continue  # a test asserts what the code does as written
            if function_is_eval(ctx, child):
                out.append(EvalRegion(child, "name"))
            elif flag_parameter(ctx, child) is not None:
                out.append(EvalRegion(child, "flag"))
            elif evaluates_itself(ctx, child):
                out.append(EvalRegion(child, "self-eval"))
            elif runs_held_eval_model(ctx, child):
                out.append(EvalRegion(child, "eval-object"))
        elif isinstance(child, LOOPS) and not inside and not _in_lightning_class(ctx, child):
            signal = _loop_signal(ctx, child)
            if signal is not None:
                out.append(EvalRegion(child, signal))
                child_inside = True
        _visit(ctx, child, out, child_inside)


def _loop_signal(ctx: FileContext, loop: ast.stmt) -> Signal | None:
    if isinstance(loop, (ast.For, ast.AsyncFor)) and data_is_eval(loop.iter):
        return "data"
    if grad_off_evaluation(ctx, loop):
        return "grad-off"
    if isinstance(loop, (ast.For, ast.AsyncFor)) and phase_names(loop) is not None:
        if _phases_grad_off(ctx, loop):
            return None  # its inner loops are judged: ``for split in ("train", "val"):``
        return "phase"
    found = block_of(ctx.facts.parents, loop)
    if found is None:
        return None
    block, index = found
    # after-eval: a preceding sibling ``m.eval()`` with no ``m.train()`` after it.
    evaluated: set[str] = set()
    for sibling in block[:index]:
        if isinstance(sibling, ast.Expr):
            switch = module_mode_switch(sibling.value)
            if switch is not None and switch.target is not None:
                if switch.mode is Mode.EVAL:
                    evaluated.add(switch.target)
                else:
                    evaluated.discard(switch.target)
    if evaluated and (_calls_any(loop, evaluated) or _hands_to_helper(ctx, loop, evaluated)):
        return "after-eval"
    return None


def _hands_to_helper(ctx: FileContext, loop: ast.stmt, models: set[str]) -> bool:
    """A call in ``loop`` of a function of the file that is given one of
    ``models`` (SR-GNN's ``forward(model, i, test_data)``): the judge reads
    what the helper runs (``ModelIndex.helper_models``)."""
    local = {
        f.name for f in ctx.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    for n in ast.walk(loop):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in local:
            args = [*n.args, *(k.value for k in n.keywords)]
            if any(dotted(a) in models for a in args):
                return True
    return False


def _phases_grad_off(ctx: FileContext, loop: ast.For | ast.AsyncFor) -> bool:
    """A loop over split names (``for split in ("train", "val"):``) that
    trains in no phase, around a grad-off evaluation loop: it measures each
    split (nanoGPT's ``estimate_loss``), and the inner loop is the region."""
    return any(
        isinstance(n, ast.For) and n is not loop and grad_off_evaluation(ctx, n)
        for n in walk_local(loop)
    )


# Names of functions whose forwards under ``no_grad`` may run in train mode
# on purpose: Monte Carlo dropout, BatchNorm statistics, data-dependent
# initialisation, sampling, RL rollouts.
_TRAIN_MODE_WORDS = frozenset(
    {"mc", "dropout", "bayes", "bayesian", "uncertainty", "stochastic", "sample", "samples",
     "sampling", "bn", "batchnorm", "norm", "stats", "statistics", "calibrate", "recalibrate",
     "precise", "init", "initialize", "initialise", "warmup", "rollout", "rollouts", "act",
     "actor", "explore", "collect", "ema", "swa", "teacher", "pseudo", "augment", "adapt"}
)  # fmt: skip


def grad_off_evaluation(ctx: FileContext, loop: ast.stmt) -> bool:
    """The *grad-off* signal: a loop over data (``for x, y in data:``, not
    ``range``) of a function, every statement of whose body runs with grad
    off (the loop under ``with torch.no_grad():`` or a ``no_grad`` function,
    or its body one such ``with``), where the function makes no mode call and
    no training call, and some value the loop computes is kept (accumulated,
    appended, printed, returned): the author turned grad off because nothing
    here learns, so it evaluates, whatever the function and the data are
    called (``getloss(model, head, data)``). Only in a file that trains (one
    that trains nothing is inference code, RNF006's). Not a module's own
    method, a test, a Lightning hook, nor a function (or a method of a
    class) named for what train mode is kept on purpose for (``mc_predict``,
    ``update_bn``, ``init_actnorm``, ``sample``, ``rollout``,
    ``MCDropoutModel``), nor one that calls a helper named for setting modes
    (``_enable_only_dropout_layers(model)``), nor one that repeats forwards on
    the same data (a ``for _ in range(n):`` anywhere in it: Monte Carlo)."""
    if not isinstance(loop, ast.For):
        return False
    if not _iterates_data(loop.iter) and not (_repeats(loop) and _draws_batches(loop)):
        return False
    parents = ctx.facts.parents
    func = scope_of(parents, loop)
    if not isinstance(func, ast.FunctionDef):
        return False
    if any(w in _TRAIN_MODE_WORDS or w in _TRAINING_WORDS for w in words(func.name)):
        return False
    owner = parents.get(func)
    if isinstance(owner, ast.ClassDef) and set(words(owner.name)) & _TRAIN_MODE_WORDS:
        return False  # ``GenericMCDropoutModel.__call__``
    if not _grad_off_body(ctx, loop):
        return False
    if _module_method(ctx, func) or _in_lightning_class(ctx, func):
        return False
    for n in walk_local(func):
        if isinstance(n, ast.Call):
            if module_mode_switch(n) is not None or _trains_by_name(n):
                return False
            if set(words(called_name(n) or "")) & _MODE_HELPER_WORDS:
                return False  # ``_enable_only_dropout_layers(model, p)``: a mode of its own
        if isinstance(n, ast.For) and n is not loop and _repeats(n) and not _draws_batches(n):
            return False  # forwards repeated on the same data: Monte Carlo, timing
    if any(True for _ in training_steps(ctx, func)):
        return False
    if not ctx.facts.modes.training_steps:
        return False  # a file that trains nothing: inference code, RNF006's
    return _keeps_values(loop)


# Words of a helper's name that say it sets modes (of layers) itself.
_MODE_HELPER_WORDS = frozenset(
    {"dropout", "dropouts", "mc", "enable", "disable", "train", "training", "eval", "mode",
     "bn", "batchnorm", "norm", "freeze", "unfreeze", "stochastic"}
)  # fmt: skip


def _repeats(loop: ast.For) -> bool:
    """``for _ in range(n):`` (or over ``range`` through ``tqdm``/``trange``)."""
    it = loop.iter
    while isinstance(it, ast.Call) and (dotted(it.func) or "").rsplit(".", 1)[-1] in (
        "tqdm",
        "enumerate",
    ):
        if not it.args:
            return False
        it = it.args[0]
    return isinstance(it, ast.Call) and (dotted(it.func) or "").rsplit(".", 1)[-1] in (
        "range",
        "trange",
    )


# Words of a call that draws a fresh batch (``get_batch(split)``, ``next(it)``).
_BATCH_DRAW_WORDS = frozenset({"batch", "batches", "next"})


def _draws_batches(loop: ast.For) -> bool:
    """A ``for k in range(n):`` loop whose body draws a fresh batch at each
    turn, a statement of its own body binding names from a call named for
    it (``X, Y = get_batch(split)``, ``x, y = next(it)``): a loop over data
    counted in steps (nanoGPT's ``estimate_loss``), not forwards repeated on
    the same input (Monte Carlo draws nothing)."""
    for stmt in loop.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and set(words(called_name(stmt.value) or "")) & _BATCH_DRAW_WORDS
        ):
            return True
    return False


def _iterates_data(iterable: ast.expr) -> bool:
    """A loop over data: a name, an attribute or a subscript, possibly in
    ``enumerate``/``tqdm``/``zip``; not ``range`` or a literal."""
    while isinstance(iterable, ast.Call) and iterable.args:
        name = dotted(iterable.func) or ""
        if name.rsplit(".", 1)[-1] not in ("enumerate", "tqdm", "zip", "iter"):
            return False  # ``range(n)``, ``trange(n)``, any other call
        iterable = iterable.args[0]
    return isinstance(iterable, (ast.Name, ast.Attribute, ast.Subscript))


def _grad_off_body(ctx: FileContext, loop: ast.For) -> bool:
    """Grad is off for the whole loop: around it, or as its body's one ``with``."""
    if GradContexts(ctx).in_function(loop) == "off":
        return True
    body = loop.body
    return (
        len(body) == 1
        and isinstance(body[0], ast.With)
        and any(classify_context(ctx, i.context_expr) == "off" for i in body[0].items)
    )


def _keeps_values(loop: ast.For) -> bool:
    """A value computed by a call in the loop is kept: added up, appended,
    printed or written (a forward run only for its effect on BatchNorm
    statistics keeps nothing)."""

    def is_source(call: ast.Call) -> bool:
        return not isinstance(call.func, ast.Name) or call.func.id not in BUILTINS

    if feeds_output(loop.body, is_source):
        return True
    tainted: set[str] = set()

    def reads(expr: ast.AST) -> bool:
        return any(
            (isinstance(n, ast.Call) and is_source(n))
            or (isinstance(n, ast.Name) and n.id in tainted)
            for n in ast.walk(expr)
        )

    nodes = list(walk_local(loop))
    for _ in range(2):  # a value carried to the next statement of the loop body
        for n in nodes:
            if isinstance(n, ast.Assign) and reads(n.value):
                if any(isinstance(t, ast.Subscript) for t in n.targets):
                    return True  # ``losses[k] = loss.item()``: stored in a table
                tainted.update(
                    t.id for tgt in n.targets for t in ast.walk(tgt) if isinstance(t, ast.Name)
                )
            elif isinstance(n, ast.AugAssign) and reads(n.value):
                return True
            elif (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("append", "extend")
                and any(reads(a) for a in n.args)
            ):
                return True
    return False


def evaluates_itself(ctx: FileContext, func: ast.AST) -> bool:
    """The *self-eval* signal: among the function's own statements (not
    under an ``if``, a ``try`` or a loop) a ``<model>.eval()``, then a
    statement other than a loop that calls that model, with no ``train()``
    of it between; no training step anywhere in the function; not a
    training function by its name (``def train(...): model.eval()`` freezes
    BatchNorm on purpose), not a mode override, not in a Lightning class."""
    if not isinstance(func, ast.FunctionDef) or func.name in ("eval", "train"):
        return False
    if any(w in _TRAINING_WORDS for w in words(func.name)):
        return False
    evaluated: set[str] = set()
    before: list[ast.stmt] = []  # the statements before the first eval()
    found = False
    for stmt in func.body:
        if isinstance(stmt, ast.Expr):
            switch = module_mode_switch(stmt.value)
            if switch is not None and switch.target is not None:
                if switch.mode is Mode.EVAL:
                    if not evaluated and not _only_prepares(ctx, before, switch.target):
                        return False  # the model was used before: not what the function is for
                    evaluated.add(switch.target)
                else:
                    evaluated.discard(switch.target)
                continue
        if not evaluated:
            before.append(stmt)
        elif not isinstance(stmt, LOOPS) and _calls_any(stmt, evaluated):
            found = True
            break
    if not found or _in_lightning_class(ctx, func):
        return False
    if all(t.split(".")[0] == "self" for t in evaluated) and _module_method(ctx, func):
        # A module's own API (``generate``, ``sample``, ``forward`` of a
        # vocoder) switching itself: its caller owns the grad mode, and
        # typically calls it under ``no_grad``.
        return False
    if any(isinstance(n, ast.Call) and _trains_by_name(n) for n in walk_local(func)):
        return False  # ``svi.step(x)``, ``trainer.fit()``: training a library runs
    return not any(True for _ in training_steps(ctx, func))


def runs_held_eval_model(ctx: FileContext, func: ast.AST) -> bool:
    """The *eval-object* signal (see the module's docstring): a method of a
    class that holds a model in eval mode for good, which runs that model
    and switches no mode itself."""
    if not isinstance(func, ast.FunctionDef) or func.name in ("eval", "train", "__init__"):
        return False
    if func.name.startswith("__") and func.name != "__call__":
        return False
    if any(w in _TRAINING_WORDS for w in words(func.name)):
        return False
    cls = ctx.facts.parents.get(func)
    if not isinstance(cls, ast.ClassDef):
        return False
    held = _held_in_eval(ctx, cls)
    if not held or not any(_calls_any(stmt, set(held)) for stmt in func.body):
        return False
    return _hooks_keep_detached(ctx, func)


# Per class: the ``self.<model>`` its constructor holds in eval mode for good.
_HELD: weakref.WeakKeyDictionary[ast.ClassDef, frozenset[str]] = weakref.WeakKeyDictionary()


def _held_in_eval(ctx: FileContext, cls: ast.ClassDef) -> frozenset[str]:
    found = _HELD.get(cls)
    if found is None:
        found = _HELD[cls] = frozenset(_find_held_in_eval(ctx, cls))
    return found


def _find_held_in_eval(ctx: FileContext, cls: ast.ClassDef) -> set[str]:
    """``self.<model>`` switched to eval among ``__init__``'s own statements
    (not under an ``if``, a loop or a ``try``): ``self.model.eval()``,
    ``self.model = net.to(device).eval()``. None when the class is a module
    (a frozen part of a model: its caller owns the grad mode), a Lightning
    or test class, or when anything in it switches a model to train mode,
    trains, or takes gradients."""
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is None or cls.name in ctx.facts.modes.classes.modules:
        return set()
    if any(isinstance(s, FUNCTIONS) and s.name == "forward" for s in cls.body):
        return set()
    if cls.name.startswith("Test") or _in_lightning_class(ctx, init):
        return set()
    held: set[str] = set()
    for stmt in init.body:
        if isinstance(stmt, ast.Expr):
            switch = module_mode_switch(stmt.value)
            if switch is not None and switch.target is not None and switch.mode is Mode.EVAL:
                if switch.target.startswith("self."):
                    held.add(switch.target)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = dotted(stmt.targets[0])
            if target and target.startswith("self.") and ends_in_eval(stmt.value):
                held.add(target)
    if not held:
        return held
    for n in ast.walk(cls):
        if isinstance(n, ast.Call):
            name = called_name(n)
            if _trains_by_name(n) or name in _GRADIENT_CALLS:
                return set()
            switch = module_mode_switch(n, lenient=True)
            if switch is not None and switch.mode is not Mode.EVAL:
                return set()  # ``self.model.train()`` somewhere: not held for good
        elif isinstance(n, ast.Attribute) and n.attr in ("requires_grad", "grad"):
            return set()
    return held


# Gradient code in a class: it wants the graph its model builds.
_GRADIENT_CALLS = frozenset({"grad", "enable_grad", "set_grad_enabled", "requires_grad_"})


def ends_in_eval(value: ast.expr) -> bool:
    """``net.eval()``, ``net.to(device).eval()``, ``net.eval().cuda()``."""
    cur: ast.expr = value
    while isinstance(cur, ast.Call) and isinstance(cur.func, ast.Attribute):
        if cur.func.attr == "eval" and not cur.args and not cur.keywords:
            return True
        cur = cur.func.value
    return False


_HOOKS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "register_backward_hook", "register_hook"}
)  # fmt: skip


def _hooks_keep_detached(ctx: FileContext, func: ast.FunctionDef) -> bool:
    """Every hook ``func`` registers is a function it defines whose inputs
    and outputs are read only as ``x.data`` or ``x.detach()`` (img2vec's
    ``my_embedding.copy_(o.data)``): an activation kept with its graph could
    feed a loss later, which ``no_grad`` would break."""
    local = {s.name: s for s in ast.walk(func) if isinstance(s, ast.FunctionDef)}
    for n in walk_local(func):
        if not (isinstance(n, ast.Call) and called_name(n) in _HOOKS):
            continue
        hook = local.get(n.args[0].id) if n.args and isinstance(n.args[0], ast.Name) else None
        if hook is None or not _reads_detached(ctx.facts.parents, hook):
            return False
    return True


def _reads_detached(parents: dict[ast.AST, ast.AST], hook: ast.FunctionDef) -> bool:
    params = {a.arg for a in hook.args.args[1:]}  # the module itself is not an activation
    for n in ast.walk(hook):
        if isinstance(n, ast.Name) and n.id in params:
            up = parents.get(n)
            if isinstance(up, ast.Attribute) and up.attr == "data":
                continue
            grand = parents.get(up) if up is not None else None
            if isinstance(up, ast.Attribute) and up.attr == "detach":
                if isinstance(grand, ast.Call):
                    continue
            return False
    return True


# Calls that train, whoever the receiver: a self-eval function making one is
# no evaluation, even where the step is a library's (Pyro's ``svi.step``).
_TRAINING_CALLS = frozenset(
    {"step", "backward", "zero_grad", "fit", "train_step", "training_step", "update",
     "optimize", "learn"}
)  # fmt: skip


def _trains_by_name(call: ast.Call) -> bool:
    """A call named like training (``_TRAINING_CALLS``), whoever the receiver,
    except an ``update`` that is a dict's or a meter's: ``matplotlib.rcParams.
    update({...})``, ``losses.update(loss.item(), n)``, ``pbar.update(1)``."""
    name = called_name(call)
    if name not in _TRAINING_CALLS:
        return False
    if name != "update":
        return True
    if len(call.args) == 1 and isinstance(call.args[0], (ast.Dict, ast.DictComp)):
        return False
    owner = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    last = owner.rsplit(".", 1)[-1].lower() if owner else ""
    return not any(w in last for w in _TALLIES)


# Receivers whose ``update`` tallies or shows something (meters, progress
# bars, settings, metrics), by the words of their names.
_TALLIES = ("meter", "bar", "tqdm", "avg", "average", "rcparams", "metric", "stat", "loss",
            "acc", "config", "params", "hist", "log", "dict", "counter")  # fmt: skip


# What may happen to a model before its eval() in a self-eval function.
_PREPARING = frozenset(
    {"load_state_dict", "to", "cuda", "cpu", "float", "half", "double", "requires_grad_"}
)  # fmt: skip


def _only_prepares(ctx: FileContext, stmts: list[ast.stmt], model: str) -> bool:
    """Before the ``eval()``: no loop, and the model only built, loaded or
    moved (``model = Net()``, ``model.load_state_dict(...)``, ``model.to(d)``),
    never run or handed to other code (``SVI(scanvi.model, ...)``)."""
    parents = ctx.facts.parents
    for stmt in stmts:
        for n in walk_local(stmt):
            if isinstance(n, (*LOOPS, ast.comprehension)):
                return False
            if not isinstance(n, (ast.Name, ast.Attribute)) or not isinstance(n.ctx, ast.Load):
                continue
            if dotted(n) != model:
                continue
            parent = parents.get(n)
            grand = parents.get(parent) if parent is not None else None
            if (
                isinstance(parent, ast.Attribute)
                and parent.attr in _PREPARING
                and isinstance(grand, ast.Call)
                and grand.func is parent
            ):
                continue
            return False
    return True


# ``flag_parameter``'s answers per file's facts, per function: RNF003 asks
# for every function, in each pass, and again for each flag region.
_FLAGS: weakref.WeakKeyDictionary[FileFacts, dict[ast.AST, FlagParam | None]] = (
    weakref.WeakKeyDictionary()
)


def flag_parameter(ctx: FileContext, func: ast.AST) -> FlagParam | None:
    """The flag of a function shared by training and evaluation (the *flag*
    signal, ``flagparams``); never in a Lightning class."""
    if not isinstance(func, ast.FunctionDef) or _in_lightning_class(ctx, func):
        return None
    memo = _FLAGS.get(ctx.facts)
    if memo is None:
        memo = _FLAGS[ctx.facts] = {}
    if func in memo:
        return memo[func]
    found = _flag_parameter(ctx, func) or mode_flag(ctx, func)
    memo[func] = found
    return found


def phase_names(loop: ast.For | ast.AsyncFor) -> tuple[str, ast.Constant] | None:
    """``for phase in ("train", "val"):`` -> ("phase", the "train" constant): a
    loop over string phases, one of them training and one evaluation."""
    if not isinstance(loop.target, ast.Name) or not isinstance(loop.iter, (ast.List, ast.Tuple)):
        return None
    train: ast.Constant | None = None
    evaluation = False
    for elt in loop.iter.elts:
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
            return None
        ws = words(elt.value)
        if any(w in _TRAINING_WORDS for w in ws):
            train = elt if train is None else train
        elif any(_eval_word(w) for w in ws):
            evaluation = True
    if train is None or not evaluation:
        return None
    return loop.target.id, train


def _calls_any(loop: ast.stmt, models: set[str]) -> bool:
    """A call of (a method or part of) one of ``models``, or a call that
    runs one (``nn.parallel.data_parallel(netG, inputs, gpus)``, a runner of
    the library table, by its last name: the judge resolves the import)."""
    for n in ast.walk(loop):
        if isinstance(n, ast.Call):
            text = dotted(n.func)
            if text and text.rsplit(".", 1)[-1] in library.RUNNER_NAMES and n.args:
                text = dotted(n.args[0])
            if text and any(is_below(text, m) for m in models):
                if module_mode_switch(n) is None:
                    return True
    return False


# Calls that put trained weights into a model (or read them from disk).
_WEIGHT_LOADERS = frozenset(
    {"load_state_dict", "load", "from_pretrained", "load_checkpoint", "load_weights",
     "load_model", "restore"}
)  # fmt: skip


def is_smoke_test(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    models: Iterable[str],
    builds_module: Callable[[ast.expr], bool],
) -> bool:
    """A shape check of a freshly built, untrained model (``net = VGG();
    print(net(torch.randn(2, 3, 32, 32)).size())``): every model it calls is
    built in it, no weights are loaded, and no loop runs over data. Its
    numbers mean nothing, so it is not evaluation. A ``predict`` that builds
    a model and loads weights is."""
    body = list(func.body)
    built: set[str] = set()
    for n in walk_all_local(body):
        if isinstance(n, (*LOOPS, ast.comprehension)):
            return False
        if isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else dotted(n.func)
            if name in _WEIGHT_LOADERS:
                return False
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            if builds_module(n.value):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                built.update(t for t in map(dotted, targets) if t)
    models = list(models)
    return bool(models) and all(m.split(".")[0] in built or m in built for m in models)


# Tensors made up on the spot: a forward on them probes shapes, it measures nothing.
_FACTORIES = frozenset(
    {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "randn_like",
     "rand_like", "zeros_like", "ones_like", "empty_like", "full_like"}
)  # fmt: skip
_TENSOR_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "type", "view", "reshape", "unsqueeze",
     "expand", "contiguous", "requires_grad_"}
)  # fmt: skip


def probes_shapes(
    ctx: FileContext,
    scope: ast.AST,
    sites: Iterable[ast.Call],
    qualname: Callable[[ast.expr], str | None],
) -> bool:
    """Every forward in ``sites`` runs on tensors the code makes up itself
    (``torch.randn(10, c, 200, d)``, ``torch.zeros(1, 3, 640, 640)``): a
    shape probe or a dry run, whose numbers mean nothing. Not evaluation."""
    # name -> (where the binding takes effect, the value; None: not read)
    bindings: dict[str, list[tuple[tuple[int, int], ast.expr | None]]] = {}
    for n in walk_local(scope):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            parent = ctx.facts.parents.get(n)
            if isinstance(parent, ast.Assign) and parent.targets == [n]:
                # Bound once the whole statement has run: ``x = conv(x)`` reads the old x.
                done = (parent.end_lineno or parent.lineno, parent.end_col_offset or 0)
                bindings.setdefault(n.id, []).append((done, parent.value))
            else:
                bindings.setdefault(n.id, []).append(((n.lineno, n.col_offset), None))

    made_up = _MadeUp(bindings, ctx.facts.parents, qualname)

    found = False
    for site in sites:
        args = [*site.args, *(k.value for k in site.keywords)]
        if not args or not all(made_up.tensor(a) for a in args):
            return False
        found = True
    return found


class _MadeUp:
    """Whether an expression is a tensor the code makes up (``probes_shapes``).
    A class, not a recursive closure: a closure that calls itself is a
    reference cycle, which would keep the file's analyses alive until the
    cyclic collector runs (``tests/analysis/test_release.py``)."""

    def __init__(
        self,
        bindings: dict[str, list[tuple[tuple[int, int], ast.expr | None]]],
        parents: dict[ast.AST, ast.AST],
        qualname: Callable[[ast.expr], str | None],
    ) -> None:
        self.bindings = bindings
        self.parents = parents
        self.qualname = qualname

    def tensor(self, expr: ast.expr, depth: int = 0) -> bool:
        """The last binding written before ``expr`` is a made-up tensor
        (straight-line reading: a shape probe has no loops to speak of)."""
        if depth > 5:
            return False
        if isinstance(expr, ast.Subscript):
            return self.tensor(expr.value, depth + 1)
        if isinstance(expr, ast.Name):
            here = (expr.lineno, expr.col_offset)
            found = self.bindings.get(expr.id, [])
            before = [b for b in found if b[0] <= here]
            if not before:
                return False
            loop = innermost_loop(self.parents, expr)
            if loop is not None and any(
                here < b[0] <= (loop.end_lineno or loop.lineno, loop.end_col_offset or 0)
                for b in found
            ):
                return False  # rebound later in its loop: the next step reads that value
            value = max(before, key=lambda b: b[0])[1]
            return value is not None and self.tensor(value, depth + 1)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _TENSOR_METHODS:
            return self.tensor(func.value, depth + 1)
        qual = self.qualname(func) or ""
        return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _FACTORIES


def in_training_iteration(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` runs in the same iteration as a training step: its
    innermost loop (or, outside loops, its function) runs a ``backward`` or
    ``optimizer.step()`` itself, not only in a nested loop. Sampling every N
    steps inside the batch loop is; validation after the epoch's batch loop
    is not."""
    parents = ctx.facts.parents
    loop = innermost_loop(parents, node)
    container: ast.AST = loop if loop is not None else scope_of(parents, node)
    # Once per container (RNF003 asks for every ``if`` and region in a loop).
    memo = ctx.facts.step_loops
    loops = memo.get(container)
    if loops is None:
        loops = memo[container] = {
            innermost_loop(parents, s) for s in training_steps(ctx, container)
        }
    return loop in loops
