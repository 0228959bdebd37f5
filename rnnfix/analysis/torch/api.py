"""Facts about torch's module API that every analysis reads the same way:
data-parallel wrappers, methods that return the module itself, methods that
are not a forward pass, and the one parser of mode calls
(``m.eval()`` / ``m.train(...)``).

Kept in one place so that a rule and the analysis never disagree on, say,
whether ``DataParallel(net).cuda()`` is a wrapper or ``net.train(flag)`` a
mode switch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.mode import Mode

# Wrappers that hold the module they wrap as ``.module`` (their ``train()``
# reaches it: ``Module.train`` recurses), and calls whose result runs the
# same modules as their first argument: rows of the library table.
DATA_PARALLEL = library.DATA_PARALLEL
WRAPPERS = library.WRAPPERS

# ``nn.Module`` API: calling one of these on a model does not run its forward.
MODULE_METHODS = frozenset(
    {
        "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers",
        "children", "named_children", "modules", "named_modules", "state_dict",
        "load_state_dict", "to", "cuda", "cpu", "float", "double", "half", "bfloat16",
        "zero_grad", "apply", "register_buffer", "register_parameter", "register_module",
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "requires_grad_", "share_memory", "add_module", "get_submodule", "get_parameter",
        "save_pretrained", "init_hidden", "reset_parameters", "type", "extra_repr",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ModeSwitch:
    """One syntactic mode call: ``receiver.eval()`` / ``receiver.train(...)``.

    ``mode`` is ``Mode.UNKNOWN`` for ``train(<expression>)``; ``flag_like``
    says whether that expression reads like a mode flag (``train(is_training)``,
    ``train(mode=m)``, ``train(not frozen)``) rather than data
    (``booster.train(params)``, another library's ``train``).
    """

    receiver: ast.expr
    method: str  # "eval" | "train"
    mode: Mode
    flag_like: bool

    @property
    def target(self) -> str | None:
        return dotted(self.receiver)

    @property
    def is_module_switch(self) -> bool:
        """Reads as a torch module's mode switch, not another library's ``train``."""
        return self.mode is not Mode.UNKNOWN or self.flag_like


def mode_switch(node: ast.AST) -> ModeSwitch | None:
    """The mode call ``node`` is, by shape; None for anything else, including
    ``x.eval(data)`` and ``x.train(a, b)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    method = node.func.attr
    if method not in ("eval", "train"):
        return None
    receiver = node.func.value
    if method == "eval":
        if node.args or node.keywords:
            return None
        return ModeSwitch(receiver, method, Mode.EVAL, True)
    if not node.args and not node.keywords:
        return ModeSwitch(receiver, method, Mode.TRAIN, True)
    if len(node.args) + len(node.keywords) != 1:
        return None
    keyword = node.keywords[0] if node.keywords else None
    if keyword is not None and keyword.arg != "mode":
        return None
    flag = keyword.value if keyword is not None else node.args[0]
    if isinstance(flag, ast.Constant):
        if not isinstance(flag.value, bool):
            return None
        return ModeSwitch(receiver, method, Mode.TRAIN if flag.value else Mode.EVAL, True)
    text = (dotted(flag) or "").lower()
    flag_like = (
        keyword is not None
        or isinstance(flag, (ast.Compare, ast.UnaryOp, ast.BoolOp))
        or "train" in text
        or "mode" in text
    )
    return ModeSwitch(receiver, method, Mode.UNKNOWN, flag_like)


def module_mode_switch(node: ast.AST, lenient: bool = False) -> ModeSwitch | None:
    """``mode_switch`` when it reads as a torch module's mode switch; with
    ``lenient`` (the receiver is already known to be a model) any
    ``train(<expression>)`` counts, as a switch to an unknown mode."""
    sw = mode_switch(node)
    if sw is None or not (sw.is_module_switch or lenient):
        return None
    return sw


# ``torch.nn`` modules with no parameters and no mode-dependent behaviour:
# activations, pooling, padding, reshaping, distances, losses. A mode call on
# one changes nothing, so such a module is never the model a fix is about
# (``softmax = nn.Softmax()`` is called in evaluation, but the model is not it).
# Dropout and the norms are *not* here: their mode is what matters.
_STATELESS = frozenset(
    {
        "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
        "Sigmoid", "Tanh", "Softmax", "Softmax2d", "LogSoftmax", "Softmin", "Softplus",
        "Softsign", "Softshrink", "Hardshrink", "Hardtanh", "Hardsigmoid", "Hardswish",
        "LogSigmoid", "Tanhshrink", "Threshold", "GLU", "Identity", "Flatten", "Unflatten",
        "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
        "PixelUnshuffle", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance",
        "Fold", "Unfold",
    }
)  # fmt: skip
_STATELESS_FAMILIES = (
    "Pool1d", "Pool2d", "Pool3d", "Unpool1d", "Unpool2d", "Unpool3d",
    "Pad1d", "Pad2d", "Pad3d", "Loss", "Loss2d",  # ``NLLLoss2d``, old segmentation code
)  # fmt: skip


def is_stateless_torch_module(qualname: str) -> bool:
    """``torch.nn.Softmax``, ``torch.nn.MaxPool2d``, ``torch.nn.CrossEntropyLoss``:
    a torch module class whose instances have no parameters and behave the
    same in train and eval mode."""
    if not qualname.startswith("torch.nn."):
        return False
    last = qualname.rsplit(".", 1)[-1]
    return last in _STATELESS or last.endswith(_STATELESS_FAMILIES)


# ``torch.nn`` layers with parameters but the same forward in train and eval
# mode (no dropout, no running statistics). InstanceNorm
# (``track_running_stats``), RReLU (random in training), RNNs and Transformer
# layers (dropout) are not here.
_MODE_FREE_LAYERS = frozenset(
    {"Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
     "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm",
     "GroupNorm", "LocalResponseNorm", "PReLU"}
)  # fmt: skip


def is_mode_free_torch_module(qualname: str) -> bool:
    """A ``torch.nn`` module class whose forward is the same in train and eval
    mode: a stateless one, or a layer with parameters only (``nn.Linear``)."""
    return is_stateless_torch_module(qualname) or (
        qualname.startswith("torch.nn.") and qualname.rsplit(".", 1)[-1] in _MODE_FREE_LAYERS
    )
