"""The runtime mode sanitizer: cuDNN's RNN train-mode check, on any machine.

How it sees what cuDNN sees
    ``nn.LSTM/GRU/RNN.forward`` look up ``torch._VF.lstm`` (``gru``,
    ``rnn_tanh``, ``rnn_relu``) at every call and pass ``self.training`` as the
    kernel's ``train`` argument. ``torch._VF`` resolves names through
    ``__getattr__``, so an instance attribute of the same name shadows the C++
    function: every RNN module, and custom modules calling ``_VF.lstm`` or
    ``torch.lstm``, pass through :func:`_kernel_wrapper`, which calls the
    original and inspects the call afterwards. Outputs are returned untouched:
    same tensors, same numerics.

How it decides
    cuDNN fixes the ``train`` flag at forward time and fails the backward
    only if backward executes the RNN's node. So a forward with ``train``
    false, grad enabled, ``torch.backends.cudnn.enabled`` true, a float
    input that is not empty and an output that requires grad gets an autograd
    *node* pre-hook on its outputs' ``grad_fn``. Node pre-hooks run exactly
    when backward executes the node; tensor hooks would also fire when
    ``autograd.grad`` merely captures the output's gradient (a false positive).

    On CUDA tensors real cuDNN decides (the output's node is
    ``CudnnRnnBackward0`` or not): the hook only records, and cuDNN raises.

Also recorded (never raised): validation forwards in train mode or with grad
enabled, an optimizer step while a model it updates is in eval mode, and a
DataParallel/DDP wrapper whose flag differs from its module's.

Dropout and BatchNorm (never raised)
    ``F.dropout`` (and its 1d/2d/3d/alpha variants) call ``torch._VF.dropout``
    (``feature_dropout``, ``alpha_dropout``, ``feature_alpha_dropout``, their
    in-place twins) with the module's ``training``; ``F.batch_norm`` /
    ``F.instance_norm`` call ``torch.batch_norm`` / ``torch.instance_norm``,
    looked up on ``torch`` at every call. Wrapping these sees every module
    call and its flag. A train-mode call with grad disabled (or, for norms, an
    eval-mode call with grad enabled) is judged by the ``training`` flags of
    the modules on the stack: all in train mode is validation without
    ``eval()`` (warning), anything else deliberate (info). Other calls cost a
    flag check or two, no stack walk.

For ``verify --fix``
    the ``nn.Module.train`` wrapper keeps the last ``eval()`` call site per
    module (``provenance.ModeLog``); an eval-mode forward with grad enabled
    takes its provenance (``provenance.capture``) and the ids of the RNN's
    weights, so its record can name the optimizers that update them
    (``Optimizer.__init__`` is wrapped: every optimizer is known before its
    first step). When real cuDNN raises and no hook recorded it, the wrapped
    ``sys.excepthook`` records the error from the live forward states.

Not reachable: TorchScript RNNs and code that bound
``torch._C._VariableFunctions.lstm`` before installation.

Its parts: ``sanitizer_state`` (the installed sanitizer, patching helpers),
``sanitizer_cudnn`` (the RNN kernels and the backward they may reach),
``sanitizer_layers`` (Dropout and BatchNorm), ``sanitizer_steps`` (modes and
optimizer steps). This module installs and removes them.

torch is imported inside functions only: importing this module is free.
"""

from __future__ import annotations

import atexit
import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from rnnfix.verify.recorder import Recorder
from rnnfix.verify.records import (
    Record,
)
from rnnfix.verify.sanitizer_cudnn import _record_unreached

if TYPE_CHECKING:
    pass

from rnnfix.verify import sanitizer_state as shared
from rnnfix.verify.sanitizer_cudnn import _patch_autograd, _patch_excepthook, _patch_kernels, _sweep
from rnnfix.verify.sanitizer_layers import _patch_layers
from rnnfix.verify.sanitizer_state import Mode, _Sanitizer
from rnnfix.verify.sanitizer_steps import _hook_optimizers, _patch_module_train, _patch_wrappers

_fork_hook_registered = False

# --------------------------------------------------------------------------- public API


def install(
    mode: Mode = "raise",
    *,
    report_dir: Path | str | None = None,
    until_clean_cycle: bool = False,
    stop_when_seen: bool = False,
) -> None:
    """Install the sanitizer in this process (idempotent: reinstalls with the
    new settings).

    ``mode="raise"`` raises cuDNN's exact ``RuntimeError`` where a GPU would;
    ``mode="record"`` only records. Both modes record everything else.
    ``report_dir``: write this process's JSON report there (the runner reads
    it). ``until_clean_cycle``: exit the process with status 0 via
    ``os._exit`` right after the optimizer step that completes a clean cycle
    (see :mod:`rnnfix.verify.cycle`), after flushing the report and stdio.
    ``stop_when_seen`` (with ``until_clean_cycle``, for ``verify --fix``):
    a model seen taking an optimizer step in eval mode counts as done too.
    ``os._exit`` rather than ``SystemExit`` because user ``finally`` blocks
    and framework handlers would otherwise keep running the job.
    """
    global _fork_hook_registered
    if mode not in ("raise", "record"):
        raise ValueError(f"mode must be 'raise' or 'record', not {mode!r}")
    uninstall()
    import torch  # noqa: F401 - fail early with ImportError when missing

    directory = Path(report_dir) if report_dir is not None else None
    san = _Sanitizer(mode, until_clean_cycle, Recorder(mode, directory))
    san.stop_when_seen = stop_when_seen and until_clean_cycle
    shared._active = san
    try:
        _patch_kernels(san)
        _patch_layers(san)
        _patch_autograd(san)
        _patch_module_train(san)
        _patch_wrappers(san)
        _hook_optimizers(san)
        _patch_excepthook(san)
    except BaseException:
        uninstall()
        raise
    if not _fork_hook_registered:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        atexit.register(_at_exit)
        _fork_hook_registered = True
    san.recorder.flush()  # an empty report says "the sanitizer ran here"


def uninstall() -> None:
    """Restore everything :func:`install` replaced. Records are kept."""
    san = shared._active
    if san is None:
        return
    for patch in reversed(san.patches):
        if patch.had_own:
            setattr(patch.owner, patch.name, patch.original)
        else:
            try:
                delattr(patch.owner, patch.name)
            except AttributeError:
                pass
    for handle in san.handles:
        handle.remove()
    san.patches.clear()
    san.handles.clear()
    shared._active = None
    _last_records[:] = san.recorder.records()


_last_records: list[Record] = []


def is_installed() -> bool:
    return shared._active is not None


def records() -> list[Record]:
    """Records of the installed sanitizer, or of the last one uninstalled."""
    return shared._active.recorder.records() if shared._active is not None else list(_last_records)


def clear_records() -> None:
    _last_records.clear()
    if shared._active is not None:
        shared._active.recorder.clear()


def sweep_unreached() -> None:
    """Record now every live forward that has not reached a backward although a
    backward ran after it (tests and ``--until-clean-cycle`` use this instead of
    waiting for the graph to be freed)."""
    if shared._active is not None:
        _sweep(shared._active, shared._active.backward_serial)


# --------------------------------------------------------------------------- process lifecycle


def _at_exit() -> None:
    san = shared._active
    if san is None:
        return
    for state in list(san.live):
        if not state.reached:
            state.reached = True
            _record_unreached(san, state, flush=False)
    san.recorder.close()


def _after_fork_in_child() -> None:
    if shared._active is not None:
        shared._active.recorder.after_fork_in_child()
        shared._active.live = weakref.WeakSet()
