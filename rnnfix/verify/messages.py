"""Texts of the sanitizer's findings.

Kept in one place so they stay true to what PyTorch and cuDNN actually do
(see the project's TORCH_FACTS): the train flag is fixed at forward time,
DataParallel/DDP never read the wrapper's own flag, and an RNN in train mode
only changes its output through inter-layer dropout.
"""

from __future__ import annotations

#: The exact error cuDNN raises (aten/src/ATen/native/cudnn/RNN.cpp).
CUDNN_ERROR = "cudnn RNN backward can only be called in training mode"
#: The ROCm build's twin.
MIOPEN_ERROR = "miopen RNN backward can only be called in training mode"

_FIX_HINT = (
    "put the model back in train mode before the training step (model.train(), RNF001); "
    "for a backward that is meant to run in eval mode, train only the RNN "
    "(model.rnn.train()) or run the forward inside "
    "torch.backends.cudnn.flags(enabled=False) (RNF004)"
)


def cudnn_backward_in_eval(rnn: str, checked_by: str) -> str:
    error = MIOPEN_ERROR if checked_by == "miopen" else CUDNN_ERROR
    how = {
        "emulated": "on a GPU, cuDNN fails this backward",
        "cudnn": "cuDNN failed this backward",
        "miopen": "MIOpen failed this backward",
    }.get(checked_by, "cuDNN fails this backward")
    return (
        f"a backward reached an {rnn} whose forward ran in eval mode with grad enabled; "
        f"{how} with '{error}'. The train flag is fixed at forward time, so calling "
        f"train() between forward and backward does not help: {_FIX_HINT}"
    )


def emulation_note(rnn: str, forward: str) -> str:
    """Added to the raised error (``add_note``), so its text stays exact."""
    return (
        f"rnnfix verify: emulated cuDNN's check on the CPU. The {rnn} forward at "
        f"{forward} ran in eval mode with grad enabled."
    )


def optimizer_step_in_eval(model: str, nested: bool) -> str:
    if nested:
        return (
            f"optimizer.step() updates parameters of {model}, which is in eval mode inside "
            "a model in train mode; intentional for frozen BatchNorm, otherwise a mode bug"
        )
    return (
        f"optimizer.step() updates parameters of {model} while it is in eval mode: "
        "a forward of the training step that ran in eval mode had Dropout off and "
        "BatchNorm frozen (and on a GPU its RNNs fail the backward); call model.train() "
        "at the head of the training loop (RNF001)"
    )


def validation_forward(
    rnn: str, train: bool, grad_enabled: bool, dropout_changes_output: bool
) -> str:
    if train and not grad_enabled:
        effect = (
            "its inter-layer dropout changed the output"
            if dropout_changes_output
            else "with dropout=0 or one layer its output equals eval mode"
        )
        return (
            f"an {rnn} forward ran in train mode under no_grad: validation or inference "
            f"without model.eval(); {effect} (RNF003)"
        )
    mode = "train" if train else "eval"
    return (
        f"an {rnn} forward ran in {mode} mode with grad enabled but its output never "
        "reached a backward: run validation and inference under torch.no_grad()"
        + ("" if not train else " and model.eval()")
        + " (RNF003)"
    )


def wrapper_mode_mismatch(wrapper: str, wrapper_training: bool, module_training: bool) -> str:
    def mode(flag: bool) -> str:
        return "train" if flag else "eval"

    return (
        f"{wrapper}.training says {mode(wrapper_training)} mode but its module is in "
        f"{mode(module_training)} mode: model.module.train()/eval() does not change the "
        f"wrapper's own flag. {wrapper} never reads that flag, so training itself is "
        "unaffected, but code that checks model.training sees the stale value; call "
        "train()/eval() on the wrapper (RNF002)"
    )


def clean_cycle(models: list[str]) -> str:
    return (
        "stopped after every trained model ("
        + ", ".join(models)
        + ") completed a train -> eval -> train -> training-step cycle with no finding"
    )
