"""Modes and optimizer steps under the sanitizer: the ``nn.Module.train``
wrapper (the last ``eval()`` per module), DataParallel/DDP wrappers whose flag
differs from their module's, and optimizer steps while a model they update is
in eval mode (clean cycles for ``--until-clean-cycle``)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rnnfix.verify import messages
from rnnfix.verify.records import (
    CLEAN_CYCLE,
    OPTIMIZER_STEP_IN_EVAL,
    WRAPPER_MODE_MISMATCH,
    Record,
)
from rnnfix.verify.sanitizer_cudnn import _sweep
from rnnfix.verify.sanitizer_state import (
    _internal_error,
    _optimizer_param_ids,
    _Sanitizer,
    _set,
    _skip_dynamo,
)
from rnnfix.verify.sites import (
    user_sites,
)

if TYPE_CHECKING:
    import torch

from rnnfix.verify import sanitizer_state as shared

# --------------------------------------------------------------------------- modes and optimizers


def _patch_module_train(san: _Sanitizer) -> None:
    from torch import nn

    original = nn.Module.train

    @functools.wraps(original)
    def train(self: nn.Module, mode: bool = True) -> nn.Module:
        current = shared._active
        if current is None or current.train_depth:
            return original(self, mode)
        # Only the outermost call names a model; Module.train recurses into
        # children through this same method.
        current.train_depth += 1
        try:
            result = original(self, mode)
        finally:
            current.train_depth -= 1
        try:
            current.tracker.on_mode_call(self, bool(mode), current.stepped_before)
            current.mode_log.on_mode_call(self, bool(mode), sys._getframe(1))
        except Exception as exc:  # noqa: BLE001 - our bug must not break training
            _internal_error(current, exc)
        return result

    _set(san, nn.Module, "train", train)


def _patch_wrappers(san: _Sanitizer) -> None:
    from torch import nn

    for cls in (nn.DataParallel, nn.parallel.DistributedDataParallel):
        _set(san, cls, "forward", _wrapper_forward(cls.forward, cls.__name__))


def _wrapper_forward(original: Callable[..., Any], wrapper_name: str) -> Callable[..., Any]:
    import torch

    @functools.wraps(original)
    def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        san = shared._active
        inner = getattr(self, "module", None)
        if (
            san is not None
            and isinstance(inner, torch.nn.Module)
            and self.training != inner.training
        ):
            san.recorder.add(
                Record(
                    kind=WRAPPER_MODE_MISMATCH,
                    severity="warning",
                    message=messages.wrapper_mode_mismatch(
                        wrapper_name, self.training, inner.training
                    ),
                    forward=user_sites(),
                    subject=wrapper_name,
                )
            )
        return original(self, *args, **kwargs)

    return _skip_dynamo(forward)


def _hook_optimizers(san: _Sanitizer) -> None:
    import torch.optim.optimizer as optimizer_module

    san.handles.append(optimizer_module.register_optimizer_step_pre_hook(_before_step))
    san.handles.append(optimizer_module.register_optimizer_step_post_hook(_after_step))
    original = optimizer_module.Optimizer.__init__

    # Every optimizer, known before its first step: a backward that fails
    # (real cuDNN raises) still says which optimizer would have stepped.
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        current = shared._active
        if current is not None:
            current.optimizers.add(self)

    _set(san, optimizer_module.Optimizer, "__init__", __init__)


def _effective_training(model: Any) -> bool:
    """The mode that governs the computation. DataParallel and DDP never read
    their own flag (their module's flags decide), so ``wrapper.eval();
    wrapper.module.train()`` trains correctly: that case is a
    wrapper-mode-mismatch warning, not an eval-mode training step."""
    from torch import nn

    if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        return bool(model.module.training)
    return bool(model.training)


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    san = shared._active
    if san is None:
        return
    try:
        _check_step(san, optimizer)
    except Exception as exc:  # noqa: BLE001 - our bug must not break training
        _internal_error(san, exc)


def _check_step(san: _Sanitizer, optimizer: Any) -> None:
    san.recorder.optimizer_steps += 1
    san.optimizers.add(optimizer)
    san.stepped.add(optimizer)
    if san.violation_params:
        _name_optimizer(san, optimizer)
    tracker = san.tracker
    if not tracker.models:
        return
    updated: set[int] | None = None
    for model, state in list(tracker.models.items()):
        training = _effective_training(model)
        if training and not san.until_clean_cycle:
            continue  # only eval-mode models can be a finding
        if updated is None:
            updated = _optimizer_param_ids(optimizer)
        if state.param_ids(model).isdisjoint(updated):
            continue
        if training:
            state.on_step()
            continue
        nested = tracker.nested_in_training(model)
        if not nested:
            state.bug_seen = True
        san.recorder.add(
            Record(
                kind=OPTIMIZER_STEP_IN_EVAL,
                severity="info" if nested else "error",
                message=messages.optimizer_step_in_eval(type(model).__name__, nested),
                backward=user_sites(),
                subject=type(model).__name__,
                optimizers=(type(optimizer).__name__,),
            )
        )


def _name_optimizer(san: _Sanitizer, optimizer: Any) -> None:
    """Add ``optimizer`` to the cuDNN records whose RNN it updates."""
    name = type(optimizer).__name__
    updated: set[int] | None = None
    changed = False
    for record in san.recorder.records():
        ids = san.violation_params.get(record.key())
        if ids is None or name in record.optimizers:
            continue
        if updated is None:
            updated = _optimizer_param_ids(optimizer)
        if not ids.isdisjoint(updated):
            record.optimizers = (*record.optimizers, name)
            changed = True
    if changed:
        san.recorder.flush()


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    san = shared._active
    if san is None or not san.until_clean_cycle:
        return
    try:
        models = san.tracker.cycle_complete(allow_bugs=san.stop_when_seen)
    except Exception as exc:  # noqa: BLE001 - our bug must not break training
        _internal_error(san, exc)
        return
    if models is None:
        return
    if san.stop_when_seen:
        # verify --fix: every model's bug (or clean cycle) has been seen.
        _sweep(san, san.backward_serial)
        _stop_cleanly(san, models)
    if san.recorder.has_problems():
        return
    # Forwards that the last backward did not reach are validation forwards
    # whose graph is still alive; judge them now rather than never.
    _sweep(san, san.backward_serial)
    if san.recorder.has_problems():
        return
    _stop_cleanly(san, models)


def _stop_cleanly(san: _Sanitizer, models: list[str]) -> None:
    san.recorder.add(
        Record(
            kind=CLEAN_CYCLE,
            severity="info",
            message=messages.clean_cycle(models),
            backward=user_sites(),
        ),
        flush=False,
    )
    san.recorder.stopped_after_clean_cycle = True
    san.recorder.close()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
