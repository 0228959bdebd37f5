"""Per-model mode tracking behind ``--until-clean-cycle`` and the optimizer check.

A *model* is a module on which user code called ``train()``/``eval()``
(the outermost call; the recursion into children does not count). A model
completes a cycle when it is seen, in this order: a training step while in
train mode, ``eval()``, ``train()``, and another training step. A training
step is an ``optimizer.step()`` that updates some of the model's parameters;
that ties steps to models without guessing which backward belongs to which.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.nn import Module


class Phase(enum.IntEnum):
    IDLE = 0
    TRAINED = 1
    EVALUATED = 2
    RETRAINED = 3
    COMPLETE = 4


class ModelState:
    """What the sanitizer knows about one model."""

    __slots__ = ("phase", "stepped", "bug_seen", "_param_ids", "_nested", "_nested_generation")

    def __init__(self) -> None:
        self.phase = Phase.IDLE
        self.stepped = False
        #: An optimizer step updated it while it was in eval mode.
        self.bug_seen = False
        self._param_ids: frozenset[int] | None = None
        self._nested = False
        self._nested_generation = -1

    def param_ids(self, model: Module) -> frozenset[int]:
        # Cached after the first step: by then lazy modules have their
        # parameters, and models rarely gain parameters mid-training.
        if self._param_ids is None or not self._param_ids:
            self._param_ids = frozenset(id(p) for p in model.parameters())
        return self._param_ids

    def on_mode(self, training: bool) -> None:
        if not training and self.phase == Phase.TRAINED:
            self.phase = Phase.EVALUATED
        elif training and self.phase == Phase.EVALUATED:
            self.phase = Phase.RETRAINED

    def on_step(self) -> None:
        """A training step in train mode updated this model."""
        self.stepped = True
        if self.phase == Phase.IDLE:
            self.phase = Phase.TRAINED
        elif self.phase == Phase.RETRAINED:
            self.phase = Phase.COMPLETE


class ModelTracker:
    """All models seen, weakly held so tracking never keeps a model alive."""

    def __init__(self) -> None:
        self.models: weakref.WeakKeyDictionary[Module, ModelState] = weakref.WeakKeyDictionary()
        self._generation = 0

    def on_mode_call(
        self, model: Module, training: bool, trained_before: Callable[[Module], bool] | None = None
    ) -> None:
        """``trained_before``: asked when ``model`` is first seen, whether an
        optimizer already stepped it (a model first switched by its
        validation's ``eval()`` has trained: its cycle has begun)."""
        state = self.models.get(model)
        if state is None:
            state = self.models[model] = ModelState()
            self._generation += 1  # nesting may have changed
            if trained_before is not None and trained_before(model):
                state.on_step()
        state.on_mode(training)

    def is_nested(self, model: Module, state: ModelState) -> bool:
        """True if ``model`` is a submodule of another tracked model."""
        if state._nested_generation != self._generation:
            state._nested = any(
                other is not model and any(m is model for m in other.modules())
                for other in list(self.models.keys())
            )
            state._nested_generation = self._generation
        return state._nested

    def nested_in_training(self, model: Module) -> bool:
        """True if ``model`` sits inside another tracked model that is in train mode."""
        return any(
            other is not model and other.training and any(m is model for m in other.modules())
            for other in list(self.models.keys())
        )

    def cycle_complete(self, allow_bugs: bool = False) -> list[str] | None:
        """Names of the trained top-level models if all completed a cycle, else
        None. ``allow_bugs``: a model seen stepping in eval mode counts as done
        (``verify --fix`` has seen what it needs)."""
        done = []
        for model, state in list(self.models.items()):
            if self.is_nested(model, state) or not (state.stepped or state.bug_seen):
                continue
            if state.phase != Phase.COMPLETE and not (allow_bugs and state.bug_seen):
                return None
            done.append(type(model).__name__)
        return done or None
