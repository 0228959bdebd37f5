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


def _a(word: str) -> str:
    return "an" if word[:1] in ("A", "E", "I", "O", "U") or word.startswith("F.") else "a"


def layer_in_train_mode_under_no_grad(
    layer: str, site: str, is_dropout: bool, updates_stats: bool
) -> str:
    """A Dropout/BatchNorm in a model in train mode ran with grad disabled."""
    if is_dropout:
        effect = "it randomly dropped activations, so the outputs are noisy"
    else:
        effect = "it normalised with the input's statistics instead of its running ones" + (
            " and updated running_mean/running_var from this data" if updates_stats else ""
        )
    return (
        f"{_a(layer)} {layer} ran in train mode with grad disabled (no_grad or "
        f"inference_mode) at {site}: validation or inference without model.eval(); "
        f"{effect}. Call model.eval() before it and model.train() before training "
        "resumes (RNF003)"
    )


def mc_dropout(layer: str, site: str, eval_owner: str | None, forced: bool) -> str:
    """Dropout on at inference on purpose (Monte Carlo dropout). ``forced``:
    ``training=True`` passed by ``eval_owner`` (a module in eval mode; None:
    no module); otherwise ``layer`` is in train mode inside ``eval_owner``."""
    if forced:
        who = f"although {eval_owner} is in eval mode" if eval_owner else "outside any module"
        return (
            f"{layer} ran dropout with training=True with grad disabled at {site} {who}: "
            "Monte Carlo dropout, intentional if meant; F.dropout's training argument "
            "defaults to True, so pass training=self.training if it is not"
        )
    return (
        f"{_a(layer)} {layer} in train mode ran with grad disabled inside {eval_owner} "
        f"in eval mode at {site}: dropout stays on at inference (Monte Carlo dropout), "
        "intentional when only the dropout was set to train"
    )


def frozen_batchnorm(layer: str, site: str, training_owner: str) -> str:
    return (
        f"{_a(layer)} {layer} used its running statistics with grad enabled at {site} "
        f"while {training_owner} is in train mode: deliberately frozen BatchNorm, its "
        "running statistics are not updated and it normalises with them; if not meant, "
        "do not call eval() on it (or pass training=False) while the model trains"
    )


def batchnorm_recalibration(layer: str, site: str, why: str) -> str:
    return (
        f"{_a(layer)} {layer} updated its running statistics with grad disabled at {site} "
        f"on purpose ({why}); evaluate with model.eval() afterwards"
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
