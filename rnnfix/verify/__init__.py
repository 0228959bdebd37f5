"""``rnnfix verify``: run training code under the runtime mode sanitizer.

The sanitizer reproduces cuDNN's "cudnn RNN backward can only be called in
training mode" check on any machine, and records other train/eval mode bugs.
Nothing here imports torch at import time; :func:`install` does.

In-process use::

    from rnnfix import verify
    verify.install(mode="record")
    ...  # train
    for record in verify.records():
        print(record.where(), record.message)

What it records (``Record.kind``, severity):

- ``cudnn-backward-in-eval`` (error): a backward reached an RNN whose forward
  ran in eval mode with grad enabled and cuDNN on. Raised in ``raise`` mode as
  cuDNN's exact ``RuntimeError`` (plus a note saying it was emulated); on CUDA
  tensors real cuDNN raises and the sanitizer only records.
- ``optimizer-step-in-eval`` (error; info when the eval-mode part sits in a
  model that is in train mode, e.g. frozen BatchNorm).
- ``validation-forward`` (warning; info for an RNN whose train mode cannot
  change its output): a forward that never reached a backward ran with grad
  enabled, or ran in train mode under ``no_grad``.
- ``wrapper-mode-mismatch`` (warning): DataParallel/DDP flag differs from its
  module's; training itself is unaffected.
- ``clean-cycle`` (info) and ``sanitizer-error`` (error, exit status 2).

Limits: TorchScript RNNs and code that bound
``torch._C._VariableFunctions.lstm`` (or ``gru``, ``rnn_tanh``, ``rnn_relu``)
before installation are not seen; neither are processes started with
``python -I``/``-E``/``-S`` (no ``PYTHONPATH``/``sitecustomize``). With
``torch._dynamo.config.allow_rnn=True`` and an AOT backend, a GPU decomposes
the RNN and does not raise, while the sanitizer still does. A "model" for
``--until-clean-cycle`` and the optimizer check is a module on which user code
called ``train()``/``eval()``, tied to steps through the optimizer's
parameters; training without ``torch.optim`` never completes a cycle.
"""

from __future__ import annotations

from rnnfix.verify.records import ProcessReport, Record, Site
from rnnfix.verify.sanitizer import (
    clear_records,
    install,
    is_installed,
    records,
    sweep_unreached,
    uninstall,
)

__all__ = [
    "ProcessReport",
    "Record",
    "Site",
    "clear_records",
    "install",
    "is_installed",
    "records",
    "sweep_unreached",
    "uninstall",
]
