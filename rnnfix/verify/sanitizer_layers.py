"""Dropout and BatchNorm under the sanitizer: validation forwards in train
mode or with grad enabled, judged by the ``training`` flags on the stack
(never raised)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from rnnfix.verify import messages
from rnnfix.verify.records import (
    BATCHNORM_RECALIBRATION,
    FROZEN_BATCHNORM,
    MC_DROPOUT,
    VALIDATION_FORWARD,
    Record,
    Severity,
)
from rnnfix.verify.sanitizer_state import (
    _DROPOUT_KERNELS,
    _NORM_KERNELS,
    _internal_error,
    _register_jit_builtin,
    _Sanitizer,
    _set,
    _skip_dynamo,
)
from rnnfix.verify.sites import (
    modules_on_stack,
    user_sites,
)

if TYPE_CHECKING:
    pass

from rnnfix.verify import sanitizer_state as shared

# --------------------------------------------------------------------------- Dropout and BatchNorm


def _patch_layers(san: _Sanitizer) -> None:
    """Wrap the dropout kernels where ``torch.nn.functional`` looks them up at
    every call (``torch._VF``, as for the RNNs) and ``torch.batch_norm`` /
    ``torch.instance_norm`` (``F.batch_norm``/``F.instance_norm`` look them up
    on the ``torch`` module at every call). Every Dropout*/AlphaDropout/
    BatchNorm*/SyncBatchNorm (unsynchronised)/InstanceNorm module call goes
    through them with its ``training`` flag."""
    import torch
    import torch._VF

    vf = sys.modules["torch._VF"]
    functions = torch._C._VariableFunctions
    grad_enabled = torch._C.is_grad_enabled
    for name, functional in _DROPOUT_KERNELS.items():
        original = getattr(functions, name)
        wrapper = _dropout_wrapper(original, functional, grad_enabled)
        _set(san, vf, name, wrapper)
        if getattr(torch, name, None) is original:
            _set(san, torch, name, wrapper)
            _register_jit_builtin(wrapper, name)
    for name, flag in _NORM_KERNELS.items():
        original = getattr(functions, name)
        wrapper = _norm_wrapper(original, f"F.{name}", flag, grad_enabled)
        if getattr(torch, name, None) is original:
            _set(san, torch, name, wrapper)
            _register_jit_builtin(wrapper, name)


def _dropout_wrapper(
    original: Callable[..., Any], functional: str, grad_enabled: Callable[[], bool]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def dropout_kernel(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        # Training (grad on) and eval mode cost one or two flag checks.
        if not grad_enabled() and (args[2] if len(args) > 2 else kwargs.get("train")):
            san = shared._active
            if san is not None:
                try:
                    _after_dropout(san, functional, args, kwargs)
                except Exception as exc:  # noqa: BLE001 - our bug must not break training
                    _internal_error(san, exc)
        return result

    return _skip_dynamo(dropout_kernel)


def _norm_wrapper(
    original: Callable[..., Any], functional: str, flag: str, grad_enabled: Callable[[], bool]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def norm_kernel(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        train = args[5] if len(args) > 5 else kwargs.get(flag, False)
        # Train mode with grad on (training) and eval mode under no_grad
        # (validation) cost this one comparison.
        if bool(train) != grad_enabled():
            san = shared._active
            if san is not None:
                try:
                    _after_norm(san, functional, bool(train), args, kwargs)
                except Exception as exc:  # noqa: BLE001 - our bug must not break training
                    _internal_error(san, exc)
        return result

    return _skip_dynamo(norm_kernel)


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _stack_modules(frame: FrameType | None) -> tuple[list[Any], bool, bool]:
    """Modules running on the stack, innermost first, without DataParallel/DDP
    (they never read their own flag); whether ``update_bn`` is running; and
    whether compiled code ran the layer. ``torch.compile`` leaves no frame of
    the layers: its FX ``GraphModule`` is dropped and ``OptimizedModule``
    stands for the model it compiled."""
    from torch import nn

    modules, recalibrating = modules_on_stack(frame, nn.Module)
    wrappers: tuple[type, ...] = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    fx = sys.modules.get("torch.fx")
    graph_module = getattr(fx, "GraphModule", None)
    optimized = getattr(sys.modules.get("torch._dynamo.eval_frame"), "OptimizedModule", None)
    kept: list[Any] = []
    compiled = False
    for module in modules:
        if graph_module is not None and isinstance(module, graph_module):
            compiled = True
            continue
        if optimized is not None and isinstance(module, optimized):
            module = getattr(module, "_orig_mod", module)
        if not isinstance(module, wrappers) and all(module is not m for m in kept):
            kept.append(module)
    return kept, recalibrating, compiled


def _layer_name(inner: Any, compiled: bool, functional: str) -> str:
    if inner is None:
        return functional
    if compiled:
        return f"{functional} in compiled {type(inner).__name__}"
    return type(inner).__name__


def _tracing() -> bool:
    """Dynamo/AOT run the kernels on fake tensors while compiling."""
    import torch

    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None


def _after_dropout(
    san: _Sanitizer, functional: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Dropout under no_grad: a validation/inference forward. Train mode there
    is a mode bug unless the dropout was switched on deliberately."""
    severity: Severity
    train = _argument(args, kwargs, 2, "train")
    p = _argument(args, kwargs, 1, "p")
    if not train or not p or p <= 0:
        return
    if _tracing():
        return
    frame = sys._getframe(2)  # the caller of the kernel (F.dropout)
    modules, recalibrating, compiled = _stack_modules(frame)
    if recalibrating:
        return  # swa_utils.update_bn runs the whole model in train mode on purpose
    forward = user_sites(frame)
    site = str(forward[0]) if forward else "an unknown place"
    inner = modules[0] if modules else None
    layer = _layer_name(inner, compiled, functional)
    eval_outer = next((m for m in modules[1:] if not m.training), None)
    if inner is None or not inner.training:
        # F.dropout(x, training=True) called by a module in eval mode (or by
        # no module at all): dropout switched on deliberately.
        kind, severity = MC_DROPOUT, "info"
        message = messages.mc_dropout(layer, site, None if inner is None else layer, forced=True)
    elif eval_outer is not None:
        kind, severity = MC_DROPOUT, "info"
        message = messages.mc_dropout(layer, site, type(eval_outer).__name__, forced=False)
    else:
        kind, severity = VALIDATION_FORWARD, "warning"
        message = messages.layer_in_train_mode_under_no_grad(layer, site, True, False)
    san.recorder.add(
        Record(kind=kind, severity=severity, message=message, forward=forward, subject=layer)
    )


def _after_norm(
    san: _Sanitizer, functional: str, train: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A norm with running statistics in train mode under no_grad (validation
    in train mode, unless on purpose), or in eval mode with grad enabled inside
    a module in train mode (frozen BatchNorm)."""
    if (
        _argument(args, kwargs, 3, "running_mean") is None
        and _argument(args, kwargs, 4, "running_var") is None
    ):
        return  # no running statistics: train and eval mode compute the same
    if _tracing():
        return
    frame = sys._getframe(2)  # the caller of the kernel (F.batch_norm)
    modules, recalibrating, compiled = _stack_modules(frame)
    inner = modules[0] if modules else None
    layer = _layer_name(inner, compiled, functional)
    if not train:
        # Eval mode, grad enabled: frozen if the norm's own module or one
        # around it trains; otherwise a gradient through an eval-mode model.
        owner = next((m for m in modules if m.training), None)
        if owner is None:
            return
        forward = user_sites(frame)
        site = str(forward[0]) if forward else "an unknown place"
        san.recorder.add(
            Record(
                kind=FROZEN_BATCHNORM,
                severity="info",
                message=messages.frozen_batchnorm(layer, site, type(owner).__name__),
                forward=forward,
                subject=layer,
            )
        )
        return
    forward = user_sites(frame)
    site = str(forward[0]) if forward else "an unknown place"
    eval_outer = next((m for m in modules[1:] if not m.training), None)
    severity: Severity
    why = ""
    if recalibrating:
        why = "torch.optim.swa_utils.update_bn recomputes them"
    elif inner is None:
        why = f"{functional} called with training=True outside any module"
    elif not inner.training:
        why = f"{layer} is in eval mode but passed training=True"
    elif eval_outer is not None:
        why = (
            f"only the {layer} is in train mode, inside {type(eval_outer).__name__} in "
            "eval mode: test-time adaptation"
        )
    if why:
        kind, severity = BATCHNORM_RECALIBRATION, "info"
        message = messages.batchnorm_recalibration(layer, site, why)
    else:
        momentum = _argument(args, kwargs, 6, "momentum")
        kind, severity = VALIDATION_FORWARD, "warning"
        message = messages.layer_in_train_mode_under_no_grad(
            layer, site, False, momentum is None or momentum != 0
        )
    san.recorder.add(
        Record(kind=kind, severity=severity, message=message, forward=forward, subject=layer)
    )
