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
  enabled, or ran in train mode under ``no_grad``. For Dropout (p > 0) and
  BatchNorm/InstanceNorm with running statistics: ran in train mode with grad
  disabled (``no_grad``/``inference_mode``) while every module around it
  trains too, i.e. validation without ``model.eval()``.
- ``mc-dropout`` (info): dropout on with grad disabled on purpose:
  ``F.dropout(x, training=True)`` from a module in eval mode or outside any
  module, or a Dropout in train mode inside a model in eval mode
  (``model.eval(); model.drop.train()``).
- ``frozen-batchnorm`` (info): a BatchNorm/InstanceNorm used its running
  statistics (eval mode, or ``training=False`` passed) with grad enabled inside
  a module in train mode.
- ``batchnorm-recalibration`` (info): running statistics updated with grad
  disabled on purpose: ``torch.optim.swa_utils.update_bn`` (its dropout is not
  reported), ``F.batch_norm(training=True)`` from an eval-mode module or no
  module, or the norm alone in train mode inside an eval-mode model.
- ``wrapper-mode-mismatch`` (warning): DataParallel/DDP flag differs from its
  module's; training itself is unaffected.
- ``clean-cycle`` (info) and ``sanitizer-error`` (error, exit status 2).

For ``verify --fix`` a ``cudnn-backward-in-eval`` record also carries its
``provenance`` (the module user code called, the user frames from that call
outwards with the expressions naming the module in each, the ``eval()`` that
left it in eval mode; :mod:`rnnfix.verify.provenance`) and ``optimizers``
(the optimizers whose parameters include the RNN's weights).

Errors fail a run; warnings fail it only under ``--strict``; infos never. None
but the cuDNN error is ever raised, and a warning keeps ``--until-clean-cycle``
from stopping.

Dropout and BatchNorm are seen through ``torch._VF.dropout`` (and
``alpha_dropout``, ``feature_dropout``, ``feature_alpha_dropout``, in-place
twins; ``torch.dropout`` etc. too) and ``torch.batch_norm``/
``torch.instance_norm``, which ``torch.nn.functional`` looks up at every call:
every ``nn.Dropout``/``Dropout1d/2d/3d``/``AlphaDropout``/
``FeatureAlphaDropout``, ``BatchNorm1d/2d/3d`` (and lazy), unsynchronised
``SyncBatchNorm`` and ``InstanceNorm*d`` call, and ``MultiheadAttention``'s
dropout. Intent is judged from the ``training`` flags of the modules whose
methods are on the stack (DataParallel/DDP excluded: they never read theirs);
that walk happens only when a record is made (~15-20 us a call), the clean
paths cost one or two flag checks.

Limits: TorchScript RNNs and code that bound
``torch._C._VariableFunctions.lstm`` (or ``gru``, ``rnn_tanh``, ``rnn_relu``)
before installation are not seen; likewise scripted Dropout/BatchNorm, direct
``torch.ops.aten``/``_VariableFunctions`` calls, ``SyncBatchNorm`` while it
synchronises (several GPU processes), and ``torch.compile`` with an AOT
backend (inductor, the default; ``aot_eager``): only the ``eager`` backend
still calls the functionals, named then ``F.dropout in compiled Net``, with
intent judged from the compiled model's flag. Neither are processes started
with ``python -I``/``-E``/``-S`` (no ``PYTHONPATH``/``sitecustomize``). A
deliberate train-mode forward under ``no_grad`` in user code (a BYOL-style
target network) is reported as a warning like a forgotten ``eval()``. With
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
