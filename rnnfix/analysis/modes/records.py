"""The mode flow's plain records: a function's ``Summary`` (with the
``Effect`` of a call on one model) and the evidence
the whole-file pass lists (``TrainingStep``, ``ModelCall``, ``ModeCall``; ``GradSwitch``, a
freeze ``freezing`` finds).

Plain data, with no analysis of their own: the project index ships summaries
to worker processes, and rules and the analyses built on the flow read the
records without the flow's machinery.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.torch.mode import Mode

LoopNode = ast.For | ast.AsyncFor | ast.While


@dataclass(frozen=True)
class Effect:
    """What a call does to one model: ``sets`` the modes it may leave it in;
    ``passthrough`` if some path leaves the mode as it was."""

    passthrough: bool
    sets: frozenset[Mode]


@dataclass(frozen=True)
class ObjectCall:
    """``model.val_start()`` on a parameter (or ``self.<attr>``) whose class
    the function's own file does not know: a caller that knows the class of
    what it passes applies that method's effects (``ScopeRun.object_calls``).
    ``always``: the call runs on every path through the function (else its
    effects may or may not happen)."""

    key: str  # the receiver, in the function's own names
    method: str
    always: bool


@dataclass(frozen=True)
class Summary:
    """What a call to a function does, in the function's own names (parameters,
    ``self.<attr>``, globals). Plain data: the project index ships summaries of
    other files to worker processes."""

    effects: dict[str, Effect]
    forwards: tuple[str, ...]  # keys it calls (forward) with grad enabled, in call order
    optimizer_step: bool  # runs an optimizer step, directly or through calls
    # Keys a training step uses while they may still be in the mode the
    # function was entered with (computed for the project index only).
    entry_trains: tuple[str, ...] = ()
    # Keys it takes an input gradient through (saliency, an attack) in the mode
    # the caller left them in (project index only; ``rnnfix.analysis.modes.gradentry``).
    entry_grads: tuple[str, ...] = ()
    # Methods it calls, in call order, on objects its callers may know the
    # class of; applied after ``effects`` only where they touch other keys.
    object_calls: tuple[ObjectCall, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.effects
            or self.forwards
            or self.optimizer_step
            or self.entry_trains
            or self.entry_grads
            or self.object_calls
        )


@dataclass(frozen=True)
class TrainingStep:
    node: ast.Call
    # "call": a call to a function of another file of the run that runs a
    # training step on models it receives in the mode they have at the call.
    kind: Literal["backward", "optimizer_step", "call"]
    models: tuple[str, ...]  # models called with grad enabled on the way to it
    loops: tuple[LoopNode, ...]  # enclosing loops of its scope, outermost first
    function: FuncNode | None  # None: module level
    feeds_optimizer_step: bool  # backward: an optimizer step can follow it


@dataclass(frozen=True)
class ModelCall:
    node: ast.Call
    model: str
    function: FuncNode | None
    grad_enabled: bool | None
    via: FuncNode | None  # the helper of this file that calls it, if indirect


@dataclass(frozen=True)
class ModeCall:
    node: ast.Call
    model: str
    mode: Mode
    function: FuncNode | None


@dataclass(frozen=True)
class GradSwitch:
    """``key.requires_grad_(flag)`` (or a loop over ``key.parameters()``
    setting ``requires_grad``): ``frozen`` True for False, None when the flag
    is an expression."""

    key: str  # canonical path, as the flow tracks it in ``scope``
    stmt: ast.stmt
    scope: FuncNode | None
    frozen: bool | None
