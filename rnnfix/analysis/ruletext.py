"""Cheap file-level pre-conditions of the rules, read from the text and the syntax.

Each function here is a *necessary* condition of some part of a rule's
detection, derived from the code that detects it (never from examples): a
file it rules out cannot have that finding, so the rule skips its analyses
(the mode flow, the project summaries) there. Text comes first (a regular
expression over the source), then one pass over the already parsed tree,
project lookups last (in the rules).

Python lets whitespace, ``\\``-continued lines and (inside brackets) comments
and line breaks sit between the parts of a dotted call (``model . module
.train()``); the patterns below allow all of them (``_GAP``), and brackets
where an expression may be parenthesised. Identifiers are taken as spelled
in ASCII (the tokenizer's NFKC normalisation of others is not modelled, as in
every other text test of rnnfix).

Keep them in step with the detections: ``tests/analysis/test_ruletext.py``
checks that every fixture with a finding of a rule passes its pre-condition.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import nodes_of, tree_parents
from rnnfix.analysis.torch.api import mode_switch
from rnnfix.analysis.torch.mode import Mode

# Between two tokens of one logical line: spaces, line continuations and,
# inside brackets, comments and line breaks.
_GAP = r"(?:[ \t\f\r\n\\]|#[^\n]*(?![^\n]))*"
# The same, where a closing (``_CLOSE``) or an opening (``_OPEN``) bracket of
# a parenthesised expression may also sit.
_CLOSE = r"(?:[ \t\f\r\n\\)]|#[^\n]*(?![^\n]))*"
_OPEN = r"(?:[ \t\f\r\n\\(]|#[^\n]*(?![^\n]))*"

# RNF002: ``<owner>.module.train(...)`` / ``.eval(...)``: a call whose
# receiver is the attribute ``module`` (``(w.module).train()`` too).
_MODULE_MODE_CALL = re.compile(rf"\.{_GAP}module{_CLOSE}\.{_GAP}(?:train|eval)\b")

# ``global_cudnn_off``: an assignment statement ``<...>.enabled = <zero>``
# whose value is the constant ``False`` or a numeric zero (``0``, ``0.0``:
# ``value in (False, 0)``), the target maybe parenthesised.
_ENABLED_OFF = re.compile(rf"\.{_GAP}enabled{_CLOSE}=(?!=){_OPEN}(?:False\b|\.?\d)")
# ... or a plain name bound to ``torch.backends.cudnn.enabled`` by an import
# (``from torch.backends.cudnn import enabled as e``; ``import
# torch.backends.cudnn.enabled as e``): then any name may be the target.
_ENABLED_IMPORTED = re.compile(rf"\bcudnn{_GAP}(?:import\b|\.{_GAP}enabled{_GAP}as\b)")


def may_call_module_mode(source: str) -> bool:
    """RNF002: a mode call on an attribute named ``module`` may be written."""
    return ".module" in source and _MODULE_MODE_CALL.search(source) is not None


_MODE_SWITCH = re.compile(rf"\.{_GAP}(?:eval|train)\b")


def may_switch_mode(source: str) -> bool:
    """A mode call (``CallFacts.eval_switch``/``train_switch``) may be written:
    ``.eval``/``.train`` as an attribute."""
    return _MODE_SWITCH.search(source) is not None


def may_switch_cudnn_off(source: str) -> bool:
    """``global_cudnn_off`` can find something: the file assigns a zero to an
    ``enabled`` attribute (``torch.backends.cudnn.enabled`` resolves only
    through text that names ``cudnn``), or binds ``enabled`` from cuDNN by an
    import."""
    if "cudnn" not in source or "enabled" not in source:
        return False
    return _ENABLED_OFF.search(source) is not None or _ENABLED_IMPORTED.search(source) is not None


# A mode call in any file of the run: ``.eval`` / ``.train`` as an attribute
# (``m.train(False)``, ``Net().eval()``); what a summary that sets eval needs.
EVAL_REACH = re.compile(rb"\.(?:[ \t\f\r\n\\]|#[^\n]*(?![^\n]))*(?:eval|train)\b")
# What a summary with an optimizer step needs in its file: a ``.step`` call
# (or a strategy's ``.optimizer_step``),
# or an optimizer built from ``parameters()`` / by ``torch.optim`` that is
# called (``train_op()``).
STEP_REACH = re.compile(
    rb"\.(?:[ \t\f\r\n\\]|#[^\n]*(?![^\n]))*(?:optimizer_)?step\b|parameters\b|\boptim\b"
)


@dataclass(frozen=True)
class CallFacts:
    """What the calls of a file can be, from one pass over its tree."""

    eval_switch: bool  # ``X.eval()``, ``X.train(False)``, ``X.train(mode=False)``
    train_switch: bool  # ``X.train()``, ``X.train(True)``
    step_call: bool  # ``X.step(...)``: may be an optimizer step
    backward_call: bool  # ``X.backward(...)`` or ``torch.autograd.backward(...)``
    # A call without arguments of a name whose last part is also the last part
    # of a target assigned something built from ``parameters()`` or by
    # ``torch.optim`` (``train_op = get_train_op(params=m.parameters())``;
    # ``train_op()``): a callable optimizer (``StepEvidence._callable_optimizer``).
    callable_optimizer: bool


_CALL_FACT_KINDS = frozenset({ast.Call, ast.Assign, ast.AnnAssign})
_FACTS: list[tuple[ast.AST, CallFacts]] = []  # the last few trees (rules ask in turn)


def call_facts(tree: ast.Module, imports: ImportMap) -> CallFacts:
    for known, facts in _FACTS:
        if known is tree:
            return facts
    eval_switch = train_switch = step_call = backward_call = False
    bare: set[str] = set()
    built: set[str] = set()
    # Calls that make an assigned value optimizer-like; the assignments holding one
    # are found from them, upwards (walking every assigned value down cost a
    # tenth of a training file's analysis).
    optimizer_like: list[ast.Call] = []
    for node in nodes_of(tree, *_CALL_FACT_KINDS):
        if isinstance(node, ast.Call):
            func = node.func
            if _optimizer_like_call(func, imports):
                optimizer_like.append(node)
            if isinstance(func, ast.Attribute):
                attr = func.attr
                if attr in ("eval", "train"):
                    switch = mode_switch(node)
                    if switch is not None and switch.mode is Mode.EVAL:
                        eval_switch = True
                    elif switch is not None and switch.mode is Mode.TRAIN:
                        train_switch = True
                elif attr in ("step", "optimizer_step"):  # ``ModeFlow.step_kind``
                    step_call = True
                elif attr == "backward":
                    backward_call = True
            elif imports.qualname(func) == "torch.autograd.backward":
                backward_call = True
            if not node.args and not node.keywords and (text := dotted(func)) is not None:
                bare.add(text.rsplit(".", 1)[-1])
    for node in _assigned_from(optimizer_like, tree_parents(tree)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute):
                    built.add(t.attr)
                elif isinstance(t, ast.Name):
                    built.add(t.id)
    facts = CallFacts(eval_switch, train_switch, step_call, backward_call, bool(bare & built))
    _FACTS.insert(0, (tree, facts))
    del _FACTS[4:]
    return facts


def _optimizer_like_call(func: ast.expr, imports: ImportMap) -> bool:
    """A call that makes a value something ``Optimizers._built_from`` may read
    as an optimizer when it holds the call: ``X.parameters()`` /
    ``X.named_parameters()``, or a call of a ``torch.optim`` class (``Adam([image])``)."""
    if isinstance(func, ast.Attribute) and func.attr in ("parameters", "named_parameters"):
        return True
    return (imports.qualname(func) or "").startswith("torch.optim.")


def _assigned_from(
    calls: list[ast.Call], parents: dict[ast.AST, ast.AST]
) -> list[ast.Assign | ast.AnnAssign]:
    """The assignments whose value holds one of ``calls`` (an expression holds
    no statement, so the first statement above a call is the only candidate)."""
    out: dict[ast.AST, None] = {}
    for call in calls:
        child: ast.AST = call
        parent = parents.get(child)
        while parent is not None and not isinstance(parent, ast.stmt):
            child, parent = parent, parents.get(parent)
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is child:
            out[parent] = None
    return [n for n in out if isinstance(n, (ast.Assign, ast.AnnAssign))]
